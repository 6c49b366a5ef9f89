#!/bin/sh
# GPU batches built and checked on the GPU machine itself, whose many cores
# build in minutes what takes the 2-core machine an hour.
#
#   scripts/difftest/device-batch.sh TOOLS OUT SPEC...
#
# TOOLS is a tarball (scripts/difftest/pack-tools.sh) with pgpu,
# libpgpu_runtime.a and the shared libraries pgpu needs (lib/); OUT the
# folder for the logs; each SPEC is LANG:SEED:COUNT:BUNDLE. For each SPEC
# it runs `runner.py build` (interpreter, compile, the CPU device) and
# then `runner.py check` (--device cuda), the check of one batch beside the
# build of the next (the checks wait on the GPU, the builds use the cores),
# and writes OUT/LANG-SEED.{build,check}.log.
#
# Environment: JOBS builds in parallel (default: the cores); CHECK_JOBS
# executables share the GPU (default 16 for BSGP, 6 for Fork: a Fork
# executable with block kernels reserves 17 GiB of stack); CHECK_ARGS goes
# to every check (e.g. --variants alternate); BUDGET seconds from the
# start, after which checks start no run (their summaries count what ran).
# SWEEPS (e.g. "bsgp:300000:100000 fork:400000:100000") runs sweep.py on
# the cores beside the batches (with the replays where the tarball has
# pgpu-opt, else --no-replay; --extra-every 3, SWEEP_JOBS
# units at once, default 6, until BUDGET), logging to
# OUT/sweep-LANG-SEED.jsonl; rerun their findings here with runner.py.
# Exit status 1 when any build, check or sweep failed.
set -u
tools=$1
out=$2
shift 2
here=$(cd "$(dirname "$0")" && pwd)
bin=$(mktemp -d)
tar -xJf "$tools" -C "$bin" || exit 2
export LD_LIBRARY_PATH="$bin/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export PGPU="$bin/pgpu" PGPU_OPT="$bin/pgpu-opt"
# The PTX of every bundle is JIT-compiled once and cached for its other runs.
export CUDA_CACHE_PATH="$bin/cuda-cache" CUDA_CACHE_MAXSIZE=4294967296
"$PGPU" --version > "$out/tools.log" 2>&1 || { cat "$out/tools.log"; exit 2; }
jobs=${JOBS:-$(nproc)}
until=0
[ -n "${BUDGET:-}" ] && until=$(($(date +%s) + BUDGET))
status_file="$out/.failed"
rm -f "$status_file"

# check LANG DIR LOG: one batch on the GPU, then its directory goes.
check() {
    case $1 in fork) check_jobs=${CHECK_JOBS:-6} ;; *) check_jobs=${CHECK_JOBS:-16} ;; esac
    start=$(date +%s)
    # shellcheck disable=SC2086 # CHECK_ARGS is a list of flags
    python3 -u "$here/runner.py" check "$2" --jobs "$check_jobs" --until "$until" ${CHECK_ARGS:-} \
        > "$3.check.log" 2>&1 || touch "$status_file"
    echo "$(basename "$3"): check $(($(date +%s) - start)) s" >> "$out/times.log"
    rm -rf "$2"
}

PGPU_TOOLS_VERSION=$(cat "$bin/version.txt" 2>/dev/null || echo unknown)
export PGPU_TOOLS_VERSION
sweeping=
# The pipeline replays need pgpu-opt (pack-tools.sh links it to pgpu).
replay=--no-replay
[ -x "$PGPU_OPT" ] && replay=
minutes=0
[ -n "${BUDGET:-}" ] && minutes=$((BUDGET / 60))
for sweep in ${SWEEPS:-}; do
    IFS=: read -r lang seed count <<EOF
$sweep
EOF
    # shellcheck disable=SC2086 # $replay is one flag or none
    ( python3 -u "$here/sweep.py" run --lang "$lang" --seed "$seed" --count "$count" --jobs "${SWEEP_JOBS:-6}" \
        --minutes "$minutes" --extra-every 3 $replay --no-reproduce \
        --log "$out/sweep-$lang-$seed.jsonl" > "$out/sweep-$lang-$seed.log" 2>&1 || touch "$status_file" ) &
    sweeping="$sweeping $!"
done

checking=
for spec in "$@"; do
    IFS=: read -r lang seed count bundle <<EOF
$spec
EOF
    dir="$bin/batch-$lang-$seed"
    log="$out/$lang-$seed"
    start=$(date +%s)
    python3 -u "$here/runner.py" build "$dir" --lang "$lang" --seed "$seed" --count "$count" \
        --bundle "$bundle" --jobs "$jobs" > "$log.build.log" 2>&1 || touch "$status_file"
    echo "$lang-$seed: build $(($(date +%s) - start)) s" >> "$out/times.log"
    [ -n "$checking" ] && wait "$checking"
    check "$lang" "$dir" "$log" &
    checking=$!
done
[ -n "$checking" ] && wait "$checking"
# shellcheck disable=SC2086 # a list of process ids
[ -n "$sweeping" ] && wait $sweeping
for log in "$out"/sweep-*.log; do
    [ -e "$log" ] && tail -n 1 "$log"
done
[ -e "$out/times.log" ] && cat "$out/times.log"
for log in "$out"/*.build.log "$out"/*.check.log; do
    [ -e "$log" ] || continue
    echo "== $(basename "$log")"
    grep -v '^  \(expected\|got\)' "$log" | tail -n 4
done
[ ! -e "$status_file" ]
