package broker

import (
	"context"
	"time"

	"github.com/raftka/raftka/metadata"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// A Metadata answer that would name, as a partition's leader, a broker this
// broker has just seen vanish (its replica fetcher's connection to that
// leader was closed or reset, or a dial refused, with no successful fetch
// since) waits, up to leaderLossHold from the loss, for the controller's
// verdict: the image fencing that broker (the controller fences a broker
// whose listeners refuse connections at once, raftfsm liveness.go), or
// the fetcher reaching it again. Without the wait a client that asks at the
// moment of the crash, as franz-go does on its first failed produce, learns
// the dead leader again and then waits out its metadata backoff
// (MetadataMinAge, 5 s) before it asks again. The answer is never wrong,
// only later: it is computed from the image current when the wait ends.
const (
	// leaderLossHold covers the fence of a dead broker by a live
	// controller (a few milliseconds) and by one elected after the old
	// controller died with the broker (a Raft election, about a second).
	leaderLossHold = 3 * time.Second
	holdPoll       = 10 * time.Millisecond
)

// unreachableSources is the part of *replica.Manager the hold reads.
type unreachableSources interface {
	AnyUnreachable() bool
	UnreachableSince(id int32) (time.Time, bool)
}

// awaitLostLeaders returns the image to answer topics from (nil: every
// topic): img, or a newer one once no partition in the answer is led by a
// broker lost moments ago that the image has not fenced yet.
func (s *Server) awaitLostLeaders(ctx context.Context, img *metadata.Image, topics []kmsg.MetadataRequestTopic) *metadata.Image {
	lost, ok := s.deps.Replicas.(unreachableSources)
	if !ok || !lost.AnyUnreachable() {
		return img
	}
	for {
		until, hold := lostLeader(img, topics, lost, time.Now())
		if !hold {
			return img
		}
		t := time.NewTimer(min(holdPoll, time.Until(until)))
		select {
		case <-ctx.Done():
			t.Stop()
			return img
		case <-t.C:
		}
		img, _ = s.deps.Metadata.Current()
	}
}

// lostLeader reports whether an answer about topics from img would name a
// leader that is unfenced in img and was lost less than leaderLossHold
// before now, and until when to wait for it.
func lostLeader(img *metadata.Image, topics []kmsg.MetadataRequestTopic, lost unreachableSources, now time.Time) (time.Time, bool) {
	var until time.Time
	check := func(t metadata.TopicImage) {
		for _, p := range t.Partitions {
			if p.Leader < 0 {
				continue
			}
			since, ok := lost.UnreachableSince(p.Leader)
			if !ok || now.Sub(since) >= leaderLossHold {
				continue
			}
			if b, ok := img.Broker(p.Leader); !ok || b.Fenced {
				continue
			}
			if u := since.Add(leaderLossHold); u.After(until) {
				until = u
			}
		}
	}
	if topics == nil {
		for _, t := range img.Topics() {
			check(t)
		}
	} else {
		for _, rt := range topics {
			var t metadata.TopicImage
			var ok bool
			if rt.TopicID != [16]byte{} {
				t, ok = img.TopicByID(rt.TopicID)
			} else if rt.Topic != nil {
				t, ok = img.Topic(*rt.Topic)
			}
			if ok {
				check(t)
			}
		}
	}
	return until, !until.IsZero()
}
