package raftfsm

import (
	crand "crypto/rand"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"time"

	"github.com/raftka/raftka/metadata"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Topic and partition operations: CreateTopics, DeleteTopics,
// CreatePartitions, ElectLeaders and AlterPartition.

// errCode maps metadata's error kinds to Kafka error codes.
func errCode(err error) int16 {
	switch {
	case err == nil:
		return 0
	case errors.Is(err, metadata.ErrTopicExists):
		return kerr.TopicAlreadyExists.Code
	case errors.Is(err, metadata.ErrUnknownTopic), errors.Is(err, metadata.ErrUnknownPartition):
		return kerr.UnknownTopicOrPartition.Code
	case errors.Is(err, metadata.ErrInvalidTopicName), errors.Is(err, metadata.ErrTopicNameCollision):
		return kerr.InvalidTopicException.Code
	case errors.Is(err, metadata.ErrInvalidReplicationFactor):
		return kerr.InvalidReplicationFactor.Code
	case errors.Is(err, metadata.ErrInvalidReplicaAssignment):
		return kerr.InvalidReplicaAssignment.Code
	case errors.Is(err, metadata.ErrInvalidPartitions):
		return kerr.InvalidPartitions.Code
	case errors.Is(err, metadata.ErrInvalidConfig):
		return kerr.InvalidConfig.Code
	case errors.Is(err, metadata.ErrUnknownBroker):
		return kerr.BrokerIDNotRegistered.Code
	case errors.Is(err, metadata.ErrStaleBrokerEpoch):
		return kerr.StaleBrokerEpoch.Code
	case errors.Is(err, metadata.ErrFencedLeaderEpoch):
		return kerr.FencedLeaderEpoch.Code
	case errors.Is(err, metadata.ErrInvalidUpdateVersion):
		return kerr.InvalidUpdateVersion.Code
	case errors.Is(err, metadata.ErrNotLeader):
		return kerr.NotLeaderForPartition.Code
	case errors.Is(err, metadata.ErrIneligibleReplica):
		return kerr.IneligibleReplica.Code
	case errors.Is(err, metadata.ErrElectionNotNeeded):
		return kerr.ElectionNotNeeded.Code
	case errors.Is(err, metadata.ErrPreferredLeaderNotAvailable):
		return kerr.PreferredLeaderNotAvailable.Code
	case errors.Is(err, metadata.ErrLeaderNotAvailable):
		return kerr.EligibleLeadersNotAvailable.Code
	case errors.Is(err, ErrNotController):
		return kerr.NotController.Code
	}
	return kerr.InvalidRequest.Code
}

func errMsg(err error) *string {
	if err == nil {
		return nil
	}
	s := err.Error()
	return &s
}

func newTopicID() [16]byte {
	var id [16]byte
	for id == ([16]byte{}) {
		_, _ = crand.Read(id[:])
	}
	id[6] = id[6]&0x0f | 0x40 // version 4
	id[8] = id[8]&0x3f | 0x80 // RFC 4122 variant
	return id
}

// place assigns replicas with metadata.PlaceReplicas (Kafka's round-robin,
// rack-aware when racks are set), drawing the random start and shift Kafka
// draws per topic so different topics' leaders land on different brokers.
func place(img *metadata.Image, first, count int32, rf int16) ([][]int32, error) {
	n := max(len(img.Brokers()), 1)
	return metadata.PlaceReplicas(img.Brokers(), metadata.Placement{
		FirstPartition: first, Partitions: count, ReplicationFactor: rf,
		StartIndex: rand.IntN(n), Shift: rand.IntN(n),
	})
}

// checkAssignment validates explicit replica lists.
func checkAssignment(img *metadata.Image, reps []int32) error {
	if len(reps) == 0 {
		return fmt.Errorf("%w: empty replica list", metadata.ErrInvalidReplicaAssignment)
	}
	seen := map[int32]bool{}
	for _, r := range reps {
		if seen[r] {
			return fmt.Errorf("%w: broker %d listed twice", metadata.ErrInvalidReplicaAssignment, r)
		}
		seen[r] = true
		if _, ok := img.Broker(r); !ok {
			return fmt.Errorf("%w: broker %d is not registered", metadata.ErrInvalidReplicaAssignment, r)
		}
	}
	return nil
}

// newPartition registers a partition on its replicas: the ISR is the usable
// replicas and the leader the first of them in replica order.
func newPartition(img *metadata.Image, p int32, reps []int32) metadata.PartitionRegistration {
	reg := metadata.PartitionRegistration{Partition: p, Replicas: reps, Leader: metadata.NoLeader}
	for _, r := range reps {
		if usable(img, r) {
			reg.ISR = append(reg.ISR, r)
		}
	}
	if len(reg.ISR) == 0 {
		reg.ISR = slices.Clone(reps)
	} else {
		reg.Leader = reg.ISR[0]
	}
	return reg
}

func decideCreateTopics(req *kmsg.CreateTopicsRequest, defParts int32, defRF int16) decideFunc {
	return func(c *controller, img *metadata.Image, now time.Time) decision {
		resp := req.ResponseKind().(*kmsg.CreateTopicsResponse)
		var recs []metadata.Record
		cur := img
		for _, t := range req.Topics {
			rt := kmsg.NewCreateTopicsResponseTopic()
			rt.Topic = t.Topic
			rec, err := buildCreateTopic(cur, t, defParts, defRF)
			if err != nil {
				rt.ErrorCode, rt.ErrorMessage = errCode(err), errMsg(err)
				rt.NumPartitions, rt.ReplicationFactor = -1, -1
				resp.Topics = append(resp.Topics, rt)
				continue
			}
			rt.TopicID = rec.ID
			rt.NumPartitions = int32(len(rec.Partitions))
			rt.ReplicationFactor = int16(len(rec.Partitions[0].Replicas))
			for _, k := range sortedKeys(rec.Configs) {
				cfg := kmsg.NewCreateTopicsResponseTopicConfig()
				cfg.Name, cfg.Value = k, kmsg.StringPtr(rec.Configs[k])
				cfg.Source = 1 // DYNAMIC_TOPIC_CONFIG
				rt.Configs = append(rt.Configs, cfg)
			}
			resp.Topics = append(resp.Topics, rt)
			if req.ValidateOnly {
				continue
			}
			recs = append(recs, rec)
			cur, _ = cur.Apply([]metadata.Record{rec})
		}
		return decision{recs: recs, resp: resp}
	}
}

func buildCreateTopic(img *metadata.Image, t kmsg.CreateTopicsRequestTopic, defParts int32, defRF int16) (*metadata.CreateTopic, error) {
	if err := img.CheckNewTopicName(t.Topic); err != nil {
		return nil, err
	}
	configs := map[string]string{}
	for _, cfg := range t.Configs {
		if cfg.Value == nil {
			return nil, fmt.Errorf("%w: %s has a null value", metadata.ErrInvalidConfig, cfg.Name)
		}
		configs[cfg.Name] = *cfg.Value
	}
	if err := validateTopicConfigs(configs); err != nil {
		return nil, err
	}
	rec := &metadata.CreateTopic{Name: t.Topic, ID: newTopicID()}
	if len(configs) > 0 {
		rec.Configs = configs
	}
	if len(t.ReplicaAssignment) > 0 {
		if t.NumPartitions != -1 || t.ReplicationFactor != -1 {
			return nil, fmt.Errorf("%w: both a replica assignment and partitions/replication factor given", metadata.ErrInvalidRequest)
		}
		as := slices.Clone(t.ReplicaAssignment)
		sort.Slice(as, func(i, j int) bool { return as[i].Partition < as[j].Partition })
		for i, a := range as {
			if a.Partition != int32(i) {
				return nil, fmt.Errorf("%w: partitions must be numbered 0..%d", metadata.ErrInvalidReplicaAssignment, len(as)-1)
			}
			if err := checkAssignment(img, a.Replicas); err != nil {
				return nil, err
			}
			if len(a.Replicas) != len(as[0].Replicas) {
				return nil, fmt.Errorf("%w: partitions have different replica counts", metadata.ErrInvalidReplicaAssignment)
			}
			rec.Partitions = append(rec.Partitions, newPartition(img, a.Partition, slices.Clone(a.Replicas)))
		}
		return rec, nil
	}
	parts, rf := t.NumPartitions, t.ReplicationFactor
	if parts == -1 {
		parts = defParts
	}
	if rf == -1 {
		rf = defRF
	}
	if parts <= 0 {
		return nil, fmt.Errorf("%w: %d partitions", metadata.ErrInvalidPartitions, parts)
	}
	if rf <= 0 {
		return nil, fmt.Errorf("%w: %d", metadata.ErrInvalidReplicationFactor, rf)
	}
	assign, err := place(img, 0, parts, rf)
	if err != nil {
		return nil, err
	}
	for p, reps := range assign {
		rec.Partitions = append(rec.Partitions, newPartition(img, int32(p), reps))
	}
	return rec, nil
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

func decideDeleteTopics(req *kmsg.DeleteTopicsRequest) decideFunc {
	return func(c *controller, img *metadata.Image, now time.Time) decision {
		resp := req.ResponseKind().(*kmsg.DeleteTopicsResponse)
		type target struct {
			name *string
			id   [16]byte
		}
		var targets []target
		for _, n := range req.TopicNames {
			targets = append(targets, target{name: kmsg.StringPtr(n)})
		}
		for _, t := range req.Topics {
			targets = append(targets, target{name: t.Topic, id: t.TopicID})
		}
		var recs []metadata.Record
		removed := map[[16]byte]bool{}
		for _, tg := range targets {
			rt := kmsg.NewDeleteTopicsResponseTopic()
			rt.Topic, rt.TopicID = tg.name, tg.id
			var ti metadata.TopicImage
			var ok bool
			if tg.name != nil && *tg.name != "" {
				ti, ok = img.Topic(*tg.name)
			} else {
				ti, ok = img.TopicByID(tg.id)
			}
			if !ok || removed[ti.ID] {
				rt.ErrorCode = kerr.UnknownTopicOrPartition.Code
				if tg.name == nil || *tg.name == "" {
					rt.ErrorCode = kerr.UnknownTopicID.Code
				}
				resp.Topics = append(resp.Topics, rt)
				continue
			}
			removed[ti.ID] = true
			rt.Topic, rt.TopicID = kmsg.StringPtr(ti.Name), ti.ID
			resp.Topics = append(resp.Topics, rt)
			recs = append(recs, &metadata.RemoveTopic{TopicID: ti.ID})
		}
		return decision{recs: recs, resp: resp}
	}
}

func decideCreatePartitions(req *kmsg.CreatePartitionsRequest) decideFunc {
	return func(c *controller, img *metadata.Image, now time.Time) decision {
		resp := req.ResponseKind().(*kmsg.CreatePartitionsResponse)
		var recs []metadata.Record
		cur := img
		for _, t := range req.Topics {
			rt := kmsg.NewCreatePartitionsResponseTopic()
			rt.Topic = t.Topic
			rec, err := buildAddPartitions(cur, t)
			if err != nil {
				rt.ErrorCode, rt.ErrorMessage = errCode(err), errMsg(err)
			} else if !req.ValidateOnly {
				recs = append(recs, rec)
				cur, _ = cur.Apply([]metadata.Record{rec})
			}
			resp.Topics = append(resp.Topics, rt)
		}
		return decision{recs: recs, resp: resp}
	}
}

func buildAddPartitions(img *metadata.Image, t kmsg.CreatePartitionsRequestTopic) (*metadata.AddPartitions, error) {
	ti, ok := img.Topic(t.Topic)
	if !ok {
		return nil, fmt.Errorf("%w: %s", metadata.ErrUnknownTopic, t.Topic)
	}
	have := int32(len(ti.Partitions))
	if t.Count <= have {
		return nil, fmt.Errorf("%w: topic %s has %d partitions; the new count must be larger, not %d", metadata.ErrInvalidPartitions, t.Topic, have, t.Count)
	}
	add := t.Count - have
	rec := &metadata.AddPartitions{TopicID: ti.ID}
	if t.Assignment != nil {
		if int32(len(t.Assignment)) != add {
			return nil, fmt.Errorf("%w: %d assignments for %d new partitions", metadata.ErrInvalidReplicaAssignment, len(t.Assignment), add)
		}
		for i, a := range t.Assignment {
			if err := checkAssignment(img, a.Replicas); err != nil {
				return nil, err
			}
			rec.Partitions = append(rec.Partitions, newPartition(img, have+int32(i), slices.Clone(a.Replicas)))
		}
		return rec, nil
	}
	rf := int16(len(ti.Partitions[0].Replicas))
	assign, err := place(img, have, add, rf)
	if err != nil {
		return nil, err
	}
	for i, reps := range assign {
		rec.Partitions = append(rec.Partitions, newPartition(img, have+int32(i), reps))
	}
	return rec, nil
}

// decideElectLeaders handles PREFERRED (0) and UNCLEAN (1) elections. A nil
// topic list means every partition.
func decideElectLeaders(req *kmsg.ElectLeadersRequest) decideFunc {
	return func(c *controller, img *metadata.Image, now time.Time) decision {
		resp := req.ResponseKind().(*kmsg.ElectLeadersResponse)
		type tp struct {
			topic string
			parts []int32
		}
		var want []tp
		if req.Topics == nil {
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
		for _, w := range want {
			rt := kmsg.NewElectLeadersResponseTopic()
			rt.Topic = w.topic
			ti, tok := img.Topic(w.topic)
			for _, pn := range w.parts {
				rp := kmsg.NewElectLeadersResponseTopicPartition()
				rp.Partition = pn
				var err error
				var rec metadata.Record
				if !tok {
					err = metadata.ErrUnknownTopic
				} else if p, ok := ti.Partition(pn); !ok {
					err = metadata.ErrUnknownPartition
				} else if req.ElectionType == 1 {
					rec, err = electUnclean(img, ti.ID, p)
				} else {
					rec, err = electPreferred(img, ti.ID, p)
				}
				if err != nil {
					rp.ErrorCode, rp.ErrorMessage = errCode(err), errMsg(err)
				} else {
					recs = append(recs, rec)
				}
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
		return decision{recs: recs, resp: resp}
	}
}

func electPreferred(img *metadata.Image, topicID [16]byte, p metadata.PartitionRegistration) (metadata.Record, error) {
	if len(p.Replicas) == 0 {
		return nil, metadata.ErrPreferredLeaderNotAvailable
	}
	pref := p.Replicas[0]
	if p.Leader == pref {
		return nil, metadata.ErrElectionNotNeeded
	}
	if !slices.Contains(p.ISR, pref) || !usable(img, pref) {
		return nil, fmt.Errorf("%w: broker %d is not a live ISR member", metadata.ErrPreferredLeaderNotAvailable, pref)
	}
	return &metadata.PartitionChange{TopicID: topicID, Partition: p.Partition, Leader: pref}, nil
}

func electUnclean(img *metadata.Image, topicID [16]byte, p metadata.PartitionRegistration) (metadata.Record, error) {
	if p.Leader != metadata.NoLeader && usable(img, p.Leader) {
		return nil, metadata.ErrElectionNotNeeded
	}
	for _, r := range p.Replicas {
		if slices.Contains(p.ISR, r) && usable(img, r) {
			return &metadata.PartitionChange{TopicID: topicID, Partition: p.Partition, Leader: r}, nil
		}
	}
	for _, r := range p.Replicas {
		if usable(img, r) {
			return &metadata.PartitionChange{TopicID: topicID, Partition: p.Partition, Leader: r, ISR: []int32{r}}, nil
		}
	}
	return nil, metadata.ErrLeaderNotAvailable
}

// decideAlterPartition validates ISR changes from partition leaders with
// partition-epoch fencing (KIP-497): the sender must be the registered
// leader at the current leader epoch, the partition epoch must match, and
// every new ISR member must be a live replica (KIP-903: at its current
// broker epoch when v3 gives one).
func decideAlterPartition(req *kmsg.AlterPartitionRequest) decideFunc {
	return func(c *controller, img *metadata.Image, now time.Time) decision {
		resp := req.ResponseKind().(*kmsg.AlterPartitionResponse)
		b, ok := img.Broker(req.BrokerID)
		if !ok || b.Epoch != req.BrokerEpoch {
			resp.ErrorCode = kerr.StaleBrokerEpoch.Code
			return decision{resp: resp}
		}
		var recs []metadata.Record
		cur := img
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
			for _, rp := range t.Partitions {
				out := kmsg.NewAlterPartitionResponseTopicPartition()
				out.Partition = rp.Partition
				if !tok {
					out.ErrorCode = kerr.UnknownTopicOrPartition.Code
					if req.Version >= 2 {
						out.ErrorCode = kerr.UnknownTopicID.Code
					}
					rt.Partitions = append(rt.Partitions, out)
					continue
				}
				rec, err := checkAlterPartition(cur, ti, req.BrokerID, rp)
				if err != nil {
					out.ErrorCode = errCode(err)
				} else {
					recs = append(recs, rec)
					cur, _ = cur.Apply([]metadata.Record{rec})
					ti, _ = cur.TopicByID(ti.ID)
				}
				if p, ok := ti.Partition(rp.Partition); ok && out.ErrorCode == 0 {
					out.LeaderID, out.LeaderEpoch, out.ISR, out.PartitionEpoch = p.Leader, p.LeaderEpoch, p.ISR, p.PartitionEpoch
				}
				rt.Partitions = append(rt.Partitions, out)
			}
			resp.Topics = append(resp.Topics, rt)
		}
		return decision{recs: recs, resp: resp}
	}
}

func checkAlterPartition(img *metadata.Image, ti metadata.TopicImage, from int32, rp kmsg.AlterPartitionRequestTopicPartition) (metadata.Record, error) {
	p, ok := ti.Partition(rp.Partition)
	if !ok {
		return nil, metadata.ErrUnknownPartition
	}
	if p.Leader != from {
		return nil, fmt.Errorf("%w: broker %d does not lead %s-%d", metadata.ErrNotLeader, from, ti.Name, p.Partition)
	}
	if rp.LeaderEpoch != p.LeaderEpoch {
		return nil, fmt.Errorf("%w: leader epoch %d, current %d", metadata.ErrFencedLeaderEpoch, rp.LeaderEpoch, p.LeaderEpoch)
	}
	if rp.PartitionEpoch != p.PartitionEpoch {
		return nil, fmt.Errorf("%w: partition epoch %d, current %d", metadata.ErrInvalidUpdateVersion, rp.PartitionEpoch, p.PartitionEpoch)
	}
	isr := rp.NewISR
	if len(rp.NewEpochISR) > 0 {
		isr = nil
		for _, e := range rp.NewEpochISR {
			if b, ok := img.Broker(e.BrokerID); ok && e.BrokerEpoch != -1 && b.Epoch != e.BrokerEpoch {
				return nil, fmt.Errorf("%w: broker %d epoch %d is stale", metadata.ErrIneligibleReplica, e.BrokerID, e.BrokerEpoch)
			}
			isr = append(isr, e.BrokerID)
		}
	}
	if len(isr) == 0 || !slices.Contains(isr, from) {
		return nil, fmt.Errorf("%w: the new ISR must contain the leader", metadata.ErrInvalidRequest)
	}
	seen := map[int32]bool{}
	for _, r := range isr {
		if seen[r] || !slices.Contains(p.Replicas, r) {
			return nil, fmt.Errorf("%w: ISR member %d is duplicated or not a replica", metadata.ErrInvalidRequest, r)
		}
		seen[r] = true
		if !slices.Contains(p.ISR, r) && !usable(img, r) {
			return nil, fmt.Errorf("%w: broker %d is fenced or shutting down", metadata.ErrIneligibleReplica, r)
		}
	}
	return &metadata.PartitionChange{TopicID: ti.ID, Partition: p.Partition, Leader: metadata.NoLeaderChange, ISR: slices.Clone(isr)}, nil
}
