/* runtime.h -- devices, arrays, CUDA (driver API + NVRTC), reference BLAS.
 *
 * Nothing here links against CUDA: libcuda.so.1, libnvrtc, libcublas, libcudnn and libopenblas
 * are opened with dlopen on first use, so the library builds and runs on machines with
 * no GPU, no driver or no toolkit; the GPU functions then fail with a clear reason
 * ("no CUDA driver (libcuda.so.1 not found)", "no CUDA device").
 * All functions return 0 / a pointer on success and -1 / NULL with the error set.
 * Sizes are in elements unless named *_bytes; times in seconds unless named *_ms.
 */
#ifndef TIR_RUNTIME_H
#define TIR_RUNTIME_H

#include <stddef.h>
#include <stdint.h>

#include "tir/dtype.h"

#define TIR_MAX_NDIM 8

typedef enum { TIR_DEV_CPU = 1, TIR_DEV_CUDA = 2 } tir_DeviceType;
typedef struct {
  int type; /* tir_DeviceType */
  int id;
} tir_Device;

/* ---- NDArray (ndarray.c) ---- */
typedef struct tir_NDArray {
  int refcount;
  tir_DType dtype;
  int ndim;
  int64_t shape[TIR_MAX_NDIM];
  tir_Device dev;
  void *data;    /* CPU: host memory (64-byte aligned) */
  uint64_t dptr; /* CUDA: device pointer (CUdeviceptr) */
  size_t nbytes;
  /* Memory owned by someone else (a DLPack import): released by calling owner_free(owner)
   * instead of freeing data/dptr. */
  void (*owner_free)(void *owner);
  void *owner;
} tir_NDArray;

/* Uninitialized array (CPU memory is filled with a poison pattern in debug use: NaN for
 * floats, 0x5a bytes for ints, so unwritten outputs show). */
tir_NDArray *tir_nd_empty(const int64_t *shape, int ndim, tir_DType dtype, tir_Device dev);
void tir_nd_retain(tir_NDArray *a);
void tir_nd_release(tir_NDArray *a);
int64_t tir_nd_numel(const tir_NDArray *a);
/* A view of a's memory with another shape of as many elements (row-major, no copy): NHWC
 * activations as the [N*H*W, C] matrix of a 1x1 convolution.  The view holds a reference to a;
 * writes through either are seen by both.  NULL with a ValueError when the sizes differ. */
tir_NDArray *tir_nd_reshape(tir_NDArray *a, const int64_t *shape, int ndim);
/* Copies between any devices; shapes and dtypes must match. */
int tir_nd_copy(tir_NDArray *dst, const tir_NDArray *src);
/* A new array on dev with src's contents. */
tir_NDArray *tir_nd_to(const tir_NDArray *src, tir_Device dev);
/* Fills with uniform random values in [low, high] (integers) or [low, high) (floats),
 * rounded to the dtype; deterministic for a seed (splitmix64). */
int tir_nd_fill_random(tir_NDArray *a, uint64_t seed, double low, double high);
/* Default random range for a dtype: floats [-1, 1), int8 [-128, 127], uint8 [0, 255],
 * other ints [-100, 100], bool {0, 1}. */
void tir_nd_default_range(tir_DType t, double *low, double *high);
/* Element access on CPU arrays (flat row-major index), values as double / int64. */
double tir_nd_get_f(const tir_NDArray *a, int64_t flat);
int64_t tir_nd_get_i(const tir_NDArray *a, int64_t flat);
void tir_nd_set_f(tir_NDArray *a, int64_t flat, double v);
void tir_nd_set_i(tir_NDArray *a, int64_t flat, int64_t v);
/* Reads/writes element `flat` of raw memory of dtype t. */
double tir_load_scalar_f(const void *base, tir_DType t, int64_t flat);
int64_t tir_load_scalar_i(const void *base, tir_DType t, int64_t flat);
void tir_store_scalar_f(void *base, tir_DType t, int64_t flat, double v);
void tir_store_scalar_i(void *base, tir_DType t, int64_t flat, int64_t v);
/* The values as text in numpy's repr style (nd_format.c): nested brackets, one width for
 * all elements, large arrays (> 1000 elements) elided to 3 entries at each end of every
 * dimension.  indent: the column the text starts at (continuation lines align to it).
 * Device arrays are copied to the host first.  malloc'd; NULL with the error set when the
 * copy fails. */
char *tir_nd_format(const tir_NDArray *a, int indent);
/* .npy (format 1.0, little endian, C order). */
int tir_nd_save_npy(const tir_NDArray *a, const char *path);
tir_NDArray *tir_nd_load_npy(const char *path, tir_Device dev);

/* ---- CUDA launch limits (launch_limits.c) ----
 * CUDA C++ Programming Guide, compute capability table (5.0 .. 9.0): gridDim x <= 2^31-1,
 * y, z <= 65535; blockDim x, y <= 1024, z <= 64; at most 1024 threads per block. */
#define TIR_CUDA_MAX_THREADS_PER_BLOCK 1024
#define TIR_LAUNCH_DIM_UNKNOWN INT64_MIN /* a symbolic dimension: checked at launch */
extern const int64_t tir_cuda_max_grid[3], tir_cuda_max_block[3];
/* 0 when every known dimension is within the limits; otherwise sets an error of kind
 * err_kind (a tir_ErrorKind) from `who` naming the kernel, the axis and the limit, and
 * returns -1.  advise: append what to change in the schedule (at lowering). */
int tir_check_launch_dims(int err_kind, const char *who, const char *kernel, const int64_t grid[3],
                          const int64_t block[3], int advise);
/* A kernel calling the warp-wide builtin `op` (wmma_*, mma_*; NULL: none) must launch whole
 * warps of consecutive threadIdx.x lanes: blockDim.x a multiple of 32 (a warp is 32
 * consecutive linear thread ids, x fastest; CUDA C++ Programming Guide, "SIMT
 * Architecture"), so that y and z number whole warps.  0, or -1 with the error set. */
int tir_check_warp_launch(int err_kind, const char *who, const char *kernel, const char *op, const int64_t block[3]);
/* The most shared memory a thread block may use on compute capability sm (80 for sm_80, sm_90a
 * is 90), in bytes (the opt-in maximum: sm_80 163 KB, sm_86 / sm_89 99 KB, sm_90 227 KB; CUDA C++
 * Programming Guide, technical specifications per compute capability); 0 when sm is not in the
 * table.  TIR_CUDA_MAX_SHARED_ANY: the largest of the table (what an unknown target is held to). */
#define TIR_CUDA_MAX_SHARED_ANY (227 * 1024)
int64_t tir_cuda_max_shared_per_block(int sm);
/* 0 when `bytes` of shared memory a block fit compute capability sm (0 or an sm not in the table:
 * TIR_CUDA_MAX_SHARED_ANY); otherwise sets an error of kind err_kind from `who` naming the kernel,
 * the bytes, the limit and (region: the kernel's body, or NULL) its shared buffers with their
 * sizes and offsets, and returns -1. */
struct tir_Node;
int tir_check_shared_memory(int err_kind, const char *who, const char *kernel, const struct tir_Node *region, int64_t bytes,
                            int sm);

/* ---- CUDA driver (cuda.c) ---- */
typedef struct {
  char name[256];
  int cc_major, cc_minor;
  int sm_count;
  int max_threads_per_block;
  int smem_per_block_optin; /* bytes */
  int l2_bytes;
  int clock_khz;
} tir_DeviceInfo;

/* 1 when the driver loads and at least one device exists; otherwise 0 and why. */
int tir_cuda_available(char *why, size_t cap);
int tir_cuda_device_count(void);
/* cuDriverGetVersion's number (e.g. 13000 for CUDA 13.0), or 0 without a usable driver. */
int tir_cuda_driver_version(void);
int tir_cuda_device_info(int dev, tir_DeviceInfo *out);
/* Makes dev's primary context current (retained once per process). */
int tir_cuda_set_device(int dev);
int tir_cuda_malloc(int dev, size_t bytes, uint64_t *dptr);
void tir_cuda_free(int dev, uint64_t dptr);
int tir_cuda_memcpy_htod(int dev, uint64_t dst, const void *src, size_t bytes);
int tir_cuda_memcpy_dtoh(int dev, void *dst, uint64_t src, size_t bytes);
int tir_cuda_memcpy_dtod(int dev, uint64_t dst, uint64_t src, size_t bytes);
/* bytes zero bytes at dst (cuMemsetD8; ordered with the default stream's launches). */
int tir_cuda_memset_zero(int dev, uint64_t dst, size_t bytes);
int tir_cuda_synchronize(int dev);

typedef struct tir_CudaModule tir_CudaModule;
/* Loads a CUBIN or PTX image on dev. */
tir_CudaModule *tir_cuda_module_load(int dev, const void *image, size_t len);
void tir_cuda_module_free(tir_CudaModule *m);
/* Function handle (opaque CUfunction) of a kernel in the module. */
void *tir_cuda_module_function(tir_CudaModule *m, const char *name);
/* Raises the kernel's dynamic shared memory limit (needed above 48 KB). */
int tir_cuda_func_set_max_dynamic_smem(void *fn, int bytes);
/* Registers, local memory (spill/stack) and static shared memory of a kernel. */
int tir_cuda_func_attributes(void *fn, int *regs, int *local_bytes, int *static_smem_bytes);
/* cuLaunchKernel on the default stream.  A thread-block cluster kernel needs nothing more: its
 * cluster shape is compiled in (__cluster_dims__), the grid must be whole clusters. */
int tir_cuda_launch(void *fn, const unsigned grid[3], const unsigned block[3], unsigned dyn_smem, void **args);
/* Encodes the 128-byte CUtensorMap (64-byte aligned `map`) of a compact row-major tensor at
 * device address dptr (CUDA Driver API cuTensorMapEncodeTiled; dims / box of d outermost first,
 * element strides 1, no interleave, L2 promotion 128 B, out-of-bounds elements zero).  The
 * driver's rules (16-byte aligned address and strides, ...) are checked here first so that the
 * error names them.  -1 with the error set (also when the driver lacks the entry point). */
struct tir_TmaDesc;
int tir_cuda_tensor_map_encode(void *map, const struct tir_TmaDesc *desc, uint64_t dptr);
/* Times `fn()` launches with CUDA events: `number` launches per sample, median of
 * `repeat` samples, after `warmup` launches.  launch(ctx) returns 0 on success. */
int tir_cuda_time(int dev, int (*launch)(void *ctx), void *ctx, int warmup, int number, int repeat,
                  double *median_s, double *samples_s);

/* ---- NVRTC (nvrtc.c) ---- */
int tir_nvrtc_available(char *why, size_t cap);
/* Compiles CUDA C for `arch` ("sm_90", "sm_80", "sm_90a").  Outputs are malloc'd:
 * ptx (NUL-terminated), cubin (len bytes), log.  Extra options may be NULL. */
int tir_nvrtc_compile(const char *src, const char *name, const char *arch, const char *const *opts, int n_opts,
                      char **ptx, char **cubin, size_t *cubin_len, char **log);
int tir_nvrtc_version(int *major, int *minor);

/* ---- references (blas.c) ---- */
/* C[m,n] = sum_k A[m,k] B[k,n] in float64 on the host (row-major, dense).  A, B, C are
 * CPU arrays of any numeric dtype; C is float64.  OpenBLAS (cblas_dgemm, via dlopen)
 * when present, else a blocked C loop.  trans_a/trans_b: A is stored [k,m] / B [n,k]. */
int tir_ref_gemm_host(const tir_NDArray *A, const tir_NDArray *B, tir_NDArray *C, int trans_a, int trans_b);
/* 1 when OpenBLAS was found (reported by tir.testing). */
int tir_openblas_available(void);

/* cuBLAS GEMM on device arrays, row-major semantics: C[m,n] = alpha*A[m,k]@B[k,n] + beta*C
 * (transposes as above).  Types: f32 (compute f32 pedantic: no TF32), f16 inputs with
 * f16 or f32 output (compute f32), f64, int8 -> int32.  Returns -1 (error) without cuBLAS. */
int tir_cublas_available(char *why, size_t cap);
int tir_cublas_gemm(const tir_NDArray *A, const tir_NDArray *B, tir_NDArray *C, int trans_a, int trans_b,
                    double alpha, double beta);
/* cuBLASLt (dlopen'd libcublasLt.so.13/.12): C [M, N] int32 = A [M, K] int8 @ B [N, K]^T int8
 * (cublasLtMatmul, CUDA_R_8I in, CUDA_R_32I out, COMPUTE_32I, the "TN" layout), on the
 * default stream, asynchronous; a 32 MB workspace per device.  available: 0 and why. */
int tir_cublaslt_available(char *why, size_t cap);
int tir_cublaslt_gemm_int8(const tir_NDArray *A, const tir_NDArray *B, tir_NDArray *C);
/* D [M, N] = relu?(A [M, K] @ B [N, K]^T + bias [N]?) through cuBLASLt (CUBLASLT_EPILOGUE_RELU_BIAS, _BIAS, _RELU,
 * _DEFAULT); A, B, bias, D all float16 or all bfloat16, fp32 compute; bias may be NULL.  Errors: TIR_ERR_TYPE / _VALUE
 * for dtypes and shapes, TIR_ERR_CUDA when cuBLASLt is missing or fails. */
int tir_cublaslt_gemm_epilogue(const tir_NDArray *A, const tir_NDArray *B, const tir_NDArray *bias, tir_NDArray *D, int relu);

/* ---- cuDNN 9 (cudnn.c; dlopen'd: $TIRLUA_CUDNN, else libcudnn.so.9 on the loader's path, else a
 * Python site-packages nvidia/cudnn/lib) ----
 * available: 1 and the library's path in why, or 0 and why not.  version: cudnnGetVersion()
 * (e.g. 90100), 0 without cuDNN. */
int tir_cudnn_available(char *why, size_t cap);
int tir_cudnn_version(void);
/* A conv2d forward plan: x [N, H, W, C], w [K, R, S, C / groups] (cuDNN's NHWC filter, KRSC),
 * y [N, P, Q, K], all float16 on one CUDA device; fp32 accumulation (compute type FLOAT,
 * tensor-op math); cross-correlation as every DL framework's conv.  stride / pad (symmetric) /
 * dilation: {h, w}.  The plan searches cuDNN (opts->path, NULL: defaults) and keeps the fastest
 * candidate, every one run and timed with CUDA events (median of 3 samples of 5 runs) on the
 * given arrays (y is overwritten):
 *   TIR_CUDNN_PATH_BEST: the backend engine configurations and the legacy FindEx algorithms;
 *   _BACKEND: the backend (graph) API only: engine heuristics mode A then the fallback list,
 *     one execution plan per configuration (the way PyTorch's cudnn benchmark mode searches);
 *   _LEGACY_FIND: cudnnFindConvolutionForwardAlgorithm and the first algorithm it ranks;
 *   _LEGACY_FIND_EX: cudnnFindConvolutionForwardAlgorithmEx with a workspace of
 *     workspace_limit bytes, the fastest algorithm by this timer.
 * Backend engines whose numerical notes say they convert inputs down or reduce in reduced
 * precision are excluded (fp32 accumulation is the contract), and runtime-compiled ones unless
 * opts->rtc (cuDNN compiles them with NVRTC: seconds each).  max_configs: backend configurations
 * timed at most (0: 32); workspace_limit: bytes (0: 512 MiB; the search allocates that much).
 * The chosen one's name ("eng<global index> TILE_SIZE=... STAGES=..." for an engine
 * configuration, "IMPLICIT_PRECOMP_GEMM", ... for a legacy algorithm) goes to algo_name, and
 * tir_cudnn_conv2d_candidates lists everything tried.  Its workspace is allocated for the plan.
 * Errors: CudaError without cuDNN, when a cuDNN call outside the per-candidate search fails (its
 * status string), or when no candidate ran (their notes); ValueError / TypeError for shapes,
 * devices, dtypes and options. */
enum { TIR_CUDNN_PATH_BEST = 0, TIR_CUDNN_PATH_BACKEND = 1, TIR_CUDNN_PATH_LEGACY_FIND = 2, TIR_CUDNN_PATH_LEGACY_FIND_EX = 3 };
typedef struct {
  int path;               /* TIR_CUDNN_PATH_* */
  int max_configs;        /* 0: 32 */
  int rtc;                /* also runtime-compiled backend engines */
  size_t workspace_limit; /* bytes; 0: 512 MiB */
} tir_CudnnOptions;
/* One candidate the search met. */
typedef struct {
  const char *path;      /* "backend", "legacy FindEx", "legacy Find" */
  const char *heuristic; /* backend: "A" or "fallback" (the list it came from), else NULL */
  int rank;              /* its position in that list (1 = ranked first), 0 for a note about the list itself */
  char name[160];        /* as tir_cudnn_conv2d_algo; "" for a note about the search itself */
  double ms;             /* this timer's median; < 0: not run (see note) */
  float find_ms;         /* legacy: cuDNN's own time in Find / FindEx */
  size_t workspace;      /* bytes */
  char note[200];        /* the engine's notes (tensor_core, ...), or why it was excluded / failed */
} tir_CudnnCandidate;
typedef struct tir_CudnnConv2d tir_CudnnConv2d;
tir_CudnnConv2d *tir_cudnn_conv2d_plan(const tir_NDArray *x, const tir_NDArray *w, const tir_NDArray *y, const int stride[2],
                                       const int pad[2], const int dilation[2], int groups, const tir_CudnnOptions *opts,
                                       char *algo_name, size_t cap);
/* y = conv2d(x, w) with the plan (arrays of the plan's shapes; a backend plan also needs their
 * addresses aligned as the planning arrays' were, up to 16 bytes); asynchronous on the default stream. */
int tir_cudnn_conv2d_run(tir_CudnnConv2d *c, const tir_NDArray *x, const tir_NDArray *w, tir_NDArray *y);
const char *tir_cudnn_conv2d_algo(const tir_CudnnConv2d *c);
const char *tir_cudnn_conv2d_path(const tir_CudnnConv2d *c); /* the chosen candidate's path */
int tir_cudnn_conv2d_uses_tensor_ops(const tir_CudnnConv2d *c);
float tir_cudnn_conv2d_find_ms(const tir_CudnnConv2d *c); /* the chosen candidate's time in the search (ms, this timer) */
size_t tir_cudnn_conv2d_workspace(const tir_CudnnConv2d *c);
/* the candidates in search order; the array lives as long as the plan */
int tir_cudnn_conv2d_candidates(const tir_CudnnConv2d *c, const tir_CudnnCandidate **out);
void tir_cudnn_conv2d_free(tir_CudnnConv2d *c);

#endif
