#!/usr/bin/env python3
"""GPU tests and timings of the generated list collectives.

Loads bench/collectives/out/libpgpu_coll.so (build.sh: every collective's
host functions with their PTX, plus a minimal mgpu* runtime on the CUDA
driver) and calls the generated host functions on cupy device arrays, so
the launch sequence under test is exactly the generated one. Results are
compared bit for bit with the CPU runtime's list collectives
(libpgpu_ref.so: pgpu_rt_list_* of backends/runtime) on host copies of the
same random inputs; float add/mul in tree order (the `_tree` modules) are
compared with a tolerance. Timings compare with torch (sum, cumsum, sort)
and a device-to-device copy.

    python3 bench/collectives/run_gpu.py correctness ELEM|large
    python3 bench/collectives/run_gpu.py timing

$PGPU_CHECKS (a regular expression) runs only the correctness checks whose
name it matches, e.g. PGPU_CHECKS=sort_idx. Progress goes to stdout; with $OUT set, results also go to
$OUT/collectives_<phase>.txt.
"""

import ctypes
import os
import re
import signal
import struct
import sys
import time

import cupy as cp
import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
OUTDIR = os.path.join(HERE, "out")

ELEMS = {
    # name: (numpy dtype, runtime code, bytes, ctypes scalar type)
    "i1": (np.uint8, 0, 1, ctypes.c_uint8),
    "i8": (np.int8, 1, 1, ctypes.c_int8),
    "i16": (np.int16, 2, 2, ctypes.c_int16),
    "i32": (np.int32, 3, 4, ctypes.c_int32),
    "i64": (np.int64, 4, 8, ctypes.c_int64),
    "index": (np.int64, 4, 8, ctypes.c_int64),
    "f32": (np.float32, 5, 4, ctypes.c_float),
    "f64": (np.float64, 6, 8, ctypes.c_double),
}
KINDS = ["add", "mul", "min", "max", "umin", "umax", "and", "or", "xor"]
FLOAT_KINDS = ["add", "mul", "min", "max"]
U64 = (1 << 64) - 1

log_lines = []


def log(*parts):
    line = " ".join(str(p) for p in parts)
    print(line, flush=True)
    log_lines.append(line)


def save(phase):
    out = os.environ.get("OUT")
    if out:
        with open(os.path.join(out, f"collectives_{phase}.txt"), "w") as f:
            f.write("\n".join(log_lines) + "\n")


# ----- libraries -------------------------------------------------------------

cp.cuda.Device(0).use()
cp.zeros(1).sum()  # creates the primary context
t0 = time.time()
LIB = ctypes.CDLL(os.path.join(OUTDIR, "libpgpu_coll.so"))
LOAD_SECONDS = time.time() - t0
REF = ctypes.CDLL(os.path.join(OUTDIR, "libpgpu_ref.so"))
LIB.pgpu_shim_errors.restype = ctypes.c_int
LIB.pgpu_shim_last_error.restype = ctypes.c_char_p
LIB.pgpu_shim_last_code.restype = ctypes.c_int
REF.pgpu_rt_list_reduce.restype = ctypes.c_uint64
REF.pgpu_rt_list_scan.restype = ctypes.c_uint64
REF.pgpu_rt_list_compact.restype = ctypes.c_int64
REF.pgpu_rt_list_split.restype = ctypes.c_int64
REF.pgpu_rt_list_expand.restype = ctypes.c_int64

I64 = ctypes.c_int64
VP = ctypes.c_void_p


def memref(array):
    """The five arguments of a rank-1 memref descriptor for a cupy array
    (aligned pointer of the underlying allocation plus element offset)."""
    if array.size == 0:
        p = VP(array.data.ptr or 256)
        return [p, p, I64(0), I64(0), I64(1)]
    base = array.data.ptr
    return [VP(base), VP(base), I64(0), I64(array.size), I64(1)]


def memref_offset(array, offset):
    """A memref<?xT> over array[offset:]: its aligned pointer is the first
    element (an identity-layout memref has offset 0), so the list is not
    16-byte aligned and the kernels take their unaligned path."""
    start = array.data.ptr + offset * array.itemsize
    return [VP(array.data.ptr), VP(start), I64(0), I64(array.size - offset), I64(1)]


def fn(symbol, restype):
    f = getattr(LIB, symbol)
    f.restype = restype
    return f


def hptr(a):
    return VP(a.ctypes.data if a.size else 8)


def bits_of(elem, value):
    if elem == "i1":
        return U64 if value & 1 else 0
    if elem == "f32":
        return struct.unpack("<I", struct.pack("<f", value))[0]
    if elem == "f64":
        return struct.unpack("<Q", struct.pack("<d", value))[0]
    return value & U64


def is_nan_bits(elem, bits):
    if elem == "f32":
        return (bits & 0x7F800000) == 0x7F800000 and (bits & 0x7FFFFF) != 0
    if elem == "f64":
        return (bits >> 52 & 0x7FF) == 0x7FF and (bits & ((1 << 52) - 1)) != 0
    return False


# ----- inputs ----------------------------------------------------------------

RNG = np.random.default_rng(12345)


SORT_DISTRIBUTION = 0


def values_for(elem, kind, n):
    dtype = ELEMS[elem][0]
    if elem == "i1":
        return RNG.choice(np.array([0, 1, 2, 255], dtype=np.uint8), size=n)
    if elem in ("f32", "f64"):
        if kind == "mul":
            x = 1.0 + (RNG.random(n) - 0.5) * 1e-3
        else:
            x = RNG.standard_normal(n) * 100.0
        x = x.astype(dtype)
        if n > 8 and kind in ("min", "max", "sort"):
            specials = np.array(
                [np.nan, -np.nan, np.inf, -np.inf, 0.0, -0.0, 1e-40, -1e-40], dtype=dtype
            )
            where = RNG.integers(0, n, size=max(1, n // 1000))
            x[where] = RNG.choice(specials, size=where.size)
        if kind == "sort" and n > 16:
            # Many equal keys, to test stability.
            x[RNG.integers(0, n, size=n // 4)] = dtype(3.5)
        return x
    info = np.iinfo(dtype)
    if kind == "mul":
        return RNG.integers(-3, 4, size=n).astype(dtype)
    if kind == "sort":
        # Key distributions in turn: the GPU sort skips digit passes in
        # which all keys agree (small non-negative keys, keys with zero low
        # bits, all keys equal), and must stay stable with many ties.
        global SORT_DISTRIBUTION
        SORT_DISTRIBUTION += 1
        which = SORT_DISTRIBUTION % 5
        if n <= 16 or which == 0:
            return RNG.integers(info.min, info.max, size=n, dtype=dtype, endpoint=True)
        if which == 1:
            return RNG.integers(-50, 50, size=n).astype(dtype)
        if which == 2:
            return RNG.integers(0, min(1000, int(info.max)), size=n).astype(dtype)
        if which == 3:
            shift = 8 if info.bits >= 16 else 0
            top = (int(info.max) >> shift) if shift else int(info.max)
            return (RNG.integers(0, min(top, 65535) + 1, size=n) << shift).astype(dtype)
        return np.full(n, 7, dtype=dtype)
    return RNG.integers(info.min, info.max, size=n, dtype=dtype, endpoint=True)


# ----- checks ----------------------------------------------------------------

failures = []
passes = 0


def fail(name, message):
    failures.append(f"{name}: {message}")
    if len(failures) <= 80:
        log("FAIL", name, message)
    else:
        log_lines.append(f"FAIL {name} {message}")


def ok():
    global passes
    passes += 1


def same_arrays(elem, kind, got, want, tree, scale=None):
    """got/want numpy arrays of the element dtype; `scale` bounds the
    rounding differences of tree-order float add (the prefix sums of the
    absolute values)."""
    if got.shape != want.shape:
        return f"shape {got.shape} != {want.shape}"
    if elem in ("f32", "f64"):
        ut = np.uint32 if elem == "f32" else np.uint64
        g, w = got.view(ut), want.view(ut)
        if tree and kind in ("add", "mul"):
            gf, wf = got.astype(np.float64), want.astype(np.float64)
            both_nan = np.isnan(gf) & np.isnan(wf)
            rel = 1e-3 if elem == "f32" else 1e-9
            if kind == "add" and scale is not None:
                bound = rel * np.maximum(scale, 1.0)
            else:
                bound = rel * np.maximum(np.abs(wf), 1e-30)
            bad = ~both_nan & ~(np.abs(gf - wf) <= bound) & ~(gf == wf)
        else:
            bad = g != w
            if kind in ("add", "mul"):
                bad &= ~(np.isnan(got) & np.isnan(want))
        if bad.any():
            i = int(np.argmax(bad))
            return f"{int(bad.sum())} differ, first at {i}: {got[i]!r} vs {want[i]!r}"
        return None
    if elem == "i1":
        got, want = got != 0, want != 0
    bad = got != want
    if bad.any():
        i = int(np.argmax(bad))
        return f"{int(bad.sum())} differ, first at {i}: {got[i]!r} vs {want[i]!r}"
    return None


def same_scalar(elem, kind, got_bits, want_bits, tree, total_abs=None):
    if got_bits == want_bits:
        return None
    if elem in ("f32", "f64") and kind in ("add", "mul"):
        if is_nan_bits(elem, got_bits) and is_nan_bits(elem, want_bits):
            return None
        if tree:
            fmt = "<f" if elem == "f32" else "<d"
            ifmt = "<I" if elem == "f32" else "<Q"
            g = struct.unpack(fmt, struct.pack(ifmt, got_bits))[0]
            w = struct.unpack(fmt, struct.pack(ifmt, want_bits))[0]
            scale = abs(w) if total_abs is None else max(total_abs, 1.0)
            if abs(g - w) <= (1e-3 if elem == "f32" else 1e-9) * scale:
                return None
            return f"{g!r} vs {w!r}"
    return f"bits {got_bits:#x} vs {want_bits:#x}"


# ----- the collectives ---------------------------------------------------------


def gpu_reduce(sym, elem, d_values, n, scratch=None):
    ct = ELEMS[elem][3]
    if scratch is None:
        return fn(sym, ct)(*memref(d_values), I64(n))
    return fn(sym + "_scratch", ct)(*memref(d_values), I64(n), *memref(scratch))


def gpu_scan(sym, elem, d_values, d_out, n, inclusive, scratch=None, values_ref=None):
    ct = ELEMS[elem][3]
    vin = values_ref if values_ref is not None else memref(d_values)
    args = [*vin, *memref(d_out), I64(n), ctypes.c_bool(inclusive)]
    if scratch is None:
        return fn(sym, ct)(*args)
    return fn(sym + "_scratch", ct)(*args, *memref(scratch))


def scratch_bytes(sym, n):
    return fn(sym + "_scratch_bytes", I64)(I64(n))


def check_reduce(elem, kind, n, tree=False):
    sym = f"pgpu_coll_reduce_{kind}_{elem}" + ("_tree" if tree else "")
    name = f"{sym}[n={n}]"
    x = values_for(elem, kind, n)
    d = cp.asarray(x)
    got = bits_of(elem, gpu_reduce(sym, elem, d, n))
    want = REF.pgpu_rt_list_reduce(KINDS.index(kind), ELEMS[elem][1], hptr(x), I64(n))
    total_abs = float(np.abs(x.astype(np.float64)).sum()) if tree and kind == "add" else None
    err = same_scalar(elem, kind, got, want, tree, total_abs)
    if err:
        fail(name, err)
    else:
        ok()


def check_scan(elem, kind, n, inclusive, tree=False, in_place=False, offset=0, packed=False):
    sym = f"pgpu_coll_scan_{kind}_{elem}" + ("_tree" if tree else "") + ("_packed" if packed else "")
    name = f"{sym}[n={n},incl={int(inclusive)},inplace={int(in_place)},offset={offset}]"
    x = values_for(elem, kind, n + offset)
    d = cp.asarray(x)
    if in_place:
        out = d
    else:
        out = cp.zeros(n, dtype=x.dtype)
    vin = memref_offset(d, offset) if offset else None
    if in_place and offset:
        raise ValueError("in-place with offset not supported by the harness")
    total = gpu_scan(sym, elem, d, out, n, inclusive, values_ref=vin)
    got_total = bits_of(elem, total)
    host = np.ascontiguousarray(x[offset:])
    want_out = np.zeros(n, dtype=x.dtype)
    want_total = REF.pgpu_rt_list_scan(
        KINDS.index(kind), ELEMS[elem][1], int(inclusive), hptr(host), hptr(want_out), I64(n)
    )
    got_out = cp.asnumpy(out)
    scale = None
    if tree and kind == "add":
        scale = np.cumsum(np.abs(host.astype(np.float64)))
    err = same_arrays(elem, kind, got_out, want_out, tree, scale)
    total_abs = float(np.abs(host.astype(np.float64)).sum()) if tree and kind == "add" else None
    err = err or same_scalar(elem, kind, got_total, want_total, tree, total_abs)
    if err:
        fail(name, err)
    else:
        ok()


def check_sort(elem, n, sorted_keys=False):
    """sort_idx against the CPU runtime; with `sorted_keys`, the variant that
    also writes the keys in sorted order, which must equal keys[indices]
    bit for bit."""
    sym = f"pgpu_coll_sort_idx_{'sorted_' if sorted_keys else ''}{elem}"
    name = f"{sym}[n={n}]"
    x = values_for(elem, "sort", n)
    d = cp.asarray(x)
    out = cp.full(n, -7, dtype=np.int64)
    if sorted_keys:
        keys_out = cp.asarray(values_for(elem, "sort", n))
        fn(sym, None)(*memref(d), *memref(out), I64(n), *memref(keys_out))
    else:
        fn(sym, None)(*memref(d), *memref(out), I64(n))
    want = np.zeros(n, dtype=np.int64)
    REF.pgpu_rt_list_sort_idx(ELEMS[elem][1], hptr(x), hptr(want), I64(n))
    got = cp.asnumpy(out)
    if not np.array_equal(got, want):
        bad = got != want
        i = int(np.argmax(bad))
        fail(name, f"{int(bad.sum())} differ, first at {i}: {got[i]} vs {want[i]}")
    elif sorted_keys and not np.array_equal(cp.asnumpy(keys_out).view(np.uint8),
                                            x[want].view(np.uint8)):
        fail(name, "sorted keys differ from keys[indices]")
    else:
        ok()


def check_partition(elem, n, split, base, density, packed=False):
    sym = f"pgpu_coll_{'split' if split else 'compact'}_{elem}" + ("_packed" if packed else "")
    name = f"{sym}[n={n},base={base},density={density}]"
    x = values_for(elem, "add", n)
    flags = (RNG.random(n) < density).astype(np.uint8) * RNG.choice(
        np.array([1, 2, 255], dtype=np.uint8), size=n
    )
    size = base + n + 5
    sentinel = values_for(elem, "add", size)
    d = cp.asarray(x)
    df = cp.asarray(flags)
    dl = cp.asarray(sentinel)
    got_len = fn(sym, I64)(*memref(d), *memref(df), *memref(dl), I64(n), I64(base))
    want_list = sentinel.copy()
    f = REF.pgpu_rt_list_split if split else REF.pgpu_rt_list_compact
    want_len = f(I64(ELEMS[elem][2]), hptr(x), hptr(flags), hptr(want_list), I64(n), I64(base))
    got_list = cp.asnumpy(dl)
    if got_len != want_len:
        fail(name, f"length {got_len} vs {want_len}")
        return
    g = got_list.view(np.uint8)
    w = want_list.view(np.uint8)
    if not np.array_equal(g, w):
        bad = got_list.view(np.uint8) != want_list.view(np.uint8)
        i = int(np.argmax(bad)) // ELEMS[elem][2]
        fail(name, f"list differs at {i}: {got_list[i]!r} vs {want_list[i]!r}")
    else:
        ok()


def check_expand(elem, n, spread, packed=False):
    sym = f"pgpu_coll_expand_{elem}" + ("_packed" if packed else "")
    name = f"{sym}[n={n},spread={spread}]"
    dtype = ELEMS[elem][0]
    if elem == "i1":
        counts = RNG.choice(np.array([0, 1, 255], dtype=np.uint8), size=n)
    elif spread == "skewed":
        counts = np.zeros(n, dtype=dtype)
        if n:
            counts[RNG.integers(0, n, size=min(n, 3))] = min(100, np.iinfo(dtype).max)
            counts[RNG.integers(0, n, size=n // 7 + 1)] = -1
    else:
        counts = RNG.integers(-2, 6, size=n).astype(dtype)
    total = int(np.maximum(counts.astype(np.int64) if elem != "i1" else -(counts != 0).astype(np.int64), 0).sum())
    want_parents = np.zeros(max(total, 1), dtype=np.int64)
    want_children = np.zeros(max(total, 1), dtype=dtype)
    m_want = REF.pgpu_rt_list_expand(
        ELEMS[elem][1], hptr(counts), hptr(want_parents), hptr(want_children), I64(n)
    )
    d = cp.asarray(counts)
    dp = cp.full(max(total, 1), -5, dtype=np.int64)
    dc = cp.zeros(max(total, 1), dtype=dtype)
    m_got = fn(sym, I64)(*memref(d), *memref(dp), *memref(dc), I64(n))
    if m_got != m_want:
        fail(name, f"total {m_got} vs {m_want}")
        return
    gp, gc = cp.asnumpy(dp)[:m_want], cp.asnumpy(dc)[:m_want]
    if not np.array_equal(gp, want_parents[:m_want]) or not np.array_equal(
        gc.view(np.uint8), want_children[:m_want].view(np.uint8)
    ):
        bad = gp != want_parents[:m_want]
        i = int(np.argmax(bad)) if bad.any() else -1
        fail(name, f"parents/children differ (first parent diff at {i})")
    else:
        ok()


class Sticky(Exception):
    """The CUDA context is unusable: this process cannot test any more."""


# PGPU_CHECKS: a regular expression; only checks whose name matches run.
CHECK_FILTER = re.compile(os.environ.get("PGPU_CHECKS", ""))


def run_check(name, check, *args):
    if not CHECK_FILTER.search(name):
        return
    before = LIB.pgpu_shim_errors()
    try:
        check(*args)
    except Exception as e:  # noqa: BLE001
        fail(name, repr(e))
        if "cudaError" in repr(e) or "CUDA_ERROR" in repr(e):
            raise Sticky(name) from e
    if LIB.pgpu_shim_errors() != before:
        message = LIB.pgpu_shim_last_error().decode()
        fail(name, "shim: " + message)
        if LIB.pgpu_shim_last_code() in (700, 701, 702, 710, 715, 716, 719, 720):
            raise Sticky(name)


SIZES = [0, 1, 2, 3, 31, 33, 255, 1000, 2047, 2048, 2049, 4095, 4096, 4097, 16389,
         65535, 65536, 65537, 131089, 1_000_003]


def correctness(which):
    """`which`: an element type name, or "large"."""
    started = time.time()
    if which == "large":
        for elem, kind in (("i32", "add"), ("f32", "add"), ("f32", "max"), ("i64", "add")):
            n = (1 << 24) + 3
            run_check(f"reduce_{kind}_{elem}[large]", check_reduce, elem, kind, n)
            run_check(f"scan_{kind}_{elem}[large]", check_scan, elem, kind, n, False)
            run_check(f"scan_{kind}_{elem}_packed[large]", check_scan, elem, kind, n, False,
                      False, False, 0, True)
        run_check("scan_add_f32_tree[large]", check_scan, "f32", "add", 1 << 24, True, True)
        run_check("reduce_add_f32_tree[large]", check_reduce, "f32", "add", 1 << 24, True)
        for elem in ("i32", "f32", "f64", "i16"):
            run_check(f"sort_idx_{elem}[large]", check_sort, elem, (1 << 24) + 1)
        for packed in (False, True):
            run_check("compact_i32[large]", check_partition, "i32", 1 << 24, False, 5, 0.5, packed)
            run_check("split_f64[large]", check_partition, "f64", 1 << 24, True, 0, 0.3, packed)
            run_check("expand_i32[large]", check_expand, "i32", 1 << 22, "uniform", packed)
    else:
        elem = which
        kinds = FLOAT_KINDS if elem in ("f32", "f64") else KINDS
        for kind in kinds:
            sizes = SIZES if kind in ("add", "min", "max") else SIZES[:-1]
            for tree in ([False, True] if elem in ("f32", "f64") else [False]):
                sym = f"pgpu_coll_reduce_{kind}_{elem}" + ("_tree" if tree else "")
                for n in sizes:
                    run_check(f"{sym}[n={n}]", check_reduce, elem, kind, n, tree)
                for packed in (False, True):
                    sym = (f"pgpu_coll_scan_{kind}_{elem}" + ("_tree" if tree else "")
                           + ("_packed" if packed else ""))
                    for n in sizes:
                        for inclusive in (False, True):
                            run_check(f"{sym}[n={n},incl={inclusive}]", check_scan,
                                      elem, kind, n, inclusive, tree, False, 0, packed)
                    run_check(f"{sym}[in place]", check_scan, elem, kind, 100_003, True, tree,
                              True, 0, packed)
                    run_check(f"{sym}[offset 1]", check_scan, elem, kind, 100_003, False, tree,
                              False, 1, packed)
                    run_check(f"{sym}[offset 3]", check_scan, elem, kind, 70_001, True, tree,
                              False, 3, packed)
            log(f"{elem} {kind}: {passes} passed, {len(failures)} failed, {time.time() - started:.0f}s")
        sym = f"pgpu_coll_sort_idx_{elem}"
        for n in SIZES + [3_000_017]:
            run_check(f"{sym}[n={n}]", check_sort, elem, n)
            if elem not in ("f32", "f64", "i1"):
                run_check(f"{sym}_sorted[n={n}]", check_sort, elem, n, True)
        for packed in (False, True):
            for split in (False, True):
                sym = f"pgpu_coll_{'split' if split else 'compact'}_{elem}" + (
                    "_packed" if packed else "")
                for n in SIZES:
                    for base, density in ((0, 0.5), (7, 0.1), (3, 1.0), (0, 0.0)):
                        run_check(f"{sym}[n={n},base={base},density={density}]",
                                  check_partition, elem, n, split, base, density, packed)
            sym = f"pgpu_coll_expand_{elem}" + ("_packed" if packed else "")
            if elem not in ("f32", "f64"):
                for n in SIZES:
                    for spread in ("uniform", "skewed"):
                        run_check(f"{sym}[n={n},{spread}]", check_expand, elem, n, spread, packed)
    log(f"correctness {which}: {passes} passed, {len(failures)} failed in {time.time() - started:.0f}s"
        f" (library load {LOAD_SECONDS:.1f}s, shim errors {LIB.pgpu_shim_errors()})")
    for f in failures[:15]:
        log("  ", f)


# ----- timing ----------------------------------------------------------------


def bench(call, reps=15, warmup=3):
    for _ in range(warmup):
        call()
    cp.cuda.Device().synchronize()
    times = []
    for _ in range(reps):
        cp.cuda.Device().synchronize()
        t = time.perf_counter()
        call()
        cp.cuda.Device().synchronize()
        times.append(time.perf_counter() - t)
    times.sort()
    return times[len(times) // 2]


def event_time(call, reps=15, warmup=3):
    """Median time of call() between CUDA events on the legacy default stream
    (which waits for the blocking stream our host functions create)."""
    for _ in range(warmup):
        call()
    times = []
    for _ in range(reps):
        a, b = cp.cuda.Event(), cp.cuda.Event()
        a.record(cp.cuda.Stream.null)
        call()
        b.record(cp.cuda.Stream.null)
        b.synchronize()
        times.append(cp.cuda.get_elapsed_time(a, b) / 1e3)
    times.sort()
    return times[len(times) // 2]


def timing():
    import torch

    log(f"library load {LOAD_SECONDS:.1f}s")
    n = 1 << 28
    src = cp.random.randint(-1000, 1000, size=n, dtype=np.int32)
    dst = cp.empty_like(src)
    copy_kernel = bench(lambda: dst.__setitem__(Ellipsis, src))
    copy_memcpy = bench(
        lambda: cp.cuda.runtime.memcpy(dst.data.ptr, src.data.ptr, src.nbytes, 3)
    )
    copy_s = min(copy_kernel, copy_memcpy)
    copy_bw = 2 * src.nbytes / copy_s
    log(f"device copy 1 GiB: kernel {copy_kernel * 1e3:.3f} ms, cudaMemcpy {copy_memcpy * 1e3:.3f} ms;"
        f" copy bandwidth {copy_bw / 1e9:.0f} GB/s (read+write)")
    read_bytes = src.nbytes

    def report(name, seconds, moved, torch_s=None):
        bw = moved / seconds
        line = f"{name}: {seconds * 1e3:.3f} ms, {bw / 1e9:.0f} GB/s = {100 * bw / copy_bw:.0f}% of copy"
        if torch_s is not None:
            line += f"; torch {torch_s * 1e3:.3f} ms (ours/torch {seconds / torch_s:.2f})"
        log(line)

    for elem, kind, dtype, tdtype in (
        ("i32", "add", np.int32, torch.int32),
        ("f32", "add", np.float32, torch.float32),
        ("f32", "max", np.float32, torch.float32),
    ):
        x = src.astype(dtype) if elem == "i32" else cp.random.standard_normal(n, dtype=np.float32)
        tx = torch.as_tensor(x, device="cuda")
        for tree in ([False, True] if elem == "f32" and kind == "add" else [False]):
            sym = f"pgpu_coll_reduce_{kind}_{elem}" + ("_tree" if tree else "")
            scratch = cp.empty(scratch_bytes(sym, n), dtype=np.uint8)
            s = bench(lambda: gpu_reduce(sym, elem, x, n, scratch))
            t = bench(lambda: torch.sum(tx) if kind == "add" else torch.max(tx))
            report(f"{sym} 256M", s, read_bytes, t)
            if kind == "add":
                t = bench(lambda: torch.cumsum(tx, 0, dtype=tdtype))
            else:
                t = bench(lambda: torch.cummax(tx, 0))
            variants = ["", "_packed"] if (elem != "f32" or kind != "add" or tree) else [""]
            for variant in variants:
                sym = f"pgpu_coll_scan_{kind}_{elem}" + ("_tree" if tree else "") + variant
                out = cp.empty_like(x)
                scratch = cp.empty(scratch_bytes(sym, n), dtype=np.uint8)
                s = bench(lambda: gpu_scan(sym, elem, x, out, n, False, scratch))
                report(f"{sym} 256M (exclusive)", s, 2 * read_bytes, t)
        del x, tx
    # Event timing of one case, to see the host-side overhead.
    x = src
    sym = "pgpu_coll_scan_add_i32"
    out = cp.empty_like(x)
    scratch = cp.empty(scratch_bytes(sym, n), dtype=np.uint8)
    s = event_time(lambda: gpu_scan(sym, "i32", x, out, n, False, scratch))
    report(f"{sym} 256M (event timed)", s, 2 * read_bytes)
    del out, scratch
    # Sort.
    m = 1 << 24
    for elem, dtype in (("i32", np.int32), ("f32", np.float32), ("i64", np.int64)):
        if elem == "f32":
            keys = cp.random.standard_normal(m, dtype=np.float32)
        else:
            keys = cp.random.randint(-(1 << 30), 1 << 30, size=m, dtype=dtype)
        tk = torch.as_tensor(keys, device="cuda")
        sym = f"pgpu_coll_sort_idx_{elem}"
        idx = cp.empty(m, dtype=np.int64)
        scratch = cp.empty(scratch_bytes(sym, m), dtype=np.uint8)
        f = fn(sym + "_scratch", None)
        s = bench(lambda: f(*memref(keys), *memref(idx), I64(m), *memref(scratch)))
        t = bench(lambda: torch.sort(tk))
        ts = bench(lambda: torch.sort(tk, stable=True))
        log(f"{sym} 16M: {s * 1e3:.3f} ms; torch.sort {t * 1e3:.3f} ms, stable {ts * 1e3:.3f} ms;"
            f" ours/torch {s / t:.2f}, ours/stable {s / ts:.2f}")
        if elem == "i32":
            s_all = bench(lambda: fn(sym, None)(*memref(keys), *memref(idx), I64(m)))
            log(f"{sym} 16M with its own gpu.alloc: {s_all * 1e3:.3f} ms")
        del keys, tk, idx, scratch
    # Compact, split, expand.
    n = 1 << 26
    vals = cp.random.randint(0, 1000, size=n, dtype=np.int32)
    flags = (cp.random.random(n) < 0.5).astype(np.uint8)
    lst = cp.empty(n, dtype=np.int32)
    tv = torch.as_tensor(vals, device="cuda")
    tf = torch.as_tensor(flags, device="cuda").bool()
    for what in ("compact", "split", "compact_packed", "split_packed"):
        sym = f"pgpu_coll_{what.replace('_packed', '')}_i32" + ("_packed" if "packed" in what else "")
        scratch = cp.empty(scratch_bytes(sym, n), dtype=np.uint8)
        f = fn(sym + "_scratch", I64)
        s = bench(lambda: f(*memref(vals), *memref(flags), *memref(lst), I64(n), I64(0), *memref(scratch)))
        t = bench(lambda: tv[tf])
        log(f"{sym} 64M: {s * 1e3:.3f} ms ({(n * 5 + n * 2) / s / 1e9:.0f} GB/s); torch boolean mask {t * 1e3:.3f} ms")
    counts = cp.random.randint(0, 4, size=1 << 24, dtype=np.int32)
    total = int(counts.sum())
    parents = cp.empty(total, dtype=np.int64)
    children = cp.empty(total, dtype=np.int32)
    sym = "pgpu_coll_expand_i32"
    scratch = cp.empty(scratch_bytes(sym, counts.size), dtype=np.uint8)
    f = fn(sym + "_scratch", I64)
    s = bench(lambda: f(*memref(counts), *memref(parents), *memref(children), I64(counts.size), *memref(scratch)))
    tc = torch.as_tensor(counts, device="cuda")
    tl = tc.long()
    t = bench(lambda: torch.repeat_interleave(torch.arange(tc.numel(), device="cuda"), tl))
    log(f"{sym} 16M parents, {total} children: {s * 1e3:.3f} ms; torch.repeat_interleave {t * 1e3:.3f} ms")
    log(f"shim errors: {LIB.pgpu_shim_errors()}")


if __name__ == "__main__":
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(124))
    phase = sys.argv[1] if len(sys.argv) > 1 else "correctness"
    which = sys.argv[2] if len(sys.argv) > 2 else "i32"
    try:
        if phase == "correctness":
            try:
                correctness(which)
            except Sticky as e:
                log(f"ABORT {which}: the CUDA context is lost after {e};"
                    f" {passes} passed, {len(failures)} failed")
                for f in failures[:15]:
                    log("  ", f)
        else:
            timing()
    finally:
        save(phase if phase != "correctness" else f"correctness_{which}")
