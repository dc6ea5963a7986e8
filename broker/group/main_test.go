package group

import (
	"testing"

	"go.uber.org/goleak"
)

// Coordinator loops must all end by Close.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
