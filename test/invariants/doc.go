// Package invariants checks the replication promises of ARCHITECTURE.md
// ("Invariants the tests hold us to") from the outside, Jepsen style: a
// workload records every write the cluster acknowledged, a reader takes the
// log back, and pure checkers name what went wrong.
//
//   - Check compares acknowledged writes with what was read: lost,
//     duplicated, conflicting (two acknowledgements for one offset),
//     out-of-order within a producer's partition, gaps in the offsets, and
//     the longest stall between acknowledgements.
//   - CheckTransactions compares the transactions producers ran (what each
//     learned: committed, aborted, unsure) with a read_committed read: no
//     aborted record read, no committed record lost, no torn transaction,
//     no duplicate, each producer's records in order within a partition.
//     StartTxnLoad runs such producers and ReadCommitted takes the read.
//   - CompareReplicas compares the batches of one partition across the
//     replicas' data directories below the high watermark: they must be
//     byte-identical.
//   - Producer, Consumer and ReadAll drive franz-go against any Kafka
//     address list; Failover runs the kill-the-leader scenario against a
//     Harness (test/cluster in practice, adapted by the caller).
//
// The package is black-box: it reads data directories with storage's exported
// file parsers and talks to brokers over the wire. It must not import
// test/cluster (nothing but tests may import test packages) nor any broker,
// raftfsm or metadata package. Checkers are pure functions over values; the
// workload types start goroutines of franz-go and their own, which end when
// they are stopped or closed.
//
//arch:imports std storage github.com/twmb/franz-go/pkg/kmsg github.com/twmb/franz-go/pkg/kerr
//arch:imports github.com/twmb/franz-go/pkg/kgo github.com/twmb/franz-go/pkg/kadm
//arch:importers none
package invariants
