package main

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestTopicsRoundTrip(t *testing.T) {
	bs := startKfake(t)
	out := mustRun(t, "", "topics", "create", "--bootstrap-server", bs, "--topic", "orders", "--partitions", "3", "--replication-factor", "1",
		"--config", "retention.ms=60000", "--config", "cleanup.policy=compact,delete")
	if out != "Created topic orders.\n" {
		t.Fatalf("create printed %q", out)
	}
	mustRun(t, "", "topics", "create", "--bootstrap-server", bs, "--topic", "audit", "--partitions", "1")

	if out := mustRun(t, "", "topics", "list", "--bootstrap-server", bs); !strings.Contains(out, "audit\n") || !strings.Contains(out, "orders\n") {
		t.Fatalf("list printed %q", out)
	}
	if out := mustRun(t, "", "topics", "list", "--bootstrap-server", bs, "--topic", "ord.*"); out != "orders\n" {
		t.Fatalf("list --topic ord.* printed %q", out)
	}

	desc := mustRun(t, "", "topics", "describe", "--bootstrap-server", bs, "--topic", "orders")
	lines := strings.Split(strings.TrimSuffix(desc, "\n"), "\n")
	if len(lines) != 4 {
		t.Fatalf("describe printed %d lines:\n%s", len(lines), desc)
	}
	for _, want := range []string{"Topic: orders\tTopicId: ", "PartitionCount: 3\tReplicationFactor: 1\t", "cleanup.policy=compact,delete", "retention.ms=60000"} {
		if !strings.Contains(lines[0], want) {
			t.Errorf("describe header %q lacks %q", lines[0], want)
		}
	}
	for p, l := range lines[1:] {
		for _, want := range []string{"\tTopic: orders\tPartition: " + string(rune('0'+p)) + "\tLeader: 0\tReplicas: 0\tIsr: 0\tLeaderEpoch: "} {
			if !strings.HasPrefix(l, want) {
				t.Errorf("partition line %q, want prefix %q", l, want)
			}
		}
	}

	out = mustRun(t, "", "topics", "alter", "--bootstrap-server", bs, "--topic", "orders", "--partitions", "5", "--config", "retention.ms=120000", "--delete-config", "cleanup.policy")
	if !strings.Contains(out, "now has 5 partitions") {
		t.Fatalf("alter printed %q", out)
	}
	desc = mustRun(t, "", "topics", "describe", "--bootstrap-server", bs, "--topic", "orders")
	if !strings.Contains(desc, "PartitionCount: 5") || !strings.Contains(desc, "Configs: retention.ms=120000\n") {
		t.Fatalf("describe after alter:\n%s", desc)
	}

	// Errors carry Kafka's error name; --if-not-exists / --if-exists turn the
	// expected ones into success.
	_, _, err := runCLI(t, "", "topics", "create", "--bootstrap-server", bs, "--topic", "orders", "--partitions", "1")
	if err == nil || !strings.Contains(err.Error(), "TOPIC_ALREADY_EXISTS") || !errors.Is(err, kerr.TopicAlreadyExists) {
		t.Fatalf("second create: %v", err)
	}
	mustRun(t, "", "topics", "create", "--bootstrap-server", bs, "--topic", "orders", "--partitions", "1", "--if-not-exists")
	_, _, err = runCLI(t, "", "topics", "alter", "--bootstrap-server", bs, "--topic", "orders", "--partitions", "2")
	if err == nil || !strings.Contains(err.Error(), "INVALID_PARTITIONS") {
		t.Fatalf("shrinking alter: %v", err)
	}

	if out := mustRun(t, "", "topics", "delete", "--bootstrap-server", bs, "--topic", "orders"); out != "Deleted topic orders.\n" {
		t.Fatalf("delete printed %q", out)
	}
	_, _, err = runCLI(t, "", "topics", "delete", "--bootstrap-server", bs, "--topic", "orders")
	if err == nil || !strings.Contains(err.Error(), "UNKNOWN_TOPIC_OR_PARTITION") {
		t.Fatalf("second delete: %v", err)
	}
	mustRun(t, "", "topics", "delete", "--bootstrap-server", bs, "--topic", "orders", "--if-exists")
	mustRun(t, "", "topics", "alter", "--bootstrap-server", bs, "--topic", "orders", "--config", "retention.ms=1", "--if-exists")
	if out := mustRun(t, "", "topics", "list", "--bootstrap-server", bs); out != "audit\n" {
		t.Fatalf("list after delete printed %q", out)
	}
	_, _, err = runCLI(t, "", "topics", "describe", "--bootstrap-server", bs, "--topic", "orders")
	if err == nil || !strings.Contains(err.Error(), "UNKNOWN_TOPIC_OR_PARTITION") {
		t.Fatalf("describe of a deleted topic: %v", err)
	}
}

// kfake places replicas itself, so the test checks what the command sent.
func TestTopicsReplicaAssignment(t *testing.T) {
	c, bs := startKfakeCluster(t, kfake.NumBrokers(3))
	var mu sync.Mutex
	var sent []string
	c.ControlKey(int16(kmsg.CreateTopics), func(r kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		mu.Lock()
		defer mu.Unlock()
		for _, t := range r.(*kmsg.CreateTopicsRequest).Topics {
			sent = append(sent, fmt.Sprintf("%s p%d rf%d", t.Topic, t.NumPartitions, t.ReplicationFactor))
			for _, a := range t.ReplicaAssignment {
				sent = append(sent, fmt.Sprintf("%d=%v", a.Partition, a.Replicas))
			}
		}
		return nil, nil, false
	})
	mustRun(t, "", "topics", "create", "--bootstrap-server", bs, "--topic", "placed", "--replica-assignment", "1:2,2:0,0:1")
	mu.Lock()
	got := strings.Join(sent, " ")
	mu.Unlock()
	if want := "placed p-1 rf-1 0=[1 2] 1=[2 0] 2=[0 1]"; got != want {
		t.Fatalf("CreateTopics sent %q, want %q", got, want)
	}
	desc := mustRun(t, "", "topics", "describe", "--bootstrap-server", bs, "--topic", "placed")
	if !strings.Contains(desc, "PartitionCount: 3\tReplicationFactor: 2") {
		t.Errorf("describe:\n%s", desc)
	}
}

func TestTopicsFlagErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"topics", "create", "--partitions", "1"}, "--topic is required"},
		{[]string{"topics", "delete"}, "--topic is required"},
		{[]string{"topics", "create", "--topic", "x", "--replica-assignment", "1:2,3"}, "partition 1 has 1 replicas but partition 0 has 2"},
		{[]string{"topics", "create", "--topic", "x", "--replica-assignment", "1:x"}, `"x" is not a broker id`},
		{[]string{"topics", "create", "--topic", "x", "--replica-assignment", "1:1"}, "lists broker 1 twice"},
		{[]string{"topics", "create", "--topic", "x", "--replica-assignment", "1", "--partitions", "2"}, "cannot be used with --partitions"},
		{[]string{"topics", "create", "--topic", "x", "--partitions", "0"}, "--partitions 0"},
		{[]string{"topics", "create", "--topic", "x", "--config", "novalue"}, "want key=value"},
		{[]string{"topics", "alter", "--topic", "x"}, "give --partitions, --config or --delete-config"},
		{[]string{"topics", "list", "--bootstrap-server", "nohost"}, "not HOST:PORT"},
	} {
		_, _, err := runCLI(t, "", tc.args...)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: error %v, want %q", tc.args, err, tc.want)
		}
	}
}

func TestTopicsParseReplicaAssignment(t *testing.T) {
	got, err := parseReplicaAssignment("1:2:3, 2:3:1")
	if err != nil || len(got) != 2 || got[1][0] != 2 || got[1][2] != 1 {
		t.Fatalf("got %v, %v", got, err)
	}
	for _, bad := range []string{"", "1:2,", ":", "1:-2", "99999999999"} {
		if _, err := parseReplicaAssignment(bad); err == nil {
			t.Errorf("parseReplicaAssignment(%q): want an error", bad)
		}
	}
}
