package main

// `raftka groups` is kafka-consumer-groups.sh over kadm: list, describe
// (offsets and lag, members, state), reset-offsets, delete and
// delete-offsets, with Kafka's option names, output columns and messages, so
// an operator's scripts and habits carry over. It speaks plain Kafka
// requests (ListGroups, DescribeGroups, OffsetFetch, ListOffsets,
// OffsetCommit, DeleteGroups, OffsetDelete) and works against any broker.
//
// Where Kafka's tool prints an error and still exits 0 (a group that is
// not inactive for reset-offsets, a failed deletion), this one prints the
// same text and exits non-zero: a script must be able to tell that a reset
// it asked for did not happen.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/urfave/cli/v2"
)

func init() {
	groupFlag := func() cli.Flag {
		return &pairsFlag{Name: "group", Raw: true, Usage: "consumer group id (repeatable)"}
	}
	allGroups := func() cli.Flag {
		return &cli.BoolFlag{Name: "all-groups", Usage: "every consumer group of the cluster"}
	}
	topicFlag := func(usage string) cli.Flag {
		return &pairsFlag{Name: "topic", Raw: true, Usage: usage}
	}
	register(&cli.Command{
		Name:  "groups",
		Usage: "list, describe, reset offsets of and delete consumer groups (like kafka-consumer-groups.sh)",
		Subcommands: []*cli.Command{
			{
				Name:  "list",
				Usage: "list consumer groups",
				Flags: []cli.Flag{
					bootstrapFlag(), requestTimeoutFlag(),
					&cli.StringFlag{Name: "state", Usage: "only groups in these states (comma separated, case-insensitive); adds a STATE column. '' shows every state"},
					&cli.StringFlag{Name: "type", Usage: "only groups of these types (classic, consumer; comma separated); adds a TYPE column. '' shows every type"},
				},
				Action: groupsList,
			},
			{
				Name:  "describe",
				Usage: "show a group's committed offsets and lag (default), its members (--members) or its state (--state)",
				Flags: []cli.Flag{
					bootstrapFlag(), requestTimeoutFlag(), groupFlag(), allGroups(),
					&cli.BoolFlag{Name: "offsets", Usage: "committed offsets, log end offsets and lag per partition (the default)"},
					&cli.BoolFlag{Name: "members", Usage: "the group's members and how many partitions each has"},
					&cli.BoolFlag{Name: "state", Usage: "the group's coordinator, assignment strategy, state and member count"},
					&cli.BoolFlag{Name: "verbose", Usage: "with --offsets: the leader epoch; with --members: epochs and assignments; with --state: the group epochs"},
				},
				Action: groupsDescribe,
			},
			{
				Name:  "reset-offsets",
				Usage: "move an inactive group's committed offsets (a dry run unless --execute)",
				Flags: []cli.Flag{
					bootstrapFlag(), requestTimeoutFlag(), groupFlag(), allGroups(),
					topicFlag("topic, or topic:p1,p2 for some partitions (repeatable)"),
					&cli.BoolFlag{Name: "all-topics", Usage: "every partition the group has committed an offset for"},
					&cli.BoolFlag{Name: "to-earliest", Usage: "to the log start offset"},
					&cli.BoolFlag{Name: "to-latest", Usage: "to the log end offset"},
					&cli.BoolFlag{Name: "to-current", Usage: "to the committed offset (the log end offset where none)"},
					&cli.Int64Flag{Name: "to-offset", Usage: "to this offset (kept within the log's start and end)"},
					&cli.Int64Flag{Name: "shift-by", Usage: "the committed offset plus this (negative moves back), kept within the log"},
					&cli.StringFlag{Name: "to-datetime", Usage: "to the first offset at or after YYYY-MM-DDTHH:mm:SS.sss[Z|+hh:mm] (UTC without a zone)"},
					&cli.StringFlag{Name: "by-duration", Usage: "to the first offset at or after now minus an ISO-8601 duration (PnDTnHnMnS)"},
					&cli.StringFlag{Name: "from-file", Usage: "to the offsets of a CSV plan, as --export writes it (kept within the log)"},
					&cli.BoolFlag{Name: "dry-run", Usage: "only show the new offsets (the default)"},
					&cli.BoolFlag{Name: "execute", Usage: "commit the new offsets"},
					&cli.BoolFlag{Name: "export", Usage: "print the plan as CSV (topic,partition,offset; group first for several groups)"},
				},
				Action: groupsResetOffsets,
			},
			{
				Name:  "delete",
				Usage: "delete empty groups and their committed offsets",
				Flags: []cli.Flag{
					bootstrapFlag(), requestTimeoutFlag(), groupFlag(), allGroups(),
				},
				Action: groupsDelete,
			},
			{
				Name:  "delete-offsets",
				Usage: "delete a group's committed offsets of some topics",
				Flags: []cli.Flag{
					bootstrapFlag(), requestTimeoutFlag(),
					&cli.StringFlag{Name: "group", Usage: "consumer group id"},
					topicFlag("topic, or topic:p1,p2 for some partitions (repeatable)"),
				},
				Action: groupsDeleteOffsets,
			},
		},
	})
}

// adminGroups runs fn with a kadm client and the command's deadline.
func adminGroups(c *cli.Context, fn func(ctx context.Context, adm *kadm.Client) error) error {
	return adminCall(c, func(ctx context.Context, cl *kgo.Client) error {
		return fn(ctx, kadm.NewClient(cl))
	})
}

// consumerGroupStates are the states kafka-consumer-groups.sh accepts for
// --state, as Kafka spells them (GroupState.toString).
var consumerGroupStates = []string{"PreparingRebalance", "CompletingRebalance", "Stable", "Dead", "Empty", "Assigning", "Reconciling"}

// parseStates reads a --state list case-insensitively into Kafka's
// spelling; a state Kafka does not have is refused as Kafka refuses it.
func parseStates(s string) ([]string, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	var out []string
	for _, part := range strings.Split(s, ",") {
		i := slices.IndexFunc(consumerGroupStates, func(st string) bool { return strings.EqualFold(st, strings.TrimSpace(part)) })
		if i < 0 {
			return nil, fmt.Errorf("invalid state list '%s'. Valid states are: %s", s, strings.Join(consumerGroupStates, ", "))
		}
		if !slices.Contains(out, consumerGroupStates[i]) {
			out = append(out, consumerGroupStates[i])
		}
	}
	return out, nil
}

// parseTypes reads a --type list: Kafka's tool takes classic and consumer.
func parseTypes(s string) ([]string, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	var out []string
	for _, part := range strings.Split(strings.ToLower(s), ",") {
		part = strings.TrimSpace(part)
		if part != "classic" && part != "consumer" {
			return nil, fmt.Errorf("invalid types list '%s'. Valid types are: classic, consumer", s)
		}
		if !slices.Contains(out, part) {
			out = append(out, part)
		}
	}
	return out, nil
}

// isConsumerGroup keeps what Kafka's ListGroupsOptions.forConsumerGroups
// keeps: groups of the consumer protocol, and those with no protocol type
// (only committed offsets: a standalone consumer's, or admin-written).
func isConsumerGroup(g kadm.ListedGroup) bool {
	return g.ProtocolType == "consumer" || g.ProtocolType == ""
}

func listConsumerGroups(ctx context.Context, adm *kadm.Client, types, states []string) ([]kadm.ListedGroup, error) {
	listed, err := adm.ListGroupsByType(ctx, types, states...)
	if err != nil {
		return nil, err
	}
	var out []kadm.ListedGroup
	for _, g := range listed.Sorted() {
		if isConsumerGroup(g) {
			out = append(out, g)
		}
	}
	return out, nil
}

func groupsList(c *cli.Context) error {
	states, err := parseStates(c.String("state"))
	if err != nil {
		return err
	}
	types, err := parseTypes(c.String("type"))
	if err != nil {
		return err
	}
	return adminGroups(c, func(ctx context.Context, adm *kadm.Client) error {
		groups, err := listConsumerGroups(ctx, adm, types, states)
		if err != nil {
			return requestError(c, "list groups", err)
		}
		if !c.IsSet("state") && !c.IsSet("type") {
			for _, g := range groups {
				fmt.Fprintln(c.App.Writer, g.Group)
			}
			return nil
		}
		writeGroupList(c.App.Writer, groups, c.IsSet("type"), c.IsSet("state"))
		return nil
	})
}

// writeGroupList is Kafka's printGroupInfo: the group column at least 15
// wide plus 10, the others 20.
func writeGroupList(w io.Writer, groups []kadm.ListedGroup, withType, withState bool) {
	width := 15
	for _, g := range groups {
		width = max(width, len(g.Group))
	}
	width += 10
	line := func(group, typ, state string) {
		s := fmt.Sprintf("%-*s", width, group)
		if withType {
			s += fmt.Sprintf(" %-20s", typ)
		}
		if withState {
			s += fmt.Sprintf(" %-20s", state)
		}
		fmt.Fprintln(w, s)
	}
	line("GROUP", "TYPE", "STATE")
	for _, g := range groups {
		typ, state := g.GroupType, g.State
		if typ == "" {
			typ = "unknown" // GroupType.UNKNOWN as Kafka prints it
		}
		if state == "" {
			state = "Unknown"
		}
		line(g.Group, typ, state)
	}
}

// groupIDs is the --group / --all-groups choice every action but list makes.
func groupIDs(ctx context.Context, c *cli.Context, adm *kadm.Client) ([]string, error) {
	named := valuesOf(c, "group")
	if c.Bool("all-groups") {
		if len(named) > 0 {
			return nil, errors.New("--group and --all-groups cannot be used together")
		}
		groups, err := listConsumerGroups(ctx, adm, nil, nil)
		if err != nil {
			return nil, requestError(c, "list groups", err)
		}
		ids := make([]string, 0, len(groups))
		for _, g := range groups {
			ids = append(ids, g.Group)
		}
		return ids, nil
	}
	if len(named) == 0 {
		return nil, fmt.Errorf("%s: --group or --all-groups is required", c.Command.FullName())
	}
	return named, nil
}

// describedGroup is what every describe view needs of one group.
type describedGroup struct {
	id string
	// The consumer protocol's epochs; -1 for a classic group.
	epoch, assignmentEpoch int32
	state                  string // Kafka's spelling; "Dead" for a group nobody knows
	protocol               string
	coordinator            kadm.BrokerDetail
	members                []groupMember
}

type groupMember struct {
	id, instanceID, host, clientID string
	assigned                       []kadm.Offset // Topic and Partition only, sorted
	// Consumer-protocol (KIP-848) members only: epochs and the target.
	epoch, targetEpoch int32 // -1: none (a classic member)
	target             []kadm.Offset
}

// describeGroups describes ids; a group the broker does not know
// (GROUP_ID_NOT_FOUND) is Dead, as Kafka's admin client reports it.
func describeGroups(ctx context.Context, adm *kadm.Client, ids []string) (map[string]describedGroup, error) {
	described, err := adm.DescribeGroups(ctx, ids...)
	if err != nil && len(described) == 0 {
		return nil, err
	}
	out := make(map[string]describedGroup, len(ids))
	for _, id := range ids {
		d, ok := described[id]
		if !ok {
			if err != nil {
				return nil, err
			}
			return nil, fmt.Errorf("describe group %s: no answer for it", id)
		}
		g := describedGroup{id: id, state: d.State, protocol: d.Protocol, coordinator: d.Coordinator, epoch: -1, assignmentEpoch: -1}
		switch {
		case errors.Is(d.Err, kerr.GroupIDNotFound):
			g.state = "Dead"
		case d.Err != nil:
			return nil, fmt.Errorf("describe group %s: %w", id, d.Err)
		}
		for _, m := range d.Members {
			gm := groupMember{id: m.MemberID, host: m.ClientHost, clientID: m.ClientID, epoch: -1, targetEpoch: -1}
			if m.InstanceID != nil {
				gm.instanceID = *m.InstanceID
			}
			if a, ok := m.Assigned.AsConsumer(); ok {
				for _, t := range a.Topics {
					for _, p := range t.Partitions {
						gm.assigned = append(gm.assigned, kadm.Offset{Topic: t.Topic, Partition: p})
					}
				}
			}
			sortOffsets(gm.assigned)
			g.members = append(g.members, gm)
		}
		out[id] = g
	}
	// A consumer-protocol (KIP-848) group is not a classic group:
	// DescribeGroups says it does not exist, and ConsumerGroupDescribe has
	// it, as Kafka's admin client asks in that order the other way round.
	var dead []string
	for _, id := range ids {
		if out[id].state == "Dead" {
			dead = append(dead, id)
		}
	}
	if len(dead) > 0 {
		// A broker without ConsumerGroupDescribe (raftka today) fails the
		// call; the groups then are what DescribeGroups said.
		cgs, _ := adm.DescribeConsumerGroups(ctx, dead...)
		for _, id := range dead {
			if cg, ok := cgs[id]; ok && cg.Err == nil && cg.State != "Dead" {
				out[id] = consumerGroupOf(cg)
			}
		}
	}
	return out, nil
}

// consumerGroupOf reads a ConsumerGroupDescribe answer.
func consumerGroupOf(cg kadm.DescribedConsumerGroup) describedGroup {
	g := describedGroup{id: cg.Group, state: cg.State, protocol: cg.AssignorName, coordinator: cg.Coordinator, epoch: cg.Epoch, assignmentEpoch: cg.AssignmentEpoch}
	set := func(ts kadm.TopicsSet) []kadm.Offset {
		var out []kadm.Offset
		for t, ps := range ts {
			if t == "" {
				continue // a topic the broker could not name (deleted meanwhile)
			}
			for p := range ps {
				out = append(out, kadm.Offset{Topic: t, Partition: p})
			}
		}
		sortOffsets(out)
		return out
	}
	for _, m := range cg.Members {
		gm := groupMember{id: m.MemberID, host: m.ClientHost, clientID: m.ClientID, epoch: m.MemberEpoch, targetEpoch: cg.AssignmentEpoch,
			assigned: set(m.Assignment), target: set(m.TargetAssignment)}
		if m.InstanceID != nil {
			gm.instanceID = *m.InstanceID
		}
		g.members = append(g.members, gm)
	}
	return g
}

func sortOffsets(os []kadm.Offset) {
	sort.Slice(os, func(i, j int) bool {
		if os[i].Topic != os[j].Topic {
			return os[i].Topic < os[j].Topic
		}
		return os[i].Partition < os[j].Partition
	})
}

// announceState is Kafka's shouldPrintMemberState: Dead is an error on
// stdout, Empty and rebalancing a note on stderr; it says whether rows
// follow.
func announceState(out, errOut io.Writer, g describedGroup, rows int) bool {
	switch g.state {
	case "Dead":
		fmt.Fprintf(out, "\nError: Consumer group '%s' does not exist.\n", g.id)
		return false
	case "Empty":
		fmt.Fprintf(errOut, "\nConsumer group '%s' has no active members.\n", g.id)
	case "PreparingRebalance", "CompletingRebalance", "Assigning", "Reconciling":
		fmt.Fprintf(errOut, "\nWarning: Consumer group '%s' is rebalancing.\n", g.id)
	}
	return rows > 0
}

func groupsDescribe(c *cli.Context) error {
	views := 0
	for _, f := range []string{"offsets", "members", "state"} {
		if c.Bool(f) {
			views++
		}
	}
	if views > 1 {
		return errors.New("describe: choose one of --offsets, --members and --state")
	}
	return adminGroups(c, func(ctx context.Context, adm *kadm.Client) error {
		ids, err := groupIDs(ctx, c, adm)
		if err != nil {
			return err
		}
		slices.Sort(ids)
		ids = slices.Compact(ids)
		groups, err := describeGroups(ctx, adm, ids)
		if err != nil {
			return requestError(c, "describe groups", err)
		}
		w, errOut := c.App.Writer, c.App.ErrWriter
		for _, id := range ids {
			g := groups[id]
			switch {
			case c.Bool("members"):
				writeMembers(w, errOut, g, c.Bool("verbose"))
			case c.Bool("state"):
				writeState(w, errOut, g, c.Bool("verbose"))
			default:
				rows, err := collectOffsetRows(ctx, adm, g)
				if err != nil {
					return requestError(c, "describe group "+id, err)
				}
				writeOffsetRows(w, errOut, g, rows, c.Bool("verbose"))
			}
		}
		return nil
	})
}

// offsetRow is one line of describe --offsets; -1 is "-" (unknown).
type offsetRow struct {
	topic                    string
	partition                int32
	leaderEpoch              int32
	current, logEnd          int64
	consumer, host, clientID string
}

// lag is "-" when either side is unknown; it may be negative (a commit
// past the log end after a truncation), and Kafka prints that as is.
func (r offsetRow) lag() string {
	if r.current < 0 || r.logEnd < 0 {
		return "-"
	}
	return fmt.Sprint(r.logEnd - r.current)
}

// committedOffset is a committed offset and its leader epoch.
type committedOffset struct {
	offset int64
	epoch  int32
}

type tp struct {
	topic     string
	partition int32
}

// buildOffsetRows lays out describe --offsets as Kafka does: members with
// partitions, the most partitions first, each member's partitions by topic
// and partition; then the committed partitions no member holds, with "-"
// for the consumer.
func buildOffsetRows(g describedGroup, committed map[tp]committedOffset, logEnd map[tp]int64) []offsetRow {
	members := slices.Clone(g.members)
	sort.SliceStable(members, func(i, j int) bool { return len(members[i].assigned) > len(members[j].assigned) })
	row := func(t tp, consumer, host, client string) offsetRow {
		r := offsetRow{topic: t.topic, partition: t.partition, leaderEpoch: -1, current: -1, logEnd: -1, consumer: consumer, host: host, clientID: client}
		if c, ok := committed[t]; ok {
			r.current, r.leaderEpoch = c.offset, c.epoch
		}
		if e, ok := logEnd[t]; ok {
			r.logEnd = e
		}
		return r
	}
	var rows []offsetRow
	assigned := map[tp]bool{}
	for _, m := range members {
		for _, o := range m.assigned {
			t := tp{o.Topic, o.Partition}
			assigned[t] = true
			rows = append(rows, row(t, m.id, m.host, m.clientID))
		}
	}
	var rest []tp
	for t := range committed {
		if !assigned[t] {
			rest = append(rest, t)
		}
	}
	sort.Slice(rest, func(i, j int) bool {
		if rest[i].topic != rest[j].topic {
			return rest[i].topic < rest[j].topic
		}
		return rest[i].partition < rest[j].partition
	})
	for _, t := range rest {
		rows = append(rows, row(t, "-", "-", "-"))
	}
	return rows
}

func fetchCommitted(ctx context.Context, adm *kadm.Client, group string) (map[tp]committedOffset, error) {
	resp, err := adm.FetchOffsets(ctx, group)
	if err != nil {
		return nil, err
	}
	out := map[tp]committedOffset{}
	for topic, ps := range resp {
		for p, o := range ps {
			if o.Err != nil {
				return nil, fmt.Errorf("committed offset of %s-%d: %w", topic, p, o.Err)
			}
			if o.At >= 0 {
				out[tp{topic, p}] = committedOffset{o.At, o.LeaderEpoch}
			}
		}
	}
	return out, nil
}

// listedOffsets lists start, end or by-time offsets of the topics of parts;
// a partition whose offset cannot be listed (no leader) is absent.
func listedOffsets(ctx context.Context, parts []tp, list func(ctx context.Context, topics ...string) (kadm.ListedOffsets, error)) (map[tp]int64, error) {
	out := map[tp]int64{}
	var topics []string
	for _, t := range parts {
		if !slices.Contains(topics, t.topic) {
			topics = append(topics, t.topic)
		}
	}
	if len(topics) == 0 {
		return out, nil
	}
	listed, err := list(ctx, topics...)
	if err != nil && len(listed) == 0 {
		return nil, err
	}
	for _, t := range parts {
		if o, ok := listed.Lookup(t.topic, t.partition); ok && o.Err == nil && o.Offset >= 0 {
			out[t] = o.Offset
		}
	}
	return out, nil
}

func collectOffsetRows(ctx context.Context, adm *kadm.Client, g describedGroup) ([]offsetRow, error) {
	if g.state == "Dead" {
		return nil, nil
	}
	committed, err := fetchCommitted(ctx, adm, g.id)
	if err != nil {
		return nil, err
	}
	var parts []tp
	for t := range committed {
		parts = append(parts, t)
	}
	for _, m := range g.members {
		for _, o := range m.assigned {
			parts = append(parts, tp{o.Topic, o.Partition})
		}
	}
	ends, err := listedOffsets(ctx, parts, adm.ListEndOffsets)
	if err != nil {
		return nil, err
	}
	return buildOffsetRows(g, committed, ends), nil
}

func dash(n int64) string {
	if n < 0 {
		return "-"
	}
	return fmt.Sprint(n)
}

// writeOffsetRows prints describe --offsets with Kafka's printOffsets
// layout: a newline before every line, columns padded to the widest value
// (at least 15), a blank line after the table.
func writeOffsetRows(w, errOut io.Writer, g describedGroup, rows []offsetRow, verbose bool) {
	if !announceState(w, errOut, g, len(rows)) {
		return
	}
	gw, tw, cw, hw := max(15, len(g.id)), 15, 15, 15
	for _, r := range rows {
		tw, cw, hw = max(tw, len(r.topic)), max(cw, len(r.consumer)), max(hw, len(r.host))
	}
	line := func(topic, partition, epoch, current, end, lag, consumer, host, client string) {
		fmt.Fprintf(w, "\n%-*s %-*s %-10s ", gw, g.id, tw, topic, partition)
		if verbose {
			fmt.Fprintf(w, "%-15s ", epoch)
		}
		fmt.Fprintf(w, "%-15s %-15s %-15s %-*s %-*s %s", current, end, lag, cw, consumer, hw, host, client)
	}
	id := g.id
	g.id = "GROUP"
	line("TOPIC", "PARTITION", "LEADER-EPOCH", "CURRENT-OFFSET", "LOG-END-OFFSET", "LAG", "CONSUMER-ID", "HOST", "CLIENT-ID")
	g.id = id
	for _, r := range rows {
		line(r.topic, fmt.Sprint(r.partition), dash(int64(r.leaderEpoch)), dash(r.current), dash(r.logEnd), r.lag(), r.consumer, r.host, r.clientID)
	}
	fmt.Fprintln(w)
}

// assignmentString is Kafka's getAssignmentString: topic:p,p;topic:p.
func assignmentString(os []kadm.Offset) string {
	if len(os) == 0 {
		return "-"
	}
	byTopic := map[string][]string{}
	var topics []string
	for _, o := range os {
		if _, ok := byTopic[o.Topic]; !ok {
			topics = append(topics, o.Topic)
		}
		byTopic[o.Topic] = append(byTopic[o.Topic], fmt.Sprint(o.Partition))
	}
	parts := make([]string, 0, len(topics))
	for _, t := range topics {
		parts = append(parts, t+":"+strings.Join(byTopic[t], ","))
	}
	sort.Strings(parts)
	return strings.Join(parts, ";")
}

// writeMembers is Kafka's printMembers. As there, the header is printed
// even for a group without members, and GROUP-INSTANCE-ID only when some
// member has one. Classic members have no epochs or target: "-" in
// --verbose.
func writeMembers(w, errOut io.Writer, g describedGroup, verbose bool) {
	gw, cw, iw, hw, clw, aw := 15, 15, 17, 15, 15, 20
	withInstance := false
	if announceState(w, errOut, g, len(g.members)) {
		for _, m := range g.members {
			gw, cw, iw = max(gw, len(g.id)), max(cw, len(m.id)), max(iw, len(m.instanceID))
			hw, clw = max(hw, len(m.host)), max(clw, len(m.clientID))
			aw = max(aw, len(assignmentString(m.assigned)), len(assignmentString(m.target)))
			withInstance = withInstance || m.instanceID != ""
		}
	}
	line := func(group, consumer, instance, host, client, n string) {
		fmt.Fprintf(w, "%-*s %-*s ", gw, group, cw, consumer)
		if withInstance {
			fmt.Fprintf(w, "%-*s ", iw, instance)
		}
		fmt.Fprintf(w, "%-*s %-*s %-15s ", hw, host, clw, client, n)
	}
	fmt.Fprint(w, "\n")
	line("GROUP", "CONSUMER-ID", "GROUP-INSTANCE-ID", "HOST", "CLIENT-ID", "#PARTITIONS")
	if verbose {
		fmt.Fprintf(w, "%-15s %-*s %-15s %-*s", "CURRENT-EPOCH", aw, "CURRENT-ASSIGNMENT", "TARGET-EPOCH", aw, "TARGET-ASSIGNMENT")
	}
	fmt.Fprintln(w)
	if g.state == "Dead" {
		return
	}
	for _, m := range g.members {
		line(g.id, m.id, m.instanceID, m.host, m.clientID, fmt.Sprint(len(m.assigned)))
		if verbose {
			fmt.Fprintf(w, "%-15s %-*s %-15s %-*s", dash(int64(m.epoch)), aw, assignmentString(m.assigned), dash(int64(m.targetEpoch)), aw, assignmentString(m.target))
		}
		fmt.Fprintln(w)
	}
}

// writeState is Kafka's printStates; --verbose adds the group and target
// assignment epochs ("-" for a classic group).
func writeState(w, errOut io.Writer, g describedGroup, verbose bool) {
	if !announceState(w, errOut, g, 1) {
		return
	}
	coord := fmt.Sprintf("%s:%d  (%d)", g.coordinator.Host, g.coordinator.Port, g.coordinator.NodeID)
	strategy := g.protocol
	if strategy == "" {
		strategy = "-"
	}
	gw, cw := max(15, len(g.id)), max(25, len(coord))
	line := func(group, coord, strategy, state, epoch, target, members string) {
		fmt.Fprintf(w, "\n%-*s %-*s %-20s %-20s ", gw, group, cw, coord, strategy, state)
		if verbose {
			fmt.Fprintf(w, "%-15s %-25s ", epoch, target)
		}
		fmt.Fprint(w, members)
	}
	line("GROUP", "COORDINATOR (ID)", "ASSIGNMENT-STRATEGY", "STATE", "GROUP-EPOCH", "TARGET-ASSIGNMENT-EPOCH", "#MEMBERS")
	line(g.id, coord, strategy, g.state, dash(int64(g.epoch)), dash(int64(g.assignmentEpoch)), fmt.Sprint(len(g.members)))
	fmt.Fprintln(w)
}

func groupsDelete(c *cli.Context) error {
	return adminGroups(c, func(ctx context.Context, adm *kadm.Client) error {
		ids, err := groupIDs(ctx, c, adm)
		if err != nil {
			return err
		}
		resp, err := adm.DeleteGroups(ctx, ids...)
		if err != nil && len(resp) == 0 {
			return requestError(c, "delete groups", err)
		}
		var ok, failed []string
		reasons := map[string]error{}
		for _, id := range ids {
			r, found := resp[id]
			switch {
			case !found:
				failed, reasons[id] = append(failed, id), errors.New("no answer for the group")
			case r.Err != nil:
				failed, reasons[id] = append(failed, id), kafkaErrorOf(r.Err, r.ErrMessage)
			default:
				ok = append(ok, id)
			}
		}
		return writeDeleteResult(c.App.Writer, ok, failed, reasons)
	})
}

// kafkaErrorOf shows a kerr error as the other commands do: its protocol
// name, then the broker's message or kerr's description.
func kafkaErrorOf(err error, msg string) error {
	var ke *kerr.Error
	if errors.As(err, &ke) {
		var m *string
		if msg != "" {
			m = &msg
		}
		return responseError(ke.Code, m)
	}
	return err
}

func quoted(ids []string) string {
	q := make([]string, len(ids))
	for i, id := range ids {
		q[i] = "'" + id + "'"
	}
	return strings.Join(q, ", ")
}

// writeDeleteResult prints Kafka's deleteGroups messages; any failure is
// also the command's error.
func writeDeleteResult(w io.Writer, ok, failed []string, reasons map[string]error) error {
	if len(failed) == 0 {
		fmt.Fprintf(w, "Deletion of requested consumer groups (%s) was successful.\n", quoted(ok))
		return nil
	}
	fmt.Fprintln(w, "\nError: Deletion of some consumer groups failed:")
	for _, id := range failed {
		fmt.Fprintf(w, "* Group '%s' could not be deleted due to: %v\n", id, reasons[id])
	}
	if len(ok) > 0 {
		fmt.Fprintf(w, "\nThese consumer groups were deleted successfully: %s\n", quoted(ok))
	}
	return fmt.Errorf("delete: %d of %d groups could not be deleted", len(failed), len(failed)+len(ok))
}

func groupsDeleteOffsets(c *cli.Context) error {
	group := c.String("group")
	if group == "" {
		return errors.New("delete-offsets: --group is required")
	}
	topicArgs := valuesOf(c, "topic")
	if len(topicArgs) == 0 {
		return errors.New("delete-offsets: --topic is required")
	}
	explicit, bare, err := parseTopicArgs(topicArgs)
	if err != nil {
		return err
	}
	return adminGroups(c, func(ctx context.Context, adm *kadm.Client) error {
		parts := slices.Clone(explicit)
		status := map[tp]string{}
		if len(bare) > 0 {
			details, err := adm.ListTopics(ctx, bare...)
			if err != nil {
				return requestError(c, "describe topics", err)
			}
			for _, name := range bare {
				d, ok := details[name]
				switch {
				case !ok:
					status[tp{name, -1}] = "Error: " + responseError(kerr.UnknownTopicOrPartition.Code, nil).Error()
				case d.Err != nil:
					status[tp{name, -1}] = "Error: " + kafkaErrorOf(d.Err, "").Error()
				default:
					for _, p := range d.Partitions.Numbers() {
						parts = append(parts, tp{name, p})
					}
				}
			}
		}
		set := kadm.TopicsSet{}
		for _, t := range parts {
			set.Add(t.topic, t.partition)
		}
		var topLevel error
		if len(parts) > 0 {
			resp, err := adm.DeleteOffsets(ctx, group, set)
			if err != nil {
				topLevel = kafkaErrorOf(err, "")
			}
			for _, t := range parts {
				if e, ok := resp.Lookup(t.topic, t.partition); ok && e != nil {
					status[t] = "Error: " + kafkaErrorOf(e, "").Error()
				} else if topLevel != nil {
					status[t] = "Error: " + topLevel.Error()
				} else {
					status[t] = "Successful"
				}
			}
		}
		return writeDeleteOffsets(c.App.Writer, group, topLevel, status)
	})
}

// writeDeleteOffsets prints Kafka's deleteOffsets summary and table; a
// failure anywhere is also the command's error.
func writeDeleteOffsets(w io.Writer, group string, topLevel error, status map[tp]string) error {
	failed := 0
	for _, s := range status {
		if s != "Successful" {
			failed++
		}
	}
	switch {
	case topLevel != nil:
		fmt.Fprintf(w, "\nError: %v\n", topLevel)
	case failed > 0:
		fmt.Fprintln(w, "\nError: Encountered some partition-level error, see the follow-up details.")
	default:
		fmt.Fprintf(w, "Request succeeded for deleting offsets from group %s.\n", group)
	}
	keys := make([]tp, 0, len(status))
	tw := 15
	for t := range status {
		keys = append(keys, t)
		tw = max(tw, len(t.topic))
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i].topic != keys[j].topic {
			return keys[i].topic < keys[j].topic
		}
		return keys[i].partition < keys[j].partition
	})
	fmt.Fprintf(w, "\n%-*s %-10s %-15s", tw, "TOPIC", "PARTITION", "STATUS")
	for _, t := range keys {
		p := "-"
		if t.partition >= 0 {
			p = fmt.Sprint(t.partition)
		}
		fmt.Fprintf(w, "\n%-*s %-10s %-15s", tw, t.topic, p, status[t])
	}
	fmt.Fprintln(w)
	if topLevel != nil || failed > 0 {
		return fmt.Errorf("delete-offsets: offsets of group %s not deleted", group)
	}
	return nil
}
