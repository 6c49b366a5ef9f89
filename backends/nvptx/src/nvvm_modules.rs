//! What the NVVM-level passes (`pgpu-define-grid-barrier`,
//! `pgpu-define-range-barrier`, `pgpu-wait-grid-dependencies`) share:
//! finding the `gpu.module`s, their kernels and their chips, the marker
//! globals the runtime looks up in a loaded module (`cuModuleGetGlobal`),
//! and replacing a declared device function (or the C-interface wrapper
//! that `convert-gpu-to-nvvm` makes of it) by a definition of ours.

use melior::Context;
use melior::ir::{
    Attribute, BlockLike, BlockRef, Identifier, Location, Module, Operation, OperationRef, Region,
    RegionLike, ValueLike,
    operation::{
        OperationBuilder, OperationLike, OperationMutLike, OperationRefMut, WalkOrder, WalkResult,
    },
};
use pgpu_pass_infra::{PassFailure, emit_error};

/// Every `gpu.module` under `operation` (not nested in one another).
pub fn gpu_modules<'c, 'a>(operation: OperationRef<'c, 'a>) -> Vec<OperationRef<'c, 'a>> {
    let mut modules = Vec::new();
    operation.walk(WalkOrder::PreOrder, |op| {
        if op.name().as_string_ref().as_str() == Ok("gpu.module") {
            modules.push(op.to_raw());
            return WalkResult::Skip;
        }
        WalkResult::Advance
    });
    // SAFETY: collected from the live IR; the callers replace ops inside
    // the gpu.modules, never the gpu.modules themselves.
    modules
        .into_iter()
        .map(|raw| unsafe { OperationRef::from_raw(raw) })
        .collect()
}

/// Whether `op` is an NVVM kernel (`llvm.func` marked `gpu.kernel` or
/// `nvvm.kernel`).
pub fn is_kernel(op: OperationRef) -> bool {
    op.name().as_string_ref().as_str() == Ok("llvm.func")
        && (op.has_attribute("gpu.kernel") || op.has_attribute("nvvm.kernel"))
}

/// The attribute `text` in `context`, or an error at `location`.
pub fn parse_attribute<'c>(
    context: &'c Context,
    location: Location<'c>,
    text: &str,
) -> Result<Attribute<'c>, PassFailure> {
    Attribute::parse(context, text)
        .ok_or_else(|| emit_error(location, &format!("cannot parse attribute {text}")))
}

/// `llvm.mlir.global external constant @<name>(1 : i32)` in global memory:
/// a marker that the runtime finds in the loaded module.
pub fn marker_global<'c>(
    context: &'c Context,
    name: &str,
    location: Location<'c>,
) -> Result<Operation<'c>, PassFailure> {
    let parse = |text: &str| parse_attribute(context, location, text);
    OperationBuilder::new("llvm.mlir.global", location)
        .add_attributes(&[
            (Identifier::new(context, "addr_space"), parse("1 : i32")?),
            (Identifier::new(context, "constant"), parse("unit")?),
            (Identifier::new(context, "global_type"), parse("i32")?),
            (
                Identifier::new(context, "linkage"),
                parse("#llvm.linkage<external>")?,
            ),
            (
                Identifier::new(context, "sym_name"),
                parse(&format!("\"{name}\""))?,
            ),
            (Identifier::new(context, "value"), parse("1 : i32")?),
        ])
        .add_regions([Region::new()])
        .build()
        .map_err(|_| emit_error(location, &format!("cannot build the marker @{name}")))
}

/// The body of `module` (a `builtin.module` or `gpu.module`), if it has one.
pub fn module_body<'c, 'a>(module: OperationRef<'c, 'a>) -> Option<BlockRef<'c, 'a>> {
    module
        .region(0)
        .ok()
        .and_then(|region| region.first_block())
}

/// The dialects of the passes that build LLVM and NVVM ops: their
/// `Pass::dependent_dialects`.
pub fn llvm_and_nvvm() -> Vec<melior::dialect::DialectHandle> {
    // SAFETY: the handle of a dialect linked into the MLIR libraries.
    let nvvm = unsafe {
        melior::dialect::DialectHandle::from_raw(mlir_sys::mlirGetDialectHandle__nvvm__())
    };
    vec![melior::dialect::DialectHandle::llvm(), nvvm]
}

/// The entry block of `function`, if it is a definition.
pub fn entry_block<'c, 'a>(function: OperationRef<'c, 'a>) -> Option<BlockRef<'c, 'a>> {
    function
        .region(0)
        .ok()
        .and_then(|region| region.first_block())
}

/// The `llvm.return` ops of `function`, collected before a pass inserts
/// anything before them.
pub fn returns_of<'c, 'a>(function: OperationRef<'c, 'a>) -> Vec<OperationRef<'c, 'a>> {
    let mut returns = Vec::new();
    function.walk(WalkOrder::PreOrder, |op| {
        if op.name().as_string_ref().as_str() == Ok("llvm.return") {
            returns.push(op.to_raw());
        }
        WalkResult::Advance
    });
    returns
        .into_iter()
        // SAFETY: collected from the live function; nothing was erased.
        .map(|raw| unsafe { OperationRef::from_raw(raw) })
        .collect()
}

/// The ops of `block`, in order: the passes look them up before they
/// change the block.
pub fn block_ops<'c, 'a>(block: BlockRef<'c, 'a>) -> Vec<OperationRef<'c, 'a>> {
    let mut ops = Vec::new();
    let mut op = block.first_operation();
    while let Some(current) = op {
        ops.push(current);
        op = current.next_in_block();
    }
    ops
}

/// Whether `op` is the global `@<name>` (a marker of [`marker_global`]).
pub fn is_global_named(op: OperationRef, name: &str) -> bool {
    is_named(op, "llvm.mlir.global") && symbol(op).as_deref() == Some(name)
}

/// Whether `op` is named `name`.
pub fn is_named(op: OperationRef, name: &str) -> bool {
    op.name().as_string_ref().as_str() == Ok(name)
}

/// The `sym_name` of `op`, if any.
pub fn symbol(op: OperationRef) -> Option<String> {
    op.attribute("sym_name")
        .ok()
        .map(|name| name.to_string().trim_matches('"').to_string())
}

/// Whether the function `function` has no body.
pub fn is_declaration(function: OperationRef) -> bool {
    function
        .region(0)
        .ok()
        .and_then(|region| region.first_block())
        .is_none()
}

/// Whether `function` is the C-interface wrapper `convert-gpu-to-nvvm`
/// makes of a declaration (it asks for one for every function of a
/// `gpu.module`): `llvm.call @<c_interface>(its arguments)` and a return.
pub fn is_c_interface_wrapper(function: OperationRef, c_interface: &str) -> bool {
    let Some(entry) = function
        .region(0)
        .ok()
        .and_then(|region| region.first_block())
    else {
        return false;
    };
    let Some(call) = entry.first_operation() else {
        return false;
    };
    let forwards_arguments = call.operand_count() == entry.argument_count()
        && (0..entry.argument_count()).all(|index| {
            match (call.operand(index), entry.argument(index)) {
                (Ok(operand), Ok(argument)) => operand.to_raw().ptr == argument.to_raw().ptr,
                _ => false,
            }
        });
    entry.next_in_region().is_none()
        && is_named(call, "llvm.call")
        && forwards_arguments
        && call
            .attribute("callee")
            .is_ok_and(|callee| callee.to_string() == format!("@{c_interface}"))
        && call
            .next_in_block()
            .is_some_and(|ret| is_named(ret, "llvm.return") && ret.next_in_block().is_none())
}

/// Erases `op`, which nothing refers to any more.
pub fn erase(op: OperationRef) {
    let raw = op.to_raw();
    // SAFETY: `op` is live and in a block; once removed it is owned here and
    // destroyed when dropped.
    unsafe {
        OperationRefMut::from_raw(raw).remove_from_parent();
        drop(Operation::from_raw(raw));
    }
}

/// Parses `text` (a module body of ours, `what` in errors) and moves the
/// ops whose symbol `keep` accepts before `anchor`, with `location`.
pub fn insert_definition<'c>(
    context: &'c Context,
    text: &str,
    what: &str,
    keep: impl Fn(&str) -> bool,
    anchor: OperationRef<'c, '_>,
    location: Location<'c>,
) -> Result<(), PassFailure> {
    let parsed = Module::parse(context, text).ok_or_else(|| {
        emit_error(
            location,
            &format!("internal error: the definition of {what} does not parse"),
        )
    })?;
    let mut definition = Vec::new();
    let mut op = parsed.body().first_operation();
    while let Some(current) = op {
        if keep(&symbol(current).unwrap_or_default()) {
            definition.push(current.to_raw());
        }
        op = current.next_in_block();
    }
    for raw in definition {
        // SAFETY: a live op of the parsed module, which is dropped with
        // what was not taken.
        move_with_location(unsafe { OperationRef::from_raw(raw) }, anchor, location);
    }
    Ok(())
}

/// Moves `op` (a top-level op of a parsed module of ours) before `anchor`,
/// giving it and every op nested in it `location`.
pub fn move_with_location<'c>(
    op: OperationRef<'c, '_>,
    anchor: OperationRef<'c, '_>,
    location: Location<'c>,
) {
    // SAFETY: a live op; moving it transfers it to the anchor's block.
    let mut moved = unsafe { OperationRefMut::from_raw(op.to_raw()) };
    let raw_location = location.to_raw();
    moved.walk_mut(WalkOrder::PreOrder, |nested| {
        // SAFETY: a live op of the definition and a location of its
        // context.
        unsafe { mlir_sys::mlirOperationSetLocation(nested.to_raw(), raw_location) };
        WalkResult::Advance
    });
    moved.move_before(anchor);
}

/// The number of an NVIDIA chip name (`sm_90a` -> 90).
pub fn chip_number(chip: &str) -> Option<u32> {
    chip.strip_prefix("sm_")
        .map(|rest| rest.trim_end_matches(['a', 'f']))
        .and_then(|number| number.parse::<u32>().ok())
}

/// An NVVM target of a `gpu.module` (`#nvvm.target<chip = ..., features
/// = ...>`).
pub struct NvvmTarget {
    /// The chip, `sm_50` where the target names none (its default).
    pub chip: String,
    /// The LLVM target features (e.g. `+ptx80`), empty by default.
    pub features: String,
}

impl NvvmTarget {
    /// Whether LLVM 22 can emit `nanosleep` for this target: sm_70 and a
    /// PTX ISA of at least 6.3, which LLVM chooses by itself from sm_75 on
    /// (for sm_70 and sm_72 only with a `+ptx63` or later feature).
    pub fn has_nanosleep(&self) -> bool {
        let chip = chip_number(&self.chip).unwrap_or(0);
        let requested = self
            .features
            .split(',')
            .filter_map(|feature| feature.trim().strip_prefix("+ptx"))
            .filter_map(|version| version.parse::<u32>().ok())
            .max()
            .unwrap_or(0);
        chip >= 75 || (chip >= 70 && requested >= 63)
    }
}

/// The NVVM targets of `module` (a `gpu.module`).
pub fn nvvm_targets(module: OperationRef) -> Vec<NvvmTarget> {
    let Ok(targets) = module.attribute("targets") else {
        return vec![];
    };
    let text = targets.to_string();
    let parameter = |target: &str, name: &str| {
        target
            .split_once(&format!("{name} = \""))
            .and_then(|(_, rest)| rest.split('"').next())
            .map(str::to_string)
    };
    text.split("#nvvm.target")
        .skip(1)
        .map(|target| {
            let target = target.split('#').next().unwrap_or_default();
            NvvmTarget {
                chip: parameter(target, "chip").unwrap_or_else(|| "sm_50".to_string()),
                features: parameter(target, "features").unwrap_or_default(),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nanosleep_needs_sm_70_and_ptx_6_3() {
        let target = |chip: &str, features: &str| NvvmTarget {
            chip: chip.into(),
            features: features.into(),
        };
        assert!(target("sm_90", "").has_nanosleep());
        assert!(target("sm_75", "").has_nanosleep());
        assert!(!target("sm_70", "").has_nanosleep());
        assert!(!target("sm_72", "+ptx61").has_nanosleep());
        assert!(target("sm_70", "+ptx63").has_nanosleep());
        assert!(!target("sm_60", "+ptx80").has_nanosleep());
        assert_eq!(chip_number("sm_90a"), Some(90));
        assert_eq!(chip_number("gfx942"), None);
    }
}
