package main

// `raftka groups reset-offsets`: Kafka's GroupOffsetsResetter. The plan is
// computed from listed offsets by the pure planReset, printed (or exported
// as CSV), and committed only with --execute, and only for a group that is
// inactive (Empty, or unknown to the cluster), as Kafka requires.

import (
	"context"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/urfave/cli/v2"
)

// parseTopicArgs splits --topic values into explicit partitions
// (topic:p1,p2) and bare topics (every partition), as Kafka's
// parseTopicPartitionsToReset.
func parseTopicArgs(args []string) (explicit []tp, bare []string, err error) {
	for _, a := range args {
		if !strings.Contains(a, ":") {
			if strings.TrimSpace(a) == "" {
				return nil, nil, errors.New("--topic: empty topic name")
			}
			if !slices.Contains(bare, a) {
				bare = append(bare, a)
			}
			continue
		}
		topic, parts, _ := strings.Cut(a, ":")
		if topic == "" || parts == "" || strings.Contains(parts, ":") {
			return nil, nil, fmt.Errorf("invalid topic arg '%s', expected topic name and partitions", a)
		}
		for _, p := range strings.Split(parts, ",") {
			n, err := strconv.ParseInt(strings.TrimSpace(p), 10, 32)
			if err != nil || n < 0 {
				return nil, nil, fmt.Errorf("invalid partition '%s' specified in topic arg '%s'", p, a)
			}
			if t := (tp{topic, int32(n)}); !slices.Contains(explicit, t) {
				explicit = append(explicit, t)
			}
		}
	}
	return explicit, bare, nil
}

// parseKafkaDateTime reads --to-datetime as Kafka's Utils.getDateTime:
// yyyy-MM-dd'T'HH:mm:ss.SSS with an optional zone (Z, +hh, +hhmm or
// +hh:mm); none means UTC.
func parseKafkaDateTime(s string) (int64, error) {
	_, clock, ok := strings.Cut(s, "T")
	if !ok {
		return 0, fmt.Errorf("--to-datetime %q: it does not contain a 'T' according to ISO8601 format", s)
	}
	if !strings.ContainsAny(clock, "+-Z") {
		s += "Z"
	}
	for _, layout := range []string{"2006-01-02T15:04:05.000Z07:00", "2006-01-02T15:04:05.000Z0700", "2006-01-02T15:04:05.000Z07"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t.UnixMilli(), nil
		}
	}
	return 0, fmt.Errorf("--to-datetime %q: want YYYY-MM-DDTHH:mm:SS.sss with an optional zone (Z, +hh:mm)", s)
}

// isoDuration is java.time.Duration.parse's grammar: days, hours, minutes
// and seconds (with a fraction), each signed, and a sign in front.
var isoDuration = regexp.MustCompile(`(?i)^([-+]?)P(?:([-+]?[0-9]+)D)?(T(?:([-+]?[0-9]+)H)?(?:([-+]?[0-9]+)M)?(?:([-+]?[0-9]+)(?:[.,]([0-9]{0,9}))?S)?)?$`)

// parseISODuration reads --by-duration (PnDTnHnMn.nS) as Java does.
func parseISODuration(s string) (time.Duration, error) {
	m := isoDuration.FindStringSubmatch(s)
	bad := fmt.Errorf("--by-duration %q: want an ISO-8601 duration such as P1DT2H3M4.5S", s)
	if m == nil || m[3] == "T" || (m[2] == "" && m[3] == "") {
		return 0, bad
	}
	var d time.Duration
	for _, f := range []struct {
		v    string
		unit time.Duration
	}{{m[2], 24 * time.Hour}, {m[4], time.Hour}, {m[5], time.Minute}, {m[6], time.Second}} {
		if f.v == "" {
			continue
		}
		n, err := strconv.ParseInt(f.v, 10, 64)
		if err != nil {
			return 0, bad
		}
		d += time.Duration(n) * f.unit
	}
	if m[7] != "" {
		frac := (m[7] + "000000000")[:9]
		ns, _ := strconv.ParseInt(frac, 10, 64)
		if strings.HasPrefix(m[6], "-") {
			ns = -ns
		}
		d += time.Duration(ns)
	}
	if m[1] == "-" {
		d = -d
	}
	return d, nil
}

// resetScenario is the one --to-* / --shift-by / --by-duration choice.
type resetScenario struct {
	kind   string                  // earliest, latest, current, offset, shift, time, file
	offset int64                   // for offset and shift
	millis int64                   // for time
	file   map[string]map[tp]int64 // for file: the plan by group
	// byPartition is one group's plan from file (forGroup).
	byPartition map[tp]int64
}

// scenarioOf reads the scenario flags; exactly one must be given, as Kafka.
func scenarioOf(c *cli.Context, now time.Time) (resetScenario, error) {
	var got []resetScenario
	if c.Bool("to-earliest") {
		got = append(got, resetScenario{kind: "earliest"})
	}
	if c.Bool("to-latest") {
		got = append(got, resetScenario{kind: "latest"})
	}
	if c.Bool("to-current") {
		got = append(got, resetScenario{kind: "current"})
	}
	if c.IsSet("to-offset") {
		got = append(got, resetScenario{kind: "offset", offset: c.Int64("to-offset")})
	}
	if c.IsSet("shift-by") {
		got = append(got, resetScenario{kind: "shift", offset: c.Int64("shift-by")})
	}
	if c.IsSet("to-datetime") {
		ms, err := parseKafkaDateTime(c.String("to-datetime"))
		if err != nil {
			return resetScenario{}, err
		}
		got = append(got, resetScenario{kind: "time", millis: ms})
	}
	if c.IsSet("by-duration") {
		d, err := parseISODuration(c.String("by-duration"))
		if err != nil {
			return resetScenario{}, err
		}
		got = append(got, resetScenario{kind: "time", millis: now.Add(-d).UnixMilli()})
	}
	if c.IsSet("from-file") {
		text, err := os.ReadFile(c.String("from-file"))
		if err != nil {
			return resetScenario{}, fmt.Errorf("--from-file: %w", err)
		}
		plan, err := parseResetCSV(string(text), valuesOf(c, "group"))
		if err != nil {
			return resetScenario{}, fmt.Errorf("--from-file %s: %w", c.String("from-file"), err)
		}
		got = append(got, resetScenario{kind: "file", file: plan})
	}
	if len(got) != 1 {
		return resetScenario{}, errors.New("reset-offsets requires exactly one of --to-earliest, --to-latest, --to-current, --to-offset, --shift-by, --to-datetime, --by-duration, --from-file")
	}
	return got[0], nil
}

// forGroup narrows a file scenario to one group's plan.
func (s resetScenario) forGroup(group string) resetScenario {
	if s.kind == "file" {
		s.byPartition = s.file[group]
	}
	return s
}

// logOffsets is what planReset reads of the partitions' logs; a partition
// missing from a map could not be listed (no leader).
type logOffsets struct {
	start, end, byTime map[tp]int64
}

// planReset is Kafka's reset scenarios for one group: committed is the
// group's committed offsets. Explicit offsets and shifts are kept within
// [log start, log end] (checkOffsetsRange); --to-current falls back to the
// log end where nothing is committed; a time with no record after it
// gives the log end.
func planReset(s resetScenario, parts []tp, committed map[tp]committedOffset, logs logOffsets) (map[tp]int64, error) {
	out := make(map[tp]int64, len(parts))
	need := func(m map[tp]int64, t tp, what string) (int64, error) {
		v, ok := m[t]
		if !ok {
			return 0, fmt.Errorf("error getting %s offset of topic partition: %s-%d", what, t.topic, t.partition)
		}
		return v, nil
	}
	clamp := func(t tp, want int64) (int64, error) {
		end, err := need(logs.end, t, "ending")
		if err != nil {
			return 0, err
		}
		if want > end {
			return end, nil
		}
		start, err := need(logs.start, t, "starting")
		if err != nil {
			return 0, err
		}
		return max(want, start), nil
	}
	for _, t := range parts {
		var v int64
		var err error
		switch s.kind {
		case "earliest":
			v, err = need(logs.start, t, "starting")
		case "latest":
			v, err = need(logs.end, t, "ending")
		case "current":
			if c, ok := committed[t]; ok {
				v = c.offset
			} else {
				v, err = need(logs.end, t, "ending")
			}
		case "offset":
			v, err = clamp(t, s.offset)
		case "shift":
			c, ok := committed[t]
			if !ok {
				return nil, fmt.Errorf("cannot shift offset for partition %s-%d since there is no current committed offset", t.topic, t.partition)
			}
			v, err = clamp(t, c.offset+s.offset)
		case "file":
			want, ok := s.byPartition[t]
			if !ok {
				return nil, fmt.Errorf("no offset for %s-%d in the --from-file plan", t.topic, t.partition)
			}
			v, err = clamp(t, want)
		case "time":
			if v2, ok := logs.byTime[t]; ok {
				v = v2
			} else {
				v, err = need(logs.end, t, "ending")
			}
		default:
			return nil, fmt.Errorf("unknown reset scenario %q", s.kind)
		}
		if err != nil {
			return nil, err
		}
		out[t] = v
	}
	return out, nil
}

func sortedTPs[V any](m map[tp]V) []tp {
	keys := make([]tp, 0, len(m))
	for t := range m {
		keys = append(keys, t)
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i].topic != keys[j].topic {
			return keys[i].topic < keys[j].topic
		}
		return keys[i].partition < keys[j].partition
	})
	return keys
}

// groupPlan is one group's outcome: the offsets, or why it was refused.
type groupPlan struct {
	group   string
	offsets map[tp]int64
	refused string
}

// writeResetPlan is Kafka's printOffsetsToReset (GROUP, TOPIC, PARTITION,
// NEW-OFFSET), with the refusals printed first as Kafka's errors.
func writeResetPlan(w io.Writer, plans []groupPlan) {
	for _, p := range plans {
		if p.refused != "" {
			fmt.Fprintf(w, "\nError: %s\n", p.refused)
		}
	}
	gw, tw := 15, 15
	for _, p := range plans {
		gw = max(gw, len(p.group))
		for t := range p.offsets {
			tw = max(tw, len(t.topic))
		}
	}
	if len(plans) > 0 {
		fmt.Fprintf(w, "\n%-*s %-*s %-10s %s", gw, "GROUP", tw, "TOPIC", "PARTITION", "NEW-OFFSET")
	}
	for _, p := range plans {
		for _, t := range sortedTPs(p.offsets) {
			fmt.Fprintf(w, "\n%-*s %-*s %-10d %d", gw, p.group, tw, t.topic, t.partition, p.offsets[t])
		}
	}
	fmt.Fprintln(w)
}

// writeResetCSV is Kafka's --export: topic,partition,offset for one
// group, group,topic,partition,offset for several.
func writeResetCSV(w io.Writer, plans []groupPlan, withGroup bool) {
	for _, p := range plans {
		for _, t := range sortedTPs(p.offsets) {
			if withGroup {
				fmt.Fprintf(w, "%s,", csvField(p.group))
			}
			fmt.Fprintf(w, "%s,%d,%d\n", csvField(t.topic), t.partition, p.offsets[t])
		}
	}
	fmt.Fprintln(w)
}

// csvField quotes a field that needs it (RFC 4180); topic names never do,
// group ids may.
func csvField(s string) string {
	if !strings.ContainsAny(s, ",\"\r\n") {
		return s
	}
	return `"` + strings.ReplaceAll(s, `"`, `""`) + `"`
}

func groupsResetOffsets(c *cli.Context) error {
	if c.Bool("execute") && c.Bool("dry-run") {
		return errors.New("reset-offsets: --dry-run and --execute cannot be used together")
	}
	topicArgs := valuesOf(c, "topic")
	if c.Bool("all-topics") && len(topicArgs) > 0 || !c.Bool("all-topics") && len(topicArgs) == 0 && !c.IsSet("from-file") {
		return errors.New("reset-offsets: one of the reset scopes should be defined: --all-topics, --topic")
	}
	explicit, bare, err := parseTopicArgs(topicArgs)
	if err != nil {
		return err
	}
	scenario, err := scenarioOf(c, time.Now())
	if err != nil {
		return err
	}
	execute := c.Bool("execute")
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
		var named []tp
		if len(topicArgs) > 0 {
			if named, err = resolvePartitions(ctx, adm, explicit, bare); err != nil {
				return err
			}
		}
		var plans []groupPlan
		refused := 0
		for _, id := range ids {
			g := groups[id]
			if g.state != "Empty" && g.state != "Dead" {
				plans = append(plans, groupPlan{group: id, refused: fmt.Sprintf("Assignments can only be reset if the group '%s' is inactive, but the current state is %s.", id, g.state)})
				refused++
				continue
			}
			committed, err := fetchCommitted(ctx, adm, id)
			if err != nil {
				return requestError(c, "fetch offsets of group "+id, err)
			}
			parts := named
			if c.Bool("all-topics") {
				parts = sortedTPs(committed)
			}
			if scenario.kind == "file" && len(topicArgs) == 0 && !c.Bool("all-topics") {
				plan, ok := scenario.file[id]
				if !ok {
					plans = append(plans, groupPlan{group: id, refused: fmt.Sprintf("No reset plan for group %s found.", id)})
					refused++
					continue
				}
				if parts, err = resolvePartitions(ctx, adm, sortedTPs(plan), nil); err != nil {
					return err
				}
			}
			logs, err := listLogOffsets(ctx, adm, scenario, parts)
			if err != nil {
				return requestError(c, "list offsets", err)
			}
			offsets, err := planReset(scenario.forGroup(id), parts, committed, logs)
			if err != nil {
				return err
			}
			if execute && len(offsets) > 0 {
				if err := commitPlan(ctx, adm, id, offsets); err != nil {
					return requestError(c, "reset offsets of group "+id, err)
				}
			}
			plans = append(plans, groupPlan{group: id, offsets: offsets})
		}
		if c.Bool("export") {
			writeResetCSV(c.App.Writer, plans, len(ids) > 1)
		} else {
			writeResetPlan(c.App.Writer, plans)
		}
		if refused > 0 {
			return fmt.Errorf("reset-offsets: %d of %d groups are not inactive; their offsets were not reset", refused, len(ids))
		}
		return nil
	})
}

// resolvePartitions turns --topic arguments into partitions: bare topics
// expand to all their partitions, and every partition must exist (Kafka's
// checkAllTopicPartitionsValid).
func resolvePartitions(ctx context.Context, adm *kadm.Client, explicit []tp, bare []string) ([]tp, error) {
	var names []string
	for _, t := range explicit {
		if !slices.Contains(names, t.topic) {
			names = append(names, t.topic)
		}
	}
	for _, b := range bare {
		if !slices.Contains(names, b) {
			names = append(names, b)
		}
	}
	details, err := adm.ListTopics(ctx, names...)
	if err != nil {
		return nil, fmt.Errorf("describe topics: %w", err)
	}
	count := func(topic string) int {
		d, ok := details[topic]
		if !ok || d.Err != nil {
			return -1
		}
		return len(d.Partitions)
	}
	out := slices.Clone(explicit)
	var missing []string
	for _, b := range bare {
		n := count(b)
		if n < 0 {
			missing = append(missing, b)
			continue
		}
		for p := range n {
			out = append(out, tp{b, int32(p)})
		}
	}
	for _, t := range explicit {
		if n := count(t.topic); n < 0 || int(t.partition) >= n {
			missing = append(missing, fmt.Sprintf("%s-%d", t.topic, t.partition))
		}
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("the partitions \"%s\" do not exist", strings.Join(missing, ","))
	}
	slices.SortFunc(out, func(a, b tp) int {
		if c := strings.Compare(a.topic, b.topic); c != 0 {
			return c
		}
		return int(a.partition - b.partition)
	})
	return slices.Compact(out), nil
}

// listLogOffsets lists what the scenario needs: start and end always (the
// range check and fallbacks), offsets by time for a time scenario.
func listLogOffsets(ctx context.Context, adm *kadm.Client, s resetScenario, parts []tp) (logOffsets, error) {
	var logs logOffsets
	var err error
	if logs.start, err = listedOffsets(ctx, parts, adm.ListStartOffsets); err != nil {
		return logs, err
	}
	if logs.end, err = listedOffsets(ctx, parts, adm.ListEndOffsets); err != nil {
		return logs, err
	}
	if s.kind == "time" {
		logs.byTime, err = listedOffsets(ctx, parts, func(ctx context.Context, topics ...string) (kadm.ListedOffsets, error) {
			return adm.ListOffsetsAfterMilli(ctx, s.millis, topics...)
		})
	}
	return logs, err
}

// commitPlan commits as an admin does (generation -1, no member): the
// coordinator accepts it only for a group without members.
func commitPlan(ctx context.Context, adm *kadm.Client, group string, offsets map[tp]int64) error {
	offs := kadm.Offsets{}
	for t, at := range offsets {
		offs.Add(kadm.Offset{Topic: t.topic, Partition: t.partition, At: at, LeaderEpoch: -1})
	}
	resp, err := adm.CommitOffsets(ctx, group, offs)
	if err != nil {
		return kafkaErrorOf(err, "")
	}
	var errs []error
	resp.Each(func(r kadm.OffsetResponse) {
		if r.Err != nil {
			errs = append(errs, fmt.Errorf("%s-%d: %w", r.Topic, r.Partition, kafkaErrorOf(r.Err, "")))
		}
	})
	return errors.Join(errs...)
}

// parseResetCSV reads a plan written by --export: topic,partition,offset
// lines for a single --group, group,topic,partition,offset otherwise (or
// when the lines have four fields), as Kafka's parseResetPlan.
func parseResetCSV(text string, groups []string) (map[string]map[tp]int64, error) {
	r := csv.NewReader(strings.NewReader(text))
	r.FieldsPerRecord = -1
	rows, err := r.ReadAll()
	if err != nil {
		return nil, err
	}
	out := map[string]map[tp]int64{}
	for i, row := range rows {
		if len(row) == 1 && strings.TrimSpace(row[0]) == "" {
			continue
		}
		group := ""
		switch {
		case len(row) == 3 && len(groups) == 1:
			group = groups[0]
		case len(row) == 4:
			group, row = row[0], row[1:]
		default:
			return nil, fmt.Errorf("line %d: want topic,partition,offset (one --group) or group,topic,partition,offset", i+1)
		}
		p, err1 := strconv.ParseInt(strings.TrimSpace(row[1]), 10, 32)
		o, err2 := strconv.ParseInt(strings.TrimSpace(row[2]), 10, 64)
		if err1 != nil || err2 != nil || p < 0 || o < 0 || row[0] == "" {
			return nil, fmt.Errorf("line %d: %q is not topic,partition,offset", i+1, strings.Join(row, ","))
		}
		if out[group] == nil {
			out[group] = map[tp]int64{}
		}
		out[group][tp{row[0], int32(p)}] = o
	}
	return out, nil
}
