package e2e

import (
	"context"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/raftka/raftka/test/cluster"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"
)

// saramaMemberEnv makes the test binary a classic-protocol member
// (sarama's consumer group, eager range): "bootstrap,topic,group,name".
const saramaMemberEnv = "RAFTKA_E2E_SARAMA_MEMBER"

// saramaHandler prints what the member owns (Setup: assign, Cleanup:
// revoke) and processes: each batch is printed, marked and committed
// synchronously before the next, so a rebalance (which ends the session
// only after ConsumeClaim returns) never leaves a processed batch
// uncommitted.
type saramaHandler struct {
	topic string
	emit  func(memberEvent)
}

func (h saramaHandler) Setup(s sarama.ConsumerGroupSession) error {
	ps := slices.Clone(s.Claims()[h.topic])
	slices.Sort(ps)
	if len(ps) > 0 {
		h.emit(memberEvent{Ev: "assign", Partitions: ps})
	}
	return nil
}

func (h saramaHandler) Cleanup(s sarama.ConsumerGroupSession) error {
	ps := slices.Clone(s.Claims()[h.topic])
	slices.Sort(ps)
	if len(ps) > 0 {
		h.emit(memberEvent{Ev: "revoke", Partitions: ps})
	}
	return nil
}

func (h saramaHandler) ConsumeClaim(s sarama.ConsumerGroupSession, c sarama.ConsumerGroupClaim) error {
	for {
		m, ok := <-c.Messages()
		if !ok {
			return nil
		}
		start := time.Now().UnixNano()
		first, last := m.Offset, m.Offset
		// Whatever else is already here joins the batch.
	drain:
		for range 500 {
			select {
			case n, ok := <-c.Messages():
				if !ok {
					break drain
				}
				last = n.Offset
				m = n
			default:
				break drain
			}
		}
		h.emit(memberEvent{Ev: "batch", Partition: c.Partition(), First: first, Last: last, T: start, T2: time.Now().UnixNano()})
		s.MarkMessage(m, "")
		s.Commit()
	}
}

// runSaramaMember consumes with sarama's classic consumer group until its
// stdin closes, then leaves the group (LeaveGroup) and exits.
func runSaramaMember() int {
	args := strings.Split(os.Getenv(saramaMemberEnv), ",")
	if len(args) != 4 {
		fmt.Fprintln(os.Stderr, "bad", saramaMemberEnv)
		return 2
	}
	bootstrap, topic, group, name := args[0], args[1], args[2], args[3]
	emit := memberEmitter(name)
	cfg := saramaConfig(sarama.V4_0_0_0)
	cfg.ClientID = name
	cfg.Consumer.Offsets.Initial = sarama.OffsetOldest
	cfg.Consumer.Offsets.AutoCommit.Enable = false
	cfg.Consumer.Group.Session.Timeout = 10 * time.Second
	cfg.Consumer.Group.Heartbeat.Interval = 500 * time.Millisecond
	cfg.Consumer.Group.Rebalance.Timeout = 30 * time.Second
	cfg.Consumer.Group.Rebalance.GroupStrategies = []sarama.BalanceStrategy{sarama.NewBalanceStrategyRange()}
	if os.Getenv("KIP848_DUMP") != "" {
		sarama.Logger = log848{name}
	}
	cg, err := sarama.NewConsumerGroup(strings.Split(bootstrap, ";"), group, cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	go func() {
		for err := range cg.Errors() {
			emit(memberEvent{Ev: "error", Err: err.Error()})
		}
	}()
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		_, _ = io.Copy(io.Discard, os.Stdin)
		cancel()
	}()
	h := saramaHandler{topic: topic, emit: emit}
	for ctx.Err() == nil {
		if err := cg.Consume(ctx, []string{topic}, h); err != nil && ctx.Err() == nil {
			emit(memberEvent{Ev: "error", Err: err.Error()})
			time.Sleep(200 * time.Millisecond)
		}
	}
	_ = cg.Close() // LeaveGroup
	emit(memberEvent{Ev: "closed"})
	return 0
}

type log848 struct{ name string }

func (l log848) Print(v ...any) { fmt.Fprint(os.Stderr, append([]any{"[" + l.name + "] "}, v...)...) }
func (l log848) Printf(f string, v ...any) {
	fmt.Fprintf(os.Stderr, "["+l.name+"] "+f, v...)
}
func (l log848) Println(v ...any) {
	fmt.Fprintln(os.Stderr, append([]any{"[" + l.name + "]"}, v...)...)
}

// TestKIP848RollingClientUpgrade is KIP-848's online upgrade: a classic
// group of three sarama members is replaced one member at a time by
// franz-go consumer-protocol members (ServerSideBalancer) while a producer
// writes. The first franz-go member turns the classic group with members
// into a consumer group; the remaining sarama members get their
// partitions from the server-side assignor through SyncGroup until the
// last one leaves. Then the way back: sarama members replace the franz-go
// ones, and when the last consumer-protocol member leaves the group is a
// classic group again. No partition is ever owned or processed by two
// members at once, nothing is skipped, and the commits end at the logs'
// ends.
func TestKIP848RollingClientUpgrade(t *testing.T) {
	t.Parallel() // see "Parallel tests" in main_test.go
	testRollingUpgrade(t, "sarama", func(t *testing.T, bootstrap, topic, group, name string) *member848 {
		return startMemberProcess(t, saramaMemberEnv, bootstrap, topic, group, name)
	})
}

// TestKIP848RollingUpgradeCooperative is the same with franz-go's classic
// cooperative-sticky members: they rejoin still owning their partitions
// (the Subscription's owned partitions), so the coordinator asks them to
// revoke through the SyncGroup assignment before it moves anything.
func TestKIP848RollingUpgradeCooperative(t *testing.T) {
	t.Parallel() // see "Parallel tests" in main_test.go
	testRollingUpgrade(t, "cooperative", func(t *testing.T, bootstrap, topic, group, name string) *member848 {
		return startMemberProcess(t, kip848MemberEnv, bootstrap, topic, group, name+",classic")
	})
}

func testRollingUpgrade(t *testing.T, kind string, startClassic func(t *testing.T, bootstrap, topic, group, name string) *member848) {
	topic, group := "kip848-upgrade-"+kind, "kip848-upgrade-group-"+kind
	const parts = 6
	r := start848Run(t, topic, parts, 9000, 25*time.Millisecond, "10000", cluster.Override("group.initial.rebalance.delay.ms", "0"))
	ctx, cl, adm, bootstrap := r.ctx, r.cl, r.adm, r.bootstrap
	classic := []*member848{}
	for _, n := range []string{"s1", "s2", "s3"} {
		classic = append(classic, startClassic(t, bootstrap, topic, group, n))
	}
	all := slices.Clone(classic)
	waitOwners(t, "three "+kind+" members", parts, classic...)
	if d := describe848(ctx, t, cl, group); d.ErrorCode == 0 {
		t.Fatalf("a classic group answered ConsumerGroupDescribe: %+v", d)
	}

	var modern []*member848
	for i, s := range classic {
		s.leave(t)
		f := startMember848(t, bootstrap, topic, group, fmt.Sprintf("f%d", i+1))
		modern = append(modern, f)
		all = append(all, f)
		live := append(slices.Clone(classic[i+1:]), modern...)
		waitOwners(t, fmt.Sprintf("%s replaced by %s", s.name, f.name), parts, live...)
		d := describe848(ctx, t, cl, group)
		if d.ErrorCode != 0 || len(d.Members) != len(live) {
			t.Fatalf("ConsumerGroupDescribe after %s joined: error %d, %d members", f.name, d.ErrorCode, len(d.Members))
		}
		types := map[int8]int{}
		for _, m := range d.Members {
			types[m.MemberType]++
		}
		if types[0] != len(classic)-i-1 || types[1] != i+1 {
			t.Fatalf("after %s joined: %d classic and %d consumer members, want %d and %d", f.name, types[0], types[1], len(classic)-i-1, i+1)
		}
		t.Logf("after %s joined: group %s at epoch %d, %d classic and %d consumer-protocol members", f.name, d.State, d.Epoch, types[0], types[1])
		if i == 0 {
			checkMixedGroupDescribed(ctx, t, cl, group)
		}
	}

	// And back: sarama members replace the franz-go ones; when the last
	// consumer-protocol member leaves, the group is a classic group again
	// (group.consumer.migration.policy is bidirectional by default).
	var back []*member848
	for i, f := range modern {
		s := startClassic(t, bootstrap, topic, group, fmt.Sprintf("s%d", i+4))
		back = append(back, s)
		all = append(all, s)
		live := append(slices.Clone(modern[i:]), back...)
		waitOwners(t, fmt.Sprintf("%s joins beside %d consumer-protocol members", s.name, len(modern)-i), parts, live...)
		f.leave(t)
		live = live[1:]
		waitOwners(t, fmt.Sprintf("%s leaves", f.name), parts, live...)
	}
	if d := describe848(ctx, t, cl, group); d.ErrorCode == 0 {
		t.Fatalf("after the downgrade the group answered ConsumerGroupDescribe: %d members", len(d.Members))
	}
	dg, err := adm.DescribeGroups(ctx, group)
	if g, ok := dg[group]; err != nil || !ok || g.Err != nil || len(g.Members) != len(back) || g.ProtocolType != "consumer" {
		t.Fatalf("DescribeGroups after the downgrade: %+v %v", dg, err)
	}
	t.Logf("after the downgrade: classic group %s, %d members", dg[group].State, len(dg[group].Members))

	ends := r.waitCommitted(t, group)
	for _, m := range back {
		m.leave(t)
	}
	checkOwnership(t, all, ends)
}

// checkMixedGroupDescribed checks how a consumer group with classic members
// (sarama or franz-go classic beside franz-go consumer-protocol members) is
// described, as on Kafka 4.1: ConsumerGroupDescribe shows every member, the
// classic ones with MemberType 0, and all the partitions (the classic
// members' assignments included) once reconciled; DescribeGroups
// describes classic groups only, so the group is Dead, with
// GROUP_ID_NOT_FOUND and Kafka's text from v6 and no error below.
func checkMixedGroupDescribed(ctx context.Context, t *testing.T, cl *kgo.Client, group string) {
	t.Helper()
	cluster.WaitFor(t, 30*time.Second, func() (bool, string) {
		d := describe848(ctx, t, cl, group)
		owned := map[string]int{}
		for _, m := range d.Members {
			for _, tp := range m.Assignment.TopicPartitions {
				owned[fmt.Sprintf("type %d", m.MemberType)] += len(tp.Partitions)
			}
		}
		return d.State == "Stable" && owned["type 0"] > 0 && owned["type 1"] > 0, fmt.Sprintf("%s, partitions by member type %v", d.State, owned)
	})
	for _, v := range []int16{5, 6} {
		// kgo sends the highest version both sides know, up to MaxVersions.
		versions := kversion.Stable()
		versions.SetMaxKeyVersion(15, v)
		vcl, err := kgo.NewClient(kgo.SeedBrokers(cl.OptValue(kgo.SeedBrokers).([]string)...), kgo.MaxVersions(versions))
		if err != nil {
			t.Fatal(err)
		}
		req := kmsg.NewPtrDescribeGroupsRequest()
		req.Groups = []string{group}
		resp, err := req.RequestWith(ctx, vcl)
		vcl.Close()
		if err != nil || len(resp.Groups) != 1 {
			t.Fatalf("DescribeGroups v%d: %v %+v", v, err, resp)
		}
		g := resp.Groups[0]
		wantCode, wantMsg := int16(0), ""
		if v >= 6 {
			wantCode, wantMsg = kerr.GroupIDNotFound.Code, "Group "+group+" is not a classic group."
		}
		if g.ErrorCode != wantCode || g.State != "Dead" || len(g.Members) != 0 || (wantMsg != "" && (g.ErrorMessage == nil || *g.ErrorMessage != wantMsg)) {
			t.Fatalf("DescribeGroups v%d of the consumer group with classic members: %+v", v, g)
		}
	}
}
