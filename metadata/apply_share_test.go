package metadata

import (
	"fmt"
	"testing"
)

// manyTopics builds an image with n topics of 3 partitions and g groups.
func manyTopics(tb testing.TB, n, g int) *Image {
	tb.Helper()
	recs := make([]Record, 0, n+g)
	for i := range n {
		id := [16]byte{1, byte(i >> 16), byte(i >> 8), byte(i)}
		recs = append(recs, &CreateTopic{Name: fmt.Sprintf("topic-%d", i), ID: id, Partitions: NewPartitions(0, [][]int32{{1, 2, 3}, {2, 3, 1}, {3, 1, 2}}, func(int32) bool { return true })})
	}
	for i := range g {
		recs = append(recs, &CommitOffsets{Group: fmt.Sprintf("group-%d", i), Offsets: []OffsetCommit{{Topic: "topic-0", Offset: int64(i)}}})
	}
	img, d := NewImage().Apply(recs)
	if len(d.Skipped) != 0 {
		tb.Fatal(d.Skipped[0].Err)
	}
	return img
}

// Apply shares what it does not touch: the untouched topics and groups are
// the same objects, and all but the touched shards are the same maps.
func TestApplySharesUntouched(t *testing.T) {
	img := manyTopics(t, 500, 500)
	id := [16]byte{1, 0, 0, 7}
	next, _ := mustApply(t, img,
		&PartitionChange{TopicID: id, Partition: 1, Leader: 3},
		&CommitOffsets{Group: "group-9", Offsets: []OffsetCommit{{Topic: "topic-7", Offset: 99}}},
	)
	sameShards := 0
	for i := range img.topics.shards {
		if fmt.Sprintf("%p", img.topics.shards[i]) == fmt.Sprintf("%p", next.topics.shards[i]) {
			sameShards++
		}
	}
	if sameShards != shardCount-1 {
		t.Fatalf("%d of %d topic shards shared, want all but one", sameShards, shardCount)
	}
	sameGroupShards := 0
	for i := range img.groups.shards {
		if fmt.Sprintf("%p", img.groups.shards[i]) == fmt.Sprintf("%p", next.groups.shards[i]) {
			sameGroupShards++
		}
	}
	if sameGroupShards != shardCount-1 {
		t.Fatalf("%d of %d group shards shared", sameGroupShards, shardCount)
	}
	for i := range 500 {
		oid := [16]byte{1, byte(i >> 16), byte(i >> 8), byte(i)}
		a, _ := img.topics.get(oid, hashID(oid))
		b, _ := next.topics.get(oid, hashID(oid))
		if (a == b) != (oid != id) {
			t.Fatalf("topic %d shared=%v", i, a == b)
		}
	}
	if fmt.Sprintf("%p", img.brokers) != fmt.Sprintf("%p", next.brokers) {
		t.Fatal("brokers map copied though no broker changed")
	}
}

func BenchmarkApplyPartitionChange(b *testing.B) {
	for _, n := range []int{100, 10000} {
		b.Run(fmt.Sprintf("topics=%d", n), func(b *testing.B) {
			img := manyTopics(b, n, n)
			id := [16]byte{1, 0, 0, 7}
			b.ReportAllocs()
			for b.Loop() {
				next, d := img.Apply([]Record{&PartitionChange{TopicID: id, Partition: 1, Leader: 3}})
				if len(d.Skipped) != 0 {
					b.Fatal(d.Skipped[0].Err)
				}
				_ = next
			}
		})
	}
}

func BenchmarkApplyCommitOffsets(b *testing.B) {
	for _, n := range []int{100, 10000} {
		b.Run(fmt.Sprintf("groups=%d", n), func(b *testing.B) {
			img := manyTopics(b, 10, n)
			rec := []Record{&CommitOffsets{Group: "group-5", Offsets: []OffsetCommit{{Topic: "topic-1", Partition: 2, Offset: 7}}}}
			b.ReportAllocs()
			for b.Loop() {
				img.Apply(rec)
			}
		})
	}
}

func BenchmarkEncodeDecode(b *testing.B) {
	recs := sampleRecords()
	b.ReportAllocs()
	for b.Loop() {
		enc, err := EncodeRecords(recs)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := DecodeRecords(enc); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkSnapshotRecords(b *testing.B) {
	img := manyTopics(b, 10000, 1000)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := EncodeRecords(img.Records()); err != nil {
			b.Fatal(err)
		}
	}
}
