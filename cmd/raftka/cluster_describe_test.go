package main

import (
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func sampleQuorum() *kmsg.DescribeQuorumResponse {
	resp := kmsg.NewPtrDescribeQuorumResponse()
	t := kmsg.NewDescribeQuorumResponseTopic()
	p := kmsg.NewDescribeQuorumResponseTopicPartition()
	p.LeaderID, p.LeaderEpoch, p.HighWatermark = 2, 5, 100
	st := func(id int32, dir byte, end, fetch, caught int64) kmsg.DescribeQuorumResponseTopicPartitionReplicaState {
		s := kmsg.NewDescribeQuorumResponseTopicPartitionReplicaState()
		s.ReplicaID, s.LogEndOffset, s.LastFetchTimestamp, s.LastCaughtUpTimestamp = id, end, fetch, caught
		s.ReplicaDirectoryID = [16]byte{dir}
		return s
	}
	p.CurrentVoters = append(p.CurrentVoters, st(1, 1, 90, 1000, 900), st(2, 2, 100, 1000, 1000))
	p.Observers = append(p.Observers, st(4, 0, -1, -1, -1))
	t.Partitions = append(t.Partitions, p)
	resp.Topics = append(resp.Topics, t)
	for _, id := range []int32{1, 2} {
		n := kmsg.NewDescribeQuorumResponseNode()
		n.NodeID = id
		l := kmsg.NewDescribeQuorumResponseNodeListener()
		l.Name, l.Host, l.Port = "CONTROLLER", "h"+string(rune('0'+id)), 9093
		n.Listeners = append(n.Listeners, l)
		resp.Nodes = append(resp.Nodes, n)
	}
	return resp
}

func TestPrintQuorumStatus(t *testing.T) {
	var b strings.Builder
	if err := printQuorumStatus(&b, "cid", sampleQuorum(), time.Unix(2, 0)); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"ClusterId:              cid\n", "LeaderId:               2\n", "LeaderEpoch:            5\n",
		"HighWatermark:          100\n", "MaxFollowerLag:         10\n", "MaxFollowerLagTimeMs:   100\n",
		`CurrentVoters:          [{"id": 1, "directoryId": "AQAAAAAAAAAAAAAAAAAAAA", "endpoints": ["CONTROLLER://h1:9093"]}, {"id": 2, "directoryId": "AgAAAAAAAAAAAAAAAAAAAA", "endpoints": ["CONTROLLER://h2:9093"]}]`,
		`CurrentObservers:       [{"id": 4, "directoryId": "AAAAAAAAAAAAAAAAAAAAAA"}]`,
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("missing %q in:\n%s", want, b.String())
		}
	}
}

func TestPrintReplication(t *testing.T) {
	var b strings.Builder
	if err := printReplication(&b, sampleQuorum()); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	if len(lines) != 4 {
		t.Fatalf("%d lines:\n%s", len(lines), b.String())
	}
	for i, want := range [][]string{
		{"NodeId", "DirectoryId", "LogEndOffset", "Lag", "LastFetchTimestamp", "LastCaughtUpTimestamp", "Status"},
		{"2", "AgAAAAAAAAAAAAAAAAAAAA", "100", "0", "1000", "1000", "Leader"},
		{"1", "AQAAAAAAAAAAAAAAAAAAAA", "90", "10", "1000", "900", "Follower"},
		{"4", "AAAAAAAAAAAAAAAAAAAAAA", "-1", "0", "-1", "-1", "Observer"},
	} {
		if got := strings.Fields(lines[i]); strings.Join(got, " ") != strings.Join(want, " ") {
			t.Errorf("line %d: %q, want %q", i, got, want)
		}
	}
}
