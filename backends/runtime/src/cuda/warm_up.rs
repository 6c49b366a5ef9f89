//! The device's one-time launch costs, paid at start-up.
//!
//! The CUDA driver does work of its own at a process's first kernel
//! launch, and again at the first launch of a kernel that can call
//! `__assertfail` (every pgpu kernel can: run-time bounds checks). On the
//! H200 (driver 580, measured 2026-11-24 with a CUDA C program) the first
//! launch of an empty kernel took 1.5-2.1 ms of host time, and the first
//! launch of a kernel with an assertion 3.2-5.3 ms more, each once per
//! process, whatever the kernel and its module; later first launches of
//! other kernels took 5-13 µs. A program's first kernel paid both, inside
//! whatever it timed (a speculative loop's 8192 iterations took 5-7 ms,
//! of which the five kernels ran 0.16 ms).
//!
//! [`warm_up`] pays them where the context's creation is paid: the start-up
//! thread ([`crate::device`]) launches one block of a kernel of its own
//! with a never-taken assertion, once the program's modules are loaded,
//! and waits for it.
//!
//! The driver also does work of its own at a process's first copy into
//! pageable host memory: there, a 16-byte download took 40-42 µs the first
//! time and 8-10 µs after, into any page (a CUDA C program, 2026-11-24);
//! a speculative loop of one window paid it reading back its control
//! words. The warm-up kernel's launch therefore ends with one 8-byte
//! upload and download through a device word of its own.
//!
//! It also reserves device memory: `cuMemAlloc` took 70-130 µs for half a
//! megabyte and 300-390 µs for 16 MB there, on every first allocation of a
//! length (the mirrors cache freed memory by length only). The device's
//! default memory pool is told to keep what is freed into it (release
//! threshold: all), [`POOL_RESERVE`] bytes are allocated from it and freed
//! again, and from then on device memory comes from that pool
//! (`cuMemAllocAsync` on the current stream: [`pooled`]).

use super::{Runtime, driver::*};
use crate::error::RtError;
use std::cell::Cell;
use std::ffi::c_void;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

/// The device memory the pool keeps from the start.
pub const POOL_RESERVE: usize = 256 << 20;

static POOLED: AtomicBool = AtomicBool::new(false);

/// Whether device memory comes from the reserved pool.
pub fn pooled() -> bool {
    POOLED.load(Ordering::Relaxed)
}

/// Reserves [`POOL_RESERVE`] bytes in the device's default memory pool;
/// nothing without the stream-ordered allocator, or when the device has
/// not that much free (allocations then stay `cuMemAlloc`'s).
fn reserve_pool(runtime: &Runtime) -> Result<(), RtError> {
    let driver = runtime.driver;
    let (Some(get_pool), Some(set_attribute), Some(alloc), Some(free)) = (
        driver.cuDeviceGetDefaultMemPool,
        driver.cuMemPoolSetAttribute,
        driver.cuMemAllocAsync,
        driver.cuMemFreeAsync,
    ) else {
        return Ok(());
    };
    let mut pool: CUmemoryPool = std::ptr::null_mut();
    // SAFETY: a valid out-pointer and the runtime's device.
    let code = unsafe { get_pool(&mut pool, runtime.device) };
    runtime.check("cuDeviceGetDefaultMemPool", code)?;
    let mut keep_all = u64::MAX;
    // SAFETY: the attribute takes a cuuint64_t.
    let code = unsafe {
        set_attribute(
            pool,
            CU_MEMPOOL_ATTR_RELEASE_THRESHOLD,
            (&raw mut keep_all).cast(),
        )
    };
    runtime.check("cuMemPoolSetAttribute", code)?;
    let mut block: CUdeviceptr = 0;
    // SAFETY: a valid out-pointer; the runtime's stream.
    if unsafe { alloc(&mut block, POOL_RESERVE, runtime.stream) } != CUDA_SUCCESS {
        return Ok(());
    }
    // SAFETY: the block just allocated, unused.
    let code = unsafe { free(block, runtime.stream) };
    runtime.check("cuMemFreeAsync", code)?;
    // SAFETY: the runtime's stream.
    let code = unsafe { (driver.cuStreamSynchronize)(runtime.stream) };
    runtime.check("cuStreamSynchronize", code)?;
    POOLED.store(true, Ordering::Relaxed);
    Ok(())
}

/// The warm-up kernel: `pgpu_warm_up(flag)` asserts that `flag` is zero,
/// and is launched with zero. PTX 6.4 (`.noreturn`) for any sm_50 device
/// or later.
const WARM_UP_PTX: &str = "\
.version 6.4
.target sm_50
.address_size 64
.extern .func __assertfail(.param .b64 message, .param .b64 file, .param .b32 line, .param .b64 function, .param .b64 size) .noreturn;
.global .align 1 .b8 pgpu_warm_up_text[8] = {119, 97, 114, 109, 45, 117, 112, 0};
.visible .entry pgpu_warm_up(.param .u64 flag)
{
\t.reg .pred %p<2>;
\t.reg .b64 %rd<3>;
\tld.param.u64 %rd1, [flag];
\tsetp.eq.u64 %p1, %rd1, 0;
\t@%p1 bra DONE;
\tmov.u64 %rd2, pgpu_warm_up_text;
\tcvta.global.u64 %rd2, %rd2;
\t{
\t.param .b64 p0;
\t.param .b64 p1;
\t.param .b32 p2;
\t.param .b64 p3;
\t.param .b64 p4;
\tst.param.b64 [p0], %rd2;
\tst.param.b64 [p1], %rd2;
\tst.param.b32 [p2], 0;
\tst.param.b64 [p3], %rd2;
\tst.param.b64 [p4], 1;
\tcall.uni __assertfail, (p0, p1, p2, p3, p4);
\t}
DONE:
\tret;
}
\0";

/// Reserves the memory pool, then loads
/// and runs the warm-up kernel once on the runtime stream, and
/// waits for it (a host call `warm-up` on the timeline).
pub fn warm_up(runtime: &Runtime) -> Result<(), RtError> {
    let driver = runtime.driver;
    crate::pages::page_size();
    reserve_pool(runtime)?;
    let mut module: CUmodule = std::ptr::null_mut();
    let mut function: CUfunction = std::ptr::null_mut();
    // SAFETY: a NUL-terminated PTX image and valid out-pointers.
    let code = unsafe { (driver.cuModuleLoadData)(&mut module, WARM_UP_PTX.as_ptr().cast()) };
    runtime.check("cuModuleLoadData", code)?;
    // SAFETY: a loaded module and a NUL-terminated name.
    let code =
        unsafe { (driver.cuModuleGetFunction)(&mut function, module, c"pgpu_warm_up".as_ptr()) };
    runtime.check("cuModuleGetFunction", code)?;
    WARM_UP_FUNCTION.store(function as usize, Ordering::Relaxed);
    launch_empty(runtime, function, runtime.stream)?;
    // SAFETY: the runtime's stream.
    let code = unsafe { (driver.cuStreamSynchronize)(runtime.stream) };
    // The module stays loaded, as the program's do: what the driver set
    // up for it is what later kernels reuse.
    runtime.check("cuStreamSynchronize", code)?;
    warm_up_copies(runtime)
}

/// The warm-up kernel, once [`warm_up`] has loaded it (0 before).
static WARM_UP_FUNCTION: AtomicUsize = AtomicUsize::new(0);

thread_local! {
    static THREAD_WARMED: Cell<bool> = const { Cell::new(false) };
}

/// The first launch from each host thread also costs the driver 15-30 us
/// of host time inside `cuLaunchKernel` (the H200, a CUDA C program,
/// 2026-11-24: the start-up thread's first launch 4.4 ms, the main
/// thread's first launch of the same kernel 19-32 us after it, its later
/// ones 4-6 us). A timed launch's start event is recorded before that
/// call, so with `PGPU_PROFILE=kernels` the wait counted as the thread's
/// first kernel's device time: every program's first kernel measured
/// 22-34 us, however small. Profiled runs therefore launch the warm-up
/// kernel (an empty run) once per thread before their first timed launch.
pub fn warm_up_this_thread(runtime: &Runtime) -> Result<(), RtError> {
    if THREAD_WARMED.get() {
        return Ok(());
    }
    THREAD_WARMED.set(true);
    let function = WARM_UP_FUNCTION.load(Ordering::Relaxed) as CUfunction;
    if function.is_null() {
        return Ok(());
    }
    launch_empty(runtime, function, runtime.current_stream())
}

/// Launches the warm-up kernel `function` with flag 0 (it returns at
/// once, its assertion untaken): one block of 32 on `stream`.
fn launch_empty(runtime: &Runtime, function: CUfunction, stream: CUstream) -> Result<(), RtError> {
    let mut flag: u64 = 0;
    let mut params = [(&raw mut flag).cast::<c_void>()];
    // SAFETY: the warm-up kernel takes one u64 parameter, which the
    // driver copies during the call.
    let code = unsafe {
        (runtime.driver.cuLaunchKernel)(
            function,
            1,
            1,
            1,
            32,
            1,
            1,
            0,
            stream,
            params.as_mut_ptr(),
            std::ptr::null_mut(),
        )
    };
    runtime.check("cuLaunchKernel", code)
}

/// One 8-byte upload and download (pageable host memory), so that the
/// driver's first-copy work is not the program's.
fn warm_up_copies(runtime: &Runtime) -> Result<(), RtError> {
    let driver = runtime.driver;
    let mut word: CUdeviceptr = 0;
    // SAFETY: a valid out-pointer.
    let code = unsafe { (driver.cuMemAlloc_v2)(&mut word, 8) };
    runtime.check("cuMemAlloc_v2", code)?;
    let mut value = 0u64;
    // SAFETY: 8 host bytes and the 8-byte device word just allocated, on
    // the runtime's stream; the host waits for both copies before `value`
    // goes out of scope.
    let copied = unsafe {
        let up = (driver.cuMemcpyHtoDAsync_v2)(word, (&raw const value).cast(), 8, runtime.stream);
        let down = (driver.cuMemcpyDtoHAsync_v2)((&raw mut value).cast(), word, 8, runtime.stream);
        let waited = (driver.cuStreamSynchronize)(runtime.stream);
        [
            (up, "cuMemcpyHtoDAsync_v2"),
            (down, "cuMemcpyDtoHAsync_v2"),
            (waited, "cuStreamSynchronize"),
        ]
    };
    // SAFETY: the word allocated above, no longer used.
    let freed = unsafe { (driver.cuMemFree_v2)(word) };
    for (code, call) in copied {
        runtime.check(call, code)?;
    }
    runtime.check("cuMemFree_v2", freed)
}
