package raftfsm

import (
	crand "crypto/rand"
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"time"

	"github.com/raftka/raftka/broker/kafkacode"
	"github.com/raftka/raftka/metadata"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Topic operations: CreateTopics, DeleteTopics and CreatePartitions.
// Names, configs, placement and manual assignments are checked by
// metadata's rules (CheckNewTopicName, ValidateTopicConfigs, PlaceReplicas,
// ValidateReplicaAssignment, NewPartitions).

// errCode is the Kafka code a controller response carries for err; the
// mapping is broker/kafkacode's, shared with the brokers' handlers.
var errCode = kafkacode.OfDecision

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

// decideCreateTopics answers, for each topic created, its overrides alone
// as Configs (source DYNAMIC_TOPIC_CONFIG). Kafka's answer (v5+) lists
// every topic config with its source; the broker builds that list from its
// own image and server.properties (broker/api_create_topics.go), which
// this node does not know, and replaces this one.
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
	if err := metadata.ValidateTopicConfigs(configs); err != nil {
		return nil, err
	}
	rec := &metadata.CreateTopic{Name: t.Topic, ID: newTopicID()}
	if len(configs) > 0 {
		rec.Configs = configs
	}
	var assign [][]int32
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
			assign = append(assign, slices.Clone(a.Replicas))
		}
		if err := metadata.ValidateReplicaAssignment(assign, img.Brokers(), 0); err != nil {
			return nil, err
		}
	} else {
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
		var err error
		if assign, err = place(img, 0, parts, rf); err != nil {
			return nil, err
		}
	}
	rec.Partitions = metadata.NewPartitions(0, assign, img.UsableBrokers())
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
			if c.n.cfg.TopicDeletionDisabled {
				// delete.topic.enable=false, as Kafka answers it.
				rt.ErrorCode = kerr.TopicDeletionDisabled.Code
				if req.Version < 3 {
					rt.ErrorCode = kerr.InvalidRequest.Code
				}
				resp.Topics = append(resp.Topics, rt)
				continue
			}
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
	rf := int16(len(ti.Partitions[0].Replicas))
	var assign [][]int32
	if t.Assignment != nil {
		if int32(len(t.Assignment)) != add {
			return nil, fmt.Errorf("%w: %d assignments for %d new partitions", metadata.ErrInvalidReplicaAssignment, len(t.Assignment), add)
		}
		for _, a := range t.Assignment {
			assign = append(assign, slices.Clone(a.Replicas))
		}
		if err := metadata.ValidateReplicaAssignment(assign, img.Brokers(), int(rf)); err != nil {
			return nil, err
		}
	} else {
		var err error
		if assign, err = place(img, have, add, rf); err != nil {
			return nil, err
		}
	}
	return &metadata.AddPartitions{TopicID: ti.ID, Partitions: metadata.NewPartitions(have, assign, img.UsableBrokers())}, nil
}
