#!/usr/bin/env bash
# Runs the Fork benchmarks of issue 6 on the GPU machine (after
# bench/fork/build.sh here; carry bench/fork/bin), side by side in one run:
# each workload as pgpu-compiled Fork on the GPU (--device cuda), the same
# executable on the CPU device (--device cpu, the runtime's thread pool),
# and the sequential C reference on the CPU. Wall times are medians of
# $REPEAT runs (default 3); every run's output must equal the reference's.
# The GPU runs print PGPU_PROFILE's line, whose waits against the wall
# time give the share the host spends waiting in synchronizations (the
# paper: 31% for quicksort at 4608 threads).
#
# Programs that time their main phase themselves (quicksort's sort: see
# build.sh) print a last line `phase-ms T`; the check compares the outputs
# without it, and the table shows the phase of the last GPU and sequential
# runs ("-" for the others).
#
# Prints a markdown table:
#   | workload | args | gpu ms | cpu-device ms | sequential ms | seq/gpu | gpu phase ms | seq phase ms | launches | syncs | main wait % | all threads' wait % | check |
# "main wait" is the program's thread's time blocked in synchronizations
# and downloads (PGPU_PROFILE's main-wait-ms) over the GPU wall time;
# "all threads' wait" adds the task threads' waits (sync-wait-ms), which
# overlap each other and the device's work.
# Run from the repository root: bench/fork/run.sh
set -uo pipefail
cd "$(dirname "$0")/../.."
bin=${PGPU_FORK_BIN:-bench/fork/bin}
repeat=${REPEAT:-3}
logs=${PGPU_BENCH_LOGS:-/tmp/pgpu-fork-bench}
mkdir -p "$logs"
# workload|Fork arguments|reference arguments; FORK_CASES (cases separated
# by ';') replaces the list, e.g. to fit a lease:
#   FORK_CASES="sieve|100000000 4096|100000000;matmul|2048 4096|2048 4096"
cases=(
  "sieve|100000000 4096|100000000"
  "sieve|100000000 65536|100000000"
  "quicksort|10000000 256 7|10000000 256 7"
  "quicksort|10000000 4608 7|10000000 4608 7"
  "matmul|2048 4096|2048 4096"
  "matmul|4096 16384|4096 16384"
)
if [ -n "${FORK_CASES:-}" ]; then IFS=';' read -r -a cases <<< "$FORK_CASES"; fi
median_ms() { # command... -> median wall ms; stdout of the last run in $logs/last.out
  local times=()
  for _ in $(seq "$repeat"); do
    local start end
    start=$(date +%s%N)
    "$@" > "$logs/last.out" 2> "$logs/last.err"
    end=$(date +%s%N)
    times+=($(( (end - start) / 1000 )))
  done
  printf '%s\n' "${times[@]}" | sort -n | awk '{ a[NR] = $1 } END { printf "%.1f", a[int((NR + 1) / 2)] / 1000 }'
}
echo "machine: $(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1), $(nproc) CPU cores, $(date -u +%Y-%m-%d)"
echo
echo "| workload | args | gpu ms | cpu-device ms | sequential ms | seq/gpu | gpu phase ms | seq phase ms | launches | syncs | main wait % | all threads' wait % | check |"
echo "|---|---|---|---|---|---|---|---|---|---|---|---|---|"
phase() { awk '/^phase-ms / { p = $2 } END { print (p == "" ? "-" : p) }' "$1"; }
same() { cmp -s <(grep -v '^phase-ms ' "$1") <(grep -v '^phase-ms ' "$2"); }
for case in "${cases[@]}"; do
  IFS='|' read -r name args ref_args <<< "$case"
  seq_ms=$(median_ms "$bin/${name}_seq" $ref_args)
  cp "$logs/last.out" "$logs/$name.ref"
  seq_phase=$(phase "$logs/$name.ref")
  gpu_ms=$(PGPU_PROFILE=1 median_ms "$bin/$name" --device cuda $args)
  gpu_phase=$(phase "$logs/last.out")
  check=same
  same "$logs/last.out" "$logs/$name.ref" || check=DIFF
  profile=$(grep '^pgpu-profile' "$logs/last.err" | tail -1)
  field() { awk -v name="$1" '{ for (i = 1; i < NF; i++) if ($i == name) print $(i + 1) }' <<< "$profile"; }
  launches=$(field launches)
  syncs=$(field syncs)
  wait_ms=$(field sync-wait-ms)
  main_wait_ms=$(field main-wait-ms)
  cpu_ms=$(median_ms "$bin/$name" --device cpu $args)
  same "$logs/last.out" "$logs/$name.ref" || check=DIFF
  ratio=$(awk -v s="$seq_ms" -v g="$gpu_ms" 'BEGIN { printf "%.2f", s / g }')
  share=$(awk -v w="${wait_ms:-0}" -v g="$gpu_ms" 'BEGIN { printf "%.0f", 100 * w / g }')
  main_share=$(awk -v w="${main_wait_ms:-0}" -v g="$gpu_ms" 'BEGIN { printf "%.1f", 100 * w / g }')
  echo "| $name | $args | $gpu_ms | $cpu_ms | $seq_ms | $ratio | $gpu_phase | $seq_phase | $launches | $syncs | $main_share | $share | $check |"
done
