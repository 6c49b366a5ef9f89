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
//! pgpu-profile launches 42 syncs 7 sync-wait-ms 1.250 uploads 3 (12000000 bytes) downloads 2 (8 bytes) device-peak-bytes 48000000
//! ```
//!
//! `sync-wait-ms` is the host's time blocked in those synchronizations
//! (waiting for the device's queued work and the copies): with the run's
//! wall time it gives the share the paper measured for its quicksort
//! (seeds/fork-to-cuda.txt, Section 4: 31% in kernel synchronizations).
//!
//! With `PGPU_PROFILE=kernels`, every launch is also timed on the device
//! ([`crate::cuda::kernel_times`]) and the report goes on with one line per
//! kernel, most device time first, and their total:
//!
//! ```text
//! pgpu-profile-kernel 0.412 ms 4 launches pgpu_coll_sort_idx_i32_sweep_mid
//! pgpu-profile-kernels 1.032 ms 36 launches
//! ```
//!
//! `device-peak-bytes` is the most device memory in use at once by lists
//! (their mirrors) and scratch (`mgpuMemAlloc`); memory kept in the
//! runtime's caches for reuse does not count as in use.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

static LAUNCHES: AtomicU64 = AtomicU64::new(0);
static SYNCS: AtomicU64 = AtomicU64::new(0);
static SYNC_NANOS: AtomicU64 = AtomicU64::new(0);
static UPLOADS: AtomicU64 = AtomicU64::new(0);
static UPLOAD_BYTES: AtomicU64 = AtomicU64::new(0);
static DOWNLOADS: AtomicU64 = AtomicU64::new(0);
static DOWNLOAD_BYTES: AtomicU64 = AtomicU64::new(0);
static IN_USE: AtomicU64 = AtomicU64::new(0);
static PEAK: AtomicU64 = AtomicU64::new(0);
static ENABLED: AtomicBool = AtomicBool::new(false);
static KERNEL_TIMES: AtomicBool = AtomicBool::new(false);
static PRINTED: AtomicBool = AtomicBool::new(false);

/// Reads `PGPU_PROFILE` (called by `pgpu_rt_init`).
pub fn configure() {
    let value = std::env::var("PGPU_PROFILE").ok();
    let enabled = value.as_deref().is_some_and(|value| value != "0");
    ENABLED.store(enabled, Ordering::Relaxed);
    KERNEL_TIMES.store(value.as_deref() == Some("kernels"), Ordering::Relaxed);
}

/// Whether launches are timed (`PGPU_PROFILE=kernels`).
pub fn times_kernels() -> bool {
    KERNEL_TIMES.load(Ordering::Relaxed)
}

pub fn launched() {
    LAUNCHES.fetch_add(1, Ordering::Relaxed);
}

/// A synchronization that kept the host waiting for `waited`.
pub fn synchronized(waited: std::time::Duration) {
    SYNCS.fetch_add(1, Ordering::Relaxed);
    let nanos = u64::try_from(waited.as_nanos()).unwrap_or(u64::MAX);
    SYNC_NANOS.fetch_add(nanos, Ordering::Relaxed);
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
        "pgpu-profile launches {} syncs {} sync-wait-ms {:.3} uploads {} ({} bytes) downloads {} ({} bytes) device-peak-bytes {}",
        load(&LAUNCHES),
        load(&SYNCS),
        load(&SYNC_NANOS) as f64 / 1e6,
        load(&UPLOADS),
        load(&UPLOAD_BYTES),
        load(&DOWNLOADS),
        load(&DOWNLOAD_BYTES),
        load(&PEAK),
    )
}

/// Prints the report once, if `PGPU_PROFILE` asked for it.
pub fn print_if_enabled() {
    if ENABLED.load(Ordering::Relaxed) && !PRINTED.swap(true, Ordering::Relaxed) {
        eprintln!("{}", report());
        if let Some(runtime) = crate::cuda::started().filter(|_| times_kernels()) {
            match crate::cuda::kernel_times::report(runtime) {
                Ok(lines) => lines.iter().for_each(|line| eprintln!("{line}")),
                Err(error) => eprintln!("pgpu-profile-kernels unavailable: {error}"),
            }
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
