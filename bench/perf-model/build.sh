#!/usr/bin/env bash
# Builds the validation cases of the Petri-net model (cases.txt) here,
# where pgpu is built; bench/perf-model/measure.sh times them on the GPU
# machine and bench/perf-model/compare.py joins the two (PERF.md,
# "Validation on the H200"). For each case:
#   bin/<name>               pgpu compile --target cuda, stripped
#   bin/<name>.args          its arguments
#   predicted/<name>.csv     pgpu perf-model --csv with the same arguments
#                            (cases without compile flags)
# and bin.tar.xz, the executables in one archive to carry to the GPU
# machine (about 40 executables of 10 MB each would not fit a carry).
# Run from the repository root: bench/perf-model/build.sh
# PROFILE=release builds with the release pgpu (faster predictions).
# CYCLES=1 compiles every case with --count-sm-cycles, so that measure.sh
# also records each kernel's busiest multiprocessor span in cycles.
# CASES_FILE names another list of cases (heldout.txt: sizes no choice of
# the model was made on).
set -euo pipefail
cd "$(dirname "$0")/../.."
# pgpu links executables with the runtime archive beside it, which only a
# workspace build refreshes (`cargo build -p pgpu` leaves a stale one).
profile=${PROFILE:-debug}
cargo build --quiet --workspace --bins --lib $([ "$profile" = release ] && echo --release) </dev/null
PGPU=target/$profile/pgpu
here=bench/perf-model
rm -rf "$here/bin" "$here/predicted"
mkdir -p "$here/bin" "$here/predicted"
grep -v '^#' "${CASES_FILE:-$here/cases.txt}" | while IFS='|' read -r name program args flags; do
  [ -n "$name" ] || continue
  # shellcheck disable=SC2086
  "$PGPU" compile --target cuda $flags ${CYCLES:+--count-sm-cycles} "$program" -o "$here/bin/$name.full"
  strip -o "$here/bin/$name" "$here/bin/$name.full"
  rm "$here/bin/$name.full"
  echo "$args" > "$here/bin/$name.args"
  # Cases with compile flags are the decision's; the plain case predicts.
  [ -z "$flags" ] || continue
  # shellcheck disable=SC2086
  "$PGPU" perf-model --csv "$program" -- $args > "$here/predicted/$name.csv"
done
tar -C "$here" -cJf "$here/bin.tar.xz" bin
ls -la "$here/bin.tar.xz"
