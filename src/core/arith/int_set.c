/* int_set.c -- symbolic interval evaluation (TVM src/arith/int_set.cc, interval part).
 *
 * eval(e) returns [min, max] covering every value e takes while the listed variables
 * range over their sets; other variables stay symbolic.  Rules are the textbook
 * interval ones; multiplication needs one constant side, division and modulo a
 * positive constant divisor; anything else that depends on a relaxed variable is
 * unbounded (the caller then falls back to the whole buffer extent). */
#include <stdlib.h>
#include <string.h>

#include "arith_internal.h"
#include "tir/error.h"

void tir_int_set_free(tir_IntSet *s) {
  tir_release(s->min);
  tir_release(s->max);
  s->min = s->max = NULL;
}

static int uses_dom(const tir_Node *e, const tir_DomEntry *doms, int n) {
  for (int i = 0; i < n; i++)
    if (tir_uses_var(e, doms[i].var)) return 1;
  return 0;
}

#define S tir_simplify_take

static int eval(tir_Analyzer *a, const tir_Node *e, const tir_DomEntry *doms, int n, tir_IntSet *out) {
  out->min = out->max = NULL;
  if (!uses_dom(e, doms, n)) {
    out->min = tir_retain(e);
    out->max = tir_retain(e);
    return 0;
  }
  tir_IntSet x, y;
  int64_t c;
  switch (e->kind) {
    case TIR_Var:
      for (int i = n - 1; i >= 0; i--)
        if (&doms[i].var->hdr == e) {
          if (!doms[i].set.min || !doms[i].set.max) return -1;
          out->min = tir_retain(doms[i].set.min);
          out->max = tir_retain(doms[i].set.max);
          return 0;
        }
      return -1;
    case TIR_Add:
    case TIR_Sub: {
      const tir_Add *b = (const tir_Add *)e;
      if (eval(a, b->a, doms, n, &x) != 0) return -1;
      if (eval(a, b->b, doms, n, &y) != 0) {
        tir_int_set_free(&x);
        return -1;
      }
      if (e->kind == TIR_Add) {
        out->min = S(a, tir_binary_raw(TIR_Add, R(x.min), R(y.min)));
        out->max = S(a, tir_binary_raw(TIR_Add, R(x.max), R(y.max)));
      } else {
        out->min = S(a, tir_binary_raw(TIR_Sub, R(x.min), R(y.max)));
        out->max = S(a, tir_binary_raw(TIR_Sub, R(x.max), R(y.min)));
      }
      tir_int_set_free(&x);
      tir_int_set_free(&y);
      return 0;
    }
    case TIR_Mul: {
      const tir_Mul *m = (const tir_Mul *)e;
      const tir_Node *other;
      if (tir_as_const_int(a, m->b, &c)) other = m->a;
      else if (tir_as_const_int(a, m->a, &c)) other = m->b;
      else return -1;
      if (eval(a, other, doms, n, &x) != 0) return -1;
      tir_Node *k = tir_int_imm(e->dtype, c);
      tir_Node *lo = S(a, tir_binary_raw(TIR_Mul, R(x.min), R(k)));
      tir_Node *hi = S(a, tir_binary_raw(TIR_Mul, R(x.max), R(k)));
      tir_release(k);
      tir_int_set_free(&x);
      if (c >= 0) out->min = lo, out->max = hi;
      else out->min = hi, out->max = lo;
      return 0;
    }
    case TIR_FloorDiv:
    case TIR_Div: {
      const tir_FloorDiv *d = (const tir_FloorDiv *)e;
      if (!tir_as_const_int(a, d->b, &c) || c <= 0) return -1;
      if (eval(a, d->a, doms, n, &x) != 0) return -1;
      if (e->kind == TIR_Div && tir_const_int_bound(a, x.min).min < 0) {
        tir_int_set_free(&x);
        return -1;
      }
      out->min = S(a, tir_binary_raw(TIR_FloorDiv, R(x.min), tir_int_imm(e->dtype, c)));
      out->max = S(a, tir_binary_raw(TIR_FloorDiv, R(x.max), tir_int_imm(e->dtype, c)));
      tir_int_set_free(&x);
      return 0;
    }
    case TIR_FloorMod: {
      const tir_FloorMod *d = (const tir_FloorMod *)e;
      if (!tir_as_const_int(a, d->b, &c) || c <= 0) return -1;
      if (eval(a, d->a, doms, n, &x) != 0) {
        out->min = tir_int_imm(e->dtype, 0);
        out->max = tir_int_imm(e->dtype, c - 1);
        return 0;
      }
      /* within one period the modulo is monotone */
      tir_Node *qlo = S(a, tir_binary_raw(TIR_FloorDiv, R(x.min), tir_int_imm(e->dtype, c)));
      tir_Node *qhi = S(a, tir_binary_raw(TIR_FloorDiv, R(x.max), tir_int_imm(e->dtype, c)));
      int same = tir_can_prove_equal(a, qlo, qhi);
      tir_release(qlo);
      tir_release(qhi);
      if (same) {
        out->min = S(a, tir_binary_raw(TIR_FloorMod, R(x.min), tir_int_imm(e->dtype, c)));
        out->max = S(a, tir_binary_raw(TIR_FloorMod, R(x.max), tir_int_imm(e->dtype, c)));
      } else {
        out->min = tir_int_imm(e->dtype, 0);
        out->max = tir_int_imm(e->dtype, c - 1);
      }
      tir_int_set_free(&x);
      return 0;
    }
    case TIR_Call: {
      /* x ^ y (or x | y) with 0 <= y < 2^b and x >= 0 changes only x's low b bits, so it lies in
       * [floor(x_min / 2^b) * 2^b, floor(x_max / 2^b) * 2^b + 2^b - 1]: an XOR swizzle of a tile's
       * chunk index stays inside the tile (what compaction of swizzled shared buffers needs). */
      const tir_Call *cl = (const tir_Call *)e;
      if (cl->args->size == 2 && (strcmp(cl->op, "bitwise_xor") == 0 || strcmp(cl->op, "bitwise_or") == 0)) {
        for (int side = 0; side < 2; side++) {
          const tir_Node *xe = cl->args->items[side], *ye = cl->args->items[1 - side];
          tir_ConstIntBound yb = tir_const_int_bound(a, ye);
          if (yb.min < 0 || yb.max == TIR_POS_INF || yb.max >= ((int64_t)1 << 40)) continue;
          int64_t p = 1;
          while (p <= yb.max) p <<= 1;
          if (eval(a, xe, doms, n, &x) != 0) return -1;
          if (tir_const_int_bound(a, x.min).min < 0) {
            tir_int_set_free(&x);
            return -1;
          }
          tir_Node *P = tir_int_imm(e->dtype, p);
          out->min = S(a, tir_binary_raw(TIR_Mul, tir_binary_raw(TIR_FloorDiv, R(x.min), R(P)), R(P)));
          out->max = S(a, tir_binary_raw(TIR_Add, tir_binary_raw(TIR_Mul, tir_binary_raw(TIR_FloorDiv, R(x.max), R(P)), R(P)),
                                         tir_int_imm(e->dtype, p - 1)));
          tir_release(P);
          tir_int_set_free(&x);
          return 0;
        }
      }
    }
      goto fallback;
    case TIR_Min:
    case TIR_Max: {
      const tir_Min *m = (const tir_Min *)e;
      if (eval(a, m->a, doms, n, &x) != 0) return -1;
      if (eval(a, m->b, doms, n, &y) != 0) {
        tir_int_set_free(&x);
        return -1;
      }
      out->min = S(a, tir_binary_raw(e->kind, R(x.min), R(y.min)));
      out->max = S(a, tir_binary_raw(e->kind, R(x.max), R(y.max)));
      tir_int_set_free(&x);
      tir_int_set_free(&y);
      return 0;
    }
    default:
    fallback: {
      /* fall back to constant bounds of the whole expression */
      tir_Analyzer *tmp = tir_analyzer_new();
      for (int i = 0; a && i < a->n; i++) tir_analyzer_bind_bound(tmp, a->b[i].var, a->b[i].lo, a->b[i].hi);
      for (int i = 0; i < n; i++) {
        tir_ConstIntBound lo = doms[i].set.min ? tir_const_int_bound(a, doms[i].set.min) : (tir_ConstIntBound){TIR_NEG_INF, TIR_POS_INF};
        tir_ConstIntBound hi = doms[i].set.max ? tir_const_int_bound(a, doms[i].set.max) : (tir_ConstIntBound){TIR_NEG_INF, TIR_POS_INF};
        tir_analyzer_bind_bound(tmp, doms[i].var, lo.min, hi.max);
      }
      tir_ConstIntBound b = tir_const_int_bound(tmp, e);
      tir_analyzer_free(tmp);
      if (b.min == TIR_NEG_INF || b.max == TIR_POS_INF || !tir_dtype_is_int(e->dtype)) return -1;
      out->min = tir_int_imm(e->dtype, b.min);
      out->max = tir_int_imm(e->dtype, b.max);
      return 0;
    }
  }
}

static int has_divmod(const tir_Node *n, void *found) {
  if (n->kind == TIR_FloorDiv || n->kind == TIR_FloorMod || n->kind == TIR_Div || n->kind == TIR_Mod) *(int *)found = 1;
  return *(int *)found;
}

int tir_int_set_eval(tir_Analyzer *a, const tir_Node *e, const tir_DomEntry *doms, int n_doms, tir_IntSet *out) {
  /* Division and modulo are evaluated end-point-wise, which loses what the simplifier knows:
   * floormod(64*x + 4*t + v, 64) // 4 is t for v < 4, t < 16, but its interval over x, v is
   * [0, 15].  So first simplify with the relaxed variables' constant bounds known. */
  int found = 0;
  tir_visit(e, has_divmod, &found);
  if (found && n_doms > 0) {
    tir_Analyzer *tmp = a ? NULL : tir_analyzer_new();
    tir_Analyzer *use = a ? a : tmp;
    int mark = tir_analyzer_mark(use);
    for (int i = 0; i < n_doms; i++) {
      tir_ConstIntBound lo = doms[i].set.min ? tir_const_int_bound(a, doms[i].set.min) : (tir_ConstIntBound){TIR_NEG_INF, TIR_POS_INF};
      tir_ConstIntBound hi = doms[i].set.max ? tir_const_int_bound(a, doms[i].set.max) : (tir_ConstIntBound){TIR_NEG_INF, TIR_POS_INF};
      if (lo.min != TIR_NEG_INF || hi.max != TIR_POS_INF) tir_analyzer_bind_bound(use, doms[i].var, lo.min, hi.max);
    }
    tir_Node *se = tir_simplify(use, e);
    tir_analyzer_reset(use, mark);
    if (tmp) tir_analyzer_free(tmp);
    int r = eval(a, se, doms, n_doms, out);
    tir_release(se);
    if (r != 0) tir_int_set_free(out);
    return r;
  }
  int r = eval(a, e, doms, n_doms, out);
  if (r != 0) tir_int_set_free(out);
  return r;
}

int tir_int_set_union(tir_Analyzer *a, const tir_IntSet *x, const tir_IntSet *y, tir_IntSet *out) {
  out->min = out->max = NULL;
  if (!x->min || !x->max || !y->min || !y->max) return -1;
  out->min = S(a, tir_binary_raw(TIR_Min, R(x->min), R(y->min)));
  out->max = S(a, tir_binary_raw(TIR_Max, R(x->max), R(y->max)));
  return 0;
}

tir_Array *tir_relax_region(tir_Analyzer *a, const tir_Array *region, const tir_DomEntry *doms, int n_doms,
                            const tir_Array *shape) {
  tir_Array *out = tir_array_new(region->size);
  for (int i = 0; i < region->size; i++) {
    const tir_Range *r = (const tir_Range *)region->items[i];
    tir_IntSet lo, hi;
    tir_Node *last = S(a, tir_binary_raw(TIR_Sub, tir_add(R(r->min), R(r->extent)), tir_int_imm(r->min->dtype, 1)));
    int ok = tir_int_set_eval(a, r->min, doms, n_doms, &lo) == 0;
    int ok2 = ok && tir_int_set_eval(a, last, doms, n_doms, &hi) == 0;
    tir_release(last);
    if (!ok2) {
      if (ok) tir_int_set_free(&lo);
      if (!shape || i >= shape->size) {
        tir_release(out);
        return NULL;
      }
      out->items[i] = &tir_range(tir_int_imm(shape->items[i]->dtype, 0), R(shape->items[i]))->hdr;
      continue;
    }
    tir_Node *ext = S(a, tir_binary_raw(TIR_Add, tir_binary_raw(TIR_Sub, R(hi.max), R(lo.min)), tir_int_imm(r->min->dtype, 1)));
    out->items[i] = &tir_range(R(lo.min), ext)->hdr;
    tir_int_set_free(&lo);
    tir_int_set_free(&hi);
  }
  return out;
}

tir_Array *tir_relax_region_pred(tir_Analyzer *a, const tir_Array *region, const tir_DomEntry *doms, int n_doms,
                                 const tir_Array *shape, const tir_Node *predicate) {
  if (!predicate || tir_is_one(predicate) || n_doms == 0) return tir_relax_region(a, region, doms, n_doms, shape);
  tir_DomEntry *tight = calloc((size_t)n_doms, sizeof *tight);
  for (int i = 0; i < n_doms; i++) {
    tight[i] = doms[i];
    int64_t hi, cur;
    if (doms[i].set.max && tir_bound_from_predicate(a, predicate, doms[i].var, &hi) &&
        (!tir_as_const_int(a, doms[i].set.max, &cur) || hi < cur)) {
      tight[i].set.max = tir_int_imm(doms[i].var->hdr.dtype, hi); /* owned by this copy */
    } else {
      tight[i].set.max = tir_retain(doms[i].set.max);
    }
  }
  tir_Array *r = tir_relax_region(a, region, tight, n_doms, shape);
  for (int i = 0; i < n_doms; i++) tir_release(tight[i].set.max);
  free(tight);
  return r;
}
