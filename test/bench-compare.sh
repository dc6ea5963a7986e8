#!/usr/bin/env bash
# Compares two revisions on this machine: `make bench-compare OLD=rev` builds
# bin/raftka (this tree) and bin/raftka-<rev> (make build-previous), then runs
# this script with both. It builds nothing itself.
#
# Usage: test/bench-compare.sh OLD_BIN NEW_BIN OLD_REV
#
# 1. The Go benchmarks of BENCH_GO_PKGS (the append, fetch, follower fetch
#    and Raft commit paths' packages), -benchmem, in the old tree (git
#    archive of OLD_REV) and this one, one -count=1 pass each in turn,
#    BENCH_COMPARE_ROUNDS times; then benchstat old new.
# 2. test/bench.sh with the brokers running OLD_BIN, then NEW_BIN, in turn
#    (the order flips every round, so neither always runs first on a
#    machine that warms up or gets busier), BENCH_COMPARE_ROUNDS times, each
#    with its own BENCH_JSON. The bench client is bin/raftka in both, so
#    only the brokers differ. BENCH_TARGETS, BENCH_ROWS and the other knobs
#    of bench.sh apply; BENCH_REPEAT defaults to 1 here (the rounds repeat).
# 3. For every figure and every target, the median over the rounds for old
#    and for new, and new / old.
#
# Everything lands in BENCH_COMPARE_DIR (bin/bench-compare-<rev>): the Go
# benchmark outputs, each bench.sh run's table and JSON.
#
# Knobs: BENCH_COMPARE_ROUNDS (3), BENCH_GO_PKGS ("./storage/ ./broker/replica/
# ./raftfsm/"; "none" skips the Go benchmarks), BENCH_GO_BENCH (".": the
# -bench pattern), BENCH_COMPARE_DIR, BENCH_COMPARE_SKIP_BENCH (1 skips
# bench.sh, for the Go benchmarks alone).
set -u

cd "$(dirname "$0")/.."
if [ $# -ne 3 ]; then
	echo "usage: $0 OLD_BIN NEW_BIN OLD_REV (make bench-compare OLD=rev runs it)" >&2
	exit 2
fi
OLD_BIN=$1 NEW_BIN=$2 OLD_REV=$3
for b in "$OLD_BIN" "$NEW_BIN"; do
	if [ ! -x "$b" ]; then
		echo "bench-compare.sh: $b is missing; run make bench-compare OLD=$OLD_REV (it builds both)" >&2
		exit 1
	fi
done
ROUNDS=${BENCH_COMPARE_ROUNDS:-3}
GO_PKGS=${BENCH_GO_PKGS:-./storage/ ./broker/replica/ ./raftfsm/}
GO_BENCH=${BENCH_GO_BENCH:-.}
OUT=${BENCH_COMPARE_DIR:-bin/bench-compare-$OLD_REV}
GO=${GO:-go}
mkdir -p "$OUT"
TREE=$(mktemp -d "${TMPDIR:-/tmp}/raftka-compare.XXXXXX")
trap 'rm -rf "$TREE"' EXIT

if [ "$GO_PKGS" != none ]; then
	echo "== Go benchmarks ($GO_PKGS), $ROUNDS rounds, old $OLD_REV and new in turn" >&2
	git archive "$OLD_REV" | tar -x -C "$TREE"
	: >"$OUT/go-old.txt"
	: >"$OUT/go-new.txt"
	for ((k = 1; k <= ROUNDS; k++)); do
		# shellcheck disable=SC2086 # GO_PKGS is a list of packages
		(cd "$TREE" && $GO test -run '^$' -bench "$GO_BENCH" -benchmem -count=1 $GO_PKGS) >>"$OUT/go-old.txt" 2>&1
		# shellcheck disable=SC2086
		$GO test -run '^$' -bench "$GO_BENCH" -benchmem -count=1 $GO_PKGS >>"$OUT/go-new.txt" 2>&1
	done
	echo
	echo "Go benchmarks, old = $OLD_REV, new = this tree ($ROUNDS runs each):"
	$GO tool benchstat "$OUT/go-old.txt" "$OUT/go-new.txt"
fi

if [ "${BENCH_COMPARE_SKIP_BENCH:-0}" != 1 ]; then
	export BENCH_REPEAT=${BENCH_REPEAT:-1}
	for ((k = 1; k <= ROUNDS; k++)); do
		order="old new"
		((k % 2 == 0)) && order="new old"
		for which in $order; do
			bin=$OLD_BIN
			[ "$which" = new ] && bin=$NEW_BIN
			echo "== round $k: bench.sh with brokers from $bin" >&2
			BENCH_BROKER_BIN=$bin BENCH_JSON="$OUT/$which-$k.json" test/bench.sh >"$OUT/$which-$k.txt" 2>"$OUT/$which-$k.log"
		done
	done
	echo
	echo "test/bench.sh, old = $OLD_REV ($OLD_BIN), new = $NEW_BIN: medians over $ROUNDS rounds"
	# The JSON has one figure a line ("target|row|field": number) and one
	# target a line ({"id": ..., "value": number, ...}).
	for f in "$OUT"/old-*.json "$OUT"/new-*.json; do
		[ -r "$f" ] || continue
		w=$(basename "$f")
		w=${w%%-*}
		sed -n -e "s/^    \"\([^\"]*|[^\"]*\)\": \(-\{0,1\}[0-9][0-9.eE+-]*\),\{0,1\}$/$w figure \1 \2/p" \
			-e "s/^    {\"id\": \"\([^\"]*\)\".*\"value\": \(-\{0,1\}[0-9][0-9.eE+-]*\),.*/$w target \1 \2/p" "$f"
	done | awk '
		function median(list,    n, a, i, j, t) {
			n = split(list, a, " ")
			for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] + 0 < a[i] + 0) { t = a[i]; a[i] = a[j]; a[j] = t }
			if (n == 0) return ""
			if (n % 2) return a[(n + 1) / 2]
			return (a[n / 2] + a[n / 2 + 1]) / 2
		}
		{ k = $2 " " $3; v[$1, k] = v[$1, k] " " $4; keys[k] = 1 }
		END {
			printf "%-8s %-34s %14s %14s %9s\n", "kind", "figure", "old", "new", "new/old"
			for (k in keys) order[++n] = k
			for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (order[j] < order[i]) { t = order[i]; order[i] = order[j]; order[j] = t }
			for (i = 1; i <= n; i++) {
				k = order[i]; split(k, p, " ")
				o = median(v["old", k]); w = median(v["new", k])
				r = (o != "" && w != "" && o + 0 != 0) ? sprintf("%.2fx", w / o) : "n/a"
				printf "%-8s %-34s %14s %14s %9s\n", p[1], p[2], (o == "" ? "n/a" : sprintf("%.3f", o)), (w == "" ? "n/a" : sprintf("%.3f", w)), r
			}
		}'
	echo "Figures: target|row|field as in test/bench.sh (mbps MB/s, cons consume MB/s, cpu CPU-s/GB, p99 ms, rss MB, ...);"
	echo "targets: the value each verdict judged. Runs: $OUT/{old,new}-<round>.{txt,json}"
fi
