//go:build race

package storage

// raceEnabled: under the race detector sync.Pool drops a quarter of what
// is put back, so pooled buffers are allocated again at random and
// allocation counts carry that noise.
const raceEnabled = true
