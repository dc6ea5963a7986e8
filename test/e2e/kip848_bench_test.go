package e2e

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/raftka/raftka/test/cluster"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// owners tracks which in-process member owns which partition, from the
// members' callbacks.
type owners struct {
	mu  sync.Mutex
	own map[string]map[int32]bool // member -> partitions
}

func (o *owners) set(member string, ps []int32, add bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	m := o.own[member]
	if m == nil {
		m = map[int32]bool{}
		o.own[member] = m
	}
	for _, p := range ps {
		if add {
			m[p] = true
		} else {
			delete(m, p)
		}
	}
}

func (o *owners) drop(member string) {
	o.mu.Lock()
	delete(o.own, member)
	o.mu.Unlock()
}

// settled reports whether the live members own all parts partitions, each
// once, and each live member at least one (when there are enough).
func (o *owners) settled(live []string, parts int) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	seen := map[int32]bool{}
	for _, m := range live {
		if len(o.own[m]) == 0 && len(live) <= parts {
			return false
		}
		for p := range o.own[m] {
			if seen[p] {
				return false
			}
			seen[p] = true
		}
	}
	return len(seen) == parts
}

// BenchmarkRebalance measures, on a real one-node cluster, the time from a
// change (the group starting, one member joining, one leaving) until every
// partition is owned again, for the classic protocol (franz-go's
// cooperative-sticky) and KIP-848 (kgo.ServerSideBalancer) in the same
// run, with 10 and 100 members. Figures: ms per change, the mean and the
// largest over the iterations (-benchtime Nx).
//
// Under either protocol the other members learn of a change on their next
// heartbeat, so the figure depends on where in their heartbeat cycle the
// change falls. Made right after the previous change settled, it falls at
// one fixed point of the cycle: classic members then have just started a
// session, and franz-go heartbeats a cooperative member 500 ms into one
// (its "fast check"), while the KIP-848 member given the leaver's
// partitions is the joiner, which has just heartbeated. So each change is
// made after a random pause of up to quietMax (longer than both protocols'
// heartbeat intervals here: franz-go's classic default of 3 s, and
// group.consumer.heartbeat.interval.ms=1000), which measures the mean
// over the cycle rather than one point of it.
func BenchmarkRebalance(b *testing.B) {
	c := cluster.Start(b, cluster.Nodes(1), cluster.Override("group.initial.rebalance.delay.ms", "0"),
		cluster.Override("group.consumer.heartbeat.interval.ms", "1000"), cluster.Override("group.consumer.min.heartbeat.interval.ms", "1000"))
	ctx := ctxFor(b, 20*time.Minute)
	adm := kadm.NewClient(client(b, c))
	seeds := strings.Split(c.Bootstrap(), ",")
	for _, n := range []int{10, 100} {
		parts := 2 * n
		topic := fmt.Sprintf("rebalance-%d", n)
		if err := createTopic(ctx, adm, topic, int32(parts), 1); err != nil {
			b.Fatal(err)
		}
		for _, proto := range []string{"classic", "consumer"} {
			b.Run(fmt.Sprintf("members=%d/protocol=%s", n, proto), func(b *testing.B) {
				stats := rebalanceStats{}
				for range b.N {
					group := fmt.Sprintf("rb-%d-%s-%d", n, proto, time.Now().UnixNano())
					o := &owners{own: map[string]map[int32]bool{}}
					clients := map[string]*kgo.Client{}
					start := func(name string) {
						opts := []kgo.Opt{kgo.SeedBrokers(seeds...), kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic),
							kgo.OnPartitionsAssigned(func(_ context.Context, _ *kgo.Client, m map[string][]int32) { o.set(name, m[topic], true) }),
							kgo.OnPartitionsRevoked(func(_ context.Context, _ *kgo.Client, m map[string][]int32) { o.set(name, m[topic], false) }),
							kgo.OnPartitionsLost(func(_ context.Context, _ *kgo.Client, m map[string][]int32) { o.set(name, m[topic], false) })}
						if proto == "consumer" {
							opts = append(opts, kgo.ServerSideBalancer())
						}
						cl, err := kgo.NewClient(opts...)
						if err != nil {
							b.Fatal(err)
						}
						clients[name] = cl
						go func() {
							for {
								if fs := cl.PollFetches(ctx); fs.IsClientClosed() || ctx.Err() != nil {
									return
								}
							}
						}()
					}
					live := func() []string {
						var out []string
						for n := range clients {
							out = append(out, n)
						}
						return out
					}
					wait := func(what string) time.Duration {
						t0 := time.Now()
						for !o.settled(live(), parts) {
							if time.Since(t0) > 3*time.Minute {
								b.Fatalf("%s: not settled after 3 minutes", what)
							}
							time.Sleep(10 * time.Millisecond)
						}
						return time.Since(t0)
					}
					t0 := time.Now()
					for i := range n {
						start(fmt.Sprintf("m%03d", i))
					}
					wait("start")
					startD := time.Since(t0)
					pauseJoin := rand.N(quietMax)
					time.Sleep(pauseJoin)
					start("joiner")
					joinD := wait("join")
					pauseLeave := rand.N(quietMax)
					time.Sleep(pauseLeave)
					clients["m000"].Close()
					delete(clients, "m000")
					o.drop("m000")
					leaveD := wait("leave")
					stats.add("start", startD)
					stats.add("join", joinD)
					stats.add("leave", leaveD)
					b.Logf("start %v; join %v after a pause of %v; leave %v after a pause of %v", startD.Round(time.Millisecond),
						joinD.Round(time.Millisecond), pauseJoin.Round(time.Millisecond), leaveD.Round(time.Millisecond), pauseLeave.Round(time.Millisecond))
					for _, cl := range clients {
						cl.Close()
					}
				}
				stats.report(b)
			})
		}
	}
}

// quietMax bounds the random pause before each change (see
// BenchmarkRebalance).
const quietMax = 3500 * time.Millisecond

// rebalanceStats collects one benchmark's durations per kind of change.
type rebalanceStats map[string][]time.Duration

func (s rebalanceStats) add(kind string, d time.Duration) { s[kind] = append(s[kind], d) }

func (s rebalanceStats) report(b *testing.B) {
	for kind, ds := range s {
		var sum time.Duration
		for _, d := range ds {
			sum += d
		}
		b.ReportMetric(float64((sum / time.Duration(len(ds))).Milliseconds()), kind+"-ms")
		b.ReportMetric(float64(slices.Max(ds).Milliseconds()), kind+"-max-ms")
	}
}
