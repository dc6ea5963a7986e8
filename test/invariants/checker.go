package invariants

import (
	"bytes"
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"
)

// Record is one record as a partition holds it.
type Record struct {
	Partition int32
	Offset    int64
	Key       []byte
	Value     []byte
}

// Ack is a record the cluster acknowledged, with the offset it answered and
// when the acknowledgement arrived.
type Ack struct {
	Record
	At time.Time
}

// maxExamples bounds the examples a Report keeps per kind of problem.
const maxExamples = 5

// Report is what Check found. The counts under "violations" break
// ARCHITECTURE.md's invariants 1 and 2; the rest describe the run.
type Report struct {
	Acknowledged int // acknowledgements given to Check
	Read         int // records given to Check

	// Violations.
	Lost        int // acknowledged, but not read at its offset with the same key and value
	Duplicated  int // extra copies: a value read at more than one offset
	Conflicting int // two acknowledgements naming one partition and offset
	OutOfOrder  int // read after a record with a higher sequence of the same producer and partition
	Misplaced   int // read in a partition other than the one its value names
	Gaps        int // offsets missing between the first and last record read of a partition

	// Unacknowledged counts records read that no acknowledgement names
	// (their produce failed or was in flight): Kafka allows them.
	Unacknowledged int

	// LongestStall is the longest time between two consecutive
	// acknowledgements, and StallStart the acknowledgement it began after.
	LongestStall time.Duration
	StallStart   time.Time

	// Examples holds a few instances of each violation, for failure messages.
	Examples []string
	// Suspects are the positions of those examples, in the same bounds,
	// for a caller that wants to look at the batches on disk.
	Suspects []Position
}

// Position names one offset of one partition.
type Position struct {
	Partition int32
	Offset    int64
}

// OK reports whether no violation was found.
func (r Report) OK() bool {
	return r.Lost == 0 && r.Duplicated == 0 && r.Conflicting == 0 && r.OutOfOrder == 0 && r.Misplaced == 0 && r.Gaps == 0
}

// String is a one-line summary, the examples after it.
func (r Report) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "acknowledged %d, read %d, lost %d, duplicated %d, conflicting %d, out-of-order %d, misplaced %d, gaps %d, unacknowledged %d, longest produce stall %v",
		r.Acknowledged, r.Read, r.Lost, r.Duplicated, r.Conflicting, r.OutOfOrder, r.Misplaced, r.Gaps, r.Unacknowledged, r.LongestStall.Round(time.Millisecond))
	for _, e := range r.Examples {
		b.WriteString("\n  ")
		b.WriteString(e)
	}
	return b.String()
}

type stream struct {
	producer  string
	partition int32
}

// Check compares the acknowledged writes with one complete read of the
// partitions (every record from the log start to the end offsets, in any
// order). It is pure: the same inputs give the same report.
func Check(acked []Ack, read []Record) Report {
	r := Report{Acknowledged: len(acked), Read: len(read)}
	examples := map[string]int{}
	example := func(at Position, kind, format string, args ...any) {
		if examples[kind] < maxExamples {
			examples[kind]++
			r.Examples = append(r.Examples, kind+": "+fmt.Sprintf(format, args...))
			r.Suspects = append(r.Suspects, at)
		}
	}

	// The read, by position. A reader that hands the same position twice
	// (a consumer that re-fetched) counts once if the bytes agree.
	byPos := make(map[Position]Record, len(read))
	for _, rec := range read {
		p := Position{rec.Partition, rec.Offset}
		if prev, ok := byPos[p]; ok {
			if !sameRecord(prev, rec) {
				r.Conflicting++
				example(p, "conflicting", "partition %d offset %d read as %q and as %q", p.Partition, p.Offset, prev.Value, rec.Value)
			}
			continue
		}
		byPos[p] = rec
	}

	// Acknowledgements: each names a position; two that name one position
	// with different records mean the cluster gave one offset twice.
	ackAt := make(map[Position]Record, len(acked))
	for _, a := range acked {
		p := Position{a.Partition, a.Offset}
		if prev, ok := ackAt[p]; ok {
			if !sameRecord(prev, a.Record) {
				r.Conflicting++
				example(p, "conflicting", "partition %d offset %d acknowledged for %q and for %q", p.Partition, p.Offset, prev.Value, a.Value)
			}
			continue
		}
		ackAt[p] = a.Record
		got, ok := byPos[p]
		switch {
		case !ok:
			r.Lost++
			example(p, "lost", "%q acknowledged at partition %d offset %d, nothing read there", a.Value, p.Partition, p.Offset)
		case !sameRecord(got, a.Record):
			r.Lost++
			example(p, "lost", "%q acknowledged at partition %d offset %d, read %q there", a.Value, p.Partition, p.Offset, got.Value)
		}
	}

	positions := make([]Position, 0, len(byPos))
	for p := range byPos {
		positions = append(positions, p)
	}
	slices.SortFunc(positions, func(a, b Position) int {
		return cmp.Or(cmp.Compare(a.Partition, b.Partition), cmp.Compare(a.Offset, b.Offset))
	})

	seenValue := make(map[string]Position, len(positions))
	maxSeq := map[stream]int64{}
	for i, p := range positions {
		rec := byPos[p]
		if a, ok := ackAt[p]; !ok || !sameRecord(a, rec) {
			r.Unacknowledged++
		}
		if i > 0 && positions[i-1].Partition == p.Partition && positions[i-1].Offset+1 != p.Offset {
			missing := int(p.Offset - positions[i-1].Offset - 1)
			r.Gaps += missing
			example(p, "gap", "partition %d: offsets %d..%d missing", p.Partition, positions[i-1].Offset+1, p.Offset-1)
		}
		if first, dup := seenValue[string(rec.Value)]; dup {
			r.Duplicated++
			if examples["duplicated"] < maxExamples {
				r.Suspects = append(r.Suspects, first)
			}
			example(p, "duplicated", "%q at partition %d offsets %d and %d", rec.Value, p.Partition, first.Offset, p.Offset)
			continue
		}
		seenValue[string(rec.Value)] = p
		id, err := ParseValue(rec.Value)
		if err != nil {
			continue
		}
		if id.Partition != p.Partition {
			r.Misplaced++
			example(p, "misplaced", "%q read in partition %d", rec.Value, p.Partition)
		}
		s := stream{id.Producer, p.Partition}
		if last, ok := maxSeq[s]; ok && id.Seq < last {
			r.OutOfOrder++
			example(p, "out-of-order", "%q at partition %d offset %d after sequence %d", rec.Value, p.Partition, p.Offset, last)
			continue
		}
		maxSeq[s] = id.Seq
	}

	r.LongestStall, r.StallStart = LongestStall(acked, time.Time{}, time.Time{})
	return r
}

func sameRecord(a, b Record) bool {
	return a.Partition == b.Partition && a.Offset == b.Offset && bytes.Equal(a.Key, b.Key) && bytes.Equal(a.Value, b.Value)
}

// LongestStall is the longest time without an acknowledgement, and when it
// began. Acknowledgements outside [from, to] are ignored; a zero from or to
// leaves that side open, otherwise the window's edges count as
// acknowledgements, so a stall that runs into the edge of the window counts.
func LongestStall(acked []Ack, from, to time.Time) (time.Duration, time.Time) {
	times := make([]time.Time, 0, len(acked)+2)
	if !from.IsZero() {
		times = append(times, from)
	}
	for _, a := range acked {
		if (from.IsZero() || !a.At.Before(from)) && (to.IsZero() || !a.At.After(to)) {
			times = append(times, a.At)
		}
	}
	if !to.IsZero() {
		times = append(times, to)
	}
	slices.SortFunc(times, func(a, b time.Time) int { return a.Compare(b) })
	var longest time.Duration
	var start time.Time
	for i := 1; i < len(times); i++ {
		if d := times[i].Sub(times[i-1]); d > longest {
			longest, start = d, times[i-1]
		}
	}
	return longest, start
}

// Vanished returns the records a live reader saw that a later complete read
// does not hold at the same position with the same bytes: reads of data
// that was later truncated (Jepsen's "unseen" and aborted reads). A reader
// must never see past the high watermark, so this must be empty.
func Vanished(seen, final []Record) []Record {
	byPos := make(map[Position]Record, len(final))
	for _, rec := range final {
		byPos[Position{rec.Partition, rec.Offset}] = rec
	}
	var gone []Record
	for _, rec := range seen {
		got, ok := byPos[Position{rec.Partition, rec.Offset}]
		if !ok || !sameRecord(got, rec) {
			gone = append(gone, rec)
		}
	}
	return gone
}
