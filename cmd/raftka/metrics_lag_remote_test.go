package main

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/raftka/raftka/metadata"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestRemoteHWs: a lookup answers from what the last refresh learned and
// starts one refresh when something is missing or stale; each leader is
// asked once for its partitions; a failing leader leaves its partitions
// unknown; entries no longer asked for are forgotten.
func TestRemoteHWs(t *testing.T) {
	img, _ := metadata.NewImage().Apply([]metadata.Record{
		&metadata.CreateTopic{Name: "u", ID: [16]byte{2}, Partitions: []metadata.PartitionRegistration{
			{Partition: 0, Replicas: []int32{2}, ISR: []int32{2}, Leader: 2},
			{Partition: 1, Replicas: []int32{2}, ISR: []int32{2}, Leader: 2},
			{Partition: 2, Replicas: []int32{3}, ISR: []int32{3}, Leader: 3},
			{Partition: 3, Replicas: []int32{4}, ISR: []int32{4}, Leader: metadata.NoLeader},
		}},
	})
	var mu sync.Mutex
	asked := map[int32]int{}
	done := make(chan struct{}, 8)
	r := newRemoteHWs(func(_ context.Context, broker int32, req kmsg.Request) (kmsg.Response, error) {
		defer func() { done <- struct{}{} }()
		mu.Lock()
		asked[broker]++
		mu.Unlock()
		if broker == 3 {
			return nil, errors.New("unreachable")
		}
		lo := req.(*kmsg.ListOffsetsRequest)
		if lo.ReplicaID != -1 || lo.Topics[0].Partitions[0].Timestamp != -1 {
			t.Errorf("asked %+v, want the consumer's latest offset", lo)
		}
		resp := lo.ResponseKind().(*kmsg.ListOffsetsResponse)
		for _, rt := range lo.Topics {
			topic := kmsg.NewListOffsetsResponseTopic()
			topic.Topic = rt.Topic
			for _, rp := range rt.Partitions {
				p := kmsg.NewListOffsetsResponseTopicPartition()
				p.Partition, p.Offset = rp.Partition, int64(100+rp.Partition)
				topic.Partitions = append(topic.Partitions, p)
			}
			resp.Topics = append(resp.Topics, topic)
		}
		return resp, nil
	})
	defer r.Close()
	now := time.Unix(1000, 0)
	r.now = func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	want := []metadata.TopicPartition{{Topic: "u", Partition: 0}, {Topic: "u", Partition: 1}, {Topic: "u", Partition: 2}, {Topic: "u", Partition: 3}, {Topic: "gone", Partition: 0}}
	if got := r.lookup(img, want); len(got) != 0 {
		t.Fatalf("first lookup %v, want nothing known yet", got)
	}
	waitRefresh := func() {
		t.Helper()
		for range 2 { // brokers 2 and 3
			select {
			case <-done:
			case <-time.After(10 * time.Second):
				t.Fatal("no refresh")
			}
		}
		for i := 0; ; i++ { // until the refresh has finished
			r.mu.Lock()
			busy := r.refreshing
			r.mu.Unlock()
			if !busy {
				return
			}
			if i > 1000 {
				t.Fatal("refresh never finished")
			}
			time.Sleep(time.Millisecond)
		}
	}
	waitRefresh()
	got := r.lookup(img, want)
	if len(got) != 2 || got[want[0]] != 100 || got[want[1]] != 101 {
		t.Errorf("after refresh %v, want u-0 100 and u-1 101 (u-2's leader failed, u-3 has none)", got)
	}
	waitRefresh() // u-2 was still missing, so that lookup refreshed again
	mu.Lock()
	if asked[2] != 2 || asked[3] != 2 || len(asked) != 2 {
		t.Errorf("asked %v, want brokers 2 and 3 once per refresh", asked)
	}
	mu.Unlock()
	// Fresh and complete: no refresh. Stale: one.
	only := want[:2]
	if got := r.lookup(img, only); len(got) != 2 {
		t.Errorf("cached %v", got)
	}
	r.mu.Lock()
	if r.refreshing || len(r.known) != 2 {
		t.Errorf("refreshing %v known %v, want no refresh and only the partitions asked for", r.refreshing, r.known)
	}
	r.mu.Unlock()
	mu.Lock()
	now = now.Add(remoteHWMaxAge + time.Second)
	mu.Unlock()
	r.lookup(img, only)
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("a stale entry started no refresh")
	}
}
