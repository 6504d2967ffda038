/* reverse_compute_inline.c -- fold a consumer into its producer (TVM compute_inline.cc,
 * ReverseComputeInline), e.g. an epilogue into the block that writes a cache back.
 *
 * The consumer must be a complete block "D[f(v)] = g(B[v0, v1, ...], other loads)" without
 * predicate, where every load of B uses the same indices: distinct iteration variables
 * covering its whole iteration space, or a one-to-one affine map of them (B[(vi * 4 + vj) //
 * 8, ...], B[vj * 16 + vk, vl] with a unit vi), which is inverted (tir_iter_map_inverse) so
 * that each iteration variable is an expression of B's indices.  B must be written by exactly one complete producer
 * "B[p(u)] = e(u)" (B's only writer, not an output, read by no other block) whose store
 * indices are iteration variables or constants covering the consumer's iteration domain, or
 * a one-to-one affine map of them whose range is exactly what the consumer reads.
 * The producer becomes "D[f(v := p(u))] = g(e(u), ...)", with a predicate keeping it to
 * the consumer's domain where that is smaller (TVM's "overcomputed producer"); the
 * consumer and B go.  The consumer's work moves up to the producer, so no block between
 * the two may read or write what the consumer writes. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../dataflow.h"

typedef struct {
  const tir_Buffer *buf;
  const tir_Array *idx; /* the indices every load of buf must use */
  int bad;
  int count;
} LoadCheck;

static int check_loads(const tir_Node *n, void *p) {
  LoadCheck *c = p;
  if (n->kind == TIR_BufferLoad && ((const tir_BufferLoad *)n)->buffer == c->buf) {
    const tir_BufferLoad *l = (const tir_BufferLoad *)n;
    if (!c->idx) c->idx = l->indices;
    else if (!tir_expr_deep_equal(&c->idx->hdr, &l->indices->hdr)) c->bad = 1;
    c->count++;
  }
  return 0;
}

typedef struct {
  const tir_Buffer *buf;
  const tir_Node *value;
} ReplaceLoad;

static tir_Node *replace_load(const tir_Node *n, void *p) {
  ReplaceLoad *c = p;
  /* address_of(B[i]) is an opaque access, not a load (left for the opaque-use check) */
  const tir_BufferLoad *addr = tir_address_of_load(n);
  if (addr && addr->buffer == c->buf) return tir_retain(n);
  if (n->kind == TIR_BufferLoad && ((const tir_BufferLoad *)n)->buffer == c->buf) return tir_retain(c->value);
  return NULL;
}

typedef struct {
  const tir_Node *new_store;
  tir_Node *extra_pred; /* conjuncts to add to the producer's predicate (owned) */
} ProducerCtx;

static tir_Node *rewrite_producer(const tir_BlockRealize *br, void *p) {
  ProducerCtx *c = p;
  tir_Block *nb = tir_block_with_body(br->block, tir_retain(c->new_store));
  tir_Block *det = tir_block_with_detected_access(nb);
  tir_release(nb);
  tir_BlockRealize *r = (tir_BlockRealize *)sch_realize_with_block(br, det);
  if (!tir_is_one(c->extra_pred)) {
    tir_Node *pred = tir_is_one(r->predicate) ? tir_retain(c->extra_pred) : tir_and(R(r->predicate), R(c->extra_pred));
    tir_release(r->predicate);
    r->predicate = pred;
  }
  return &r->hdr;
}

/* "consumer iteration domain within the producer's": returns 0 if provable, else -1. */
static int dom_within(tir_Analyzer *an, const tir_Range *inner, const tir_Range *outer) {
  tir_Node *c1 = tir_cmp(TIR_LE, R(outer->min), R(inner->min));
  tir_Node *c2 = tir_cmp(TIR_LE, tir_add(R(inner->min), R(inner->extent)), tir_add(R(outer->min), R(outer->extent)));
  int ok = tir_can_prove(an, c1) && tir_can_prove(an, c2);
  tir_release(c1);
  tir_release(c2);
  return ok ? 0 : -1;
}

/* The ranges of a producer's store indices when they are a one-to-one affine map of its
 * iteration variables (constant domains): 1 with min/ext per index, else 0. */
static int producer_store_ranges(const tir_Block *pblk, const tir_BufferStore *pst, int64_t *min, int64_t *ext) {
  int niv = pblk->iter_vars->size, n = pst->indices->size;
  if (niv == 0) return 0;
  tir_LoopIter *it = calloc((size_t)niv, sizeof *it);
  tir_Var **nv = calloc((size_t)n + 1, sizeof *nv);
  tir_Node **inv = calloc((size_t)niv, sizeof *inv);
  int ok = 1;
  for (int k = 0; k < niv && ok; k++) {
    const tir_IterVar *iv = (const tir_IterVar *)pblk->iter_vars->items[k];
    it[k].var = iv->var;
    ok = tir_is_const_int(iv->dom->min, &it[k].min) && tir_is_const_int(iv->dom->extent, &it[k].extent);
  }
  tir_DType dt = ((const tir_IterVar *)pblk->iter_vars->items[0])->var->hdr.dtype;
  for (int d = 0; d < n; d++) nv[d] = tir_var_new("p", dt);
  char why[128];
  if (ok) ok = tir_iter_map_inverse((const tir_Node *const *)pst->indices->items, n, it, niv, (const tir_Var *const *)nv, min, ext,
                                    inv, why, sizeof why);
  for (int k = 0; k < niv; k++) tir_release(inv[k]);
  for (int d = 0; d < n; d++) tir_release(nv[d]);
  free(inv);
  free(nv);
  free(it);
  return ok;
}

int tir_sched_reverse_compute_inline(tir_Schedule *s, int64_t uid, int prior_producers) {
  const char *P = "reverse_compute_inline";
  SchPath pb;
  const tir_BlockRealize *br = sch_find_block(s->func->body, uid, &pb);
  if (!br) return tir_sched_block_realize(s, uid, P) ? 0 : -1;
  const tir_Block *blk = br->block;
  int sidx = sch_scope_index(&pb);
  if (sidx < 0) return sch_error(s, P, &br->hdr, "this block", "block '%s' is the root block; it cannot be inlined", blk->name);
  const tir_Block *scope_blk = (const tir_Block *)pb.nodes[sidx];
  if (blk->init) return sch_error(s, P, &br->hdr, "this block", "block '%s' is a reduction; it cannot be inlined", blk->name);
  if (sch_check_complete(s, P, scope_blk, br)) return -1;
  if (blk->body->kind != TIR_BufferStore || blk->alloc_buffers->size || blk->match_buffers->size || !tir_is_one(br->predicate))
    return sch_error(s, P, &br->hdr, "this block", "the body of block '%s' must be a single store without a predicate", blk->name);
  const tir_BufferStore *st = (const tir_BufferStore *)blk->body;
  const tir_BlockRealize **all;
  int n_all = sch_child_blocks(&scope_blk->hdr, &all);
  /* the producer: the single block of the scope that writes a buffer this block reads */
  const tir_BlockRealize *prod = NULL;
  const tir_Buffer *buf = NULL;
  tir_Var **cvars = NULL;
  tir_Analyzer *an = NULL;
  int rc = -1;
  /* the inverse of an affine load (owned; released at the end) */
  tir_Var **ivs = NULL, **uv = NULL;
  tir_Node **inv = NULL;
  tir_Range **owned = NULL;
  int inv_n = 0, inv_niv = 0;
  /* prior_producers: with several producers, the last one (in the scope's order) is folded
   * into; the others finish before it starts, so what the consumer reads from them is ready
   * at its new place (the row sums of A a quantized GEMM's epilogue reads besides the
   * accumulator).  TVM's ReverseComputeInline takes a single producer only. */
  for (int i = 0; i < n_all; i++) {
    if (all[i]->block == blk || !sch_is_producer_of(all[i]->block, blk)) continue;
    if (prod && !prior_producers) {
      sch_error(s, P, &all[i]->hdr, "a second producer", "block '%s' has more than one producer in its scope ('%s' and '%s')",
                blk->name, prod->block->name, all[i]->block->name);
      goto done;
    }
    prod = all[i];
  }
  if (!prod) {
    sch_error(s, P, &br->hdr, "this block", "block '%s' has no producer in its scope", blk->name);
    goto done;
  }
  const tir_Block *pblk = prod->block;
  if (pblk->writes->size != 1 || pblk->init || pblk->body->kind != TIR_BufferStore ||
      ((const tir_BufferStore *)pblk->body)->buffer != ((const tir_BufferRegion *)pblk->writes->items[0])->buffer) {
    sch_error(s, P, &prod->hdr, "the producer", "producer '%s' must be a complete block with a single store", pblk->name);
    goto done;
  }
  if (sch_check_complete(s, P, scope_blk, prod)) goto done;
  buf = ((const tir_BufferRegion *)pblk->writes->items[0])->buffer;
  if (sch_is_param_buffer(s->func, buf)) {
    sch_error(s, P, &prod->hdr, "the producer", "%s is a function output; folding the consumer in would drop it", buf->name);
    goto done;
  }
  int pidx = sch_block_index(all, n_all, prod), cidx = sch_block_index(all, n_all, br);
  if (pidx > cidx) {
    sch_error(s, P, &br->hdr, "this block", "block '%s' reads %s before its producer '%s' writes it", blk->name, buf->name,
              pblk->name);
    goto done;
  }
  for (int i = 0; i < n_all; i++)
    if (all[i]->block != blk && all[i]->block != pblk && (sch_block_reads(all[i]->block, buf) || sch_mentions_buffer(&all[i]->hdr, buf))) {
      sch_error(s, P, &all[i]->hdr, "another consumer", "%s has another consumer, '%s'", buf->name, all[i]->block->name);
      goto done;
    }
  for (int i = pidx + 1; i < cidx; i++) {
    const tir_Buffer *hit;
    /* what the consumer reads must not change between its new place and its old one */
    for (int r = 0; r < blk->reads->size; r++) {
      const tir_Buffer *rb = ((const tir_BufferRegion *)blk->reads->items[r])->buffer;
      if (sch_block_writes(all[i]->block, rb)) {
        sch_error(s, P, &all[i]->hdr, "this block",
                  "block '%s' writes %s between the producer '%s' and block '%s', which reads it; the read cannot move up",
                  all[i]->block->name, rb->name, pblk->name, blk->name);
        goto done;
      }
    }
    if (sch_touches_what_writes(all[i]->block, blk, &hit)) {
      sch_error(s, P, &all[i]->hdr, "this block",
                "block '%s' uses %s between the producer '%s' and block '%s', which writes it; the write cannot move up",
                all[i]->block->name, hit->name, pblk->name, blk->name);
      goto done;
    }
  }
  /* every load of buf in the consumer uses the same indices */
  LoadCheck lc = {buf, NULL, 0, 0};
  tir_visit(st->value, check_loads, &lc);
  for (int i = 0; i < st->indices->size; i++) tir_visit(st->indices->items[i], check_loads, &lc);
  if (lc.bad || !lc.idx) {
    sch_error(s, P, &br->hdr, "this block", "block '%s' must read %s at one index tuple (every load the same indices)", blk->name,
              buf->name);
    goto done;
  }
  int n = lc.idx->size, niv = blk->iter_vars->size;
  cvars = calloc((size_t)n + 1, sizeof *cvars);
  const tir_Range **cdoms = calloc((size_t)n + 1, sizeof *cdoms);
  /* the simple case: the indices are distinct iteration variables covering all of them */
  int trivial = n == niv;
  for (int d = 0; d < n && trivial; d++) {
    const tir_Node *ix = lc.idx->items[d];
    int ok = ix->kind == TIR_Var;
    for (int e = 0; e < d && ok; e++) ok = cvars[e] != (const tir_Var *)ix;
    int is_iter = 0;
    for (int k = 0; k < niv && ok; k++)
      if (((const tir_IterVar *)blk->iter_vars->items[k])->var == (const tir_Var *)ix) {
        is_iter = 1;
        cdoms[d] = ((const tir_IterVar *)blk->iter_vars->items[k])->dom;
      }
    if (!ok || !is_iter) trivial = 0;
    cvars[d] = (tir_Var *)ix;
  }
  /* otherwise an affine, one-to-one map of the iteration variables (TVM ReverseComputeInline
   * with affine loads, e.g. B[(vi * 32 + vj) // 128, (vi * 32 + vj) % 128]): inverted, each
   * iteration variable becomes an expression of the producer's indices */
  if (!trivial) {
    inv_n = n;
    inv_niv = niv;
    tir_LoopIter *it = calloc((size_t)niv + 1, sizeof *it);
    int64_t *omin = calloc((size_t)n + 1, sizeof *omin), *oext = calloc((size_t)n + 1, sizeof *oext);
    ivs = calloc((size_t)niv + 1, sizeof *ivs);
    uv = calloc((size_t)n + 1, sizeof *uv);
    inv = calloc((size_t)niv + 1, sizeof *inv);
    owned = calloc((size_t)n + 1, sizeof *owned);
    char why[256] = "";
    int ok = niv > 0;
    for (int k = 0; k < niv && ok; k++) {
      const tir_IterVar *iv = (const tir_IterVar *)blk->iter_vars->items[k];
      ivs[k] = iv->var;
      it[k].var = iv->var;
      ok = tir_is_const_int(iv->dom->min, &it[k].min) && tir_is_const_int(iv->dom->extent, &it[k].extent);
      if (!ok) snprintf(why, sizeof why, "iteration variable %s has a symbolic domain", iv->var->name);
    }
    tir_DType dt = niv > 0 ? ((const tir_IterVar *)blk->iter_vars->items[0])->var->hdr.dtype : lc.idx->items[0]->dtype;
    for (int d = 0; d < n; d++) {
      char name[24];
      snprintf(name, sizeof name, "u%d", d);
      uv[d] = tir_var_new(name, dt);
    }
    if (ok) ok = tir_iter_map_inverse((const tir_Node *const *)lc.idx->items, n, it, niv, (const tir_Var *const *)uv, omin, oext,
                                      inv, why, sizeof why);
    if (ok)
      for (int d = 0; d < n; d++) {
        owned[d] = tir_range(tir_int_imm(lc.idx->items[d]->dtype, omin[d]), tir_int_imm(lc.idx->items[d]->dtype, oext[d]));
        cdoms[d] = owned[d];
      }
    free(it);
    free(omin);
    free(oext);
    if (!ok) {
      sch_error(s, P, &br->hdr, "this block",
                "block '%s' must read %s at its iteration variables or a one-to-one affine map of them (%s)", blk->name,
                buf->name, why);
    }
    if (!ok) {
      free(cdoms);
      goto done;
    }
  }
  {
    const tir_BufferStore *pst = (const tir_BufferStore *)pblk->body;
    if (pst->indices->size != n) {
      free(cdoms);
      sch_error(s, P, &prod->hdr, "the producer", "dimension mismatch between producer and consumer of %s", buf->name);
      goto done;
    }
    /* the producer's indices: iteration variables or constants covering the consumer's domain;
     * where the consumer's domain is smaller the producer gets a predicate */
    an = tir_analyzer_new();
    for (int q = 0; q < pb.n; q++)
      if (pb.nodes[q]->kind == TIR_For) {
        const tir_For *f = (const tir_For *)pb.nodes[q];
        tir_analyzer_bind_range(an, f->loop_var, f->min, f->extent);
      }
    SchPath pp;
    sch_path_to(s->func->body, &prod->hdr, &pp);
    for (int q = 0; q < pp.n; q++)
      if (pp.nodes[q]->kind == TIR_For) {
        const tir_For *f = (const tir_For *)pp.nodes[q];
        tir_analyzer_bind_range(an, f->loop_var, f->min, f->extent);
      }
    tir_Node *extra = tir_bool_imm(1);
    int pranges_done = 0, pranges_ok = 0;
    int64_t *pmin = calloc((size_t)n + 1, sizeof *pmin), *pext = calloc((size_t)n + 1, sizeof *pext);
    for (int d = 0; d < n && rc != -2; d++) {
      const tir_Node *ix = pst->indices->items[d];
      int64_t c;
      const tir_Range *pdom = NULL;
      int k_at = -1;
      for (int k = 0; k < pblk->iter_vars->size; k++)
        if (&((const tir_IterVar *)pblk->iter_vars->items[k])->var->hdr == ix) {
          pdom = ((const tir_IterVar *)pblk->iter_vars->items[k])->dom;
          k_at = k;
        }
      if (tir_is_const_int(ix, &c)) {
        /* the consumer's variable must take exactly that value */
        tir_Range *one = tir_range(R((tir_Node *)ix), tir_int_imm(ix->dtype, 1));
        int within = dom_within(an, cdoms[d], one) == 0 && dom_within(an, one, cdoms[d]) == 0;
        tir_release(one);
        if (!within) rc = -3;
        continue;
      }
      if (!pdom) {
        /* a store at a one-to-one affine map of the producer's iteration variables (e.g.
         * C[vi // 8, vi % 8, vj] after an earlier inlining): its range must be exactly what
         * the consumer reads (no predicate can cut such a store to the consumer's part) */
        int64_t cmin, cext;
        if (!pranges_done) {
          pranges_done = 1;
          pranges_ok = producer_store_ranges(pblk, pst, pmin, pext);
        }
        if (pranges_ok && tir_is_const_int(cdoms[d]->min, &cmin) && tir_is_const_int(cdoms[d]->extent, &cext) && cmin == pmin[d] &&
            cext == pext[d])
          continue;
        sch_error(s, P, &prod->hdr, "the producer",
                  "the store of producer '%s' must use its iteration variables or constants as indices, or a one-to-one "
                  "affine map of them covering exactly what block '%s' reads (index %d does not)",
                  pblk->name, blk->name, d + 1);
        rc = -2;
        break;
      }
      if (dom_within(an, cdoms[d], pdom)) {
        rc = -3;
        continue;
      }
      /* bounds of the consumer's domain the producer's domain does not already imply */
      const tir_Node *bind = prod->iter_values->items[k_at];
      tir_Node *lo_eq = tir_cmp(TIR_EQ, R(cdoms[d]->min), R(pdom->min));
      if (!tir_can_prove(an, lo_eq)) extra = tir_and(extra, tir_cmp(TIR_GE, R((tir_Node *)bind), R(cdoms[d]->min)));
      tir_release(lo_eq);
      tir_Node *hi_eq = tir_cmp(TIR_EQ, tir_add(R(cdoms[d]->min), R(cdoms[d]->extent)), tir_add(R(pdom->min), R(pdom->extent)));
      if (!tir_can_prove(an, hi_eq))
        extra = tir_and(extra, tir_cmp(TIR_LT, R((tir_Node *)bind), tir_add(R(cdoms[d]->min), R(cdoms[d]->extent))));
      tir_release(hi_eq);
    }
    free(cdoms);
    free(pmin);
    free(pext);
    if (rc == -2) {
      tir_release(extra);
      rc = -1;
      goto done;
    }
    if (rc == -3) {
      tir_release(extra);
      rc = -1;
      sch_error(s, P, &prod->hdr, "the producer", "producer '%s' does not write all of %s that block '%s' reads", pblk->name,
                buf->name, blk->name);
      tir_error_mark(&br->hdr, "the consumer");
      goto done;
    }
    tir_Node *extra_s = tir_simplify(an, extra);
    tir_release(extra);
    /* consumer var at position d := producer's index d (or, for an affine load, each
     * consumer iteration variable := its inverse over the producer's indices) */
    ReplaceLoad rl = {buf, pst->value};
    tir_Node *val = tir_mutate(st->value, replace_load, &rl);
    tir_Node *val2;
    tir_Array *oidx = tir_array_new(st->indices->size);
    if (trivial) {
      val2 = tir_substitute(val, n, cvars, pst->indices->items);
      for (int d = 0; d < st->indices->size; d++) oidx->items[d] = tir_substitute(st->indices->items[d], n, cvars, pst->indices->items);
    } else {
      tir_Node **sub = calloc((size_t)niv + 1, sizeof *sub);
      for (int k = 0; k < niv; k++) {
        tir_Node *e = tir_substitute(inv[k], n, uv, pst->indices->items);
        sub[k] = tir_simplify(an, e);
        tir_release(e);
      }
      val2 = tir_substitute(val, niv, ivs, sub);
      for (int d = 0; d < st->indices->size; d++) {
        tir_Node *e = tir_substitute(st->indices->items[d], niv, ivs, sub);
        oidx->items[d] = tir_simplify(an, e);
        tir_release(e);
      }
      for (int k = 0; k < niv; k++) tir_release(sub[k]);
      free(sub);
    }
    tir_release(val);
    tir_Node *nstore = tir_buffer_store((tir_Buffer *)R(st->buffer), val2, oidx);
    ProducerCtx pc = {nstore, extra_s};
    int64_t puid = pblk->uid;
    tir_Node *body = sch_map_blocks(scope_blk->body, &puid, 1, rewrite_producer, &pc);
    tir_release(nstore);
    tir_release(extra_s);
    const tir_Node *old = sch_removable_subtree(&pb, pb.n - 1);
    tir_Node *nbody = sch_remove_stmt(body, old);
    tir_release(body);
    tir_Block *nscope = tir_block_with_body(scope_blk, nbody);
    tir_Node *fbody = tir_replace_stmt(s->func->body, &scope_blk->hdr, &nscope->hdr);
    tir_Node *fin = sch_drop_allocation(fbody, buf);
    tir_release(fbody);
    if (sch_mentions_buffer(fin, buf)) {
      tir_release(fin);
      sch_error(s, P, &br->hdr, "this block",
                "%s is used other than through loads %s[...] (e.g. a match_buffer, its data pointer, or a block of another "
                "scope); it cannot be inlined",
                buf->name, buf->name);
      goto done;
    }
    tir_PrimFunc *f = (tir_PrimFunc *)tir_node_copy(&s->func->hdr);
    tir_release(f->body);
    f->body = fin;
    tir_release(s->func);
    s->func = f;
    rc = 0;
  }
done:
  for (int d = 0; d < inv_n; d++) {
    tir_release(owned[d]);
    tir_release(uv[d]);
  }
  for (int k = 0; k < inv_niv; k++) tir_release(inv[k]);
  free(owned);
  free(uv);
  free(inv);
  free(ivs);
  free(cvars);
  if (an) tir_analyzer_free(an);
  free(all);
  return rc;
}
