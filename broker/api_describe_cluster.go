package broker

// DescribeCluster (key 60): v0-v2, as Kafka 4.2, answered from one metadata
// image.
//
// Behaviour (Kafka's KafkaApis.handleDescribeCluster and
// AuthHelper.computeDescribeClusterResponse):
//   - ClusterID from the image. Brokers: every unfenced broker with an
//     endpoint on the listener the request came in on (brokers in
//     controlled shutdown included), sorted by id; fenced ones too when the
//     request asks (v2 IncludeFencedBrokers, or the raftka request tag
//     TagIncludeFencedBrokers at any version).
//   - ControllerID: the Raft leader (the active controller) when it is one
//     of the listed live brokers; otherwise, as Metadata names it, this
//     broker if live, else the lowest live broker id, else -1. Kafka names
//     a random live broker here because its controllers are unreachable
//     to clients; raftka's Raft leader normally serves clients too, and
//     naming it saves admin requests a forward. `raftka cluster status`
//     reads the true Raft leader from DescribeQuorum.
//   - Raftka extensions, on every listed broker, as tagged fields that
//     other clients skip: TagBrokerEpoch (int64, big-endian),
//     TagBrokerFenced and TagBrokerShuttingDown (one byte, 0 or 1).
//   - ClusterAuthorizedOperations: every cluster operation when asked
//     (there is no authorizer), else Kafka's "not requested" value.
//
// Version notes:
//   - v1: EndpointType (KIP-919). This is a broker listener: type 1
//     (brokers) is answered; type 2 (controllers) is
//     MISMATCHED_ENDPOINT_TYPE, any other UNSUPPORTED_ENDPOINT_TYPE. The
//     answer's EndpointType is 1.
//   - v2: IncludeFencedBrokers in the request, IsFenced per broker.

import (
	"context"
	"encoding/binary"
	"slices"

	"github.com/raftka/raftka/metadata"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Raftka's tagged fields on DescribeCluster. Kafka's own tags on this
// message are small numbers; 10000 and up stay clear of them.
const (
	// TagBrokerEpoch on a response broker: its broker epoch, int64
	// big-endian.
	TagBrokerEpoch uint32 = 10000
	// TagBrokerFenced on a response broker: 1 if fenced, else 0.
	TagBrokerFenced uint32 = 10001
	// TagBrokerShuttingDown on a response broker: 1 if in controlled
	// shutdown, else 0.
	TagBrokerShuttingDown uint32 = 10002
	// TagIncludeFencedBrokers on the request: one byte, 1 to list fenced
	// brokers too, at versions without IncludeFencedBrokers.
	TagIncludeFencedBrokers uint32 = 10003
)

func init() {
	register(apiEntry{
		key:           60,
		advertisedMin: 0, min: 0, max: 2,
		concurrent: true, // reads one image
		handle:     handleDescribeCluster,
	})
}

func handleDescribeCluster(_ context.Context, rc *request, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.DescribeClusterRequest)
	resp := req.ResponseKind().(*kmsg.DescribeClusterResponse)
	srv := rc.conn.srv
	resp.EndpointType = 1
	resp.ControllerID = -1
	resp.ClusterAuthorizedOperations = authorizedOpsUnset
	if req.IncludeClusterAuthorizedOperations {
		// Kafka shows the set only to a principal that may DESCRIBE the
		// cluster, 0 to anyone else.
		resp.ClusterAuthorizedOperations = 0
		if rc.authorizeCluster(opDescribe) {
			resp.ClusterAuthorizedOperations = rc.authorizedOps(resCluster, metadata.ClusterResourceName)
		}
	}

	if req.Version >= 1 && req.EndpointType != 1 {
		code, msg := kerr.UnsupportedEndpointType.Code, "Unsupported endpoint type"
		if req.EndpointType == 2 {
			code, msg = kerr.MismatchedEndpointType.Code, "This is a broker listener; controllers are reached on controller.quorum.voters"
		}
		resp.ErrorCode, resp.ErrorMessage = code, kmsg.StringPtr(msg)
		return resp, nil
	}
	if srv.deps.Metadata == nil {
		return resp, nil
	}
	img, _ := srv.deps.Metadata.Current()
	resp.ClusterID = img.ClusterID()

	includeFenced := req.Version >= 2 && req.IncludeFencedBrokers
	req.UnknownTags.Each(func(k uint32, v []byte) {
		if k == TagIncludeFencedBrokers && len(v) == 1 && v[0] == 1 {
			includeFenced = true
		}
	})
	raftLeader := int32(-1)
	if srv.deps.Quorum != nil {
		raftLeader = srv.deps.Quorum.LeaderID()
	}
	resp.Brokers, resp.ControllerID = describeClusterBrokers(img, rc.conn.listener, includeFenced, srv.nodeID, raftLeader)
	return resp, nil
}

// describeClusterBrokers lists the brokers with an endpoint on listener and
// picks the controller id to name (see the file comment).
func describeClusterBrokers(img *metadata.Image, listener string, includeFenced bool, self, raftLeader int32) ([]kmsg.DescribeClusterResponseBroker, int32) {
	var out []kmsg.DescribeClusterResponseBroker
	live := map[int32]bool{}
	controller := int32(-1)
	for _, b := range img.Brokers() {
		if b.Fenced && !includeFenced {
			continue
		}
		ep, ok := b.Endpoint(listener)
		if !ok {
			continue
		}
		db := kmsg.NewDescribeClusterResponseBroker()
		db.NodeID, db.Host, db.Port = b.ID, ep.Host, int32(ep.Port)
		if b.Rack != "" {
			db.Rack = kmsg.StringPtr(b.Rack)
		}
		db.IsFenced = b.Fenced
		db.UnknownTags.Set(TagBrokerEpoch, binary.BigEndian.AppendUint64(nil, uint64(b.Epoch)))
		db.UnknownTags.Set(TagBrokerFenced, []byte{boolByte(b.Fenced)})
		db.UnknownTags.Set(TagBrokerShuttingDown, []byte{boolByte(b.InControlledShutdown)})
		out = append(out, db)
		if !b.Fenced {
			live[b.ID] = true
			if controller == -1 || b.ID < controller {
				controller = b.ID
			}
		}
	}
	slices.SortFunc(out, func(a, b kmsg.DescribeClusterResponseBroker) int { return int(a.NodeID) - int(b.NodeID) })
	switch {
	case live[raftLeader]:
		controller = raftLeader
	case live[self]:
		controller = self
	}
	return out, controller
}

func boolByte(b bool) byte {
	if b {
		return 1
	}
	return 0
}

// BrokerExtensions are the raftka tags of one DescribeCluster broker.
type BrokerExtensions struct {
	Epoch        int64 // -1 when the tag is absent (not a raftka broker)
	Fenced       bool
	ShuttingDown bool
}

// ReadBrokerExtensions decodes the raftka tags of a DescribeCluster broker,
// for clients such as `raftka cluster status`.
func ReadBrokerExtensions(b kmsg.DescribeClusterResponseBroker) BrokerExtensions {
	x := BrokerExtensions{Epoch: -1, Fenced: b.IsFenced}
	b.UnknownTags.Each(func(k uint32, v []byte) {
		switch {
		case k == TagBrokerEpoch && len(v) == 8:
			x.Epoch = int64(binary.BigEndian.Uint64(v))
		case k == TagBrokerFenced && len(v) == 1:
			x.Fenced = v[0] == 1
		case k == TagBrokerShuttingDown && len(v) == 1:
			x.ShuttingDown = v[0] == 1
		}
	})
	return x
}
