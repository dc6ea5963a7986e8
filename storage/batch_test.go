package storage

import (
	"encoding/binary"
	"errors"
	"testing"

	"github.com/raftka/raftka/storage/recordbatch"
)

func validBatch() []byte {
	return recordbatch.Build(1000,
		recordbatch.Record{Key: []byte("k1"), Value: []byte("v1"), Timestamp: 1000},
		recordbatch.Record{Key: nil, Value: []byte("v2"), Timestamp: 1005, Headers: []recordbatch.Header{{Key: "h", Value: []byte("x")}, {Key: "n", Value: nil}}},
		recordbatch.Record{Key: []byte("k3"), Value: nil, Timestamp: 1002},
	)
}

// mutate returns a copy of a valid batch changed by f, with the CRC fixed
// afterwards if fixCRC.
func mutate(f func(b []byte) []byte, fixCRC bool) []byte {
	b := f(append([]byte(nil), validBatch()...))
	if fixCRC && len(b) >= BatchHeaderSize {
		Batch(b).updateCRC()
	}
	return b
}

func TestBatchValidate(t *testing.T) {
	put32 := func(off int, v uint32) func([]byte) []byte {
		return func(b []byte) []byte { binary.BigEndian.PutUint32(b[off:], v); return b }
	}
	put16 := func(off int, v uint16) func([]byte) []byte {
		return func(b []byte) []byte { binary.BigEndian.PutUint16(b[off:], v); return b }
	}
	put64 := func(off int, v uint64) func([]byte) []byte {
		return func(b []byte) []byte { binary.BigEndian.PutUint64(b[off:], v); return b }
	}
	tests := []struct {
		name   string
		batch  []byte
		want   error // nil for valid
		stored error // for ValidateStored, when different
	}{
		{"valid", validBatch(), nil, nil},
		{"short", validBatch()[:40], ErrCorruptBatch, ErrCorruptBatch},
		{"length too long", mutate(put32(offBatchLength, 5000), false), ErrCorruptBatch, ErrCorruptBatch},
		{"truncated tail", validBatch()[:len(validBatch())-1], ErrCorruptBatch, ErrCorruptBatch},
		{"magic 1", mutate(func(b []byte) []byte { b[offMagic] = 1; return b }, false), ErrCorruptBatch, ErrCorruptBatch},
		{"crc flipped", mutate(func(b []byte) []byte { b[len(b)-1] ^= 1; return b }, false), ErrCorruptBatch, ErrCorruptBatch},
		{"codec 7", mutate(put16(offAttributes, 7), true), ErrCorruptBatch, ErrCorruptBatch},
		{"unknown attribute bit", mutate(put16(offAttributes, 0x100), true), ErrCorruptBatch, ErrCorruptBatch},
		{"count above deltas", mutate(put32(offRecordCount, 4), true), ErrInvalidRecord, ErrCorruptBatch},
		{"count below deltas", mutate(put32(offRecordCount, 2), true), ErrInvalidRecord, ErrCorruptBatch},
		{"lastOffsetDelta grown", mutate(put32(offLastDelta, 5), true), ErrInvalidRecord, nil},
		{"negative lastOffsetDelta", mutate(put32(offLastDelta, 0xffffffff), true), ErrCorruptBatch, ErrCorruptBatch},
		{"control from client", mutate(func(b []byte) []byte {
			binary.BigEndian.PutUint16(b[offAttributes:], attrControl)
			binary.BigEndian.PutUint64(b[offProducerID:], 7)
			binary.BigEndian.PutUint16(b[offProducerEpoch:], 0)
			return b
		}, true), ErrInvalidRecord, nil},
		{"transactional without pid", mutate(put16(offAttributes, attrTransactional), true), ErrInvalidRecord, ErrInvalidRecord},
		{"pid with negative epoch", mutate(put64(offProducerID, 9), true), ErrInvalidRecord, ErrInvalidRecord},
		{"pid -2", mutate(put64(offProducerID, 0xfffffffffffffffe), true), ErrInvalidRecord, ErrInvalidRecord},
		{"timestamp -2", mutate(put64(offBaseTimestamp, 0xfffffffffffffffe), true), ErrInvalidTimestamp, ErrInvalidTimestamp},
		{"record length garbage", mutate(func(b []byte) []byte { b[BatchHeaderSize] = 0x7f; return b }, true), ErrCorruptBatch, ErrCorruptBatch},
		{"trailing bytes", mutate(func(b []byte) []byte {
			b = append(b, 0)
			binary.BigEndian.PutUint32(b[offBatchLength:], uint32(len(b)-batchOverhead))
			return b
		}, true), ErrInvalidRecord, ErrCorruptBatch},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := Batch(tc.batch).Validate(); !errors.Is(err, tc.want) || (tc.want == nil) != (err == nil) {
				t.Errorf("Validate: got %v, want %v", err, tc.want)
			}
			if _, err := Batch(tc.batch).ValidateStored(); !errors.Is(err, tc.stored) || (tc.stored == nil) != (err == nil) {
				t.Errorf("ValidateStored: got %v, want %v", err, tc.stored)
			}
		})
	}
}

func TestBatchInfoAndPatch(t *testing.T) {
	b := Batch(validBatch())
	info, err := b.Validate()
	if err != nil {
		t.Fatal(err)
	}
	if info.MaxTimestamp != 1005 || info.MaxTimestampDelta != 1 || info.MinTimestamp != 1000 {
		t.Fatalf("info %+v", info)
	}
	crc := b.CRC()
	b.SetBaseOffset(1 << 40)
	b.SetPartitionLeaderEpoch(77)
	if b.CRC() != crc || !b.CRCValid() {
		t.Fatal("base offset and epoch must lie outside the CRC")
	}
	if b.BaseOffset() != 1<<40 || b.LastOffset() != 1<<40+2 || b.PartitionLeaderEpoch() != 77 {
		t.Fatal("patched fields not read back")
	}
	b.SetLogAppendTime(5555)
	if !b.LogAppendTime() || b.MaxTimestamp() != 5555 || !b.CRCValid() {
		t.Fatal("SetLogAppendTime must set the flag, the timestamp and a valid CRC")
	}
	if _, err := b.ValidateStored(); err != nil {
		t.Fatal(err)
	}
	dec, err := recordbatch.Decode(b)
	if err != nil || len(dec.Records) != 3 || string(dec.Records[1].Headers[0].Value) != "x" || dec.Records[2].Value != nil {
		t.Fatalf("decode after patch: %+v %v", dec, err)
	}
}

func TestFirstRecordFrom(t *testing.T) {
	b := Batch(validBatch())
	for _, tc := range []struct {
		ts, minOffset int64
		want, wantTs  int64
		ok            bool
	}{
		{0, 0, 0, 1000, true}, {1000, 0, 0, 1000, true}, {1001, 0, 1, 1005, true}, {1005, 0, 1, 1005, true}, {1006, 0, 0, 0, false},
		{0, 1, 1, 1005, true}, // records below minOffset (the log start) are passed over
	} {
		got, gotTs, ok := b.firstRecordFrom(tc.ts, tc.minOffset)
		if got != tc.want || gotTs != tc.wantTs || ok != tc.ok {
			t.Errorf("ts %d from %d: got %d@%d %v, want %d@%d %v", tc.ts, tc.minOffset, got, gotTs, ok, tc.want, tc.wantTs, tc.ok)
		}
	}
}

func TestReadVarint(t *testing.T) {
	for _, v := range []int64{0, 1, -1, 63, -64, 64, 1 << 40, -(1 << 62), 1<<63 - 1, -1 << 63} {
		buf := binary.AppendVarint(nil, v)
		got, n := readVarint(buf)
		if got != v || n != len(buf) {
			t.Errorf("%d: got %d (%d bytes)", v, got, n)
		}
		if _, n := readVarint(buf[:len(buf)-1]); n != 0 {
			t.Errorf("%d truncated: n=%d", v, n)
		}
	}
	if _, n := readVarint([]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01}); n != -1 {
		t.Errorf("overflow: n=%d", n)
	}
}

// FuzzBatchValidate: any bytes either fail validation or are a batch whose
// records decode and whose framing round-trips; never a panic.
func FuzzBatchValidate(f *testing.F) {
	f.Add(validBatch())
	f.Add([]byte{})
	f.Add(validBatch()[:61])
	f.Add(append(validBatch(), 1, 2, 3))
	f.Add(recordbatch.BuildValues(1, []byte("a")))
	f.Fuzz(func(t *testing.T, data []byte) {
		b := Batch(data)
		_, err1 := b.Validate()
		_, err2 := b.ValidateStored()
		if err1 == nil && err2 != nil {
			t.Fatalf("client-valid but not stored-valid: %v", err2)
		}
		if err2 != nil {
			return
		}
		if !b.CRCValid() || int(b.BatchLength())+batchOverhead != len(data) {
			t.Fatal("accepted batch with a bad CRC or length")
		}
		if b.Compression() == CompressionNone {
			dec, err := recordbatch.Decode(data)
			if err != nil {
				t.Fatalf("validated batch does not decode: %v", err)
			}
			if int32(len(dec.Records)) != b.RecordCount() {
				t.Fatal("record count mismatch")
			}
		}
	})
}
