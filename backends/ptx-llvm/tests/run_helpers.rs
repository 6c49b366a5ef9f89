//! The launch helpers of the PTX runner against their references: floats
//! printed as Python's `repr` prints them (the recorded results were
//! written by Python), splitmix64 as `test-suite/ptx/record.py` has it,
//! and the argument and dimension syntax of `pgpu run-ptx` and
//! `test-suite/ptx/cases.txt`.

use pgpu_ptx_llvm::run::{Argument, ElementType, SplitMix64, parse_dims, python_repr};

// ---------------------------------------------------------------- python_repr

/// `(value, repr(value))` pairs printed by CPython 3.
const PYTHON_REPRS: &[(f64, &str)] = &[
    (0.1, "0.1"),
    (0.3, "0.3"),
    (0.1 + 0.2, "0.30000000000000004"),
    (1.0 / 3.0, "0.3333333333333333"),
    (2.5, "2.5"),
    (-1.5, "-1.5"),
    (100.0, "100.0"),
    (12345.678, "12345.678"),
    (123456789.0, "123456789.0"),
    // Fixed notation up to exponent 15, scientific from 16.
    (1e15, "1000000000000000.0"),
    (9999999999999998.0, "9999999999999998.0"),
    (1e16, "1e+16"),
    (1.5e16, "1.5e+16"),
    (123456789012345678.0, "1.2345678901234568e+17"),
    (1e22, "1e+22"),
    (9007199254740993.0, "9007199254740992.0"),
    // Fixed notation down to exponent -4, scientific below.
    (0.0001, "0.0001"),
    (0.00001, "1e-05"),
    (5e-5, "5e-05"),
    (1e-7, "1e-07"),
    // Extremes.
    (5e-324, "5e-324"),
    (1.5e-323, "1.5e-323"),
    (1.7976931348623157e308, "1.7976931348623157e+308"),
    (-0.0, "-0.0"),
    (0.0, "0.0"),
];

#[test]
fn python_repr_matches_python() {
    for &(value, expected) in PYTHON_REPRS {
        assert_eq!(python_repr(value), expected, "repr({value:e})");
    }
}

#[test]
fn python_repr_of_f32_values_widened_to_f64() {
    // The f32 buffers of the recorded results are printed as the f64 of
    // each f32, as `float(numpy.float32(x))` prints.
    for (value, expected) in [
        // 0.68079376220703125 exactly: the two 16-digit neighbours
        // ...312 and ...313 are equally near; Python takes the even one.
        (0.680_793_76_f32, "0.6807937622070312"),
        (0.1_f32, "0.10000000149011612"),
        (16_777_216.0_f32, "16777216.0"),
        (f32::MAX, "3.4028234663852886e+38"),
        (f32::MIN_POSITIVE, "1.1754943508222875e-38"),
        (f32::from_bits(1), "1.401298464324817e-45"),
    ] {
        assert_eq!(python_repr(f64::from(value)), expected, "{value:e}");
    }
    // 0x1.5c91p-1: 0.68079376220703125 exactly.
    assert_eq!(
        f64::from(0.680_793_76_f32).to_bits(),
        0x3FE5_C910_0000_0000,
        "the tie case is exact"
    );
}

#[test]
fn python_repr_of_non_finite_values() {
    assert_eq!(python_repr(f64::NAN), "nan");
    assert_eq!(python_repr(-f64::NAN), "nan");
    assert_eq!(python_repr(f64::INFINITY), "inf");
    assert_eq!(python_repr(f64::NEG_INFINITY), "-inf");
}

#[test]
fn python_repr_reads_back() {
    // Whatever the notation, the text is the same value.
    let mut generator = SplitMix64::new(42);
    for _ in 0..2000 {
        let value = f64::from_bits(generator.next_value());
        if !value.is_finite() {
            continue;
        }
        let text = python_repr(value);
        let back: f64 = text.parse().unwrap_or(f64::NAN);
        assert_eq!(back.to_bits(), value.to_bits(), "{text}");
    }
}

// ---------------------------------------------------------------- splitmix64

#[test]
fn splitmix64_matches_the_reference() {
    // The published first outputs for seed 0.
    let mut zero = SplitMix64::new(0);
    assert_eq!(zero.next_value(), 0xE220_A839_7B1D_CDAF);
    assert_eq!(zero.next_value(), 0x6E78_9E6A_A1B9_65F4);
    assert_eq!(zero.next_value(), 0x06C4_5D18_8009_454F);
    // Seed 7, as record.py's splitmix64_py computes it.
    let mut seven = SplitMix64::new(7);
    let values: Vec<u64> = (0..4).map(|_| seven.next_value()).collect();
    assert_eq!(
        values,
        [
            0x63CB_E1E4_5932_0DD7,
            0x044C_3CD7_F43C_661C,
            0xE698_4080_BAB1_2A02,
            0x953A_EB70_673E_29CB
        ]
    );
}

// ---------------------------------------------------------------- Argument::parse

fn parse(text: &str) -> Argument {
    match Argument::parse(text) {
        Ok(argument) => argument,
        Err(error) => panic!("`{text}` does not parse: {error}"),
    }
}

fn scalar(text: &str) -> (ElementType, Vec<u8>) {
    match parse(text) {
        Argument::Scalar(ty, bytes) => (ty, bytes),
        other => panic!("`{text}` is not a scalar: {other:?}"),
    }
}

fn buffer(text: &str) -> (ElementType, usize, Vec<u8>) {
    match parse(text) {
        Argument::Buffer(ty, count, bytes) => (ty, count, bytes),
        other => panic!("`{text}` is not a buffer: {other:?}"),
    }
}

fn elements<const N: usize>(bytes: &[u8]) -> Vec<[u8; N]> {
    bytes
        .chunks_exact(N)
        .map(|chunk| {
            let mut element = [0; N];
            element.copy_from_slice(chunk);
            element
        })
        .collect()
}

#[test]
fn scalar_arguments() {
    assert_eq!(
        scalar("u32:5"),
        (ElementType::U32, 5u32.to_le_bytes().to_vec())
    );
    assert_eq!(
        scalar("i32:-7"),
        (ElementType::I32, (-7i32).to_le_bytes().to_vec())
    );
    assert_eq!(scalar("i8:-1"), (ElementType::I8, vec![0xFF]));
    assert_eq!(scalar("u16:65535"), (ElementType::U16, vec![0xFF, 0xFF]));
    assert_eq!(
        scalar("u64:18446744073709551615"),
        (ElementType::U64, u64::MAX.to_le_bytes().to_vec())
    );
    assert_eq!(
        scalar("i64:-9223372036854775808"),
        (ElementType::I64, i64::MIN.to_le_bytes().to_vec())
    );
    assert_eq!(
        scalar("f32:1.5"),
        (ElementType::F32, 1.5f32.to_le_bytes().to_vec())
    );
    assert_eq!(
        scalar("f64:0.1"),
        (ElementType::F64, 0.1f64.to_le_bytes().to_vec())
    );
    assert_eq!(scalar("u8:200"), (ElementType::U8, vec![200]));
}

#[test]
fn buffer_arguments() {
    let (ty, count, bytes) = buffer("u32[4]:zero");
    assert_eq!((ty, count), (ElementType::U32, 4));
    assert_eq!(bytes, vec![0; 16]);

    let (ty, count, bytes) = buffer("i16[5]:iota");
    assert_eq!((ty, count), (ElementType::I16, 5));
    let values: Vec<i16> = elements::<2>(&bytes)
        .into_iter()
        .map(i16::from_le_bytes)
        .collect();
    assert_eq!(values, [0, 1, 2, 3, 4]);

    let (_, _, bytes) = buffer("f32[3]:iota");
    let values: Vec<f32> = elements::<4>(&bytes)
        .into_iter()
        .map(f32::from_le_bytes)
        .collect();
    assert_eq!(values, [0.0, 1.0, 2.0]);

    // rand(SEED): floats in [0, 1) from the top 24 (f32) or 53 (f64) bits,
    // integers from the low bytes; the values record.py computes.
    let (ty, count, bytes) = buffer("f32[4]:rand(7)");
    assert_eq!((ty, count, bytes.len()), (ElementType::F32, 4, 16));
    let values: Vec<String> = elements::<4>(&bytes)
        .into_iter()
        .map(|e| python_repr(f64::from(f32::from_le_bytes(e))))
        .collect();
    assert_eq!(
        values,
        [
            "0.38982969522476196",
            "0.016788244247436523",
            "0.9007606506347656",
            "0.5829302668571472"
        ]
    );
    let (_, _, bytes) = buffer("f64[2]:rand(7)");
    let values: Vec<String> = elements::<8>(&bytes)
        .into_iter()
        .map(|e| python_repr(f64::from_le_bytes(e)))
        .collect();
    assert_eq!(values, ["0.3898297483912715", "0.01678829452815611"]);
    let (_, _, bytes) = buffer("u32[4]:rand(7)");
    let values: Vec<u32> = elements::<4>(&bytes)
        .into_iter()
        .map(u32::from_le_bytes)
        .collect();
    assert_eq!(
        values,
        [1_496_452_567, 4_097_599_004, 3_132_172_802, 1_732_127_179]
    );
    let (_, _, bytes) = buffer("u64[2]:rand( 0 )");
    assert_eq!(bytes[..8], 0xE220_A839_7B1D_CDAFu64.to_le_bytes());

    // randmod(SEED,M): the generator's values modulo M.
    let (ty, count, bytes) = buffer("i32[4]:randmod(7,10)");
    assert_eq!((ty, count), (ElementType::I32, 4));
    let values: Vec<i32> = elements::<4>(&bytes)
        .into_iter()
        .map(i32::from_le_bytes)
        .collect();
    assert_eq!(values, [7, 4, 6, 3]);

    // An empty buffer.
    assert_eq!(buffer("u8[0]:zero"), (ElementType::U8, 0, Vec::new()));
}

#[test]
fn malformed_arguments_are_errors() {
    for text in [
        "",
        "u32",
        "5",
        "x32:5",
        "u32:",
        "u32:five",
        "u32:-1",
        "u8:1.5",
        "f32:one",
        "i32:0x10",
        "u32[4:zero",
        "u32[]:zero",
        "u32[-1]:zero",
        "u32[four]:zero",
        "u32[268435457]:zero",
        "q32[4]:zero",
        "u32[4]:ones",
        "u32[4]:rand",
        "u32[4]:rand()",
        "u32[4]:rand(x)",
        "u32[4]:rand(7",
        "u32[4]:randmod(7)",
        "u32[4]:randmod(7,0)",
        "u32[4]:randmod(x,3)",
        "f32[4]:randmod(7,10)",
    ] {
        match Argument::parse(text) {
            Ok(argument) => panic!("`{text}` parses: {argument:?}"),
            Err(error) => assert!(
                error.to_string().contains(&format!("argument `{text}`")),
                "the message names the argument: {error}"
            ),
        }
    }
}

// ---------------------------------------------------------------- parse_dims

#[test]
fn dimensions() {
    let dims = |text: &str| match parse_dims(text) {
        Ok(dims) => dims,
        Err(error) => panic!("`{text}`: {error}"),
    };
    assert_eq!(dims("256"), [256, 1, 1]);
    assert_eq!(dims("16,8"), [16, 8, 1]);
    assert_eq!(dims("4,3,2"), [4, 3, 2]);
    assert_eq!(dims(" 4 , 3 , 2 "), [4, 3, 2]);
    assert_eq!(dims("4294967295"), [u32::MAX, 1, 1]);
    for text in [
        "",
        "0",
        "1,0",
        "1,2,3,4",
        "-1",
        "x",
        "1,,2",
        "4294967296",
        "1.5",
    ] {
        assert!(parse_dims(text).is_err(), "`{text}` is not dimensions");
    }
}
