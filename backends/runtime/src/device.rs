//! Which device a compiled program runs on: `cpu` or `cuda`.
//!
//! The choice comes from, in order: the program flag `--device cpu|cuda`
//! (or `--device=cuda`), which `pgpu_rt_init` removes from the arguments
//! before `pgpu_rt_argi` sees them (the last one given counts); the
//! environment variable `PGPU_DEVICE`; else `cuda` when the CUDA driver
//! loads, `cuInit` succeeds and a device exists ([`crate::cuda::probe`]),
//! else `cpu`. An unknown name is an error, and so is `cuda` asked for
//! (by flag or variable) when no CUDA device is usable: the program stops
//! with `pgpu runtime: error: --device cuda: no usable CUDA device (WHY)`
//! and status 1 rather than silently running on the CPU.
//!
//! The choice is made once, on first need, and cached:
//! `pgpu_rt_device_is_cuda()` costs one atomic load after the first call.
//! `pgpu_rt_init` starts making it when the device was asked for or when
//! the program holds CUDA kernels (modules recorded by `mgpuModuleLoad*`,
//! which upstream's LLVM translation calls from global constructors before
//! `main`): it loads the driver library (a machine without one gets the
//! cpu device, or the error of `--device cuda`, at once), then runs
//! `cuInit`, starts the device and loads those modules on a thread of its
//! own while the program goes on (`start_in_background`). The
//! program's first device use, `pgpu_rt_wtime` and its end wait for it,
//! so the PTX JIT and context creation stay out of timed regions. A program
//! without kernels (a cpu-target executable) never touches the driver
//! unless asked to. `pgpu_rt_device_synchronize()` waits for all device
//! work (nothing on the cpu device).

use crate::error::{RtError, guard};
use std::sync::atomic::{AtomicBool, AtomicI8, Ordering};
use std::sync::{Mutex, OnceLock};

/// A device a program can run on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Device {
    Cpu,
    Cuda,
}

impl Device {
    pub fn parse(text: &str) -> Option<Device> {
        match text {
            "cpu" => Some(Device::Cpu),
            "cuda" => Some(Device::Cuda),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Device::Cpu => "cpu",
            Device::Cuda => "cuda",
        }
    }
}

/// A device asked for, and who asked (`--device` or `PGPU_DEVICE`).
pub type Request = (Device, &'static str);

fn unknown_device(source: &str, text: &str) -> RtError {
    RtError::Device(format!(
        "{source}: unknown device '{text}' (expected cpu or cuda)"
    ))
}

/// Removes every `--device NAME` and `--device=NAME` from `args`; the
/// last one's device.
pub fn take_device_flag(args: &mut Vec<String>) -> Result<Option<Device>, RtError> {
    let mut device = None;
    let mut kept = Vec::with_capacity(args.len());
    let mut rest = std::mem::take(args).into_iter();
    while let Some(arg) = rest.next() {
        let value = if arg == "--device" {
            rest.next().ok_or_else(|| {
                RtError::Device("--device: missing device name (cpu or cuda)".into())
            })?
        } else if let Some(value) = arg.strip_prefix("--device=") {
            value.to_string()
        } else {
            kept.push(arg);
            continue;
        };
        device = Some(Device::parse(&value).ok_or_else(|| unknown_device("--device", &value))?);
    }
    *args = kept;
    Ok(device)
}

/// The device `PGPU_DEVICE` asks for (unset or empty: none).
pub fn env_request() -> Result<Option<Request>, RtError> {
    match std::env::var("PGPU_DEVICE") {
        Ok(text) if !text.is_empty() => Device::parse(&text)
            .map(|device| Some((device, "PGPU_DEVICE")))
            .ok_or_else(|| unknown_device("PGPU_DEVICE", &text)),
        _ => Ok(None),
    }
}

/// The device for `request`, given whether CUDA is usable (`probe`).
pub fn choose(
    request: Option<Request>,
    probe: impl FnOnce() -> Result<(), String>,
) -> Result<Device, RtError> {
    match request {
        Some((Device::Cpu, _)) => Ok(Device::Cpu),
        Some((Device::Cuda, source)) => probe().map(|()| Device::Cuda).map_err(|why| {
            RtError::Device(format!("{source} cuda: no usable CUDA device ({why})"))
        }),
        None => Ok(if probe().is_ok() {
            Device::Cuda
        } else {
            Device::Cpu
        }),
    }
}

/// The request recorded by `pgpu_rt_init` (flag or variable).
static REQUEST: Mutex<Option<Request>> = Mutex::new(None);
/// The chosen device.
static CHOSEN: OnceLock<Device> = OnceLock::new();
/// 1 cuda, 0 cpu, -1 not chosen yet.
static IS_CUDA: AtomicI8 = AtomicI8::new(-1);
static CHOOSING: Mutex<()> = Mutex::new(());

/// The device the program runs on, chosen on the first call.
pub fn device() -> Result<Device, RtError> {
    if let Some(&device) = CHOSEN.get() {
        return Ok(device);
    }
    let _lock = CHOOSING.lock().unwrap_or_else(|poison| poison.into_inner());
    if let Some(&device) = CHOSEN.get() {
        return Ok(device);
    }
    let recorded = *REQUEST.lock().unwrap_or_else(|poison| poison.into_inner());
    let request = match recorded {
        Some(request) => Some(request),
        None => env_request()?,
    };
    let device = choose(request, crate::cuda::probe)?;
    let _ = CHOSEN.set(device);
    IS_CUDA.store((device == Device::Cuda) as i8, Ordering::Release);
    Ok(device)
}

/// The device, if it has been chosen (one atomic load; never waits).
pub fn chosen() -> Option<Device> {
    match IS_CUDA.load(Ordering::Acquire) {
        0 => Some(Device::Cpu),
        1 => Some(Device::Cuda),
        _ => None,
    }
}

/// Whether the program runs on the cuda device (cheap after the first
/// call).
pub fn is_cuda() -> Result<bool, RtError> {
    match IS_CUDA.load(Ordering::Acquire) {
        0 => Ok(false),
        1 => Ok(true),
        _ => Ok(device()? == Device::Cuda),
    }
}

/// An error unless the program runs on the cuda device; `what` names what
/// needs it.
pub fn require_cuda(what: impl FnOnce() -> String) -> Result<(), RtError> {
    if is_cuda()? {
        Ok(())
    } else {
        Err(RtError::Device(format!(
            "{} needs the cuda device, but the program runs on the cpu device",
            what()
        )))
    }
}

/// The device part of `pgpu_rt_init`: records the request (`flag`, else
/// `PGPU_DEVICE`) and, when there is one or the program has CUDA kernels,
/// chooses the device, in the background when the cuda device is possible
/// (see the module header).
pub fn init(flag: Option<Device>) -> Result<(), RtError> {
    let request = match flag {
        Some(device) => Some((device, "--device")),
        None => env_request()?,
    };
    if let (Some((wanted, source)), Some(&chosen)) = (request, CHOSEN.get())
        && wanted != chosen
    {
        return Err(RtError::Device(format!(
            "{source} {}: the program already runs on the {} device",
            wanted.name(),
            chosen.name()
        )));
    }
    *REQUEST.lock().unwrap_or_else(|poison| poison.into_inner()) = request;
    let has_kernels = crate::mgpu::has_modules();
    let cuda_possible = request.map_or(has_kernels, |(device, _)| device == Device::Cuda);
    // Loading the driver library is fast and tells a machine without one
    // at once (`--device cuda` fails here, auto-detection picks the cpu);
    // `cuInit` and the rest are slow and go to the background.
    if cuda_possible && crate::cuda::load_library().is_ok() {
        start_in_background(has_kernels);
    } else if request.is_some() || has_kernels {
        device()?;
    }
    Ok(())
}

/// The thread starting the CUDA device, until it is joined.
static STARTER: Mutex<Option<std::thread::JoinHandle<()>>> = Mutex::new(None);

/// Chooses the device and, on the cuda device, starts it (`cuInit`, the
/// context, then every module when `load_modules`: see [`crate::mgpu`],
/// and the driver's first-launch work: [`crate::cuda::warm_up`]) on
/// a thread of its own, while the program's host code goes on: on the
/// H200 `cuInit` took 100-180 ms and the context 125-500 ms, which the
/// program's first host work (reading or generating its input) now
/// overlaps. The first device use waits for whatever is not done yet (the
/// choice's lock, the runtime's start-up lock, a module's lock), and so do
/// `pgpu_rt_wtime` and the program's end ([`join_starter`]), so start-up
/// stays out of timed regions. A failure here is left for that use to
/// report: it chooses, starts or loads again and reports its own error
/// (`pgpu_rt_fini` makes a choice the program never needed, so an
/// unusable `--device cuda` is still an error). Without a thread, all of
/// it happens here.
fn start_in_background(load_modules: bool) {
    let start = move || {
        if device() == Ok(Device::Cuda)
            && load_modules
            && crate::mgpu::load_all().is_ok()
            && let Ok(runtime) = crate::cuda::runtime()
        {
            let _ = crate::profile::host_call("warm-up", || crate::cuda::warm_up::warm_up(runtime));
        }
    };
    match std::thread::Builder::new()
        .name("pgpu-start".into())
        .spawn(start)
    {
        Ok(thread) => *STARTER.lock().unwrap_or_else(|poison| poison.into_inner()) = Some(thread),
        Err(_) => start(),
    }
}

/// Waits until the background start-up has ended.
fn join_starter() {
    let thread = STARTER
        .lock()
        .unwrap_or_else(|poison| poison.into_inner())
        .take();
    if let Some(thread) = thread {
        let _ = thread.join();
    }
}

/// Set once a launch has waited for the background start-up.
static START_UP_AWAITED: AtomicBool = AtomicBool::new(false);

/// Waits, before the program's first kernel launch, until the background
/// start-up has ended: its warm-up launch holds the driver for its
/// first-launch work (4-5 ms on the H200), and a launch issued meanwhile
/// waits inside the driver, which `PGPU_PROFILE=kernels` counted as that
/// kernel's device time (its start event was already recorded). Never
/// called on the start-up thread (its warm-up launches through the driver
/// directly).
pub fn await_start_up_before_launch() {
    if !START_UP_AWAITED.load(Ordering::Relaxed) {
        join_starter();
        START_UP_AWAITED.store(true, Ordering::Relaxed);
    }
}

/// Waits for the device's start-up and all work of the device (nothing
/// on the cpu device).
pub fn synchronize() -> Result<(), RtError> {
    join_starter();
    crate::cuda::synchronize_if_started()
}

/// Runs `step` of the task protocol on the cuda device; nothing on the
/// cpu device, where tasks run in program order. Steps that run no task
/// code are `timed` (a `task-step` span on the timeline).
fn task_step(
    step: fn(&'static crate::cuda::Runtime) -> Result<(), RtError>,
    timed: bool,
) -> Result<(), RtError> {
    if !is_cuda()? {
        return Ok(());
    }
    let runtime = crate::cuda::runtime()?;
    if timed {
        crate::profile::host_call("task-step", || step(runtime))
    } else {
        step(runtime)
    }
}

/// A `pgpu.taskgroup` begins ([`crate::cuda::tasks`]).
#[unsafe(no_mangle)]
pub extern "C" fn pgpu_rt_tasks_begin() {
    guard(|| task_step(crate::cuda::tasks::tasks_begin, true))
}

/// A task whose host code is `body(context)` (`pgpu-outline-tasks`):
/// on the cuda device it runs on a stream and, where a task thread is
/// free, a thread of its own, with a copy of the `bytes` bytes of
/// `context`; `pgpu_rt_tasks_end` waits for it. On the cpu device it runs
/// here and now.
///
/// # Safety
/// `body` accepts `context` (`bytes` readable bytes) or a copy of it.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn pgpu_rt_task_spawn(
    body: Option<crate::cuda::tasks::TaskBody>,
    context: *mut u8,
    bytes: i64,
) {
    guard(|| {
        let body =
            body.ok_or_else(|| RtError::Internal("pgpu_rt_task_spawn: null task body".into()))?;
        let bytes = usize::try_from(bytes)
            .map_err(|_| RtError::Internal(format!("pgpu_rt_task_spawn: {bytes} bytes")))?;
        if is_cuda()? {
            let runtime = crate::cuda::runtime()?;
            // SAFETY: the caller's contract.
            unsafe { crate::cuda::tasks::task_spawn(runtime, body, context, bytes) }
        } else {
            // SAFETY: the caller's contract.
            unsafe { body(context) };
            Ok(())
        }
    })
}

/// A `pgpu.task` begins: its device work goes to a stream of its own.
#[unsafe(no_mangle)]
pub extern "C" fn pgpu_rt_task_begin() {
    guard(|| task_step(crate::cuda::tasks::task_begin, true))
}

/// A `pgpu.task` ends.
#[unsafe(no_mangle)]
pub extern "C" fn pgpu_rt_task_end() {
    guard(|| task_step(crate::cuda::tasks::task_end, true))
}

/// A `pgpu.taskgroup` ends: later device work waits for all its tasks.
#[unsafe(no_mangle)]
pub extern "C" fn pgpu_rt_tasks_end() {
    guard(|| task_step(crate::cuda::tasks::tasks_end, false))
}

/// 1 when the program runs on the cuda device, else 0.
#[unsafe(no_mangle)]
pub extern "C" fn pgpu_rt_device_is_cuda() -> i32 {
    guard(|| is_cuda().map(i32::from))
}

/// Threads one grid kernel (`pgpu.spawn grid`, whose barriers are
/// grid-wide) may have on the device: all must be co-resident. 0 on the
/// cpu device, and on a GPU without cooperative launches.
#[unsafe(no_mangle)]
pub extern "C" fn pgpu_rt_grid_capacity() -> i64 {
    guard(|| match is_cuda()? {
        true => Ok(crate::cuda::runtime()?.grid_capacity),
        false => Ok(0),
    })
}

/// Reports a grid kernel started where grid barriers are unavailable
/// (code versioned on `pgpu_rt_grid_capacity` never does).
#[unsafe(no_mangle)]
pub extern "C" fn pgpu_rt_grid_unavailable() {
    guard(|| -> Result<(), RtError> {
        Err(RtError::Device(
            "a grid kernel (pgpu.spawn grid) was started on a device without grid barriers".into(),
        ))
    })
}

/// Threads one block kernel (`pgpu.spawn block`: one thread block whose
/// threads synchronize in ranges) may have on the device: min(1024, the
/// device's threads per block). 0 on the cpu device, and on a GPU older
/// than sm_70 (its range barriers need independent thread scheduling).
#[unsafe(no_mangle)]
pub extern "C" fn pgpu_rt_block_capacity() -> i64 {
    guard(|| match is_cuda()? {
        true => Ok(crate::cuda::runtime()?.block_capacity),
        false => Ok(0),
    })
}

/// The device's multiprocessors (`pgpu.multiprocessors`): the SM count
/// (`PGPU_MULTIPROCESSORS` overrides it); 0 on the cpu device.
#[unsafe(no_mangle)]
pub extern "C" fn pgpu_rt_multiprocessors() -> i64 {
    guard(|| match is_cuda()? {
        true => Ok(crate::cuda::runtime()?.multiprocessors),
        false => Ok(0),
    })
}

/// The threads per block of a kernel of `threads` threads
/// (`pgpu-offload-kernels`), at most `most`: `most` when the kernel gives
/// every multiprocessor a block of that size, else the smallest multiple
/// of 32 that spreads the kernel over all multiprocessors. A small kernel
/// (a speculative window of 8192 threads, say) then runs on every
/// multiprocessor instead of on a quarter of them, which is what a kernel
/// whose threads wait on latency needs. `most` on the cpu device.
#[unsafe(no_mangle)]
pub extern "C" fn pgpu_rt_kernel_block_size(threads: i64, most: i64) -> i64 {
    guard(|| match is_cuda()? {
        true => Ok(spread_block_size(
            threads,
            most,
            crate::cuda::runtime()?.multiprocessors,
        )),
        false => Ok(most),
    })
}

/// The block size of [`pgpu_rt_kernel_block_size`] on `multiprocessors`
/// (also what the performance model predicts host kernels with).
pub fn spread_block_size(threads: i64, most: i64, multiprocessors: i64) -> i64 {
    if most <= 32 || multiprocessors <= 0 {
        return most.max(1);
    }
    let per_multiprocessor = (threads.max(1) + multiprocessors - 1) / multiprocessors;
    let warps = (per_multiprocessor + 31) / 32;
    (warps * 32).clamp(32, most)
}

#[cfg(test)]
mod block_size_tests {
    use super::spread_block_size;

    #[test]
    fn spreads_small_kernels_over_every_multiprocessor() {
        // 8192 threads on 132 multiprocessors: 63 each, so blocks of 64.
        assert_eq!(spread_block_size(8192, 256, 132), 64);
        assert_eq!(spread_block_size(512, 256, 132), 32);
        assert_eq!(spread_block_size(1, 256, 132), 32);
        // A kernel that fills every multiprocessor keeps the largest size.
        assert_eq!(spread_block_size(132 * 256, 256, 132), 256);
        assert_eq!(spread_block_size(1 << 20, 256, 132), 256);
        assert_eq!(spread_block_size(132 * 200, 256, 132), 224);
        // Nothing to spread: a block size of a warp or less, no count.
        assert_eq!(spread_block_size(8192, 16, 132), 16);
        assert_eq!(spread_block_size(8192, 256, 0), 256);
    }
}

/// Threads of a kernel the device runs in lockstep
/// (`pgpu.lockstep_width`): the warp size on the cuda device; 1 on the
/// cpu device, whose kernel threads do not run in lockstep.
#[unsafe(no_mangle)]
pub extern "C" fn pgpu_rt_lockstep_width() -> i64 {
    guard(|| match is_cuda()? {
        true => Ok(crate::cuda::runtime()?.lockstep_width),
        false => Ok(1),
    })
}

/// Reports a block kernel started where block spawns are unavailable
/// (code versioned on `pgpu_rt_block_capacity` never does).
#[unsafe(no_mangle)]
pub extern "C" fn pgpu_rt_block_unavailable() {
    guard(|| -> Result<(), RtError> {
        Err(RtError::Device(
            "a block kernel (pgpu.spawn block) was started on a device without block spawns".into(),
        ))
    })
}

/// Waits until all launched kernels and copies have completed; reports a
/// kernel's fault.
#[unsafe(no_mangle)]
pub extern "C" fn pgpu_rt_device_synchronize() {
    guard(synchronize)
}

/// The end of a program (called by the generated `main` after the
/// program's own): waits for the device, so that a kernel's fault is
/// reported before the exit, and prints the `PGPU_PROFILE` report.
#[unsafe(no_mangle)]
pub extern "C" fn pgpu_rt_fini() {
    guard(|| {
        // A device asked for (or the choice a program with kernels needs)
        // that the program never used: its error, if any, now.
        let asked = REQUEST
            .lock()
            .unwrap_or_else(|poison| poison.into_inner())
            .is_some();
        if asked || crate::mgpu::has_modules() {
            device()?;
        }
        synchronize()?;
        crate::profile::print_if_enabled();
        Ok(())
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn args(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn device_flags_are_removed() {
        let mut a = args(&["7", "--device", "cuda", "8"]);
        assert_eq!(take_device_flag(&mut a), Ok(Some(Device::Cuda)));
        assert_eq!(a, args(&["7", "8"]));
        let mut a = args(&["--device=cpu", "-3", "--device=cuda", "--device", "cpu"]);
        assert_eq!(take_device_flag(&mut a), Ok(Some(Device::Cpu)));
        assert_eq!(a, args(&["-3"]));
        let mut a = args(&["1", "2"]);
        assert_eq!(take_device_flag(&mut a), Ok(None));
        assert_eq!(a, args(&["1", "2"]));
    }

    #[test]
    fn bad_device_flags_are_errors() {
        assert_eq!(
            take_device_flag(&mut args(&["--device", "tpu"]))
                .unwrap_err()
                .to_string(),
            "--device: unknown device 'tpu' (expected cpu or cuda)"
        );
        assert!(take_device_flag(&mut args(&["--device=gpu"])).is_err());
        assert_eq!(
            take_device_flag(&mut args(&["1", "--device"]))
                .unwrap_err()
                .to_string(),
            "--device: missing device name (cpu or cuda)"
        );
    }

    #[test]
    fn choice_rules() {
        let no_gpu = || Err("cannot load libcuda.so.1".to_string());
        let gpu = || Ok(());
        assert_eq!(choose(None, no_gpu), Ok(Device::Cpu));
        assert_eq!(choose(None, gpu), Ok(Device::Cuda));
        assert_eq!(
            choose(Some((Device::Cpu, "--device")), gpu),
            Ok(Device::Cpu)
        );
        assert_eq!(
            choose(Some((Device::Cuda, "PGPU_DEVICE")), gpu),
            Ok(Device::Cuda)
        );
        assert_eq!(
            choose(Some((Device::Cuda, "--device")), no_gpu)
                .unwrap_err()
                .to_string(),
            "--device cuda: no usable CUDA device (cannot load libcuda.so.1)"
        );
    }

    #[test]
    fn without_a_gpu_the_default_is_cpu() {
        // This machine may or may not have a GPU; the choice must agree
        // with the probe (PGPU_DEVICE unset in unit tests).
        if std::env::var_os("PGPU_DEVICE").is_none() {
            let expected = if crate::cuda::probe().is_ok() {
                Device::Cuda
            } else {
                Device::Cpu
            };
            assert_eq!(device(), Ok(expected));
            assert_eq!(pgpu_rt_device_is_cuda(), (expected == Device::Cuda) as i32);
        }
        if !is_cuda().unwrap() {
            pgpu_rt_device_synchronize();
            assert!(require_cuda(|| "kernel k".into()).is_err());
        }
    }
}
