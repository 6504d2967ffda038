/* blas.c -- reference GEMMs: OpenBLAS on the host (cblas_dgemm, float64) and cuBLAS on
 * the device (cublasGemmEx), both opened with dlopen.  Row-major semantics throughout:
 * cuBLAS is column-major, so C = A @ B is computed as C^T = B^T @ A^T. */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tir/error.h"
#include "tir/runtime.h"

/* ---- OpenBLAS ---- */
typedef void (*cblas_dgemm_t)(int order, int ta, int tb, int m, int n, int k, double alpha, const double *a, int lda,
                              const double *b, int ldb, double beta, double *c, int ldc);
enum { CBLAS_ROW_MAJOR = 101, CBLAS_NO_TRANS = 111, CBLAS_TRANS = 112 };

static cblas_dgemm_t load_openblas(void) {
  static int tried = 0;
  static cblas_dgemm_t fn = NULL;
  if (tried) return fn;
  tried = 1;
  const char *names[] = {"libopenblas.so.0", "libopenblas.so", "libblas.so.3", NULL};
  for (int i = 0; names[i] && !fn; i++) {
    void *lib = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
    if (lib) fn = (cblas_dgemm_t)dlsym(lib, "cblas_dgemm");
  }
  return fn;
}

int tir_openblas_available(void) { return load_openblas() != NULL; }

static double *to_f64(const tir_NDArray *a) {
  int64_t n = tir_nd_numel(a);
  double *d = malloc(sizeof(double) * (size_t)(n ? n : 1));
  for (int64_t i = 0; i < n; i++) d[i] = tir_nd_get_f(a, i);
  return d;
}

int tir_ref_gemm_host(const tir_NDArray *A, const tir_NDArray *B, tir_NDArray *C, int trans_a, int trans_b) {
  if (A->dev.type != TIR_DEV_CPU || B->dev.type != TIR_DEV_CPU || C->dev.type != TIR_DEV_CPU)
    return tir_error_set(TIR_ERR_VALUE, "ref_gemm", "reference GEMM needs host arrays");
  if (A->ndim != 2 || B->ndim != 2 || C->ndim != 2)
    return tir_error_set(TIR_ERR_VALUE, "ref_gemm", "reference GEMM needs 2-D arrays");
  int64_t m = trans_a ? A->shape[1] : A->shape[0], k = trans_a ? A->shape[0] : A->shape[1];
  int64_t kb = trans_b ? B->shape[1] : B->shape[0], n = trans_b ? B->shape[0] : B->shape[1];
  if (k != kb || C->shape[0] != m || C->shape[1] != n)
    return tir_error_set(TIR_ERR_VALUE, "ref_gemm", "shapes do not match: A %lldx%lld, B %lldx%lld, C %lldx%lld",
                         (long long)A->shape[0], (long long)A->shape[1], (long long)B->shape[0], (long long)B->shape[1],
                         (long long)C->shape[0], (long long)C->shape[1]);
  if (!(C->dtype.code == TIR_DT_FLOAT && C->dtype.bits == 64 && C->dtype.lanes == 1))
    return tir_error_set(TIR_ERR_TYPE, "ref_gemm", "reference output must be float64");
  double *a = to_f64(A), *b = to_f64(B), *c = (double *)C->data;
  cblas_dgemm_t gemm = load_openblas();
  if (gemm && m < (1ll << 31) && n < (1ll << 31) && k < (1ll << 31)) {
    gemm(CBLAS_ROW_MAJOR, trans_a ? CBLAS_TRANS : CBLAS_NO_TRANS, trans_b ? CBLAS_TRANS : CBLAS_NO_TRANS, (int)m, (int)n,
         (int)k, 1.0, a, (int)A->shape[1], b, (int)B->shape[1], 0.0, c, (int)n);
  } else {
    /* i-k-j loop order: unit stride over B and C rows */
    memset(c, 0, sizeof(double) * (size_t)(m * n));
    for (int64_t i = 0; i < m; i++)
      for (int64_t p = 0; p < k; p++) {
        double av = trans_a ? a[p * m + i] : a[i * k + p];
        for (int64_t j = 0; j < n; j++) c[i * n + j] += av * (trans_b ? b[j * k + p] : b[p * n + j]);
      }
  }
  free(a);
  free(b);
  return 0;
}

/* ---- cuBLAS ---- */
typedef int (*cublasCreate_t)(void **h);
typedef int (*cublasGemmEx_t)(void *h, int ta, int tb, int m, int n, int k, const void *alpha, const void *A, int at,
                              int lda, const void *B, int bt, int ldb, const void *beta, void *C, int ct, int ldc,
                              int compute, int algo);
enum { CUDA_R_32F = 0, CUDA_R_64F = 1, CUDA_R_16F = 2, CUDA_R_8I = 3, CUDA_R_32I = 10, CUDA_R_16BF = 14 };
enum { CUBLAS_COMPUTE_32F_PEDANTIC = 69, CUBLAS_COMPUTE_32F = 68, CUBLAS_COMPUTE_64F = 70, CUBLAS_COMPUTE_32I = 72 };
enum { CUBLAS_GEMM_DEFAULT = -1 };

static struct {
  int tried;
  char why[256];
  cublasCreate_t create;
  cublasGemmEx_t gemm;
  void *handle[64];
} B;

static int load_cublas(void) {
  if (B.tried) return B.gemm != NULL;
  B.tried = 1;
  void *lib = NULL;
  const char *names[] = {"libcublas.so.13", "libcublas.so.12", "libcublas.so", "/usr/local/cuda/lib64/libcublas.so.13",
                         "/usr/local/cuda/lib64/libcublas.so.12", "/usr/local/cuda/lib64/libcublas.so", NULL};
  for (int i = 0; names[i] && !lib; i++) lib = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    snprintf(B.why, sizeof B.why, "cuBLAS not found (libcublas.so)");
    return 0;
  }
  B.create = (cublasCreate_t)dlsym(lib, "cublasCreate_v2");
  B.gemm = (cublasGemmEx_t)dlsym(lib, "cublasGemmEx");
  if (!B.create || !B.gemm) {
    snprintf(B.why, sizeof B.why, "cuBLAS library lacks cublasCreate_v2/cublasGemmEx");
    B.gemm = NULL;
    return 0;
  }
  return 1;
}

int tir_cublas_available(char *why, size_t cap) {
  int ok = load_cublas();
  if (!ok && why) snprintf(why, cap, "%s", B.why);
  return ok;
}

static int cuda_type(tir_DType t) {
  if (t.lanes != 1) return -1;
  if (t.code == TIR_DT_FLOAT) return t.bits == 16 ? CUDA_R_16F : t.bits == 32 ? CUDA_R_32F : CUDA_R_64F;
  if (t.code == TIR_DT_BFLOAT) return CUDA_R_16BF;
  if (t.code == TIR_DT_INT && t.bits == 8) return CUDA_R_8I;
  if (t.code == TIR_DT_INT && t.bits == 32) return CUDA_R_32I;
  return -1;
}

int tir_cublas_gemm(const tir_NDArray *A, const tir_NDArray *Bm, tir_NDArray *C, int trans_a, int trans_b, double alpha,
                    double beta) {
  if (!load_cublas()) return tir_error_set(TIR_ERR_CUDA, "cublas", "%s", B.why);
  if (A->dev.type != TIR_DEV_CUDA || Bm->dev.type != TIR_DEV_CUDA || C->dev.type != TIR_DEV_CUDA)
    return tir_error_set(TIR_ERR_VALUE, "cublas_gemm", "cuBLAS needs CUDA arrays");
  if (A->ndim != 2 || Bm->ndim != 2 || C->ndim != 2) return tir_error_set(TIR_ERR_VALUE, "cublas_gemm", "2-D arrays expected");
  int64_t m = trans_a ? A->shape[1] : A->shape[0], k = trans_a ? A->shape[0] : A->shape[1];
  int64_t kb = trans_b ? Bm->shape[1] : Bm->shape[0], n = trans_b ? Bm->shape[0] : Bm->shape[1];
  if (k != kb || C->shape[0] != m || C->shape[1] != n)
    return tir_error_set(TIR_ERR_VALUE, "cublas_gemm", "shapes do not match");
  int at = cuda_type(A->dtype), bt = cuda_type(Bm->dtype), ct = cuda_type(C->dtype);
  if (at < 0 || bt < 0 || ct < 0 || at != bt) return tir_error_set(TIR_ERR_TYPE, "cublas_gemm", "unsupported dtypes");
  int dev = C->dev.id;
  if (tir_cuda_set_device(dev)) return -1;
  if (dev < 0 || dev >= 64) return tir_error_set(TIR_ERR_VALUE, "cublas_gemm", "bad device");
  if (!B.handle[dev]) {
    int rc = B.create(&B.handle[dev]);
    if (rc) return tir_error_set(TIR_ERR_CUDA, "cublasCreate", "cublasCreate failed (status %d)", rc);
  }
  int compute;
  float fa = (float)alpha, fb = (float)beta;
  int32_t ia = (int32_t)alpha, ib = (int32_t)beta;
  const void *pa = &fa, *pb = &fb;
  if (at == CUDA_R_64F) {
    compute = CUBLAS_COMPUTE_64F;
    pa = &alpha;
    pb = &beta;
  } else if (at == CUDA_R_8I) {
    compute = CUBLAS_COMPUTE_32I;
    pa = &ia;
    pb = &ib;
  } else if (at == CUDA_R_32F) {
    compute = CUBLAS_COMPUTE_32F_PEDANTIC; /* plain FP32: no TF32 */
  } else {
    compute = CUBLAS_COMPUTE_32F;
  }
  /* column-major view: C^T (n x m) = op(B)^T (n x k) @ op(A)^T (k x m) */
  int ldb = (int)Bm->shape[1], lda = (int)A->shape[1], ldc = (int)n;
  int rc = B.gemm(B.handle[dev], trans_b ? 1 : 0, trans_a ? 1 : 0, (int)n, (int)m, (int)k, pa, (const void *)(uintptr_t)Bm->dptr,
                  bt, ldb, (const void *)(uintptr_t)A->dptr, at, lda, pb, (void *)(uintptr_t)C->dptr, ct, ldc, compute,
                  CUBLAS_GEMM_DEFAULT);
  if (rc) return tir_error_set(TIR_ERR_CUDA, "cublasGemmEx", "cublasGemmEx failed (status %d)", rc);
  return 0;
}

/* ---- cuBLASLt (int8 GEMM: CUDA_R_8I in, CUDA_R_32I out, COMPUTE_32I), dlopen'd ----
 * Enum values from cublasLt.h / library_types.h (CUDA 12/13). */
typedef int (*cublasLtCreate_t)(void **h);
typedef int (*cublasLtMatmulDescCreate_t)(void **d, int compute, int scale_type);
typedef int (*cublasLtMatmulDescSetAttribute_t)(void *d, int attr, const void *buf, size_t size);
typedef int (*cublasLtMatrixLayoutCreate_t)(void **l, int type, uint64_t rows, uint64_t cols, int64_t ld);
typedef int (*cublasLtMatmul_t)(void *h, void *desc, const void *alpha, const void *A, void *Ad, const void *B, void *Bd,
                                const void *beta, const void *C, void *Cd, void *D, void *Dd, const void *algo, void *ws,
                                size_t ws_size, void *stream);
typedef int (*cublasLtDestroy1_t)(void *obj);
enum { CUBLASLT_MATMUL_DESC_TRANSA = 3, CUBLASLT_MATMUL_DESC_TRANSB = 4, CUBLASLT_MATMUL_DESC_EPILOGUE = 7,
       CUBLASLT_MATMUL_DESC_BIAS_POINTER = 8 };
enum { CUBLASLT_EPILOGUE_DEFAULT = 1, CUBLASLT_EPILOGUE_RELU = 2, CUBLASLT_EPILOGUE_BIAS = 4 };

static struct {
  int tried;
  char why[256];
  cublasLtCreate_t create;
  cublasLtMatmulDescCreate_t desc_create;
  cublasLtMatmulDescSetAttribute_t desc_set;
  cublasLtMatrixLayoutCreate_t layout_create;
  cublasLtMatmul_t matmul;
  cublasLtDestroy1_t desc_destroy, layout_destroy;
  void *handle[64];
  uint64_t ws[64];
} LT;
#define LT_WORKSPACE (32u << 20)

static int load_cublaslt(void) {
  if (LT.tried) return LT.matmul != NULL;
  LT.tried = 1;
  void *lib = NULL;
  const char *names[] = {"libcublasLt.so.13", "libcublasLt.so.12", "libcublasLt.so", "/usr/local/cuda/lib64/libcublasLt.so.13",
                         "/usr/local/cuda/lib64/libcublasLt.so.12", "/usr/local/cuda/lib64/libcublasLt.so", NULL};
  for (int i = 0; names[i] && !lib; i++) lib = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    snprintf(LT.why, sizeof LT.why, "cuBLASLt not found (libcublasLt.so)");
    return 0;
  }
  LT.create = (cublasLtCreate_t)dlsym(lib, "cublasLtCreate");
  LT.desc_create = (cublasLtMatmulDescCreate_t)dlsym(lib, "cublasLtMatmulDescCreate");
  LT.desc_set = (cublasLtMatmulDescSetAttribute_t)dlsym(lib, "cublasLtMatmulDescSetAttribute");
  LT.layout_create = (cublasLtMatrixLayoutCreate_t)dlsym(lib, "cublasLtMatrixLayoutCreate");
  LT.matmul = (cublasLtMatmul_t)dlsym(lib, "cublasLtMatmul");
  LT.desc_destroy = (cublasLtDestroy1_t)dlsym(lib, "cublasLtMatmulDescDestroy");
  LT.layout_destroy = (cublasLtDestroy1_t)dlsym(lib, "cublasLtMatrixLayoutDestroy");
  if (!LT.create || !LT.desc_create || !LT.desc_set || !LT.layout_create || !LT.matmul || !LT.desc_destroy || !LT.layout_destroy) {
    snprintf(LT.why, sizeof LT.why, "cuBLASLt library lacks cublasLtCreate/cublasLtMatmul...");
    LT.matmul = NULL;
    return 0;
  }
  return 1;
}

int tir_cublaslt_available(char *why, size_t cap) {
  int ok = load_cublaslt();
  if (!ok && why) snprintf(why, cap, "%s", LT.why);
  return ok;
}

/* the device's cuBLASLt handle and workspace, made on first use */
static int lt_handle(int dev, const char *P) {
  if (dev < 0 || dev >= 64) return tir_error_set(TIR_ERR_VALUE, P, "bad device");
  if (tir_cuda_set_device(dev)) return -1;
  if (!LT.handle[dev]) {
    int rc = LT.create(&LT.handle[dev]);
    if (rc) return tir_error_set(TIR_ERR_CUDA, "cublasLtCreate", "cublasLtCreate failed (status %d)", rc);
    if (tir_cuda_malloc(dev, LT_WORKSPACE, &LT.ws[dev])) return -1;
  }
  return 0;
}

int tir_cublaslt_gemm_int8(const tir_NDArray *A, const tir_NDArray *Bm, tir_NDArray *C) {
  const char *P = "cublaslt_gemm_int8";
  if (!load_cublaslt()) return tir_error_set(TIR_ERR_CUDA, P, "%s", LT.why);
  if (A->dev.type != TIR_DEV_CUDA || Bm->dev.type != TIR_DEV_CUDA || C->dev.type != TIR_DEV_CUDA)
    return tir_error_set(TIR_ERR_VALUE, P, "cuBLASLt needs CUDA arrays");
  if (A->ndim != 2 || Bm->ndim != 2 || C->ndim != 2) return tir_error_set(TIR_ERR_VALUE, P, "2-D arrays expected");
  if (cuda_type(A->dtype) != CUDA_R_8I || cuda_type(Bm->dtype) != CUDA_R_8I || cuda_type(C->dtype) != CUDA_R_32I)
    return tir_error_set(TIR_ERR_TYPE, P, "A [M, K] and B [N, K] must be int8, C [M, N] int32");
  int64_t m = A->shape[0], k = A->shape[1], n = Bm->shape[0];
  if (Bm->shape[1] != k || C->shape[0] != m || C->shape[1] != n)
    return tir_error_set(TIR_ERR_VALUE, P, "shapes do not match: A [M, K], B [N, K], C [M, N]");
  int dev = C->dev.id;
  if (lt_handle(dev, P)) return -1;
  /* column-major: D (n x m) = B^T (n x k; B row-major [N, K] is col-major k x n) @ A (k x m):
   * TRANSA = T, TRANSB = N -- the "TN" int8 layout */
  void *desc = NULL, *la = NULL, *lb = NULL, *lc = NULL;
  int rc = LT.desc_create(&desc, CUBLAS_COMPUTE_32I, CUDA_R_32I);
  int opT = 1, opN = 0;
  if (!rc) rc = LT.desc_set(desc, CUBLASLT_MATMUL_DESC_TRANSA, &opT, sizeof opT);
  if (!rc) rc = LT.desc_set(desc, CUBLASLT_MATMUL_DESC_TRANSB, &opN, sizeof opN);
  if (!rc) rc = LT.layout_create(&lb, CUDA_R_8I, (uint64_t)k, (uint64_t)n, k);
  if (!rc) rc = LT.layout_create(&la, CUDA_R_8I, (uint64_t)k, (uint64_t)m, k);
  if (!rc) rc = LT.layout_create(&lc, CUDA_R_32I, (uint64_t)n, (uint64_t)m, n);
  int32_t alpha = 1, beta = 0;
  if (!rc)
    rc = LT.matmul(LT.handle[dev], desc, &alpha, (const void *)(uintptr_t)Bm->dptr, lb, (const void *)(uintptr_t)A->dptr, la, &beta,
                   (const void *)(uintptr_t)C->dptr, lc, (void *)(uintptr_t)C->dptr, lc, NULL, (void *)(uintptr_t)LT.ws[dev],
                   LT_WORKSPACE, NULL);
  if (desc) LT.desc_destroy(desc);
  if (la) LT.layout_destroy(la);
  if (lb) LT.layout_destroy(lb);
  if (lc) LT.layout_destroy(lc);
  if (rc) return tir_error_set(TIR_ERR_CUDA, "cublasLtMatmul", "cuBLASLt int8 matmul failed (status %d)", rc);
  return 0;
}

/* D [M, N] = epilogue(A [M, K] @ B [N, K]^T (+ bias [N])), fp16 or bf16 throughout (bias: D's type, cuBLASLt's
 * default CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE), fp32 compute; epilogue CUBLASLT_EPILOGUE_RELU_BIAS with bias and
 * relu, _BIAS, _RELU or _DEFAULT (cublasLt.h, cublasLtEpilogue_t).  Column-major view as the int8 GEMM: D^T
 * (n x m) = B (k x n, transposed) ^T @ A (k x m); the bias is a vector over D^T's rows = D's columns. */
int tir_cublaslt_gemm_epilogue(const tir_NDArray *A, const tir_NDArray *Bm, const tir_NDArray *bias, tir_NDArray *D, int relu) {
  const char *P = "cublaslt_gemm_epilogue";
  if (!load_cublaslt()) return tir_error_set(TIR_ERR_CUDA, P, "%s", LT.why);
  if (A->dev.type != TIR_DEV_CUDA || Bm->dev.type != TIR_DEV_CUDA || D->dev.type != TIR_DEV_CUDA || (bias && bias->dev.type != TIR_DEV_CUDA))
    return tir_error_set(TIR_ERR_VALUE, P, "cuBLASLt needs CUDA arrays");
  if (A->ndim != 2 || Bm->ndim != 2 || D->ndim != 2 || (bias && bias->ndim != 1))
    return tir_error_set(TIR_ERR_VALUE, P, "A [M, K], B [N, K], D [M, N] and bias [N] expected");
  int t = cuda_type(A->dtype);
  if ((t != CUDA_R_16F && t != CUDA_R_16BF) || cuda_type(Bm->dtype) != t || cuda_type(D->dtype) != t || (bias && cuda_type(bias->dtype) != t))
    return tir_error_set(TIR_ERR_TYPE, P, "A, B, bias and D must all be float16 or all bfloat16");
  int64_t m = A->shape[0], k = A->shape[1], n = Bm->shape[0];
  if (Bm->shape[1] != k || D->shape[0] != m || D->shape[1] != n || (bias && bias->shape[0] != n))
    return tir_error_set(TIR_ERR_VALUE, P, "shapes do not match: A [M, K], B [N, K], bias [N], D [M, N]");
  if (lt_handle(D->dev.id, P)) return -1;
  void *desc = NULL, *la = NULL, *lb = NULL, *ld = NULL;
  int rc = LT.desc_create(&desc, CUBLAS_COMPUTE_32F, CUDA_R_32F);
  int opT = 1, opN = 0;
  uint32_t epi = (uint32_t)((relu ? CUBLASLT_EPILOGUE_RELU : 0) | (bias ? CUBLASLT_EPILOGUE_BIAS : 0));
  if (!epi) epi = CUBLASLT_EPILOGUE_DEFAULT;
  const void *bp = bias ? (const void *)(uintptr_t)bias->dptr : NULL;
  if (!rc) rc = LT.desc_set(desc, CUBLASLT_MATMUL_DESC_TRANSA, &opT, sizeof opT);
  if (!rc) rc = LT.desc_set(desc, CUBLASLT_MATMUL_DESC_TRANSB, &opN, sizeof opN);
  if (!rc) rc = LT.desc_set(desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi, sizeof epi);
  if (!rc && bias) rc = LT.desc_set(desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bp, sizeof bp);
  if (!rc) rc = LT.layout_create(&lb, t, (uint64_t)k, (uint64_t)n, k);
  if (!rc) rc = LT.layout_create(&la, t, (uint64_t)k, (uint64_t)m, k);
  if (!rc) rc = LT.layout_create(&ld, t, (uint64_t)n, (uint64_t)m, n);
  float alpha = 1.0f, beta = 0.0f;
  if (!rc)
    rc = LT.matmul(LT.handle[D->dev.id], desc, &alpha, (const void *)(uintptr_t)Bm->dptr, lb, (const void *)(uintptr_t)A->dptr, la, &beta,
                   (const void *)(uintptr_t)D->dptr, ld, (void *)(uintptr_t)D->dptr, ld, NULL, (void *)(uintptr_t)LT.ws[D->dev.id],
                   LT_WORKSPACE, NULL);
  if (desc) LT.desc_destroy(desc);
  if (la) LT.layout_destroy(la);
  if (lb) LT.layout_destroy(lb);
  if (ld) LT.layout_destroy(ld);
  if (rc) return tir_error_set(TIR_ERR_CUDA, "cublasLtMatmul", "cuBLASLt matmul with epilogue %u failed (status %d)", epi, rc);
  return 0;
}
