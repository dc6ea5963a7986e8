package broker

import (
	"strings"
	"testing"

	"github.com/raftka/raftka/broker/config"
	"github.com/raftka/raftka/metadata"
	"github.com/raftka/raftka/storage"
)

const baseProps = `process.roles=broker,controller
node.id=1
controller.quorum.voters=1@127.0.0.1:9093
listeners=PLAINTEXT://127.0.0.1:9092,CONTROLLER://127.0.0.1:9093
controller.listener.names=CONTROLLER
log.dirs=data
`

func TestStorageConfigPrecedence(t *testing.T) {
	cfg, _, err := config.Parse([]byte(baseProps+"log.retention.hours=1\nlog.segment.bytes=2048\nlog.message.timestamp.type=LogAppendTime\n"), nil)
	if err != nil {
		t.Fatal(err)
	}
	img, delta := metadata.NewImage().Apply([]metadata.Record{
		&metadata.CreateTopic{Name: "t", ID: [16]byte{1}, Configs: map[string]string{"segment.bytes": "4096"},
			Partitions: []metadata.PartitionRegistration{{Partition: 0, Replicas: []int32{1}, ISR: []int32{1}, Leader: 1}}},
	})
	if len(delta.Skipped) > 0 {
		t.Fatalf("setup record skipped: %v", delta.Skipped[0].Err)
	}
	def := storage.DefaultConfig()
	cases := []struct {
		name  string
		topic string
		check func(storage.Config) bool
	}{
		{"topic override wins", "t", func(c storage.Config) bool { return c.SegmentBytes == 4096 }},
		{"static broker config without an override", "other", func(c storage.Config) bool { return c.SegmentBytes == 2048 }},
		{"hours scaled into retention.ms", "t", func(c storage.Config) bool { return c.RetentionMs == 3600000 }},
		{"timestamp type from the broker", "t", func(c storage.Config) bool { return c.MessageTimestampType == storage.LogAppendTime }},
		{"untouched keys keep storage defaults", "t", func(c storage.Config) bool { return c.IndexIntervalBytes == def.IndexIntervalBytes }},
	}
	for _, tc := range cases {
		got := StorageConfig(img, cfg, tc.topic)
		if !tc.check(got) {
			t.Errorf("%s: got %+v", tc.name, got)
		}
	}
}

func TestStorageConfigFromIgnoresUnparsable(t *testing.T) {
	got := storageConfigFrom([]metadata.ConfigEntry{{Name: "segment.bytes", Value: "lots"}, {Name: "cleanup.policy", Value: "delete"}})
	if got != storage.DefaultConfig() {
		t.Fatalf("got %+v, want defaults", got)
	}
}

func TestStaticConfigsOnlyWhatWasSet(t *testing.T) {
	cfg, _, err := config.Parse([]byte(baseProps+"num.partitions=4\n"), []string{"log.retention.ms=5"})
	if err != nil {
		t.Fatal(err)
	}
	m := StaticConfigs(cfg)
	if m["num.partitions"] != "4" || m["log.retention.ms"] != "5" {
		t.Fatalf("missing set keys: %v", m)
	}
	if _, ok := m["log.segment.bytes"]; ok {
		t.Fatalf("a default leaked into the static layer: %v", m)
	}
}

// The cleaner's topic configs reach the log, so a compact-only topic stops
// being deleted by retention (a change of cleanup.policy through
// AlterConfigs reaches the log through the same function).
func TestStorageConfigCleanerKeys(t *testing.T) {
	cases := []struct {
		entries []metadata.ConfigEntry
		check   func(storage.Config) bool
	}{
		{[]metadata.ConfigEntry{{Name: "cleanup.policy", Value: "compact"}},
			func(c storage.Config) bool { return c.CleanupPolicy == storage.PolicyCompact }},
		{[]metadata.ConfigEntry{{Name: "cleanup.policy", Value: "delete,compact"}},
			func(c storage.Config) bool { return c.CleanupPolicy == storage.PolicyCompact|storage.PolicyDelete }},
		{[]metadata.ConfigEntry{{Name: "cleanup.policy", Value: ""}},
			func(c storage.Config) bool { return c.CleanupPolicy == 0 }},
		{[]metadata.ConfigEntry{{Name: "min.cleanable.dirty.ratio", Value: "0.25"}},
			func(c storage.Config) bool { return c.MinCleanableDirtyRatio == 0.25 }},
		{[]metadata.ConfigEntry{{Name: "min.cleanable.dirty.ratio", Value: "2"}},
			func(c storage.Config) bool { return c.MinCleanableDirtyRatio == 0.5 }},
		{[]metadata.ConfigEntry{{Name: "delete.retention.ms", Value: "5"}, {Name: "min.compaction.lag.ms", Value: "6"}, {Name: "max.compaction.lag.ms", Value: "7"}},
			func(c storage.Config) bool {
				return c.DeleteRetentionMs == 5 && c.MinCompactionLagMs == 6 && c.MaxCompactionLagMs == 7
			}},
	}
	for _, tc := range cases {
		if got := storageConfigFrom(tc.entries); !tc.check(got) {
			t.Errorf("%v: got %+v", tc.entries, got)
		}
	}
}

// The broker's compaction defaults in server.properties reach topics that
// do not override them, as Kafka's synonyms do.
func TestStorageConfigCleanerBrokerDefaults(t *testing.T) {
	cfg, warnings, err := config.Parse([]byte(baseProps+"log.cleanup.policy=compact,delete\nlog.cleaner.min.cleanable.ratio=0.2\nlog.cleaner.delete.retention.ms=5000\nlog.cleaner.min.compaction.lag.ms=6\nlog.cleaner.max.compaction.lag.ms=7000\n"), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range warnings {
		if strings.Contains(w, "log.clean") {
			t.Errorf("applied key warned: %s", w)
		}
	}
	img, _ := metadata.NewImage().Apply([]metadata.Record{
		&metadata.CreateTopic{Name: "t", ID: [16]byte{1}, Partitions: []metadata.PartitionRegistration{{Partition: 0, Replicas: []int32{1}, ISR: []int32{1}, Leader: 1}}},
		&metadata.CreateTopic{Name: "o", ID: [16]byte{2}, Configs: map[string]string{"cleanup.policy": "delete"}, Partitions: []metadata.PartitionRegistration{{Partition: 0, Replicas: []int32{1}, ISR: []int32{1}, Leader: 1}}},
	})
	got := StorageConfig(img, cfg, "t")
	if got.CleanupPolicy != storage.PolicyCompact|storage.PolicyDelete || got.MinCleanableDirtyRatio != 0.2 ||
		got.DeleteRetentionMs != 5000 || got.MinCompactionLagMs != 6 || got.MaxCompactionLagMs != 7000 {
		t.Fatalf("broker defaults not applied: %+v", got)
	}
	if got := StorageConfig(img, cfg, "o"); got.CleanupPolicy != storage.PolicyDelete {
		t.Fatalf("the topic's override lost to the broker default: %v", got.CleanupPolicy)
	}
	for _, bad := range []string{"log.cleanup.policy=shred", "log.cleaner.min.cleanable.ratio=1.5", "log.cleaner.max.compaction.lag.ms=0"} {
		if _, _, err := config.Parse([]byte(baseProps+bad+"\n"), nil); err == nil {
			t.Errorf("%s accepted", bad)
		}
	}
}

// compression.type and its levels reach the log, from the topic or from
// the broker's server.properties, so the leader recompresses as Kafka's.
func TestStorageConfigCompression(t *testing.T) {
	cfg, warnings, err := config.Parse([]byte(baseProps+"compression.type=lz4\ncompression.lz4.level=4\ncompression.zstd.level=7\ncompression.gzip.level=2\n"), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range warnings {
		if strings.Contains(w, "compression") {
			t.Errorf("applied key warned: %s", w)
		}
	}
	img, _ := metadata.NewImage().Apply([]metadata.Record{
		&metadata.CreateTopic{Name: "t", ID: [16]byte{1}, Partitions: []metadata.PartitionRegistration{{Partition: 0, Replicas: []int32{1}, ISR: []int32{1}, Leader: 1}}},
		&metadata.CreateTopic{Name: "z", ID: [16]byte{2}, Configs: map[string]string{"compression.type": "zstd", "compression.zstd.level": "19"},
			Partitions: []metadata.PartitionRegistration{{Partition: 0, Replicas: []int32{1}, ISR: []int32{1}, Leader: 1}}},
		&metadata.CreateTopic{Name: "p", ID: [16]byte{3}, Configs: map[string]string{"compression.type": "producer"},
			Partitions: []metadata.PartitionRegistration{{Partition: 0, Replicas: []int32{1}, ISR: []int32{1}, Leader: 1}}},
	})
	if got := StorageConfig(img, cfg, "t"); got.CompressionType != storage.CompressionLZ4 || got.CompressionLZ4Level != 4 ||
		got.CompressionZstdLevel != 7 || got.CompressionGzipLevel != 2 {
		t.Fatalf("broker defaults not applied: %+v", got)
	}
	if got := StorageConfig(img, cfg, "z"); got.CompressionType != storage.CompressionZstd || got.CompressionZstdLevel != 19 {
		t.Fatalf("topic overrides not applied: %+v", got)
	}
	if got := StorageConfig(img, cfg, "p"); got.CompressionType != storage.CompressionProducer {
		t.Fatalf("compression.type=producer: %v", got.CompressionType)
	}
	if got := storageConfigFrom([]metadata.ConfigEntry{{Name: "compression.type", Value: "uncompressed"}}); got.CompressionType != storage.CompressionNone {
		t.Fatalf("uncompressed: %v", got.CompressionType)
	}
	if got := storageConfigFrom(nil); got.CompressionType != storage.CompressionProducer {
		t.Fatalf("default: %v", got.CompressionType)
	}
	for _, bad := range []string{"compression.type=brotli", "compression.gzip.level=0", "compression.lz4.level=18", "compression.zstd.level=23"} {
		if _, _, err := config.Parse([]byte(baseProps+bad+"\n"), nil); err == nil {
			t.Errorf("%s accepted", bad)
		}
	}
}
