//! Device time of every kernel launch, for `PGPU_PROFILE=kernels`.
//!
//! With the profile in this mode, [`Runtime::launch`] brackets each launch
//! with two timing events on the runtime stream ([`start`], [`finish`]).
//! Pending pairs are folded into per-kernel totals (launches and device
//! milliseconds, by the launch site's kernel name, or the function's name
//! for launches without a site such as the collectives' kernels) when 1024
//! are pending and at the end ([`report`]), which waits for the last event.
//! The events cost a few microseconds of host time per launch, so wall
//! times of a profiled run are a little longer; device times are the
//! kernels' own (the gaps between kernels are the run's device time minus
//! their sum).

use super::{Runtime, driver::*};
use crate::error::RtError;
use std::collections::BTreeMap;
use std::sync::Mutex;

/// Folded when this many launches are pending.
const FOLD_AT: usize = 1024;

struct Pending {
    kernel: String,
    start: CUevent,
    end: CUevent,
}

// SAFETY: driver events are process-wide handles, usable from any thread.
unsafe impl Send for Pending {}

#[derive(Default)]
struct Times {
    pending: Vec<Pending>,
    /// Per kernel: launches and device milliseconds.
    totals: BTreeMap<String, (u64, f64)>,
}

static TIMES: Mutex<Option<Times>> = Mutex::new(None);

fn times() -> std::sync::MutexGuard<'static, Option<Times>> {
    TIMES.lock().unwrap_or_else(|poison| poison.into_inner())
}

fn recorded_event(runtime: &Runtime) -> Result<CUevent, RtError> {
    let event = runtime.create_event(0)?;
    // SAFETY: the event just created; the current stream.
    unsafe { runtime.record_event(event, runtime.current_stream())? };
    Ok(event)
}

/// The event before a launch.
pub fn start(runtime: &Runtime) -> Result<CUevent, RtError> {
    recorded_event(runtime)
}

/// The event after the launch of `kernel` that `start` preceded.
pub fn finish(runtime: &Runtime, kernel: &str, start: CUevent) -> Result<(), RtError> {
    let end = recorded_event(runtime)?;
    let mut guard = times();
    let times = guard.get_or_insert_with(Times::default);
    times.pending.push(Pending {
        kernel: kernel.to_string(),
        start,
        end,
    });
    if times.pending.len() >= FOLD_AT {
        fold(runtime, times)?;
    }
    Ok(())
}

/// Waits for the pending events and adds their times to the totals.
fn fold(runtime: &Runtime, times: &mut Times) -> Result<(), RtError> {
    let Some(elapsed) = runtime.driver.cuEventElapsedTime else {
        return Err(RtError::Device(
            "PGPU_PROFILE=kernels needs cuEventElapsedTime, which this driver lacks".into(),
        ));
    };
    for pending in std::mem::take(&mut times.pending) {
        // SAFETY: events of `recorded_event`, destroyed once here.
        let ms = unsafe {
            let code = (runtime.driver.cuEventSynchronize)(pending.end);
            runtime.check_wait("cuEventSynchronize", code, false)?;
            let mut ms = 0f32;
            let code = elapsed(&mut ms, pending.start, pending.end);
            runtime.check("cuEventElapsedTime", code)?;
            (runtime.driver.cuEventDestroy_v2)(pending.start);
            (runtime.driver.cuEventDestroy_v2)(pending.end);
            ms
        };
        let total = times.totals.entry(pending.kernel).or_default();
        total.0 += 1;
        total.1 += f64::from(ms);
    }
    Ok(())
}

/// The per-kernel lines of the profile, most device time first:
/// `pgpu-profile-kernel MS ms LAUNCHES launches NAME`, then the total.
/// Empty when nothing was timed.
pub fn report(runtime: &Runtime) -> Result<Vec<String>, RtError> {
    let mut guard = times();
    let Some(times) = guard.as_mut() else {
        return Ok(vec![]);
    };
    fold(runtime, times)?;
    let mut rows: Vec<(&String, &(u64, f64))> = times.totals.iter().collect();
    rows.sort_by(|a, b| b.1.1.total_cmp(&a.1.1));
    let mut lines: Vec<String> = rows
        .iter()
        .map(|(kernel, (launches, ms))| {
            format!("pgpu-profile-kernel {ms:.3} ms {launches} launches {kernel}")
        })
        .collect();
    let launches: u64 = rows.iter().map(|row| row.1.0).sum();
    let ms: f64 = rows.iter().map(|row| row.1.1).sum();
    lines.push(format!(
        "pgpu-profile-kernels {ms:.3} ms {launches} launches"
    ));
    Ok(lines)
}
