/* rfactor.c -- factorize a reduction over one loop (TVM src/tir/schedule/primitive/
 * reduction.cc, RFactor; facts only).
 *
 *   for i, k0, k1:  C[i] += A[i, k0*4 + k1]            (rfactor at k1, factor_axis 1)
 * becomes
 *   for i, k0, k1:  block C_rf: vk1 (spatial), vk0 (reduce)
 *                      C_rf[i, vk1] += A[i, vk0*4 + vk1]     (init: C_rf[i, vk1] = 0)
 *   for i, k1:      block C: vk1 (reduce)
 *                      C[i] += C_rf[i, vk1]                  (init: C[i] = 0)
 * The rf block gets a spatial iteration variable for `loop`, keeps the spatial variables and
 * the reduction variables not bound through `loop`, and gets one reduction variable per
 * other loop of the reduction variables that do use `loop` (with none left it has no init
 * and stores the rhs: C_rf[i, vk] = A[i, vk]); it runs under copies of all of
 * the block's loops, placed before them.  The original block (same identity, so handles
 * follow it) becomes the write-back: it reduces C_rf over `loop`, under the loops that no
 * reduction variable used, and `loop`.  C_rf is allocated in the scope block.
 *
 * Preconditions (TVM CheckReductionBlock and LoopPropertyError): a single block under
 * `loop`, which is a reduction block (init, affine bindings, only spatial and reduction
 * variables, the only writer of its output in the scope, output not indexed by reduction
 * variables) whose init and update are one store each forming a known reduction
 * (x + y / 0, x * y / 1, min / max value, max / min value), or TVM's two-buffer argmax /
 * argmin (index and value buffers: two lets of Selects on value >= / <= and two stores,
 * identities -1 and the lowest / highest value; the rf block and the write-back then use
 * two rf buffers; as in TVM, ties may resolve to another index once the order of the
 * reduction changes); `loop` is serial and bound to
 * a reduction variable and to no spatial one; no loop is bound to both kinds; the block is
 * the first block under its outermost loop; the first reduction loop has only this block
 * under it, below which every loop is bound or of extent 1; factor_axis in
 * [-(ndim + 1), ndim].  Stricter than TVM: the block may not have a predicate (entries of
 * C_rf that no iteration reaches would be read uninitialized). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../sched_util.h"
#include "tir/strbuf.h"

/* 1 when a spatial variable's binding uses loop variable v, 2 a reduction one's, 3 both. */
static int touched(const tir_BlockRealize *br, const tir_Var *v) {
  int k = 0;
  for (int i = 0; i < br->iter_values->size; i++) {
    if (!tir_uses_var(br->iter_values->items[i], v)) continue;
    const tir_IterVar *iv = (const tir_IterVar *)br->block->iter_vars->items[i];
    k |= iv->iter_type == TIR_ITER_COMM_REDUCE ? 2 : 1;
  }
  return k;
}

/* Operands of a tree of one associative, commutative operator (kind). */
static void flatten(const tir_Node *e, int kind, const tir_Node **ops, int *n, int cap) {
  if (e->kind == kind) {
    const tir_Add *b = (const tir_Add *)e;
    flatten(b->a, kind, ops, n, cap);
    flatten(b->b, kind, ops, n, cap);
  } else if (*n < cap) {
    ops[(*n)++] = e;
  } else {
    *n = cap + 1; /* too many: no match */
  }
}

/* Recognizes  buf[idx] = combine(..., buf[idx], ...)  where combine is +, *, min or max and
 * buf[idx] is one operand of the (flattened) tree.  Returns the combiner's kind and the
 * rest of the operands combined (owned), or 0. */
static int match_update(const tir_BufferStore *st, tir_Node **rhs) {
  int kind = st->value->kind;
  if (kind != TIR_Add && kind != TIR_Mul && kind != TIR_Min && kind != TIR_Max) return 0;
  const tir_Node *ops[64];
  int n = 0, self = -1;
  flatten(st->value, kind, ops, &n, 64);
  if (n > 64) return 0;
  for (int i = 0; i < n; i++) {
    if (ops[i]->kind != TIR_BufferLoad) continue;
    const tir_BufferLoad *l = (const tir_BufferLoad *)ops[i];
    if (l->buffer != st->buffer || !tir_expr_deep_equal(&l->indices->hdr, &st->indices->hdr)) continue;
    if (self >= 0) return 0; /* the output twice */
    self = i;
  }
  if (self < 0) return 0;
  tir_Node *r = NULL;
  for (int i = 0; i < n; i++) {
    if (i == self) continue;
    tir_Node *x = tir_retain(ops[i]);
    r = r ? tir_binary(kind, r, x) : x;
  }
  if (!r) return 0;
  *rhs = r;
  return kind;
}

static int loads_buffer(const tir_Node *n, void *p) {
  const tir_Buffer **b = p;
  if (n->kind == TIR_BufferLoad && ((const tir_BufferLoad *)n)->buffer == *b) *b = NULL;
  return 0;
}

/* The identity of the combiner matches the init value (for max/min both the infinity and
 * the finite extreme of the type are accepted). */
static int is_identity(int kind, const tir_Node *init, tir_DType t) {
  int64_t iv;
  double fv;
  int is_int = tir_is_const_int(init, &iv), is_float = tir_is_const_float(init, &fv);
  if (!is_int && !is_float) return 0;
  double x = is_int ? (double)iv : fv;
  switch (kind) {
    case TIR_Add: return x == 0;
    case TIR_Mul: return x == 1;
    case TIR_Max: return x == -INFINITY || x == tir_dtype_min(t);
    case TIR_Min: return x == INFINITY || x == tir_dtype_max(t);
    default: return 0;
  }
}

static tir_Node *combine(int kind, tir_Node *a, tir_Node *b) {
  switch (kind) {
    case TIR_Add: return tir_add(a, b);
    case TIR_Mul: return tir_mul(a, b);
    case TIR_Min: return tir_min(a, b);
    default: return tir_max(a, b);
  }
}

/* Two-buffer reducers (TVM's default argmax / argmin: index and value buffers):
 *   idx = Select(x_val >= y_val, x_idx, y_idx), val = Select(x_val >= y_val, x_val, y_val)
 * (<= for argmin), identities -1 and the lowest (highest) value. */
#define RED_ARGMAX 1001
#define RED_ARGMIN 1002

/* The reduction of a block: n (1 or 2) buffers written at the same indices, the combiner,
 * the init values and the per-iteration operands (rhs, owned). */
typedef struct {
  int n, comb;
  const tir_Buffer *buf[2];
  const tir_Array *idx;
  const tir_Node *init[2];
  const tir_Node *rhs[2]; /* two-buffer form: the y operands (borrowed) */
} Reduction;

static const tir_Node *load_of(const tir_Node *e, const tir_Buffer *b, const tir_Array *idx) {
  if (e->kind != TIR_BufferLoad) return NULL;
  const tir_BufferLoad *l = (const tir_BufferLoad *)e;
  return l->buffer == b && tir_expr_deep_equal(&l->indices->hdr, &idx->hdr) ? e : NULL;
}

/* The statements that store the combined values: one store for a single buffer; for two,
 * TVM's form  let v0 = c0; let v1 = c1; b0[idx] = v0; b1[idx] = v1. */
static tir_Node *build_update(const Reduction *r, tir_Buffer *const *bufs, const tir_Array *idx, tir_Node *const *lhs,
                              tir_Node *const *rhs) {
  if (r->n == 1) return tir_buffer_store((tir_Buffer *)R(bufs[0]), combine(r->comb, R(lhs[0]), R(rhs[0])), (tir_Array *)R(idx));
  int kind = r->comb == RED_ARGMAX ? TIR_GE : TIR_LE;
  tir_Node *c0 = tir_select(tir_cmp(kind, R(lhs[1]), R(rhs[1])), R(lhs[0]), R(rhs[0]));
  tir_Node *c1 = tir_select(tir_cmp(kind, R(lhs[1]), R(rhs[1])), R(lhs[1]), R(rhs[1]));
  tir_Var *v[2];
  for (int i = 0; i < 2; i++) {
    char *name = tir_strprintf("v_%s", bufs[i]->name);
    v[i] = tir_var_new(name, bufs[i]->hdr.dtype);
    free(name);
  }
  tir_Node *st = tir_seq2(tir_buffer_store((tir_Buffer *)R(bufs[0]), R(&v[0]->hdr), (tir_Array *)R(idx)),
                          tir_buffer_store((tir_Buffer *)R(bufs[1]), R(&v[1]->hdr), (tir_Array *)R(idx)));
  return tir_let_stmt(v[0], c0, tir_let_stmt(v[1], c1, st));
}

/* Stores of the values themselves (a block that reduces nothing any more). */
static tir_Node *build_stores(int n, tir_Buffer *const *bufs, const tir_Array *idx, tir_Node *const *vals) {
  tir_Node *a = tir_buffer_store((tir_Buffer *)R(bufs[0]), R(vals[0]), (tir_Array *)R(idx));
  return n == 1 ? a : tir_seq2(a, tir_buffer_store((tir_Buffer *)R(bufs[1]), R(vals[1]), (tir_Array *)R(idx)));
}

/* Recognizes the two-buffer argmax / argmin form; fills r or returns 0. */
static int match_arg_reduction(const tir_Block *blk, Reduction *r) {
  const tir_Node *ini = blk->init, *body = blk->body;
  if (ini->kind != TIR_SeqStmt || ((const tir_SeqStmt *)ini)->seq->size != 2) return 0;
  if (body->kind != TIR_LetStmt) return 0;
  const tir_LetStmt *l0 = (const tir_LetStmt *)body;
  if (l0->body->kind != TIR_LetStmt) return 0;
  const tir_LetStmt *l1 = (const tir_LetStmt *)l0->body;
  if (l1->body->kind != TIR_SeqStmt || ((const tir_SeqStmt *)l1->body)->seq->size != 2) return 0;
  const tir_Array *st = ((const tir_SeqStmt *)l1->body)->seq, *in = ((const tir_SeqStmt *)ini)->seq;
  /* buffer 0 stores v0 (the index), buffer 1 stores v1 (the value) */
  const tir_BufferStore *s[2] = {NULL, NULL};
  for (int i = 0; i < 2; i++) {
    if (st->items[i]->kind != TIR_BufferStore) return 0;
    const tir_BufferStore *x = (const tir_BufferStore *)st->items[i];
    if (x->value == &l0->var->hdr && !s[0]) s[0] = x;
    else if (x->value == &l1->var->hdr && !s[1]) s[1] = x;
    else return 0;
  }
  if (s[0]->buffer == s[1]->buffer || !tir_expr_deep_equal(&s[0]->indices->hdr, &s[1]->indices->hdr)) return 0;
  r->n = 2;
  r->idx = s[0]->indices;
  for (int i = 0; i < 2; i++) {
    r->buf[i] = s[i]->buffer;
    r->init[i] = NULL;
  }
  for (int i = 0; i < 2; i++) {
    if (in->items[i]->kind != TIR_BufferStore) return 0;
    const tir_BufferStore *x = (const tir_BufferStore *)in->items[i];
    if (!tir_expr_deep_equal(&x->indices->hdr, &r->idx->hdr)) return 0;
    int k = x->buffer == r->buf[0] ? 0 : x->buffer == r->buf[1] ? 1 : -1;
    if (k < 0 || r->init[k]) return 0;
    r->init[k] = x->value;
  }
  /* c0 = Select(x1 OP y1, x0, y0), c1 = Select(x1 OP y1, x1, y1) with the same condition */
  if (l0->value->kind != TIR_Select || l1->value->kind != TIR_Select) return 0;
  const tir_Select *c0 = (const tir_Select *)l0->value, *c1 = (const tir_Select *)l1->value;
  if (!tir_expr_deep_equal(c0->cond, c1->cond)) return 0;
  int kind = c0->cond->kind;
  if (kind != TIR_GE && kind != TIR_LE) return 0;
  const tir_Node *x1 = ((const tir_GE *)c0->cond)->a, *y1 = ((const tir_GE *)c0->cond)->b;
  if (!load_of(x1, r->buf[1], r->idx) || !load_of(c0->true_value, r->buf[0], r->idx) || !load_of(c1->true_value, r->buf[1], r->idx) ||
      !tir_expr_deep_equal(c1->false_value, y1))
    return 0;
  r->comb = kind == TIR_GE ? RED_ARGMAX : RED_ARGMIN;
  r->rhs[0] = c0->false_value;
  r->rhs[1] = y1;
  return 1;
}

static tir_Var *var_like(const tir_Var *v, const char *prefix) {
  char *name = tir_strprintf("%s%s", prefix, v->name);
  tir_Var *r = tir_var_new(name, v->hdr.dtype);
  free(name);
  return r;
}

/* indices with x (stolen) inserted at axis */
static tir_Array *insert_at(const tir_Array *a, int axis, tir_Node *x) {
  tir_Array *out = tir_array_new(a->size + 1);
  for (int i = 0, k = 0; i <= a->size; i++) {
    if (i == axis) out->items[k++] = x;
    if (i < a->size) out->items[k++] = tir_retain(a->items[i]);
  }
  return out;
}

typedef struct {
  const tir_Var **anc; /* the block's loops */
  int n_anc;
  const tir_Var *rf;
  const tir_BlockRealize *br;
  tir_Node *wb; /* borrowed */
} WbCtx;

/* The write-back nest: the block's loops touched by reduction variables (except `loop`)
 * are dropped, the block is replaced. */
static tir_Node *wb_fn(const tir_Node *n, void *p) {
  WbCtx *c = p;
  if (tir_is_expr(n)) return tir_retain(n);
  if (n == &c->br->hdr) return tir_retain(c->wb);
  if (n->kind != TIR_For) return NULL;
  const tir_For *f = (const tir_For *)n;
  int anc = 0;
  for (int i = 0; i < c->n_anc; i++) anc |= c->anc[i] == f->loop_var;
  if (!anc) return tir_retain(n);
  tir_Node *body = tir_mutate(f->body, wb_fn, c);
  if (f->loop_var != c->rf && (touched(c->br, f->loop_var) & 2)) return body;
  tir_For *nf = (tir_For *)tir_node_copy(n);
  tir_release(nf->body);
  nf->body = body;
  return &nf->hdr;
}

/* A block's region of buf (its reads or writes) relaxed over all its loops in the scope, as
 * constant [lo, hi] per dimension: 1 when every bound is constant, else 0. */
static int relaxed_box(const tir_Block *scope, const tir_BlockRealize *b, const tir_Buffer *buf, int reads, int64_t *lo,
                       int64_t *hi) {
  const tir_Array *reg = sch_region_of(reads ? b->block->reads : b->block->writes, buf);
  if (!reg) return 0;
  tir_Analyzer *an = tir_analyzer_new();
  tir_DomEntry rel[SCH_MAX_DEPTH];
  int nrel = 0;
  SchPath pw;
  if (sch_path_to(&scope->hdr, &b->hdr, &pw))
    for (int q = 1; q < pw.n && nrel < SCH_MAX_DEPTH; q++)
      if (pw.nodes[q]->kind == TIR_For) sch_loop_dom((const tir_For *)pw.nodes[q], &rel[nrel++]);
  tir_Node *sub = sch_substitute_bindings(b, &reg->hdr);
  tir_Array *box = tir_relax_region_pred(an, (tir_Array *)sub, rel, nrel, buf->shape, b->predicate);
  tir_release(sub);
  sch_doms_free(rel, nrel);
  int ok = box && box->size == buf->shape->size;
  for (int d = 0; ok && d < box->size; d++) {
    const tir_Range *r = (const tir_Range *)box->items[d];
    int64_t m, e;
    ok = tir_is_const_int(r->min, &m) && tir_is_const_int(r->extent, &e);
    if (ok) {
      lo[d] = m;
      hi[d] = m + e - 1;
    }
  }
  tir_release(box);
  tir_analyzer_free(an);
  return ok;
}

int64_t tir_sched_rfactor(tir_Schedule *s, const tir_Var *lv, int factor_axis) {
  const char *P = "rfactor";
  SchPath pl;
  const tir_For *rf_loop = sch_find_loop(s->func->body, lv, &pl);
  if (!rf_loop) return tir_sched_loop(s, lv, P) ? 0 : -1;
  const tir_BlockRealize **kids;
  int nk = sch_child_blocks(&rf_loop->hdr, &kids);
  const tir_BlockRealize *br = nk == 1 ? kids[0] : NULL;
  free(kids);
  if (!br)
    return sch_error(s, P, &rf_loop->hdr, "this loop", "loop %s must contain exactly one block (the reduction), found %d", lv->name,
                     nk);
  const tir_Block *blk = br->block;
  SchPath pb;
  sch_find_block(s->func->body, blk->uid, &pb);
  int sidx = sch_scope_index(&pb);
  if (sidx < 0) return sch_error(s, P, &br->hdr, "this block", "block '%s' has no enclosing scope", blk->name);
  const tir_Block *scope = (const tir_Block *)pb.nodes[sidx];
  const tir_For *loops[SCH_MAX_DEPTH];
  int n_loops = sch_loops_above(&pb, loops, SCH_MAX_DEPTH);
  /* ---- a reduction block (TVM CheckReductionBlock, conditions 1-5) ---- */
  if (!blk->init)
    return sch_error(s, P, &br->hdr, "this block", "block '%s' has no init: it is not a reduction block", blk->name);
  {
    tir_LoopIter *it = calloc((size_t)n_loops + 1, sizeof *it);
    for (int i = 0; i < n_loops; i++) {
      it[i].var = loops[i]->loop_var;
      if (!tir_is_const_int(loops[i]->min, &it[i].min) || !tir_is_const_int(loops[i]->extent, &it[i].extent)) {
        free(it);
        return sch_error(s, P, &loops[i]->hdr, "this loop", "loop %s has a symbolic range; rfactor needs constant loop ranges",
                         loops[i]->loop_var->name);
      }
    }
    char why[400];
    int ok = tir_detect_iter_map_level(NULL, (const tir_Node *const *)br->iter_values->items, NULL, br->iter_values->size, it,
                                       n_loops, br->predicate, TIR_ITER_MAP_SURJECTIVE, why, sizeof why);
    free(it);
    if (!ok)
      return sch_error(s, P, &br->hdr, "this block", "the bindings of block '%s' are not affine in its loops: %s", blk->name, why);
  }
  for (int i = 0; i < blk->iter_vars->size; i++) {
    const tir_IterVar *iv = (const tir_IterVar *)blk->iter_vars->items[i];
    if (iv->iter_type != TIR_ITER_DATA_PAR && iv->iter_type != TIR_ITER_COMM_REDUCE)
      return sch_error(s, P, &br->hdr, "this block", "block '%s' has an iteration variable (%s) that is neither spatial nor reduction",
                       blk->name, iv->var->name);
  }
  /* ---- the reduction's buffers (TVM GetInitValuesAndUpdatesFromReductionBlock) ---- */
  Reduction red;
  memset(&red, 0, sizeof red);
  if (blk->writes->size == 1 && blk->body->kind == TIR_BufferStore && blk->init->kind == TIR_BufferStore) {
    const tir_BufferStore *upd = (const tir_BufferStore *)blk->body;
    red.n = 1;
    red.buf[0] = upd->buffer;
    red.idx = upd->indices;
    red.init[0] = ((const tir_BufferStore *)blk->init)->value;
  } else if (!(blk->writes->size == 2 && match_arg_reduction(blk, &red))) {
    return sch_error(s, P, &br->hdr, "this block",
                     "the init and the body of block '%s' must each be one store to its single output, or be TVM's "
                     "two-buffer argmax/argmin (init: two stores; body: let v0 = Select(x1 >= y1, x0, y0); let v1 = "
                     "Select(x1 >= y1, x1, y1); b0[i] = v0; b1[i] = v1, or <=)",
                     blk->name);
  }
  {
    const tir_BlockRealize **all;
    int na = sch_child_blocks(&scope->hdr, &all), bad = 0;
    for (int i = 0; i < na && !bad; i++)
      for (int b = 0; b < red.n && !bad; b++)
        if (all[i] != br && sch_block_writes(all[i]->block, red.buf[b])) {
          sch_error(s, P, &all[i]->hdr, "another writer",
                    "block '%s' is not the only writer of %s in its scope (block '%s' writes it too)", blk->name, red.buf[b]->name,
                    all[i]->block->name);
          bad = 1;
        }
    /* the scope is a stage pipeline for each output (TVM requires it): no other reader of it
     * reads beyond what the reduction writes (checked where both regions have constant bounds) */
    for (int b = 0; b < red.n && !bad; b++) {
      const tir_Buffer *out = red.buf[b];
      int nd = out->shape->size, reader = -1;
      int64_t *box = calloc((size_t)nd * 4 + 1, sizeof *box);
      int64_t *wlo = box, *whi = box + nd, *rlo = box + 2 * nd, *rhi = box + 3 * nd;
      int have_w = !sch_is_param_buffer(s->func, out) && relaxed_box(scope, br, out, 0, wlo, whi);
      for (int i = 0; have_w && i < na && reader < 0; i++) {
        if (all[i] == br || !sch_block_reads(all[i]->block, out)) continue;
        if (!relaxed_box(scope, all[i], out, 1, rlo, rhi)) continue;
        for (int d = 0; d < nd; d++)
          if (rlo[d] < wlo[d] || rhi[d] > whi[d]) reader = i;
      }
      free(box);
      if (reader >= 0) {
        sch_error(s, P, &all[reader]->hdr, "reads more",
                  "block '%s' reads parts of %s that block '%s' does not write: the scope is not a stage pipeline (TVM "
                  "requires one for rfactor)",
                  all[reader]->block->name, out->name, blk->name);
        tir_error_mark(&br->hdr, "the reduction");
        bad = 1;
      }
    }
    free(all);
    if (bad) return -1;
  }

  for (int i = 0; i < blk->iter_vars->size; i++) {
    const tir_IterVar *iv = (const tir_IterVar *)blk->iter_vars->items[i];
    if (iv->iter_type == TIR_ITER_COMM_REDUCE && tir_uses_var(&red.idx->hdr, iv->var))
      return sch_error(s, P, &br->hdr, "this block", "the reduction variable %s of block '%s' indexes its output %s", iv->var->name,
                       blk->name, red.buf[0]->name);
  }
  /* ---- the loops (TVM LoopPropertyError) ---- */
  if (rf_loop->kind != TIR_FOR_SERIAL)
    return sch_error(s, P, &rf_loop->hdr, "this loop", "loop %s must be serial to rfactor (it is %s)", lv->name,
                     rf_loop->kind == TIR_FOR_PARALLEL ? "parallel" : rf_loop->kind == TIR_FOR_VECTORIZED ? "vectorized"
                     : rf_loop->kind == TIR_FOR_UNROLLED ? "unrolled" : "bound to a thread");
  if (!tir_is_one(br->predicate))
    return sch_error(s, P, &br->hdr, "this block",
                     "block '%s' has a predicate; rfactor needs every iteration to exist (entries of the rf buffer no "
                     "iteration reaches would be read uninitialized): rfactor before splitting with factors that do not divide",
                     blk->name);
  {
    const tir_BlockRealize **under;
    int nu = sch_child_blocks(&loops[0]->hdr, &under);
    int first_ok = nu > 0 && under[0] == br;
    free(under);
    if (!first_ok)
      return sch_error(s, P, &loops[0]->hdr, "this loop", "block '%s' must be the first block under its outermost loop %s", blk->name,
                       loops[0]->loop_var->name);
  }
  int met_reduction = 0, rf_reduces = 0;
  for (int i = 0; i < n_loops; i++) {
    const tir_For *l = loops[i];
    int t = touched(br, l->loop_var);
    if (t == 3)
      return sch_error(s, P, &l->hdr, "this loop", "loop %s is bound to both spatial and reduction variables of block '%s'",
                       l->loop_var->name, blk->name);
    if (t == 1) {
      if (l == rf_loop)
        return sch_error(s, P, &l->hdr, "this loop", "loop %s is bound to a spatial variable of block '%s'; rfactor needs a reduction loop",
                         lv->name, blk->name);
      continue;
    }
    if (t == 2) {
      if (l == rf_loop) rf_reduces = 1;
      if (!met_reduction) {
        const tir_BlockRealize **under;
        int nu = sch_child_blocks(&l->hdr, &under);
        free(under);
        if (nu != 1)
          return sch_error(s, P, &l->hdr, "this loop", "the outermost reduction loop %s of block '%s' has %d blocks under it; it may "
                           "hold only the reduction",
                           l->loop_var->name, blk->name, nu);
        met_reduction = 1;
      }
      continue;
    }
    if (met_reduction && !tir_is_one(l->extent))
      return sch_error(s, P, &l->hdr, "this loop",
                       "loop %s is bound to no variable of block '%s' but lies under a reduction loop (its iterations would repeat "
                       "the reduction)",
                       l->loop_var->name, blk->name);
  }
  if (!rf_reduces)
    return sch_error(s, P, &rf_loop->hdr, "this loop", "loop %s is not bound to any reduction variable of block '%s'", lv->name,
                     blk->name);
  /* ---- the reduction pattern (TVM GetReducerAndCombinerLhsRhs) ---- */
  tir_Node *rhs[2] = {NULL, NULL}; /* owned once matched */
  if (red.n == 1) {
    const tir_BufferStore *upd = (const tir_BufferStore *)blk->body, *ini = (const tir_BufferStore *)blk->init;
    red.comb = match_update(upd, &rhs[0]);
    if (red.comb && (ini->buffer != red.buf[0] || !tir_expr_deep_equal(&ini->indices->hdr, &upd->indices->hdr))) {
      tir_release(rhs[0]);
      red.comb = 0;
    }
    if (!red.comb)
      return sch_error(s, P, &br->hdr, "this block",
                       "the body of block '%s' is not  %s[...] = %s[...] op rhs  (op one of +, *, min, max) with its init storing "
                       "to the same element",
                       blk->name, red.buf[0]->name, red.buf[0]->name);
  } else {
    for (int b = 0; b < 2; b++) rhs[b] = tir_retain(red.rhs[b]);
  }
  for (int b = 0; b < red.n; b++)
    for (int c = 0; c < red.n; c++) {
      const tir_Buffer *probe = red.buf[c];
      tir_visit(rhs[b], loads_buffer, &probe);
      if (!probe) {
        tir_release(rhs[0]);
        tir_release(rhs[1]);
        return sch_error(s, P, &br->hdr, "this block", "the update of block '%s' reads its output %s outside the reduction",
                         blk->name, red.buf[c]->name);
      }
    }
  {
    /* identities: the combiner's, or for argmax/argmin -1 and the lowest/highest value */
    int k = red.n == 1 ? 0 : 1, ok;
    int comb1 = red.n == 1 ? red.comb : red.comb == RED_ARGMAX ? TIR_Max : TIR_Min;
    int64_t iv0;
    ok = is_identity(comb1, red.init[k], red.buf[k]->hdr.dtype) &&
         (red.n == 1 || (tir_is_const_int(red.init[0], &iv0) && iv0 == -1));
    if (!ok) {
      char *iv = tir_print_expr(red.init[red.n == 1 || is_identity(comb1, red.init[k], red.buf[k]->hdr.dtype) ? 0 : 1]);
      sch_error(s, P, &br->hdr, "this block", "the init value %s of block '%s' is not the identity of its reduction (%s)",
                iv ? iv : "?", blk->name,
                red.comb == TIR_Add ? "+ needs 0" : red.comb == TIR_Mul ? "* needs 1" : red.comb == TIR_Max ? "max needs the lowest value"
                : red.comb == TIR_Min ? "min needs the highest value"
                : red.comb == RED_ARGMAX ? "argmax needs -1 and the lowest value" : "argmin needs -1 and the highest value");
      free(iv);
      tir_release(rhs[0]);
      tir_release(rhs[1]);
      return -1;
    }
  }
  int ndim = red.buf[0]->shape->size;
  if (red.n == 2 && !tir_expr_deep_equal(&red.buf[0]->shape->hdr, &red.buf[1]->shape->hdr)) {
    tir_release(rhs[0]);
    tir_release(rhs[1]);
    return sch_error(s, P, &br->hdr, "this block", "the buffers %s and %s that block '%s' reduces into have different shapes",
                     red.buf[0]->name, red.buf[1]->name, blk->name);
  }
  if (factor_axis < -(ndim + 1) || factor_axis > ndim) {
    tir_release(rhs[0]);
    tir_release(rhs[1]);
    return sch_error(s, P, &br->hdr, "this block", "factor_axis %d is out of range: %s has %d dimension(s), so it must be in [%d, %d]",
                     factor_axis, red.buf[0]->name, ndim, -(ndim + 1), ndim);
  }
  if (factor_axis < 0) factor_axis += ndim + 1;

  /* ---- the rf buffer ---- */
  tir_Buffer *rfb[2] = {NULL, NULL};
  for (int b = 0; b < red.n; b++) {
    const tir_Buffer *out = red.buf[b];
    char *base = tir_strprintf("%s_rf", out->name);
    char *bname = sch_unique_name(s->func, base);
    free(base);
    tir_Array *shape = insert_at(out->shape, factor_axis, tir_retain(rf_loop->extent));
    rfb[b] = tir_buffer_new(bname, out->hdr.dtype, shape, NULL, NULL, out->scope);
    free(bname);
  }

  /* ---- the rf block ---- */
  int nv = blk->iter_vars->size;
  tir_Array *ivs = tir_array_empty(), *vals = tir_array_empty();
  const tir_Var **lmap_from = calloc((size_t)n_loops + 2, sizeof *lmap_from);
  tir_Node **lmap_to = calloc((size_t)n_loops + 2, sizeof *lmap_to);
  int nlm = 0;
  tir_Var *add = var_like(lv, "v");
  ivs = tir_array_push(ivs, &tir_iter_var((tir_Var *)R(add), tir_range(R(rf_loop->min), R(rf_loop->extent)), TIR_ITER_DATA_PAR, "")->hdr);
  vals = tir_array_push(vals, tir_retain(&lv->hdr));
  lmap_from[nlm] = lv;
  lmap_to[nlm++] = tir_retain(&add->hdr);
  tir_Var **old_r = calloc((size_t)nv + 1, sizeof *old_r);
  tir_Node **new_r = calloc((size_t)nv + 1, sizeof *new_r);
  int nr = 0;
  for (int i = 0; i < nv; i++) {
    const tir_IterVar *iv = (const tir_IterVar *)blk->iter_vars->items[i];
    const tir_Node *b = br->iter_values->items[i];
    if (iv->iter_type == TIR_ITER_DATA_PAR || !tir_uses_var(b, lv)) {
      ivs = tir_array_push(ivs, tir_retain(&iv->hdr));
      vals = tir_array_push(vals, tir_retain(b));
      continue;
    }
    /* a reduction variable through `loop`: one new reduction variable per other loop */
    for (int k = 0; k < n_loops; k++) {
      const tir_For *l = loops[k];
      if (!tir_uses_var(b, l->loop_var)) continue;
      int seen = 0;
      for (int m = 0; m < nlm; m++) seen |= lmap_from[m] == l->loop_var;
      if (seen) continue;
      tir_Var *nvv = var_like(l->loop_var, "v");
      ivs = tir_array_push(ivs, &tir_iter_var((tir_Var *)R(nvv), tir_range(R(l->min), R(l->extent)), TIR_ITER_COMM_REDUCE, "")->hdr);
      vals = tir_array_push(vals, tir_retain(&l->loop_var->hdr));
      lmap_from[nlm] = l->loop_var;
      lmap_to[nlm++] = &nvv->hdr;
    }
    old_r[nr] = iv->var;
    new_r[nr++] = tir_substitute(b, nlm, (tir_Var *const *)lmap_from, lmap_to);
  }
  tir_Array *rf_idx = insert_at(red.idx, factor_axis, tir_retain(&add->hdr));
  tir_Node *rf_rhs[2] = {NULL, NULL}, *rf_lhs[2] = {NULL, NULL}, *rf_id[2] = {NULL, NULL};
  for (int b = 0; b < red.n; b++) {
    rf_rhs[b] = tir_substitute(rhs[b], nr, old_r, new_r);
    rf_lhs[b] = tir_buffer_load((tir_Buffer *)R(rfb[b]), (tir_Array *)R(rf_idx));
    rf_id[b] = tir_retain(red.init[b]);
  }
  /* when `loop` carries every reduction iteration, each element of the rf buffer is written
   * once: the rf block has no reduction variable, stores the rhs and has no init (TVM
   * BaseBlockCreator, "no reduction iterator") */
  int rf_reduces_more = 0;
  for (int i = 0; i < ivs->size; i++) rf_reduces_more |= ((const tir_IterVar *)ivs->items[i])->iter_type == TIR_ITER_COMM_REDUCE;
  tir_Node *rf_body, *rf_init = NULL;
  if (rf_reduces_more) {
    rf_body = build_update(&red, rfb, rf_idx, rf_lhs, rf_rhs);
    rf_init = build_stores(red.n, rfb, rf_idx, rf_id);
  } else {
    rf_body = build_stores(red.n, rfb, rf_idx, rf_rhs);
  }
  for (int b = 0; b < red.n; b++) {
    tir_release(rf_rhs[b]);
    tir_release(rf_lhs[b]);
    tir_release(rf_id[b]);
  }
  char *rn = tir_strprintf("%s_rf", blk->name);
  char *rname = sch_unique_name(s->func, rn);
  free(rn);
  tir_Block *rb = tir_block_new(rname, ivs, NULL, NULL, rf_init, NULL, NULL, (tir_Array *)R(blk->annotations), rf_body);
  free(rname);
  tir_Block *rbd = tir_block_with_detected_access(rb);
  tir_release(rb);
  int64_t rf_uid = rbd->uid;
  /* under copies of all the block's loops (fresh variables, same names) */
  tir_Var **lold = calloc((size_t)n_loops + 1, sizeof *lold);
  tir_Node **lnew = calloc((size_t)n_loops + 1, sizeof *lnew);
  for (int k = 0; k < n_loops; k++) {
    lold[k] = loops[k]->loop_var;
    lnew[k] = &var_like(loops[k]->loop_var, "")->hdr;
  }
  tir_Node *vals2 = tir_substitute(&vals->hdr, n_loops, lold, lnew);
  tir_release(vals);
  tir_Node *rf_nest = tir_block_realize((tir_Array *)vals2, tir_bool_imm(1), rbd);
  for (int k = n_loops - 1; k >= 0; k--) {
    const tir_For *l = loops[k];
    rf_nest = tir_for((tir_Var *)lnew[k], R(l->min), R(l->extent), (int)l->kind, l->thread_tag, (tir_Array *)R(l->annotations), rf_nest);
  }
  free(lold);
  free(lnew);

  /* ---- the write-back block: the original one (same uid) ---- */
  tir_Array *wivs = tir_array_empty(), *wvals = tir_array_empty();
  tir_Var *wadd = var_like(lv, "v");
  wivs = tir_array_push(wivs, &tir_iter_var((tir_Var *)R(wadd), tir_range(R(rf_loop->min), R(rf_loop->extent)), TIR_ITER_COMM_REDUCE, "")->hdr);
  wvals = tir_array_push(wvals, tir_retain(&lv->hdr));
  tir_Var **wold = calloc((size_t)nv + 2, sizeof *wold);
  tir_Node **wnew = calloc((size_t)nv + 2, sizeof *wnew);
  int nw = 0;
  wold[nw] = add;
  wnew[nw++] = tir_retain(&wadd->hdr);
  for (int i = 0; i < nv; i++) {
    const tir_IterVar *iv = (const tir_IterVar *)blk->iter_vars->items[i];
    if (iv->iter_type != TIR_ITER_DATA_PAR) continue;
    tir_Var *nvv = var_like(iv->var, "");
    wivs = tir_array_push(wivs, &tir_iter_var((tir_Var *)R(nvv), (tir_Range *)R(iv->dom), TIR_ITER_DATA_PAR, "")->hdr);
    wvals = tir_array_push(wvals, tir_retain(br->iter_values->items[i]));
    wold[nw] = iv->var;
    wnew[nw++] = &nvv->hdr;
  }
  tir_Node *wrf_load[2] = {NULL, NULL}, *wload[2] = {NULL, NULL};
  for (int b = 0; b < red.n; b++) {
    wrf_load[b] = tir_buffer_load((tir_Buffer *)R(rfb[b]), (tir_Array *)R(rf_idx));
    wload[b] = tir_buffer_load((tir_Buffer *)R(red.buf[b]), (tir_Array *)R(red.idx));
  }
  tir_Node *wstore = build_update(&red, (tir_Buffer *const *)red.buf, red.idx, wload, wrf_load);
  for (int b = 0; b < red.n; b++) {
    tir_release(wrf_load[b]);
    tir_release(wload[b]);
  }
  tir_Node *wbody = tir_substitute(wstore, nw, wold, wnew);
  tir_Node *winit = tir_substitute(blk->init, nw, wold, wnew);
  tir_release(wstore);
  tir_Block *wb = (tir_Block *)tir_node_copy(&blk->hdr);
  tir_release(wb->iter_vars);
  tir_release(wb->init);
  tir_release(wb->body);
  wb->iter_vars = wivs;
  wb->init = winit;
  wb->body = wbody;
  tir_Block *wbd = tir_block_with_detected_access(wb);
  tir_release(wb);
  tir_Node *wb_realize = tir_block_realize(wvals, tir_bool_imm(1), wbd);
  const tir_Var **anc = calloc((size_t)n_loops + 1, sizeof *anc);
  for (int k = 0; k < n_loops; k++) anc[k] = loops[k]->loop_var;
  WbCtx wc = {anc, n_loops, lv, br, wb_realize};
  tir_Node *wb_nest = tir_mutate(&loops[0]->hdr, wb_fn, &wc);
  free(anc);
  tir_release(wb_realize);
  tir_Node *pair = tir_seq2(rf_nest, wb_nest);
  tir_Node *nscope = tir_replace_stmt(&scope->hdr, &loops[0]->hdr, pair);
  tir_Block *ns = (tir_Block *)nscope;
  for (int b = 0; b < red.n; b++) ns->alloc_buffers = tir_array_push(ns->alloc_buffers, &rfb[b]->hdr);
  sch_replace(s, &scope->hdr, nscope);

  for (int i = 0; i < nlm; i++) tir_release(lmap_to[i]);
  for (int i = 0; i < nr; i++) tir_release(new_r[i]);
  for (int i = 0; i < nw; i++) tir_release(wnew[i]);
  free(lmap_from), free(lmap_to), free(old_r), free(new_r), free(wold), free(wnew);
  tir_release(rf_idx);
  tir_release(rhs[0]);
  tir_release(rhs[1]);
  tir_release(add);
  tir_release(wadd);
  return rf_uid;
}
