//! The `arith` dialect's integer semantics on values of any width up to 64
//! bits, shared by the reference interpreter and the compile-time folding
//! of analyses (`instruction_mix`), so that both agree bit for bit.
//!
//! A value of width `w` is carried in an `i64` sign-extended from its low
//! `w` bits (width 0 or 64 and above: the whole `i64`, as for `index`).
//! Unsigned operations read the low `w` bits as an unsigned number; every
//! result is sign-extended back from width `w`. Shifting by the width or
//! more is poison, dividing by zero is undefined behaviour and dividing the
//! smallest signed value by -1 overflows; each is reported as a
//! [`IntegerFault`] for the caller to turn into poison or an error.

/// An `arith` integer operation of two operands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IntegerBinary {
    Add,
    Sub,
    Mul,
    DivS,
    DivU,
    RemS,
    RemU,
    CeilDivS,
    CeilDivU,
    FloorDivS,
    And,
    Or,
    Xor,
    Shl,
    ShrS,
    ShrU,
    MaxS,
    MinS,
    MaxU,
    MinU,
}

/// Why an integer operation has no defined result.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IntegerFault {
    DivisionByZero,
    SignedDivisionOverflow,
    /// A shift by the width or more: the result is poison.
    ShiftOutOfRange,
}

impl IntegerBinary {
    /// The operation an `arith` op name stands for.
    pub fn from_op_name(name: &str) -> Option<Self> {
        Some(match name {
            "arith.addi" => Self::Add,
            "arith.subi" => Self::Sub,
            "arith.muli" => Self::Mul,
            "arith.divsi" => Self::DivS,
            "arith.divui" => Self::DivU,
            "arith.remsi" => Self::RemS,
            "arith.remui" => Self::RemU,
            "arith.ceildivsi" => Self::CeilDivS,
            "arith.ceildivui" => Self::CeilDivU,
            "arith.floordivsi" => Self::FloorDivS,
            "arith.andi" => Self::And,
            "arith.ori" => Self::Or,
            "arith.xori" => Self::Xor,
            "arith.shli" => Self::Shl,
            "arith.shrsi" => Self::ShrS,
            "arith.shrui" => Self::ShrU,
            "arith.maxsi" => Self::MaxS,
            "arith.minsi" => Self::MinS,
            "arith.maxui" => Self::MaxU,
            "arith.minui" => Self::MinU,
            _ => return None,
        })
    }

    /// `a op b` on `width`-bit values (sign-extended in `i64`s), the result
    /// sign-extended from `width`.
    pub fn evaluate(self, a: i64, b: i64, width: u32) -> Result<i64, IntegerFault> {
        let (ua, ub) = (zero_extend(a, width), zero_extend(b, width));
        let min = if width == 0 || width >= 64 {
            i64::MIN
        } else {
            -(1i64 << (width - 1))
        };
        let value = match self {
            Self::Add => a.wrapping_add(b),
            Self::Sub => a.wrapping_sub(b),
            Self::Mul => a.wrapping_mul(b),
            Self::DivS | Self::RemS | Self::CeilDivS | Self::FloorDivS => {
                if b == 0 {
                    return Err(IntegerFault::DivisionByZero);
                }
                if a == min && b == -1 {
                    return Err(IntegerFault::SignedDivisionOverflow);
                }
                let (quotient, remainder) = (a / b, a % b);
                let inexact = remainder != 0;
                match self {
                    Self::DivS => quotient,
                    Self::RemS => remainder,
                    Self::CeilDivS if inexact && (a < 0) == (b < 0) => quotient + 1,
                    Self::FloorDivS if inexact && (a < 0) != (b < 0) => quotient - 1,
                    _ => quotient,
                }
            }
            Self::DivU | Self::RemU | Self::CeilDivU => {
                if ub == 0 {
                    return Err(IntegerFault::DivisionByZero);
                }
                (match self {
                    Self::DivU => ua / ub,
                    Self::RemU => ua % ub,
                    _ => ua.div_ceil(ub),
                }) as i64
            }
            Self::And => a & b,
            Self::Or => a | b,
            Self::Xor => a ^ b,
            Self::Shl | Self::ShrS | Self::ShrU => {
                let bits = if width == 0 { 64 } else { width.min(64) };
                if ub >= u64::from(bits) {
                    return Err(IntegerFault::ShiftOutOfRange);
                }
                match self {
                    Self::Shl => a << ub,
                    Self::ShrS => a >> ub,
                    _ => (ua >> ub) as i64,
                }
            }
            Self::MaxS => a.max(b),
            Self::MinS => a.min(b),
            Self::MaxU => ua.max(ub) as i64,
            Self::MinU => ua.min(ub) as i64,
        };
        Ok(sign_extend(value, width))
    }
}

/// `arith.cmpi` with the predicate's number (`eq` 0 through `uge` 9) on
/// `width`-bit values; `None` for an unknown predicate.
pub fn compare(predicate: i64, a: i64, b: i64, width: u32) -> Option<bool> {
    let (ua, ub) = (zero_extend(a, width), zero_extend(b, width));
    Some(match predicate {
        0 => a == b,
        1 => a != b,
        2 => a < b,
        3 => a <= b,
        4 => a > b,
        5 => a >= b,
        6 => ua < ub,
        7 => ua <= ub,
        8 => ua > ub,
        9 => ua >= ub,
        _ => return None,
    })
}

/// Sign-extends the low `width` bits of `value`.
#[inline]
pub fn sign_extend(value: i64, width: u32) -> i64 {
    if width >= 64 || width == 0 {
        value
    } else {
        let shift = 64 - width;
        (value << shift) >> shift
    }
}

/// Zero-extends the low `width` bits of `value`.
#[inline]
pub fn zero_extend(value: i64, width: u32) -> u64 {
    if width >= 64 || width == 0 {
        value as u64
    } else {
        (value as u64) & ((1u64 << width) - 1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unsigned_operations_read_the_low_bits() {
        // -1 as i8 is 255: 255 / 2 = 127, and 255 % 16 = 15.
        assert_eq!(IntegerBinary::DivU.evaluate(-1, 2, 8), Ok(127));
        assert_eq!(IntegerBinary::RemU.evaluate(-1, 16, 8), Ok(15));
        assert_eq!(IntegerBinary::MaxU.evaluate(-1, 3, 32), Ok(-1));
        assert_eq!(IntegerBinary::MinU.evaluate(-1, 3, 32), Ok(3));
        assert_eq!(IntegerBinary::ShrU.evaluate(-8, 1, 8), Ok(124));
        assert_eq!(IntegerBinary::CeilDivU.evaluate(7, 2, 32), Ok(4));
    }

    #[test]
    fn results_wrap_to_the_width() {
        assert_eq!(IntegerBinary::Add.evaluate(127, 1, 8), Ok(-128));
        assert_eq!(
            IntegerBinary::Shl.evaluate(1, 31, 32),
            Ok(i64::from(i32::MIN))
        );
        assert_eq!(IntegerBinary::Mul.evaluate(1 << 20, 1 << 20, 32), Ok(0));
    }

    #[test]
    fn signed_rounding() {
        assert_eq!(IntegerBinary::CeilDivS.evaluate(7, 2, 32), Ok(4));
        assert_eq!(IntegerBinary::CeilDivS.evaluate(-7, 2, 32), Ok(-3));
        assert_eq!(IntegerBinary::FloorDivS.evaluate(-7, 2, 32), Ok(-4));
        assert_eq!(IntegerBinary::RemS.evaluate(-7, 2, 32), Ok(-1));
    }

    #[test]
    fn faults() {
        use IntegerFault::*;
        assert_eq!(IntegerBinary::DivU.evaluate(1, 0, 32), Err(DivisionByZero));
        // 256 is 0 as an i8.
        assert_eq!(IntegerBinary::RemU.evaluate(1, 256, 8), Err(DivisionByZero));
        assert_eq!(
            IntegerBinary::DivS.evaluate(-128, -1, 8),
            Err(SignedDivisionOverflow)
        );
        assert_eq!(IntegerBinary::Shl.evaluate(1, 32, 32), Err(ShiftOutOfRange));
        assert_eq!(IntegerBinary::ShrU.evaluate(1, 8, 8), Err(ShiftOutOfRange));
        assert_eq!(IntegerBinary::ShrS.evaluate(1, 63, 64), Ok(0));
    }

    #[test]
    fn comparisons() {
        assert_eq!(compare(2, -1, 0, 32), Some(true)); // slt
        assert_eq!(compare(6, -1, 0, 32), Some(false)); // ult: 2^32 - 1 < 0
        assert_eq!(compare(9, -1, 255, 8), Some(true)); // uge
        assert_eq!(compare(10, 0, 0, 32), None);
    }
}
