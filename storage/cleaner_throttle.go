package storage

import (
	"math"
	"sync"
	"time"
)

// Throttle limits the cleaner's I/O to a rate in bytes per second
// (log.cleaner.io.max.bytes.per.second), shared by every cleaner thread,
// as Kafka's cleaner throttler is: after each read or write it sleeps as
// long as the bytes so far are ahead of the rate over the current period.
type Throttle struct {
	rate  float64
	now   func() time.Time
	sleep func(time.Duration)

	mu    sync.Mutex
	start time.Time
	bytes float64
}

// throttlePeriod is how long the rate is measured over before it restarts,
// so a pause (no dirty logs) is not made up for by a burst afterwards.
const throttlePeriod = 300 * time.Millisecond

// NewThrottle returns a throttle at bytesPerSecond, or nil (no limit) for
// a rate that is not positive and finite.
func NewThrottle(bytesPerSecond float64, now func() time.Time, sleep func(time.Duration)) *Throttle {
	if !(bytesPerSecond > 0) || math.IsInf(bytesPerSecond, 1) || bytesPerSecond >= math.MaxFloat64 {
		return nil
	}
	if now == nil {
		now = time.Now
	}
	if sleep == nil {
		sleep = time.Sleep
	}
	return &Throttle{rate: bytesPerSecond, now: now, sleep: sleep, start: now()}
}

// wait accounts n bytes and sleeps if they run ahead of the rate.
func (t *Throttle) wait(n int64) {
	if t == nil {
		return
	}
	t.mu.Lock()
	now := t.now()
	elapsed := now.Sub(t.start)
	if elapsed > throttlePeriod {
		t.start, t.bytes, elapsed = now, 0, 0
	}
	t.bytes += float64(n)
	ahead := time.Duration(t.bytes/t.rate*float64(time.Second)) - elapsed
	t.mu.Unlock()
	if ahead > 0 {
		t.sleep(ahead)
	}
}
