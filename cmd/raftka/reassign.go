package main

// `raftka reassign` is kafka-reassign-partitions.sh: generate a move,
// execute it, verify it, cancel it, with the same JSON files, over
// AlterPartitionReassignments and ListPartitionReassignments (KIP-455).
// `reassign drain --broker N` moves every replica off one broker, the
// step before retiring it (UnregisterBroker).

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/raftka/raftka/metadata"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/urfave/cli/v2"
)

func init() {
	file := func(name, usage string) cli.Flag { return &cli.StringFlag{Name: name, Usage: usage} }
	reassignFile := file("reassignment-json-file", `the reassignment, as kafka-reassign-partitions.sh writes it: {"version":1,"partitions":[{"topic":"t","partition":0,"replicas":[2,3,4]}]}`)
	register(&cli.Command{
		Name:  "reassign",
		Usage: "move partition replicas between brokers (like kafka-reassign-partitions.sh)",
		Subcommands: []*cli.Command{
			{
				Name:  "generate",
				Usage: "propose a reassignment of the given topics onto the given brokers (nothing is changed)",
				Flags: []cli.Flag{bootstrapFlag(), requestTimeoutFlag(),
					file("topics-to-move-json-file", `the topics to move: {"version":1,"topics":[{"topic":"t"}]}`),
					&cli.StringFlag{Name: "broker-list", Usage: "comma-separated broker ids to place the replicas on, e.g. 2,3,4"},
					&cli.BoolFlag{Name: "disable-rack-aware", Usage: "ignore broker racks when placing replicas"},
				},
				Action: reassignGenerate,
			},
			{
				Name:  "execute",
				Usage: "start the reassignment in --reassignment-json-file",
				Flags: []cli.Flag{bootstrapFlag(), requestTimeoutFlag(), reassignFile,
					&cli.BoolFlag{Name: "additional", Usage: "start it even while other reassignments are in progress"},
					&cli.Int64Flag{Name: "throttle", Value: -1, Usage: "bytes/s the moving replicas may copy while they catch up, on both sides (leader. and follower.replication.throttled.rate on every broker involved, the topics' leader. and follower.replication.throttled.replicas; verify removes them)"},
					&cli.Int64Flag{Name: "timeout", Value: 10000, Usage: "ms to wait for the replicas named with a log dir to exist so their moves can start"},
				},
				Action: reassignExecute,
			},
			{
				Name:  "verify",
				Usage: "report whether each partition of --reassignment-json-file has reached its replicas (exit status 1 while any is still moving); once none is, remove the throttles",
				Flags: []cli.Flag{bootstrapFlag(), requestTimeoutFlag(), reassignFile,
					&cli.BoolFlag{Name: "preserve-throttles", Usage: "leave the replication throttles in place"},
				},
				Action: reassignVerify,
			},
			{
				Name:   "cancel",
				Usage:  "cancel the ongoing reassignments of the partitions in --reassignment-json-file (they go back to their original replicas)",
				Flags:  []cli.Flag{bootstrapFlag(), requestTimeoutFlag(), reassignFile},
				Action: reassignCancel,
			},
			{
				Name:  "drain",
				Usage: "move every replica off one broker onto the others, and print the reassignment it started",
				Flags: []cli.Flag{bootstrapFlag(), requestTimeoutFlag(),
					&cli.IntFlag{Name: "broker", Value: -1, Usage: "the broker to empty"},
					&cli.StringFlag{Name: "broker-list", Usage: "brokers that may take the replicas (default: every other broker)"},
				},
				Action: reassignDrain,
			},
		},
	})
}

// reassignmentFile is kafka-reassign-partitions.sh's JSON.
type reassignmentFile struct {
	Version    int                 `json:"version"`
	Partitions []reassignmentEntry `json:"partitions"`
}

type reassignmentEntry struct {
	Topic     string   `json:"topic"`
	Partition int32    `json:"partition"`
	Replicas  []int32  `json:"replicas"`
	LogDirs   []string `json:"log_dirs,omitempty"`
}

type topicsToMove struct {
	Version int `json:"version"`
	Topics  []struct {
		Topic string `json:"topic"`
	} `json:"topics"`
}

func readJSONFile(path, flag string, v any) error {
	if path == "" {
		return fmt.Errorf("--%s is required", flag)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("--%s %s: %w", flag, path, err)
	}
	return nil
}

// readReassignment reads and checks a reassignment file as Kafka's
// parsePartitionReassignmentData does: version 1, no partition twice, no
// broker twice in one list, log dirs "any" or absolute paths, as many as
// replicas.
func readReassignment(c *cli.Context) ([]reassignmentEntry, error) {
	var f reassignmentFile
	if err := readJSONFile(c.String("reassignment-json-file"), "reassignment-json-file", &f); err != nil {
		return nil, err
	}
	if f.Version != 1 {
		return nil, fmt.Errorf("reassignment file: version %d; only version 1 is known", f.Version)
	}
	if len(f.Partitions) == 0 {
		return nil, errors.New("reassignment file: no partitions")
	}
	seen := map[string]bool{}
	for _, e := range f.Partitions {
		name := fmt.Sprintf("%s-%d", e.Topic, e.Partition)
		if seen[name] {
			return nil, fmt.Errorf("reassignment file: duplicate partition %s", name)
		}
		seen[name] = true
		if len(e.Replicas) == 0 {
			return nil, fmt.Errorf("reassignment file: %s has an empty replica list", name)
		}
		for i, r := range e.Replicas {
			if slices.Contains(e.Replicas[:i], r) {
				return nil, fmt.Errorf("reassignment file: %s lists broker %d twice", name, r)
			}
		}
		if e.LogDirs != nil && len(e.LogDirs) != len(e.Replicas) {
			return nil, fmt.Errorf("reassignment file: %s has %d log dirs for %d replicas", name, len(e.LogDirs), len(e.Replicas))
		}
		for _, d := range e.LogDirs {
			if d != "any" && !filepath.IsAbs(d) {
				return nil, fmt.Errorf("reassignment file: %s names log dir %q; a log dir is \"any\" or an absolute path", name, d)
			}
		}
	}
	return f.Partitions, nil
}

func writeReassignment(w io.Writer, es []reassignmentEntry) error {
	slices.SortFunc(es, func(a, b reassignmentEntry) int {
		return cmp.Or(strings.Compare(a.Topic, b.Topic), cmp.Compare(a.Partition, b.Partition))
	})
	for i := range es {
		if es[i].LogDirs == nil {
			es[i].LogDirs = slices.Repeat([]string{"any"}, len(es[i].Replicas))
		}
	}
	b, err := json.Marshal(struct {
		Version    int                 `json:"version"`
		Partitions []reassignmentEntry `json:"partitions"`
	}{1, es})
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(w, "%s\n", b)
	return err
}

func parseBrokerList(s string) ([]int32, error) {
	var out []int32
	for _, f := range strings.Split(s, ",") {
		id, err := strconv.ParseInt(strings.TrimSpace(f), 10, 32)
		if err != nil || id < 0 {
			return nil, fmt.Errorf("--broker-list %q: %q is not a broker id", s, f)
		}
		if slices.Contains(out, int32(id)) {
			return nil, fmt.Errorf("--broker-list %q: broker %d twice", s, id)
		}
		out = append(out, int32(id))
	}
	return out, nil
}

// currentAssignment reads the replicas of every partition of topics (all
// topics when nil) from Metadata.
func currentAssignment(ctx context.Context, adm *kadm.Client, topics []string) (kadm.Metadata, []reassignmentEntry, error) {
	md, err := adm.Metadata(ctx, topics...)
	if err != nil {
		return md, nil, err
	}
	var out []reassignmentEntry
	for _, t := range md.Topics {
		if t.Err != nil {
			return md, nil, fmt.Errorf("topic %s: %w", t.Topic, t.Err)
		}
		for _, p := range t.Partitions {
			out = append(out, reassignmentEntry{Topic: t.Topic, Partition: p.Partition, Replicas: slices.Clone(p.Replicas)})
		}
	}
	return md, out, nil
}

func reassignGenerate(c *cli.Context) error {
	var move topicsToMove
	if err := readJSONFile(c.String("topics-to-move-json-file"), "topics-to-move-json-file", &move); err != nil {
		return err
	}
	if c.String("broker-list") == "" {
		return errors.New("reassign generate: --broker-list is required")
	}
	brokers, err := parseBrokerList(c.String("broker-list"))
	if err != nil {
		return err
	}
	var topics []string
	for _, t := range move.Topics {
		topics = append(topics, t.Topic)
	}
	if len(topics) == 0 {
		return errors.New("reassign generate: no topics in --topics-to-move-json-file")
	}
	return adminCall(c, func(ctx context.Context, cl *kgo.Client) error {
		md, cur, err := currentAssignment(ctx, kadm.NewClient(cl), topics)
		if err != nil {
			return requestError(c, "reassign generate", err)
		}
		var regs []metadata.BrokerRegistration
		for _, id := range brokers {
			i := slices.IndexFunc(md.Brokers, func(b kadm.BrokerDetail) bool { return b.NodeID == id })
			if i < 0 {
				return fmt.Errorf("reassign generate: broker %d is not in the cluster", id)
			}
			reg := metadata.BrokerRegistration{ID: id}
			if md.Brokers[i].Rack != nil && !c.Bool("disable-rack-aware") {
				reg.Rack = *md.Brokers[i].Rack
			}
			regs = append(regs, reg)
		}
		var proposed []reassignmentEntry
		for _, name := range topics {
			t := md.Topics[name]
			n := len(t.Partitions)
			if n == 0 {
				continue
			}
			rf := len(t.Partitions[0].Replicas)
			// Kafka draws the start and shift at random per topic so
			// that leaders of different topics spread.
			placed, err := metadata.PlaceReplicas(regs, metadata.Placement{
				Partitions: int32(n), ReplicationFactor: int16(rf),
				StartIndex: rand.IntN(len(regs)), Shift: rand.IntN(len(regs)),
			})
			if err != nil {
				return fmt.Errorf("reassign generate: topic %s: %w", name, err)
			}
			for p, reps := range placed {
				proposed = append(proposed, reassignmentEntry{Topic: name, Partition: int32(p), Replicas: reps})
			}
		}
		w := c.App.Writer
		fmt.Fprintln(w, "Current partition replica assignment")
		if err := writeReassignment(w, cur); err != nil {
			return err
		}
		fmt.Fprintln(w, "\nProposed partition reassignment configuration")
		return writeReassignment(w, proposed)
	})
}

func reassignExecute(c *cli.Context) error {
	want, err := readReassignment(c)
	if err != nil {
		return err
	}
	return adminCall(c, func(ctx context.Context, cl *kgo.Client) error {
		adm := kadm.NewClient(cl)
		if !c.Bool("additional") {
			n, err := countReassignments(ctx, cl)
			if err != nil {
				return requestError(c, "reassign execute", err)
			}
			if n > 0 {
				return errors.New("reassign execute: cannot execute because there is an existing partition assignment; use --additional to start this one in addition to it")
			}
		}
		topics := map[string]bool{}
		for _, e := range want {
			topics[e.Topic] = true
		}
		_, cur, err := currentAssignment(ctx, adm, slices.Sorted(maps.Keys(topics)))
		if err != nil {
			return requestError(c, "reassign execute", err)
		}
		var rollback []reassignmentEntry
		for _, e := range cur {
			if slices.ContainsFunc(want, func(w reassignmentEntry) bool { return w.Topic == e.Topic && w.Partition == e.Partition }) {
				rollback = append(rollback, e)
			}
		}
		w := c.App.Writer
		fmt.Fprintln(w, "Current partition replica assignment")
		fmt.Fprintln(w)
		if err := writeReassignment(w, rollback); err != nil {
			return err
		}
		fmt.Fprintln(w, "\nSave this to use as the --reassignment-json-file option during rollback")
		if rate := c.Int64("throttle"); rate >= 0 {
			if err := setThrottles(ctx, adm, rollback, want, rate); err != nil {
				return requestError(c, "reassign execute", err)
			}
			fmt.Fprintln(w, "Warning: You must run --verify periodically, until the reassignment completes, to ensure the throttle is removed.")
			fmt.Fprintf(w, "The inter-broker throttle limit was set to %d B/s\n", rate)
		}
		req := kadm.AlterPartitionAssignmentsReq{}
		for _, e := range want {
			req.Assign(e.Topic, e.Partition, e.Replicas)
		}
		if err := alterAssignments(c, ctx, adm, req, "Successfully started partition reassignments for", "start"); err != nil {
			return err
		}
		return startLogDirMoves(c, ctx, adm, want, time.Duration(c.Int64("timeout"))*time.Millisecond)
	})
}

// replicaDir is one replica the file puts in a named log dir.
type replicaDir struct {
	topic     string
	partition int32
	broker    int32
	dir       string
}

func (r replicaDir) String() string { return fmt.Sprintf("%s-%d-%d", r.topic, r.partition, r.broker) }

func replicaDirs(es []reassignmentEntry) []replicaDir {
	var out []replicaDir
	for _, e := range es {
		for i, d := range e.LogDirs {
			if d != "any" {
				out = append(out, replicaDir{e.Topic, e.Partition, e.Replicas[i], d})
			}
		}
	}
	return out
}

// startLogDirMoves sends AlterReplicaLogDirs for every replica the file
// names a log dir for, as kafka-reassign-partitions.sh does after the
// reassignment: a replica that does not exist yet (REPLICA_NOT_AVAILABLE,
// a new replica still being created) is asked again every 100 ms until
// timeout.
func startLogDirMoves(c *cli.Context, ctx context.Context, adm *kadm.Client, es []reassignmentEntry, timeout time.Duration) error {
	pending := replicaDirs(es)
	if len(pending) == 0 {
		return nil
	}
	deadline := time.Now().Add(timeout)
	var started []string
	for {
		var again []replicaDir
		byBroker := map[int32]kadm.AlterReplicaLogDirsReq{}
		for _, r := range pending {
			req := byBroker[r.broker]
			req.Add(r.dir, kadm.TopicsSet{r.topic: {r.partition: {}}})
			byBroker[r.broker] = req
		}
		for _, b := range slices.Sorted(maps.Keys(byBroker)) {
			resps, err := adm.AlterBrokerReplicaLogDirs(ctx, b, byBroker[b])
			if err != nil {
				return requestError(c, "reassign execute: alter replica log dirs", err)
			}
			var failed error
			resps.Each(func(r kadm.AlterReplicaLogDirsResponse) {
				rd := replicaDir{r.Topic, r.Partition, r.Broker, r.Dir}
				switch {
				case errors.Is(r.Err, kerr.ReplicaNotAvailable):
					again = append(again, rd)
				case r.Err != nil && failed == nil:
					failed = fmt.Errorf("reassign execute: moving replica %s to %s: %w", rd, r.Dir, r.Err)
				case r.Err == nil:
					started = append(started, rd.String())
				}
			})
			if failed != nil {
				return failed
			}
		}
		if len(again) == 0 {
			break
		}
		if time.Now().After(deadline) {
			names := make([]string, len(again))
			for i, r := range again {
				names[i] = r.String()
			}
			return fmt.Errorf("reassign execute: timed out before log directory move for %s could be started", strings.Join(names, ","))
		}
		pending = again
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
	slices.Sort(started)
	s := "s"
	if len(started) == 1 {
		s = ""
	}
	_, err := fmt.Fprintf(c.App.Writer, "Successfully started log directory move%s for: %s\n", s, strings.Join(started, ","))
	return err
}

// verifyLogDirs reports, as kafka-reassign-partitions.sh --verify does,
// whether each replica the file names a log dir for is there; it returns
// how many are still moving and how many are elsewhere.
func verifyLogDirs(ctx context.Context, adm *kadm.Client, w io.Writer, es []reassignmentEntry) (moving, differ int, err error) {
	rds := replicaDirs(es)
	if len(rds) == 0 {
		return 0, 0, nil
	}
	type key struct {
		topic     string
		partition int32
	}
	brokers := map[int32]bool{}
	for _, r := range rds {
		brokers[r.broker] = true
	}
	cur := map[int32]map[key]string{}
	future := map[int32]map[key]string{}
	for b := range brokers {
		dirs, err := adm.DescribeBrokerLogDirs(ctx, b, nil)
		if err != nil {
			return 0, 0, err
		}
		cur[b], future[b] = map[key]string{}, map[key]string{}
		for _, d := range dirs {
			d.Topics.Each(func(p kadm.DescribedLogDirPartition) {
				if p.IsFuture {
					future[b][key{p.Topic, p.Partition}] = d.Dir
				} else {
					cur[b][key{p.Topic, p.Partition}] = d.Dir
				}
			})
		}
	}
	fmt.Fprintln(w, "\nReassignment of replicas to log dirs:")
	for _, r := range rds {
		k := key{r.topic, r.partition}
		c, ok := cur[r.broker][k]
		switch {
		case !ok:
			differ++
			fmt.Fprintf(w, "Partition %s-%d is not found in any live log dir on broker %d. There is likely an offline log directory on the broker.\n", r.topic, r.partition, r.broker)
		case c == r.dir:
			fmt.Fprintf(w, "Reassignment of replica %s completed successfully.\n", r)
		case future[r.broker][k] == r.dir:
			moving++
			fmt.Fprintf(w, "Reassignment of replica %s is still in progress.\n", r)
		default:
			differ++
			fmt.Fprintf(w, "Partition %s-%d on broker %d is not being moved from log dir %s to %s.\n", r.topic, r.partition, r.broker, c, r.dir)
		}
	}
	return moving, differ, nil
}

// countReassignments counts every ongoing reassignment: a
// ListPartitionReassignments with null topics, which kadm does not send
// (it answers an empty set itself).
func countReassignments(ctx context.Context, cl *kgo.Client) (int, error) {
	req := kmsg.NewPtrListPartitionReassignmentsRequest()
	req.TimeoutMillis = 30000
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return 0, err
	}
	if err := responseError(resp.ErrorCode, resp.ErrorMessage); err != nil {
		return 0, err
	}
	n := 0
	for _, t := range resp.Topics {
		n += len(t.Partitions)
	}
	return n, nil
}

// alterAssignments sends req and reports per partition, failing when any
// partition was refused.
func alterAssignments(c *cli.Context, ctx context.Context, adm *kadm.Client, req kadm.AlterPartitionAssignmentsReq, okLine, verb string) error {
	resp, err := adm.AlterPartitionAssignments(ctx, req)
	if err != nil {
		return requestError(c, "reassign "+verb, err)
	}
	var done, failed []string
	for _, r := range resp.Sorted() {
		name := fmt.Sprintf("%s-%d", r.Topic, r.Partition)
		if r.Err != nil {
			msg := r.Err.Error()
			if r.ErrMessage != "" {
				msg += ": " + r.ErrMessage
			}
			failed = append(failed, name+": "+msg)
			continue
		}
		done = append(done, name)
	}
	w := c.App.Writer
	if len(done) > 0 {
		fmt.Fprintf(w, "%s %s\n", okLine, strings.Join(done, ","))
	}
	if len(failed) > 0 {
		fmt.Fprintf(w, "Error reassigning partitions:\n%s\n", strings.Join(failed, "\n"))
		return fmt.Errorf("reassign %s: %d partitions refused", verb, len(failed))
	}
	return nil
}

func reassignVerify(c *cli.Context) error {
	want, err := readReassignment(c)
	if err != nil {
		return err
	}
	return adminCall(c, func(ctx context.Context, cl *kgo.Client) error {
		adm := kadm.NewClient(cl)
		set := kadm.TopicsSet{}
		topics := map[string]bool{}
		for _, e := range want {
			set.Add(e.Topic, e.Partition)
			topics[e.Topic] = true
		}
		ongoing, err := adm.ListPartitionReassignments(ctx, set)
		if err != nil {
			return requestError(c, "reassign verify", err)
		}
		_, cur, err := currentAssignment(ctx, adm, slices.Sorted(maps.Keys(topics)))
		if err != nil {
			return requestError(c, "reassign verify", err)
		}
		w := c.App.Writer
		fmt.Fprintln(w, "Status of partition reassignment:")
		moving, differ := 0, 0
		slices.SortFunc(want, func(a, b reassignmentEntry) int {
			return cmp.Or(strings.Compare(a.Topic, b.Topic), cmp.Compare(a.Partition, b.Partition))
		})
		for _, e := range want {
			name := fmt.Sprintf("%s-%d", e.Topic, e.Partition)
			if _, ok := ongoing[e.Topic][e.Partition]; ok {
				moving++
				fmt.Fprintf(w, "Reassignment of partition %s is still in progress.\n", name)
				continue
			}
			i := slices.IndexFunc(cur, func(p reassignmentEntry) bool { return p.Topic == e.Topic && p.Partition == e.Partition })
			switch {
			case i < 0:
				differ++
				fmt.Fprintf(w, "Partition %s does not exist.\n", name)
			case !slices.Equal(cur[i].Replicas, e.Replicas):
				differ++
				fmt.Fprintf(w, "There is no active reassignment of partition %s, but replica set is %v rather than %v.\n", name, cur[i].Replicas, e.Replicas)
			default:
				fmt.Fprintf(w, "Reassignment of partition %s is completed.\n", name)
			}
		}
		dm, dd, err := verifyLogDirs(ctx, adm, w, want)
		if err != nil {
			return requestError(c, "reassign verify", err)
		}
		moving, differ = moving+dm, differ+dd
		if moving > 0 {
			return cli.Exit("", 1)
		}
		if !c.Bool("preserve-throttles") {
			if err := clearThrottles(ctx, adm, w, slices.Sorted(maps.Keys(topics))); err != nil {
				return requestError(c, "reassign verify", err)
			}
		}
		if differ > 0 {
			return fmt.Errorf("reassign verify: %d partitions are not at the requested replicas", differ)
		}
		return nil
	})
}

func reassignCancel(c *cli.Context) error {
	want, err := readReassignment(c)
	if err != nil {
		return err
	}
	return adminCall(c, func(ctx context.Context, cl *kgo.Client) error {
		req := kadm.AlterPartitionAssignmentsReq{}
		for _, e := range want {
			req.CancelAssign(e.Topic, e.Partition)
		}
		return alterAssignments(c, ctx, kadm.NewClient(cl), req, "Successfully cancelled partition reassignments for:", "cancel")
	})
}

// drainPlan replaces broker in every replica list that holds it with the
// target broker that has the fewest replicas so far (ties to the lowest
// id), keeping the position, so a drained preferred leader's partitions
// get a new preferred leader and the load stays even. Targets already in a
// list are skipped; a partition with no free target is an error.
func drainPlan(cur []reassignmentEntry, broker int32, targets []int32) ([]reassignmentEntry, error) {
	load := map[int32]int{}
	for _, e := range cur {
		for _, r := range e.Replicas {
			load[r]++
		}
	}
	var plan []reassignmentEntry
	slices.SortFunc(cur, func(a, b reassignmentEntry) int {
		return cmp.Or(strings.Compare(a.Topic, b.Topic), cmp.Compare(a.Partition, b.Partition))
	})
	for _, e := range cur {
		i := slices.Index(e.Replicas, broker)
		if i < 0 {
			continue
		}
		best := int32(-1)
		for _, t := range targets {
			if t == broker || slices.Contains(e.Replicas, t) {
				continue
			}
			if best < 0 || load[t] < load[best] || (load[t] == load[best] && t < best) {
				best = t
			}
		}
		if best < 0 {
			return nil, fmt.Errorf("no broker left to take %s-%d's replica on %d (replicas %v)", e.Topic, e.Partition, broker, e.Replicas)
		}
		reps := slices.Clone(e.Replicas)
		reps[i] = best
		load[best]++
		load[broker]--
		plan = append(plan, reassignmentEntry{Topic: e.Topic, Partition: e.Partition, Replicas: reps})
	}
	return plan, nil
}

func reassignDrain(c *cli.Context) error {
	broker := c.Int("broker")
	if broker < 0 {
		return errors.New("reassign drain: --broker is required")
	}
	return adminCall(c, func(ctx context.Context, cl *kgo.Client) error {
		adm := kadm.NewClient(cl)
		md, cur, err := currentAssignment(ctx, adm, nil)
		if err != nil {
			return requestError(c, "reassign drain", err)
		}
		var targets []int32
		if s := c.String("broker-list"); s != "" {
			if targets, err = parseBrokerList(s); err != nil {
				return err
			}
		} else {
			for _, b := range md.Brokers {
				if b.NodeID != int32(broker) {
					targets = append(targets, b.NodeID)
				}
			}
		}
		plan, err := drainPlan(cur, int32(broker), targets)
		if err != nil {
			return fmt.Errorf("reassign drain: %w", err)
		}
		w := c.App.Writer
		if len(plan) == 0 {
			fmt.Fprintf(w, "Broker %d holds no replicas.\n", broker)
			return nil
		}
		fmt.Fprintln(w, "Reassignment (use it with reassign verify or cancel)")
		if err := writeReassignment(w, plan); err != nil {
			return err
		}
		req := kadm.AlterPartitionAssignmentsReq{}
		for _, e := range plan {
			req.Assign(e.Topic, e.Partition, e.Replicas)
		}
		return alterAssignments(c, ctx, adm, req, "Successfully started partition reassignments for", "drain")
	})
}

// throttlePlan is what kafka-reassign-partitions.sh --throttle sets for
// the partitions that move: per topic, the follower side's list (the
// replicas being added, "partition:broker": the target's brokers not in
// the current replicas) and the leader side's (the current replicas, one
// of which leads and sends the copies), and the brokers that get both
// rates (every current and target replica of a moving partition).
func throttlePlan(cur, want []reassignmentEntry) (followers, leaders map[string]string, brokers []int32) {
	perTopic := map[string][]string{}
	leaderTopic := map[string][]string{}
	set := map[int32]bool{}
	for _, e := range want {
		i := slices.IndexFunc(cur, func(c reassignmentEntry) bool { return c.Topic == e.Topic && c.Partition == e.Partition })
		var current []int32
		if i >= 0 {
			current = cur[i].Replicas
		}
		if slices.Equal(current, e.Replicas) {
			continue
		}
		for _, b := range e.Replicas {
			set[b] = true
			if slices.Contains(current, b) {
				continue
			}
			perTopic[e.Topic] = append(perTopic[e.Topic], fmt.Sprintf("%d:%d", e.Partition, b))
		}
		for _, b := range current {
			set[b] = true
			leaderTopic[e.Topic] = append(leaderTopic[e.Topic], fmt.Sprintf("%d:%d", e.Partition, b))
		}
	}
	join := func(m map[string][]string) map[string]string {
		out := map[string]string{}
		for t, l := range m {
			slices.Sort(l)
			out[t] = strings.Join(slices.Compact(l), ",")
		}
		return out
	}
	return join(perTopic), join(leaderTopic), slices.Sorted(maps.Keys(set))
}

// throttleKeys are the broker rates and topic lists a throttled
// reassignment sets and verify clears.
var (
	throttleRateKeys = []string{"leader.replication.throttled.rate", "follower.replication.throttled.rate"}
	throttleListKeys = []string{"leader.replication.throttled.replicas", "follower.replication.throttled.replicas"}
)

func setThrottles(ctx context.Context, adm *kadm.Client, cur, want []reassignmentEntry, rate int64) error {
	followers, leaders, brokers := throttlePlan(cur, want)
	topics := map[string]bool{}
	for t := range followers {
		topics[t] = true
	}
	for t := range leaders {
		topics[t] = true
	}
	for _, t := range slices.Sorted(maps.Keys(topics)) {
		var set []kadm.AlterConfig
		if v, ok := leaders[t]; ok {
			set = append(set, kadm.AlterConfig{Op: kadm.SetConfig, Name: "leader.replication.throttled.replicas", Value: &v})
		}
		if v, ok := followers[t]; ok {
			set = append(set, kadm.AlterConfig{Op: kadm.SetConfig, Name: "follower.replication.throttled.replicas", Value: &v})
		}
		resp, err := adm.AlterTopicConfigs(ctx, set, t)
		if err := configsErr(resp, err); err != nil {
			return fmt.Errorf("throttling topic %s: %w", t, err)
		}
	}
	rs := strconv.FormatInt(rate, 10)
	var set []kadm.AlterConfig
	for _, k := range throttleRateKeys {
		set = append(set, kadm.AlterConfig{Op: kadm.SetConfig, Name: k, Value: &rs})
	}
	for _, b := range brokers {
		resp, err := adm.AlterBrokerConfigs(ctx, set, b)
		if err := configsErr(resp, err); err != nil {
			return fmt.Errorf("throttling broker %d: %w", b, err)
		}
	}
	return nil
}

// clearThrottles removes the throttled-replica lists from the topics and
// the throttle rate from every broker, as kafka-reassign-partitions.sh
// --verify does once nothing is moving.
func clearThrottles(ctx context.Context, adm *kadm.Client, w io.Writer, topics []string) error {
	meta, err := adm.BrokerMetadata(ctx)
	if err != nil {
		return err
	}
	var ids []string
	var del []kadm.AlterConfig
	for _, k := range throttleRateKeys {
		del = append(del, kadm.AlterConfig{Op: kadm.DeleteConfig, Name: k})
	}
	for _, b := range meta.Brokers {
		resp, err := adm.AlterBrokerConfigs(ctx, del, b.NodeID)
		if err := configsErr(resp, err); err != nil {
			return fmt.Errorf("clearing the throttle of broker %d: %w", b.NodeID, err)
		}
		ids = append(ids, strconv.Itoa(int(b.NodeID)))
	}
	fmt.Fprintf(w, "Clearing broker-level throttles on brokers %s\n", strings.Join(ids, ","))
	var tdel []kadm.AlterConfig
	for _, k := range throttleListKeys {
		tdel = append(tdel, kadm.AlterConfig{Op: kadm.DeleteConfig, Name: k})
	}
	for _, t := range topics {
		resp, err := adm.AlterTopicConfigs(ctx, tdel, t)
		if err := configsErr(resp, err); err != nil {
			return fmt.Errorf("clearing the throttle of topic %s: %w", t, err)
		}
		fmt.Fprintf(w, "Clearing topic-level throttles on topic %s\n", t)
	}
	return nil
}

func configsErr(resp kadm.AlterConfigsResponses, err error) error {
	if err != nil {
		return err
	}
	for _, r := range resp {
		if r.Err != nil {
			if r.ErrMessage != "" {
				return fmt.Errorf("%w: %s", r.Err, r.ErrMessage)
			}
			return r.Err
		}
	}
	return nil
}
