// Command raftka is the raftka broker and its operator tools: `raftka server`
// runs a node from a Kafka-style server.properties, `raftka local` runs a
// cluster on one machine (what `make run` does), and the other subcommands
// (storage, topics, groups, produce, consume, cluster, top, leader-election,
// transactions, reassign, bench, dump-log, acls, quotas, users) mirror Kafka's shell tools over the wire with
// franz-go; every client-side one takes --command-config with Kafka's client
// keys.
//
// The server's operator listener (metrics.go) serves /metrics, the probes
// and, with console.enable, the read-only web console (console.go, its
// templates under console/).
//
// main.go only wires the cli.App; each subcommand lives in its own file and
// registers itself from init. Nothing imports this package; it may import
// every raftka package.
//
//arch:imports std storage/... metadata raftfsm broker/... github.com/twmb/franz-go/pkg/kmsg
//arch:imports github.com/twmb/franz-go/pkg/kerr github.com/twmb/franz-go/pkg/kgo github.com/twmb/franz-go/pkg/sasl
//arch:imports github.com/twmb/franz-go/pkg/kadm github.com/twmb/franz-go/pkg/kfake
//arch:imports github.com/urfave/cli/v2 github.com/rs/zerolog
//arch:imports github.com/prometheus/client_golang/... github.com/HdrHistogram/hdrhistogram-go
//arch:imports github.com/mattn/go-isatty github.com/magiconair/properties
//arch:importers none
package main
