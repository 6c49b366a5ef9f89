//! `pgpu.list.compact` and `pgpu.list.split` on the GPU.
//!
//! Both are one decoupled look-back scan ([`super::scan`]) of the flags as
//! 0/1 counts (i64 add), in the tile layout of the values (16-byte vectors
//! of values; the flags of a row are one `VEC`-byte vector): the exclusive
//! count of true flags before element `i` is its slot among the kept
//! values. Compact writes each kept value to `list[base + trues_before]`
//! and the last tile writes the number kept. Split needs the total number
//! of true flags `T` first (kernel `count_true`: a grid-stride byte count,
//! block reduction, one 64-bit atomic add per block); then a true element
//! goes to `list[base + (n - T) + trues_before]` and a false one to
//! `list[base + i - trues_before]`, which keeps both sides in index order.
//! Values are moved as raw bits of their size (the runtime copies bytes);
//! flags are bytes, non-zero meaning true. Status words, the tile counter
//! and the true count start at zero (kernel `zero`).

use super::emit::{Body, GpuModule, Param, Ty, V, global_ptr};
use super::host::{self, HostParam, HostSpec};
use super::op::Op;
use super::scan::{self, LookbackKernel, STATUS_PARAMS, TileCtx};
use super::sort::{launch_zero, zero_kernel};
use super::tile::{self, TileLoad};
use super::{BLOCK, Config, Elem, Kind};

/// Grid bound of `count_true`.
const COUNT_GRID: i64 = 1024;

/// Kernel `count_true`: adds the number of non-zero flag bytes to `*out`.
fn count_kernel(m: &mut GpuModule) {
    m.kernel(
        "count_true",
        &[("flags", "!llvm.ptr"), ("n", "i64"), ("out", "!llvm.ptr")],
        BLOCK,
        |b, m| {
            let th = tile::threads(b);
            let flags = global_ptr(b, "flags");
            let out = global_ptr(b, "out");
            let (first, step) = tile::grid_stride(b, &th.tid);
            let zero = b.c64(0);
            let count = b.for_(
                &first,
                "%n",
                &step,
                "i64",
                &[(zero, "i64".into())],
                |b, i, acc| {
                    let p = b.gep(&flags, i, Ty::I64, "i8", 1);
                    let x = b.load(&p, "i8", 1, 1);
                    let z = b.c(0, Ty::I8);
                    let nz = b.cmp("ne", &x, &z, Ty::I8);
                    let one = b.zext_bool(&nz, Ty::I64);
                    vec![b.add(&acc[0], &one, Ty::I64)]
                },
            );
            let op = Op::new(Ty::I64, Kind::Add);
            let total = tile::block_reduce(b, m, "count_true", &op, &th, &count[0]);
            let z = b.c32(0);
            let t0 = b.cmp("eq", &th.tid, &z, Ty::I32);
            b.if_(&t0, |b| {
                b.atomic_rmw("add", &out, &total, Ty::I64, 1);
            });
        },
    );
}

/// Kernel `partition`.
fn partition_kernel(m: &mut GpuModule, elem: Elem, split: bool, config: &Config) {
    let shape = elem.scan_shape(config);
    let vty = elem.storage().int();
    let op = Op::new(Ty::I64, Kind::Add);
    let mut params: Vec<Param> = vec![
        ("values", "!llvm.ptr"),
        ("flags", "!llvm.ptr"),
        ("list", "!llvm.ptr"),
        ("n", "i64"),
        ("trues", "!llvm.ptr"),
        ("kept", "!llvm.ptr"),
    ];
    params.extend(STATUS_PARAMS);
    let prologue = |b: &mut Body| {
        let a = tile::aligned16(b, "%values");
        let address = b.op("llvm.ptrtoint %flags : !llvm.ptr to i64");
        let mask = b.c64(shape.vec as i64 - 1);
        let low = b.and(&address, &mask, Ty::I64);
        let zero = b.c64(0);
        let f = b.cmp("eq", &low, &zero, Ty::I64);
        let aligned = b.band(&a, &f);
        let values = global_ptr(b, "values");
        let flags = global_ptr(b, "flags");
        let list = global_ptr(b, "list");
        let kept = global_ptr(b, "kept");
        let falses = if split {
            let trues = global_ptr(b, "trues");
            let t = b.load(&trues, "i64", 8, 1);
            b.sub("%n", &t, Ty::I64)
        } else {
            b.c64(0)
        };
        (aligned, vec![values, flags, list, kept, falses])
    };
    let load = |b: &mut Body, ctx: &TileCtx| {
        let fill = |b: &mut Body| b.c64(0);
        let map = |b: &mut Body, x: &V| {
            let z = b.c(0, Ty::I8);
            let nz = b.cmp("ne", x, &z, Ty::I8);
            b.zext_bool(&nz, Ty::I64)
        };
        tile::load_tile(
            b,
            &TileLoad {
                ty: Ty::I8,
                shape,
                ptr: &ctx.env[1],
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
    let write = |b: &mut Body, ctx: &TileCtx, index: &V, flag: &V, before: &V, x: &V| {
        let zero = b.c64(0);
        let is_true = b.cmp("ne", flag, &zero, Ty::I64);
        let list = &ctx.env[2];
        if split {
            let t = b.add(&ctx.env[4], before, Ty::I64);
            let f = b.sub(index, before, Ty::I64);
            let dest = b.sel(&is_true, &t, &f, Ty::I64);
            let p = b.gep(list, &dest, Ty::I64, vty.mlir(), 1);
            b.store(x, &p, vty.mlir(), vty.bytes(), 1);
        } else {
            b.if_(&is_true, |b| {
                let p = b.gep(list, before, Ty::I64, vty.mlir(), 1);
                b.store(x, &p, vty.mlir(), vty.bytes(), 1);
            });
        }
    };
    let store = |b: &mut Body, ctx: &TileCtx, items: &[Vec<V>], excl: &[Vec<V>], _: &[Vec<V>]| {
        b.if_then_else(
            &ctx.full,
            &[],
            |b| {
                for row_index in 0..shape.rows {
                    let offset = tile::row_offset(b, &ctx.th.tid, row_index, shape.vec);
                    let first = b.add(&ctx.start, &offset, Ty::I64);
                    let row = tile::load_row(b, vty, shape.vec, &ctx.env[0], &first);
                    for (k, x) in row.iter().enumerate() {
                        let kk = b.c64(k as i64);
                        let index = b.add(&first, &kk, Ty::I64);
                        write(b, ctx, &index, &items[row_index][k], &excl[row_index][k], x);
                    }
                }
                Vec::new()
            },
            |b| {
                for row in 0..shape.rows {
                    let offset = tile::row_offset(b, &ctx.th.tid, row, shape.vec);
                    let first = b.add(&ctx.start, &offset, Ty::I64);
                    for k in 0..shape.vec {
                        let kk = b.c64(k as i64);
                        let index = b.add(&first, &kk, Ty::I64);
                        let valid = b.cmp("slt", &index, "%n", Ty::I64);
                        b.if_(&valid, |b| {
                            let p = b.gep(&ctx.env[0], &index, Ty::I64, vty.mlir(), 1);
                            let x = b.load(&p, vty.mlir(), vty.bytes(), 1);
                            write(b, ctx, &index, &items[row][k], &excl[row][k], &x);
                        });
                    }
                }
                Vec::new()
            },
        );
    };
    let total = |b: &mut Body, ctx: &TileCtx, total: &V| {
        b.store(total, &ctx.env[3], "i64", 8, 1);
    };
    scan::lookback_kernel(
        m,
        &LookbackKernel {
            name: "partition",
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

/// The host code of compact (`split` false) or split; adds the kernels.
pub fn generate(
    m: &mut GpuModule,
    symbol: &str,
    elem: Elem,
    split: bool,
    config: &Config,
) -> String {
    zero_kernel(m);
    if split {
        count_kernel(m);
    }
    partition_kernel(m, elem, split, config);
    let module = m.name.clone();
    let t = elem.mlir();
    let memref = format!("memref<?x{t}>");
    let bytes = elem.bytes();
    let tile = elem.scan_shape(config).tile_elems() as i64;
    let op = Op::new(Ty::I64, Kind::Add);
    // Regions: flags, aggs, incls, counter, trues, kept.
    let layout = move |b: &mut Body, n: &V| -> Vec<V> {
        let tiles = host::blocks(b, n, tile, 1);
        let mut regions = scan::status_layout(b, &tiles, &op);
        regions.push(b.cidx(8));
        regions.push(b.cidx(8));
        regions
    };
    let memref_for_body = memref.clone();
    let body = move |b: &mut Body, ctx: &host::Ctx| -> Option<V> {
        let values = host::memref_ptr(b, "%values", &memref_for_body, t, bytes);
        let flags = host::memref_ptr(b, "%flags", "memref<?xi1>", "i1", 1);
        let list = host::memref_ptr(b, "%list", &memref_for_body, t, bytes);
        let zero = b.cidx(0);
        let base = b.op(format!("arith.maxsi %base, {zero} : index"));
        let size = b.cidx(bytes as i64);
        let shift = b.op(format!("arith.muli {base}, {size} : index"));
        let list = host::byte_offset(b, &list, &shift);
        let r = &ctx.regions;
        let t0 = b.op("gpu.wait async");
        let end = b.cidx(8);
        let end = b.op(format!("arith.addi {}, {end} : index", ctx.offsets[4]));
        let clear = b.op(format!("arith.subi {end}, {} : index", ctx.offsets[0]));
        let mut token = launch_zero(b, &t0, &module, &r[0], &clear);
        if split {
            let grid = host::blocks(b, &ctx.n, (BLOCK * 16) as i64, 1);
            let max = b.cidx(COUNT_GRID);
            let grid = b.op(format!("arith.minui {grid}, {max} : index"));
            token = host::launch(
                b,
                &token,
                &module,
                "count_true",
                &grid,
                BLOCK,
                &[
                    (flags.clone(), "!llvm.ptr"),
                    (ctx.n64.clone(), "i64"),
                    (r[4].clone(), "!llvm.ptr"),
                ],
            );
        }
        let tiles = host::blocks(b, &ctx.n, tile, 1);
        let mut args = vec![
            (values.clone(), "!llvm.ptr"),
            (flags.clone(), "!llvm.ptr"),
            (list.clone(), "!llvm.ptr"),
            (ctx.n64.clone(), "i64"),
            (r[4].clone(), "!llvm.ptr"),
            (r[5].clone(), "!llvm.ptr"),
        ];
        args.extend(scan::status_args(r));
        let token = host::launch(b, &token, &module, "partition", &tiles, BLOCK, &args);
        if split {
            b.line(format!("gpu.wait [{token}]"));
            Some(b.op(format!("arith.addi {base}, {} : index", ctx.n)))
        } else {
            let (token, hostmem) = host::read_back(b, &token, &ctx.scratch, &ctx.offsets[5], "i64");
            b.line(format!("gpu.wait [{token}]"));
            let kept = host::host_load(b, &hostmem, "i64");
            let kept = b.to_idx(&kept, Ty::I64);
            Some(b.op(format!("arith.addi {base}, {kept} : index")))
        }
    };
    host::emit(&HostSpec {
        symbol: symbol.to_string(),
        params: vec![
            HostParam::new("values", memref.clone()),
            HostParam::new("flags", "memref<?xi1>"),
            HostParam::new("list", memref),
            HostParam::new("n", "index"),
            HostParam::new("base", "index"),
        ],
        count: "n",
        result: Some("index".to_string()),
        layout: &layout,
        body: &body,
    })
}
