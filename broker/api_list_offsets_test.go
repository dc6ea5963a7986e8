package broker

import (
	"path/filepath"
	"slices"
	"testing"

	"github.com/raftka/raftka/storage/recordbatch"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func listOffsets(f *partFixture, v int16, topic string, p int32, ts int64, current int32) kmsg.ListOffsetsResponseTopicPartition {
	f.t.Helper()
	req := kmsg.NewPtrListOffsetsRequest()
	req.Version, req.ReplicaID = v, -1
	rt := kmsg.NewListOffsetsRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewListOffsetsRequestTopicPartition()
	rp.Partition, rp.Timestamp, rp.CurrentLeaderEpoch = p, ts, current
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	return f.call(req).(*kmsg.ListOffsetsResponse).Topics[0].Partitions[0]
}

// timedTopic holds one record per batch at timestamps 1000, 2000, 3000
// (offsets 0, 1, 2) plus 2500 at offset 3.
func timedTopic(f *partFixture) [16]byte {
	id := f.topic("timed", nil, []int32{1}, []int32{2})
	for _, ts := range []int64{1000, 2000, 3000, 2500} {
		if r := f.produce(9, 1, "timed", id, map[int32][]byte{0: recordbatch.BuildValues(ts, []byte("v"))})[0]; r.ErrorCode != 0 {
			f.t.Fatalf("produce at %d: %v", ts, kerr.ErrorForCode(r.ErrorCode))
		}
	}
	return id
}

func TestListOffsets(t *testing.T) {
	f := newPartFixture(t)
	timedTopic(f)
	cases := []struct {
		name      string
		version   int16
		part      int32
		ts        int64
		current   int32
		want      int16
		offset    int64
		timestamp int64
	}{
		{"latest", 1, 0, -1, -1, 0, 4, -1},
		{"earliest", 7, 0, -2, -1, 0, 0, -1},
		{"by time exact", 4, 0, 2000, -1, 0, 1, 2000},
		{"by time between: the found record's timestamp", 9, 0, 1500, -1, 0, 1, 2000},
		{"by time before all", 9, 0, 10, -1, 0, 0, 1000},
		{"by time after all", 9, 0, 9000, -1, 0, -1, -1},
		{"max timestamp", 7, 0, -3, -1, 0, 2, 3000},
		{"max timestamp before v7", 6, 0, -3, -1, kerr.UnsupportedVersion.Code, -1, -1},
		{"earliest local", 8, 0, -4, -1, 0, 0, -1},
		{"latest tiered", 9, 0, -5, -1, 0, -1, -1},
		{"current epoch ok", 4, 0, -1, 0, 0, 4, -1},
		{"unknown epoch", 4, 0, -1, 3, kerr.UnknownLeaderEpoch.Code, -1, -1},
		{"not leader", 4, 1, -1, -1, kerr.NotLeaderForPartition.Code, -1, -1},
		{"unknown partition", 10, 5, -1, -1, kerr.UnknownTopicOrPartition.Code, -1, -1},
	}
	for _, c := range cases {
		got := listOffsets(f, c.version, "timed", c.part, c.ts, c.current)
		if got.ErrorCode != c.want || got.Offset != c.offset || got.Timestamp != c.timestamp {
			t.Errorf("%s: error %v offset %d ts %d; want %v, %d, %d", c.name, kerr.ErrorForCode(got.ErrorCode), got.Offset, got.Timestamp,
				kerr.ErrorForCode(c.want), c.offset, c.timestamp)
		}
		if c.want == 0 && c.offset >= 0 && c.version >= 4 && got.LeaderEpoch != 0 {
			t.Errorf("%s: leader epoch %d, want 0", c.name, got.LeaderEpoch)
		}
	}
	// A partition listed twice is refused.
	req := kmsg.NewPtrListOffsetsRequest()
	req.Version = 7
	rt := kmsg.NewListOffsetsRequestTopic()
	rt.Topic = "timed"
	rp := kmsg.NewListOffsetsRequestTopicPartition()
	rp.Timestamp = -1
	rt.Partitions = append(rt.Partitions, rp, rp)
	req.Topics = append(req.Topics, rt)
	for _, p := range f.call(req).(*kmsg.ListOffsetsResponse).Topics[0].Partitions {
		if p.ErrorCode != kerr.InvalidRequest.Code {
			t.Fatalf("duplicate partition: %v", kerr.ErrorForCode(p.ErrorCode))
		}
	}
}

func TestDeleteRecords(t *testing.T) {
	f := newPartFixture(t)
	id := timedTopic(f)
	del := func(p int32, off int64) kmsg.DeleteRecordsResponseTopicPartition {
		req := kmsg.NewPtrDeleteRecordsRequest()
		req.Version, req.TimeoutMillis = 2, 1000
		rt := kmsg.NewDeleteRecordsRequestTopic()
		rt.Topic = "timed"
		rp := kmsg.NewDeleteRecordsRequestTopicPartition()
		rp.Partition, rp.Offset = p, off
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		return f.call(req).(*kmsg.DeleteRecordsResponse).Topics[0].Partitions[0]
	}
	if r := del(0, 9); r.ErrorCode != kerr.OffsetOutOfRange.Code {
		t.Fatalf("beyond the HW: %v", kerr.ErrorForCode(r.ErrorCode))
	}
	if r := del(1, 1); r.ErrorCode != kerr.NotLeaderForPartition.Code {
		t.Fatalf("not leader: %v", kerr.ErrorForCode(r.ErrorCode))
	}
	if r := del(0, 2); r.ErrorCode != 0 || r.LowWatermark != 2 {
		t.Fatalf("delete before 2: error %v low %d", kerr.ErrorForCode(r.ErrorCode), r.LowWatermark)
	}
	if got := listOffsets(f, 7, "timed", 0, -2, -1); got.Offset != 2 {
		t.Fatalf("earliest after delete: %d", got.Offset)
	}
	if got := listOffsets(f, 7, "timed", 0, 1000, -1); got.Offset != 2 {
		t.Fatalf("by time below the log start: %d, want 2", got.Offset)
	}
	p := onlyPartition(t, f.call(fetchReq(12, "timed", id, 0, 0)).(*kmsg.FetchResponse))
	if p.ErrorCode != kerr.OffsetOutOfRange.Code || p.LogStartOffset != 2 {
		t.Fatalf("fetch below the log start: %v, log start %d", kerr.ErrorForCode(p.ErrorCode), p.LogStartOffset)
	}
	if r := del(0, -1); r.ErrorCode != 0 || r.LowWatermark != 4 {
		t.Fatalf("delete to the HW: error %v low %d", kerr.ErrorForCode(r.ErrorCode), r.LowWatermark)
	}
}

func TestOffsetForLeaderEpoch(t *testing.T) {
	f := newPartFixture(t)
	timedTopic(f)
	for v := int16(2); v <= 4; v++ {
		req := kmsg.NewPtrOffsetForLeaderEpochRequest()
		req.Version, req.ReplicaID = v, -1
		rt := kmsg.NewOffsetForLeaderEpochRequestTopic()
		rt.Topic = "timed"
		for _, p := range []struct {
			part, current, epoch int32
		}{{0, 0, 0}, {0, -1, 7}, {0, 2, 0}, {1, -1, 0}, {9, -1, 0}} {
			rp := kmsg.NewOffsetForLeaderEpochRequestTopicPartition()
			rp.Partition, rp.CurrentLeaderEpoch, rp.LeaderEpoch = p.part, p.current, p.epoch
			rt.Partitions = append(rt.Partitions, rp)
		}
		req.Topics = append(req.Topics, rt)
		ps := f.call(req).(*kmsg.OffsetForLeaderEpochResponse).Topics[0].Partitions
		want := []struct {
			code  int16
			epoch int32
			end   int64
		}{
			{0, 0, 4},
			{0, -1, -1}, // an epoch above the latest is unknown (Kafka's LeaderEpochFileCache)
			{kerr.UnknownLeaderEpoch.Code, -1, -1},
			{kerr.NotLeaderForPartition.Code, -1, -1},
			{kerr.UnknownTopicOrPartition.Code, -1, -1},
		}
		for i, w := range want {
			if ps[i].ErrorCode != w.code || ps[i].LeaderEpoch != w.epoch || ps[i].EndOffset != w.end {
				t.Errorf("v%d partition request %d: %v epoch %d end %d; want %v %d %d", v, i,
					kerr.ErrorForCode(ps[i].ErrorCode), ps[i].LeaderEpoch, ps[i].EndOffset, kerr.ErrorForCode(w.code), w.epoch, w.end)
			}
		}
	}
}

func TestDescribeLogDirs(t *testing.T) {
	f := newPartFixture(t)
	timedTopic(f)
	f.topic("other", nil, []int32{1})
	abs, err := filepath.Abs(f.dir)
	if err != nil {
		t.Fatal(err)
	}
	for v := int16(1); v <= 4; v++ {
		req := kmsg.NewPtrDescribeLogDirsRequest()
		req.Version = v
		if v%2 == 0 {
			rt := kmsg.NewDescribeLogDirsRequestTopic()
			rt.Topic, rt.Partitions = "timed", []int32{0}
			req.Topics = append(req.Topics, rt)
		}
		resp := f.call(req).(*kmsg.DescribeLogDirsResponse)
		if len(resp.Dirs) != 1 || resp.Dirs[0].Dir != abs || resp.Dirs[0].ErrorCode != 0 {
			t.Fatalf("v%d: dirs %+v, want just %s", v, resp.Dirs, abs)
		}
		d := resp.Dirs[0]
		topics := map[string]int64{}
		for _, tp := range d.Topics {
			for _, p := range tp.Partitions {
				topics[tp.Topic] += p.Size
				if p.OffsetLag != 0 || p.IsFuture {
					t.Fatalf("v%d: %s-%d lag %d future %v", v, tp.Topic, p.Partition, p.OffsetLag, p.IsFuture)
				}
			}
		}
		if topics["timed"] <= 0 {
			t.Fatalf("v%d: timed has size %d", v, topics["timed"])
		}
		if _, ok := topics["other"]; ok == (v%2 == 0) {
			t.Fatalf("v%d: filter by topic not applied: %v", v, topics)
		}
		if v >= 4 && (d.TotalBytes <= 0 || d.UsableBytes <= 0 || d.UsableBytes > d.TotalBytes) {
			t.Fatalf("v4: total %d usable %d", d.TotalBytes, d.UsableBytes)
		}
	}
}

// TestListOffsetsV0 checks the unadvertised v0 answer Burrow 1.2.1 relies
// on: one OldStyleOffsets entry per partition, by Kafka 3's consumer rules.
func TestListOffsetsV0(t *testing.T) {
	f := newPartFixture(t)
	timedTopic(f)
	cases := []struct {
		name    string
		part    int32
		ts      int64
		max     int32
		code    int16
		offsets []int64
	}{
		{"latest is the high watermark", 0, -1, 1, 0, []int64{4}},
		{"earliest is the log start", 0, -2, 1, 0, []int64{0}},
		{"by time", 0, 1500, 1, 0, []int64{1}},
		{"by time after all", 0, 9000, 1, 0, nil},
		{"several asked for, one answered", 0, -1, 10, 0, []int64{4}},
		{"none asked for", 0, -1, 0, 0, nil},
		{"negative count", 0, -1, -1, kerr.InvalidRequest.Code, nil},
		{"max timestamp is not v0's", 0, -3, 1, kerr.UnsupportedVersion.Code, nil},
		{"not leader", 1, -1, 1, kerr.NotLeaderForPartition.Code, nil},
		{"unknown partition", 5, -1, 1, kerr.UnknownTopicOrPartition.Code, nil},
	}
	for _, c := range cases {
		req := kmsg.NewPtrListOffsetsRequest()
		req.Version, req.ReplicaID = 0, -1
		rt := kmsg.NewListOffsetsRequestTopic()
		rt.Topic = "timed"
		rp := kmsg.NewListOffsetsRequestTopicPartition()
		rp.Partition, rp.Timestamp, rp.MaxNumOffsets = c.part, c.ts, c.max
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		got := f.call(req).(*kmsg.ListOffsetsResponse).Topics[0].Partitions[0]
		if got.ErrorCode != c.code || !slices.Equal(got.OldStyleOffsets, c.offsets) {
			t.Errorf("%s: %v %v; want %v %v", c.name, kerr.ErrorForCode(got.ErrorCode), got.OldStyleOffsets, kerr.ErrorForCode(c.code), c.offsets)
		}
	}
}

// TestListOffsetsV0NotAdvertised holds ApiVersions to Kafka 4.1's range
// while v0 is answered.
func TestListOffsetsV0NotAdvertised(t *testing.T) {
	e := defaultAPIs.lookup(2)
	for _, k := range defaultAPIs.apiKeys() {
		if k.ApiKey == 2 && k.MinVersion != 1 {
			t.Errorf("ListOffsets advertised from v%d, want Kafka 4.1's v1", k.MinVersion)
		}
	}
	if e.check(0) != versionOK || e.check(1) != versionOK || e.check(11) != versionUnsupported {
		t.Errorf("ListOffsets version checks: v0 %v v1 %v v11 %v", e.check(0), e.check(1), e.check(11))
	}
	if d := defaultAPIs.lookup(35); d.check(0) != versionUnsupported { // DescribeLogDirs v0 stays closed
		t.Errorf("DescribeLogDirs v0: %v, want unsupported", d.check(0))
	}
}
