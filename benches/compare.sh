#!/usr/bin/env bash
# commutator beside its peers (stakker, actix, ractor, kameo) on the same
# workloads: interleaved repetitions, every run pinned to CPU 0, medians out.
#
#   bash benches/compare.sh [REPS]        # default 5; ~2 minutes per repetition
#   INSTRUCTIONS=1 bash benches/compare.sh 1   # also callgrind's instructions per operation
#
# The peer programs are ../shared/bench-peers (next to this repository); they
# are copied to a temporary directory and built there, outside the repository.
# commutator's timed runs come from the bench target `workloads` (the system
# allocator); its allocations per operation from the target `allocations`
# (a counting allocator), run once, before the repetitions.
# Raw lines and medians go to $OUT (default: a new temporary directory).
set -euo pipefail
REPS=${1:-5}
HERE=$(cd "$(dirname "$0")/.." && pwd)
PEERS_SRC=${PEERS_SRC:-$HERE/../shared/bench-peers}
OUT=${OUT:-$(mktemp -d)}; mkdir -p "$OUT"
PEERS_BUILD=${PEERS_BUILD:-$OUT/peers}

if [ ! -x "$PEERS_BUILD/target/release/stakker-bench" ]; then
  mkdir -p "$PEERS_BUILD" && cp -r "$PEERS_SRC/." "$PEERS_BUILD"
  (cd "$PEERS_BUILD" && CARGO_TARGET_DIR=target cargo build --release --quiet)
fi
PD=$PEERS_BUILD/target/release
bench_bin() { # $1=bench target -> its executable (from cargo's JSON, wherever CARGO_TARGET_DIR points)
  local bin
  bin=$(cd "$HERE" && cargo bench --bench "$1" --no-run --message-format=json-render-diagnostics \
    | grep -o '"executable":"[^"]*"' | sed 's/^"executable":"//; s/"$//' | tail -1)
  [ -x "$bin" ] || { echo "no executable for the bench target $1 (got '$bin')" >&2; return 1; }
  echo "$bin"
}
CB=$(bench_bin workloads)
CA=$(bench_bin allocations)

RAW=$OUT/raw.txt; ERR=$OUT/stderr.txt; : > "$RAW"; : > "$ERR"
rss() { awk -F': ' '/Maximum resident set size/{print $2}' "$1"; }
peer() { # $1=peer $2=rep
  local p=$1 rep=$2 bin=$PD/$1-bench
  for w in w1 w2 w3; do
    taskset -c 0 "$bin" "$w" 2>>"$ERR" | sed "s/\$/ rep=$rep/" | tee -a "$RAW"
  done
  out=$( /usr/bin/time -v taskset -c 0 "$bin" w4 2>"$OUT/time_w4.txt" )
  echo "$out rss_kb=$(rss "$OUT/time_w4.txt") rep=$rep" | tee -a "$RAW"
  /usr/bin/time -v taskset -c 0 "$bin" none >/dev/null 2>"$OUT/time_base.txt"
  echo "$p baseline_rss 0 0 0 rss_kb=$(rss "$OUT/time_base.txt") rep=$rep" | tee -a "$RAW"
}
commutator() { # $1=rep
  local rep=$1
  for w in w1 w2 w3 w5 w6; do
    taskset -c 0 "$CB" --bench "$w" 2>"$OUT/c_err.txt" | sed "s/\$/ rep=$rep/" | tee -a "$RAW"
    sed "s/\$/ rep=$rep/" "$OUT/c_err.txt" >> "$ERR"
  done
  out=$( /usr/bin/time -v taskset -c 0 "$CB" --bench w4 2>"$OUT/time_w4.txt" )
  echo "$out rss_kb=$(rss "$OUT/time_w4.txt") rep=$rep" | tee -a "$RAW"
  /usr/bin/time -v taskset -c 0 "$CB" --bench nothing >/dev/null 2>"$OUT/time_base.txt"
  echo "commutator baseline_rss 0 0 0 rss_kb=$(rss "$OUT/time_base.txt") rep=$rep" | tee -a "$RAW"
}
# Allocation counts hardly vary from run to run: one run (pinned, like the others) is enough.
ALLOCS=$OUT/allocations.txt
taskset -c 0 "$CA" --bench 2>>"$ERR" | tee "$ALLOCS"
ORDER=(commutator stakker actix ractor kameo)
for rep in $(seq 1 "$REPS"); do
  n=${#ORDER[@]}
  for i in $(seq 0 $((n - 1))); do
    r=${ORDER[$(( (i + rep - 1) % n ))]}   # rotate the order each repetition
    if [ "$r" = commutator ]; then commutator "$rep"; else peer "$r" "$rep"; fi
  done
done

python3 - "$RAW" <<'PY'
import sys, statistics as st, collections as c
d = c.defaultdict(list)
for line in open(sys.argv[1]):
    f = line.split()
    rss = [int(x[7:]) for x in f if x.startswith('rss_kb=')]
    d[(f[0], f[1])].append((float(f[4]), rss[0] if rss else None))
print("| runtime | workload | median rate/s | peak RSS KiB (median) |")
print("|---|---|---|---|")
for (p, w), v in sorted(d.items()):
    r = [x[1] for x in v if x[1] is not None]
    print(f"| {p} | {w} | {st.median(x[0] for x in v):,.0f} | {int(st.median(r)) if r else '-'} |")
PY
echo
echo "commutator, counting allocator (bench target allocations, a tenth of the counts):"
cat "$ALLOCS"
if [ -n "${INSTRUCTIONS:-}" ]; then
  echo
  echo "commutator, callgrind (benches/instructions.sh):"
  OUT=$OUT/callgrind bash "$HERE/benches/instructions.sh"
fi
echo "raw lines: $RAW"
