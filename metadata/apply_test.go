package metadata

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"testing"

	"pgregory.net/rapid"
)

func mustApply(t *testing.T, img *Image, recs ...Record) (*Image, *Delta) {
	t.Helper()
	next, d := img.Apply(recs)
	for _, s := range d.Skipped {
		t.Fatalf("record %d (%T) skipped: %v", s.Index, s.Record, s.Err)
	}
	return next, d
}

func threeBrokers(t *testing.T) *Image {
	t.Helper()
	img, _ := mustApply(t, NewImage(),
		&ClusterID{ID: "c1"},
		&RegisterBroker{BrokerID: 1, BrokerEpoch: 10, Rack: "a"},
		&RegisterBroker{BrokerID: 2, BrokerEpoch: 11, Rack: "b"},
		&RegisterBroker{BrokerID: 3, BrokerEpoch: 12, Rack: "c"},
		&UnfenceBroker{BrokerID: 1, BrokerEpoch: 10},
		&UnfenceBroker{BrokerID: 2, BrokerEpoch: 11},
		&UnfenceBroker{BrokerID: 3, BrokerEpoch: 12},
	)
	return img
}

func ordersTopic() *CreateTopic {
	return &CreateTopic{Name: "orders", ID: idA, Configs: map[string]string{"retention.ms": "1000"},
		Partitions: []PartitionRegistration{
			{Partition: 0, Replicas: []int32{1, 2, 3}, ISR: []int32{1, 2, 3}, Leader: 1},
			{Partition: 1, Replicas: []int32{2, 3, 1}, ISR: []int32{2, 3, 1}, Leader: 2},
		}}
}

func TestApplyBrokers(t *testing.T) {
	img := threeBrokers(t)
	if got := len(img.Brokers()); got != 3 {
		t.Fatalf("%d brokers", got)
	}
	b, ok := img.Broker(2)
	if !ok || b.Fenced || b.Epoch != 11 || b.Rack != "b" || !b.Usable() {
		t.Fatalf("broker 2: %+v %v", b, ok)
	}
	next, d := mustApply(t, img, &FenceBroker{BrokerID: 2, BrokerEpoch: 11}, &BrokerShutdown{BrokerID: 3, BrokerEpoch: 12, InControlledShutdown: true})
	if !slices.Equal(d.BrokersFenced, []int32{2}) || !slices.Equal(d.BrokersShuttingDown, []int32{3}) || len(d.BrokersUnfenced) != 0 {
		t.Fatalf("delta %+v", d)
	}
	if b, _ := img.Broker(2); b.Fenced {
		t.Fatal("Apply changed the old image")
	}
	if b, _ := next.Broker(2); !b.Fenced {
		t.Fatal("broker 2 not fenced")
	}
	// Stale epochs and unknown brokers are skipped, not applied.
	after, d := next.Apply([]Record{
		&UnfenceBroker{BrokerID: 2, BrokerEpoch: 10},
		&FenceBroker{BrokerID: 9, BrokerEpoch: 1},
		&RegisterBroker{BrokerID: 1, BrokerEpoch: 10},
		&UnregisterBroker{BrokerID: 3, BrokerEpoch: 1},
	})
	wantErrs := []error{ErrStaleBrokerEpoch, ErrUnknownBroker, ErrStaleBrokerEpoch, ErrStaleBrokerEpoch}
	if len(d.Skipped) != len(wantErrs) {
		t.Fatalf("skipped %+v", d.Skipped)
	}
	for i, s := range d.Skipped {
		if s.Index != i || !errors.Is(s.Err, wantErrs[i]) {
			t.Errorf("skipped[%d] = %d %v, want %v", i, s.Index, s.Err, wantErrs[i])
		}
	}
	if !after.Equal(next) || !d.Empty() {
		t.Fatal("skipped records changed the image")
	}
	// Re-registration replaces the registration: fenced again, new epoch.
	after, d = mustApply(t, next, &RegisterBroker{BrokerID: 3, BrokerEpoch: 20, Fenced: true}, &UnregisterBroker{BrokerID: 1, BrokerEpoch: 10})
	if !slices.Equal(d.BrokersRegistered, []int32{3}) || !slices.Equal(d.BrokersUnregistered, []int32{1}) || !slices.Equal(d.BrokersFenced, []int32{3}) {
		t.Fatalf("delta %+v", d)
	}
	if b, _ := after.Broker(3); b.InControlledShutdown || b.Epoch != 20 {
		t.Fatalf("re-registered broker %+v", b)
	}
}

func TestApplyTopics(t *testing.T) {
	img := threeBrokers(t)
	img, d := mustApply(t, img, ordersTopic())
	if len(d.TopicsCreated) != 1 || d.TopicsCreated[0].Name != "orders" || len(d.ChangedPartitions) != 2 || d.ChangedPartitions[0].Old != nil {
		t.Fatalf("delta %+v", d)
	}
	top, ok := img.Topic("orders")
	if !ok || top.ID != idA || len(top.Partitions) != 2 || top.Configs["retention.ms"] != "1000" {
		t.Fatalf("topic %+v", top)
	}
	if byID, _ := img.TopicByID(idA); byID.Name != "orders" {
		t.Fatal("TopicByID")
	}
	// Duplicate name, duplicate id, bad partitions and bad names are skipped.
	_, d = img.Apply([]Record{
		ordersTopic(),
		&CreateTopic{Name: "other", ID: idA, Partitions: ordersTopic().Partitions},
		&CreateTopic{Name: "p", ID: idB},
		&CreateTopic{Name: "q", ID: idB, Partitions: []PartitionRegistration{{Partition: 1, Replicas: []int32{1}, Leader: 1}}},
		&CreateTopic{Name: "r", ID: idB, Partitions: []PartitionRegistration{{Partition: 0, Replicas: []int32{1}, Leader: 2}}},
		&CreateTopic{Name: "bad name", ID: idB, Partitions: ordersTopic().Partitions},
	})
	wantErrs := []error{ErrTopicExists, ErrTopicExists, ErrInvalidPartitions, ErrInvalidRecord, ErrInvalidRecord, ErrInvalidTopicName}
	for i, s := range d.Skipped {
		if !errors.Is(s.Err, wantErrs[i]) {
			t.Errorf("skipped[%d]: %v, want %v", i, s.Err, wantErrs[i])
		}
	}
	if len(d.Skipped) != len(wantErrs) {
		t.Fatalf("skipped %d, want %d", len(d.Skipped), len(wantErrs))
	}

	// Leader change bumps both epochs; an ISR-only change bumps the partition
	// epoch only; NoLeaderChange keeps the leader.
	next, d := mustApply(t, img,
		&PartitionChange{TopicID: idA, Partition: 0, Leader: 2, ISR: []int32{2, 3}},
		&PartitionChange{TopicID: idA, Partition: 1, Leader: NoLeaderChange, ISR: []int32{2, 3}},
	)
	p0, _ := next.Partition(idA, 0)
	p1, _ := next.Partition(idA, 1)
	if p0.Leader != 2 || p0.LeaderEpoch != 1 || p0.PartitionEpoch != 1 || !slices.Equal(p0.ISR, []int32{2, 3}) {
		t.Fatalf("p0 %+v", p0)
	}
	if p1.Leader != 2 || p1.LeaderEpoch != 0 || p1.PartitionEpoch != 1 {
		t.Fatalf("p1 %+v", p1)
	}
	if len(d.ChangedPartitions) != 2 || !d.ChangedPartitions[0].LeaderChanged() || d.ChangedPartitions[1].LeaderChanged() {
		t.Fatalf("delta %+v", d.ChangedPartitions)
	}
	if old, _ := img.Partition(idA, 0); old.Leader != 1 || old.PartitionEpoch != 0 {
		t.Fatal("Apply changed the old image")
	}
	// Two changes in one batch: one delta entry, old state from before the batch.
	_, d = mustApply(t, img,
		&PartitionChange{TopicID: idA, Partition: 0, Leader: 2},
		&PartitionChange{TopicID: idA, Partition: 0, Leader: 3},
	)
	if len(d.ChangedPartitions) != 1 || d.ChangedPartitions[0].Old.Leader != 1 || d.ChangedPartitions[0].New.Leader != 3 || d.ChangedPartitions[0].New.LeaderEpoch != 2 {
		t.Fatalf("delta %+v", d.ChangedPartitions)
	}
	// Inconsistent changes are skipped.
	_, d = img.Apply([]Record{
		&PartitionChange{TopicID: idA, Partition: 0, Leader: 9},
		&PartitionChange{TopicID: idA, Partition: 0, Leader: NoLeaderChange, ISR: []int32{1, 9}},
		&PartitionChange{TopicID: idA, Partition: 0, Leader: NoLeaderChange, Replicas: []int32{2, 3}},
		&PartitionChange{TopicID: idA, Partition: 5, Leader: 1},
		&PartitionChange{TopicID: idB, Partition: 0, Leader: 1},
		&PartitionChange{TopicID: idA, Partition: 0, Leader: -3},
	})
	wantErrs = []error{ErrInvalidRecord, ErrInvalidRecord, ErrInvalidRecord, ErrUnknownPartition, ErrUnknownTopic, ErrInvalidRecord}
	if len(d.Skipped) != len(wantErrs) {
		t.Fatalf("skipped %+v", d.Skipped)
	}
	for i, s := range d.Skipped {
		if !errors.Is(s.Err, wantErrs[i]) {
			t.Errorf("skipped[%d]: %v, want %v", i, s.Err, wantErrs[i])
		}
	}

	// Add partitions, then remove the topic.
	next, d = mustApply(t, img, &AddPartitions{TopicID: idA, Partitions: []PartitionRegistration{{Partition: 2, Replicas: []int32{3}, ISR: []int32{3}, Leader: 3}}})
	if top, _ := next.Topic("orders"); len(top.Partitions) != 3 || len(d.ChangedPartitions) != 1 || d.ChangedPartitions[0].Old != nil {
		t.Fatalf("after AddPartitions: %+v %+v", top, d)
	}
	if _, d = next.Apply([]Record{&AddPartitions{TopicID: idA, Partitions: []PartitionRegistration{{Partition: 4, Replicas: []int32{3}, Leader: 3}}}}); len(d.Skipped) != 1 {
		t.Fatal("a gap in partition numbers was accepted")
	}
	gone, d := mustApply(t, next, &RemoveTopic{TopicID: idA})
	if _, ok := gone.Topic("orders"); ok || gone.NumTopics() != 0 || len(d.TopicsRemoved) != 1 || len(d.TopicsRemoved[0].Partitions) != 3 {
		t.Fatalf("after RemoveTopic: %+v", d)
	}
	// Created and removed in one batch: no net change.
	_, d = mustApply(t, gone, &CreateTopic{Name: "tmp", ID: idB, Partitions: ordersTopic().Partitions}, &RemoveTopic{TopicID: idB})
	if !d.Empty() {
		t.Fatalf("create+remove delta %+v", d)
	}
}

func TestApplyConfigs(t *testing.T) {
	img, _ := mustApply(t, threeBrokers(t), ordersTopic())
	next, d := mustApply(t, img,
		&Config{ResourceType: ConfigResourceTopic, ResourceName: "orders", Key: "retention.ms", Delete: true},
		&Config{ResourceType: ConfigResourceTopic, ResourceName: "orders", Key: "cleanup.policy", Value: "compact"},
		&Config{ResourceType: ConfigResourceBroker, ResourceName: "2", Key: "log.retention.ms", Value: "5"},
		&Config{ResourceType: ConfigResourceBroker, ResourceName: "", Key: "num.partitions", Value: "3"},
		&Config{ResourceType: ConfigResourceCluster, Key: "x", Value: "1"},
		&Config{ResourceType: ConfigResourceCluster, Key: "x", Delete: true},
	)
	top, _ := next.Topic("orders")
	if len(top.Configs) != 1 || top.Configs["cleanup.policy"] != "compact" {
		t.Fatalf("topic configs %v", top.Configs)
	}
	if next.BrokerConfigs(2)["log.retention.ms"] != "5" || next.ClusterConfigs()["num.partitions"] != "3" || len(next.ClusterConfigs()) != 1 {
		t.Fatalf("broker %v cluster %v", next.BrokerConfigs(2), next.ClusterConfigs())
	}
	want := []ConfigChange{
		{ConfigResourceCluster, "", "num.partitions"},
		{ConfigResourceTopic, "orders", "cleanup.policy"},
		{ConfigResourceTopic, "orders", "retention.ms"},
		{ConfigResourceBroker, "2", "log.retention.ms"},
	}
	if !slices.Equal(d.ConfigsChanged, want) {
		t.Fatalf("ConfigsChanged %+v", d.ConfigsChanged)
	}
	if len(d.ChangedPartitions) != 0 {
		t.Fatal("a config change reported partition changes")
	}
	_, d = next.Apply([]Record{
		&Config{ResourceType: ConfigResourceTopic, ResourceName: "nope", Key: "a", Value: "b"},
		&Config{ResourceType: ConfigResourceBroker, ResourceName: "01", Key: "a", Value: "b"},
		&Config{ResourceType: 9, Key: "a"},
		&Config{ResourceType: ConfigResourceCluster, Key: ""},
	})
	if len(d.Skipped) != 4 || !errors.Is(d.Skipped[0].Err, ErrUnknownTopic) {
		t.Fatalf("skipped %+v", d.Skipped)
	}
}

func TestApplyGroupsAndProducerIDs(t *testing.T) {
	img, d := mustApply(t, NewImage(),
		&CommitOffsets{Group: "g", Offsets: []OffsetCommit{{Topic: "t", Partition: 0, Offset: 5, LeaderEpoch: 1, Metadata: "m", CommitTimeMs: 77}}},
		&CommitOffsets{Group: "g", Offsets: []OffsetCommit{{Topic: "t", Partition: 0, Offset: 6}, {Topic: "t", Partition: 1, Offset: 1}}},
		&GroupGeneration{Group: "g", Generation: 1, Protocol: "range", Members: []GroupMember{{MemberID: "a"}}},
		&ProducerIds{BrokerID: 1, BrokerEpoch: 3, NextProducerID: 1000},
	)
	if o, ok := img.Offset("g", "t", 0); !ok || o.Offset != 6 {
		t.Fatalf("offset %+v", o)
	}
	if len(d.OffsetsCommitted) != 2 || !slices.Equal(d.GroupsChanged, []string{"g"}) || !d.ProducerIDsChanged || img.NextProducerID() != 1000 {
		t.Fatalf("delta %+v", d)
	}
	if gen, ok := img.GroupGeneration("g"); !ok || gen.Generation != 1 {
		t.Fatal("generation")
	}
	_, d = img.Apply([]Record{
		&GroupGeneration{Group: "g", Generation: 1},
		&ProducerIds{NextProducerID: 1000},
		&CommitOffsets{Group: ""},
		&CommitOffsets{Group: "g", Offsets: []OffsetCommit{{Topic: "t", Partition: -1}}},
	})
	if len(d.Skipped) != 4 || !errors.Is(d.Skipped[0].Err, ErrStaleRecord) || !errors.Is(d.Skipped[1].Err, ErrStaleRecord) {
		t.Fatalf("skipped %+v", d.Skipped)
	}
	next, _ := mustApply(t, img, &DeleteOffsets{Group: "g", Partitions: []TopicPartition{{"t", 0}}})
	if _, ok := next.Offset("g", "t", 0); ok || len(next.Offsets("g")) != 1 {
		t.Fatal("DeleteOffsets")
	}
	if _, ok := img.Offset("g", "t", 0); !ok {
		t.Fatal("Apply changed the old image")
	}
	next, d = mustApply(t, next, &DeleteGroup{Group: "g"})
	if len(next.Groups()) != 0 || !slices.Equal(d.GroupsChanged, []string{"g"}) {
		t.Fatalf("DeleteGroup: %v %+v", next.Groups(), d)
	}
	// Deleting every offset of a group without a generation drops the group,
	// so the image equals one that never had it.
	a, _ := mustApply(t, NewImage(), &CommitOffsets{Group: "h", Offsets: []OffsetCommit{{Topic: "t", Offset: 1}}})
	a, _ = mustApply(t, a, &DeleteOffsets{Group: "h", Partitions: []TopicPartition{{"t", 0}}})
	if !a.Equal(NewImage()) {
		t.Fatal("emptied group left behind")
	}
}

func TestApplyClusterIDAndFeatures(t *testing.T) {
	img, _ := mustApply(t, NewImage(), &ClusterID{ID: "a"}, &ClusterID{ID: "a"}, &FeatureLevel{Name: MetadataVersionFeature, Level: 3})
	if img.ClusterID() != "a" || img.FeatureLevel() != 3 {
		t.Fatal(img.ClusterID(), img.FeatureLevel())
	}
	_, d := img.Apply([]Record{&ClusterID{ID: "b"}, &FeatureLevel{Name: "f", Level: -1}, nil, foreignRecord{}})
	if len(d.Skipped) != 4 || !errors.Is(d.Skipped[0].Err, ErrClusterIDMismatch) {
		t.Fatalf("skipped %+v", d.Skipped)
	}
	img, _ = mustApply(t, img, &FeatureLevel{Name: MetadataVersionFeature, Level: 0})
	if _, ok := img.Feature(MetadataVersionFeature); ok {
		t.Fatal("level 0 did not remove the feature")
	}
}

// snapshotBytes is a deep, comparable copy of an image's whole content.
func snapshotBytes(t interface{ Fatal(...any) }, img *Image) []byte {
	b, err := EncodeRecords(img.Records())
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// genRecord draws records from small pools of ids and names, and from the
// current image's topics and broker epochs, so that most records hit
// existing state and some are stale or inconsistent.
func genRecord(t *rapid.T, img *Image) Record {
	broker := rapid.Int32Range(0, 4)
	epoch := rapid.Int64Range(0, 2)
	topicNames := []string{"a", "b", "c.d", "c_d", "e"}
	ids := [][16]byte{{1}, {2}, {3}, {4}, {5}}
	replicas := rapid.SliceOfNDistinct(rapid.Int32Range(0, 2), 1, 3, rapid.ID[int32])
	maybeSet := func(label string) []int32 {
		if rapid.IntRange(0, 2).Draw(t, label+"Nil") > 0 {
			return nil
		}
		return rapid.SliceOfNDistinct(rapid.Int32Range(0, 2), 0, 3, rapid.ID[int32]).Draw(t, label)
	}
	partition := func(i int32) PartitionRegistration {
		reps := replicas.Draw(t, "replicas")
		n := rapid.IntRange(0, len(reps)).Draw(t, "isrLen")
		isr := slices.Clone(reps[:n])
		leader := NoLeader
		if n > 0 {
			leader = isr[0]
		}
		return PartitionRegistration{Partition: i, Replicas: reps, ISR: isr, Leader: leader,
			LeaderEpoch: rapid.Int32Range(0, 3).Draw(t, "le"), PartitionEpoch: rapid.Int32Range(0, 3).Draw(t, "pe")}
	}
	partitions := func(first int32) []PartitionRegistration {
		n := rapid.IntRange(1, 3).Draw(t, "nparts")
		ps := make([]PartitionRegistration, n)
		for i := range ps {
			ps[i] = partition(first + int32(i))
		}
		return ps
	}
	str := rapid.SampledFrom([]string{"", "x", "y", "g1", "g2"})
	topics := img.Topics()
	topicID := func() [16]byte {
		if len(topics) > 0 && rapid.IntRange(0, 3).Draw(t, "existingTopic") > 0 {
			return rapid.SampledFrom(topics).Draw(t, "topic").ID
		}
		return rapid.SampledFrom(ids).Draw(t, "id")
	}
	brokerEpoch := func() (int32, int64) {
		id := broker.Draw(t, "b")
		if b, ok := img.Broker(id); ok && rapid.IntRange(0, 3).Draw(t, "currentEpoch") > 0 {
			return id, b.Epoch
		}
		return id, epoch.Draw(t, "e")
	}
	kind := rapid.IntRange(0, 24).Draw(t, "kind")
	if kind == 24 {
		id := topicID()
		pr := &PartitionReassignment{TopicID: id, Partition: rapid.Int32Range(0, 3).Draw(t, "rp"), Adding: maybeSet("adding"), Removing: maybeSet("removing")}
		if top, ok := img.TopicByID(id); ok && rapid.Bool().Draw(t, "fits") {
			p := rapid.SampledFrom(top.Partitions).Draw(t, "rpart")
			n := rapid.IntRange(0, len(p.Replicas)).Draw(t, "rn")
			pr.Partition, pr.Adding, pr.Removing = p.Partition, slices.Clone(p.Replicas[:n]), nil
			if n < len(p.Replicas)-1 {
				pr.Removing = slices.Clone(p.Replicas[len(p.Replicas)-1:])
			}
		}
		return pr
	}
	if kind > 18 {
		kind = 9 // PartitionChange is the record that matters most
	}
	switch kind {
	case 0:
		return &ClusterID{ID: str.Draw(t, "cid")}
	case 1:
		return &FeatureLevel{Name: rapid.SampledFrom([]string{MetadataVersionFeature, "f"}).Draw(t, "fname"), Level: rapid.Int16Range(-1, 3).Draw(t, "level")}
	case 2:
		return &RegisterBroker{BrokerID: broker.Draw(t, "b"), BrokerEpoch: epoch.Draw(t, "e"), IncarnationID: [16]byte{byte(rapid.IntRange(0, 3).Draw(t, "inc"))},
			Endpoints: []Endpoint{{Listener: "PLAINTEXT", Host: "127.0.0.1", Port: uint16(rapid.IntRange(1, 3).Draw(t, "port"))}},
			Rack:      str.Draw(t, "rack"), Fenced: rapid.Bool().Draw(t, "fenced"), InControlledShutdown: rapid.Bool().Draw(t, "shut")}
	case 3:
		if rapid.IntRange(0, 3).Draw(t, "rare") > 0 {
			return &FenceBroker{}
		}
		id, e := brokerEpoch()
		return &UnregisterBroker{BrokerID: id, BrokerEpoch: e}
	case 4:
		id, e := brokerEpoch()
		return &FenceBroker{BrokerID: id, BrokerEpoch: e}
	case 5:
		id, e := brokerEpoch()
		return &UnfenceBroker{BrokerID: id, BrokerEpoch: e}
	case 6:
		id, e := brokerEpoch()
		if rapid.IntRange(0, 2).Draw(t, "offline") == 0 {
			var refs []ReplicaRef
			for p := range rapid.Int32Range(0, 3).Draw(t, "noff") {
				refs = append(refs, ReplicaRef{TopicID: topicID(), Partition: p})
			}
			slices.SortFunc(refs, CompareReplicaRefs)
			refs = slices.CompactFunc(refs, func(a, b ReplicaRef) bool { return CompareReplicaRefs(a, b) == 0 })
			return &OfflineReplicas{BrokerID: id, BrokerEpoch: e, Replicas: refs}
		}
		return &BrokerShutdown{BrokerID: id, BrokerEpoch: e, InControlledShutdown: rapid.Bool().Draw(t, "shut")}
	case 7:
		var cfg map[string]string
		if rapid.Bool().Draw(t, "hasCfg") {
			cfg = map[string]string{"retention.ms": "1"}
		}
		return &CreateTopic{Name: rapid.SampledFrom(topicNames).Draw(t, "name"), ID: rapid.SampledFrom(ids).Draw(t, "id"), Configs: cfg, Partitions: partitions(0)}
	case 8:
		id := topicID()
		first := rapid.Int32Range(1, 3).Draw(t, "first")
		if top, ok := img.TopicByID(id); ok && rapid.Bool().Draw(t, "dense") {
			first = int32(len(top.Partitions))
		}
		return &AddPartitions{TopicID: id, Partitions: partitions(first)}
	case 9:
		id := topicID()
		pc := &PartitionChange{TopicID: id, Partition: rapid.Int32Range(0, 3).Draw(t, "p"),
			Leader: rapid.Int32Range(-2, 2).Draw(t, "leader"), ISR: maybeSet("isr"), Replicas: maybeSet("reps")}
		if top, ok := img.TopicByID(id); ok && rapid.IntRange(0, 3).Draw(t, "consistent") > 0 {
			// A change that fits: leader and ISR drawn from the replicas.
			p := rapid.SampledFrom(top.Partitions).Draw(t, "part")
			pc.Partition, pc.Replicas = p.Partition, nil
			n := rapid.IntRange(0, len(p.Replicas)).Draw(t, "n")
			pc.ISR = slices.Clone(p.Replicas[:n])
			pc.Leader = NoLeaderChange
			if n > 0 && rapid.Bool().Draw(t, "newLeader") {
				pc.Leader = pc.ISR[n-1]
			}
		}
		return pc
	case 10:
		return &RemoveTopic{TopicID: topicID()}
	case 11:
		typ := rapid.SampledFrom([]ConfigResourceType{ConfigResourceCluster, ConfigResourceTopic, ConfigResourceBroker}).Draw(t, "rtype")
		name := ""
		switch typ {
		case ConfigResourceTopic:
			name = rapid.SampledFrom(topicNames).Draw(t, "tname")
		case ConfigResourceBroker:
			name = rapid.SampledFrom([]string{"", "1", "2", "x"}).Draw(t, "bname")
		}
		return &Config{ResourceType: typ, ResourceName: name, Key: rapid.SampledFrom([]string{"k1", "k2"}).Draw(t, "key"), Value: str.Draw(t, "value"), Delete: rapid.Bool().Draw(t, "del")}
	case 12:
		n := rapid.IntRange(0, 3).Draw(t, "noffsets")
		offs := make([]OffsetCommit, n)
		for i := range offs {
			offs[i] = OffsetCommit{Topic: rapid.SampledFrom(topicNames).Draw(t, "ot"), Partition: rapid.Int32Range(0, 2).Draw(t, "op"),
				Offset: rapid.Int64Range(-1, 100).Draw(t, "off"), LeaderEpoch: rapid.Int32Range(-1, 3).Draw(t, "ole"), Metadata: str.Draw(t, "meta"), CommitTimeMs: rapid.Int64Range(0, 5).Draw(t, "ts")}
		}
		return &CommitOffsets{Group: str.Draw(t, "group"), Offsets: offs}
	case 13:
		return &DeleteOffsets{Group: str.Draw(t, "group"), Partitions: []TopicPartition{{rapid.SampledFrom(topicNames).Draw(t, "dt"), rapid.Int32Range(0, 2).Draw(t, "dp")}}}
	case 14:
		return &DeleteGroup{Group: str.Draw(t, "group")}
	case 17:
		name := rapid.SampledFrom([]string{"", "alice", "bob"}).Draw(t, "user")
		mech := ScramMechanism(rapid.Int8Range(0, 3).Draw(t, "mech"))
		if rapid.Bool().Draw(t, "remove") {
			return &RemoveUserScramCredential{Name: name, Mechanism: mech}
		}
		size := 32
		if mech == ScramSHA512 {
			size = 64
		}
		if rapid.IntRange(0, 4).Draw(t, "badSize") == 0 {
			size = 5
		}
		return &UserScramCredential{Name: name, Mechanism: mech, Salt: []byte(str.Draw(t, "salt")),
			StoredKey: make([]byte, size), ServerKey: bytes.Repeat([]byte{byte(rapid.IntRange(0, 2).Draw(t, "key"))}, size),
			Iterations: rapid.Int32Range(0, 5000).Draw(t, "iter")}
	case 22:
		tx := &Transaction{TransactionalID: rapid.SampledFrom([]string{"", "t1", "t2"}).Draw(t, "txid"), ProducerID: rapid.Int64Range(-1, 2).Draw(t, "tpid"),
			PrevProducerID: rapid.Int64Range(-1, 2).Draw(t, "tprev"), ProducerEpoch: rapid.Int16Range(-1, 3).Draw(t, "tepoch"),
			TimeoutMs: rapid.Int32Range(0, 2).Draw(t, "ttimeout"), State: TxnState(rapid.Int8Range(0, 8).Draw(t, "tstate")),
			LastUpdateMs: rapid.Int64Range(0, 5).Draw(t, "tupdate"), CoordinatorEpoch: rapid.Int32Range(0, 2).Draw(t, "tce")}
		for _, p := range []int32{0, 1} {
			if rapid.Bool().Draw(t, "tpart") {
				tx.Partitions = append(tx.Partitions, TopicPartition{rapid.SampledFrom(topicNames).Draw(t, "ttopic"), p})
			}
		}
		if len(tx.Partitions) == 2 && tx.Partitions[0].Topic > tx.Partitions[1].Topic && rapid.Bool().Draw(t, "tsort") {
			tx.Partitions[0], tx.Partitions[1] = tx.Partitions[1], tx.Partitions[0]
		}
		return tx
	case 23:
		return &TxnOffsetCommit{TransactionalID: rapid.SampledFrom([]string{"", "t1", "t2"}).Draw(t, "otxid"), ProducerID: rapid.Int64Range(0, 2).Draw(t, "opid"),
			ProducerEpoch: rapid.Int16Range(0, 3).Draw(t, "oepoch"), Group: str.Draw(t, "ogroup"),
			Offsets: []OffsetCommit{{Topic: rapid.SampledFrom(topicNames).Draw(t, "oot"), Partition: rapid.Int32Range(-1, 1).Draw(t, "oop"), Offset: rapid.Int64Range(0, 9).Draw(t, "ooff"), LeaderEpoch: -1}}}
	case 15:
		return &GroupGeneration{Group: str.Draw(t, "group"), Generation: rapid.Int32Range(-1, 4).Draw(t, "gen"), Protocol: str.Draw(t, "proto"),
			Members: []GroupMember{{MemberID: str.Draw(t, "member")}}}
	default:
		return &ProducerIds{BrokerID: broker.Draw(t, "b"), BrokerEpoch: epoch.Draw(t, "e"), NextProducerID: rapid.Int64Range(-1, 5000).Draw(t, "pid")}
	}
}

func TestApplyProperties(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		nBatches := rapid.IntRange(1, 10).Draw(t, "nBatches")
		img := NewImage()
		var batches [][]Record
		for range nBatches {
			batch := make([]Record, rapid.IntRange(0, 12).Draw(t, "batchLen"))
			for i := range batch {
				batch[i] = genRecord(t, img)
			}
			batches = append(batches, batch)
			// Encoding round-trips every record exactly.
			enc, err := EncodeRecords(batch)
			if err != nil {
				t.Fatal(err)
			}
			dec, err := DecodeRecords(enc)
			if err != nil {
				t.Fatal(err)
			}
			if len(dec) != len(batch) {
				t.Fatalf("decoded %d of %d", len(dec), len(batch))
			}
			before := snapshotBytes(t, img)
			next, d := img.Apply(dec)
			if !bytes.Equal(before, snapshotBytes(t, img)) {
				t.Fatal("Apply modified its input image")
			}
			checkDelta(t, img, next, d)
			checkLocalChanges(t, img, next, d, dec)
			img = next
		}
		// Replay from scratch is deterministic.
		again := NewImage()
		for _, batch := range batches {
			again, _ = again.Apply(batch)
		}
		if !again.Equal(img) {
			t.Fatal("the same batches gave different images")
		}
		// The image's records rebuild it exactly, without a skipped record.
		rebuilt, d := NewImage().Apply(img.Records())
		if len(d.Skipped) != 0 {
			t.Fatalf("rebuilding skipped %+v", d.Skipped[0])
		}
		if !rebuilt.Equal(img) {
			t.Fatal("NewImage().Apply(img.Records()) differs from img")
		}
		if !bytes.Equal(snapshotBytes(t, rebuilt), snapshotBytes(t, img)) {
			t.Fatal("equal images gave different snapshot bytes")
		}
	})
}

// checkDelta holds the delta to what actually changed between two images.
func checkDelta(t *rapid.T, old, next *Image, d *Delta) {
	if d.Empty() && !next.Equal(old) {
		t.Fatal("empty delta but the image changed")
	}
	for _, pd := range d.ChangedPartitions {
		p, ok := next.Partition(pd.TopicID, pd.Partition)
		if !ok || !p.Equal(*pd.New) {
			t.Fatalf("delta partition %s-%d does not match the new image", pd.Topic, pd.Partition)
		}
		if pd.Old != nil && pd.Old.Equal(*pd.New) {
			t.Fatalf("unchanged partition %s-%d in the delta", pd.Topic, pd.Partition)
		}
	}
	for _, top := range d.TopicsCreated {
		if _, ok := old.TopicByID(top.ID); ok {
			t.Fatalf("topic %s reported created but existed", top.Name)
		}
	}
	for _, top := range d.TopicsRemoved {
		if _, ok := next.TopicByID(top.ID); ok {
			t.Fatalf("topic %s reported removed but exists", top.Name)
		}
	}
	// Every topic whose partitions differ is in the delta.
	changed := map[string]bool{}
	for _, pd := range d.ChangedPartitions {
		changed[fmt.Sprintf("%x/%d", pd.TopicID, pd.Partition)] = true
	}
	for _, top := range next.Topics() {
		ot, existed := old.TopicByID(top.ID)
		for i, p := range top.Partitions {
			op, had := ot.Partition(int32(i))
			if existed && had && op.Equal(p) {
				continue
			}
			if !changed[fmt.Sprintf("%x/%d", top.ID, i)] {
				t.Fatalf("partition %s-%d changed but is not in the delta", top.Name, i)
			}
		}
	}
}
