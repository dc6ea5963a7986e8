package broker

import (
	"os"
	"path/filepath"
	"testing"
)

func createFile(t *testing.T, dir string, content []byte) *os.File {
	t.Helper()
	p := filepath.Join(dir, "00000000000000000000.log")
	if err := os.WriteFile(p, content, 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = f.Close() })
	return f
}
