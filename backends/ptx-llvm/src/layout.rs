//! Where a kernel's memory lives in the emulation: the parameter buffer,
//! the module's `.global` and `.const` images (with their initializers),
//! the block's shared memory and each lane's local memory. Every
//! variable becomes a (window, offset) pair; the windows' bases are in
//! the wave context ([`crate::cpu`]).

use crate::TranslateError;
use pgpu_ptx::ir::*;
use pgpu_ptx::{ErrorKind, PtxError};
use std::collections::HashMap;

/// A memory window of the emulation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Window {
    /// The kernel's parameter buffer.
    Param,
    /// The module's `.global` variables.
    Global,
    /// The module's `.const` variables.
    Const,
    /// The block's shared memory.
    Shared,
    /// The lane's local memory.
    Local,
}

/// One kernel's memory layout.
#[derive(Clone, Debug, Default)]
pub struct Layout {
    /// Each parameter's offset and size in the parameter buffer, in order.
    pub params: Vec<(String, u64, u64)>,
    /// Size of the parameter buffer.
    pub param_bytes: u64,
    /// Every variable the kernel can name: its window and offset.
    pub variables: HashMap<String, (Window, u64)>,
    /// Static shared memory; dynamic shared memory starts here.
    pub shared_bytes: u64,
    /// Local memory per lane.
    pub local_bytes: u64,
    /// Whether the kernel declares unsized (`extern`) shared arrays: it
    /// uses dynamic shared memory.
    pub dynamic_shared: bool,
}

/// The module's `.global` and `.const` images.
#[derive(Clone, Debug, Default)]
pub struct Images {
    /// Initial `.global` contents.
    pub global: Vec<u8>,
    /// `.const` contents.
    pub constant: Vec<u8>,
    /// Offsets of module variables in them.
    pub offsets: HashMap<String, (Window, u64)>,
}

fn align_to(value: u64, align: u64) -> u64 {
    value.div_ceil(align.max(1)) * align.max(1)
}

fn element_bytes(ty: ValueType) -> u64 {
    u64::from(ty.scalar.bytes().max(1)) * u64::from(ty.vector.unwrap_or(1))
}

fn natural_align(variable: &Variable) -> u64 {
    u64::from(variable.align.unwrap_or(0)).max(element_bytes(variable.ty))
}

fn unsupported(message: String, variable: &Variable) -> TranslateError {
    TranslateError::Ptx(PtxError::new(
        ErrorKind::UnsupportedDirective,
        message,
        variable.span,
    ))
}

/// Writes an initializer's elements at `at`.
fn write_initializer(
    bytes: &mut Vec<u8>,
    at: &mut u64,
    init: &Initializer,
    element: ScalarType,
    variable: &Variable,
) -> Result<(), TranslateError> {
    match init {
        Initializer::List(items) => {
            for item in items {
                write_initializer(bytes, at, item, element, variable)?;
            }
        }
        Initializer::Immediate(value) => {
            let size = u64::from(element.bytes().max(1));
            let bits = match (value, element) {
                // A decimal literal for an f32 variable is an f64 value.
                (Immediate::F64(bits), ScalarType::F32) => {
                    u64::from((f64::from_bits(*bits) as f32).to_bits())
                }
                (Immediate::Int(v), ScalarType::F32) => u64::from((*v as f32).to_bits()),
                (Immediate::Int(v), ScalarType::F64) => (*v as f64).to_bits(),
                (other, _) => other.bits(),
            };
            let start = *at as usize;
            let end = start + size as usize;
            if end > bytes.len() {
                return Err(unsupported(
                    format!(
                        "the initializer of `{}` is longer than the variable",
                        variable.name
                    ),
                    variable,
                ));
            }
            bytes[start..end].copy_from_slice(&bits.to_le_bytes()[..size as usize]);
            *at += size;
        }
        Initializer::Symbol { name, .. } => {
            return Err(unsupported(
                format!("the address of `{name}` as an initializer is not supported yet"),
                variable,
            ));
        }
    }
    Ok(())
}

/// Lays out the module's `.global` and `.const` variables.
pub fn images(module: &Module) -> Result<Images, TranslateError> {
    let mut images = Images::default();
    for item in &module.items {
        let Item::Variable(variable) = item else {
            continue;
        };
        let (window, bytes) = match variable.space {
            StateSpace::Global => (Window::Global, &mut images.global),
            StateSpace::Const => (Window::Const, &mut images.constant),
            _ => continue,
        };
        if variable.linkage == Some(Linkage::Extern) {
            return Err(unsupported(
                format!("external variable `{}` has no definition", variable.name),
                variable,
            ));
        }
        let mut size = variable.bytes();
        if size == 0
            && let Some(Initializer::List(items)) = &variable.init
        {
            size = items.len() as u64 * element_bytes(variable.ty);
        }
        let offset = align_to(bytes.len() as u64, natural_align(variable));
        bytes.resize((offset + size) as usize, 0);
        if let Some(init) = &variable.init {
            let mut at = offset;
            write_initializer(bytes, &mut at, init, variable.ty.scalar, variable)?;
        }
        images
            .offsets
            .insert(variable.name.clone(), (window, offset));
    }
    Ok(images)
}

/// Lays out `kernel`'s parameters, shared and local memory, for its
/// flattened body (whose variables [`crate::flat`] renamed).
pub fn layout(
    module: &Module,
    kernel: &Function,
    body: &crate::flat::Body,
    images: &Images,
) -> Result<Layout, TranslateError> {
    let variables = &body.variables[..];
    let used = body.referenced_names();
    let mut layout = Layout {
        variables: images.offsets.clone(),
        ..Layout::default()
    };
    for param in &kernel.params {
        let element =
            u64::from(param.ty.scalar.bytes().max(1)) * u64::from(param.ty.vector.unwrap_or(1));
        let size = param.dims.iter().flatten().product::<u64>() * element;
        let align = u64::from(param.align.unwrap_or(0)).max(element);
        let offset = align_to(layout.param_bytes, align);
        layout.params.push((param.name.clone(), offset, size));
        layout
            .variables
            .insert(param.name.clone(), (Window::Param, offset));
        layout.param_bytes = offset + size;
    }
    // Shared memory: the module's that the kernel uses and the kernel's
    // own, sized arrays first and unsized (`extern` dynamic) ones at the
    // end, where dynamic shared memory begins.
    let module_shared = module.items.iter().filter_map(|item| match item {
        Item::Variable(v)
            if matches!(v.space, StateSpace::Shared | StateSpace::SharedCta)
                && used.contains(&v.name) =>
        {
            Some(v)
        }
        _ => None,
    });
    let body_shared = variables
        .iter()
        .filter(|v| matches!(v.space, StateSpace::Shared | StateSpace::SharedCta));
    let shared: Vec<&Variable> = module_shared.chain(body_shared).collect();
    let mut unsized_align = 1;
    for variable in &shared {
        if variable.bytes() == 0 {
            layout.dynamic_shared = true;
            unsized_align = unsized_align.max(natural_align(variable));
            continue;
        }
        let offset = align_to(layout.shared_bytes, natural_align(variable));
        layout
            .variables
            .insert(variable.name.clone(), (Window::Shared, offset));
        layout.shared_bytes = offset + variable.bytes();
    }
    layout.shared_bytes = align_to(layout.shared_bytes, unsized_align.max(16));
    for variable in shared.iter().filter(|v| v.bytes() == 0) {
        layout
            .variables
            .insert(variable.name.clone(), (Window::Shared, layout.shared_bytes));
    }
    // `.param` variables of a body pass arguments to inlined functions:
    // each lane has its own, in local memory.
    for variable in variables
        .iter()
        .filter(|v| matches!(v.space, StateSpace::Local | StateSpace::Param))
    {
        let offset = align_to(layout.local_bytes, natural_align(variable));
        layout
            .variables
            .insert(variable.name.clone(), (Window::Local, offset));
        layout.local_bytes = offset + variable.bytes();
    }
    for variable in variables {
        if !matches!(
            variable.space,
            StateSpace::Shared | StateSpace::SharedCta | StateSpace::Local | StateSpace::Param
        ) {
            return Err(unsupported(
                format!(
                    "`.{}` variables in a kernel body (`{}`) are not supported yet (calls are not translated)",
                    variable.space, variable.name
                ),
                variable,
            ));
        }
    }
    Ok(layout)
}
