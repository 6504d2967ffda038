/* lower_thread_binding.c -- thread-bound loops become launch dimensions (TVM's
 * LowerThreadBinding after UnifyThreadBinding).
 *
 * The function body is cut into kernel regions: walking down from the body through
 * sequences and global-scope allocations, every statement that contains a thread-bound
 * loop is one region.  In a region, every tag (blockIdx.x, threadIdx.y, ...) gets one
 * variable and one launch extent, the largest extent bound to it; each bound loop is
 * replaced by its body with the loop variable := thread variable + min, guarded by
 * "thread < extent" when its extent is smaller than the launch extent.  The region is
 * then wrapped in launch_thread attributes, blockIdx.z/y/x outermost, threadIdx.z/y/x
 * inside.  Code of the region outside the bound loops runs in every thread, as in the
 * SPMD reading of TensorIR.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pass_util.h"
#include "tir/arith.h"
#include "tir/runtime.h"
#include "tir/scope.h"

static const char *const TAGS[] = {"blockIdx.z", "blockIdx.y", "blockIdx.x", "vthread", "vthread.z", "vthread.y",
                                   "vthread.x", "threadIdx.z", "threadIdx.y", "threadIdx.x"};
#define N_TAGS 10

typedef struct {
  tir_Node *extent[N_TAGS]; /* owned; NULL when the tag is unused */
  tir_Var *var[N_TAGS];
  const tir_For *active[N_TAGS]; /* the enclosing loop bound to each tag while rewriting */
  int failed;
} Region;

static int tag_index(const char *t) {
  for (int i = 0; i < N_TAGS; i++)
    if (strcmp(TAGS[i], t) == 0) return i;
  return -1;
}

static int collect(const tir_Node *n, void *p) {
  Region *r = p;
  if (tir_is_expr(n)) return 1;
  if (n->kind != TIR_For || ((const tir_For *)n)->kind != TIR_FOR_THREAD_BINDING) return 0;
  const tir_For *f = (const tir_For *)n;
  int t = tag_index(f->thread_tag);
  if (t < 0) {
    tir_error_set(TIR_ERR_LOWER, "lower_thread_binding", "unknown thread tag '%s'", f->thread_tag);
    r->failed = 1;
    return 1;
  }
  if (t >= 3 && t <= 6) {
    tir_error_set(TIR_ERR_LOWER, "lower_thread_binding", "virtual threads (%s) are not lowered by tirlua yet; bind to threadIdx instead",
                  f->thread_tag);
    r->failed = 1;
    return 1;
  }
  /* CUDA's launch limits (tir_check_launch_dims) before the extent becomes an int32 launch
   * dimension, which would wrap 2^32 to 0 */
  int64_t e;
  if (tir_is_const_int(f->extent, &e)) {
    int axis = t < 3 ? 2 - t : N_TAGS - 1 - t; /* TAGS lists z, y, x */
    int64_t lim = t < 3 ? tir_cuda_max_grid[axis] : tir_cuda_max_block[axis];
    if (e > lim) {
      tir_error_set(TIR_ERR_LOWER, "lower_thread_binding",
                    "loop %s of extent %lld is bound to %s; CUDA allows at most %lld on %s (grid x: 2^31-1, y, z: "
                    "65535; block x, y: 1024, z: 64; CUDA C++ Programming Guide, compute capability table): split "
                    "it and bind the parts to several axes, or let each %s do more of the work",
                    f->loop_var->name, (long long)e, f->thread_tag, (long long)lim, f->thread_tag,
                    t < 3 ? "block" : "thread");
      r->failed = 1;
      return 1;
    }
  }
  if (!r->extent[t]) {
    r->extent[t] = tir_retain(f->extent);
  } else if (!tir_expr_deep_equal(r->extent[t], f->extent)) {
    int64_t a, b;
    if (tir_is_const_int(r->extent[t], &a) && tir_is_const_int(f->extent, &b)) {
      if (b > a) {
        tir_release(r->extent[t]);
        r->extent[t] = tir_retain(f->extent);
      }
    } else {
      tir_error_set(TIR_ERR_LOWER, "lower_thread_binding",
                    "loops bound to %s have different symbolic extents; give them one extent", f->thread_tag);
      r->failed = 1;
      return 1;
    }
  }
  return 0;
}

static tir_Node *replace_fn(const tir_Node *n, void *p) {
  Region *r = p;
  if (tir_is_expr(n)) return tir_retain(n);
  if (n->kind == TIR_For && ((const tir_For *)n)->kind == TIR_FOR_PARALLEL) {
    tir_error_set(TIR_ERR_LOWER, "lower_thread_binding",
                  "loop %s is marked parallel, which has no meaning inside a CUDA kernel: bind it to a thread axis instead",
                  ((const tir_For *)n)->loop_var->name);
    return TIR_MUTATE_ERROR;
  }
  if (n->kind != TIR_For || ((const tir_For *)n)->kind != TIR_FOR_THREAD_BINDING) return NULL;
  const tir_For *f = (const tir_For *)n;
  int t = tag_index(f->thread_tag);
  const tir_For *outer = r->active[t];
  if (outer && tir_uses_var(f->body, outer->loop_var)) {
    /* both loops would be the same thread index: the statements need both */
    tir_error_set(TIR_ERR_LOWER, "lower_thread_binding",
                  "loops %s and %s are nested, both bound to %s, and the inner one's body uses both; one thread "
                  "index cannot run both loops",
                  outer->loop_var->name, f->loop_var->name, f->thread_tag);
    return TIR_MUTATE_ERROR;
  }
  r->active[t] = f;
  tir_Node *body = tir_mutate(f->body, replace_fn, p);
  r->active[t] = outer;
  if (!body) return TIR_MUTATE_ERROR;
  tir_Node *val = tir_add(tir_cast(f->loop_var->hdr.dtype, R(&r->var[t]->hdr)), R(f->min));
  tir_Var *lv = f->loop_var;
  tir_Node *sub = tir_substitute(body, 1, &lv, &val);
  tir_release(body);
  tir_release(val);
  if (!tir_can_prove_equal(NULL, f->extent, r->extent[t])) {
    tir_Node *guard = tir_cmp(TIR_LT, tir_cast(f->extent->dtype, R(&r->var[t]->hdr)), R(f->extent));
    sub = tir_if(guard, sub, NULL);
  }
  return sub;
}

typedef struct {
  tir_Node *lane;
} LaneCtx;

static tir_Node *lane_fn(const tir_Node *n, void *p) {
  if (n->kind == TIR_Call && strcmp(((const tir_Call *)n)->op, "tir_lane_id") == 0 && ((const tir_Call *)n)->args->size == 0)
    return tir_retain(((LaneCtx *)p)->lane);
  return NULL;
}
static tir_Node *wg_lane_fn(const tir_Node *n, void *p) {
  const tir_BuiltinInfo *bi = n->kind == TIR_Call ? tir_builtin_info(((const tir_Call *)n)->op) : NULL;
  if (bi && bi->id == TIR_BI_TIR_WARPGROUP_LANE && ((const tir_Call *)n)->args->size == 0) return tir_retain(((LaneCtx *)p)->lane);
  return NULL;
}

static tir_Node *lower_region(const tir_Node *s) {
  Region r;
  memset(&r, 0, sizeof r);
  tir_visit(s, collect, &r);
  tir_Node *out = NULL;
  int any = 0;
  for (int i = 0; i < N_TAGS; i++) any |= r.extent[i] != NULL;
  if (r.failed) goto done;
  if (!any) {
    out = tir_retain(s);
    goto done;
  }
  for (int i = 0; i < N_TAGS; i++)
    if (r.extent[i]) {
      char name[32];
      snprintf(name, sizeof name, "%s", TAGS[i]);
      name[strcspn(name, ".")] = '_';
      r.var[i] = tir_var_new(name, TIR_INT32);
    }
  out = tir_mutate(s, replace_fn, &r);
  if (!out) goto done;
  /* the lane id is threadIdx.x % 32 when x is a whole number of warps (x varies fastest in the
   * linear thread index that splits into warps), likewise the warpgroup lane threadIdx.x % 128;
   * then the simplifier sees through them */
  {
    int64_t ex;
    const tir_Node *x = r.extent[N_TAGS - 1];
    struct { int width; tir_Node *(*fn)(const tir_Node *, void *); } lanes[] = {{32, lane_fn}, {128, wg_lane_fn}};
    for (int q = 0; q < 2 && x && tir_is_const_int(x, &ex); q++) {
      if (ex % lanes[q].width) continue;
      LaneCtx lc = {ex == lanes[q].width ? tir_retain(&r.var[N_TAGS - 1]->hdr)
                                         : tir_floormod(tir_retain(&r.var[N_TAGS - 1]->hdr), tir_int_imm(TIR_INT32, lanes[q].width))};
      tir_Node *o2 = tir_mutate(out, lanes[q].fn, &lc);
      tir_release(lc.lane);
      tir_release(out);
      out = o2;
      if (!out) goto done;
    }
  }
  for (int i = N_TAGS - 1; i >= 0; i--) {
    if (!r.extent[i]) continue;
    tir_Node *zero = tir_int_imm(TIR_INT32, 0);
    tir_IterVar *iv = tir_iter_var((tir_Var *)R(&r.var[i]->hdr), tir_range(zero, tir_cast(TIR_INT32, R(r.extent[i]))),
                                   TIR_ITER_THREAD_INDEX, TAGS[i]);
    out = tir_attr_stmt(&iv->hdr, "thread_extent", tir_cast(TIR_INT32, R(r.extent[i])), out);
  }
done:
  for (int i = 0; i < N_TAGS; i++) {
    tir_release(r.extent[i]);
    tir_release(r.var[i]);
  }
  return out;
}

/* Walks the top of the function: sequences and global allocations are host level. */
static tir_Node *walk_top(const tir_Node *s) {
  if (s->kind == TIR_SeqStmt) {
    const tir_Array *a = ((const tir_SeqStmt *)s)->seq;
    tir_Array *out = tir_array_new(a->size);
    for (int i = 0; i < a->size; i++) {
      out->items[i] = walk_top(a->items[i]);
      if (!out->items[i]) {
        tir_release(out);
        return NULL;
      }
    }
    return tir_seq(out);
  }
  if (s->kind == TIR_Allocate && tir_scope_is_global(((const tir_Allocate *)s)->buffer->scope)) {
    const tir_Allocate *a = (const tir_Allocate *)s;
    tir_Node *body = walk_top(a->body);
    return body ? tir_allocate((tir_Buffer *)R(a->buffer), body) : NULL;
  }
  return lower_region(s);
}

tir_PrimFunc *tir_pass_lower_thread_binding(const tir_PrimFunc *f) { return pass_with_body(f, walk_top(f->body)); }
