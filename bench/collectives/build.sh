#!/bin/sh
# Builds bench/collectives/out/libpgpu_coll.so: every generated collective
# (host functions and embedded PTX) lowered by the Rust test, translated to
# LLVM IR, compiled for x86-64 and linked with mgpu_shim.c. Run here (it
# needs LLVM 22 and cargo); the library needs only libc and, at run time,
# libcuda, so the GPU machine can load it (run_gpu.py).
#
#   sh bench/collectives/build.sh
set -eu
root=$(cd "$(dirname "$0")/../.." && pwd)
out="$root/bench/collectives/out"
llvm=/usr/lib/llvm-22/bin
rm -rf "$out"
mkdir -p "$out/modules"
cd "$root"
PGPU_COLLECTIVES_DUMP="$out/modules" cargo test -q -p pgpu-backend-nvptx --test collectives
for lowered in "$out"/modules/*.llvm.mlir; do
  name=$(basename "$lowered" .llvm.mlir)
  "$llvm/mlir-translate" --mlir-to-llvmir "$lowered" -o "$out/modules/$name.ll"
done
"$llvm/llvm-link" "$out"/modules/*.ll -o "$out/all.bc"
"$llvm/llc" -O2 -filetype=obj -relocation-model=pic "$out/all.bc" -o "$out/all.o"
cc -O2 -fPIC -c "$root/bench/collectives/mgpu_shim.c" -o "$out/shim.o"
cc -shared -o "$out/libpgpu_coll.so" "$out/all.o" "$out/shim.o" -ldl
# The CPU runtime's list collectives, the reference the GPU results must
# match bit for bit (its static library, linked into a separate library).
runtime="$root/target/release/libpgpu_runtime.a"
[ -f "$runtime" ] || cargo build -q --release -p pgpu-runtime
undefined=""
for f in reduce scan sort_idx compact split expand; do
  undefined="$undefined -Wl,-u,pgpu_rt_list_$f"
done
# shellcheck disable=SC2086
cc -shared -o "$out/libpgpu_ref.so" $undefined "$runtime" -lpthread -ldl -lm
# Keep the PTX (for ptxas -v on the GPU machine), drop the bulky rest.
rm -f "$out"/modules/*.ll "$out/all.bc" "$out/all.o" "$out/shim.o" \
  "$out"/modules/*.llvm.mlir "$out"/modules/*.mlir
ls -l "$out/libpgpu_coll.so" "$out/libpgpu_ref.so"
