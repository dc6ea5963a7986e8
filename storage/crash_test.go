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

// crashChild opens the log uncleanly, then appends batches whose values
// are their record's offset, printing "acked N" after each append, until
// killed (or for at most 5 seconds, so an orphan never lingers).
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
		res, err := l.Append(recordbatch.BuildValues(time.Now().UnixMilli(), vals...), AppendOptions{LeaderEpoch: 1})
		if err != nil {
			fmt.Println("error", err)
			os.Exit(2)
		}
		fmt.Fprintf(out, "acked %d\n", res.LastOffset+1)
		out.Flush()
	}
	os.Exit(0)
}

// TestCrashKill9 appends from a child process, kills it with SIGKILL
// mid-stream, and checks the reopened log holds a dense prefix of what was
// appended that includes everything the child saw acknowledged. Three
// rounds, each resuming the same log.
func TestCrashKill9(t *testing.T) {
	dir := partDir(t)
	acked := int64(0)
	for round := 0; round < 3; round++ {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), crashChildEnv+"="+dir)
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
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
		acked = next
	}
	if acked == 0 {
		t.Fatal("the child appended nothing")
	}
}
