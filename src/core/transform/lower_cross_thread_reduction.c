/* lower_cross_thread_reduction.c -- a reduction block whose reduction loops include loops
 * bound to threadIdx (a row sum with its k loop split and the inner part bound to
 * threadIdx.x) becomes a per-thread partial reduction plus an allreduce across the bound
 * threads (TVM src/tir/transforms/lower_cross_thread_reduction.cc for the block structure,
 * lower_thread_allreduce.cc for the allreduce).  Runs on block-level IR before
 * lower_init_block, as in TVM's pipeline.
 *
 *   for tx in threadIdx.x:                         for tx in threadIdx.x:
 *     for ko:                                        B_in_thread_init:  in_thread_B[0] = identity
 *       block B (init B[i] = c,              ->      for ko: B_in_thread:  in_thread_B[0] op= A[...]  (predicate kept)
 *                B[i] = B[i] op A[...])              B_cross_thread:  cross_thread_B[0] = allreduce over tx of in_thread_B[0]
 *                                                    B_write_back:  B[i] = cross_thread_B[0]     (where tx == 0 unless B is local)
 *
 * The allreduce: when the reduction is over threadIdx.x alone and each warp holds whole
 * groups of it (extent a multiple of 32, or a power of two dividing 32, with whole warps or a
 * single warp), a butterfly of warp shuffles (PTX ISA 9.7.8.6 shfl.sync.bfly) of width 32 (or
 * the extent) gives every lane the result; past 32 threads lane 0 of each warp puts its partial
 * in shared memory and every warp reduces the partials with a second butterfly (and a
 * shfl.sync.idx broadcast).  Otherwise (reductions over threadIdx.y/z, extents like 48, types
 * a shuffle cannot carry) a tree reduction in shared memory.  Barriers come from thread_sync.
 * Every thread ends with the result, so a write-back to a local buffer happens in all threads
 * (as TVM).  A block's init value that is not the reducer's identity is combined at the
 * write-back (B[i] = c op total).
 *
 * Errors (tir.Error from lower, naming the block): reduction loops that are not the innermost
 * loops above the block, other statements under them, a body that is not a single-buffer
 * reduction B[i] = B[i] op e (op: + * max min), reduction variables indexing B, symbolic
 * thread extents, and kernels that use a threadIdx axis the block's loops do not. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pass_util.h"
#include "tir/arith.h"
#include "tir/strbuf.h"
#include "tir/transform.h"

#define MAXD 128
#define P "lower_cross_thread_reduction"

typedef struct {
  const tir_For *loop;
  tir_Node *repl; /* owned */
} Repl;

typedef struct {
  const tir_For *loops[MAXD];
  int nl;
  const tir_Block *blocks[MAXD];
  int block_nl[MAXD];  /* nl when the block was entered */
  tir_Array *allocs[MAXD]; /* buffers to add to blocks[i] (owned) */
  int nb;
  Repl *repl;
  int nrepl, caprepl;
  const tir_Node *root;
} Ctx;

static int is_thread_idx(const tir_For *f) {
  return f->kind == TIR_FOR_THREAD_BINDING && strncmp(f->thread_tag, "threadIdx.", 10) == 0;
}

static int fail(const tir_Node *where, const tir_Block *b, const char *fmt, const char *a1, const char *a2) {
  char msg[768];
  snprintf(msg, sizeof msg, fmt, a1 ? a1 : "", a2 ? a2 : "");
  tir_error_set(TIR_ERR_LOWER, P, "block '%s' reduces across threads (a reduction loop is bound to threadIdx), but %s", b->name,
                msg);
  char *txt = tir_print(where);
  tir_error_set_detail(txt);
  free(txt);
  return -1;
}

/* ---- the reducer ---- */
typedef struct {
  int kind; /* TIR_Add, TIR_Mul, TIR_Max, TIR_Min */
  const tir_BufferStore *update, *init;
  const tir_Node *rhs;
} Reducer;

static tir_Node *combine(int kind, tir_Node *a, tir_Node *b) {
  switch (kind) {
    case TIR_Add: return tir_add(a, b);
    case TIR_Mul: return tir_mul(a, b);
    case TIR_Max: return tir_max(a, b);
    default: return tir_min(a, b);
  }
}

static tir_Node *identity(int kind, tir_DType t) {
  int f = tir_dtype_is_float(t), u = t.code == TIR_DT_UINT;
  int bits = t.bits;
  switch (kind) {
    case TIR_Add: return f ? tir_float_imm(t, 0.0) : tir_int_imm(t, 0);
    case TIR_Mul: return f ? tir_float_imm(t, 1.0) : tir_int_imm(t, 1);
    case TIR_Max:
      if (f) return tir_float_imm(t, -INFINITY);
      return tir_int_imm(t, u ? 0 : bits >= 64 ? INT64_MIN : -((int64_t)1 << (bits - 1)));
    default:
      if (f) return tir_float_imm(t, INFINITY);
      if (u) return tir_int_imm(t, bits >= 64 ? -1 : (int64_t)(((uint64_t)1 << bits) - 1));
      return tir_int_imm(t, bits >= 64 ? INT64_MAX : ((int64_t)1 << (bits - 1)) - 1);
  }
}

static int same_indices(const tir_Array *a, const tir_Array *b) {
  if (a->size != b->size) return 0;
  for (int i = 0; i < a->size; i++)
    if (!tir_expr_deep_equal(a->items[i], b->items[i])) return 0;
  return 1;
}

static int is_self_load(const tir_Node *e, const tir_BufferStore *st) {
  return e->kind == TIR_BufferLoad && ((const tir_BufferLoad *)e)->buffer == st->buffer &&
         same_indices(((const tir_BufferLoad *)e)->indices, st->indices);
}

static int get_reducer(const tir_Block *b, Reducer *r) {
  if (!b->init || b->init->kind != TIR_BufferStore || b->body->kind != TIR_BufferStore) return -1;
  const tir_BufferStore *up = (const tir_BufferStore *)b->body, *in = (const tir_BufferStore *)b->init;
  if (in->buffer != up->buffer || !same_indices(in->indices, up->indices)) return -1;
  const tir_Node *v = up->value;
  if (v->kind != TIR_Add && v->kind != TIR_Mul && v->kind != TIR_Max && v->kind != TIR_Min) return -1;
  const tir_Add *bin = (const tir_Add *)v;
  if (v->dtype.lanes != 1) return -1;
  if (is_self_load(bin->a, up)) r->rhs = bin->b;
  else if (is_self_load(bin->b, up)) r->rhs = bin->a;
  else return -1;
  r->kind = v->kind;
  r->update = up;
  r->init = in;
  return 0;
}

static int reads_buffer_fn(const tir_Node *n, void *p) {
  struct { const tir_Buffer *buf; int found; } *c = p;
  if (n->kind == TIR_BufferLoad && ((const tir_BufferLoad *)n)->buffer == c->buf) c->found = 1;
  return c->found;
}

/* ---- thread structure of the kernel ---- */
typedef struct {
  const char *tag[16];
  int64_t ext[16];
  int n, symbolic;
} Threads;

static int collect_threads(const tir_Node *n, void *p) {
  Threads *t = p;
  if (tir_is_expr(n)) return 1;
  if (n->kind == TIR_For && is_thread_idx((const tir_For *)n)) {
    const tir_For *f = (const tir_For *)n;
    int64_t e;
    if (!tir_is_const_int(f->extent, &e)) t->symbolic = 1;
    int k = 0;
    while (k < t->n && strcmp(t->tag[k], f->thread_tag) != 0) k++;
    if (k == t->n && t->n < 16) {
      t->tag[t->n] = f->thread_tag;
      t->ext[t->n++] = e;
    } else if (k < t->n && e > t->ext[k]) {
      t->ext[k] = e;
    }
  }
  return 0;
}

/* ---- buffer replacement (B -> in_thread_B[0]) ---- */
typedef struct {
  const tir_Buffer *from;
  tir_Buffer *to;
} Swap;

static tir_Node *swap_fn(const tir_Node *n, void *p) {
  Swap *s = p;
  if (n->kind == TIR_BufferLoad && ((const tir_BufferLoad *)n)->buffer == s->from)
    return tir_buffer_load((tir_Buffer *)R(&s->to->hdr), tir_array_of(1, tir_i32(0)));
  if (n->kind == TIR_BufferStore && ((const tir_BufferStore *)n)->buffer == s->from) {
    tir_BufferStore *st = (tir_BufferStore *)tir_mutate_children(n, swap_fn, p);
    if (!st) return TIR_MUTATE_ERROR;
    tir_Node *r = tir_buffer_store((tir_Buffer *)R(&s->to->hdr), R(st->value), tir_array_of(1, tir_i32(0)));
    tir_release(&st->hdr);
    return r;
  }
  return NULL;
}

static tir_Array *unit_region(tir_Buffer *b) {
  return tir_array_of(1, &tir_buffer_region((tir_Buffer *)R(&b->hdr), tir_array_of(1, &tir_range(tir_i32(0), tir_i32(1))->hdr))->hdr);
}

static tir_Node *load0(tir_Buffer *b) { return tir_buffer_load((tir_Buffer *)R(&b->hdr), tir_array_of(1, tir_i32(0))); }
static tir_Node *store0(tir_Buffer *b, tir_Node *v) { return tir_buffer_store((tir_Buffer *)R(&b->hdr), v, tir_array_of(1, tir_i32(0))); }

static tir_Node *opaque(const char *base, const char *suffix, tir_Array *reads, tir_Array *writes, tir_Node *body) {
  char name[256];
  snprintf(name, sizeof name, "%s%s", base, suffix);
  return tir_block_realize(NULL, NULL, tir_block_new(name, NULL, reads, writes, NULL, NULL, NULL, NULL, body));
}

static tir_Node *shfl(const char *op, int64_t mask, tir_Node *v, int64_t b, int64_t width) {
  tir_DType t = v->dtype;
  return tir_call(t, op, tir_array_of(4, tir_int_imm(tir_dtype(TIR_DT_UINT, 32, 1), mask), v, tir_i32(b), tir_i32(width)));
}

/* The allreduce statements: cr[0] = reduction of in[0] over the r index of each group g. */
static tir_Node *allreduce(const Reducer *rd, tir_Buffer *in, tir_Buffer *cr, tir_Buffer **sh_out, int warp, int64_t X,
                           int64_t T, const tir_Var *tx, tir_Node *r, int64_t R_, tir_Node *g, int64_t G, const char *bname) {
  tir_DType t = in->hdr.dtype;
  tir_Array *st = tir_array_empty();
  st = tir_array_push(st, store0(cr, load0(in)));
  tir_Buffer *sh = NULL;
  if (warp) {
    int64_t mask = T % 32 == 0 ? 0xffffffffLL : (int64_t)((1ULL << T) - 1);
    int64_t w = X >= 32 ? 32 : X;
    for (int64_t off = w / 2; off >= 1; off /= 2)
      st = tir_array_push(st, store0(cr, combine(rd->kind, load0(cr), shfl("ptx_shfl_sync_bfly", mask, load0(cr), off, w))));
    if (X > 32) {
      int64_t W = X / 32, w2 = 1;
      while (w2 < W) w2 *= 2;
      char name[256];
      snprintf(name, sizeof name, "red_buf_%s", bname);
      sh = tir_buffer_new(name, t, tir_array_of(1, tir_i32(G * W)), NULL, NULL, "shared");
      tir_Node *lane = tir_binary(TIR_FloorMod, tir_retain((tir_Node *)&tx->hdr), tir_i32(32));
      tir_Node *wid = tir_binary(TIR_FloorDiv, tir_retain((tir_Node *)&tx->hdr), tir_i32(32));
      tir_Node *base = tir_mul(R(g), tir_i32(W));
      st = tir_array_push(st, tir_if(tir_cmp(TIR_EQ, R(lane), tir_i32(0)),
                                     tir_buffer_store((tir_Buffer *)R(&sh->hdr), load0(cr), tir_array_of(1, tir_add(R(base), wid))),
                                     NULL));
      tir_Node *part = tir_call(t, "if_then_else",
                                tir_array_of(3, tir_cmp(TIR_LT, R(lane), tir_i32(W)),
                                             tir_buffer_load((tir_Buffer *)R(&sh->hdr), tir_array_of(1, tir_add(R(base), R(lane)))),
                                             identity(rd->kind, t)));
      st = tir_array_push(st, store0(cr, part));
      for (int64_t off = w2 / 2; off >= 1; off /= 2)
        st = tir_array_push(st, store0(cr, combine(rd->kind, load0(cr), shfl("ptx_shfl_sync_bfly", mask, load0(cr), off, w2))));
      if (w2 < 32 && w2 > 1) st = tir_array_push(st, store0(cr, shfl("ptx_shfl_sync_idx", mask, load0(cr), 0, 32)));
      tir_release(lane);
      tir_release(base);
    }
  } else {
    char name[256];
    snprintf(name, sizeof name, "red_buf_%s", bname);
    sh = tir_buffer_new(name, t, tir_array_of(1, tir_i32(G * R_)), NULL, NULL, "shared");
    tir_Node *base = tir_mul(R(g), tir_i32(R_));
#define SH(off) tir_buffer_load((tir_Buffer *)R(&sh->hdr), tir_array_of(1, tir_add(tir_add(R(base), R(r)), tir_i32(off))))
#define SH_STORE(v) tir_buffer_store((tir_Buffer *)R(&sh->hdr), (v), tir_array_of(1, tir_add(R(base), R(r))))
    st = tir_array_push(st, SH_STORE(load0(cr)));
    int64_t p2 = 1;
    while (p2 * 2 <= R_) p2 *= 2;
    if (p2 < R_)
      st = tir_array_push(st, tir_if(tir_cmp(TIR_LT, R(r), tir_i32(R_ - p2)), SH_STORE(combine(rd->kind, SH(0), SH(p2))), NULL));
    for (int64_t s = p2 / 2; s >= 1; s /= 2)
      st = tir_array_push(st, tir_if(tir_cmp(TIR_LT, R(r), tir_i32(s)), SH_STORE(combine(rd->kind, SH(0), SH(s))), NULL));
    st = tir_array_push(st, store0(cr, tir_buffer_load((tir_Buffer *)R(&sh->hdr), tir_array_of(1, R(base)))));
#undef SH
#undef SH_STORE
    tir_release(base);
  }
  *sh_out = sh;
  (void)bname;
  return tir_seq(st);
}

/* Splits an And chain into its conjuncts, keeping those that use none of vars. */
static tir_Node *spatial_conjuncts(const tir_Node *pred, int n, tir_Var *const *vars) {
  if (!pred) return tir_bool_imm(1);
  if (pred->kind == TIR_And) {
    const tir_And *a = (const tir_And *)pred;
    return tir_and(spatial_conjuncts(a->a, n, vars), spatial_conjuncts(a->b, n, vars));
  }
  if (tir_uses_any_var(pred, n, vars)) return tir_bool_imm(1);
  return tir_retain(pred);
}

/* Transforms the reduction at br (inside ctx's loop stack).  0: not a cross-thread
 * reduction (nothing to do), 1: replacement recorded, -1: error. */
static int transform(Ctx *c, const tir_BlockRealize *br) {
  const tir_Block *b = br->block;
  if (!b->init || c->nb == 0) return 0;
  int start = c->block_nl[c->nb - 1];
  /* loops whose variables the reduction bindings use */
  const tir_For *red[MAXD];
  int nr = 0, nthr = 0;
  for (int k = start; k < c->nl; k++) {
    const tir_For *f = c->loops[k];
    int used = 0;
    for (int i = 0; i < b->iter_vars->size && !used; i++) {
      const tir_IterVar *iv = (const tir_IterVar *)b->iter_vars->items[i];
      if (iv->iter_type == TIR_ITER_COMM_REDUCE && tir_uses_var(br->iter_values->items[i], f->loop_var)) used = 1;
    }
    if (used) {
      red[nr++] = f;
      if (is_thread_idx(f)) nthr++;
    }
  }
  if (nthr == 0) return 0;
  /* TVM's conditions: the reduction loops are the innermost loops above the block, with
   * nothing else under them */
  for (int k = 0; k < nr; k++)
    if (c->loops[c->nl - nr + k] != red[k])
      return fail(&red[0]->hdr, b,
                  "its reduction loops are not the innermost loops above it (loop %s is inside them): reorder the "
                  "reduction loops innermost%s",
                  c->loops[c->nl - nr + k]->loop_var->name, "");
  for (int k = 0; k < nr; k++) {
    const tir_Node *body = red[k]->body;
    const tir_Node *want = k + 1 < nr ? &red[k + 1]->hdr : &br->hdr;
    if (body != want)
      return fail(&red[k]->hdr, b, "loop %s holds other statements besides %s; it must hold only the reduction block%s",
                  red[k]->loop_var->name, k + 1 < nr ? red[k + 1]->loop_var->name : "the block");
  }
  Reducer rd;
  if (get_reducer(b, &rd) != 0)
    return fail(&br->hdr, b,
                "its body is not a single-buffer reduction B[i] = B[i] op value (op: +, *, max, min) with init B[i] = "
                "value%s%s",
                "", "");
  {
    struct { const tir_Buffer *buf; int found; } chk = {rd.update->buffer, 0};
    tir_visit(rd.rhs, reads_buffer_fn, &chk);
    if (chk.found) return fail(&br->hdr, b, "the reduced value reads the accumulator %s again%s", rd.update->buffer->name, "");
  }
  tir_Var *redvars[MAXD];
  int nrv = 0;
  for (int i = 0; i < b->iter_vars->size; i++) {
    const tir_IterVar *iv = (const tir_IterVar *)b->iter_vars->items[i];
    if (iv->iter_type == TIR_ITER_COMM_REDUCE) redvars[nrv++] = iv->var;
    else if (iv->iter_type != TIR_ITER_DATA_PAR)
      return fail(&br->hdr, b, "its iteration variable %s is neither spatial nor a reduction%s", iv->var->name, "");
  }
  for (int i = 0; i < rd.update->indices->size; i++)
    if (tir_uses_any_var(rd.update->indices->items[i], nrv, redvars))
      return fail(&br->hdr, b, "a reduction variable indexes the output %s%s", rd.update->buffer->name, "");
  /* thread structure: the kernel's threadIdx loops must all enclose the block */
  const tir_For *kroot = NULL;
  for (int k = 0; k < c->nl && !kroot; k++)
    if (c->loops[k]->kind == TIR_FOR_THREAD_BINDING) kroot = c->loops[k];
  Threads kt = {{0}, {0}, 0, 0};
  tir_visit(&kroot->hdr, collect_threads, &kt);
  if (kt.symbolic) return fail(&kroot->hdr, b, "its kernel has a threadIdx loop of symbolic extent%s%s", "", "");
  const tir_For *path_thr[3] = {NULL, NULL, NULL}; /* x, y, z */
  for (int k = 0; k < c->nl; k++)
    if (is_thread_idx(c->loops[k])) {
      int d = c->loops[k]->thread_tag[10] - 'x';
      if (d < 0 || d > 2) continue;
      if (path_thr[d])
        return fail(&c->loops[k]->hdr, b, "two loops above it are bound to %s%s", c->loops[k]->thread_tag, "");
      path_thr[d] = c->loops[k];
    }
  int64_t ext[3] = {1, 1, 1};
  for (int i = 0; i < kt.n; i++) {
    int d = kt.tag[i][10] - 'x';
    if (d < 0 || d > 2) continue;
    int64_t e = 0;
    if (!path_thr[d] || !tir_is_const_int(path_thr[d]->extent, &e) || e != kt.ext[i]) {
      char buf[160];
      snprintf(buf, sizeof buf, "%s (extent %lld)", kt.tag[i], (long long)kt.ext[i]);
      return fail(&kroot->hdr, b,
                  "its kernel uses %s, and the loops above the block do not bind that axis with the same extent: "
                  "every thread of the kernel must take part in the reduction%s",
                  buf, "");
    }
    ext[d] = e;
  }
  int64_t T = ext[0] * ext[1] * ext[2];
  /* reduction index r and group index g over the hardware's x-fastest numbering */
  int is_red[3] = {0, 0, 0};
  for (int k = 0; k < nr; k++)
    if (is_thread_idx(red[k])) is_red[red[k]->thread_tag[10] - 'x'] = 1;
  tir_Node *r = tir_i32(0), *g = tir_i32(0);
  int64_t Rn = 1, G = 1;
  for (int d = 0; d < 3; d++) {
    if (!path_thr[d]) continue;
    tir_Node *v = R(&path_thr[d]->loop_var->hdr);
    if (path_thr[d]->loop_var->hdr.dtype.bits != 32) v = tir_cast(TIR_INT32, v);
    if (is_red[d]) {
      r = tir_add(r, tir_mul(v, tir_i32(Rn)));
      Rn *= ext[d];
    } else {
      g = tir_add(g, tir_mul(v, tir_i32(G)));
      G *= ext[d];
    }
  }
  tir_Node *rs = tir_simplify(NULL, r), *gs = tir_simplify(NULL, g);
  tir_release(r);
  tir_release(g);
  tir_DType t = rd.update->buffer->hdr.dtype;
  int shfl_type = t.lanes == 1 && (t.bits == 32 || t.bits == 64) && t.code != TIR_DT_BOOL;
  int64_t X = ext[0];
  int warp = shfl_type && nthr == 1 && is_red[0] && !is_red[1] && !is_red[2] && (X % 32 == 0 || (X <= 32 && 32 % X == 0)) &&
             (T % 32 == 0 || T < 32);
  const tir_Buffer *B = rd.update->buffer;
  char name[256];
  snprintf(name, sizeof name, "in_thread_%s", B->name);
  tir_Buffer *in = tir_buffer_new(name, t, tir_array_of(1, tir_i32(1)), NULL, NULL, "local");
  snprintf(name, sizeof name, "cross_thread_%s", B->name);
  tir_Buffer *cr = tir_buffer_new(name, t, tir_array_of(1, tir_i32(1)), NULL, NULL, "local");
  tir_Buffer *sh = NULL;
  tir_Array *stmts = tir_array_empty();
  /* 1: in-thread init */
  stmts = tir_array_push(stmts, opaque(b->name, "_in_thread_init", NULL, unit_region(in), store0(in, identity(rd.kind, t))));
  /* 2: in-thread reduction under the loops not bound to threads */
  {
    Swap sw = {B, in};
    tir_Node *body = tir_mutate(b->body, swap_fn, &sw);
    tir_Block *nb = tir_block_with_body(b, body);
    char *nm = tir_strprintf("%s_in_thread", b->name);
    tir_node_set_str(&nb->name, nm);
    free(nm);
    tir_release(nb->init);
    nb->init = NULL;
    tir_Array *reads = tir_array_empty();
    int had = 0;
    for (int i = 0; i < b->reads->size; i++) {
      const tir_BufferRegion *rg = (const tir_BufferRegion *)b->reads->items[i];
      if (rg->buffer == B) {
        if (!had)
          reads = tir_array_push(reads, &tir_buffer_region((tir_Buffer *)R(&in->hdr), tir_array_of(1, &tir_range(tir_i32(0), tir_i32(1))->hdr))->hdr);
        had = 1;
      } else {
        reads = tir_array_push(reads, tir_retain((tir_Node *)&rg->hdr));
      }
    }
    tir_release(nb->reads);
    nb->reads = reads;
    tir_release(nb->writes);
    nb->writes = unit_region(in);
    tir_Node *s = tir_block_realize((tir_Array *)R(&br->iter_values->hdr), R(br->predicate), nb);
    for (int k = nr - 1; k >= 0; k--) {
      if (is_thread_idx(red[k])) continue;
      tir_For *f = (tir_For *)tir_node_copy(&red[k]->hdr);
      tir_release(f->body);
      f->body = s;
      s = &f->hdr;
    }
    stmts = tir_array_push(stmts, s);
  }
  /* 3: the allreduce */
  {
    tir_Node *body = allreduce(&rd, in, cr, &sh, warp, X, T, path_thr[0] ? path_thr[0]->loop_var : NULL, rs, Rn, gs, G, B->name);
    tir_Array *reads = unit_region(in), *writes = unit_region(cr);
    if (sh) {
      reads = tir_array_push(reads, &tir_buffer_region_full(sh)->hdr);
      writes = tir_array_push(writes, &tir_buffer_region_full(sh)->hdr);
    }
    stmts = tir_array_push(stmts, opaque(b->name, "_cross_thread", reads, writes, body));
  }
  /* 4: write-back */
  {
    int ns = 0;
    tir_Var *from[MAXD], *to[MAXD];
    tir_Array *ivs = tir_array_empty(), *vals = tir_array_empty();
    for (int i = 0; i < b->iter_vars->size; i++) {
      const tir_IterVar *iv = (const tir_IterVar *)b->iter_vars->items[i];
      if (iv->iter_type != TIR_ITER_DATA_PAR) continue;
      from[ns] = iv->var;
      to[ns] = tir_var_new(iv->var->name, iv->var->hdr.dtype);
      ivs = tir_array_push(ivs, &tir_iter_var((tir_Var *)R(&to[ns]->hdr), (tir_Range *)R(&iv->dom->hdr), TIR_ITER_DATA_PAR, "")->hdr);
      vals = tir_array_push(vals, tir_retain((tir_Node *)br->iter_values->items[i]));
      ns++;
    }
    tir_Array *idx = tir_array_new(rd.update->indices->size);
    for (int i = 0; i < idx->size; i++) idx->items[i] = tir_substitute(rd.update->indices->items[i], ns, from, (tir_Node *const *)to);
    tir_Node *init_v = tir_substitute(rd.init->value, ns, from, (tir_Node *const *)to);
    tir_Node *id = identity(rd.kind, t);
    tir_Node *value = tir_expr_deep_equal(init_v, id) ? load0(cr) : combine(rd.kind, R(init_v), load0(cr));
    tir_release(id);
    tir_release(init_v);
    tir_Node *wb = tir_buffer_store((tir_Buffer *)R(&B->hdr), value, idx);
    tir_Array *wr = tir_array_empty();
    for (int i = 0; i < b->writes->size; i++) {
      tir_Node *w = tir_substitute(b->writes->items[i], ns, from, (tir_Node *const *)to);
      wr = tir_array_push(wr, w);
    }
    /* the predicate's spatial clauses, and one thread writing unless B is local */
    tir_Var *lv[MAXD];
    for (int k = 0; k < nr; k++) lv[k] = red[k]->loop_var;
    tir_Node *pred = spatial_conjuncts(br->predicate, nr, lv);
    if (strcmp(B->scope, "local") != 0)
      for (int k = 0; k < nr; k++)
        if (is_thread_idx(red[k]))
          pred = tir_and(pred, tir_cmp(TIR_EQ, R(&red[k]->loop_var->hdr), tir_int_imm(red[k]->loop_var->hdr.dtype, 0)));
    tir_Node *sp = tir_simplify(NULL, pred);
    tir_release(pred);
    char nm[256];
    snprintf(nm, sizeof nm, "%s_write_back", b->name);
    tir_Array *ann = strcmp(B->scope, "local") == 0 ? tir_array_of(1, &tir_ann("cross_thread_write_back", tir_i32(1))->hdr) : NULL;
    tir_Block *wbk = tir_block_new(nm, ivs, unit_region(cr), wr, NULL, NULL, NULL, ann, wb);
    stmts = tir_array_push(stmts, tir_block_realize(vals, sp, wbk));
    for (int k = 0; k < ns; k++) tir_release(&to[k]->hdr);
  }
  tir_release(rs);
  tir_release(gs);
  tir_Node *s = tir_seq(stmts);
  for (int k = nr - 1; k >= 0; k--) {
    if (!is_thread_idx(red[k])) continue;
    tir_For *f = (tir_For *)tir_node_copy(&red[k]->hdr);
    tir_release(f->body);
    f->body = s;
    s = &f->hdr;
  }
  tir_Array **al = &c->allocs[c->nb - 1];
  *al = tir_array_push(*al, &in->hdr);
  *al = tir_array_push(*al, &cr->hdr);
  if (sh) *al = tir_array_push(*al, &sh->hdr);
  if (c->nrepl == c->caprepl) {
    c->caprepl = c->caprepl ? c->caprepl * 2 : 4;
    c->repl = realloc(c->repl, sizeof *c->repl * (size_t)c->caprepl);
  }
  c->repl[c->nrepl].loop = red[0];
  c->repl[c->nrepl].repl = s;
  c->nrepl++;
  return 1;
}

static tir_Node *mut(const tir_Node *n, void *p) {
  Ctx *c = p;
  if (tir_is_expr(n)) return tir_retain(n);
  if (n->kind == TIR_For) {
    if (c->nl >= MAXD) {
      tir_error_set(TIR_ERR_LOWER, P, "loops nested deeper than %d", MAXD);
      return TIR_MUTATE_ERROR;
    }
    c->loops[c->nl++] = (const tir_For *)n;
    tir_Node *m = tir_mutate_children(n, mut, p);
    c->nl--;
    if (!m) return TIR_MUTATE_ERROR;
    for (int i = 0; i < c->nrepl; i++)
      if (c->repl[i].loop == (const tir_For *)n) {
        tir_release(m);
        tir_Node *r = c->repl[i].repl;
        c->repl[i] = c->repl[--c->nrepl];
        return r;
      }
    return m;
  }
  if (n->kind == TIR_BlockRealize) {
    int rc = transform(c, (const tir_BlockRealize *)n);
    if (rc < 0) return TIR_MUTATE_ERROR;
    if (rc > 0) return tir_retain(n); /* replaced at its outermost reduction loop */
    return NULL;
  }
  if (n->kind == TIR_Block) {
    if (c->nb >= MAXD) {
      tir_error_set(TIR_ERR_LOWER, P, "blocks nested deeper than %d", MAXD);
      return TIR_MUTATE_ERROR;
    }
    int me = c->nb++;
    c->blocks[me] = (const tir_Block *)n;
    c->block_nl[me] = c->nl;
    c->allocs[me] = tir_array_empty();
    tir_Node *m = tir_mutate_children(n, mut, p);
    c->nb--;
    tir_Array *add = c->allocs[me];
    if (!m) {
      tir_release(&add->hdr);
      return TIR_MUTATE_ERROR;
    }
    if (add->size == 0) {
      tir_release(&add->hdr);
      return m;
    }
    tir_Block *nb = (tir_Block *)tir_node_copy(m);
    tir_release(m);
    tir_Array *all = tir_array_concat(nb->alloc_buffers, add);
    tir_release(&add->hdr);
    tir_release(&nb->alloc_buffers->hdr);
    nb->alloc_buffers = all;
    return &nb->hdr;
  }
  return NULL;
}

tir_PrimFunc *tir_pass_lower_cross_thread_reduction(const tir_PrimFunc *f) {
  Ctx c;
  memset(&c, 0, sizeof c);
  c.root = f->body;
  tir_Node *body = tir_mutate(f->body, mut, &c);
  for (int i = 0; i < c.nrepl; i++) tir_release(c.repl[i].repl);
  free(c.repl);
  if (!body) return NULL;
  return pass_with_body(f, body);
}
