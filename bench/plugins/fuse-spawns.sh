#!/usr/bin/env bash
# The example pass pgpu-fuse-spawns (examples/plugins/fuse-spawns) on the
# arr program examples/plugins/array-frontend/examples/squares.arr: its
# three spawns of n threads as three kernels (the plain pipeline), or as
# one (`--passes=pgpu-fuse-spawns`, after which pgpu-eliminate-barriers
# removes the two barriers). Reports the kernels' GPU time
# (PGPU_PROFILE=kernels, the sum over the program's kernels; median of
# REPEAT runs, the variants alternating) and checks that both print the
# same.
#
#   bench/plugins/fuse-spawns.sh build [DIR]  # here: both executables into DIR
#   bench/plugins/fuse-spawns.sh run [DIR]    # on the GPU machine
#
# DIR defaults to bench/plugins/bin; REPEAT (5) and SIZES ("1000000
# 10000000 50000000") set the runs.
set -euo pipefail
cd "$(dirname "$0")/../.."
mode=${1:?usage: fuse-spawns.sh build|run [DIR]}
dir=${2:-bench/plugins/bin}
program=examples/plugins/array-frontend/examples/squares.arr

case $mode in
build)
  mkdir -p "$dir"
  target/debug/pgpu-array compile --target cuda "$program" -o "$dir/separate"
  target/debug/pgpu-array compile --target cuda --passes=pgpu-fuse-spawns "$program" -o "$dir/fused"
  ;;
run)
  python3 - "$dir" "${REPEAT:-5}" ${SIZES:-1000000 10000000 50000000} <<'PY'
import os, statistics, subprocess, sys

directory, repeat, sizes = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
environment = dict(os.environ, PGPU_PROFILE="kernels")

def run(variant, n):
    done = subprocess.run([os.path.join(directory, variant), n], capture_output=True,
                          text=True, env=environment, check=True)
    kernels = [float(line.split()[1]) for line in done.stderr.splitlines()
               if line.startswith("pgpu-profile-kernel ")]
    return done.stdout, len(kernels), sum(kernels)

print("| n | kernels, separate | kernel ms, separate | kernels, fused | kernel ms, fused | separate/fused | output |")
print("|---:|---:|---:|---:|---:|---:|---|")
for n in sizes:
    times = {"separate": [], "fused": []}
    counts, outputs = {}, {}
    for _ in range(repeat):
        for variant in times:
            output, count, milliseconds = run(variant, n)
            times[variant].append(milliseconds)
            counts[variant], outputs[variant] = count, output
    separate, fused = (statistics.median(times[v]) for v in ("separate", "fused"))
    same = "same" if outputs["separate"] == outputs["fused"] else "DIFFERS"
    # Kernel times exist only where the kernels ran on a GPU.
    ratio = f"{separate / fused:.2f}" if fused > 0 else "no GPU"
    print(f"| {n} | {counts['separate']} | {separate:.4f} | {counts['fused']} | {fused:.4f} "
          f"| {ratio} | {same} |")
PY
  ;;
*)
  echo "usage: fuse-spawns.sh build|run [DIR]" >&2
  exit 2
  ;;
esac
