//! Element types and combining kinds of the list collectives.
//!
//! **Element codes** (the `elem` arguments of the ABI; element `i` of a
//! list lives at `pointer + i * size`, aligned to its size):
//!
//! | code | MLIR type | stored as |
//! |---|---|---|
//! | 0 | `i1` | one byte, 0 or 1 (any non-zero byte reads as 1) |
//! | 1 | `i8` | `i8` |
//! | 2 | `i16` | `i16` |
//! | 3 | `i32` | `i32` |
//! | 4 | `i64`, `index` | `i64` |
//! | 5 | `f32` | `f32` |
//! | 6 | `f64` | `f64` |
//!
//! Integers are signless, as in MLIR: arithmetic wraps at the element
//! width, `min`/`max` and sort keys read them as signed (so an `i1` 1 is
//! -1), `umin`/`umax` as unsigned. A scalar crosses the ABI as the 64 bits
//! of a `u64`: integers sign-extended to 64 bits (the low `width` bits are
//! the value), `f64` its IEEE bits, `f32` its IEEE bits in the low 32.
//!
//! **Combining kinds**, numbered as the dialect's `Pgpu_CombiningKind`:
//! 0 `add`, 1 `mul`, 2 `min`, 3 `max`, 4 `umin`, 5 `umax`, 6 `and`, 7 `or`,
//! 8 `xor`. Floats take `add`, `mul`, `min`, `max` only; float `min`/`max`
//! are `arith.minimumf`/`maximumf` (a NaN operand gives the quiet NaN with
//! a clear sign bit, -0 < +0), exactly as the interpreter computes them.
//! Identities: 0 for `add`/`or`/`xor`/`umax`, 1 for `mul`, all ones for
//! `and`/`umin`, the largest value for `min`, the smallest for `max`,
//! +/-infinity for float `min`/`max`.

use crate::error::RtError;

/// An element type code of the ABI.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Elem {
    I1 = 0,
    I8 = 1,
    I16 = 2,
    I32 = 3,
    I64 = 4,
    F32 = 5,
    F64 = 6,
}

impl Elem {
    pub fn from_code(op: &'static str, code: i32) -> Result<Self, RtError> {
        Ok(match code {
            0 => Elem::I1,
            1 => Elem::I8,
            2 => Elem::I16,
            3 => Elem::I32,
            4 => Elem::I64,
            5 => Elem::F32,
            6 => Elem::F64,
            _ => return Err(RtError::BadElement { op, code }),
        })
    }

    /// Bytes per element.
    pub fn size(self) -> usize {
        match self {
            Elem::I1 | Elem::I8 => 1,
            Elem::I16 => 2,
            Elem::I32 | Elem::F32 => 4,
            Elem::I64 | Elem::F64 => 8,
        }
    }

    pub fn is_float(self) -> bool {
        matches!(self, Elem::F32 | Elem::F64)
    }
}

/// A combining kind code of the ABI (`Pgpu_CombiningKind`); the GPU
/// collectives (`pgpu-backend-nvptx`) and the offload pass use it too.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Kind {
    Add = 0,
    Mul = 1,
    Min = 2,
    Max = 3,
    UMin = 4,
    UMax = 5,
    And = 6,
    Or = 7,
    Xor = 8,
}

impl Kind {
    /// Every kind, in code order.
    pub const ALL: [Kind; 9] = [
        Kind::Add,
        Kind::Mul,
        Kind::Min,
        Kind::Max,
        Kind::UMin,
        Kind::UMax,
        Kind::And,
        Kind::Or,
        Kind::Xor,
    ];

    pub fn from_code(op: &'static str, code: i32) -> Result<Self, RtError> {
        Ok(match code {
            0 => Kind::Add,
            1 => Kind::Mul,
            2 => Kind::Min,
            3 => Kind::Max,
            4 => Kind::UMin,
            5 => Kind::UMax,
            6 => Kind::And,
            7 => Kind::Or,
            8 => Kind::Xor,
            _ => return Err(RtError::BadKind { op, code }),
        })
    }

    pub fn name(self) -> &'static str {
        match self {
            Kind::Add => "add",
            Kind::Mul => "mul",
            Kind::Min => "min",
            Kind::Max => "max",
            Kind::UMin => "umin",
            Kind::UMax => "umax",
            Kind::And => "and",
            Kind::Or => "or",
            Kind::Xor => "xor",
        }
    }

    /// Whether floats support the kind.
    pub fn float_ok(self) -> bool {
        matches!(self, Kind::Add | Kind::Mul | Kind::Min | Kind::Max)
    }

    /// The kind, checked against the element type.
    pub fn checked(op: &'static str, code: i32, elem: Elem) -> Result<Self, RtError> {
        let kind = Kind::from_code(op, code)?;
        if elem.is_float() && !kind.float_ok() {
            return Err(RtError::KindNeedsInteger {
                op,
                kind: kind.name(),
            });
        }
        Ok(kind)
    }
}

/// An `i1` element: one byte, non-zero is true (-1 as a signed value).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[repr(transparent)]
pub struct Bool(pub u8);

impl Bool {
    pub fn get(self) -> bool {
        self.0 != 0
    }
    pub fn new(value: bool) -> Self {
        Bool(value as u8)
    }
}

/// An element type of reductions, scans and sort keys.
pub trait Scalar: Copy + Send + Sync + PartialEq + std::fmt::Debug + 'static {
    /// The identity of `kind` (a kind the type supports).
    fn identity(kind: Kind) -> Self;
    /// `a kind b`.
    fn combine(kind: Kind, a: Self, b: Self) -> Self;
    /// The ABI bits of the value (see the module header).
    fn bits(self) -> u64;
    /// An unsigned key whose order is the sort order of `pgpu.list.sort_idx`
    /// (equal keys map to equal numbers).
    fn sort_key(self) -> u64;
}

/// A signed integer view of integer elements (counts of `expand`).
pub trait Integer: Scalar {
    fn to_i64(self) -> i64;
    /// `value` truncated to the element width.
    fn from_i64(value: i64) -> Self;
}

macro_rules! int_scalar {
    ($t:ty, $u:ty) => {
        impl Scalar for $t {
            fn identity(kind: Kind) -> Self {
                match kind {
                    Kind::Add | Kind::Or | Kind::Xor | Kind::UMax => 0,
                    Kind::Mul => 1,
                    Kind::And | Kind::UMin => -1,
                    Kind::Min => <$t>::MAX,
                    Kind::Max => <$t>::MIN,
                }
            }
            fn combine(kind: Kind, a: Self, b: Self) -> Self {
                match kind {
                    Kind::Add => a.wrapping_add(b),
                    Kind::Mul => a.wrapping_mul(b),
                    Kind::Min => a.min(b),
                    Kind::Max => a.max(b),
                    Kind::UMin => (a as $u).min(b as $u) as $t,
                    Kind::UMax => (a as $u).max(b as $u) as $t,
                    Kind::And => a & b,
                    Kind::Or => a | b,
                    Kind::Xor => a ^ b,
                }
            }
            fn bits(self) -> u64 {
                self as i64 as u64
            }
            fn sort_key(self) -> u64 {
                (self as i64 as u64) ^ (1 << 63)
            }
        }
        impl Integer for $t {
            fn to_i64(self) -> i64 {
                self as i64
            }
            fn from_i64(value: i64) -> Self {
                value as $t
            }
        }
    };
}

int_scalar!(i8, u8);
int_scalar!(i16, u16);
int_scalar!(i32, u32);
int_scalar!(i64, u64);

impl Scalar for Bool {
    fn identity(kind: Kind) -> Self {
        // As a 1-bit signed integer: true is -1, the smallest value.
        Bool::new(match kind {
            Kind::Add | Kind::Or | Kind::Xor | Kind::UMax | Kind::Min => false,
            Kind::Mul | Kind::And | Kind::UMin | Kind::Max => true,
        })
    }
    fn combine(kind: Kind, a: Self, b: Self) -> Self {
        let (a, b) = (a.get(), b.get());
        Bool::new(match kind {
            Kind::Add | Kind::Xor => a ^ b,
            Kind::Mul | Kind::And | Kind::UMin | Kind::Max => a & b,
            Kind::Or | Kind::UMax | Kind::Min => a | b,
        })
    }
    fn bits(self) -> u64 {
        if self.get() { u64::MAX } else { 0 }
    }
    fn sort_key(self) -> u64 {
        // -1 before 0.
        if self.get() { 0 } else { 1 }
    }
}

impl Integer for Bool {
    fn to_i64(self) -> i64 {
        -(self.get() as i64)
    }
    fn from_i64(value: i64) -> Self {
        Bool::new(value & 1 != 0)
    }
}

/// `arith.minimumf` / `arith.maximumf` as the interpreter computes them.
fn minimum(a: f64, b: f64) -> f64 {
    if a.is_nan() || b.is_nan() {
        f64::NAN
    } else if a == b {
        if a.is_sign_negative() { a } else { b }
    } else {
        a.min(b)
    }
}

fn maximum(a: f64, b: f64) -> f64 {
    if a.is_nan() || b.is_nan() {
        f64::NAN
    } else if a == b {
        if a.is_sign_negative() { b } else { a }
    } else {
        a.max(b)
    }
}

impl Scalar for f64 {
    fn identity(kind: Kind) -> Self {
        match kind {
            Kind::Mul => 1.0,
            Kind::Min => f64::INFINITY,
            Kind::Max => f64::NEG_INFINITY,
            _ => 0.0,
        }
    }
    fn combine(kind: Kind, a: Self, b: Self) -> Self {
        match kind {
            Kind::Add => a + b,
            Kind::Mul => a * b,
            Kind::Min => minimum(a, b),
            Kind::Max => maximum(a, b),
            // Not reachable: kinds are checked against the element type.
            _ => f64::NAN,
        }
    }
    fn bits(self) -> u64 {
        self.to_bits()
    }
    fn sort_key(self) -> u64 {
        let canonical = if self.is_nan() {
            if self.is_sign_negative() {
                -f64::NAN
            } else {
                f64::NAN
            }
        } else if self == 0.0 {
            0.0
        } else {
            self
        };
        let bits = canonical.to_bits();
        if bits >> 63 == 1 {
            !bits
        } else {
            bits | 1 << 63
        }
    }
}

impl Scalar for f32 {
    fn identity(kind: Kind) -> Self {
        f64::identity(kind) as f32
    }
    fn combine(kind: Kind, a: Self, b: Self) -> Self {
        match kind {
            Kind::Add => a + b,
            Kind::Mul => a * b,
            Kind::Min => minimum(a as f64, b as f64) as f32,
            Kind::Max => maximum(a as f64, b as f64) as f32,
            _ => f32::NAN,
        }
    }
    fn bits(self) -> u64 {
        self.to_bits() as u64
    }
    fn sort_key(self) -> u64 {
        // A NaN's sign does not survive `as f64` reliably (LLVM may fold
        // the conversion to the positive quiet NaN): keep it explicitly.
        if self.is_nan() {
            let nan = if self.is_sign_negative() {
                -f64::NAN
            } else {
                f64::NAN
            };
            return nan.sort_key();
        }
        (self as f64).sort_key()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes() {
        assert_eq!(Elem::from_code("t", 3), Ok(Elem::I32));
        assert!(Elem::from_code("t", 7).is_err());
        assert_eq!(Kind::from_code("t", 8), Ok(Kind::Xor));
        assert!(Kind::from_code("t", -1).is_err());
        assert!(Kind::checked("t", Kind::UMax as i32, Elem::F32).is_err());
        assert_eq!(Kind::checked("t", 3, Elem::F64), Ok(Kind::Max));
    }

    #[test]
    fn integer_kinds() {
        assert_eq!(i8::combine(Kind::Add, 127, 1), -128);
        assert_eq!(i8::combine(Kind::UMax, -1, 5), -1);
        assert_eq!(i8::combine(Kind::UMin, -1, 5), 5);
        assert_eq!(i16::combine(Kind::Min, -1, 5), -1);
        assert_eq!(i32::identity(Kind::Min), i32::MAX);
        assert_eq!(i64::identity(Kind::UMin), -1);
        assert_eq!((-1i32).bits(), u64::MAX);
    }

    #[test]
    fn bool_is_a_signed_bit() {
        let (t, f) = (Bool::new(true), Bool::new(false));
        assert_eq!(Bool::combine(Kind::Add, t, t), f);
        assert_eq!(Bool::combine(Kind::Min, t, f), t);
        assert_eq!(Bool::combine(Kind::Max, t, f), f);
        assert_eq!(Bool::combine(Kind::UMax, t, f), t);
        assert!(t.sort_key() < f.sort_key());
        for kind in [
            Kind::Add,
            Kind::Mul,
            Kind::Min,
            Kind::Max,
            Kind::UMin,
            Kind::UMax,
        ] {
            for x in [t, f] {
                assert_eq!(Bool::combine(kind, Bool::identity(kind), x), x, "{kind:?}");
            }
        }
        assert_eq!(Bool(2).sort_key(), t.sort_key());
    }

    #[test]
    fn float_kinds() {
        assert!(f64::combine(Kind::Min, 1.0, f64::NAN).is_nan());
        assert!(f64::combine(Kind::Min, -0.0, 0.0).is_sign_negative());
        assert!(f64::combine(Kind::Max, -0.0, 0.0).is_sign_positive());
        assert!(!f32::combine(Kind::Max, -f32::NAN, 0.0).is_sign_negative());
        assert_eq!(f32::identity(Kind::Max), f32::NEG_INFINITY);
    }

    #[test]
    fn float_key_order() {
        let order = [
            -f64::NAN,
            f64::NEG_INFINITY,
            -1e300,
            -1.0,
            -f64::MIN_POSITIVE / 2.0,
            0.0,
            1.0,
            f64::INFINITY,
            f64::NAN,
        ];
        for pair in order.windows(2) {
            assert!(pair[0].sort_key() < pair[1].sort_key(), "{pair:?}");
        }
        assert_eq!((-0.0f64).sort_key(), 0.0f64.sort_key());
        let other_nan = f64::from_bits(f64::NAN.to_bits() | 5);
        assert_eq!(other_nan.sort_key(), f64::NAN.sort_key());
        assert_eq!((-other_nan).sort_key(), (-f64::NAN).sort_key());
        assert_eq!((-0.0f32).sort_key(), 0.0f32.sort_key());
        assert!((-f32::NAN).sort_key() < f32::NEG_INFINITY.sort_key());
    }
}
