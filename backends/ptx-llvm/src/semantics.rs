//! The meaning of PTX's lane-local instructions as LLVM IR on scalars:
//! one lane's arithmetic, logic, comparisons and conversions. Both
//! translations use it: the CPU wave emulation calls it inside its lane
//! loops, and the AMDGPU translation per thread. Memory, control flow and
//! warp-wide instructions are the translators' own.
//!
//! [`signature`] says which PTX type each operand is read or written as;
//! [`Semantics::compute`] takes the sources as LLVM values of those types
//! and returns the destinations. PTX's defined results where LLVM's would
//! be poison are kept: shifts by the width or more, division by zero,
//! float-to-integer conversions that saturate (NaN gives 0).

use crate::TranslateError;
use inkwell::builder::Builder;
use inkwell::context::Context;
use inkwell::intrinsics::Intrinsic;
use inkwell::module::Module;
use inkwell::types::{BasicTypeEnum, IntType};
use inkwell::values::{BasicValueEnum, FloatValue, IntValue};
use inkwell::{FloatPredicate, IntPredicate};
use pgpu_ptx::ir::*;
use pgpu_ptx::{ErrorKind, PtxError};

type Result<T> = std::result::Result<T, TranslateError>;

/// The PTX types an instruction's destinations and sources are read and
/// written as.
#[derive(Clone, Debug, PartialEq)]
pub struct Signature {
    /// Destination types (a `d|p` pair gives two).
    pub dests: Vec<ScalarType>,
    /// Source types, in operand order.
    pub sources: Vec<ScalarType>,
}

pub(crate) fn unsupported(instruction: &Instruction, what: &str) -> TranslateError {
    TranslateError::Ptx(PtxError::new(
        ErrorKind::UnsupportedInstruction,
        format!("`{}` {what} is not translated", instruction.opcode),
        instruction.span,
    ))
}

/// The double-width type of `mul.wide` and `mad.wide`.
fn wide(ty: ScalarType) -> Option<ScalarType> {
    use ScalarType::*;
    Some(match ty {
        S16 => S32,
        U16 => U32,
        S32 => S64,
        U32 => U64,
        B16 => B32,
        B32 => B64,
        _ => return None,
    })
}

/// The signature of a lane-local instruction; None for the instructions
/// the translators handle themselves (memory, control, warp, `mov`).
pub fn signature(instruction: &Instruction) -> Result<Option<Signature>> {
    use Opcode::*;
    use ScalarType::{Pred, U32};
    let types = instruction.types();
    let ty = match instruction.ty() {
        Some(ty) => ty,
        None => return Ok(None),
    };
    let n = instruction.operands.len();
    let same = |count: usize| Signature {
        dests: vec![ty],
        sources: vec![ty; count],
    };
    let signature = match instruction.opcode {
        Add | Sub | Min | Max | And | Or | Xor | Div | Rem | Copysign | Addc | Subc => same(2),
        Mul | Mul24 if instruction.has(Flag::Wide) => Signature {
            dests: vec![wide(ty).ok_or_else(|| unsupported(instruction, "with this type"))?],
            sources: vec![ty, ty],
        },
        Mul | Mul24 => same(2),
        Mad | Madc if instruction.has(Flag::Wide) => {
            let w = wide(ty).ok_or_else(|| unsupported(instruction, "with this type"))?;
            Signature {
                dests: vec![w],
                sources: vec![ty, ty, w],
            }
        }
        Mad | Madc | Mad24 | Sad | Fma => same(3),
        Abs | Neg | Not | Cnot | Rcp | Sqrt | Rsqrt | Sin | Cos | Lg2 | Ex2 | Tanh | Brev => {
            same(1)
        }
        Popc | Clz | Bfind => Signature {
            dests: vec![U32],
            sources: vec![ty],
        },
        Bfe => Signature {
            dests: vec![ty],
            sources: vec![ty, U32, U32],
        },
        Bfi => Signature {
            dests: vec![ty],
            sources: vec![ty, ty, U32, U32],
        },
        Shl | Shr => Signature {
            dests: vec![ty],
            sources: vec![ty, U32],
        },
        Shf => Signature {
            dests: vec![ty],
            sources: vec![ty, ty, U32],
        },
        Lop3 => same(4),
        Prmt => same(3),
        Selp => Signature {
            dests: vec![ty],
            sources: vec![ty, ty, Pred],
        },
        Slct => Signature {
            dests: vec![types[0]],
            sources: vec![types[0], types[0], ty],
        },
        Setp => {
            let dests = if matches!(instruction.operands.first(), Some(Operand::Pair(..))) {
                vec![Pred, Pred]
            } else {
                vec![Pred]
            };
            let mut sources = vec![ty, ty];
            if n == 4 {
                sources.push(Pred);
            }
            Signature { dests, sources }
        }
        Set => {
            let mut sources = vec![ty, ty];
            if n == 4 {
                sources.push(Pred);
            }
            Signature {
                dests: vec![types[0]],
                sources,
            }
        }
        Cvt => Signature {
            dests: vec![types[0]],
            sources: vec![ty],
        },
        Testp => Signature {
            dests: vec![Pred],
            sources: vec![ty],
        },
        _ => return Ok(None),
    };
    Ok(Some(signature))
}

/// The LLVM type of PTX type `ty`'s values ([`Semantics::value_type`]).
pub fn value_type(context: &Context, ty: ScalarType) -> BasicTypeEnum<'_> {
    match ty {
        ScalarType::F16 => context.f16_type().into(),
        ScalarType::Bf16 => context.bf16_type().into(),
        ScalarType::F32 => context.f32_type().into(),
        ScalarType::F64 => context.f64_type().into(),
        other => crate::int_type(context, other.bits()).into(),
    }
}

/// Calls an LLVM intrinsic (overloaded on `types`).
pub(crate) fn call_intrinsic<'ctx>(
    module: &Module<'ctx>,
    builder: &Builder<'ctx>,
    name: &str,
    types: &[BasicTypeEnum<'ctx>],
    args: &[BasicValueEnum<'ctx>],
) -> Result<BasicValueEnum<'ctx>> {
    let intrinsic = Intrinsic::find(name)
        .ok_or_else(|| TranslateError::Llvm(format!("no intrinsic {name}")))?;
    let function = intrinsic
        .get_declaration(module, types)
        .ok_or_else(|| TranslateError::Llvm(format!("cannot declare {name}")))?;
    let args: Vec<_> = args.iter().map(|a| (*a).into()).collect();
    builder
        .build_call(function, &args, name)
        .map_err(llvm)?
        .try_as_basic_value()
        .basic()
        .ok_or_else(|| TranslateError::Llvm(format!("{name} returns nothing")))
}

/// Builds one lane's computations.
pub struct Semantics<'a, 'ctx> {
    /// The LLVM context.
    pub context: &'ctx Context,
    /// The module (for intrinsic declarations).
    pub module: &'a Module<'ctx>,
    /// Positioned where the computation goes.
    pub builder: &'a Builder<'ctx>,
}

fn llvm(error: inkwell::builder::BuilderError) -> TranslateError {
    TranslateError::Llvm(error.to_string())
}

impl<'ctx> Semantics<'_, 'ctx> {
    /// The LLVM type a PTX type's values have in computations: integers
    /// of its width (i1 for predicates), `half`, `bfloat`, `float`,
    /// `double` (the packed `.f16x2`/`.bf16x2` are not translated).
    pub fn value_type(&self, ty: ScalarType) -> BasicTypeEnum<'ctx> {
        value_type(self.context, ty)
    }

    fn int_type(&self, bits: u32) -> IntType<'ctx> {
        crate::int_type(self.context, bits)
    }

    fn call(
        &self,
        name: &str,
        types: &[BasicTypeEnum<'ctx>],
        args: &[BasicValueEnum<'ctx>],
    ) -> Result<BasicValueEnum<'ctx>> {
        call_intrinsic(self.module, self.builder, name, types, args)
    }

    fn int(&self, value: BasicValueEnum<'ctx>) -> IntValue<'ctx> {
        value.into_int_value()
    }

    fn float(&self, value: BasicValueEnum<'ctx>) -> FloatValue<'ctx> {
        value.into_float_value()
    }

    fn constant(&self, bits: u32, value: u64) -> IntValue<'ctx> {
        self.int_type(bits).const_int(value, false)
    }

    fn select(
        &self,
        condition: IntValue<'ctx>,
        a: BasicValueEnum<'ctx>,
        b: BasicValueEnum<'ctx>,
    ) -> Result<BasicValueEnum<'ctx>> {
        self.builder.build_select(condition, a, b, "").map_err(llvm)
    }

    /// Flushes a subnormal f32 to a zero of the same sign (`.ftz`).
    fn flush(&self, value: FloatValue<'ctx>) -> Result<FloatValue<'ctx>> {
        if value.get_type() != self.context.f32_type() {
            return Ok(value);
        }
        let abs = self.call("llvm.fabs", &[value.get_type().into()], &[value.into()])?;
        let tiny = self
            .builder
            .build_float_compare(
                FloatPredicate::OLT,
                abs.into_float_value(),
                self.context
                    .f32_type()
                    .const_float(f64::from(f32::MIN_POSITIVE)),
                "",
            )
            .map_err(llvm)?;
        let zero = self.call(
            "llvm.copysign",
            &[value.get_type().into()],
            &[self.context.f32_type().const_zero().into(), value.into()],
        )?;
        Ok(self.select(tiny, zero, value.into())?.into_float_value())
    }

    /// Clamps to [0, 1], NaN to 0 (`.sat` on floats).
    fn saturate(&self, value: FloatValue<'ctx>) -> Result<FloatValue<'ctx>> {
        let ty = value.get_type();
        let low = self.call(
            "llvm.maxnum",
            &[ty.into()],
            &[value.into(), ty.const_zero().into()],
        )?;
        let clamped = self.call(
            "llvm.minnum",
            &[ty.into()],
            &[low, ty.const_float(1.0).into()],
        )?;
        Ok(clamped.into_float_value())
    }

    /// The destinations of a lane-local instruction from its sources (typed
    /// as [`signature`] says).
    pub fn compute(
        &self,
        instruction: &Instruction,
        signature: &Signature,
        sources: &[BasicValueEnum<'ctx>],
    ) -> Result<Vec<BasicValueEnum<'ctx>>> {
        let ty = instruction
            .ty()
            .ok_or_else(|| unsupported(instruction, "without a type"))?;
        let class = ty.class();
        if matches!(ty, ScalarType::F16x2 | ScalarType::Bf16x2) {
            return Err(unsupported(instruction, &format!("on `.{ty}`")));
        }
        let ftz = instruction.has(Flag::Ftz);
        let mut sources = sources.to_vec();
        if ftz && class == TypeClass::Float {
            for (value, source_ty) in sources.iter_mut().zip(&signature.sources) {
                if *source_ty == ScalarType::F32 {
                    *value = self.flush(value.into_float_value())?.into();
                }
            }
        }
        let mut results = if class == TypeClass::Float
            && instruction.opcode != Opcode::Cvt
            && instruction.opcode != Opcode::Setp
            && instruction.opcode != Opcode::Set
            && instruction.opcode != Opcode::Testp
            && instruction.opcode != Opcode::Selp
            && instruction.opcode != Opcode::Slct
        {
            self.float_op(instruction, &sources)?
        } else {
            self.other_op(instruction, signature, &sources)?
        };
        if class == TypeClass::Float && instruction.opcode != Opcode::Cvt {
            for (value, dest_ty) in results.iter_mut().zip(&signature.dests) {
                if dest_ty.class() != TypeClass::Float {
                    continue;
                }
                if instruction.has(Flag::Sat) {
                    *value = self.saturate(value.into_float_value())?.into();
                }
                if ftz && *dest_ty == ScalarType::F32 {
                    *value = self.flush(value.into_float_value())?.into();
                }
            }
        }
        Ok(results)
    }

    fn float_op(
        &self,
        instruction: &Instruction,
        s: &[BasicValueEnum<'ctx>],
    ) -> Result<Vec<BasicValueEnum<'ctx>>> {
        use Opcode::*;
        let b = self.builder;
        let t: BasicTypeEnum = s[0].get_type();
        let f = |i: usize| self.float(s[i]);
        let value: BasicValueEnum = match instruction.opcode {
            Add => b.build_float_add(f(0), f(1), "").map_err(llvm)?.into(),
            Sub => b.build_float_sub(f(0), f(1), "").map_err(llvm)?.into(),
            Mul => b.build_float_mul(f(0), f(1), "").map_err(llvm)?.into(),
            // `mad.f32` without rounding was an unfused multiply-add on old
            // targets; with a rounding modifier it is fused like `fma`.
            Mad if !instruction.has(Flag::Rn)
                && !instruction.has(Flag::Rz)
                && !instruction.has(Flag::Rm)
                && !instruction.has(Flag::Rp) =>
            {
                let product = b.build_float_mul(f(0), f(1), "").map_err(llvm)?;
                b.build_float_add(product, f(2), "").map_err(llvm)?.into()
            }
            Fma | Mad => self.call("llvm.fma", &[t], &[s[0], s[1], s[2]])?,
            Div => b.build_float_div(f(0), f(1), "").map_err(llvm)?.into(),
            Rcp => {
                let one = f(0).get_type().const_float(1.0);
                b.build_float_div(one, f(0), "").map_err(llvm)?.into()
            }
            Sqrt => self.call("llvm.sqrt", &[t], &[s[0]])?,
            Rsqrt => {
                let root = self.call("llvm.sqrt", &[t], &[s[0]])?;
                let one = f(0).get_type().const_float(1.0);
                b.build_float_div(one, root.into_float_value(), "")
                    .map_err(llvm)?
                    .into()
            }
            Sin => self.call("llvm.sin", &[t], &[s[0]])?,
            Cos => self.call("llvm.cos", &[t], &[s[0]])?,
            Lg2 => self.call("llvm.log2", &[t], &[s[0]])?,
            Ex2 => self.call("llvm.exp2", &[t], &[s[0]])?,
            Tanh => self.call("llvm.tanh", &[t], &[s[0]])?,
            Abs => self.call("llvm.fabs", &[t], &[s[0]])?,
            Neg => b.build_float_neg(f(0), "").map_err(llvm)?.into(),
            // PTX min/max return the other operand when one is NaN
            // (minnum); `.NaN` propagates it (minimum).
            Min if instruction.has(Flag::NaN) => self.call("llvm.minimum", &[t], &[s[0], s[1]])?,
            Max if instruction.has(Flag::NaN) => self.call("llvm.maximum", &[t], &[s[0], s[1]])?,
            Min => self.call("llvm.minnum", &[t], &[s[0], s[1]])?,
            Max => self.call("llvm.maxnum", &[t], &[s[0], s[1]])?,
            // copysign d, a, b: b's magnitude with a's sign.
            Copysign => self.call("llvm.copysign", &[t], &[s[1], s[0]])?,
            _ => return Err(unsupported(instruction, "on floating-point types")),
        };
        Ok(vec![value])
    }

    fn other_op(
        &self,
        instruction: &Instruction,
        signature: &Signature,
        s: &[BasicValueEnum<'ctx>],
    ) -> Result<Vec<BasicValueEnum<'ctx>>> {
        use Opcode::*;
        let b = self.builder;
        let ty = instruction
            .ty()
            .ok_or_else(|| unsupported(instruction, "without a type"))?;
        let signed = ty.class() == TypeClass::Signed;
        let bits = ty.bits();
        let i = |k: usize| self.int(s[k]);
        let value: BasicValueEnum = match instruction.opcode {
            Add => b.build_int_add(i(0), i(1), "").map_err(llvm)?.into(),
            Sub => b.build_int_sub(i(0), i(1), "").map_err(llvm)?.into(),
            Mul | Mul24 | Mad | Mad24 | Madc => {
                return Ok(vec![self.multiply(instruction, s, signed)?]);
            }
            Sad => {
                let greater = b
                    .build_int_compare(
                        if signed {
                            IntPredicate::SGT
                        } else {
                            IntPredicate::UGT
                        },
                        i(0),
                        i(1),
                        "",
                    )
                    .map_err(llvm)?;
                let ab = b.build_int_sub(i(0), i(1), "").map_err(llvm)?;
                let ba = b.build_int_sub(i(1), i(0), "").map_err(llvm)?;
                let diff = self.select(greater, ab.into(), ba.into())?.into_int_value();
                b.build_int_add(diff, i(2), "").map_err(llvm)?.into()
            }
            Div | Rem => self.divide(instruction.opcode == Div, i(0), i(1), signed, bits)?,
            Min | Max => {
                let name = match (instruction.opcode == Min, signed) {
                    (true, true) => "llvm.smin",
                    (true, false) => "llvm.umin",
                    (false, true) => "llvm.smax",
                    (false, false) => "llvm.umax",
                };
                self.call(name, &[s[0].get_type()], &[s[0], s[1]])?
            }
            Abs => self.call(
                "llvm.abs",
                &[s[0].get_type()],
                &[s[0], self.context.bool_type().const_zero().into()],
            )?,
            Neg => b.build_int_neg(i(0), "").map_err(llvm)?.into(),
            And => b.build_and(i(0), i(1), "").map_err(llvm)?.into(),
            Or => b.build_or(i(0), i(1), "").map_err(llvm)?.into(),
            Xor => b.build_xor(i(0), i(1), "").map_err(llvm)?.into(),
            Not => b.build_not(i(0), "").map_err(llvm)?.into(),
            Cnot => {
                let zero = b
                    .build_int_compare(IntPredicate::EQ, i(0), i(0).get_type().const_zero(), "")
                    .map_err(llvm)?;
                b.build_int_z_extend(zero, i(0).get_type(), "")
                    .map_err(llvm)?
                    .into()
            }
            Shl | Shr => self.shift(instruction.opcode == Shl, i(0), i(1), signed, bits)?,
            Shf => {
                // shf.l: the high half of (b:a) << n; shf.r: the low half of
                // (b:a) >> n. n is taken mod 32 (.wrap) or clamped to 32.
                let left = instruction.has(Flag::L);
                let width = self.constant(32, 32);
                let (amount, big) = if instruction.has(Flag::Clamp) {
                    let big = b
                        .build_int_compare(IntPredicate::UGE, i(2), width, "")
                        .map_err(llvm)?;
                    (i(2), Some(big))
                } else {
                    (
                        b.build_and(i(2), self.constant(32, 31), "").map_err(llvm)?,
                        None,
                    )
                };
                let name = if left { "llvm.fshl" } else { "llvm.fshr" };
                let shifted = self.call(name, &[s[0].get_type()], &[s[1], s[0], amount.into()])?;
                match big {
                    Some(big) => self.select(big, if left { s[0] } else { s[1] }, shifted)?,
                    None => shifted,
                }
            }
            Lop3 => {
                let lut = match instruction.operands.get(4) {
                    Some(Operand::Immediate(value)) => value.bits() as u8,
                    _ => return Err(unsupported(instruction, "with a non-constant truth table")),
                };
                let mut result = i(0).get_type().const_zero();
                for minterm in 0..8u8 {
                    if lut & (1 << minterm) == 0 {
                        continue;
                    }
                    let mut term = i(0).get_type().const_all_ones();
                    for (k, bit) in [(0usize, 4u8), (1, 2), (2, 1)] {
                        let operand = if minterm & bit != 0 {
                            i(k)
                        } else {
                            b.build_not(i(k), "").map_err(llvm)?
                        };
                        term = b.build_and(term, operand, "").map_err(llvm)?;
                    }
                    result = b.build_or(result, term, "").map_err(llvm)?;
                }
                result.into()
            }
            Prmt => self.permute(instruction, i(0), i(1), i(2))?,
            Popc => {
                let count = self.call("llvm.ctpop", &[s[0].get_type()], &[s[0]])?;
                self.resize(count.into_int_value(), 32, false)?.into()
            }
            Clz => {
                let count = self.call(
                    "llvm.ctlz",
                    &[s[0].get_type()],
                    &[s[0], self.context.bool_type().const_zero().into()],
                )?;
                self.resize(count.into_int_value(), 32, false)?.into()
            }
            Brev => self.call("llvm.bitreverse", &[s[0].get_type()], &[s[0]])?,
            Bfind => {
                // The position of the most significant non-sign bit, or
                // 0xffffffff; `.shiftamt`: the left shift that moves it to
                // the top.
                let value = if signed {
                    let negative = b
                        .build_int_compare(
                            IntPredicate::SLT,
                            i(0),
                            i(0).get_type().const_zero(),
                            "",
                        )
                        .map_err(llvm)?;
                    let inverted = b.build_not(i(0), "").map_err(llvm)?;
                    self.select(negative, inverted.into(), s[0])?
                        .into_int_value()
                } else {
                    i(0)
                };
                let zeros = self.call(
                    "llvm.ctlz",
                    &[value.get_type().into()],
                    &[value.into(), self.context.bool_type().const_zero().into()],
                )?;
                let zeros = self.resize(zeros.into_int_value(), 32, false)?;
                let none = b
                    .build_int_compare(IntPredicate::EQ, value, value.get_type().const_zero(), "")
                    .map_err(llvm)?;
                let found = if instruction.has(Flag::Shiftamt) {
                    zeros
                } else {
                    b.build_int_sub(self.constant(32, u64::from(bits) - 1), zeros, "")
                        .map_err(llvm)?
                };
                self.select(none, self.constant(32, 0xffff_ffff).into(), found.into())?
            }
            Bfe => self.extract_field(i(0), i(1), i(2), signed, bits)?,
            Bfi => {
                let pos = b
                    .build_and(i(2), self.constant(32, 0xff), "")
                    .map_err(llvm)?;
                let len = b
                    .build_and(i(3), self.constant(32, 0xff), "")
                    .map_err(llvm)?;
                let pos_w = self.resize(pos, bits, false)?;
                let len_w = self.resize(len, bits, false)?;
                let ones = i(0).get_type().const_all_ones();
                let width = self.constant(bits, u64::from(bits));
                let full = b
                    .build_int_compare(IntPredicate::UGE, len_w, width, "")
                    .map_err(llvm)?;
                let low_mask = b.build_left_shift(ones, len_w, "").map_err(llvm)?;
                let low_mask = b.build_not(low_mask, "").map_err(llvm)?;
                let low_mask = self
                    .select(full, ones.into(), low_mask.into())?
                    .into_int_value();
                let mask = b.build_left_shift(low_mask, pos_w, "").map_err(llvm)?;
                let inserted = b.build_left_shift(i(0), pos_w, "").map_err(llvm)?;
                let kept = b
                    .build_and(i(1), b.build_not(mask, "").map_err(llvm)?, "")
                    .map_err(llvm)?;
                let new = b
                    .build_or(kept, b.build_and(inserted, mask, "").map_err(llvm)?, "")
                    .map_err(llvm)?;
                let outside = b
                    .build_int_compare(IntPredicate::UGE, pos_w, width, "")
                    .map_err(llvm)?;
                self.select(outside, s[1], new.into())?
            }
            Selp => self.select(i(2), s[0], s[1])?,
            Slct => {
                let negative = match s[2] {
                    BasicValueEnum::FloatValue(c) => b
                        .build_float_compare(FloatPredicate::OLT, c, c.get_type().const_zero(), "")
                        .map_err(llvm)?,
                    other => b
                        .build_int_compare(
                            IntPredicate::SLT,
                            other.into_int_value(),
                            other.into_int_value().get_type().const_zero(),
                            "",
                        )
                        .map_err(llvm)?,
                };
                self.select(negative, s[1], s[0])?
            }
            Setp | Set => return self.compare(instruction, signature, s),
            Cvt => self.convert(instruction, signature, s[0])?,
            Testp => match s[0] {
                BasicValueEnum::FloatValue(value) => self.test_class(instruction, value)?,
                _ => return Err(unsupported(instruction, "on an integer type")),
            },
            Addc | Subc => return Err(unsupported(instruction, "(carry chains)")),
            _ => return Err(unsupported(instruction, "here")),
        };
        Ok(vec![value])
    }

    /// Zero- or sign-extends or truncates to `bits`.
    pub fn resize(&self, value: IntValue<'ctx>, bits: u32, signed: bool) -> Result<IntValue<'ctx>> {
        let have = value.get_type().get_bit_width();
        let ty = self.int_type(bits);
        let b = self.builder;
        Ok(if have == bits {
            value
        } else if have > bits {
            b.build_int_truncate(value, ty, "").map_err(llvm)?
        } else if signed {
            b.build_int_s_extend(value, ty, "").map_err(llvm)?
        } else {
            b.build_int_z_extend(value, ty, "").map_err(llvm)?
        })
    }

    fn multiply(
        &self,
        instruction: &Instruction,
        s: &[BasicValueEnum<'ctx>],
        signed: bool,
    ) -> Result<BasicValueEnum<'ctx>> {
        let b = self.builder;
        let (mut x, mut y) = (self.int(s[0]), self.int(s[1]));
        let bits = x.get_type().get_bit_width();
        let is24 = matches!(instruction.opcode, Opcode::Mul24 | Opcode::Mad24);
        if is24 {
            // The low 24 bits of each operand, extended; the 48-bit product.
            x = self.resize(self.resize(x, 24, false)?, 64, signed)?;
            y = self.resize(self.resize(y, 24, false)?, 64, signed)?;
        }
        let product = if instruction.has(Flag::Wide) || instruction.has(Flag::Hi) || is24 {
            let double = if is24 { 64 } else { bits * 2 };
            let xw = self.resize(x, double, signed)?;
            let yw = self.resize(y, double, signed)?;
            let full = b.build_int_mul(xw, yw, "").map_err(llvm)?;
            if instruction.has(Flag::Wide) {
                full
            } else if instruction.has(Flag::Hi) {
                let shift = if is24 { 16 } else { u64::from(bits) };
                let high = b
                    .build_right_shift(full, self.constant(double, shift), false, "")
                    .map_err(llvm)?;
                self.resize(high, bits, false)?
            } else {
                self.resize(full, bits, false)?
            }
        } else {
            b.build_int_mul(x, y, "").map_err(llvm)?
        };
        if matches!(instruction.opcode, Opcode::Mul | Opcode::Mul24) {
            return Ok(product.into());
        }
        if instruction.has(Flag::Cc) || instruction.opcode == Opcode::Madc {
            return Err(unsupported(instruction, "(carry chains)"));
        }
        let addend = self.int(s[2]);
        Ok(b.build_int_add(
            product,
            self.resize(addend, product.get_type().get_bit_width(), signed)?,
            "",
        )
        .map_err(llvm)?
        .into())
    }

    fn divide(
        &self,
        quotient: bool,
        x: IntValue<'ctx>,
        y: IntValue<'ctx>,
        signed: bool,
        bits: u32,
    ) -> Result<BasicValueEnum<'ctx>> {
        // Division by zero gives all ones (quotient) or the dividend
        // (remainder), and MIN / -1 wraps, as on the GPU; LLVM's division
        // would be undefined for both.
        let b = self.builder;
        let ty = x.get_type();
        let zero = b
            .build_int_compare(IntPredicate::EQ, y, ty.const_zero(), "")
            .map_err(llvm)?;
        let mut bad = zero;
        if signed {
            let min = self.constant(bits, 1u64 << (bits - 1));
            let is_min = b
                .build_int_compare(IntPredicate::EQ, x, min, "")
                .map_err(llvm)?;
            let is_minus_one = b
                .build_int_compare(IntPredicate::EQ, y, ty.const_all_ones(), "")
                .map_err(llvm)?;
            let overflow = b.build_and(is_min, is_minus_one, "").map_err(llvm)?;
            bad = b.build_or(bad, overflow, "").map_err(llvm)?;
        }
        let safe = self
            .select(bad, ty.const_int(1, false).into(), y.into())?
            .into_int_value();
        let result = match (quotient, signed) {
            (true, true) => b.build_int_signed_div(x, safe, ""),
            (true, false) => b.build_int_unsigned_div(x, safe, ""),
            (false, true) => b.build_int_signed_rem(x, safe, ""),
            (false, false) => b.build_int_unsigned_rem(x, safe, ""),
        }
        .map_err(llvm)?;
        // With the divisor replaced by 1, MIN / -1 gives MIN (the wrapped
        // quotient) and MIN % -1 gives 0, as PTX defines them.
        let on_zero: BasicValueEnum = if quotient {
            ty.const_all_ones().into()
        } else {
            x.into()
        };
        self.select(zero, on_zero, result.into())
    }

    fn shift(
        &self,
        left: bool,
        x: IntValue<'ctx>,
        amount: IntValue<'ctx>,
        signed: bool,
        bits: u32,
    ) -> Result<BasicValueEnum<'ctx>> {
        // Amounts of the width or more give 0 (or the sign, for shr.s).
        let b = self.builder;
        let amount32 = self.resize(amount, 32, false)?;
        let big = b
            .build_int_compare(
                IntPredicate::UGE,
                amount32,
                self.constant(32, u64::from(bits)),
                "",
            )
            .map_err(llvm)?;
        let clamped = self
            .select(
                big,
                self.constant(32, u64::from(bits) - 1).into(),
                amount32.into(),
            )?
            .into_int_value();
        let n = self.resize(clamped, bits, false)?;
        Ok(if left {
            let shifted = b.build_left_shift(x, n, "").map_err(llvm)?;
            self.select(big, x.get_type().const_zero().into(), shifted.into())?
        } else if signed {
            b.build_right_shift(x, n, true, "").map_err(llvm)?.into()
        } else {
            let shifted = b.build_right_shift(x, n, false, "").map_err(llvm)?;
            self.select(big, x.get_type().const_zero().into(), shifted.into())?
        })
    }

    fn extract_field(
        &self,
        x: IntValue<'ctx>,
        pos: IntValue<'ctx>,
        len: IntValue<'ctx>,
        signed: bool,
        bits: u32,
    ) -> Result<BasicValueEnum<'ctx>> {
        // bfe: bits [pos, pos + len) of x, zero- or sign-extended; pos and
        // len use their low 8 bits; bits past the top read as the sign.
        let b = self.builder;
        let pos = b
            .build_and(pos, self.constant(32, 0xff), "")
            .map_err(llvm)?;
        let len = b
            .build_and(len, self.constant(32, 0xff), "")
            .map_err(llvm)?;
        let width = self.constant(32, u64::from(bits));
        let pos_big = b
            .build_int_compare(IntPredicate::UGE, pos, width, "")
            .map_err(llvm)?;
        let top = self.constant(32, u64::from(bits) - 1);
        let pos_c = self
            .select(pos_big, top.into(), pos.into())?
            .into_int_value();
        let shifted = b
            .build_right_shift(x, self.resize(pos_c, bits, false)?, signed, "")
            .map_err(llvm)?;
        let shifted: IntValue = if signed {
            shifted
        } else {
            self.select(pos_big, x.get_type().const_zero().into(), shifted.into())?
                .into_int_value()
        };
        let len_big = b
            .build_int_compare(IntPredicate::UGE, len, width, "")
            .map_err(llvm)?;
        let keep = self
            .select(len_big, width.into(), len.into())?
            .into_int_value();
        // Move the field to the top, then back (arithmetically for .s).
        let up = b.build_int_sub(width, keep, "").map_err(llvm)?;
        let up_big = b
            .build_int_compare(IntPredicate::UGE, up, width, "")
            .map_err(llvm)?;
        let up_c = self.select(up_big, top.into(), up.into())?.into_int_value();
        let up_w = self.resize(up_c, bits, false)?;
        let raised = b.build_left_shift(shifted, up_w, "").map_err(llvm)?;
        let lowered = b
            .build_right_shift(raised, up_w, signed, "")
            .map_err(llvm)?;
        let empty = b
            .build_int_compare(IntPredicate::EQ, len, self.constant(32, 0), "")
            .map_err(llvm)?;
        self.select(empty, x.get_type().const_zero().into(), lowered.into())
    }

    fn permute(
        &self,
        instruction: &Instruction,
        a: IntValue<'ctx>,
        bv: IntValue<'ctx>,
        c: IntValue<'ctx>,
    ) -> Result<BasicValueEnum<'ctx>> {
        if instruction
            .one_of(&[
                Flag::F4e,
                Flag::B4e,
                Flag::Rc8,
                Flag::Ecl,
                Flag::Ecr,
                Flag::Rc16,
            ])
            .is_some()
        {
            return Err(unsupported(instruction, "with a mode"));
        }
        // Each result byte k takes byte (c >> 4k) & 7 of b:a, or that byte's
        // sign replicated when bit 3 of the selector is set.
        let b = self.builder;
        let i64t = self.int_type(64);
        let pair = b
            .build_or(
                b.build_left_shift(self.resize(bv, 64, false)?, i64t.const_int(32, false), "")
                    .map_err(llvm)?,
                self.resize(a, 64, false)?,
                "",
            )
            .map_err(llvm)?;
        let mut result = self.constant(32, 0);
        for k in 0..4u64 {
            let selector = b
                .build_right_shift(c, self.constant(32, 4 * k), false, "")
                .map_err(llvm)?;
            let index = b
                .build_and(selector, self.constant(32, 7), "")
                .map_err(llvm)?;
            let shift = b
                .build_int_mul(self.resize(index, 64, false)?, i64t.const_int(8, false), "")
                .map_err(llvm)?;
            let byte = self.resize(
                b.build_right_shift(pair, shift, false, "").map_err(llvm)?,
                8,
                false,
            )?;
            let replicate = b
                .build_and(selector, self.constant(32, 8), "")
                .map_err(llvm)?;
            let replicate = b
                .build_int_compare(IntPredicate::NE, replicate, self.constant(32, 0), "")
                .map_err(llvm)?;
            let sign = b
                .build_right_shift(byte, self.constant(8, 7), true, "")
                .map_err(llvm)?;
            let byte = self
                .select(replicate, sign.into(), byte.into())?
                .into_int_value();
            let placed = b
                .build_left_shift(self.resize(byte, 32, false)?, self.constant(32, 8 * k), "")
                .map_err(llvm)?;
            result = b.build_or(result, placed, "").map_err(llvm)?;
        }
        Ok(result.into())
    }

    fn compare(
        &self,
        instruction: &Instruction,
        signature: &Signature,
        s: &[BasicValueEnum<'ctx>],
    ) -> Result<Vec<BasicValueEnum<'ctx>>> {
        use Flag::*;
        let b = self.builder;
        let ty = instruction
            .ty()
            .ok_or_else(|| unsupported(instruction, "without a type"))?;
        let cmp = instruction
            .one_of(&[
                Eq, Ne, Lt, Le, Gt, Ge, Lo, Ls, Hi, Hs, Equ, Neu, Ltu, Leu, Gtu, Geu, Num, Nan,
            ])
            .ok_or_else(|| unsupported(instruction, "without a comparison"))?;
        let result = if ty.class() == TypeClass::Float {
            let predicate = match cmp {
                Eq => FloatPredicate::OEQ,
                Ne => FloatPredicate::ONE,
                Lt => FloatPredicate::OLT,
                Le => FloatPredicate::OLE,
                Gt => FloatPredicate::OGT,
                Ge => FloatPredicate::OGE,
                Equ => FloatPredicate::UEQ,
                Neu => FloatPredicate::UNE,
                Ltu => FloatPredicate::ULT,
                Leu => FloatPredicate::ULE,
                Gtu => FloatPredicate::UGT,
                Geu => FloatPredicate::UGE,
                Num => FloatPredicate::ORD,
                Nan => FloatPredicate::UNO,
                _ => return Err(unsupported(instruction, "with this comparison on floats")),
            };
            b.build_float_compare(predicate, self.float(s[0]), self.float(s[1]), "")
                .map_err(llvm)?
        } else {
            let signed = ty.class() == TypeClass::Signed;
            let predicate = match cmp {
                Eq => IntPredicate::EQ,
                Ne => IntPredicate::NE,
                Lt if signed => IntPredicate::SLT,
                Le if signed => IntPredicate::SLE,
                Gt if signed => IntPredicate::SGT,
                Ge if signed => IntPredicate::SGE,
                Lt | Lo => IntPredicate::ULT,
                Le | Ls => IntPredicate::ULE,
                Gt | Hi => IntPredicate::UGT,
                Ge | Hs => IntPredicate::UGE,
                _ => return Err(unsupported(instruction, "with this comparison on integers")),
            };
            b.build_int_compare(predicate, self.int(s[0]), self.int(s[1]), "")
                .map_err(llvm)?
        };
        let combine = |value: IntValue<'ctx>| -> Result<IntValue<'ctx>> {
            let Some(other) = s.get(2) else {
                return Ok(value);
            };
            let other = self.int(*other);
            Ok(match instruction.one_of(&[And, Or, Xor]) {
                Some(And) => b.build_and(value, other, "").map_err(llvm)?,
                Some(Or) => b.build_or(value, other, "").map_err(llvm)?,
                Some(Xor) => b.build_xor(value, other, "").map_err(llvm)?,
                _ => {
                    return Err(unsupported(
                        instruction,
                        "with a predicate operand but no boolean operation",
                    ));
                }
            })
        };
        let first = combine(result)?;
        if instruction.opcode == Opcode::Set {
            let dest = signature.dests[0];
            let value: BasicValueEnum = if dest == ScalarType::F32 {
                let one = self.context.f32_type().const_float(1.0);
                self.select(
                    first,
                    one.into(),
                    self.context.f32_type().const_zero().into(),
                )?
            } else {
                let ty = self.int_type(dest.bits());
                self.select(first, ty.const_all_ones().into(), ty.const_zero().into())?
            };
            return Ok(vec![value]);
        }
        let mut results = vec![first.into()];
        if signature.dests.len() == 2 {
            let inverted = b.build_not(result, "").map_err(llvm)?;
            results.push(combine(inverted)?.into());
        }
        Ok(results)
    }

    fn convert(
        &self,
        instruction: &Instruction,
        signature: &Signature,
        value: BasicValueEnum<'ctx>,
    ) -> Result<BasicValueEnum<'ctx>> {
        use Flag::*;
        let b = self.builder;
        let (to, from) = (signature.dests[0], signature.sources[0]);
        let rounding = instruction.one_of(&[Rn, Rz, Rm, Rp, Rna, Rni, Rzi, Rmi, Rpi]);
        let to_type = self.value_type(to);
        let sat = instruction.has(Sat);
        Ok(match (from.class(), to.class()) {
            (TypeClass::Float, TypeClass::Float) => {
                let mut v = value.into_float_value();
                let integral = match rounding {
                    Some(Rni) => Some("llvm.roundeven"),
                    Some(Rzi) => Some("llvm.trunc"),
                    Some(Rmi) => Some("llvm.floor"),
                    Some(Rpi) => Some("llvm.ceil"),
                    None | Some(Rn) => None,
                    _ => return Err(unsupported(instruction, "with this rounding")),
                };
                if from.bits() > to.bits() {
                    v = b
                        .build_float_trunc(v, to_type.into_float_type(), "")
                        .map_err(llvm)?;
                } else if from.bits() < to.bits() {
                    v = b
                        .build_float_ext(v, to_type.into_float_type(), "")
                        .map_err(llvm)?;
                }
                if let Some(name) = integral {
                    v = self.call(name, &[to_type], &[v.into()])?.into_float_value();
                }
                if sat {
                    v = self.saturate(v)?;
                }
                if instruction.has(Ftz) {
                    v = self.flush(v)?;
                }
                v.into()
            }
            (TypeClass::Float, _) => {
                // Saturating (NaN gives 0), after rounding to an integer.
                let name = match rounding {
                    Some(Rni) => Some("llvm.roundeven"),
                    Some(Rmi) => Some("llvm.floor"),
                    Some(Rpi) => Some("llvm.ceil"),
                    Some(Rzi) | None => None,
                    _ => return Err(unsupported(instruction, "with this rounding")),
                };
                let mut v = value;
                if let Some(name) = name {
                    v = self.call(name, &[v.get_type()], &[v])?;
                }
                let sat_name = if to.class() == TypeClass::Signed {
                    "llvm.fptosi.sat"
                } else {
                    "llvm.fptoui.sat"
                };
                self.call(sat_name, &[to_type, v.get_type()], &[v])?
            }
            (_, TypeClass::Float) => {
                if !matches!(rounding, None | Some(Rn)) {
                    return Err(unsupported(instruction, "with this rounding"));
                }
                let v = value.into_int_value();
                let f = if from.class() == TypeClass::Signed {
                    b.build_signed_int_to_float(v, to_type.into_float_type(), "")
                } else {
                    b.build_unsigned_int_to_float(v, to_type.into_float_type(), "")
                }
                .map_err(llvm)?;
                f.into()
            }
            _ => {
                let v = value.into_int_value();
                let from_signed = from.class() == TypeClass::Signed;
                if sat && to.bits() <= from.bits() {
                    // Clamp to the destination's range.
                    let to_signed = to.class() == TypeClass::Signed;
                    let (low, high): (i128, i128) = if to_signed {
                        (-(1i128 << (to.bits() - 1)), (1i128 << (to.bits() - 1)) - 1)
                    } else {
                        (0, (1i128 << to.bits()) - 1)
                    };
                    let bits = from.bits();
                    let (min, max) = if from_signed {
                        ("llvm.smax", "llvm.smin")
                    } else {
                        ("llvm.umax", "llvm.umin")
                    };
                    let low_c = if from_signed || low >= 0 {
                        self.constant(bits, low as u64)
                    } else {
                        self.constant(bits, 0)
                    };
                    let high_c = self.constant(bits, high as u64);
                    let clamped =
                        self.call(min, &[v.get_type().into()], &[v.into(), low_c.into()])?;
                    let clamped =
                        self.call(max, &[v.get_type().into()], &[clamped, high_c.into()])?;
                    self.resize(clamped.into_int_value(), to.bits(), false)?
                        .into()
                } else {
                    self.resize(v, to.bits(), from_signed)?.into()
                }
            }
        })
    }

    fn test_class(
        &self,
        instruction: &Instruction,
        value: FloatValue<'ctx>,
    ) -> Result<BasicValueEnum<'ctx>> {
        use Flag::*;
        let b = self.builder;
        let ty = value.get_type();
        let abs = self
            .call("llvm.fabs", &[ty.into()], &[value.into()])?
            .into_float_value();
        let inf = ty.const_float(f64::INFINITY);
        let min_normal = if ty == self.context.f32_type() {
            f64::from(f32::MIN_POSITIVE)
        } else {
            f64::MIN_POSITIVE
        };
        let min_normal = ty.const_float(min_normal);
        let result =
            match instruction.one_of(&[Finite, Infinite, Number, Notanumber, Normal, Subnormal]) {
                Some(Finite) => b.build_float_compare(FloatPredicate::OLT, abs, inf, ""),
                Some(Infinite) => b.build_float_compare(FloatPredicate::OEQ, abs, inf, ""),
                Some(Number) => b.build_float_compare(FloatPredicate::ORD, value, value, ""),
                Some(Notanumber) => b.build_float_compare(FloatPredicate::UNO, value, value, ""),
                Some(Normal) => {
                    let low = b
                        .build_float_compare(FloatPredicate::OGE, abs, min_normal, "")
                        .map_err(llvm)?;
                    let high = b
                        .build_float_compare(FloatPredicate::OLT, abs, inf, "")
                        .map_err(llvm)?;
                    b.build_and(low, high, "")
                }
                Some(Subnormal) => {
                    let low = b
                        .build_float_compare(FloatPredicate::OGT, abs, ty.const_zero(), "")
                        .map_err(llvm)?;
                    let high = b
                        .build_float_compare(FloatPredicate::OLT, abs, min_normal, "")
                        .map_err(llvm)?;
                    b.build_and(low, high, "")
                }
                _ => return Err(unsupported(instruction, "without a class")),
            }
            .map_err(llvm)?;
        Ok(result.into())
    }
}
