//! Combining kinds as MLIR: identities, `a op b`, and result fix-ups.
//!
//! The semantics are the CPU runtime's (backends/runtime/src/elem.rs):
//! integers wrap at their width, `min`/`max` compare signed and
//! `umin`/`umax` unsigned; `i1` elements are bytes holding 0 or 1 (a
//! loaded non-zero byte is normalised to 1) read as a 1-bit signed integer,
//! so `add`/`xor` are xor, `mul`/`and`/`umin`/`max` are and, and
//! `or`/`umax`/`min` are or. Float `min`/`max` are `arith.minimumf` /
//! `arith.maximumf`; a NaN result is replaced by the canonical quiet NaN
//! with a clear sign bit ([`Op::finish`]) because the runtime returns Rust's
//! `f64::NAN` (converted to `f32` for `f32`), while PTX `min.NaN` returns
//! `0x7FFFFFFF`. NaN propagates through every `minimumf`/`maximumf`, so
//! fixing the final value up once is the same as fixing every step.

use super::Kind;
use super::emit::{Body, Ty, V};

/// One combining operation on values of one type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Op {
    pub ty: Ty,
    pub kind: Kind,
    /// `i1` elements: `ty` is `I8` holding 0 or 1.
    pub boolean: bool,
}

impl Op {
    pub fn new(ty: Ty, kind: Kind) -> Self {
        Op {
            ty,
            kind,
            boolean: false,
        }
    }

    pub fn boolean(kind: Kind) -> Self {
        Op {
            ty: Ty::I8,
            kind,
            boolean: true,
        }
    }

    /// The boolean operation a kind is on `i1`.
    fn bool_kind(self) -> Kind {
        match self.kind {
            Kind::Add | Kind::Xor => Kind::Xor,
            Kind::Mul | Kind::And | Kind::UMin | Kind::Max => Kind::And,
            Kind::Or | Kind::UMax | Kind::Min => Kind::Or,
        }
    }

    /// The bits of the identity.
    pub fn identity_bits(self) -> u64 {
        let ty = self.ty;
        if self.boolean {
            return match self.bool_kind() {
                Kind::And => 1,
                _ => 0,
            };
        }
        if ty.is_float() {
            let f64_bits = match self.kind {
                Kind::Mul => 1.0f64,
                Kind::Min => f64::INFINITY,
                Kind::Max => f64::NEG_INFINITY,
                _ => 0.0,
            };
            return match ty {
                Ty::F32 => (f64_bits as f32).to_bits() as u64,
                _ => f64_bits.to_bits(),
            };
        }
        let bits = ty.bits();
        let mask = if bits == 64 {
            u64::MAX
        } else {
            (1u64 << bits) - 1
        };
        let sign = 1u64 << (bits - 1);
        match self.kind {
            Kind::Add | Kind::Or | Kind::Xor | Kind::UMax => 0,
            Kind::Mul => 1,
            Kind::And | Kind::UMin => mask,
            Kind::Min => sign - 1,
            Kind::Max => sign,
        }
    }

    pub fn identity(self, b: &mut Body) -> V {
        b.bits_const(self.identity_bits(), self.ty)
    }

    /// `x op y`, `x` holding the earlier elements.
    pub fn combine(self, b: &mut Body, x: &str, y: &str) -> V {
        let ty = self.ty;
        if self.boolean {
            let name = match self.bool_kind() {
                Kind::Xor => "xori",
                Kind::And => "andi",
                _ => "ori",
            };
            return b.bin(name, x, y, ty);
        }
        let name = if ty.is_float() {
            match self.kind {
                Kind::Add => "addf",
                Kind::Mul => "mulf",
                Kind::Min => "minimumf",
                _ => "maximumf",
            }
        } else {
            match self.kind {
                Kind::Add => "addi",
                Kind::Mul => "muli",
                Kind::Min => "minsi",
                Kind::Max => "maxsi",
                Kind::UMin => "minui",
                Kind::UMax => "maxui",
                Kind::And => "andi",
                Kind::Or => "ori",
                Kind::Xor => "xori",
            }
        };
        b.bin(name, x, y, ty)
    }

    /// Whether results need [`Op::finish`].
    pub fn needs_finish(self) -> bool {
        self.ty.is_float() && matches!(self.kind, Kind::Min | Kind::Max)
    }

    /// The value as the runtime would produce it (canonical NaN for float
    /// `min`/`max`).
    pub fn finish(self, b: &mut Body, v: &str) -> V {
        if !self.needs_finish() {
            return v.to_string();
        }
        let nan_bits = match self.ty {
            Ty::F32 => f32::NAN.to_bits() as u64,
            _ => f64::NAN.to_bits(),
        };
        let nan = b.bits_const(nan_bits, self.ty);
        let is_nan = b.cmpf("uno", v, v, self.ty);
        b.sel(&is_nan, &nan, v, self.ty)
    }

    /// A value loaded from a list of this type, as the kernels carry it.
    pub fn normalize(self, b: &mut Body, v: &str) -> V {
        if !self.boolean {
            return v.to_string();
        }
        let zero = b.c(0, Ty::I8);
        let nz = b.cmp("ne", v, &zero, Ty::I8);
        b.zext_bool(&nz, Ty::I8)
    }

    /// The type status words of a decoupled look-back keep for this type:
    /// 8- and 16-bit values widen to i32 so that every status access is a
    /// 32- or 64-bit atomic.
    pub fn status_ty(self) -> Ty {
        match self.ty {
            Ty::I8 | Ty::I16 => Ty::I32,
            other => other,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identities() {
        assert_eq!(Op::new(Ty::I32, Kind::Min).identity_bits(), 0x7FFF_FFFF);
        assert_eq!(Op::new(Ty::I8, Kind::Max).identity_bits(), 0x80);
        assert_eq!(Op::new(Ty::I16, Kind::UMin).identity_bits(), 0xFFFF);
        assert_eq!(
            Op::new(Ty::F32, Kind::Max).identity_bits(),
            f32::NEG_INFINITY.to_bits() as u64
        );
        assert_eq!(Op::boolean(Kind::Max).identity_bits(), 1);
        assert_eq!(Op::boolean(Kind::Min).identity_bits(), 0);
    }
}
