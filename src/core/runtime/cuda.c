/* cuda.c -- the CUDA driver API through dlopen: devices, memory, modules, launches,
 * event timing.  Each failing call reports the call, the driver's error name and text. */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tir/error.h"
#include "tir/runtime.h"
#include "tir/tma.h"

/* Attribute numbers from cuda.h (CUdevice_attribute, CUfunction_attribute). */
enum {
  ATTR_MAX_THREADS_PER_BLOCK = 1,
  ATTR_CLOCK_RATE = 13,
  ATTR_SM_COUNT = 16,
  ATTR_L2_CACHE_SIZE = 38,
  ATTR_CC_MAJOR = 75,
  ATTR_CC_MINOR = 76,
  ATTR_SMEM_OPTIN = 97,
  FUNC_ATTR_SHARED_SIZE_BYTES = 1,
  FUNC_ATTR_LOCAL_SIZE_BYTES = 3,
  FUNC_ATTR_NUM_REGS = 4,
  FUNC_ATTR_MAX_DYNAMIC_SHARED = 8
};

static struct {
  int tried, ok;
  char why[256];
  void *lib;
#define F(ret, name, sym, params) ret(*name) params;
#include "cuda_fns.def"
#undef F
  /* CUDA 12+ entry points, looked up without failing the load on older drivers */
  int (*cuTensorMapEncodeTiled)(void *map, int dtype, unsigned rank, void *addr, const uint64_t *dims,
                                const uint64_t *strides, const unsigned *box, const unsigned *elem_strides, int interleave,
                                int swizzle, int l2_promotion, int oob_fill);
  int (*cuTensorMapEncodeIm2col)(void *map, int dtype, unsigned rank, void *addr, const uint64_t *dims, const uint64_t *strides,
                                 const int *lower, const int *upper, unsigned channels, unsigned pixels, const unsigned *elem_strides,
                                 int interleave, int swizzle, int l2_promotion, int oob_fill);
  int n_devices;
  void *ctx[64];
  /* each device's attributes, read once: they do not change while the process runs, and a
   * launch may ask for them (a cluster kernel's compute-capability check) */
  tir_DeviceInfo info[64];
  int have_info[64];
} D;

static int load_driver(void) {
  if (D.tried) return D.ok;
  D.tried = 1;
  const char *names[] = {"libcuda.so.1", "libcuda.so", NULL};
  for (int i = 0; names[i] && !D.lib; i++) D.lib = dlopen(names[i], RTLD_NOW | RTLD_GLOBAL);
  if (!D.lib) {
    snprintf(D.why, sizeof D.why, "no CUDA driver (libcuda.so.1 not found)");
    return 0;
  }
#define F(ret, name, sym, params)                                                  \
  D.name = (ret(*) params)dlsym(D.lib, sym);                                       \
  if (!D.name) {                                                                   \
    snprintf(D.why, sizeof D.why, "CUDA driver lacks %s (driver too old?)", sym);  \
    return 0;                                                                      \
  }
#include "cuda_fns.def"
#undef F
  *(void **)&D.cuTensorMapEncodeTiled = dlsym(D.lib, "cuTensorMapEncodeTiled");
  *(void **)&D.cuTensorMapEncodeIm2col = dlsym(D.lib, "cuTensorMapEncodeIm2col");
  int rc = D.cuInit(0);
  if (rc != 0) {
    const char *name = "?";
    if (D.cuGetErrorName) D.cuGetErrorName(rc, &name);
    snprintf(D.why, sizeof D.why, "cuInit failed: %s (%d); no usable CUDA device", name, rc);
    return 0;
  }
  if (D.cuDeviceGetCount(&D.n_devices) != 0 || D.n_devices <= 0) {
    snprintf(D.why, sizeof D.why, "no CUDA device");
    return 0;
  }
  D.ok = 1;
  return 1;
}

static int cu_fail(const char *call, int rc) {
  const char *name = "?", *text = "";
  if (D.cuGetErrorName) D.cuGetErrorName(rc, &name);
  if (D.cuGetErrorString) D.cuGetErrorString(rc, &text);
  return tir_error_set(TIR_ERR_CUDA, call, "%s failed: %s (%d): %s", call, name ? name : "?", rc, text ? text : "");
}

#define CU(call, expr)                 \
  do {                                 \
    int rc_ = (expr);                  \
    if (rc_ != 0) return cu_fail(call, rc_); \
  } while (0)

static int need_driver(void) {
  if (load_driver()) return 0;
  return tir_error_set(TIR_ERR_CUDA, "cuda", "%s", D.why);
}

int tir_cuda_available(char *why, size_t cap) {
  int ok = load_driver();
  if (!ok && why) snprintf(why, cap, "%s", D.why);
  return ok;
}

int tir_cuda_device_count(void) { return load_driver() ? D.n_devices : 0; }

int tir_cuda_driver_version(void) {
  int v = 0;
  if (!load_driver() || D.cuDriverGetVersion(&v) != 0) return 0;
  return v;
}

int tir_cuda_set_device(int dev) {
  if (need_driver()) return -1;
  if (dev < 0 || dev >= D.n_devices || dev >= 64)
    return tir_error_set(TIR_ERR_CUDA, "cuda", "device %d does not exist (%d CUDA device(s))", dev, D.n_devices);
  if (!D.ctx[dev]) {
    int d;
    CU("cuDeviceGet", D.cuDeviceGet(&d, dev));
    CU("cuDevicePrimaryCtxRetain", D.cuDevicePrimaryCtxRetain(&D.ctx[dev], d));
  }
  CU("cuCtxSetCurrent", D.cuCtxSetCurrent(D.ctx[dev]));
  return 0;
}

int tir_cuda_device_info(int dev, tir_DeviceInfo *out) {
  if (tir_cuda_set_device(dev)) return -1;
  if (D.have_info[dev]) {
    *out = D.info[dev];
    return 0;
  }
  memset(out, 0, sizeof *out);
  int d;
  CU("cuDeviceGet", D.cuDeviceGet(&d, dev));
  CU("cuDeviceGetName", D.cuDeviceGetName(out->name, (int)sizeof out->name, d));
  CU("cuDeviceGetAttribute", D.cuDeviceGetAttribute(&out->cc_major, ATTR_CC_MAJOR, d));
  CU("cuDeviceGetAttribute", D.cuDeviceGetAttribute(&out->cc_minor, ATTR_CC_MINOR, d));
  CU("cuDeviceGetAttribute", D.cuDeviceGetAttribute(&out->sm_count, ATTR_SM_COUNT, d));
  CU("cuDeviceGetAttribute", D.cuDeviceGetAttribute(&out->max_threads_per_block, ATTR_MAX_THREADS_PER_BLOCK, d));
  CU("cuDeviceGetAttribute", D.cuDeviceGetAttribute(&out->smem_per_block_optin, ATTR_SMEM_OPTIN, d));
  CU("cuDeviceGetAttribute", D.cuDeviceGetAttribute(&out->l2_bytes, ATTR_L2_CACHE_SIZE, d));
  CU("cuDeviceGetAttribute", D.cuDeviceGetAttribute(&out->clock_khz, ATTR_CLOCK_RATE, d));
  D.info[dev] = *out;
  D.have_info[dev] = 1;
  return 0;
}

int tir_cuda_malloc(int dev, size_t bytes, uint64_t *dptr) {
  if (tir_cuda_set_device(dev)) return -1;
  CU("cuMemAlloc", D.cuMemAlloc(dptr, bytes ? bytes : 1));
  return 0;
}

void tir_cuda_free(int dev, uint64_t dptr) {
  if (!D.ok || !dptr) return;
  if (tir_cuda_set_device(dev) == 0) D.cuMemFree(dptr);
}

int tir_cuda_memcpy_htod(int dev, uint64_t dst, const void *src, size_t bytes) {
  if (tir_cuda_set_device(dev)) return -1;
  CU("cuMemcpyHtoD", D.cuMemcpyHtoD(dst, src, bytes));
  return 0;
}

int tir_cuda_memcpy_dtoh(int dev, void *dst, uint64_t src, size_t bytes) {
  if (tir_cuda_set_device(dev)) return -1;
  CU("cuMemcpyDtoH", D.cuMemcpyDtoH(dst, src, bytes));
  return 0;
}

int tir_cuda_memcpy_dtod(int dev, uint64_t dst, uint64_t src, size_t bytes) {
  if (tir_cuda_set_device(dev)) return -1;
  CU("cuMemcpyDtoD", D.cuMemcpyDtoD(dst, src, bytes));
  return 0;
}

int tir_cuda_memset_zero(int dev, uint64_t dst, size_t bytes) {
  if (tir_cuda_set_device(dev)) return -1;
  CU("cuMemsetD8", D.cuMemsetD8(dst, 0, bytes));
  return 0;
}

int tir_cuda_synchronize(int dev) {
  if (tir_cuda_set_device(dev)) return -1;
  CU("cuCtxSynchronize", D.cuCtxSynchronize());
  return 0;
}

struct tir_CudaModule {
  int dev;
  void *mod;
};

tir_CudaModule *tir_cuda_module_load(int dev, const void *image, size_t len) {
  (void)len;
  if (tir_cuda_set_device(dev)) return NULL;
  void *mod = NULL;
  int rc = D.cuModuleLoadData(&mod, image);
  if (rc != 0) {
    cu_fail("cuModuleLoadData", rc);
    return NULL;
  }
  tir_CudaModule *m = calloc(1, sizeof *m);
  m->dev = dev;
  m->mod = mod;
  return m;
}

void tir_cuda_module_free(tir_CudaModule *m) {
  if (!m) return;
  if (D.ok && tir_cuda_set_device(m->dev) == 0) D.cuModuleUnload(m->mod);
  free(m);
}

void *tir_cuda_module_function(tir_CudaModule *m, const char *name) {
  void *fn = NULL;
  int rc = D.cuModuleGetFunction(&fn, m->mod, name);
  if (rc != 0) {
    cu_fail("cuModuleGetFunction", rc);
    return NULL;
  }
  return fn;
}

int tir_cuda_func_set_max_dynamic_smem(void *fn, int bytes) {
  CU("cuFuncSetAttribute", D.cuFuncSetAttribute(fn, FUNC_ATTR_MAX_DYNAMIC_SHARED, bytes));
  return 0;
}

int tir_cuda_func_attributes(void *fn, int *regs, int *local_bytes, int *static_smem_bytes) {
  CU("cuFuncGetAttribute", D.cuFuncGetAttribute(regs, FUNC_ATTR_NUM_REGS, fn));
  CU("cuFuncGetAttribute", D.cuFuncGetAttribute(local_bytes, FUNC_ATTR_LOCAL_SIZE_BYTES, fn));
  CU("cuFuncGetAttribute", D.cuFuncGetAttribute(static_smem_bytes, FUNC_ATTR_SHARED_SIZE_BYTES, fn));
  return 0;
}

/* A cluster kernel carries its cluster shape in its code (codegen's __cluster_dims__, PTX
 * .reqnctapercluster), so it launches like any other (CUDA C++ Programming Guide, thread block
 * clusters: a compile-time cluster size with the classic launch). */
int tir_cuda_launch(void *fn, const unsigned grid[3], const unsigned block[3], unsigned dyn_smem, void **args) {
  CU("cuLaunchKernel",
     D.cuLaunchKernel(fn, grid[0], grid[1], grid[2], block[0], block[1], block[2], dyn_smem, NULL, args, NULL));
  return 0;
}

/* The parts both encoders share (fn names the driver call): d's dims in CUDA's order (innermost
 * first), the byte strides of dims 1.. (multiples of 16), the address's 16-byte alignment, the
 * swizzle's enum; -1 with the error set. */
static int map_layout(const char *fn, const tir_TmaDesc *d, uint64_t dptr, uint64_t *dims, uint64_t *strides, int *sw) {
  char why[256];
  if (tir_tma_desc_check(d, why, sizeof why)) return tir_error_set(TIR_ERR_CUDA, fn, "%s", why);
  int es = tir_dtype_bytes(d->dtype);
  uint64_t stride = (uint64_t)es;
  for (int i = 0; i < d->rank; i++) {
    int src = d->rank - 1 - i;
    dims[i] = (uint64_t)d->dims[src];
    stride *= (uint64_t)d->dims[src];
    if (i + 1 < d->rank) {
      strides[i] = stride;
      if (stride % 16)
        return tir_error_set(TIR_ERR_CUDA, fn, "a TMA tensor's row strides must be multiples of 16 bytes; dimension %d's is %llu bytes (pad the "
                             "inner dimension to a multiple of %d elements)", src - 1, (unsigned long long)stride, 16 / es);
    }
  }
  if (dptr % 16)
    return tir_error_set(TIR_ERR_CUDA, fn, "a TMA tensor's address must be 16-byte aligned (0x%llx)", (unsigned long long)dptr);
  *sw = d->swizzle == 32 ? 1 : d->swizzle == 64 ? 2 : d->swizzle == 128 ? 3 : 0;
  return 0;
}

/* An im2col tensor map (cuTensorMapEncodeIm2col; tma.h): the corners and traversal strides of the
 * spatial dims in CUDA's order (innermost first), element stride 1 for C and N. */
static int encode_im2col(void *map, const tir_TmaDesc *d, uint64_t dptr) {
  static const char *fn = "cuTensorMapEncodeIm2col";
  if (!D.cuTensorMapEncodeIm2col) return tir_error_set(TIR_ERR_CUDA, fn, "the CUDA driver lacks cuTensorMapEncodeIm2col (TMA needs CUDA 12+)");
  uint64_t dims[TIR_TMA_MAX_RANK], strides[TIR_TMA_MAX_RANK];
  int sw, ns = d->rank - 2;
  if (map_layout(fn, d, dptr, dims, strides, &sw)) return -1;
  unsigned estr[TIR_TMA_MAX_RANK];
  int lower[TIR_TMA_MAX_RANK], upper[TIR_TMA_MAX_RANK];
  for (int i = 0; i < d->rank; i++) estr[i] = 1;
  for (int i = 0; i < ns; i++) { /* CUDA's spatial dim i (innermost first) = tirlua's ns - 1 - i */
    lower[i] = (int)d->lower[ns - 1 - i];
    upper[i] = (int)d->upper[ns - 1 - i];
    estr[1 + i] = (unsigned)d->estride[ns - 1 - i];
  }
  CU(fn, D.cuTensorMapEncodeIm2col(map, tir_tma_cuda_dtype(d->dtype), (unsigned)d->rank, (void *)(uintptr_t)dptr, dims, strides, lower, upper,
                                   (unsigned)d->box[1], (unsigned)d->box[0], estr, 0, sw, 2, 0));
  return 0;
}

int tir_cuda_tensor_map_encode(void *map, const tir_TmaDesc *d, uint64_t dptr) {
  if (need_driver()) return -1;
  if (d->im2col) return encode_im2col(map, d, dptr);
  static const char *fn = "cuTensorMapEncodeTiled";
  if (!D.cuTensorMapEncodeTiled) return tir_error_set(TIR_ERR_CUDA, fn, "the CUDA driver lacks cuTensorMapEncodeTiled (TMA needs CUDA 12+)");
  uint64_t dims[TIR_TMA_MAX_RANK], strides[TIR_TMA_MAX_RANK];
  int sw;
  if (map_layout(fn, d, dptr, dims, strides, &sw)) return -1;
  unsigned box[TIR_TMA_MAX_RANK], estr[TIR_TMA_MAX_RANK];
  for (int i = 0; i < d->rank; i++) { /* CUDA's order: innermost first */
    box[i] = (unsigned)d->box[d->rank - 1 - i];
    estr[i] = 1;
  }
  CU(fn, D.cuTensorMapEncodeTiled(map, tir_tma_cuda_dtype(d->dtype), (unsigned)d->rank, (void *)(uintptr_t)dptr, dims, strides, box, estr, 0,
                                  sw, 2, 0));
  return 0;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

int tir_cuda_time(int dev, int (*launch)(void *ctx), void *ctx, int warmup, int number, int repeat,
                  double *median_s, double *samples_s) {
  if (tir_cuda_set_device(dev)) return -1;
  if (number < 1) number = 1;
  if (repeat < 1) repeat = 1;
  for (int i = 0; i < warmup; i++)
    if (launch(ctx)) return -1;
  CU("cuCtxSynchronize", D.cuCtxSynchronize());
  void *e0 = NULL, *e1 = NULL;
  CU("cuEventCreate", D.cuEventCreate(&e0, 0));
  int rc = D.cuEventCreate(&e1, 0);
  if (rc) {
    D.cuEventDestroy(e0);
    return cu_fail("cuEventCreate", rc);
  }
  double *s = calloc((size_t)repeat, sizeof *s);
  int status = 0;
  for (int r = 0; r < repeat && !status; r++) {
    float ms = 0;
    if ((rc = D.cuEventRecord(e0, NULL))) status = cu_fail("cuEventRecord", rc);
    for (int i = 0; i < number && !status; i++)
      if (launch(ctx)) status = -1;
    if (!status && (rc = D.cuEventRecord(e1, NULL))) status = cu_fail("cuEventRecord", rc);
    if (!status && (rc = D.cuEventSynchronize(e1))) status = cu_fail("cuEventSynchronize", rc);
    if (!status && (rc = D.cuEventElapsedTime(&ms, e0, e1))) status = cu_fail("cuEventElapsedTime", rc);
    s[r] = ms * 1e-3 / number;
    if (samples_s) samples_s[r] = s[r];
  }
  D.cuEventDestroy(e0);
  D.cuEventDestroy(e1);
  if (!status) {
    qsort(s, (size_t)repeat, sizeof *s, cmp_double);
    *median_s = repeat % 2 ? s[repeat / 2] : 0.5 * (s[repeat / 2 - 1] + s[repeat / 2]);
  }
  free(s);
  return status;
}
