package storage

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/raftka/raftka/storage/recordbatch"
)

const txnCrashChildEnv = "RAFTKA_STORAGE_TXN_CRASH_DIR"

func txnCrashConfig() Config {
	cfg := smallConfig()
	cfg.SegmentBytes = 16 << 10
	cfg.IndexIntervalBytes = 1024
	cfg.SegmentIndexBytes = 4096
	return cfg
}

// txnCrashChild opens the log uncleanly and appends, until killed (at most
// 30 seconds, so an orphan never lingers), transactional batches from producers 1-3, plain batches and
// COMMIT or ABORT markers, moving the HW now and then. It prints "acked N"
// after each append and "rp N" after each Sync.
func txnCrashChild(dir string) {
	l, _, err := OpenLog(dir, txnCrashConfig(), LogOptions{})
	if err != nil {
		fmt.Println("error", err)
		os.Exit(2)
	}
	seq := map[int64]int32{}
	for _, p := range l.Producers() {
		seq[p.ProducerID] = p.LastSequence + 1
	}
	out := bufio.NewWriter(os.Stdout)
	deadline := time.Now().Add(30 * time.Second)
	for i := 0; time.Now().Before(deadline); i++ {
		now := time.Now().UnixMilli()
		pid := int64(i%3 + 1)
		var err error
		switch i % 5 {
		case 0, 1, 2:
			n := 1 + i%4
			rs := make([]recordbatch.Record, n)
			for k := range rs {
				rs[k] = recordbatch.Record{OffsetDelta: int32(k), Timestamp: now, Value: fmt.Appendf(nil, "p%d-s%d", pid, seq[pid]+int32(k))}
			}
			b := recordbatch.Batch{Transactional: true, BaseTimestamp: now, ProducerID: pid, BaseSequence: seq[pid], Records: rs}.Encode()
			_, err = l.Append(b, AppendOptions{LeaderEpoch: 1})
			seq[pid] += int32(n)
		case 3:
			_, err = l.Append(recordbatch.BuildValues(now, fmt.Appendf(nil, "plain-%d", l.LogEndOffset())), AppendOptions{LeaderEpoch: 1})
		case 4:
			pid = int64((i/5)%3 + 1)
			_, err = l.AppendMarker(TxnMarker{ProducerID: pid, Type: ControlType((i / 15) % 2)}, AppendOptions{LeaderEpoch: 1})
		}
		if err != nil {
			fmt.Println("error", err)
			os.Exit(2)
		}
		if i%7 == 0 {
			l.SetHighWatermark(l.LogEndOffset())
		}
		fmt.Fprintf(out, "acked %d\n", l.LogEndOffset())
		if i%50 == 49 {
			if err := l.Sync(); err != nil {
				fmt.Println("error", err)
				os.Exit(2)
			}
			fmt.Fprintf(out, "rp %d\n", l.RecoveryPoint())
		}
		out.Flush()
	}
	os.Exit(0)
}

// txnModelOf rebuilds the transaction model from the batches a log holds.
func txnModelOf(t *testing.T, l *Log) *txnModel {
	t.Helper()
	m := &txnModel{start: l.LogStartOffset(), hw: l.HighWatermark()}
	for _, b := range readAll(t, l, 0) {
		mb := txnModelBatch{base: b.BaseOffset(), last: b.LastOffset(), pid: -1}
		if b.Transactional() || b.Control() {
			mb.pid, mb.seq = b.ProducerID(), b.BaseSequence()
		}
		if b.Control() {
			mk, ok, err := b.TxnMarker()
			if err != nil || !ok {
				t.Fatalf("control batch at %d: %v, %v", b.BaseOffset(), ok, err)
			}
			mb.marker, mb.commit = true, mk.Commit()
		} else if err := b.Records(func(r Record) bool {
			mb.values = append(mb.values, string(r.Value))
			return true
		}); err != nil {
			t.Fatal(err)
		}
		m.batches = append(m.batches, mb)
	}
	return m
}

// TestTxnCrashKill9 kills a child appending transactions mid-stream and
// reopens the log uncleanly from the last recovery point the child saw:
// the open transactions, the LSO, the .txnindex and a read_committed read
// match what the log's own batches say, and nothing acknowledged is lost.
// Three rounds, each resuming the same log.
func TestTxnCrashKill9(t *testing.T) {
	dir := partDir(t)
	acked, rp := int64(0), int64(0)
	for round := 0; round < 3; round++ {
		cmd, lines := startCrashChild(t, txnCrashChildEnv, dir)
		// Kill once the child has appended 3000 offsets more (enough for
		// several segments and snapshots however slow the machine), or
		// after 20 seconds.
		timeout := time.After(20 * time.Second)
		start := acked
	wait:
		for {
			select {
			case line, ok := <-lines:
				if !ok {
					break wait
				}
				if strings.HasPrefix(line, "error") {
					t.Fatalf("child: %s", line)
				}
				if v, ok := strings.CutPrefix(line, "acked "); ok {
					acked, _ = strconv.ParseInt(v, 10, 64)
				}
				if v, ok := strings.CutPrefix(line, "rp "); ok {
					rp, _ = strconv.ParseInt(v, 10, 64)
				}
				if acked-start > 3000 {
					break wait
				}
			case <-timeout:
				break wait
			}
		}
		cmd.Process.Signal(syscall.SIGKILL)
		for line := range lines { // drain: lines printed before the kill count
			if v, ok := strings.CutPrefix(line, "acked "); ok {
				acked, _ = strconv.ParseInt(v, 10, 64)
			}
		}
		cmd.Wait()
		noFsync(t)
		l, rep, err := OpenLog(dir, txnCrashConfig(), LogOptions{RecoveryPoint: rp})
		if err != nil {
			t.Fatalf("round %d: reopen: %v", round, err)
		}
		if acked-start < 3000 {
			t.Fatalf("round %d: the child appended only %d offsets", round, acked-start)
		}
		if l.LogEndOffset() < acked {
			t.Fatalf("round %d: log ends at %d, the child saw %d acknowledged; report %+v", round, l.LogEndOffset(), acked, rep)
		}
		if l.NumSegments() < 2 {
			t.Fatalf("round %d: %d segments: the test needs rolls", round, l.NumSegments())
		}
		l.SetHighWatermark(l.LogEndOffset())
		ab, _ := l.AbortedTransactions(0, l.LogEndOffset())
		t.Logf("round %d: LEO %d, %d segments, recovery point %d, replayed from %d (snapshot %q), %d aborted transactions", round, l.LogEndOffset(), l.NumSegments(), rp, rep.ProducerReplayFrom, rep.ProducerSnapshot, len(ab))
		checkTxnModel(t, fmt.Sprintf("round %d (recovery point %d, replay from %d)", round, rp, rep.ProducerReplayFrom), l, txnModelOf(t, l))
		acked = l.LogEndOffset()
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
	}
}
