#!/bin/sh
# The whole GPU session of the collectives (run on the GPU machine from the
# repository root, with bench/collectives/out built by build.sh here):
# ptxas resource usage of a few modules, the correctness tests (one process
# per element type, launches synchronous so that a fault names its kernel),
# then the timings. Results go to $OUT when set.
set -u
out=${OUT:-/tmp}
nvidia-smi --query-gpu=name,clocks.max.sm,clocks.max.mem,memory.total --format=csv,noheader
ptxas=$(command -v ptxas || echo /usr/local/cuda/bin/ptxas)
for m in reduce_add_i32 scan_add_i32 scan_add_i32_packed scan_add_f32 scan_add_i8 sort_idx_i32 sort_idx_f64 \
         compact_i32 split_i8 expand_i32 reduce_add_f32; do
  echo "== $m" >> "$out/ptxas.txt"
  "$ptxas" -arch=sm_90 -O3 -v "bench/collectives/out/modules/pgpu_coll_$m.ptx" \
    -o /dev/null >> "$out/ptxas.txt" 2>&1
done
for which in ${ELEMS:-i32 f32 i1 i8 i16 i64 index f64 large}; do
  CUDA_LAUNCH_BLOCKING=1 timeout "${CORRECTNESS_SECONDS:-40}" \
    python3 bench/collectives/run_gpu.py correctness "$which" 2>&1 | grep -v "^mgpu shim" | tail -8
done
timeout "${TIMING_SECONDS:-90}" python3 bench/collectives/run_gpu.py timing
