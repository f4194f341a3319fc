#!/usr/bin/env bash
# stakker on the sends of commutator's `e2_ordered_direct` and `e2_direct`
# (10,000,000 messages round-robin to 100,000 live actors, in the order they
# were made or scattered), beside its `w1` and commutator's three lines, in
# interleaved rounds, every run pinned to CPU 0. Prints one line per run
# (`<framework> <workload> <count> <seconds> <rate_per_sec>`), then the
# medians: each line's rate against its own framework's `w1` in the same
# round, and commutator's rate against stakker's.
#
#   bash benches/peers/stakker-entities/run.sh [ROUNDS]     # default 7
#
# Needs the crates stakker 0.2.16 and stakker_mio 0.3.0 (a network, or
# cargo's cache). Built apart from commutator (its own target directory).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../../.." && pwd)
ROUNDS=${1:-7}
(cd "$HERE" && CARGO_TARGET_DIR="$HERE/target" cargo build --release -q)
S="$HERE/target/release/stakker-entities"
C=$(cd "$ROOT" && cargo bench --bench workloads --no-run --message-format=json-render-diagnostics \
  | grep -o '"executable":"[^"]*"' | sed 's/^"executable":"//; s/"$//' | tail -1)
LOG=$(mktemp)
for _ in $(seq 1 "$ROUNDS"); do
  for w in w1 e2_ordered_direct e2_direct; do
    cw=$w; [ "$w" = w1 ] && cw=w1_pingpong
    taskset -c 0 "$S" "$w" | tee -a "$LOG"
    taskset -c 0 "$C" --bench "$cw" | grep "^commutator $cw " | tee -a "$LOG"
  done
done
python3 - "$LOG" <<'PY'
import collections, statistics, sys
rate = collections.defaultdict(list)
for line in open(sys.argv[1]):
    fw, wl, _, _, r = line.split()
    rate[(fw, wl)].append(float(r))
med = statistics.median
for fw in ("stakker", "commutator"):
    for wl in ("e2_ordered_direct", "e2_direct"):
        r = [a / b for a, b in zip(rate[(fw, wl)], rate[(fw, "w1_pingpong")])]
        print(f"{fw} {wl} of its w1 {med(r):.3f}")
for wl in ("w1_pingpong", "e2_ordered_direct", "e2_direct"):
    r = [a / b for a, b in zip(rate[("commutator", wl)], rate[("stakker", wl)])]
    print(f"commutator/stakker {wl} {med(r):.3f}")
PY
rm -f "$LOG"
