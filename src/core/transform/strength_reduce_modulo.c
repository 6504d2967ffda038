/* strength_reduce_modulo.c -- the stage indices of a pipelined loop as registers the loop
 * advances, instead of a modulo computed each iteration.
 *
 * inject_software_pipeline gives each multi-buffered tile a leading dimension indexed by
 * floormod(k + c, S) (k the pipelined loop's variable, c the stage's skew, S the versions);
 * for S not a power of two that is a multiply-high, a shift and a multiply-subtract per distinct
 * c per iteration (ptxas for sm_90: 16 of the 265 instructions of the 256x128x64 mma.sync main
 * loop), on the path to every cp.async and ldmatrix address.  CUTLASS's multistage main loop keeps
 * smem_write_stage_idx / smem_read_stage_idx in registers and wraps them instead
 * (include/cutlass/gemm/threadblock/mma_multistage.h); this pass does the same:
 *
 *   for k in [m, m + e):  ... floormod(k + c, S) ...
 * becomes
 *   r: int32[n] (local)
 *   r[i] = floormod(m + c_i, S_i)                     (once, before the loop)
 *   for k in [m, m + e):  ... r[i] ...
 *                          r[i] = select(r[i] == S_i - 1, 0, r[i] + 1)
 *
 * which is exact: floormod(k + 1 + c, S) is floormod(k + c, S) + 1 wrapped at S, and the loop
 * variable steps by one from m.  Only serial loops inside a kernel (under a thread_extent) and
 * only moduli of the loop variable plus a constant (S a constant > 1, not a power of two: a
 * power of two is one AND already) are rewritten; a loop with more than MAX_ROT distinct ones
 * keeps them.  Runs last in the lowering pipeline (after lower_buffer_swizzle, which needs the
 * version term in its arithmetic form to split swizzled indices, and after thread_sync, which
 * reads the versions of "pipeline_version" markers; those markers keep their expressions).
 * Not in TVM (its pipeline leaves the modulo to the CUDA compiler, which does not
 * strength-reduce it). */
#include <string.h>

#include "pass_util.h"
#include "tir/transform.h"

#define MAX_ROT 8

typedef struct {
  int in_kernel;
} Ctx;

typedef struct {
  const tir_Var *v;
  int n;
  int64_t c[MAX_ROT], S[MAX_ROT];
  int overflow;
  tir_Buffer *buf;
} Rot;

static int is_pow2(int64_t x) { return x > 0 && (x & (x - 1)) == 0; }

/* floormod(v + c, S) with v the loop variable: 1 and (c, S), c normalized into [0, S). */
static int match(const Rot *r, const tir_Node *n, int64_t *c, int64_t *S) {
  if (n->kind != TIR_FloorMod) return 0;
  const tir_FloorMod *m = (const tir_FloorMod *)n;
  if (!tir_is_const_int(m->b, S) || *S <= 1 || is_pow2(*S)) return 0;
  const tir_Node *a = m->a;
  int64_t k = 0;
  if (a->kind == TIR_Add && tir_is_const_int(((const tir_Add *)a)->b, &k)) a = ((const tir_Add *)a)->a;
  else if (a->kind == TIR_Sub && tir_is_const_int(((const tir_Sub *)a)->b, &k)) a = ((const tir_Sub *)a)->a, k = -k;
  if (a != &r->v->hdr) return 0;
  if (n->dtype.code != TIR_DT_INT || n->dtype.lanes != 1) return 0;
  *c = ((k % *S) + *S) % *S;
  return 1;
}

static int slot(Rot *r, int64_t c, int64_t S) {
  for (int i = 0; i < r->n; i++)
    if (r->c[i] == c && r->S[i] == S) return i;
  if (r->n == MAX_ROT) {
    r->overflow = 1;
    return -1;
  }
  r->c[r->n] = c, r->S[r->n] = S;
  return r->n++;
}

static int scan_fn(const tir_Node *n, void *p) {
  Rot *r = p;
  int64_t c, S;
  if (match(r, n, &c, &S)) slot(r, c, S);
  return 0;
}

static tir_Node *load_slot(Rot *r, int i) { return tir_buffer_load((tir_Buffer *)R(&r->buf->hdr), tir_array_of(1, tir_i32(i))); }

static tir_Node *replace_fn(const tir_Node *n, void *p) {
  Rot *r = p;
  int64_t c, S;
  if (n->kind == TIR_AttrStmt && strcmp(((const tir_AttrStmt *)n)->key, "pipeline_version") == 0) {
    /* the marker's version stays an expression of the loop variable (thread_sync has read it) */
    const tir_AttrStmt *a = (const tir_AttrStmt *)n;
    tir_Node *body = tir_mutate(a->body, replace_fn, p);
    if (!body) return TIR_MUTATE_ERROR;
    return tir_attr_stmt(R(a->node), a->key, R(a->value), body);
  }
  if (!match(r, n, &c, &S)) return NULL;
  int i = slot(r, c, S);
  tir_Node *ld = load_slot(r, i);
  return n->dtype.bits == 32 ? ld : tir_cast(n->dtype, ld);
}

static tir_Node *store_slot(Rot *r, int i, tir_Node *value) {
  return tir_buffer_store((tir_Buffer *)R(&r->buf->hdr), value, tir_array_of(1, tir_i32(i)));
}

static tir_Node *rewrite_loop(const tir_For *f, tir_Node *body) {
  Rot r = {.v = f->loop_var};
  tir_visit(body, scan_fn, &r);
  if (r.n == 0 || r.overflow) return NULL;
  char name[96];
  snprintf(name, sizeof name, "%s_stage", f->loop_var->name);
  r.buf = tir_buffer_new(name, TIR_INT32, tir_array_of(1, tir_i32(r.n)), NULL, NULL, "local");
  tir_Node *nb = tir_mutate(body, replace_fn, &r);
  if (!nb) {
    tir_release(&r.buf->hdr);
    return TIR_MUTATE_ERROR;
  }
  tir_Array *inner = tir_array_new(r.n + 1);
  inner->items[0] = nb;
  for (int i = 0; i < r.n; i++) {
    tir_Node *cur = load_slot(&r, i);
    tir_Node *wrap = tir_cmp(TIR_EQ, load_slot(&r, i), tir_i32(r.S[i] - 1));
    inner->items[i + 1] = store_slot(&r, i, tir_select(wrap, tir_i32(0), tir_add(cur, tir_i32(1))));
  }
  tir_Node *loop = tir_for((tir_Var *)R(&f->loop_var->hdr), R(f->min), R(f->extent), f->kind, f->thread_tag,
                           (tir_Array *)R(&f->annotations->hdr), tir_seq(inner));
  tir_Array *outer = tir_array_new(r.n + 1);
  for (int i = 0; i < r.n; i++) {
    tir_Node *m = tir_cast(TIR_INT32, R(f->min));
    tir_Node *init = tir_floormod(tir_add(m, tir_i32(r.c[i])), tir_i32(r.S[i]));
    outer->items[i] = store_slot(&r, i, tir_simplify_take(NULL, init));
  }
  outer->items[r.n] = loop;
  tir_Node *out = tir_allocate(r.buf, tir_seq(outer));
  return out;
}

static tir_Node *mut(const tir_Node *n, void *p) {
  Ctx *ctx = p;
  if (tir_is_expr(n)) return tir_retain(n);
  if (n->kind == TIR_AttrStmt && strcmp(((const tir_AttrStmt *)n)->key, "thread_extent") == 0) {
    ctx->in_kernel++;
    tir_Node *r = tir_mutate_children(n, mut, p);
    ctx->in_kernel--;
    return r ? r : TIR_MUTATE_ERROR;
  }
  if (n->kind != TIR_For) return NULL;
  const tir_For *f = (const tir_For *)n;
  tir_Node *body = tir_mutate(f->body, mut, p);
  if (!body) return TIR_MUTATE_ERROR;
  if (ctx->in_kernel && f->kind == TIR_FOR_SERIAL && (!f->thread_tag || !f->thread_tag[0]) && f->loop_var->hdr.dtype.bits <= 32) {
    tir_Node *r = rewrite_loop(f, body);
    if (r == TIR_MUTATE_ERROR) {
      tir_release(body);
      return TIR_MUTATE_ERROR;
    }
    if (r) {
      tir_release(body);
      return r;
    }
  }
  return pass_for_with_body(f, body);
}

tir_PrimFunc *tir_pass_strength_reduce_modulo(const tir_PrimFunc *f) {
  Ctx c = {0};
  return pass_with_body(f, tir_mutate(f->body, mut, &c));
}
