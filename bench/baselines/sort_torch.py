#!/usr/bin/env python3
"""torch.sort reference for sort_idx / sortby on 32-bit keys (issue 5: pgpu
within 1.5x of its time).

What it measures: torch.sort(keys, stable=True) of N (default 16M) int32
keys on the GPU, returning the sorted values and the indices (sort_idx
semantics: indices[i] = position of the i-th smallest key, equal keys in
position order; torch's indices are int64). Median of REPS runs after 3
warm-ups, each between two CUDA events. The keys are those of
bench/gpu/src/sort.bsgp and sort_cub.cu: rand_seed(7), keys[i] =
(int)rand_u32() (the runtime's SplitMix64, computed here on the GPU with
wrapping int64 arithmetic and checked against a pure-Python SplitMix64).

Prints the same result line as sort.bsgp and sort_cub
("sort n N keys-checksum K idx-checksum I"), "verify ok" on stderr when the
result is the stable sort of the input (exit 1 if not), then the bench-*
lines of bench/baselines/common.h: bench-ms (median), bench-wall-ms (median
host time from before the start event to the stop event's synchronize),
bench-kernels (GPU
kernels of one call, from torch.profiler; -1 when the profiler is not
usable), bench-temp-bytes (peak allocator bytes of one call beyond its
input and outputs).

Run (the GPU machine; bench/gpu/run.sh does this):
  python3 bench/baselines/sort_torch.py [N] [REPS]     # default 16777216 50
"""
import sys
import time

import torch

GAMMA = 0x9E3779B97F4A7C15
MIX1 = 0xBF58476D1CE4E5B9
MIX2 = 0x94D049BB133111EB
MASK64 = (1 << 64) - 1


def signed64(v):
    return v - (1 << 64) if v >= 1 << 63 else v


def splitmix_python(seed, count):
    """The first `count` numbers of rand_seed(seed); rand_u32() as int32."""
    out = []
    state = seed & MASK64
    for _ in range(count):
        state = (state + GAMMA) & MASK64
        z = state
        z = ((z ^ (z >> 30)) * MIX1) & MASK64
        z = ((z ^ (z >> 27)) * MIX2) & MASK64
        z ^= z >> 31
        v = z >> 32
        out.append(v - (1 << 32) if v >= 1 << 31 else v)
    return out


def median(values):
    v = sorted(values)
    h = len(v) // 2
    return v[h] if len(v) % 2 else 0.5 * (v[h - 1] + v[h])


def lsr(z, s):
    """Logical right shift of int64 tensor bits."""
    return (z >> s) & ((1 << (64 - s)) - 1)


def splitmix_torch(seed, n, device):
    """keys[i] = (int32) the (i+1)-th rand_u32() after rand_seed(seed)."""
    k = torch.arange(1, n + 1, dtype=torch.int64, device=device)
    z = k * signed64(GAMMA) + signed64(seed)  # wraps modulo 2^64
    z = (z ^ lsr(z, 30)) * signed64(MIX1)
    z = (z ^ lsr(z, 27)) * signed64(MIX2)
    z = z ^ lsr(z, 31)
    return (z >> 32).to(torch.int32)  # the high 32 bits


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 16777216
    reps = int(sys.argv[2]) if len(sys.argv) > 2 else 50
    dev = torch.device("cuda")
    print(f"device: {torch.cuda.get_device_name(dev)}, torch {torch.__version__}",
          file=sys.stderr)

    keys = splitmix_torch(7, n, dev)
    head = splitmix_python(7, min(n, 8))
    if keys[: len(head)].tolist() != head:
        print("verify FAILED: GPU SplitMix64 keys differ from the Python reference",
              file=sys.stderr)
        return 1

    def run():
        return torch.sort(keys, stable=True)

    values, indices = run()
    torch.cuda.synchronize()
    pos = torch.arange(n, dtype=torch.int64, device=dev)
    ok = bool((keys[indices] == values).all())
    ok = ok and bool((values[1:] >= values[:-1]).all())
    ties = values[1:] == values[:-1]
    ok = ok and bool((indices[1:][ties] > indices[:-1][ties]).all())
    seen = torch.zeros(n, dtype=torch.int32, device=dev)
    seen[indices] = 1
    ok = ok and int(seen.sum()) == n
    keys_sum = int((values.to(torch.int64) * (pos % 13 + 1)).sum())
    idx_sum = int((indices * (pos % 7 + 1)).sum())
    print(f"sort n {n} keys-checksum {keys_sum} idx-checksum {idx_sum}")
    if not ok:
        print("verify FAILED: not the stable sort of the keys", file=sys.stderr)
        return 1
    print("verify ok", file=sys.stderr)
    del values, indices, pos, ties, seen

    # Temporary memory of one call: the allocator's peak beyond the input
    # and the two outputs (n * 4 + n * 8 bytes).
    torch.cuda.synchronize()
    base = torch.cuda.memory_allocated(dev)
    torch.cuda.reset_peak_memory_stats(dev)
    out = run()
    torch.cuda.synchronize()
    temp = torch.cuda.max_memory_allocated(dev) - base - n * 4 - n * 8
    del out

    start = torch.cuda.Event(enable_timing=True)
    stop = torch.cuda.Event(enable_timing=True)
    for _ in range(3):
        run()
    torch.cuda.synchronize()
    times, walls = [], []
    for _ in range(reps):
        t0 = time.perf_counter()
        start.record()
        run()
        stop.record()
        stop.synchronize()
        walls.append((time.perf_counter() - t0) * 1000.0)
        times.append(start.elapsed_time(stop))
    ms = median(times)
    wall_ms = median(walls)

    kernels = -1
    try:
        from torch.profiler import ProfilerActivity, profile

        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            run()
            torch.cuda.synchronize()
        names = [e.name for e in prof.events()
                 if str(getattr(e, "device_type", "")).endswith("CUDA")]
        kernels = sum(1 for s in names if not s.startswith(("Memset", "Memcpy")))
        if kernels == 0:
            kernels = -1
    except Exception as err:  # the profiler (CUPTI) may be unavailable
        print(f"kernel count unavailable: {err}", file=sys.stderr)

    print(f"bench-ms {ms:.4f}")
    print(f"bench-wall-ms {wall_ms:.4f}")
    print(f"bench-kernels {kernels}")
    print(f"bench-temp-bytes {temp}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
