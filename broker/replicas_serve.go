package broker

import (
	"context"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// replicasServeWait bounds how long a CreateTopics or ElectLeaders answer
// waits for the other replicas' brokers to serve the change.
const replicasServeWait = 2 * time.Second

// replicasServePoll is the pause between two Metadata asks of one broker
// that did not serve the change yet.
const replicasServePoll = 2 * time.Millisecond

// awaitReplicasServe waits, after this node serves a change to topics (a
// creation, new leaders), until every other live broker holding one of
// their replicas serves it too: its Metadata answer has the topic, with the
// same id, and each partition at this node's leader epoch or later. A node
// serves only images its replica manager has applied, so once this returns
// a client that produces right away (or a follower that fetches) meets
// leaders that lead, not a broker that has yet to learn of the change and
// must catch up (catchUp) first. Kafka answers once the controller has
// committed, and clients meet that window as NOT_LEADER_OR_FOLLOWER and
// back off.
//
// It gives up on a broker that cannot be reached or refuses the Metadata
// request, and on all of them after replicasServeWait: the answer is
// correct without the wait, only slower to use.
func (s *Server) awaitReplicasServe(ctx context.Context, topics []string) {
	if s.deps.Peers == nil || s.deps.Metadata == nil || len(topics) == 0 {
		return
	}
	img, _ := s.deps.Metadata.Current()
	type want struct {
		id     [16]byte
		epochs map[int32]int32
	}
	byBroker := map[int32]map[string]want{}
	for _, name := range topics {
		t, ok := img.Topic(name)
		if !ok {
			continue
		}
		for _, p := range t.Partitions {
			for _, r := range p.Replicas {
				if r == s.nodeID {
					continue
				}
				if b, ok := img.Broker(r); !ok || b.Fenced {
					continue
				}
				ws := byBroker[r]
				if ws == nil {
					ws = map[string]want{}
					byBroker[r] = ws
				}
				w, ok := ws[name]
				if !ok {
					w = want{id: t.ID, epochs: map[int32]int32{}}
					ws[name] = w
				}
				w.epochs[p.Partition] = p.LeaderEpoch
			}
		}
	}
	if len(byBroker) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, replicasServeWait)
	defer cancel()
	var wg sync.WaitGroup
	for b, ws := range byBroker {
		wg.Add(1)
		go func() {
			defer wg.Done()
			req := kmsg.NewPtrMetadataRequest()
			req.Version = 12
			for name := range ws {
				rt := kmsg.NewMetadataRequestTopic()
				rt.Topic = kmsg.StringPtr(name)
				req.Topics = append(req.Topics, rt)
			}
			for {
				kresp, err := s.deps.Peers.Request(ctx, b, req)
				if err != nil {
					return
				}
				resp, ok := kresp.(*kmsg.MetadataResponse)
				if !ok {
					return
				}
				done, refused := true, false
				for _, rt := range resp.Topics {
					if rt.ErrorCode == kerr.TopicAuthorizationFailed.Code {
						refused = true
					}
				}
				for name, w := range ws {
					if !servesTopic(resp, name, w.id, w.epochs) {
						done = false
					}
				}
				if done || refused {
					return
				}
				select {
				case <-ctx.Done():
					return
				case <-time.After(replicasServePoll):
				}
			}
		}()
	}
	wg.Wait()
}

// servesTopic reports whether a Metadata answer has topic name, of id, with
// every partition in epochs at that leader epoch or later.
func servesTopic(resp *kmsg.MetadataResponse, name string, id [16]byte, epochs map[int32]int32) bool {
	for _, rt := range resp.Topics {
		if rt.Topic == nil || *rt.Topic != name || rt.ErrorCode != 0 || rt.TopicID != id {
			continue
		}
		seen := 0
		for _, rp := range rt.Partitions {
			if e, ok := epochs[rp.Partition]; ok && rp.LeaderEpoch >= e {
				seen++
			}
		}
		return seen == len(epochs)
	}
	return false
}
