/* The CUDA device of pgpu-runtime, driven as generated host code drives it.
 *
 * Built against libpgpu_runtime.a with kernels.ptx embedded (kernels_ptx.h,
 * made by build.sh or by the cuda_c_program test): a global constructor
 * records the PTX with mgpuModuleLoadJIT before main, as LLVM 22's
 * translation of gpu.binary does, and a second copy, not NUL-terminated,
 * with mgpuModuleLoad(data, size). The first integer argument picks a case
 * (run.sh runs them all and checks the output):
 *
 *   0  everything that works: mirrors (to_device/to_host, interior
 *      pointers, host writes, dtemp and freed lists), launches (plain,
 *      64 KiB of dynamic shared memory, clusters), mgpu memory, events,
 *      streams, wtime. On the cpu device: the identity mirrors.
 *   1  a trap in a kernel after another launch, found by pgpu_rt_to_host
 *   2  a launch the driver refuses (too many threads per block)
 *   3  an illegal address, found by pgpu_rt_wtime
 *   4  pgpu_rt_to_device of memory the runtime did not allocate
 *   5  a faulting launch without a launch site
 *   6  mgpuMemAlloc of host-shared (managed) memory
 *   7  mgpuModuleGetFunction (any kernel use), meant for the cpu device
 *
 * The second argument is the list length (default 1000). Output goes
 * through unbuffered stdio.
 */

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels_ptx.h" /* static const char kernels_ptx[] = "..."; */

extern void pgpu_rt_init(int32_t argc, char **argv);
extern int32_t pgpu_rt_argi(int32_t k, int32_t fallback);
extern double pgpu_rt_wtime(void);
extern uint8_t *pgpu_rt_alloc(int64_t bytes);
extern void pgpu_rt_free(uint8_t *ptr);
extern int64_t pgpu_rt_dtemp_mark(void);
extern uint8_t *pgpu_rt_dtempnew(int64_t bytes);
extern void pgpu_rt_dtempfree(int64_t mark);
extern int32_t pgpu_rt_device_is_cuda(void);
extern void pgpu_rt_device_synchronize(void);
extern uint8_t *pgpu_rt_to_device(uint8_t *ptr, int32_t write);
extern void pgpu_rt_to_host(uint8_t *ptr, int32_t write);
extern void pgpu_rt_register_global(uint8_t *ptr, int64_t bytes);
extern void pgpu_rt_launch_site(const char *kernel, const char *file, int32_t line, int32_t col);

extern void *mgpuModuleLoad(void *data, size_t size);
extern void *mgpuModuleLoadJIT(void *data, int opt_level);
extern void mgpuModuleUnload(void *module);
extern void *mgpuModuleGetFunction(void *module, const char *name);
extern void mgpuLaunchKernel(void *function, intptr_t gx, intptr_t gy, intptr_t gz, intptr_t bx,
                             intptr_t by, intptr_t bz, int32_t smem, void *stream, void **params,
                             void **extra, size_t count);
extern void mgpuLaunchClusterKernel(void *function, intptr_t cx, intptr_t cy, intptr_t cz,
                                    intptr_t gx, intptr_t gy, intptr_t gz, intptr_t bx,
                                    intptr_t by, intptr_t bz, int32_t smem, void *stream,
                                    void **params, void **extra, size_t count);
extern void *mgpuStreamCreate(void);
extern void mgpuStreamDestroy(void *stream);
extern void mgpuStreamSynchronize(void *stream);
extern void mgpuStreamWaitEvent(void *stream, void *event);
extern void *mgpuEventCreate(void);
extern void mgpuEventDestroy(void *event);
extern void mgpuEventSynchronize(void *event);
extern void mgpuEventRecord(void *event, void *stream);
extern void *mgpuMemAlloc(uint64_t size, void *stream, _Bool host_shared);
extern void mgpuMemFree(void *ptr, void *stream);
extern void mgpuMemcpy(void *dst, void *src, size_t size, void *stream);
extern void mgpuMemset32(void *dst, uint32_t value, size_t count, void *stream);
extern void mgpuMemset16(void *dst, uint16_t value, size_t count, void *stream);
extern void mgpuSetDefaultDevice(int32_t device);

static void *module_jit, *module_sized;

/* What LLVM 22 emits for a gpu.binary: a load in a global constructor. */
__attribute__((constructor(123))) static void load_modules(void) {
  module_jit = mgpuModuleLoadJIT((void *)kernels_ptx, 2);
  size_t len = strlen(kernels_ptx);
  char *copy = malloc(len + 64);
  memcpy(copy, kernels_ptx, len);
  memset(copy + len, 'X', 64); /* no NUL: the size must be used */
  module_sized = mgpuModuleLoad(copy, len);
}

__attribute__((destructor(123))) static void unload_modules(void) {
  mgpuModuleUnload(module_jit);
  mgpuModuleUnload(module_sized);
}

static int failures = 0;

static void check(int ok, const char *what) {
  printf("%s: %s\n", ok ? "ok" : "FAIL", what);
  if (!ok)
    failures++;
}

static void launch_scale(void *function, void *stream, int32_t *in, int32_t *out, int32_t n,
                         int line) {
  void *d_in = pgpu_rt_to_device((uint8_t *)in, 0);
  void *d_out = pgpu_rt_to_device((uint8_t *)out, 1);
  void *args[3] = {&d_in, &d_out, &n};
  pgpu_rt_launch_site("scale", "mirror.bsgp", line, 3);
  mgpuLaunchKernel(function, (n + 255) / 256, 1, 1, 256, 1, 1, 0, stream, args, NULL, 3);
}

static int check_scaled(const int32_t *in, const int32_t *out, int32_t n) {
  for (int32_t i = 0; i < n; ++i)
    if (out[i] != 2 * in[i] + 1)
      return 0;
  return 1;
}

static void cpu_case(int32_t n) {
  int32_t *list = (int32_t *)pgpu_rt_alloc(4 * (int64_t)n);
  check(pgpu_rt_to_device((uint8_t *)list, 1) == (uint8_t *)list, "cpu: to_device is the identity");
  check(pgpu_rt_to_device((uint8_t *)(list + 3), 0) == (uint8_t *)(list + 3),
        "cpu: interior pointers too");
  check(pgpu_rt_to_device(NULL, 0) == NULL, "cpu: null stays null");
  pgpu_rt_to_host((uint8_t *)list, 1);
  pgpu_rt_device_synchronize();
  double t = pgpu_rt_wtime();
  check(t >= 0.0, "cpu: wtime");
  pgpu_rt_free((uint8_t *)list);
}

static void cuda_case(int32_t n) {
  mgpuSetDefaultDevice(0);
  void *stream = mgpuStreamCreate();
  void *scale = mgpuModuleGetFunction(module_jit, "scale");
  check(scale == mgpuModuleGetFunction(module_jit, "scale"), "functions are cached");

  /* Mirrors: upload on first use, download when the host copy is stale. */
  int32_t *in = (int32_t *)pgpu_rt_alloc(4 * (int64_t)n);
  int32_t *out = (int32_t *)pgpu_rt_alloc(4 * (int64_t)n);
  /* A new list is fresh (nothing to upload) until the host says it writes. */
  pgpu_rt_to_host((uint8_t *)in, 1);
  for (int32_t i = 0; i < n; ++i)
    in[i] = i;
  launch_scale(scale, stream, in, out, n, 10);
  pgpu_rt_to_host((uint8_t *)out, 0);
  check(check_scaled(in, out, n), "scale through mirrors");
  uint8_t *d_in = pgpu_rt_to_device((uint8_t *)in, 0);
  check(pgpu_rt_to_device((uint8_t *)(in + n / 2), 0) == d_in + 4 * (int64_t)(n / 2),
        "interior pointer offsets");
  check(pgpu_rt_to_device((uint8_t *)(in + n), 0) == d_in + 4 * (int64_t)n,
        "one past the end");

  /* The host writes its copy: the next launch uploads it again. */
  pgpu_rt_to_host((uint8_t *)in, 1);
  for (int32_t i = 0; i < n; ++i)
    in[i] = 3 * i - 7;
  launch_scale(scale, stream, in, out, n, 11);
  pgpu_rt_to_host((uint8_t *)(out + n / 2), 0); /* an interior pointer */
  check(check_scaled(in, out, n), "host writes are uploaded");

  /* The same kernel from the module loaded with a size and no NUL. */
  void *scale2 = mgpuModuleGetFunction(module_sized, "scale");
  check(scale2 != NULL && scale2 != scale, "a sized PTX image without NUL loads");
  pgpu_rt_to_host((uint8_t *)in, 1);
  for (int32_t i = 0; i < n; ++i)
    in[i] = -i;
  launch_scale(scale2, stream, in, out, n, 12);
  pgpu_rt_to_host((uint8_t *)out, 0);
  check(check_scaled(in, out, n), "scale from the second module");

  /* Global arrays (static memory, as a Fork program's shared arrays),
     registered as at start-up: the first launch uploads the initializer. */
  static int32_t global_in[1000] = {4, 8, 15, 16, 23, 42};
  static int32_t global_out[1000];
  pgpu_rt_register_global((uint8_t *)global_in, (int64_t)sizeof global_in);
  pgpu_rt_register_global((uint8_t *)global_out, (int64_t)sizeof global_out);
  launch_scale(scale, stream, global_in, global_out, 1000, 13);
  pgpu_rt_to_host((uint8_t *)global_out, 0);
  check(check_scaled(global_in, global_out, 1000) && global_out[5] == 85,
        "global arrays through mirrors");

  /* 64 KiB of dynamic shared memory (needs the opt-in attribute). */
  int32_t m = 16384;
  int32_t *data = (int32_t *)pgpu_rt_alloc(4 * (int64_t)m);
  pgpu_rt_to_host((uint8_t *)data, 1);
  for (int32_t i = 0; i < m; ++i)
    data[i] = i * 7;
  void *reverse = mgpuModuleGetFunction(module_jit, "reverse");
  void *d_data = pgpu_rt_to_device((uint8_t *)data, 1);
  void *rargs[2] = {&d_data, &m};
  pgpu_rt_launch_site("reverse", "mirror.bsgp", 20, 5);
  mgpuLaunchKernel(reverse, 1, 1, 1, 1024, 1, 1, 4 * m, stream, rargs, NULL, 2);
  pgpu_rt_to_host((uint8_t *)data, 0);
  int ok = 1;
  for (int32_t i = 0; i < m; ++i)
    ok &= data[i] == (m - 1 - i) * 7;
  check(ok, "64 KiB of dynamic shared memory");

  /* A cluster launch (2 blocks per cluster). */
  pgpu_rt_to_host((uint8_t *)in, 1);
  for (int32_t i = 0; i < n; ++i)
    in[i] = i + 1000;
  {
    void *d_in2 = pgpu_rt_to_device((uint8_t *)in, 0);
    void *d_out2 = pgpu_rt_to_device((uint8_t *)out, 1);
    void *args[3] = {&d_in2, &d_out2, &n};
    intptr_t blocks = ((n + 255) / 256 + 1) / 2 * 2;
    pgpu_rt_launch_site("scale", "mirror.bsgp", 30, 3);
    mgpuLaunchClusterKernel(scale, 2, 1, 1, blocks, 1, 1, 256, 1, 1, 0, stream, args, NULL, 3);
    pgpu_rt_to_host((uint8_t *)out, 0);
    check(check_scaled(in, out, n), "cluster launch");
  }

  /* A dtemp list's mirror goes with dtempfree; a freed list's too. */
  int64_t mark = pgpu_rt_dtemp_mark();
  int32_t *tmp = (int32_t *)pgpu_rt_dtempnew(4 * (int64_t)n);
  launch_scale(scale, stream, in, tmp, n, 40);
  pgpu_rt_to_host((uint8_t *)tmp, 0);
  check(check_scaled(in, tmp, n), "dtemp list");
  pgpu_rt_dtempfree(mark);
  pgpu_rt_free((uint8_t *)data);

  /* mgpu memory: alloc, memset, memcpy both ways and device to device. */
  size_t bytes = 4 * (size_t)n;
  uint32_t *d = mgpuMemAlloc(bytes, stream, 0);
  uint32_t *d2 = mgpuMemAlloc(bytes, stream, 0);
  uint32_t *host = malloc(bytes);
  check(mgpuMemAlloc(0, stream, 0) == NULL, "mgpuMemAlloc(0) is null");
  mgpuMemset32(d, 0x01020304u, n, stream);
  mgpuMemcpy(d2, d, bytes, stream);
  mgpuMemcpy(host, d2, bytes, stream);
  mgpuStreamSynchronize(stream);
  ok = 1;
  for (int32_t i = 0; i < n; ++i)
    ok &= host[i] == 0x01020304u;
  check(ok, "mgpuMemset32 + mgpuMemcpy");
  mgpuMemset16(d, 0xabcd, 2 * (size_t)n, stream);
  mgpuMemcpy(host, d, bytes, stream);
  mgpuStreamSynchronize(stream);
  ok = 1;
  for (int32_t i = 0; i < n; ++i)
    ok &= host[i] == 0xabcdabcdu;
  check(ok, "mgpuMemset16");
  for (int32_t i = 0; i < n; ++i)
    host[i] = (uint32_t)i * 5u;
  mgpuMemcpy(d2, host, bytes, stream);
  memset(host, 0, bytes);
  mgpuMemcpy(host, d2, bytes, stream);
  mgpuStreamSynchronize(stream);
  ok = 1;
  for (int32_t i = 0; i < n; ++i)
    ok &= host[i] == (uint32_t)i * 5u;
  check(ok, "mgpuMemcpy host to device and back");
  mgpuMemFree(d, stream);
  mgpuMemFree(d2, stream);
  mgpuMemFree(NULL, stream);
  free(host);

  /* Events. */
  void *event = mgpuEventCreate();
  mgpuEventRecord(event, stream);
  mgpuStreamWaitEvent(stream, event);
  mgpuEventSynchronize(event);
  mgpuEventDestroy(event);
  check(1, "events");

  /* wtime waits for the device: 200 launches over 16M elements. */
  int32_t big = 1 << 24;
  int32_t *bin = (int32_t *)pgpu_rt_alloc(4 * (int64_t)big);
  int32_t *bout = (int32_t *)pgpu_rt_alloc(4 * (int64_t)big);
  launch_scale(scale, stream, bin, bout, big, 50); /* warm-up and uploads */
  double t0 = pgpu_rt_wtime();
  for (int r = 0; r < 200; ++r)
    launch_scale(scale, stream, bin, bout, big, 51);
  double t1 = pgpu_rt_wtime();
  double per = (t1 - t0) / 200 * 1e6;
  /* 128 MiB moved per launch: at most ~5 TB/s, so at least ~25 us. */
  printf("info: 200 launches over 16M ints: %.1f us each (%.0f GB/s)\n", per,
         2.0 * 4 * big / (per * 1e-6) / 1e9);
  check(per > 20.0, "wtime waits for the kernels");
  pgpu_rt_to_host((uint8_t *)bout, 0);
  check(bout[big - 1] == 1, "big result");
  pgpu_rt_free((uint8_t *)bin);
  pgpu_rt_free((uint8_t *)bout);

  pgpu_rt_free((uint8_t *)in);
  pgpu_rt_free((uint8_t *)out);
  mgpuStreamSynchronize(stream);
  mgpuStreamDestroy(stream);
  pgpu_rt_device_synchronize();
}

int main(int argc, char **argv) {
  setvbuf(stdout, NULL, _IONBF, 0);
  pgpu_rt_init(argc, argv);
  int32_t mode = pgpu_rt_argi(0, 0);
  int32_t n = pgpu_rt_argi(1, 1000);
  int cuda = pgpu_rt_device_is_cuda();
  printf("device=%s n=%d\n", cuda ? "cuda" : "cpu", n);
  void *stream = NULL;
  void *scale = NULL;
  int32_t *in = NULL, *out = NULL;
  if (cuda && mode >= 1 && mode <= 5) {
    stream = mgpuStreamCreate();
    scale = mgpuModuleGetFunction(module_jit, "scale");
    in = (int32_t *)pgpu_rt_alloc(4 * (int64_t)n);
    out = (int32_t *)pgpu_rt_alloc(4 * (int64_t)n);
  }
  switch (mode) {
  case 0:
    if (cuda)
      cuda_case(n);
    else
      cpu_case(n);
    printf("%s\n", failures ? "FAILED" : "PASSED");
    return failures != 0;
  case 1: {
    launch_scale(scale, stream, in, out, n, 20);
    void *boom = mgpuModuleGetFunction(module_jit, "boom");
    void *d_out = pgpu_rt_to_device((uint8_t *)out, 1);
    void *args[1] = {&d_out};
    pgpu_rt_launch_site("boom", "trap.bsgp", 3, 9);
    mgpuLaunchKernel(boom, 1, 1, 1, 32, 1, 1, 0, stream, args, NULL, 1);
    printf("launched\n");
    pgpu_rt_to_host((uint8_t *)out, 0);
    printf("not reached\n");
    return 0;
  }
  case 2: {
    void *d_in = pgpu_rt_to_device((uint8_t *)in, 0);
    void *d_out = pgpu_rt_to_device((uint8_t *)out, 1);
    void *args[3] = {&d_in, &d_out, &n};
    pgpu_rt_launch_site("scale", "bad.bsgp", 5, 7);
    mgpuLaunchKernel(scale, 1, 1, 1, 4096, 1, 1, 0, stream, args, NULL, 3);
    printf("not reached\n");
    return 0;
  }
  case 3: {
    void *wild = mgpuModuleGetFunction(module_jit, "wild");
    void *d_out = pgpu_rt_to_device((uint8_t *)out, 1);
    void *args[1] = {&d_out};
    pgpu_rt_launch_site("wild", "wild.bsgp", 8, 1);
    mgpuLaunchKernel(wild, 1, 1, 1, 1, 1, 1, 0, stream, args, NULL, 1);
    printf("launched\n");
    pgpu_rt_wtime();
    printf("not reached\n");
    return 0;
  }
  case 4: {
    int32_t local[4];
    pgpu_rt_to_device((uint8_t *)local, 0);
    printf("%s\n", cuda ? "not reached" : "cpu: identity");
    return 0;
  }
  case 5: {
    void *boom = mgpuModuleGetFunction(module_jit, "boom");
    void *d_out = pgpu_rt_to_device((uint8_t *)out, 1);
    void *args[1] = {&d_out};
    mgpuLaunchKernel(boom, 1, 1, 1, 1, 1, 1, 0, stream, args, NULL, 1);
    pgpu_rt_device_synchronize();
    printf("not reached\n");
    return 0;
  }
  case 6:
    mgpuMemAlloc(64, NULL, 1);
    printf("not reached\n");
    return 0;
  case 7:
    mgpuModuleGetFunction(module_jit, "scale");
    printf("not reached\n");
    return 0;
  }
  return 2;
}
