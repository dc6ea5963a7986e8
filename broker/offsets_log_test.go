package broker

import (
	"errors"
	"testing"
	"time"

	"github.com/raftka/raftka/broker/group"
	"github.com/raftka/raftka/metadata"
	"github.com/raftka/raftka/storage/recordbatch"
	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kmsg"
)

type offsetsAppends struct {
	fail    error
	written map[int32][]recordbatch.Record
}

func (a *offsetsAppends) append(slot int32, batch []byte) error {
	if a.fail != nil {
		return a.fail
	}
	b, err := recordbatch.Decode(batch)
	if err != nil {
		return err
	}
	a.written[slot] = append(a.written[slot], b.Records...)
	return nil
}

// take returns and forgets what was written to slot, as "offset:<group>/
// <topic>/<partition>=<offset>", "offset:...=tombstone", "group:<g>=<gen>".
func (a *offsetsAppends) take(t *testing.T, slot int32) []string {
	t.Helper()
	var out []string
	for _, r := range a.written[slot] {
		var k kmsg.OffsetCommitKey
		var gk kmsg.GroupMetadataKey
		switch {
		case r.Key[1] == 2:
			if err := gk.ReadFrom(r.Key); err != nil {
				t.Fatal(err)
			}
			s := "group:" + gk.Group + "="
			if r.Value == nil {
				s += "tombstone"
			} else {
				var v kmsg.GroupMetadataValue
				if err := v.ReadFrom(r.Value); err != nil {
					t.Fatal(err)
				}
				s += itoa(int64(v.Generation))
			}
			out = append(out, s)
		default:
			if err := k.ReadFrom(r.Key); err != nil {
				t.Fatal(err)
			}
			s := "offset:" + k.Group + "/" + k.Topic + "/" + itoa(int64(k.Partition)) + "="
			if r.Value == nil {
				s += "tombstone"
			} else {
				var v kmsg.OffsetCommitValue
				if err := v.ReadFrom(r.Value); err != nil {
					t.Fatal(err)
				}
				s += itoa(v.Offset)
			}
			out = append(out, s)
		}
	}
	delete(a.written, slot)
	return out
}

func itoa(n int64) string {
	if n == 0 {
		return "0"
	}
	var b []byte
	neg := n < 0
	if neg {
		n = -n
	}
	for ; n > 0; n /= 10 {
		b = append([]byte{byte('0' + n%10)}, b...)
	}
	if neg {
		b = append([]byte{'-'}, b...)
	}
	return string(b)
}

func sameStrings(a, b []string) bool {
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

var offsetsTopicID = [16]byte{0xc0}

// The writer on broker 1: a slot it comes to lead is written in full,
// later images only as they change it, nothing for slots led elsewhere; a
// failed append is made good by the next image.
func TestOffsetsLog(t *testing.T) {
	const group1 = "g" // one slot: the topic below has a single partition
	apps := &offsetsAppends{written: map[int32][]recordbatch.Record{}}
	now := time.UnixMilli(1_000_000)
	w := newOffsetsLog(1, apps.append, zerolog.Nop(), func() time.Time { return now })

	img, _ := metadata.NewImage().Apply([]metadata.Record{
		&metadata.CommitOffsets{Group: group1, Offsets: []metadata.OffsetCommit{{Topic: "t", Partition: 0, Offset: 3, LeaderEpoch: -1, CommitTimeMs: 5}}},
	})
	w.Apply(img, nil, true)
	if len(apps.written) != 0 {
		t.Fatalf("wrote %v before the offsets topic exists", apps.written)
	}

	// The slot is created led by broker 2: nothing to write here.
	img2, d := img.Apply([]metadata.Record{&metadata.CreateTopic{Name: group.OffsetsTopic, ID: offsetsTopicID,
		Configs:    map[string]string{"cleanup.policy": "compact"},
		Partitions: []metadata.PartitionRegistration{{Partition: 0, Replicas: []int32{2, 1}, ISR: []int32{2, 1}, Leader: 2}}}})
	w.Apply(img2, d, false)
	if len(apps.written) != 0 {
		t.Fatalf("wrote %v for a slot led by broker 2", apps.written)
	}

	// Broker 1 takes the slot over: the full state.
	img3, d := img2.Apply([]metadata.Record{&metadata.PartitionChange{TopicID: offsetsTopicID, Partition: 0, Leader: 1}})
	w.Apply(img3, d, false)
	if got, want := apps.take(t, 0), []string{"offset:g/t/0=3"}; !sameStrings(got, want) {
		t.Fatalf("takeover wrote %v, want %v", got, want)
	}

	// A commit and a generation: only what changed.
	img4, d := img3.Apply([]metadata.Record{
		&metadata.CommitOffsets{Group: group1, Offsets: []metadata.OffsetCommit{{Topic: "t", Partition: 1, Offset: 9, LeaderEpoch: -1, CommitTimeMs: 6}}},
		&metadata.GroupGeneration{Group: group1, Generation: 1, ProtocolType: "consumer", Protocol: "range", Leader: "m", Members: []metadata.GroupMember{{MemberID: "m"}}},
	})
	w.Apply(img4, d, false)
	if got, want := apps.take(t, 0), []string{"offset:g/t/1=9", "group:g=1"}; !sameStrings(got, want) {
		t.Fatalf("commit wrote %v, want %v", got, want)
	}

	// An append fails; the next image writes what the log lacks since the
	// last image it was written up to, the missed tombstone included.
	apps.fail = errors.New("not leader")
	img5, d := img4.Apply([]metadata.Record{&metadata.DeleteOffsets{Group: group1, Partitions: []metadata.TopicPartition{{Topic: "t", Partition: 0}}}})
	w.Apply(img5, d, false)
	apps.fail = nil
	img6, d := img5.Apply([]metadata.Record{&metadata.CommitOffsets{Group: group1, Offsets: []metadata.OffsetCommit{{Topic: "t", Partition: 1, Offset: 10, LeaderEpoch: -1, CommitTimeMs: 7}}}})
	w.Apply(img6, d, false)
	if got, want := apps.take(t, 0), []string{"offset:g/t/0=tombstone", "offset:g/t/1=10"}; !sameStrings(got, want) {
		t.Fatalf("after a failed append wrote %v, want %v", got, want)
	}

	// Or, with no new image, Retry does it.
	apps.fail = errors.New("not leader")
	img6r, d := img6.Apply([]metadata.Record{&metadata.CommitOffsets{Group: group1, Offsets: []metadata.OffsetCommit{{Topic: "t", Partition: 2, Offset: 4, LeaderEpoch: -1, CommitTimeMs: 7}}}})
	w.Apply(img6r, d, false)
	if !w.Pending() {
		t.Fatal("a failed append left nothing pending")
	}
	w.Retry()
	apps.fail = nil
	if !w.Pending() {
		t.Fatal("a failed retry left nothing pending")
	}
	w.Retry()
	if got, want := apps.take(t, 0), []string{"offset:g/t/2=4"}; !sameStrings(got, want) {
		t.Fatalf("retry wrote %v, want %v", got, want)
	}
	if w.Pending() {
		t.Fatal("pending after a successful retry")
	}
	w.Retry()
	if len(apps.written) != 0 {
		t.Fatalf("a retry with nothing pending wrote %v", apps.written)
	}
	img6 = img6r

	// Images taken together (no delta): every group compared, only the
	// changes written.
	img6b, _ := img6.Apply([]metadata.Record{&metadata.CommitOffsets{Group: group1, Offsets: []metadata.OffsetCommit{{Topic: "t", Partition: 1, Offset: 11, LeaderEpoch: -1, CommitTimeMs: 7}}}})
	img6c, _ := img6b.Apply([]metadata.Record{&metadata.CommitOffsets{Group: "other", Offsets: []metadata.OffsetCommit{{Topic: "t", Partition: 0, Offset: 1, LeaderEpoch: -1, CommitTimeMs: 7}}}})
	w.Apply(img6c, nil, true)
	if got, want := apps.take(t, 0), []string{"offset:g/t/1=11", "offset:other/t/0=1"}; !sameStrings(got, want) {
		t.Fatalf("coalesced images wrote %v, want %v", got, want)
	}
	img6 = img6c

	// A new leader epoch (leadership lost and regained between two
	// images): the slot is written in full again.
	img6d, d := img6.Apply([]metadata.Record{&metadata.PartitionChange{TopicID: offsetsTopicID, Partition: 0, Leader: 1, ISR: []int32{1}}})
	if reg, _ := img6d.Partition(offsetsTopicID, 0); reg.LeaderEpoch == 0 {
		t.Fatalf("the ISR change did not move the leader epoch: %+v", reg)
	}
	w.Apply(img6d, d, false)
	if got, want := apps.take(t, 0), []string{"offset:g/t/1=11", "offset:g/t/2=4", "group:g=1", "offset:other/t/0=1"}; !sameStrings(got, want) {
		t.Fatalf("new leader epoch wrote %v, want %v", got, want)
	}
	img6 = img6d

	// A deleted group: tombstones for its keys.
	img7, d := img6.Apply([]metadata.Record{&metadata.DeleteGroup{Group: group1}})
	w.Apply(img7, d, false)
	if got, want := apps.take(t, 0), []string{"offset:g/t/1=tombstone", "offset:g/t/2=tombstone", "group:g=tombstone"}; !sameStrings(got, want) {
		t.Fatalf("group deletion wrote %v, want %v", got, want)
	}

	// Leadership moves away: nothing more is written here.
	img8, d := img7.Apply([]metadata.Record{
		&metadata.PartitionChange{TopicID: offsetsTopicID, Partition: 0, Leader: 2},
		&metadata.CommitOffsets{Group: group1, Offsets: []metadata.OffsetCommit{{Topic: "t", Partition: 0, Offset: 1, LeaderEpoch: -1, CommitTimeMs: 8}}},
	})
	w.Apply(img8, d, false)
	if len(apps.written) != 0 {
		t.Fatalf("wrote %v after losing the slot", apps.written)
	}
}
