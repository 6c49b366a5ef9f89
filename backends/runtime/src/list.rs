//! The list collectives of the `pgpu.list.*` ops on the CPU device.
//!
//! The typed functions here work on slices; the C ABI in [`crate::list_abi`]
//! checks codes, counts, pointers and overlaps and calls them. The
//! semantics are the op descriptions' (dialects/pgpu PgpuListOps.td); the
//! element and kind codes are in [`crate::elem`].
//!
//! **Blocking.** Lists are cut into blocks of [`BLOCK`] elements, a fixed
//! size that does not depend on the thread count, and blocks run on the
//! pool. A list of at most one block runs sequentially on the calling
//! thread.
//!
//! - `reduce`: each block folds its elements in index order starting from
//!   the identity; the block results are then folded in block order,
//!   again from the identity. Integer kinds and float `min`/`max` are
//!   associative, so their result is the sequential one; float `add`/`mul`
//!   are not, so their result is that of this fixed blocked order:
//!   deterministic on every machine and thread count, and for up to
//!   [`BLOCK`] elements exactly the interpreter's left fold.
//! - `scan`: block totals as for `reduce`; their exclusive scan (from the
//!   identity) gives each block's carry-in; each block then scans its
//!   elements from its carry-in (`acc = acc op x`). The total is the
//!   `reduce` result, bit for bit.
//! - `sort_idx`: keys become unsigned numbers in the key order
//!   ([`Scalar::sort_key`]: -0 equals +0, NaNs canonical per sign), paired
//!   with their index, so all pairs differ and an unstable sort of the
//!   pairs is the stable sort of the keys. Up to [`SORT_SEQUENTIAL`]
//!   elements one `sort_unstable`; above, one run per thread sorted in
//!   parallel, then rounds of pairwise merges, each merge cut into pieces
//!   of about [`MERGE_PIECE`] outputs by merge-path binary search, all
//!   pieces of a round in parallel.
//! - `compact`, `split`, `expand`: per-block counts in parallel, an
//!   exclusive scan of the counts, then every block writes its own
//!   disjoint output range in parallel. Their results do not depend on the
//!   blocking.

use crate::elem::{Integer, Kind, Scalar};
use crate::error::RtError;
use crate::pool::{for_each_task, pool, split_lengths};

/// Elements per block of the parallel collectives.
pub const BLOCK: usize = 1 << 16;
/// Up to this many keys, `sort_idx` sorts on the calling thread.
pub const SORT_SEQUENTIAL: usize = 1 << 15;
/// Outputs per piece of a parallel merge.
pub const MERGE_PIECE: usize = 1 << 15;

fn fold<T: Scalar>(kind: Kind, values: &[T]) -> T {
    values
        .iter()
        .fold(T::identity(kind), |acc, &x| T::combine(kind, acc, x))
}

/// The per-block folds of `values`.
fn block_totals<T: Scalar>(kind: Kind, values: &[T]) -> Result<Vec<T>, RtError> {
    let mut totals = vec![T::identity(kind); values.len().div_ceil(BLOCK)];
    let tasks: Vec<_> = totals.iter_mut().zip(values.chunks(BLOCK)).collect();
    for_each_task(tasks, |(total, block)| *total = fold(kind, block))?;
    Ok(totals)
}

/// `pgpu.list.reduce`: the reduction of `values` (the identity if empty).
pub fn reduce<T: Scalar>(kind: Kind, values: &[T]) -> Result<T, RtError> {
    if values.len() <= BLOCK {
        return Ok(fold(kind, values));
    }
    Ok(fold(kind, &block_totals(kind, values)?))
}

/// The input and output of a scan.
#[derive(Debug)]
pub enum ScanIo<'a, T> {
    /// `values` and `scanned` are one list.
    InPlace(&'a mut [T]),
    Separate {
        values: &'a [T],
        scanned: &'a mut [T],
    },
}

/// Scans one block from `acc`; `values` is `None` in place.
fn scan_block<T: Scalar>(
    kind: Kind,
    inclusive: bool,
    mut acc: T,
    values: Option<&[T]>,
    scanned: &mut [T],
) {
    for index in 0..scanned.len() {
        let x = match values {
            Some(values) => values[index],
            None => scanned[index],
        };
        let next = T::combine(kind, acc, x);
        scanned[index] = if inclusive { next } else { acc };
        acc = next;
    }
}

/// `pgpu.list.scan`: writes the prefixes, returns the total.
pub fn scan<T: Scalar>(kind: Kind, inclusive: bool, io: ScanIo<'_, T>) -> Result<T, RtError> {
    let (values, scanned): (Option<&[T]>, &mut [T]) = match io {
        ScanIo::InPlace(list) => (None, list),
        ScanIo::Separate { values, scanned } => {
            let n = values.len().min(scanned.len());
            (Some(&values[..n]), &mut scanned[..n])
        }
    };
    let n = scanned.len();
    if n <= BLOCK {
        let total = fold(kind, values.unwrap_or(&*scanned));
        scan_block(kind, inclusive, T::identity(kind), values, scanned);
        return Ok(total);
    }
    let totals = block_totals(kind, values.unwrap_or(&*scanned))?;
    let mut carries = Vec::with_capacity(totals.len());
    let mut acc = T::identity(kind);
    for &total in &totals {
        carries.push(acc);
        acc = T::combine(kind, acc, total);
    }
    let tasks: Vec<_> = scanned
        .chunks_mut(BLOCK)
        .zip(carries)
        .enumerate()
        .map(|(block, (out, carry))| {
            let input = values.map(|v| &v[block * BLOCK..block * BLOCK + out.len()]);
            (out, carry, input)
        })
        .collect();
    for_each_task(tasks, |(out, carry, input)| {
        scan_block(kind, inclusive, carry, input, out)
    })?;
    Ok(acc)
}

/// `pgpu.list.sort_idx`: `indices[i]` is the index of the i-th smallest key
/// (stable). `indices` has the length of `keys`.
pub fn sort_idx<T: Scalar>(keys: &[T], indices: &mut [i64]) -> Result<(), RtError> {
    let n = keys.len().min(indices.len());
    let keys = &keys[..n];
    let mut pairs: Vec<(u64, u64)> = if n <= BLOCK {
        keys.iter()
            .enumerate()
            .map(|(i, k)| (k.sort_key(), i as u64))
            .collect()
    } else {
        let mut pairs = vec![(0u64, 0u64); n];
        let tasks: Vec<_> = pairs.chunks_mut(BLOCK).enumerate().collect();
        for_each_task(tasks, |(block, out)| {
            let start = block * BLOCK;
            for (offset, slot) in out.iter_mut().enumerate() {
                *slot = (keys[start + offset].sort_key(), (start + offset) as u64);
            }
        })?;
        pairs
    };
    if n <= SORT_SEQUENTIAL || pool().threads() == 1 {
        pairs.sort_unstable();
    } else {
        pairs = parallel_sort(pairs)?;
    }
    let tasks: Vec<_> = indices[..n]
        .chunks_mut(BLOCK)
        .zip(pairs.chunks(BLOCK))
        .collect();
    for_each_task(tasks, |(out, pairs)| {
        for (slot, pair) in out.iter_mut().zip(pairs) {
            *slot = pair.1 as i64;
        }
    })
}

/// Sorts distinct pairs: runs sorted in parallel, then merge rounds.
fn parallel_sort(data: Vec<(u64, u64)>) -> Result<Vec<(u64, u64)>, RtError> {
    let run = data
        .len()
        .div_ceil(pool().threads())
        .max(SORT_SEQUENTIAL / 2);
    sort_runs(data, run)
}

/// Sorts runs of `run` pairs in parallel, then merges them.
fn sort_runs(mut data: Vec<(u64, u64)>, run: usize) -> Result<Vec<(u64, u64)>, RtError> {
    let n = data.len();
    for_each_task(data.chunks_mut(run).collect(), |chunk| {
        chunk.sort_unstable()
    })?;
    let mut runs: Vec<(usize, usize)> =
        (0..n).step_by(run).map(|s| (s, (s + run).min(n))).collect();
    let mut other = vec![(0u64, 0u64); n];
    while runs.len() > 1 {
        // Every piece of the round: (a, b, output length), in output order.
        let mut pieces = Vec::new();
        let mut next_runs = Vec::new();
        for pair in runs.chunks(2) {
            let (start, end) = (pair[0].0, pair[pair.len() - 1].1);
            next_runs.push((start, end));
            let a = &data[pair[0].0..pair[0].1];
            let b: &[(u64, u64)] = match pair.get(1) {
                Some(&(s, e)) => &data[s..e],
                None => &[],
            };
            let total = a.len() + b.len();
            let count = total.div_ceil(MERGE_PIECE).max(1);
            let mut previous = (0, 0);
            for piece in 1..=count {
                let k = total * piece / count;
                let i = co_rank(k, a, b);
                let (pi, pj) = previous;
                pieces.push((&a[pi..i], &b[pj..k - i], k - pi - pj));
                previous = (i, k - i);
            }
        }
        let outputs = split_lengths(&mut other, pieces.iter().map(|p| p.2));
        let tasks: Vec<_> = pieces.into_iter().zip(outputs).collect();
        for_each_task(tasks, |((a, b, _), out)| merge(a, b, out))?;
        std::mem::swap(&mut data, &mut other);
        runs = next_runs;
    }
    Ok(data)
}

/// How many of the first `k` merged elements of the sorted, disjoint
/// sequences `a` and `b` come from `a`.
fn co_rank<P: Ord>(k: usize, a: &[P], b: &[P]) -> usize {
    let (mut lo, mut hi) = (k.saturating_sub(b.len()), k.min(a.len()));
    while lo < hi {
        let i = (lo + hi) / 2;
        let j = k - i;
        // a[i] belongs in the first k when it is smaller than b[j-1].
        if j > 0 && a[i] < b[j - 1] {
            lo = i + 1;
        } else {
            hi = i;
        }
    }
    lo
}

fn merge<P: Ord + Copy>(a: &[P], b: &[P], out: &mut [P]) {
    let (mut i, mut j) = (0, 0);
    for slot in out.iter_mut() {
        if j >= b.len() || (i < a.len() && a[i] < b[j]) {
            *slot = a[i];
            i += 1;
        } else {
            *slot = b[j];
            j += 1;
        }
    }
}

/// The number of true flags of each block.
pub fn flag_counts(flags: &[u8]) -> Result<Vec<usize>, RtError> {
    if flags.len() <= BLOCK {
        return Ok(vec![flags.iter().filter(|&&f| f != 0).count()]);
    }
    let mut counts = vec![0usize; flags.len().div_ceil(BLOCK)];
    let tasks: Vec<_> = counts.iter_mut().zip(flags.chunks(BLOCK)).collect();
    for_each_task(tasks, |(count, block)| {
        *count = block.iter().filter(|&&f| f != 0).count()
    })?;
    Ok(counts)
}

/// Copies element `index` of `values` (elements of `size` bytes; `N` is the
/// size when known at compile time, 0 otherwise) to `out[slot]`.
#[inline(always)]
fn copy_element<const N: usize>(
    values: &[u8],
    index: usize,
    out: &mut [u8],
    slot: usize,
    size: usize,
) {
    let size = if N == 0 { size } else { N };
    out[slot * size..(slot + 1) * size].copy_from_slice(&values[index * size..(index + 1) * size]);
}

/// `pgpu.list.compact` after [`flag_counts`]: the kept elements of
/// `values` (elements of `size` bytes), in order, into `out`, which holds
/// exactly the kept count.
pub fn compact(
    values: &[u8],
    size: usize,
    flags: &[u8],
    counts: &[usize],
    out: &mut [u8],
) -> Result<(), RtError> {
    match size {
        1 => compact_n::<1>(values, size, flags, counts, out),
        2 => compact_n::<2>(values, size, flags, counts, out),
        4 => compact_n::<4>(values, size, flags, counts, out),
        8 => compact_n::<8>(values, size, flags, counts, out),
        16 => compact_n::<16>(values, size, flags, counts, out),
        _ => compact_n::<0>(values, size, flags, counts, out),
    }
}

fn compact_block<const N: usize>(values: &[u8], size: usize, flags: &[u8], out: &mut [u8]) {
    let mut slot = 0;
    for (index, &flag) in flags.iter().enumerate() {
        if flag != 0 {
            copy_element::<N>(values, index, out, slot, size);
            slot += 1;
        }
    }
}

fn compact_n<const N: usize>(
    values: &[u8],
    size: usize,
    flags: &[u8],
    counts: &[usize],
    out: &mut [u8],
) -> Result<(), RtError> {
    if counts.len() <= 1 {
        compact_block::<N>(values, size, flags, out);
        return Ok(());
    }
    let outs = split_lengths(out, counts.iter().map(|c| c * size));
    let tasks: Vec<_> = outs
        .into_iter()
        .zip(flags.chunks(BLOCK))
        .enumerate()
        .collect();
    for_each_task(tasks, |(block, (out, flags))| {
        let start = block * BLOCK * size;
        let values = &values[start..start + flags.len() * size];
        compact_block::<N>(values, size, flags, out);
    })
}

/// `pgpu.list.split` after [`flag_counts`]: the elements whose flag is false,
/// in order, then those whose flag is true, into `out` (as many elements as
/// `values`).
pub fn split(
    values: &[u8],
    size: usize,
    flags: &[u8],
    counts: &[usize],
    out: &mut [u8],
) -> Result<(), RtError> {
    match size {
        1 => split_n::<1>(values, size, flags, counts, out),
        2 => split_n::<2>(values, size, flags, counts, out),
        4 => split_n::<4>(values, size, flags, counts, out),
        8 => split_n::<8>(values, size, flags, counts, out),
        16 => split_n::<16>(values, size, flags, counts, out),
        _ => split_n::<0>(values, size, flags, counts, out),
    }
}

fn split_block<const N: usize>(
    values: &[u8],
    size: usize,
    flags: &[u8],
    falses: &mut [u8],
    trues: &mut [u8],
) {
    let (mut f, mut t) = (0, 0);
    for (index, &flag) in flags.iter().enumerate() {
        if flag != 0 {
            copy_element::<N>(values, index, trues, t, size);
            t += 1;
        } else {
            copy_element::<N>(values, index, falses, f, size);
            f += 1;
        }
    }
}

fn split_n<const N: usize>(
    values: &[u8],
    size: usize,
    flags: &[u8],
    counts: &[usize],
    out: &mut [u8],
) -> Result<(), RtError> {
    let n = flags.len();
    let kept: usize = counts.iter().sum();
    let (falses, trues) = out.split_at_mut((n - kept) * size);
    if counts.len() <= 1 {
        split_block::<N>(values, size, flags, falses, trues);
        return Ok(());
    }
    let block_lengths = flags.chunks(BLOCK).map(<[u8]>::len);
    let false_counts = block_lengths.zip(counts).map(|(len, c)| (len - c) * size);
    let falses = split_lengths(falses, false_counts);
    let trues = split_lengths(trues, counts.iter().map(|c| c * size));
    let tasks: Vec<_> = falses
        .into_iter()
        .zip(trues)
        .zip(flags.chunks(BLOCK))
        .enumerate()
        .collect();
    for_each_task(tasks, |(block, ((falses, trues), flags))| {
        let start = block * BLOCK * size;
        let values = &values[start..start + flags.len() * size];
        split_block::<N>(values, size, flags, falses, trues);
    })
}

/// The children of each block of `pgpu.list.expand` (counts of 0 or less
/// give none), checked against overflow of a 64-bit index.
pub fn expand_counts<C: Integer>(counts: &[C]) -> Result<Vec<i64>, RtError> {
    let block_sum = |block: &[C]| -> Option<i64> {
        block
            .iter()
            .try_fold(0i64, |sum, c| sum.checked_add(c.to_i64().max(0)))
    };
    let overflow = RtError::Overflow {
        op: "pgpu_rt_list_expand",
        what: "the number of children",
    };
    if counts.len() <= BLOCK {
        return Ok(vec![block_sum(counts).ok_or(overflow)?]);
    }
    let mut sums = vec![Some(0i64); counts.len().div_ceil(BLOCK)];
    let tasks: Vec<_> = sums.iter_mut().zip(counts.chunks(BLOCK)).collect();
    for_each_task(tasks, |(sum, block)| *sum = block_sum(block))?;
    let sums: Option<Vec<i64>> = sums.into_iter().collect();
    let sums = sums.ok_or(overflow.clone())?;
    sums.iter()
        .try_fold(0i64, |total, &s| total.checked_add(s))
        .ok_or(overflow)?;
    Ok(sums)
}

fn expand_block<C: Integer>(start: usize, counts: &[C], parents: &mut [i64], children: &mut [C]) {
    let mut m = 0;
    for (offset, count) in counts.iter().enumerate() {
        for child in 0..count.to_i64().max(0) {
            parents[m] = (start + offset) as i64;
            children[m] = C::from_i64(child);
            m += 1;
        }
    }
}

/// `pgpu.list.expand` after [`expand_counts`] (`sums`): `parents` and
/// `children` hold exactly the total.
pub fn expand<C: Integer>(
    counts: &[C],
    sums: &[i64],
    parents: &mut [i64],
    children: &mut [C],
) -> Result<(), RtError> {
    if sums.len() <= 1 {
        expand_block(0, counts, parents, children);
        return Ok(());
    }
    let lengths = || sums.iter().map(|&s| s as usize);
    let parents = split_lengths(parents, lengths());
    let children = split_lengths(children, lengths());
    let tasks: Vec<_> = parents
        .into_iter()
        .zip(children)
        .zip(counts.chunks(BLOCK))
        .enumerate()
        .collect();
    for_each_task(tasks, |(block, ((parents, children), counts))| {
        expand_block(block * BLOCK, counts, parents, children)
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn co_rank_splits_merges() {
        let a = [1, 3, 5, 7];
        let b = [2, 4, 6];
        for k in 0..=7 {
            let i = co_rank(k, &a, &b);
            let mut first: Vec<i32> = a[..i].iter().chain(&b[..k - i]).copied().collect();
            first.sort();
            let mut all: Vec<i32> = a.iter().chain(&b).copied().collect();
            all.sort();
            assert_eq!(first, all[..k]);
        }
        assert_eq!(co_rank(2, &[] as &[i32], &[1, 2, 3]), 0);
        assert_eq!(co_rank(2, &[1, 2, 3], &[] as &[i32]), 2);
    }

    #[test]
    fn parallel_sort_is_a_sort() {
        let mut state = 7u64;
        let data: Vec<(u64, u64)> = (0..300_000u64)
            .map(|i| (crate::printf::splitmix64_next(&mut state) as u64 % 1000, i))
            .collect();
        let mut expected = data.clone();
        expected.sort_unstable();
        assert!(parallel_sort(data.clone()).unwrap() == expected);
        // Many runs: several merge rounds, an odd run out, pieces.
        assert!(sort_runs(data.clone(), 7_000).unwrap() == expected);
        assert!(sort_runs(data[..5].to_vec(), 1).unwrap() == expected_small(&data[..5]));
    }

    fn expected_small(data: &[(u64, u64)]) -> Vec<(u64, u64)> {
        let mut v = data.to_vec();
        v.sort_unstable();
        v
    }

    /// Throughput of the parallel paths (release build; prints).
    #[test]
    #[ignore]
    fn collective_throughput() {
        let n = 1 << 23;
        let mut state = 1u64;
        let keys: Vec<i32> = (0..n)
            .map(|_| crate::printf::splitmix64_next(&mut state) as i32)
            .collect();
        let flags: Vec<u8> = keys.iter().map(|k| (k & 1) as u8).collect();
        let time = |what: &str, f: &mut dyn FnMut()| {
            let start = std::time::Instant::now();
            f();
            let s = start.elapsed().as_secs_f64();
            println!(
                "{what}: {:.1} ms, {:.0} M elements/s",
                s * 1e3,
                n as f64 / s / 1e6
            );
        };
        time("reduce add i32", &mut || {
            std::hint::black_box(reduce(Kind::Add, &keys).unwrap());
        });
        let mut out = vec![0i32; n];
        time("scan add i32", &mut || {
            let io = ScanIo::Separate {
                values: &keys,
                scanned: &mut out,
            };
            std::hint::black_box(scan(Kind::Add, false, io).unwrap());
        });
        let mut indices = vec![0i64; n];
        time("sort_idx i32", &mut || {
            sort_idx(&keys, &mut indices).unwrap()
        });
        time("sequential stable sort i32 (reference)", &mut || {
            let mut order: Vec<u32> = (0..n as u32).collect();
            order.sort_by_key(|&i| keys[i as usize]);
            std::hint::black_box(order);
        });
        let bytes: Vec<u8> = keys.iter().flat_map(|k| k.to_le_bytes()).collect();
        let mut list = vec![0u8; 4 * n];
        time("compact i32", &mut || {
            let counts = flag_counts(&flags).unwrap();
            let kept: usize = counts.iter().sum();
            compact(&bytes, 4, &flags, &counts, &mut list[..4 * kept]).unwrap();
        });
        time("split i32", &mut || {
            let counts = flag_counts(&flags).unwrap();
            split(&bytes, 4, &flags, &counts, &mut list).unwrap();
        });
    }
}
