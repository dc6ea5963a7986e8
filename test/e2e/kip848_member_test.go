package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// kip848MemberEnv makes the test binary a consumer-protocol member: its
// value is "bootstrap,topic,group,name", with ",classic" appended for a
// franz-go member on the classic protocol (cooperative-sticky) instead.
const kip848MemberEnv = "RAFTKA_E2E_KIP848_MEMBER"

// memberEvent is one line a member process prints: an assignment change,
// a processed batch (T..T2 spans its processing and commit), a commit
// error, or its end.
type memberEvent struct {
	Ev         string  `json:"ev"`
	Member     string  `json:"member"`
	Partitions []int32 `json:"ps,omitempty"`
	Partition  int32   `json:"p"`
	First      int64   `json:"first"`
	Last       int64   `json:"last"`
	T          int64   `json:"t"`
	T2         int64   `json:"t2,omitempty"`
	Err        string  `json:"err,omitempty"`
}

// runKIP848Member consumes with franz-go's KIP-848 consumer
// (ServerSideBalancer), processes each fetched batch, commits it
// synchronously and only then lets a rebalance run (BlockRebalanceOnPoll),
// so what it prints is exactly what it owned and processed. It ends when
// its stdin closes (leaving the group) or it is killed.
func runKIP848Member() int {
	args := strings.Split(os.Getenv(kip848MemberEnv), ",")
	if len(args) != 4 && (len(args) != 5 || args[4] != "classic") {
		fmt.Fprintln(os.Stderr, "bad", kip848MemberEnv)
		return 2
	}
	bootstrap, topic, group, name := args[0], args[1], args[2], args[3]
	balancer := kgo.ServerSideBalancer()
	if len(args) == 5 {
		balancer = kgo.Balancers(kgo.CooperativeStickyBalancer())
	}
	emit := memberEmitter(name)
	parts := func(m map[string][]int32) []int32 {
		ps := append([]int32(nil), m[topic]...)
		sort.Slice(ps, func(i, j int) bool { return ps[i] < ps[j] })
		return ps
	}
	opts := []kgo.Opt{}
	if os.Getenv("KIP848_DUMP") != "" {
		opts = append(opts, kgo.WithLogger(kgo.BasicLogger(os.Stderr, kgo.LogLevelInfo, func() string {
			return fmt.Sprintf("[%s %d] ", name, time.Now().UnixNano())
		})))
	}
	cl, err := kgo.NewClient(append(opts,
		kgo.SeedBrokers(strings.Split(bootstrap, ";")...),
		kgo.ClientID(name),
		kgo.ConsumerGroup(group),
		kgo.ConsumeTopics(topic),
		balancer,
		kgo.DisableAutoCommit(),
		kgo.BlockRebalanceOnPoll(),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchMaxWait(300*time.Millisecond),
		kgo.OnPartitionsAssigned(func(_ context.Context, _ *kgo.Client, m map[string][]int32) {
			if ps := parts(m); len(ps) > 0 {
				emit(memberEvent{Ev: "assign", Partitions: ps})
			}
		}),
		kgo.OnPartitionsRevoked(func(_ context.Context, _ *kgo.Client, m map[string][]int32) {
			if ps := parts(m); len(ps) > 0 {
				emit(memberEvent{Ev: "revoke", Partitions: ps})
			}
		}),
		kgo.OnPartitionsLost(func(_ context.Context, _ *kgo.Client, m map[string][]int32) {
			if ps := parts(m); len(ps) > 0 {
				emit(memberEvent{Ev: "lost", Partitions: ps})
			}
		}),
	)...)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		_, _ = io.Copy(io.Discard, os.Stdin)
		cancel()
	}()
	for ctx.Err() == nil {
		fs := cl.PollFetches(ctx)
		start := time.Now().UnixNano()
		type span struct{ first, last int64 }
		spans := map[int32]*span{}
		var recs []*kgo.Record
		fs.EachRecord(func(r *kgo.Record) {
			recs = append(recs, r)
			if s := spans[r.Partition]; s == nil {
				spans[r.Partition] = &span{r.Offset, r.Offset}
			} else {
				s.last = r.Offset
			}
		})
		if len(recs) > 0 {
			// Processing is printing: a member killed before its commit
			// has still processed what it printed.
			for p, s := range spans {
				emit(memberEvent{Ev: "batch", Partition: p, First: s.first, Last: s.last, T: start, T2: time.Now().UnixNano()})
			}
			cctx, ccancel := context.WithTimeout(context.Background(), 20*time.Second)
			err := cl.CommitRecords(cctx, recs...)
			ccancel()
			if err != nil {
				emit(memberEvent{Ev: "commit_error", Err: err.Error()})
			}
		}
		cl.AllowRebalance()
	}
	cl.Close() // leaves the group (epoch -1)
	emit(memberEvent{Ev: "closed"})
	return 0
}

// memberEmitter returns what a member process prints its events with: one
// JSON line each on stdout, stamped with the member's name and, unless
// set, the time; safe for the client's callbacks and the consuming loop.
func memberEmitter(name string) func(memberEvent) {
	var mu sync.Mutex
	enc := json.NewEncoder(os.Stdout)
	return func(e memberEvent) {
		e.Member = name
		if e.T == 0 {
			e.T = time.Now().UnixNano()
		}
		mu.Lock()
		_ = enc.Encode(e)
		mu.Unlock()
	}
}
