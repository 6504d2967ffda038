/* block_access.c -- read/write regions of a block (TVM src/tir/analysis/
 * block_access_region_detector.cc).  Loops inside the block are relaxed: an access
 * A[i0 * 16 + i1] under "for i1 in 0..16" covers [i0 * 16, i0 * 16 + 16). */
#include <stdlib.h>
#include <string.h>

#include "tir/analysis.h"
#include "tir/arith.h"
#include "tir/error.h"
#include "tir/strbuf.h"

typedef struct {
  const tir_Buffer *buf;
  tir_Array *region; /* owned Array of Range */
} Acc;

typedef struct {
  tir_Analyzer *an;
  tir_DomEntry doms[256];
  int n_doms;
  Acc *reads, *writes;
  int n_reads, n_writes, cap_reads, cap_writes;
  const tir_Array *alloc; /* buffers allocated by the block: excluded */
  const tir_Buffer *inner_alloc[256];
  int n_inner_alloc;
  /* check mode (tir_block_check_access): each access is compared with the declared
   * regions of `checked` instead of being merged; `at` is the node making the access */
  const tir_Block *checked;
  const tir_Node *at, *bad;
  int failed, check_reads, check_writes;
  tir_Array *written; /* declared and detected writes of `checked` */
} Ctx;

static int check_access(Ctx *c, int is_write, const tir_Buffer *buf, tir_Array *region);

static int excluded(Ctx *c, const tir_Buffer *b) {
  for (int i = 0; c->alloc && i < c->alloc->size; i++)
    if (c->alloc->items[i] == &b->hdr) return 1;
  for (int i = 0; i < c->n_inner_alloc; i++)
    if (c->inner_alloc[i] == b) return 1;
  return 0;
}

tir_Range *tir_range_union(tir_Analyzer *a, const tir_Range *x, const tir_Range *y) {
  if (tir_expr_deep_equal(x->min, y->min) && tir_expr_deep_equal(x->extent, y->extent)) return (tir_Range *)R(x);
  /* hull = [min(x0, y0), max(x0 + xe, y0 + ye)) -- provable only when the mins and ends compare */
  tir_Node *xe = tir_add(R(x->min), R(x->extent)), *ye = tir_add(R(y->min), R(y->extent));
  tir_Node *lo = tir_min(R(x->min), R(y->min)), *hi = tir_max(xe, ye);
  tir_Node *slo = tir_simplify(a, lo), *shi = tir_simplify(a, hi);
  tir_release(lo);
  tir_release(hi);
  if (slo->kind == TIR_Min || shi->kind == TIR_Max) {
    tir_release(slo);
    tir_release(shi);
    return NULL;
  }
  tir_Node *ext = tir_sub(shi, R(slo));
  tir_Node *sext = tir_simplify(a, ext);
  tir_release(ext);
  return tir_range(slo, sext);
}

static void add_access(Ctx *c, int is_write, const tir_Buffer *buf, tir_Array *region /* owned */) {
  if (c->checked) {
    if (!c->failed && check_access(c, is_write, buf, region)) c->failed = 1, c->bad = c->at;
    tir_release(region);
    return;
  }
  Acc **list = is_write ? &c->writes : &c->reads;
  int *n = is_write ? &c->n_writes : &c->n_reads, *cap = is_write ? &c->cap_writes : &c->cap_reads;
  for (int i = 0; i < *n; i++) {
    Acc *a = &(*list)[i];
    if (a->buf != buf) continue;
    if (a->region->size != region->size) break; /* malformed; keep separately */
    tir_Array *u = tir_array_new(region->size);
    for (int d = 0; d < region->size; d++) {
      tir_Range *r = tir_range_union(c->an, (tir_Range *)a->region->items[d], (tir_Range *)region->items[d]);
      if (!r)
        r = tir_range(tir_int_imm(buf->shape->items[d]->dtype, 0), R(buf->shape->items[d]));
      u->items[d] = &r->hdr;
    }
    tir_release(a->region);
    tir_release(region);
    a->region = u;
    return;
  }
  if (*n == *cap) {
    *cap = *cap ? *cap * 2 : 8;
    *list = realloc(*list, sizeof(Acc) * (size_t)*cap);
  }
  (*list)[*n].buf = buf;
  (*list)[*n].region = region;
  (*n)++;
}

/* Region of a point access relaxed over the loops inside the block. */
static tir_Array *relax_points(Ctx *c, const tir_Buffer *buf, const tir_Array *indices) {
  tir_Array *pts = tir_array_new(indices->size);
  for (int i = 0; i < indices->size; i++) {
    const tir_Node *ix = indices->items[i];
    tir_Node *ext = tir_int_imm(ix->dtype.lanes > 1 ? tir_dtype_element(ix->dtype) : ix->dtype, 1);
    if (ix->kind == TIR_Ramp) {
      /* a vector access covers base .. base + stride*(lanes-1) */
      const tir_Ramp *r = (const tir_Ramp *)ix;
      tir_release(ext);
      ext = tir_add(tir_mul(R(r->stride), tir_int_imm(r->stride->dtype, r->lanes - 1)), tir_int_imm(r->stride->dtype, 1));
      pts->items[i] = &tir_range(R(r->base), ext)->hdr;
    } else {
      pts->items[i] = &tir_range(R((tir_Node *)ix), ext)->hdr;
    }
  }
  tir_Array *out = tir_relax_region(c->an, pts, c->doms, c->n_doms, buf->shape);
  tir_release(pts);
  return out;
}

static void walk(Ctx *c, const tir_Node *n);

static int visit_expr(const tir_Node *n, void *p) {
  Ctx *c = p;
  if (n->kind == TIR_BufferLoad) {
    const tir_BufferLoad *l = (const tir_BufferLoad *)n;
    c->at = n;
    if (!excluded(c, l->buffer)) add_access(c, 0, l->buffer, relax_points(c, l->buffer, l->indices));
    return 0;
  }
  if (n->kind == TIR_Call) {
    /* builtins that take a buffer region as (buffer, ...) args are opaque: nothing to add */
    return 0;
  }
  return 0;
}

static void walk_expr(Ctx *c, const tir_Node *e) { tir_visit(e, visit_expr, c); }

static void walk(Ctx *c, const tir_Node *n) {
  if (!n) return;
  switch (n->kind) {
    case TIR_SeqStmt: {
      const tir_Array *s = ((const tir_SeqStmt *)n)->seq;
      for (int i = 0; i < s->size; i++) walk(c, s->items[i]);
      return;
    }
    case TIR_For: {
      const tir_For *f = (const tir_For *)n;
      walk_expr(c, f->min);
      walk_expr(c, f->extent);
      int pushed = c->n_doms < 256;
      if (pushed) {
        tir_DomEntry *d = &c->doms[c->n_doms++];
        d->var = f->loop_var;
        d->set.min = tir_retain(f->min);
        tir_Node *last = tir_sub(tir_add(R(f->min), R(f->extent)), tir_int_imm(f->min->dtype, 1));
        d->set.max = tir_simplify(c->an, last);
        tir_release(last);
      }
      int mark = tir_analyzer_mark(c->an);
      tir_analyzer_bind_range(c->an, f->loop_var, f->min, f->extent);
      walk(c, f->body);
      tir_analyzer_reset(c->an, mark);
      if (pushed) {
        c->n_doms--;
        tir_release(c->doms[c->n_doms].set.min);
        tir_release(c->doms[c->n_doms].set.max);
      }
      return;
    }
    case TIR_BufferStore: {
      const tir_BufferStore *s = (const tir_BufferStore *)n;
      walk_expr(c, s->value);
      for (int i = 0; i < s->indices->size; i++) walk_expr(c, s->indices->items[i]);
      c->at = n;
      if (!excluded(c, s->buffer)) add_access(c, 1, s->buffer, relax_points(c, s->buffer, s->indices));
      return;
    }
    case TIR_IfThenElse: {
      const tir_IfThenElse *f = (const tir_IfThenElse *)n;
      walk_expr(c, f->cond);
      walk(c, f->then_case);
      walk(c, f->else_case);
      return;
    }
    case TIR_LetStmt: {
      const tir_LetStmt *l = (const tir_LetStmt *)n;
      walk_expr(c, l->value);
      walk(c, l->body);
      return;
    }
    case TIR_Evaluate: walk_expr(c, ((const tir_Evaluate *)n)->value); return;
    case TIR_AttrStmt: walk_expr(c, ((const tir_AttrStmt *)n)->value); walk(c, ((const tir_AttrStmt *)n)->body); return;
    case TIR_Allocate: {
      const tir_Allocate *a = (const tir_Allocate *)n;
      if (c->n_inner_alloc < 256) c->inner_alloc[c->n_inner_alloc++] = a->buffer;
      walk(c, a->body);
      return;
    }
    case TIR_DeclBuffer: walk(c, ((const tir_DeclBuffer *)n)->body); return;
    case TIR_BlockRealize: {
      const tir_BlockRealize *br = (const tir_BlockRealize *)n;
      const tir_Block *b = br->block;
      for (int i = 0; i < br->iter_values->size; i++) walk_expr(c, br->iter_values->items[i]);
      walk_expr(c, br->predicate);
      int nv = b->iter_vars->size;
      tir_Var **vars = calloc((size_t)nv + 1, sizeof *vars);
      tir_Node **vals = calloc((size_t)nv + 1, sizeof *vals);
      for (int i = 0; i < nv; i++) {
        vars[i] = ((tir_IterVar *)b->iter_vars->items[i])->var;
        vals[i] = br->iter_values->items[i];
      }
      for (int w = 0; w < 2; w++) {
        const tir_Array *list = w ? b->writes : b->reads;
        for (int i = 0; i < list->size; i++) {
          const tir_BufferRegion *r = (const tir_BufferRegion *)list->items[i];
          if (excluded(c, r->buffer)) continue;
          int skip = 0;
          for (int j = 0; j < b->alloc_buffers->size; j++)
            if (b->alloc_buffers->items[j] == &r->buffer->hdr) skip = 1;
          if (skip) continue;
          tir_Node *sub = tir_substitute(&r->region->hdr, nv, vars, vals);
          tir_Array *rel = tir_relax_region_pred(c->an, (tir_Array *)sub, c->doms, c->n_doms, r->buffer->shape, br->predicate);
          tir_release(sub);
          c->at = n;
          add_access(c, w, r->buffer, rel);
        }
      }
      free(vars);
      free(vals);
      return;
    }
    default: return;
  }
}

static tir_Array *to_regions(Acc *list, int n) {
  tir_Array *out = tir_array_new(n);
  for (int i = 0; i < n; i++) {
    out->items[i] = &tir_buffer_region((tir_Buffer *)R(list[i].buf), list[i].region)->hdr;
  }
  free(list);
  return out;
}

int tir_block_access_regions(const tir_Block *block, tir_Array **reads, tir_Array **writes) {
  Ctx c;
  memset(&c, 0, sizeof c);
  c.an = tir_analyzer_new();
  c.alloc = block->alloc_buffers;
  for (int i = 0; i < block->iter_vars->size; i++) {
    const tir_IterVar *iv = (const tir_IterVar *)block->iter_vars->items[i];
    tir_analyzer_bind_range(c.an, iv->var, iv->dom->min, iv->dom->extent);
  }
  for (int i = 0; i < block->match_buffers->size; i++) {
    /* a matched buffer reads/writes its source region */
    const tir_MatchBufferRegion *m = (const tir_MatchBufferRegion *)block->match_buffers->items[i];
    if (c.n_inner_alloc < 256) c.inner_alloc[c.n_inner_alloc++] = m->buffer;
    add_access(&c, 0, m->source->buffer, (tir_Array *)R(m->source->region));
    add_access(&c, 1, m->source->buffer, (tir_Array *)R(m->source->region));
  }
  walk(&c, block->init);
  walk(&c, block->body);
  tir_analyzer_free(c.an);
  if (block->init) {
    /* TVM's rule (GetBlockAccessRegion): a block with an init overwrites what it writes
     * before reading it, so the value a written buffer had before the block is never read;
     * such buffers are dropped from the reads (C = C + A*B reads A, B). */
    int k = 0;
    for (int i = 0; i < c.n_reads; i++) {
      int written = 0;
      for (int j = 0; j < c.n_writes && !written; j++) written = c.writes[j].buf == c.reads[i].buf;
      if (written) tir_release(c.reads[i].region);
      else c.reads[k++] = c.reads[i];
    }
    c.n_reads = k;
  }
  *reads = to_regions(c.reads, c.n_reads);
  *writes = to_regions(c.writes, c.n_writes);
  return 0;
}

tir_Block *tir_block_with_detected_access(const tir_Block *block) {
  tir_Array *r, *w;
  tir_block_access_regions(block, &r, &w);
  tir_Block *b = (tir_Block *)tir_node_copy(&block->hdr);
  tir_release(b->reads);
  tir_release(b->writes);
  b->reads = r;
  b->writes = w;
  return b;
}

tir_Array *tir_reads_with_writes(const tir_Array *reads, const tir_Array *writes) {
  tir_Array *out = tir_array_new(0);
  for (int i = 0; i < writes->size; i++) {
    const tir_Buffer *wb = ((const tir_BufferRegion *)writes->items[i])->buffer;
    int read = 0;
    for (int j = 0; j < reads->size && !read; j++) read = ((const tir_BufferRegion *)reads->items[j])->buffer == wb;
    if (!read) out = tir_array_push(out, R(writes->items[i]));
  }
  for (int j = 0; j < reads->size; j++) out = tir_array_push(out, R(reads->items[j]));
  return out;
}

/* ---- declared regions against the body (tir_block_check_access) ---- */

/* a <= b provably (both stolen) */
static int provable_le(tir_Analyzer *an, tir_Node *a, tir_Node *b /* both stolen */) {
  tir_Node *c = tir_cmp(TIR_LE, a, b);
  int ok = tir_can_prove(an, c);
  tir_release(c);
  return ok;
}

/* Does `decl` (declared, in the block's variables) contain `r` in every dimension?  The
 * analyzer knows the iteration domains and the loops around the access.  r is clipped to
 * the buffer first: relaxing a nested block's region over a non-dividing split can reach
 * past the buffer where the predicate keeps the accesses inside. */
static int region_covers(tir_Analyzer *an, const tir_Buffer *buf, const tir_Array *decl, const tir_Array *r) {
  if (decl->size != r->size || r->size != buf->shape->size) return 0;
  for (int d = 0; d < r->size; d++) {
    const tir_Range *x = (const tir_Range *)decl->items[d], *y = (const tir_Range *)r->items[d];
    tir_Node *shape = buf->shape->items[d];
    /* x.min <= max(y.min, 0) and min(y.end, shape) <= x.end, one side at a time */
    int lo = provable_le(an, R(x->min), R(y->min)) || provable_le(an, R(x->min), tir_int_imm(x->min->dtype, 0));
    int hi = lo && (provable_le(an, tir_add(R(y->min), R(y->extent)), tir_add(R(x->min), R(x->extent))) ||
                    provable_le(an, tir_cast(x->min->dtype, R(shape)), tir_add(R(x->min), R(x->extent))));
    if (!hi) return 0;
  }
  return 1;
}

/* Does a region of buf in list cover region (NULL: is buf in list at all)?  *listed: buf is. */
static int list_covers(tir_Analyzer *an, const tir_Array *list, const tir_Buffer *buf, const tir_Array *region, int *listed) {
  for (int i = 0; i < list->size; i++) {
    const tir_BufferRegion *d = (const tir_BufferRegion *)list->items[i];
    if (d->buffer != buf) continue;
    if (listed) *listed = 1;
    if (!region || region_covers(an, buf, d->region, region)) return 1;
  }
  return 0;
}

/* "A[{vi, {vk, vk + 4}}]" for a region (malloc'd): the T script's region syntax. */
static char *region_text(const tir_Buffer *buf, const tir_Array *region) {
  tir_BufferRegion *br = tir_buffer_region((tir_Buffer *)R(buf), (tir_Array *)R(region));
  char *t = tir_print(&br->hdr);
  tir_release(br);
  return t;
}

static char *list_text(const tir_Array *list, const char *what) {
  tir_StrBuf sb;
  tir_sb_init(&sb);
  tir_sb_printf(&sb, "%s(", what);
  for (int i = 0; i < list->size; i++) {
    const tir_BufferRegion *d = (const tir_BufferRegion *)list->items[i];
    char *t = region_text(d->buffer, d->region);
    tir_sb_printf(&sb, "%s%s", i ? ", " : "", t);
    free(t);
  }
  tir_sb_printf(&sb, ")");
  return tir_sb_take(&sb);
}

static int check_access(Ctx *c, int is_write, const tir_Buffer *buf, tir_Array *region) {
  const tir_Block *b = c->checked;
  if (!(is_write ? c->check_writes : c->check_reads)) return 0; /* that side is inferred */
  if (!is_write && b->init && list_covers(c->an, c->written, buf, NULL, NULL)) return 0; /* TVM's rule: no read */
  const tir_Array *decl = is_write ? b->writes : b->reads;
  int listed = 0;
  if (list_covers(c->an, decl, buf, region, &listed)) return 0;
  /* an opaque block (no iteration variables) may read back what it declares to write: TVM
   * scripts write in-place updates so (test_var_args_sugar's "sum": B[0] = 0, then B[0] += ...) */
  if (!is_write && b->iter_vars->size == 0 && c->check_writes && list_covers(c->an, b->writes, buf, region, NULL)) return 0;
  char *acc = region_text(buf, region), *have = list_text(decl, is_write ? "T.writes" : "T.reads");
  if (listed)
    tir_error_set(TIR_ERR_VALUE, "T.block",
                  "block '%s' %s %s, which its declared %s does not cover (declared regions must cover every access "
                  "of the body; omit T.%s to have it inferred)",
                  b->name, is_write ? "writes" : "reads", acc, have, is_write ? "writes" : "reads");
  else
    tir_error_set(TIR_ERR_VALUE, "T.block",
                  "block '%s' %s %s, but its declared %s does not list %s (declared regions must cover every access "
                  "of the body; omit T.%s to have it inferred)",
                  b->name, is_write ? "writes" : "reads", acc, have, buf->name, is_write ? "writes" : "reads");
  free(acc);
  free(have);
  return -1;
}

int tir_block_check_access(const tir_Block *block, int check_reads, int check_writes, const tir_Node *ir,
                           const tir_Array *outer_vars, const tir_Array *outer_doms) {
  if (!check_reads && !check_writes) return 0;
  /* an opaque block (no iteration variables) declaring nothing, as lowering passes build
   * them (TVM: Block({}, {}, {}, "", body)): its regions are not claimed */
  if (block->iter_vars->size == 0 && block->reads->size == 0 && block->writes->size == 0) return 0;
  Ctx c;
  memset(&c, 0, sizeof c);
  tir_Array *det_r, *det_w;
  tir_block_access_regions(block, &det_r, &det_w);
  c.an = tir_analyzer_new();
  c.alloc = block->alloc_buffers;
  c.checked = block;
  c.check_reads = check_reads;
  c.check_writes = check_writes;
  c.written = tir_array_concat(block->writes, det_w);
  for (int i = 0; outer_vars && outer_doms && i < outer_vars->size && i < outer_doms->size; i++) {
    const tir_Range *d = (const tir_Range *)outer_doms->items[i];
    tir_analyzer_bind_range(c.an, (const tir_Var *)outer_vars->items[i], d->min, d->extent);
  }
  for (int i = 0; i < block->iter_vars->size; i++) {
    const tir_IterVar *iv = (const tir_IterVar *)block->iter_vars->items[i];
    tir_analyzer_bind_range(c.an, iv->var, iv->dom->min, iv->dom->extent);
  }
  const tir_Node *bad = NULL;
  for (int i = 0; i < block->match_buffers->size; i++) {
    /* a view reads or writes its source: with both lists declared, one must cover it (a
     * list that is inferred holds it) */
    const tir_MatchBufferRegion *m = (const tir_MatchBufferRegion *)block->match_buffers->items[i];
    if (c.n_inner_alloc < 256) c.inner_alloc[c.n_inner_alloc++] = m->buffer;
    const tir_Buffer *src = m->source->buffer;
    if (bad || !check_reads || !check_writes || list_covers(c.an, block->reads, src, m->source->region, NULL) ||
        list_covers(c.an, block->writes, src, m->source->region, NULL))
      continue;
    char *acc = region_text(src, m->source->region);
    tir_error_set(TIR_ERR_VALUE, "T.block",
                  "block '%s' views %s (T.match_buffer %s), which neither its declared T.reads nor T.writes covers",
                  block->name, acc, m->buffer->name);
    free(acc);
    bad = ir ? ir : &block->hdr; /* the printer marks statements, not views */
  }
  if (!bad) {
    walk(&c, block->init);
    if (!c.failed) walk(&c, block->body);
    if (c.failed) bad = c.bad;
  }
  tir_analyzer_free(c.an);
  tir_release(c.written);
  tir_release(det_r);
  tir_release(det_w);
  if (!bad) return 0;
  tir_error_set_ir(ir ? ir : &block->hdr);
  tir_error_mark(bad, bad == ir || bad == &block->hdr ? "this block" : "this access");
  return -1;
}
