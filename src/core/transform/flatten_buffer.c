/* flatten_buffer.c -- multi-dimensional buffer accesses become flat offsets (TVM
 * src/tir/transforms/flatten_buffer.cc).  Each buffer gets a 1-D view sharing its data
 * variable: offset = elem_offset + sum(index_d * stride_d), strides row-major unless
 * the buffer declares its own.  Parameters keep their N-D buffers (the signature the
 * caller sees); the body uses the flat views. */
#include <stdint.h>
#include <stdlib.h>

#include "pass_util.h"
#include "tir/arith.h"

typedef struct {
  const tir_Buffer **from;
  tir_Buffer **to;
  int n, cap;
} Ctx;

/* Offsets need 64 bits when a dimension is int64 or the element count passes 2^31 - 1. */
static int needs_int64(const tir_Buffer *b) {
  int64_t total = 1, v;
  for (int i = 0; i < b->shape->size; i++) {
    if (b->shape->items[i]->dtype.bits == 64) return 1;
    if (!tir_is_const_int(b->shape->items[i], &v)) continue;
    if (b->strides->size == b->shape->size) {
      int64_t st;
      if (tir_is_const_int(b->strides->items[i], &st) && v > 0 && st > 0 && (v - 1) > (INT32_MAX - 1) / st) return 1;
    } else if (v > 0 && __builtin_mul_overflow(total, v, &total)) {
      return 1;
    }
  }
  return total > INT32_MAX;
}

static tir_Node *widen(const tir_Node *e, int wide) {
  return wide ? tir_cast(TIR_INT64, R((tir_Node *)e)) : R((tir_Node *)e);
}

static tir_Node *buffer_elems(const tir_Buffer *b) {
  tir_DType t = needs_int64(b) ? TIR_INT64 : TIR_INT32;
  int wide = t.bits == 64;
  if (b->strides->size == b->shape->size && b->shape->size) {
    tir_Node *hi = tir_int_imm(t, 1);
    for (int i = 0; i < b->shape->size; i++)
      hi = tir_add(hi, tir_mul(tir_sub(widen(b->shape->items[i], wide), tir_int_imm(t, 1)), widen(b->strides->items[i], wide)));
    return hi;
  }
  tir_Node *n = tir_int_imm(t, 1);
  for (int i = 0; i < b->shape->size; i++) n = tir_mul(n, widen(b->shape->items[i], wide));
  return n;
}

static tir_Buffer *flat_of(Ctx *c, const tir_Buffer *b) {
  for (int i = 0; i < c->n; i++)
    if (c->from[i] == b) return c->to[i];
  tir_Buffer *fb;
  if (b->shape->size == 1 && b->strides->size == 0 && tir_is_zero(b->elem_offset)) {
    fb = (tir_Buffer *)tir_retain(b); /* already flat */
  } else {
    fb = (tir_Buffer *)tir_node_copy(&b->hdr);
    tir_release(fb->shape);
    tir_release(fb->strides);
    tir_release(fb->elem_offset);
    tir_Node *elems = buffer_elems(b);
    /* the flat view starts at the data (its indices include elem_offset) */
    if (!tir_is_zero(b->elem_offset)) elems = tir_add(elems, widen(b->elem_offset, elems->dtype.bits == 64));
    tir_Node *se = tir_simplify(NULL, elems);
    tir_release(elems);
    fb->shape = tir_array_of(1, se);
    fb->strides = tir_array_empty();
    fb->elem_offset = tir_i32(0);
  }
  if (c->n == c->cap) {
    c->cap = c->cap ? c->cap * 2 : 16;
    c->from = realloc(c->from, sizeof(*c->from) * (size_t)c->cap);
    c->to = realloc(c->to, sizeof(*c->to) * (size_t)c->cap);
  }
  c->from[c->n] = b;
  c->to[c->n] = fb;
  c->n++;
  return fb;
}

/* Row-major offset in Horner form (((i0 * s1 + i1) * s2 + i2) ...), or the sum of index *
 * stride for buffers with explicit strides; plus elem_offset. */
static tir_Node *flat_index(const tir_Buffer *b, const tir_Array *idx) {
  if (b->shape->size == 1 && b->strides->size == 0 && tir_is_zero(b->elem_offset)) return tir_retain(idx->items[0]);
  int wide = needs_int64(b);
  tir_Node *off = NULL;
  if (b->strides->size == idx->size) {
    for (int d = 0; d < idx->size; d++) {
      tir_Node *t = tir_mul(widen(idx->items[d], wide), widen(b->strides->items[d], wide));
      off = off ? tir_add(off, t) : t;
    }
  } else {
    for (int d = 0; d < idx->size; d++)
      off = off ? tir_add(tir_mul(off, widen(b->shape->items[d], wide)), widen(idx->items[d], wide)) : widen(idx->items[d], wide);
  }
  if (!off) off = wide ? tir_int_imm(TIR_INT64, 0) : tir_i32(0);
  return tir_is_zero(b->elem_offset) ? off : tir_add(widen(b->elem_offset, wide), off);
}

static tir_Node *mut(const tir_Node *n, void *p) {
  Ctx *c = p;
  switch (n->kind) {
    case TIR_BufferLoad: {
      const tir_BufferLoad *l = (const tir_BufferLoad *)n;
      tir_Node *m = tir_mutate_children(n, mut, p); /* indices may hold loads */
      if (!m) return TIR_MUTATE_ERROR;
      const tir_BufferLoad *ml = (const tir_BufferLoad *)m;
      tir_Buffer *fb = flat_of(c, l->buffer);
      tir_Node *r = tir_buffer_load((tir_Buffer *)R(fb), tir_array_of(1, flat_index(l->buffer, ml->indices)));
      tir_release(m);
      return r;
    }
    case TIR_BufferStore: {
      const tir_BufferStore *s = (const tir_BufferStore *)n;
      tir_Node *m = tir_mutate_children(n, mut, p);
      if (!m) return TIR_MUTATE_ERROR;
      const tir_BufferStore *ms = (const tir_BufferStore *)m;
      tir_Buffer *fb = flat_of(c, s->buffer);
      tir_Node *r = tir_buffer_store((tir_Buffer *)R(fb), R(ms->value), tir_array_of(1, flat_index(s->buffer, ms->indices)));
      tir_release(m);
      return r;
    }
    case TIR_Allocate: {
      const tir_Allocate *a = (const tir_Allocate *)n;
      tir_Node *body = tir_mutate(a->body, mut, p);
      if (!body) return TIR_MUTATE_ERROR;
      return tir_allocate((tir_Buffer *)R(flat_of(c, a->buffer)), body);
    }
    case TIR_DeclBuffer: {
      const tir_DeclBuffer *a = (const tir_DeclBuffer *)n;
      tir_Node *body = tir_mutate(a->body, mut, p);
      if (!body) return TIR_MUTATE_ERROR;
      return tir_decl_buffer((tir_Buffer *)R(flat_of(c, a->buffer)), body);
    }
    case TIR_AttrStmt: {
      /* an attribute about a buffer (e.g. pipeline_version) names its flat view */
      const tir_AttrStmt *a = (const tir_AttrStmt *)n;
      if (!a->node || a->node->kind != TIR_Buffer) return NULL;
      tir_Node *body = tir_mutate(a->body, mut, p);
      if (!body) return TIR_MUTATE_ERROR;
      return tir_attr_stmt(tir_retain(&flat_of(c, (const tir_Buffer *)a->node)->hdr), a->key, R(a->value), body);
    }
    case TIR_Block:
    case TIR_BlockRealize:
      tir_error_set(TIR_ERR_LOWER, "flatten_buffer", "blocks must be lowered before flattening");
      return TIR_MUTATE_ERROR;
    case TIR_Buffer: return tir_retain(n);
    default: return NULL;
  }
}

tir_PrimFunc *tir_pass_flatten_buffer(const tir_PrimFunc *f) {
  Ctx c = {0};
  tir_Node *body = tir_mutate(f->body, mut, &c);
  for (int i = 0; i < c.n; i++) tir_release(c.to[i]);
  free(c.from);
  free(c.to);
  return pass_with_body(f, body);
}
