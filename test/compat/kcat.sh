#!/usr/bin/env bash
# kcat.sh BOOTSTRAP TOPIC PARTITIONS BROKERS
#
# kcat (librdkafka) against a running cluster: metadata (-L), produce with
# keys and headers (-P), consume from the beginning to the end (-C -o
# beginning -e) and compare, offsets by time (-Q). TOPIC must exist with
# PARTITIONS partitions and be empty; BROKERS is the cluster's size.
# $KCAT names the kcat binary (default kcat). Run by test/e2e/compat_test.go; exits non-zero with a reason on the first
# mismatch.
set -euo pipefail

if [ $# -ne 4 ]; then
	echo "usage: $0 BOOTSTRAP TOPIC PARTITIONS BROKERS" >&2
	exit 2
fi
B=$1 T=$2 P=$3 N=$4
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

fail() {
	echo "kcat.sh: FAIL: $*" >&2
	exit 1
}
# Every kcat call is bounded: a broker that never answers fails the script
# instead of hanging it.
KCAT=${KCAT:-kcat}
k() { timeout 60 "$KCAT" -b "$B" -X socket.timeout.ms=20000 -X topic.metadata.refresh.interval.ms=1000 "$@"; }

echo "== kcat -L"
k -L -t "$T" >"$work/meta" 2>&1 || { cat "$work/meta" >&2; fail "kcat -L exited $?"; }
cat "$work/meta"
grep -q "^ $N brokers:" "$work/meta" || fail "metadata does not list $N brokers"
grep -q "topic \"$T\" with $P partitions:" "$work/meta" || fail "metadata does not list $T with $P partitions"
if grep -q "leader -1\|Broker: " "$work/meta"; then fail "metadata has a partition without a leader or an error"; fi
[ "$(grep -c '^    partition [0-9]*, leader [0-9]*, replicas: ' "$work/meta")" -eq "$P" ] || fail "metadata does not describe $P partitions with leaders"

# Two batches from two kcat runs: the second run's records are younger, so
# -Q has a timestamp boundary to find.
produce() { # batch count
	local batch=$1 count=$2
	awk -v b="$batch" -v n="$count" 'BEGIN { for (i = 1; i <= n; i++) { pad = ""; for (j = 0; j < i % 50; j++) pad = pad "x"; printf "key-%s-%04d:value %s %d %s\n", b, i, b, i, pad } }' >"$work/in-$batch"
	k -P -t "$T" -K: -H origin=kcat -H "batch=$batch" -X enable.idempotence=true -X acks=all \
		-l "$work/in-$batch" 2>"$work/produce-$batch.err" || { cat "$work/produce-$batch.err" >&2; fail "kcat -P (batch $batch) exited non-zero"; }
	if grep -qi "fail\|error" "$work/produce-$batch.err"; then
		cat "$work/produce-$batch.err" >&2
		fail "kcat -P (batch $batch) reported errors"
	fi
}
echo "== kcat -P"
produce A 300
produce B 300

echo "== kcat -C -o beginning -e"
k -C -t "$T" -o beginning -e -q -f '%p\t%o\t%T\t%k\t%s\t%h\n' >"$work/out" 2>"$work/consume.err" || { cat "$work/consume.err" >&2; fail "kcat -C exited non-zero"; }
got=$(wc -l <"$work/out")
[ "$got" -eq 600 ] || fail "consumed $got records, produced 600"
# Same key:value lines, no more, no less.
cut -f4,5 "$work/out" | tr '\t' ':' | sort >"$work/got-kv"
sort "$work/in-A" "$work/in-B" >"$work/want-kv"
diff -q "$work/want-kv" "$work/got-kv" >/dev/null || { diff "$work/want-kv" "$work/got-kv" | head -20 >&2; fail "consumed keys/values differ from produced"; }
# Headers, in order, matching each record's batch.
awk -F'\t' '{ split($4, k, "-"); if ($6 != "origin=kcat,batch=" k[2]) { print "bad headers at " $1 "/" $2 ": " $6; bad=1 } } END { exit bad }' "$work/out" >&2 ||
	fail "headers differ from produced"
# Offsets dense from 0 in every partition; keys spread over partitions.
sort -t$'\t' -k1,1n -k2,2n "$work/out" | awk -F'\t' '
	$1 != p { p = $1; next_off = 0; parts++ }
	{ if ($2 != next_off) { print "partition " $1 ": offset " $2 " where " next_off " was expected"; bad=1 }; next_off++ }
	END { if (parts < 2) { print "all records landed in " parts " partition(s)"; bad=1 }; exit bad }' >&2 ||
	fail "offsets are not dense from 0 per partition"
# Within a partition, every batch-A record precedes every batch-B record.
awk -F'\t' '{ split($4, k, "-"); if (k[2] == "A" && seenB[$1]) { print "A after B in partition " $1; bad=1 } if (k[2] == "B") seenB[$1]=1 } END { exit bad }' \
	<(sort -t$'\t' -k1,1n -k2,2n "$work/out") >&2 || fail "records are out of order"

echo "== kcat -Q"
# For each partition holding batch B: the first B record's timestamp must
# map to the first offset with a timestamp at or after it (computed from
# what was consumed), and a timestamp past every record to -1.
# kcat -Q keeps one query per partition, so the two kinds run separately.
query() { # name, then -t topic:partition:timestamp arguments
	local name=$1
	shift
	k -Q "$@" >"$work/q-$name" 2>"$work/q-$name.err" || { cat "$work/q-$name.err" >&2; fail "kcat -Q exited non-zero"; }
	sort "$work/q-$name" -o "$work/q-$name"
	cat "$work/q-$name"
}
at=() future=()
latest=$(($(cut -f3 "$work/out" | sort -n | tail -1) + 3600000))
: >"$work/want-at"
: >"$work/want-future"
for p in $(seq 0 $((P - 1))); do
	ts=$(awk -F'\t' -v p="$p" '$1 == p && $4 ~ /^key-B-/ { if (min == "" || $3 < min) min = $3 } END { print min }' "$work/out")
	[ -n "$ts" ] || continue
	want=$(awk -F'\t' -v p="$p" -v ts="$ts" '$1 == p && $3 >= ts { if (min == "" || $2 < min) min = $2 } END { print min }' "$work/out")
	at+=(-t "$T:$p:$ts")
	echo "$T [$p] offset $want" >>"$work/want-at"
	future+=(-t "$T:$p:$latest")
	echo "$T [$p] offset -1" >>"$work/want-future"
done
[ "${#at[@]}" -gt 0 ] || fail "no partition holds batch B"
query at "${at[@]}"
query future "${future[@]}"
for q in at future; do
	sort "$work/want-$q" -o "$work/want-$q"
	diff "$work/want-$q" "$work/q-$q" >&2 || fail "offsets by time ($q) differ (want < > got)"
done
echo "kcat.sh: OK"
