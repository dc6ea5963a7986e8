package invariants

import (
	"testing"

	"go.uber.org/goleak"
)

// The workload types start franz-go clients and goroutines of their own:
// every one must end when the test stops or closes them.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
