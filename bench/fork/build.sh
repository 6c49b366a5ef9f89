#!/usr/bin/env bash
# Builds the Fork benchmarks of issue 6 (seeds/fork-to-cuda.txt, Section 4:
# sieve of Eratosthenes, quicksort, matrix multiplication) at the paper's
# sizes, here where pgpu is built; bench/fork/run.sh runs them on the GPU
# machine (carry bench/fork/bin).
#
# The programs are examples/fork/{sieve,quicksort,matmul}.fork and their
# sequential C references test-suite/run/fork/ref/*.c with the array sizes
# raised (sieve up to 10^8, quicksort 10^7 elements, matrices 4096 x 4096):
#   bin/<name>      pgpu compile --target cuda (runs on the GPU, or on the
#                   CPU device with --device cpu)
#   bin/<name>_seq  the sequential reference, pgpu compile (host code only)
# Run from the repository root: bench/fork/build.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
PGPU=${PGPU:-target/debug/pgpu}
out=bench/fork/bin
src=bench/fork/bin/src
mkdir -p "$out" "$src"
# name: sed program raising the sizes (whole numbers only)
declare -A raise=(
  [sieve]='s/\b100001\b/100000001/g; s/\b100000\b/100000000/g'
  [quicksort]='s/\b100001\b/10000001/g; s/\b100000\b/10000000/g'
  [matmul]='s/\b128\b/4096/g'
  [list_ranking]='s/\b4096\b/131072/g'
)
# Each Fork program is also built with --grid-barriers as bin/<name>_grid
# and with --no-block-groups as bin/<name>_host (every group call on the
# host path; bench/fork/grid.sh compares either with bin/<name>).
# The sort of quicksort and list ranking's rounds (the Fork program's start
# block; the reference's qs call, or its walk from the list's head) are
# timed by the program itself: `wtime()` waits for the device, and a last
# line `phase-ms T` reports it (run.sh compares the outputs without it), so
# the phase is compared apart from start-up and input.
timed_fork='s/^  start\(([a-z]+)\) \{$/  double phase_start = wtime();\n  start(\1) {/'
timed_seq='s/^  (qs\(0, n\);|int head = perm\[0\];)$/  double phase_start = wtime();\n  \1/'
timed_end='s/^  unsigned sum = 0;$/  double phase_ms = (wtime() - phase_start) * 1000.0;\n  unsigned sum = 0;/; s/^  return 0;$/  printf("phase-ms %.1f\\n", phase_ms);\n  return 0;/'
declare -A timed=([quicksort]=1 [list_ranking]=1)
for name in sieve quicksort matmul list_ranking; do
  sed -E "${raise[$name]}" "examples/fork/$name.fork" > "$src/$name.fork"
  sed -E "${raise[$name]}" "test-suite/run/fork/ref/$name.c" > "$src/${name}_seq.c"
  if [ -n "${timed[$name]:-}" ]; then
    sed -E -i "$timed_fork; $timed_end" "$src/$name.fork"
    sed -E -i "$timed_seq; $timed_end" "$src/${name}_seq.c"
    grep -q phase_start "$src/$name.fork" && grep -q phase_start "$src/${name}_seq.c" \
      || { echo "build.sh: could not time $name's phase" >&2; exit 1; }
  fi
  "$PGPU" compile --target cuda "$src/$name.fork" -o "$out/$name"
  "$PGPU" compile --target cuda --grid-barriers "$src/$name.fork" -o "$out/${name}_grid"
  "$PGPU" compile --target cuda --no-block-groups "$src/$name.fork" -o "$out/${name}_host"
  "$PGPU" compile "$src/${name}_seq.c" -o "$out/${name}_seq"
done
echo "built: $(ls "$out" | grep -v src | tr '\n' ' ')"
