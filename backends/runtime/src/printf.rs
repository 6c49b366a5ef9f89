//! C `printf` formatting for `pgpu.printf` and the SplitMix64 generator of
//! `pgpu.rand_u32`, shared by the reference interpreter and compiled
//! programs (through [`crate::io`]) so that both print byte-identical
//! output.
//!
//! A format is parsed once into text pieces and conversion specifications
//! (`%[flags][width][.precision][length]conv`, length modifiers accepted and
//! ignored). Each conversion is then rendered exactly as glibc's printf
//! does: integers with sign/space/`#` prefixes, precision as a minimum digit
//! count (precision 0 of value 0 prints no digits) and zero padding only
//! without a precision; floats through Rust's exact decimal formatting
//! (`f`), its exact scientific formatting rewritten to C's exponent form
//! (`e`, at least two exponent digits) and C's `g` rule (P = precision or 6
//! (1 if 0), X = the exponent after rounding to P digits: `f` with
//! precision P-1-X if P > X >= -4, else `e` with P-1, then trailing zeros
//! removed unless `#`). Infinities and NaNs print `inf`/`nan` (upper case
//! for `F E G`), never zero padded.

/// One conversion specification.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Spec {
    pub left: bool,
    pub plus: bool,
    pub space: bool,
    pub alt: bool,
    pub zero: bool,
    pub width: usize,
    pub precision: Option<usize>,
    pub conv: u8,
}

impl Spec {
    /// Whether the conversion takes a float operand.
    pub fn is_float(&self) -> bool {
        matches!(self.conv, b'f' | b'F' | b'e' | b'E' | b'g' | b'G')
    }
}

/// A piece of a parsed printf format: literal text (`%%` already turned
/// into `%`) or one conversion.
#[derive(Debug, Clone, PartialEq)]
pub enum Piece {
    Text(Vec<u8>),
    Conv(Spec),
}

/// A format that `printf` cannot print.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FormatError {
    #[error("unsupported conversion '%{0}'")]
    Unsupported(char),
    #[error("incomplete conversion at the end of the format")]
    Incomplete,
}

/// Parses a printf format into pieces.
pub fn parse_format(format: &[u8]) -> Result<Vec<Piece>, FormatError> {
    let mut pieces = Vec::new();
    let mut text = Vec::new();
    let mut index = 0;
    while index < format.len() {
        let byte = format[index];
        index += 1;
        if byte != b'%' {
            text.push(byte);
            continue;
        }
        if format.get(index) == Some(&b'%') {
            text.push(b'%');
            index += 1;
            continue;
        }
        let mut spec = Spec::default();
        while let Some(&flag) = format.get(index) {
            match flag {
                b'-' => spec.left = true,
                b'+' => spec.plus = true,
                b' ' => spec.space = true,
                b'#' => spec.alt = true,
                b'0' => spec.zero = true,
                _ => break,
            }
            index += 1;
        }
        while let Some(&digit) = format.get(index).filter(|d| d.is_ascii_digit()) {
            spec.width = spec.width * 10 + (digit - b'0') as usize;
            index += 1;
        }
        if format.get(index) == Some(&b'.') {
            index += 1;
            let mut precision = 0;
            while let Some(&digit) = format.get(index).filter(|d| d.is_ascii_digit()) {
                precision = precision * 10 + (digit - b'0') as usize;
                index += 1;
            }
            spec.precision = Some(precision);
        }
        while let Some(&length) = format.get(index) {
            if matches!(length, b'h' | b'l' | b'z' | b'j' | b't' | b'L' | b'q') {
                index += 1;
            } else {
                break;
            }
        }
        match format.get(index) {
            Some(&conv) if b"diuxXocfFeEgG".contains(&conv) => {
                spec.conv = conv;
                index += 1;
            }
            Some(&conv) => return Err(FormatError::Unsupported(conv as char)),
            None => return Err(FormatError::Incomplete),
        }
        if !text.is_empty() {
            pieces.push(Piece::Text(std::mem::take(&mut text)));
        }
        pieces.push(Piece::Conv(spec));
    }
    if !text.is_empty() {
        pieces.push(Piece::Text(text));
    }
    Ok(pieces)
}

fn pad(out: &mut Vec<u8>, spec: &Spec, prefix: &[u8], body: &[u8], zero_ok: bool) {
    let length = prefix.len() + body.len();
    let fill = spec.width.saturating_sub(length);
    if spec.left {
        out.extend_from_slice(prefix);
        out.extend_from_slice(body);
        out.extend(std::iter::repeat_n(b' ', fill));
    } else if spec.zero && zero_ok {
        out.extend_from_slice(prefix);
        out.extend(std::iter::repeat_n(b'0', fill));
        out.extend_from_slice(body);
    } else {
        out.extend(std::iter::repeat_n(b' ', fill));
        out.extend_from_slice(prefix);
        out.extend_from_slice(body);
    }
}

/// Formats an integer conversion. `signed` is the value for `d i`,
/// `unsigned` the zero-extended value for `u x X o c`.
pub fn format_int(out: &mut Vec<u8>, spec: &Spec, signed: i64, unsigned: u64) {
    if spec.conv == b'c' {
        pad(out, spec, b"", &[unsigned as u8], false);
        return;
    }
    let (negative, magnitude) = match spec.conv {
        b'd' | b'i' => (signed < 0, signed.unsigned_abs()),
        _ => (false, unsigned),
    };
    let mut digits = match spec.conv {
        b'x' => format!("{magnitude:x}"),
        b'X' => format!("{magnitude:X}"),
        b'o' => format!("{magnitude:o}"),
        _ => magnitude.to_string(),
    }
    .into_bytes();
    if spec.precision == Some(0) && magnitude == 0 {
        digits.clear();
    }
    if let Some(precision) = spec.precision
        && digits.len() < precision
    {
        let mut padded = vec![b'0'; precision - digits.len()];
        padded.extend_from_slice(&digits);
        digits = padded;
    }
    let mut prefix = Vec::new();
    match spec.conv {
        b'd' | b'i' => {
            if negative {
                prefix.push(b'-');
            } else if spec.plus {
                prefix.push(b'+');
            } else if spec.space {
                prefix.push(b' ');
            }
        }
        b'o' if spec.alt && digits.first() != Some(&b'0') => digits.insert(0, b'0'),
        b'x' if spec.alt && magnitude != 0 => prefix.extend_from_slice(b"0x"),
        b'X' if spec.alt && magnitude != 0 => prefix.extend_from_slice(b"0X"),
        _ => {}
    }
    pad(out, spec, &prefix, &digits, spec.precision.is_none());
}

/// Rust's exact `{:.p$e}` output rewritten to C's form: `d.ddde+XX`.
fn c_exponent(value: f64, precision: usize, upper: bool, alt: bool) -> (Vec<u8>, i32) {
    let text = format!("{value:.precision$e}");
    let (mantissa, exponent) = text.split_once('e').unwrap_or((&text, "0"));
    let exponent: i32 = exponent.parse().unwrap_or(0);
    let mut body = mantissa.to_string();
    if alt && precision == 0 {
        body.push('.');
    }
    body.push(if upper { 'E' } else { 'e' });
    body.push(if exponent < 0 { '-' } else { '+' });
    body.push_str(&format!("{:02}", exponent.unsigned_abs()));
    (body.into_bytes(), exponent)
}

fn strip_trailing_zeros(body: &mut Vec<u8>) {
    if !body.contains(&b'.') {
        return;
    }
    while body.last() == Some(&b'0') {
        body.pop();
    }
    if body.last() == Some(&b'.') {
        body.pop();
    }
}

/// Formats a float conversion (`f32` operands are promoted first).
pub fn format_float(out: &mut Vec<u8>, spec: &Spec, value: f64) {
    let upper = spec.conv.is_ascii_uppercase();
    let negative = value.is_sign_negative();
    let mut prefix = Vec::new();
    if negative {
        prefix.push(b'-');
    } else if spec.plus {
        prefix.push(b'+');
    } else if spec.space {
        prefix.push(b' ');
    }
    let magnitude = value.abs();
    if !magnitude.is_finite() {
        let word: &[u8] = match (magnitude.is_nan(), upper) {
            (true, false) => b"nan",
            (true, true) => b"NAN",
            (false, false) => b"inf",
            (false, true) => b"INF",
        };
        pad(out, spec, &prefix, word, false);
        return;
    }
    let precision = spec.precision.unwrap_or(6);
    let body = match spec.conv {
        b'f' | b'F' => {
            let mut body = format!("{magnitude:.precision$}").into_bytes();
            if spec.alt && precision == 0 {
                body.push(b'.');
            }
            body
        }
        b'e' | b'E' => c_exponent(magnitude, precision, upper, spec.alt).0,
        _ => {
            let p = if precision == 0 { 1 } else { precision };
            let (_, exponent) = c_exponent(magnitude, p - 1, upper, false);
            let mut body = if (p as i32) > exponent && exponent >= -4 {
                let digits = (p as i32 - 1 - exponent) as usize;
                let mut body = format!("{magnitude:.digits$}").into_bytes();
                if spec.alt && !body.contains(&b'.') {
                    body.push(b'.');
                }
                body
            } else {
                c_exponent(magnitude, p - 1, upper, spec.alt).0
            };
            if !spec.alt {
                match body.iter().position(|&b| b == b'e' || b == b'E') {
                    Some(position) => {
                        let exponent_part = body.split_off(position);
                        strip_trailing_zeros(&mut body);
                        body.extend_from_slice(&exponent_part);
                    }
                    None => strip_trailing_zeros(&mut body),
                }
            }
            body
        }
    };
    pad(out, spec, &prefix, &body, true);
}

/// The SplitMix64 step of `pgpu.rand_u32`: advances `state`, returns the
/// high 32 bits of the mixed value.
pub fn splitmix64_next(state: &mut u64) -> u32 {
    *state = state.wrapping_add(SPLITMIX64_GAMMA);
    splitmix64_mix(*state)
}

/// The SplitMix64 increment added to the state before each number.
pub const SPLITMIX64_GAMMA: u64 = 0x9E37_79B9_7F4A_7C15;

/// The output function of SplitMix64: the high 32 bits of the mixed
/// `state` (the state after its increment).
pub fn splitmix64_mix(state: u64) -> u32 {
    let mut z = state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^= z >> 31;
    (z >> 32) as u32
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::approx_constant)]
mod tests {
    use super::*;

    /// Renders `format` with `value` for its one conversion.
    fn render(format: &str, value: Result<i64, f64>) -> String {
        let mut out = Vec::new();
        for piece in parse_format(format.as_bytes()).unwrap() {
            match (piece, value) {
                (Piece::Text(text), _) => out.extend_from_slice(&text),
                (Piece::Conv(spec), Ok(v)) => format_int(&mut out, &spec, v, v as u32 as u64),
                (Piece::Conv(spec), Err(v)) => format_float(&mut out, &spec, v),
            }
        }
        String::from_utf8(out).unwrap()
    }

    fn int(format: &str, value: i64) -> String {
        render(format, Ok(value))
    }

    fn float(format: &str, value: f64) -> String {
        render(format, Err(value))
    }

    // Expected strings are glibc printf outputs.
    #[test]
    fn integers() {
        assert_eq!(int("%d", -42), "-42");
        assert_eq!(int("%5d", 42), "   42");
        assert_eq!(int("%-5d|", 42), "42   |");
        assert_eq!(int("%05d", -42), "-0042");
        assert_eq!(int("%+d", 42), "+42");
        assert_eq!(int("% d", 42), " 42");
        assert_eq!(int("%.3d", 7), "007");
        assert_eq!(int("%08.3d", 7), "     007");
        assert_eq!(int("%.0d", 0), "");
        assert_eq!(int("%x", 255), "ff");
        assert_eq!(int("%#x", 255), "0xff");
        assert_eq!(int("%#X", 255), "0XFF");
        assert_eq!(int("%#x", 0), "0");
        assert_eq!(int("%o", 8), "10");
        assert_eq!(int("%#o", 8), "010");
        assert_eq!(int("%#o", 0), "0");
        assert_eq!(int("%u", -1), "4294967295");
        assert_eq!(int("%x", -1), "ffffffff");
        assert_eq!(int("%c", 65), "A");
        assert_eq!(int("%3c", 65), "  A");
        assert_eq!(int("%ld", -5), "-5");
        assert_eq!(int("%#08x", 255), "0x0000ff");
    }

    #[test]
    fn floats() {
        assert_eq!(float("%f", 3.14159), "3.141590");
        assert_eq!(float("%.2f", 2.675), "2.67");
        assert_eq!(float("%.0f", 0.5), "0");
        assert_eq!(float("%.0f", 1.5), "2");
        assert_eq!(float("%#.0f", 1.0), "1.");
        assert_eq!(float("%8.3f", -1.5), "  -1.500");
        assert_eq!(float("%08.3f", -1.5), "-001.500");
        assert_eq!(float("%-8.2f|", 1.5), "1.50    |");
        assert_eq!(float("%+.1f", 0.0), "+0.0");
        assert_eq!(float("%f", -0.0), "-0.000000");
        assert_eq!(float("%e", 12345.678), "1.234568e+04");
        assert_eq!(float("%E", 0.000123), "1.230000E-04");
        assert_eq!(float("%.0e", 5.0), "5e+00");
        assert_eq!(float("%e", 0.0), "0.000000e+00");
        assert_eq!(float("%e", 1e100), "1.000000e+100");
        assert_eq!(float("%g", 100000.0), "100000");
        assert_eq!(float("%g", 1000000.0), "1e+06");
        assert_eq!(float("%g", 0.0001), "0.0001");
        assert_eq!(float("%g", 0.00001), "1e-05");
        assert_eq!(float("%g", 3.14159), "3.14159");
        assert_eq!(float("%g", 0.0), "0");
        assert_eq!(float("%.3g", 1234.5), "1.23e+03");
        assert_eq!(float("%G", 1e-10), "1E-10");
        assert_eq!(float("%#g", 1.0), "1.00000");
        assert_eq!(float("%g", 999999.5), "1e+06");
        assert_eq!(float("%.2g", 0.000123456), "0.00012");
        assert_eq!(float("%10.4g|", 3.14159), "     3.142|");
        assert_eq!(float("%f", f64::INFINITY), "inf");
        assert_eq!(float("%F", f64::NEG_INFINITY), "-INF");
        assert_eq!(float("%5f", f64::NAN), "  nan");
        assert_eq!(float("%05f", f64::INFINITY), "  inf");
        assert_eq!(float("%.3f", 1e20), "100000000000000000000.000");
        assert_eq!(float("%f", 0.1f32 as f64), "0.100000");
        assert_eq!(float("%.10f", 0.1f32 as f64), "0.1000000015");
    }

    #[test]
    fn format_pieces() {
        let pieces = parse_format(b"a%%b %5.2lf\n").unwrap();
        assert_eq!(pieces.len(), 3);
        assert_eq!(pieces[0], Piece::Text(b"a%b ".to_vec()));
        assert!(parse_format(b"%s").is_err());
    }

    #[test]
    fn splitmix64_matches_the_reference() {
        // The reference algorithm, written independently with plain u64 math.
        fn reference(seed: u64, count: usize) -> Vec<u32> {
            let mut state = seed;
            let mut out = Vec::new();
            for _ in 0..count {
                state = state.wrapping_add(11400714819323198485);
                let mut z = state;
                z = (z ^ (z >> 30)).wrapping_mul(13787848793156543929);
                z = (z ^ (z >> 27)).wrapping_mul(10723151780598845931);
                z ^= z >> 31;
                out.push((z >> 32) as u32);
            }
            out
        }
        for seed in [0u64, 42] {
            let mut state = seed;
            let ours: Vec<u32> = (0..5).map(|_| splitmix64_next(&mut state)).collect();
            assert_eq!(ours, reference(seed, 5));
        }
        // Known SplitMix64 output for seed 0: 0xE220A8397B1DCDAF.
        let mut state = 0;
        assert_eq!(splitmix64_next(&mut state), 0xE220_A839);
    }
}
