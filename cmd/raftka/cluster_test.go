package main

import (
	"bytes"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/raftka/raftka/broker"
	"github.com/raftka/raftka/metadata"
	"github.com/raftka/raftka/raftfsm"
	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func quorumResponse(leader int32, voters, observers []kmsg.DescribeQuorumResponseTopicPartitionReplicaState, nodes ...kmsg.DescribeQuorumResponseNode) *kmsg.DescribeQuorumResponse {
	resp := kmsg.NewPtrDescribeQuorumResponse()
	tp := kmsg.NewDescribeQuorumResponseTopic()
	tp.Topic = metadataTopic
	p := kmsg.NewDescribeQuorumResponseTopicPartition()
	p.LeaderID, p.LeaderEpoch, p.HighWatermark = leader, 7, 120
	p.CurrentVoters, p.Observers = voters, observers
	tp.Partitions = append(tp.Partitions, p)
	resp.Topics = append(resp.Topics, tp)
	resp.Nodes = nodes
	return resp
}

func replicaState(id int32, leo, lastFetch int64) kmsg.DescribeQuorumResponseTopicPartitionReplicaState {
	r := kmsg.NewDescribeQuorumResponseTopicPartitionReplicaState()
	r.ReplicaID, r.LogEndOffset, r.LastFetchTimestamp = id, leo, lastFetch
	return r
}

func quorumNode(id int32, host string, port uint16) kmsg.DescribeQuorumResponseNode {
	n := kmsg.NewDescribeQuorumResponseNode()
	n.NodeID = id
	l := kmsg.NewDescribeQuorumResponseNodeListener()
	l.Name, l.Host, l.Port = "CONTROLLER", host, port
	n.Listeners = append(n.Listeners, l)
	return n
}

func clusterBroker(id int32, host string, port int32, rack string, epoch int64, fenced, shutdown bool, tags bool) kmsg.DescribeClusterResponseBroker {
	b := kmsg.NewDescribeClusterResponseBroker()
	b.NodeID, b.Host, b.Port = id, host, port
	if rack != "" {
		b.Rack = kmsg.StringPtr(rack)
	}
	b.IsFenced = fenced
	if tags {
		e := make([]byte, 8)
		for i := range 8 {
			e[7-i] = byte(epoch >> (8 * i))
		}
		b.UnknownTags.Set(broker.TagBrokerEpoch, e)
		b.UnknownTags.Set(broker.TagBrokerFenced, []byte{map[bool]byte{false: 0, true: 1}[fenced]})
		b.UnknownTags.Set(broker.TagBrokerShuttingDown, []byte{map[bool]byte{false: 0, true: 1}[shutdown]})
	}
	return b
}

func TestPrintStatus(t *testing.T) {
	now := time.UnixMilli(1_000_000)
	for _, tc := range []struct {
		name    string
		quorum  *kmsg.DescribeQuorumResponse
		brokers []kmsg.DescribeClusterResponseBroker
		want    string
	}{
		{
			name: "three voters, an observer, one broker fenced and one shutting down",
			quorum: quorumResponse(2,
				[]kmsg.DescribeQuorumResponseTopicPartitionReplicaState{replicaState(1, 118, 1_000_000-250), replicaState(2, 120, 1_000_000), replicaState(3, -1, -1)},
				[]kmsg.DescribeQuorumResponseTopicPartitionReplicaState{replicaState(4, 100, 1_000_000-1500)},
				quorumNode(1, "127.0.0.1", 19093), quorumNode(2, "127.0.0.1", 29093), quorumNode(3, "::1", 39093)),
			brokers: []kmsg.DescribeClusterResponseBroker{
				clusterBroker(1, "127.0.0.1", 9092, "a", 12, false, false, true),
				clusterBroker(2, "127.0.0.1", 9093, "", 14, false, true, true),
				clusterBroker(4, "127.0.0.1", 9095, "", 3, true, false, true),
			},
			want: `Cluster ID:    c-1
Raft leader:   2
Term:          7
Commit index:  120 (high watermark)

Metadata quorum:
NODE  ROLE      ADDRESS          LOG END  LAG  LAST CONTACT
1     follower  127.0.0.1:19093  118      2    250ms ago
2     leader    127.0.0.1:29093  120      0    0s ago
3     follower  [::1]:39093      -        -    -
4     observer  -                100      20   1.5s ago

Brokers:
ID  HOST:PORT       RACK  EPOCH  FENCED  SHUTTING DOWN
1   127.0.0.1:9092  a     12     no      no
2   127.0.0.1:9093  -     14     no      yes
4   127.0.0.1:9095  -     3      yes     no
`,
		},
		{
			name:    "no leader, a broker without raftka tags (another Kafka)",
			quorum:  quorumResponse(-1, []kmsg.DescribeQuorumResponseTopicPartitionReplicaState{replicaState(1, 130, 1_000_000+5)}, nil),
			brokers: []kmsg.DescribeClusterResponseBroker{clusterBroker(1, "h", 1, "", 0, true, false, false)},
			want: `Cluster ID:    c-1
Raft leader:   none
Term:          7
Commit index:  120 (high watermark)

Metadata quorum:
NODE  ROLE      ADDRESS  LOG END  LAG  LAST CONTACT
1     follower  -        130      0    0s ago

Brokers:
ID  HOST:PORT  RACK  EPOCH  FENCED  SHUTTING DOWN
1   h:1        -     -      yes     no
`,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cluster := kmsg.NewPtrDescribeClusterResponse()
			cluster.ClusterID, cluster.Brokers = "c-1", tc.brokers
			var out bytes.Buffer
			if err := printStatus(&out, tc.quorum, cluster, now); err != nil {
				t.Fatal(err)
			}
			if out.String() != tc.want {
				t.Errorf("got:\n%s\nwant:\n%s", out.String(), tc.want)
			}
		})
	}
}

// startNode runs one in-process raftka node (in-memory Raft voter, broker server,
// registration) and returns its client address once the broker is
// unfenced.
func startNode(t *testing.T) string {
	t.Helper()
	node, err := raftfsm.StartInMemory(raftfsm.Config{
		NodeID: 1, ClusterID: "status-cluster",
		HeartbeatInterval: 50 * time.Millisecond, SessionTimeout: 2 * time.Second,
		DefaultPartitions: 1, DefaultReplicationFactor: 1,
		Logger: zerolog.Nop(),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = node.Shutdown() })
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv, err := broker.New(broker.Options{
		Logger:    zerolog.Nop(),
		Listeners: []broker.Listener{{Name: "PLAINTEXT", Listener: ln}},
		NodeID:    1,
		Deps:      broker.Deps{Metadata: node, Controller: node.Client(), Admin: node.Client(), Quorum: node},
	})
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve() }()
	t.Cleanup(func() {
		_ = srv.Close()
		if err := <-served; !errors.Is(err, broker.ErrServerClosed) {
			t.Errorf("Serve: %v", err)
		}
	})
	life, err := broker.StartLifecycle(broker.LifecycleOptions{
		NodeID: 1, ClusterID: "status-cluster",
		Endpoints:  []metadata.Endpoint{{Listener: "PLAINTEXT", Host: "127.0.0.1", Port: uint16(ln.Addr().(*net.TCPAddr).Port)}},
		Controller: node.Client(),
		Applied:    func() uint64 { _, i := node.Current(); return i },
		Interval:   50 * time.Millisecond,
		Logger:     zerolog.Nop(),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(life.Close)
	deadline := time.Now().Add(20 * time.Second)
	for {
		img, _ := node.Current()
		if b, ok := img.Broker(1); ok && !b.Fenced {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("broker 1 not unfenced in time")
		}
		time.Sleep(5 * time.Millisecond)
	}
	return ln.Addr().String()
}

func TestClusterStatusAgainstOneNode(t *testing.T) {
	addr := startNode(t)
	out := mustRun(t, "", "cluster", "status", "--bootstrap-server", addr, "--request-timeout", "20s")
	for _, want := range []string{
		"Cluster ID:    status-cluster\n",
		"Raft leader:   1\n",
		"\n1     leader  ",
		"Brokers:\nID  HOST:PORT",
		"\n1   " + addr + "  -     ",
		"  no      no\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("status output lacks %q:\n%s", want, out)
		}
	}
	if id := mustRun(t, "", "cluster", "id", "--bootstrap-server", addr); id != "Cluster ID: status-cluster\n" {
		t.Errorf("cluster id printed %q", id)
	}
}
