//! The CUDA driver API, loaded at run time.
//!
//! Executables link no CUDA library: [`Driver::load`] opens
//! `libcuda.so.1` with `dlopen` (declared here; glibc >= 2.34 has it in
//! libc, older ones in libdl, which the link names anyway) and resolves
//! every entry point the runtime uses with `dlsym` into one table of typed
//! function pointers. A missing library or symbol is an error value that
//! says which, so a machine without a GPU driver simply has no CUDA device.
//!
//! The versioned names (`cuMemAlloc_v2`, `cuStreamDestroy_v2`, ...) are the
//! ones `cuda.h` maps the plain names to since CUDA 3.2 / 4.0; the
//! unversioned `cuMemcpyAsync` and `cuMemsetD*Async` have no `_v2`. Only
//! `cuLaunchKernelEx` (CUDA 11.8, thread-block clusters),
//! `cuEventElapsedTime` (which CUDA 12.8 versioned), the memory pools and
//! the stream wait of the profile's launch gate are optional.
//!
//! Every driver function returns a `CUresult`; [`Driver::error_text`] turns
//! a code into its name (`CUDA_ERROR_LAUNCH_FAILED`) and description
//! (`unspecified launch failure`) with `cuGetErrorName`/`cuGetErrorString`.
//! The types are the driver's: handles are opaque pointers, a device
//! address is a `u64`.

use std::ffi::{CStr, c_char, c_int, c_uint, c_void};

pub type CUresult = c_int;
pub type CUdevice = c_int;
pub type CUdeviceptr = u64;
pub type CUcontext = *mut c_void;
pub type CUmodule = *mut c_void;
pub type CUfunction = *mut c_void;
pub type CUstream = *mut c_void;
pub type CUevent = *mut c_void;
pub type CUmemoryPool = *mut c_void;

pub const CUDA_SUCCESS: CUresult = 0;
pub const CUDA_ERROR_INVALID_VALUE: CUresult = 1;
pub const CUDA_ERROR_NO_DEVICE: CUresult = 100;
/// `cuStreamQuery`: the stream still has work.
pub const CUDA_ERROR_NOT_READY: CUresult = 600;
pub const CUDA_ERROR_ILLEGAL_ADDRESS: CUresult = 700;
pub const CUDA_ERROR_LAUNCH_TIMEOUT: CUresult = 702;
pub const CUDA_ERROR_ASSERT: CUresult = 710;
pub const CUDA_ERROR_HARDWARE_STACK_ERROR: CUresult = 714;
pub const CUDA_ERROR_ILLEGAL_INSTRUCTION: CUresult = 715;
pub const CUDA_ERROR_MISALIGNED_ADDRESS: CUresult = 716;
pub const CUDA_ERROR_INVALID_ADDRESS_SPACE: CUresult = 717;
pub const CUDA_ERROR_INVALID_PC: CUresult = 718;
pub const CUDA_ERROR_LAUNCH_FAILED: CUresult = 719;

/// Whether `code` is a fault of a running kernel, which the driver reports
/// at some later call (and which leaves the context unusable).
pub fn is_kernel_fault(code: CUresult) -> bool {
    matches!(
        code,
        CUDA_ERROR_ILLEGAL_ADDRESS
            | CUDA_ERROR_LAUNCH_TIMEOUT
            | CUDA_ERROR_ASSERT
            | CUDA_ERROR_HARDWARE_STACK_ERROR
            | CUDA_ERROR_ILLEGAL_INSTRUCTION
            | CUDA_ERROR_MISALIGNED_ADDRESS
            | CUDA_ERROR_INVALID_ADDRESS_SPACE
            | CUDA_ERROR_INVALID_PC
            | CUDA_ERROR_LAUNCH_FAILED
    )
}

/// `cuStreamCreate` flag: no implicit synchronization with stream 0.
pub const CU_STREAM_NON_BLOCKING: c_uint = 1;
/// `cuEventCreate` flag: an event without timing (cheaper).
pub const CU_EVENT_DISABLE_TIMING: c_uint = 2;
/// `CUjit_option` values.
pub const CU_JIT_ERROR_LOG_BUFFER: c_int = 5;
pub const CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES: c_int = 6;
pub const CU_JIT_OPTIMIZATION_LEVEL: c_int = 7;
/// `CUfunction_attribute`: the dynamic shared memory a launch may ask for.
pub const CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES: c_int = 8;
/// `CUdevice_attribute` values.
pub const CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR: c_int = 75;
pub const CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR: c_int = 76;
pub const CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN: c_int = 97;
pub const CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT: c_int = 16;
pub const CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR: c_int = 39;
pub const CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH: c_int = 95;
pub const CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK: c_int = 1;
pub const CU_DEVICE_ATTRIBUTE_WARP_SIZE: c_int = 10;
/// `CUlimit`: the stack of each GPU thread, in bytes.
pub const CU_LIMIT_STACK_SIZE: c_int = 0;
/// `CU_MEMPOOL_ATTR_RELEASE_THRESHOLD` (a `cuuint64_t`).
pub const CU_MEMPOOL_ATTR_RELEASE_THRESHOLD: c_int = 4;
/// `CUlaunchAttributeID`: a cooperative launch (all blocks co-resident).
pub const CU_LAUNCH_ATTRIBUTE_COOPERATIVE: c_uint = 2;
/// `CUlaunchAttributeID`: thread-block cluster dimensions.
pub const CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION: c_uint = 4;
/// `CUlaunchAttributeID`: the kernel may start before the one ahead of it
/// on the stream completes (it waits with `griddepcontrol.wait`).
pub const CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION: c_uint = 6;

/// `CUlaunchAttribute`: an id, padding to 8 bytes, a 64-byte value union
/// (here the cluster dimensions or the programmatic-serialization flag).
#[repr(C, align(8))]
#[derive(Debug, Clone, Copy)]
pub struct CUlaunchAttribute {
    pub id: c_uint,
    pub pad: [u8; 4],
    pub value: [c_uint; 16],
}

/// `CUlaunchConfig` of `cuLaunchKernelEx`.
#[repr(C)]
#[derive(Debug)]
pub struct CUlaunchConfig {
    pub grid_dim_x: c_uint,
    pub grid_dim_y: c_uint,
    pub grid_dim_z: c_uint,
    pub block_dim_x: c_uint,
    pub block_dim_y: c_uint,
    pub block_dim_z: c_uint,
    pub shared_mem_bytes: c_uint,
    pub stream: CUstream,
    pub attrs: *mut CUlaunchAttribute,
    pub num_attrs: c_uint,
}

const RTLD_NOW: c_int = 2;

unsafe extern "C" {
    fn dlopen(filename: *const c_char, flags: c_int) -> *mut c_void;
    fn dlsym(handle: *mut c_void, symbol: *const c_char) -> *mut c_void;
    fn dlerror() -> *const c_char;
}

/// The text of the last `dlopen`/`dlsym` failure.
fn last_dl_error() -> String {
    // SAFETY: dlerror returns null or a NUL-terminated string owned by libc.
    let text = unsafe { dlerror() };
    if text.is_null() {
        "unknown dynamic loader error".into()
    } else {
        // SAFETY: as above.
        unsafe { CStr::from_ptr(text) }
            .to_string_lossy()
            .into_owned()
    }
}

/// Declares the driver table: each field a typed pointer to the symbol
/// named after it.
macro_rules! driver_table {
    (
        required { $( $name:ident ( $( $arg:ty ),* ); )* }
        optional { $( $oname:ident ( $( $oarg:ty ),* ); )* }
    ) => {
        /// The resolved entry points of `libcuda.so.1`.
        #[allow(non_snake_case)]
        pub struct Driver {
            $( pub $name: unsafe extern "C" fn( $( $arg ),* ) -> CUresult, )*
            $( pub $oname: Option<unsafe extern "C" fn( $( $oarg ),* ) -> CUresult>, )*
        }

        impl Driver {
            /// Resolves every entry point in `library` (a `dlopen` handle).
            ///
            /// # Safety
            /// `library` is a live handle of a library whose symbols of
            /// these names have these C signatures (the CUDA driver).
            unsafe fn resolve(library: *mut c_void, path: &str) -> Result<Driver, String> {
                Ok(Driver {
                    $( $name: {
                        let symbol = find(library, concat!(stringify!($name), "\0"))
                            .ok_or_else(|| format!(
                                "{path} has no symbol {}", stringify!($name)))?;
                        // SAFETY: the caller's contract: the symbol has
                        // this signature.
                        unsafe {
                            std::mem::transmute::<
                                *mut c_void,
                                unsafe extern "C" fn( $( $arg ),* ) -> CUresult,
                            >(symbol)
                        }
                    }, )*
                    $( $oname: find(library, concat!(stringify!($oname), "\0")).map(|symbol| {
                        // SAFETY: as above.
                        unsafe {
                            std::mem::transmute::<
                                *mut c_void,
                                unsafe extern "C" fn( $( $oarg ),* ) -> CUresult,
                            >(symbol)
                        }
                    }), )*
                })
            }
        }
    };
}

/// `dlsym(library, name)`, `name` NUL-terminated; None when absent.
fn find(library: *mut c_void, name: &str) -> Option<*mut c_void> {
    // SAFETY: `name` ends in NUL (the macro appends it); `library` is live.
    let symbol = unsafe { dlsym(library, name.as_ptr().cast()) };
    (!symbol.is_null()).then_some(symbol)
}

driver_table! {
    required {
        cuInit(c_uint);
        cuDeviceGetCount(*mut c_int);
        cuDeviceGet(*mut CUdevice, c_int);
        cuDeviceGetName(*mut c_char, c_int, CUdevice);
        cuDeviceGetAttribute(*mut c_int, c_int, CUdevice);
        cuDevicePrimaryCtxRetain(*mut CUcontext, CUdevice);
        cuCtxSetCurrent(CUcontext);
        cuCtxSynchronize();
        cuCtxGetLimit(*mut usize, c_int);
        cuCtxSetLimit(c_int, usize);
        cuModuleLoadData(*mut CUmodule, *const c_void);
        cuModuleLoadDataEx(*mut CUmodule, *const c_void, c_uint, *mut c_int, *mut *mut c_void);
        cuModuleGetFunction(*mut CUfunction, CUmodule, *const c_char);
        cuModuleGetGlobal_v2(*mut CUdeviceptr, *mut usize, CUmodule, *const c_char);
        cuModuleUnload(CUmodule);
        cuFuncSetAttribute(CUfunction, c_int, c_int);
        cuLaunchKernel(
            CUfunction, c_uint, c_uint, c_uint, c_uint, c_uint, c_uint, c_uint,
            CUstream, *mut *mut c_void, *mut *mut c_void
        );
        cuMemAlloc_v2(*mut CUdeviceptr, usize);
        cuMemFree_v2(CUdeviceptr);
        cuMemcpyHtoD_v2(CUdeviceptr, *const c_void, usize);
        cuMemcpyDtoH_v2(*mut c_void, CUdeviceptr, usize);
        cuMemcpyDtoD_v2(CUdeviceptr, CUdeviceptr, usize);
        cuMemcpyHtoDAsync_v2(CUdeviceptr, *const c_void, usize, CUstream);
        cuMemcpyDtoHAsync_v2(*mut c_void, CUdeviceptr, usize, CUstream);
        cuMemcpyDtoDAsync_v2(CUdeviceptr, CUdeviceptr, usize, CUstream);
        cuMemcpyAsync(CUdeviceptr, CUdeviceptr, usize, CUstream);
        cuMemsetD8_v2(CUdeviceptr, u8, usize);
        cuMemsetD16_v2(CUdeviceptr, u16, usize);
        cuMemsetD32_v2(CUdeviceptr, c_uint, usize);
        cuMemsetD8Async(CUdeviceptr, u8, usize, CUstream);
        cuMemsetD16Async(CUdeviceptr, u16, usize, CUstream);
        cuMemsetD32Async(CUdeviceptr, c_uint, usize, CUstream);
        cuMemHostRegister_v2(*mut c_void, usize, c_uint);
        cuMemHostUnregister(*mut c_void);
        cuStreamCreate(*mut CUstream, c_uint);
        cuStreamSynchronize(CUstream);
        cuStreamQuery(CUstream);
        cuStreamDestroy_v2(CUstream);
        cuStreamWaitEvent(CUstream, CUevent, c_uint);
        cuEventCreate(*mut CUevent, c_uint);
        cuEventRecord(CUevent, CUstream);
        cuEventSynchronize(CUevent);
        cuEventDestroy_v2(CUevent);
        cuGetErrorName(CUresult, *mut *const c_char);
        cuGetErrorString(CUresult, *mut *const c_char);
    }
    optional {
        cuEventElapsedTime(*mut f32, CUevent, CUevent);
        cuLaunchKernelEx(*const CUlaunchConfig, CUfunction, *mut *mut c_void, *mut *mut c_void);
        cuMemAllocAsync(*mut CUdeviceptr, usize, CUstream);
        cuMemFreeAsync(CUdeviceptr, CUstream);
        cuDeviceGetDefaultMemPool(*mut CUmemoryPool, CUdevice);
        cuMemPoolSetAttribute(CUmemoryPool, c_int, *mut c_void);
        cuMemHostGetDevicePointer_v2(*mut CUdeviceptr, *mut c_void, c_uint);
        cuStreamWaitValue32_v2(CUstream, CUdeviceptr, u32, c_uint);
    }
}

/// The library `Driver::load` opens by default.
pub const LIBRARY: &str = "libcuda.so.1";

impl Driver {
    /// Opens the driver library `path` and resolves its entry points. The
    /// library stays loaded for the life of the process.
    pub fn load(path: &str) -> Result<Driver, String> {
        let name =
            std::ffi::CString::new(path).map_err(|_| format!("bad library name {path:?}"))?;
        // SAFETY: a NUL-terminated name.
        let library = unsafe { dlopen(name.as_ptr(), RTLD_NOW) };
        if library.is_null() {
            return Err(format!("cannot load {path}: {}", last_dl_error()));
        }
        // SAFETY: a library of this name is the CUDA driver, whose
        // symbols have the signatures of the table.
        unsafe { Driver::resolve(library, path) }
    }

    /// The name and description of a driver error code.
    pub fn error_text(&self, code: CUresult) -> (String, String) {
        let mut name: *const c_char = std::ptr::null();
        let mut text: *const c_char = std::ptr::null();
        // SAFETY: out-pointers to locals; the strings returned are static.
        unsafe {
            (self.cuGetErrorName)(code, &mut name);
            (self.cuGetErrorString)(code, &mut text);
        }
        let read = |p: *const c_char, fallback: String| {
            if p.is_null() {
                fallback
            } else {
                // SAFETY: a static NUL-terminated string of the driver.
                unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned()
            }
        };
        (
            read(name, format!("CUDA error {code}")),
            read(text, "unknown error".into()),
        )
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_library_is_an_error() {
        let error = Driver::load("libpgpu-no-such-driver.so.1").err().unwrap();
        assert!(
            error.starts_with("cannot load libpgpu-no-such-driver.so.1"),
            "{error}"
        );
    }

    #[test]
    fn a_library_without_the_driver_api_is_an_error() {
        // libm is always there and has no cuInit.
        let error = Driver::load("libm.so.6").err().unwrap();
        assert_eq!(error, "libm.so.6 has no symbol cuInit");
    }

    #[test]
    fn faults_are_the_sticky_kernel_errors() {
        assert!(is_kernel_fault(CUDA_ERROR_LAUNCH_FAILED));
        assert!(is_kernel_fault(CUDA_ERROR_ILLEGAL_ADDRESS));
        assert!(!is_kernel_fault(CUDA_ERROR_INVALID_VALUE));
        assert!(!is_kernel_fault(CUDA_SUCCESS));
    }

    #[test]
    fn launch_attribute_layout_matches_cuda_h() {
        assert_eq!(std::mem::size_of::<CUlaunchAttribute>(), 72);
        assert_eq!(std::mem::size_of::<CUlaunchConfig>(), 56);
    }
}
