/* analyzer.c -- facts about variables and constant integer bounds of expressions
 * (TVM src/arith/const_int_bound.cc).  Bounds saturate at +-infinity. */
#include <stdlib.h>
#include <string.h>

#include "arith_internal.h"

tir_Analyzer *tir_analyzer_new(void) {
  tir_Analyzer *a = calloc(1, sizeof *a);
  return a;
}

void tir_analyzer_free(tir_Analyzer *a) {
  if (!a) return;
  tir_analyzer_reset(a, 0);
  free(a->b);
  free(a);
}

static Binding *push(tir_Analyzer *a) {
  if (a->n == a->cap) {
    a->cap = a->cap ? a->cap * 2 : 16;
    a->b = realloc(a->b, sizeof(Binding) * (size_t)a->cap);
  }
  Binding *b = &a->b[a->n++];
  memset(b, 0, sizeof *b);
  return b;
}

int tir_analyzer_mark(tir_Analyzer *a) { return a ? a->n : 0; }

void tir_analyzer_reset(tir_Analyzer *a, int mark) {
  if (!a) return;
  while (a->n > mark) {
    a->n--;
    tir_release(a->b[a->n].value);
  }
}

const Binding *arith_lookup(const tir_Analyzer *a, const tir_Node *v) {
  if (!a) return NULL;
  for (int i = a->n - 1; i >= 0; i--)
    if (&a->b[i].var->hdr == v) return &a->b[i];
  return NULL;
}

void tir_analyzer_bind_bound(tir_Analyzer *a, const tir_Var *v, int64_t lo, int64_t hi) {
  if (!a) return;
  Binding *b = push(a);
  b->var = v;
  b->lo = lo;
  b->hi = hi;
}

void tir_analyzer_bind_range(tir_Analyzer *a, const tir_Var *v, const tir_Node *min, const tir_Node *extent) {
  if (!a) return;
  tir_ConstIntBound bm = tir_const_int_bound(a, min);
  tir_Node *last = tir_sub(tir_add(R((tir_Node *)min), R((tir_Node *)extent)), tir_int_imm(min->dtype, 1));
  tir_ConstIntBound bl = tir_const_int_bound(a, last);
  tir_release(last);
  int64_t lo = bm.min, hi = bl.max;
  /* an empty loop (extent <= 0) gives no information */
  if (lo != TIR_NEG_INF && hi != TIR_POS_INF && hi < lo) hi = lo;
  tir_analyzer_bind_bound(a, v, lo, hi);
}

void tir_analyzer_bind_value(tir_Analyzer *a, const tir_Var *v, const tir_Node *value) {
  if (!a) return;
  tir_ConstIntBound bv = tir_const_int_bound(a, value);
  Binding *b = push(a);
  b->var = v;
  b->lo = bv.min;
  b->hi = bv.max;
  b->value = tir_retain(value);
}

/* var OP const patterns tighten the var's bound */
void tir_analyzer_assume(tir_Analyzer *a, const tir_Node *cond) {
  if (!a || !cond) return;
  if (cond->kind == TIR_And) {
    tir_analyzer_assume(a, ((const tir_And *)cond)->a);
    tir_analyzer_assume(a, ((const tir_And *)cond)->b);
    return;
  }
  if (cond->kind < TIR_EQ || cond->kind > TIR_GE) return;
  const tir_Node *x = ((const tir_LT *)cond)->a, *y = ((const tir_LT *)cond)->b;
  int kind = cond->kind;
  int64_t c;
  if (x->kind != TIR_Var && y->kind == TIR_Var && tir_is_const_int(x, &c)) {
    const tir_Node *t = x;
    x = y;
    y = t;
    kind = kind == TIR_LT ? TIR_GT : kind == TIR_LE ? TIR_GE : kind == TIR_GT ? TIR_LT : kind == TIR_GE ? TIR_LE : kind;
  }
  if (x->kind != TIR_Var || !tir_is_const_int(y, &c)) return;
  tir_ConstIntBound b = tir_const_int_bound(a, x);
  switch (kind) {
    case TIR_LT: if (c - 1 < b.max) b.max = c - 1; break;
    case TIR_LE: if (c < b.max) b.max = c; break;
    case TIR_GT: if (c + 1 > b.min) b.min = c + 1; break;
    case TIR_GE: if (c > b.min) b.min = c; break;
    case TIR_EQ: b.min = b.max = c; break;
    default: return;
  }
  tir_analyzer_bind_bound(a, (const tir_Var *)x, b.min, b.max);
}

/* ---- saturating interval arithmetic ---- */
int64_t arith_sat_add(int64_t x, int64_t y) {
  if (x == TIR_NEG_INF || y == TIR_NEG_INF) return (x == TIR_POS_INF || y == TIR_POS_INF) ? 0 : TIR_NEG_INF;
  if (x == TIR_POS_INF || y == TIR_POS_INF) return TIR_POS_INF;
  int64_t r;
  if (__builtin_add_overflow(x, y, &r)) return x > 0 ? TIR_POS_INF : TIR_NEG_INF;
  return r;
}

int64_t arith_sat_mul(int64_t x, int64_t y) {
  if (x == 0 || y == 0) return 0;
  int neg = (x < 0) != (y < 0);
  if (x == TIR_NEG_INF || x == TIR_POS_INF || y == TIR_NEG_INF || y == TIR_POS_INF) return neg ? TIR_NEG_INF : TIR_POS_INF;
  int64_t r;
  if (__builtin_mul_overflow(x, y, &r)) return neg ? TIR_NEG_INF : TIR_POS_INF;
  return r;
}

static int64_t neg_sat(int64_t x) {
  if (x == TIR_NEG_INF) return TIR_POS_INF;
  if (x == TIR_POS_INF) return TIR_NEG_INF;
  return -x;
}

int64_t arith_floordiv(int64_t a, int64_t b) {
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) q--;
  return q;
}
int64_t arith_floormod(int64_t a, int64_t b) { return a - arith_floordiv(a, b) * b; }

static tir_ConstIntBound everything(tir_DType t) {
  tir_ConstIntBound r = {TIR_NEG_INF, TIR_POS_INF};
  if (t.code == TIR_DT_BOOL) r.min = 0, r.max = 1;
  else if (t.code == TIR_DT_INT && t.bits < 64) {
    r.min = -((int64_t)1 << (t.bits - 1));
    r.max = ((int64_t)1 << (t.bits - 1)) - 1;
  } else if (t.code == TIR_DT_UINT) {
    r.min = 0;
    if (t.bits < 64) r.max = ((int64_t)1 << t.bits) - 1;
  }
  return r;
}

static tir_ConstIntBound make_bound(int64_t lo, int64_t hi) {
  tir_ConstIntBound r = {lo, hi};
  return r;
}

static tir_ConstIntBound intersect(tir_ConstIntBound x, tir_ConstIntBound y) {
  tir_ConstIntBound r = {x.min > y.min ? x.min : y.min, x.max < y.max ? x.max : y.max};
  if (r.min > r.max) return x; /* inconsistent facts: keep the expression's own bound */
  return r;
}

static tir_ConstIntBound bound_mul(tir_ConstIntBound x, tir_ConstIntBound y) {
  int64_t p[4] = {arith_sat_mul(x.min, y.min), arith_sat_mul(x.min, y.max), arith_sat_mul(x.max, y.min),
                  arith_sat_mul(x.max, y.max)};
  tir_ConstIntBound r = {p[0], p[0]};
  for (int i = 1; i < 4; i++) {
    if (p[i] < r.min) r.min = p[i];
    if (p[i] > r.max) r.max = p[i];
  }
  return r;
}

static tir_ConstIntBound bound_of(tir_Analyzer *a, const tir_Node *e) {
  tir_ConstIntBound all = everything(e->dtype);
  if (arith_work_exhausted()) return all; /* see arith_internal.h */
  if (e->dtype.lanes > 1 || !(tir_dtype_is_int(e->dtype) || tir_dtype_is_bool(e->dtype))) return all;
  switch (e->kind) {
    case TIR_IntImm: {
      int64_t v = ((const tir_IntImm *)e)->value;
      return make_bound(v, v);
    }
    case TIR_Var: {
      const Binding *b = arith_lookup(a, e);
      if (b) return intersect(all, make_bound(b->lo, b->hi));
      return all;
    }
    case TIR_Add: {
      tir_ConstIntBound x = bound_of(a, ((const tir_Add *)e)->a);
      tir_ConstIntBound y = bound_of(a, ((const tir_Add *)e)->b);
      return intersect(all, make_bound(arith_sat_add(x.min, y.min), arith_sat_add(x.max, y.max)));
    }
    case TIR_Sub: {
      tir_ConstIntBound x = bound_of(a, ((const tir_Sub *)e)->a);
      tir_ConstIntBound y = bound_of(a, ((const tir_Sub *)e)->b);
      return intersect(all, make_bound(arith_sat_add(x.min, neg_sat(y.max)), arith_sat_add(x.max, neg_sat(y.min))));
    }
    case TIR_Mul: {
      tir_ConstIntBound x = bound_of(a, ((const tir_Mul *)e)->a);
      tir_ConstIntBound y = bound_of(a, ((const tir_Mul *)e)->b);
      return intersect(all, bound_mul(x, y));
    }
    case TIR_FloorDiv:
    case TIR_Div: {
      tir_ConstIntBound x = bound_of(a, ((const tir_Add *)e)->a);
      tir_ConstIntBound y = bound_of(a, ((const tir_Add *)e)->b);
      if (y.min > 0 && y.max != TIR_POS_INF) {
        /* positive divisor: extremes at the divisor's extremes */
        if (e->kind == TIR_Div && x.min < 0) return all;
        int64_t c[4];
        int64_t xs[2] = {x.min, x.max}, ys[2] = {y.min, y.max};
        for (int i = 0; i < 2; i++)
          for (int j = 0; j < 2; j++)
            c[i * 2 + j] = (xs[i] == TIR_NEG_INF || xs[i] == TIR_POS_INF) ? xs[i] : arith_floordiv(xs[i], ys[j]);
        tir_ConstIntBound r = {c[0], c[0]};
        for (int i = 1; i < 4; i++) {
          if (c[i] < r.min) r.min = c[i];
          if (c[i] > r.max) r.max = c[i];
        }
        return intersect(all, r);
      }
      return all;
    }
    case TIR_FloorMod: {
      tir_ConstIntBound x = bound_of(a, ((const tir_FloorMod *)e)->a);
      tir_ConstIntBound y = bound_of(a, ((const tir_FloorMod *)e)->b);
      if (y.min > 0 && y.max != TIR_POS_INF) {
        if (x.min >= 0 && x.max < y.min) return x;
        return make_bound(0, y.max - 1);
      }
      return all;
    }
    case TIR_Mod: {
      tir_ConstIntBound x = bound_of(a, ((const tir_Mod *)e)->a);
      tir_ConstIntBound y = bound_of(a, ((const tir_Mod *)e)->b);
      if (y.min > 0 && y.max != TIR_POS_INF) {
        if (x.min >= 0) return make_bound(0, x.max < y.max - 1 ? x.max : y.max - 1);
        return make_bound(-(y.max - 1), y.max - 1);
      }
      return all;
    }
    case TIR_Min:
    case TIR_Max: {
      tir_ConstIntBound x = bound_of(a, ((const tir_Min *)e)->a);
      tir_ConstIntBound y = bound_of(a, ((const tir_Min *)e)->b);
      if (e->kind == TIR_Min) return make_bound(x.min < y.min ? x.min : y.min, x.max < y.max ? x.max : y.max);
      return make_bound(x.min > y.min ? x.min : y.min, x.max > y.max ? x.max : y.max);
    }
    case TIR_Select: {
      tir_ConstIntBound x = bound_of(a, ((const tir_Select *)e)->true_value);
      tir_ConstIntBound y = bound_of(a, ((const tir_Select *)e)->false_value);
      return make_bound(x.min < y.min ? x.min : y.min, x.max > y.max ? x.max : y.max);
    }
    case TIR_Cast: {
      const tir_Node *v = ((const tir_Cast *)e)->value;
      if (tir_dtype_is_int(v->dtype) || tir_dtype_is_bool(v->dtype)) {
        tir_ConstIntBound x = bound_of(a, v);
        if (x.min >= all.min && x.max <= all.max) return x;
      }
      return all;
    }
    case TIR_Call: {
      /* bitwise ops on non-negative operands (XOR swizzles): bounded by the next power of two */
      const tir_Call *c = (const tir_Call *)e;
      if (c->args->size != 2) return all;
      int is_and = strcmp(c->op, "bitwise_and") == 0, is_or = strcmp(c->op, "bitwise_or") == 0;
      int is_xor = strcmp(c->op, "bitwise_xor") == 0, is_shr = strcmp(c->op, "shift_right") == 0;
      if (!(is_and || is_or || is_xor || is_shr)) return all;
      tir_ConstIntBound x = bound_of(a, c->args->items[0]);
      tir_ConstIntBound y = bound_of(a, c->args->items[1]);
      if (x.min < 0 || y.min < 0 || x.max == TIR_POS_INF || y.max == TIR_POS_INF) return all;
      if (is_shr) return y.max < 63 ? make_bound(x.min >> y.max, x.max >> y.min) : all;
      if (is_and) return make_bound(0, x.max < y.max ? x.max : y.max);
      int64_t m = x.max > y.max ? x.max : y.max, p = 1;
      while (p <= m && p < ((int64_t)1 << 62)) p <<= 1;
      return intersect(all, make_bound(0, p - 1));
    }
    case TIR_Let: {
      const tir_Let *l = (const tir_Let *)e;
      int mark = tir_analyzer_mark(a);
      tir_Analyzer *tmp = a ? NULL : tir_analyzer_new();
      tir_Analyzer *use = a ? a : tmp;
      tir_analyzer_bind_value(use, l->var, l->value);
      tir_ConstIntBound r = bound_of(use, l->body);
      if (tmp) tir_analyzer_free(tmp);
      else tir_analyzer_reset(a, mark);
      return r;
    }
    default: return all;
  }
}

tir_ConstIntBound tir_const_int_bound(tir_Analyzer *a, const tir_Node *e) {
  arith_work_enter();
  tir_ConstIntBound r = bound_of(a, e);
  arith_work_leave();
  return r;
}
