package storage

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/raftka/raftka/storage/recordbatch"
)

const durableCrashEnv = "RAFTKA_STORAGE_DURABLE_CRASH_DIR"

const durableCrashLogs = 4

// durableCrashConfig has small segments, so rounds span segment rolls
// (new files whose directory entries must be durable too).
func durableCrashConfig() Config {
	cfg := durableConfig()
	cfg.SegmentBytes = 64 << 10
	cfg.IndexIntervalBytes = 1024
	cfg.SegmentIndexBytes = 4096
	return cfg
}

// durableCrashChild (in a child process) appends to durableCrashLogs
// durable-mode logs of a Manager on dir from one goroutine each, batches
// whose values are their offsets, and prints "acked P END" once a batch
// is durable (DurableEnd passed it), until killed or for at most 5
// seconds. Its data fsync first appends "PATH SIZE" to dir/synced (the
// size the fsync covers, taken before it), so the parent knows what a
// power cut would have left of each file.
func durableCrashChild(dir string) {
	journal, err := os.OpenFile(filepath.Join(dir, "synced"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		fmt.Println("error", err)
		os.Exit(2)
	}
	var jmu sync.Mutex
	syncData := func(f *os.File) error {
		st, err := f.Stat()
		if err != nil {
			return err
		}
		if err := f.Sync(); err != nil {
			return err
		}
		jmu.Lock()
		defer jmu.Unlock()
		_, err = fmt.Fprintf(journal, "%s %d\n", f.Name(), st.Size())
		return err
	}
	// No scheduler: nothing but the group commit fsyncs the segments, so
	// the journal lists every fsync of their data.
	m, _, err := OpenManager(ManagerOptions{Dirs: []string{filepath.Join(dir, "data")}, DisableScheduler: true, SyncData: syncData})
	if err != nil {
		fmt.Println("error", err)
		os.Exit(2)
	}
	var omu sync.Mutex
	out := bufio.NewWriter(os.Stdout)
	deadline := time.Now().Add(5 * time.Second)
	var wg sync.WaitGroup
	for p := range durableCrashLogs {
		l, err := m.GetOrCreate("dc", int32(p), durableCrashConfig())
		if err != nil {
			fmt.Println("error", err)
			os.Exit(2)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; time.Now().Before(deadline); i++ {
				next := l.LogEndOffset()
				n := 1 + i%5
				now := time.Now().UnixMilli()
				rs := make([]recordbatch.Record, n)
				for k := range rs {
					rs[k] = recordbatch.Record{OffsetDelta: int32(k), Timestamp: now, Value: []byte(strconv.FormatInt(next+int64(k), 10) + strings.Repeat(".", 1000))}
				}
				res, err := l.Append(recordbatch.Batch{BaseTimestamp: now, ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1, Records: rs}.Encode(), AppendOptions{LeaderEpoch: 1})
				if err != nil {
					fmt.Println("error", err)
					os.Exit(2)
				}
				// Acknowledged as the replica layer does: once
				// DurableEnd passes the batch.
				for l.DurableEnd() <= res.LastOffset {
					ch := l.MakeDurable()
					if ch == nil {
						fmt.Println("error nothing to wait for, durable end", l.DurableEnd(), "batch ends at", res.LastOffset)
						os.Exit(2)
					}
					<-ch
				}
				omu.Lock()
				fmt.Fprintf(out, "acked %d %d\n", p, res.LastOffset+1)
				out.Flush()
				omu.Unlock()
			}
		}()
	}
	wg.Wait()
	os.Exit(0)
}

// powerCut leaves of each partition directory under dir what a power cut
// after the last fsync would: every .log file cut to the size its last
// data fsync covered (removed if none did), the indexes (never fsynced in
// durable mode) removed.
func powerCut(t *testing.T, dir string, synced map[string]int64) {
	t.Helper()
	parts, err := filepath.Glob(filepath.Join(dir, "data", "dc-*"))
	if err != nil {
		t.Fatal(err)
	}
	for _, pd := range parts {
		ents, err := os.ReadDir(pd)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range ents {
			path := filepath.Join(pd, e.Name())
			switch filepath.Ext(e.Name()) {
			case ".log":
				size, ok := synced[path]
				if !ok {
					err = os.Remove(path)
				} else {
					err = os.Truncate(path, size)
				}
			case ".index", ".timeindex":
				err = os.Remove(path)
			}
			if err != nil {
				t.Fatal(err)
			}
		}
	}
}

// TestDurableCrashPowerCut kills a child appending in durable mode with
// SIGKILL, then cuts what a power loss would have lost (everything its
// fsyncs did not cover), reopens the logs and checks every record the
// child saw acknowledged is there with its value. Counting a batch
// before its fsync returned would lose acknowledged records here.
func TestDurableCrashPowerCut(t *testing.T) {
	dir := t.TempDir()
	cmd, lines := startCrashChild(t, durableCrashEnv, dir)
	acked := map[int32]int64{}
	total := 0
	timeout := time.After(2 * time.Second)
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
			var p int32
			var end int64
			if _, err := fmt.Sscanf(line, "acked %d %d", &p, &end); err == nil {
				acked[p] = max(acked[p], end)
				total++
			}
			if total > 3000 {
				break wait
			}
		case <-timeout:
			break wait
		}
	}
	cmd.Process.Signal(syscall.SIGKILL)
	for range lines {
	}
	cmd.Wait()
	if total == 0 {
		t.Fatal("the child acknowledged nothing")
	}
	raw, err := os.ReadFile(filepath.Join(dir, "synced"))
	if err != nil {
		t.Fatal(err)
	}
	synced := map[string]int64{}
	for _, line := range strings.Split(strings.TrimSpace(string(raw)), "\n") {
		i := strings.LastIndexByte(line, ' ')
		if i < 0 {
			continue
		}
		// The journal's last line may be torn by the kill.
		if n, err := strconv.ParseInt(line[i+1:], 10, 64); err == nil {
			synced[line[:i]] = max(synced[line[:i]], n)
		}
	}
	powerCut(t, dir, synced)

	m, _, err := OpenManager(ManagerOptions{Dirs: []string{filepath.Join(dir, "data")}, DisableScheduler: true,
		ConfigFor: func(string) Config { return durableCrashConfig() }})
	if err != nil {
		t.Fatalf("reopen after the power cut: %v", err)
	}
	defer m.Close()
	for p := range int32(durableCrashLogs) {
		l, ok := m.Get("dc", p)
		if !ok {
			if acked[p] > 0 {
				t.Fatalf("partition %d gone, %d records acknowledged", p, acked[p])
			}
			continue
		}
		next := int64(0)
		for _, b := range readAll(t, l, 0) {
			dec, err := recordbatch.Decode(b)
			if err != nil {
				t.Fatal(err)
			}
			for k, r := range dec.Records {
				off := b.BaseOffset() + int64(k)
				if off != next || !strings.HasPrefix(string(r.Value), strconv.FormatInt(off, 10)+".") {
					t.Fatalf("partition %d: offset %d (expected %d) holds %.20q", p, off, next, r.Value)
				}
				next++
			}
		}
		if next < acked[p] {
			t.Fatalf("partition %d: %d records left after the power cut, %d were acknowledged as durable", p, next, acked[p])
		}
		t.Logf("partition %d: %d acknowledged, %d survived the cut", p, acked[p], next)
	}
}
