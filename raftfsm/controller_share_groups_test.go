package raftfsm

import (
	"errors"
	"testing"
	"time"

	"github.com/raftka/raftka/metadata"
	"github.com/twmb/franz-go/pkg/kerr"
)

// Share group writes through the controller: a change that applies is
// recorded whole; one that does not (a member of no group, a classic
// group's id), or that smuggles another record type, is refused and
// stores nothing.
func TestWriteShareGroupThroughController(t *testing.T) {
	tc := startCluster(t, 1, nil)
	n := tc.nodes[tc.leader(10*time.Second)]
	ctx := ctxT(t, 20*time.Second)
	c := n.Client()
	if _, err := c.WriteShareGroup(ctx, []metadata.Record{
		&metadata.ShareGroupEpoch{Group: "sg", Epoch: 1},
		&metadata.ShareGroupMember{Group: "sg", MemberID: "m", MemberEpoch: 1, SubscribedTopicNames: []string{"t"}},
		&metadata.ShareGroupTargetAssignment{Group: "sg", AssignmentEpoch: 1, Members: []metadata.ShareGroupMemberTarget{{MemberID: "m"}}},
	}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "the group in the image", func() bool {
		img, _ := n.Current()
		g, ok := img.ShareGroup("sg")
		return ok && g.Epoch == 1 && len(g.Members) == 1
	})
	if _, err := c.WriteShareGroup(ctx, []metadata.Record{&metadata.ShareGroupMember{Group: "none", MemberID: "m"}}); !errors.Is(err, kerr.InvalidRequest) {
		t.Fatalf("member of no group: %v", err)
	}
	if _, err := c.CommitOffsets(ctx, "classic", []metadata.OffsetCommit{{Topic: "t", Offset: 1}}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.WriteShareGroup(ctx, []metadata.Record{&metadata.ShareGroupEpoch{Group: "classic", Epoch: 1}}); !errors.Is(err, kerr.InvalidRequest) {
		t.Fatalf("a classic group's id: %v", err)
	}
	if _, err := c.WriteShareGroup(ctx, []metadata.Record{&metadata.DeleteGroup{Group: "classic"}}); err == nil {
		t.Fatal("a non-share record accepted")
	}
	img, _ := n.Current()
	if _, ok := img.ShareGroup("none"); ok {
		t.Fatal("a refused write was stored")
	}
	if _, ok := img.ShareGroup("classic"); ok {
		t.Fatal("a classic group became a share group")
	}
}
