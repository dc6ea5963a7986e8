package share

import (
	"errors"
	"slices"
	"testing"
	"time"
)

var t0 = time.Unix(1_700_000_000, 0)

func testConfig() Config {
	return Config{LockDuration: 30 * time.Second, DeliveryLimit: 3, MaxRecordLocks: 100}
}

func acquire(p *Partition, now time.Time, member string, max int, batches ...Batch) []AcquiredRange {
	return p.Acquire(now, AcquireRequest{Member: member, MaxRecords: max, Mode: RecordLimit, Batches: batches})
}

func ack(first, last int64, types ...AckType) AckBatch {
	return AckBatch{First: first, Last: last, Types: types}
}

func states(p *Partition, from, to int64) []State {
	var out []State
	for o := from; o <= to; o++ {
		s, _, _ := p.Record(o)
		out = append(out, s)
	}
	return out
}

func TestAcquireHandsOutAvailableRecordsOnce(t *testing.T) {
	p := New(testConfig(), 0)
	got := acquire(p, t0, "a", 10, Batch{0, 4}, Batch{5, 9})
	if want := []AcquiredRange{{0, 9, 1}}; !slices.Equal(got, want) {
		t.Fatalf("first acquire %v, want %v", got, want)
	}
	if got := acquire(p, t0, "b", 10, Batch{0, 4}, Batch{5, 9}); len(got) != 0 {
		t.Fatalf("second member acquired %v of records already acquired", got)
	}
	if p.NextFetchOffset() != 10 || p.EndOffset() != 9 || p.StartOffset() != 0 {
		t.Fatalf("next fetch %d, SPEO %d, SPSO %d", p.NextFetchOffset(), p.EndOffset(), p.StartOffset())
	}
}

func TestAcquireModes(t *testing.T) {
	cases := []struct {
		name string
		mode AcquireMode
		max  int
		want []AcquiredRange
	}{
		{"record limit stops at MaxRecords", RecordLimit, 3, []AcquiredRange{{0, 2, 1}}},
		{"batch optimized ends at the batch boundary", BatchOptimized, 3, []AcquiredRange{{0, 4, 1}}},
		{"batch optimized takes the next batch while under MaxRecords", BatchOptimized, 6, []AcquiredRange{{0, 9, 1}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := New(testConfig(), 0)
			got := p.Acquire(t0, AcquireRequest{Member: "a", MaxRecords: c.max, Mode: c.mode, Batches: []Batch{{0, 4}, {5, 9}}})
			if !slices.Equal(got, c.want) {
				t.Fatalf("got %v, want %v", got, c.want)
			}
		})
	}
}

func TestAcquireArchivesOffsetsNoBatchCovers(t *testing.T) {
	p := New(testConfig(), 0)
	// Offset 5 is a transaction marker: no data batch covers it.
	got := acquire(p, t0, "a", 100, Batch{0, 4}, Batch{6, 9})
	if want := []AcquiredRange{{0, 4, 1}, {6, 9, 1}}; !slices.Equal(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	if s, n, _ := p.Record(5); s != Archived || n != 0 {
		t.Fatalf("offset 5 %v count %d, want Archived never delivered", s, n)
	}
	if err := p.Acknowledge(t0, "a", []AckBatch{ack(0, 4, AckAccept), ack(6, 9, AckAccept)}); err != nil {
		t.Fatal(err)
	}
	if p.StartOffset() != 10 {
		t.Fatalf("SPSO %d, want 10", p.StartOffset())
	}
}

func TestAcquireSkipsToTheLogWhenNothingIsInFlight(t *testing.T) {
	p := New(testConfig(), 0)
	got := acquire(p, t0, "a", 100, Batch{5000, 5009})
	if want := []AcquiredRange{{5000, 5009, 1}}; !slices.Equal(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	if p.StartOffset() != 5000 {
		t.Fatalf("SPSO %d, want 5000", p.StartOffset())
	}
}

func TestMaxRecordLocksBoundsTheWindow(t *testing.T) {
	cfg := testConfig()
	cfg.MaxRecordLocks = 4
	p := New(cfg, 0)
	got := acquire(p, t0, "a", 100, Batch{0, 9})
	if want := []AcquiredRange{{0, 3, 1}}; !slices.Equal(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	if p.CanAcquire() {
		t.Fatal("CanAcquire with a full window of acquired records")
	}
	if got := acquire(p, t0, "b", 100, Batch{0, 9}); len(got) != 0 {
		t.Fatalf("acquired %v past the lock limit", got)
	}
	// Accepting the first two makes room for two more.
	if err := p.Acknowledge(t0, "a", []AckBatch{ack(0, 1, AckAccept)}); err != nil {
		t.Fatal(err)
	}
	got = acquire(p, t0, "b", 100, Batch{0, 9})
	if want := []AcquiredRange{{4, 5, 1}}; !slices.Equal(got, want) {
		t.Fatalf("after two accepts got %v, want %v", got, want)
	}
}

func TestAcknowledgeTypes(t *testing.T) {
	cases := []struct {
		name      string
		types     []AckType
		want      []State
		wantStart int64
	}{
		{"accept", []AckType{AckAccept}, []State{Acknowledged, Acknowledged, Acknowledged}, 3},
		{"reject archives", []AckType{AckReject}, []State{Archived, Archived, Archived}, 3},
		{"gap archives", []AckType{AckGap}, []State{Archived, Archived, Archived}, 3},
		{"release makes available", []AckType{AckRelease}, []State{Available, Available, Available}, 0},
		{"renew keeps acquired", []AckType{AckRenew}, []State{Acquired, Acquired, Acquired}, 0},
		{"one type per offset", []AckType{AckAccept, AckRelease, AckReject}, []State{Acknowledged, Available, Archived}, 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := New(testConfig(), 0)
			acquire(p, t0, "a", 10, Batch{0, 2})
			if err := p.Acknowledge(t0, "a", []AckBatch{{First: 0, Last: 2, Types: c.types}}); err != nil {
				t.Fatal(err)
			}
			for o := p.StartOffset(); o <= 2; o++ {
				if got, _, _ := p.Record(o); got != c.want[o] {
					t.Fatalf("offset %d %v, want %v", o, got, c.want[o])
				}
			}
			if p.StartOffset() != c.wantStart {
				t.Fatalf("SPSO %d, want %d", p.StartOffset(), c.wantStart)
			}
		})
	}
}

func TestAcknowledgeErrorsLeaveStateUnchanged(t *testing.T) {
	cases := []struct {
		name    string
		member  string
		at      time.Time
		batches []AckBatch
		want    error
	}{
		{"another member's records", "b", t0, []AckBatch{ack(0, 1, AckAccept)}, ErrInvalidRecordState},
		{"never acquired", "a", t0, []AckBatch{ack(5, 6, AckAccept)}, ErrInvalidRecordState},
		{"past the window", "a", t0, []AckBatch{ack(3, 20, AckAccept)}, ErrInvalidRecordState},
		{"lock expired", "a", t0.Add(30 * time.Second), []AckBatch{ack(0, 1, AckAccept)}, ErrInvalidRecordState},
		{"second batch bad spoils the first", "a", t0, []AckBatch{ack(0, 1, AckAccept), ack(7, 7, AckAccept)}, ErrInvalidRecordState},
		{"backwards range", "a", t0, []AckBatch{ack(3, 1, AckAccept)}, ErrInvalidRequest},
		{"overlapping batches", "a", t0, []AckBatch{ack(0, 2, AckAccept), ack(2, 3, AckAccept)}, ErrInvalidRequest},
		{"types of the wrong length", "a", t0, []AckBatch{ack(0, 3, AckAccept, AckAccept)}, ErrInvalidRequest},
		{"unknown type", "a", t0, []AckBatch{ack(0, 0, AckType(9))}, ErrInvalidRequest},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := New(testConfig(), 0)
			acquire(p, t0, "a", 5, Batch{0, 4})
			// Offsets 5 and 6 are in the window, never acquired.
			p.Acquire(t0, AcquireRequest{Member: "x", MaxRecords: 1, Batches: []Batch{{7, 7}}})
			p.Acknowledge(t0, "x", []AckBatch{ack(7, 7, AckRelease)})
			before := p.Durable()
			err := p.Acknowledge(c.at, c.member, c.batches)
			if !errors.Is(err, c.want) {
				t.Fatalf("error %v, want %v", err, c.want)
			}
			after := p.Durable()
			if c.at.Equal(t0) && !durableEqual(before, after) {
				t.Fatalf("state changed by a refused acknowledgement:\n%+v\n%+v", before, after)
			}
			if s, _, m := p.Record(0); c.at.Equal(t0) && (s != Acquired || m != "a") {
				t.Fatalf("offset 0 %v held by %q after the refusal", s, m)
			}
		})
	}
}

func durableEqual(a, b Durable) bool {
	return a.StartOffset == b.StartOffset && a.StateEpoch == b.StateEpoch && slices.Equal(a.Ranges, b.Ranges)
}

func TestLockExpiryAndDeliveryLimit(t *testing.T) {
	p := New(testConfig(), 0) // limit 3
	now := t0
	for delivery := int16(1); delivery <= 3; delivery++ {
		got := acquire(p, now, "a", 10, Batch{0, 1})
		if want := []AcquiredRange{{0, 1, delivery}}; !slices.Equal(got, want) {
			t.Fatalf("delivery %d: got %v, want %v", delivery, got, want)
		}
		if d, ok := p.NextDeadline(); !ok || !d.Equal(now.Add(30*time.Second)) {
			t.Fatalf("deadline %v %v", d, ok)
		}
		now = now.Add(29 * time.Second)
		if p.Expire(now) {
			t.Fatal("expired before the lock duration")
		}
		now = now.Add(time.Second)
		if !p.Expire(now) {
			t.Fatal("not expired at the lock duration")
		}
	}
	// The third expiry reached the limit: archived, the SPSO moved on.
	if p.StartOffset() != 2 {
		t.Fatalf("SPSO %d after the delivery limit, want 2", p.StartOffset())
	}
	if got := acquire(p, now, "b", 10, Batch{0, 1}); len(got) != 0 {
		t.Fatalf("archived records acquired again: %v", got)
	}
}

func TestReleaseAtTheLimitArchives(t *testing.T) {
	p := New(testConfig(), 0)
	for range 3 {
		acquire(p, t0, "a", 10, Batch{0, 0})
		if err := p.Acknowledge(t0, "a", []AckBatch{ack(0, 0, AckRelease)}); err != nil {
			t.Fatal(err)
		}
	}
	if p.StartOffset() != 1 {
		t.Fatalf("SPSO %d, want 1: the third release must archive", p.StartOffset())
	}
}

func TestLoweredDeliveryLimitGivesAFinalAttempt(t *testing.T) {
	cfg := testConfig()
	cfg.DeliveryLimit = 5
	p := New(cfg, 0)
	acquire(p, t0, "a", 1, Batch{0, 0})
	p.Acknowledge(t0, "a", []AckBatch{ack(0, 0, AckRelease)})
	acquire(p, t0, "a", 1, Batch{0, 0})
	p.Acknowledge(t0, "a", []AckBatch{ack(0, 0, AckRelease)})
	acquire(p, t0, "a", 1, Batch{0, 0}) // third delivery in flight
	cfg.DeliveryLimit = 2
	p.SetConfig(cfg)
	if err := p.Acknowledge(t0, "a", []AckBatch{ack(0, 0, AckRelease)}); err != nil {
		t.Fatal(err)
	}
	if p.StartOffset() != 1 {
		t.Fatalf("SPSO %d: a release past the lowered limit must archive", p.StartOffset())
	}
}

func TestRenewExtendsTheLock(t *testing.T) {
	p := New(testConfig(), 0)
	acquire(p, t0, "a", 10, Batch{0, 0})
	if err := p.Acknowledge(t0.Add(20*time.Second), "a", []AckBatch{ack(0, 0, AckRenew)}); err != nil {
		t.Fatal(err)
	}
	if p.Expire(t0.Add(40 * time.Second)) {
		t.Fatal("renewed lock expired at the old deadline")
	}
	if err := p.Acknowledge(t0.Add(45*time.Second), "a", []AckBatch{ack(0, 0, AckAccept)}); err != nil {
		t.Fatalf("accept after renew: %v", err)
	}
	if _, n, _ := p.Record(0); p.StartOffset() != 1 || n != 0 {
		t.Fatalf("SPSO %d", p.StartOffset())
	}
}

func TestReleaseMemberReturnsOnlyItsRecords(t *testing.T) {
	p := New(testConfig(), 0)
	acquire(p, t0, "a", 2, Batch{0, 3})
	acquire(p, t0, "b", 2, Batch{0, 3})
	if !p.ReleaseMember(t0, "a") {
		t.Fatal("nothing released")
	}
	if got, want := states(p, 0, 3), []State{Available, Available, Acquired, Acquired}; !slices.Equal(got, want) {
		t.Fatalf("states %v, want %v", got, want)
	}
	got := acquire(p, t0, "c", 10, Batch{0, 3})
	if want := []AcquiredRange{{0, 1, 2}}; !slices.Equal(got, want) {
		t.Fatalf("redelivery %v, want %v", got, want)
	}
}

func TestSPSOAdvancesOnlyOverAContiguousFinishedPrefix(t *testing.T) {
	p := New(testConfig(), 100)
	acquire(p, t0, "a", 10, Batch{100, 104})
	steps := []struct {
		ack       AckBatch
		wantStart int64
	}{
		{ack(101, 101, AckAccept), 100},
		{ack(103, 104, AckReject), 100},
		{ack(100, 100, AckAccept), 102},
		{ack(102, 102, AckGap), 105},
	}
	for i, s := range steps {
		if err := p.Acknowledge(t0, "a", []AckBatch{s.ack}); err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
		if p.StartOffset() != s.wantStart {
			t.Fatalf("step %d: SPSO %d, want %d", i, p.StartOffset(), s.wantStart)
		}
	}
	if p.InFlight() != 0 {
		t.Fatalf("%d in flight after all finished", p.InFlight())
	}
}

func TestMoveStartFinishesRecordsBelowTheLogStart(t *testing.T) {
	p := New(testConfig(), 0)
	acquire(p, t0, "a", 10, Batch{0, 9})
	p.MoveStart(6)
	if p.StartOffset() != 6 || p.InFlight() != 4 {
		t.Fatalf("SPSO %d in flight %d", p.StartOffset(), p.InFlight())
	}
	if err := p.Acknowledge(t0, "a", []AckBatch{ack(3, 7, AckAccept)}); !errors.Is(err, ErrInvalidRecordState) {
		t.Fatalf("ack below the SPSO: %v", err)
	}
	if p.MoveStart(2) {
		t.Fatal("moved backwards")
	}
}

// A failover: the new leader restores the durable state. Acquired records
// become available with their count kept; acknowledged ones stay done.
func TestDurableRestore(t *testing.T) {
	p := New(testConfig(), 0)
	acquire(p, t0, "a", 10, Batch{0, 9})
	if err := p.Acknowledge(t0, "a", []AckBatch{ack(2, 3, AckAccept), ack(5, 5, AckRelease), ack(6, 6, AckReject)}); err != nil {
		t.Fatal(err)
	}
	d := p.Durable()
	want := Durable{StartOffset: 0, Ranges: []StateRange{
		{0, 1, Available, 1}, {2, 3, Acknowledged, 1}, {4, 5, Available, 1}, {6, 6, Archived, 1}, {7, 9, Available, 1},
	}}
	if !durableEqual(d, want) {
		t.Fatalf("durable\n%+v\nwant\n%+v", d, want)
	}
	if err := d.Check(); err != nil {
		t.Fatal(err)
	}
	q := Restore(testConfig(), d)
	got := acquire(q, t0, "b", 100, Batch{0, 9}, Batch{10, 11})
	wantAcq := []AcquiredRange{{0, 1, 2}, {4, 5, 2}, {7, 9, 2}, {10, 11, 1}}
	if !slices.Equal(got, wantAcq) {
		t.Fatalf("after restore acquired %v, want %v", got, wantAcq)
	}
}

func TestDurableCheck(t *testing.T) {
	bad := []Durable{
		{StartOffset: 5, Ranges: []StateRange{{4, 6, Archived, 1}}},
		{StartOffset: 0, Ranges: []StateRange{{3, 2, Archived, 1}}},
		{StartOffset: 0, Ranges: []StateRange{{0, 2, Archived, 1}, {2, 3, Archived, 1}}},
		{StartOffset: 0, Ranges: []StateRange{{0, 2, Acquired, 1}}},
		{StartOffset: 0, Ranges: []StateRange{{0, 2, Archived, -1}}},
	}
	for i, d := range bad {
		if d.Check() == nil {
			t.Errorf("case %d accepted: %+v", i, d)
		}
	}
}
