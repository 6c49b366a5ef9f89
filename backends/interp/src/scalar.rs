//! Scalar semantics shared by the executor and the scheduler: float
//! binary and unary operations (f32 arithmetic rounds to f32; `maximumf` /
//! `minimumf` propagate NaN and order -0 < +0, `maxnumf` / `minnumf` ignore
//! NaN), the pgpu combining kinds with their identities, and
//! `memref.atomic_rmw` kinds mapped onto them.

use crate::ir::{Comb, FBin, FUn, Rmw};
use crate::value::{Ty, Val, sext, zext};

pub fn fbin64(kind: FBin, a: f64, b: f64) -> f64 {
    match kind {
        FBin::Add => a + b,
        FBin::Sub => a - b,
        FBin::Mul => a * b,
        FBin::Div => a / b,
        FBin::Rem => a % b,
        FBin::Maximum => {
            if a.is_nan() || b.is_nan() {
                f64::NAN
            } else if a == b {
                if a.is_sign_negative() { b } else { a }
            } else {
                a.max(b)
            }
        }
        FBin::Minimum => {
            if a.is_nan() || b.is_nan() {
                f64::NAN
            } else if a == b {
                if a.is_sign_negative() { a } else { b }
            } else {
                a.min(b)
            }
        }
        FBin::MaxNum => a.max(b),
        FBin::MinNum => a.min(b),
        FBin::Pow => a.powf(b),
        FBin::Atan2 => a.atan2(b),
        FBin::CopySign => a.copysign(b),
    }
}

pub fn fbin32(kind: FBin, a: f32, b: f32) -> f32 {
    match kind {
        FBin::Add => a + b,
        FBin::Sub => a - b,
        FBin::Mul => a * b,
        FBin::Div => a / b,
        FBin::Rem => a % b,
        FBin::Pow => a.powf(b),
        FBin::Atan2 => a.atan2(b),
        FBin::CopySign => a.copysign(b),
        FBin::MaxNum => a.max(b),
        FBin::MinNum => a.min(b),
        _ => fbin64(kind, a as f64, b as f64) as f32,
    }
}

fn erf(x: f64) -> f64 {
    // Abramowitz and Stegun 7.1.26 refined by one Newton-free series for
    // small |x|; accurate to about 1e-7.
    if x.abs() < 0.5 {
        let x2 = x * x;
        let mut term = x;
        let mut sum = x;
        for n in 1..20 {
            term *= -x2 / n as f64;
            sum += term / (2 * n + 1) as f64;
        }
        return sum * 2.0 / std::f64::consts::PI.sqrt();
    }
    let t = 1.0 / (1.0 + 0.327_591_1 * x.abs());
    let y = 1.0
        - (((((1.061_405_429 * t - 1.453_152_027) * t) + 1.421_413_741) * t - 0.284_496_736) * t
            + 0.254_829_592)
            * t
            * (-x * x).exp();
    if x < 0.0 { -y } else { y }
}

pub fn fun64(kind: FUn, a: f64) -> f64 {
    match kind {
        FUn::Neg => -a,
        FUn::Abs => a.abs(),
        FUn::Sqrt => a.sqrt(),
        FUn::Rsqrt => 1.0 / a.sqrt(),
        FUn::Cbrt => a.cbrt(),
        FUn::Exp => a.exp(),
        FUn::Exp2 => a.exp2(),
        FUn::Expm1 => a.exp_m1(),
        FUn::Log => a.ln(),
        FUn::Log2 => a.log2(),
        FUn::Log10 => a.log10(),
        FUn::Log1p => a.ln_1p(),
        FUn::Sin => a.sin(),
        FUn::Cos => a.cos(),
        FUn::Tan => a.tan(),
        FUn::Asin => a.asin(),
        FUn::Acos => a.acos(),
        FUn::Atan => a.atan(),
        FUn::Sinh => a.sinh(),
        FUn::Cosh => a.cosh(),
        FUn::Tanh => a.tanh(),
        FUn::Floor => a.floor(),
        FUn::Ceil => a.ceil(),
        FUn::Round => a.round(),
        FUn::RoundEven => a.round_ties_even(),
        FUn::Trunc => a.trunc(),
        FUn::Erf => erf(a),
    }
}

pub fn fun32(kind: FUn, a: f32) -> f32 {
    match kind {
        FUn::Neg => -a,
        FUn::Abs => a.abs(),
        FUn::Sqrt => a.sqrt(),
        FUn::Floor => a.floor(),
        FUn::Ceil => a.ceil(),
        FUn::Round => a.round(),
        FUn::RoundEven => a.round_ties_even(),
        FUn::Trunc => a.trunc(),
        FUn::Exp => a.exp(),
        FUn::Log => a.ln(),
        FUn::Sin => a.sin(),
        FUn::Cos => a.cos(),
        _ => fun64(kind, a as f64) as f32,
    }
}

/// Combines two values with a pgpu combining kind at integer `width`.
pub fn combine(kind: Comb, a: &Val, b: &Val, width: u32) -> Option<Val> {
    Some(match (a, b) {
        (Val::Int(a), Val::Int(b)) => {
            let (a, b) = (*a, *b);
            let (ua, ub) = (zext(a, width), zext(b, width));
            Val::Int(sext(
                match kind {
                    Comb::Add => a.wrapping_add(b),
                    Comb::Mul => a.wrapping_mul(b),
                    Comb::Min => a.min(b),
                    Comb::Max => a.max(b),
                    Comb::UMin => ua.min(ub) as i64,
                    Comb::UMax => ua.max(ub) as i64,
                    Comb::And => a & b,
                    Comb::Or => a | b,
                    Comb::Xor => a ^ b,
                },
                width,
            ))
        }
        (Val::F64(a), Val::F64(b)) => Val::F64(match kind {
            Comb::Add => a + b,
            Comb::Mul => a * b,
            Comb::Min => fbin64(FBin::Minimum, *a, *b),
            Comb::Max => fbin64(FBin::Maximum, *a, *b),
            _ => return None,
        }),
        (Val::F32(a), Val::F32(b)) => Val::F32(match kind {
            Comb::Add => a + b,
            Comb::Mul => a * b,
            Comb::Min => fbin64(FBin::Minimum, *a as f64, *b as f64) as f32,
            Comb::Max => fbin64(FBin::Maximum, *a as f64, *b as f64) as f32,
            _ => return None,
        }),
        (Val::Poison, _) | (_, Val::Poison) => Val::Poison,
        _ => return None,
    })
}

/// The identity of `kind` for values of type `ty`.
pub fn identity(kind: Comb, ty: Ty) -> Val {
    let width = ty.int_width().unwrap_or(64);
    match ty {
        Ty::F32 | Ty::F64 => {
            let v = match kind {
                Comb::Mul => 1.0,
                Comb::Min => f64::INFINITY,
                Comb::Max => f64::NEG_INFINITY,
                _ => 0.0,
            };
            if ty == Ty::F32 {
                Val::F32(v as f32)
            } else {
                Val::F64(v)
            }
        }
        _ => Val::Int(match kind {
            Comb::Add | Comb::Or | Comb::Xor | Comb::UMax => 0,
            Comb::Mul => 1,
            Comb::And | Comb::UMin => -1,
            Comb::Min => sext(((1u64 << (width - 1).min(63)) - 1) as i64, width),
            Comb::Max => {
                if width >= 64 {
                    i64::MIN
                } else {
                    -(1i64 << (width - 1))
                }
            }
        }),
    }
}

pub fn rmw(kind: Rmw, old: &Val, value: &Val, width: u32) -> Option<Val> {
    let comb = match kind {
        Rmw::Assign => return Some(value.clone()),
        Rmw::AddF | Rmw::AddI => Comb::Add,
        Rmw::MulF | Rmw::MulI => Comb::Mul,
        Rmw::MaxS | Rmw::MaxF | Rmw::MaxNumF => Comb::Max,
        Rmw::MinS | Rmw::MinF | Rmw::MinNumF => Comb::Min,
        Rmw::MaxU => Comb::UMax,
        Rmw::MinU => Comb::UMin,
        Rmw::OrI => Comb::Or,
        Rmw::AndI => Comb::And,
        Rmw::XorI => Comb::Xor,
    };
    combine(comb, old, value, width)
}
