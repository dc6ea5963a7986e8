package main

import (
	"bytes"
	"context"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestParseTopicArgs(t *testing.T) {
	for _, tc := range []struct {
		in       []string
		explicit []tp
		bare     []string
		bad      bool
	}{
		{in: []string{"a"}, bare: []string{"a"}},
		{in: []string{"a", "a", "b:0,2", "b:2"}, explicit: []tp{{"b", 0}, {"b", 2}}, bare: []string{"a"}},
		{in: []string{"b: 1"}, explicit: []tp{{"b", 1}}},
		{in: []string{"b:"}, bad: true},
		{in: []string{":1"}, bad: true},
		{in: []string{"b:x"}, bad: true},
		{in: []string{"b:-1"}, bad: true},
		{in: []string{"b:1:2"}, bad: true},
		{in: []string{""}, bad: true},
	} {
		ex, bare, err := parseTopicArgs(tc.in)
		if (err != nil) != tc.bad {
			t.Errorf("parseTopicArgs(%q) err %v", tc.in, err)
			continue
		}
		if tc.bad {
			continue
		}
		if !equalTPs(ex, tc.explicit) || strings.Join(bare, ",") != strings.Join(tc.bare, ",") {
			t.Errorf("parseTopicArgs(%q) = %v %v, want %v %v", tc.in, ex, bare, tc.explicit, tc.bare)
		}
	}
}

func equalTPs(a, b []tp) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestParseKafkaDateTime(t *testing.T) {
	base := time.Date(2024, 3, 5, 10, 20, 30, 123e6, time.UTC).UnixMilli()
	for _, tc := range []struct {
		in   string
		want int64
		bad  bool
	}{
		{in: "2024-03-05T10:20:30.123", want: base},
		{in: "2024-03-05T10:20:30.123Z", want: base},
		{in: "2024-03-05T12:20:30.123+02:00", want: base},
		{in: "2024-03-05T08:20:30.123-0200", want: base},
		{in: "2024-03-05T11:20:30.123+01", want: base},
		{in: "2024-03-05 10:20:30.123", bad: true},
		{in: "2024-03-05T10:20:30", bad: true},
		{in: "yesterday", bad: true},
	} {
		got, err := parseKafkaDateTime(tc.in)
		if (err != nil) != tc.bad || (!tc.bad && got != tc.want) {
			t.Errorf("parseKafkaDateTime(%q) = %d, %v; want %d (bad %v)", tc.in, got, err, tc.want, tc.bad)
		}
	}
}

func TestParseISODuration(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want time.Duration
		bad  bool
	}{
		{in: "PT15M", want: 15 * time.Minute},
		{in: "P1DT2H3M4.5S", want: 26*time.Hour + 3*time.Minute + 4500*time.Millisecond},
		{in: "pt1h", want: time.Hour},
		{in: "P2D", want: 48 * time.Hour},
		{in: "-PT1H", want: -time.Hour},
		{in: "PT-1H30M", want: -30 * time.Minute},
		{in: "PT-1.5S", want: -1500 * time.Millisecond},
		{in: "P", bad: true},
		{in: "PT", bad: true},
		{in: "1h", bad: true},
		{in: "P1W", bad: true},
	} {
		got, err := parseISODuration(tc.in)
		if (err != nil) != tc.bad || (!tc.bad && got != tc.want) {
			t.Errorf("parseISODuration(%q) = %v, %v; want %v (bad %v)", tc.in, got, err, tc.want, tc.bad)
		}
	}
}

func TestParseStatesAndTypes(t *testing.T) {
	if got, err := parseStates("stable, EMPTY,Stable"); err != nil || strings.Join(got, ",") != "Stable,Empty" {
		t.Errorf("parseStates = %v, %v", got, err)
	}
	if _, err := parseStates("Stable,Sleeping"); err == nil || !strings.Contains(err.Error(), "Valid states are") {
		t.Errorf("parseStates(Sleeping) err %v", err)
	}
	if got, err := parseTypes("Classic,consumer"); err != nil || strings.Join(got, ",") != "classic,consumer" {
		t.Errorf("parseTypes = %v, %v", got, err)
	}
	if _, err := parseTypes("share"); err == nil {
		t.Error("parseTypes(share) accepted")
	}
}

func TestPlanReset(t *testing.T) {
	a0, a1, b0 := tp{"a", 0}, tp{"a", 1}, tp{"b", 0}
	parts := []tp{a0, a1, b0}
	committed := map[tp]committedOffset{a0: {5, 1}, a1: {50, 1}}
	logs := logOffsets{
		start:  map[tp]int64{a0: 2, a1: 10, b0: 0},
		end:    map[tp]int64{a0: 20, a1: 40, b0: 7},
		byTime: map[tp]int64{a0: 3, b0: 6},
	}
	for _, tc := range []struct {
		s    resetScenario
		want map[tp]int64
		bad  string
	}{
		{s: resetScenario{kind: "earliest"}, want: map[tp]int64{a0: 2, a1: 10, b0: 0}},
		{s: resetScenario{kind: "latest"}, want: map[tp]int64{a0: 20, a1: 40, b0: 7}},
		{s: resetScenario{kind: "current"}, want: map[tp]int64{a0: 5, a1: 50, b0: 7}},
		{s: resetScenario{kind: "offset", offset: 8}, want: map[tp]int64{a0: 8, a1: 10, b0: 7}},
		{s: resetScenario{kind: "time"}, want: map[tp]int64{a0: 3, a1: 40, b0: 6}},
		{s: resetScenario{kind: "shift", offset: -4}, bad: "no current committed offset"},
	} {
		got, err := planReset(tc.s, parts, committed, logs)
		if tc.bad != "" {
			if err == nil || !strings.Contains(err.Error(), tc.bad) {
				t.Errorf("%+v: err %v, want %q", tc.s, err, tc.bad)
			}
			continue
		}
		if err != nil || len(got) != len(tc.want) {
			t.Errorf("%+v: %v, %v", tc.s, got, err)
			continue
		}
		for k, v := range tc.want {
			if got[k] != v {
				t.Errorf("%+v: %v = %d, want %d", tc.s, k, got[k], v)
			}
		}
	}
	got, err := planReset(resetScenario{kind: "shift", offset: -4}, []tp{a0, a1}, committed, logs)
	if err != nil || got[a0] != 2 || got[a1] != 40 {
		t.Errorf("shift -4 = %v, %v; want a-0 clamped to start 2, a-1 clamped to end 40", got, err)
	}
	// A partition without a leader cannot be listed: Kafka refuses the plan.
	if _, err := planReset(resetScenario{kind: "latest"}, []tp{{"c", 0}}, nil, logs); err == nil {
		t.Error("latest without an end offset accepted")
	}
}

func TestParseResetCSV(t *testing.T) {
	got, err := parseResetCSV("t,0,5\nt,1,7\n\n", []string{"g"})
	if err != nil || got["g"][tp{"t", 0}] != 5 || got["g"][tp{"t", 1}] != 7 || len(got) != 1 {
		t.Errorf("single group: %v %v", got, err)
	}
	got, err = parseResetCSV("g1,t,0,5\n\"g,2\",t,1,7\n", []string{"g1", "g,2"})
	if err != nil || got["g1"][tp{"t", 0}] != 5 || got["g,2"][tp{"t", 1}] != 7 {
		t.Errorf("with groups: %v %v", got, err)
	}
	for _, bad := range []string{"t,0\n", "t,x,5\n", "t,0,-1\n", ",0,1\n", "t,0,5\n"} {
		groups := []string{"g"}
		if bad == "t,0,5\n" {
			groups = []string{"g1", "g2"} // three fields need a single --group
		}
		if _, err := parseResetCSV(bad, groups); err == nil {
			t.Errorf("parseResetCSV(%q) accepted", bad)
		}
	}
}

func TestOffsetRowsLayout(t *testing.T) {
	g := describedGroup{id: "g", state: "Stable", members: []groupMember{
		{id: "m-small", host: "/127.0.0.1", clientID: "c1", assigned: []kadm.Offset{{Topic: "t", Partition: 2}}},
		{id: "m-big", host: "/127.0.0.2", clientID: "c2", assigned: []kadm.Offset{{Topic: "t", Partition: 0}, {Topic: "t", Partition: 1}}},
	}}
	committed := map[tp]committedOffset{{"t", 0}: {4, 3}, {"t", 2}: {9, 3}, {"old", 0}: {1, -1}}
	ends := map[tp]int64{{"t", 0}: 10, {"t", 1}: 5, {"t", 2}: 9}
	rows := buildOffsetRows(g, committed, ends)
	var got []string
	for _, r := range rows {
		got = append(got, strings.Join([]string{r.topic, dash(int64(r.partition)), dash(r.current), dash(r.logEnd), r.lag(), r.consumer}, " "))
	}
	want := []string{
		"t 0 4 10 6 m-big",
		"t 1 - 5 - m-big",
		"t 2 9 9 0 m-small",
		"old 0 1 - - -",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("rows:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	var out, errOut bytes.Buffer
	writeOffsetRows(&out, &errOut, g, rows, false)
	lines := strings.Split(out.String(), "\n")
	if lines[0] != "" || lines[len(lines)-1] != "" || len(lines) != 7 {
		t.Fatalf("layout %q", out.String())
	}
	header := "GROUP           TOPIC           PARTITION  CURRENT-OFFSET  LOG-END-OFFSET  LAG             CONSUMER-ID     HOST            CLIENT-ID"
	if lines[1] != header {
		t.Errorf("header\n%q\nwant\n%q", lines[1], header)
	}
	if row := "g               t               0          4               10              6               m-big           /127.0.0.2      c2"; lines[2] != row {
		t.Errorf("row\n%q\nwant\n%q", lines[2], row)
	}
	if errOut.Len() != 0 {
		t.Errorf("stderr %q for a Stable group", errOut.String())
	}
	out.Reset()
	writeOffsetRows(&out, &errOut, g, rows, true)
	if l := strings.Split(out.String(), "\n")[1]; !strings.Contains(l, "PARTITION  LEADER-EPOCH    CURRENT-OFFSET") {
		t.Errorf("verbose header %q", l)
	}
	if l := strings.Split(out.String(), "\n")[2]; !strings.Contains(l, "0          3               4") {
		t.Errorf("verbose row %q", l)
	}

	out.Reset()
	errOut.Reset()
	writeOffsetRows(&out, &errOut, describedGroup{id: "gone", state: "Dead"}, nil, false)
	if out.String() != "\nError: Consumer group 'gone' does not exist.\n" || errOut.Len() != 0 {
		t.Errorf("dead: %q / %q", out.String(), errOut.String())
	}
	out.Reset()
	writeOffsetRows(&out, &errOut, describedGroup{id: "idle", state: "Empty"}, []offsetRow{{topic: "t", current: 1, logEnd: 3, leaderEpoch: -1, consumer: "-", host: "-", clientID: "-"}}, false)
	if errOut.String() != "\nConsumer group 'idle' has no active members.\n" || !strings.Contains(out.String(), "\nidle            t               0          1               3               2               -               -               -") {
		t.Errorf("empty: %q / %q", out.String(), errOut.String())
	}
}

func TestMembersAndStateLayout(t *testing.T) {
	g := describedGroup{id: "g", state: "Stable", protocol: "range", epoch: -1, assignmentEpoch: -1,
		coordinator: kadm.BrokerDetail{NodeID: 2, Host: "127.0.0.1", Port: 9092},
		members: []groupMember{
			{id: "m1", host: "/h", clientID: "c", epoch: -1, targetEpoch: -1, assigned: []kadm.Offset{{Topic: "t", Partition: 0}, {Topic: "t", Partition: 3}, {Topic: "a", Partition: 1}}},
			{id: "m2", instanceID: "i-2", host: "/h", clientID: "c", epoch: -1, targetEpoch: -1},
		}}
	var out, errOut bytes.Buffer
	writeMembers(&out, &errOut, g, true)
	lines := strings.Split(out.String(), "\n")
	if len(lines) != 5 || lines[0] != "" {
		t.Fatalf("members %q", out.String())
	}
	for i, want := range []string{
		"GROUP           CONSUMER-ID     GROUP-INSTANCE-ID HOST            CLIENT-ID       #PARTITIONS     CURRENT-EPOCH   CURRENT-ASSIGNMENT   TARGET-EPOCH    TARGET-ASSIGNMENT   ",
		"g               m1                                /h              c               3               -               a:1;t:0,3            -               -                   ",
		"g               m2              i-2               /h              c               0               -               -                    -               -                   ",
	} {
		if lines[i+1] != want {
			t.Errorf("members line %d\n%q\nwant\n%q", i+1, lines[i+1], want)
		}
	}
	out.Reset()
	writeState(&out, &errOut, g, false)
	want := "\nGROUP           COORDINATOR (ID)          ASSIGNMENT-STRATEGY  STATE                #MEMBERS" +
		"\ng               127.0.0.1:9092  (2)       range                Stable               2\n"
	if out.String() != want {
		t.Errorf("state\n%q\nwant\n%q", out.String(), want)
	}
	out.Reset()
	g.epoch, g.assignmentEpoch = 7, 6
	writeState(&out, &errOut, g, true)
	want = "\nGROUP           COORDINATOR (ID)          ASSIGNMENT-STRATEGY  STATE                GROUP-EPOCH     TARGET-ASSIGNMENT-EPOCH   #MEMBERS" +
		"\ng               127.0.0.1:9092  (2)       range                Stable               7               6                         2\n"
	if out.String() != want {
		t.Errorf("state --verbose\n%q\nwant\n%q", out.String(), want)
	}
	out.Reset()
	writeMembers(&out, &errOut, describedGroup{id: "g", state: "Empty"}, false)
	if out.String() != "\nGROUP           CONSUMER-ID     HOST            CLIENT-ID       #PARTITIONS     \n" {
		t.Errorf("empty members %q", out.String())
	}
}

func TestResetPlanOutput(t *testing.T) {
	plans := []groupPlan{
		{group: "busy", refused: "Assignments can only be reset if the group 'busy' is inactive, but the current state is Stable."},
		{group: "g", offsets: map[tp]int64{{"t", 1}: 7, {"t", 0}: 3}},
	}
	var out bytes.Buffer
	writeResetPlan(&out, plans)
	want := "\nError: Assignments can only be reset if the group 'busy' is inactive, but the current state is Stable.\n" +
		"\nGROUP           TOPIC           PARTITION  NEW-OFFSET" +
		"\ng               t               0          3" +
		"\ng               t               1          7\n"
	if out.String() != want {
		t.Errorf("plan\n%q\nwant\n%q", out.String(), want)
	}
	out.Reset()
	writeResetCSV(&out, plans[1:], false)
	if out.String() != "t,0,3\nt,1,7\n\n" {
		t.Errorf("csv %q", out.String())
	}
	out.Reset()
	writeResetCSV(&out, []groupPlan{{group: `a,"b"`, offsets: map[tp]int64{{"t", 0}: 1}}}, true)
	if out.String() != "\"a,\"\"b\"\"\",t,0,1\n\n" {
		t.Errorf("csv with group %q", out.String())
	}
}

// TestGroupsAgainstKfake drives every subcommand against franz-go's fake
// cluster; the three-node raftka run is test/e2e's TestGroupsCLI.
func TestGroupsAgainstKfake(t *testing.T) {
	bs := startKfake(t, kfake.SeedTopics(2, "t"))
	cl, err := kgo.NewClient(kgo.SeedBrokers(bs), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for i := range 10 {
		r := &kgo.Record{Topic: "t", Partition: int32(i % 2), Value: []byte("v")}
		if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	adm := kadm.NewClient(cl)
	offs := kadm.Offsets{}
	offs.Add(kadm.Offset{Topic: "t", Partition: 0, At: 2, LeaderEpoch: -1})
	offs.Add(kadm.Offset{Topic: "t", Partition: 1, At: 5, LeaderEpoch: -1})
	if err := adm.CommitAllOffsets(ctx, "g", offs); err != nil {
		t.Fatal(err)
	}
	if out := mustRun(t, "", "groups", "list", "--bootstrap-server", bs); out != "g\n" {
		t.Errorf("list %q", out)
	}
	out, errOut, err := runCLI(t, "", "groups", "describe", "--bootstrap-server", bs, "--group", "g")
	if err != nil || !strings.Contains(out, "\ng               t               0          2               5               3 ") ||
		!strings.Contains(out, "\ng               t               1          5               5               0 ") ||
		!strings.Contains(errOut, "has no active members") {
		t.Errorf("describe: %v\n%s\n%s", err, out, errOut)
	}
	// topic:p,p keeps its comma (cli's slice flags would split it).
	out = mustRun(t, "", "groups", "reset-offsets", "--bootstrap-server", bs, "--group", "g", "--topic", "t:0,1", "--to-latest")
	if !strings.Contains(out, "\ng               t               0          5") || !strings.Contains(out, "\ng               t               1          5") {
		t.Errorf("dry run %q", out)
	}
	if o, _ := adm.FetchOffsets(ctx, "g"); o["t"][0].At != 2 {
		t.Errorf("dry run moved t-0 to %d", o["t"][0].At)
	}
	mustRun(t, "", "groups", "reset-offsets", "--bootstrap-server", bs, "--group", "g", "--all-topics", "--shift-by", "-1", "--execute")
	if o, _ := adm.FetchOffsets(ctx, "g"); o["t"][0].At != 1 || o["t"][1].At != 4 {
		t.Errorf("execute shift-by -1: %v", o)
	}
	// --export then --from-file puts the plan back.
	csv := mustRun(t, "", "groups", "reset-offsets", "--bootstrap-server", bs, "--group", "g", "--all-topics", "--to-earliest", "--export")
	if csv != "t,0,0\nt,1,0\n\n" {
		t.Errorf("export %q", csv)
	}
	plan := t.TempDir() + "/plan.csv"
	if err := os.WriteFile(plan, []byte("t,0,3\nt,1,99\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	mustRun(t, "", "groups", "reset-offsets", "--bootstrap-server", bs, "--group", "g", "--from-file", plan, "--execute")
	if o, _ := adm.FetchOffsets(ctx, "g"); o["t"][0].At != 3 || o["t"][1].At != 5 {
		t.Errorf("from-file: %v (want 3, and 99 kept to the end 5)", o)
	}
	out = mustRun(t, "", "groups", "delete-offsets", "--bootstrap-server", bs, "--group", "g", "--topic", "t:1")
	if !strings.HasPrefix(out, "Request succeeded for deleting offsets from group g.\n") || !strings.Contains(out, "\nt               1          Successful") {
		t.Errorf("delete-offsets %q", out)
	}
	if out := mustRun(t, "", "groups", "delete", "--bootstrap-server", bs, "--group", "g"); out != "Deletion of requested consumer groups ('g') was successful.\n" {
		t.Errorf("delete %q", out)
	}
	out, _, err = runCLI(t, "", "groups", "describe", "--bootstrap-server", bs, "--group", "g", "--state")
	if err != nil || !strings.Contains(out, "Consumer group 'g' does not exist.") {
		t.Errorf("describe after delete: %v %q", err, out)
	}
}

// TestGroupsConsumerProtocolAgainstKfake describes a KIP-848 group (franz-go
// with ServerSideBalancer uses the consumer protocol when the broker serves
// it, as kfake and Kafka 4 do). Kafka 4.1's DescribeGroups answers such a group Dead with
// GROUP_ID_NOT_FOUND ("Group g is not a classic group."); kfake describes
// it, so its answer is replaced by Kafka's, and the tool must find the
// group through ConsumerGroupDescribe.
func TestGroupsConsumerProtocolAgainstKfake(t *testing.T) {
	c, bs := startKfakeCluster(t, kfake.SeedTopics(2, "t"))
	c.ControlKey(int16(kmsg.DescribeGroups), func(kreq kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		req := kreq.(*kmsg.DescribeGroupsRequest)
		resp := req.ResponseKind().(*kmsg.DescribeGroupsResponse)
		for _, g := range req.Groups {
			if g != "g848" {
				return nil, nil, false
			}
			rg := kmsg.NewDescribeGroupsResponseGroup()
			rg.Group, rg.State, rg.ErrorCode = g, "Dead", kerr.GroupIDNotFound.Code
			rg.ErrorMessage = kmsg.StringPtr("Group " + g + " is not a classic group.")
			resp.Groups = append(resp.Groups, rg)
		}
		return resp, nil, true
	})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	prod, err := kgo.NewClient(kgo.SeedBrokers(bs), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	for i := range 6 {
		if err := prod.ProduceSync(ctx, &kgo.Record{Topic: "t", Partition: int32(i % 2), Value: []byte("v")}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	cons, err := kgo.NewClient(kgo.SeedBrokers(bs), kgo.ConsumerGroup("g848"), kgo.ConsumeTopics("t"), kgo.ClientID("c848"), kgo.ServerSideBalancer(),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	got := 0
	for got < 6 && ctx.Err() == nil {
		got += cons.PollFetches(ctx).NumRecords()
	}
	if err := cons.CommitUncommittedOffsets(ctx); err != nil {
		t.Fatal(err)
	}
	var out, errOut string
	dctx, dcancel := context.WithTimeout(ctx, 10*time.Second)
	defer dcancel()
	for dctx.Err() == nil {
		out, errOut, err = runCLI(t, "", "groups", "describe", "--bootstrap-server", bs, "--group", "g848", "--members", "--verbose")
		// kfake's ConsumerGroupDescribe names topics by id only, so the
		// assignment columns stay empty here; Kafka sends the names too.
		if err == nil && strings.Contains(out, "c848") {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if !strings.Contains(out, "c848") || !strings.Contains(out, "CURRENT-EPOCH") || strings.Contains(out, "does not exist") ||
		!regexp.MustCompile(`c848 +\d+ +[1-9]\d* `).MatchString(out) {
		t.Fatalf("describe --members of a consumer-protocol group: %v\n%s\n%s", err, out, errOut)
	}
	out = mustRun(t, "", "groups", "describe", "--bootstrap-server", bs, "--group", "g848")
	if !strings.Contains(out, "\ng848            t               0          3               3               0               ") {
		t.Errorf("describe offsets:\n%s", out)
	}
	out, _, err = runCLI(t, "", "groups", "reset-offsets", "--bootstrap-server", bs, "--group", "g848", "--all-topics", "--to-earliest", "--execute")
	if err == nil || !strings.Contains(out, "is inactive, but the current state is") {
		t.Errorf("reset of a live consumer-protocol group: %v\n%s", err, out)
	}
}

func TestGroupListLayout(t *testing.T) {
	var out bytes.Buffer
	writeGroupList(&out, []kadm.ListedGroup{{Group: "orders", GroupType: "classic", State: "Stable"}, {Group: "old"}}, true, true)
	want := "GROUP                     TYPE                 STATE               \n" +
		"orders                    classic              Stable              \n" +
		"old                       unknown              Unknown             \n"
	if out.String() != want {
		t.Errorf("list\n%q\nwant\n%q", out.String(), want)
	}
	out.Reset()
	writeGroupList(&out, []kadm.ListedGroup{{Group: "a-very-long-group-name-here", State: "Empty"}}, false, true)
	if want := "GROUP                                 STATE               \na-very-long-group-name-here           Empty               \n"; out.String() != want {
		t.Errorf("list --state\n%q\nwant\n%q", out.String(), want)
	}
}
