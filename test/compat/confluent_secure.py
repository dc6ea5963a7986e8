#!/usr/bin/env python3
"""confluent-kafka-python (librdkafka) over a secured listener.

With the client settings given as -X key=value (security.protocol,
sasl.mechanisms, sasl.username, sasl.password, ssl.ca.location, ...), an
acks=all producer writes --count records to an existing topic and a consumer
in a group reads them back and commits; every record must come back once.
With --expect-auth-failure the settings must be refused: the client must
report an authentication or SSL error and never get metadata.
Run by test/e2e/security_test.go; exits non-zero with a reason on failure.
"""

import argparse
import sys
import time

from confluent_kafka import Consumer, KafkaError, KafkaException, Producer


def fail(msg):
    print("confluent_secure.py: FAIL: " + msg, file=sys.stderr)
    sys.exit(1)


def settings(args):
    conf = {"bootstrap.servers": args.bootstrap}
    for kv in args.X or []:
        k, _, v = kv.partition("=")
        conf[k] = v
    return conf


def expect_failure(args):
    errors = []
    conf = settings(args)
    conf["error_cb"] = lambda err: errors.append(err)
    p = Producer(conf)
    deadline = time.time() + 20
    while time.time() < deadline:
        try:
            p.list_topics(timeout=1)
            fail("metadata answered although the credentials must be refused")
        except KafkaException:
            pass
        p.poll(0.2)
        for e in errors:
            if e.code() in (KafkaError._AUTHENTICATION, KafkaError._SSL, KafkaError.SASL_AUTHENTICATION_FAILED):
                print("refused as expected: %s" % e)
                return
    fail("no authentication error within 20s; errors seen: %s" % errors)


def round_trip(args):
    conf = settings(args)
    errors = []
    acked = 0

    def on_delivery(err, msg):
        nonlocal acked
        if err is not None:
            errors.append(str(err))
        else:
            acked += 1

    p = Producer(dict(conf, **{"acks": "all", "enable.idempotence": True}))
    want = set()
    for i in range(args.count):
        v = "secure-%d" % i
        want.add(v)
        p.produce(args.topic, key=str(i).encode(), value=v.encode(), on_delivery=on_delivery)
        p.poll(0)
    left = p.flush(60)
    if left or errors or acked != args.count:
        fail("produce: %d unflushed, %d acked of %d, errors %s" % (left, acked, args.count, errors[:3]))

    c = Consumer(dict(conf, **{"group.id": args.group, "auto.offset.reset": "earliest", "enable.auto.commit": False}))
    c.subscribe([args.topic])
    got = set()
    deadline = time.time() + 60
    while len(got) < args.count and time.time() < deadline:
        m = c.poll(1.0)
        if m is None:
            continue
        if m.error():
            if m.error().code() == KafkaError._PARTITION_EOF:
                continue
            fail("consume: %s" % m.error())
        v = m.value().decode()
        if v in got:
            fail("record %s consumed twice" % v)
        got.add(v)
    if got != want:
        fail("consumed %d of %d records" % (len(got), len(want)))
    c.commit(asynchronous=False)
    committed = c.committed(c.assignment(), timeout=10)
    if sum(tp.offset for tp in committed if tp.offset >= 0) != args.count:
        fail("committed offsets %s do not add up to %d" % (committed, args.count))
    c.close()
    print("round trip of %d records over %s" % (args.count, conf.get("security.protocol", "PLAINTEXT")))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bootstrap", required=True)
    ap.add_argument("--topic")
    ap.add_argument("--group", default="confluent-secure")
    ap.add_argument("--count", type=int, default=200)
    ap.add_argument("--expect-auth-failure", action="store_true")
    ap.add_argument("-X", action="append")
    args = ap.parse_args()
    if args.expect_auth_failure:
        expect_failure(args)
    else:
        if not args.topic:
            fail("--topic is required")
        round_trip(args)


if __name__ == "__main__":
    main()
