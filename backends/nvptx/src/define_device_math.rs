//! `pgpu-define-device-math`: defines the libdevice functions that
//! `convert-gpu-to-nvvm` calls, so that every kernel module is
//! self-contained.
//!
//! `convert-gpu-to-nvvm` lowers the math ops (`math.exp`, `math.sqrt`,
//! ..., `arith.remf`, `arith.maxnumf`) of a `gpu.module` to calls of
//! NVIDIA's libdevice (`llvm.call @__nv_exp`, `@__nv_sqrtf`, ...) and
//! declares those functions; it even marks the LLVM intrinsics of the
//! exact operations (`llvm.intr.sqrt`, `floor`, `fabs`, ...) illegal, so
//! that they go to libdevice too. Upstream expects libdevice to be linked
//! when the module becomes a binary (`gpu-module-to-binary` links the
//! bitcode of a CUDA toolkit); it has no pass that implements these
//! functions otherwise: MLIR's polynomial approximations
//! (`populateMathPolynomialApproximationPatterns`) are f32 only, accurate
//! to a few ulp rather than libm's, and exposed only as a test pass, and
//! LLVM's NVPTX backend cannot select `llvm.exp` and the like ("no libcall
//! available"). We ship no NVIDIA files and Debian's LLVM has no
//! libdevice, so without this pass a kernel using `exp` fails to load
//! ("unresolved extern function").
//!
//! This pass, run right after `convert-gpu-to-nvvm`, replaces every
//! declared `@__nv_<name>` of a `gpu.module` by our `@__pgpu_math_<name>`
//! (same type; its uses are renamed and the declaration erased), inserting
//! that function and what it calls from the library:
//!
//! * the exact operations ([`EXACT`]: sqrt, fabs, floor, ceil, rint,
//!   round, fma, copysign, fmax, fmin, in f64 and f32) are one LLVM
//!   intrinsic each, which the NVPTX backend selects as one instruction
//!   (`sqrt.rn`, `abs`, `cvt.rmi`, ..., `fma.rn`): correctly rounded;
//! * exp, log, pow, sin, cos and fmod in f64 are `device_math.mlir`, our
//!   own implementations in the LLVM dialect: Cody-Waite and Payne-Hanek
//!   range reduction, Taylor polynomials with stated truncation bounds,
//!   double-double arithmetic where the final rounding must be the only
//!   big one, and the special cases (NaN, infinities, zeros, overflow,
//!   underflow, pow's C99 cases) by selects. Measured against glibc and
//!   against 200-bit references they are within 1 ulp of glibc and within
//!   about 0.72 ulp of the exact result (the accuracy test,
//!   `tests/device_math.rs`, runs them on the CPU);
//! * their f32 forms ([`WIDENED`]) extend to f64, call the f64 function
//!   and round once.
//!
//! Why LLVM-dialect definitions after `convert-gpu-to-nvvm` rather than
//! arith-level functions before it: before it, no op we could emit for
//! sqrt, floor or fabs survives (the intrinsics are illegal there, the math
//! ops become libdevice calls), so one pass could not be complete; after
//! it, the declarations name exactly what is needed, whichever op asked
//! for it, and a definition of ours replaces each (as
//! `pgpu-define-grid-barrier` does for its barrier). The library is still
//! ordinary IR that the CPU runs: the accuracy test translates what this
//! pass inserts to LLVM IR and runs it with MLIR's execution engine.
//!
//! With `library=ocml` the pass serves the AMDGPU pipeline instead:
//! `convert-gpu-to-rocdl` calls AMD's OCML (`@__ocml_<name>_f64`,
//! `@__ocml_<name>_f32`) where `convert-gpu-to-nvvm` calls libdevice, and
//! links it from a ROCm installation that Debian's LLVM does not have; the
//! same definitions replace those declarations (`_f64` is our `<name>`,
//! `_f32` our `<name>f`).
//!
//! A libdevice function that the library lacks (`__nv_tanh`, `__nv_erf`,
//! ...) is an error at the op that called it, instead of a module that
//! does not load. Modules without `__nv_*` declarations are left alone;
//! running the pass twice changes nothing more.

use crate::nvvm_modules::{
    block_ops, erase, gpu_modules, is_declaration, is_named, module_body, move_with_location,
    symbol,
};
use melior::dialect::DialectHandle;
use melior::ir::{
    Location, Module, OperationRef,
    operation::{OperationLike, WalkOrder, WalkResult},
};
use pgpu_pass_infra::{Pass, PassFailure, PassOption, PassOptions, emit_error};
use std::collections::{BTreeSet, HashMap, HashSet};
use std::fmt::Write as _;
use std::sync::LazyLock;

/// The pass; `library` is the vendor library whose declarations it
/// defines.
#[derive(Debug, Default)]
pub struct DefineDeviceMath {
    library: VendorLibrary,
}

/// The vendor math library that a GPU dialect conversion calls.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub enum VendorLibrary {
    /// NVIDIA's libdevice (`convert-gpu-to-nvvm`): `__nv_exp`, `__nv_expf`.
    #[default]
    Libdevice,
    /// AMD's OCML (`convert-gpu-to-rocdl`): `__ocml_exp_f64`, `__ocml_exp_f32`.
    Ocml,
}

impl VendorLibrary {
    /// The name of our definition for the vendor function `name`, if it
    /// is one of this library's.
    fn ours(self, name: &str) -> Option<String> {
        match self {
            VendorLibrary::Libdevice => name
                .strip_prefix(LIBDEVICE_PREFIX)
                .map(|rest| format!("{PREFIX}{rest}")),
            VendorLibrary::Ocml => {
                let rest = name.strip_prefix(OCML_PREFIX)?;
                if let Some(base) = rest.strip_suffix("_f64") {
                    Some(format!("{PREFIX}{base}"))
                } else {
                    rest.strip_suffix("_f32")
                        .map(|base| format!("{PREFIX}{base}f"))
                }
            }
        }
    }

    /// The prefix of the library's functions.
    fn prefix(self) -> &'static str {
        match self {
            VendorLibrary::Libdevice => LIBDEVICE_PREFIX,
            VendorLibrary::Ocml => OCML_PREFIX,
        }
    }

    fn describe(self) -> &'static str {
        match self {
            VendorLibrary::Libdevice => {
                "(libdevice) has no definition in pgpu's device math library; the cuda target \
                 does not link libdevice"
            }
            VendorLibrary::Ocml => {
                "(OCML) has no definition in pgpu's device math library; the amdgpu target \
                 does not link ROCm's device libraries"
            }
        }
    }
}

/// The prefix of libdevice's functions.
pub const LIBDEVICE_PREFIX: &str = "__nv_";

/// The prefix of OCML's functions.
pub const OCML_PREFIX: &str = "__ocml_";

/// The prefix of our definitions: `__nv_<name>` becomes `<PREFIX><name>`.
pub const PREFIX: &str = "__pgpu_math_";

/// The f64 library (see its header).
const LIBRARY: &str = include_str!("device_math.mlir");

/// Libdevice functions that are one IEEE operation: `__nv_<name>` (f64) and
/// `__nv_<name>f` (f32) with their number of operands, and the LLVM
/// intrinsic that the NVPTX backend selects as the instruction.
pub const EXACT: &[(&str, &str, usize)] = &[
    ("sqrt", "sqrt", 1),         // sqrt.rn
    ("fabs", "fabs", 1),         // abs
    ("floor", "floor", 1),       // cvt.rmi
    ("ceil", "ceil", 1),         // cvt.rpi
    ("rint", "roundeven", 1),    // cvt.rni
    ("round", "round", 1),       // half away from zero, exact
    ("fma", "fma", 3),           // fma.rn
    ("copysign", "copysign", 2), // bit operations
    ("fmax", "maxnum", 2),       // max (a NaN operand is ignored, as in C)
    ("fmin", "minnum", 2),       // min
];

/// Functions of the f64 library with their number of operands: their f32
/// forms `__nv_<name>f` compute in f64 and round once.
pub const WIDENED: &[(&str, usize)] = &[
    ("exp", 1),
    ("log", 1),
    ("sin", 1),
    ("cos", 1),
    ("pow", 2),
    ("fmod", 2),
];

/// The whole library as LLVM-dialect text: `device_math.mlir`, the exact
/// operations and the f32 forms.
pub fn library() -> &'static str {
    static TEXT: LazyLock<String> = LazyLock::new(generate_library);
    &TEXT
}

fn generate_library() -> String {
    let mut text = String::from(LIBRARY);
    let signature = |ty: &str, arity: usize| {
        let parameters: Vec<String> = (0..arity).map(|i| format!("%a{i}: {ty}")).collect();
        let arguments: Vec<String> = (0..arity).map(|i| format!("%a{i}")).collect();
        let types = vec![ty; arity].join(", ");
        (parameters.join(", "), arguments.join(", "), types)
    };
    for (name, intrinsic, arity) in EXACT {
        for (suffix, ty) in [("", "f64"), ("f", "f32")] {
            let (parameters, arguments, types) = signature(ty, *arity);
            let _ = write!(
                text,
                "\nllvm.func internal @{PREFIX}{name}{suffix}({parameters}) -> {ty} \
                 attributes {{always_inline}} {{\n  \
                 %r = llvm.intr.{intrinsic}({arguments}) : ({types}) -> {ty}\n  \
                 llvm.return %r : {ty}\n}}\n"
            );
        }
    }
    for (name, arity) in WIDENED {
        let (parameters, _, _) = signature("f32", *arity);
        let wide_arguments: Vec<String> = (0..*arity).map(|i| format!("%w{i}")).collect();
        let wide_arguments = wide_arguments.join(", ");
        let wide_types = vec!["f64"; *arity].join(", ");
        let _ = write!(
            text,
            "\nllvm.func internal @{PREFIX}{name}f({parameters}) -> f32 \
             attributes {{always_inline}} {{\n"
        );
        for i in 0..*arity {
            let _ = writeln!(text, "  %w{i} = llvm.fpext %a{i} : f32 to f64");
        }
        let _ = write!(
            text,
            "  %r = llvm.call @{PREFIX}{name}({wide_arguments}) : ({wide_types}) -> f64\n  \
             %n = llvm.fptrunc %r : f64 to f32\n  \
             llvm.return %n : f32\n}}\n"
        );
    }
    text
}

impl Pass for DefineDeviceMath {
    const ARGUMENT: &'static str = "pgpu-define-device-math";
    const SUMMARY: &'static str = "Define the libdevice functions (@__nv_*) that \
         convert-gpu-to-nvvm declares in every gpu.module with pgpu's own (LLVM intrinsics for \
         the exact operations, an f64 library for exp, log, pow, sin, cos and fmod), so that no \
         libdevice is needed (library=ocml: the @__ocml_* that convert-gpu-to-rocdl declares)";
    const OPTIONS: &'static [PassOption] = &[PassOption {
        name: "library",
        description: "the vendor library whose declarations are defined: libdevice or ocml",
        default: "libdevice",
    }];

    fn from_options(options: &PassOptions) -> Result<Self, String> {
        let library = match options.string("library")?.trim() {
            "libdevice" | "" => VendorLibrary::Libdevice,
            "ocml" => VendorLibrary::Ocml,
            other => {
                return Err(format!(
                    "option 'library' expects libdevice or ocml, not '{other}'"
                ));
            }
        };
        Ok(Self { library })
    }

    fn dependent_dialects() -> Vec<DialectHandle> {
        vec![DialectHandle::llvm()]
    }

    fn run(&self, operation: OperationRef) -> Result<(), PassFailure> {
        for module in gpu_modules(operation) {
            define_in_module(module, self.library)?;
        }
        Ok(())
    }
}

fn define_in_module(module: OperationRef, library: VendorLibrary) -> Result<(), PassFailure> {
    let Some(body) = module_body(module) else {
        return Ok(());
    };
    let ops = block_ops(body);
    let declarations: Vec<OperationRef> = ops
        .iter()
        .copied()
        .filter(|op| {
            is_named(*op, "llvm.func")
                && is_declaration(*op)
                && symbol(*op).is_some_and(|name| name.starts_with(library.prefix()))
        })
        .collect();
    let Some(first) = declarations.first().copied() else {
        return Ok(());
    };
    let location = first.location();
    let context_ref = module.context();
    // SAFETY: the context outlives the pass run.
    let context = unsafe { context_ref.to_ref() };
    let parsed = Module::parse(context, self::library()).ok_or_else(|| {
        emit_error(
            location,
            "internal error: the device math library does not parse",
        )
    })?;
    let library_ops = block_ops(parsed.body());
    let functions: HashMap<String, OperationRef> = library_ops
        .iter()
        .filter_map(|op| Some((symbol(*op)?, *op)))
        .collect();

    let mut renames = Vec::new();
    let mut failed = false;
    for declaration in &declarations {
        let name = symbol(*declaration).unwrap_or_default();
        let ours = library.ours(&name).unwrap_or_default();
        let at = use_location(module, &name).unwrap_or_else(|| declaration.location());
        let Some(definition) = functions.get(&ours).filter(|_| !ours.is_empty()) else {
            emit_error(
                at,
                &format!(
                    "@{name} {}, so this operation cannot run on the GPU",
                    library.describe()
                ),
            );
            failed = true;
            continue;
        };
        let declared = declaration.attribute("function_type").ok();
        let defined = definition.attribute("function_type").ok();
        if declared != defined {
            emit_error(
                at,
                &format!(
                    "@{name} is declared as {}, but pgpu's @{ours} is {}",
                    declared.map(|ty| ty.to_string()).unwrap_or_default(),
                    defined.map(|ty| ty.to_string()).unwrap_or_default()
                ),
            );
            failed = true;
            continue;
        }
        renames.push((name, ours));
    }
    if failed {
        return Err(PassFailure);
    }

    let existing: HashSet<String> = ops.iter().filter_map(|op| symbol(*op)).collect();
    let needed = closure(&functions, renames.iter().map(|(_, ours)| ours.clone()));
    for op in library_ops {
        if symbol(op).is_some_and(|name| needed.contains(&name) && !existing.contains(&name)) {
            move_with_location(op, first, location);
        }
    }
    for (name, ours) in &renames {
        // SAFETY: the module is live; the strings outlive the call.
        let renamed = unsafe {
            mlir_sys::mlirSymbolTableReplaceAllSymbolUses(
                melior::StringRef::new(name).to_raw(),
                melior::StringRef::new(ours).to_raw(),
                module.to_raw(),
            )
        };
        if renamed.value == 0 {
            return Err(emit_error(
                location,
                &format!("internal error: cannot rename the uses of @{name}"),
            ));
        }
    }
    for declaration in declarations {
        erase(declaration);
    }
    Ok(())
}

/// The library symbols `roots` need: themselves and, transitively, the
/// functions they call and the globals they take the address of.
fn closure(
    functions: &HashMap<String, OperationRef>,
    roots: impl Iterator<Item = String>,
) -> BTreeSet<String> {
    let mut needed = BTreeSet::new();
    let mut pending: Vec<String> = roots.collect();
    while let Some(name) = pending.pop() {
        let Some(op) = functions.get(&name) else {
            continue;
        };
        if !needed.insert(name) {
            continue;
        }
        op.walk(WalkOrder::PreOrder, |nested| {
            for attribute in ["callee", "global_name"] {
                if let Ok(value) = nested.attribute(attribute) {
                    pending.push(value.to_string().trim_start_matches('@').to_string());
                }
            }
            WalkResult::Advance
        });
    }
    needed
}

/// The location of the first call of `@name` in `module`, the op that
/// `convert-gpu-to-nvvm` lowered to it.
fn use_location<'c>(module: OperationRef<'c, '_>, name: &str) -> Option<Location<'c>> {
    let callee = format!("@{name}");
    let mut found = None;
    module.walk(WalkOrder::PreOrder, |op| {
        if is_named(op, "llvm.call")
            && op
                .attribute("callee")
                .is_ok_and(|attribute| attribute.to_string() == callee)
        {
            found = Some(op.location().to_raw());
            return WalkResult::Interrupt;
        }
        WalkResult::Advance
    });
    // SAFETY: a location of the module's context.
    found.map(|raw| unsafe { Location::from_raw(raw) })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vendor_names_map_to_ours() {
        let ours = |library: VendorLibrary, name: &str| library.ours(name);
        assert_eq!(
            ours(VendorLibrary::Libdevice, "__nv_expf").as_deref(),
            Some("__pgpu_math_expf")
        );
        assert_eq!(
            ours(VendorLibrary::Ocml, "__ocml_exp_f32").as_deref(),
            Some("__pgpu_math_expf")
        );
        assert_eq!(
            ours(VendorLibrary::Ocml, "__ocml_fmod_f64").as_deref(),
            Some("__pgpu_math_fmod")
        );
        assert_eq!(ours(VendorLibrary::Ocml, "__ocml_exp_f16"), None);
        assert_eq!(ours(VendorLibrary::Ocml, "__nv_exp"), None);
        assert_eq!(ours(VendorLibrary::Libdevice, "__ocml_exp_f64"), None);
    }

    #[test]
    fn every_libdevice_name_has_one_definition() {
        let text = library();
        for (name, _, _) in EXACT {
            for suffix in ["", "f"] {
                let header = format!("@{PREFIX}{name}{suffix}(");
                assert_eq!(text.matches(&header).count(), 1, "{header}");
            }
        }
        for (name, _) in WIDENED {
            for suffix in ["", "f"] {
                let header = format!("llvm.func internal @{PREFIX}{name}{suffix}(");
                assert_eq!(text.matches(&header).count(), 1, "{header}");
            }
        }
    }
}
