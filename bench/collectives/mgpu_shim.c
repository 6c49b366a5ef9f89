// A minimal implementation of the MLIR `mgpu*` runtime ABI that upstream
// `gpu-to-llvm` and the `gpu.binary` LLVM translation call, on the CUDA
// driver API loaded at run time (dlopen of libcuda.so.1), for testing the
// generated collectives' host functions on the GPU machine without the MLIR
// CUDA runtime library. It works in the device's primary context (the one
// the CUDA runtime, and so cupy and torch, use), so device pointers of
// those libraries can be passed straight to the host functions.
//
// Errors are printed and counted; pgpu_shim_errors() returns the count.

#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

typedef int CUresult;
typedef int CUdevice;
typedef void *CUcontext;
typedef void *CUmodule;
typedef void *CUfunction;
typedef void *CUstream;
typedef unsigned long long CUdeviceptr;

static CUresult (*p_cuInit)(unsigned);
static CUresult (*p_cuDeviceGet)(CUdevice *, int);
static CUresult (*p_cuDevicePrimaryCtxRetain)(CUcontext *, CUdevice);
static CUresult (*p_cuCtxSetCurrent)(CUcontext);
static CUresult (*p_cuModuleLoadData)(CUmodule *, const void *);
static CUresult (*p_cuModuleUnload)(CUmodule);
static CUresult (*p_cuModuleGetFunction)(CUfunction *, CUmodule, const char *);
static CUresult (*p_cuLaunchKernel)(CUfunction, unsigned, unsigned, unsigned,
                                    unsigned, unsigned, unsigned, unsigned,
                                    CUstream, void **, void **);
static CUresult (*p_cuStreamCreate)(CUstream *, unsigned);
static CUresult (*p_cuStreamSynchronize)(CUstream);
static CUresult (*p_cuMemAlloc)(CUdeviceptr *, size_t);
static CUresult (*p_cuMemFree)(CUdeviceptr);
static CUresult (*p_cuMemcpyAsync)(CUdeviceptr, CUdeviceptr, size_t, CUstream);
static CUresult (*p_cuGetErrorString)(CUresult, const char **);

static int errors;
static int ready;
static char last_error[512];
static int last_code;

// Kernel names by function handle, for error messages.
#define NAMES 4096
static void *name_handles[NAMES];
static const char *name_texts[NAMES];
static int name_count;
static const char *last_kernel = "";

int pgpu_shim_errors(void) { return errors; }
const char *pgpu_shim_last_error(void) { return last_error; }
int pgpu_shim_last_code(void) { return last_code; }

static void check(CUresult result, const char *what) {
  if (result != 0) {
    const char *text = "?";
    if (p_cuGetErrorString)
      p_cuGetErrorString(result, &text);
    snprintf(last_error, sizeof last_error, "%s failed: %d %s (last kernel %s)",
             what, result, text, last_kernel);
    fprintf(stderr, "mgpu shim: %s\n", last_error);
    last_code = result;
    errors++;
  }
}

// The `_v2` entry points first: the unsuffixed cuMemAlloc and cuMemFree
// are the legacy ABI with 32-bit device pointers.
#define LOAD(name)                                                             \
  do {                                                                         \
    *(void **)&p_##name = dlsym(lib, #name "_v2");                             \
    if (!p_##name)                                                             \
      *(void **)&p_##name = dlsym(lib, #name);                                 \
    if (!p_##name) {                                                           \
      fprintf(stderr, "mgpu shim: no %s\n", #name);                            \
      exit(1);                                                                 \
    }                                                                          \
  } while (0)

static void init(void) {
  if (ready)
    return;
  void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL);
  if (!lib) {
    fprintf(stderr, "mgpu shim: cannot load libcuda.so.1\n");
    exit(1);
  }
  LOAD(cuInit);
  LOAD(cuDeviceGet);
  LOAD(cuDevicePrimaryCtxRetain);
  LOAD(cuCtxSetCurrent);
  LOAD(cuModuleLoadData);
  LOAD(cuModuleUnload);
  LOAD(cuModuleGetFunction);
  LOAD(cuLaunchKernel);
  LOAD(cuStreamCreate);
  LOAD(cuStreamSynchronize);
  LOAD(cuMemAlloc);
  LOAD(cuMemFree);
  LOAD(cuMemcpyAsync);
  LOAD(cuGetErrorString);
  check(p_cuInit(0), "cuInit");
  CUdevice device;
  check(p_cuDeviceGet(&device, 0), "cuDeviceGet");
  CUcontext context;
  check(p_cuDevicePrimaryCtxRetain(&context, device), "cuDevicePrimaryCtxRetain");
  check(p_cuCtxSetCurrent(context), "cuCtxSetCurrent");
  ready = 1;
}

void *mgpuModuleLoad(void *data, size_t size) {
  (void)size;
  init();
  CUmodule module = 0;
  check(p_cuModuleLoadData(&module, data), "cuModuleLoadData");
  return module;
}

void *mgpuModuleLoadJIT(void *data, int opt_level) {
  (void)opt_level;
  return mgpuModuleLoad(data, 0);
}

void mgpuModuleUnload(void *module) {
  // Modules live as long as the process (the driver may be gone at exit).
  (void)module;
}

void *mgpuModuleGetFunction(void *module, const char *name) {
  init();
  CUfunction function = 0;
  check(p_cuModuleGetFunction(&function, module, name), name);
  int known = 0;
  for (int i = 0; i < name_count; i++)
    known |= name_handles[i] == function;
  if (!known && name_count < NAMES) {
    name_handles[name_count] = function;
    name_texts[name_count++] = name;
  }
  return function;
}

void mgpuLaunchKernel(void *function, intptr_t gx, intptr_t gy, intptr_t gz,
                      intptr_t bx, intptr_t by, intptr_t bz, int32_t smem,
                      void *stream, void **params, void **extra,
                      size_t count) {
  (void)count;
  last_kernel = "?";
  for (int i = 0; i < name_count; i++)
    if (name_handles[i] == function)
      last_kernel = name_texts[i];
  check(p_cuLaunchKernel(function, gx, gy, gz, bx, by, bz, smem, stream,
                         params, extra),
        "cuLaunchKernel");
}

// One stream for the process, as the runtime's (backends/runtime mgpu.rs):
// host functions that return nothing do not wait for their kernels, so two
// calls in a row must be ordered by the stream, not by the host. The stream
// is blocking, so work cupy puts on the legacy default stream orders with
// it too.
static CUstream the_stream;

void *mgpuStreamCreate(void) {
  init();
  if (!the_stream) check(p_cuStreamCreate(&the_stream, 0), "cuStreamCreate");
  return the_stream;
}

void mgpuStreamDestroy(void *stream) { (void)stream; }

void mgpuStreamSynchronize(void *stream) {
  check(p_cuStreamSynchronize(stream), "cuStreamSynchronize");
}

void *mgpuMemAlloc(uint64_t bytes, void *stream, int8_t host_shared) {
  (void)stream;
  (void)host_shared;
  init();
  CUdeviceptr ptr = 0;
  check(p_cuMemAlloc(&ptr, bytes), "cuMemAlloc");
  return (void *)ptr;
}

void mgpuMemFree(void *ptr, void *stream) {
  (void)stream;
  check(p_cuMemFree((CUdeviceptr)ptr), "cuMemFree");
}

void mgpuMemcpy(void *dst, void *src, size_t bytes, void *stream) {
  check(p_cuMemcpyAsync((CUdeviceptr)dst, (CUdeviceptr)src, bytes, stream),
        "cuMemcpyAsync");
}
