/* compute_location.c -- the shared work of compute_at and reverse_compute_at (TVM
 * src/tir/schedule/primitive/compute_at.cc; see shared/reference digest section 3.1).
 *
 * The moved block "provides" a region (compute_at: what it writes; reverse: what it
 * reads); the dependent blocks under the target loop "require" a region (compute_at:
 * what consumers read; reverse: what producers write).  Required regions are relaxed
 * over the loops between each dependent block and the target loop (and, for compute_at
 * into shared memory, over the thread loops above it: a shared tile serves the whole
 * CTA).  The block's iteration domain is solved from them, new loops are generated, and
 * the block is moved to just before its first consumer (after its last producer).
 */
#include <stdlib.h>
#include <string.h>

#include "dataflow.h"
#include "tir/scope.h"

typedef struct {
  tir_Node *lo, *hi; /* owned; NULL = unconstrained */
} Dom;

static void dom_union(tir_Analyzer *an, Dom *d, tir_Node *lo, tir_Node *hi) {
  if (!d->lo) {
    d->lo = lo;
    d->hi = hi;
    return;
  }
  tir_Node *nl = tir_simplify(an, lo), *nh = tir_simplify(an, hi);
  tir_release(lo);
  tir_release(hi);
  tir_Node *a = tir_min(d->lo, nl), *b = tir_max(d->hi, nh);
  d->lo = tir_simplify(an, a);
  d->hi = tir_simplify(an, b);
  tir_release(a);
  tir_release(b);
}

/* Solves "provided index p covers [lo, hi]" for the block var in p. */
static int solve_dim(const tir_Node *p, const tir_Node *lo, const tir_Node *hi, const tir_Var **var, tir_Node **vlo,
                     tir_Node **vhi) {
  int64_t c;
  switch (p->kind) {
    case TIR_Var:
      *var = (const tir_Var *)p;
      *vlo = tir_retain(lo);
      *vhi = tir_retain(hi);
      return 1;
    case TIR_Add:
    case TIR_Sub: {
      const tir_Add *a = (const tir_Add *)p;
      if (p->kind == TIR_Sub && tir_is_const_int(a->a, &c)) {
        /* c - x in [lo, hi]  <=>  x in [c - hi, c - lo] (e.g. a reversed index) */
        tir_Node *nlo = tir_sub(tir_int_imm(lo->dtype, c), R((tir_Node *)hi)), *nhi = tir_sub(tir_int_imm(hi->dtype, c), R((tir_Node *)lo));
        int r = solve_dim(a->b, nlo, nhi, var, vlo, vhi);
        tir_release(nlo);
        tir_release(nhi);
        return r;
      }
      if (!tir_is_const_int(a->b, &c)) return 0;
      if (p->kind == TIR_Add) c = -c;
      tir_Node *nlo = tir_add(R((tir_Node *)lo), tir_int_imm(lo->dtype, c)), *nhi = tir_add(R((tir_Node *)hi), tir_int_imm(hi->dtype, c));
      int r = solve_dim(a->a, nlo, nhi, var, vlo, vhi);
      tir_release(nlo);
      tir_release(nhi);
      return r;
    }
    case TIR_Mul: {
      const tir_Mul *m = (const tir_Mul *)p;
      if (!tir_is_const_int(m->b, &c) || c <= 0) return 0;
      tir_Node *nlo = tir_floordiv(R((tir_Node *)lo), tir_int_imm(lo->dtype, c));
      tir_Node *nhi = tir_floordiv(R((tir_Node *)hi), tir_int_imm(hi->dtype, c));
      int r = solve_dim(m->a, nlo, nhi, var, vlo, vhi);
      tir_release(nlo);
      tir_release(nhi);
      return r;
    }
    case TIR_FloorDiv: {
      const tir_FloorDiv *d = (const tir_FloorDiv *)p;
      if (!tir_is_const_int(d->b, &c) || c <= 0) return 0;
      tir_Node *nlo = tir_mul(R((tir_Node *)lo), tir_int_imm(lo->dtype, c));
      tir_Node *nhi = tir_add(tir_mul(R((tir_Node *)hi), tir_int_imm(hi->dtype, c)), tir_int_imm(hi->dtype, c - 1));
      int r = solve_dim(d->a, nlo, nhi, var, vlo, vhi);
      tir_release(nlo);
      tir_release(nhi);
      return r;
    }
    default: return 0;
  }
}

/* A region dimension [min, min + extent) covers [lo, hi]: with extent 1 this is
 * solve_dim on min; with a constant extent E and min = x*E (+/- d) (a block writing whole
 * tiles, e.g. a blockized block) element e lies in the tile of x = (e - d) // E. */
static int solve_region_dim(const tir_Range *r, const tir_Node *lo, const tir_Node *hi, const tir_Var **var, tir_Node **vlo,
                            tir_Node **vhi) {
  if (tir_is_one(r->extent)) return solve_dim(r->min, lo, hi, var, vlo, vhi);
  int64_t e, d = 0, c;
  if (!tir_is_const_int(r->extent, &e) || e <= 1) return 0;
  const tir_Node *base = r->min;
  if ((base->kind == TIR_Add || base->kind == TIR_Sub) && tir_is_const_int(((const tir_Add *)base)->b, &c)) {
    d = base->kind == TIR_Add ? c : -c;
    base = ((const tir_Add *)base)->a;
  }
  if (base->kind != TIR_Mul || !tir_is_const_int(((const tir_Mul *)base)->b, &c) || c != e) return 0;
  tir_Node *nlo = tir_floordiv(tir_sub(R((tir_Node *)lo), tir_int_imm(lo->dtype, d)), tir_int_imm(lo->dtype, e));
  tir_Node *nhi = tir_floordiv(tir_sub(R((tir_Node *)hi), tir_int_imm(hi->dtype, d)), tir_int_imm(hi->dtype, e));
  int ok = solve_dim(((const tir_Mul *)base)->a, nlo, nhi, var, vlo, vhi);
  tir_release(nlo);
  tir_release(nhi);
  return ok;
}

/* The digit of E an index takes: floormod(floordiv(E, lo), hi / lo) (hi 0: no floormod), as
 * transform_layout's tiled maps write them (v // 96, v // 32 % 3, v % 32) and layout
 * transforms read them ((v1 * 8 + v4) // 16, (v1 * 8 + v4) % 16). */
static int as_digit(const tir_Node *e, const tir_Node **E, int64_t *lo, int64_t *hi) {
  int64_t c, d;
  *lo = 1, *hi = 0;
  if (e->kind == TIR_FloorMod && tir_is_const_int(((const tir_FloorMod *)e)->b, &c) && c > 0) {
    const tir_Node *x = ((const tir_FloorMod *)e)->a;
    if (x->kind == TIR_FloorDiv && tir_is_const_int(((const tir_FloorDiv *)x)->b, &d) && d > 0 && c <= INT64_MAX / d) {
      *lo = d, *hi = d * c;
      x = ((const tir_FloorDiv *)x)->a;
    } else {
      *hi = c;
    }
    *E = x;
    return 1;
  }
  if (e->kind == TIR_FloorDiv && tir_is_const_int(((const tir_FloorDiv *)e)->b, &c) && c > 0) {
    *lo = c;
    *E = ((const tir_FloorDiv *)e)->a;
    return 1;
  }
  return 0;
}

/* E in [lo, hi] for the block variable it pins: E itself, what solve_dim solves, or
 * c * v + w with w a block variable whose domain lies in [0, c) (w then ranges freely). */
static int solve_expr(const tir_Block *blk, const tir_Node *E, tir_Node *lo, tir_Node *hi, const tir_Var **var, tir_Node **vlo,
                      tir_Node **vhi) {
  if (solve_dim(E, lo, hi, var, vlo, vhi)) return 1;
  if (E->kind != TIR_Add) return 0;
  const tir_Add *ad = (const tir_Add *)E;
  for (int side = 0; side < 2; side++) {
    const tir_Node *m = side ? ad->b : ad->a, *w = side ? ad->a : ad->b;
    int64_t c;
    if (m->kind != TIR_Mul || !tir_is_const_int(((const tir_Mul *)m)->b, &c) || c <= 1 || w->kind != TIR_Var) continue;
    const tir_Node *v = ((const tir_Mul *)m)->a;
    if (v->kind != TIR_Var) continue;
    int ok = 0;
    for (int q = 0; q < blk->iter_vars->size; q++) {
      const tir_IterVar *iv = (const tir_IterVar *)blk->iter_vars->items[q];
      int64_t mn, ex;
      if (&iv->var->hdr == w && tir_is_const_int(iv->dom->min, &mn) && tir_is_const_int(iv->dom->extent, &ex) && mn >= 0 &&
          mn + ex <= c)
        ok = 1;
    }
    if (!ok) continue;
    *var = (const tir_Var *)v;
    *vlo = tir_floordiv(R(lo), tir_int_imm(lo->dtype, c));
    *vhi = tir_floordiv(R(hi), tir_int_imm(hi->dtype, c));
    return 1;
  }
  return 0;
}

/* Provided point indices that are digits of one expression E, together making up E (E = sum
 * lo_k * digit_k: the lowest digit starts at 1, each ends where the next starts, the highest
 * has no floormod): the required box [lo'_k, hi'_k] of those indices needs E in
 * [sum lo_k * lo'_k, sum lo_k * hi'_k] (E grows with every digit).  Solving the dimensions one
 * by one would only use the highest digit (96 values of v for a 32-element tile).  Marks the
 * dimensions used in *used (bits). */
static int solve_digits(tir_Analyzer *an, const tir_Block *blk, const tir_Array *region, const Dom *req, const tir_Var **var,
                        tir_Node **vlo, tir_Node **vhi, unsigned *used_dims) {
  int n = region->size;
  if (n < 2 || n > 16) return 0;
  int64_t lo[16], hi[16];
  const tir_Node *E = NULL;
  int dims[16], nd = 0;
  for (int k = 0; k < n; k++) {
    const tir_Range *r = (const tir_Range *)region->items[k];
    const tir_Node *Ek;
    int64_t l, h;
    if (!tir_is_one(r->extent) || !req[k].lo || !as_digit(r->min, &Ek, &l, &h)) continue;
    if (E && !tir_expr_deep_equal(E, Ek)) continue;
    E = Ek;
    lo[nd] = l, hi[nd] = h, dims[nd++] = k;
  }
  if (nd < 2) return 0;
  /* the digits chain from 1 upwards without gaps and the highest is unbounded */
  int64_t at = 1;
  int used[16] = {0};
  for (int step = 0; step < nd; step++) {
    int k = -1;
    for (int q = 0; q < nd; q++)
      if (!used[q] && lo[q] == at) k = q;
    if (k < 0) return 0;
    used[k] = 1;
    if (step == nd - 1) {
      if (hi[k] != 0) return 0;
    } else {
      if (hi[k] == 0) return 0;
      at = hi[k];
    }
  }
  tir_Node *a = NULL, *b = NULL;
  for (int q = 0; q < nd; q++) {
    const Dom *rq = &req[dims[q]];
    tir_DType t = rq->lo->dtype;
    tir_Node *x = tir_mul(R(rq->lo), tir_int_imm(t, lo[q])), *y = tir_mul(R(rq->hi), tir_int_imm(t, lo[q]));
    a = a ? tir_add(a, x) : x;
    b = b ? tir_add(b, y) : y;
  }
  tir_Node *ea = tir_simplify_take(an, a), *eb = tir_simplify_take(an, b);
  tir_Node *l0 = NULL, *h0 = NULL;
  int ok = solve_expr(blk, E, ea, eb, var, &l0, &h0);
  tir_release(ea);
  tir_release(eb);
  if (!ok) return 0;
  *vlo = tir_simplify_take(an, l0);
  *vhi = tir_simplify_take(an, h0);
  *used_dims = 0;
  for (int q = 0; q < nd; q++) *used_dims |= 1u << dims[q];
  return 1;
}

typedef struct {
  const tir_Block *moved;
  int reverse;
} DepCtx;

/* compute_at: consumers (read what moved writes); reverse: producers (write what moved reads). */
static int is_dependent(const tir_Block *b, const DepCtx *c) {
  if (b == c->moved) return 0;
  return c->reverse ? sch_is_producer_of(b, c->moved) : sch_is_producer_of(c->moved, b);
}

static int subtree_has_dependent(const tir_Node *stmt, const DepCtx *c, int want_consumer) {
  const tir_BlockRealize **blocks;
  int n = sch_child_blocks(stmt, &blocks);
  if (stmt->kind == TIR_BlockRealize) n = 0; /* handled below */
  int r = 0;
  for (int i = 0; i < n && !r; i++) {
    const tir_Block *b = blocks[i]->block;
    if (b == c->moved) continue;
    r = want_consumer ? sch_is_producer_of(c->moved, b) : sch_is_producer_of(b, c->moved);
  }
  free(blocks);
  if (stmt->kind == TIR_BlockRealize) {
    const tir_Block *b = ((const tir_BlockRealize *)stmt)->block;
    if (b != c->moved) r = want_consumer ? sch_is_producer_of(c->moved, b) : sch_is_producer_of(b, c->moved);
  }
  return r;
}

static int is_thread_idx(const tir_For *f) {
  return f->kind == TIR_FOR_THREAD_BINDING && strncmp(f->thread_tag, "threadIdx.", 10) == 0;
}

static int relax_shared(const tir_Buffer *b) {
  return tir_scope_is_shared(b->scope);
}

/* Hull of buf's region in `regions` of realize br, relaxed over the loops between the
 * scope block and br (bindings substituted).  Owned Array of Range, or NULL. */
static tir_Array *scope_hull(tir_Analyzer *an, const tir_Block *scope, const tir_BlockRealize *br, const tir_Array *regions,
                             const tir_Buffer *buf) {
  const tir_Array *reg = sch_region_of(regions, buf);
  if (!reg) return NULL;
  SchPath p;
  if (!sch_path_to(&scope->hdr, &br->hdr, &p)) return NULL;
  tir_DomEntry rel[SCH_MAX_DEPTH];
  int nrel = 0;
  for (int q = 0; q < p.n; q++)
    if (p.nodes[q]->kind == TIR_For) sch_loop_dom((const tir_For *)p.nodes[q], &rel[nrel++]);
  tir_Node *sub = sch_substitute_bindings(br, &reg->hdr);
  tir_Array *relaxed = tir_relax_region_pred(an, (tir_Array *)sub, rel, nrel, buf->shape, br->predicate);
  tir_release(sub);
  sch_doms_free(rel, nrel);
  return relaxed;
}

/* reverse_compute_at regenerates the consumer's loops from what its producers write: the
 * parts of buf it reads that no producer writes (e.g. the caller's data in an output
 * buffer a producer fills partly) would never be read.  1 when the producers' hull does not
 * provably cover what the consumer reads. */
static int producers_miss_reads(const tir_Block *scope, const tir_BlockRealize *cons, const tir_Buffer *buf) {
  const tir_BlockRealize **all;
  int n = sch_child_blocks(&scope->hdr, &all), nd = buf->shape->size, bad = 0;
  tir_Analyzer *an = tir_analyzer_new();
  Dom *prod = calloc((size_t)nd + 1, sizeof *prod);
  for (int i = 0; i < n; i++) {
    if (all[i] == cons || !sch_block_writes(all[i]->block, buf)) continue;
    tir_Array *h = scope_hull(an, scope, all[i], all[i]->block->writes, buf);
    if (!h) continue;
    for (int k = 0; k < nd && k < h->size; k++) {
      const tir_Range *r = (const tir_Range *)h->items[k];
      dom_union(an, &prod[k], R(r->min), tir_sub(tir_add(R(r->min), R(r->extent)), tir_int_imm(r->min->dtype, 1)));
    }
    tir_release(h);
  }
  tir_Array *c = scope_hull(an, scope, cons, cons->block->reads, buf);
  for (int k = 0; c && k < nd && k < c->size && !bad; k++) {
    const tir_Range *r = (const tir_Range *)c->items[k];
    if (!prod[k].lo) continue;
    tir_Node *c1 = tir_cmp(TIR_LE, R(prod[k].lo), R(r->min));
    tir_Node *c2 = tir_cmp(TIR_LE, tir_add(R(r->min), R(r->extent)), tir_add(R(prod[k].hi), tir_int_imm(r->min->dtype, 1)));
    bad = !tir_can_prove(an, c1) || !tir_can_prove(an, c2);
    tir_release(c1);
    tir_release(c2);
  }
  tir_release(c);
  for (int k = 0; k < nd; k++) {
    tir_release(prod[k].lo);
    tir_release(prod[k].hi);
  }
  free(prod);
  tir_analyzer_free(an);
  free(all);
  return bad;
}

/* lo is a sum of terms c*l (c a constant, l a loop variable) plus a constant m: 1 with the
 * parts (at most max terms, in the order found). */
static int as_tile_terms(const tir_Node *lo, const tir_Var **l, int64_t *c, int *n, int max, int64_t *m) {
  if (lo->kind == TIR_Add || lo->kind == TIR_Sub) {
    const tir_Add *a = (const tir_Add *)lo;
    int64_t k;
    if (tir_is_const_int(a->b, &k)) {
      if (!as_tile_terms(a->a, l, c, n, max, m)) return 0;
      *m += lo->kind == TIR_Sub ? -k : k;
      return 1;
    }
    if (lo->kind == TIR_Sub) return 0;
    return as_tile_terms(a->a, l, c, n, max, m) && as_tile_terms(a->b, l, c, n, max, m);
  }
  int64_t k = 1;
  if (lo->kind == TIR_Mul && tir_is_const_int(((const tir_Mul *)lo)->b, &k)) lo = ((const tir_Mul *)lo)->a;
  if (lo->kind != TIR_Var || *n >= max || k < 1) return 0;
  l[*n] = (const tir_Var *)lo;
  c[(*n)++] = k;
  return 1;
}

/* reverse_compute_at of a reduction whose reduction variables get narrower domains runs the
 * reduction in pieces, one per loop iteration: each instance must then run exactly once
 * (an instance run twice adds twice).  Accepted: every narrowed variable k (spatial or
 * reduction) ranges over [lo, lo + e - 1] with lo = c1*l1 + .. + cr*lr + m, distinct loops
 * l1..lr between the scope and the target tiling k's domain exactly (mixed radix: sorted by
 * c descending, e = cr, c(q) = c(q+1) * extent(l(q+1)), c1 * extent(l1) = k's extent, m its
 * min; e.g. a column tiled by a CTA loop and a warp loop inside it), and every such loop of
 * extent > 1 is one of them.  Returns 0 when so. */
static int reduction_split_exact(const SchPath *pl, int sl, const tir_Block *blk, tir_Node *const *los,
                                 tir_Node *const *extents, const int *narrow) {
  const tir_For *loops[SCH_MAX_DEPTH];
  int nl = 0;
  for (int q = sl + 1; q < pl->n; q++)
    if (pl->nodes[q]->kind == TIR_For && !tir_is_one(((const tir_For *)pl->nodes[q])->extent))
      loops[nl++] = (const tir_For *)pl->nodes[q];
  int used[SCH_MAX_DEPTH] = {0};
  for (int k = 0; k < blk->iter_vars->size; k++) {
    if (!narrow[k]) continue;
    const tir_IterVar *iv = (const tir_IterVar *)blk->iter_vars->items[k];
    const tir_Var *lv[SCH_MAX_DEPTH];
    int64_t cs[SCH_MAX_DEPTH], m = 0, e, dmin, dext;
    int nt = 0;
    if (!as_tile_terms(los[k], lv, cs, &nt, SCH_MAX_DEPTH, &m) || nt == 0 || !tir_is_const_int(extents[k], &e)) return -1;
    if (!tir_is_const_int(iv->dom->min, &dmin) || !tir_is_const_int(iv->dom->extent, &dext) || m != dmin) return -1;
    /* terms by c descending (few: insertion sort) */
    for (int a = 1; a < nt; a++)
      for (int b = a; b > 0 && cs[b] > cs[b - 1]; b--) {
        int64_t tc = cs[b];
        cs[b] = cs[b - 1];
        cs[b - 1] = tc;
        const tir_Var *tv = lv[b];
        lv[b] = lv[b - 1];
        lv[b - 1] = tv;
      }
    int64_t span = dext;
    for (int t = 0; t < nt; t++) {
      int at = -1;
      int64_t le;
      for (int q = 0; q < nl; q++)
        if (loops[q]->loop_var == lv[t]) at = q;
      if (at < 0 || used[at] || !tir_is_const_int(loops[at]->extent, &le) || le * cs[t] != span || !tir_is_zero(loops[at]->min))
        return -1;
      used[at] = 1;
      span = cs[t];
    }
    if (span != e) return -1;
  }
  for (int q = 0; q < nl; q++)
    if (!used[q]) return -1;
  return 0;
}

/* Conjuncts of pred that use none of the n vars (owned And of them, or NULL). */
static tir_Node *conjuncts_without(const tir_Node *pred, const tir_Var *const *vars, int n) {
  if (pred->kind == TIR_And) {
    const tir_And *a = (const tir_And *)pred;
    tir_Node *l = conjuncts_without(a->a, vars, n), *r = conjuncts_without(a->b, vars, n);
    if (!l) return r;
    if (!r) return l;
    return tir_and(l, r);
  }
  if (tir_is_one(pred)) return NULL;
  for (int i = 0; i < n; i++)
    if (tir_uses_var(pred, vars[i])) return NULL;
  return tir_retain(pred);
}

/* reverse_compute_at: a producer under the target loop whose predicate restricts the
 * iterations of the loops at or above it (e.g. "j_1 < 1" after a split that does not
 * divide, with j_1 bound to a thread) writes nothing in the other iterations, but the
 * consumer's domain is solved from the regions alone.  The consumer takes over those
 * conditions.  Returns them (owned; NULL: none), or sets *conflict when producers under
 * the loop carry different ones. */
static tir_Node *producer_guard(const tir_For *loop, const DepCtx *dc, int *conflict) {
  const tir_BlockRealize **deps;
  int nd = sch_child_blocks(loop->body, &deps);
  tir_Node *guard = NULL;
  int n_with = 0, n_prod = 0;
  for (int d = 0; d < nd; d++) {
    if (deps[d]->block == dc->moved || !is_dependent(deps[d]->block, dc)) continue;
    n_prod++;
    SchPath pd;
    sch_path_to(loop->body, &deps[d]->hdr, &pd);
    const tir_Var *inner[SCH_MAX_DEPTH];
    int ni = 0;
    for (int q = 0; q < pd.n; q++)
      if (pd.nodes[q]->kind == TIR_For) inner[ni++] = ((const tir_For *)pd.nodes[q])->loop_var;
    tir_Node *g = conjuncts_without(deps[d]->predicate, inner, ni);
    if (!g) continue;
    n_with++;
    if (!guard) guard = g;
    else {
      if (!tir_expr_deep_equal(guard, g)) *conflict = 1;
      tir_release(g);
    }
  }
  free(deps);
  if (guard && n_with != n_prod) *conflict = 1;
  return guard;
}

static void free_reqs(Dom **reqs, const tir_Array *provided) {
  for (int pr = 0; pr < provided->size; pr++) {
    if (!reqs[pr]) continue;
    int nd = ((const tir_BufferRegion *)provided->items[pr])->region->size;
    for (int k = 0; k < nd; k++) {
      tir_release(reqs[pr][k].lo);
      tir_release(reqs[pr][k].hi);
    }
    free(reqs[pr]);
  }
  free(reqs);
}

/* ---- exactness of a producer's write region (reverse_compute_at) ----
 * The regions solved above are relaxed, i.e. over-approximated.  Whether the consumer reads
 * only what was produced needs the opposite: the producer must write every element of its
 * relaxed box.  That is proven for write indices that are, in the loops between the target
 * loop and the producer, dense mixed-radix sums (coefficients 1, e1, e1*e2, ... in one
 * dimension, each loop in one dimension at most), with a predicate that only clips whole
 * dimensions (the form a split that does not divide leaves). */
typedef struct {
  const tir_Var *var;
  int64_t extent, coef;
  int dim;
} LinTerm;

/* Adds scale * e to terms (loop variables of vars[0..nv)); 0 when e is not linear in them. */
static int linear_terms(const tir_Node *e, int64_t scale, const tir_Var *const *vars, const int64_t *exts, int nv, LinTerm *terms,
                        int *nt, int dim) {
  int uses = 0;
  for (int i = 0; i < nv && !uses; i++) uses = tir_uses_var(e, vars[i]);
  if (!uses) return 1;
  int64_t c;
  switch (e->kind) {
    case TIR_Var:
      for (int i = 0; i < nv; i++)
        if ((const tir_Var *)e == vars[i]) {
          if (*nt >= SCH_MAX_DEPTH) return 0;
          terms[*nt].var = vars[i];
          terms[*nt].extent = exts[i];
          terms[*nt].coef = scale;
          terms[*nt].dim = dim;
          (*nt)++;
          return 1;
        }
      return 0;
    case TIR_Add:
    case TIR_Sub: {
      const tir_Add *a = (const tir_Add *)e;
      return linear_terms(a->a, scale, vars, exts, nv, terms, nt, dim) &&
             linear_terms(a->b, e->kind == TIR_Sub ? -scale : scale, vars, exts, nv, terms, nt, dim);
    }
    case TIR_Mul: {
      const tir_Mul *m = (const tir_Mul *)e;
      if (tir_is_const_int(m->b, &c)) return linear_terms(m->a, scale * c, vars, exts, nv, terms, nt, dim);
      if (tir_is_const_int(m->a, &c)) return linear_terms(m->b, scale * c, vars, exts, nv, terms, nt, dim);
      return 0;
    }
    case TIR_Cast: return linear_terms(((const tir_Cast *)e)->value, scale, vars, exts, nv, terms, nt, dim);
    default: return 0;
  }
}

/* Conjuncts of a predicate using inner loops must read "index_d < bound" (or <=, or
 * bound > index_d ...) for a whole write index of one dimension, or use only inner loops
 * that no write index uses and hold when those are 0 (their first iteration then writes
 * every element: e.g. "k_1 < 2" on a reduction loop). */
static int clips_dimensions(tir_Analyzer *an, const tir_Node *pred, const tir_Array *idx, const tir_Var *const *vars, int nv) {
  if (pred->kind == TIR_And)
    return clips_dimensions(an, ((const tir_And *)pred)->a, idx, vars, nv) &&
           clips_dimensions(an, ((const tir_And *)pred)->b, idx, vars, nv);
  int uses = 0, uses_indexed = 0;
  for (int i = 0; i < nv; i++) {
    if (!tir_uses_var(pred, vars[i])) continue;
    uses = 1;
    for (int d = 0; d < idx->size && !uses_indexed; d++) uses_indexed = tir_uses_var(idx->items[d], vars[i]);
  }
  if (!uses) return 1;
  if (!uses_indexed) {
    tir_Node **zeros = calloc((size_t)nv + 1, sizeof *zeros);
    for (int i = 0; i < nv; i++) zeros[i] = tir_int_imm(vars[i]->hdr.dtype, 0);
    tir_Node *at0 = tir_substitute(pred, nv, (tir_Var **)vars, zeros);
    int holds = tir_can_prove(an, at0);
    tir_release(at0);
    for (int i = 0; i < nv; i++) tir_release(zeros[i]);
    free(zeros);
    return holds;
  }
  if (pred->kind != TIR_LT && pred->kind != TIR_LE && pred->kind != TIR_GT && pred->kind != TIR_GE) return 0;
  const tir_LT *c = (const tir_LT *)pred;
  const tir_Node *side = (pred->kind == TIR_LT || pred->kind == TIR_LE) ? c->a : c->b;
  const tir_Node *bound = side == c->a ? c->b : c->a;
  for (int i = 0; i < nv; i++)
    if (tir_uses_var(bound, vars[i])) return 0;
  for (int d = 0; d < idx->size; d++)
    if (tir_can_prove_equal(NULL, side, idx->items[d])) return 1;
  return 0;
}

static int cmp_coef(const void *x, const void *y) {
  int64_t a = ((const LinTerm *)x)->coef, b = ((const LinTerm *)y)->coef;
  if (a < 0) a = -a;
  if (b < 0) b = -b;
  return (a > b) - (a < b);
}

/* The leaf blocks under (and including) p that write buf, in program order. */
static int leaf_writers(const tir_Node *n, const tir_Buffer *buf, const tir_BlockRealize **out, int cap) {
  int cnt = 0;
  if (n->kind == TIR_BlockRealize) {
    const tir_BlockRealize *br = (const tir_BlockRealize *)n;
    const tir_BlockRealize **kids;
    int nk = sch_child_blocks(&br->block->hdr, &kids);
    if (nk == 0 && sch_block_writes(br->block, buf) && cap > 0) out[cnt++] = br;
    for (int i = 0; i < nk && cnt < cap; i++) cnt += leaf_writers(&kids[i]->hdr, buf, out + cnt, cap - cnt);
    free(kids);
  }
  return cnt;
}

/* What leaf writer w of buf (under `loop`, possibly nested in outer blocks) writes in one
 * iteration of the loop: its box (owned Array of Range, relaxed over the loops in between),
 * or NULL when it cannot be shown to write all of that box.  an: what is known about the
 * loops at and above `loop`. */
static tir_Array *exact_box(tir_Analyzer *an, const tir_For *loop, const tir_BlockRealize *w, const tir_Buffer *buf) {
  const tir_Array *reg = sch_region_of(w->block->writes, buf);
  if (!reg) return NULL;
  SchPath pd;
  if (!sch_path_to(loop->body, &w->hdr, &pd)) return NULL;
  const tir_Var *vars[SCH_MAX_DEPTH];
  int64_t exts[SCH_MAX_DEPTH];
  tir_DomEntry doms[SCH_MAX_DEPTH];
  int nv = 0;
  for (int q = 0; q < pd.n; q++) {
    if (pd.nodes[q]->kind != TIR_For) continue;
    const tir_For *f = (const tir_For *)pd.nodes[q];
    if (!tir_is_const_int(f->extent, &exts[nv]) || !tir_is_zero(f->min)) {
      sch_doms_free(doms, nv);
      return NULL;
    }
    vars[nv] = f->loop_var;
    sch_loop_dom(f, &doms[nv]);
    nv++;
  }
  /* compose the bindings (and predicates) of the realizes from w up to the outermost */
  tir_Node *region = tir_retain(&reg->hdr), *pred = tir_bool_imm(1);
  for (int q = pd.n - 1; q >= 0; q--) {
    if (pd.nodes[q]->kind != TIR_BlockRealize) continue;
    const tir_BlockRealize *br = (const tir_BlockRealize *)pd.nodes[q];
    tir_Node *r2 = sch_substitute_bindings(br, region), *p2 = sch_substitute_bindings(br, pred);
    tir_release(region);
    tir_release(pred);
    region = r2;
    pred = tir_and(p2, tir_retain(br->predicate));
  }
  const tir_Array *rg = (const tir_Array *)region;
  tir_Array *idx = tir_array_new(rg->size);
  int ok = 1;
  for (int d = 0; d < rg->size; d++) {
    const tir_Range *r = (const tir_Range *)rg->items[d];
    idx->items[d] = tir_simplify(NULL, r->min);
    if (!tir_is_one(r->extent)) ok = 0; /* a block writing a range: not analyzed */
  }
  LinTerm terms[SCH_MAX_DEPTH];
  int nt = 0;
  for (int d = 0; d < idx->size && ok; d++) ok = linear_terms(idx->items[d], 1, vars, exts, nv, terms, &nt, d);
  /* each loop in one dimension at most, and dense per dimension */
  for (int i = 0; i < nt && ok; i++)
    for (int j = i + 1; j < nt && ok; j++)
      if (terms[i].var == terms[j].var) ok = 0;
  for (int d = 0; d < idx->size && ok; d++) {
    LinTerm dt[SCH_MAX_DEPTH];
    int n = 0;
    for (int i = 0; i < nt; i++)
      if (terms[i].dim == d && terms[i].extent > 1) dt[n++] = terms[i];
    qsort(dt, (size_t)n, sizeof *dt, cmp_coef);
    int64_t want = 1;
    for (int i = 0; i < n && ok; i++) {
      int64_t c = dt[i].coef < 0 ? -dt[i].coef : dt[i].coef;
      if (c != want) ok = 0;
      want = c * dt[i].extent;
    }
  }
  tir_Node *spred = tir_simplify(NULL, pred);
  if (ok && !tir_is_one(spred)) ok = clips_dimensions(an, spred, idx, vars, nv);
  tir_Array *box = ok ? tir_relax_region_pred(an, rg, doms, nv, buf->shape, spred) : NULL;
  tir_release(spred);
  tir_release(idx);
  tir_release(region);
  tir_release(pred);
  sch_doms_free(doms, nv);
  return box;
}

/* What the producers under `loop` write of buf in one iteration, for sure: the box of the
 * last leaf writer when there is one producer and every leaf writer of it is exact
 * (owned), else NULL. */
static tir_Array *produced_box(tir_Analyzer *an, const tir_For *loop, const DepCtx *dc, const tir_Buffer *buf) {
  const tir_BlockRealize **deps;
  int ndp = sch_child_blocks(loop->body, &deps), nprod = 0;
  const tir_BlockRealize *prod = NULL;
  for (int d = 0; d < ndp; d++) {
    if (deps[d]->block == dc->moved || !is_dependent(deps[d]->block, dc) || !sch_block_writes(deps[d]->block, buf)) continue;
    nprod++;
    prod = deps[d];
  }
  free(deps);
  if (nprod != 1) return NULL;
  const tir_BlockRealize *leaves[64];
  int nl = leaf_writers(&prod->hdr, buf, leaves, 64);
  tir_Array *box = NULL;
  for (int i = 0; i < nl; i++) {
    tir_Array *b = exact_box(an, loop, leaves[i], buf);
    tir_release(box);
    box = b;
    if (!b) break;
  }
  return box;
}

/* reverse_compute_at: the moved consumer, in one iteration of the target loop, may read
 * only what its producers under the loop write in that iteration.  Otherwise it would
 * read values produced in other iterations (later ones: not there yet; earlier ones: gone
 * once lowering allocates the buffer inside the loop) -- the domain solved above is an
 * over-approximation where a read index is not a plain function of one variable (e.g.
 * a convolution window).  Sets the error and returns -1 when that cannot be proven. */
static int reads_unproduced(tir_Schedule *s, const char *P, const SchPath *pl, const tir_BlockRealize *nbr,
                            tir_Var *const *loop_vars, tir_Node *const *extents, Dom *const *reqs, const tir_Var *lv,
                            const tir_For *loop, const DepCtx *dc) {
  const tir_Block *blk = nbr->block;
  int nv = blk->iter_vars->size, nd = 0, bad = 0;
  tir_DomEntry *doms = calloc((size_t)nv + 1, sizeof *doms);
  for (int k = 0; k < nv; k++) {
    if (!loop_vars[k]) continue;
    tir_Node *last = tir_sub(R(extents[k]), tir_int_imm(extents[k]->dtype, 1));
    doms[nd].var = loop_vars[k];
    doms[nd].set.min = tir_int_imm(extents[k]->dtype, 0);
    doms[nd].set.max = tir_simplify(NULL, last);
    tir_release(last);
    nd++;
  }
  tir_Analyzer *an = tir_analyzer_new();
  sch_bind_path(an, pl, pl->n);
  for (int pr = 0; pr < blk->reads->size && !bad; pr++) {
    if (!reqs[pr]) continue;
    const tir_BufferRegion *rr = (const tir_BufferRegion *)blk->reads->items[pr];
    tir_Array *box = produced_box(an, loop, dc, rr->buffer);
    if (!box) {
      sch_error(s, P, &nbr->block->hdr, "this block",
                "under loop %s, what the producers of block '%s' write of %s in one iteration is not a whole box (a "
                "fused or strided index, several producers, or a predicate that does not clip whole dimensions), so "
                "it cannot be shown that the block reads only values produced there",
                lv->name, blk->name, rr->buffer->name);
      bad = 1;
      break;
    }
    tir_Node *sub = sch_substitute_bindings(nbr, &rr->region->hdr);
    tir_Array *rel = tir_relax_region_pred(an, (tir_Array *)sub, doms, nd, rr->buffer->shape, nbr->predicate);
    tir_release(sub);
    for (int k = 0; k < rr->region->size && k < box->size && !bad; k++) {
      const tir_Range *q = (const tir_Range *)box->items[k];
      tir_Node *q_hi = tir_sub(tir_add(R(q->min), R(q->extent)), tir_int_imm(q->min->dtype, 1));
      const tir_Range *r = rel && k < rel->size ? (const tir_Range *)rel->items[k] : NULL;
      tir_Node *c1 = r ? tir_cmp(TIR_GE, R(r->min), R(q->min)) : NULL;
      tir_Node *c2 = r ? tir_cmp(TIR_LE, tir_sub(tir_add(R(r->min), R(r->extent)), tir_int_imm(r->min->dtype, 1)), R(q_hi))
                       : NULL;
      if (!r || !tir_can_prove(an, c1) || !tir_can_prove(an, c2)) {
        tir_Node *slo = tir_simplify(an, q->min), *shi = tir_simplify(an, q_hi);
        char *lo = tir_print_expr(slo), *hi = tir_print_expr(shi);
        tir_release(slo);
        tir_release(shi);
        sch_error(s, P, &nbr->block->hdr, "this block",
                  "under loop %s, block '%s' would read %s beyond what its producers write in one iteration (dimension "
                  "%d: they write %s .. %s there); it would use values produced in other iterations",
                  lv->name, blk->name, rr->buffer->name, k, lo, hi);
        free(lo);
        free(hi);
        bad = 1;
      }
      tir_release(c1);
      tir_release(c2);
      tir_release(q_hi);
    }
    tir_release(rel);
    tir_release(box);
  }
  tir_analyzer_free(an);
  for (int k = 0; k < nd; k++) {
    tir_release(doms[k].set.min);
    tir_release(doms[k].set.max);
  }
  free(doms);
  return bad ? -1 : 0;
}

int sch_compute_location(tir_Schedule *s, const char *P, int64_t uid, const tir_Var *lv, int preserve_unit_loops,
                         int index, int reverse) {
  int prior = reverse & 2;
  reverse &= 1;
  SchPath pb, pl;
  const tir_BlockRealize *br = sch_find_block(s->func->body, uid, &pb);
  if (!br) return tir_sched_block_realize(s, uid, P) ? 0 : -1;
  const tir_For *loop = sch_find_loop(s->func->body, lv, &pl);
  if (!loop) return tir_sched_loop(s, lv, P) ? 0 : -1;
  const tir_Block *blk = br->block;
  for (int i = 0; i < pb.n; i++)
    if (pb.nodes[i] == &loop->hdr)
      return sch_error(s, P, &loop->hdr, "an ancestor of the block",
                       "loop %s is an ancestor of block '%s'; the block can only move under a loop outside its own nest",
                       lv->name, blk->name);
  int sb = sch_scope_index(&pb), sl = sch_scope_index(&pl);
  if (sb < 0 || sl < 0 || pb.nodes[sb] != pl.nodes[sl])
    return sch_error(s, P, &loop->hdr, "this loop", "block '%s' and loop %s are not in the same scope (block)", blk->name,
                     lv->name);
  const tir_Block *scope = (const tir_Block *)pb.nodes[sb];
  if (sch_check_complete_or_reduction_block(s, P, scope, br)) return -1;
  /* the block's loops are regenerated from its iteration domain: a predicate that says more
   * than the domain would be lost */
  if (!sch_predicate_implied_by_domain(br))
    return sch_error(s, P, &br->hdr, "this block",
                     "block '%s' has a predicate that is not implied by its iteration domain; %s would drop it", blk->name, P);
  if (index < -2) return sch_error(s, P, &loop->hdr, "the target loop", "index %d is not valid: use -1, -2 or a position >= 0", index);
  if (!reverse)
    for (int i = 0; i < blk->writes->size; i++)
      if (sch_is_param_buffer(s->func, ((const tir_BufferRegion *)blk->writes->items[i])->buffer))
        return sch_error(s, P, &br->hdr, "this block",
                         "block '%s' writes the function's output %s; use reverse_compute_at to move consumers instead",
                         blk->name, ((const tir_BufferRegion *)blk->writes->items[i])->buffer->name);
  DepCtx dc = {blk, reverse};
  /* every dependent in the scope must be under the loop */
  const tir_BlockRealize **all;
  int n_all = sch_child_blocks(&scope->hdr, &all);
  int n_dep = 0, bidx = sch_block_index(all, n_all, br), first_in = -1, last_in = -1;
  for (int i = 0; i < n_all; i++) {
    if (sch_contains_stmt(loop->body, &all[i]->hdr)) {
      if (first_in < 0) first_in = i;
      last_in = i;
    }
    if (!is_dependent(all[i]->block, &dc)) continue;
    /* reverse: a producer that runs before the loop (no block of the loop seen yet) is done
     * when the loop starts, like a function input (the fused quantized GEMM's row sums of A
     * before the GEMM nest its epilogue moves into) */
    if (prior && first_in < 0 && !sch_contains_stmt(loop->body, &all[i]->hdr)) continue;
    n_dep++;
    if (!sch_contains_stmt(loop->body, &all[i]->hdr)) {
      sch_error(s, P, &all[i]->hdr, reverse ? "a producer outside the loop" : "a consumer outside the loop",
                "block '%s' %s block '%s' %s but is not under loop %s; %s", all[i]->block->name,
                reverse ? "writes what" : "reads what", blk->name, reverse ? "reads" : "writes", lv->name,
                reverse ? "reverse_compute_at needs every producer of the block under the loop"
                        : "compute_at needs every consumer of the block under the loop");
      tir_error_mark(&loop->hdr, "the target loop");
      free(all);
      return -1;
    }
  }
  if (n_dep == 0) {
    free(all);
    return sch_error(s, P, &br->hdr, "this block", "block '%s' has no %s under loop %s", blk->name,
                     reverse ? "producer" : "consumer", lv->name);
  }
  /* The block's work moves to the loop: compute_at runs it later (every block from its old
   * place to the end of the loop runs before some of it), reverse_compute_at earlier (from
   * the start of the loop to its old place).  Nothing in between may change what it reads,
   * nor (reverse) use what it writes.  TVM requires a "stage pipeline" scope for this. */
  if (!reverse ? bidx > first_in : bidx < last_in) {
    sch_error(s, P, &loop->hdr, "the target loop", "loop %s runs %s block '%s'; %s", lv->name, reverse ? "after" : "before",
              blk->name, reverse ? "reverse_compute_at moves a consumer into a loop of its producers that runs before it"
                                 : "compute_at moves a producer into a loop of its consumers that runs after it");
    tir_error_mark(&br->hdr, "the block");
    free(all);
    return -1;
  }
  for (int i = reverse ? first_in : bidx + 1; i < (reverse ? bidx : last_in + 1); i++) {
    const tir_Buffer *hit = NULL;
    const tir_Block *o = all[i]->block;
    int bad = 0;
    if (!reverse) bad = sch_writes_what_reads(o, blk, &hit);
    else bad = sch_touches_what_writes(o, blk, &hit);
    if (bad) {
      sch_error(s, P, &all[i]->hdr, "this block",
                reverse ? "block '%s' uses %s, which block '%s' writes, before the block's old place; moving the write up "
                          "under loop %s would change what it sees"
                        : "block '%s' writes %s, which block '%s' reads, after the block's old place; under loop %s the block "
                          "would read the new values",
                o->name, hit->name, blk->name, lv->name);
      tir_error_mark(&br->hdr, "the block");
      free(all);
      return -1;
    }
  }
  free(all);
  /* insertion position among the loop body's children */
  int nch = sch_seq_size(loop->body), first_cons = nch, last_prod = -1;
  for (int i = 0; i < nch; i++) {
    const tir_Node *ch = sch_seq_item(loop->body, i);
    if (first_cons == nch && subtree_has_dependent(ch, &dc, 1)) first_cons = i;
    if (subtree_has_dependent(ch, &dc, 0)) last_prod = i;
  }
  /* as TVM: -1 = just before the first consumer, -2 = just after the last producer */
  int pos = index == -2 ? last_prod + 1 : first_cons;
  if (last_prod >= first_cons)
    return sch_error(s, P, &loop->hdr, "the target loop",
                     "under loop %s a producer of block '%s' comes after one of its consumers: there is no place to put it",
                     lv->name, blk->name);
  if (index >= 0) {
    if (index <= last_prod || index > first_cons)
      return sch_error(s, P, &loop->hdr, "the target loop", "index %d is not a valid position: valid positions are %d..%d",
                       index, last_prod + 1, first_cons);
    pos = index;
  }
  /* required regions per buffer, relaxed */
  tir_Analyzer *an = tir_analyzer_new();
  sch_bind_path(an, &pl, pl.n);
  const tir_Array *provided = reverse ? blk->reads : blk->writes;
  int nv = blk->iter_vars->size;
  Dom *doms = calloc((size_t)nv + 1, sizeof *doms);
  int *full = calloc((size_t)nv + 1, sizeof *full), *hit = calloc((size_t)nv + 1, sizeof *hit);
  int cover_bad = 0;
  /* reverse: what the producers write in one iteration, per read buffer (for the check
   * that the consumer reads nothing else there) */
  Dom **reqs = calloc((size_t)provided->size + 1, sizeof *reqs);
  const tir_BlockRealize **deps;
  int nd = sch_child_blocks(loop->body, &deps);
  for (int pr = 0; pr < provided->size; pr++) {
    const tir_BufferRegion *preg = (const tir_BufferRegion *)provided->items[pr];
    const tir_Buffer *buf = preg->buffer;
    /* union of required ranges per dimension */
    int ndim = preg->region->size;
    Dom *req = calloc((size_t)ndim + 1, sizeof *req);
    int any = 0;
    for (int d = 0; d < nd; d++) {
      const tir_Block *db = deps[d]->block;
      if (db == blk || !is_dependent(db, &dc)) continue;
      const tir_Array *dreg = sch_region_of(reverse ? db->writes : db->reads, buf);
      if (!dreg) continue;
      /* loops between the target loop and the dependent block (and thread loops above for shared) */
      SchPath pd;
      sch_path_to(loop->body, &deps[d]->hdr, &pd);
      tir_DomEntry rel[SCH_MAX_DEPTH];
      int nrel = 0;
      for (int q = 0; q < pd.n; q++)
        if (pd.nodes[q]->kind == TIR_For) sch_loop_dom((const tir_For *)pd.nodes[q], &rel[nrel++]);
      if (!reverse && relax_shared(buf))
        for (int q = sl + 1; q < pl.n; q++)
          if (pl.nodes[q]->kind == TIR_For && is_thread_idx((const tir_For *)pl.nodes[q]))
            sch_loop_dom((const tir_For *)pl.nodes[q], &rel[nrel++]);
      tir_Node *sub = sch_substitute_bindings(deps[d], &dreg->hdr);
      tir_Array *relaxed = tir_relax_region_pred(an, (tir_Array *)sub, rel, nrel, buf->shape, deps[d]->predicate);
      tir_release(sub);
      sch_doms_free(rel, nrel);
      if (!relaxed) continue;
      any = 1;
      for (int k = 0; k < ndim && k < relaxed->size; k++) {
        const tir_Range *r = (const tir_Range *)relaxed->items[k];
        tir_Node *hi = tir_sub(tir_add(R(r->min), R(r->extent)), tir_int_imm(r->min->dtype, 1));
        dom_union(an, &req[k], R(r->min), hi);
      }
      tir_release(relaxed);
    }
    if (any) {
      for (int q = 0; q < nv; q++) hit[q] = 0;
      const tir_Var *jv = NULL;
      tir_Node *jlo = NULL, *jhi = NULL;
      unsigned joint_dims = 0;
      int joint = solve_digits(an, blk, preg->region, req, &jv, &jlo, &jhi, &joint_dims);
      if (joint) {
        int idx = -1;
        for (int q = 0; q < nv; q++)
          if (((const tir_IterVar *)blk->iter_vars->items[q])->var == jv) idx = q;
        if (idx >= 0) {
          dom_union(an, &doms[idx], jlo, jhi);
          hit[idx] = 1;
        } else {
          tir_release(jlo);
          tir_release(jhi);
          joint_dims = 0;
        }
      }
      for (int k = 0; k < ndim; k++) {
        const tir_Range *pr_k = (const tir_Range *)preg->region->items[k];
        if (!req[k].lo || (k < 32 && (joint_dims >> k & 1u))) continue;
        const tir_Var *v = NULL;
        tir_Node *vlo = NULL, *vhi = NULL;
        if (solve_region_dim(pr_k, req[k].lo, req[k].hi, &v, &vlo, &vhi)) {
          int idx = -1;
          for (int q = 0; q < nv; q++)
            if (((const tir_IterVar *)blk->iter_vars->items[q])->var == v) idx = q;
          if (idx >= 0) {
            dom_union(an, &doms[idx], vlo, vhi);
            hit[idx] = 1;
          } else {
            tir_release(vlo);
            tir_release(vhi);
          }
        }
      }
      /* a variable this buffer does not pin down ranges over its whole domain for it, and
       * so in the union over buffers */
      for (int q = 0; q < nv; q++)
        if (!hit[q]) full[q] = 1;
      if (reverse && !cover_bad && producers_miss_reads(scope, br, buf)) cover_bad = 1;
    }
    if (reverse && any) {
      reqs[pr] = req;
      continue;
    }
    for (int k = 0; k < ndim; k++) {
      tir_release(req[k].lo);
      tir_release(req[k].hi);
    }
    free(req);
  }
  free(deps);
  free(hit);
  if (cover_bad) {
    free_reqs(reqs, provided);
    tir_analyzer_free(an);
    for (int k = 0; k < nv; k++) {
      tir_release(doms[k].lo);
      tir_release(doms[k].hi);
    }
    free(doms);
    free(full);
    return sch_error(s, P, &br->hdr, "this block",
                     "block '%s' reads parts of a buffer that its producers do not write; under loop %s those reads "
                     "would never happen",
                     blk->name, lv->name);
  }
  tir_Node **los = calloc((size_t)nv + 1, sizeof *los);
  int *narrow = calloc((size_t)nv + 1, sizeof *narrow);
  /* clip to each var's own domain; what is not provable becomes a predicate */
  tir_Array *bindings = tir_array_new(nv);
  tir_Node *pred = tir_bool_imm(1);
  tir_Node *body;
  tir_Var **loop_vars = calloc((size_t)nv + 1, sizeof *loop_vars);
  tir_Node **extents = calloc((size_t)nv + 1, sizeof *extents);
  for (int k = 0; k < nv; k++) {
    const tir_IterVar *iv = (const tir_IterVar *)blk->iter_vars->items[k];
    tir_Node *own_lo = tir_retain(iv->dom->min);
    tir_Node *own_last = tir_sub(tir_add(R(iv->dom->min), R(iv->dom->extent)), tir_int_imm(iv->dom->min->dtype, 1));
    tir_Node *own_hi = tir_simplify(an, own_last);
    tir_release(own_last);
    tir_Node *lo, *hi;
    int need_lo = 0, need_hi = 0;
    if (!doms[k].lo || full[k]) {
      lo = tir_retain(own_lo);
      hi = tir_retain(own_hi);
    } else {
      /* as TVM (BlockVarDomainInfo::Simplify): the needed range if it lies in the domain,
       * the domain if it lies in the needed range, their intersection if that is constant,
       * else the needed range with a predicate keeping the variable in its domain */
      tir_Node *lo_in = tir_cmp(TIR_GE, R(doms[k].lo), R(own_lo)), *hi_in = tir_cmp(TIR_LE, R(doms[k].hi), R(own_hi));
      tir_Node *lo_out = tir_cmp(TIR_LE, R(doms[k].lo), R(own_lo)), *hi_out = tir_cmp(TIR_GE, R(doms[k].hi), R(own_hi));
      int li = tir_can_prove(an, lo_in), hii = tir_can_prove(an, hi_in);
      int lo_o = tir_can_prove(an, lo_out), hio = tir_can_prove(an, hi_out);
      tir_release(lo_in);
      tir_release(hi_in);
      tir_release(lo_out);
      tir_release(hi_out);
      tir_Node *mx = tir_max(R(doms[k].lo), R(own_lo)), *mn = tir_min(R(doms[k].hi), R(own_hi));
      tir_Node *ilo = tir_simplify(an, mx), *ihi = tir_simplify(an, mn);
      tir_release(mx);
      tir_release(mn);
      int64_t c1, c2;
      if (li && hii) {
        lo = tir_retain(doms[k].lo);
        hi = tir_retain(doms[k].hi);
      } else if (lo_o && hio) {
        lo = tir_retain(own_lo);
        hi = tir_retain(own_hi);
      } else if (tir_is_const_int(ilo, &c1) && tir_is_const_int(ihi, &c2)) {
        lo = tir_retain(ilo);
        hi = tir_retain(ihi);
      } else {
        lo = tir_retain(doms[k].lo);
        hi = tir_retain(doms[k].hi);
        need_lo = !li;
        need_hi = !hii;
      }
      tir_release(ilo);
      tir_release(ihi);
    }
    tir_Node *ext = tir_sub(tir_add(R(hi), tir_int_imm(hi->dtype, 1)), R(lo));
    extents[k] = tir_simplify(an, ext);
    tir_release(ext);
    {
      tir_Node *e1 = tir_cmp(TIR_EQ, R(lo), R(own_lo)), *e2 = tir_cmp(TIR_EQ, R(hi), R(own_hi));
      narrow[k] = !(tir_can_prove(an, e1) && tir_can_prove(an, e2));
      tir_release(e1);
      tir_release(e2);
    }
    los[k] = tir_retain(lo);
    int64_t ev;
    tir_Node *bind;
    if (!preserve_unit_loops && tir_is_const_int(extents[k], &ev) && ev == 1) {
      bind = tir_retain(lo);
    } else {
      char *name = tir_strprintf("ax%d", k);
      loop_vars[k] = tir_var_new(name, iv->var->hdr.dtype);
      free(name);
      bind = tir_add(R(lo), R(&loop_vars[k]->hdr));
    }
    bindings->items[k] = tir_simplify(an, bind);
    if (need_lo) pred = tir_and(pred, tir_cmp(TIR_GE, R(bindings->items[k]), R(own_lo)));
    if (need_hi)
      pred = tir_and(pred, tir_cmp(TIR_LT, R(bindings->items[k]), tir_add(R(iv->dom->min), R(iv->dom->extent))));
    tir_release(bind);
    tir_release(lo);
    tir_release(hi);
    tir_release(own_lo);
    tir_release(own_hi);
  }
  tir_analyzer_free(an);
  for (int k = 0; k < nv; k++) {
    tir_release(doms[k].lo);
    tir_release(doms[k].hi);
  }
  free(doms);
  free(full);
  int any_narrow = 0;
  for (int k = 0; k < nv; k++)
    any_narrow |= narrow[k] && ((const tir_IterVar *)blk->iter_vars->items[k])->iter_type == TIR_ITER_COMM_REDUCE;
  int split_bad = reverse && any_narrow && reduction_split_exact(&pl, sl, blk, los, extents, narrow);
  for (int k = 0; k < nv; k++) tir_release(los[k]);
  free(los);
  free(narrow);
  if (split_bad) {
    free_reqs(reqs, provided);
    for (int k = 0; k < nv; k++) {
      tir_release(loop_vars[k]);
      tir_release(extents[k]);
    }
    free(loop_vars);
    free(extents);
    tir_release(bindings);
    tir_release(pred);
    return sch_error(s, P, &br->hdr, "this block",
                     "block '%s' is a reduction that would be split over the iterations of the loops down to %s in pieces "
                     "that may overlap or leave gaps (an update run twice adds twice); each narrowed reduction variable "
                     "must take one whole tile per iteration of its own loop",
                     blk->name, lv->name);
  }
  /* renumber the generated loops ax0, ax1, ... in order */
  int na = 0;
  for (int k = 0; k < nv; k++)
    if (loop_vars[k]) {
      char *name = tir_strprintf("ax%d", na++);
      tir_node_set_str(&loop_vars[k]->name, name);
      free(name);
    }
  if (reverse) {
    int conflict = 0;
    tir_Node *guard = producer_guard(loop, &dc, &conflict);
    if (conflict) {
      tir_release(guard);
      free_reqs(reqs, provided);
      for (int k = 0; k < nv; k++) {
        tir_release(loop_vars[k]);
        tir_release(extents[k]);
      }
      free(loop_vars);
      free(extents);
      tir_release(bindings);
      tir_release(pred);
      return sch_error(s, P, &br->hdr, "this block",
                       "the producers of block '%s' under loop %s run under different conditions on the loops around "
                       "them (their predicates); the block cannot follow all of them",
                       blk->name, lv->name);
    }
    if (guard) pred = tir_and(pred, guard);
  }
  {
    tir_Analyzer *pa = tir_analyzer_new();
    sch_bind_path(pa, &pl, pl.n);
    tir_Node *sp = tir_simplify(pa, pred);
    tir_release(pred);
    pred = sp;
    tir_analyzer_free(pa);
  }
  body = tir_block_realize(bindings, pred, (tir_Block *)R(blk));
  if (reverse && reads_unproduced(s, P, &pl, (const tir_BlockRealize *)body, loop_vars, extents, reqs, lv, loop, &dc)) {
    free_reqs(reqs, provided);
    tir_release(body);
    for (int k = 0; k < nv; k++) {
      tir_release(loop_vars[k]);
      tir_release(extents[k]);
    }
    free(loop_vars);
    free(extents);
    return -1;
  }
  free_reqs(reqs, provided);
  for (int k = nv - 1; k >= 0; k--) {
    if (!loop_vars[k]) {
      tir_release(extents[k]);
      continue;
    }
    body = tir_for(loop_vars[k], tir_int_imm(loop_vars[k]->hdr.dtype, 0), extents[k], TIR_FOR_SERIAL, NULL, NULL, body);
  }
  free(loop_vars);
  free(extents);
  /* edit: remove the block's old nest, then insert under the loop */
  const tir_Node *old = sch_removable_subtree(&pb, pb.n - 1);
  tir_Node *nbody = sch_remove_stmt(s->func->body, old);
  if (sch_contains_stmt(nbody, old)) {
    tir_release(nbody);
    tir_release(body);
    return sch_error(s, P, &br->hdr, "this block", "cannot take block '%s' out of its place (it is not an item of a sequence)",
                     blk->name);
  }
  tir_PrimFunc *f = (tir_PrimFunc *)tir_node_copy(&s->func->hdr);
  tir_release(f->body);
  f->body = nbody;
  tir_release(s->func);
  s->func = f;
  SchPath pl2;
  const tir_For *loop2 = sch_find_loop(s->func->body, lv, &pl2);
  /* the bindings were simplified with the loops down to the target known; the new loop
   * variables stay in them (a kept unit loop keeps its "+ ax0", as in TVM) */
  tir_Node *ins = sch_insert_into(loop2->body, pos, body);
  tir_For *nl = (tir_For *)tir_node_copy(&loop2->hdr);
  tir_release(nl->body);
  nl->body = ins;
  sch_replace(s, &loop2->hdr, &nl->hdr);
  return 0;
}
