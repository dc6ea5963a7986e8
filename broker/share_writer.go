package broker

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/raftka/raftka/metadata"
	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kerr"
)

// shareWriter makes share-partition states durable with group commit: at
// most one write is in flight, and everything submitted meanwhile waits
// for the next one, each share-partition as its latest state only. So a
// queue acknowledging records one by one costs one Raft entry per
// controller round trip, not one per acknowledgement: the more load, the
// more each entry carries.
type shareWriter struct {
	w   SharePartitionWriter // nil: memory only (tests)
	log zerolog.Logger
	ctx context.Context

	mu      sync.Mutex
	pending map[metadata.SharePartitionKey]*pendingShare
	order   []metadata.SharePartitionKey
	kick    chan struct{}

	// Writes and states counts what the writer did (tests, metrics).
	writes, states int64
	// evict, when set, is told the share-partitions whose state could not
	// be written, so they are loaded again from the image.
	evict func(metadata.SharePartitionKey)
}

type pendingShare struct {
	rec     *metadata.SharePartitionState
	waiters []chan error
}

func newShareWriter(ctx context.Context, w SharePartitionWriter, log zerolog.Logger) *shareWriter {
	sw := &shareWriter{w: w, log: log, ctx: ctx, pending: map[metadata.SharePartitionKey]*pendingShare{}, kick: make(chan struct{}, 1)}
	if w != nil {
		go sw.loop()
	}
	return sw
}

var closedNil = func() chan error { c := make(chan error, 1); c <- nil; close(c); return c }()

// submit queues rec as its share-partition's latest state; the channel
// gets the outcome of the write that carries it.
func (sw *shareWriter) submit(rec *metadata.SharePartitionState) <-chan error {
	if sw.w == nil {
		return closedNil
	}
	done := make(chan error, 1)
	k := metadata.SharePartitionKey{Group: rec.Group, TopicID: rec.TopicID, Partition: rec.Partition}
	sw.mu.Lock()
	p := sw.pending[k]
	if p == nil {
		p = &pendingShare{}
		sw.pending[k] = p
		sw.order = append(sw.order, k)
	}
	if p.rec != nil && p.rec.StateEpoch > rec.StateEpoch {
		// An admin's rewrite is queued: this older state is already stale.
		sw.mu.Unlock()
		done <- fmt.Errorf("%w: the share-partition state was rewritten", kerr.NotLeaderForPartition)
		return done
	}
	p.rec = rec
	p.waiters = append(p.waiters, done)
	sw.mu.Unlock()
	select {
	case sw.kick <- struct{}{}:
	default:
	}
	return done
}

func (sw *shareWriter) loop() {
	for {
		select {
		case <-sw.ctx.Done():
			sw.failAll(fmt.Errorf("%w: the broker is shutting down", kerr.NotLeaderForPartition))
			return
		case <-sw.kick:
		}
		sw.mu.Lock()
		batch, order := sw.pending, sw.order
		sw.pending, sw.order = map[metadata.SharePartitionKey]*pendingShare{}, nil
		sw.mu.Unlock()
		if len(order) > 0 {
			sw.write(batch, order)
		}
	}
}

func (sw *shareWriter) failAll(err error) {
	sw.mu.Lock()
	defer sw.mu.Unlock()
	for _, p := range sw.pending {
		for _, w := range p.waiters {
			w <- err
		}
	}
	sw.pending, sw.order = map[metadata.SharePartitionKey]*pendingShare{}, nil
}

// write commits one batch, retrying a failed write (the controller is
// changing) for up to 30 s. States fenced by a leader epoch fail with
// NOT_LEADER_OR_FOLLOWER; a write that never succeeds fails them all, and
// their share-partitions are loaded from the image again.
func (sw *shareWriter) write(batch map[metadata.SharePartitionKey]*pendingShare, order []metadata.SharePartitionKey) {
	recs := make([]*metadata.SharePartitionState, len(order))
	for i, k := range order {
		recs[i] = batch[k].rec
	}
	deadline := time.Now().Add(30 * time.Second)
	backoff := 20 * time.Millisecond
	var fenced []int
	var err error
	for {
		ctx, cancel := context.WithTimeout(sw.ctx, 10*time.Second)
		fenced, err = sw.w.WriteSharePartitions(ctx, recs)
		cancel()
		if err == nil || errors.Is(err, kerr.UnsupportedVersion) || time.Now().After(deadline) || sw.ctx.Err() != nil {
			break
		}
		sw.log.Debug().Err(err).Int("states", len(recs)).Msg("share-partition write failed; retrying")
		time.Sleep(backoff)
		backoff = min(2*backoff, time.Second)
	}
	sw.mu.Lock()
	sw.writes++
	sw.states += int64(len(recs))
	sw.mu.Unlock()
	isFenced := make(map[int]bool, len(fenced))
	for _, i := range fenced {
		isFenced[i] = true
	}
	for i, k := range order {
		var res error
		switch {
		case err != nil:
			res = fmt.Errorf("%w: share-partition state not written: %v", kerr.UnknownServerError, err)
			if errors.Is(err, kerr.UnsupportedVersion) {
				res = err
			}
			if sw.evict != nil {
				sw.evict(k)
			}
		case isFenced[i]:
			res = fmt.Errorf("%w: the partition's leader changed", kerr.NotLeaderForPartition)
		}
		for _, w := range batch[k].waiters {
			w <- res
		}
	}
}
