/* transform_layout.c -- change the layout of a buffer with an index map (TVM
 * tir/schedule/primitive/layout_transformation.cc, TransformLayout).
 *
 * The map takes the buffer's indices (vars, one per dimension) to new indices (exprs): every
 * load, store, block region and allocation of the buffer is rewritten, and the new shape is
 * each output's range + 1.  Typical maps: a transpose (i, j) -> (j, i), a tiled layout
 * (i, j) -> (i // 16, j // 16, i % 16, j % 16), an XOR swizzle (i, j) -> (i, j // 8, (j % 8) ~ (i % 8)).
 *
 * Unlike TVM, the map is checked: it must be one-to-one over the old shape (otherwise two
 * elements would share storage) and never negative; both are decided exactly by enumeration
 * (arith/index_map.c).  A view of the buffer (a tensorized block's match_buffer) must map to a
 * window of the new layout (e.g. a 16x16 tile to the trailing dims of a tiled layout).
 * A function parameter takes the new shape in the signature, as in TVM: the function (its
 * interpretation, the built module) then expects arguments in the new layout.  A
 * storage_align recorded for the buffer refers to its old axes, so it must come after. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../sched_util.h"

typedef struct {
  const tir_Buffer *old;
  tir_Buffer *nb;
  tir_Var *const *vars;
  const tir_Node *const *exprs;
  int n_in, n_out;
  tir_Analyzer *an; /* ranges of the enclosing loops and block iteration variables */
} Ctx;

/* exprs with vars := idx (owned array of expressions simplified with the ranges of the
 * enclosing loops and block iteration variables, as TVM's TransformLayout does: the map
 * i -> (i // 32 % 3, i % 32) over an access B[vi] with vi < 96 gives B[vi // 32, vi % 32]) */
static tir_Array *map_point(const Ctx *c, const tir_Array *idx) {
  tir_Array *out = tir_array_new(c->n_out);
  for (int o = 0; o < c->n_out; o++) {
    tir_Node *sub = tir_substitute(c->exprs[o], c->n_in, c->vars, (tir_Node *const *)idx->items);
    tir_Node *e = tir_simplify(c->an, sub);
    tir_release(sub);
    if (e->dtype.bits != 32 && e->dtype.bits != 64) {
      e = tir_cast(TIR_INT32, e);
    }
    out->items[o] = e;
  }
  return out;
}

/* The region covering the image of a region (owned). */
static tir_Array *map_region(const Ctx *c, const tir_Array *region) {
  int point = 1;
  for (int d = 0; d < region->size; d++)
    if (!tir_is_one(((const tir_Range *)region->items[d])->extent)) point = 0;
  tir_Array *out = tir_array_new(c->n_out);
  if (point) {
    tir_Array *idx = tir_array_new(region->size);
    for (int d = 0; d < region->size; d++) idx->items[d] = R(((const tir_Range *)region->items[d])->min);
    tir_Array *pt = map_point(c, idx);
    for (int o = 0; o < c->n_out; o++) out->items[o] = &tir_range(R(pt->items[o]), tir_int_imm(pt->items[o]->dtype, 1))->hdr;
    tir_release(idx);
    tir_release(pt);
    return out;
  }
  tir_DomEntry *doms = calloc((size_t)c->n_in, sizeof *doms);
  for (int d = 0; d < c->n_in; d++) {
    const tir_Range *r = (const tir_Range *)region->items[d];
    doms[d].var = c->vars[d];
    doms[d].set.min = R(r->min);
    doms[d].set.max = tir_simplify_take(NULL, tir_sub(tir_add(R(r->min), R(r->extent)), tir_int_imm(r->min->dtype, 1)));
  }
  for (int o = 0; o < c->n_out; o++) {
    tir_IntSet set;
    const tir_Node *ext_full = c->nb->shape->items[o];
    if (tir_int_set_eval(NULL, c->exprs[o], doms, c->n_in, &set) == 0) {
      tir_Node *ext = tir_simplify_take(NULL, tir_add(tir_sub(R(set.max), R(set.min)), tir_int_imm(set.min->dtype, 1)));
      out->items[o] = &tir_range(R(set.min), ext)->hdr;
      tir_int_set_free(&set);
    } else {
      out->items[o] = &tir_range(tir_int_imm(ext_full->dtype, 0), R((tir_Node *)ext_full))->hdr;
    }
  }
  for (int d = 0; d < c->n_in; d++) {
    tir_release(doms[d].set.min);
    tir_release(doms[d].set.max);
  }
  free(doms);
  return out;
}

/* Does the map send the view's region onto a window: leading dimensions single elements,
 * trailing ones the view's shape, element (min + i) going to (new min + i)? */
static int is_window(const Ctx *c, const tir_MatchBufferRegion *m) {
  const tir_Array *reg = m->source->region;
  tir_Array *nreg = map_region(c, reg);
  /* the view covers the region's trailing dimensions; the leading ones are single elements */
  int vd = m->buffer->shape->size, lead = c->n_out - vd, rlead = reg->size - vd, ok = lead >= 0 && rlead >= 0;
  for (int d = 0; ok && d < rlead; d++) ok = tir_is_one(((const tir_Range *)reg->items[d])->extent);
  for (int d = 0; ok && d < c->n_out; d++) {
    const tir_Node *ext = ((const tir_Range *)nreg->items[d])->extent;
    ok = d < lead ? tir_is_one(ext) : tir_can_prove_equal(NULL, ext, m->buffer->shape->items[d - lead]);
  }
  if (ok) {
    /* the enclosing loops' ranges (c->an) decide it: a point of the region may be written
     * with their variables (i // 8 for 0 <= i < 8 is 0) */
    tir_Analyzer *an = c->an ? c->an : tir_analyzer_new();
    int mark = c->an ? tir_analyzer_mark(an) : 0;
    tir_Array *pt = tir_array_new(reg->size);
    tir_Var **iv = calloc((size_t)vd + 1, sizeof *iv);
    for (int d = 0; d < rlead; d++) pt->items[d] = R(((const tir_Range *)reg->items[d])->min);
    for (int d = 0; d < vd; d++) {
      iv[d] = tir_var_new("i", TIR_INT32);
      int64_t e = 1;
      tir_is_const_int(m->buffer->shape->items[d], &e);
      tir_analyzer_bind_bound(an, iv[d], 0, e - 1);
      pt->items[rlead + d] = tir_add(R(((const tir_Range *)reg->items[rlead + d])->min), R(&iv[d]->hdr));
    }
    tir_Array *img = map_point(c, pt);
    for (int d = 0; ok && d < c->n_out; d++) {
      tir_Node *want = d < lead ? R(((const tir_Range *)nreg->items[d])->min)
                                : tir_add(R(((const tir_Range *)nreg->items[d])->min), R(&iv[d - lead]->hdr));
      ok = tir_can_prove_equal(an, img->items[d], want);
      tir_release(want);
    }
    tir_release(img);
    tir_release(pt);
    if (c->an) tir_analyzer_reset(an, mark);
    for (int d = 0; d < vd; d++) tir_release(iv[d]);
    free(iv);
    if (!c->an) tir_analyzer_free(an);
  }
  tir_release(nreg);
  return ok;
}

typedef struct {
  const tir_Node *var;
  int found;
} UseCtx;

/* finds var in expressions, not in buffer definitions (a buffer's own strides) */
static int use_fn(const tir_Node *n, void *p) {
  UseCtx *u = p;
  if (n->kind == TIR_Buffer) return 1;
  if (n == u->var) u->found = 1;
  return u->found;
}

/* Does block b use view m's symbolic strides / elem_offset (other than in buffer definitions)? */
static int view_symbols_used(const tir_Block *b, const tir_MatchBufferRegion *m) {
  for (int k = 0; k <= m->buffer->strides->size; k++) {
    const tir_Node *v = k < m->buffer->strides->size ? m->buffer->strides->items[k] : m->buffer->elem_offset;
    if (!v || v->kind != TIR_Var) continue;
    UseCtx u = {v, 0};
    tir_visit(b->body, use_fn, &u);
    if (b->init) tir_visit(b->init, use_fn, &u);
    if (u.found) return 1;
  }
  return 0;
}

typedef struct {
  const tir_MatchBufferRegion *m;
} Dissolve;

static tir_Node *dissolve_fn(const tir_Node *n, void *p) {
  const Dissolve *d = p;
  if (n->kind == TIR_BufferLoad && ((const tir_BufferLoad *)n)->buffer == d->m->buffer) {
    tir_BufferLoad *l = (tir_BufferLoad *)tir_mutate_children(n, dissolve_fn, p);
    if (!l) return TIR_MUTATE_ERROR;
    tir_Node *r = tir_buffer_load((tir_Buffer *)R(&d->m->source->buffer->hdr), tir_view_source_indices(d->m->source, l->indices));
    tir_release(l);
    return r;
  }
  if (n->kind == TIR_BufferStore && ((const tir_BufferStore *)n)->buffer == d->m->buffer) {
    tir_BufferStore *st = (tir_BufferStore *)tir_mutate_children(n, dissolve_fn, p);
    if (!st) return TIR_MUTATE_ERROR;
    tir_Node *r = tir_buffer_store((tir_Buffer *)R(&d->m->source->buffer->hdr), R(st->value), tir_view_source_indices(d->m->source, st->indices));
    tir_release(st);
    return r;
  }
  return NULL;
}

/* b without view m: its accesses go to m's source at the region's offset (owned). */
static tir_Block *dissolve_view(const tir_Block *b, const tir_MatchBufferRegion *m) {
  Dissolve d = {m};
  tir_Node *body = tir_mutate(b->body, dissolve_fn, &d);
  tir_Block *nb = tir_block_with_body(b, body);
  tir_Array *mbs = tir_array_empty();
  for (int i = 0; i < b->match_buffers->size; i++)
    if (b->match_buffers->items[i] != &m->hdr) mbs = tir_array_push(mbs, R(b->match_buffers->items[i]));
  tir_release(nb->match_buffers);
  nb->match_buffers = mbs;
  if (b->init) {
    tir_Node *init = tir_mutate(b->init, dissolve_fn, &d);
    tir_release(nb->init);
    nb->init = init;
  }
  return nb;
}

static tir_Node *rewrite(const tir_Node *n, void *vctx) {
  const Ctx *c = vctx;
  if (n == &c->old->hdr) return R(&c->nb->hdr);
  if (n->kind == TIR_BufferLoad && ((const tir_BufferLoad *)n)->buffer == c->old) {
    tir_BufferLoad *l = (tir_BufferLoad *)tir_mutate_children(n, rewrite, vctx);
    if (!l) return TIR_MUTATE_ERROR;
    tir_Array *idx = map_point(c, l->indices);
    tir_release(l->indices);
    l->indices = idx;
    return &l->hdr;
  }
  if (n->kind == TIR_BufferStore && ((const tir_BufferStore *)n)->buffer == c->old) {
    tir_BufferStore *st = (tir_BufferStore *)tir_mutate_children(n, rewrite, vctx);
    if (!st) return TIR_MUTATE_ERROR;
    tir_Array *idx = map_point(c, st->indices);
    tir_release(st->indices);
    st->indices = idx;
    return &st->hdr;
  }
  if (n->kind == TIR_Block) {
    /* views of the buffer that the map does not keep as windows are dissolved first (their
     * accesses become accesses of the buffer itself), when their impl does not use the view's
     * strides or offset: e.g. ldmatrix's per-lane row addresses into an XOR-swizzled tile */
    const tir_Block *b = (const tir_Block *)n;
    tir_Block *tmp = NULL;
    for (int i = 0; i < b->match_buffers->size; i++) {
      const tir_MatchBufferRegion *m = (const tir_MatchBufferRegion *)b->match_buffers->items[i];
      if (m->source->buffer != c->old || is_window(c, m)) continue;
      if (view_symbols_used(b, m)) {
        tir_release(tmp);
        tir_error_set(TIR_ERR_SCHEDULE, "transform_layout",
                      "the view %s (match_buffer) of %s would not stay a window of the new layout, and block '%s' uses its strides "
                      "or offset (e.g. a wmma load's leading dimension): the map must send the view's region to single elements in "
                      "the leading dimensions and to the view's shape, in order, in the trailing ones",
                      m->buffer->name, c->old->name, b->name);
        return TIR_MUTATE_ERROR;
      }
      const tir_Block *cur = tmp ? tmp : b;
      tir_Block *next = dissolve_view(cur, m);
      tir_release(tmp);
      tmp = next;
    }
    const tir_Block *cur = tmp ? tmp : b;
    int mark = tir_analyzer_mark(c->an);
    for (int i = 0; i < cur->iter_vars->size; i++) {
      const tir_IterVar *iv = (const tir_IterVar *)cur->iter_vars->items[i];
      tir_analyzer_bind_range(c->an, iv->var, iv->dom->min, iv->dom->extent);
    }
    tir_Node *r = tir_mutate_children(&cur->hdr, rewrite, vctx);
    tir_analyzer_reset(c->an, mark);
    tir_release(tmp);
    return r ? r : TIR_MUTATE_ERROR;
  }
  if (n->kind == TIR_For) {
    const tir_For *f = (const tir_For *)n;
    int mark = tir_analyzer_mark(c->an);
    tir_analyzer_bind_range(c->an, f->loop_var, f->min, f->extent);
    tir_Node *r = tir_mutate_children(n, rewrite, vctx);
    tir_analyzer_reset(c->an, mark);
    return r ? r : TIR_MUTATE_ERROR;
  }
  if (n->kind == TIR_MatchBufferRegion && ((const tir_MatchBufferRegion *)n)->source->buffer == c->old) {
    const tir_MatchBufferRegion *m = (const tir_MatchBufferRegion *)n;
    if (!is_window(c, m)) {
      tir_error_set(TIR_ERR_SCHEDULE, "transform_layout", "the view %s (match_buffer) of %s would not stay a window of the new layout",
                    m->buffer->name, c->old->name);
      return TIR_MUTATE_ERROR;
    }
    tir_Array *nreg = map_region(c, m->source->region);
    return &tir_match_buffer_region((tir_Buffer *)R(&m->buffer->hdr), tir_buffer_region((tir_Buffer *)R(&c->nb->hdr), nreg))->hdr;
  }
  if (n->kind == TIR_BufferRegion && ((const tir_BufferRegion *)n)->buffer == c->old) {
    tir_Array *reg = map_region(c, ((const tir_BufferRegion *)n)->region);
    return &tir_buffer_region((tir_Buffer *)R(&c->nb->hdr), reg)->hdr;
  }
  return NULL;
}

typedef struct {
  const tir_Buffer *buf;
  const tir_Node *found; /* a match_buffer or a storage_align of buf */
  const char *what;
} Uses;

static int find_uses(const tir_Node *n, void *vctx) {
  Uses *u = vctx;
  if (u->found || n->kind != TIR_Block) return u->found != NULL;
  const tir_Block *b = (const tir_Block *)n;
  const tir_Node *al = tir_ann_get(b->annotations, "buffer_dim_align");
  if (al && al->kind == TIR_Array) {
    const tir_Array *a = (const tir_Array *)al;
    for (int i = 0; i < a->size; i++) {
      const tir_Array *e = (const tir_Array *)a->items[i];
      int64_t bi;
      if (e && e->hdr.kind == TIR_Array && e->size == 4 && tir_is_const_int(e->items[0], &bi) && bi >= 0 &&
          bi < b->writes->size && ((const tir_BufferRegion *)b->writes->items[bi])->buffer == u->buf) {
        u->found = n;
        u->what = "has a storage_align for it, which names its old axes (apply storage_align after transform_layout)";
        return 1;
      }
    }
  }
  return 0;
}

int tir_sched_transform_layout(tir_Schedule *s, int64_t uid, int is_write, int index, const tir_Array *vars,
                               const tir_Array *exprs) {
  const char *P = "transform_layout";
  const tir_BlockRealize *br = tir_sched_block_realize(s, uid, P);
  if (!br) return -1;
  const tir_Block *blk = br->block;
  const tir_Array *regions = is_write ? blk->writes : blk->reads;
  const char *kind = is_write ? "write" : "read";
  if (index < 0 || index >= regions->size)
    return sch_error(s, P, &br->hdr, "this block", "%s buffer index %d is out of range: block '%s' %ss %d buffer(s)", kind, index,
                     blk->name, kind, regions->size);
  const tir_Buffer *buf = ((const tir_BufferRegion *)regions->items[index])->buffer;
  int nd = buf->shape->size;
  if (vars->size != nd)
    return sch_error(s, P, &br->hdr, "this block", "the index map takes %d indices, but %s has %d dimensions", vars->size,
                     buf->name, nd);
  if (exprs->size < 1) return sch_error(s, P, &br->hdr, "this block", "the index map returns no indices");
  int64_t *ext = calloc((size_t)nd + 1, sizeof *ext);
  for (int d = 0; d < nd; d++)
    if (!tir_is_const_int(buf->shape->items[d], &ext[d])) {
      free(ext);
      return sch_error(s, P, &br->hdr, "this block", "%s has a symbolic shape; transform_layout needs constant extents", buf->name);
    }
  Uses u = {buf, NULL, NULL};
  tir_visit(s->func->body, find_uses, &u);
  if (u.found) {
    free(ext);
    return sch_error(s, P, u.found, "this block", "block '%s' %s", ((const tir_Block *)u.found)->name, u.what);
  }
  int n_out = exprs->size;
  int64_t *mn = calloc((size_t)n_out, sizeof *mn), *mx = calloc((size_t)n_out, sizeof *mx);
  char why[512];
  int injective = 1, rc = -1;
  tir_Buffer *nb = NULL;
  tir_Node *body = NULL;
  if (tir_index_map_analyze((const tir_Var *const *)vars->items, ext, nd, (const tir_Node *const *)exprs->items, n_out, mn, mx,
                            &injective, why, sizeof why) != 0) {
    char msg[512];
    snprintf(msg, sizeof msg, "%s", tir_error_get()->message ? tir_error_get()->message : "?");
    sch_error(s, P, &br->hdr, "this block", "the index map for %s: %s", buf->name, msg);
    goto done;
  }
  for (int o = 0; o < n_out; o++)
    if (mn[o] < 0) {
      sch_error(s, P, &br->hdr, "this block", "output %d of the index map reaches %lld over the shape of %s; indices must be >= 0",
                o, (long long)mn[o], buf->name);
      goto done;
    }
  if (!injective) {
    sch_error(s, P, &br->hdr, "this block", "the index map is not one-to-one over the shape of %s: %s", buf->name, why);
    goto done;
  }
  nb = (tir_Buffer *)tir_node_copy(&buf->hdr);
  tir_release(nb->shape);
  nb->shape = tir_array_new(n_out);
  for (int o = 0; o < n_out; o++) nb->shape->items[o] = tir_int_imm(mx[o] + 1 > INT32_MAX ? TIR_INT64 : TIR_INT32, mx[o] + 1);
  tir_release(nb->strides);
  nb->strides = tir_array_empty();
  Ctx c = {buf, nb, (tir_Var *const *)vars->items, (const tir_Node *const *)exprs->items, nd, n_out, tir_analyzer_new()};
  body = tir_mutate(s->func->body, rewrite, &c);
  tir_analyzer_free(c.an);
  if (!body) {
    char msg[512];
    snprintf(msg, sizeof msg, "%s", tir_error_get()->message ? tir_error_get()->message : "rewriting the accesses failed");
    sch_error(s, P, &br->hdr, "this block", "%s", msg);
    goto done;
  }
  tir_PrimFunc *f = (tir_PrimFunc *)tir_node_copy(&s->func->hdr);
  tir_release(f->body);
  f->body = body;
  body = NULL;
  /* a parameter takes the new shape in the signature (TVM rewrites the buffer_map): callers
   * then pass arrays in the new layout */
  for (int i = 0; i < f->params->size; i++)
    if (f->params->items[i] == &buf->hdr) {
      tir_Array *np = tir_array_new(f->params->size);
      for (int k = 0; k < f->params->size; k++) np->items[k] = tir_retain(k == i ? &nb->hdr : f->params->items[k]);
      tir_release(f->params);
      f->params = np;
    }
  tir_schedule_set_func(s, f);
  tir_release(f);
  rc = 0;
done:
  tir_release(body);
  tir_release(nb);
  free(ext);
  free(mn);
  free(mx);
  return rc;
}
