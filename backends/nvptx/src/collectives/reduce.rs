//! `pgpu.list.reduce` on the GPU.
//!
//! **Tree order** (integer kinds, float `min`/`max`, and float `add`/`mul`
//! with [`FloatOrder::Tree`](super::FloatOrder::Tree)): kernel `partials`
//! runs `G = clamp(tiles, 1, 1024)` blocks of 256 threads; block `g` visits
//! tiles `g, g + G, ...` (tile layout in [`super::tile`]: four 16-byte
//! vector loads per thread and tile, all in flight together) and combines
//! each item into one of the thread's `4 * VEC` accumulators. The thread
//! then folds its accumulators, the block reduces with `gpu.shuffle down`
//! and workgroup memory, and thread 0 writes the block's partial. Kernel
//! `final` (one block) folds the `G` partials the same way. The association
//! depends only on the count, so results are deterministic; for the
//! associative kinds they are the sequential result.
//!
//! **Blocked float order** (float `add`/`mul`, the default): the runtime
//! folds each block of 65536 elements from the identity in index order,
//! then folds the block totals from the identity (a single fold for up to
//! 65536 elements). Kernel `fold_blocks` gives each 65536-element block one
//! warp: the warp loads 2 KiB chunks with coalesced vector loads (the next
//! chunk's loads are issued before lane 0 folds the current one, so memory
//! latency hides behind the fold), stages them in workgroup memory, and
//! lane 0 folds them, eight 16-byte workgroup loads at a time so that
//! their latencies overlap and the fold runs at the speed of its dependent
//! chain of adds or multiplies. Kernel `fold_totals`
//! (one block) folds the block totals in order, 1024 at a time.

use super::emit::{Body, GpuModule, Ty, V, global_ptr};
use super::host::{self, HostParam, HostSpec};
use super::op::Op;
use super::tile::{self, TileLoad};
use super::{BLOCK, Config, Elem, Kind, REDUCE_GRID, ROWS, SEQUENTIAL_BLOCK};

/// Lanes' 16-byte vectors per chunk of the blocked kernels.
pub const CHUNK_VECTORS: usize = 4;

/// Elements per tile of `elem` (tiles of `ROWS` 16-byte vectors per thread).
pub fn tile_elems(elem: Elem) -> usize {
    elem.vector_rows(ROWS).tile_elems()
}

/// Adds the tree-order kernels `partials` and `final`.
fn tree_kernels(m: &mut GpuModule, elem: Elem, op: Op) {
    let ty = op.ty;
    let shape = elem.vector_rows(ROWS);
    let tile = tile_elems(elem) as i64;
    m.kernel(
        "partials",
        &[
            ("values", "!llvm.ptr"),
            ("n", "i64"),
            ("partials", "!llvm.ptr"),
            ("grid", "i64"),
        ],
        BLOCK,
        |b, m| {
            let th = tile::threads(b);
            let values = global_ptr(b, "values");
            let partials = global_ptr(b, "partials");
            let aligned = tile::aligned16(b, "%values");
            let bid = b.sreg("block_id");
            let bid = b.resize(&bid, Ty::I32, Ty::I64, false);
            let t1 = b.c64(tile - 1);
            let tc = b.c64(tile);
            let s = b.add("%n", &t1, Ty::I64);
            let tiles = b.op(format!("arith.divui {s}, {tc} : i64"));
            let id = op.identity(b);
            let inits: Vec<(V, String)> = (0..shape.per_thread())
                .map(|_| (id.clone(), ty.mlir().to_string()))
                .collect();
            let accs = b.for_(&bid, &tiles, "%grid", "i64", &inits, |b, t, accs| {
                let start = b.mul(t, &tc, Ty::I64);
                let end = b.add(&start, &tc, Ty::I64);
                let inside = b.cmp("sle", &end, "%n", Ty::I64);
                let full = b.band(&inside, &aligned);
                let fill = |b: &mut Body| op.identity(b);
                let map = |b: &mut Body, x: &V| op.normalize(b, x);
                let items = tile::load_tile(
                    b,
                    &TileLoad {
                        ty,
                        shape,
                        ptr: &values,
                        start: &start,
                        n: "%n",
                        full: &full,
                        tid: &th.tid,
                        out_ty: ty.mlir(),
                        fill: &fill,
                        map: &map,
                    },
                );
                items
                    .iter()
                    .flatten()
                    .zip(accs)
                    .map(|(x, a)| op.combine(b, a, x))
                    .collect()
            });
            let mut x = accs[0].clone();
            for a in &accs[1..] {
                x = op.combine(b, &x, a);
            }
            let r = tile::block_reduce(b, m, "partials", &op, &th, &x);
            let zero = b.c32(0);
            let t0 = b.cmp("eq", &th.tid, &zero, Ty::I32);
            b.if_(&t0, |b| {
                let p = b.gep(&partials, &bid, Ty::I64, ty.mlir(), 1);
                b.store(&r, &p, ty.mlir(), ty.bytes(), 1);
            });
        },
    );
    m.kernel(
        "final",
        &[
            ("partials", "!llvm.ptr"),
            ("count", "i64"),
            ("out", "!llvm.ptr"),
        ],
        BLOCK,
        |b, m| {
            let th = tile::threads(b);
            let partials = global_ptr(b, "partials");
            let out = global_ptr(b, "out");
            let per = REDUCE_GRID / BLOCK;
            let tid = b.resize(&th.tid, Ty::I32, Ty::I64, false);
            let cper = b.c64(per as i64);
            let first = b.mul(&tid, &cper, Ty::I64);
            let mut acc = op.identity(b);
            for k in 0..per {
                let kk = b.c64(k as i64);
                let i = b.add(&first, &kk, Ty::I64);
                let valid = b.cmp("slt", &i, "%count", Ty::I64);
                let x = b.if_ty(
                    &valid,
                    ty.mlir(),
                    1,
                    |b| {
                        let p = b.gep(&partials, &i, Ty::I64, ty.mlir(), 1);
                        vec![b.load(&p, ty.mlir(), ty.bytes(), 1)]
                    },
                    |b| vec![op.identity(b)],
                );
                acc = op.combine(b, &acc, &x[0]);
            }
            let r = tile::block_reduce(b, m, "final", &op, &th, &acc);
            let zero = b.c32(0);
            let t0 = b.cmp("eq", &th.tid, &zero, Ty::I32);
            b.if_(&t0, |b| {
                let r = op.finish(b, &r);
                b.store(&r, &out, ty.mlir(), ty.bytes(), 1);
            });
        },
    );
}

/// Elements per chunk of the blocked kernels.
pub fn chunk_elems(ty: Ty) -> usize {
    32 * CHUNK_VECTORS * (16 / ty.bytes())
}

/// The 16-byte vectors of chunk `c` (i64) of the blocked layout that lane
/// `lane` loads: element offset `start + c * CHUNK + (u * 32 + lane) * VEC`
/// for vector `u`; elements at or past `end` are `op`'s identity.
#[allow(clippy::too_many_arguments)]
pub fn load_chunk(
    b: &mut Body,
    op: &Op,
    ptr: &str,
    aligned: &str,
    start: &str,
    end: &str,
    c: &str,
    lane: &str,
) -> Vec<V> {
    let ty = op.ty;
    let vec = 16 / ty.bytes();
    let vt = tile::vty(ty, vec);
    let chunk = b.c64(chunk_elems(ty) as i64);
    let cs = b.mul(c, &chunk, Ty::I64);
    let base = b.add(start, &cs, Ty::I64);
    let lane = b.resize(lane, Ty::I32, Ty::I64, false);
    let cvec = b.c64(vec as i64);
    let mut out = Vec::new();
    for u in 0..CHUNK_VECTORS {
        let cu = b.c64((u * 32) as i64);
        let slot = b.add(&cu, &lane, Ty::I64);
        let slot = b.mul(&slot, &cvec, Ty::I64);
        let first = b.add(&base, &slot, Ty::I64);
        let last = b.add(&first, &cvec, Ty::I64);
        let inside = b.cmp("sle", &last, end, Ty::I64);
        let full = b.band(&inside, aligned);
        let v = b.if_ty(
            &full,
            &vt,
            1,
            |b| {
                let p = b.gep(ptr, &first, Ty::I64, ty.mlir(), 1);
                vec![b.load(&p, &vt, 16, 1)]
            },
            |b| {
                let mut v = b.poison(&vt);
                for k in 0..vec {
                    let kk = b.c64(k as i64);
                    let i = b.add(&first, &kk, Ty::I64);
                    let valid = b.cmp("slt", &i, end, Ty::I64);
                    let x = b.if_ty(
                        &valid,
                        ty.mlir(),
                        1,
                        |b| {
                            let p = b.gep(ptr, &i, Ty::I64, ty.mlir(), 1);
                            vec![b.load(&p, ty.mlir(), ty.bytes(), 1)]
                        },
                        |b| vec![op.identity(b)],
                    );
                    v = b.insert(&v, &x[0], k, &vt);
                }
                vec![v]
            },
        );
        out.push(v[0].clone());
    }
    out
}

/// The range `[start, end)` of the 65536-element block of this CUDA block
/// (i64 values).
pub fn sequential_range(b: &mut Body) -> (V, V, V) {
    let bid = b.sreg("block_id");
    let bid = b.resize(&bid, Ty::I32, Ty::I64, false);
    let size = b.c64(SEQUENTIAL_BLOCK as i64);
    let start = b.mul(&bid, &size, Ty::I64);
    let end = b.add(&start, &size, Ty::I64);
    let end = b.op(format!("arith.minsi {end}, %n : i64"));
    (bid, start, end)
}

/// Adds `fold_blocks` and `fold_totals` (blocked float order).
pub fn blocked_kernels(m: &mut GpuModule, op: Op) {
    let ty = op.ty;
    let vec = 16 / ty.bytes();
    let vt = tile::vty(ty, vec);
    let chunk = chunk_elems(ty);
    m.kernel(
        "fold_blocks",
        &[
            ("values", "!llvm.ptr"),
            ("n", "i64"),
            ("totals", "!llvm.ptr"),
        ],
        32,
        |b, m| {
            let lane = b.sreg("thread_id");
            let values = global_ptr(b, "values");
            let totals = global_ptr(b, "totals");
            let aligned = tile::aligned16(b, "%values");
            let (bid, start, end) = sequential_range(b);
            let len = b.sub(&end, &start, Ty::I64);
            let zero64 = b.c64(0);
            let len = b.maxs(&len, &zero64, Ty::I64);
            let c1 = b.c64(chunk as i64 - 1);
            let cc = b.c64(chunk as i64);
            let s = b.add(&len, &c1, Ty::I64);
            let chunks = b.op(format!("arith.divui {s}, {cc} : i64"));
            let buf = m.shared("fold_blocks", "chunk", ty.mlir(), chunk);
            let buf = b.addressof(&buf);
            let first = load_chunk(b, &op, &values, &aligned, &start, &end, &zero64, &lane);
            let id = op.identity(b);
            let mut inits = vec![(id, ty.mlir().to_string())];
            inits.extend(first.iter().map(|v| (v.clone(), vt.clone())));
            let one = b.c64(1);
            let out = b.for_(&zero64, &chunks, &one, "i64", &inits, |b, c, args| {
                let acc = &args[0];
                b.syncwarp();
                stage(b, &buf, &lane, ty, &args[1..]);
                b.syncwarp();
                let next = b.add(c, &one, Ty::I64);
                let loaded = load_chunk(b, &op, &values, &aligned, &start, &end, &next, &lane);
                let zero = b.c32(0);
                let lane0 = b.cmp("eq", &lane, &zero, Ty::I32);
                let folded = b.if_ty(
                    &lane0,
                    ty.mlir(),
                    1,
                    |b| vec![fold_buffer(b, &op, &buf, chunk, acc)],
                    |_| vec![acc.clone()],
                );
                let mut next_args = vec![folded[0].clone()];
                next_args.extend(loaded);
                next_args
            });
            let zero = b.c32(0);
            let lane0 = b.cmp("eq", &lane, &zero, Ty::I32);
            b.if_(&lane0, |b| {
                let p = b.gep(&totals, &bid, Ty::I64, ty.mlir(), 1);
                b.store(&out[0], &p, ty.mlir(), ty.bytes(), 1);
            });
        },
    );
    totals_kernel(m, op);
}

/// Lane `lane` stores its chunk vectors to the workgroup buffer.
pub fn stage(b: &mut Body, buf: &str, lane: &str, ty: Ty, vectors: &[V]) {
    let vec = 16 / ty.bytes();
    let vt = tile::vty(ty, vec);
    for (u, v) in vectors.iter().enumerate() {
        let cu = b.c32((u * 32) as i64);
        let slot = b.add(&cu, lane, Ty::I32);
        let cvec = b.c32(vec as i64);
        let slot = b.mul(&slot, &cvec, Ty::I32);
        let p = b.gep(buf, &slot, Ty::I32, ty.mlir(), 3);
        b.store(v, &p, &vt, 16, 3);
    }
}

/// Lane `lane` loads its chunk vectors back from the workgroup buffer.
pub fn unstage(b: &mut Body, buf: &str, lane: &str, ty: Ty) -> Vec<V> {
    let vec = 16 / ty.bytes();
    let vt = tile::vty(ty, vec);
    (0..CHUNK_VECTORS)
        .map(|u| {
            let cu = b.c32((u * 32) as i64);
            let slot = b.add(&cu, lane, Ty::I32);
            let cvec = b.c32(vec as i64);
            let slot = b.mul(&slot, &cvec, Ty::I32);
            let p = b.gep(buf, &slot, Ty::I32, ty.mlir(), 3);
            b.load(&p, &vt, 16, 3)
        })
        .collect()
}

/// Vectors lane 0 loads from workgroup memory at once in the blocked
/// loops, so that their latency overlaps instead of adding up.
pub const FOLD_UNROLL: usize = 8;

/// Folds the `count` staged elements into `acc`, in order.
fn fold_buffer(b: &mut Body, op: &Op, buf: &str, count: usize, acc: &str) -> V {
    let ty = op.ty;
    let vec = 16 / ty.bytes();
    let vt = tile::vty(ty, vec);
    let zero = b.c32(0);
    let steps = b.c32((count / vec / FOLD_UNROLL) as i64);
    let one = b.c32(1);
    let r = b.for_(
        &zero,
        &steps,
        &one,
        "i32",
        &[(acc.to_string(), ty.mlir().to_string())],
        |b, step, args| {
            let vectors = load_group(b, buf, step, ty);
            let mut a = args[0].clone();
            for v in &vectors {
                for k in 0..vec {
                    let x = b.extract(v, k, &vt);
                    a = op.combine(b, &a, &x);
                }
            }
            vec![a]
        },
    );
    r[0].clone()
}

/// The slots (i32) of the [`FOLD_UNROLL`] vectors of group `step` of the
/// workgroup buffer.
pub fn group_slots(b: &mut Body, step: &str, ty: Ty) -> Vec<V> {
    let vec = 16 / ty.bytes();
    let stride = b.c32((FOLD_UNROLL * vec) as i64);
    let first = b.mul(step, &stride, Ty::I32);
    (0..FOLD_UNROLL)
        .map(|u| {
            let off = b.c32((u * vec) as i64);
            b.add(&first, &off, Ty::I32)
        })
        .collect()
}

/// Loads the [`FOLD_UNROLL`] vectors of group `step` of the buffer.
pub fn load_group(b: &mut Body, buf: &str, step: &str, ty: Ty) -> Vec<V> {
    let vec = 16 / ty.bytes();
    let vt = tile::vty(ty, vec);
    group_slots(b, step, ty)
        .iter()
        .map(|slot| {
            let p = b.gep(buf, slot, Ty::I32, ty.mlir(), 3);
            b.load(&p, &vt, 16, 3)
        })
        .collect()
}

/// Kernel `fold_totals` (one block): folds `count` block totals in order
/// from the identity. `mode` 1 also writes each block's carry-in (the fold
/// of the totals before it) to `carries`. `out` gets the total: the only
/// block total when `count` is 1, else the fold.
fn totals_kernel(m: &mut GpuModule, op: Op) {
    let ty = op.ty;
    let round = 4 * BLOCK;
    m.kernel(
        "fold_totals",
        &[
            ("totals", "!llvm.ptr"),
            ("count", "i64"),
            ("out", "!llvm.ptr"),
            ("carries", "!llvm.ptr"),
            ("mode", "i32"),
        ],
        BLOCK,
        |b, m| {
            let th = tile::threads(b);
            let totals = global_ptr(b, "totals");
            let out = global_ptr(b, "out");
            let carries = global_ptr(b, "carries");
            let buf = m.shared("fold_totals", "buffer", ty.mlir(), round);
            let buf = b.addressof(&buf);
            let zero32 = b.c32(0);
            let t0 = b.cmp("eq", &th.tid, &zero32, Ty::I32);
            let mode = b.cmp("ne", "%mode", &zero32, Ty::I32);
            let cr = b.c64(round as i64);
            let r1 = b.c64(round as i64 - 1);
            let s = b.add("%count", &r1, Ty::I64);
            let rounds = b.op(format!("arith.divui {s}, {cr} : i64"));
            let zero = b.c64(0);
            let one = b.c64(1);
            let id = op.identity(b);
            let tid64 = b.resize(&th.tid, Ty::I32, Ty::I64, false);
            let acc = b.for_(
                &zero,
                &rounds,
                &one,
                "i64",
                &[(id, ty.mlir().to_string())],
                |b, r, args| {
                    let base = b.mul(r, &cr, Ty::I64);
                    for k in 0..4 {
                        let kk = b.c64((k * BLOCK) as i64);
                        let slot = b.add(&tid64, &kk, Ty::I64);
                        let i = b.add(&base, &slot, Ty::I64);
                        let valid = b.cmp("slt", &i, "%count", Ty::I64);
                        let x = b.if_ty(
                            &valid,
                            ty.mlir(),
                            1,
                            |b| {
                                let p = b.gep(&totals, &i, Ty::I64, ty.mlir(), 1);
                                vec![b.load(&p, ty.mlir(), ty.bytes(), 1)]
                            },
                            |b| vec![op.identity(b)],
                        );
                        let q = b.gep(&buf, &slot, Ty::I64, ty.mlir(), 3);
                        b.store(&x[0], &q, ty.mlir(), ty.bytes(), 3);
                    }
                    b.barrier();
                    let left = b.sub("%count", &base, Ty::I64);
                    let left = b.op(format!("arith.minsi {left}, {cr} : i64"));
                    let left = b.resize(&left, Ty::I64, Ty::I32, false);
                    let acc = args[0].clone();
                    let folded = b.if_ty(
                        &t0,
                        ty.mlir(),
                        1,
                        |b| {
                            let z = b.c32(0);
                            let o = b.c32(1);
                            b.for_(
                                &z,
                                &left,
                                &o,
                                "i32",
                                &[(acc.clone(), ty.mlir().to_string())],
                                |b, k, a| {
                                    let q = b.gep(&buf, k, Ty::I32, ty.mlir(), 3);
                                    let x = b.load(&q, ty.mlir(), ty.bytes(), 3);
                                    let a0 = a[0].clone();
                                    b.if_(&mode, |b| {
                                        b.store(&a0, &q, ty.mlir(), ty.bytes(), 3);
                                    });
                                    vec![op.combine(b, &a0, &x)]
                                },
                            )
                        },
                        |_| vec![acc.clone()],
                    );
                    b.barrier();
                    b.if_(&mode, |b| {
                        for k in 0..4 {
                            let kk = b.c64((k * BLOCK) as i64);
                            let slot = b.add(&tid64, &kk, Ty::I64);
                            let i = b.add(&base, &slot, Ty::I64);
                            let valid = b.cmp("slt", &i, "%count", Ty::I64);
                            b.if_(&valid, |b| {
                                let q = b.gep(&buf, &slot, Ty::I64, ty.mlir(), 3);
                                let x = b.load(&q, ty.mlir(), ty.bytes(), 3);
                                let p = b.gep(&carries, &i, Ty::I64, ty.mlir(), 1);
                                b.store(&x, &p, ty.mlir(), ty.bytes(), 1);
                            });
                        }
                    });
                    b.barrier();
                    folded
                },
            );
            b.if_(&t0, |b| {
                let only = b.cmp("sle", "%count", &one, Ty::I64);
                let first = b.load(&totals, ty.mlir(), ty.bytes(), 1);
                let r = b.sel(&only, &first, &acc[0], ty);
                b.store(&r, &out, ty.mlir(), ty.bytes(), 1);
            });
        },
    );
}

/// The host code of reduce; adds the kernels to `m`.
pub fn generate(
    m: &mut GpuModule,
    symbol: &str,
    elem: Elem,
    kind: Kind,
    config: &Config,
) -> String {
    let op = elem.op(kind);
    let blocked = super::blocked_float(elem, kind, config);
    if blocked {
        blocked_kernels(m, op);
    } else {
        tree_kernels(m, elem, op);
    }
    let module = m.name.clone();
    let t = elem.mlir();
    let memref = format!("memref<?x{t}>");
    let bytes = elem.bytes() as i64;
    let tile = tile_elems(elem) as i64;
    let layout = move |b: &mut Body, n: &V| -> Vec<V> {
        let count = if blocked {
            host::blocks(b, n, SEQUENTIAL_BLOCK as i64, 1)
        } else {
            b.cidx(REDUCE_GRID as i64)
        };
        let size = b.cidx(bytes);
        let partials = b.op(format!("arith.muli {count}, {size} : index"));
        let out = b.cidx(8);
        vec![partials, out]
    };
    let memref_for_body = memref.clone();
    let body = move |b: &mut Body, ctx: &host::Ctx| -> Option<V> {
        let values = host::memref_ptr(b, "%values", &memref_for_body, t, bytes as usize);
        let t0 = b.op("gpu.wait async");
        let (partials, out) = (&ctx.regions[0], &ctx.regions[1]);
        let token = if blocked {
            let grid = host::blocks(b, &ctx.n, SEQUENTIAL_BLOCK as i64, 1);
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
                    (partials.clone(), "!llvm.ptr"),
                ],
            );
            let count = b.idx_to(&grid, Ty::I64);
            let mode = b.c32(0);
            let one = b.cidx(1);
            host::launch(
                b,
                &t1,
                &module,
                "fold_totals",
                &one,
                BLOCK,
                &[
                    (partials.clone(), "!llvm.ptr"),
                    (count, "i64"),
                    (out.clone(), "!llvm.ptr"),
                    (partials.clone(), "!llvm.ptr"),
                    (mode, "i32"),
                ],
            )
        } else {
            let tiles = host::blocks(b, &ctx.n, tile, 1);
            let max = b.cidx(REDUCE_GRID as i64);
            let grid = b.op(format!("arith.minui {tiles}, {max} : index"));
            let grid64 = b.idx_to(&grid, Ty::I64);
            let t1 = host::launch(
                b,
                &t0,
                &module,
                "partials",
                &grid,
                BLOCK,
                &[
                    (values.clone(), "!llvm.ptr"),
                    (ctx.n64.clone(), "i64"),
                    (partials.clone(), "!llvm.ptr"),
                    (grid64.clone(), "i64"),
                ],
            );
            let one = b.cidx(1);
            host::launch(
                b,
                &t1,
                &module,
                "final",
                &one,
                BLOCK,
                &[
                    (partials.clone(), "!llvm.ptr"),
                    (grid64, "i64"),
                    (out.clone(), "!llvm.ptr"),
                ],
            )
        };
        let (token, hostmem) = host::read_back(b, &token, &ctx.scratch, &ctx.offsets[1], t);
        b.line(format!("gpu.wait [{token}]"));
        Some(host::host_load(b, &hostmem, t))
    };
    host::emit(&HostSpec {
        symbol: symbol.to_string(),
        params: vec![
            HostParam::new("values", memref),
            HostParam::new("n", "index"),
        ],
        count: "n",
        result: Some(t.to_string()),
        layout: &layout,
        body: &body,
    })
}
