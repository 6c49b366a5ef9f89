# Shell helpers shared by bench/gpu/run.sh and bench/gpu/compare.sh
# (sourced, not run): the nvcc to use, the build of one CUDA baseline, and
# reading the bench-* lines of bench/baselines/common.h's protocol.

NVCC=${NVCC:-nvcc}
if ! command -v "$NVCC" > /dev/null && [ -x /usr/local/cuda/bin/nvcc ]; then NVCC=/usr/local/cuda/bin/nvcc; fi
ARCH=${PGPU_BENCH_ARCH:-sm_90}

# build_baseline ROOT BUILD PROG LOG: compiles bench/baselines/PROG.cu into
# BUILD/PROG with nvcc for ARCH, its output in LOG.
build_baseline() {
  "$NVCC" -O3 -arch="$ARCH" -std=c++17 -o "$2/$3" "$1/bench/baselines/$3.cu" > "$4" 2>&1
}

trim() { local s=$1; s=${s#"${s%%[![:space:]]*}"}; s=${s%"${s##*[![:space:]]}"}; printf '%s' "$s"; }

# median of the bench-KEY lines of a file ("" when none; KEY default ms)
median_ms() {
  grep -E "^bench-${2:-ms} [0-9.eE+-]+\$" "$1" | awk '{print $2}' | sort -g |
    awk '{v[NR]=$1} END {if (NR==0) exit; if (NR%2) printf "%.4f", v[(NR+1)/2]; else printf "%.4f", (v[NR/2]+v[NR/2+1])/2}'
}

# a program's result lines: everything but the bench-* lines
results_of() { grep -v -E '^bench-' "$1" 2>/dev/null; }
