package main

// `raftka topics` is kafka-topics.sh over plain Kafka requests (CreateTopics,
// Metadata, DescribeConfigs, DeleteTopics, CreatePartitions,
// IncrementalAlterConfigs), so it administers raftka and any Kafka cluster
// alike. Broker errors are shown with their protocol name and message.

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/urfave/cli/v2"
)

func init() {
	topicFlag := func(usage string) cli.Flag { return &cli.StringFlag{Name: "topic", Usage: usage} }
	register(&cli.Command{
		Name:  "topics",
		Usage: "create, list, describe, alter and delete topics (like kafka-topics.sh)",
		Subcommands: []*cli.Command{
			{
				Name:  "create",
				Usage: "create a topic",
				Flags: []cli.Flag{
					bootstrapFlag(), requestTimeoutFlag(),
					topicFlag("name of the topic to create"),
					&cli.IntFlag{Name: "partitions", Value: -1, Usage: "number of partitions (-1: the broker's num.partitions)"},
					&cli.IntFlag{Name: "replication-factor", Value: -1, Usage: "replicas per partition (-1: the broker's default.replication.factor)"},
					&pairsFlag{Name: "config", Usage: "topic config override key=value (repeatable; commas stay in the value)"},
					&cli.StringFlag{Name: "replica-assignment", Usage: "broker ids per partition, partitions separated by commas: 1:2:3,2:3:1 (instead of --partitions/--replication-factor)"},
					&cli.BoolFlag{Name: "if-not-exists", Usage: "succeed if the topic already exists"},
					&cli.BoolFlag{Name: "validate-only", Usage: "ask the controller to check the request without creating the topic"},
				},
				Action: topicsCreate,
			},
			{
				Name:  "list",
				Usage: "list topic names",
				Flags: []cli.Flag{
					bootstrapFlag(), requestTimeoutFlag(),
					topicFlag("only topics whose whole name matches this regular expression"),
					&cli.BoolFlag{Name: "exclude-internal", Usage: "leave out internal topics such as __consumer_offsets"},
				},
				Action: topicsList,
			},
			{
				Name:  "describe",
				Usage: "show partitions (leader, replicas, ISR, leader epoch), topic id and configs",
				Flags: []cli.Flag{
					bootstrapFlag(), requestTimeoutFlag(),
					topicFlag("only topics whose whole name matches this regular expression (default: all)"),
					&cli.BoolFlag{Name: "exclude-internal", Usage: "leave out internal topics"},
					&cli.BoolFlag{Name: "if-exists", Usage: "succeed if no topic matches --topic"},
					&cli.BoolFlag{Name: "under-replicated-partitions", Usage: "only partitions whose ISR is smaller than their replica set"},
					&cli.BoolFlag{Name: "unavailable-partitions", Usage: "only partitions without a live leader"},
				},
				Action: topicsDescribe,
			},
			{
				Name:  "delete",
				Usage: "delete a topic",
				Flags: []cli.Flag{
					bootstrapFlag(), requestTimeoutFlag(),
					topicFlag("name of the topic to delete"),
					&cli.BoolFlag{Name: "if-exists", Usage: "succeed if the topic does not exist"},
				},
				Action: topicsDelete,
			},
			{
				Name:  "alter",
				Usage: "add partitions (CreatePartitions) or change configs (IncrementalAlterConfigs)",
				Flags: []cli.Flag{
					bootstrapFlag(), requestTimeoutFlag(),
					topicFlag("name of the topic to alter"),
					&cli.IntFlag{Name: "partitions", Usage: "the new, larger, partition count"},
					&cli.StringFlag{Name: "replica-assignment", Usage: "with --partitions: broker ids per partition for all partitions, 1:2,2:3,...; only the new partitions' entries are used"},
					&pairsFlag{Name: "config", Usage: "set a topic config key=value (repeatable)"},
					&pairsFlag{Name: "delete-config", KeyOnly: true, Usage: "remove a topic config override, back to the default (repeatable)"},
					&cli.BoolFlag{Name: "if-exists", Usage: "succeed if the topic does not exist"},
				},
				Action: topicsAlter,
			},
		},
	})
}

// adminCall runs fn with a connected client and the command's deadline.
func adminCall(c *cli.Context, fn func(ctx context.Context, cl *kgo.Client) error) error {
	cl, err := newClient(c)
	if err != nil {
		return err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(c.Context, c.Duration("request-timeout"))
	defer cancel()
	return fn(ctx, cl)
}

func timeoutMillis(c *cli.Context) int32 {
	return int32(min(c.Duration("request-timeout").Milliseconds(), 1<<31-1))
}

// parseReplicaAssignment reads Kafka's --replica-assignment: partitions
// separated by commas, broker ids of one partition by colons. Like Kafka it
// refuses a broker listed twice for one partition and partitions with
// different replica counts.
func parseReplicaAssignment(s string) ([][]int32, error) {
	if strings.TrimSpace(s) == "" {
		return nil, errors.New("--replica-assignment is empty")
	}
	var out [][]int32
	for p, part := range strings.Split(s, ",") {
		var replicas []int32
		for _, id := range strings.Split(part, ":") {
			n, err := strconv.ParseInt(strings.TrimSpace(id), 10, 32)
			if err != nil || n < 0 {
				return nil, fmt.Errorf("--replica-assignment %q: partition %d: %q is not a broker id", s, p, id)
			}
			if slices.Contains(replicas, int32(n)) {
				return nil, fmt.Errorf("--replica-assignment %q: partition %d lists broker %d twice", s, p, n)
			}
			replicas = append(replicas, int32(n))
		}
		if len(out) > 0 && len(replicas) != len(out[0]) {
			return nil, fmt.Errorf("--replica-assignment %q: partition %d has %d replicas but partition 0 has %d", s, p, len(replicas), len(out[0]))
		}
		out = append(out, replicas)
	}
	return out, nil
}

func topicsCreate(c *cli.Context) error {
	topic, err := requireTopic(c)
	if err != nil {
		return err
	}
	t := kmsg.NewCreateTopicsRequestTopic()
	t.Topic = topic
	t.NumPartitions = int32(c.Int("partitions"))
	t.ReplicationFactor = int16(c.Int("replication-factor"))
	if c.IsSet("replica-assignment") {
		if c.IsSet("partitions") || c.IsSet("replication-factor") {
			return errors.New("topics create: --replica-assignment cannot be used with --partitions or --replication-factor")
		}
		assign, err := parseReplicaAssignment(c.String("replica-assignment"))
		if err != nil {
			return err
		}
		t.NumPartitions, t.ReplicationFactor = -1, -1
		for p, replicas := range assign {
			a := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
			a.Partition = int32(p)
			a.Replicas = replicas
			t.ReplicaAssignment = append(t.ReplicaAssignment, a)
		}
	} else {
		if t.NumPartitions == 0 || t.NumPartitions < -1 {
			return fmt.Errorf("topics create: --partitions %d: want a positive count, or -1 for the broker default", t.NumPartitions)
		}
		if t.ReplicationFactor == 0 || t.ReplicationFactor < -1 {
			return fmt.Errorf("topics create: --replication-factor %d: want a positive count, or -1 for the broker default", t.ReplicationFactor)
		}
	}
	for _, kv := range pairsOf(c, "config").pairs() {
		cfg := kmsg.NewCreateTopicsRequestTopicConfig()
		cfg.Name = kv[0]
		cfg.Value = kmsg.StringPtr(kv[1])
		t.Configs = append(t.Configs, cfg)
	}
	req := kmsg.NewPtrCreateTopicsRequest()
	req.Topics = []kmsg.CreateTopicsRequestTopic{t}
	req.TimeoutMillis = timeoutMillis(c)
	req.ValidateOnly = c.Bool("validate-only")
	return adminCall(c, func(ctx context.Context, cl *kgo.Client) error {
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			return requestError(c, "create topic "+topic, err)
		}
		if len(resp.Topics) != 1 {
			return fmt.Errorf("create topic %s: the broker answered for %d topics", topic, len(resp.Topics))
		}
		rt := resp.Topics[0]
		if err := responseError(rt.ErrorCode, rt.ErrorMessage); err != nil {
			if c.Bool("if-not-exists") && rt.ErrorCode == kerr.TopicAlreadyExists.Code {
				return nil
			}
			return fmt.Errorf("create topic %s: %w", topic, err)
		}
		if req.ValidateOnly {
			fmt.Fprintf(c.App.Writer, "Topic %s can be created.\n", topic)
		} else {
			fmt.Fprintf(c.App.Writer, "Created topic %s.\n", topic)
		}
		return nil
	})
}

// fetchMetadata asks for the named topics, or for all when names is nil.
func fetchMetadata(ctx context.Context, cl *kgo.Client, names []string) (*kmsg.MetadataResponse, error) {
	req := kmsg.NewPtrMetadataRequest()
	if names != nil {
		req.Topics = []kmsg.MetadataRequestTopic{}
		for _, n := range names {
			rt := kmsg.NewMetadataRequestTopic()
			rt.Topic = kmsg.StringPtr(n)
			req.Topics = append(req.Topics, rt)
		}
	}
	return req.RequestWith(ctx, cl)
}

// matchTopics keeps the topics Kafka's --topic would: the whole name must
// match the regular expression.
func matchTopics(resp *kmsg.MetadataResponse, pattern string, excludeInternal bool) ([]kmsg.MetadataResponseTopic, error) {
	var re *regexp.Regexp
	if pattern != "" {
		var err error
		if re, err = regexp.Compile("^(?:" + pattern + ")$"); err != nil {
			return nil, fmt.Errorf("--topic %q: %v", pattern, err)
		}
	}
	var out []kmsg.MetadataResponseTopic
	for _, t := range resp.Topics {
		if t.Topic == nil || t.ErrorCode == kerr.UnknownTopicOrPartition.Code {
			continue
		}
		if excludeInternal && t.IsInternal {
			continue
		}
		if re != nil && !re.MatchString(*t.Topic) {
			continue
		}
		out = append(out, t)
	}
	sort.Slice(out, func(i, j int) bool { return *out[i].Topic < *out[j].Topic })
	return out, nil
}

func topicsList(c *cli.Context) error {
	return adminCall(c, func(ctx context.Context, cl *kgo.Client) error {
		resp, err := fetchMetadata(ctx, cl, nil)
		if err != nil {
			return requestError(c, "list topics", err)
		}
		topics, err := matchTopics(resp, c.String("topic"), c.Bool("exclude-internal"))
		if err != nil {
			return err
		}
		for _, t := range topics {
			fmt.Fprintln(c.App.Writer, *t.Topic)
		}
		return nil
	})
}

// topicIDString prints a topic id as Kafka does (unpadded URL-safe base64).
func topicIDString(id [16]byte) string { return base64.RawURLEncoding.EncodeToString(id[:]) }

func joinIDs(ids []int32) string {
	s := make([]string, len(ids))
	for i, id := range ids {
		s[i] = strconv.Itoa(int(id))
	}
	return strings.Join(s, ",")
}

func topicsDescribe(c *cli.Context) error {
	return adminCall(c, func(ctx context.Context, cl *kgo.Client) error {
		resp, err := fetchMetadata(ctx, cl, nil)
		if err != nil {
			return requestError(c, "describe topics", err)
		}
		topics, err := matchTopics(resp, c.String("topic"), c.Bool("exclude-internal"))
		if err != nil {
			return err
		}
		if len(topics) == 0 && c.String("topic") != "" && !c.Bool("if-exists") {
			return fmt.Errorf("describe: %s", (&kafkaError{Code: kerr.UnknownTopicOrPartition.Code, Name: kerr.UnknownTopicOrPartition.Message, Message: fmt.Sprintf("no topic matches %q", c.String("topic"))}).Error())
		}
		configs, err := topicConfigs(ctx, cl, topics)
		if err != nil {
			return requestError(c, "describe topic configs", err)
		}
		live := map[int32]bool{}
		for _, b := range resp.Brokers {
			live[b.NodeID] = true
		}
		elrs, err := describeELRs(ctx, cl, topics)
		if err != nil {
			return requestError(c, "describe topic partitions", err)
		}
		filtered := c.Bool("under-replicated-partitions") || c.Bool("unavailable-partitions")
		for _, t := range topics {
			writeTopicDescription(c.App.Writer, t, configs[*t.Topic], live, filtered, c.Bool("under-replicated-partitions"), c.Bool("unavailable-partitions"), elrs)
		}
		return nil
	})
}

// partitionELR is a partition's KIP-966 lists, from DescribeTopicPartitions
// (Metadata does not carry them).
type partitionELR struct{ elr, lastKnown []int32 }

type topicPartitionKey struct {
	topic     string
	partition int32
}

// describeELRs asks DescribeTopicPartitions (75), following its cursor, for
// the ELR and last known ELR of topics' partitions, as kafka-topics.sh
// --describe shows them.
func describeELRs(ctx context.Context, cl *kgo.Client, topics []kmsg.MetadataResponseTopic) (map[topicPartitionKey]partitionELR, error) {
	out := map[topicPartitionKey]partitionELR{}
	if len(topics) == 0 {
		return out, nil
	}
	req := kmsg.NewPtrDescribeTopicPartitionsRequest()
	for _, t := range topics {
		rt := kmsg.NewDescribeTopicPartitionsRequestTopic()
		rt.Topic = *t.Topic
		req.Topics = append(req.Topics, rt)
	}
	req.ResponsePartitionLimit = 2000
	// Bounded: each round trip answers at least one partition, so a cursor
	// that does not move is a broker bug, not a reason to spin.
	for range 10000 {
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			// A broker without DescribeTopicPartitions (before Kafka 3.7)
			// has no ELR to show; franz-go says so with an unexported
			// error whose text is all there is to match.
			if errors.Is(err, kerr.UnsupportedVersion) || strings.Contains(err.Error(), "broker is too old") {
				return out, nil
			}
			return nil, err
		}
		for _, t := range resp.Topics {
			if t.Topic == nil || t.ErrorCode != 0 {
				continue
			}
			for _, p := range t.Partitions {
				out[topicPartitionKey{*t.Topic, p.Partition}] = partitionELR{p.EligibleLeaderReplicas, p.LastKnownELR}
			}
		}
		if resp.NextCursor == nil {
			return out, nil
		}
		cur := kmsg.NewDescribeTopicPartitionsRequestCursor()
		cur.Topic, cur.Partition = resp.NextCursor.Topic, resp.NextCursor.Partition
		req.Cursor = &cur
	}
	return nil, errors.New("DescribeTopicPartitions: the cursor did not reach the end")
}

func writeTopicDescription(w io.Writer, t kmsg.MetadataResponseTopic, configs string, live map[int32]bool, filtered, underReplicated, unavailable bool, elrs map[topicPartitionKey]partitionELR) {
	parts := slices.Clone(t.Partitions)
	sort.Slice(parts, func(i, j int) bool { return parts[i].Partition < parts[j].Partition })
	if !filtered {
		rf := 0
		if len(parts) > 0 {
			rf = len(parts[0].Replicas)
		}
		fmt.Fprintf(w, "Topic: %s\tTopicId: %s\tPartitionCount: %d\tReplicationFactor: %d\tConfigs: %s\n",
			*t.Topic, topicIDString(t.TopicID), len(parts), rf, configs)
	}
	for _, p := range parts {
		noLeader := p.Leader < 0 || !live[p.Leader]
		if filtered && !(underReplicated && len(p.ISR) < len(p.Replicas) || unavailable && noLeader) {
			continue
		}
		leader := strconv.Itoa(int(p.Leader))
		if p.Leader < 0 {
			leader = "none"
		}
		fmt.Fprintf(w, "\tTopic: %s\tPartition: %d\tLeader: %s\tReplicas: %s\tIsr: %s\tLeaderEpoch: %d",
			*t.Topic, p.Partition, leader, joinIDs(p.Replicas), joinIDs(p.ISR), p.LeaderEpoch)
		if e := elrs[topicPartitionKey{*t.Topic, p.Partition}]; len(e.elr) > 0 || len(e.lastKnown) > 0 {
			// kafka-topics.sh's names; shown only with eligible leader
			// replicas to show, so a cluster at eligible.leader.replicas.version
			// 0 prints what it always did.
			fmt.Fprintf(w, "\tElr: %s\tLastKnownElr: %s", joinIDs(e.elr), joinIDs(e.lastKnown))
		}
		if len(p.OfflineReplicas) > 0 {
			fmt.Fprintf(w, "\tOffline: %s", joinIDs(p.OfflineReplicas))
		}
		if p.ErrorCode != 0 {
			fmt.Fprintf(w, "\tError: %v", responseError(p.ErrorCode, nil))
		}
		fmt.Fprintln(w)
	}
}

// topicConfigs returns, per topic, the configs set on the topic itself
// (Kafka's describe shows overrides, not defaults), as "k=v,k=v".
func topicConfigs(ctx context.Context, cl *kgo.Client, topics []kmsg.MetadataResponseTopic) (map[string]string, error) {
	out := map[string]string{}
	if len(topics) == 0 {
		return out, nil
	}
	req := kmsg.NewPtrDescribeConfigsRequest()
	for _, t := range topics {
		r := kmsg.NewDescribeConfigsRequestResource()
		r.ResourceType = kmsg.ConfigResourceTypeTopic
		r.ResourceName = *t.Topic
		req.Resources = append(req.Resources, r)
	}
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return nil, err
	}
	for _, r := range resp.Resources {
		if err := responseError(r.ErrorCode, r.ErrorMessage); err != nil {
			out[r.ResourceName] = "(" + err.Error() + ")"
			continue
		}
		var kvs []string
		for _, cfg := range r.Configs {
			override := cfg.Source == kmsg.ConfigSourceDynamicTopicConfig
			if resp.Version == 0 {
				override = !cfg.IsDefault
			}
			if !override {
				continue
			}
			v := "null"
			switch {
			case cfg.IsSensitive:
				v = "(sensitive)"
			case cfg.Value != nil:
				v = *cfg.Value
			}
			kvs = append(kvs, cfg.Name+"="+v)
		}
		sort.Strings(kvs)
		out[r.ResourceName] = strings.Join(kvs, ",")
	}
	return out, nil
}

func topicsDelete(c *cli.Context) error {
	topic, err := requireTopic(c)
	if err != nil {
		return err
	}
	req := kmsg.NewPtrDeleteTopicsRequest()
	req.TimeoutMillis = timeoutMillis(c)
	// Versions up to 5 name topics in TopicNames, 6+ in Topics; kgo picks the
	// version, so fill both.
	req.TopicNames = []string{topic}
	rt := kmsg.NewDeleteTopicsRequestTopic()
	rt.Topic = kmsg.StringPtr(topic)
	req.Topics = []kmsg.DeleteTopicsRequestTopic{rt}
	return adminCall(c, func(ctx context.Context, cl *kgo.Client) error {
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			return requestError(c, "delete topic "+topic, err)
		}
		if len(resp.Topics) != 1 {
			return fmt.Errorf("delete topic %s: the broker answered for %d topics", topic, len(resp.Topics))
		}
		r := resp.Topics[0]
		if err := responseError(r.ErrorCode, r.ErrorMessage); err != nil {
			if c.Bool("if-exists") && r.ErrorCode == kerr.UnknownTopicOrPartition.Code {
				return nil
			}
			return fmt.Errorf("delete topic %s: %w", topic, err)
		}
		fmt.Fprintf(c.App.Writer, "Deleted topic %s.\n", topic)
		return nil
	})
}

func topicsAlter(c *cli.Context) error {
	topic, err := requireTopic(c)
	if err != nil {
		return err
	}
	sets, deletes := pairsOf(c, "config").pairs(), pairsOf(c, "delete-config").items
	if !c.IsSet("partitions") && len(sets) == 0 && len(deletes) == 0 {
		return errors.New("topics alter: give --partitions, --config or --delete-config")
	}
	if c.IsSet("replica-assignment") && !c.IsSet("partitions") {
		return errors.New("topics alter: --replica-assignment needs --partitions")
	}
	var assign [][]int32
	if c.IsSet("partitions") {
		if c.Int("partitions") < 1 {
			return fmt.Errorf("topics alter: --partitions %d: want a positive count", c.Int("partitions"))
		}
		if c.IsSet("replica-assignment") {
			if assign, err = parseReplicaAssignment(c.String("replica-assignment")); err != nil {
				return err
			}
			if len(assign) != c.Int("partitions") {
				return fmt.Errorf("topics alter: --replica-assignment lists %d partitions but --partitions is %d", len(assign), c.Int("partitions"))
			}
		}
	}
	missing := func(code int16) bool { return c.Bool("if-exists") && code == kerr.UnknownTopicOrPartition.Code }
	return adminCall(c, func(ctx context.Context, cl *kgo.Client) error {
		if c.IsSet("partitions") {
			rt := kmsg.NewCreatePartitionsRequestTopic()
			rt.Topic = topic
			rt.Count = int32(c.Int("partitions"))
			if assign != nil {
				md, err := fetchMetadata(ctx, cl, []string{topic})
				if err != nil {
					return requestError(c, "alter topic "+topic, err)
				}
				if len(md.Topics) != 1 {
					return fmt.Errorf("alter topic %s: the broker answered for %d topics", topic, len(md.Topics))
				}
				if err := responseError(md.Topics[0].ErrorCode, nil); err != nil {
					if missing(md.Topics[0].ErrorCode) {
						return nil
					}
					return fmt.Errorf("alter topic %s: %w", topic, err)
				}
				for _, replicas := range assign[min(len(md.Topics[0].Partitions), len(assign)):] {
					a := kmsg.NewCreatePartitionsRequestTopicAssignment()
					a.Replicas = replicas
					rt.Assignment = append(rt.Assignment, a)
				}
			}
			req := kmsg.NewPtrCreatePartitionsRequest()
			req.Topics = []kmsg.CreatePartitionsRequestTopic{rt}
			req.TimeoutMillis = timeoutMillis(c)
			resp, err := req.RequestWith(ctx, cl)
			if err != nil {
				return requestError(c, "alter topic "+topic, err)
			}
			if len(resp.Topics) != 1 {
				return fmt.Errorf("alter topic %s: the broker answered for %d topics", topic, len(resp.Topics))
			}
			if err := responseError(resp.Topics[0].ErrorCode, resp.Topics[0].ErrorMessage); err != nil {
				if missing(resp.Topics[0].ErrorCode) {
					return nil
				}
				return fmt.Errorf("alter topic %s partitions: %w", topic, err)
			}
			fmt.Fprintf(c.App.Writer, "Topic %s now has %d partitions.\n", topic, rt.Count)
		}
		if len(sets) == 0 && len(deletes) == 0 {
			return nil
		}
		res := kmsg.NewIncrementalAlterConfigsRequestResource()
		res.ResourceType = kmsg.ConfigResourceTypeTopic
		res.ResourceName = topic
		for _, kv := range sets {
			cfg := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
			cfg.Name, cfg.Op, cfg.Value = kv[0], kmsg.IncrementalAlterConfigOpSet, kmsg.StringPtr(kv[1])
			res.Configs = append(res.Configs, cfg)
		}
		for _, k := range deletes {
			cfg := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
			cfg.Name, cfg.Op = strings.TrimSpace(k), kmsg.IncrementalAlterConfigOpDelete
			res.Configs = append(res.Configs, cfg)
		}
		req := kmsg.NewPtrIncrementalAlterConfigsRequest()
		req.Resources = []kmsg.IncrementalAlterConfigsRequestResource{res}
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			return requestError(c, "alter topic "+topic+" configs", err)
		}
		if len(resp.Resources) != 1 {
			return fmt.Errorf("alter topic %s configs: the broker answered for %d resources", topic, len(resp.Resources))
		}
		if err := responseError(resp.Resources[0].ErrorCode, resp.Resources[0].ErrorMessage); err != nil {
			if missing(resp.Resources[0].ErrorCode) {
				return nil
			}
			return fmt.Errorf("alter topic %s configs: %w", topic, err)
		}
		fmt.Fprintf(c.App.Writer, "Updated configs of topic %s.\n", topic)
		return nil
	})
}
