package broker

import (
	"time"

	"github.com/raftka/raftka/broker/group"
	"github.com/raftka/raftka/broker/replica"
	"github.com/raftka/raftka/metadata"
	"github.com/raftka/raftka/storage/recordbatch"
	"github.com/rs/zerolog"
)

// OffsetsLog writes committed offsets and group generations into
// __consumer_offsets in Kafka's record schemas (see broker/group's
// offsets_log.go), so tools that read the topic see the commits. The Raft
// image stays the source of truth; the topic is a view of it, written by
// each slot's leader as the image changes:
//
//   - A slot this broker starts to lead (at start, after a restart, on
//     failover, or at a new leader epoch) gets every offset and generation
//     of its groups written once: whatever the previous leader wrote or
//     missed, the log then holds the latest value of every key. Keys are
//     repeated, as Kafka's log repeats commits; compaction
//     (cleanup.policy=compact) drops the old ones.
//   - Afterwards each image's changes to the slot's groups are written as
//     they are applied: new or changed offsets, tombstones for deleted
//     offsets and groups, the group record when its generation changes.
//   - An append that fails (leadership moving, a log closing) leaves the
//     slot at the last image it was written up to; the next image, or
//     Retry while none comes (Pending), writes the difference from there,
//     tombstones included.

// Not covered: a key deleted while no broker led its slot (or before the
// new leader took over) keeps its last record in the log, as the new
// leader knows only the image, not what the log holds.
//
// Apply is called from one goroutine, the replica manager's metadata feed,
// after the replica manager has applied the same image, so a slot led in
// the image is led by the local partition.
type OffsetsLog struct {
	node   int32
	append func(slot int32, batch []byte) error
	log    zerolog.Logger
	now    func() time.Time

	prev *metadata.Image
	led  map[int32]ledSlot
}

// ledSlot is a slot led here: at which leader epoch, and up to which image
// its log holds the groups' state (nil: nothing known yet).
type ledSlot struct {
	epoch   int32
	written *metadata.Image
}

// NewOffsetsLog returns the writer for broker node, appending through the
// replica manager as the slots' leader (acks=1: followers copy the records
// by follower fetch like any other).
func NewOffsetsLog(node int32, m *replica.Manager, log zerolog.Logger) *OffsetsLog {
	return newOffsetsLog(node, func(slot int32, batch []byte) error {
		p, err := m.Partition(group.OffsetsTopic, slot)
		if err != nil {
			return err
		}
		_, _, err = p.AppendAsLeader(batch, 1)
		return err
	}, log, time.Now)
}

func newOffsetsLog(node int32, appendFn func(int32, []byte) error, log zerolog.Logger, now func() time.Time) *OffsetsLog {
	return &OffsetsLog{node: node, append: appendFn, log: log, now: now, led: map[int32]ledSlot{}}
}

// Apply writes what img changed for the slots this broker leads. d is the
// image's delta, nil (or reset true) when img does not follow the previous
// image directly: every group of the led slots is then compared.
func (w *OffsetsLog) Apply(img *metadata.Image, d *metadata.Delta, reset bool) {
	prev := w.prev
	w.prev = img
	t, ok := img.Topic(group.OffsetsTopic)
	if !ok || len(t.Partitions) == 0 {
		clear(w.led)
		return
	}
	nSlots := len(t.Partitions)
	led := make(map[int32]ledSlot, len(w.led))
	// Slots grouped by where their log stands, so each group of slots
	// costs one comparison of images.
	type from struct {
		base        *metadata.Image
		incremental bool
	}
	todo := map[from]map[int32]bool{}
	for _, p := range t.Partitions {
		if p.Leader != w.node {
			continue
		}
		ls, ok := w.led[p.Partition]
		if !ok || ls.epoch != p.LeaderEpoch {
			ls = ledSlot{epoch: p.LeaderEpoch}
		}
		led[p.Partition] = ls
		if ls.written == img {
			continue // a Retry: this slot is up to date
		}
		f := from{base: ls.written, incremental: ls.written != nil && ls.written == prev && d != nil && !reset}
		if todo[f] == nil {
			todo[f] = map[int32]bool{}
		}
		todo[f][p.Partition] = true
	}
	w.led = led
	nowMs := w.now().UnixMilli()
	for f, slots := range todo {
		var groups []string // nil: every group
		if f.incremental {
			groups = group.DeltaGroups(d)
		}
		w.write(img, group.OffsetsDiff(f.base, img, groups, slots, nSlots), slots, nowMs)
	}
}

// Pending reports whether a slot led here lags the last image (an append
// failed), so the caller should Retry if no new image comes soon.
func (w *OffsetsLog) Pending() bool {
	for _, ls := range w.led {
		if ls.written != w.prev {
			return true
		}
	}
	return false
}

// Retry writes what the slots led here lack of the last image. It is
// called from Apply's goroutine, between images.
func (w *OffsetsLog) Retry() {
	if w.prev != nil && w.Pending() {
		w.Apply(w.prev, nil, true)
	}
}

// offsetsBatchRecords bounds one appended batch well under the topic's
// default max.message.bytes (1 MiB) for ordinary group and topic names.
const offsetsBatchRecords = 500

// write appends each slot's records and moves the slot to img when all
// of them are in. Part of a slot's records may be in when a later batch
// fails: the retry writes them again, which a compacted log absorbs.
func (w *OffsetsLog) write(img *metadata.Image, recs map[int32][]group.OffsetsRecord, slots map[int32]bool, nowMs int64) {
	for slot := range slots {
		rs := recs[slot]
		var err error
		for len(rs) > 0 && err == nil {
			n := min(len(rs), offsetsBatchRecords)
			err = w.append(slot, offsetsBatch(rs[:n], nowMs))
			rs = rs[n:]
		}
		if err != nil {
			w.log.Warn().Err(err).Str("topic", group.OffsetsTopic).Int32("partition", slot).
				Msg("writing group commits to the offsets topic failed; the next metadata change writes them again")
			continue
		}
		ls := w.led[slot]
		ls.written = img
		w.led[slot] = ls
	}
}

// offsetsBatch stamps every record with the broker's time, as Kafka's
// coordinator stamps its appends (the commit time is in the value), so no
// message.timestamp.*.max.ms setting refuses an old commit rewritten by a
// new slot leader.
func offsetsBatch(rs []group.OffsetsRecord, nowMs int64) []byte {
	out := make([]recordbatch.Record, len(rs))
	for i, r := range rs {
		out[i] = recordbatch.Record{Key: r.Key, Value: r.Value}
	}
	return recordbatch.Build(nowMs, out...)
}
