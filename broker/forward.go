package broker

// Forwarding admin requests to the active controller.
//
// Clients send admin requests (CreateTopics, DeleteTopics, CreatePartitions,
// AlterConfigs, IncrementalAlterConfigs, ElectLeaders, DescribeQuorum,
// Alter/ListPartitionReassignments, UnregisterBroker) to the
// broker Metadata names as controller, or, for config resources, to any
// broker. Every broker accepts them, checks what Kafka checks before
// forwarding (duplicates, reserved names, unsupported resource types), and
// forwards the rest through Deps.Controller / Deps.Admin, which reach the
// Raft leader and wait until this node's image shows the change
// (read-your-writes), so a client's next Metadata or DescribeConfigs on this
// broker sees it. The controller answers at the newest version; the
// connection's writer re-encodes the answer at the client's version, and
// fields the client's version lacks are dropped on the wire.

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// defaultForwardTimeout bounds a forwarded request whose own timeout is
// unset or not positive.
const defaultForwardTimeout = 30 * time.Second

// forwardContext bounds a forwarded call by the request's TimeoutMillis,
// which Kafka also hands to its controller as the operation's deadline.
func forwardContext(ctx context.Context, timeoutMillis int32) (context.Context, context.CancelFunc) {
	d := defaultForwardTimeout
	if timeoutMillis > 0 {
		d = time.Duration(timeoutMillis) * time.Millisecond
	}
	return context.WithTimeout(ctx, d)
}

// adminUnreachable is the error a handler reports when this node has no way to
// reach the controller (a server built without Deps.Admin, as in tests).
// NOT_CONTROLLER makes clients refresh metadata and retry.
var adminUnreachable = kerr.NotController

// forwardFailure turns a failed controller call into the code and message
// every entry of the request is answered with.
func forwardFailure(err error) (int16, *string) {
	return errorCode(err), kmsg.StringPtr(err.Error())
}

// clearTags drops tagged fields the controller put on a response for its
// own client (raftfsm.IndexTag, the commit index) before it goes out to a
// Kafka client.
func clearTags(t *kmsg.Tags) { *t = kmsg.Tags{} }
