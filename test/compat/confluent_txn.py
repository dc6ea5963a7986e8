#!/usr/bin/env python3
"""confluent-kafka-python (librdkafka) transactions against a running cluster.

A transactional producer (transactional.id) writes rounds of records to an
existing, empty topic, committing some rounds and aborting the others; a
read_committed consumer (assign() from the beginning of every partition)
must then see exactly the committed records, each once, in the order they
were sent within each partition, and none of an aborted round. A
read_uncommitted consumer sees the aborted ones too, as in Kafka. Run by
test/e2e/transactions_test.go; exits non-zero with a reason on the first
mismatch.
"""

import argparse
import sys
import time

from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition


def fail(msg):
    print("confluent_txn.py: FAIL: " + msg, file=sys.stderr)
    sys.exit(1)


def consume(args, isolation, want):
    c = Consumer({
        "bootstrap.servers": args.bootstrap,
        "group.id": "confluent-txn-" + isolation,
        "enable.auto.commit": False,
        "isolation.level": isolation,
    })
    c.assign([TopicPartition(args.topic, p, 0) for p in range(args.partitions)])
    got = {}  # partition -> [values]
    n = 0
    deadline = time.time() + 60
    quiet = time.time() + 10
    while n < want and time.time() < deadline and time.time() < quiet:
        m = c.poll(0.5)
        if m is None:
            continue
        if m.error():
            fail("%s consume: %s" % (isolation, m.error()))
        got.setdefault(m.partition(), []).append(m.value().decode())
        n += 1
        quiet = time.time() + 10
    # Anything beyond what is expected is a failure too: wait a moment more.
    end = time.time() + 2
    while time.time() < end:
        m = c.poll(0.2)
        if m is not None and not m.error():
            got.setdefault(m.partition(), []).append(m.value().decode())
            n += 1
    c.close()
    return got, n


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bootstrap", required=True)
    ap.add_argument("--topic", required=True)
    ap.add_argument("--partitions", type=int, required=True)
    ap.add_argument("--rounds", type=int, default=6)
    ap.add_argument("--per-round", type=int, default=30)
    args = ap.parse_args()

    p = Producer({
        "bootstrap.servers": args.bootstrap,
        "transactional.id": "confluent-txn-1",
        "transaction.timeout.ms": 30000,
    })
    try:
        p.init_transactions(60)
    except KafkaException as e:
        fail("init_transactions: %s" % e)
    committed, aborted = [], []
    sent_order = {}  # partition -> [values] of committed rounds
    for r in range(args.rounds):
        p.begin_transaction()
        vals = []
        for i in range(args.per_round):
            v = "c%d-%03d" % (r, i)
            part = i % args.partitions
            p.produce(args.topic, value=v.encode(), key=str(i).encode(), partition=part)
            vals.append((part, v))
        try:
            if r % 3 == 1:
                # librdkafka purges what it has not sent when it aborts:
                # flush first, so the aborted records are in the log.
                if p.flush(60) != 0:
                    fail("round %d: records left unsent" % r)
                p.abort_transaction(60)
                aborted += [v for _, v in vals]
            else:
                p.commit_transaction(60)
                committed += [v for _, v in vals]
                for part, v in vals:
                    sent_order.setdefault(part, []).append(v)
        except KafkaException as e:
            fail("round %d: %s" % (r, e))

    got, n = consume(args, "read_committed", len(committed))
    if n != len(committed):
        fail("read_committed read %d records, want %d" % (n, len(committed)))
    for part, vals in got.items():
        if vals != sent_order.get(part, []):
            fail("partition %d read_committed order %s, want %s" % (part, vals[:5], sent_order.get(part, [])[:5]))
    seen = set(v for vals in got.values() for v in vals)
    for v in aborted:
        if v in seen:
            fail("read_committed read aborted record %s" % v)

    _, n = consume(args, "read_uncommitted", len(committed) + len(aborted))
    if n != len(committed) + len(aborted):
        fail("read_uncommitted read %d records, want %d (aborted ones too)" % (n, len(committed) + len(aborted)))
    print("confluent_txn.py: ok: %d committed, %d aborted records" % (len(committed), len(aborted)))


if __name__ == "__main__":
    main()
