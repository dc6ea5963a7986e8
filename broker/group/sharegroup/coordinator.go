package sharegroup

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/raftka/raftka/metadata"
	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kerr"
)

// MetadataSource is this node's current metadata image.
type MetadataSource interface {
	Current() (*metadata.Image, uint64)
}

// Persister makes a group's durable state survive a coordinator failover:
// it writes what changed since the last state it wrote (nil: the group is
// new to it; next nil: the group is deleted). It is called only when a
// group's state changed, never on a heartbeat that changed nothing. A nil
// Persister keeps groups in memory.
type Persister interface {
	PersistShareGroup(ctx context.Context, group string, prev, next *State) error
}

// CoordinatorConfig configures a Coordinator.
type CoordinatorConfig struct {
	// Owner is nil when this node coordinates groupID in img, else the
	// error a group API answers (NOT_COORDINATOR): share groups live in the
	// same coordinator slots as classic groups.
	Owner func(img *metadata.Image, groupID string) error
	// GroupConfig gives a group's effective settings: the broker's
	// group.share.* values, or the group's own overrides once GROUP
	// resource configs exist.
	GroupConfig func(groupID string) Config
	Metadata    MetadataSource
	Persister   Persister // nil: memory only
	Now         func() time.Time
	// TickEvery is how often session deadlines are checked (100 ms if 0).
	TickEvery time.Duration
	Log       zerolog.Logger
}

// Coordinator owns the share groups this node coordinates. Its methods
// may be called from any goroutine: one mutex serializes every group's
// operations (a share group's operations are a heartbeat every few seconds
// per member, and persistence happens only on change), and one goroutine
// expires sessions. Persistence runs under the mutex, so an answer is sent
// only after what it says is durable.
type Coordinator struct {
	cfg    CoordinatorConfig
	mu     sync.Mutex
	groups map[string]*loaded
	stop   chan struct{}
	done   chan struct{}
}

type loaded struct {
	g         *Group
	persisted *State // last state written; nil before the first write
	written   uint64 // g.Version() at that write
}

// NewCoordinator starts a coordinator; Close stops it.
func NewCoordinator(cfg CoordinatorConfig) *Coordinator {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.TickEvery <= 0 {
		cfg.TickEvery = 100 * time.Millisecond
	}
	c := &Coordinator{cfg: cfg, groups: map[string]*loaded{}, stop: make(chan struct{}), done: make(chan struct{})}
	go c.loop()
	return c
}

// Close stops the session timer goroutine.
func (c *Coordinator) Close() {
	close(c.stop)
	<-c.done
}

func (c *Coordinator) loop() {
	defer close(c.done)
	t := time.NewTicker(c.cfg.TickEvery)
	defer t.Stop()
	for {
		select {
		case <-c.stop:
			return
		case <-t.C:
			// Bounded, so Close never waits long on a controller that is gone.
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			c.Tick(ctx, c.cfg.Now())
			cancel()
		}
	}
}

// internalTopics are Kafka's internal topics, which a share group cannot
// consume (their records are the brokers' own state).
var internalTopics = map[string]bool{"__consumer_offsets": true, "__transaction_state": true, "__share_group_state": true}

// imageTopics resolves names against an image, leaving out internal topics.
type imageTopics struct{ img *metadata.Image }

func (t imageTopics) Topic(name string) (Topic, bool) {
	if t.img == nil || internalTopics[name] {
		return Topic{}, false
	}
	ti, ok := t.img.Topic(name)
	if !ok {
		return Topic{}, false
	}
	return Topic{ID: ti.ID, Partitions: int32(len(ti.Partitions))}, true
}

// IsClassic says whether img knows groupID as a group of another kind: a
// classic group (committed offsets or a generation) or a KIP-848 consumer
// group. A group id is one kind at a time.
func IsClassic(img *metadata.Image, groupID string) bool {
	if img == nil {
		return false
	}
	if _, ok := img.GroupGeneration(groupID); ok {
		return true
	}
	if _, ok := img.ConsumerGroup(groupID); ok {
		return true
	}
	return len(img.Offsets(groupID)) > 0
}

// get returns the loaded group, loading it from the image (a failover) when
// the image has it. c.mu is held.
func (c *Coordinator) get(img *metadata.Image, groupID string, now time.Time) *loaded {
	if l := c.groups[groupID]; l != nil {
		return l
	}
	st, ok := StateFromImage(img, groupID)
	if !ok {
		return nil
	}
	l := &loaded{g: Restore(groupID, st, now.Add(c.cfg.GroupConfig(groupID).SessionTimeout))}
	l.persisted, l.written = l.g.Export(), l.g.Version()
	c.groups[groupID] = l
	return l
}

// Heartbeat runs a ShareGroupHeartbeat.
func (c *Coordinator) Heartbeat(ctx context.Context, groupID string, r HeartbeatRequest) HeartbeatResult {
	if err := Validate(groupID, r); err != nil {
		return fail(err, "invalid ShareGroupHeartbeat: %s", validateMessage(groupID, r))
	}
	img, _ := c.cfg.Metadata.Current()
	if err := c.cfg.Owner(img, groupID); err != nil {
		return HeartbeatResult{Err: asKerr(err), ErrMessage: err.Error()}
	}
	if IsClassic(img, groupID) {
		return fail(kerr.GroupIDNotFound, "group %s is not a share group", groupID)
	}
	now := c.cfg.Now()
	c.mu.Lock()
	defer c.mu.Unlock()
	l := c.get(img, groupID, now)
	if l == nil {
		if r.MemberEpoch != JoinEpoch {
			return fail(kerr.GroupIDNotFound, "share group %s not found", groupID)
		}
		l = &loaded{g: New(groupID)}
	}
	res := l.g.Heartbeat(now, c.cfg.GroupConfig(groupID), imageTopics{img}, r)
	if res.Err != nil && l.persisted == nil && l.g.Version() == 0 {
		return res // a failed first join creates nothing
	}
	c.groups[groupID] = l
	if err := c.persist(ctx, l); err != nil {
		return HeartbeatResult{Err: kerr.CoordinatorNotAvailable, ErrMessage: err.Error()}
	}
	return res
}

// persist writes the group's state if it changed since the last write. On
// failure the group is dropped from memory, so the next request reloads
// what is durable rather than answer from state nobody stored.
func (c *Coordinator) persist(ctx context.Context, l *loaded) error {
	if c.cfg.Persister == nil || l.g.Version() == l.written && l.persisted != nil {
		l.written = l.g.Version()
		return nil
	}
	next := l.g.Export()
	if err := c.cfg.Persister.PersistShareGroup(ctx, l.g.ID(), l.persisted, next); err != nil {
		delete(c.groups, l.g.ID())
		c.cfg.Log.Warn().Err(err).Str("group", l.g.ID()).Msg("share group state not persisted; reloading it from the image")
		return err
	}
	l.persisted, l.written = next, l.g.Version()
	return nil
}

// Tick expires sessions at now and drops the groups this node no longer
// coordinates.
func (c *Coordinator) Tick(ctx context.Context, now time.Time) {
	img, _ := c.cfg.Metadata.Current()
	c.mu.Lock()
	defer c.mu.Unlock()
	// A group this node took over (a failover) keeps its recorded members
	// until they heartbeat or their sessions, started afresh at the
	// takeover, expire; so every owned group with members is loaded.
	for _, id := range ShareGroupsInImage(img) {
		if c.groups[id] == nil && c.cfg.Owner(img, id) == nil {
			if st, ok := StateFromImage(img, id); ok && len(st.Members) > 0 {
				c.get(img, id, now)
			}
		}
	}
	for id, l := range c.groups {
		if c.cfg.Owner(img, id) != nil {
			delete(c.groups, id)
			continue
		}
		if l.g.RefreshTopics(imageTopics{img}) {
			c.cfg.Log.Debug().Str("group", id).Int32("epoch", l.g.Epoch()).Msg("share group topics changed")
		}
		if gone := l.g.Tick(now); len(gone) > 0 {
			c.cfg.Log.Info().Str("group", id).Strs("members", gone).Int32("epoch", l.g.Epoch()).Msg("share group members' sessions expired")
		}
		_ = c.persist(ctx, l)
	}
}

// Listing is one share group as ListGroups shows it.
type Listing struct {
	Group string
	State string
}

// List gives the share groups this node coordinates, sorted: those loaded
// and those only the image holds.
func (c *Coordinator) List(ctx context.Context) []Listing {
	img, _ := c.cfg.Metadata.Current()
	c.mu.Lock()
	defer c.mu.Unlock()
	seen := map[string]bool{}
	var out []Listing
	for id, l := range c.groups {
		if c.cfg.Owner(img, id) == nil {
			seen[id] = true
			out = append(out, Listing{Group: id, State: l.g.State()})
		}
	}
	for _, id := range ShareGroupsInImage(img) {
		if seen[id] || c.cfg.Owner(img, id) != nil {
			continue
		}
		st, _ := StateFromImage(img, id)
		state := StateStable
		if len(st.Members) == 0 {
			state = StateEmpty
		}
		out = append(out, Listing{Group: id, State: state})
	}
	slices.SortFunc(out, func(a, b Listing) int { return strings.Compare(a.Group, b.Group) })
	return out
}

// Snapshot is a group as ShareGroupDescribe shows it.
type Snapshot struct {
	Group           string
	State           string
	Epoch           int32
	AssignmentEpoch int32
	Members         []*Member
}

// Describe returns a copy of the group, or the error ShareGroupDescribe
// answers for it: NOT_COORDINATOR, GROUP_ID_NOT_FOUND (no such group, or
// not a share group).
func (c *Coordinator) Describe(ctx context.Context, groupID string) (Snapshot, error) {
	img, _ := c.cfg.Metadata.Current()
	if err := c.cfg.Owner(img, groupID); err != nil {
		return Snapshot{}, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	l := c.get(img, groupID, c.cfg.Now())
	if l == nil {
		return Snapshot{}, kerr.GroupIDNotFound
	}
	return Snapshot{Group: groupID, State: l.g.State(), Epoch: l.g.Epoch(), AssignmentEpoch: l.g.AssignmentEpoch(), Members: l.g.Members()}, nil
}

// Delete deletes an empty share group (DeleteGroups): NON_EMPTY_GROUP while
// it has members, GROUP_ID_NOT_FOUND when there is no such share group,
// NOT_COORDINATOR when another node coordinates it.
func (c *Coordinator) Delete(ctx context.Context, groupID string) error {
	img, _ := c.cfg.Metadata.Current()
	if err := c.cfg.Owner(img, groupID); err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	l := c.get(img, groupID, c.cfg.Now())
	if l == nil {
		return kerr.GroupIDNotFound
	}
	if l.g.Len() > 0 {
		return kerr.NonEmptyGroup
	}
	if c.cfg.Persister != nil && l.persisted != nil {
		if err := c.cfg.Persister.PersistShareGroup(ctx, groupID, l.persisted, nil); err != nil {
			return fmt.Errorf("%w: %w", kerr.CoordinatorNotAvailable, err)
		}
	}
	delete(c.groups, groupID)
	return nil
}

// IsShareGroup says whether groupID is a share group this node
// coordinates, so the classic group APIs can refuse it
// (INCONSISTENT_GROUP_PROTOCOL).
func (c *Coordinator) IsShareGroup(groupID string) bool {
	img, _ := c.cfg.Metadata.Current()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.groups[groupID] != nil {
		return true
	}
	_, ok := StateFromImage(img, groupID)
	return ok
}

// ShareGroupHasMembers is the membership query of the share-group offset
// admin APIs (AlterShareGroupOffsets and DeleteShareGroupOffsets answer
// GROUP_NOT_EMPTY while it is true). The error is NOT_COORDINATOR when
// another node coordinates the group, GROUP_ID_NOT_FOUND when there is no
// share group by that id.
func (c *Coordinator) ShareGroupHasMembers(groupID string) (bool, error) {
	s, err := c.Describe(context.Background(), groupID)
	if err != nil {
		return false, err
	}
	return len(s.Members) > 0, nil
}

func asKerr(err error) *kerr.Error {
	if ke, ok := err.(*kerr.Error); ok {
		return ke
	}
	return kerr.NotCoordinator
}

func validateMessage(groupID string, r HeartbeatRequest) string {
	switch {
	case strings.TrimSpace(r.MemberID) == "":
		return "MemberId can't be empty."
	case strings.TrimSpace(groupID) == "":
		return "GroupId can't be empty."
	case r.RackID != nil && strings.TrimSpace(*r.RackID) == "":
		return "RackId can't be empty."
	case r.MemberEpoch == JoinEpoch:
		return "SubscribedTopicNames must be set in first request."
	}
	return "MemberEpoch is invalid."
}
