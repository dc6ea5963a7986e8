// Package broker is the Kafka protocol server and everything behind a request:
// connection handling, the one table of implemented APIs from which
// ApiVersions is built, and one file per API (api_*.go).
//
// It may import storage, metadata and raftfsm. Nothing of ours imports broker
// except cmd; its subpackages (config, replica, group, txn) never import the
// root broker package.
package broker
