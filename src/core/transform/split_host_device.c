/* split_host_device.c -- cuts the lowered function into device kernels (TVM
 * src/tir/transforms/split_host_device.cc).
 *
 * The top of the body (sequences, global-scope allocations) is host code: global
 * allocations become temporaries the runtime allocates, and every other statement must
 * be a kernel region produced by lower_thread_binding (a chain of launch_thread
 * attributes).  A kernel's parameters are the buffers (data pointers) and scalar
 * variables it uses but does not define; its launch dimensions come from the chain. */
#include <stdlib.h>
#include <string.h>

#include "pass_util.h"
#include "tir/runtime.h"
#include "tir/strbuf.h"
#include "tir/transform.h"
#include "tir/scope.h"
#include "tir/tma.h"
#include "tir/swizzle.h"

typedef struct {
  const tir_Node **defined;
  int n_def, cap_def;
  const tir_Buffer **bufs; /* first buffer seen for each free data var */
  int n_bufs, cap_bufs;
  const tir_Var **scalars;
  int n_sc, cap_sc;
} FreeCtx;

static void push(const void ***a, int *n, int *cap, const void *x) {
  for (int i = 0; i < *n; i++)
    if ((*a)[i] == x) return;
  if (*n == *cap) {
    *cap = *cap ? *cap * 2 : 16;
    *a = realloc(*a, sizeof(void *) * (size_t)*cap);
  }
  (*a)[(*n)++] = x;
}

static int is_defined(FreeCtx *c, const void *x) {
  for (int i = 0; i < c->n_def; i++)
    if (c->defined[i] == x) return 1;
  return 0;
}

/* First pass: everything the kernel defines (loop vars, lets, thread vars, allocations). */
static int def_fn(const tir_Node *n, void *p) {
  FreeCtx *c = p;
  switch (n->kind) {
    case TIR_For: push((const void ***)&c->defined, &c->n_def, &c->cap_def, ((const tir_For *)n)->loop_var); break;
    case TIR_LetStmt: push((const void ***)&c->defined, &c->n_def, &c->cap_def, ((const tir_LetStmt *)n)->var); break;
    case TIR_Let: push((const void ***)&c->defined, &c->n_def, &c->cap_def, ((const tir_Let *)n)->var); break;
    case TIR_IterVar: push((const void ***)&c->defined, &c->n_def, &c->cap_def, ((const tir_IterVar *)n)->var); break;
    case TIR_Allocate: push((const void ***)&c->defined, &c->n_def, &c->cap_def, ((const tir_Allocate *)n)->buffer->data); break;
    default: break;
  }
  return 0;
}

static int use_fn(const tir_Node *n, void *p) {
  FreeCtx *c = p;
  const tir_Buffer *b = NULL;
  if (n->kind == TIR_BufferLoad) b = ((const tir_BufferLoad *)n)->buffer;
  else if (n->kind == TIR_BufferStore) b = ((const tir_BufferStore *)n)->buffer;
  if (b) {
    if (!is_defined(c, b->data)) {
      int seen = 0;
      for (int i = 0; i < c->n_bufs; i++)
        if (c->bufs[i]->data == b->data) seen = 1;
      if (!seen) push((const void ***)&c->bufs, &c->n_bufs, &c->cap_bufs, b);
    }
    return 0;
  }
  if (n->kind == TIR_Buffer) return 1; /* shapes of buffers are not uses */
  if (n->kind == TIR_Var && !tir_dtype_is_handle(n->dtype) && !is_defined(c, n))
    push((const void ***)&c->scalars, &c->n_sc, &c->cap_sc, n);
  return 0;
}

/* Position of a buffer's data among the host parameters (for a stable argument order). */
static int host_rank(const tir_PrimFunc *host, const tir_Buffer *b) {
  for (int i = 0; i < host->params->size; i++) {
    const tir_Node *p = host->params->items[i];
    if (p->kind == TIR_Buffer && ((const tir_Buffer *)p)->data == b->data) return i;
  }
  return host->params->size;
}

typedef struct {
  const char *op;
} WarpCtx;

static int warp_fn(const tir_Node *n, void *p) {
  WarpCtx *w = p;
  if (n->kind == TIR_Call && !w->op) {
    const char *op = ((const tir_Call *)n)->op;
    if (tir_builtin_has(op, TIR_BUILTIN_WARP)) w->op = op;
  }
  return 0;
}

int64_t tir_shared_slice_align(const tir_Kernel *k, const tir_Buffer *b) {
  int64_t al = tir_swizzle_repeat(b->swizzle);
  if (al < 128) al = 128;
  for (int i = 0; k && k->tma_smem && i < k->tma_smem->size; i++)
    if (k->tma_smem->items[i] == &b->data->hdr && al < TIR_TMA_SMEM_ALIGN) al = TIR_TMA_SMEM_ALIGN;
  return al;
}

int64_t tir_shared_slice_bytes(const tir_Buffer *b) {
  int64_t e = tir_dtype_bytes(b->hdr.dtype);
  for (int i = 0; i < b->shape->size; i++) {
    int64_t d;
    if (!tir_is_const_int(b->shape->items[i], &d)) return -1;
    e *= d;
  }
  return (e + 15) / 16 * 16;
}

/* The distinct tma_descriptor / tma_im2col_descriptor calls (structurally), in the order met: the kernel's tensor-map parameters. */
static int tma_desc_fn(const tir_Node *n, void *p) {
  tir_Array **descs = p;
  if (!tir_tma_is_descriptor(n)) return 0;
  for (int i = 0; i < (*descs)->size; i++)
    if (tir_structural_equal((*descs)->items[i], n)) return 0;
  *descs = tir_array_push(*descs, tir_retain(n));
  return 0;
}

/* AttrStmt "cluster_dims" (value: the array {x, y, z} of constants; inject_tma_pipeline's
 * tma_cluster) anywhere in the kernel: its thread-block cluster shape, launched with
 * __cluster_dims__ in the kernel's code (codegen_cuda.c).  -1 when two
 * differ or one is malformed. */
typedef struct {
  int dims[3], bad;
} ClusterCtx;

static int cluster_fn(const tir_Node *n, void *p) {
  ClusterCtx *c = p;
  if (n->kind != TIR_AttrStmt || strcmp(((const tir_AttrStmt *)n)->key, "cluster_dims") != 0) return 0;
  const tir_Node *v = ((const tir_AttrStmt *)n)->value;
  int d[3];
  int64_t x;
  if (!v || v->kind != TIR_Array || ((const tir_Array *)v)->size != 3) {
    c->bad = 1;
    return 0;
  }
  for (int i = 0; i < 3; i++) {
    if (!tir_is_const_int(((const tir_Array *)v)->items[i], &x) || x < 1 || x > 16) {
      c->bad = 1;
      return 0;
    }
    d[i] = (int)x;
  }
  if (c->dims[0] && memcmp(c->dims, d, sizeof d) != 0) c->bad = 1;
  memcpy(c->dims, d, sizeof d);
  return 0;
}

static int make_kernel(const tir_Node *region, const char *name, const tir_PrimFunc *host, tir_Kernel *k) {
  memset(k, 0, sizeof *k);
  for (int i = 0; i < 3; i++) {
    k->grid[i] = tir_i32(1);
    k->block[i] = tir_i32(1);
  }
  const tir_Node *s = region;
  int any = 0;
  while (s->kind == TIR_AttrStmt && strcmp(((const tir_AttrStmt *)s)->key, "thread_extent") == 0) {
    const tir_AttrStmt *a = (const tir_AttrStmt *)s;
    const char *tag = ((const tir_IterVar *)a->node)->thread_tag;
    tir_Node **slot = NULL;
    if (strncmp(tag, "blockIdx.", 9) == 0) slot = &k->grid[tag[9] - 'x'];
    else if (strncmp(tag, "threadIdx.", 10) == 0) slot = &k->block[tag[10] - 'x'];
    if (slot) {
      /* the dimension before its int32 cast, so that a launch-time check sees 2^32, not 0 */
      const tir_Node *v = a->value;
      if (v->kind == TIR_Cast && ((const tir_Cast *)v)->value->dtype.bits > 32) v = ((const tir_Cast *)v)->value;
      tir_release(*slot);
      *slot = tir_retain(v);
    }
    any = 1;
    s = a->body;
  }
  if (!any) {
    char *txt = tir_print(region);
    if (region->kind == TIR_For)
      tir_error_set(TIR_ERR_LOWER, "split_host_device",
                    "loop '%s' is not inside any loop bound to blockIdx/threadIdx, so it would run on the host, but tirlua "
                    "generates device code only: bind its loops to blockIdx/threadIdx (sch:bind) so it becomes a kernel",
                    ((const tir_For *)region)->loop_var->name);
    else
      tir_error_set(TIR_ERR_LOWER, "split_host_device",
                    "this statement runs on the host but tirlua generates device code only: bind its loops to "
                    "blockIdx/threadIdx (sch:bind) so it becomes a kernel");
    tir_error_set_detail(txt);
    free(txt);
    for (int i = 0; i < 3; i++) {
      tir_release(k->grid[i]);
      tir_release(k->block[i]);
    }
    return -1;
  }
  /* CUDA's launch limits for the dimensions known now; symbolic ones are checked at launch */
  int64_t gd[3], bd[3];
  for (int d = 0; d < 3; d++) {
    if (!tir_is_const_int(k->grid[d], &gd[d])) gd[d] = TIR_LAUNCH_DIM_UNKNOWN;
    if (!tir_is_const_int(k->block[d], &bd[d])) bd[d] = TIR_LAUNCH_DIM_UNKNOWN;
  }
  if (tir_check_launch_dims(TIR_ERR_LOWER, "split_host_device", name, gd, bd, 1)) {
    for (int i = 0; i < 3; i++) {
      tir_release(k->grid[i]);
      tir_release(k->block[i]);
    }
    return -1;
  }
  /* warp-wide instructions (wmma, ldmatrix, mma.sync) need whole warps of consecutive
   * threadIdx.x lanes; a symbolic blockDim.x is checked at launch (tir_check_warp_launch) */
  {
    WarpCtx wc = {NULL};
    tir_visit(region, warp_fn, &wc);
    k->warp_op = wc.op;
    if (tir_check_warp_launch(TIR_ERR_LOWER, "split_host_device", name, wc.op, bd)) {
      for (int i = 0; i < 3; i++) {
        tir_release(k->grid[i]);
        tir_release(k->block[i]);
      }
      return -1;
    }
  }
  {
    ClusterCtx cc = {{0, 0, 0}, 0};
    tir_visit(region, cluster_fn, &cc);
    if (cc.bad) {
      for (int i = 0; i < 3; i++) {
        tir_release(k->grid[i]);
        tir_release(k->block[i]);
      }
      return tir_error_set(TIR_ERR_LOWER, "split_host_device", "kernel %s: its AttrStmt cluster_dims must be one array {x, y, z} of "
                           "constants 1 .. 16, the same wherever it appears", name);
    }
    int64_t n = (int64_t)cc.dims[0] * cc.dims[1] * cc.dims[2];
    for (int d = 0; d < 3 && n > 1; d++)
      if (gd[d] != TIR_LAUNCH_DIM_UNKNOWN && gd[d] % cc.dims[d] != 0) {
        for (int i = 0; i < 3; i++) {
          tir_release(k->grid[i]);
          tir_release(k->block[i]);
        }
        return tir_error_set(TIR_ERR_LOWER, "split_host_device", "kernel %s: grid dimension %c = %lld is not a multiple of its "
                             "cluster's %d (CUDA launches whole clusters)", name, 'x' + d, (long long)gd[d], cc.dims[d]);
      }
    if (n > 1) memcpy(k->cluster, cc.dims, sizeof cc.dims);
  }
  k->tma_descs = tir_array_empty();
  tir_visit(region, tma_desc_fn, &k->tma_descs);
  k->tma_smem = tir_tma_shared_operands(region);
  FreeCtx c = {0};
  tir_visit(region, def_fn, &c);
  tir_visit(region, use_fn, &c);
  /* buffers in the order of the host function's parameters (insertion sort: few) */
  for (int i = 1; i < c.n_bufs; i++)
    for (int j = i; j > 0 && host_rank(host, c.bufs[j]) < host_rank(host, c.bufs[j - 1]); j--) {
      const tir_Buffer *t = c.bufs[j];
      c.bufs[j] = c.bufs[j - 1];
      c.bufs[j - 1] = t;
    }
  tir_Array *params = tir_array_new(c.n_bufs + c.n_sc);
  for (int i = 0; i < c.n_bufs; i++) params->items[i] = tir_retain(c.bufs[i]);
  for (int i = 0; i < c.n_sc; i++) params->items[c.n_bufs + i] = tir_retain(c.scalars[i]);
  free(c.defined);
  free(c.bufs);
  free(c.scalars);
  k->name = tir_strdup(name);
  k->func = tir_prim_func(name, params, tir_retain(region), NULL);
  /* shared memory beyond the 48 KB a kernel may declare statically (or asked for as
   * "shared.dyn") becomes one dynamic allocation: the codegen carves the buffers out of it
   * in the order it meets them, and the launch raises the kernel's limit (build.c) */
  /* (the bytes are the plan's peak: buffers used one after the other share them) */
  tir_SharedPlan sp;
  tir_shared_plan(region, &sp);
  k->dyn_smem_bytes = (sp.any_dyn || sp.sum > 48 * 1024) ? sp.bytes : 0;
  if (sp.unknown) k->dyn_smem_bytes = 0;
  tir_shared_plan_free(&sp);
  return 0;
}

static int walk(const tir_Node *s, const tir_PrimFunc *host, tir_DeviceSplit *out) {
  if (s->kind == TIR_SeqStmt) {
    const tir_Array *a = ((const tir_SeqStmt *)s)->seq;
    for (int i = 0; i < a->size; i++)
      if (walk(a->items[i], host, out)) return -1;
    return 0;
  }
  if (s->kind == TIR_Allocate && tir_scope_is_global(((const tir_Allocate *)s)->buffer->scope)) {
    out->host_allocs = tir_array_push(out->host_allocs, tir_retain(((const tir_Allocate *)s)->buffer));
    return walk(((const tir_Allocate *)s)->body, host, out);
  }
  if (s->kind == TIR_Evaluate && tir_is_zero(((const tir_Evaluate *)s)->value)) return 0; /* no-op */
  char *name = out->n_kernels ? tir_strprintf("%s_kernel%d", host->name, out->n_kernels) : tir_strprintf("%s_kernel", host->name);
  /* the kernel's name is a C identifier whatever the function is called */
  for (char *c = name; *c; c++)
    if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') || *c == '_')) *c = '_';
  if (name[0] >= '0' && name[0] <= '9') {
    char *n2 = tir_strprintf("k_%s", name);
    free(name);
    name = n2;
  }
  out->kernels = realloc(out->kernels, sizeof(tir_Kernel) * (size_t)(out->n_kernels + 1));
  int rc = make_kernel(s, name, host, &out->kernels[out->n_kernels]);
  free(name);
  if (rc) return -1;
  out->n_kernels++;
  return 0;
}

int tir_split_host_device(const tir_PrimFunc *lowered, const tir_PrimFunc *host, tir_DeviceSplit *out) {
  memset(out, 0, sizeof *out);
  out->host = (tir_PrimFunc *)tir_retain(host);
  out->host_allocs = tir_array_empty();
  if (walk(lowered->body, host, out)) {
    tir_device_split_free(out);
    return -1;
  }
  if (out->n_kernels == 0) {
    tir_device_split_free(out);
    return tir_error_set(TIR_ERR_LOWER, "split_host_device", "the function does nothing on the device");
  }
  return 0;
}

void tir_device_split_free(tir_DeviceSplit *s) {
  for (int i = 0; i < s->n_kernels; i++) {
    free(s->kernels[i].name);
    tir_release(s->kernels[i].func);
    tir_release(s->kernels[i].tma_descs);
    tir_release(s->kernels[i].tma_smem);
    for (int d = 0; d < 3; d++) {
      tir_release(s->kernels[i].grid[d]);
      tir_release(s->kernels[i].block[d]);
    }
  }
  free(s->kernels);
  tir_release(s->host);
  tir_release(s->host_allocs);
  memset(s, 0, sizeof *s);
}
