package main

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/raftka/raftka/broker/replica"
	"github.com/raftka/raftka/metadata"
)

// partitionCollector computes the partition health gauges when Prometheus
// scrapes, from the replica manager's Health and the metadata image: the
// produce and fetch paths keep no gauge up to date. The names and the JMX
// names they stand for are in METRICS.md.
type partitionCollector struct {
	health func() replica.Health
	// controller reports whether this node runs the active controller;
	// image is its metadata image. Offline partitions are the
	// controller's count, as Kafka's KafkaController reports them.
	controller func() bool
	image      func() *metadata.Image

	activeController                                                     *prometheus.Desc
	partitions, leaders, underReplicated, underMinISR, atMinISR, offline *prometheus.Desc
	isrShrinks, isrExpands                                               *prometheus.Desc
	logSize, logStart, logEnd                                            *prometheus.Desc
	purgatory                                                            *prometheus.Desc
}

func newPartitionCollector(health func() replica.Health, controller func() bool, image func() *metadata.Image) *partitionCollector {
	tp := []string{"topic", "partition"}
	return &partitionCollector{
		health: health, controller: controller, image: image,
		activeController: prometheus.NewDesc("raftka_metadata_active_controller", "1 while this node leads Raft and runs the active controller.", nil, nil),
		partitions:       prometheus.NewDesc("raftka_partitions", "Partitions hosted on this broker, led or followed.", nil, nil),
		leaders:          prometheus.NewDesc("raftka_leader_partitions", "Partitions this broker leads.", nil, nil),
		underReplicated:  prometheus.NewDesc("raftka_under_replicated_partitions", "Partitions led here whose ISR is smaller than their replica set.", nil, nil),
		underMinISR:      prometheus.NewDesc("raftka_under_min_isr_partitions", "Partitions led here whose ISR is below min.insync.replicas (acks=all produces fail).", nil, nil),
		atMinISR:         prometheus.NewDesc("raftka_at_min_isr_partitions", "Partitions led here whose ISR is exactly min.insync.replicas.", nil, nil),
		offline:          prometheus.NewDesc("raftka_offline_partitions", "Partitions without a leader; reported by the active controller only, 0 elsewhere.", nil, nil),
		isrShrinks:       prometheus.NewDesc("raftka_isr_shrinks_total", "ISR shrinks this broker proposed as leader and the controller accepted.", nil, nil),
		isrExpands:       prometheus.NewDesc("raftka_isr_expands_total", "ISR expansions this broker proposed as leader and the controller accepted.", nil, nil),
		logSize:          prometheus.NewDesc("raftka_log_size_bytes", "Bytes of a partition's log segments on this broker.", tp, nil),
		logStart:         prometheus.NewDesc("raftka_log_start_offset", "A partition's log start offset on this broker.", tp, nil),
		logEnd:           prometheus.NewDesc("raftka_log_end_offset", "A partition's log end offset on this broker.", tp, nil),
		purgatory: prometheus.NewDesc("raftka_purgatory_size", "Delayed operations waiting in a purgatory, counted once per partition each watches (Kafka's PurgatorySize).",
			[]string{"operation"}, nil),
	}
}

func (c *partitionCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.activeController, c.partitions, c.leaders, c.underReplicated, c.underMinISR, c.atMinISR, c.offline,
		c.isrShrinks, c.isrExpands, c.logSize, c.logStart, c.logEnd, c.purgatory} {
		ch <- d
	}
}

func (c *partitionCollector) Collect(ch chan<- prometheus.Metric) {
	h := c.health()
	var leaders, under, underMin, atMin int
	for _, p := range h.Partitions {
		if p.Leader {
			leaders++
		}
		if p.UnderReplicated() {
			under++
		}
		if p.UnderMinISR() {
			underMin++
		}
		if p.AtMinISR() {
			atMin++
		}
		part := strconv.Itoa(int(p.Partition))
		ch <- prometheus.MustNewConstMetric(c.logSize, prometheus.GaugeValue, float64(p.LogSize), p.Topic, part)
		ch <- prometheus.MustNewConstMetric(c.logStart, prometheus.GaugeValue, float64(p.LogStartOffset), p.Topic, part)
		ch <- prometheus.MustNewConstMetric(c.logEnd, prometheus.GaugeValue, float64(p.LogEndOffset), p.Topic, part)
	}
	gauge := func(d *prometheus.Desc, n int) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, float64(n))
	}
	gauge(c.partitions, len(h.Partitions))
	gauge(c.leaders, leaders)
	gauge(c.underReplicated, under)
	gauge(c.underMinISR, underMin)
	gauge(c.atMinISR, atMin)
	offline, active := 0, 0
	if c.controller() {
		offline, active = offlinePartitions(c.image()), 1
	}
	gauge(c.activeController, active)
	gauge(c.offline, offline)
	ch <- prometheus.MustNewConstMetric(c.isrShrinks, prometheus.CounterValue, float64(h.IsrShrinks))
	ch <- prometheus.MustNewConstMetric(c.isrExpands, prometheus.CounterValue, float64(h.IsrExpands))
	for _, p := range []struct {
		op string
		n  int
	}{{"Produce", h.ProducePurgatory}, {"Fetch", h.FetchPurgatory}, {"DeleteRecords", h.DeleteRecordsPurgatory}} {
		ch <- prometheus.MustNewConstMetric(c.purgatory, prometheus.GaugeValue, float64(p.n), p.op)
	}
}

// offlinePartitions counts the image's partitions with no leader.
func offlinePartitions(img *metadata.Image) int {
	n := 0
	for _, t := range img.Topics() {
		for _, p := range t.Partitions {
			if p.Leader == metadata.NoLeader {
				n++
			}
		}
	}
	return n
}
