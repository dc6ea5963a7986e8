package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
)

// An open transaction is listed, described, shows as its producer's open
// transaction on the partition, and is aborted from the command line.
func TestTransactionsCommands(t *testing.T) {
	bs := startKfake(t, kfake.SeedTopics(1, "pay"))
	cl, err := kgo.NewClient(kgo.SeedBrokers(strings.Split(bs, ",")...), kgo.TransactionalID("cli-tx"), kgo.DefaultProduceTopic("pay"))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := cl.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte("v")}).FirstErr(); err != nil {
		t.Fatal(err)
	}

	out := mustRun(t, "", "transactions", "list", "--bootstrap-server", bs)
	if !strings.Contains(out, "TransactionalId") || !strings.Contains(out, "cli-tx") || !strings.Contains(out, "Ongoing") {
		t.Fatalf("list:\n%s", out)
	}
	if out := mustRun(t, "", "transactions", "list", "--bootstrap-server", bs, "--state", "CompleteCommit"); strings.Contains(out, "cli-tx") {
		t.Fatalf("list filtered by state:\n%s", out)
	}
	out = mustRun(t, "", "transactions", "describe", "--bootstrap-server", bs, "--transactional-id", "cli-tx")
	if !strings.Contains(out, "Ongoing") || !strings.Contains(out, "pay-0") {
		t.Fatalf("describe:\n%s", out)
	}
	out = mustRun(t, "", "transactions", "describe-producers", "--bootstrap-server", bs, "--topic", "pay", "--partition", "0")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 2 || !strings.HasSuffix(strings.TrimSpace(lines[1]), " 0") {
		t.Fatalf("describe-producers:\n%s", out)
	}
	out = mustRun(t, "", "transactions", "abort", "--bootstrap-server", bs, "--topic", "pay", "--partition", "0", "--start-offset", "0")
	if !strings.Contains(out, "Aborted the transaction of producer") {
		t.Fatalf("abort:\n%s", out)
	}
	// That the marker ends the transaction on the partition is checked
	// against raftka in test/e2e (TestTransactionalProducer); kfake keeps
	// no producer state for markers sent by hand.
	for _, args := range [][]string{
		{"transactions", "describe"},
		{"transactions", "describe-producers", "--topic", "pay"},
		{"transactions", "abort", "--topic", "pay", "--partition", "0"},
		{"transactions", "abort", "--topic", "pay", "--partition", "0", "--start-offset", "5"},
	} {
		if _, _, err := runCLI(t, "", append(args, "--bootstrap-server", bs)...); err == nil {
			t.Errorf("%v succeeded", args)
		}
	}
}
