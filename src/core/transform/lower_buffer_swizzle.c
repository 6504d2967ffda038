/* lower_buffer_swizzle.c -- applies the XOR swizzle of shared buffers (storage_swizzle; the
 * Buffer's swizzle field, include/tir/swizzle.h) to the flat indices of the lowered code, the
 * last pass before host/device splitting.  No TVM pass: TVM expresses swizzles as index maps
 * (transform_layout), which also rewrite the tensorized views; here the buffer keeps its
 * logical indices until this point (the interpreter, tensorize, compact/pipeline/thread_sync
 * all reason about them), and only the addresses the CUDA C and the simulator use move.
 *
 * An element index i of a buffer with esize-byte elements and Swizzle<B, M, S> becomes
 *     i ^ ((i >> S) & (((1 << B) - 1) << (M - log2 esize)))
 * (the byte-offset swizzle divided by esize; the 2^M-byte chunks move as units).  A vector
 * index Ramp(base, 1, n) must lie inside one chunk -- floormod(base, chunk) + n <= chunk,
 * proved -- and becomes Ramp(swizzled base, 1, n).  Addresses passed to builtins: only those
 * whose address_of arguments are each thread's own access (TIR_BUILTIN_LANE_ADDRESS:
 * cp.async, the per-lane row addresses of ldmatrix) are swizzled; builtins that read a
 * swizzled buffer's layout themselves (TIR_BUILTIN_SWIZZLE_AWARE: a TMA copy or a wgmma
 * descriptor that encodes the mode) get the logical address; any other builtin computes
 * addresses from a base pointer (wmma's ldm, mma_store's row stride) and is refused.  A
 * swizzled allocation's size must be a multiple of 2^(M + B) bytes (the XOR stays inside
 * such blocks), so every swizzled address is inside it. */
#include <stdio.h>
#include <string.h>

#include "pass_util.h"
#include "tir/arith.h"
#include "tir/swizzle.h"
#include "tir/transform.h"

typedef struct {
  const tir_Node *root;
  int in_aware; /* inside a TIR_BUILTIN_SWIZZLE_AWARE call: addresses stay logical */
} Ctx;

static int fail(Ctx *c, const tir_Node *at, const char *fmt, const char *name, const char *extra) {
  tir_error_set(TIR_ERR_LOWER, "lower_buffer_swizzle", fmt, name, extra);
  tir_error_set_ir(c->root);
  tir_error_mark(at, "here");
  return -1;
}

static int log2i(int64_t v) {
  int k = 0;
  while ((INT64_C(1) << k) < v) k++;
  return (INT64_C(1) << k) == v ? k : -1;
}

/* the swizzle of an element index, ignoring terms that are multiples of the repeat */
static tir_Node *swizzle_raw(const tir_Buffer *b, tir_Node *i) {
  int64_t sw = b->swizzle;
  int le = log2i(tir_dtype_bytes(b->hdr.dtype));
  int64_t mask = ((INT64_C(1) << tir_swizzle_bits(sw)) - 1) << (tir_swizzle_base(sw) - le);
  tir_DType t = i->dtype;
  tir_Node *sh = tir_call(t, "shift_right", tir_array_of(2, R(i), tir_int_imm(t, tir_swizzle_shift(sw))));
  tir_Node *m = tir_call(t, "bitwise_and", tir_array_of(2, sh, tir_int_imm(t, mask)));
  return tir_call(t, "bitwise_xor", tir_array_of(2, i, m));
}

/* splits the sum i into terms that are multiples of q (constants, x * k with q | k) and the rest */
static void split_terms(const tir_Node *i, int64_t q, tir_Node **outer, tir_Node **inner) {
  if (i->kind == TIR_Add) {
    split_terms(((const tir_Add *)i)->a, q, outer, inner);
    split_terms(((const tir_Add *)i)->b, q, outer, inner);
    return;
  }
  int64_t k;
  tir_Node **to = inner;
  tir_Node *term = R((tir_Node *)i);
  if (tir_is_const_int(i, &k)) {
    int64_t hi = k - ((k % q) + q) % q;
    if (hi) *outer = *outer ? tir_add(*outer, tir_int_imm(i->dtype, hi)) : tir_int_imm(i->dtype, hi);
    tir_release(term);
    if (k == hi) return;
    term = tir_int_imm(i->dtype, k - hi);
  } else if (i->kind == TIR_Mul && ((tir_is_const_int(((const tir_Mul *)i)->b, &k) && k % q == 0) ||
                                    (tir_is_const_int(((const tir_Mul *)i)->a, &k) && k % q == 0))) {
    to = outer;
  }
  *to = *to ? tir_add(*to, term) : term;
}

/* the swizzled element index of scalar index i: the swizzle only reads the bits below the
 * repeat, so terms that are multiples of it (pipeline stages, whole swizzle atoms) are added
 * after the XOR -- fewer address computations in the loop */
static tir_Node *swizzle_index(const tir_Buffer *b, const tir_Node *i) {
  int64_t q = tir_swizzle_repeat(b->swizzle) / tir_dtype_bytes(b->hdr.dtype);
  tir_Node *outer = NULL, *inner = NULL;
  split_terms(i, q, &outer, &inner);
  /* a constant offset inside a chunk (inner = x + c, x a sum of chunk multiples, 0 < c < chunk)
   * is added after the XOR too: the XOR reads only bits above the chunk, so swz(x + c) = swz(x)
   * + c, and the words of one chunk (a row sum's four 32-bit dp4a operands) share one swizzled
   * base that the codegen can read with one 16-byte load */
  tir_Node *low = NULL;
  if (inner) {
    int64_t chunk = tir_swizzle_unit(b->swizzle) / tir_dtype_bytes(b->hdr.dtype), k;
    tir_Node *mid = NULL, *rest = NULL;
    if (chunk > 1) split_terms(inner, chunk, &mid, &rest);
    if (rest && tir_is_const_int(rest, &k) && k > 0 && k < chunk) {
      tir_release(inner);
      inner = mid;
      low = rest;
    } else {
      tir_release(mid);
      tir_release(rest);
    }
  }
  tir_Node *r = swizzle_raw(b, inner ? inner : tir_int_imm(i->dtype, 0)); /* (steals inner) */
  if (low) r = tir_add(r, low);
  return outer ? tir_add(r, outer) : r;
}

/* the new index array of an access to swizzled buffer b (NULL + error when not expressible) */
static tir_Array *new_indices(Ctx *c, const tir_Buffer *b, const tir_Array *idx, const tir_Node *at) {
  if (idx->size != 1) {
    fail(c, at, "buffer %s is swizzled but is accessed with %s indices after flatten_buffer", b->name, "several");
    return NULL;
  }
  const tir_Node *i = idx->items[0];
  if (i->dtype.lanes == 1) return tir_array_of(1, swizzle_index(b, i));
  int64_t chunk = tir_swizzle_unit(b->swizzle) / tir_dtype_bytes(b->hdr.dtype);
  /* a unit-stride ramp, or one plus broadcasts (a match_buffer view's offset in the flattened
   * index: the DP4A row sums' A[Broadcast(row) + Ramp(k, 1, 4)]) */
  tir_Node *raw = tir_unit_ramp_base(i);
  if (!raw) {
    fail(c, at, "buffer %s is swizzled, so a vector access must be contiguous (a unit-stride ramp)%s", b->name,
         "; store the tile so that vectors run along its rows");
    return NULL;
  }
  tir_Node *base = tir_simplify_take(NULL, raw);
  int lanes = i->dtype.lanes;
  tir_DType t = base->dtype;
  tir_Node *within =
      tir_cmp(TIR_LE, tir_add(tir_floormod(R(base), tir_int_imm(t, chunk)), tir_int_imm(t, lanes)), tir_int_imm(t, chunk));
  int ok = tir_can_prove(NULL, within);
  tir_release(within);
  if (!ok) {
    tir_release(base);
    char what[96];
    snprintf(what, sizeof what, " (%lld lanes, %lld-element chunks)", (long long)lanes, (long long)chunk);
    fail(c, at, "buffer %s is swizzled, and this vector access may straddle two of the chunks the swizzle moves%s", b->name, what);
    return NULL;
  }
  tir_Node *out = tir_ramp(swizzle_index(b, base), tir_int_imm(t, 1), lanes);
  tir_release(base);
  return tir_array_of(1, out);
}

static tir_Node *mut(const tir_Node *n, void *p);

static tir_Node *mutate_call(Ctx *c, const tir_Call *call) {
  if (strcmp(call->op, "address_of") == 0) return NULL; /* its load is handled below */
  /* address_of(swizzled[...]) arguments: per-thread addresses only */
  int aware = tir_builtin_has(call->op, TIR_BUILTIN_SWIZZLE_AWARE);
  if (!aware && !tir_builtin_has(call->op, TIR_BUILTIN_LANE_ADDRESS))
    for (int k = 0; k < call->args->size; k++) {
      const tir_BufferLoad *l = tir_address_of_load(call->args->items[k]);
      if (l && l->buffer->swizzle) {
        fail(c, &call->hdr, "buffer %s is swizzled, but %s computes addresses from a base pointer (a row stride), which do not follow "
             "the swizzle: keep the buffer unswizzled, or use a builtin that takes each thread's address (ldmatrix, cp.async)",
             l->buffer->name, call->op);
        return TIR_MUTATE_ERROR;
      }
    }
  if (!aware) return NULL;
  int saved = c->in_aware;
  c->in_aware = 1;
  tir_Node *r = tir_mutate_children(&call->hdr, mut, c);
  c->in_aware = saved;
  return r ? r : TIR_MUTATE_ERROR;
}

static tir_Node *mut(const tir_Node *n, void *p) {
  Ctx *c = p;
  switch (n->kind) {
    case TIR_Call: return mutate_call(c, (const tir_Call *)n);
    case TIR_BufferLoad: {
      if (!((const tir_BufferLoad *)n)->buffer->swizzle || c->in_aware) return NULL;
      tir_Node *m = tir_mutate_children(n, mut, c); /* indices may load other buffers */
      if (!m) return TIR_MUTATE_ERROR;
      const tir_BufferLoad *l = (const tir_BufferLoad *)m;
      tir_Array *idx = new_indices(c, l->buffer, l->indices, n);
      if (!idx) {
        tir_release(m);
        return TIR_MUTATE_ERROR;
      }
      tir_Node *r = tir_buffer_load((tir_Buffer *)R(l->buffer), idx);
      r->dtype = n->dtype;
      tir_release(m);
      return r;
    }
    case TIR_BufferStore: {
      const tir_BufferStore *s = (const tir_BufferStore *)n;
      if (!s->buffer->swizzle) return NULL;
      tir_Node *m = tir_mutate_children(n, mut, c);
      if (!m) return TIR_MUTATE_ERROR;
      const tir_BufferStore *ms = (const tir_BufferStore *)m;
      tir_Array *idx = new_indices(c, ms->buffer, ms->indices, n);
      if (!idx) {
        tir_release(m);
        return TIR_MUTATE_ERROR;
      }
      tir_Node *r = tir_buffer_store((tir_Buffer *)R(ms->buffer), R(ms->value), idx);
      tir_release(m);
      return r;
    }
    case TIR_Allocate: {
      const tir_Buffer *b = ((const tir_Allocate *)n)->buffer;
      if (!b->swizzle) return NULL;
      int64_t bytes = tir_dtype_bytes(b->hdr.dtype), d;
      for (int k = 0; k < b->shape->size; k++) {
        if (!tir_is_const_int(b->shape->items[k], &d)) {
          fail(c, n, "buffer %s is swizzled but its size is not a constant%s", b->name, "");
          return TIR_MUTATE_ERROR;
        }
        bytes *= d;
      }
      int64_t block = INT64_C(1) << (tir_swizzle_base(b->swizzle) + tir_swizzle_bits(b->swizzle));
      if (log2i(tir_dtype_bytes(b->hdr.dtype)) < 0 || tir_dtype_bytes(b->hdr.dtype) > tir_swizzle_unit(b->swizzle)) {
        fail(c, n, "buffer %s is swizzled but its elements are not a power-of-two size within the swizzle's chunks%s", b->name, "");
        return TIR_MUTATE_ERROR;
      }
      if (bytes % block) {
        char what[96];
        snprintf(what, sizeof what, " (%lld bytes; the swizzle permutes blocks of %lld)", (long long)bytes, (long long)block);
        fail(c, n, "buffer %s is swizzled but its size is not a multiple of the blocks the swizzle permutes%s", b->name, what);
        return TIR_MUTATE_ERROR;
      }
      return NULL;
    }
    default: return NULL;
  }
}

tir_PrimFunc *tir_pass_lower_buffer_swizzle(const tir_PrimFunc *f) {
  Ctx c = {&f->hdr, 0};
  return pass_with_body(f, tir_mutate(f->body, mut, &c));
}
