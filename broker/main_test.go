package broker

import (
	"testing"

	"go.uber.org/goleak"
)

// Every test closes what it starts; goleak proves Close waits for the
// accept loops, connection goroutines and handlers.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
