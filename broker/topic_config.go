package broker

import (
	"strconv"

	"github.com/raftka/raftka/broker/config"
	"github.com/raftka/raftka/metadata"
	"github.com/raftka/raftka/storage"
)

// StaticConfigs is what server.properties (and --override) set explicitly:
// the STATIC_BROKER_CONFIG layer of Kafka's config precedence. Keys left at
// their default are not in it, so the topic config's own default applies.
func StaticConfigs(cfg *config.Config) map[string]string {
	m := make(map[string]string)
	for _, s := range cfg.Settings() {
		if s.Set && s.Source != config.SourceDefault {
			m[s.Name] = s.Value
		}
	}
	return m
}

// TopicConfigSources gathers every layer a topic's config can come from, as
// this node sees them in img.
func TopicConfigSources(img *metadata.Image, cfg *config.Config, topic string) metadata.ConfigSources {
	src := metadata.ConfigSources{
		DynamicBroker:  img.BrokerConfigs(cfg.NodeID),
		DynamicCluster: img.ClusterConfigs(),
		Static:         StaticConfigs(cfg),
	}
	if t, ok := img.Topic(topic); ok {
		src.Topic = t.Configs
	}
	return src
}

// storageFields maps a topic config name onto the storage.Config field it
// sets. cleanup.policy, compression.type and min.cleanable.dirty.ratio,
// which are not integers, are read in storageConfigFrom; names in neither place
// (min.insync.replicas, ...) are acted on above the log.
var storageFields = map[string]func(*storage.Config, int64){
	"segment.bytes":                   func(c *storage.Config, v int64) { c.SegmentBytes = v },
	"segment.ms":                      func(c *storage.Config, v int64) { c.SegmentMs = v },
	"segment.jitter.ms":               func(c *storage.Config, v int64) { c.SegmentJitterMs = v },
	"segment.index.bytes":             func(c *storage.Config, v int64) { c.SegmentIndexBytes = v },
	"index.interval.bytes":            func(c *storage.Config, v int64) { c.IndexIntervalBytes = v },
	"retention.ms":                    func(c *storage.Config, v int64) { c.RetentionMs = v },
	"retention.bytes":                 func(c *storage.Config, v int64) { c.RetentionBytes = v },
	"flush.messages":                  func(c *storage.Config, v int64) { c.FlushMessages = v },
	"flush.ms":                        func(c *storage.Config, v int64) { c.FlushMs = v },
	"max.message.bytes":               func(c *storage.Config, v int64) { c.MaxMessageBytes = v },
	"message.timestamp.before.max.ms": func(c *storage.Config, v int64) { c.MessageTimestampBeforeMaxMs = v },
	"message.timestamp.after.max.ms":  func(c *storage.Config, v int64) { c.MessageTimestampAfterMaxMs = v },
	"file.delete.delay.ms":            func(c *storage.Config, v int64) { c.FileDeleteDelayMs = v },
	"min.compaction.lag.ms":           func(c *storage.Config, v int64) { c.MinCompactionLagMs = v },
	"max.compaction.lag.ms":           func(c *storage.Config, v int64) { c.MaxCompactionLagMs = v },
	"delete.retention.ms":             func(c *storage.Config, v int64) { c.DeleteRetentionMs = v },
	"compression.gzip.level":          func(c *storage.Config, v int64) { c.CompressionGzipLevel = v },
	"compression.lz4.level":           func(c *storage.Config, v int64) { c.CompressionLZ4Level = v },
	"compression.zstd.level":          func(c *storage.Config, v int64) { c.CompressionZstdLevel = v },
}

// StorageConfig is the log config for topic: its overrides, then the
// broker's dynamic and static settings, then Kafka's defaults. Values were
// validated when they were set; one that still does not parse keeps the
// storage default rather than stopping the log.
func StorageConfig(img *metadata.Image, cfg *config.Config, topic string) storage.Config {
	return storageConfigFrom(metadata.EffectiveTopicConfigs(TopicConfigSources(img, cfg, topic)))
}

func storageConfigFrom(entries []metadata.ConfigEntry) storage.Config {
	sc := storage.DefaultConfig()
	for _, e := range entries {
		switch e.Name {
		case "message.timestamp.type":
			if e.Value == "LogAppendTime" {
				sc.MessageTimestampType = storage.LogAppendTime
			} else {
				sc.MessageTimestampType = storage.CreateTime
			}
			continue
		case "cleanup.policy":
			if p, err := storage.ParseCleanupPolicy(e.Value); err == nil {
				sc.CleanupPolicy = p
			}
			continue
		case "compression.type":
			if c, err := storage.ParseCompressionType(e.Value); err == nil {
				sc.CompressionType = c
			}
			continue
		case "min.cleanable.dirty.ratio":
			if r, err := strconv.ParseFloat(e.Value, 64); err == nil && r >= 0 && r <= 1 {
				sc.MinCleanableDirtyRatio = r
			}
			continue
		}
		set, ok := storageFields[e.Name]
		if !ok {
			continue
		}
		if v, err := strconv.ParseInt(e.Value, 10, 64); err == nil {
			set(&sc, v)
		}
	}
	return sc
}

// topicConfigSources is TopicConfigSources, or without server.properties
// (a server built without Options.Config) the image's layers alone.
func (s *Server) topicConfigSources(img *metadata.Image, topic string) metadata.ConfigSources {
	if s.config != nil {
		return TopicConfigSources(img, s.config, topic)
	}
	src := metadata.ConfigSources{DynamicBroker: img.BrokerConfigs(s.nodeID), DynamicCluster: img.ClusterConfigs()}
	if t, ok := img.Topic(topic); ok {
		src.Topic = t.Configs
	}
	return src
}
