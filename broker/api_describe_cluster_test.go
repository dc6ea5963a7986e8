package broker

import (
	"fmt"
	"testing"

	"github.com/raftka/raftka/metadata"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

type fixedLeader int32

func (f fixedLeader) LeaderID() int32 { return int32(f) }

func TestDescribeCluster(t *testing.T) {
	img := clusterImage(t, 9001)
	img, _ = img.Apply([]metadata.Record{&metadata.BrokerShutdown{BrokerID: 2, BrokerEpoch: 2, InControlledShutdown: true}})
	type brokerRow struct {
		id                   int32
		epoch                int64
		fenced, shuttingDown bool
	}
	for _, tc := range []struct {
		name       string
		version    int16
		fenced     bool // IncludeFencedBrokers
		tag        bool // TagIncludeFencedBrokers
		leader     int32
		brokers    []brokerRow
		controller int32
	}{
		{"v0 live only", 0, false, false, -1, []brokerRow{{1, 1, false, false}, {2, 2, false, true}}, 1},
		{"v1 tag asks for fenced", 1, false, true, 2, []brokerRow{{1, 1, false, false}, {2, 2, false, true}, {3, 3, true, false}}, 2},
		{"v2 field asks for fenced", 2, true, false, 3, []brokerRow{{1, 1, false, false}, {2, 2, false, true}, {3, 3, true, false}}, 1},
		{"v2 raft leader on another listener", 2, false, false, 4, []brokerRow{{1, 1, false, false}, {2, 2, false, true}}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := adminServer(t, img, nil, nil)
			s.deps.Quorum = fixedLeader(tc.leader)
			req := kmsg.NewPtrDescribeClusterRequest()
			req.Version, req.IncludeFencedBrokers, req.IncludeClusterAuthorizedOperations = tc.version, tc.fenced, true
			if tc.tag {
				req.UnknownTags.Set(TagIncludeFencedBrokers, []byte{1})
			}
			resp := call[*kmsg.DescribeClusterResponse](t, s, req)
			if resp.ErrorCode != 0 || resp.ClusterID != "cluster-x" || resp.ControllerID != tc.controller || resp.ClusterAuthorizedOperations != clusterOps {
				t.Fatalf("answer: code %d cluster %q controller %d ops %d", resp.ErrorCode, resp.ClusterID, resp.ControllerID, resp.ClusterAuthorizedOperations)
			}
			if tc.version >= 1 && resp.EndpointType != 1 {
				t.Errorf("endpoint type %d", resp.EndpointType)
			}
			var got []brokerRow
			for _, b := range resp.Brokers {
				x := ReadBrokerExtensions(b)
				got = append(got, brokerRow{b.NodeID, x.Epoch, x.Fenced, x.ShuttingDown})
				if tc.version >= 2 && b.IsFenced != x.Fenced {
					t.Errorf("broker %d: IsFenced %v, tag %v", b.NodeID, b.IsFenced, x.Fenced)
				}
				if b.NodeID == 2 && (b.Rack == nil || *b.Rack != "b" || b.Port != 9002 || b.Host != "127.0.0.1") {
					t.Errorf("broker 2: %+v", b)
				}
			}
			if fmt.Sprint(got) != fmt.Sprint(tc.brokers) {
				t.Errorf("brokers %v, want %v", got, tc.brokers)
			}
		})
	}
}

func TestDescribeClusterEndpointTypes(t *testing.T) {
	s := adminServer(t, clusterImage(t, 9001), nil, nil)
	for typ, want := range map[int8]int16{1: 0, 2: kerr.MismatchedEndpointType.Code, 7: kerr.UnsupportedEndpointType.Code} {
		req := kmsg.NewPtrDescribeClusterRequest()
		req.Version, req.EndpointType = 1, typ
		resp := call[*kmsg.DescribeClusterResponse](t, s, req)
		if resp.ErrorCode != want || (want != 0 && resp.ErrorMessage == nil) {
			t.Errorf("endpoint type %d: code %d, want %d", typ, resp.ErrorCode, want)
		}
		if resp.ClusterAuthorizedOperations != authorizedOpsUnset {
			t.Errorf("authorized operations %d without asking", resp.ClusterAuthorizedOperations)
		}
	}
}

func TestReadBrokerExtensionsWithoutTags(t *testing.T) {
	b := kmsg.NewDescribeClusterResponseBroker()
	b.IsFenced = true
	b.UnknownTags.Set(TagBrokerEpoch, []byte{1, 2}) // malformed: ignored
	if x := ReadBrokerExtensions(b); x.Epoch != -1 || !x.Fenced || x.ShuttingDown {
		t.Fatalf("%+v", x)
	}
}

func TestDescribeQuorum(t *testing.T) {
	quorum := func() *kmsg.DescribeQuorumResponse {
		resp := kmsg.NewPtrDescribeQuorumResponse()
		resp.Version = 2
		tagged(&resp.UnknownTags)
		tp := kmsg.NewDescribeQuorumResponseTopic()
		tp.Topic = metadataTopic
		p := kmsg.NewDescribeQuorumResponseTopicPartition()
		p.LeaderID, p.LeaderEpoch, p.HighWatermark = 1, 4, 99
		v := kmsg.NewDescribeQuorumResponseTopicPartitionReplicaState()
		v.ReplicaID, v.LogEndOffset, v.LastFetchTimestamp, v.LastCaughtUpTimestamp = 1, 99, 5, 5
		p.CurrentVoters = append(p.CurrentVoters, v)
		tp.Partitions = append(tp.Partitions, p)
		resp.Topics = append(resp.Topics, tp)
		return resp
	}
	valid := func(v int16) *kmsg.DescribeQuorumRequest {
		req := kmsg.NewPtrDescribeQuorumRequest()
		req.Version = v
		tp := kmsg.NewDescribeQuorumRequestTopic()
		tp.Topic = metadataTopic
		tp.Partitions = append(tp.Partitions, kmsg.NewDescribeQuorumRequestTopicPartition())
		req.Topics = append(req.Topics, tp)
		return req
	}
	for v := int16(0); v <= 2; v++ {
		fa := &adminCtrl{describeQuorum: quorum}
		s := adminServer(t, clusterImage(t, 9001), fa, nil)
		resp := call[*kmsg.DescribeQuorumResponse](t, s, valid(v))
		p := resp.Topics[0].Partitions[0]
		if resp.ErrorCode != 0 || resp.UnknownTags.Len() != 0 || p.LeaderID != 1 || p.LeaderEpoch != 4 || p.HighWatermark != 99 || len(p.CurrentVoters) != 1 {
			t.Errorf("v%d: %+v", v, resp)
		}
		if v >= 1 && p.CurrentVoters[0].LastFetchTimestamp != 5 {
			t.Errorf("v%d: last fetch %d", v, p.CurrentVoters[0].LastFetchTimestamp)
		}

		bad := valid(v)
		bad.Topics[0].Topic = "orders"
		wrongPartition := valid(v)
		wrongPartition.Topics[0].Partitions[0].Partition = 1
		twoTopics := valid(v)
		twoTopics.Topics = append(twoTopics.Topics, twoTopics.Topics[0])
		// Kafka's Raft client answers each partition named
		// UNKNOWN_TOPIC_OR_PARTITION, with no top-level error
		// (KafkaRaftClient.handleDescribeQuorumRequest).
		for _, req := range []*kmsg.DescribeQuorumRequest{bad, wrongPartition, twoTopics, kmsg.NewPtrDescribeQuorumRequest()} {
			req.Version = v
			resp := call[*kmsg.DescribeQuorumResponse](t, s, req)
			if resp.ErrorCode != 0 || len(resp.Topics) != len(req.Topics) {
				t.Errorf("v%d: %+v answered %d with %d topics, want no top-level error and one per topic", v, req.Topics, resp.ErrorCode, len(resp.Topics))
				continue
			}
			for i, rt := range resp.Topics {
				if rt.Topic != req.Topics[i].Topic || len(rt.Partitions) != len(req.Topics[i].Partitions) {
					t.Errorf("v%d: topic %d answered %+v", v, i, rt)
					continue
				}
				for _, p := range rt.Partitions {
					if p.ErrorCode != kerr.UnknownTopicOrPartition.Code {
						t.Errorf("v%d: %s/%d answered %d, want UNKNOWN_TOPIC_OR_PARTITION", v, rt.Topic, p.Partition, p.ErrorCode)
					}
				}
			}
		}
	}
	s := adminServer(t, clusterImage(t, 9001), &adminCtrl{err: kerr.RequestTimedOut}, nil)
	if resp := call[*kmsg.DescribeQuorumResponse](t, s, valid(2)); resp.ErrorCode != kerr.RequestTimedOut.Code || resp.ErrorMessage == nil {
		t.Errorf("failed call: %d", resp.ErrorCode)
	}
}

func TestElectLeaders(t *testing.T) {
	for v := int16(0); v <= 2; v++ {
		fa := &adminCtrl{}
		s := adminServer(t, clusterImage(t, 9001), fa, nil)
		req := kmsg.NewPtrElectLeadersRequest()
		req.Version, req.ElectionType, req.TimeoutMillis = v, 1, 2000
		tp := kmsg.NewElectLeadersRequestTopic()
		tp.Topic, tp.Partitions = "orders", []int32{0, 1}
		req.Topics = append(req.Topics, tp)
		resp := call[*kmsg.ElectLeadersResponse](t, s, req)
		if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 2 || resp.UnknownTags.Len() != 0 {
			t.Fatalf("v%d: %+v", v, resp)
		}
		fr := fa.requests()[0].(*kmsg.ElectLeadersRequest)
		wantType := int8(1)
		if v == 0 {
			wantType = 0 // v0 has no election type: always preferred
		}
		if fr.ElectionType != wantType || fr.TimeoutMillis != 2000 {
			t.Errorf("v%d: forwarded type %d timeout %d", v, fr.ElectionType, fr.TimeoutMillis)
		}
	}
	s := adminServer(t, clusterImage(t, 9001), &adminCtrl{err: kerr.RequestTimedOut}, nil)
	req := kmsg.NewPtrElectLeadersRequest()
	req.Version = 2
	tp := kmsg.NewElectLeadersRequestTopic()
	tp.Topic, tp.Partitions = "orders", []int32{0}
	req.Topics = append(req.Topics, tp)
	resp := call[*kmsg.ElectLeadersResponse](t, s, req)
	if resp.ErrorCode != kerr.RequestTimedOut.Code || resp.Topics[0].Partitions[0].ErrorCode != kerr.RequestTimedOut.Code {
		t.Errorf("failed call: %+v", resp)
	}
}
