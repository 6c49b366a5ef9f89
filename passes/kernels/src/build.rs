//! A small op builder over [`crate::ir`] handles: creates upstream and pgpu
//! ops before a fixed op, at one location. Errors (an op the context cannot
//! build) become diagnostics at that location.

use crate::ir::{Blk, Op, Val};
use melior::{
    ContextRef,
    ir::{
        Attribute, Block, Identifier, Location, Region, RegionLike, Type, Value,
        attribute::IntegerAttribute,
        operation::{OperationBuilder, OperationLike},
        r#type::{MemRefType, ShapedTypeLike},
    },
};
use pgpu_pass_infra::{PassFailure, emit_error};

/// Inserts ops before `before` in its block.
pub(crate) struct Builder<'c> {
    context: ContextRef<'c>,
    block: Blk,
    before: Op,
    location: Location<'c>,
}

pub(crate) type Built<T> = Result<T, PassFailure>;

impl<'c> Builder<'c> {
    /// A builder inserting before `before`, with `before`'s location.
    pub fn before(before: Op) -> Self {
        Self {
            context: before.melior().context(),
            block: before.block_of(),
            before,
            location: before.melior_location(),
        }
    }

    /// The same insertion point with the location of `op`.
    pub fn at_location_of(&self, op: Op) -> Self {
        Self {
            context: self.context,
            block: self.block,
            before: self.before,
            location: op.melior_location(),
        }
    }

    /// A builder inserting before `before` with this builder's location.
    pub fn moved_to(&self, before: Op) -> Self {
        Self {
            context: self.context,
            block: before.block_of(),
            before,
            location: self.location,
        }
    }

    /// The builder's location.
    pub fn location(&self) -> Location<'c> {
        self.location
    }

    /// Inserts a detached op (e.g. a clone) at the insertion point.
    pub fn insert_detached(&self, op: Op) {
        self.block.insert_raw_before(self.before, op);
    }

    fn context(&self) -> &'c melior::Context {
        // SAFETY: the context outlives the pass; `self.context` outlives the
        // returned reference's uses within one call.
        unsafe { self.context.to_ref() }
    }

    pub fn fail(&self, message: &str) -> PassFailure {
        emit_error(self.location, message)
    }

    pub fn parse_type(&self, text: &str) -> Built<Type<'c>> {
        Type::parse(self.context(), text)
            .ok_or_else(|| self.fail(&format!("cannot parse type {text}")))
    }

    pub fn parse_attribute(&self, text: &str) -> Built<Attribute<'c>> {
        Attribute::parse(self.context(), text)
            .ok_or_else(|| self.fail(&format!("cannot parse attribute {text}")))
    }

    pub fn index_type(&self) -> Type<'c> {
        Type::index(self.context())
    }

    pub fn identifier(&self, name: &str) -> Identifier<'c> {
        Identifier::new(self.context(), name)
    }

    pub fn i32_attribute(&self, value: i64) -> Built<Attribute<'c>> {
        Ok(IntegerAttribute::new(self.parse_type("i32")?, value).into())
    }

    pub fn unit_attribute(&self) -> Attribute<'c> {
        Attribute::unit(self.context())
    }

    pub fn string_attribute(&self, value: &str) -> Attribute<'c> {
        melior::ir::attribute::StringAttribute::new(self.context(), value).into()
    }

    /// Builds `name` with `operands`, result `types` and `attributes`.
    pub fn op(
        &self,
        name: &str,
        operands: &[Val],
        types: &[Type<'c>],
        attributes: &[(&str, Attribute<'c>)],
    ) -> Built<Op> {
        self.op_with_regions(name, operands, types, attributes, vec![])
    }

    pub fn op_with_regions(
        &self,
        name: &str,
        operands: &[Val],
        types: &[Type<'c>],
        attributes: &[(&str, Attribute<'c>)],
        regions: Vec<Region<'c>>,
    ) -> Built<Op> {
        let operands: Vec<Value> = operands.iter().map(|value| value.melior()).collect();
        let attributes: Vec<_> = attributes
            .iter()
            .map(|(name, attribute)| (self.identifier(name), *attribute))
            .collect();
        let operation = OperationBuilder::new(name, self.location)
            .add_operands(&operands)
            .add_results(types)
            .add_attributes(&attributes)
            .add_regions_vec(regions)
            .build()
            .map_err(|error| self.fail(&format!("cannot build {name}: {error}")))?;
        Ok(self.block.insert_before(self.before, operation))
    }

    /// Builds `name` (no results) with one region of one empty block that
    /// ends in `pgpu.yield` (a spawn, a task): returns the op and that
    /// terminator, before which its code goes.
    pub fn op_with_body(
        &self,
        name: &str,
        operands: &[Val],
        attributes: &[(&str, Attribute<'c>)],
    ) -> Built<(Op, Op)> {
        let region = Region::new();
        region.append_block(Block::new(&[]));
        let op = self.op_with_regions(name, operands, &[], attributes, vec![region])?;
        let body = op.entry_block(0).ok_or(PassFailure)?;
        let end = self.append_to(body, "pgpu.yield", &[])?;
        Ok((op, end))
    }

    /// Builds `name` with `operands` (no results) at the end of `block`:
    /// a terminator.
    pub fn append_to(&self, block: Blk, name: &str, operands: &[Val]) -> Built<Op> {
        let operands: Vec<Value> = operands.iter().map(|value| value.melior()).collect();
        let operation = OperationBuilder::new(name, self.location)
            .add_operands(&operands)
            .build()
            .map_err(|error| self.fail(&format!("cannot build {name}: {error}")))?;
        Ok(block.append(operation))
    }

    /// Builds `name` and returns its single result.
    pub fn value(
        &self,
        name: &str,
        operands: &[Val],
        ty: Type<'c>,
        attributes: &[(&str, Attribute<'c>)],
    ) -> Built<Val> {
        Ok(self.op(name, operands, &[ty], attributes)?.result(0))
    }

    pub fn index(&self, value: i64) -> Built<Val> {
        let ty = self.index_type();
        let attribute = IntegerAttribute::new(ty, value).into();
        self.value("arith.constant", &[], ty, &[("value", attribute)])
    }

    pub fn constant(&self, ty: Type<'c>, value: i64) -> Built<Val> {
        let attribute = IntegerAttribute::new(ty, value).into();
        self.value("arith.constant", &[], ty, &[("value", attribute)])
    }

    /// `memref.alloc(%count) : memref<?xT>`.
    pub fn alloc(&self, element: Type<'c>, count: Val) -> Built<Val> {
        let ty = self.parse_type(&format!("memref<?x{element}>"))?;
        let segments = self.segment_sizes(&[1, 0])?;
        self.value(
            "memref.alloc",
            &[count],
            ty,
            &[("operandSegmentSizes", segments)],
        )
    }

    pub fn dealloc(&self, memref: Val) -> Built<()> {
        self.op("memref.dealloc", &[memref], &[], &[]).map(|_| ())
    }

    pub fn load(&self, memref: Val, index: Val) -> Built<Val> {
        let element = memref_element_type(memref)?;
        self.value("memref.load", &[memref, index], element, &[])
    }

    pub fn store(&self, value: Val, memref: Val, index: Val) -> Built<()> {
        self.op("memref.store", &[value, memref, index], &[], &[])
            .map(|_| ())
    }

    /// `memref.extract_aligned_pointer_as_index %memref`.
    pub fn aligned_index(&self, memref: Val) -> Built<Val> {
        self.value(
            "memref.extract_aligned_pointer_as_index",
            &[memref],
            self.index_type(),
            &[],
        )
    }

    /// The address `index` as `!llvm.ptr` (through `i64`).
    pub fn index_to_pointer(&self, index: Val) -> Built<Val> {
        let i64_type = self.parse_type("i64")?;
        let address = self.value("arith.index_cast", &[index], i64_type, &[])?;
        self.value(
            "llvm.inttoptr",
            &[address],
            self.parse_type("!llvm.ptr")?,
            &[],
        )
    }

    pub fn poison(&self, ty: Type<'c>) -> Built<Val> {
        self.value("ub.poison", &[], ty, &[])
    }

    /// `arith.cmpi <predicate>` (0 eq, 1 ne, 2 slt, 3 sle, 4 sgt, 5 sge,
    /// 6 ult, 7 ule, 8 ugt, 9 uge).
    pub fn cmpi(&self, predicate: i64, lhs: Val, rhs: Val) -> Built<Val> {
        let i1 = self.parse_type("i1")?;
        let i64_type = self.parse_type("i64")?;
        let attribute = IntegerAttribute::new(i64_type, predicate).into();
        self.value("arith.cmpi", &[lhs, rhs], i1, &[("predicate", attribute)])
    }

    pub fn segment_sizes(&self, sizes: &[i32]) -> Built<Attribute<'c>> {
        let text = sizes
            .iter()
            .map(i32::to_string)
            .collect::<Vec<_>>()
            .join(", ");
        Attribute::parse(self.context(), &format!("array<i32: {text}>"))
            .ok_or_else(|| self.fail("cannot build operandSegmentSizes"))
    }

    /// `scf.parallel (%i) = (0) to (%count) step (1)`; returns the loop and
    /// its body's terminator (`scf.reduce`), before which the body goes.
    pub fn parallel(&self, count: Val) -> Built<(Op, Op, Val)> {
        let zero = self.index(0)?;
        let one = self.index(1)?;
        let body = Block::new(&[(self.index_type(), self.location)]);
        let region = Region::new();
        region.append_block(body);
        let segments = self.segment_sizes(&[1, 1, 1, 0])?;
        let parallel = self.op_with_regions(
            "scf.parallel",
            &[zero, count, one],
            &[],
            &[("operandSegmentSizes", segments)],
            vec![region],
        )?;
        let Some(block) = parallel.entry_block(0) else {
            return Err(self.fail("scf.parallel without a body"));
        };
        let reduce = self.append_to(block, "scf.reduce", &[])?;
        let rank = block
            .arguments()
            .first()
            .copied()
            .ok_or_else(|| self.fail("no induction variable"))?;
        Ok((parallel, reduce, rank))
    }

    /// The kernel `out[i] = values[indices[i]]` for `i < count` (the keys
    /// of a sort in sorted order, from its permutation).
    pub fn gather(&self, values: Val, indices: Val, count: Val, out: Val) -> Built<()> {
        let (_, end, i) = self.parallel(count)?;
        let body = Builder::before(end).at_location_of(end);
        let position = body.load(indices, i)?;
        let value = body.load(values, position)?;
        body.store(value, out, i)
    }

    /// `scf.for %i = %lower to %upper step %step` without results; returns
    /// the loop, `%i` and the body's `scf.yield`, before which the body goes.
    pub fn for_loop(&self, lower: Val, upper: Val, step: Val) -> Built<(Op, Val, Op)> {
        let region = Region::new();
        region.append_block(Block::new(&[(self.index_type(), self.location)]));
        let for_op =
            self.op_with_regions("scf.for", &[lower, upper, step], &[], &[], vec![region])?;
        let body = for_op
            .entry_block(0)
            .ok_or_else(|| self.fail("scf.for without a body"))?;
        let end = self.append_to(body, "scf.yield", &[])?;
        Ok((for_op, body.arguments()[0], end))
    }

    /// `scf.if %condition { then } [else { else }]` with results `types`;
    /// returns the op and the terminators (`scf.yield`) of its regions.
    pub fn if_op(
        &self,
        condition: Val,
        types: &[Type<'c>],
        with_else: bool,
    ) -> Built<(Op, Op, Option<Op>)> {
        let mut regions = vec![];
        for _ in 0..if with_else { 2 } else { 1 } {
            let region = Region::new();
            region.append_block(Block::new(&[]));
            regions.push(region);
        }
        if !with_else {
            regions.push(Region::new());
        }
        let op = self.op_with_regions("scf.if", &[condition], types, &[], regions)?;
        let mut terminators = vec![];
        for index in 0..2 {
            if let Some(block) = op.entry_block(index) {
                terminators.push(self.append_to(block, "scf.yield", &[])?);
            }
        }
        let then_yield = terminators
            .first()
            .copied()
            .ok_or_else(|| self.fail("scf.if without a then region"))?;
        Ok((op, then_yield, terminators.get(1).copied()))
    }
}

/// The element type of a rank-1 memref value.
pub(crate) fn memref_element_type<'c>(memref: Val) -> Built<Type<'c>> {
    let ty = memref.melior_type();
    MemRefType::try_from(ty)
        .map(|memref| memref.element())
        .map_err(|_| PassFailure)
}
