//! The runtime of compiled pgpu programs (no LLVM dependency): what the
//! generated host code calls, and the printf formatting and random
//! generator it shares with the reference interpreter.
//!
//! This crate is an `rlib` (for the interpreter and tests) and a
//! `staticlib` that compiled executables link with the system `cc`. Its C
//! ABI (all `extern "C"`, unmangled, prefixed `pgpu_rt_`):
//!
//! | symbol | module |
//! |---|---|
//! | `pgpu_rt_init(i32 argc, char **argv)` | [`io`] |
//! | `pgpu_rt_argi(i32 k, i32 default) -> i32`, `pgpu_rt_argi_width(i64 k, i64 default, i32 width) -> i64` | [`io`] |
//! | `pgpu_rt_wtime() -> f64` | [`io`] |
//! | `pgpu_rt_rand_seed(i64)`, `pgpu_rt_rand_u32() -> i32` | [`io`] |
//! | `pgpu_rt_printf_begin(u8 *format, i64 len)`, `pgpu_rt_printf_i64(i64 value, i32 bits)`, `pgpu_rt_printf_f64(f64)`, `pgpu_rt_printf_end()` | [`io`] |
//! | `pgpu_rt_alloc(i64 bytes) -> u8*`, `pgpu_rt_free(u8*)` | [`memory`] |
//! | `pgpu_rt_dtemp_mark() -> i64`, `pgpu_rt_dtempnew(i64 bytes) -> u8*`, `pgpu_rt_dtempfree(i64 mark)` | [`memory`] |
//! | `pgpu_rt_list_reduce`, `_scan`, `_sort_idx`, `_compact`, `_split`, `_expand` | [`list_abi`] (codes in [`elem`]) |
//! | `pgpu_rt_parallel_for(i64 n, body, u8 *context)`, `pgpu_rt_cpu_threads() -> i32` | [`launch`] |
//! | `pgpu_rt_kernel_error(char *kernel, char *file, i32 line, i32 col, char *message)` | [`launch`] |
//! | `pgpu_rt_device_is_cuda() -> i32`, `pgpu_rt_device_synchronize()`, `pgpu_rt_grid_capacity() -> i64`, `pgpu_rt_grid_unavailable()` (`pgpu.grid_capacity`, grid spawns), `pgpu_rt_block_capacity() -> i64`, `pgpu_rt_block_unavailable()` (`pgpu.block_capacity`, block spawns), `pgpu_rt_multiprocessors() -> i64` (`pgpu.multiprocessors`), `pgpu_rt_kernel_block_size(i64, i64) -> i64` (the block size of each kernel of `pgpu-offload-kernels`), `pgpu_rt_lockstep_width() -> i64` (`pgpu.lockstep_width`) | [`device`] |
//! | `pgpu_rt_tasks_begin()`, `pgpu_rt_task_begin()`, `pgpu_rt_task_end()`, `pgpu_rt_task_spawn(void (*body)(void *), void *context, i64 bytes)`, `pgpu_rt_tasks_end()` (`pgpu.taskgroup`, `pgpu.task`) | [`device`], [`cuda::tasks`] |
//! | `pgpu_rt_to_device(u8 *ptr, i32 write) -> u8*`, `pgpu_rt_to_host(u8 *ptr, i32 write)`, `pgpu_rt_register_global(u8 *ptr, i64 bytes)`, `pgpu_rt_register_zero_global(u8 *ptr, i64 bytes)` | [`mirror`] |
//! | `pgpu_rt_launch_site(char *kernel, char *file, i32 line, i32 col)` | [`mgpu`] |
//! | MLIR's `mgpu*` GPU runtime ABI (modules, launches, streams, events, memory) | [`mgpu`] |
//! | `pgpu_rt_fini()` (end of the program: device wait, `PGPU_PROFILE` report) | [`device`], [`profile`] |
//! | `pgpu_rt_host_error(char *function, char *file, i32 line, i32 col, char *message)` | [`launch`] |
//!
//! Errors are values ([`error::RtError`]) inside the crate; the exported
//! functions report them (and any panic, which never crosses the FFI
//! boundary) as `pgpu runtime: error: ...` on stderr and exit with
//! status 1 (a kernel's fault as `FILE:LINE:COL: error: in kernel ...`).
//!
//! Two devices ([`device`]): `cpu`, whose kernels and collectives run on
//! one persistent thread pool ([`pool`]), and `cuda` ([`cuda`]: the driver
//! API loaded at run time with `dlopen`, so executables need no CUDA
//! library to start), where lists live in runtime host memory with lazily
//! created device mirrors ([`mirror`]) and kernels are launched through
//! the `mgpu*` ABI ([`mgpu`]).

pub mod cuda;
pub mod device;
pub mod elem;
pub mod error;
pub mod io;
pub mod launch;
pub mod list;
pub mod list_abi;
pub mod memory;
pub mod mgpu;
pub mod mirror;
pub mod pages;
pub mod pool;
pub mod printf;
pub mod profile;

pub use error::RtError;
