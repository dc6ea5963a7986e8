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
//   - An append that fails (leadership moved, a log closed) forgets the
//     slot, so it is written in full on the next image if still led here.
//
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
	led  map[int32]int32 // slot -> leader epoch written in full
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
	return &OffsetsLog{node: node, append: appendFn, log: log, now: now, led: map[int32]int32{}}
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
	fresh, known := map[int32]bool{}, map[int32]bool{}
	epochs := map[int32]int32{}
	for _, p := range t.Partitions {
		if p.Leader != w.node {
			continue
		}
		epochs[p.Partition] = p.LeaderEpoch
		if e, ok := w.led[p.Partition]; ok && e == p.LeaderEpoch && prev != nil {
			known[p.Partition] = true
		} else {
			fresh[p.Partition] = true
		}
	}
	for slot := range w.led {
		if _, ok := epochs[slot]; !ok {
			delete(w.led, slot)
		}
	}
	nowMs := w.now().UnixMilli()
	if len(fresh) > 0 {
		for slot := range fresh {
			w.led[slot] = epochs[slot]
		}
		w.write(group.OffsetsDiff(nil, img, nil, fresh, nSlots), fresh, nowMs)
	}
	if len(known) > 0 {
		var groups []string
		if !reset && d != nil {
			groups = group.DeltaGroups(d)
		}
		w.write(group.OffsetsDiff(prev, img, groups, known, nSlots), known, nowMs)
	}
}

// offsetsBatchRecords bounds one appended batch well under the topic's
// default max.message.bytes (1 MiB) for ordinary group and topic names.
const offsetsBatchRecords = 500

func (w *OffsetsLog) write(recs map[int32][]group.OffsetsRecord, slots map[int32]bool, nowMs int64) {
	for slot := range slots {
		rs := recs[slot]
		for len(rs) > 0 {
			n := min(len(rs), offsetsBatchRecords)
			if err := w.append(slot, offsetsBatch(rs[:n], nowMs)); err != nil {
				// Written in full on the next image if still led here.
				delete(w.led, slot)
				w.log.Warn().Err(err).Str("topic", group.OffsetsTopic).Int32("partition", slot).
					Msg("writing group commits to the offsets topic failed; the slot is rewritten from the image on the next metadata change")
				break
			}
			rs = rs[n:]
		}
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
