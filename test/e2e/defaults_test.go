package e2e

import (
	"strings"
	"testing"
	"time"

	"github.com/raftka/raftka/test/cluster"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Three nodes on one host from Kafka-style files that never mention
// metrics.listener all start and serve an RF=3 topic. Before metrics were
// off by default every node bound :9100 and two of the three exited.
func TestPlainConfigsThreeNodesOneHost(t *testing.T) {
	t.Parallel() // see "Parallel tests" in main_test.go
	c := cluster.Start(t, cluster.Nodes(3), cluster.Omit("metrics.listener"))
	ctx := ctxFor(t, 60*time.Second)

	for _, n := range c.Nodes() {
		if !n.Running() {
			t.Fatalf("node %d is not running:\n%s", n.ID(), n.Logs())
		}
		if !strings.Contains(n.Logs(), "metrics.listener not set") {
			t.Errorf("node %d did not log that metrics are off", n.ID())
		}
	}
	// Every node registered: each one's Metadata lists all three brokers.
	for _, n := range c.Nodes() {
		for {
			resp, err := nodeMetadata(ctx, n)
			if err == nil && len(resp.Brokers) == 3 {
				break
			}
			select {
			case <-ctx.Done():
				t.Fatalf("node %d never listed 3 brokers (last error %v)", n.ID(), err)
			case <-time.After(100 * time.Millisecond):
			}
		}
	}
	cl := client(t, c)
	adm := kadm.NewClient(cl)
	for {
		err := createTopic(ctx, adm, "plain", 1, 3)
		if err == nil {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("creating an RF=3 topic: %v", err)
		case <-time.After(200 * time.Millisecond):
		}
	}
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "plain", Value: []byte("v")}).FirstErr(); err != nil {
		t.Fatalf("produce with acks=all to an RF=3 topic: %v", err)
	}
}
