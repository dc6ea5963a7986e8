package invariants

import (
	"os"
	"strconv"
	"testing"
)

// EnvInt reads a positive integer knob from the environment, def when unset
// (test/chaos and people reproducing a failure turn rounds up this way).
func EnvInt(t testing.TB, name string, def int) int {
	t.Helper()
	s := os.Getenv(name)
	if s == "" {
		return def
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 {
		t.Fatalf("%s=%q: want a positive integer", name, s)
	}
	return n
}
