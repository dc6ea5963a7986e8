package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/raftka/raftka/broker/config"
)

// The configs `raftka local` writes must parse cleanly with the same code a
// migrated Kafka file goes through, and give every node its own ports.
func TestLocalPropertiesParse(t *testing.T) {
	p := localPlan{nodes: 3, dir: "data", clientBase: 9092, ctrlBase: 9192, mBase: 9292, overrides: []string{"num.partitions=6"}}
	seen := map[int]bool{}
	for id := 1; id <= 3; id++ {
		cfg, warnings, err := config.Parse([]byte(p.properties(id)), nil)
		if err != nil {
			t.Fatalf("node %d: %v", id, err)
		}
		if len(warnings) > 0 {
			t.Errorf("node %d: warnings %v", id, warnings)
		}
		if cfg.NodeID != int32(id) || len(cfg.Voters) != 3 || cfg.NumPartitions != 6 {
			t.Errorf("node %d: parsed %d voters, id %d, partitions %d", id, len(cfg.Voters), cfg.NodeID, cfg.NumPartitions)
		}
		if cfg.DefaultReplicationFactor != 3 || cfg.MinInsyncReplicas != 2 {
			t.Errorf("node %d: RF %d, min ISR %d; make run promises 3 and 2", id, cfg.DefaultReplicationFactor, cfg.MinInsyncReplicas)
		}
		for _, l := range cfg.Listeners {
			if seen[l.Port] {
				t.Errorf("port %d used twice", l.Port)
			}
			seen[l.Port] = true
		}
	}
	if got := localBootstrap(p); got != "localhost:9092,localhost:9093,localhost:9094" {
		t.Errorf("bootstrap %q", got)
	}
}

func TestLocalRejectsBadArguments(t *testing.T) {
	cases := [][]string{
		{"raftka", "local", "--nodes", "0"},
		{"raftka", "local", "--nodes", "10"},
		{"raftka", "local", "--base-port", "65534", "--nodes", "3"},
		{"raftka", "local", "--override", "novalue"},
	}
	for _, args := range cases {
		app := newApp()
		app.Writer, app.ErrWriter = &bytes.Buffer{}, &bytes.Buffer{}
		if err := app.Run(append(args, "--dir", t.TempDir())); err == nil {
			t.Errorf("%s: want an error", strings.Join(args[1:], " "))
		}
	}
}
