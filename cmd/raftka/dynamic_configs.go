package main

import (
	"context"

	"github.com/raftka/raftka/broker/config"
	"github.com/raftka/raftka/broker/replica"
	"github.com/raftka/raftka/metadata"
	"github.com/raftka/raftka/raftfsm"
	"github.com/raftka/raftka/storage"
	"github.com/rs/zerolog"
)

// Dynamic broker configs that reach a running component (metadata's
// dynamic broker table): the cleaner's log.cleaner.threads,
// .dedupe.buffer.size, .io.max.bytes.per.second and .backoff.ms,
// producer.id.expiration.ms, num.replica.fetchers and
// follower.replication.throttled.rate. They are in the Raft metadata, so a value
// survives a restart: the first image the watcher sees (the snapshot and
// the log replayed) reapplies it.

// dynamicKeys are the keys of the table.
func dynamicKeys() []string {
	var keys []string
	for _, d := range metadata.DynamicBrokerConfigDefs() {
		keys = append(keys, d.Name)
	}
	return keys
}

// effectiveConfig is node id's config under img: its own dynamic configs
// over the cluster default over server.properties, for the table's keys. A
// dynamic value that no longer parses keeps the file's (err says which).
func effectiveConfig(cfg *config.Config, img *metadata.Image, id int32) (*config.Config, error) {
	return cfg.WithDynamic(dynamicKeys(), img.BrokerConfigs(id), img.ClusterConfigs())
}

// cleanerSettings are the cleaner settings of an effective config.
func cleanerSettings(eff *config.Config) storage.CleanerSettings {
	return storage.CleanerSettings{
		Threads:             int(eff.LogCleanerThreads),
		DedupeBufferSize:    eff.LogCleanerDedupeBufferSize,
		IOMaxBytesPerSecond: eff.LogCleanerIOMaxBytesPerSecond,
		Backoff:             eff.LogCleanerBackoff,
	}
}

// brokerConfigsChanged reports whether an event may change a broker-level
// config of this node.
func brokerConfigsChanged(ev raftfsm.Event) bool {
	if ev.Reset || ev.Delta == nil {
		return true
	}
	for _, c := range ev.Delta.ConfigsChanged {
		if c.ResourceType != metadata.ConfigResourceTopic {
			return true
		}
	}
	return false
}

// watchDynamicConfigs applies every change of the table's keys to the
// storage and replica Managers, from one goroutine, until stop.
func watchDynamicConfigs(node *raftfsm.Node, logs *storage.Manager, replicas *replica.Manager, cfg *config.Config, log zerolog.Logger) (stop func()) {
	sub := node.Subscribe()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			ev, err := sub.NextLatest(ctx)
			if err != nil {
				return
			}
			if !brokerConfigsChanged(ev) {
				continue
			}
			applyDynamicConfigs(ev.Image, logs, replicas, cfg, log)
		}
	}()
	return func() {
		cancel()
		sub.Close()
		<-done
	}
}

func applyDynamicConfigs(img *metadata.Image, logs *storage.Manager, replicas *replica.Manager, cfg *config.Config, log zerolog.Logger) {
	eff, err := effectiveConfig(cfg, img, cfg.NodeID)
	if err != nil {
		log.Warn().Err(err).Msg("dynamic broker config not applied")
	}
	if want := cleanerSettings(eff); want != logs.CleanerSettings() {
		if err := logs.SetCleaner(want); err != nil {
			log.Warn().Err(err).Msg("log cleaner not reconfigured")
		} else {
			log.Info().Int("threads", want.Threads).Int64("dedupe_buffer_size", want.DedupeBufferSize).
				Float64("io_max_bytes_per_second", want.IOMaxBytesPerSecond).Dur("backoff", want.Backoff).
				Msg("log cleaner reconfigured from dynamic broker configs")
		}
	}
	if want := eff.ProducerIDExpiration; want != logs.ProducerIDExpiration() {
		if err := logs.SetProducerIDExpiration(want); err != nil {
			log.Warn().Err(err).Msg("producer.id.expiration.ms not changed")
		} else {
			log.Info().Dur("producer_id_expiration", want).Msg("producer.id.expiration.ms changed by a dynamic broker config")
		}
	}
	if want := eff.FollowerReplicationThrottledRate; want != replicas.FollowerThrottle() {
		replicas.SetFollowerThrottle(want)
		log.Info().Int64("follower_replication_throttled_rate", want).Msg("follower replication throttle set by a dynamic broker config")
	}
	if want := eff.LeaderReplicationThrottledRate; want != replicas.LeaderThrottle() {
		replicas.SetLeaderThrottle(want)
		log.Info().Int64("leader_replication_throttled_rate", want).Msg("leader replication throttle set by a dynamic broker config")
	}
	if want := int(eff.NumReplicaFetchers); want != replicas.NumFetchers() {
		if err := replicas.SetNumFetchers(want); err != nil {
			log.Warn().Err(err).Msg("num.replica.fetchers not changed")
		} else {
			log.Info().Int("num_replica_fetchers", want).Msg("replica fetchers resized by a dynamic broker config")
		}
	}
}
