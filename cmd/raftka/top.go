package main

// raftka top: a terminal view of the cluster's health and throughput that
// refreshes in place, for operators on a shell. It speaks only the Kafka
// protocol (DescribeQuorum, DescribeCluster, Metadata, ListOffsets,
// ListGroups, DescribeGroups, OffsetFetch), so it needs nothing but a
// bootstrap server; throughput is the change of the topics' end offsets
// between two refreshes, lag growth the change of each group's lag.

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/mattn/go-isatty"
	"github.com/raftka/raftka/broker"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/urfave/cli/v2"
)

func init() {
	register(&cli.Command{
		Name:   "top",
		Usage:  "watch cluster health and throughput in the terminal, refreshing (also raftka cluster watch)",
		Flags:  topFlags(),
		Action: runTop,
	})
}

// topFlags are raftka top's, shared with raftka cluster watch.
func topFlags() []cli.Flag {
	return []cli.Flag{
		bootstrapFlag(), requestTimeoutFlag(),
		&cli.DurationFlag{Name: "interval", Value: 2 * time.Second, Usage: "time between refreshes"},
		&cli.IntFlag{Name: "iterations", Usage: "stop after this many refreshes (0: until interrupted)"},
		&cli.IntFlag{Name: "rows", Value: 15, Usage: "at most this many topics and this many groups, the busiest first"},
		&cli.BoolFlag{Name: "include-internal", Usage: "also show internal topics (__consumer_offsets, ...)"},
	}
}

// topSnapshot is one refresh's view of the cluster. Each part that could not
// be read carries its error instead, so one failing API does not blank the
// screen.
type topSnapshot struct {
	At        time.Time
	ClusterID string

	QuorumErr   error
	RaftLeader  int32
	Term        int32
	CommitIndex int64
	Voters      []topVoter

	BrokersErr error
	Brokers    []topBroker

	TopicsErr error
	Topics    []topTopic

	GroupsErr error
	Groups    []topGroup
}

type topVoter struct {
	ID     int32
	Leader bool
	Lag    int64 // -1 unknown
}

type topBroker struct {
	ID           int32
	Addr         string
	Fenced       bool
	ShuttingDown bool
	Leaders      int // partitions it leads
}

type topTopic struct {
	Name                  string
	Partitions, URP, Down int // Down: no leader
	EndOffset             int64
}

type topGroup struct {
	Name, State string
	Members     int
	Lag         int64 // -1 unknown
}

func runTop(c *cli.Context) error {
	cl, err := newClient(c)
	if err != nil {
		return err
	}
	defer cl.Close()
	interval := max(c.Duration("interval"), 100*time.Millisecond)
	iterations := c.Int("iterations")
	w := c.App.Writer
	clear := false
	if f, ok := w.(*os.File); ok && isatty.IsTerminal(f.Fd()) {
		clear = true
	}
	opts := topOptions{Rows: max(c.Int("rows"), 1), Interval: interval}
	var prev *topSnapshot
	for i := 0; iterations == 0 || i < iterations; i++ {
		if i > 0 {
			select {
			case <-c.Context.Done():
				return nil
			case <-time.After(interval):
			}
		}
		ctx, cancel := context.WithTimeout(c.Context, c.Duration("request-timeout"))
		cur := takeTopSnapshot(ctx, cl, c.Bool("include-internal"))
		cancel()
		if c.Context.Err() != nil {
			return nil
		}
		var b strings.Builder
		if clear {
			b.WriteString("\x1b[H\x1b[2J") // home, clear screen
		} else if i > 0 {
			b.WriteString("\n")
		}
		renderTop(&b, prev, cur, opts)
		if _, err := io.WriteString(w, b.String()); err != nil {
			return err
		}
		prev = cur
	}
	return nil
}

// takeTopSnapshot asks the cluster for one refresh's figures.
func takeTopSnapshot(ctx context.Context, cl *kgo.Client, internal bool) *topSnapshot {
	s := &topSnapshot{At: time.Now(), RaftLeader: -1}
	if q, err := describeQuorum(ctx, cl); err != nil {
		s.QuorumErr = err
	} else {
		p := q.Topics[0].Partitions[0]
		s.RaftLeader, s.Term, s.CommitIndex = p.LeaderID, p.LeaderEpoch, p.HighWatermark
		for _, v := range p.CurrentVoters {
			lag := int64(-1)
			if v.LogEndOffset >= 0 {
				lag = max(p.HighWatermark-v.LogEndOffset, 0)
			}
			s.Voters = append(s.Voters, topVoter{ID: v.ReplicaID, Leader: v.ReplicaID == p.LeaderID, Lag: lag})
		}
	}
	leaders := map[int32]int{}
	adm := kadm.NewClient(cl)
	md, err := adm.Metadata(ctx)
	if err != nil {
		s.TopicsErr = err
	} else {
		var names []string
		for _, t := range md.Topics.Sorted() {
			if t.Err != nil || (t.IsInternal && !internal) {
				continue
			}
			tt := topTopic{Name: t.Topic, Partitions: len(t.Partitions)}
			for _, p := range t.Partitions {
				if p.Leader < 0 {
					tt.Down++
				} else {
					leaders[p.Leader]++
				}
				if len(p.ISR) < len(p.Replicas) {
					tt.URP++
				}
			}
			s.Topics = append(s.Topics, tt)
			names = append(names, t.Topic)
		}
		if len(names) > 0 {
			ends, err := adm.ListEndOffsets(ctx, names...)
			if err != nil {
				s.TopicsErr = err
			}
			for i := range s.Topics {
				ends.Each(func(o kadm.ListedOffset) {
					if o.Topic == s.Topics[i].Name && o.Err == nil {
						s.Topics[i].EndOffset += o.Offset
					}
				})
			}
		}
	}
	if dc, err := describeCluster(ctx, cl, false); err != nil {
		s.BrokersErr = err
	} else {
		s.ClusterID = dc.ClusterID
		for _, br := range dc.Brokers {
			x := broker.ReadBrokerExtensions(br)
			s.Brokers = append(s.Brokers, topBroker{ID: br.NodeID, Addr: hostPort(br.Host, br.Port), Fenced: x.Fenced, ShuttingDown: x.ShuttingDown, Leaders: leaders[br.NodeID]})
		}
	}
	listed, err := adm.ListGroups(ctx)
	if err != nil {
		s.GroupsErr = err
		return s
	}
	if len(listed) == 0 {
		return s
	}
	lags, err := adm.Lag(ctx, listed.Groups()...)
	if err != nil {
		s.GroupsErr = err
		return s
	}
	for _, g := range lags.Sorted() {
		tg := topGroup{Name: g.Group, State: g.State, Members: len(g.Members), Lag: -1}
		if g.Error() == nil {
			tg.Lag = g.Lag.Total()
		}
		s.Groups = append(s.Groups, tg)
	}
	return s
}

type topOptions struct {
	Rows     int
	Interval time.Duration
}

// renderTop writes one screen: a health line, the quorum and brokers, the
// busiest topics with their records per second since prev, and the groups
// with the most lag and how fast it moves. prev may be nil (first refresh:
// no rates yet).
func renderTop(w io.Writer, prev, cur *topSnapshot, o topOptions) {
	fmt.Fprintf(w, "raftka top  cluster %s  %s  every %s\n", orDash(cur.ClusterID), cur.At.UTC().Format("2006-01-02 15:04:05 UTC"), o.Interval)
	fmt.Fprintf(w, "%s\n\n", topHealth(cur))

	if cur.QuorumErr != nil {
		fmt.Fprintf(w, "Quorum:  unavailable: %v\n", cur.QuorumErr)
	} else {
		var vs []string
		for _, v := range cur.Voters {
			role := ""
			if v.Leader {
				role = " leader"
			}
			lag := "?"
			if v.Lag >= 0 {
				lag = strconv.FormatInt(v.Lag, 10)
			}
			vs = append(vs, fmt.Sprintf("%d%s (lag %s)", v.ID, role, lag))
		}
		fmt.Fprintf(w, "Quorum:  leader %s  term %d  commit index %d  voters %s\n", idOrNone(cur.RaftLeader), cur.Term, cur.CommitIndex, strings.Join(vs, ", "))
	}
	if cur.BrokersErr != nil {
		fmt.Fprintf(w, "Brokers: unavailable: %v\n", cur.BrokersErr)
	} else {
		var bs []string
		for _, b := range cur.Brokers {
			state := "up"
			switch {
			case b.Fenced:
				state = "FENCED"
			case b.ShuttingDown:
				state = "shutting down"
			}
			bs = append(bs, fmt.Sprintf("%d %s %s, leads %d", b.ID, b.Addr, state, b.Leaders))
		}
		fmt.Fprintf(w, "Brokers: %s\n", strings.Join(bs, "; "))
	}

	w.Write([]byte("\n"))
	if cur.TopicsErr != nil {
		fmt.Fprintf(w, "Topics: unavailable: %v\n", cur.TopicsErr)
	}
	rates := map[string]float64{}
	if prev != nil && prev.TopicsErr == nil && cur.At.After(prev.At) {
		dt := cur.At.Sub(prev.At).Seconds()
		for _, p := range prev.Topics {
			for _, t := range cur.Topics {
				if t.Name == p.Name && t.EndOffset >= p.EndOffset {
					rates[t.Name] = float64(t.EndOffset-p.EndOffset) / dt
				}
			}
		}
	}
	topics := slices.Clone(cur.Topics)
	slices.SortStableFunc(topics, func(a, b topTopic) int {
		// Trouble first, then the busiest, then by name.
		if c := cmp.Compare(b.Down+b.URP, a.Down+a.URP); c != 0 {
			return c
		}
		if c := cmp.Compare(rates[b.Name], rates[a.Name]); c != 0 {
			return c
		}
		return cmp.Compare(a.Name, b.Name)
	})
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "TOPIC\tPARTITIONS\tUNDER-REPLICATED\tOFFLINE\tEND OFFSET\tRECORDS/S")
	for i, t := range topics {
		if i == o.Rows {
			break
		}
		rate := "-"
		if r, ok := rates[t.Name]; ok {
			rate = strconv.FormatFloat(r, 'f', 1, 64)
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%s\n", t.Name, t.Partitions, t.URP, t.Down, t.EndOffset, rate)
	}
	tw.Flush()
	if len(topics) > o.Rows {
		fmt.Fprintf(w, "(%d more topics)\n", len(topics)-o.Rows)
	}

	w.Write([]byte("\n"))
	if cur.GroupsErr != nil {
		fmt.Fprintf(w, "Groups: unavailable: %v\n", cur.GroupsErr)
		return
	}
	prevLag := map[string]int64{}
	if prev != nil {
		for _, g := range prev.Groups {
			prevLag[g.Name] = g.Lag
		}
	}
	groups := slices.Clone(cur.Groups)
	slices.SortStableFunc(groups, func(a, b topGroup) int {
		if c := cmp.Compare(b.Lag, a.Lag); c != 0 {
			return c
		}
		return cmp.Compare(a.Name, b.Name)
	})
	tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "GROUP\tSTATE\tMEMBERS\tLAG\tLAG CHANGE/S")
	for i, g := range groups {
		if i == o.Rows {
			break
		}
		lag, change := "?", "-"
		if g.Lag >= 0 {
			lag = strconv.FormatInt(g.Lag, 10)
			if p, ok := prevLag[g.Name]; ok && p >= 0 && cur.At.After(prev.At) {
				change = strconv.FormatFloat(float64(g.Lag-p)/cur.At.Sub(prev.At).Seconds(), 'f', 1, 64)
				if g.Lag > p {
					change = "+" + change
				}
			}
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\n", g.Name, g.State, g.Members, lag, change)
	}
	tw.Flush()
	switch {
	case len(groups) == 0:
		fmt.Fprintln(w, "(no groups)")
	case len(groups) > o.Rows:
		fmt.Fprintf(w, "(%d more groups)\n", len(groups)-o.Rows)
	}
}

// topHealth is the one-line verdict: what is wrong, worst first, or OK.
func topHealth(s *topSnapshot) string {
	var crit, warn []string
	if s.QuorumErr == nil && s.RaftLeader < 0 {
		crit = append(crit, "no active controller")
	}
	var urp, down int
	for _, t := range s.Topics {
		urp += t.URP
		down += t.Down
	}
	if down > 0 {
		crit = append(crit, fmt.Sprintf("%d offline partitions", down))
	}
	if urp > 0 {
		warn = append(warn, fmt.Sprintf("%d under-replicated partitions", urp))
	}
	for _, b := range s.Brokers {
		if b.Fenced {
			warn = append(warn, fmt.Sprintf("broker %d fenced", b.ID))
		}
	}
	for _, err := range []error{s.QuorumErr, s.BrokersErr, s.TopicsErr, s.GroupsErr} {
		if err != nil {
			warn = append(warn, "some answers missing")
			break
		}
	}
	switch {
	case len(crit) > 0:
		return "CRITICAL: " + strings.Join(append(crit, warn...), ", ")
	case len(warn) > 0:
		return "WARNING: " + strings.Join(warn, ", ")
	}
	return "OK: every partition fully replicated, a controller is active"
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
