//! GPU implementations of the list collectives (`pgpu.list.reduce`, `scan`,
//! `sort_idx`, `compact`, `split`, `expand`), generated as MLIR text.
//!
//! [`generate`] returns, for one collective and element type, a
//! `module attributes {gpu.container_module}` holding
//!
//! - `gpu.module @<symbol>_kernels`: the kernels, written with `gpu`
//!   (thread/block ids, `gpu.barrier`, `gpu.shuffle`), `nvvm` warp ops
//!   (`vote.sync`, `match.sync`, `bar.warp.sync`), `llvm` memory ops on raw
//!   pointers (workgroup arrays are `llvm.mlir.global`s in address space 3,
//!   atomics carry their ordering and `syncscope("device")`), `arith` and
//!   `scf`;
//! - three host functions (`func`, `gpu`, `memref`), `<symbol>` as
//!   [`symbol`] spells it (`pgpu_coll_reduce_add_i32`,
//!   `pgpu_coll_sort_idx_f32`, ...):
//!   - `func.func @<symbol>(ARGS) -> R`: allocates its scratch with
//!     `gpu.alloc`, calls `@<symbol>_scratch`, frees it;
//!   - `func.func @<symbol>_scratch(ARGS, %scratch: memref<?xi8>) -> R`:
//!     the same with caller-provided device scratch of at least
//!     `@<symbol>_scratch_bytes(n)` bytes (contents need not be
//!     initialized; it is not used after return);
//!   - `func.func @<symbol>_scratch_bytes(%n: index) -> index`.
//!
//! Each call runs on its own stream (`gpu.wait async`, launches chained by
//! tokens) and waits for it before returning, so results are visible to the
//! host and to later launches on any stream. After upstream `gpu-to-llvm`
//! and the `gpu.binary` translation, the host code calls `mgpuStreamCreate`,
//! `mgpuStreamSynchronize`, `mgpuStreamDestroy`, `mgpuMemAlloc`,
//! `mgpuMemFree`, `mgpuMemcpy` (device to a host `memref.alloca`, for
//! scalar results), `mgpuModuleLoadJIT`, `mgpuModuleGetFunction` and
//! `mgpuLaunchKernel` (bench/collectives/mgpu_shim.c is a minimal
//! implementation). Kernel arguments are `!llvm.ptr` and integers only.
//!
//! The ARGS and results mirror the `pgpu.list.*` ops (T is the element type
//! of the memrefs: `i1`, `i8`, `i16`, `i32`, `i64`, `index`, `f32` or
//! `f64`; every memref is a device buffer of identity layout, its data at
//! the aligned pointer; lists need not be 16-byte aligned, the kernels then
//! take their scalar paths):
//!
//! | collective | ARGS | R |
//! |---|---|---|
//! | `reduce_<kind>_<T>` | `%values: memref<?xT>, %n: index` | `T` |
//! | `scan_<kind>_<T>` | `%values: memref<?xT>, %scanned: memref<?xT>, %n: index, %inclusive: i1` | `T` (the total) |
//! | `scan_values_<kind>_<T>` | as `scan` | none (the host does not wait) |
//! | `sort_idx_<T>` | `%keys: memref<?xT>, %indices: memref<?xindex>, %n: index` | none |
//! | `compact_<T>` | `%values: memref<?xT>, %flags: memref<?xi1>, %list: memref<?xT>, %n: index, %base: index` | `index` (`base + kept`) |
//! | `split_<T>` | same as compact | `index` (`base + n`) |
//! | `expand_<T>` (integer T) | `%counts: memref<?xT>, %parents: memref<?xindex>, %children: memref<?xT>, %n: index` | `index` (children) |
//!
//! The semantics are those of backends/runtime/src/list.rs, list_abi.rs and
//! elem.rs, bit for bit: `i1` elements are bytes (non-zero reads as true),
//! integer kinds wrap, `min`/`max` are signed, float `min`/`max` return the
//! canonical NaN, `sort_idx` is stable in the total key order
//! (`list::sort_idx`: signed integers, `-0 == +0`, NaNs by sign beyond the
//! infinities), `scanned` may equal `values` (in place). Float `add`/`mul`
//! reduce and scan follow the runtime's blocked order with the default
//! [`FloatOrder::Blocked`] (each block of [`SEQUENTIAL_BLOCK`] elements
//! folded left to right, then the block totals left to right), so they are
//! bit-identical too, except for NaN payloads (the GPU's NaN is
//! `0x7FFFFFFF`, x86's default NaN has the sign bit set). The host
//! functions do not repeat the runtime's argument checks (null or
//! overlapping lists, counts whose sum overflows i64): those are the
//! caller's; a negative `n` counts as 0. `sort_idx` handles up to
//! 2^31 - 1 keys.
//!
//! The kernels (each file's header explains its algorithm):
//!
//! - [`reduce`]: a fixed grid of 1024 blocks folds 16 KiB tiles with
//!   16-byte vector loads into per-thread accumulators, reduces each block
//!   with shuffles and writes one partial; one block folds the partials.
//!   Float `add`/`mul` in blocked order: one warp per 65536-element block
//!   stages chunks through workgroup memory and lane 0 folds them in order.
//! - [`scan`]: single-pass scan with decoupled look-back (Merrill and
//!   Garland 2016): dynamic tile ids, 16 KiB tiles (32 KiB and flag and
//!   value in one 64-bit status word with [`Lookback::Packed`]), vector
//!   loads and stores, a warp-parallel look-back window of 32
//!   predecessors. Float
//!   `add`/`mul` in blocked order: block totals, their sequential scan,
//!   then one warp per block scans it from its carry.
//! - [`sort`]: LSD radix sort of (key, index) pairs, 8-bit digits, keys
//!   mapped to unsigned integers that sort in the key order; one histogram
//!   pass for all digits, then one "onesweep" pass per digit (Adinets and
//!   Merrill 2022): warp-level ranking with `match.sync`, per-digit
//!   decoupled look-back across tiles, scatter through workgroup memory.
//! - [`partition`]: compact and split as one look-back scan of the flags
//!   (split first counts the true flags).
//! - [`expand`]: a look-back scan of the clamped counts gives each parent's
//!   first slot and the number of children; then each block of 2048 output
//!   slots binary-searches its parents among those first slots.
//!
//! Status (bench/collectives/README.md has the numbers): every module
//! lowers to PTX (tests/collectives.rs). On the H200, with the default
//! configuration, every collective, element type and kind matched the CPU
//! runtime bit for bit (sizes 0 to 16M), except float sort keys equal to
//! `-0.0`, fixed since; reduce reached 93% of the copy bandwidth, scan 48%
//! (look-back bound), sort_idx 1.21x to 1.32x `torch.sort`.
//! [`Lookback::Packed`] (now the default) passed the same checks on the
//! H200 in a later session (2026-11-23) and scans 256M i32 at 55% of the
//! copy bandwidth.

pub mod emit;
pub mod expand;
pub mod host;
pub mod op;
pub mod partition;
pub mod reduce;
pub mod scan;
pub mod sort;
pub mod tile;

use emit::Ty;

/// Threads per block of the tiled kernels.
pub const BLOCK: usize = 256;
/// Rows of 16-byte vectors each thread holds per tile (at least; BLOCK /
/// 32 * rows must be a multiple of 32: the block scan's warp 0 scans the
/// warp-row totals, as many per lane).
pub const ROWS: usize = 4;
/// Blocks of the tree reduction's first kernel (a fixed number, so the
/// association order depends on the count only).
pub const REDUCE_GRID: usize = 1024;
/// Elements per block of the runtime's blocked float order
/// (`pgpu_runtime::list::BLOCK`).
pub const SEQUENTIAL_BLOCK: usize = 1 << 16;

/// A list element type.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Elem {
    I1,
    I8,
    I16,
    I32,
    I64,
    Index,
    F32,
    F64,
}

impl Elem {
    pub const ALL: [Elem; 8] = [
        Elem::I1,
        Elem::I8,
        Elem::I16,
        Elem::I32,
        Elem::I64,
        Elem::Index,
        Elem::F32,
        Elem::F64,
    ];

    /// The MLIR element type of the memrefs.
    pub fn mlir(self) -> &'static str {
        match self {
            Elem::I1 => "i1",
            Elem::I8 => "i8",
            Elem::I16 => "i16",
            Elem::I32 => "i32",
            Elem::I64 => "i64",
            Elem::Index => "index",
            Elem::F32 => "f32",
            Elem::F64 => "f64",
        }
    }

    /// How kernels carry an element.
    pub fn storage(self) -> Ty {
        match self {
            Elem::I1 | Elem::I8 => Ty::I8,
            Elem::I16 => Ty::I16,
            Elem::I32 => Ty::I32,
            Elem::I64 | Elem::Index => Ty::I64,
            Elem::F32 => Ty::F32,
            Elem::F64 => Ty::F64,
        }
    }

    pub fn bytes(self) -> usize {
        self.storage().bytes()
    }

    pub fn is_float(self) -> bool {
        matches!(self, Elem::F32 | Elem::F64)
    }

    /// The runtime's element code (elem.rs); `index` is `i64`.
    pub fn code(self) -> i32 {
        match self {
            Elem::I1 => 0,
            Elem::I8 => 1,
            Elem::I16 => 2,
            Elem::I32 => 3,
            Elem::I64 | Elem::Index => 4,
            Elem::F32 => 5,
            Elem::F64 => 6,
        }
    }

    /// The combining operation of `kind` on this element type.
    pub fn op(self, kind: Kind) -> op::Op {
        if self == Elem::I1 {
            op::Op::boolean(kind)
        } else {
            op::Op::new(self.storage(), kind)
        }
    }

    /// Elements per 16-byte vector.
    pub fn vec(self) -> usize {
        16 / self.bytes()
    }

    /// The look-back kernels' tiles: `ROWS` 16-byte vectors per thread (16
    /// KiB tiles); with [`Lookback::Packed`] twice as many for 4- and 8-byte
    /// elements (32 KiB tiles, so that half as many tiles take part in the
    /// look-back chain; narrower elements already give 32 or 64 items per
    /// thread).
    pub fn scan_shape(self, config: &Config) -> tile::Shape {
        if self.bytes() >= 4 && config.lookback == Lookback::Packed {
            self.vector_rows(2 * ROWS)
        } else {
            self.vector_rows(ROWS)
        }
    }

    /// Tiles of `rows` rows of one 16-byte vector per thread.
    pub fn vector_rows(self, rows: usize) -> tile::Shape {
        tile::Shape {
            rows,
            vec: self.vec(),
        }
    }
}

/// A combining kind, numbered as `Pgpu_CombiningKind`: the runtime's, whose
/// semantics the kernels reproduce.
pub use pgpu_runtime::elem::Kind;

/// A collective.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Collective {
    Reduce(Kind),
    Scan(Kind),
    /// The scan without its total: the host does not wait for it.
    ScanValues(Kind),
    SortIdx,
    /// `sort_idx` that also writes the keys in sorted order (integer keys of
    /// 8 bits or more: their internal form maps back exactly; float keys
    /// were canonicalized and `i1` keys read any nonzero byte as true, so
    /// their sorted copy is gathered instead; the kernel passes'
    /// `ir::sort_writes_keys` states the same rule).
    SortIdxSorted,
    Compact,
    Split,
    Expand,
}

/// The association order of float `add`/`mul`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum FloatOrder {
    /// The CPU runtime's order: bit-identical results, deterministic, but
    /// a sequential chain per 65536 elements (slower).
    #[default]
    Blocked,
    /// Tree order: reduce is deterministic (it depends on the count only),
    /// scan uses decoupled look-back and may round differently from run to
    /// run.
    Tree,
}

/// How the look-back kernels (scan, compact, split, expand) keep their
/// tile status and size their tiles.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Lookback {
    /// 16 KiB tiles; 32-bit flags separate from the values, ordered by
    /// release stores and acquire loads.
    Separate,
    /// 32 KiB tiles for 4- and 8-byte elements; flag and value in one 64-bit
    /// word read and written with single relaxed atomics (values of up to
    /// 32 bits and the counts of compact/split/expand; 64-bit values keep
    /// separate flags). Halves the tiles and the cost of each look-back
    /// step, the scan's limit at 256M elements. The default: on the H200
    /// it matched the CPU runtime at every size and type tested, and its
    /// scan of 256M i32 took 0.93 ms against 1.08 ms (bench/collectives,
    /// 2026-11-23).
    #[default]
    Packed,
}

/// Generation options.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Config {
    pub float_order: FloatOrder,
    pub lookback: Lookback,
}

/// A collective that cannot be generated.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CollectiveError {
    #[error("combining kind '{kind}' needs an integer element type, not {elem}")]
    KindNeedsInteger {
        kind: &'static str,
        elem: &'static str,
    },
    #[error("expand needs integer counts, not {0}")]
    ExpandNeedsInteger(&'static str),
    #[error("sort_idx writes sorted keys of integer types of 8 bits or more only, not {0}")]
    SortedNeedsInteger(&'static str),
}

/// One generated collective.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Generated {
    /// The whole module text.
    pub text: String,
    /// The entry point `@<symbol>` (also `<symbol>_scratch`,
    /// `<symbol>_scratch_bytes`).
    pub symbol: String,
    /// The `gpu.module` name.
    pub gpu_module: String,
}

/// The host symbol of a collective on an element type.
pub fn symbol(collective: Collective, elem: Elem) -> String {
    let e = elem.mlir();
    match collective {
        Collective::Reduce(kind) => format!("pgpu_coll_reduce_{}_{e}", kind.name()),
        Collective::Scan(kind) => format!("pgpu_coll_scan_{}_{e}", kind.name()),
        Collective::ScanValues(kind) => format!("pgpu_coll_scan_values_{}_{e}", kind.name()),
        Collective::SortIdx => format!("pgpu_coll_sort_idx_{e}"),
        Collective::SortIdxSorted => format!("pgpu_coll_sort_idx_sorted_{e}"),
        Collective::Compact => format!("pgpu_coll_compact_{e}"),
        Collective::Split => format!("pgpu_coll_split_{e}"),
        Collective::Expand => format!("pgpu_coll_expand_{e}"),
    }
}

/// Whether the collective exists for the element type.
pub fn check(collective: Collective, elem: Elem) -> Result<(), CollectiveError> {
    match collective {
        Collective::Reduce(kind) | Collective::Scan(kind) | Collective::ScanValues(kind)
            if elem.is_float() && !kind.float_ok() =>
        {
            Err(CollectiveError::KindNeedsInteger {
                kind: kind.name(),
                elem: elem.mlir(),
            })
        }
        Collective::Expand if elem.is_float() => {
            Err(CollectiveError::ExpandNeedsInteger(elem.mlir()))
        }
        Collective::SortIdxSorted if elem.is_float() || elem == Elem::I1 => {
            Err(CollectiveError::SortedNeedsInteger(elem.mlir()))
        }
        _ => Ok(()),
    }
}

/// Every supported (collective, element type) pair.
pub fn all() -> Vec<(Collective, Elem)> {
    let mut list = Vec::new();
    for elem in Elem::ALL {
        for kind in Kind::ALL {
            for collective in [
                Collective::Reduce(kind),
                Collective::Scan(kind),
                Collective::ScanValues(kind),
            ] {
                if check(collective, elem).is_ok() {
                    list.push((collective, elem));
                }
            }
        }
        for collective in [
            Collective::SortIdx,
            Collective::SortIdxSorted,
            Collective::Compact,
            Collective::Split,
            Collective::Expand,
        ] {
            if check(collective, elem).is_ok() {
                list.push((collective, elem));
            }
        }
    }
    list
}

/// The module of one collective on one element type.
pub fn generate(
    collective: Collective,
    elem: Elem,
    config: &Config,
) -> Result<Generated, CollectiveError> {
    check(collective, elem)?;
    let symbol = symbol(collective, elem);
    let gpu_module = format!("{symbol}_kernels");
    let mut module = emit::GpuModule::new(gpu_module.clone());
    let host = match collective {
        Collective::Reduce(kind) => reduce::generate(&mut module, &symbol, elem, kind, config),
        Collective::Scan(kind) => scan::generate(&mut module, &symbol, elem, kind, true, config),
        Collective::ScanValues(kind) => {
            scan::generate(&mut module, &symbol, elem, kind, false, config)
        }
        Collective::SortIdx => sort::generate(&mut module, &symbol, elem, false),
        Collective::SortIdxSorted => sort::generate(&mut module, &symbol, elem, true),
        Collective::Compact => partition::generate(&mut module, &symbol, elem, false, config),
        Collective::Split => partition::generate(&mut module, &symbol, elem, true, config),
        Collective::Expand => expand::generate(&mut module, &symbol, elem, config),
    };
    let text = format!(
        "module attributes {{gpu.container_module}} {{\n{}{}}}\n",
        module.finish(),
        host
    );
    Ok(Generated {
        text,
        symbol,
        gpu_module,
    })
}

/// Whether the blocked sequential float path applies.
pub(crate) fn blocked_float(elem: Elem, kind: Kind, config: &Config) -> bool {
    elem.is_float()
        && matches!(kind, Kind::Add | Kind::Mul)
        && config.float_order == FloatOrder::Blocked
}

/// The textual pipeline that lowers a generated module (host code included)
/// to LLVM dialect with PTX in its `gpu.binary`, for tests and tools.
pub fn pipeline(chip: &str, opt_level: u8) -> String {
    format!(
        "builtin.module(nvvm-attach-target{{chip={chip} O={opt_level}}},gpu.module(convert-gpu-to-nvvm),\
         convert-scf-to-cf,finalize-memref-to-llvm,convert-arith-to-llvm,convert-cf-to-llvm,\
         convert-func-to-llvm,gpu-to-llvm,reconcile-unrealized-casts,gpu-module-to-binary{{format=isa}})"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pairs_and_names() {
        let list = all();
        // 6 integer types x 9 kinds + 2 float types x 4 kinds, three times
        // (reduce, scan, scan without its total), plus sort/compact/split
        // for 8 types, expand for 6, sort with sorted keys for 5.
        assert_eq!(list.len(), 3 * (6 * 9 + 2 * 4) + 3 * 8 + 6 + 5);
        assert_eq!(
            symbol(Collective::Scan(Kind::UMax), Elem::Index),
            "pgpu_coll_scan_umax_index"
        );
        assert_eq!(
            symbol(Collective::ScanValues(Kind::Add), Elem::I32),
            "pgpu_coll_scan_values_add_i32"
        );
        // Without its total the scan's host function returns nothing and
        // does not wait.
        let values = generate(
            Collective::ScanValues(Kind::Add),
            Elem::I32,
            &Config::default(),
        )
        .expect("generates");
        let entry = values
            .text
            .lines()
            .find(|line| line.contains("func.func @pgpu_coll_scan_values_add_i32("))
            .expect("entry point");
        assert!(!entry.contains("->"), "{entry}");
        assert!(!values.text.contains("gpu.memcpy"));
        assert!(generate(Collective::Reduce(Kind::Xor), Elem::F32, &Config::default()).is_err());
        assert!(generate(Collective::Expand, Elem::F64, &Config::default()).is_err());
    }
}
