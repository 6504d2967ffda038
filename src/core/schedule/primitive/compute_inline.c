/* compute_inline.c -- inline a producer into its consumers (TVM compute_inline.cc).
 *
 * The block must be "B[i0, i1, ...] = expr(v)": no init, a complete block (spatial
 * iteration variables only, the only writer of B in its scope, not reading B), one written
 * buffer that is not a function output, a predicate no stronger than its iteration domain,
 * and a store whose indices are distinct iteration variables or constants (iteration
 * variables left out must have extent 1).  Every load B[j0, j1, ...] in the consumers
 * (bodies, inits, predicates, nested blocks) becomes expr(v := j); the block, its loops and
 * the allocation of B go away.  The consumers evaluate expr later than the producer did, so
 * no block between the producer and the last consumer may write what the producer reads,
 * and no consumer may run before the producer (TVM requires a "stage pipeline" scope). */
#include <stdlib.h>
#include <string.h>

#include "../dataflow.h"

typedef struct {
  const tir_Buffer *buf;
  const tir_Node *value;
  const tir_BufferStore *store;
  const tir_Block *producer;
} InlineCtx;

/* expr(v := the load's indices); unit iteration variables not in the store take their min. */
static tir_Node *inlined_value(const InlineCtx *c, const tir_BufferLoad *l) {
  const tir_Array *ivs = c->producer->iter_vars;
  int n = ivs->size;
  tir_Var **vars = calloc((size_t)n + 1, sizeof *vars);
  tir_Node **vals = calloc((size_t)n + 1, sizeof *vals);
  for (int k = 0; k < n; k++) {
    const tir_IterVar *iv = (const tir_IterVar *)ivs->items[k];
    vars[k] = iv->var;
    vals[k] = iv->dom->min;
    for (int d = 0; d < c->store->indices->size; d++)
      if (c->store->indices->items[d] == &iv->var->hdr) vals[k] = l->indices->items[d];
  }
  tir_Node *r = tir_substitute(c->value, n, vars, vals);
  free(vars);
  free(vals);
  return r;
}

static tir_Node *inline_fn(const tir_Node *n, void *p) {
  InlineCtx *c = p;
  /* address_of(B[i]) is an opaque access (TVM: a pointer use of B), not a load: left as it
   * is, so that the check below refuses the inlining instead of taking an expression's address */
  const tir_BufferLoad *addr = tir_address_of_load(n);
  if (addr && addr->buffer == c->buf) return tir_retain(n);
  if (n->kind == TIR_BufferLoad && ((const tir_BufferLoad *)n)->buffer == c->buf) {
    tir_Node *m = tir_mutate_children(n, inline_fn, p); /* indices may load B too */
    tir_Node *r = inlined_value(c, (const tir_BufferLoad *)m);
    tir_release(m);
    return r;
  }
  if (n->kind == TIR_Block) {
    /* rewrite inside, then recompute the block's reads (it now reads B's inputs) */
    tir_Node *m = tir_mutate_children(n, inline_fn, p);
    if (m == n) return m;
    tir_Block *det = tir_block_with_detected_access((const tir_Block *)m);
    tir_Block *fin = sch_block_with_regions(det, NULL, (tir_Array *)R(((tir_Block *)m)->writes));
    tir_release(det);
    tir_release(m);
    return &fin->hdr;
  }
  return NULL;
}

static tir_Node *rewrite_consumer(const tir_BlockRealize *br, void *p) { return tir_mutate(&br->hdr, inline_fn, p); }

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

/* The store's indices are distinct iteration variables or constants, and every iteration
 * variable that does not index it has extent 1.  Returns the failing index (1-based), 0 if
 * fine, -1 when an iteration variable of extent > 1 is missing. */
static int check_store_indices(const tir_Block *blk, const tir_BufferStore *st) {
  int n = st->indices->size;
  for (int d = 0; d < n; d++) {
    const tir_Node *ix = st->indices->items[d];
    int64_t cst;
    if (tir_is_const_int(ix, &cst)) continue;
    if (ix->kind != TIR_Var) return d + 1;
    int is_iter = 0;
    for (int k = 0; k < blk->iter_vars->size; k++) is_iter |= ((const tir_IterVar *)blk->iter_vars->items[k])->var == (const tir_Var *)ix;
    for (int e = 0; e < d; e++)
      if (st->indices->items[e] == ix) is_iter = 0;
    if (!is_iter) return d + 1;
  }
  for (int k = 0; k < blk->iter_vars->size; k++) {
    const tir_IterVar *iv = (const tir_IterVar *)blk->iter_vars->items[k];
    int used = 0;
    for (int d = 0; d < n; d++) used |= st->indices->items[d] == &iv->var->hdr;
    if (!used && !tir_is_one(iv->dom->extent)) return -1;
  }
  return 0;
}

int tir_sched_compute_inline(tir_Schedule *s, int64_t uid) {
  const char *P = "compute_inline";
  SchPath pb;
  const tir_BlockRealize *br = sch_find_block(s->func->body, uid, &pb);
  if (!br) return tir_sched_block_realize(s, uid, P) ? 0 : -1;
  const tir_Block *blk = br->block;
  int sidx = sch_scope_index(&pb);
  if (sidx < 0) return sch_error(s, P, &br->hdr, "this block", "block '%s' is the root block; it cannot be inlined", blk->name);
  const tir_Block *scope_blk = (const tir_Block *)pb.nodes[sidx];
  if (blk->init) return sch_error(s, P, &br->hdr, "this block", "block '%s' is a reduction (it has an init); it cannot be inlined", blk->name);
  if (blk->writes->size != 1)
    return sch_error(s, P, &br->hdr, "this block", "block '%s' writes %d buffers; compute_inline needs exactly one", blk->name,
                     blk->writes->size);
  const tir_Buffer *buf = ((const tir_BufferRegion *)blk->writes->items[0])->buffer;
  if (sch_is_param_buffer(s->func, buf))
    return sch_error(s, P, &br->hdr, "this block", "block '%s' writes the function's output %s; it cannot be inlined", blk->name,
                     buf->name);
  if (sch_check_complete(s, P, scope_blk, br)) return -1;
  if (!sch_predicate_implied_by_domain(br))
    return sch_error(s, P, &br->hdr, "this block", "block '%s' has a predicate; inlining would drop it", blk->name);
  if (blk->body->kind != TIR_BufferStore || blk->alloc_buffers->size || blk->match_buffers->size ||
      ((const tir_BufferStore *)blk->body)->buffer != buf)
    return sch_error(s, P, &br->hdr, "this block", "the body of block '%s' is not a single store %s[v...] = expr", blk->name,
                     buf->name);
  const tir_BufferStore *st = (const tir_BufferStore *)blk->body;
  int bad = check_store_indices(blk, st);
  if (bad > 0)
    return sch_error(s, P, &st->hdr, "this store",
                     "the store's indices must be distinct iteration variables of block '%s' (index %d is not)", blk->name, bad);
  if (bad < 0)
    return sch_error(s, P, &st->hdr, "this store", "block '%s' has iteration variables that do not index the store", blk->name);
  /* consumers: every other block of the scope that mentions B (body, predicate, bindings) */
  const tir_BlockRealize **all;
  int n_all = sch_child_blocks(&scope_blk->hdr, &all);
  int64_t *cons = calloc((size_t)n_all + 1, sizeof *cons);
  int nc = 0, pidx = sch_block_index(all, n_all, br), last = pidx;
  int rc = -1;
  for (int i = 0; i < n_all; i++) {
    if (i == pidx || !(sch_block_reads(all[i]->block, buf) || sch_mentions_buffer(&all[i]->hdr, buf))) continue;
    if (i < pidx) {
      sch_error(s, P, &all[i]->hdr, "reads B first", "block '%s' reads %s before block '%s' writes it", all[i]->block->name,
                buf->name, blk->name);
      goto done;
    }
    cons[nc++] = all[i]->block->uid;
    last = i;
  }
  /* the consumers evaluate expr where they run: what it reads must not change before that */
  for (int i = pidx + 1; i <= last; i++) {
    const tir_Buffer *hit;
    if (sch_writes_what_reads(all[i]->block, blk, &hit)) {
      sch_error(s, P, &all[i]->hdr, "this block", "block '%s' writes %s, which block '%s' reads, before a consumer of %s runs",
                all[i]->block->name, hit->name, blk->name, buf->name);
      tir_error_mark(&br->hdr, "the block to inline");
      goto done;
    }
  }
  {
    const tir_Node *old = sch_removable_subtree(&pb, pb.n - 1);
    InlineCtx c = {buf, st->value, st, blk};
    tir_Node *body = sch_map_blocks(scope_blk->body, cons, nc, rewrite_consumer, &c);
    tir_Node *nbody = sch_remove_stmt(body, old);
    tir_release(body);
    if (sch_contains_stmt(nbody, old)) {
      tir_release(nbody);
      sch_error(s, P, &br->hdr, "this block", "block '%s' is the only statement of its scope and cannot be removed", blk->name);
      goto done;
    }
    /* B goes away with its allocation (wherever it is); nothing may still refer to it */
    tir_Block *nscope = tir_block_with_body(scope_blk, nbody);
    tir_Node *fbody = tir_replace_stmt(s->func->body, &scope_blk->hdr, &nscope->hdr);
    tir_Node *fin = sch_drop_allocation(fbody, buf);
    tir_release(fbody);
    if (sch_mentions_buffer(fin, buf)) {
      tir_release(fin);
      sch_error(s, P, &br->hdr, "this block",
                "%s is used other than through loads %s[...] by blocks of this scope (e.g. a match_buffer, its data pointer, "
                "or a block of another scope); it cannot be inlined",
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
  free(all);
  free(cons);
  return rc;
}
