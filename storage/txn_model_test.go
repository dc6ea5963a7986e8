package storage

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"testing"
	"time"

	"github.com/raftka/raftka/storage/recordbatch"
	"pgregory.net/rapid"
)

// txnModelBatch is one batch of the transaction model: plain, a
// transactional data batch, or a marker.
type txnModelBatch struct {
	base, last int64
	pid        int64 // -1 for plain
	seq        int32 // first sequence of a data batch from a producer
	marker     bool
	commit     bool
	values     []string
}

// txnModel is the truth a transactional log is checked against: every
// batch ever appended and not truncated (also those below the log start),
// the log start offset and the HW.
type txnModel struct {
	batches []txnModelBatch
	start   int64
	hw      int64
}

func (m *txnModel) leo() int64 {
	if len(m.batches) == 0 {
		return m.start
	}
	return m.batches[len(m.batches)-1].last + 1
}

// fates derives from the batches each transactional data batch's fate
// (by base offset: 'c' committed, 'a' aborted, 'o' open), each producer's
// open transaction (first offset) and the ended transactions with their
// markers.
func (m *txnModel) fates() (fate map[int64]byte, open map[int64]int64, ended []CompletedTxn) {
	fate, open = map[int64]byte{}, map[int64]int64{}
	pending := map[int64][]int64{}
	for _, b := range m.batches {
		switch {
		case b.pid < 0:
		case !b.marker:
			if _, ok := open[b.pid]; !ok {
				open[b.pid] = b.base
			}
			pending[b.pid] = append(pending[b.pid], b.base)
			fate[b.base] = 'o'
		default:
			f := byte('a')
			if b.commit {
				f = 'c'
			}
			for _, base := range pending[b.pid] {
				fate[base] = f
			}
			if first, ok := open[b.pid]; ok {
				ended = append(ended, CompletedTxn{ProducerID: b.pid, FirstOffset: first, LastOffset: b.base, Aborted: !b.commit})
			}
			delete(pending, b.pid)
			delete(open, b.pid)
		}
	}
	return fate, open, ended
}

// lso is the model's last stable offset: the oldest open transaction or
// ended one whose marker the HW has not passed, bounded by the HW, at
// least the log start.
func (m *txnModel) lso() int64 {
	_, open, ended := m.fates()
	lso := m.hw
	for _, first := range open {
		lso = min(lso, first)
	}
	for _, c := range ended {
		if c.LastOffset >= m.hw {
			lso = min(lso, c.FirstOffset)
		}
	}
	return max(lso, m.start)
}

// committedView is what a read_committed consumer must see from the log
// start: plain and committed records below the LSO, in offset order.
func (m *txnModel) committedView() []string {
	fate, _, _ := m.fates()
	lso := m.lso()
	var out []string
	for _, b := range m.batches {
		if b.marker || b.pid >= 0 && fate[b.base] != 'c' {
			continue
		}
		for i, v := range b.values {
			if off := b.base + int64(i); off >= m.start && off < lso {
				out = append(out, v)
			}
		}
	}
	return out
}

// nextSeq is the sequence producer pid must send next, from its batches
// still in the log (0 after markers alone); known is false when the log
// has none, and any sequence goes.
func (m *txnModel) nextSeq(pid int64) (seq int32, known bool) {
	for _, b := range m.batches {
		if b.pid == pid {
			known = true
			if !b.marker {
				seq = b.seq + int32(len(b.values))
			}
		}
	}
	return seq, known
}

// consumeCommitted reads l from its log start to its LSO as a
// read_committed consumer does (Kafka's Fetcher): ReadCommitted, then drop
// a producer's transactional records from an aborted transaction's first
// offset to its ABORT marker. It returns the record values delivered.
func consumeCommitted(rt fataler, l *Log, maxBytes int) []string {
	var out []string
	for _, r := range consumeCommittedRecords(rt, l, maxBytes) {
		out = append(out, r.value)
	}
	return out
}

// consumeCommittedRecords is consumeCommitted giving the records.
func consumeCommittedRecords(rt fataler, l *Log, maxBytes int) []rec {
	var out []rec
	off := l.LogStartOffset()
	for i := 0; i < 100000; i++ {
		r, err := l.ReadCommitted(off, maxBytes)
		if err != nil {
			rt.Fatalf("ReadCommitted(%d): %v", off, err)
		}
		if r.Region.Len == 0 {
			return out
		}
		data, err := r.Region.Bytes()
		if err != nil {
			rt.Fatal(err)
		}
		aborted := slices.Clone(r.Aborted)
		sort.Slice(aborted, func(i, j int) bool { return aborted[i].FirstOffset < aborted[j].FirstOffset })
		abortedPIDs := map[int64]bool{}
		for len(data) > 0 {
			n, _ := BatchSize(data)
			b := Batch(data[:n])
			data = data[n:]
			if b.LastOffset() >= r.LastStableOffset {
				rt.Fatalf("read_committed got a batch at %d..%d, LSO %d", b.BaseOffset(), b.LastOffset(), r.LastStableOffset)
			}
			for len(aborted) > 0 && aborted[0].FirstOffset <= b.LastOffset() {
				abortedPIDs[aborted[0].ProducerID] = true
				aborted = aborted[1:]
			}
			off = b.NextOffset()
			if b.Control() {
				if m, ok, _ := b.TxnMarker(); ok && !m.Commit() {
					delete(abortedPIDs, m.ProducerID)
				}
				continue
			}
			if b.Transactional() && abortedPIDs[b.ProducerID()] {
				continue
			}
			err := b.Records(func(r Record) bool {
				if r.Offset >= l.LogStartOffset() {
					out = append(out, rec{offset: r.Offset, key: string(r.Key), value: string(r.Value), tombstone: r.Value == nil})
				}
				return true
			})
			if err != nil {
				rt.Fatal(err)
			}
		}
	}
	rt.Fatal("consumeCommitted did not finish")
	return nil
}

// fataler is what consumeCommitted needs of a *testing.T or *rapid.T.
type fataler interface {
	Fatal(args ...any)
	Fatalf(format string, args ...any)
}

// TestTransactionModel: random interleavings of plain and transactional
// batches from several producers, commits and aborts (also of
// transactions that wrote nothing), HW moves, truncations, DeleteRecords
// and retention, rolls, and clean or unclean reopens. After every step the
// LSO, each producer's open transaction and a read_committed read (records
// up to the LSO minus the aborted ranges the .txnindex files give) match
// the model exactly.
func TestTransactionModel(t *testing.T) {
	noFsync(t)
	rapid.Check(t, func(rt *rapid.T) {
		clk := newClock()
		cfg := DefaultConfig()
		cfg.SegmentBytes = int64(rapid.IntRange(300, 3000).Draw(rt, "segmentBytes"))
		cfg.IndexIntervalBytes = 256
		cfg.FileDeleteDelayMs = 0
		dir := partDir(t)
		l, _, err := OpenLog(dir, cfg, LogOptions{Now: clk.now})
		if err != nil {
			rt.Fatal(err)
		}
		defer func() { l.Close() }()
		m := &txnModel{}
		seqs := map[int64]int32{}
		tag := 0
		values := func(n int) []recordbatch.Record {
			rs := make([]recordbatch.Record, n)
			for i := range rs {
				tag++
				rs[i] = recordbatch.Record{OffsetDelta: int32(i), Timestamp: clk.now().UnixMilli(), Value: fmt.Appendf(nil, "r%d", tag)}
			}
			return rs
		}
		add := func(res AppendResult, pid int64, rs []recordbatch.Record) {
			b := txnModelBatch{base: res.BaseOffset, last: res.LastOffset, pid: pid}
			for _, r := range rs {
				b.values = append(b.values, string(r.Value))
			}
			m.batches = append(m.batches, b)
		}
		steps := rapid.IntRange(1, 50).Draw(rt, "steps")
		for step := 0; step < steps; step++ {
			clk.advance(time.Millisecond)
			op := rapid.SampledFrom([]string{"plain", "txn", "txn", "txn", "end", "end", "hw", "truncate", "delete", "roll", "reopen"}).Draw(rt, "op")
			switch op {
			case "plain":
				rs := values(rapid.IntRange(1, 4).Draw(rt, "n"))
				res, err := l.Append(recordbatch.Build(clk.now().UnixMilli(), rs...), AppendOptions{LeaderEpoch: 0})
				if err != nil {
					rt.Fatal(err)
				}
				add(res, -1, rs)
			case "txn":
				pid := int64(rapid.IntRange(1, 4).Draw(rt, "pid"))
				rs := values(rapid.IntRange(1, 4).Draw(rt, "n"))
				seq, known := m.nextSeq(pid)
				if !known {
					seq = seqs[pid]
				}
				b := recordbatch.Batch{Transactional: true, BaseTimestamp: clk.now().UnixMilli(), ProducerID: pid, BaseSequence: seq, Records: rs}.Encode()
				res, err := l.Append(b, AppendOptions{LeaderEpoch: 0})
				if err != nil {
					rt.Fatalf("transactional append from %d at sequence %d: %v", pid, seq, err)
				}
				seqs[pid] = seq + int32(len(rs))
				add(res, pid, rs)
				m.batches[len(m.batches)-1].seq = seq
			case "end":
				pid := int64(rapid.IntRange(1, 4).Draw(rt, "pid"))
				commit := rapid.Bool().Draw(rt, "commit")
				res, err := l.AppendMarker(marker(pid, 0, 0, commit), AppendOptions{LeaderEpoch: 0})
				if err != nil {
					rt.Fatal(err)
				}
				m.batches = append(m.batches, txnModelBatch{base: res.BaseOffset, last: res.LastOffset, pid: pid, marker: true, commit: commit})
			case "hw":
				// The HW sits at batch ends, as followers' LEOs do.
				ends := []int64{m.hw}
				for _, b := range m.batches {
					if b.last+1 > m.hw {
						ends = append(ends, b.last+1)
					}
				}
				m.hw = rapid.SampledFrom(ends).Draw(rt, "hw")
				l.SetHighWatermark(m.hw)
			case "truncate":
				// A follower truncates above its HW.
				to := rapid.Int64Range(m.hw, m.leo()).Draw(rt, "to")
				if err := l.Truncate(to); err != nil {
					rt.Fatal(err)
				}
				for len(m.batches) > 0 && m.batches[len(m.batches)-1].last >= to {
					m.batches = m.batches[:len(m.batches)-1]
				}
				if m.leo() != l.LogEndOffset() {
					rt.Fatalf("truncate to %d: LEO %d, model %d", to, l.LogEndOffset(), m.leo())
				}
			case "delete":
				to := rapid.Int64Range(m.start, m.hw).Draw(rt, "deleteTo")
				if _, err := l.DeleteRecords(to); err != nil {
					rt.Fatal(err)
				}
				m.start = max(m.start, to)
				if _, err := l.ApplyRetention(clk.now()); err != nil {
					rt.Fatal(err)
				}
				if l.LogStartOffset() != m.start {
					rt.Fatalf("log start %d, model %d", l.LogStartOffset(), m.start)
				}
			case "roll":
				if err := l.Roll(); err != nil {
					rt.Fatal(err)
				}
			case "reopen":
				clean := rapid.Bool().Draw(rt, "clean")
				rp := l.LogEndOffset()
				if !clean {
					// Anything from the log start on may be unflushed.
					rp = rapid.Int64Range(m.start, rp).Draw(rt, "recoveryPoint")
				}
				if err := l.Close(); err != nil {
					rt.Fatal(err)
				}
				l, _, err = OpenLog(dir, cfg, LogOptions{Now: clk.now, CleanShutdown: clean, RecoveryPoint: rp, LogStartOffset: m.start, HighWatermark: m.hw})
				if err != nil {
					rt.Fatal(err)
				}
			}
			checkTxnModel(rt, op, l, m)
		}
	})
}

func checkTxnModel(rt fataler, op string, l *Log, m *txnModel) {
	if l.HighWatermark() != m.hw {
		rt.Fatalf("after %s: HW %d, model %d", op, l.HighWatermark(), m.hw)
	}
	if got, want := l.LastStableOffset(), m.lso(); got != want {
		rt.Fatalf("after %s: LSO %d, model %d", op, got, want)
	}
	_, open, _ := m.fates()
	for _, p := range l.Producers() {
		want, ok := open[p.ProducerID]
		if !ok {
			want = -1
		}
		if p.CurrentTxnFirstOffset != want {
			rt.Fatalf("after %s: producer %d open transaction at %d, model %d", op, p.ProducerID, p.CurrentTxnFirstOffset, want)
		}
		delete(open, p.ProducerID)
	}
	if len(open) > 0 {
		rt.Fatalf("after %s: the log forgot open transactions %v", op, open)
	}
	want := m.committedView()
	for _, maxBytes := range []int{1, math.MaxInt32} {
		if got := consumeCommitted(rt, l, maxBytes); !slices.Equal(got, want) {
			rt.Fatalf("after %s: read_committed (max %d bytes) got\n%v\nwant\n%v", op, maxBytes, got, want)
		}
	}
	// The aborted list matches the model's aborted transactions that
	// overlap the readable log.
	_, _, ended := m.fates()
	var wantAborted []AbortedTxn
	for _, c := range ended {
		if c.Aborted && c.LastOffset >= m.start {
			wantAborted = append(wantAborted, AbortedTxn{ProducerID: c.ProducerID, FirstOffset: c.FirstOffset, LastOffset: c.LastOffset})
		}
	}
	got, err := l.AbortedTransactions(m.start, math.MaxInt64)
	if err != nil {
		rt.Fatal(err)
	}
	for i := range got {
		got[i].LastStableOffset = 0 // checked by the consumer's read above
	}
	if len(got) != len(wantAborted) || len(got) > 0 && !slices.Equal(got, wantAborted) {
		rt.Fatalf("after %s: aborted transactions %+v, model %+v", op, got, wantAborted)
	}
}
