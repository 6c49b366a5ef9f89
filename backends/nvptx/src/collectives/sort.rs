//! `pgpu.list.sort_idx` on the GPU: a stable LSD radix sort of
//! (key, index) pairs with 8-bit digits.
//!
//! **Keys.** Each key becomes an unsigned integer whose order is the key
//! order of the CPU runtime (`Scalar::sort_key` in elem.rs), so equal keys
//! map to equal numbers: signed integers flip their sign bit (`i8` and
//! `i16` keep only their own 8 or 16 bits, so they take one or two
//! passes); `i1` maps true (-1) to 0 and false to 1; floats first
//! canonicalize (`-0` to `+0`, every NaN to the quiet NaN of its sign),
//! then negative values invert all bits and the others set the sign bit.
//! 32-bit and narrower keys sort as u32 (4 passes for 32 bits), 64-bit keys
//! as u64 (8 passes). Indices travel as i32 (hence at most 2^31 - 1 keys)
//! and the last pass writes them as i64.
//!
//! **Kernels.** `zero` clears the digit histograms and the counters.
//! `histogram` reads the keys once and counts the digits of every pass at
//! once (per-block workgroup histograms with workgroup atomics, then global
//! atomics; a thread whose 16 keys share a digit counts them with one
//! atomic, so the constant high digits of small keys do not serialize every
//! warp on one counter); it also clears the look-back status of the first sweep, and
//! its last block (the one whose increment of a `done` counter completes
//! the grid, after a device fence) writes the sweeps' plan: the digit
//! starts of every pass (exclusive scans of the histogram rows) and the
//! pass of every launch slot. Then one launch per digit pass of a onesweep
//! kernel (Adinets and Merrill, "Onesweep: A Faster Least Significant Digit
//! Radix Sort for GPUs", 2022): `sweep_first` for launch slot 0, reading
//! the caller's keys, and `sweep_next` for the later slots, reading the
//! previous slot's lists.
//!
//! **Skipped passes.** A pass whose digit is the same for every key (one
//! histogram bin holds all `n`) only copies; CUB skips such bits when the
//! caller names the key range, we find them from the data. Slot `s` runs
//! the `s`-th pass that is not trivial, slots past the last exit at once,
//! and the last slot that runs writes the final indices (and sorted keys),
//! the others the temporary lists. So the plan stays on the device: no
//! read-back, no host synchronization; a skipped slot costs an empty
//! launch. Findfaces' vertex ids (< 2^19) and particle cells (< 2^18) take
//! three passes instead of four. A sweep block reads its slot's pass and
//! its digit's start from the plan (two loads, no block scan).
//!
//! Per sweep tile:
//!
//! 1. the block takes the next tile id from the slot's counter (dynamic ids
//!    make the look-back safe), clears its row of the next slot's status,
//!    and each warp loads a contiguous segment of `32 * ITEMS` keys and
//!    their indices (item `i` of lane `l` is element `32 i + l` of the
//!    segment, so the loads coalesce and (item, lane) order is key order);
//!    the loads are branch-free (clamped into the list) so all are in
//!    flight at once, and elements past the end get the all-ones key, which
//!    sorts last;
//! 2. warp-level ranking, branch-free so that the items' latencies overlap:
//!    for each item eight `vote.sync ballot`s (one per digit bit) find the
//!    lanes with the same digit; the lowest of them adds their count to the
//!    warp's workgroup counter of that digit (`atomicrmw add`; the others
//!    add 0 to a spare slot of their own) and shuffles the old value to its
//!    peers; each key's rank within its warp and digit is that value plus
//!    the number of peers below it (`popc` of the peer mask under the lane
//!    mask);
//! 3. thread `d` owns digit `d`: it turns the 8 warp counters into
//!    exclusive prefixes and a tile count and publishes the tile's count of
//!    digit `d` at once (the status word packs a 2-bit flag above a 32-bit
//!    count, written with one 64-bit relaxed atomic store); a block scan
//!    gives the tile-local start of every digit, which it adds to the warp
//!    counters (so a key's tile-local position is one workgroup load plus
//!    its rank). Then it looks back over the previous tiles' words for
//!    digit `d`, four at a time (one round trip per four predecessors:
//!    when all tiles of a small sort start together, the chain of waits is
//!    that much shorter), until it finds an inclusive one, and publishes
//!    its own inclusive count. The digit's global start (the exclusive scan
//!    of the pass histogram) plus that prefix is where the tile's keys of
//!    digit `d` go;
//! 4. the keys are written to workgroup memory at their tile-local sorted
//!    position, then read back in order, so consecutive threads write
//!    consecutive addresses of each digit's run; then the indices take the
//!    same way through the same buffer (16 KiB of staging, not 32).
//!
//! The status regions alternate between slots (slot `s` uses region
//! `s % 2` and clears region `(s + 1) % 2` for the next), so only two are
//! allocated whatever the number of passes.
//!
//! Every pass is stable (ties keep tile order, warp order, then item
//! order), so the LSD sort is stable, as `sort_idx` requires.

use super::emit::{Body, GpuModule, Param, Ty, V, global_ptr};
use super::host::{self, HostParam, HostSpec};
use super::tile::{self, Threads};
use super::{BLOCK, Elem};

const DIGITS: usize = 256;
const WARPS: usize = BLOCK / 32;
/// Grid bound of the histogram kernel.
const HISTOGRAM_GRID: i64 = 1024;
/// Keys per thread of a histogram tile.
const HISTOGRAM_ITEMS: usize = 16;
const FLAG_AGGREGATE: i64 = 1;
const FLAG_INCLUSIVE: i64 = 2;

/// Key bits (so passes = bits / 8) and the internal key type.
fn key_format(elem: Elem) -> (usize, Ty) {
    match elem {
        Elem::I1 | Elem::I8 => (8, Ty::I32),
        Elem::I16 => (16, Ty::I32),
        Elem::I32 | Elem::F32 => (32, Ty::I32),
        Elem::I64 | Elem::Index | Elem::F64 => (64, Ty::I64),
    }
}

/// Keys per thread of a sweep tile.
fn items(key: Ty) -> usize {
    if key == Ty::I64 { 8 } else { 16 }
}

/// The internal key of a loaded element (storage type of `elem`).
fn transform(b: &mut Body, elem: Elem, x: &str) -> V {
    match elem {
        Elem::I1 => {
            let zero = b.c(0, Ty::I8);
            let is_true = b.cmp("ne", x, &zero, Ty::I8);
            let one = b.c32(1);
            let z = b.c32(0);
            b.sel(&is_true, &z, &one, Ty::I32)
        }
        Elem::I8 | Elem::I16 => {
            let ty = elem.storage();
            let wide = b.resize(x, ty, Ty::I32, false);
            let sign = b.c32(1 << (ty.bits() - 1));
            b.xor(&wide, &sign, Ty::I32)
        }
        Elem::I32 | Elem::I64 | Elem::Index => {
            let ty = elem.storage();
            let sign = b.bits_const(1 << (ty.bits() - 1), ty);
            b.xor(x, &sign, ty)
        }
        Elem::F32 | Elem::F64 => {
            let ty = elem.storage();
            let it = ty.int();
            let bits = b.bitcast(x, ty, it);
            let top = b.bits_const(1 << (it.bits() - 1), it);
            let negative = b.and(&bits, &top, it);
            let zero = b.c(0, it);
            let is_negative = b.cmp("ne", &negative, &zero, it);
            // Canonical NaNs per sign, -0 as +0.
            let quiet = match ty {
                Ty::F32 => f32::NAN.to_bits() as u64,
                _ => f64::NAN.to_bits(),
            };
            let pos_nan = b.bits_const(quiet, it);
            let neg_nan = b.bits_const(quiet | 1 << (it.bits() - 1), it);
            let nan = b.sel(&is_negative, &neg_nan, &pos_nan, it);
            let is_nan = b.cmpf("uno", x, x, ty);
            let bits = b.sel(&is_nan, &nan, &bits, it);
            let is_minus_zero = b.cmp("eq", &bits, &top, it);
            let bits = b.sel(&is_minus_zero, &zero, &bits, it);
            // The sign of the canonical value (-0 is +0 now).
            let sign = b.and(&bits, &top, it);
            let negative = b.cmp("ne", &sign, &zero, it);
            let ones = b.c(-1, it);
            let inverted = b.xor(&bits, &ones, it);
            let flipped = b.or(&bits, &top, it);
            b.sel(&negative, &inverted, &flipped, it)
        }
    }
}

/// The element (storage type of `elem`) of an internal key: the inverse
/// of [`transform`] for integer elements of 8 bits or more (floats were
/// canonicalized and `i1` reads any nonzero byte as true, so they have
/// none).
fn untransform(b: &mut Body, elem: Elem, key: &str) -> V {
    match elem {
        Elem::I8 | Elem::I16 => {
            let ty = elem.storage();
            let sign = b.c32(1 << (ty.bits() - 1));
            let wide = b.xor(key, &sign, Ty::I32);
            b.resize(&wide, Ty::I32, ty, false)
        }
        Elem::I32 | Elem::I64 | Elem::Index => {
            let ty = elem.storage();
            let sign = b.bits_const(1 << (ty.bits() - 1), ty);
            b.xor(key, &sign, ty)
        }
        Elem::I1 | Elem::F32 | Elem::F64 => unreachable!("these sorted keys are gathered"),
    }
}

/// `(key >> shift) & 255` as i32.
fn digit(b: &mut Body, key: &str, key_ty: Ty, shift: &str) -> V {
    let s = b.resize(shift, Ty::I32, key_ty, false);
    let shifted = b.shru(key, &s, key_ty);
    let low = b.resize(&shifted, key_ty, Ty::I32, false);
    let mask = b.c32(255);
    b.and(&low, &mask, Ty::I32)
}

/// Zeroes the `count` (i64) elements of type `ty` at global `ptr`, in a
/// grid-stride loop from `first` by `step`.
fn clear_strided(b: &mut Body, ptr: &str, ty: Ty, count: &str, first: &str, step: &str) {
    let zero = b.c(0, ty);
    b.for_(first, count, step, "i64", &[], |b, i, _| {
        let p = b.gep(ptr, i, Ty::I64, ty.mlir(), 1);
        b.store(&zero, &p, ty.mlir(), ty.bytes(), 1);
        Vec::new()
    });
}

/// Kernel `zero`: clears `words` i32 words at `ptr`.
pub fn zero_kernel(m: &mut GpuModule) {
    m.kernel(
        "zero",
        &[("ptr", "!llvm.ptr"), ("words", "i64")],
        BLOCK,
        |b, _| {
            let ptr = global_ptr(b, "ptr");
            let tid = b.sreg("thread_id");
            let (first, step) = tile::grid_stride(b, &tid);
            clear_strided(b, &ptr, Ty::I32, "%words", &first, &step);
        },
    );
}

/// Launches `zero` over `bytes` (index, a multiple of 4) at `ptr`.
pub fn launch_zero(b: &mut Body, token: &str, module: &str, ptr: &str, bytes: &str) -> V {
    let four = b.cidx(4);
    let words = b.op(format!("arith.divui {bytes}, {four} : index"));
    let grid = host::blocks(b, &words, BLOCK as i64, 1);
    let max = b.cidx(1024);
    let grid = b.op(format!("arith.minui {grid}, {max} : index"));
    let words = b.idx_to(&words, Ty::I64);
    host::launch(
        b,
        token,
        module,
        "zero",
        &grid,
        BLOCK,
        &[(ptr.to_string(), "!llvm.ptr"), (words, "i64")],
    )
}

/// Kernel `histogram`: digit counts of every pass (`passes x 256` i32),
/// and zeroes the look-back status of slot 0 (`status_words` i64 words).
/// The last block to finish (counted in `done`) turns the counts into
/// the sweeps' [`Plan`].
fn histogram_kernel(m: &mut GpuModule, elem: Elem, passes: usize) {
    m.kernel(
        "histogram",
        &[
            ("keys", "!llvm.ptr"),
            ("n", "i64"),
            ("hist", "!llvm.ptr"),
            ("status", "!llvm.ptr"),
            ("status_words", "i64"),
            ("done", "!llvm.ptr"),
            ("plan", "!llvm.ptr"),
        ],
        BLOCK,
        |b, m| {
            let keys = global_ptr(b, "keys");
            let hist = global_ptr(b, "hist");
            let status = global_ptr(b, "status");
            let done = global_ptr(b, "done");
            let plan = global_ptr(b, "plan");
            let local = m.shared("histogram", "counts", "i32", passes * DIGITS);
            let local = b.addressof(&local);
            let th = tile::threads(b);
            let tid = th.tid.clone();
            let zero = b.c32(0);
            for k in 0..passes {
                let kk = b.c32((k * DIGITS) as i64);
                let slot = b.add(&tid, &kk, Ty::I32);
                let p = b.gep(&local, &slot, Ty::I32, "i32", 3);
                b.store(&zero, &p, "i32", 4, 3);
            }
            b.barrier();
            let (first, step) = tile::grid_stride(b, &tid);
            clear_strided(b, &status, Ty::I64, "%status_words", &first, &step);
            count_digits(b, elem, passes, &keys, &local, &tid);
            b.barrier();
            for k in 0..passes {
                let kk = b.c32((k * DIGITS) as i64);
                let slot = b.add(&tid, &kk, Ty::I32);
                let p = b.gep(&local, &slot, Ty::I32, "i32", 3);
                let c = b.load(&p, "i32", 4, 3);
                let nz = b.cmp("ne", &c, &zero, Ty::I32);
                b.if_(&nz, |b| {
                    let q = b.gep(&hist, &slot, Ty::I32, "i32", 1);
                    b.atomic_rmw("add", &q, &c, Ty::I32, 1);
                });
            }
            // The last block to finish: every count is in `hist`.
            b.fence();
            b.barrier();
            let last = m.shared("histogram", "last", "i32", 1);
            let last = b.addressof(&last);
            let t0 = b.cmp("eq", &tid, &zero, Ty::I32);
            b.if_(&t0, |b| {
                let one = b.c32(1);
                let old = b.atomic_rmw("add", &done, &one, Ty::I32, 1);
                let grid = b.op("gpu.grid_dim x");
                let grid = b.idx_to(&grid, Ty::I32);
                let final_block = b.sub(&grid, &one, Ty::I32);
                let is_last = b.cmp("eq", &old, &final_block, Ty::I32);
                let flag = b.zext_bool(&is_last, Ty::I32);
                b.store(&flag, &last, "i32", 4, 3);
            });
            b.barrier();
            let flag = b.load(&last, "i32", 4, 3);
            let is_last = b.cmp("ne", &flag, &zero, Ty::I32);
            b.if_(&is_last, |b| {
                b.fence();
                write_plan(b, m, &th, &hist, &plan, passes);
            });
        },
    );
}

/// The histogram's counting loop: tiles of `BLOCK * HISTOGRAM_ITEMS` keys
/// (item `i` of thread `t` is key `i * BLOCK + t`, so the loads coalesce;
/// all are issued before any count), one tile per block at a time. A
/// thread whose keys of a tile share a pass's digit (the OR and the AND of
/// its keys agree on the digit's bits: the usual case of the high digits of
/// small keys) adds their number with one workgroup atomic; otherwise each
/// key adds one. Without that, every lane of a warp would hit the same
/// counter for such a digit, key after key.
fn count_digits(b: &mut Body, elem: Elem, passes: usize, keys: &str, local: &str, tid: &str) {
    let (_, key_ty) = key_format(elem);
    let ty = elem.storage();
    let per_tile = (BLOCK * HISTOGRAM_ITEMS) as i64;
    let span = b.c64(per_tile - 1);
    let n_span = b.add("%n", &span, Ty::I64);
    let tile_elems = b.c64(per_tile);
    let tiles = b.op(format!("arith.divui {n_span}, {tile_elems} : i64"));
    let bid = b.sreg("block_id");
    let bid = b.resize(&bid, Ty::I32, Ty::I64, false);
    let grid = b.op("gpu.grid_dim x");
    let grid = b.idx_to(&grid, Ty::I64);
    let tid64 = b.resize(tid, Ty::I32, Ty::I64, false);
    let one64 = b.c64(1);
    let last = b.sub("%n", &one64, Ty::I64);
    b.for_(&bid, &tiles, &grid, "i64", &[], |b, tile, _| {
        let base = b.mul(tile, &tile_elems, Ty::I64);
        let base = b.add(&base, &tid64, Ty::I64);
        let mut items = Vec::new();
        for i in 0..HISTOGRAM_ITEMS {
            let offset = b.c64((i * BLOCK) as i64);
            let index = b.add(&base, &offset, Ty::I64);
            let valid = b.cmp("ult", &index, "%n", Ty::I64);
            let clamped = b.minu(&index, &last, Ty::I64);
            let p = b.gep(keys, &clamped, Ty::I64, ty.mlir(), 1);
            let x = b.load(&p, ty.mlir(), ty.bytes(), 1);
            items.push((valid, x));
        }
        let zero = b.c(0, key_ty);
        let ones = b.c(-1, key_ty);
        let mut any = zero.clone();
        let mut all = ones.clone();
        let mut count = b.c32(0);
        let mut counted = Vec::new();
        for (valid, x) in &items {
            let key = transform(b, elem, x);
            let in_or = b.sel(valid, &key, &zero, key_ty);
            let in_and = b.sel(valid, &key, &ones, key_ty);
            any = b.or(&any, &in_or, key_ty);
            all = b.and(&all, &in_and, key_ty);
            let add = b.zext_bool(valid, Ty::I32);
            count = b.add(&count, &add, Ty::I32);
            counted.push((key, add));
        }
        for pass in 0..passes {
            let shift = b.c32((8 * pass) as i64);
            let d_any = digit(b, &any, key_ty, &shift);
            let d_all = digit(b, &all, key_ty, &shift);
            let uniform = b.cmp("eq", &d_any, &d_all, Ty::I32);
            let off = b.c32((pass * DIGITS) as i64);
            b.if_then_else(
                &uniform,
                &[],
                |b| {
                    let slot = b.add(&d_any, &off, Ty::I32);
                    let q = b.gep(local, &slot, Ty::I32, "i32", 3);
                    b.atomic_rmw("add", &q, &count, Ty::I32, 3);
                    Vec::new()
                },
                |b| {
                    for (key, add) in &counted {
                        let d = digit(b, key, key_ty, &shift);
                        let slot = b.add(&d, &off, Ty::I32);
                        let q = b.gep(local, &slot, Ty::I32, "i32", 3);
                        b.atomic_rmw("add", &q, add, Ty::I32, 3);
                    }
                    Vec::new()
                },
            );
        }
        Vec::new()
    });
}

/// The sweeps' plan, in `passes * 256 + passes + 1` i32 words: the digit
/// starts of every pass (the exclusive scan of its histogram row), then
/// for each launch slot the pass it runs (-1: none), then the last slot
/// that runs. A pass whose digit is the same for every key (one digit
/// holds all `n` keys) is the identity permutation and is skipped, so
/// slot `s` runs the `s`-th pass that is not (pass 0 if all are).
struct Plan;

impl Plan {
    /// Word of slot `s`'s pass.
    fn slot(passes: usize, s: usize) -> i64 {
        (passes * DIGITS + s) as i64
    }

    /// Word of the last running slot.
    fn last(passes: usize) -> i64 {
        (passes * DIGITS + passes) as i64
    }

    fn words(passes: usize) -> usize {
        passes * DIGITS + passes + 1
    }
}

/// Writes the [`Plan`] from the complete histogram (one block; thread `d`
/// reads digit `d` of every pass).
fn write_plan(
    b: &mut Body,
    m: &mut GpuModule,
    th: &Threads,
    hist: &str,
    plan: &str,
    passes: usize,
) {
    let kernel = "histogram";
    let zero = b.c32(0);
    let flags = m.shared(kernel, "trivial", "i32", passes);
    let flags = b.addressof(&flags);
    let cp = b.c32(passes as i64);
    let clears = b.cmp("slt", &th.tid, &cp, Ty::I32);
    b.if_(&clears, |b| {
        let p = b.gep(&flags, &th.tid, Ty::I32, "i32", 3);
        b.store(&zero, &p, "i32", 4, 3);
    });
    b.barrier();
    let mut counts = Vec::new();
    for pass in 0..passes {
        let row = b.c32((pass * DIGITS) as i64);
        let slot = b.add(&row, &th.tid, Ty::I32);
        let p = b.gep(hist, &slot, Ty::I32, "i32", 1);
        let count = b.load_atomic(&p, Ty::I32, "monotonic");
        let wide = b.resize(&count, Ty::I32, Ty::I64, false);
        let all = b.cmp("eq", &wide, "%n", Ty::I64);
        b.if_(&all, |b| {
            let one = b.c32(1);
            let cpass = b.c32(pass as i64);
            let q = b.gep(&flags, &cpass, Ty::I32, "i32", 3);
            b.store(&one, &q, "i32", 4, 3);
        });
        counts.push((slot, count));
    }
    for (k, (slot, count)) in counts.iter().enumerate() {
        let name = format!("start{k}");
        let (start, _) = block_exclusive(b, m, kernel, &name, th, count);
        let p = b.gep(plan, slot, Ty::I32, "i32", 1);
        b.store(&start, &p, "i32", 4, 1);
    }
    // block_exclusive's barrier orders the flags' stores before these reads.
    let n_positive = {
        let z = b.c64(0);
        b.cmp("sgt", "%n", &z, Ty::I64)
    };
    let mut rank = b.c32(0);
    let mut chosen = b.c32(0);
    for pass in 0..passes {
        let cpass = b.c32(pass as i64);
        let q = b.gep(&flags, &cpass, Ty::I32, "i32", 3);
        let trivial = b.load(&q, "i32", 4, 3);
        let needed = b.cmp("eq", &trivial, &zero, Ty::I32);
        let mine = b.cmp("eq", &rank, &th.tid, Ty::I32);
        let mine = b.band(&mine, &needed);
        chosen = b.sel(&mine, &cpass, &chosen, Ty::I32);
        let step = b.zext_bool(&needed, Ty::I32);
        rank = b.add(&rank, &step, Ty::I32);
    }
    let one = b.c32(1);
    let slots = b.maxs(&rank, &one, Ty::I32);
    let runs = b.cmp("slt", &th.tid, &slots, Ty::I32);
    let runs = b.band(&runs, &n_positive);
    let none = b.c32(-1);
    let entry = b.sel(&runs, &chosen, &none, Ty::I32);
    b.if_(&clears, |b| {
        let base = b.c32(Plan::slot(passes, 0));
        let word = b.add(&base, &th.tid, Ty::I32);
        let p = b.gep(plan, &word, Ty::I32, "i32", 1);
        b.store(&entry, &p, "i32", 4, 1);
    });
    let t0 = b.cmp("eq", &th.tid, &zero, Ty::I32);
    b.if_(&t0, |b| {
        let last = b.sub(&slots, &one, Ty::I32);
        let word = b.c32(Plan::last(passes));
        let p = b.gep(plan, &word, Ty::I32, "i32", 1);
        b.store(&last, &p, "i32", 4, 1);
    });
}

/// Exclusive scan of one i32 per thread in thread order; returns
/// (exclusive, block total).
fn block_exclusive(
    b: &mut Body,
    m: &mut GpuModule,
    kernel: &str,
    name: &str,
    th: &Threads,
    x: &V,
) -> (V, V) {
    let op = super::op::Op::new(Ty::I32, super::Kind::Add);
    let incl = tile::warp_inclusive(b, &op, &th.lane, x);
    let sums = m.shared(kernel, name, "i32", WARPS);
    let sums = b.addressof(&sums);
    let c31 = b.c32(31);
    let last = b.cmp("eq", &th.lane, &c31, Ty::I32);
    b.if_(&last, |b| {
        let p = b.gep(&sums, &th.warp, Ty::I32, "i32", 3);
        b.store(&incl, &p, "i32", 4, 3);
    });
    b.barrier();
    let mut before = b.c32(0);
    let mut total = b.c32(0);
    for w in 0..WARPS {
        let cw = b.c32(w as i64);
        let p = b.gep(&sums, &cw, Ty::I32, "i32", 3);
        let s = b.load(&p, "i32", 4, 3);
        let earlier = b.cmp("slt", &cw, &th.warp, Ty::I32);
        let z = b.c32(0);
        let add = b.sel(&earlier, &s, &z, Ty::I32);
        before = b.add(&before, &add, Ty::I32);
        total = b.add(&total, &s, Ty::I32);
    }
    let e = b.sub(&incl, x, Ty::I32);
    (b.add(&before, &e, Ty::I32), total)
}

/// Which pass launch slot `%slot` runs, from the [`Plan`]: (whether it
/// runs, whether it is the last that runs, its pass).
fn read_plan(b: &mut Body, plan: &str, passes: usize) -> (V, V, V) {
    let base = b.c32(Plan::slot(passes, 0));
    let word = b.add(&base, "%slot", Ty::I32);
    let p = b.gep(plan, &word, Ty::I32, "i32", 1);
    let pass = b.load(&p, "i32", 4, 1);
    let word = b.c32(Plan::last(passes));
    let p = b.gep(plan, &word, Ty::I32, "i32", 1);
    let last_slot = b.load(&p, "i32", 4, 1);
    let zero = b.c32(0);
    let runs = b.cmp("sge", &pass, &zero, Ty::I32);
    let last = b.cmp("eq", "%slot", &last_slot, Ty::I32);
    let pass = b.maxs(&pass, &zero, Ty::I32);
    (runs, last, pass)
}

/// The index of digit `tid`'s status word of tile `tile` (both i32):
/// `tile * 256 + tid`, as i64.
fn status_word(b: &mut Body, tile: &str, tid: &str) -> V {
    let tile = b.resize(tile, Ty::I32, Ty::I64, false);
    let digits = b.c64(DIGITS as i64);
    let row = b.mul(&tile, &digits, Ty::I64);
    let tid = b.resize(tid, Ty::I32, Ty::I64, false);
    b.add(&row, &tid, Ty::I64)
}

/// Predecessors a look-back step reads at once.
const LOOKBACK_BATCH: usize = 4;

/// Decoupled look-back of digit `tid` for tile `tile_id` (not tile 0),
/// which has published its aggregate: the exclusive prefix of the
/// digit's count over the previous tiles. Each step loads the words of
/// `LOOKBACK_BATCH` predecessors at once (tiles before 0 read as an
/// inclusive 0), waits until every word up to the nearest inclusive one
/// is published, and adds the counts up to it; without an inclusive word
/// the next step reads the batch before. One round trip per batch instead
/// of per predecessor shortens the chain of waits when many tiles arrive
/// together (all tiles of a million keys are resident at once).
fn lookback_batched(b: &mut Body, status: &str, tile_id: &str, tid: &str) -> V {
    let one = b.c32(1);
    let pred0 = b.sub(tile_id, &one, Ty::I32);
    let z = b.c32(0);
    let go = b.cbool(true);
    let out = b.while_(
        &[(pred0, "i32".into()), (z, "i32".into()), (go, "i1".into())],
        |_, args| (args[2].clone(), args.to_vec()),
        |b, args| {
            let (pred, acc) = (&args[0], &args[1]);
            let zero = b.c32(0);
            let mut inside = vec![];
            let mut pointers = vec![];
            for j in 0..LOOKBACK_BATCH {
                let cj = b.c32(j as i64);
                let tile = b.sub(pred, &cj, Ty::I32);
                let valid = b.cmp("sge", &tile, &zero, Ty::I32);
                let tile = b.maxs(&tile, &zero, Ty::I32);
                let index = status_word(b, &tile, tid);
                pointers.push(b.gep(status, &index, Ty::I64, "i64", 1));
                inside.push(valid);
            }
            let inclusive_zero = b.c64(FLAG_INCLUSIVE << 32);
            let zeros: Vec<(V, String)> = (0..LOOKBACK_BATCH)
                .map(|_| (b.c64(0), "i64".to_string()))
                .collect();
            let words = b.while_(
                &zeros,
                |b, _| {
                    let mut words = vec![];
                    for (p, valid) in pointers.iter().zip(&inside) {
                        let w = b.load_atomic(p, Ty::I64, "monotonic");
                        words.push(b.sel(valid, &w, &inclusive_zero, Ty::I64));
                    }
                    let mut blocked = b.cbool(false);
                    let mut seen = b.cbool(false);
                    for w in &words {
                        let c32 = b.c64(32);
                        let flag = b.shru(w, &c32, Ty::I64);
                        let z = b.c64(0);
                        let empty = b.cmp("eq", &flag, &z, Ty::I64);
                        let unseen = b.bnot(&seen);
                        let waits = b.band(&unseen, &empty);
                        blocked = b.bor(&blocked, &waits);
                        let incl = b.c64(FLAG_INCLUSIVE);
                        let is_incl = b.cmp("eq", &flag, &incl, Ty::I64);
                        seen = b.bor(&seen, &is_incl);
                    }
                    (blocked, words)
                },
                |_, args| args.to_vec(),
            );
            let mut found = b.cbool(false);
            let mut add = b.c32(0);
            for w in &words {
                let count = b.resize(w, Ty::I64, Ty::I32, false);
                let z = b.c32(0);
                let take = b.bnot(&found);
                let part = b.sel(&take, &count, &z, Ty::I32);
                add = b.add(&add, &part, Ty::I32);
                let c32 = b.c64(32);
                let flag = b.shru(w, &c32, Ty::I64);
                let incl = b.c64(FLAG_INCLUSIVE);
                let is_incl = b.cmp("eq", &flag, &incl, Ty::I64);
                found = b.bor(&found, &is_incl);
            }
            let acc = b.add(acc, &add, Ty::I32);
            let batch = b.c32(LOOKBACK_BATCH as i64);
            let next = b.sub(pred, &batch, Ty::I32);
            let more = b.bnot(&found);
            vec![next, acc, more]
        },
    );
    out[1].clone()
}

const SWEEP_PARAMS: [Param; 12] = [
    ("keys_in", "!llvm.ptr"),
    ("idx_in", "!llvm.ptr"),
    ("keys_tmp", "!llvm.ptr"),
    ("idx_tmp", "!llvm.ptr"),
    ("keys_out", "!llvm.ptr"),
    ("idx_out", "!llvm.ptr"),
    ("n", "i64"),
    ("slot", "i32"),
    ("plan", "!llvm.ptr"),
    ("status", "!llvm.ptr"),
    ("next_status", "!llvm.ptr"),
    ("counter", "!llvm.ptr"),
];

/// The mask of the lanes whose digit `d` (8 bits, i32) equals this lane's:
/// one `vote.sync ballot` per digit bit (measured faster on the H200 than
/// `match.any.sync`, which left the sweep 10 to 20% slower).
fn digit_peers(b: &mut Body, d: &str) -> V {
    let zero = b.c32(0);
    let ones = b.c32(-1);
    let mut mask = ones.clone();
    for bit in 0..8 {
        let cb = b.c32(1 << bit);
        let set = b.and(d, &cb, Ty::I32);
        let is_set = b.cmp("ne", &set, &zero, Ty::I32);
        let vote = b.ballot(&is_set);
        let other = b.xor(&vote, &ones, Ty::I32);
        let same = b.sel(&is_set, &vote, &other, Ty::I32);
        mask = b.and(&mask, &same, Ty::I32);
    }
    mask
}

/// Kernel `sweep_first` (`first`: launch slot 0, reading the caller's keys
/// and making the indices) or `sweep_next` (later slots, reading the
/// previous slot's keys and indices). The slot's pass comes from [`plan`];
/// the last slot that runs writes the final indices (and sorted keys), the
/// others the temporary lists. Each tile also zeroes its row of the next
/// slot's look-back status.
fn sweep_kernel(m: &mut GpuModule, elem: Elem, passes: usize, first: bool, sorted: bool) {
    let (_, kt) = key_format(elem);
    let items = items(kt);
    let tile = BLOCK * items;
    let name = if first { "sweep_first" } else { "sweep_next" };
    let in_ty = if first { elem.storage() } else { kt };
    m.kernel(name, &SWEEP_PARAMS, BLOCK, |b, m| {
        let th = tile::threads(b);
        let keys_in = global_ptr(b, "keys_in");
        let idx_in = global_ptr(b, "idx_in");
        let keys_tmp = global_ptr(b, "keys_tmp");
        let idx_tmp = global_ptr(b, "idx_tmp");
        let keys_out = global_ptr(b, "keys_out");
        let idx_out = global_ptr(b, "idx_out");
        let plan = global_ptr(b, "plan");
        let status = global_ptr(b, "status");
        let next_status = global_ptr(b, "next_status");
        let counter = global_ptr(b, "counter");
        let (runs, is_last, pass) = read_plan(b, &plan, passes);
        // The tile id's atomic overlaps the plan's loads (a slot that does
        // not run takes ids nobody reads).
        // Per warp and digit: the warp's count while ranking, then the
        // tile-local start of the warp's keys of the digit. Cleared before
        // the tile id's barrier.
        let warp_base = m.shared(name, "warp_base", "i32", WARPS * DIGITS);
        let warp_base = b.addressof(&warp_base);
        let zero = b.c32(0);
        for k in 0..WARPS {
            let kk = b.c32((k * DIGITS) as i64);
            let slot = b.add(&th.tid, &kk, Ty::I32);
            let p = b.gep(&warp_base, &slot, Ty::I32, "i32", 3);
            b.store(&zero, &p, "i32", 4, 3);
        }
        let tile_id = super::scan::tile_id(b, m, name, &th, &counter);
        b.if_(&runs, |b| {
            let c8 = b.c32(8);
            let shift = b.mul(&pass, &c8, Ty::I32);
            let digit_base = m.shared(name, "digit_base", "i32", DIGITS);
            let digit_base = b.addressof(&digit_base);
            // Keys, then indices, in tile-local sorted order.
            let stage = m.shared(name, "stage", kt.mlir(), tile);
            let stage = b.addressof(&stage);
            let my_word = status_word(b, &tile_id, &th.tid);
            if passes > 1 {
                let p = b.gep(&next_status, &my_word, Ty::I64, "i64", 1);
                let z64 = b.c64(0);
                b.store(&z64, &p, "i64", 8, 1);
            }
            let t64 = b.resize(&tile_id, Ty::I32, Ty::I64, false);
            let ctile = b.c64(tile as i64);
            let start = b.mul(&t64, &ctile, Ty::I64);
            let left = b.sub("%n", &start, Ty::I64);
            let left = b.mins(&left, &ctile, Ty::I64);
            let valid = b.resize(&left, Ty::I64, Ty::I32, false);
            // Segment of this warp: item i of lane l is element 32 i + l.
            let w64 = b.resize(&th.warp, Ty::I32, Ty::I64, false);
            let l64 = b.resize(&th.lane, Ty::I32, Ty::I64, false);
            let cseg = b.c64((32 * items) as i64);
            let seg = b.mul(&w64, &cseg, Ty::I64);
            let seg = b.add(&start, &seg, Ty::I64);
            let seg = b.add(&seg, &l64, Ty::I64);
            let ones = b.c(-1, kt);
            let one64 = b.c64(1);
            let end = b.sub("%n", &one64, Ty::I64);
            // Position of item i, clamped into the list, and whether it is in.
            let position = |b: &mut Body, i: usize| -> (V, V, V) {
                let off = b.c64((32 * i) as i64);
                let pos = b.add(&seg, &off, Ty::I64);
                let inside = b.cmp("slt", &pos, "%n", Ty::I64);
                let at = b.mins(&pos, &end, Ty::I64);
                (pos, at, inside)
            };
            let load_index = |b: &mut Body, i: usize| -> V {
                let (pos, at, _) = position(b, i);
                if first {
                    b.resize(&pos, Ty::I64, Ty::I32, false)
                } else {
                    let q = b.gep(&idx_in, &at, Ty::I64, "i32", 1);
                    b.load(&q, "i32", 4, 1)
                }
            };
            // Branch-free loads (clamped into the list, missing keys replaced
            // afterwards), so that all of a thread's loads are in flight at
            // once; missing keys are all ones and sort last.
            let mut keys = Vec::new();
            for i in 0..items {
                let (_, at, inside) = position(b, i);
                let p = b.gep(&keys_in, &at, Ty::I64, in_ty.mlir(), 1);
                let x = b.load(&p, in_ty.mlir(), in_ty.bytes(), 1);
                let key = if first { transform(b, elem, &x) } else { x };
                keys.push(b.sel(&inside, &key, &ones, kt));
            }
            // The indices too (kept in registers through the ranking: loaded
            // after the keys' scatter, their latency was not hidden).
            let indices: Vec<V> = (0..items).map(|i| load_index(b, i)).collect();
            // Warp-level ranking: the lowest lane of each group of peers adds
            // the group's size to the warp's count of the digit and shares
            // the old count; a key's rank is that plus its peers below it.
            // Branch-free, so that the items' chains (votes, atomic, shuffle)
            // interleave: every lane adds, the peers other than the leader
            // add 0 to a slot of their own.
            let one = b.c32(1);
            let lanebit = b.shl(&one, &th.lane, Ty::I32);
            let below_mask = b.sub(&lanebit, &one, Ty::I32);
            let cdig = b.c32(DIGITS as i64);
            let wrow = b.mul(&th.warp, &cdig, Ty::I32);
            let ranks = {
                let spare = m.shared(name, "spare", "i32", BLOCK);
                let spare = b.addressof(&spare);
                let own = b.gep(&spare, &th.tid, Ty::I32, "i32", 3);
                let peer_sets: Vec<(V, V)> = keys
                    .iter()
                    .map(|key| {
                        let d = digit(b, key, kt, &shift);
                        let peers = digit_peers(b, &d);
                        (d, peers)
                    })
                    .collect();
                let mut ranks = Vec::new();
                for (d, peers) in &peer_sets {
                    let below = b.and(peers, &below_mask, Ty::I32);
                    let below = b.popc(&below);
                    let count = b.popc(peers);
                    let is_leader = b.cmp("eq", &below, &zero, Ty::I32);
                    let slot = b.add(&wrow, d, Ty::I32);
                    let counter = b.gep(&warp_base, &slot, Ty::I32, "i32", 3);
                    let target = b.select(&is_leader, &counter, &own, "!llvm.ptr<3>");
                    let add = b.sel(&is_leader, &count, &zero, Ty::I32);
                    let old = b.atomic_rmw("add", &target, &add, Ty::I32, 3);
                    let leader = b.cttz_nonzero(peers);
                    let base = b.shuffle("idx", &old, &leader, Ty::I32);
                    ranks.push(b.add(&base, &below, Ty::I32));
                }
                ranks
            };
            b.barrier();
            // Thread d: digit d. Exclusive prefixes of the warps' counts and
            // the tile's count.
            let mut warp_prefix = Vec::new();
            let mut running = b.c32(0);
            for w in 0..WARPS {
                let off = b.c32((w * DIGITS) as i64);
                let slot = b.add(&off, &th.tid, Ty::I32);
                let p = b.gep(&warp_base, &slot, Ty::I32, "i32", 3);
                let c = b.load(&p, "i32", 4, 3);
                warp_prefix.push((p, running.clone()));
                running = b.add(&running, &c, Ty::I32);
            }
            let tile_count = running;
            // The tile's real count of this digit (missing keys are digit 255).
            let c255 = b.c32(255);
            let is_top = b.cmp("eq", &th.tid, &c255, Ty::I32);
            let ctile32 = b.c32(tile as i64);
            let missing = b.sub(&ctile32, &valid, Ty::I32);
            let minus = b.sel(&is_top, &missing, &zero, Ty::I32);
            let mine = b.sub(&tile_count, &minus, Ty::I32);
            // Publish the aggregate before the block scans, so successors can
            // read it sooner.
            let pack = |b: &mut Body, flag: i64, count: &V| -> V {
                let c = b.resize(count, Ty::I32, Ty::I64, false);
                let f = b.c64(flag << 32);
                b.or(&c, &f, Ty::I64)
            };
            let my_ptr = b.gep(&status, &my_word, Ty::I64, "i64", 1);
            let is_first = b.cmp("eq", &tile_id, &zero, Ty::I32);
            let flag = b.c64(FLAG_AGGREGATE << 32);
            let inclusive = b.c64(FLAG_INCLUSIVE << 32);
            let flag = b.sel(&is_first, &inclusive, &flag, Ty::I64);
            let mine64 = b.resize(&mine, Ty::I32, Ty::I64, false);
            let word = b.or(&mine64, &flag, Ty::I64);
            b.store_atomic(&word, &my_ptr, Ty::I64, "monotonic");
            let (local_start, _) = block_exclusive(b, m, name, "scan_local", &th, &tile_count);
            for (p, before) in &warp_prefix {
                let s = b.add(&local_start, before, Ty::I32);
                b.store(&s, p, "i32", 4, 3);
            }
            let row = b.mul(&pass, &cdig, Ty::I32);
            let hslot = b.add(&row, &th.tid, Ty::I32);
            let hp = b.gep(&plan, &hslot, Ty::I32, "i32", 1);
            let global_start = b.load(&hp, "i32", 4, 1);
            let prefix = b.if_ty(
                &is_first,
                "i32",
                1,
                |b| vec![b.c32(0)],
                |b| {
                    let acc = lookback_batched(b, &status, &tile_id, &th.tid);
                    let total = b.add(&acc, &mine, Ty::I32);
                    let w = pack(b, FLAG_INCLUSIVE, &total);
                    b.store_atomic(&w, &my_ptr, Ty::I64, "monotonic");
                    vec![acc]
                },
            );
            // Destination of staged position s of digit d: base[d] + s.
            let dest_base = b.add(&global_start, &prefix[0], Ty::I32);
            let dest_base = b.sub(&dest_base, &local_start, Ty::I32);
            let p = b.gep(&digit_base, &th.tid, Ty::I32, "i32", 3);
            b.store(&dest_base, &p, "i32", 4, 3);
            b.barrier();
            // Stage the keys at their tile-local sorted positions.
            let mut staged = Vec::new();
            for (key, rank) in keys.iter().zip(&ranks) {
                let d = digit(b, key, kt, &shift);
                let slot = b.add(&wrow, &d, Ty::I32);
                let p = b.gep(&warp_base, &slot, Ty::I32, "i32", 3);
                let base = b.load(&p, "i32", 4, 3);
                let s = b.add(&base, rank, Ty::I32);
                let kp = b.gep(&stage, &s, Ty::I32, kt.mlir(), 3);
                b.store(key, &kp, kt.mlir(), kt.bytes(), 3);
                staged.push(s);
            }
            b.barrier();
            // Scatter the keys in staged order, so consecutive threads write
            // consecutive addresses of each digit's run.
            let mut dests = Vec::new();
            let mut sorted_keys = Vec::new();
            let mut in_tile = Vec::new();
            for k in 0..items {
                let ck = b.c32((k * BLOCK) as i64);
                let s = b.add(&th.tid, &ck, Ty::I32);
                in_tile.push(b.cmp("slt", &s, &valid, Ty::I32));
                let kp = b.gep(&stage, &s, Ty::I32, kt.mlir(), 3);
                let key = b.load(&kp, kt.mlir(), kt.bytes(), 3);
                let d = digit(b, &key, kt, &shift);
                let p = b.gep(&digit_base, &d, Ty::I32, "i32", 3);
                let base = b.load(&p, "i32", 4, 3);
                let dest = b.add(&base, &s, Ty::I32);
                dests.push(b.resize(&dest, Ty::I32, Ty::I64, false));
                sorted_keys.push(key);
            }
            // Both phases' stores go to the final lists from the last slot
            // that runs, else to the temporary ones (a uniform branch).
            let by_slot = |b: &mut Body, phase: &dyn Fn(&mut Body, bool)| {
                if passes == 1 {
                    phase(b, true);
                } else {
                    b.if_then_else(
                        &is_last,
                        &[],
                        |b| {
                            phase(b, true);
                            Vec::new()
                        },
                        |b| {
                            phase(b, false);
                            Vec::new()
                        },
                    );
                }
            };
            by_slot(b, &|b: &mut Body, to_final: bool| {
                if to_final && !sorted {
                    return;
                }
                for ((key, dest), inside) in sorted_keys.iter().zip(&dests).zip(&in_tile) {
                    b.if_(inside, |b| {
                        if to_final {
                            let ty = elem.storage();
                            let x = untransform(b, elem, key);
                            let q = b.gep(&keys_out, dest, Ty::I64, ty.mlir(), 1);
                            b.store(&x, &q, ty.mlir(), ty.bytes(), 1);
                        } else {
                            let q = b.gep(&keys_tmp, dest, Ty::I64, kt.mlir(), 1);
                            b.store(key, &q, kt.mlir(), kt.bytes(), 1);
                        }
                    });
                }
            });
            // Then the indices, through the same workgroup buffer.
            b.barrier();
            for (index, s) in indices.iter().zip(&staged) {
                let ip = b.gep(&stage, s, Ty::I32, "i32", 3);
                b.store(index, &ip, "i32", 4, 3);
            }
            b.barrier();
            let staged_indices: Vec<V> = (0..items)
                .map(|k| {
                    let ck = b.c32((k * BLOCK) as i64);
                    let s = b.add(&th.tid, &ck, Ty::I32);
                    let ip = b.gep(&stage, &s, Ty::I32, "i32", 3);
                    b.load(&ip, "i32", 4, 3)
                })
                .collect();
            by_slot(b, &|b: &mut Body, to_final: bool| {
                for ((dest, inside), index) in dests.iter().zip(&in_tile).zip(&staged_indices) {
                    b.if_(inside, |b| {
                        let index = index.clone();
                        if to_final {
                            let wide = b.resize(&index, Ty::I32, Ty::I64, false);
                            let q = b.gep(&idx_out, dest, Ty::I64, "i64", 1);
                            b.store(&wide, &q, "i64", 8, 1);
                        } else {
                            let q = b.gep(&idx_tmp, dest, Ty::I64, "i32", 1);
                            b.store(&index, &q, "i32", 4, 1);
                        }
                    });
                }
            });
        });
    });
}

/// The host code of sort_idx; adds the kernels to `m`. With `sorted`, the
/// host function takes a fourth list and the last pass also writes the
/// keys there in sorted order (integer elements only).
pub fn generate(m: &mut GpuModule, symbol: &str, elem: Elem, sorted: bool) -> String {
    let (bits, kt) = key_format(elem);
    let passes = bits / 8;
    zero_kernel(m);
    histogram_kernel(m, elem, passes);
    sweep_kernel(m, elem, passes, true, sorted);
    if passes > 1 {
        sweep_kernel(m, elem, passes, false, sorted);
    }
    let module = m.name.clone();
    let t = elem.mlir();
    let memref = format!("memref<?x{t}>");
    let tile = (BLOCK * items(kt)) as i64;
    let kbytes = kt.bytes() as i64;
    // Look-back status regions: slot s uses region s % 2.
    let status_regions = passes.min(2) as i64;
    // Regions: keys A, keys B, indices A, indices B, status, hist, counters
    // (one per slot, then the histogram blocks' `done`), plan.
    let layout = move |b: &mut Body, n: &V| -> Vec<V> {
        let kb = b.cidx(kbytes);
        let keys = b.op(format!("arith.muli {n}, {kb} : index"));
        let four = b.cidx(4);
        let idx = b.op(format!("arith.muli {n}, {four} : index"));
        let tiles = host::blocks(b, n, tile, 1);
        let words = b.cidx(DIGITS as i64 * 8 * status_regions);
        let status = b.op(format!("arith.muli {tiles}, {words} : index"));
        let hist = b.cidx((passes * DIGITS * 4) as i64);
        let counters = b.cidx(((passes + 1) * 4) as i64);
        let plan = b.cidx((Plan::words(passes) * 4) as i64);
        let none = b.cidx(0);
        if passes == 1 {
            vec![
                none.clone(),
                none.clone(),
                none.clone(),
                none,
                status,
                hist,
                counters,
                plan,
            ]
        } else {
            vec![
                keys.clone(),
                keys,
                idx.clone(),
                idx,
                status,
                hist,
                counters,
                plan,
            ]
        }
    };
    let memref_for_body = memref.clone();
    let body = move |b: &mut Body, ctx: &host::Ctx| -> Option<V> {
        let keys = host::memref_ptr(b, "%keys", &memref_for_body, t, elem.bytes());
        let out = host::memref_ptr(b, "%indices", "memref<?xindex>", "index", 8);
        let sorted_keys = if sorted {
            host::memref_ptr(b, "%sorted", &memref_for_body, t, elem.bytes())
        } else {
            out.clone()
        };
        let r = &ctx.regions;
        let t0 = b.op("gpu.wait async");
        // Zero the histograms and counters (contiguous regions 5 and 6).
        let end = b.cidx(((passes + 1) * 4) as i64);
        let end = b.op(format!("arith.addi {}, {end} : index", ctx.offsets[6]));
        let bytes = b.op(format!("arith.subi {end}, {} : index", ctx.offsets[5]));
        let t1 = launch_zero(b, &t0, &module, &r[5], &bytes);
        let tiles = host::blocks(b, &ctx.n, tile, 1);
        let tiles64 = b.idx_to(&tiles, Ty::I64);
        let cd = b.c64(DIGITS as i64);
        let status_words = b.mul(&tiles64, &cd, Ty::I64);
        let done_at = b.c64(passes as i64);
        let done = b.op(format!(
            "llvm.getelementptr {}[{done_at}] : (!llvm.ptr, i64) -> !llvm.ptr, i32",
            r[6]
        ));
        let hgrid = host::blocks(b, &ctx.n, (BLOCK * HISTOGRAM_ITEMS) as i64, 1);
        let hmax = b.cidx(HISTOGRAM_GRID);
        let hgrid = b.op(format!("arith.minui {hgrid}, {hmax} : index"));
        let mut token = host::launch(
            b,
            &t1,
            &module,
            "histogram",
            &hgrid,
            BLOCK,
            &[
                (keys.clone(), "!llvm.ptr"),
                (ctx.n64.clone(), "i64"),
                (r[5].clone(), "!llvm.ptr"),
                (r[4].clone(), "!llvm.ptr"),
                (status_words.clone(), "i64"),
                (done, "!llvm.ptr"),
                (r[7].clone(), "!llvm.ptr"),
            ],
        );
        let c8 = b.c64(8);
        let region_bytes = b.mul(&status_words, &c8, Ty::I64);
        let status_of = |b: &mut Body, slot: usize| -> V {
            let k = b.c64((slot % 2) as i64);
            let off = b.mul(&region_bytes, &k, Ty::I64);
            b.op(format!(
                "llvm.getelementptr {}[{off}] : (!llvm.ptr, i64) -> !llvm.ptr, i8",
                r[4]
            ))
        };
        for slot in 0..passes {
            let (keys_in, idx_in) = if slot == 0 {
                (keys.clone(), keys.clone())
            } else {
                (r[(slot - 1) % 2].clone(), r[2 + (slot - 1) % 2].clone())
            };
            let status = status_of(b, slot);
            let next_status = status_of(b, slot + 1);
            let coff = b.c64(slot as i64);
            let counter = b.op(format!(
                "llvm.getelementptr {}[{coff}] : (!llvm.ptr, i64) -> !llvm.ptr, i32",
                r[6]
            ));
            let cslot = b.c32(slot as i64);
            let kernel = if slot == 0 {
                "sweep_first"
            } else {
                "sweep_next"
            };
            token = host::launch(
                b,
                &token,
                &module,
                kernel,
                &tiles,
                BLOCK,
                &[
                    (keys_in, "!llvm.ptr"),
                    (idx_in, "!llvm.ptr"),
                    (r[slot % 2].clone(), "!llvm.ptr"),
                    (r[2 + slot % 2].clone(), "!llvm.ptr"),
                    (sorted_keys.clone(), "!llvm.ptr"),
                    (out.clone(), "!llvm.ptr"),
                    (ctx.n64.clone(), "i64"),
                    (cslot, "i32"),
                    (r[7].clone(), "!llvm.ptr"),
                    (status, "!llvm.ptr"),
                    (next_status, "!llvm.ptr"),
                    (counter, "!llvm.ptr"),
                ],
            );
        }
        // No wait: see `host`'s header (one stream orders what follows).
        let _ = token;
        None
    };
    host::emit(&HostSpec {
        symbol: symbol.to_string(),
        params: {
            let mut params = vec![
                HostParam::new("keys", memref.clone()),
                HostParam::new("indices", "memref<?xindex>"),
                HostParam::new("n", "index"),
            ];
            if sorted {
                params.push(HostParam::new("sorted", memref));
            }
            params
        },
        count: "n",
        result: None,
        layout: &layout,
        body: &body,
    })
}
