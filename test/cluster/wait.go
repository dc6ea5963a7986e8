package cluster

import (
	"fmt"
	"testing"
	"time"
)

// WaitFor polls cond until it returns true, failing the test when timeout
// passes first. cond's string says what it is still waiting for; the last
// one goes in the failure message. Polling starts fast and backs off to
// 200ms, so a condition met at once costs no wait.
func WaitFor(t testing.TB, timeout time.Duration, cond func() (bool, string)) {
	t.Helper()
	if err := waitFor(timeout, cond); err != nil {
		t.Fatal(err)
	}
}

func waitFor(timeout time.Duration, cond func() (bool, string)) error {
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	interval := 5 * time.Millisecond
	for polls := 1; ; polls++ {
		ok, why := cond()
		if ok {
			return nil
		}
		tick := time.NewTimer(interval)
		select {
		case <-deadline.C:
			tick.Stop()
			return fmt.Errorf("WaitFor: condition not met after %v (%d polls): %s", timeout, polls, why)
		case <-tick.C:
		}
		interval = min(2*interval, 200*time.Millisecond)
	}
}
