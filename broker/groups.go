package broker

import (
	"context"
	"net"

	"github.com/raftka/raftka/broker/group"
	"github.com/raftka/raftka/metadata"
)

// GroupCoordinator is what the group APIs need of the group coordinator.
// *group.Coordinator satisfies it; its doc says what each call decides.
type GroupCoordinator interface {
	// Ownership is nil when this node coordinates groupID in img, or the
	// *kerr.Error a group API answers (NOT_COORDINATOR, ...).
	Ownership(img *metadata.Image, groupID string) error
	// Locate is the node that coordinates groupID (FindCoordinator).
	Locate(ctx context.Context, groupID string) (int32, error)
	Join(groupID string, r group.JoinRequest) <-chan group.JoinResult
	Sync(groupID string, r group.SyncRequest) <-chan group.SyncResult
	Heartbeat(ctx context.Context, groupID, memberID, instanceID string, generation int32) error
	Leave(ctx context.Context, groupID string, members []group.LeaveMember) ([]error, error)
	Commit(ctx context.Context, r group.CommitRequest) error
	Describe(ctx context.Context, groupID string) (group.Description, error)
	List(ctx context.Context) ([]group.Listing, error)
	Delete(ctx context.Context, groups []string) []error
	DeleteOffsets(ctx context.Context, groupID string, parts []metadata.TopicPartition) ([]error, error)
}

var _ GroupCoordinator = (*group.Coordinator)(nil)

// groupsOf returns the coordinator, or nil when the node has none.
func groupsOf(rc *request) GroupCoordinator { return rc.conn.srv.deps.Groups }

// clientHost is the member's address as Kafka shows it in DescribeGroups:
// "/" and the IP.
func clientHost(rc *request) string {
	if rc.conn.remote == nil {
		return ""
	}
	host, _, err := net.SplitHostPort(rc.conn.remote.String())
	if err != nil {
		host = rc.conn.remote.String()
	}
	return "/" + host
}

func derefOr(s *string, def string) string {
	if s == nil {
		return def
	}
	return *s
}
