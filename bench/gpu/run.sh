#!/usr/bin/env bash
# The GPU benchmarks of issue 5 in one go, on the GPU machine.
#
# What it measures (ratios side by side in one run, on one GPU):
#   - the hand-written baselines of bench/baselines/, compiled here with
#     `nvcc -O3 -arch=sm_90`: findFaces (Listing 1/9) on a 1M-triangle mesh
#     and particle binning on 1M particles, both with CUB's radix sort (on
#     the bits the keys need, and on all 32 bits); torch.sort (stable) and
#     CUB SortPairs on 16M int32 keys; device-to-device copy (cudaMemcpy and
#     a copy kernel), CUB InclusiveSum and CUB Reduce::Sum on 256M int32;
#   - when present, the pgpu-compiled executables of $PGPU_BENCH_BIN
#     (default bench/gpu/bin/, built from bench/gpu/src/*.bsgp by
#     bench/gpu/build_bins.sh), each against the baseline named in its row.
# Every program prints its result line(s) and the bench-* lines described in
# bench/baselines/common.h; this script takes the median of the bench-ms
# lines, and checks that a pgpu program's result lines equal its baseline's.
#
# Prints on stdout: the machine, then a markdown table
#   | name | ms | wall ms | baseline | baseline ms | ratio | ratio (wall) | kernels | temp MiB | GB/s | % of copy | check |
# (ratio = ms / baseline ms: both device time between events, pgpu's
# through wtime() with PGPU_CLOCK=device; ratio (wall) = wall ms / the
# baseline's host wall time; GB/s = bytes read + written / ms; % of copy
# against the best of the two copy rows; check: the baseline's own
# verification, or for a pgpu row whether its result lines equal the
# baseline's), then the optional sections below. Logs (one .out/.err per
# row, build logs, results.tsv, table.md, machine.txt) go to
# $PGPU_BENCH_LOGS (default /tmp/pgpu-bench-logs); when $OUT is set,
# table.md, results.tsv, machine.txt and logs.tar.gz (all logs) are copied
# there at the end.
#
# Run (on the GPU machine, from the repository root):
#   bench/gpu/run.sh
# Environment:
#   PGPU_BENCH_BIN     directory of pgpu executables (default bench/gpu/bin)
#   PGPU_EXE_FLAGS     flags put before a pgpu executable's arguments
#                      (e.g. "--device cuda"; default none)
#   PGPU_LIT_CUDA_CMD  a command running the lit `REQUIRES: cuda` suite
#                      (e.g. "lit -sv test-suite"); its log goes to
#                      lit-cuda.log and its exit status into the summary
#   PGPU               a pgpu driver binary: when set, times
#                      `pgpu compile --target cuda` of every examples/bsgp
#                      program (compile-time table)
#   PGPU_BENCH_QUICK=1 small sizes and few repetitions (a smoke test)
#   PGPU_BENCH_BUILD   where the baselines are built (default
#                      /tmp/pgpu-bench-build); PGPU_BENCH_SKIP_BUILD=1 uses
#                      the binaries already there
#   NVCC, PGPU_BENCH_ARCH (default sm_90), PYTHON (default python3)
#
# To add a pgpu row: one line in PGPU_ROWS below.
set -u -o pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
# Logs are written here; with $OUT set, the tables and a tarball of the
# logs are copied there at the end (the device tool returns few files).
LOG=${PGPU_BENCH_LOGS:-/tmp/pgpu-bench-logs}
BUILD=${PGPU_BENCH_BUILD:-/tmp/pgpu-bench-build}
BIN=${PGPU_BENCH_BIN:-$ROOT/bench/gpu/bin}
# shellcheck source=bench/gpu/common.sh
. "$ROOT/bench/gpu/common.sh"
PYTHON=${PYTHON:-python3}
EXE_FLAGS=${PGPU_EXE_FLAGS:-}
mkdir -p "$LOG" "$BUILD"

# Sizes: the issue's, or small ones for a smoke test.
if [ "${PGPU_BENCH_QUICK:-0}" = 1 ]; then
  FF_N=20000 FF_M=10000 PB_N=20000 PB_GRID=64 SORT_N=100000 BW_N=1000000
  REPS=5 SORT_REPS=5 BW_REPS=5
else
  FF_N=1000000 FF_M=500000 PB_N=1048576 PB_GRID=512 SORT_N=16777216 BW_N=268435456
  REPS=100 SORT_REPS=50 BW_REPS=20
fi

# Baselines: key | command (run from the repository root).
BASELINES=(
  "find_faces           | $BUILD/find_faces $FF_N $FF_M $REPS"
  "find_faces_32bit     | $BUILD/find_faces $FF_N $FF_M $REPS 32"
  "particle_binning     | $BUILD/particle_binning $PB_N $PB_GRID $REPS"
  "particle_binning_32bit | $BUILD/particle_binning $PB_N $PB_GRID $REPS 32"
  "sort_torch           | $PYTHON bench/baselines/sort_torch.py $SORT_N $SORT_REPS"
  "sort_cub             | $BUILD/sort_cub $SORT_N $SORT_REPS"
  "copy                 | $BUILD/bandwidth copy $BW_N $BW_REPS"
  "copy_kernel          | $BUILD/bandwidth copy_kernel $BW_N $BW_REPS"
  "scan_cub             | $BUILD/bandwidth scan $BW_N $BW_REPS"
  "reduce_cub           | $BUILD/bandwidth reduce $BW_N $BW_REPS"
)

# pgpu rows: name | executable in $BIN | arguments | baseline key | bytes
# read + written per run ("-": none) | arguments with no timed call (the
# run's launches minus this one's, over the repetitions, are the kernels
# of one call). Rows whose executable is missing are listed as "not built".
PGPU_ROWS=(
  "findFaces L1 (pgpu)        | find_faces       | $FF_N $FF_M $REPS 1    | find_faces       | -                | $FF_N $FF_M 0 1"
  "findFaces L9 (pgpu)        | find_faces       | $FF_N $FF_M $REPS 9    | find_faces       | -                | $FF_N $FF_M 0 9"
  "particle binning (pgpu)    | particle_binning | $PB_N $PB_GRID $REPS   | particle_binning | -                | $PB_N $PB_GRID 0"
  "sortby (pgpu)              | sort             | $SORT_N $SORT_REPS 0   | sort_torch       | -                | $SORT_N 0 0"
  "sort_idx (pgpu)            | sort             | $SORT_N $SORT_REPS 1   | sort_torch       | -                | $SORT_N 0 1"
  "scan (pgpu)                | scan_reduce      | $BW_N $BW_REPS 0       | scan_cub         | $((8 * BW_N)) | $BW_N 0 0"
  "reduce (pgpu)              | scan_reduce      | $BW_N $BW_REPS 1       | reduce_cub       | $((4 * BW_N)) | $BW_N 0 1"
)

slug() { printf '%s' "$1" | tr -c 'A-Za-z0-9_\n' '_' | tr -s '_'; }

# last value of a bench-KEY line in stdout or stderr ("" when none)
bench_value() { cat "$1" "$2" 2>/dev/null | grep -E "^bench-$3 " | tail -n 1 | awk '{print $2}'; }
fmt() { awk -v x="$1" -v f="$2" 'BEGIN { if (x == "") print "—"; else printf f, x }'; }
div() { awk -v a="$1" -v b="$2" -v f="$3" 'BEGIN { if (a == "" || b == "" || b + 0 == 0) print ""; else printf f, a / b }'; }

# ---------------------------------------------------------------------------
# The machine.
{
  echo "date: $(date -u '+%Y-%m-%d %H:%M UTC')"
  if command -v nvidia-smi > /dev/null; then
    echo "gpu: $(nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,clocks.max.mem --format=csv,noheader 2>/dev/null | head -n 1)"
  fi
  echo "nvcc: $("$NVCC" --version 2>/dev/null | grep -i release | head -n 1)"
  echo "torch: $("$PYTHON" -c 'import torch; print(torch.__version__, "cuda", torch.version.cuda)' 2>/dev/null)"
  echo "cpu: $(grep -m1 'model name' /proc/cpuinfo 2>/dev/null | cut -d: -f2 | sed 's/^ *//'), $(nproc) cores"
  echo "sizes: findFaces $FF_N triangles / $FF_M vertices, particles $PB_N on ${PB_GRID}x$PB_GRID, sort $SORT_N keys, scan/reduce/copy $BW_N int32"
} > "$LOG/machine.txt"
sed 's/^/    /' "$LOG/machine.txt"
echo

# ---------------------------------------------------------------------------
# Build the baselines (in parallel).
declare -A BUILD_RC
if [ "${PGPU_BENCH_SKIP_BUILD:-0}" != 1 ]; then
  declare -A PIDS
  for prog in find_faces particle_binning sort_cub bandwidth; do
    build_baseline "$ROOT" "$BUILD" "$prog" "$LOG/build-$prog.log" &
    PIDS[$prog]=$!
  done
  for prog in "${!PIDS[@]}"; do
    wait "${PIDS[$prog]}"
    BUILD_RC[$prog]=$?
    if [ "${BUILD_RC[$prog]}" != 0 ]; then
      echo "build of $prog FAILED (log: $LOG/build-$prog.log):"
      tail -n 20 "$LOG/build-$prog.log"
    fi
  done
fi

# ---------------------------------------------------------------------------
# Run one program; sets R_MS R_WALL R_KERNELS (with its memsets) R_TEMP
# R_BYTES R_RC R_OUT R_ERR.
run_row() {
  local tag=$1
  shift
  R_OUT="$LOG/$tag.out"
  R_ERR="$LOG/$tag.err"
  (cd "$ROOT" && "$@") > "$R_OUT" 2> "$R_ERR"
  R_RC=$?
  R_MS=$(median_ms "$R_OUT")
  R_WALL=$(median_ms "$R_OUT" wall-ms)
  R_KERNELS=$(bench_value "$R_OUT" "$R_ERR" kernels)
  local memsets
  memsets=$(bench_value "$R_OUT" "$R_ERR" memsets)
  if [ -n "$R_KERNELS" ] && [ "$R_KERNELS" != -1 ] && [ -n "$memsets" ] && [ "$memsets" != 0 ] && [ "$memsets" != -1 ]; then
    R_KERNELS="$R_KERNELS + $memsets memsets"
  fi
  R_TEMP=$(bench_value "$R_OUT" "$R_ERR" temp-bytes)
  R_BYTES=$(bench_value "$R_OUT" "$R_ERR" bytes)
}

declare -A BASE_MS BASE_WALL BASE_OUT BASE_OK
TABLE="$LOG/table.md"
TSV="$LOG/results.tsv"
printf 'name\tms\twall_ms\tbaseline\tbaseline_ms\tratio\tratio_wall\tkernels\ttemp_bytes\tbytes\tgbps\tcheck\n' > "$TSV"
{
  echo "| name | ms | wall ms | baseline | baseline ms | ratio | ratio (wall) | kernels | temp MiB | GB/s | % of copy | check |"
  echo "|---|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---|"
} > "$TABLE"

ROWS=()  # "name|ms|wall|base|base_ms|ratio|ratio_wall|kernels|temp|bytes|check"

for entry in "${BASELINES[@]}"; do
  key=$(trim "${entry%%|*}")
  cmd=$(trim "${entry#*|}")
  # shellcheck disable=SC2086  # the command is a word list
  run_row "baseline-$key" $cmd
  if [ "$R_RC" = 0 ] && grep -q 'verify ok' "$R_ERR"; then check="verified"; else check="FAILED (rc $R_RC)"; fi
  BASE_MS[$key]=$R_MS
  BASE_WALL[$key]=$R_WALL
  BASE_OUT[$key]=$R_OUT
  BASE_OK[$key]=$check
  ROWS+=("$key (baseline)|$R_MS|$R_WALL|||||$R_KERNELS|$R_TEMP|$R_BYTES|$check")
done

# The launches PGPU_PROFILE reports in a run's stderr.
launches_of() { grep -E '^pgpu-profile launches ' "$1" 2>/dev/null | tail -n 1 | awk '{print $3}'; }

for entry in "${PGPU_ROWS[@]}"; do
  IFS='|' read -r name exe args base bytes setup_args <<< "$entry"
  name=$(trim "$name") exe=$(trim "$exe") args=$(trim "$args") base=$(trim "$base") bytes=$(trim "$bytes")
  setup_args=$(trim "$setup_args")
  [ "$bytes" = "-" ] && bytes=""
  if [ ! -x "$BIN/$exe" ]; then
    ROWS+=("$name|||$base|${BASE_MS[$base]:-}|||||$bytes|not built ($BIN/$exe)")
    continue
  fi
  # Timed twice: wtime() on the device clock (events' semantics, like the
  # baselines' ms), then on the host clock (their wall ms).
  # shellcheck disable=SC2086
  PGPU_CLOCK=host run_row "pgpu-$(slug "$name").wall" "$BIN/$exe" $EXE_FLAGS $args
  wall=$R_MS
  # shellcheck disable=SC2086
  PGPU_CLOCK=device PGPU_PROFILE=1 run_row "pgpu-$(slug "$name")" "$BIN/$exe" $EXE_FLAGS $args
  [ -n "$bytes" ] || bytes=$R_BYTES
  # Kernels of one call: the launches of the timed calls over their number.
  all=$(launches_of "$R_ERR")
  # shellcheck disable=SC2086
  PGPU_PROFILE=1 "$BIN/$exe" $EXE_FLAGS $setup_args > /dev/null 2> "$LOG/pgpu-$(slug "$name").setup.err"
  setup=$(launches_of "$LOG/pgpu-$(slug "$name").setup.err")
  timed=$(grep -c -E '^bench-ms ' "$R_OUT")
  if [ -n "$all" ] && [ -n "$setup" ] && [ "$timed" -gt 0 ]; then
    R_KERNELS=$(awk -v a="$all" -v s="$setup" -v t="$timed" 'BEGIN { printf "%g", (a - s) / t }')
  fi
  if [ "$R_RC" != 0 ]; then
    check="FAILED (rc $R_RC)"
  elif [ -z "${BASE_OUT[$base]:-}" ]; then
    check="no baseline"
  elif diff <(results_of "$R_OUT") <(results_of "${BASE_OUT[$base]}") > /dev/null; then
    check="same output"
  else
    check="OUTPUT DIFFERS"
  fi
  ratio=$(div "$R_MS" "${BASE_MS[$base]:-}" "%.3f")
  ratio_wall=$(div "$wall" "${BASE_WALL[$base]:-}" "%.3f")
  ROWS+=("$name|$R_MS|$wall|$base|${BASE_MS[$base]:-}|$ratio|$ratio_wall|$R_KERNELS|$R_TEMP|$bytes|$check")
done

# The copy bandwidth: the best of the two copy rows.
copy_gbps() {
  local best="" k g
  for k in copy copy_kernel; do
    g=$(div "$((8 * BW_N))" "${BASE_MS[$k]:-}" "%.6f")
    [ -n "$g" ] && g=$(awk -v g="$g" 'BEGIN { printf "%.6f", g / 1e6 }')
    best=$(awk -v a="$best" -v b="$g" 'BEGIN { if (a == "") print b; else if (b == "" || a + 0 >= b + 0) print a; else print b }')
  done
  printf '%s' "$best"
}
COPY_GBPS=$(copy_gbps)

for row in "${ROWS[@]}"; do
  IFS='|' read -r name ms wall base base_ms ratio ratio_wall kernels temp bytes check <<< "$row"
  gbps=""
  if [ -n "$bytes" ] && [ -n "$ms" ]; then
    gbps=$(awk -v b="$bytes" -v t="$ms" 'BEGIN { if (t + 0 > 0) printf "%.1f", b / (t * 1e6) }')
  fi
  pct=$(div "$gbps" "$COPY_GBPS" "%.6f")
  [ -n "$pct" ] && pct=$(awk -v p="$pct" 'BEGIN { printf "%.0f%%", p * 100 }')
  temp_mib=""
  [ -n "$temp" ] && [ "$temp" != "-1" ] && temp_mib=$(awk -v t="$temp" 'BEGIN { printf "%.1f", t / 1048576 }')
  [ "$kernels" = "-1" ] && kernels="?"
  printf '| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n' \
    "$name" "$(fmt "$ms" %.3f)" "$(fmt "$wall" %.3f)" "${base:-—}" "$(fmt "$base_ms" %.3f)" \
    "$(fmt "$ratio" %.2f)" "$(fmt "$ratio_wall" %.2f)" \
    "${kernels:-—}" "${temp_mib:-—}" "${gbps:-—}" "${pct:-—}" "$check" >> "$TABLE"
  printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' \
    "$name" "$ms" "$wall" "$base" "$base_ms" "$ratio" "$ratio_wall" "$kernels" "$temp" "$bytes" "$gbps" "$check" >> "$TSV"
done
cat "$TABLE"
echo
echo "ms: median of one run; baselines: CUDA events around the run, wall ms: host clock from before the"
echo "start event to the end of the stop event's synchronize; pgpu: the program's wtime() pair around a call,"
echo "ms with PGPU_CLOCK=device (the device's clock where the stream reaches each wtime(), as events time it),"
echo "wall ms with PGPU_CLOCK=host (a second run). ratio = ms / baseline ms; ratio (wall) = wall ms / baseline wall ms."
echo "kernels: launches of one run (baselines: kernel and memset nodes of a CUDA-graph capture of one run,"
echo "CUB's included; sort_torch: GPU kernels in torch.profiler; pgpu: PGPU_PROFILE's launches of the timed"
echo "calls over their number, collectives' kernels included). temp MiB: peak temporary device memory of"
echo "one run (baselines). Logs: $LOG${OUT:+ (and \$OUT/logs.tar.gz)}"

STATUS=0
for row in "${ROWS[@]}"; do
  case "$row" in *FAILED* | *DIFFERS*) STATUS=1 ;; esac
done

# ---------------------------------------------------------------------------
# Compile time of `pgpu compile` for each example (when a driver is given).
if [ -n "${PGPU:-}" ]; then
  echo
  echo "| example | pgpu compile --target cuda (s) | status |"
  echo "|---|---:|---|"
  mkdir -p "$BUILD/compiled"
  for src in "$ROOT"/examples/bsgp/*.bsgp; do
    ex=$(basename "$src" .bsgp)
    start=$(date +%s.%N)
    if "$PGPU" compile --target cuda --chip "$ARCH" "$src" -o "$BUILD/compiled/$ex" > "$LOG/compile-$ex.log" 2>&1; then st=ok; else st="FAILED"; STATUS=1; fi
    end=$(date +%s.%N)
    printf '| %s | %.2f | %s |\n' "$ex" "$(awk -v a="$start" -v b="$end" 'BEGIN { print b - a }')" "$st"
  done
fi

# ---------------------------------------------------------------------------
# The lit `REQUIRES: cuda` suite (when a command is given).
if [ -n "${PGPU_LIT_CUDA_CMD:-}" ]; then
  echo
  (cd "$ROOT" && bash -c "$PGPU_LIT_CUDA_CMD") > "$LOG/lit-cuda.log" 2>&1
  lit_rc=$?
  echo "lit cuda suite: \`$PGPU_LIT_CUDA_CMD\` exit $lit_rc (log: $LOG/lit-cuda.log)"
  grep -E '^(Total Discovered Tests|  (Passed|Failed|Unsupported|Unresolved|Expectedly Failed|Unexpectedly Passed|Skipped|Excluded|Timed Out))' "$LOG/lit-cuda.log" | sed 's/^/    /'
  [ "$lit_rc" = 0 ] || STATUS=1
fi

if [ -n "${OUT:-}" ]; then
  mkdir -p "$OUT"
  cp "$TABLE" "$TSV" "$LOG/machine.txt" "$OUT/"
  tar -czf "$OUT/logs.tar.gz" -C "$(dirname "$LOG")" "$(basename "$LOG")"
fi
exit "$STATUS"
