package raftfsm

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/raftka/raftka/metadata"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestDecideGroupGeneration(t *testing.T) {
	img := newImg(t, 1).with(&metadata.GroupGeneration{Group: "g", Generation: 4}).build()
	cases := []struct {
		name     string
		group    string
		gen      int32
		wantCode int16
	}{
		{name: "next generation", group: "g", gen: 5},
		{name: "same generation is stale", group: "g", gen: 4, wantCode: kerr.IllegalGeneration.Code},
		{name: "older generation is stale", group: "g", gen: 2, wantCode: kerr.IllegalGeneration.Code},
		{name: "negative generation", group: "new", gen: -1, wantCode: kerr.IllegalGeneration.Code},
		{name: "new group at generation 0", group: "new", gen: 0},
		{name: "empty group id", group: "", gen: 1, wantCode: kerr.InvalidGroupID.Code},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			req := kmsg.NewPtrSyncGroupRequest()
			req.Group, req.Generation, req.MemberID = tc.group, tc.gen, "m1"
			req.ProtocolType, req.Protocol = kmsg.StringPtr("consumer"), kmsg.StringPtr("range")
			for _, m := range []metadata.GroupMember{{MemberID: "m1", InstanceID: "i1"}, {MemberID: "m2"}} {
				a := kmsg.NewSyncGroupRequestGroupAssignment()
				a.MemberID = m.MemberID
				if m.InstanceID != "" {
					a.UnknownTags.Set(InstanceIDTag, []byte(m.InstanceID))
				}
				req.GroupAssignment = append(req.GroupAssignment, a)
			}
			d := decideGroupGeneration(req)(nil, img, time.UnixMilli(1_700_000_000_123))
			if code := d.resp.(*kmsg.SyncGroupResponse).ErrorCode; code != tc.wantCode {
				t.Fatalf("code %d, want %d", code, tc.wantCode)
			}
			if tc.wantCode != 0 {
				if len(d.recs) != 0 {
					t.Fatal("records for a refused generation")
				}
				return
			}
			next, delta := img.Apply(d.recs)
			if len(delta.Skipped) > 0 {
				t.Fatalf("replay skipped the decided record: %v", delta.Skipped[0].Err)
			}
			got, _ := next.GroupGeneration(tc.group)
			want := metadata.GroupGeneration{Group: tc.group, Generation: tc.gen, ProtocolType: "consumer", Protocol: "range", Leader: "m1",
				Members: []metadata.GroupMember{{MemberID: "m1", InstanceID: "i1"}, {MemberID: "m2"}}, StateTimestampMs: 1_700_000_000_123}
			if got.StateTimestampMs != want.StateTimestampMs || got.Group != want.Group || got.Generation != want.Generation || got.ProtocolType != want.ProtocolType ||
				got.Protocol != want.Protocol || got.Leader != want.Leader || !slices.Equal(got.Members, want.Members) {
				t.Fatalf("recorded %+v, want %+v", got, want)
			}
		})
	}
}

func TestDecideGroupDeletes(t *testing.T) {
	img := newImg(t, 1).with(
		&metadata.CommitOffsets{Group: "g", Offsets: []metadata.OffsetCommit{{Topic: "a", Partition: 0, Offset: 5}, {Topic: "a", Partition: 1, Offset: 6}}},
		&metadata.GroupGeneration{Group: "gen-only", Generation: 1},
	).build()

	t.Run("delete offsets only where there are some", func(t *testing.T) {
		req := offsetCommitRequest("g", 3, func(i int) metadata.OffsetCommit {
			return metadata.OffsetCommit{Topic: "a", Partition: int32(i)}
		})
		d := decideDeleteOffsets(req)(nil, img, time.Time{})
		if len(d.recs) != 1 || !slices.Equal(d.recs[0].(*metadata.DeleteOffsets).Partitions, []metadata.TopicPartition{{Topic: "a", Partition: 0}, {Topic: "a", Partition: 1}}) {
			t.Fatalf("records %+v", d.recs)
		}
		next, _ := img.Apply(d.recs)
		if next.Offsets("g") != nil {
			t.Fatalf("offsets left: %v", next.Offsets("g"))
		}
		if d2 := decideDeleteOffsets(req)(nil, next, time.Time{}); len(d2.recs) != 0 {
			t.Fatal("deleting absent offsets wrote a record")
		}
	})
	t.Run("delete groups", func(t *testing.T) {
		req := kmsg.NewPtrDeleteGroupsRequest()
		req.Groups = []string{"g", "gen-only", "absent", "g", ""}
		d := decideDeleteGroups(req)(nil, img, time.Time{})
		var codes []int16
		for _, g := range d.resp.(*kmsg.DeleteGroupsResponse).Groups {
			codes = append(codes, g.ErrorCode)
		}
		if !slices.Equal(codes, []int16{0, 0, 0, 0, kerr.InvalidGroupID.Code}) {
			t.Fatalf("codes %v", codes)
		}
		if len(d.recs) != 2 {
			t.Fatalf("%d records, want one per existing group", len(d.recs))
		}
		next, _ := img.Apply(d.recs)
		if gs := next.Groups(); len(gs) != 0 {
			t.Fatalf("groups left: %v", gs)
		}
	})
	t.Run("commit time comes from the decision and is replayed as is", func(t *testing.T) {
		now := time.UnixMilli(1_700_000_000_123)
		req := offsetCommitRequest("h", 1, func(int) metadata.OffsetCommit { return metadata.OffsetCommit{Topic: "a", Offset: 9} })
		d := decideCommitOffsets(req)(nil, img, now)
		next, _ := img.Apply(d.recs)
		if o, ok := next.Offset("h", "a", 0); !ok || o.CommitTimeMs != now.UnixMilli() || o.Offset != 9 {
			t.Fatalf("offset %+v %v", o, ok)
		}
	})
}

// TestGroupRPCs drives the typed client methods against a three-node
// cluster through a follower, which forwards to the leader, and checks
// read-your-writes on the follower after each call.
func TestGroupRPCs(t *testing.T) {
	tc := startCluster(t, 3, nil)
	tc.leader(10 * time.Second)
	fi := tc.follower()
	f := tc.nodes[fi]
	c := NewControllerClient(ClientConfig{Voters: []Voter{tc.voters[fi]}, Waiter: f})
	defer c.Close()
	ctx := ctxT(t, 20*time.Second)

	if _, err := c.CommitOffsets(ctx, "g", []metadata.OffsetCommit{
		{Topic: "a", Partition: 0, Offset: 10, LeaderEpoch: 1}, {Topic: "a", Partition: 1, Offset: 11, LeaderEpoch: 1},
	}); err != nil {
		t.Fatal(err)
	}
	gen := &metadata.GroupGeneration{Group: "g", Generation: 1, ProtocolType: "consumer", Protocol: "cooperative-sticky", Leader: "m-1",
		Members: []metadata.GroupMember{{MemberID: "m-1", InstanceID: "static-1"}, {MemberID: "m-2"}}, SubscribedTopics: []string{"a", "b"}}
	index, err := c.CommitGroupGeneration(ctx, gen)
	if err != nil {
		t.Fatal(err)
	}
	img, applied := f.Current()
	if applied < index {
		t.Fatalf("follower at %d after the call returned commit %d", applied, index)
	}
	if got, ok := img.GroupGeneration("g"); !ok || got.Generation != 1 || !slices.Equal(got.Members, gen.Members) || got.Protocol != gen.Protocol ||
		!slices.Equal(got.SubscribedTopics, gen.SubscribedTopics) || got.StateTimestampMs <= 0 {
		t.Fatalf("generation in the image: %+v", got)
	}
	if _, err := c.CommitGroupGeneration(ctx, gen); !errors.Is(err, kerr.IllegalGeneration) {
		t.Fatalf("repeated generation: %v, want ILLEGAL_GENERATION", err)
	}

	if _, err := c.DeleteOffsets(ctx, "g", []metadata.TopicPartition{{Topic: "a", Partition: 0}, {Topic: "b", Partition: 7}}); err != nil {
		t.Fatal(err)
	}
	img, _ = f.Current()
	if _, ok := img.Offset("g", "a", 0); ok {
		t.Fatal("a-0 still committed after DeleteOffsets")
	}
	if o, ok := img.Offset("g", "a", 1); !ok || o.Offset != 11 {
		t.Fatalf("a-1 lost: %+v", o)
	}

	if _, err := c.DeleteGroups(ctx, []string{"g", "never-existed"}); err != nil {
		t.Fatal(err)
	}
	img, _ = f.Current()
	if gs := img.Groups(); len(gs) != 0 {
		t.Fatalf("groups after DeleteGroups: %v", gs)
	}
	if _, err := c.DeleteGroups(ctx, []string{""}); !errors.Is(err, kerr.InvalidGroupID) {
		t.Fatalf("empty group id: %v", err)
	}
	final, last := f.Current()
	for i, n := range tc.nodes {
		if err := n.WaitForIndex(ctx, last); err != nil {
			t.Fatal(err)
		}
		if other, _ := n.Current(); !other.Equal(final) {
			t.Fatalf("node %d disagrees with the follower", i+1)
		}
	}
}

// TestGroupCommitsCoalesce holds the controller loop inside one operation
// while group operations of every kind queue behind it, then checks they
// all left in one Raft entry: one index for all of them.
func TestGroupCommitsCoalesce(t *testing.T) {
	tc := startCluster(t, 3, nil)
	li := tc.leader(10 * time.Second)
	ctrl := tc.nodes[li].activeController()
	if ctrl == nil {
		t.Fatal("leadership moved before the test could hold the controller")
	}
	entered, release := make(chan struct{}), make(chan struct{})
	var releaseOnce sync.Once
	unhold := func() { releaseOnce.Do(func() { close(release) }) }
	// Registered after startCluster's cleanup, so it runs first: a failing
	// test must not leave the loop stuck in the held operation, or the
	// node's shutdown would wait for it forever.
	t.Cleanup(unhold)
	held := make(chan opResult, 1)
	go func() {
		held <- ctrl.submit(context.Background(), func(*controller, *metadata.Image, time.Time) decision {
			close(entered)
			<-release
			return decision{}
		})
	}()
	select {
	case <-entered:
	case r := <-held:
		t.Fatalf("the holding operation never ran: %v", r.err)
	case <-time.After(10 * time.Second):
		t.Fatal("the holding operation never ran")
	}

	const n = 24
	c := NewControllerClient(ClientConfig{Voters: tc.voters, Waiter: tc.nodes[li]})
	defer c.Close()
	ctx := ctxT(t, 20*time.Second)
	var wg sync.WaitGroup
	indexes := make([]uint64, n)
	errs := make([]error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			g := fmt.Sprintf("g%d", i)
			switch i % 3 {
			case 0:
				indexes[i], errs[i] = c.CommitOffsets(ctx, g, []metadata.OffsetCommit{{Topic: "t", Offset: int64(i)}})
			case 1:
				indexes[i], errs[i] = c.CommitGroupGeneration(ctx, &metadata.GroupGeneration{Group: g, Generation: 1})
			default:
				// Nothing to delete: no record, but the answer still
				// carries the batch's index.
				indexes[i], errs[i] = c.DeleteGroups(ctx, []string{g})
			}
		}()
	}
	waitFor(t, 10*time.Second, "all operations queued behind the held one", func() bool { return len(ctrl.ops) == n })
	unhold()
	wg.Wait()
	if r := <-held; r.err != nil {
		t.Fatal(r.err)
	}
	for i, err := range errs {
		if err != nil {
			t.Fatalf("op %d: %v", i, err)
		}
	}
	for i, idx := range indexes {
		if idx != indexes[0] || idx == 0 {
			t.Fatalf("op %d committed at %d, op 0 at %d: not one entry", i, idx, indexes[0])
		}
	}
	img, _ := tc.nodes[li].Current()
	if got := len(img.Groups()); got != 2*n/3 {
		t.Fatalf("%d groups in the image, want %d", got, 2*n/3)
	}
}

// The controller's check removes the offsets retention has expired, with
// the time in its decision: an empty group's and a standalone consumer's
// go, an active group's stay although they were committed first.
func TestControllerExpiresOffsets(t *testing.T) {
	cfg := inmemConfig(1)
	cfg.OffsetsRetention, cfg.OffsetsRetentionCheckInterval = 300*time.Millisecond, 20*time.Millisecond
	n, err := StartInMemory(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = n.Shutdown() })
	c := n.Client()
	ctx := ctxT(t, 20*time.Second)
	a0 := []metadata.OffsetCommit{{Topic: "a", Partition: 0, Offset: 10, LeaderEpoch: -1}}
	member := []metadata.GroupMember{{MemberID: "m-1"}}
	if _, err := c.CommitGroupGeneration(ctx, &metadata.GroupGeneration{Group: "active", Generation: 1, ProtocolType: "consumer", Members: member}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.CommitOffsets(ctx, "active", a0); err != nil {
		t.Fatal(err)
	}
	if _, err := c.CommitGroupGeneration(ctx, &metadata.GroupGeneration{Group: "empty", Generation: 1, ProtocolType: "consumer", Members: member}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.CommitOffsets(ctx, "empty", a0); err != nil {
		t.Fatal(err)
	}
	if _, err := c.CommitGroupGeneration(ctx, &metadata.GroupGeneration{Group: "empty", Generation: 2, ProtocolType: "consumer"}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.CommitOffsets(ctx, "standalone", a0); err != nil {
		t.Fatal(err)
	}
	img, _ := n.Current()
	gen, _ := img.GroupGeneration("empty")
	if o, _ := img.Offset("active", "a", 0); gen.StateTimestampMs < o.CommitTimeMs {
		t.Fatalf("empty since %d, before the active group's commit at %d", gen.StateTimestampMs, o.CommitTimeMs)
	}
	waitFor(t, 10*time.Second, "empty and standalone groups expired", func() bool {
		img, _ := n.Current()
		_, hasGen := img.GroupGeneration("empty")
		return img.Offsets("empty") == nil && !hasGen && img.Offsets("standalone") == nil
	})
	img, _ = n.Current()
	if o, ok := img.Offset("active", "a", 0); !ok || o.Offset != 10 {
		t.Fatalf("the active group's offset expired: %+v %v", o, ok)
	}
	if _, ok := img.GroupGeneration("active"); !ok {
		t.Fatal("the active group was deleted")
	}
}

func TestTopicsTag(t *testing.T) {
	for _, topics := range [][]string{{}, {"a"}, {"orders", "", "ünï"}} {
		got, ok := decodeTopics(encodeTopics(topics))
		if !ok || got == nil || !slices.Equal(got, topics) {
			t.Errorf("%q: decoded %q %v", topics, got, ok)
		}
	}
	for _, bad := range [][]byte{nil, {}, {1}, {2, 1, 'a'}, {1, 5, 'a'}, {0, 0}, {0x80}, {1, 0x80}} {
		if got, ok := decodeTopics(bad); ok {
			t.Errorf("% x decoded as %q", bad, got)
		}
	}
}

func FuzzDecodeTopics(f *testing.F) {
	f.Add(encodeTopics([]string{"a", "bb"}))
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 0x0f})
	f.Fuzz(func(t *testing.T, b []byte) {
		topics, ok := decodeTopics(b)
		if ok && !bytes.Equal(encodeTopics(topics), b) {
			// A non-minimal uvarint decodes too; its topics must still
			// encode back to something that decodes the same.
			again, ok2 := decodeTopics(encodeTopics(topics))
			if !ok2 || !slices.Equal(again, topics) {
				t.Fatalf("% x: %q does not round-trip", b, topics)
			}
		}
	})
}
