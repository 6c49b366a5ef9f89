//! The MLIR GPU runtime ABI (`mgpu*`) on the CUDA device, and the launch
//! sites of kernel error reports.
//!
//! Upstream's `gpu-to-llvm` lowering and the LLVM translation of
//! `gpu.binary`/`gpu.launch_func` (LLVM 22, `SelectObjectAttr.cpp`) emit
//! calls to these functions, which upstream implements in
//! `mlir/lib/ExecutionEngine/CudaRuntimeWrappers.cpp`; the signatures here
//! are those (checked against the declarations `mlir-translate-22` emits):
//!
//! | function | note |
//! |---|---|
//! | `mgpuModuleLoad(void *data, size_t size) -> module` | `gpu.binary` in `bin`/`fatbin` (or PTX text with a size) |
//! | `mgpuModuleLoadJIT(void *data, int optLevel) -> module` | `gpu.binary` in `isa` format: NUL-terminated PTX |
//! | `mgpuModuleUnload(module)` | |
//! | `mgpuModuleGetFunction(module, const char *name) -> function` | |
//! | `mgpuLaunchKernel(function, intptr_t gridX, gridY, gridZ, blockX, blockY, blockZ, int32_t smem, stream, void **params, void **extra, size_t paramsCount)` | |
//! | `mgpuLaunchClusterKernel(function, intptr_t clusterX, clusterY, clusterZ, gridX, ..., blockZ, int32_t smem, stream, params, extra, size_t paramsCount)` | |
//! | `mgpuStreamCreate() -> stream`, `mgpuStreamDestroy(stream)`, `mgpuStreamSynchronize(stream)`, `mgpuStreamWaitEvent(stream, event)` | the current stream |
//! | `mgpuEventCreate() -> event`, `mgpuEventDestroy(event)`, `mgpuEventSynchronize(event)`, `mgpuEventRecord(event, stream)` | |
//! | `mgpuMemAlloc(uint64_t size, stream, bool isHostShared) -> ptr`, `mgpuMemFree(ptr, stream)` | `isHostShared` (managed memory) is refused |
//! | `mgpuMemcpy(dst, src, size_t size, stream)`, `mgpuMemset32(dst, uint32 value, size_t count, stream)`, `mgpuMemset16(dst, uint16 value, size_t count, stream)` | |
//! | `mgpuMemHostRegisterMemRef(int64_t rank, descriptor *, int64_t elementSize)`, `mgpuMemHostUnregisterMemRef(...)`, `mgpuMemHostRegister(ptr, uint64_t size)`, `mgpuMemHostUnregister(ptr)` | `gpu.host_register` |
//! | `mgpuSetDefaultDevice(int32_t device)` | before the first device use |
//!
//! The cuSPARSE/cuSPARSELt wrappers (`mgpuSpMV` ...) and the Hopper TMA
//! helpers are not provided: pgpu does not generate those ops.
//!
//! **Lazy modules.** LLVM 22 loads every `gpu.binary` in a global
//! constructor (priority 123, before `main`) and unloads it in a global
//! destructor; the launch code reads the module from a global. So
//! `mgpuModuleLoad*` must not touch the driver: they only record the image
//! (pointer, and size when given) and return a handle of this runtime, and
//! the module is loaded (`cuModuleLoadDataEx`, with the JIT error log in
//! the error) on the first `mgpuModuleGetFunction`, or by
//! `pgpu_rt_init` when the program runs on the cuda device (see
//! [`crate::device`]). A cuda-target executable thus starts and runs on a
//! machine without a GPU. Loading the same image again returns the same
//! handle; loaded modules and their functions are cached and stay loaded
//! until the process exits (`mgpuModuleUnload` runs from a destructor
//! during `exit`, possibly after a kernel fault, so it does nothing).
//!
//! An image with a size that is not a cubin (ELF) or fatbin is PTX text
//! that need not end in NUL: it is copied with a terminating NUL. The
//! optimization level of `mgpuModuleLoadJIT` is the LLVM level of the PTX
//! compilation (2 by default upstream); the PTX JIT's own levels are 0-4
//! with 4 its default, so levels 0 and 1 are passed on and higher ones
//! keep the JIT's default.
//!
//! **Streams.** Every stream handle is the current stream of
//! [`crate::cuda`] (the one runtime stream, or inside a task the task's:
//! its header says why); `mgpuStreamDestroy` of it does nothing and
//! `mgpuStreamSynchronize` waits for all work of the current stream.
//! Events are real driver events (without timing).
//!
//! **Launch sites.** Generated code calls
//! `pgpu_rt_launch_site(kernel, file, line, col)` right before a launch;
//! a launch error, or a kernel fault found at a later synchronization,
//! prints `FILE:LINE:COL: error: in kernel NAME: CUDA_ERROR_...: text`
//! (see [`crate::cuda::sites`]) and exits with status 1. A launch with no
//! site is reported with the kernel's name and `<unknown>:0:0`.
//!
//! Every function here reports errors and exits (status 1); none returns
//! an error value to the caller, as upstream's wrappers only print.

use crate::cuda::{self, Runtime, Shape, driver::*, sites::Site};
use crate::error::{RtError, guard};
use std::collections::HashMap;
use std::ffi::{CStr, c_char, c_int, c_void};
use std::sync::{Mutex, MutexGuard};

/// A recorded `gpu.binary` image.
struct Module {
    data: usize,
    /// The image's size (`mgpuModuleLoad`); None: NUL-terminated PTX.
    size: Option<usize>,
    /// The optimization level of `mgpuModuleLoadJIT`.
    jit_level: Option<i32>,
    loaded: Mutex<Loaded>,
}

#[derive(Default)]
struct Loaded {
    /// The `CUmodule` (0: not loaded yet).
    module: usize,
    /// Kernel name -> `CUfunction`.
    functions: HashMap<Vec<u8>, usize>,
    /// How the module's kernels are launched and timed: whether it
    /// defines [`GRID_DEPENDENCY_MARKER`] (its kernels start with
    /// `griddepcontrol.wait`) and [`COOPERATIVE_LAUNCH_MARKER`] (they have
    /// grid barriers), and the address of its [`SM_CYCLES_TABLE`] if it
    /// has one of the right size.
    kind: cuda::KernelKind,
}

/// The global that `pgpu-wait-grid-dependencies` adds to a module whose
/// kernels wait for their grid dependencies.
pub const GRID_DEPENDENCY_MARKER: &str = "pgpu_waits_for_grid_dependencies";

/// The global that `pgpu-define-grid-barrier` adds to a module whose
/// kernels have grid-wide barriers: the runtime launches them cooperatively
/// (all blocks co-resident), one grid kernel at a time.
pub const COOPERATIVE_LAUNCH_MARKER: &str = "pgpu_cooperative_launch";

/// The global that `pgpu-define-range-barrier` adds to a module whose
/// kernels are block kernels (`pgpu.spawn block`): their device functions
/// may recurse, so loading the module raises the threads' stack limit
/// (`Runtime::raise_stack_for_block_kernels`).
pub const BLOCK_KERNEL_MARKER: &str = "pgpu_block_kernels";

/// The table that `pgpu-count-sm-cycles` adds to a module whose kernels
/// record each multiprocessor's first and last cycle: [`SM_CYCLES_SLOTS`]
/// starts, then as many ends (u64 each); slot `sm * SM_CYCLES_WAYS + way`
/// of a half is multiprocessor `sm`'s (`%smid` modulo the number of
/// multiprocessors) for the blocks whose index is `way` modulo the ways.
pub const SM_CYCLES_TABLE: &str = "pgpu_sm_cycles";

/// Slots per half of [`SM_CYCLES_TABLE`].
pub const SM_CYCLES_SLOTS: usize = 2048;

/// Slots per multiprocessor in each half of [`SM_CYCLES_TABLE`].
pub const SM_CYCLES_WAYS: usize = 8;

/// Threads per multiprocessor that a grid kernel is compiled to fit
/// (`nvvm.minctasm` = this / block size caps its registers), so that
/// `pgpu_rt_grid_capacity` is the multiprocessor count times this.
pub const GRID_THREADS_PER_SM: u32 = 1024;

/// Every recorded image, in order; never freed.
static MODULES: Mutex<Vec<&'static Module>> = Mutex::new(Vec::new());

fn modules() -> MutexGuard<'static, Vec<&'static Module>> {
    MODULES.lock().unwrap_or_else(|poison| poison.into_inner())
}

/// ELF (cubin) and fatbin magic numbers.
const ELF_MAGIC: [u8; 4] = [0x7f, b'E', b'L', b'F'];
const FATBIN_MAGIC: [u8; 4] = 0xBA55_ED50u32.to_le_bytes();

fn record(data: *mut c_void, size: Option<usize>, jit_level: Option<i32>) -> *mut c_void {
    let mut modules = modules();
    let module = match modules.iter().find(|m| m.data == data as usize) {
        Some(module) => *module,
        None => {
            let module: &'static Module = Box::leak(Box::new(Module {
                data: data as usize,
                size,
                jit_level,
                loaded: Mutex::new(Loaded::default()),
            }));
            modules.push(module);
            module
        }
    };
    module as *const Module as *mut c_void
}

fn module_of(handle: *mut c_void) -> Result<&'static Module, RtError> {
    modules()
        .iter()
        .find(|m| std::ptr::eq(**m, handle as *const Module))
        .copied()
        .ok_or_else(|| {
            RtError::Device(format!(
                "{handle:p} is not a module of mgpuModuleLoad or mgpuModuleLoadJIT"
            ))
        })
}

/// Whether the program recorded any kernel module.
pub fn has_modules() -> bool {
    !modules().is_empty()
}

/// Loads every recorded module (on the cuda device).
pub fn load_all() -> Result<(), RtError> {
    let runtime = cuda::runtime()?;
    let all: Vec<&'static Module> = modules().clone();
    for module in all {
        let mut loaded = module.lock();
        module.load(runtime, &mut loaded)?;
    }
    Ok(())
}

impl Module {
    fn lock(&self) -> MutexGuard<'_, Loaded> {
        self.loaded
            .lock()
            .unwrap_or_else(|poison| poison.into_inner())
    }

    /// The driver module, loaded on first use.
    fn load(&self, runtime: &Runtime, loaded: &mut Loaded) -> Result<CUmodule, RtError> {
        if loaded.module != 0 {
            return Ok(loaded.module as CUmodule);
        }
        if self.data == 0 {
            return Err(RtError::Device("mgpuModuleLoad: null module image".into()));
        }
        let mut text = Vec::new();
        let image: *const c_void = match self.size {
            Some(size) => {
                // SAFETY: mgpuModuleLoad's contract: `size` readable bytes.
                let bytes = unsafe { std::slice::from_raw_parts(self.data as *const u8, size) };
                if bytes.starts_with(&ELF_MAGIC) || bytes.starts_with(&FATBIN_MAGIC) {
                    self.data as *const c_void
                } else {
                    let end = bytes.iter().rposition(|&b| b != 0).map_or(0, |i| i + 1);
                    text.extend_from_slice(&bytes[..end]);
                    text.push(0);
                    text.as_ptr().cast()
                }
            }
            None => self.data as *const c_void,
        };
        let mut log = vec![0u8; 16 * 1024];
        let mut options = vec![CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES];
        let mut values: Vec<*mut c_void> = vec![log.as_mut_ptr().cast(), log.len() as *mut c_void];
        if let Some(level @ 0..=1) = self.jit_level {
            options.push(CU_JIT_OPTIMIZATION_LEVEL);
            values.push(level as usize as *mut c_void);
        }
        let mut module: CUmodule = std::ptr::null_mut();
        // SAFETY: a module image (see above) and option arrays of equal
        // length; the log buffer outlives the call.
        let code = crate::profile::host_call("module-load", || unsafe {
            (runtime.driver.cuModuleLoadDataEx)(
                &mut module,
                image,
                options.len() as u32,
                options.as_mut_ptr(),
                values.as_mut_ptr(),
            )
        });
        if code != CUDA_SUCCESS {
            let end = log.iter().position(|&b| b == 0).unwrap_or(log.len());
            let log = String::from_utf8_lossy(&log[..end]).trim().to_string();
            return Err(match runtime.check("cuModuleLoadDataEx", code) {
                Err(error) if !log.is_empty() => error.with_cuda_detail(&format!(":\n{log}")),
                Err(error) => error,
                Ok(()) => RtError::Internal("cuModuleLoadDataEx".into()),
            });
        }
        loaded.module = module as usize;
        let global = |marker: &str| {
            let marker = format!("{marker}\0");
            let (mut address, mut bytes): (CUdeviceptr, usize) = (0, 0);
            // SAFETY: a loaded module, valid out-pointers, a NUL-terminated
            // name; a missing symbol is an ordinary (not sticky) error.
            let code = unsafe {
                (runtime.driver.cuModuleGetGlobal_v2)(
                    &mut address,
                    &mut bytes,
                    module,
                    marker.as_ptr().cast(),
                )
            };
            (code == CUDA_SUCCESS).then_some((address, bytes))
        };
        let defines = |marker: &str| global(marker).is_some();
        loaded.kind = cuda::KernelKind {
            waits: defines(GRID_DEPENDENCY_MARKER),
            cooperative: defines(COOPERATIVE_LAUNCH_MARKER),
            sm_cycles: global(SM_CYCLES_TABLE)
                .filter(|(_, bytes)| *bytes == 2 * SM_CYCLES_SLOTS * 8)
                .map(|(address, _)| address),
        };
        if defines(BLOCK_KERNEL_MARKER) {
            runtime.raise_stack_for_block_kernels()?;
        }
        Ok(module)
    }

    /// The kernel `name` of this module.
    fn function(&self, runtime: &Runtime, name: &CStr) -> Result<CUfunction, RtError> {
        let mut loaded = self.lock();
        if let Some(&function) = loaded.functions.get(name.to_bytes()) {
            return Ok(function as CUfunction);
        }
        let module = self.load(runtime, &mut loaded)?;
        let mut function: CUfunction = std::ptr::null_mut();
        // SAFETY: a loaded module and a NUL-terminated name.
        let code =
            unsafe { (runtime.driver.cuModuleGetFunction)(&mut function, module, name.as_ptr()) };
        let kernel = name.to_string_lossy();
        runtime
            .check("cuModuleGetFunction", code)
            .map_err(|error| error.with_cuda_detail(&format!(" (kernel {kernel})")))?;
        loaded
            .functions
            .insert(name.to_bytes().to_vec(), function as usize);
        cuda::name_function(function, &kernel, loaded.kind);
        Ok(function)
    }
}

/// The CUDA runtime, or an error naming `what` on the cpu device.
fn cuda_for(what: &str) -> Result<&'static Runtime, RtError> {
    crate::device::require_cuda(|| what.to_string())?;
    cuda::runtime()
}

/// # Safety
/// `text` is null or a NUL-terminated string.
unsafe fn text(text: *const c_char, missing: &str) -> String {
    if text.is_null() {
        missing.into()
    } else {
        // SAFETY: the caller's contract.
        unsafe { CStr::from_ptr(text) }
            .to_string_lossy()
            .into_owned()
    }
}

// ------------------------------------------------------------------ modules

/// Records a module image of `size` bytes (cubin, fatbin or PTX); loaded
/// on first use.
///
/// # Safety
/// `data` points at `size` bytes that live as long as the program.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn mgpuModuleLoad(data: *mut c_void, size: usize) -> *mut c_void {
    guard(|| Ok(record(data, Some(size), None)))
}

/// Records a NUL-terminated PTX module; loaded (JIT-compiled) on first use.
///
/// # Safety
/// `data` is a NUL-terminated string that lives as long as the program.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn mgpuModuleLoadJIT(data: *mut c_void, opt_level: c_int) -> *mut c_void {
    guard(|| Ok(record(data, None, Some(opt_level))))
}

/// Does nothing: modules stay loaded until the process exits.
#[unsafe(no_mangle)]
pub extern "C" fn mgpuModuleUnload(_module: *mut c_void) {}

/// The kernel `name` of `module`, loading the module if needed.
///
/// # Safety
/// `name` is a NUL-terminated string.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn mgpuModuleGetFunction(
    module: *mut c_void,
    name: *const c_char,
) -> *mut c_void {
    guard(|| {
        if name.is_null() {
            return Err(RtError::Device(
                "mgpuModuleGetFunction: null kernel name".into(),
            ));
        }
        // SAFETY: the caller's contract.
        let name = unsafe { CStr::from_ptr(name) };
        let runtime = cuda_for(&format!("kernel {}", name.to_string_lossy()))?;
        module_of(module)?.function(runtime, name)
    })
}

// ------------------------------------------------------------------ launches

/// Records the source site of this thread's next kernel launch.
///
/// # Safety
/// `kernel` and `file` are null or NUL-terminated strings.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn pgpu_rt_launch_site(
    kernel: *const c_char,
    file: *const c_char,
    line: i32,
    col: i32,
) {
    guard(|| {
        // SAFETY: the caller's contract.
        let (kernel, file) = unsafe { (text(kernel, "<unknown>"), text(file, "<unknown>")) };
        cuda::set_launch_site(Site {
            kernel,
            file,
            line,
            col,
        });
        Ok(())
    })
}

/// Launches `function` on the runtime stream.
///
/// # Safety
/// `function` comes from `mgpuModuleGetFunction`; `params` holds one
/// pointer per kernel parameter, each to a value of the parameter's type.
#[unsafe(no_mangle)]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn mgpuLaunchKernel(
    function: *mut c_void,
    grid_x: isize,
    grid_y: isize,
    grid_z: isize,
    block_x: isize,
    block_y: isize,
    block_z: isize,
    shared_bytes: i32,
    _stream: *mut c_void,
    params: *mut *mut c_void,
    extra: *mut *mut c_void,
    _params_count: usize,
) {
    guard(|| {
        let runtime = cuda_for("mgpuLaunchKernel")?;
        let shape = Shape {
            grid: [grid_x, grid_y, grid_z],
            block: [block_x, block_y, block_z],
            cluster: None,
            shared_bytes,
        };
        // SAFETY: the caller's contract.
        unsafe { runtime.launch(function, shape, params, extra) }
    })
}

/// Launches `function` in thread-block clusters on the runtime stream.
///
/// # Safety
/// As `mgpuLaunchKernel`.
#[unsafe(no_mangle)]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn mgpuLaunchClusterKernel(
    function: *mut c_void,
    cluster_x: isize,
    cluster_y: isize,
    cluster_z: isize,
    grid_x: isize,
    grid_y: isize,
    grid_z: isize,
    block_x: isize,
    block_y: isize,
    block_z: isize,
    shared_bytes: i32,
    _stream: *mut c_void,
    params: *mut *mut c_void,
    extra: *mut *mut c_void,
    _params_count: usize,
) {
    guard(|| {
        let runtime = cuda_for("mgpuLaunchClusterKernel")?;
        let shape = Shape {
            grid: [grid_x, grid_y, grid_z],
            block: [block_x, block_y, block_z],
            cluster: Some([cluster_x, cluster_y, cluster_z]),
            shared_bytes,
        };
        // SAFETY: the caller's contract.
        unsafe { runtime.launch(function, shape, params, extra) }
    })
}

// ------------------------------------------------------------------ streams and events

/// The current stream (the runtime stream, or a task's).
#[unsafe(no_mangle)]
pub extern "C" fn mgpuStreamCreate() -> *mut c_void {
    guard(|| Ok(cuda_for("mgpuStreamCreate")?.current_stream()))
}

/// Does nothing: the runtime stream lives as long as the process.
#[unsafe(no_mangle)]
pub extern "C" fn mgpuStreamDestroy(_stream: *mut c_void) {}

/// Waits for all work of the current stream (every stream handle is it).
#[unsafe(no_mangle)]
pub extern "C" fn mgpuStreamSynchronize(_stream: *mut c_void) {
    guard(|| cuda_for("mgpuStreamSynchronize")?.synchronize())
}

/// Makes later work on the stream wait for `event`.
///
/// # Safety
/// `event` comes from `mgpuEventCreate`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn mgpuStreamWaitEvent(stream: *mut c_void, event: *mut c_void) {
    guard(|| {
        let runtime = cuda_for("mgpuStreamWaitEvent")?;
        // SAFETY: an event of mgpuEventCreate.
        let code =
            unsafe { (runtime.driver.cuStreamWaitEvent)(runtime.stream_for(stream), event, 0) };
        runtime.check("cuStreamWaitEvent", code)
    })
}

/// A new event (without timing).
#[unsafe(no_mangle)]
pub extern "C" fn mgpuEventCreate() -> *mut c_void {
    guard(|| cuda_for("mgpuEventCreate")?.create_event(CU_EVENT_DISABLE_TIMING))
}

/// Destroys an event of `mgpuEventCreate`.
///
/// # Safety
/// `event` comes from `mgpuEventCreate`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn mgpuEventDestroy(event: *mut c_void) {
    guard(|| {
        let runtime = cuda_for("mgpuEventDestroy")?;
        // SAFETY: an event of mgpuEventCreate.
        let code = unsafe { (runtime.driver.cuEventDestroy_v2)(event) };
        runtime.check("cuEventDestroy_v2", code)
    })
}

/// Waits for the work recorded before `event`.
///
/// # Safety
/// `event` comes from `mgpuEventCreate`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn mgpuEventSynchronize(event: *mut c_void) {
    guard(|| {
        let runtime = cuda_for("mgpuEventSynchronize")?;
        // SAFETY: an event of mgpuEventCreate.
        let code = unsafe { (runtime.driver.cuEventSynchronize)(event) };
        runtime.check_wait("cuEventSynchronize", code, false)
    })
}

/// Records `event` on the stream.
///
/// # Safety
/// `event` comes from `mgpuEventCreate`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn mgpuEventRecord(event: *mut c_void, stream: *mut c_void) {
    guard(|| {
        let runtime = cuda_for("mgpuEventRecord")?;
        // SAFETY: an event of mgpuEventCreate; the current stream.
        unsafe { runtime.record_event(event, runtime.stream_for(stream)) }
    })
}

// ------------------------------------------------------------------ memory

/// `size` bytes of device memory (null for 0). `is_host_shared` (LLVM
/// passes an `i8`; only its low byte is read) would need managed memory,
/// which pgpu never uses: an error.
#[unsafe(no_mangle)]
pub extern "C" fn mgpuMemAlloc(
    size: u64,
    _stream: *mut c_void,
    is_host_shared: u32,
) -> *mut c_void {
    guard(|| {
        let runtime = cuda_for("mgpuMemAlloc")?;
        if is_host_shared & 0xff != 0 {
            return Err(RtError::Device(
                "mgpuMemAlloc: host-shared (managed) memory is not supported".into(),
            ));
        }
        if size == 0 {
            return Ok(std::ptr::null_mut());
        }
        let bytes = usize::try_from(size).map_err(|_| RtError::OutOfMemory {
            bytes: i64::try_from(size).unwrap_or(i64::MAX),
        })?;
        let mut scratch = scratch();
        let device = match scratch.free.take(bytes) {
            Some(device) => device,
            None => {
                let mut device: CUdeviceptr = 0;
                let mut code = runtime.alloc_device(&mut device, bytes);
                if code != CUDA_SUCCESS && !scratch.free.is_empty() {
                    scratch.trim(runtime)?;
                    code = runtime.alloc_device(&mut device, bytes);
                }
                runtime.check("cuMemAlloc", code)?;
                device
            }
        };
        scratch.live.insert(device, bytes);
        crate::profile::taken(bytes);
        Ok(device as usize as *mut c_void)
    })
}

/// Device memory of `mgpuMemAlloc`: live blocks by address, and freed ones
/// by length for reuse. Generated collectives allocate their scratch at
/// every call; `cuMemFree` would wait for the device each time, and every
/// launch and copy goes to the current stream, so a block freed by the
/// host and handed out again is used in stream order (blocks freed inside
/// tasks, which have streams of their own, wait for the tasks' join).
#[derive(Default)]
struct Scratch {
    live: HashMap<CUdeviceptr, usize>,
    free: crate::mirror::DeviceCache,
}

/// See [`crate::mirror::DeviceCache::set_deferring`].
pub fn set_deferring(on: bool) {
    scratch().free.set_deferring(on);
}

impl Scratch {
    /// Returns the cached blocks to the driver.
    fn trim(&mut self, runtime: &Runtime) -> Result<(), RtError> {
        // Memory of the stream-ordered allocator is freed without an
        // implicit wait: wait for every stream first.
        // SAFETY: the current context.
        let code = unsafe { (runtime.driver.cuCtxSynchronize)() };
        runtime.check_wait("cuCtxSynchronize", code, true)?;
        for device in self.free.drain() {
            // SAFETY: device memory no longer handed out nor used.
            let code = unsafe { (runtime.driver.cuMemFree_v2)(device) };
            runtime.check("cuMemFree_v2", code)?;
        }
        Ok(())
    }
}

fn scratch() -> MutexGuard<'static, Scratch> {
    static SCRATCH: std::sync::OnceLock<Mutex<Scratch>> = std::sync::OnceLock::new();
    SCRATCH
        .get_or_init(|| Mutex::new(Scratch::default()))
        .lock()
        .unwrap_or_else(|poison| poison.into_inner())
}

/// Frees memory of `mgpuMemAlloc` (null is ignored).
///
/// # Safety
/// `ptr` is null or memory of `mgpuMemAlloc`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn mgpuMemFree(ptr: *mut c_void, _stream: *mut c_void) {
    guard(|| {
        if ptr.is_null() {
            return Ok(());
        }
        cuda_for("mgpuMemFree")?;
        let device = ptr as usize as CUdeviceptr;
        let mut scratch = scratch();
        let Some(bytes) = scratch.live.remove(&device) else {
            return Err(RtError::Device(format!(
                "mgpuMemFree: {ptr:?} is not memory of mgpuMemAlloc"
            )));
        };
        crate::profile::given_back(bytes);
        scratch.free.put(bytes, device);
        Ok(())
    })
}

/// Copies `size` bytes between any host and device memory (unified
/// addressing), queued on the runtime stream.
///
/// # Safety
/// `size` bytes are readable at `src` and writable at `dst`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn mgpuMemcpy(
    dst: *mut c_void,
    src: *mut c_void,
    size: usize,
    stream: *mut c_void,
) {
    guard(|| {
        if size == 0 {
            return Ok(());
        }
        let runtime = cuda_for("mgpuMemcpy")?;
        // A copy into pageable host memory (the collectives' results, read
        // by the host after a synchronization) returns when it is done,
        // after the stream's earlier work: its time is waiting too.
        let started = std::time::Instant::now();
        // SAFETY: the caller passes `size` valid bytes at both addresses.
        let code = unsafe {
            (runtime.driver.cuMemcpyAsync)(
                dst as usize as CUdeviceptr,
                src as usize as CUdeviceptr,
                size,
                runtime.stream_for(stream),
            )
        };
        crate::profile::waited_in("memcpy", started.elapsed(), false);
        runtime.check("cuMemcpyAsync", code)
    })
}

/// Sets `count` 32-bit words of device memory to `value`.
///
/// # Safety
/// `count` 32-bit words of device memory are at `dst`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn mgpuMemset32(
    dst: *mut c_void,
    value: u32,
    count: usize,
    stream: *mut c_void,
) {
    guard(|| {
        let runtime = cuda_for("mgpuMemset32")?;
        // SAFETY: `count` words of device memory at `dst`.
        let code = unsafe {
            (runtime.driver.cuMemsetD32Async)(
                dst as usize as CUdeviceptr,
                value,
                count,
                runtime.stream_for(stream),
            )
        };
        runtime.check("cuMemsetD32Async", code)
    })
}

/// Sets `count` 16-bit words of device memory to `value` (its low 16 bits:
/// LLVM passes an `i16` without extension).
///
/// # Safety
/// `count` 16-bit words of device memory are at `dst`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn mgpuMemset16(
    dst: *mut c_void,
    value: u32,
    count: usize,
    stream: *mut c_void,
) {
    guard(|| {
        let runtime = cuda_for("mgpuMemset16")?;
        // SAFETY: `count` half-words of device memory at `dst`.
        let code = unsafe {
            (runtime.driver.cuMemsetD16Async)(
                dst as usize as CUdeviceptr,
                value as u16,
                count,
                runtime.stream_for(stream),
            )
        };
        runtime.check("cuMemsetD16Async", code)
    })
}

/// The device ordinal to run on; before the first device use.
#[unsafe(no_mangle)]
pub extern "C" fn mgpuSetDefaultDevice(device: i32) {
    guard(|| cuda::set_ordinal(device))
}

fn host_register(ptr: *mut c_void, bytes: usize) -> Result<(), RtError> {
    let runtime = cuda_for("gpu.host_register")?;
    if ptr.is_null() || bytes == 0 {
        return Ok(());
    }
    // SAFETY: `bytes` host bytes at `ptr` (the caller's contract).
    let code = unsafe { (runtime.driver.cuMemHostRegister_v2)(ptr, bytes, 0) };
    runtime.check("cuMemHostRegister_v2", code)
}

fn host_unregister(ptr: *mut c_void) -> Result<(), RtError> {
    let runtime = cuda_for("gpu.host_unregister")?;
    if ptr.is_null() {
        return Ok(());
    }
    // SAFETY: memory of host_register.
    let code = unsafe { (runtime.driver.cuMemHostUnregister)(ptr) };
    runtime.check("cuMemHostUnregister", code)
}

/// The data address and dense byte size of a ranked memref descriptor
/// (`{allocated, aligned, offset, sizes[rank], strides[rank]}`).
///
/// # Safety
/// `descriptor` points at such a descriptor of rank `rank`.
unsafe fn memref_span(
    rank: i64,
    descriptor: *const i64,
    element_bytes: i64,
) -> Result<(*mut c_void, usize), RtError> {
    let bad = || RtError::Device("gpu.host_register: invalid memref descriptor".into());
    if descriptor.is_null() || rank < 0 {
        return Err(bad());
    }
    // SAFETY: the caller's contract: the aligned pointer is the second
    // word, the offset the third, then the sizes.
    unsafe {
        let aligned = descriptor.add(1).cast::<*mut u8>().read();
        let offset = descriptor.add(2).read();
        let mut bytes = element_bytes;
        for i in 0..rank as usize {
            bytes = bytes
                .checked_mul(descriptor.add(3 + i).read())
                .ok_or_else(bad)?;
        }
        let start = offset.checked_mul(element_bytes).ok_or_else(bad)?;
        let bytes = usize::try_from(bytes).map_err(|_| bad())?;
        Ok((aligned.wrapping_offset(start as isize).cast(), bytes))
    }
}

/// Page-locks `size` host bytes at `ptr` for the device.
///
/// # Safety
/// `size` bytes of host memory at `ptr`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn mgpuMemHostRegister(ptr: *mut c_void, size: u64) {
    guard(|| host_register(ptr, usize::try_from(size).unwrap_or(usize::MAX)))
}

/// Undoes `mgpuMemHostRegister`.
///
/// # Safety
/// `ptr` was registered.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn mgpuMemHostUnregister(ptr: *mut c_void) {
    guard(|| host_unregister(ptr))
}

/// `gpu.host_register` of a (dense) memref.
///
/// # Safety
/// `descriptor` is a ranked memref descriptor of rank `rank`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn mgpuMemHostRegisterMemRef(
    rank: i64,
    descriptor: *const i64,
    element_bytes: i64,
) {
    guard(|| {
        // SAFETY: the caller's contract.
        let (ptr, bytes) = unsafe { memref_span(rank, descriptor, element_bytes) }?;
        host_register(ptr, bytes)
    })
}

/// `gpu.host_unregister` of a memref.
///
/// # Safety
/// As `mgpuMemHostRegisterMemRef`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn mgpuMemHostUnregisterMemRef(
    rank: i64,
    descriptor: *const i64,
    element_bytes: i64,
) {
    guard(|| {
        // SAFETY: the caller's contract.
        let (ptr, _) = unsafe { memref_span(rank, descriptor, element_bytes) }?;
        host_unregister(ptr)
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn modules_are_recorded_once_without_the_driver() {
        static PTX: &[u8] = b".version 7.8\n.target sm_90\n\0";
        let data = PTX.as_ptr() as *mut c_void;
        // SAFETY: a static NUL-terminated image.
        let (a, b) = unsafe { (mgpuModuleLoadJIT(data, 2), mgpuModuleLoadJIT(data, 2)) };
        assert_eq!(a, b);
        assert!(has_modules());
        assert!(module_of(a).is_ok());
        assert!(module_of(PTX.as_ptr() as *mut c_void).is_err());
        mgpuModuleUnload(a);
    }

    #[test]
    fn memref_descriptors_give_their_span() {
        let data = [0f32; 64];
        // {allocated, aligned, offset, sizes[2], strides[2]}
        let descriptor: [i64; 7] = [data.as_ptr() as i64, data.as_ptr() as i64, 4, 3, 5, 5, 1];
        // SAFETY: a rank-2 descriptor.
        let (ptr, bytes) = unsafe { memref_span(2, descriptor.as_ptr(), 4) }.unwrap();
        assert_eq!(ptr as usize, data.as_ptr() as usize + 16);
        assert_eq!(bytes, 60);
        // SAFETY: as above.
        assert!(unsafe { memref_span(-1, descriptor.as_ptr(), 4) }.is_err());
    }
}
