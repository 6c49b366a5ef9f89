//! `pgpu-define-range-barrier`: defines the barrier over a range of a
//! block's threads that block kernels call, and what it needs.
//!
//! `pgpu-offload-kernels` launches a block spawn (`pgpu.spawn block`, the
//! whole recursion of a Fork group call that fits one thread block) as one
//! block of `n` threads whose launch body first calls `@pgpu_block_enter()`
//! and whose range barriers, there and in the `pgpu.block_group` functions
//! it calls, are `@pgpu_range_barrier(first, count, slot)` (index operands):
//! threads `first .. first+count-1` synchronize, the block's other threads
//! go on. The host module declares both; `gpu-kernel-outlining` copies the
//! declarations and the called functions, recursive ones included, into
//! the kernel's `gpu.module`, and `convert-gpu-to-nvvm` makes each
//! declaration a C-interface wrapper of `@_mlir_ciface_<name>`. CUDA's own
//! named barriers (`bar.sync id, count`) do not fit: 16 of them per block,
//! counted in whole warps, where a range starts and ends at any thread and
//! ranges nest as deep as the recursion. No upstream pass defines such a
//! barrier, so this one, run right after `convert-gpu-to-nvvm` (beside
//! `pgpu-define-grid-barrier`), replaces the declarations (or wrappers and
//! declarations) in every `gpu.module` by our own definitions in the LLVM
//! and NVVM dialects:
//!
//! * `@pgpu_range_barrier_words`: 2 * 1024 + 1 32-bit words in shared
//!   memory (one set per block), the slots: the ranges that may wait at
//!   the same time use different slots (`pgpu-block-groups` numbers them:
//!   `2 * n` for the whole block, `2 * s` and `2 * s + 1` for the two sides
//!   of a split at thread `s`);
//! * `@pgpu_block_enter()`: every thread zeroes a share of the words, then
//!   `bar.sync 0` (all threads of the block call it first, together);
//! * `@pgpu_range_barrier(first, count, slot)`, warp-aggregated. The
//!   range's lanes inside one warp are contiguous, so each thread computes
//!   its warp portion's mask from `first` and `count`
//!   (`((1 << lanes) - 1) << (low - warp base)`, `low` and `lanes` the
//!   portion's first thread and size) and:
//!   1. `bar.warp.sync mask` (the portion's lanes have arrived; their
//!      writes are ordered before what the leader does next);
//!   2. the portion's first lane (the leader) arrives for all its lanes with
//!      one atomic add to word `slot`: the portion holding `first` adds
//!      `2^31 - (count - lanes)`, every other portion `lanes`. The additions
//!      sum to exactly `2^31`, so the top bit flips when the last portion
//!      arrives, whatever the order, and the low 31 bits come back to what
//!      they were (0): the word resets itself, as the grid barrier's does;
//!      no partial sum carries into the top bit before (the first portion's
//!      addend leaves room for exactly the others');
//!   3. the leader spins on acquire loads of the word, with `nanosleep`
//!      between them (left out where the target's PTX ISA has none: sm_70
//!      and sm_72 unless a `+ptx63` feature asks for a newer one), until
//!      its top bit differs from the one its own add returned;
//!   4. `bar.warp.sync mask` again: no lane goes on before the leader.
//!
//!   Memory ordering: CTA scope is enough (one block). The leader's release
//!   fence before its relaxed add (LLVM 22 emits `atom.shared.add` without
//!   ordering for an `acq_rel` atomicrmw, so the fences carry it) publishes
//!   its portion's writes, which `bar.warp.sync` ordered before it; the
//!   acquire load that sees the flip, the acquire fence after it and the
//!   second `bar.warp.sync` make every portion's writes visible to every
//!   lane of the range.
//!
//! Both functions are `convergent` (LLVM then never makes a call depend on
//! more conditions: without it the grid barrier was duplicated into
//! branches) and `always_inline`.
//!
//! **Independent thread scheduling.** A warp may hold lanes of several
//! ranges, which wait at different barriers (or run other code) at the
//! same time: a lane waiting in `bar.warp.sync` or spinning must not keep
//! the warp's other lanes from running. Only chips from sm_70 (Volta)
//! schedule the threads of a warp independently, so the pass refuses a
//! `gpu.module` whose NVVM target is older (the runtime's block capacity
//! is 0 on such a GPU too).
//!
//! Each module that gets a definition also gets the constant global
//! `@pgpu_block_kernels` (1 : i32): its device functions may recurse (the
//! PTX then needs a call stack), and the runtime raises the threads' stack
//! limit when it loads a module that defines it. Each kernel of it that
//! calls `@pgpu_block_enter` gets `nvvm.maxntid` = 1024 (unless it has
//! one), so that ptxas limits its registers such that a block of 1024
//! threads can start, the block capacity the runtime reports.
//!
//! Last, the host module's copies of the `pgpu.block_group` functions that
//! no host code calls (outlining copied them into the kernel modules) are
//! erased: they call `@pgpu_range_barrier`, which only kernel modules
//! define. So are the host module's `memref.global`s in workgroup memory
//! that no host code uses: the shared locals that `pgpu-block-groups`
//! keeps in a block's shared memory, which outlining copied into the
//! kernel modules (there `convert-gpu-to-nvvm` made them `.shared`
//! arrays next to the barrier words; a host has no workgroup memory). Modules without the declarations are left alone, and a module
//! whose functions are defined already has none: the pass is idempotent.

use crate::nvvm_modules::{
    NvvmTarget, block_ops, chip_number, erase, gpu_modules, insert_definition,
    is_c_interface_wrapper, is_declaration, is_global_named, is_kernel, is_named, marker_global,
    module_body, nvvm_targets, parse_attribute, symbol,
};
use melior::dialect::DialectHandle;
use melior::ir::{
    Attribute, BlockLike, OperationRef,
    operation::{OperationLike, OperationMutLike, OperationRefMut, WalkOrder, WalkResult},
};
use pgpu_pass_infra::{Pass, PassFailure, emit_error};

/// The pass; it has no options.
#[derive(Debug, Default)]
pub struct DefineRangeBarrier;

/// The marker the runtime looks up in a loaded module.
pub use pgpu_runtime::mgpu::BLOCK_KERNEL_MARKER as MARKER;

/// The barrier function: `(first, count, slot)`.
pub const FUNCTION: &str = "pgpu_range_barrier";

/// The function block kernels call first.
pub const ENTER: &str = "pgpu_block_enter";

/// The barrier words (shared memory), indexed by slot.
pub const WORDS: &str = "pgpu_range_barrier_words";

/// The threads a block kernel is compiled to start with.
pub const BLOCK_THREADS: i32 = 1024;

/// The oldest chip with independent thread scheduling.
pub const MINIMUM_CHIP: u32 = 70;

/// The attribute of block-group functions.
const BLOCK_GROUP: &str = "pgpu.block_group";

/// The memory space of the workgroup globals that hold block versions'
/// shared locals.
const WORKGROUP_SPACE: &str = "#gpu.address_space<workgroup>";

/// The two functions and the signatures they must be declared with.
const DECLARED: [(&str, &str, &str); 2] = [
    (
        ENTER,
        "!llvm.func<void ()>",
        "a function of no arguments and no results",
    ),
    (
        FUNCTION,
        "!llvm.func<void (i64, i64, i64)>",
        "a function of three i64 (index) arguments and no results",
    ),
];

/// The pause between two loads of a spinning leader (where the target has
/// `nanosleep`): it leaves the multiprocessor to the threads being waited
/// for.
const PAUSE: &str = "%nanoseconds = llvm.mlir.constant(32 : i32) : i32
  nvvm.nanosleep %nanoseconds";

/// The definitions (see the module documentation for the algorithm);
/// `PAUSE` stands for [`PAUSE`] or nothing.
const DEFINITION: &str = r#"
llvm.mlir.global internal @pgpu_range_barrier_words() {addr_space = 3 : i32, alignment = 4 : i64} : !llvm.array<2049 x i32>
llvm.func internal @pgpu_block_enter() attributes {always_inline, convergent} {
  %tid = nvvm.read.ptx.sreg.tid.x : i32
  %threads = nvvm.read.ptx.sreg.ntid.x : i32
  %slots = llvm.mlir.constant(2049 : i32) : i32
  %zero = llvm.mlir.constant(0 : i32) : i32
  %words = llvm.mlir.addressof @pgpu_range_barrier_words : !llvm.ptr<3>
  llvm.br ^check(%tid : i32)
^check(%slot: i32):
  %more = llvm.icmp "ult" %slot, %slots : i32
  llvm.cond_br %more, ^clear, ^done
^clear:
  %word = llvm.getelementptr %words[0, %slot] : (!llvm.ptr<3>, i32) -> !llvm.ptr<3>, !llvm.array<2049 x i32>
  llvm.store %zero, %word {alignment = 4 : i64} : i32, !llvm.ptr<3>
  %next = llvm.add %slot, %threads : i32
  llvm.br ^check(%next : i32)
^done:
  nvvm.barrier0
  llvm.return
}
llvm.func internal @pgpu_range_barrier(%first_index: i64, %count_index: i64, %slot: i64) attributes {always_inline, convergent} {
  %first = llvm.trunc %first_index : i64 to i32
  %count = llvm.trunc %count_index : i64 to i32
  %tid = nvvm.read.ptx.sreg.tid.x : i32
  %zero = llvm.mlir.constant(0 : i32) : i32
  %lane_bits = llvm.mlir.constant(31 : i32) : i32
  %warp_size = llvm.mlir.constant(32 : i32) : i32
  %lane = llvm.and %tid, %lane_bits : i32
  %warp = llvm.sub %tid, %lane : i32
  %warp_end = llvm.add %warp, %warp_size : i32
  %end = llvm.add %first, %count : i32
  %starts_later = llvm.icmp "ult" %warp, %first : i32
  %low = llvm.select %starts_later, %first, %warp : i1, i32
  %ends_sooner = llvm.icmp "ult" %end, %warp_end : i32
  %high = llvm.select %ends_sooner, %end, %warp_end : i1, i32
  %lanes = llvm.sub %high, %low : i32
  %offset = llvm.sub %low, %warp : i32
  %one = llvm.mlir.constant(1 : i64) : i64
  %lanes_wide = llvm.zext %lanes : i32 to i64
  %offset_wide = llvm.zext %offset : i32 to i64
  %power = llvm.shl %one, %lanes_wide : i64
  %ones = llvm.sub %power, %one : i64
  %shifted = llvm.shl %ones, %offset_wide : i64
  %mask = llvm.trunc %shifted : i64 to i32
  nvvm.bar.warp.sync %mask : i32
  %is_leader = llvm.icmp "eq" %tid, %low : i32
  llvm.cond_br %is_leader, ^arrive, ^leave
^arrive:
  %top_bit = llvm.mlir.constant(-2147483648 : i32) : i32
  %holds_first = llvm.icmp "eq" %low, %first : i32
  %others = llvm.sub %count, %lanes : i32
  %first_increment = llvm.sub %top_bit, %others : i32
  %increment = llvm.select %holds_first, %first_increment, %lanes : i1, i32
  %words = llvm.mlir.addressof @pgpu_range_barrier_words : !llvm.ptr<3>
  %word = llvm.getelementptr %words[0, %slot] : (!llvm.ptr<3>, i64) -> !llvm.ptr<3>, !llvm.array<2049 x i32>
  llvm.fence syncscope("block") release
  %old = llvm.atomicrmw add %word, %increment syncscope("block") acq_rel : !llvm.ptr<3>, i32
  llvm.br ^spin
^spin:
  %current = llvm.load %word atomic syncscope("block") acquire {alignment = 4 : i64} : !llvm.ptr<3> -> i32
  %changed = llvm.xor %old, %current : i32
  %top_changed = llvm.and %changed, %top_bit : i32
  %flipped = llvm.icmp "ne" %top_changed, %zero : i32
  llvm.cond_br %flipped, ^acquire, ^pause
^pause:
  PAUSE
  llvm.br ^spin
^acquire:
  llvm.fence syncscope("block") acquire
  llvm.br ^leave
^leave:
  nvvm.bar.warp.sync %mask : i32
  llvm.return
}
"#;

impl Pass for DefineRangeBarrier {
    const ARGUMENT: &'static str = "pgpu-define-range-barrier";
    const SUMMARY: &'static str = "Define the declared @pgpu_block_enter and @pgpu_range_barrier of every \
         NVVM gpu.module (a barrier over a range of a block's threads on shared-memory words, sm_70+), \
         mark the module for a larger stack and drop the host's copies of block-group functions";

    fn dependent_dialects() -> Vec<DialectHandle> {
        crate::nvvm_modules::llvm_and_nvvm()
    }

    fn run(&self, operation: OperationRef) -> Result<(), PassFailure> {
        for module in gpu_modules(operation) {
            define_in_module(module)?;
        }
        if is_named(operation, "builtin.module") {
            erase_host_block_groups(operation);
        }
        Ok(())
    }
}

/// The C-interface declaration `convert-gpu-to-nvvm` makes the wrapper of
/// `function` call.
fn c_interface(function: &str) -> String {
    format!("_mlir_ciface_{function}")
}

fn define_in_module(module: OperationRef) -> Result<(), PassFailure> {
    let location = module.location();
    let context_ref = module.context();
    // SAFETY: the context outlives the pass run.
    let context = unsafe { context_ref.to_ref() };
    let Some(body) = module_body(module) else {
        return Ok(());
    };
    let mut functions = Vec::new();
    let mut kernels = Vec::new();
    let (mut has_words, mut has_marker) = (false, false);
    for current in block_ops(body) {
        let name = symbol(current).unwrap_or_default();
        if is_kernel(current) {
            kernels.push(current);
        } else if is_named(current, "llvm.func") {
            functions.push((name.clone(), current));
        }
        has_words |= name == WORDS;
        has_marker |= is_global_named(current, MARKER);
    }
    let find = |wanted: &str| {
        functions
            .iter()
            .find(|(name, _)| name == wanted)
            .map(|(_, function)| *function)
    };
    // The declared functions: (name, declaration or wrapper, C-interface
    // declaration of a wrapper).
    let mut declared = Vec::new();
    for (name, signature, description) in DECLARED {
        let Some(function) = find(name) else {
            continue;
        };
        let c_interface_name = c_interface(name);
        let c_declaration = find(&c_interface_name).filter(|found| is_declaration(*found));
        let wrapper =
            is_c_interface_wrapper(function, &c_interface_name) && c_declaration.is_some();
        if !is_declaration(function) && !wrapper {
            continue; // already defined
        }
        if function.attribute("function_type").ok() != Attribute::parse(context, signature) {
            return Err(emit_error(
                function.location(),
                &format!("@{name} must be declared as {description}"),
            ));
        }
        declared.push((name, function, c_declaration.filter(|_| wrapper)));
    }
    let Some(&(_, anchor, _)) = declared.first() else {
        return Ok(());
    };
    check_chip(module)?;
    if has_words && declared.len() == DECLARED.len() {
        return Err(emit_error(
            location,
            &format!("cannot define @{FUNCTION}: the module already has a symbol @{WORDS}"),
        ));
    }
    let defined: Vec<&str> = declared.iter().map(|(name, _, _)| *name).collect();
    let pause = if nvvm_targets(module).iter().all(NvvmTarget::has_nanosleep) {
        PAUSE
    } else {
        ""
    };
    insert_definition(
        context,
        &DEFINITION.replace("PAUSE", pause),
        &format!("@{FUNCTION}"),
        |symbol| defined.contains(&symbol) || (symbol == WORDS && !has_words),
        anchor,
        anchor.location(),
    )?;
    for (_, function, c_declaration) in declared {
        erase(function);
        if let Some(c_declaration) = c_declaration {
            erase(c_declaration);
        }
    }
    if !has_marker {
        body.insert_operation(0, marker_global(context, MARKER, location)?);
    }
    let threads = parse_attribute(
        context,
        location,
        &format!("array<i32: {BLOCK_THREADS}, 1, 1>"),
    )?;
    for kernel in kernels {
        if calls(kernel, ENTER) && !kernel.has_attribute("nvvm.maxntid") {
            // SAFETY: a live kernel of the module; setting an attribute
            // changes nothing else.
            unsafe { OperationRefMut::from_raw(kernel.to_raw()) }
                .set_attribute("nvvm.maxntid", threads);
        }
    }
    Ok(())
}

/// Fails when `module` targets a chip older than [`MINIMUM_CHIP`].
fn check_chip(module: OperationRef) -> Result<(), PassFailure> {
    for NvvmTarget { chip, .. } in nvvm_targets(module) {
        if chip_number(&chip).is_some_and(|number| number < MINIMUM_CHIP) {
            return Err(emit_error(
                module.location(),
                &format!(
                    "block kernels need sm_{MINIMUM_CHIP} or newer (their range barriers rely on \
                     independent thread scheduling), but gpu.module @{} targets {chip}",
                    symbol(module).unwrap_or_default()
                ),
            ));
        }
    }
    Ok(())
}

/// Whether `function` calls `callee` (`llvm.call` or `func.call`).
fn calls(function: OperationRef, callee: &str) -> bool {
    let wanted = format!("@{callee}");
    let mut found = false;
    function.walk(WalkOrder::PreOrder, |op| {
        if op
            .attribute("callee")
            .is_ok_and(|attribute| attribute.to_string() == wanted)
        {
            found = true;
            return WalkResult::Interrupt;
        }
        WalkResult::Advance
    });
    found
}

/// The symbols `op` and the ops nested in it call.
fn callees(op: OperationRef, into: &mut Vec<String>) {
    op.walk(WalkOrder::PreOrder, |nested| {
        if let Ok(callee) = nested.attribute("callee") {
            into.push(callee.to_string().trim_start_matches('@').to_string());
        }
        WalkResult::Advance
    });
}

/// Erases the functions marked `pgpu.block_group` at the top of `module`
/// that no host code calls, directly or through one another (the
/// `gpu.module`s have their own copies).
fn erase_host_block_groups(module: OperationRef) {
    let Some(body) = module_body(module) else {
        return;
    };
    let mut groups = Vec::new();
    let mut used = Vec::new();
    for current in block_ops(body) {
        if current.has_attribute(BLOCK_GROUP) {
            groups.push((symbol(current).unwrap_or_default(), current));
        } else if !is_named(current, "gpu.module") {
            callees(current, &mut used);
        }
    }
    let mut live: Vec<String> = Vec::new();
    while let Some(name) = used.pop() {
        if live.contains(&name) {
            continue;
        }
        if let Some((_, group)) = groups.iter().find(|(group, _)| *group == name) {
            live.push(name);
            callees(*group, &mut used);
        }
    }
    for (name, group) in groups {
        if !live.contains(&name) {
            erase(group);
        }
    }
    erase_host_workgroup_globals(body);
}

/// Erases the `memref.global`s in workgroup memory at the top of the
/// module that no host code uses (the shared locals of block versions:
/// outlining copied them into the kernel modules that use them, where
/// `convert-gpu-to-nvvm` made them `.shared` arrays; a host has no such
/// memory).
fn erase_host_workgroup_globals(body: melior::ir::BlockRef) {
    let mut globals = Vec::new();
    let mut used = Vec::new();
    for current in block_ops(body) {
        if is_named(current, "memref.global") {
            let workgroup = current
                .attribute("type")
                .is_ok_and(|ty| ty.to_string().contains(WORKGROUP_SPACE));
            if workgroup {
                globals.push((symbol(current).unwrap_or_default(), current));
            }
        } else if !is_named(current, "gpu.module") {
            current.walk(WalkOrder::PreOrder, |nested| {
                if is_named(nested, "memref.get_global")
                    && let Ok(name) = nested.attribute("name")
                {
                    used.push(name.to_string().trim_start_matches('@').to_string());
                }
                WalkResult::Advance
            });
        }
    }
    for (name, global) in globals {
        if !used.contains(&name) {
            erase(global);
        }
    }
}
