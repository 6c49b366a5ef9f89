#!/usr/bin/env bash
# Compares builds of the pgpu benchmark executables side by side, on the GPU
# machine: for an experiment on the compiler (a kernel variant, a pass), one
# directory of bench/gpu/build_bins.sh output per build, all run in the same
# session against the same CUB baselines.
#
# What it measures: for every directory and every workload below, the
# median of the bench-ms lines of each of ROUNDS rounds (rounds interleave
# the directories, so that clock and thermal drift hit all of them alike),
# and the baselines' medians once per round. A directory's result lines
# must equal the baseline's (a variant that sorts wrongly is marked).
#
# Prints a markdown table: workload | baseline ms | baseline wall ms | then
# per directory the
# ms of every round and the ratio of the best round to the baseline.
#
# Run (on the GPU machine, repository root):
#   bench/gpu/compare.sh DIR...          # e.g. gpu-bin/v0 gpu-bin/v1
# Environment: ROUNDS (default 2), PGPU_EXE_FLAGS (default "--device
# cuda"), PGPU_BENCH_BUILD (baselines; built when missing), NVCC,
# PGPU_BENCH_ARCH (default sm_90), PGPU_COMPARE_ROWS (a regex selecting
# workloads by name), PGPU_CLOCK (the executables' wtime() clock: device,
# the default, times a call as the baselines' events do; host, the wall
# time of a call).
set -u -o pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
BUILD=${PGPU_BENCH_BUILD:-/tmp/pgpu-bench-build}
# shellcheck source=bench/gpu/common.sh
. "$ROOT/bench/gpu/common.sh"
ROUNDS=${ROUNDS:-2}
EXE_FLAGS=${PGPU_EXE_FLAGS:---device cuda}
FILTER=${PGPU_COMPARE_ROWS:-.}
CLOCK=${PGPU_CLOCK:-device}
[ $# -gt 0 ] || { echo "usage: $0 DIR..." >&2; exit 2; }
mkdir -p "$BUILD"
LOG=$(mktemp -d)

# workload | executable | arguments | baseline executable and arguments
ROWS=(
  "findFaces L9      | find_faces       | 1000000 500000 300 9  | find_faces 1000000 500000 300"
  "particle binning  | particle_binning | 1048576 512 500       | particle_binning 1048576 512 500"
  "sortby 16M        | sort             | 16777216 20 0         | sort_cub 16777216 20"
)

for prog in find_faces particle_binning sort_cub; do
  if [ ! -x "$BUILD/$prog" ]; then
    build_baseline "$ROOT" "$BUILD" "$prog" "$LOG/build-$prog.log" &
  fi
done
wait

declare -A MS BASE BASE_WALL
for ((round = 1; round <= ROUNDS; round++)); do
  for r in "${!ROWS[@]}"; do
    IFS='|' read -r name exe args base <<< "${ROWS[$r]}"
    name=$(trim "$name") exe=$(trim "$exe") args=$(trim "$args") base=$(trim "$base")
    [[ $name =~ $FILTER ]] || continue
    # shellcheck disable=SC2086
    (cd "$ROOT" && "$BUILD"/$base) > "$LOG/base-$r.out" 2> /dev/null
    BASE[$r,$round]=$(median_ms "$LOG/base-$r.out")
    BASE_WALL[$r,$round]=$(median_ms "$LOG/base-$r.out" wall-ms)
    for d in "$@"; do
      out="$LOG/$r-$(printf '%s' "$d" | tr '/' '_').out"
      # shellcheck disable=SC2086
      if (cd "$ROOT" && PGPU_CLOCK=$CLOCK "$d/$exe" $EXE_FLAGS $args) > "$out" 2> "$out.err"; then
        if diff <(results_of "$out") <(results_of "$LOG/base-$r.out") > /dev/null; then
          MS[$r,$d,$round]=$(median_ms "$out")
        else
          MS[$r,$d,$round]="WRONG"
        fi
      else
        MS[$r,$d,$round]="FAILED($(tail -n 1 "$out.err"))"
      fi
    done
  done
done

header="| workload | baseline ms | baseline wall ms |"
rule="|---|---:|---:|"
for d in "$@"; do header+=" $d ms | $d ratio |"; rule+="---|---:|"; done
echo "$header"
echo "$rule"
for r in "${!ROWS[@]}"; do
  IFS='|' read -r name _ <<< "${ROWS[$r]}"
  name=$(trim "$name")
  [[ $name =~ $FILTER ]] || continue
  bases="" walls="" best_base=""
  for ((round = 1; round <= ROUNDS; round++)); do
    bases+="${bases:+, }${BASE[$r,$round]}"
    walls+="${walls:+, }${BASE_WALL[$r,$round]}"
    best_base=$(awk -v a="$best_base" -v b="${BASE[$r,$round]}" 'BEGIN { if (a == "" || b + 0 < a + 0) print b; else print a }')
  done
  line="| $name | $bases | $walls |"
  for d in "$@"; do
    cells="" best=""
    for ((round = 1; round <= ROUNDS; round++)); do
      v=${MS[$r,$d,$round]}
      cells+="${cells:+, }$v"
      case "$v" in [0-9]*) best=$(awk -v a="$best" -v b="$v" 'BEGIN { if (a == "" || b + 0 < a + 0) print b; else print a }') ;; esac
    done
    ratio=$(awk -v a="$best" -v b="$best_base" 'BEGIN { if (a == "" || b + 0 == 0) print "—"; else printf "%.2f", a / b }')
    line+=" $cells | $ratio |"
  done
  echo "$line"
done
echo
echo "ms: median of one run's timed calls, per round (pgpu: wtime() to wtime() around a call, PGPU_CLOCK=$CLOCK;"
echo "baselines: CUDA events around a run, and the host wall time to the end of its synchronize);"
echo "ratio: best round over the baseline's best round of event times."
rm -rf "$LOG"
