//! Tiles: the data layout the tiled kernels share, their loads and stores,
//! and block-wide reductions.
//!
//! Thread `t` of a tile holds `rows` rows of `vec` consecutive elements
//! (a [`Shape`]: `vec` is one 16-byte vector of the element type); row `j`
//! of thread `t` starts at tile offset `(j * BLOCK + t) * vec`, so each row
//! of the block is one fully coalesced access, and the tile order of the
//! items is (row, thread, element). A full tile whose list is 16-byte
//! aligned is read and written with 16-byte vector loads and stores (a
//! list of another element size read in the same layout, such as the flags
//! of compact, uses `vec`-element vectors of its own type); a partial tile
//! (or a misaligned list) takes a guarded path, one element at a time, with
//! the operation's identity for missing elements.
//!
//! One vector per row matters: with two (each thread's row 32 bytes
//! long), every 16-byte access of a warp touches every other 16 bytes of a
//! 1 KiB span, and the look-back scan of 256M i32 ran at 54% of copy
//! bandwidth instead of 70% (H200, PERF.md).

use super::BLOCK;
use super::emit::{Body, GpuModule, Ty, V};
use super::op::Op;

/// How a thread's items of a tile lie: `rows` rows of `vec` consecutive
/// elements, row `j` of thread `t` at tile offset `(j * BLOCK + t) * vec`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shape {
    pub rows: usize,
    pub vec: usize,
}

impl Shape {
    pub fn per_thread(self) -> usize {
        self.rows * self.vec
    }

    /// Elements of a tile.
    pub fn tile_elems(self) -> usize {
        BLOCK * self.per_thread()
    }
}

/// The thread's place in its block (i32 values).
#[derive(Debug, Clone)]
pub struct Threads {
    pub tid: V,
    pub lane: V,
    pub warp: V,
}

pub fn threads(b: &mut Body) -> Threads {
    let tid = b.sreg("thread_id");
    let c31 = b.c32(31);
    let c5 = b.c32(5);
    let lane = b.and(&tid, &c31, Ty::I32);
    let warp = b.shru(&tid, &c5, Ty::I32);
    Threads { tid, lane, warp }
}

/// The first index (i64) of this thread in a grid-stride loop over blocks
/// of `BLOCK` threads, and the stride (all the grid's threads).
pub fn grid_stride(b: &mut Body, tid: &str) -> (V, V) {
    let bid = b.sreg("block_id");
    let grid = b.op("gpu.grid_dim x");
    let grid = b.idx_to(&grid, Ty::I64);
    let tid = b.resize(tid, Ty::I32, Ty::I64, false);
    let bid = b.resize(&bid, Ty::I32, Ty::I64, false);
    let cb = b.c64(super::BLOCK as i64);
    let first = b.mul(&bid, &cb, Ty::I64);
    let first = b.add(&first, &tid, Ty::I64);
    let step = b.mul(&grid, &cb, Ty::I64);
    (first, step)
}

/// Whether the generic pointer `%name` is 16-byte aligned.
pub fn aligned16(b: &mut Body, ptr: &str) -> V {
    let address = b.op(format!("llvm.ptrtoint {ptr} : !llvm.ptr to i64"));
    let c15 = b.c64(15);
    let low = b.and(&address, &c15, Ty::I64);
    let zero = b.c64(0);
    b.cmp("eq", &low, &zero, Ty::I64)
}

/// `vector<VECxT>` type text.
pub fn vty(ty: Ty, vec: usize) -> String {
    format!("vector<{vec}x{}>", ty.mlir())
}

/// The tile offset of the first element of row `row` of thread `tid`, as
/// i64: `(row * BLOCK + tid) * vec`.
pub fn row_offset(b: &mut Body, tid: &str, row: usize, vec: usize) -> V {
    let t = b.resize(tid, Ty::I32, Ty::I64, false);
    let r = b.c64((row * BLOCK) as i64);
    let s = b.add(&t, &r, Ty::I64);
    let v = b.c64(vec as i64);
    b.mul(&s, &v, Ty::I64)
}

/// Elements per vector access of a row of `vec` elements of `ty`: a
/// 16-byte vector, or the whole row when it is shorter.
pub fn per_access(ty: Ty, vec: usize) -> usize {
    vec.min(16 / ty.bytes())
}

/// Loads the `vec` elements at `first` (i64) with aligned vector loads.
pub fn load_row(b: &mut Body, ty: Ty, vec: usize, ptr: &str, first: &str) -> Vec<V> {
    let per = per_access(ty, vec);
    let vt = vty(ty, per);
    let mut out = Vec::new();
    for k in 0..vec / per {
        let off = b.c64((k * per) as i64);
        let index = b.add(first, &off, Ty::I64);
        let p = b.gep(ptr, &index, Ty::I64, ty.mlir(), 1);
        let v = b.load(&p, &vt, per * ty.bytes(), 1);
        for lane in 0..per {
            out.push(b.extract(&v, lane, &vt));
        }
    }
    out
}

/// Stores `values` at `first` (i64) with aligned vector stores.
pub fn store_row(b: &mut Body, ty: Ty, ptr: &str, first: &str, values: &[V]) {
    let per = per_access(ty, values.len());
    let vt = vty(ty, per);
    for (k, part) in values.chunks(per).enumerate() {
        let off = b.c64((k * per) as i64);
        let index = b.add(first, &off, Ty::I64);
        let p = b.gep(ptr, &index, Ty::I64, ty.mlir(), 1);
        let mut v = b.poison(&vt);
        for (lane, x) in part.iter().enumerate() {
            v = b.insert(&v, x, lane, &vt);
        }
        b.store(&v, &p, &vt, per * ty.bytes(), 1);
    }
}

/// How one tile is read.
pub struct TileLoad<'a> {
    /// Element type in memory.
    pub ty: Ty,
    pub shape: Shape,
    /// Global pointer (`!llvm.ptr<1>`).
    pub ptr: &'a str,
    /// First element of the tile (i64).
    pub start: &'a str,
    pub n: &'a str,
    /// Whether the whole tile is in range and aligned (i1).
    pub full: &'a str,
    pub tid: &'a str,
    /// The type of the produced values.
    pub out_ty: &'a str,
    /// The value of a missing element.
    pub fill: &'a dyn Fn(&mut Body) -> V,
    /// Loaded element to produced value.
    pub map: &'a dyn Fn(&mut Body, &V) -> V,
}

/// The tile's items, `[row][element]`.
pub fn load_tile(b: &mut Body, load: &TileLoad) -> Vec<Vec<V>> {
    let TileLoad {
        ty,
        shape,
        ptr,
        start,
        n,
        full,
        tid,
        out_ty,
        fill,
        map,
    } = *load;
    let Shape { rows, vec } = shape;
    let count = shape.per_thread();
    let flat = b.if_ty(
        full,
        out_ty,
        count,
        |b| {
            let mut out = Vec::new();
            for row in 0..rows {
                let offset = row_offset(b, tid, row, vec);
                let index = b.add(start, &offset, Ty::I64);
                for x in load_row(b, ty, vec, ptr, &index) {
                    out.push(map(b, &x));
                }
            }
            out
        },
        |b| {
            let mut out = Vec::new();
            for row in 0..rows {
                let offset = row_offset(b, tid, row, vec);
                let first = b.add(start, &offset, Ty::I64);
                for k in 0..vec {
                    let kk = b.c64(k as i64);
                    let index = b.add(&first, &kk, Ty::I64);
                    let valid = b.cmp("slt", &index, n, Ty::I64);
                    let value = b.if_ty(
                        &valid,
                        out_ty,
                        1,
                        |b| {
                            let p = b.gep(ptr, &index, Ty::I64, ty.mlir(), 1);
                            let x = b.load(&p, ty.mlir(), ty.bytes(), 1);
                            vec![map(b, &x)]
                        },
                        |b| vec![fill(b)],
                    );
                    out.push(value[0].clone());
                }
            }
            out
        },
    );
    flat.chunks(vec).map(<[V]>::to_vec).collect()
}

/// Writes a tile's values (`[row][element]` of `shape`, already of the
/// memory type).
#[allow(clippy::too_many_arguments)]
pub fn store_tile(
    b: &mut Body,
    ty: Ty,
    shape: Shape,
    ptr: &str,
    start: &str,
    n: &str,
    full: &str,
    tid: &str,
    values: &[Vec<V>],
) {
    let vec = shape.vec;
    debug_assert_eq!(values.len(), shape.rows);
    b.if_then_else(
        full,
        &[],
        |b| {
            for (row, items) in values.iter().enumerate() {
                let offset = row_offset(b, tid, row, vec);
                let index = b.add(start, &offset, Ty::I64);
                store_row(b, ty, ptr, &index, items);
            }
            Vec::new()
        },
        |b| {
            for (row, items) in values.iter().enumerate() {
                let offset = row_offset(b, tid, row, vec);
                let first = b.add(start, &offset, Ty::I64);
                for (k, x) in items.iter().enumerate() {
                    let kk = b.c64(k as i64);
                    let index = b.add(&first, &kk, Ty::I64);
                    let valid = b.cmp("slt", &index, n, Ty::I64);
                    b.if_(&valid, |b| {
                        let p = b.gep(ptr, &index, Ty::I64, ty.mlir(), 1);
                        b.store(x, &p, ty.mlir(), ty.bytes(), 1);
                    });
                }
            }
            Vec::new()
        },
    );
}

/// Reduces `x` over the block in thread order; the result is valid in
/// thread 0. `kernel` names the workgroup array it declares.
pub fn block_reduce(
    b: &mut Body,
    m: &mut GpuModule,
    kernel: &str,
    op: &Op,
    th: &Threads,
    x: &V,
) -> V {
    let mut x = x.clone();
    for offset in [1, 2, 4, 8, 16] {
        let o = b.c32(offset);
        let y = b.shuffle("down", &x, &o, op.ty);
        x = op.combine(b, &x, &y);
    }
    let warps = BLOCK / 32;
    let sym = m.shared(kernel, "warp_totals", op.ty.mlir(), warps);
    let base = b.addressof(&sym);
    let zero = b.c32(0);
    let lane0 = b.cmp("eq", &th.lane, &zero, Ty::I32);
    let warp = th.warp.clone();
    b.if_(&lane0, |b| {
        let p = b.gep(&base, &warp, Ty::I32, op.ty.mlir(), 3);
        b.store(&x, &p, op.ty.mlir(), op.ty.bytes(), 3);
    });
    b.barrier();
    let t0 = b.cmp("eq", &th.tid, &zero, Ty::I32);
    let ty = op.ty.mlir();
    let r = b.if_ty(
        &t0,
        ty,
        1,
        |b| {
            let mut acc = b.load(&base, ty, op.ty.bytes(), 3);
            for w in 1..warps {
                let k = b.c32(w as i64);
                let p = b.gep(&base, &k, Ty::I32, ty, 3);
                let v = b.load(&p, ty, op.ty.bytes(), 3);
                acc = op.combine(b, &acc, &v);
            }
            vec![acc]
        },
        |b| vec![op.identity(b)],
    );
    r[0].clone()
}

/// Inclusive scan over the warp's lanes (lane order).
pub fn warp_inclusive(b: &mut Body, op: &Op, lane: &str, x: &V) -> V {
    let mut x = x.clone();
    for offset in [1, 2, 4, 8, 16] {
        let o = b.c32(offset);
        let y = b.shuffle("up", &x, &o, op.ty);
        let combined = op.combine(b, &y, &x);
        let has = b.cmp("sge", lane, &o, Ty::I32);
        x = b.sel(&has, &combined, &x, op.ty);
    }
    x
}

/// The exclusive scan from an inclusive one (identity in lane 0).
pub fn warp_exclusive_from(b: &mut Body, op: &Op, lane: &str, inclusive: &V) -> V {
    let one = b.c32(1);
    let y = b.shuffle("up", inclusive, &one, op.ty);
    let zero = b.c32(0);
    let first = b.cmp("eq", lane, &zero, Ty::I32);
    let id = op.identity(b);
    b.sel(&first, &id, &y, op.ty)
}
