package raftfsm

import (
	"errors"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/raftka/raftka/metadata"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Leadership and ISR changes. Every rule (who may lead, who stays in the
// ISR, when an election is unclean, what an AlterPartition may do, which
// leaderships a rebalance moves back) is metadata's: BuildPartitionChange,
// Image.ValidateAlterPartition and Image.PreferredLeaderElections. This file only chooses which partitions to
// hand them, with which reason, and turns the results into Kafka answers.

// uncleanKey is the topic config (and broker default) that allows electing
// a replica outside the ISR.
const uncleanKey = "unclean.leader.election.enable"

// uncleanPolicy reports, per topic, whether unclean.leader.election.enable
// is in effect, resolving it as Kafka's controller does: the topic's
// override, then the dynamic config of this controller's node, then the
// cluster-wide dynamic default, then server.properties (def).
func uncleanPolicy(img *metadata.Image, nodeID int32, def bool) func(metadata.TopicImage) bool {
	src := metadata.ConfigSources{
		DynamicBroker:  img.BrokerConfigs(nodeID),
		DynamicCluster: img.ClusterConfigs(),
		Static:         map[string]string{uncleanKey: strconv.FormatBool(def)},
	}
	return func(t metadata.TopicImage) bool {
		s := src
		s.Topic = t.Configs
		e, _ := metadata.EffectiveTopicConfig(uncleanKey, s)
		return strings.EqualFold(strings.TrimSpace(e.Value), "true")
	}
}

// minISRKey is the topic config (and broker default) that KIP-966's
// eligible leader replicas are decided by.
const minISRKey = "min.insync.replicas"

// minISRPolicy resolves min.insync.replicas per topic by uncleanPolicy's
// precedence; a value that does not parse counts as 1 (the topic config
// validation refuses such values, so only a hand-edited image has one).
func minISRPolicy(img *metadata.Image, nodeID int32, def int) func(metadata.TopicImage) int {
	src := metadata.ConfigSources{
		DynamicBroker:  img.BrokerConfigs(nodeID),
		DynamicCluster: img.ClusterConfigs(),
		Static:         map[string]string{minISRKey: strconv.Itoa(max(def, 1))},
	}
	return func(t metadata.TopicImage) int {
		s := src
		s.Topic = t.Configs
		e, _ := metadata.EffectiveTopicConfig(minISRKey, s)
		n, err := strconv.Atoi(strings.TrimSpace(e.Value))
		if err != nil || n < 1 {
			return 1
		}
		return n
	}
}

// policy is what the election rules need per topic beyond the image:
// whether unclean election is allowed and min.insync.replicas (nil means
// never and 1).
type policy struct {
	unclean func(metadata.TopicImage) bool
	minISR  func(metadata.TopicImage) int
}

// minInsync is t's min.insync.replicas.
func (p policy) minInsync(t metadata.TopicImage) int {
	if p.minISR == nil {
		return 1
	}
	return p.minISR(t)
}

func (p policy) request(img *metadata.Image, t metadata.TopicImage, req metadata.PartitionChangeRequest) metadata.PartitionChangeRequest {
	req.Unclean = p.unclean != nil && p.unclean(t)
	req.ELR = img.ELREnabled()
	req.MinISR = p.minInsync(t)
	return req
}

// partitionChanges asks metadata.BuildPartitionChange, with reason, what
// every partition that sel picks should become, and returns the records in
// topic-name and partition order. A partition the rule leaves unchanged or
// refuses (a preferred replica that cannot lead) contributes nothing.
func partitionChanges(img *metadata.Image, reason metadata.ChangeReason, pol policy, sel func(metadata.TopicImage, metadata.PartitionRegistration) bool) []metadata.Record {
	usable := img.UsableBrokers()
	var recs []metadata.Record
	for _, t := range img.Topics() {
		var base metadata.PartitionChangeRequest
		decided := false
		for _, p := range t.Partitions {
			if !sel(t, p) {
				continue
			}
			if !decided {
				base, decided = pol.request(img, t, metadata.PartitionChangeRequest{TopicID: t.ID, Reason: reason, Usable: usable}), true
			}
			req := base
			req.Partition = p
			req.Usable = replicaUsable(img, usable, t.ID, p.Partition)
			rec, err := metadata.BuildPartitionChange(req)
			if err == nil && rec != nil {
				recs = append(recs, rec)
			}
		}
	}
	return recs
}

// evacuate takes broker id, which img already shows fenced or in
// controlled shutdown, out of every ISR and leadership it holds (Kafka's
// generateLeaderAndIsrUpdates for a removed broker). Without ELR the ISR
// never empties: a partition whose last ISR member goes keeps it and goes
// offline, unless the topic allows unclean election and another replica is
// usable; with ELR (KIP-966) that member leaves the ISR for the ELR.
func evacuate(img *metadata.Image, id int32, reason metadata.ChangeReason, pol policy) []metadata.Record {
	return partitionChanges(img, reason, pol, func(_ metadata.TopicImage, p metadata.PartitionRegistration) bool {
		return p.Leader == id || slices.Contains(p.ISR, id)
	})
}

// electLeaderless gives a leader to every partition without a usable one:
// the first usable ISR member in replica order, or, where the topic allows
// unclean election, the first usable replica. Kafka runs this over all
// leaderless partitions whenever a broker is unfenced, so an offline
// partition comes back as soon as one of its ISR members does.
func electLeaderless(img *metadata.Image, pol policy) []metadata.Record {
	usable := img.UsableBrokers()
	return partitionChanges(img, metadata.ReasonElection, pol, func(t metadata.TopicImage, p metadata.PartitionRegistration) bool {
		return p.Leader == metadata.NoLeader || !replicaUsable(img, usable, t.ID, p.Partition)(p.Leader)
	})
}

// maxElectionsPerRebalance bounds the preferred elections one rebalance
// check commits (Kafka's maxElectionsPerImbalance); the rest wait for the
// next check.
const maxElectionsPerRebalance = 1000

// decideRebalance is the periodic preferred-leader check, run on the
// controller loop like any operation so its records join a batch.
func decideRebalance(c *controller, img *metadata.Image, now time.Time) decision {
	var recs []metadata.Record
	for _, rec := range img.PreferredLeaderElections(c.n.cfg.LeaderImbalancePerBrokerPercentage, maxElectionsPerRebalance) {
		recs = append(recs, rec)
	}
	if len(recs) > 0 {
		c.n.log.Info().Int("partitions", len(recs)).Msg("leader imbalance: electing preferred replicas")
	}
	return decision{recs: recs}
}

// electOne runs one ElectLeaders election against the current image.
// PREFERRED (0) moves leadership to the first replica if it is a usable ISR
// member; UNCLEAN (1) elects only for a partition without a usable leader,
// from the ISR if it can and otherwise from any usable replica, whatever
// the topic config says (an operator asked for it).
func electOne(img *metadata.Image, t metadata.TopicImage, p metadata.PartitionRegistration, electionType int8, pol policy) (*metadata.PartitionChange, error) {
	usable := img.UsableBrokers()
	req := pol.request(img, t, metadata.PartitionChangeRequest{TopicID: t.ID, Partition: p, Usable: usable})
	req.Unclean = false
	if electionType == 1 {
		if p.Leader != metadata.NoLeader && usable(p.Leader) {
			return nil, metadata.ErrElectionNotNeeded
		}
		req.Reason, req.Unclean = metadata.ReasonElection, true
	} else {
		req.Reason = metadata.ReasonPreferredElection
	}
	rec, err := metadata.BuildPartitionChange(req)
	if err == nil && rec == nil {
		err = metadata.ErrLeaderNotAvailable
	}
	return rec, err
}

// decideElectLeaders handles PREFERRED (0) and UNCLEAN (1) elections. A nil
// topic list means every partition, and then, as in Kafka, partitions that
// need no election are left out of the answer.
func decideElectLeaders(req *kmsg.ElectLeadersRequest) decideFunc {
	return func(c *controller, img *metadata.Image, now time.Time) decision {
		resp := req.ResponseKind().(*kmsg.ElectLeadersResponse)
		pol := c.unclean(img)
		type tp struct {
			topic string
			parts []int32
		}
		all := req.Topics == nil
		var want []tp
		if all {
			for _, t := range img.Topics() {
				w := tp{topic: t.Name}
				for _, p := range t.Partitions {
					w.parts = append(w.parts, p.Partition)
				}
				want = append(want, w)
			}
		} else {
			for _, t := range req.Topics {
				want = append(want, tp{topic: t.Topic, parts: t.Partitions})
			}
		}
		var recs []metadata.Record
		cur := img
		for _, w := range want {
			rt := kmsg.NewElectLeadersResponseTopic()
			rt.Topic = w.topic
			for _, pn := range w.parts {
				rp := kmsg.NewElectLeadersResponseTopicPartition()
				rp.Partition = pn
				var err error
				ti, ok := cur.Topic(w.topic)
				if !ok {
					err = metadata.ErrUnknownTopic
				} else if p, ok := ti.Partition(pn); !ok {
					err = metadata.ErrUnknownPartition
				} else {
					var rec *metadata.PartitionChange
					if rec, err = electOne(cur, ti, p, req.ElectionType, pol); err == nil {
						recs = append(recs, rec)
						cur, _ = cur.Apply([]metadata.Record{rec})
					}
				}
				if all && errors.Is(err, metadata.ErrElectionNotNeeded) {
					continue
				}
				rp.ErrorCode, rp.ErrorMessage = errCode(err), errMsg(err)
				rt.Partitions = append(rt.Partitions, rp)
			}
			if !all || len(rt.Partitions) > 0 {
				resp.Topics = append(resp.Topics, rt)
			}
		}
		return decision{recs: recs, resp: resp}
	}
}

// decideAlterPartition applies ISR changes from partition leaders through
// Image.ValidateAlterPartition: partition-epoch fencing (KIP-497), the
// sender must lead at the current leader epoch, and every new ISR member
// must be a usable replica (KIP-903: at the broker epoch the leader saw,
// which v3 carries). Partitions are decided in order against the image as
// the earlier ones left it.
//
// A leader batches the changes of many partitions into one request
// (broker/replica alter_batch.go), and an Image.Apply copies the changed
// topic's partition table, so the changes are applied together: a
// partition's decision reads only that partition (and the brokers, which
// no change here touches), so the pending changes are applied first only
// when a partition comes again in the request or a reassignment may
// complete. Applying one by one cost a copy of a 10,000-partition table
// per partition.
func decideAlterPartition(req *kmsg.AlterPartitionRequest) decideFunc {
	return func(c *controller, img *metadata.Image, now time.Time) decision {
		resp := req.ResponseKind().(*kmsg.AlterPartitionResponse)
		pol := c.unclean(img)
		b, ok := img.Broker(req.BrokerID)
		if !ok || b.Epoch != req.BrokerEpoch {
			resp.ErrorCode = kerr.StaleBrokerEpoch.Code
			return decision{resp: resp}
		}
		type partKey struct {
			id [16]byte
			p  int32
		}
		type outRef struct {
			t, i int // resp.Topics[t].Partitions[i]
			key  partKey
		}
		var recs, pending []metadata.Record
		var unfilled []outRef // accepted, answered from the image once applied
		touched := map[partKey]bool{}
		cur := img
		apply := func() {
			if len(pending) > 0 {
				cur, _ = cur.Apply(pending)
				pending = nil
				clear(touched)
			}
		}
		fill := func() {
			for _, o := range unfilled {
				out := &resp.Topics[o.t].Partitions[o.i]
				if p, ok := cur.Partition(o.key.id, o.key.p); ok {
					out.LeaderID, out.LeaderEpoch, out.ISR, out.PartitionEpoch = p.Leader, p.LeaderEpoch, p.ISR, p.PartitionEpoch
				}
			}
			unfilled = unfilled[:0]
		}
		for _, t := range req.Topics {
			rt := kmsg.NewAlterPartitionResponseTopic()
			rt.Topic, rt.TopidID = t.Topic, t.TopicID
			var ti metadata.TopicImage
			var tok bool
			if req.Version >= 2 {
				ti, tok = cur.TopicByID(t.TopicID)
			} else {
				ti, tok = cur.Topic(t.Topic)
			}
			resp.Topics = append(resp.Topics, rt)
			tIdx := len(resp.Topics) - 1
			for _, rp := range t.Partitions {
				out := kmsg.NewAlterPartitionResponseTopicPartition()
				out.Partition = rp.Partition
				if !tok {
					out.ErrorCode = kerr.UnknownTopicOrPartition.Code
					if req.Version >= 2 {
						out.ErrorCode = kerr.UnknownTopicID.Code
					}
					resp.Topics[tIdx].Partitions = append(resp.Topics[tIdx].Partitions, out)
					continue
				}
				key := partKey{ti.ID, rp.Partition}
				if touched[key] {
					apply()
					fill()
				}
				ap := metadata.AlterPartitionRequest{
					BrokerID: req.BrokerID, BrokerEpoch: req.BrokerEpoch, TopicID: ti.ID,
					Partition: rp.Partition, LeaderEpoch: rp.LeaderEpoch, PartitionEpoch: rp.PartitionEpoch,
					NewISR: rp.NewISR, MinISR: pol.minInsync(ti),
				}
				if req.Version >= 3 {
					ap.NewISR = make([]int32, 0, len(rp.NewEpochISR))
					ap.NewISRBrokerEpochs = make([]int64, 0, len(rp.NewEpochISR))
					for _, e := range rp.NewEpochISR {
						ap.NewISR = append(ap.NewISR, e.BrokerID)
						ap.NewISRBrokerEpochs = append(ap.NewISRBrokerEpochs, e.BrokerEpoch)
					}
				}
				rec, err := cur.ValidateAlterPartition(ap)
				if err != nil {
					out.ErrorCode = errCode(err)
				}
				resp.Topics[tIdx].Partitions = append(resp.Topics[tIdx].Partitions, out)
				if err != nil {
					continue
				}
				unfilled = append(unfilled, outRef{t: tIdx, i: len(resp.Topics[tIdx].Partitions) - 1, key: key})
				if rec == nil {
					continue
				}
				recs = append(recs, rec)
				pending = append(pending, rec)
				touched[key] = true
				if p, ok := cur.Partition(ti.ID, rp.Partition); ok && p.Reassigning() {
					// An ISR that now holds every target replica finishes
					// a reassignment in the same batch (controller_reassign.go).
					apply()
					var done []metadata.Record
					done, cur = completeReassignment(cur, ti.ID, rp.Partition)
					recs = append(recs, done...)
				}
			}
		}
		apply()
		fill()
		return decision{recs: recs, resp: resp}
	}
}

// replicaUsable narrows usable, for one partition, to the brokers whose
// replica of it is not in a failed log dir (metadata.OfflineReplicas):
// such a replica can neither lead nor stay in the ISR.
func replicaUsable(img *metadata.Image, usable func(int32) bool, topicID [16]byte, partition int32) func(int32) bool {
	return func(id int32) bool {
		if !usable(id) {
			return false
		}
		b, ok := img.Broker(id)
		return !ok || !b.ReplicaOffline(topicID, partition)
	}
}

// clearELRs empties the ELR and LastKnownELR of every partition of the
// topics sel picks that has any.
func clearELRs(img *metadata.Image, sel func(metadata.TopicImage) bool) []metadata.Record {
	var recs []metadata.Record
	for _, t := range img.Topics() {
		if !sel(t) {
			continue
		}
		for _, p := range t.Partitions {
			if len(p.ELR) > 0 || len(p.LastKnownELR) > 0 {
				recs = append(recs, &metadata.PartitionChange{TopicID: t.ID, Partition: p.Partition, Leader: metadata.NoLeaderChange, ELR: []int32{}, LastKnownELR: []int32{}})
			}
		}
	}
	return recs
}
