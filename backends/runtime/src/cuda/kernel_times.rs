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
//!
//! **The launch gate.** On an idle stream the start event completes as
//! soon as it is recorded, and the kernel follows only when the host's
//! launch call has submitted it: the interval counted the host's launch
//! latency (7-10 us on the H200 machine for a kernel of one warp). So
//! before the start event the stream waits (`cuStreamWaitValue32`) for a
//! host word to reach the launch's number, and the host writes that
//! number after it has recorded the end event: start event, kernel and
//! end event then run back to back. The word is pinned host memory the
//! device reads; numbers only grow (`fetch_max`), so launches of several
//! threads release each other at worst early, never late, and a launch
//! that fails releases its gate when its timing is dropped. Without the
//! driver's stream waits or pinned mapping the launches are not gated.
//!
//! **Cycles on the multiprocessors.** A kernel compiled with
//! `pgpu-count-sm-cycles` records each multiprocessor's first and last
//! cycle in its module's table ([`crate::mgpu::SM_CYCLES_TABLE`]). For such
//! a launch [`start`] also resets the table on the stream (before the
//! gate, so outside the timed interval) and holds `SM_CYCLES_LOCK`, and
//! after the launch [`CycleCount::collect`] waits for the stream, reads the
//! table and adds the busiest multiprocessor's span to the kernel's cycle
//! total (`pgpu-profile-kernel-cycles` lines). The lock keeps launches of
//! instrumented kernels from sharing a table; the wait makes each launch
//! synchronous, which changes the program's wall time but not the device
//! times.
//!
//! Each kernel's launch shapes are counted too (threads of the grid and
//! of a block), for predictions of kernels whose size is only known at
//! run time (`pgpu perf-model --launches`).
//!
//! With `PGPU_TIMELINE`, the first timed launch also records an *origin*
//! event, and each launch keeps its interval since the origin and its
//! stream; [`report`] writes them with the host's timed driver calls as a
//! Chrome trace. Device times are placed on the host's time axis by the
//! origin: its event is taken to run when the host records it (the device
//! is idle before a program's first launch), so host and device tracks
//! agree to within the launch latency.

use super::{Runtime, driver::*};
use crate::error::RtError;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Mutex, MutexGuard, OnceLock};

/// Folded when this many launches are pending.
const FOLD_AT: usize = 1024;

struct Pending {
    kernel: String,
    stream: usize,
    start: CUevent,
    end: CUevent,
}

/// A launch on the timeline: microseconds since the origin.
struct Span {
    kernel: String,
    stream: usize,
    start_us: f64,
    length_us: f64,
}

// SAFETY: driver events are process-wide handles, usable from any thread.
unsafe impl Send for Pending {}
// SAFETY: as above (the origin event).
unsafe impl Send for Times {}

#[derive(Default)]
struct Times {
    pending: Vec<Pending>,
    /// Per kernel: launches and device milliseconds.
    totals: BTreeMap<String, (u64, f64)>,
    /// Per instrumented kernel: launches and the busiest multiprocessor's
    /// cycles, summed over them.
    cycles: BTreeMap<String, (u64, u64)>,
    /// Per kernel: launches by shape (threads of the grid, threads per
    /// block).
    shapes: BTreeMap<String, BTreeMap<(u64, u64), u64>>,
    /// With a timeline: the origin event and its host time
    /// ([`crate::profile::since_start`]), and the folded launches.
    origin: Option<(CUevent, f64)>,
    spans: Vec<Span>,
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

/// The host word timed launches wait for, and its device address.
struct Gate {
    word: &'static AtomicU32,
    device: CUdeviceptr,
    wait: unsafe extern "C" fn(CUstream, CUdeviceptr, u32, std::ffi::c_uint) -> CUresult,
    /// The last launch number handed out.
    issued: AtomicU32,
}

/// `cuMemHostRegister`'s flag: map the pages into the device's space.
const CU_MEMHOSTREGISTER_DEVICEMAP: std::ffi::c_uint = 0x02;
/// `cuStreamWaitValue32`'s flag: wait until `*word >= value`.
const CU_STREAM_WAIT_VALUE_GEQ: std::ffi::c_uint = 0x0;

/// The gate, made on first use; `None` where the driver cannot.
fn gate(runtime: &Runtime) -> Option<&'static Gate> {
    static GATE: OnceLock<Option<Gate>> = OnceLock::new();
    GATE.get_or_init(|| {
        let driver = &runtime.driver;
        let (wait, device_pointer) = (
            driver.cuStreamWaitValue32_v2?,
            driver.cuMemHostGetDevicePointer_v2?,
        );
        // One page of its own, pinned for the life of the process.
        let layout = std::alloc::Layout::from_size_align(4096, 4096).ok()?;
        // SAFETY: a non-zero size.
        let page = unsafe { std::alloc::alloc_zeroed(layout) };
        if page.is_null() {
            return None;
        }
        // SAFETY: the page just allocated, never freed.
        let code = unsafe {
            (driver.cuMemHostRegister_v2)(page.cast(), 4096, CU_MEMHOSTREGISTER_DEVICEMAP)
        };
        let mut device = 0;
        // SAFETY: the registered page.
        if code != CUDA_SUCCESS
            || unsafe { device_pointer(&mut device, page.cast(), 0) } != CUDA_SUCCESS
        {
            return None;
        }
        Some(Gate {
            // SAFETY: page-aligned, zeroed, leaked: a valid AtomicU32 forever.
            word: unsafe { &*page.cast::<AtomicU32>() },
            device,
            wait,
            issued: AtomicU32::new(0),
        })
    })
    .as_ref()
}

/// A timed launch between [`start`] and [`finish`]: its start event, the
/// gate number its stream waits for (released when dropped), and for an
/// instrumented kernel its cycle table.
pub struct Timing {
    start: CUevent,
    gate: Option<(&'static Gate, u32)>,
    sm_cycles: Option<CycleTable>,
}

/// Held from the reset of an instrumented kernel's cycle table to its read.
static SM_CYCLES_LOCK: Mutex<()> = Mutex::new(());

/// The cycle table of a launch, and the lock that keeps it the launch's.
struct CycleTable {
    address: CUdeviceptr,
    _held: MutexGuard<'static, ()>,
}

/// The table of a finished launch, to read once it has run.
pub struct CycleCount {
    kernel: String,
    table: CycleTable,
}

const SLOTS: usize = crate::mgpu::SM_CYCLES_SLOTS;

/// Resets `address`'s table on the current stream: every start to all
/// ones, every end to zero.
fn reset_cycle_table(runtime: &Runtime, address: CUdeviceptr) -> Result<(), RtError> {
    let words = SLOTS * 2; // u32 words per half
    let stream = runtime.current_stream();
    for (offset, value) in [(0, u32::MAX), (SLOTS * 8, 0)] {
        // SAFETY: a half of the module's table, which has 2 * SLOTS u64.
        let code = unsafe {
            (runtime.driver.cuMemsetD32Async)(address + offset as CUdeviceptr, value, words, stream)
        };
        runtime.check("cuMemsetD32Async", code)?;
    }
    Ok(())
}

/// The largest end - start over the multiprocessors that recorded both:
/// `table` holds the starts, then the ends, `ways` consecutive slots per
/// multiprocessor in each half (a multiprocessor's earliest start and
/// latest end are over its ways).
pub fn busiest_span(table: &[u64], ways: usize) -> u64 {
    let (starts, ends) = table.split_at(table.len() / 2);
    starts
        .chunks(ways)
        .zip(ends.chunks(ways))
        .filter_map(|(starts, ends)| {
            let start = starts.iter().copied().min()?;
            let end = ends.iter().copied().max()?;
            (start != u64::MAX && end >= start).then(|| end - start)
        })
        .max()
        .unwrap_or(0)
}

impl CycleCount {
    /// Waits for the launch, reads its table and adds its span to the
    /// kernel's total.
    pub fn collect(self, runtime: &Runtime) -> Result<(), RtError> {
        // SAFETY: the current stream.
        let code = unsafe { (runtime.driver.cuStreamSynchronize)(runtime.current_stream()) };
        runtime.check_wait("cuStreamSynchronize", code, false)?;
        let mut table = vec![0u64; 2 * SLOTS];
        // SAFETY: the module's table of 2 * SLOTS u64 into as many.
        let code = unsafe {
            (runtime.driver.cuMemcpyDtoH_v2)(
                table.as_mut_ptr().cast(),
                self.table.address,
                table.len() * 8,
            )
        };
        runtime.check_wait("cuMemcpyDtoH", code, false)?;
        drop(self.table);
        let mut guard = times();
        let total = guard
            .get_or_insert_with(Times::default)
            .cycles
            .entry(self.kernel)
            .or_default();
        total.0 += 1;
        total.1 += busiest_span(&table, crate::mgpu::SM_CYCLES_WAYS);
        Ok(())
    }
}

impl Drop for Timing {
    fn drop(&mut self) {
        if let Some((gate, number)) = self.gate {
            gate.word.fetch_max(number, Ordering::AcqRel);
        }
    }
}

/// The event before a launch, after the stream's wait at the gate (and
/// with a timeline, the origin before both, on the first launch); before
/// all of them the reset of `sm_cycles`, the launched kernel's cycle table
/// if it has one.
pub fn start(runtime: &Runtime, sm_cycles: Option<CUdeviceptr>) -> Result<Timing, RtError> {
    let sm_cycles = match sm_cycles {
        Some(address) => {
            let held = SM_CYCLES_LOCK
                .lock()
                .unwrap_or_else(|poison| poison.into_inner());
            reset_cycle_table(runtime, address)?;
            Some(CycleTable {
                address,
                _held: held,
            })
        }
        None => None,
    };
    if crate::profile::timeline_path().is_some() {
        let mut guard = times();
        let times = guard.get_or_insert_with(Times::default);
        if times.origin.is_none() {
            times.origin = Some((recorded_event(runtime)?, crate::profile::since_start()));
        }
    }
    let gate = gate(runtime).and_then(|gate| {
        let number = gate.issued.fetch_add(1, Ordering::Relaxed).wrapping_add(1);
        // SAFETY: the gate's mapped word; the current stream.
        let code = unsafe {
            (gate.wait)(
                runtime.current_stream(),
                gate.device,
                number,
                CU_STREAM_WAIT_VALUE_GEQ,
            )
        };
        (code == CUDA_SUCCESS).then_some((gate, number))
    });
    // From here on the gate is released whatever happens.
    let mut timing = Timing {
        start: std::ptr::null_mut(),
        gate,
        sm_cycles,
    };
    timing.start = recorded_event(runtime)?;
    Ok(timing)
}

/// The event after the launch of `kernel` that `timing` preceded; then
/// the gate opens. An instrumented kernel's table is returned, to be read
/// once the launch counts as outstanding (so that a fault is its).
pub fn finish(
    runtime: &Runtime,
    kernel: &str,
    shape: (u64, u64),
    mut timing: Timing,
) -> Result<Option<CycleCount>, RtError> {
    let end = recorded_event(runtime)?;
    let start = timing.start;
    let table = timing.sm_cycles.take();
    drop(timing);
    let mut guard = times();
    let times = guard.get_or_insert_with(Times::default);
    *times
        .shapes
        .entry(kernel.to_string())
        .or_default()
        .entry(shape)
        .or_default() += 1;
    times.pending.push(Pending {
        kernel: kernel.to_string(),
        stream: runtime.current_stream() as usize,
        start,
        end,
    });
    if times.pending.len() >= FOLD_AT {
        fold(runtime, times)?;
    }
    Ok(table.map(|table| CycleCount {
        kernel: kernel.to_string(),
        table,
    }))
}

/// Waits for the pending events and adds their times to the totals.
fn fold(runtime: &Runtime, times: &mut Times) -> Result<(), RtError> {
    let Some(elapsed) = runtime.driver.cuEventElapsedTime else {
        return Err(RtError::Device(
            "PGPU_PROFILE=kernels needs cuEventElapsedTime, which this driver lacks".into(),
        ));
    };
    let between = |from: CUevent, to: CUevent| -> Result<f32, RtError> {
        let mut ms = 0f32;
        // SAFETY: recorded events, the later one complete.
        let code = unsafe { elapsed(&mut ms, from, to) };
        runtime.check("cuEventElapsedTime", code)?;
        Ok(ms)
    };
    for pending in std::mem::take(&mut times.pending) {
        // SAFETY: an event of `recorded_event`.
        let code = unsafe { (runtime.driver.cuEventSynchronize)(pending.end) };
        runtime.check_wait("cuEventSynchronize", code, false)?;
        let ms = between(pending.start, pending.end)?;
        if let Some((origin, _)) = times.origin {
            times.spans.push(Span {
                kernel: pending.kernel.clone(),
                stream: pending.stream,
                start_us: f64::from(between(origin, pending.start)?) * 1e3,
                length_us: f64::from(ms) * 1e3,
            });
        }
        // SAFETY: events of `recorded_event`, destroyed once here.
        unsafe {
            (runtime.driver.cuEventDestroy_v2)(pending.start);
            (runtime.driver.cuEventDestroy_v2)(pending.end);
        }
        let total = times.totals.entry(pending.kernel).or_default();
        total.0 += 1;
        total.1 += f64::from(ms);
    }
    Ok(())
}

/// The per-kernel lines of the profile, most device time first:
/// `pgpu-profile-kernel MS ms LAUNCHES launches NAME`, then the total; then
/// for instrumented kernels, most cycles first,
/// `pgpu-profile-kernel-cycles CYCLES cycles LAUNCHES launches NAME`; then
/// every kernel's launch shapes, `pgpu-profile-kernel-launch THREADS
/// threads BLOCK block LAUNCHES launches NAME` (THREADS: the grid's, a
/// multiple of BLOCK), which `pgpu perf-model --launches` predicts
/// kernels of run-time sizes with. Empty when nothing was timed.
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
            format!("pgpu-profile-kernel {ms:.4} ms {launches} launches {kernel}")
        })
        .collect();
    let launches: u64 = rows.iter().map(|row| row.1.0).sum();
    let ms: f64 = rows.iter().map(|row| row.1.1).sum();
    lines.push(format!(
        "pgpu-profile-kernels {ms:.4} ms {launches} launches"
    ));
    let mut counted: Vec<(&String, &(u64, u64))> = times.cycles.iter().collect();
    counted.sort_by_key(|(_, (_, cycles))| std::cmp::Reverse(*cycles));
    lines.extend(counted.iter().map(|(kernel, (launches, cycles))| {
        format!("pgpu-profile-kernel-cycles {cycles} cycles {launches} launches {kernel}")
    }));
    for (kernel, shapes) in &times.shapes {
        lines.extend(shapes.iter().map(|((threads, block), launches)| {
            format!(
                "pgpu-profile-kernel-launch {threads} threads {block} block {launches} launches {kernel}"
            )
        }));
    }
    if let Some(path) = crate::profile::timeline_path() {
        write_timeline(path, times)?;
        lines.push(format!("pgpu-profile-timeline {}", path.display()));
    }
    Ok(lines)
}

/// Writes the launches and the host's timed driver calls to `path` as a
/// Chrome trace: process 0 is the host, process 1 the device with one
/// track per stream (numbered in order of first use). Written to a
/// temporary file beside `path`, then renamed.
fn write_timeline(path: &std::path::Path, times: &Times) -> Result<(), RtError> {
    use std::fmt::Write;
    let origin_us = times.origin.map_or(0.0, |(_, host)| host);
    let mut streams: Vec<usize> = Vec::new();
    let mut events: Vec<String> = vec![
        r#"{"ph":"M","name":"process_name","pid":0,"args":{"name":"host"}}"#.into(),
        r#"{"ph":"M","name":"process_name","pid":1,"args":{"name":"device"}}"#.into(),
    ];
    for (what, thread, start, length) in crate::profile::host_spans() {
        events.push(format!(
            r#"{{"ph":"X","name":"{what}","pid":0,"tid":{thread},"ts":{start:.3},"dur":{length:.3}}}"#
        ));
    }
    for span in &times.spans {
        let track = match streams.iter().position(|&stream| stream == span.stream) {
            Some(track) => track,
            None => {
                streams.push(span.stream);
                events.push(format!(
                    r#"{{"ph":"M","name":"thread_name","pid":1,"tid":{0},"args":{{"name":"stream {0}"}}}}"#,
                    streams.len() - 1
                ));
                streams.len() - 1
            }
        };
        let mut name = String::new();
        for c in span.kernel.chars() {
            match c {
                '"' | '\\' => write!(name, "\\{c}"),
                c if (c as u32) < 0x20 => write!(name, "\\u{:04x}", c as u32),
                c => write!(name, "{c}"),
            }
            .expect("writing to a String");
        }
        events.push(format!(
            r#"{{"ph":"X","name":"{name}","pid":1,"tid":{track},"ts":{:.3},"dur":{:.3}}}"#,
            origin_us + span.start_us,
            span.length_us
        ));
    }
    let text = format!("[\n{}\n]\n", events.join(",\n"));
    let temporary = path.with_file_name(format!(
        ".{}.{}.tmp",
        path.file_name()
            .and_then(|name| name.to_str())
            .unwrap_or("timeline"),
        std::process::id()
    ));
    let failed = |error: std::io::Error| {
        RtError::Device(format!(
            "PGPU_TIMELINE: cannot write {}: {error}",
            path.display()
        ))
    };
    std::fs::write(&temporary, text).map_err(failed)?;
    std::fs::rename(&temporary, path).map_err(|error| {
        let _ = std::fs::remove_file(&temporary);
        failed(error)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_busiest_multiprocessor_spans_the_kernel() {
        let unused = u64::MAX;
        // One way each: multiprocessor 0 ran 100..250, 1 ran 1000..1100
        // (its own counter), 2 never ran the kernel, and 3 recorded an end
        // below its start (which cannot happen; it is skipped).
        let table = [100, 1000, unused, 500, 250, 1100, 0, 400];
        assert_eq!(busiest_span(&table, 1), 150);
        assert_eq!(busiest_span(&[unused, unused, 0, 0], 1), 0);
        assert_eq!(busiest_span(&[], 1), 0);
        // Two ways: multiprocessor 0's blocks ran 100..180 and 120..260
        // (span 160); 1's only way that ran, 1000..1100.
        let table = [100, 120, unused, 1000, 180, 260, 0, 1100];
        assert_eq!(busiest_span(&table, 2), 160);
    }
}
