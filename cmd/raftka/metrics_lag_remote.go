package main

import (
	"context"
	"sync"
	"time"

	"github.com/raftka/raftka/metadata"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// remoteHWs holds the high watermarks of partitions this broker hosts no
// replica of, learned from their leaders, so the coordinator can export
// lag for every committed partition of its groups and not only for those
// it stores. A scrape never waits on the network: it reads what the last
// refresh learned and, when something it needed was missing or older than
// remoteHWMaxAge, starts one refresh in the background (never two at
// once), bounded by remoteHWTimeout. The lag of a remote partition is
// therefore as of the previous refresh, at most remoteHWMaxAge old.
type remoteHWs struct {
	// ask sends a request to a broker (broker.InterBrokerClient.Request
	// over the inter-broker listener).
	ask func(ctx context.Context, broker int32, req kmsg.Request) (kmsg.Response, error)
	now func() time.Time

	mu         sync.Mutex
	known      map[metadata.TopicPartition]remoteHW
	refreshing bool
	ctx        context.Context
	cancel     context.CancelFunc
	wg         sync.WaitGroup
}

type remoteHW struct {
	hw int64
	at time.Time
}

const (
	remoteHWMaxAge  = 30 * time.Second
	remoteHWTimeout = 5 * time.Second
)

func newRemoteHWs(ask func(ctx context.Context, broker int32, req kmsg.Request) (kmsg.Response, error)) *remoteHWs {
	ctx, cancel := context.WithCancel(context.Background())
	return &remoteHWs{ask: ask, now: time.Now, known: map[metadata.TopicPartition]remoteHW{}, ctx: ctx, cancel: cancel}
}

// lookup returns the known high watermarks of want and starts a refresh
// when one is missing or stale. Entries not in want are forgotten, so the
// cache holds at most one scrape's partitions.
func (r *remoteHWs) lookup(img *metadata.Image, want []metadata.TopicPartition) map[metadata.TopicPartition]int64 {
	if r == nil || len(want) == 0 {
		return nil
	}
	now := r.now()
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make(map[metadata.TopicPartition]int64, len(want))
	keep := make(map[metadata.TopicPartition]remoteHW, len(want))
	stale := false
	for _, tp := range want {
		k, ok := r.known[tp]
		if ok {
			out[tp] = k.hw
			keep[tp] = k
		}
		if !ok || now.Sub(k.at) > remoteHWMaxAge {
			stale = true
		}
	}
	r.known = keep
	if stale && !r.refreshing && r.ctx.Err() == nil {
		r.refreshing = true
		r.wg.Add(1)
		go r.refresh(img, append([]metadata.TopicPartition(nil), want...))
	}
	return out
}

// refresh asks each leader of want for its partitions' high watermarks
// (ListOffsets, latest, as a consumer: replica id -1).
func (r *remoteHWs) refresh(img *metadata.Image, want []metadata.TopicPartition) {
	defer r.wg.Done()
	defer func() {
		r.mu.Lock()
		r.refreshing = false
		r.mu.Unlock()
	}()
	ctx, cancel := context.WithTimeout(r.ctx, remoteHWTimeout)
	defer cancel()
	byLeader := map[int32]map[string][]int32{}
	for _, tp := range want {
		t, ok := img.Topic(tp.Topic)
		if !ok {
			continue
		}
		p, ok := img.Partition(t.ID, tp.Partition)
		if !ok || p.Leader < 0 {
			continue
		}
		if byLeader[p.Leader] == nil {
			byLeader[p.Leader] = map[string][]int32{}
		}
		byLeader[p.Leader][tp.Topic] = append(byLeader[p.Leader][tp.Topic], tp.Partition)
	}
	for leader, topics := range byLeader {
		req := kmsg.NewPtrListOffsetsRequest()
		req.Version, req.ReplicaID = 4, -1
		for topic, parts := range topics {
			rt := kmsg.NewListOffsetsRequestTopic()
			rt.Topic = topic
			for _, p := range parts {
				rp := kmsg.NewListOffsetsRequestTopicPartition()
				rp.Partition, rp.Timestamp, rp.CurrentLeaderEpoch = p, -1, -1
				rt.Partitions = append(rt.Partitions, rp)
			}
			req.Topics = append(req.Topics, rt)
		}
		resp, err := r.ask(ctx, leader, req)
		if err != nil {
			continue // unknown until the next refresh
		}
		lo, ok := resp.(*kmsg.ListOffsetsResponse)
		if !ok {
			continue
		}
		at := r.now()
		r.mu.Lock()
		for _, t := range lo.Topics {
			for _, p := range t.Partitions {
				if p.ErrorCode == 0 && p.Offset >= 0 {
					r.known[metadata.TopicPartition{Topic: t.Topic, Partition: p.Partition}] = remoteHW{hw: p.Offset, at: at}
				}
			}
		}
		r.mu.Unlock()
	}
}

// Close stops a refresh in flight and waits for it.
func (r *remoteHWs) Close() {
	if r == nil {
		return
	}
	r.cancel()
	r.wg.Wait()
}
