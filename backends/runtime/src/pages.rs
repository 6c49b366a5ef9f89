//! Which pages of a block of static memory the process has touched.
//!
//! A global array without initializer lives in zero-filled memory (BSS)
//! whose pages the kernel maps only when the program first touches them.
//! Programs size such arrays for their largest input, so most of a large
//! array is often never touched; an upload that reads it all makes the
//! kernel map every page (on the H200 machine, a virtual machine, about
//! 1 µs a page: a 2 MB array of which the program used 128 KB took 0.7-0.9
//! ms to upload). [`touched_runs`] asks the kernel (`mincore`) which pages
//! are resident: a page that is not was never touched and reads as zeros,
//! so [`crate::mirror`] zeroes it on the device instead of copying it.
//!
//! That holds only while no page can be swapped out (a swapped page is not
//! resident either, and holds data): with any swap space configured
//! (`/proc/swaps` lists one), or where `mincore` fails, there is no answer
//! and the whole block is copied.

use std::ffi::{c_int, c_long, c_void};
use std::ops::Range;
use std::sync::OnceLock;

unsafe extern "C" {
    fn mincore(addr: *mut c_void, length: usize, vec: *mut u8) -> c_int;
    fn sysconf(name: c_int) -> c_long;
}

/// `_SC_PAGESIZE` on Linux.
const SC_PAGESIZE: c_int = 30;

/// The page size, when residency can stand for "touched" (no swap); the
/// start-up thread asks first, so that no upload reads `/proc/swaps`.
pub fn page_size() -> Option<usize> {
    static PAGE: OnceLock<Option<usize>> = OnceLock::new();
    *PAGE.get_or_init(|| {
        let swaps = std::fs::read_to_string("/proc/swaps").ok()?;
        if swaps.lines().skip(1).any(|line| !line.trim().is_empty()) {
            return None;
        }
        // SAFETY: sysconf has no memory effects.
        let page = unsafe { sysconf(SC_PAGESIZE) };
        usize::try_from(page)
            .ok()
            .filter(|page| page.is_power_of_two())
    })
}

/// The byte ranges of `[base, base + len)` on pages the process has
/// touched, in order and merged; None when that cannot be known (then
/// every page must be taken as touched).
///
/// # Safety
/// `[base, base + len)` is mapped memory of this process.
pub unsafe fn touched_runs(base: usize, len: usize) -> Option<Vec<Range<usize>>> {
    let page = page_size()?;
    if len == 0 {
        return Some(Vec::new());
    }
    let first = base & !(page - 1);
    let end = base.checked_add(len)?;
    let pages = (end - first).div_ceil(page);
    let mut resident = vec![0u8; pages];
    // SAFETY: a page-aligned start inside the caller's mapping, a length
    // ending at its last page, and one byte per page to write.
    let status = unsafe { mincore(first as *mut c_void, pages * page, resident.as_mut_ptr()) };
    if status != 0 {
        return None;
    }
    let mut runs: Vec<Range<usize>> = Vec::new();
    for (index, flags) in resident.iter().enumerate() {
        if flags & 1 == 0 {
            continue;
        }
        let start = (first + index * page).max(base);
        let stop = (first + (index + 1) * page).min(end);
        match runs.last_mut() {
            Some(last) if last.end == start => last.end = stop,
            _ => runs.push(start..stop),
        }
    }
    Some(runs)
}

/// Test support: fresh, untouched anonymous pages.
#[cfg(test)]
pub(crate) mod fresh {
    use std::ffi::{c_int, c_void};

    unsafe extern "C" {
        fn mmap(
            addr: *mut c_void,
            len: usize,
            prot: c_int,
            flags: c_int,
            fd: c_int,
            off: i64,
        ) -> *mut c_void;
        fn munmap(addr: *mut c_void, len: usize) -> c_int;
        fn madvise(addr: *mut c_void, len: usize, advice: c_int) -> c_int;
    }
    const PROT_READ_WRITE: c_int = 0x1 | 0x2;
    const MAP_PRIVATE_ANONYMOUS: c_int = 0x02 | 0x20;
    const MADV_NOHUGEPAGE: c_int = 15;

    /// Fresh anonymous pages, none touched yet: a heap allocation may reuse
    /// memory another test (or `calloc`'s memset) already touched, and a
    /// transparent huge page would map its neighbours with it.
    pub(crate) struct FreshPages {
        pub base: *mut u8,
        pub len: usize,
    }

    impl FreshPages {
        pub fn new(len: usize) -> FreshPages {
            // SAFETY: a new private mapping; nothing else refers to it.
            let base = unsafe {
                mmap(
                    std::ptr::null_mut(),
                    len,
                    PROT_READ_WRITE,
                    MAP_PRIVATE_ANONYMOUS,
                    -1,
                    0,
                )
            };
            assert!(!base.is_null() && base as isize != -1, "mmap failed");
            // SAFETY: the mapping just made; failure only leaves THP on.
            unsafe { madvise(base, len, MADV_NOHUGEPAGE) };
            FreshPages {
                base: base.cast(),
                len,
            }
        }

        pub fn bytes_mut(&mut self) -> &mut [u8] {
            // SAFETY: the whole mapping, readable and writable, borrowed
            // mutably from self.
            unsafe { std::slice::from_raw_parts_mut(self.base, self.len) }
        }
    }

    impl Drop for FreshPages {
        fn drop(&mut self) {
            // SAFETY: the mapping made in `new`, unmapped once.
            unsafe { munmap(self.base.cast(), self.len) };
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::fresh::FreshPages;
    use super::*;

    #[test]
    fn only_touched_pages_are_reported() {
        let Some(page) = page_size() else {
            return; // swap configured: no answer by design
        };
        let memory = FreshPages::new(64 * page);
        let base = memory.base as usize;
        // SAFETY: the mapping's own pages.
        let before = unsafe { touched_runs(base, memory.len) }.unwrap();
        assert_eq!(before, Vec::new(), "fresh pages reported as touched");
        let written = base + 40 * page + 3;
        // SAFETY: inside the mapping, which is readable and writable.
        unsafe { std::ptr::write_volatile(written as *mut u8, 1) };
        // SAFETY: as above.
        let after = unsafe { touched_runs(base, memory.len) }.unwrap();
        assert_eq!(after, vec![base + 40 * page..base + 41 * page]);
        // An unaligned window reports only its own bytes of that page.
        // SAFETY: as above.
        let inner = unsafe { touched_runs(base + 40 * page + 1, 100) }.unwrap();
        assert_eq!(inner, vec![base + 40 * page + 1..base + 40 * page + 101]);
    }

    #[test]
    fn empty_and_unaligned_blocks() {
        if page_size().is_none() {
            return;
        }
        let memory = std::hint::black_box([7u8; 100]);
        let base = memory.as_ptr() as usize;
        // SAFETY: the array's own bytes.
        assert_eq!(unsafe { touched_runs(base, 0) }, Some(Vec::new()));
        // SAFETY: as above; written, so touched.
        let runs = unsafe { touched_runs(base + 1, 99) }.unwrap();
        assert_eq!(runs.len(), 1);
        assert_eq!(runs[0], base + 1..base + 100);
    }
}
