//! `PGPU_CLOCK=device`: `pgpu_rt_wtime` reads the device's clock at the
//! point where the runtime stream reaches the call.
//!
//! By default a `wtime()` read on the cuda device waits for the stream and
//! then reads the host's clock, so a timed region also counts the host's
//! wake-up after the device finished (several microseconds). CUDA programs
//! are usually timed with events recorded around the region instead; with
//! this clock a pgpu program is timed the same way, which is what a
//! side-by-side comparison with such a program needs (bench/gpu).
//!
//! Each read records the end event on the runtime stream and waits for it
//! (the stream is the only one, so this waits for all launched work, as
//! the default read does, and reports a kernel's fault the same way); its
//! last call records the start event, which the idle device passes at once. The
//! first read returns the host clock; every later one returns the previous
//! read's value plus the device time from the previous read's start event
//! to this read's end event (`cuEventElapsedTime`, resolution about half a
//! microsecond). So the time between two reads is what CUDA events
//! recorded around the same region measure: it starts as the device passes
//! the start marker, before the host queues the region's first launch, and
//! leaves out the host waking up from the previous read's wait, which the
//! clock skips (it stands still inside a read). Adding up differences keeps
//! the precision however long the program runs. Host work that keeps the
//! device idle inside a timed region (a slow launch, a copy's wait) still
//! counts: the end event only completes after the work queued before it.

use super::{Runtime, driver::*};
use crate::error::RtError;
use std::sync::Mutex;

/// The clock's two events (created by the first read, then recorded again
/// by every read) and the value of the previous read.
struct Clock {
    start: CUevent,
    end: CUevent,
    seconds: f64,
}

// SAFETY: driver events are process-wide handles, usable from any thread.
unsafe impl Send for Clock {}

static CLOCK: Mutex<Option<Clock>> = Mutex::new(None);

/// Seconds on the device clock (see the module header); `host_seconds`
/// gives the first read's value.
pub fn read(runtime: &Runtime, host_seconds: impl FnOnce() -> f64) -> Result<f64, RtError> {
    let Some(elapsed) = runtime.driver.cuEventElapsedTime else {
        return Err(RtError::Device(
            "PGPU_CLOCK=device needs cuEventElapsedTime, which this driver lacks".into(),
        ));
    };
    let mut guard = CLOCK.lock().unwrap_or_else(|poison| poison.into_inner());
    let first = guard.is_none();
    if first {
        *guard = Some(Clock {
            start: runtime.create_event(0)?,
            end: runtime.create_event(0)?,
            seconds: 0.0,
        });
    }
    let Some(clock) = guard.as_mut() else {
        return Err(RtError::Internal("the device clock did not start".into()));
    };
    // SAFETY: the clock's events live as long as the process.
    unsafe { runtime.record_event(clock.end, runtime.current_stream())? };
    let waited = std::time::Instant::now();
    // SAFETY: the event just recorded.
    let code = unsafe { (runtime.driver.cuEventSynchronize)(clock.end) };
    crate::profile::synchronized(waited.elapsed());
    runtime.check_wait("cuEventSynchronize", code, true)?;
    if first {
        clock.seconds = host_seconds();
    } else {
        let mut ms = 0f32;
        // SAFETY: the previous read recorded `start` before `end` on the
        // stream, so both have completed.
        let code = unsafe { elapsed(&mut ms, clock.start, clock.end) };
        runtime.check("cuEventElapsedTime", code)?;
        clock.seconds += f64::from(ms) / 1000.0;
    }
    // Last, so that nothing of the read's own runs inside the next region.
    // SAFETY: as above.
    unsafe { runtime.record_event(clock.start, runtime.current_stream())? };
    Ok(clock.seconds)
}
