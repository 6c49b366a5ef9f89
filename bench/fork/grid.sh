#!/usr/bin/env bash
# Two builds side by side (issue 6): each Fork benchmark as built by
# bench/fork/build.sh (bin/<name>, kernels split at every barrier, group
# calls that fit a block as one kernel) and a variant, VARIANT=grid (the
# default: --grid-barriers, bin/<name>_grid, spawns that fit the GPU as one
# cooperative kernel whose barriers are grid-wide) or VARIANT=host
# (--no-block-groups, bin/<name>_host, every group call on the host path),
# on the GPU, alternating, $REPEAT runs each (default 5). Outputs must
# agree.
#
# Prints a markdown table:
#   | workload | args | default ms | <variant> ms | default/<variant> | default phase ms | <variant> phase ms | default launches | <variant> launches | check |
# "ms" is the median wall time of the whole program, "phase" the median of
# the program's own `phase-ms` line where it has one (quicksort's sort,
# list ranking's rounds), launches PGPU_PROFILE's count.
# Run from the repository root on the GPU machine: bench/fork/grid.sh
set -uo pipefail
cd "$(dirname "$0")/../.."
bin=${PGPU_FORK_BIN:-bench/fork/bin}
repeat=${REPEAT:-5}
variant_name=${VARIANT:-grid}
logs=${PGPU_BENCH_LOGS:-/tmp/pgpu-fork-grid}
mkdir -p "$logs"
cases=(
  "list_ranking|131072 9"
  "list_ranking|16384 9"
  "quicksort|10000000 4608 7"
  "sieve|100000000 4096"
  "matmul|2048 4096"
)
if [ -n "${GRID_CASES:-}" ]; then IFS=';' read -r -a cases <<< "$GRID_CASES"; fi
median() { sort -n | awk '{ a[NR] = $1 } END { if (NR == 0) print "-"; else printf "%.1f", a[int((NR + 1) / 2)] }'; }
field() { awk -v name="$1" '/^pgpu-profile/ { for (i = 1; i < NF; i++) if ($i == name) v = $(i + 1) } END { print v }' "$2"; }
echo "machine: $(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1), $(nproc) CPU cores, $(date -u +%Y-%m-%d)"
echo
echo "| workload | args | default ms | $variant_name ms | default/$variant_name | default phase ms | $variant_name phase ms | default launches | $variant_name launches | check |"
echo "|---|---|---|---|---|---|---|---|---|---|"
for case in "${cases[@]}"; do
  IFS='|' read -r name args <<< "$case"
  : > "$logs/base.ms"; : > "$logs/other.ms"; : > "$logs/base.phase"; : > "$logs/other.phase"
  check=same
  for _ in $(seq "$repeat"); do
    for variant in base other; do
      exe="$bin/$name"
      [ "$variant" = other ] && exe="$bin/${name}_$variant_name"
      start=$(date +%s%N)
      PGPU_PROFILE=1 "$exe" --device cuda $args > "$logs/$variant.out" 2> "$logs/$variant.err"
      end=$(date +%s%N)
      echo $(( (end - start) / 1000 )) | awk '{ print $1 / 1000 }' >> "$logs/$variant.ms"
      awk '/^phase-ms / { print $2 }' "$logs/$variant.out" >> "$logs/$variant.phase"
    done
    cmp -s <(grep -v '^phase-ms ' "$logs/base.out") <(grep -v '^phase-ms ' "$logs/other.out") || check=DIFF
  done
  base_ms=$(median < "$logs/base.ms"); other_ms=$(median < "$logs/other.ms")
  ratio=$(awk -v s="$base_ms" -v g="$other_ms" 'BEGIN { printf "%.2f", s / g }')
  echo "| $name | $args | $base_ms | $other_ms | $ratio | $(median < "$logs/base.phase") | $(median < "$logs/other.phase") | $(field launches "$logs/base.err") | $(field launches "$logs/other.err") | $check |"
done
