package broker

import (
	"context"
	"errors"
	"math"
	"testing"
	"time"

	"github.com/raftka/raftka/metadata"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// A client that sends at twice its quota and honours every throttle time
// ends up at the quota: the sampler's throttle times are what make the
// achieved rate converge, as Kafka's ClientQuotaManager's do.
func TestQuotaSamplerConverges(t *testing.T) {
	const quota = 1 << 20 // 1 MiB/s
	for _, chunk := range []float64{16 << 10, 256 << 10, 1 << 20} {
		s := &quotaSampler{window: time.Second, n: 11}
		now := time.Unix(1000, 0)
		start := now
		var sent float64
		for now.Sub(start) < 20*time.Second { // the 20 s, within 10%
			d := s.record(now, chunk, quota)
			sent += chunk
			// The client sends as fast as it can, but no sooner than the
			// throttle time it was given.
			now = now.Add(max(d, time.Millisecond))
		}
		rate := sent / now.Sub(start).Seconds()
		if math.Abs(rate-quota)/quota > 0.1 {
			t.Errorf("chunk %v: achieved %.0f B/s, quota %d", chunk, rate, quota)
		}
	}
}

func TestQuotaSamplerWithinQuota(t *testing.T) {
	s := &quotaSampler{window: time.Second, n: 11}
	now := time.Unix(0, 0)
	for range 100 {
		if d := s.record(now, 1000, 1e6); d != 0 {
			t.Fatalf("throttled %v well within the quota", d)
		}
		now = now.Add(10 * time.Millisecond)
	}
	// A burst far over it is capped at the whole window.
	if d := s.record(now, 1e12, 1); d != 11*time.Second {
		t.Fatalf("throttle %v, want the 11 s cap", d)
	}
}

func quotaAdmin(t *testing.T, auth *metadata.Authorizer) (*kadm.Client, *kgo.Client, context.Context) {
	t.Helper()
	node := startTwin(t, imageOf(t, &metadata.ClusterID{ID: "c1"}), nil)
	_, addr := startServer(t, defaultAPIs, Options{Authorizer: auth, Deps: Deps{Metadata: node, Quotas: node.Client()}})
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.RetryTimeout(testDeadline))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	ctx, cancel := context.WithTimeout(context.Background(), testDeadline)
	t.Cleanup(cancel)
	return kadm.NewClient(cl), cl, ctx
}

// AlterClientQuotas through the controller twin, DescribeClientQuotas's
// filters, Kafka's refusals.
func TestClientQuotaAPIs(t *testing.T) {
	adm, cl, ctx := quotaAdmin(t, nil)
	alice, def := kmsg.StringPtr("alice"), (*string)(nil)
	res, err := adm.AlterClientQuotas(ctx, []kadm.AlterClientQuotaEntry{
		{Entity: kadm.ClientQuotaEntity{{Type: "user", Name: alice}}, Ops: []kadm.AlterClientQuotaOp{{Key: "producer_byte_rate", Value: 1048576}}},
		{Entity: kadm.ClientQuotaEntity{{Type: "user", Name: def}, {Type: "client-id", Name: def}}, Ops: []kadm.AlterClientQuotaOp{{Key: "consumer_byte_rate", Value: 2048}}},
		{Entity: kadm.ClientQuotaEntity{{Type: "user", Name: alice}, {Type: "ip", Name: kmsg.StringPtr("1.2.3.4")}}, Ops: []kadm.AlterClientQuotaOp{{Key: "producer_byte_rate", Value: 1}}},
		{Entity: kadm.ClientQuotaEntity{{Type: "client-id", Name: kmsg.StringPtr("c")}}, Ops: []kadm.AlterClientQuotaOp{{Key: "producer_byte_rate", Value: 1.5}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	wantErr := []bool{false, false, true, true}
	for i, r := range res {
		if (r.Err != nil) != wantErr[i] {
			t.Errorf("entry %d: %v", i, r.Err)
		}
	}
	all, err := adm.DescribeClientQuotas(ctx, false, nil)
	if err != nil || len(all) != 2 {
		t.Fatalf("describe all: %v %+v", err, all)
	}
	exact, err := adm.DescribeClientQuotas(ctx, true, []kadm.DescribeClientQuotaComponent{{Type: "user", MatchName: alice, MatchType: 0}})
	if err != nil || len(exact) != 1 || exact[0].Values[0].Value != 1048576 {
		t.Fatalf("describe exact: %v %+v", err, exact)
	}
	defaults, err := adm.DescribeClientQuotas(ctx, false, []kadm.DescribeClientQuotaComponent{{Type: "client-id", MatchType: 1}})
	if err != nil || len(defaults) != 1 {
		t.Fatalf("describe default client: %v %+v", err, defaults)
	}
	strict, err := adm.DescribeClientQuotas(ctx, true, []kadm.DescribeClientQuotaComponent{{Type: "user", MatchType: 2}})
	if err != nil || len(strict) != 1 {
		t.Fatalf("describe strict any user: %v %+v", err, strict)
	}
	req := kmsg.NewPtrDescribeClientQuotasRequest()
	c := kmsg.NewDescribeClientQuotasRequestComponent()
	c.EntityType, c.MatchType = "ip", 2
	c2 := c
	c2.EntityType = "user"
	req.Components = append(req.Components, c, c2)
	if resp, err := req.RequestWith(ctx, cl); err != nil || resp.ErrorCode != kerr.InvalidRequest.Code {
		t.Fatalf("ip with user: %v %+v", err, resp)
	}
	req.Components = []kmsg.DescribeClientQuotasRequestComponent{c, c}
	if resp, err := req.RequestWith(ctx, cl); err != nil || resp.ErrorCode != kerr.InvalidRequest.Code {
		t.Fatalf("type twice: %v %+v", err, resp)
	}
}

func TestClientQuotaAPIsNeedClusterConfigs(t *testing.T) {
	adm, _, ctx := quotaAdmin(t, &metadata.Authorizer{})
	res, err := adm.AlterClientQuotas(ctx, []kadm.AlterClientQuotaEntry{
		{Entity: kadm.ClientQuotaEntity{{Type: "user", Name: kmsg.StringPtr("a")}}, Ops: []kadm.AlterClientQuotaOp{{Key: "producer_byte_rate", Value: 1}}}})
	if err != nil || len(res) != 1 || !errors.Is(res[0].Err, kerr.ClusterAuthorizationFailed) {
		t.Fatalf("alter: %v %+v", err, res)
	}
	if _, err := adm.DescribeClientQuotas(ctx, false, nil); !errors.Is(err, kerr.ClusterAuthorizationFailed) {
		t.Fatalf("describe: %v", err)
	}
}
