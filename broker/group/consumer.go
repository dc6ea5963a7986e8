package group

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/raftka/raftka/broker/group/assignor"
	"github.com/raftka/raftka/broker/group/consumergroup"
	"github.com/raftka/raftka/metadata"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// ConsumerConfig is the KIP-848 consumer groups' broker configuration
// (group.consumer.*).
type ConsumerConfig struct {
	SessionTimeout    time.Duration // group.consumer.session.timeout.ms
	HeartbeatInterval time.Duration // group.consumer.heartbeat.interval.ms
	MaxSize           int           // group.consumer.max.size; 0: unbounded
	// Assignors are group.consumer.assignors' names; the first is the
	// default. Empty: uniform, range.
	Assignors []string
	// MigrationPolicy is group.consumer.migration.policy: "upgrade",
	// "downgrade", "bidirectional" (also when empty) or "disabled", any case.
	MigrationPolicy string
	// Overrides returns a group's dynamic overrides of the session timeout
	// and heartbeat interval (consumer.session.timeout.ms and
	// consumer.heartbeat.interval.ms on the GROUP resource); zero keeps the
	// broker's. Nil: no overrides.
	Overrides func(img *metadata.Image, group string) (session, heartbeat time.Duration)
}

// upgrade and downgrade say whether the migration policy lets a classic
// group with members become a consumer group, and back.
func (c ConsumerConfig) upgrade() bool {
	p := strings.ToLower(c.MigrationPolicy)
	return p == "" || p == "bidirectional" || p == "upgrade"
}

func (c ConsumerConfig) downgrade() bool {
	p := strings.ToLower(c.MigrationPolicy)
	return p == "" || p == "bidirectional" || p == "downgrade"
}

func (c ConsumerConfig) assignors() []assignor.Assignor {
	names := c.Assignors
	if len(names) == 0 {
		names = []string{assignor.UniformName, assignor.RangeName}
	}
	var out []assignor.Assignor
	for _, n := range names {
		if a, ok := assignor.ByName(n); ok {
			out = append(out, a)
		}
	}
	return out
}

// ConsumerWriter is how the coordinator records a consumer group's state
// (*raftfsm.ControllerClient.WriteConsumerGroup); it returns once this
// node's image has the write.
type ConsumerWriter interface {
	WriteConsumerGroup(ctx context.Context, rec metadata.Record) (uint64, error)
}

// consumerState is a loaded KIP-848 group, owned by its loop.
type consumerState struct {
	g *consumergroup.Group
	// written is the state the image has, as last written or loaded, with
	// StateTimestampMs left zero: a round whose state equals it writes
	// nothing, so steady heartbeats cost no Raft entry.
	written *metadata.ConsumerGroup
	// replies wait for the round's write: a member learns a new epoch or
	// assignment only once it is durable, so a coordinator that takes
	// the group over resumes from what every member was told.
	replies []func(err error)
	// index is the Raft log index of the image the loop runs the current
	// operation against (the loop sets it before each): the version a
	// regex resolved in it records, as Kafka records its metadata image's
	// offset.
	index uint64
}

// randomConsumerMemberID names a member whose client sent none
// (ConsumerGroupHeartbeat v0), as Kafka's Uuid.randomUuid: 22 characters
// of URL-safe base64.
func randomConsumerMemberID() string {
	var u [16]byte
	_, _ = rand.Read(u[:])
	return base64.RawURLEncoding.EncodeToString(u[:])
}

func (c *Coordinator) consumerConfig(img *metadata.Image, id string) consumergroup.Config {
	cc := c.cfg.Consumer
	cfg := consumergroup.Config{
		SessionTimeout: cc.SessionTimeout, HeartbeatInterval: cc.HeartbeatInterval, MaxSize: cc.MaxSize,
		Assignors: cc.assignors(), NewMemberID: randomConsumerMemberID,
	}
	if cfg.SessionTimeout <= 0 {
		cfg.SessionTimeout = 45 * time.Second
	}
	if cfg.HeartbeatInterval <= 0 {
		cfg.HeartbeatInterval = 5 * time.Second
	}
	if cc.Overrides != nil && img != nil {
		s, h := cc.Overrides(img, id)
		if s > 0 {
			cfg.SessionTimeout = s
		}
		if h > 0 {
			cfg.HeartbeatInterval = h
		}
	}
	return cfg
}

// loadConsumer restores a consumer group from the image, or makes a new
// empty one when the image has none.
func (c *Coordinator) loadConsumer(img *metadata.Image, id string) (*consumerState, error) {
	cfg := c.consumerConfig(img, id)
	rec, ok := img.ConsumerGroup(id)
	if !ok {
		return &consumerState{g: consumergroup.New(id, cfg)}, nil
	}
	g, err := consumergroup.Restore(id, cfg, stateFromRecord(&rec), c.now())
	if err != nil {
		return nil, err
	}
	rec.StateTimestampMs = 0
	return &consumerState{g: g, written: &rec}, nil
}

// imageMetadata is the topic metadata a heartbeat resolves subscriptions
// against: the image's topics, internal ones left out of regex matches;
// index is the image's Raft log index (0: not known).
type imageMetadata struct {
	img   *metadata.Image
	index uint64
}

// Version is the image's Raft log index, which a regex's resolution
// records (consumergroup.VersionedMetadata); -1 when not known.
func (m imageMetadata) Version() int64 {
	if m.index == 0 {
		return -1
	}
	return int64(m.index)
}

func (m imageMetadata) Topic(name string) (assignor.Topic, bool) {
	t, ok := m.img.Topic(name)
	if !ok {
		return assignor.Topic{}, false
	}
	return assignor.Topic{ID: t.ID, Name: t.Name, Partitions: int32(len(t.Partitions))}, true
}

// Racks is the racks of each partition's replicas, from the brokers'
// broker.rack; nil when no replica has one.
func (m imageMetadata) Racks(name string, id assignor.TopicID) [][]string {
	t, ok := m.img.Topic(name)
	if !ok || t.ID != id {
		return nil
	}
	racked := false
	racks := make([][]string, len(t.Partitions))
	for i, p := range t.Partitions {
		for _, r := range p.Replicas {
			if b, ok := m.img.Broker(r); ok && b.Rack != "" {
				racks[i] = append(racks[i], b.Rack)
				racked = true
			}
		}
	}
	if !racked {
		return nil
	}
	return racks
}

func (m imageMetadata) TopicNames() []string {
	var out []string
	for _, t := range m.img.Topics() {
		if !strings.HasPrefix(t.Name, "__") {
			out = append(out, t.Name)
		}
	}
	return out
}

func toParts(a assignor.Assignment) []metadata.ConsumerGroupPartitions {
	out := []metadata.ConsumerGroupPartitions{}
	for t, ps := range a {
		if len(ps) == 0 {
			continue
		}
		p := slices.Clone(ps)
		slices.Sort(p)
		out = append(out, metadata.ConsumerGroupPartitions{TopicID: t, Partitions: p})
	}
	slices.SortFunc(out, func(x, y metadata.ConsumerGroupPartitions) int { return bytes.Compare(x.TopicID[:], y.TopicID[:]) })
	return out
}

func fromParts(ps []metadata.ConsumerGroupPartitions) assignor.Assignment {
	out := assignor.Assignment{}
	for _, t := range ps {
		out[t.TopicID] = append(out[t.TopicID], t.Partitions...)
	}
	return out
}

// recordOf is the group's state as a ConsumerGroup record.
func recordOf(id string, slot, coordEpoch int32, s consumergroup.State) *metadata.ConsumerGroup {
	rec := &metadata.ConsumerGroup{Group: id, Slot: slot, CoordinatorEpoch: coordEpoch, Epoch: s.Epoch, AssignmentEpoch: s.AssignmentEpoch,
		Members: []metadata.ConsumerGroupMember{}, Topics: []metadata.ConsumerGroupTopic{}}
	for _, m := range s.Members {
		rec.Members = append(rec.Members, metadata.ConsumerGroupMember{
			MemberID: m.ID, InstanceID: m.InstanceID, RackID: m.RackID, ClientID: m.ClientID, ClientHost: m.ClientHost,
			Epoch: m.Epoch, PreviousEpoch: m.PreviousEpoch, State: int8(m.State),
			RebalanceTimeoutMs:   int32(m.RebalanceTimeout / time.Millisecond),
			SubscribedTopicNames: slices.Clone(m.SubscribedTopicNames), SubscribedTopicRegex: m.SubscribedTopicRegex,
			ServerAssignor: m.ServerAssignor,
			Assigned:       toParts(m.Assigned), PendingRevocation: toParts(m.PendingRevocation), Target: toParts(s.Target[m.ID]),
			Classic: classicRecord(m.Classic),
		})
	}
	for _, n := range slices.Sorted(maps.Keys(s.Topics)) {
		t := s.Topics[n]
		rec.Topics = append(rec.Topics, metadata.ConsumerGroupTopic{Name: n, ID: t.ID, Partitions: t.Partitions})
	}
	for _, re := range slices.Sorted(maps.Keys(s.Regexes)) {
		r := s.Regexes[re]
		rec.Regexes = append(rec.Regexes, metadata.ConsumerGroupRegex{Regex: re, Topics: slices.Clone(r.Topics), Version: r.Version, TimestampMs: r.TimestampMs})
	}
	return rec
}

func classicRecord(c *consumergroup.ClassicMember) *metadata.ConsumerGroupClassicMember {
	if c == nil {
		return nil
	}
	out := &metadata.ConsumerGroupClassicMember{SessionTimeoutMs: int32(c.SessionTimeout / time.Millisecond)}
	for _, p := range c.Protocols {
		out.Protocols = append(out.Protocols, metadata.ConsumerGroupClassicProtocol{Name: p.Name, Metadata: slices.Clone(p.Metadata)})
	}
	return out
}

func classicState(c *metadata.ConsumerGroupClassicMember) *consumergroup.ClassicMember {
	if c == nil {
		return nil
	}
	out := &consumergroup.ClassicMember{SessionTimeout: time.Duration(c.SessionTimeoutMs) * time.Millisecond}
	for _, p := range c.Protocols {
		out.Protocols = append(out.Protocols, consumergroup.ClassicProtocol{Name: p.Name, Metadata: slices.Clone(p.Metadata)})
	}
	return out
}

// stateFromRecord is recordOf's inverse.
func stateFromRecord(rec *metadata.ConsumerGroup) consumergroup.State {
	s := consumergroup.State{Epoch: rec.Epoch, AssignmentEpoch: rec.AssignmentEpoch,
		Target: map[string]assignor.Assignment{}, Topics: map[string]consumergroup.TopicState{}}
	for _, m := range rec.Members {
		s.Members = append(s.Members, consumergroup.Member{
			ID: m.MemberID, InstanceID: m.InstanceID, RackID: m.RackID, ClientID: m.ClientID, ClientHost: m.ClientHost,
			Epoch: m.Epoch, PreviousEpoch: m.PreviousEpoch, State: consumergroup.MemberState(m.State),
			RebalanceTimeout:     time.Duration(m.RebalanceTimeoutMs) * time.Millisecond,
			SubscribedTopicNames: slices.Clone(m.SubscribedTopicNames), SubscribedTopicRegex: m.SubscribedTopicRegex,
			ServerAssignor: m.ServerAssignor,
			Assigned:       fromParts(m.Assigned), PendingRevocation: fromParts(m.PendingRevocation),
			Classic: classicState(m.Classic),
		})
		if len(m.Target) > 0 {
			s.Target[m.MemberID] = fromParts(m.Target)
		}
	}
	for _, t := range rec.Topics {
		s.Topics[t.Name] = consumergroup.TopicState{ID: t.ID, Partitions: t.Partitions}
	}
	for _, r := range rec.Regexes {
		if s.Regexes == nil {
			s.Regexes = map[string]consumergroup.RegexResolution{}
		}
		s.Regexes[r.Regex] = consumergroup.RegexResolution{Topics: slices.Clone(r.Topics), Version: r.Version, TimestampMs: r.TimestampMs}
	}
	return s
}

// persistConsumer writes the group's state when it differs from what the
// image has, then answers the round's heartbeats. A failed write answers
// them with the error and drops the group (nil is returned), so the next
// request loads it again from the image, which is what the members were
// last told.
func (c *Coordinator) persistConsumer(cs *consumerState, id string, img *metadata.Image) *consumerState {
	if cs == nil {
		return nil
	}
	p, _ := Place(img, id)
	rec := recordOf(id, p.Slot, p.LeaderEpoch, cs.g.Export())
	var err error
	// A group never written that is still empty at epoch 0 (a first
	// heartbeat that failed its checks) has nothing to record: it would
	// bring a group into existence no member is in.
	fresh := cs.written == nil && len(rec.Members) == 0 && rec.Epoch == 0
	if !fresh && (cs.written == nil || !rec.Equal(cs.written)) {
		// A group already recorded writes only the members that changed
		// (a ConsumerGroupDelta): one heartbeat of a large group moves one
		// member, not the whole group.
		var w metadata.Record = rec
		if cs.written != nil {
			if d, smaller := metadata.DeltaOf(cs.written, rec); smaller {
				w = d
			}
		}
		ctx, cancel := context.WithTimeout(c.ctx, c.cfg.PersistTimeout)
		_, err = c.consumerWriter().WriteConsumerGroup(ctx, w)
		cancel()
		err = controllerErr(err)
		if err != nil && c.ctx.Err() != nil {
			err = kerr.NotCoordinator
		}
		if err != nil {
			c.log.Warn().Err(err).Str("group", id).Int32("epoch", rec.Epoch).Msg("persisting a consumer group failed; the group is reloaded from the image")
		}
	}
	replies := cs.replies
	cs.replies = nil
	for _, r := range replies {
		r(err)
	}
	if err != nil {
		return nil
	}
	if !fresh {
		cs.written = rec
	}
	return cs
}

func (c *Coordinator) consumerWriter() ConsumerWriter {
	if w, ok := c.ctrl.(ConsumerWriter); ok {
		return w
	}
	return noConsumerWriter{}
}

type noConsumerWriter struct{}

func (noConsumerWriter) WriteConsumerGroup(context.Context, metadata.Record) (uint64, error) {
	return 0, errors.New("group: the controller client cannot record consumer groups")
}

// cop is an operation on a consumer group's loop; cs is nil when code
// says why the group cannot be served (NOT_COORDINATOR, GROUP_ID_NOT_FOUND
// for a classic group).
type cop func(cs *consumerState, now time.Time, img *metadata.Image, code int16, msg string)

// ConsumerHeartbeat handles a ConsumerGroupHeartbeat (key 68). The answer
// comes once what it changed is in the image.
func (c *Coordinator) ConsumerHeartbeat(ctx context.Context, groupID string, r consumergroup.HeartbeatRequest) (consumergroup.HeartbeatResponse, error) {
	ch := make(chan consumergroup.HeartbeatResponse, 1)
	c.enqueue(groupID, queued{upgrade: true, consumer: func(cs *consumerState, now time.Time, img *metadata.Image, code int16, msg string) {
		if code != 0 {
			ch <- consumergroup.HeartbeatResponse{ErrorCode: code, ErrorMessage: msg, MemberEpoch: -1}
			return
		}
		cfg := c.consumerConfig(img, groupID)
		cs.g.SetTimeouts(cfg.SessionTimeout, cfg.HeartbeatInterval)
		resp := cs.g.Heartbeat(now, r, imageMetadata{img: img, index: cs.index})
		cs.replies = append(cs.replies, func(err error) {
			if err != nil && resp.ErrorCode == 0 {
				var ke *kerr.Error
				if !errors.As(err, &ke) {
					ke = kerr.CoordinatorNotAvailable
				}
				resp = consumergroup.HeartbeatResponse{ErrorCode: ke.Code, ErrorMessage: err.Error(), MemberEpoch: -1}
			}
			ch <- resp
		})
	}})
	select {
	case resp := <-ch:
		return resp, nil
	case <-ctx.Done():
		return consumergroup.HeartbeatResponse{}, ctx.Err()
	}
}

// ConsumerDescribe answers one group of a ConsumerGroupDescribe (key 69).
func (c *Coordinator) ConsumerDescribe(ctx context.Context, groupID string, version int16) (kmsg.ConsumerGroupDescribeResponseGroup, error) {
	ch := make(chan kmsg.ConsumerGroupDescribeResponseGroup, 1)
	c.enqueue(groupID, queued{consumer: func(cs *consumerState, _ time.Time, img *metadata.Image, code int16, msg string) {
		if code == 0 && cs.g.State() == "Empty" && cs.written == nil {
			code, msg = kerr.GroupIDNotFound.Code, fmt.Sprintf("Group %s not found.", groupID)
		}
		if code != 0 {
			d := kmsg.NewConsumerGroupDescribeResponseGroup()
			d.Group, d.ErrorCode = groupID, code
			if msg != "" {
				d.ErrorMessage = kmsg.StringPtr(msg)
			}
			ch <- d
			return
		}
		ch <- cs.g.Describe(version, func(id assignor.TopicID) (string, bool) {
			t, ok := img.TopicByID(id)
			return t.Name, ok
		})
	}, describeOnly: true})
	select {
	case d := <-ch:
		return d, nil
	case <-ctx.Done():
		return kmsg.ConsumerGroupDescribeResponseGroup{}, ctx.Err()
	}
}

// consumerCommitCode is Kafka's ConsumerGroup.validateOffsetCommit: an
// empty group takes commits from outside the group (epoch -1); otherwise
// the member must exist and commit at its current epoch (a newer one is
// FENCED_MEMBER_EPOCH, an older STALE_MEMBER_EPOCH), and a
// consumer-protocol member's OffsetCommit must be v9+ (a TxnOffsetCommit
// is not held to it). A classic member (the upgrade path) commits with its
// generation, the member epoch: any other is ILLEGAL_GENERATION.
func consumerCommitCode(cs *consumerState, r *CommitRequest) int16 {
	ids := cs.g.MemberIDs()
	m, known := cs.g.Member(r.MemberID)
	switch {
	case r.Generation < 0 && len(ids) == 0:
		return 0
	case !known:
		return kerr.UnknownMemberID.Code
	case m.Classic != nil:
		if r.Generation != m.Epoch {
			return kerr.IllegalGeneration.Code
		}
		return 0
	case !r.Transactional && r.Version < 9:
		return kerr.UnsupportedVersion.Code
	case r.Generation > m.Epoch:
		return kerr.FencedMemberEpoch.Code
	case r.Generation < m.Epoch:
		return kerr.StaleMemberEpoch.Code
	}
	return 0
}

// checkConsumerCommit checks a commit against a consumer group; a commit
// that fails, or has nothing to write, is answered here.
func checkConsumerCommit(cs *consumerState, co *commitOp) bool {
	code := consumerCommitCode(cs, &co.r)
	if code != 0 || len(co.r.Offsets) == 0 {
		co.done <- errFor(code)
		return false
	}
	return true
}

// writeOwnConsumer is writeOwn for a consumer group: a TxnOffsetCommit
// checked against the member epochs, then written on the group's loop.
func (c *Coordinator) writeOwnConsumer(cs *consumerState, co *commitOp) {
	if code := consumerCommitCode(cs, &co.r); code != 0 {
		co.done <- errFor(code)
		return
	}
	ctx, cancel := context.WithTimeout(c.ctx, c.cfg.PersistTimeout)
	defer cancel()
	co.done <- co.r.Write(ctx)
}

// ValidateFetch is OffsetFetch v9+'s member check for a consumer group
// (Kafka's ConsumerGroup.validateOffsetFetch): with a member epoch of 0 or
// more the member must exist (UNKNOWN_MEMBER_ID) at that epoch
// (STALE_MEMBER_EPOCH). Other groups and epoch -1 pass.
func (c *Coordinator) ValidateFetch(ctx context.Context, groupID, memberID string, memberEpoch int32) error {
	if memberEpoch < 0 {
		return nil
	}
	ch := make(chan error, 1)
	c.enqueue(groupID, queued{consumer: func(cs *consumerState, _ time.Time, _ *metadata.Image, code int16, _ string) {
		switch {
		case code == kerr.GroupIDNotFound.Code:
			ch <- kerr.UnknownMemberID
		case code != 0:
			ch <- errFor(code)
		default:
			m, ok := cs.g.Member(memberID)
			switch {
			case !ok:
				ch <- kerr.UnknownMemberID
			case m.Epoch != memberEpoch:
				ch <- kerr.StaleMemberEpoch
			default:
				ch <- nil
			}
		}
	}, describeOnly: true})
	select {
	case err := <-ch:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}
