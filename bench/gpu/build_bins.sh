#!/usr/bin/env bash
# Builds the pgpu benchmark executables that bench/gpu/run.sh runs on the
# GPU machine: every bench/gpu/src/*.bsgp through
# `pgpu compile --target cuda --chip sm_90` into bench/gpu/bin/ (run here,
# where pgpu is built; the GPU machine has no Rust or LLVM toolchain).
#
# What it measures: nothing; it prints each program's compile time.
#
# Run (from the repository root, after `cargo build --release -p pgpu`):
#   bench/gpu/build_bins.sh                 # PGPU=path/to/pgpu, TARGET=cpu|cuda, CHIP=sm_90
# then ship bench/gpu/bin/ with the run (it is an untracked folder: the
# device `run` tool carries it unless it is git-ignored; then name it in
# `carry`) and run bench/gpu/run.sh there.
set -eu -o pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
if [ -z "${PGPU:-}" ]; then
  if [ -x "$ROOT/target/release/pgpu" ]; then PGPU=$ROOT/target/release/pgpu; else PGPU=$ROOT/target/debug/pgpu; fi
fi
TARGET=${TARGET:-cuda}
CHIP=${CHIP:-sm_90}
mkdir -p "$ROOT/bench/gpu/bin"
for src in "$ROOT"/bench/gpu/src/*.bsgp; do
  name=$(basename "$src" .bsgp)
  start=$(date +%s.%N)
  if [ "$TARGET" = cuda ]; then
    "$PGPU" compile ${PGPU_COMPILE_FLAGS:---unchecked} --target cuda --chip "$CHIP" "$src" -o "$ROOT/bench/gpu/bin/$name"
  else
    "$PGPU" compile ${PGPU_COMPILE_FLAGS:---unchecked} --target "$TARGET" "$src" -o "$ROOT/bench/gpu/bin/$name"
  fi
  end=$(date +%s.%N)
  printf '%-20s %6.2f s\n' "$name" "$(awk -v a="$start" -v b="$end" 'BEGIN { print b - a }')"
done
