//! Moving a region of host code into a function of its own whose values
//! from outside travel in a context struct, for the passes that hand code
//! to the runtime's threads (`pgpu-outline-cpu-kernels`,
//! `pgpu-outline-tasks`).
//!
//! [`Captures::of`] lists the values a region op uses from outside it, in
//! first-use order, constants apart (they are cloned into the new function
//! instead, so that LLVM still sees them). [`ContextStruct::new`] gives each
//! captured value a [`Slot`] (integers, floats and `!llvm.ptr` as they
//! are, `index` as `i64`, memrefs as their LLVM descriptors through
//! `builtin.unrealized_conversion_cast`, which `reconcile-unrealized-casts`
//! removes after the memref lowering), or fails where a value has no
//! fixed-size representation (an unranked memref, a memref in another
//! memory space). The host fills the struct on its stack
//! ([`ContextStruct::pack`]: one `llvm.alloca` at the function's entry per
//! region) and the new function ([`new_function`], right after its host
//! function) reads it back ([`ContextStruct::unpack`]).

use crate::{
    build::{Builder, Built},
    inline_spmd::symbol_attribute,
    ir::{Blk, Op, Val},
    runtime_calls::{RuntimeCalls, source_name},
};
use melior::ir::{
    Attribute, TypeLike,
    r#type::{MemRefType, ShapedTypeLike},
};
use std::collections::HashMap;

/// The module's functions by symbol name.
pub(crate) fn functions_by_name(module: Op) -> HashMap<String, Op> {
    module
        .entry_block(0)
        .map(|body| body.ops())
        .unwrap_or_default()
        .into_iter()
        .filter(|op| op.is("func.func"))
        .filter_map(|op| Some((symbol_attribute(op, "sym_name")?, op)))
        .collect()
}

/// An op whose single result is a constant (cloned into the new function,
/// not captured).
fn is_constant(op: Op) -> bool {
    op.num_operands() == 0
        && op.num_regions() == 0
        && op.num_results() == 1
        && matches!(
            op.name().as_str(),
            "arith.constant" | "llvm.mlir.constant" | "llvm.mlir.addressof" | "ub.poison"
        )
}

/// The values a region op uses from outside it.
pub(crate) struct Captures {
    /// Values that travel in the context struct, in first-use order.
    pub values: Vec<Val>,
    /// Constants, cloned into the new function.
    pub constants: Vec<Val>,
}

impl Captures {
    pub fn of(region: Op) -> Captures {
        let mut captures = Captures {
            values: vec![],
            constants: vec![],
        };
        for op in region.nested() {
            for operand in op.operands() {
                if operand.is_defined_within(region)
                    || captures.values.contains(&operand)
                    || captures.constants.contains(&operand)
                {
                    continue;
                }
                if operand.defining_op().is_some_and(is_constant) {
                    captures.constants.push(operand);
                } else {
                    captures.values.push(operand);
                }
            }
        }
        captures
    }

    /// Adds `value` to the context struct (if it is not there yet).
    pub fn capture(&mut self, value: Val) {
        if !self.values.contains(&value) {
            self.values.push(value);
        }
    }
}

/// How a captured value travels in the context struct.
enum Slot {
    /// Stored as it is (integers, floats, pointers).
    Plain(String),
    /// `index`, stored as `i64`.
    Index,
    /// A memref, stored as its LLVM descriptor.
    Memref(String),
}

impl Slot {
    fn of(value: Val) -> Option<Slot> {
        let ty = value.melior_type();
        let text = ty.to_string();
        if text == "index" {
            return Some(Slot::Index);
        }
        if ty.is_integer() || ty.is_float() || text == "!llvm.ptr" {
            return Some(Slot::Plain(text));
        }
        let memref = MemRefType::try_from(ty).ok()?;
        if memref.memory_space().is_some() {
            return None;
        }
        let rank = memref.rank();
        Some(Slot::Memref(if rank == 0 {
            "!llvm.struct<(ptr, ptr, i64)>".to_string()
        } else {
            format!("!llvm.struct<(ptr, ptr, i64, array<{rank} x i64>, array<{rank} x i64>)>")
        }))
    }

    /// The field's LLVM type.
    fn field_type(&self) -> &str {
        match self {
            Slot::Plain(ty) | Slot::Memref(ty) => ty,
            Slot::Index => "i64",
        }
    }
}

/// The context struct of a region: its captured values, their slots and
/// the struct's LLVM type.
pub(crate) struct ContextStruct {
    captures: Captures,
    slots: Vec<Slot>,
    /// `!llvm.struct<(...)>`.
    ty: String,
}

impl ContextStruct {
    /// The struct of `captures`; `None` when a captured value has no slot.
    pub fn new(captures: Captures) -> Option<ContextStruct> {
        let slots = captures
            .values
            .iter()
            .map(|value| Slot::of(*value))
            .collect::<Option<Vec<_>>>()?;
        let ty = format!(
            "!llvm.struct<({})>",
            slots
                .iter()
                .map(Slot::field_type)
                .collect::<Vec<_>>()
                .join(", ")
        );
        Some(ContextStruct {
            captures,
            slots,
            ty,
        })
    }

    /// Whether every captured value has a slot.
    pub fn fits(region: Op) -> bool {
        Captures::of(region)
            .values
            .into_iter()
            .all(|value| Slot::of(value).is_some())
    }

    /// The address of field `field` of the struct at `base`.
    fn field_address(&self, at: &Builder, base: Val, field: usize) -> Built<Val> {
        at.value(
            "llvm.getelementptr",
            &[base],
            at.parse_type("!llvm.ptr")?,
            &[
                (
                    "rawConstantIndices",
                    at.parse_attribute(&format!("array<i32: 0, {field}>"))?,
                ),
                ("elem_type", self.attribute(at)?),
            ],
        )
    }

    fn attribute<'c>(&self, at: &Builder<'c>) -> Built<Attribute<'c>> {
        at.parse_attribute(&self.ty)
    }

    /// In the new function, before `at`: reads the captured values back
    /// from the struct at `context` and clones the constants; returns what
    /// replaces each value of the region.
    fn unpack(&self, at: &Builder, context: Val) -> Built<HashMap<Val, Val>> {
        let mut replacement: HashMap<Val, Val> = HashMap::new();
        for (field, (value, slot)) in self.captures.values.iter().zip(&self.slots).enumerate() {
            let address = self.field_address(at, context, field)?;
            let field_type = at.parse_type(slot.field_type())?;
            let loaded = at.value("llvm.load", &[address], field_type, &[])?;
            let restored = match slot {
                Slot::Plain(_) => loaded,
                Slot::Index => at.value("arith.index_cast", &[loaded], at.index_type(), &[])?,
                Slot::Memref(_) => at.value(
                    "builtin.unrealized_conversion_cast",
                    &[loaded],
                    value.melior_type(),
                    &[],
                )?,
            };
            replacement.insert(*value, restored);
        }
        for constant in &self.captures.constants {
            let Some(op) = constant.defining_op() else {
                continue;
            };
            let copy = op.clone_detached();
            at.insert_detached(copy);
            replacement.insert(*constant, copy.result(0));
        }
        Ok(replacement)
    }

    /// On the host, before `host` in `function`: a struct on the stack (an
    /// `llvm.alloca` at the function's entry) holding the captured values;
    /// returns its address (`llvm.mlir.zero` when nothing is captured).
    fn pack(&self, host: &Builder, function: Op) -> Built<Val> {
        let pointer = host.parse_type("!llvm.ptr")?;
        let context = if self.captures.values.is_empty() {
            host.value("llvm.mlir.zero", &[], pointer, &[])?
        } else {
            let Some(first) = function.entry_block(0).and_then(|block| block.first()) else {
                return Err(host.fail("internal error: function without a body"));
            };
            let entry_at = host.moved_to(first);
            let i64_type = entry_at.parse_type("i64")?;
            let count = entry_at.value(
                "llvm.mlir.constant",
                &[],
                i64_type,
                &[("value", entry_at.parse_attribute("1 : i64")?)],
            )?;
            entry_at.value(
                "llvm.alloca",
                &[count],
                pointer,
                &[("elem_type", self.attribute(&entry_at)?)],
            )?
        };
        for (field, (value, slot)) in self.captures.values.iter().zip(&self.slots).enumerate() {
            let address = self.field_address(host, context, field)?;
            let stored = match slot {
                Slot::Plain(_) => *value,
                Slot::Index => {
                    host.value("arith.index_cast", &[*value], host.parse_type("i64")?, &[])?
                }
                Slot::Memref(ty) => host.value(
                    "builtin.unrealized_conversion_cast",
                    &[*value],
                    host.parse_type(ty)?,
                    &[],
                )?,
            };
            host.op("llvm.store", &[stored, address], &[], &[])?;
        }
        Ok(context)
    }

    /// Starts moving `region` (in `function`) out: a new function
    /// `@<function>_<kind><k>(parameters)`, the first parameter the
    /// context, right after `function`, that reads the captured values
    /// back; on the host, before `region`, the filled context. The caller
    /// builds the runtime call and moves the code.
    pub fn outline<'c>(
        &self,
        functions: &mut NewFunctions,
        region: Op,
        function: Op,
        kind: &str,
        parameters: &str,
    ) -> Built<Outlining<'c>> {
        let name = functions.next_name(function, kind);
        let (entry, ret) = new_function(&functions.runtime, function, &name, parameters, region)?;
        let inside = Builder::before(ret).at_location_of(region);
        let replacement = self.unpack(&inside, entry.arguments()[0])?;
        let host = Builder::before(region);
        let context = self.pack(&host, function)?;
        Ok(Outlining {
            name,
            parameters: entry.arguments(),
            ret,
            inside,
            replacement,
            host,
            context,
        })
    }

    /// The struct's size in bytes as `i64`, before `at`: the address of
    /// element 1 of an array of structs at null (0 when nothing is
    /// captured).
    pub fn bytes(&self, at: &Builder) -> Built<Val> {
        let i64_type = at.parse_type("i64")?;
        if self.captures.values.is_empty() {
            return at.constant(i64_type, 0);
        }
        let pointer = at.parse_type("!llvm.ptr")?;
        let null = at.value("llvm.mlir.zero", &[], pointer, &[])?;
        let end = at.value(
            "llvm.getelementptr",
            &[null],
            pointer,
            &[
                ("rawConstantIndices", at.parse_attribute("array<i32: 1>")?),
                ("elem_type", self.attribute(at)?),
            ],
        )?;
        at.value("llvm.ptrtoint", &[end], i64_type, &[])
    }
}

/// A region being moved out by [`ContextStruct::outline`].
pub(crate) struct Outlining<'c> {
    /// The new function's symbol.
    pub name: String,
    /// Its parameters, the context first.
    pub parameters: Vec<Val>,
    /// Its `func.return`, before which the region's code goes.
    pub ret: Op,
    /// Inserts before `ret`, at the region's location.
    pub inside: Builder<'c>,
    /// What replaces each captured value and constant in the new function.
    pub replacement: HashMap<Val, Val>,
    /// Inserts before the region, on the host.
    pub host: Builder<'c>,
    /// The address of the filled context on the host.
    pub context: Val,
}

/// What a pass that moves regions into new functions keeps across them:
/// the runtime functions it declared, and the names it gave
/// (`@<host function>_<kind><k>`, `k` counting per host function and
/// kind).
pub(crate) struct NewFunctions {
    pub runtime: RuntimeCalls,
    taken: HashMap<String, usize>,
}

impl NewFunctions {
    pub fn new(module: Op) -> NewFunctions {
        NewFunctions {
            runtime: RuntimeCalls::new(module),
            taken: HashMap::new(),
        }
    }

    fn next_name(&mut self, host_function: Op, kind: &str) -> String {
        let prefix = format!("{}_{kind}", source_name(host_function));
        let number = self.taken.entry(prefix.clone()).or_insert(0);
        let name = format!("{prefix}{number}");
        *number += 1;
        name
    }
}

/// A new `func.func private @name(parameters)` with an empty body, right
/// after `host_function`, at the location of `region`: returns its entry
/// block and `func.return`, before which its code goes.
fn new_function(
    runtime: &RuntimeCalls,
    host_function: Op,
    name: &str,
    parameters: &str,
    region: Op,
) -> Built<(Blk, Op)> {
    let outlined = runtime.parse_detached(&format!(
        "func.func private @{name}({parameters}) {{\n  func.return\n}}"
    ))?;
    if let Some(next) = host_function.next() {
        host_function.block_of().insert_raw_before(next, outlined);
    } else {
        // SAFETY: the module body takes the detached function.
        unsafe { mlir_sys::mlirBlockAppendOwnedOperation(host_function.block_of().0, outlined.0) };
    }
    outlined.set_location(region.location());
    let entry = outlined.entry_block(0);
    match (entry, entry.and_then(Blk::terminator)) {
        (Some(entry), Some(ret)) => Ok((entry, ret)),
        _ => Err(Builder::before(region).fail("internal error: empty new function")),
    }
}

/// `func.constant @name : ty` before `at`: the address of the new
/// function for the runtime to call.
pub(crate) fn function_address(at: &Builder, name: &str, ty: &str) -> Built<Val> {
    at.value(
        "func.constant",
        &[],
        at.parse_type(ty)?,
        &[("value", at.parse_attribute(&format!("@{name}"))?)],
    )
}

/// Replaces, in the ops nested in `scope`, each operand that
/// `replacement` maps.
pub(crate) fn replace_uses_within(scope: Op, replacement: &HashMap<Val, Val>) {
    let mut uses = vec![];
    for op in scope.nested() {
        for (index, operand) in op.operands().into_iter().enumerate() {
            if let Some(new) = replacement.get(&operand) {
                uses.push((op, index, *new));
            }
        }
    }
    for (op, index, new) in uses {
        op.set_operand(index, new);
    }
}
