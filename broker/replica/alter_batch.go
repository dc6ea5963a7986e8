package replica

import (
	"context"
	"errors"
	"slices"
	"sync"
	"time"

	"github.com/raftka/raftka/metadata"
	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// alterBatchMax bounds the partitions of one AlterPartition request, so a
// request stays far below the controller RPC's frame limit (about 50 bytes
// a partition at RF=3) whatever the number of partitions led here.
const alterBatchMax = 10000

// alterItem is one partition's ISR change waiting for, or in, an
// AlterPartition request.
type alterItem struct {
	topic       string
	topicID     [16]byte
	partition   int32
	leaderEpoch int32
	ch          *isrChange
	// answer takes the partition's outcome: its error code and, on
	// success, the partition epoch the controller reports.
	answer func(code int16, partitionEpoch int32)
}

type alterKey struct {
	topicID   [16]byte
	partition int32
}

// alterBatcher sends this broker's ISR changes to the controller as
// Kafka's AlterPartitionManager does: at most one AlterPartition in flight,
// and the changes partitions start meanwhile collect and go together in
// the next request. With one request per change, a restarted broker
// rejoining the ISR of 10,000 partitions cost the controller 10,000
// decisions, each copying the topic's partition table and each its own
// image on every node; batched, it is a handful of requests.
type alterBatcher struct {
	client  AlterPartitionClient
	self    int32
	image   func() *metadata.Image
	start   func(func()) bool // runs the sender where Close waits for it
	ctx     context.Context
	timeout time.Duration
	log     zerolog.Logger
	max     int
	// accepted hears of every change the controller accepted.
	accepted func(shrink bool)

	mu    sync.Mutex
	queue []alterItem
	index map[alterKey]int // queue position by partition
	busy  bool             // a sender goroutine runs
}

// submit queues a change; a sender goroutine starts when none runs. A
// change still unsent for the same partition is replaced: a partition
// starts a new change only after an image settled its previous one, so the
// old one could only be refused as stale (Kafka's manager refuses the new
// one instead, which here would leave the partition waiting a retry for
// nothing).
func (b *alterBatcher) submit(it alterItem) {
	k := alterKey{it.topicID, it.partition}
	b.mu.Lock()
	if b.index == nil {
		b.index = map[alterKey]int{}
	}
	if i, ok := b.index[k]; ok {
		b.queue[i] = it
	} else {
		b.index[k] = len(b.queue)
		b.queue = append(b.queue, it)
	}
	if b.busy {
		b.mu.Unlock()
		return
	}
	b.busy = true
	b.mu.Unlock()
	if b.start(b.run) {
		return
	}
	// Closing: nothing will send these.
	b.mu.Lock()
	q := b.queue
	b.queue, b.index, b.busy = nil, nil, false
	b.mu.Unlock()
	for _, it := range q {
		it.answer(kerr.RequestTimedOut.Code, -1)
	}
}

// run sends batches until the queue is empty.
func (b *alterBatcher) run() {
	for {
		b.mu.Lock()
		n := min(len(b.queue), b.max)
		if n == 0 {
			b.busy = false
			b.mu.Unlock()
			return
		}
		batch := b.queue[:n:n]
		rest := b.queue[n:]
		b.queue, b.index = nil, nil
		if len(rest) > 0 {
			b.queue = slices.Clone(rest)
			b.index = make(map[alterKey]int, len(rest))
			for i, it := range b.queue {
				b.index[alterKey{it.topicID, it.partition}] = i
			}
		}
		b.mu.Unlock()
		b.send(batch)
	}
}

// request builds one AlterPartition (v3) for batch, with the broker epochs
// of the image now.
func (b *alterBatcher) request(batch []alterItem) *kmsg.AlterPartitionRequest {
	img := b.image()
	req := kmsg.NewPtrAlterPartitionRequest()
	req.Version = 3
	req.BrokerID = b.self
	req.BrokerEpoch = -1
	if br, ok := img.Broker(b.self); ok {
		req.BrokerEpoch = br.Epoch
	}
	topics := map[[16]byte]int{}
	for _, it := range batch {
		ti, ok := topics[it.topicID]
		if !ok {
			ti = len(req.Topics)
			topics[it.topicID] = ti
			rt := kmsg.NewAlterPartitionRequestTopic()
			rt.Topic, rt.TopicID = it.topic, it.topicID
			req.Topics = append(req.Topics, rt)
		}
		rp := kmsg.NewAlterPartitionRequestTopicPartition()
		rp.Partition, rp.LeaderEpoch, rp.PartitionEpoch = it.partition, it.leaderEpoch, it.ch.partitionEpoch
		rp.NewISR = slices.Clone(it.ch.newISR)
		for _, r := range it.ch.newISR {
			e := kmsg.NewAlterPartitionRequestTopicPartitionNewEpochISR()
			e.BrokerID, e.BrokerEpoch = r, -1
			if br, ok := img.Broker(r); ok {
				// At Fetch v12 a follower does not send its broker epoch, so
				// the image's is the best the leader knows (KIP-903).
				e.BrokerEpoch = br.Epoch
			}
			rp.NewEpochISR = append(rp.NewEpochISR, e)
		}
		req.Topics[ti].Partitions = append(req.Topics[ti].Partitions, rp)
	}
	return req
}

// send sends one batch and hands each partition its outcome.
func (b *alterBatcher) send(batch []alterItem) {
	req := b.request(batch)
	ctx, cancel := context.WithTimeout(b.ctx, b.timeout)
	resp, err := b.client.AlterPartition(ctx, req)
	cancel()
	outcome := alterPartitionOutcomes(resp, err)
	var refused map[int16]int
	for _, it := range batch {
		code, epoch := outcome(it.topic, it.topicID, it.partition)
		if code == 0 {
			b.accepted(it.ch.shrink)
		} else {
			if refused == nil {
				refused = map[int16]int{}
			}
			refused[code]++
			b.log.Debug().Str("topic", it.topic).Int32("partition", it.partition).Ints32("new_isr", it.ch.newISR).
				Int16("code", code).Msg("AlterPartition not applied")
		}
		it.answer(code, epoch)
	}
	// One line a batch, not one a partition: a batch of thousands refused
	// at once (a controller change) must not flood the log.
	for code, n := range refused {
		b.log.Info().Int("partitions", n).Int("batch", len(batch)).Int16("code", code).AnErr("err", err).
			Msg("AlterPartition not applied")
	}
}

// alterPartitionOutcomes reduces an AlterPartition answer to a lookup of
// one partition's error code and new partition epoch (by topic id, or by
// name for a response without ids).
func alterPartitionOutcomes(resp *kmsg.AlterPartitionResponse, err error) func(topic string, topicID [16]byte, index int32) (int16, int32) {
	fail := func(code int16) func(string, [16]byte, int32) (int16, int32) {
		return func(string, [16]byte, int32) (int16, int32) { return code, -1 }
	}
	switch {
	case err != nil:
		var ke *kerr.Error
		if errors.As(err, &ke) {
			return fail(ke.Code)
		}
		return fail(kerr.RequestTimedOut.Code)
	case resp == nil:
		return fail(kerr.UnknownServerError.Code)
	case resp.ErrorCode != 0:
		return fail(resp.ErrorCode)
	}
	type result struct {
		code  int16
		epoch int32
	}
	type nameKey struct {
		topic     string
		partition int32
	}
	byID := map[alterKey]result{}
	byName := map[nameKey]result{}
	for _, t := range resp.Topics {
		for _, rp := range t.Partitions {
			r := result{rp.ErrorCode, rp.PartitionEpoch}
			if t.TopidID != ([16]byte{}) {
				byID[alterKey{t.TopidID, rp.Partition}] = r
			}
			if t.Topic != "" {
				byName[nameKey{t.Topic, rp.Partition}] = r
			}
		}
	}
	return func(topic string, topicID [16]byte, index int32) (int16, int32) {
		if r, ok := byID[alterKey{topicID, index}]; ok {
			return r.code, r.epoch
		}
		if r, ok := byName[nameKey{topic, index}]; ok {
			return r.code, r.epoch
		}
		return kerr.UnknownServerError.Code, -1
	}
}
