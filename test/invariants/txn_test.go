package invariants

import (
	"strings"
	"testing"
)

// trec is a read record of value v at partition/offset.
func trec(partition int32, offset int64, v string) Record {
	return Record{Partition: partition, Offset: offset, Value: []byte(v)}
}

// Hand-made histories: a clean one passes, and each broken one is caught
// by its own count (and only by what it breaks).
func TestCheckTransactions(t *testing.T) {
	history := []Txn{
		{Producer: "a", Seq: 0, Values: []string{"a0-0", "a0-1"}, Status: TxnCommitted},
		{Producer: "a", Seq: 1, Values: []string{"a1-0", "a1-1"}, Status: TxnAborted},
		{Producer: "a", Seq: 2, Values: []string{"a2-0", "a2-1"}, Status: TxnCommitted},
		{Producer: "b", Seq: 0, Values: []string{"b0-0", "b0-1"}, Status: TxnUnsure},
		{Producer: "b", Seq: 1, Values: []string{"b1-0"}, Status: TxnUnsure},
	}
	// a's records in partition 0 and 1, b's in 1; b#1 (unsure) not read.
	clean := []Record{
		trec(0, 0, "a0-0"), trec(1, 0, "a0-1"), trec(1, 1, "b0-0"), trec(1, 2, "b0-1"),
		trec(0, 5, "a2-0"), trec(0, 6, "a2-1"),
	}
	cases := []struct {
		name  string
		read  []Record
		count func(TxnReport) int
		want  int
	}{
		{"clean", clean, func(r TxnReport) int { return 0 }, 0},
		{"aborted read", append(clone(clean), trec(0, 3, "a1-0")), func(r TxnReport) int { return r.AbortedRead }, 1},
		{"lost committed", without(clean, "a2-0", "a2-1"), func(r TxnReport) int { return r.Lost }, 2},
		{"torn committed", without(clean, "a2-1"), func(r TxnReport) int { return r.Torn }, 1},
		{"torn unsure", without(clean, "b0-1"), func(r TxnReport) int { return r.Torn }, 1},
		{"duplicate", append(clone(clean), trec(0, 9, "a2-1")), func(r TxnReport) int { return r.Duplicated }, 1},
		{"out of order in a transaction", swap(clean, "a2-0", "a2-1"), func(r TxnReport) int { return r.OutOfOrder }, 1},
		{"out of order across transactions", swap(clean, "a0-0", "a2-0"), func(r TxnReport) int { return r.OutOfOrder }, 1},
		{"unknown value", append(clone(clean), trec(2, 0, "zz")), func(r TxnReport) int { return r.Unknown }, 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rep := CheckTransactions(history, c.read)
			if got := c.count(rep); got != c.want {
				t.Fatalf("count %d, want %d: %v %q", got, c.want, rep, rep.Examples)
			}
			if ok := c.want == 0; rep.Ok() != ok {
				t.Fatalf("Ok() %v, want %v: %v %q", rep.Ok(), ok, rep, rep.Examples)
			}
			if !rep.Ok() && len(rep.Examples) == 0 {
				t.Fatal("a violation without an example")
			}
			if rep.Committed != 2 || rep.Aborted != 1 || rep.Unsure != 2 || rep.Read != len(c.read) {
				t.Fatalf("counts %v", rep)
			}
		})
	}
	// Records of different partitions are not ordered against each other.
	cross := []Record{trec(1, 0, "a2-0"), trec(0, 0, "a0-0"), trec(0, 1, "a0-1"), trec(1, 1, "a2-1")}
	if rep := CheckTransactions(history[:3], cross); !rep.Ok() {
		t.Fatalf("cross-partition order flagged: %v %q", rep, rep.Examples)
	}
	if s := CheckTransactions(history, clean).String(); !strings.Contains(s, "2 committed, 1 aborted, 2 unsure") {
		t.Fatalf("String() %q", s)
	}
}

func clone(rs []Record) []Record { return append([]Record(nil), rs...) }

func without(rs []Record, vals ...string) []Record {
	var out []Record
	for _, r := range rs {
		keep := true
		for _, v := range vals {
			if string(r.Value) == v {
				keep = false
			}
		}
		if keep {
			out = append(out, r)
		}
	}
	return out
}

// swap exchanges the offsets (and partitions) at which two values were read.
func swap(rs []Record, a, b string) []Record {
	out := clone(rs)
	var ia, ib int
	for i, r := range out {
		switch string(r.Value) {
		case a:
			ia = i
		case b:
			ib = i
		}
	}
	out[ia].Value, out[ib].Value = out[ib].Value, out[ia].Value
	return out
}
