package replica

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"
	"syscall"
	"time"

	"github.com/raftka/raftka/metadata"
	"github.com/raftka/raftka/storage"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Versions the fetcher sends. Fetch v12 is the first with LastFetchedEpoch
// and DivergingEpoch (KIP-320) and the last with topic names, so a fetcher
// needs no topic-id mapping and any leader serving Kafka 2.7+ clients
// answers it; ReplicaID is still a plain field (v15 moved it into
// ReplicaState). OffsetForLeaderEpoch v4 is flexible and carries ReplicaID.
const (
	fetchVersion                = 12
	offsetForLeaderEpochVersion = 4
)

// fetchState is one partition a fetcher follows.
type fetchState struct {
	epoch int32 // the leader epoch it follows at
	// truncating: ask OffsetForLeaderEpoch and truncate before fetching
	// (every new leader epoch starts here, KIP-279).
	truncating bool
	// stalled: the leader is at a newer epoch than ours; wait for the image
	// (Apply re-adds the partition with a fresh state).
	stalled    bool
	delayUntil time.Time // backoff after an error
	// refusals counts the leader's refusals in a row (see
	// partitionErrorLocked); a fetched answer resets it.
	refusals int
}

// fetcher replicates every partition this broker follows from one source
// broker, batching them into one Fetch (and one OffsetForLeaderEpoch) per
// round. Its goroutine (run) is the only writer of those partitions' logs.
type fetcher struct {
	m      *Manager
	source int32
	ctx    context.Context
	cancel context.CancelFunc
	wake   chan struct{}
	recon  chan struct{}

	mu    sync.Mutex
	parts map[*Partition]*fetchState
	// addGen counts adds; readyGen is addGen when ready last listed the
	// partitions, so a poll built from that list carries every add up to
	// it.
	addGen, readyGen uint64
	// dialed is the source's endpoint at the last dial (zero before one);
	// a rebuild from a new image reconnects only if it changed.
	dialed metadata.Endpoint

	// poll cancels the Fetch in flight (nil when none); interrupted marks
	// a cancel by interrupt rather than a failure; pollGen is the readyGen
	// of its partition list.
	pollMu      sync.Mutex
	poll        context.CancelFunc
	interrupted bool
	pollGen     uint64

	// durableWaits is awaitDurable's reused list of group-commit rounds;
	// only the fetcher's goroutine touches it.
	durableWaits []<-chan struct{}
}

// errInterrupted ends a round whose long poll interrupt cut short.
var errInterrupted = errors.New("replica: fetch interrupted for a new partition")

func newFetcher(m *Manager, source int32) *fetcher {
	f := &fetcher{m: m, source: source, wake: make(chan struct{}, 1), recon: make(chan struct{}, 1), parts: map[*Partition]*fetchState{}}
	f.ctx, f.cancel = context.WithCancel(m.ctx)
	return f
}

func signal(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

func (f *fetcher) add(p *Partition, epoch int32) {
	f.mu.Lock()
	f.parts[p] = &fetchState{epoch: epoch, truncating: true}
	f.addGen++
	f.mu.Unlock()
	signal(f.wake)
}

// interruptForAdded cuts short a long poll in flight that lacks partitions
// added since its list was taken. The poll cannot carry them, and it may
// wait replica.fetch.wait.max.ms for data on the others; meanwhile the new
// partitions' first acks=all produces wait too (a new topic, a leader that
// just moved). Manager.Apply calls it once after all its adds, so one
// metadata change costs at most one reconnect to each source. A poll that
// already carries every add is left alone: the fetcher, woken by the add,
// often sends it before Apply gets here, and cutting it cost a reconnect
// for nothing (and left the cut poll parked at the leader until its wait
// ran out, since a leader notices the closed connection only when it
// answers).
func (f *fetcher) interruptForAdded() {
	f.mu.Lock()
	gen := f.addGen
	f.mu.Unlock()
	f.pollMu.Lock()
	defer f.pollMu.Unlock()
	if f.poll != nil && f.pollGen != gen {
		f.cutPollLocked()
	}
}

// cutPollLocked cancels the poll in flight as an interrupt (pollMu held).
func (f *fetcher) cutPollLocked() {
	f.interrupted = true
	f.poll()
	f.poll = nil
}

// remove drops p; once it returns, the fetcher no longer touches p's log.
func (f *fetcher) remove(p *Partition) {
	f.mu.Lock()
	delete(f.parts, p)
	f.mu.Unlock()
}

func (f *fetcher) empty() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.parts) == 0
}

// reconnect makes the next round dial again (the source re-registered).
func (f *fetcher) reconnect() {
	signal(f.recon)
	signal(f.wake)
}

type fetchItem struct {
	p     *Partition
	epoch int32
}

// ready splits the partitions due now into those to truncate and those to
// fetch; next is the earliest time a delayed one becomes due (zero if none).
func (f *fetcher) ready(now time.Time) (trunc, fetch []fetchItem, next time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.readyGen = f.addGen
	for p, st := range f.parts {
		switch {
		case st.stalled:
		case now.Before(st.delayUntil):
			if next.IsZero() || st.delayUntil.Before(next) {
				next = st.delayUntil
			}
		case st.truncating:
			trunc = append(trunc, fetchItem{p, st.epoch})
		default:
			fetch = append(fetch, fetchItem{p, st.epoch})
		}
	}
	return trunc, fetch, next
}

// sleep waits d, a wake-up, or the end; it reports false at the end.
func (f *fetcher) sleep(d time.Duration, wakeable bool) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	var wake chan struct{}
	if wakeable {
		wake = f.wake
	}
	select {
	case <-f.ctx.Done():
		return false
	case <-t.C:
	case <-wake:
	}
	return true
}

func (f *fetcher) run() {
	log := f.m.log.With().Int32("source", f.source).Logger()
	var ep LeaderEndpoint
	defer func() {
		if ep != nil {
			ep.Close()
		}
	}()
	failures := 0
	lost := false // this fetcher marked its source lost (unreachable.go)
	for f.ctx.Err() == nil {
		select {
		case <-f.recon:
			if ep != nil {
				ep.Close()
				ep = nil
			}
		default:
		}
		now := f.m.now()
		trunc, fetch, next := f.ready(now)
		if len(trunc)+len(fetch) == 0 {
			wait := time.Hour
			if !next.IsZero() {
				wait = max(next.Sub(now), time.Millisecond)
			}
			if !f.sleep(wait, true) {
				return
			}
			continue
		}
		var err error
		if ep == nil {
			ep, err = f.dial()
		}
		if err == nil && len(trunc) > 0 {
			err = f.truncate(ep, trunc)
			if err == nil {
				// Partitions whose truncation finished (every new one
				// without epochs does so at once) fetch in this round, not
				// after the others' long poll.
				_, fetch, next = f.ready(f.m.now())
			}
		}
		if err == nil && len(fetch) > 0 {
			wait := f.m.cfg.FetchWaitMax
			if !next.IsZero() {
				// A partition backing off becomes due before the poll
				// would end: end the poll then, so it is not held up by
				// the others' quiet.
				wait = min(wait, max(next.Sub(f.m.now()), 0))
			}
			err = f.fetch(ep, fetch, wait)
		}
		if err == nil {
			if failures > 0 && lost {
				f.m.markReached(f.source)
				lost = false
			}
			failures = 0
			continue
		}
		if f.ctx.Err() != nil {
			return
		}
		if errors.Is(err, errInterrupted) {
			// The connection may still carry the cut poll's answer: start
			// over on a new one, at once.
			ep.Close()
			ep = nil
			continue
		}
		failures++
		if connectionLost(err) {
			f.m.markLost(f.source)
			lost = true
		}
		if failures == 1 || failures%100 == 0 {
			log.Warn().Err(err).Int("failures", failures).Msg("fetching from leader failed; backing off")
		}
		if ep != nil {
			ep.Close()
			ep = nil
		}
		if !f.sleep(f.m.cfg.FetchBackoff, false) {
			return
		}
	}
}

// connectionLost reports whether err is the peer's end of the connection:
// closed (EOF), reset, a broken pipe, or a dial refused, which is what a
// fetcher sees when its source's process dies. Timeouts and the fetcher's
// own cancellations are not.
func connectionLost(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.EPIPE)
}

func (f *fetcher) dial() (LeaderEndpoint, error) {
	b, ok := f.m.img.Load().Broker(f.source)
	if !ok {
		return nil, fmt.Errorf("replica: broker %d is not registered", f.source)
	}
	ep, ok := b.Endpoint(f.m.cfg.InterBrokerListener)
	if !ok {
		return nil, fmt.Errorf("replica: broker %d has no %q listener", f.source, f.m.cfg.InterBrokerListener)
	}
	f.mu.Lock()
	f.dialed = ep
	f.mu.Unlock()
	ctx, cancel := context.WithTimeout(f.ctx, f.m.cfg.RequestTimeout)
	defer cancel()
	return f.m.cfg.Dial(ctx, f.source, ep)
}

// endpointMoved reports whether img gives the source another endpoint than
// the one last dialed.
func (f *fetcher) endpointMoved(img *metadata.Image) bool {
	b, ok := img.Broker(f.source)
	if !ok {
		return true
	}
	ep, ok := b.Endpoint(f.m.cfg.InterBrokerListener)
	f.mu.Lock()
	defer f.mu.Unlock()
	return !ok || ep != f.dialed
}

// delayLocked backs a partition off after a per-partition error.
func (f *fetcher) delayLocked(st *fetchState) {
	st.delayUntil = f.m.now().Add(f.m.cfg.FetchBackoff)
}

// current returns p's state if it is still followed at epoch.
func (f *fetcher) currentLocked(p *Partition, epoch int32) *fetchState {
	st := f.parts[p]
	if st == nil || st.epoch != epoch {
		return nil
	}
	return st
}

// truncate asks the leader where each partition's latest local epoch ends
// and truncates there (KIP-279), possibly over several rounds.
func (f *fetcher) truncate(ep LeaderEndpoint, items []fetchItem) error {
	req := kmsg.NewPtrOffsetForLeaderEpochRequest()
	req.Version = offsetForLeaderEpochVersion
	req.ReplicaID = f.m.cfg.BrokerID
	byTopic := map[string]int{}
	want := map[storage.TopicPartition]fetchItem{}
	f.mu.Lock()
	for _, it := range items {
		st := f.currentLocked(it.p, it.epoch)
		if st == nil {
			continue
		}
		latest, ok := it.p.lg().LeaderEpochs().Latest()
		if !ok {
			if it.p.lg().LogEndOffset() > it.p.lg().LogStartOffset() {
				// Records without any epoch (a lost leader-epoch-checkpoint):
				// nothing to ask the leader about. Kafka's answer for a log
				// without epochs is to cut at the high watermark.
				if err := it.p.truncateAsFollower(it.epoch, it.p.lg().HighWatermark()); err != nil && !errors.Is(err, errStale) {
					f.m.log.Error().Err(err).Stringer("partition", it.p).Msg("truncating a log without epochs")
					f.delayLocked(st)
					continue
				}
			}
			st.truncating = false
			continue
		}
		i, ok := byTopic[it.p.topic]
		if !ok {
			i = len(req.Topics)
			byTopic[it.p.topic] = i
			t := kmsg.NewOffsetForLeaderEpochRequestTopic()
			t.Topic = it.p.topic
			req.Topics = append(req.Topics, t)
		}
		rp := kmsg.NewOffsetForLeaderEpochRequestTopicPartition()
		rp.Partition, rp.CurrentLeaderEpoch, rp.LeaderEpoch = it.p.index, it.epoch, latest.Epoch
		req.Topics[i].Partitions = append(req.Topics[i].Partitions, rp)
		want[storage.TopicPartition{Topic: it.p.topic, Partition: it.p.index}] = it
	}
	f.mu.Unlock()
	if len(want) == 0 {
		return nil
	}
	ctx, cancel := context.WithTimeout(f.ctx, f.m.cfg.RequestTimeout)
	defer cancel()
	resp, err := ep.OffsetForLeaderEpoch(ctx, req)
	if err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, t := range resp.Topics {
		for _, rp := range t.Partitions {
			tp := storage.TopicPartition{Topic: t.Topic, Partition: rp.Partition}
			it, ok := want[tp]
			if !ok {
				continue
			}
			delete(want, tp)
			st := f.currentLocked(it.p, it.epoch)
			if st == nil {
				continue
			}
			if rp.ErrorCode != 0 {
				f.partitionErrorLocked(it.p, st, rp.ErrorCode)
				continue
			}
			f.applyTruncationLocked(it, st, rp.LeaderEpoch, rp.EndOffset)
		}
	}
	for _, it := range want { // not answered
		if st := f.currentLocked(it.p, it.epoch); st != nil {
			f.delayLocked(st)
		}
	}
	return nil
}

// applyTruncationLocked applies the leader's answer (leaderEpoch ends at
// leaderEnd) to one partition.
func (f *fetcher) applyTruncationLocked(it fetchItem, st *fetchState, leaderEpoch int32, leaderEnd int64) {
	p := it.p
	off, complete, ok := truncationTarget(leaderEpoch, leaderEnd, p.lg().EndOffsetForEpoch, p.lg().LogEndOffset())
	if !ok {
		st.truncating = true
		f.delayLocked(st)
		return
	}
	if off < p.lg().LogEndOffset() {
		f.m.log.Info().Stringer("partition", p).Int64("from", p.lg().LogEndOffset()).Int64("to", off).
			Int32("leader_epoch", leaderEpoch).Int64("leader_end", leaderEnd).Msg("truncating to the leader's epoch end")
	}
	// Truncate even when no record goes: an epoch of ours that starts at
	// the cut and holds nothing must go too, or the next fetch names it as
	// LastFetchedEpoch and diverges again, forever (storage.Log.Truncate).
	if err := p.truncateAsFollower(it.epoch, off); err != nil {
		if !errors.Is(err, errStale) {
			f.m.log.Error().Err(err).Stringer("partition", p).Msg("truncation failed")
			f.delayLocked(st)
		}
		return
	}
	st.truncating = !complete
}

// partitionErrorLocked handles a per-partition error code from the leader.
func (f *fetcher) partitionErrorLocked(p *Partition, st *fetchState, code int16) {
	switch code {
	case kerr.FencedLeaderEpoch.Code:
		// The leader is past our epoch: only a new image helps.
		st.stalled = true
	default:
		// NOT_LEADER_OR_FOLLOWER, UNKNOWN_LEADER_EPOCH, UNKNOWN_TOPIC...:
		// the leader has not caught up with the image yet, or we are about
		// to hear of a new leader. The first is the common case right
		// after a topic is created or a leader moves, and lasts
		// milliseconds, while acks=all produces wait on this replica: retry
		// soon, then back off doubling up to replica.fetch.backoff.ms.
		st.delayUntil = f.m.now().Add(refusalBackoff(st.refusals, f.m.cfg.FetchBackoff))
		st.refusals++
	}
	f.m.log.Debug().Stringer("partition", p).Int16("code", code).Msg("leader refused partition")
}

// firstRefusalBackoff is the wait after a leader's first refusal.
const firstRefusalBackoff = 20 * time.Millisecond

// refusalBackoff is the wait after the (n+1)th refusal in a row: 20 ms
// doubling, capped at limit.
func refusalBackoff(n int, limit time.Duration) time.Duration {
	d := firstRefusalBackoff
	for i := 0; i < n && d < limit; i++ {
		d *= 2
	}
	return min(d, limit)
}

// throttleRecheck is how long a fetcher whose every partition is held by
// the follower quota waits before it looks again.
const throttleRecheck = 100 * time.Millisecond

// fetch sends one Fetch for items and appends what comes back. Throttled
// partitions (throttle.go) are left out while the follower quota is used
// up; when that leaves nothing, it waits throttleRecheck instead.
func (f *fetcher) fetch(ep LeaderEndpoint, items []fetchItem, wait time.Duration) error {
	cfg := &f.m.cfg
	img := f.m.img.Load()
	throttled := map[*Partition]bool{}
	exceeded := f.m.followerQuota.exceeded(f.m.now())
	kept := items[:0:0]
	for _, it := range items {
		if f.m.followerThrottled(img, it.p) {
			if exceeded {
				continue
			}
			throttled[it.p] = true
		}
		kept = append(kept, it)
	}
	if len(kept) == 0 {
		f.sleep(throttleRecheck, true)
		return nil
	}
	items = kept
	if items = f.awaitDurable(items); len(items) == 0 {
		return nil
	}
	// Throttled partitions share what the quota still allows (at least
	// one byte: the leader always answers a first batch whole).
	throttledMax := int32(cfg.FetchPartitionMaxBytes)
	if len(throttled) > 0 {
		if a := f.m.followerQuota.allowance(f.m.now()) / float64(len(throttled)); a < float64(throttledMax) {
			throttledMax = max(int32(a), 1)
		}
	}
	req := kmsg.NewPtrFetchRequest()
	req.Version = fetchVersion
	req.ReplicaID = cfg.BrokerID
	req.MaxWaitMillis = int32(wait.Milliseconds())
	req.MinBytes = int32(cfg.FetchMinBytes)
	req.MaxBytes = int32(cfg.FetchMaxBytes)
	req.SessionID, req.SessionEpoch = 0, -1 // no fetch session: full requests
	byTopic := map[string]int{}
	want := map[storage.TopicPartition]fetchItem{}
	for _, it := range items {
		p := it.p
		i, ok := byTopic[p.topic]
		if !ok {
			i = len(req.Topics)
			byTopic[p.topic] = i
			t := kmsg.NewFetchRequestTopic()
			t.Topic, t.TopicID = p.topic, p.topicID
			req.Topics = append(req.Topics, t)
		}
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.Partition, rp.CurrentLeaderEpoch = p.index, it.epoch
		rp.FetchOffset = p.lg().LogEndOffset()
		if latest, ok := p.lg().LeaderEpochs().Latest(); ok {
			rp.LastFetchedEpoch = latest.Epoch
		}
		rp.LogStartOffset = p.lg().LogStartOffset()
		rp.PartitionMaxBytes = int32(cfg.FetchPartitionMaxBytes)
		if throttled[p] {
			rp.PartitionMaxBytes = throttledMax
		}
		rp.HighWatermark = p.lg().HighWatermark()
		req.Topics[i].Partitions = append(req.Topics[i].Partitions, rp)
		want[storage.TopicPartition{Topic: p.topic, Partition: p.index}] = it
	}
	ctx, cancel := context.WithTimeout(f.ctx, cfg.FetchWaitMax+cfg.RequestTimeout)
	defer cancel()
	f.mu.Lock()
	gen, missed := f.readyGen, f.addGen != f.readyGen
	f.mu.Unlock()
	f.pollMu.Lock()
	f.poll, f.interrupted, f.pollGen = cancel, false, gen
	if missed {
		// A partition came after the list this poll was built from, and
		// its interruptForAdded may have found no poll to cut: cut this
		// one now, so the next round carries it.
		f.cutPollLocked()
	}
	f.pollMu.Unlock()
	resp, err := ep.Fetch(ctx, req)
	f.pollMu.Lock()
	interrupted := f.interrupted
	f.poll, f.interrupted = nil, false
	f.pollMu.Unlock()
	if err != nil {
		if interrupted && f.ctx.Err() == nil {
			return errInterrupted
		}
		return err
	}
	if resp.ErrorCode != 0 {
		return fmt.Errorf("replica: fetch from broker %d: %w", f.source, kerr.ErrorForCode(resp.ErrorCode))
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, t := range resp.Topics {
		for i := range t.Partitions {
			rp := &t.Partitions[i]
			it, ok := want[storage.TopicPartition{Topic: t.Topic, Partition: rp.Partition}]
			if !ok {
				continue
			}
			if throttled[it.p] {
				f.m.followerQuota.record(len(rp.RecordBatches), f.m.now())
			}
			st := f.currentLocked(it.p, it.epoch)
			if st == nil || st.truncating {
				continue
			}
			f.handleFetchedLocked(it, st, rp)
		}
	}
	return nil
}

// awaitDurable makes what the fetcher appended to the durable-mode logs
// among items (flush.messages=1) durable before the Fetch that reports it:
// a follower's fetch offset is its LEO to the leader, which counts it
// toward the HW, so it must be on disk first. All the logs' appends since
// the last round wait for one group commit of their log dir
// (storage.Log.MakeDurable), not one fsync each. This goroutine is the
// only writer of these logs, so nothing is appended between the wait and
// the request. A log whose fsync failed is left out (and backs off): its
// offset cannot be reported, so it drops out of the ISR as a replica that
// stopped fetching does. Returns the items to fetch.
func (f *fetcher) awaitDurable(items []fetchItem) []fetchItem {
	waits := f.durableWaits[:0]
	for _, it := range items {
		if ch := it.p.lg().MakeDurable(); ch != nil && !slices.Contains(waits, ch) {
			waits = append(waits, ch)
		}
	}
	for _, ch := range waits {
		select {
		case <-ch:
		case <-f.ctx.Done():
		}
	}
	clear(waits)
	f.durableWaits = waits[:0]
	if len(waits) == 0 {
		return items
	}
	kept := items[:0]
	for _, it := range items {
		if l := it.p.lg(); l.DurableEnd() < l.LogEndOffset() {
			if err := l.FlushError(); err != nil {
				f.m.log.Error().Err(err).Stringer("partition", it.p).Msg("fsync failed in durable mode; not fetching for this replica")
			}
			f.mu.Lock()
			if st := f.currentLocked(it.p, it.epoch); st != nil {
				f.delayLocked(st)
			}
			f.mu.Unlock()
			continue
		}
		kept = append(kept, it)
	}
	return kept
}

func (f *fetcher) handleFetchedLocked(it fetchItem, st *fetchState, rp *kmsg.FetchResponseTopicPartition) {
	p := it.p
	switch rp.ErrorCode {
	case 0:
		st.refusals = 0
	case kerr.OffsetOutOfRange.Code:
		if rp.LogStartOffset > p.lg().LogEndOffset() {
			// The leader's log starts past ours: start over there.
			f.m.log.Info().Stringer("partition", p).Int64("start", rp.LogStartOffset).Msg("leader log starts past ours; resetting")
			if err := p.resetAsFollower(it.epoch, rp.LogStartOffset); err != nil && !errors.Is(err, errStale) {
				f.m.log.Error().Err(err).Stringer("partition", p).Msg("reset failed")
				f.delayLocked(st)
			}
			return
		}
		// Ahead of the leader: find the divergence by epochs.
		st.truncating = true
		f.delayLocked(st)
		return
	default:
		f.partitionErrorLocked(p, st, rp.ErrorCode)
		return
	}
	if d := rp.DivergingEpoch; d.Epoch >= 0 || d.EndOffset >= 0 {
		f.applyTruncationLocked(it, st, d.Epoch, d.EndOffset)
		return
	}
	if _, err := p.appendFromLeader(it.epoch, rp.RecordBatches, rp.HighWatermark, rp.LogStartOffset); err != nil {
		switch {
		case errors.Is(err, errStale):
		case errors.Is(err, storage.ErrUnexpectedOffset):
			st.truncating = true
		default:
			f.m.log.Error().Err(err).Stringer("partition", p).Msg("appending the leader's batches failed")
			f.delayLocked(st)
		}
	}
}
