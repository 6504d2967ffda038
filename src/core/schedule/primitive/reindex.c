/* reindex.c -- a stage between a block and one of its buffers, indexed by the block's
 * iteration variables (TVM src/tir/schedule/primitive/cache_read_write.cc, ReIndex; facts
 * only).
 *
 *   block B: B[vi, vj] = A[vj, vi] * 2          (reindex ("read", 0))
 * becomes
 *   block A_reindex: v0, v1    A_reindex[v0, v1] = A[v1, v0]
 *   block B:                   B[vi, vj] = A_reindex[vi, vj] * 2
 * The new buffer has one dimension per iteration variable that the (simplified) indices
 * use, in the block's order, of extent min + extent of its domain; the stage iterates over
 * those domains and is placed just before (read) or after (write) the loop nest of the
 * block in its scope; the buffer is allocated in the scope block.
 * Preconditions: a leaf block (no nested blocks) under a chain of perfectly nested loops in
 * its scope; every access to the buffer is a load or store with the same indices and the
 * buffer is not used otherwise.  Stricter than TVM (whose result is wrong there): a buffer
 * the block also writes must be reindexed as a write; a write reindex needs a block that
 * writes its whole domain (the stage copies all of it back) and, if it reads the buffer, an
 * init (else the old values would be lost). */
#include <stdlib.h>
#include <string.h>

#include "../sched_util.h"
#include "tir/strbuf.h"

typedef struct {
  const tir_Buffer *buf;
  const tir_Array *indices; /* first access (borrowed) */
  int n_access, mismatch, opaque;
} Collect;

static int collect_fn(const tir_Node *n, void *p) {
  Collect *c = p;
  if (n->kind == TIR_Buffer) return 1; /* its data var is part of the definition, not a use */
  const tir_Array *idx = NULL;
  if (n->kind == TIR_BufferLoad && ((const tir_BufferLoad *)n)->buffer == c->buf) idx = ((const tir_BufferLoad *)n)->indices;
  if (n->kind == TIR_BufferStore && ((const tir_BufferStore *)n)->buffer == c->buf) idx = ((const tir_BufferStore *)n)->indices;
  if (idx) {
    if (!c->indices) c->indices = idx;
    else if (!tir_expr_deep_equal(&c->indices->hdr, &idx->hdr)) c->mismatch = 1;
    c->n_access++;
    /* children: the indices, and for a store its value (visited as usual) */
    return 0;
  }
  if (n == &c->buf->data->hdr) c->opaque = 1;
  return 0;
}

typedef struct {
  const tir_Buffer *from;
  tir_Buffer *to;
  tir_Array *indices; /* the covered iteration variables */
} RewriteCtx;

static tir_Node *rewrite_fn(const tir_Node *n, void *p) {
  RewriteCtx *c = p;
  if (n->kind == TIR_BufferLoad && ((const tir_BufferLoad *)n)->buffer == c->from)
    return tir_buffer_load((tir_Buffer *)R(c->to), (tir_Array *)R(c->indices));
  if (n->kind == TIR_BufferStore && ((const tir_BufferStore *)n)->buffer == c->from) {
    tir_Node *v = tir_mutate(((const tir_BufferStore *)n)->value, rewrite_fn, c);
    return tir_buffer_store((tir_Buffer *)R(c->to), v, (tir_Array *)R(c->indices));
  }
  return NULL;
}

/* regions with buf's entry replaced by a point access of `to` at the covered variables */
static tir_Array *replace_region(const tir_Array *regions, const tir_Buffer *buf, tir_Buffer *to, const tir_Array *vars) {
  tir_Array *out = tir_array_new(regions->size);
  for (int i = 0; i < regions->size; i++) {
    const tir_BufferRegion *r = (const tir_BufferRegion *)regions->items[i];
    if (r->buffer != buf) {
      out->items[i] = tir_retain(&r->hdr);
      continue;
    }
    tir_Array *rg = tir_array_new(vars->size);
    for (int d = 0; d < vars->size; d++)
      rg->items[d] = &tir_range(tir_retain(vars->items[d]), tir_int_imm(vars->items[d]->dtype, 1))->hdr;
    out->items[i] = &tir_buffer_region((tir_Buffer *)R(to), rg)->hdr;
  }
  return out;
}

int64_t tir_sched_reindex(tir_Schedule *s, int64_t uid, int is_write, int index) {
  const char *P = "reindex";
  SchPath pb;
  const tir_BlockRealize *br = sch_find_block(s->func->body, uid, &pb);
  if (!br) return tir_sched_block_realize(s, uid, P) ? 0 : -1;
  const tir_Block *blk = br->block;
  const tir_Array *regions = is_write ? blk->writes : blk->reads;
  if (index < 0 || index >= regions->size) {
    tir_StrBuf sb;
    tir_sb_init(&sb);
    for (int i = 0; i < regions->size; i++)
      tir_sb_printf(&sb, "%s%d: %s", i ? ", " : "", i, ((const tir_BufferRegion *)regions->items[i])->buffer->name);
    sch_error(s, P, &br->hdr, "this block", "%s buffer index %d is out of range: block '%s' %s %s", is_write ? "write" : "read",
              index, blk->name, is_write ? "writes" : "reads", sb.data ? sb.data : "nothing");
    tir_sb_free(&sb);
    return -1;
  }
  const tir_Buffer *buf = ((const tir_BufferRegion *)regions->items[index])->buffer;
  const tir_Block *scope = sch_leaf_scope(s, P, br, &pb);
  if (!scope) return -1;
  if (!is_write && sch_block_writes(blk, buf))
    return sch_error(s, P, &br->hdr, "this block",
                     "block '%s' also writes %s: reindex it as a write buffer (a read stage would leave %s without the results)",
                     blk->name, buf->name, buf->name);
  /* the accesses */
  Collect col = {buf, NULL, 0, 0, 0};
  tir_visit(blk->body, collect_fn, &col);
  if (blk->init) tir_visit(blk->init, collect_fn, &col);
  if (!col.indices || col.opaque || col.mismatch)
    return sch_error(s, P, &br->hdr, "this block", "%s must be accessed in block '%s' only by loads and stores with the same indices: %s",
                     buf->name, blk->name,
                     !col.indices ? "no access found" : col.opaque ? "it is used opaquely" : "the accesses use different indices");
  if (is_write && sch_block_reads(blk, buf) && !blk->init)
    return sch_error(s, P, &br->hdr, "this block",
                     "block '%s' reads %s before writing it and has no init: the write stage would lose its previous values",
                     blk->name, buf->name);
  /* a chain of loops from the scope down to the block */
  const tir_Node *body = scope->body;
  int pos = sch_top_child_index(body, &br->hdr);
  const tir_Node *top = pos >= 0 ? sch_seq_item(body, pos) : NULL;
  for (const tir_Node *n = top; n && n != &br->hdr;) {
    if (n->kind != TIR_For)
      return sch_error(s, P, n, "here", "block '%s' must sit under perfectly nested loops in its scope; found a %s", blk->name,
                       tir_kind_name(n->kind));
    n = ((const tir_For *)n)->body;
  }
  if (!top) return sch_error(s, P, &br->hdr, "this block", "block '%s' is not in its scope's body", blk->name);
  int nv = blk->iter_vars->size;
  if (is_write) {
    /* the stage copies every point of the domain back: the block must write all of them */
    const tir_For *loops[SCH_MAX_DEPTH];
    int n_loops = sch_loops_above(&pb, loops, SCH_MAX_DEPTH), ok = 1;
    tir_LoopIter *it = calloc((size_t)n_loops + 1, sizeof *it);
    int64_t *ext = calloc((size_t)nv + 1, sizeof *ext);
    for (int i = 0; i < n_loops; i++) {
      it[i].var = loops[i]->loop_var;
      ok &= tir_is_const_int(loops[i]->min, &it[i].min) && tir_is_const_int(loops[i]->extent, &it[i].extent);
    }
    for (int i = 0; i < nv; i++) ok &= tir_is_const_int(((const tir_IterVar *)blk->iter_vars->items[i])->dom->extent, &ext[i]);
    char why[400] = "the loop or domain ranges are not constant";
    if (ok)
      ok = tir_detect_iter_map_level(NULL, (const tir_Node *const *)br->iter_values->items, ext, nv, it, n_loops, br->predicate,
                                     TIR_ITER_MAP_SURJECTIVE, why, sizeof why);
    free(it);
    free(ext);
    if (!ok)
      return sch_error(s, P, &br->hdr, "this block",
                       "block '%s' must write its whole iteration domain for a write reindex (the stage copies all of it): %s",
                       blk->name, why);
  }
  /* simplified indices and the iteration variables they use */
  tir_Analyzer *an = tir_analyzer_new();
  for (int i = 0; i < nv; i++) {
    const tir_IterVar *iv = (const tir_IterVar *)blk->iter_vars->items[i];
    tir_analyzer_bind_range(an, iv->var, iv->dom->min, iv->dom->extent);
  }
  int nd = col.indices->size;
  tir_Array *orig = tir_array_new(nd);
  for (int d = 0; d < nd; d++) {
    /* TVM SimplifyNonTrivialExpr: an index that uses variables (of extent 1, say) is not
     * folded to a constant, so it keeps its dimension in the new buffer */
    const tir_Node *ix = col.indices->items[d];
    tir_Node *si = tir_simplify(an, ix);
    if (si->kind == TIR_IntImm && ix->kind != TIR_IntImm) {
      tir_release(si);
      si = tir_retain(ix);
    }
    orig->items[d] = si;
  }
  tir_analyzer_free(an);
  tir_Array *shape = tir_array_empty(), *vars = tir_array_empty(), *ivs = tir_array_empty(), *stage_idx = tir_array_empty();
  tir_Var **old = calloc((size_t)nv + 1, sizeof *old);
  tir_Node **neu = calloc((size_t)nv + 1, sizeof *neu);
  tir_Var **loop_vars = calloc((size_t)nv + 1, sizeof *loop_vars);
  const tir_IterVar **loop_dom = calloc((size_t)nv + 1, sizeof *loop_dom);
  int nc = 0;
  for (int i = 0; i < nv; i++) {
    const tir_IterVar *iv = (const tir_IterVar *)blk->iter_vars->items[i];
    if (!tir_uses_var(&orig->hdr, iv->var)) continue;
    tir_DType t = iv->var->hdr.dtype;
    tir_Node *end = tir_add(R(iv->dom->min), R(iv->dom->extent));
    shape = tir_array_push(shape, tir_simplify(NULL, end));
    tir_release(end);
    vars = tir_array_push(vars, tir_retain(&iv->var->hdr));
    char *vn = tir_strprintf("v%d", nc), *ln = tir_strprintf("ax%d", nc);
    tir_Var *v = tir_var_new(vn, t);
    loop_vars[nc] = tir_var_new(ln, t);
    free(vn);
    free(ln);
    ivs = tir_array_push(ivs, &tir_iter_var((tir_Var *)R(v), (tir_Range *)R(iv->dom), TIR_ITER_DATA_PAR, "")->hdr);
    stage_idx = tir_array_push(stage_idx, tir_retain(&v->hdr));
    old[nc] = iv->var;
    neu[nc] = &v->hdr;
    loop_dom[nc] = iv;
    nc++;
  }
  char *base = tir_strprintf("%s_reindex", buf->name);
  char *name = sch_unique_name(s->func, base);
  free(base);
  tir_Buffer *nb = tir_buffer_new(name, buf->hdr.dtype, shape, NULL, NULL, buf->scope);
  /* the stage */
  tir_Node *target_idx = tir_substitute(&orig->hdr, nc, old, neu);
  tir_Node *store;
  if (is_write)
    store = tir_buffer_store((tir_Buffer *)R(buf), tir_buffer_load((tir_Buffer *)R(nb), (tir_Array *)R(stage_idx)),
                             (tir_Array *)target_idx);
  else
    store = tir_buffer_store((tir_Buffer *)R(nb), tir_buffer_load((tir_Buffer *)R(buf), (tir_Array *)target_idx),
                             (tir_Array *)R(stage_idx));
  tir_Block *sb = tir_block_new(name, ivs, NULL, NULL, NULL, NULL, NULL, NULL, store);
  free(name);
  tir_Block *sbd = tir_block_with_detected_access(sb);
  tir_release(sb);
  int64_t new_uid = sbd->uid;
  tir_Array *vals = tir_array_new(nc);
  for (int k = 0; k < nc; k++) vals->items[k] = tir_retain(&loop_vars[k]->hdr);
  tir_Node *nest = tir_block_realize(vals, tir_bool_imm(1), sbd);
  for (int k = nc - 1; k >= 0; k--)
    nest = tir_for(loop_vars[k], R(loop_dom[k]->dom->min), R(loop_dom[k]->dom->extent), TIR_FOR_SERIAL, NULL, NULL, nest);
  /* the block accesses the new buffer at its variables */
  RewriteCtx rc = {buf, nb, vars};
  tir_Block *nbk = (tir_Block *)tir_node_copy(&blk->hdr);
  tir_release(nbk->body);
  nbk->body = tir_mutate(blk->body, rewrite_fn, &rc);
  if (blk->init) {
    tir_release(nbk->init);
    nbk->init = tir_mutate(blk->init, rewrite_fn, &rc);
  }
  tir_release(nbk->reads);
  tir_release(nbk->writes);
  nbk->reads = replace_region(blk->reads, buf, nb, vars);
  nbk->writes = replace_region(blk->writes, buf, nb, vars);
  tir_Node *nrealize = sch_realize_with_block(br, nbk);
  tir_Node *nbody = tir_replace_stmt(scope->body, &br->hdr, nrealize);
  tir_Node *placed = sch_insert_into(nbody, is_write ? pos + 1 : pos, nest);
  tir_release(nbody);
  tir_Block *nscope = tir_block_with_body(scope, placed);
  nscope->alloc_buffers = tir_array_push(nscope->alloc_buffers, &nb->hdr);
  sch_replace(s, &scope->hdr, &nscope->hdr);
  for (int k = 0; k < nc; k++) tir_release(neu[k]);
  free(old);
  free(neu);
  free(loop_vars);
  free(loop_dom);
  tir_release(orig);
  tir_release(vars);
  tir_release(stage_idx);
  return new_uid;
}
