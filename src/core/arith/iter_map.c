/* iter_map.c -- affine iteration maps: detection and subspace division.
 *
 * Facts from TVM src/arith/iter_affine_map.cc (DetectIterMap, SubspaceDivide), written
 * anew for constant extents.  A binding is rewritten to a sum of splits
 *   split(M, lower, extent, scale) = floormod(floordiv(M, lower), extent) * scale
 * of "marks" M: an input loop variable (minus its minimum) over [0, extent), or a fused
 * sum of splits over [0, extent).  Sums of several splits are fused into a new mark when
 * their scales chain (each scale is the product of the extents below it); a predicate
 * such as  i0 * 16 + i1 < 50  shrinks the extent of the mark of that sum.  Finally every
 * mark must be covered by its splits without overlap: all of it (bijective) or a
 * divisor-aligned part (surjective).
 *
 * Deliberate limits (conservative: a map is rejected, never mis-detected):
 *  - extents, scales, split factors are constants; an offset that is not a constant
 *    may only appear added to a whole binding, never inside a floordiv/floormod;
 *  - floordiv/floormod of a sum whose offset is not a multiple of the divisor is rejected
 *    (TVM pads such iterators; that is only needed for layout rewrites);
 *  - scales must be positive (a reversed loop is not an affine binding, as in TVM);
 *  - overlapping windows (conv-like i * 2 + r with r in [0, 3)) are rejected.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arith_internal.h"
#include "tir/error.h"
#include "tir/strbuf.h"

typedef struct Mark Mark;

typedef struct {
  Mark *src;
  int64_t lower, extent, scale;
} Split;

typedef struct {
  Split **a; /* arena array; treated as immutable once built */
  int n;
  int64_t base;
  tir_Node *sym; /* symbolic part of the offset (tracked), or NULL */
} Sum;

struct Mark {
  int id;
  const tir_Var *var; /* input iterator: the mark's value is var - var_min */
  int64_t var_min;
  Sum sum;    /* otherwise: the structured form (base constant) */
  Sum flat;   /* its flattened form (the key in the fuse map) */
  int64_t extent;
};

typedef struct {
  Sum flat;
  Mark *mark;
  int64_t offset;
} FuseEntry;

typedef struct {
  const tir_Var *var;
  int64_t lo, hi;           /* [lo, hi) after predicate tightening */
  int64_t loop_lo, loop_hi; /* the loop's own range */
  Mark *mark;               /* NULL when simplified away (extent 1) */
} InputIter;

typedef struct {
  Split **s;
  int n, cap;
} SplitList;

typedef struct {
  int *visited;     /* by mark id */
  SplitList *lists; /* by mark id */
  Mark **order;     /* visited marks in visiting order */
  int n_order;
  int n_ids; /* marks created later have ids >= n_ids and no entry */
} Collector;

typedef struct {
  int level; /* TIR_ITER_MAP_BIJECTIVE / SURJECTIVE */
  int simplify_trivial;
  int pred_mode; /* constraint normal form tried: 0 as given, 1 reduced, 2 expanded */
  tir_DType dt;
  InputIter *in;
  int n_in;
  tir_Var **in_vars;
  Mark **marks;
  int n_marks, cap_marks;
  FuseEntry *fuse;
  int n_fuse, cap_fuse;
  Sum *constrained; /* flattened forms of constrained sums */
  Mark **constrained_marks;
  int n_constrained, cap_constrained;
  void **allocs;
  int n_allocs, cap_allocs;
  tir_Node **nodes;
  int n_nodes, cap_nodes;
  int failed;
  char err[320];
} Ctx;

/* ---- memory: everything lives until the context is freed ---- */
static void *arena(Ctx *c, size_t sz) {
  void *p = calloc(1, sz ? sz : 1);
  if (c->n_allocs == c->cap_allocs) {
    c->cap_allocs = c->cap_allocs ? c->cap_allocs * 2 : 64;
    c->allocs = realloc(c->allocs, sizeof(void *) * (size_t)c->cap_allocs);
  }
  c->allocs[c->n_allocs++] = p;
  return p;
}

static tir_Node *track(Ctx *c, tir_Node *n) {
  if (!n) return NULL;
  if (c->n_nodes == c->cap_nodes) {
    c->cap_nodes = c->cap_nodes ? c->cap_nodes * 2 : 32;
    c->nodes = realloc(c->nodes, sizeof(tir_Node *) * (size_t)c->cap_nodes);
  }
  c->nodes[c->n_nodes++] = n;
  return n;
}

static void ctx_free(Ctx *c) {
  for (int i = 0; i < c->n_allocs; i++) free(c->allocs[i]);
  for (int i = 0; i < c->n_nodes; i++) tir_release(c->nodes[i]);
  free(c->allocs);
  free(c->nodes);
  free(c->marks);
  free(c->fuse);
  free(c->constrained);
  free(c->constrained_marks);
  free(c->in);
  free(c->in_vars);
}

static void fail(Ctx *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void fail(Ctx *c, const char *fmt, ...) {
  if (c->failed) return;
  c->failed = 1;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(c->err, sizeof c->err, fmt, ap);
  va_end(ap);
}

static void fail_expr(Ctx *c, const char *what, const tir_Node *e) {
  char *s = tir_print_expr(e);
  fail(c, "%s: %s", what, s ? s : "?");
  free(s);
}

/* ---- constructors ---- */
static Split *split_new(Ctx *c, Mark *src, int64_t lower, int64_t extent, int64_t scale) {
  Split *s = arena(c, sizeof *s);
  s->src = src;
  s->lower = lower;
  s->extent = extent;
  s->scale = scale;
  return s;
}

static Mark *mark_new(Ctx *c) {
  Mark *m = arena(c, sizeof *m);
  if (c->n_marks == c->cap_marks) {
    c->cap_marks = c->cap_marks ? c->cap_marks * 2 : 16;
    c->marks = realloc(c->marks, sizeof(Mark *) * (size_t)c->cap_marks);
  }
  m->id = c->n_marks;
  c->marks[c->n_marks++] = m;
  return m;
}

static Mark *mark_of_sum(Ctx *c, Sum s, int64_t extent) {
  Mark *m = mark_new(c);
  m->sum = s;
  m->extent = extent;
  return m;
}

static Sum sum_const(int64_t base) {
  Sum s = {NULL, 0, base, NULL};
  return s;
}

static Sum sum_of(Ctx *c, Split **items, int n, int64_t base, tir_Node *sym) {
  Sum s = {arena(c, sizeof(Split *) * (size_t)(n + 1)), n, base, sym};
  if (n) memcpy(s.a, items, sizeof(Split *) * (size_t)n);
  return s;
}

static Sum sum_one(Ctx *c, Split *x, int64_t base) { return sum_of(c, &x, 1, base, NULL); }

static int mul_ok(Ctx *c, int64_t x, int64_t y, int64_t *out) {
  if (__builtin_mul_overflow(x, y, out)) {
    fail(c, "integer overflow in an index expression");
    return 0;
  }
  return 1;
}

static int add_ok(Ctx *c, int64_t x, int64_t y, int64_t *out) {
  if (__builtin_add_overflow(x, y, out)) {
    fail(c, "integer overflow in an index expression");
    return 0;
  }
  return 1;
}

static tir_Node *sym_add(Ctx *c, tir_Node *x, tir_Node *y, int sign) {
  if (!y) return x;
  if (!x) return sign > 0 ? y : track(c, tir_neg(R(y)));
  return track(c, sign > 0 ? tir_add(R(x), R(y)) : tir_sub(R(x), R(y)));
}

static int split_eq(const Split *x, const Split *y, int check_scale) {
  return x->src == y->src && x->lower == y->lower && x->extent == y->extent && (!check_scale || x->scale == y->scale);
}

static int sum_eq(const Sum *x, const Sum *y) {
  if (x->n != y->n || x->base != y->base || x->sym || y->sym) return 0;
  for (int i = 0; i < x->n; i++)
    if (!split_eq(x->a[i], y->a[i], 1)) return 0;
  return 1;
}

static FuseEntry *fuse_find(Ctx *c, const Sum *flat) {
  for (int i = 0; i < c->n_fuse; i++)
    if (sum_eq(&c->fuse[i].flat, flat)) return &c->fuse[i];
  return NULL;
}

static void fuse_add(Ctx *c, Sum flat, Mark *m, int64_t offset) {
  if (c->n_fuse == c->cap_fuse) {
    c->cap_fuse = c->cap_fuse ? c->cap_fuse * 2 : 16;
    c->fuse = realloc(c->fuse, sizeof(FuseEntry) * (size_t)c->cap_fuse);
  }
  c->fuse[c->n_fuse++] = (FuseEntry){flat, m, offset};
}

/* x + sign * y (TVM AddToLhs: splits of the same source, lower factor and extent merge). */
static Sum sum_add(Ctx *c, Sum x, Sum y, int sign) {
  Split **items = arena(c, sizeof(Split *) * (size_t)(x.n + y.n + 1));
  int n = x.n;
  if (n) memcpy(items, x.a, sizeof(Split *) * (size_t)n);
  for (int i = 0; i < y.n; i++) {
    const Split *r = y.a[i];
    int64_t rs;
    if (!mul_ok(c, r->scale, sign, &rs)) return sum_const(0);
    int hit = -1;
    for (int k = 0; k < n; k++)
      if (items[k]->src == r->src && items[k]->lower == r->lower && items[k]->extent == r->extent) hit = k;
    if (hit >= 0) {
      int64_t s;
      if (!add_ok(c, items[hit]->scale, rs, &s)) return sum_const(0);
      items[hit] = split_new(c, r->src, r->lower, r->extent, s);
    } else {
      items[n++] = split_new(c, r->src, r->lower, r->extent, rs);
    }
  }
  /* splits whose scales cancelled contribute nothing */
  int k = 0;
  for (int i = 0; i < n; i++)
    if (items[i]->scale != 0) items[k++] = items[i];
  int64_t base, yb;
  if (!mul_ok(c, y.base, sign, &yb) || !add_ok(c, x.base, yb, &base)) return sum_const(0);
  Sum r = {items, k, base, sym_add(c, x.sym, y.sym, sign)};
  return r;
}

static Sum sum_scale(Ctx *c, Sum x, int64_t k) {
  if (k == 0) return sum_const(0);
  Sum r = sum_of(c, x.a, x.n, 0, NULL);
  for (int i = 0; i < x.n; i++) {
    int64_t s;
    if (!mul_ok(c, x.a[i]->scale, k, &s)) return sum_const(0);
    r.a[i] = split_new(c, x.a[i]->src, x.a[i]->lower, x.a[i]->extent, s);
  }
  if (!mul_ok(c, x.base, k, &r.base)) return sum_const(0);
  if (x.sym) r.sym = track(c, tir_mul(R(x.sym), tir_int_imm(x.sym->dtype, k)));
  return r;
}

/* ---- normal form back to an expression (TVM IterMapToExprNormalizer) ---- */
static tir_Node *norm_sum(Ctx *c, const Sum *s);

static tir_Node *imm(Ctx *c, int64_t v) { return tir_int_imm(c->dt, v); }

static tir_Node *mark_expr(Ctx *c, const Mark *m) {
  if (m->var) {
    tir_Node *v = tir_retain(&m->var->hdr);
    return m->var_min ? tir_sub(v, tir_int_imm(v->dtype, m->var_min)) : v;
  }
  return norm_sum(c, &m->sum);
}

static tir_Node *scaled(Ctx *c, tir_Node *e, int64_t scale) { return scale == 1 ? e : tir_mul(e, imm(c, scale)); }

static tir_Node *norm_split(Ctx *c, const Split *s) {
  tir_Node *src = mark_expr(c, s->src);
  int64_t full = s->src->extent;
  if (s->extent == full && s->lower == 1) return scaled(c, src, s->scale);
  int64_t le;
  if (!__builtin_mul_overflow(s->lower, s->extent, &le) && le == full) {
    if (s->extent == 1 && full != 1) {
      tir_release(src);
      return imm(c, 0);
    }
    return scaled(c, s->lower == 1 ? src : tir_floordiv(src, imm(c, s->lower)), s->scale);
  }
  tir_Node *e = tir_floormod(src, imm(c, le));
  if (s->lower != 1) e = tir_floordiv(e, imm(c, s->lower));
  return scaled(c, e, s->scale);
}

static tir_Node *norm_sum(Ctx *c, const Sum *s) {
  tir_Node *r = NULL;
  for (int i = 0; i < s->n; i++) {
    tir_Node *x = norm_split(c, s->a[i]);
    r = r ? tir_add(r, x) : x;
  }
  if (s->base || !r) r = r ? tir_add(r, imm(c, s->base)) : imm(c, s->base);
  if (s->sym) r = tir_add(r, R(s->sym));
  return r;
}

/* ---- fusing a sum of splits into one mark (TVM TryFuseIters and helpers) ---- */

/* The split of smallest scale (ties: extent 1 first), optionally of one source, at or before rbegin. */
static int find_base_iter(const Sum *e, const char *skip, const Mark *src, int rbegin) {
  if (rbegin < 0) rbegin = e->n - 1;
  int best = -1;
  for (int i = rbegin; i >= 0; i--) {
    if (skip[i] || (src && e->a[i]->src != src)) continue;
    if (best < 0 || e->a[i]->scale < e->a[best]->scale ||
        (e->a[i]->scale == e->a[best]->scale && e->a[i]->extent == 1 && e->a[best]->extent != 1))
      best = i;
  }
  return best;
}

/* A split with exactly `scale`; one of extent 1 is preferred (it does not change the scale). */
static int find_exact_scale(const Sum *e, const char *skip, int64_t scale, const Mark *src, int rbegin) {
  if (rbegin < 0) rbegin = e->n - 1;
  int matched = -1;
  for (int j = rbegin; j >= 0; j--) {
    if (skip[j] || (src && e->a[j]->src != src) || e->a[j]->scale != scale) continue;
    if (e->a[j]->extent == 1) return j;
    if (matched < 0) matched = j;
  }
  return matched;
}

/* Merges splits of one source that are adjacent pieces:
 *   floormod(floordiv(x, c*s), m) * s*t + floormod(floordiv(x, c), s) * t = floormod(floordiv(x, c), m*s) * t
 * Returns 1 and the merged sum when some source appears twice. */
static int try_combine(Ctx *c, const Sum *e, Sum *out) {
  if (e->n <= 1) return 0;
  int dup = 0;
  for (int i = 0; i < e->n && !dup; i++)
    for (int j = i + 1; j < e->n; j++)
      if (e->a[i]->src == e->a[j]->src) dup = 1;
  if (!dup) return 0;
  char *visited = arena(c, (size_t)e->n);
  Split **rev = arena(c, sizeof(Split *) * (size_t)e->n);
  int nrev = 0;
  for (int rend = e->n - 1; rend >= 0;) {
    if (visited[rend]) {
      rend--;
      continue;
    }
    int hits = 0;
    for (int i = 0; i < e->n; i++) hits += e->a[i]->src == e->a[rend]->src;
    if (hits == 1) {
      rev[nrev++] = e->a[rend];
      visited[rend] = 1;
      rend--;
      continue;
    }
    int m = find_base_iter(e, visited, e->a[rend]->src, rend);
    visited[m] = 1;
    Split rhs = *e->a[m];
    for (;;) {
      int64_t lhs_scale, lhs_lower;
      if (__builtin_mul_overflow(rhs.extent, rhs.scale, &lhs_scale)) break;
      int k = find_exact_scale(e, visited, lhs_scale, rhs.src, rend);
      if (k < 0) break;
      if (__builtin_mul_overflow(rhs.lower, rhs.extent, &lhs_lower) || e->a[k]->lower != lhs_lower) break;
      visited[k] = 1;
      if (!mul_ok(c, e->a[k]->extent, rhs.extent, &rhs.extent)) return 0;
    }
    rev[nrev++] = split_new(c, rhs.src, rhs.lower, rhs.extent, rhs.scale);
  }
  Split **items = arena(c, sizeof(Split *) * (size_t)nrev);
  for (int i = 0; i < nrev; i++) items[i] = rev[nrev - 1 - i];
  *out = (Sum){items, nrev, e->base, e->sym};
  return 1;
}

/* Rewrites sum = x1*c1 + ... + xn*cn + base as  split(M, scale = cn) + base  where M is the
 * fused mark of the x's (chained scales, or a predicate-constrained sub-sum).  Returns 1
 * on success. */
/* The longest constrained sum whose innermost split is x (scales ignored), or NULL. */
static const Sum *constraint_ending_with(Ctx *c, const Split *x) {
  const Sum *cons = NULL;
  for (int k = 0; k < c->n_constrained; k++) {
    const Sum *f = &c->constrained[k];
    if (split_eq(x, f->a[f->n - 1], 0) && (!cons || cons->n < f->n)) cons = f;
  }
  return cons;
}

static int try_fuse(Ctx *c, Sum e, int allow_early_skip, Sum *out) {
  Sum comb;
  if (try_combine(c, &e, &comb)) {
    e = comb;
    /* a merged split that a predicate constrains on its own goes on to the constrained
     * mark (an extension of TVM, whose early exit loses the predicate here) */
    const Sum *cons = e.n == 1 ? constraint_ending_with(c, e.a[0]) : NULL;
    if (e.n <= 1 && allow_early_skip && !(cons && cons->n == 1)) {
      *out = e;
      return 1;
    }
  }
  if (c->failed || e.n == 0) return 0;
  char *visited = arena(c, (size_t)e.n);
  int base_index = find_base_iter(&e, visited, NULL, -1);
  int64_t base_scale = e.a[base_index]->scale;
  if (base_scale <= 0) {
    fail(c, "a loop variable appears with a non-positive coefficient (%lld); affine bindings need positive scales",
         (long long)base_scale);
    return 0;
  }
  Split **flat = arena(c, sizeof(Split *) * (size_t)e.n), **grouped = arena(c, sizeof(Split *) * (size_t)e.n);
  int nflat = 0, ngrouped = 0;
  int64_t extra_base = 0, expected = base_scale;
  for (int i = 0; i < e.n;) {
    int pos = i == 0 ? base_index : find_exact_scale(&e, visited, expected, NULL, -1);
    if (pos < 0) return 0;
    int64_t matched_scale = expected;
    /* the longest constrained sum that ends with this split */
    const Sum *cons = constraint_ending_with(c, e.a[pos]);
    if (cons) {
      for (int k = cons->n - 1; k >= 0; k--) {
        int hit = -1;
        for (int q = 0; q < e.n && hit < 0; q++) {
          int64_t want;
          if (!visited[q] && split_eq(e.a[q], cons->a[k], 0) && !__builtin_mul_overflow(cons->a[k]->scale, matched_scale, &want) &&
              want == e.a[q]->scale)
            hit = q;
        }
        if (hit < 0) return 0;
        visited[hit] = 1;
        flat[nflat++] = e.a[hit];
      }
      FuseEntry *fe = fuse_find(c, cons);
      if (!fe) return 0;
      grouped[ngrouped++] = split_new(c, fe->mark, 1, fe->mark->extent, matched_scale / base_scale);
      int64_t t;
      if (!mul_ok(c, fe->offset, matched_scale, &t) || !add_ok(c, extra_base, t, &extra_base)) return 0;
      if (!mul_ok(c, fe->mark->extent, matched_scale, &expected)) return 0;
      i += cons->n;
    } else {
      visited[pos] = 1;
      const Split *a = e.a[pos];
      if (a->scale % base_scale) return 0;
      Split *na = split_new(c, a->src, a->lower, a->extent, a->scale / base_scale);
      flat[nflat++] = na;
      grouped[ngrouped++] = na;
      if (!mul_ok(c, a->extent, matched_scale, &expected)) return 0;
      i++;
    }
  }
  Sum flat_form = sum_const(0), structured = sum_const(0);
  flat_form.a = arena(c, sizeof(Split *) * (size_t)nflat);
  structured.a = arena(c, sizeof(Split *) * (size_t)ngrouped);
  for (int i = 0; i < nflat; i++) flat_form.a[i] = flat[nflat - 1 - i];
  for (int i = 0; i < ngrouped; i++) structured.a[i] = grouped[ngrouped - 1 - i];
  flat_form.n = nflat;
  structured.n = ngrouped;
  int64_t base;
  if (!add_ok(c, e.base, extra_base, &base)) return 0;
  FuseEntry *fe = fuse_find(c, &flat_form);
  if (fe) {
    int64_t want;
    if (!mul_ok(c, fe->offset, base_scale, &want) || want != extra_base) return 0;
    *out = sum_one(c, split_new(c, fe->mark, 1, fe->mark->extent, base_scale), base);
    out->sym = e.sym;
    return 1;
  }
  Mark *m = mark_of_sum(c, structured, expected / base_scale);
  m->flat = flat_form;
  fuse_add(c, flat_form, m, extra_base);
  *out = sum_one(c, split_new(c, m, 1, m->extent, base_scale), base);
  out->sym = e.sym;
  return 1;
}

/* ---- rewriting expressions (TVM IterMapRewriter) ---- */
static int uses_input(Ctx *c, const tir_Node *e) { return tir_uses_any_var(e, c->n_in, c->in_vars); }

static Sum plain(Ctx *c, const tir_Node *e) {
  int64_t v;
  if (tir_is_const_int(e, &v)) return sum_const(v);
  Sum s = sum_const(0);
  s.sym = track(c, tir_retain(e));
  return s;
}

static int is_const_sum(const Sum *s) { return s->n == 0 && !s->sym; }

static Sum rw(Ctx *c, const tir_Node *e);

/* floordiv(split + base, d): TVM SplitFloorDivConst for constants, without padding. */
static Sum split_floordiv(Ctx *c, Split *lhs, int64_t base, int64_t d, const tir_Node *orig) {
  if (d == 1) return sum_one(c, lhs, base);
  int64_t scale = lhs->scale;
  if (scale != 1) {
    if (scale % d == 0 && base % d == 0)
      return sum_one(c, split_new(c, lhs->src, lhs->lower, lhs->extent, scale / d), base / d);
    if (d % scale == 0 && base % scale == 0) {
      base /= scale;
      d /= scale;
      lhs = split_new(c, lhs->src, lhs->lower, lhs->extent, 1);
    } else {
      fail_expr(c, "the scale of the dividend and the divisor cannot be simplified away in", orig);
      return sum_const(0);
    }
  }
  if (arith_floormod(base, d) != 0) {
    fail_expr(c, "the offset is not a multiple of the divisor in", orig);
    return sum_const(0);
  }
  Split *ns;
  int64_t nl;
  if (lhs->extent % d == 0) {
    if (!mul_ok(c, lhs->lower, d, &nl)) return sum_const(0);
    ns = split_new(c, lhs->src, nl, lhs->extent / d, lhs->scale);
  } else if (lhs->lower == 1 && lhs->extent == lhs->src->extent) {
    ns = split_new(c, lhs->src, d, (lhs->extent + d - 1) / d, lhs->scale);
  } else {
    Mark *m = mark_of_sum(c, sum_one(c, lhs, 0), lhs->extent);
    ns = split_new(c, m, d, (lhs->extent + d - 1) / d, 1);
  }
  return sum_one(c, ns, arith_floordiv(base, d));
}

/* floormod(split + base, d): TVM SplitFloorModConst for constants, without padding. */
static Sum split_floormod(Ctx *c, Split *lhs, int64_t base, int64_t d, const tir_Node *orig) {
  if (d == 1) return sum_const(0);
  int64_t scale = lhs->scale;
  if (scale != 1) {
    if (scale % d == 0 && base % d == 0) return sum_const(0);
    if (d % scale == 0 && base % scale == 0) {
      d /= scale;
      base /= scale;
    } else {
      fail_expr(c, "the scale of the dividend and the divisor cannot be simplified away in", orig);
      return sum_const(0);
    }
  }
  if (arith_floormod(base, d) != 0) {
    fail_expr(c, "the offset is not a multiple of the divisor in", orig);
    return sum_const(0);
  }
  /* floormod(floormod(y, e), d) = floormod(y, d) only when d divides e (or the split is the
   * whole mark, so the inner modulo does nothing) */
  if (lhs->extent % d != 0 && !(lhs->lower == 1 && lhs->extent == lhs->src->extent)) {
    fail_expr(c, "the divisor does not divide the extent of the iterator in", orig);
    return sum_const(0);
  }
  return sum_one(c, split_new(c, lhs->src, lhs->lower, d, lhs->scale), 0);
}

/* The single split of a dividend (fusing its splits first). */
static int dividend(Ctx *c, Sum a, const tir_Node *orig, Split **out, int64_t *base) {
  if (a.sym) {
    fail_expr(c, "a symbolic offset inside a division is not supported", orig);
    return 0;
  }
  if (a.n == 1) {
    *out = a.a[0];
    *base = a.base;
    return 1;
  }
  Sum f;
  if (!try_fuse(c, a, 1, &f) || f.n != 1) {
    fail_expr(c, "the dividend cannot be written as a single fused iterator in", orig);
    return 0;
  }
  *out = f.a[0];
  *base = f.base;
  return 1;
}

static Sum rw(Ctx *c, const tir_Node *e) {
  if (c->failed) return sum_const(0);
  if (!uses_input(c, e)) return plain(c, e);
  if (e->dtype.code != TIR_DT_INT || e->dtype.lanes != 1) {
    fail_expr(c, "not an integer expression", e);
    return sum_const(0);
  }
  switch (e->kind) {
    case TIR_Var:
      for (int i = 0; i < c->n_in; i++)
        if (&c->in[i].var->hdr == e) {
          const InputIter *it = &c->in[i];
          if (!it->mark) return sum_const(it->lo);
          return sum_one(c, split_new(c, it->mark, 1, it->mark->extent, 1), it->lo);
        }
      return plain(c, e);
    case TIR_Add:
    case TIR_Sub: {
      const tir_Add *b = (const tir_Add *)e;
      Sum x = rw(c, b->a), y = rw(c, b->b);
      return sum_add(c, x, y, e->kind == TIR_Add ? 1 : -1);
    }
    case TIR_Mul: {
      const tir_Mul *b = (const tir_Mul *)e;
      Sum x = rw(c, b->a), y = rw(c, b->b);
      if (c->failed) return sum_const(0);
      if (x.n && y.n) {
        fail_expr(c, "a product of two loop variables is not affine", e);
        return sum_const(0);
      }
      if (!x.n) {
        Sum t = x;
        x = y;
        y = t;
      }
      if (!is_const_sum(&y)) {
        fail_expr(c, "a loop variable is scaled by a non-constant in", e);
        return sum_const(0);
      }
      return sum_scale(c, x, y.base);
    }
    case TIR_FloorDiv:
    case TIR_FloorMod: {
      const tir_FloorDiv *b = (const tir_FloorDiv *)e;
      Sum x = rw(c, b->a), y = rw(c, b->b);
      if (c->failed) return sum_const(0);
      if (!is_const_sum(&y) || y.base <= 0) {
        fail_expr(c, "the divisor must be a positive constant in", e);
        return sum_const(0);
      }
      if (!x.n) {
        /* the loop variables cancelled: a plain expression */
        tir_Node *xe = norm_sum(c, &x);
        tir_Node *r = e->kind == TIR_FloorDiv ? tir_floordiv(xe, imm(c, y.base)) : tir_floormod(xe, imm(c, y.base));
        tir_Node *s = tir_simplify(NULL, r);
        tir_release(r);
        Sum out = plain(c, s);
        tir_release(s);
        return out;
      }
      Split *sp;
      int64_t base;
      if (!dividend(c, x, e, &sp, &base)) return sum_const(0);
      return e->kind == TIR_FloorDiv ? split_floordiv(c, sp, base, y.base, e) : split_floormod(c, sp, base, y.base, e);
    }
    default: fail_expr(c, "not an affine function of the loop variables", e); return sum_const(0);
  }
}

/* A binding as one split of a fused mark plus an offset (TVM Rewrite). */
static Sum rewrite(Ctx *c, const tir_Node *e) {
  Sum s = rw(c, e);
  if (c->failed || s.n < 1) return s;
  Sum out;
  if (!try_fuse(c, s, 1, &out)) {
    if (!c->failed) fail_expr(c, "the loop variables do not fuse into one iterator (scales do not chain) in", e);
    return sum_const(0);
  }
  return out;
}

/* ---- predicates (TVM MatchBoundConstraints, NormalizeToIterOnBoundExpr) ---- */
typedef struct {
  const tir_Node *iter; /* borrowed or tracked */
  int has_lo, has_hi;
  int64_t lo, hi; /* lo <= iter < hi */
  int size, index; /* node count (smaller first, TVM), then position in the predicate */
} Constraint;

static int count_nodes(const tir_Node *n, void *p) {
  (*(int *)p)++;
  return 0;
}

static int node_count(const tir_Node *e) {
  int n = 0;
  tir_visit(e, count_nodes, &n);
  return n;
}

/* Splits an additive expression into the parts using loop variables and the rest. */
static void extract_terms(Ctx *c, const tir_Node *e, int sign, tir_Node **it, tir_Node **rest) {
  if (e->kind == TIR_Add || e->kind == TIR_Sub) {
    const tir_Add *b = (const tir_Add *)e;
    extract_terms(c, b->a, sign, it, rest);
    extract_terms(c, b->b, e->kind == TIR_Sub ? -sign : sign, it, rest);
    return;
  }
  if (uses_input(c, e)) {
    tir_Node *x = tir_retain(e);
    *it = !*it ? (sign > 0 ? x : tir_neg(x)) : (sign > 0 ? tir_add(*it, x) : tir_sub(*it, x));
  } else {
    tir_Node *x = tir_retain(e); /* moved to the other side: opposite sign */
    *rest = !*rest ? (sign > 0 ? tir_neg(x) : x) : (sign > 0 ? tir_sub(*rest, x) : tir_add(*rest, x));
  }
}

static int const_of(const tir_Node *e, int64_t *v) {
  tir_Node *s = tir_simplify(NULL, e);
  int ok = tir_is_const_int(s, v);
  tir_release(s);
  return ok;
}

typedef struct {
  int64_t coef;
  const tir_Node *atom;
} LTerm;

#define MAX_LTERMS 64
/* e * coef as constant + sum of coef * atom (atoms merged when equal).  0 when too big. */
static int lin_terms(const tir_Node *e, int64_t coef, LTerm *t, int *n, int64_t *cst) {
  int64_t v, k;
  switch (e->kind) {
    case TIR_IntImm:
      if (__builtin_mul_overflow(((const tir_IntImm *)e)->value, coef, &v) || __builtin_add_overflow(*cst, v, cst)) return 0;
      return 1;
    case TIR_Add:
    case TIR_Sub: {
      const tir_Add *b = (const tir_Add *)e;
      if (e->kind == TIR_Sub && coef == INT64_MIN) return 0;
      return lin_terms(b->a, coef, t, n, cst) && lin_terms(b->b, e->kind == TIR_Sub ? -coef : coef, t, n, cst);
    }
    case TIR_Mul: {
      const tir_Mul *m = (const tir_Mul *)e;
      if (tir_is_const_int(m->b, &v) || tir_is_const_int(m->a, &v)) {
        if (__builtin_mul_overflow(coef, v, &k)) return 0;
        return lin_terms(tir_is_const_int(m->b, NULL) ? m->a : m->b, k, t, n, cst);
      }
      break;
    }
    default: break;
  }
  for (int i = 0; i < *n; i++)
    if (tir_expr_deep_equal(t[i].atom, e)) return !__builtin_add_overflow(t[i].coef, coef, &t[i].coef);
  if (*n == MAX_LTERMS) return 0;
  t[(*n)++] = (LTerm){coef, e};
  return 1;
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

static tir_Node *lin_build(const LTerm *t, int n, tir_DType dt) {
  tir_Node *e = NULL;
  for (int p = 0; p < n; p++) {
    if (t[p].coef == 0) continue;
    tir_Node *x = tir_retain(t[p].atom);
    if (t[p].coef != 1) x = tir_mul(x, tir_int_imm(x->dtype, t[p].coef));
    e = e ? tir_add(e, x) : x;
  }
  return e ? e : tir_int_imm(dt, 0);
}

/* One rewrite of a constraint into an equivalent one (for every integer value of the
 * terms); 0 when none applies.
 *  - reduce (expand = 0):  lo <= X + r < hi  with d dividing X's coefficients, lo and hi
 *    becomes  lo / d <= X / d + floordiv(r, d) < hi / d  (and floordiv(r, d) is 0 when r is
 *    a loop variable over [0, d));
 *  - expand (expand = 1):  lo <= X + floordiv(E, d) < hi  becomes  lo * d <= X * d + E < hi * d. */
static int constraint_step(Ctx *c, Constraint *k, int expand) {
  LTerm t[MAX_LTERMS];
  int n = 0;
  int64_t cst = 0;
  if (!lin_terms(k->iter, 1, t, &n, &cst)) return 0;
  int64_t lo = k->lo, hi = k->hi;
  if ((k->has_lo && __builtin_sub_overflow(lo, cst, &lo)) || (k->has_hi && __builtin_sub_overflow(hi, cst, &hi))) return 0;
  for (int q = 0; q < n; q++) {
    if (t[q].coef != 1) continue;
    int64_t d = 0;
    if (expand) {
      const tir_FloorDiv *fd = (const tir_FloorDiv *)t[q].atom;
      if (t[q].atom->kind != TIR_FloorDiv || !tir_is_const_int(fd->b, &d) || d < 2) continue;
      LTerm u[MAX_LTERMS];
      int m = 0;
      int64_t c2 = 0, nlo = lo, nhi = hi;
      for (int p = 0; p < n; p++)
        if (p != q) {
          u[m] = t[p];
          if (__builtin_mul_overflow(u[m].coef, d, &u[m].coef)) return 0;
          m++;
        }
      if ((k->has_lo && __builtin_mul_overflow(nlo, d, &nlo)) || (k->has_hi && __builtin_mul_overflow(nhi, d, &nhi))) return 0;
      if (!lin_terms(fd->a, 1, u, &m, &c2)) return 0;
      if ((k->has_lo && __builtin_sub_overflow(nlo, c2, &nlo)) || (k->has_hi && __builtin_sub_overflow(nhi, c2, &nhi))) return 0;
      k->lo = nlo, k->hi = nhi;
      k->iter = track(c, lin_build(u, m, k->iter->dtype));
      return 1;
    }
    for (int p = 0; p < n; p++)
      if (p != q) d = gcd64(d, t[p].coef);
    if (k->has_lo) d = gcd64(d, lo);
    if (k->has_hi) d = gcd64(d, hi);
    if (d < 2 || n < 2) continue;
    for (int p = 0; p < n; p++) t[p].coef /= d;
    t[q].atom = track(c, tir_floordiv(tir_retain(t[q].atom), tir_int_imm(t[q].atom->dtype, d)));
    t[q].coef = 1;
    if (k->has_lo) k->lo = lo / d;
    if (k->has_hi) k->hi = hi / d;
    tir_Node *e = lin_build(t, n, k->iter->dtype);
    tir_Analyzer *an = tir_analyzer_new();
    for (int i = 0; i < c->n_in; i++) tir_analyzer_bind_bound(an, c->in[i].var, c->in[i].lo, c->in[i].hi - 1);
    k->iter = track(c, tir_simplify(an, e));
    tir_analyzer_free(an);
    tir_release(e);
    return 1;
  }
  return 0;
}

/* The simplifier may have put a split's predicate "fused < E" into a shape other than the
 * fused index the bindings use, so detection tries the predicate as given (TVM), then
 * reduced as far as it goes, then expanded (an extension of TVM; each form is equivalent). */
static void normalize_constraint(Ctx *c, Constraint *k, int expand) {
  for (int round = 0; round < 8 && constraint_step(c, k, expand); round++) {
  }
}

static int collect_constraints(Ctx *c, const tir_Node *p, Constraint **out, int *n, int *cap) {
  if (p->kind == TIR_And) {
    const tir_And *a = (const tir_And *)p;
    return collect_constraints(c, a->a, out, n, cap) && collect_constraints(c, a->b, out, n, cap);
  }
  if (tir_is_one(p)) return 1;
  if (p->kind != TIR_LT && p->kind != TIR_LE && p->kind != TIR_GT && p->kind != TIR_GE) {
    fail_expr(c, "the predicate is not a conjunction of <, <=, >, >= comparisons", p);
    return 0;
  }
  const tir_LT *cmp = (const tir_LT *)p;
  const tir_Node *lhs = cmp->a, *rhs = cmp->b;
  if (!uses_input(c, lhs) && !uses_input(c, rhs)) return 1;
  if (!tir_dtype_is_int(lhs->dtype) || !tir_dtype_is_int(rhs->dtype)) {
    fail_expr(c, "the predicate compares non-integers", p);
    return 0;
  }
  int is_greater = p->kind == TIR_GT || p->kind == TIR_GE, is_equal = p->kind == TIR_LE || p->kind == TIR_GE;
  int bound_at_left;
  const tir_Node *iter;
  int64_t bound;
  if (!uses_input(c, lhs)) {
    bound_at_left = 1;
    iter = rhs;
    if (!const_of(lhs, &bound)) goto symbolic;
  } else if (!uses_input(c, rhs)) {
    bound_at_left = 0;
    iter = lhs;
    if (!const_of(rhs, &bound)) goto symbolic;
  } else {
    bound_at_left = 0;
    tir_Node *it = NULL, *rest = NULL, *diff = tir_sub(R((tir_Node *)lhs), R((tir_Node *)rhs));
    extract_terms(c, diff, 1, &it, &rest);
    tir_release(diff);
    int ok = rest ? const_of(rest, &bound) : (bound = 0, 1);
    tir_release(rest);
    if (!ok) {
      tir_release(it);
      goto symbolic;
    }
    tir_Node *s = tir_simplify(NULL, it);
    tir_release(it);
    iter = track(c, s);
  }
  Constraint k = {iter, 0, 0, 0, 0, 0, 0};
  if (is_greater) {
    if (bound_at_left) k.has_hi = 1, k.hi = is_equal ? bound + 1 : bound; /* bound > iter */
    else k.has_lo = 1, k.lo = is_equal ? bound : bound + 1;              /* iter > bound */
  } else {
    if (bound_at_left) k.has_lo = 1, k.lo = is_equal ? bound : bound + 1; /* bound < iter */
    else k.has_hi = 1, k.hi = is_equal ? bound + 1 : bound;              /* iter < bound */
  }
  if (c->pred_mode) normalize_constraint(c, &k, c->pred_mode == 2);
  iter = k.iter;
  if (iter->kind == TIR_Var) {
    for (int i = 0; i < c->n_in; i++)
      if (&c->in[i].var->hdr == iter) {
        if (k.has_lo && k.lo > c->in[i].lo) c->in[i].lo = k.lo;
        if (k.has_hi && k.hi < c->in[i].hi) c->in[i].hi = k.hi;
        return 1;
      }
  }
  if (*n == *cap) {
    *cap = *cap ? *cap * 2 : 8;
    *out = realloc(*out, sizeof(Constraint) * (size_t)*cap);
  }
  k.size = node_count(iter);
  k.index = *n;
  (*out)[(*n)++] = k;
  return 1;
symbolic:
  fail_expr(c, "the predicate bounds a loop variable by a non-constant", p);
  return 0;
}

static int apply_constraint(Ctx *c, const Constraint *k) {
  Sum e = rw(c, k->iter);
  if (c->failed) return 0;
  if (e.sym) {
    fail_expr(c, "a predicate with a symbolic offset is not supported", k->iter);
    return 0;
  }
  int64_t lo = k->lo, hi = k->hi;
  if (e.base) {
    lo -= e.base;
    hi -= e.base;
    e.base = 0;
  }
  Sum f;
  if (e.n == 0 || !try_fuse(c, e, 0, &f) || f.a[0]->scale != 1 || f.a[0]->src->var) {
    if (!c->failed) fail_expr(c, "could not normalize the iterators of the predicate", k->iter);
    return 0;
  }
  Mark *m = f.a[0]->src;
  FuseEntry *fe = fuse_find(c, &m->flat);
  if (!fe) {
    fail_expr(c, "could not normalize the iterators of the predicate", k->iter);
    return 0;
  }
  int64_t imin = fe->offset, imax = fe->offset + m->extent, delta = 0;
  if (k->has_lo && lo > imin) delta = lo - imin, imin = lo;
  if (k->has_hi && hi < imax) imax = hi;
  if (imax <= imin) {
    fail_expr(c, "the predicate is never true", k->iter);
    return 0;
  }
  m->sum.base -= delta;
  m->extent = imax - imin;
  fe->offset = imin;
  if (c->n_constrained == c->cap_constrained) {
    c->cap_constrained = c->cap_constrained ? c->cap_constrained * 2 : 8;
    c->constrained = realloc(c->constrained, sizeof(Sum) * (size_t)c->cap_constrained);
    c->constrained_marks = realloc(c->constrained_marks, sizeof(Mark *) * (size_t)c->cap_constrained);
  }
  c->constrained_marks[c->n_constrained] = m;
  c->constrained[c->n_constrained++] = m->flat;
  return 1;
}

/* Two constrained sums either nest (one's splits contain the other's) or are disjoint. */
static int check_constraints(Ctx *c) {
  for (int i = 0; i < c->n_constrained; i++)
    for (int j = i + 1; j < c->n_constrained; j++) {
      int state = 0;
      const Sum *x = &c->constrained[i], *y = &c->constrained[j];
      for (int p = 0; p < x->n; p++) {
        int found = 0;
        for (int q = 0; q < y->n && !found; q++) found = split_eq(x->a[p], y->a[q], 1);
        if (state == 0) state = found ? 1 : -1;
        else if ((state == -1 && found) || (state == 1 && !found)) return 0;
      }
    }
  return 1;
}

static int cmp_constraint(const void *x, const void *y) {
  const Constraint *a = x, *b = y;
  if (a->size != b->size) return (a->size > b->size) - (a->size < b->size);
  return (a->index > b->index) - (a->index < b->index);
}

/* ---- coverage of marks by their splits (TVM CheckMapping, TryNormalizeSplits) ---- */
static void collect_mark(Collector *col, Mark *m);

static void collect_split(Collector *col, Split *s) {
  collect_mark(col, s->src);
  SplitList *l = &col->lists[s->src->id];
  if (l->n == l->cap) {
    l->cap = l->cap ? l->cap * 2 : 4;
    l->s = realloc(l->s, sizeof(Split *) * (size_t)l->cap);
  }
  l->s[l->n++] = s;
}

static void collect_mark(Collector *col, Mark *m) {
  if (col->visited[m->id]) return;
  col->visited[m->id] = 1;
  col->order[col->n_order++] = m;
  for (int i = 0; i < m->sum.n; i++) collect_split(col, m->sum.a[i]);
}

static void collector_init(Ctx *c, Collector *col, const Sum *bindings, int n) {
  col->visited = calloc((size_t)c->n_marks + 1, sizeof(int));
  col->lists = calloc((size_t)c->n_marks + 1, sizeof(SplitList));
  col->order = calloc((size_t)c->n_marks + 1, sizeof(Mark *));
  col->n_order = 0;
  col->n_ids = c->n_marks;
  for (int i = 0; i < n; i++)
    for (int k = 0; k < bindings[i].n; k++) collect_split(col, bindings[i].a[k]);
}

static void collector_free(Ctx *c, Collector *col) {
  for (int i = 0; i <= col->n_ids; i++) free(col->lists[i].s);
  free(col->visited);
  free(col->lists);
  free(col->order);
}

static int normalize_splits(Ctx *c, const Mark *m, const SplitList *l) {
  char *used = arena(c, (size_t)l->n + 1);
  int64_t expected = 1;
  for (int i = 0; i < l->n; i++) {
    int j = -1;
    for (int k = 0; k < l->n && j < 0; k++)
      if (!used[k] && l->s[k]->lower == expected) j = k;
    if (j < 0) {
      if (c->level == TIR_ITER_MAP_BIJECTIVE) return 0;
      /* skip a lower factor: every unused split must then have a lower factor divisible by it */
      for (int k = 0; k < l->n; k++) {
        if (used[k]) continue;
        if (l->s[k]->lower % expected) return 0;
        if (j < 0 || l->s[j]->lower % l->s[k]->lower == 0) j = k;
      }
      if (j < 0) return 0;
    }
    used[j] = 1;
    if (!mul_ok(c, l->s[j]->lower, l->s[j]->extent, &expected)) return 0;
  }
  if (c->level == TIR_ITER_MAP_BIJECTIVE) return expected == m->extent;
  return expected == m->extent || (expected > 0 && m->extent % expected == 0);
}

static void describe_mark(Ctx *c, const Mark *m, char *buf, size_t cap) {
  tir_Node *e = mark_expr(c, m);
  char *s = tir_print_expr(e);
  snprintf(buf, cap, "%s", s ? s : "?");
  free(s);
  tir_release(e);
}

static int check_mapping(Ctx *c, const Sum *bindings, int n) {
  Collector col;
  collector_init(c, &col, bindings, n);
  int ok = 1;
  for (int i = 0; i < col.n_order && ok; i++) {
    Mark *m = col.order[i];
    if (!normalize_splits(c, m, &col.lists[m->id])) {
      char d[160];
      describe_mark(c, m, d, sizeof d);
      fail(c, "%s of %s (extent %lld) %s", c->level == TIR_ITER_MAP_BIJECTIVE ? "the uses" : "the splits", d,
           (long long)m->extent,
           c->level == TIR_ITER_MAP_BIJECTIVE ? "overlap or do not cover it exactly (not a bijection)"
                                              : "overlap or do not divide it");
      ok = 0;
    }
  }
  /* a predicate no binding goes through would be lost (TVM keeps quiet here) */
  for (int i = 0; i < c->n_constrained && ok; i++)
    if (!col.visited[c->constrained_marks[i]->id]) {
      char d[160];
      describe_mark(c, c->constrained_marks[i], d, sizeof d);
      fail(c, "the predicate's bound on %s does not match the bindings' iterators", d);
      ok = 0;
    }
  if (ok && c->level == TIR_ITER_MAP_BIJECTIVE)
    for (int i = 0; i < c->n_in && ok; i++) {
      const InputIter *it = &c->in[i];
      if (it->mark && !col.visited[it->mark->id] && it->mark->extent != 1) {
        fail(c, "loop variable %s (extent %lld) is not used by any binding (not a bijection)", it->var->name,
             (long long)it->mark->extent);
        ok = 0;
      }
    }
  collector_free(c, &col);
  return ok;
}

/* ---- detection ---- */
static int ctx_init(Ctx *c, const tir_LoopIter *loops, int n_loops, int level, int simplify_trivial) {
  memset(c, 0, sizeof *c);
  c->level = level;
  c->simplify_trivial = simplify_trivial;
  c->dt = TIR_INT32;
  c->in = calloc((size_t)n_loops + 1, sizeof(InputIter));
  c->in_vars = calloc((size_t)n_loops + 1, sizeof(tir_Var *));
  c->n_in = n_loops;
  for (int i = 0; i < n_loops; i++) {
    c->in[i].var = loops[i].var;
    c->in[i].lo = c->in[i].loop_lo = loops[i].min;
    c->in[i].hi = c->in[i].loop_hi = loops[i].min + loops[i].extent;
    c->in_vars[i] = (tir_Var *)loops[i].var;
    if (i == 0) c->dt = loops[i].var->hdr.dtype;
    if (loops[i].extent <= 0) {
      fail(c, "loop %s has extent %lld", loops[i].var->name, (long long)loops[i].extent);
      return 0;
    }
    for (int j = 0; j < i; j++)
      if (loops[j].var == loops[i].var) {
        fail(c, "loop variable %s is given twice", loops[i].var->name);
        return 0;
      }
  }
  return 1;
}

static void make_input_marks(Ctx *c) {
  for (int i = 0; i < c->n_in; i++) {
    InputIter *it = &c->in[i];
    if (c->simplify_trivial && it->hi - it->lo == 1) continue;
    Mark *m = mark_new(c);
    m->var = it->var;
    m->var_min = it->lo;
    m->extent = it->hi - it->lo;
    it->mark = m;
  }
}

/* The whole detection: fills out[n] with each binding's normal form.  Returns 1 if affine. */
static int detect(Ctx *c, const tir_Node *const *bindings, int n, const tir_Node *predicate, Sum *out) {
  Constraint *cons = NULL;
  int nc = 0, cc = 0;
  if (predicate && !tir_is_one(predicate) && !collect_constraints(c, predicate, &cons, &nc, &cc)) {
    free(cons);
    return 0;
  }
  for (int i = 0; i < c->n_in; i++)
    if (c->in[i].hi <= c->in[i].lo) {
      fail(c, "the predicate leaves loop %s no iterations", c->in[i].var->name);
      free(cons);
      return 0;
    }
  make_input_marks(c);
  if (nc) qsort(cons, (size_t)nc, sizeof *cons, cmp_constraint);
  for (int i = 0; i < nc; i++)
    if (!apply_constraint(c, &cons[i])) {
      free(cons);
      return 0;
    }
  free(cons);
  if (!check_constraints(c)) {
    fail(c, "the predicate's constraints overlap without nesting");
    return 0;
  }
  for (int i = 0; i < n; i++) {
    out[i] = rewrite(c, bindings[i]);
    if (c->failed) return 0;
  }
  if (!check_mapping(c, out, n)) return 0;
  for (int i = 0; i < n; i++)
    if (out[i].n > 1 || (out[i].n == 1 && out[i].a[0]->scale != 1)) {
      fail_expr(c, "the binding is a scaled iterator, not an affine binding", bindings[i]);
      return 0;
    }
  return 1;
}

static void copy_why(const Ctx *c, char *why, int why_cap) {
  if (why && why_cap > 0) snprintf(why, (size_t)why_cap, "%s", c->failed ? c->err : "");
}

/* One attempt of the detection with constraint form `mode`; 1 when affine (and the
 * extents match).  The context is left initialized (free with ctx_free). */
static int attempt(Ctx *c, const tir_Node *const *bindings, const int64_t *extents, int n, const tir_LoopIter *loops,
                   int n_loops, const tir_Node *predicate, int level, int simplify_trivial, int mode, Sum *out) {
  int ok = ctx_init(c, loops, n_loops, level, simplify_trivial);
  c->pred_mode = mode;
  if (ok) ok = detect(c, bindings, n, predicate, out);
  for (int i = 0; ok && extents && i < n; i++) {
    int64_t ext = out[i].n ? out[i].a[0]->extent : 1;
    if (ext != extents[i]) {
      char *s = tir_print_expr(bindings[i]);
      fail(c, "binding %d (%s) covers %lld values but its iteration domain has extent %lld", i, s ? s : "?",
           (long long)ext, (long long)extents[i]);
      free(s);
      ok = 0;
    }
  }
  return ok;
}

static int n_modes(const tir_Node *predicate) { return predicate && !tir_is_one(predicate) ? 3 : 1; }

int tir_detect_iter_map_level(tir_Analyzer *a, const tir_Node *const *bindings, const int64_t *extents, int n,
                              const tir_LoopIter *loops, int n_loops, const tir_Node *predicate, int level, char *why,
                              int why_cap) {
  (void)a;
  Sum *out = calloc((size_t)n + 1, sizeof(Sum));
  int ok = 0;
  for (int mode = 0; mode < n_modes(predicate) && !ok; mode++) {
    Ctx c;
    ok = attempt(&c, bindings, extents, n, loops, n_loops, predicate, level, 0, mode, out);
    if (mode == 0) copy_why(&c, why, why_cap); /* the reason reported is the plain attempt's */
    ctx_free(&c);
  }
  if (ok && why && why_cap > 0) why[0] = 0;
  free(out);
  return ok;
}

int tir_detect_iter_map(tir_Analyzer *a, const tir_Node *const *bindings, const int64_t *extents, int n,
                        const tir_LoopIter *loops, int n_loops, const tir_Node *predicate, char *why, int why_cap) {
  return tir_detect_iter_map_level(a, bindings, extents, n, loops, n_loops, predicate, TIR_ITER_MAP_BIJECTIVE, why,
                                   why_cap);
}

/* ---- subspace division (TVM SubspaceDivider) ----
 * Each binding is written as  outer * inner_extent + inner  where outer uses only loops
 * outside the inner set and inner only loops inside it. */
enum { K_INNER, K_OUTER, K_MIXED, K_FAIL };

typedef struct {
  Split *split; /* an IterMapExpr: this split, or (split == NULL) the sum */
  Sum sum;
} DExpr;

typedef struct {
  int kind;
  DExpr outer, inner;
  int64_t outer_extent, inner_extent;
} Div;

typedef struct {
  Ctx *c;
  Collector *col;
  const tir_Var *const *inner_vars;
  int n_inner;
  Split **memo_key;
  Div *memo;
  int n_memo, cap_memo;
  tir_Node *outer_pred, *inner_pred; /* owned */
} Divider;

static DExpr dx_split(Split *s) {
  DExpr d = {s, sum_const(0)};
  return d;
}
static DExpr dx_sum(Sum s) {
  DExpr d = {NULL, s};
  return d;
}

static Div div_fail(void) {
  Div d;
  memset(&d, 0, sizeof d);
  d.kind = K_FAIL;
  return d;
}

static Div div_inner(DExpr e, int64_t extent) {
  Div d = {K_INNER, dx_sum(sum_const(0)), e, 1, extent};
  return d;
}

static Div div_outer(DExpr e, int64_t extent) {
  Div d = {K_OUTER, e, dx_sum(sum_const(0)), extent, 1};
  return d;
}

static Sum dx_as_sum(Ctx *c, DExpr e) { return e.split ? sum_one(c, e.split, 0) : e.sum; }

static Split *dx_as_split(Ctx *c, DExpr e, int64_t extent) {
  if (e.split) return e.split;
  return split_new(c, mark_of_sum(c, e.sum, extent), 1, extent, 1);
}

static tir_Node *dx_expr(Ctx *c, DExpr e) { return e.split ? norm_split(c, e.split) : norm_sum(c, &e.sum); }

static void memo_put(Divider *d, Split *key, Div v) {
  if (d->n_memo == d->cap_memo) {
    d->cap_memo = d->cap_memo ? d->cap_memo * 2 : 16;
    d->memo_key = realloc(d->memo_key, sizeof(Split *) * (size_t)d->cap_memo);
    d->memo = realloc(d->memo, sizeof(Div) * (size_t)d->cap_memo);
  }
  d->memo_key[d->n_memo] = key;
  d->memo[d->n_memo++] = v;
}

static const Div *memo_get(Divider *d, const Split *key) {
  for (int i = 0; i < d->n_memo; i++)
    if (d->memo_key[i] == key) return &d->memo[i];
  return NULL;
}

static Div divide_sum(Divider *d, Sum e, int64_t mark_extent);

static void add_pred(Ctx *c, tir_Node **pred, DExpr e, int64_t extent) {
  tir_Node *cond = tir_cmp(TIR_LT, dx_expr(c, e), imm(c, extent));
  *pred = *pred ? tir_and(*pred, cond) : cond;
}

static Div divide_split(Divider *d, Split *e) {
  Ctx *c = d->c;
  const Div *hit = memo_get(d, e);
  if (hit) return *hit;
  if (e->src->id >= d->col->n_ids) return div_fail();
  const SplitList *l = &d->col->lists[e->src->id];
  Mark *m = e->src;
  if (m->var) {
    int inner = 0;
    for (int i = 0; i < d->n_inner; i++) inner |= d->inner_vars[i] == m->var;
    for (int i = 0; i < l->n; i++)
      memo_put(d, l->s[i], inner ? div_inner(dx_split(l->s[i]), l->s[i]->extent) : div_outer(dx_split(l->s[i]), l->s[i]->extent));
  } else {
    Div md = divide_sum(d, m->sum, m->extent);
    if (md.kind == K_FAIL) return md;
    /* one split covering the whole mark divides like the mark (a partial one, allowed by
     * the surjective check, must go through the boundary search below) */
    if (l->n == 1 && l->s[0]->lower == 1 && l->s[0]->extent == m->extent) return md;
    Mark *om = mark_of_sum(c, dx_as_sum(c, md.outer), md.outer_extent);
    Mark *im = mark_of_sum(c, dx_as_sum(c, md.inner), md.inner_extent);
    int boundary = md.kind == K_OUTER;
    char *used = arena(c, (size_t)l->n + 1);
    Split **inner = arena(c, sizeof(Split *) * (size_t)l->n), **outer = arena(c, sizeof(Split *) * (size_t)l->n);
    int ni = 0, no = 0;
    int64_t expected = 1;
    for (int i = 0; i < l->n; i++) {
      int j = -1;
      for (int k = 0; k < l->n && j < 0; k++)
        if (!used[k] && l->s[k]->lower == expected) j = k;
      if (j < 0) return div_fail();
      used[j] = 1;
      if (!boundary) inner[ni++] = l->s[j];
      else outer[no++] = l->s[j];
      if (!mul_ok(c, expected, l->s[j]->extent, &expected)) return div_fail();
      if (expected == md.inner_extent) boundary = 1;
    }
    if (!boundary) return div_fail();
    for (int i = 0; i < ni; i++)
      memo_put(d, inner[i], div_inner(dx_split(split_new(c, im, inner[i]->lower, inner[i]->extent, inner[i]->scale)), inner[i]->extent));
    for (int i = 0; i < no; i++)
      memo_put(d, outer[i],
               div_outer(dx_split(split_new(c, om, outer[i]->lower / outer[0]->lower, outer[i]->extent, outer[i]->scale)),
                         outer[i]->extent));
  }
  hit = memo_get(d, e);
  return hit ? *hit : div_fail();
}

/* A mark over args (inner to outer) with scales 1, e0, e0*e1, ... */
static Mark *mark_from_args(Ctx *c, Split **args, int n, int64_t base, tir_Node *sym) {
  Split **items = arena(c, sizeof(Split *) * (size_t)(n + 1));
  int64_t extent = 1;
  for (int i = 0; i < n; i++) {
    items[n - 1 - i] = split_new(c, args[i]->src, args[i]->lower, args[i]->extent, extent);
    if (!mul_ok(c, extent, args[i]->extent, &extent)) return NULL;
  }
  Sum s = {items, n, base, sym};
  return mark_of_sum(c, s, extent);
}

static Div divide_sum(Divider *d, Sum e, int64_t mark_extent) {
  Ctx *c = d->c;
  if (e.n == 0) {
    Div r = {K_MIXED, dx_sum(sum_const(0)), dx_sum(e), 1, 1};
    return r;
  }
  if (e.n == 1) {
    if (e.a[0]->scale != 1) return div_fail();
    Div r = divide_split(d, e.a[0]);
    if (r.kind == K_FAIL) return r;
    if (e.base || e.sym) {
      Sum in = dx_as_sum(c, r.inner);
      Sum nb = sum_of(c, in.a, in.n, 0, NULL);
      if (!add_ok(c, in.base, e.base, &nb.base)) return div_fail();
      nb.sym = sym_add(c, in.sym, e.sym, 1);
      r.inner = dx_sum(nb);
    }
    return r;
  }
  Split **outer = arena(c, sizeof(Split *) * (size_t)e.n), **inner = arena(c, sizeof(Split *) * (size_t)e.n);
  int no = 0, ni = 0, in_inner = 1, scale_is_one = 0;
  int64_t extent = 1;
  for (int i = e.n - 1; i >= 0; i--) {
    Split *arg = e.a[i];
    if (arg->scale == 1) scale_is_one = 1;
    Div ad = divide_split(d, arg);
    Split *na;
    if (ad.kind == K_INNER) {
      if (!in_inner) return div_fail();
      na = dx_as_split(c, ad.inner, ad.inner_extent);
      inner[ni++] = na;
    } else if (ad.kind == K_OUTER) {
      na = dx_as_split(c, ad.outer, ad.outer_extent);
      outer[no++] = na;
      in_inner = 0;
    } else {
      return div_fail();
    }
    if (!mul_ok(c, extent, na->extent, &extent)) return div_fail();
  }
  if (!scale_is_one) return div_fail();
  Mark *om = mark_from_args(c, outer, no, 0, NULL), *im = mark_from_args(c, inner, ni, e.base, e.sym);
  if (!om || !im) return div_fail();
  if (extent != mark_extent) {
    /* a predicate constrains this sum: it must lie wholly in one subspace */
    if (ni == 0) {
      add_pred(c, &d->outer_pred, dx_sum(om->sum), mark_extent);
      return div_outer(dx_sum(om->sum), mark_extent);
    }
    if (no == 0) {
      add_pred(c, &d->inner_pred, dx_sum(im->sum), mark_extent);
      return div_inner(dx_sum(im->sum), mark_extent);
    }
    return div_fail();
  }
  Div r = {K_MIXED, dx_sum(om->sum), dx_sum(im->sum), om->extent, im->extent};
  return r;
}

static tir_Node *simplified(tir_Analyzer *an, tir_Node *e) {
  tir_Node *s = tir_simplify(an, e);
  tir_release(e);
  return s;
}

/* One attempt of the division with constraint form `mode`. */
static int divide_attempt(tir_Analyzer *a, const tir_Node *const *bindings, int n, const tir_LoopIter *loops, int n_loops,
                          const tir_Var *const *inner_vars, int n_inner, const tir_Node *predicate, int level,
                          int simplify_trivial, int mode, tir_SubspaceDivision *out, char *why, int why_cap) {
  Ctx c;
  Sum *sums = calloc((size_t)n + 1, sizeof(Sum));
  int ok = attempt(&c, bindings, NULL, n, loops, n_loops, predicate, level, simplify_trivial, mode, sums);
  Collector col;
  collector_init(&c, &col, sums, ok ? n : 0);
  Divider d = {&c, &col, inner_vars, n_inner, NULL, NULL, 0, 0, NULL, NULL};
  Div *res = calloc((size_t)n + 1, sizeof(Div));
  /* a predicate that only narrowed one loop's range goes to that loop's side (the marks
   * know the narrowed range, the loops do not) */
  for (int i = 0; i < c.n_in && ok; i++) {
    const InputIter *it = &c.in[i];
    int inner = 0;
    for (int k = 0; k < n_inner; k++) inner |= inner_vars[k] == it->var;
    tir_Node **pred = inner ? &d.inner_pred : &d.outer_pred;
    tir_Node *v = (tir_Node *)&it->var->hdr;
    if (it->hi < it->loop_hi) {
      tir_Node *cond = tir_cmp(TIR_LT, tir_retain(v), tir_int_imm(v->dtype, it->hi));
      *pred = *pred ? tir_and(*pred, cond) : cond;
    }
    if (it->lo > it->loop_lo) {
      tir_Node *cond = tir_cmp(TIR_GE, tir_retain(v), tir_int_imm(v->dtype, it->lo));
      *pred = *pred ? tir_and(*pred, cond) : cond;
    }
  }
  for (int i = 0; i < n && ok; i++) {
    res[i] = divide_sum(&d, sums[i], 0);
    if (res[i].kind == K_FAIL || c.failed) {
      char *s = tir_print_expr(bindings[i]);
      fail(&c, "binding %d (%s) cannot be divided into a part over the outer loops times the inner extent plus a part over the inner loops",
           i, s ? s : "?");
      free(s);
      ok = 0;
    }
  }
  if (ok) {
    tir_Analyzer *an = a ? a : tir_analyzer_new();
    int mark = tir_analyzer_mark(an);
    /* loops of extent 1 stay as they are unless asked (they would fold to their minimum) */
    for (int i = 0; i < n_loops; i++)
      if (loops[i].extent > 1 || simplify_trivial)
        tir_analyzer_bind_bound(an, loops[i].var, loops[i].min, loops[i].min + loops[i].extent - 1);
    out->n = n;
    out->outer = calloc((size_t)n + 1, sizeof(tir_Node *));
    out->inner = calloc((size_t)n + 1, sizeof(tir_Node *));
    out->outer_extent = calloc((size_t)n + 1, sizeof(int64_t));
    out->inner_extent = calloc((size_t)n + 1, sizeof(int64_t));
    for (int i = 0; i < n; i++) {
      out->outer[i] = simplified(an, dx_expr(&c, res[i].outer));
      out->inner[i] = simplified(an, dx_expr(&c, res[i].inner));
      out->outer_extent[i] = res[i].outer_extent;
      out->inner_extent[i] = res[i].inner_extent;
    }
    out->outer_pred = d.outer_pred ? simplified(an, d.outer_pred) : tir_bool_imm(1);
    out->inner_pred = d.inner_pred ? simplified(an, d.inner_pred) : tir_bool_imm(1);
    d.outer_pred = d.inner_pred = NULL;
    tir_analyzer_reset(an, mark);
    if (!a) tir_analyzer_free(an);
  }
  tir_release(d.outer_pred);
  tir_release(d.inner_pred);
  copy_why(&c, why, why_cap);
  free(res);
  free(d.memo);
  free(d.memo_key);
  collector_free(&c, &col);
  free(sums);
  ctx_free(&c);
  return ok;
}

int tir_subspace_divide(tir_Analyzer *a, const tir_Node *const *bindings, int n, const tir_LoopIter *loops, int n_loops,
                        const tir_Var *const *inner_vars, int n_inner, const tir_Node *predicate, int level,
                        int simplify_trivial, tir_SubspaceDivision *out, char *why, int why_cap) {
  memset(out, 0, sizeof *out);
  char first[400] = "";
  int ok = 0;
  for (int mode = 0; mode < n_modes(predicate) && !ok; mode++) {
    ok = divide_attempt(a, bindings, n, loops, n_loops, inner_vars, n_inner, predicate, level, simplify_trivial, mode, out,
                        mode == 0 ? first : NULL, sizeof first);
  }
  if (why && why_cap > 0) snprintf(why, (size_t)why_cap, "%s", ok ? "" : first);
  return ok;
}

void tir_subspace_division_free(tir_SubspaceDivision *d) {
  if (!d) return;
  for (int i = 0; i < d->n; i++) {
    tir_release(d->outer[i]);
    tir_release(d->inner[i]);
  }
  free(d->outer);
  free(d->inner);
  free(d->outer_extent);
  free(d->inner_extent);
  tir_release(d->outer_pred);
  tir_release(d->inner_pred);
  memset(d, 0, sizeof *d);
}

/* ---- inverse of a bijective map (TVM IndexMap::Inverse, InverseAffineIterMap) ----
 * After detection every output is  split(M, lower, extent) + base  and every mark is covered
 * exactly by its splits.  Going backwards, a mark's value is the sum of its splits' values
 * times their lower factors; a fused mark's value V (over [0, extent)) gives each of its
 * splits the digit  floormod(floordiv(V, scale), extent)  (no floormod for the largest scale,
 * whose digit is already below its extent).  Marks are visited parents first (reverse
 * post-order), so a mark is read only after every split using it has contributed. */
typedef struct {
  Ctx *c;
  char *state; /* by mark id: 0 new, 1 visiting, 2 done */
  Mark **post;
  int n_post;
  tir_Node **acc; /* by mark id: the accumulated value (owned) */
} Inverter;

static void inv_visit(Inverter *iv, Mark *m) {
  if (iv->state[m->id]) return;
  iv->state[m->id] = 1;
  if (!m->var)
    for (int k = 0; k < m->sum.n; k++) inv_visit(iv, m->sum.a[k]->src);
  iv->state[m->id] = 2;
  iv->post[iv->n_post++] = m;
}

/* acc[m] += value * lower (value stolen) */
static void inv_add(Inverter *iv, const Split *s, tir_Node *value) {
  tir_Node *v = s->lower == 1 ? value : tir_mul(value, imm(iv->c, s->lower));
  tir_Node **slot = &iv->acc[s->src->id];
  *slot = *slot ? tir_add(*slot, v) : v;
}

int tir_iter_map_inverse(const tir_Node *const *outputs, int n_out, const tir_LoopIter *loops, int n_loops,
                         const tir_Var *const *new_vars, int64_t *out_min, int64_t *out_extent, tir_Node **inverse, char *why,
                         int why_cap) {
  Ctx c;
  Sum *sums = calloc((size_t)n_out + 1, sizeof(Sum));
  for (int l = 0; l < n_loops; l++) inverse[l] = NULL;
  int ok = attempt(&c, outputs, NULL, n_out, loops, n_loops, NULL, TIR_ITER_MAP_BIJECTIVE, 0, 0, sums);
  for (int o = 0; ok && o < n_out; o++) {
    if (sums[o].sym) {
      fail_expr(&c, "the output has a symbolic offset", outputs[o]);
      ok = 0;
      break;
    }
    out_min[o] = sums[o].base;
    out_extent[o] = sums[o].n ? sums[o].a[0]->extent : 1;
  }
  Inverter iv = {&c, NULL, NULL, 0, NULL};
  if (ok) {
    iv.state = calloc((size_t)c.n_marks + 1, 1);
    iv.post = calloc((size_t)c.n_marks + 1, sizeof(Mark *));
    iv.acc = calloc((size_t)c.n_marks + 1, sizeof(tir_Node *));
    for (int o = 0; o < n_out; o++)
      if (sums[o].n) inv_visit(&iv, sums[o].a[0]->src);
    for (int o = 0; o < n_out; o++) {
      if (!sums[o].n) continue;
      tir_Node *nv = tir_retain(&new_vars[o]->hdr);
      inv_add(&iv, sums[o].a[0], sums[o].base ? tir_sub(nv, imm(&c, sums[o].base)) : nv);
    }
    for (int k = iv.n_post - 1; k >= 0 && ok; k--) {
      Mark *m = iv.post[k];
      tir_Node *v = iv.acc[m->id];
      if (!v) continue; /* cannot happen: a visited mark has a use */
      if (m->var) {
        for (int l = 0; l < n_loops; l++)
          if (loops[l].var == m->var && !inverse[l])
            inverse[l] = m->var_min ? tir_add(tir_retain(v), tir_int_imm(v->dtype, m->var_min)) : tir_retain(v);
        continue;
      }
      if (m->sum.sym) {
        fail(&c, "a fused iterator has a symbolic offset");
        ok = 0;
        break;
      }
      int top = -1;
      for (int q = 0; q < m->sum.n; q++)
        if (top < 0 || m->sum.a[q]->scale > m->sum.a[top]->scale) top = q;
      for (int q = 0; q < m->sum.n; q++) {
        const Split *s = m->sum.a[q];
        tir_Node *d = m->sum.base ? tir_sub(tir_retain(v), imm(&c, m->sum.base)) : tir_retain(v);
        if (s->scale != 1) d = tir_floordiv(d, imm(&c, s->scale));
        if (q != top) d = tir_floormod(d, imm(&c, s->extent));
        inv_add(&iv, s, d);
      }
    }
    /* loops no output uses have extent 1 (bijective detection checked it): their minimum */
    for (int l = 0; l < n_loops && ok; l++)
      if (!inverse[l]) {
        if (loops[l].extent != 1) {
          fail(&c, "loop variable %s is not recovered by the inverse", loops[l].var->name);
          ok = 0;
        } else {
          inverse[l] = tir_int_imm(loops[l].var->hdr.dtype, loops[l].min);
        }
      }
  }
  if (ok) {
    tir_Analyzer *an = tir_analyzer_new();
    for (int o = 0; o < n_out; o++) tir_analyzer_bind_bound(an, new_vars[o], out_min[o], out_min[o] + out_extent[o] - 1);
    for (int l = 0; l < n_loops; l++) inverse[l] = simplified(an, inverse[l]);
    tir_analyzer_free(an);
  } else {
    for (int l = 0; l < n_loops; l++) {
      tir_release(inverse[l]);
      inverse[l] = NULL;
    }
  }
  copy_why(&c, why, why_cap);
  if (iv.acc)
    for (int i = 0; i < c.n_marks; i++) tir_release(iv.acc[i]);
  free(iv.acc);
  free(iv.state);
  free(iv.post);
  free(sums);
  ctx_free(&c);
  return ok;
}
