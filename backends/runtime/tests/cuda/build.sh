#!/bin/sh
# Builds the CUDA runtime test program into OUT (default: build/ here,
# listed in .git/info/exclude): the PTX from kernels.ll (llc-22, sm_90),
# the header that embeds it, and mirror_test linked with clang-22 against
# the release staticlib (cargo build -p pgpu-runtime --release first).
# The program needs only libc at run time; libcuda.so.1 is opened with
# dlopen when present.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../../.." && pwd)
out=${1:-$here/build}
mkdir -p "$out"
llvm=/usr/lib/llvm-22/bin
"$llvm/llc" -march=nvptx64 -mcpu=sm_90 "$here/kernels.ll" -o "$out/kernels.ptx"
python3 - "$out/kernels.ptx" "$out/kernels_ptx.h" <<'PY'
import sys
text = open(sys.argv[1]).read()
body = "".join('"%s\\n"\n' % line.replace("\\", "\\\\").replace('"', '\\"')
               for line in text.splitlines())
open(sys.argv[2], "w").write("static const char kernels_ptx[] =\n" + body + ";\n")
PY
clang-22 -O2 -Wall -Wextra -I"$out" "$here/mirror_test.c" \
    "$root/target/release/libpgpu_runtime.a" -lm -lpthread -ldl \
    -o "$out/mirror_test"
cp "$here/run.sh" "$out/run.sh"
echo "built $out/mirror_test"
