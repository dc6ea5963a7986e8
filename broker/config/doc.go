// Package config reads a node's server.properties, the Kafka-style file a
// Kafka user already has, into a typed Config.
//
// defs.go is the one table of every key raftka acts on (name, type, default,
// validator, setter, doc); kafka_keys.go lists the Kafka broker keys raftka
// accepts but does not act on. A key in neither is unknown. Both kinds are
// warnings, returned to the caller to log: a Kafka user's file must start
// raftka unchanged. A value that does not parse or validate is an error
// naming the key and the value; Load reports every such error at once.
//
// # Files
//
//	properties.go  Config, Load and Parse: properties syntax, overrides,
//	               each key's text parsed and validated by its Def, Settings
//	defs.go        the table of keys and the validators
//	set.go         setters: how a key's parsed value lands in Config
//	validate.go    fromValues: every setter, then the rules that derive
//	               fields from several keys (Kafka's precedence of ms over
//	               minutes over hours, log.dirs over log.dir, ...) and check
//	               keys against each other; soft checks that only warn
//	listeners.go   listener, voter and protocol-map syntax
//	security.go    per-listener TLS and SASL keys (ssl.*, sasl.*, and their
//	               listener.name.<name>. forms), resolved for each listener
//	               and checked against its security protocol
//	kafka_keys.go  Kafka keys accepted and ignored
//	dynamic.go     WithDynamic: dynamic broker configs (per broker, then the
//	               cluster default) over the file's values, for the keys a
//	               running node applies
//
// A key of the table is stored by its setter, read by a rule, or both;
// TestEveryKeyHandled fails when one is neither.
//
// The package is pure apart from reading the one file it is given: it does
// not log, start goroutines or touch the network. It imports the standard
// library and magiconair/properties only, and none of our packages.
//
//arch:imports std github.com/magiconair/properties
package config
