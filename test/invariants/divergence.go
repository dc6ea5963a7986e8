package invariants

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/raftka/raftka/storage"
)

// PartitionLog is one replica's copy of a partition: its batches in offset
// order, as the segment files hold them (segment boundaries do not matter:
// replicas may roll at different points).
type PartitionLog struct {
	Batches []storage.Batch
}

// End is the offset after the last batch (the log end offset), or -1 for
// an empty log.
func (l PartitionLog) End() int64 {
	if len(l.Batches) == 0 {
		return -1
	}
	return l.Batches[len(l.Batches)-1].NextOffset()
}

// ReadPartitionLog reads every segment of topic-partition under logDir.
// Each batch must frame and carry a valid CRC; a torn tail (a batch cut
// short by a crash) is an error too, so call it after a clean stop.
func ReadPartitionLog(logDir, topic string, partition int32) (PartitionLog, error) {
	dir := filepath.Join(logDir, topic+"-"+strconv.Itoa(int(partition)))
	entries, err := os.ReadDir(dir)
	if err != nil {
		return PartitionLog{}, err
	}
	type segment struct {
		base int64
		name string
	}
	var segs []segment
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() || !strings.HasSuffix(name, ".log") {
			continue
		}
		base, err := strconv.ParseInt(strings.TrimSuffix(name, ".log"), 10, 64)
		if err != nil {
			continue
		}
		segs = append(segs, segment{base, name})
	}
	slices.SortFunc(segs, func(a, b segment) int { return cmp.Compare(a.base, b.base) })
	var l PartitionLog
	for _, s := range segs {
		data, err := os.ReadFile(filepath.Join(dir, s.name))
		if err != nil {
			return PartitionLog{}, err
		}
		batches, err := parseSegment(data)
		if err != nil {
			return PartitionLog{}, fmt.Errorf("%s/%s: %w", filepath.Base(dir), s.name, err)
		}
		l.Batches = append(l.Batches, batches...)
	}
	return l, nil
}

// parseSegment splits a segment file into batches.
func parseSegment(data []byte) ([]storage.Batch, error) {
	var out []storage.Batch
	for pos := 0; pos < len(data); {
		if len(data)-pos < 12 {
			return out, fmt.Errorf("position %d: %d bytes left, a batch header needs 12", pos, len(data)-pos)
		}
		size, err := storage.BatchSize(data[pos : pos+12])
		if err != nil {
			return out, fmt.Errorf("position %d: %w", pos, err)
		}
		if size > len(data)-pos {
			return out, fmt.Errorf("position %d: batch of %d bytes, %d left", pos, size, len(data)-pos)
		}
		b := storage.Batch(data[pos : pos+size])
		if !b.CRCValid() {
			return out, fmt.Errorf("position %d (offset %d): CRC mismatch", pos, b.BaseOffset())
		}
		out = append(out, b)
		pos += size
	}
	return out, nil
}

// HighWatermarks reads the replication-offset-checkpoint of logDir: the
// high watermark per partition, as the node last checkpointed it (after a
// clean stop, its final one).
func HighWatermarks(logDir string) (map[storage.TopicPartition]int64, error) {
	hw, err := storage.ReadOffsetCheckpoint(filepath.Join(logDir, storage.ReplicationCheckpointFile))
	if errors.Is(err, fs.ErrNotExist) {
		return map[storage.TopicPartition]int64{}, nil
	}
	return hw, err
}

// Divergence is one way replicas disagree below the high watermark.
type Divergence struct {
	Offset int64
	Node   int32 // the replica that differs from the reference
	Ref    int32 // the reference replica (the lowest node id)
	Reason string
}

func (d Divergence) String() string {
	return fmt.Sprintf("offset %d: node %d vs node %d: %s", d.Offset, d.Node, d.Ref, d.Reason)
}

// CompareReplicas checks ARCHITECTURE.md invariant 2 for one partition:
// every replica holds byte-identical batches at identical offsets below hw.
// logs maps node id to that node's copy; the lowest id is the reference. It
// is pure and returns every divergence found (nil when the replicas agree).
func CompareReplicas(logs map[int32]PartitionLog, hw int64) []Divergence {
	if len(logs) < 2 {
		return nil
	}
	ids := make([]int32, 0, len(logs))
	for id := range logs {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	ref := below(logs[ids[0]], hw)
	var out []Divergence
	for _, id := range ids[1:] {
		other := below(logs[id], hw)
		i, j := 0, 0
		for i < len(ref) && j < len(other) {
			a, b := ref[i], other[j]
			switch {
			case a.BaseOffset() < b.BaseOffset():
				out = append(out, Divergence{a.BaseOffset(), id, ids[0], fmt.Sprintf("batch %d..%d missing", a.BaseOffset(), a.LastOffset())})
				i++
			case a.BaseOffset() > b.BaseOffset():
				out = append(out, Divergence{b.BaseOffset(), id, ids[0], fmt.Sprintf("extra batch %d..%d", b.BaseOffset(), b.LastOffset())})
				j++
			default:
				if !bytes.Equal(a, b) {
					out = append(out, Divergence{a.BaseOffset(), id, ids[0], describeDiff(a, b)})
				}
				i++
				j++
			}
		}
		for ; i < len(ref); i++ {
			out = append(out, Divergence{ref[i].BaseOffset(), id, ids[0], fmt.Sprintf("batch %d..%d missing", ref[i].BaseOffset(), ref[i].LastOffset())})
		}
		for ; j < len(other); j++ {
			out = append(out, Divergence{other[j].BaseOffset(), id, ids[0], fmt.Sprintf("extra batch %d..%d", other[j].BaseOffset(), other[j].LastOffset())})
		}
	}
	return out
}

// below returns the batches that hold any offset under hw.
func below(l PartitionLog, hw int64) []storage.Batch {
	n := 0
	for n < len(l.Batches) && l.Batches[n].BaseOffset() < hw {
		n++
	}
	return l.Batches[:n]
}

func describeDiff(a, b storage.Batch) string {
	switch {
	case a.LastOffset() != b.LastOffset():
		return fmt.Sprintf("batch ends at %d vs %d", b.LastOffset(), a.LastOffset())
	case a.PartitionLeaderEpoch() != b.PartitionLeaderEpoch():
		return fmt.Sprintf("leader epoch %d vs %d", b.PartitionLeaderEpoch(), a.PartitionLeaderEpoch())
	case a.ProducerID() != b.ProducerID() || a.BaseSequence() != b.BaseSequence():
		return fmt.Sprintf("producer %d seq %d vs producer %d seq %d", b.ProducerID(), b.BaseSequence(), a.ProducerID(), a.BaseSequence())
	}
	return fmt.Sprintf("%d bytes differ from %d bytes (crc %08x vs %08x)", len(b), len(a), b.CRC(), a.CRC())
}

// DescribeAt describes the batch of l holding each offset: its offsets,
// leader epoch and producer fields, for failure messages about those
// offsets (a duplicate written by a retried idempotent batch shows as two
// batches with one producer id, epoch and sequence).
func DescribeAt(l PartitionLog, offsets ...int64) []string {
	var out []string
	for _, o := range offsets {
		i, _ := slices.BinarySearchFunc(l.Batches, o, func(b storage.Batch, o int64) int {
			switch {
			case b.LastOffset() < o:
				return -1
			case b.BaseOffset() > o:
				return 1
			}
			return 0
		})
		if i == len(l.Batches) || l.Batches[i].BaseOffset() > o {
			out = append(out, fmt.Sprintf("offset %d: no batch", o))
			continue
		}
		b := l.Batches[i]
		out = append(out, fmt.Sprintf("offset %d: batch %d..%d leader epoch %d producer id %d epoch %d base sequence %d, %d records",
			o, b.BaseOffset(), b.LastOffset(), b.PartitionLeaderEpoch(), b.ProducerID(), b.ProducerEpoch(), b.BaseSequence(), b.RecordCount()))
	}
	return out
}
