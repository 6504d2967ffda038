/* nvrtc.c -- CUDA C to PTX and CUBIN with NVRTC, loaded by dlopen.  Works without a
 * GPU.  The library is searched in $TIRLUA_NVRTC, the loader path, then the toolkit
 * (/usr/local/cuda/lib64, $CUDA_HOME/lib64). */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tir/error.h"
#include "tir/runtime.h"

typedef int (*nvrtcCreateProgram_t)(void **prog, const char *src, const char *name, int n, const char *const *hdrs,
                                    const char *const *names);
typedef int (*nvrtcCompileProgram_t)(void *prog, int n, const char *const *opts);
typedef int (*nvrtcGetSize_t)(void *prog, size_t *n);
typedef int (*nvrtcGet_t)(void *prog, char *out);
typedef int (*nvrtcDestroyProgram_t)(void **prog);
typedef const char *(*nvrtcGetErrorString_t)(int rc);
typedef int (*nvrtcVersion_t)(int *major, int *minor);

static struct {
  int tried, ok;
  char why[512];
  void *lib;
  nvrtcCreateProgram_t create;
  nvrtcCompileProgram_t compile;
  nvrtcGetSize_t ptx_size, cubin_size, log_size;
  nvrtcGet_t ptx, cubin, log;
  nvrtcDestroyProgram_t destroy;
  nvrtcGetErrorString_t errstr;
  nvrtcVersion_t version;
} N;

static void *try_open(const char *path) { return dlopen(path, RTLD_NOW | RTLD_LOCAL); }

static int load(void) {
  if (N.tried) return N.ok;
  N.tried = 1;
  const char *env = getenv("TIRLUA_NVRTC");
  if (env && *env) N.lib = try_open(env);
  const char *names[] = {"libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so", NULL};
  for (int i = 0; names[i] && !N.lib; i++) N.lib = try_open(names[i]);
  const char *home = getenv("CUDA_HOME");
  const char *dirs[] = {home, "/usr/local/cuda", "/usr/local/cuda-13.0", "/usr/local/cuda-12", NULL};
  for (int d = 0; d < 4 && !N.lib; d++) {
    if (!dirs[d]) continue;
    for (int i = 0; names[i] && !N.lib; i++) {
      char path[1024];
      snprintf(path, sizeof path, "%s/lib64/%s", dirs[d], names[i]);
      N.lib = try_open(path);
    }
  }
  if (!N.lib) {
    snprintf(N.why, sizeof N.why, "NVRTC not found (libnvrtc.so; install the CUDA toolkit or set TIRLUA_NVRTC)");
    return 0;
  }
#define SYM(field, type, name)                                               \
  N.field = (type)dlsym(N.lib, name);                                        \
  if (!N.field) {                                                            \
    snprintf(N.why, sizeof N.why, "NVRTC library lacks %s", name);           \
    return 0;                                                                \
  }
  SYM(create, nvrtcCreateProgram_t, "nvrtcCreateProgram");
  SYM(compile, nvrtcCompileProgram_t, "nvrtcCompileProgram");
  SYM(ptx_size, nvrtcGetSize_t, "nvrtcGetPTXSize");
  SYM(ptx, nvrtcGet_t, "nvrtcGetPTX");
  SYM(cubin_size, nvrtcGetSize_t, "nvrtcGetCUBINSize");
  SYM(cubin, nvrtcGet_t, "nvrtcGetCUBIN");
  SYM(log_size, nvrtcGetSize_t, "nvrtcGetProgramLogSize");
  SYM(log, nvrtcGet_t, "nvrtcGetProgramLog");
  SYM(destroy, nvrtcDestroyProgram_t, "nvrtcDestroyProgram");
  SYM(errstr, nvrtcGetErrorString_t, "nvrtcGetErrorString");
  SYM(version, nvrtcVersion_t, "nvrtcVersion");
#undef SYM
  N.ok = 1;
  return 1;
}

int tir_nvrtc_available(char *why, size_t cap) {
  int ok = load();
  if (!ok && why) snprintf(why, cap, "%s", N.why);
  return ok;
}

int tir_nvrtc_version(int *major, int *minor) {
  if (!load()) return tir_error_set(TIR_ERR_NVRTC, "nvrtc", "%s", N.why);
  return N.version(major, minor) == 0 ? 0 : tir_error_set(TIR_ERR_NVRTC, "nvrtcVersion", "failed");
}

/* The CUDA include directory, for headers such as cuda_fp16.h ("" when none).  Found once:
** tir_module_compile_many calls NVRTC from several threads. */
static char include_opt[1024];
static pthread_once_t include_once = PTHREAD_ONCE_INIT;

static void find_include_dir(void) {
  char buf[1024];
  const char *home = getenv("CUDA_HOME");
  const char *cands[] = {home, "/usr/local/cuda", NULL};
  for (int i = 0; i < 2; i++) {
    if (!cands[i]) continue;
    snprintf(buf, sizeof buf, "%s/include/cuda_fp16.h", cands[i]);
    FILE *f = fopen(buf, "r");
    if (f) {
      fclose(f);
      snprintf(include_opt, sizeof include_opt, "-I%s/include", cands[i]);
      return;
    }
  }
}

static const char *cuda_include_dir(void) {
  pthread_once(&include_once, find_include_dir);
  return include_opt[0] ? include_opt : NULL;
}

int tir_nvrtc_compile(const char *src, const char *name, const char *arch, const char *const *opts, int n_opts,
                      char **ptx, char **cubin, size_t *cubin_len, char **log) {
  *ptx = NULL;
  *cubin = NULL;
  *cubin_len = 0;
  if (log) *log = NULL;
  if (!load()) return tir_error_set(TIR_ERR_NVRTC, "nvrtc", "%s", N.why);
  void *prog = NULL;
  int rc = N.create(&prog, src, name, 0, NULL, NULL);
  if (rc) return tir_error_set(TIR_ERR_NVRTC, "nvrtcCreateProgram", "%s", N.errstr(rc));
  const char **all = calloc((size_t)n_opts + 8, sizeof *all);
  int k = 0;
  char archopt[64];
  snprintf(archopt, sizeof archopt, "--gpu-architecture=%s", arch);
  all[k++] = archopt;
  all[k++] = "--std=c++17";
  all[k++] = "-default-device";
  const char *inc = cuda_include_dir();
  if (inc) all[k++] = inc;
  for (int i = 0; i < n_opts; i++) all[k++] = opts[i];
  rc = N.compile(prog, k, all);
  free(all);
  size_t ln = 0;
  char *lg = NULL;
  if (N.log_size(prog, &ln) == 0 && ln > 1) {
    lg = malloc(ln + 1);
    if (N.log(prog, lg) != 0) lg[0] = 0;
    lg[ln] = 0;
  }
  if (rc) {
    tir_error_set(TIR_ERR_NVRTC, "nvrtcCompileProgram", "NVRTC could not compile the generated CUDA C for %s: %s",
                  arch, N.errstr(rc));
    if (lg) tir_error_set_detail(lg);
    free(lg);
    N.destroy(&prog);
    return -1;
  }
  size_t n = 0;
  if (N.ptx_size(prog, &n) == 0 && n > 0) {
    *ptx = malloc(n + 1);
    if (N.ptx(prog, *ptx) != 0) (*ptx)[0] = 0;
    (*ptx)[n] = 0;
  }
  if (N.cubin_size(prog, &n) == 0 && n > 0) {
    *cubin = malloc(n);
    if (N.cubin(prog, *cubin) == 0) *cubin_len = n;
  }
  N.destroy(&prog);
  if (log) *log = lg;
  else free(lg);
  return 0;
}
