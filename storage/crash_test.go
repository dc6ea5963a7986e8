package storage

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/raftka/raftka/storage/recordbatch"
)

const crashChildEnv = "RAFTKA_STORAGE_CRASH_DIR"

// crashProducer is the idempotent producer the crash child appends as; its
// sequence numbers equal the offsets (it is the log's only writer).
const crashProducer = 7

// crashChild opens the log uncleanly, then appends batches whose values
// are their record's offset, as idempotent producer crashProducer,
// printing "acked N" after each append, until killed (or for at most 5
// seconds, so an orphan never lingers).
func crashChild(dir string) {
	cfg := smallConfig()
	cfg.SegmentBytes = 64 << 10
	cfg.IndexIntervalBytes = 1024
	cfg.SegmentIndexBytes = 4096
	l, _, err := OpenLog(dir, cfg, LogOptions{})
	if err != nil {
		fmt.Println("error", err)
		os.Exit(2)
	}
	out := bufio.NewWriter(os.Stdout)
	deadline := time.Now().Add(5 * time.Second)
	for i := 0; time.Now().Before(deadline); i++ {
		next := l.LogEndOffset()
		n := 1 + i%7
		vals := make([][]byte, n)
		for k := range vals {
			vals[k] = []byte(strconv.FormatInt(next+int64(k), 10))
		}
		now := time.Now().UnixMilli()
		rs := make([]recordbatch.Record, n)
		for k := range rs {
			rs[k] = recordbatch.Record{OffsetDelta: int32(k), Timestamp: now, Value: vals[k]}
		}
		batch := recordbatch.Batch{BaseTimestamp: now, ProducerID: crashProducer, BaseSequence: int32(next), Records: rs}.Encode()
		res, err := l.Append(batch, AppendOptions{LeaderEpoch: 1})
		if err != nil {
			fmt.Println("error", err)
			os.Exit(2)
		}
		fmt.Fprintf(out, "acked %d\n", res.LastOffset+1)
		out.Flush()
	}
	os.Exit(0)
}

// startCrashChild re-runs the test binary as a child whose TestMain hook
// (selected by the env key) works on dir and reports on stdout; lines
// carries what it prints until its stdout closes.
func startCrashChild(t *testing.T, envKey, dir string) (*exec.Cmd, <-chan string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), envKey+"="+dir)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := make(chan string)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	return cmd, lines
}

// TestCrashKill9 appends from a child process, kills it with SIGKILL
// mid-stream, and checks the reopened log holds a dense prefix of what was
// appended that includes everything the child saw acknowledged, and that
// the idempotent producer's state was rebuilt from the log: retries of its
// last batches are duplicates. Three rounds, each resuming the same log.
func TestCrashKill9(t *testing.T) {
	dir := partDir(t)
	acked := int64(0)
	for round := 0; round < 3; round++ {
		cmd, lines := startCrashChild(t, crashChildEnv, dir)
		// Kill once the child has acked a few hundred more batches, or
		// after a second, whichever comes first.
		timeout := time.After(time.Second)
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
				if n, err := strconv.ParseInt(strings.TrimPrefix(line, "acked "), 10, 64); err == nil {
					acked = n
				}
				if acked-start > 2000 {
					break wait
				}
			case <-timeout:
				break wait
			}
		}
		cmd.Process.Signal(syscall.SIGKILL)
		for range lines { // drain: a line may have been printed before the kill
		}
		cmd.Wait()
		noFsync(t)
		l, rep, err := OpenLog(dir, smallConfig(), LogOptions{})
		if err != nil {
			t.Fatalf("round %d: reopen: %v", round, err)
		}
		got := readAll(t, l, 0)
		next := int64(0)
		for _, b := range got {
			if b.BaseSequence() != int32(b.BaseOffset()) {
				t.Fatalf("round %d: batch at %d has sequence %d", round, b.BaseOffset(), b.BaseSequence())
			}
			if b.BaseOffset() != next {
				t.Fatalf("round %d: batch at %d, expected %d (not dense)", round, b.BaseOffset(), next)
			}
			dec, err := recordbatch.Decode(b)
			if err != nil {
				t.Fatal(err)
			}
			for k, r := range dec.Records {
				if string(r.Value) != strconv.FormatInt(next+int64(k), 10) {
					t.Fatalf("round %d: offset %d holds %q", round, next+int64(k), r.Value)
				}
			}
			next = b.NextOffset()
		}
		if next < acked {
			t.Fatalf("round %d: log ends at %d but the child saw %d acknowledged; report %+v", round, next, acked, rep)
		}
		if l.LogEndOffset() != next {
			t.Fatalf("round %d: LEO %d, read to %d", round, l.LogEndOffset(), next)
		}
		checkCrashProducer(t, round, l, got)
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
		acked = next
	}
	if acked == 0 {
		t.Fatal("the child appended nothing")
	}
}

// checkCrashProducer checks the rebuilt state of the crash child's
// producer against the batches the log holds, and that retrying any of
// its last five batches is answered with the original offsets and appends
// nothing.
func checkCrashProducer(t *testing.T, round int, l *Log, got []Batch) {
	t.Helper()
	if len(got) == 0 {
		return
	}
	ps := l.Producers()
	if len(ps) != 1 || ps[0].ProducerID != crashProducer {
		t.Fatalf("round %d: producers %+v", round, ps)
	}
	last := got[max(len(got)-MaxProducerBatches, 0):]
	if p := ps[0]; len(p.Batches) != len(last) || p.LastSequence != int32(got[len(got)-1].LastOffset()) {
		t.Fatalf("round %d: producer state %+v after %d batches", round, p, len(got))
	}
	leo := l.LogEndOffset()
	for _, b := range last {
		retry := recordbatch.Batch{BaseTimestamp: b.BaseTimestamp(), ProducerID: crashProducer, BaseSequence: b.BaseSequence(),
			Records: make([]recordbatch.Record, b.RecordCount())}
		for k := range retry.Records {
			retry.Records[k] = recordbatch.Record{OffsetDelta: int32(k), Timestamp: b.BaseTimestamp(), Value: []byte("retry")}
		}
		res, err := l.Append(retry.Encode(), AppendOptions{LeaderEpoch: 1})
		if err != nil || !res.Duplicate || res.BaseOffset != b.BaseOffset() || res.LastOffset != b.LastOffset() {
			t.Fatalf("round %d: retry of the batch at %d: %+v, %v", round, b.BaseOffset(), res, err)
		}
	}
	if l.LogEndOffset() != leo {
		t.Fatalf("round %d: retries appended", round)
	}
}
