//! IEEE half precision and bfloat16 values: reading their bits and
//! rounding to them (to nearest, ties to even). The CPU runner supplies
//! compiler-rt's conversion functions with them, and the code generator
//! reads half-precision immediates.

/// The f64 value of bfloat16 bits (exact: bfloat16 is f32's top half).
pub fn bfloat_to_f64(bits: u16) -> f64 {
    f64::from(f32::from_bits(u32::from(bits) << 16))
}

/// The f64 value of IEEE half bits.
pub fn half_to_f64(bits: u16) -> f64 {
    let sign = if bits & 0x8000 != 0 { -1.0 } else { 1.0 };
    let exponent = i32::from((bits >> 10) & 0x1f);
    let fraction = f64::from(bits & 0x3ff);
    sign * match exponent {
        0 => fraction * 2f64.powi(-24),
        31 if fraction == 0.0 => f64::INFINITY,
        31 => return f64::from_bits(0x7ff8_0000_0000_0000 | (u64::from(bits & 0x3ff) << 42)),
        _ => (1.0 + fraction / 1024.0) * 2f64.powi(exponent - 15),
    }
}

/// Rounds `x` to the nearest value of a binary format with `mantissa`
/// fraction bits, exponent `bias` and all-ones exponent `max_biased`
/// (subnormals below, infinity above), ties to even; returns the sign,
/// biased exponent and fraction fields.
fn round_to_format(x: f64, mantissa: u32, bias: i32, max_biased: i32) -> (u64, u64, u64) {
    let sign = u64::from(x.is_sign_negative());
    let a = x.abs();
    if a.is_nan() {
        return (sign, max_biased as u64, 1 << (mantissa - 1));
    }
    if a.is_infinite() {
        return (sign, max_biased as u64, 0);
    }
    if a == 0.0 {
        return (sign, 0, 0);
    }
    // The exponent of the result's quantum: normal numbers keep `mantissa`
    // fraction bits, subnormals are multiples of 2^(1 - bias - mantissa).
    // f64's own exponent (exact; f64 subnormals are far below both formats).
    let exponent = ((((a.to_bits() >> 52) & 0x7ff) as i32) - 1023).max(1 - bias);
    let quantum = 2f64.powi(exponent - mantissa as i32);
    let scaled = a / quantum;
    let floor = scaled.floor();
    let rest = scaled - floor;
    let mut units = floor as u64;
    if rest > 0.5 || (rest == 0.5 && units % 2 == 1) {
        units += 1;
    }
    // units is in [0, 2^(mantissa+1)]: re-normalize.
    let mut biased = exponent + bias;
    if units >= 1 << (mantissa + 1) {
        units >>= 1;
        biased += 1;
    }
    if units < 1 << mantissa {
        // Subnormal (or zero after rounding).
        return (sign, 0, units);
    }
    if biased >= max_biased {
        return (sign, max_biased as u64, 0);
    }
    (sign, biased as u64, units - (1 << mantissa))
}

pub fn to_half(x: f64) -> u16 {
    let (sign, exponent, fraction) = round_to_format(x, 10, 15, 31);
    ((sign << 15) | (exponent << 10) | fraction) as u16
}

pub fn to_bfloat(x: f64) -> u16 {
    let (sign, exponent, fraction) = round_to_format(x, 7, 127, 255);
    ((sign << 15) | (exponent << 7) | fraction) as u16
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn half_and_bfloat_rounding() {
        // Exact values, halfway cases (ties to even), overflow, subnormals.
        assert_eq!(to_half(1.0), 0x3c00);
        assert_eq!(to_half(-2.0), 0xc000);
        assert_eq!(to_half(65504.0), 0x7bff);
        assert_eq!(to_half(65520.0), 0x7c00);
        assert_eq!(to_half(1.0 + 2f64.powi(-11)), 0x3c00);
        assert_eq!(to_half(1.0 + 3.0 * 2f64.powi(-11)), 0x3c02);
        assert_eq!(to_half(2f64.powi(-24)), 0x0001);
        assert_eq!(to_half(2f64.powi(-25)), 0x0000);
        assert_eq!(to_half(0.999_999_9), 0x3c00);
        assert_eq!(to_half(f64::NAN) & 0x7c00, 0x7c00);
        assert_eq!(to_bfloat(1.0), 0x3f80);
        assert_eq!(to_bfloat(1.0 + 2f64.powi(-8)), 0x3f80);
        assert_eq!(to_bfloat(1.0 + 3.0 * 2f64.powi(-8)), 0x3f82);
        assert_eq!(to_bfloat(3.0e38), 0x7f62);
        for bits in [0x0001u16, 0x03ff, 0x0400, 0x3555, 0x7bff, 0xbc00] {
            assert_eq!(to_half(half_to_f64(bits)), bits);
        }
        // Every f32 that is a half converts to that half.
        for bits in 0..0x7c00u16 {
            assert_eq!(to_half(f64::from(half_to_f64(bits) as f32)), bits);
        }
    }
}
