package group

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/raftka/raftka/metadata"
	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// gatedCtrl holds every CommitOffsets until the test lets it through, so
// work can be queued on a group's loop while a commit is being written. The
// other writes apply at once. Every write goes to the image img holds.
type gatedCtrl struct {
	img     atomic.Pointer[metadata.Image]
	entered chan []metadata.OffsetCommit // one per CommitOffsets, before it waits
	release chan struct{}                // one receive lets one CommitOffsets through
}

func newGatedCtrl(t *testing.T) *gatedCtrl {
	g := &gatedCtrl{entered: make(chan []metadata.OffsetCommit, 8), release: make(chan struct{}, 8)}
	g.img.Store(metadata.NewImage())
	g.apply(t,
		&metadata.RegisterBroker{BrokerID: 1, BrokerEpoch: 1},
		&metadata.CreateTopic{Name: OffsetsTopic, ID: [16]byte{0xc1}, Partitions: []metadata.PartitionRegistration{
			{Partition: 0, Replicas: []int32{1}, ISR: []int32{1}, Leader: 1},
		}},
	)
	return g
}

func (g *gatedCtrl) apply(t *testing.T, recs ...metadata.Record) {
	img, d := g.img.Load().Apply(recs)
	if len(d.Skipped) > 0 && t != nil {
		t.Errorf("skipped %+v", d.Skipped)
	}
	g.img.Store(img)
}

func (g *gatedCtrl) Current() (*metadata.Image, uint64) { return g.img.Load(), 1 }

func (g *gatedCtrl) CreateTopics(context.Context, *kmsg.CreateTopicsRequest) (*kmsg.CreateTopicsResponse, error) {
	return nil, errors.New("not used")
}

func (g *gatedCtrl) CommitOffsets(ctx context.Context, group string, offs []metadata.OffsetCommit) (uint64, error) {
	g.entered <- slices.Clone(offs)
	select {
	case <-g.release:
	case <-ctx.Done():
		return 0, ctx.Err()
	}
	g.apply(nil, &metadata.CommitOffsets{Group: group, Offsets: offs})
	return 1, nil
}

func (g *gatedCtrl) CommitGroupGeneration(_ context.Context, gen *metadata.GroupGeneration) (uint64, error) {
	g.apply(nil, gen)
	return 1, nil
}

func (g *gatedCtrl) DeleteGroups(context.Context, []string) (uint64, error) {
	return 0, errors.New("not used")
}

func (g *gatedCtrl) DeleteOffsets(context.Context, string, []metadata.TopicPartition) (uint64, error) {
	return 0, errors.New("not used")
}

type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) Add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// queuedOn is how many operations wait on the group's loop.
func queuedOn(c *Coordinator, groupID string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	l := c.groups[groupID]
	if l == nil {
		return 0
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.queue)
}

// stableStaticGroup starts a coordinator on the fake clock and makes group
// "g" Stable at generation 1 with one static member (instance "i1"),
// whose member id it returns.
func stableStaticGroup(t *testing.T, session time.Duration) (*Coordinator, *gatedCtrl, *fakeClock, string) {
	ctrl := newGatedCtrl(t)
	clock := &fakeClock{t: time.Unix(1_700_000_000, 0)}
	n := 0
	c := NewCoordinator(CoordinatorConfig{
		NodeID: 1,
		Group: Config{MinSessionTimeout: time.Second, MaxSessionTimeout: time.Hour, NewMemberID: func(prefix string) string {
			n++
			return prefix + "-" + string(rune('a'+n))
		}},
		Logger: zerolog.Nop(),
		Now:    clock.Now,
	}, ctrl, ctrl)
	t.Cleanup(c.Close)
	j := await(t, c.Join("g", JoinRequest{InstanceID: "i1", ClientID: "c", ProtocolType: "consumer",
		Protocols: []Protocol{{Name: "range", Metadata: []byte{1}}}, SessionTimeout: session, RebalanceTimeout: session}))
	if j.ErrorCode != 0 || j.Generation != 1 {
		t.Fatalf("join %+v", j)
	}
	if s := await(t, c.Sync("g", SyncRequest{MemberID: j.MemberID, InstanceID: "i1", Generation: 1,
		Assignments: map[string][]byte{j.MemberID: []byte("a")}})); s.ErrorCode != 0 {
		t.Fatalf("sync %+v", s)
	}
	return c, ctrl, clock, j.MemberID
}

// commitAsync sends a commit and returns where its answer arrives.
func commitAsync(c *Coordinator, r CommitRequest) <-chan error {
	ch := make(chan error, 1)
	go func() { ch <- c.Commit(context.Background(), r) }()
	return ch
}

func waitQueued(t *testing.T, c *Coordinator, n int) {
	t.Helper()
	eventually(t, func() (bool, string) {
		q := queuedOn(c, "g")
		return q == n, fmt.Sprintf("%d operations queued on the group, want %d", q, n)
	})
}

// TestCommitAndFencingAreOrdered holds a member's commit in the controller
// while a step that fences the member is queued, then a second commit from
// it: the fencing step waits for the write in flight (the commit checked
// before it is stored before it), and the commit after it fails with
// Kafka's code without reaching the controller.
func TestCommitAndFencingAreOrdered(t *testing.T) {
	const session = 10 * time.Second
	protocols := []Protocol{{Name: "range", Metadata: []byte{1}}}
	tests := []struct {
		name string
		// fence queues the fencing step and returns how many operations
		// it queued and where its answer arrives (nil: none).
		fence func(c *Coordinator, clock *fakeClock, member string) (int, <-chan struct{})
		want  error
	}{
		{name: "the member leaves",
			fence: func(c *Coordinator, _ *fakeClock, member string) (int, <-chan struct{}) {
				done := make(chan struct{})
				go func() {
					if _, err := c.Leave(context.Background(), "g", []LeaveMember{{MemberID: member, InstanceID: "i1"}}); err == nil {
						close(done)
					}
				}()
				return 1, done
			},
			want: kerr.UnknownMemberID},
		{name: "a new instance of the static member replaces it",
			fence: func(c *Coordinator, _ *fakeClock, _ string) (int, <-chan struct{}) {
				done := make(chan struct{})
				ch := c.Join("g", JoinRequest{InstanceID: "i1", ClientID: "c", ProtocolType: "consumer", Protocols: protocols,
					SessionTimeout: session, RebalanceTimeout: session})
				go func() {
					if j := <-ch; j.ErrorCode == 0 {
						close(done)
					}
				}()
				return 1, done
			},
			want: kerr.FencedInstanceID},
		{name: "the member's session expires",
			fence: func(_ *Coordinator, clock *fakeClock, _ string) (int, <-chan struct{}) {
				clock.Add(2 * session)
				return 0, nil
			},
			want: kerr.UnknownMemberID},
		{name: "a rebalance completes a new generation",
			fence: func(c *Coordinator, _ *fakeClock, member string) (int, <-chan struct{}) {
				done := make(chan struct{})
				newcomer := c.Join("g", JoinRequest{ClientID: "d", ProtocolType: "consumer", Protocols: protocols, SessionTimeout: session, RebalanceTimeout: session})
				rejoin := c.Join("g", JoinRequest{MemberID: member, InstanceID: "i1", ClientID: "c", ProtocolType: "consumer", Protocols: protocols,
					SessionTimeout: session, RebalanceTimeout: session})
				go func() {
					if a, b := <-newcomer, <-rejoin; a.Generation == 2 && b.Generation == 2 {
						close(done)
					}
				}()
				return 2, done
			},
			want: kerr.IllegalGeneration},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, ctrl, clock, member := stableStaticGroup(t, session)
			first := commitAsync(c, CommitRequest{Group: "g", MemberID: member, InstanceID: "i1", Generation: 1,
				Offsets: []metadata.OffsetCommit{{Topic: "t", Partition: 0, Offset: 7, LeaderEpoch: -1}}})
			written := await(t, ctrl.entered)

			n, fenced := tc.fence(c, clock, member)
			waitQueued(t, c, n)
			second := commitAsync(c, CommitRequest{Group: "g", MemberID: member, InstanceID: "i1", Generation: 1,
				Offsets: []metadata.OffsetCommit{{Topic: "t", Partition: 0, Offset: 8, LeaderEpoch: -1}}})
			waitQueued(t, c, n+1)
			select {
			case <-fenced:
				t.Fatal("the fencing step ran while a commit checked before it was being written")
			default:
			}

			ctrl.release <- struct{}{}
			if err := await(t, first); err != nil {
				t.Fatalf("commit checked before the fence: %v", err)
			}
			if fenced != nil {
				await(t, fenced)
			}
			if err := await(t, second); !errors.Is(err, tc.want) {
				t.Fatalf("commit after the fence: %v, want %v", err, tc.want)
			}
			if len(ctrl.entered) != 0 {
				t.Fatalf("the fenced commit reached the controller: %+v", <-ctrl.entered)
			}
			if len(written) != 1 || written[0].Offset != 7 || written[0].CommitTimeMs != 0 {
				t.Fatalf("written %+v, want the first commit's offset without a broker commit time", written)
			}
			if o, ok := ctrl.img.Load().Offset("g", "t", 0); !ok || o.Offset != 7 {
				t.Fatalf("stored offset %+v %v, want 7", o, ok)
			}
		})
	}
}

// TestCommitsQueuedTogetherWriteOnce queues commits behind one being
// written: those that pass the member check leave in one controller call,
// in arrival order, and the others are answered without one.
func TestCommitsQueuedTogetherWriteOnce(t *testing.T) {
	c, ctrl, _, member := stableStaticGroup(t, 10*time.Second)
	commit := func(memberID string, partition int32, offset int64) <-chan error {
		return commitAsync(c, CommitRequest{Group: "g", MemberID: memberID, InstanceID: "i1", Generation: 1,
			Offsets: []metadata.OffsetCommit{{Topic: "t", Partition: partition, Offset: offset, LeaderEpoch: -1}}})
	}
	first := commit(member, 0, 1)
	await(t, ctrl.entered)
	var later []<-chan error
	for i, m := range []string{member, "stranger", member} {
		later = append(later, commit(m, int32(i), int64(10+i)))
		waitQueued(t, c, i+1)
	}
	ctrl.release <- struct{}{}
	if err := await(t, first); err != nil {
		t.Fatal(err)
	}
	batch := await(t, ctrl.entered)
	want := []metadata.OffsetCommit{{Topic: "t", Partition: 0, Offset: 10, LeaderEpoch: -1}, {Topic: "t", Partition: 2, Offset: 12, LeaderEpoch: -1}}
	if !slices.Equal(batch, want) {
		t.Fatalf("second write %+v, want %+v", batch, want)
	}
	if err := await(t, later[1]); !errors.Is(err, kerr.FencedInstanceID) {
		t.Fatalf("commit from another member id of the instance: %v", err)
	}
	ctrl.release <- struct{}{}
	for _, i := range []int{0, 2} {
		if err := await(t, later[i]); err != nil {
			t.Fatalf("commit %d: %v", i, err)
		}
	}
	if len(ctrl.entered) != 0 {
		t.Fatal("more controller calls than batches")
	}
}

// TestCloseAnswersCommitInFlight closes the coordinator while a commit is
// being written: the commit is answered NOT_COORDINATOR, as every request
// waiting on a closing coordinator, so the client commits again at the
// next one.
func TestCloseAnswersCommitInFlight(t *testing.T) {
	c, ctrl, _, member := stableStaticGroup(t, 10*time.Second)
	done := commitAsync(c, CommitRequest{Group: "g", MemberID: member, InstanceID: "i1", Generation: 1,
		Offsets: []metadata.OffsetCommit{{Topic: "t", Partition: 0, Offset: 1, LeaderEpoch: -1}}})
	await(t, ctrl.entered)
	c.Close()
	if err := await(t, done); !errors.Is(err, kerr.NotCoordinator) {
		t.Fatalf("commit cut short by Close: %v, want NOT_COORDINATOR", err)
	}
}

// A commit that brings its own writer (TxnOffsetCommit's) is written on
// the group's loop right after its member check: a fencing step queued
// meanwhile waits for the write, the writer's outcome is the answer, and
// a fenced member's writer never runs.
func TestCommitWithOwnWriter(t *testing.T) {
	const session = 10 * time.Second
	c, _, _, member := stableStaticGroup(t, session)
	entered, release := make(chan struct{}, 1), make(chan struct{})
	var calls atomic.Int32
	write := func(context.Context) error {
		calls.Add(1)
		entered <- struct{}{}
		<-release
		return kerr.ProducerFenced
	}
	first := commitAsync(c, CommitRequest{Group: "g", MemberID: member, InstanceID: "i1", Generation: 1, Write: write})
	await(t, entered)
	left := make(chan error, 1)
	go func() {
		_, err := c.Leave(context.Background(), "g", []LeaveMember{{MemberID: member, InstanceID: "i1"}})
		left <- err
	}()
	waitQueued(t, c, 1)
	select {
	case <-left:
		t.Fatal("the member left while its checked commit was being written")
	default:
	}
	close(release)
	if err := await(t, first); !errors.Is(err, kerr.ProducerFenced) {
		t.Fatalf("the writer's answer: %v", err)
	}
	if err := await(t, left); err != nil {
		t.Fatal(err)
	}
	second := commitAsync(c, CommitRequest{Group: "g", MemberID: member, InstanceID: "i1", Generation: 1, Write: write})
	if err := await(t, second); !errors.Is(err, kerr.UnknownMemberID) {
		t.Fatalf("the fenced member's commit: %v", err)
	}
	if n := calls.Load(); n != 1 {
		t.Fatalf("the writer ran %d times, want once", n)
	}
}
