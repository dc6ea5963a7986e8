package replica

import (
	"slices"
	"testing"
	"time"

	"github.com/raftka/raftka/storage"
	"github.com/twmb/franz-go/pkg/kerr"
)

var t0 = time.Unix(1_700_000_000, 0)

func TestHighWatermarkFromFollowerLEOs(t *testing.T) {
	tests := []struct {
		name      string
		isr       []int32
		pending   []int32 // ISR of a change in flight, nil for none
		leos      map[int32]int64
		leaderLEO int64
		want      int64
	}{
		{"rf1", []int32{1}, nil, nil, 10, 10},
		{"all caught up", []int32{1, 2, 3}, nil, map[int32]int64{2: 10, 3: 10}, 10, 10},
		{"slowest ISR member", []int32{1, 2, 3}, nil, map[int32]int64{2: 7, 3: 9}, 10, 7},
		{"not fetched yet holds it", []int32{1, 2, 3}, nil, map[int32]int64{2: 10}, 10, -1},
		{"outside the ISR does not count", []int32{1, 2}, nil, map[int32]int64{2: 10, 3: 0}, 10, 10},
		{"pending expansion counts the joiner", []int32{1, 2}, []int32{1, 2, 3}, map[int32]int64{2: 10, 3: 8}, 10, 8},
		{"pending shrink still counts the leaver", []int32{1, 2, 3}, []int32{1, 2}, map[int32]int64{2: 10, 3: 4}, 10, 4},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newLeaderCore(1, []int32{1, 2, 3}, tt.isr, 0, 0, t0)
			for id, leo := range tt.leos {
				if ok, _ := c.followerFetch(id, leo, 0, tt.leaderLEO, t0); !ok {
					t.Fatalf("fetch from %d refused", id)
				}
			}
			if tt.pending != nil {
				c.begin(1, tt.pending)
			}
			if got := c.highWatermark(tt.leaderLEO); got != tt.want {
				t.Fatalf("HW %d, want %d", got, tt.want)
			}
		})
	}
}

func TestFollowerFetchFromNonReplica(t *testing.T) {
	c := newLeaderCore(1, []int32{1, 2}, []int32{1, 2}, 0, 0, t0)
	if ok, _ := c.followerFetch(9, 0, 0, 0, t0); ok {
		t.Fatal("a non-replica's fetch was recorded")
	}
	if ok, _ := c.followerFetch(1, 0, 0, 0, t0); ok {
		t.Fatal("the leader's own id was recorded as a follower")
	}
}

func TestISRShrinkDecision(t *testing.T) {
	lag := 10 * time.Second
	type fetch struct {
		id        int32
		offset    int64
		leaderLEO int64
		at        time.Duration
	}
	tests := []struct {
		name      string
		fetches   []fetch
		leaderLEO int64
		now       time.Duration
		want      []int32
	}{
		{"new leader gives ISR members a full lag", nil, 5, 9 * time.Second, nil},
		{"never fetched for longer than the lag", nil, 5, 11 * time.Second, []int32{1}},
		{"at the leader's LEO is in sync however long ago",
			[]fetch{{2, 5, 5, 0}, {3, 5, 5, 0}}, 5, time.Hour, nil},
		{"behind but caught up recently",
			[]fetch{{2, 5, 5, 5 * time.Second}, {3, 8, 8, 5 * time.Second}}, 8, 14 * time.Second, nil},
		{"behind since its last catch-up longer than the lag",
			[]fetch{{2, 5, 5, 5 * time.Second}, {3, 8, 8, 5 * time.Second}}, 8, 16 * time.Second, []int32{1, 3}},
		{"reaching the LEO of its previous fetch proves it caught up then",
			[]fetch{{2, 3, 5, 20 * time.Second}, {2, 5, 9, 25 * time.Second}, {3, 9, 9, 25 * time.Second}}, 9, 29 * time.Second, nil},
		{"but not later than the lag after that",
			[]fetch{{2, 3, 5, 20 * time.Second}, {2, 5, 9, 25 * time.Second}, {3, 9, 9, 25 * time.Second}}, 9, 31 * time.Second, []int32{1, 3}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newLeaderCore(1, []int32{1, 2, 3}, []int32{1, 2, 3}, 0, 0, t0)
			for _, f := range tt.fetches {
				c.followerFetch(f.id, f.offset, 0, f.leaderLEO, t0.Add(f.at))
			}
			got := c.shrinkISR(tt.leaderLEO, t0.Add(tt.now), lag)
			if !slices.Equal(got, tt.want) {
				t.Fatalf("shrink to %v, want %v", got, tt.want)
			}
		})
	}
}

func TestISRExpandDecision(t *testing.T) {
	tests := []struct {
		name       string
		leo        int64
		hw         int64
		epochStart int64
		eligible   bool
		pending    bool
		want       []int32
	}{
		{"caught up to HW and epoch start", 10, 10, 4, true, false, []int32{1, 2, 3}},
		{"below the HW", 9, 10, 4, true, false, nil},
		{"below the epoch start", 3, 2, 4, true, false, nil},
		{"fenced or shutting down", 10, 10, 4, false, false, nil},
		{"a change is already in flight", 10, 10, 4, true, true, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newLeaderCore(1, []int32{1, 2, 3}, []int32{1, 2}, 0, tt.epochStart, t0)
			c.followerFetch(3, tt.leo, 0, tt.leo, t0)
			if tt.pending {
				c.begin(7, []int32{1})
			}
			if got := c.expandISR(3, tt.hw, t0, tt.eligible); !slices.Equal(got, tt.want) {
				t.Fatalf("expand to %v, want %v", got, tt.want)
			}
			if got := c.expandISR(2, tt.hw, t0, true); got != nil {
				t.Fatalf("an ISR member was added again: %v", got)
			}
		})
	}
}

func TestISRChangeLifecycle(t *testing.T) {
	backoff := time.Second
	tests := []struct {
		name        string
		code        int16
		answerEpoch int32
		imageEpoch  int32 // 0: no image arrives
		wantPending bool
		wantRetryAt time.Time
	}{
		{"accepted, waiting for the image", 0, 1, 0, true, time.Time{}},
		{"accepted, image applied", 0, 1, 1, false, time.Time{}},
		{"stale partition epoch waits for the image", kerr.InvalidUpdateVersion.Code, -1, 0, true, time.Time{}},
		{"fenced, then the image", kerr.FencedLeaderEpoch.Code, -1, 2, false, time.Time{}},
		{"not the leader (INVALID_REQUEST) waits for the image", kerr.InvalidRequest.Code, -1, 0, true, time.Time{}},
		{"not the leader, then the image", kerr.InvalidRequest.Code, -1, 2, false, time.Time{}},
		{"ineligible replica retries after the backoff", kerr.IneligibleReplica.Code, -1, 0, false, t0.Add(backoff)},
		{"transport failure retries after the backoff", kerr.RequestTimedOut.Code, -1, 0, false, t0.Add(backoff)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newLeaderCore(1, []int32{1, 2, 3}, []int32{1, 2, 3}, 0, 0, t0)
			ch := c.begin(5, []int32{1, 2})
			c.answer(ch.seq+1, kerr.InvalidRequest.Code, -1, t0, backoff) // an older answer
			if c.pending == nil {
				t.Fatal("an answer for another change settled this one")
			}
			c.answer(ch.seq, tt.code, tt.answerEpoch, t0, backoff)
			if tt.imageEpoch > 0 {
				c.applyImage([]int32{1, 2, 3}, []int32{1, 2}, tt.imageEpoch, t0)
			}
			if (c.pending != nil) != tt.wantPending {
				t.Fatalf("pending %v, want %v", c.pending != nil, tt.wantPending)
			}
			if !c.retryAt.Equal(tt.wantRetryAt) {
				t.Fatalf("retry at %v, want %v", c.retryAt, tt.wantRetryAt)
			}
			if !tt.wantPending && tt.wantRetryAt.IsZero() != c.canChange(t0) {
				t.Fatalf("canChange %v", c.canChange(t0))
			}
		})
	}
}

func TestImageBeforeAnswer(t *testing.T) {
	c := newLeaderCore(1, []int32{1, 2, 3}, []int32{1, 2, 3}, 3, 0, t0)
	ch := c.begin(1, []int32{1, 2})
	c.applyImage([]int32{1, 2, 3}, []int32{1, 2}, 4, t0)
	if c.pending != nil {
		t.Fatal("the image did not settle the change")
	}
	c.answer(ch.seq, 0, 4, t0, time.Second)
	if c.pending != nil || !c.canChange(t0) {
		t.Fatal("a late answer revived a settled change")
	}
	if !slices.Equal(c.isr, []int32{1, 2}) || c.partitionEpoch != 4 {
		t.Fatalf("isr %v epoch %d", c.isr, c.partitionEpoch)
	}
}

func TestTruncationTarget(t *testing.T) {
	// The follower's epochs: 0 at 0, 2 at 10, 5 at 20; LEO 30.
	local := func(e int32) (int32, int64) {
		switch {
		case e >= 5:
			return 5, 30
		case e >= 2:
			return 2, 20
		case e >= 0:
			return 0, 10
		default:
			return storage.UndefinedEpoch, storage.UndefinedOffset
		}
	}
	tests := []struct {
		name         string
		leaderEpoch  int32
		leaderEnd    int64
		want         int64
		wantComplete bool
		wantOK       bool
	}{
		{"same epoch, leader ends earlier", 5, 25, 25, true, true},
		{"same epoch, leader ends later", 5, 40, 30, true, true},
		{"leader lacks our latest epoch, has the one before", 2, 15, 15, true, true},
		{"leader's epoch unknown here: cut at our older epoch's end", 4, 22, 20, false, true},
		{"leader knows nothing of it", storage.UndefinedEpoch, storage.UndefinedOffset, 0, false, false},
		{"no local epoch at or below the leader's", -1, 3, 0, false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			off, complete, ok := truncationTarget(tt.leaderEpoch, tt.leaderEnd, local, 30)
			if ok != tt.wantOK || ok && (off != tt.want || complete != tt.wantComplete) {
				t.Fatalf("got (%d, %v, %v), want (%d, %v, %v)", off, complete, ok, tt.want, tt.wantComplete, tt.wantOK)
			}
		})
	}
	emptyLocal := func(int32) (int32, int64) { return storage.UndefinedEpoch, storage.UndefinedOffset }
	if off, complete, ok := truncationTarget(3, 12, emptyLocal, 30); !ok || !complete || off != 12 {
		t.Fatalf("follower without epochs: (%d, %v, %v), want (12, true, true)", off, complete, ok)
	}
}

// The low watermark is the smallest log start offset over the leader and
// the replicas on live brokers, in or out of the ISR (Kafka's
// lowWatermarkIfLeader); a live replica that has not fetched yet holds it
// at -1.
func TestLowWatermark(t *testing.T) {
	tests := []struct {
		name        string
		isr         []int32
		starts      map[int32]int64 // follower log starts reported in fetches
		dead        []int32
		leaderStart int64
		want        int64
	}{
		{"all reported, leader lowest", []int32{1, 2, 3}, map[int32]int64{2: 7, 3: 9}, nil, 5, 5},
		{"a follower behind", []int32{1, 2, 3}, map[int32]int64{2: 3, 3: 9}, nil, 5, 3},
		{"a follower that has not fetched", []int32{1, 2, 3}, map[int32]int64{2: 5}, nil, 5, -1},
		{"out of the ISR still counts", []int32{1, 2}, map[int32]int64{2: 5, 3: 1}, nil, 5, 1},
		{"a dead broker does not count", []int32{1, 2, 3}, map[int32]int64{2: 5, 3: 1}, []int32{3}, 5, 5},
		{"a dead broker that never fetched", []int32{1, 2, 3}, map[int32]int64{2: 6}, []int32{3}, 5, 5},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newLeaderCore(1, []int32{1, 2, 3}, tt.isr, 0, 0, t0)
			for id, start := range tt.starts {
				if ok, moved := c.followerFetch(id, 10, start, 10, t0); !ok || !moved {
					t.Fatalf("fetch from %d: recorded %v, start moved %v", id, ok, moved)
				}
				if _, moved := c.followerFetch(id, 10, start, 10, t0); moved {
					t.Fatalf("the same start from %d reported as a move", id)
				}
			}
			alive := func(id int32) bool { return !slices.Contains(tt.dead, id) }
			if got := c.lowWatermark(tt.leaderStart, alive); got != tt.want {
				t.Fatalf("low watermark %d, want %d", got, tt.want)
			}
		})
	}
}
