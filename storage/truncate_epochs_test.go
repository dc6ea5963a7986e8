package storage

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// TestTruncateAtOrPastEndDropsEmptyEpochs: a Truncate that cuts no batch
// (at the log end or past it) still drops the leader epochs that start at
// or after the log end, which hold no record: a follower keeping one would
// name it as LastFetchedEpoch to a leader that never had it and diverge on
// every fetch without ever cutting anything. Epochs that hold records stay,
// no batch and no offset moves, the checkpoint file says the same as the
// cache, and when no epoch starts at the end nothing changes at all.
func TestTruncateAtOrPastEndDropsEmptyEpochs(t *testing.T) {
	tests := []struct {
		name    string
		resetTo int64   // ResetTo first (0: no reset)
		appends []int32 // leader epoch of each two-record batch
		assign  []EpochEntry
		to      int64
		want    []EpochEntry
	}{
		{
			name:    "led an epoch and appended nothing, cut at the end",
			appends: []int32{1, 1, 2}, assign: []EpochEntry{{3, 6}}, to: 6,
			want: []EpochEntry{{1, 0}, {2, 4}},
		},
		{
			name:    "led an epoch and appended nothing, cut past the end",
			appends: []int32{1, 1, 2}, assign: []EpochEntry{{3, 6}}, to: 10,
			want: []EpochEntry{{1, 0}, {2, 4}},
		},
		{
			name:    "an epoch starting beyond the end goes whatever the cut",
			appends: []int32{1, 2}, assign: []EpochEntry{{3, 9}}, to: 12,
			want: []EpochEntry{{1, 0}, {2, 2}},
		},
		{
			name:    "the latest epoch holds records: cut at the end changes nothing",
			appends: []int32{1, 2, 2}, to: 6,
			want: []EpochEntry{{1, 0}, {2, 2}},
		},
		{
			name:    "the latest epoch holds records: cut past the end changes nothing",
			appends: []int32{1, 2, 2}, to: 100,
			want: []EpochEntry{{1, 0}, {2, 2}},
		},
		{
			name:   "empty log whose only epoch starts at 0",
			assign: []EpochEntry{{5, 0}}, to: 0,
			want: nil,
		},
		{
			name: "empty log without epochs",
			to:   3,
			want: nil,
		},
		{
			name:    "reset log whose only epoch starts at the new start",
			resetTo: 10, assign: []EpochEntry{{4, 10}}, to: 10,
			want: nil,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := partDir(t)
			clk := newClock()
			cfg := smallConfig()
			l, _ := openTestLog(t, dir, cfg, LogOptions{Now: clk.now})
			defer func() { l.Close() }()
			if tt.resetTo > 0 {
				if err := l.ResetTo(tt.resetTo); err != nil {
					t.Fatal(err)
				}
			}
			for _, e := range tt.appends {
				if _, err := l.Append(batchOf(clk.now().UnixMilli(), "r", 2), AppendOptions{LeaderEpoch: e}); err != nil {
					t.Fatal(err)
				}
			}
			for _, a := range tt.assign {
				// What a broker does when it becomes leader: the epoch
				// starts at the log end before any record is in it.
				if err := l.LeaderEpochs().Assign(a.Epoch, a.StartOffset); err != nil {
					t.Fatal(err)
				}
			}
			start, leo := l.LogStartOffset(), l.LogEndOffset()
			if tt.to < leo {
				t.Fatalf("bad case: cut %d is below the log end %d", tt.to, leo)
			}
			before := l.LeaderEpochs().Entries()
			fileBefore := readCheckpoint(t, dir)
			batches := readAll(t, l, start)

			if err := l.Truncate(tt.to); err != nil {
				t.Fatalf("Truncate(%d) at log end %d: %v", tt.to, leo, err)
			}

			if got := l.LeaderEpochs().Entries(); !sameEntries(got, tt.want) {
				t.Fatalf("epochs %v -> %v after Truncate(%d) at log end %d, want %v", before, got, tt.to, leo, tt.want)
			}
			fileAfter := readCheckpoint(t, dir)
			if got := checkpointEntries(t, fileAfter); !sameEntries(got, tt.want) {
				t.Fatalf("%s holds %v, want %v", LeaderEpochCheckpointFile, got, tt.want)
			}
			if sameEntries(before, tt.want) && !bytes.Equal(fileBefore, fileAfter) {
				t.Fatalf("nothing to drop, yet %s went from %q to %q", LeaderEpochCheckpointFile, fileBefore, fileAfter)
			}
			if l.LogStartOffset() != start || l.LogEndOffset() != leo {
				t.Fatalf("log [%d, %d) became [%d, %d)", start, leo, l.LogStartOffset(), l.LogEndOffset())
			}
			if after := readAll(t, l, start); !sameBatches(after, batches) {
				t.Fatalf("batches changed: %d before, %d after", len(batches), len(after))
			}

			opts := LogOptions{Now: clk.now, CleanShutdown: true, RecoveryPoint: l.RecoveryPoint(), LogStartOffset: start, HighWatermark: l.HighWatermark()}
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
			l, _ = openTestLog(t, dir, cfg, opts)
			if got := l.LeaderEpochs().Entries(); !sameEntries(got, tt.want) {
				t.Fatalf("reopened with epochs %v, want %v", got, tt.want)
			}
			if l.LogEndOffset() != leo {
				t.Fatalf("reopened with log end %d, want %d", l.LogEndOffset(), leo)
			}
		})
	}
}

// readCheckpoint returns the leader-epoch-checkpoint file's bytes (nil if
// there is none yet).
func readCheckpoint(t *testing.T, dir string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, LeaderEpochCheckpointFile))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func checkpointEntries(t *testing.T, data []byte) []EpochEntry {
	t.Helper()
	if data == nil {
		return nil
	}
	e, err := ParseLeaderEpochCheckpoint(data)
	if err != nil {
		t.Fatalf("%s: %v", LeaderEpochCheckpointFile, err)
	}
	return e
}

// sameEntries treats nil and empty alike.
func sameEntries(a, b []EpochEntry) bool {
	return len(a) == 0 && len(b) == 0 || reflect.DeepEqual(a, b)
}

func sameBatches(a, b []Batch) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !bytes.Equal(a[i], b[i]) {
			return false
		}
	}
	return true
}
