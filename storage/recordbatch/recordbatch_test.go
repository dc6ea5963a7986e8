package recordbatch

import (
	"bytes"
	"testing"
)

func TestBuildDecodeRoundTrip(t *testing.T) {
	in := Batch{
		BaseOffset: 42, PartitionLeaderEpoch: 3, Transactional: true, BaseTimestamp: 1000,
		ProducerID: 7, ProducerEpoch: 1, BaseSequence: 5,
		Records: []Record{
			{Timestamp: 1000, OffsetDelta: 0, Key: []byte("k"), Value: []byte("v"), Headers: []Header{{Key: "a", Value: []byte("b")}, {Key: "n"}}},
			{Timestamp: 999, OffsetDelta: 1, Value: []byte{}},
		},
	}
	enc := in.Encode()
	out, err := Decode(enc)
	if err != nil {
		t.Fatal(err)
	}
	if out.BaseOffset != 42 || out.PartitionLeaderEpoch != 3 || !out.Transactional || out.MaxTimestamp != 1000 || out.LastOffsetDelta != 1 || out.ProducerID != 7 || out.BaseSequence != 5 {
		t.Fatalf("header %+v", out)
	}
	if len(out.Records) != 2 || out.Records[0].Key == nil || out.Records[1].Key != nil || out.Records[1].Value == nil || out.Records[0].Headers[1].Value != nil || out.Records[1].Timestamp != 999 {
		t.Fatalf("records %+v", out.Records)
	}
	if !bytes.Equal(out.Encode(), enc) {
		t.Fatal("re-encoding differs")
	}
	enc[len(enc)-1] ^= 1
	if _, err := Decode(enc); err == nil {
		t.Fatal("CRC damage not detected")
	}
}

func FuzzDecode(f *testing.F) {
	f.Add(Build(5, Record{Key: []byte("k"), Value: []byte("v")}))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) {
		b, err := Decode(data)
		if err != nil {
			return
		}
		again, err := Decode(b.Encode())
		if err != nil || len(again.Records) != len(b.Records) {
			t.Fatalf("round trip: %v", err)
		}
	})
}
