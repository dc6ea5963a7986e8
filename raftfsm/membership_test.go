package raftfsm

import (
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// The leader's view of a follower follows Kafka's ReplicaState rule for
// LastCaughtUpTimestamp, applied to AppendEntries answers.
func TestReplicationCaughtUp(t *testing.T) {
	t0 := time.Unix(1000, 0)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	type answer struct {
		at     int
		term   uint64
		logEnd int64
		leader uint64
	}
	cases := []struct {
		name    string
		answers []answer
		want    int // seconds after t0; -1: never caught up
	}{
		{name: "at the leader's index", answers: []answer{{1, 1, 10, 10}}, want: 1},
		{name: "behind, never caught up", answers: []answer{{1, 1, 5, 10}, {2, 1, 9, 12}}, want: -1},
		{name: "reached what the leader had at the previous answer", answers: []answer{{1, 1, 5, 10}, {2, 1, 10, 12}}, want: 1},
		{name: "caught up now beats the previous time", answers: []answer{{1, 1, 5, 10}, {2, 1, 12, 12}}, want: 2},
		{name: "falling behind keeps the last caught-up time", answers: []answer{{1, 1, 10, 10}, {2, 1, 10, 20}, {3, 1, 11, 30}}, want: 1},
		{name: "a new term forgets the old one", answers: []answer{{1, 1, 10, 10}, {2, 2, 5, 20}}, want: -1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			o := newObservedTransport(nil)
			for _, a := range tc.answers {
				o.observe(7, a.term, a.logEnd, a.leader, at(a.at))
			}
			last := tc.answers[len(tc.answers)-1]
			r, ok := o.replication(7, last.term)
			if !ok {
				t.Fatal("nothing recorded")
			}
			want := time.Time{}
			if tc.want >= 0 {
				want = at(tc.want)
			}
			if !r.lastCaughtUp.Equal(want) {
				t.Fatalf("caught up at %v, want %v", r.lastCaughtUp, want)
			}
			if !r.lastFetch.Equal(at(last.at)) || r.logEnd != last.logEnd {
				t.Fatalf("recorded %+v after the last answer %+v", r, last)
			}
			if _, ok := o.replication(7, last.term+1); ok {
				t.Fatal("an answer of one term reported in another")
			}
		})
	}
}

// TestDescribeQuorum checks the answer has what kafka-metadata-quorum.sh
// describe --status and --replication print.
func TestDescribeQuorum(t *testing.T) {
	tc := startCluster(t, 3, func(c *Config) { c.ControllerListenerName = "CTRL" })
	li := tc.leader(10 * time.Second)
	// No brokers: what is reported comes from Raft's replication alone.
	c := NewControllerClient(ClientConfig{Voters: tc.voters})
	defer c.Close()
	ctx := ctxT(t, 20*time.Second)

	var resp *kmsg.DescribeQuorumResponse
	waitFor(t, 10*time.Second, "every voter reported by Raft", func() bool {
		var err error
		if resp, err = c.DescribeQuorum(ctx); err != nil {
			t.Fatal(err)
		}
		// Bootstrap put the configuration at index 1 in every voter's log
		// before anything is committed: wait for the first commit too.
		if resp.Topics[0].Partitions[0].HighWatermark <= 0 {
			return false
		}
		for _, v := range resp.Topics[0].Partitions[0].CurrentVoters {
			if v.LogEndOffset <= 0 || v.LastFetchTimestamp <= 0 || v.LastCaughtUpTimestamp <= 0 {
				return false
			}
		}
		return true
	})
	if resp.ErrorCode != 0 || len(resp.Topics) != 1 || resp.Topics[0].Topic != MetadataTopic {
		t.Fatalf("response %+v", resp)
	}
	p := resp.Topics[0].Partitions[0]
	leader := tc.nodes[li]
	st, err := leader.QuorumStatus(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if p.ErrorCode != 0 || p.LeaderID != leader.ID() || p.LeaderEpoch != int32(st.Term) || p.LeaderEpoch <= 0 {
		t.Fatalf("partition %+v, leader %d term %d", p, leader.ID(), st.Term)
	}
	if p.HighWatermark <= 0 || uint64(p.HighWatermark) > st.CommitIndex {
		t.Fatalf("high watermark %d, leader commit index now %d", p.HighWatermark, st.CommitIndex)
	}
	if len(p.CurrentVoters) != 3 || len(p.Observers) != 0 {
		t.Fatalf("voters %+v observers %+v", p.CurrentVoters, p.Observers)
	}
	for _, v := range p.CurrentVoters {
		if v.LogEndOffset > int64(st.LastIndex) {
			t.Fatalf("voter %d reports log end %d past the leader's last index %d", v.ReplicaID, v.LogEndOffset, st.LastIndex)
		}
		if v.LastCaughtUpTimestamp > v.LastFetchTimestamp {
			t.Fatalf("voter %d caught up at %d after its last fetch at %d", v.ReplicaID, v.LastCaughtUpTimestamp, v.LastFetchTimestamp)
		}
	}
	if len(resp.Nodes) != 3 {
		t.Fatalf("nodes %+v", resp.Nodes)
	}
	for _, nd := range resp.Nodes {
		var addr string
		for _, v := range tc.voters {
			if v.ID == nd.NodeID {
				addr = v.Addr
			}
		}
		if len(nd.Listeners) != 1 || nd.Listeners[0].Name != "CTRL" ||
			addr != nd.Listeners[0].Host+":"+strconv.Itoa(int(nd.Listeners[0].Port)) {
			t.Fatalf("node %d listeners %+v, want CTRL at %s", nd.NodeID, nd.Listeners, addr)
		}
	}

	// Any other partition is unknown, as in Kafka.
	req := kmsg.NewPtrDescribeQuorumRequest()
	rt := kmsg.NewDescribeQuorumRequestTopic()
	rt.Topic = "other"
	rt.Partitions = append(rt.Partitions, kmsg.NewDescribeQuorumRequestTopicPartition())
	req.Topics = append(req.Topics, rt)
	raw, _, err := c.Request(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if got := raw.(*kmsg.DescribeQuorumResponse).Topics[0].Partitions[0].ErrorCode; got != kerr.UnknownTopicOrPartition.Code {
		t.Fatalf("other-0: code %d", got)
	}
}
