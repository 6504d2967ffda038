/* compute_inline.c -- inline a producer into its consumers (TVM compute_inline.cc).
 *
 * The block must be "B[v0, v1, ...] = expr(v)": no init, one written buffer that is not a
 * function output, spatial iteration variables only, a store whose indices are its
 * iteration variables (each once), no predicate.  Every load B[i0, i1, ...] in the
 * consumers becomes expr(v := i); the block, its loops and the allocation of B go away. */
#include <stdlib.h>
#include <string.h>

#include "../sched_util.h"

typedef struct {
  const tir_Buffer *buf;
  const tir_Node *value;
  int n;
  tir_Var **vars;   /* iteration variable for each store index position */
} InlineCtx;

static tir_Node *inline_loads(const tir_Node *n, void *p) {
  InlineCtx *c = p;
  if (n->kind == TIR_BufferLoad && ((const tir_BufferLoad *)n)->buffer == c->buf) {
    tir_Node *m = tir_mutate_children(n, inline_loads, p); /* indices may load B too */
    const tir_BufferLoad *l = (const tir_BufferLoad *)m;
    tir_Node *r = tir_substitute(c->value, c->n, c->vars, l->indices->items);
    tir_release(m);
    return r;
  }
  return NULL;
}

static tir_Node *rewrite_consumer(const tir_BlockRealize *br, void *p) {
  tir_Node *nb = tir_mutate(&br->block->hdr, inline_loads, p);
  tir_Block *det = tir_block_with_detected_access((tir_Block *)nb);
  /* keep the declared writes; reads are recomputed (they now read B's inputs) */
  tir_Block *fin = sch_block_with_regions(det, NULL, (tir_Array *)R(((tir_Block *)nb)->writes));
  tir_release(det);
  tir_release(nb);
  return sch_realize_with_block(br, fin);
}

static tir_Node *drop_alloc(const tir_Node *n, void *p) {
  const tir_Buffer *buf = p;
  if (tir_is_expr(n)) return tir_retain(n);
  if (n->kind == TIR_Block) {
    const tir_Block *b = (const tir_Block *)n;
    int hit = 0;
    for (int i = 0; i < b->alloc_buffers->size; i++) hit |= b->alloc_buffers->items[i] == &buf->hdr;
    if (hit) {
      tir_Node *m = tir_mutate_children(n, drop_alloc, p);
      tir_Block *nb = (tir_Block *)m;
      tir_Array *keep = tir_array_empty();
      for (int i = 0; i < nb->alloc_buffers->size; i++)
        if (nb->alloc_buffers->items[i] != &buf->hdr) keep = tir_array_push(keep, R(nb->alloc_buffers->items[i]));
      tir_release(nb->alloc_buffers);
      nb->alloc_buffers = keep;
      return m;
    }
  }
  return NULL;
}

tir_Node *sch_drop_allocation(const tir_Node *root, const tir_Buffer *buf) {
  return tir_mutate(root, drop_alloc, (void *)buf);
}

int tir_sched_compute_inline(tir_Schedule *s, int64_t uid) {
  const char *P = "compute_inline";
  SchPath pb;
  const tir_BlockRealize *br = sch_find_block(s->func->body, uid, &pb);
  if (!br) return tir_sched_block_realize(s, uid, P) ? 0 : -1;
  const tir_Block *blk = br->block;
  if (blk->init) return sch_error(s, P, &br->hdr, "this block", "block '%s' is a reduction (it has an init); it cannot be inlined", blk->name);
  if (blk->writes->size != 1)
    return sch_error(s, P, &br->hdr, "this block", "block '%s' writes %d buffers; compute_inline needs exactly one", blk->name,
                     blk->writes->size);
  const tir_Buffer *buf = ((const tir_BufferRegion *)blk->writes->items[0])->buffer;
  if (sch_is_param_buffer(s->func, buf))
    return sch_error(s, P, &br->hdr, "this block", "block '%s' writes the function's output %s; it cannot be inlined", blk->name,
                     buf->name);
  for (int i = 0; i < blk->iter_vars->size; i++)
    if (((const tir_IterVar *)blk->iter_vars->items[i])->iter_type != TIR_ITER_DATA_PAR)
      return sch_error(s, P, &br->hdr, "this block", "block '%s' has a non-spatial iteration variable", blk->name);
  if (!tir_is_one(br->predicate))
    return sch_error(s, P, &br->hdr, "this block", "block '%s' has a predicate; inlining would drop it", blk->name);
  if (blk->body->kind != TIR_BufferStore || blk->alloc_buffers->size || blk->match_buffers->size)
    return sch_error(s, P, &br->hdr, "this block", "the body of block '%s' is not a single store B[v...] = expr", blk->name);
  const tir_BufferStore *st = (const tir_BufferStore *)blk->body;
  int n = st->indices->size;
  tir_Var **vars = calloc((size_t)n + 1, sizeof *vars);
  for (int d = 0; d < n; d++) {
    const tir_Node *ix = st->indices->items[d];
    int ok = ix->kind == TIR_Var;
    for (int e = 0; e < d && ok; e++) ok = vars[e] != (const tir_Var *)ix;
    int is_iter = 0;
    for (int k = 0; k < blk->iter_vars->size && ok; k++) is_iter |= ((const tir_IterVar *)blk->iter_vars->items[k])->var == (const tir_Var *)ix;
    if (!ok || !is_iter) {
      free(vars);
      return sch_error(s, P, &st->hdr, "this store",
                       "the store's indices must be distinct iteration variables of block '%s' (index %d is not)", blk->name, d + 1);
    }
    vars[d] = (tir_Var *)ix;
  }
  if (n != blk->iter_vars->size) {
    free(vars);
    return sch_error(s, P, &st->hdr, "this store", "block '%s' has iteration variables that do not index the store", blk->name);
  }
  int sidx = sch_scope_index(&pb);
  const tir_Block *scope_blk = (const tir_Block *)pb.nodes[sidx];
  const tir_BlockRealize **all;
  int n_all = sch_child_blocks(&scope_blk->hdr, &all);
  int64_t *cons = calloc((size_t)n_all + 1, sizeof *cons);
  int nc = 0;
  for (int i = 0; i < n_all; i++)
    if (all[i]->block != blk && sch_block_reads(all[i]->block, buf)) cons[nc++] = all[i]->block->uid;
  free(all);
  /* the only block of its scope: removing it would leave nothing (TVM OnlyLeafError) */
  const tir_Node *old = sch_removable_subtree(&pb, pb.n - 1);
  InlineCtx c = {buf, st->value, n, vars};
  tir_Node *body = sch_map_blocks(scope_blk->body, cons, nc, rewrite_consumer, &c);
  tir_Node *nbody = sch_remove_stmt(body, old);
  tir_release(body);
  if (sch_contains_stmt(nbody, old)) {
    tir_release(nbody);
    free(vars);
    free(cons);
    return sch_error(s, P, &br->hdr, "this block", "block '%s' is the only statement of its scope and cannot be removed", blk->name);
  }
  tir_Block *nscope = tir_block_with_body(scope_blk, nbody);
  tir_Node *fin = sch_drop_allocation(&nscope->hdr, buf);
  tir_release(nscope);
  sch_replace(s, &scope_blk->hdr, fin);
  free(vars);
  free(cons);
  return 0;
}
