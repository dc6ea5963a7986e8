package broker

// DescribeLogDirs (key 35): v1-v4, as Kafka 4.
//
// Behaviour (Kafka's ReplicaManager.describeLogDirs): one entry per log dir
// (log.dirs, absolute paths), listing the partitions of the topics asked for
// (all when Topics is null) that it holds, with each partition's size in
// bytes and its offset lag. A replica moving to another dir
// (AlterReplicaLogDirs) is also listed under that dir with IsFuture and the
// lag of the future log behind the current one (Kafka's
// getLogEndOffsetLag: current LEO - future LEO). The lag of a current
// replica is Kafka's getLogEndOffsetLag for one: max(HW - LEO, 0) of the
// local log. That is not the distance to the leader's end offset: a
// replica's high watermark never exceeds its own end offset (a follower
// takes min(leader HW, own LEO)), so Kafka, and raftka with it, answers 0
// for every current replica; the field exists for future replicas, whose
// lag is measured against the current one. A log dir whose total and
// usable space cannot be read (statfs) reports -1 for them. A log dir that
// failed (an I/O error took it offline) is listed with KAFKA_STORAGE_ERROR
// and nothing else, as Kafka lists it.
//
// Version notes: v0 is not served, as in Kafka 4. v2: flexible. v3:
// top-level ErrorCode. v4: TotalBytes and UsableBytes.

import (
	"context"
	"path/filepath"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	register(apiEntry{
		key:           35,
		advertisedMin: 1, min: 1, max: 4,
		concurrent: true, // reads only
		handle:     handleDescribeLogDirs,
	})
}

func handleDescribeLogDirs(_ context.Context, rc *request, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.DescribeLogDirsRequest)
	resp := req.ResponseKind().(*kmsg.DescribeLogDirsResponse)
	srv := rc.conn.srv
	if !rc.authorizeCluster(opDescribe) {
		resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
		return resp, nil
	}

	var want map[string]map[int32]bool // nil: everything
	if req.Topics != nil {
		want = map[string]map[int32]bool{}
		for _, t := range req.Topics {
			if want[t.Topic] == nil {
				want[t.Topic] = map[int32]bool{}
			}
			for _, p := range t.Partitions {
				want[t.Topic][p] = true
			}
		}
	}

	type dirTopics map[string][]kmsg.DescribeLogDirsResponseDirTopicPartition
	dirs := map[string]dirTopics{}
	var order []string
	addDir := func(d string) {
		if abs, err := filepath.Abs(d); err == nil {
			d = abs
		}
		if _, ok := dirs[d]; !ok {
			dirs[d] = dirTopics{}
			order = append(order, d)
		}
	}
	for _, d := range srv.parts.logDirs {
		addDir(d)
	}
	if srv.deps.Replicas != nil {
		for _, p := range srv.deps.Replicas.Partitions() {
			if want != nil && !want[p.Topic()][p.Index()] {
				continue
			}
			l := p.Log()
			d := filepath.Dir(l.Dir())
			if abs, err := filepath.Abs(d); err == nil {
				d = abs
			}
			addDir(d)
			dp := kmsg.NewDescribeLogDirsResponseDirTopicPartition()
			dp.Partition, dp.Size = p.Index(), l.Size()
			dp.OffsetLag = max(l.HighWatermark()-l.LogEndOffset(), 0)
			dirs[d][p.Topic()] = append(dirs[d][p.Topic()], dp)
		}
	}
	offline := map[string]bool{}
	if srv.parts.offlineDirs != nil {
		for _, d := range srv.parts.offlineDirs() {
			if abs, err := filepath.Abs(d); err == nil {
				d = abs
			}
			offline[d] = true
		}
	}
	if srv.deps.Replicas != nil {
		for _, mv := range srv.deps.Replicas.LogDirMoves() {
			if want != nil && !want[mv.Topic][mv.Partition] {
				continue
			}
			p, err := srv.deps.Replicas.Partition(mv.Topic, mv.Partition)
			if err != nil {
				continue
			}
			d := mv.Dest
			if abs, err := filepath.Abs(d); err == nil {
				d = abs
			}
			addDir(d)
			dp := kmsg.NewDescribeLogDirsResponseDirTopicPartition()
			dp.Partition, dp.Size, dp.IsFuture = mv.Partition, mv.Size, true
			dp.OffsetLag = max(p.Log().LogEndOffset()-mv.LogEndOffset, 0)
			dirs[d][mv.Topic] = append(dirs[d][mv.Topic], dp)
		}
	}
	for _, d := range order {
		rd := kmsg.NewDescribeLogDirsResponseDir()
		rd.Dir = d
		if offline[d] {
			// Kafka lists a failed dir with only its error; the sizes
			// keep their -1 defaults.
			rd.ErrorCode = kerr.KafkaStorageError.Code
			resp.Dirs = append(resp.Dirs, rd)
			continue
		}
		rd.TotalBytes, rd.UsableBytes = diskSpace(d)
		names := make([]string, 0, len(dirs[d]))
		for n := range dirs[d] {
			names = append(names, n)
		}
		slices.Sort(names)
		for _, n := range names {
			rt := kmsg.NewDescribeLogDirsResponseDirTopic()
			rt.Topic = n
			rt.Partitions = dirs[d][n]
			slices.SortFunc(rt.Partitions, func(a, b kmsg.DescribeLogDirsResponseDirTopicPartition) int { return int(a.Partition - b.Partition) })
			rd.Topics = append(rd.Topics, rt)
		}
		resp.Dirs = append(resp.Dirs, rd)
	}
	return resp, nil
}
