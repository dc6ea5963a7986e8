package e2e

import (
	"strings"
	"testing"
	"time"

	"github.com/raftka/raftka/test/cluster"
	"github.com/twmb/franz-go/pkg/kadm"
)

// `raftka consume --group-protocol consumer` joins a KIP-848 group (what
// Kafka's console consumer does with group.protocol=consumer): the group
// is listed as a consumer group and holds the commits of what was printed.
func TestConsumeCLIJoinsAConsumerProtocolGroup(t *testing.T) {
	t.Parallel() // see "Parallel tests" in main_test.go
	const topic = "cli-consume-848"
	c := cluster.Start(t, cluster.Nodes(1))
	ctx := ctxFor(t, 2*time.Minute)
	adm := kadm.NewClient(client(t, c))
	seedTopic(ctx, t, c, adm, topic, 3, 1, 30)
	for _, tc := range []struct{ group, assignor string }{{"cli-uniform", "uniform"}, {"cli-range", "range"}} {
		out, err := cluster.Run(t, "--log-level", "error", "consume", "--bootstrap-server", c.Bootstrap(), "--topic", topic,
			"--group", tc.group, "--group-protocol", "consumer", "--group-remote-assignor", tc.assignor,
			"--from-beginning", "--max-messages", "30", "--timeout-ms", "30000")
		if err != nil {
			t.Fatalf("consume %s: %v\n%s", tc.group, err, out)
		}
		if n := strings.Count(out, "x\n"); n != 30 {
			t.Fatalf("consume %s printed %d records, want 30:\n%s", tc.group, n, out)
		}
		offs, err := adm.FetchOffsets(ctx, tc.group)
		if err != nil {
			t.Fatal(err)
		}
		var total int64
		offs.Each(func(o kadm.OffsetResponse) { total += o.At })
		if total != 30 {
			t.Fatalf("%s: committed offsets add up to %d, want 30", tc.group, total)
		}
	}
	list, err := cluster.Run(t, "--log-level", "error", "groups", "list", "--type", "consumer", "--state", "", "--bootstrap-server", c.Bootstrap())
	if err != nil {
		t.Fatalf("groups list: %v\n%s", err, list)
	}
	if !hasLine(list, "cli-uniform", "consumer") || !hasLine(list, "cli-range", "consumer") {
		t.Fatalf("groups list --type consumer does not show both groups as consumer groups:\n%s", list)
	}
}
