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

#include "sched_util.h"

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
  return strncmp(b->scope, "shared", 6) == 0;
}

int sch_compute_location(tir_Schedule *s, const char *P, int64_t uid, const tir_Var *lv, int preserve_unit_loops,
                         int index, int reverse) {
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
  if (sch_check_complete_or_reduction(s, P, br)) return -1;
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
  int n_dep = 0;
  for (int i = 0; i < n_all; i++) {
    if (!is_dependent(all[i]->block, &dc)) continue;
    n_dep++;
    if (!sch_contains_stmt(loop->body, &all[i]->hdr)) {
      sch_error(s, P, &all[i]->hdr, reverse ? "a producer outside the loop" : "a consumer outside the loop",
                "block '%s' %s block '%s' but is not under loop %s", all[i]->block->name,
                reverse ? "produces what" : "consumes what", blk->name, lv->name);
      tir_error_mark(&loop->hdr, "the target loop");
      free(all);
      return -1;
    }
  }
  free(all);
  if (n_dep == 0) {
    return sch_error(s, P, &br->hdr, "this block", "block '%s' has no %s under loop %s", blk->name,
                     reverse ? "producer" : "consumer", lv->name);
  }
  /* insertion position among the loop body's children */
  int nch = sch_seq_size(loop->body), first_cons = nch, last_prod = -1;
  for (int i = 0; i < nch; i++) {
    const tir_Node *ch = sch_seq_item(loop->body, i);
    if (first_cons == nch && subtree_has_dependent(ch, &dc, 1)) first_cons = i;
    if (subtree_has_dependent(ch, &dc, 0)) last_prod = i;
  }
  int pos = reverse ? last_prod + 1 : first_cons;
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
  for (int i = 0; i < pl.n; i++)
    if (pl.nodes[i]->kind == TIR_For) {
      const tir_For *f = (const tir_For *)pl.nodes[i];
      tir_analyzer_bind_range(an, f->loop_var, f->min, f->extent);
    }
  const tir_Array *provided = reverse ? blk->reads : blk->writes;
  int nv = blk->iter_vars->size;
  Dom *doms = calloc((size_t)nv + 1, sizeof *doms);
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
      for (int k = 0; k < ndim; k++) {
        const tir_Range *pr_k = (const tir_Range *)preg->region->items[k];
        if (!req[k].lo || !tir_is_one(pr_k->extent)) continue;
        const tir_Var *v = NULL;
        tir_Node *vlo = NULL, *vhi = NULL;
        if (solve_dim(pr_k->min, req[k].lo, req[k].hi, &v, &vlo, &vhi)) {
          int idx = -1;
          for (int q = 0; q < nv; q++)
            if (((const tir_IterVar *)blk->iter_vars->items[q])->var == v) idx = q;
          if (idx >= 0) dom_union(an, &doms[idx], vlo, vhi);
          else {
            tir_release(vlo);
            tir_release(vhi);
          }
        }
      }
    }
    for (int k = 0; k < ndim; k++) {
      tir_release(req[k].lo);
      tir_release(req[k].hi);
    }
    free(req);
  }
  free(deps);
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
    if (!doms[k].lo) {
      lo = tir_retain(own_lo);
      hi = tir_retain(own_hi);
    } else {
      tir_Node *c1 = tir_cmp(TIR_GE, R(doms[k].lo), R(own_lo)), *c2 = tir_cmp(TIR_LE, R(doms[k].lo), R(own_lo));
      if (tir_can_prove(an, c1)) lo = tir_retain(doms[k].lo);
      else if (tir_can_prove(an, c2)) lo = tir_retain(own_lo);
      else lo = tir_retain(doms[k].lo), need_lo = 1;
      tir_release(c1);
      tir_release(c2);
      c1 = tir_cmp(TIR_LE, R(doms[k].hi), R(own_hi));
      c2 = tir_cmp(TIR_GE, R(doms[k].hi), R(own_hi));
      if (tir_can_prove(an, c1)) hi = tir_retain(doms[k].hi);
      else if (tir_can_prove(an, c2)) hi = tir_retain(own_hi);
      else hi = tir_retain(doms[k].hi), need_hi = 1;
      tir_release(c1);
      tir_release(c2);
    }
    tir_Node *ext = tir_sub(tir_add(R(hi), tir_int_imm(hi->dtype, 1)), R(lo));
    extents[k] = tir_simplify(an, ext);
    tir_release(ext);
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
    if (need_hi) pred = tir_and(pred, tir_cmp(TIR_LE, R(bindings->items[k]), R(own_hi)));
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
  /* renumber the generated loops ax0, ax1, ... in order */
  int na = 0;
  for (int k = 0; k < nv; k++)
    if (loop_vars[k]) {
      char *name = tir_strprintf("ax%d", na++);
      tir_node_set_str(&loop_vars[k]->name, name);
      free(name);
    }
  body = tir_block_realize(bindings, pred, (tir_Block *)R(blk));
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
  tir_Node *ins = sch_insert_into(loop2->body, pos, body);
  pl2.n--; /* simplify with the loop ranges above and including the target loop */
  tir_For *nl = (tir_For *)tir_node_copy(&loop2->hdr);
  tir_release(nl->body);
  nl->body = ins;
  tir_Node *simp = sch_simplify_bindings(&nl->hdr, &pl2);
  tir_release(nl);
  sch_replace(s, &loop2->hdr, simp);
  return 0;
}
