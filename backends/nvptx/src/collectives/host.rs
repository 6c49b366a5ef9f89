//! Host functions of the collectives: argument unpacking, scratch layout,
//! kernel launches and result read-back, as `func`/`gpu`/`memref` IR.
//!
//! Every collective gets three host functions (see the module header of
//! [`super`]): `@X_scratch_bytes(n)`, `@X_scratch(args.., scratch)` and
//! `@X(args..)`. They share one layout computation, emitted once per
//! function from the same Rust code, so the byte count and the offsets
//! always agree. Launches go on one stream made by `gpu.wait async`, each
//! `gpu.launch_func async` depending on the previous token; results come
//! back with `gpu.memcpy` into a host `memref.alloca` and a `gpu.wait`
//! synchronizes the stream before the host reads them. A collective
//! without a result (sort) does not synchronize at all: the `pgpu-runtime`
//! puts all device work on one stream, so later kernels and host copies
//! of its lists run after it, and its scratch (`mgpuMemAlloc`, a cache
//! that hands blocks out again in stream order) is neither waited for
//! nor waited on when freed. Device pointers are
//! taken from the memrefs (aligned pointer plus offset) and passed to the
//! kernels as `!llvm.ptr`.

use super::emit::{Body, V};

/// Alignment of every scratch region, in bytes.
pub const REGION_ALIGN: i64 = 256;

/// A parameter of a host function: name (without `%`) and type.
#[derive(Debug, Clone)]
pub struct HostParam {
    pub name: String,
    pub ty: String,
}

impl HostParam {
    pub fn new(name: &str, ty: impl Into<String>) -> Self {
        HostParam {
            name: name.to_string(),
            ty: ty.into(),
        }
    }
}

/// What a collective's host code looks like.
pub struct HostSpec<'a> {
    /// `@pgpu_coll_...`.
    pub symbol: String,
    pub params: Vec<HostParam>,
    /// Name of the count parameter (an `index`).
    pub count: &'static str,
    pub result: Option<String>,
    /// The byte sizes (index values) of the scratch regions for count `n`.
    pub layout: &'a dyn Fn(&mut Body, &V) -> Vec<V>,
    /// The launches: gets the clamped count, the region pointers
    /// (`!llvm.ptr`), the scratch memref and the region offsets; returns the
    /// result value.
    pub body: &'a dyn Fn(&mut Body, &Ctx) -> Option<V>,
}

/// What the launch code of a host function works with.
pub struct Ctx {
    /// The count, clamped to be non-negative (index).
    pub n: V,
    /// The count as i64.
    pub n64: V,
    /// Region pointers (`!llvm.ptr`).
    pub regions: Vec<V>,
    /// Region byte offsets in the scratch memref (index).
    pub offsets: Vec<V>,
    pub scratch: V,
}

/// `(x + align - 1) / align * align` on index values.
fn align_up(b: &mut Body, x: &str, align: i64) -> V {
    let a1 = b.cidx(align - 1);
    let a = b.cidx(align);
    let s = b.op(format!("arith.addi {x}, {a1} : index"));
    let d = b.op(format!("arith.divui {s}, {a} : index"));
    b.op(format!("arith.muli {d}, {a} : index"))
}

/// Region offsets and the total size (at least one region alignment).
fn place(b: &mut Body, sizes: &[V]) -> (Vec<V>, V) {
    let mut offsets = Vec::new();
    let mut end = b.cidx(0);
    for size in sizes {
        let start = align_up(b, &end, REGION_ALIGN);
        offsets.push(start.clone());
        end = b.op(format!("arith.addi {start}, {size} : index"));
    }
    let total = align_up(b, &end, REGION_ALIGN);
    let min = b.cidx(REGION_ALIGN);
    let total = b.op(format!("arith.maxui {total}, {min} : index"));
    (offsets, total)
}

/// The device address of element 0 of a rank-1 memref of `elem_bytes`
/// elements, as `!llvm.ptr`.
pub fn memref_ptr(b: &mut Body, memref: &str, memref_ty: &str, elem: &str, elem_bytes: usize) -> V {
    let meta = b.ops(
        4,
        format!(
            "memref.extract_strided_metadata {memref} : {memref_ty} -> memref<{elem}>, index, index, index"
        ),
    );
    let aligned = b.op(format!(
        "memref.extract_aligned_pointer_as_index {memref} : {memref_ty} -> index"
    ));
    let size = b.cidx(elem_bytes as i64);
    let bytes = b.op(format!("arith.muli {}, {size} : index", meta[1]));
    let address = b.op(format!("arith.addi {aligned}, {bytes} : index"));
    let address = b.idx_to(&address, super::emit::Ty::I64);
    b.op(format!("llvm.inttoptr {address} : i64 to !llvm.ptr"))
}

/// `base + offset` bytes.
pub fn byte_offset(b: &mut Body, base: &str, offset: &str) -> V {
    let offset = b.idx_to(offset, super::emit::Ty::I64);
    b.op(format!(
        "llvm.getelementptr {base}[{offset}] : (!llvm.ptr, i64) -> !llvm.ptr, i8"
    ))
}

/// `ceil(a / c)` on index values, at least `min`.
pub fn blocks(b: &mut Body, a: &str, c: i64, min: i64) -> V {
    let c1 = b.cidx(c - 1);
    let cc = b.cidx(c);
    let s = b.op(format!("arith.addi {a}, {c1} : index"));
    let d = b.op(format!("arith.divui {s}, {cc} : index"));
    let m = b.cidx(min);
    b.op(format!("arith.maxui {d}, {m} : index"))
}

/// A kernel launch on the stream of `token`; returns the new token.
pub fn launch(
    b: &mut Body,
    token: &str,
    module: &str,
    kernel: &str,
    grid: &str,
    block: usize,
    args: &[(V, &str)],
) -> V {
    let one = b.cidx(1);
    let threads = b.cidx(block as i64);
    let args: Vec<String> = args.iter().map(|(v, t)| format!("{v} : {t}")).collect();
    b.op(format!(
        "gpu.launch_func async [{token}] @{module}::@{kernel} blocks in ({grid}, {one}, {one}) threads in ({threads}, {one}, {one}) args({})",
        args.join(", ")
    ))
}

/// Copies one element of memref type `elem` at byte `offset` of the scratch
/// to a new host `memref<1xelem>`; returns (token, host memref).
pub fn read_back(b: &mut Body, token: &str, scratch: &str, offset: &str, elem: &str) -> (V, V) {
    let view = b.op(format!(
        "memref.view {scratch}[{offset}][] : memref<?xi8> to memref<1x{elem}>"
    ));
    let host = b.op(format!("memref.alloca() : memref<1x{elem}>"));
    let token = b.op(format!(
        "gpu.memcpy async [{token}] {host}, {view} : memref<1x{elem}>, memref<1x{elem}>"
    ));
    (token, host)
}

/// Loads element 0 of a host `memref<1xelem>`.
pub fn host_load(b: &mut Body, host: &str, elem: &str) -> V {
    let zero = b.cidx(0);
    b.op(format!("memref.load {host}[{zero}] : memref<1x{elem}>"))
}

/// The three host functions of a collective.
pub fn emit(spec: &HostSpec) -> String {
    let HostSpec {
        symbol,
        params,
        count,
        result,
        layout,
        body,
    } = spec;
    let result_decl = result
        .as_ref()
        .map(|r| format!(" -> {r}"))
        .unwrap_or_default();
    let decl: Vec<String> = params
        .iter()
        .map(|p| format!("%{}: {}", p.name, p.ty))
        .collect();
    let mut text = String::new();

    // @X_scratch_bytes
    let mut b = Body::new(2);
    let zero = b.cidx(0);
    let n = b.op(format!("arith.maxsi %n, {zero} : index"));
    let sizes = layout(&mut b, &n);
    let (_, total) = place(&mut b, &sizes);
    b.line(format!("return {total} : index"));
    text.push_str(&format!(
        "  func.func @{symbol}_scratch_bytes(%n: index) -> index {{\n{}  }}\n",
        b.finish()
    ));

    // @X_scratch
    let mut b = Body::new(2);
    let zero = b.cidx(0);
    let n = b.op(format!("arith.maxsi %{count}, {zero} : index"));
    let n64 = b.idx_to(&n, super::emit::Ty::I64);
    let sizes = layout(&mut b, &n);
    let (offsets, _) = place(&mut b, &sizes);
    let base = memref_ptr(&mut b, "%scratch", "memref<?xi8>", "i8", 1);
    let regions = offsets
        .iter()
        .map(|offset| byte_offset(&mut b, &base, offset))
        .collect();
    let ctx = Ctx {
        n,
        n64,
        regions,
        offsets,
        scratch: "%scratch".to_string(),
    };
    let value = body(&mut b, &ctx);
    match (&value, result) {
        (Some(v), Some(ty)) => b.line(format!("return {v} : {ty}")),
        _ => b.line("return"),
    }
    text.push_str(&format!(
        "  func.func @{symbol}_scratch({}, %scratch: memref<?xi8>){result_decl} {{\n{}  }}\n",
        decl.join(", "),
        b.finish()
    ));

    // @X
    let mut b = Body::new(2);
    let bytes = b.op(format!(
        "func.call @{symbol}_scratch_bytes(%{count}) : (index) -> index"
    ));
    // No host synchronization here: the runtime hands out scratch at
    // once and orders all device work on one stream, so the scratch is
    // ready for the launches and may go back to its cache while they run
    // (see the module header).
    let t0 = b.op("gpu.wait async");
    let alloc = b.ops(
        2,
        format!("gpu.alloc async [{t0}] ({bytes}) : memref<?xi8>"),
    );
    let args: Vec<String> = params
        .iter()
        .map(|p| format!("%{}", p.name))
        .chain([alloc[0].clone()])
        .collect();
    let types: Vec<String> = params
        .iter()
        .map(|p| p.ty.clone())
        .chain(["memref<?xi8>".to_string()])
        .collect();
    let call = format!(
        "func.call @{symbol}_scratch({}) : ({}){}",
        args.join(", "),
        types.join(", "),
        result
            .as_ref()
            .map(|r| format!(" -> {r}"))
            .unwrap_or_else(|| " -> ()".to_string())
    );
    let value = if result.is_some() {
        Some(b.op(call))
    } else {
        b.line(call);
        None
    };
    let t1 = b.op("gpu.wait async");
    b.op(format!(
        "gpu.dealloc async [{t1}] {} : memref<?xi8>",
        alloc[0]
    ));
    match (&value, result) {
        (Some(v), Some(ty)) => b.line(format!("return {v} : {ty}")),
        _ => b.line("return"),
    }
    text.push_str(&format!(
        "  func.func @{symbol}({}){result_decl} {{\n{}  }}\n",
        decl.join(", "),
        b.finish()
    ));
    text
}
