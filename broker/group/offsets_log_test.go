package group

import (
	"bytes"
	"encoding/binary"
	"testing"

	"github.com/raftka/raftka/metadata"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// be builds big-endian bytes the way Kafka's schemas lay them out (int16
// string lengths, fixed-width integers), independently of kmsg's encoder.
type be struct{ bytes.Buffer }

func (b *be) i16(v int16) *be { _ = binary.Write(&b.Buffer, binary.BigEndian, v); return b }
func (b *be) i32(v int32) *be { _ = binary.Write(&b.Buffer, binary.BigEndian, v); return b }
func (b *be) i64(v int64) *be { _ = binary.Write(&b.Buffer, binary.BigEndian, v); return b }
func (b *be) str(s string) *be {
	b.i16(int16(len(s)))
	b.WriteString(s)
	return b
}

// The bytes Kafka's OffsetCommitKey v1 and OffsetCommitValue v3 schemas
// define (group, topic, partition; offset, leaderEpoch, metadata,
// commitTimestamp), which Burrow's decodeOffsetKeyV0/decodeOffsetValueV3 read.
func TestOffsetCommitRecordBytes(t *testing.T) {
	r := OffsetCommitRecord("g1", metadata.TopicPartition{Topic: "orders", Partition: 7},
		metadata.OffsetAndMetadata{Offset: 42, LeaderEpoch: 3, Metadata: "m", CommitTimeMs: 1700000000123})
	wantKey := new(be).i16(1).str("g1").str("orders").i32(7).Bytes()
	wantValue := new(be).i16(3).i64(42).i32(3).str("m").i64(1700000000123).Bytes()
	if !bytes.Equal(r.Key, wantKey) {
		t.Errorf("key % x, want % x", r.Key, wantKey)
	}
	if !bytes.Equal(r.Value, wantValue) {
		t.Errorf("value % x, want % x", r.Value, wantValue)
	}
	var k kmsg.OffsetCommitKey
	var v kmsg.OffsetCommitValue
	if err := k.ReadFrom(r.Key); err != nil {
		t.Fatal(err)
	}
	if err := v.ReadFrom(r.Value); err != nil {
		t.Fatal(err)
	}
	if k.Group != "g1" || k.Topic != "orders" || k.Partition != 7 || v.Offset != 42 || v.LeaderEpoch != 3 || v.Metadata != "m" || v.CommitTimestamp != 1700000000123 {
		t.Errorf("decoded %+v %+v", k, v)
	}
	tomb := OffsetTombstone("g1", metadata.TopicPartition{Topic: "orders", Partition: 7})
	if !bytes.Equal(tomb.Key, wantKey) || tomb.Value != nil {
		t.Errorf("tombstone %+v", tomb)
	}
}

// GroupMetadataKey v2 (group) and GroupMetadataValue v3: protocolType,
// generation, protocol (nullable), leader (nullable), currentStateTimestamp,
// members (memberId, groupInstanceId nullable, clientId, clientHost,
// rebalanceTimeout, sessionTimeout, subscription, assignment).
func TestGroupMetadataRecordBytes(t *testing.T) {
	gen := metadata.GroupGeneration{
		Group: "g", Generation: 5, ProtocolType: "consumer", Protocol: "range", Leader: "m1",
		Members:          []metadata.GroupMember{{MemberID: "m1", InstanceID: "i1"}, {MemberID: "m2"}},
		StateTimestampMs: 99,
	}
	r := GroupMetadataRecord(gen)
	wantKey := new(be).i16(2).str("g").Bytes()
	w := new(be).i16(3).str("consumer").i32(5).str("range").str("m1").i64(99).i32(2)
	w.str("m1").str("i1").str("").str("").i32(-1).i32(0).i32(0).i32(0)
	w.str("m2").i16(-1).str("").str("").i32(-1).i32(0).i32(0).i32(0)
	if !bytes.Equal(r.Key, wantKey) {
		t.Errorf("key % x, want % x", r.Key, wantKey)
	}
	if !bytes.Equal(r.Value, w.Bytes()) {
		t.Errorf("value\n% x\nwant\n% x", r.Value, w.Bytes())
	}
	var v kmsg.GroupMetadataValue
	if err := v.ReadFrom(r.Value); err != nil {
		t.Fatal(err)
	}
	if v.Generation != 5 || *v.Protocol != "range" || *v.Leader != "m1" || len(v.Members) != 2 || *v.Members[0].InstanceID != "i1" || v.Members[1].InstanceID != nil {
		t.Errorf("decoded %+v", v)
	}

	empty := GroupMetadataRecord(metadata.GroupGeneration{Group: "g", Generation: 6, ProtocolType: "consumer"})
	we := new(be).i16(3).str("consumer").i32(6).i16(-1).i16(-1).i64(-1).i32(0).Bytes()
	if !bytes.Equal(empty.Value, we) {
		t.Errorf("empty group value % x, want % x", empty.Value, we)
	}
	if tomb := GroupTombstone("g"); !bytes.Equal(tomb.Key, wantKey) || tomb.Value != nil {
		t.Errorf("tombstone %+v", tomb)
	}
}

func apply(t *testing.T, img *metadata.Image, recs ...metadata.Record) *metadata.Image {
	t.Helper()
	next, d := img.Apply(recs)
	if len(d.Skipped) > 0 {
		t.Fatalf("skipped %+v", d.Skipped)
	}
	return next
}

type decoded struct {
	kind      string // "offset" or "group"
	group     string
	topic     string
	partition int32
	offset    int64
	gen       int32
	tombstone bool
}

func decodeAll(t *testing.T, recs []OffsetsRecord) []decoded {
	t.Helper()
	var out []decoded
	for _, r := range recs {
		ver := int16(binary.BigEndian.Uint16(r.Key))
		switch ver {
		case 0, 1:
			var k kmsg.OffsetCommitKey
			if err := k.ReadFrom(r.Key); err != nil {
				t.Fatal(err)
			}
			d := decoded{kind: "offset", group: k.Group, topic: k.Topic, partition: k.Partition, tombstone: r.Value == nil}
			if r.Value != nil {
				var v kmsg.OffsetCommitValue
				if err := v.ReadFrom(r.Value); err != nil {
					t.Fatal(err)
				}
				d.offset = v.Offset
			}
			out = append(out, d)
		case 2:
			var k kmsg.GroupMetadataKey
			if err := k.ReadFrom(r.Key); err != nil {
				t.Fatal(err)
			}
			d := decoded{kind: "group", group: k.Group, tombstone: r.Value == nil}
			if r.Value != nil {
				var v kmsg.GroupMetadataValue
				if err := v.ReadFrom(r.Value); err != nil {
					t.Fatal(err)
				}
				d.gen = v.Generation
			}
			out = append(out, d)
		default:
			t.Fatalf("key version %d", ver)
		}
	}
	return out
}

func TestOffsetsDiff(t *testing.T) {
	const n = 4
	// Two groups in different slots, found by the hash.
	ga, gb := "group-a", "group-b"
	for i := 0; Slot(gb, n) == Slot(ga, n); i++ {
		gb = "group-b" + string(rune('a'+i))
	}
	sa, sb := Slot(ga, n), Slot(gb, n)
	both := map[int32]bool{sa: true, sb: true}

	base := apply(t, metadata.NewImage(),
		&metadata.CommitOffsets{Group: ga, Offsets: []metadata.OffsetCommit{
			{Topic: "t", Partition: 0, Offset: 10, LeaderEpoch: -1, CommitTimeMs: 1},
			{Topic: "t", Partition: 1, Offset: 11, LeaderEpoch: -1, CommitTimeMs: 1},
		}},
		&metadata.GroupGeneration{Group: ga, Generation: 1, ProtocolType: "consumer", Protocol: "range", Leader: "m",
			Members: []metadata.GroupMember{{MemberID: "m"}}, StateTimestampMs: 1},
		&metadata.CommitOffsets{Group: gb, Offsets: []metadata.OffsetCommit{{Topic: "u", Partition: 0, Offset: 5, LeaderEpoch: -1, CommitTimeMs: 1}}},
	)

	t.Run("full snapshot", func(t *testing.T) {
		got := decodeAll(t, OffsetsDiff(nil, base, nil, both, n)[sa])
		want := []decoded{
			{kind: "offset", group: ga, topic: "t", partition: 0, offset: 10},
			{kind: "offset", group: ga, topic: "t", partition: 1, offset: 11},
			{kind: "group", group: ga, gen: 1},
		}
		if !equalDecoded(got, want) {
			t.Errorf("slot %d: %+v, want %+v", sa, got, want)
		}
		if got := decodeAll(t, OffsetsDiff(nil, base, nil, both, n)[sb]); len(got) != 1 || got[0].offset != 5 {
			t.Errorf("slot %d: %+v", sb, got)
		}
	})
	t.Run("only led slots", func(t *testing.T) {
		out := OffsetsDiff(nil, base, nil, map[int32]bool{sb: true}, n)
		if len(out[sa]) != 0 || len(out[sb]) != 1 {
			t.Errorf("%+v", out)
		}
	})
	t.Run("changes", func(t *testing.T) {
		next, d := base.Apply([]metadata.Record{
			&metadata.CommitOffsets{Group: ga, Offsets: []metadata.OffsetCommit{{Topic: "t", Partition: 0, Offset: 20, LeaderEpoch: -1, CommitTimeMs: 2}}},
			&metadata.DeleteOffsets{Group: ga, Partitions: []metadata.TopicPartition{{Topic: "t", Partition: 1}}},
			&metadata.GroupGeneration{Group: ga, Generation: 2, ProtocolType: "consumer", StateTimestampMs: 2},
			&metadata.DeleteGroup{Group: gb},
		})
		for _, groups := range [][]string{DeltaGroups(d), nil} {
			out := OffsetsDiff(base, next, groups, both, n)
			got := decodeAll(t, out[sa])
			want := []decoded{
				{kind: "offset", group: ga, topic: "t", partition: 0, offset: 20},
				{kind: "offset", group: ga, topic: "t", partition: 1, tombstone: true},
				{kind: "group", group: ga, gen: 2},
			}
			if !equalDecoded(got, want) {
				t.Errorf("groups %v slot %d: %+v, want %+v", groups, sa, got, want)
			}
			got = decodeAll(t, out[sb])
			want = []decoded{{kind: "offset", group: gb, topic: "u", partition: 0, tombstone: true}}
			if !equalDecoded(got, want) {
				t.Errorf("groups %v slot %d: %+v, want %+v", groups, sb, got, want)
			}
		}
	})
	t.Run("unchanged writes nothing", func(t *testing.T) {
		if out := OffsetsDiff(base, base, nil, both, n); len(out) != 0 {
			t.Errorf("%+v", out)
		}
		if out := OffsetsDiff(base, base, []string{}, both, n); len(out) != 0 {
			t.Errorf("%+v", out)
		}
	})
}

func equalDecoded(a, b []decoded) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// Any names, metadata and numbers encode to records Kafka's schemas (as
// kmsg decodes them) read back exactly.
func FuzzOffsetsRecords(f *testing.F) {
	f.Add("g", "t", int32(0), int64(0), int32(-1), "", int64(0), int32(1), "m", "i")
	f.Add("grüppe\x00", "", int32(-1), int64(-1), int32(5), "meta\xff", int64(1<<62), int32(0), "", "")
	f.Fuzz(func(t *testing.T, g, topic string, part int32, off int64, epoch int32, md string, ts int64, gen int32, member, inst string) {
		if len(g) > 0x7fff || len(topic) > 0x7fff || len(md) > 0x7fff || len(member) > 0x7fff || len(inst) > 0x7fff {
			t.Skip("longer than an int16 string")
		}
		o := metadata.OffsetAndMetadata{Offset: off, LeaderEpoch: epoch, Metadata: md, CommitTimeMs: ts}
		r := OffsetCommitRecord(g, metadata.TopicPartition{Topic: topic, Partition: part}, o)
		var k kmsg.OffsetCommitKey
		var v kmsg.OffsetCommitValue
		if err := k.ReadFrom(r.Key); err != nil {
			t.Fatal(err)
		}
		if err := v.ReadFrom(r.Value); err != nil {
			t.Fatal(err)
		}
		if k.Version != 1 || k.Group != g || k.Topic != topic || k.Partition != part ||
			v.Version != 3 || v.Offset != off || v.LeaderEpoch != epoch || v.Metadata != md || v.CommitTimestamp != ts {
			t.Fatalf("round trip: %+v %+v", k, v)
		}
		gr := GroupMetadataRecord(metadata.GroupGeneration{Group: g, Generation: gen, ProtocolType: topic, Protocol: md, Leader: member,
			Members: []metadata.GroupMember{{MemberID: member, InstanceID: inst}}, StateTimestampMs: ts})
		var gk kmsg.GroupMetadataKey
		var gv kmsg.GroupMetadataValue
		if err := gk.ReadFrom(gr.Key); err != nil {
			t.Fatal(err)
		}
		if err := gv.ReadFrom(gr.Value); err != nil {
			t.Fatal(err)
		}
		if gk.Group != g || gv.Generation != gen || gv.ProtocolType != topic || len(gv.Members) != 1 || gv.Members[0].MemberID != member {
			t.Fatalf("group round trip: %+v %+v", gk, gv)
		}
	})
}
