/* inject_ptx_async_copy.c -- copies inside an async_scope become cp.async (TVM
 * src/tir/transforms/inject_ptx_async_copy.cc), on flat IR after vectorize_loop.
 *
 * Inside AttrStmt "async_scope" (made by inject_software_pipeline), a store to a shared
 * buffer whose value is a load from a global buffer becomes
 *   Evaluate(ptx_cp_async(address_of(dst[i]), address_of(src[j]), bytes))
 * (docs/BUILTINS.md; PTX ISA 9.7.9.25: cp-size is 4, 8 or 16 bytes, both addresses aligned
 * to it):
 *   - a scalar of 4 or 8 bytes: one copy;
 *   - a contiguous vector (unit-stride ramps on both sides; vectorize_loop proved both
 *     starts multiples of the lane count, so aligned to the vector's size): one copy per
 *     16 (or 8, or 4) bytes;
 *   - a contiguous vector load scattered by the store (a transposed tile), elements of 4
 *     or 8 bytes: one copy per lane;
 *   - value if_then_else(c, load, 0) or select(c, load, 0) with a scalar condition: the
 *     same with src_bytes = (c ? bytes : 0), which zero-fills (TVM's predicated cp.async).
 * Anything else (2-byte elements, gathers, other values) stays a plain store: still correct,
 * since its data is in place before the wait, only not asynchronous.  The async_scope
 * attribute is removed. */
#include <string.h>

#include "pass_util.h"
#include "tir/arith.h"
#include "tir/scope.h"

typedef struct {
  int in_async;
} Ctx;

static tir_Node *addr(const tir_Buffer *b, tir_Node *index) {
  return tir_address_of(tir_buffer_load((tir_Buffer *)R(b), tir_array_of(1, index)));
}

static tir_Node *cp_async(const tir_Buffer *dst, tir_Node *di, const tir_Buffer *src, tir_Node *si, int bytes,
                          const tir_Node *cond) {
  tir_Array *args = tir_array_of(3, addr(dst, di), addr(src, si), tir_i32(bytes));
  if (cond) args = tir_array_push(args, tir_select(R((tir_Node *)cond), tir_i32(bytes), tir_i32(0)));
  return tir_evaluate(tir_call(TIR_VOID, "ptx_cp_async", args));
}

/* The loaded value and the zero-fill condition (NULL: unconditional), or NULL. */
static const tir_BufferLoad *source(const tir_Node *v, const tir_Node **cond) {
  *cond = NULL;
  if (v->kind == TIR_BufferLoad) return (const tir_BufferLoad *)v;
  const tir_Node *c = NULL, *a = NULL, *z = NULL;
  if (v->kind == TIR_Call && strcmp(((const tir_Call *)v)->op, "if_then_else") == 0 && ((const tir_Call *)v)->args->size == 3) {
    c = ((const tir_Call *)v)->args->items[0];
    a = ((const tir_Call *)v)->args->items[1];
    z = ((const tir_Call *)v)->args->items[2];
  } else if (v->kind == TIR_Select) {
    c = ((const tir_Select *)v)->cond;
    a = ((const tir_Select *)v)->true_value;
    z = ((const tir_Select *)v)->false_value;
  }
  if (!a || a->kind != TIR_BufferLoad) return NULL;
  if (c->kind == TIR_Broadcast) c = ((const tir_Broadcast *)c)->value;
  if (c->dtype.lanes != 1) return NULL; /* a per-lane condition: no single src-size */
  if (z->kind == TIR_Broadcast) z = ((const tir_Broadcast *)z)->value;
  double fz;
  int64_t iz;
  if (!((tir_is_const_float(z, &fz) && fz == 0.0) || (tir_is_const_int(z, &iz) && iz == 0))) return NULL;
  *cond = c;
  return (const tir_BufferLoad *)a;
}

static const tir_Ramp *unit_ramp(const tir_Node *e) {
  return e->kind == TIR_Ramp && tir_is_one(((const tir_Ramp *)e)->stride) ? (const tir_Ramp *)e : NULL;
}

/* The cp.async statements for store s, or NULL to keep it. */
static tir_Node *convert(const tir_BufferStore *s) {
  if (!tir_scope_is_shared(s->buffer->scope) || s->indices->size != 1) return NULL;
  const tir_Node *cond;
  const tir_BufferLoad *l = source(s->value, &cond);
  if (!l || !tir_scope_is_global(l->buffer->scope) || l->indices->size != 1) return NULL;
  int e = tir_dtype_bytes(tir_dtype_element(l->hdr.dtype));
  if (e != tir_dtype_bytes(tir_dtype_element(s->buffer->hdr.dtype))) return NULL;
  int lanes = s->value->dtype.lanes;
  const tir_Node *di = s->indices->items[0], *si = l->indices->items[0];
  if (lanes == 1) {
    if (e != 4 && e != 8) return NULL;
    if (di->dtype.lanes != 1 || si->dtype.lanes != 1) return NULL;
    return cp_async(s->buffer, R((tir_Node *)di), l->buffer, R((tir_Node *)si), e, cond);
  }
  const tir_Ramp *sr = unit_ramp(si);
  if (!sr || l->hdr.dtype.lanes != lanes) return NULL;
  const tir_Ramp *dr = unit_ramp(di);
  tir_Array *out = tir_array_empty();
  if (dr) {
    int total = e * lanes;
    int chunk = total % 16 == 0 ? 16 : total % 8 == 0 ? 8 : total % 4 == 0 ? 4 : 0;
    if (!chunk) {
      tir_release(out);
      return NULL;
    }
    int per = chunk / e; /* elements per copy */
    for (int k = 0; k < total / chunk; k++) {
      tir_Node *d = tir_add(R(dr->base), tir_int_imm(dr->base->dtype, k * per));
      tir_Node *x = tir_add(R(sr->base), tir_int_imm(sr->base->dtype, k * per));
      out = tir_array_push(out, cp_async(s->buffer, tir_simplify(NULL, d), l->buffer, tir_simplify(NULL, x), chunk, cond));
      tir_release(d);
      tir_release(x);
    }
    return tir_seq(out);
  }
  /* scattered store of a contiguous load: one copy per lane */
  if ((e != 4 && e != 8) || di->kind != TIR_Ramp) {
    tir_release(out);
    return NULL;
  }
  const tir_Ramp *r = (const tir_Ramp *)di;
  for (int k = 0; k < lanes; k++) {
    tir_Node *d = tir_add(R(r->base), tir_mul(R(r->stride), tir_int_imm(r->stride->dtype, k)));
    tir_Node *x = tir_add(R(sr->base), tir_int_imm(sr->base->dtype, k));
    out = tir_array_push(out, cp_async(s->buffer, tir_simplify(NULL, d), l->buffer, tir_simplify(NULL, x), e, cond));
    tir_release(d);
    tir_release(x);
  }
  return tir_seq(out);
}

static tir_Node *mut(const tir_Node *n, void *arg) {
  Ctx *c = arg;
  if (tir_is_expr(n)) return tir_retain(n);
  if (n->kind == TIR_AttrStmt && strcmp(((const tir_AttrStmt *)n)->key, "async_scope") == 0) {
    int saved = c->in_async;
    c->in_async = 1;
    tir_Node *body = tir_mutate(((const tir_AttrStmt *)n)->body, mut, arg);
    c->in_async = saved;
    return body ? body : TIR_MUTATE_ERROR;
  }
  if (n->kind == TIR_BufferStore && c->in_async) {
    tir_Node *r = convert((const tir_BufferStore *)n);
    return r ? r : tir_retain(n);
  }
  return NULL;
}

tir_PrimFunc *tir_pass_inject_ptx_async_copy(const tir_PrimFunc *f) {
  Ctx c = {0};
  return pass_with_body(f, tir_mutate(f->body, mut, &c));
}
