//! Uploads of large blocks through pinned staging buffers.
//!
//! A copy from pageable host memory makes the driver stage the bytes
//! itself; on the H200 machine (a virtual machine, driver 580) that moved
//! 2.6-3 GB/s (a 2 MB global array took 0.7 ms). Uploads of at least
//! [`STAGED_FROM`] bytes go instead through two page-locked buffers of
//! [`CHUNK`] bytes, allocated once by the start-up thread
//! ([`super::warm_up`]): each chunk is copied into the next buffer on the
//! host, once the device has finished reading that buffer's previous chunk
//! (an event per buffer), and then copied to the device asynchronously on
//! the current stream. The host copy of one chunk overlaps the device copy
//! of the other, and the upload returns when its last chunk is queued, so
//! the host may change its bytes afterwards, as with a pageable copy.
//! Smaller uploads stay pageable copies (cheaper than an event round).
//! Without the buffers (their allocation failed, or the start-up thread
//! has not made them yet, or `PGPU_UPLOAD_STAGING=0` turned them off),
//! every upload is a pageable copy.

use super::{Runtime, driver::*};
use crate::error::RtError;
use std::ffi::c_void;
use std::sync::Mutex;

/// Uploads at least this long are staged.
pub const STAGED_FROM: usize = 256 << 10;
/// The length of each staging buffer.
pub const CHUNK: usize = 4 << 20;

struct Buffer {
    host: *mut u8,
    /// Recorded after the device copy that reads the buffer.
    done: CUevent,
    used: bool,
}

struct Staging {
    buffers: [Buffer; 2],
    next: usize,
}

// SAFETY: page-locked memory and events are process-wide; the mutex
// serializes their use.
unsafe impl Send for Staging {}

static STAGING: Mutex<Option<Staging>> = Mutex::new(None);

/// Allocates the two buffers and their events (start-up; an error leaves
/// uploads pageable).
pub fn prepare(runtime: &Runtime) -> Result<(), RtError> {
    if std::env::var("PGPU_UPLOAD_STAGING").is_ok_and(|value| value == "0") {
        return Ok(());
    }
    let make = || -> Result<Buffer, RtError> {
        let mut host: *mut c_void = std::ptr::null_mut();
        // SAFETY: a valid out-pointer; the runtime's context is current.
        let code = unsafe { (runtime.driver.cuMemAllocHost_v2)(&mut host, CHUNK) };
        runtime.check("cuMemAllocHost", code)?;
        Ok(Buffer {
            host: host.cast(),
            done: runtime.create_event(CU_EVENT_DISABLE_TIMING)?,
            used: false,
        })
    };
    let buffers = [make()?, make()?];
    *lock() = Some(Staging { buffers, next: 0 });
    Ok(())
}

fn lock() -> std::sync::MutexGuard<'static, Option<Staging>> {
    STAGING.lock().unwrap_or_else(|poison| poison.into_inner())
}

/// Copies `bytes` bytes from `host` to `device` on `stream` through the
/// staging buffers; false (nothing done) when the upload is short or
/// there are no buffers.
///
/// # Safety
/// `host` has `bytes` readable bytes and `device` room for them.
pub unsafe fn upload(
    runtime: &Runtime,
    device: CUdeviceptr,
    host: *const u8,
    bytes: usize,
    stream: CUstream,
) -> Result<bool, RtError> {
    if bytes < STAGED_FROM {
        return Ok(false);
    }
    let mut staging = lock();
    let Some(staging) = staging.as_mut() else {
        return Ok(false);
    };
    let driver = runtime.driver;
    let mut offset = 0;
    while offset < bytes {
        let length = CHUNK.min(bytes - offset);
        let buffer = &mut staging.buffers[staging.next];
        staging.next ^= 1;
        if buffer.used {
            // SAFETY: an event of `prepare`.
            let code = unsafe { (driver.cuEventSynchronize)(buffer.done) };
            runtime.check_wait("cuEventSynchronize", code, true)?;
        }
        // SAFETY: the caller's `bytes` readable bytes; a buffer of CHUNK
        // bytes that no queued copy reads any more.
        unsafe { std::ptr::copy_nonoverlapping(host.add(offset), buffer.host, length) };
        // SAFETY: page-locked source of `length` bytes; the caller's
        // device block.
        let code = unsafe {
            (driver.cuMemcpyHtoDAsync_v2)(
                device + offset as u64,
                buffer.host.cast(),
                length,
                stream,
            )
        };
        runtime.check("cuMemcpyHtoDAsync_v2", code)?;
        // SAFETY: a live event and stream.
        let code = unsafe { (driver.cuEventRecord)(buffer.done, stream) };
        runtime.check("cuEventRecord", code)?;
        buffer.used = true;
        offset += length;
    }
    Ok(true)
}
