//! Op construction for the lowering: a cursor (the block new ops go to) and
//! small helpers for the `arith`, `memref`, `scf`, `func` and `ub` ops the
//! front ends emit.
//!
//! Values and blocks are handled as `'static` references: MLIR owns the IR,
//! and the lowering builds a region's blocks before it moves them into
//! their op, so a borrow-checked lifetime cannot describe them. A value is
//! only used while the module that holds it is alive, which the lowering
//! guarantees by never erasing operations it has built.

use melior::{
    Context,
    ir::{
        Attribute, Block, BlockLike, BlockRef, Identifier, Location, Operation, OperationRef,
        Region, RegionLike, Type, Value, ValueLike, operation::OperationBuilder,
        operation::OperationLike,
    },
};

/// A value of the IR under construction.
pub type V<'c> = Value<'c, 'c>;
/// A block of the IR under construction.
pub type B<'c> = BlockRef<'c, 'c>;

/// Result of building IR; the error is an internal-error diagnostic whose
/// span the caller fills in.
pub type BuildResult<T> = Result<T, crate::diag::Diagnostic>;

/// An internal error of the lowering (MLIR refused an op).
pub fn build_error(message: String) -> crate::diag::Diagnostic {
    crate::diag::Diagnostic::error(
        super::E_INTERNAL,
        format!("internal error in the MLIR lowering: {message}"),
        crate::span::Span::default(),
    )
}

/// Forgets the borrow of a value (see the module comment).
pub fn detach<'c>(value: Value<'c, '_>) -> V<'c> {
    // SAFETY: the value's owner lives in the module being built, which
    // outlives every use the lowering makes of the value.
    unsafe { Value::from_raw(value.to_raw()) }
}

/// A reference to an owned block that is about to be filled and moved into
/// a region.
pub fn block_ref<'c>(block: &Block<'c>) -> B<'c> {
    // SAFETY: moving a `Block` into a region does not move the MLIR block;
    // the reference is only used while the block is alive.
    unsafe { BlockRef::from_raw(block.to_raw()) }
}

/// Forgets the borrow of a block reference (see the module comment).
pub fn detach_block<'c>(block: BlockRef<'c, '_>) -> B<'c> {
    // SAFETY: the block lives in the module being built.
    unsafe { BlockRef::from_raw(block.to_raw()) }
}

/// Result `index` of an appended op.
pub fn result<'c>(op: OperationRef<'c, 'c>, index: usize) -> BuildResult<V<'c>> {
    op.result(index)
        .map(|r| detach(r.into()))
        .map_err(|e| build_error(format!("missing result {index}: {e}")))
}

/// All results of an appended op.
pub fn results<'c>(op: OperationRef<'c, 'c>) -> BuildResult<Vec<V<'c>>> {
    (0..op.result_count()).map(|i| result(op, i)).collect()
}

/// A region holding one block.
pub fn region_of(block: Block<'_>) -> Region<'_> {
    let region = Region::new();
    region.append_block(block);
    region
}

/// A finite float in MLIR's literal syntax: every digit of the shortest
/// round-trip form, with the decimal point MLIR requires.
pub fn float_text(value: f64) -> String {
    let text = format!("{value:e}");
    match text.split_once('e') {
        Some((mantissa, exponent)) if !mantissa.contains('.') => {
            format!("{mantissa}.0e{exponent}")
        }
        _ => text,
    }
}

/// The `index` that `value` was `arith.index_cast` from, when that index
/// is a `pgpu.rank`, `pgpu.size`, `pgpu.oldrank` or `pgpu.sort_idx`.
fn thread_index_of<'c>(value: V<'c>) -> Option<V<'c>> {
    let cast = melior::ir::operation::OperationResult::try_from(value)
        .ok()?
        .owner();
    if cast.name().as_string_ref().as_str().ok()? != "arith.index_cast" {
        return None;
    }
    let source = cast.operand(0).ok()?;
    let producer = melior::ir::operation::OperationResult::try_from(source)
        .ok()?
        .owner();
    match producer.name().as_string_ref().as_str().ok()? {
        "pgpu.rank" | "pgpu.size" | "pgpu.oldrank" | "pgpu.sort_idx" => Some(detach(source)),
        _ => None,
    }
}

/// The C-level signedness of an integer operation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Signedness {
    Signed,
    Unsigned,
}

/// Builds ops at a cursor.
#[derive(Clone, Copy)]
pub struct Builder<'c> {
    pub context: &'c Context,
    /// Where `append` puts new ops.
    pub block: B<'c>,
}

impl std::fmt::Debug for Builder<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Builder")
    }
}

impl<'c> Builder<'c> {
    pub fn new(context: &'c Context, block: B<'c>) -> Self {
        Self { context, block }
    }

    /// The same builder at another block.
    pub fn at(&self, block: B<'c>) -> Self {
        Self {
            context: self.context,
            block,
        }
    }

    /// Appends `op` at the cursor.
    pub fn append(&self, op: Operation<'c>) -> OperationRef<'c, 'c> {
        let op = self.block.append_operation(op);
        // SAFETY: as `detach`: the op lives in the module being built.
        unsafe { OperationRef::from_raw(op.to_raw()) }
    }

    /// Builds and appends a generic op.
    pub fn op(
        &self,
        name: &str,
        location: Location<'c>,
        operands: &[V<'c>],
        results: &[Type<'c>],
        attributes: &[(&str, Attribute<'c>)],
        regions: Vec<Region<'c>>,
    ) -> BuildResult<OperationRef<'c, 'c>> {
        let attributes: Vec<_> = attributes
            .iter()
            .map(|(name, value)| (Identifier::new(self.context, name), *value))
            .collect();
        let op = OperationBuilder::new(name, location)
            .add_operands(operands)
            .add_results(results)
            .add_attributes(&attributes)
            .add_regions_vec(regions)
            .build()
            .map_err(|e| build_error(format!("cannot build '{name}': {e}")))?;
        Ok(self.append(op))
    }

    /// Builds a one-result op and returns its result.
    pub fn op1(
        &self,
        name: &str,
        location: Location<'c>,
        operands: &[V<'c>],
        result_type: Type<'c>,
        attributes: &[(&str, Attribute<'c>)],
    ) -> BuildResult<V<'c>> {
        let op = self.op(name, location, operands, &[result_type], attributes, vec![])?;
        result(op, 0)
    }

    /// Parses an attribute (an internal error if MLIR rejects the text).
    pub fn attr(&self, text: &str) -> BuildResult<Attribute<'c>> {
        Attribute::parse(self.context, text)
            .ok_or_else(|| build_error(format!("cannot parse attribute '{text}'")))
    }

    /// Parses a type.
    pub fn parse_type(&self, text: &str) -> BuildResult<Type<'c>> {
        Type::parse(self.context, text)
            .ok_or_else(|| build_error(format!("cannot parse type '{text}'")))
    }

    // ---- arith -----------------------------------------------------------

    /// An integer (or index) constant of type `ty`.
    pub fn const_int(
        &self,
        ty: Type<'c>,
        value: i64,
        location: Location<'c>,
    ) -> BuildResult<V<'c>> {
        let attr = self.attr(&format!("{value} : {ty}"))?;
        self.op1("arith.constant", location, &[], ty, &[("value", attr)])
    }

    /// An `i1` constant.
    pub fn const_bool(&self, value: bool, location: Location<'c>) -> BuildResult<V<'c>> {
        let ty = melior::ir::r#type::IntegerType::new(self.context, 1).into();
        let attr = self.attr(if value { "true" } else { "false" })?;
        self.op1("arith.constant", location, &[], ty, &[("value", attr)])
    }

    /// An `index` constant.
    pub fn const_index(&self, value: i64, location: Location<'c>) -> BuildResult<V<'c>> {
        self.const_int(Type::index(self.context), value, location)
    }

    /// A float constant of type `ty` (`f32` or `f64`).
    pub fn const_float(
        &self,
        ty: Type<'c>,
        value: f64,
        location: Location<'c>,
    ) -> BuildResult<V<'c>> {
        let text = if value.is_finite() {
            format!("{} : {ty}", float_text(value))
        } else {
            let bits = if ty == Type::float32(self.context) {
                format!("0x{:08X}", (value as f32).to_bits())
            } else {
                format!("0x{:016X}", value.to_bits())
            };
            format!("{bits} : {ty}")
        };
        let attr = self.attr(&text)?;
        self.op1("arith.constant", location, &[], ty, &[("value", attr)])
    }

    /// A binary op whose result has the type of its operands.
    pub fn binary(
        &self,
        name: &str,
        lhs: V<'c>,
        rhs: V<'c>,
        location: Location<'c>,
    ) -> BuildResult<V<'c>> {
        self.op1(name, location, &[lhs, rhs], lhs.r#type(), &[])
    }

    /// A unary cast-like op to `ty`.
    pub fn cast(
        &self,
        name: &str,
        value: V<'c>,
        ty: Type<'c>,
        location: Location<'c>,
    ) -> BuildResult<V<'c>> {
        self.op1(name, location, &[value], ty, &[])
    }

    /// `arith.cmpi` with a predicate name (`eq`, `slt`, `ult`, ...).
    pub fn cmpi(
        &self,
        predicate: &str,
        lhs: V<'c>,
        rhs: V<'c>,
        location: Location<'c>,
    ) -> BuildResult<V<'c>> {
        let code = match predicate {
            "eq" => 0,
            "ne" => 1,
            "slt" => 2,
            "sle" => 3,
            "sgt" => 4,
            "sge" => 5,
            "ult" => 6,
            "ule" => 7,
            "ugt" => 8,
            "uge" => 9,
            other => return Err(build_error(format!("unknown cmpi predicate '{other}'"))),
        };
        let attr = self.attr(&format!("{code} : i64"))?;
        let i1 = melior::ir::r#type::IntegerType::new(self.context, 1).into();
        self.op1(
            "arith.cmpi",
            location,
            &[lhs, rhs],
            i1,
            &[("predicate", attr)],
        )
    }

    /// `arith.cmpf` with a predicate name (`oeq`, `olt`, `une`, ...).
    pub fn cmpf(
        &self,
        predicate: &str,
        lhs: V<'c>,
        rhs: V<'c>,
        location: Location<'c>,
    ) -> BuildResult<V<'c>> {
        let code = match predicate {
            "false" => 0,
            "oeq" => 1,
            "ogt" => 2,
            "oge" => 3,
            "olt" => 4,
            "ole" => 5,
            "one" => 6,
            "ord" => 7,
            "ueq" => 8,
            "ugt" => 9,
            "uge" => 10,
            "ult" => 11,
            "ule" => 12,
            "une" => 13,
            "uno" => 14,
            "true" => 15,
            other => return Err(build_error(format!("unknown cmpf predicate '{other}'"))),
        };
        let attr = self.attr(&format!("{code} : i64"))?;
        let i1 = melior::ir::r#type::IntegerType::new(self.context, 1).into();
        self.op1(
            "arith.cmpf",
            location,
            &[lhs, rhs],
            i1,
            &[("predicate", attr)],
        )
    }

    /// `arith.select`.
    pub fn select(
        &self,
        condition: V<'c>,
        yes: V<'c>,
        no: V<'c>,
        location: Location<'c>,
    ) -> BuildResult<V<'c>> {
        self.op1(
            "arith.select",
            location,
            &[condition, yes, no],
            yes.r#type(),
            &[],
        )
    }

    /// `arith.xori %v, true`: logical not of an `i1`.
    pub fn not(&self, value: V<'c>, location: Location<'c>) -> BuildResult<V<'c>> {
        let one = self.const_bool(true, location)?;
        self.binary("arith.xori", value, one, location)
    }

    /// An integer of any width (or `index`) converted to `index`.
    ///
    /// An `int` that is itself a thread rank, thread count or `sort_idx`
    /// result converted from `index` gives back that `index` (these are
    /// below 2^31, so the round trip is the identity).
    pub fn to_index(
        &self,
        value: V<'c>,
        sign: Signedness,
        location: Location<'c>,
    ) -> BuildResult<V<'c>> {
        let index = Type::index(self.context);
        if value.r#type() == index {
            return Ok(value);
        }
        if let Some(original) = thread_index_of(value) {
            return Ok(original);
        }
        let name = match sign {
            Signedness::Signed => "arith.index_cast",
            Signedness::Unsigned => "arith.index_castui",
        };
        self.cast(name, value, index, location)
    }

    /// An `index` converted to the integer type `ty`.
    pub fn from_index(
        &self,
        value: V<'c>,
        ty: Type<'c>,
        location: Location<'c>,
    ) -> BuildResult<V<'c>> {
        if value.r#type() == ty {
            return Ok(value);
        }
        self.cast("arith.index_cast", value, ty, location)
    }

    /// `ub.poison : ty`: the value of an uninitialized variable or of NULL.
    pub fn poison(&self, ty: Type<'c>, location: Location<'c>) -> BuildResult<V<'c>> {
        self.op1("ub.poison", location, &[], ty, &[])
    }

    // ---- memref ----------------------------------------------------------

    /// `memref.load %m[%indices]`.
    pub fn load(
        &self,
        memref: V<'c>,
        indices: &[V<'c>],
        ty: Type<'c>,
        location: Location<'c>,
    ) -> BuildResult<V<'c>> {
        let mut operands = vec![memref];
        operands.extend_from_slice(indices);
        self.op1("memref.load", location, &operands, ty, &[])
    }

    /// `memref.store %v, %m[%indices]`.
    pub fn store(
        &self,
        value: V<'c>,
        memref: V<'c>,
        indices: &[V<'c>],
        location: Location<'c>,
    ) -> BuildResult<()> {
        let mut operands = vec![value, memref];
        operands.extend_from_slice(indices);
        self.op("memref.store", location, &operands, &[], &[], vec![])?;
        Ok(())
    }

    /// `memref.alloca() : ty` (static shape).
    pub fn alloca(&self, ty: Type<'c>, location: Location<'c>) -> BuildResult<V<'c>> {
        let segments = self.attr("array<i32: 0, 0>")?;
        self.op1(
            "memref.alloca",
            location,
            &[],
            ty,
            &[("operandSegmentSizes", segments)],
        )
    }

    /// `memref.alloca() : ty` inserted at the start of `scope` (the entry
    /// block of the allocation scope), so that an alloca in a loop does
    /// not grow the stack every iteration.
    pub fn alloca_at(
        &self,
        scope: B<'c>,
        ty: Type<'c>,
        location: Location<'c>,
    ) -> BuildResult<V<'c>> {
        let segments = self.attr("array<i32: 0, 0>")?;
        let op = OperationBuilder::new("memref.alloca", location)
            .add_results(&[ty])
            .add_attributes(&[(
                Identifier::new(self.context, "operandSegmentSizes"),
                segments,
            )])
            .build()
            .map_err(|e| build_error(format!("cannot build 'memref.alloca': {e}")))?;
        let op = scope.insert_operation(0, op);
        // SAFETY: as `detach`: the op lives in the module being built.
        let op = unsafe { OperationRef::from_raw(op.to_raw()) };
        result(op, 0)
    }

    /// `memref.get_global @name : ty`.
    pub fn get_global(
        &self,
        name: &str,
        ty: Type<'c>,
        location: Location<'c>,
    ) -> BuildResult<V<'c>> {
        let symbol = self.attr(&format!("@\"{name}\""))?;
        self.op1("memref.get_global", location, &[], ty, &[("name", symbol)])
    }

    /// `memref.cast %v : ... to ty` (no op when the types agree).
    pub fn memref_cast(
        &self,
        value: V<'c>,
        ty: Type<'c>,
        location: Location<'c>,
    ) -> BuildResult<V<'c>> {
        if value.r#type() == ty {
            return Ok(value);
        }
        self.cast("memref.cast", value, ty, location)
    }

    /// `p + i` on a pointer `memref<?xT, strided<[1], offset: ?>>`:
    /// `memref.extract_strided_metadata`, then `memref.reinterpret_cast` of
    /// the base to offset `offset + i` and size `size - i`.
    pub fn ptr_add(
        &self,
        ptr: V<'c>,
        element: Type<'c>,
        delta: V<'c>,
        location: Location<'c>,
    ) -> BuildResult<V<'c>> {
        let index = Type::index(self.context);
        let base_type = self.parse_type(&format!("memref<{element}>"))?;
        let meta = self.op(
            "memref.extract_strided_metadata",
            location,
            &[ptr],
            &[base_type, index, index, index],
            &[],
            vec![],
        )?;
        let base = result(meta, 0)?;
        let offset = result(meta, 1)?;
        let size = result(meta, 2)?;
        let new_offset = self.binary("arith.addi", offset, delta, location)?;
        let new_size = self.binary("arith.subi", size, delta, location)?;
        let dynamic = i64::MIN;
        let attributes = [
            ("operandSegmentSizes", self.attr("array<i32: 1, 1, 1, 0>")?),
            (
                "static_offsets",
                self.attr(&format!("array<i64: {dynamic}>"))?,
            ),
            (
                "static_sizes",
                self.attr(&format!("array<i64: {dynamic}>"))?,
            ),
            ("static_strides", self.attr("array<i64: 1>")?),
        ];
        self.op1(
            "memref.reinterpret_cast",
            location,
            &[base, new_offset, new_size],
            ptr.r#type(),
            &attributes,
        )
    }

    /// A pointer (`ptr_type`, `memref<?xT, strided<[1], offset: ?>>`) to
    /// the single element of a 0-d memref `cell` (a scalar global).
    pub fn ptr_of_cell(
        &self,
        cell: V<'c>,
        ptr_type: Type<'c>,
        location: Location<'c>,
    ) -> BuildResult<V<'c>> {
        let zero = self.const_index(0, location)?;
        let one = self.const_index(1, location)?;
        let dynamic = i64::MIN;
        let attributes = [
            ("operandSegmentSizes", self.attr("array<i32: 1, 1, 1, 0>")?),
            (
                "static_offsets",
                self.attr(&format!("array<i64: {dynamic}>"))?,
            ),
            (
                "static_sizes",
                self.attr(&format!("array<i64: {dynamic}>"))?,
            ),
            ("static_strides", self.attr("array<i64: 1>")?),
        ];
        self.op1(
            "memref.reinterpret_cast",
            location,
            &[cell, zero, one],
            ptr_type,
            &attributes,
        )
    }

    // ---- scf / func ------------------------------------------------------

    /// `scf.yield %values`.
    pub fn scf_yield(&self, values: &[V<'c>], location: Location<'c>) -> BuildResult<()> {
        self.op("scf.yield", location, values, &[], &[], vec![])?;
        Ok(())
    }

    /// `func.call @callee(%args) : ... -> results`.
    pub fn call(
        &self,
        callee: &str,
        args: &[V<'c>],
        results_types: &[Type<'c>],
        location: Location<'c>,
    ) -> BuildResult<Vec<V<'c>>> {
        let symbol = self.attr(&format!("@\"{callee}\""))?;
        let op = self.op(
            "func.call",
            location,
            args,
            results_types,
            &[("callee", symbol)],
            vec![],
        )?;
        results(op)
    }
}

#[cfg(test)]
mod tests {
    use super::float_text;

    #[test]
    fn float_literals_have_a_decimal_point() {
        assert_eq!(float_text(1e4), "1.0e4");
        assert_eq!(float_text(0.5), "5.0e-1");
        assert_eq!(float_text(0.0), "0.0e0");
        assert_eq!(float_text(-2.25), "-2.25e0");
        assert_eq!(float_text(0.1).parse::<f64>().ok(), Some(0.1));
    }
}
