package share

import (
	"fmt"
	"testing"
	"time"

	"pgregory.net/rapid"
)

// The log the property test reads: offsets [0, logEnd) in batches, some
// offsets missing (control batches).
type testLog struct {
	batches []Batch
	end     int64
}

func genLog(t *rapid.T) testLog {
	var l testLog
	o := int64(0)
	for range rapid.IntRange(1, 12).Draw(t, "batches") {
		o += int64(rapid.IntRange(0, 1).Draw(t, "hole"))
		n := int64(rapid.IntRange(1, 6).Draw(t, "batchLen"))
		l.batches = append(l.batches, Batch{o, o + n - 1})
		o += n
	}
	l.end = o
	return l
}

// read is what the leader would read from offset: the batches ending at or
// after it.
func (l testLog) read(from int64) []Batch {
	for i, b := range l.batches {
		if b.Last >= from {
			return l.batches[i:]
		}
	}
	return nil
}

func (l testLog) has(o int64) bool {
	for _, b := range l.batches {
		if o >= b.First && o <= b.Last {
			return true
		}
	}
	return false
}

// Under any interleaving of acquisitions, acknowledgements of any kind
// (right or wrong member, stale, malformed), lock expiries, member
// departures and leader failovers (Durable then Restore):
//   - a record is acknowledged (accepted) at most once, and once
//     acknowledged it is never delivered again;
//   - a delivery count never exceeds the limit, and counts only grow;
//   - an offset the log does not hold is never delivered;
//   - draining with one member that accepts everything finishes every
//     record: the SPSO reaches the log's end (every record Acknowledged or
//     Archived).
func TestPropertyEachRecordAcknowledgedAtMostOnce(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		cfg := Config{
			LockDuration:   time.Duration(rapid.IntRange(1, 5).Draw(t, "lockSeconds")) * time.Second,
			DeliveryLimit:  int16(rapid.IntRange(2, 4).Draw(t, "limit")),
			MaxRecordLocks: rapid.IntRange(3, 40).Draw(t, "maxLocks"),
		}
		log := genLog(t)
		p := New(cfg, 0)
		now := t0
		members := []string{"a", "b", "c"}
		accepted := map[int64]bool{}
		counts := map[int64]int16{}
		held := map[int64]string{} // what the test believes each member holds
		deliver := func(member string, got []AcquiredRange) {
			for _, r := range got {
				for o := r.First; o <= r.Last; o++ {
					if accepted[o] {
						t.Fatalf("offset %d delivered after it was accepted", o)
					}
					if !log.has(o) {
						t.Fatalf("offset %d delivered but not in the log", o)
					}
					if r.DeliveryCount > cfg.DeliveryLimit || r.DeliveryCount <= counts[o] {
						t.Fatalf("offset %d delivery count %d (before %d, limit %d)", o, r.DeliveryCount, counts[o], cfg.DeliveryLimit)
					}
					counts[o] = r.DeliveryCount
					held[o] = member
				}
			}
		}
		steps := rapid.IntRange(0, 60).Draw(t, "steps")
		for i := range steps {
			member := rapid.SampledFrom(members).Draw(t, "member")
			switch op := rapid.IntRange(0, 5).Draw(t, "op"); op {
			case 0, 1:
				mode := AcquireMode(rapid.IntRange(0, 1).Draw(t, "mode"))
				maxRecs := rapid.IntRange(1, 10).Draw(t, "maxRecords")
				deliver(member, p.Acquire(now, AcquireRequest{Member: member, MaxRecords: maxRecs, Mode: mode, Batches: log.read(p.NextFetchOffset())}))
			case 2:
				first := int64(rapid.IntRange(0, int(log.end)).Draw(t, "ackFirst"))
				last := first + int64(rapid.IntRange(0, 4).Draw(t, "ackLen"))
				var types []AckType
				if rapid.Bool().Draw(t, "oneType") {
					types = []AckType{AckType(rapid.IntRange(0, 4).Draw(t, "type"))}
				} else {
					for range last - first + 1 {
						types = append(types, AckType(rapid.IntRange(0, 4).Draw(t, "type")))
					}
				}
				if p.Acknowledge(now, member, []AckBatch{{First: first, Last: last, Types: types}}) == nil {
					for o := first; o <= last; o++ {
						ty := types[0]
						if len(types) > 1 {
							ty = types[o-first]
						}
						if ty != AckAccept {
							continue
						}
						if accepted[o] {
							t.Fatalf("step %d: offset %d accepted twice", i, o)
						}
						if held[o] != member {
							t.Fatalf("step %d: offset %d accepted by %s, delivered to %s", i, o, member, held[o])
						}
						accepted[o] = true
					}
				}
			case 3:
				now = now.Add(time.Duration(rapid.IntRange(0, 6000).Draw(t, "advanceMs")) * time.Millisecond)
				p.Expire(now)
			case 4:
				p.ReleaseMember(now, member)
			case 5:
				d := p.Durable()
				if err := d.Check(); err != nil {
					t.Fatalf("durable state fails its own check: %v %+v", err, d)
				}
				p = Restore(cfg, d)
				clear(held) // nothing is held after a failover
			}
		}
		// Drain: one member accepts all it gets; locks never expire here.
		for round := 0; p.StartOffset() < log.end; round++ {
			if round > 10*int(log.end)+10 {
				t.Fatalf("drain did not finish: SPSO %d, log end %d, %d in flight", p.StartOffset(), log.end, p.InFlight())
			}
			got := p.Acquire(now, AcquireRequest{Member: "drain", MaxRecords: 1000, Batches: log.read(p.NextFetchOffset())})
			deliver("drain", got)
			if len(got) == 0 {
				// Anything held by departed members comes back on expiry.
				now = now.Add(cfg.LockDuration)
				continue
			}
			var acks []AckBatch
			for _, r := range got {
				acks = append(acks, AckBatch{First: r.First, Last: r.Last, Types: []AckType{AckAccept}})
			}
			if err := p.Acknowledge(now, "drain", acks); err != nil {
				t.Fatalf("drain acknowledgement %v: %v", fmt.Sprint(acks), err)
			}
			for _, r := range got {
				for o := r.First; o <= r.Last; o++ {
					if accepted[o] {
						t.Fatalf("offset %d accepted twice in the drain", o)
					}
					accepted[o] = true
				}
			}
		}
		if p.StartOffset() != log.end || p.InFlight() != 0 {
			t.Fatalf("SPSO %d, in flight %d, log end %d", p.StartOffset(), p.InFlight(), log.end)
		}
	})
}
