package invariants

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// PartitionState is one node's view of a partition, from its Metadata answer.
type PartitionState struct {
	Leader      int32
	LeaderEpoch int32
	Replicas    []int32
	ISR         []int32
	Err         error // the partition's error code, nil for none
}

// InISR reports whether node is in the ISR.
func (s PartitionState) InISR(node int32) bool { return slices.Contains(s.ISR, node) }

// Followers are the replicas other than the leader.
func (s PartitionState) Followers() []int32 {
	var f []int32
	for _, r := range s.Replicas {
		if r != s.Leader {
			f = append(f, r)
		}
	}
	return f
}

// TopicState asks exactly the node at addr (a client would route to any
// broker it likes) for its view of topic's partitions.
func TopicState(ctx context.Context, addr, topic string) (map[int32]PartitionState, error) {
	req := kmsg.NewPtrMetadataRequest()
	req.Version = 12
	rt := kmsg.NewMetadataRequestTopic()
	rt.Topic = kmsg.StringPtr(topic)
	req.Topics = append(req.Topics, rt)
	resp, err := RawRequest(ctx, addr, req)
	if err != nil {
		return nil, err
	}
	md := resp.(*kmsg.MetadataResponse)
	for _, t := range md.Topics {
		if t.Topic == nil || *t.Topic != topic {
			continue
		}
		if err := kerr.ErrorForCode(t.ErrorCode); err != nil {
			return nil, fmt.Errorf("invariants: %s: metadata for %s: %w", addr, topic, err)
		}
		out := make(map[int32]PartitionState, len(t.Partitions))
		for _, p := range t.Partitions {
			out[p.Partition] = PartitionState{Leader: p.Leader, LeaderEpoch: p.LeaderEpoch,
				Replicas: p.Replicas, ISR: p.ISR, Err: kerr.ErrorForCode(p.ErrorCode)}
		}
		return out, nil
	}
	return nil, fmt.Errorf("invariants: %s: metadata does not list topic %s", addr, topic)
}

// RawRequest sends one request on a fresh connection to exactly addr and
// reads its answer, bounded by ctx.
func RawRequest(ctx context.Context, addr string, req kmsg.Request) (kmsg.Response, error) {
	conn, err := dialRaw(ctx, addr)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	if dl, ok := ctx.Deadline(); ok {
		_ = conn.SetDeadline(dl)
	}
	f := kmsg.NewRequestFormatter(kmsg.FormatterClientID("raftka-invariants"))
	if _, err := conn.Write(f.AppendRequest(nil, req, 1)); err != nil {
		return nil, err
	}
	var size [4]byte
	if _, err := io.ReadFull(conn, size[:]); err != nil {
		return nil, err
	}
	n := binary.BigEndian.Uint32(size[:])
	if n > 64<<20 || n < 4 {
		return nil, fmt.Errorf("invariants: response of %d bytes", n)
	}
	body := make([]byte, n)
	if _, err := io.ReadFull(conn, body); err != nil {
		return nil, err
	}
	if id := int32(binary.BigEndian.Uint32(body)); id != 1 {
		return nil, fmt.Errorf("invariants: correlation id %d, want 1", id)
	}
	body = body[4:]
	resp := req.ResponseKind()
	if resp.IsFlexible() && req.Key() != 18 { // ApiVersions answers with a v0 header
		if len(body) == 0 {
			return nil, errors.New("invariants: empty response")
		}
		body = body[1:] // empty tagged fields of the response header
	}
	if err := resp.ReadFrom(body); err != nil {
		return nil, err
	}
	return resp, nil
}

// CreateTopic creates topic with the given partitions, replication factor
// and configs through any of seeds.
func CreateTopic(ctx context.Context, seeds []string, topic string, partitions int32, rf int16, configs map[string]*string) error {
	cl, err := newClient(kgo.SeedBrokers(seeds...), kgo.RetryTimeout(30*time.Second))
	if err != nil {
		return err
	}
	defer cl.Close()
	resp, err := kadm.NewClient(cl).CreateTopic(ctx, partitions, rf, configs, topic)
	if err != nil {
		return err
	}
	return resp.Err
}
