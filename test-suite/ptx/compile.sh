#!/usr/bin/env bash
# Compile every cuda/*.cu to PTX with nvcc (run on a machine with the CUDA
# toolkit; see README.md):
#   nvcc/<stem>.ptx        -O3 -arch=sm_90  (the PTX that record.py runs)
#   nvcc/<stem>.sm_75.ptx  -O3 -arch=sm_75  (older PTX ISA, same kernels)
# and nvcc/VERSION.txt with `nvcc --version`. Exits non-zero if any
# compilation fails (after trying all of them). NVCC overrides the compiler.
set -u
cd "$(dirname "$0")"

NVCC=${NVCC:-nvcc}
mkdir -p nvcc
"$NVCC" --version > nvcc/VERSION.txt || { echo "error: $NVCC not runnable" >&2; exit 1; }

status=0
for src in cuda/*.cu; do
    stem=$(basename "$src" .cu)
    for arch in sm_90 sm_75; do
        if [ "$arch" = sm_90 ]; then out="nvcc/$stem.ptx"; else out="nvcc/$stem.$arch.ptx"; fi
        if "$NVCC" -O3 -arch="$arch" -ptx -o "$out" "$src"; then
            echo "ok   $out"
        else
            echo "FAIL $src ($arch)" >&2
            rm -f "$out"
            status=1
        fi
    done
done
exit $status
