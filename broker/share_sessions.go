package broker

import (
	"fmt"
	"sync"

	"github.com/twmb/franz-go/pkg/kerr"
)

// Share sessions (KIP-932): a member's session with one broker, keyed by
// group and member id. Epoch 0 opens one (replacing the member's previous
// session here), each further request carries the next epoch, -1 closes
// it. The session holds the partitions the member fetches from this
// broker: a ShareFetch adds its Topics, then removes its
// ForgottenTopicsData, and fetches from all that remain. A session belongs to the connection that
// opened it, as Kafka's does: when that connection closes, the session is
// dropped and the records its member holds on this broker are released.
// group.share.max.share.sessions bounds them (SHARE_SESSION_LIMIT_REACHED).

type shareSessionKey struct{ group, member string }

type sharePartitionID struct {
	topicID   [16]byte
	partition int32
}

type shareSession struct {
	key    shareSessionKey
	conn   uint64
	epoch  int32 // the epoch the next request must carry
	parts  []sharePartitionID
	cursor int // where the next fetch starts among parts, for fairness
}

func (s *shareSession) add(id sharePartitionID) {
	for _, p := range s.parts {
		if p == id {
			return
		}
	}
	s.parts = append(s.parts, id)
}

func (s *shareSession) remove(id sharePartitionID) {
	for i, p := range s.parts {
		if p == id {
			s.parts = append(s.parts[:i], s.parts[i+1:]...)
			return
		}
	}
}

type shareSessions struct {
	max int
	mu  sync.Mutex
	m   map[shareSessionKey]*shareSession
}

func newShareSessions(max int) *shareSessions {
	return &shareSessions{max: max, m: map[shareSessionKey]*shareSession{}}
}

// sessionStep is what one request did to its session.
type sessionStep struct {
	s *shareSession
	// replaced is a session of the member that epoch 0 replaced, and
	// closed the session -1 ended: their records are released.
	replaced, closed *shareSession
}

// step checks a request's epoch against the member's session and moves
// the session on (open, next epoch, close). fetch says a ShareFetch, which
// may open a session; ShareAcknowledge may not (INVALID_SHARE_SESSION_EPOCH
// for epoch 0).
func (ss *shareSessions) step(group, member string, epoch int32, conn uint64, fetch bool) (sessionStep, error) {
	k := shareSessionKey{group, member}
	ss.mu.Lock()
	defer ss.mu.Unlock()
	cur := ss.m[k]
	switch {
	case epoch == 0:
		if !fetch {
			return sessionStep{}, fmt.Errorf("%w: ShareAcknowledge cannot open a share session", kerr.InvalidShareSessionEpoch)
		}
		if cur == nil && len(ss.m) >= ss.max {
			return sessionStep{}, fmt.Errorf("%w: %d share sessions (group.share.max.share.sessions)", kerr.ShareSessionLimitReached, ss.max)
		}
		s := &shareSession{key: k, conn: conn, epoch: 1}
		ss.m[k] = s
		return sessionStep{s: s, replaced: cur}, nil
	case cur == nil:
		return sessionStep{}, fmt.Errorf("%w: no share session of member %s of group %s", kerr.ShareSessionNotFound, member, group)
	case epoch == -1:
		delete(ss.m, k)
		return sessionStep{s: cur, closed: cur}, nil
	case epoch != cur.epoch:
		return sessionStep{}, fmt.Errorf("%w: epoch %d, the session expects %d", kerr.InvalidShareSessionEpoch, epoch, cur.epoch)
	}
	cur.epoch++
	if cur.epoch < 0 {
		cur.epoch = 1 // wraps as Kafka's nextEpoch does
	}
	cur.conn = conn
	return sessionStep{s: cur}, nil
}

// change applies a ShareFetch's partitions to its session under the
// cache's lock: first it adds the request's Topics, then it removes its
// ForgottenTopicsData, as Kafka's ShareSession.update does. The order
// matters to clients: franz-go lists a partition it no longer fetches from
// this broker (revoked, paused, moving to a new leader) in Topics to carry
// its acknowledgements and forgets it in the same request, and mirrors the
// session as "add, then forget". Removing first and adding second kept such
// a partition in the session; the broker then acquired its records for the
// member on every fetch, and the client dropped them as a partition it had
// not asked for, until their delivery count reached the limit.
func (ss *shareSessions) change(s *shareSession, add, forget []sharePartitionID) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	for _, id := range add {
		s.add(id)
	}
	for _, id := range forget {
		s.remove(id)
	}
}

// snapshot returns the session's partitions, rotated so each fetch starts
// one further along.
func (ss *shareSessions) snapshot(s *shareSession) []sharePartitionID {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	n := len(s.parts)
	out := make([]sharePartitionID, 0, n)
	for i := range n {
		out = append(out, s.parts[(s.cursor+i)%n])
	}
	if n > 0 {
		s.cursor = (s.cursor + 1) % n
	}
	return out
}

// dropConn removes the sessions of a closed connection.
func (ss *shareSessions) dropConn(conn uint64) []*shareSession {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	var out []*shareSession
	for k, s := range ss.m {
		if s.conn == conn {
			delete(ss.m, k)
			out = append(out, s)
		}
	}
	return out
}
