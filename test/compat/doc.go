// Package compat holds the client-compatibility checks: the librdkafka
// scripts (kcat.sh, confluent.py, run by test/e2e) and, as Go tests, the
// conformance table (conformance_test.go): every API raftka advertises, at
// its lowest and highest advertised version, with edge-case inputs, each
// answer compared field by field with what Kafka 4.1 answers, citing where
// Kafka defines it; and the Go clients' admin calls (admin_clients_test.go:
// kadm, sarama's ClusterAdmin, kafka-go's Client) over every admin API
// raftka serves, one subtest per API and library. It has no non-test code
// beyond this file; nothing imports it.
//
//arch:imports std
//arch:importers none
package compat
