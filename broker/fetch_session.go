package broker

// Incremental fetch sessions (KIP-227), the broker side of Kafka's
// FetchSession / FetchManager.
//
// A consumer that sends Fetch v7+ with SessionID 0 and SessionEpoch 0 asks
// for a session: the answer is a full one and carries a new SessionID (0 when
// the cache has no room). Its next requests name the session and the epoch
// after the one it last used (1, 2, ..., wrapping to 1 after MaxInt32) and
// list only the partitions whose fetch position changed (plus
// ForgottenTopics to drop); the broker fetches every partition of the
// session and answers only those with something new: records, an error, a
// diverging epoch, or a high watermark, last stable offset or log start
// offset different from the last one sent. SessionEpoch -1 closes the
// session (and fetches sessionless); SessionEpoch 0 with a SessionID
// replaces it.
//
// Errors, answered at the top level with no partitions:
// FETCH_SESSION_ID_NOT_FOUND (unknown or evicted session),
// INVALID_FETCH_SESSION_EPOCH (an epoch other than the expected one; the
// client starts over with a full fetch), FETCH_SESSION_TOPIC_ID_ERROR (a
// session created with topic names used with ids or the reverse).
//
// The cache holds max.incremental.fetch.session.cache.slots sessions. When it
// is full a new session takes the slot of the least recently used session
// idle for min.incremental.fetch.session.eviction.ms, else of the smallest
// session if the new one has more partitions (Kafka's rule for consumers),
// else the client gets no session and fetches in full.
//
// The cache is a plain state machine over (request, results, now): one mutex,
// no goroutines, so it is table-tested without a server.

import (
	"math"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// sessionKey names a partition in a session: by topic id for sessions used
// at Fetch v13+, by name before.
type sessionKey struct {
	id        [16]byte
	name      string
	partition int32
}

// fetchTarget is one partition to read for a Fetch, resolved from the
// request or the session.
type fetchTarget struct {
	key                sessionKey
	topic              string // resolved name; "" for an unknown topic id
	id                 [16]byte
	partition          int32
	offset             int64
	maxBytes           int
	currentLeaderEpoch int32
	lastFetchedEpoch   int32
}

// sessionPartition is a fetchTarget plus what was last answered for it.
type sessionPartition struct {
	fetchTarget
	hw, lso, logStart int64
	answered          bool
}

type fetchSession struct {
	id       int32
	epoch    int32 // the epoch the next request must carry
	usesIDs  bool
	parts    []*sessionPartition
	index    map[sessionKey]*sessionPartition
	lastUsed time.Time
}

func (s *fetchSession) upsert(t fetchTarget) {
	if sp, ok := s.index[t.key]; ok {
		sp.fetchTarget = t
		return
	}
	sp := &sessionPartition{fetchTarget: t}
	s.index[t.key] = sp
	s.parts = append(s.parts, sp)
}

func (s *fetchSession) forget(k sessionKey) {
	if _, ok := s.index[k]; !ok {
		return
	}
	delete(s.index, k)
	for i, sp := range s.parts {
		if sp.key == k {
			s.parts = append(s.parts[:i], s.parts[i+1:]...)
			return
		}
	}
}

// fetchSessionCache is the per-broker session cache. All methods are safe
// for concurrent use.
type fetchSessionCache struct {
	slots      int
	evictAfter time.Duration
	now        func() time.Time

	mu       sync.Mutex
	sessions map[int32]*fetchSession
}

func newFetchSessionCache(slots int, evictAfter time.Duration, now func() time.Time) *fetchSessionCache {
	return &fetchSessionCache{slots: slots, evictAfter: evictAfter, now: now, sessions: map[int32]*fetchSession{}}
}

// fetchContext is what open decided for one request.
type fetchContext struct {
	// errCode is a top-level session error: answer it with no partitions.
	errCode int16
	// full: answer every partition (and, with newSession, try to create a
	// session at finish). Otherwise the request is incremental on session.
	full       bool
	newSession bool
	usesIDs    bool
	session    *fetchSession
	targets    []fetchTarget
}

const (
	sessionEpochInitial = 0
	sessionEpochFinal   = -1
)

func nextSessionEpoch(e int32) int32 {
	if e == math.MaxInt32 {
		return 1
	}
	return e + 1
}

// requestTargets lists the partitions a request names. resolve maps a topic
// id to its name (false: unknown).
func requestTargets(req *kmsg.FetchRequest, resolve func([16]byte) (string, bool)) []fetchTarget {
	var out []fetchTarget
	for _, t := range req.Topics {
		name := t.Topic
		if req.Version >= 13 {
			name, _ = resolve(t.TopicID)
		}
		for _, p := range t.Partitions {
			ft := fetchTarget{
				topic: name, id: t.TopicID, partition: p.Partition, offset: p.FetchOffset, maxBytes: int(p.PartitionMaxBytes),
				currentLeaderEpoch: -1, lastFetchedEpoch: -1,
			}
			if req.Version >= 9 {
				ft.currentLeaderEpoch = p.CurrentLeaderEpoch
			}
			if req.Version >= 12 {
				ft.lastFetchedEpoch = p.LastFetchedEpoch
			}
			ft.key = keyFor(req.Version, t.Topic, t.TopicID, p.Partition)
			out = append(out, ft)
		}
	}
	return out
}

func keyFor(version int16, name string, id [16]byte, partition int32) sessionKey {
	if version >= 13 {
		return sessionKey{id: id, partition: partition}
	}
	return sessionKey{name: name, partition: partition}
}

// open reads the session fields of a consumer's Fetch.
func (c *fetchSessionCache) open(req *kmsg.FetchRequest, resolve func([16]byte) (string, bool)) fetchContext {
	usesIDs := req.Version >= 13
	fc := fetchContext{full: true, usesIDs: usesIDs}
	if req.Version < 7 {
		fc.targets = requestTargets(req, resolve)
		return fc
	}
	switch {
	case req.SessionEpoch == sessionEpochFinal:
		if req.SessionID != 0 {
			c.remove(req.SessionID)
		}
		fc.targets = requestTargets(req, resolve)
		return fc
	case req.SessionEpoch == sessionEpochInitial:
		if req.SessionID != 0 {
			c.remove(req.SessionID)
		}
		fc.targets = requestTargets(req, resolve)
		fc.newSession = c.slots > 0
		return fc
	case req.SessionEpoch < 0:
		fc.errCode = kerr.InvalidFetchSessionEpoch.Code
		return fc
	}

	c.mu.Lock()
	defer c.mu.Unlock()
	s, ok := c.sessions[req.SessionID]
	switch {
	case !ok:
		fc.errCode = kerr.FetchSessionIDNotFound.Code
		return fc
	case s.epoch != req.SessionEpoch:
		fc.errCode = kerr.InvalidFetchSessionEpoch.Code
		return fc
	case s.usesIDs != usesIDs:
		fc.errCode = kerr.FetchSessionTopicIDError.Code
		return fc
	}
	for _, t := range requestTargets(req, resolve) {
		s.upsert(t)
	}
	for _, ft := range req.ForgottenTopics {
		for _, p := range ft.Partitions {
			s.forget(keyFor(req.Version, ft.Topic, ft.TopicID, p))
		}
	}
	s.epoch = nextSessionEpoch(s.epoch)
	s.lastUsed = c.now()
	fc.full, fc.session = false, s
	fc.targets = make([]fetchTarget, len(s.parts))
	for i, sp := range s.parts {
		fc.targets[i] = sp.fetchTarget
	}
	return fc
}

// fetchOutcome is what finish needs to know of one target's answer.
type fetchOutcome struct {
	hw, lso, logStart int64
	mustAnswer        bool // records, an error or a diverging epoch
}

// finish records the answers of a fetch and says which targets to include
// in the response (all of them for a full fetch) and the SessionID to
// answer with. outcomes is in targets' order.
func (c *fetchSessionCache) finish(fc *fetchContext, outcomes []fetchOutcome) (include []bool, sessionID int32) {
	include = make([]bool, len(outcomes))
	if fc.full {
		for i := range include {
			include[i] = true
		}
		if !fc.newSession {
			return include, 0
		}
		s := &fetchSession{epoch: 1, usesIDs: fc.usesIDs, index: map[sessionKey]*sessionPartition{}}
		for i, t := range fc.targets {
			s.upsert(t)
			sp := s.index[t.key]
			sp.hw, sp.lso, sp.logStart, sp.answered = outcomes[i].hw, outcomes[i].lso, outcomes[i].logStart, true
		}
		return include, c.create(s)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	s := fc.session
	for i, t := range fc.targets {
		o := outcomes[i]
		sp, ok := s.index[t.key]
		if !ok {
			// Forgotten by a later request meanwhile; answer it anyway.
			include[i] = true
			continue
		}
		if o.mustAnswer || !sp.answered || sp.hw != o.hw || sp.lso != o.lso || sp.logStart != o.logStart {
			include[i] = true
			sp.hw, sp.lso, sp.logStart, sp.answered = o.hw, o.lso, o.logStart, true
		}
	}
	return include, s.id
}

// create inserts s, evicting another session if the cache is full and the
// eviction rules allow; it returns s's new id, or 0 if there was no room.
func (c *fetchSessionCache) create(s *fetchSession) int32 {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.now()
	if len(c.sessions) >= c.slots && !c.evictLocked(now, len(s.parts)) {
		return 0
	}
	for {
		id := rand.Int32N(math.MaxInt32) + 1 // 1..MaxInt32; 0 means "no session"
		if _, taken := c.sessions[id]; !taken {
			s.id, s.lastUsed = id, now
			c.sessions[id] = s
			return id
		}
	}
}

// evictLocked frees one slot for a session of size partitions, if the rules
// allow.
func (c *fetchSessionCache) evictLocked(now time.Time, size int) bool {
	var stale, smallest *fetchSession
	for _, s := range c.sessions {
		if now.Sub(s.lastUsed) >= c.evictAfter && (stale == nil || s.lastUsed.Before(stale.lastUsed)) {
			stale = s
		}
		if smallest == nil || len(s.parts) < len(smallest.parts) {
			smallest = s
		}
	}
	switch {
	case stale != nil:
		delete(c.sessions, stale.id)
	case smallest != nil && len(smallest.parts) < size:
		delete(c.sessions, smallest.id)
	default:
		return false
	}
	return true
}

func (c *fetchSessionCache) remove(id int32) {
	c.mu.Lock()
	delete(c.sessions, id)
	c.mu.Unlock()
}

func (c *fetchSessionCache) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.sessions)
}
