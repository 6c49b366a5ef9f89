#!/bin/sh
# Runs every case of mirror_test (in this script's folder) and checks its
# output and exit status; prints PASS/FAIL per check and a summary.
# On a machine without a usable GPU only the cpu checks run.
here=$(cd "$(dirname "$0")" && pwd)
prog=$here/mirror_test
fails=0
note() { printf '%s\n' "$*"; }
# expect NAME STATUS STDOUT-PATTERN STDERR-PATTERN -- ARGS...
expect() {
  name=$1 want=$2 outpat=$3 errpat=$4; shift 5
  "$prog" "$@" >"$here/out.txt" 2>"$here/err.txt"
  got=$?
  ok=1
  [ "$got" = "$want" ] || ok=0
  if [ -n "$outpat" ]; then grep -q -- "$outpat" "$here/out.txt" || ok=0; fi
  if [ -n "$errpat" ]; then grep -q -F -- "$errpat" "$here/err.txt" || ok=0; fi
  if [ $ok = 1 ]; then note "PASS $name"; else note "FAIL $name (status $got)"; fails=$((fails+1)); fi
  sed 's/^/    out| /' "$here/out.txt"; sed 's/^/    err| /' "$here/err.txt"
}
note "ldd:"; ldd "$prog" | sed 's/^/    /'
if ldd "$prog" | grep -v -E 'linux-vdso|libc\.so|libm\.so|libgcc_s|ld-linux' | grep -q .; then
  note "FAIL ldd: needs more than libc"; fails=$((fails+1))
else note "PASS ldd: libc only"; fi

expect cpu-flag 0 "device=cpu n=17" "" -- --device cpu 0 17
expect cpu-flag-eq 0 "PASSED" "" -- 0 --device=cpu
PGPU_DEVICE=cpu expect cpu-env 0 "device=cpu" "" -- 0
expect bad-flag 1 "" "pgpu runtime: error: --device: unknown device 'tpu' (expected cpu or cuda)" -- --device tpu
PGPU_DEVICE=gpu expect bad-env 1 "" "pgpu runtime: error: PGPU_DEVICE: unknown device 'gpu'" -- 0
expect cpu-kernel 1 "device=cpu" "pgpu runtime: error: kernel scale needs the cuda device, but the program runs on the cpu device" -- --device cpu 7
expect cpu-unknown-ptr 0 "cpu: identity" "" -- --device cpu 4

if "$prog" --device cuda 0 50 >/dev/null 2>"$here/err.txt"; then
  expect cuda-default 0 "device=cuda" "" -- 0 5
  expect cuda-all 0 "PASSED" "" -- --device cuda 0 100000
  PGPU_DEVICE=cuda expect cuda-env 0 "PASSED" "" -- 0 1000
  expect cuda-trap 1 "launched" "trap.bsgp:3:9: error: in kernel boom: CUDA_ERROR_LAUNCH_FAILED: unspecified launch failure" -- 1
  grep -q -F "mirror.bsgp:20:3: note: kernel scale was launched earlier" "$here/err.txt" \
    && note "PASS cuda-trap-note" || { note "FAIL cuda-trap-note"; fails=$((fails+1)); }
  expect cuda-bad-launch 1 "device=cuda" "bad.bsgp:5:7: error: in kernel scale: CUDA_ERROR_INVALID_VALUE: invalid argument" -- 2
  expect cuda-illegal-address 1 "launched" "wild.bsgp:8:1: error: in kernel wild: CUDA_ERROR_ILLEGAL_ADDRESS: an illegal memory access was encountered" -- 3
  expect cuda-unknown-ptr 1 "device=cuda" "is not inside a list allocated by the runtime" -- 4
  expect cuda-no-site 1 "device=cuda" "<unknown>:0:0: error: in kernel boom: CUDA_ERROR_LAUNCH_FAILED" -- 5
  expect cuda-managed 1 "device=cuda" "pgpu runtime: error: mgpuMemAlloc: host-shared (managed) memory is not supported" -- 6
else
  note "no usable CUDA device: $(cat "$here/err.txt")"
  expect cuda-unusable 1 "" "pgpu runtime: error: --device cuda: no usable CUDA device (" -- --device cuda 0
  PGPU_DEVICE=cuda expect cuda-unusable-env 1 "" "pgpu runtime: error: PGPU_DEVICE cuda: no usable CUDA device (" -- 0
  expect default-cpu 0 "device=cpu" "" -- 0
fi
rm -f "$here/out.txt" "$here/err.txt"
if [ $fails = 0 ]; then note "ALL PASSED"; else note "$fails FAILED"; exit 1; fi
