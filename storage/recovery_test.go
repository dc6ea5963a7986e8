package storage

import (
	"bytes"
	"errors"
	"math/rand"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// stored is a batch as written, with where it lives.
type stored struct {
	data []byte
	file string // segment .log path
	pos  int64
}

// buildLog writes n random batches through Append with a small config,
// closes the log cleanly and returns what was written.
func buildLog(t *testing.T, rng *rand.Rand, dir string, n int) []stored {
	t.Helper()
	cfg := smallConfig()
	cfg.SegmentBytes = 1500
	l, _ := openTestLog(t, dir, cfg, LogOptions{})
	var out []stored
	for i := 0; i < n; i++ {
		b := batchOf(1000+int64(i), "r", 1+rng.Intn(4))
		if _, err := l.Append(b, AppendOptions{LeaderEpoch: int32(i / 10)}); err != nil {
			t.Fatal(err)
		}
		out = append(out, stored{data: b})
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	// Find each batch's file and position by walking the segments.
	logs, _ := filepath.Glob(filepath.Join(dir, "*.log"))
	sort.Strings(logs)
	i := 0
	for _, f := range logs {
		data, _ := os.ReadFile(f)
		for pos := 0; pos < len(data); {
			sz, _ := BatchSize(data[pos:])
			out[i].file, out[i].pos = f, int64(pos)
			pos += sz
			i++
		}
	}
	if i != len(out) {
		t.Fatalf("found %d batches on disk, wrote %d", i, len(out))
	}
	return out
}

// sameBatch compares batches ignoring the partition leader epoch, the one
// header field no check covers (outside the CRC and not implied by offsets).
func sameBatch(a, b []byte) bool {
	if len(a) != len(b) || len(a) < BatchHeaderSize {
		return false
	}
	return bytes.Equal(a[:offLeaderEpoch], b[:offLeaderEpoch]) && bytes.Equal(a[offMagic:], b[offMagic:])
}

// TestRecoveryProperty damages segment and index files at random (truncate,
// flip bytes, append garbage, delete) and checks the log still opens, keeps
// every batch before the first damaged byte, and returns only batches that
// match what was written.
func TestRecoveryProperty(t *testing.T) {
	trials := 150
	if testing.Short() {
		trials = 30
	}
	noFsync(t)
	for trial := 0; trial < trials; trial++ {
		seed := int64(trial)
		rng := rand.New(rand.NewSource(seed))
		dir := partDir(t)
		written := buildLog(t, rng, dir, 20+rng.Intn(30))
		files, _ := filepath.Glob(filepath.Join(dir, "0*"))
		sort.Strings(files)
		victim := files[rng.Intn(len(files))]
		data, _ := os.ReadFile(victim)
		damageAt := int64(-1) // first damaged byte of a .log, -1 for none
		var what string
		switch op := rng.Intn(4); {
		case op == 0 && len(data) > 0: // truncate
			n := rng.Intn(len(data))
			os.WriteFile(victim, data[:n], 0o644)
			damageAt, what = int64(n), "truncate"
		case op == 1 && len(data) > 0: // flip bytes
			p := rng.Intn(len(data))
			for k := 0; k < 1+rng.Intn(3) && p+k < len(data); k++ {
				data[p+k] ^= byte(1 + rng.Intn(255))
			}
			os.WriteFile(victim, data, 0o644)
			damageAt, what = int64(p), "flip"
		case op == 2: // garbage at the end
			g := make([]byte, 1+rng.Intn(100))
			rng.Read(g)
			os.WriteFile(victim, append(data, g...), 0o644)
			damageAt, what = int64(len(data)), "append"
		default:
			os.Remove(victim)
			damageAt, what = 0, "delete"
		}
		if !strings.HasSuffix(victim, logSuffix) {
			damageAt = -1 // index damage loses nothing
		}
		l, rep, err := OpenLog(dir, smallConfig(), LogOptions{})
		if err != nil {
			t.Fatalf("seed %d (%s %s): open: %v", seed, what, filepath.Base(victim), err)
		}
		got := readAll(t, l, l.LogStartOffset())
		// Every batch before the damage must be there, byte for byte.
		intact := 0
		for _, w := range written {
			if damageAt >= 0 && (w.file > victim || w.file == victim && w.pos+int64(len(w.data)) > damageAt) {
				break
			}
			intact++
		}
		if len(got) < intact {
			t.Fatalf("seed %d (%s %s at %d): read %d batches, %d were intact; report %+v", seed, what, filepath.Base(victim), damageAt, len(got), intact, rep)
		}
		// Whatever was read must be what was written at that offset.
		byOffset := map[int64][]byte{}
		for _, w := range written {
			byOffset[Batch(w.data).BaseOffset()] = w.data
		}
		for i, b := range got {
			if w, ok := byOffset[b.BaseOffset()]; !ok || !sameBatch(w, b) {
				t.Fatalf("seed %d (%s %s): batch %d at offset %d was not written like that", seed, what, filepath.Base(victim), i, b.BaseOffset())
			}
		}
		if damageAt < 0 && len(got) != len(written) {
			t.Fatalf("seed %d: index damage lost batches (%d of %d)", seed, len(got), len(written))
		}
		// The log keeps working and reopens cleanly.
		if _, err := l.Append(batchOf(1, "after", 2), AppendOptions{LeaderEpoch: 100}); err != nil {
			t.Fatalf("seed %d: append after recovery: %v", seed, err)
		}
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
		l2, rep2, err := OpenLog(dir, smallConfig(), LogOptions{CleanShutdown: true})
		if err != nil {
			t.Fatalf("seed %d: clean reopen: %v", seed, err)
		}
		if len(rep2.Recovered) != 0 || len(rep2.RebuiltIndexes) != 0 {
			t.Fatalf("seed %d: clean reopen after recovery rescanned: %+v", seed, rep2)
		}
		if n := len(readAll(t, l2, l2.LogStartOffset())); n != len(got)+1 {
			t.Fatalf("seed %d: %d batches after reopen, want %d", seed, n, len(got)+1)
		}
		l2.Close()
	}
}

func TestRecoveryReportTornTail(t *testing.T) {
	dir := partDir(t)
	written := buildLog(t, rand.New(rand.NewSource(1)), dir, 30)
	last := written[len(written)-1]
	os.Truncate(last.file, last.pos+10)
	l, rep := openTestLog(t, dir, smallConfig(), LogOptions{})
	defer l.Close()
	if len(rep.Truncations) != 1 || rep.Truncations[0].File != last.file || rep.Truncations[0].Position != last.pos || rep.Truncations[0].Bytes != 10 {
		t.Fatalf("report %+v", rep)
	}
	if l.LogEndOffset() != Batch(last.data).BaseOffset() {
		t.Fatalf("LEO %d", l.LogEndOffset())
	}
	if !rep.LostData() {
		t.Fatal("LostData false after a truncation")
	}
}

func TestRecoveryTruncationDropsLaterSegments(t *testing.T) {
	dir := partDir(t)
	written := buildLog(t, rand.New(rand.NewSource(2)), dir, 40)
	first := written[0].file
	data, _ := os.ReadFile(first)
	data[len(data)-1] ^= 0xff // corrupt the last batch of the first segment
	os.WriteFile(first, data, 0o644)
	l, rep := openTestLog(t, dir, smallConfig(), LogOptions{})
	defer l.Close()
	if len(rep.DeletedSegments) == 0 || l.NumSegments() != 1 {
		t.Fatalf("later segments kept: %d segments, report %+v", l.NumSegments(), rep)
	}
}

func TestRecoveryRebuildsIndexes(t *testing.T) {
	dir := partDir(t)
	written := buildLog(t, rand.New(rand.NewSource(3)), dir, 40)
	idx := strings.TrimSuffix(written[0].file, logSuffix) + indexSuffix
	tidx := strings.TrimSuffix(written[0].file, logSuffix) + timeIndexSuffix
	os.Remove(idx)
	os.WriteFile(tidx, []byte{1, 2, 3}, 0o644)
	l, rep := openTestLog(t, dir, smallConfig(), LogOptions{CleanShutdown: true})
	defer l.Close()
	if len(rep.RebuiltIndexes) == 0 || len(rep.Truncations) != 0 {
		t.Fatalf("report %+v", rep)
	}
	if st, err := os.Stat(idx); err != nil || st.Size() == 0 {
		t.Fatalf("offset index not rebuilt: %v", err)
	}
	if got := readAll(t, l, 0); len(got) != len(written) {
		t.Fatalf("read %d of %d", len(got), len(written))
	}
	// The rebuilt time index answers timestamp lookups.
	if off, ok, err := l.FindOffsetByTimestamp(1005); err != nil || !ok || off != Batch(written[5].data).BaseOffset() {
		t.Fatalf("FindOffsetByTimestamp: %d %v %v", off, ok, err)
	}
}

func TestRecoveryStrayFiles(t *testing.T) {
	dir := partDir(t)
	buildLog(t, rand.New(rand.NewSource(4)), dir, 10)
	for _, name := range []string{"00000000000000000999.log.deleted", "00000000000000000000.index.tmp", "00000000000000000500.log.cleaned", "leader-epoch-checkpoint.tmp", "00000000000000000777.index"} {
		os.WriteFile(filepath.Join(dir, name), []byte("x"), 0o644)
	}
	l, rep := openTestLog(t, dir, smallConfig(), LogOptions{CleanShutdown: true})
	defer l.Close()
	if len(rep.StrayFiles) != 4 || len(rep.DeletedSegments) != 1 {
		t.Fatalf("report %+v", rep)
	}
	left, _ := filepath.Glob(filepath.Join(dir, "*"))
	for _, f := range left {
		if strings.Contains(f, "999") || strings.Contains(f, "777") || strings.HasSuffix(f, ".tmp") || strings.HasSuffix(f, ".cleaned") {
			t.Fatalf("stray file left: %s", f)
		}
	}
}

func TestRecoveryUnrecoverable(t *testing.T) {
	dir := partDir(t)
	buildLog(t, rand.New(rand.NewSource(5)), dir, 10)
	bad := filepath.Join(dir, LeaderEpochCheckpointFile)
	os.WriteFile(bad, []byte("0\n5\n"), 0o644)
	_, _, err := OpenLog(dir, smallConfig(), LogOptions{})
	if !errors.Is(err, ErrCorruptFile) || !strings.Contains(err.Error(), bad) {
		t.Fatalf("want an error naming %s, got %v", bad, err)
	}
	os.Remove(bad)
	// A segment whose name overlaps the previous one.
	os.WriteFile(filepath.Join(dir, "00000000000000000001.log"), nil, 0o644)
	_, _, err = OpenLog(dir, smallConfig(), LogOptions{CleanShutdown: true})
	if !errors.Is(err, ErrCorruptFile) || !strings.Contains(err.Error(), "00000000000000000001.log") {
		t.Fatalf("overlap: %v", err)
	}
	if _, _, err := OpenLog(filepath.Join(t.TempDir(), "no-partition-number"), smallConfig(), LogOptions{}); err == nil {
		t.Fatal("bad directory name accepted")
	}
}
