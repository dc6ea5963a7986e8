package broker

import (
	"bytes"
	"encoding/binary"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pierrec/lz4/v4"
	"github.com/raftka/raftka/storage"
	"github.com/raftka/raftka/storage/recordbatch"
	"github.com/twmb/franz-go/pkg/kerr"
)

// withRecords replaces a built batch's records by data under codec c,
// fixing length and CRC: a batch whose header a broker checking only
// headers accepts.
func withRecords(b []byte, c storage.Compression, data []byte) []byte {
	out := append(bytes.Clone(b[:storage.BatchHeaderSize]), data...)
	binary.BigEndian.PutUint32(out[8:], uint32(len(out)-12))
	attrs := binary.BigEndian.Uint16(out[21:])
	binary.BigEndian.PutUint16(out[21:], attrs&^7|uint16(c))
	binary.BigEndian.PutUint32(out[17:], storage.Batch(out).ComputeCRC())
	return out
}

func lz4Of(t *testing.T, raw []byte) []byte {
	var buf bytes.Buffer
	w := lz4.NewWriter(&buf)
	if _, err := w.Write(raw); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestProduceRefusesBadCompressedRecords: a batch with a valid header and
// CRC whose compressed records are garbage, or whose records lack keys on
// a compacted topic, is refused with Kafka's code, appends nothing, is
// counted by client id, and the connection goes on.
func TestProduceRefusesBadCompressedRecords(t *testing.T) {
	f := newPartFixture(t)
	id := f.topic("t", nil, []int32{1})
	cid := f.topic("compacted", map[string]string{"cleanup.policy": "compact"}, []int32{1})
	now := time.Now().UnixMilli()
	good := recordbatch.Build(now, keyed(0), keyed(1))
	garbage := withRecords(good, storage.CompressionLZ4, []byte("\x04\x22\x4d\x18 not an lz4 frame at all"))
	keyless := recordbatch.Build(now, keyed(0), recordbatch.Record{Value: []byte("v")}, recordbatch.Record{Value: []byte("w")})
	keyless = withRecords(keyless, storage.CompressionLZ4, lz4Of(t, keyless[storage.BatchHeaderSize:]))

	for _, acks := range []int16{1, -1} {
		got := f.produce(12, acks, "t", id, map[int32][]byte{0: garbage})[0]
		if got.ErrorCode != kerr.CorruptMessage.Code || got.BaseOffset != -1 || got.ErrorMessage == nil || !strings.Contains(*got.ErrorMessage, "lz4") {
			t.Fatalf("acks %d: garbage lz4 answered %d %v at %d", acks, got.ErrorCode, got.ErrorMessage, got.BaseOffset)
		}
		got = f.produce(12, acks, "compacted", cid, map[int32][]byte{0: bytes.Clone(keyless)})[0]
		if got.ErrorCode != kerr.InvalidRecord.Code || len(got.ErrorRecords) != 2 || got.ErrorRecords[0].RelativeOffset != 1 || got.ErrorRecords[1].RelativeOffset != 2 {
			t.Fatalf("acks %d: keyless records answered %d %+v", acks, got.ErrorCode, got.ErrorRecords)
		}
		const msg = "Compacted topic cannot accept message without key in topic partition compacted-0"
		if *got.ErrorRecords[0].ErrorMessage != msg || !strings.HasPrefix(*got.ErrorMessage, "One or more records have been rejected due to 2 record errors in total") {
			t.Fatalf("messages %q / %q", *got.ErrorRecords[0].ErrorMessage, *got.ErrorMessage)
		}
	}
	if n := f.srv.Counters().RefusedFor("corrupt_message", "raw-test"); n != 2 {
		t.Errorf("corrupt_message refusals for raw-test: %d, want 2", n)
	}
	if n := f.srv.Counters().RefusedFor("invalid_record", "raw-test"); n != 2 {
		t.Errorf("invalid_record refusals for raw-test: %d, want 2", n)
	}
	// Nothing was appended, and the same connection still produces.
	for _, tp := range []struct {
		topic string
		id    [16]byte
	}{{"t", id}, {"compacted", cid}} {
		got := f.produce(12, -1, tp.topic, tp.id, map[int32][]byte{0: bytes.Clone(good)})[0]
		if got.ErrorCode != 0 || got.BaseOffset != 0 {
			t.Fatalf("%s: good batch after refusals: error %d at %d, want 0 at 0", tp.topic, got.ErrorCode, got.BaseOffset)
		}
	}
}

func TestRefusalClientLabels(t *testing.T) {
	var r refusals
	if l, _ := r.client("app\xff"); l != "app?" {
		t.Errorf("invalid UTF-8 labelled %q", l)
	}
	if l, _ := r.client(strings.Repeat("x", 200)); len(l) != maxClientIDLabel {
		t.Errorf("long id labelled with %d bytes", len(l))
	}
	for i := range 2 * maxRefusalClients {
		r.client("client-" + strconv.Itoa(i))
	}
	if l, _ := r.client("one-more"); l != "other" || len(r.clients) > maxRefusalClients+1 {
		t.Errorf("label %q with %d clients tracked", l, len(r.clients))
	}
}
