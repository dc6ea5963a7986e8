package invariants

import (
	"cmp"
	"fmt"
	"slices"
)

// TxnStatus is what a transactional producer learned of one transaction.
type TxnStatus int

const (
	// TxnCommitted: EndTransaction(commit) succeeded.
	TxnCommitted TxnStatus = iota
	// TxnAborted: EndTransaction(abort) succeeded.
	TxnAborted
	// TxnUnsure: a produce or the EndTransaction failed; the transaction
	// may have committed or aborted, but never in part.
	TxnUnsure
)

func (s TxnStatus) String() string {
	switch s {
	case TxnCommitted:
		return "committed"
	case TxnAborted:
		return "aborted"
	case TxnUnsure:
		return "unsure"
	}
	return fmt.Sprintf("TxnStatus(%d)", int(s))
}

// Txn is one transaction a producer ran: its records' values in the order
// it produced them, the producer (its transactional id) and the
// transaction's place among that producer's transactions (Seq, increasing).
// Every value is unique over the history.
type Txn struct {
	Producer string
	Seq      int
	Values   []string
	Status   TxnStatus
}

// TxnReport is what CheckTransactions found. The violation counts break
// ARCHITECTURE.md's invariant 6 (transactions are atomic) as a
// read_committed consumer sees it.
type TxnReport struct {
	Committed, Aborted, Unsure int // transactions of each status
	Read                       int // records given to CheckTransactions

	// Violations.
	Lost        int // records of committed transactions never read
	AbortedRead int // records of aborted transactions read
	Torn        int // transactions with some but not all of their records read
	Duplicated  int // extra copies: values read more than once
	OutOfOrder  int // records read in a partition after a later record of the same producer
	Unknown     int // values read that no transaction of the history produced

	// Examples holds a few instances of each violation.
	Examples []string
}

// Ok reports whether the history broke no transaction invariant.
func (r TxnReport) Ok() bool {
	return r.Lost == 0 && r.AbortedRead == 0 && r.Torn == 0 && r.Duplicated == 0 && r.OutOfOrder == 0 && r.Unknown == 0
}

func (r TxnReport) String() string {
	return fmt.Sprintf("transactions: %d committed, %d aborted, %d unsure; records read %d; lost %d, aborted read %d, torn %d, duplicates %d, out of order %d, unknown %d",
		r.Committed, r.Aborted, r.Unsure, r.Read, r.Lost, r.AbortedRead, r.Torn, r.Duplicated, r.OutOfOrder, r.Unknown)
}

func (r *TxnReport) example(format string, args ...any) {
	if len(r.Examples) < 4*maxExamples {
		r.Examples = append(r.Examples, fmt.Sprintf(format, args...))
	}
}

// CheckTransactions checks what a read_committed consumer read (every
// partition of the topic from its start, after the producers stopped)
// against the transactions the producers ran:
//
//   - no aborted read: no record of an aborted transaction is read;
//   - no lost committed record: every record of a committed transaction
//     is read;
//   - no torn transaction: of any transaction (unsure ones included),
//     all records are read or none;
//   - no duplicates: no value is read twice (exactly once);
//   - read_committed order: within a partition, one producer's records are
//     read in the order it produced them (its transactions in Seq order,
//     each transaction's records in its order).
//
// Offsets order the reads of a partition; read may be in any order.
func CheckTransactions(txns []Txn, read []Record) TxnReport {
	var rep TxnReport
	rep.Read = len(read)
	type place struct {
		txn int // index in txns
		idx int // index in its Values
	}
	where := make(map[string]place)
	for i, t := range txns {
		switch t.Status {
		case TxnCommitted:
			rep.Committed++
		case TxnAborted:
			rep.Aborted++
		default:
			rep.Unsure++
		}
		for j, v := range t.Values {
			where[v] = place{i, j}
		}
	}
	seen := make(map[string]int, len(read))
	for _, r := range read {
		v := string(r.Value)
		if seen[v]++; seen[v] == 2 {
			rep.example("%q read more than once (again at %d/%d)", v, r.Partition, r.Offset)
		}
		if seen[v] > 1 {
			rep.Duplicated++
		}
		if _, ok := where[v]; !ok && seen[v] == 1 {
			rep.Unknown++
			rep.example("%q at %d/%d was produced by no transaction", v, r.Partition, r.Offset)
		}
	}
	for _, t := range txns {
		n := 0
		for _, v := range t.Values {
			if seen[v] > 0 {
				n++
			}
		}
		switch {
		case t.Status == TxnAborted && n > 0:
			rep.AbortedRead += n
			rep.example("aborted transaction %s#%d: %d of its %d records read", t.Producer, t.Seq, n, len(t.Values))
		case n != 0 && n != len(t.Values):
			rep.Torn++
			if t.Status == TxnCommitted {
				rep.Lost += len(t.Values) - n
			}
			rep.example("%s transaction %s#%d torn: %d of %d records read", t.Status, t.Producer, t.Seq, n, len(t.Values))
		case t.Status == TxnCommitted && n == 0 && len(t.Values) > 0:
			rep.Lost += len(t.Values)
			rep.example("committed transaction %s#%d: none of its %d records read", t.Producer, t.Seq, len(t.Values))
		}
	}
	// Order: per partition by offset, each producer's (Seq, index) must
	// increase.
	sorted := slices.Clone(read)
	slices.SortStableFunc(sorted, func(a, b Record) int {
		return cmp.Or(cmp.Compare(a.Partition, b.Partition), cmp.Compare(a.Offset, b.Offset))
	})
	type key struct {
		partition int32
		producer  string
	}
	type pos struct{ seq, idx int }
	last := map[key]pos{}
	for _, r := range sorted {
		p, ok := where[string(r.Value)]
		if !ok {
			continue
		}
		t := txns[p.txn]
		k := key{r.Partition, t.Producer}
		cur := pos{t.Seq, p.idx}
		if prev, ok := last[k]; ok && (cur.seq < prev.seq || cur.seq == prev.seq && cur.idx <= prev.idx) {
			if cur != prev { // a duplicate at a later offset is counted as one
				rep.OutOfOrder++
				rep.example("%q (%s#%d record %d) at %d/%d read after %s#%d record %d",
					r.Value, t.Producer, cur.seq, cur.idx, r.Partition, r.Offset, t.Producer, prev.seq, prev.idx)
			}
			continue
		}
		last[k] = cur
	}
	return rep
}
