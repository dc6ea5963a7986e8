package broker

import (
	"github.com/raftka/raftka/metadata"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// leaderHint is where a client should go instead: the partition's leader
// and epoch from img, and that leader's endpoint on listener (nil when it
// has none), for the CurrentLeader / NodeEndpoints fields of Produce v10+
// and Fetch v12+.
type leaderHint struct {
	leader, epoch int32
	endpoint      *metadata.Endpoint
	rack          string
}

func leaderOf(img *metadata.Image, topic string, p int32, listener string) (leaderHint, bool) {
	t, ok := img.Topic(topic)
	if !ok {
		return leaderHint{}, false
	}
	reg, ok := t.Partition(p)
	if !ok {
		return leaderHint{}, false
	}
	h := leaderHint{leader: reg.Leader, epoch: reg.LeaderEpoch}
	if b, ok := img.Broker(reg.Leader); ok && !b.Fenced {
		if ep, ok := b.Endpoint(listener); ok {
			h.endpoint, h.rack = &ep, b.Rack
		}
	}
	return h, true
}

// wantsLeaderHint reports whether an error code is one for which Kafka
// tells the client the current leader.
func wantsLeaderHint(code int16) bool {
	return code == kerr.NotLeaderForPartition.Code || code == kerr.FencedLeaderEpoch.Code
}

// produceEndpoints lists the endpoints (on the request's listener) of the
// leaders named in CurrentLeader fields, Produce v10+'s NodeEndpoints.
func produceEndpoints(img *metadata.Image, ids map[int32]bool, listener string) []kmsg.ProduceResponseBroker {
	var out []kmsg.ProduceResponseBroker
	for _, b := range img.Brokers() {
		if !ids[b.ID] || b.Fenced {
			continue
		}
		ep, ok := b.Endpoint(listener)
		if !ok {
			continue
		}
		pb := kmsg.NewProduceResponseBroker()
		pb.NodeID, pb.Host, pb.Port = b.ID, ep.Host, int32(ep.Port)
		if b.Rack != "" {
			pb.Rack = kmsg.StringPtr(b.Rack)
		}
		out = append(out, pb)
	}
	return out
}
