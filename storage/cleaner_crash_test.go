package storage

import (
	"bufio"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

const cleanerCrashEnv = "RAFTKA_STORAGE_CLEANER_CRASH"

// The cleaner crash test's schedule: rounds of keyed writes, each followed
// by a clean, on a fake clock.
const (
	crashRounds        = 4
	crashBatchesARound = 150
	crashRoundStep     = 10 * time.Second
)

var cleanerCrashSteps = []string{"writing", "cleaned", "swap", "deleted", "swapped"}

func crashCleanConfig() Config {
	c := compactConfig()
	c.SegmentBytes = 2048
	c.DeleteRetentionMs = 15_000
	return c
}

// crashRound returns round r's batches for seed: single-record batches
// over 60 keys (so many keys last appear in early segments), one in
// eight a tombstone.
func crashRound(seed uint64, r int) [][]kv {
	rng := rand.New(rand.NewPCG(seed, uint64(r)))
	out := make([][]kv, crashBatchesARound)
	for i := range out {
		k := kv{key: fmt.Sprintf("key-%d", rng.IntN(60)), value: fmt.Sprintf("r%d-%d", r, i)}
		k.tombstone = rng.IntN(8) == 0
		out[i] = []kv{k}
	}
	return out
}

// cleanerCrashChild runs the schedule in dir, printing "round R" once a
// round's writes are in, and kills itself with SIGKILL at the n-th time
// the clean reaches step.
func cleanerCrashChild(arg string) {
	parts := strings.Split(arg, "|")
	dir, step := parts[0], parts[2]
	seed, _ := strconv.ParseUint(parts[1], 10, 64)
	n, _ := strconv.Atoi(parts[3])
	fsyncFile = func(*os.File) error { return nil } // a kill -9 keeps the page cache
	seen := 0
	cleanerHook = func(s string) {
		if s == step {
			if seen++; seen == n {
				syscall.Kill(os.Getpid(), syscall.SIGKILL)
			}
		}
	}
	clk := newClock()
	l, _, err := OpenLog(dir, crashCleanConfig(), LogOptions{Now: clk.now})
	if err != nil {
		fmt.Println("error", err)
		os.Exit(2)
	}
	tp := l.TopicPartition()
	ckpt := func() error {
		return WriteOffsetCheckpoint(filepath.Join(filepath.Dir(dir), CleanerCheckpointFile), map[TopicPartition]int64{tp: l.FirstDirtyOffset()})
	}
	for r := range crashRounds {
		for _, recs := range crashRound(seed, r) {
			if _, err := l.Append(keyedBatchNoT(clk.now().UnixMilli(), recs...), AppendOptions{}); err != nil {
				fmt.Println("error", err)
				os.Exit(2)
			}
		}
		fmt.Printf("round %d\n", r)
		l.SetHighWatermark(l.LogEndOffset())
		if _, _, err := l.Clean(clk.now(), CleanOptions{DedupeBufferBytes: 1 << 20, Checkpoint: ckpt}); err != nil {
			fmt.Println("error", err)
			os.Exit(2)
		}
		clk.advance(crashRoundStep)
	}
	os.Exit(0)
}

// keyedBatchNoT is keyedBatch for the child, which has no testing.TB.
func keyedBatchNoT(ts int64, recs ...kv) []byte {
	return keyedBatch(panicTB{}, ts, CompressionNone, -1, 0, recs...)
}

type panicTB struct{ testing.TB }

func (panicTB) Helper()                   {}
func (panicTB) Fatal(args ...any)         { panic(fmt.Sprint(args...)) }
func (panicTB) Fatalf(f string, a ...any) { panic(fmt.Sprintf(f, a...)) }

// TestCleanerCrash kills a child process with SIGKILL while it cleans, at
// each step of writing and swapping a cleaned segment (before the swap,
// with .swap files present, with the old segments renamed .deleted, after
// the swap), 50 times, and checks that every reopen (unclean, every
// segment rescanned) cuts nothing and holds each key's latest write (or,
// for a tombstone past delete.retention.ms, possibly nothing), only
// records that were written at their offsets, and, at or above the cleaner
// checkpoint, every write.
func TestCleanerCrash(t *testing.T) {
	deadline := time.Now().Add(2 * time.Minute)
	killed := map[string]int{}
	for run := 0; run < 50 && time.Now().Before(deadline); run++ {
		step := cleanerCrashSteps[run%len(cleanerCrashSteps)]
		nth := 1 + (run/len(cleanerCrashSteps))%4
		seed := uint64(run)
		dir := partDir(t)
		os.MkdirAll(filepath.Dir(dir), 0o755)
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%s|%d|%s|%d", cleanerCrashEnv, dir, seed, step, nth))
		out, err := cmd.Output()
		rounds := 0
		sc := bufio.NewScanner(strings.NewReader(string(out)))
		for sc.Scan() {
			line := sc.Text()
			if strings.HasPrefix(line, "error") {
				t.Fatalf("run %d: child: %s", run, line)
			}
			if r, ok := strings.CutPrefix(line, "round "); ok {
				rounds, _ = strconv.Atoi(r)
				rounds++
			}
		}
		if ee, ok := err.(*exec.ExitError); ok && ee.ProcessState.Sys().(syscall.WaitStatus).Signal() == syscall.SIGKILL {
			killed[step]++
		} else if err != nil {
			t.Fatalf("run %d: child: %v", run, err)
		}
		// The writes the child made: whole rounds up to the one whose
		// clean it died in, on the clock of that round.
		clk := newClock()
		byOffset := map[int64]cleanWrite{}
		latest := map[string]cleanWrite{}
		off := int64(0)
		for r := range rounds {
			if r > 0 {
				clk.advance(crashRoundStep)
			}
			for _, recs := range crashRound(seed, r) {
				w := cleanWrite{kv: recs[0], offset: off, ts: clk.now().UnixMilli()}
				if w.tombstone {
					w.value = ""
				}
				byOffset[off], latest[w.key] = w, w
				off++
			}
		}
		ckpts, err := ReadOffsetCheckpoint(filepath.Join(filepath.Dir(dir), CleanerCheckpointFile))
		if err != nil {
			t.Fatal(err)
		}
		ckpt := ckpts[TopicPartition{"topic", 0}]
		l, rep, err := OpenLog(dir, crashCleanConfig(), LogOptions{Now: clk.now, CleanerCheckpoint: ckpt, HighWatermark: off})
		if err != nil {
			t.Fatalf("run %d (%s #%d): reopen: %v", run, step, nth, err)
		}
		if rep.LostData() || l.LogEndOffset() != off {
			t.Fatalf("run %d (%s #%d): reopen cut the log to %d of %d: %+v", run, step, nth, l.LogEndOffset(), off, rep.Truncations)
		}
		checkCleanedLog(t, fmt.Sprintf("run %d (%s #%d)", run, step, nth), l, clk, byOffset, latest, crashCleanConfig().DeleteRetentionMs)
		// The reopened log cleans again and still agrees.
		mustClean(t, l, clk.now())
		checkCleanedLog(t, fmt.Sprintf("run %d (%s #%d) cleaned again", run, step, nth), l, clk, byOffset, latest, crashCleanConfig().DeleteRetentionMs)
		l.Close()
	}
	for _, s := range cleanerCrashSteps {
		if killed[s] == 0 {
			t.Errorf("no child was killed at step %q (kills: %v)", s, killed)
		}
	}
}

// checkCleanedLog checks l against the writes as TestCleanerModel does.
func checkCleanedLog(t *testing.T, what string, l *Log, clk *testClock, byOffset map[int64]cleanWrite, latest map[string]cleanWrite, deleteRetentionMs int64) {
	t.Helper()
	seen := map[string]int64{}
	at := map[int64]bool{}
	for _, r := range readRecords(t, l, l.LogStartOffset()) {
		w, ok := byOffset[r.offset]
		if !ok || w.key != r.key || w.value != r.value || w.tombstone != r.tombstone {
			t.Fatalf("%s: offset %d holds %+v, written %+v", what, r.offset, r, w)
		}
		seen[r.key], at[r.offset] = r.offset, true
	}
	for k, w := range latest {
		off, ok := seen[k]
		if ok && off != w.offset || !ok && !(w.tombstone && clk.now().UnixMilli()-w.ts >= deleteRetentionMs) {
			t.Fatalf("%s: key %s ends at %d (present %v), its latest write is %+v", what, k, off, ok, w)
		}
	}
	for off, w := range byOffset {
		if off >= l.FirstDirtyOffset() && !at[off] {
			t.Fatalf("%s: write %+v above the cleaner checkpoint %d is gone", what, w, l.FirstDirtyOffset())
		}
	}
}
