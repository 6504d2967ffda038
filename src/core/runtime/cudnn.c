/* cudnn.c -- the cuDNN 9 convolution reference, opened with dlopen like cuBLAS (blas.c):
 * conv2d forward on NHWC fp16 tensors with fp32 accumulation.  A plan searches what cuDNN
 * offers and keeps the fastest, every candidate timed here with the same CUDA-event timer:
 *   - the backend (graph) API, the way cudnn-frontend / PyTorch's benchmark mode do it: tensor,
 *     convolution, forward-operation and operation-graph descriptors, engine heuristics (mode A,
 *     then the fallback list), one execution plan per engine configuration, each run;
 *   - the legacy API: cudnnFindConvolutionForwardAlgorithmEx with a real workspace buffer, each
 *     returned algorithm re-timed (or, path "legacy", plain cudnnFindConvolutionForwardAlgorithm
 *     and the first algorithm it ranks, as the earlier reference did).
 * The legacy search only reaches the engines behind its eight cudnnConvolutionFwdAlgo_t values:
 * on the H200 with cuDNN 9.14 it never found the Hopper engines (eng58, eng62) that heuristics
 * mode A ranks first, 2.5x slower over ResNet-50's convolutions (bench/RESULTS.md, per layer).
 * The library is found without a fixed path:
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

/* cudnnBackendKnobType_t names, in enum order (cudnn_graph.h; deprecated ones keep their slot) */
static const char *const KNOB_NAMES[TIR_CUDNN_KNOB_TYPE_COUNTS] = {
    "SPLIT_K",     "SWIZZLE",   "TILE_SIZE",  "USE_TEX",    "EDGE",          "KBLOCK",      "LDGA",         "LDGB",
    "CHUNK_K",     "SPLIT_H",   "WINO_TILE",  "MULTIPLY",   "SPLIT_K_BUF",   "TILEK",       "STAGES",       "REDUCTION_MODE",
    "CTA_SPLIT_K", "SPLIT_K_SLC", "IDX_MODE", "SLICED",     "SPLIT_RS",      "SINGLEBUFFER", "LDGC",        "SPECFILT",
    "KERNEL_CFG",  "WORKSPACE", "TILE_CGA",   "TILE_CGA_M", "TILE_CGA_N",    "BLOCK_SIZE",  "OCCUPANCY",    "ARRAY_SIZE_PER_THREAD",
    "NUM_C_PER_BLOCK", "SPLIT_COLS", "TILE_ROWS", "TILE_COLS", "LOAD_SIZE", "CTA_COUNT",  "STREAM_K",     "SPLIT_P_SLC",
    "TILE_M",      "TILE_N",    "WARP_SPEC_CFG", "SWAP_AB"};

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

#define MAX_CANDS 128
#define MAX_HEUR 64
struct tir_CudnnConv2d {
  int dev;
  int backend;            /* the chosen candidate: 1 backend engine configuration, 0 legacy algorithm */
  void *x, *w, *y, *conv; /* legacy descriptors (also the output-shape check) */
  int algo, math;
  void *bk[6]; /* backend: x, w, y tensors, convolution, forward operation, operation graph */
  void *bcfg, *bplan, *bpack; /* the chosen engine configuration, its execution plan, the variant pack */
  void *pack_ptr[3];          /* the data pointers bpack holds */
  int64_t align;              /* the byte alignment the backend tensors promise */
  char name[160];
  const char *path;
  int tensor_ops;
  float find_ms;
  size_t ws_bytes;
  uint64_t ws;
  int64_t xs[4], ws_[4], ys[4];
  int ncands;
  tir_CudnnCandidate cands[MAX_CANDS];
};

static void bk_destroy(void **d) {
  if (*d) D.cudnnBackendDestroyDescriptor(*d);
  *d = NULL;
}

void tir_cudnn_conv2d_free(tir_CudnnConv2d *c) {
  if (!c) return;
  if (c->x) D.cudnnDestroyTensorDescriptor(c->x);
  if (c->y) D.cudnnDestroyTensorDescriptor(c->y);
  if (c->w) D.cudnnDestroyFilterDescriptor(c->w);
  if (c->conv) D.cudnnDestroyConvolutionDescriptor(c->conv);
  bk_destroy(&c->bpack);
  bk_destroy(&c->bplan);
  bk_destroy(&c->bcfg);
  for (int i = 5; i >= 0; i--) bk_destroy(&c->bk[i]);
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

/* ---- one candidate run, timed with tir_cuda_time (CUDA events on the default stream, which
 * is also the cuDNN handle's) ---- */
typedef struct {
  tir_CudnnConv2d *cv;
  int backend;
  void *plan, *pack;        /* backend */
  int algo;                 /* legacy */
  uint64_t ws;
  size_t ws_bytes;
  const void *x, *w;
  void *y;
} Run;

static int run_once(void *p) {
  Run *r = p;
  if (r->backend) return status(D.cudnnBackendExecute(D.handle[r->cv->dev], r->plan, r->pack), "cudnnBackendExecute");
  float one = 1.0f, zero = 0.0f; /* float scaling for half data with float compute */
  return status(D.cudnnConvolutionForward(D.handle[r->cv->dev], &one, r->cv->x, r->x, r->cv->w, r->w, r->cv->conv, r->algo,
                                          (void *)(uintptr_t)r->ws, r->ws_bytes, &zero, r->cv->y, r->y),
                "cudnnConvolutionForward");
}

/* median ms of 3 samples of 5 runs after 2 warm-up runs; < 0 with the error in note */
static double time_run(Run *r, char *note, size_t cap) {
  double s = 0;
  if (tir_cuda_time(r->cv->dev, run_once, r, 2, 5, 3, &s, NULL)) {
    tir_Error *e = tir_error_get();
    snprintf(note, cap, "failed to run: %s", e && e->message ? e->message : "?");
    tir_error_clear();
    return -1;
  }
  return s * 1e3;
}

static tir_CudnnCandidate *add_cand(tir_CudnnConv2d *cv, const char *path) {
  static tir_CudnnCandidate sink; /* beyond MAX_CANDS: not recorded */
  tir_CudnnCandidate *c = cv->ncands < MAX_CANDS ? &cv->cands[cv->ncands++] : &sink;
  memset(c, 0, sizeof *c);
  c->path = path;
  c->ms = -1;
  return c;
}

/* ---- the backend (graph) API ---- */
static int bk_new(int type, void **d, char *note, size_t cap) {
  *d = NULL;
  int rc = D.cudnnBackendCreateDescriptor(type, d);
  if (rc) snprintf(note, cap, "cudnnBackendCreateDescriptor(%d): %s", type, D.cudnnGetErrorString(rc));
  return rc;
}
#define BSET(d, attr, type, n, v)                                                                                              \
  do {                                                                                                                         \
    int rc_ = D.cudnnBackendSetAttribute((d), (attr), (type), (n), (v));                                                       \
    if (rc_) return tir_error_set(TIR_ERR_CUDA, P, "cudnnBackendSetAttribute(%s) failed: %s (status %d)", #attr,             \
                                  D.cudnnGetErrorString(rc_), rc_);                                                            \
  } while (0)

static int bk_tensor(tir_CudnnConv2d *cv, int slot, int64_t uid, const int64_t dims[4], const int64_t strides[4]) {
  char note[160];
  int rc = bk_new(TIR_CUDNN_BK_TENSOR, &cv->bk[slot], note, sizeof note);
  if (rc) return tir_error_set(TIR_ERR_CUDA, P, "%s", note);
  int dt = TIR_CUDNN_DATA_HALF;
  BSET(cv->bk[slot], TIR_CUDNN_ATTR_TENSOR_DATA_TYPE, TIR_CUDNN_TYPE_DATA_TYPE, 1, &dt);
  BSET(cv->bk[slot], TIR_CUDNN_ATTR_TENSOR_DIMENSIONS, TIR_CUDNN_TYPE_INT64, 4, dims);
  BSET(cv->bk[slot], TIR_CUDNN_ATTR_TENSOR_STRIDES, TIR_CUDNN_TYPE_INT64, 4, strides);
  BSET(cv->bk[slot], TIR_CUDNN_ATTR_TENSOR_UNIQUE_ID, TIR_CUDNN_TYPE_INT64, 1, &uid);
  BSET(cv->bk[slot], TIR_CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, TIR_CUDNN_TYPE_INT64, 1, &cv->align);
  return status(D.cudnnBackendFinalize(cv->bk[slot]), "cudnnBackendFinalize (tensor)");
}

/* x, w, y tensors (logical NCHW / KCRS dimensions with NHWC / KRSC strides, as cuDNN describes
 * channels-last), the convolution, the forward operation and the operation graph */
static int bk_graph(tir_CudnnConv2d *cv, const int64_t xd[4], const int64_t wd[4], const int64_t yd[4], const int stride[2],
                    const int pad[2], const int dil[2]) {
  const int64_t *dd[3] = {xd, wd, yd};
  for (int t = 0; t < 3; t++) {
    const int64_t *d = dd[t]; /* N, C, H, W (x, y) or K, C / groups, R, S (w) */
    int64_t st[4] = {d[1] * d[2] * d[3], 1, d[3] * d[1], d[1]};
    if (bk_tensor(cv, t, "xwy"[t], d, st)) return -1;
  }
  char note[160];
  if (bk_new(TIR_CUDNN_BK_CONVOLUTION, &cv->bk[3], note, sizeof note)) return tir_error_set(TIR_ERR_CUDA, P, "%s", note);
  int comp = TIR_CUDNN_DATA_FLOAT, mode = TIR_CUDNN_CROSS_CORRELATION;
  int64_t dims = 2, s64[2] = {stride[0], stride[1]}, p64[2] = {pad[0], pad[1]}, d64[2] = {dil[0], dil[1]};
  BSET(cv->bk[3], TIR_CUDNN_ATTR_CONVOLUTION_COMP_TYPE, TIR_CUDNN_TYPE_DATA_TYPE, 1, &comp);
  BSET(cv->bk[3], TIR_CUDNN_ATTR_CONVOLUTION_CONV_MODE, TIR_CUDNN_TYPE_CONVOLUTION_MODE, 1, &mode);
  BSET(cv->bk[3], TIR_CUDNN_ATTR_CONVOLUTION_SPATIAL_DIMS, TIR_CUDNN_TYPE_INT64, 1, &dims);
  BSET(cv->bk[3], TIR_CUDNN_ATTR_CONVOLUTION_FILTER_STRIDES, TIR_CUDNN_TYPE_INT64, 2, s64);
  BSET(cv->bk[3], TIR_CUDNN_ATTR_CONVOLUTION_PRE_PADDINGS, TIR_CUDNN_TYPE_INT64, 2, p64);
  BSET(cv->bk[3], TIR_CUDNN_ATTR_CONVOLUTION_POST_PADDINGS, TIR_CUDNN_TYPE_INT64, 2, p64);
  BSET(cv->bk[3], TIR_CUDNN_ATTR_CONVOLUTION_DILATIONS, TIR_CUDNN_TYPE_INT64, 2, d64);
  if (status(D.cudnnBackendFinalize(cv->bk[3]), "cudnnBackendFinalize (convolution)")) return -1;
  if (bk_new(TIR_CUDNN_BK_OPERATION_CONVOLUTION_FORWARD, &cv->bk[4], note, sizeof note)) return tir_error_set(TIR_ERR_CUDA, P, "%s", note);
  float alpha = 1.0f, beta = 0.0f; /* float scaling: the compute type is FLOAT */
  BSET(cv->bk[4], TIR_CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_X, TIR_CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &cv->bk[0]);
  BSET(cv->bk[4], TIR_CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_W, TIR_CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &cv->bk[1]);
  BSET(cv->bk[4], TIR_CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_Y, TIR_CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &cv->bk[2]);
  BSET(cv->bk[4], TIR_CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_CONV_DESC, TIR_CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &cv->bk[3]);
  BSET(cv->bk[4], TIR_CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_ALPHA, TIR_CUDNN_TYPE_FLOAT, 1, &alpha);
  BSET(cv->bk[4], TIR_CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_BETA, TIR_CUDNN_TYPE_FLOAT, 1, &beta);
  if (status(D.cudnnBackendFinalize(cv->bk[4]), "cudnnBackendFinalize (convolution forward operation)")) return -1;
  if (bk_new(TIR_CUDNN_BK_OPERATIONGRAPH, &cv->bk[5], note, sizeof note)) return tir_error_set(TIR_ERR_CUDA, P, "%s", note);
  BSET(cv->bk[5], TIR_CUDNN_ATTR_OPERATIONGRAPH_OPS, TIR_CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &cv->bk[4]);
  BSET(cv->bk[5], TIR_CUDNN_ATTR_OPERATIONGRAPH_HANDLE, TIR_CUDNN_TYPE_HANDLE, 1, &D.handle[cv->dev]);
  return status(D.cudnnBackendFinalize(cv->bk[5]), "cudnnBackendFinalize (operation graph)");
}

/* the engine configurations heuristics `mode` ranks (created into cfgs, at most cap); 0 with a note when the mode fails */
static int heuristics(tir_CudnnConv2d *cv, int mode, void **cfgs, int cap, char *note, size_t ncap) {
  void *h = NULL;
  int64_t n = 0, got = 0;
  int rc = bk_new(TIR_CUDNN_BK_ENGINEHEUR, &h, note, ncap);
  if (!rc) rc = D.cudnnBackendSetAttribute(h, TIR_CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, TIR_CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &cv->bk[5]);
  if (!rc) rc = D.cudnnBackendSetAttribute(h, TIR_CUDNN_ATTR_ENGINEHEUR_MODE, TIR_CUDNN_TYPE_HEUR_MODE, 1, &mode);
  if (!rc) rc = D.cudnnBackendFinalize(h);
  if (!rc) rc = D.cudnnBackendGetAttribute(h, TIR_CUDNN_ATTR_ENGINEHEUR_RESULTS, TIR_CUDNN_TYPE_BACKEND_DESCRIPTOR, 0, &n, NULL);
  if (n > cap) n = cap;
  int made = 0;
  for (; !rc && made < n; made++) rc = bk_new(TIR_CUDNN_BK_ENGINECFG, &cfgs[made], note, ncap);
  if (!rc && n > 0) rc = D.cudnnBackendGetAttribute(h, TIR_CUDNN_ATTR_ENGINEHEUR_RESULTS, TIR_CUDNN_TYPE_BACKEND_DESCRIPTOR, n, &got, cfgs);
  if (rc || got < 0) got = 0;
  for (int i = (int)got; i < made; i++) bk_destroy(&cfgs[i]);
  if (rc) snprintf(note, ncap, "engine heuristics (mode %s): %s", mode == TIR_CUDNN_HEUR_MODE_A ? "A" : "fallback", D.cudnnGetErrorString(rc));
  bk_destroy(&h);
  return (int)got;
}

/* a configuration's name ("eng<global index> KNOB=v ..."), its notes, and whether it is excluded */
static int describe_cfg(void *cfg, char *name, size_t ncap, char *notes, size_t tcap, int *tensor_core, const char **excluded, int rtc) {
  void *eng = NULL;
  int64_t n = 0, idx = -1;
  *tensor_core = 0;
  *excluded = NULL;
  char tmp[160];
  int rc = bk_new(TIR_CUDNN_BK_ENGINE, &eng, tmp, sizeof tmp);
  if (!rc) rc = D.cudnnBackendGetAttribute(cfg, TIR_CUDNN_ATTR_ENGINECFG_ENGINE, TIR_CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &n, &eng);
  if (!rc) rc = D.cudnnBackendGetAttribute(eng, TIR_CUDNN_ATTR_ENGINE_GLOBAL_INDEX, TIR_CUDNN_TYPE_INT64, 1, &n, &idx);
  if (rc) {
    snprintf(name, ncap, "engine ?");
    snprintf(notes, tcap, "reading the engine: %s", D.cudnnGetErrorString(rc));
    bk_destroy(&eng);
    return rc;
  }
  int num[16] = {0}, beh[16] = {0};
  int64_t nn = 0, nb = 0;
  if (D.cudnnBackendGetAttribute(eng, TIR_CUDNN_ATTR_ENGINE_NUMERICAL_NOTE, TIR_CUDNN_TYPE_NUMERICAL_NOTE, 16, &nn, num)) nn = 0;
  if (D.cudnnBackendGetAttribute(eng, TIR_CUDNN_ATTR_ENGINE_BEHAVIOR_NOTE, TIR_CUDNN_TYPE_BEHAVIOR_NOTE, 16, &nb, beh)) nb = 0;
  bk_destroy(&eng);
  size_t at = (size_t)snprintf(name, ncap, "eng%lld", (long long)idx);
  void *knobs[TIR_CUDNN_KNOB_TYPE_COUNTS] = {0};
  int nk = 0;
  for (; nk < TIR_CUDNN_KNOB_TYPE_COUNTS; nk++)
    if (D.cudnnBackendCreateDescriptor(TIR_CUDNN_BK_KNOB_CHOICE, &knobs[nk])) break;
  int64_t got = 0;
  if (nk > 0 && D.cudnnBackendGetAttribute(cfg, TIR_CUDNN_ATTR_ENGINECFG_KNOB_CHOICES, TIR_CUDNN_TYPE_BACKEND_DESCRIPTOR, nk, &got, knobs)) got = 0;
  for (int64_t k = 0; k < got; k++) {
    int type = -1;
    int64_t m = 0, v = 0;
    if (D.cudnnBackendGetAttribute(knobs[k], TIR_CUDNN_ATTR_KNOB_CHOICE_KNOB_TYPE, TIR_CUDNN_TYPE_KNOB_TYPE, 1, &m, &type) ||
        D.cudnnBackendGetAttribute(knobs[k], TIR_CUDNN_ATTR_KNOB_CHOICE_KNOB_VALUE, TIR_CUDNN_TYPE_INT64, 1, &m, &v))
      continue;
    if (at < ncap) {
      if (type >= 0 && type < TIR_CUDNN_KNOB_TYPE_COUNTS) at += (size_t)snprintf(name + at, ncap - at, " %s=%lld", KNOB_NAMES[type], (long long)v);
      else at += (size_t)snprintf(name + at, ncap - at, " k%d=%lld", type, (long long)v);
    }
  }
  for (int k = 0; k < nk; k++) bk_destroy(&knobs[k]);
  size_t t = 0;
  notes[0] = 0;
  static const char *const NUM[] = {"tensor_core", "down_convert_inputs", "reduced_precision_reduction", "fft", "nondeterministic",
                                    "winograd", "winograd_4x4", "winograd_6x6", "winograd_13x13", "strict_nan_prop"};
  for (int64_t k = 0; k < nn && k < 16; k++) {
    if (num[k] == TIR_CUDNN_NUMERICAL_NOTE_TENSOR_CORE) *tensor_core = 1;
    /* fp32 accumulation is the contract (tirlua's kernels accumulate in fp32): engines that
     * reduce or convert in lower precision are not a fair reference */
    if (num[k] == TIR_CUDNN_NUMERICAL_NOTE_DOWN_CONVERT_INPUTS || num[k] == TIR_CUDNN_NUMERICAL_NOTE_REDUCED_PRECISION_REDUCTION)
      *excluded = NUM[num[k]];
    if (t < tcap) t += (size_t)snprintf(notes + t, tcap - t, "%s%s", t ? ", " : "", num[k] >= 0 && num[k] < 10 ? NUM[num[k]] : "?");
  }
  for (int64_t k = 0; k < nb && k < 16; k++) {
    if (beh[k] == TIR_CUDNN_BEHAVIOR_NOTE_RUNTIME_COMPILATION) {
      if (!rtc && !*excluded) *excluded = "runtime_compilation (NVRTC inside cuDNN; opts rtc = true times these too)";
      if (t < tcap) t += (size_t)snprintf(notes + t, tcap - t, "%sruntime_compiled", t ? ", " : "");
    }
  }
  return 0;
}

typedef struct {
  double ms;
  size_t ws;
  int backend, algo, math, tensor_ops;
  void *cfg, *plan; /* backend: owned */
  char name[160];
  const char *path;
} Best;

static void best_clear(Best *b) {
  bk_destroy(&b->plan);
  bk_destroy(&b->cfg);
  b->ms = -1;
}

static int64_t align_of(uint64_t p) {
  int64_t a = 16;
  while (a > 2 && p % (uint64_t)a) a /= 2;
  return a;
}

static void *make_pack(const void *x, const void *w, void *y, uint64_t ws, char *note, size_t cap) {
  void *pack = NULL;
  if (bk_new(TIR_CUDNN_BK_VARIANT_PACK, &pack, note, cap)) return NULL;
  int64_t uids[3] = {'x', 'w', 'y'};
  void *ptrs[3] = {(void *)x, (void *)w, y};
  void *wsp = (void *)(uintptr_t)ws;
  int rc = D.cudnnBackendSetAttribute(pack, TIR_CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, TIR_CUDNN_TYPE_INT64, 3, uids);
  if (!rc) rc = D.cudnnBackendSetAttribute(pack, TIR_CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, TIR_CUDNN_TYPE_VOID_PTR, 3, ptrs);
  if (!rc) rc = D.cudnnBackendSetAttribute(pack, TIR_CUDNN_ATTR_VARIANT_PACK_WORKSPACE, TIR_CUDNN_TYPE_VOID_PTR, 1, &wsp);
  if (!rc) rc = D.cudnnBackendFinalize(pack);
  if (rc) {
    snprintf(note, cap, "variant pack: %s", D.cudnnGetErrorString(rc));
    bk_destroy(&pack);
  }
  return pack;
}

/* every engine configuration of heuristics mode A, then the fallback list (deduplicated), up to
 * max_configs run: each gets an execution plan, runs on the scratch workspace and is timed */
static void search_backend(tir_CudnnConv2d *cv, const tir_CudnnOptions *o, Best *best, const void *x, const void *w, void *y,
                           uint64_t scratch, size_t limit) {
  const char *PATH = "backend";
  int modes[2] = {TIR_CUDNN_HEUR_MODE_A, TIR_CUDNN_HEUR_MODE_FALLBACK};
  int timed = 0;
  for (int mi = 0; mi < 2; mi++) {
    void *cfgs[MAX_HEUR] = {0};
    char note[160] = "";
    int n = heuristics(cv, modes[mi], cfgs, MAX_HEUR, note, sizeof note);
    if (note[0]) snprintf(add_cand(cv, PATH)->note, sizeof cv->cands[0].note, "%s", note);
    for (int i = 0; i < n; i++) {
      char name[160], notes[160];
      int tc = 0;
      const char *excluded = NULL;
      int dup = 0, rc = describe_cfg(cfgs[i], name, sizeof name, notes, sizeof notes, &tc, &excluded, o->rtc);
      for (int k = 0; !rc && k < cv->ncands; k++)
        if (cv->cands[k].path == PATH && !strcmp(cv->cands[k].name, name)) dup = 1;
      if (dup) {
        bk_destroy(&cfgs[i]);
        continue;
      }
      tir_CudnnCandidate *c = add_cand(cv, PATH);
      snprintf(c->name, sizeof c->name, "%s", name);
      c->heuristic = mi == 0 ? "A" : "fallback";
      c->rank = i + 1;
      if (rc || excluded || timed >= o->max_configs) {
        snprintf(c->note, sizeof c->note, "%s%s", rc ? notes : excluded ? "excluded: " : "not timed: max_configs reached",
                 rc ? "" : excluded ? excluded : "");
        bk_destroy(&cfgs[i]);
        continue;
      }
      snprintf(c->note, sizeof c->note, "%s", notes);
      void *plan = NULL, *pack = NULL;
      int64_t wsz = 0, m = 0;
      rc = bk_new(TIR_CUDNN_BK_EXECUTION_PLAN, &plan, c->note, sizeof c->note);
      if (!rc) rc = D.cudnnBackendSetAttribute(plan, TIR_CUDNN_ATTR_EXECUTION_PLAN_HANDLE, TIR_CUDNN_TYPE_HANDLE, 1, &D.handle[cv->dev]);
      if (!rc) rc = D.cudnnBackendSetAttribute(plan, TIR_CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG, TIR_CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &cfgs[i]);
      if (!rc) rc = D.cudnnBackendFinalize(plan);
      if (!rc) rc = D.cudnnBackendGetAttribute(plan, TIR_CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE, TIR_CUDNN_TYPE_INT64, 1, &m, &wsz);
      if (rc) {
        snprintf(c->note, sizeof c->note, "execution plan: %s (status %d)", D.cudnnGetErrorString(rc), rc);
      } else if (wsz < 0 || (uint64_t)wsz > limit) {
        snprintf(c->note, sizeof c->note, "needs %lld workspace bytes, over the limit %zu", (long long)wsz, limit);
      } else if ((pack = make_pack(x, w, y, scratch, c->note, sizeof c->note))) {
        c->workspace = (size_t)wsz;
        Run r = {.cv = cv, .backend = 1, .plan = plan, .pack = pack};
        c->ms = time_run(&r, c->note, sizeof c->note);
        timed++;
        if (c->ms >= 0 && (best->ms < 0 || c->ms < best->ms)) {
          best_clear(best);
          *best = (Best){.ms = c->ms, .ws = (size_t)wsz, .backend = 1, .tensor_ops = tc, .cfg = cfgs[i], .plan = plan, .path = PATH};
          snprintf(best->name, sizeof best->name, "%s", name);
          cfgs[i] = plan = NULL; /* kept */
        }
      }
      bk_destroy(&pack);
      bk_destroy(&plan);
      bk_destroy(&cfgs[i]);
    }
  }
}

/* the legacy search: Find (ex = 0: cuDNN allocates, the first result is taken as the earlier
 * reference did) or FindEx on the scratch workspace (every returned algorithm re-timed here) */
static int search_legacy(tir_CudnnConv2d *cv, int ex, Best *best, const void *x, const void *w, void *y, uint64_t scratch, size_t limit) {
  const char *PATH = ex ? "legacy FindEx" : "legacy Find";
  tir_cudnnConvolutionFwdAlgoPerf_t perf[TIR_CUDNN_FWD_ALGO_COUNT];
  int got = 0, dev = cv->dev;
  int rc = ex ? D.cudnnFindConvolutionForwardAlgorithmEx(D.handle[dev], cv->x, x, cv->w, w, cv->conv, cv->y, y, TIR_CUDNN_FWD_ALGO_COUNT, &got,
                                                         perf, (void *)(uintptr_t)scratch, limit)
              : D.cudnnFindConvolutionForwardAlgorithm(D.handle[dev], cv->x, cv->w, cv->conv, cv->y, TIR_CUDNN_FWD_ALGO_COUNT, &got, perf);
  if (rc) {
    snprintf(add_cand(cv, PATH)->note, sizeof cv->cands[0].note, "%s: %s (status %d)",
             ex ? "cudnnFindConvolutionForwardAlgorithmEx" : "cudnnFindConvolutionForwardAlgorithm", D.cudnnGetErrorString(rc), rc);
    return 0;
  }
  int taken = 0;
  for (int i = 0; i < got; i++) { /* sorted by cuDNN's own timing */
    if (perf[i].algo < 0 || perf[i].algo >= TIR_CUDNN_FWD_ALGO_COUNT) continue;
    tir_CudnnCandidate *c = add_cand(cv, PATH);
    snprintf(c->name, sizeof c->name, "%s%s", ALGO_NAMES[perf[i].algo], perf[i].mathType == TIR_CUDNN_DEFAULT_MATH ? " (FMA math)" : "");
    c->rank = i + 1;
    c->find_ms = perf[i].time;
    if (perf[i].status != TIR_CUDNN_STATUS_SUCCESS) {
      snprintf(c->note, sizeof c->note, "not run: %s", D.cudnnGetErrorString(perf[i].status));
      continue;
    }
    size_t wsb = perf[i].memory;
    if (wsb > limit) {
      snprintf(c->note, sizeof c->note, "needs %zu workspace bytes, over the limit %zu", wsb, limit);
      continue;
    }
    if ((rc = D.cudnnSetConvolutionMathType(cv->conv, perf[i].mathType))) {
      snprintf(c->note, sizeof c->note, "cudnnSetConvolutionMathType: %s", D.cudnnGetErrorString(rc));
      continue;
    }
    c->workspace = wsb;
    Run r = {.cv = cv, .algo = perf[i].algo, .ws = scratch, .ws_bytes = wsb, .x = x, .w = w, .y = y};
    c->ms = time_run(&r, c->note, sizeof c->note);
    if (c->ms < 0) continue;
    int take = ex ? (best->ms < 0 || c->ms < best->ms) : !taken;
    taken = 1;
    if (take) {
      best_clear(best);
      *best = (Best){.ms = c->ms, .ws = wsb, .algo = perf[i].algo, .math = perf[i].mathType,
                     .tensor_ops = perf[i].mathType != TIR_CUDNN_DEFAULT_MATH, .path = PATH};
      snprintf(best->name, sizeof best->name, "%s", c->name);
    }
  }
  return 0;
}

tir_CudnnConv2d *tir_cudnn_conv2d_plan(const tir_NDArray *x, const tir_NDArray *w, const tir_NDArray *y, const int stride[2],
                                       const int pad[2], const int dilation[2], int groups, const tir_CudnnOptions *opts,
                                       char *algo_name, size_t cap) {
  if (!load_cudnn()) return tir_error_set(TIR_ERR_CUDA, P, "%s", D.why), NULL;
  if (check_arrays(x, w, y)) return NULL;
  tir_CudnnOptions o = {0};
  if (opts) o = *opts;
  if (o.path < TIR_CUDNN_PATH_BEST || o.path > TIR_CUDNN_PATH_LEGACY_FIND_EX)
    return tir_error_set(TIR_ERR_VALUE, P, "unknown search path %d (best, backend, legacy, legacy_ex)", o.path), NULL;
  if (o.max_configs < 0 || o.max_configs > MAX_HEUR * 2)
    return tir_error_set(TIR_ERR_VALUE, P, "max_configs must be 1..%d (0: the default 32), got %d", MAX_HEUR * 2, o.max_configs), NULL;
  if (o.max_configs == 0) o.max_configs = 32;
  size_t limit = o.workspace_limit ? o.workspace_limit : (size_t)512 << 20;
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
  uint64_t scratch = 0;
  Best best = {.ms = -1};
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
  const void *xp = (const void *)(uintptr_t)x->dptr, *wp = (const void *)(uintptr_t)w->dptr;
  void *yp = (void *)(uintptr_t)y->dptr;
  /* the scratch workspace every candidate runs on (FindEx searches within it; plain Find
   * allocates its own, but its algorithms are timed here on this one) */
  if (tir_cuda_malloc(dev, limit, &scratch)) goto fail;
  if (o.path == TIR_CUDNN_PATH_BEST || o.path == TIR_CUDNN_PATH_BACKEND) {
    int64_t a = align_of(x->dptr), aw = align_of(w->dptr), ay = align_of(y->dptr);
    cv->align = a < aw ? (a < ay ? a : ay) : (aw < ay ? aw : ay);
    int64_t xd[4] = {n, c, h, wd}, wdim[4] = {k, cg, r, s}, yd[4] = {on, oc, oh, ow};
    if (bk_graph(cv, xd, wdim, yd, stride, pad, dilation)) {
      if (o.path == TIR_CUDNN_PATH_BACKEND) goto fail;
      tir_Error *e = tir_error_get(); /* path best: the legacy search still runs */
      snprintf(add_cand(cv, "backend")->note, sizeof cv->cands[0].note, "operation graph: %s", e && e->message ? e->message : "?");
      tir_error_clear();
    } else {
      search_backend(cv, &o, &best, xp, wp, yp, scratch, limit);
    }
  }
  if (o.path != TIR_CUDNN_PATH_BACKEND) search_legacy(cv, o.path != TIR_CUDNN_PATH_LEGACY_FIND, &best, xp, wp, yp, scratch, limit);
  if (scratch) tir_cuda_free(dev, scratch);
  scratch = 0;
  if (best.ms < 0) {
    char why[600] = "";
    size_t at = 0;
    for (int i = 0; i < cv->ncands && at < sizeof why; i++)
      at += (size_t)snprintf(why + at, sizeof why - at, "%s%s %s: %s", i ? "; " : "", cv->cands[i].path, cv->cands[i].name, cv->cands[i].note);
    tir_error_set(TIR_ERR_CUDA, P, "no cuDNN engine or algorithm ran this convolution (%d candidates: %s)", cv->ncands, cv->ncands ? why : "none");
    goto fail;
  }
  cv->backend = best.backend;
  cv->algo = best.algo;
  cv->math = best.math;
  cv->tensor_ops = best.tensor_ops;
  cv->find_ms = (float)best.ms;
  cv->ws_bytes = best.ws;
  cv->path = best.path;
  snprintf(cv->name, sizeof cv->name, "%s", best.name);
  cv->bcfg = best.cfg;
  cv->bplan = best.plan;
  best.cfg = best.plan = NULL;
  if (!cv->backend && status(D.cudnnSetConvolutionMathType(cv->conv, cv->math), "cudnnSetConvolutionMathType")) goto fail;
  if (cv->ws_bytes && tir_cuda_malloc(dev, cv->ws_bytes, &cv->ws)) goto fail;
  memcpy(cv->xs, x->shape, sizeof cv->xs);
  memcpy(cv->ws_, w->shape, sizeof cv->ws_);
  memcpy(cv->ys, y->shape, sizeof cv->ys);
  if (algo_name) snprintf(algo_name, cap, "%s", cv->name);
  return cv;
fail:
  best_clear(&best);
  if (scratch) tir_cuda_free(dev, scratch);
  tir_cudnn_conv2d_free(cv);
  return NULL;
}

const char *tir_cudnn_conv2d_algo(const tir_CudnnConv2d *c) { return c->name; }
const char *tir_cudnn_conv2d_path(const tir_CudnnConv2d *c) { return c->path; }
int tir_cudnn_conv2d_uses_tensor_ops(const tir_CudnnConv2d *c) { return c->tensor_ops; }
float tir_cudnn_conv2d_find_ms(const tir_CudnnConv2d *c) { return c->find_ms; }
size_t tir_cudnn_conv2d_workspace(const tir_CudnnConv2d *c) { return c->ws_bytes; }
int tir_cudnn_conv2d_candidates(const tir_CudnnConv2d *c, const tir_CudnnCandidate **out) {
  *out = c->cands;
  return c->ncands;
}

int tir_cudnn_conv2d_run(tir_CudnnConv2d *c, const tir_NDArray *x, const tir_NDArray *w, tir_NDArray *y) {
  if (check_arrays(x, w, y)) return -1;
  if (memcmp(x->shape, c->xs, sizeof c->xs) || memcmp(w->shape, c->ws_, sizeof c->ws_) || memcmp(y->shape, c->ys, sizeof c->ys) ||
      x->dev.id != c->dev)
    return tir_error_set(TIR_ERR_VALUE, P, "the arrays' shapes or device differ from the ones the plan was made for");
  if (tir_cuda_set_device(c->dev)) return -1;
  Run r = {.cv = c, .backend = c->backend, .plan = c->bplan, .algo = c->algo, .ws = c->ws, .ws_bytes = c->ws_bytes,
           .x = (const void *)(uintptr_t)x->dptr, .w = (const void *)(uintptr_t)w->dptr, .y = (void *)(uintptr_t)y->dptr};
  if (c->backend) {
    const tir_NDArray *arr[3] = {x, w, y};
    static const char *const NAMES[3] = {"x", "w", "y"};
    for (int i = 0; i < 3; i++)
      if (arr[i]->dptr % (uint64_t)c->align)
        return tir_error_set(TIR_ERR_VALUE, P, "%s's address is not %lld-byte aligned as the plan's arrays were (the engine relies on it)",
                             NAMES[i], (long long)c->align);
    void *ptr[3] = {(void *)r.x, (void *)r.w, r.y};
    if (!c->bpack || memcmp(ptr, c->pack_ptr, sizeof ptr)) { /* a variant pack holds the data pointers */
      char note[160];
      bk_destroy(&c->bpack);
      if (!(c->bpack = make_pack(r.x, r.w, r.y, c->ws, note, sizeof note))) return tir_error_set(TIR_ERR_CUDA, P, "%s", note);
      memcpy(c->pack_ptr, ptr, sizeof ptr);
    }
    r.pack = c->bpack;
  }
  return run_once(&r);
}
