#!/usr/bin/env bash
# Front-end throughput: parse, check and lower a generated 10,000-line BSGP
# program to pgpu IR with a release build of pgpu-translate. Prints the best
# of five wall-clock times. Usage: bench/frontend/run.sh [LINES]
set -euo pipefail
cd "$(dirname "$0")/../.."
lines="${1:-10000}"
cargo build --release -q -p pgpu-translate
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
python3 bench/frontend/gen_bsgp.py "$lines" > "$work/big.bsgp"
echo "input: $(wc -l < "$work/big.bsgp") lines"
best=""
for _ in 1 2 3 4 5; do
  start=$(date +%s.%N)
  target/release/pgpu-translate --bsgp-to-mlir "$work/big.bsgp" -o "$work/big.mlir"
  end=$(date +%s.%N)
  t=$(echo "$end - $start" | bc -l)
  if [ -z "$best" ] || [ "$(echo "$t < $best" | bc -l)" = 1 ]; then best="$t"; fi
done
echo "output: $(wc -l < "$work/big.mlir") lines of MLIR"
printf 'best of 5: %.3f s\n' "$best"
