#!/usr/bin/env bash
# Builds the loop-speculation benchmarks of issue 7 (seeds/gpu-tls.txt,
# Section V) here, where pgpu is built; bench/speculate/run.sh runs them on
# the GPU machine (carry bench/speculate/bin).
#
# Each program of examples/speculate gets timing lines around its loop
# (`wtime()` waits for the device; a last line `loop-ms T`) and is built as
#   bin/<name>         pgpu compile --target cuda (GPU-TLS on the GPU, or on
#                      the CPU device with --device cpu)
#   bin/<name>_seq     the same program without the pragma, pgpu compile:
#                      the sequential loop on the CPU (the paper's T_s)
# and the synthetic loop also as
#   bin/synthetic_serial   with the in-order serial commit (Figures 7 and 8)
#   bin/synthetic_direct   with the direct-update scheme (Figure 7)
# Run from the repository root: bench/speculate/build.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
PGPU=${PGPU:-target/debug/pgpu}
PGPU_OPT=${PGPU_OPT:-$(dirname "$PGPU")/pgpu-opt}
out=bench/speculate/bin
src=$out/src
mkdir -p "$out" "$src"
timed='s/^#pragma pgpu speculate.*$/  double loop_start = wtime();\n&/; s/^  double sum = 0\.0;$/  double loop_ms = (wtime() - loop_start) * 1000.0;\n&/; s/^  return 0;$/  printf("loop-ms %.3f\\n", loop_ms);\n&/'
for name in synthetic md cfd blackscholes; do
  sed -E "$timed" "examples/speculate/$name.c" > "$src/$name.c"
  grep -q loop_ms "$src/$name.c" || { echo "build.sh: could not time $name's loop" >&2; exit 1; }
  sed 's/^#pragma pgpu speculate.*$//' "$src/$name.c" > "$src/${name}_seq.c"
  "$PGPU" compile --target cuda "$src/$name.c" -o "$out/$name"
  "$PGPU" compile "$src/${name}_seq.c" -o "$out/${name}_seq"
done
for commit in serial direct; do
  "$PGPU" emit "$src/synthetic.c" \
    | "$PGPU_OPT" --pass-pipeline="builtin.module(pgpu-lower-speculation{commit=$commit})" > "$src/synthetic_$commit.mlir"
  "$PGPU" compile --target cuda "$src/synthetic_$commit.mlir" -o "$out/synthetic_$commit"
done
strip "$out"/* 2>/dev/null || true
echo "built: $(ls "$out" | grep -v src | tr '\n' ' ')"
