package metadata

import (
	"cmp"
	"maps"
	"slices"
	"strconv"
	"strings"
)

// Records returns records that rebuild this image from NewImage: for every
// image, NewImage().Apply(img.Records()) is Equal to img. Raft snapshots
// persist an image this way, so log replay, snapshot restore and follower
// catch-up share one replay path. The order is deterministic (cluster id,
// features, brokers, cluster then broker configs, topics by name, groups by
// name, producer ids, SCRAM credentials, ACLs, client quotas, transactions by id), so equal images give equal records and equal bytes.
func (img *Image) Records() []Record {
	recs := make([]Record, 0, 8+len(img.brokers)+img.topics.len()+2*img.groups.len())
	if img.clusterID != "" {
		recs = append(recs, &ClusterID{ID: img.clusterID})
	}
	for _, name := range slices.Sorted(maps.Keys(img.features)) {
		recs = append(recs, &FeatureLevel{Name: name, Level: img.features[name]})
	}
	for _, id := range slices.Sorted(maps.Keys(img.voterDirs)) {
		recs = append(recs, &VoterDirectory{NodeID: id, DirectoryID: img.voterDirs[id]})
	}
	for _, b := range img.Brokers() {
		recs = append(recs, &RegisterBroker{
			BrokerID: b.ID, IncarnationID: b.IncarnationID, BrokerEpoch: b.Epoch,
			Endpoints: slices.Clone(b.Endpoints), Rack: b.Rack, Fenced: b.Fenced,
			InControlledShutdown: b.InControlledShutdown,
		})
		if len(b.OfflineReplicas) > 0 {
			recs = append(recs, &OfflineReplicas{BrokerID: b.ID, BrokerEpoch: b.Epoch, Replicas: slices.Clone(b.OfflineReplicas)})
		}
	}
	for _, k := range slices.Sorted(maps.Keys(img.clusterConfigs)) {
		recs = append(recs, &Config{ResourceType: ConfigResourceCluster, Key: k, Value: img.clusterConfigs[k]})
	}
	for _, id := range slices.Sorted(maps.Keys(img.brokerConfigs)) {
		m := img.brokerConfigs[id]
		for _, k := range slices.Sorted(maps.Keys(m)) {
			recs = append(recs, &Config{ResourceType: ConfigResourceBroker, ResourceName: strconv.Itoa(int(id)), Key: k, Value: m[k]})
		}
	}
	for _, g := range slices.Sorted(maps.Keys(img.groupConfigs)) {
		m := img.groupConfigs[g]
		for _, k := range slices.Sorted(maps.Keys(m)) {
			recs = append(recs, &Config{ResourceType: ConfigResourceGroup, ResourceName: g, Key: k, Value: m[k]})
		}
	}
	for _, t := range img.Topics() {
		ct := &CreateTopic{Name: t.Name, ID: t.ID, Configs: maps.Clone(t.Configs), Partitions: make([]PartitionRegistration, len(t.Partitions))}
		for i, p := range t.Partitions {
			ct.Partitions[i] = clonePartition(p)
		}
		recs = append(recs, ct)
		recs = append(recs, reassignmentRecords(t)...)
	}
	for _, name := range img.Groups() {
		g, _ := img.groups.get(name, hashString(name))
		if len(g.offsets) > 0 {
			co := &CommitOffsets{Group: name, Offsets: make([]OffsetCommit, 0, len(g.offsets))}
			for tp, o := range g.offsets {
				co.Offsets = append(co.Offsets, OffsetCommit{
					Topic: tp.Topic, Partition: tp.Partition, Offset: o.Offset,
					LeaderEpoch: o.LeaderEpoch, Metadata: o.Metadata, CommitTimeMs: o.CommitTimeMs,
				})
			}
			slices.SortFunc(co.Offsets, func(a, b OffsetCommit) int {
				return cmp.Or(strings.Compare(a.Topic, b.Topic), cmp.Compare(a.Partition, b.Partition))
			})
			recs = append(recs, co)
		}
		if g.generation != nil {
			gen := *g.generation
			gen.Members = slices.Clone(gen.Members)
			gen.SubscribedTopics = slices.Clone(gen.SubscribedTopics)
			recs = append(recs, &gen)
		}
		if g.consumer != nil {
			recs = append(recs, cloneConsumerGroup(g.consumer))
		}
	}
	if img.producerIDs.NextProducerID > 0 {
		p := img.producerIDs
		recs = append(recs, &p)
	}
	recs = append(recs, img.scramRecords()...)
	recs = append(recs, img.aclRecords()...)
	recs = append(recs, img.quotaRecords()...)
	recs = append(recs, img.txnRecords()...)
	recs = append(recs, img.shareGroupRecords()...)
	recs = append(recs, img.sharePartitionRecords()...)
	return recs
}
