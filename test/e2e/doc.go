// Package e2e holds the end-to-end tests: real raftka processes started by
// test/cluster on loopback ports, driven by real Kafka clients (franz-go,
// sarama, kafka-go, kcat, confluent-kafka-python) and real faults (SIGKILL,
// SIGSTOP, SIGTERM). It has no non-test code beyond this file; nothing
// imports it, and it imports raftka packages only for exported test helpers.
//
//arch:imports std
//arch:importers none
package e2e
