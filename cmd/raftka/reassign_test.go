package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kfake"
)

func writeFile(t *testing.T, name, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestDrainPlan(t *testing.T) {
	cur := []reassignmentEntry{
		{Topic: "a", Partition: 0, Replicas: []int32{1, 2, 3}},
		{Topic: "a", Partition: 1, Replicas: []int32{2, 3, 4}},
		{Topic: "a", Partition: 2, Replicas: []int32{3, 1, 2}},
		{Topic: "b", Partition: 0, Replicas: []int32{1}},
	}
	plan, err := drainPlan(slices.Clone(cur), 1, []int32{2, 3, 4})
	if err != nil {
		t.Fatal(err)
	}
	want := []reassignmentEntry{
		{Topic: "a", Partition: 0, Replicas: []int32{4, 2, 3}}, // 4 has the fewest replicas
		{Topic: "a", Partition: 2, Replicas: []int32{3, 4, 2}},
		// After two moves 2, 3 and 4 hold three replicas each: the lowest id.
		{Topic: "b", Partition: 0, Replicas: []int32{2}},
	}
	if len(plan) != len(want) {
		t.Fatalf("plan %+v", plan)
	}
	for i := range want {
		if plan[i].Topic != want[i].Topic || plan[i].Partition != want[i].Partition || !slices.Equal(plan[i].Replicas, want[i].Replicas) {
			t.Fatalf("plan[%d] %+v, want %+v", i, plan[i], want[i])
		}
	}
	if _, err := drainPlan(slices.Clone(cur), 1, []int32{2, 3}); err == nil {
		t.Fatal("a-0 cannot move anywhere but 4: want an error")
	}
	if plan, err := drainPlan(slices.Clone(cur), 9, []int32{2}); err != nil || len(plan) != 0 {
		t.Fatalf("a broker without replicas: %v %v", plan, err)
	}
}

func TestReassignFileErrors(t *testing.T) {
	bs := startKfake(t)
	for _, tc := range []struct{ body, want string }{
		{`{"version":2,"partitions":[{"topic":"t","partition":0,"replicas":[1]}]}`, "version 2"},
		{`{"version":1,"partitions":[]}`, "no partitions"},
		{`{"version":1,"partitions":[{"topic":"t","partition":0,"replicas":[1]},{"topic":"t","partition":0,"replicas":[1]}]}`, "duplicate partition t-0"},
		{`{"version":1,"partitions":[{"topic":"t","partition":0,"replicas":[1,1]}]}`, "lists broker 1 twice"},
		{`{"version":1,"partitions":[{"topic":"t","partition":0,"replicas":[]}]}`, "empty replica list"},
		{`{"version":1,"partitions":[{"topic":"t","partition":0,"replicas":[1],"log_dirs":["d"]}]}`, `log dir "d"`},
		{`not json`, "invalid character"},
	} {
		f := writeFile(t, "r.json", tc.body)
		for _, sub := range []string{"execute", "verify", "cancel"} {
			_, _, err := runCLI(t, "", "reassign", sub, "--bootstrap-server", bs, "--reassignment-json-file", f)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("%s %s: %v, want %q", sub, tc.body, err, tc.want)
			}
		}
	}
}

// kfake answers the APIs but moves nothing, which is enough for the
// output formats and refusals; the moves are tested on raftka (test/e2e).
func TestReassignAgainstKfake(t *testing.T) {
	bs := startKfake(t, kfake.NumBrokers(3), kfake.SeedTopics(2, "moves"))
	topics := writeFile(t, "topics.json", `{"version":1,"topics":[{"topic":"moves"}]}`)
	out := mustRun(t, "", "reassign", "generate", "--bootstrap-server", bs, "--topics-to-move-json-file", topics, "--broker-list", "0,1,2")
	cur, proposed, ok := strings.Cut(out, "\nProposed partition reassignment configuration\n")
	if !ok || !strings.HasPrefix(cur, "Current partition replica assignment\n") {
		t.Fatalf("generate printed %q", out)
	}
	var f reassignmentFile
	if err := json.Unmarshal([]byte(proposed), &f); err != nil || f.Version != 1 || len(f.Partitions) != 2 {
		t.Fatalf("proposed %q: %v", proposed, err)
	}
	for _, p := range f.Partitions {
		for _, r := range p.Replicas {
			if r < 0 || r > 2 {
				t.Fatalf("proposed a replica on %d, outside --broker-list: %+v", r, p)
			}
		}
		if !slices.Equal(p.LogDirs, slices.Repeat([]string{"any"}, len(p.Replicas))) {
			t.Fatalf("log dirs %v", p.LogDirs)
		}
	}
	if _, _, err := runCLI(t, "", "reassign", "generate", "--bootstrap-server", bs, "--topics-to-move-json-file", topics, "--broker-list", "0,7"); err == nil || !strings.Contains(err.Error(), "broker 7 is not in the cluster") {
		t.Fatalf("generate onto a missing broker: %v", err)
	}
	// RF 3 onto two brokers: refused, as Kafka's generate refuses it.
	if _, _, err := runCLI(t, "", "reassign", "generate", "--bootstrap-server", bs, "--topics-to-move-json-file", topics, "--broker-list", "0,1"); err == nil || !strings.Contains(err.Error(), "larger than available brokers") {
		t.Fatalf("generate RF 3 onto 2 brokers: %v", err)
	}

	file := writeFile(t, "r.json", proposed)
	out = mustRun(t, "", "reassign", "execute", "--bootstrap-server", bs, "--reassignment-json-file", file)
	if !strings.Contains(out, "Save this to use as the --reassignment-json-file option during rollback") ||
		!strings.Contains(out, "Successfully started partition reassignments for moves-0,moves-1") {
		t.Fatalf("execute printed %q", out)
	}
	// kfake moved nothing and lists nothing: verify reports the mismatch
	// unless the proposal happened to be the current assignment.
	out, _, err := runCLI(t, "", "reassign", "verify", "--bootstrap-server", bs, "--reassignment-json-file", file)
	if !strings.HasPrefix(out, "Status of partition reassignment:\n") || (err != nil) != strings.Contains(out, "rather than") {
		t.Fatalf("verify printed %q, err %v", out, err)
	}
	out, _, err = runCLI(t, "", "reassign", "cancel", "--bootstrap-server", bs, "--reassignment-json-file", file)
	if err == nil || !strings.Contains(out, "moves-0: NO_REASSIGNMENT_IN_PROGRESS") {
		t.Fatalf("cancel printed %q, err %v", out, err)
	}
	if _, _, err := runCLI(t, "", "reassign", "drain", "--bootstrap-server", bs); err == nil || !strings.Contains(err.Error(), "--broker is required") {
		t.Fatalf("drain without --broker: %v", err)
	}
}

func TestThrottlePlan(t *testing.T) {
	cur := []reassignmentEntry{
		{Topic: "a", Partition: 0, Replicas: []int32{1, 2, 3}},
		{Topic: "a", Partition: 1, Replicas: []int32{2, 3, 1}},
		{Topic: "b", Partition: 0, Replicas: []int32{1}},
	}
	want := []reassignmentEntry{
		{Topic: "a", Partition: 0, Replicas: []int32{4, 2, 3}},
		{Topic: "a", Partition: 1, Replicas: []int32{2, 3, 5}},
		{Topic: "b", Partition: 0, Replicas: []int32{1, 4}},
		{Topic: "c", Partition: 0, Replicas: []int32{6}}, // not in cur: every replica is new
	}
	cur = append(cur, reassignmentEntry{Topic: "d", Partition: 0, Replicas: []int32{7}})
	want = append(want, reassignmentEntry{Topic: "d", Partition: 0, Replicas: []int32{7}}) // not moving
	followers, leaders, brokers := throttlePlan(cur, want)
	if followers["a"] != "0:4,1:5" || followers["b"] != "0:4" || followers["c"] != "0:6" || len(followers) != 3 {
		t.Errorf("follower lists %v", followers)
	}
	if leaders["a"] != "0:1,0:2,0:3,1:1,1:2,1:3" || leaders["b"] != "0:1" || len(leaders) != 2 {
		t.Errorf("leader lists %v", leaders)
	}
	if !slices.Equal(brokers, []int32{1, 2, 3, 4, 5, 6}) {
		t.Errorf("brokers %v", brokers)
	}
}
