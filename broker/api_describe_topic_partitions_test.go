package broker

import (
	"fmt"
	"strings"
	"testing"

	"github.com/raftka/raftka/metadata"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func dtpImage(t *testing.T) *metadata.Image {
	img, d := clusterImage(t, 9001).Apply([]metadata.Record{
		&metadata.CreateTopic{Name: "a", ID: [16]byte{0xa}, Partitions: []metadata.PartitionRegistration{
			{Partition: 0, Replicas: []int32{1}, ISR: []int32{1}, Leader: 1}, {Partition: 1, Replicas: []int32{2}, ISR: []int32{2}, Leader: 2}}},
		&metadata.CreateTopic{Name: "b", ID: [16]byte{0xb}, Partitions: []metadata.PartitionRegistration{
			{Partition: 0, Replicas: []int32{1}, ISR: []int32{1}, Leader: 1}, {Partition: 1, Replicas: []int32{1}, ISR: []int32{1}, Leader: 1},
			{Partition: 2, Replicas: []int32{1}, ISR: []int32{1}, Leader: 1}}},
	})
	if len(d.Skipped) > 0 {
		t.Fatalf("skipped %+v", d.Skipped)
	}
	return img
}

// dtpSummary renders topics as name:code:first-last partition and the
// cursor, for comparing paging.
func dtpSummary(r *kmsg.DescribeTopicPartitionsResponse) string {
	var parts []string
	for _, t := range r.Topics {
		s := fmt.Sprintf("%s:%d:", *t.Topic, t.ErrorCode)
		for i, p := range t.Partitions {
			if i > 0 {
				s += ","
			}
			s += fmt.Sprint(p.Partition)
		}
		parts = append(parts, s)
	}
	if c := r.NextCursor; c != nil {
		parts = append(parts, fmt.Sprintf("next=%s:%d", c.Topic, c.Partition))
	}
	return strings.Join(parts, " ")
}

func TestDescribeTopicPartitionsPaging(t *testing.T) {
	img := dtpImage(t)
	unknown, invalid, badReq := kerr.UnknownTopicOrPartition.Code, kerr.InvalidTopicException.Code, kerr.InvalidRequest.Code
	cases := []struct {
		name   string
		topics []string
		limit  int32
		cursor *kmsg.DescribeTopicPartitionsRequestCursor
		want   string
	}{
		{"all", nil, 2000, nil, "__consumer_offsets:0:0 a:0:0,1 b:0:0,1,2 orders:0:0,1,2"},
		{"cut inside a topic", nil, 2, nil, "__consumer_offsets:0:0 a:0:0 next=a:1"},
		{"from a cursor", nil, 3, &kmsg.DescribeTopicPartitionsRequestCursor{Topic: "a", Partition: 1}, "a:0:1 b:0:0,1 next=b:2"},
		{"budget spent at a topic's end", nil, 2, &kmsg.DescribeTopicPartitionsRequestCursor{Topic: "a"}, "a:0:0,1 next=b:0"},
		{"limit 0 is 1", nil, 0, nil, "__consumer_offsets:0:0 next=a:0"},
		{"limit above the broker's 2000", nil, 1 << 30, nil, "__consumer_offsets:0:0 a:0:0,1 b:0:0,1,2 orders:0:0,1,2"},
		{"cursor past the topic's partitions", nil, 10, &kmsg.DescribeTopicPartitionsRequestCursor{Topic: "orders", Partition: 9}, "orders:0:"},
		{"cursor topic absent from the image", nil, 10, &kmsg.DescribeTopicPartitionsRequestCursor{Topic: "aa"}, "b:0:0,1,2 orders:0:0,1,2"},
		{"named, unknown and invalid, each once, sorted", []string{"orders", "nope", "bad!name", "orders"}, 2000, nil,
			fmt.Sprintf("bad!name:%d: nope:%d: orders:0:0,1,2", invalid, unknown)},
		{"named, before the cursor left out", []string{"a", "b", "orders"}, 2000, &kmsg.DescribeTopicPartitionsRequestCursor{Topic: "b", Partition: 2}, "b:0:2 orders:0:0,1,2"},
		{"named, budget spent before an unknown one", []string{"a", "zz"}, 2, nil, "a:0:0,1 next=zz:0"},
		{"cursor topic not named", []string{"a", "a", "b"}, 2000, &kmsg.DescribeTopicPartitionsRequestCursor{Topic: "orders"},
			fmt.Sprintf("a:%d: a:%d: b:%d:", badReq, badReq, badReq)},
		{"negative cursor partition", []string{"a"}, 2000, &kmsg.DescribeTopicPartitionsRequestCursor{Topic: "a", Partition: -1}, fmt.Sprintf("a:%d:", badReq)},
		{"negative cursor partition, all topics", nil, 2000, &kmsg.DescribeTopicPartitionsRequestCursor{Topic: "a", Partition: -1}, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			req := kmsg.NewPtrDescribeTopicPartitionsRequest()
			req.ResponsePartitionLimit, req.Cursor = c.limit, c.cursor
			for _, n := range c.topics {
				rt := kmsg.NewDescribeTopicPartitionsRequestTopic()
				rt.Topic = n
				req.Topics = append(req.Topics, rt)
			}
			if got := dtpSummary(describeTopicPartitions(img, "CLIENT", req, topicAccess{})); got != c.want {
				t.Fatalf("got  %q\nwant %q", got, c.want)
			}
		})
	}
}

// Partition fields as KRaftMetadataCache fills them.
func TestDescribeTopicPartitionsFields(t *testing.T) {
	img := dtpImage(t)
	req := kmsg.NewPtrDescribeTopicPartitionsRequest()
	rt := kmsg.NewDescribeTopicPartitionsRequestTopic()
	rt.Topic = "orders"
	req.Topics = append(req.Topics, rt)
	rt.Topic = "__consumer_offsets"
	req.Topics = append(req.Topics, rt)
	resp := describeTopicPartitions(img, "CLIENT", req, topicAccess{})
	if len(resp.Topics) != 2 {
		t.Fatalf("%d topics", len(resp.Topics))
	}
	off, orders := resp.Topics[0], resp.Topics[1]
	if !off.IsInternal || orders.IsInternal || orders.TopicID != ordersID || orders.AuthorizedOperations != topicOps {
		t.Fatalf("topic fields: internal %v/%v id %x ops %d", off.IsInternal, orders.IsInternal, orders.TopicID, orders.AuthorizedOperations)
	}
	for i, w := range []struct {
		leader, epoch int32
		offline       string
	}{
		{1, 5, "[3]"},  // broker 3 fenced
		{-1, 7, "[3]"}, // no leader
		{-1, 1, "[4]"}, // broker 4 has no CLIENT listener
	} {
		p := orders.Partitions[i]
		if p.LeaderID != w.leader || p.LeaderEpoch != w.epoch || fmt.Sprint(p.OfflineReplicas) != w.offline ||
			p.ErrorCode != 0 || p.EligibleLeaderReplicas == nil || len(p.EligibleLeaderReplicas) != 0 || p.LastKnownELR == nil || len(p.LastKnownELR) != 0 {
			t.Errorf("partition %d: %+v, want leader %d epoch %d offline %s, empty ELR lists", i, p, w.leader, w.epoch, w.offline)
		}
	}
	if p := orders.Partitions[0]; fmt.Sprint(p.Replicas, p.ISR) != "[1 2 3] [1 2]" {
		t.Errorf("replicas %v isr %v", p.Replicas, p.ISR)
	}
	// The wire form decodes back, as a client reads it.
	resp.Version = 0
	back := kmsg.NewPtrDescribeTopicPartitionsResponse()
	if err := back.ReadFrom(resp.AppendTo(nil)); err != nil || len(back.Topics) != 2 {
		t.Fatalf("round trip: %v", err)
	}
}

// A topic without DESCRIBE is left out of an all-topics answer and refused
// by name, after the answered ones and whether it exists or not, as
// DescribeTopicPartitionsRequestHandler does.
func TestDescribeTopicPartitionsAuthorization(t *testing.T) {
	img := dtpImage(t)
	access := topicAccess{
		describe: func(name string) bool { return name != "b" && name != "ghost" },
		ops:      func(name string) int32 { return int32(len(name)) },
	}
	denied := kerr.TopicAuthorizationFailed.Code
	for _, c := range []struct {
		name   string
		topics []string
		want   string
	}{
		{"all topics hide b", nil, "__consumer_offsets:0:0 a:0:0,1 orders:0:0,1,2"},
		{"named b refused last", []string{"b", "a"}, fmt.Sprintf("a:0:0,1 b:%d:", denied)},
		{"an unknown name is refused, not disclosed", []string{"ghost"}, fmt.Sprintf("ghost:%d:", denied)},
	} {
		t.Run(c.name, func(t *testing.T) {
			req := kmsg.NewPtrDescribeTopicPartitionsRequest()
			req.ResponsePartitionLimit = 2000
			for _, n := range c.topics {
				rt := kmsg.NewDescribeTopicPartitionsRequestTopic()
				rt.Topic = n
				req.Topics = append(req.Topics, rt)
			}
			resp := describeTopicPartitions(img, "CLIENT", req, access)
			if got := dtpSummary(resp); got != c.want {
				t.Fatalf("got %q, want %q", got, c.want)
			}
			for _, rt := range resp.Topics {
				if rt.AuthorizedOperations != int32(len(*rt.Topic)) {
					t.Errorf("%s: authorized operations %d", *rt.Topic, rt.AuthorizedOperations)
				}
			}
		})
	}
}

// The ELR lists as recorded (KIP-966), and they survive the wire.
func TestDescribeTopicPartitionsELR(t *testing.T) {
	img, d := dtpImage(t).Apply([]metadata.Record{
		&metadata.PartitionChange{TopicID: [16]byte{0xa}, Partition: 0, Leader: metadata.NoLeader, ISR: []int32{}, ELR: []int32{1}, LastKnownELR: []int32{}},
	})
	if len(d.Skipped) > 0 {
		t.Fatalf("skipped %+v", d.Skipped)
	}
	req := kmsg.NewPtrDescribeTopicPartitionsRequest()
	rt := kmsg.NewDescribeTopicPartitionsRequestTopic()
	rt.Topic = "a"
	req.Topics = append(req.Topics, rt)
	resp := describeTopicPartitions(img, "CLIENT", req, topicAccess{})
	back := kmsg.NewPtrDescribeTopicPartitionsResponse()
	if err := back.ReadFrom(resp.AppendTo(nil)); err != nil || len(back.Topics) != 1 {
		t.Fatalf("round trip: %v", err)
	}
	p := back.Topics[0].Partitions[0]
	if p.LeaderID != -1 || len(p.ISR) != 0 || fmt.Sprint(p.EligibleLeaderReplicas) != "[1]" || p.LastKnownELR == nil || len(p.LastKnownELR) != 0 {
		t.Fatalf("partition %+v, want no leader, empty ISR, ELR [1]", p)
	}
}
