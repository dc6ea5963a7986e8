package main

import (
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kfake"
)

// kfake's election moves leadership to the next broker and bumps the
// leader epoch, which describe shows.
func TestLeaderElection(t *testing.T) {
	bs := startKfake(t, kfake.NumBrokers(3), kfake.SeedTopics(2, "votes"))
	out := mustRun(t, "", "leader-election", "--bootstrap-server", bs, "--election-type", "preferred", "--topic", "votes", "--partition", "1")
	if out != "Successfully completed leader election (PREFERRED) for partitions votes-1\n" {
		t.Fatalf("election printed %q", out)
	}
	desc := mustRun(t, "", "topics", "describe", "--bootstrap-server", bs, "--topic", "votes")
	if !strings.Contains(desc, "Partition: 0\t") || !strings.Contains(desc, "Partition: 0\tLeader: ") ||
		!strings.Contains(desc, "LeaderEpoch: 0\n") || !strings.Contains(desc, "LeaderEpoch: 1\n") {
		t.Fatalf("describe after electing partition 1:\n%s", desc)
	}

	out = mustRun(t, "", "leader-election", "--bootstrap-server", bs, "--election-type", "UNCLEAN", "--all-topic-partitions")
	if out != "Successfully completed leader election (UNCLEAN) for partitions votes-0, votes-1\n" {
		t.Fatalf("election of all printed %q", out)
	}

	out, _, err := runCLI(t, "", "leader-election", "--bootstrap-server", bs, "--election-type", "PREFERRED", "--topic", "votes", "--partition", "7")
	if err == nil || !strings.Contains(out, "votes-7: UNKNOWN_TOPIC_OR_PARTITION") {
		t.Fatalf("election of a missing partition: out %q, err %v", out, err)
	}
}

func TestLeaderElectionFlagErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"leader-election", "--topic", "t", "--partition", "0"}, "--election-type is required"},
		{[]string{"leader-election", "--election-type", "random", "--all-topic-partitions"}, `--election-type "random"`},
		{[]string{"leader-election", "--election-type", "preferred", "--topic", "t"}, "give --topic and --partition"},
		{[]string{"leader-election", "--election-type", "preferred", "--topic", "t", "--partition", "0", "--all-topic-partitions"}, "cannot be used with"},
	} {
		_, _, err := runCLI(t, "", tc.args...)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: error %v, want %q", tc.args, err, tc.want)
		}
	}
}
