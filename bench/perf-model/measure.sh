#!/usr/bin/env bash
# Times every kernel of the validation cases on the GPU machine (after
# bench/perf-model/build.sh here; carry bench/perf-model/bin.tar.xz):
# each case runs REPEAT times (default 3) with PGPU_PROFILE=kernels, which
# times every launch with device events (and, for executables built with
# CYCLES=1, counts each launch's cycles) and records its launch shapes;
# the profile lines of run r go to
# measured/<name>.<r>.txt, the output and exit status beside them, and
# with $OUT set all of it to $OUT/measured.tar.xz (one file to bring
# back). compare.py takes the median per kernel. MEASURED names the
# folder (default measured) and CASES, a regular expression, picks the
# cases (default all); other environment variables reach the programs
# (CUDA_MODULE_LOADING=EAGER loads every kernel at start-up).
# Run from the repository root: bench/perf-model/measure.sh
set -uo pipefail
cd "$(dirname "$0")/../.."
here=bench/perf-model
repeat=${REPEAT:-3}
out=$here/${MEASURED:-measured}
rm -rf "$out"
mkdir -p "$out"
[ -d "$here/bin" ] || tar -C "$here" -xJf "$here/bin.tar.xz"
echo "machine: $(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1), $(date -u +%Y-%m-%d)" | tee "$out/machine.txt"
for exe in "$here"/bin/*.args; do
  name=$(basename "$exe" .args)
  [[ $name =~ ${CASES:-.} ]] || continue
  args=$(cat "$exe")
  for r in $(seq "$repeat"); do
    # shellcheck disable=SC2086
    PGPU_PROFILE=kernels timeout 120 "$here/bin/$name" --device cuda $args \
      > "$out/$name.$r.out" 2> "$out/$name.$r.err"
    echo $? > "$out/$name.$r.rc"
    grep -E '^pgpu-profile-kernel(-cycles|-launch)? ' "$out/$name.$r.err" > "$out/$name.$r.txt"
  done
  echo "$name rc $(cat "$out/$name.1.rc") kernels $(grep -c '^pgpu-profile-kernel ' "$out/$name.1.txt") counted $(grep -c '^pgpu-profile-kernel-cycles ' "$out/$name.1.txt")"
done
[ -z "${OUT:-}" ] || tar -C "$here" -cJf "$OUT/${MEASURED:-measured}.tar.xz" "${MEASURED:-measured}"
