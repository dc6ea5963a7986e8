// Package config reads a node's server.properties, the Kafka-style file a
// Kafka user already has, into a typed Config.
//
// defs.go is the one table of every key raftka acts on (name, type, default,
// validator, doc); kafka_keys.go lists the Kafka broker keys raftka accepts
// but does not act on. A key in neither is unknown. Both kinds are warnings,
// returned to the caller to log: a Kafka user's file must start raftka
// unchanged. A value that does not parse or validate is an error naming the
// key and the value; Load reports every such error at once.
//
// The package is pure apart from reading the one file it is given: it does
// not log, start goroutines or touch the network. It imports the standard
// library and magiconair/properties only, and none of our packages.
//
//arch:imports std github.com/magiconair/properties
package config
