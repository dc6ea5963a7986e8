package compat

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// reassignRows are the rows of the partition reassignment APIs (KIP-455):
// AlterPartitionReassignments (45) and ListPartitionReassignments (46), and
// of UnregisterBroker (64), the broker-membership step after a drain.
// The cluster has one broker and one single-replica topic, so every
// answer here is a refusal or an empty list: the moves themselves are
// tested on real multi-node clusters (test/e2e).
func reassignRows() []row {
	return []row{
		{45, lowest, "cancel with nothing in progress", "ReplicationControlManager.cancelPartitionReassignment: NO_REASSIGNMENT_IN_PROGRESS; the top-level error stays NONE",
			func(v int16, e *env) kmsg.Request { return alterReassignments(v, 0, nil) },
			func(r kmsg.Response, _ *env) error {
				resp := r.(*kmsg.AlterPartitionAssignmentsResponse)
				if err := want("top level", resp.ErrorCode, 0); err != nil {
					return err
				}
				return want("partition", resp.Topics[0].Partitions[0].ErrorCode, kerr.NoReassignmentInProgress.Code)
			}},
		{45, highest, "unregistered target broker", "ReplicationControlManager.validateManualPartitionAssignment: a broker that is not registered is INVALID_REPLICA_ASSIGNMENT",
			func(v int16, e *env) kmsg.Request { return alterReassignments(v, 0, []int32{7}) },
			func(r kmsg.Response, _ *env) error {
				return want("partition", r.(*kmsg.AlterPartitionAssignmentsResponse).Topics[0].Partitions[0].ErrorCode, kerr.InvalidReplicaAssignment.Code)
			}},
		{45, highest, "unchanged assignment and an unknown partition", "ReplicationControlManager.alterPartitionReassignment: each partition answered on its own; the current replicas again is NONE (nothing to move), a partition the topic lacks is UNKNOWN_TOPIC_OR_PARTITION",
			func(v int16, e *env) kmsg.Request {
				r := alterReassignments(v, 0, []int32{1})
				r.Topics[0].Partitions = append(r.Topics[0].Partitions, kmsg.AlterPartitionAssignmentsRequestTopicPartition{Partition: 9, Replicas: []int32{1}})
				return r
			},
			func(r kmsg.Response, _ *env) error {
				ps := r.(*kmsg.AlterPartitionAssignmentsResponse).Topics[0].Partitions
				if err := want("partition 0", ps[0].ErrorCode, 0); err != nil {
					return err
				}
				return want("partition 9", ps[1].ErrorCode, kerr.UnknownTopicOrPartition.Code)
			}},
		{46, lowest, "nothing moving", "ReplicationControlManager.listPartitionReassignments: null topics list every ongoing reassignment; none here",
			func(v int16, e *env) kmsg.Request {
				r := kmsg.NewPtrListPartitionReassignmentsRequest()
				r.Version, r.TimeoutMillis = v, 30000
				return r
			},
			func(r kmsg.Response, _ *env) error {
				resp := r.(*kmsg.ListPartitionReassignmentsResponse)
				if err := want("top level", resp.ErrorCode, 0); err != nil {
					return err
				}
				if len(resp.Topics) != 0 {
					return fmt.Errorf("%d topics listed, want none", len(resp.Topics))
				}
				return nil
			}},
		{46, highest, "named unknown topic left out", "ReplicationControlManager.listPartitionReassignments: a named topic that does not exist is skipped, not an error",
			func(v int16, e *env) kmsg.Request {
				r := kmsg.NewPtrListPartitionReassignmentsRequest()
				r.Version, r.TimeoutMillis = v, 30000
				for _, name := range []string{noTopic, topic} {
					t := kmsg.NewListPartitionReassignmentsRequestTopic()
					t.Topic, t.Partitions = name, []int32{0}
					r.Topics = append(r.Topics, t)
				}
				return r
			},
			func(r kmsg.Response, _ *env) error {
				resp := r.(*kmsg.ListPartitionReassignmentsResponse)
				if resp.ErrorCode != 0 || len(resp.Topics) != 0 {
					return fmt.Errorf("answer %v with %d topics, want NONE and none", kerr.ErrorForCode(resp.ErrorCode), len(resp.Topics))
				}
				return nil
			}},
		// UnregisterBroker (64), one version.
		{64, lowest, "unknown broker id", "QuorumController.unregisterBroker via ClusterControlManager: an id with no registration is BROKER_ID_NOT_REGISTERED (forwarded by the broker, KafkaApis UNREGISTER_BROKER)",
			func(v int16, e *env) kmsg.Request { return unregisterBroker(v, 99) },
			func(r kmsg.Response, _ *env) error {
				return want("top level", r.(*kmsg.UnregisterBrokerResponse).ErrorCode, kerr.BrokerIDNotRegistered.Code)
			}},
		{64, highest, "negative broker id", "QuorumController.unregisterBroker: no broker is registered under a negative id, BROKER_ID_NOT_REGISTERED",
			func(v int16, e *env) kmsg.Request { return unregisterBroker(v, -1) },
			func(r kmsg.Response, _ *env) error {
				return want("top level", r.(*kmsg.UnregisterBrokerResponse).ErrorCode, kerr.BrokerIDNotRegistered.Code)
			}},
	}
}

func unregisterBroker(v int16, id int32) *kmsg.UnregisterBrokerRequest {
	r := kmsg.NewPtrUnregisterBrokerRequest()
	r.Version, r.BrokerID = v, id
	return r
}

func alterReassignments(v int16, partition int32, replicas []int32) *kmsg.AlterPartitionAssignmentsRequest {
	r := kmsg.NewPtrAlterPartitionAssignmentsRequest()
	r.Version, r.TimeoutMillis = v, 30000
	r.AllowReplicationFactorChange = v < 1
	t := kmsg.NewAlterPartitionAssignmentsRequestTopic()
	t.Topic = topic
	p := kmsg.NewAlterPartitionAssignmentsRequestTopicPartition()
	p.Partition, p.Replicas = partition, replicas
	t.Partitions = append(t.Partitions, p)
	r.Topics = append(r.Topics, t)
	return r
}
