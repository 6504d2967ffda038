/* tensorize.c -- replace a loop nest by a tensor intrinsic (TVM
 * tir/schedule/primitive/blockize_tensorize.cc, Tensorize, and ir_comparator.cc).
 *
 * The nest under `loop` must be a chain of loops ending in one block, shaped like the
 * intrinsic's desc: as many loops with the same extents; a block with the same iteration
 * variable kinds whose bindings equal desc's up to an offset that does not depend on the
 * nest's loops; the same body (init included) once desc's buffers are mapped to the block's
 * buffers (same dtype, same scope) and desc's iteration variables to the block's.  The
 * region each mapped buffer's accesses cover over the nest must have desc's buffer shape.
 * Loops of extent 1 count on neither side, and desc's iteration variables over them are fixed
 * (their value goes into desc's body).  A desc buffer views the trailing dimensions of the
 * block's buffer: each index of the block's access is desc's plus an offset that is fixed over
 * the intrinsic (TVM ir_comparator.cc's buffer index base), so a per-thread intrinsic with a
 * scalar output (TVM's dp4a desc C[0] += A[k] * B[k]) matches C[vi, vj].
 *
 * The nest becomes one opaque block "<name>_o" (TVM: blockize's outer block) whose
 * match_buffers bind impl's buffers to those regions, whose body is impl's body, and whose
 * annotation "tensor_intrin" names the intrinsic (the interpreter runs desc there).
 * A reduction block keeps its init only if desc has one: otherwise decompose_reduction
 * first, and tensorize the init and the update separately.
 * A block C = C + x * y whose factors come in the other order than desc's (C = C + A * B with
 * x playing B's part) matches too: multiplication commutes exactly (IEEE 754 rounds the exact
 * product; integers wrap the same), so the block is compared with its factors exchanged when
 * it does not match as written (the tensorized block replaces it either way). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../sched_util.h"
#include "tir/strbuf.h"

#define MAXN 64

/* desc's loops and block (borrowed), skipping a root block */
static int desc_nest(const tir_PrimFunc *desc, const tir_For **loops, int *n, const tir_BlockRealize **blk) {
  const tir_Node *s = desc->body;
  *n = 0;
  if (s->kind == TIR_BlockRealize && ((const tir_BlockRealize *)s)->block->iter_vars->size == 0) {
    const tir_Block *root = ((const tir_BlockRealize *)s)->block;
    if (root->alloc_buffers->size == 0 && !root->init) s = root->body;
  }
  while (s->kind == TIR_For) {
    if (*n == MAXN) return -1;
    loops[(*n)++] = (const tir_For *)s;
    s = ((const tir_For *)s)->body;
  }
  if (s->kind != TIR_BlockRealize) return -1;
  *blk = (const tir_BlockRealize *)s;
  return 0;
}

typedef struct {
  const tir_Node *items[4096];
  int n;
} Accesses;

static int collect(const tir_Node *n, void *p) {
  Accesses *a = p;
  if ((n->kind == TIR_BufferLoad || n->kind == TIR_BufferStore) && a->n < 4096) a->items[a->n++] = n;
  return 0;
}

static const tir_Buffer *access_buffer(const tir_Node *n) {
  return n->kind == TIR_BufferLoad ? ((const tir_BufferLoad *)n)->buffer : ((const tir_BufferStore *)n)->buffer;
}
static const tir_Array *access_indices(const tir_Node *n) {
  return n->kind == TIR_BufferLoad ? ((const tir_BufferLoad *)n)->indices : ((const tir_BufferStore *)n)->indices;
}

static int scope_compatible(const char *desc, const char *target) {
  if (strcmp(desc, target) == 0) return 1;
  /* dynamic shared memory is shared memory */
  if (strncmp(desc, "shared", 6) == 0 && strncmp(target, "shared", 6) == 0) return 1;
  return 0;
}

/* A copy of an impl buffer with fresh symbolic strides / elem_offset (so that two tensorized
 * sites never share a definition); the old->new var pairs are appended to subst. */
static tir_Buffer *fresh_buffer(const tir_Buffer *b, tir_Var **from, tir_Node **to, int *n) {
  tir_Buffer *nb = tir_buffer_new(b->name, b->hdr.dtype, (tir_Array *)R(&b->shape->hdr), NULL, NULL, b->scope);
  tir_release(nb->strides);
  nb->strides = tir_array_new(b->strides->size);
  for (int i = 0; i < b->strides->size; i++) {
    const tir_Node *st = b->strides->items[i];
    if (st->kind == TIR_Var && *n < MAXN) {
      tir_Var *v = tir_var_new(((const tir_Var *)st)->name, st->dtype);
      from[*n] = (tir_Var *)st;
      to[(*n)++] = &v->hdr;
      nb->strides->items[i] = R(&v->hdr);
    } else {
      nb->strides->items[i] = R((tir_Node *)st);
    }
  }
  tir_release(nb->elem_offset);
  if (b->elem_offset && b->elem_offset->kind == TIR_Var && *n < MAXN) {
    tir_Var *v = tir_var_new(((const tir_Var *)b->elem_offset)->name, b->elem_offset->dtype);
    from[*n] = (tir_Var *)b->elem_offset;
    to[(*n)++] = &v->hdr;
    nb->elem_offset = R(&v->hdr);
  } else {
    nb->elem_offset = R(b->elem_offset);
  }
  nb->offset_factor = b->offset_factor;
  nb->align = b->align;
  return nb;
}

static int is_unit_loop(const tir_For *f) {
  int64_t e;
  return tir_is_const_int(f->extent, &e) && e == 1;
}

typedef struct {
  tir_Buffer *const *from, *const *to;
  tir_Array *const *base;
  int n;
  tir_Analyzer *an;
} RebaseCtx;

/* does buffer j's mapping offset any trailing index (a desc buffer viewing an element of the
 * block's buffer that is not at index 0, e.g. a scalar C[0] against C[vi, vj]) */
static int has_offset(const tir_Array *base, int extra) {
  for (int d = extra; d < base->size; d++)
    if (!tir_is_zero(base->items[d])) return 1;
  return 0;
}

/* desc's accesses rewritten onto the block's buffers: leading indices are the base (fixed over
 * the intrinsic), trailing ones desc's index plus the base's offset */
static tir_Node *rebase_fn(const tir_Node *n, void *p) {
  const RebaseCtx *c = p;
  if (n->kind != TIR_BufferLoad && n->kind != TIR_BufferStore) return NULL;
  const tir_Buffer *b = access_buffer(n);
  for (int j = 0; j < c->n; j++) {
    if (c->from[j] != b) continue;
    tir_Node *m = tir_mutate_children(n, rebase_fn, p);
    if (!m) return TIR_MUTATE_ERROR;
    const tir_Array *di = access_indices(m), *base = c->base[j];
    int extra = base->size - di->size, off = has_offset(base, extra);
    tir_Array *idx = tir_array_new(base->size);
    for (int d = 0; d < base->size; d++) {
      if (d < extra) idx->items[d] = R(base->items[d]);
      else if (!off) idx->items[d] = R(di->items[d - extra]);
      else idx->items[d] = tir_simplify_take(c->an, tir_add(R(base->items[d]), R(di->items[d - extra])));
    }
    tir_Node *r = n->kind == TIR_BufferLoad ? tir_buffer_load((tir_Buffer *)R(&c->to[j]->hdr), idx)
                                            : tir_buffer_store((tir_Buffer *)R(&c->to[j]->hdr), R(((tir_BufferStore *)m)->value), idx);
    tir_release(m);
    return r;
  }
  return NULL;
}

/* the block's accesses of buffers mapped with an offset, their trailing indices simplified the
 * way rebase_fn simplifies desc's (so that both sides compare in one canonical form) */
static tir_Node *canon_fn(const tir_Node *n, void *p) {
  const RebaseCtx *c = p;
  if (n->kind != TIR_BufferLoad && n->kind != TIR_BufferStore) return NULL;
  const tir_Buffer *b = access_buffer(n);
  for (int j = 0; j < c->n; j++) {
    if (c->to[j] != b) continue;
    const tir_Array *base = c->base[j];
    int extra = base->size - c->from[j]->shape->size;
    if (!has_offset(base, extra)) return NULL;
    tir_Node *m = tir_mutate_children(n, canon_fn, p);
    if (!m) return TIR_MUTATE_ERROR;
    const tir_Array *ti = access_indices(m);
    tir_Array *idx = tir_array_new(ti->size);
    for (int d = 0; d < ti->size; d++) idx->items[d] = d < extra ? R(ti->items[d]) : tir_simplify(c->an, ti->items[d]);
    tir_Node *r = n->kind == TIR_BufferLoad ? tir_buffer_load((tir_Buffer *)R(&b->hdr), idx)
                                            : tir_buffer_store((tir_Buffer *)R(&b->hdr), R(((tir_BufferStore *)m)->value), idx);
    tir_release(m);
    return r;
  }
  return NULL;
}

static int64_t tensorize_once(tir_Schedule *s, const tir_Var *lv, int64_t uid, const char *name) {
  const char *P = "tensorize";
  const tir_PrimFunc *desc, *impl;
  if (!tir_tensor_intrin_get(name, &desc, &impl))
    return tir_error_set(TIR_ERR_SCHEDULE, P, "no tensor intrinsic named '%s' is registered (tir.TensorIntrin.register)", name);
  const tir_For *dl[MAXN];
  int nd;
  const tir_BlockRealize *dbr;
  if (desc_nest(desc, dl, &nd, &dbr))
    return tir_error_set(TIR_ERR_SCHEDULE, P, "intrinsic '%s': desc must be loops around one block", name);
  const tir_Block *D = dbr->block;
  /* loops of extent 1 carry no iteration: they are matched by neither side (a split by 1 may
   * have simplified them away in the nest, a desc may write them for readability) */
  int du[MAXN], ndu = 0;
  for (int i = 0; i < nd; i++) {
    int64_t de;
    if (!tir_is_const_int(dl[i]->extent, &de))
      return tir_error_set(TIR_ERR_SCHEDULE, P, "intrinsic '%s': desc loop %d has a symbolic extent", name, i + 1);
    if (de != 1) du[ndu++] = i;
  }

  /* the target nest */
  const tir_For *tl[MAXN];
  int nt = 0;
  const tir_BlockRealize *ibr = NULL;
  const tir_Node *top;
  if (lv) {
    const tir_For *f = tir_sched_loop(s, lv, P);
    if (!f) return -1;
    top = &f->hdr;
    const tir_Node *cur = &f->hdr;
    while (cur->kind == TIR_For && nt < MAXN) {
      tl[nt++] = (const tir_For *)cur;
      cur = ((const tir_For *)cur)->body;
    }
    if (cur->kind != TIR_BlockRealize)
      return sch_error(s, P, top, "this loop",
                       "the loops under %s must end in exactly one block (found a %s); desc '%s' is %d loop(s) around one block",
                       lv->name, tir_kind_name(cur->kind), name, nd);
    ibr = (const tir_BlockRealize *)cur;
  } else {
    SchPath p;
    ibr = sch_find_block(s->func->body, uid, &p);
    if (!ibr) return tir_sched_block_realize(s, uid, P) ? -1 : -1;
    const tir_For *above[SCH_MAX_DEPTH];
    int na = sch_loops_above(&p, above, SCH_MAX_DEPTH);
    /* the innermost loops above the block, up to desc's number of loops of extent > 1 */
    int first = na, have = 0;
    while (have < ndu && first > 0) {
      first--;
      if (!is_unit_loop(above[first])) have++;
    }
    if (have < ndu)
      return sch_error(s, P, &ibr->hdr, "this block", "block '%s' has %d loop(s) above it; desc '%s' has %d", ibr->block->name,
                       na, name, nd);
    for (int i = first; i < na && nt < MAXN; i++) tl[nt++] = above[i];
    for (int i = 0; i < nt - 1; i++)
      if (tl[i]->body != &tl[i + 1]->hdr)
        return sch_error(s, P, &tl[i]->hdr, "this loop", "loop %s has more than one statement in its body", tl[i]->loop_var->name);
    if (nt > 0 && tl[nt - 1]->body != &ibr->hdr)
      return sch_error(s, P, &tl[nt - 1]->hdr, "this loop", "loop %s has more than one statement in its body",
                       tl[nt - 1]->loop_var->name);
    top = nt > 0 ? &tl[0]->hdr : &ibr->hdr;
  }
  const tir_Block *I = ibr->block;
  int tu[MAXN], ntu = 0;
  for (int i = 0; i < nt; i++)
    if (!is_unit_loop(tl[i])) tu[ntu++] = i;
  if (ntu != ndu)
    return sch_error(s, P, top, "this nest",
                     "desc '%s' has %d loop(s) around its block, but this nest has %d (loops of extent 1 not counted)", name, ndu,
                     ntu);
  for (int i = 0; i < ndu; i++) {
    int64_t de, te_, tm;
    const tir_For *d = dl[du[i]], *t = tl[tu[i]];
    tir_is_const_int(d->extent, &de);
    if (!tir_is_const_int(t->extent, &te_) || te_ != de) {
      char *x = tir_print_expr(t->extent);
      int r = sch_error(s, P, &t->hdr, "this loop", "desc '%s' loop %d (%s) has extent %lld, loop %s has extent %s", name, du[i] + 1,
                        d->loop_var->name, (long long)de, t->loop_var->name, x);
      free(x);
      return r;
    }
    if (!tir_is_const_int(t->min, &tm) || tm != 0)
      return sch_error(s, P, &t->hdr, "this loop", "loop %s must start at 0", t->loop_var->name);
  }
  /* the block */
  int nv = I->iter_vars->size, ndv = D->iter_vars->size;
  if (nv > MAXN || ndv > MAXN) return sch_error(s, P, &ibr->hdr, "this block", "too many iteration variables");
  tir_Var *lvars_t[MAXN], *all_t[MAXN], *dvars[MAXN], *dunit[MAXN];
  tir_Node *tvals[MAXN], *lvals[MAXN], *dunit_min[MAXN];
  int ndunit = 0;
  for (int i = 0; i < ndu; i++) {
    dvars[i] = dl[du[i]]->loop_var;
    lvals[i] = &tl[tu[i]]->loop_var->hdr;
    lvars_t[i] = tl[tu[i]]->loop_var;
  }
  for (int i = 0; i < nt; i++) all_t[i] = tl[i]->loop_var;
  for (int i = 0; i < nd; i++)
    if (is_unit_loop(dl[i])) {
      dunit[ndunit] = dl[i]->loop_var;
      dunit_min[ndunit++] = dl[i]->min;
    }
  tir_Analyzer *an = tir_analyzer_new();
  for (int i = 0; i < nt; i++) tir_analyzer_bind_range(an, tl[i]->loop_var, tl[i]->min, tl[i]->extent);
  int64_t rc = -1;
  /* desc's iteration variables: those bound through its loops of extent > 1 pair, in order,
   * with the block's bound through the nest's; the others are fixed (a scalar output's
   * spatial variables over unit loops) and desc's body uses their value */
  tir_Var *sub_from[2 * MAXN];
  tir_Node *sub_to[2 * MAXN], *pbind[MAXN];
  int nsubv = 0, npair = 0, pq[MAXN];
  for (int q = 0; q < ndv; q++) {
    tir_Node *bq = tir_substitute(dbr->iter_values->items[q], ndunit, dunit, dunit_min);
    const tir_IterVar *id = (const tir_IterVar *)D->iter_vars->items[q];
    if (tir_uses_any_var(bq, ndu, dvars)) {
      pq[npair] = q;
      pbind[npair++] = bq;
    } else {
      sub_from[nsubv] = id->var;
      sub_to[nsubv++] = tir_simplify_take(an, bq);
    }
  }
  /* the block's iteration variables bound through the nest's loops correspond, in order, to
   * desc's; the others (e.g. a batch index bound to an outer loop) stay outside the intrinsic */
  int inner[MAXN], n_inner = 0;
  for (int k = 0; k < nv; k++)
    if (tir_uses_any_var(ibr->iter_values->items[k], ndu, lvars_t)) inner[n_inner++] = k;
  if (n_inner != npair) {
    sch_error(s, P, &ibr->hdr, "this block",
              "block '%s' has %d iteration variable(s) bound through these loops, desc '%s' has %d", I->name, n_inner, name, npair);
    goto done;
  }
  for (int qq = 0; qq < npair; qq++) {
    int k = inner[qq], q = pq[qq];
    const tir_IterVar *it = (const tir_IterVar *)I->iter_vars->items[k], *id = (const tir_IterVar *)D->iter_vars->items[q];
    if (it->iter_type != id->iter_type) {
      sch_error(s, P, &ibr->hdr, "this block", "iteration variable %s of block '%s' is %s, desc's %s is %s", it->var->name, I->name,
                it->iter_type == TIR_ITER_COMM_REDUCE ? "a reduction" : "spatial", id->var->name,
                id->iter_type == TIR_ITER_COMM_REDUCE ? "a reduction" : "spatial");
      goto done;
    }
    /* binding_I - binding_D[desc loops := our loops] must not depend on our loops */
    tir_Node *db = tir_substitute(pbind[qq], ndu, dvars, lvals);
    tir_Node *diff = tir_sub(R(ibr->iter_values->items[k]), db);
    tir_Node *sd = tir_simplify(an, diff);
    tir_release(diff);
    int dep = tir_uses_any_var(sd, ndu, lvars_t);
    tir_release(sd);
    if (dep) {
      char *a = tir_print_expr(ibr->iter_values->items[k]), *b = tir_print_expr(dbr->iter_values->items[q]);
      sch_error(s, P, &ibr->hdr, "this block",
                "iteration variable %s is bound to %s, which does not follow desc '%s''s binding %s over these loops", it->var->name,
                a, name, b);
      free(a);
      free(b);
      goto done;
    }
    tvals[qq] = &it->var->hdr;
    sub_from[nsubv] = id->var;
    sub_to[nsubv++] = R(&it->var->hdr);
  }
  if (!tir_is_one(ibr->predicate) && tir_uses_any_var(ibr->predicate, nt, all_t)) {
    sch_error(s, P, &ibr->hdr, "this block",
              "block '%s' has a predicate over the loops being tensorized (a split that does not divide): an intrinsic covers "
              "whole tiles; pad the problem or choose factors that divide",
              I->name);
    goto done;
  }
  if (!!I->init != !!D->init) {
    sch_error(s, P, &ibr->hdr, "this block",
              I->init ? "block '%s' has an init, desc '%s' does not: decompose_reduction first, then tensorize the init and the update separately"
                      : "desc '%s' has an init, block '%s' does not",
              I->init ? I->name : name, I->init ? name : I->name);
    goto done;
  }
  /* pair the buffers: accesses in the same order */
  {
    tir_Node *dsub[2] = {D->init ? tir_substitute(D->init, nsubv, sub_from, sub_to) : NULL,
                         tir_substitute(D->body, nsubv, sub_from, sub_to)};
    Accesses *ta = calloc(1, sizeof *ta), *da = calloc(1, sizeof *da);
    if (I->init) tir_visit(I->init, collect, ta);
    tir_visit(I->body, collect, ta);
    if (dsub[0]) tir_visit(dsub[0], collect, da);
    tir_visit(dsub[1], collect, da);
    tir_Buffer *dbuf[MAXN], *tbuf[MAXN];
    tir_Array *base[MAXN] = {0};
    int nb = 0, bad = 0;
    char msg[2048] = "";
    if (ta->n != da->n) {
      snprintf(msg, sizeof msg, "the block makes %d buffer access(es), desc '%s' makes %d", ta->n, name, da->n);
      bad = 1;
    }
    for (int i = 0; !bad && i < ta->n; i++) {
      const tir_Buffer *d = access_buffer(da->items[i]), *t = access_buffer(ta->items[i]);
      if (da->items[i]->kind != ta->items[i]->kind) {
        snprintf(msg, sizeof msg, "access %d is a %s in the block but a %s in desc", i + 1, tir_kind_name(ta->items[i]->kind),
                 tir_kind_name(da->items[i]->kind));
        bad = 1;
        break;
      }
      int j;
      for (j = 0; j < nb; j++)
        if (dbuf[j] == d) break;
      if (j < nb) {
        if (tbuf[j] != t) {
          snprintf(msg, sizeof msg, "desc uses its buffer %s for both %s and %s", d->name, tbuf[j]->name, t->name);
          bad = 1;
        }
        continue;
      }
      for (j = 0; j < nb; j++)
        if (tbuf[j] == t) {
          snprintf(msg, sizeof msg, "the block uses %s where desc uses both %s and %s", t->name, dbuf[j]->name, d->name);
          bad = 1;
        }
      if (bad) break;
      if (!tir_dtype_eq(d->hdr.dtype, t->hdr.dtype)) {
        char x[32], y[32];
        snprintf(msg, sizeof msg, "desc's %s is %s, the block's %s is %s", d->name, tir_dtype_str(d->hdr.dtype, x), t->name,
                 tir_dtype_str(t->hdr.dtype, y));
        bad = 1;
        break;
      }
      if (!scope_compatible(d->scope, t->scope)) {
        snprintf(msg, sizeof msg, "desc's %s is in scope '%s', the block's %s is in scope '%s' (cache_read/cache_write or set_scope it)",
                 d->name, d->scope, t->name, t->scope);
        bad = 1;
        break;
      }
      const tir_Array *di = access_indices(da->items[i]), *ti = access_indices(ta->items[i]);
      if (d->shape->size > t->shape->size || di->size != d->shape->size || ti->size != t->shape->size) {
        snprintf(msg, sizeof msg, "desc's %s has %d dimensions, the block's %s has %d", d->name, d->shape->size, t->name,
                 t->shape->size);
        bad = 1;
        break;
      }
      if (nb == MAXN) {
        bad = 1;
        break;
      }
      /* desc's buffer views the trailing dimensions of the block's: leading indices (a batch
       * index, the row of a scalar output) and the offsets of the trailing ones must be fixed
       * over the intrinsic, i.e. not use the iteration variables paired with desc's */
      int extra = t->shape->size - d->shape->size;
      tir_Array *bs = tir_array_new(ti->size);
      for (int q = 0; q < ti->size; q++)
        bs->items[q] = q < extra ? R(ti->items[q]) : tir_simplify_take(an, tir_sub(R(ti->items[q]), R(di->items[q - extra])));
      for (int q = 0; q < ti->size && !bad; q++)
        if (tir_uses_any_var(bs->items[q], npair, (tir_Var *const *)tvals)) {
          char *x = tir_print_expr(&ti->hdr), *y = tir_print_expr(&di->hdr);
          snprintf(msg, sizeof msg,
                   "the block's %s[%s] does not map onto desc's %s[%s]: desc's buffer views the trailing dimensions of the block's, "
                   "each index offset by an amount fixed over the intrinsic, but dimension %d differs by an amount that varies "
                   "with the intrinsic's iteration (reindex or transform_layout %s first)",
                   t->name, x, d->name, y, q, t->name);
          free(x);
          free(y);
          bad = 1;
        }
      dbuf[nb] = (tir_Buffer *)d;
      tbuf[nb] = (tir_Buffer *)t;
      base[nb++] = bs;
    }
    /* the bodies must be equal after the mapping */
    if (!bad) {
      RebaseCtx rc_ = {dbuf, tbuf, base, nb, an};
      for (int w = 0; w < 2 && !bad; w++) {
        const tir_Node *dbody = dsub[w], *tbody = w ? I->body : I->init;
        if (!dbody) continue;
        tir_Node *b2 = tir_mutate(dbody, rebase_fn, &rc_);
        tir_Node *t2 = tir_mutate(tbody, canon_fn, &rc_);
        char diff[400];
        if (!tir_structural_equal(b2, t2)) {
          tir_structural_diff(b2, t2, diff, sizeof diff, 0);
          char *x = tir_print(b2), *y = tir_print(t2);
          snprintf(msg, sizeof msg, "the block's %s differs from desc '%s': %s\n  desc (mapped): %.150s\n  block:         %.150s",
                   w ? "body" : "init", name, diff, x, y);
          free(x);
          free(y);
          bad = 1;
        }
        tir_release(b2);
        tir_release(t2);
      }
    }
    tir_release(dsub[0]);
    tir_release(dsub[1]);
    /* every desc parameter must be used */
    int param_of[MAXN];
    for (int p = 0; !bad && p < desc->params->size; p++) {
      param_of[p] = -1;
      for (int j = 0; j < nb; j++)
        if (&dbuf[j]->hdr == desc->params->items[p]) param_of[p] = j;
      if (param_of[p] < 0) {
        snprintf(msg, sizeof msg, "intrinsic '%s': desc's parameter %s is not accessed by its block", name,
                 ((const tir_Buffer *)desc->params->items[p])->name);
        bad = 1;
      }
    }
    if (bad) {
      free(ta);
      free(da);
      for (int j = 0; j < nb; j++) tir_release(base[j]);
      sch_error(s, P, top, "this nest", "%s", msg);
      goto done;
    }
    /* regions: accesses of each target buffer over our loops */
    tir_DomEntry doms[MAXN];
    for (int i = 0; i < nt; i++) sch_loop_dom(tl[i], &doms[i]);
    tir_Array *match = tir_array_empty(), *reads = tir_array_empty(), *writes = tir_array_empty();
    tir_Var *from[MAXN];
    tir_Node *to[MAXN];
    int nsub = 0;
    tir_Buffer *impl_new[MAXN] = {0};
    tir_Buffer *impl_old[MAXN] = {0};
    int np = desc->params->size;
    for (int p = 0; p < np && !bad; p++) {
      int j = param_of[p];
      const tir_Buffer *db_ = dbuf[j], *tb = tbuf[j];
      int nd_ = tb->shape->size;
      tir_Node **lo = calloc((size_t)nd_, sizeof *lo), **hi = calloc((size_t)nd_, sizeof *hi);
      int is_read = 0, is_write = 0;
      for (int i = 0; i < ta->n && !bad; i++) {
        if (access_buffer(ta->items[i]) != tb) continue;
        if (ta->items[i]->kind == TIR_BufferStore) is_write = 1;
        else is_read = 1;
        const tir_Array *idx = access_indices(ta->items[i]);
        tir_Array *reg = tir_array_new(idx->size);
        for (int d = 0; d < idx->size; d++) {
          /* block vars -> bindings */
          tir_Var *bv[MAXN];
          for (int k = 0; k < nv; k++) bv[k] = ((const tir_IterVar *)I->iter_vars->items[k])->var;
          tir_Node *e = tir_substitute(idx->items[d], nv, bv, ibr->iter_values->items);
          reg->items[d] = &tir_range(e, tir_i32(1))->hdr;
        }
        tir_Array *rel = tir_relax_region(an, reg, doms, nt, NULL);
        tir_release(reg);
        if (!rel) {
          snprintf(msg, sizeof msg, "cannot bound the region of %s the block accesses", tb->name);
          bad = 1;
          break;
        }
        for (int d = 0; d < nd_; d++) {
          const tir_Range *r = (const tir_Range *)rel->items[d];
          tir_Node *h = tir_simplify_take(an, tir_sub(tir_add(R(r->min), R(r->extent)), tir_i32(1)));
          if (!lo[d]) {
            lo[d] = tir_simplify(an, r->min);
            hi[d] = h;
          } else {
            tir_Node *l2 = tir_simplify_take(an, tir_min(lo[d], R(r->min)));
            tir_Node *h2 = tir_simplify_take(an, tir_max(hi[d], h));
            lo[d] = l2;
            hi[d] = h2;
          }
        }
        tir_release(rel);
      }
      tir_Array *region = tir_array_new(nd_);
      for (int d = 0; d < nd_ && !bad; d++) {
        tir_Node *ext = tir_simplify_take(an, tir_add(tir_sub(R(hi[d]), R(lo[d])), tir_i32(1)));
        int64_t e, want = 1;
        int lead_n = nd_ - db_->shape->size;
        if (d >= lead_n) tir_is_const_int(db_->shape->items[d - lead_n], &want);
        if (!tir_is_const_int(ext, &e) || e != want) {
          char *x = tir_print_expr(ext);
          snprintf(msg, sizeof msg, "desc's %s has extent %lld in dimension %d, but the nest covers %s of %s there", db_->name,
                   (long long)want, d, x, tb->name);
          free(x);
          bad = 1;
        }
        region->items[d] = &tir_range(R(lo[d]), ext)->hdr;
      }
      for (int d = 0; d < nd_; d++) {
        tir_release(lo[d]);
        tir_release(hi[d]);
      }
      free(lo);
      free(hi);
      if (bad) {
        tir_release(region);
        break;
      }
      const tir_Buffer *ib = (const tir_Buffer *)impl->params->items[p];
      tir_Buffer *nbuf = fresh_buffer(ib, from, to, &nsub);
      impl_old[p] = (tir_Buffer *)ib;
      impl_new[p] = nbuf;
      match = tir_array_push(match, &tir_match_buffer_region((tir_Buffer *)R(&nbuf->hdr),
                                                             tir_buffer_region((tir_Buffer *)R(&tb->hdr), (tir_Array *)R(&region->hdr)))->hdr);
      if (is_read) reads = tir_array_push(reads, &tir_buffer_region((tir_Buffer *)R(&tb->hdr), (tir_Array *)R(&region->hdr))->hdr);
      if (is_write) writes = tir_array_push(writes, &tir_buffer_region((tir_Buffer *)R(&tb->hdr), (tir_Array *)R(&region->hdr))->hdr);
      tir_release(region);
    }
    for (int i = 0; i < nt; i++) {
      tir_release(doms[i].set.min);
      tir_release(doms[i].set.max);
    }
    free(ta);
    free(da);
    for (int j = 0; j < nb; j++) tir_release(base[j]);
    if (bad) {
      for (int p = 0; p < np; p++) tir_release(impl_new[p]);
      tir_release(match);
      tir_release(reads);
      tir_release(writes);
      for (int i = 0; i < nsub; i++) tir_release(to[i]);
      sch_error(s, P, top, "this nest", "%s", msg);
      goto done;
    }
    /* impl's body with its buffers and symbols renamed */
    const tir_Node *ibody = impl->body;
    if (ibody->kind == TIR_BlockRealize && ((const tir_BlockRealize *)ibody)->block->iter_vars->size == 0 &&
        ((const tir_BlockRealize *)ibody)->block->alloc_buffers->size == 0)
      ibody = ((const tir_BlockRealize *)ibody)->block->body;
    tir_Node *b1 = tir_substitute_buffers(ibody, np, impl_old, impl_new);
    tir_Node *body = tir_substitute(b1, nsub, from, to);
    tir_release(b1);
    for (int p = 0; p < np; p++) tir_release(impl_new[p]);
    for (int i = 0; i < nsub; i++) tir_release(to[i]);
    char *bname = tir_strprintf("%s_o", I->name);
    /* impl's root-block annotations come along (TVM Tensorize), then the intrinsic's name */
    const tir_Array *impl_anns = impl->body->kind == TIR_BlockRealize ? ((const tir_BlockRealize *)impl->body)->block->annotations : NULL;
    tir_Array *anns = impl_anns ? tir_ann_set(impl_anns, "tensor_intrin", tir_string_imm(name))
                                : tir_array_of(1, &tir_ann("tensor_intrin", tir_string_imm(name))->hdr);
    tir_Block *nb_ = tir_block_new(bname, NULL, reads, writes, NULL, NULL, match, anns, body);
    free(bname);
    rc = nb_->uid;
    tir_Node *pred = R(ibr->predicate);
    tir_Node *realize = tir_block_realize(tir_array_empty(), pred, nb_);
    sch_replace(s, top, realize);
  }
done:
  for (int i = 0; i < npair; i++) tir_release(pbind[i]);
  for (int i = 0; i < nsubv; i++) tir_release(sub_to[i]);
  tir_analyzer_free(an);
  return rc;
}

/* the block realize at the end of the nest (under loop lv, or block uid), or NULL */
static const tir_BlockRealize *target_realize(tir_Schedule *s, const tir_Var *lv, int64_t uid) {
  if (!lv) return sch_find_block(s->func->body, uid, NULL);
  const tir_For *f = sch_find_loop(s->func->body, lv, NULL);
  const tir_Node *cur = f ? &f->hdr : NULL;
  while (cur && cur->kind == TIR_For) cur = ((const tir_For *)cur)->body;
  return cur && cur->kind == TIR_BlockRealize ? (const tir_BlockRealize *)cur : NULL;
}

/* br's block with the factors of C = C + x * y exchanged (owned realize), or NULL */
static tir_Node *with_factors_exchanged(const tir_BlockRealize *br) {
  const tir_Block *b = br->block;
  if (b->body->kind != TIR_BufferStore) return NULL;
  const tir_BufferStore *st = (const tir_BufferStore *)b->body;
  if (st->value->kind != TIR_Add) return NULL;
  const tir_Add *add = (const tir_Add *)st->value;
  int mul_b = add->b->kind == TIR_Mul;
  const tir_Node *m = mul_b ? add->b : add->a;
  if (m->kind != TIR_Mul) return NULL;
  const tir_Mul *mul = (const tir_Mul *)m;
  tir_Node *swapped = tir_binary_raw(TIR_Mul, R(mul->b), R(mul->a));
  tir_Node *sum = mul_b ? tir_binary_raw(TIR_Add, R(add->a), swapped) : tir_binary_raw(TIR_Add, swapped, R(add->b));
  tir_Node *store = tir_buffer_store((tir_Buffer *)R(st->buffer), sum, (tir_Array *)R(st->indices));
  tir_Block *nb = tir_block_with_body(b, store);
  return sch_realize_with_block(br, nb);
}

int64_t tir_sched_tensorize(tir_Schedule *s, const tir_Var *lv, int64_t uid, const char *name) {
  int64_t r = tensorize_once(s, lv, uid, name);
  if (r >= 0) return r;
  const tir_BlockRealize *br = target_realize(s, lv, uid);
  tir_Node *alt = br ? with_factors_exchanged(br) : NULL;
  if (!alt) return r;
  /* keep the first error (about the block as written) unless the exchanged form matches */
  tir_Error saved = *tir_error_get();
  memset(tir_error_get(), 0, sizeof saved);
  tir_Node *orig = tir_retain((tir_Node *)&br->hdr);
  sch_replace(s, &br->hdr, R(alt));
  int64_t r2 = tensorize_once(s, lv, uid, name);
  if (r2 < 0) {
    const tir_BlockRealize *now = target_realize(s, lv, uid);
    if (now) sch_replace(s, &now->hdr, R(orig));
    tir_error_clear();
    *tir_error_get() = saved;
  } else {
    free(saved.message);
    free(saved.detail);
    tir_release(saved.ir);
    for (int i = 0; i < saved.n_marks; i++) free(saved.mark_labels[i]);
  }
  tir_release(orig);
  tir_release(alt);
  return r2 < 0 ? -1 : r2;
}
