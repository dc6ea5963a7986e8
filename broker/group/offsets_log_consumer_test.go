package group

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/raftka/raftka/broker/group/consumergroup"
	"github.com/raftka/raftka/metadata"
)

// cgReader reads what cgWriter writes, as Kafka's generated readers of the
// ConsumerGroup* schemas do; a short or malformed input is an error.
type cgReader struct {
	b   []byte
	err error
}

var errShort = errors.New("short record")

func (r *cgReader) take(n int) []byte {
	if r.err != nil || n < 0 || len(r.b) < n {
		r.err = errShort
		return nil
	}
	out := r.b[:n]
	r.b = r.b[n:]
	return out
}
func (r *cgReader) int8() int8 {
	b := r.take(1)
	if b == nil {
		return 0
	}
	return int8(b[0])
}
func (r *cgReader) int16() int16 {
	b := r.take(2)
	if b == nil {
		return 0
	}
	return int16(binary.BigEndian.Uint16(b))
}
func (r *cgReader) int32() int32 {
	b := r.take(4)
	if b == nil {
		return 0
	}
	return int32(binary.BigEndian.Uint32(b))
}
func (r *cgReader) int64() int64 {
	b := r.take(8)
	if b == nil {
		return 0
	}
	return int64(binary.BigEndian.Uint64(b))
}

// compactStr reads a non-nullable compact string; null is an error.
func (r *cgReader) compactStr() string {
	n := r.uvarint()
	if n == 0 {
		r.err = errShort
		return ""
	}
	return string(r.take(n - 1))
}
func (r *cgReader) uvarint() int {
	if r.err != nil {
		return 0
	}
	v, n := binary.Uvarint(r.b)
	if n <= 0 || v > 1<<20 {
		r.err = errShort
		return 0
	}
	r.b = r.b[n:]
	return int(v)
}
func (r *cgReader) str() string { return string(r.take(int(r.int16()))) }

// nullableStr reads null as "", the image's absent value.
func (r *cgReader) nullableStr() string {
	n := r.uvarint()
	if n == 0 {
		return ""
	}
	return string(r.take(n - 1))
}
func (r *cgReader) compactBytes() []byte {
	n := r.uvarint()
	if n == 0 {
		r.err = errShort
		return nil
	}
	return slices.Clone(r.take(n - 1))
}
func (r *cgReader) skipTags() {
	for range r.uvarint() {
		r.uvarint()
		r.take(r.uvarint())
	}
}
func (r *cgReader) partitions() []metadata.ConsumerGroupPartitions {
	n := r.uvarint() - 1
	var out []metadata.ConsumerGroupPartitions
	for i := 0; i < n && r.err == nil; i++ {
		var p metadata.ConsumerGroupPartitions
		copy(p.TopicID[:], r.take(16))
		k := r.uvarint() - 1
		for j := 0; j < k && r.err == nil; j++ {
			p.Partitions = append(p.Partitions, r.int32())
		}
		r.skipTags()
		out = append(out, p)
	}
	return out
}

// decodedCG is a decoded record 3-8 or 16; member fields for 5, 7 and 8,
// the regex's for 16 (key: GroupId, RegularExpression; value: Topics,
// Version, Timestamp, as ConsumerGroupRegularExpressionKey/Value.json).
type decodedCG struct {
	typ          int16
	group        string
	member       string
	tombstone    bool
	epoch        int32
	m            metadata.ConsumerGroupMember
	targetParts  []metadata.ConsumerGroupPartitions
	currentParts [2][]metadata.ConsumerGroupPartitions
	regex        metadata.ConsumerGroupRegex
}

func decodeCG(rec OffsetsRecord) (decodedCG, error) {
	kr := &cgReader{b: rec.Key}
	d := decodedCG{typ: kr.int16()}
	d.group = kr.str()
	switch d.typ {
	case cgMemberMetadataType, cgTargetAssignmentMemberType, cgCurrentAssignmentType:
		d.member = kr.str()
	case cgRegexType:
		d.regex.Regex = kr.str()
	case cgMetadataType, cgTargetAssignmentMetaType:
	default:
		return d, fmt.Errorf("key type %d", d.typ)
	}
	if kr.err != nil || len(kr.b) != 0 {
		return d, fmt.Errorf("key: %v, %d bytes left", kr.err, len(kr.b))
	}
	if rec.Value == nil {
		d.tombstone = true
		return d, nil
	}
	r := &cgReader{b: rec.Value}
	if v := r.int16(); v != 0 {
		return d, fmt.Errorf("value version %d", v)
	}
	switch d.typ {
	case cgMetadataType, cgTargetAssignmentMetaType:
		d.epoch = r.int32()
	case cgMemberMetadataType:
		m := &d.m
		m.MemberID = d.member
		m.InstanceID, m.RackID, m.ClientID, m.ClientHost = r.nullableStr(), r.nullableStr(), r.nullableStr(), r.nullableStr()
		n := r.uvarint() - 1
		for i := 0; i < n && r.err == nil; i++ {
			m.SubscribedTopicNames = append(m.SubscribedTopicNames, r.nullableStr())
		}
		m.SubscribedTopicRegex = r.nullableStr()
		m.RebalanceTimeoutMs = r.int32()
		m.ServerAssignor = r.nullableStr()
		for range r.uvarint() {
			tag, size := r.uvarint(), r.uvarint()
			tr := &cgReader{b: r.take(size)}
			if tag != 0 {
				continue
			}
			c := &metadata.ConsumerGroupClassicMember{SessionTimeoutMs: tr.int32()}
			np := tr.uvarint() - 1
			for i := 0; i < np && tr.err == nil; i++ {
				p := metadata.ConsumerGroupClassicProtocol{Name: tr.nullableStr(), Metadata: tr.compactBytes()}
				tr.skipTags()
				c.Protocols = append(c.Protocols, p)
			}
			tr.skipTags()
			if tr.err != nil || len(tr.b) != 0 {
				return d, fmt.Errorf("ClassicMemberMetadata: %v, %d bytes left", tr.err, len(tr.b))
			}
			m.Classic = c
		}
		if r.err != nil || len(r.b) != 0 {
			return d, fmt.Errorf("member value: %v, %d bytes left", r.err, len(r.b))
		}
		return d, nil
	case cgTargetAssignmentMemberType:
		d.targetParts = r.partitions()
	case cgCurrentAssignmentType:
		d.m.Epoch, d.m.PreviousEpoch, d.m.State = r.int32(), r.int32(), r.int8()
		d.currentParts[0], d.currentParts[1] = r.partitions(), r.partitions()
	case cgRegexType:
		n := r.uvarint() - 1 // Topics: a compact array, not nullable
		if n < 0 {
			return d, errors.New("regex value: null topics")
		}
		d.regex.Topics = []string{}
		for i := 0; i < n && r.err == nil; i++ {
			d.regex.Topics = append(d.regex.Topics, r.compactStr())
		}
		d.regex.Version, d.regex.TimestampMs = r.int64(), r.int64()
	}
	r.skipTags()
	if r.err != nil || len(r.b) != 0 {
		return d, fmt.Errorf("value: %v, %d bytes left", r.err, len(r.b))
	}
	return d, nil
}

var (
	topicA = [16]byte{1, 2, 3}
	topicB = [16]byte{9}
)

func cgFixture() *metadata.ConsumerGroup {
	return &metadata.ConsumerGroup{Group: "cg", Epoch: 7, AssignmentEpoch: 7,
		Topics: []metadata.ConsumerGroupTopic{{Name: "a", ID: topicA, Partitions: 3}, {Name: "b", ID: topicB, Partitions: 1}},
		Members: []metadata.ConsumerGroupMember{
			{MemberID: "m1", ClientID: "franz", ClientHost: "/127.0.0.1", Epoch: 7, PreviousEpoch: 6, RebalanceTimeoutMs: 45000,
				SubscribedTopicNames: []string{"b", "a"}, ServerAssignor: "uniform", RackID: "r1",
				Assigned: []metadata.ConsumerGroupPartitions{{TopicID: topicA, Partitions: []int32{0, 1}}},
				Target:   []metadata.ConsumerGroupPartitions{{TopicID: topicA, Partitions: []int32{0, 1}}}},
			{MemberID: "m2", InstanceID: "i2", ClientID: "sarama", ClientHost: "/127.0.0.2", Epoch: 6, PreviousEpoch: 5, State: 1, RebalanceTimeoutMs: 30000,
				SubscribedTopicNames: []string{"a", "b"},
				Classic: &metadata.ConsumerGroupClassicMember{SessionTimeoutMs: 10000,
					Protocols: []metadata.ConsumerGroupClassicProtocol{{Name: "range", Metadata: []byte{0, 1, 2}}, {Name: "roundrobin", Metadata: []byte{}}}},
				Assigned:          []metadata.ConsumerGroupPartitions{{TopicID: topicA, Partitions: []int32{2}}},
				PendingRevocation: []metadata.ConsumerGroupPartitions{{TopicID: topicB, Partitions: []int32{0}}},
				Target:            []metadata.ConsumerGroupPartitions{{TopicID: topicA, Partitions: []int32{2}}, {TopicID: topicB, Partitions: []int32{0}}}},
			{MemberID: "m3", ClientID: "c", ClientHost: "h", SubscribedTopicRegex: "^a.*", RebalanceTimeoutMs: -1, State: 2},
		},
		Regexes: []metadata.ConsumerGroupRegex{{Regex: "^a.*", Topics: []string{"a"}, Version: 42, TimestampMs: 1700000000000}}}
}

// Hand-assembled bytes of the two smallest schemas, so the layout is
// checked against Kafka's JSON schemas and not only against this file's
// own reader.
func TestConsumerGroupRecordBytes(t *testing.T) {
	cg := cgFixture()
	epoch := ConsumerGroupEpochRecord(cg)
	if want := []byte{0, 3, 0, 2, 'c', 'g'}; !bytes.Equal(epoch.Key, want) {
		t.Errorf("ConsumerGroupMetadataKey %x, want %x", epoch.Key, want)
	}
	if want := []byte{0, 0, 0, 0, 0, 7, 0}; !bytes.Equal(epoch.Value, want) {
		t.Errorf("ConsumerGroupMetadataValue %x, want %x", epoch.Value, want)
	}
	cur := ConsumerGroupCurrentRecord("cg", &cg.Members[1])
	if want := []byte{0, 8, 0, 2, 'c', 'g', 0, 2, 'm', '2'}; !bytes.Equal(cur.Key, want) {
		t.Errorf("ConsumerGroupCurrentMemberAssignmentKey %x, want %x", cur.Key, want)
	}
	want := []byte{0, 0, 0, 0, 0, 6, 0, 0, 0, 5, 1,
		2, 1, 2, 3, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0, 2, 0, // assigned: topic a [2]
		2, 9, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0, 0, 0, // pending revocation: topic b [0]
		0}
	if !bytes.Equal(cur.Value, want) {
		t.Errorf("ConsumerGroupCurrentMemberAssignmentValue\n%x, want\n%x", cur.Value, want)
	}
	// Record 16: key GroupId, RegularExpression (int16-length strings);
	// value version 0, Topics (compact array of compact strings), Version
	// and Timestamp (int64), no tags.
	re := ConsumerGroupRegexRecord("cg", &metadata.ConsumerGroupRegex{Regex: "o.*", Topics: []string{"ob", "oa"}, Version: 258, TimestampMs: -1})
	if want := []byte{0, 16, 0, 2, 'c', 'g', 0, 3, 'o', '.', '*'}; !bytes.Equal(re.Key, want) {
		t.Errorf("ConsumerGroupRegularExpressionKey %x, want %x", re.Key, want)
	}
	want = []byte{0, 0, 3, 3, 'o', 'a', 3, 'o', 'b', // sorted, as Kafka writes them
		0, 0, 0, 0, 0, 0, 1, 2, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0}
	if !bytes.Equal(re.Value, want) {
		t.Errorf("ConsumerGroupRegularExpressionValue\n%x, want\n%x", re.Value, want)
	}
	none := ConsumerGroupRegexRecord("cg", &metadata.ConsumerGroupRegex{Regex: "x", Version: 1, TimestampMs: 2})
	if want := []byte{0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 2, 0}; !bytes.Equal(none.Value, want) {
		t.Errorf("a regex matching nothing: %x, want %x (an empty array, not null)", none.Value, want)
	}
}

func TestConsumerGroupRecordsRoundTrip(t *testing.T) {
	cg := cgFixture()
	for i := range cg.Members {
		m := &cg.Members[i]
		d, err := decodeCG(ConsumerGroupMemberRecord(cg.Group, m))
		if err != nil {
			t.Fatalf("member %s: %v", m.MemberID, err)
		}
		want := metadata.ConsumerGroupMember{MemberID: m.MemberID, InstanceID: m.InstanceID, RackID: m.RackID, ClientID: m.ClientID,
			ClientHost: m.ClientHost, SubscribedTopicNames: slices.Sorted(slices.Values(m.SubscribedTopicNames)),
			SubscribedTopicRegex: m.SubscribedTopicRegex, RebalanceTimeoutMs: m.RebalanceTimeoutMs, ServerAssignor: m.ServerAssignor, Classic: m.Classic}
		if d.typ != cgMemberMetadataType || d.group != "cg" || !reflect.DeepEqual(d.m, want) {
			t.Errorf("member %s decoded as\n%+v, want\n%+v", m.MemberID, d.m, want)
		}
		if d, err = decodeCG(ConsumerGroupTargetMemberRecord(cg.Group, m)); err != nil || d.member != m.MemberID || !partsSame(d.targetParts, m.Target) {
			t.Errorf("target of %s: %+v %v", m.MemberID, d.targetParts, err)
		}
		d, err = decodeCG(ConsumerGroupCurrentRecord(cg.Group, m))
		if err != nil || d.m.Epoch != m.Epoch || d.m.PreviousEpoch != m.PreviousEpoch || d.m.State != m.State ||
			!partsSame(d.currentParts[0], m.Assigned) || !partsSame(d.currentParts[1], m.PendingRevocation) {
			t.Errorf("current assignment of %s: %+v %v", m.MemberID, d, err)
		}
	}
	if d, err := decodeCG(ConsumerGroupTargetEpochRecord(cg)); err != nil || d.typ != cgTargetAssignmentMetaType || d.epoch != 7 {
		t.Errorf("target epoch: %+v %v", d, err)
	}
	for i := range cg.Regexes {
		r := &cg.Regexes[i]
		if d, err := decodeCG(ConsumerGroupRegexRecord(cg.Group, r)); err != nil || d.typ != cgRegexType || d.group != "cg" || !reflect.DeepEqual(d.regex, *r) {
			t.Errorf("regex %s decoded as %+v %v", r.Regex, d.regex, err)
		}
	}
}

func cgTypes(t *testing.T, recs []OffsetsRecord) []string {
	t.Helper()
	var out []string
	for _, r := range recs {
		d, err := decodeCG(r)
		if err != nil {
			t.Fatalf("record %x: %v", r.Key, err)
		}
		s := fmt.Sprint(d.typ)
		if d.member != "" {
			s += ":" + d.member
		}
		if d.typ == cgRegexType {
			s += ":" + d.regex.Regex
		}
		if d.tombstone {
			s += ":x"
		}
		out = append(out, s)
	}
	return out
}

func TestConsumerGroupDiff(t *testing.T) {
	base := cgFixture()
	leave := cgFixture() // m3 leaves, the last member of its regex
	leave.Epoch = 8
	leave.Members, leave.Regexes = leave.Members[:2], nil
	reconcile := cgFixture()
	reconcile.Members[1].Epoch, reconcile.Members[1].PreviousEpoch, reconcile.Members[1].State = 7, 6, 0
	reconcile.Members[1].PendingRevocation = nil
	retarget := cgFixture()
	retarget.AssignmentEpoch = 8
	retarget.Members[0].Target = nil
	resub := cgFixture()
	resub.Members[2].SubscribedTopicRegex = "^b"
	resub.Topics = resub.Topics[1:]
	resub.Epoch = 8
	resub.Regexes = []metadata.ConsumerGroupRegex{{Regex: "^b", Topics: []string{"b"}, Version: 50, TimestampMs: 1700000001000}}
	reresolve := cgFixture()
	reresolve.Epoch = 8
	reresolve.Regexes[0].Topics, reresolve.Regexes[0].Version, reresolve.Regexes[0].TimestampMs = []string{"a", "ab"}, 60, 1700000002000

	reproto := cgFixture()
	reproto.Members[1].Classic.Protocols[0].Metadata = []byte{7}
	for _, tc := range []struct {
		name       string
		prev, next *metadata.ConsumerGroup
		want       []string
	}{
		{"new group (or a new slot leader)", nil, base,
			[]string{"5:m1", "5:m2", "5:m3", "16:^a.*", "3", "7:m1", "7:m2", "7:m3", "6", "8:m1", "8:m2", "8:m3"}},
		{"nothing changed", base, cgFixture(), nil},
		{"a member leaves (its regex is still used)", base, func() *metadata.ConsumerGroup {
			l := cgFixture()
			l.Epoch = 8
			l.Members = append(l.Members[:2], metadata.ConsumerGroupMember{MemberID: "m4", SubscribedTopicRegex: "^a.*"})
			return l
		}(), []string{"8:m3:x", "7:m3:x", "5:m3:x", "5:m4", "3", "7:m4", "8:m4"}},
		{"the last member of a regex leaves", base, leave, []string{"8:m3:x", "7:m3:x", "5:m3:x", "16:^a.*:x", "3"}},
		{"a member reconciles", base, reconcile, []string{"8:m2"}},
		{"a new target", base, retarget, []string{"7:m1", "6"}},
		{"a subscription changes to another regex", base, resub, []string{"5:m3", "16:^a.*:x", "16:^b", "3"}},
		{"a regex resolved again (a new matching topic)", base, reresolve, []string{"16:^a.*", "3"}},
		{"a classic member's protocols change", base, reproto, []string{"5:m2"}},
		{"the group is gone", base, nil,
			[]string{"8:m1:x", "7:m1:x", "5:m1:x", "8:m2:x", "7:m2:x", "5:m2:x", "8:m3:x", "7:m3:x", "5:m3:x", "6:x", "16:^a.*:x", "3:x"}},
		{"no group either side", nil, nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := cgTypes(t, consumerGroupDiff(tc.prev, tc.next)); !slices.Equal(got, tc.want) {
				t.Errorf("records %v, want %v", got, tc.want)
			}
		})
	}
}

// FuzzConsumerGroupRecords: whatever a member holds, its records decode to
// what was encoded and nothing is left over.
func FuzzConsumerGroupRecords(f *testing.F) {
	f.Add("cg", "m1", "i", "r", "client", "host", "t1", "^re", "uniform", int32(45000), int32(3), int32(2), int8(1), []byte{1, 2}, true, int32(7), int64(1234), int64(1700000000000))
	f.Add("", "", "", "", "", "", "", "", "", int32(-1), int32(0), int32(0), int8(0), []byte{}, false, int32(-5), int64(-1), int64(-1))
	f.Fuzz(func(t *testing.T, group, member, instance, rack, client, host, topic, regex, assignor string,
		rebalance, epoch, prevEpoch int32, state int8, meta []byte, classic bool, part int32, version, timestamp int64) {
		if meta == nil {
			meta = []byte{} // bytes decode as non-nil
		}
		m := metadata.ConsumerGroupMember{MemberID: member, InstanceID: instance, RackID: rack, ClientID: client, ClientHost: host,
			SubscribedTopicNames: []string{topic}, SubscribedTopicRegex: regex, ServerAssignor: assignor, RebalanceTimeoutMs: rebalance,
			Epoch: epoch, PreviousEpoch: prevEpoch, State: state,
			Assigned: []metadata.ConsumerGroupPartitions{{TopicID: [16]byte{byte(part)}, Partitions: []int32{part, part + 1}}},
			Target:   []metadata.ConsumerGroupPartitions{{Partitions: []int32{part}}}}
		if classic {
			m.Classic = &metadata.ConsumerGroupClassicMember{SessionTimeoutMs: rebalance, Protocols: []metadata.ConsumerGroupClassicProtocol{{Name: assignor, Metadata: meta}}}
		}
		if len(group) > 1000 || len(member) > 1000 || len(regex) > 1000 {
			return // int16-length key strings; Kafka's group and member ids are far shorter
		}
		d, err := decodeCG(ConsumerGroupMemberRecord(group, &m))
		if err != nil || d.group != group || d.member != member {
			t.Fatalf("member record: %+v %v", d, err)
		}
		want := metadata.ConsumerGroupMember{MemberID: member, InstanceID: instance, RackID: rack, ClientID: client, ClientHost: host,
			SubscribedTopicNames: []string{topic}, SubscribedTopicRegex: regex, ServerAssignor: assignor, RebalanceTimeoutMs: rebalance, Classic: m.Classic}
		if !reflect.DeepEqual(d.m, want) {
			t.Fatalf("member decoded as %+v, want %+v", d.m, want)
		}
		d, err = decodeCG(ConsumerGroupCurrentRecord(group, &m))
		if err != nil || d.m.Epoch != epoch || d.m.PreviousEpoch != prevEpoch || d.m.State != state || !partsSame(d.currentParts[0], m.Assigned) || len(d.currentParts[1]) != 0 {
			t.Fatalf("current assignment: %+v %v", d, err)
		}
		if d, err = decodeCG(ConsumerGroupTargetMemberRecord(group, &m)); err != nil || !partsSame(d.targetParts, m.Target) {
			t.Fatalf("target: %+v %v", d, err)
		}
		re := metadata.ConsumerGroupRegex{Regex: regex, Topics: []string{topic, host}, Version: version, TimestampMs: timestamp}
		d, err = decodeCG(ConsumerGroupRegexRecord(group, &re))
		re.Topics = slices.Sorted(slices.Values(re.Topics))
		if err != nil || d.typ != cgRegexType || d.group != group || !reflect.DeepEqual(d.regex, re) {
			t.Fatalf("regex record: %+v %v, want %+v", d.regex, err, re)
		}
	})
}

// A coordinator's group with a regex member: the image records the
// regex's resolution (its topics, the Raft index of the image it was
// resolved against, the coordinator's time), and __consumer_offsets gets
// record 16 with them; resolved again when a matching topic appears, and
// tombstoned when its last member leaves or the group is deleted.
func TestConsumerGroupRegexRecordFromCoordinator(t *testing.T) {
	md := consumerTwin(t)
	md.apply(t, &metadata.CreateTopic{Name: "audit", ID: [16]byte{0xa0}, Partitions: []metadata.PartitionRegistration{
		{Partition: 0, Replicas: []int32{1}, ISR: []int32{1}, Leader: 1}}})
	c, w := consumerCoordinator(t, md, 1)
	slots := map[int32]bool{0: true}
	regexRecs := func(recs []OffsetsRecord) []decodedCG {
		t.Helper()
		var out []decodedCG
		for _, r := range recs {
			if binary.BigEndian.Uint16(r.Key) != cgRegexType {
				continue
			}
			d, err := decodeCG(r)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, d)
		}
		return out
	}

	_, before := md.node.Current()
	start := time.Now().UnixMilli()
	re := "ord.*"
	j := heartbeat(t, c, consumergroup.HeartbeatRequest{MemberID: "a", RebalanceTimeoutMs: 30000, SubscribedTopicRegex: &re, Owned: []consumergroup.TopicPartitions{}})
	if j.ErrorCode != 0 || len(owned(j.Assignment)) != 4 {
		t.Fatalf("regex join: %+v", j)
	}
	img1, after := md.node.Current()
	rec, _ := img1.ConsumerGroup("cg")
	if len(rec.Regexes) != 1 {
		t.Fatalf("image regexes %+v", rec.Regexes)
	}
	r1 := rec.Regexes[0]
	if r1.Regex != re || !slices.Equal(r1.Topics, []string{"orders"}) || r1.Version < int64(before) || r1.Version >= int64(after) ||
		r1.TimestampMs < start || r1.TimestampMs > time.Now().UnixMilli() {
		t.Fatalf("resolution %+v: want [orders], a version in [%d, %d), a time from %d", r1, before, after, start)
	}
	got := regexRecs(OffsetsDiff(nil, img1, nil, slots, 1)[0])
	if len(got) != 1 || got[0].tombstone || got[0].group != "cg" || !reflect.DeepEqual(got[0].regex, r1) {
		t.Fatalf("record 16 of the new group: %+v, want %+v", got, r1)
	}

	// Steady heartbeats write nothing, and leave the resolution alone.
	writes := w.writes.Load()
	for range 3 {
		heartbeat(t, c, beat("a", j.MemberEpoch, owned(j.Assignment)...))
	}
	if n := w.writes.Load(); n != writes {
		t.Fatalf("steady heartbeats wrote %d times", n-writes)
	}

	// A new matching topic: the regex is resolved again.
	md.apply(t, &metadata.CreateTopic{Name: "orders-2", ID: [16]byte{0xb0}, Partitions: []metadata.PartitionRegistration{
		{Partition: 0, Replicas: []int32{1}, ISR: []int32{1}, Leader: 1}}})
	heartbeat(t, c, beat("a", j.MemberEpoch, owned(j.Assignment)...))
	img2, _ := md.node.Current()
	rec, _ = img2.ConsumerGroup("cg")
	if len(rec.Regexes) != 1 || !slices.Equal(rec.Regexes[0].Topics, []string{"orders", "orders-2"}) || rec.Regexes[0].Version <= r1.Version {
		t.Fatalf("after a new matching topic: %+v (was %+v)", rec.Regexes, r1)
	}
	if got := regexRecs(OffsetsDiff(img1, img2, nil, slots, 1)[0]); len(got) != 1 || !reflect.DeepEqual(got[0].regex, rec.Regexes[0]) {
		t.Fatalf("record 16 after the new topic: %+v, want %+v", got, rec.Regexes[0])
	}

	// The group deleted: its regex is tombstoned, before the group epoch.
	gone := apply(t, img2, &metadata.DeleteGroup{Group: "cg"})
	recs := OffsetsDiff(img2, gone, nil, slots, 1)[0]
	if got := regexRecs(recs); len(got) != 1 || !got[0].tombstone || got[0].regex.Regex != re {
		t.Fatalf("record 16 when the group is deleted: %+v", got)
	}
	if last := recs[len(recs)-1]; binary.BigEndian.Uint16(last.Key) != cgMetadataType || last.Value != nil {
		t.Fatalf("the last record of a deleted group is %x, want the epoch tombstone", last.Key)
	}

	// Its last member leaves: the regex is gone from the image, and
	// tombstoned in the log.
	if r := heartbeat(t, c, consumergroup.HeartbeatRequest{MemberID: "a", MemberEpoch: consumergroup.LeaveEpoch, RebalanceTimeoutMs: -1}); r.ErrorCode != 0 {
		t.Fatalf("leave: %+v", r)
	}
	img3, _ := md.node.Current()
	if rec, _ := img3.ConsumerGroup("cg"); len(rec.Regexes) != 0 {
		t.Fatalf("regexes after the last member left: %+v", rec.Regexes)
	}
	if got := regexRecs(OffsetsDiff(img2, img3, nil, slots, 1)[0]); len(got) != 1 || !got[0].tombstone || got[0].regex.Regex != re {
		t.Fatalf("record 16 after the last member left: %+v", got)
	}
}

// The conversions' order, as Kafka writes them: a consumer group that
// becomes classic has its records tombstoned before the classic group's
// record; a classic group's record comes before the consumer group's.
func TestConsumerGroupConversionRecordOrder(t *testing.T) {
	const n = 1
	slots := map[int32]bool{0: true}
	kinds := func(recs []OffsetsRecord) []string {
		var out []string
		for _, r := range recs {
			typ := binary.BigEndian.Uint16(r.Key)
			s := fmt.Sprint(typ)
			if r.Value == nil {
				s += ":x"
			}
			out = append(out, s)
		}
		return out
	}
	cg := cgFixture()
	cg.Members, cg.Regexes = cg.Members[:1], nil
	classic := apply(t, metadata.NewImage(), &metadata.GroupGeneration{Group: "cg", Generation: 6, ProtocolType: "consumer", Members: []metadata.GroupMember{{MemberID: "m1"}}})
	// The image keeps the classic generation beside the consumer group.
	consumer := apply(t, classic, cg)
	if got, want := kinds(OffsetsDiff(classic, consumer, nil, slots, n)[0]), []string{"2:x", "5", "3", "7", "6", "8"}; !slices.Equal(got, want) {
		t.Errorf("upgrade: %v, want %v", got, want)
	}
	if got, want := kinds(OffsetsDiff(nil, consumer, nil, slots, n)[0]), []string{"5", "3", "7", "6", "8"}; !slices.Equal(got, want) {
		t.Errorf("a new slot leader's write of the consumer group: %v, want %v", got, want)
	}
	down := apply(t, consumer, &metadata.RemoveConsumerGroup{Group: "cg"},
		&metadata.GroupGeneration{Group: "cg", Generation: 8, ProtocolType: "consumer", Members: []metadata.GroupMember{}})
	if got, want := kinds(OffsetsDiff(consumer, down, nil, slots, n)[0]), []string{"8:x", "7:x", "5:x", "6:x", "3:x", "2"}; !slices.Equal(got, want) {
		t.Errorf("downgrade: %v, want %v", got, want)
	}
}
