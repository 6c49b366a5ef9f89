//! The list collectives through the C ABI, against straightforward
//! sequential implementations written here (integers exactly; floats
//! exactly against the same fixed blocked order, which for one block is the
//! sequential left fold).

#![allow(clippy::unwrap_used, clippy::needless_range_loop)]

mod common;

use common::*;
use pgpu_runtime::list::BLOCK;

const KINDS: [&str; 9] = [
    "add", "mul", "min", "max", "umin", "umax", "and", "or", "xor",
];

/// Counts: empty, tiny, one block, one block exactly, several blocks with a
/// partial last one (the parallel paths).
const SIZES: [usize; 6] = [0, 1, 7, 1000, BLOCK, 3 * BLOCK + 123];

// ----------------------------------------------------------- references

fn int_identity(kind: usize, w: u32) -> i64 {
    match kind {
        0 | 7 | 8 | 5 => 0,
        1 => sext(1, w),
        6 | 4 => -1,
        2 => sext(((1u64 << (w - 1).min(63)) - 1) as i64, w),
        _ => {
            if w >= 64 {
                i64::MIN
            } else {
                -(1i64 << (w - 1))
            }
        }
    }
}

fn int_combine(kind: usize, a: i64, b: i64, w: u32) -> i64 {
    let (ua, ub) = (zext(a, w), zext(b, w));
    sext(
        match kind {
            0 => a.wrapping_add(b),
            1 => a.wrapping_mul(b),
            2 => a.min(b),
            3 => a.max(b),
            4 => ua.min(ub) as i64,
            5 => ua.max(ub) as i64,
            6 => a & b,
            7 => a | b,
            _ => a ^ b,
        },
        w,
    )
}

fn minimum(a: f64, b: f64) -> f64 {
    if a.is_nan() || b.is_nan() {
        f64::NAN
    } else if a == b {
        if a.is_sign_negative() { a } else { b }
    } else if a < b {
        a
    } else {
        b
    }
}

fn maximum(a: f64, b: f64) -> f64 {
    if a.is_nan() || b.is_nan() {
        f64::NAN
    } else if a == b {
        if a.is_sign_negative() { b } else { a }
    } else if a > b {
        a
    } else {
        b
    }
}

fn f64_identity(kind: usize) -> f64 {
    [0.0, 1.0, f64::INFINITY, f64::NEG_INFINITY][kind]
}

fn f64_combine(kind: usize, a: f64, b: f64) -> f64 {
    match kind {
        0 => a + b,
        1 => a * b,
        2 => minimum(a, b),
        _ => maximum(a, b),
    }
}

fn f32_combine(kind: usize, a: f32, b: f32) -> f32 {
    match kind {
        0 => a + b,
        1 => a * b,
        2 => minimum(a as f64, b as f64) as f32,
        _ => maximum(a as f64, b as f64) as f32,
    }
}

/// The sequential scan: (prefixes, total).
fn seq_scan<T: Copy>(values: &[T], id: T, inclusive: bool, f: impl Fn(T, T) -> T) -> (Vec<T>, T) {
    let mut acc = id;
    let mut out = Vec::with_capacity(values.len());
    for &x in values {
        let next = f(acc, x);
        out.push(if inclusive { next } else { acc });
        acc = next;
    }
    (out, acc)
}

/// The blocked scan of the CPU device: block totals folded from the
/// identity, each block scanned from its carry.
fn blocked_scan<T: Copy>(
    values: &[T],
    id: T,
    inclusive: bool,
    f: impl Fn(T, T) -> T,
) -> (Vec<T>, T) {
    if values.len() <= BLOCK {
        return seq_scan(values, id, inclusive, f);
    }
    let mut carry = id;
    let mut out = Vec::new();
    for block in values.chunks(BLOCK) {
        let mut acc = carry;
        let mut total = id;
        for &x in block {
            let next = f(acc, x);
            out.push(if inclusive { next } else { acc });
            acc = next;
            total = f(total, x);
        }
        carry = f(carry, total);
    }
    (out, carry)
}

// ---------------------------------------------------------------- data

fn int_data(g: &mut Gen, kind: usize, w: u32, n: usize) -> Vec<i64> {
    (0..n)
        .map(|_| {
            let raw = match kind {
                // Products that do not collapse to 0 at once.
                1 => [1, -1, 3, -5, 7, 1, 1, -1, 2][g.below(9) as usize],
                _ => g.next() as i64,
            };
            sext(raw, w)
        })
        .collect()
}

fn f64_data(g: &mut Gen, kind: usize, n: usize) -> Vec<f64> {
    (0..n)
        .map(|_| {
            let u = (g.next() >> 11) as f64 / (1u64 << 53) as f64;
            match kind {
                1 => 0.999 + u * 0.002,
                _ => (u - 0.5) * 2000.0,
            }
        })
        .collect()
}

// --------------------------------------------------------------- reduce / scan

#[test]
fn integer_reduce_and_scan_match_the_sequential_definition() {
    let mut g = Gen(0x1234_5678);
    for elem in [I1, I8, I16, I32, I64] {
        let w = int_width(elem);
        for kind in 0..9 {
            for &n in &SIZES {
                let data = int_data(&mut g, kind, w, n);
                let f = |a, b| int_combine(kind, a, b, w);
                let id = int_identity(kind, w);
                let buf = ints_to_buf(elem, &data);
                let what = format!("elem {elem} {} n {n}", KINDS[kind]);
                // SAFETY: buffers of n elements.
                let reduced =
                    unsafe { pgpu_rt_list_reduce(kind as i32, elem, buf.ptr(), n as i64) };
                let (_, expected_total) = seq_scan(&data, id, false, f);
                assert_eq!(reduced as i64, expected_total, "reduce {what}");
                for inclusive in [false, true] {
                    let (expected, total) = seq_scan(&data, id, inclusive, f);
                    // Separate lists.
                    let mut out = Buf::filled(buf.len, 0xAB);
                    // SAFETY: buffers of n elements.
                    let got_total = unsafe {
                        pgpu_rt_list_scan(
                            kind as i32,
                            elem,
                            inclusive as i32,
                            buf.ptr(),
                            out.mut_ptr(),
                            n as i64,
                        )
                    };
                    assert_eq!(got_total as i64, total, "scan total {what}");
                    assert!(
                        buf_to_ints(elem, &out, n) == expected,
                        "scan {what} inclusive {inclusive}"
                    );
                    // In place.
                    let mut inplace = buf.clone();
                    let p = inplace.mut_ptr();
                    // SAFETY: one buffer of n elements.
                    let got_total = unsafe {
                        pgpu_rt_list_scan(kind as i32, elem, inclusive as i32, p, p, n as i64)
                    };
                    assert_eq!(got_total as i64, total, "in-place scan total {what}");
                    assert!(
                        buf_to_ints(elem, &inplace, n) == expected,
                        "in-place scan {what}"
                    );
                }
            }
        }
    }
}

#[test]
fn float_reduce_and_scan_match_the_blocked_order_exactly() {
    let mut g = Gen(99);
    for kind in 0..4 {
        for &n in &SIZES {
            let what = format!("{} n {n}", KINDS[kind]);
            // f64
            let data = f64_data(&mut g, kind, n);
            let buf = f64s_to_buf(&data);
            let f = |a, b| f64_combine(kind, a, b);
            let id = f64_identity(kind);
            // SAFETY: buffers of n elements.
            let reduced = unsafe { pgpu_rt_list_reduce(kind as i32, F64, buf.ptr(), n as i64) };
            let (_, total) = blocked_scan(&data, id, false, f);
            assert_eq!(reduced, total.to_bits(), "f64 reduce {what}");
            for inclusive in [false, true] {
                let (expected, total) = blocked_scan(&data, id, inclusive, f);
                let mut inplace = buf.clone();
                let p = inplace.mut_ptr();
                // SAFETY: one buffer of n elements.
                let got = unsafe {
                    pgpu_rt_list_scan(kind as i32, F64, inclusive as i32, p, p, n as i64)
                };
                assert_eq!(got, total.to_bits(), "f64 scan total {what}");
                let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
                assert!(
                    bits(&buf_to_f64s(&inplace, n)) == bits(&expected),
                    "f64 scan {what}"
                );
            }
            // f32
            let data: Vec<f32> = data.iter().map(|&x| x as f32).collect();
            let buf = f32s_to_buf(&data);
            let f = |a, b| f32_combine(kind, a, b);
            let id = f64_identity(kind) as f32;
            // SAFETY: buffers of n elements.
            let reduced = unsafe { pgpu_rt_list_reduce(kind as i32, F32, buf.ptr(), n as i64) };
            let (_, total) = blocked_scan(&data, id, false, f);
            assert_eq!(reduced, total.to_bits() as u64, "f32 reduce {what}");
            let mut out = Buf::zeroed(buf.len);
            // SAFETY: buffers of n elements.
            let got = unsafe {
                pgpu_rt_list_scan(kind as i32, F32, 0, buf.ptr(), out.mut_ptr(), n as i64)
            };
            let (expected, total) = blocked_scan(&data, id, false, f);
            assert_eq!(got, total.to_bits() as u64, "f32 scan total {what}");
            let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
            assert!(
                bits(&buf_to_f32s(&out, n)) == bits(&expected),
                "f32 scan {what}"
            );
        }
    }
}

#[test]
fn float_min_max_nan_and_signed_zero() {
    let data = [1.0, -0.0, 0.0, f64::NAN, -3.0];
    let buf = f64s_to_buf(&data);
    // SAFETY: buffers of the given counts.
    unsafe {
        assert!(f64::from_bits(pgpu_rt_list_reduce(2, F64, buf.ptr(), 5)).is_nan());
        let min = f64::from_bits(pgpu_rt_list_reduce(2, F64, buf.ptr(), 3));
        assert!(min == 0.0 && min.is_sign_negative());
        let max = f64::from_bits(pgpu_rt_list_reduce(3, F64, buf.ptr().add(8), 2));
        assert!(max == 0.0 && max.is_sign_positive());
        // Float identities of empty lists.
        assert_eq!(
            f64::from_bits(pgpu_rt_list_reduce(2, F64, std::ptr::null(), 0)),
            f64::INFINITY
        );
        assert_eq!(
            f32::from_bits(pgpu_rt_list_reduce(3, F32, std::ptr::null(), 0) as u32),
            f32::NEG_INFINITY
        );
        assert_eq!(
            f64::from_bits(pgpu_rt_list_reduce(1, F64, std::ptr::null(), 0)),
            1.0
        );
        // The NaN of min/max is the positive quiet NaN, as in the interpreter.
        let neg_nan = f64s_to_buf(&[-f64::NAN, 1.0]);
        let r = f64::from_bits(pgpu_rt_list_reduce(3, F64, neg_nan.ptr(), 2));
        assert!(r.is_nan() && r.is_sign_positive());
    }
}

#[test]
fn empty_lists_give_identities_and_touch_nothing() {
    let null = std::ptr::null_mut::<u8>();
    for elem in [I1, I8, I16, I32, I64] {
        let w = int_width(elem);
        for kind in 0..9 {
            // SAFETY: n = 0 reads and writes nothing.
            unsafe {
                let r = pgpu_rt_list_reduce(kind as i32, elem, null, 0);
                assert_eq!(
                    r as i64,
                    int_identity(kind, w),
                    "elem {elem} {}",
                    KINDS[kind]
                );
                let s = pgpu_rt_list_scan(kind as i32, elem, 1, null, null, 0);
                assert_eq!(s, r);
            }
        }
    }
    // SAFETY: n = 0 reads and writes nothing.
    unsafe {
        pgpu_rt_list_sort_idx(F64, null, std::ptr::null_mut(), 0);
        assert_eq!(pgpu_rt_list_compact(4, null, null, null, 0, 5), 5);
        assert_eq!(pgpu_rt_list_split(4, null, null, null, 0, 0), 0);
        assert_eq!(
            pgpu_rt_list_expand(I32, null, std::ptr::null_mut(), null, 0),
            0
        );
    }
    // All flags false: compact writes nothing (a null list is fine).
    let values = ints_to_buf(I32, &[1, 2, 3]);
    let flags = Buf::zeroed(3);
    // SAFETY: buffers of 3 elements; nothing is written.
    assert_eq!(
        unsafe { pgpu_rt_list_compact(4, values.ptr(), flags.ptr(), null, 3, 2) },
        2
    );
    // All counts <= 0: expand writes nothing.
    let counts = ints_to_buf(I16, &[0, -3, 0, -32768]);
    // SAFETY: 4 counts; nothing is written.
    assert_eq!(
        unsafe { pgpu_rt_list_expand(I16, counts.ptr(), std::ptr::null_mut(), null, 4) },
        0
    );
}

// --------------------------------------------------------------- sort_idx

/// The interpreter's key order, written independently.
fn key_cmp(a: f64, b: f64) -> std::cmp::Ordering {
    let class = |x: f64| {
        if x.is_nan() {
            if x.is_sign_negative() { -1 } else { 1 }
        } else {
            0
        }
    };
    match (class(a), class(b)) {
        (0, 0) => a.partial_cmp(&b).unwrap_or(std::cmp::Ordering::Equal),
        (ca, cb) => ca.cmp(&cb),
    }
}

fn stable_order<T>(keys: &[T], cmp: impl Fn(&T, &T) -> std::cmp::Ordering) -> Vec<i64> {
    let mut order: Vec<usize> = (0..keys.len()).collect();
    order.sort_by(|&a, &b| cmp(&keys[a], &keys[b]));
    order.into_iter().map(|i| i as i64).collect()
}

fn sort_abi(elem: i32, keys: &Buf, n: usize) -> Vec<i64> {
    let mut out = Buf::filled(n * 8, 0xFF);
    // SAFETY: n keys, n indices.
    unsafe { pgpu_rt_list_sort_idx(elem, keys.ptr(), out.mut_ptr().cast(), n as i64) };
    buf_to_i64s(&out, n)
}

#[test]
fn sort_idx_integers_is_stable_with_ties() {
    let mut g = Gen(5);
    for elem in [I1, I8, I16, I32, I64] {
        let w = int_width(elem);
        for n in [1, 2, 10, 1000, 40_000, 2 * BLOCK + 17] {
            // Few distinct keys: many ties; some large magnitudes.
            let keys: Vec<i64> = (0..n)
                .map(|i| {
                    let v = if i % 7 == 0 {
                        g.next() as i64
                    } else {
                        g.below(11) as i64 - 5
                    };
                    sext(v, w)
                })
                .collect();
            let expected = stable_order(&keys, |a, b| a.cmp(b));
            assert!(
                sort_abi(elem, &ints_to_buf(elem, &keys), n) == expected,
                "elem {elem} n {n}"
            );
        }
    }
}

#[test]
fn sort_idx_floats_orders_nans_by_sign_and_zeros_equal() {
    let special = [
        0.0,
        -0.0,
        f64::NAN,
        -f64::NAN,
        f64::from_bits(f64::NAN.to_bits() | 3),
        -f64::from_bits(f64::NAN.to_bits() | 9),
        f64::INFINITY,
        f64::NEG_INFINITY,
        1.5,
        -1.5,
        f64::MIN_POSITIVE / 4.0,
        -f64::MIN_POSITIVE / 4.0,
    ];
    let mut g = Gen(77);
    for n in [special.len(), 500, 40_000, 2 * BLOCK + 1] {
        let keys: Vec<f64> = (0..n)
            .map(|i| {
                if i < special.len() || g.below(4) == 0 {
                    special[g.below(special.len() as u64) as usize]
                } else {
                    (g.below(21) as f64 - 10.0) * 0.5
                }
            })
            .collect();
        let expected = stable_order(&keys, |a, b| key_cmp(*a, *b));
        assert!(
            sort_abi(F64, &f64s_to_buf(&keys), n) == expected,
            "f64 n {n}"
        );
        let keys32: Vec<f32> = keys.iter().map(|&x| x as f32).collect();
        let expected = stable_order(&keys32, |a, b| key_cmp(*a as f64, *b as f64));
        assert!(
            sort_abi(F32, &f32s_to_buf(&keys32), n) == expected,
            "f32 n {n}"
        );
    }
    // The documented order on a small case.
    let keys = [
        1.0,
        f64::NAN,
        -0.0,
        f64::NEG_INFINITY,
        -f64::NAN,
        0.0,
        f64::NAN,
    ];
    assert_eq!(
        sort_abi(F64, &f64s_to_buf(&keys), 7),
        vec![4, 3, 2, 5, 0, 1, 6]
    );
}

// --------------------------------------------------------------- compact / split

/// Elements of `size` bytes with distinct contents.
fn elements(g: &mut Gen, size: usize, n: usize) -> Vec<Vec<u8>> {
    (0..n)
        .map(|_| (0..size).map(|_| g.next() as u8).collect())
        .collect()
}

fn flag_bytes(g: &mut Gen, n: usize, density: u64) -> Vec<u8> {
    (0..n)
        .map(|_| {
            if g.below(100) < density {
                [1, 2, 255][g.below(3) as usize]
            } else {
                0
            }
        })
        .collect()
}

#[test]
fn compact_and_split_move_elements_of_any_size_after_base() {
    let mut g = Gen(31337);
    for size in [1usize, 2, 3, 4, 8, 12, 16] {
        for n in [1, 5, 1000, BLOCK + 1, 2 * BLOCK + 999] {
            if size > 4 && n > BLOCK + 1 && size != 8 {
                continue; // keep the run short; 8 covers the large path
            }
            for density in [0, 30, 100] {
                let items = elements(&mut g, size, n);
                let flags = flag_bytes(&mut g, n, density);
                let values = Buf::from_bytes(&items.concat());
                let flag_buf = Buf::from_bytes(&flags);
                let base = (g.below(4)) as usize;
                let what = format!("size {size} n {n} density {density} base {base}");
                // compact
                let kept: Vec<u8> = items
                    .iter()
                    .zip(&flags)
                    .filter(|(_, f)| **f != 0)
                    .flat_map(|(e, _)| e.clone())
                    .collect();
                let room = (base + n + 2) * size;
                let mut list = Buf::filled(room, 0xEE);
                // SAFETY: buffers with room for base + n elements.
                let len = unsafe {
                    pgpu_rt_list_compact(
                        size as i64,
                        values.ptr(),
                        flag_buf.ptr(),
                        list.mut_ptr(),
                        n as i64,
                        base as i64,
                    )
                };
                assert_eq!(
                    len as usize,
                    base + kept.len() / size,
                    "compact length {what}"
                );
                let bytes = list.bytes();
                assert!(
                    bytes[..base * size].iter().all(|&b| b == 0xEE),
                    "compact before base {what}"
                );
                assert!(
                    bytes[base * size..base * size + kept.len()] == kept[..],
                    "compact {what}"
                );
                assert!(
                    bytes[base * size + kept.len()..].iter().all(|&b| b == 0xEE),
                    "compact after {what}"
                );
                // split
                let mut expected: Vec<u8> = Vec::new();
                for wanted in [false, true] {
                    for (e, f) in items.iter().zip(&flags) {
                        if (*f != 0) == wanted {
                            expected.extend_from_slice(e);
                        }
                    }
                }
                let mut list = Buf::filled(room, 0xEE);
                // SAFETY: buffers with room for base + n elements.
                let len = unsafe {
                    pgpu_rt_list_split(
                        size as i64,
                        values.ptr(),
                        flag_buf.ptr(),
                        list.mut_ptr(),
                        n as i64,
                        base as i64,
                    )
                };
                assert_eq!(len as usize, base + n, "split length {what}");
                let bytes = list.bytes();
                assert!(
                    bytes[..base * size].iter().all(|&b| b == 0xEE),
                    "split before base {what}"
                );
                assert!(
                    bytes[base * size..(base + n) * size] == expected[..],
                    "split {what}"
                );
                assert!(
                    bytes[(base + n) * size..].iter().all(|&b| b == 0xEE),
                    "split after {what}"
                );
            }
        }
    }
}

#[test]
fn compact_appends_in_place_of_a_running_list() {
    // Two compactions appending to one list, the second at the first's length.
    let values = ints_to_buf(I32, &[10, 11, 12, 13]);
    let flags = Buf::from_bytes(&[1, 0, 1, 1]);
    let mut list = Buf::zeroed(8 * 4);
    // SAFETY: room for 8 elements.
    unsafe {
        let len = pgpu_rt_list_compact(4, values.ptr(), flags.ptr(), list.mut_ptr(), 4, 0);
        assert_eq!(len, 3);
        let len = pgpu_rt_list_compact(4, values.ptr(), flags.ptr(), list.mut_ptr(), 2, len);
        assert_eq!(len, 4);
    }
    assert_eq!(buf_to_ints(I32, &list, 4), vec![10, 12, 13, 10]);
}

// --------------------------------------------------------------- expand

#[test]
fn expand_counts_of_every_integer_type() {
    let mut g = Gen(4242);
    for elem in [I8, I16, I32, I64] {
        let w = int_width(elem);
        for n in [1, 9, 1000, 2 * BLOCK + 5] {
            let counts: Vec<i64> = (0..n)
                .map(|_| match g.below(10) {
                    0 => sext(-(g.below(100) as i64) - 1, w), // negative
                    1..=3 => 0,
                    4 => 9,
                    _ => g.below(4) as i64,
                })
                .collect();
            let mut parents_ref = Vec::new();
            let mut children_ref = Vec::new();
            for (i, &c) in counts.iter().enumerate() {
                for child in 0..c.max(0) {
                    parents_ref.push(i as i64);
                    children_ref.push(child);
                }
            }
            let m = parents_ref.len();
            let count_buf = ints_to_buf(elem, &counts);
            let mut parents = Buf::filled((m + 1) * 8, 0xCC);
            let mut children = Buf::filled((m + 1) * elem_size(elem), 0xCC);
            // SAFETY: room for m (+1 sentinel) children.
            let total = unsafe {
                pgpu_rt_list_expand(
                    elem,
                    count_buf.ptr(),
                    parents.mut_ptr().cast(),
                    children.mut_ptr(),
                    n as i64,
                )
            };
            let what = format!("elem {elem} n {n}");
            assert_eq!(total as usize, m, "expand total {what}");
            assert!(buf_to_i64s(&parents, m) == parents_ref, "parents {what}");
            assert!(
                buf_to_ints(elem, &children, m) == children_ref,
                "children {what}"
            );
            assert!(
                parents.bytes()[m * 8..].iter().all(|&b| b == 0xCC),
                "parents sentinel {what}"
            );
            let size = elem_size(elem);
            assert!(
                children.bytes()[m * size..].iter().all(|&b| b == 0xCC),
                "children sentinel {what}"
            );
        }
    }
    // i1 counts are signed: true is -1, so no children.
    let counts = ints_to_buf(I1, &[-1, 0, -1]);
    // SAFETY: nothing is written.
    let total = unsafe {
        pgpu_rt_list_expand(
            I1,
            counts.ptr(),
            std::ptr::null_mut(),
            std::ptr::null_mut(),
            3,
        )
    };
    assert_eq!(total, 0);
}
