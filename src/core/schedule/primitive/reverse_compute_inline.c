/* reverse_compute_inline.c -- fold a consumer into its producer (TVM compute_inline.cc,
 * ReverseComputeInline), e.g. an epilogue into the block that writes a cache back.
 *
 * The consumer must be "D[f(v)] = g(B[v0, v1, ...], other loads)" where every load of B
 * uses the same indices, distinct iteration variables covering the consumer's iteration
 * space, and B is written by exactly one complete (non-reduction) producer
 * "B[p(u)] = e(u)" which is B's only writer, B having no other reader and not being an
 * output.  The producer becomes "D[f(v := p(u))] = g(e(u), ...)"; the consumer and B go. */
#include <stdlib.h>
#include <string.h>

#include "../sched_util.h"

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
  if (n->kind == TIR_BufferLoad && ((const tir_BufferLoad *)n)->buffer == c->buf) return tir_retain(c->value);
  return NULL;
}

typedef struct {
  const tir_Node *new_store;
} ProducerCtx;

static tir_Node *rewrite_producer(const tir_BlockRealize *br, void *p) {
  ProducerCtx *c = p;
  tir_Block *nb = tir_block_with_body(br->block, tir_retain(c->new_store));
  tir_Block *det = tir_block_with_detected_access(nb);
  tir_release(nb);
  return sch_realize_with_block(br, det);
}

int tir_sched_reverse_compute_inline(tir_Schedule *s, int64_t uid) {
  const char *P = "reverse_compute_inline";
  SchPath pb;
  const tir_BlockRealize *br = sch_find_block(s->func->body, uid, &pb);
  if (!br) return tir_sched_block_realize(s, uid, P) ? 0 : -1;
  const tir_Block *blk = br->block;
  if (blk->init) return sch_error(s, P, &br->hdr, "this block", "block '%s' is a reduction; it cannot be inlined", blk->name);
  for (int i = 0; i < blk->iter_vars->size; i++)
    if (((const tir_IterVar *)blk->iter_vars->items[i])->iter_type != TIR_ITER_DATA_PAR)
      return sch_error(s, P, &br->hdr, "this block", "block '%s' has a non-spatial iteration variable", blk->name);
  if (blk->body->kind != TIR_BufferStore || blk->alloc_buffers->size || blk->match_buffers->size || !tir_is_one(br->predicate))
    return sch_error(s, P, &br->hdr, "this block", "the body of block '%s' must be a single store without a predicate", blk->name);
  const tir_BufferStore *st = (const tir_BufferStore *)blk->body;
  int sidx = sch_scope_index(&pb);
  const tir_Block *scope_blk = (const tir_Block *)pb.nodes[sidx];
  const tir_BlockRealize **all;
  int n_all = sch_child_blocks(&scope_blk->hdr, &all);
  /* the producer: the single block of the scope that writes a buffer this block reads */
  const tir_BlockRealize *prod = NULL;
  const tir_Buffer *buf = NULL;
  int rc = -1;
  for (int i = 0; i < n_all; i++) {
    if (all[i]->block == blk || !sch_is_producer_of(all[i]->block, blk)) continue;
    if (prod) {
      sch_error(s, P, &all[i]->hdr, "a second producer", "block '%s' has more than one producer in its scope", blk->name);
      goto done;
    }
    prod = all[i];
  }
  if (!prod) {
    sch_error(s, P, &br->hdr, "this block", "block '%s' has no producer in its scope", blk->name);
    goto done;
  }
  const tir_Block *pblk = prod->block;
  if (pblk->writes->size != 1 || pblk->init || pblk->body->kind != TIR_BufferStore) {
    sch_error(s, P, &prod->hdr, "the producer", "producer '%s' must be a complete block with a single store", pblk->name);
    goto done;
  }
  buf = ((const tir_BufferRegion *)pblk->writes->items[0])->buffer;
  if (sch_is_param_buffer(s->func, buf)) {
    sch_error(s, P, &prod->hdr, "the producer", "%s is a function output; folding the consumer in would drop it", buf->name);
    goto done;
  }
  for (int i = 0; i < n_all; i++)
    if (all[i]->block != blk && all[i]->block != pblk && sch_block_reads(all[i]->block, buf)) {
      sch_error(s, P, &all[i]->hdr, "another consumer", "%s has another consumer, '%s'", buf->name, all[i]->block->name);
      goto done;
    }
  /* every load of buf in the consumer uses the same indices: distinct iteration vars covering all of them */
  LoadCheck lc = {buf, NULL, 0, 0};
  tir_visit(st->value, check_loads, &lc);
  for (int i = 0; i < st->indices->size; i++) tir_visit(st->indices->items[i], check_loads, &lc);
  if (lc.bad || !lc.idx || lc.idx->size != blk->iter_vars->size) {
    sch_error(s, P, &br->hdr, "this block",
              "block '%s' must read %s at one index tuple made of all its iteration variables", blk->name, buf->name);
    goto done;
  }
  int n = lc.idx->size;
  tir_Var **cvars = calloc((size_t)n + 1, sizeof *cvars);
  for (int d = 0; d < n; d++) {
    const tir_Node *ix = lc.idx->items[d];
    int ok = ix->kind == TIR_Var;
    for (int e = 0; e < d && ok; e++) ok = cvars[e] != (const tir_Var *)ix;
    int is_iter = 0;
    for (int k = 0; k < n && ok; k++) is_iter |= ((const tir_IterVar *)blk->iter_vars->items[k])->var == (const tir_Var *)ix;
    if (!ok || !is_iter) {
      free(cvars);
      sch_error(s, P, &br->hdr, "this block", "block '%s' reads %s at index %d, which is not a distinct iteration variable",
                blk->name, buf->name, d + 1);
      goto done;
    }
    cvars[d] = (tir_Var *)ix;
  }
  {
    const tir_BufferStore *pst = (const tir_BufferStore *)pblk->body;
    if (pst->indices->size != n) {
      free(cvars);
      sch_error(s, P, &prod->hdr, "the producer", "dimension mismatch between producer and consumer of %s", buf->name);
      goto done;
    }
    /* consumer var at position d := producer's index d */
    ReplaceLoad rl = {buf, pst->value};
    tir_Node *val = tir_mutate(st->value, replace_load, &rl);
    tir_Node *val2 = tir_substitute(val, n, cvars, pst->indices->items);
    tir_release(val);
    tir_Array *oidx = tir_array_new(st->indices->size);
    for (int d = 0; d < st->indices->size; d++) oidx->items[d] = tir_substitute(st->indices->items[d], n, cvars, pst->indices->items);
    tir_Node *nstore = tir_buffer_store((tir_Buffer *)R(st->buffer), val2, oidx);
    free(cvars);
    ProducerCtx pc = {nstore};
    int64_t puid = pblk->uid;
    tir_Node *body = sch_map_blocks(scope_blk->body, &puid, 1, rewrite_producer, &pc);
    tir_release(nstore);
    const tir_Node *old = sch_removable_subtree(&pb, pb.n - 1);
    tir_Node *nbody = sch_remove_stmt(body, old);
    tir_release(body);
    tir_Block *nscope = tir_block_with_body(scope_blk, nbody);
    tir_Node *fin = sch_drop_allocation(&nscope->hdr, buf);
    tir_release(nscope);
    sch_replace(s, &scope_blk->hdr, fin);
    rc = 0;
  }
done:
  free(all);
  return rc;
}
