package storage

import (
	"math"
	"sync"
	"sync/atomic"
	"time"
)

// Throttle limits the cleaner's I/O to a rate in bytes per second
// (log.cleaner.io.max.bytes.per.second), shared by every cleaner thread,
// as Kafka's cleaner throttler is: after each read or write it sleeps as
// long as the bytes so far are ahead of the rate over the current period.
//
// A throttle made with a busy rate (the Manager's, see
// CleanerOptions.BusyIOBytesPerSecond) also yields to the produce path:
// while the node's logs take appends it holds the cleaner to the lower of
// the two rates, and lets it run at the configured one (by default
// unlimited) once no append has been seen for throttleBusyHold. On a small
// machine the cleaner and the producers share the cores, so a cleaner
// running flat out takes the producers' CPU time and memory bandwidth.
type Throttle struct {
	rate  float64 // +Inf: no limit of its own (busy rate only)
	now   func() time.Time
	sleep func(time.Duration)

	// busyRate applies while activity moves; 0: never.
	busyRate float64
	activity *atomic.Int64

	mu        sync.Mutex
	start     time.Time
	bytes     float64
	lastSeen  int64     // activity at the last wait
	busyUntil time.Time // busyRate applies before then
	current   float64   // the rate of the current period
}

// throttlePeriod is how long the rate is measured over before it restarts,
// so a pause (no dirty logs) is not made up for by a burst afterwards.
const throttlePeriod = 300 * time.Millisecond

// throttleBusyHold is how long after the last append seen the busy rate
// still applies: appends come in bursts (a producer's linger, a follower's
// fetch wait), and the cleaner should not race ahead in every gap.
const throttleBusyHold = 500 * time.Millisecond

// NewThrottle returns a throttle at bytesPerSecond, or nil (no limit) for
// a rate that is not positive and finite.
func NewThrottle(bytesPerSecond float64, now func() time.Time, sleep func(time.Duration)) *Throttle {
	if !finiteRate(bytesPerSecond) {
		return nil
	}
	return newThrottle(bytesPerSecond, 0, nil, now, sleep)
}

// newBusyThrottle is a throttle at bytesPerSecond (none if not positive
// and finite) that drops to busyBytesPerSecond while activity (a count of
// appends) changes; nil if neither rate limits anything.
func newBusyThrottle(bytesPerSecond, busyBytesPerSecond float64, activity *atomic.Int64, now func() time.Time, sleep func(time.Duration)) *Throttle {
	if !finiteRate(busyBytesPerSecond) || activity == nil {
		return NewThrottle(bytesPerSecond, now, sleep)
	}
	if !finiteRate(bytesPerSecond) {
		bytesPerSecond = math.Inf(1)
	}
	return newThrottle(bytesPerSecond, busyBytesPerSecond, activity, now, sleep)
}

func finiteRate(r float64) bool {
	return r > 0 && !math.IsInf(r, 1) && r < math.MaxFloat64
}

func newThrottle(rate, busyRate float64, activity *atomic.Int64, now func() time.Time, sleep func(time.Duration)) *Throttle {
	if now == nil {
		now = time.Now
	}
	if sleep == nil {
		sleep = time.Sleep
	}
	t := &Throttle{rate: rate, busyRate: busyRate, activity: activity, now: now, sleep: sleep, start: now(), current: rate}
	if activity != nil {
		t.lastSeen = activity.Load()
	}
	return t
}

// wait accounts n bytes and sleeps if they run ahead of the rate.
func (t *Throttle) wait(n int64) {
	if t == nil {
		return
	}
	t.mu.Lock()
	now := t.now()
	rate := t.rate
	if t.activity != nil {
		if seen := t.activity.Load(); seen != t.lastSeen {
			t.lastSeen, t.busyUntil = seen, now.Add(throttleBusyHold)
		}
		if now.Before(t.busyUntil) {
			rate = min(rate, t.busyRate)
		}
	}
	elapsed := now.Sub(t.start)
	if elapsed > throttlePeriod || rate != t.current {
		// A new period; also when the rate changes, so bytes read at
		// the idle rate are not paid for at the busy one.
		t.start, t.bytes, elapsed, t.current = now, 0, 0, rate
	}
	t.bytes += float64(n)
	var ahead time.Duration
	if !math.IsInf(rate, 1) {
		ahead = time.Duration(t.bytes/rate*float64(time.Second)) - elapsed
	}
	t.mu.Unlock()
	if ahead > 0 {
		t.sleep(ahead)
	}
}
