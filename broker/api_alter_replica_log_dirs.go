package broker

// AlterReplicaLogDirs (key 34): v1-v2, as Kafka 4 (v0 was removed by
// KIP-896).
//
// Behaviour (Kafka's ReplicaManager.alterReplicaLogDirs): CLUSTER ALTER is
// required (every partition answers CLUSTER_AUTHORIZATION_FAILED without
// it). Each partition is moved to the named dir of this broker, which must
// be one of log.dirs by absolute path (LOG_DIR_NOT_FOUND) and online
// (KAFKA_STORAGE_ERROR); a partition whose replica is offline answers
// KAFKA_STORAGE_ERROR; one not hosted here answers REPLICA_NOT_AVAILABLE,
// and the dir is remembered for when the replica is created, as Kafka
// does. A topic whose future log dir name would pass 255 characters
// answers INVALID_TOPIC_EXCEPTION (Kafka's KAFKA-4893 limit). The move runs
// in the background (storage/move.go: a "-future" log copied while the
// replica serves, then swapped), and DescribeLogDirs shows it as a future
// replica until it is done. A partition named twice takes the last dir, as
// Kafka's map does; each is answered once.
//
// Version notes: v2 is flexible.

import (
	"context"
	"errors"
	"path/filepath"
	"slices"
	"strconv"

	"github.com/raftka/raftka/broker/kafkacode"
	"github.com/raftka/raftka/storage"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	register(apiEntry{
		key:           34,
		advertisedMin: 1, min: 1, max: 2,
		handle: handleAlterReplicaLogDirs,
	})
}

// kafkaFutureDirNameLen is the length of Kafka's future log dir name for
// a partition: "<topic>-<partition>.<32 hex digits>-future".
func kafkaFutureDirNameLen(topic string, partition int32) int {
	return len(topic) + 1 + len(strconv.Itoa(int(partition))) + 1 + 32 + len(storage.FutureSuffix)
}

func handleAlterReplicaLogDirs(_ context.Context, rc *request, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.AlterReplicaLogDirsRequest)
	resp := req.ResponseKind().(*kmsg.AlterReplicaLogDirsResponse)
	srv := rc.conn.srv
	type tp struct {
		topic     string
		partition int32
	}
	dest := map[tp]string{}
	var order []tp
	for _, d := range req.Dirs {
		for _, t := range d.Topics {
			for _, p := range t.Partitions {
				k := tp{t.Topic, p}
				if _, seen := dest[k]; !seen {
					order = append(order, k)
				}
				dest[k] = d.Dir
			}
		}
	}
	authorized := rc.authorizeCluster(opAlter)
	// The request names dirs by path; raftka's are log.dirs as written.
	configured := map[string]string{}
	for _, d := range srv.parts.logDirs {
		abs := d
		if a, err := filepath.Abs(d); err == nil {
			abs = a
		}
		configured[abs] = d
	}
	offline := map[string]bool{}
	if srv.parts.offlineDirs != nil {
		for _, d := range srv.parts.offlineDirs() {
			offline[d] = true
		}
	}
	results := map[string]*kmsg.AlterReplicaLogDirsResponseTopic{}
	var topics []string
	for _, k := range order {
		code := int16(0)
		switch {
		case !authorized:
			code = kerr.ClusterAuthorizationFailed.Code
		case kafkaFutureDirNameLen(k.topic, k.partition) > 255:
			code = kerr.InvalidTopicException.Code
		default:
			code = moveReplica(srv, configured, offline, k.topic, k.partition, dest[k])
		}
		rt := results[k.topic]
		if rt == nil {
			t := kmsg.NewAlterReplicaLogDirsResponseTopic()
			t.Topic = k.topic
			rt = &t
			results[k.topic] = rt
			topics = append(topics, k.topic)
		}
		rp := kmsg.NewAlterReplicaLogDirsResponseTopicPartition()
		rp.Partition, rp.ErrorCode = k.partition, code
		rt.Partitions = append(rt.Partitions, rp)
	}
	slices.Sort(topics)
	for _, t := range topics {
		resp.Topics = append(resp.Topics, *results[t])
	}
	return resp, nil
}

// moveReplica starts one move and returns its error code.
func moveReplica(srv *Server, configured map[string]string, offline map[string]bool, topic string, partition int32, path string) int16 {
	abs := path
	if a, err := filepath.Abs(path); err == nil {
		abs = a
	}
	dir, ok := configured[abs]
	if !ok {
		return kerr.LogDirNotFound.Code
	}
	if offline[dir] {
		return kerr.KafkaStorageError.Code
	}
	if srv.deps.Replicas == nil {
		return kerr.ReplicaNotAvailable.Code
	}
	err := srv.deps.Replicas.MoveLogDir(topic, partition, dir)
	switch {
	case err == nil:
		return 0
	case errors.Is(err, storage.ErrNoLog):
		// Kafka keeps REPLICA_NOT_AVAILABLE here for compatibility (its
		// NotLeaderOrFollower case).
		return kerr.ReplicaNotAvailable.Code
	}
	code := kafkacode.Of(err)
	if code == kerr.UnknownServerError.Code {
		srv.log.Warn().Err(err).Str("topic", topic).Int32("partition", partition).Str("dir", dir).Msg("AlterReplicaLogDirs: cannot move the replica")
	}
	return code
}
