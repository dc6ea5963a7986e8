package main

import (
	"context"

	"github.com/raftka/raftka/broker/config"
	"github.com/raftka/raftka/metadata"
	"github.com/raftka/raftka/raftfsm"
	"github.com/raftka/raftka/storage"
	"github.com/rs/zerolog"
)

// Dynamic broker configs that reach a running component (metadata's
// dynamic broker table): the cleaner's log.cleaner.threads,
// .dedupe.buffer.size, .io.max.bytes.per.second and .backoff.ms. They are
// in the Raft metadata, so a value survives a restart: the first image the
// watcher sees (the snapshot and the log replayed) reapplies it.

// dynamicCleanerKeys are the keys of the table, all the cleaner's.
func dynamicCleanerKeys() []string {
	var keys []string
	for _, d := range metadata.DynamicBrokerConfigDefs() {
		keys = append(keys, d.Name)
	}
	return keys
}

// cleanerSettings are the cleaner settings of node id under img: its own
// dynamic configs over the cluster default over server.properties. A
// dynamic value that no longer parses keeps the file's (err says which).
func cleanerSettings(cfg *config.Config, img *metadata.Image, id int32) (storage.CleanerSettings, error) {
	eff, err := cfg.WithDynamic(dynamicCleanerKeys(), img.BrokerConfigs(id), img.ClusterConfigs())
	return storage.CleanerSettings{
		Threads:             int(eff.LogCleanerThreads),
		DedupeBufferSize:    eff.LogCleanerDedupeBufferSize,
		IOMaxBytesPerSecond: eff.LogCleanerIOMaxBytesPerSecond,
		Backoff:             eff.LogCleanerBackoff,
	}, err
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

// watchDynamicConfigs applies every change of the dynamic cleaner settings
// to the storage Manager, from one goroutine, until stop.
func watchDynamicConfigs(node *raftfsm.Node, logs *storage.Manager, cfg *config.Config, log zerolog.Logger) (stop func()) {
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
			applyCleanerSettings(ev.Image, logs, cfg, log)
		}
	}()
	return func() {
		cancel()
		sub.Close()
		<-done
	}
}

func applyCleanerSettings(img *metadata.Image, logs *storage.Manager, cfg *config.Config, log zerolog.Logger) {
	want, err := cleanerSettings(cfg, img, cfg.NodeID)
	if err != nil {
		log.Warn().Err(err).Msg("dynamic broker config not applied")
	}
	if want == logs.CleanerSettings() {
		return
	}
	if err := logs.SetCleaner(want); err != nil {
		log.Warn().Err(err).Msg("log cleaner not reconfigured")
		return
	}
	log.Info().Int("threads", want.Threads).Int64("dedupe_buffer_size", want.DedupeBufferSize).
		Float64("io_max_bytes_per_second", want.IOMaxBytesPerSecond).Dur("backoff", want.Backoff).
		Msg("log cleaner reconfigured from dynamic broker configs")
}
