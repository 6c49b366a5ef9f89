//! Handles for in-place IR surgery inside one pass run.
//!
//! The kernel-formation passes move operations between blocks, rewire uses
//! across whole SPMD bodies and build regions around existing code. melior's
//! borrow-checked references fit building new IR, not that, so these passes
//! work with [`Op`], [`Blk`] and [`Val`]: `Copy` wrappers of the C API's
//! handles. A handle is valid while the entity it names is in the IR; a pass
//! never keeps one across the erasure of its entity, and never beyond its
//! own run.

use melior::ir::{Location, Operation, Type, TypeLike, operation::OperationLike};
use mlir_sys::{
    MlirBlock, MlirLocation, MlirOperation, MlirRegion, MlirStringRef, MlirType, MlirValue,
    mlirBlockGetArgument, mlirBlockGetFirstOperation, mlirBlockGetNumArguments,
    mlirBlockGetTerminator, mlirBlockInsertOwnedOperationBefore, mlirIdentifierStr,
    mlirOpOperandGetNextUse, mlirOpOperandGetOperandNumber, mlirOpOperandGetOwner,
    mlirOpOperandIsNull, mlirOpResultGetOwner, mlirOperationClone, mlirOperationDestroy,
    mlirOperationGetAttributeByName, mlirOperationGetLocation, mlirOperationGetName,
    mlirOperationGetNextInBlock, mlirOperationGetNumOperands, mlirOperationGetNumRegions,
    mlirOperationGetNumResults, mlirOperationGetOperand, mlirOperationGetParentOperation,
    mlirOperationGetRegion, mlirOperationGetResult, mlirOperationMoveBefore,
    mlirOperationRemoveFromParent, mlirOperationSetLocation, mlirOperationSetOperand,
    mlirRegionGetFirstBlock, mlirValueGetFirstUse, mlirValueGetType, mlirValueIsAOpResult,
};
use pgpu_pass_infra::string_ref_to_string;

/// `text` as the C API's string view (borrowed for the call only).
pub(crate) fn string_ref(text: &str) -> MlirStringRef {
    MlirStringRef {
        data: text.as_ptr().cast(),
        length: text.len(),
    }
}

/// Bytes of one element of the MLIR scalar type written `ty` (`index` as
/// 64 bits); `None` for other types.
pub(crate) fn element_bytes(ty: &str) -> Option<usize> {
    Some(match ty {
        "i1" | "i8" => 1,
        "i16" | "f16" | "bf16" => 2,
        "i32" | "f32" => 4,
        "i64" | "index" | "f64" => 8,
        _ => return None,
    })
}

/// The bit width of a signless integer type; `None` for other types
/// (`index` included).
pub(crate) fn integer_width(ty: Type) -> Option<u32> {
    melior::ir::r#type::IntegerType::try_from(ty)
        .ok()
        .map(|integer| integer.width())
}

/// Whether the GPU sort writes keys of element type `element` back in
/// sorted order itself (`pgpu.list.sort_idx ... sorted`): integers of 8
/// bits or more and `index`. Float keys are canonicalized inside the sort
/// and `i1` keys read any nonzero byte as true, so their sorted copy is a
/// gather through the permutation (the nvptx backend's
/// `Collective::SortIdxSorted` has the same rule).
pub(crate) fn sort_writes_keys(element: Type) -> bool {
    integer_width(element).is_some_and(|bits| bits >= 8) || element.is_index()
}

/// The sizes of a memref type whose shape is static; `None` when a
/// dimension is dynamic.
pub(crate) fn static_shape(memref: &melior::ir::r#type::MemRefType) -> Option<Vec<i64>> {
    use melior::ir::r#type::{DimSize, ShapedTypeLike};
    (0..memref.rank())
        .map(|dim| match memref.dim_size(dim) {
            Ok(DimSize::Static(size)) => i64::try_from(size).ok(),
            _ => None,
        })
        .collect()
}

/// An operation in the IR.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Op(pub MlirOperation);

/// A block in the IR.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Blk(pub MlirBlock);

/// An SSA value in the IR.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Val(pub MlirValue);

/// Handles are equal when they name the same entity.
macro_rules! identity {
    ($($handle:ident),*) => {$(
        impl PartialEq for $handle {
            fn eq(&self, other: &Self) -> bool {
                self.0.ptr == other.0.ptr
            }
        }
        impl Eq for $handle {}
        impl std::hash::Hash for $handle {
            fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
                self.0.ptr.hash(state);
            }
        }
    )*};
}
identity!(Op, Blk, Val);

/// One use of a value: the operand `index` of `owner`.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Use {
    pub owner: Op,
    pub index: usize,
}

fn nonnull_op(raw: MlirOperation) -> Option<Op> {
    (!raw.ptr.is_null()).then_some(Op(raw))
}

impl Op {
    /// Wraps a melior operation reference.
    pub fn of<'c>(operation: impl OperationLike<'c, 'c>) -> Self {
        Op(operation.to_raw())
    }

    pub fn name(self) -> String {
        // SAFETY: live operation (module invariant).
        unsafe { string_ref_to_string(mlirIdentifierStr(mlirOperationGetName(self.0))) }
    }

    pub fn is(self, name: &str) -> bool {
        self.name() == name
    }

    pub fn parent(self) -> Option<Op> {
        // SAFETY: live operation.
        nonnull_op(unsafe { mlirOperationGetParentOperation(self.0) })
    }

    pub fn block_of(self) -> Blk {
        // SAFETY: live operation.
        Blk(unsafe { mlir_sys::mlirOperationGetBlock(self.0) })
    }

    pub fn next(self) -> Option<Op> {
        // SAFETY: live operation.
        nonnull_op(unsafe { mlirOperationGetNextInBlock(self.0) })
    }

    pub fn location(self) -> MlirLocation {
        // SAFETY: live operation.
        unsafe { mlirOperationGetLocation(self.0) }
    }

    pub fn melior_location<'c>(self) -> Location<'c> {
        // SAFETY: locations are uniqued in the context, which outlives the pass.
        unsafe { Location::from_raw(self.location()) }
    }

    /// `line:col` of the op's source location (the file left out, so that
    /// printed analyses read the same wherever tests run), or `?`.
    pub fn source_position(self) -> String {
        pgpu_pass_infra::diagnostics::file_position(self.melior_location())
            .map(|position| format!("{}:{}", position.line, position.column))
            .unwrap_or_else(|| "?".to_string())
    }

    /// File, line and column of the op's source location for run-time
    /// reports (`<unknown>`, 0, 0 without one).
    pub fn file_line_column(self) -> (String, u32, u32) {
        pgpu_pass_infra::diagnostics::file_position(self.melior_location())
            .map(|position| (position.file, position.line, position.column))
            .unwrap_or_else(|| ("<unknown>".to_string(), 0, 0))
    }

    pub fn set_location(self, location: MlirLocation) {
        // SAFETY: live operation and location.
        unsafe { mlirOperationSetLocation(self.0, location) }
    }

    pub fn num_operands(self) -> usize {
        // SAFETY: live operation.
        usize::try_from(unsafe { mlirOperationGetNumOperands(self.0) }).unwrap_or(0)
    }

    pub fn operand(self, index: usize) -> Val {
        // SAFETY: callers pass index < num_operands.
        Val(unsafe { mlirOperationGetOperand(self.0, index as isize) })
    }

    pub fn operands(self) -> Vec<Val> {
        (0..self.num_operands()).map(|i| self.operand(i)).collect()
    }

    pub fn set_operand(self, index: usize, value: Val) {
        // SAFETY: callers pass index < num_operands and a live value.
        unsafe { mlirOperationSetOperand(self.0, index as isize, value.0) }
    }

    /// Replaces all operands.
    pub fn set_operands(self, values: &[Val]) {
        let raw: Vec<MlirValue> = values.iter().map(|value| value.0).collect();
        // SAFETY: live operation; the values outlive the call.
        unsafe { mlir_sys::mlirOperationSetOperands(self.0, raw.len() as isize, raw.as_ptr()) }
    }

    pub fn num_results(self) -> usize {
        // SAFETY: live operation.
        usize::try_from(unsafe { mlirOperationGetNumResults(self.0) }).unwrap_or(0)
    }

    pub fn result(self, index: usize) -> Val {
        // SAFETY: callers pass index < num_results.
        Val(unsafe { mlirOperationGetResult(self.0, index as isize) })
    }

    pub fn results(self) -> Vec<Val> {
        (0..self.num_results()).map(|i| self.result(i)).collect()
    }

    pub fn num_regions(self) -> usize {
        // SAFETY: live operation.
        usize::try_from(unsafe { mlirOperationGetNumRegions(self.0) }).unwrap_or(0)
    }

    pub fn region(self, index: usize) -> MlirRegion {
        // SAFETY: callers pass index < num_regions.
        unsafe { mlirOperationGetRegion(self.0, index as isize) }
    }

    /// The entry block of region `index`, if the region has one.
    pub fn entry_block(self, index: usize) -> Option<Blk> {
        if index >= self.num_regions() {
            return None;
        }
        // SAFETY: live region.
        let block = unsafe { mlirRegionGetFirstBlock(self.region(index)) };
        (!block.ptr.is_null()).then_some(Blk(block))
    }

    /// Whether the operation carries an attribute called `name`.
    pub fn has_attribute(self, name: &str) -> bool {
        // SAFETY: live operation; the name is only read during the call.
        !unsafe { mlirOperationGetAttributeByName(self.0, string_ref(name)) }
            .ptr
            .is_null()
    }

    /// Sets the unit attribute `name`.
    pub fn set_unit_attribute(self, name: &str) {
        // SAFETY: live operation; the context outlives the attribute.
        unsafe {
            let context = mlir_sys::mlirOperationGetContext(self.0);
            let unit = mlir_sys::mlirUnitAttrGet(context);
            mlir_sys::mlirOperationSetAttributeByName(self.0, string_ref(name), unit);
        }
    }

    /// Sets the attribute `name` to `value`.
    pub fn set_attribute(self, name: &str, value: melior::ir::Attribute) {
        // SAFETY: live operation and attribute of its context.
        unsafe {
            mlir_sys::mlirOperationSetAttributeByName(
                self.0,
                string_ref(name),
                melior::ir::attribute::AttributeLike::to_raw(&value),
            )
        };
    }

    /// The value of the integer attribute `name`, if the op has one.
    pub fn integer_attribute(self, name: &str) -> Option<i64> {
        let attribute = self.melior().attribute(name).ok()?;
        melior::ir::attribute::IntegerAttribute::try_from(attribute)
            .ok()
            .map(|attribute| attribute.value())
    }

    /// Removes the attribute `name` (if present).
    pub fn remove_attribute(self, name: &str) {
        // SAFETY: live operation.
        unsafe { mlir_sys::mlirOperationRemoveAttributeByName(self.0, string_ref(name)) };
    }

    /// The operation as melior sees it, for reading attributes and printing.
    pub fn melior<'c>(self) -> melior::ir::OperationRef<'c, 'c> {
        // SAFETY: live operation.
        unsafe { melior::ir::OperationRef::from_raw(self.0) }
    }

    /// Whether `self` is `ancestor` or nested in it.
    pub fn is_within(self, ancestor: Op) -> bool {
        let mut current = Some(self);
        while let Some(op) = current {
            if op == ancestor {
                return true;
            }
            current = op.parent();
        }
        false
    }

    /// The `func.func` that `self` is nested in.
    pub fn enclosing_function(self) -> Option<Op> {
        let mut current = self.parent();
        while let Some(parent) = current {
            if parent.is("func.func") {
                return Some(parent);
            }
            current = parent.parent();
        }
        None
    }

    /// The ancestor of `self` (or `self`) whose parent is `scope`.
    pub fn ancestor_under(self, scope: Op) -> Option<Op> {
        let mut current = self;
        loop {
            let parent = current.parent()?;
            if parent == scope {
                return Some(current);
            }
            current = parent;
        }
    }

    /// Every operation nested in `self` (not `self`), outer ones first.
    pub fn nested(self) -> Vec<Op> {
        let mut found = Vec::new();
        for region in 0..self.num_regions() {
            let Some(first) = self.entry_block(region) else {
                continue;
            };
            let mut block = Some(first);
            while let Some(current) = block {
                for op in current.ops() {
                    found.push(op);
                    found.extend(op.nested());
                }
                block = current.next_in_region();
            }
        }
        found
    }

    /// Moves `self` right before `other` (possibly into another block).
    pub fn move_before(self, other: Op) {
        // SAFETY: both live; the caller keeps dominance intact.
        unsafe { mlirOperationMoveBefore(self.0, other.0) }
    }

    /// Moves the ops of the entry block of region 0 (a single-block region
    /// op's body), its terminator excepted, in order, right before `other`.
    pub fn move_body_before(self, other: Op) {
        if let Some(body) = self.entry_block(0) {
            let terminator = body.terminator();
            for inner in body.ops() {
                if Some(inner) != terminator {
                    inner.move_before(other);
                }
            }
        }
    }

    /// Unlinks and destroys the operation; it must have no remaining uses.
    /// Debug builds check that (as MLIR's own assertions would: Debian's
    /// MLIR is built without them, and a use left behind is a write into
    /// freed memory when its owner goes).
    pub fn erase(self) {
        #[cfg(debug_assertions)]
        if let Some(user) = self.outside_user() {
            panic!(
                "erasing {} at {} whose result is still used by {} at {}",
                self.name(),
                self.source_position(),
                user.name(),
                user.source_position()
            );
        }
        // SAFETY: live operation, owned by its block until removed here.
        unsafe {
            mlirOperationRemoveFromParent(self.0);
            mlirOperationDestroy(self.0);
        }
    }

    /// An operation outside `self` that uses a result of `self` or of an
    /// operation nested in it.
    #[cfg(debug_assertions)]
    fn outside_user(self) -> Option<Op> {
        std::iter::once(self)
            .chain(self.nested())
            .flat_map(|op| op.results())
            .flat_map(|value| value.uses())
            .map(|found| found.owner)
            .find(|owner| !owner.is_within(self))
    }

    /// A detached deep copy of the operation.
    pub fn clone_detached(self) -> Op {
        // SAFETY: live operation; the copy is owned by the caller.
        Op(unsafe { mlirOperationClone(self.0) })
    }
}

impl Blk {
    pub fn first(self) -> Option<Op> {
        // SAFETY: live block.
        nonnull_op(unsafe { mlirBlockGetFirstOperation(self.0) })
    }

    pub fn ops(self) -> Vec<Op> {
        let mut ops = Vec::new();
        let mut current = self.first();
        while let Some(op) = current {
            ops.push(op);
            current = op.next();
        }
        ops
    }

    pub fn terminator(self) -> Option<Op> {
        // SAFETY: live block.
        nonnull_op(unsafe { mlirBlockGetTerminator(self.0) })
    }

    pub fn parent_op(self) -> Option<Op> {
        // SAFETY: live block.
        nonnull_op(unsafe { mlir_sys::mlirBlockGetParentOperation(self.0) })
    }

    pub fn next_in_region(self) -> Option<Blk> {
        // SAFETY: live block.
        let next = unsafe { mlir_sys::mlirBlockGetNextInRegion(self.0) };
        (!next.ptr.is_null()).then_some(Blk(next))
    }

    pub fn arguments(self) -> Vec<Val> {
        // SAFETY: live block; indices below the argument count.
        let count = unsafe { mlirBlockGetNumArguments(self.0) };
        (0..count)
            .map(|i| Val(unsafe { mlirBlockGetArgument(self.0, i) }))
            .collect()
    }

    /// Appends the owned, detached `operation` to the block.
    pub fn append(self, operation: Operation<'_>) -> Op {
        let raw = operation.into_raw();
        // SAFETY: the block takes ownership of the detached operation.
        unsafe { mlir_sys::mlirBlockAppendOwnedOperation(self.0, raw) };
        Op(raw)
    }

    /// Inserts the detached `operation` (e.g. a clone) before `before`.
    pub fn insert_raw_before(self, before: Op, operation: Op) {
        // SAFETY: the block takes ownership of the detached operation.
        unsafe { mlirBlockInsertOwnedOperationBefore(self.0, before.0, operation.0) };
    }

    /// Inserts the owned, detached `operation` before `before` (in this block).
    pub fn insert_before(self, before: Op, operation: Operation<'_>) -> Op {
        let raw = operation.into_raw();
        // SAFETY: the block takes ownership of the detached operation.
        unsafe { mlirBlockInsertOwnedOperationBefore(self.0, before.0, raw) };
        Op(raw)
    }
}

impl Val {
    pub fn melior<'c>(self) -> melior::ir::Value<'c, 'c> {
        // SAFETY: live value.
        unsafe { melior::ir::Value::from_raw(self.0) }
    }

    pub fn r#type(self) -> MlirType {
        // SAFETY: live value.
        unsafe { mlirValueGetType(self.0) }
    }

    pub fn melior_type<'c>(self) -> Type<'c> {
        // SAFETY: types are uniqued in the context.
        unsafe { Type::from_raw(self.r#type()) }
    }

    /// Changes the value's type in place; the caller keeps its users
    /// valid.
    pub fn set_type(self, ty: Type) {
        // SAFETY: live value, and a type of the same context.
        unsafe { mlir_sys::mlirValueSetType(self.0, ty.to_raw()) }
    }

    /// The operation defining the value, or `None` for a block argument.
    pub fn defining_op(self) -> Option<Op> {
        // SAFETY: live value.
        unsafe { mlirValueIsAOpResult(self.0) }.then(|| Op(unsafe { mlirOpResultGetOwner(self.0) }))
    }

    pub fn uses(self) -> Vec<Use> {
        let mut uses = Vec::new();
        // SAFETY: live value; the use list is walked without changing it.
        unsafe {
            let mut operand = mlirValueGetFirstUse(self.0);
            while !mlirOpOperandIsNull(operand) {
                uses.push(Use {
                    owner: Op(mlirOpOperandGetOwner(operand)),
                    index: mlirOpOperandGetOperandNumber(operand) as usize,
                });
                operand = mlirOpOperandGetNextUse(operand);
            }
        }
        uses
    }

    /// The value of an integer or index `arith.constant`.
    pub fn constant_integer(self) -> Option<i64> {
        let op = self.defining_op()?;
        if !op.is("arith.constant") {
            return None;
        }
        op.integer_attribute("value")
    }

    /// Whether the value is defined inside `scope`: by an op nested in it,
    /// or as an argument of a block nested in it.
    pub fn is_defined_within(self, scope: Op) -> bool {
        match self.defining_op() {
            Some(op) => op.is_within(scope),
            None => {
                // SAFETY: a live block argument.
                let block = unsafe { mlir_sys::mlirBlockArgumentGetOwner(self.0) };
                Blk(block)
                    .parent_op()
                    .is_some_and(|owner| owner.is_within(scope))
            }
        }
    }

    /// Replaces every use of `self` by `with`.
    pub fn replace_all_uses(self, with: Val) {
        for found in self.uses() {
            found.owner.set_operand(found.index, with);
        }
    }
}
