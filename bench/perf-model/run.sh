#!/bin/sh
# The Petri-net engine's benchmark (PERF.md, "Petri-net performance model"):
# 64 warps of the SM model run to the dead marking, over 10^6 firings.
set -eu
cd "$(dirname "$0")/../.."
cargo run --quiet --release -p pgpu-perf-model --example simulate_bench -- "${1:-5}"
