//! The code generator of both PTX translations: one kernel's PTX blocks
//! to LLVM IR, for the host CPU ([`crate::cpu`]: a wave per call, lane
//! loops and a reconvergence stack) or for AMDGPU ([`crate::amdgpu`]: a
//! lane per hardware lane, the hardware's own control flow and wave
//! intrinsics). Everything a lane computes (registers, addresses, loads
//! and stores, conversions through [`crate::semantics`]) is written once;
//! the targets differ where registers live, how lanes are iterated, how
//! windows of memory are addressed, and how warp-wide operations and
//! barriers are made.

use crate::cpu::{AtomicKind, AtomicOp, field, runtime};
use crate::flat::{Body, Terminator, slot_of};
use crate::layout::{Layout, Window};
use crate::semantics::{Semantics, call_intrinsic, signature, unsupported, value_type};
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

fn i8_array(context: &Context, bytes: u64) -> ArrayType<'_> {
    context
        .i8_type()
        .array_type(u32::try_from(bytes).unwrap_or(u32::MAX))
}

/// Calls an LLVM intrinsic that returns nothing and takes no operands.
fn call_void_intrinsic<'ctx>(
    module: &Module<'ctx>,
    builder: &Builder<'ctx>,
    name: &str,
) -> Result<()> {
    let intrinsic = inkwell::intrinsics::Intrinsic::find(name)
        .ok_or_else(|| TranslateError::Llvm(format!("no intrinsic {name}")))?;
    let function = intrinsic
        .get_declaration(module, &[])
        .ok_or_else(|| TranslateError::Llvm(format!("cannot declare {name}")))?;
    builder.build_call(function, &[], "").map_err(llvm)?;
    Ok(())
}

const STACK_DEPTH: u64 = 64;

/// What the code is generated for.
#[derive(Clone, Copy, Debug)]
pub enum Target<'ctx> {
    /// The host CPU: a wave per call.
    Cpu,
    /// AMDGPU: a lane per hardware lane; the module's `.global` and
    /// `.const` images (address spaces 1 and 4).
    Amdgpu {
        /// The `.global` image.
        global: Option<PointerValue<'ctx>>,
        /// The `.const` image.
        constant: Option<PointerValue<'ctx>>,
    },
}

/// AMDGPU address spaces.
pub mod address_space {
    /// Global memory.
    pub const GLOBAL: u16 = 1;
    /// LDS (shared memory).
    pub const SHARED: u16 = 3;
    /// Constant memory.
    pub const CONSTANT: u16 = 4;
    /// Private (scratch) memory: allocas.
    pub const PRIVATE: u16 = 5;
}

/// Generates every kernel of `ptx` that `select` accepts into `module`
/// for `target`, with waves of `wave` lanes; returns their layouts.
pub(crate) fn generate_kernels<'ctx>(
    context: &'ctx Context,
    module: &Module<'ctx>,
    ptx: &pgpu_ptx::ir::Module,
    images: &crate::layout::Images,
    wave: u32,
    target: Target<'ctx>,
    select: impl Fn(&str) -> bool,
) -> Result<Vec<crate::cpu::KernelInfo>> {
    let mut kernels = Vec::new();
    for function in ptx.functions() {
        if function.kind != FunctionKind::Entry
            || function.body.is_none()
            || !select(&function.name)
        {
            continue;
        }
        let body = crate::flat::flatten(function, ptx)?;
        let layout = crate::layout::layout(ptx, function, &body, images)?;
        Codegen::new(
            context,
            module,
            function,
            &body,
            &layout,
            WarpModel::new(wave),
            target,
        )?
        .kernel()?;
        kernels.push(crate::cpu::KernelInfo {
            name: function.name.clone(),
            layout,
        });
    }
    module
        .verify()
        .map_err(|message| TranslateError::Llvm(message.to_string()))?;
    Ok(kernels)
}

/// The AMDGPU kernel calling convention.
const AMDGPU_KERNEL: u32 = 91;

struct SlotStorage<'ctx> {
    pointer: PointerValue<'ctx>,
    /// The per-lane array (CPU); None for a scalar (AMDGPU).
    array: Option<ArrayType<'ctx>>,
    bits: u32,
}

/// AMDGPU's memory windows and lane.
#[derive(Clone, Copy)]
struct AmdgpuState<'ctx> {
    global: Option<PointerValue<'ctx>>,
    constant: Option<PointerValue<'ctx>>,
    shared: Option<PointerValue<'ctx>>,
    local: Option<PointerValue<'ctx>>,
    lane: IntValue<'ctx>,
}

pub(crate) struct Codegen<'a, 'ctx> {
    amdgpu: Option<AmdgpuState<'ctx>>,
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
    pub(crate) fn new(
        context: &'ctx Context,
        module: &'a Module<'ctx>,
        ptx_function: &'a Function,
        body: &'a Body,
        layout: &'a Layout,
        warp: WarpModel,
        target: Target<'ctx>,
    ) -> Result<Self> {
        let ptr = context.ptr_type(AddressSpace::default());
        let is_amdgpu = matches!(target, Target::Amdgpu { .. });
        let fn_type = if is_amdgpu {
            let mut params = Vec::new();
            for param in &ptx_function.params {
                if param.ty.vector.is_some() || !param.dims.is_empty() {
                    return Err(TranslateError::Ptx(pgpu_ptx::PtxError::new(
                        pgpu_ptx::ErrorKind::UnsupportedDirective,
                        format!(
                            "kernel parameter `{}`: arrays and vectors are not translated for AMDGPU yet",
                            param.name
                        ),
                        param.span,
                    )));
                }
                params.push(value_type(context, param.ty.scalar).into());
            }
            context.void_type().fn_type(&params, false)
        } else {
            context
                .void_type()
                .fn_type(&[ptr.into(), ptr.into()], false)
        };
        let function =
            module.add_function(&ptx_function.name, fn_type, Some(LlvmLinkage::External));
        let builder = context.create_builder();
        let entry = context.append_basic_block(function, "entry");
        builder.position_at_end(entry);
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
            let scalar = crate::int_type(context, bits);
            if is_amdgpu {
                let pointer = builder.build_alloca(scalar, &slot.name).map_err(llvm)?;
                slots.push(SlotStorage {
                    pointer,
                    array: None,
                    bits,
                });
            } else {
                let ty = scalar.array_type(lanes);
                let pointer = builder.build_alloca(ty, &slot.name).map_err(llvm)?;
                slots.push(SlotStorage {
                    pointer,
                    array: Some(ty),
                    bits,
                });
            }
        }
        let i64t = context.i64_type();
        let i32t = context.i32_type();
        let (params, context_ptr, amdgpu) = match target {
            Target::Cpu => {
                let params = function
                    .get_nth_param(0)
                    .ok_or_else(|| TranslateError::Llvm("no parameter".into()))?
                    .into_pointer_value();
                let context_ptr = function
                    .get_nth_param(1)
                    .ok_or_else(|| TranslateError::Llvm("no parameter".into()))?
                    .into_pointer_value();
                (params, context_ptr, None)
            }
            Target::Amdgpu { global, constant } => {
                function.set_call_conventions(AMDGPU_KERNEL);
                let threads = ptx_function
                    .directives
                    .iter()
                    .find(|d| d.name == "reqntid" || d.name == "maxntid")
                    .map(|d| d.values.iter().product::<u64>())
                    .filter(|&n| n > 0)
                    .unwrap_or(1024);
                let attribute = context.create_string_attribute(
                    "amdgpu-flat-work-group-size",
                    &format!("1,{threads}"),
                );
                function.add_attribute(inkwell::attributes::AttributeLoc::Function, attribute);
                // The parameter window: the arguments stored at their
                // offsets, so that `ld.param` works at any offset.
                let window = i8_array(context, layout.param_bytes.max(1));
                let params = builder.build_alloca(window, "params").map_err(llvm)?;
                for (index, (_, offset, _)) in layout.params.iter().enumerate() {
                    let value = function
                        .get_nth_param(index as u32)
                        .ok_or_else(|| TranslateError::Llvm("no parameter".into()))?;
                    let at = unsafe {
                        builder.build_in_bounds_gep(
                            context.i8_type(),
                            params,
                            &[i64t.const_int(*offset, false)],
                            "",
                        )
                    }
                    .map_err(llvm)?;
                    builder.build_store(at, value).map_err(llvm)?;
                }
                let local = if layout.local_bytes > 0 {
                    Some(
                        builder
                            .build_alloca(i8_array(context, layout.local_bytes), "local")
                            .map_err(llvm)?,
                    )
                } else {
                    None
                };
                let shared = if layout.shared_bytes > 0 || layout.dynamic_shared {
                    // With dynamic shared memory, one external LDS array
                    // holds the static part too (the launch asks for both).
                    let (ty, name) = if layout.dynamic_shared {
                        (
                            i8_array(context, 0),
                            format!("{}.dynamic_shared", ptx_function.name),
                        )
                    } else {
                        (
                            i8_array(context, layout.shared_bytes),
                            format!("{}.shared", ptx_function.name),
                        )
                    };
                    let variable = module.add_global(
                        ty,
                        Some(AddressSpace::from(address_space::SHARED)),
                        &name,
                    );
                    variable.set_alignment(16);
                    if layout.dynamic_shared {
                        variable.set_linkage(LlvmLinkage::External);
                    } else {
                        variable.set_linkage(LlvmLinkage::Internal);
                        variable.set_initializer(&ty.get_poison());
                    }
                    Some(variable.as_pointer_value())
                } else {
                    None
                };
                let minus_one = i32t.const_all_ones();
                let low = call_intrinsic(
                    module,
                    &builder,
                    "llvm.amdgcn.mbcnt.lo",
                    &[],
                    &[minus_one.into(), i32t.const_zero().into()],
                )?;
                let lane = if lanes == 64 {
                    call_intrinsic(
                        module,
                        &builder,
                        "llvm.amdgcn.mbcnt.hi",
                        &[],
                        &[minus_one.into(), low],
                    )?
                } else {
                    low
                };
                let state = AmdgpuState {
                    global,
                    constant,
                    shared,
                    local,
                    lane: lane.into_int_value(),
                };
                (params, params, Some(state))
            }
        };
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
            amdgpu,
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

    fn br(&self, block: BasicBlock<'ctx>) -> Result<()> {
        self.builder
            .build_unconditional_branch(block)
            .map_err(llvm)?;
        Ok(())
    }

    fn cond_br(
        &self,
        condition: IntValue<'ctx>,
        then: BasicBlock<'ctx>,
        otherwise: BasicBlock<'ctx>,
    ) -> Result<()> {
        self.builder
            .build_conditional_branch(condition, then, otherwise)
            .map_err(llvm)?;
        Ok(())
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
    pub(crate) fn kernel(&mut self) -> Result<()> {
        if self.amdgpu.is_some() {
            // The hardware runs the lanes and reconverges them: one LLVM
            // block per PTX block.
            self.blocks = (0..self.body.blocks.len())
                .map(|i| self.block(&format!("bb{i}")))
                .collect();
            let first = *self
                .blocks
                .first()
                .ok_or_else(|| TranslateError::Llvm("no blocks".into()))?;
            self.br(first)?;
            for index in 0..self.body.blocks.len() {
                self.builder.position_at_end(self.blocks[index]);
                self.basic_block(index)?;
            }
            return Ok(());
        }
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
        self.br(dispatch)?;
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
        self.cond_br(empty, done, check)?;
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
        self.cond_br(finished, pop, run)?;
        self.builder.position_at_end(pop);
        self.store(self.depth, top)?;
        self.br(dispatch)?;
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
        self.cond_br(full, overflow, ok)?;
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
        if let Some(state) = self.amdgpu {
            return self.amdgpu_terminator(index, state.lane);
        }
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
                self.cond_br(none_taken, uniform_not, maybe)?;
                self.builder.position_at_end(uniform_not);
                self.set_top_pc(self.c32(fallthrough as u64))?;
                self.br(dispatch)?;
                self.builder.position_at_end(maybe);
                self.cond_br(all_taken, uniform, divergent)?;
                self.builder.position_at_end(uniform);
                self.set_top_pc(self.c32(taken as u64))?;
                self.br(dispatch)?;
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
                self.cond_br(same, replace, keep)?;
                self.builder.position_at_end(replace);
                self.store(self.depth, top)?;
                self.br(pushes)?;
                self.builder.position_at_end(keep);
                self.store(
                    self.stack_slot(self.pcs, self.i32(), top)?,
                    self.c32(reconverge),
                )?;
                self.br(pushes)?;
                self.builder.position_at_end(pushes);
                self.push(fallthrough as u64, reconverge, other_mask)?;
                self.push(taken as u64, reconverge, taken_mask)?;
            }
        }
        self.br(dispatch)?;
        Ok(())
    }

    /// A block's end on AMDGPU: a plain branch or return.
    fn amdgpu_terminator(&mut self, index: usize, lane: IntValue<'ctx>) -> Result<()> {
        let target = |this: &Self, block: usize| this.blocks.get(block).copied();
        match self.body.blocks[index].terminator {
            Terminator::Goto(next) => match target(self, next) {
                Some(block) => self.builder.build_unconditional_branch(block).map(|_| ()),
                None => self.builder.build_return(None).map(|_| ()),
            },
            Terminator::Exit => self.builder.build_return(None).map(|_| ()),
            Terminator::Branch {
                predicate,
                negated,
                taken,
                fallthrough,
            } => {
                let mut holds = self.read_slot(predicate, lane)?;
                if negated {
                    holds = self.builder.build_not(holds, "").map_err(llvm)?;
                }
                let exit = self.block("exit");
                let taken = target(self, taken).unwrap_or(exit);
                let fallthrough = target(self, fallthrough).unwrap_or(exit);
                self.cond_br(holds, taken, fallthrough)?;
                self.builder.position_at_end(exit);
                self.builder.build_return(None).map(|_| ())
            }
        }
        .map_err(llvm)
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
        if let Some(state) = self.amdgpu {
            return body(self, state.lane);
        }
        let before = self
            .builder
            .get_insert_block()
            .ok_or_else(|| TranslateError::Llvm("no block".into()))?;
        let header = self.block("lanes");
        let test = self.block("lane_test");
        let active = self.block("lane");
        let latch = self.block("lane_next");
        let exit = self.block("lanes_done");
        self.br(header)?;
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
        self.cond_br(more, test, exit)?;
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
        self.cond_br(bit, active, latch)?;
        self.builder.position_at_end(active);
        body(self, lane_value)?;
        self.br(latch)?;
        self.builder.position_at_end(latch);
        let next = self
            .builder
            .build_int_add(lane_value, self.c32(1), "")
            .map_err(llvm)?;
        lane.add_incoming(&[(&next, latch)]);
        self.br(header)?;
        self.builder.position_at_end(exit);
        Ok(())
    }

    /// The mask of lanes in `mask` for which `predicate` (an i1) holds.
    fn ballot(
        &mut self,
        mask: IntValue<'ctx>,
        mut predicate: impl FnMut(&mut Self, IntValue<'ctx>) -> Result<IntValue<'ctx>>,
    ) -> Result<IntValue<'ctx>> {
        if let Some(state) = self.amdgpu {
            let value = predicate(self, state.lane)?;
            let width = crate::int_type(self.context, self.warp.wave);
            let name = if self.warp.wave == 64 {
                "llvm.amdgcn.ballot.i64"
            } else {
                "llvm.amdgcn.ballot.i32"
            };
            let bits = call_intrinsic(
                self.module,
                &self.builder,
                name,
                &[width.into()],
                &[value.into()],
            )?;
            return self.semantics().resize(bits.into_int_value(), 64, false);
        }
        let bits = self.entry_alloca(self.i64().into(), "ballot")?;
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

    /// An alloca at the top of the function (so that it is made once, not
    /// at every pass through a loop).
    fn entry_alloca(&self, ty: BasicTypeEnum<'ctx>, name: &str) -> Result<PointerValue<'ctx>> {
        let entry = self
            .function
            .get_first_basic_block()
            .ok_or_else(|| TranslateError::Llvm("no entry block".into()))?;
        let builder = self.context.create_builder();
        match entry.get_first_instruction() {
            Some(first) => builder.position_before(&first),
            None => builder.position_at_end(entry),
        }
        builder.build_alloca(ty, name).map_err(llvm)
    }

    fn slot_pointer(&self, slot: usize, lane: IntValue<'ctx>) -> Result<PointerValue<'ctx>> {
        let storage = &self.slots[slot];
        let Some(array) = storage.array else {
            return Ok(storage.pointer);
        };
        unsafe {
            self.builder
                .build_in_bounds_gep(array, storage.pointer, &[self.c32(0), lane], "")
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
            ScalarType::F16 | ScalarType::Bf16 | ScalarType::F32 | ScalarType::F64 => self
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
                if let Some(address) = self.variable_address(name, lane)? {
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
            Operand::Not(inner) if ty == ScalarType::Pred => {
                let value = self.read(instruction, inner, ty, lane)?.into_int_value();
                Ok(self.builder.build_not(value, "").map_err(llvm)?.into())
            }
            Operand::Not(_) => {
                Err(self.unsupported_operand(instruction, "`!` on a value that is not a predicate"))
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
            // Half-precision constants are written as their bits.
            ScalarType::F16 | ScalarType::Bf16 => {
                let bits = value.bits() as u16;
                let exact = if ty == ScalarType::Bf16 {
                    crate::half::bfloat_to_f64(bits)
                } else {
                    crate::half::half_to_f64(bits)
                };
                self.semantics()
                    .value_type(ty)
                    .into_float_type()
                    .const_float(exact)
                    .into()
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
    /// it: the generic address of a `.global` one, its offset in its
    /// window otherwise.
    fn variable_address(&self, name: &str, lane: IntValue<'ctx>) -> Result<Option<IntValue<'ctx>>> {
        let Some(&(window, offset)) = self.layout.variables.get(name) else {
            return Ok(None);
        };
        Ok(Some(match window {
            Window::Global => {
                let base = self.window_generic_base(window, lane)?;
                self.builder
                    .build_int_add(base, self.c64(offset), "")
                    .map_err(llvm)?
            }
            _ => self.c64(offset),
        }))
    }

    /// AMDGPU: the pointer (in its address space) to a window's first byte.
    fn amdgpu_window(
        &self,
        state: &AmdgpuState<'ctx>,
        window: Window,
    ) -> Result<PointerValue<'ctx>> {
        let pointer = match window {
            Window::Param => Some(self.params),
            Window::Global => state.global,
            Window::Const => state.constant,
            Window::Shared => state.shared,
            Window::Local => state.local,
        };
        pointer.ok_or_else(|| TranslateError::Llvm(format!("the kernel has no {window:?} memory")))
    }

    /// The generic address of a window's first byte (for `cvta`).
    fn window_generic_base(&self, window: Window, lane: IntValue<'ctx>) -> Result<IntValue<'ctx>> {
        if let Some(state) = self.amdgpu {
            let pointer = self.amdgpu_window(&state, window)?;
            let flat = self
                .builder
                .build_address_space_cast(
                    pointer,
                    self.context.ptr_type(AddressSpace::default()),
                    "",
                )
                .map_err(llvm)?;
            return self
                .builder
                .build_ptr_to_int(flat, self.i64(), "")
                .map_err(llvm);
        }
        Ok(match window {
            Window::Param => self
                .builder
                .build_ptr_to_int(self.params, self.i64(), "")
                .map_err(llvm)?,
            Window::Global => self.field(field::GLOBAL)?,
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

    /// A pointer `offset` bytes into a window: in the window's address
    /// space on AMDGPU, a host pointer on the CPU.
    fn window_pointer(
        &self,
        window: Window,
        offset: IntValue<'ctx>,
        lane: IntValue<'ctx>,
    ) -> Result<PointerValue<'ctx>> {
        if let Some(state) = self.amdgpu {
            let base = self.amdgpu_window(&state, window)?;
            return unsafe {
                self.builder
                    .build_gep(self.context.i8_type(), base, &[offset], "")
            }
            .map_err(llvm);
        }
        let base = self.window_generic_base(window, lane)?;
        let host = self.builder.build_int_add(base, offset, "").map_err(llvm)?;
        self.builder
            .build_int_to_ptr(host, self.context.ptr_type(AddressSpace::default()), "")
            .map_err(llvm)
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

    /// The pointer an address operand names for `lane`.
    fn pointer(
        &mut self,
        instruction: &Instruction,
        address: &Address,
        lane: IntValue<'ctx>,
    ) -> Result<PointerValue<'ctx>> {
        if let Some(name) = &address.base
            && slot_of(name).is_none()
        {
            let &(window, offset) = self.layout.variables.get(name.as_str()).ok_or_else(|| {
                self.unsupported_operand(instruction, &format!("address `{name}`"))
            })?;
            let total = self.c64(offset.wrapping_add(address.offset as u64));
            return self.window_pointer(window, total, lane);
        }
        let value = match &address.base {
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
        if let Some(window) = Self::space_window(instruction.space()) {
            return self.window_pointer(window, value, lane);
        }
        // Global or generic: the address itself.
        let space = match (self.amdgpu.is_some(), instruction.space()) {
            (true, Some(StateSpace::Global)) => AddressSpace::from(address_space::GLOBAL),
            _ => AddressSpace::default(),
        };
        self.builder
            .build_int_to_ptr(value, self.context.ptr_type(space), "")
            .map_err(llvm)
    }

    /// AMDGPU's special registers that differ from the CPU's: thread and
    /// block numbers from the hardware and the dispatch packet
    /// (`hsa_kernel_dispatch_packet_t`: the workgroup size as three u16
    /// at byte 4, the grid size in threads as three u32 at byte 12).
    fn amdgpu_special(&mut self, name: &str, index: u32) -> Result<Option<IntValue<'ctx>>> {
        let axis = ["x", "y", "z"][index.min(2) as usize];
        let intrinsic = |this: &Self, name: &str| -> Result<IntValue<'ctx>> {
            Ok(call_intrinsic(this.module, &this.builder, name, &[], &[])?.into_int_value())
        };
        let packet = |this: &Self, offset: u64, bits: u32| -> Result<IntValue<'ctx>> {
            let base = call_intrinsic(
                this.module,
                &this.builder,
                "llvm.amdgcn.dispatch.ptr",
                &[],
                &[],
            )?
            .into_pointer_value();
            let at = unsafe {
                this.builder.build_in_bounds_gep(
                    this.context.i8_type(),
                    base,
                    &[this.c64(offset)],
                    "",
                )
            }
            .map_err(llvm)?;
            let value = this.load_int(crate::int_type(this.context, bits), at)?;
            this.semantics().resize(value, 32, false)
        };
        let block_size = |this: &Self, axis: u32| packet(this, 4 + 2 * u64::from(axis), 16);
        let value = match name {
            "%tid" => intrinsic(self, &format!("llvm.amdgcn.workitem.id.{axis}"))?,
            "%ctaid" => intrinsic(self, &format!("llvm.amdgcn.workgroup.id.{axis}"))?,
            "%ntid" => block_size(self, index)?,
            "%nctaid" => {
                let threads = packet(self, 12 + 4 * u64::from(index), 32)?;
                let size = block_size(self, index)?;
                self.builder
                    .build_int_unsigned_div(threads, size, "")
                    .map_err(llvm)?
            }
            "%warpid" => {
                let linear = self.amdgpu_linear_thread()?;
                self.builder
                    .build_right_shift(linear, self.c32(5), false, "")
                    .map_err(llvm)?
            }
            "%nwarpid" => {
                let b = &self.builder;
                let xy = b
                    .build_int_mul(block_size(self, 0)?, block_size(self, 1)?, "")
                    .map_err(llvm)?;
                let all = b
                    .build_int_mul(xy, block_size(self, 2)?, "")
                    .map_err(llvm)?;
                let plus = b.build_int_add(all, self.c32(31), "").map_err(llvm)?;
                b.build_right_shift(plus, self.c32(5), false, "")
                    .map_err(llvm)?
            }
            "%clock" | "%clock64" | "%globaltimer" | "%clock_hi" | "%globaltimer_lo"
            | "%globaltimer_hi" => {
                let now = intrinsic(self, "llvm.readcyclecounter")?;
                match name {
                    "%clock64" | "%globaltimer" => now,
                    "%clock_hi" | "%globaltimer_hi" => {
                        let high = self
                            .builder
                            .build_right_shift(now, self.c64(32), false, "")
                            .map_err(llvm)?;
                        self.semantics().resize(high, 32, false)?
                    }
                    _ => self.semantics().resize(now, 32, false)?,
                }
            }
            "%dynamic_smem_size" | "%total_smem_size" => {
                return Err(TranslateError::Llvm(format!(
                    "{name} is not translated for AMDGPU"
                )));
            }
            _ => return Ok(None),
        };
        Ok(Some(value))
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
        if self.amdgpu.is_some()
            && let Some(value) = self.amdgpu_special(name, index)?
        {
            return Ok(Some(value));
        }
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
        self.cond_br(holds, run, skip)?;
        self.builder.position_at_end(run);
        body(self)?;
        self.br(skip)?;
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
            .filter(|ty| {
                matches!(
                    ty.class(),
                    TypeClass::Unsigned | TypeClass::Bits | TypeClass::Signed
                )
            })
            .ok_or_else(|| unsupported(instruction, "without an integer type"))?;
        let value = self
            .read(instruction, &instruction.operands[1], ty, lane)?
            .into_int_value();
        let value = self.semantics().resize(value, 64, false)?;
        let result = match Self::space_window(instruction.space()) {
            None => value,
            Some(window) => {
                let base = self.window_generic_base(window, lane)?;
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

    /// A load's or store's type, pointer and the registers it moves (one,
    /// or the items of a `.vN` vector): the address is operand
    /// `address_index`, the registers the other of the first two.
    fn memory_access(
        &mut self,
        instruction: &Instruction,
        address_index: usize,
        lane: IntValue<'ctx>,
    ) -> Result<(ScalarType, PointerValue<'ctx>, Vec<Operand>)> {
        let ty = instruction
            .ty()
            .ok_or_else(|| unsupported(instruction, "without a type"))?;
        let Operand::Address(address) = &instruction.operands[address_index] else {
            return Err(unsupported(instruction, "without an address"));
        };
        let pointer = self.pointer(instruction, address, lane)?;
        let registers = match &instruction.operands[1 - address_index] {
            Operand::Vector(items) => items.clone(),
            other => vec![other.clone()],
        };
        Ok((ty, pointer, registers))
    }

    /// Runs `access` only when `bytes` bytes at `pointer` lie in memory the
    /// launch owns (CPU: the runner's check, which records the first
    /// out-of-bounds access with its lane and instruction; AMDGPU: always).
    fn when_in_bounds(
        &mut self,
        instruction: &Instruction,
        pointer: PointerValue<'ctx>,
        bytes: u64,
        lane: IntValue<'ctx>,
        access: impl FnOnce(&mut Self) -> Result<()>,
    ) -> Result<()> {
        if self.amdgpu.is_some() {
            return access(self);
        }
        let address = self
            .builder
            .build_ptr_to_int(pointer, self.i64(), "")
            .map_err(llvm)?;
        let ok = self
            .call_runtime(
                runtime::CHECK,
                &[
                    self.context_ptr.into(),
                    address.into(),
                    self.c64(bytes).into(),
                    self.c64(instruction.span.start as u64).into(),
                    lane.into(),
                ],
                true,
            )?
            .ok_or_else(|| TranslateError::Llvm("the check returns nothing".into()))?
            .into_int_value();
        let inside = self
            .builder
            .build_int_compare(IntPredicate::NE, ok, self.c64(0), "")
            .map_err(llvm)?;
        let run = self.block("in_bounds");
        let after = self.block("after_access");
        self.cond_br(inside, run, after)?;
        self.builder.position_at_end(run);
        access(self)?;
        self.br(after)?;
        self.builder.position_at_end(after);
        Ok(())
    }

    /// Element `k` of a vector access of `ty` at `pointer`.
    fn vector_element(
        &self,
        pointer: PointerValue<'ctx>,
        ty: ScalarType,
        k: usize,
    ) -> Result<PointerValue<'ctx>> {
        let offset = self.c64(u64::from(ty.bytes()) * k as u64);
        unsafe {
            self.builder
                .build_in_bounds_gep(self.context.i8_type(), pointer, &[offset], "")
        }
        .map_err(llvm)
    }

    fn load(&mut self, instruction: &Instruction, lane: IntValue<'ctx>) -> Result<()> {
        let (ty, pointer, dests) = self.memory_access(instruction, 1, lane)?;
        self.when_in_bounds(
            instruction,
            pointer,
            u64::from(ty.bytes()) * dests.len() as u64,
            lane,
            |this| this.load_at(instruction, ty, pointer, &dests, lane),
        )
    }

    fn load_at(
        &mut self,
        instruction: &Instruction,
        ty: ScalarType,
        pointer: PointerValue<'ctx>,
        dests: &[Operand],
        lane: IntValue<'ctx>,
    ) -> Result<()> {
        let element = self.semantics().value_type(ty);
        for (k, dest) in dests.iter().enumerate() {
            let at = self.vector_element(pointer, ty, k)?;
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
        let (ty, pointer, sources) = self.memory_access(instruction, 0, lane)?;
        self.when_in_bounds(
            instruction,
            pointer,
            u64::from(ty.bytes()) * sources.len() as u64,
            lane,
            |this| this.store_at(instruction, ty, pointer, &sources, lane),
        )
    }

    fn store_at(
        &mut self,
        instruction: &Instruction,
        ty: ScalarType,
        pointer: PointerValue<'ctx>,
        sources: &[Operand],
        lane: IntValue<'ctx>,
    ) -> Result<()> {
        for (k, source) in sources.iter().enumerate() {
            let value = self.read(instruction, source, ty, lane)?;
            let at = self.vector_element(pointer, ty, k)?;
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
        self.when_in_bounds(instruction, pointer, u64::from(ty.bytes()), lane, |this| {
            this.atomic_at(
                instruction,
                op,
                kind,
                ty,
                reduction,
                first_value,
                pointer,
                lane,
            )
        })
    }

    #[allow(clippy::too_many_arguments)]
    fn atomic_at(
        &mut self,
        instruction: &Instruction,
        op: AtomicOp,
        kind: AtomicKind,
        ty: ScalarType,
        reduction: bool,
        first_value: usize,
        pointer: PointerValue<'ctx>,
        lane: IntValue<'ctx>,
    ) -> Result<()> {
        let mut values = Vec::new();
        for operand in &instruction.operands[first_value..] {
            let value = self.read(instruction, operand, ty, lane)?;
            values.push(self.raw(value, ty, 64)?);
        }
        let b = values.first().copied().unwrap_or(self.c64(0));
        let c = values.get(1).copied().unwrap_or(self.c64(0));
        if self.amdgpu.is_some() {
            let space = instruction.space();
            let old = self.amdgpu_atomic(op, ty, pointer, b, c, space)?;
            if !reduction {
                let value = self.typed(old, ty, false)?;
                self.write(instruction, &instruction.operands[0], ty, lane, value)?;
            }
            return Ok(());
        }
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

    /// An AMDGPU atomic: `atomicrmw` or `cmpxchg`, relaxed, at workgroup
    /// scope in shared memory and at agent (device) scope elsewhere.
    /// `b` and `c` are raw 64-bit; returns the old value's bits.
    fn amdgpu_atomic(
        &mut self,
        op: AtomicOp,
        ty: ScalarType,
        pointer: PointerValue<'ctx>,
        b: IntValue<'ctx>,
        c: IntValue<'ctx>,
        space: Option<StateSpace>,
    ) -> Result<IntValue<'ctx>> {
        use inkwell::llvm_sys::LLVMAtomicOrdering::LLVMAtomicOrderingMonotonic as Relaxed;
        use inkwell::llvm_sys::LLVMAtomicRMWBinOp as Rmw;
        use inkwell::llvm_sys::core::{
            LLVMBuildAtomicCmpXchgSyncScope, LLVMBuildAtomicRMWSyncScope, LLVMBuildExtractValue,
            LLVMGetSyncScopeID,
        };
        use inkwell::values::AsValueRef;
        let scope = if matches!(space, Some(StateSpace::Shared | StateSpace::SharedCta)) {
            "workgroup"
        } else {
            "agent"
        };
        // SAFETY: the context is alive and the name is valid for its length.
        let scope_id =
            unsafe { LLVMGetSyncScopeID(self.context.raw(), scope.as_ptr().cast(), scope.len()) };
        let float = ty.class() == TypeClass::Float;
        let signed = ty.class() == TypeClass::Signed;
        let b_value = self.typed(self.semantics().resize(b, ty.bits(), false)?, ty, false)?;
        let c_value = self.typed(self.semantics().resize(c, ty.bits(), false)?, ty, false)?;
        let rmw = match op {
            AtomicOp::Add if float => Rmw::LLVMAtomicRMWBinOpFAdd,
            AtomicOp::Add => Rmw::LLVMAtomicRMWBinOpAdd,
            AtomicOp::Min if float => Rmw::LLVMAtomicRMWBinOpFMin,
            AtomicOp::Max if float => Rmw::LLVMAtomicRMWBinOpFMax,
            AtomicOp::Min if signed => Rmw::LLVMAtomicRMWBinOpMin,
            AtomicOp::Max if signed => Rmw::LLVMAtomicRMWBinOpMax,
            AtomicOp::Min => Rmw::LLVMAtomicRMWBinOpUMin,
            AtomicOp::Max => Rmw::LLVMAtomicRMWBinOpUMax,
            AtomicOp::Inc => Rmw::LLVMAtomicRMWBinOpUIncWrap,
            AtomicOp::Dec => Rmw::LLVMAtomicRMWBinOpUDecWrap,
            AtomicOp::And => Rmw::LLVMAtomicRMWBinOpAnd,
            AtomicOp::Or => Rmw::LLVMAtomicRMWBinOpOr,
            AtomicOp::Xor => Rmw::LLVMAtomicRMWBinOpXor,
            AtomicOp::Exch => Rmw::LLVMAtomicRMWBinOpXchg,
            AtomicOp::Cas => {
                let (expected, new) = (
                    self.raw(b_value, ty, ty.bits())?,
                    self.raw(c_value, ty, ty.bits())?,
                );
                // SAFETY: valid values of this builder's function.
                let old = unsafe {
                    let pair = LLVMBuildAtomicCmpXchgSyncScope(
                        self.builder.as_mut_ptr(),
                        pointer.as_value_ref(),
                        expected.as_value_ref(),
                        new.as_value_ref(),
                        Relaxed,
                        Relaxed,
                        scope_id,
                    );
                    IntValue::new(LLVMBuildExtractValue(
                        self.builder.as_mut_ptr(),
                        pair,
                        0,
                        c"old".as_ptr(),
                    ))
                };
                return self.semantics().resize(old, ty.bits(), false);
            }
        };
        // SAFETY: valid values of this builder's function.
        let old = unsafe {
            BasicValueEnum::new(LLVMBuildAtomicRMWSyncScope(
                self.builder.as_mut_ptr(),
                rmw,
                pointer.as_value_ref(),
                b_value.as_value_ref(),
                Relaxed,
                scope_id,
            ))
        };
        self.raw(old, ty, ty.bits())
    }

    /// Instructions that involve the whole wave or the block.
    fn wave_instruction(&mut self, instruction: &Instruction) -> Result<()> {
        if self.amdgpu.is_some()
            && let Some(done) = self.amdgpu_wave_instruction(instruction)?
        {
            return Ok(done);
        }
        let current = match self.amdgpu {
            // The lanes running: the hardware's exec mask, which only the
            // warp-wide instructions read (loop masks are the hardware's).
            Some(_) if matches!(instruction.opcode, Opcode::Activemask | Opcode::Vote) => {
                let all = self.context.bool_type().const_all_ones();
                self.ballot(self.c64(0), |_, _| Ok(all))?
            }
            Some(_) => self.c64(0),
            None => self.load_int(self.i64(), self.current)?,
        };
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
                if instruction.has(Flag::Arrive) {
                    return Err(unsupported(instruction, "(arrive barriers)"));
                }
                if instruction.guard.is_some() {
                    return Err(unsupported(instruction, "with a guard"));
                }
                if instruction.has(Flag::Red) {
                    return self.reduction_barrier(instruction, current);
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
                        let bit = this.entry_alloca(this.context.bool_type().into(), "leaving")?;
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
                    self.cond_br(any, trap, after)?;
                    self.builder.position_at_end(trap);
                    self.call_runtime(runtime::TRAP, &[self.context_ptr.into()], false)?;
                    self.br(after)?;
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

    fn fence(&self, ordering: inkwell::llvm_sys::LLVMAtomicOrdering, scope: &str) {
        use inkwell::llvm_sys::core::{LLVMBuildFenceSyncScope, LLVMGetSyncScopeID};
        // SAFETY: the context and builder are alive; the name is valid.
        unsafe {
            let id = LLVMGetSyncScopeID(self.context.raw(), scope.as_ptr().cast(), scope.len());
            LLVMBuildFenceSyncScope(self.builder.as_mut_ptr(), ordering, id, c"".as_ptr());
        }
    }

    /// `s_barrier` between workgroup release and acquire fences.
    fn workgroup_barrier(&self) -> Result<()> {
        use inkwell::llvm_sys::LLVMAtomicOrdering::*;
        self.fence(LLVMAtomicOrderingRelease, "workgroup");
        call_void_intrinsic(self.module, &self.builder, "llvm.amdgcn.s.barrier")?;
        self.fence(LLVMAtomicOrderingAcquire, "workgroup");
        Ok(())
    }

    /// `bar.red.{popc,and,or}`'s reduction, its code for the runtime and
    /// its identity.
    fn reduction_kind(instruction: &Instruction) -> Result<(u64, u64)> {
        match instruction.one_of(&[Flag::Popc, Flag::And, Flag::Or]) {
            Some(Flag::Popc) => Ok((crate::run::reduction::POPC, 0)),
            Some(Flag::And) => Ok((crate::run::reduction::AND, 1)),
            Some(Flag::Or) => Ok((crate::run::reduction::OR, 0)),
            _ => Err(unsupported(instruction, "without .popc, .and or .or")),
        }
    }

    /// Writes a `bar.red` result (`.popc`: a count; `.and`/`.or`: 0 or 1)
    /// to the destination of `lane`.
    fn write_reduction(
        &mut self,
        instruction: &Instruction,
        op: u64,
        result: IntValue<'ctx>,
        lane: IntValue<'ctx>,
    ) -> Result<()> {
        let value: BasicValueEnum = if op == crate::run::reduction::POPC {
            self.semantics().resize(result, 32, false)?.into()
        } else {
            self.builder
                .build_int_compare(IntPredicate::NE, result, result.get_type().const_zero(), "")
                .map_err(llvm)?
                .into()
        };
        let ty = if op == crate::run::reduction::POPC {
            ScalarType::U32
        } else {
            ScalarType::Pred
        };
        self.write(instruction, &instruction.operands[0], ty, lane, value)
    }

    /// CPU `bar.red`: the wave's value (its lanes' count, all or any of the
    /// predicate) meets the other waves' at the block's barrier, which
    /// returns the block's reduction to every lane.
    fn reduction_barrier(
        &mut self,
        instruction: &Instruction,
        current: IntValue<'ctx>,
    ) -> Result<()> {
        let (op, _) = Self::reduction_kind(instruction)?;
        let predicate = instruction
            .operands
            .last()
            .cloned()
            .ok_or_else(|| unsupported(instruction, "without a predicate"))?;
        let holds = self.ballot(current, |this, lane| {
            Ok(this
                .read(instruction, &predicate, ScalarType::Pred, lane)?
                .into_int_value())
        })?;
        let b = &self.builder;
        let value = match op {
            crate::run::reduction::POPC => call_intrinsic(
                self.module,
                b,
                "llvm.ctpop",
                &[self.i64().into()],
                &[holds.into()],
            )?
            .into_int_value(),
            crate::run::reduction::AND => {
                let all = b
                    .build_int_compare(IntPredicate::EQ, holds, current, "")
                    .map_err(llvm)?;
                b.build_int_z_extend(all, self.i64(), "").map_err(llvm)?
            }
            _ => {
                let any = b
                    .build_int_compare(IntPredicate::NE, holds, self.c64(0), "")
                    .map_err(llvm)?;
                b.build_int_z_extend(any, self.i64(), "").map_err(llvm)?
            }
        };
        let result = self
            .call_runtime(
                runtime::BARRIER_REDUCE,
                &[self.context_ptr.into(), self.c64(op).into(), value.into()],
                true,
            )?
            .ok_or_else(|| TranslateError::Llvm("the reduction returns nothing".into()))?
            .into_int_value();
        self.lane_loop(current, |this, lane| {
            this.write_reduction(instruction, op, result, lane)
        })
    }

    /// AMDGPU `bar.red`: a counter in LDS that thread 0 resets, every lane
    /// updates with a workgroup-scope atomic, and every lane reads between
    /// barriers (a third barrier keeps the next reset after the reads).
    fn amdgpu_reduction_barrier(
        &mut self,
        instruction: &Instruction,
        lane: IntValue<'ctx>,
    ) -> Result<()> {
        use inkwell::llvm_sys::LLVMAtomicOrdering::LLVMAtomicOrderingMonotonic as Relaxed;
        use inkwell::llvm_sys::LLVMAtomicRMWBinOp as Rmw;
        use inkwell::llvm_sys::core::{LLVMBuildAtomicRMWSyncScope, LLVMGetSyncScopeID};
        use inkwell::values::AsValueRef;
        let (op, identity) = Self::reduction_kind(instruction)?;
        let i32t = self.i32();
        let name = format!("{}.bar_red", self.function.get_name().to_string_lossy());
        let counter = match self.module.get_global(&name) {
            Some(counter) => counter,
            None => {
                let counter = self.module.add_global(
                    i32t,
                    Some(AddressSpace::from(address_space::SHARED)),
                    &name,
                );
                counter.set_linkage(LlvmLinkage::Internal);
                counter.set_initializer(&i32t.get_poison());
                counter
            }
        }
        .as_pointer_value();
        let first = self.amdgpu_linear_thread()?;
        let is_first = self
            .builder
            .build_int_compare(IntPredicate::EQ, first, self.c32(0), "")
            .map_err(llvm)?;
        let reset = self.block("reduction_reset");
        let after_reset = self.block("after_reduction_reset");
        self.cond_br(is_first, reset, after_reset)?;
        self.builder.position_at_end(reset);
        self.store(counter, self.c32(identity))?;
        self.br(after_reset)?;
        self.builder.position_at_end(after_reset);
        self.workgroup_barrier()?;
        let predicate = instruction
            .operands
            .last()
            .cloned()
            .ok_or_else(|| unsupported(instruction, "without a predicate"))?;
        let mut holds = self
            .read(instruction, &predicate, ScalarType::Pred, lane)?
            .into_int_value();
        let (rmw, operand) = match op {
            crate::run::reduction::POPC => (Rmw::LLVMAtomicRMWBinOpAdd, 1),
            crate::run::reduction::AND => {
                holds = self.builder.build_not(holds, "").map_err(llvm)?;
                (Rmw::LLVMAtomicRMWBinOpAnd, 0)
            }
            _ => (Rmw::LLVMAtomicRMWBinOpOr, 1),
        };
        let update = self.block("reduction_update");
        let after_update = self.block("after_reduction_update");
        self.cond_br(holds, update, after_update)?;
        self.builder.position_at_end(update);
        // SAFETY: valid values of this builder's function.
        unsafe {
            let scope =
                LLVMGetSyncScopeID(self.context.raw(), c"workgroup".as_ptr(), "workgroup".len());
            LLVMBuildAtomicRMWSyncScope(
                self.builder.as_mut_ptr(),
                rmw,
                counter.as_value_ref(),
                self.c32(operand).as_value_ref(),
                Relaxed,
                scope,
            );
        }
        self.br(after_update)?;
        self.builder.position_at_end(after_update);
        self.workgroup_barrier()?;
        let result = self.load_int(i32t, counter)?;
        self.workgroup_barrier()?;
        self.write_reduction(instruction, op, result, lane)
    }

    /// AMDGPU's linear thread number in the block.
    fn amdgpu_linear_thread(&mut self) -> Result<IntValue<'ctx>> {
        let component = |this: &mut Self, name: &str, c: Component| -> Result<IntValue<'ctx>> {
            this.amdgpu_special(name, c.index() as u32)?
                .ok_or_else(|| TranslateError::Llvm(format!("no {name}")))
        };
        let (x, y, z) = (
            component(self, "%tid", Component::X)?,
            component(self, "%tid", Component::Y)?,
            component(self, "%tid", Component::Z)?,
        );
        let (nx, ny) = (
            component(self, "%ntid", Component::X)?,
            component(self, "%ntid", Component::Y)?,
        );
        let b = &self.builder;
        let zy = b
            .build_int_add(b.build_int_mul(z, ny, "").map_err(llvm)?, y, "")
            .map_err(llvm)?;
        b.build_int_add(b.build_int_mul(zy, nx, "").map_err(llvm)?, x, "")
            .map_err(llvm)
    }

    /// AMDGPU's barriers, fences, exits and shuffles; None for what it
    /// shares with the CPU.
    fn amdgpu_wave_instruction(&mut self, instruction: &Instruction) -> Result<Option<()>> {
        use inkwell::llvm_sys::LLVMAtomicOrdering::*;
        let Some(state) = self.amdgpu else {
            return Ok(None);
        };
        match instruction.opcode {
            Opcode::Bar | Opcode::Barrier if !instruction.has(Flag::Warp) => {
                if instruction.has(Flag::Arrive) {
                    return Err(unsupported(instruction, "(arrive barriers)"));
                }
                if instruction.guard.is_some() {
                    return Err(unsupported(instruction, "with a guard"));
                }
                if instruction.has(Flag::Red) {
                    self.amdgpu_reduction_barrier(instruction, state.lane)?;
                } else {
                    self.workgroup_barrier()?;
                }
            }
            Opcode::Bar | Opcode::Barrier => {
                call_void_intrinsic(self.module, &self.builder, "llvm.amdgcn.wave.barrier")?;
            }
            Opcode::Membar | Opcode::Fence => {
                let scope = match instruction.one_of(&[Flag::Cta, Flag::Gl, Flag::Gpu, Flag::Sys]) {
                    Some(Flag::Cta) => "workgroup",
                    Some(Flag::Sys) => "",
                    _ => "agent",
                };
                self.fence(LLVMAtomicOrderingSequentiallyConsistent, scope);
            }
            Opcode::Ret | Opcode::Exit | Opcode::Trap => {
                let leave = self.block("leave");
                let stay = self.block("stay");
                match &instruction.guard {
                    None => {
                        self.br(leave)?;
                    }
                    Some(guard) => {
                        let slot = slot_of(&guard.predicate)
                            .ok_or_else(|| unsupported(instruction, "with this guard"))?;
                        let mut holds = self.read_slot(slot, state.lane)?;
                        if guard.negated {
                            holds = self.builder.build_not(holds, "").map_err(llvm)?;
                        }
                        self.cond_br(holds, leave, stay)?;
                    }
                }
                self.builder.position_at_end(leave);
                if instruction.opcode == Opcode::Trap {
                    call_void_intrinsic(self.module, &self.builder, "llvm.trap")?;
                }
                self.builder.build_return(None).map_err(llvm)?;
                self.builder.position_at_end(stay);
            }
            Opcode::Shfl => {
                let mode = instruction
                    .one_of(&[Flag::Up, Flag::Down, Flag::Bfly, Flag::Idx])
                    .ok_or_else(|| unsupported(instruction, "without a mode"))?;
                if instruction.guard.is_some() {
                    return Err(unsupported(instruction, "with a guard"));
                }
                let lane = state.lane;
                let value =
                    self.read(instruction, &instruction.operands[1], ScalarType::B32, lane)?;
                let b_value = self
                    .read(instruction, &instruction.operands[2], ScalarType::U32, lane)?
                    .into_int_value();
                let c_value = self
                    .read(instruction, &instruction.operands[3], ScalarType::U32, lane)?
                    .into_int_value();
                let (source, valid) =
                    self.warp
                        .shuffle_source(&self.builder, mode, lane, b_value, c_value)?;
                let address = self
                    .builder
                    .build_left_shift(source, self.c32(2), "")
                    .map_err(llvm)?;
                let result = call_intrinsic(
                    self.module,
                    &self.builder,
                    "llvm.amdgcn.ds.bpermute",
                    &[],
                    &[address.into(), value],
                )?;
                match &instruction.operands[0] {
                    Operand::Pair(dest, predicate) => {
                        self.write(instruction, dest, ScalarType::B32, lane, result)?;
                        self.write(instruction, predicate, ScalarType::Pred, lane, valid.into())?;
                    }
                    dest => self.write(instruction, dest, ScalarType::B32, lane, result)?,
                }
            }
            _ => return Ok(None),
        }
        Ok(Some(()))
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
