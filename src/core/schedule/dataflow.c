/* dataflow.c -- block properties and dependence checks (see dataflow.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dataflow.h"

static const tir_Buffer *region_buffer(const tir_Array *regions, int i) {
  return ((const tir_BufferRegion *)regions->items[i])->buffer;
}

int sch_check_dominant(tir_Schedule *s, const char *prim, const tir_Block *scope, const tir_BlockRealize *br) {
  const tir_BlockRealize **all;
  int n = sch_child_blocks(&scope->hdr, &all);
  for (int w = 0; w < br->block->writes->size; w++) {
    const tir_Buffer *buf = region_buffer(br->block->writes, w);
    for (int i = 0; i < n; i++) {
      if (all[i]->block == br->block || !sch_block_writes(all[i]->block, buf)) continue;
      sch_error(s, prim, &all[i]->hdr, "another writer", "block '%s' also writes %s; block '%s' must be the only writer of %s in its scope",
                all[i]->block->name, buf->name, br->block->name, buf->name);
      tir_error_mark(&br->hdr, "the block");
      free(all);
      return -1;
    }
  }
  free(all);
  return 0;
}

static int check_reads_not_written(tir_Schedule *s, const char *prim, const tir_BlockRealize *br) {
  const tir_Block *b = br->block;
  for (int r = 0; r < b->reads->size; r++) {
    const tir_Buffer *buf = region_buffer(b->reads, r);
    if (sch_block_writes(b, buf))
      return sch_error(s, prim, &br->hdr, "this block", "block '%s' reads %s, which it writes, so it is not a complete block",
                       b->name, buf->name);
  }
  return 0;
}

int sch_check_complete(tir_Schedule *s, const char *prim, const tir_Block *scope, const tir_BlockRealize *br) {
  const tir_Block *b = br->block;
  for (int i = 0; i < b->iter_vars->size; i++) {
    const tir_IterVar *iv = (const tir_IterVar *)b->iter_vars->items[i];
    if (iv->iter_type != TIR_ITER_DATA_PAR)
      return sch_error(s, prim, &br->hdr, "this block", "block '%s' has a non-spatial iteration variable (%s)", b->name,
                       iv->var->name);
  }
  if (b->writes->size == 0) return sch_error(s, prim, &br->hdr, "this block", "block '%s' writes no buffer", b->name);
  if (sch_check_dominant(s, prim, scope, br)) return -1;
  return check_reads_not_written(s, prim, br);
}

int sch_check_complete_or_reduction_block(tir_Schedule *s, const char *prim, const tir_Block *scope,
                                          const tir_BlockRealize *br) {
  const tir_Block *b = br->block;
  int has_reduce = 0;
  for (int i = 0; i < b->iter_vars->size; i++) {
    const tir_IterVar *iv = (const tir_IterVar *)b->iter_vars->items[i];
    if (iv->iter_type == TIR_ITER_COMM_REDUCE) has_reduce = 1;
    else if (iv->iter_type != TIR_ITER_DATA_PAR)
      return sch_error(s, prim, &br->hdr, "this block",
                       "block '%s' has an iteration variable (%s) that is neither spatial nor reduction", b->name,
                       iv->var->name);
  }
  if (!b->init && !has_reduce) return sch_check_complete(s, prim, scope, br);
  if (!b->init)
    return sch_error(s, prim, &br->hdr, "this block",
                     "block '%s' has reduction variables but no init, so it is neither a complete nor a reduction block", b->name);
  if (b->writes->size == 0) return sch_error(s, prim, &br->hdr, "this block", "block '%s' writes no buffer", b->name);
  if (sch_check_dominant(s, prim, scope, br)) return -1;
  /* the reduction variables must not index what the block writes */
  for (int w = 0; w < b->writes->size; w++) {
    const tir_BufferRegion *wr = (const tir_BufferRegion *)b->writes->items[w];
    for (int i = 0; i < b->iter_vars->size; i++) {
      const tir_IterVar *iv = (const tir_IterVar *)b->iter_vars->items[i];
      if (iv->iter_type == TIR_ITER_COMM_REDUCE && tir_uses_var(&wr->region->hdr, iv->var))
        return sch_error(s, prim, &br->hdr, "this block",
                         "reduction variable %s of block '%s' indexes the written buffer %s, so it is not a reduction block",
                         iv->var->name, b->name, wr->buffer->name);
    }
  }
  return 0;
}

int sch_block_index(const tir_BlockRealize *const *blocks, int n, const tir_BlockRealize *br) {
  for (int i = 0; i < n; i++)
    if (blocks[i] == br) return i;
  return -1;
}

int sch_writes_what_reads(const tir_Block *writer, const tir_Block *reader, const tir_Buffer **buf) {
  for (int r = 0; r < reader->reads->size; r++)
    if (sch_block_writes(writer, region_buffer(reader->reads, r))) {
      if (buf) *buf = region_buffer(reader->reads, r);
      return 1;
    }
  return 0;
}

int sch_touches_what_writes(const tir_Block *toucher, const tir_Block *writer, const tir_Buffer **buf) {
  for (int w = 0; w < writer->writes->size; w++) {
    const tir_Buffer *b = region_buffer(writer->writes, w);
    if (sch_block_writes(toucher, b) || sch_block_reads(toucher, b)) {
      if (buf) *buf = b;
      return 1;
    }
  }
  return 0;
}

/* cmp is "x < c" style with x a binding of the realize: implied by x's iteration domain? */
static int conjunct_implied(tir_Analyzer *an, const tir_BlockRealize *br, const tir_Node *c) {
  if (c->kind == TIR_And)
    return conjunct_implied(an, br, ((const tir_And *)c)->a) && conjunct_implied(an, br, ((const tir_And *)c)->b);
  if (tir_is_one(c)) return 1;
  int kind = c->kind;
  if (kind != TIR_LT && kind != TIR_LE && kind != TIR_GT && kind != TIR_GE) return 0;
  const tir_Node *a = ((const tir_LT *)c)->a, *b = ((const tir_LT *)c)->b;
  for (int side = 0; side < 2; side++) {
    const tir_Node *x = side ? b : a, *bound = side ? a : b;
    for (int k = 0; k < br->iter_values->size; k++) {
      if (!tir_expr_deep_equal(br->iter_values->items[k], x)) continue;
      const tir_Range *dom = ((const tir_IterVar *)br->block->iter_vars->items[k])->dom;
      /* x is in [min, min + extent - 1]; normalise to "x OP bound" with x on the left */
      int op = kind;
      if (side) op = kind == TIR_LT ? TIR_GT : kind == TIR_LE ? TIR_GE : kind == TIR_GT ? TIR_LT : TIR_LE;
      tir_Node *last = tir_sub(tir_add(R(dom->min), R(dom->extent)), tir_int_imm(dom->min->dtype, 1));
      tir_Node *cond;
      switch (op) {
        case TIR_LT: cond = tir_cmp(TIR_LT, last, R((tir_Node *)bound)); break;
        case TIR_LE: cond = tir_cmp(TIR_LE, last, R((tir_Node *)bound)); break;
        case TIR_GT: tir_release(last); cond = tir_cmp(TIR_GT, R(dom->min), R((tir_Node *)bound)); break;
        default: tir_release(last); cond = tir_cmp(TIR_GE, R(dom->min), R((tir_Node *)bound)); break;
      }
      int ok = cond && tir_can_prove(an, cond);
      tir_release(cond);
      if (ok) return 1;
    }
  }
  return 0;
}

int sch_predicate_implied_by_domain(const tir_BlockRealize *br) {
  if (tir_is_one(br->predicate)) return 1;
  tir_Analyzer *an = tir_analyzer_new();
  int r = conjunct_implied(an, br, br->predicate);
  tir_analyzer_free(an);
  return r;
}

void sch_bind_path(tir_Analyzer *an, const SchPath *p, int n) {
  for (int i = 0; i < n && i < p->n; i++) {
    const tir_Node *x = p->nodes[i];
    if (x->kind == TIR_For) {
      const tir_For *f = (const tir_For *)x;
      tir_analyzer_bind_range(an, f->loop_var, f->min, f->extent);
    } else if (x->kind == TIR_Block) {
      const tir_Block *b = (const tir_Block *)x;
      for (int k = 0; k < b->iter_vars->size; k++) {
        const tir_IterVar *iv = (const tir_IterVar *)b->iter_vars->items[k];
        tir_analyzer_bind_range(an, iv->var, iv->dom->min, iv->dom->extent);
      }
    }
  }
}

typedef struct {
  const tir_Buffer *buf;
  int found;
} MentionCtx;

static int alloc_fn(const tir_Node *n, void *p) {
  MentionCtx *c = p;
  if (c->found || tir_is_expr(n)) return 1;
  if (n->kind == TIR_Block) {
    const tir_Block *b = (const tir_Block *)n;
    for (int i = 0; i < b->alloc_buffers->size; i++)
      if (b->alloc_buffers->items[i] == &c->buf->hdr) c->found = 1;
  }
  return 0;
}

int sch_buffer_allocated(const tir_Node *root, const tir_Buffer *buf) {
  MentionCtx c = {buf, 0};
  tir_visit(root, alloc_fn, &c);
  return c.found;
}

static int mention_fn(const tir_Node *n, void *p) {
  MentionCtx *c = p;
  if (c->found) return 1;
  if (n == &c->buf->hdr || n == &c->buf->data->hdr) c->found = 1;
  return 0;
}

int sch_mentions_buffer(const tir_Node *root, const tir_Buffer *buf) {
  MentionCtx c = {buf, 0};
  tir_visit(root, mention_fn, &c);
  return c.found;
}

/* ---- cache stages ---- */
typedef struct {
  const tir_Block *scope;
  const tir_BlockRealize *writer;
  const int64_t *related;
  int n_related;
  int visited_block, visited_related;
  const tir_Node *loc;
  int pos;
} LocCtx;

static void loc_visit(LocCtx *c, const tir_Node *n);

static void loc_visit_children(LocCtx *c, const tir_Node *n) {
  const tir_Node *kids[2];
  int k = sch_stmt_children(n, kids, 2);
  for (int i = 0; i < k; i++) loc_visit(c, kids[i]);
}

static void loc_visit(LocCtx *c, const tir_Node *n) {
  switch (n->kind) {
    case TIR_SeqStmt: {
      const tir_Array *a = ((const tir_SeqStmt *)n)->seq;
      int prev = c->visited_block;
      c->visited_block = 0;
      for (int i = 0; i < a->size && c->pos == -1; i++) {
        loc_visit(c, a->items[i]);
        if (c->visited_block && c->visited_related && c->pos == -1) {
          c->pos = i;
          break;
        }
        if (c->visited_related) break;
      }
      c->visited_block = c->visited_block || prev;
      return;
    }
    case TIR_BlockRealize: {
      const tir_Block *b = ((const tir_BlockRealize *)n)->block;
      if (b == c->scope) {
        loc_visit_children(c, &b->hdr);
        if (c->visited_related && !c->loc) {
          c->loc = &b->hdr;
          if (!c->visited_block && c->pos == -1) c->pos = 0;
        }
        return;
      }
      if (c->writer && b == c->writer->block) {
        c->visited_block = 1;
        return;
      }
      for (int i = 0; i < c->n_related; i++)
        if (b->uid == c->related[i]) {
          c->visited_related = 1;
          return;
        }
      return; /* another block: not a place to look inside */
    }
    case TIR_For:
      loc_visit(c, ((const tir_For *)n)->body);
      if (c->visited_block && c->visited_related && !c->loc && c->pos != -1) c->loc = n;
      return;
    default: loc_visit_children(c, n); return;
  }
}

void sch_cache_location(const tir_Block *scope, const tir_BlockRealize *writer, const int64_t *related, int n_related,
                        const tir_Node **host, int *pos) {
  *host = &scope->hdr;
  if (n_related == 0) {
    *pos = sch_seq_size(scope->body);
    return;
  }
  LocCtx c = {scope, writer, related, n_related, 0, 0, NULL, -1};
  /* start at the scope block itself (its realize may be the function body) */
  loc_visit_children(&c, &scope->hdr);
  if (c.visited_related && !c.loc) {
    c.loc = &scope->hdr;
    if (!c.visited_block && c.pos == -1) c.pos = 0;
  }
  if (!c.loc || c.pos < 0) {
    /* a related block that is the writer itself, or one before it: right after the writer */
    *host = &scope->hdr;
    *pos = writer ? sch_top_child_index(scope->body, &writer->hdr) + 1 : 0;
    return;
  }
  *host = c.loc;
  *pos = c.pos;
}

/* region clipped to the buffer: [max(min, 0), min(min + extent, shape)) per dimension. */
static tir_Array *clip_to_shape(tir_Analyzer *an, const tir_Array *region, const tir_Buffer *buf) {
  int nd = buf->shape->size;
  tir_Array *out = tir_array_new(nd);
  for (int d = 0; d < nd; d++) {
    const tir_Range *r = (const tir_Range *)region->items[d];
    tir_Node *zero = tir_int_imm(r->min->dtype, 0);
    tir_Node *lo_c = tir_cmp(TIR_GE, R(r->min), R(zero));
    tir_Node *lo = tir_can_prove(an, lo_c) ? tir_retain(r->min) : tir_max(R(r->min), R(zero));
    tir_Node *end = tir_add(R(r->min), R(r->extent));
    tir_Node *hi_c = tir_cmp(TIR_LE, R(end), R(buf->shape->items[d]));
    tir_Node *hi = tir_can_prove(an, hi_c) ? tir_retain(end) : tir_min(R(end), R(buf->shape->items[d]));
    tir_Node *ext = tir_sub(hi, R(lo));
    tir_Node *slo = tir_simplify(an, lo), *sext = tir_simplify(an, ext);
    out->items[d] = &tir_range(slo, sext)->hdr;
    tir_release(lo);
    tir_release(ext);
    tir_release(end);
    tir_release(lo_c);
    tir_release(hi_c);
    tir_release(zero);
  }
  return out;
}

tir_Array *sch_cache_region(const tir_Node *root, const tir_Block *scope, const tir_Node *host,
                            const tir_BlockRealize *writer, const tir_Buffer *buf) {
  int nd = buf->shape->size;
  const tir_Array *reg = writer ? sch_region_of(writer->block->writes, buf) : NULL;
  tir_Array *out = NULL;
  if (!writer) {
    /* an input of the scope: what the scope block reads of it (TVM), else all of it;
     * clipped, as an outer block's regions may over-approximate (blockize relaxes them) */
    const tir_Array *sr = sch_region_of(scope->reads, buf);
    if (sr && sr->size == nd) {
      tir_Analyzer *an = tir_analyzer_new();
      SchPath ph;
      if (sch_path_to(root, host, &ph)) sch_bind_path(an, &ph, ph.n);
      out = clip_to_shape(an, sr, buf);
      tir_analyzer_free(an);
      return out;
    }
  }
  if (reg) {
    tir_Analyzer *an = tir_analyzer_new();
    SchPath ph, pw;
    if (sch_path_to(root, host, &ph)) sch_bind_path(an, &ph, ph.n);
    tir_DomEntry rel[SCH_MAX_DEPTH];
    int nrel = 0;
    if (sch_path_to(host, &writer->hdr, &pw))
      for (int q = 1; q < pw.n; q++)
        if (pw.nodes[q]->kind == TIR_For) sch_loop_dom((const tir_For *)pw.nodes[q], &rel[nrel++]);
    tir_Node *sub = sch_substitute_bindings(writer, &reg->hdr);
    tir_Array *relaxed = tir_relax_region_pred(an, (tir_Array *)sub, rel, nrel, buf->shape, writer->predicate);
    tir_release(sub);
    sch_doms_free(rel, nrel);
    if (relaxed && relaxed->size == nd) out = clip_to_shape(an, relaxed, buf);
    tir_release(relaxed);
    tir_analyzer_free(an);
  }
  if (!out) {
    out = tir_array_new(nd);
    for (int d = 0; d < nd; d++)
      out->items[d] = &tir_range(tir_int_imm(buf->shape->items[d]->dtype, 0), R(buf->shape->items[d]))->hdr;
  }
  return out;
}

tir_Node *sch_make_region_copy_nest(const char *name, const tir_Buffer *src, const tir_Buffer *dst, const tir_Array *region,
                                    int64_t *uid) {
  int nd = src->shape->size;
  tir_Array *ivs = tir_array_new(nd), *vals = tir_array_new(nd), *idx = tir_array_new(nd);
  tir_Var **loops = calloc((size_t)nd + 1, sizeof *loops);
  for (int d = 0; d < nd; d++) {
    const tir_Range *r = (const tir_Range *)region->items[d];
    tir_DType t = src->shape->items[d]->dtype;
    char *vn = tir_strprintf("v%d", d), *ln = tir_strprintf("ax%d", d);
    tir_Var *v = tir_var_new(vn, t);
    loops[d] = tir_var_new(ln, t);
    free(vn);
    free(ln);
    ivs->items[d] = &tir_iter_var(v, tir_range(tir_int_imm(t, 0), R(src->shape->items[d])), TIR_ITER_DATA_PAR, "")->hdr;
    tir_Node *b = tir_add(R(r->min), R(&loops[d]->hdr));
    vals->items[d] = tir_simplify(NULL, b);
    tir_release(b);
    idx->items[d] = R(&v->hdr);
  }
  tir_Node *load = tir_buffer_load((tir_Buffer *)R(src), (tir_Array *)R(idx));
  tir_Node *store = tir_buffer_store((tir_Buffer *)R(dst), load, idx);
  tir_Block *b = tir_block_new(name, ivs, NULL, NULL, NULL, NULL, NULL, NULL, store);
  tir_Block *bd = tir_block_with_detected_access(b);
  tir_release(b);
  *uid = bd->uid;
  tir_Node *nest = tir_block_realize(vals, NULL, bd);
  for (int d = nd - 1; d >= 0; d--) {
    const tir_Range *r = (const tir_Range *)region->items[d];
    nest = tir_for(loops[d], tir_int_imm(loops[d]->hdr.dtype, 0), R(r->extent), TIR_FOR_SERIAL, NULL, NULL, nest);
  }
  free(loops);
  return nest;
}

tir_Node *sch_insert_at(const tir_Block *scope, const tir_Node *host, int pos, tir_Node *stmt) {
  const tir_Node *body = host->kind == TIR_For ? ((const tir_For *)host)->body : ((const tir_Block *)host)->body;
  tir_Node *nbody = sch_insert_into(body, pos, stmt);
  tir_Node *nhost;
  if (host->kind == TIR_For) {
    tir_For *f = (tir_For *)tir_node_copy(host);
    tir_release(f->body);
    f->body = nbody;
    nhost = &f->hdr;
  } else {
    nhost = &tir_block_with_body((const tir_Block *)host, nbody)->hdr;
  }
  if (host == &scope->hdr) return nhost;
  return tir_replace_stmt(&scope->hdr, host, nhost);
}

/* ---- compact data flow under a loop (TVM CheckSubtreeCompactDataflow) ---- */

/* Why the block is not a complete block (spatial variables only, reads nothing it writes),
 * or NULL (dominance: see dataflow.h). */
static const char *not_complete(const tir_Block *b, char *why, size_t cap) {
  for (int i = 0; i < b->iter_vars->size; i++) {
    const tir_IterVar *iv = (const tir_IterVar *)b->iter_vars->items[i];
    if (iv->iter_type != TIR_ITER_DATA_PAR) {
      snprintf(why, cap, "it has the non-spatial iteration variable %s", iv->var->name);
      return why;
    }
  }
  for (int r = 0; r < b->reads->size; r++)
    if (sch_block_writes(b, region_buffer(b->reads, r))) {
      snprintf(why, cap, "it reads %s, which it writes", region_buffer(b->reads, r)->name);
      return why;
    }
  return NULL;
}

/* Why the block is not a reduction block, or NULL.  path: from the function body to br. */
static const char *not_reduction(const SchPath *path, const tir_BlockRealize *br, char *why, size_t cap) {
  const tir_Block *b = br->block;
  if (!b->init) {
    snprintf(why, cap, "it has no init");
    return why;
  }
  for (int i = 0; i < b->iter_vars->size; i++) {
    const tir_IterVar *iv = (const tir_IterVar *)b->iter_vars->items[i];
    if (iv->iter_type != TIR_ITER_DATA_PAR && iv->iter_type != TIR_ITER_COMM_REDUCE) {
      snprintf(why, cap, "its iteration variable %s is neither spatial nor reduction", iv->var->name);
      return why;
    }
  }
  for (int w = 0; w < b->writes->size; w++) {
    const tir_BufferRegion *wr = (const tir_BufferRegion *)b->writes->items[w];
    for (int i = 0; i < b->iter_vars->size; i++) {
      const tir_IterVar *iv = (const tir_IterVar *)b->iter_vars->items[i];
      if (iv->iter_type == TIR_ITER_COMM_REDUCE && tir_uses_var(&wr->region->hdr, iv->var)) {
        snprintf(why, cap, "its reduction variable %s indexes the written buffer %s", iv->var->name, wr->buffer->name);
        return why;
      }
    }
  }
  /* affine bindings (TVM IsAffineBlockBinding: surjective) over the loops up to the scope */
  const tir_For *loops[SCH_MAX_DEPTH];
  int n_loops = sch_loops_above(path, loops, SCH_MAX_DEPTH);
  tir_LoopIter *it = calloc((size_t)n_loops + 1, sizeof *it);
  int constant = 1;
  for (int i = 0; i < n_loops && constant; i++) {
    it[i].var = loops[i]->loop_var;
    constant = tir_is_const_int(loops[i]->min, &it[i].min) && tir_is_const_int(loops[i]->extent, &it[i].extent);
  }
  char reason[300] = "";
  int affine = !constant || tir_detect_iter_map_level(NULL, (const tir_Node *const *)br->iter_values->items, NULL,
                                                      br->iter_values->size, it, n_loops, br->predicate,
                                                      TIR_ITER_MAP_SURJECTIVE, reason, sizeof reason);
  free(it);
  if (!affine) {
    snprintf(why, cap, "its bindings are not affine in its loops (%s)", reason);
    return why;
  }
  return NULL;
}

int sch_check_compact_dataflow(tir_Schedule *s, const char *prim, const tir_For *loop) {
  const tir_BlockRealize **blocks;
  int n = sch_child_blocks(loop->body, &blocks), rc = 0;
  for (int i = 0; i < n && !rc; i++) {
    char why_c[200], why_r[400];
    if (!not_complete(blocks[i]->block, why_c, sizeof why_c)) continue;
    SchPath p;
    sch_path_to(s->func->body, &blocks[i]->hdr, &p);
    if (!not_reduction(&p, blocks[i], why_r, sizeof why_r)) continue;
    rc = sch_error(s, prim, &loop->hdr, "this loop",
                   "loop %s does not have compact data flow: block '%s' under it is neither a complete block (%s) nor a "
                   "reduction block (%s), so its iterations may not run in parallel (TVM CheckSubtreeCompactDataflow)",
                   loop->loop_var->name, blocks[i]->block->name, why_c, why_r);
    tir_error_mark(&blocks[i]->hdr, "this block");
  }
  free(blocks);
  return rc;
}

typedef struct {
  tir_Buffer *from, *to;
} RedirectCtx;

static tir_Node *redirect_reader(const tir_BlockRealize *br, void *p) {
  RedirectCtx *c = p;
  tir_Node *nb = tir_substitute_buffers(&br->block->hdr, 1, &c->from, &c->to);
  tir_Node *pred = tir_substitute_buffers(br->predicate, 1, &c->from, &c->to);
  tir_BlockRealize *r = (tir_BlockRealize *)sch_realize_with_block(br, (tir_Block *)nb);
  tir_release(r->predicate);
  r->predicate = pred;
  return &r->hdr;
}

tir_Node *sch_redirect_readers(const tir_Node *root, const int64_t *uids, int n, tir_Buffer *from, tir_Buffer *to) {
  RedirectCtx c = {from, to};
  return sch_map_blocks(root, uids, n, redirect_reader, &c);
}
