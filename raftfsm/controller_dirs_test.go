package raftfsm

import (
	"slices"
	"testing"

	"github.com/raftka/raftka/metadata"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestOfflineReplicasTagRoundTrip(t *testing.T) {
	a, b := topicID("a"), topicID("b")
	refs := []metadata.ReplicaRef{{TopicID: b, Partition: 1}, {TopicID: a, Partition: 7}, {TopicID: a, Partition: 7}, {TopicID: a, Partition: 0}}
	req := kmsg.NewPtrBrokerHeartbeatRequest()
	SetOfflineReplicas(req, refs)
	got := offlineReplicas(req)
	want := []metadata.ReplicaRef{{TopicID: a, Partition: 0}, {TopicID: a, Partition: 7}, {TopicID: b, Partition: 1}}
	if !slices.Equal(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	bad := kmsg.NewPtrBrokerHeartbeatRequest()
	bad.UnknownTags.Set(OfflineReplicasTag, []byte{1, 2, 3})
	if got := offlineReplicas(bad); len(got) != 0 {
		t.Fatalf("malformed tag read as %v", got)
	}
}

// A broker's replicas in a failed log dir lose their leaderships to other
// ISR members and leave the ISR; its other replicas are untouched; a last
// ISR member stays (the partition goes offline) unless unclean election
// is allowed; replicas the broker does not hold or of unknown topics are
// ignored; and later elections never pick an offline replica.
func TestOfflineReplicaChanges(t *testing.T) {
	img := newImg(t, 3).topic("t", nil,
		pspec{ids(1, 2, 3), ids(1, 2, 3), 1}, // 0: broker 1 leads, offline on 1
		pspec{ids(2, 1, 3), ids(2, 1, 3), 2}, // 1: broker 1 follows, offline on 1
		pspec{ids(1, 2, 3), ids(1, 2, 3), 1}, // 2: broker 1 leads, its dir is fine
		pspec{ids(1, 2), ids(1), 1},          // 3: broker 1 is the last ISR member, offline
		pspec{ids(2, 3), ids(2, 3), 2},       // 4: not on broker 1 at all
	).build()
	b, _ := img.Broker(1)
	tid := topicID("t")
	refs := []metadata.ReplicaRef{{TopicID: tid, Partition: 0}, {TopicID: tid, Partition: 1}, {TopicID: tid, Partition: 3}, {TopicID: tid, Partition: 4}, {TopicID: topicID("gone"), Partition: 0}}
	recs := offlineReplicaChanges(img, b, refs, policy{unclean: never})
	next, d := img.Apply(recs)
	if len(d.Skipped) > 0 {
		t.Fatalf("records do not apply: %v", d.Skipped[0].Err)
	}
	nb, _ := next.Broker(1)
	wantSet := []metadata.ReplicaRef{{TopicID: tid, Partition: 0}, {TopicID: tid, Partition: 1}, {TopicID: tid, Partition: 3}}
	if !slices.Equal(nb.OfflineReplicas, wantSet) {
		t.Fatalf("offline set %v, want %v", nb.OfflineReplicas, wantSet)
	}
	want := map[int32]struct {
		leader int32
		isr    []int32
	}{
		0: {2, ids(2, 3)},
		1: {2, ids(2, 3)},
		2: {1, ids(1, 2, 3)},
		3: {metadata.NoLeader, ids(1)},
		4: {2, ids(2, 3)},
	}
	for p, w := range want {
		got, _ := next.Partition(tid, p)
		if got.Leader != w.leader || !slices.Equal(got.ISR, w.isr) {
			t.Errorf("partition %d: leader %d ISR %v, want %d %v", p, got.Leader, got.ISR, w.leader, w.isr)
		}
	}
	// The same heartbeat again changes nothing.
	if again := offlineReplicaChanges(next, nb, refs, policy{unclean: never}); len(again) != 0 {
		t.Fatalf("repeated heartbeat decided %v", again)
	}
	// Leaderless partition 3 does not elect the offline replica back.
	if recs := electLeaderless(next, policy{unclean: never}); len(recs) != 0 {
		t.Fatalf("electLeaderless decided %v for an offline replica", recs)
	}
	// With unclean election the other (out-of-ISR) replica takes it.
	recs = offlineReplicaChanges(img, b, refs, policy{unclean: always})
	p3 := after(t, img, recs, "t", 3)
	if p3.Leader != 2 || !slices.Equal(p3.ISR, ids(2)) {
		t.Fatalf("unclean: partition 3 leader %d ISR %v, want 2 [2]", p3.Leader, p3.ISR)
	}
	// A new registration (the broker restarted) clears the set.
	re, _ := next.Apply([]metadata.Record{&metadata.RegisterBroker{BrokerID: 1, BrokerEpoch: 500}})
	if rb, _ := re.Broker(1); len(rb.OfflineReplicas) != 0 {
		t.Fatalf("offline set survived a new registration: %v", rb.OfflineReplicas)
	}
	// The set survives a snapshot (Records rebuilds the image).
	snap, _ := metadata.NewImage().Apply(next.Records())
	if sb, _ := snap.Broker(1); !slices.Equal(sb.OfflineReplicas, wantSet) {
		t.Fatalf("offline set after snapshot %v", sb.OfflineReplicas)
	}
}

// FuzzOfflineReplicasTag: any tag bytes decode without a panic to a
// sorted list without repeats, which encodes and decodes to itself.
func FuzzOfflineReplicasTag(f *testing.F) {
	req := kmsg.NewPtrBrokerHeartbeatRequest()
	SetOfflineReplicas(req, []metadata.ReplicaRef{{TopicID: topicID("a"), Partition: 3}})
	req.UnknownTags.Each(func(_ uint32, v []byte) { f.Add(v) })
	f.Add([]byte{})
	f.Add(make([]byte, 19))
	f.Fuzz(func(t *testing.T, v []byte) {
		r := kmsg.NewPtrBrokerHeartbeatRequest()
		r.UnknownTags.Set(OfflineReplicasTag, v)
		got := offlineReplicas(r)
		if !slices.IsSortedFunc(got, metadata.CompareReplicaRefs) {
			t.Fatalf("not sorted: %v", got)
		}
		for i := 1; i < len(got); i++ {
			if metadata.CompareReplicaRefs(got[i-1], got[i]) == 0 {
				t.Fatalf("repeated: %v", got)
			}
		}
		again := kmsg.NewPtrBrokerHeartbeatRequest()
		SetOfflineReplicas(again, got)
		if back := offlineReplicas(again); !slices.Equal(back, got) {
			t.Fatalf("round trip %v -> %v", got, back)
		}
	})
}
