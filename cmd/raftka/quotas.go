package main

// `raftka quotas set | describe` is kafka-configs.sh's client quota half
// (--entity-type users / clients / ips with --alter --add-config /
// --delete-config, and --describe) over AlterClientQuotas and
// DescribeClientQuotas.

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/urfave/cli/v2"
)

func init() {
	entityFlags := func() []cli.Flag {
		return []cli.Flag{
			bootstrapFlag(), bootstrapControllerFlag(), requestTimeoutFlag(),
			&cli.StringFlag{Name: "user", Usage: "the user (principal name without User:)"},
			&cli.BoolFlag{Name: "user-default", Usage: "the default user"},
			&cli.StringFlag{Name: "client-id", Usage: "the client id"},
			&cli.BoolFlag{Name: "client-default", Usage: "the default client id"},
			&cli.StringFlag{Name: "ip", Usage: "the client IP (connection_creation_rate only)"},
			&cli.BoolFlag{Name: "ip-default", Usage: "the default IP"},
		}
	}
	register(&cli.Command{
		Name:  "quotas",
		Usage: "set and describe client quotas (like kafka-configs.sh --entity-type users/clients/ips)",
		Subcommands: []*cli.Command{
			{
				Name:  "set",
				Usage: "set or delete quota keys of one entity",
				Flags: append(entityFlags(),
					&pairsFlag{Name: "add-config", Usage: "key=value: producer_byte_rate, consumer_byte_rate, request_percentage, controller_mutation_rate, connection_creation_rate (repeatable)"},
					&pairsFlag{Name: "delete-config", KeyOnly: true, Usage: "a quota key to remove (repeatable)"},
				),
				Action: quotasSet,
			},
			{
				Name:   "describe",
				Usage:  "show the quotas of the entities that match (all without an entity flag)",
				Flags:  entityFlags(),
				Action: quotasDescribe,
			},
		},
	})
}

// quotaParts reads the entity flags: type, and name (nil for the default).
func quotaParts(c *cli.Context) ([]string, []*string, error) {
	var types []string
	var names []*string
	for _, e := range []struct{ typ, name, def string }{
		{"user", "user", "user-default"}, {"client-id", "client-id", "client-default"}, {"ip", "ip", "ip-default"},
	} {
		switch {
		case c.IsSet(e.name) && c.Bool(e.def):
			return nil, nil, fmt.Errorf("--%s and --%s name the same part of the entity", e.name, e.def)
		case c.IsSet(e.name):
			types, names = append(types, e.typ), append(names, kmsg.StringPtr(c.String(e.name)))
		case c.Bool(e.def):
			types, names = append(types, e.typ), append(names, nil)
		}
	}
	return types, names, nil
}

func quotasSet(c *cli.Context) error {
	types, names, err := quotaParts(c)
	if err != nil {
		return err
	}
	if len(types) == 0 {
		return fmt.Errorf("%s: name an entity (--user, --client-id, --ip or their -default forms)", c.Command.FullName())
	}
	entry := kmsg.NewAlterClientQuotasRequestEntry()
	for i, t := range types {
		e := kmsg.NewAlterClientQuotasRequestEntryEntity()
		e.Type, e.Name = t, names[i]
		entry.Entity = append(entry.Entity, e)
	}
	for _, kv := range pairsOf(c, "add-config").pairs() {
		v, err := strconv.ParseFloat(strings.TrimSpace(kv[1]), 64)
		if err != nil {
			return fmt.Errorf("--add-config %s=%s: not a number", kv[0], kv[1])
		}
		op := kmsg.NewAlterClientQuotasRequestEntryOp()
		op.Key, op.Value = kv[0], v
		entry.Ops = append(entry.Ops, op)
	}
	for _, k := range pairsOf(c, "delete-config").items {
		op := kmsg.NewAlterClientQuotasRequestEntryOp()
		op.Key, op.Remove = strings.TrimSpace(k), true
		entry.Ops = append(entry.Ops, op)
	}
	if len(entry.Ops) == 0 {
		return fmt.Errorf("%s: give --add-config or --delete-config", c.Command.FullName())
	}
	req := kmsg.NewPtrAlterClientQuotasRequest()
	req.Entries = append(req.Entries, entry)
	return adminCall(c, func(ctx context.Context, cl *kgo.Client) error {
		resp, err := req.RequestWith(ctx, requestor(c, cl))
		if err != nil {
			return requestError(c, "alter client quotas", err)
		}
		for _, r := range resp.Entries {
			if err := responseError(r.ErrorCode, r.ErrorMessage); err != nil {
				return fmt.Errorf("set quotas: %w", err)
			}
		}
		fmt.Fprintf(c.App.Writer, "Completed updating quotas for %s.\n", quotaEntityString(types, names))
		return nil
	})
}

// quotaEntityString shows an entity as kafka-configs.sh does, user first.
func quotaEntityString(types []string, names []*string) string {
	order := map[string]int{"user": 0, "client-id": 1, "ip": 2}
	idx := make([]int, len(types))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool { return order[types[idx[a]]] < order[types[idx[b]]] })
	parts := make([]string, len(types))
	for j, i := range idx {
		t := types[i]
		n := "<default>"
		if names[i] != nil {
			n = "'" + *names[i] + "'"
		}
		parts[j] = t + "=" + n
	}
	return strings.Join(parts, ", ")
}

func quotasDescribe(c *cli.Context) error {
	if err := describeNotOnControllers(c, "DescribeClientQuotas"); err != nil {
		return err
	}
	types, names, err := quotaParts(c)
	if err != nil {
		return err
	}
	req := kmsg.NewPtrDescribeClientQuotasRequest()
	for i, t := range types {
		comp := kmsg.NewDescribeClientQuotasRequestComponent()
		comp.EntityType = t
		if names[i] == nil {
			comp.MatchType = kmsg.QuotasMatchTypeDefault
		} else {
			comp.MatchType, comp.Match = kmsg.QuotasMatchTypeExact, names[i]
		}
		req.Components = append(req.Components, comp)
	}
	req.Strict = len(types) > 0
	return adminCall(c, func(ctx context.Context, cl *kgo.Client) error {
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			return requestError(c, "describe client quotas", err)
		}
		if err := responseError(resp.ErrorCode, resp.ErrorMessage); err != nil {
			return fmt.Errorf("describe quotas: %w", err)
		}
		var lines []string
		for _, e := range resp.Entries {
			ts, ns := make([]string, len(e.Entity)), make([]*string, len(e.Entity))
			for i, p := range e.Entity {
				ts[i], ns[i] = p.Type, p.Name
			}
			vals := make([]string, len(e.Values))
			for i, v := range e.Values {
				vals[i] = v.Key + "=" + strconv.FormatFloat(v.Value, 'f', -1, 64)
			}
			sort.Strings(vals)
			lines = append(lines, fmt.Sprintf("Quota configs for %s are %s", quotaEntityString(ts, ns), strings.Join(vals, ", ")))
		}
		sort.Strings(lines)
		for _, l := range lines {
			fmt.Fprintln(c.App.Writer, l)
		}
		return nil
	})
}
