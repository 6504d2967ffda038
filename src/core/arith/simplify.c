/* simplify.c -- the canonical simplifier for integer index expressions.
 *
 * Signed integer sums are put in linear form  base + sum(coef_i * atom_i), where atoms are
 * simplified non-linear subexpressions (vars, floordiv/floormod, min/max, loads, ...) and
 * equal atoms are merged.  Division and modulo by positive constants use the rules listed
 * in arith.h together with the bounds of the analyzer.  Floating-point expressions are
 * only constant-folded (no reassociation: results must stay bit-exact).
 */
#include <stdlib.h>
#include <string.h>

#include "arith_internal.h"
#include "tir/error.h"

typedef struct {
  int64_t coef;
  tir_Node *atom; /* owned */
} Term;

typedef struct {
  int64_t base;
  Term *t;
  int n, cap;
  tir_DType dtype;
  int overflow;
} Lin;

static tir_Node *simp(tir_Analyzer *a, const tir_Node *e);

/* The work budget (arith_internal.h): units are simp and const_int_bound visits.  Index
 * expressions of real programs take a few thousand; the budget stops exponential blowups. */
#define ARITH_WORK_BUDGET (1 << 18)
static _Thread_local struct {
  int depth;
  int64_t left;
} work;

void arith_work_enter(void) {
  if (work.depth++ == 0) work.left = ARITH_WORK_BUDGET;
}
void arith_work_leave(void) { work.depth--; }
int arith_work_exhausted(void) {
  if (work.depth == 0) return 0; /* not inside a top-level call: unbounded (cannot happen) */
  if (work.left <= 0) return 1;
  work.left--;
  return 0;
}

/* tir_binary (folding, type matching) that cannot fail on already-typed operands; a
 * division by a constant zero produced by simplification is kept as a raw node. */
static tir_Node *bin(int kind, tir_Node *x, tir_Node *y) {
  tir_retain(x);
  tir_retain(y);
  tir_Node *r = tir_binary(kind, x, y);
  if (r) {
    tir_release(x);
    tir_release(y);
    return r;
  }
  tir_error_clear();
  return tir_binary_raw(kind, x, y);
}

static void lin_init(Lin *l, tir_DType t) {
  memset(l, 0, sizeof *l);
  l->dtype = t;
}

static void lin_free(Lin *l) {
  for (int i = 0; i < l->n; i++) tir_release(l->t[i].atom);
  free(l->t);
  l->t = NULL;
  l->n = l->cap = 0;
}

static void lin_add_const(Lin *l, int64_t v) {
  if (__builtin_add_overflow(l->base, v, &l->base)) l->overflow = 1;
}

/* Adds coef * atom (atom borrowed). */
static void lin_add_term(Lin *l, int64_t coef, const tir_Node *atom) {
  for (int i = 0; i < l->n; i++)
    if (tir_expr_deep_equal(l->t[i].atom, atom)) {
      if (__builtin_add_overflow(l->t[i].coef, coef, &l->t[i].coef)) l->overflow = 1;
      return;
    }
  if (l->n == l->cap) {
    l->cap = l->cap ? l->cap * 2 : 8;
    l->t = realloc(l->t, sizeof(Term) * (size_t)l->cap);
  }
  l->t[l->n].coef = coef;
  l->t[l->n].atom = tir_retain(atom);
  l->n++;
}

static int is_lin_int(tir_DType t) { return t.code == TIR_DT_INT && t.lanes == 1; }

/* Adds scale * e into l.  e is simplified along the way when `simplified` is 0. */
static void to_lin(tir_Analyzer *a, Lin *l, const tir_Node *e, int64_t scale, int simplified) {
  int64_t v, s;
  switch (e->kind) {
    case TIR_IntImm:
      if (__builtin_mul_overflow(((const tir_IntImm *)e)->value, scale, &v)) l->overflow = 1;
      lin_add_const(l, v);
      return;
    case TIR_Add:
      to_lin(a, l, ((const tir_Add *)e)->a, scale, simplified);
      to_lin(a, l, ((const tir_Add *)e)->b, scale, simplified);
      return;
    case TIR_Sub:
      to_lin(a, l, ((const tir_Sub *)e)->a, scale, simplified);
      to_lin(a, l, ((const tir_Sub *)e)->b, -scale, simplified);
      return;
    case TIR_Mul: {
      const tir_Mul *m = (const tir_Mul *)e;
      if (tir_is_const_int(m->b, &v) || tir_is_const_int(m->a, &v)) {
        const tir_Node *other = tir_is_const_int(m->b, NULL) ? m->a : m->b;
        if (__builtin_mul_overflow(scale, v, &s)) {
          l->overflow = 1;
          return;
        }
        to_lin(a, l, other, s, simplified);
        return;
      }
      break;
    }
    default: break;
  }
  if (simplified) {
    lin_add_term(l, scale, e);
    return;
  }
  tir_Node *se = simp(a, e);
  if (se->kind == TIR_Add || se->kind == TIR_Sub || se->kind == TIR_IntImm ||
      (se->kind == TIR_Mul && (tir_is_const_int(((tir_Mul *)se)->a, NULL) || tir_is_const_int(((tir_Mul *)se)->b, NULL))))
    to_lin(a, l, se, scale, 1);
  else
    lin_add_term(l, scale, se);
  tir_release(se);
}

static int64_t gcd64(int64_t x, int64_t y) {
  if (x < 0) x = -x;
  if (y < 0) y = -y;
  while (y) {
    int64_t t = x % y;
    x = y;
    y = t;
  }
  return x;
}

static tir_Node *div_mod_const(tir_Analyzer *a, const tir_Node *x, int64_t c, int is_mod);
static int make_lin_simplified(const tir_Node *e, Lin *l);
static tir_Node *simp_linear(tir_Analyzer *a, const tir_Node *e, int simplified);

/* A "split" of E: floormod(floordiv(E, lo), hi / lo), the digits of E between lo and hi
 * (hi = 0: unbounded, no floormod).  TVM's canonical simplifier (src/arith/canonical_simplify.cc,
 * SplitExprNode) keeps index terms in this form so that the digits of one index merge back:
 * floormod(floordiv(E, lo1), hi1/lo1) * (lo1/lo2) + floormod(floordiv(E, lo2), lo1/lo2)
 *   = floormod(floordiv(E, lo2), hi1/lo2)
 * which holds for every E under floor semantics.  E.g. x // 32 % 3 * 32 + x % 32 = x % 96 and
 * x // 32 * 32 + x % 32 = x. */
static int as_split(const tir_Node *atom, const tir_Node **E, int64_t *lo, int64_t *hi) {
  int64_t c, d;
  if (atom->kind == TIR_FloorMod && tir_is_const_int(((const tir_FloorMod *)atom)->b, &c) && c > 0) {
    const tir_Node *x = ((const tir_FloorMod *)atom)->a;
    if (x->kind == TIR_FloorDiv && tir_is_const_int(((const tir_FloorDiv *)x)->b, &d) && d > 0 && c <= INT64_MAX / d) {
      *E = ((const tir_FloorDiv *)x)->a, *lo = d, *hi = d * c;
      return 1;
    }
    *E = x, *lo = 1, *hi = c;
    return 1;
  }
  if (atom->kind == TIR_FloorDiv && tir_is_const_int(((const tir_FloorDiv *)atom)->b, &c) && c > 0) {
    const tir_Node *x = ((const tir_FloorDiv *)atom)->a;
    if (x->kind == TIR_FloorMod && tir_is_const_int(((const tir_FloorMod *)x)->b, &d) && d > 0 && d % c == 0) {
      *E = ((const tir_FloorMod *)x)->a, *lo = c, *hi = d;
      return 1;
    }
    *E = x, *lo = c, *hi = 0;
    return 1;
  }
  return 0;
}

/* Merges two splits of one expression whose digit ranges touch (see as_split) into one
 * term; the merged split is simplified with the analyzer's bounds (x % 96 with x < 96 is x).
 * Returns 1 if something merged. */
static int lin_recombine(tir_Analyzer *a, Lin *l) {
  for (int i = 0; i < l->n; i++) {
    const tir_Node *Ei;
    int64_t lo1, hi1, lo2, hi2, ci = l->t[i].coef;
    if (ci == 0 || !as_split(l->t[i].atom, &Ei, &lo1, &hi1) || lo1 == 1) continue;
    for (int j = 0; j < l->n; j++) {
      const tir_Node *Ej;
      int64_t cj = l->t[j].coef, p1, p2;
      if (j == i || cj == 0 || !as_split(l->t[j].atom, &Ej, &lo2, &hi2) || hi2 != lo1) continue;
      if (__builtin_mul_overflow(ci, lo2, &p1) || __builtin_mul_overflow(cj, lo1, &p2) || p1 != p2) continue;
      if (!tir_expr_deep_equal(Ei, Ej)) continue;
      tir_Node *E = tir_retain(Ei), *m;
      if (lo2 > 1) {
        m = div_mod_const(a, E, lo2, 0);
        if (!m) m = tir_binary_raw(TIR_FloorDiv, R(E), tir_int_imm(E->dtype, lo2));
      } else {
        m = tir_retain(E);
      }
      if (hi1) {
        tir_Node *q = div_mod_const(a, m, hi1 / lo2, 1);
        if (!q) q = tir_binary_raw(TIR_FloorMod, R(m), tir_int_imm(E->dtype, hi1 / lo2));
        tir_release(m);
        m = q;
      }
      tir_release(E);
      l->t[i].coef = 0;
      l->t[j].coef = 0;
      to_lin(a, l, m, cj, 1);
      tir_release(m);
      return 1;
    }
  }
  return 0;
}

/* k * floordiv(A + c, d) - k * floordiv(A, d) = k * floordiv(floormod(A, d) + c, d) (A = q d + r:
 * (q d + r + c) // d - q), TVM rewrite_simplify's floordiv(x + c1, c2) - floordiv(x + c3, c2)
 * rule; divisors d1 | d2 compare after scaling (floordiv(5x, 4) = floordiv(20x, 16)).  The
 * bounds then often fold it: (20c + 19) // 16 - (20c) // 16 with c in [0, 1] is 1.  Returns
 * 1 if something merged. */
static int lin_div_difference(tir_Analyzer *a, Lin *l) {
  for (int i = 0; i < l->n; i++) {
    const tir_Node *fi = l->t[i].atom;
    int64_t di, dj, k = l->t[i].coef;
    if (fi->kind != TIR_FloorDiv || k == 0 || !tir_is_const_int(((const tir_FloorDiv *)fi)->b, &di) || di <= 0) continue;
    for (int j = 0; j < l->n; j++) {
      const tir_Node *fj = l->t[j].atom;
      if (j == i || fj->kind != TIR_FloorDiv || l->t[j].coef != -k || !tir_is_const_int(((const tir_FloorDiv *)fj)->b, &dj) ||
          dj <= 0)
        continue;
      int64_t d = di > dj ? di : dj, si, sj;
      if (d % di || d % dj) continue;
      si = d / di, sj = d / dj;
      tir_Node *Ai = si == 1 ? R(((const tir_FloorDiv *)fi)->a) : tir_binary_raw(TIR_Mul, R(((const tir_FloorDiv *)fi)->a), tir_int_imm(fi->dtype, si));
      tir_Node *Aj = sj == 1 ? R(((const tir_FloorDiv *)fj)->a) : tir_binary_raw(TIR_Mul, R(((const tir_FloorDiv *)fj)->a), tir_int_imm(fj->dtype, sj));
      tir_Node *diff = tir_binary_raw(TIR_Sub, R(Ai), R(Aj));
      Lin dl;
      int ok = make_lin_simplified(diff, &dl) && dl.n == 0;
      int64_t c = dl.base;
      lin_free(&dl);
      tir_release(diff);
      if (!ok) {
        tir_release(Ai);
        tir_release(Aj);
        continue;
      }
      /* floordiv(floormod(Aj, d) + c, d), simplified with the bounds */
      tir_Node *sAj = simp_linear(a, Aj, 1);
      tir_release(Aj);
      tir_release(Ai);
      if (!sAj) continue;
      tir_Node *m = div_mod_const(a, sAj, d, 1);
      tir_release(sAj);
      if (!m) continue;
      tir_Node *sum = tir_binary_raw(TIR_Add, m, tir_int_imm(m->dtype, c));
      tir_Node *ssum = simp_linear(a, sum, 1);
      tir_release(sum);
      if (!ssum) continue;
      tir_Node *q = div_mod_const(a, ssum, d, 0);
      tir_release(ssum);
      if (!q) continue;
      l->t[i].coef = 0;
      l->t[j].coef = 0;
      to_lin(a, l, q, k, 1);
      tir_release(q);
      return 1;
    }
  }
  return 0;
}

static tir_Node *term_expr(const Term *t, int64_t absval) {
  tir_Node *x = tir_retain(t->atom);
  if (absval == 1) return x;
  return tir_binary_raw(TIR_Mul, x, tir_int_imm(t->atom->dtype, absval));
}

static tir_Node *lin_build(const Lin *l) {
  tir_Node *r = NULL;
  for (int i = 0; i < l->n; i++) {
    if (l->t[i].coef <= 0) continue;
    tir_Node *x = term_expr(&l->t[i], l->t[i].coef);
    r = r ? tir_binary_raw(TIR_Add, r, x) : x;
  }
  int base_used = 0;
  if (!r && l->base != 0) {
    r = tir_int_imm(l->dtype, l->base);
    base_used = 1;
  }
  for (int i = 0; i < l->n; i++) {
    if (l->t[i].coef >= 0) continue;
    if (l->t[i].coef == INT64_MIN) { /* cannot negate: keep as + coef*atom */
      tir_Node *x = tir_binary_raw(TIR_Mul, tir_retain(l->t[i].atom), tir_int_imm(l->dtype, l->t[i].coef));
      r = r ? tir_binary_raw(TIR_Add, r, x) : x;
      continue;
    }
    tir_Node *x = term_expr(&l->t[i], -l->t[i].coef);
    r = r ? tir_binary_raw(TIR_Sub, r, x) : tir_binary_raw(TIR_Sub, tir_int_imm(l->dtype, 0), x);
  }
  if (!base_used && l->base != 0) {
    if (!r) r = tir_int_imm(l->dtype, l->base);
    else if (l->base > 0 || l->base == INT64_MIN) r = tir_binary_raw(TIR_Add, r, tir_int_imm(l->dtype, l->base));
    else r = tir_binary_raw(TIR_Sub, r, tir_int_imm(l->dtype, -l->base));
  }
  if (!r) r = tir_int_imm(l->dtype, 0);
  return r;
}

static void lin_compact(Lin *l) {
  int k = 0;
  for (int i = 0; i < l->n; i++) {
    if (l->t[i].coef == 0) {
      tir_release(l->t[i].atom);
      continue;
    }
    l->t[k++] = l->t[i];
  }
  l->n = k;
}

static tir_ConstIntBound lin_bound(tir_Analyzer *a, const Lin *l) {
  tir_ConstIntBound r = {l->base, l->base};
  for (int i = 0; i < l->n; i++) {
    tir_ConstIntBound b = tir_const_int_bound(a, l->t[i].atom);
    int64_t c = l->t[i].coef;
    int64_t lo = arith_sat_mul(c > 0 ? b.min : b.max, c), hi = arith_sat_mul(c > 0 ? b.max : b.min, c);
    r.min = arith_sat_add(r.min, lo);
    r.max = arith_sat_add(r.max, hi);
  }
  return r;
}

/* Simplified linear form of e (e borrowed).  Caller frees. */
static int make_lin(tir_Analyzer *a, const tir_Node *e, Lin *l) {
  lin_init(l, e->dtype);
  to_lin(a, l, e, 1, 0);
  /* each merge removes two terms; the guard bounds merges that add terms back */
  for (int guard = 64; !l->overflow && guard > 0 && (lin_recombine(a, l) || lin_div_difference(a, l)); guard--) lin_compact(l);
  lin_compact(l);
  return !l->overflow;
}

/* Linear form of e whose atoms are already simplified (e is a result of simp): the atoms
 * are not simplified again.  Re-simplifying them made nested min/max exponential: each
 * level's comparison re-simplified both operands, which compare their own operands, ... */
static int make_lin_simplified(const tir_Node *e, Lin *l) {
  lin_init(l, e->dtype);
  to_lin(NULL, l, e, 1, 1);
  while (!l->overflow && lin_recombine(NULL, l)) lin_compact(l);
  lin_compact(l);
  return !l->overflow;
}

/* R = coarse + fine where every coarse coefficient is a multiple of d (a divisor of c, d >
 * 1) and 0 <= fine < d: then floordiv(R, c) = floordiv(coarse, c) and floormod(R, c) =
 * floormod(coarse, c) + fine, since adding fine never crosses a multiple of c.  E.g.
 * floordiv(tx * 4 + v, 8) = tx // 2 for 0 <= v < 4.  Builds q + floordiv(coarse, c) (or g *
 * (floormod(coarse, c) + fine)) into *res; 1 when it applied. */
static int split_fine(tir_Analyzer *a, const Lin *q, const Lin *r, int64_t c, int64_t g, int is_mod, tir_Node **res) {
  for (int64_t d = c / 2; d >= 2; d--) {
    if (c % d) continue;
    Lin coarse, fine;
    lin_init(&coarse, r->dtype);
    lin_init(&fine, r->dtype);
    for (int i = 0; i < r->n; i++) lin_add_term(r->t[i].coef % d == 0 ? &coarse : &fine, r->t[i].coef, r->t[i].atom);
    coarse.base = r->base - arith_floormod(r->base, d);
    fine.base = arith_floormod(r->base, d);
    tir_ConstIntBound fb = lin_bound(a, &fine);
    int ok = coarse.n > 0 && fine.n > 0 && fb.min >= 0 && fb.max < d;
    if (ok) {
      tir_Node *cx = lin_build(&coarse);
      tir_Node *part = div_mod_const(a, cx, c, is_mod);
      tir_release(cx);
      if (!part) ok = 0;
      else {
        Lin outl;
        lin_init(&outl, r->dtype);
        if (is_mod) {
          /* g * (floormod(coarse, c) + fine) */
          to_lin(a, &outl, part, g, 1);
          for (int i = 0; i < fine.n; i++) lin_add_term(&outl, fine.t[i].coef * g, fine.t[i].atom);
          outl.base += fine.base * g;
        } else {
          for (int i = 0; i < q->n; i++) lin_add_term(&outl, q->t[i].coef, q->t[i].atom);
          outl.base = q->base;
          to_lin(a, &outl, part, 1, 1);
        }
        tir_release(part);
        lin_compact(&outl);
        *res = lin_build(&outl);
        lin_free(&outl);
      }
    }
    lin_free(&coarse);
    lin_free(&fine);
    if (ok) return 1;
  }
  return 0;
}

/* floordiv / floormod of a simplified expression by a positive constant c. */
static tir_Node *div_mod_const(tir_Analyzer *a, const tir_Node *x, int64_t c, int is_mod) {
  tir_DType t = x->dtype;
  Lin l;
  if (!make_lin_simplified(x, &l)) {
    lin_free(&l);
    return NULL;
  }
  /* split off the multiples of c */
  Lin q, r;
  lin_init(&q, t);
  lin_init(&r, t);
  for (int i = 0; i < l.n; i++) {
    if (l.t[i].coef % c == 0) lin_add_term(&q, l.t[i].coef / c, l.t[i].atom);
    else lin_add_term(&r, l.t[i].coef, l.t[i].atom);
  }
  q.base = arith_floordiv(l.base, c);
  r.base = arith_floormod(l.base, c);
  lin_free(&l);
  /* common factor of the remainder and c */
  int64_t g = c;
  for (int i = 0; i < r.n; i++) g = gcd64(g, r.t[i].coef);
  g = gcd64(g, r.base);
  if (g > 1) {
    for (int i = 0; i < r.n; i++) r.t[i].coef /= g;
    r.base /= g;
  }
  int64_t cc = c / g;
  tir_ConstIntBound rb = lin_bound(a, &r);
  tir_Node *res;
  if (rb.min != TIR_NEG_INF && rb.max != TIR_POS_INF && arith_floordiv(rb.min, cc) == arith_floordiv(rb.max, cc)) {
    int64_t k = arith_floordiv(rb.min, cc);
    if (is_mod) {
      /* g * (R - k*cc) */
      r.base -= k * cc;
      Lin s;
      lin_init(&s, t);
      for (int i = 0; i < r.n; i++) lin_add_term(&s, r.t[i].coef * g, r.t[i].atom);
      s.base = r.base * g;
      res = lin_build(&s);
      lin_free(&s);
    } else {
      q.base += k;
      res = lin_build(&q);
    }
  } else if (split_fine(a, &q, &r, cc, g, is_mod, &res)) {
    /* done: R = coarse + fine with fine in [0, gcd(coarse, c)) */
  } else {
    tir_Node *rem = lin_build(&r);
    tir_Node *inner;
    int64_t d;
    if (rem->kind == TIR_FloorDiv && !is_mod && tir_is_const_int(((tir_FloorDiv *)rem)->b, &d) && d > 0 &&
        d <= INT64_MAX / cc) {
      inner = tir_binary_raw(TIR_FloorDiv, R(((tir_FloorDiv *)rem)->a), tir_int_imm(t, d * cc));
    } else if (rem->kind == TIR_FloorMod && !is_mod && tir_is_const_int(((tir_FloorMod *)rem)->b, &d) && d > 0 &&
               d % cc == 0 && d > cc) {
      /* floordiv(floormod(E, d), cc) = floormod(floordiv(E, cc), d / cc) for cc | d: the
       * split form of as_split (TVM's canonical simplifier normalizes the same way) */
      tir_Node *q = div_mod_const(a, ((tir_FloorMod *)rem)->a, cc, 0);
      if (!q) q = tir_binary_raw(TIR_FloorDiv, R(((tir_FloorMod *)rem)->a), tir_int_imm(t, cc));
      inner = div_mod_const(a, q, d / cc, 1);
      if (!inner) inner = tir_binary_raw(TIR_FloorMod, R(q), tir_int_imm(t, d / cc));
      tir_release(q);
    } else if (rem->kind == TIR_FloorMod && is_mod && tir_is_const_int(((tir_FloorMod *)rem)->b, &d) && d > 0 &&
               d % cc == 0) {
      inner = tir_binary_raw(TIR_FloorMod, R(((tir_FloorMod *)rem)->a), tir_int_imm(t, cc));
    } else {
      inner = tir_binary_raw(is_mod ? TIR_FloorMod : TIR_FloorDiv, R(rem), tir_int_imm(t, cc));
    }
    tir_release(rem);
    if (is_mod) {
      Lin s;
      lin_init(&s, t);
      lin_add_term(&s, g, inner);
      res = lin_build(&s);
      lin_free(&s);
    } else {
      lin_add_term(&q, 1, inner);
      res = lin_build(&q);
    }
    tir_release(inner);
  }
  lin_free(&q);
  lin_free(&r);
  return res;
}

/* e in simplest linear form; `simplified`: e's operands are results of simp already. */
static tir_Node *simp_linear(tir_Analyzer *a, const tir_Node *e, int simplified) {
  Lin l;
  if (!(simplified ? make_lin_simplified(e, &l) : make_lin(a, e, &l))) {
    lin_free(&l);
    return NULL;
  }
  tir_Node *r = lin_build(&l);
  lin_free(&l);
  return r;
}

/* Difference x - y of two simplified expressions as a linear form's bound. */
static tir_ConstIntBound diff_bound(tir_Analyzer *a, const tir_Node *x, const tir_Node *y, int *ok) {
  tir_Node *d = tir_binary_raw(TIR_Sub, R((tir_Node *)x), R((tir_Node *)y));
  Lin l;
  tir_ConstIntBound b = {TIR_NEG_INF, TIR_POS_INF};
  *ok = 0;
  if (make_lin_simplified(d, &l)) {
    b = lin_bound(a, &l);
    *ok = 1;
  }
  lin_free(&l);
  tir_release(d);
  return b;
}

/* x == y (or !=) with x - y = g * (...) + c: false when g does not divide c, else divided by g. */
static tir_Node *simp_eq_gcd(tir_Analyzer *a, int kind, tir_Node *x, tir_Node *y) {
  tir_Node *d = tir_binary_raw(TIR_Sub, R(x), R(y));
  Lin l;
  tir_Node *r = NULL;
  (void)a;
  if (make_lin_simplified(d, &l) && l.n > 0) {
    int64_t g = 0;
    for (int i = 0; i < l.n; i++) g = gcd64(g, l.t[i].coef);
    if (g > 1) {
      if (l.base % g != 0) {
        r = tir_bool_imm(kind == TIR_NE);
      } else {
        for (int i = 0; i < l.n; i++) l.t[i].coef /= g;
        int64_t c = -l.base / g;
        l.base = 0;
        tir_Node *lhs = lin_build(&l);
        r = tir_binary_raw(kind, lhs, tir_int_imm(x->dtype, c));
      }
    }
  }
  lin_free(&l);
  tir_release(d);
  if (r) {
    tir_release(x);
    tir_release(y);
  }
  return r;
}

static tir_Node *simp_compare(tir_Analyzer *a, int kind, tir_Node *x, tir_Node *y) {
  if (is_lin_int(x->dtype) && is_lin_int(y->dtype) && tir_dtype_eq(x->dtype, y->dtype)) {
    int ok;
    tir_ConstIntBound d = diff_bound(a, x, y, &ok);
    if (ok) {
      int res = -1;
      switch (kind) {
        case TIR_LT: res = d.max < 0 ? 1 : d.min >= 0 ? 0 : -1; break;
        case TIR_LE: res = d.max <= 0 ? 1 : d.min > 0 ? 0 : -1; break;
        case TIR_GT: res = d.min > 0 ? 1 : d.max <= 0 ? 0 : -1; break;
        case TIR_GE: res = d.min >= 0 ? 1 : d.max < 0 ? 0 : -1; break;
        case TIR_EQ: res = (d.min == 0 && d.max == 0) ? 1 : (d.min > 0 || d.max < 0) ? 0 : -1; break;
        case TIR_NE: res = (d.min == 0 && d.max == 0) ? 0 : (d.min > 0 || d.max < 0) ? 1 : -1; break;
      }
      if (res >= 0) {
        tir_release(x);
        tir_release(y);
        return tir_bool_imm(res);
      }
    }
    if (kind == TIR_EQ || kind == TIR_NE) {
      tir_Node *r = simp_eq_gcd(a, kind, x, y);
      if (r) return r;
    }
  }
  return bin(kind, x, y);
}

/* lhs < c1 && lhs < c2 (same lhs, constant bounds): the tighter one */
static tir_Node *simp_and_bounds(tir_Node *x, tir_Node *y) {
  int64_t c1, c2;
  if ((x->kind == TIR_LT || x->kind == TIR_LE) && x->kind == y->kind && tir_expr_deep_equal(((tir_LT *)x)->a, ((tir_LT *)y)->a) &&
      tir_is_const_int(((tir_LT *)x)->b, &c1) && tir_is_const_int(((tir_LT *)y)->b, &c2)) {
    tir_Node *keep = c1 <= c2 ? x : y;
    tir_release(keep == x ? y : x);
    return keep;
  }
  return NULL;
}

static tir_Node *simp_minmax(tir_Analyzer *a, int kind, tir_Node *x, tir_Node *y) {
  if (is_lin_int(x->dtype) && tir_dtype_eq(x->dtype, y->dtype)) {
    int ok;
    tir_ConstIntBound d = diff_bound(a, x, y, &ok);
    if (ok && (d.max <= 0 || d.min >= 0)) {
      int x_smaller = d.max <= 0;
      tir_Node *keep = (kind == TIR_Min) == x_smaller ? x : y;
      tir_release(keep == x ? y : x);
      return keep;
    }
  }
  return bin(kind, x, y);
}

static tir_Node *negate_compare(const tir_Node *c) {
  int k;
  switch (c->kind) {
    case TIR_LT: k = TIR_GE; break;
    case TIR_LE: k = TIR_GT; break;
    case TIR_GT: k = TIR_LE; break;
    case TIR_GE: k = TIR_LT; break;
    case TIR_EQ: k = TIR_NE; break;
    case TIR_NE: k = TIR_EQ; break;
    default: return NULL;
  }
  return tir_binary_raw(k, R(((const tir_LT *)c)->a), R(((const tir_LT *)c)->b));
}

static tir_Node *simp(tir_Analyzer *a, const tir_Node *e) {
  if (arith_work_exhausted()) return tir_retain(e); /* unchanged is always correct */
  switch (e->kind) {
    case TIR_IntImm:
    case TIR_FloatImm:
    case TIR_StringImm: return tir_retain(e);
    case TIR_Var: {
      const Binding *b = arith_lookup(a, e);
      if (b && b->value) return tir_retain(b->value);
      if (b && b->lo == b->hi && b->lo != TIR_NEG_INF && tir_dtype_is_int(e->dtype)) return tir_int_imm(e->dtype, b->lo);
      return tir_retain(e);
    }
    case TIR_Mul:
      if (is_lin_int(e->dtype)) {
        /* a product of two non-constants is an atom of the linear form */
        tir_Node *x = simp(a, ((const tir_Mul *)e)->a), *y = simp(a, ((const tir_Mul *)e)->b);
        if (x->kind != TIR_IntImm && y->kind != TIR_IntImm) return bin(TIR_Mul, x, y);
        tir_Node *m = tir_binary_raw(TIR_Mul, x, y);
        tir_Node *r = simp_linear(a, m, 1);
        if (r) {
          tir_release(m);
          return r;
        }
        return m;
      }
      break;
    case TIR_Add:
    case TIR_Sub:
      if (is_lin_int(e->dtype)) {
        tir_Node *r = simp_linear(a, e, 0);
        if (r) return r;
      }
      break;
    case TIR_FloorDiv:
    case TIR_FloorMod:
    case TIR_Div:
    case TIR_Mod: {
      if (!is_lin_int(e->dtype)) break;
      const tir_FloorDiv *d = (const tir_FloorDiv *)e;
      tir_Node *x = simp(a, d->a), *y = simp(a, d->b);
      int64_t c;
      if (tir_is_const_int(y, &c) && c > 0) {
        int floor_ok = e->kind == TIR_FloorDiv || e->kind == TIR_FloorMod || tir_const_int_bound(a, x).min >= 0;
        if (floor_ok) {
          tir_Node *r = div_mod_const(a, x, c, e->kind == TIR_FloorMod || e->kind == TIR_Mod);
          if (r) {
            tir_release(x);
            tir_release(y);
            return r;
          }
        }
      }
      return bin(e->kind, x, y);
    }
    case TIR_Min:
    case TIR_Max: {
      const tir_Min *m = (const tir_Min *)e;
      return simp_minmax(a, e->kind, simp(a, m->a), simp(a, m->b));
    }
    case TIR_EQ: case TIR_NE: case TIR_LT: case TIR_LE: case TIR_GT: case TIR_GE: {
      const tir_LT *c = (const tir_LT *)e;
      return simp_compare(a, e->kind, simp(a, c->a), simp(a, c->b));
    }
    case TIR_And:
    case TIR_Or: {
      const tir_And *c = (const tir_And *)e;
      tir_Node *x = simp(a, c->a);
      if (e->kind == TIR_And && x->kind == TIR_IntImm && !((tir_IntImm *)x)->value) return x;
      if (e->kind == TIR_Or && x->kind == TIR_IntImm && ((tir_IntImm *)x)->value) return x;
      tir_Node *y = simp(a, c->b);
      if (e->kind == TIR_And) {
        tir_Node *t = simp_and_bounds(x, y);
        if (t) return t;
      }
      return bin(e->kind, x, y);
    }
    case TIR_Not: {
      tir_Node *x = simp(a, ((const tir_Not *)e)->a);
      tir_Node *n = negate_compare(x);
      if (n) {
        tir_release(x);
        return n;
      }
      return tir_not(x);
    }
    case TIR_Select: {
      const tir_Select *s = (const tir_Select *)e;
      tir_Node *c = simp(a, s->cond);
      int64_t v;
      if (tir_is_const_int(c, &v)) {
        tir_release(c);
        return simp(a, v ? s->true_value : s->false_value);
      }
      tir_Node *t = simp(a, s->true_value), *f = simp(a, s->false_value);
      if (tir_expr_deep_equal(t, f)) {
        tir_release(c);
        tir_release(f);
        return t;
      }
      return tir_select(c, t, f);
    }
    case TIR_Cast: {
      tir_Node *v = simp(a, ((const tir_Cast *)e)->value);
      return tir_cast(e->dtype, v);
    }
    case TIR_Call: {
      /* if_then_else(c1, if_then_else(c2, x, z), z) -> if_then_else(c1 && c2, x, z) for a
       * constant z: the same value, x evaluated under the same condition (a padding stage
       * inlined into another one; the cp.async lowering takes one zero-fill predicate) */
      const tir_Call *cl = (const tir_Call *)e;
      if (strcmp(cl->op, "if_then_else") != 0 || cl->args->size != 3) break;
      const tir_Node *t = cl->args->items[1], *z = cl->args->items[2];
      if (!(z->kind == TIR_IntImm || z->kind == TIR_FloatImm) || t->kind != TIR_Call) break;
      const tir_Call *ti = (const tir_Call *)t;
      if (strcmp(ti->op, "if_then_else") != 0 || ti->args->size != 3 || !tir_expr_deep_equal(ti->args->items[2], z)) break;
      tir_Node *c = tir_and(R(cl->args->items[0]), R(ti->args->items[0]));
      tir_Node *m = c ? tir_if_then_else(c, R(ti->args->items[1]), R((tir_Node *)z)) : NULL;
      if (!m) break;
      tir_Node *r = simp(a, m);
      tir_release(m);
      return r;
    }
    case TIR_Let: {
      const tir_Let *l = (const tir_Let *)e;
      tir_Node *v = simp(a, l->value);
      int mark = tir_analyzer_mark(a);
      tir_Node *body;
      if (a) {
        tir_analyzer_bind_bound(a, l->var, tir_const_int_bound(a, v).min, tir_const_int_bound(a, v).max);
        body = simp(a, l->body);
        tir_analyzer_reset(a, mark);
      } else {
        body = simp(a, l->body);
      }
      if (!tir_uses_var(body, l->var)) {
        tir_release(v);
        return body;
      }
      return tir_let((tir_Var *)R(l->var), v, body);
    }
    default: break;
  }
  /* generic: simplify the children, then fold the node through the op layer */
  if (e->kind >= TIR_Add && e->kind <= TIR_Or) {
    const tir_Add *b = (const tir_Add *)e;
    return bin(e->kind, simp(a, b->a), simp(a, b->b));
  }
  /* children of other expressions (loads, calls, ramps, broadcasts) */
  tir_Node *copy = NULL;
  const tir_KindInfo *ki = tir_kind_info(e->kind);
  for (int i = 0; i < ki->n_fields; i++) {
    if (ki->fields[i].type != TIR_FT_NODE) continue;
    tir_Node *c = *(tir_Node **)((char *)e + ki->fields[i].offset);
    if (!c) continue;
    tir_Node *m;
    if (c->kind == TIR_Array) {
      tir_Array *arr = (tir_Array *)c, *out = NULL;
      for (int j = 0; j < arr->size; j++) {
        tir_Node *it = arr->items[j];
        tir_Node *mi = it && tir_is_expr(it) ? simp(a, it) : tir_retain(it);
        if (mi != it && !out) {
          out = tir_array_new(arr->size);
          for (int k = 0; k < j; k++) out->items[k] = tir_retain(arr->items[k]);
        }
        if (out) out->items[j] = mi;
        else tir_release(mi);
      }
      m = out ? &out->hdr : tir_retain(c);
    } else if (tir_is_expr(c)) {
      m = simp(a, c);
    } else {
      m = tir_retain(c);
    }
    if (m == c) {
      tir_release(m);
      continue;
    }
    if (!copy) copy = tir_node_copy(e);
    tir_Node **slot = (tir_Node **)((char *)copy + ki->fields[i].offset);
    tir_release(*slot);
    *slot = m;
  }
  return copy ? copy : tir_retain(e);
}

tir_Node *tir_simplify(tir_Analyzer *a, const tir_Node *e) {
  if (!e) return NULL;
  arith_work_enter();
  tir_Node *r = simp(a, e);
  arith_work_leave();
  return r;
}

int tir_can_prove(tir_Analyzer *a, const tir_Node *cond) {
  tir_Node *s = tir_simplify(a, cond);
  int64_t v;
  int r = tir_is_const_int(s, &v) && v;
  tir_release(s);
  return r;
}

int tir_can_prove_equal(tir_Analyzer *a, const tir_Node *x, const tir_Node *y) {
  if (tir_expr_deep_equal(x, y)) return 1;
  if (!tir_dtype_eq(x->dtype, y->dtype)) return 0;
  tir_Node *d = tir_binary_raw(TIR_Sub, R((tir_Node *)x), R((tir_Node *)y));
  tir_Node *s = tir_simplify(a, d);
  tir_release(d);
  int r = tir_is_zero(s);
  tir_release(s);
  return r;
}

int tir_as_const_int(tir_Analyzer *a, const tir_Node *e, int64_t *out) {
  tir_Node *s = tir_simplify(a, e);
  int r = tir_is_const_int(s, out);
  tir_release(s);
  return r;
}

/* Upper bound of v implied by one conjunct "lhs < rhs" / "lhs <= rhs" (or the mirrored
 * forms): with lin = lhs - rhs <= c, a term coef*v (coef > 0) gives
 * v <= floor((c - min(rest)) / coef), min(rest) from the analyzer's bounds. */
static int bound_from_conjunct(tir_Analyzer *a, const tir_Node *cond, const tir_Var *v, int64_t *out) {
  int kind = cond->kind;
  const tir_Node *x, *y;
  if (kind == TIR_LT || kind == TIR_LE) x = ((const tir_LT *)cond)->a, y = ((const tir_LT *)cond)->b;
  else if (kind == TIR_GT || kind == TIR_GE) x = ((const tir_LT *)cond)->b, y = ((const tir_LT *)cond)->a;
  else return 0;
  if (!is_lin_int(x->dtype) || !tir_dtype_eq(x->dtype, y->dtype)) return 0;
  tir_Node *d = tir_binary_raw(TIR_Sub, R((tir_Node *)x), R((tir_Node *)y));
  Lin l;
  int ok = make_lin(a, d, &l);
  tir_release(d);
  int found = 0;
  if (ok) {
    /* lin <= -1 (strict) or <= 0 */
    int64_t c = (kind == TIR_LT || kind == TIR_GT) ? -1 : 0;
    c -= l.base;
    l.base = 0;
    for (int i = 0; i < l.n && !found; i++) {
      if (l.t[i].atom != &v->hdr || l.t[i].coef <= 0) continue;
      int64_t coef = l.t[i].coef;
      l.t[i].coef = 0; /* the rest */
      tir_ConstIntBound rest = lin_bound(a, &l);
      l.t[i].coef = coef;
      if (rest.min == TIR_NEG_INF) break;
      int64_t num;
      if (__builtin_sub_overflow(c, rest.min, &num)) break;
      *out = arith_floordiv(num, coef);
      found = 1;
    }
  }
  lin_free(&l);
  return found;
}

int tir_bound_from_predicate(tir_Analyzer *a, const tir_Node *pred, const tir_Var *v, int64_t *max_out) {
  if (!pred) return 0;
  if (pred->kind == TIR_And) {
    int64_t x, y;
    int fx = tir_bound_from_predicate(a, ((const tir_And *)pred)->a, v, &x);
    int fy = tir_bound_from_predicate(a, ((const tir_And *)pred)->b, v, &y);
    if (fx && fy) *max_out = x < y ? x : y;
    else if (fx) *max_out = x;
    else if (fy) *max_out = y;
    return fx || fy;
  }
  return bound_from_conjunct(a, pred, v, max_out);
}

tir_Node *tir_simplify_take(tir_Analyzer *a, tir_Node *e) {
  tir_Node *s = tir_simplify(a, e);
  tir_release(e);
  return s;
}
