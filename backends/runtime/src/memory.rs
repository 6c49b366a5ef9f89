//! Device memory of the CPU device and BSGP's temporary lists.
//!
//! `pgpu_rt_alloc(bytes)` returns a block of `bytes` uninitialized bytes
//! (lists start undefined: the interpreter rejects reads before writes, and
//! zeroing a large temporary at every call would cost a pass over its
//! memory) aligned to [`ALIGN`] (64) bytes; zero bytes give a unique non-null pointer. A
//! header of [`ALIGN`] bytes in front of the block keeps its size, so
//! `pgpu_rt_free(ptr)` needs only the pointer (null is ignored).
//!
//! `dtempnew` lists (seeds/bsgp.txt: temporary lists that a `dtempfree`
//! releases together) are recorded on one process-wide stack:
//! `pgpu_rt_dtemp_mark()` returns its height, `pgpu_rt_dtempnew(bytes)`
//! allocates as `pgpu_rt_alloc` and pushes the block, and
//! `pgpu_rt_dtempfree(mark)` frees, newest first, every block pushed since
//! the height was `mark`. Marks nest: an inner mark is at least the outer
//! one, and freeing to the outer mark also frees the inner blocks. A mark
//! above the current height (already freed by an outer `dtempfree`) frees
//! nothing; a negative mark is an error. A dtemp block must not be passed
//! to `pgpu_rt_free`.
//!
//! Compiled code allocates through the same allocator: upstream's
//! `finalize-memref-to-llvm{use-generic-functions=true}` lowers
//! `memref.alloc`/`memref.dealloc` to `_mlir_memref_to_llvm_alloc(bytes)`
//! and `_mlir_memref_to_llvm_free(ptr)`, which this module defines, and
//! a `dtempnew` list allocated that way is recorded with
//! `pgpu_rt_dtemp_register(ptr)` so that `pgpu_rt_dtempfree` frees it.
//!
//! Every block is recorded in the table of [`crate::mirror`] (host address
//! and length), where the cuda device keeps its device mirror; freeing a
//! block frees its mirror.
//!
//! Out of memory (or a negative or too large size) is reported as
//! `pgpu runtime: error: out of memory allocating N bytes` and exits with
//! status 1.

use crate::error::{RtError, guard};
use std::alloc::Layout;

/// Alignment of every block, and the size of its header.
pub const ALIGN: usize = 64;

fn layout(bytes: usize) -> Option<Layout> {
    Layout::from_size_align(bytes.checked_add(ALIGN)?, ALIGN).ok()
}

/// Allocates `bytes` uninitialized bytes aligned to [`ALIGN`].
pub fn alloc(bytes: i64) -> Result<*mut u8, RtError> {
    let size = usize::try_from(bytes).map_err(|_| RtError::BadSize { bytes })?;
    let layout = layout(size).ok_or(RtError::OutOfMemory { bytes })?;
    // SAFETY: the layout's size is at least ALIGN, never zero.
    let base = unsafe { std::alloc::alloc(layout) };
    if base.is_null() {
        return Err(RtError::OutOfMemory { bytes });
    }
    // SAFETY: the block starts with ALIGN >= size_of::<usize>() header
    // bytes, aligned for a usize.
    let ptr = unsafe {
        base.cast::<usize>().write(size);
        base.add(ALIGN)
    };
    crate::mirror::register(ptr, size);
    Ok(ptr)
}

/// Frees a block of [`alloc`] and its device mirror; null is ignored.
/// An error of freeing the mirror leaves the host block allocated.
///
/// # Safety
/// `ptr` is null or a live block returned by [`alloc`].
pub unsafe fn free(ptr: *mut u8) -> Result<(), RtError> {
    if ptr.is_null() {
        return Ok(());
    }
    crate::mirror::release(ptr)?;
    // SAFETY: the caller passes a block of `alloc`, whose header is ALIGN
    // bytes before it.
    unsafe {
        let base = ptr.sub(ALIGN);
        let size = base.cast::<usize>().read();
        if let Some(layout) = layout(size) {
            std::alloc::dealloc(base, layout);
        }
    }
    Ok(())
}

thread_local! {
    /// The dtemp blocks of this thread, oldest first (addresses): a
    /// function records and frees its temporaries on the thread that runs
    /// it, and tasks ([`crate::cuda::tasks`]) run functions on threads of
    /// their own, so the stack is per thread.
    static DTEMP: std::cell::RefCell<Vec<usize>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// The height of the dtemp stack.
pub fn dtemp_mark() -> i64 {
    DTEMP.with_borrow(Vec::len) as i64
}

/// Allocates a dtemp block and records it.
pub fn dtempnew(bytes: i64) -> Result<*mut u8, RtError> {
    let ptr = alloc(bytes)?;
    DTEMP.with_borrow_mut(|stack| stack.push(ptr as usize));
    Ok(ptr)
}

/// Frees the dtemp blocks recorded since the height was `mark`.
pub fn dtempfree(mark: i64) -> Result<(), RtError> {
    let mark = usize::try_from(mark).map_err(|_| RtError::BadMark { mark })?;
    let blocks: Vec<usize> = DTEMP.with_borrow_mut(|stack| {
        if mark >= stack.len() {
            Vec::new()
        } else {
            stack.split_off(mark)
        }
    });
    for &block in blocks.iter().rev() {
        // SAFETY: recorded by `dtempnew`, freed once (removed from the
        // stack above).
        unsafe { free(block as *mut u8) }?;
    }
    Ok(())
}

/// `bytes` uninitialized bytes aligned to 64; exits on failure.
#[unsafe(no_mangle)]
pub extern "C" fn pgpu_rt_alloc(bytes: i64) -> *mut u8 {
    guard(|| alloc(bytes))
}

/// Frees a block of `pgpu_rt_alloc` (null is ignored).
///
/// # Safety
/// `ptr` is null or a live block of `pgpu_rt_alloc`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn pgpu_rt_free(ptr: *mut u8) {
    // SAFETY: the caller's contract.
    guard(|| unsafe { free(ptr) })
}

/// The current height of the dtemp stack.
#[unsafe(no_mangle)]
pub extern "C" fn pgpu_rt_dtemp_mark() -> i64 {
    guard(|| Ok(dtemp_mark()))
}

/// A recorded temporary list of `bytes` uninitialized bytes; exits on
/// failure.
#[unsafe(no_mangle)]
pub extern "C" fn pgpu_rt_dtempnew(bytes: i64) -> *mut u8 {
    guard(|| dtempnew(bytes))
}

/// Frees the temporary lists recorded since `mark`.
#[unsafe(no_mangle)]
pub extern "C" fn pgpu_rt_dtempfree(mark: i64) {
    guard(|| dtempfree(mark))
}

/// Records a block of `pgpu_rt_alloc` (or `_mlir_memref_to_llvm_alloc`)
/// as a temporary list, freed by the next `pgpu_rt_dtempfree` to a mark at
/// or below the current height.
#[unsafe(no_mangle)]
pub extern "C" fn pgpu_rt_dtemp_register(ptr: *mut u8) {
    guard(|| {
        if !ptr.is_null() {
            DTEMP.with_borrow_mut(|stack| stack.push(ptr as usize));
        }
        Ok(())
    })
}

/// `memref.alloc` of compiled code (upstream's generic allocation
/// function): a block of this allocator.
#[unsafe(no_mangle)]
pub extern "C" fn _mlir_memref_to_llvm_alloc(bytes: u64) -> *mut u8 {
    guard(|| alloc(i64::try_from(bytes).unwrap_or(i64::MAX)))
}

/// `memref.dealloc` of compiled code.
///
/// # Safety
/// `ptr` is null or a live block of this allocator.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn _mlir_memref_to_llvm_free(ptr: *mut u8) {
    // SAFETY: the caller's contract.
    unsafe { pgpu_rt_free(ptr) }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn blocks_are_aligned_writable_and_distinct() {
        let a = alloc(0).unwrap();
        let b = alloc(0).unwrap();
        let c = alloc(1000).unwrap();
        assert!(!a.is_null() && a != b);
        for p in [a, b, c] {
            assert_eq!(p as usize % ALIGN, 0);
        }
        // SAFETY: 1000 bytes were allocated.
        let bytes = unsafe { std::slice::from_raw_parts_mut(c, 1000) };
        bytes.fill(7);
        assert!(bytes.iter().all(|&x| x == 7));
        // SAFETY: blocks of `alloc`.
        unsafe {
            free(a).unwrap();
            free(b).unwrap();
            free(c).unwrap();
            free(std::ptr::null_mut()).unwrap();
        }
    }

    #[test]
    fn bad_sizes_are_errors() {
        assert_eq!(alloc(-1), Err(RtError::BadSize { bytes: -1 }));
        assert_eq!(
            alloc(i64::MAX),
            Err(RtError::OutOfMemory { bytes: i64::MAX })
        );
        assert!(dtempfree(-1).is_err());
    }

    #[test]
    fn registered_blocks_are_freed_with_their_mark() {
        let mark = pgpu_rt_dtemp_mark();
        let block = _mlir_memref_to_llvm_alloc(24);
        pgpu_rt_dtemp_register(block);
        assert_eq!(pgpu_rt_dtemp_mark(), mark + 1);
        pgpu_rt_dtempfree(mark);
        assert_eq!(pgpu_rt_dtemp_mark(), mark);
    }
}
