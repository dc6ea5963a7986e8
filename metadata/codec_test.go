package metadata

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"reflect"
	"slices"
	"testing"
)

var (
	idA = [16]byte{0xa1, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15}
	idB = [16]byte{0xb2, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15}
)

// sampleRecords holds at least one record of every type, with nil and empty
// slices and maps both represented, extreme values, and non-ASCII strings.
func sampleRecords() []Record {
	return append([]Record{
		&ClusterID{ID: "MkU3OEVBNTcwNTJENDM2Qk"},
		&ClusterID{},
		&FeatureLevel{Name: MetadataVersionFeature, Level: 7},
		&FeatureLevel{Name: "x", Level: -32768},
		&RegisterBroker{BrokerID: 1, IncarnationID: idA, BrokerEpoch: 1 << 40,
			Endpoints: []Endpoint{{Listener: "PLAINTEXT", Host: "127.0.0.1", Port: 9092, SecurityProtocol: 0}, {Listener: "CONTROLLER", Host: "::1", Port: 65535, SecurityProtocol: 3}},
			Rack:      "rack-a", Fenced: true, InControlledShutdown: true},
		&RegisterBroker{BrokerID: -1, Endpoints: []Endpoint{}},
		&RegisterBroker{BrokerID: 2147483647},
		&UnregisterBroker{BrokerID: 3, BrokerEpoch: -1},
		&FenceBroker{BrokerID: 4, BrokerEpoch: 99},
		&UnfenceBroker{BrokerID: 5, BrokerEpoch: 100},
		&BrokerShutdown{BrokerID: 6, BrokerEpoch: 101, InControlledShutdown: true},
		&BrokerShutdown{BrokerID: 6, BrokerEpoch: 101},
		&OfflineReplicas{BrokerID: 6, BrokerEpoch: 101, Replicas: []ReplicaRef{{TopicID: idA, Partition: 0}, {TopicID: idA, Partition: 7}}},
		&OfflineReplicas{BrokerID: 6, BrokerEpoch: 101},
		&CreateTopic{Name: "orders", ID: idA, Configs: map[string]string{"retention.ms": "1000", "cleanup.policy": "compact", "": "empty key"},
			Partitions: []PartitionRegistration{
				{Partition: 0, Replicas: []int32{1, 2, 3}, ISR: []int32{1, 2}, Leader: 1, LeaderEpoch: 4, PartitionEpoch: 9},
				{Partition: 1, Replicas: []int32{}, ISR: nil, Leader: -1},
			}},
		&CreateTopic{Name: "t", Configs: map[string]string{}, Partitions: []PartitionRegistration{}},
		&CreateTopic{},
		&AddPartitions{TopicID: idB, Partitions: []PartitionRegistration{{Partition: 2, Replicas: []int32{3}, ISR: []int32{3}, Leader: 3}}},
		&PartitionChange{TopicID: idA, Partition: 7, Leader: NoLeaderChange, ISR: []int32{1}, Replicas: nil},
		&PartitionChange{TopicID: idA, Partition: 0, Leader: NoLeader, ISR: []int32{}, Replicas: []int32{4, 5, 6}},
		&PartitionChange{TopicID: idA, Partition: 1, Leader: NoLeader, ISR: []int32{}, ELR: []int32{2, 3}, LastKnownELR: nil},
		&PartitionChange{TopicID: idA, Partition: 1, Leader: NoLeaderChange, ELR: []int32{}, LastKnownELR: []int32{}},
		&CreateTopic{Name: "elr", ID: idA, Partitions: []PartitionRegistration{
			{Partition: 0, Replicas: []int32{1, 2, 3}, ISR: []int32{}, Leader: NoLeader, ELR: []int32{1, 2}, LastKnownELR: []int32{3}},
			{Partition: 1, Replicas: []int32{1}, ISR: []int32{1}, Leader: 1},
		}},
		&RemoveTopic{TopicID: idB},
		&Config{ResourceType: ConfigResourceTopic, ResourceName: "orders", Key: "retention.ms", Value: "5"},
		&Config{ResourceType: ConfigResourceBroker, ResourceName: "1", Key: "log.retention.ms", Delete: true},
		&Config{ResourceType: ConfigResourceCluster, Key: "k", Value: "ünïcødé"},
		&Config{ResourceType: ConfigResourceGroup, ResourceName: "g", Key: "consumer.session.timeout.ms", Value: "30000"},
		&CommitOffsets{Group: "g1", Offsets: []OffsetCommit{
			{Topic: "orders", Partition: 0, Offset: 42, LeaderEpoch: 3, Metadata: "m", CommitTimeMs: 1700000000000},
			{Topic: "orders", Partition: 1, Offset: -1, LeaderEpoch: -1},
		}},
		&CommitOffsets{Group: "g2", Offsets: []OffsetCommit{}},
		&CommitOffsets{},
		&DeleteOffsets{Group: "g1", Partitions: []TopicPartition{{"orders", 1}}},
		&DeleteOffsets{Group: "g1"},
		&DeleteGroup{Group: "g1"},
		&GroupGeneration{Group: "g1", Generation: 5, ProtocolType: "consumer", Protocol: "range", Leader: "m-1",
			Members: []GroupMember{{MemberID: "m-1"}, {MemberID: "m-2", InstanceID: "i-2"}}},
		&GroupGeneration{Group: "g1", Members: []GroupMember{}},
		&GroupGeneration{Group: "g1", Generation: 6, ProtocolType: "consumer", Members: []GroupMember{}, StateTimestampMs: 1700000000000},
		&GroupGeneration{Group: "g1", Generation: 7, ProtocolType: "consumer", Members: []GroupMember{{MemberID: "m"}}, SubscribedTopics: []string{"a", "b"}},
		&GroupGeneration{Group: "g1", Generation: 8, ProtocolType: "consumer", SubscribedTopics: []string{}},
		&ProducerIds{BrokerID: 1, BrokerEpoch: 7, NextProducerID: 1000},
		&UserScramCredential{Name: "alice", Mechanism: ScramSHA512, Salt: []byte{0, 1, 2}, StoredKey: []byte("stored"), ServerKey: []byte("server"), Iterations: 8192},
		&UserScramCredential{Salt: []byte{}, StoredKey: []byte{}, ServerKey: []byte{}},
		&RemoveUserScramCredential{Name: "alice", Mechanism: ScramSHA256},
		&AccessControlEntry{ID: [16]byte{9, 9}, ACLBinding: ACLBinding{ResourceType: ACLResourceTopic, ResourceName: "orders",
			PatternType: ACLPatternPrefixed, Principal: "User:alice", Host: "*", Operation: ACLOpWrite, Permission: ACLPermissionAllow}},
		&AccessControlEntry{},
		&RemoveAccessControlEntry{ID: [16]byte{9, 9}},
		&ClientQuota{Entity: QuotaEntity{{Type: "client-id", Default: true}, {Type: "user", Name: "alice"}}, Key: QuotaProducerByteRate, Value: 1048576},
		&ClientQuota{Entity: QuotaEntity{}, Key: "k", Remove: true},
		&ClientQuota{},
		&Transaction{TransactionalID: "tx-1", ProducerID: 1 << 40, PrevProducerID: -1, ProducerEpoch: 32766, LastProducerEpoch: -1,
			TimeoutMs: 60000, State: TxnOngoing, Partitions: []TopicPartition{{"a", 0}, {"b", 2147483647}},
			TxnStartMs: 1700000000000, LastUpdateMs: 1700000000001, CoordinatorEpoch: 7, TxnVersion: 2, NextProducerID: -1},
		&Transaction{TransactionalID: "ünï", Partitions: []TopicPartition{}, State: TxnPrepareEpochFence},
		&Transaction{},
		&TxnOffsetCommit{TransactionalID: "tx-1", ProducerID: 3, ProducerEpoch: 4, Group: "g",
			Offsets: []OffsetCommit{{Topic: "a", Partition: 1, Offset: 9, LeaderEpoch: -1, Metadata: "m"}}},
		&TxnOffsetCommit{Offsets: []OffsetCommit{}},
		&ConsumerGroup{Group: "cg", CoordinatorEpoch: 3, Slot: 7, Epoch: 9, AssignmentEpoch: 8, StateTimestampMs: 1700000000000,
			Members: []ConsumerGroupMember{
				{MemberID: "m-1", InstanceID: "i", RackID: "r", ClientID: "c", ClientHost: "/127.0.0.1", Epoch: 8, PreviousEpoch: 7, State: 1,
					RebalanceTimeoutMs: 45000, SubscribedTopicNames: []string{"a", "ünï"}, SubscribedTopicRegex: "a.*", ServerAssignor: "range",
					Assigned: []ConsumerGroupPartitions{{TopicID: idA, Partitions: []int32{0, 2}}}, PendingRevocation: []ConsumerGroupPartitions{{TopicID: idB, Partitions: []int32{}}},
					Target: []ConsumerGroupPartitions{}},
				{MemberID: "m-2"},
			},
			Topics: []ConsumerGroupTopic{{Name: "a", ID: idA, Partitions: 3}}},
		&ConsumerGroup{Group: "cg", Epoch: 4, AssignmentEpoch: 4, Members: []ConsumerGroupMember{
			{MemberID: "c-1", Epoch: 4, SubscribedTopicNames: []string{"a"}},
			{MemberID: "s-1", Epoch: 4, SubscribedTopicNames: []string{"a"}, Classic: &ConsumerGroupClassicMember{SessionTimeoutMs: 10000,
				Protocols: []ConsumerGroupClassicProtocol{{Name: "range", Metadata: []byte{0, 1, 2}}, {Name: "roundrobin", Metadata: []byte{3}}}}},
		}},
		&ConsumerGroup{Members: []ConsumerGroupMember{}, Topics: []ConsumerGroupTopic{}},
		// Version 2: regex resolutions, with version 1's classic member.
		&ConsumerGroup{Group: "cg", Epoch: 5, AssignmentEpoch: 5, Members: []ConsumerGroupMember{
			{MemberID: "r-1", Epoch: 5, SubscribedTopicRegex: "a.*"},
			{MemberID: "s-1", Epoch: 5, SubscribedTopicNames: []string{"a"}, Classic: &ConsumerGroupClassicMember{SessionTimeoutMs: 10000,
				Protocols: []ConsumerGroupClassicProtocol{{Name: "range", Metadata: []byte{0}}}}},
		}, Topics: []ConsumerGroupTopic{{Name: "a", ID: idA, Partitions: 3}},
			Regexes: []ConsumerGroupRegex{{Regex: "a.*", Topics: []string{"a", "ab"}, Version: 1 << 40, TimestampMs: 1700000000000},
				{Regex: "z+", Topics: []string{}, Version: -1, TimestampMs: -1}}},
		&ConsumerGroupDelta{Group: "cg", Epoch: 6, AssignmentEpoch: 5, Topics: []ConsumerGroupTopic{},
			Regexes: []ConsumerGroupRegex{{Regex: "b", Topics: []string{"b"}, Version: 12, TimestampMs: 34}},
			Members: []ConsumerGroupMember{{MemberID: "m", SubscribedTopicRegex: "b"}}, Removed: []string{"r-1"}},
		&ConsumerGroupDelta{Group: "cg", CoordinatorEpoch: 2, Slot: 3, Epoch: 5, AssignmentEpoch: 5, StateTimestampMs: 7,
			Topics:  []ConsumerGroupTopic{{Name: "a", ID: idA, Partitions: 3}},
			Members: []ConsumerGroupMember{{MemberID: "m-1", Epoch: 5, SubscribedTopicNames: []string{"a"}}}, Removed: []string{"m-0"}},
		&ConsumerGroupDelta{Group: "cg", Members: []ConsumerGroupMember{{MemberID: "s", Classic: &ConsumerGroupClassicMember{SessionTimeoutMs: 1,
			Protocols: []ConsumerGroupClassicProtocol{{Name: "range", Metadata: []byte{1}}}}}}, Removed: []string{}},
		&ConsumerGroup{},
		&RemoveConsumerGroup{Group: "cg"},
		&PartitionReassignment{TopicID: idA, Partition: 3, Adding: []int32{4}, Removing: []int32{1}},
		&PartitionReassignment{TopicID: idA, Partition: 0, Adding: nil, Removing: []int32{}},
		&VoterDirectory{NodeID: 3, DirectoryID: idA},
		&VoterDirectory{NodeID: 3, Remove: true},
		&SharePartitionState{Group: "sg", TopicID: idA, Partition: 2, LeaderEpoch: 4, StateEpoch: 1, StartOffset: 10,
			Ranges: []SharePartitionRange{{First: 10, Last: 12, State: 2, DeliveryCount: 1}, {First: 14, Last: 14, State: 4, DeliveryCount: 5}}},
		&SharePartitionState{Group: "sg", Ranges: []SharePartitionRange{}},
	}, shareGroupSamples()...)
}

func TestRecordRoundTripEveryType(t *testing.T) {
	recs := sampleRecords()
	seen := map[RecordType]bool{}
	for _, r := range recs {
		seen[r.Type()] = true
		b, err := EncodeRecords([]Record{r})
		if err != nil {
			t.Fatalf("encode %T: %v", r, err)
		}
		got, err := DecodeRecords(b)
		if err != nil {
			t.Fatalf("decode %T: %v", r, err)
		}
		if len(got) != 1 || !reflect.DeepEqual(got[0], r) {
			t.Fatalf("round trip of %T:\n got %#v\nwant %#v", r, got, r)
		}
	}
	for typ := TypeClusterID; typ <= TypePartitionReassignment; typ++ {
		if typ.String() == "RecordType(unknown)" {
			continue // a number no record type uses
		}
		if !seen[typ] {
			t.Errorf("no sample record of type %v (%d)", typ, typ)
		}
	}
	// The whole set as one batch, too.
	b, err := EncodeRecords(recs)
	if err != nil {
		t.Fatal(err)
	}
	got, err := DecodeRecords(b)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, recs) {
		t.Fatal("batch round trip differs")
	}
	b2, _ := EncodeRecords(got)
	if !bytes.Equal(b, b2) {
		t.Fatal("re-encoding a decoded batch gave different bytes")
	}
}

// A GroupGeneration written before StateTimestampMs existed (version 0)
// still decodes, with the timestamp zero: retention then counts from the
// offsets' commit times.
func TestDecodeGroupGenerationVersion0(t *testing.T) {
	b, err := EncodeRecords([]Record{&GroupGeneration{Group: "g", Generation: 3, ProtocolType: "consumer", Members: []GroupMember{}, StateTimestampMs: 99}})
	if err != nil {
		t.Fatal(err)
	}
	// Header 9 bytes, type 2, version 2, a one-byte body length; the
	// version 1 fields end the body: the timestamp (8 bytes) and the nil
	// topic list (a count of -1, one byte).
	if b[11] != 0 || b[12] != 1 || int(b[13]) != len(b)-14 {
		t.Fatalf("unexpected layout % x", b)
	}
	v0 := slices.Clone(b[:len(b)-9])
	v0[12] = 0
	v0[13] -= 9
	binary.BigEndian.PutUint32(v0[1:], crc32.Checksum(v0[5:], castagnoli))
	got, err := DecodeRecords(v0)
	if err != nil {
		t.Fatal(err)
	}
	want := &GroupGeneration{Group: "g", Generation: 3, ProtocolType: "consumer", Members: []GroupMember{}}
	if !reflect.DeepEqual(got, []Record{want}) {
		t.Fatalf("got %+v, want %+v", got[0], want)
	}
	// A version 1 body read as version 0 leaves trailing bytes: refused.
	b[12] = 0
	binary.BigEndian.PutUint32(b[1:], crc32.Checksum(b[5:], castagnoli))
	if _, err := DecodeRecords(b); err == nil {
		t.Fatal("a version 1 body decoded as version 0")
	}
}

func TestEncodeEmptyBatch(t *testing.T) {
	b, err := EncodeRecords(nil)
	if err != nil {
		t.Fatal(err)
	}
	got, err := DecodeRecords(b)
	if err != nil || len(got) != 0 {
		t.Fatalf("got %v, %v", got, err)
	}
}

type foreignRecord struct{}

func (foreignRecord) Type() RecordType { return TypeClusterID }
func (foreignRecord) Version() int16   { return 0 }

func TestEncodeRejectsForeignAndNil(t *testing.T) {
	if _, err := EncodeRecords([]Record{foreignRecord{}}); err == nil {
		t.Fatal("encoded a foreign Record implementation")
	}
	if _, err := EncodeRecords([]Record{nil}); err == nil {
		t.Fatal("encoded a nil record")
	}
}

// reseal recomputes the CRC so a test can reach the checks behind it.
func reseal(b []byte) []byte {
	binary.BigEndian.PutUint32(b[1:], crc32.Checksum(b[5:], castagnoli))
	return b
}

func TestDecodeRejects(t *testing.T) {
	valid, err := EncodeRecords([]Record{&RemoveTopic{TopicID: idA}, &ClusterID{ID: "abc"}})
	if err != nil {
		t.Fatal(err)
	}
	mutate := func(f func([]byte) []byte) []byte { return f(append([]byte(nil), valid...)) }
	cases := map[string][]byte{
		"empty":           nil,
		"short header":    valid[:8],
		"bad format":      mutate(func(b []byte) []byte { b[0] = 2; return reseal(b) }),
		"crc mismatch":    mutate(func(b []byte) []byte { b[len(b)-1] ^= 1; return b }),
		"torn":            valid[:len(valid)-1],
		"trailing bytes":  reseal(append(append([]byte(nil), valid...), 0)),
		"count too large": mutate(func(b []byte) []byte { binary.BigEndian.PutUint32(b[5:], 1<<31); return reseal(b) }),
		"count too small": mutate(func(b []byte) []byte { binary.BigEndian.PutUint32(b[5:], 1); return reseal(b) }),
		"unknown type":    mutate(func(b []byte) []byte { binary.BigEndian.PutUint16(b[9:], 999); return reseal(b) }),
		"unknown version": mutate(func(b []byte) []byte { binary.BigEndian.PutUint16(b[11:], 1); return reseal(b) }),
		"body too long":   mutate(func(b []byte) []byte { b[13] = 17; return reseal(b) }),
		"body too short":  mutate(func(b []byte) []byte { b[13] = 15; return reseal(b) }),
	}
	for name, b := range cases {
		t.Run(name, func(t *testing.T) {
			recs, err := DecodeRecords(b)
			if err == nil {
				t.Fatalf("decoded %v", recs)
			}
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("error %v does not wrap ErrCorrupt", err)
			}
		})
	}
}

func TestDecodeRejectsBadFields(t *testing.T) {
	// Hand-built bodies behind a valid header and CRC.
	batch := func(typ RecordType, body []byte) []byte {
		b := []byte{batchFormat, 0, 0, 0, 0, 0, 0, 0, 1}
		b = binary.BigEndian.AppendUint16(b, uint16(typ))
		b = binary.BigEndian.AppendUint16(b, 0)
		b = binary.AppendUvarint(b, uint64(len(body)))
		b = append(b, body...)
		return reseal(b)
	}
	huge := binary.AppendUvarint(nil, 1<<62)
	cases := map[string][]byte{
		"string past end":     batch(TypeClusterID, huge),
		"bad bool":            batch(TypeBrokerShutdown, append(make([]byte, 12), 2)),
		"uuid past end":       batch(TypeRemoveTopic, nil),
		"negative count":      batch(TypePartitionChange, append(make([]byte, 24), binary.AppendVarint(nil, -5)...)),
		"int32s past end":     batch(TypePartitionChange, append(make([]byte, 24), binary.AppendVarint(nil, 1000)...)),
		"unsorted map keys":   batch(TypeCreateTopic, append(append([]byte{1, 't'}, make([]byte, 16)...), 4, 1, 'b', 0, 1, 'a', 0, 1)),
		"duplicate map keys":  batch(TypeCreateTopic, append(append([]byte{1, 't'}, make([]byte, 16)...), 4, 1, 'a', 0, 1, 'a', 0, 1)),
		"overlong uvarint":    batch(TypeClusterID, bytes.Repeat([]byte{0xff}, 11)),
		"missing final field": batch(TypeFenceBroker, make([]byte, 11)),
	}
	for name, b := range cases {
		t.Run(name, func(t *testing.T) {
			if recs, err := DecodeRecords(b); err == nil || !errors.Is(err, ErrCorrupt) {
				t.Fatalf("got %v, %v", recs, err)
			}
		})
	}
}

func FuzzDecodeRecords(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte{batchFormat})
	for _, r := range sampleRecords() {
		b, err := EncodeRecords([]Record{r})
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
		f.Add(b[:len(b)/2])
		f.Add(reseal(append(append([]byte(nil), b...), 0xff, 0xff)))
	}
	all, _ := EncodeRecords(sampleRecords())
	f.Add(all)
	f.Fuzz(func(t *testing.T, b []byte) {
		recs, err := DecodeRecords(b)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("error %v does not wrap ErrCorrupt", err)
			}
			return
		}
		enc, err := EncodeRecords(recs)
		if err != nil {
			t.Fatalf("re-encode: %v", err)
		}
		again, err := DecodeRecords(enc)
		if err != nil {
			t.Fatalf("decode of re-encoded batch: %v", err)
		}
		if !reflect.DeepEqual(recs, again) {
			t.Fatalf("round trip differs:\n%#v\n%#v", recs, again)
		}
		// Whatever decodes must also apply without a panic.
		NewImage().Apply(recs)
	})
}
