/* compact_buffer_allocation.c -- shrink each block-allocated buffer to the region its
 * accesses cover under the allocating block, and apply storage_align (TVM
 * src/tir/transforms/compact_buffer_region.cc).
 *
 * For a buffer allocated by block A: every child block's declared regions of it (bindings
 * substituted) and every direct access are relaxed over the loops between A and the
 * access; for shared memory also over the threadIdx loops above A (a shared tile is
 * shared by the CTA's threads, so it must not depend on them).  The hull [min, min + ext)
 * gives the new shape (constant upper bounds of ext) and every access is shifted by -min.
 * storage_align entries ("buffer_dim_align" on a block writing the buffer) pad strides:
 * the stride of an aligned axis becomes the next value >= the dense one that is
 * == offset (mod factor).  storage_swizzle entries ("buffer_swizzle") set the buffer's
 * swizzle field (lower_buffer_swizzle applies it after flattening). */
#include <stdlib.h>
#include <string.h>

#include "pass_util.h"
#include "tir/analysis.h"
#include "tir/arith.h"
#include "tir/scope.h"
#include "tir/swizzle.h"

#define MAXD 512

typedef struct {
  const tir_Buffer *buf;
  tir_Node **lo, **hi; /* per dim, owned; NULL until seen */
  int nd;
  int full;            /* some access could not be bounded: keep the whole extent */
  tir_Array *align;    /* list of {axis, factor, offset} */
  int64_t swizzle;     /* storage_swizzle's packed swizzle (include/tir/swizzle.h); 0: none */
} Acc;

typedef struct {
  tir_Analyzer *an;
  tir_DomEntry doms[MAXD];
  int n_doms;
  Acc *acc;
  int n_acc;
  int want_shared; /* which buffers the current walk records (the relax sets differ) */
} Ctx;

static int is_shared(const tir_Buffer *b) { return tir_scope_is_shared(b->scope); }

static Acc *acc_of(Ctx *c, const tir_Buffer *b) {
  for (int i = 0; i < c->n_acc; i++)
    if (c->acc[i].buf == b) return is_shared(b) == c->want_shared ? &c->acc[i] : NULL;
  return NULL;
}

static void add_region(Ctx *c, Acc *a, const tir_Array *region, const tir_Node *pred) {
  tir_Array *rel = tir_relax_region_pred(c->an, region, c->doms, c->n_doms, NULL, pred);
  if (!rel || rel->size != a->nd) {
    a->full = 1;
    tir_release(rel);
    return;
  }
  for (int d = 0; d < a->nd; d++) {
    const tir_Range *r = (const tir_Range *)rel->items[d];
    tir_Node *hi = tir_sub(tir_add(R(r->min), R(r->extent)), tir_int_imm(r->min->dtype, 1));
    if (!a->lo[d]) {
      a->lo[d] = tir_simplify(c->an, r->min);
      a->hi[d] = tir_simplify(c->an, hi);
    } else {
      tir_Node *l = tir_min(a->lo[d], R(r->min)), *h = tir_max(a->hi[d], R(hi));
      a->lo[d] = tir_simplify(c->an, l);
      a->hi[d] = tir_simplify(c->an, h);
      tir_release(l);
      tir_release(h);
    }
    tir_release(hi);
  }
  tir_release(rel);
}

static void point_region(Ctx *c, const tir_Buffer *b, const tir_Array *idx) {
  Acc *a = acc_of(c, b);
  if (!a) return;
  tir_Array *reg = tir_array_new(idx->size);
  for (int i = 0; i < idx->size; i++) {
    const tir_Node *ix = idx->items[i];
    if (ix->kind == TIR_Ramp) {
      const tir_Ramp *r = (const tir_Ramp *)ix;
      reg->items[i] = &tir_range(R(r->base), tir_add(tir_mul(R(r->stride), tir_int_imm(r->stride->dtype, r->lanes - 1)),
                                                     tir_int_imm(r->stride->dtype, 1)))->hdr;
    } else {
      reg->items[i] = &tir_range(R((tir_Node *)ix), tir_int_imm(ix->dtype, 1))->hdr;
    }
  }
  add_region(c, a, reg, NULL);
  tir_release(reg);
}

static int expr_fn(const tir_Node *n, void *p) {
  if (n->kind == TIR_BufferLoad) point_region(p, ((const tir_BufferLoad *)n)->buffer, ((const tir_BufferLoad *)n)->indices);
  return 0;
}

static void push_loop(Ctx *c, const tir_For *f) {
  if (c->n_doms >= MAXD) return;
  tir_DomEntry *d = &c->doms[c->n_doms++];
  d->var = f->loop_var;
  d->set.min = tir_retain(f->min);
  tir_Node *last = tir_sub(tir_add(R(f->min), R(f->extent)), tir_int_imm(f->min->dtype, 1));
  d->set.max = tir_simplify(c->an, last);
  tir_release(last);
}

static void pop_loop(Ctx *c) {
  c->n_doms--;
  tir_release(c->doms[c->n_doms].set.min);
  tir_release(c->doms[c->n_doms].set.max);
}

static void collect_align(Ctx *c, const tir_Block *b) {
  const tir_Node *v = tir_ann_get(b->annotations, "buffer_dim_align");
  const tir_Array *list = v && v->kind == TIR_Array ? (const tir_Array *)v : NULL;
  for (int i = 0; list && i < list->size; i++) {
    const tir_Array *e = (const tir_Array *)list->items[i];
    int64_t bi;
    if (!e || e->hdr.kind != TIR_Array || e->size != 4 || !tir_is_const_int(e->items[0], &bi)) continue;
    if (bi < 0 || bi >= b->writes->size) continue;
    Acc *a = acc_of(c, ((const tir_BufferRegion *)b->writes->items[bi])->buffer);
    if (!a) continue;
    a->align = tir_array_push(a->align, &tir_array_of(3, R(e->items[1]), R(e->items[2]), R(e->items[3]))->hdr);
  }
  /* storage_swizzle: {buffer_index, B, M, S} entries become the allocated buffer's swizzle */
  v = tir_ann_get(b->annotations, "buffer_swizzle");
  if (!v || v->kind != TIR_Array) return;
  list = (const tir_Array *)v;
  for (int i = 0; i < list->size; i++) {
    const tir_Array *e = (const tir_Array *)list->items[i];
    int64_t q[4];
    int ok = e && e->hdr.kind == TIR_Array && e->size == 4;
    for (int k = 0; ok && k < 4; k++) ok = tir_is_const_int(e->items[k], &q[k]);
    if (!ok || q[0] < 0 || q[0] >= b->writes->size) continue;
    Acc *a = acc_of(c, ((const tir_BufferRegion *)b->writes->items[q[0]])->buffer);
    if (!a) continue;
    int64_t sw = tir_swizzle_pack((int)q[1], (int)q[2], (int)q[3]);
    if (tir_swizzle_valid(sw)) a->swizzle = sw;
  }
}

/* Collects accesses under a statement (not entering child blocks: their regions count). */
static void walk(Ctx *c, const tir_Node *n) {
  if (!n) return;
  switch (n->kind) {
    case TIR_SeqStmt: {
      const tir_Array *a = ((const tir_SeqStmt *)n)->seq;
      for (int i = 0; i < a->size; i++) walk(c, a->items[i]);
      return;
    }
    case TIR_For: {
      const tir_For *f = (const tir_For *)n;
      push_loop(c, f);
      int mark = tir_analyzer_mark(c->an);
      tir_analyzer_bind_range(c->an, f->loop_var, f->min, f->extent);
      walk(c, f->body);
      tir_analyzer_reset(c->an, mark);
      pop_loop(c);
      return;
    }
    case TIR_BlockRealize: {
      const tir_BlockRealize *br = (const tir_BlockRealize *)n;
      const tir_Block *b = br->block;
      if (b->iter_vars->size == 0 && b->reads->size == 0 && b->writes->size == 0 && b->match_buffers->size == 0) {
        /* an opaque block that declares no regions (plan_buffer_allocation wraps loop
         * bodies in these to allocate there): its accesses are those inside it */
        walk(c, b->init);
        walk(c, b->body);
        return;
      }
      collect_align(c, b);
      for (int w = 0; w < 2; w++) {
        const tir_Array *list = w ? b->writes : b->reads;
        for (int i = 0; i < list->size; i++) {
          const tir_BufferRegion *r = (const tir_BufferRegion *)list->items[i];
          Acc *a = acc_of(c, r->buffer);
          if (!a) continue;
          int nv = b->iter_vars->size;
          tir_Var **vars = calloc((size_t)nv + 1, sizeof *vars);
          for (int k = 0; k < nv; k++) vars[k] = ((const tir_IterVar *)b->iter_vars->items[k])->var;
          tir_Node *sub = tir_substitute(&r->region->hdr, nv, vars, br->iter_values->items);
          free(vars);
          add_region(c, a, (const tir_Array *)sub, br->predicate);
          tir_release(sub);
        }
      }
      /* a view's source region (match_buffer) is an access like the block's regions: the
       * shift applied to regions below moves it too, and lower_match_buffer then reads the
       * compacted buffer's strides */
      for (int i = 0; i < b->match_buffers->size; i++) {
        const tir_BufferRegion *src = ((const tir_MatchBufferRegion *)b->match_buffers->items[i])->source;
        Acc *a = acc_of(c, src->buffer);
        if (!a) continue;
        int nv = b->iter_vars->size;
        tir_Var **vars = calloc((size_t)nv + 1, sizeof *vars);
        for (int k = 0; k < nv; k++) vars[k] = ((const tir_IterVar *)b->iter_vars->items[k])->var;
        tir_Node *sub = tir_substitute(&src->region->hdr, nv, vars, br->iter_values->items);
        free(vars);
        add_region(c, a, (const tir_Array *)sub, br->predicate);
        tir_release(sub);
      }
      /* buffers allocated inside child blocks are compacted when that block is visited */
      return;
    }
    case TIR_BufferStore: {
      const tir_BufferStore *s = (const tir_BufferStore *)n;
      point_region(c, s->buffer, s->indices);
      tir_visit(s->value, expr_fn, c);
      for (int i = 0; i < s->indices->size; i++) tir_visit(s->indices->items[i], expr_fn, c);
      return;
    }
    case TIR_IfThenElse:
      tir_visit(((const tir_IfThenElse *)n)->cond, expr_fn, c);
      walk(c, ((const tir_IfThenElse *)n)->then_case);
      walk(c, ((const tir_IfThenElse *)n)->else_case);
      return;
    case TIR_LetStmt: walk(c, ((const tir_LetStmt *)n)->body); return;
    case TIR_AttrStmt: walk(c, ((const tir_AttrStmt *)n)->body); return;
    case TIR_Evaluate: tir_visit(((const tir_Evaluate *)n)->value, expr_fn, c); return;
    case TIR_Allocate: walk(c, ((const tir_Allocate *)n)->body); return;
    case TIR_DeclBuffer: {
      /* a view (decl_buffer) of an allocation indexes it in its own way: keep it whole */
      const tir_DeclBuffer *d = (const tir_DeclBuffer *)n;
      for (int i = 0; i < c->n_acc; i++)
        if (c->acc[i].buf->data == d->buffer->data && c->acc[i].buf != d->buffer && is_shared(c->acc[i].buf) == c->want_shared)
          c->acc[i].full = 1;
      walk(c, d->body);
      return;
    }
    default: return;
  }
}

/* ---- rewriting accesses: buffer -> compact buffer, indices shifted ---- */
typedef struct {
  const tir_Buffer *from;
  tir_Buffer *to;
  tir_Node **mins;
  int nd;
} Shift;

typedef struct {
  Shift *s;
  int n;
} ShiftCtx;

static Shift *shift_of(ShiftCtx *c, const tir_Buffer *b) {
  for (int i = 0; i < c->n; i++)
    if (c->s[i].from == b) return &c->s[i];
  return NULL;
}

static tir_Array *shift_indices(const Shift *s, const tir_Array *idx) {
  tir_Array *out = tir_array_new(idx->size);
  for (int d = 0; d < idx->size; d++) {
    if (d < s->nd && !tir_is_zero(s->mins[d])) {
      const tir_Node *ix = idx->items[d];
      tir_Node *m = ix->dtype.lanes > 1 ? tir_broadcast(R(s->mins[d]), ix->dtype.lanes) : R(s->mins[d]);
      tir_Node *e = tir_sub(R((tir_Node *)ix), m);
      out->items[d] = e->dtype.lanes > 1 ? e : tir_simplify(NULL, e);
      if (e->dtype.lanes == 1) tir_release(e);
    } else {
      out->items[d] = R(idx->items[d]);
    }
  }
  return out;
}

static tir_Node *shift_fn(const tir_Node *n, void *p) {
  ShiftCtx *c = p;
  switch (n->kind) {
    case TIR_BufferLoad:
    case TIR_BufferStore: {
      const tir_Buffer *b = n->kind == TIR_BufferLoad ? ((const tir_BufferLoad *)n)->buffer : ((const tir_BufferStore *)n)->buffer;
      Shift *s = shift_of(c, b);
      if (!s) return NULL;
      tir_Node *m = tir_mutate_children(n, shift_fn, p);
      if (!m) return TIR_MUTATE_ERROR;
      tir_Node *r;
      if (n->kind == TIR_BufferLoad) {
        r = tir_buffer_load((tir_Buffer *)R(s->to), shift_indices(s, ((tir_BufferLoad *)m)->indices));
      } else {
        tir_BufferStore *st = (tir_BufferStore *)m;
        r = tir_buffer_store((tir_Buffer *)R(s->to), R(st->value), shift_indices(s, st->indices));
      }
      tir_release(m);
      return r;
    }
    case TIR_BufferRegion: {
      const tir_BufferRegion *br = (const tir_BufferRegion *)n;
      Shift *s = shift_of(c, br->buffer);
      if (!s) return NULL;
      tir_Array *reg = tir_array_new(br->region->size);
      for (int d = 0; d < br->region->size; d++) {
        const tir_Range *r = (const tir_Range *)br->region->items[d];
        tir_Node *m = d < s->nd ? tir_sub(R(r->min), R(s->mins[d])) : R(r->min);
        tir_Node *sm = tir_simplify(NULL, m);
        tir_release(m);
        reg->items[d] = &tir_range(sm, R(r->extent))->hdr;
      }
      return &tir_buffer_region((tir_Buffer *)R(s->to), reg)->hdr;
    }
    case TIR_Buffer: {
      Shift *s = shift_of(c, (const tir_Buffer *)n);
      return tir_retain(s ? &s->to->hdr : n);
    }
    default: return NULL;
  }
}

/* Dense strides with alignment, innermost first (TVM CalcStrides). */
static tir_Array *aligned_strides(const tir_Array *shape, const tir_Array *align) {
  int nd = shape->size;
  int64_t *st = calloc((size_t)nd + 1, sizeof *st), *ext = calloc((size_t)nd + 1, sizeof *ext);
  for (int d = 0; d < nd; d++)
    if (!tir_is_const_int(shape->items[d], &ext[d])) {
      free(st);
      free(ext);
      return NULL;
    }
  int64_t stride = 1;
  for (int d = nd - 1; d >= 0; d--) {
    for (int k = 0; align && k < align->size; k++) {
      const tir_Array *e = (const tir_Array *)align->items[k];
      int64_t axis, factor, offset;
      if (tir_is_const_int(e->items[0], &axis) && axis == d && tir_is_const_int(e->items[1], &factor) && factor > 0 &&
          tir_is_const_int(e->items[2], &offset))
        stride += ((offset - stride % factor) % factor + factor) % factor;
    }
    st[d] = stride;
    stride *= ext[d];
  }
  tir_Array *out = tir_array_new(nd);
  for (int d = 0; d < nd; d++) out->items[d] = tir_int_imm(shape->items[d]->dtype, st[d]);
  free(st);
  free(ext);
  return out;
}

static tir_Node *compact_fn(const tir_Node *n, void *p);

static tir_Node *compact_block(const tir_BlockRealize *br, const tir_Node *const *above, int n_above) {
  const tir_Block *b = br->block;
  Ctx c;
  memset(&c, 0, sizeof c);
  c.an = tir_analyzer_new();
  c.n_acc = b->alloc_buffers->size;
  c.acc = calloc((size_t)c.n_acc + 1, sizeof *c.acc);
  for (int i = 0; i < c.n_acc; i++) {
    const tir_Buffer *buf = (const tir_Buffer *)b->alloc_buffers->items[i];
    c.acc[i].buf = buf;
    c.acc[i].nd = buf->shape->size;
    c.acc[i].lo = calloc((size_t)c.acc[i].nd + 1, sizeof(tir_Node *));
    c.acc[i].hi = calloc((size_t)c.acc[i].nd + 1, sizeof(tir_Node *));
    c.acc[i].align = tir_array_empty();
  }
  for (int i = 0; i < n_above; i++)
    if (above[i]->kind == TIR_For) {
      const tir_For *f = (const tir_For *)above[i];
      tir_analyzer_bind_range(c.an, f->loop_var, f->min, f->extent);
    }
  for (int i = 0; i < b->iter_vars->size; i++) {
    const tir_IterVar *iv = (const tir_IterVar *)b->iter_vars->items[i];
    tir_analyzer_bind_range(c.an, iv->var, iv->dom->min, iv->dom->extent);
  }
  /* two walks: local buffers relax only loops inside the block; shared ones also the
   * threadIdx loops above it */
  for (int shared = 0; shared < 2; shared++) {
    c.want_shared = shared;
    if (shared)
      for (int i = 0; i < n_above; i++)
        if (above[i]->kind == TIR_For) {
          const tir_For *f = (const tir_For *)above[i];
          if (f->kind == TIR_FOR_THREAD_BINDING && strncmp(f->thread_tag, "threadIdx.", 10) == 0) push_loop(&c, f);
        }
    collect_align(&c, b);
    walk(&c, b->init);
    walk(&c, b->body);
    while (c.n_doms > 0) pop_loop(&c);
  }
  ShiftCtx sc = {calloc((size_t)c.n_acc + 1, sizeof(Shift)), 0};
  for (int i = 0; i < c.n_acc; i++) {
    Acc *a = &c.acc[i];
    tir_Array *shape = tir_array_new(a->nd);
    tir_Node **mins = calloc((size_t)a->nd + 1, sizeof *mins);
    int changed = 0;
    for (int d = 0; d < a->nd; d++) {
      const tir_Node *full_ext = a->buf->shape->items[d];
      mins[d] = tir_int_imm(full_ext->dtype, 0);
      shape->items[d] = R((tir_Node *)full_ext);
      if (a->full || !a->lo[d]) continue;
      tir_Node *e = tir_add(tir_sub(R(a->hi[d]), R(a->lo[d])), tir_int_imm(a->lo[d]->dtype, 1));
      tir_Node *se = tir_simplify(c.an, e);
      tir_release(e);
      int64_t ev, full;
      if (!tir_is_const_int(se, &ev)) {
        tir_ConstIntBound bd = tir_const_int_bound(c.an, se);
        tir_release(se);
        if (bd.max == TIR_POS_INF) continue;
        se = tir_int_imm(full_ext->dtype, bd.max);
        ev = bd.max;
      }
      if (tir_is_const_int(full_ext, &full) && ev >= full && tir_is_zero(a->lo[d])) {
        tir_release(se);
        continue; /* the whole extent anyway */
      }
      tir_release(mins[d]);
      tir_release(shape->items[d]);
      mins[d] = R(a->lo[d]);
      shape->items[d] = se;
      changed = 1;
    }
    tir_Array *strides = a->align->size ? aligned_strides(shape, a->align) : NULL;
    if (!changed && !strides && (!a->swizzle || a->swizzle == a->buf->swizzle)) {
      tir_release(shape);
      for (int d = 0; d < a->nd; d++) tir_release(mins[d]);
      free(mins);
      continue;
    }
    tir_Buffer *nb = (tir_Buffer *)tir_node_copy(&a->buf->hdr);
    tir_release(nb->shape);
    nb->shape = shape;
    if (a->swizzle) nb->swizzle = a->swizzle;
    if (strides) {
      tir_release(nb->strides);
      nb->strides = strides;
    }
    Shift *sh = &sc.s[sc.n++];
    sh->from = a->buf;
    sh->to = nb;
    sh->mins = mins;
    sh->nd = a->nd;
  }
  tir_Node *out = sc.n > 0 ? tir_mutate(&br->hdr, shift_fn, &sc) : tir_retain(&br->hdr);
  for (int i = 0; i < sc.n; i++) {
    tir_release(sc.s[i].to);
    for (int d = 0; d < sc.s[i].nd; d++) tir_release(sc.s[i].mins[d]);
    free(sc.s[i].mins);
  }
  free(sc.s);
  for (int i = 0; i < c.n_acc; i++) {
    for (int d = 0; d < c.acc[i].nd; d++) {
      tir_release(c.acc[i].lo[d]);
      tir_release(c.acc[i].hi[d]);
    }
    free(c.acc[i].lo);
    free(c.acc[i].hi);
    tir_release(c.acc[i].align);
  }
  free(c.acc);
  tir_analyzer_free(c.an);
  return out;
}

/* Walk keeping the ancestors (for the loop facts and thread loops above a block). */
typedef struct {
  const tir_Node *stack[MAXD];
  int sp;
} WalkCtx;

static tir_Node *compact_fn(const tir_Node *n, void *p) {
  WalkCtx *w = p;
  if (tir_is_expr(n) || n->kind == TIR_Buffer || n->kind == TIR_BufferRegion) return tir_retain(n);
  if (n->kind == TIR_For) {
    if (w->sp < MAXD) w->stack[w->sp++] = n;
    tir_Node *r = tir_mutate_children(n, compact_fn, p);
    w->sp--;
    return r ? r : TIR_MUTATE_ERROR;
  }
  if (n->kind == TIR_BlockRealize) {
    const tir_BlockRealize *br = (const tir_BlockRealize *)n;
    /* inner blocks first (their buffers are local to them), then this block */
    if (w->sp < MAXD) w->stack[w->sp++] = n;
    tir_Node *m = tir_mutate_children(n, compact_fn, p);
    w->sp--;
    if (!m) return TIR_MUTATE_ERROR;
    tir_Node *r = ((const tir_BlockRealize *)m)->block->alloc_buffers->size ? compact_block((const tir_BlockRealize *)m, w->stack, w->sp)
                                                                             : tir_retain(m);
    tir_release(m);
    (void)br;
    return r;
  }
  return NULL;
}

tir_PrimFunc *tir_pass_compact_buffer_allocation(const tir_PrimFunc *f) {
  WalkCtx w;
  memset(&w, 0, sizeof w);
  return pass_with_body(f, tir_mutate(f->body, compact_fn, &w));
}
