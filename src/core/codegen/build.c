/* build.c -- tir_build: lower, split, emit CUDA C, compile with NVRTC; and the built
 * module's launch path (argument checks, launch dimensions, temporaries, timing). */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tir/arith.h"
#include "tir/codegen.h"
#include "tir/kernel_cache.h"
#include "tir/scope.h"
#include "tir/error.h"
#include "tir/strbuf.h"
#include "tir/tma.h"

struct tir_BuiltModule {
  tir_PrimFunc *func;    /* as given */
  tir_PrimFunc *lowered; /* after the pipeline */
  tir_DeviceSplit split;
  char *cuda, *ptx, *host_text;
  char *cubin;
  size_t cubin_len;
  char arch[32];
  const char *cache_status; /* tir_module_cache_status */
  int no_cache;             /* the build's no_cache option, for a later tir_module_compile */
  int compiling;            /* in a tir_CompileJob not yet waited for (set and cleared by the caller's thread) */
  tir_Error compile_error;  /* what the last tir_module_compile_many attempt failed with (kind NONE: none) */
  char **dump_pass, **dump_ir;
  int n_dumps;
  /* loaded state */
  int loaded_dev;
  tir_CudaModule *cu;
  void **fns;
};

static void pick_arch(char *out, size_t cap, const char *want) {
  if (want && *want) {
    snprintf(out, cap, "%s", want);
    return;
  }
  tir_DeviceInfo info;
  if (tir_cuda_available(NULL, 0) && tir_cuda_device_info(0, &info) == 0) {
    snprintf(out, cap, "sm_%d%d", info.cc_major, info.cc_minor);
    return;
  }
  tir_error_clear();
  snprintf(out, cap, "sm_90");
}

static char *describe_host(const tir_DeviceSplit *s) {
  tir_StrBuf sb;
  tir_sb_init(&sb);
  for (int i = 0; i < s->host_allocs->size; i++) {
    const tir_Buffer *b = (const tir_Buffer *)s->host_allocs->items[i];
    char *shape = tir_print(&b->shape->hdr);
    tir_sb_printf(&sb, "allocate %s %s (global temporary)\n", b->name, shape);
    free(shape);
  }
  for (int i = 0; i < s->n_kernels; i++) {
    const tir_Kernel *k = &s->kernels[i];
    tir_sb_printf(&sb, "launch %s grid(", k->name);
    for (int d = 0; d < 3; d++) {
      char *e = tir_print_expr(k->grid[d]);
      tir_sb_printf(&sb, "%s%s", d ? ", " : "", e);
      free(e);
    }
    tir_sb_puts(&sb, ") block(");
    for (int d = 0; d < 3; d++) {
      char *e = tir_print_expr(k->block[d]);
      tir_sb_printf(&sb, "%s%s", d ? ", " : "", e);
      free(e);
    }
    tir_sb_puts(&sb, ") args(");
    for (int j = 0; j < k->func->params->size; j++) {
      const tir_Node *p = k->func->params->items[j];
      tir_sb_printf(&sb, "%s%s", j ? ", " : "", p->kind == TIR_Buffer ? ((const tir_Buffer *)p)->name : ((const tir_Var *)p)->name);
    }
    tir_sb_puts(&sb, ")\n");
  }
  return tir_sb_take(&sb);
}

/* The on-disk cache's key text for m (kernel_cache.h): everything the PTX/CUBIN depend on.
** NULL when the cache is off.  The NVRTC version comes first so that an NVRTC that cannot be
** opened (no toolkit) simply misses. */
static char *cache_key(const tir_BuiltModule *m, const char *const *opts, int n_opts) {
  char dir[4096];
  if (tir_kcache_dir(dir, sizeof dir) != 1) return NULL; /* off, or no directory can be named */
  int maj = 0, min = 0;
  if (tir_nvrtc_version(&maj, &min) != 0) {
    tir_error_clear();
    return NULL; /* no NVRTC: the compile below reports it */
  }
  tir_StrBuf sb;
  tir_sb_init(&sb);
  tir_sb_printf(&sb, "tirlua kernel cache key v1\narch=%s\nnvrtc=%d.%d\ndriver=%d\nopts=", m->arch, maj, min,
                tir_cuda_driver_version());
  for (int i = 0; i < n_opts; i++) tir_sb_printf(&sb, "%s%s", i ? " " : "", opts[i]);
  tir_sb_printf(&sb, "\nlowered=%016llx\n", (unsigned long long)tir_structural_hash(&m->lowered->hdr));
  tir_sb_puts(&sb, m->cuda);
  return tir_sb_take(&sb);
}

const char *tir_module_cache_status(const tir_BuiltModule *m) { return m->cache_status ? m->cache_status : "none"; }

static const char *const COMPILE_OPTS[] = {"-lineinfo"};
#define N_COMPILE_OPTS 1

/* PTX + CUBIN for m from the cache (key, owned, NULL: no cache) or NVRTC; stores what NVRTC
** made.  Safe to run on several modules in several threads at once (the cache locks its own
** state; NVRTC is thread-safe once loaded).  -1 with the error set (the source attached). */
static int compile_module(tir_BuiltModule *m, char *key) {
  char *log = NULL;
  if (key && tir_kcache_lookup(key, &m->ptx, &m->cubin, &m->cubin_len)) {
    m->cache_status = "hit";
    free(key);
    return 0;
  }
  if (tir_nvrtc_compile(m->cuda, "tirlua_kernel.cu", m->arch, COMPILE_OPTS, N_COMPILE_OPTS, &m->ptx, &m->cubin,
                        &m->cubin_len, &log) != 0) {
    free(log);
    free(key);
    /* attach the source: the NVRTC log names its lines */
    tir_Error *e = tir_error_get();
    tir_StrBuf sb;
    tir_sb_init(&sb);
    tir_sb_printf(&sb, "%s\n---- generated CUDA C ----\n", e->detail ? e->detail : "");
    int ln = 1;
    tir_sb_printf(&sb, "%4d  ", ln);
    for (const char *c = m->cuda; *c; c++) {
      tir_sb_putc(&sb, *c);
      if (*c == '\n' && c[1]) tir_sb_printf(&sb, "%4d  ", ++ln);
    }
    tir_error_set_detail(sb.data);
    tir_sb_free(&sb);
    return -1;
  }
  free(log);
  m->cache_status = key && tir_kcache_store(key, m->ptx, m->cubin, m->cubin_len) == 0 ? "miss" : "off";
  free(key);
  return 0;
}

static void clear_saved_error(tir_Error *e) {
  free(e->message);
  free(e->detail);
  memset(e, 0, sizeof *e);
}

int tir_module_compile(tir_BuiltModule *m) {
  if (m->compiling) return tir_error_set(TIR_ERR_RUNTIME, "compile", "the module is already being compiled in the background");
  if (m->ptx) return 0;
  return compile_module(m, m->no_cache ? NULL : cache_key(m, COMPILE_OPTS, N_COMPILE_OPTS));
}

struct tir_CompileJob {
  tir_BuiltModule **ms; /* borrowed: the caller keeps the modules alive until the wait */
  char **keys;
  int n;
  int next; /* the next module to take, under lock */
  pthread_mutex_t lock;
  pthread_t threads[64];
  int n_threads;
};

static void *compile_worker(void *arg) {
  tir_CompileJob *q = arg;
  for (;;) {
    pthread_mutex_lock(&q->lock);
    int i = q->next++;
    pthread_mutex_unlock(&q->lock);
    if (i >= q->n) return NULL;
    tir_BuiltModule *m = q->ms[i];
    char *key = q->keys[i];
    q->keys[i] = NULL;
    if (!m) {
      free(key);
      continue;
    }
    if (compile_module(m, key) != 0) { /* keep this thread's error with the module */
      tir_Error *e = tir_error_get();
      m->compile_error.kind = e->kind;
      snprintf(m->compile_error.primitive, sizeof m->compile_error.primitive, "%s", e->primitive);
      m->compile_error.message = strdup(e->message ? e->message : "");
      m->compile_error.detail = e->detail ? strdup(e->detail) : NULL;
      tir_error_clear();
    }
  }
}

tir_CompileJob *tir_module_compile_start(tir_BuiltModule **ms, int n, int n_threads) {
  int maj, min;
  /* load NVRTC and the driver here, in one thread, before the workers use them */
  if (tir_nvrtc_version(&maj, &min) != 0) return NULL;
  (void)tir_cuda_driver_version();
  tir_CompileJob *q = calloc(1, sizeof *q);
  q->ms = malloc(sizeof *q->ms * (size_t)(n > 0 ? n : 1));
  q->keys = calloc((size_t)(n > 0 ? n : 1), sizeof(char *));
  q->n = n;
  pthread_mutex_init(&q->lock, NULL);
  for (int i = 0; i < n; i++) {
    q->ms[i] = ms[i];
    if (!ms[i] || ms[i]->ptx || ms[i]->compiling) {
      q->ms[i] = NULL; /* nothing to do, or another job's */
      continue;
    }
    ms[i]->compiling = 1;
    clear_saved_error(&ms[i]->compile_error);
    q->keys[i] = ms[i]->no_cache ? NULL : cache_key(ms[i], COMPILE_OPTS, N_COMPILE_OPTS); /* hashing: here */
  }
  if (n_threads < 1) n_threads = 1;
  if (n_threads > 64) n_threads = 64;
  if (n_threads > n) n_threads = n > 0 ? n : 1;
  for (int t = 0; t < n_threads; t++) {
    if (pthread_create(&q->threads[q->n_threads], NULL, compile_worker, q) != 0) break;
    q->n_threads++;
  }
  if (q->n_threads == 0) compile_worker(q); /* no thread could start: compile here */
  return q;
}

int tir_module_compile_wait(tir_CompileJob *q) {
  for (int t = 0; t < q->n_threads; t++) pthread_join(q->threads[t], NULL);
  int failed = 0;
  for (int i = 0; i < q->n; i++) {
    if (q->ms[i]) {
      failed += q->ms[i]->compile_error.kind != TIR_ERR_NONE;
      q->ms[i]->compiling = 0;
    }
    free(q->keys[i]);
  }
  pthread_mutex_destroy(&q->lock);
  free(q->keys);
  free(q->ms);
  free(q);
  return failed;
}

int tir_module_compile_many(tir_BuiltModule **ms, int n, int n_threads) {
  tir_CompileJob *q = tir_module_compile_start(ms, n, n_threads);
  return q ? tir_module_compile_wait(q) : -1;
}

int tir_module_compile_error(const tir_BuiltModule *m) {
  const tir_Error *e = &m->compile_error;
  if (e->kind == TIR_ERR_NONE) return 0;
  tir_error_set(e->kind, e->primitive, "%s", e->message ? e->message : "");
  if (e->detail) tir_error_set_detail(e->detail);
  return -1;
}

tir_BuiltModule *tir_build(const tir_PrimFunc *f, const tir_BuildOptions *opts) {
  tir_BuildOptions defaults;
  memset(&defaults, 0, sizeof defaults);
  if (!opts) opts = &defaults;
  tir_LowerOptions lo;
  memset(&lo, 0, sizeof lo);
  lo.dump = opts->dump_ir;
  lo.unroll_max_extent = opts->unroll_max_extent;
  tir_BuiltModule *m = calloc(1, sizeof *m);
  m->loaded_dev = -1;
  m->func = (tir_PrimFunc *)tir_retain(f);
  m->lowered = tir_lower(f, &lo);
  m->dump_pass = lo.pass_names;
  m->dump_ir = lo.pass_ir;
  m->n_dumps = lo.n_dumps;
  if (!m->lowered) goto fail;
  if (tir_split_host_device(m->lowered, f, &m->split) != 0) goto fail;
  pick_arch(m->arch, sizeof m->arch, opts->arch);
  /* a kernel over the target's shared memory a block would fail at load (the attribute) or launch */
  for (int i = 0; i < m->split.n_kernels; i++) {
    const tir_Kernel *k = &m->split.kernels[i];
    if (tir_check_shared_memory(TIR_ERR_CODEGEN, "build", k->name, k->func->body, k->dyn_smem_bytes,
                                strncmp(m->arch, "sm_", 3) == 0 ? atoi(m->arch + 3) : 0) != 0)
      goto fail;
  }
  m->cuda = tir_codegen_cuda(&m->split, m->arch);
  if (!m->cuda) goto fail;
  m->host_text = describe_host(&m->split);
  m->cache_status = "none";
  m->no_cache = opts->no_cache;
  if (!opts->skip_compile && compile_module(m, m->no_cache ? NULL : cache_key(m, COMPILE_OPTS, N_COMPILE_OPTS)) != 0)
    goto fail;
  return m;
fail:
  tir_module_free(m);
  return NULL;
}

void tir_module_free(tir_BuiltModule *m) {
  if (!m) return;
  clear_saved_error(&m->compile_error);
  tir_release(m->func);
  tir_release(m->lowered);
  if (m->split.host) tir_device_split_free(&m->split);
  free(m->cuda);
  free(m->ptx);
  free(m->cubin);
  free(m->host_text);
  for (int i = 0; i < m->n_dumps; i++) {
    free(m->dump_pass[i]);
    free(m->dump_ir[i]);
  }
  free(m->dump_pass);
  free(m->dump_ir);
  tir_cuda_module_free(m->cu);
  free(m->fns);
  free(m);
}

const char *tir_module_source(tir_BuiltModule *m, const char *kind) {
  if (strcmp(kind, "cuda") == 0) return m->cuda;
  if (strcmp(kind, "ptx") == 0) return m->ptx;
  if (strcmp(kind, "host") == 0) return m->host_text;
  return NULL;
}
const char *tir_module_arch(const tir_BuiltModule *m) { return m->arch; }
const tir_PrimFunc *tir_module_func(const tir_BuiltModule *m) { return m->func; }
const tir_PrimFunc *tir_module_lowered(const tir_BuiltModule *m) { return m->lowered; }
int tir_module_num_dumps(const tir_BuiltModule *m) { return m->n_dumps; }
void tir_module_dump(const tir_BuiltModule *m, int i, const char **pass, const char **ir) {
  *pass = m->dump_pass[i];
  *ir = m->dump_ir[i];
}
int tir_module_num_kernels(const tir_BuiltModule *m) { return m->split.n_kernels; }
const tir_Kernel *tir_module_kernel(const tir_BuiltModule *m, int i) { return &m->split.kernels[i]; }

static int ensure_loaded(tir_BuiltModule *m, int dev) {
  if (m->compiling) return tir_error_set(TIR_ERR_RUNTIME, "module", "the module is still being compiled in the background (wait for its job first)");
  if (m->cu && m->loaded_dev == dev) return 0;
  if (!m->cubin) return tir_error_set(TIR_ERR_RUNTIME, "module", "the module was built without compiling (no CUBIN)");
  tir_DeviceInfo info;
  if (tir_cuda_device_info(dev, &info) != 0) return -1;
  char dev_arch[32];
  snprintf(dev_arch, sizeof dev_arch, "sm_%d%d", info.cc_major, info.cc_minor);
  if (strncmp(dev_arch, m->arch, strlen(dev_arch)) != 0)
    return tir_error_set(TIR_ERR_RUNTIME, "module", "the module was compiled for %s but device %d (%s) is %s; rebuild with -arch=%s",
                         m->arch, dev, info.name, dev_arch, dev_arch);
  tir_cuda_module_free(m->cu);
  m->cu = tir_cuda_module_load(dev, m->cubin, m->cubin_len);
  if (!m->cu) return -1;
  m->loaded_dev = dev;
  free(m->fns);
  m->fns = calloc((size_t)m->split.n_kernels, sizeof *m->fns);
  for (int i = 0; i < m->split.n_kernels; i++) {
    m->fns[i] = tir_cuda_module_function(m->cu, m->split.kernels[i].name);
    if (!m->fns[i]) return -1;
    if (m->split.kernels[i].dyn_smem_bytes > 48 * 1024 &&
        tir_cuda_func_set_max_dynamic_smem(m->fns[i], (int)m->split.kernels[i].dyn_smem_bytes) != 0)
      return -1;
  }
  return 0;
}

int tir_module_kernel_resources(tir_BuiltModule *m, int i, int dev, int *regs, int *local_bytes, int *smem_bytes) {
  if (i < 0 || i >= m->split.n_kernels) return tir_error_set(TIR_ERR_VALUE, "module", "no kernel %d", i);
  if (ensure_loaded(m, dev)) return -1;
  return tir_cuda_func_attributes(m->fns[i], regs, local_bytes, smem_bytes);
}

/* Everything one call needs: argument values per kernel, launch dims, temporaries. */
typedef struct {
  tir_BuiltModule *m;
  int dev;
  int nk;
  unsigned (*grid)[3], (*block)[3];
  void ***kargs;     /* per kernel: array of pointers to values */
  uint64_t **kvals;  /* per kernel: storage for pointer/scalar values (8 bytes each) */
  void **kmaps;      /* per kernel: its encoded CUtensorMaps (128 bytes each, 64-byte aligned) */
  tir_NDArray **temps;
  int n_temps;
} Launch;

static void launch_free(Launch *L) {
  for (int i = 0; i < L->nk; i++) {
    free(L->kargs ? L->kargs[i] : NULL);
    free(L->kvals ? L->kvals[i] : NULL);
    free(L->kmaps ? L->kmaps[i] : NULL);
  }
  free(L->kmaps);
  free(L->kargs);
  free(L->kvals);
  free(L->grid);
  free(L->block);
  for (int i = 0; i < L->n_temps; i++) tir_nd_release(L->temps[i]);
  free(L->temps);
}

/* Value of a launch-dimension expression given the call's scalars and shapes. */
static int eval_dim(const tir_Node *e, tir_Analyzer *an, int64_t *out) {
  if (!tir_as_const_int(an, e, out)) {
    char *s = tir_print_expr(e);
    tir_error_set(TIR_ERR_RUNTIME, "module", "cannot evaluate launch dimension %s for these arguments", s);
    free(s);
    return -1;
  }
  return 0;
}

static int eval_desc_dim(void *an, const tir_Node *e, int64_t *v) { return tir_as_const_int(an, e, v); }

/* The kernel's tensor maps (tma_descriptor calls, include/tir/tma.h) for this call's arrays:
 * parameters np.. of kernel k. */
static int encode_tensor_maps(Launch *L, int k, const tir_PrimFunc *f, const tir_InterpArg *args, int nargs, tir_Analyzer *an) {
  const tir_Kernel *K = &L->m->split.kernels[k];
  int np = K->func->params->size, nd = K->tma_descs->size;
  L->kmaps[k] = aligned_alloc(64, (size_t)nd * 128);
  if (!L->kmaps[k]) return tir_error_set(TIR_ERR_RUNTIME, K->name, "out of memory for tensor maps");
  for (int i = 0; i < nd; i++) {
    const tir_Node *c = K->tma_descs->items[i];
    tir_TmaDesc d;
    char why[256];
    if (tir_tma_desc_from_call(c, eval_desc_dim, an, &d, why, sizeof why))
      return tir_error_set(TIR_ERR_RUNTIME, K->name, "tensor map %d: %s", i, why);
    const tir_Node *data = ((const tir_Call *)c)->args->items[0];
    uint64_t dptr = 0;
    int found = 0;
    for (int a = 0; a < nargs && !found; a++) {
      const tir_Node *hp = f->params->items[a];
      if (hp->kind == TIR_Buffer && &((const tir_Buffer *)hp)->data->hdr == data) {
        dptr = args[a].array->dptr;
        found = 1;
      }
    }
    for (int t = 0; t < L->m->split.host_allocs->size && !found; t++)
      if (&((const tir_Buffer *)L->m->split.host_allocs->items[t])->data->hdr == data) {
        dptr = L->temps[t]->dptr;
        found = 1;
      }
    if (!found) return tir_error_set(TIR_ERR_INTERNAL, K->name, "tensor map %d: its buffer is not an argument", i);
    char *map = (char *)L->kmaps[k] + (size_t)i * 128;
    if (tir_cuda_tensor_map_encode(map, &d, dptr)) return -1;
    L->kargs[k][np + i] = map;
  }
  return 0;
}

/* A kernel with cluster dims (AttrStmt cluster_dims, compiled in as __cluster_dims__) runs on
 * compute capability 9.0+ only, on a grid of whole clusters (CUDA C++ Programming Guide, thread
 * block clusters). */
static int check_cluster(const Launch *L, int k) {
  const tir_Kernel *K = &L->m->split.kernels[k];
  if (K->cluster[0] <= 0) return 0;
  tir_DeviceInfo di;
  if (tir_cuda_device_info(L->dev, &di)) return -1;
  if (di.cc_major < 9)
    return tir_error_set(TIR_ERR_CUDA, K->name, "the kernel is launched as thread-block clusters of (%d, %d, %d) CTAs, which need "
                         "compute capability 9.0+; device %d is sm_%d%d", K->cluster[0],
                         K->cluster[1], K->cluster[2], L->dev, di.cc_major, di.cc_minor);
  for (int d = 0; d < 3; d++)
    if (L->grid[k][d] % (unsigned)K->cluster[d] != 0)
      return tir_error_set(TIR_ERR_CUDA, K->name, "grid dimension %c = %u is not a multiple of the cluster's %d (CUDA launches "
                           "whole clusters)", 'x' + d, L->grid[k][d], K->cluster[d]);
  return 0;
}

static int prepare(tir_BuiltModule *m, const tir_InterpArg *args, int nargs, Launch *L) {
  memset(L, 0, sizeof *L);
  L->m = m;
  const tir_PrimFunc *f = m->func;
  if (tir_check_args(f, args, nargs, TIR_DEV_CUDA, f->name) != 0) return -1;
  int dev = -1;
  for (int i = 0; i < nargs; i++)
    if (args[i].array) {
      if (dev >= 0 && args[i].array->dev.id != dev)
        return tir_error_set(TIR_ERR_RUNTIME, f->name, "arguments are on different devices (cuda:%d and cuda:%d)", dev,
                             args[i].array->dev.id);
      dev = args[i].array->dev.id;
    }
  if (dev < 0) dev = 0;
  L->dev = dev;
  if (ensure_loaded(m, dev)) return -1;
  /* bind scalar params and symbolic shape vars for the launch expressions */
  tir_Analyzer *an = tir_analyzer_new();
  for (int i = 0; i < nargs; i++) {
    const tir_Node *p = f->params->items[i];
    if (p->kind == TIR_Var && tir_dtype_is_int(p->dtype)) {
      tir_Node *v = tir_int_imm(p->dtype, args[i].ival);
      tir_analyzer_bind_value(an, (const tir_Var *)p, v);
      tir_release(v);
    } else if (p->kind == TIR_Buffer) {
      const tir_Buffer *b = (const tir_Buffer *)p;
      for (int d = 0; d < b->shape->size; d++)
        if (b->shape->items[d]->kind == TIR_Var) {
          tir_Node *v = tir_int_imm(b->shape->items[d]->dtype, args[i].array->shape[d]);
          tir_analyzer_bind_value(an, (const tir_Var *)b->shape->items[d], v);
          tir_release(v);
        }
    }
  }
  int rc = 0;
  /* temporaries */
  L->temps = calloc((size_t)m->split.host_allocs->size + 1, sizeof *L->temps);
  for (int i = 0; i < m->split.host_allocs->size && !rc; i++) {
    const tir_Buffer *b = (const tir_Buffer *)m->split.host_allocs->items[i];
    int64_t shape[TIR_MAX_NDIM];
    int nd = b->shape->size;
    for (int d = 0; d < nd && !rc; d++) rc = eval_dim(b->shape->items[d], an, &shape[d]);
    if (rc) break;
    L->temps[i] = tir_nd_empty(shape, nd, b->hdr.dtype, (tir_Device){TIR_DEV_CUDA, dev});
    if (!L->temps[i]) rc = -1;
    else L->n_temps++;
    /* counters of tir_grid_arrive_last start at 0 (the kernels leave them 0: one memset per call
     * prepared, none per launch of a timing loop) */
    if (!rc && tir_scope_is_zeroed(b->scope))
      rc = tir_cuda_memset_zero(dev, L->temps[i]->dptr, L->temps[i]->nbytes);
  }
  L->nk = m->split.n_kernels;
  L->grid = calloc((size_t)L->nk, sizeof *L->grid);
  L->block = calloc((size_t)L->nk, sizeof *L->block);
  L->kargs = calloc((size_t)L->nk, sizeof *L->kargs);
  L->kvals = calloc((size_t)L->nk, sizeof *L->kvals);
  L->kmaps = calloc((size_t)L->nk, sizeof *L->kmaps);
  for (int k = 0; k < L->nk && !rc; k++) {
    const tir_Kernel *K = &m->split.kernels[k];
    int64_t g[3], b[3];
    for (int d = 0; d < 3 && !rc; d++) {
      rc = eval_dim(K->grid[d], an, &g[d]);
      if (!rc) rc = eval_dim(K->block[d], an, &b[d]);
    }
    if (!rc) rc = tir_check_launch_dims(TIR_ERR_RUNTIME, K->name, K->name, g, b, 0);
    if (!rc) rc = tir_check_warp_launch(TIR_ERR_RUNTIME, K->name, K->name, K->warp_op, b);
    for (int d = 0; d < 3 && !rc; d++) {
      L->grid[k][d] = (unsigned)g[d];
      L->block[k][d] = (unsigned)b[d];
    }
    /* once per call, not per launch: time_evaluator's launch loop runs launch_all only */
    if (!rc) rc = check_cluster(L, k);
    int np = K->func->params->size, nd = K->tma_descs->size;
    L->kargs[k] = calloc((size_t)(np + nd) + 1, sizeof(void *));
    L->kvals[k] = calloc((size_t)np + 1, sizeof(uint64_t));
    for (int j = 0; j < np && !rc; j++) {
      const tir_Node *p = K->func->params->items[j];
      int found = 0;
      if (p->kind == TIR_Buffer) {
        const tir_Var *data = ((const tir_Buffer *)p)->data;
        for (int i = 0; i < nargs && !found; i++) {
          const tir_Node *hp = f->params->items[i];
          if (hp->kind == TIR_Buffer && ((const tir_Buffer *)hp)->data == data) {
            L->kvals[k][j] = args[i].array->dptr;
            found = 1;
          }
        }
        for (int i = 0; i < m->split.host_allocs->size && !found; i++)
          if (((const tir_Buffer *)m->split.host_allocs->items[i])->data == data) {
            L->kvals[k][j] = L->temps[i]->dptr;
            found = 1;
          }
      } else {
        for (int i = 0; i < nargs && !found; i++)
          if (f->params->items[i] == p) {
            /* scalars are passed by value in their C type's width */
            if (tir_dtype_is_float(p->dtype)) {
              if (p->dtype.bits == 32) {
                float fv = (float)args[i].fval;
                memcpy(&L->kvals[k][j], &fv, sizeof fv);
              } else {
                memcpy(&L->kvals[k][j], &args[i].fval, sizeof(double));
              }
            } else if (p->dtype.bits == 64) {
              memcpy(&L->kvals[k][j], &args[i].ival, 8);
            } else {
              int32_t iv = (int32_t)args[i].ival;
              memcpy(&L->kvals[k][j], &iv, 4);
            }
            found = 1;
          }
        if (!found) {
          /* a symbolic shape var: its value from the arrays */
          int64_t v;
          tir_Node *e = tir_retain(p);
          if (tir_as_const_int(an, e, &v)) {
            if (p->dtype.bits == 64) memcpy(&L->kvals[k][j], &v, 8);
            else {
              int32_t iv = (int32_t)v;
              memcpy(&L->kvals[k][j], &iv, 4);
            }
            found = 1;
          }
          tir_release(e);
        }
      }
      if (!found)
        rc = tir_error_set(TIR_ERR_INTERNAL, K->name, "kernel parameter %d has no value at launch", j + 1);
      L->kargs[k][j] = &L->kvals[k][j];
    }
    if (!rc && nd) rc = encode_tensor_maps(L, k, f, args, nargs, an);
  }
  tir_analyzer_free(an);
  return rc;
}

static int launch_all(void *ctx) {
  Launch *L = ctx;
  for (int k = 0; k < L->nk; k++)
    if (tir_cuda_launch(L->m->fns[k], L->grid[k], L->block[k], (unsigned)L->m->split.kernels[k].dyn_smem_bytes, L->kargs[k]) != 0)
      return -1;
  return 0;
}

int tir_module_run(tir_BuiltModule *m, const tir_InterpArg *args, int nargs) {
  Launch L;
  int rc = prepare(m, args, nargs, &L);
  if (!rc) rc = launch_all(&L);
  if (!rc) rc = tir_cuda_synchronize(L.dev);
  launch_free(&L);
  return rc;
}

int tir_module_launch(tir_BuiltModule *m, const tir_InterpArg *args, int nargs) {
  Launch L;
  int rc = prepare(m, args, nargs, &L);
  if (!rc) rc = launch_all(&L);
  /* temporaries are freed below: the kernels using them must be done first */
  if (!rc && L.n_temps) rc = tir_cuda_synchronize(L.dev);
  launch_free(&L);
  return rc;
}

int tir_module_time(tir_BuiltModule *m, const tir_InterpArg *args, int nargs, int warmup, int number, int repeat,
                    double *median_s, double *samples_s) {
  Launch L;
  int rc = prepare(m, args, nargs, &L);
  if (!rc) rc = tir_cuda_time(L.dev, launch_all, &L, warmup, number, repeat, median_s, samples_s);
  launch_free(&L);
  return rc;
}
