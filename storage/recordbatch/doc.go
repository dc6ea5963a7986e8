// Package recordbatch builds and decodes Kafka v2 record batches
// (uncompressed) for tests and tools: storage's own tests, the broker's
// tests that need produce payloads, and `raftka dump-log --print-data`.
//
// It is deliberately small and standard-library only, so any package may
// import it without pulling in storage; it must not import storage or any
// other raftka package. It is not on the broker's hot path: the broker never
// decodes records, it validates and stores batches as sent (see storage.Batch).
//
// Typical use in a test:
//
//	b := recordbatch.Build(time.Now().UnixMilli(),
//		recordbatch.Record{Key: []byte("k"), Value: []byte("v")})
//	res, err := log.Append(b, storage.AppendOptions{LeaderEpoch: 0})
//
//arch:imports std
package recordbatch
