package raftfsm

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"sync/atomic"
	"time"

	"github.com/hashicorp/raft"
	"github.com/raftka/raftka/metadata"
	"github.com/rs/zerolog"
)

// ErrClusterIDMismatch means the replicated image belongs to another cluster
// than this node's meta.properties: the node refuses to run.
var ErrClusterIDMismatch = errors.New("raftfsm: cluster id in the metadata log differs from meta.properties")

// fsm applies committed record batches to the image. hashicorp/raft calls
// Apply, Snapshot and Restore from its single FSM goroutine, never
// concurrently; Persist runs on another goroutine but reads only the image
// pointer Snapshot captured, which never mutates.
type fsm struct {
	pub       *Publisher
	clusterID string
	log       zerolog.Logger
	onFatal   func(error) // called at most once per mismatch, from the FSM goroutine
	obs       Observer

	restores atomic.Int64
	badEntry atomic.Int64
}

// applyResult is what raft.ApplyFuture.Response returns for our entries.
type applyResult struct {
	index uint64
	err   error // the entry did not decode; the image is unchanged
}

func (f *fsm) Apply(l *raft.Log) any {
	if l.Type != raft.LogCommand {
		return nil
	}
	if f.obs != nil {
		start := time.Now()
		defer func() { f.obs.Applied(time.Since(start)) }()
	}
	recs, err := metadata.DecodeRecords(l.Data)
	cur, _ := f.pub.Latest()
	if err != nil {
		// A committed entry that does not decode was written by a newer or
		// broken controller. Every node skips it the same way, so the
		// replicas stay identical; the index still advances so waiters wake.
		f.badEntry.Add(1)
		f.log.Error().Err(err).Uint64("index", l.Index).Msg("skipping undecodable metadata entry")
		f.pub.publish(Event{Image: cur, Delta: nil, Index: l.Index})
		return applyResult{index: l.Index, err: err}
	}
	next, delta := cur.Apply(recs)
	f.pub.publish(Event{Image: next, Delta: delta, Index: l.Index})
	f.checkClusterID(next)
	return applyResult{index: l.Index}
}

func (f *fsm) checkClusterID(img *metadata.Image) {
	if id := img.ClusterID(); id != "" && f.clusterID != "" && id != f.clusterID {
		f.onFatal(fmt.Errorf("%w: log has %q, meta.properties has %q", ErrClusterIDMismatch, id, f.clusterID))
	}
}

func (f *fsm) Snapshot() (raft.FSMSnapshot, error) {
	img, index := f.pub.Latest()
	return &fsmSnapshot{img: img, index: index, obs: f.obs}, nil
}

func (f *fsm) Restore(rc io.ReadCloser) error {
	defer rc.Close()
	img, index, err := readSnapshot(rc)
	if err != nil {
		return err
	}
	f.restores.Add(1)
	f.pub.publish(Event{Image: img, Index: index, Reset: true})
	f.checkClusterID(img)
	return nil
}

// Snapshot file format (inside hashicorp's FileSnapshotStore, which adds its
// own CRC and metadata):
//
//	magic   [8]byte  "RKMETA01"
//	index   uint64   big-endian: Raft index of the last applied record batch
//	length  uint64   big-endian: length of the batch that follows
//	records []byte   metadata.EncodeRecords(image.Records())
var snapshotMagic = [8]byte{'R', 'K', 'M', 'E', 'T', 'A', '0', '1'}

// maxSnapshotBytes refuses absurd lengths before allocating.
const maxSnapshotBytes = 1 << 34

type fsmSnapshot struct {
	img   *metadata.Image
	index uint64
	obs   Observer
}

func (s *fsmSnapshot) Persist(sink raft.SnapshotSink) error {
	start := time.Now()
	w := &countingWriter{w: sink}
	if err := writeSnapshot(w, s.img, s.index); err != nil {
		_ = sink.Cancel()
		return err
	}
	if err := sink.Close(); err != nil {
		return err
	}
	if s.obs != nil {
		s.obs.SnapshotPersisted(w.n.Load(), time.Since(start))
	}
	return nil
}

func (s *fsmSnapshot) Release() {}

func writeSnapshot(w io.Writer, img *metadata.Image, index uint64) error {
	body, err := metadata.EncodeRecords(img.Records())
	if err != nil {
		return fmt.Errorf("raftfsm: encode snapshot: %w", err)
	}
	hdr := make([]byte, 0, 24)
	hdr = append(hdr, snapshotMagic[:]...)
	hdr = binary.BigEndian.AppendUint64(hdr, index)
	hdr = binary.BigEndian.AppendUint64(hdr, uint64(len(body)))
	if _, err := w.Write(hdr); err != nil {
		return err
	}
	_, err = w.Write(body)
	return err
}

// ErrBadSnapshot marks a snapshot that does not parse.
var ErrBadSnapshot = errors.New("raftfsm: bad metadata snapshot")

func readSnapshot(r io.Reader) (*metadata.Image, uint64, error) {
	var hdr [24]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return nil, 0, fmt.Errorf("%w: header: %v", ErrBadSnapshot, err)
	}
	if [8]byte(hdr[:8]) != snapshotMagic {
		return nil, 0, fmt.Errorf("%w: magic %q", ErrBadSnapshot, hdr[:8])
	}
	index := binary.BigEndian.Uint64(hdr[8:16])
	n := binary.BigEndian.Uint64(hdr[16:24])
	if n > maxSnapshotBytes {
		return nil, 0, fmt.Errorf("%w: length %d", ErrBadSnapshot, n)
	}
	body, err := io.ReadAll(io.LimitReader(r, int64(n)))
	if err != nil {
		return nil, 0, fmt.Errorf("%w: %v", ErrBadSnapshot, err)
	}
	if uint64(len(body)) != n {
		return nil, 0, fmt.Errorf("%w: truncated: %d of %d bytes", ErrBadSnapshot, len(body), n)
	}
	recs, err := metadata.DecodeRecords(body)
	if err != nil {
		return nil, 0, fmt.Errorf("%w: %w", ErrBadSnapshot, err)
	}
	img, _ := metadata.NewImage().Apply(recs)
	return img, index, nil
}
