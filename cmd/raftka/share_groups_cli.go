package main

// `raftka share-groups` is kafka-share-groups.sh over kadm: list (with
// --state, Kafka's GROUP and STATE columns), describe --offsets (the
// default: DescribeShareGroupOffsets, start offset and lag per partition)
// / --members / --state with Kafka's columns, reset-offsets
// (AlterShareGroupOffsets on a group without members; a dry run unless
// --execute), delete-offsets (DeleteShareGroupOffsets) and delete
// (DeleteGroups; a group with members is refused).

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/urfave/cli/v2"
)

func init() {
	register(&cli.Command{
		Name:  "share-groups",
		Usage: "list, describe, reset and delete share groups (like kafka-share-groups.sh)",
		Subcommands: []*cli.Command{
			{
				Name:  "list",
				Usage: "list the share groups",
				Flags: []cli.Flag{
					bootstrapFlag(), requestTimeoutFlag(),
					&cli.StringFlag{Name: "state", Usage: "only groups in these states (Empty, Stable; comma separated, case-insensitive); adds a STATE column. '' shows every state"},
				},
				Action: shareGroupsList,
			},
			{
				Name:  "describe",
				Usage: "describe share groups' offsets (the default), members or state",
				Flags: []cli.Flag{
					bootstrapFlag(), requestTimeoutFlag(),
					&pairsFlag{Name: "group", Raw: true, Usage: "share group id (repeatable)"},
					&cli.BoolFlag{Name: "all-groups", Usage: "every share group of the cluster"},
					&cli.BoolFlag{Name: "offsets", Usage: "each partition's share-partition start offset and lag (the default)"},
					&cli.BoolFlag{Name: "members", Usage: "the group's members and their assignments"},
					&cli.BoolFlag{Name: "state", Usage: "the group's coordinator, state and member count"},
					&cli.BoolFlag{Name: "verbose", Usage: "with --members: member epochs; with --state: group and assignment epochs"},
				},
				Action: shareGroupsDescribe,
			},
			{
				Name:  "reset-offsets",
				Usage: "move an empty share group's start offsets (a dry run unless --execute)",
				Flags: []cli.Flag{
					bootstrapFlag(), requestTimeoutFlag(),
					&cli.StringFlag{Name: "group", Usage: "share group id (required)"},
					&cli.StringSliceFlag{Name: "topic", Usage: "topic, or topic:p1,p2 for some partitions (repeatable; required)"},
					&cli.BoolFlag{Name: "to-earliest", Usage: "to each partition's log start offset"},
					&cli.BoolFlag{Name: "to-latest", Usage: "to each partition's end (only new records are delivered)"},
					&cli.Int64Flag{Name: "to-offset", Value: -1, Usage: "to this offset"},
					&cli.StringFlag{Name: "to-datetime", Usage: "to the first record at or after this time (RFC 3339)"},
					&cli.BoolFlag{Name: "execute", Usage: "make the change (without it the new offsets are only shown)"},
					&cli.BoolFlag{Name: "dry-run", Usage: "only show the new offsets (the default)"},
				},
				Action: shareGroupsResetOffsets,
			},
			{
				Name:  "delete-offsets",
				Usage: "forget an empty share group's state of whole topics (it starts again by share.auto.offset.reset)",
				Flags: []cli.Flag{
					bootstrapFlag(), requestTimeoutFlag(),
					&cli.StringFlag{Name: "group", Usage: "share group id (required)"},
					&cli.StringSliceFlag{Name: "topic", Usage: "topic (repeatable; required)"},
				},
				Action: shareGroupsDeleteOffsets,
			},
			{
				Name:  "delete",
				Usage: "delete empty share groups",
				Flags: []cli.Flag{
					bootstrapFlag(), requestTimeoutFlag(),
					&pairsFlag{Name: "group", Raw: true, Usage: "share group id (repeatable)"},
				},
				Action: shareGroupsDelete,
			},
		},
	})
}

var shareGroupStates = []string{"Empty", "Stable", "Dead"}

func parseShareStates(s string) ([]string, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	var out []string
	for _, part := range strings.Split(s, ",") {
		i := slices.IndexFunc(shareGroupStates, func(st string) bool { return strings.EqualFold(st, strings.TrimSpace(part)) })
		if i < 0 {
			return nil, fmt.Errorf("invalid state list '%s'. Valid states are: %s", s, strings.Join(shareGroupStates, ", "))
		}
		if !slices.Contains(out, shareGroupStates[i]) {
			out = append(out, shareGroupStates[i])
		}
	}
	return out, nil
}

func shareGroupsList(c *cli.Context) error {
	states, err := parseShareStates(c.String("state"))
	if err != nil {
		return err
	}
	return adminGroups(c, func(ctx context.Context, adm *kadm.Client) error {
		listed, err := adm.ListGroupsByType(ctx, []string{"share"}, states...)
		if err != nil {
			return requestError(c, "list share groups", err)
		}
		var groups []kadm.ListedGroup
		for _, g := range listed.Sorted() {
			if g.GroupType == "share" {
				groups = append(groups, g)
			}
		}
		if !c.IsSet("state") {
			for _, g := range groups {
				fmt.Fprintln(c.App.Writer, g.Group)
			}
			return nil
		}
		writeGroupList(c.App.Writer, groups, false, true)
		return nil
	})
}

func shareGroupsDescribe(c *cli.Context) error {
	n := 0
	for _, f := range []string{"offsets", "members", "state"} {
		if c.Bool(f) {
			n++
		}
	}
	if n > 1 {
		return errors.New("give one of --offsets, --members and --state")
	}
	named := valuesOf(c, "group")
	if c.Bool("all-groups") == (len(named) > 0) {
		return errors.New("give --group or --all-groups (not both)")
	}
	if !c.Bool("members") && !c.Bool("state") {
		return shareGroupsDescribeOffsets(c, named)
	}
	return adminGroups(c, func(ctx context.Context, adm *kadm.Client) error {
		described, err := adm.DescribeShareGroups(ctx, named...)
		if err != nil && len(described) == 0 {
			return requestError(c, "describe share groups", err)
		}
		var failed []string
		for _, g := range described.Sorted() {
			if g.Err != nil {
				fmt.Fprintf(c.App.ErrWriter, "Error: share group '%s': %v\n", g.GroupID, g.Err)
				failed = append(failed, g.GroupID)
				continue
			}
			if c.Bool("members") {
				writeShareMembers(c.App.Writer, g, c.Bool("verbose"))
			} else {
				writeShareState(c.App.Writer, g, c.Bool("verbose"))
			}
		}
		if len(failed) > 0 {
			return fmt.Errorf("could not describe %s", strings.Join(failed, ", "))
		}
		return nil
	})
}

// writeShareMembers is kafka-share-groups.sh --describe --members: one row
// per member, its assignment as topic:p1,p2 per topic.
func writeShareMembers(w io.Writer, g kadm.DescribedShareGroup, verbose bool) {
	if len(g.Members) == 0 {
		fmt.Fprintf(w, "\nShare group '%s' has no active members.\n", g.GroupID)
		return
	}
	rows := [][]string{{"GROUP", "CONSUMER-ID", "HOST", "CLIENT-ID", "#PARTITIONS"}}
	if verbose {
		rows[0] = append(rows[0], "MEMBER-EPOCH")
	}
	rows[0] = append(rows[0], "ASSIGNMENT")
	for _, m := range g.Members {
		n := 0
		var parts []string
		for _, t := range m.Assignment.Sorted() {
			ps := slices.Sorted(slices.Values(t.Partitions))
			n += len(ps)
			strs := make([]string, len(ps))
			for i, p := range ps {
				strs[i] = fmt.Sprint(p)
			}
			parts = append(parts, t.Topic+":"+strings.Join(strs, ","))
		}
		assignment := strings.Join(parts, ";")
		if assignment == "" {
			assignment = "-"
		}
		row := []string{g.GroupID, m.MemberID, m.ClientHost, m.ClientID, fmt.Sprint(n)}
		if verbose {
			row = append(row, fmt.Sprint(m.MemberEpoch))
		}
		rows = append(rows, append(row, assignment))
	}
	fmt.Fprintln(w)
	writeColumns(w, rows)
}

// writeShareState is kafka-share-groups.sh --describe --state.
func writeShareState(w io.Writer, g kadm.DescribedShareGroup, verbose bool) {
	head := []string{"GROUP", "COORDINATOR (ID)"}
	if verbose {
		head = append(head, "ASSIGNOR", "GROUP-EPOCH", "ASSIGNMENT-EPOCH")
	}
	head = append(head, "STATE", "#MEMBERS")
	row := []string{g.GroupID, fmt.Sprintf("%s:%d (%d)", g.Coordinator.Host, g.Coordinator.Port, g.Coordinator.NodeID)}
	if verbose {
		row = append(row, g.Assignor, fmt.Sprint(g.GroupEpoch), fmt.Sprint(g.AssignmentEpoch))
	}
	row = append(row, g.GroupState, fmt.Sprint(len(g.Members)))
	fmt.Fprintln(w)
	writeColumns(w, [][]string{head, row})
}

// writeColumns pads every column to its widest cell, as Kafka's tools do.
func writeColumns(w io.Writer, rows [][]string) {
	widths := make([]int, len(rows[0]))
	for _, r := range rows {
		for i, cell := range r {
			widths[i] = max(widths[i], len(cell))
		}
	}
	for _, r := range rows {
		var b strings.Builder
		for i, cell := range r {
			if i == len(r)-1 {
				b.WriteString(cell)
			} else {
				fmt.Fprintf(&b, "%-*s ", widths[i], cell)
			}
		}
		fmt.Fprintln(w, b.String())
	}
}

func shareGroupsDelete(c *cli.Context) error {
	named := valuesOf(c, "group")
	if len(named) == 0 {
		return errors.New("--group is required")
	}
	return adminGroups(c, func(ctx context.Context, adm *kadm.Client) error {
		resps, err := adm.DeleteGroups(ctx, named...)
		if err != nil {
			return requestError(c, "delete share groups", err)
		}
		var failed []string
		for _, id := range named {
			r := resps[id]
			if r.Err != nil {
				fmt.Fprintf(c.App.ErrWriter, "Error: deletion of share group '%s' failed: %v\n", id, r.Err)
				failed = append(failed, id)
				continue
			}
			fmt.Fprintf(c.App.Writer, "Deletion of requested share groups ('%s') was successful.\n", id)
		}
		if len(failed) > 0 {
			return fmt.Errorf("could not delete %s", strings.Join(failed, ", "))
		}
		return nil
	})
}

// shareGroupsDescribeOffsets is kafka-share-groups.sh --describe
// --offsets: GROUP, TOPIC, PARTITION, START-OFFSET and LAG per partition
// the group has state for ("-" for unknown values).
func shareGroupsDescribeOffsets(c *cli.Context, named []string) error {
	return adminGroups(c, func(ctx context.Context, adm *kadm.Client) error {
		if len(named) == 0 {
			listed, err := adm.ListGroupsByType(ctx, []string{"share"})
			if err != nil {
				return requestError(c, "list share groups", err)
			}
			for _, g := range listed.Sorted() {
				named = append(named, g.Group)
			}
		}
		described, err := adm.DescribeShareGroupOffsets(ctx, named...)
		if err != nil && len(described) == 0 {
			return requestError(c, "describe share group offsets", err)
		}
		var failed []string
		for _, g := range described.Sorted() {
			if g.Err != nil {
				fmt.Fprintf(c.App.ErrWriter, "Error: share group '%s': %v\n", g.Group, g.Err)
				failed = append(failed, g.Group)
				continue
			}
			writeShareOffsets(c.App.Writer, g)
		}
		if len(failed) > 0 {
			return fmt.Errorf("could not describe %s", strings.Join(failed, ", "))
		}
		return nil
	})
}

func writeShareOffsets(w io.Writer, g kadm.DescribedShareGroupOffsets) {
	sorted := g.Offsets.Sorted()
	if len(sorted) == 0 {
		fmt.Fprintf(w, "\nShare group '%s' has no offsets.\n", g.Group)
		return
	}
	rows := [][]string{{"GROUP", "TOPIC", "PARTITION", "START-OFFSET", "LAG"}}
	dash := func(v int64) string {
		if v < 0 {
			return "-"
		}
		return fmt.Sprint(v)
	}
	for _, o := range sorted {
		start, lag := dash(o.StartOffset), dash(o.Lag)
		if o.Err != nil {
			start, lag = "-", o.Err.Error()
		}
		rows = append(rows, []string{g.Group, o.Topic, fmt.Sprint(o.Partition), start, lag})
	}
	fmt.Fprintln(w)
	writeColumns(w, rows)
}

// shareGroupsResetOffsets is kafka-share-groups.sh --reset-offsets: the
// new start offsets of the named partitions, shown (dry run) or written
// with AlterShareGroupOffsets (--execute), which refuses a group with
// members.
func shareGroupsResetOffsets(c *cli.Context) error {
	group := c.String("group")
	if group == "" || len(c.StringSlice("topic")) == 0 {
		return errors.New("reset-offsets needs --group and --topic")
	}
	if c.Bool("execute") && c.Bool("dry-run") {
		return errors.New("give --execute or --dry-run, not both")
	}
	n := 0
	for _, set := range []bool{c.Bool("to-earliest"), c.Bool("to-latest"), c.Int64("to-offset") >= 0, c.String("to-datetime") != ""} {
		if set {
			n++
		}
	}
	if n != 1 {
		return errors.New("give exactly one of --to-earliest, --to-latest, --to-offset and --to-datetime")
	}
	var at time.Time
	if s := c.String("to-datetime"); s != "" {
		var err error
		if at, err = time.Parse(time.RFC3339, s); err != nil {
			return fmt.Errorf("--to-datetime %q: want RFC 3339 (2006-01-02T15:04:05Z): %w", s, err)
		}
	}
	wanted := map[string][]int32{}
	var topics []string
	for _, spec := range c.StringSlice("topic") {
		name, parts, _ := strings.Cut(spec, ":")
		topics = append(topics, name)
		for _, p := range strings.Split(parts, ",") {
			if p == "" {
				continue
			}
			v, err := strconv.ParseInt(p, 10, 32)
			if err != nil || v < 0 {
				return fmt.Errorf("--topic %q: partitions must be non-negative numbers", spec)
			}
			wanted[name] = append(wanted[name], int32(v))
		}
	}
	return adminGroups(c, func(ctx context.Context, adm *kadm.Client) error {
		var listed kadm.ListedOffsets
		var err error
		switch {
		case c.Bool("to-earliest"):
			listed, err = adm.ListStartOffsets(ctx, topics...)
		case c.Bool("to-latest"):
			listed, err = adm.ListEndOffsets(ctx, topics...)
		case !at.IsZero():
			listed, err = adm.ListOffsetsAfterMilli(ctx, at.UnixMilli(), topics...)
		default:
			listed, err = adm.ListEndOffsets(ctx, topics...) // for the partitions; the offset is --to-offset
		}
		if err != nil {
			return requestError(c, "list offsets", err)
		}
		offsets := kadm.Offsets{}
		rows := [][]string{{"GROUP", "TOPIC", "PARTITION", "NEW-START-OFFSET"}}
		for _, t := range topics {
			ps, ok := listed[t]
			if !ok {
				return fmt.Errorf("topic %s does not exist", t)
			}
			for _, p := range slices.Sorted(maps.Keys(ps)) {
				if len(wanted[t]) > 0 && !slices.Contains(wanted[t], p) {
					continue
				}
				lo := ps[p]
				if lo.Err != nil {
					return fmt.Errorf("%s-%d: %w", t, p, lo.Err)
				}
				off := lo.Offset
				if v := c.Int64("to-offset"); v >= 0 {
					off = v
				}
				offsets.Add(kadm.Offset{Topic: t, Partition: p, At: off, LeaderEpoch: -1})
				rows = append(rows, []string{group, t, fmt.Sprint(p), fmt.Sprint(off)})
			}
		}
		fmt.Fprintln(c.App.Writer)
		writeColumns(c.App.Writer, rows)
		if !c.Bool("execute") {
			fmt.Fprintln(c.App.ErrWriter, "Dry run: nothing changed (--execute makes the change).")
			return nil
		}
		resps, err := adm.AlterShareGroupOffsets(ctx, group, offsets)
		if err != nil {
			return requestError(c, "alter share group offsets", err)
		}
		return resps.Error()
	})
}

// shareGroupsDeleteOffsets is kafka-share-groups.sh --delete-offsets.
func shareGroupsDeleteOffsets(c *cli.Context) error {
	group, topics := c.String("group"), c.StringSlice("topic")
	if group == "" || len(topics) == 0 {
		return errors.New("delete-offsets needs --group and --topic")
	}
	return adminGroups(c, func(ctx context.Context, adm *kadm.Client) error {
		resps, err := adm.DeleteShareGroupOffsets(ctx, group, topics...)
		if err != nil {
			return requestError(c, "delete share group offsets", err)
		}
		var failed []string
		for _, t := range topics {
			if terr, ok := resps.Lookup(t); ok && terr != nil {
				fmt.Fprintf(c.App.ErrWriter, "Error: topic %s: %v\n", t, terr)
				failed = append(failed, t)
				continue
			}
			fmt.Fprintf(c.App.Writer, "Deleted the offsets of share group '%s' in topic %s.\n", group, t)
		}
		if len(failed) > 0 {
			return fmt.Errorf("could not delete the offsets of %s", strings.Join(failed, ", "))
		}
		return nil
	})
}
