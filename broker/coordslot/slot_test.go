package coordslot

import (
	"math"
	"testing"

	"github.com/raftka/raftka/metadata"
	"github.com/twmb/franz-go/pkg/kerr"
)

// The hashes are String.hashCode's formula over UTF-16 units, computed
// independently of this package: s[0]*31^(n-1) + ... + s[n-1] with int32
// wrap-around. The slots are Kafka's Utils.abs(hash) % n.
func TestSlotMatchesKafka(t *testing.T) {
	cases := []struct {
		key  string
		hash int32
		n    int
		slot int32
	}{
		{"my-group", -1906497762, 50, 36},
		{"my-txn", -1061187895, 50, 3},
		// Integer.MIN_VALUE, which Utils.abs maps to 0.
		{"polygenelubricants", math.MinInt32, 50, 0},
		// A supplementary character hashes as its UTF-16 surrogate pair.
		{"😀", 31*0xD83D + 0xDE00, 50, 49},
		// Bytes that are not UTF-8 hash as U+FFFD, as Kafka decodes them.
		{"\xff", 0xFFFD, 50, 33},
		{"", 0, 50, 0},
		{"x", 'x', 1, 0},
		{"x", 'x', 0, -1},
		{"x", 'x', -1, -1},
	}
	for _, c := range cases {
		if h := javaStringHash(c.key); h != c.hash {
			t.Errorf("javaStringHash(%q) = %d, want %d", c.key, h, c.hash)
		}
		if s := Slot(c.key, c.n); s != c.slot {
			t.Errorf("Slot(%q, %d) = %d, want %d", c.key, c.n, s, c.slot)
		}
	}
}

const topic = "__slots"

// slotsImage has topic with three partitions: 0 led by broker 1 (epoch 5),
// 1 offline, 2 led by broker 2 (epoch 7). Keys "c", "a" and "b" hash to
// 99, 97 and 98, so they land on slots 0, 1 and 2.
func slotsImage(t *testing.T) *metadata.Image {
	t.Helper()
	img, d := metadata.NewImage().Apply([]metadata.Record{&metadata.CreateTopic{
		Name: topic,
		ID:   [16]byte{1},
		Partitions: []metadata.PartitionRegistration{
			{Partition: 0, Replicas: []int32{1, 2}, ISR: []int32{1, 2}, Leader: 1, LeaderEpoch: 5},
			{Partition: 1, Replicas: []int32{1, 2}, Leader: metadata.NoLeader, LeaderEpoch: 3},
			{Partition: 2, Replicas: []int32{2, 1}, ISR: []int32{2}, Leader: 2, LeaderEpoch: 7},
		},
	}})
	if len(d.Skipped) > 0 {
		t.Fatal(d.Skipped[0].Err)
	}
	return img
}

func TestPlace(t *testing.T) {
	img := slotsImage(t)
	cases := []struct {
		topic, key string
		want       Placement
		ok         bool
	}{
		{topic, "c", Placement{Slot: 0, Leader: 1, LeaderEpoch: 5}, true},
		{topic, "a", Placement{Slot: 1, Leader: metadata.NoLeader, LeaderEpoch: 3}, true},
		{topic, "b", Placement{Slot: 2, Leader: 2, LeaderEpoch: 7}, true},
		{"__missing", "c", Placement{Slot: -1, Leader: metadata.NoLeader}, false},
	}
	for _, c := range cases {
		if p, ok := Place(img, c.topic, c.key); p != c.want || ok != c.ok {
			t.Errorf("Place(%q, %q) = %+v, %v; want %+v, %v", c.topic, c.key, p, ok, c.want, c.ok)
		}
	}
}

func TestOwnership(t *testing.T) {
	img := slotsImage(t)
	nc := kerr.NotCoordinator.Code
	cases := []struct {
		topic string
		node  int32
		key   string
		code  int16
		epoch int32
	}{
		{topic, 1, "c", 0, 5},
		{topic, 2, "b", 0, 7},
		{topic, 2, "c", nc, -1}, // another broker leads the slot
		{topic, 1, "a", nc, -1}, // the slot is offline
		{"__missing", 1, "c", nc, -1},
	}
	for _, c := range cases {
		if code, epoch := Ownership(img, c.topic, c.node, c.key); code != c.code || epoch != c.epoch {
			t.Errorf("Ownership(%q, %d, %q) = %d, %d; want %d, %d", c.topic, c.node, c.key, code, epoch, c.code, c.epoch)
		}
	}
}
