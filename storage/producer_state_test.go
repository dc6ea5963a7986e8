package storage

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/raftka/raftka/storage/recordbatch"
)

// idemBatch builds an uncompressed batch of n records from an idempotent
// producer, at base offset 0 as a client sends it.
func idemBatch(pid int64, epoch int16, seq int32, n int, ts int64) []byte {
	return idemBatchAt(0, pid, epoch, seq, n, ts)
}

func idemBatchAt(base, pid int64, epoch int16, seq int32, n int, ts int64) []byte {
	rs := make([]recordbatch.Record, n)
	for i := range rs {
		rs[i] = recordbatch.Record{OffsetDelta: int32(i), Timestamp: ts, Value: fmt.Appendf(nil, "p%d-e%d-s%d", pid, epoch, int64(seq)+int64(i))}
	}
	return recordbatch.Batch{BaseOffset: base, BaseTimestamp: ts, ProducerID: pid, ProducerEpoch: epoch, BaseSequence: seq, Records: rs}.Encode()
}

func TestBatchLastSequence(t *testing.T) {
	tests := []struct {
		base, delta, want int32
	}{
		{-1, 0, -1},
		{-1, 4, -1},
		{0, 0, 0},
		{0, 4, 4},
		{10, 9, 19},
		{math.MaxInt32, 0, math.MaxInt32},
		{math.MaxInt32 - 1, 1, math.MaxInt32},
		{math.MaxInt32, 1, 0},
		{math.MaxInt32 - 1, 4, 2},
	}
	for _, tt := range tests {
		if got := lastSequence(tt.base, tt.delta); got != tt.want {
			t.Errorf("lastSequence(%d, %d) = %d, want %d", tt.base, tt.delta, got, tt.want)
		}
	}
	b := Batch(idemBatch(1, 0, math.MaxInt32-1, 3, 1))
	if got := b.LastSequence(); got != 0 {
		t.Errorf("batch from MaxInt32-1 with 3 records: last sequence %d, want 0", got)
	}
}

// TestProducerSequenceRules drives the pure producer table: a history of
// batches is applied as they sit in the log, then one more batch is
// checked as a leader checks a client's.
func TestProducerSequenceRules(t *testing.T) {
	type sent struct {
		epoch int16
		seq   int32
		n     int
	}
	// seven batches of two records: sequences 0-1, 2-3, ..., 12-13 at
	// offsets 100-101, 102-103, ..., 112-113 (the log holds others too).
	var seven []sent
	for i := range 7 {
		seven = append(seven, sent{0, int32(2 * i), 2})
	}
	type want struct {
		dupOffset int64 // first offset of the duplicate, or -1
		err       error
	}
	ok := want{dupOffset: -1}
	dup := func(first int64) want { return want{dupOffset: first} }
	fail := func(err error) want { return want{dupOffset: -1, err: err} }
	tests := []struct {
		name    string
		history []sent
		probe   sent
		want    want
	}{
		{"unknown producer at sequence 0", nil, sent{0, 0, 1}, ok},
		{"unknown producer at any sequence (KIP-360)", nil, sent{3, 77, 5}, ok},
		{"next in sequence", seven, sent{0, 14, 3}, ok},
		{"gap", seven, sent{0, 15, 1}, fail(ErrOutOfOrderSequence)},
		{"far ahead", seven, sent{0, 1000, 1}, fail(ErrOutOfOrderSequence)},
		{"behind, not a cached batch", seven, sent{0, 13, 1}, fail(ErrOutOfOrderSequence)},
		{"duplicate of the newest", seven, sent{0, 12, 2}, dup(112)},
		{"duplicate of the 2nd newest", seven, sent{0, 10, 2}, dup(110)},
		{"duplicate of the 3rd newest", seven, sent{0, 8, 2}, dup(108)},
		{"duplicate of the 4th newest", seven, sent{0, 6, 2}, dup(106)},
		{"duplicate of the 5th newest", seven, sent{0, 4, 2}, dup(104)},
		{"6th newest is no longer remembered", seven, sent{0, 2, 2}, fail(ErrOutOfOrderSequence)},
		{"same first sequence, other range", seven, sent{0, 12, 1}, fail(ErrOutOfOrderSequence)},
		{"epoch bump at 0", seven, sent{1, 0, 4}, ok},
		{"epoch bump not at 0", seven, sent{1, 14, 1}, fail(ErrOutOfOrderSequence)},
		{"stale epoch", []sent{{2, 0, 1}}, sent{1, 1, 1}, fail(ErrInvalidProducerEpoch)},
		{"stale epoch retrying its own batch", []sent{{1, 0, 1}, {2, 0, 1}}, sent{1, 0, 1}, fail(ErrInvalidProducerEpoch)},
		{"bumped epoch forgets the old batches", []sent{{0, 0, 1}, {1, 0, 1}}, sent{1, 1, 1}, ok},
		{"old epoch's batch is not a duplicate of the new", []sent{{0, 0, 1}, {0, 1, 1}, {1, 0, 1}}, sent{1, 1, 1}, ok},
		{"wraparound to 0", []sent{{0, math.MaxInt32 - 1, 2}}, sent{0, 0, 1}, ok},
		{"wraparound is not 1", []sent{{0, math.MaxInt32 - 1, 2}}, sent{0, 1, 1}, fail(ErrOutOfOrderSequence)},
		{"batch spanning the wrap", []sent{{0, math.MaxInt32 - 1, 4}}, sent{0, 2, 1}, ok},
		{"batch spanning the wrap, gap", []sent{{0, math.MaxInt32 - 1, 4}}, sent{0, 3, 1}, fail(ErrOutOfOrderSequence)},
		{"duplicate of a batch spanning the wrap", []sent{{0, math.MaxInt32 - 1, 4}}, sent{0, math.MaxInt32 - 1, 4}, dup(100)},
		{"after a control batch the epoch starts over", []sent{{0, 0, 1}, {1, -1, 0}}, sent{1, 0, 1}, ok},
		{"after a control batch only sequence 0", []sent{{0, 0, 1}, {1, -1, 0}}, sent{1, 1, 1}, fail(ErrOutOfOrderSequence)},
	}
	const pid = 42
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ps := producerStates{}
			off := int64(100)
			// Another producer's batches share the table and must not matter.
			ps.apply(Batch(idemBatchAt(0, pid+1, 9, 50, 3, 1)))
			for _, h := range tt.history {
				var b []byte
				if h.n == 0 {
					b = recordbatch.Batch{BaseOffset: off, Control: true, Transactional: true, ProducerID: pid, ProducerEpoch: h.epoch, BaseSequence: -1,
						Records: []recordbatch.Record{{Key: []byte{0, 0, 0, 0}, Value: []byte{0, 0, 0, 0, 0, 0}}}}.Encode()
				} else {
					b = idemBatchAt(off, pid, h.epoch, h.seq, h.n, 1)
				}
				ps.apply(Batch(b))
				off = Batch(b).NextOffset()
			}
			probe := Batch(idemBatch(pid, tt.probe.epoch, tt.probe.seq, tt.probe.n, 1))
			got, isDup, err := ps.check(pid, probe.ProducerEpoch(), probe.BaseSequence(), probe.LastSequence())
			if !errors.Is(err, tt.want.err) || (tt.want.err == nil) != (err == nil) {
				t.Fatalf("err %v, want %v", err, tt.want.err)
			}
			if isDup != (tt.want.dupOffset >= 0) {
				t.Fatalf("duplicate %v (%+v), want first offset %d", isDup, got, tt.want.dupOffset)
			}
			if isDup && (got.FirstOffset != tt.want.dupOffset || got.LastOffset != tt.want.dupOffset+int64(tt.probe.n)-1) {
				t.Fatalf("duplicate of offsets %d..%d, want %d..%d", got.FirstOffset, got.LastOffset, tt.want.dupOffset, tt.want.dupOffset+int64(tt.probe.n)-1)
			}
		})
	}
}

func TestProducerExpiry(t *testing.T) {
	ps := producerStates{}
	ps.apply(Batch(idemBatchAt(0, 1, 0, 0, 1, 1000)))
	ps.apply(Batch(idemBatchAt(1, 2, 0, 0, 1, 5000)))
	txn := recordbatch.Batch{BaseOffset: 2, Transactional: true, BaseTimestamp: 500, ProducerID: 3, ProducerEpoch: 0, BaseSequence: 0,
		Records: []recordbatch.Record{{Timestamp: 500, Value: []byte("t")}}}.Encode()
	ps.apply(Batch(txn))
	if ps[3].txnFirstOffset != 2 {
		t.Fatalf("transactional batch: first offset %d, want 2", ps[3].txnFirstOffset)
	}
	if n := ps.expire(10999, 10000); n != 0 {
		t.Fatalf("expired %d before anyone was idle 10 s", n)
	}
	if n := ps.expire(11000, 10000); n != 1 || ps[1] != nil || ps[2] == nil {
		t.Fatalf("expired %d; producer 1 left: %v, producer 2 kept: %v", n, ps[1] == nil, ps[2] != nil)
	}
	if n := ps.expire(1e9, 10000); n != 1 || ps[3] == nil {
		t.Fatalf("expired %d; a producer with an open transaction must stay", n)
	}
}

func TestProducerSnapshotRoundTrip(t *testing.T) {
	s := ProducerSnapshot{EndOffset: 500, Producers: []ProducerState{
		{ProducerID: 9, Epoch: 3, LastSequence: -1, LastTimestamp: 77, CoordinatorEpoch: -1, CurrentTxnFirstOffset: -1},
		{ProducerID: 2, Epoch: 0, LastSequence: 1, LastTimestamp: 1700000000000, CoordinatorEpoch: 4, CurrentTxnFirstOffset: 450, Batches: []ProducerBatch{
			{FirstSeq: math.MaxInt32 - 1, LastSeq: math.MaxInt32, FirstOffset: 10, LastOffset: 11, Timestamp: 5},
			{FirstSeq: 0, LastSeq: 1, FirstOffset: 499, LastOffset: 499, Timestamp: 1700000000000},
		}},
	}, UnreplicatedTxns: []CompletedTxn{{ProducerID: 9, FirstOffset: 300, LastOffset: 310, Aborted: true}, {ProducerID: 2, FirstOffset: 301, LastOffset: 311}}}
	data := s.Marshal()
	got, err := ParseProducerSnapshot(data)
	if err != nil {
		t.Fatal(err)
	}
	want := s
	want.Version = snapshotVersion
	want.Producers = []ProducerState{s.Producers[1], s.Producers[0]} // sorted by id
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("round trip:\n got %+v\nwant %+v", got, want)
	}
	if !bytes.Equal(got.Marshal(), data) {
		t.Fatal("re-marshal differs")
	}
	// Version 1 (written before transactions were tracked) still reads:
	// the same producers, no unreplicated transactions.
	v1 := s
	v1.Version, v1.UnreplicatedTxns = 1, nil
	old := v1.Marshal()
	if binary.BigEndian.Uint16(old) != 1 || len(old) != len(data)-4-2*snapshotTxnSize {
		t.Fatalf("version 1 file: version %d, %d bytes", binary.BigEndian.Uint16(old), len(old))
	}
	got, err = ParseProducerSnapshot(old)
	want.Version, want.UnreplicatedTxns = 1, nil
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("version 1:\n got %+v, %v\nwant %+v", got, err, want)
	}
	empty := ProducerSnapshot{EndOffset: 0}.Marshal()
	if s, err := ParseProducerSnapshot(empty); err != nil || len(s.Producers) != 0 {
		t.Fatalf("empty snapshot: %+v, %v", s, err)
	}
}

// TestProducerSnapshotCorrupt checks every way a file can be wrong is an
// ErrCorruptFile, never a panic or a wrong state.
func TestProducerSnapshotCorrupt(t *testing.T) {
	valid := func(end int64, ps ...ProducerState) []byte {
		return ProducerSnapshot{EndOffset: end, Producers: ps}.Marshal()
	}
	p := func(id int64, bs ...ProducerBatch) ProducerState {
		return ProducerState{ProducerID: id, CoordinatorEpoch: -1, CurrentTxnFirstOffset: -1, Batches: bs}
	}
	base := valid(100, p(1, ProducerBatch{FirstOffset: 1, LastOffset: 2}))
	flip := func(i int) []byte { b := bytes.Clone(base); b[i] ^= 0x40; return b }
	tests := []struct {
		name string
		data []byte
	}{
		{"empty", nil},
		{"short header", base[:10]},
		{"bad version", flip(1)},
		{"bad crc", flip(3)},
		{"flipped body", flip(len(base) - 1)},
		{"truncated", fixCRC(base[:len(base)-1])},
		{"trailing bytes", fixCRC(append(bytes.Clone(base), 0))},
		{"count too large", fixCRC(setU32(base, 14, 2))},
		{"huge count", fixCRC(setU32(base, 14, math.MaxUint32))},
		{"negative end", valid(-5)},
		{"negative producer id", valid(100, p(-2))},
		{"unsorted ids", valid2(100, p(5), p(3))},
		{"duplicate ids", valid2(100, p(5), p(5))},
		{"negative epoch", valid(100, ProducerState{ProducerID: 1, Epoch: -1, CoordinatorEpoch: -1, CurrentTxnFirstOffset: -1})},
		{"txn offset past end", valid(100, ProducerState{ProducerID: 1, CoordinatorEpoch: -1, CurrentTxnFirstOffset: 100})},
		{"six batches", valid(100, p(1, bs(6)...))},
		{"batch past end", valid(100, p(1, ProducerBatch{FirstOffset: 99, LastOffset: 100}))},
		{"batch backwards", valid(100, p(1, ProducerBatch{FirstOffset: 9, LastOffset: 8}))},
		{"batches overlapping", valid(100, p(1, ProducerBatch{FirstOffset: 1, LastOffset: 5}, ProducerBatch{FirstOffset: 5, LastOffset: 6}))},
		{"negative sequence", valid(100, p(1, ProducerBatch{FirstSeq: -1, FirstOffset: 1, LastOffset: 1}))},
	}
	for _, tt := range tests {
		if s, err := ParseProducerSnapshot(tt.data); !errors.Is(err, ErrCorruptFile) {
			t.Errorf("%s: parsed %+v, %v; want ErrCorruptFile", tt.name, s, err)
		}
	}
}

// valid2 writes producers in the given order (Marshal would sort them).
func valid2(end int64, a, b ProducerState) []byte {
	one := ProducerSnapshot{EndOffset: end, Producers: []ProducerState{a}}.Marshal()
	two := ProducerSnapshot{EndOffset: end, Producers: []ProducerState{b}}.Marshal()
	out := append(bytes.Clone(one), two[snapshotHeaderSize:]...)
	return fixCRC(setU32(out, 14, 2))
}

func bs(n int) []ProducerBatch {
	var out []ProducerBatch
	for i := range n {
		out = append(out, ProducerBatch{FirstOffset: int64(i), LastOffset: int64(i)})
	}
	return out
}

func setU32(b []byte, at int, v uint32) []byte {
	b = bytes.Clone(b)
	b[at], b[at+1], b[at+2], b[at+3] = byte(v>>24), byte(v>>16), byte(v>>8), byte(v)
	return b
}

// fixCRC recomputes a snapshot's CRC so the structural checks are reached.
func fixCRC(b []byte) []byte {
	b = bytes.Clone(b)
	if len(b) >= snapshotHeaderSize {
		sum := crc32.Checksum(b[snapshotCRCStart:], castagnoli)
		b[2], b[3], b[4], b[5] = byte(sum>>24), byte(sum>>16), byte(sum>>8), byte(sum)
	}
	return b
}

func FuzzProducerSnapshot(f *testing.F) {
	f.Add([]byte{})
	f.Add(ProducerSnapshot{EndOffset: 0}.Marshal())
	f.Add(ProducerSnapshot{EndOffset: 1 << 40, Producers: []ProducerState{
		{ProducerID: 1, Epoch: 2, CoordinatorEpoch: -1, CurrentTxnFirstOffset: -1, Batches: bs(5)},
		{ProducerID: 7, CoordinatorEpoch: 3, CurrentTxnFirstOffset: 4},
	}}.Marshal())
	f.Add(fixCRC(setU32(ProducerSnapshot{EndOffset: 9}.Marshal(), 14, math.MaxUint32)))
	f.Add(ProducerSnapshot{Version: 1, EndOffset: 9, Producers: []ProducerState{{ProducerID: 3, CoordinatorEpoch: 2, CurrentTxnFirstOffset: 8}}}.Marshal())
	f.Add(ProducerSnapshot{EndOffset: 90, Producers: []ProducerState{{ProducerID: 3, CoordinatorEpoch: 2, CurrentTxnFirstOffset: 80}},
		UnreplicatedTxns: []CompletedTxn{{ProducerID: 4, FirstOffset: 10, LastOffset: 20, Aborted: true}, {ProducerID: 3, FirstOffset: 21, LastOffset: 22}}}.Marshal())
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := ParseProducerSnapshot(data)
		if err != nil {
			if !errors.Is(err, ErrCorruptFile) {
				t.Fatalf("error without ErrCorruptFile: %v", err)
			}
			return
		}
		if !bytes.Equal(s.Marshal(), data) {
			t.Fatal("parsed snapshot does not marshal back to the same bytes")
		}
	})
}

// appendOK appends and fails the test on error.
func appendOK(t testing.TB, l *Log, b []byte) AppendResult {
	t.Helper()
	res, err := l.Append(b, AppendOptions{LeaderEpoch: 1})
	if err != nil {
		t.Fatalf("append: %v", err)
	}
	return res
}

// producerOf returns one producer's state from the log.
func producerOf(l *Log, pid int64) (ProducerState, bool) {
	for _, p := range l.Producers() {
		if p.ProducerID == pid {
			return p, true
		}
	}
	return ProducerState{}, false
}

func TestAppendIdempotent(t *testing.T) {
	clk := newClock()
	l, _ := openTestLog(t, partDir(t), smallConfig(), LogOptions{Now: clk.now})
	defer l.Close()
	ts := clk.now().UnixMilli()
	const pid = 5
	var originals []AppendResult
	for i := range 7 {
		appendOK(t, l, batchOf(ts, "plain", 1)) // non-idempotent batches in between are not checked
		res := appendOK(t, l, idemBatch(pid, 0, int32(3*i), 3, ts))
		if res.Duplicate || res.RecordCount != 3 {
			t.Fatalf("batch %d: %+v", i, res)
		}
		originals = append(originals, res)
	}
	leo, size := l.LogEndOffset(), l.Size()
	for i := 2; i < 7; i++ {
		orig := originals[i]
		b := idemBatch(pid, 0, int32(3*i), 3, ts)
		res, err := l.Append(b, AppendOptions{LeaderEpoch: 1})
		if err != nil || !res.Duplicate || res.BaseOffset != orig.BaseOffset || res.LastOffset != orig.LastOffset || res.RecordCount != 0 || res.LogAppendTime != NoTimestamp {
			t.Fatalf("retry of batch %d: %+v, %v; original %+v", i, res, err, orig)
		}
		if !bytes.Equal(b, idemBatch(pid, 0, int32(3*i), 3, ts)) {
			t.Fatal("a duplicate's bytes were modified")
		}
	}
	for _, tc := range []struct {
		name string
		b    []byte
		want error
	}{
		{"retry older than five", idemBatch(pid, 0, 3, 3, ts), ErrOutOfOrderSequence},
		{"gap", idemBatch(pid, 0, 22, 1, ts), ErrOutOfOrderSequence},
		{"new epoch not at 0", idemBatch(pid, 1, 21, 1, ts), ErrOutOfOrderSequence},
	} {
		if res, err := l.Append(tc.b, AppendOptions{LeaderEpoch: 1}); !errors.Is(err, tc.want) || res.Duplicate {
			t.Fatalf("%s: %+v, %v; want %v", tc.name, res, err, tc.want)
		}
	}
	if l.LogEndOffset() != leo || l.Size() != size {
		t.Fatalf("refused and duplicate batches changed the log: LEO %d -> %d, size %d -> %d", leo, l.LogEndOffset(), size, l.Size())
	}
	appendOK(t, l, idemBatch(pid, 0, 21, 2, ts))
	appendOK(t, l, idemBatch(pid, 1, 0, 1, ts))
	if _, err := l.Append(idemBatch(pid, 0, 23, 1, ts), AppendOptions{LeaderEpoch: 1}); !errors.Is(err, ErrInvalidProducerEpoch) {
		t.Fatalf("stale epoch: %v", err)
	}
	p, ok := producerOf(l, pid)
	if !ok || p.Epoch != 1 || p.LastSequence != 0 || len(p.Batches) != 1 || p.Batches[0].FirstOffset != l.LogEndOffset()-1 || p.LastTimestamp != ts {
		t.Fatalf("state %+v", p)
	}
	// Exactly the accepted records are in the log, once each.
	seen := map[string]int{}
	for _, b := range readAll(t, l, 0) {
		dec, err := recordbatch.Decode(b)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range dec.Records {
			seen[string(r.Value)]++
		}
	}
	idem := 0
	for v, n := range seen {
		if v == "plain-0" {
			continue
		}
		if n != 1 {
			t.Fatalf("record %q is in the log %d times", v, n)
		}
		idem++
	}
	// Sequences 0-22 of epoch 0 and 0 of epoch 1.
	if idem != 24 || seen["plain-0"] != 7 {
		t.Fatalf("%d idempotent records and %d plain ones in the log, want 24 and 7", idem, seen["plain-0"])
	}
}

func TestAppendIdempotentLogAppendTime(t *testing.T) {
	clk := newClock()
	cfg := smallConfig()
	cfg.MessageTimestampType = LogAppendTime
	l, _ := openTestLog(t, partDir(t), cfg, LogOptions{Now: clk.now})
	defer l.Close()
	first := appendOK(t, l, idemBatch(1, 0, 0, 2, 5))
	clk.advance(time.Minute)
	dup := appendOK(t, l, idemBatch(1, 0, 0, 2, 5))
	if !dup.Duplicate || dup.LogAppendTime != first.LogAppendTime || dup.BaseOffset != first.BaseOffset {
		t.Fatalf("duplicate %+v of %+v: the original append time is the answer", dup, first)
	}
}

// producersEqual compares the tables of two logs (or one log at two
// times).
func producersEqual(t *testing.T, what string, got, want []ProducerState) {
	t.Helper()
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("%s: producers differ\n got %+v\nwant %+v", what, got, want)
	}
}

// fillProducers appends n rounds of one batch from each of three
// producers (and a plain batch) to a log with small segments, so several
// rolls and snapshots happen. It returns each producer's next sequence.
func fillProducers(t *testing.T, l *Log, ts int64, rounds int, seqs map[int64]int32) {
	t.Helper()
	for r := 0; r < rounds; r++ {
		for pid := int64(1); pid <= 3; pid++ {
			n := int(pid)
			appendOK(t, l, idemBatch(pid, 0, seqs[pid], n, ts))
			seqs[pid] += int32(n)
		}
		appendOK(t, l, batchOf(ts, "x", 2))
	}
}

// checkRetries checks that retrying each producer's newest batch is a
// duplicate and that the next sequence is accepted.
func checkRetries(t *testing.T, l *Log, ts int64, seqs map[int64]int32) {
	t.Helper()
	for pid := int64(1); pid <= 3; pid++ {
		n := int(pid)
		res, err := l.Append(idemBatch(pid, 0, seqs[pid]-int32(n), n, ts), AppendOptions{LeaderEpoch: 1})
		if err != nil || !res.Duplicate {
			t.Fatalf("producer %d: retry of its newest batch: %+v, %v", pid, res, err)
		}
	}
	for pid := int64(1); pid <= 3; pid++ {
		if _, err := l.Append(idemBatch(pid, 0, seqs[pid]+1, 1, ts), AppendOptions{LeaderEpoch: 1}); !errors.Is(err, ErrOutOfOrderSequence) {
			t.Fatalf("producer %d: a gap was accepted: %v", pid, err)
		}
	}
}

func snapshotsIn(t *testing.T, dir string) []int64 {
	t.Helper()
	offs, err := snapshotOffsets(dir)
	if err != nil {
		t.Fatal(err)
	}
	return offs
}

func TestProducerStateCleanReopen(t *testing.T) {
	noFsync(t)
	clk := newClock()
	dir := partDir(t)
	l, _ := openTestLog(t, dir, smallConfig(), LogOptions{Now: clk.now})
	ts := clk.now().UnixMilli()
	seqs := map[int64]int32{}
	fillProducers(t, l, ts, 40, seqs)
	if l.NumSegments() < 3 {
		t.Fatalf("want several segments, have %d", l.NumSegments())
	}
	before := l.Producers()
	if len(before) != 3 {
		t.Fatalf("%d producers", len(before))
	}
	leo := l.LogEndOffset()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if offs := snapshotsIn(t, dir); len(offs) < 3 || offs[len(offs)-1] != leo {
		t.Fatalf("snapshots %v; want one per roll and one at the log end %d", offs, leo)
	}
	l, rep := openTestLog(t, dir, smallConfig(), LogOptions{Now: clk.now, CleanShutdown: true, RecoveryPoint: leo})
	defer l.Close()
	if rep.ProducerSnapshot != snapshotPath(dir, leo) || rep.ProducerReplayFrom != leo {
		t.Fatalf("clean reopen loaded %q and replayed from %d; want the snapshot at %d and no replay", rep.ProducerSnapshot, rep.ProducerReplayFrom, leo)
	}
	producersEqual(t, "after a clean reopen", l.Producers(), before)
	checkRetries(t, l, ts, seqs)
}

func TestProducerStateUncleanReopen(t *testing.T) {
	noFsync(t)
	clk := newClock()
	dir := partDir(t)
	l, _ := openTestLog(t, dir, smallConfig(), LogOptions{Now: clk.now})
	ts := clk.now().UnixMilli()
	seqs := map[int64]int32{}
	fillProducers(t, l, ts, 40, seqs)
	before := l.Producers()
	leo := l.LogEndOffset()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	offs := snapshotsIn(t, dir)
	mid := offs[len(offs)/2]
	for _, tc := range []struct {
		name      string
		rp        int64
		wantSnap  int64 // -1: rebuilt from the log start
		wantStart int64
	}{
		{"no recovery point: from the log start", 0, -1, 0},
		{"recovery point mid-log: the snapshot at or below it", mid + 1, mid, mid},
		{"recovery point at the end", leo, leo, leo},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l, rep := openTestLog(t, dir, smallConfig(), LogOptions{Now: clk.now, RecoveryPoint: tc.rp})
			wantPath := ""
			if tc.wantSnap >= 0 {
				wantPath = snapshotPath(dir, tc.wantSnap)
			}
			if rep.ProducerSnapshot != wantPath || rep.ProducerReplayFrom != tc.wantStart {
				t.Fatalf("loaded %q, replayed from %d; want %q from %d", rep.ProducerSnapshot, rep.ProducerReplayFrom, wantPath, tc.wantStart)
			}
			producersEqual(t, "rebuilt", l.Producers(), before)
			// Close writes a snapshot at the end again; remove it so the
			// next case starts from the same files.
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestProducerStateCorruptSnapshot(t *testing.T) {
	noFsync(t)
	clk := newClock()
	dir := partDir(t)
	l, _ := openTestLog(t, dir, smallConfig(), LogOptions{Now: clk.now})
	ts := clk.now().UnixMilli()
	seqs := map[int64]int32{}
	fillProducers(t, l, ts, 30, seqs)
	before := l.Producers()
	leo := l.LogEndOffset()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	offs := snapshotsIn(t, dir)
	// Damage the newest two in different ways; the third newest is used.
	last := snapshotPath(dir, offs[len(offs)-1])
	data, err := os.ReadFile(last)
	if err != nil {
		t.Fatal(err)
	}
	data[len(data)-3] ^= 1
	if err := os.WriteFile(last, data, 0o644); err != nil {
		t.Fatal(err)
	}
	second := snapshotPath(dir, offs[len(offs)-2])
	if err := os.Truncate(second, 7); err != nil {
		t.Fatal(err)
	}
	l, rep := openTestLog(t, dir, smallConfig(), LogOptions{Now: clk.now, CleanShutdown: true, RecoveryPoint: leo})
	defer l.Close()
	if !reflect.DeepEqual(rep.CorruptSnapshots, []string{last, second}) {
		t.Fatalf("corrupt snapshots reported %v", rep.CorruptSnapshots)
	}
	if rep.ProducerSnapshot != snapshotPath(dir, offs[len(offs)-3]) {
		t.Fatalf("loaded %q", rep.ProducerSnapshot)
	}
	for _, p := range []string{last, second} {
		if _, err := os.Stat(p); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("corrupt snapshot %s was kept", p)
		}
	}
	producersEqual(t, "rebuilt past corrupt snapshots", l.Producers(), before)
	checkRetries(t, l, ts, seqs)

	// A snapshot whose name and content disagree is not trusted either.
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	end := snapshotPath(dir, leo)
	if err := os.Rename(snapshotPath(dir, offs[0]), end); err != nil {
		t.Fatal(err)
	}
	l2, rep := openTestLog(t, dir, smallConfig(), LogOptions{Now: clk.now, CleanShutdown: true, RecoveryPoint: leo})
	defer l2.Close()
	if len(rep.CorruptSnapshots) != 1 || rep.CorruptSnapshots[0] != end {
		t.Fatalf("misnamed snapshot: reported %v", rep.CorruptSnapshots)
	}
	producersEqual(t, "rebuilt past a misnamed snapshot", l2.Producers(), before)
}

// expectProducers computes the table from the batches a log holds, the
// way replay does, as an independent check of truncation.
func expectProducers(t *testing.T, l *Log) []ProducerState {
	t.Helper()
	ps := producerStates{}
	for _, b := range readAll(t, l, l.LogStartOffset()) {
		ps.apply(b)
	}
	return ps.snapshot(0).Producers
}

func TestProducerStateTruncate(t *testing.T) {
	noFsync(t)
	clk := newClock()
	dir := partDir(t)
	l, _ := openTestLog(t, dir, smallConfig(), LogOptions{Now: clk.now})
	defer l.Close()
	ts := clk.now().UnixMilli()
	seqs := map[int64]int32{}
	fillProducers(t, l, ts, 40, seqs)
	leo := l.LogEndOffset()
	for _, to := range []int64{leo - 3, leo * 3 / 4, leo / 2, leo / 5, 3} {
		if err := l.Truncate(to); err != nil {
			t.Fatal(err)
		}
		producersEqual(t, fmt.Sprintf("after truncating to %d", to), l.Producers(), expectProducers(t, l))
		for _, off := range snapshotsIn(t, dir) {
			if off > l.LogEndOffset() {
				t.Fatalf("snapshot at %d survived truncation to %d", off, l.LogEndOffset())
			}
		}
	}
	// The truncated batches' sequences are free again: a producer whose
	// batch was cut resends it and it is appended, not a duplicate.
	for _, p := range l.Producers() {
		n := int(p.ProducerID)
		res := appendOK(t, l, idemBatch(p.ProducerID, 0, p.LastSequence+1, n, ts))
		if res.Duplicate {
			t.Fatalf("producer %d: resend after truncation taken for a duplicate", p.ProducerID)
		}
	}
	if err := l.Truncate(0); err != nil {
		t.Fatal(err)
	}
	if ps := l.Producers(); len(ps) != 0 {
		t.Fatalf("empty log keeps producers %+v", ps)
	}
}

func TestProducerStateResetAndRetention(t *testing.T) {
	noFsync(t)
	clk := newClock()
	dir := partDir(t)
	l, _ := openTestLog(t, dir, smallConfig(), LogOptions{Now: clk.now})
	defer l.Close()
	ts := clk.now().UnixMilli()
	seqs := map[int64]int32{}
	fillProducers(t, l, ts, 40, seqs)
	before := l.Producers()
	l.SetHighWatermark(l.LogEndOffset())
	// DeleteRecords past most segments: the segments (and the snapshots
	// taken at their starts) go, the producers stay (KIP-360).
	start, err := l.DeleteRecords(l.LogEndOffset() - 5)
	if err != nil {
		t.Fatal(err)
	}
	l.mu.Lock()
	first := l.segments[0].baseOffset
	l.mu.Unlock()
	for _, off := range snapshotsIn(t, dir) {
		if off < first {
			t.Fatalf("snapshot at %d kept below the first segment %d (log start %d)", off, first, start)
		}
	}
	producersEqual(t, "after DeleteRecords", l.Producers(), before)
	checkRetries(t, l, ts, seqs)

	if err := l.ResetTo(l.LogEndOffset() + 100); err != nil {
		t.Fatal(err)
	}
	if ps := l.Producers(); len(ps) != 0 {
		t.Fatalf("reset log keeps producers %+v", ps)
	}
	if offs := snapshotsIn(t, dir); len(offs) != 0 {
		t.Fatalf("reset log keeps snapshots %v", offs)
	}
	// Unknown again: any sequence is accepted.
	if res := appendOK(t, l, idemBatch(1, 0, 999, 1, ts)); res.Duplicate {
		t.Fatal("duplicate after reset")
	}
}

func TestAppendAsFollowerProducerState(t *testing.T) {
	clk := newClock()
	leader, _ := openTestLog(t, partDir(t), smallConfig(), LogOptions{Now: clk.now})
	defer leader.Close()
	follower, _ := openTestLog(t, filepath.Join(t.TempDir(), "topic-0"), smallConfig(), LogOptions{Now: clk.now})
	defer follower.Close()
	ts := clk.now().UnixMilli()
	seqs := map[int64]int32{}
	fillProducers(t, leader, ts, 10, seqs)
	var data []byte
	for _, b := range readAll(t, leader, 0) {
		data = append(data, b...)
	}
	if _, err := follower.AppendAsFollower(data); err != nil {
		t.Fatal(err)
	}
	producersEqual(t, "follower", follower.Producers(), leader.Producers())
	// A follower applies whatever its leader wrote, an older epoch
	// included: the leader decided.
	old := idemBatchAt(follower.LogEndOffset(), 1, 0, 0, 1, ts)
	if _, err := follower.AppendAsFollower(old); err != nil {
		t.Fatal(err)
	}
	bump := idemBatchAt(follower.LogEndOffset(), 1, 3, 5, 1, ts)
	older := idemBatchAt(follower.LogEndOffset()+1, 1, 2, 9, 1, ts)
	if _, err := follower.AppendAsFollower(append(bump, older...)); err != nil {
		t.Fatalf("follower refused an older epoch from its leader: %v", err)
	}
	p, _ := producerOf(follower, 1)
	if p.Epoch != 2 || p.LastSequence != 9 {
		t.Fatalf("follower state %+v", p)
	}
	// Once this follower leads, the rules apply to clients again.
	if _, err := follower.Append(idemBatch(1, 1, 0, 1, ts), AppendOptions{LeaderEpoch: 2}); !errors.Is(err, ErrInvalidProducerEpoch) {
		t.Fatalf("stale epoch on the new leader: %v", err)
	}
}

// TestManagerExpiresProducers checks producer.id.expiration.ms through
// Tick. As in Kafka, a producer's idle time counts from its newest batch's
// timestamp, and Tick looks only every check interval.
func TestManagerExpiresProducers(t *testing.T) {
	clk := newClock()
	t0 := clk.now()
	m, _, err := OpenManager(ManagerOptions{Dirs: []string{t.TempDir()}, Now: clk.now, DisableScheduler: true,
		ProducerIDExpiration: time.Hour, ProducerIDExpirationCheckInterval: 10 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	l, err := m.GetOrCreate("t", 0, smallConfig())
	if err != nil {
		t.Fatal(err)
	}
	tick := func(at time.Duration) {
		t.Helper()
		clk.t = t0.Add(at)
		if err := m.Tick(clk.now(), false, false, false, false); err != nil {
			t.Fatal(err)
		}
	}
	ids := func() []int64 {
		var out []int64
		for _, p := range l.Producers() {
			out = append(out, p.ProducerID)
		}
		return out
	}
	appendOK(t, l, idemBatch(1, 0, 0, 1, t0.UnixMilli()))
	clk.t = t0.Add(50 * time.Minute)
	appendOK(t, l, idemBatch(2, 0, 0, 1, clk.now().UnixMilli()))
	tick(61 * time.Minute)
	if got := ids(); !reflect.DeepEqual(got, []int64{2}) {
		t.Fatalf("after producer 1 was idle an hour: %v", got)
	}
	// Producer 3's batch carries an old timestamp: it is due at once, but
	// the next look is only 10 minutes after the last.
	clk.t = t0.Add(62 * time.Minute)
	appendOK(t, l, idemBatch(3, 0, 0, 1, t0.UnixMilli()))
	tick(70 * time.Minute)
	if got := ids(); !reflect.DeepEqual(got, []int64{2, 3}) {
		t.Fatalf("expiry ran within the check interval: %v", got)
	}
	tick(71 * time.Minute)
	if got := ids(); !reflect.DeepEqual(got, []int64{2}) {
		t.Fatalf("after the check interval: %v", got)
	}
	tick(111 * time.Minute)
	if got := ids(); len(got) != 0 {
		t.Fatalf("producer 2 outlived its hour: %v", got)
	}
	// An expired producer is unknown: any sequence is accepted again.
	if res := appendOK(t, l, idemBatch(1, 0, 5, 1, clk.now().UnixMilli())); res.Duplicate {
		t.Fatal("duplicate from an expired producer")
	}
}

// TestForEachHeader walks a segment of mixed batch sizes with windows
// smaller than, between and larger than the batches: every header is seen
// once, in order, whatever the window.
func TestForEachHeader(t *testing.T) {
	noFsync(t)
	l, _ := openTestLog(t, partDir(t), DefaultConfig(), LogOptions{})
	defer l.Close()
	var want []int64
	for i, n := range []int{1, 100, 1, 3, 1000, 2, 1, 1, 5000, 1} {
		vals := make([][]byte, n)
		for k := range vals {
			vals[k] = bytes.Repeat([]byte{byte(i)}, 20)
		}
		want = append(want, appendOK(t, l, recordbatch.BuildValues(1, vals...)).BaseOffset)
	}
	s := l.segments[0]
	for _, window := range []int{BatchHeaderSize, 100, 4096, headerWindow, 1 << 20} {
		var got []int64
		if err := s.forEachHeader(0, s.size.Load(), make([]byte, window), func(b Batch) {
			got = append(got, b.BaseOffset())
		}); err != nil {
			t.Fatalf("window %d: %v", window, err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("window %d: saw %v, want %v", window, got, want)
		}
	}
	// A torn tail is an error naming the file, not a panic.
	if err := s.forEachHeader(0, s.size.Load()-1, make([]byte, 4096), func(Batch) {}); !errors.Is(err, ErrCorruptFile) {
		t.Fatalf("torn tail: %v", err)
	}
}
