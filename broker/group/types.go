package group

import (
	"bytes"
	"slices"
	"time"
)

// State is a classic group's state, as Kafka names them in DescribeGroups
// and ListGroups.
type State int8

const (
	Empty State = iota
	PreparingRebalance
	CompletingRebalance
	Stable
	Dead
)

var stateNames = [...]string{"Empty", "PreparingRebalance", "CompletingRebalance", "Stable", "Dead"}

func (s State) String() string {
	if int(s) < len(stateNames) {
		return stateNames[s]
	}
	return "Unknown"
}

// ParseState maps a ListGroups states-filter entry to a State; Kafka matches
// case-insensitively.
func ParseState(s string) (State, bool) {
	for i, n := range stateNames {
		if bytes.EqualFold([]byte(n), []byte(s)) {
			return State(i), true
		}
	}
	return Dead, false
}

// Config holds the broker settings a group checks its members against.
type Config struct {
	// MinSessionTimeout and MaxSessionTimeout are group.min/max.session.timeout.ms.
	MinSessionTimeout, MaxSessionTimeout time.Duration
	// InitialRebalanceDelay is group.initial.rebalance.delay.ms: the first
	// rebalance of an empty group waits this long for more members, again
	// each time one arrives, up to the rebalance timeout.
	InitialRebalanceDelay time.Duration
	// MaxSize is group.max.size (0: unbounded).
	MaxSize int
	// NewMemberID returns a fresh member id with the given prefix (the
	// client id, or the instance id of a static member). Nil uses
	// prefix + "-" + a random UUID, as Kafka does; tests make it
	// deterministic.
	NewMemberID func(prefix string) string
}

// Protocol is one assignment protocol a member supports, with its
// subscription metadata.
type Protocol struct {
	Name     string
	Metadata []byte
}

// JoinRequest is a JoinGroup from one member.
type JoinRequest struct {
	MemberID, InstanceID string // "" when absent
	ClientID, ClientHost string
	ProtocolType         string
	Protocols            []Protocol
	SessionTimeout       time.Duration
	RebalanceTimeout     time.Duration
	// RequireKnownMemberID is KIP-394 (JoinGroup v4+): a new dynamic member
	// gets its id in a MEMBER_ID_REQUIRED answer and must join again with it.
	RequireKnownMemberID bool
	// SupportsSkipAssignment is JoinGroup v9+ (KIP-814): a static leader
	// that rejoins a stable group gets the member list without a rebalance
	// and is told not to assign again.
	SupportsSkipAssignment bool
	// Reply is called exactly once, from the goroutine that drives the
	// group, possibly much later (when the rebalance completes).
	Reply func(JoinResult)
}

// JoinResult answers a JoinRequest.
type JoinResult struct {
	ErrorCode      int16
	Generation     int32
	ProtocolType   string
	Protocol       string
	Leader         string
	MemberID       string
	Members        []JoinedMember // the leader's answer only
	SkipAssignment bool
}

// JoinedMember is one member as the leader sees it in its JoinGroup answer.
type JoinedMember struct {
	MemberID, InstanceID string
	Metadata             []byte
}

// SyncRequest is a SyncGroup from one member.
type SyncRequest struct {
	MemberID, InstanceID string
	Generation           int32
	// ProtocolType and Protocol are checked when set (SyncGroup v5+).
	ProtocolType, Protocol string
	// Assignments is the leader's plan, by member id; others send none.
	Assignments map[string][]byte
	Reply       func(SyncResult)
}

// SyncResult answers a SyncRequest.
type SyncResult struct {
	ErrorCode    int16
	ProtocolType string
	Protocol     string
	Assignment   []byte
}

// member is one joined member. Fields are owned by the Group.
type member struct {
	id, instanceID       string
	clientID, clientHost string
	protocols            []Protocol
	session, rebalance   time.Duration
	assignment           []byte
	join                 func(JoinResult) // set while awaiting a JoinGroup answer
	sync                 func(SyncResult) // set while awaiting a SyncGroup answer
	// deadline is when the session expires, counted from the last
	// heartbeat, commit or sync; a member awaiting an answer does not
	// expire (the rebalance deadline or the leader's expiry moves it on).
	deadline time.Time
}

func (m *member) awaiting() bool { return m.join != nil || m.sync != nil }

func (m *member) metadataFor(protocol string) []byte {
	for _, p := range m.protocols {
		if p.Name == protocol {
			return p.Metadata
		}
	}
	return nil
}

func sameProtocols(a, b []Protocol) bool {
	return slices.EqualFunc(a, b, func(x, y Protocol) bool {
		return x.Name == y.Name && bytes.Equal(x.Metadata, y.Metadata)
	})
}

func hasProtocol(ps []Protocol, name string) bool {
	return slices.ContainsFunc(ps, func(p Protocol) bool { return p.Name == name })
}
