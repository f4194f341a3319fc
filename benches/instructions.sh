#!/usr/bin/env bash
# Instructions per operation, counted by callgrind (deterministic, unlike
# time on a shared machine). Each workload runs twice, at 1/DIV and 2/DIV of
# its count; the difference divided by the extra operations is the cost of
# one operation, with setup and teardown cancelled out.
#
#   bash benches/instructions.sh [WORKLOAD...]     # default: w1 w2 w3 w4
#   DIV=20 bash benches/instructions.sh w1         # counts / 20 and / 10
#   ANNOTATE=1 bash benches/instructions.sh w1     # also a line profile
#
# Prints `commutator <workload> instructions_per_op <N>`.
set -euo pipefail
HERE=$(cd "$(dirname "$0")/.." && pwd)
DIV=${DIV:-40}
command -v valgrind >/dev/null || { echo "valgrind is needed (apt-get install -y valgrind)" >&2; exit 1; }
BIN=$(cd "$HERE" && CARGO_PROFILE_BENCH_DEBUG=line-tables-only cargo bench --bench workloads --no-run 2>&1 \
  | grep -o 'target/[a-z]*/deps/workloads-[a-z0-9]*' | head -1)
BIN=$HERE/$BIN
OUT=${OUT:-$(mktemp -d)}; mkdir -p "$OUT"
count() { # $1=workload $2=div -> "ops instructions"
  local f="$OUT/cg.$1.$2"
  COMMUTATOR_BENCH_DIV=$2 valgrind --tool=callgrind --callgrind-out-file="$f" "$BIN" --bench "$1" \
    >"$f.out" 2>"$f.err"
  local ops; ops=$(awk '{print $3}' "$f.out" | head -1)
  local ir; ir=$(awk '/^summary:/{print $2}' "$f")
  echo "$ops $ir"
}
[ $# -gt 0 ] || set -- w1 w2 w3 w4
for w in "$@"; do
  read -r ops1 ir1 < <(count "$w" "$DIV")
  read -r ops2 ir2 < <(count "$w" "$((DIV / 2))")
  name=$(awk '{print $2}' "$OUT/cg.$w.$((DIV / 2)).out" | head -1)
  echo "commutator $name instructions_per_op $(( (ir2 - ir1) / (ops2 - ops1) ))"
  if [ -n "${ANNOTATE:-}" ]; then
    callgrind_annotate --auto=yes "$OUT/cg.$w.$((DIV / 2))" > "$OUT/annotate.$w.txt" 2>/dev/null || true
    echo "  line profile: $OUT/annotate.$w.txt"
  fi
done
