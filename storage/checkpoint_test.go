package storage

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

func TestOffsetCheckpointRoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), RecoveryPointCheckpointFile)
	got, err := ReadOffsetCheckpoint(path)
	if err != nil || len(got) != 0 {
		t.Fatalf("missing file: %v %v", got, err)
	}
	want := map[TopicPartition]int64{{"a", 0}: 5, {"a", 1}: 0, {"b.c-d_e", 12}: 1 << 40}
	if err := WriteOffsetCheckpoint(path, want); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(path)
	if string(data) != "0\n3\na 0 5\na 1 0\nb.c-d_e 12 1099511627776\n" {
		t.Fatalf("file text %q", data)
	}
	got, err = ReadOffsetCheckpoint(path)
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("got %v %v", got, err)
	}
	if _, err := os.Stat(path + ".tmp"); !os.IsNotExist(err) {
		t.Fatal("tmp file left behind")
	}
}

func TestParseCheckpointErrors(t *testing.T) {
	for _, tc := range []struct{ name, text string }{
		{"empty", ""},
		{"version 1", "1\n0\n"},
		{"no count", "0\n"},
		{"bad count", "0\nx\n"},
		{"negative count", "0\n-1\n"},
		{"too few", "0\n2\na 0 1\n"},
		{"too many", "0\n1\na 0 1\nb 0 2\n"},
		{"missing field", "0\n1\na 0\n"},
		{"bad partition", "0\n1\na x 1\n"},
		{"negative partition", "0\n1\na -1 1\n"},
		{"bad offset", "0\n1\na 0 1.5\n"},
		{"blank line", "0\n1\n\n"},
	} {
		if _, err := ParseOffsetCheckpoint([]byte(tc.text)); err == nil {
			t.Errorf("%s: no error", tc.name)
		}
	}
	path := filepath.Join(t.TempDir(), "cp")
	os.WriteFile(path, []byte("0\n9\n"), 0o644)
	if _, err := ReadOffsetCheckpoint(path); !errors.Is(err, ErrCorruptFile) || !bytes.Contains([]byte(err.Error()), []byte(path)) {
		t.Fatalf("want ErrCorruptFile naming the file, got %v", err)
	}
}

func TestPartitionMetadata(t *testing.T) {
	path := filepath.Join(t.TempDir(), PartitionMetadataFile)
	if _, ok, err := ReadPartitionMetadata(path); ok || err != nil {
		t.Fatal("missing file should be ok=false")
	}
	id := TopicID{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 255}
	if err := WritePartitionMetadata(path, id); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(path)
	if string(data) != "version: 0\ntopic_id: AQIDBAUGBwgJCgsMDQ4P_w\n" {
		t.Fatalf("text %q", data)
	}
	got, ok, err := ReadPartitionMetadata(path)
	if err != nil || !ok || got != id {
		t.Fatalf("got %v %v %v", got, ok, err)
	}
	for _, bad := range []string{"", "version: 1\ntopic_id: AQIDBAUGBwgJCgsMDQ4P_w\n", "version: 0\ntopic_id: short\n", "version: 0\n"} {
		if _, err := ParsePartitionMetadata([]byte(bad)); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

func FuzzParseOffsetCheckpoint(f *testing.F) {
	f.Add([]byte("0\n1\na 0 5\n"))
	f.Add([]byte(""))
	f.Add([]byte("0\n2\na 0 5\nb 1 -1\n"))
	f.Add([]byte("0\n1\na 0 5\ngarbage"))
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := ParseOffsetCheckpoint(data)
		if err != nil {
			return
		}
		again, err := ParseOffsetCheckpoint(FormatOffsetCheckpoint(m))
		if err != nil || !reflect.DeepEqual(again, m) {
			// Duplicate entries collapse in the map; that is the only
			// allowed difference and it still round-trips from the map.
			t.Fatalf("round trip: %v %v vs %v", err, again, m)
		}
	})
}

func FuzzParseLeaderEpochCheckpoint(f *testing.F) {
	f.Add([]byte("0\n2\n0 0\n3 100\n"))
	f.Add([]byte("0\n0\n"))
	f.Add([]byte("0\n2\n3 100\n1 200\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		es, err := ParseLeaderEpochCheckpoint(data)
		if err != nil {
			return
		}
		again, err := ParseLeaderEpochCheckpoint(FormatLeaderEpochCheckpoint(es))
		if err != nil || !reflect.DeepEqual(again, es) {
			t.Fatalf("round trip: %v %v vs %v", err, again, es)
		}
	})
}

func FuzzParsePartitionMetadata(f *testing.F) {
	f.Add([]byte("version: 0\ntopic_id: AQIDBAUGBwgJCgsMDQ4P_w\n"))
	f.Add([]byte("version: 0\ntopic_id: \n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		id, err := ParsePartitionMetadata(data)
		if err != nil {
			return
		}
		again, err := ParsePartitionMetadata(FormatPartitionMetadata(id))
		if err != nil || again != id {
			t.Fatalf("round trip: %v", err)
		}
	})
}
