#!/usr/bin/env bash
# Instructions per operation, counted by callgrind (deterministic, unlike
# time on a shared machine), on the timed bench target `workloads` (the system
# allocator, as in the timed runs). Each workload runs twice, at 1/DIV and
# 2/DIV of its count; the difference divided by the extra operations is the
# cost of one operation (a message, a delivery, a request, an actor), with
# setup and teardown cancelled out.
#
#   bash benches/instructions.sh [WORKLOAD...]     # default: w1 w2 w3 w4
#   DIV=20 bash benches/instructions.sh w1         # counts / 20 and / 10
#   ANNOTATE=1 bash benches/instructions.sh w1     # also a line profile
#   CACHE=1 bash benches/instructions.sh e2_steady # also D1 and LL misses per op
#   CACHE=1 CG_OPTS=--LL=2097152,16,64 bash ...    # LL as a 2 MiB L2 (this VM's)
#
# Prints `commutator <workload> instructions_per_op <N>` (w4: per actor).
# DIV must be even; the callgrind files go to $OUT (default: a new temporary
# directory). The binary is built with line tables (CARGO_PROFILE_BENCH_DEBUG),
# which changes no code; cargo keeps it apart from the plain `cargo bench` one.
set -euo pipefail
HERE=$(cd "$(dirname "$0")/.." && pwd)
DIV=${DIV:-40}
[ $((DIV % 2)) -eq 0 ] && [ "$DIV" -ge 2 ] || { echo "DIV must be even (got $DIV)" >&2; exit 1; }
command -v valgrind >/dev/null || { echo "valgrind is needed (apt-get install -y valgrind)" >&2; exit 1; }
# The executable of the bench target `workloads`, from cargo's JSON messages
# (wherever CARGO_TARGET_DIR points).
BIN=$(cd "$HERE" && CARGO_PROFILE_BENCH_DEBUG=line-tables-only \
  cargo bench --bench workloads --no-run --message-format=json-render-diagnostics \
  | grep -o '"executable":"[^"]*"' | sed 's/^"executable":"//; s/"$//' | tail -1)
[ -x "$BIN" ] || { echo "no bench executable found (got '$BIN')" >&2; exit 1; }
OUT=${OUT:-$(mktemp -d)}; mkdir -p "$OUT"
count() { # $1=workload $2=div -> "ops instructions"
  local f="$OUT/cg.$1.$2"
  COMMUTATOR_BENCH_DIV=$2 valgrind --tool=callgrind ${CACHE:+--cache-sim=yes} ${CG_OPTS:-} --callgrind-out-file="$f" "$BIN" --bench "$1" \
    >"$f.out" 2>"$f.err" || { echo "callgrind failed on $1 (see $f.err)" >&2; return 1; }
  local ops; ops=$(awk '{print $3}' "$f.out" | head -1)
  local ir; ir=$(awk '/^summary:/{print $2}' "$f")
  [ -n "$ops" ] && [ -n "$ir" ] || { echo "no count for $1 (see $f.out, $f.err)" >&2; return 1; }
  # With the cache simulation, the summary reads Ir Dr Dw I1mr D1mr D1mw ILmr DLmr DLmw.
  local d1=0 ll=0
  if [ -n "${CACHE:-}" ]; then
    d1=$(awk '/^summary:/{print $6 + $7}' "$f"); ll=$(awk '/^summary:/{print $9 + $10}' "$f")
  fi
  echo "$ops $ir $d1 $ll"
}
[ $# -gt 0 ] || set -- w1 w2 w3 w4
for w in "$@"; do
  one=$(count "$w" "$DIV"); two=$(count "$w" "$((DIV / 2))")
  read -r ops1 ir1 d11 ll1 <<<"$one"; read -r ops2 ir2 d12 ll2 <<<"$two"
  [ "$ops2" -gt "$ops1" ] || { echo "$w: no more operations at 2/DIV ($ops1, $ops2)" >&2; exit 1; }
  name=$(awk '{print $2}' "$OUT/cg.$w.$((DIV / 2)).out" | head -1)
  echo "commutator $name instructions_per_op $(( (ir2 - ir1) / (ops2 - ops1) ))"
  if [ -n "${CACHE:-}" ]; then
    awk -v d="$((d12 - d11))" -v l="$((ll2 - ll1))" -v o="$((ops2 - ops1))" -v n="$name" \
      'BEGIN { printf "commutator %s d1_misses_per_op %.2f ll_misses_per_op %.2f\n", n, d/o, l/o }'
  fi
  if [ -n "${ANNOTATE:-}" ]; then
    callgrind_annotate --auto=yes "$OUT/cg.$w.$((DIV / 2))" > "$OUT/annotate.$w.txt" 2>/dev/null || true
    echo "  line profile: $OUT/annotate.$w.txt"
  fi
done
