package main

// `raftka acls add | list | remove` is kafka-acls.sh over CreateAcls,
// DescribeAcls and DeleteAcls, with its options: --allow-principal,
// --deny-principal, --allow-host, --deny-host, --operation, --topic,
// --group, --cluster, --transactional-id, --delegation-token,
// --user-principal, --resource-pattern-type, and the --producer /
// --consumer / --idempotent conveniences.

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/raftka/raftka/metadata"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/urfave/cli/v2"
)

func init() {
	flags := func(list bool) []cli.Flag {
		fs := []cli.Flag{
			bootstrapFlag(), bootstrapControllerFlag(), requestTimeoutFlag(),
			&cli.StringSliceFlag{Name: "topic", Usage: "topic name (repeatable; '*' is every topic)"},
			&cli.StringSliceFlag{Name: "group", Usage: "consumer group (repeatable; '*' is every group)"},
			&cli.BoolFlag{Name: "cluster", Usage: "the cluster resource"},
			&cli.StringSliceFlag{Name: "transactional-id", Usage: "transactional id (repeatable; '*' is every id)"},
			&cli.StringSliceFlag{Name: "delegation-token", Usage: "delegation token id (repeatable)"},
			&cli.StringSliceFlag{Name: "user-principal", Usage: "user resource, for CREATE_TOKENS / DESCRIBE_TOKENS (repeatable)"},
			&cli.StringFlag{Name: "resource-pattern-type", Value: "literal", Usage: "literal or prefixed; list and remove also take any and match"},
		}
		if list {
			return append(fs, &cli.StringSliceFlag{Name: "principal", Usage: "only ACLs of this principal (repeatable)"})
		}
		return append(fs,
			&cli.StringSliceFlag{Name: "allow-principal", Usage: "principal (User:name) the ACL allows (repeatable)"},
			&cli.StringSliceFlag{Name: "deny-principal", Usage: "principal (User:name) the ACL denies (repeatable)"},
			&cli.StringSliceFlag{Name: "allow-host", Usage: "host (IP) allowed principals connect from (default: * for add)"},
			&cli.StringSliceFlag{Name: "deny-host", Usage: "host (IP) denied principals connect from (default: * for add)"},
			&cli.StringSliceFlag{Name: "operation", Usage: "Read, Write, Create, Delete, Alter, Describe, ClusterAction, DescribeConfigs, AlterConfigs, IdempotentWrite, CreateTokens, DescribeTokens, All (repeatable; default All)"},
			&cli.BoolFlag{Name: "producer", Usage: "the ACLs a producer needs: WRITE, DESCRIBE, CREATE on --topic"},
			&cli.BoolFlag{Name: "consumer", Usage: "the ACLs a consumer needs: READ, DESCRIBE on --topic, READ on --group"},
			&cli.BoolFlag{Name: "idempotent", Usage: "with --producer: IDEMPOTENT_WRITE on the cluster"},
		)
	}
	register(&cli.Command{
		Name:  "acls",
		Usage: "add, list and remove ACLs (like kafka-acls.sh)",
		Subcommands: []*cli.Command{
			{Name: "add", Usage: "add ACLs", Flags: flags(false), Action: aclsAdd},
			{Name: "list", Usage: "list ACLs (every ACL, or those of the given resources)", Flags: flags(true), Action: aclsList},
			{Name: "remove", Usage: "remove the ACLs that match", Flags: flags(false), Action: aclsRemove},
		},
	})
}

// aclResource is one resource pattern named on the command line.
type aclResource struct {
	typ  metadata.ACLResourceType
	name string
}

func aclResources(c *cli.Context) []aclResource {
	var out []aclResource
	add := func(flag string, typ metadata.ACLResourceType) {
		for _, n := range c.StringSlice(flag) {
			out = append(out, aclResource{typ, n})
		}
	}
	add("topic", metadata.ACLResourceTopic)
	add("group", metadata.ACLResourceGroup)
	if c.Bool("cluster") {
		out = append(out, aclResource{metadata.ACLResourceCluster, metadata.ClusterResourceName})
	}
	add("transactional-id", metadata.ACLResourceTransactionalID)
	add("delegation-token", metadata.ACLResourceDelegationToken)
	add("user-principal", metadata.ACLResourceUser)
	return out
}

func aclPattern(c *cli.Context, filter bool) (metadata.ACLPatternType, error) {
	pt, ok := metadata.ParseACLPatternType(c.String("resource-pattern-type"))
	if !ok || (!filter && pt != metadata.ACLPatternLiteral && pt != metadata.ACLPatternPrefixed) {
		want := "literal or prefixed"
		if filter {
			want = "literal, prefixed, any or match"
		}
		return 0, fmt.Errorf("--resource-pattern-type %q: want %s", c.String("resource-pattern-type"), want)
	}
	return pt, nil
}

func aclOperations(c *cli.Context, def metadata.ACLOperation) ([]metadata.ACLOperation, error) {
	var ops []metadata.ACLOperation
	for _, s := range c.StringSlice("operation") {
		// kafka-acls.sh spells them in camel case (DescribeConfigs).
		var b strings.Builder
		for i, r := range s {
			if i > 0 && r >= 'A' && r <= 'Z' && !strings.Contains(s, "_") {
				b.WriteByte('_')
			}
			b.WriteRune(r)
		}
		op, ok := metadata.ParseACLOperation(b.String())
		if !ok || op == metadata.ACLOpAny {
			return nil, fmt.Errorf("--operation %q: not an ACL operation", s)
		}
		ops = append(ops, op)
	}
	if len(ops) == 0 {
		ops = []metadata.ACLOperation{def}
	}
	return ops, nil
}

// entry is one principal, host and permission.
type aclEntry struct {
	principal, host string
	perm            metadata.ACLPermission
}

func aclEntries(c *cli.Context, defaultHost string) ([]aclEntry, error) {
	var out []aclEntry
	for _, side := range []struct {
		who, hosts string
		perm       metadata.ACLPermission
	}{{"allow-principal", "allow-host", metadata.ACLPermissionAllow}, {"deny-principal", "deny-host", metadata.ACLPermissionDeny}} {
		hosts := c.StringSlice(side.hosts)
		if len(hosts) == 0 {
			hosts = []string{defaultHost}
		}
		for _, p := range c.StringSlice(side.who) {
			if !strings.Contains(p, ":") {
				return nil, fmt.Errorf("--%s %q: a principal is Type:name, e.g. User:alice", side.who, p)
			}
			for _, h := range hosts {
				out = append(out, aclEntry{p, h, side.perm})
			}
		}
		if len(c.StringSlice(side.who)) == 0 && c.IsSet(side.hosts) {
			return nil, fmt.Errorf("--%s needs --%s", side.hosts, side.who)
		}
	}
	return out, nil
}

// aclBindings expands the command line into bindings: every resource x
// entry x operation, plus the --producer / --consumer sets.
func aclBindings(c *cli.Context) ([]metadata.ACLBinding, error) {
	pt, err := aclPattern(c, false)
	if err != nil {
		return nil, err
	}
	entries, err := aclEntries(c, "*")
	if err != nil {
		return nil, err
	}
	if len(entries) == 0 {
		return nil, fmt.Errorf("%s: --allow-principal or --deny-principal is required", c.Command.FullName())
	}
	type resOps struct {
		res aclResource
		ops []metadata.ACLOperation
	}
	var plan []resOps
	switch {
	case c.Bool("producer") || c.Bool("consumer"):
		for _, t := range c.StringSlice("topic") {
			r := aclResource{metadata.ACLResourceTopic, t}
			if c.Bool("producer") {
				plan = append(plan, resOps{r, []metadata.ACLOperation{metadata.ACLOpWrite, metadata.ACLOpDescribe, metadata.ACLOpCreate}})
			}
			if c.Bool("consumer") {
				plan = append(plan, resOps{r, []metadata.ACLOperation{metadata.ACLOpRead, metadata.ACLOpDescribe}})
			}
		}
		if c.Bool("consumer") {
			if len(c.StringSlice("group")) == 0 {
				return nil, fmt.Errorf("--consumer needs --group")
			}
			for _, g := range c.StringSlice("group") {
				plan = append(plan, resOps{aclResource{metadata.ACLResourceGroup, g}, []metadata.ACLOperation{metadata.ACLOpRead}})
			}
		}
		if c.Bool("producer") && c.Bool("idempotent") {
			plan = append(plan, resOps{aclResource{metadata.ACLResourceCluster, metadata.ClusterResourceName}, []metadata.ACLOperation{metadata.ACLOpIdempotentWrite}})
		}
		if len(c.StringSlice("topic")) == 0 {
			return nil, fmt.Errorf("--producer and --consumer need --topic")
		}
	default:
		ops, err := aclOperations(c, metadata.ACLOpAll)
		if err != nil {
			return nil, err
		}
		res := aclResources(c)
		if len(res) == 0 {
			return nil, fmt.Errorf("%s: name a resource (--topic, --group, --cluster, --transactional-id, --delegation-token or --user-principal)", c.Command.FullName())
		}
		for _, r := range res {
			plan = append(plan, resOps{r, ops})
		}
	}
	var out []metadata.ACLBinding
	for _, p := range plan {
		for _, e := range entries {
			for _, op := range p.ops {
				b := metadata.ACLBinding{ResourceType: p.res.typ, ResourceName: p.res.name, PatternType: pt,
					Principal: e.principal, Host: e.host, Operation: op, Permission: e.perm}
				if err := metadata.ValidateNewACL(b); err != nil {
					return nil, err
				}
				if !slices.Contains(out, b) {
					out = append(out, b)
				}
			}
		}
	}
	return out, nil
}

func aclsAdd(c *cli.Context) error {
	bindings, err := aclBindings(c)
	if err != nil {
		return err
	}
	req := kmsg.NewPtrCreateACLsRequest()
	for _, b := range bindings {
		cr := kmsg.NewCreateACLsRequestCreation()
		cr.ResourceType, cr.ResourceName = kmsg.ACLResourceType(b.ResourceType), b.ResourceName
		cr.ResourcePatternType = kmsg.ACLResourcePatternType(b.PatternType)
		cr.Principal, cr.Host = b.Principal, b.Host
		cr.Operation, cr.PermissionType = kmsg.ACLOperation(b.Operation), kmsg.ACLPermissionType(b.Permission)
		req.Creations = append(req.Creations, cr)
	}
	return adminCall(c, func(ctx context.Context, cl *kgo.Client) error {
		resp, err := req.RequestWith(ctx, requestor(c, cl))
		if err != nil {
			return requestError(c, "create ACLs", err)
		}
		for i, r := range resp.Results {
			if err := responseError(r.ErrorCode, r.ErrorMessage); err != nil {
				return fmt.Errorf("add %v: %w", bindings[min(i, len(bindings)-1)], err)
			}
		}
		fmt.Fprintf(c.App.Writer, "Added %d ACLs:\n", len(bindings))
		for _, b := range bindings {
			fmt.Fprintf(c.App.Writer, "\t%s\n", aclLine(b))
		}
		return nil
	})
}

func aclLine(b metadata.ACLBinding) string {
	return fmt.Sprintf("(resourceType=%v, name=%s, patternType=%v, principal=%s, host=%s, operation=%v, permissionType=%v)",
		b.ResourceType, b.ResourceName, b.PatternType, b.Principal, b.Host, b.Operation, b.Permission)
}

// aclFilters is the filters of list and remove: one per resource named (or
// one for everything), narrowed by principals, hosts and operations.
func aclFilters(c *cli.Context, withEntries bool) ([]kmsg.DeleteACLsRequestFilter, error) {
	pt, err := aclPattern(c, true)
	if err != nil {
		return nil, err
	}
	base := kmsg.NewDeleteACLsRequestFilter()
	base.ResourceType, base.ResourcePatternType = kmsg.ACLResourceTypeAny, kmsg.ACLResourcePatternTypeAny
	base.Operation, base.PermissionType = kmsg.ACLOperationAny, kmsg.ACLPermissionTypeAny
	res := aclResources(c)
	var out []kmsg.DeleteACLsRequestFilter
	if len(res) == 0 {
		out = append(out, base)
	}
	for _, r := range res {
		f := base
		f.ResourceType, f.ResourceName, f.ResourcePatternType = kmsg.ACLResourceType(r.typ), kmsg.StringPtr(r.name), kmsg.ACLResourcePatternType(pt)
		out = append(out, f)
	}
	var principals []aclEntry
	if withEntries {
		if principals, err = aclEntries(c, ""); err != nil {
			return nil, err
		}
	} else {
		for _, p := range c.StringSlice("principal") {
			principals = append(principals, aclEntry{principal: p, perm: metadata.ACLPermissionAny})
		}
	}
	var ops []metadata.ACLOperation
	if withEntries && len(c.StringSlice("operation")) > 0 {
		if ops, err = aclOperations(c, metadata.ACLOpAny); err != nil {
			return nil, err
		}
	}
	if len(principals) > 0 {
		var narrowed []kmsg.DeleteACLsRequestFilter
		for _, f := range out {
			for _, e := range principals {
				g := f
				g.Principal = kmsg.StringPtr(e.principal)
				if e.host != "" {
					g.Host = kmsg.StringPtr(e.host)
				}
				g.PermissionType = kmsg.ACLPermissionType(e.perm)
				narrowed = append(narrowed, g)
			}
		}
		out = narrowed
	}
	if len(ops) > 0 {
		var narrowed []kmsg.DeleteACLsRequestFilter
		for _, f := range out {
			for _, op := range ops {
				g := f
				g.Operation = kmsg.ACLOperation(op)
				narrowed = append(narrowed, g)
			}
		}
		out = narrowed
	}
	return out, nil
}

func aclsList(c *cli.Context) error {
	filters, err := aclFilters(c, false)
	if err != nil {
		return err
	}
	return adminCall(c, func(ctx context.Context, cl *kgo.Client) error {
		type key struct {
			typ  kmsg.ACLResourceType
			name string
			pt   kmsg.ACLResourcePatternType
		}
		byRes := map[key][]string{}
		var order []key
		for _, f := range filters {
			req := kmsg.NewPtrDescribeACLsRequest()
			req.ResourceType, req.ResourceName, req.ResourcePatternType = f.ResourceType, f.ResourceName, f.ResourcePatternType
			req.Principal, req.Host, req.Operation, req.PermissionType = f.Principal, f.Host, f.Operation, f.PermissionType
			resp, err := req.RequestWith(ctx, requestor(c, cl))
			if err != nil {
				return requestError(c, "describe ACLs", err)
			}
			if err := responseError(resp.ErrorCode, resp.ErrorMessage); err != nil {
				return fmt.Errorf("list ACLs: %w", err)
			}
			for _, r := range resp.Resources {
				k := key{r.ResourceType, r.ResourceName, r.ResourcePatternType}
				if _, ok := byRes[k]; !ok {
					order = append(order, k)
				}
				for _, a := range r.ACLs {
					line := fmt.Sprintf("(principal=%s, host=%s, operation=%v, permissionType=%v)", a.Principal, a.Host,
						metadata.ACLOperation(a.Operation), metadata.ACLPermission(a.PermissionType))
					if !slices.Contains(byRes[k], line) {
						byRes[k] = append(byRes[k], line)
					}
				}
			}
		}
		for _, k := range order {
			fmt.Fprintf(c.App.Writer, "Current ACLs for resource `ResourcePattern(resourceType=%v, name=%s, patternType=%v)`:\n",
				metadata.ACLResourceType(k.typ), k.name, metadata.ACLPatternType(k.pt))
			for _, l := range byRes[k] {
				fmt.Fprintf(c.App.Writer, " \t%s\n", l)
			}
			fmt.Fprintln(c.App.Writer)
		}
		return nil
	})
}

func aclsRemove(c *cli.Context) error {
	if len(aclResources(c)) == 0 {
		return fmt.Errorf("%s: name a resource (--topic, --group, --cluster, ...)", c.Command.FullName())
	}
	filters, err := aclFilters(c, true)
	if err != nil {
		return err
	}
	req := kmsg.NewPtrDeleteACLsRequest()
	req.Filters = filters
	return adminCall(c, func(ctx context.Context, cl *kgo.Client) error {
		resp, err := req.RequestWith(ctx, requestor(c, cl))
		if err != nil {
			return requestError(c, "delete ACLs", err)
		}
		n := 0
		for _, r := range resp.Results {
			if err := responseError(r.ErrorCode, r.ErrorMessage); err != nil {
				return fmt.Errorf("remove ACLs: %w", err)
			}
			for _, m := range r.MatchingACLs {
				if err := responseError(m.ErrorCode, m.ErrorMessage); err != nil {
					return fmt.Errorf("remove ACLs: %w", err)
				}
				n++
				fmt.Fprintf(c.App.Writer, "Removed %s\n", aclLine(metadata.ACLBinding{
					ResourceType: metadata.ACLResourceType(m.ResourceType), ResourceName: m.ResourceName,
					PatternType: metadata.ACLPatternType(m.ResourcePatternType), Principal: m.Principal, Host: m.Host,
					Operation: metadata.ACLOperation(m.Operation), Permission: metadata.ACLPermission(m.PermissionType)}))
			}
		}
		if n == 0 {
			fmt.Fprintln(c.App.Writer, "No ACLs matched.")
		}
		return nil
	})
}
