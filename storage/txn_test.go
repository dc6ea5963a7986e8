package storage

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/raftka/raftka/storage/recordbatch"
)

// txnBatch is a transactional batch of n records from producer pid.
func txnBatch(pid int64, epoch int16, seq int32, n int, ts int64) []byte {
	rs := make([]recordbatch.Record, n)
	for i := range rs {
		rs[i] = recordbatch.Record{OffsetDelta: int32(i), Timestamp: ts, Value: fmt.Appendf(nil, "t%d-e%d-s%d", pid, epoch, int64(seq)+int64(i))}
	}
	return recordbatch.Batch{Transactional: true, BaseTimestamp: ts, ProducerID: pid, ProducerEpoch: epoch, BaseSequence: seq, Records: rs}.Encode()
}

func marker(pid int64, epoch int16, coordEpoch int32, commit bool) TxnMarker {
	m := TxnMarker{ProducerID: pid, ProducerEpoch: epoch, CoordinatorEpoch: coordEpoch, Type: ControlAbort}
	if commit {
		m.Type = ControlCommit
	}
	return m
}

func appendMarkerOK(t testing.TB, l *Log, m TxnMarker) AppendResult {
	t.Helper()
	res, err := l.AppendMarker(m, AppendOptions{LeaderEpoch: 1})
	if err != nil {
		t.Fatalf("AppendMarker(%+v): %v", m, err)
	}
	return res
}

// TestMarkerBatchFormat: the marker batch is byte for byte what Kafka's
// encoding of an end-transaction marker gives (built here independently
// with recordbatch), parses back, and a client may not produce it.
func TestMarkerBatchFormat(t *testing.T) {
	for _, m := range []TxnMarker{marker(7, 3, 12, true), marker(1<<40, 0, 0, false), marker(5, math.MaxInt16, math.MaxInt32, true)} {
		const ts = 1_700_000_000_123
		got := BuildMarkerBatch(m, ts)
		want := recordbatch.Batch{PartitionLeaderEpoch: -1, Transactional: true, Control: true, BaseTimestamp: ts, ProducerID: m.ProducerID,
			ProducerEpoch: m.ProducerEpoch, BaseSequence: -1, Records: []recordbatch.Record{{Timestamp: ts,
				Key:   []byte{0, 0, 0, byte(m.Type)},
				Value: []byte{0, 0, byte(m.CoordinatorEpoch >> 24), byte(m.CoordinatorEpoch >> 16), byte(m.CoordinatorEpoch >> 8), byte(m.CoordinatorEpoch)}}}}.Encode()
		if !bytes.Equal(got, want) {
			t.Fatalf("%+v: marker batch\n got %x\nwant %x", m, []byte(got), want)
		}
		if len(got) != MarkerBatchSize {
			t.Fatalf("marker batch of %d bytes, MarkerBatchSize says %d", len(got), MarkerBatchSize)
		}
		if _, err := got.ValidateStored(); err != nil {
			t.Fatalf("stored marker does not validate: %v", err)
		}
		if _, err := got.Validate(); !errors.Is(err, ErrInvalidRecord) {
			t.Fatalf("a client's control batch: %v, want ErrInvalidRecord", err)
		}
		back, ok, err := got.TxnMarker()
		if err != nil || !ok || back != m {
			t.Fatalf("TxnMarker() = %+v, %v, %v; want %+v", back, ok, err, m)
		}
	}
	if _, ok, err := Batch(batchOf(1, "plain", 2)).TxnMarker(); ok || err != nil {
		t.Fatalf("a data batch is a marker: %v, %v", ok, err)
	}
}

func TestParseControlRecord(t *testing.T) {
	tests := []struct {
		name       string
		key, value []byte
		typ        ControlType
		epoch      int32
		err        bool
	}{
		{"commit", []byte{0, 0, 0, 1}, []byte{0, 0, 0, 0, 0, 9}, ControlCommit, 9, false},
		{"abort", []byte{0, 0, 0, 0}, []byte{0, 0, 0, 0, 1, 0}, ControlAbort, 256, false},
		{"newer versions read as Kafka reads them", []byte{0, 1, 0, 1, 0xff}, []byte{0, 3, 0, 0, 0, 2, 7, 7}, ControlCommit, 2, false},
		{"other control type", []byte{0, 0, 0, 5}, nil, 5, -1, false},
		{"short key", []byte{0, 0, 1}, nil, 0, -1, true},
		{"negative key version", []byte{0x80, 0, 0, 1}, []byte{0, 0, 0, 0, 0, 1}, 0, -1, true},
		{"short value", []byte{0, 0, 0, 1}, []byte{0, 0, 0, 0, 1}, ControlCommit, -1, true},
		{"negative value version", []byte{0, 0, 0, 0}, []byte{0xff, 0xff, 0, 0, 0, 1}, ControlAbort, -1, true},
	}
	for _, tt := range tests {
		typ, epoch, err := ParseControlRecord(tt.key, tt.value)
		if (err != nil) != tt.err || err != nil && !errors.Is(err, ErrCorruptBatch) {
			t.Fatalf("%s: error %v, want error %v", tt.name, err, tt.err)
		}
		if err == nil && (typ != tt.typ || epoch != tt.epoch) {
			t.Fatalf("%s: %v epoch %d, want %v epoch %d", tt.name, typ, epoch, tt.typ, tt.epoch)
		}
	}
}

func readTxnIndex(t testing.TB, path string) []AbortedTxn {
	t.Helper()
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	got, err := ParseTxnIndex(data)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return got
}

// TestTransactionsInLog walks one log through open, committed and aborted
// transactions: the LSO, the .txnindex entries, the producer state, the
// fencing of stale markers, and ReadCommitted's answer.
func TestTransactionsInLog(t *testing.T) {
	clk := newClock()
	dir := partDir(t)
	l, _ := openTestLog(t, dir, DefaultConfig(), LogOptions{Now: clk.now})
	defer l.Close()
	ts := clk.now().UnixMilli()
	hwAll := func() { l.SetHighWatermark(l.LogEndOffset()) }

	appendOK(t, l, batchOf(ts, "plain", 2)) // 0-1
	hwAll()
	if lso := l.LastStableOffset(); lso != 2 {
		t.Fatalf("no transactions: LSO %d, want the HW 2", lso)
	}
	appendOK(t, l, txnBatch(10, 0, 0, 3, ts)) // 2-4, producer 10 opens
	appendOK(t, l, txnBatch(11, 0, 0, 1, ts)) // 5, producer 11 opens
	appendOK(t, l, batchOf(ts, "plain", 1))   // 6
	hwAll()
	if lso := l.LastStableOffset(); lso != 2 {
		t.Fatalf("open transactions from 2: LSO %d", lso)
	}
	if p, _ := producerOf(l, 10); p.CurrentTxnFirstOffset != 2 {
		t.Fatalf("producer 10: open transaction at %d, want 2", p.CurrentTxnFirstOffset)
	}
	// Stale markers change nothing.
	if _, err := l.AppendMarker(marker(10, -1, 0, false), AppendOptions{LeaderEpoch: 1}); !errors.Is(err, ErrInvalidRecord) {
		t.Fatalf("negative epoch: %v", err)
	}
	res := appendMarkerOK(t, l, marker(10, 0, 5, false)) // 7: abort 10's
	if res.BaseOffset != 7 || res.LastOffset != 7 || res.RecordCount != 1 {
		t.Fatalf("marker appended at %+v", res)
	}
	leo := l.LogEndOffset()
	if _, err := l.AppendMarker(marker(10, 0, 4, true), AppendOptions{LeaderEpoch: 1}); !errors.Is(err, ErrTransactionCoordinatorFenced) {
		t.Fatalf("older coordinator epoch: %v", err)
	}
	appendOK(t, l, txnBatch(10, 1, 0, 1, ts)) // 8: producer 10, bumped epoch
	if _, err := l.AppendMarker(marker(10, 0, 6, true), AppendOptions{LeaderEpoch: 1}); !errors.Is(err, ErrInvalidProducerEpoch) {
		t.Fatalf("older producer epoch: %v", err)
	}
	if l.LogEndOffset() != leo+1 {
		t.Fatalf("refused markers wrote something: LEO %d, want %d", l.LogEndOffset(), leo+1)
	}
	// The abort was not replicated yet: it still holds the LSO (and 11's
	// is open anyway).
	if lso := l.LastStableOffset(); lso != 2 {
		t.Fatalf("unreplicated abort: LSO %d, want 2", lso)
	}
	hwAll()
	if lso := l.LastStableOffset(); lso != 5 {
		t.Fatalf("after the abort of 10's first transaction: LSO %d, want 11's first offset 5", lso)
	}
	idx := filepath.Join(dir, segmentName(0)+txnIndexSuffix)
	want := []AbortedTxn{{ProducerID: 10, FirstOffset: 2, LastOffset: 7, LastStableOffset: 5}}
	if got := readTxnIndex(t, idx); !reflect.DeepEqual(got, want) {
		t.Fatalf(".txnindex %+v, want %+v", got, want)
	}
	appendMarkerOK(t, l, marker(11, 0, 5, true)) // 9: commit 11's
	hwAll()
	if lso := l.LastStableOffset(); lso != 8 {
		t.Fatalf("after the commit: LSO %d, want 10's second transaction at 8", lso)
	}
	appendMarkerOK(t, l, marker(10, 1, 5, false)) // 10: abort 10's second
	appendMarkerOK(t, l, marker(12, 0, 0, true))  // 11: a marker for a producer with nothing here
	hwAll()
	if lso, hw := l.LastStableOffset(), l.HighWatermark(); lso != hw || hw != 12 {
		t.Fatalf("all decided: LSO %d, HW %d, want 12", lso, hw)
	}
	want = append(want, AbortedTxn{ProducerID: 10, FirstOffset: 8, LastOffset: 10, LastStableOffset: 11})
	if got := readTxnIndex(t, idx); !reflect.DeepEqual(got, want) {
		t.Fatalf(".txnindex %+v, want %+v", got, want)
	}
	if p, _ := producerOf(l, 10); p.CoordinatorEpoch != 5 || p.CurrentTxnFirstOffset != -1 || p.Epoch != 1 {
		t.Fatalf("producer 10 after its markers: %+v", p)
	}
	cr, err := l.ReadCommitted(0, 1<<20)
	if err != nil || cr.LastStableOffset != 12 || !reflect.DeepEqual(cr.Aborted, want) || cr.Region.Len != l.Size() {
		t.Fatalf("ReadCommitted(0) = %+v, %v", cr, err)
	}
	if got, _ := l.AbortedTransactions(8, 9); !reflect.DeepEqual(got, want[1:]) {
		t.Fatalf("AbortedTransactions(8, 9) = %+v", got)
	}
	if got, _ := l.AbortedTransactions(0, 2); len(got) != 0 {
		t.Fatalf("AbortedTransactions(0, 2) = %+v, want none", got)
	}
	// Read committed stops at the LSO and never splits a batch.
	appendOK(t, l, txnBatch(13, 0, 0, 2, ts)) // 12-13
	appendOK(t, l, batchOf(ts, "plain", 1))   // 14
	hwAll()
	cr, err = l.ReadCommitted(0, 1<<20)
	if err != nil || cr.LastStableOffset != 12 {
		t.Fatalf("ReadCommitted with 13 open: %+v, %v", cr, err)
	}
	data, _ := cr.Region.Bytes()
	if last := lastBatch(t, data); last.NextOffset() != 12 {
		t.Fatalf("read_committed read up to %d, want the LSO 12", last.NextOffset())
	}

	// Everything survives a clean restart and an unclean one.
	before := l.Producers()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	for _, clean := range []bool{true, false} {
		l2, _ := openTestLog(t, dir, DefaultConfig(), LogOptions{Now: clk.now, CleanShutdown: clean, HighWatermark: 15})
		if lso := l2.LastStableOffset(); lso != 12 {
			t.Fatalf("reopened (clean %v): LSO %d, want 12", clean, lso)
		}
		producersEqual(t, "reopened", l2.Producers(), before)
		if got := readTxnIndex(t, idx); !reflect.DeepEqual(got, want) {
			t.Fatalf("reopened (clean %v): .txnindex %+v, want %+v", clean, got, want)
		}
		if err := l2.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

func lastBatch(t testing.TB, data []byte) Batch {
	t.Helper()
	var last Batch
	for len(data) > 0 {
		n, err := BatchSize(data)
		if err != nil || n > len(data) {
			t.Fatalf("partial batch")
		}
		last, data = Batch(data[:n]), data[n:]
	}
	return last
}

// TestTxnIndexFollowsSegments: entries live beside the segment holding
// their marker, are cut by truncation, rebuilt when corrupt, and go with
// their segment; a follower writes the same files byte for byte.
func TestTxnIndexFollowsSegments(t *testing.T) {
	noFsync(t)
	clk := newClock()
	cfg := smallConfig()
	dir := partDir(t)
	l, _ := openTestLog(t, dir, cfg, LogOptions{Now: clk.now})
	defer l.Close()
	ts := clk.now().UnixMilli()
	seq := map[int64]int32{}
	var aborts []AbortedTxn
	for i := 0; i < 100; i++ {
		pid := int64(i%3 + 1)
		first := appendOK(t, l, txnBatch(pid, 0, seq[pid], 4, ts)).BaseOffset
		seq[pid] += 4
		appendOK(t, l, batchOf(ts, "plain", 3))
		commit := i%2 == 0
		at := appendMarkerOK(t, l, marker(pid, 0, 0, commit)).BaseOffset
		if !commit {
			aborts = append(aborts, AbortedTxn{ProducerID: pid, FirstOffset: first, LastOffset: at, LastStableOffset: at + 1})
		}
		l.SetHighWatermark(l.LogEndOffset())
	}
	if l.NumSegments() < 4 {
		t.Fatalf("only %d segments", l.NumSegments())
	}
	checkAll := func(what string, l *Log, want []AbortedTxn) {
		t.Helper()
		got, err := l.AbortedTransactions(0, l.LogEndOffset())
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Fatalf("%s: aborted %+v, %v\nwant %+v", what, got, err, want)
		}
		// Each entry sits in its marker's segment.
		for _, s := range l.segments {
			for _, a := range readTxnIndex(t, s.txnIndexPath()) {
				if a.LastOffset < s.baseOffset || a.LastOffset >= s.nextOffset {
					t.Fatalf("%s: entry %+v in the segment at %d..%d", what, a, s.baseOffset, s.nextOffset)
				}
			}
		}
	}
	checkAll("appended", l, aborts)

	// A follower copying the log writes identical files.
	fdir := filepath.Join(t.TempDir(), "topic-0")
	f, _ := openTestLog(t, fdir, cfg, LogOptions{Now: clk.now})
	defer f.Close()
	for _, b := range readAll(t, l, 0) {
		if _, err := f.AppendAsFollower(bytes.Clone(b)); err != nil {
			t.Fatal(err)
		}
	}
	for _, s := range l.segments {
		for _, name := range []string{s.logPath(), s.txnIndexPath()} {
			a, errA := os.ReadFile(name)
			b, errB := os.ReadFile(filepath.Join(fdir, filepath.Base(name)))
			if !bytes.Equal(a, b) || (errA == nil) != (errB == nil) {
				t.Fatalf("follower's %s differs from the leader's", filepath.Base(name))
			}
		}
	}

	// Truncation removes the entries of the markers it cuts, and the
	// transaction a cut marker ended is open again.
	k := len(aborts) / 2
	cut := aborts[k]
	if err := l.Truncate(cut.LastOffset); err != nil {
		t.Fatal(err)
	}
	checkAll("truncated", l, aborts[:k])
	if p, _ := producerOf(l, cut.ProducerID); p.CurrentTxnFirstOffset != cut.FirstOffset {
		t.Fatalf("cutting a marker must reopen its transaction at %d: %+v", cut.FirstOffset, p)
	}
	if lso := l.LastStableOffset(); lso != cut.FirstOffset {
		t.Fatalf("LSO %d, want the reopened transaction's first offset %d", lso, cut.FirstOffset)
	}
	if at := appendMarkerOK(t, l, marker(cut.ProducerID, 0, 0, false)).BaseOffset; at != cut.LastOffset {
		t.Fatalf("marker again at %d, want %d", at, cut.LastOffset)
	}
	aborts = aborts[:k+1]
	checkAll("aborted again", l, aborts)

	// A corrupt .txnindex is rebuilt at open.
	l.SetHighWatermark(l.LogEndOffset())
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	victim := filepath.Join(dir, segmentName(l.segments[1].baseOffset)+txnIndexSuffix)
	if err := os.WriteFile(victim, []byte("not an index"), 0o644); err != nil {
		t.Fatal(err)
	}
	l, rep := openTestLog(t, dir, cfg, LogOptions{Now: clk.now, CleanShutdown: true, HighWatermark: math.MaxInt64})
	defer l.Close()
	if !containsString(rep.RebuiltIndexes, victim) {
		t.Fatalf("corrupt %s not reported: %v", victim, rep.RebuiltIndexes)
	}
	checkAll("rebuilt", l, aborts)

	// Retention deletes the index with its segment.
	first := l.segments[0]
	if _, err := l.DeleteRecords(l.segments[2].baseOffset); err != nil {
		t.Fatal(err)
	}
	if _, err := l.ApplyRetention(clk.now()); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(first.txnIndexPath()); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("%s outlived its segment: %v", first.txnIndexPath(), err)
	}
}

func containsString(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// TestRetentionKeepsOpenTransactions: neither retention nor DeleteRecords
// leaves the LSO in a deleted segment.
func TestRetentionKeepsOpenTransactions(t *testing.T) {
	noFsync(t)
	clk := newClock()
	cfg := smallConfig()
	cfg.RetentionBytes = 1
	dir := partDir(t)
	l, _ := openTestLog(t, dir, cfg, LogOptions{Now: clk.now})
	defer l.Close()
	ts := clk.now().UnixMilli()
	for i := 0; i < 20; i++ {
		appendOK(t, l, batchOf(ts, "plain", 10))
	}
	open := appendOK(t, l, txnBatch(5, 0, 0, 2, ts)).BaseOffset
	for i := 0; i < 40; i++ {
		appendOK(t, l, batchOf(ts, "plain", 10))
	}
	l.SetHighWatermark(l.LogEndOffset())
	if _, err := l.ApplyRetention(clk.now()); err != nil {
		t.Fatal(err)
	}
	if lso := l.LastStableOffset(); lso != open || l.LogStartOffset() > open {
		t.Fatalf("retention past an open transaction: LSO %d (want %d), log start %d", lso, open, l.LogStartOffset())
	}
	if _, err := l.DeleteRecords(open + 50); err != nil {
		t.Fatal(err)
	}
	if lso, start := l.LastStableOffset(), l.LogStartOffset(); lso != start || start != open+50 {
		t.Fatalf("after DeleteRecords past the open transaction: LSO %d, log start %d", lso, start)
	}
	if r, err := l.ReadCommitted(l.LastStableOffset(), 100); err != nil || r.Region.Len != 0 {
		t.Fatalf("reading at the LSO: %+v, %v", r, err)
	}
	appendMarkerOK(t, l, marker(5, 0, 0, true))
	l.SetHighWatermark(l.LogEndOffset())
	if lso := l.LastStableOffset(); lso != l.HighWatermark() {
		t.Fatalf("committed: LSO %d, HW %d", lso, l.HighWatermark())
	}
}

func FuzzTxnIndex(f *testing.F) {
	f.Add([]byte{}, int64(0), int64(10))
	var two []byte
	two = AbortedTxn{ProducerID: 1, FirstOffset: 3, LastOffset: 9, LastStableOffset: 10}.AppendTo(two)
	two = AbortedTxn{ProducerID: 2, FirstOffset: 4, LastOffset: 12, LastStableOffset: 4}.AppendTo(two)
	f.Add(two, int64(5), int64(11))
	f.Add(two[:40], int64(0), int64(100))
	f.Fuzz(func(t *testing.T, data []byte, from, upTo int64) {
		entries, err := ParseTxnIndex(data)
		if err != nil {
			if !errors.Is(err, ErrCorruptFile) {
				t.Fatalf("error without ErrCorruptFile: %v", err)
			}
		} else {
			var back []byte
			for _, e := range entries {
				back = e.AppendTo(back)
			}
			if !bytes.Equal(back, data) {
				t.Fatal("parsed entries do not write back to the same bytes")
			}
		}
		// The file as a segment's index: open empties it if corrupt, and
		// collect answers exactly the overlapping entries.
		path := filepath.Join(t.TempDir(), segmentName(0)+txnIndexSuffix)
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		perr := err
		x, corrupt, err := openTxnIndex(path, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer x.close()
		if (corrupt == nil) != (perr == nil) {
			t.Fatalf("open says corrupt %v, parse says %v", corrupt, perr)
		}
		got, _, err := x.collect(from, upTo, nil)
		if err != nil {
			t.Fatal(err)
		}
		if corrupt != nil {
			if len(got) != 0 {
				t.Fatal("a corrupt index answered entries")
			}
			return
		}
		var want []AbortedTxn
		for _, e := range entries {
			if e.LastOffset >= from && e.FirstOffset < upTo {
				want = append(want, e)
			}
			if e.LastStableOffset >= upTo {
				break
			}
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("collect(%d, %d) = %+v, want %+v", from, upTo, got, want)
		}
	})
}

// FuzzTxnMarker: any marker round-trips through BuildMarkerBatch, and any
// bytes read as a control record or a stored control batch give a marker
// or an ErrCorruptBatch, never a panic.
func FuzzTxnMarker(f *testing.F) {
	f.Add(int64(7), int16(1), int32(3), true, []byte{0, 0, 0, 1}, []byte{0, 0, 0, 0, 0, 3}, []byte(BuildMarkerBatch(marker(7, 1, 3, true), 5)))
	f.Add(int64(0), int16(0), int32(0), false, []byte{0, 0}, []byte{}, []byte{})
	f.Fuzz(func(t *testing.T, pid int64, epoch int16, coord int32, commit bool, key, value, batch []byte) {
		if pid >= 0 && epoch >= 0 {
			m := marker(pid, epoch, coord, commit)
			b := BuildMarkerBatch(m, 1)
			if got, ok, err := b.TxnMarker(); err != nil || !ok || got != m {
				t.Fatalf("marker %+v came back as %+v, %v, %v", m, got, ok, err)
			}
		}
		if _, _, err := ParseControlRecord(key, value); err != nil && !errors.Is(err, ErrCorruptBatch) {
			t.Fatalf("control record error without ErrCorruptBatch: %v", err)
		}
		b := Batch(batch)
		if _, err := b.ValidateStored(); err != nil {
			return
		}
		if _, _, err := b.TxnMarker(); err != nil && !errors.Is(err, ErrCorruptBatch) {
			t.Fatalf("stored batch's marker error without ErrCorruptBatch: %v", err)
		}
	})
}

// copyTxnIndex appends to s's .txnindex the entries of segs, in order.
func copyTxnIndex(s *segment, segs []*segment) error {
	for _, src := range segs {
		var err error
		if serr := src.txnIdx.scan(func(a AbortedTxn) bool {
			err = s.txnIdx.append(a)
			return err == nil
		}); serr != nil {
			return serr
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// TestCopyTxnIndexThroughASwap: a segment replacing others (as the
// cleaner's does) carries its entries through its .cleaned and .swap
// names into place; removeAs leaves no .txnindex behind.
func TestCopyTxnIndexThroughASwap(t *testing.T) {
	noFsync(t)
	clk := newClock()
	cfg := smallConfig()
	dir := partDir(t)
	l, _ := openTestLog(t, dir, cfg, LogOptions{Now: clk.now})
	defer l.Close()
	ts := clk.now().UnixMilli()
	var want []AbortedTxn
	for i := 0; i < 60; i++ {
		first := appendOK(t, l, txnBatch(1, 0, int32(i), 1, ts)).BaseOffset
		at := appendMarkerOK(t, l, marker(1, 0, 0, i%3 == 0)).BaseOffset
		if i%3 != 0 {
			want = append(want, AbortedTxn{ProducerID: 1, FirstOffset: first, LastOffset: at, LastStableOffset: at + 1})
		}
	}
	segs := l.segments[:len(l.segments)-1]
	if len(segs) < 2 {
		t.Fatalf("only %d inactive segments", len(segs))
	}
	var inSegs []AbortedTxn
	for _, a := range want {
		if a.LastOffset < l.active().baseOffset {
			inSegs = append(inSegs, a)
		}
	}
	ns, err := createSegmentAs(dir, segs[0].baseOffset, cleanedSuffix, l.cfg.Load(), clk.now())
	if err != nil {
		t.Fatal(err)
	}
	if err := copyTxnIndex(ns, segs); err != nil {
		t.Fatal(err)
	}
	if got := readTxnIndex(t, ns.txnIndexPath()); !reflect.DeepEqual(got, inSegs) || !strings.HasSuffix(ns.txnIndexPath(), txnIndexSuffix+cleanedSuffix) {
		t.Fatalf("%s: %+v, want %+v", ns.txnIndexPath(), got, inSegs)
	}
	other, err := createSegmentAs(t.TempDir(), 0, cleanedSuffix, l.cfg.Load(), clk.now())
	if err != nil {
		t.Fatal(err)
	}
	if err := copyTxnIndex(other, segs); err != nil {
		t.Fatal(err)
	}
	if err := other.removeAs(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(other.txnIndexPath()); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("removeAs left %s: %v", other.txnIndexPath(), err)
	}
	// The swap's renames take ns's files over the (now closed) log's.
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	for _, suffix := range []string{swapSuffix, ""} {
		if err := ns.renameSuffix(suffix); err != nil {
			t.Fatal(err)
		}
		if got := readTxnIndex(t, filepath.Join(dir, segmentName(ns.baseOffset)+txnIndexSuffix+suffix)); !reflect.DeepEqual(got, inSegs) {
			t.Fatalf("after the rename to %q: %+v", suffix, got)
		}
	}
	ns.close()
}

// InTransaction: open from the producer's first transactional batch to its
// marker, at that epoch only; a plain producer or an unknown one never is.
func TestInTransaction(t *testing.T) {
	clk := newClock()
	l, _ := openTestLog(t, partDir(t), DefaultConfig(), LogOptions{Now: clk.now})
	defer l.Close()
	ts := clk.now().UnixMilli()
	if l.InTransaction(10, 0) {
		t.Fatal("an unknown producer is in a transaction")
	}
	appendOK(t, l, txnBatch(10, 0, 0, 2, ts))
	if !l.InTransaction(10, 0) || l.InTransaction(10, 1) || l.InTransaction(11, 0) {
		t.Fatal("after a transactional batch: wrong answer")
	}
	appendMarkerOK(t, l, marker(10, 0, 0, true))
	if l.InTransaction(10, 0) {
		t.Fatal("still in a transaction after its marker")
	}
	appendOK(t, l, txnBatch(10, 0, 2, 1, ts))
	if !l.InTransaction(10, 0) {
		t.Fatal("the next transaction is not open")
	}
}

// The verification guard: a transactional batch appended with the guard
// TxnGuard answered before its verification is refused, and nothing
// appended, once a marker for its producer came in between (it would open
// a transaction the coordinator has ended); with the guard taken after
// the marker, or for another producer, it is appended.
func TestTxnVerificationGuard(t *testing.T) {
	clk := newClock()
	l, _ := openTestLog(t, partDir(t), DefaultConfig(), LogOptions{Now: clk.now})
	defer l.Close()
	ts := clk.now().UnixMilli()
	appendOK(t, l, txnBatch(10, 0, 0, 2, ts))
	open, before := l.TxnGuard(10, 0)
	if !open {
		t.Fatal("the open transaction is not reported")
	}
	_, other := l.TxnGuard(11, 0)
	appendMarkerOK(t, l, marker(10, 0, 0, true)) // lands between verification and append
	leo := l.LogEndOffset()
	if _, err := l.Append(txnBatch(10, 0, 2, 1, ts), AppendOptions{LeaderEpoch: 1, TxnGuard: before, Guarded: true}); !errors.Is(err, ErrTxnVerificationLost) {
		t.Fatalf("append with the guard from before the marker: %v", err)
	}
	if l.LogEndOffset() != leo || l.InTransaction(10, 0) {
		t.Fatal("the refused batch changed the log")
	}
	if _, err := l.Append(txnBatch(11, 0, 0, 1, ts), AppendOptions{LeaderEpoch: 1, TxnGuard: other, Guarded: true}); err != nil {
		t.Fatalf("another producer's batch: %v", err)
	}
	open, after := l.TxnGuard(10, 0)
	if open || after == before {
		t.Fatalf("after the marker: open %v, guard %d (was %d)", open, after, before)
	}
	if _, err := l.Append(txnBatch(10, 0, 2, 1, ts), AppendOptions{LeaderEpoch: 1, TxnGuard: after, Guarded: true}); err != nil {
		t.Fatalf("append with the guard from after the marker: %v", err)
	}
}
