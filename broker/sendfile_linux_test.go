package broker

import "testing"

// On Linux the file section must have gone through sendfile(2), not a copy.
func checkSendfileUsed(t *testing.T, before int64, length int64) {
	t.Helper()
	if got := sendfileBytes.Load() - before; got < length {
		t.Fatalf("sendfile sent %d bytes of a %d-byte section", got, length)
	}
}
