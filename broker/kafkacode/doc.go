// Package kafkacode is the one mapping from raftka's error kinds (storage
// sentinels, context errors, kerr errors passed through) to Kafka error
// codes. The root broker's handlers and broker/replica's serve helpers both
// answer with it, so a kind means the same code on every path.
//
// It imports storage and kerr only; it must not import any other raftka
// package.
//
//arch:imports std storage github.com/twmb/franz-go/pkg/kerr
package kafkacode
