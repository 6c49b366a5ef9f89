#!/usr/bin/env bash
# Kernel formation on every BSGP example (seeds/bsgp.txt, Sections 4.2-4.3):
# supersteps, kernels, saved values, temporary buffers and peak temporary
# bytes per thread, ours (minimum-flow allocation, buffers freed after their
# last reader) against the naive allocation (one buffer per saved value,
# live for the whole spawn). The last column runs the default pipeline,
# with pgpu-eliminate-barriers. Prints a Markdown table.
# Usage: bench/kernels/report.sh [pgpu binary directory, default target/debug]
set -euo pipefail
cd "$(dirname "$0")/../.."
bin="${1:-target/debug}"
[ -x "$bin/pgpu" ] && [ -x "$bin/pgpu-opt" ] || cargo build -q -p pgpu -p pgpu-opt
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
echo "| example | spawns | supersteps | kernels | saved values (segments) | buffers (naive) | buffers (ours) | peak bytes/thread (naive) | peak bytes/thread (ours) | kernels with barrier elimination |"
echo "|---|---|---|---|---|---|---|---|---|---|"
for file in examples/bsgp/*.bsgp; do
  name="$(basename "$file" .bsgp)"
  "$bin/pgpu" emit "$file" --debug-info > "$work/pgpu.mlir"
  "$bin/pgpu-opt" "$work/pgpu.mlir" --pgpu-inline-spmd --pgpu-form-supersteps --pgpu-save-values \
    --pgpu-print-buffer-allocation -o "$work/supersteps.mlir" 2> "$work/plan.txt"
  "$bin/pgpu-opt" "$work/supersteps.mlir" --pgpu-split-kernels -o "$work/kernels.mlir"
  spawns=$(grep -c '^spawn at' "$work/plan.txt" || true)
  supersteps=$(sed -n 's/^spawn at [^:]*:[^:]*: \([0-9]*\) supersteps.*/\1/p' "$work/plan.txt" | paste -sd+ | bc)
  # Kernels: the scf.parallel loops the split made (the frontend makes none).
  before=$(grep -c 'scf.parallel' "$work/supersteps.mlir" || true)
  after=$(grep -c 'scf.parallel' "$work/kernels.mlir" || true)
  kernels=$((after - before))
  saved=$(sed -n 's/.* buffers for \([0-9]*\) saved segments/\1/p' "$work/plan.txt" | paste -sd+ | bc)
  buffers=$(sed -n 's/.*: [0-9]* supersteps, \([0-9]*\) buffers.*/\1/p' "$work/plan.txt" | paste -sd+ | bc)
  ours=$(sed -n 's/.*peak bytes per thread: \([0-9]*\) .*/\1/p' "$work/plan.txt" | paste -sd+ | bc)
  naive=$(sed -n 's/.*(one buffer per value: \([0-9]*\)).*/\1/p' "$work/plan.txt" | paste -sd+ | bc)
  "$bin/pgpu" emit "$file" --stage kernels > "$work/optimized.mlir"
  optimized=$(( $(grep -c 'scf.parallel' "$work/optimized.mlir" || true) - before ))
  echo "| $name | $spawns | $supersteps | $kernels | $saved | $saved | $buffers | $naive | $ours | $optimized |"
done
