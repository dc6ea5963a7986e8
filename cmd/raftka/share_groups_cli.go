package main

// `raftka share-groups` is kafka-share-groups.sh's membership half over
// kadm: list (with --state, Kafka's GROUP and STATE columns), describe
// --members / --state with Kafka's columns, and delete (DeleteGroups; a
// group with members is refused). describe --offsets needs
// DescribeShareGroupOffsets (key 90), which raftka does not serve yet, so
// describe asks for --members or --state instead of defaulting to offsets.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/urfave/cli/v2"
)

func init() {
	register(&cli.Command{
		Name:  "share-groups",
		Usage: "list and describe share groups (like kafka-share-groups.sh; offsets not yet)",
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
				Usage: "describe share groups' members or state",
				Flags: []cli.Flag{
					bootstrapFlag(), requestTimeoutFlag(),
					&pairsFlag{Name: "group", Raw: true, Usage: "share group id (repeatable)"},
					&cli.BoolFlag{Name: "all-groups", Usage: "every share group of the cluster"},
					&cli.BoolFlag{Name: "members", Usage: "the group's members and their assignments"},
					&cli.BoolFlag{Name: "state", Usage: "the group's coordinator, state and member count"},
					&cli.BoolFlag{Name: "verbose", Usage: "with --members: member epochs; with --state: group and assignment epochs"},
				},
				Action: shareGroupsDescribe,
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
	if !c.Bool("members") && !c.Bool("state") {
		return errors.New("describe needs --members or --state: --offsets (DescribeShareGroupOffsets) is not served by raftka yet")
	}
	if c.Bool("members") && c.Bool("state") {
		return errors.New("--members and --state cannot be used together")
	}
	named := valuesOf(c, "group")
	if c.Bool("all-groups") == (len(named) > 0) {
		return errors.New("give --group or --all-groups (not both)")
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
