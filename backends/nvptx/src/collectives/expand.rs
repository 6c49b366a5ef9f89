//! `pgpu.list.expand` on the GPU.
//!
//! 1. Kernel `expand_scan`: a decoupled look-back scan ([`super::scan`])
//!    of the counts, each sign-extended to i64 and clamped at 0 (an `i1`
//!    count is 0 or -1, so always 0 children), writes every parent's first
//!    slot `offsets[i]` (exclusive prefix, i64, in the scratch) and the
//!    number of children `m`, which the host reads back.
//! 2. Kernel `expand_fill`, one block per 2048 output slots: slot `s`
//!    belongs to the last parent `i` with `offsets[i] <= s` (that parent has
//!    a non-zero count, since `offsets[i+1] > s`). Threads 0 and 1 find the
//!    parents of the block's first and last slot by binary search over all
//!    offsets; every slot then binary-searches only that parent range
//!    (cached reads), and writes `parents[s] = i` and
//!    `children[s] = s - offsets[i]` (truncated to the counts' type).
//!
//! The scratch depends on the number of parents only; the work of step 2
//! on the number of children, whatever the distribution of the counts.

use super::emit::{Body, GpuModule, Param, Ty, V, global_ptr};
use super::host::{self, HostParam, HostSpec};
use super::op::Op;
use super::scan::{self, LookbackKernel, STATUS_PARAMS, TileCtx};
use super::sort::{launch_zero, zero_kernel};
use super::tile::{self, TileLoad};
use super::{BLOCK, Config, Elem, Kind};

/// Output slots per thread of `expand_fill`.
const SLOTS_PER_THREAD: usize = 8;

fn scan_kernel(m: &mut GpuModule, elem: Elem, config: &Config) {
    let shape = elem.scan_shape(config);
    let ty = elem.storage();
    let op = Op::new(Ty::I64, Kind::Add);
    let mut params: Vec<Param> = vec![
        ("counts", "!llvm.ptr"),
        ("offsets", "!llvm.ptr"),
        ("n", "i64"),
        ("total", "!llvm.ptr"),
    ];
    params.extend(STATUS_PARAMS);
    let prologue = |b: &mut Body| {
        let aligned = tile::aligned16(b, "%counts");
        let counts = global_ptr(b, "counts");
        let offsets = global_ptr(b, "offsets");
        let total = global_ptr(b, "total");
        (aligned, vec![counts, offsets, total])
    };
    let load = |b: &mut Body, ctx: &TileCtx| {
        let fill = |b: &mut Body| b.c64(0);
        let map = |b: &mut Body, x: &V| {
            if elem == Elem::I1 {
                b.c64(0)
            } else {
                let wide = b.resize(x, ty, Ty::I64, true);
                let zero = b.c64(0);
                b.maxs(&wide, &zero, Ty::I64)
            }
        };
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
                out_ty: "i64",
                fill: &fill,
                map: &map,
            },
        )
    };
    let store = |b: &mut Body, ctx: &TileCtx, _: &[Vec<V>], excl: &[Vec<V>], _: &[Vec<V>]| {
        tile::store_tile(
            b,
            Ty::I64,
            shape,
            &ctx.env[1],
            &ctx.start,
            "%n",
            &ctx.full,
            &ctx.th.tid,
            excl,
        );
    };
    let total = |b: &mut Body, ctx: &TileCtx, total: &V| {
        b.store(total, &ctx.env[2], "i64", 8, 1);
    };
    scan::lookback_kernel(
        m,
        &LookbackKernel {
            name: "expand_scan",
            params: &params,
            op,
            shape,
            counts: true,
            lookback: config.lookback,
            prologue: &prologue,
            load: &load,
            store: &store,
            total: &total,
        },
    );
}

/// The last `i` in `[lo, hi]` with `offsets[i] <= s` (i64 values; requires
/// `offsets[lo] <= s`).
fn search(b: &mut Body, offsets: &str, lo: &V, hi: &V, s: &V) -> V {
    let out = b.while_(
        &[(lo.clone(), "i64".into()), (hi.clone(), "i64".into())],
        |b, args| {
            let more = b.cmp("slt", &args[0], &args[1], Ty::I64);
            (more, args.to_vec())
        },
        |b, args| {
            let (a, c) = (&args[0], &args[1]);
            let sum = b.add(a, c, Ty::I64);
            let one = b.c64(1);
            let sum = b.add(&sum, &one, Ty::I64);
            let mid = b.shru(&sum, &one, Ty::I64);
            let p = b.gep(offsets, &mid, Ty::I64, "i64", 1);
            let o = b.load(&p, "i64", 8, 1);
            let le = b.cmp("sle", &o, s, Ty::I64);
            let below = b.sub(&mid, &one, Ty::I64);
            let a2 = b.sel(&le, &mid, a, Ty::I64);
            let c2 = b.sel(&le, c, &below, Ty::I64);
            vec![a2, c2]
        },
    );
    out[0].clone()
}

fn fill_kernel(m: &mut GpuModule, elem: Elem) {
    let ty = elem.storage();
    let slots = BLOCK * SLOTS_PER_THREAD;
    m.kernel(
        "expand_fill",
        &[
            ("offsets", "!llvm.ptr"),
            ("n", "i64"),
            ("parents", "!llvm.ptr"),
            ("children", "!llvm.ptr"),
            ("m", "i64"),
        ],
        BLOCK,
        |b, m| {
            let th = tile::threads(b);
            let offsets = global_ptr(b, "offsets");
            let parents = global_ptr(b, "parents");
            let children = global_ptr(b, "children");
            let range = m.shared("expand_fill", "range", "i64", 2);
            let range = b.addressof(&range);
            let bid = b.sreg("block_id");
            let bid = b.resize(&bid, Ty::I32, Ty::I64, false);
            let cs = b.c64(slots as i64);
            let s0 = b.mul(&bid, &cs, Ty::I64);
            let active = b.cmp("slt", &s0, "%m", Ty::I64);
            b.if_(&active, |b| {
                let end = b.add(&s0, &cs, Ty::I64);
                let end = b.op(format!("arith.minsi {end}, %m : i64"));
                let one = b.c64(1);
                let s_last = b.sub(&end, &one, Ty::I64);
                let zero = b.c64(0);
                let n1 = b.sub("%n", &one, Ty::I64);
                let c2 = b.c32(2);
                let searcher = b.cmp("slt", &th.tid, &c2, Ty::I32);
                b.if_(&searcher, |b| {
                    let z = b.c32(0);
                    let is0 = b.cmp("eq", &th.tid, &z, Ty::I32);
                    let s = b.sel(&is0, &s0, &s_last, Ty::I64);
                    let i = search(b, &offsets, &zero, &n1, &s);
                    let p = b.gep(&range, &th.tid, Ty::I32, "i64", 3);
                    b.store(&i, &p, "i64", 8, 3);
                });
                b.barrier();
                let lo = b.load(&range, "i64", 8, 3);
                let c1 = b.c32(1);
                let p = b.gep(&range, &c1, Ty::I32, "i64", 3);
                let hi = b.load(&p, "i64", 8, 3);
                let tid = b.resize(&th.tid, Ty::I32, Ty::I64, false);
                for k in 0..SLOTS_PER_THREAD {
                    let ck = b.c64((k * BLOCK) as i64);
                    let s = b.add(&s0, &ck, Ty::I64);
                    let s = b.add(&s, &tid, Ty::I64);
                    let valid = b.cmp("slt", &s, "%m", Ty::I64);
                    b.if_(&valid, |b| {
                        let parent = search(b, &offsets, &lo, &hi, &s);
                        let p = b.gep(&offsets, &parent, Ty::I64, "i64", 1);
                        let first = b.load(&p, "i64", 8, 1);
                        let child = b.sub(&s, &first, Ty::I64);
                        let q = b.gep(&parents, &s, Ty::I64, "i64", 1);
                        b.store(&parent, &q, "i64", 8, 1);
                        let mut c = b.resize(&child, Ty::I64, ty, false);
                        if elem == Elem::I1 {
                            let one = b.c(1, Ty::I8);
                            c = b.and(&c, &one, Ty::I8);
                        }
                        let q = b.gep(&children, &s, Ty::I64, ty.mlir(), 1);
                        b.store(&c, &q, ty.mlir(), ty.bytes(), 1);
                    });
                }
            });
        },
    );
}

/// The host code of expand; adds the kernels to `m`.
pub fn generate(m: &mut GpuModule, symbol: &str, elem: Elem, config: &Config) -> String {
    zero_kernel(m);
    scan_kernel(m, elem, config);
    fill_kernel(m, elem);
    let module = m.name.clone();
    let t = elem.mlir();
    let memref = format!("memref<?x{t}>");
    let bytes = elem.bytes();
    let tile = elem.scan_shape(config).tile_elems() as i64;
    let op = Op::new(Ty::I64, Kind::Add);
    // Regions: flags, aggs, incls, counter, total, offsets.
    let layout = move |b: &mut Body, n: &V| -> Vec<V> {
        let tiles = host::blocks(b, n, tile, 1);
        let mut regions = scan::status_layout(b, &tiles, &op);
        regions.push(b.cidx(8));
        let eight = b.cidx(8);
        regions.push(b.op(format!("arith.muli {n}, {eight} : index")));
        regions
    };
    let memref_for_body = memref.clone();
    let body = move |b: &mut Body, ctx: &host::Ctx| -> Option<V> {
        let counts = host::memref_ptr(b, "%counts", &memref_for_body, t, bytes);
        let parents = host::memref_ptr(b, "%parents", "memref<?xindex>", "index", 8);
        let children = host::memref_ptr(b, "%children", &memref_for_body, t, bytes);
        let r = &ctx.regions;
        let t0 = b.op("gpu.wait async");
        let end = b.cidx(4);
        let end = b.op(format!("arith.addi {}, {end} : index", ctx.offsets[3]));
        let clear = b.op(format!("arith.subi {end}, {} : index", ctx.offsets[0]));
        let t1 = launch_zero(b, &t0, &module, &r[0], &clear);
        let tiles = host::blocks(b, &ctx.n, tile, 1);
        let mut args = vec![
            (counts.clone(), "!llvm.ptr"),
            (r[5].clone(), "!llvm.ptr"),
            (ctx.n64.clone(), "i64"),
            (r[4].clone(), "!llvm.ptr"),
        ];
        args.extend(scan::status_args(r));
        let t2 = host::launch(b, &t1, &module, "expand_scan", &tiles, BLOCK, &args);
        let (t3, hostmem) = host::read_back(b, &t2, &ctx.scratch, &ctx.offsets[4], "i64");
        b.line(format!("gpu.wait [{t3}]"));
        let total = host::host_load(b, &hostmem, "i64");
        let total_idx = b.to_idx(&total, Ty::I64);
        let grid = host::blocks(b, &total_idx, (BLOCK * SLOTS_PER_THREAD) as i64, 1);
        let t4 = b.op("gpu.wait async");
        let t5 = host::launch(
            b,
            &t4,
            &module,
            "expand_fill",
            &grid,
            BLOCK,
            &[
                (r[5].clone(), "!llvm.ptr"),
                (ctx.n64.clone(), "i64"),
                (parents.clone(), "!llvm.ptr"),
                (children.clone(), "!llvm.ptr"),
                (total.clone(), "i64"),
            ],
        );
        b.line(format!("gpu.wait [{t5}]"));
        Some(total_idx)
    };
    host::emit(&HostSpec {
        symbol: symbol.to_string(),
        params: vec![
            HostParam::new("counts", memref.clone()),
            HostParam::new("parents", "memref<?xindex>"),
            HostParam::new("children", memref),
            HostParam::new("n", "index"),
        ],
        count: "n",
        result: Some("index".to_string()),
        layout: &layout,
        body: &body,
    })
}
