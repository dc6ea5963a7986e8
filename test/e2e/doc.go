// Package e2e holds the end-to-end tests: real raftka processes started by
// test/cluster on loopback ports, driven by real Kafka clients (franz-go,
// sarama, kafka-go, kcat, confluent-kafka-python) and real faults (SIGKILL,
// SIGSTOP, SIGTERM). It has no non-test code beyond this file; nothing
// imports it, and it imports raftka packages only for exported test helpers.
// Its tests run in parallel, four at a time, except those that measure
// against the clock or share process-wide state ("Parallel tests" in
// main_test.go): a new test calls t.Parallel unless one of those reasons
// holds.
//
//arch:imports std
//arch:importers none
package e2e
