/* cudnn.c -- the cuDNN 9 convolution reference, opened with dlopen like cuBLAS (blas.c):
 * conv2d forward on NHWC fp16 tensors with fp32 accumulation, the algorithm picked by
 * cudnnFindConvolutionForwardAlgorithm.  The library is found without a fixed path:
 *   1. $TIRLUA_CUDNN: the library file, or a directory holding libcudnn.so.9;
 *   2. the loader's search (ldconfig, LD_LIBRARY_PATH): libcudnn.so.9, libcudnn.so;
 *   3. Python site-packages (pip's nvidia-cudnn-cu12/13 wheels: nvidia/cudnn/lib): the usual
 *      prefixes (/usr, /usr/local, ~/.local, $VIRTUAL_ENV, $CONDA_PREFIX), $PYTHONPATH, then
 *      the directories python3's `site` module names.
 * cuDNN 9's libcudnn.so.9 is a front library that loads libcudnn_ops/cnn/engines_* itself;
 * when it comes from a directory outside the loader's path, those are loaded from the same
 * directory first (the loader then matches them by soname). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <glob.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cudnn_api.h"
#include "tir/error.h"
#include "tir/runtime.h"

static struct {
  int tried;
  char why[1024];
  char path[1024];
  size_t version;
#define F(ret, name, params) tir_##name##_t name;
  TIR_CUDNN_FNS(F)
#undef F
  void *handle[64];
} D;

/* cudnnConvolutionFwdAlgo_t names, in enum order (cudnn_cnn.h) */
static const char *const ALGO_NAMES[TIR_CUDNN_FWD_ALGO_COUNT] = {
    "IMPLICIT_GEMM", "IMPLICIT_PRECOMP_GEMM", "GEMM", "DIRECT", "FFT", "FFT_TILING", "WINOGRAD", "WINOGRAD_NONFUSED"};

static const char *const SUBLIBS[] = {"libcudnn_graph.so.9", "libcudnn_ops.so.9", "libcudnn_cnn.so.9", "libcudnn_adv.so.9",
                                      "libcudnn_heuristic.so.9", "libcudnn_engines_precompiled.so.9",
                                      "libcudnn_engines_runtime_compiled.so.9", NULL};

static int is_dir(const char *p) {
  struct stat st;
  return stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

/* dlopen of dir/libcudnn.so.9 with its sub-libraries from dir first */
static void *open_in_dir(const char *dir) {
  char p[1200];
  snprintf(p, sizeof p, "%s/libcudnn.so.9", dir);
  struct stat st;
  if (stat(p, &st) != 0) return NULL;
  for (int i = 0; SUBLIBS[i]; i++) {
    char s[1200];
    snprintf(s, sizeof s, "%s/%s", dir, SUBLIBS[i]);
    if (stat(s, &st) == 0) (void)dlopen(s, RTLD_NOW | RTLD_LOCAL); /* missing ones: the front library says */
  }
  return dlopen(p, RTLD_NOW | RTLD_LOCAL);
}

static void *search_site_packages(void) {
  const char *home = getenv("HOME"), *venv = getenv("VIRTUAL_ENV"), *conda = getenv("CONDA_PREFIX");
  char pats[8][600];
  int n = 0;
  snprintf(pats[n++], sizeof pats[0], "/usr/local/lib/python3*/*-packages/nvidia/cudnn/lib");
  snprintf(pats[n++], sizeof pats[0], "/usr/lib/python3*/*-packages/nvidia/cudnn/lib");
  snprintf(pats[n++], sizeof pats[0], "/usr/lib/python3/dist-packages/nvidia/cudnn/lib");
  if (home) snprintf(pats[n++], sizeof pats[0], "%.400s/.local/lib/python3*/site-packages/nvidia/cudnn/lib", home);
  if (venv) snprintf(pats[n++], sizeof pats[0], "%.400s/lib/python3*/site-packages/nvidia/cudnn/lib", venv);
  if (conda) snprintf(pats[n++], sizeof pats[0], "%.400s/lib/python3*/site-packages/nvidia/cudnn/lib", conda);
  snprintf(pats[n++], sizeof pats[0], "/opt/*/lib/python3*/site-packages/nvidia/cudnn/lib");
  for (int i = 0; i < n; i++) {
    glob_t g;
    if (glob(pats[i], 0, NULL, &g) == 0) {
      for (size_t k = g.gl_pathc; k-- > 0;) { /* the newest python first */
        void *lib = open_in_dir(g.gl_pathv[k]);
        if (lib) {
          globfree(&g);
          return lib;
        }
      }
    }
    globfree(&g);
  }
  const char *pp = getenv("PYTHONPATH");
  if (pp) {
    char *copy = strdup(pp), *save = NULL;
    for (char *tok = strtok_r(copy, ":", &save); tok; tok = strtok_r(NULL, ":", &save)) {
      char d[1100];
      snprintf(d, sizeof d, "%s/nvidia/cudnn/lib", tok);
      void *lib = is_dir(d) ? open_in_dir(d) : NULL;
      if (lib) {
        free(copy);
        return lib;
      }
    }
    free(copy);
  }
  /* the interpreter's own list (a site-packages anywhere else) */
  FILE *p = popen("python3 -c 'import site,sys; print(\"\\n\".join(site.getsitepackages() + [site.getusersitepackages()] + sys.path))' "
                  "2>/dev/null",
                  "r");
  if (!p) return NULL;
  char line[1024];
  void *lib = NULL;
  while (!lib && fgets(line, sizeof line, p)) {
    line[strcspn(line, "\n")] = 0;
    if (!*line) continue;
    char d[1100];
    snprintf(d, sizeof d, "%s/nvidia/cudnn/lib", line);
    if (is_dir(d)) lib = open_in_dir(d);
  }
  pclose(p);
  return lib;
}

static int load_cudnn(void) {
  if (D.tried) return D.cudnnConvolutionForward != NULL;
  D.tried = 1;
  void *lib = NULL;
  const char *env = getenv("TIRLUA_CUDNN");
  if (env && *env) {
    lib = is_dir(env) ? open_in_dir(env) : dlopen(env, RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
      const char *e = dlerror();
      snprintf(D.why, sizeof D.why, "TIRLUA_CUDNN=%s: cannot open cuDNN there (%s)", env, e ? e : "no libcudnn.so.9 in that directory");
      return 0;
    }
  }
  if (!lib) lib = dlopen("libcudnn.so.9", RTLD_NOW | RTLD_LOCAL);
  if (!lib) lib = dlopen("libcudnn.so", RTLD_NOW | RTLD_LOCAL);
  if (!lib) lib = search_site_packages();
  if (!lib) {
    snprintf(D.why, sizeof D.why,
             "cuDNN not found (libcudnn.so.9: not on the loader's path, not in a Python site-packages nvidia/cudnn/lib; "
             "set TIRLUA_CUDNN to the library or its directory)");
    return 0;
  }
#define F(ret, name, params)                                                                                                   \
  D.name = (tir_##name##_t)dlsym(lib, #name);                                                                                  \
  if (!D.name) {                                                                                                               \
    snprintf(D.why, sizeof D.why, "the cuDNN library lacks %s", #name);                                                        \
    D.cudnnConvolutionForward = NULL;                                                                                          \
    return 0;                                                                                                                  \
  }
  TIR_CUDNN_FNS(F)
#undef F
  Dl_info info;
  if (dladdr((void *)D.cudnnGetVersion, &info) && info.dli_fname) snprintf(D.path, sizeof D.path, "%s", info.dli_fname);
  D.version = D.cudnnGetVersion();
  if (D.version < 90000) {
    snprintf(D.why, sizeof D.why, "cuDNN %zu at %.900s: tirlua needs cuDNN 9", D.version, D.path);
    D.cudnnConvolutionForward = NULL;
    return 0;
  }
  return 1;
}

int tir_cudnn_available(char *why, size_t cap) {
  int ok = load_cudnn();
  if (why) snprintf(why, cap, "%s", ok ? D.path : D.why);
  return ok;
}

int tir_cudnn_version(void) { return load_cudnn() ? (int)D.version : 0; }

struct tir_CudnnConv2d {
  int dev;
  void *x, *w, *y, *conv; /* descriptors */
  int algo, math;
  float find_ms;
  size_t ws_bytes;
  uint64_t ws;
  int64_t xs[4], ws_[4], ys[4];
};

void tir_cudnn_conv2d_free(tir_CudnnConv2d *c) {
  if (!c) return;
  if (c->x) D.cudnnDestroyTensorDescriptor(c->x);
  if (c->y) D.cudnnDestroyTensorDescriptor(c->y);
  if (c->w) D.cudnnDestroyFilterDescriptor(c->w);
  if (c->conv) D.cudnnDestroyConvolutionDescriptor(c->conv);
  if (c->ws) tir_cuda_free(c->dev, c->ws);
  free(c);
}

#define P "cudnn.conv2d"
static int status(int rc, const char *call) {
  if (rc == TIR_CUDNN_STATUS_SUCCESS) return 0;
  return tir_error_set(TIR_ERR_CUDA, P, "%s failed: %s (status %d)", call, D.cudnnGetErrorString(rc), rc);
}

static int is_f16(const tir_NDArray *a) { return a->dtype.code == TIR_DT_FLOAT && a->dtype.bits == 16 && a->dtype.lanes == 1; }

static int check_arrays(const tir_NDArray *x, const tir_NDArray *w, const tir_NDArray *y) {
  const tir_NDArray *arr[3] = {x, w, y};
  const char *names[3] = {"x (N, H, W, C)", "w (K, R, S, C / groups)", "y (N, P, Q, K)"};
  for (int i = 0; i < 3; i++) {
    if (arr[i]->dev.type != TIR_DEV_CUDA) return tir_error_set(TIR_ERR_VALUE, P, "%s must be a CUDA array", names[i]);
    if (arr[i]->ndim != 4) return tir_error_set(TIR_ERR_VALUE, P, "%s must have 4 dimensions, got %d", names[i], arr[i]->ndim);
    if (!is_f16(arr[i])) {
      char t[32];
      return tir_error_set(TIR_ERR_TYPE, P, "%s must be float16 (NHWC fp16, fp32 accumulation), got %s", names[i], tir_dtype_str(arr[i]->dtype, t));
    }
    if (arr[i]->dev.id != x->dev.id) return tir_error_set(TIR_ERR_VALUE, P, "x, w and y must be on one device");
    for (int d = 0; d < 4; d++)
      if (arr[i]->shape[d] > 0x7fffffff) return tir_error_set(TIR_ERR_VALUE, P, "%s: dimension %d is too large for cuDNN's int", names[i], d + 1);
  }
  return 0;
}

tir_CudnnConv2d *tir_cudnn_conv2d_plan(const tir_NDArray *x, const tir_NDArray *w, const tir_NDArray *y, const int stride[2],
                                       const int pad[2], const int dilation[2], int groups, char *algo_name, size_t cap) {
  if (!load_cudnn()) return tir_error_set(TIR_ERR_CUDA, P, "%s", D.why), NULL;
  if (check_arrays(x, w, y)) return NULL;
  for (int i = 0; i < 2; i++)
    if (stride[i] < 1 || dilation[i] < 1 || pad[i] < 0)
      return tir_error_set(TIR_ERR_VALUE, P, "stride and dilation must be >= 1 and padding >= 0, got stride %d, padding %d, dilation %d",
                           stride[i], pad[i], dilation[i]),
             NULL;
  int n = (int)x->shape[0], h = (int)x->shape[1], wd = (int)x->shape[2], c = (int)x->shape[3];
  int k = (int)w->shape[0], r = (int)w->shape[1], s = (int)w->shape[2], cg = (int)w->shape[3];
  if (groups < 1 || c % groups != 0 || k % groups != 0 || cg * groups != c)
    return tir_error_set(TIR_ERR_VALUE, P, "x has C = %d channels and w (K, R, S, C / groups) = (%d, %d, %d, %d) with groups = %d: C / groups must be %d",
                         c, k, r, s, cg, groups, groups > 0 ? c / groups : 0),
           NULL;
  int dev = x->dev.id;
  if (dev < 0 || dev >= 64) return tir_error_set(TIR_ERR_VALUE, P, "bad device %d", dev), NULL;
  if (tir_cuda_set_device(dev)) return NULL;
  if (!D.handle[dev] && status(D.cudnnCreate(&D.handle[dev]), "cudnnCreate")) return NULL;
  tir_CudnnConv2d *cv = calloc(1, sizeof *cv);
  cv->dev = dev;
  int rc = D.cudnnCreateTensorDescriptor(&cv->x);
  if (!rc) rc = D.cudnnCreateTensorDescriptor(&cv->y);
  if (!rc) rc = D.cudnnCreateFilterDescriptor(&cv->w);
  if (!rc) rc = D.cudnnCreateConvolutionDescriptor(&cv->conv);
  if (status(rc, "cudnnCreate*Descriptor")) goto fail;
  /* NHWC tensors are described by their logical NCHW sizes with format NHWC; an NHWC filter is K x R x S x C */
  if (status(D.cudnnSetTensor4dDescriptor(cv->x, TIR_CUDNN_TENSOR_NHWC, TIR_CUDNN_DATA_HALF, n, c, h, wd), "cudnnSetTensor4dDescriptor (x)") ||
      status(D.cudnnSetFilter4dDescriptor(cv->w, TIR_CUDNN_DATA_HALF, TIR_CUDNN_TENSOR_NHWC, k, cg, r, s), "cudnnSetFilter4dDescriptor") ||
      status(D.cudnnSetConvolution2dDescriptor(cv->conv, pad[0], pad[1], stride[0], stride[1], dilation[0], dilation[1],
                                               TIR_CUDNN_CROSS_CORRELATION, TIR_CUDNN_DATA_FLOAT),
             "cudnnSetConvolution2dDescriptor") ||
      status(D.cudnnSetConvolutionGroupCount(cv->conv, groups), "cudnnSetConvolutionGroupCount") ||
      status(D.cudnnSetConvolutionMathType(cv->conv, TIR_CUDNN_TENSOR_OP_MATH), "cudnnSetConvolutionMathType"))
    goto fail;
  int on, oc, oh, ow;
  if (status(D.cudnnGetConvolution2dForwardOutputDim(cv->conv, cv->x, cv->w, &on, &oc, &oh, &ow), "cudnnGetConvolution2dForwardOutputDim"))
    goto fail;
  if (y->shape[0] != on || y->shape[1] != oh || y->shape[2] != ow || y->shape[3] != oc) {
    tir_error_set(TIR_ERR_VALUE, P, "y must be (N, P, Q, K) = (%d, %d, %d, %d) for these x, w, stride, padding and dilation; got (%lld, %lld, %lld, %lld)",
                  on, oh, ow, oc, (long long)y->shape[0], (long long)y->shape[1], (long long)y->shape[2], (long long)y->shape[3]);
    goto fail;
  }
  if (status(D.cudnnSetTensor4dDescriptor(cv->y, TIR_CUDNN_TENSOR_NHWC, TIR_CUDNN_DATA_HALF, on, oc, oh, ow), "cudnnSetTensor4dDescriptor (y)"))
    goto fail;
  tir_cudnnConvolutionFwdAlgoPerf_t perf[TIR_CUDNN_FWD_ALGO_COUNT];
  int got = 0;
  if (status(D.cudnnFindConvolutionForwardAlgorithm(D.handle[dev], cv->x, cv->w, cv->conv, cv->y, TIR_CUDNN_FWD_ALGO_COUNT, &got, perf),
             "cudnnFindConvolutionForwardAlgorithm"))
    goto fail;
  int best = -1;
  for (int i = 0; i < got && best < 0; i++) /* sorted by time: the first that ran */
    if (perf[i].status == TIR_CUDNN_STATUS_SUCCESS && perf[i].algo >= 0 && perf[i].algo < TIR_CUDNN_FWD_ALGO_COUNT) best = i;
  if (best < 0) {
    tir_error_set(TIR_ERR_CUDA, P, "cudnnFindConvolutionForwardAlgorithm found no algorithm that runs this convolution (%d tried)", got);
    goto fail;
  }
  cv->algo = perf[best].algo;
  cv->math = perf[best].mathType;
  cv->find_ms = perf[best].time;
  if (status(D.cudnnSetConvolutionMathType(cv->conv, cv->math), "cudnnSetConvolutionMathType") ||
      status(D.cudnnGetConvolutionForwardWorkspaceSize(D.handle[dev], cv->x, cv->w, cv->conv, cv->y, cv->algo, &cv->ws_bytes),
             "cudnnGetConvolutionForwardWorkspaceSize"))
    goto fail;
  if (cv->ws_bytes && tir_cuda_malloc(dev, cv->ws_bytes, &cv->ws)) goto fail;
  memcpy(cv->xs, x->shape, sizeof cv->xs);
  memcpy(cv->ws_, w->shape, sizeof cv->ws_);
  memcpy(cv->ys, y->shape, sizeof cv->ys);
  if (algo_name) snprintf(algo_name, cap, "%s", tir_cudnn_conv2d_algo(cv));
  return cv;
fail:
  tir_cudnn_conv2d_free(cv);
  return NULL;
}

const char *tir_cudnn_conv2d_algo(const tir_CudnnConv2d *c) { return ALGO_NAMES[c->algo]; }
int tir_cudnn_conv2d_uses_tensor_ops(const tir_CudnnConv2d *c) { return c->math != TIR_CUDNN_DEFAULT_MATH; }
float tir_cudnn_conv2d_find_ms(const tir_CudnnConv2d *c) { return c->find_ms; }
size_t tir_cudnn_conv2d_workspace(const tir_CudnnConv2d *c) { return c->ws_bytes; }

int tir_cudnn_conv2d_run(tir_CudnnConv2d *c, const tir_NDArray *x, const tir_NDArray *w, tir_NDArray *y) {
  if (check_arrays(x, w, y)) return -1;
  if (memcmp(x->shape, c->xs, sizeof c->xs) || memcmp(w->shape, c->ws_, sizeof c->ws_) || memcmp(y->shape, c->ys, sizeof c->ys) ||
      x->dev.id != c->dev)
    return tir_error_set(TIR_ERR_VALUE, P, "the arrays' shapes or device differ from the ones the plan was made for");
  if (tir_cuda_set_device(c->dev)) return -1;
  float one = 1.0f, zero = 0.0f; /* float scaling for half data with float compute */
  return status(D.cudnnConvolutionForward(D.handle[c->dev], &one, c->x, (const void *)(uintptr_t)x->dptr, c->w, (const void *)(uintptr_t)w->dptr,
                                          c->conv, c->algo, (void *)(uintptr_t)c->ws, c->ws_bytes, &zero, c->y, (void *)(uintptr_t)y->dptr),
                "cudnnConvolutionForward");
}
