package raftfsm

import (
	"slices"
	"time"

	"github.com/raftka/raftka/metadata"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Partition reassignment (KIP-455): AlterPartitionReassignments and
// ListPartitionReassignments, as Kafka's ReplicationControlManager serves
// them. Every rule is metadata's (Image.PlanReassignment,
// CompleteReassignment); this file turns requests into those calls and
// the results into Kafka answers. Completion itself happens in
// decideAlterPartition (completeReassignments below), in the batch of the
// ISR change that makes it possible, and once when a controller starts.

// decideAlterPartitionReassignments starts, replaces or cancels (null
// replicas) the reassignment of each named partition, in request order
// against the image as the earlier ones left it. Errors are per partition;
// the top-level error stays NONE, as Kafka's controller answers.
func decideAlterPartitionReassignments(req *kmsg.AlterPartitionAssignmentsRequest) decideFunc {
	return func(c *controller, img *metadata.Image, now time.Time) decision {
		resp := req.ResponseKind().(*kmsg.AlterPartitionAssignmentsResponse)
		resp.AllowReplicationFactorChange = req.AllowReplicationFactorChange
		allowRF := req.Version < 1 || req.AllowReplicationFactorChange
		unclean := c.unclean(img)
		var recs []metadata.Record
		cur := img
		for _, t := range req.Topics {
			rt := kmsg.NewAlterPartitionAssignmentsResponseTopic()
			rt.Topic = t.Topic
			ti, tok := cur.Topic(t.Topic)
			for _, p := range t.Partitions {
				rp := kmsg.NewAlterPartitionAssignmentsResponseTopicPartition()
				rp.Partition = p.Partition
				plan, err := cur.PlanReassignment(metadata.ReassignRequest{
					Topic: t.Topic, Partition: p.Partition, Target: p.Replicas,
					AllowReplicationFactorChange: allowRF, Unclean: tok && unclean.unclean(ti),
					MinISR: minISRIf(tok, unclean, ti),
				})
				if err == nil && len(plan) > 0 {
					recs = append(recs, plan...)
					cur, _ = cur.Apply(plan)
				}
				rp.ErrorCode, rp.ErrorMessage = errCode(err), errMsg(err)
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
		if len(recs) > 0 {
			c.n.log.Info().Int("records", len(recs)).Msg("partition reassignment")
		}
		return decision{recs: recs, resp: resp}
	}
}

// decideListPartitionReassignments reads the ongoing reassignments from
// the image: all of them for a null topic list, otherwise those of the
// named partitions that are being reassigned (an unknown topic or a
// partition that is not moving is left out, as in Kafka).
func decideListPartitionReassignments(req *kmsg.ListPartitionReassignmentsRequest) decideFunc {
	return func(c *controller, img *metadata.Image, now time.Time) decision {
		resp := req.ResponseKind().(*kmsg.ListPartitionReassignmentsResponse)
		add := func(topic string, p metadata.PartitionRegistration) {
			rp := kmsg.NewListPartitionReassignmentsResponseTopicPartition()
			rp.Partition = p.Partition
			rp.Replicas = slices.Clone(p.Replicas)
			rp.AddingReplicas = orEmpty(p.AddingReplicas)
			rp.RemovingReplicas = orEmpty(p.RemovingReplicas)
			if n := len(resp.Topics); n == 0 || resp.Topics[n-1].Topic != topic {
				rt := kmsg.NewListPartitionReassignmentsResponseTopic()
				rt.Topic = topic
				resp.Topics = append(resp.Topics, rt)
			}
			rt := &resp.Topics[len(resp.Topics)-1]
			rt.Partitions = append(rt.Partitions, rp)
		}
		if req.Topics == nil {
			for _, o := range img.Reassignments() {
				add(o.Topic, o.Partition)
			}
			return decision{resp: resp}
		}
		for _, t := range req.Topics {
			ti, ok := img.Topic(t.Topic)
			if !ok {
				continue
			}
			for _, pn := range t.Partitions {
				if p, ok := ti.Partition(pn); ok && p.Reassigning() {
					add(t.Topic, p)
				}
			}
		}
		return decision{resp: resp}
	}
}

func orEmpty(s []int32) []int32 {
	if s == nil {
		return []int32{}
	}
	return slices.Clone(s)
}

// completeReassignment returns the records that finish a partition's
// reassignment now that cur holds its latest ISR, and the image after
// them; decideAlterPartition calls it after every ISR change it commits.
func completeReassignment(cur *metadata.Image, topicID [16]byte, partition int32) ([]metadata.Record, *metadata.Image) {
	recs := cur.CompleteReassignment(topicID, partition)
	if len(recs) == 0 {
		return nil, cur
	}
	next, _ := cur.Apply(recs)
	return recs, next
}

// completeReadyReassignments commits, once per controller term, the
// completion of every reassignment whose target is already in the ISR, so
// a partition that became ready without an AlterPartition (an election
// that shrank the ISR onto the target) does not stay half moved.
func (c *controller) completeReadyReassignments() error {
	img, _ := c.n.pub.Latest()
	recs := img.CompletableReassignments()
	if len(recs) == 0 {
		return nil
	}
	c.n.log.Info().Int("records", len(recs)).Msg("completing ready partition reassignments")
	return c.commit(recs)
}

// minISRIf is the topic's min.insync.replicas, or 1 when it is unknown.
func minISRIf(known bool, pol policy, t metadata.TopicImage) int {
	if !known {
		return 1
	}
	return pol.minInsync(t)
}
