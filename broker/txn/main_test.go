package txn

import (
	"testing"

	"go.uber.org/goleak"
)

// The scanner and the marker writers must all end by Close.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
