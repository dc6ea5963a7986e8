package raftfsm

import (
	"bytes"
	"testing"

	"github.com/hashicorp/raft"
	"github.com/raftka/raftka/metadata"
	"github.com/rs/zerolog"
	"pgregory.net/rapid"
)

func newTestFSM() *fsm {
	return &fsm{pub: newPublisher(), log: zerolog.Nop(), onFatal: func(error) {}}
}

// genRecord draws records over a small id space so that batches hit the
// same brokers, topics and partitions often, valid or not (Apply is total).
func genRecord(t *rapid.T) metadata.Record {
	broker := rapid.Int32Range(1, 4)
	topicID := rapid.Custom(func(t *rapid.T) [16]byte { return [16]byte{byte(rapid.IntRange(1, 4).Draw(t, "tid"))} })
	reps := rapid.SliceOfNDistinct(broker, 1, 3, rapid.ID[int32])
	switch rapid.IntRange(0, 10).Draw(t, "kind") {
	case 0:
		return &metadata.ClusterID{ID: rapid.SampledFrom([]string{"a", "b"}).Draw(t, "cid")}
	case 1:
		return &metadata.RegisterBroker{BrokerID: broker.Draw(t, "b"), BrokerEpoch: rapid.Int64Range(1, 50).Draw(t, "e"),
			Fenced: rapid.Bool().Draw(t, "f"), Rack: rapid.SampledFrom([]string{"", "r1"}).Draw(t, "rack")}
	case 2:
		return &metadata.FenceBroker{BrokerID: broker.Draw(t, "b"), BrokerEpoch: rapid.Int64Range(1, 50).Draw(t, "e")}
	case 3:
		return &metadata.UnfenceBroker{BrokerID: broker.Draw(t, "b"), BrokerEpoch: rapid.Int64Range(1, 50).Draw(t, "e")}
	case 4:
		n := rapid.IntRange(1, 3).Draw(t, "parts")
		ct := &metadata.CreateTopic{Name: rapid.SampledFrom([]string{"t1", "t2", "t.3", "t_3"}).Draw(t, "name"), ID: topicID.Draw(t, "id")}
		for p := range n {
			r := reps.Draw(t, "reps")
			ct.Partitions = append(ct.Partitions, metadata.PartitionRegistration{Partition: int32(p), Replicas: r, ISR: r, Leader: r[0]})
		}
		return ct
	case 5:
		r := reps.Draw(t, "isr")
		return &metadata.PartitionChange{TopicID: topicID.Draw(t, "id"), Partition: rapid.Int32Range(0, 2).Draw(t, "p"),
			Leader: rapid.SampledFrom([]int32{metadata.NoLeaderChange, metadata.NoLeader, r[0]}).Draw(t, "leader"), ISR: r}
	case 6:
		return &metadata.RemoveTopic{TopicID: topicID.Draw(t, "id")}
	case 7:
		return &metadata.Config{ResourceType: metadata.ConfigResourceTopic, ResourceName: "t1",
			Key: "retention.ms", Value: rapid.SampledFrom([]string{"1", "2"}).Draw(t, "v"), Delete: rapid.Bool().Draw(t, "del")}
	case 8:
		return &metadata.CommitOffsets{Group: rapid.SampledFrom([]string{"g1", "g2"}).Draw(t, "g"),
			Offsets: []metadata.OffsetCommit{{Topic: "t1", Partition: rapid.Int32Range(0, 2).Draw(t, "p"), Offset: rapid.Int64Range(0, 100).Draw(t, "o"), LeaderEpoch: -1}}}
	case 9:
		return &metadata.ProducerIds{BrokerID: broker.Draw(t, "b"), BrokerEpoch: 1, NextProducerID: rapid.Int64Range(0, 5000).Draw(t, "pid")}
	default:
		return &metadata.BrokerShutdown{BrokerID: broker.Draw(t, "b"), BrokerEpoch: rapid.Int64Range(1, 50).Draw(t, "e"), InControlledShutdown: rapid.Bool().Draw(t, "s")}
	}
}

// memSink is a raft.SnapshotSink in memory.
type memSink struct {
	bytes.Buffer
	cancelled bool
}

func (s *memSink) ID() string    { return "mem" }
func (s *memSink) Cancel() error { s.cancelled = true; return nil }
func (s *memSink) Close() error  { return nil }

func TestFSMDeterminismAndSnapshotRoundTrip(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		fsms := []*fsm{newTestFSM(), newTestFSM(), newTestFSM()}
		batches := rapid.SliceOfN(rapid.SliceOfN(rapid.Custom(genRecord), 1, 6), 1, 12).Draw(t, "batches")
		for i, b := range batches {
			data, err := metadata.EncodeRecords(b)
			if err != nil {
				t.Fatalf("encode: %v", err)
			}
			for _, f := range fsms {
				// Each FSM decodes its own copy, as each node does.
				f.Apply(&raft.Log{Index: uint64(i + 1), Type: raft.LogCommand, Data: bytes.Clone(data)})
			}
		}
		img0, idx0 := fsms[0].pub.Current()
		for i, f := range fsms[1:] {
			img, idx := f.pub.Current()
			if !img.Equal(img0) || idx != idx0 {
				t.Fatalf("fsm %d diverged from fsm 0", i+1)
			}
		}
		snap, err := fsms[0].Snapshot()
		if err != nil {
			t.Fatal(err)
		}
		var sink memSink
		if err := snap.Persist(&sink); err != nil || sink.cancelled {
			t.Fatalf("persist: %v", err)
		}
		restored := newTestFSM()
		// Restore discards whatever was there before.
		restored.Apply(&raft.Log{Index: 1, Type: raft.LogCommand, Data: mustEncode(t, &metadata.ClusterID{ID: "junk"})})
		if err := restored.Restore(readCloser{bytes.NewReader(sink.Bytes())}); err != nil {
			t.Fatalf("restore: %v", err)
		}
		img, idx := restored.pub.Current()
		if !img.Equal(img0) || idx != idx0 {
			t.Fatalf("restored image differs (index %d vs %d)", idx, idx0)
		}
	})
}

// TestGroupCommitReplaysAsDecided holds the controller's batching to
// metadata's contract: the controller decides each operation against the
// image with the operations before it applied one at a time, then commits
// all their records as one entry; replaying that entry must give the same
// image, or a decision could rest on a state no replica ever has.
func TestGroupCommitReplaysAsDecided(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		ops := rapid.SliceOfN(rapid.SliceOfN(rapid.Custom(genRecord), 0, 4), 1, 10).Draw(t, "ops")
		scratch := metadata.NewImage()
		var all []metadata.Record
		for _, recs := range ops {
			scratch, _ = scratch.Apply(recs)
			all = append(all, recs...)
		}
		f := newTestFSM()
		f.Apply(&raft.Log{Index: 1, Type: raft.LogCommand, Data: mustEncode(t, all...)})
		if img, _ := f.pub.Current(); !img.Equal(scratch) {
			t.Fatal("one-entry replay differs from the image the controller decided against")
		}
	})
}

func TestFSMSkipsUndecodableEntry(t *testing.T) {
	f := newTestFSM()
	res := f.Apply(&raft.Log{Index: 7, Type: raft.LogCommand, Data: []byte{0xde, 0xad}})
	if r, ok := res.(applyResult); !ok || r.err == nil {
		t.Fatalf("want an error result, got %#v", res)
	}
	if _, idx := f.pub.Current(); idx != 7 {
		t.Fatalf("index %d, want 7: waiters must still wake", idx)
	}
}

func TestFSMClusterIDMismatchIsFatal(t *testing.T) {
	var got error
	f := &fsm{pub: newPublisher(), log: zerolog.Nop(), clusterID: "mine", onFatal: func(err error) { got = err }}
	f.Apply(&raft.Log{Index: 1, Type: raft.LogCommand, Data: mustEncode(t, &metadata.ClusterID{ID: "theirs"})})
	if got == nil {
		t.Fatal("a foreign cluster id in the log must stop the node")
	}
}

type readCloser struct{ *bytes.Reader }

func (readCloser) Close() error { return nil }

type fataler interface{ Fatalf(string, ...any) }

func mustEncode(t fataler, recs ...metadata.Record) []byte {
	b, err := metadata.EncodeRecords(recs)
	if err != nil {
		t.Fatalf("encode: %v", err)
	}
	return b
}

func FuzzReadSnapshot(f *testing.F) {
	var buf bytes.Buffer
	img, _ := metadata.NewImage().Apply([]metadata.Record{&metadata.ClusterID{ID: "c"}})
	if err := writeSnapshot(&buf, img, 42); err != nil {
		f.Fatal(err)
	}
	f.Add(buf.Bytes())
	f.Add([]byte{})
	f.Add(buf.Bytes()[:20])
	f.Add(append(bytes.Clone(buf.Bytes()), 1, 2, 3))
	f.Fuzz(func(t *testing.T, b []byte) {
		img, idx, err := readSnapshot(bytes.NewReader(b))
		if err != nil {
			return
		}
		var out bytes.Buffer
		if err := writeSnapshot(&out, img, idx); err != nil {
			t.Fatalf("re-encode: %v", err)
		}
		img2, idx2, err := readSnapshot(&out)
		if err != nil || idx2 != idx || !img2.Equal(img) {
			t.Fatalf("round trip: %v", err)
		}
	})
}
