#!/bin/sh
# GPU batches built and checked on the GPU machine itself, whose many cores
# build in minutes what takes the 2-core machine an hour.
#
#   scripts/difftest/device-batch.sh TOOLS OUT SPEC...
#
# TOOLS is a tarball (scripts/difftest/pack-tools.sh) with pgpu, pgpu-opt,
# libpgpu_runtime.a and the shared libraries pgpu needs (lib/); OUT the
# folder for the logs; each SPEC is LANG:SEED:COUNT:BUNDLE. For each SPEC
# it runs `runner.py build` (interpreter, compile, the CPU device) and then
# `runner.py check` (--device cuda) and writes OUT/LANG-SEED.{build,check}.log.
# JOBS (default: the cores) builds in parallel; CHECK_JOBS (default 12)
# executables share the GPU. Exit status 1 when any check failed.
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
status=0
for spec in "$@"; do
    IFS=: read -r lang seed count bundle <<EOF
$spec
EOF
    dir="$bin/batch-$lang-$seed"
    log="$out/$lang-$seed"
    start=$(date +%s)
    python3 -u "$here/runner.py" build "$dir" --lang "$lang" --seed "$seed" --count "$count" \
        --bundle "$bundle" --jobs "$jobs" > "$log.build.log" 2>&1 || status=1
    mid=$(date +%s)
    python3 -u "$here/runner.py" check "$dir" --jobs "${CHECK_JOBS:-12}" > "$log.check.log" 2>&1 || status=1
    end=$(date +%s)
    echo "$spec: build $((mid - start)) s, check $((end - mid)) s" | tee -a "$out/times.log"
    tail -n 3 "$log.build.log"
    tail -n 4 "$log.check.log"
    rm -rf "$dir"
done
exit $status
