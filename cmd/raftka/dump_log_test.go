package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/raftka/raftka/storage"
	"github.com/raftka/raftka/storage/recordbatch"
	"github.com/urfave/cli/v2"
)

// writeSegment writes a small log through the storage package and returns
// its partition directory.
func writeSegment(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "events-0")
	cfg := storage.DefaultConfig()
	cfg.IndexIntervalBytes = 64
	l, _, err := storage.OpenLog(dir, cfg, storage.LogOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 5; i++ {
		b := recordbatch.Build(1700000000000+int64(i),
			recordbatch.Record{Key: []byte("key"), Value: []byte("hello"), Headers: []recordbatch.Header{{Key: "h1", Value: []byte("v")}}},
			recordbatch.Record{Value: []byte("world")})
		if _, err := l.Append(b, storage.AppendOptions{LeaderEpoch: 7}); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	return dir
}

func runDump(t *testing.T, args ...string) (string, string, error) {
	t.Helper()
	app := newApp()
	var out, errOut bytes.Buffer
	app.Writer, app.ErrWriter = &out, &errOut
	app.ExitErrHandler = func(*cli.Context, error) {} // keep the test process alive
	err := app.Run(append([]string{"raftka", "dump-log"}, args...))
	return out.String(), errOut.String(), err
}

func TestDumpLogSegment(t *testing.T) {
	dir := writeSegment(t)
	seg := filepath.Join(dir, "00000000000000000000.log")
	out, _, err := runDump(t, "--print-data", seg)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"baseOffset: 0 lastOffset: 1 count: 2",
		"baseOffset: 8 lastOffset: 9 count: 2",
		"partitionLeaderEpoch: 7",
		"producerId: -1 producerEpoch: -1",
		"isTransactional: false isControl: false position: 0",
		"CreateTime: 1700000000004 MaxTimestamp: 1700000000004 timestampType: CreateTime",
		"compresscodec: none",
		"isvalid: true",
		"| offset: 0 CreateTime: 1700000000000 keySize: 3 valueSize: 5 sequence: -1 headerKeys: [h1] key: key payload: hello",
		"| offset: 1 CreateTime: 1700000000000 keySize: -1 valueSize: 5",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if n := strings.Count(out, "baseOffset:"); n != 5 {
		t.Errorf("%d batches printed, want 5", n)
	}
}

func TestDumpLogIndexes(t *testing.T) {
	dir := writeSegment(t)
	out, _, err := runDump(t, filepath.Join(dir, "00000000000000000000.index"), filepath.Join(dir, "00000000000000000000.timeindex"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "offset: 3 position: ") {
		t.Errorf("index entries missing:\n%s", out)
	}
	if !strings.Contains(out, "timestamp: 1700000000004 offset: 8") {
		t.Errorf("time index entries missing:\n%s", out)
	}
}

func TestDumpLogCorrupt(t *testing.T) {
	dir := writeSegment(t)
	seg := filepath.Join(dir, "00000000000000000000.log")
	data, _ := os.ReadFile(seg)
	data[93+storage.BatchHeaderSize+5] ^= 0xff // inside the second batch's records: CRC fails
	bad := filepath.Join(t.TempDir(), "00000000000000000000.log")
	os.WriteFile(bad, append(data, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x7f), 0o644)
	out, errOut, err := runDump(t, bad)
	if err == nil {
		t.Fatal("want a non-zero exit for a torn tail")
	}
	if !strings.Contains(out, "isvalid: false") {
		t.Errorf("the bad CRC is not reported:\n%s", out)
	}
	if !strings.Contains(errOut, bad) || !strings.Contains(errOut, "position "+itoa(len(data))) {
		t.Errorf("error does not name the file and position: %q", errOut)
	}
	for _, garbage := range [][]byte{{1, 2, 3}, bytes.Repeat([]byte{0xff}, 100), {}} {
		p := filepath.Join(t.TempDir(), "x.timeindex")
		os.WriteFile(p, garbage, 0o644)
		runDump(t, p) // must not panic
		p2 := filepath.Join(t.TempDir(), "00000000000000000000.log")
		os.WriteFile(p2, garbage, 0o644)
		runDump(t, p2)
	}
	if _, _, err := runDump(t, filepath.Join(t.TempDir(), "missing.log")); err == nil {
		t.Error("missing file: want an error")
	}
	if _, _, err := runDump(t, filepath.Join(dir, "leader-epoch-checkpoint")); err == nil {
		t.Error("unknown file type: want an error")
	}
}

func itoa(n int) string { return strconv.Itoa(n) }
