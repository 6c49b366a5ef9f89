//! `pgpu.list.scan` on the GPU, and the decoupled look-back machinery that
//! compact, split and expand reuse.
//!
//! **Single-pass scan with decoupled look-back** (Merrill and Garland,
//! "Single-pass Parallel Prefix Scan with Decoupled Look-back", 2016). Each
//! block takes the next tile id from a global counter (`atomicrmw add`), so
//! every tile's predecessors have started and the look-back cannot wait on
//! a tile that never runs. Per tile (layout in [`super::tile`]; 16 KiB,
//! or 32 KiB for 4- and 8-byte elements with [`Lookback::Packed`]):
//!
//! 1. each thread loads its rows of one 16-byte vector each (4, or 8 in
//!    32 KiB tiles; vector loads on full, aligned tiles) and folds each;
//! 2. the row totals of each warp are scanned with `gpu.shuffle up`;
//!    lane 31 writes the warp-row totals, 32 or 64 of them (8 warps x 4 or
//!    8 rows, in tile order), to workgroup memory;
//! 3. warp 0 scans those values (one or two per lane, sequentially within
//!    the lane, then across lanes): the last is the tile aggregate. Lane 0
//!    publishes it (flag 1; tile 0 publishes its inclusive prefix directly,
//!    flag 2). Then warp 0 looks back over windows of 32 predecessors, one
//!    per lane: each lane spins until its predecessor's flag is non-zero,
//!    `nvvm.vote.sync ballot` finds the nearest predecessor with an
//!    inclusive prefix, the lanes up to it combine their values in tile
//!    order (shuffle-down tree, older tiles on the left), and the window's
//!    value is prepended to the running prefix; without an inclusive
//!    prefix in the window the next window follows. Lane 0 publishes the
//!    tile's inclusive prefix (flag 2);
//! 4. every thread combines the tile prefix, its warp-row prefix and its
//!    lane prefix, then scans its own items sequentially and stores them
//!    (16-byte vector stores on full, aligned tiles). The last tile's
//!    thread 0 writes the total.
//!
//! The status of a tile ([`Packing`]): by default a 32-bit flag separate
//! from the value (8- and 16-bit values widened to 32 bits), the flag
//! stored with release semantics after the value and loaded with acquire
//! semantics before it. With [`Lookback::Packed`] (and 32 KiB tiles for 4-
//! and 8-byte elements), values of up to 32 bits and the non-negative
//! counts of compact, split and expand share one 64-bit word with their
//! flag, written and read with single relaxed atomics, so that a look-back
//! step costs one memory round trip; 64-bit values keep separate flags.
//! The status and the tile counter start at zero (kernel `init`).
//!
//! Consecutive tiles' flags (or packed words) lie [`STATUS_SPACING`] bytes
//! apart, one per 128-byte line: when eight tiles share a line, every
//! publish lands in a line that many warps are polling, and the scan of
//! 256M i32 on the H200 spent more time in its look-back than in its loads
//! (70% of copy bandwidth against 88% with the spacing, measured side by
//! side with `bench/scan-design/scan_variants.cu`).
//!
//! **Blocked float order** (float `add`/`mul`, the default): as the
//! runtime, block totals of 65536 elements ([`super::reduce`]'s
//! `fold_blocks`), their sequential exclusive scan (`fold_totals`, mode 1),
//! then kernel `scan_blocks`: one warp per block stages 2 KiB chunks in
//! workgroup memory, lane 0 scans them in place from the block's carry
//! (16-byte workgroup loads and stores), and the warp stores the chunk with
//! coalesced vector stores while the next chunk's loads are in flight.

use super::emit::{Body, GpuModule, Param, Ty, V, global_ptr};
use super::host::{self, HostParam, HostSpec};
use super::op::Op;
use super::reduce;
use super::tile::{self, Shape, Threads, TileLoad};
use super::{BLOCK, Config, Elem, Kind, Lookback, SEQUENTIAL_BLOCK};

/// Bytes between the flags (or packed words) of consecutive tiles.
pub const STATUS_SPACING: i64 = 128;

/// The flag word (or packed word) of `tile` (i32) in `flags`.
fn flag_slot(b: &mut Body, flags: &str, tile: &str) -> V {
    let t = b.resize(tile, Ty::I32, Ty::I64, false);
    let words = b.c64(STATUS_SPACING / 8);
    let w = b.mul(&t, &words, Ty::I64);
    b.gep(flags, &w, Ty::I64, "i64", 1)
}

/// Flag values of the status words.
const FLAG_AGGREGATE: i64 = 1;
const FLAG_INCLUSIVE: i64 = 2;

/// How a look-back keeps its per-tile status.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Packing {
    /// One 64-bit word per tile, read and written with single relaxed
    /// atomics: the flag in the high half, the value's 32 bits in the low
    /// half (values of 32 bits or fewer).
    Word32,
    /// One 64-bit word per tile: the flag in the top 2 bits, a non-negative
    /// count below 2^62 in the rest (the counts of compact, split, expand).
    Count62,
    /// 32-bit flags and separate 64-bit aggregate and inclusive values; the
    /// value is stored before the flag with release semantics, and read
    /// after an acquire load of the flag.
    Separate,
}

impl Packing {
    pub fn of(op: &Op, counts: bool, lookback: Lookback) -> Self {
        if lookback == Lookback::Separate {
            Packing::Separate
        } else if counts {
            Packing::Count62
        } else if op.status_ty().bytes() == 4 {
            Packing::Word32
        } else {
            Packing::Separate
        }
    }

    fn flag_shift(self) -> i64 {
        match self {
            Packing::Count62 => 62,
            _ => 32,
        }
    }
}

/// The global status arrays of a look-back (`!llvm.ptr<1>` values): the
/// flags (or packed words), and for [`Packing::Separate`] the values.
#[derive(Debug, Clone)]
pub struct Status {
    pub flags: V,
    pub aggs: V,
    pub incls: V,
    pub packing: Packing,
}

/// Kernel `init`: zeroes the flag words of `count` tiles (8 bytes at every
/// [`STATUS_SPACING`]) and the tile counter.
pub fn init_kernel(m: &mut GpuModule) {
    m.kernel(
        "init",
        &[
            ("flags", "!llvm.ptr"),
            ("count", "i64"),
            ("counter", "!llvm.ptr"),
        ],
        BLOCK,
        |b, _| {
            let flags = global_ptr(b, "flags");
            let counter = global_ptr(b, "counter");
            let tid = b.sreg("thread_id");
            let bid = b.sreg("block_id");
            let cb = b.c32(BLOCK as i64);
            let base = b.mul(&bid, &cb, Ty::I32);
            let i = b.add(&base, &tid, Ty::I32);
            let wide = b.resize(&i, Ty::I32, Ty::I64, false);
            let valid = b.cmp("slt", &wide, "%count", Ty::I64);
            b.if_(&valid, |b| {
                let p = flag_slot(b, &flags, &i);
                let z = b.c64(0);
                b.store(&z, &p, "i64", 8, 1);
            });
            let zero = b.c32(0);
            let first = b.cmp("eq", &i, &zero, Ty::I32);
            b.if_(&first, |b| b.store(&zero, &counter, "i32", 4, 1));
        },
    );
}

/// The tile this block works on, from the global counter (i32, uniform).
pub fn tile_id(b: &mut Body, m: &mut GpuModule, kernel: &str, th: &Threads, counter: &str) -> V {
    let sym = m.shared(kernel, "tile_id", "i32", 1);
    let slot = b.addressof(&sym);
    let zero = b.c32(0);
    let t0 = b.cmp("eq", &th.tid, &zero, Ty::I32);
    b.if_(&t0, |b| {
        let one = b.c32(1);
        let old = b.atomic_rmw("add", counter, &one, Ty::I32, 1);
        b.store(&old, &slot, "i32", 4, 3);
    });
    b.barrier();
    b.load(&slot, "i32", 4, 3)
}

fn widen(b: &mut Body, op: &Op, v: &str) -> V {
    b.resize(v, op.ty, op.status_ty(), false)
}

fn narrow(b: &mut Body, op: &Op, v: &str) -> V {
    b.resize(v, op.status_ty(), op.ty, false)
}

/// The 32 bits of a value of at most 32 bits, as i32.
fn to_bits32(b: &mut Body, op: &Op, v: &str) -> V {
    if op.ty == Ty::F32 {
        b.bitcast(v, Ty::F32, Ty::I32)
    } else {
        b.resize(v, op.ty, Ty::I32, false)
    }
}

fn from_bits32(b: &mut Body, op: &Op, v: &str) -> V {
    if op.ty == Ty::F32 {
        b.bitcast(v, Ty::I32, Ty::F32)
    } else {
        b.resize(v, Ty::I32, op.ty, false)
    }
}

/// Publishes `value` with `flag` for `tile` (one lane).
fn publish(b: &mut Body, op: &Op, st: &Status, tile: &str, value: &str, flag: i64) {
    match st.packing {
        Packing::Separate => {
            let sty = op.status_ty();
            let values = if flag == FLAG_INCLUSIVE {
                &st.incls
            } else {
                &st.aggs
            };
            let w = widen(b, op, value);
            let p = b.gep(values, tile, Ty::I32, sty.mlir(), 1);
            b.store_atomic(&w, &p, sty, "monotonic");
            let f = b.c32(flag);
            let q = flag_slot(b, &st.flags, tile);
            b.store_atomic(&f, &q, Ty::I32, "release");
        }
        packing => {
            let low = if packing == Packing::Word32 {
                let bits = to_bits32(b, op, value);
                b.resize(&bits, Ty::I32, Ty::I64, false)
            } else {
                value.to_string()
            };
            let f = b.c64(flag << packing.flag_shift());
            let w = b.or(&low, &f, Ty::I64);
            let q = flag_slot(b, &st.flags, tile);
            b.store_atomic(&w, &q, Ty::I64, "monotonic");
        }
    }
}

/// One lane's status of predecessor `clamped` (a valid index), once every
/// lane of the warp sees its flag set (lanes with `inside` false read as
/// inclusive): returns (flag, value).
fn read_status(b: &mut Body, op: &Op, st: &Status, inside: &V, clamped: &V) -> (V, V) {
    let two = b.c32(FLAG_INCLUSIVE);
    match st.packing {
        Packing::Separate => {
            let sty = op.status_ty();
            let fp = flag_slot(b, &st.flags, clamped);
            let zero = b.c32(0);
            let f = b.while_(
                &[(zero, "i32".into())],
                |b, _| {
                    let raw = b.load_atomic(&fp, Ty::I32, "acquire");
                    let two = b.c32(FLAG_INCLUSIVE);
                    let f = b.sel(inside, &raw, &two, Ty::I32);
                    let z = b.c32(0);
                    let empty = b.cmp("eq", &f, &z, Ty::I32);
                    let waiting = b.ballot(&empty);
                    let any = b.cmp("ne", &waiting, &z, Ty::I32);
                    (any, vec![f])
                },
                |_, args| args.to_vec(),
            );
            let is_incl = b.cmp("eq", &f[0], &two, Ty::I32);
            let source = b.select(&is_incl, &st.incls, &st.aggs, "!llvm.ptr<1>");
            let vp = b.gep(&source, clamped, Ty::I32, sty.mlir(), 1);
            let raw = b.load_atomic(&vp, sty, "monotonic");
            (f[0].clone(), narrow(b, op, &raw))
        }
        packing => {
            let shift = packing.flag_shift();
            let wp = flag_slot(b, &st.flags, clamped);
            let flag_of = |b: &mut Body, w: &V| -> V {
                let s = b.c64(shift);
                let f = b.shru(w, &s, Ty::I64);
                let f = b.resize(&f, Ty::I64, Ty::I32, false);
                let two = b.c32(FLAG_INCLUSIVE);
                b.sel(inside, &f, &two, Ty::I32)
            };
            let zero = b.c64(0);
            let w = b.while_(
                &[(zero, "i64".into())],
                |b, _| {
                    let w = b.load_atomic(&wp, Ty::I64, "monotonic");
                    let f = flag_of(b, &w);
                    let z = b.c32(0);
                    let empty = b.cmp("eq", &f, &z, Ty::I32);
                    let waiting = b.ballot(&empty);
                    let any = b.cmp("ne", &waiting, &z, Ty::I32);
                    (any, vec![w])
                },
                |_, args| args.to_vec(),
            );
            let f = flag_of(b, &w[0]);
            let value = if packing == Packing::Word32 {
                let low = b.resize(&w[0], Ty::I64, Ty::I32, false);
                from_bits32(b, op, &low)
            } else {
                let mask = b.c64((1i64 << 62) - 1);
                b.and(&w[0], &mask, Ty::I64)
            };
            (f, value)
        }
    }
}

/// Warp 0's decoupled look-back for `tile` with aggregate `agg`: publishes
/// the aggregate, returns the exclusive prefix of the tile (uniform over the
/// warp) after publishing the inclusive prefix.
fn lookback(b: &mut Body, op: &Op, lane: &str, st: &Status, tile: &str, agg: &str) -> V {
    let ty = op.ty;
    let zero = b.c32(0);
    let is_first = b.cmp("eq", tile, &zero, Ty::I32);
    let lane0 = b.cmp("eq", lane, &zero, Ty::I32);
    let prefix = b.if_ty(
        &is_first,
        ty.mlir(),
        1,
        |b| {
            b.if_(&lane0, |b| publish(b, op, st, tile, agg, FLAG_INCLUSIVE));
            vec![op.identity(b)]
        },
        |b| {
            b.if_(&lane0, |b| publish(b, op, st, tile, agg, FLAG_AGGREGATE));
            let one = b.c32(1);
            let base0 = b.sub(tile, &one, Ty::I32);
            let id = op.identity(b);
            let go = b.cbool(true);
            let out = b.while_(
                &[
                    (base0, "i32".into()),
                    (id, ty.mlir().into()),
                    (go, "i1".into()),
                ],
                |_, args| (args[2].clone(), args.to_vec()),
                |b, args| {
                    let (base, prefix) = (&args[0], &args[1]);
                    let pred = b.sub(base, lane, Ty::I32);
                    let zero = b.c32(0);
                    let inside = b.cmp("sge", &pred, &zero, Ty::I32);
                    let clamped = b.maxs(&pred, &zero, Ty::I32);
                    let (f, raw) = read_status(b, op, st, &inside, &clamped);
                    let two = b.c32(FLAG_INCLUSIVE);
                    let is_incl = b.cmp("eq", &f, &two, Ty::I32);
                    let mask = b.ballot(&is_incl);
                    let nearest = b.cttz(&mask);
                    let contributes = b.cmp("sle", lane, &nearest, Ty::I32);
                    let take = b.band(&contributes, &inside);
                    let id = op.identity(b);
                    let mut x = b.sel(&take, &raw, &id, ty);
                    for offset in [1, 2, 4, 8, 16] {
                        let o = b.c32(offset);
                        let y = b.shuffle("down", &x, &o, ty);
                        x = op.combine(b, &y, &x);
                    }
                    let window = b.shuffle("idx", &x, &zero, ty);
                    let prefix = op.combine(b, &window, prefix);
                    let none = b.cmp("eq", &mask, &zero, Ty::I32);
                    let c32 = b.c32(32);
                    let next = b.sub(base, &c32, Ty::I32);
                    vec![next, prefix, none]
                },
            );
            let prefix = out[1].clone();
            b.if_(&lane0, |b| {
                let incl = op.combine(b, &prefix, agg);
                publish(b, op, st, tile, &incl, FLAG_INCLUSIVE)
            });
            vec![prefix]
        },
    );
    prefix[0].clone()
}

/// Block-wide exclusive scan of the threads' row totals (`rows[j]` of
/// every thread, in tile order). Returns, per row, the combination of
/// everything before the thread's row `j` (previous tiles included when
/// `lookback` is given) and the tile's inclusive prefix (every thread).
pub fn block_scan(
    b: &mut Body,
    m: &mut GpuModule,
    kernel: &str,
    op: &Op,
    th: &Threads,
    rows: &[V],
    lookback_on: Option<(&Status, &V)>,
) -> (Vec<V>, V) {
    let ty = op.ty;
    let warps = BLOCK / 32;
    let slots = warps * rows.len();
    debug_assert_eq!(slots % 32, 0);
    let per_lane = slots / 32;
    let wt = m.shared(kernel, "warp_rows", ty.mlir(), slots);
    let pre = m.shared(kernel, "prefixes", ty.mlir(), slots);
    let tinc = m.shared(kernel, "tile_inclusive", ty.mlir(), 1);
    let wt = b.addressof(&wt);
    let pre = b.addressof(&pre);
    let tinc = b.addressof(&tinc);
    let c31 = b.c32(31);
    let last_lane = b.cmp("eq", &th.lane, &c31, Ty::I32);
    let mut lane_excl = Vec::new();
    for (j, r) in rows.iter().enumerate() {
        let s = tile::warp_inclusive(b, op, &th.lane, r);
        let e = tile::warp_exclusive_from(b, op, &th.lane, &s);
        lane_excl.push(e);
        let cj = b.c32((j * warps) as i64);
        let slot = b.add(&cj, &th.warp, Ty::I32);
        b.if_(&last_lane, |b| {
            let p = b.gep(&wt, &slot, Ty::I32, ty.mlir(), 3);
            b.store(&s, &p, ty.mlir(), ty.bytes(), 3);
        });
    }
    b.barrier();
    let zero = b.c32(0);
    let warp0 = b.cmp("eq", &th.warp, &zero, Ty::I32);
    b.if_(&warp0, |b| {
        // Lane l scans slots l * per_lane .. (l + 1) * per_lane.
        let cp = b.c32(per_lane as i64);
        let first = b.mul(&th.lane, &cp, Ty::I32);
        let slots: Vec<V> = (0..per_lane)
            .map(|k| {
                let ck = b.c32(k as i64);
                b.add(&first, &ck, Ty::I32)
            })
            .collect();
        let xs: Vec<V> = slots
            .iter()
            .map(|slot| {
                let p = b.gep(&wt, slot, Ty::I32, ty.mlir(), 3);
                b.load(&p, ty.mlir(), ty.bytes(), 3)
            })
            .collect();
        let mut lane_total = xs[0].clone();
        for x in &xs[1..] {
            lane_total = op.combine(b, &lane_total, x);
        }
        let xs_incl = tile::warp_inclusive(b, op, &th.lane, &lane_total);
        let xe = tile::warp_exclusive_from(b, op, &th.lane, &xs_incl);
        let agg = b.shuffle("idx", &xs_incl, &c31, ty);
        let prefix = match lookback_on {
            Some((st, tile)) => lookback(b, op, &th.lane, st, tile, &agg),
            None => op.identity(b),
        };
        let mut running = op.combine(b, &prefix, &xe);
        for (k, (x, slot)) in xs.iter().zip(&slots).enumerate() {
            let q = b.gep(&pre, slot, Ty::I32, ty.mlir(), 3);
            b.store(&running, &q, ty.mlir(), ty.bytes(), 3);
            if k + 1 < per_lane {
                running = op.combine(b, &running, x);
            }
        }
        let z = b.c32(0);
        let lane0 = b.cmp("eq", &th.lane, &z, Ty::I32);
        b.if_(&lane0, |b| {
            let incl = op.combine(b, &prefix, &agg);
            b.store(&incl, &tinc, ty.mlir(), ty.bytes(), 3);
        });
    });
    b.barrier();
    let mut prefixes = Vec::new();
    for (j, e) in lane_excl.iter().enumerate() {
        let cj = b.c32((j * warps) as i64);
        let slot = b.add(&cj, &th.warp, Ty::I32);
        let p = b.gep(&pre, &slot, Ty::I32, ty.mlir(), 3);
        let row_prefix = b.load(&p, ty.mlir(), ty.bytes(), 3);
        prefixes.push(op.combine(b, &row_prefix, e));
    }
    let total = b.load(&tinc, ty.mlir(), ty.bytes(), 3);
    (prefixes, total)
}

/// What the generic look-back kernel gives its hooks.
pub struct TileCtx {
    pub th: Threads,
    /// Tile id (i32) and count of tiles (i64).
    pub tile: V,
    pub tiles: V,
    /// First element of the tile (i64).
    pub start: V,
    /// Whether the tile is full and the prologue's alignment holds (i1).
    pub full: V,
    /// Values the prologue computed.
    pub env: Vec<V>,
}

/// The items of a tile with their exclusive and inclusive prefixes,
/// `[row][element]` each.
pub type TileStore<'a> = &'a dyn Fn(&mut Body, &TileCtx, &[Vec<V>], &[Vec<V>], &[Vec<V>]);

/// A look-back scan kernel over `n` items in tiles of `shape`.
pub struct LookbackKernel<'a> {
    pub name: &'a str,
    /// Must include `n: i64` and [`STATUS_PARAMS`].
    pub params: &'a [Param],
    pub op: Op,
    pub shape: Shape,
    /// The scanned values are non-negative i64 counts below 2^62.
    pub counts: bool,
    pub lookback: Lookback,
    /// Returns (the alignment condition of the vector path, env values).
    pub prologue: &'a dyn Fn(&mut Body) -> (V, Vec<V>),
    /// The items to scan, `[row][element]`, of `op.ty`.
    pub load: &'a dyn Fn(&mut Body, &TileCtx) -> Vec<Vec<V>>,
    /// Gets the items and their exclusive and inclusive prefixes.
    pub store: TileStore<'a>,
    /// Thread 0 of the last tile, with the total.
    pub total: &'a dyn Fn(&mut Body, &TileCtx, &V),
}

pub fn lookback_kernel(m: &mut GpuModule, k: &LookbackKernel) {
    let op = k.op;
    let tile_elems = k.shape.tile_elems() as i64;
    m.kernel(k.name, k.params, BLOCK, |b, m| {
        let th = tile::threads(b);
        let flags = global_ptr(b, "st_flags");
        let aggs = global_ptr(b, "st_aggs");
        let incls = global_ptr(b, "st_incls");
        let counter = global_ptr(b, "st_counter");
        let (aligned, env) = (k.prologue)(b);
        let tile = tile_id(b, m, k.name, &th, &counter);
        let t64 = b.resize(&tile, Ty::I32, Ty::I64, false);
        let ct = b.c64(tile_elems);
        let start = b.mul(&t64, &ct, Ty::I64);
        let end = b.add(&start, &ct, Ty::I64);
        let inside = b.cmp("sle", &end, "%n", Ty::I64);
        let full = b.band(&inside, &aligned);
        let t1 = b.c64(tile_elems - 1);
        let s = b.add("%n", &t1, Ty::I64);
        let tiles = b.op(format!("arith.divui {s}, {ct} : i64"));
        let one = b.c64(1);
        let tiles = b.maxs(&tiles, &one, Ty::I64);
        let ctx = TileCtx {
            th,
            tile,
            tiles,
            start,
            full,
            env,
        };
        let items = (k.load)(b, &ctx);
        let rows: Vec<V> = items
            .iter()
            .map(|row| {
                let mut x = row[0].clone();
                for y in &row[1..] {
                    x = op.combine(b, &x, y);
                }
                x
            })
            .collect();
        let status = Status {
            flags,
            aggs,
            incls,
            packing: Packing::of(&op, k.counts, k.lookback),
        };
        let (prefixes, total) = block_scan(
            b,
            m,
            k.name,
            &op,
            &ctx.th,
            &rows,
            Some((&status, &ctx.tile)),
        );
        let mut excl = Vec::new();
        let mut incl = Vec::new();
        for (row, prefix) in items.iter().zip(&prefixes) {
            let mut p = prefix.clone();
            let mut e = Vec::new();
            let mut i = Vec::new();
            for x in row {
                let next = op.combine(b, &p, x);
                e.push(p);
                i.push(next.clone());
                p = next;
            }
            excl.push(e);
            incl.push(i);
        }
        (k.store)(b, &ctx, &items, &excl, &incl);
        let zero = b.c32(0);
        let t0 = b.cmp("eq", &ctx.th.tid, &zero, Ty::I32);
        let one = b.c64(1);
        let last = b.sub(&ctx.tiles, &one, Ty::I64);
        let t64 = b.resize(&ctx.tile, Ty::I32, Ty::I64, false);
        let is_last = b.cmp("eq", &t64, &last, Ty::I64);
        let cond = b.band(&t0, &is_last);
        b.if_(&cond, |b| (k.total)(b, &ctx, &total));
    });
}

/// Scratch sizes of a look-back over `tiles` tiles (index): flags
/// ([`STATUS_SPACING`] bytes per tile: a packed word or an i32 flag, then
/// padding), aggs, incls, counter.
pub fn status_layout(b: &mut Body, tiles: &V, op: &Op) -> Vec<V> {
    let four = b.cidx(4);
    let spacing = b.cidx(STATUS_SPACING);
    let flags = b.op(format!("arith.muli {tiles}, {spacing} : index"));
    let sb = b.cidx(op.status_ty().bytes() as i64);
    let values = b.op(format!("arith.muli {tiles}, {sb} : index"));
    vec![flags, values.clone(), values, four]
}

/// Launches `init` for `tiles` (index) tiles with status regions
/// `regions[0..4]`; returns the token.
pub fn launch_init(b: &mut Body, token: &str, module: &str, tiles: &V, regions: &[V]) -> V {
    let grid = host::blocks(b, tiles, BLOCK as i64, 1);
    let count = b.idx_to(tiles, Ty::I64);
    host::launch(
        b,
        token,
        module,
        "init",
        &grid,
        BLOCK,
        &[
            (regions[0].clone(), "!llvm.ptr"),
            (count, "i64"),
            (regions[3].clone(), "!llvm.ptr"),
        ],
    )
}

/// The status arguments of a look-back kernel launch.
pub fn status_args(regions: &[V]) -> Vec<(V, &'static str)> {
    vec![
        (regions[0].clone(), "!llvm.ptr"),
        (regions[1].clone(), "!llvm.ptr"),
        (regions[2].clone(), "!llvm.ptr"),
        (regions[3].clone(), "!llvm.ptr"),
    ]
}

/// The parameters every look-back kernel has, after its own.
pub const STATUS_PARAMS: [Param; 4] = [
    ("st_flags", "!llvm.ptr"),
    ("st_aggs", "!llvm.ptr"),
    ("st_incls", "!llvm.ptr"),
    ("st_counter", "!llvm.ptr"),
];

/// Kernel `scan` of the look-back path.
fn lookback_scan_kernel(m: &mut GpuModule, elem: Elem, op: Op, config: &Config) {
    let ty = op.ty;
    let shape = elem.scan_shape(config);
    let mut params: Vec<Param> = vec![
        ("values", "!llvm.ptr"),
        ("out", "!llvm.ptr"),
        ("n", "i64"),
        ("inclusive", "i32"),
        ("total", "!llvm.ptr"),
    ];
    params.extend(STATUS_PARAMS);
    let prologue = |b: &mut Body| {
        let a = tile::aligned16(b, "%values");
        let c = tile::aligned16(b, "%out");
        let aligned = b.band(&a, &c);
        let values = global_ptr(b, "values");
        let out = global_ptr(b, "out");
        let total = global_ptr(b, "total");
        let zero = b.c32(0);
        let inclusive = b.cmp("ne", "%inclusive", &zero, Ty::I32);
        (aligned, vec![values, out, total, inclusive])
    };
    let load = |b: &mut Body, ctx: &TileCtx| {
        let fill = |b: &mut Body| op.identity(b);
        let map = |b: &mut Body, x: &V| op.normalize(b, x);
        tile::load_tile(
            b,
            &TileLoad {
                ty,
                shape,
                ptr: &ctx.env[0],
                start: &ctx.start,
                n: "%n",
                full: &ctx.full,
                tid: &ctx.th.tid,
                out_ty: ty.mlir(),
                fill: &fill,
                map: &map,
            },
        )
    };
    let store = |b: &mut Body, ctx: &TileCtx, _: &[Vec<V>], excl: &[Vec<V>], incl: &[Vec<V>]| {
        let values: Vec<Vec<V>> = excl
            .iter()
            .zip(incl)
            .map(|(e, i)| {
                e.iter()
                    .zip(i)
                    .map(|(e, i)| {
                        let v = b.sel(&ctx.env[3], i, e, ty);
                        op.finish(b, &v)
                    })
                    .collect()
            })
            .collect();
        tile::store_tile(
            b,
            ty,
            shape,
            &ctx.env[1],
            &ctx.start,
            "%n",
            &ctx.full,
            &ctx.th.tid,
            &values,
        );
    };
    let total = |b: &mut Body, ctx: &TileCtx, total: &V| {
        let v = op.finish(b, total);
        b.store(&v, &ctx.env[2], ty.mlir(), ty.bytes(), 1);
    };
    lookback_kernel(
        m,
        &LookbackKernel {
            name: "scan",
            params: &params,
            op,
            shape,
            counts: false,
            lookback: config.lookback,
            prologue: &prologue,
            load: &load,
            store: &store,
            total: &total,
        },
    );
}

/// Kernel `scan_blocks` of the blocked float order.
fn blocked_scan_kernel(m: &mut GpuModule, op: Op) {
    let ty = op.ty;
    let vec = 16 / ty.bytes();
    let vt = tile::vty(ty, vec);
    let chunk = reduce::chunk_elems(ty);
    m.kernel(
        "scan_blocks",
        &[
            ("values", "!llvm.ptr"),
            ("out", "!llvm.ptr"),
            ("n", "i64"),
            ("carries", "!llvm.ptr"),
            ("inclusive", "i32"),
        ],
        32,
        |b, m| {
            let lane = b.sreg("thread_id");
            let values = global_ptr(b, "values");
            let out = global_ptr(b, "out");
            let carries = global_ptr(b, "carries");
            let in_aligned = tile::aligned16(b, "%values");
            let out_aligned = tile::aligned16(b, "%out");
            let zero32 = b.c32(0);
            let inclusive = b.cmp("ne", "%inclusive", &zero32, Ty::I32);
            let (bid, start, end) = reduce::sequential_range(b);
            let len = b.sub(&end, &start, Ty::I64);
            let zero64 = b.c64(0);
            let len = b.maxs(&len, &zero64, Ty::I64);
            let c1 = b.c64(chunk as i64 - 1);
            let cc = b.c64(chunk as i64);
            let s = b.add(&len, &c1, Ty::I64);
            let chunks = b.op(format!("arith.divui {s}, {cc} : i64"));
            let buf = m.shared("scan_blocks", "chunk", ty.mlir(), chunk);
            let buf = b.addressof(&buf);
            let cp = b.gep(&carries, &bid, Ty::I64, ty.mlir(), 1);
            let carry = b.load(&cp, ty.mlir(), ty.bytes(), 1);
            let first =
                reduce::load_chunk(b, &op, &values, &in_aligned, &start, &end, &zero64, &lane);
            let mut inits = vec![(carry, ty.mlir().to_string())];
            inits.extend(first.iter().map(|v| (v.clone(), vt.clone())));
            let one = b.c64(1);
            b.for_(&zero64, &chunks, &one, "i64", &inits, |b, c, args| {
                let acc = &args[0];
                b.syncwarp();
                reduce::stage(b, &buf, &lane, ty, &args[1..]);
                b.syncwarp();
                let next = b.add(c, &one, Ty::I64);
                let loaded =
                    reduce::load_chunk(b, &op, &values, &in_aligned, &start, &end, &next, &lane);
                let z = b.c32(0);
                let lane0 = b.cmp("eq", &lane, &z, Ty::I32);
                let scanned = b.if_ty(
                    &lane0,
                    ty.mlir(),
                    1,
                    |b| {
                        let scan_buffer = |b: &mut Body, inclusive: bool| -> Vec<V> {
                            let steps = b.c32((chunk / vec / reduce::FOLD_UNROLL) as i64);
                            let o = b.c32(1);
                            let z = b.c32(0);
                            b.for_(
                                &z,
                                &steps,
                                &o,
                                "i32",
                                &[(acc.clone(), ty.mlir().to_string())],
                                |b, step, a| {
                                    let slots = reduce::group_slots(b, step, ty);
                                    let vectors = reduce::load_group(b, &buf, step, ty);
                                    let mut a = a[0].clone();
                                    for (v, slot) in vectors.iter().zip(&slots) {
                                        let mut w = b.poison(&vt);
                                        for k in 0..vec {
                                            let x = b.extract(v, k, &vt);
                                            let nx = op.combine(b, &a, &x);
                                            let o = if inclusive { &nx } else { &a };
                                            w = b.insert(&w, o, k, &vt);
                                            a = nx;
                                        }
                                        let p = b.gep(&buf, slot, Ty::I32, ty.mlir(), 3);
                                        b.store(&w, &p, &vt, 16, 3);
                                    }
                                    vec![a]
                                },
                            )
                        };
                        b.if_ty(
                            &inclusive,
                            ty.mlir(),
                            1,
                            |b| scan_buffer(b, true),
                            |b| scan_buffer(b, false),
                        )
                    },
                    |_| vec![acc.clone()],
                );
                b.syncwarp();
                let results = reduce::unstage(b, &buf, &lane, ty);
                store_chunk(b, ty, &out, &out_aligned, &start, &end, c, &lane, &results);
                let mut next_args = vec![scanned[0].clone()];
                next_args.extend(loaded);
                next_args
            });
        },
    );
}

/// Stores lane `lane`'s vectors of chunk `c` (the layout of
/// [`reduce::load_chunk`]), elements before `end` only.
#[allow(clippy::too_many_arguments)]
fn store_chunk(
    b: &mut Body,
    ty: Ty,
    ptr: &str,
    aligned: &str,
    start: &str,
    end: &str,
    c: &str,
    lane: &str,
    vectors: &[V],
) {
    let vec = 16 / ty.bytes();
    let vt = tile::vty(ty, vec);
    let chunk = b.c64(reduce::chunk_elems(ty) as i64);
    let cs = b.mul(c, &chunk, Ty::I64);
    let base = b.add(start, &cs, Ty::I64);
    let lane = b.resize(lane, Ty::I32, Ty::I64, false);
    let cvec = b.c64(vec as i64);
    for (u, v) in vectors.iter().enumerate() {
        let cu = b.c64((u * 32) as i64);
        let slot = b.add(&cu, &lane, Ty::I64);
        let slot = b.mul(&slot, &cvec, Ty::I64);
        let first = b.add(&base, &slot, Ty::I64);
        let last = b.add(&first, &cvec, Ty::I64);
        let inside = b.cmp("sle", &last, end, Ty::I64);
        let full = b.band(&inside, aligned);
        b.if_then_else(
            &full,
            &[],
            |b| {
                let p = b.gep(ptr, &first, Ty::I64, ty.mlir(), 1);
                b.store(v, &p, &vt, 16, 1);
                Vec::new()
            },
            |b| {
                for k in 0..vec {
                    let kk = b.c64(k as i64);
                    let i = b.add(&first, &kk, Ty::I64);
                    let valid = b.cmp("slt", &i, end, Ty::I64);
                    b.if_(&valid, |b| {
                        let x = b.extract(v, k, &vt);
                        let p = b.gep(ptr, &i, Ty::I64, ty.mlir(), 1);
                        b.store(&x, &p, ty.mlir(), ty.bytes(), 1);
                    });
                }
                Vec::new()
            },
        );
    }
}

/// The host code of scan; adds the kernels to `m`.
/// The scan's host functions return the total when `with_total` (read
/// back: the host waits for the scan), else nothing (no wait).
pub fn generate(
    m: &mut GpuModule,
    symbol: &str,
    elem: Elem,
    kind: Kind,
    with_total: bool,
    config: &Config,
) -> String {
    let op = elem.op(kind);
    let blocked = super::blocked_float(elem, kind, config);
    if blocked {
        reduce::blocked_kernels(m, op);
        blocked_scan_kernel(m, op);
    } else {
        init_kernel(m);
        lookback_scan_kernel(m, elem, op, config);
    }
    let module = m.name.clone();
    let t = elem.mlir();
    let memref = format!("memref<?x{t}>");
    let bytes = elem.bytes() as i64;
    let tile_elems = elem.scan_shape(config).tile_elems() as i64;
    let layout = move |b: &mut Body, n: &V| -> Vec<V> {
        if blocked {
            let count = host::blocks(b, n, SEQUENTIAL_BLOCK as i64, 1);
            let size = b.cidx(bytes);
            let totals = b.op(format!("arith.muli {count}, {size} : index"));
            let out = b.cidx(8);
            vec![totals.clone(), totals, out]
        } else {
            let tiles = host::blocks(b, n, tile_elems, 1);
            let mut regions = status_layout(b, &tiles, &op);
            regions.push(b.cidx(8));
            regions
        }
    };
    let memref_for_body = memref.clone();
    let body = move |b: &mut Body, ctx: &host::Ctx| -> Option<V> {
        let values = host::memref_ptr(b, "%values", &memref_for_body, t, bytes as usize);
        let out = host::memref_ptr(b, "%scanned", &memref_for_body, t, bytes as usize);
        let inclusive = b.op("arith.extui %inclusive : i1 to i32");
        let t0 = b.op("gpu.wait async");
        let one = b.cidx(1);
        let (token, total_offset) = if blocked {
            let (totals, carries, total) = (&ctx.regions[0], &ctx.regions[1], &ctx.regions[2]);
            let grid = host::blocks(b, &ctx.n, SEQUENTIAL_BLOCK as i64, 1);
            let count = b.idx_to(&grid, Ty::I64);
            let t1 = host::launch(
                b,
                &t0,
                &module,
                "fold_blocks",
                &grid,
                32,
                &[
                    (values.clone(), "!llvm.ptr"),
                    (ctx.n64.clone(), "i64"),
                    (totals.clone(), "!llvm.ptr"),
                ],
            );
            let mode = b.c32(1);
            let t2 = host::launch(
                b,
                &t1,
                &module,
                "fold_totals",
                &one,
                BLOCK,
                &[
                    (totals.clone(), "!llvm.ptr"),
                    (count, "i64"),
                    (total.clone(), "!llvm.ptr"),
                    (carries.clone(), "!llvm.ptr"),
                    (mode, "i32"),
                ],
            );
            let t3 = host::launch(
                b,
                &t2,
                &module,
                "scan_blocks",
                &grid,
                32,
                &[
                    (values.clone(), "!llvm.ptr"),
                    (out.clone(), "!llvm.ptr"),
                    (ctx.n64.clone(), "i64"),
                    (carries.clone(), "!llvm.ptr"),
                    (inclusive.clone(), "i32"),
                ],
            );
            (t3, ctx.offsets[2].clone())
        } else {
            let tiles = host::blocks(b, &ctx.n, tile_elems, 1);
            let t1 = launch_init(b, &t0, &module, &tiles, &ctx.regions);
            let mut args = vec![
                (values.clone(), "!llvm.ptr"),
                (out.clone(), "!llvm.ptr"),
                (ctx.n64.clone(), "i64"),
                (inclusive.clone(), "i32"),
                (ctx.regions[4].clone(), "!llvm.ptr"),
            ];
            args.extend(status_args(&ctx.regions));
            let t2 = host::launch(b, &t1, &module, "scan", &tiles, BLOCK, &args);
            (t2, ctx.offsets[4].clone())
        };
        if !with_total {
            // No wait: see `host`'s header (one stream orders what follows).
            return None;
        }
        let (token, hostmem) = host::read_back(b, &token, &ctx.scratch, &total_offset, t);
        b.line(format!("gpu.wait [{token}]"));
        Some(host::host_load(b, &hostmem, t))
    };
    host::emit(&HostSpec {
        symbol: symbol.to_string(),
        params: vec![
            HostParam::new("values", memref.clone()),
            HostParam::new("scanned", memref),
            HostParam::new("n", "index"),
            HostParam::new("inclusive", "i1"),
        ],
        count: "n",
        result: with_total.then(|| t.to_string()),
        layout: &layout,
        body: &body,
    })
}
