#!/usr/bin/env python3
"""confluent-kafka-python (librdkafka) against a running cluster.

An idempotent producer (enable.idempotence=true, acks=all) writes records
with keys and headers to an existing, empty topic and collects each
delivery report's partition and offset; a consumer with a group.id reads
them back (subscribe() through the group coordinator, or assign() with
explicit offsets when the cluster has no consumer groups) and every record
must come back once, identical, at the offset it was acknowledged at.
In subscribe mode the consumer commits and the committed offsets are read
back. Run by test/e2e/compat_test.go; exits non-zero with a reason on the
first mismatch.
"""

import argparse
import sys
import time

from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition


def fail(msg):
    print("confluent.py: FAIL: " + msg, file=sys.stderr)
    sys.exit(1)


def produce(args):
    errors = []
    acked = {}  # key -> (partition, offset)
    sent = {}  # key -> (value, headers)

    def on_delivery(err, msg):
        if err is not None:
            errors.append("%s: %s" % (msg.key(), err))
            return
        acked[msg.key().decode()] = (msg.partition(), msg.offset())

    p = Producer({
        "bootstrap.servers": args.bootstrap,
        "enable.idempotence": True,
        "acks": "all",
        "linger.ms": 5,
        "client.id": "raftka-compat-python",
        "message.timeout.ms": 60000,
    })
    for i in range(args.count):
        key = "py-key-%05d" % i
        value = ("py value %d " % i) + "y" * (i % 120)
        headers = [("origin", b"confluent"), ("idx", str(i).encode())]
        if i % 4 == 0:
            headers.append(("empty", b""))
        if i % 9 == 0:
            headers.append(("idx", b"again"))
        sent[key] = (value, headers)
        while True:
            try:
                p.produce(args.topic, key=key, value=value, headers=headers, on_delivery=on_delivery)
                break
            except BufferError:
                p.poll(0.1)
        p.poll(0)
    left = p.flush(60)
    if left:
        fail("%d records still undelivered after 60s" % left)
    if errors:
        fail("%d delivery errors, first: %s" % (len(errors), errors[0]))
    if len(acked) != args.count:
        fail("%d delivery reports for %d records" % (len(acked), args.count))
    seen = {}
    for key, at in acked.items():
        if at in seen:
            fail("%s and %s were both acknowledged at %s" % (seen[at], key, at))
        seen[at] = key
    print("produced %d records (idempotent) to %d partitions" % (args.count, len({p for p, _ in acked.values()})))
    return sent, acked


def consume(args, sent, acked):
    ends = {}
    for part, off in acked.values():
        ends[part] = max(ends.get(part, 0), off + 1)
    c = Consumer({
        "bootstrap.servers": args.bootstrap,
        "group.id": "compat-python-" + args.topic,
        "auto.offset.reset": "earliest",
        "enable.auto.commit": False,
        "client.id": "raftka-compat-python",
        "session.timeout.ms": 6000,
        "heartbeat.interval.ms": 500,
    })
    try:
        if args.mode == "subscribe":
            c.subscribe([args.topic])
        else:
            c.assign([TopicPartition(args.topic, p, 0) for p in range(args.partitions)])
        got = {}
        deadline = time.monotonic() + 90
        while len(got) < len(acked):
            if time.monotonic() > deadline:
                fail("consumed %d of %d records before the deadline (%s mode)" % (len(got), len(acked), args.mode))
            msg = c.poll(0.5)
            if msg is None:
                continue
            if msg.error():
                if msg.error().code() == KafkaError._PARTITION_EOF:
                    continue
                fail("consume error: %s" % msg.error())
            key = msg.key().decode()
            at = (msg.partition(), msg.offset())
            if key in got:
                fail("%s consumed twice (at %s and %s)" % (key, got[key], at))
            if key not in acked:
                fail("consumed %s which was never produced" % key)
            if acked[key] != at:
                fail("%s consumed at %s, acknowledged at %s" % (key, at, acked[key]))
            value, headers = sent[key]
            if msg.value().decode() != value:
                fail("%s: value %r, produced %r" % (key, msg.value()[:40], value[:40]))
            got_headers = [(k, v if v is not None else b"") for k, v in (msg.headers() or [])]
            if got_headers != headers:
                fail("%s: headers %r, produced %r" % (key, got_headers, headers))
            got[key] = at
        if args.mode == "subscribe":
            commit = [TopicPartition(args.topic, p, end) for p, end in ends.items()]
            c.commit(offsets=commit, asynchronous=False)
            committed = c.committed([TopicPartition(args.topic, p) for p in ends], timeout=20)
            for tp in committed:
                if tp.error is not None or tp.offset != ends[tp.partition]:
                    fail("committed offset for partition %d is %d (%s), want %d" % (tp.partition, tp.offset, tp.error, ends[tp.partition]))
        print("consumed %d records back (%s mode)" % (len(got), args.mode))
    finally:
        c.close()


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--bootstrap", required=True)
    ap.add_argument("--topic", required=True)
    ap.add_argument("--partitions", type=int, required=True)
    ap.add_argument("--count", type=int, default=2000)
    ap.add_argument("--mode", choices=["subscribe", "assign"], required=True)
    args = ap.parse_args()
    try:
        sent, acked = produce(args)
        consume(args, sent, acked)
    except KafkaException as e:
        fail("client error: %s" % e)
    print("confluent.py: OK")


if __name__ == "__main__":
    main()
