package invariants

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// rec is a record whose value names producer "p", its partition and seq.
func rec(partition int32, offset, seq int64) Record {
	return Record{Partition: partition, Offset: offset, Key: []byte("p"),
		Value: EncodeValue(ID{Producer: "p", Partition: partition, Seq: seq}, 0)}
}

func ack(r Record, ms int) Ack {
	return Ack{Record: r, At: t0.Add(time.Duration(ms) * time.Millisecond)}
}

func TestCheck(t *testing.T) {
	other := rec(0, 1, 1)
	other.Value = []byte("someone else's bytes")
	otherKey := rec(0, 1, 1)
	otherKey.Key = []byte("q")
	cases := []struct {
		name  string
		acked []Ack
		read  []Record
		want  Report // Examples and stall fields are not compared here
	}{
		{name: "empty"},
		{
			name:  "all acknowledged records read once",
			acked: []Ack{ack(rec(0, 0, 0), 0), ack(rec(0, 1, 1), 1), ack(rec(1, 0, 0), 2)},
			read:  []Record{rec(1, 0, 0), rec(0, 1, 1), rec(0, 0, 0)},
			want:  Report{Acknowledged: 3, Read: 3},
		},
		{
			name:  "an acknowledged offset missing is lost, and leaves a gap",
			acked: []Ack{ack(rec(0, 0, 0), 0), ack(rec(0, 1, 1), 1), ack(rec(0, 2, 2), 2)},
			read:  []Record{rec(0, 0, 0), rec(0, 2, 2)},
			want:  Report{Acknowledged: 3, Read: 2, Lost: 1, Gaps: 1},
		},
		{
			name:  "the tail missing is lost but no gap",
			acked: []Ack{ack(rec(0, 0, 0), 0), ack(rec(0, 1, 1), 1)},
			read:  []Record{rec(0, 0, 0)},
			want:  Report{Acknowledged: 2, Read: 1, Lost: 1},
		},
		{
			name:  "other bytes at an acknowledged offset are a loss",
			acked: []Ack{ack(rec(0, 0, 0), 0), ack(rec(0, 1, 1), 1)},
			read:  []Record{rec(0, 0, 0), other},
			want:  Report{Acknowledged: 2, Read: 2, Lost: 1, Unacknowledged: 1},
		},
		{
			name:  "another key at an acknowledged offset is a loss",
			acked: []Ack{ack(rec(0, 0, 0), 0), ack(rec(0, 1, 1), 1)},
			read:  []Record{rec(0, 0, 0), otherKey},
			want:  Report{Acknowledged: 2, Read: 2, Lost: 1, Unacknowledged: 1},
		},
		{
			name:  "a value at two offsets is a duplicate",
			acked: []Ack{ack(rec(0, 0, 0), 0), ack(rec(0, 1, 1), 1)},
			read:  []Record{rec(0, 0, 0), rec(0, 1, 1), {Partition: 0, Offset: 2, Key: []byte("p"), Value: rec(0, 1, 1).Value}},
			want:  Report{Acknowledged: 2, Read: 3, Duplicated: 1, Unacknowledged: 1},
		},
		{
			name:  "one offset acknowledged for two values conflicts",
			acked: []Ack{ack(rec(0, 0, 0), 0), ack(Record{Partition: 0, Offset: 0, Key: []byte("p"), Value: rec(0, 0, 1).Value}, 1)},
			read:  []Record{rec(0, 0, 0)},
			want:  Report{Acknowledged: 2, Read: 1, Conflicting: 1},
		},
		{
			name:  "one offset read as two values conflicts",
			acked: []Ack{ack(rec(0, 0, 0), 0)},
			read:  []Record{rec(0, 0, 0), {Partition: 0, Offset: 0, Key: []byte("p"), Value: []byte("x")}},
			want:  Report{Acknowledged: 1, Read: 2, Conflicting: 1},
		},
		{
			name:  "the same record read twice is not a duplicate",
			acked: []Ack{ack(rec(0, 0, 0), 0)},
			read:  []Record{rec(0, 0, 0), rec(0, 0, 0)},
			want:  Report{Acknowledged: 1, Read: 2},
		},
		{
			name:  "a lower sequence after a higher one is out of order",
			acked: []Ack{ack(rec(0, 0, 1), 0), ack(rec(0, 1, 0), 1), ack(rec(0, 2, 2), 2)},
			read:  []Record{rec(0, 0, 1), rec(0, 1, 0), rec(0, 2, 2)},
			want:  Report{Acknowledged: 3, Read: 3, OutOfOrder: 1},
		},
		{
			name:  "sequence gaps (failed produces) are in order",
			acked: []Ack{ack(rec(0, 0, 0), 0), ack(rec(0, 1, 5), 1)},
			read:  []Record{rec(0, 0, 0), rec(0, 1, 5)},
			want:  Report{Acknowledged: 2, Read: 2},
		},
		{
			name: "orders are per producer and partition",
			read: []Record{
				rec(0, 0, 3),
				{Partition: 0, Offset: 1, Value: EncodeValue(ID{"q", 0, 0}, 0)},
				rec(1, 0, 0),
			},
			want: Report{Read: 3, Unacknowledged: 3},
		},
		{
			name: "a value naming another partition is misplaced",
			read: []Record{{Partition: 2, Offset: 0, Value: EncodeValue(ID{"p", 1, 0}, 0)}},
			want: Report{Read: 1, Misplaced: 1, Unacknowledged: 1},
		},
		{
			name: "foreign values are read, not ordered",
			read: []Record{{Partition: 0, Offset: 0, Value: []byte("b")}, {Partition: 0, Offset: 1, Value: []byte("a")}},
			want: Report{Read: 2, Unacknowledged: 2},
		},
		{
			name: "a log not starting at zero has no gap before its start",
			read: []Record{rec(0, 7, 0), rec(0, 8, 1)},
			want: Report{Read: 2, Unacknowledged: 2},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := Check(c.acked, c.read)
			want := c.want
			want.Examples, want.LongestStall, want.StallStart = got.Examples, got.LongestStall, got.StallStart
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("got  %v\nwant %v", got, want)
			}
			if got.OK() != (want.Lost+want.Duplicated+want.Conflicting+want.OutOfOrder+want.Misplaced+want.Gaps == 0) {
				t.Errorf("OK() = %v for %v", got.OK(), got)
			}
			if !got.OK() && len(got.Examples) == 0 {
				t.Errorf("violations without examples: %v", got)
			}
		})
	}
}

func TestCheckExamplesAreBounded(t *testing.T) {
	var acked []Ack
	for i := range 100 {
		acked = append(acked, ack(rec(0, int64(i), int64(i)), i))
	}
	r := Check(acked, nil)
	if r.Lost != 100 || len(r.Examples) != maxExamples {
		t.Fatalf("lost %d with %d examples, want 100 with %d", r.Lost, len(r.Examples), maxExamples)
	}
	if len(r.Suspects) != maxExamples || r.Suspects[0] != (Position{0, 0}) {
		t.Errorf("suspects %v, want the first %d lost positions", r.Suspects, maxExamples)
	}
	dup := Check(nil, []Record{rec(0, 0, 0), rec(0, 1, 1), {Partition: 0, Offset: 2, Value: rec(0, 0, 0).Value}})
	if dup.Duplicated != 1 || len(dup.Suspects) != 2 || dup.Suspects[0].Offset != 0 || dup.Suspects[1].Offset != 2 {
		t.Errorf("a duplicate names both positions: %v %v", dup, dup.Suspects)
	}
	if !strings.Contains(r.String(), "lost 100") {
		t.Errorf("summary %q does not say lost 100", r.String())
	}
}

func TestLongestStall(t *testing.T) {
	at := func(ms ...int) []Ack {
		var a []Ack
		for _, m := range ms {
			a = append(a, ack(rec(0, 0, 0), m))
		}
		return a
	}
	ms := func(m int) time.Time { return t0.Add(time.Duration(m) * time.Millisecond) }
	cases := []struct {
		name      string
		acked     []Ack
		from, to  time.Time
		want      time.Duration
		wantStart time.Time
	}{
		{name: "none", want: 0},
		{name: "one", acked: at(5), want: 0},
		{name: "unsorted", acked: at(30, 0, 10, 100, 110), want: 70 * time.Millisecond, wantStart: ms(30)},
		{name: "window drops outside", acked: at(0, 500, 510, 520, 2000), from: ms(500), to: ms(600), want: 80 * time.Millisecond, wantStart: ms(520)},
		{name: "silence into the window's end counts", acked: at(0, 10), from: ms(0), to: ms(1000), want: 990 * time.Millisecond, wantStart: ms(10)},
		{name: "silence from the window's start counts", acked: at(900, 1000), from: ms(0), to: ms(1000), want: 900 * time.Millisecond, wantStart: ms(0)},
		{name: "empty window", from: ms(0), to: ms(50), want: 50 * time.Millisecond, wantStart: ms(0)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, start := LongestStall(c.acked, c.from, c.to)
			if got != c.want || !start.Equal(c.wantStart) {
				t.Errorf("LongestStall = %v from %v, want %v from %v", got, start, c.want, c.wantStart)
			}
		})
	}
	r := Check(at(0, 10, 400), nil)
	if r.LongestStall != 390*time.Millisecond || !r.StallStart.Equal(ms(10)) {
		t.Errorf("Check stall %v from %v, want 390ms from %v", r.LongestStall, r.StallStart, ms(10))
	}
}

func TestVanished(t *testing.T) {
	changed := rec(0, 1, 1)
	changed.Value = []byte("rewritten")
	cases := []struct {
		name        string
		seen, final []Record
		want        int
	}{
		{name: "nothing seen", final: []Record{rec(0, 0, 0)}, want: 0},
		{name: "all still there", seen: []Record{rec(0, 0, 0), rec(0, 1, 1)}, final: []Record{rec(0, 1, 1), rec(0, 0, 0)}, want: 0},
		{name: "truncated away", seen: []Record{rec(0, 0, 0), rec(0, 1, 1)}, final: []Record{rec(0, 0, 0)}, want: 1},
		{name: "replaced by other bytes", seen: []Record{rec(0, 1, 1)}, final: []Record{changed}, want: 1},
		{name: "other partition", seen: []Record{rec(1, 0, 0)}, final: []Record{rec(0, 0, 0)}, want: 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := Vanished(c.seen, c.final); len(got) != c.want {
				t.Errorf("Vanished = %v, want %d records", got, c.want)
			}
		})
	}
}

func TestValueRoundTrip(t *testing.T) {
	cases := []struct {
		id   ID
		size int
	}{
		{ID{"p0", 0, 0}, 0},
		{ID{"producer-7", 5, 123456789}, 100},
		{ID{"x", 2147483647, 1 << 62}, 10},
	}
	for _, c := range cases {
		v := EncodeValue(c.id, c.size)
		if len(v) < c.size {
			t.Errorf("%v: %d bytes, want at least %d", c.id, len(v), c.size)
		}
		got, err := ParseValue(v)
		if err != nil || got != c.id {
			t.Errorf("ParseValue(%q) = %v, %v; want %v", v, got, err, c.id)
		}
	}
	for _, bad := range []string{"", "abc", "p/1;", "/1/2;", "p/x/2;", "p/1/y;", "p/-1/2;", "p/1/-2;", "p/1/2/3;", "p/99999999999/1;"} {
		if id, err := ParseValue([]byte(bad)); err == nil {
			t.Errorf("ParseValue(%q) = %v, want an error", bad, id)
		}
	}
}

// Whatever bytes a broker hands back, ParseValue answers an id or an error,
// and an id it answers renders back to the bytes it came from.
func FuzzParseValue(f *testing.F) {
	f.Add([]byte("p/1/2;..."))
	f.Add([]byte(""))
	f.Add([]byte(";"))
	f.Add([]byte("p/1/2"))
	f.Fuzz(func(t *testing.T, v []byte) {
		id, err := ParseValue(v)
		if err != nil {
			return
		}
		enc := EncodeValue(id, 0)
		if got, err := ParseValue(enc); err != nil || got != id {
			t.Fatalf("%q -> %v -> %q -> %v, %v", v, id, enc, got, err)
		}
	})
}
