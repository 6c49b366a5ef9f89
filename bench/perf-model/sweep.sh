#!/usr/bin/env bash
# Predicts every validation case (cases.txt, those without compile flags)
# at several global-memory latencies l1, into predicted-l1-<L>/, for
# compare.py --sweep (PERF.md, "Validation on the H200": fitting l1 to
# the device). Needs no GPU: the measurements are measure.sh's.
# Run from the repository root after building a release pgpu:
#   bench/perf-model/sweep.sh [L1 ...]    (default 20 50 100 200 400 800)
# CASES_FILE (default cases.txt; another list predicts into
# predicted-<its name>-...), PGPU (default target/release/pgpu), L2
# (default 2) and JOBS (default
# the cores) are taken from the environment. LAUNCHES=<measured folder>
# also predicts the kernels whose thread count only a run knows, for the
# launch shapes that folder's first run of each case recorded (pgpu
# perf-model --launches), into predicted-launched-l1-<L>/ (compare.py
# --sweep --prefix predicted-launched-l1). SLOTS=K predicts with K memory
# slots per SM (pgpu perf-model --memory-slots), into
# predicted-slotsK-l1-<L>/ (or predicted-launched-slotsK-l1-<L>/). WARM=W
# predicts kernels launched more than once with warm launches at l1 = W
# (pgpu perf-model --warm-l1), into predicted-warmW-l1-<L>/ (the tags
# combine in the order launched, warm, slots).
set -euo pipefail
cd "$(dirname "$0")/../.."
PGPU=${PGPU:-target/release/pgpu}
L2=${L2:-2}
JOBS=${JOBS:-$(nproc)}
here=bench/perf-model
latencies=("$@")
# Cases of another list go to folders named after it (heldout.txt:
# predicted-heldout-l1-<L>/ ...).
list=$(basename "${CASES_FILE:-cases.txt}" .txt)
tag=
[ "$list" = cases ] || tag="-$list"
[ ${#latencies[@]} -gt 0 ] || latencies=(20 50 100 200 400 800)
for l1 in "${latencies[@]}"; do
  out="$here/predicted$tag${LAUNCHES:+-launched}${WARM:+-warm$WARM}${SLOTS:+-slots$SLOTS}-l1-$l1"
  rm -rf "$out"
  mkdir -p "$out"
  grep -v '^#' "${CASES_FILE:-$here/cases.txt}" | while IFS='|' read -r name program args flags; do
    [ -n "$name" ] && [ -z "$flags" ] || continue
    printf '%s\0%s\0%s\0' "$name" "$program" "$args"
  done | SLOTS=${SLOTS:-} WARM=${WARM:-} xargs -0 -n 3 -P "$JOBS" sh -c '
    # $0 pgpu, $1 l1, $2 l2, $3 output folder, $4 recorded launches
    # folder or empty, $5 case, $6 program, $7 args
    launches="${SLOTS:+--memory-slots $SLOTS} ${WARM:+--warm-l1 $WARM}"
    [ -z "$4" ] || launches="$launches --launches $4/$5.1.txt"
    # shellcheck disable=SC2086
    "$0" perf-model --csv --l1 "$1" --l2 "$2" $launches "$6" -- $7 > "$3/$5.csv"
  ' "$PGPU" "$l1" "$L2" "$out" "${LAUNCHES:-}"
  echo "l1 = $l1: $(ls "$out" | wc -l) cases predicted"
done
