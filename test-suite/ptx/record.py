#!/usr/bin/env python3
"""Run the PTX test kernels on an NVIDIA GPU and record their outputs.

For every case in cases.txt this loads nvcc/<stem>.ptx (made by compile.sh)
with cupy, builds the arguments from the case's description, launches the
kernel once, and writes expected/<case>.out with the contents of every buffer
argument after the launch. Kernels with a numpy reference (see REFERENCES)
are checked against it; any mismatch makes the script exit with status 1
(the .out files are written all the same, so they can be looked at).

  python3 record.py                       # all cases
  python3 record.py --only vector_add_5000 --only scan_block_1000
  python3 record.py --variant sm_75        # run nvcc/<stem>.sm_75.ptx and
                                           # compare with expected/ instead
                                           # of writing it
  python3 record.py --self-test            # no GPU: check the generator,
                                           # the cases and the references

Needs numpy, and cupy for anything but --self-test. README.md describes the
cases format, the generator and the .out format.
"""

import argparse
import os
import re
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))

# ---------------------------------------------------------------------------
# Types, cases

DTYPES = {
    "i8": np.int8,
    "u8": np.uint8,
    "i16": np.int16,
    "u16": np.uint16,
    "i32": np.int32,
    "u32": np.uint32,
    "i64": np.int64,
    "u64": np.uint64,
    "f32": np.float32,
    "f64": np.float64,
}
SCALAR_TYPES = ("i32", "u32", "i64", "u64", "f32", "f64")
UNSIGNED_OF = {"i8": np.uint8, "i16": np.uint16, "i32": np.uint32, "i64": np.uint64}


class CaseError(Exception):
    pass


class Scalar:
    def __init__(self, ty, text):
        self.ty = ty
        self.text = text
        if ty in ("f32", "f64"):
            self.value = DTYPES[ty](float(text))
        else:
            v = int(text, 0)
            bits = np.dtype(DTYPES[ty]).itemsize * 8
            lo, hi = (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if ty[0] == "i" else (0, (1 << bits) - 1)
            if not lo <= v <= hi:
                raise CaseError(f"scalar {ty}:{text} out of range")
            self.value = DTYPES[ty](v)

    def __str__(self):
        return f"{self.ty}:{self.text}"


class Buffer:
    def __init__(self, ty, count, init, params):
        self.ty = ty
        self.count = count
        self.init = init  # "zero", "iota", "rand", "randmod"
        self.params = params  # () / (seed,) / (seed, m)

    def __str__(self):
        p = "" if not self.params else "(" + ",".join(str(x) for x in self.params) + ")"
        return f"{self.ty}[{self.count}]:{self.init}{p}"


class Ref:
    """ref(N): the device address of buffer argument N again."""

    def __init__(self, index):
        self.index = index

    def __str__(self):
        return f"ref({self.index})"


class Case:
    def __init__(self, name, stem, kernel, grid, block, shared, args, lineno):
        self.name = name
        self.stem = stem
        self.kernel = kernel
        self.grid = grid
        self.block = block
        self.shared = shared
        self.args = args
        self.lineno = lineno

    def scalar(self, index):
        arg = self.args[index]
        assert isinstance(arg, Scalar), f"{self.name}: arg {index} is not a scalar"
        return arg.value.item()


NAME_RE = re.compile(r"^[A-Za-z0-9_.-]+$")
BUFFER_RE = re.compile(r"^([a-z0-9]+)\[(\d+)\]:([a-z]+)(?:\(([^()]*)\))?$")


def parse_dim3(text, what):
    parts = text.split(",")
    if len(parts) != 3:
        raise CaseError(f"{what} must be x,y,z: {text!r}")
    try:
        dims = tuple(int(p) for p in parts)
    except ValueError:
        raise CaseError(f"{what} must be three integers: {text!r}")
    if any(d < 1 for d in dims):
        raise CaseError(f"{what} components must be >= 1: {text!r}")
    return dims


def parse_arg(text):
    ref = re.match(r"^ref\((\d+)\)$", text)
    if ref:
        return Ref(int(ref.group(1)))
    m = BUFFER_RE.match(text)
    if m:
        ty, count, init, params = m.group(1), int(m.group(2)), m.group(3), m.group(4)
        if ty not in DTYPES:
            raise CaseError(f"unknown buffer type {ty!r} in {text!r}")
        params = tuple(int(p, 0) for p in params.split(",")) if params else ()
        want = {"zero": 0, "iota": 0, "rand": 1, "randmod": 2}
        if init not in want:
            raise CaseError(f"unknown initializer {init!r} in {text!r}")
        if len(params) != want[init]:
            raise CaseError(f"{init} takes {want[init]} parameter(s): {text!r}")
        if init == "randmod" and (ty.startswith("f") or params[1] < 1):
            raise CaseError(f"randmod needs an integer type and M >= 1: {text!r}")
        if params and not 0 <= params[0] < (1 << 64):
            raise CaseError(f"seed out of u64 range: {text!r}")
        return Buffer(ty, count, init, params)
    ty, sep, value = text.partition(":")
    if sep and ty in SCALAR_TYPES:
        try:
            return Scalar(ty, value)
        except ValueError:
            raise CaseError(f"bad scalar value {text!r}")
    raise CaseError(f"cannot parse argument {text!r}")


def parse_cases(path):
    cases = []
    seen = set()
    with open(path) as f:
        for lineno, line in enumerate(f, 1):
            line = line.split("#", 1)[0].strip()
            if not line:
                continue
            tok = line.split()
            try:
                if len(tok) < 6:
                    raise CaseError("expected: name stem kernel grid block shared args...")
                name, stem, kernel = tok[0], tok[1], tok[2]
                for t in (name, kernel):
                    if not NAME_RE.match(t):
                        raise CaseError(f"bad name {t!r}")
                # A stem may name a directory beside the cases file.
                if not all(NAME_RE.match(part) for part in stem.split("/")) or ".." in stem.split("/"):
                    raise CaseError(f"bad PTX stem {stem!r}")
                if name in seen:
                    raise CaseError(f"duplicate case name {name!r}")
                seen.add(name)
                grid = parse_dim3(tok[3], "grid")
                block = parse_dim3(tok[4], "block")
                shared = int(tok[5])
                args = [parse_arg(a) for a in tok[6:]]
            except CaseError as e:
                raise CaseError(f"{path}:{lineno}: {e}")
            cases.append(Case(name, stem, kernel, grid, block, shared, args, lineno))
    return cases


# ---------------------------------------------------------------------------
# The generator: splitmix64

MASK64 = (1 << 64) - 1
GAMMA = 0x9E3779B97F4A7C15


def splitmix64_py(seed, count):
    """Reference implementation with Python integers (used by --self-test)."""
    state = seed & MASK64
    out = []
    for _ in range(count):
        state = (state + GAMMA) & MASK64
        z = state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK64
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK64
        out.append(z ^ (z >> 31))
    return out


def splitmix64(seed, count):
    """The first `count` outputs of splitmix64 seeded with `seed`, as uint64."""
    with np.errstate(over="ignore"):
        k = np.arange(1, count + 1, dtype=np.uint64)
        z = np.uint64(seed) + k * np.uint64(GAMMA)
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        return z ^ (z >> np.uint64(31))


def from_u64(raw, ty):
    """Truncate uint64 values to the integer type ty (two's complement)."""
    dtype = np.dtype(DTYPES[ty])
    bits = dtype.itemsize * 8
    if bits < 64:
        raw = raw & np.uint64((1 << bits) - 1)
    unsigned = UNSIGNED_OF.get(ty, DTYPES[ty])
    return raw.astype(unsigned).view(dtype)


def make_buffer(buf):
    dtype = DTYPES[buf.ty]
    n = buf.count
    if buf.init == "zero":
        return np.zeros(n, dtype=dtype)
    if buf.init == "iota":
        if buf.ty.startswith("f"):
            return np.arange(n, dtype=dtype)
        return from_u64(np.arange(n, dtype=np.uint64), buf.ty)
    raw = splitmix64(buf.params[0], n)
    if buf.init == "rand":
        if buf.ty == "f32":
            return (raw >> np.uint64(40)).astype(np.float32) * np.float32(2.0**-24)
        if buf.ty == "f64":
            return (raw >> np.uint64(11)).astype(np.float64) * np.float64(2.0**-53)
        return from_u64(raw, buf.ty)
    if buf.init == "randmod":
        return from_u64(raw % np.uint64(buf.params[1]), buf.ty)
    raise AssertionError(buf.init)


def make_inputs(case):
    """Host values of all arguments: numpy arrays for buffers, numpy scalars for scalars."""
    return [make_buffer(a) if isinstance(a, Buffer) else None if isinstance(a, Ref) else a.value
            for a in case.args]


# ---------------------------------------------------------------------------
# Output format

def format_values(arr, ty):
    if ty in ("f32", "f64"):
        vals = [repr(float(x)) for x in arr.tolist()]
    else:
        vals = [str(int(x)) for x in arr.tolist()]
    lines = [" ".join(vals[i:i + 8]) for i in range(0, len(vals), 8)]
    return "".join(line + "\n" for line in lines)


def format_case(case, values):
    parts = [f"case {case.name} kernel {case.kernel}\n"]
    for index, (arg, val) in enumerate(zip(case.args, values)):
        if isinstance(arg, Buffer):
            parts.append(f"arg {index} {arg.ty}[{arg.count}]\n")
            parts.append(format_values(val, arg.ty))
    return "".join(parts)


def write_atomically(path, text):
    directory = os.path.dirname(path)
    os.makedirs(directory, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix="." + os.path.basename(path) + ".", dir=directory)
    try:
        with os.fdopen(fd, "w") as f:
            f.write(text)
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)  # mkstemp makes 0600
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


# ---------------------------------------------------------------------------
# numpy references
#
# A reference gets the case and the arguments before the launch and returns
# {argument index: expected array after the launch}, or for a float output
# (expected array, absolute tolerance); None as the expectation means "not
# checked here" (see EXTRA_CHECKS). Buffer arguments it does not mention must
# come back unchanged.


def threads_1d(case):
    assert case.grid[1:] == (1, 1) and case.block[1:] == (1, 1), f"{case.name}: 1D launch expected"
    return case.grid[0], case.block[0]


def ref_vector_add(case, a):
    n = case.scalar(3)
    c = a[2].copy()
    c[:n] = a[0][:n] + a[1][:n]
    return {2: c}


def ref_transpose(case, a):
    width, height = case.scalar(2), case.scalar(3)
    out = a[0].copy()
    src = a[1][:width * height].reshape(height, width)
    out[:width * height] = src.T.reshape(-1)
    return {0: out}


def ref_histogram_partial(case, a):
    gd, bd = threads_1d(case)
    n = case.scalar(1)
    words = a[0][:n].astype(np.uint64)
    block_of = (np.arange(n) % (bd * gd)) // bd
    hist = np.zeros((gd, 256), dtype=np.uint64)
    for shift in (0, 8, 16, 24):
        np.add.at(hist, (block_of, ((words >> np.uint64(shift)) & np.uint64(0xFF)).astype(np.int64)), 1)
    out = a[2].copy()
    out[:gd * 256] = hist.reshape(-1).astype(np.uint32)
    return {2: out}


def ref_histogram_merge(case, a):
    n_partials = case.scalar(1)
    partial = a[0][:n_partials * 256].reshape(n_partials, 256).astype(np.uint64)
    out = a[2].copy()
    out[:256] = (partial.sum(axis=0) & np.uint64(0xFFFFFFFF)).astype(np.uint32)
    return {2: out}


def ref_scan_block(case, a):
    gd, _ = threads_1d(case)
    seg = a[0][:gd * 1024].reshape(gd, 1024).astype(np.uint64)
    incl = np.cumsum(seg, axis=1) & np.uint64(0xFFFFFFFF)
    excl = np.zeros_like(incl)
    excl[:, 1:] = incl[:, :-1]
    out = a[1].copy()
    out[:gd * 1024] = excl.reshape(-1).astype(np.uint32)
    sums = a[2].copy()
    sums[:gd] = incl[:, -1].astype(np.uint32)
    return {1: out, 2: sums}


def ref_scan_add_offsets(case, a):
    gd, _ = threads_1d(case)
    data = a[0].copy()
    with np.errstate(over="ignore"):
        data[:gd * 1024] = data[:gd * 1024] + np.repeat(a[1][:gd], 1024)
    return {0: data}


def ref_scan_warp_shfl(case, a):
    gd, bd = threads_1d(case)
    n = gd * bd
    seg = a[0][:n].view(np.uint32).astype(np.uint64).reshape(-1, 32)
    incl = (np.cumsum(seg, axis=1) & np.uint64(0xFFFFFFFF)).astype(np.uint32).view(np.int32)
    out = a[1].copy()
    out[:n] = incl.reshape(-1)
    return {1: out}


def ref_bitonic(case, a):
    gd, _ = threads_1d(case)
    asc = case.scalar(2) != 0
    keys = a[0].copy()
    seg = np.sort(a[0][:gd * 1024].reshape(gd, 1024), axis=1)
    if not asc:
        seg = seg[:, ::-1]
    keys[:gd * 1024] = seg.reshape(-1)
    return {0: keys, 1: None}


def check_bitonic(case, before, after):
    """The values must move with their keys: the (key, value) pairs of each segment are a permutation."""
    gd, _ = threads_1d(case)
    problems = []
    for b in range(gd):
        s = slice(b * 1024, (b + 1) * 1024)
        pb = sorted(zip(before[0][s].tolist(), before[1][s].tolist()))
        pa = sorted(zip(after[0][s].tolist(), after[1][s].tolist()))
        if pa != pb:
            problems.append(f"block {b}: (key, value) pairs are not a permutation of the input")
    tail = slice(gd * 1024, None)
    if not np.array_equal(before[1][tail], after[1][tail]):
        problems.append("values past the sorted segments changed")
    return problems


def conv_filter():
    return (np.arange(17, dtype=np.float64) - 6.0) / 64.0


def ref_convolution(case, a, axis):
    width, height, pitch = case.scalar(2), case.scalar(3), case.scalar(4)
    img = a[1][:height * pitch].reshape(height, pitch)[:, :width].astype(np.float64)
    c = conv_filter()
    if axis == 1:
        padded = np.zeros((height, width + 16))
        padded[:, 8:8 + width] = img
        res = sum(c[8 - j] * padded[:, 8 + j:8 + j + width] for j in range(-8, 9))
    else:
        padded = np.zeros((height + 16, width))
        padded[8:8 + height, :] = img
        res = sum(c[8 - j] * padded[8 + j:8 + j + height, :] for j in range(-8, 9))
    out = a[0].copy()
    view = out[:height * pitch].reshape(height, pitch)
    view[:, :width] = res.astype(np.float32)
    return {0: (out, 1e-5)}


def shfl_down_tree(vals):
    """Warp-wide __shfl_down_sync(sum, 16/8/4/2/1) folding, on rows of 32 float32 lanes."""
    v = vals.copy()
    for off in (16, 8, 4, 2, 1):
        src = v.copy()
        src[:, :32 - off] = v[:, off:]  # lanes whose source is out of range read their own value
        v = v + src
    return v[:, 0]


def ref_reduce_sum(case, a):
    gd, bd = threads_1d(case)
    assert bd % 32 == 0
    n = case.scalar(2)
    x = a[0]
    nthreads = gd * bd
    acc = np.zeros(nthreads, dtype=np.float32)
    for start in range(0, n, nthreads):
        chunk = x[start:min(n, start + nthreads)]
        acc[:len(chunk)] = acc[:len(chunk)] + chunk
    warp_sums = shfl_down_tree(acc.reshape(-1, 32))  # one per warp, in block order
    nw = bd // 32
    lanes = np.zeros((gd, 32), dtype=np.float32)
    lanes[:, :nw] = warp_sums.reshape(gd, nw)
    out = a[1].copy()
    out[:gd] = shfl_down_tree(lanes)
    return {1: out}


def ref_reduce_max_int(case, a):
    gd, bd = threads_1d(case)
    n = case.scalar(2)
    nthreads = gd * bd
    out = a[1].copy()
    idx = np.arange(n)
    block_of = (idx % nthreads) // bd
    for b in range(gd):
        vals = a[0][:n][block_of == b]
        out[b] = vals.max() if len(vals) else np.int32(-2**31)
    return {1: out}


def ref_warp_vote(case, a):
    gd, bd = threads_1d(case)
    assert bd % 32 == 0
    n = case.scalar(7)
    total = gd * bd
    v = np.zeros(total, dtype=np.int64)
    v[:n] = a[0][:n]
    w = v.reshape(-1, 32)
    odd = (w & 1) != 0
    weights = (np.uint64(1) << np.arange(32, dtype=np.uint64))
    ballot = (odd.astype(np.uint64) * weights).sum(axis=1).astype(np.uint32)
    ballot_t = np.repeat(ballot, 32)
    any_t = np.repeat((w == 0).any(axis=1).astype(np.int32), 32)
    all_t = np.repeat((w != 15).all(axis=1).astype(np.int32), 32)
    active_t = np.where(odd.reshape(-1), ballot_t, np.uint32(0)).astype(np.uint32)
    tid = np.arange(total) % bd
    res = {}
    for index, full in ((1, ballot_t), (2, any_t), (3, all_t), (4, active_t),
                        (5, (tid % 32).astype(np.int32)), (6, (tid // 32).astype(np.int32))):
        out = a[index].copy()
        out[:n] = full[:n]
        res[index] = out
    return res


def byte_perm(x, y, s):
    both = (y << 32) | x
    r = 0
    for k in range(4):
        sel = (s >> (4 * k)) & 7
        r |= ((both >> (8 * sel)) & 0xFF) << (8 * k)
    return r


def funnel_l(lo, hi, shift):
    return ((((hi << 32) | lo) << shift) >> 32) & 0xFFFFFFFF


def ref_bit_ops(case, a):
    n = case.scalar(3)
    out = a[2].copy()
    for i, (x, y) in enumerate(zip(a[0][:n].tolist(), a[1][:n].tolist())):
        out[8 * i:8 * i + 8] = [
            bin(x).count("1"),
            int(format(x, "032b")[::-1], 2),
            32 - x.bit_length(),
            (x & -x).bit_length(),
            byte_perm(x, y, 0x3715),
            byte_perm(x, y, (y >> 16) & 0x7777),
            funnel_l(x, y, (y >> 24) & 31),
            funnel_l(x, y, min(y >> 26, 32)),
        ]
    return {2: out}


def shfl(vals, mode, b, width):
    """PTX shfl.sync on one warp (32 values), with c as nvcc builds it for the CUDA intrinsics."""
    seg = 32 - width
    c = (seg << 8) | (0 if mode == "up" else 0x1F)
    cval, mask = c & 0x1F, (c >> 8) & 0x1F
    out = []
    for lane in range(32):
        max_lane = (lane & mask) | (cval & ~mask & 0x1F)
        min_lane = lane & mask
        if mode == "idx":
            j = min_lane | (b & 0x1F & ~mask)
            ok = j <= max_lane
        elif mode == "up":
            j = lane - (b & 0x1F)
            ok = j >= min_lane
        elif mode == "down":
            j = lane + (b & 0x1F)
            ok = j <= max_lane
        else:
            j = lane ^ (b & 0x1F)
            ok = j <= max_lane
        out.append(vals[j] if ok else vals[lane])
    return out


def ref_shfl_modes(case, a):
    gd, bd = threads_1d(case)
    total = gd * bd
    outs = {k: a[k].copy() for k in (1, 2, 3, 4)}
    vin = a[0][:total].tolist()
    for w0 in range(0, total, 32):
        v = vin[w0:w0 + 32]
        rows = {
            1: ([shfl(v, "idx", lane * 7 + 3, 32)[lane] for lane in range(32)],
                [shfl(v, "idx", lane * 7 + 3, 16)[lane] for lane in range(32)]),
            2: (shfl(v, "up", 3, 32), shfl(v, "up", 5, 16)),
            3: (shfl(v, "down", 3, 32), shfl(v, "down", 5, 16)),
            4: (shfl(v, "bfly", 6, 32), shfl(v, "bfly", 17, 16)),
        }
        for k, (w32, w16) in rows.items():
            for lane in range(32):
                i = w0 + lane
                outs[k][2 * i] = w32[lane]
                outs[k][2 * i + 1] = w16[lane]
    return outs


def ref_backend_vector_add(case, a):
    return {12: (a[2] + a[7]).astype(np.float32)}


def ref_backend_spawn_rank(case, a):
    n = case.scalar(1)
    out = np.zeros_like(a[3])
    out[:n] = np.arange(n, dtype=out.dtype)
    return {3: out}


def ref_block_vote(case, a):
    n = case.scalar(4)
    blocks, threads = case.grid[0], case.block[0]
    values = np.zeros(blocks * threads, dtype=np.int64)
    values[:n] = a[0][:n]
    inside = np.arange(blocks * threads) < n
    values, inside = values.reshape(blocks, threads), inside.reshape(blocks, threads)
    return {
        1: (values > 50).sum(axis=1).astype(np.int32),
        2: inside.all(axis=1).astype(np.int32),
        3: (values > 95).any(axis=1).astype(np.int32),
    }


REFERENCES = {
    "block_vote": ref_block_vote,
    "vector_add_kernel": ref_backend_vector_add,
    "device_kernel": ref_backend_spawn_rank,
    "vector_add": ref_vector_add,
    "transpose": ref_transpose,
    "transpose_naive": ref_transpose,
    "histogram256_partial": ref_histogram_partial,
    "histogram256_atomic": ref_histogram_partial,
    "histogram256_merge": ref_histogram_merge,
    "scan_block": ref_scan_block,
    "scan_add_offsets": ref_scan_add_offsets,
    "scan_warp_shfl": ref_scan_warp_shfl,
    "bitonic_sort_shared": ref_bitonic,
    "convolution_rows": lambda case, a: ref_convolution(case, a, 1),
    "convolution_columns": lambda case, a: ref_convolution(case, a, 0),
    "reduce_sum": ref_reduce_sum,
    "reduce_max_int": ref_reduce_max_int,
    "warp_vote": ref_warp_vote,
    "bit_ops": ref_bit_ops,
    "shfl_modes": ref_shfl_modes,
}
EXTRA_CHECKS = {
    "bitonic_sort_shared": check_bitonic,
}


def compare(got, want, tol, ty):
    """Description of the first mismatches, or None."""
    if tol is None:
        if ty.startswith("f"):
            bad = ~((got == want) | (np.isnan(got) & np.isnan(want)))
        else:
            bad = got != want
    else:
        bad = ~(np.abs(got.astype(np.float64) - want.astype(np.float64)) <= tol)
    idx = np.nonzero(bad)[0]
    if len(idx) == 0:
        return None
    shown = ", ".join(f"[{i}] got {got[i].item()!r} want {want[i].item()!r}" for i in idx[:4])
    return f"{len(idx)} of {len(got)} differ: {shown}"


def check_case(case, before, after):
    """List of problems (empty: fine), or None when the kernel has no reference."""
    ref = REFERENCES.get(case.kernel)
    if ref is None:
        return None
    expected = ref(case, before)
    problems = []
    for index, arg in enumerate(case.args):
        if not isinstance(arg, Buffer):
            continue
        want = expected.get(index, before[index])
        if want is None:
            continue
        tol = None
        if isinstance(want, tuple):
            want, tol = want
        msg = compare(after[index], want, tol, arg.ty)
        if msg:
            problems.append(f"arg {index}: {msg}")
    extra = EXTRA_CHECKS.get(case.kernel)
    if extra:
        problems.extend(extra(case, before, after))
    return problems


# ---------------------------------------------------------------------------
# Running

def run_case(cp, module, case):
    before = make_inputs(case)
    dev = [cp.asarray(x) if isinstance(x, np.ndarray) else x for x in before]
    dev = [dev[a.index] if isinstance(a, Ref) else d for a, d in zip(case.args, dev)]
    fn = module.get_function(case.kernel)
    fn(case.grid, case.block, tuple(dev), shared_mem=case.shared)
    cp.cuda.runtime.deviceSynchronize()
    after = [cp.asnumpy(d) if isinstance(a, Buffer) else d for a, d in zip(case.args, dev)]
    return before, after


def self_test(cases):
    """What can be checked without a GPU."""
    failures = 0
    for seed in (0, 1, 42, 0xFFFFFFFFFFFFFFFF):
        if splitmix64(seed, 64).tolist() != splitmix64_py(seed, 64):
            print(f"FAIL generator: numpy and Python splitmix64 differ for seed {seed}")
            failures += 1
    # The published first output of splitmix64 seeded with 0.
    if splitmix64_py(0, 1)[0] != 0xE220A8397B1DCDAF:
        print("FAIL generator: splitmix64(0) first output is not 0xE220A8397B1DCDAF")
        failures += 1
    for case in cases:
        before = make_inputs(case)
        ref = REFERENCES.get(case.kernel)
        if ref is None:
            print(f"no reference      {case.name}")
            continue
        expected = ref(case, before)
        after = []
        for index, x in enumerate(before):
            want = expected.get(index, x) if isinstance(x, np.ndarray) else x
            if want is None:
                want = x
            if isinstance(want, tuple):
                want = want[0]
            after.append(want)
        if case.kernel == "bitonic_sort_shared":
            # Give the values a consistent permutation so that check_bitonic has something to check.
            gd, _ = threads_1d(case)
            after[1] = before[1].copy()
            for b in range(gd):
                s = slice(b * 1024, (b + 1) * 1024)
                order = np.argsort(before[0][s], kind="stable")
                if case.scalar(2) == 0:
                    order = order[::-1]
                after[1][s] = before[1][s][order]
        problems = check_case(case, before, after)
        text = format_case(case, after)
        status = "ok" if not problems else "FAIL"
        failures += bool(problems)
        print(f"{status:17} {case.name} ({len(text)} bytes of output)")
        for p in problems or []:
            print(f"    {p}")
    return failures


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cases", default=os.path.join(HERE, "cases.txt"))
    ap.add_argument("--ptx-dir", default=os.path.join(HERE, "nvcc"))
    ap.add_argument("--out-dir", default=os.path.join(HERE, "expected"))
    ap.add_argument("--only", action="append", metavar="CASE", help="run only this case (repeatable)")
    ap.add_argument("--variant", metavar="NAME",
                    help="load <stem>.NAME.ptx and compare with the recorded files instead of writing them")
    ap.add_argument("--no-check", action="store_true", help="skip the numpy references")
    ap.add_argument("--self-test", action="store_true", help="check generator, cases and references; no GPU")
    opts = ap.parse_args()

    try:
        cases = parse_cases(opts.cases)
    except CaseError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    if opts.only:
        names = {c.name for c in cases}
        unknown = [n for n in opts.only if n not in names]
        if unknown:
            print(f"error: no such case: {', '.join(unknown)}", file=sys.stderr)
            return 2
        cases = [c for c in cases if c.name in opts.only]

    if opts.self_test:
        failures = self_test(cases)
        print(f"self-test: {failures} failure(s)")
        return 1 if failures else 0

    import cupy as cp

    modules = {}
    failures = 0
    for case in cases:
        suffix = f".{opts.variant}.ptx" if opts.variant else ".ptx"
        if "/" in case.stem:
            ptx = os.path.join(os.path.dirname(os.path.abspath(opts.cases)), case.stem + suffix)
        else:
            ptx = os.path.join(opts.ptx_dir, case.stem + suffix)
        if ptx not in modules:
            modules[ptx] = cp.RawModule(path=ptx)
        before, after = run_case(cp, modules[ptx], case)
        text = format_case(case, after)
        out_path = os.path.join(opts.out_dir, case.name + ".out")

        notes = []
        bad = False
        if not opts.no_check:
            problems = check_case(case, before, after)
            if problems is None:
                notes.append("no reference")
            elif problems:
                bad = True
                notes.append("REFERENCE MISMATCH")
            else:
                notes.append("matches reference")
        else:
            problems = None
        if opts.variant:
            try:
                with open(out_path) as f:
                    recorded = f.read()
            except FileNotFoundError:
                recorded = None
            if recorded != text:
                bad = True
                notes.append(f"DIFFERS from {out_path}" if recorded is not None else f"no {out_path}")
            else:
                notes.append("same as recorded")
        else:
            write_atomically(out_path, text)

        failures += bad
        grid = ",".join(map(str, case.grid))
        block = ",".join(map(str, case.block))
        print(f"{'FAIL' if bad else 'ok':4} {case.name:28} {case.kernel:22} grid {grid:9} block {block:9} "
              f"{'; '.join(notes)}", flush=True)
        for p in problems or []:
            print(f"     {p}")

    print(f"{len(cases)} case(s), {failures} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
