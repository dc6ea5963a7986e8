package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/raftka/raftka/test/cluster"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestGroupsCLIConsumerProtocol: `raftka groups` lists and describes a
// KIP-848 group as kafka-consumer-groups.sh does (TYPE consumer, the
// group epochs, the members with their assignments, the lag), beside a
// classic group, and ListGroups' type filter keeps them apart.
func TestGroupsCLIConsumerProtocol(t *testing.T) {
	t.Parallel() // see "Parallel tests" in main_test.go
	const topic = "cli-848"
	c := cluster.Start(t, cluster.Nodes(1))
	ctx := ctxFor(t, 2*time.Minute)
	adm := kadm.NewClient(client(t, c))
	seedTopic(ctx, t, c, adm, topic, 3, 1, 30)
	seeds := strings.Split(c.Bootstrap(), ",")
	// A classic group with committed offsets and no members.
	if _, err := adm.CommitOffsets(ctx, "classic-g", kadm.OffsetsFromRecords(kgo.Record{Topic: topic, Partition: 0, Offset: 0})); err != nil {
		t.Fatal(err)
	}
	consumer, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.ConsumerGroup("modern-g"), kgo.ConsumeTopics(topic),
		kgo.ServerSideBalancer(), kgo.ClientID("modern-member"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer consumer.Close()
	got := 0
	for got < 30 && ctx.Err() == nil {
		fs := consumer.PollFetches(ctx)
		got += fs.NumRecords()
	}
	cctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	if err := consumer.CommitUncommittedOffsets(cctx); err != nil {
		t.Fatal(err)
	}

	run := func(args ...string) string {
		t.Helper()
		out, err := cluster.Run(t, append([]string{"--log-level", "error", "groups"}, append(args, "--bootstrap-server", c.Bootstrap())...)...)
		if err != nil {
			t.Fatalf("groups %v: %v\n%s", args, err, out)
		}
		return out
	}
	list := run("list", "--type", "", "--state", "")
	t.Logf("raftka groups list --type '' --state '':\n%s", list)
	if !hasLine(list, "modern-g", "consumer", "Stable") || !hasLine(list, "classic-g", "classic", "Empty") {
		t.Fatalf("list does not show both kinds:\n%s", list)
	}
	if only := run("list", "--type", "consumer"); strings.Contains(only, "classic-g") || !strings.Contains(only, "modern-g") {
		t.Fatalf("list --type consumer:\n%s", only)
	}
	members := run("describe", "--group", "modern-g", "--members")
	t.Logf("raftka groups describe --group modern-g --members:\n%s", members)
	if !hasLine(members, "modern-g", "modern-member", "3") {
		t.Fatalf("describe --members does not show the member with its 3 partitions:\n%s", members)
	}
	state := run("describe", "--group", "modern-g", "--state")
	t.Logf("raftka groups describe --group modern-g --state:\n%s", state)
	if !hasLine(state, "modern-g", "uniform", "Stable") {
		t.Fatalf("describe --state:\n%s", state)
	}
	offsets := run("describe", "--group", "modern-g")
	t.Logf("raftka groups describe --group modern-g:\n%s", offsets)
	rows := 0
	for _, l := range strings.Split(offsets, "\n") {
		f := strings.Fields(l)
		if len(f) >= 6 && f[0] == "modern-g" && f[1] == topic {
			rows++
			// The producer's sticky partitioner may leave partitions empty:
			// nothing to commit there, and Kafka's tool prints "-".
			if f[4] != "0" && (f[3] != f[4] || f[5] != "0") {
				t.Errorf("partition %s: CURRENT-OFFSET %s LOG-END-OFFSET %s LAG %s, want no lag", f[2], f[3], f[4], f[5])
			}
		}
	}
	if rows != 3 {
		t.Fatalf("%d offset rows, want 3:\n%s", rows, offsets)
	}
}

// hasLine reports whether some line of out has every field in order.
func hasLine(out string, fields ...string) bool {
	for _, l := range strings.Split(out, "\n") {
		f := strings.Fields(l)
		i := 0
		for _, x := range f {
			if i < len(fields) && x == fields[i] {
				i++
			}
		}
		if i == len(fields) {
			return true
		}
	}
	return false
}

// TestGroupConfigResource: per-group consumer.* configs through
// IncrementalAlterConfigs and DescribeConfigs on the GROUP resource, kept
// in the image and applied to the group's heartbeats.
func TestGroupConfigResource(t *testing.T) {
	t.Parallel() // see "Parallel tests" in main_test.go
	c := cluster.Start(t, cluster.Nodes(1))
	ctx := ctxFor(t, time.Minute)
	cl := client(t, c)
	if err := createTopic(ctx, kadm.NewClient(cl), "gc", 1, 1); err != nil {
		t.Fatal(err)
	}
	alter := func(key, value string) int16 {
		t.Helper()
		req := kmsg.NewPtrIncrementalAlterConfigsRequest()
		r := kmsg.NewIncrementalAlterConfigsRequestResource()
		r.ResourceType, r.ResourceName = kmsg.ConfigResourceTypeGroupConfig, "gc-group"
		cfg := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
		cfg.Name, cfg.Op, cfg.Value = key, kmsg.IncrementalAlterConfigOpSet, kmsg.StringPtr(value)
		r.Configs = append(r.Configs, cfg)
		req.Resources = append(req.Resources, r)
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			t.Fatal(err)
		}
		return resp.Resources[0].ErrorCode
	}
	if code := alter("consumer.heartbeat.interval.ms", "7000"); code != 0 {
		t.Fatalf("set consumer.heartbeat.interval.ms: %v", kerr.ErrorForCode(code))
	}
	if code := alter("consumer.nonsense", "1"); code != kerr.InvalidConfig.Code {
		t.Fatalf("unknown group key: %v, want INVALID_CONFIG", kerr.ErrorForCode(code))
	}
	if code := alter("consumer.session.timeout.ms", "soon"); code != kerr.InvalidConfig.Code {
		t.Fatalf("bad value: %v, want INVALID_CONFIG", kerr.ErrorForCode(code))
	}

	dreq := kmsg.NewPtrDescribeConfigsRequest()
	dr := kmsg.NewDescribeConfigsRequestResource()
	dr.ResourceType, dr.ResourceName = kmsg.ConfigResourceTypeGroupConfig, "gc-group"
	dreq.Resources = append(dreq.Resources, dr)
	dresp, err := dreq.RequestWith(ctx, cl)
	if err != nil || dresp.Resources[0].ErrorCode != 0 {
		t.Fatalf("DescribeConfigs GROUP: %v %+v", err, dresp)
	}
	got := map[string]kmsg.DescribeConfigsResponseResourceConfig{}
	for _, e := range dresp.Resources[0].Configs {
		got[e.Name] = e
	}
	if e := got["consumer.heartbeat.interval.ms"]; e.Value == nil || *e.Value != "7000" || e.Source != kmsg.ConfigSourceGroupConfig {
		t.Fatalf("consumer.heartbeat.interval.ms: %+v", e)
	}
	if e := got["consumer.session.timeout.ms"]; e.Value == nil || *e.Value != "45000" || e.Source != kmsg.ConfigSourceDefaultConfig {
		t.Fatalf("consumer.session.timeout.ms: %+v", e)
	}

	// The group's members are told the group's interval (within the
	// broker's bounds, 5 s to 15 s by default); a joining member, whose
	// group is converging, a tenth of it.
	hb := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	hb.Group, hb.MemberID, hb.MemberEpoch, hb.RebalanceTimeoutMillis = "gc-group", "gc-member", 0, 30000
	hb.SubscribedTopicNames, hb.Topics = []string{"gc"}, []kmsg.ConsumerGroupHeartbeatRequestTopic{}
	hresp, err := hb.RequestWith(ctx, cl)
	if err != nil || hresp.ErrorCode != 0 {
		t.Fatalf("heartbeat: %v %+v", err, hresp)
	}
	if hresp.HeartbeatIntervalMillis != 700 {
		t.Fatalf("heartbeat interval %d ms, want a tenth of the group's 7000", hresp.HeartbeatIntervalMillis)
	}
}

// TestClassicGroupConverted: a classic group (franz-go's classic consumer)
// that its members left becomes a KIP-848 group when a consumer-protocol
// member joins, and the new member starts from the classic group's
// commits.
func TestClassicGroupConverted(t *testing.T) {
	t.Parallel() // see "Parallel tests" in main_test.go
	const topic, group = "conv", "conv-g"
	c := cluster.Start(t, cluster.Nodes(1))
	ctx := ctxFor(t, 2*time.Minute)
	cl := client(t, c)
	adm := kadm.NewClient(cl)
	if err := createTopic(ctx, adm, topic, 1, 1); err != nil {
		t.Fatal(err)
	}
	seeds := strings.Split(c.Bootstrap(), ",")
	for i := range 20 {
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte{byte(i)}}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	consume := func(opts ...kgo.Opt) (*kgo.Client, int64) {
		t.Helper()
		m, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(seeds...), kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic),
			kgo.DisableAutoCommit(), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart())}, opts...)...)
		if err != nil {
			t.Fatal(err)
		}
		for ctx.Err() == nil {
			fs := m.PollRecords(ctx, 1)
			if errs := fs.Errors(); len(errs) > 0 {
				t.Fatalf("poll: %v", errs)
			}
			if fs.NumRecords() > 0 {
				return m, fs.Records()[0].Offset
			}
		}
		t.Fatal(ctx.Err())
		return nil, 0
	}
	classic, first := consume()
	if first != 0 {
		t.Fatalf("the classic member started at %d", first)
	}
	var commitErr error
	classic.CommitOffsetsSync(ctx, map[string]map[int32]kgo.EpochOffset{topic: {0: {Epoch: -1, Offset: 12}}},
		func(_ *kgo.Client, _ *kmsg.OffsetCommitRequest, resp *kmsg.OffsetCommitResponse, err error) {
			if err == nil {
				err = kerr.ErrorForCode(resp.Topics[0].Partitions[0].ErrorCode)
			}
			commitErr = err
		})
	if commitErr != nil {
		t.Fatal(commitErr)
	}
	classic.Close() // leaves: the classic group is empty
	listed, err := adm.ListGroups(ctx)
	if err != nil || listed[group].ProtocolType != "consumer" {
		t.Fatalf("the classic group: %+v %v", listed[group], err)
	}

	modern, first := consume(kgo.ServerSideBalancer())
	defer modern.Close()
	if first != 12 {
		t.Fatalf("the consumer-protocol member started at %d, want the classic group's commit 12", first)
	}
	d := describe848(ctx, t, cl, group)
	if d.ErrorCode != 0 || len(d.Members) != 1 || d.Members[0].MemberType != 1 {
		t.Fatalf("ConsumerGroupDescribe after the conversion: %+v", d)
	}
	req := kmsg.NewPtrListGroupsRequest()
	req.TypesFilter = []string{"consumer"}
	resp, err := req.RequestWith(ctx, cl)
	if err != nil || len(resp.Groups) != 1 || resp.Groups[0].Group != group {
		t.Fatalf("ListGroups type consumer: %+v %v", resp, err)
	}
}
