//go:build race

package cluster

// raceEnabled builds the binary under the race detector when the tests
// themselves run under it, so end-to-end runs of make test find races in
// the server too.
const raceEnabled = true
