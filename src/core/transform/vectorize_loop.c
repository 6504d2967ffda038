/* vectorize_loop.c -- loops marked vectorized become vector expressions (TVM
 * src/tir/transforms/vectorize_loop.cc), on flat IR.
 *
 * A loop "for v in vectorized(L)" (L in 2..16, constant) whose body is a sequence of
 * stores is rewritten with v := Ramp(0, 1, L): expressions not using v stay scalar, sums
 * and constant multiples of ramps stay ramps, other operations become lane-wise vector
 * operations, and loads/stores take ramp indices.  Every store index must be a unit-stride
 * ramp whose start is a multiple of L (so the access is aligned to its vector width) and
 * every load index a unit-stride ramp or a scalar (a store with another stride is kept only when its
 * value is one contiguous load: a vector load scattered lane by lane); otherwise the loop simply becomes an
 * unrolled serial loop -- vectorization never changes the result. */
#include <stdlib.h>
#include <string.h>

#include "pass_util.h"
#include "tir/arith.h"

typedef struct {
  const tir_Var *var;
  int lanes;
  int ok;
  tir_Analyzer *an;
} VCtx;

static int is_vec(const tir_Node *e) { return e->dtype.lanes > 1; }

static tir_Node *bcast(tir_Node *e, int lanes) { return is_vec(e) ? e : tir_broadcast(e, lanes); }

/* base and stride of a ramp, or of a scalar (stride 0) */
static int as_ramp(const tir_Node *e, tir_Node **base, tir_Node **stride) {
  if (e->kind == TIR_Ramp) {
    *base = R(((const tir_Ramp *)e)->base);
    *stride = R(((const tir_Ramp *)e)->stride);
    return 1;
  }
  if (!is_vec(e)) {
    *base = R((tir_Node *)e);
    *stride = tir_int_imm(e->dtype, 0);
    return 1;
  }
  return 0;
}

static tir_Node *vec(VCtx *c, const tir_Node *e);

/* x is a unit-stride ramp whose start is a multiple of the lane count, and y a scalar that is
 * one too: then the lanes x..x+L-1 lie in one aligned block of L. */
static int aligned_block(VCtx *c, const tir_Node *x, const tir_Node *y) {
  if (x->kind != TIR_Ramp || !tir_is_one(((const tir_Ramp *)x)->stride) || is_vec(y)) return 0;
  tir_DType it = tir_dtype_element(x->dtype);
  tir_Node *mx = tir_floormod(R(((const tir_Ramp *)x)->base), tir_int_imm(it, c->lanes));
  tir_Node *my = tir_floormod(R((tir_Node *)y), tir_int_imm(tir_dtype_element(y->dtype), c->lanes));
  tir_Node *zx = tir_int_imm(it, 0), *zy = tir_int_imm(tir_dtype_element(y->dtype), 0);
  int ok = tir_can_prove_equal(c->an, mx, zx) && tir_can_prove_equal(c->an, my, zy);
  tir_release(mx), tir_release(my), tir_release(zx), tir_release(zy);
  return ok;
}

/* floordiv / floormod of an aligned unit ramp b + [0, L) by a constant d that is a multiple of L
 * (TVM's vectorizer and RampDivMod rules): the L lanes share b // d, and b % d + [0, L) does not
 * wrap, so x // d is the scalar b // d and x % d the ramp (b % d) + [0, L).  An index such as
 * im2col's c = k % C with C a multiple of 8 stays contiguous.  Anything else: NULL (scalar). */
static tir_Node *ramp_divmod(VCtx *c, int kind, const tir_Node *x, const tir_Node *y) {
  int64_t d;
  if (!is_vec(x) && !is_vec(y)) return tir_binary_raw(kind, R((tir_Node *)x), R((tir_Node *)y));
  if (!tir_is_const_int(y, &d) || d <= 0 || d % c->lanes != 0 || !aligned_block(c, x, y)) return NULL;
  const tir_Node *b = ((const tir_Ramp *)x)->base;
  tir_Node *q = tir_binary(kind, R((tir_Node *)b), R((tir_Node *)y));
  tir_Node *sq = tir_simplify(c->an, q);
  tir_release(q);
  if (kind == TIR_FloorDiv) return sq;
  return tir_ramp(sq, tir_int_imm(tir_dtype_element(x->dtype), 1), c->lanes);
}

/* x < y and x >= y for an aligned unit ramp x and a scalar y that is a multiple of L are the
 * same in every lane (the L lanes are one aligned block, either all below y or all at or
 * above it): the scalar comparison of the ramp's start.  (Also y > x, y <= x.)  Keeps the
 * bounds checks of a padded tile uniform, so a guarded copy stays one vector copy. */
static tir_Node *uniform_compare(VCtx *c, int kind, const tir_Node *x, const tir_Node *y) {
  if (kind == TIR_GT || kind == TIR_LE) { /* y > x is x < y; y <= x is x >= y */
    const tir_Node *t = x;
    x = y, y = t;
    kind = kind == TIR_GT ? TIR_LT : TIR_GE;
  }
  if (!aligned_block(c, x, y)) return NULL;
  return tir_binary_raw(kind, R(((const tir_Ramp *)x)->base), R((tir_Node *)y));
}

static tir_Node *vec_binary(VCtx *c, const tir_Node *e) {
  const tir_Add *b = (const tir_Add *)e;
  tir_Node *x = vec(c, b->a), *y = vec(c, b->b);
  if (!x || !y) {
    tir_release(x);
    tir_release(y);
    return NULL;
  }
  if (!is_vec(x) && !is_vec(y)) return tir_binary_raw(e->kind, x, y);
  /* ramps stay ramps under + - and multiplication by a scalar constant */
  tir_Node *xb, *xs, *yb, *ys;
  int rampish = (x->kind == TIR_Ramp || !is_vec(x)) && (y->kind == TIR_Ramp || !is_vec(y));
  if (tir_dtype_is_int(e->dtype) && (e->kind == TIR_Add || e->kind == TIR_Sub) && rampish && as_ramp(x, &xb, &xs) &&
      as_ramp(y, &yb, &ys)) {
    tir_Node *base = tir_binary(e->kind, xb, yb), *stride = tir_binary(e->kind, xs, ys);
    tir_release(x);
    tir_release(y);
    tir_Node *sb = tir_simplify(c->an, base), *ss = tir_simplify(c->an, stride);
    tir_release(base);
    tir_release(stride);
    if (tir_is_zero(ss)) {
      tir_release(ss);
      return sb;
    }
    return tir_ramp(sb, ss, c->lanes);
  }
  int64_t k;
  if (e->kind == TIR_Mul && tir_dtype_is_int(e->dtype) && (x->kind == TIR_Ramp || y->kind == TIR_Ramp) &&
      (tir_is_const_int(x, &k) || tir_is_const_int(y, &k))) {
    const tir_Ramp *r = (const tir_Ramp *)(x->kind == TIR_Ramp ? x : y);
    tir_Node *base = tir_mul(R(r->base), tir_int_imm(r->base->dtype, k)), *stride = tir_mul(R(r->stride), tir_int_imm(r->stride->dtype, k));
    tir_release(x);
    tir_release(y);
    return tir_ramp(base, stride, c->lanes);
  }
  if ((e->kind == TIR_FloorDiv || e->kind == TIR_FloorMod) && tir_dtype_is_int(e->dtype)) {
    tir_Node *r = ramp_divmod(c, e->kind, x, y);
    tir_release(x);
    tir_release(y);
    return r;
  }
  if (e->kind == TIR_Div || e->kind == TIR_Mod) {
    tir_release(x);
    tir_release(y);
    return NULL; /* index arithmetic that breaks contiguity: leave the loop scalar */
  }
  if (e->kind == TIR_LT || e->kind == TIR_GE || e->kind == TIR_GT || e->kind == TIR_LE) {
    tir_Node *r = uniform_compare(c, e->kind, x, y);
    if (r) {
      tir_release(x);
      tir_release(y);
      return r;
    }
  }
  /* lane-wise */
  tir_Node *r = tir_binary_raw(e->kind, bcast(x, c->lanes), bcast(y, c->lanes));
  return r;
}

static tir_Node *vec(VCtx *c, const tir_Node *e) {
  if (!tir_uses_var(e, c->var)) return R((tir_Node *)e);
  switch (e->kind) {
    case TIR_Var: return tir_ramp(tir_int_imm(e->dtype, 0), tir_int_imm(e->dtype, 1), c->lanes);
    case TIR_Add: case TIR_Sub: case TIR_Mul: case TIR_Div: case TIR_Mod: case TIR_FloorDiv: case TIR_FloorMod:
    case TIR_Min: case TIR_Max: case TIR_EQ: case TIR_NE: case TIR_LT: case TIR_LE: case TIR_GT: case TIR_GE:
    case TIR_And: case TIR_Or:
      return vec_binary(c, e);
    case TIR_Cast: {
      tir_Node *v = vec(c, ((const tir_Cast *)e)->value);
      if (!v) return NULL;
      return tir_cast_raw(tir_dtype_with_lanes(e->dtype, c->lanes), bcast(v, c->lanes));
    }
    case TIR_Select: {
      const tir_Select *s = (const tir_Select *)e;
      tir_Node *a = vec(c, s->cond), *t = vec(c, s->true_value), *f = vec(c, s->false_value);
      if (!a || !t || !f) {
        tir_release(a), tir_release(t), tir_release(f);
        return NULL;
      }
      tir_Select *n = (tir_Select *)tir_node_alloc(TIR_Select, tir_dtype_with_lanes(e->dtype, c->lanes));
      n->cond = bcast(a, c->lanes);
      n->true_value = bcast(t, c->lanes);
      n->false_value = bcast(f, c->lanes);
      tir_node_update_depth(&n->hdr);
      return &n->hdr;
    }
    case TIR_Call: {
      /* if_then_else(c, a, b) with a condition the same in every lane (after the rules above):
       * one vector value, the codegen a select of whole vectors (and a guarded async copy
       * inject_ptx_async_copy zero-fills).  A per-lane condition stays scalar: only the taken
       * side may be evaluated, lane by lane. */
      const tir_Call *k = (const tir_Call *)e;
      const tir_MathBuiltin *m = tir_math_builtin(k->op);
      if (m && m->arity == k->args->size && k->args->size <= 2) {
        /* a math builtin (round, exp, ...) lane by lane: the codegen emits the scalar call per
         * lane, the simulator evaluates it per lane (an epilogue's requantization stays vector,
         * so its int8 results leave in one packed store) */
        tir_Node *a[2] = {NULL, NULL};
        for (int q = 0; q < k->args->size; q++) {
          a[q] = vec(c, k->args->items[q]);
          if (!a[q]) {
            tir_release(a[0]);
            return NULL;
          }
          a[q] = bcast(a[q], c->lanes);
        }
        tir_Array *args = k->args->size == 1 ? tir_array_of(1, a[0]) : tir_array_of(2, a[0], a[1]);
        return tir_call(tir_dtype_with_lanes(e->dtype, c->lanes), k->op, args);
      }
      if (strcmp(k->op, "if_then_else") != 0 || k->args->size != 3) return NULL;
      tir_Node *a = vec(c, k->args->items[0]);
      if (!a || is_vec(a)) {
        tir_release(a);
        return NULL;
      }
      tir_Node *t = vec(c, k->args->items[1]), *f = t ? vec(c, k->args->items[2]) : NULL;
      if (!t || !f) {
        tir_release(a), tir_release(t), tir_release(f);
        return NULL;
      }
      return tir_call(tir_dtype_with_lanes(e->dtype, c->lanes), "if_then_else", tir_array_of(3, a, bcast(t, c->lanes), bcast(f, c->lanes)));
    }
    case TIR_BufferLoad: {
      const tir_BufferLoad *l = (const tir_BufferLoad *)e;
      if (l->indices->size != 1) return NULL;
      tir_Node *ix = vec(c, l->indices->items[0]);
      if (!ix) return NULL;
      if (ix->kind != TIR_Ramp || !tir_is_one(((tir_Ramp *)ix)->stride)) {
        tir_release(ix);
        return NULL; /* gathers are left scalar */
      }
      return tir_buffer_load((tir_Buffer *)R(l->buffer), tir_array_of(1, ix));
    }
    default: return NULL;
  }
}

static tir_Node *vec_store(VCtx *c, const tir_BufferStore *st) {
  if (st->indices->size != 1) return NULL;
  tir_Node *ix = vec(c, st->indices->items[0]);
  if (!ix) return NULL;
  if (ix->kind != TIR_Ramp) {
    tir_release(ix);
    return NULL;
  }
  if (!tir_is_one(((tir_Ramp *)ix)->stride)) {
    /* a scatter: worth it only when the value is one contiguous vector load (e.g. a global row
     * stored into a transposed shared tile); the codegen stores it lane by lane */
    tir_Node *v = vec(c, st->value);
    int ok = v && v->kind == TIR_BufferLoad && is_vec(v);
    if (!ok) {
      tir_release(v);
      tir_release(ix);
      return NULL;
    }
    return tir_buffer_store((tir_Buffer *)R(st->buffer), v, tir_array_of(1, ix));
  }
  /* aligned: the first index is a multiple of the vector width */
  tir_DType it = tir_dtype_element(ix->dtype);
  tir_Node *m = tir_floormod(R(((tir_Ramp *)ix)->base), tir_int_imm(it, c->lanes));
  tir_Node *zero = tir_int_imm(it, 0);
  int aligned = tir_can_prove_equal(c->an, m, zero);
  tir_release(m);
  tir_release(zero);
  tir_Node *v = aligned ? vec(c, st->value) : NULL;
  if (!v) {
    tir_release(ix);
    return NULL;
  }
  /* every vector load must be aligned too */
  return tir_buffer_store((tir_Buffer *)R(st->buffer), bcast(v, c->lanes), tir_array_of(1, ix));
}

/* The vector loads the codegen makes whole vector accesses must be aligned: the stored value
 * itself when it is a load (a copy), the taken side of a guarded copy (if_then_else), and the
 * operand of a reinterpret.  Loads under arithmetic, casts or math calls are read lane by lane
 * (codegen_cuda.c lane_expr) and need no alignment (a padded shared row of the staged
 * accumulators feeding an epilogue). */
static int load_aligned(VCtx *c, const tir_Node *n, int whole) {
  if (n->kind == TIR_BufferLoad && n->dtype.lanes > 1) {
    if (!whole) return 1;
    const tir_Node *ix = ((const tir_BufferLoad *)n)->indices->items[0];
    if (ix->kind != TIR_Ramp) return 1;
    tir_DType it = tir_dtype_element(ix->dtype);
    tir_Node *m = tir_floormod(R(((const tir_Ramp *)ix)->base), tir_int_imm(it, c->lanes));
    tir_Node *zero = tir_int_imm(it, 0);
    int ok = tir_can_prove_equal(c->an, m, zero);
    tir_release(m);
    tir_release(zero);
    return ok;
  }
  if (n->kind == TIR_Call) {
    const tir_Call *k = (const tir_Call *)n;
    int ite = strcmp(k->op, "if_then_else") == 0, re = strcmp(k->op, "reinterpret") == 0;
    for (int q = 0; q < k->args->size; q++)
      if (!load_aligned(c, k->args->items[q], (ite && whole && q > 0) || re)) return 0;
    return 1;
  }
  if (n->kind == TIR_Cast) return load_aligned(c, ((const tir_Cast *)n)->value, 0);
  if (n->kind == TIR_Select) {
    const tir_Select *s = (const tir_Select *)n;
    return load_aligned(c, s->cond, 0) && load_aligned(c, s->true_value, 0) && load_aligned(c, s->false_value, 0);
  }
  if (n->kind >= TIR_Add && n->kind <= TIR_Or) {
    const tir_Add *b = (const tir_Add *)n;
    return load_aligned(c, b->a, 0) && load_aligned(c, b->b, 0);
  }
  return 1;
}

static tir_Node *try_vectorize(const tir_For *f, tir_Analyzer *an) {
  int64_t ext;
  if (!tir_is_const_int(f->extent, &ext) || ext < 2 || ext > 16 || !tir_is_zero(f->min)) return NULL;
  VCtx c = {f->loop_var, (int)ext, 1, an};
  int n = f->body->kind == TIR_SeqStmt ? ((const tir_SeqStmt *)f->body)->seq->size : 1;
  tir_Array *out = tir_array_new(n);
  for (int i = 0; i < n; i++) {
    const tir_Node *s = f->body->kind == TIR_SeqStmt ? ((const tir_SeqStmt *)f->body)->seq->items[i] : f->body;
    tir_Node *v = s->kind == TIR_BufferStore ? vec_store(&c, (const tir_BufferStore *)s) : NULL;
    if (!v) {
      tir_release(out);
      return NULL;
    }
    if (!load_aligned(&c, ((const tir_BufferStore *)v)->value, 1)) {
      tir_release(v);
      tir_release(out);
      return NULL;
    }
    out->items[i] = v;
  }
  return tir_seq(out);
}

typedef struct {
  tir_Analyzer *an;
} Ctx;

static tir_Node *mut(const tir_Node *n, void *p) {
  Ctx *c = p;
  if (tir_is_expr(n)) return tir_retain(n);
  if (n->kind == TIR_AttrStmt) {
    const tir_AttrStmt *a = (const tir_AttrStmt *)n;
    if (strcmp(a->key, "thread_extent") == 0 && a->node && a->node->kind == TIR_IterVar) {
      int mark = tir_analyzer_mark(c->an);
      tir_Node *zero = tir_i32(0);
      tir_analyzer_bind_range(c->an, ((const tir_IterVar *)a->node)->var, zero, a->value);
      tir_release(zero);
      tir_Node *body = tir_mutate(a->body, mut, p);
      tir_analyzer_reset(c->an, mark);
      if (!body) return TIR_MUTATE_ERROR;
      return tir_attr_stmt(R(a->node), a->key, R(a->value), body);
    }
    return NULL;
  }
  if (n->kind != TIR_For) return NULL;
  const tir_For *f = (const tir_For *)n;
  int mark = tir_analyzer_mark(c->an);
  tir_analyzer_bind_range(c->an, f->loop_var, f->min, f->extent);
  tir_Node *body = tir_mutate(f->body, mut, p);
  if (!body) {
    tir_analyzer_reset(c->an, mark);
    return TIR_MUTATE_ERROR;
  }
  tir_For *nf = (tir_For *)tir_node_copy(n);
  tir_release(nf->body);
  nf->body = body;
  tir_Node *r = NULL;
  if (f->kind == TIR_FOR_VECTORIZED) {
    r = try_vectorize(nf, c->an);
    if (!r) nf->kind = TIR_FOR_UNROLLED; /* same result, serial */
  }
  tir_analyzer_reset(c->an, mark);
  if (r) {
    tir_release(nf);
    return r;
  }
  return &nf->hdr;
}

tir_PrimFunc *tir_pass_vectorize_loop(const tir_PrimFunc *f) {
  Ctx c = {tir_analyzer_new()};
  tir_Node *body = tir_mutate(f->body, mut, &c);
  tir_analyzer_free(c.an);
  return pass_with_body(f, body);
}
