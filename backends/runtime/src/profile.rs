//! What a run did on the device: kernel launches, synchronizations, copies
//! between host and device, and device memory in use, for `PGPU_PROFILE`.
//!
//! The counters are process-wide atomics that the CUDA device updates
//! ([`crate::cuda`], [`crate::mirror`], [`crate::mgpu`]); they cost a
//! relaxed atomic add each. When the environment variable `PGPU_PROFILE`
//! is set (to anything but `0`) at `pgpu_rt_init`, the program prints them
//! on stderr when it ends (`pgpu_rt_device_synchronize` at the end of the
//! generated `main`):
//!
//! ```text
//! pgpu-profile launches 42 syncs 7 sync-wait-ms 1.250 uploads 3 (12000000 bytes) downloads 2 (8 bytes) device-peak-bytes 48000000 tasks 0 streams 0 threads 0 main-wait-ms 1.250
//! ```
//!
//! `syncs` counts the synchronizations; `sync-wait-ms` is the host's time
//! blocked in them and in the copies into pageable host memory that come
//! before them (a collective's result returns to the host when the
//! stream's earlier work and the copy are done): with the run's
//! wall time it gives the share the paper measured for its quicksort
//! (seeds/fork-to-cuda.txt, Section 4: 31% in kernel synchronizations).
//!
//! With `PGPU_PROFILE=kernels`, every launch is also timed on the device
//! ([`crate::cuda::kernel_times`]) and the report goes on with one line per
//! kernel, most device time first, and their total:
//!
//! ```text
//! pgpu-profile-kernel 0.4120 ms 4 launches pgpu_coll_sort_idx_i32_sweep_mid
//! pgpu-profile-kernels 1.0320 ms 36 launches
//! ```
//!
//! `tasks` counts the tasks (`pgpu.task`, Fork's sibling subgroups) that
//! ran on streams of their own, `streams` the streams created for them,
//! `threads` the task threads started to run their host code
//! ([`crate::cuda::tasks`]); with task threads, `sync-wait-ms` adds up
//! the waits of all host threads (task threads wait for their own
//! subgroups while others issue work), and `main-wait-ms` is the part the
//! program's thread waited (which also waits, untimed here, for its
//! tasks' host code at the end of a task group).
//!
//! With `PGPU_TIMELINE=PATH` (which implies `PGPU_PROFILE=kernels`), the
//! program also writes every launch's device interval, by stream, and the
//! host's driver calls (launches, allocations, copies, synchronizations,
//! task steps) to PATH as a Chrome trace (JSON; open it in
//! `chrome://tracing` or Perfetto): where sibling subgroups' kernels
//! overlap, and where the host waits ([`crate::cuda::kernel_times`]).
//!
//! `device-peak-bytes` is the most device memory in use at once by lists
//! (their mirrors) and scratch (`mgpuMemAlloc`); memory kept in the
//! runtime's caches for reuse does not count as in use.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};
use std::time::Instant;

static LAUNCHES: AtomicU64 = AtomicU64::new(0);
static SYNCS: AtomicU64 = AtomicU64::new(0);
static SYNC_NANOS: AtomicU64 = AtomicU64::new(0);
/// The part of `SYNC_NANOS` the program's thread waited.
static MAIN_WAIT_NANOS: AtomicU64 = AtomicU64::new(0);
static UPLOADS: AtomicU64 = AtomicU64::new(0);
static UPLOAD_BYTES: AtomicU64 = AtomicU64::new(0);
static DOWNLOADS: AtomicU64 = AtomicU64::new(0);
static DOWNLOAD_BYTES: AtomicU64 = AtomicU64::new(0);
static TASKS: AtomicU64 = AtomicU64::new(0);
static STREAMS: AtomicU64 = AtomicU64::new(0);
static IN_USE: AtomicU64 = AtomicU64::new(0);
static PEAK: AtomicU64 = AtomicU64::new(0);
static ENABLED: AtomicBool = AtomicBool::new(false);
static KERNEL_TIMES: AtomicBool = AtomicBool::new(false);
static PRINTED: AtomicBool = AtomicBool::new(false);

/// Where `PGPU_TIMELINE` asks for the timeline.
static TIMELINE: OnceLock<Option<PathBuf>> = OnceLock::new();
/// The host's driver calls for the timeline: what, start and length in
/// microseconds since [`since_start`]'s origin.
/// The timeline's host spans: what, host thread ([`host_thread`]), start
/// and length in microseconds.
static HOST_SPANS: Mutex<Vec<(&'static str, usize, f64, f64)>> = Mutex::new(Vec::new());
/// Host threads numbered so far (the first to record a span is 0: the
/// program's thread, which starts the runtime).
static HOST_THREADS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

thread_local! {
    static HOST_THREAD: std::cell::OnceCell<usize> = const { std::cell::OnceCell::new() };
}

/// This thread's number on the timeline: the program's thread 0, task
/// threads ([`crate::cuda::tasks`]) from 1 in order of first span.
pub fn host_thread() -> usize {
    HOST_THREAD.with(|number| *number.get_or_init(|| HOST_THREADS.fetch_add(1, Ordering::Relaxed)))
}

/// Reads `PGPU_PROFILE` and `PGPU_TIMELINE` (called by `pgpu_rt_init`).
pub fn configure() {
    let value = std::env::var("PGPU_PROFILE").ok();
    let timeline = std::env::var_os("PGPU_TIMELINE")
        .filter(|path| !path.is_empty())
        .map(PathBuf::from);
    let enabled = value.as_deref().is_some_and(|value| value != "0") || timeline.is_some();
    ENABLED.store(enabled, Ordering::Relaxed);
    KERNEL_TIMES.store(
        value.as_deref() == Some("kernels") || timeline.is_some(),
        Ordering::Relaxed,
    );
    let _ = TIMELINE.set(timeline);
    since_start();
    host_thread();
}

/// Whether launches are timed (`PGPU_PROFILE=kernels`, `PGPU_TIMELINE`).
pub fn times_kernels() -> bool {
    KERNEL_TIMES.load(Ordering::Relaxed)
}

/// The file `PGPU_TIMELINE` names, if any.
pub fn timeline_path() -> Option<&'static Path> {
    TIMELINE.get().and_then(|path| path.as_deref())
}

/// Microseconds of host time since the profile was configured.
pub fn since_start() -> f64 {
    static START: OnceLock<Instant> = OnceLock::new();
    START.get_or_init(Instant::now).elapsed().as_secs_f64() * 1e6
}

/// The host's synchronizations and timed driver calls, for the timeline.
pub fn host_spans() -> Vec<(&'static str, usize, f64, f64)> {
    HOST_SPANS
        .lock()
        .map(|spans| spans.clone())
        .unwrap_or_default()
}

/// Runs `call` (a driver call), on the timeline as `what` when there is one.
pub fn host_call<T>(what: &'static str, call: impl FnOnce() -> T) -> T {
    if timeline_path().is_none() {
        return call();
    }
    let start = since_start();
    let value = call();
    record_span(what, start, since_start() - start);
    value
}

/// Puts a host span on the timeline (microseconds).
fn record_span(what: &'static str, start: f64, length: f64) {
    if let Ok(mut spans) = HOST_SPANS.lock() {
        spans.push((what, host_thread(), start, length));
    }
}

pub fn launched() {
    LAUNCHES.fetch_add(1, Ordering::Relaxed);
}

/// A synchronization that kept the host waiting for `waited`.
pub fn synchronized(waited: std::time::Duration) {
    waited_in("synchronize", waited, true);
}

/// A driver call `what` that kept the host waiting for `waited`: a
/// synchronization (`counted` in `syncs`), or a copy that returns when
/// done (its time only).
pub fn waited_in(what: &'static str, waited: std::time::Duration, counted: bool) {
    if counted {
        SYNCS.fetch_add(1, Ordering::Relaxed);
    }
    let nanos = u64::try_from(waited.as_nanos()).unwrap_or(u64::MAX);
    SYNC_NANOS.fetch_add(nanos, Ordering::Relaxed);
    if host_thread() == 0 {
        MAIN_WAIT_NANOS.fetch_add(nanos, Ordering::Relaxed);
    }
    if timeline_path().is_some() {
        let length = waited.as_secs_f64() * 1e6;
        record_span(what, since_start() - length, length);
    }
}

/// A task began on a stream of its own.
pub fn task_started() {
    TASKS.fetch_add(1, Ordering::Relaxed);
}

/// The tasks created a stream.
pub fn stream_created() {
    STREAMS.fetch_add(1, Ordering::Relaxed);
}

pub fn uploaded(bytes: usize) {
    UPLOADS.fetch_add(1, Ordering::Relaxed);
    UPLOAD_BYTES.fetch_add(bytes as u64, Ordering::Relaxed);
}

pub fn downloaded(bytes: usize) {
    DOWNLOADS.fetch_add(1, Ordering::Relaxed);
    DOWNLOAD_BYTES.fetch_add(bytes as u64, Ordering::Relaxed);
}

/// `bytes` of device memory taken into use.
pub fn taken(bytes: usize) {
    let now = IN_USE.fetch_add(bytes as u64, Ordering::Relaxed) + bytes as u64;
    PEAK.fetch_max(now, Ordering::Relaxed);
}

/// `bytes` of device memory given back (to a cache or the driver).
pub fn given_back(bytes: usize) {
    // Saturating: a block released without having been counted.
    let _ = IN_USE.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |now| {
        Some(now.saturating_sub(bytes as u64))
    });
}

/// The report line.
pub fn report() -> String {
    let load = |counter: &AtomicU64| counter.load(Ordering::Relaxed);
    format!(
        "pgpu-profile launches {} syncs {} sync-wait-ms {:.3} uploads {} ({} bytes) downloads {} ({} bytes) device-peak-bytes {} tasks {} streams {} threads {} main-wait-ms {:.3}",
        load(&LAUNCHES),
        load(&SYNCS),
        load(&SYNC_NANOS) as f64 / 1e6,
        load(&UPLOADS),
        load(&UPLOAD_BYTES),
        load(&DOWNLOADS),
        load(&DOWNLOAD_BYTES),
        load(&PEAK),
        load(&TASKS),
        load(&STREAMS),
        crate::cuda::tasks::threads_started(),
        load(&MAIN_WAIT_NANOS) as f64 / 1e6,
    )
}

/// Prints the report once, if `PGPU_PROFILE` asked for it.
pub fn print_if_enabled() {
    if ENABLED.load(Ordering::Relaxed) && !PRINTED.swap(true, Ordering::Relaxed) {
        eprintln!("{}", report());
        match crate::cuda::started().filter(|_| times_kernels()) {
            Some(runtime) => match crate::cuda::kernel_times::report(runtime) {
                Ok(lines) => lines.iter().for_each(|line| eprintln!("{line}")),
                Err(error) => eprintln!("pgpu-profile-kernels unavailable: {error}"),
            },
            None if timeline_path().is_some() => {
                eprintln!("pgpu-profile-timeline not written: no kernel ran on the cuda device")
            }
            None => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn peak_follows_memory_in_use() {
        let before = PEAK.load(Ordering::Relaxed);
        taken(1 << 40);
        given_back(1 << 40);
        taken(10);
        given_back(10);
        assert!(PEAK.load(Ordering::Relaxed) >= before.max(1 << 40));
        assert!(report().starts_with("pgpu-profile launches "));
    }
}
