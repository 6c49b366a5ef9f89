//! PTX to LLVM IR for the host CPU, with the lockstep semantics of a GPU
//! wave of 32 or 64 lanes: how we execute PTX (and check the warp-size
//! translation of [`crate::warp`]) without AMD hardware.
//!
//! Each kernel becomes `void @name(ptr params, ptr context)`, which runs
//! one wave of a block (the context says which; [`crate::run`] runs a
//! block's waves on threads of their own and meets them at barriers).
//! Every register is an array of one value per lane. Instructions run
//! lane by lane under the wave's active mask, each memory or warp-wide
//! instruction for all lanes before the next one (consecutive register
//! computations share one loop over the lanes), so that lanes observe
//! each other exactly as on a SIMT machine: stores of one instruction
//! land in lane order, and a load after them sees them all.
//!
//! Divergence follows the classic reconvergence stack (as GPGPU-Sim
//! models NVIDIA GPUs before Volta and as AMD's structurized control flow
//! behaves): entries (pc, reconvergence pc, mask); a divergent branch in
//! block B sets the top entry's pc to B's immediate post-dominator R and
//! pushes the not-taken and the taken side, each to reconverge at R; an
//! entry that reaches its reconvergence pc is popped, so its lanes
//! continue together with the entry below. Lanes that exit are masked out
//! of every entry.

use crate::flat::{Body, Terminator, flatten, slot_of};
use crate::layout::{Images, Layout, Window, images, layout};
use crate::semantics::{Semantics, signature, unsupported};
use crate::warp::WarpModel;
use crate::{TranslateError, llvm};
use inkwell::AddressSpace;
use inkwell::IntPredicate;
use inkwell::basic_block::BasicBlock;
use inkwell::builder::Builder;
use inkwell::context::Context;
use inkwell::module::{Linkage as LlvmLinkage, Module};
use inkwell::types::{ArrayType, BasicTypeEnum, IntType};
use inkwell::values::{BasicValue, BasicValueEnum, FunctionValue, IntValue, PointerValue};
use pgpu_ptx::ir::*;

type Result<T> = std::result::Result<T, TranslateError>;

/// Fields of the wave context, each 8 bytes (`crate::run::WaveContext`).
pub mod field {
    /// `%ctaid.x`; `.y` and `.z` follow.
    pub const CTAID: u32 = 0;
    /// `%nctaid.x`; `.y` and `.z` follow.
    pub const NCTAID: u32 = 3;
    /// `%ntid.x`; `.y` and `.z` follow.
    pub const NTID: u32 = 6;
    /// The wave's index in its block.
    pub const WAVE: u32 = 9;
    /// Threads in the block.
    pub const THREADS: u32 = 10;
    /// The block's shared memory.
    pub const SHARED: u32 = 11;
    /// The wave's local memory (lane l at `l * LOCAL_BYTES`).
    pub const LOCAL: u32 = 12;
    /// The module's `.global` image.
    pub const GLOBAL: u32 = 13;
    /// The module's `.const` image.
    pub const CONST: u32 = 14;
    /// Local bytes per lane.
    pub const LOCAL_BYTES: u32 = 15;
    /// Dynamic shared bytes.
    pub const DYNAMIC_SHARED: u32 = 16;
    /// The block's barrier state (`crate::run::BlockSync`).
    pub const BLOCK: u32 = 17;
    /// The number of fields.
    pub const COUNT: u32 = 18;
}

/// Runtime functions the emulated code calls.
pub mod runtime {
    /// `void (ptr context)`: the block's barrier.
    pub const BARRIER: &str = "pgpu_ptx_barrier";
    /// `void (ptr context)`: `trap`.
    pub const TRAP: &str = "pgpu_ptx_trap";
    /// `i64 ()`: `%clock64`.
    pub const CLOCK: &str = "pgpu_ptx_clock";
    /// `i64 (i32 op, i32 kind, ptr, i64 b, i64 c)`: an atomic operation.
    pub const ATOMIC: &str = "pgpu_ptx_atomic";
}

/// Atomic operations of [`runtime::ATOMIC`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u32)]
pub enum AtomicOp {
    /// `.add`.
    Add = 0,
    /// `.min`.
    Min,
    /// `.max`.
    Max,
    /// `.inc` (wrapping at b).
    Inc,
    /// `.dec` (wrapping at b).
    Dec,
    /// `.and`.
    And,
    /// `.or`.
    Or,
    /// `.xor`.
    Xor,
    /// `.exch`.
    Exch,
    /// `.cas`.
    Cas,
}

/// Operand kinds of [`runtime::ATOMIC`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u32)]
pub enum AtomicKind {
    /// 32-bit unsigned (and `.b32`).
    U32 = 0,
    /// 32-bit signed.
    S32,
    /// 64-bit unsigned (and `.b64`).
    U64,
    /// 64-bit signed.
    S64,
    /// f32.
    F32,
    /// f64.
    F64,
}

/// What the runner needs to know about a translated kernel.
#[derive(Clone, Debug)]
pub struct KernelInfo {
    /// Its name (the LLVM function's).
    pub name: String,
    /// Its memory layout.
    pub layout: Layout,
}

/// The translation of a module for the CPU.
pub struct CpuModule<'ctx> {
    /// The LLVM module.
    pub module: Module<'ctx>,
    /// Its kernels.
    pub kernels: Vec<KernelInfo>,
    /// The `.global` and `.const` images.
    pub images: Images,
    /// Lanes per wave.
    pub wave: u32,
}

/// Translates every kernel of `ptx` for waves of `wave` lanes (32 or 64).
pub fn translate<'ctx>(
    context: &'ctx Context,
    ptx: &pgpu_ptx::ir::Module,
    wave: u32,
) -> Result<CpuModule<'ctx>> {
    let module = context.create_module("ptx");
    let images = images(ptx)?;
    let mut kernels = Vec::new();
    for function in ptx.functions() {
        if function.kind != FunctionKind::Entry || function.body.is_none() {
            continue;
        }
        let body = flatten(function)?;
        let layout = layout(ptx, function, &body.variables, &images)?;
        let mut codegen = Codegen::new(
            context,
            &module,
            function,
            &body,
            &layout,
            WarpModel::new(wave),
        )?;
        codegen.kernel()?;
        kernels.push(KernelInfo {
            name: function.name.clone(),
            layout,
        });
    }
    module
        .verify()
        .map_err(|message| TranslateError::Llvm(message.to_string()))?;
    Ok(CpuModule {
        module,
        kernels,
        images,
        wave,
    })
}

const STACK_DEPTH: u64 = 64;

struct SlotStorage<'ctx> {
    array: PointerValue<'ctx>,
    ty: ArrayType<'ctx>,
    bits: u32,
}

struct Codegen<'a, 'ctx> {
    context: &'ctx Context,
    module: &'a Module<'ctx>,
    builder: Builder<'ctx>,
    function: FunctionValue<'ctx>,
    body: &'a Body,
    layout: &'a Layout,
    warp: WarpModel,
    params: PointerValue<'ctx>,
    context_ptr: PointerValue<'ctx>,
    slots: Vec<SlotStorage<'ctx>>,
    current: PointerValue<'ctx>,
    exited: PointerValue<'ctx>,
    depth: PointerValue<'ctx>,
    pcs: PointerValue<'ctx>,
    rpcs: PointerValue<'ctx>,
    masks: PointerValue<'ctx>,
    scratch: PointerValue<'ctx>,
    dispatch: Option<BasicBlock<'ctx>>,
    blocks: Vec<BasicBlock<'ctx>>,
}

impl<'a, 'ctx> Codegen<'a, 'ctx> {
    fn new(
        context: &'ctx Context,
        module: &'a Module<'ctx>,
        ptx_function: &'a Function,
        body: &'a Body,
        layout: &'a Layout,
        warp: WarpModel,
    ) -> Result<Self> {
        let ptr = context.ptr_type(AddressSpace::default());
        let fn_type = context
            .void_type()
            .fn_type(&[ptr.into(), ptr.into()], false);
        let function =
            module.add_function(&ptx_function.name, fn_type, Some(LlvmLinkage::External));
        let builder = context.create_builder();
        let entry = context.append_basic_block(function, "entry");
        builder.position_at_end(entry);
        let params = function
            .get_nth_param(0)
            .ok_or_else(|| TranslateError::Llvm("no parameter".into()))?
            .into_pointer_value();
        let context_ptr = function
            .get_nth_param(1)
            .ok_or_else(|| TranslateError::Llvm("no parameter".into()))?
            .into_pointer_value();
        let lanes = warp.wave;
        let mut slots = Vec::with_capacity(body.slots.len());
        for slot in &body.slots {
            if slot.ty.vector.is_some() {
                return Err(TranslateError::Ptx(pgpu_ptx::PtxError::new(
                    pgpu_ptx::ErrorKind::UnsupportedDirective,
                    format!("vector register `{}` is not supported", slot.name),
                    ptx_function.span,
                )));
            }
            let bits = slot.ty.scalar.bits();
            let ty = crate::int_type(context, bits).array_type(lanes);
            let array = builder.build_alloca(ty, &slot.name).map_err(llvm)?;
            slots.push(SlotStorage { array, ty, bits });
        }
        let i64t = context.i64_type();
        let i32t = context.i32_type();
        let current = builder.build_alloca(i64t, "current").map_err(llvm)?;
        let exited = builder.build_alloca(i64t, "exited").map_err(llvm)?;
        let depth = builder.build_alloca(i32t, "depth").map_err(llvm)?;
        let pcs = builder
            .build_alloca(i32t.array_type(STACK_DEPTH as u32), "pcs")
            .map_err(llvm)?;
        let rpcs = builder
            .build_alloca(i32t.array_type(STACK_DEPTH as u32), "rpcs")
            .map_err(llvm)?;
        let masks = builder
            .build_alloca(i64t.array_type(STACK_DEPTH as u32), "masks")
            .map_err(llvm)?;
        let scratch = builder
            .build_alloca(i64t.array_type(lanes), "scratch")
            .map_err(llvm)?;
        Ok(Codegen {
            context,
            module,
            builder,
            function,
            body,
            layout,
            warp,
            params,
            context_ptr,
            slots,
            current,
            exited,
            depth,
            pcs,
            rpcs,
            masks,
            scratch,
            dispatch: None,
            blocks: Vec::new(),
        })
    }

    fn i32(&self) -> IntType<'ctx> {
        self.context.i32_type()
    }

    fn i64(&self) -> IntType<'ctx> {
        self.context.i64_type()
    }

    fn c32(&self, value: u64) -> IntValue<'ctx> {
        self.i32().const_int(value, false)
    }

    fn c64(&self, value: u64) -> IntValue<'ctx> {
        self.i64().const_int(value, false)
    }

    fn semantics(&self) -> Semantics<'_, 'ctx> {
        Semantics {
            context: self.context,
            module: self.module,
            builder: &self.builder,
        }
    }

    fn block(&self, name: &str) -> BasicBlock<'ctx> {
        self.context.append_basic_block(self.function, name)
    }

    fn field(&self, index: u32) -> Result<IntValue<'ctx>> {
        let ptr = unsafe {
            self.builder.build_in_bounds_gep(
                self.i64(),
                self.context_ptr,
                &[self.c64(u64::from(index))],
                "",
            )
        }
        .map_err(llvm)?;
        Ok(self
            .builder
            .build_load(self.i64(), ptr, "")
            .map_err(llvm)?
            .into_int_value())
    }

    fn element(
        &self,
        array: PointerValue<'ctx>,
        ty: BasicTypeEnum<'ctx>,
        count: u32,
        index: IntValue<'ctx>,
    ) -> Result<PointerValue<'ctx>> {
        let array_ty = match ty {
            BasicTypeEnum::IntType(t) => t.array_type(count),
            other => return Err(TranslateError::Llvm(format!("no array of {other}"))),
        };
        unsafe {
            self.builder
                .build_in_bounds_gep(array_ty, array, &[self.c64(0), index], "")
        }
        .map_err(llvm)
    }

    fn stack_slot(
        &self,
        array: PointerValue<'ctx>,
        ty: IntType<'ctx>,
        index: IntValue<'ctx>,
    ) -> Result<PointerValue<'ctx>> {
        self.element(array, ty.into(), STACK_DEPTH as u32, index)
    }

    fn load_int(&self, ty: IntType<'ctx>, ptr: PointerValue<'ctx>) -> Result<IntValue<'ctx>> {
        Ok(self
            .builder
            .build_load(ty, ptr, "")
            .map_err(llvm)?
            .into_int_value())
    }

    fn store(
        &self,
        ptr: PointerValue<'ctx>,
        value: impl inkwell::values::BasicValue<'ctx>,
    ) -> Result<()> {
        self.builder.build_store(ptr, value).map_err(llvm)?;
        Ok(())
    }

    /// The kernel: entry, dispatch loop and one LLVM block per PTX block.
    fn kernel(&mut self) -> Result<()> {
        let lanes = u64::from(self.warp.wave);
        // Lanes of this wave that exist: threads - wave * lanes, capped.
        let wave_index = self.field(field::WAVE)?;
        let threads = self.field(field::THREADS)?;
        let first = self
            .builder
            .build_int_mul(wave_index, self.c64(lanes), "")
            .map_err(llvm)?;
        let present = self
            .builder
            .build_int_sub(threads, first, "")
            .map_err(llvm)?;
        let full = self
            .builder
            .build_int_compare(IntPredicate::UGE, present, self.c64(lanes), "")
            .map_err(llvm)?;
        let all = if lanes == 64 {
            u64::MAX
        } else {
            (1u64 << lanes) - 1
        };
        let partial = self
            .builder
            .build_left_shift(self.c64(1), present, "")
            .map_err(llvm)?;
        let partial = self
            .builder
            .build_int_sub(partial, self.c64(1), "")
            .map_err(llvm)?;
        let mask = self
            .builder
            .build_select(full, self.c64(all), partial, "")
            .map_err(llvm)?
            .into_int_value();
        let exit_pc = self.body.blocks.len() as u64;
        self.store(
            self.stack_slot(self.pcs, self.i32(), self.c32(0))?,
            self.c32(0),
        )?;
        self.store(
            self.stack_slot(self.rpcs, self.i32(), self.c32(0))?,
            self.c32(exit_pc),
        )?;
        self.store(self.stack_slot(self.masks, self.i64(), self.c32(0))?, mask)?;
        self.store(self.depth, self.c32(1))?;
        self.store(self.exited, self.c64(0))?;
        let dispatch = self.block("dispatch");
        self.dispatch = Some(dispatch);
        self.builder
            .build_unconditional_branch(dispatch)
            .map_err(llvm)?;
        self.blocks = (0..self.body.blocks.len())
            .map(|i| self.block(&format!("bb{i}")))
            .collect();

        // dispatch: pop finished entries, then jump to the top entry's pc.
        self.builder.position_at_end(dispatch);
        let depth = self.load_int(self.i32(), self.depth)?;
        let empty = self
            .builder
            .build_int_compare(IntPredicate::EQ, depth, self.c32(0), "")
            .map_err(llvm)?;
        let done = self.block("done");
        let check = self.block("check");
        self.builder
            .build_conditional_branch(empty, done, check)
            .map_err(llvm)?;
        self.builder.position_at_end(done);
        self.builder.build_return(None).map_err(llvm)?;
        self.builder.position_at_end(check);
        let top = self
            .builder
            .build_int_sub(depth, self.c32(1), "")
            .map_err(llvm)?;
        let pc = self.load_int(self.i32(), self.stack_slot(self.pcs, self.i32(), top)?)?;
        let rpc = self.load_int(self.i32(), self.stack_slot(self.rpcs, self.i32(), top)?)?;
        let mask = self.load_int(self.i64(), self.stack_slot(self.masks, self.i64(), top)?)?;
        let exited = self.load_int(self.i64(), self.exited)?;
        let live = self
            .builder
            .build_and(mask, self.builder.build_not(exited, "").map_err(llvm)?, "")
            .map_err(llvm)?;
        let none = self
            .builder
            .build_int_compare(IntPredicate::EQ, live, self.c64(0), "")
            .map_err(llvm)?;
        let arrived = self
            .builder
            .build_int_compare(IntPredicate::EQ, pc, rpc, "")
            .map_err(llvm)?;
        let finished = self.builder.build_or(none, arrived, "").map_err(llvm)?;
        let pop = self.block("pop");
        let run = self.block("run");
        self.builder
            .build_conditional_branch(finished, pop, run)
            .map_err(llvm)?;
        self.builder.position_at_end(pop);
        self.store(self.depth, top)?;
        self.builder
            .build_unconditional_branch(dispatch)
            .map_err(llvm)?;
        self.builder.position_at_end(run);
        self.store(self.current, live)?;
        let cases: Vec<_> = self
            .blocks
            .iter()
            .enumerate()
            .map(|(i, b)| (self.c32(i as u64), *b))
            .collect();
        self.builder.build_switch(pc, done, &cases).map_err(llvm)?;

        for index in 0..self.body.blocks.len() {
            self.builder.position_at_end(self.blocks[index]);
            self.basic_block(index)?;
        }
        Ok(())
    }

    fn set_top_pc(&self, pc: IntValue<'ctx>) -> Result<()> {
        let depth = self.load_int(self.i32(), self.depth)?;
        let top = self
            .builder
            .build_int_sub(depth, self.c32(1), "")
            .map_err(llvm)?;
        self.store(self.stack_slot(self.pcs, self.i32(), top)?, pc)
    }

    fn push(&self, pc: u64, rpc: u64, mask: IntValue<'ctx>) -> Result<()> {
        let depth = self.load_int(self.i32(), self.depth)?;
        let full = self
            .builder
            .build_int_compare(IntPredicate::UGE, depth, self.c32(STACK_DEPTH), "")
            .map_err(llvm)?;
        let overflow = self.block("stack_overflow");
        let ok = self.block("push");
        self.builder
            .build_conditional_branch(full, overflow, ok)
            .map_err(llvm)?;
        self.builder.position_at_end(overflow);
        self.call_runtime(runtime::TRAP, &[self.context_ptr.into()], false)?;
        self.builder.build_return(None).map_err(llvm)?;
        self.builder.position_at_end(ok);
        self.store(self.stack_slot(self.pcs, self.i32(), depth)?, self.c32(pc))?;
        self.store(
            self.stack_slot(self.rpcs, self.i32(), depth)?,
            self.c32(rpc),
        )?;
        self.store(self.stack_slot(self.masks, self.i64(), depth)?, mask)?;
        let next = self
            .builder
            .build_int_add(depth, self.c32(1), "")
            .map_err(llvm)?;
        self.store(self.depth, next)
    }

    fn basic_block(&mut self, index: usize) -> Result<()> {
        let block = &self.body.blocks[index];
        let mut group: Vec<&Instruction> = Vec::new();
        for instruction in &block.instructions {
            if is_lane_local(instruction) {
                group.push(instruction);
                continue;
            }
            self.lane_group(&group)?;
            group.clear();
            self.wave_instruction(instruction)?;
        }
        self.lane_group(&group)?;
        let dispatch = self
            .dispatch
            .ok_or_else(|| TranslateError::Llvm("no dispatch block".into()))?;
        match block.terminator {
            Terminator::Goto(next) => {
                self.set_top_pc(self.c32(next as u64))?;
            }
            Terminator::Exit => {
                let current = self.load_int(self.i64(), self.current)?;
                let exited = self.load_int(self.i64(), self.exited)?;
                self.store(
                    self.exited,
                    self.builder.build_or(exited, current, "").map_err(llvm)?,
                )?;
            }
            Terminator::Branch {
                predicate,
                negated,
                taken,
                fallthrough,
            } => {
                let current = self.load_int(self.i64(), self.current)?;
                let holds = self.ballot(current, |this, lane| {
                    let value = this.read_slot(predicate, lane)?;
                    Ok(if negated {
                        this.builder.build_not(value, "").map_err(llvm)?
                    } else {
                        value
                    })
                })?;
                let taken_mask = self.builder.build_and(current, holds, "").map_err(llvm)?;
                let other_mask = self
                    .builder
                    .build_and(
                        current,
                        self.builder.build_not(holds, "").map_err(llvm)?,
                        "",
                    )
                    .map_err(llvm)?;
                let none_taken = self
                    .builder
                    .build_int_compare(IntPredicate::EQ, taken_mask, self.c64(0), "")
                    .map_err(llvm)?;
                let all_taken = self
                    .builder
                    .build_int_compare(IntPredicate::EQ, other_mask, self.c64(0), "")
                    .map_err(llvm)?;
                let uniform_not = self.block("uniform_not_taken");
                let maybe = self.block("maybe_divergent");
                let uniform = self.block("uniform_taken");
                let divergent = self.block("divergent");
                self.builder
                    .build_conditional_branch(none_taken, uniform_not, maybe)
                    .map_err(llvm)?;
                self.builder.position_at_end(uniform_not);
                self.set_top_pc(self.c32(fallthrough as u64))?;
                self.builder
                    .build_unconditional_branch(dispatch)
                    .map_err(llvm)?;
                self.builder.position_at_end(maybe);
                self.builder
                    .build_conditional_branch(all_taken, uniform, divergent)
                    .map_err(llvm)?;
                self.builder.position_at_end(uniform);
                self.set_top_pc(self.c32(taken as u64))?;
                self.builder
                    .build_unconditional_branch(dispatch)
                    .map_err(llvm)?;
                // Divergent: the top entry waits at the reconvergence point
                // (or is replaced, when it already reconverges there); both
                // sides run to it, the taken one first.
                self.builder.position_at_end(divergent);
                let reconverge = self.body.ipdom[index] as u64;
                let depth = self.load_int(self.i32(), self.depth)?;
                let top = self
                    .builder
                    .build_int_sub(depth, self.c32(1), "")
                    .map_err(llvm)?;
                let top_rpc =
                    self.load_int(self.i32(), self.stack_slot(self.rpcs, self.i32(), top)?)?;
                let same = self
                    .builder
                    .build_int_compare(IntPredicate::EQ, top_rpc, self.c32(reconverge), "")
                    .map_err(llvm)?;
                let replace = self.block("replace_top");
                let keep = self.block("keep_top");
                let pushes = self.block("push_sides");
                self.builder
                    .build_conditional_branch(same, replace, keep)
                    .map_err(llvm)?;
                self.builder.position_at_end(replace);
                self.store(self.depth, top)?;
                self.builder
                    .build_unconditional_branch(pushes)
                    .map_err(llvm)?;
                self.builder.position_at_end(keep);
                self.store(
                    self.stack_slot(self.pcs, self.i32(), top)?,
                    self.c32(reconverge),
                )?;
                self.builder
                    .build_unconditional_branch(pushes)
                    .map_err(llvm)?;
                self.builder.position_at_end(pushes);
                self.push(fallthrough as u64, reconverge, other_mask)?;
                self.push(taken as u64, reconverge, taken_mask)?;
            }
        }
        self.builder
            .build_unconditional_branch(dispatch)
            .map_err(llvm)?;
        Ok(())
    }

    fn call_runtime(
        &self,
        name: &str,
        args: &[BasicValueEnum<'ctx>],
        returns: bool,
    ) -> Result<Option<BasicValueEnum<'ctx>>> {
        let function = match self.module.get_function(name) {
            Some(function) => function,
            None => {
                let params: Vec<_> = args.iter().map(|a| a.get_type().into()).collect();
                let ty = if returns {
                    self.i64().fn_type(&params, false)
                } else {
                    self.context.void_type().fn_type(&params, false)
                };
                self.module
                    .add_function(name, ty, Some(LlvmLinkage::External))
            }
        };
        let args: Vec<_> = args.iter().map(|a| (*a).into()).collect();
        let call = self.builder.build_call(function, &args, "").map_err(llvm)?;
        Ok(call.try_as_basic_value().basic())
    }

    /// Runs `body` for every lane set in `mask`, in lane order.
    fn lane_loop(
        &mut self,
        mask: IntValue<'ctx>,
        mut body: impl FnMut(&mut Self, IntValue<'ctx>) -> Result<()>,
    ) -> Result<()> {
        let before = self
            .builder
            .get_insert_block()
            .ok_or_else(|| TranslateError::Llvm("no block".into()))?;
        let header = self.block("lanes");
        let test = self.block("lane_test");
        let active = self.block("lane");
        let latch = self.block("lane_next");
        let exit = self.block("lanes_done");
        self.builder
            .build_unconditional_branch(header)
            .map_err(llvm)?;
        self.builder.position_at_end(header);
        let lane = self.builder.build_phi(self.i32(), "lane").map_err(llvm)?;
        lane.add_incoming(&[(&self.c32(0), before)]);
        let lane_value = lane.as_basic_value().into_int_value();
        let more = self
            .builder
            .build_int_compare(
                IntPredicate::ULT,
                lane_value,
                self.c32(u64::from(self.warp.wave)),
                "",
            )
            .map_err(llvm)?;
        self.builder
            .build_conditional_branch(more, test, exit)
            .map_err(llvm)?;
        self.builder.position_at_end(test);
        let shifted = self
            .builder
            .build_right_shift(
                mask,
                self.builder
                    .build_int_z_extend(lane_value, self.i64(), "")
                    .map_err(llvm)?,
                false,
                "",
            )
            .map_err(llvm)?;
        let bit = self
            .builder
            .build_int_truncate(shifted, self.context.bool_type(), "")
            .map_err(llvm)?;
        self.builder
            .build_conditional_branch(bit, active, latch)
            .map_err(llvm)?;
        self.builder.position_at_end(active);
        body(self, lane_value)?;
        self.builder
            .build_unconditional_branch(latch)
            .map_err(llvm)?;
        self.builder.position_at_end(latch);
        let next = self
            .builder
            .build_int_add(lane_value, self.c32(1), "")
            .map_err(llvm)?;
        lane.add_incoming(&[(&next, latch)]);
        self.builder
            .build_unconditional_branch(header)
            .map_err(llvm)?;
        self.builder.position_at_end(exit);
        Ok(())
    }

    /// The mask of lanes in `mask` for which `predicate` (an i1) holds.
    fn ballot(
        &mut self,
        mask: IntValue<'ctx>,
        mut predicate: impl FnMut(&mut Self, IntValue<'ctx>) -> Result<IntValue<'ctx>>,
    ) -> Result<IntValue<'ctx>> {
        let bits = self
            .builder
            .build_alloca(self.i64(), "ballot")
            .map_err(llvm)?;
        self.store(bits, self.c64(0))?;
        self.lane_loop(mask, |this, lane| {
            let value = predicate(this, lane)?;
            let bit = this
                .builder
                .build_int_z_extend(value, this.i64(), "")
                .map_err(llvm)?;
            let lane64 = this
                .builder
                .build_int_z_extend(lane, this.i64(), "")
                .map_err(llvm)?;
            let bit = this
                .builder
                .build_left_shift(bit, lane64, "")
                .map_err(llvm)?;
            let old = this.load_int(this.i64(), bits)?;
            this.store(bits, this.builder.build_or(old, bit, "").map_err(llvm)?)
        })?;
        self.load_int(self.i64(), bits)
    }

    fn slot_pointer(&self, slot: usize, lane: IntValue<'ctx>) -> Result<PointerValue<'ctx>> {
        let storage = &self.slots[slot];
        unsafe {
            self.builder
                .build_in_bounds_gep(storage.ty, storage.array, &[self.c32(0), lane], "")
        }
        .map_err(llvm)
    }

    fn read_slot(&self, slot: usize, lane: IntValue<'ctx>) -> Result<IntValue<'ctx>> {
        let ty = crate::int_type(self.context, self.slots[slot].bits);
        self.load_int(ty, self.slot_pointer(slot, lane)?)
    }

    fn write_slot(&self, slot: usize, lane: IntValue<'ctx>, value: IntValue<'ctx>) -> Result<()> {
        self.store(self.slot_pointer(slot, lane)?, value)
    }

    /// Raw bits as a value of PTX type `ty`.
    fn typed(
        &self,
        raw: IntValue<'ctx>,
        ty: ScalarType,
        signed_extend: bool,
    ) -> Result<BasicValueEnum<'ctx>> {
        let resized = self.semantics().resize(raw, ty.bits(), signed_extend)?;
        Ok(match ty {
            ScalarType::F32 | ScalarType::F64 => self
                .builder
                .build_bit_cast(resized, self.semantics().value_type(ty), "")
                .map_err(llvm)?,
            _ => resized.into(),
        })
    }

    /// A value of PTX type `ty` as `bits` raw bits (extended by `ty`'s
    /// signedness).
    fn raw(
        &self,
        value: BasicValueEnum<'ctx>,
        ty: ScalarType,
        bits: u32,
    ) -> Result<IntValue<'ctx>> {
        let int = match value {
            BasicValueEnum::FloatValue(f) => self
                .builder
                .build_bit_cast(f, crate::int_type(self.context, ty.bits()), "")
                .map_err(llvm)?
                .into_int_value(),
            other => other.into_int_value(),
        };
        self.semantics()
            .resize(int, bits, ty.class() == TypeClass::Signed)
    }

    fn unsupported_operand(&self, instruction: &Instruction, what: &str) -> TranslateError {
        unsupported(instruction, &format!("with {what}"))
    }

    /// The value of a source operand, as PTX type `ty`, for `lane`.
    fn read(
        &mut self,
        instruction: &Instruction,
        operand: &Operand,
        ty: ScalarType,
        lane: IntValue<'ctx>,
    ) -> Result<BasicValueEnum<'ctx>> {
        match operand {
            Operand::Name(name) => {
                if let Some(slot) = slot_of(name) {
                    let raw = self.read_slot(slot, lane)?;
                    return self.typed(raw, ty, false);
                }
                if let Some(value) = self.special(name, None, lane)? {
                    return self.typed(value, ty, false);
                }
                if let Some(address) = self.variable_address(name)? {
                    return self.typed(address, ty, false);
                }
                Err(self.unsupported_operand(instruction, &format!("operand `{name}`")))
            }
            Operand::Component(name, component) => {
                let value = self.special(name, Some(*component), lane)?.ok_or_else(|| {
                    self.unsupported_operand(instruction, &format!("operand `{name}`"))
                })?;
                self.typed(value, ty, false)
            }
            Operand::Immediate(value) => Ok(self.immediate(*value, ty)),
            Operand::Not(inner) => {
                let value = self.read(instruction, inner, ty, lane)?.into_int_value();
                Ok(self.builder.build_not(value, "").map_err(llvm)?.into())
            }
            _ => Err(self.unsupported_operand(instruction, "this operand")),
        }
    }

    fn immediate(&self, value: Immediate, ty: ScalarType) -> BasicValueEnum<'ctx> {
        match ty {
            ScalarType::F32 => {
                let v = match value {
                    Immediate::F32(bits) => f64::from(f32::from_bits(bits)),
                    Immediate::F64(bits) => f64::from_bits(bits),
                    Immediate::Int(v) => v as f64,
                    Immediate::Uint(v) => v as f64,
                };
                self.context.f32_type().const_float(v).into()
            }
            ScalarType::F64 => {
                let v = match value {
                    Immediate::F32(bits) => f64::from(f32::from_bits(bits)),
                    Immediate::F64(bits) => f64::from_bits(bits),
                    Immediate::Int(v) => v as f64,
                    Immediate::Uint(v) => v as f64,
                };
                self.context.f64_type().const_float(v).into()
            }
            other => crate::int_type(self.context, other.bits())
                .const_int(value.bits(), false)
                .into(),
        }
    }

    /// Writes `value` (of PTX type `ty`) to a destination operand.
    fn write(
        &mut self,
        instruction: &Instruction,
        operand: &Operand,
        ty: ScalarType,
        lane: IntValue<'ctx>,
        value: BasicValueEnum<'ctx>,
    ) -> Result<()> {
        match operand {
            Operand::Name(name) => {
                let slot = slot_of(name).ok_or_else(|| {
                    self.unsupported_operand(instruction, &format!("destination `{name}`"))
                })?;
                let raw = self.raw(value, ty, self.slots[slot].bits)?;
                self.write_slot(slot, lane, raw)
            }
            Operand::Sink => Ok(()),
            _ => Err(self.unsupported_operand(instruction, "this destination")),
        }
    }

    /// The address of a module or kernel variable as an instruction sees
    /// it: a pointer for `.global` ones, an offset in its window otherwise.
    fn variable_address(&self, name: &str) -> Result<Option<IntValue<'ctx>>> {
        let Some(&(window, offset)) = self.layout.variables.get(name) else {
            return Ok(None);
        };
        Ok(Some(match window {
            Window::Global => {
                let base = self.field(field::GLOBAL)?;
                self.builder
                    .build_int_add(base, self.c64(offset), "")
                    .map_err(llvm)?
            }
            _ => self.c64(offset),
        }))
    }

    fn window_base(&self, window: Window, lane: IntValue<'ctx>) -> Result<IntValue<'ctx>> {
        Ok(match window {
            Window::Param => self
                .builder
                .build_ptr_to_int(self.params, self.i64(), "")
                .map_err(llvm)?,
            Window::Global => self.c64(0),
            Window::Const => self.field(field::CONST)?,
            Window::Shared => self.field(field::SHARED)?,
            Window::Local => {
                let base = self.field(field::LOCAL)?;
                let size = self.field(field::LOCAL_BYTES)?;
                let lane64 = self
                    .builder
                    .build_int_z_extend(lane, self.i64(), "")
                    .map_err(llvm)?;
                let offset = self.builder.build_int_mul(lane64, size, "").map_err(llvm)?;
                self.builder.build_int_add(base, offset, "").map_err(llvm)?
            }
        })
    }

    fn space_window(space: Option<StateSpace>) -> Option<Window> {
        match space {
            Some(StateSpace::Shared | StateSpace::SharedCta) => Some(Window::Shared),
            Some(StateSpace::Local) => Some(Window::Local),
            Some(StateSpace::Const) => Some(Window::Const),
            Some(StateSpace::Param | StateSpace::ParamEntry) => Some(Window::Param),
            _ => None,
        }
    }

    /// The host pointer an address operand names for `lane`.
    fn pointer(
        &mut self,
        instruction: &Instruction,
        address: &Address,
        lane: IntValue<'ctx>,
    ) -> Result<PointerValue<'ctx>> {
        let space = instruction.space();
        let host = match &address.base {
            Some(name) if slot_of(name).is_none() => {
                let &(window, offset) =
                    self.layout.variables.get(name.as_str()).ok_or_else(|| {
                        self.unsupported_operand(instruction, &format!("address `{name}`"))
                    })?;
                let base = match window {
                    Window::Global => self.field(field::GLOBAL)?,
                    other => self.window_base(other, lane)?,
                };
                let total = offset.wrapping_add(address.offset as u64);
                self.builder
                    .build_int_add(base, self.c64(total), "")
                    .map_err(llvm)?
            }
            base => {
                let value = match base {
                    Some(name) => {
                        let slot = slot_of(name)
                            .ok_or_else(|| self.unsupported_operand(instruction, "this address"))?;
                        let raw = self.read_slot(slot, lane)?;
                        self.semantics().resize(raw, 64, false)?
                    }
                    None => self.c64(0),
                };
                let value = self
                    .builder
                    .build_int_add(value, self.c64(address.offset as u64), "")
                    .map_err(llvm)?;
                match Self::space_window(space) {
                    Some(window) => {
                        let base = self.window_base(window, lane)?;
                        self.builder.build_int_add(base, value, "").map_err(llvm)?
                    }
                    None => value,
                }
            }
        };
        self.builder
            .build_int_to_ptr(host, self.context.ptr_type(AddressSpace::default()), "")
            .map_err(llvm)
    }

    /// A special register's value for `lane` (32 bits, or 64 for
    /// `%clock64` and `%globaltimer`); None if `name` is not one.
    fn special(
        &mut self,
        name: &str,
        component: Option<Component>,
        lane: IntValue<'ctx>,
    ) -> Result<Option<IntValue<'ctx>>> {
        let index = component.map_or(0, Component::index) as u32;
        let b = &self.builder;
        let to32 = |v: IntValue<'ctx>| b.build_int_truncate(v, self.i32(), "").map_err(llvm);
        let thread = || -> Result<IntValue<'ctx>> {
            let wave = to32(self.field(field::WAVE)?)?;
            let first = b
                .build_int_mul(wave, self.c32(u64::from(self.warp.wave)), "")
                .map_err(llvm)?;
            b.build_int_add(first, lane, "").map_err(llvm)
        };
        let value = match name {
            "%tid" => {
                let t = thread()?;
                let x = to32(self.field(field::NTID)?)?;
                let y = to32(self.field(field::NTID + 1)?)?;
                match index {
                    0 => b.build_int_unsigned_rem(t, x, "").map_err(llvm)?,
                    1 => {
                        let row = b.build_int_unsigned_div(t, x, "").map_err(llvm)?;
                        b.build_int_unsigned_rem(row, y, "").map_err(llvm)?
                    }
                    _ => {
                        let xy = b.build_int_mul(x, y, "").map_err(llvm)?;
                        b.build_int_unsigned_div(t, xy, "").map_err(llvm)?
                    }
                }
            }
            "%ntid" => to32(self.field(field::NTID + index)?)?,
            "%ctaid" => to32(self.field(field::CTAID + index)?)?,
            "%nctaid" => to32(self.field(field::NCTAID + index)?)?,
            "%laneid" => self.warp.lane_id(b, lane)?,
            "%warpid" => {
                let t = thread()?;
                b.build_right_shift(t, self.c32(5), false, "")
                    .map_err(llvm)?
            }
            "%nwarpid" => {
                let threads = to32(self.field(field::THREADS)?)?;
                let plus = b.build_int_add(threads, self.c32(31), "").map_err(llvm)?;
                b.build_right_shift(plus, self.c32(5), false, "")
                    .map_err(llvm)?
            }
            "%lanemask_eq" | "%lanemask_lt" | "%lanemask_le" | "%lanemask_gt" | "%lanemask_ge" => {
                let id = self.warp.lane_id(b, lane)?;
                let bit = b.build_left_shift(self.c32(1), id, "").map_err(llvm)?;
                let lt = b.build_int_sub(bit, self.c32(1), "").map_err(llvm)?;
                let le = b.build_or(lt, bit, "").map_err(llvm)?;
                match name {
                    "%lanemask_eq" => bit,
                    "%lanemask_lt" => lt,
                    "%lanemask_le" => le,
                    "%lanemask_gt" => b.build_not(le, "").map_err(llvm)?,
                    _ => b.build_not(lt, "").map_err(llvm)?,
                }
            }
            "%smid" | "%gridid" => self.c32(0),
            "%nsmid" => self.c32(1),
            "%dynamic_smem_size" => to32(self.field(field::DYNAMIC_SHARED)?)?,
            "%total_smem_size" => {
                let dynamic = to32(self.field(field::DYNAMIC_SHARED)?)?;
                b.build_int_add(dynamic, self.c32(self.layout.shared_bytes), "")
                    .map_err(llvm)?
            }
            "%clock" | "%clock64" | "%globaltimer" | "%clock_hi" | "%globaltimer_lo"
            | "%globaltimer_hi" => {
                let now = self
                    .call_runtime(runtime::CLOCK, &[], true)?
                    .ok_or_else(|| TranslateError::Llvm("clock returns nothing".into()))?
                    .into_int_value();
                match name {
                    "%clock64" | "%globaltimer" => now,
                    "%clock_hi" | "%globaltimer_hi" => {
                        let high = self
                            .builder
                            .build_right_shift(now, self.c64(32), false, "")
                            .map_err(llvm)?;
                        self.builder
                            .build_int_truncate(high, self.i32(), "")
                            .map_err(llvm)?
                    }
                    _ => self
                        .builder
                        .build_int_truncate(now, self.i32(), "")
                        .map_err(llvm)?,
                }
            }
            _ => return Ok(None),
        };
        Ok(Some(value))
    }

    /// Consecutive lane-local instructions in one loop over the lanes.
    fn lane_group(&mut self, group: &[&Instruction]) -> Result<()> {
        if group.is_empty() {
            return Ok(());
        }
        let current = self.load_int(self.i64(), self.current)?;
        self.lane_loop(current, |this, lane| {
            for instruction in group {
                this.guarded(instruction, lane, |this| {
                    this.lane_instruction(instruction, lane)
                })?;
            }
            Ok(())
        })
    }

    /// Runs `body` for `lane` when the instruction's guard holds there.
    fn guarded(
        &mut self,
        instruction: &Instruction,
        lane: IntValue<'ctx>,
        body: impl FnOnce(&mut Self) -> Result<()>,
    ) -> Result<()> {
        let Some(guard) = &instruction.guard else {
            return body(self);
        };
        let slot =
            slot_of(&guard.predicate).ok_or_else(|| unsupported(instruction, "with this guard"))?;
        let mut holds = self.read_slot(slot, lane)?;
        if guard.negated {
            holds = self.builder.build_not(holds, "").map_err(llvm)?;
        }
        let run = self.block("guarded");
        let skip = self.block("after_guard");
        self.builder
            .build_conditional_branch(holds, run, skip)
            .map_err(llvm)?;
        self.builder.position_at_end(run);
        body(self)?;
        self.builder
            .build_unconditional_branch(skip)
            .map_err(llvm)?;
        self.builder.position_at_end(skip);
        Ok(())
    }

    fn lane_instruction(&mut self, instruction: &Instruction, lane: IntValue<'ctx>) -> Result<()> {
        match instruction.opcode {
            Opcode::Mov => return self.mov(instruction, lane),
            Opcode::Cvta => return self.cvta(instruction, lane),
            Opcode::Ld | Opcode::Ldu => return self.load(instruction, lane),
            Opcode::St => return self.store_instruction(instruction, lane),
            Opcode::Atom | Opcode::Red => return self.atomic(instruction, lane),
            Opcode::Nanosleep | Opcode::Prefetch | Opcode::Griddepcontrol => return Ok(()),
            _ => {}
        }
        let signature = signature(instruction)?.ok_or_else(|| unsupported(instruction, "here"))?;
        let dest_count = match instruction.operands.first() {
            Some(Operand::Pair(..)) => 1,
            _ => 1,
        };
        let sources_ops = &instruction.operands[dest_count..];
        if sources_ops.len() < signature.sources.len() {
            return Err(unsupported(instruction, "with too few operands"));
        }
        let mut sources = Vec::with_capacity(signature.sources.len());
        for (operand, ty) in sources_ops.iter().zip(&signature.sources) {
            sources.push(self.read(instruction, operand, *ty, lane)?);
        }
        let results = self
            .semantics()
            .compute(instruction, &signature, &sources)?;
        match &instruction.operands[0] {
            Operand::Pair(first, second) => {
                self.write(instruction, first, signature.dests[0], lane, results[0])?;
                if let (Some(ty), Some(value)) = (signature.dests.get(1), results.get(1)) {
                    self.write(instruction, second, *ty, lane, *value)?;
                }
            }
            dest => self.write(instruction, dest, signature.dests[0], lane, results[0])?,
        }
        Ok(())
    }

    fn mov(&mut self, instruction: &Instruction, lane: IntValue<'ctx>) -> Result<()> {
        let ty = instruction
            .ty()
            .ok_or_else(|| unsupported(instruction, "without a type"))?;
        let (dest, source) = (&instruction.operands[0], &instruction.operands[1]);
        match (dest, source) {
            // Unpack: mov.b64 {a, b}, x.
            (Operand::Vector(parts), source) => {
                let whole = self.read(instruction, source, ty, lane)?;
                let whole = self.raw(whole, ty, ty.bits())?;
                let part_bits = ty.bits() / parts.len() as u32;
                let part_ty = int_type_of(part_bits)
                    .ok_or_else(|| unsupported(instruction, "with this vector"))?;
                for (k, part) in parts.iter().enumerate() {
                    let shifted = self
                        .builder
                        .build_right_shift(
                            whole,
                            whole
                                .get_type()
                                .const_int(u64::from(part_bits) * k as u64, false),
                            false,
                            "",
                        )
                        .map_err(llvm)?;
                    let value = self.semantics().resize(shifted, part_bits, false)?;
                    self.write(instruction, part, part_ty, lane, value.into())?;
                }
                Ok(())
            }
            // Pack: mov.b64 x, {a, b}.
            (dest, Operand::Vector(parts)) => {
                let part_bits = ty.bits() / parts.len() as u32;
                let part_ty = int_type_of(part_bits)
                    .ok_or_else(|| unsupported(instruction, "with this vector"))?;
                let wide = crate::int_type(self.context, ty.bits());
                let mut whole = wide.const_zero();
                for (k, part) in parts.iter().enumerate() {
                    let value = self.read(instruction, part, part_ty, lane)?;
                    let value =
                        self.semantics()
                            .resize(value.into_int_value(), ty.bits(), false)?;
                    let placed = self
                        .builder
                        .build_left_shift(
                            value,
                            wide.const_int(u64::from(part_bits) * k as u64, false),
                            "",
                        )
                        .map_err(llvm)?;
                    whole = self.builder.build_or(whole, placed, "").map_err(llvm)?;
                }
                let value = self.typed(whole, ty, false)?;
                self.write(instruction, dest, ty, lane, value)
            }
            (dest, source) => {
                let value = self.read(instruction, source, ty, lane)?;
                self.write(instruction, dest, ty, lane, value)
            }
        }
    }

    fn cvta(&mut self, instruction: &Instruction, lane: IntValue<'ctx>) -> Result<()> {
        let ty = instruction
            .ty()
            .ok_or_else(|| unsupported(instruction, "without a type"))?;
        let value = self
            .read(instruction, &instruction.operands[1], ty, lane)?
            .into_int_value();
        let value = self.semantics().resize(value, 64, false)?;
        let result = match Self::space_window(instruction.space()) {
            None => value,
            Some(window) => {
                let base = self.window_base(window, lane)?;
                if instruction.has(Flag::To) {
                    self.builder.build_int_sub(value, base, "").map_err(llvm)?
                } else {
                    self.builder.build_int_add(value, base, "").map_err(llvm)?
                }
            }
        };
        let result = self.semantics().resize(result, ty.bits(), false)?;
        self.write(
            instruction,
            &instruction.operands[0],
            ty,
            lane,
            result.into(),
        )
    }

    fn load(&mut self, instruction: &Instruction, lane: IntValue<'ctx>) -> Result<()> {
        let ty = instruction
            .ty()
            .ok_or_else(|| unsupported(instruction, "without a type"))?;
        let Operand::Address(address) = &instruction.operands[1] else {
            return Err(unsupported(instruction, "without an address"));
        };
        let pointer = self.pointer(instruction, address, lane)?;
        let dests: Vec<Operand> = match &instruction.operands[0] {
            Operand::Vector(items) => items.clone(),
            other => vec![other.clone()],
        };
        let element = self.semantics().value_type(ty);
        for (k, dest) in dests.iter().enumerate() {
            let at = unsafe {
                self.builder.build_in_bounds_gep(
                    self.context.i8_type(),
                    pointer,
                    &[self.c64(u64::from(ty.bytes()) * k as u64)],
                    "",
                )
            }
            .map_err(llvm)?;
            let value = self.builder.build_load(element, at, "").map_err(llvm)?;
            if let Some(load) = value.as_instruction_value() {
                let _ = load.set_alignment(ty.bytes().max(1));
                if instruction.has(Flag::Volatile) {
                    let _ = load.set_volatile(true);
                }
            }
            self.write(instruction, dest, ty, lane, value)?;
        }
        Ok(())
    }

    fn store_instruction(&mut self, instruction: &Instruction, lane: IntValue<'ctx>) -> Result<()> {
        let ty = instruction
            .ty()
            .ok_or_else(|| unsupported(instruction, "without a type"))?;
        let Operand::Address(address) = &instruction.operands[0] else {
            return Err(unsupported(instruction, "without an address"));
        };
        let pointer = self.pointer(instruction, address, lane)?;
        let sources: Vec<Operand> = match &instruction.operands[1] {
            Operand::Vector(items) => items.clone(),
            other => vec![other.clone()],
        };
        for (k, source) in sources.iter().enumerate() {
            let value = self.read(instruction, source, ty, lane)?;
            let at = unsafe {
                self.builder.build_in_bounds_gep(
                    self.context.i8_type(),
                    pointer,
                    &[self.c64(u64::from(ty.bytes()) * k as u64)],
                    "",
                )
            }
            .map_err(llvm)?;
            let store = self.builder.build_store(at, value).map_err(llvm)?;
            let _ = store.set_alignment(ty.bytes().max(1));
            if instruction.has(Flag::Volatile) {
                let _ = store.set_volatile(true);
            }
        }
        Ok(())
    }

    fn atomic(&mut self, instruction: &Instruction, lane: IntValue<'ctx>) -> Result<()> {
        use Flag as F;
        let ty = instruction
            .ty()
            .ok_or_else(|| unsupported(instruction, "without a type"))?;
        let op = match instruction.one_of(&[
            F::Add,
            F::Min,
            F::Max,
            F::Inc,
            F::Dec,
            F::And,
            F::Or,
            F::Xor,
            F::Exch,
            F::Cas,
        ]) {
            Some(F::Add) => AtomicOp::Add,
            Some(F::Min) => AtomicOp::Min,
            Some(F::Max) => AtomicOp::Max,
            Some(F::Inc) => AtomicOp::Inc,
            Some(F::Dec) => AtomicOp::Dec,
            Some(F::And) => AtomicOp::And,
            Some(F::Or) => AtomicOp::Or,
            Some(F::Xor) => AtomicOp::Xor,
            Some(F::Exch) => AtomicOp::Exch,
            Some(F::Cas) => AtomicOp::Cas,
            _ => return Err(unsupported(instruction, "without an operation")),
        };
        let kind = match (ty.class(), ty.bits()) {
            (TypeClass::Signed, 32) => AtomicKind::S32,
            (TypeClass::Signed, 64) => AtomicKind::S64,
            (TypeClass::Float, 32) => AtomicKind::F32,
            (TypeClass::Float, 64) => AtomicKind::F64,
            (_, 32) => AtomicKind::U32,
            (_, 64) => AtomicKind::U64,
            _ => return Err(unsupported(instruction, &format!("on `.{ty}`"))),
        };
        let reduction = instruction.opcode == Opcode::Red;
        let (address_index, first_value) = if reduction { (0, 1) } else { (1, 2) };
        let Operand::Address(address) = &instruction.operands[address_index] else {
            return Err(unsupported(instruction, "without an address"));
        };
        let pointer = self.pointer(instruction, address, lane)?;
        let mut values = Vec::new();
        for operand in &instruction.operands[first_value..] {
            let value = self.read(instruction, operand, ty, lane)?;
            values.push(self.raw(value, ty, 64)?);
        }
        let b = values.first().copied().unwrap_or(self.c64(0));
        let c = values.get(1).copied().unwrap_or(self.c64(0));
        let old = self
            .call_runtime(
                runtime::ATOMIC,
                &[
                    self.c32(op as u64).into(),
                    self.c32(kind as u64).into(),
                    pointer.into(),
                    b.into(),
                    c.into(),
                ],
                true,
            )?
            .ok_or_else(|| TranslateError::Llvm("atomic returns nothing".into()))?
            .into_int_value();
        if !reduction {
            let old = self.semantics().resize(old, ty.bits(), false)?;
            let value = self.typed(old, ty, false)?;
            self.write(instruction, &instruction.operands[0], ty, lane, value)?;
        }
        Ok(())
    }

    /// Instructions that involve the whole wave or the block.
    fn wave_instruction(&mut self, instruction: &Instruction) -> Result<()> {
        let current = self.load_int(self.i64(), self.current)?;
        match instruction.opcode {
            Opcode::Ld | Opcode::Ldu | Opcode::St | Opcode::Atom | Opcode::Red => {
                self.lane_loop(current, |this, lane| {
                    this.guarded(instruction, lane, |this| {
                        this.lane_instruction(instruction, lane)
                    })
                })
            }
            Opcode::Bar | Opcode::Barrier => {
                if instruction.has(Flag::Warp) {
                    return Ok(());
                }
                if instruction.has(Flag::Arrive) || instruction.has(Flag::Red) {
                    return Err(unsupported(instruction, "(arrive and reduction barriers)"));
                }
                if instruction.guard.is_some() {
                    return Err(unsupported(instruction, "with a guard"));
                }
                self.call_runtime(runtime::BARRIER, &[self.context_ptr.into()], false)?;
                Ok(())
            }
            Opcode::Membar | Opcode::Fence => {
                self.builder
                    .build_fence(inkwell::AtomicOrdering::SequentiallyConsistent, false, "")
                    .map_err(llvm)?;
                Ok(())
            }
            Opcode::Ret | Opcode::Exit | Opcode::Trap => {
                let leaving = match &instruction.guard {
                    None => current,
                    Some(_) => self.ballot(current, |this, lane| {
                        let bit = this
                            .builder
                            .build_alloca(this.context.bool_type(), "")
                            .map_err(llvm)?;
                        this.store(bit, this.context.bool_type().const_zero())?;
                        this.guarded(instruction, lane, |this| {
                            this.store(bit, this.context.bool_type().const_all_ones())
                        })?;
                        this.load_int(this.context.bool_type(), bit)
                    })?,
                };
                if instruction.opcode == Opcode::Trap {
                    let any = self
                        .builder
                        .build_int_compare(IntPredicate::NE, leaving, self.c64(0), "")
                        .map_err(llvm)?;
                    let trap = self.block("trap");
                    let after = self.block("after_trap");
                    self.builder
                        .build_conditional_branch(any, trap, after)
                        .map_err(llvm)?;
                    self.builder.position_at_end(trap);
                    self.call_runtime(runtime::TRAP, &[self.context_ptr.into()], false)?;
                    self.builder
                        .build_unconditional_branch(after)
                        .map_err(llvm)?;
                    self.builder.position_at_end(after);
                }
                let exited = self.load_int(self.i64(), self.exited)?;
                self.store(
                    self.exited,
                    self.builder.build_or(exited, leaving, "").map_err(llvm)?,
                )?;
                let still = self
                    .builder
                    .build_and(
                        current,
                        self.builder.build_not(leaving, "").map_err(llvm)?,
                        "",
                    )
                    .map_err(llvm)?;
                self.store(self.current, still)
            }
            Opcode::Activemask => {
                let warp = self.warp;
                self.lane_loop(current, |this, lane| {
                    let value = warp.lanes_of_warp(&this.builder, current, lane)?;
                    this.write(
                        instruction,
                        &instruction.operands[0],
                        ScalarType::B32,
                        lane,
                        value.into(),
                    )
                })
            }
            Opcode::Vote => self.vote(instruction, current),
            Opcode::Shfl => self.shuffle(instruction, current),
            _ => Err(unsupported(instruction, "here")),
        }
    }

    fn vote(&mut self, instruction: &Instruction, current: IntValue<'ctx>) -> Result<()> {
        let mode = instruction
            .one_of(&[Flag::All, Flag::Any, Flag::Uni, Flag::Ballot])
            .ok_or_else(|| unsupported(instruction, "without a mode"))?;
        if instruction.guard.is_some() {
            return Err(unsupported(instruction, "with a guard"));
        }
        let predicate_operand = instruction.operands[1].clone();
        let holds = self.ballot(current, |this, lane| {
            Ok(this
                .read(instruction, &predicate_operand, ScalarType::Pred, lane)?
                .into_int_value())
        })?;
        let warp = self.warp;
        self.lane_loop(current, |this, lane| {
            let member = this
                .read(instruction, &instruction.operands[2], ScalarType::B32, lane)?
                .into_int_value();
            let active = warp.lanes_of_warp(&this.builder, current, lane)?;
            let members = this.builder.build_and(active, member, "").map_err(llvm)?;
            let bits = warp.lanes_of_warp(&this.builder, holds, lane)?;
            let bits = this.builder.build_and(bits, members, "").map_err(llvm)?;
            let b = &this.builder;
            match mode {
                Flag::Ballot => this.write(
                    instruction,
                    &instruction.operands[0],
                    ScalarType::B32,
                    lane,
                    bits.into(),
                ),
                _ => {
                    let zero = this.c32(0);
                    let value = match mode {
                        Flag::All => b
                            .build_int_compare(IntPredicate::EQ, bits, members, "")
                            .map_err(llvm)?,
                        Flag::Any => b
                            .build_int_compare(IntPredicate::NE, bits, zero, "")
                            .map_err(llvm)?,
                        _ => {
                            let none = b
                                .build_int_compare(IntPredicate::EQ, bits, zero, "")
                                .map_err(llvm)?;
                            let all = b
                                .build_int_compare(IntPredicate::EQ, bits, members, "")
                                .map_err(llvm)?;
                            b.build_or(none, all, "").map_err(llvm)?
                        }
                    };
                    this.write(
                        instruction,
                        &instruction.operands[0],
                        ScalarType::Pred,
                        lane,
                        value.into(),
                    )
                }
            }
        })
    }

    fn shuffle(&mut self, instruction: &Instruction, current: IntValue<'ctx>) -> Result<()> {
        let mode = instruction
            .one_of(&[Flag::Up, Flag::Down, Flag::Bfly, Flag::Idx])
            .ok_or_else(|| unsupported(instruction, "without a mode"))?;
        if instruction.guard.is_some() {
            return Err(unsupported(instruction, "with a guard"));
        }
        let ty = ScalarType::B32;
        // Every lane's source value first: the destination may be the source.
        let scratch = self.scratch;
        let lanes = self.warp.wave;
        self.lane_loop(current, |this, lane| {
            let value = this
                .read(instruction, &instruction.operands[1], ty, lane)?
                .into_int_value();
            let value = this.semantics().resize(value, 64, false)?;
            let at = this.element(scratch, this.i64().into(), lanes, lane)?;
            this.store(at, value)
        })?;
        let warp = self.warp;
        self.lane_loop(current, |this, lane| {
            let b_value = this
                .read(instruction, &instruction.operands[2], ScalarType::U32, lane)?
                .into_int_value();
            let c_value = this
                .read(instruction, &instruction.operands[3], ScalarType::U32, lane)?
                .into_int_value();
            let (source, valid) =
                warp.shuffle_source(&this.builder, mode, lane, b_value, c_value)?;
            let at = this.element(scratch, this.i64().into(), lanes, source)?;
            let value = this.load_int(this.i64(), at)?;
            let value = this.semantics().resize(value, 32, false)?;
            // Every source is in the scratch array: results can go
            // straight to the destinations.
            match &instruction.operands[0] {
                Operand::Pair(dest, predicate) => {
                    this.write(instruction, dest, ty, lane, value.into())?;
                    this.write(instruction, predicate, ScalarType::Pred, lane, valid.into())
                }
                dest => this.write(instruction, dest, ty, lane, value.into()),
            }
        })
    }
}

fn int_type_of(bits: u32) -> Option<ScalarType> {
    Some(match bits {
        8 => ScalarType::B8,
        16 => ScalarType::B16,
        32 => ScalarType::B32,
        64 => ScalarType::B64,
        _ => return None,
    })
}

/// Whether an instruction only computes on its lane's registers (so that
/// it can share a loop over the lanes with its neighbours).
fn is_lane_local(instruction: &Instruction) -> bool {
    !matches!(
        instruction.opcode,
        Opcode::Ld
            | Opcode::Ldu
            | Opcode::St
            | Opcode::Atom
            | Opcode::Red
            | Opcode::Bar
            | Opcode::Barrier
            | Opcode::Membar
            | Opcode::Fence
            | Opcode::Ret
            | Opcode::Exit
            | Opcode::Trap
            | Opcode::Activemask
            | Opcode::Vote
            | Opcode::Shfl
            | Opcode::Bra
            | Opcode::Call
    )
}
