package main

import (
	"testing"
	"time"

	"github.com/raftka/raftka/broker/config"
	"github.com/raftka/raftka/metadata"
	"github.com/raftka/raftka/raftfsm"
	"github.com/raftka/raftka/storage"
)

func TestCleanerSettings(t *testing.T) {
	cfg, _, err := config.Parse([]byte("process.roles=broker,controller\nnode.id=1\ncontroller.quorum.voters=1@127.0.0.1:9093\nlisteners=PLAINTEXT://127.0.0.1:9092,CONTROLLER://127.0.0.1:9093\ncontroller.listener.names=CONTROLLER\nlog.dirs=data\nlog.cleaner.threads=2\n"), nil)
	if err != nil {
		t.Fatal(err)
	}
	rec := func(name, key, value string) metadata.Record {
		typ := metadata.ConfigResourceBroker
		if name == "" {
			typ = metadata.ConfigResourceCluster
		}
		return &metadata.Config{ResourceType: typ, ResourceName: name, Key: key, Value: value}
	}
	def := storage.CleanerSettings{Threads: 2, DedupeBufferSize: 128 << 20, IOMaxBytesPerSecond: 1.7976931348623157e308, Backoff: 15 * time.Second}
	cases := []struct {
		name string
		recs []metadata.Record
		want storage.CleanerSettings
	}{
		{"server.properties and defaults", nil, def},
		{"cluster default", []metadata.Record{rec("", "log.cleaner.backoff.ms", "100")},
			storage.CleanerSettings{Threads: 2, DedupeBufferSize: 128 << 20, IOMaxBytesPerSecond: 1.7976931348623157e308, Backoff: 100 * time.Millisecond}},
		{"this broker over the cluster default", []metadata.Record{rec("", "log.cleaner.backoff.ms", "100"), rec("1", "log.cleaner.backoff.ms", "50"), rec("1", "log.cleaner.threads", "4"), rec("1", "log.cleaner.io.max.bytes.per.second", "1e6")},
			storage.CleanerSettings{Threads: 4, DedupeBufferSize: 128 << 20, IOMaxBytesPerSecond: 1e6, Backoff: 50 * time.Millisecond}},
		{"another broker's config", []metadata.Record{rec("2", "log.cleaner.backoff.ms", "50"), rec("2", "log.cleaner.dedupe.buffer.size", "1024")}, def},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			img, _ := metadata.NewImage().Apply(c.recs)
			eff, err := effectiveConfig(cfg, img, 1)
			if got := cleanerSettings(eff); err != nil || got != c.want {
				t.Fatalf("%+v %v, want %+v", got, err, c.want)
			}
		})
	}
}

func TestEffectiveProducerIDExpiration(t *testing.T) {
	cfg, _, err := config.Parse([]byte("process.roles=broker,controller\nnode.id=1\ncontroller.quorum.voters=1@127.0.0.1:9093\nlisteners=PLAINTEXT://127.0.0.1:9092,CONTROLLER://127.0.0.1:9093\ncontroller.listener.names=CONTROLLER\nlog.dirs=data\n"), nil)
	if err != nil {
		t.Fatal(err)
	}
	img, _ := metadata.NewImage().Apply([]metadata.Record{&metadata.Config{ResourceType: metadata.ConfigResourceCluster, Key: "producer.id.expiration.ms", Value: "60000"}})
	eff, err := effectiveConfig(cfg, img, 1)
	if err != nil || eff.ProducerIDExpiration != time.Minute {
		t.Fatalf("%v %v, want the cluster default's minute", eff.ProducerIDExpiration, err)
	}
	if cfg.ProducerIDExpiration != 24*time.Hour {
		t.Fatalf("the file's value changed: %v", cfg.ProducerIDExpiration)
	}
}

func TestBrokerConfigsChanged(t *testing.T) {
	topicOnly := &metadata.Delta{ConfigsChanged: []metadata.ConfigChange{{ResourceType: metadata.ConfigResourceTopic, ResourceName: "t", Key: "retention.ms"}}}
	broker := &metadata.Delta{ConfigsChanged: []metadata.ConfigChange{{ResourceType: metadata.ConfigResourceBroker, ResourceName: "1", Key: "log.cleaner.backoff.ms"}}}
	for _, c := range []struct {
		ev   raftfsm.Event
		want bool
	}{
		{raftfsm.Event{Reset: true}, true},
		{raftfsm.Event{Delta: &metadata.Delta{}}, false},
		{raftfsm.Event{Delta: topicOnly}, false},
		{raftfsm.Event{Delta: broker}, true},
	} {
		if got := brokerConfigsChanged(c.ev); got != c.want {
			t.Errorf("%+v: %v, want %v", c.ev, got, c.want)
		}
	}
}
