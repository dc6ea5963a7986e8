package main

import (
	"slices"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/raftka/raftka/broker/group"
	"github.com/raftka/raftka/broker/replica"
	"github.com/raftka/raftka/metadata"
)

// groupCollector computes, when scraped, the group counts by state and the
// consumer lag of the groups this broker coordinates: the committed offsets
// are in the metadata image and the high watermarks in the replica
// manager, so nothing on the commit, produce or fetch path keeps a lag
// figure up to date. maxSeries (raftka.metrics.consumer.lag.max.series)
// bounds the lag series one scrape exports.
type groupCollector struct {
	stats     func(*metadata.Image) []group.GroupStat
	image     func() *metadata.Image
	health    func() replica.Health
	maxSeries int
	// remote learns the high watermarks of committed partitions this
	// broker hosts no replica of from their leaders; nil counts them
	// unknown.
	remote *remoteHWs

	groups, lag, dropped, unknown *prometheus.Desc
}

// reportedStates are the states counted; Dead groups are gone.
var reportedStates = []group.State{group.Empty, group.PreparingRebalance, group.CompletingRebalance, group.Stable}

func newGroupCollector(stats func(*metadata.Image) []group.GroupStat, image func() *metadata.Image, health func() replica.Health, maxSeries int, remote *remoteHWs) *groupCollector {
	return &groupCollector{
		stats: stats, image: image, health: health, maxSeries: maxSeries, remote: remote,
		groups: prometheus.NewDesc("raftka_consumer_groups", "Classic consumer groups this broker coordinates, by state.", []string{"state"}, nil),
		lag: prometheus.NewDesc("raftka_consumer_group_lag", "A group's committed offset behind the partition's high watermark, for the groups this broker coordinates.",
			[]string{"group", "topic", "partition"}, nil),
		dropped: prometheus.NewDesc("raftka_consumer_group_lag_series_dropped",
			"Lag series left out of this scrape by raftka.metrics.consumer.lag.max.series.", nil, nil),
		unknown: prometheus.NewDesc("raftka_consumer_group_lag_unknown_partitions",
			"Committed partitions of groups coordinated here whose high watermark is not known yet (no replica here and no answer from the leader so far), so their lag is not exported.", nil, nil),
	}
}

func (c *groupCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.groups, c.lag, c.dropped, c.unknown} {
		ch <- d
	}
}

// lagSample is one exported lag series.
type lagSample struct {
	group, topic string
	partition    int32
	lag          int64
}

func (c *groupCollector) Collect(ch chan<- prometheus.Metric) {
	img := c.image()
	stats := c.stats(img)
	byState := map[group.State]int{}
	for _, s := range stats {
		byState[s.State]++
	}
	for _, st := range reportedStates {
		ch <- prometheus.MustNewConstMetric(c.groups, prometheus.GaugeValue, float64(byState[st]), st.String())
	}
	h := c.health()
	remote := c.remote.lookup(img, remoteCommitted(img, stats, h))
	samples, dropped, unknown := consumerLag(img, stats, h, remote, c.maxSeries)
	for _, s := range samples {
		ch <- prometheus.MustNewConstMetric(c.lag, prometheus.GaugeValue, float64(s.lag), s.group, s.topic, strconv.Itoa(int(s.partition)))
	}
	ch <- prometheus.MustNewConstMetric(c.dropped, prometheus.GaugeValue, float64(dropped))
	ch <- prometheus.MustNewConstMetric(c.unknown, prometheus.GaugeValue, float64(unknown))
}

// consumerLag computes the lag of each committed partition of stats'
// groups: the high watermark this broker knows minus the committed offset,
// never below 0 (a commit past the HW, or a HW not yet learned by a
// follower). The first max by group, topic and partition are returned;
// dropped counts the rest, unknown those whose HW is not known here.
func consumerLag(img *metadata.Image, stats []group.GroupStat, h replica.Health, remote map[metadata.TopicPartition]int64, max int) (out []lagSample, dropped, unknown int) {
	if img == nil {
		return nil, 0, 0
	}
	hw := make(map[metadata.TopicPartition]int64, len(h.Partitions)+len(remote))
	for tp, w := range remote {
		hw[tp] = w
	}
	for _, p := range h.Partitions { // a local replica's HW wins: it is current
		hw[metadata.TopicPartition{Topic: p.Topic, Partition: p.Partition}] = p.HighWatermark
	}
	for _, s := range stats { // by group id
		offs := img.Offsets(s.ID)
		tps := make([]metadata.TopicPartition, 0, len(offs))
		for tp := range offs {
			tps = append(tps, tp)
		}
		slices.SortFunc(tps, func(a, b metadata.TopicPartition) int {
			if a.Topic != b.Topic {
				if a.Topic < b.Topic {
					return -1
				}
				return 1
			}
			return int(a.Partition - b.Partition)
		})
		for _, tp := range tps {
			w, ok := hw[tp]
			if !ok {
				unknown++
				continue
			}
			if len(out) >= max {
				dropped++
				continue
			}
			out = append(out, lagSample{group: s.ID, topic: tp.Topic, partition: tp.Partition, lag: lagOf(w, offs[tp].Offset)})
		}
	}
	return out, dropped, unknown
}

// remoteCommitted lists the committed partitions of stats' groups that h
// (this broker's replicas) does not hold.
func remoteCommitted(img *metadata.Image, stats []group.GroupStat, h replica.Health) []metadata.TopicPartition {
	if img == nil {
		return nil
	}
	local := make(map[metadata.TopicPartition]bool, len(h.Partitions))
	for _, p := range h.Partitions {
		local[metadata.TopicPartition{Topic: p.Topic, Partition: p.Partition}] = true
	}
	seen := map[metadata.TopicPartition]bool{}
	var out []metadata.TopicPartition
	for _, s := range stats {
		for tp := range img.Offsets(s.ID) {
			if !local[tp] && !seen[tp] {
				seen[tp] = true
				out = append(out, tp)
			}
		}
	}
	return out
}

func lagOf(hw, committed int64) int64 {
	if committed < 0 || hw < committed {
		return 0
	}
	return hw - committed
}

// groupMetrics is the coordinator's group.Observer.
type groupMetrics struct {
	rebalances    prometheus.Counter
	rebalanceTime prometheus.Histogram
}

func newGroupMetrics(reg *prometheus.Registry) *groupMetrics {
	g := &groupMetrics{
		rebalances: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "raftka_group_rebalances_total", Help: "Rebalances of groups coordinated here that completed (reached Stable).",
		}),
		rebalanceTime: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "raftka_group_rebalance_time_seconds", Help: "Time from a group entering PreparingRebalance to reaching Stable.",
			// 10 ms to about 20 min: group.initial.rebalance.delay.ms
			// (3 s) up to a max.poll.interval.ms (5 min) and beyond.
			Buckets: prometheus.ExponentialBuckets(0.01, 2.5, 16),
		}),
	}
	reg.MustRegister(g.rebalances, g.rebalanceTime)
	return g
}

var _ group.Observer = (*promMetrics)(nil)

func (m *promMetrics) RebalanceCompleted(d time.Duration) {
	m.groups.rebalances.Inc()
	m.groups.rebalanceTime.Observe(d.Seconds())
}
