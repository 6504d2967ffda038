/* lower_match_buffer.c -- removes match_buffer views (TVM src/tir/transforms/lower_match_buffer.cc).
 *
 * A block's `M = match_buffer(S[r0:e0, ..., rn:en])` is a window onto S: every access
 * M[i0, ..., ik] becomes S[r0, ..., r(n-k-1), r(n-k) + i0, ..., rn + ik] (M's dimensions are the
 * trailing ones of the region; the leading ones must have extent 1), and M's symbolic strides
 * and elem_offset (e.g. the leading dimension a wmma load needs) become S's actual strides and
 * the flat offset of the region's start.  Runs after compact_buffer_allocation, when S has its
 * final shape and strides.  Errors: a region whose leading dimensions are not single elements,
 * or a constant stride of M that is not S's. */
#include <stdlib.h>
#include <string.h>

#include "pass_util.h"
#include "tir/arith.h"

typedef struct {
  const tir_Buffer *m;
  const tir_BufferRegion *src;
  tir_Node *owned; /* src when it was rewritten through an enclosing view */
} View;

typedef struct {
  View v[64];
  int n;
} Ctx;

/* S's stride of dimension d (owned): explicit, or the product of the later extents */
static tir_Node *stride_of(const tir_Buffer *s, int d) {
  if (s->strides->size == s->shape->size) return R(s->strides->items[d]);
  tir_Node *st = tir_int_imm(s->shape->size ? s->shape->items[0]->dtype : TIR_INT32, 1);
  for (int k = s->shape->size - 1; k > d; k--) st = tir_mul(st, R(s->shape->items[k]));
  tir_Node *r = tir_simplify(NULL, st);
  tir_release(st);
  return r;
}

static const View *view_of(const Ctx *c, const tir_Buffer *b) {
  for (int i = c->n - 1; i >= 0; i--)
    if (c->v[i].m == b) return &c->v[i];
  return NULL;
}

static tir_Node *mut(const tir_Node *n, void *p);

static tir_Node *rewrite_access(const tir_Node *n, void *p) {
  Ctx *c = p;
  switch (n->kind) {
    case TIR_BufferLoad: {
      const View *v = view_of(c, ((const tir_BufferLoad *)n)->buffer);
      if (!v) return NULL;
      tir_BufferLoad *l = (tir_BufferLoad *)tir_mutate_children(n, rewrite_access, p);
      if (!l) return TIR_MUTATE_ERROR;
      tir_Node *r = tir_buffer_load((tir_Buffer *)R(&v->src->buffer->hdr), tir_view_source_indices(v->src, l->indices));
      tir_release(l);
      return r;
    }
    case TIR_BufferStore: {
      const View *v = view_of(c, ((const tir_BufferStore *)n)->buffer);
      if (!v) return NULL;
      tir_BufferStore *st = (tir_BufferStore *)tir_mutate_children(n, rewrite_access, p);
      if (!st) return TIR_MUTATE_ERROR;
      tir_Node *r = tir_buffer_store((tir_Buffer *)R(&v->src->buffer->hdr), R(st->value), tir_view_source_indices(v->src, st->indices));
      tir_release(st);
      return r;
    }
    case TIR_BufferRegion: {
      const tir_BufferRegion *br = (const tir_BufferRegion *)n;
      const View *v = view_of(c, br->buffer);
      if (!v) return NULL;
      const tir_Array *reg = v->src->region;
      int lead = reg->size - br->region->size;
      tir_Array *out = tir_array_new(reg->size);
      for (int d = 0; d < reg->size; d++) {
        const tir_Range *sr = (const tir_Range *)reg->items[d];
        if (d < lead) {
          out->items[d] = &tir_range(R(sr->min), tir_int_imm(sr->min->dtype, 1))->hdr;
        } else {
          const tir_Range *r = (const tir_Range *)br->region->items[d - lead];
          out->items[d] = &tir_range(tir_add(R(sr->min), R(r->min)), R(r->extent))->hdr;
        }
      }
      return &tir_buffer_region((tir_Buffer *)R(&v->src->buffer->hdr), out)->hdr;
    }
    default: return NULL;
  }
}

static tir_Node *lower_block(const tir_BlockRealize *br, Ctx *c) {
  const tir_Block *b = br->block;
  int base = c->n;
  tir_Var *vars[128];
  tir_Node *vals[128];
  int nv = 0;
  for (int i = 0; i < b->match_buffers->size; i++) {
    const tir_MatchBufferRegion *mb = (const tir_MatchBufferRegion *)b->match_buffers->items[i];
    const tir_Buffer *m = mb->buffer, *s = mb->source->buffer;
    /* the source may itself be a view of an enclosing block: resolve it first */
    tir_Node *src_node = rewrite_access(&mb->source->hdr, c);
    const tir_BufferRegion *src = src_node ? (const tir_BufferRegion *)src_node : mb->source;
    s = src->buffer;
    int lead = src->region->size - m->shape->size;
    if (lead < 0) {
      tir_release(src_node);
      tir_error_set(TIR_ERR_LOWER, "lower_match_buffer", "block '%s': view %s has %d dimensions, more than its source %s (%d)", b->name,
                    m->name, m->shape->size, s->name, src->region->size);
      goto fail;
    }
    for (int d = 0; d < lead; d++)
      if (!tir_is_one(((const tir_Range *)src->region->items[d])->extent)) {
        tir_release(src_node);
        tir_error_set(TIR_ERR_LOWER, "lower_match_buffer",
                      "block '%s': view %s covers dimension %d of %s with more than one element, but %s has only its trailing "
                      "dimensions",
                      b->name, m->name, d, s->name, m->name);
        goto fail;
      }
    /* strides */
    for (int d = 0; d < m->strides->size && d < m->shape->size; d++) {
      const tir_Node *ms = m->strides->items[d];
      tir_Node *ss = stride_of(s, lead + d);
      if (ms->kind == TIR_Var && nv < 128) {
        vars[nv] = (tir_Var *)ms;
        vals[nv++] = ss;
        continue;
      }
      tir_Node *eq = tir_cmp(TIR_EQ, R((tir_Node *)ms), R(ss));
      int ok = tir_can_prove(NULL, eq);
      tir_release(eq);
      if (!ok) {
        char *x = tir_print_expr(ms), *y = tir_print_expr(ss);
        tir_error_set(TIR_ERR_LOWER, "lower_match_buffer", "block '%s': view %s declares stride %s in dimension %d, but %s's is %s",
                      b->name, m->name, x, d, s->name, y);
        free(x);
        free(y);
        tir_release(ss);
        tir_release(src_node);
        goto fail;
      }
      tir_release(ss);
    }
    if (m->elem_offset && m->elem_offset->kind == TIR_Var && nv < 128) {
      tir_Node *off = tir_int_imm(TIR_INT32, 0);
      for (int d = 0; d < src->region->size; d++)
        off = tir_add(off, tir_mul(R(((const tir_Range *)src->region->items[d])->min), stride_of(s, d)));
      if (s->elem_offset) off = tir_add(off, R(s->elem_offset));
      vars[nv] = (tir_Var *)m->elem_offset;
      vals[nv++] = off;
    }
    if (c->n == 64) {
      tir_release(src_node);
      tir_error_set(TIR_ERR_LOWER, "lower_match_buffer", "too many nested views");
      goto fail;
    }
    c->v[c->n].m = m;
    c->v[c->n].src = src;
    c->v[c->n].owned = src_node;
    c->n++;
  }
  {
    tir_Node *body = tir_mutate(b->body, rewrite_access, c);
    tir_Node *init = b->init ? tir_mutate(b->init, rewrite_access, c) : NULL;
    if (!body || (b->init && !init)) {
      tir_release(body);
      tir_release(init);
      goto fail;
    }
    if (nv) {
      tir_Node *sb = tir_substitute(body, nv, vars, vals);
      tir_release(body);
      body = sb;
      if (init) {
        tir_Node *si = tir_substitute(init, nv, vars, vals);
        tir_release(init);
        init = si;
      }
    }
    /* nested blocks with their own views */
    tir_Node *body2 = tir_mutate(body, mut, c);
    tir_release(body);
    if (!body2) {
      tir_release(init);
      goto fail;
    }
    tir_Block *nb = tir_block_with_body(b, body2);
    tir_release(nb->match_buffers);
    nb->match_buffers = tir_array_empty();
    if (init) {
      tir_release(nb->init);
      nb->init = init;
    }
    for (int i = 0; i < nv; i++) tir_release(vals[i]);
    while (c->n > base) tir_release(c->v[--c->n].owned);
    return tir_block_realize((tir_Array *)R(&br->iter_values->hdr), R(br->predicate), nb);
  }
fail:
  for (int i = 0; i < nv; i++) tir_release(vals[i]);
  while (c->n > base) tir_release(c->v[--c->n].owned);
  return TIR_MUTATE_ERROR;
}

static tir_Node *mut(const tir_Node *n, void *p) {
  if (tir_is_expr(n)) return tir_retain(n);
  if (n->kind != TIR_BlockRealize || ((const tir_BlockRealize *)n)->block->match_buffers->size == 0) return NULL;
  return lower_block((const tir_BlockRealize *)n, p);
}

tir_PrimFunc *tir_pass_lower_match_buffer(const tir_PrimFunc *f) {
  Ctx *c = calloc(1, sizeof *c);
  tir_Node *body = tir_mutate(f->body, mut, c);
  free(c);
  return pass_with_body(f, body);
}
