//! The CUDA device: driver, context, the runtime stream, launches and the
//! reports of their errors.
//!
//! **Start-up.** [`probe`] loads the driver ([`driver()`]), runs `cuInit` and
//! counts devices, once per process; it decides whether a CUDA device is
//! usable at all (see [`crate::device`]). [`runtime`] starts the device on
//! first use: the primary context of the chosen ordinal (0, or the one of
//! `mgpuSetDefaultDevice`), made current on each thread that calls in (a
//! thread-local flag makes that one driver call per thread), and one
//! stream. Nothing here is touched on the cpu device.
//!
//! **One stream.** All device work of the process goes to one runtime
//! stream, created non-blocking: mirror copies ([`crate::mirror`]),
//! launches, and the `mgpu*` copies and memsets, whatever stream handle
//! generated code passes (`mgpuStreamCreate` returns this stream and
//! `mgpuStreamDestroy` leaves it alone). So a copy queued by
//! `pgpu_rt_to_device` is ordered before the launch that reads it, and one
//! stream synchronization (`pgpu_rt_to_host`, `pgpu_rt_wtime`,
//! `pgpu_rt_device_synchronize`, `mgpuStreamSynchronize`) waits for all
//! device work. BSGP programs are sequences of dependent supersteps, so
//! nothing is lost by not running kernels concurrently, and no stream is
//! created or destroyed per launch (upstream's synchronous `gpu.launch_func`
//! lowering creates and destroys one each time). The one exception is
//! tasks (`pgpu.taskgroup`, Fork's sibling subgroups: [`tasks`]): inside a
//! task, all of this goes to the task's own stream instead, the *current
//! stream*, and a synchronization waits for that stream.
//!
//! **Errors.** Every driver call is checked; a failure is an
//! [`RtError::Cuda`] with the call, the error's name and the driver's
//! description. Launches record their source site ([`sites`]): a launch
//! the driver refuses is reported at its site, and a kernel fault that a
//! later call reports (any call for a sticky fault such as
//! `CUDA_ERROR_ILLEGAL_ADDRESS`, any error of a synchronization) becomes an
//! [`RtError::Kernel`] naming the launches outstanding since the last
//! successful synchronization.

pub mod device_clock;
pub mod driver;
pub mod kernel_times;
pub mod sites;
pub mod tasks;
pub mod warm_up;

use crate::error::RtError;
use crate::mirror::Backend;
use driver::*;
use sites::{Outstanding, Site};
use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::ffi::{c_char, c_int, c_uint, c_void};
use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::{Mutex, MutexGuard, OnceLock};

/// The driver library, loaded (`dlopen` and its symbols), or why not.
static LIBRARY: OnceLock<Result<Driver, String>> = OnceLock::new();
/// The driver after `cuInit`, with at least one device, or why not.
static DRIVER: OnceLock<Result<&'static Driver, String>> = OnceLock::new();

/// Loads the driver library (fast: no `cuInit`), after setting the
/// driver's environment. The program's thread calls it first, from
/// `pgpu_rt_init`, before the runtime starts any thread of its own.
pub fn load_library() -> Result<&'static Driver, String> {
    LIBRARY
        .get_or_init(|| {
            set_driver_environment();
            Driver::load(driver::LIBRARY)
        })
        .as_ref()
        .map_err(Clone::clone)
}

fn set_driver_environment() {
    // Tasks' streams share the device's hardware queues (8 by default,
    // `CUDA_DEVICE_MAX_CONNECTIONS`). With the tasks' host code on threads
    // of their own, the default is best: on the H200 (2026-11-24) a
    // quicksort of 10^7 sorted in 277-354 ms with 8 queues, 346-387 ms
    // with 16 and 576-650 ms with 32, and the context's creation took
    // 155 ms with 8 against 484 ms with 32 (which this runtime asked for
    // while the tasks' host code was sequential).
    //
    // Kernels loaded lazily (the driver's default since CUDA 12.2) are
    // loaded at their first launch, which waits for the kernels running
    // then: a subgroup's first launch inside a task would wait for its
    // siblings' kernels (measured on the H200: two sibling subgroups'
    // loops took 1.73 s lazily, 0.98 s eagerly). Load every kernel with
    // its module instead, unless the user chose a mode.
    for (variable, value) in [("CUDA_MODULE_LOADING", "EAGER")] {
        if std::env::var_os(variable).is_none() {
            // SAFETY: set once, when `pgpu_rt_init` loads the library on
            // the program's thread, before the runtime starts any thread of
            // its own; the generated program has no other threads.
            unsafe { std::env::set_var(variable, value) };
        }
    }
}

fn open_driver() -> Result<&'static Driver, String> {
    let driver = load_library()?;
    // SAFETY: driver calls with valid out-pointers.
    let code = unsafe { (driver.cuInit)(0) };
    if code != CUDA_SUCCESS {
        let (name, message) = driver.error_text(code);
        return Err(format!("cuInit failed: {name}: {message}"));
    }
    let mut count: c_int = 0;
    // SAFETY: as above.
    let code = unsafe { (driver.cuDeviceGetCount)(&mut count) };
    if code != CUDA_SUCCESS {
        let (name, message) = driver.error_text(code);
        return Err(format!("cuDeviceGetCount failed: {name}: {message}"));
    }
    if count < 1 {
        return Err("the driver sees no CUDA device".into());
    }
    Ok(driver)
}

/// The driver, loaded and initialized, with at least one device.
pub fn driver() -> Result<&'static Driver, String> {
    DRIVER
        .get_or_init(|| crate::profile::host_call("cuda-init", open_driver))
        .clone()
}

/// Whether a CUDA device is usable, or why not.
pub fn probe() -> Result<(), String> {
    driver().map(|_| ())
}

/// The started CUDA device.
pub struct Runtime {
    pub driver: &'static Driver,
    pub ordinal: i32,
    pub device: CUdevice,
    pub context: CUcontext,
    /// The one stream of all device work.
    pub stream: CUstream,
    pub name: String,
    /// Compute capability (major, minor).
    pub capability: (i32, i32),
    /// Shared memory a block may have when a kernel opts in.
    pub max_shared_optin: i32,
    /// Whether kernels of modules marked by `pgpu-wait-grid-dependencies`
    /// launch as programmatic dependent launches: sm_90 and later, with
    /// `cuLaunchKernelEx`, unless `PGPU_DEPENDENT_LAUNCH=0`.
    pub dependent_launch: bool,
    /// Threads a grid kernel may have (`pgpu_rt_grid_capacity`):
    /// multiprocessors x `GRID_THREADS_PER_SM`, or 0 without cooperative
    /// launches.
    pub grid_capacity: i64,
    /// Threads a block kernel may have (`pgpu_rt_block_capacity`): min(1024,
    /// threads per block), or 0 before sm_70 (range barriers need
    /// independent thread scheduling).
    pub block_capacity: i64,
    /// Multiprocessors (`pgpu_rt_multiprocessors`): the SM count, or
    /// `PGPU_MULTIPROCESSORS` when set.
    pub multiprocessors: i64,
    /// Threads a warp runs in lockstep (`pgpu_rt_lockstep_width`): the
    /// device's warp size.
    pub lockstep_width: i64,
}

// SAFETY: the handles are process-wide driver objects, usable from any
// thread on which the context is current (see `make_current`).
unsafe impl Send for Runtime {}
// SAFETY: as above; the driver is thread-safe.
unsafe impl Sync for Runtime {}

static RUNTIME: OnceLock<Runtime> = OnceLock::new();
static STARTING: Mutex<()> = Mutex::new(());
/// The device ordinal the runtime starts on.
static ORDINAL: AtomicI32 = AtomicI32::new(0);

thread_local! {
    /// Whether the runtime's context is current on this thread.
    static CURRENT: Cell<bool> = const { Cell::new(false) };
    /// The site of this thread's next launch.
    static NEXT_SITE: RefCell<Option<Site>> = const { RefCell::new(None) };
}

/// The launches since the last successful synchronization.
static OUTSTANDING: Mutex<Outstanding> = Mutex::new(Outstanding::new());
/// What the runtime knows of a function handle.
struct Kernel {
    /// Its name (for reports without a site).
    name: String,
    kind: KernelKind,
}

/// How a kernel is launched and timed, from the symbols of its module.
#[derive(Debug, Clone, Copy, Default)]
pub struct KernelKind {
    /// Whether it starts with `griddepcontrol.wait` (its module defines
    /// the marker of `pgpu-wait-grid-dependencies`).
    pub waits: bool,
    /// Whether it has grid barriers (its module defines the marker of
    /// `pgpu-define-grid-barrier`): a cooperative launch.
    pub cooperative: bool,
    /// The device address of its module's cycle table, where
    /// `pgpu-count-sm-cycles` instrumented it.
    pub sm_cycles: Option<CUdeviceptr>,
}

/// The kernels of function handles.
static KERNELS: Mutex<Option<HashMap<usize, Kernel>>> = Mutex::new(None);

fn kernels() -> MutexGuard<'static, Option<HashMap<usize, Kernel>>> {
    KERNELS.lock().unwrap_or_else(|poison| poison.into_inner())
}

fn outstanding() -> MutexGuard<'static, Outstanding> {
    OUTSTANDING
        .lock()
        .unwrap_or_else(|poison| poison.into_inner())
}

/// The started device, if it has been started.
pub fn started() -> Option<&'static Runtime> {
    RUNTIME.get()
}

/// The CUDA device, started on first use and current on this thread.
pub fn runtime() -> Result<&'static Runtime, RtError> {
    let runtime = match RUNTIME.get() {
        Some(runtime) => runtime,
        None => start()?,
    };
    if !CURRENT.get() {
        // SAFETY: a live context.
        let code = unsafe { (runtime.driver.cuCtxSetCurrent)(runtime.context) };
        runtime.check("cuCtxSetCurrent", code)?;
        CURRENT.set(true);
    }
    Ok(runtime)
}

/// Chooses the device ordinal the runtime starts on; an error once it has
/// started on another.
pub fn set_ordinal(ordinal: i32) -> Result<(), RtError> {
    let _lock = STARTING.lock().unwrap_or_else(|poison| poison.into_inner());
    match RUNTIME.get() {
        Some(runtime) if runtime.ordinal != ordinal => Err(RtError::Device(format!(
            "mgpuSetDefaultDevice({ordinal}): the program already runs on CUDA device {}",
            runtime.ordinal
        ))),
        _ => {
            ORDINAL.store(ordinal, Ordering::Relaxed);
            Ok(())
        }
    }
}

fn start() -> Result<&'static Runtime, RtError> {
    let _lock = STARTING.lock().unwrap_or_else(|poison| poison.into_inner());
    if let Some(runtime) = RUNTIME.get() {
        return Ok(runtime);
    }
    let driver =
        driver().map_err(|why| RtError::Device(format!("no usable CUDA device: {why}")))?;
    crate::profile::host_call("context-start", || start_on(driver))
}

fn start_on(driver: &'static Driver) -> Result<&'static Runtime, RtError> {
    let check = |call: &'static str, code: CUresult| {
        if code == CUDA_SUCCESS {
            Ok(())
        } else {
            let (name, message) = driver.error_text(code);
            Err(RtError::Cuda {
                call,
                name,
                message,
            })
        }
    };
    let ordinal = ORDINAL.load(Ordering::Relaxed);
    let mut device: CUdevice = 0;
    let mut context: CUcontext = std::ptr::null_mut();
    let mut stream: CUstream = std::ptr::null_mut();
    let mut name = [0 as c_char; 256];
    // SAFETY: driver calls with valid out-pointers; the context is the
    // device's primary context, retained for the life of the process.
    unsafe {
        check("cuDeviceGet", (driver.cuDeviceGet)(&mut device, ordinal))?;
        check(
            "cuDevicePrimaryCtxRetain",
            (driver.cuDevicePrimaryCtxRetain)(&mut context, device),
        )?;
        check("cuCtxSetCurrent", (driver.cuCtxSetCurrent)(context))?;
        check(
            "cuStreamCreate",
            (driver.cuStreamCreate)(&mut stream, CU_STREAM_NON_BLOCKING),
        )?;
        check(
            "cuDeviceGetName",
            (driver.cuDeviceGetName)(name.as_mut_ptr(), name.len() as c_int - 1, device),
        )?;
    }
    CURRENT.set(true);
    let attribute = |which: c_int| -> Result<i32, RtError> {
        let mut value: c_int = 0;
        // SAFETY: a valid out-pointer and device.
        check("cuDeviceGetAttribute", unsafe {
            (driver.cuDeviceGetAttribute)(&mut value, which, device)
        })?;
        Ok(value)
    };
    let capability = (
        attribute(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR)?,
        attribute(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR)?,
    );
    let max_shared_optin = attribute(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN)?;
    // SAFETY: cuDeviceGetName wrote a NUL-terminated string (the buffer's
    // last byte is never written and is NUL).
    let name = unsafe { std::ffi::CStr::from_ptr(name.as_ptr()) }
        .to_string_lossy()
        .into_owned();
    let dependent_launch = capability.0 >= 9
        && driver.cuLaunchKernelEx.is_some()
        && std::env::var("PGPU_DEPENDENT_LAUNCH").map_or(true, |value| value != "0");
    let grid_capacity = if attribute(CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH)? != 0
        && driver.cuLaunchKernelEx.is_some()
    {
        let per_sm = attribute(CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR)?
            .min(crate::mgpu::GRID_THREADS_PER_SM as i32);
        i64::from(attribute(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)?) * i64::from(per_sm)
    } else {
        0
    };
    let block_capacity = if capability.0 >= 7 {
        i64::from(attribute(CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK)?.min(1024))
    } else {
        0
    };
    let multiprocessors = match std::env::var("PGPU_MULTIPROCESSORS") {
        Ok(text) => text
            .trim()
            .parse::<i64>()
            .ok()
            .filter(|count| *count >= 0)
            .ok_or_else(|| {
                RtError::Device(format!(
                    "PGPU_MULTIPROCESSORS must be a count of multiprocessors, not `{text}`"
                ))
            })?,
        Err(_) => i64::from(attribute(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)?),
    };
    let lockstep_width = i64::from(attribute(CU_DEVICE_ATTRIBUTE_WARP_SIZE)?);
    let _ = RUNTIME.set(Runtime {
        driver,
        ordinal,
        device,
        context,
        stream,
        name,
        capability,
        max_shared_optin,
        dependent_launch,
        grid_capacity,
        block_capacity,
        multiprocessors,
        lockstep_width,
    });
    RUNTIME
        .get()
        .ok_or_else(|| RtError::Internal("the CUDA runtime did not start".into()))
}

/// The stack each GPU thread gets once a module with block kernels is
/// loaded, unless `PGPU_BLOCK_STACK_BYTES` says otherwise: their device
/// functions may recurse (a Fork group's recursion runs inside the kernel),
/// and the driver's default (1 KiB) holds only a few frames. Quicksort of
/// 10^7 values in groups of 256 needed more than 16 KiB on the H200 (its
/// frame keeps the 512-byte stacks of its sequential sort); the driver
/// reserves this much for every thread the GPU can hold at once (64 KiB x
/// 2048 x 132 SMs = 17 GiB on an H200).
pub const DEFAULT_BLOCK_STACK_BYTES: usize = 64 * 1024;

/// Held while the stack limit is raised for block kernels (once).
static RAISING_BLOCK_STACK: Mutex<()> = Mutex::new(());
/// Whether it has been raised: a module with block kernels was loaded.
/// Read without the lock by error reports, which may come while it is held.
static BLOCK_STACK_RAISED: std::sync::atomic::AtomicBool =
    std::sync::atomic::AtomicBool::new(false);

/// Whether a module with block kernels was loaded (its stack raised).
fn block_stack_raised() -> bool {
    BLOCK_STACK_RAISED.load(Ordering::Relaxed)
}

/// The per-thread stack block kernels get: `PGPU_BLOCK_STACK_BYTES`, else
/// [`DEFAULT_BLOCK_STACK_BYTES`].
fn block_stack_bytes() -> Result<usize, RtError> {
    parse_block_stack_bytes(std::env::var("PGPU_BLOCK_STACK_BYTES").ok())
}

/// [`block_stack_bytes`] of the variable's value, if set.
fn parse_block_stack_bytes(value: Option<String>) -> Result<usize, RtError> {
    match value {
        None => Ok(DEFAULT_BLOCK_STACK_BYTES),
        Some(text) => text
            .trim()
            .parse::<usize>()
            .ok()
            .filter(|bytes| *bytes > 0)
            .ok_or_else(|| {
                RtError::Device(format!(
                    "PGPU_BLOCK_STACK_BYTES={text} is not a positive number of bytes"
                ))
            }),
    }
}

/// Records the site of this thread's next launch.
pub fn set_launch_site(site: Site) {
    NEXT_SITE.with(|next| *next.borrow_mut() = Some(site));
}

fn take_launch_site() -> Option<Site> {
    NEXT_SITE.with(|next| next.borrow_mut().take())
}

/// Remembers the kernel name and kind of a function handle.
pub fn name_function(function: CUfunction, name: &str, kind: KernelKind) {
    kernels().get_or_insert_with(HashMap::new).insert(
        function as usize,
        Kernel {
            name: name.into(),
            kind,
        },
    );
}

/// How `function` is launched (the default for unknown handles).
fn launch_kind(function: CUfunction) -> KernelKind {
    kernels()
        .as_ref()
        .and_then(|kernels| kernels.get(&(function as usize)))
        .map_or_else(KernelKind::default, |kernel| kernel.kind)
}

/// The completion of the last grid kernel launched (any stream): the next
/// one waits for it. Each grid kernel's barrier word lives in its module,
/// and two grid kernels that each hold part of the device while waiting
/// for the rest could deadlock, so grid kernels run one at a time.
static LAST_GRID_KERNEL: Mutex<usize> = Mutex::new(0);

fn function_name(function: CUfunction) -> String {
    kernels()
        .as_ref()
        .and_then(|kernels| kernels.get(&(function as usize)))
        .map_or_else(|| format!("{function:p}"), |kernel| kernel.name.clone())
}

/// The grid, block and cluster shape of a launch, as generated code
/// passes them (index values).
#[derive(Debug, Clone, Copy)]
pub struct Shape {
    pub grid: [isize; 3],
    pub block: [isize; 3],
    pub cluster: Option<[isize; 3]>,
    pub shared_bytes: i32,
}

impl Runtime {
    /// The stream for a handle that generated code passed: always the
    /// current stream (see the module header).
    pub fn stream_for(&self, _stream: *mut c_void) -> CUstream {
        self.current_stream()
    }

    /// The calling thread's current stream: the runtime stream, or the
    /// stream of the task it runs ([`tasks`]).
    /// Makes the current stream wait for the last grid kernel; the guard
    /// holds the event the caller records after its own grid kernel.
    fn after_last_grid_kernel(&self) -> Result<MutexGuard<'static, usize>, RtError> {
        let mut last = LAST_GRID_KERNEL
            .lock()
            .unwrap_or_else(|poison| poison.into_inner());
        if *last == 0 {
            *last = self.create_event(CU_EVENT_DISABLE_TIMING)? as usize;
        } else {
            // SAFETY: a live event and the current stream.
            let code = unsafe {
                (self.driver.cuStreamWaitEvent)(self.current_stream(), *last as CUevent, 0)
            };
            self.check("cuStreamWaitEvent", code)?;
        }
        Ok(last)
    }

    pub fn current_stream(&self) -> CUstream {
        tasks::current(self)
    }

    /// Raises the context's per-thread stack (`CU_LIMIT_STACK_SIZE`) to
    /// the block kernels' (`block_stack_bytes`) once, when the first
    /// module with block kernels is loaded; a larger limit stays. The
    /// driver reserves that much device memory for every thread the device
    /// can hold at once (multiprocessors x threads per multiprocessor x
    /// the stack: [`DEFAULT_BLOCK_STACK_BYTES`] says how much on an H200).
    pub fn raise_stack_for_block_kernels(&self) -> Result<(), RtError> {
        let _raising = RAISING_BLOCK_STACK
            .lock()
            .unwrap_or_else(|poison| poison.into_inner());
        if block_stack_raised() {
            return Ok(());
        }
        let wanted = block_stack_bytes()?;
        let mut current: usize = 0;
        // SAFETY: a valid out-pointer; the current context.
        let code = unsafe { (self.driver.cuCtxGetLimit)(&mut current, CU_LIMIT_STACK_SIZE) };
        self.check("cuCtxGetLimit", code)?;
        if current < wanted {
            // SAFETY: the current context; the driver checks the value.
            let code = unsafe { (self.driver.cuCtxSetLimit)(CU_LIMIT_STACK_SIZE, wanted) };
            self.check("cuCtxSetLimit", code).map_err(|error| {
                error.with_cuda_detail(&format!(
                    " (a stack of {wanted} bytes per thread for block kernels; \
                     set PGPU_BLOCK_STACK_BYTES to change it)"
                ))
            })?;
        }
        BLOCK_STACK_RAISED.store(true, Ordering::Relaxed);
        Ok(())
    }

    /// A new driver event: `flags` 0 for a timing event, or
    /// `CU_EVENT_DISABLE_TIMING`.
    pub fn create_event(&self, flags: c_uint) -> Result<CUevent, RtError> {
        let mut event: CUevent = std::ptr::null_mut();
        // SAFETY: a valid out-pointer.
        let code = unsafe { (self.driver.cuEventCreate)(&mut event, flags) };
        self.check("cuEventCreate", code)?;
        Ok(event)
    }

    /// Records `event` on `stream`.
    ///
    /// # Safety
    /// `event` is a live event of this context (not destroyed) and
    /// `stream` a live stream of it.
    pub unsafe fn record_event(&self, event: CUevent, stream: CUstream) -> Result<(), RtError> {
        // SAFETY: the caller's contract.
        let code = unsafe { (self.driver.cuEventRecord)(event, stream) };
        self.check("cuEventRecord", code)
    }

    /// Allocates `bytes` of device memory into `device`; while tasks run
    /// (see [`tasks`]) or once the start-up reserved the memory pool
    /// ([`warm_up`]), from the stream-ordered allocator on the current
    /// stream. Returns the driver's code.
    pub fn alloc_device(&self, device: &mut CUdeviceptr, bytes: usize) -> CUresult {
        crate::profile::host_call("alloc", || match self.driver.cuMemAllocAsync {
            // SAFETY: a valid out-pointer; the current stream.
            Some(alloc_async) if tasks::active() || warm_up::pooled() => unsafe {
                alloc_async(device, bytes, self.current_stream())
            },
            // SAFETY: a valid out-pointer.
            _ => unsafe { (self.driver.cuMemAlloc_v2)(device, bytes) },
        })
    }

    fn error(&self, call: &'static str, code: CUresult, waits: bool) -> RtError {
        let (name, mut message) = self.driver.error_text(code);
        if is_kernel_fault(code) && block_stack_raised() {
            // The likeliest fault of a recursive block kernel.
            message.push_str(&format!(
                " (block kernels recurse on a stack of {} bytes per thread, and a \
                 deeper recursion faults like this: if a block kernel faulted, raise \
                 PGPU_BLOCK_STACK_BYTES or compile with --no-block-groups)",
                block_stack_bytes().unwrap_or(DEFAULT_BLOCK_STACK_BYTES)
            ));
        }
        if (waits || is_kernel_fault(code))
            && let Some(report) = outstanding().report(&format!("{name}: {message}"))
        {
            return RtError::Kernel { report };
        }
        RtError::Cuda {
            call,
            name,
            message,
        }
    }

    /// Checks the result of a driver call that does not wait for kernels.
    pub fn check(&self, call: &'static str, code: CUresult) -> Result<(), RtError> {
        if code == CUDA_SUCCESS {
            Ok(())
        } else {
            Err(self.error(call, code, false))
        }
    }

    /// Checks the result of a call that waits for earlier work: an error is
    /// reported as a fault of the outstanding launches; success of a call
    /// that waits for `all` work clears them.
    pub fn check_wait(&self, call: &'static str, code: CUresult, all: bool) -> Result<(), RtError> {
        if code == CUDA_SUCCESS {
            if all {
                outstanding().synchronized();
            }
            Ok(())
        } else {
            Err(self.error(call, code, true))
        }
    }

    /// Waits for all device work.
    pub fn synchronize(&self) -> Result<(), RtError> {
        let start = std::time::Instant::now();
        // SAFETY: the runtime's stream.
        let code = unsafe { (self.driver.cuStreamSynchronize)(self.current_stream()) };
        crate::profile::synchronized(start.elapsed());
        self.check_wait("cuStreamSynchronize", code, true)
    }

    /// Waits for the current stream's work before a copy into host memory
    /// (whose wait it is: counted as the download's, not as a
    /// synchronization).
    pub fn wait_before_download(&self) -> Result<(), RtError> {
        let start = std::time::Instant::now();
        // SAFETY: the current stream.
        let code = unsafe { (self.driver.cuStreamSynchronize)(self.current_stream()) };
        crate::profile::waited_in("download", start.elapsed(), false);
        self.check_wait("cuStreamSynchronize", code, false)
    }

    /// Launches `function` with `params` (the kernel's argument pointers)
    /// on the runtime stream, at the site recorded by `set_launch_site`.
    /// A launch with an empty grid launches nothing.
    ///
    /// # Safety
    /// `function` is a kernel of a loaded module; `params` and `extra` are
    /// as `cuLaunchKernel` wants them for it.
    pub unsafe fn launch(
        &self,
        function: CUfunction,
        shape: Shape,
        params: *mut *mut c_void,
        extra: *mut *mut c_void,
    ) -> Result<(), RtError> {
        let site = take_launch_site().unwrap_or_else(|| Site::unknown(&function_name(function)));
        let refuse = |message: String| RtError::Kernel {
            report: site.report(&message),
        };
        let dim = |values: [isize; 3]| -> Option<[c_uint; 3]> {
            let mut out = [0; 3];
            for (o, v) in out.iter_mut().zip(values) {
                *o = c_uint::try_from(v).ok()?;
            }
            Some(out)
        };
        let bad_shape = || {
            refuse(format!(
                "invalid launch shape: grid {:?}, block {:?}, cluster {:?}, {} bytes of shared memory",
                shape.grid, shape.block, shape.cluster, shape.shared_bytes
            ))
        };
        let (Some(grid), Some(block)) = (dim(shape.grid), dim(shape.block)) else {
            return Err(bad_shape());
        };
        let cluster = match shape.cluster.map(dim) {
            None => None,
            Some(Some(cluster)) => Some(cluster),
            Some(None) => return Err(bad_shape()),
        };
        let shared = c_uint::try_from(shape.shared_bytes).map_err(|_| bad_shape())?;
        if grid.contains(&0) {
            return Ok(());
        }
        let failed = |code: CUresult| -> RtError {
            let (name, message) = self.driver.error_text(code);
            let message = format!("{name}: {message}");
            // The stream already failed: an earlier kernel's fault.
            if is_kernel_fault(code)
                && let Some(report) = outstanding().report(&message)
            {
                return RtError::Kernel { report };
            }
            refuse(message)
        };
        // Above 48 KiB, dynamic shared memory needs the kernel's opt-in.
        if shared > 48 * 1024 {
            if shape.shared_bytes > self.max_shared_optin {
                return Err(refuse(format!(
                    "the launch asks for {shared} bytes of shared memory; the device allows {}",
                    self.max_shared_optin
                )));
            }
            // SAFETY: a kernel handle.
            let code = unsafe {
                (self.driver.cuFuncSetAttribute)(
                    function,
                    CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                    shape.shared_bytes,
                )
            };
            if code != CUDA_SUCCESS {
                return Err(failed(code));
            }
        }
        crate::device::await_start_up_before_launch();
        let KernelKind {
            waits,
            cooperative,
            sm_cycles,
        } = launch_kind(function);
        let timing = if crate::profile::times_kernels() {
            warm_up::warm_up_this_thread(self)?;
            Some(kernel_times::start(self, sm_cycles)?)
        } else {
            None
        };
        // A launch through cuLaunchKernelEx with one attribute.
        let launch_with = |attribute: CUlaunchAttribute| -> Result<CUresult, RtError> {
            let Some(launch_ex) = self.driver.cuLaunchKernelEx else {
                // Only clusters get here without it (`dependent_launch` needs it).
                return Err(refuse(
                    "thread-block clusters need cuLaunchKernelEx, which this driver lacks".into(),
                ));
            };
            let mut attribute = attribute;
            let config = CUlaunchConfig {
                grid_dim_x: grid[0],
                grid_dim_y: grid[1],
                grid_dim_z: grid[2],
                block_dim_x: block[0],
                block_dim_y: block[1],
                block_dim_z: block[2],
                shared_mem_bytes: shared,
                stream: self.current_stream(),
                attrs: &mut attribute,
                num_attrs: 1,
            };
            // SAFETY: the caller's contract; the config lives across the call.
            Ok(unsafe { launch_ex(&config, function, params, extra) })
        };
        // A grid kernel starts after the last one has completed.
        let mut last_grid_kernel = if cooperative {
            Some(self.after_last_grid_kernel()?)
        } else {
            None
        };
        // A launch attribute whose value is the flag 1.
        let flag = |id: c_uint| {
            let mut value = [0; 16];
            value[0] = 1;
            CUlaunchAttribute {
                id,
                pad: [0; 4],
                value,
            }
        };
        let code = crate::profile::host_call("launch", || match cluster {
            _ if cooperative => launch_with(flag(CU_LAUNCH_ATTRIBUTE_COOPERATIVE)),
            None | Some([1, 1, 1]) if self.dependent_launch && waits => {
                launch_with(flag(CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION))
            }
            None | Some([1, 1, 1]) => {
                // SAFETY: the caller's contract.
                Ok(unsafe {
                    (self.driver.cuLaunchKernel)(
                        function,
                        grid[0],
                        grid[1],
                        grid[2],
                        block[0],
                        block[1],
                        block[2],
                        shared,
                        self.current_stream(),
                        params,
                        extra,
                    )
                })
            }
            Some(cluster) => {
                let mut value = [0; 16];
                value[..3].copy_from_slice(&cluster);
                launch_with(CUlaunchAttribute {
                    id: CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION,
                    pad: [0; 4],
                    value,
                })
            }
        })?;
        if code != CUDA_SUCCESS {
            return Err(failed(code));
        }
        if let Some(last) = last_grid_kernel.as_mut() {
            // SAFETY: the event of `after_last_grid_kernel`, the current stream.
            let code =
                unsafe { (self.driver.cuEventRecord)(**last as CUevent, self.current_stream()) };
            self.check("cuEventRecord", code)?;
        }
        drop(last_grid_kernel);
        let cycles = match timing {
            Some(start) => {
                let threads = |dims: [c_uint; 3]| dims.iter().map(|&d| u64::from(d)).product();
                let block_threads: u64 = threads(block);
                let shape = (threads(grid) * block_threads, block_threads);
                kernel_times::finish(self, &site.kernel, shape, start)?
            }
            None => None,
        };
        outstanding().launched(site);
        crate::profile::launched();
        if let Some(cycles) = cycles {
            cycles.collect(self)?;
        }
        Ok(())
    }
}

/// Waits for the device if it has been started (the cpu device, or a
/// program that has not used the GPU yet, has nothing to wait for).
pub fn synchronize_if_started() -> Result<(), RtError> {
    match started() {
        Some(_) => runtime()?.synchronize(),
        None => Ok(()),
    }
}

/// The CUDA device as the backend of [`crate::mirror`].
pub struct CudaBackend(pub &'static Runtime);

impl Backend for CudaBackend {
    fn alloc(&mut self, bytes: usize) -> Result<u64, RtError> {
        let mut device: CUdeviceptr = 0;
        let code = self.0.alloc_device(&mut device, bytes);
        self.0.check("cuMemAlloc", code)?;
        Ok(device)
    }

    fn free(&mut self, device: u64) -> Result<(), RtError> {
        // Memory of the stream-ordered allocator is freed without an
        // implicit wait: wait for every stream first (frees are rare: the
        // cache is only emptied when the device is full).
        // SAFETY: the current context.
        let code = unsafe { (self.0.driver.cuCtxSynchronize)() };
        self.0.check_wait("cuCtxSynchronize", code, true)?;
        // SAFETY: memory of `alloc`, no longer used by queued work.
        let code = unsafe { (self.0.driver.cuMemFree_v2)(device) };
        self.0.check("cuMemFree_v2", code)
    }

    // The mirrors' contract (`Backend::upload`): `bytes` readable bytes at
    // `host`.
    #[allow(clippy::not_unsafe_ptr_arg_deref)]
    fn upload(&mut self, device: u64, host: *const u8, bytes: usize) -> Result<(), RtError> {
        crate::profile::uploaded(bytes);
        let stream = self.0.current_stream();
        // SAFETY: `bytes` readable host bytes and a device block at least
        // as long (the mirror's contract). From pageable memory the call
        // returns once the bytes are staged, so the host may change them.
        // (Pinned staging buffers of our own were measured on the H200
        // machine, 2026-11-24: a 10 MB upload was no faster; removed.)
        let code =
            unsafe { (self.0.driver.cuMemcpyHtoDAsync_v2)(device, host.cast(), bytes, stream) };
        self.0.check("cuMemcpyHtoDAsync_v2", code)
    }

    fn zero(&mut self, device: u64, bytes: usize) -> Result<(), RtError> {
        // SAFETY: a device block at least `bytes` long (the mirror's
        // contract), on the current stream like uploads.
        let code =
            unsafe { (self.0.driver.cuMemsetD8Async)(device, 0, bytes, self.0.current_stream()) };
        self.0.check("cuMemsetD8Async", code)
    }

    fn download(&mut self, host: *mut u8, device: u64, bytes: usize) -> Result<(), RtError> {
        // Into pageable memory the copy returns when it is done, after the
        // stream's earlier work: the host waits in it (the synchronization
        // after it finds the stream idle).
        let started = std::time::Instant::now();
        // SAFETY: as `upload`, writable host bytes; the copy is ordered
        // after every earlier launch on the stream.
        let code = unsafe {
            (self.0.driver.cuMemcpyDtoHAsync_v2)(
                host.cast(),
                device,
                bytes,
                self.0.current_stream(),
            )
        };
        crate::profile::downloaded(bytes);
        crate::profile::waited_in("download", started.elapsed(), false);
        self.0.check_wait("cuMemcpyDtoHAsync_v2", code, false)?;
        self.0.synchronize()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_block_stack_is_a_positive_byte_count() {
        assert_eq!(
            parse_block_stack_bytes(None).ok(),
            Some(DEFAULT_BLOCK_STACK_BYTES)
        );
        assert_eq!(
            parse_block_stack_bytes(Some(" 65536 ".into())).ok(),
            Some(65536)
        );
        for bad in ["0", "-1", "lots", ""] {
            let message = match parse_block_stack_bytes(Some(bad.into())) {
                Ok(bytes) => format!("accepted {bytes}"),
                Err(error) => error.to_string(),
            };
            assert!(
                message.contains(&format!(
                    "PGPU_BLOCK_STACK_BYTES={bad} is not a positive number of bytes"
                )),
                "{message}"
            );
        }
    }
}
