//! The interpreter's compact program representation, converted once from a
//! melior module.
//!
//! Every function gets a frame of numbered *slots*: each SSA value defined
//! in it (block arguments and op results of all its nested regions) gets one
//! slot, assigned on first sight, so uses that precede their definition in
//! block order (CFG regions) work too. The body of a `pgpu.spawn` or
//! `gpu.launch` gets a frame of its own (a [`Frame`]: its slot count and
//! the enclosing values it captures), so that each SPMD thread holds only
//! the values of the body, not a copy of the whole function's frame. Operations become [`Op`]s: a decoded
//! [`K`] (the op and its attributes), operand and result slots, nested
//! region ids, successors with their operand slots, the decoded types the
//! execution needs (`in_ty` of the first operand, `out_ty` of the first
//! result) and a location id. Operations the interpreter does not know
//! become [`K::Unsupported`] and fail only when executed.

use crate::value::{MemTy, Ty, Val};
use mlir_sys::*;
use pgpu_pass_infra::diagnostics::{FilePosition, file_position};
use std::collections::HashMap;

pub type OpId = u32;
pub type BlockId = u32;
pub type RegionId = u32;
pub type FuncId = u32;
pub type Slot = u32;

/// Integer binary operations (arith), with the semantics shared with the
/// compile-time folding of analyses.
pub use pgpu_pass_infra::integer::IntegerBinary as IBin;

/// Float binary operations (arith and math).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FBin {
    Add,
    Sub,
    Mul,
    Div,
    Rem,
    Maximum,
    Minimum,
    MaxNum,
    MinNum,
    Pow,
    Atan2,
    CopySign,
}

/// Float unary operations (arith.negf and math).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FUn {
    Neg,
    Abs,
    Sqrt,
    Rsqrt,
    Cbrt,
    Exp,
    Exp2,
    Expm1,
    Log,
    Log2,
    Log10,
    Log1p,
    Sin,
    Cos,
    Tan,
    Asin,
    Acos,
    Atan,
    Sinh,
    Cosh,
    Tanh,
    Floor,
    Ceil,
    Round,
    RoundEven,
    Trunc,
    Erf,
}

/// Casts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CastOp {
    ExtS,
    ExtU,
    Trunc,
    IndexCast,
    IndexCastU,
    SIToFP,
    UIToFP,
    FPToSI,
    FPToUI,
    ExtF,
    TruncF,
    Bitcast,
}

/// The combining kinds of pgpu reductions, scans and multiprefix (in the
/// order of the ODS enum).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Comb {
    Add,
    Mul,
    Min,
    Max,
    UMin,
    UMax,
    And,
    Or,
    Xor,
}

impl Comb {
    fn from_i64(value: i64) -> Option<Self> {
        Some(match value {
            0 => Self::Add,
            1 => Self::Mul,
            2 => Self::Min,
            3 => Self::Max,
            4 => Self::UMin,
            5 => Self::UMax,
            6 => Self::And,
            7 => Self::Or,
            8 => Self::Xor,
            _ => return None,
        })
    }
}

/// The host-level list operations (`pgpu.list.*`), executed by module
/// `list`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ListOp {
    Reduce(Comb),
    Scan { kind: Comb, inclusive: bool },
    SortIdx,
    Compact,
    Split,
    Expand,
}

/// memref.atomic_rmw kinds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rmw {
    AddF,
    AddI,
    Assign,
    MaxF,
    MaxS,
    MaxU,
    MinF,
    MinS,
    MinU,
    MulF,
    MulI,
    OrI,
    AndI,
    MaxNumF,
    MinNumF,
    XorI,
}

/// Static parts of a view op (`memref.subview`, `memref.reinterpret_cast`):
/// each entry is a constant or `None` for "the next dynamic operand".
#[derive(Debug, Clone)]
pub struct ViewInfo {
    pub offsets: Vec<Option<i64>>,
    pub sizes: Vec<Option<i64>>,
    pub strides: Vec<Option<i64>>,
    /// For subview: which source dimensions the result keeps.
    pub kept: Vec<bool>,
}

/// The largest thread count of a `pgpu.spawn block`, what
/// `pgpu.block_capacity` returns: 1024, the largest thread block of CUDA
/// GPUs (compute capability 2.0 and later).
pub const BLOCK_CAPACITY: usize = 1024;

/// A piece of a printf format (shared with compiled programs' runtime).
pub use pgpu_runtime::printf::Piece as FmtPiece;

/// A decoded operation.
#[derive(Debug, Clone)]
pub enum K {
    // func
    Call(FuncId),
    Return,
    // arith / math
    Const(Val),
    IBin(IBin),
    FBin(FBin),
    FUn(FUn),
    AbsI,
    Fma,
    IPowI,
    FPowI,
    CmpI(i64),
    CmpF(i64),
    Select,
    Cast(CastOp),
    // scf
    If,
    For {
        unsigned: bool,
    },
    While,
    Yield,
    Condition,
    Parallel,
    Reduce,
    ReduceReturn,
    ExecuteRegion,
    IndexSwitch(Vec<i64>),
    // cf
    Br,
    CondBr,
    Assert(String),
    // memref
    Alloc {
        stack: bool,
    },
    Dealloc,
    Load,
    Store,
    MemCast,
    Dim,
    Rank,
    GetGlobal(u32),
    Subview(Box<ViewInfo>),
    ReinterpretCast(Box<ViewInfo>),
    ExtractStridedMetadata,
    Copy,
    AtomicRmw(Rmw),
    /// `memref.generic_atomic_rmw`: its region gets the current element
    /// and yields (`memref.atomic_yield`, [`K::AtomicYield`]) the value to
    /// store; the result is the element before the update.
    GenericAtomicRmw,
    AtomicYield,
    /// `llvm.fence`: nothing to do (the interpreter performs every memory
    /// operation at once, in one order all threads see).
    Fence,
    /// `memref.extract_aligned_pointer_as_index`: the allocation's
    /// synthetic base address ([`crate::memory::Memory::aligned_pointer`]).
    ExtractAlignedPointer,
    AllocaScope,
    AllocaScopeReturn,
    // ub
    Poison,
    // pgpu SPMD
    /// `block`: one thread block synchronizing ranges of its threads with
    /// `pgpu.range_barrier` (module `block`).
    Spawn {
        synchronous: bool,
        block: bool,
    },
    /// `pgpu.range_barrier %first, %count, %slot` of a block spawn.
    RangeBarrier,
    Barrier {
        rank_reassigned: bool,
    },
    Superstep {
        rank_reassigned: bool,
    },
    Par,
    PYield,
    PRank,
    PSize,
    OldRank,
    SetOldRank,
    Require,
    DNew {
        temp: bool,
    },
    DTempFree,
    ThreadFork,
    ThreadKill,
    ThreadSortBy,
    ThreadSplit,
    ThreadGet,
    /// `forwards`: the superstep results that yield the put's result; the
    /// delivery at the superstep's end updates them too.
    ThreadPut {
        forwards: Box<[Slot]>,
    },
    PReduce(Comb),
    Scan {
        kind: Comb,
        inclusive: bool,
    },
    Compact,
    SplitList,
    SortIdx,
    Multiprefix(Comb),
    // pgpu host-level list operations
    List(ListOp),
    // Fork groups
    GroupRank,
    GroupId,
    GroupSize,
    GroupSplit,
    GroupFork,
    GroupMerge,
    GroupAlloc,
    Seq,
    Farm,
    // host I/O
    Printf(Vec<FmtPiece>, Vec<Ty>),
    ArgI,
    WTime,
    GridCapacity,
    /// `pgpu.block_capacity`: the interpreter answers 1024
    /// ([`BLOCK_CAPACITY`]), a CUDA GPU's largest thread block, so that
    /// programs take the same block-spawn versions as on the device.
    BlockCapacity,
    /// `pgpu.multiprocessors`: the interpreter runs one thing at a time
    /// and answers 1.
    Multiprocessors,
    /// `pgpu.lockstep_width`: the interpreter runs one thread at a time,
    /// so no two threads run in lockstep; it answers 1.
    LockstepWidth,
    RandSeed,
    RandU32,
    // gpu
    GpuLaunch {
        segments: Vec<i32>,
        workgroup: usize,
        /// Types of the workgroup, then private, memory attributions.
        attributions: Vec<Ty>,
    },
    GpuLaunchFunc(FuncId, Vec<i32>),
    GpuId {
        what: GpuIdKind,
        dim: u8,
    },
    GpuBarrier,
    GpuTerminator,
    /// Not executable: the message says why.
    Unsupported(String),
}

/// Which `gpu` id or dimension query.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GpuIdKind {
    ThreadId,
    BlockId,
    BlockDim,
    GridDim,
}

#[derive(Debug, Clone)]
pub struct Op {
    pub kind: K,
    pub name: String,
    pub operands: Box<[Slot]>,
    pub results: Box<[Slot]>,
    pub regions: Box<[RegionId]>,
    pub succs: Box<[(BlockId, Box<[Slot]>)]>,
    pub in_ty: Ty,
    pub out_ty: Ty,
    pub loc: u32,
    /// The own slot frame of an isolated region (spawn, gpu.launch body).
    pub frame: Option<Box<Frame>>,
}

/// The slot frame of a region that runs on its own (per SPMD thread): its
/// size, and which enclosing slots it captures into which of its own.
#[derive(Debug, Clone)]
pub struct Frame {
    pub nslots: u32,
    pub captures: Vec<(Slot, Slot)>,
}

/// Slot numbering while converting one function or isolated region.
#[derive(Debug, Default)]
struct Scope {
    slots: HashMap<usize, Slot>,
    next: u32,
    captures: Vec<(Slot, Slot)>,
}

impl Scope {
    fn fresh(&mut self, key: usize) -> Slot {
        let slot = self.next;
        self.next += 1;
        self.slots.insert(key, slot);
        slot
    }
}

#[derive(Debug, Clone, Default)]
pub struct BlockData {
    pub args: Vec<Slot>,
    pub ops: Vec<OpId>,
}

#[derive(Debug, Clone, Default)]
pub struct RegionData {
    pub blocks: Vec<BlockId>,
}

#[derive(Debug, Clone)]
pub struct Func {
    pub name: String,
    pub body: Option<RegionId>,
    pub nslots: u32,
    pub spmd_inline: bool,
    pub loc: u32,
    /// A gpu.func's workgroup attribution count, and the types of its
    /// workgroup then private attributions (entry block arguments after the
    /// parameters).
    pub workgroup: usize,
    pub attributions: Vec<Ty>,
}

#[derive(Debug, Clone)]
pub struct Global {
    /// Initial elements; `None` when uninitialized.
    pub init: Option<Vec<Val>>,
    pub size: usize,
}

/// The whole converted module.
#[derive(Debug, Default)]
pub struct Program {
    pub ops: Vec<Op>,
    pub blocks: Vec<BlockData>,
    pub regions: Vec<RegionData>,
    pub funcs: Vec<Func>,
    pub func_ids: HashMap<String, FuncId>,
    pub globals: Vec<Global>,
    pub memtys: Vec<MemTy>,
    pub locs: Vec<Option<FilePosition>>,
    /// Whether any `pgpu.thread.get` occurs (barriers then keep snapshots).
    pub uses_thread_get: bool,
}

impl Program {
    pub fn memty(&self, ty: Ty) -> Option<&MemTy> {
        match ty {
            Ty::Mem(index) => self.memtys.get(index as usize),
            _ => None,
        }
    }

    pub fn loc(&self, id: u32) -> Option<FilePosition> {
        self.locs.get(id as usize).cloned().flatten()
    }
}

/// An error found while converting (e.g. an unknown callee).
#[derive(Debug)]
pub struct ConvertError {
    pub message: String,
    pub loc: Option<FilePosition>,
}

// ---------------------------------------------------------------------------
// Thin wrappers over the MLIR C API. Every handle comes from the module the
// caller borrows for the whole conversion, so it stays valid.
// ---------------------------------------------------------------------------

fn string_ref(value: MlirStringRef) -> String {
    if value.length == 0 || value.data.is_null() {
        return String::new();
    }
    // SAFETY: MLIR string refs point to `length` valid bytes.
    let bytes = unsafe { std::slice::from_raw_parts(value.data.cast::<u8>(), value.length) };
    String::from_utf8_lossy(bytes).into_owned()
}

fn string_ref_bytes(value: MlirStringRef) -> Vec<u8> {
    if value.length == 0 || value.data.is_null() {
        return Vec::new();
    }
    // SAFETY: as above.
    unsafe { std::slice::from_raw_parts(value.data.cast::<u8>(), value.length) }.to_vec()
}

fn op_name(op: MlirOperation) -> String {
    // SAFETY: a live operation.
    string_ref(unsafe { mlirIdentifierStr(mlirOperationGetName(op)) })
}

fn attr(op: MlirOperation, name: &str) -> Option<MlirAttribute> {
    // SAFETY: a live operation; the name outlives the call.
    let attribute = unsafe {
        mlirOperationGetAttributeByName(
            op,
            MlirStringRef {
                data: name.as_ptr().cast(),
                length: name.len(),
            },
        )
    };
    if attribute.ptr.is_null() {
        None
    } else {
        Some(attribute)
    }
}

fn has_attr(op: MlirOperation, name: &str) -> bool {
    attr(op, name).is_some()
}

fn int_attr(attribute: MlirAttribute) -> Option<i64> {
    // SAFETY: queries on a live attribute.
    unsafe {
        if mlirAttributeIsAInteger(attribute) {
            Some(mlirIntegerAttrGetValueInt(attribute))
        } else {
            None
        }
    }
}

fn str_attr(attribute: MlirAttribute) -> Option<Vec<u8>> {
    // SAFETY: queries on a live attribute.
    unsafe {
        if mlirAttributeIsAString(attribute) {
            Some(string_ref_bytes(mlirStringAttrGetValue(attribute)))
        } else {
            None
        }
    }
}

fn symbol_attr(attribute: MlirAttribute) -> Option<String> {
    // SAFETY: queries on a live attribute.
    unsafe {
        if mlirAttributeIsAFlatSymbolRef(attribute) {
            Some(string_ref(mlirFlatSymbolRefAttrGetValue(attribute)))
        } else if mlirAttributeIsAString(attribute) {
            Some(string_ref(mlirStringAttrGetValue(attribute)))
        } else {
            None
        }
    }
}

fn i64_array_attr(attribute: MlirAttribute) -> Option<Vec<i64>> {
    // SAFETY: queries on a live attribute.
    unsafe {
        if mlirAttributeIsADenseI64Array(attribute) {
            let count = mlirDenseArrayGetNumElements(attribute);
            Some(
                (0..count)
                    .map(|index| mlirDenseI64ArrayGetElement(attribute, index))
                    .collect(),
            )
        } else if mlirAttributeIsAArray(attribute) {
            let count = mlirArrayAttrGetNumElements(attribute);
            (0..count)
                .map(|index| int_attr(mlirArrayAttrGetElement(attribute, index)))
                .collect()
        } else {
            None
        }
    }
}

fn i32_array_attr(attribute: MlirAttribute) -> Option<Vec<i32>> {
    // SAFETY: queries on a live attribute.
    unsafe {
        if mlirAttributeIsADenseI32Array(attribute) {
            let count = mlirDenseArrayGetNumElements(attribute);
            Some(
                (0..count)
                    .map(|index| mlirDenseI32ArrayGetElement(attribute, index))
                    .collect(),
            )
        } else {
            None
        }
    }
}

/// The results of `pgpu.superstep`s whose yield forwards `value`.
fn superstep_results_yielding(value: MlirValue) -> Vec<MlirValue> {
    let mut found = Vec::new();
    // SAFETY: a live value; its use list is only read.
    unsafe {
        let mut operand = mlirValueGetFirstUse(value);
        while !mlirOpOperandIsNull(operand) {
            let owner = mlirOpOperandGetOwner(operand);
            let parent = mlirOperationGetParentOperation(owner);
            if op_name(owner) == "pgpu.yield"
                && !parent.ptr.is_null()
                && op_name(parent) == "pgpu.superstep"
            {
                let index = mlirOpOperandGetOperandNumber(operand) as isize;
                found.push(mlirOperationGetResult(parent, index));
            }
            operand = mlirOpOperandGetNextUse(operand);
        }
    }
    found
}

fn operands(op: MlirOperation) -> Vec<MlirValue> {
    // SAFETY: a live operation.
    unsafe {
        (0..mlirOperationGetNumOperands(op))
            .map(|index| mlirOperationGetOperand(op, index))
            .collect()
    }
}

fn results(op: MlirOperation) -> Vec<MlirValue> {
    // SAFETY: a live operation.
    unsafe {
        (0..mlirOperationGetNumResults(op))
            .map(|index| mlirOperationGetResult(op, index))
            .collect()
    }
}

fn regions(op: MlirOperation) -> Vec<MlirRegion> {
    // SAFETY: a live operation.
    unsafe {
        (0..mlirOperationGetNumRegions(op))
            .map(|index| mlirOperationGetRegion(op, index))
            .collect()
    }
}

fn blocks(region: MlirRegion) -> Vec<MlirBlock> {
    let mut list = Vec::new();
    // SAFETY: walking a live region.
    unsafe {
        let mut block = mlirRegionGetFirstBlock(region);
        while !block.ptr.is_null() {
            list.push(block);
            block = mlirBlockGetNextInRegion(block);
        }
    }
    list
}

fn block_ops(block: MlirBlock) -> Vec<MlirOperation> {
    let mut list = Vec::new();
    // SAFETY: walking a live block.
    unsafe {
        let mut op = mlirBlockGetFirstOperation(block);
        while !op.ptr.is_null() {
            list.push(op);
            op = mlirOperationGetNextInBlock(op);
        }
    }
    list
}

fn block_args(block: MlirBlock) -> Vec<MlirValue> {
    // SAFETY: a live block.
    unsafe {
        (0..mlirBlockGetNumArguments(block))
            .map(|index| mlirBlockGetArgument(block, index))
            .collect()
    }
}

fn value_type(value: MlirValue) -> MlirType {
    // SAFETY: a live value.
    unsafe { mlirValueGetType(value) }
}

fn op_location(op: MlirOperation) -> Option<FilePosition> {
    // SAFETY: the location belongs to the live context of the module.
    let location = unsafe { melior::ir::Location::from_raw(mlirOperationGetLocation(op)) };
    file_position(location)
}

/// Converts modules.
struct Converter {
    prog: Program,
    memty_ids: HashMap<usize, u32>,
    block_ids: HashMap<usize, BlockId>,
    /// Slot scopes: the function's, then one per isolated region being
    /// converted (a spawn or gpu.launch body has its own, smaller frame).
    scopes: Vec<Scope>,
    global_ids: HashMap<String, u32>,
}

/// Converts `module` into a [`Program`].
pub fn convert(module: &melior::ir::Module) -> Result<Program, ConvertError> {
    let mut converter = Converter {
        prog: Program::default(),
        memty_ids: HashMap::new(),
        block_ids: HashMap::new(),
        scopes: vec![Scope::default()],
        global_ids: HashMap::new(),
    };
    // SAFETY: the module is alive for the whole conversion.
    let body = unsafe { mlirModuleGetBody(module.to_raw()) };
    let mut functions = Vec::new();
    collect_symbols(&mut converter, body, &mut functions)?;
    for (id, op) in functions.into_iter().enumerate() {
        converter.convert_function(id as FuncId, op)?;
    }
    Ok(converter.prog)
}

/// First pass: function names (so calls can be resolved) and globals.
fn collect_symbols(
    converter: &mut Converter,
    block: MlirBlock,
    functions: &mut Vec<MlirOperation>,
) -> Result<(), ConvertError> {
    for op in block_ops(block) {
        let name = op_name(op);
        match name.as_str() {
            "func.func" | "gpu.func" => {
                let symbol = attr(op, "sym_name")
                    .and_then(symbol_attr)
                    .unwrap_or_default();
                let loc = converter.location(op);
                let id = converter.prog.funcs.len() as FuncId;
                converter.prog.funcs.push(Func {
                    name: symbol.clone(),
                    body: None,
                    nslots: 0,
                    spmd_inline: has_attr(op, "pgpu.spmd_inline"),
                    loc,
                    workgroup: 0,
                    attributions: Vec::new(),
                });
                // A gpu.func is named `@module::@kernel` by launch_func.
                converter.prog.func_ids.insert(symbol, id);
                functions.push(op);
            }
            "memref.global" => converter.convert_global(op)?,
            "gpu.module" | "builtin.module" => {
                let prefix = attr(op, "sym_name").and_then(symbol_attr);
                let before = functions.len();
                for region in regions(op) {
                    for inner in blocks(region) {
                        collect_symbols(converter, inner, functions)?;
                    }
                }
                if let Some(prefix) = prefix {
                    for index in before..functions.len() {
                        let name = converter.prog.funcs[index].name.clone();
                        converter
                            .prog
                            .func_ids
                            .insert(format!("{prefix}::{name}"), index as FuncId);
                    }
                }
            }
            _ => {}
        }
    }
    Ok(())
}

impl Converter {
    fn location(&mut self, op: MlirOperation) -> u32 {
        self.prog.locs.push(op_location(op));
        (self.prog.locs.len() - 1) as u32
    }

    fn error(&self, op: MlirOperation, message: String) -> ConvertError {
        ConvertError {
            message,
            loc: op_location(op),
        }
    }

    fn ty(&mut self, ty: MlirType) -> Ty {
        // SAFETY: queries on a live type.
        unsafe {
            if mlirTypeIsAIndex(ty) {
                return Ty::Index;
            }
            if mlirTypeIsAInteger(ty) {
                let width = mlirIntegerTypeGetWidth(ty);
                return if (1..=64).contains(&width) {
                    Ty::I(width)
                } else {
                    Ty::Other
                };
            }
            if mlirTypeIsAF32(ty) {
                return Ty::F32;
            }
            if mlirTypeIsAF64(ty) {
                return Ty::F64;
            }
            if mlirTypeIsAMemRef(ty) {
                let key = ty.ptr as usize;
                if let Some(&id) = self.memty_ids.get(&key) {
                    return Ty::Mem(id);
                }
                let rank = mlirShapedTypeGetRank(ty);
                let shape = (0..rank as isize)
                    .map(|dim| {
                        if mlirShapedTypeIsDynamicDim(ty, dim) {
                            None
                        } else {
                            Some(mlirShapedTypeGetDimSize(ty, dim))
                        }
                    })
                    .collect();
                let elem = self.ty(mlirShapedTypeGetElementType(ty));
                let mut strides = vec![0i64; rank.max(0) as usize];
                let mut offset = 0i64;
                let dynamic = mlirShapedTypeGetDynamicStrideOrOffset();
                let result = mlirMemRefTypeGetStridesAndOffset(
                    ty,
                    strides.as_mut_ptr(),
                    &mut offset as *mut i64,
                );
                let (strides, offset) = if result.value != 0 {
                    (
                        Some(
                            strides
                                .into_iter()
                                .map(|s| (s != dynamic).then_some(s))
                                .collect(),
                        ),
                        (offset != dynamic).then_some(offset),
                    )
                } else {
                    (None, None)
                };
                let id = self.prog.memtys.len() as u32;
                self.prog.memtys.push(MemTy {
                    shape,
                    strides,
                    offset,
                    elem,
                });
                self.memty_ids.insert(key, id);
                return Ty::Mem(id);
            }
        }
        Ty::Other
    }

    fn slot(&mut self, value: MlirValue) -> Slot {
        let key = value.ptr as usize;
        let top = self.scopes.len() - 1;
        if let Some(&slot) = self.scopes[top].slots.get(&key) {
            return slot;
        }
        // A value of an enclosing scope is captured into each inner one.
        let found = (0..top).rev().find_map(|depth| {
            self.scopes[depth]
                .slots
                .get(&key)
                .map(|&slot| (depth, slot))
        });
        match found {
            Some((depth, mut outer)) => {
                for scope in &mut self.scopes[depth + 1..] {
                    let inner = scope.fresh(key);
                    scope.captures.push((outer, inner));
                    outer = inner;
                }
                outer
            }
            None => self.scopes[top].fresh(key),
        }
    }

    fn convert_global(&mut self, op: MlirOperation) -> Result<(), ConvertError> {
        let name = attr(op, "sym_name")
            .and_then(symbol_attr)
            .unwrap_or_default();
        let ty = match attr(op, "type") {
            // SAFETY: a live type attribute.
            Some(a) if unsafe { mlirAttributeIsAType(a) } => {
                let raw = unsafe { mlirTypeAttrGetValue(a) };
                self.ty(raw)
            }
            _ => return Err(self.error(op, format!("memref.global @{name} has no type"))),
        };
        let Some(memty) = self.prog.memty(ty).cloned() else {
            return Err(self.error(op, format!("memref.global @{name} is not a ranked memref")));
        };
        let mut size = 1usize;
        for dim in &memty.shape {
            match dim {
                Some(extent) if *extent >= 0 => size *= *extent as usize,
                _ => {
                    return Err(
                        self.error(op, format!("memref.global @{name} has a dynamic shape"))
                    );
                }
            }
        }
        let init = match attr(op, "initial_value") {
            // SAFETY: queries on a live attribute.
            Some(a) if unsafe { mlirAttributeIsADenseElements(a) } => {
                Some(self.dense_values(op, a, memty.elem, size)?)
            }
            _ => None,
        };
        let id = self.prog.globals.len() as u32;
        self.prog.globals.push(Global { init, size });
        self.global_ids.insert(name, id);
        Ok(())
    }

    fn dense_values(
        &self,
        op: MlirOperation,
        attribute: MlirAttribute,
        elem: Ty,
        size: usize,
    ) -> Result<Vec<Val>, ConvertError> {
        // SAFETY: queries on a live dense elements attribute.
        unsafe {
            let splat = mlirDenseElementsAttrIsSplat(attribute);
            let get = |index: isize| -> Option<Val> {
                let index = if splat { 0 } else { index };
                Some(match elem {
                    Ty::I(1) => {
                        Val::Int(-(mlirDenseElementsAttrGetBoolValue(attribute, index) as i64))
                    }
                    Ty::I(8) => {
                        Val::Int(mlirDenseElementsAttrGetInt8Value(attribute, index) as i64)
                    }
                    Ty::I(16) => {
                        Val::Int(mlirDenseElementsAttrGetInt16Value(attribute, index) as i64)
                    }
                    Ty::I(32) => {
                        Val::Int(mlirDenseElementsAttrGetInt32Value(attribute, index) as i64)
                    }
                    Ty::I(64) => Val::Int(mlirDenseElementsAttrGetInt64Value(attribute, index)),
                    Ty::Index => {
                        Val::Int(mlirDenseElementsAttrGetIndexValue(attribute, index) as i64)
                    }
                    Ty::F32 => Val::F32(mlirDenseElementsAttrGetFloatValue(attribute, index)),
                    Ty::F64 => Val::F64(mlirDenseElementsAttrGetDoubleValue(attribute, index)),
                    _ => return None,
                })
            };
            (0..size as isize)
                .map(get)
                .collect::<Option<Vec<Val>>>()
                .ok_or_else(|| {
                    self.error(
                        op,
                        "unsupported element type of a global initializer".into(),
                    )
                })
        }
    }

    fn convert_function(&mut self, id: FuncId, op: MlirOperation) -> Result<(), ConvertError> {
        self.scopes = vec![Scope::default()];
        let body = regions(op).into_iter().next();
        let body = match body {
            Some(region) if !blocks(region).is_empty() => Some(self.convert_region(region)?),
            _ => None,
        };
        if op_name(op) == "gpu.func" {
            let inputs = attr(op, "function_type")
                // SAFETY: queries on a live attribute and type.
                .map(|a| unsafe { mlirFunctionTypeGetNumInputs(mlirTypeAttrGetValue(a)) })
                .unwrap_or(0)
                .max(0) as usize;
            let workgroup = attr(op, "workgroup_attributions")
                .and_then(int_attr)
                .unwrap_or(0)
                .max(0) as usize;
            if let Some(block) = regions(op)
                .first()
                .and_then(|r| blocks(*r).first().copied())
            {
                let types: Vec<Ty> = block_args(block)
                    .into_iter()
                    .skip(inputs)
                    .map(|value| self.ty(value_type(value)))
                    .collect();
                let func = &mut self.prog.funcs[id as usize];
                func.attributions = types;
                func.workgroup = workgroup;
            }
        }
        let func = &mut self.prog.funcs[id as usize];
        func.body = body;
        func.nslots = self.scopes[0].next;
        Ok(())
    }

    fn convert_region(&mut self, region: MlirRegion) -> Result<RegionId, ConvertError> {
        let region_id = self.prog.regions.len() as RegionId;
        self.prog.regions.push(RegionData::default());
        let mlir_blocks = blocks(region);
        // Blocks get ids first so that branches can name later blocks.
        let mut ids = Vec::new();
        for block in &mlir_blocks {
            let id = self.prog.blocks.len() as BlockId;
            self.prog.blocks.push(BlockData::default());
            self.block_ids.insert(block.ptr as usize, id);
            ids.push(id);
        }
        self.prog.regions[region_id as usize].blocks = ids.clone();
        for (block, id) in mlir_blocks.into_iter().zip(ids) {
            let args = block_args(block)
                .into_iter()
                .map(|value| self.slot(value))
                .collect();
            let mut ops = Vec::new();
            for op in block_ops(block) {
                ops.push(self.convert_op(op)?);
            }
            let data = &mut self.prog.blocks[id as usize];
            data.args = args;
            data.ops = ops;
        }
        Ok(region_id)
    }

    fn convert_op(&mut self, op: MlirOperation) -> Result<OpId, ConvertError> {
        let name = op_name(op);
        let loc = self.location(op);
        let operand_values = operands(op);
        let result_values = results(op);
        let in_ty = match operand_values.first() {
            Some(&value) => self.ty(value_type(value)),
            None => Ty::Other,
        };
        let out_ty = match result_values.first() {
            Some(&value) => self.ty(value_type(value)),
            None => Ty::Other,
        };
        let mut operand_slots: Vec<Slot> = operand_values
            .iter()
            .map(|&value| self.slot(value))
            .collect();
        let result_slots: Vec<Slot> = result_values
            .iter()
            .map(|&value| self.slot(value))
            .collect();
        let mut kind = self.decode(op, &name, in_ty, out_ty)?;
        if let K::Printf(_, types) = &mut kind {
            for &value in &operand_values {
                let ty = self.ty(value_type(value));
                types.push(ty);
            }
        }
        if matches!(kind, K::ThreadGet) {
            self.prog.uses_thread_get = true;
        }
        if let K::ThreadPut { forwards } = &mut kind {
            *forwards = superstep_results_yielding(result_values[0])
                .into_iter()
                .map(|value| self.slot(value))
                .collect();
        }
        if let K::GpuLaunch { attributions, .. } = &mut kind
            && let Some(block) = regions(op)
                .first()
                .and_then(|r| blocks(*r).first().copied())
        {
            for value in block_args(block).into_iter().skip(12) {
                let ty = self.ty(value_type(value));
                attributions.push(ty);
            }
        }
        let isolated = matches!(kind, K::Spawn { .. } | K::GpuLaunch { .. });
        if isolated {
            self.scopes.push(Scope::default());
        }
        let mut region_ids = Vec::new();
        for region in regions(op) {
            region_ids.push(self.convert_region(region)?);
        }
        let frame = if isolated {
            self.scopes.pop().map(|scope| {
                Box::new(Frame {
                    nslots: scope.next,
                    captures: scope.captures,
                })
            })
        } else {
            None
        };
        // Successors: their operands are the op's operands after any
        // non-successor operands, split by the successors' argument counts.
        let mut succs = Vec::new();
        // SAFETY: a live operation.
        let successor_count = unsafe { mlirOperationGetNumSuccessors(op) };
        if successor_count > 0 {
            let mut targets = Vec::new();
            let mut total = 0usize;
            for index in 0..successor_count {
                // SAFETY: index < successor count.
                let block = unsafe { mlirOperationGetSuccessor(op, index) };
                // SAFETY: a live block.
                let argument_count = unsafe { mlirBlockGetNumArguments(block) } as usize;
                total += argument_count;
                targets.push((block, argument_count));
            }
            if total > operand_slots.len() {
                return Err(self.error(op, format!("'{name}': malformed successor operands")));
            }
            let mut position = operand_slots.len() - total;
            let leading = position;
            for (block, count) in targets {
                let Some(&target) = self.block_ids.get(&(block.ptr as usize)) else {
                    return Err(
                        self.error(op, format!("'{name}': branch to a block of another region"))
                    );
                };
                let slots: Box<[Slot]> = operand_slots[position..position + count].into();
                position += count;
                succs.push((target, slots));
            }
            operand_slots.truncate(leading);
        }
        let id = self.prog.ops.len() as OpId;
        self.prog.ops.push(Op {
            kind,
            name,
            operands: operand_slots.into(),
            results: result_slots.into(),
            regions: region_ids.into(),
            succs: succs.into(),
            in_ty,
            out_ty,
            loc,
            frame,
        });
        Ok(id)
    }

    fn decode(
        &mut self,
        op: MlirOperation,
        name: &str,
        _in_ty: Ty,
        out_ty: Ty,
    ) -> Result<K, ConvertError> {
        use K::*;
        let kind_attr = |field: &str| attr(op, field).and_then(int_attr);
        let comb = |op_name: &str| -> Result<Comb, ConvertError> {
            kind_attr("kind")
                .and_then(Comb::from_i64)
                .ok_or_else(|| self.error(op, format!("'{op_name}': unknown combining kind")))
        };
        if let Some(kind) = self::IBin::from_op_name(name) {
            return Ok(IBin(kind));
        }
        Ok(match name {
            "func.call" => {
                let callee = attr(op, "callee").and_then(symbol_attr).unwrap_or_default();
                match self.prog.func_ids.get(&callee) {
                    Some(&id) => Call(id),
                    None => Unsupported(format!("call to unknown function '@{callee}'")),
                }
            }
            "func.return" | "gpu.return" => Return,
            "arith.constant" | "index.constant" => {
                let value = attr(op, "value");
                let decoded = value.and_then(|a| {
                    // SAFETY: queries on a live attribute.
                    unsafe {
                        if mlirAttributeIsAInteger(a) {
                            Some(Val::Int(mlirIntegerAttrGetValueInt(a)))
                        } else if mlirAttributeIsAFloat(a) {
                            let v = mlirFloatAttrGetValueDouble(a);
                            match out_ty {
                                Ty::F32 => Some(Val::F32(v as f32)),
                                Ty::F64 => Some(Val::F64(v)),
                                _ => None,
                            }
                        } else {
                            None
                        }
                    }
                });
                match decoded {
                    Some(v) => Const(v),
                    None => Unsupported(
                        "unsupported constant (only scalar integers and f32/f64)".into(),
                    ),
                }
            }
            "arith.addf" => FBin(self::FBin::Add),
            "arith.subf" => FBin(self::FBin::Sub),
            "arith.mulf" => FBin(self::FBin::Mul),
            "arith.divf" => FBin(self::FBin::Div),
            "arith.remf" => FBin(self::FBin::Rem),
            "arith.maximumf" => FBin(self::FBin::Maximum),
            "arith.minimumf" => FBin(self::FBin::Minimum),
            "arith.maxnumf" => FBin(self::FBin::MaxNum),
            "arith.minnumf" => FBin(self::FBin::MinNum),
            "math.powf" => FBin(self::FBin::Pow),
            "math.atan2" => FBin(self::FBin::Atan2),
            "math.copysign" => FBin(self::FBin::CopySign),
            "arith.negf" => FUn(self::FUn::Neg),
            "math.absf" => FUn(self::FUn::Abs),
            "math.sqrt" => FUn(self::FUn::Sqrt),
            "math.rsqrt" => FUn(self::FUn::Rsqrt),
            "math.cbrt" => FUn(self::FUn::Cbrt),
            "math.exp" => FUn(self::FUn::Exp),
            "math.exp2" => FUn(self::FUn::Exp2),
            "math.expm1" => FUn(self::FUn::Expm1),
            "math.log" => FUn(self::FUn::Log),
            "math.log2" => FUn(self::FUn::Log2),
            "math.log10" => FUn(self::FUn::Log10),
            "math.log1p" => FUn(self::FUn::Log1p),
            "math.sin" => FUn(self::FUn::Sin),
            "math.cos" => FUn(self::FUn::Cos),
            "math.tan" => FUn(self::FUn::Tan),
            "math.asin" => FUn(self::FUn::Asin),
            "math.acos" => FUn(self::FUn::Acos),
            "math.atan" => FUn(self::FUn::Atan),
            "math.sinh" => FUn(self::FUn::Sinh),
            "math.cosh" => FUn(self::FUn::Cosh),
            "math.tanh" => FUn(self::FUn::Tanh),
            "math.floor" => FUn(self::FUn::Floor),
            "math.ceil" => FUn(self::FUn::Ceil),
            "math.round" => FUn(self::FUn::Round),
            "math.roundeven" => FUn(self::FUn::RoundEven),
            "math.trunc" => FUn(self::FUn::Trunc),
            "math.erf" => FUn(self::FUn::Erf),
            "math.absi" => AbsI,
            "math.fma" => Fma,
            "math.ipowi" => IPowI,
            "math.fpowi" => FPowI,
            "arith.cmpi" => CmpI(kind_attr("predicate").unwrap_or(-1)),
            "arith.cmpf" => CmpF(kind_attr("predicate").unwrap_or(-1)),
            "arith.select" => Select,
            "arith.extsi" => Cast(self::CastOp::ExtS),
            "arith.extui" => Cast(self::CastOp::ExtU),
            "arith.trunci" => Cast(self::CastOp::Trunc),
            "arith.index_cast" => Cast(self::CastOp::IndexCast),
            "arith.index_castui" => Cast(self::CastOp::IndexCastU),
            "arith.sitofp" => Cast(self::CastOp::SIToFP),
            "arith.uitofp" => Cast(self::CastOp::UIToFP),
            "arith.fptosi" => Cast(self::CastOp::FPToSI),
            "arith.fptoui" => Cast(self::CastOp::FPToUI),
            "arith.extf" => Cast(self::CastOp::ExtF),
            "arith.truncf" => Cast(self::CastOp::TruncF),
            "arith.bitcast" => Cast(self::CastOp::Bitcast),
            "scf.if" => If,
            "scf.for" => For {
                unsigned: has_attr(op, "unsignedCmp"),
            },
            "scf.while" => While,
            "scf.yield" => Yield,
            "scf.condition" => Condition,
            "scf.parallel" => Parallel,
            "scf.reduce" => Reduce,
            "scf.reduce.return" => ReduceReturn,
            "scf.execute_region" => ExecuteRegion,
            "scf.index_switch" => IndexSwitch(
                attr(op, "cases")
                    .and_then(i64_array_attr)
                    .unwrap_or_default(),
            ),
            "cf.br" => Br,
            "cf.cond_br" => CondBr,
            "cf.assert" => Assert(
                attr(op, "msg")
                    .and_then(str_attr)
                    .map(|b| String::from_utf8_lossy(&b).into_owned())
                    .unwrap_or_default(),
            ),
            "memref.alloc" => Alloc { stack: false },
            "memref.alloca" => Alloc { stack: true },
            "memref.dealloc" => Dealloc,
            "memref.load" => Load,
            "memref.store" => Store,
            "memref.cast" => MemCast,
            "memref.dim" => Dim,
            "memref.rank" => Rank,
            "memref.get_global" => {
                let global = attr(op, "name").and_then(symbol_attr).unwrap_or_default();
                match self.global_ids.get(&global) {
                    Some(&id) => GetGlobal(id),
                    None => Unsupported(format!("unknown global '@{global}'")),
                }
            }
            "memref.subview" | "memref.reinterpret_cast" => {
                let get = |field: &str| -> Vec<Option<i64>> {
                    attr(op, field)
                        .and_then(i64_array_attr)
                        .unwrap_or_default()
                        .into_iter()
                        .map(|v| (v != i64::MIN).then_some(v))
                        .collect()
                };
                let mut info = ViewInfo {
                    offsets: get("static_offsets"),
                    sizes: get("static_sizes"),
                    strides: get("static_strides"),
                    kept: Vec::new(),
                };
                if name == "memref.subview" {
                    let result_rank = self.prog.memty(out_ty).map_or(0, MemTy::rank);
                    info.kept = kept_dimensions(&info.sizes, self.prog.memty(out_ty), result_rank);
                    Subview(Box::new(info))
                } else {
                    ReinterpretCast(Box::new(info))
                }
            }
            "memref.extract_strided_metadata" => ExtractStridedMetadata,
            "memref.copy" => Copy,
            "memref.atomic_rmw" => {
                // MLIR 22's `arith::AtomicRMWKind` numbering.
                let kind = match kind_attr("kind") {
                    Some(0) => Some(Rmw::AddF),
                    Some(1) => Some(Rmw::AddI),
                    Some(2) => Some(Rmw::AndI),
                    Some(3) => Some(Rmw::Assign),
                    Some(4) => Some(Rmw::MaxF),
                    Some(5) => Some(Rmw::MaxNumF),
                    Some(6) => Some(Rmw::MaxS),
                    Some(7) => Some(Rmw::MaxU),
                    Some(8) => Some(Rmw::MinF),
                    Some(9) => Some(Rmw::MinNumF),
                    Some(10) => Some(Rmw::MinS),
                    Some(11) => Some(Rmw::MinU),
                    Some(12) => Some(Rmw::MulF),
                    Some(13) => Some(Rmw::MulI),
                    Some(14) => Some(Rmw::OrI),
                    Some(15) => Some(Rmw::XorI),
                    _ => None,
                };
                match kind {
                    Some(kind) => AtomicRmw(kind),
                    None => Unsupported("unsupported atomic_rmw kind".into()),
                }
            }
            "memref.generic_atomic_rmw" => GenericAtomicRmw,
            "memref.atomic_yield" => AtomicYield,
            "llvm.fence" => Fence,
            "memref.extract_aligned_pointer_as_index" => ExtractAlignedPointer,
            "memref.alloca_scope" => AllocaScope,
            "memref.alloca_scope.return" => AllocaScopeReturn,
            "memref.assume_alignment" => MemCast,
            "ub.poison" => Poison,
            "pgpu.spawn" => Spawn {
                synchronous: has_attr(op, "synchronous"),
                block: has_attr(op, "block"),
            },
            "pgpu.range_barrier" => RangeBarrier,
            "pgpu.barrier" => Barrier {
                rank_reassigned: has_attr(op, "rank_reassigned"),
            },
            "pgpu.superstep" => Superstep {
                rank_reassigned: has_attr(op, "rank_reassigned"),
            },
            "pgpu.par" => Par,
            "pgpu.yield" => PYield,
            "pgpu.rank" => PRank,
            "pgpu.size" => PSize,
            "pgpu.oldrank" => OldRank,
            "pgpu.set_oldrank" => SetOldRank,
            "pgpu.require" => Require,
            "pgpu.dnew" => DNew { temp: false },
            "pgpu.dtempnew" => DNew { temp: true },
            "pgpu.dtempfree" => DTempFree,
            // Tasks run one after the other, in program order: the body in
            // place, like `scf.execute_region`.
            "pgpu.taskgroup" | "pgpu.task" => ExecuteRegion,
            "pgpu.thread.fork" => ThreadFork,
            "pgpu.thread.kill" => ThreadKill,
            "pgpu.thread.sortby" => ThreadSortBy,
            "pgpu.thread.split" => ThreadSplit,
            "pgpu.thread.get" => ThreadGet,
            "pgpu.thread.put" => ThreadPut {
                forwards: Box::default(),
            },
            "pgpu.reduce" => PReduce(comb(name)?),
            "pgpu.scan" => Scan {
                kind: comb(name)?,
                inclusive: has_attr(op, "inclusive"),
            },
            "pgpu.compact" => Compact,
            "pgpu.split" => SplitList,
            "pgpu.sort_idx" => SortIdx,
            "pgpu.multiprefix" => Multiprefix(comb(name)?),
            "pgpu.list.reduce" => List(ListOp::Reduce(comb(name)?)),
            "pgpu.list.scan" => List(ListOp::Scan {
                kind: comb(name)?,
                inclusive: has_attr(op, "inclusive"),
            }),
            "pgpu.list.sort_idx" => List(ListOp::SortIdx),
            "pgpu.list.compact" => List(ListOp::Compact),
            "pgpu.list.split" => List(ListOp::Split),
            "pgpu.list.expand" => List(ListOp::Expand),
            "pgpu.printf" => {
                let format = attr(op, "format").and_then(str_attr).unwrap_or_default();
                match pgpu_runtime::printf::parse_format(&format) {
                    Ok(pieces) => Printf(pieces, Vec::new()),
                    Err(message) => Unsupported(format!("bad printf format: {message}")),
                }
            }
            "pgpu.argi" => ArgI,
            "pgpu.wtime" => WTime,
            "pgpu.grid_capacity" => GridCapacity,
            "pgpu.block_capacity" => BlockCapacity,
            "pgpu.multiprocessors" => Multiprocessors,
            "pgpu.lockstep_width" => LockstepWidth,
            "pgpu.rand_seed" => RandSeed,
            "pgpu.rand_u32" => RandU32,
            "gpu.launch" => GpuLaunch {
                segments: attr(op, "operandSegmentSizes")
                    .and_then(i32_array_attr)
                    .unwrap_or_default(),
                attributions: Vec::new(),
                workgroup: attr(op, "workgroup_attributions")
                    .and_then(int_attr)
                    .unwrap_or(0)
                    .max(0) as usize,
            },
            "gpu.launch_func" => {
                let kernel = attr(op, "kernel");
                // SAFETY: queries on a live attribute.
                let target = kernel.and_then(|a| unsafe {
                    if mlirAttributeIsASymbolRef(a) {
                        let root = string_ref(mlirSymbolRefAttrGetRootReference(a));
                        let mut path = root;
                        for index in 0..mlirSymbolRefAttrGetNumNestedReferences(a) {
                            let nested = mlirSymbolRefAttrGetNestedReference(a, index);
                            path.push_str("::");
                            path.push_str(&string_ref(mlirFlatSymbolRefAttrGetValue(nested)));
                        }
                        Some(path)
                    } else {
                        None
                    }
                });
                match target.as_ref().and_then(|t| self.prog.func_ids.get(t)) {
                    Some(&id) => GpuLaunchFunc(
                        id,
                        attr(op, "operandSegmentSizes")
                            .and_then(i32_array_attr)
                            .unwrap_or_default(),
                    ),
                    None => Unsupported(format!(
                        "gpu.launch_func of unknown kernel '{}'",
                        target.unwrap_or_default()
                    )),
                }
            }
            "gpu.thread_id" | "gpu.block_id" | "gpu.block_dim" | "gpu.grid_dim" => {
                let what = match name {
                    "gpu.thread_id" => GpuIdKind::ThreadId,
                    "gpu.block_id" => GpuIdKind::BlockId,
                    "gpu.block_dim" => GpuIdKind::BlockDim,
                    _ => GpuIdKind::GridDim,
                };
                GpuId {
                    what,
                    dim: kind_attr("dimension").unwrap_or(0).clamp(0, 2) as u8,
                }
            }
            "gpu.barrier" => GpuBarrier,
            "gpu.terminator" => GpuTerminator,
            // A speculative loop has sequential semantics.
            "pgpu.spec.loop" => For { unsigned: false },
            "pgpu.spec.load" => Load,
            "pgpu.spec.store" => Store,
            "pgpu.spec.commit" => Yield,
            "pgpu.group.rank" => GroupRank,
            "pgpu.group.id" => GroupId,
            "pgpu.group.size" => GroupSize,
            "pgpu.group.split" => GroupSplit,
            "pgpu.group.fork" => GroupFork,
            "pgpu.group.merge" => GroupMerge,
            "pgpu.group.alloc" => GroupAlloc,
            "pgpu.seq" => Seq,
            "pgpu.farm" => Farm,
            _ if name.starts_with("pgpu.group.") => {
                Unsupported(format!("'{name}' is not supported by the interpreter yet"))
            }
            _ => Unsupported(format!("unsupported operation '{name}'")),
        })
    }
}

/// Which source dimensions a (possibly rank-reducing) subview keeps: unit
/// dimensions are dropped greedily until the ranks match.
fn kept_dimensions(sizes: &[Option<i64>], result: Option<&MemTy>, result_rank: usize) -> Vec<bool> {
    let mut kept = vec![true; sizes.len()];
    if sizes.len() <= result_rank {
        return kept;
    }
    let mut to_drop = sizes.len() - result_rank;
    let shape = result.map(|t| t.shape.clone()).unwrap_or_default();
    let mut result_dim = 0;
    for (index, size) in sizes.iter().enumerate() {
        let matches_result = shape
            .get(result_dim)
            .is_some_and(|d| *d == *size || d.is_none());
        if to_drop > 0
            && *size == Some(1)
            && (!matches_result || sizes.len() - index > shape.len() - result_dim)
        {
            kept[index] = false;
            to_drop -= 1;
        } else {
            result_dim += 1;
        }
    }
    kept
}
