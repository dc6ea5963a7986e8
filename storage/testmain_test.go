package storage

import (
	"os"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	if os.Getenv(crashChildEnv) != "" {
		// Re-executed as the crash test's child: append until killed.
		crashChild(os.Getenv(crashChildEnv))
		return
	}
	if dir := os.Getenv(txnCrashChildEnv); dir != "" {
		// Re-executed as the transaction crash test's child.
		txnCrashChild(dir)
		return
	}
	if arg := os.Getenv(cleanerCrashEnv); arg != "" {
		// Re-executed as the cleaner crash test's child: clean until killed.
		cleanerCrashChild(arg)
		return
	}
	if dir := os.Getenv(durableCrashEnv); dir != "" {
		// Re-executed as the durable-mode crash test's child.
		durableCrashChild(dir)
		return
	}
	goleak.VerifyTestMain(m)
}

// noFsync turns fsync off for one test (see fsyncFile).
func noFsync(t testing.TB) {
	old := fsyncFile
	fsyncFile = func(*os.File) error { return nil }
	t.Cleanup(func() { fsyncFile = old })
}
