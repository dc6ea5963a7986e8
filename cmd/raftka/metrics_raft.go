package main

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/raftka/raftka/raftfsm"
)

// raftMetrics is the quorum's side of the Prometheus adapter: the
// raftfsm.Observer's histograms and counters, and the Raft state read at
// scrape time (raftStatsCollector). Names and JMX counterparts are in
// METRICS.md.
type raftMetrics struct {
	commit, apply         prometheus.Histogram
	snapshotTime          prometheus.Histogram
	snapshotBytes         prometheus.Gauge
	elections             *prometheus.CounterVec
	electionTime          prometheus.Histogram
	cleanElect, uncleanEl prometheus.Counter
}

func newRaftMetrics(reg *prometheus.Registry) *raftMetrics {
	// 100 µs (an in-memory apply) to about 10 s (a commit waiting out a
	// lost quorum).
	buckets := prometheus.ExponentialBuckets(0.0001, 2.5, 12)
	r := &raftMetrics{
		commit: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "raftka_raft_commit_time_seconds", Buckets: buckets,
			Help: "Time for the active controller to commit a metadata entry: append, replication to a majority, commit and apply here.",
		}),
		apply: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "raftka_raft_apply_time_seconds", Buckets: buckets,
			Help: "Time this node's metadata state machine took to apply a committed entry.",
		}),
		snapshotTime: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "raftka_raft_snapshot_time_seconds", Buckets: buckets,
			Help: "Time to write a metadata snapshot.",
		}),
		snapshotBytes: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "raftka_raft_snapshot_bytes", Help: "Size of the newest metadata snapshot this node wrote (0 before the first).",
		}),
		elections: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "raftka_leader_elections_total", Help: "Partition leader elections the active controller on this node committed, by type (clean: from the ISR; unclean: outside it).",
		}, []string{"type"}),
		electionTime: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "raftka_leader_election_time_seconds", Buckets: buckets,
			Help: "Time from the active controller deciding a partition leader election to its commit.",
		}),
	}
	r.cleanElect, r.uncleanEl = r.elections.WithLabelValues("clean"), r.elections.WithLabelValues("unclean")
	reg.MustRegister(r.commit, r.apply, r.snapshotTime, r.snapshotBytes, r.elections, r.electionTime)
	return r
}

var _ raftfsm.Observer = (*promMetrics)(nil)

func (m *promMetrics) Committed(d time.Duration) { m.raft.commit.Observe(d.Seconds()) }
func (m *promMetrics) Applied(d time.Duration)   { m.raft.apply.Observe(d.Seconds()) }
func (m *promMetrics) SnapshotPersisted(bytes int64, d time.Duration) {
	m.raft.snapshotTime.Observe(d.Seconds())
	m.raft.snapshotBytes.Set(float64(bytes))
}
func (m *promMetrics) LeaderElected(unclean bool, d time.Duration) {
	if unclean {
		m.raft.uncleanEl.Inc()
	} else {
		m.raft.cleanElect.Inc()
	}
	m.raft.electionTime.Observe(d.Seconds())
}

// raftStatsCollector reads raftfsm.Node.RaftStats when scraped.
type raftStatsCollector struct {
	stats                                          func() raftfsm.RaftStats
	term, commitIndex, lastLog, lastSnap, leaderID *prometheus.Desc
	leaderChanges, applied                         *prometheus.Desc
}

func newRaftStatsCollector(stats func() raftfsm.RaftStats) *raftStatsCollector {
	d := func(name, help string) *prometheus.Desc { return prometheus.NewDesc(name, help, nil, nil) }
	return &raftStatsCollector{
		stats:         stats,
		term:          d("raftka_raft_term", "The Raft term this node is in (KRaft's epoch)."),
		commitIndex:   d("raftka_raft_commit_index", "The newest Raft index this node knows committed."),
		lastLog:       d("raftka_raft_last_log_index", "The newest index in this node's Raft log."),
		lastSnap:      d("raftka_raft_last_snapshot_index", "The Raft index of this node's newest metadata snapshot."),
		leaderID:      d("raftka_raft_leader_id", "Node id of the Raft leader (the active controller), -1 when none is known."),
		leaderChanges: d("raftka_raft_leader_changes_total", "Times this node saw a new Raft leader."),
		applied:       d("raftka_metadata_applied_index", "Raft index of the newest metadata entry this node applied."),
	}
}

func (c *raftStatsCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.term, c.commitIndex, c.lastLog, c.lastSnap, c.leaderID, c.leaderChanges, c.applied} {
		ch <- d
	}
}

func (c *raftStatsCollector) Collect(ch chan<- prometheus.Metric) {
	s := c.stats()
	g := func(d *prometheus.Desc, v float64) { ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v) }
	g(c.term, float64(s.Term))
	g(c.commitIndex, float64(s.CommitIndex))
	g(c.lastLog, float64(s.LastLogIndex))
	g(c.lastSnap, float64(s.LastSnapshotIndex))
	g(c.leaderID, float64(s.LeaderID))
	g(c.applied, float64(s.PublishedIndex))
	ch <- prometheus.MustNewConstMetric(c.leaderChanges, prometheus.CounterValue, float64(s.LeaderChanges))
}
