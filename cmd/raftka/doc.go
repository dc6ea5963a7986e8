// Command raftka is the raftka broker and its operator tools: `raftka server`
// runs a node from a Kafka-style server.properties, `raftka local` runs a
// cluster on one machine (what `make run` does), and the other subcommands
// (storage, topics, produce, consume, cluster, leader-election, bench,
// dump-log) mirror Kafka's shell tools over the wire with franz-go.
//
// main.go only wires the cli.App; each subcommand lives in its own file and
// registers itself from init. Nothing imports this package; it may import
// every raftka package.
package main
