//! The C ABI of the list collectives (`pgpu.list.*`).
//!
//! Every function checks its codes (see [`crate::elem`]), that `n` (the
//! op's `count`) and `base` are not negative, that every list it touches is
//! non-null and aligned for its elements, and that no output list overlaps
//! an input or another output (except the in-place scan), then runs the
//! typed collective of [`crate::list`]. Lists are only touched for
//! `n > 0` (null lists are fine for an empty count). A failed check is
//! reported as `pgpu runtime: error: ...` and exits with status 1.
//!
//! - `pgpu_rt_list_reduce(kind, elem, values, n) -> u64`: the reduction's
//!   bits (the identity for `n = 0`).
//! - `pgpu_rt_list_scan(kind, elem, inclusive, values, scanned, n) -> u64`:
//!   writes the exclusive (or, `inclusive != 0`, inclusive) prefixes to
//!   `scanned[0 .. n)`, returns the total's bits; `values == scanned` scans
//!   in place.
//! - `pgpu_rt_list_sort_idx(elem, keys, indices, n)`: `indices[i]` (i64) is
//!   the index of the i-th smallest key, stable.
//! - `pgpu_rt_list_compact(elem_bytes, values, flags, list, n, base) -> i64`:
//!   appends the values whose flag byte is non-zero to `list[base ..]`,
//!   returns `base + kept`.
//! - `pgpu_rt_list_split(elem_bytes, values, flags, list, n, base) -> i64`:
//!   writes the values with a zero flag, then those with a non-zero flag, to
//!   `list[base ..]`, returns `base + n`.
//! - `pgpu_rt_list_expand(count_elem, counts, parents, children, n) -> i64`:
//!   for each `i` and each `c` in `0 .. counts[i]`, the next slot `m` gets
//!   `parents[m] = i` (i64) and `children[m] = c` (the counts' type);
//!   returns the number of children. Integer counts only (codes 0 to 4; an
//!   `i1` true is -1 and gives no children, as in the interpreter).

use crate::elem::{Bool, Elem, Integer, Kind, Scalar};
use crate::error::{RtError, guard};
use crate::list::{self, ScanIo};

/// A list argument: its address and byte length, for the checks.
#[derive(Clone, Copy)]
struct Span {
    what: &'static str,
    start: usize,
    bytes: usize,
}

impl Span {
    fn overlaps(&self, other: &Span) -> bool {
        self.bytes > 0
            && other.bytes > 0
            && self.start < other.start.saturating_add(other.bytes)
            && other.start < self.start.saturating_add(self.bytes)
    }
}

fn count(op: &'static str, what: &'static str, value: i64) -> Result<usize, RtError> {
    usize::try_from(value).map_err(|_| RtError::Negative { op, what, value })
}

/// The span of `n` elements of `size` bytes and `align` at `ptr`, checked.
fn span(
    op: &'static str,
    what: &'static str,
    ptr: usize,
    n: usize,
    size: usize,
    align: usize,
) -> Result<Span, RtError> {
    let bytes = n.checked_mul(size).ok_or(RtError::Overflow {
        op,
        what: "the list's byte size",
    })?;
    if bytes > 0
        && (ptr == 0
            || ptr & (align - 1) != 0
            || ptr
                .checked_add(bytes)
                .is_none_or(|e| e > isize::MAX as usize))
    {
        return Err(RtError::BadPointer { op, what });
    }
    Ok(Span {
        what,
        start: ptr,
        bytes,
    })
}

/// Checks that `outputs` overlap neither `inputs` nor each other.
fn disjoint(op: &'static str, outputs: &[Span], inputs: &[Span]) -> Result<(), RtError> {
    for (index, output) in outputs.iter().enumerate() {
        for other in inputs.iter().chain(&outputs[index + 1..]) {
            if output.overlaps(other) {
                return Err(RtError::Overlap {
                    op,
                    output: output.what,
                    input: other.what,
                });
            }
        }
    }
    Ok(())
}

/// # Safety
/// `span` was checked by [`span`] and its memory is readable.
unsafe fn slice<'a, T>(span: Span) -> &'a [T] {
    if span.bytes == 0 {
        return &[];
    }
    // SAFETY: non-null, aligned, in bounds (checked), readable (caller).
    unsafe { std::slice::from_raw_parts(span.start as *const T, span.bytes / size_of::<T>()) }
}

/// # Safety
/// `span` was checked by [`span`], its memory is writable and no other
/// live slice overlaps it.
unsafe fn slice_mut<'a, T>(span: Span) -> &'a mut [T] {
    if span.bytes == 0 {
        return &mut [];
    }
    // SAFETY: as `slice`, plus exclusivity (caller).
    unsafe { std::slice::from_raw_parts_mut(span.start as *mut T, span.bytes / size_of::<T>()) }
}

/// Runs `$body` with `$t` bound to the Rust type of element code `$elem`.
macro_rules! with_scalar {
    ($elem:expr, $t:ident => $body:expr) => {
        match $elem {
            Elem::I1 => {
                type $t = Bool;
                $body
            }
            Elem::I8 => {
                type $t = i8;
                $body
            }
            Elem::I16 => {
                type $t = i16;
                $body
            }
            Elem::I32 => {
                type $t = i32;
                $body
            }
            Elem::I64 => {
                type $t = i64;
                $body
            }
            Elem::F32 => {
                type $t = f32;
                $body
            }
            Elem::F64 => {
                type $t = f64;
                $body
            }
        }
    };
}

/// # Safety
/// `values` holds `n` readable elements of type `T`.
unsafe fn reduce_typed<T: Scalar>(kind: Kind, values: *const u8, n: usize) -> Result<u64, RtError> {
    let op = "pgpu_rt_list_reduce";
    let values = span(
        op,
        "values",
        values as usize,
        n,
        size_of::<T>(),
        align_of::<T>(),
    )?;
    // SAFETY: checked span, readable by the caller's contract.
    let values: &[T] = unsafe { slice(values) };
    Ok(list::reduce(kind, values)?.bits())
}

/// The reduction of `values[0 .. n)` with combining kind `kind`.
///
/// # Safety
/// `values` holds `n` readable elements of type `elem`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn pgpu_rt_list_reduce(
    kind: i32,
    elem: i32,
    values: *const u8,
    n: i64,
) -> u64 {
    guard(|| {
        let op = "pgpu_rt_list_reduce";
        let elem = Elem::from_code(op, elem)?;
        let kind = Kind::checked(op, kind, elem)?;
        let n = count(op, "count", n)?;
        // SAFETY: the caller's contract.
        with_scalar!(elem, T => unsafe { reduce_typed::<T>(kind, values, n) })
    })
}

/// # Safety
/// As [`pgpu_rt_list_scan`].
unsafe fn scan_typed<T: Scalar>(
    kind: Kind,
    inclusive: bool,
    values: *const u8,
    scanned: *mut u8,
    n: usize,
) -> Result<u64, RtError> {
    let op = "pgpu_rt_list_scan";
    let (size, align) = (size_of::<T>(), align_of::<T>());
    let input = span(op, "values", values as usize, n, size, align)?;
    let output = span(op, "scanned", scanned as usize, n, size, align)?;
    let io = if input.start == output.start {
        // SAFETY: one list, readable and writable (caller).
        ScanIo::InPlace(unsafe { slice_mut::<T>(output) })
    } else {
        disjoint(op, &[output], &[input])?;
        // SAFETY: checked, disjoint spans (caller: readable / writable).
        unsafe {
            ScanIo::Separate {
                values: slice::<T>(input),
                scanned: slice_mut::<T>(output),
            }
        }
    };
    Ok(list::scan(kind, inclusive, io)?.bits())
}

/// The exclusive (inclusive if `inclusive != 0`) scan of `values[0 .. n)`
/// into `scanned[0 .. n)`; returns the total's bits.
///
/// # Safety
/// `values` holds `n` readable and `scanned` `n` writable elements of type
/// `elem`; they are the same list or do not overlap.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn pgpu_rt_list_scan(
    kind: i32,
    elem: i32,
    inclusive: i32,
    values: *const u8,
    scanned: *mut u8,
    n: i64,
) -> u64 {
    guard(|| {
        let op = "pgpu_rt_list_scan";
        let elem = Elem::from_code(op, elem)?;
        let kind = Kind::checked(op, kind, elem)?;
        let n = count(op, "count", n)?;
        let inclusive = inclusive != 0;
        // SAFETY: the caller's contract.
        with_scalar!(elem, T => unsafe { scan_typed::<T>(kind, inclusive, values, scanned, n) })
    })
}

/// # Safety
/// As [`pgpu_rt_list_sort_idx`].
unsafe fn sort_typed<T: Scalar>(
    keys: *const u8,
    indices: *mut i64,
    n: usize,
) -> Result<(), RtError> {
    let op = "pgpu_rt_list_sort_idx";
    let keys = span(
        op,
        "keys",
        keys as usize,
        n,
        size_of::<T>(),
        align_of::<T>(),
    )?;
    let indices = span(op, "indices", indices as usize, n, 8, align_of::<i64>())?;
    disjoint(op, &[indices], &[keys])?;
    // SAFETY: checked, disjoint spans (caller: readable / writable).
    unsafe { list::sort_idx::<T>(slice(keys), slice_mut(indices)) }
}

/// The stable sorting permutation of `keys[0 .. n)` into `indices[0 .. n)`.
///
/// # Safety
/// `keys` holds `n` readable elements of type `elem`, `indices` `n`
/// writable i64 that do not overlap them.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn pgpu_rt_list_sort_idx(
    elem: i32,
    keys: *const u8,
    indices: *mut i64,
    n: i64,
) {
    guard(|| {
        let op = "pgpu_rt_list_sort_idx";
        let elem = Elem::from_code(op, elem)?;
        let n = count(op, "count", n)?;
        // SAFETY: the caller's contract.
        with_scalar!(elem, T => unsafe { sort_typed::<T>(keys, indices, n) })
    })
}

/// The arguments of compact and split.
struct MoveArgs {
    elem_bytes: i64,
    values: *const u8,
    flags: *const u8,
    list: *mut u8,
    n: i64,
    base: i64,
}

/// The shared part of compact and split.
///
/// # Safety
/// As [`pgpu_rt_list_compact`].
unsafe fn compact_or_split(
    op: &'static str,
    is_split: bool,
    args: MoveArgs,
) -> Result<i64, RtError> {
    let MoveArgs {
        elem_bytes,
        values,
        flags,
        list,
        n,
        base,
    } = args;
    let size = match usize::try_from(elem_bytes) {
        Ok(size) if size > 0 => size,
        _ => {
            return Err(RtError::BadElementSize {
                op,
                bytes: elem_bytes,
            });
        }
    };
    let n = count(op, "count", n)?;
    let base_elems = count(op, "base", base)?;
    if n == 0 {
        return Ok(base);
    }
    let values = span(op, "values", values as usize, n, size, 1)?;
    let flags = span(op, "flags", flags as usize, n, 1, 1)?;
    // SAFETY: checked span, readable (caller).
    let flag_bytes: &[u8] = unsafe { slice(flags) };
    let counts = list::flag_counts(flag_bytes)?;
    let written = if is_split { n } else { counts.iter().sum() };
    let overflow = RtError::Overflow {
        op,
        what: "the list's length",
    };
    let start = base_elems
        .checked_mul(size)
        .and_then(|offset| (list as usize).checked_add(offset))
        .ok_or(overflow.clone())?;
    if list.is_null() && written > 0 {
        return Err(RtError::BadPointer { op, what: "output" });
    }
    let output = span(op, "output", start, written, size, 1)?;
    disjoint(op, &[output], &[values, flags])?;
    // SAFETY: checked, disjoint spans (caller: readable / writable).
    let (value_bytes, out): (&[u8], &mut [u8]) = unsafe { (slice(values), slice_mut(output)) };
    if is_split {
        list::split(value_bytes, size, flag_bytes, &counts, out)?;
    } else {
        list::compact(value_bytes, size, flag_bytes, &counts, out)?;
    }
    base.checked_add(written as i64).ok_or(overflow)
}

/// Appends the elements of `values[0 .. n)` (of `elem_bytes` bytes) whose
/// flag byte is non-zero to `list[base ..]`, in order; returns
/// `base + kept`.
///
/// # Safety
/// `values` holds `n` readable elements, `flags` `n` readable bytes, and
/// `list` room for `base + kept` elements that do not overlap them.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn pgpu_rt_list_compact(
    elem_bytes: i64,
    values: *const u8,
    flags: *const u8,
    list: *mut u8,
    n: i64,
    base: i64,
) -> i64 {
    // SAFETY: the caller's contract.
    guard(|| unsafe {
        let args = MoveArgs {
            elem_bytes,
            values,
            flags,
            list,
            n,
            base,
        };
        compact_or_split("pgpu_rt_list_compact", false, args)
    })
}

/// Writes the elements of `values[0 .. n)` whose flag byte is zero, then
/// those whose flag is non-zero, each in order, to `list[base ..]`;
/// returns `base + n`.
///
/// # Safety
/// As [`pgpu_rt_list_compact`], with room for `base + n` elements.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn pgpu_rt_list_split(
    elem_bytes: i64,
    values: *const u8,
    flags: *const u8,
    list: *mut u8,
    n: i64,
    base: i64,
) -> i64 {
    // SAFETY: the caller's contract.
    guard(|| unsafe {
        let args = MoveArgs {
            elem_bytes,
            values,
            flags,
            list,
            n,
            base,
        };
        compact_or_split("pgpu_rt_list_split", true, args)
    })
}

/// # Safety
/// As [`pgpu_rt_list_expand`].
unsafe fn expand_typed<C: Integer>(
    counts: *const u8,
    parents: *mut i64,
    children: *mut u8,
    n: usize,
) -> Result<i64, RtError> {
    let op = "pgpu_rt_list_expand";
    let (size, align) = (size_of::<C>(), align_of::<C>());
    let counts = span(op, "counts", counts as usize, n, size, align)?;
    // SAFETY: checked span, readable (caller).
    let counts: &[C] = unsafe { slice(counts) };
    let sums = list::expand_counts(counts)?;
    let total: i64 = sums.iter().sum();
    let m = total as usize;
    let parents = span(op, "parents", parents as usize, m, 8, align_of::<i64>())?;
    let children = span(op, "children", children as usize, m, size, align)?;
    let counts_span = span(op, "counts", counts.as_ptr() as usize, n, size, align)?;
    disjoint(op, &[parents, children], &[counts_span])?;
    // SAFETY: checked, disjoint spans (caller: writable).
    let (parents, children) = unsafe { (slice_mut::<i64>(parents), slice_mut::<C>(children)) };
    list::expand(counts, &sums, parents, children)?;
    Ok(total)
}

/// Expands child counts into parent and child-id lists; returns the number
/// of children.
///
/// # Safety
/// `counts` holds `n` readable integers of type `count_elem`; `parents`
/// (i64) and `children` (of `count_elem`) have room for every child and
/// overlap neither `counts` nor each other.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn pgpu_rt_list_expand(
    count_elem: i32,
    counts: *const u8,
    parents: *mut i64,
    children: *mut u8,
    n: i64,
) -> i64 {
    guard(|| {
        let op = "pgpu_rt_list_expand";
        let elem = Elem::from_code(op, count_elem)?;
        let n = count(op, "count", n)?;
        // SAFETY: the caller's contract.
        unsafe {
            match elem {
                Elem::I1 => expand_typed::<Bool>(counts, parents, children, n),
                Elem::I8 => expand_typed::<i8>(counts, parents, children, n),
                Elem::I16 => expand_typed::<i16>(counts, parents, children, n),
                Elem::I32 => expand_typed::<i32>(counts, parents, children, n),
                Elem::I64 => expand_typed::<i64>(counts, parents, children, n),
                Elem::F32 | Elem::F64 => Err(RtError::NeedsInteger { op, what: "counts" }),
            }
        }
    })
}
