/* interp.c -- the CPU interpreter of TensorIR (see interp.h for the semantics). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tir/error.h"
#include "tir/arith.h"
#include "tir/extern.h"
#include "tir/device_print.h"
#include "tir/interp.h"
#include "tir/tma.h"
#include "tir/schedule.h"
#include "tir/strbuf.h"
#include "tir/scope.h"
#include "tir/value.h"

typedef tir_Value Val; /* the value rules are value.c's, shared with the simulator */

/* ---- pointer-keyed hash maps ---- */
typedef struct {
  const void **keys;
  int *vals;
  int cap, n;
} PMap;

static uint64_t phash(const void *p) {
  uint64_t x = (uint64_t)(uintptr_t)p;
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdull;
  x ^= x >> 33;
  return x;
}

static void pmap_grow(PMap *m);

static int *pmap_slot(PMap *m, const void *k, int insert) {
  if (insert && (m->n + 1) * 2 > m->cap) pmap_grow(m);
  if (!m->cap) return NULL;
  uint64_t h = phash(k) & (uint64_t)(m->cap - 1);
  while (m->keys[h]) {
    if (m->keys[h] == k) return &m->vals[h];
    h = (h + 1) & (uint64_t)(m->cap - 1);
  }
  if (!insert) return NULL;
  m->keys[h] = k;
  m->n++;
  m->vals[h] = -1;
  return &m->vals[h];
}

static void pmap_grow(PMap *m) {
  PMap old = *m;
  m->cap = m->cap ? m->cap * 2 : 64;
  m->keys = calloc((size_t)m->cap, sizeof *m->keys);
  m->vals = calloc((size_t)m->cap, sizeof *m->vals);
  m->n = 0;
  for (int i = 0; i < old.cap; i++)
    if (old.keys[i]) *pmap_slot(m, old.keys[i], 1) = old.vals[i];
  free(old.keys);
  free(old.vals);
}

static void pmap_free(PMap *m) {
  free(m->keys);
  free(m->vals);
}

/* ---- storage ---- */
typedef struct {
  char *base;     /* start of the allocation (elements of dtype) */
  tir_DType dtype; /* element type of the allocation */
  int64_t n;      /* elements */
  int owned;
  const char *name;
} Storage;

typedef struct {
  const tir_PrimFunc *func;
  PMap vars; /* Var* -> index into vals */
  Val *vals;
  int n_vals, cap_vals;
  int thread_depth; /* inside a threadIdx launch dimension of lowered code */
  int thread_loops; /* inside a loop bound to threadIdx (block-level code) */
  int64_t coords[6];  /* threadIdx.x/y/z, blockIdx.x/y/z of the thread running (tir_print's filter) */
  PMap stores; /* data Var* -> index into storages */
  Storage *storages;
  int n_st, cap_st;
  int failed;
  struct AsyncState *async; /* cp.async bookkeeping (see "async copies" below) */
  int64_t alloc_bytes;      /* live allocations of the run (arguments excluded) */
} Interp;

/* The interpreter's allocation limit (tir_interp_set_alloc_limit): a transform_layout that
 * spreads a 64x64 cache over 64M elements made a run take 16 GB before it failed. */
static int64_t alloc_limit = (int64_t)4 << 30;

int64_t tir_interp_set_alloc_limit(int64_t bytes) {
  int64_t old = alloc_limit;
  if (bytes > 0) alloc_limit = bytes;
  return old;
}

#include <signal.h>
static volatile sig_atomic_t interrupt_requested = 0;
void tir_request_interrupt(void) { interrupt_requested = 1; }

static int fail(Interp *I, const tir_Node *where, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int fail(Interp *I, const tir_Node *where, const char *fmt, ...) {
  if (I->failed) return -1;
  I->failed = 1;
  tir_StrBuf sb;
  tir_sb_init(&sb);
  va_list ap;
  va_start(ap, fmt);
  tir_sb_vprintf(&sb, fmt, ap);
  va_end(ap);
  tir_error_set(TIR_ERR_RUNTIME, "interpret", "%s", sb.data ? sb.data : "");
  tir_sb_free(&sb);
  tir_error_set_ir(&I->func->hdr);
  if (where) tir_error_mark(where, "here");
  return -1;
}

static int var_slot(Interp *I, const tir_Node *v) {
  int *s = pmap_slot(&I->vars, v, 1);
  if (*s < 0) {
    if (I->n_vals == I->cap_vals) {
      I->cap_vals = I->cap_vals ? I->cap_vals * 2 : 64;
      I->vals = realloc(I->vals, sizeof(Val) * (size_t)I->cap_vals);
    }
    *s = I->n_vals++;
    I->vals[*s].i = INT64_MIN; /* unset marker for ints; floats use bit pattern */
  }
  return *s;
}

static void set_var(Interp *I, const tir_Var *v, Val x) {
  int slot = var_slot(I, &v->hdr); /* may grow I->vals: index after */
  I->vals[slot] = x;
}

static int storage_of(Interp *I, const tir_Var *data) {
  int *s = pmap_slot(&I->stores, data, 0);
  return s && *s >= 0 && I->storages[*s].base ? *s : -1;
}

static int add_storage(Interp *I, const tir_Var *data, Storage st) {
  int *slot = pmap_slot(&I->stores, data, 1);
  if (*slot >= 0 && !I->storages[*slot].base) { /* reuse a freed entry (allocation inside a loop) */
    I->storages[*slot] = st;
    return *slot;
  }
  if (I->n_st == I->cap_st) {
    I->cap_st = I->cap_st ? I->cap_st * 2 : 16;
    I->storages = realloc(I->storages, sizeof(Storage) * (size_t)I->cap_st);
  }
  int idx = I->n_st++;
  I->storages[idx] = st;
  *pmap_slot(&I->stores, data, 1) = idx;
  return idx;
}

static Val norm(tir_DType t, Val v) { return tir_value_norm(t, v); }

static int is_f(tir_DType t) { return tir_dtype_is_float(t); }

static Val eval(Interp *I, const tir_Node *e, int lane);


/* Flat element offset of an access (indices evaluated at `lane`). */
static int64_t flat_offset(Interp *I, const tir_Buffer *b, const tir_Array *idx, int lane, const tir_Node *where) {
  int nd = idx->size;
  if (b->shape->size != nd && !(nd == 1)) {
    fail(I, where, "buffer %s has %d dimensions but is accessed with %d indices", b->name, b->shape->size, nd);
    return 0;
  }
  int64_t off = eval(I, b->elem_offset, 0).i;
  if (nd == 1 && b->shape->size != 1) {
    /* flat access to a multi-dimensional buffer (after flattening views) */
    return off + eval(I, idx->items[0], lane).i;
  }
  if (b->strides->size == nd) {
    for (int d = 0; d < nd; d++) off += eval(I, idx->items[d], lane).i * eval(I, b->strides->items[d], 0).i;
    return off;
  }
  int64_t stride = 1;
  for (int d = nd - 1; d >= 0; d--) {
    int64_t ix = eval(I, idx->items[d], lane).i;
    int64_t ext = eval(I, b->shape->items[d], 0).i;
    if ((ix < 0 || ix >= ext) && !I->failed) {
      tir_StrBuf sb;
      tir_sb_init(&sb);
      for (int k = 0; k < nd; k++) tir_sb_printf(&sb, "%s%lld", k ? ", " : "", (long long)eval(I, idx->items[k], lane).i);
      fail(I, where, "out-of-bounds access %s[%s]: index %lld of dimension %d is outside [0, %lld)", b->name, sb.data,
           (long long)ix, d + 1, (long long)ext);
      tir_sb_free(&sb);
      return 0;
    }
    off += ix * stride;
    stride *= ext;
  }
  return off;
}

static Storage *buffer_storage(Interp *I, const tir_Buffer *b, const tir_Node *where) {
  int s = storage_of(I, b->data);
  if (s < 0) {
    fail(I, where, "buffer %s is not allocated here (no storage bound to its data)", b->name);
    return NULL;
  }
  return &I->storages[s];
}

/* async copies in deferred mode (defined below with the async builtins) */
static int async_deferred(const Interp *I);
static int check_inflight(Interp *I, const char *addr, int size, const tir_Node *where, const char *name);
static int async_store(Interp *I, char *addr, const void *bytes, int size);

static Val load(Interp *I, const tir_BufferLoad *l, int lane) {
  Val v = {0};
  Storage *st = buffer_storage(I, l->buffer, &l->hdr);
  if (!st) return v;
  int vec_idx = 0;
  for (int i = 0; i < l->indices->size; i++)
    if (l->indices->items[i]->dtype.lanes > 1) vec_idx = 1;
  int64_t off = flat_offset(I, l->buffer, l->indices, vec_idx ? lane : 0, &l->hdr);
  if (I->failed) return v;
  /* a vector-typed buffer element: lane within the element */
  int64_t el = off;
  tir_DType et = st->dtype;
  if (l->buffer->hdr.dtype.lanes > 1 && !vec_idx) el = off * l->buffer->hdr.dtype.lanes + lane;
  if (el < 0 || el >= st->n) {
    fail(I, &l->hdr, "out-of-bounds read of %s: element %lld outside the allocation of %lld", l->buffer->name,
         (long long)el, (long long)st->n);
    return v;
  }
  if (async_deferred(I) && check_inflight(I, st->base + el * tir_dtype_bytes(et), tir_dtype_bytes(et), &l->hdr, l->buffer->name))
    return v;
  if (is_f(et)) v.f = tir_load_scalar_f(st->base, et, el);
  else v.i = tir_load_scalar_i(st->base, et, el);
  /* the buffer may be viewed with another dtype of the same width (rare): convert */
  tir_DType lt = tir_dtype_element(l->hdr.dtype);
  if (is_f(lt) != is_f(et)) v = tir_value_cast(lt, et, v);
  return v;
}

static int store(Interp *I, const tir_BufferStore *s) {
  Storage *st = buffer_storage(I, s->buffer, &s->hdr);
  if (!st) return -1;
  int lanes = s->value->dtype.lanes;
  int vec_idx = 0;
  for (int i = 0; i < s->indices->size; i++)
    if (s->indices->items[i]->dtype.lanes > 1) vec_idx = 1;
  for (int lane = 0; lane < lanes; lane++) {
    Val v = eval(I, s->value, lane);
    int64_t off = flat_offset(I, s->buffer, s->indices, vec_idx ? lane : 0, &s->hdr);
    if (I->failed) return -1;
    int64_t el = off;
    if (!vec_idx && lanes > 1) el = off * lanes + lane;
    if (el < 0 || el >= st->n)
      return fail(I, &s->hdr, "out-of-bounds write to %s: element %lld outside the allocation of %lld", s->buffer->name,
                  (long long)el, (long long)st->n);
    tir_DType vt = tir_dtype_element(s->value->dtype);
    if (async_deferred(I)) {
      /* in an async_scope the element is written when its group is waited for */
      int esz = tir_dtype_bytes(st->dtype);
      unsigned char tmp[16];
      if (is_f(vt) != is_f(st->dtype)) v = tir_value_cast(st->dtype, vt, v);
      if (is_f(st->dtype)) tir_store_scalar_f(tmp, st->dtype, 0, v.f);
      else tir_store_scalar_i(tmp, st->dtype, 0, v.i);
      int rc = async_store(I, st->base + el * esz, tmp, esz);
      if (rc < 0) return -1;
      if (rc == 1) continue;
    }
    if (is_f(vt) != is_f(st->dtype)) v = tir_value_cast(st->dtype, vt, v);
    if (is_f(st->dtype)) tir_store_scalar_f(st->base, st->dtype, el, v.f);
    else tir_store_scalar_i(st->base, st->dtype, el, v.i);
  }
  return 0;
}

static Val binop(Interp *I, const tir_Node *e, int lane) {
  const tir_Add *b = (const tir_Add *)e;
  Val x = eval(I, b->a, lane), y = eval(I, b->b, lane), r = {0};
  if (I->failed) return r;
  if (tir_value_binop(e->kind, b->a->dtype, x, y, &r) == TIR_VALUE_DIV_BY_ZERO) fail(I, e, "integer division by zero");
  return r;
}

/* The launch coordinate a thread tag names (0..5: threadIdx.x/y/z, blockIdx.x/y/z), or -1. */
static int coord_of_tag(const char *tag) {
  if (!tag) return -1;
  if (strncmp(tag, "threadIdx.", 10) == 0 && tag[10] >= 'x' && tag[10] <= 'z' && !tag[11]) return tag[10] - 'x';
  if (strncmp(tag, "blockIdx.", 9) == 0 && tag[9] >= 'x' && tag[9] <= 'z' && !tag[10]) return 3 + tag[9] - 'x';
  return -1;
}

static Val eval(Interp *I, const tir_Node *e, int lane);

/* tir_print (include/tir/device_print.h): prints when the running thread passes the filter;
** loops bound to threads (and launch dimensions of lowered code) give the coordinates, others
** count as thread 0 of block 0. */
static Val device_print(Interp *I, const tir_Call *c, int lane) {
  Val r = {0};
  int n = c->args->size - 1 - TIR_PRINT_FILTER_ARGS;
  const tir_Node *f0 = c->args->items[0];
  if (n < 0 || f0->kind != TIR_StringImm) {
    fail(I, &c->hdr, "tir_print needs a format string, 6 filter coordinates and the values");
    return r;
  }
  int64_t filter[TIR_PRINT_FILTER_ARGS];
  for (int d = 0; d < TIR_PRINT_FILTER_ARGS; d++) filter[d] = eval(I, c->args->items[1 + d], lane).i;
  if (!tir_print_selected(filter, I->coords)) return r;
  tir_PrintValue v[64];
  if (n > 64) {
    fail(I, &c->hdr, "tir_print takes at most 64 values");
    return r;
  }
  for (int k = 0; k < n; k++) {
    const tir_Node *e = c->args->items[1 + TIR_PRINT_FILTER_ARGS + k];
    Val x = eval(I, e, lane);
    v[k].is_float = tir_dtype_is_float(e->dtype);
    v[k].i = x.i;
    v[k].f = v[k].is_float ? x.f : 0;
  }
  if (I->failed) return r;
  tir_print_emit(((const tir_StringImm *)f0)->value, v, n);
  return r;
}

/* call_extern / call_pure_extern: the registered CPU model (include/tir/extern.h) */
static Val call_extern(Interp *I, const tir_Call *c, int lane) {
  Val r = {0};
  tir_ExternModelFn model;
  void *ctx = NULL;
  char err[512];
  int n = tir_extern_prepare(c, &model, &ctx, err, sizeof err);
  if (n < 0) {
    fail(I, &c->hdr, "%s", err);
    return r;
  }
  tir_ExternValue a[TIR_EXTERN_MAX_ARGS], ret = {c->hdr.dtype, 0, 0};
  for (int i = 0; i < n; i++) {
    const tir_Node *x = c->args->items[i + 1];
    Val v = eval(I, x, lane);
    a[i] = (tir_ExternValue){x->dtype, is_f(x->dtype) ? 0 : v.i, is_f(x->dtype) ? v.f : 0};
  }
  if (I->failed) return r;
  if (model(ctx, tir_extern_call_name(&c->hdr), n, a, &ret, err, sizeof err)) {
    fail(I, &c->hdr, "the CPU model of %s '%s' failed: %s", c->op, tir_extern_call_name(&c->hdr), err);
    return r;
  }
  tir_DType t = tir_dtype_element(c->hdr.dtype);
  if (is_f(t)) r.f = ret.f;
  else r.i = ret.i;
  return norm(t, r);
}

static char *element_addr(Interp *I, const tir_Node *arg, Storage **st_out, const char *op);

/* tir_grid_arrive_last(address_of(counter[i]), count) (docs/BUILTINS.md): one arrival of the CTA
 * running this code.  In block-level code outside every threadIdx loop (where lower_grid_tail puts
 * it) a statement runs once per CTA, so the arrival is counted once; in lowered code or inside a
 * threadIdx loop each thread would count it, so the interpreter refuses. */
static Val grid_arrive(Interp *I, const tir_Call *c) {
  Val r = {0};
  if (I->thread_depth > 0 || I->thread_loops > 0) {
    fail(I, &c->hdr, "tir_grid_arrive_last is called by every thread of a CTA at once (a barrier), which the interpreter, running "
         "threads one after another, cannot do inside a thread launch or a loop bound to threadIdx: interpret the function before "
         "lowering, or run the lowered function with tir.simulate");
    return r;
  }
  Storage *st = NULL;
  char *p = element_addr(I, c->args->items[0], &st, "tir_grid_arrive_last");
  if (!p) return r;
  if (st->dtype.code != TIR_DT_INT || st->dtype.bits != 32) {
    fail(I, &c->hdr, "tir_grid_arrive_last: the counter must be an int32 buffer");
    return r;
  }
  int64_t count = eval(I, c->args->items[1], 0).i;
  if (I->failed) return r;
  int32_t v;
  memcpy(&v, p, 4);
  int last = (int64_t)v + 1 == count;
  v = last ? 0 : v + 1;
  memcpy(p, &v, 4);
  r.i = last;
  return r;
}

static int cluster_fail(Interp *I, const tir_Node *at, const char *what);

static Val call(Interp *I, const tir_Call *c, int lane) {
  Val r = {0};
  const char *op = c->op;
  int n = c->args->size;
  tir_DType t = tir_dtype_element(c->hdr.dtype);
  if (strcmp(op, "if_then_else") == 0 && n == 3) {
    Val cond = eval(I, c->args->items[0], lane);
    return eval(I, c->args->items[cond.i ? 1 : 2], lane);
  }
  if ((strcmp(op, "likely") == 0 || strcmp(op, "tir.likely") == 0) && n == 1) return eval(I, c->args->items[0], lane);
  if (tir_builtin_shfl_mode(op) >= 0) {
    fail(I, &c->hdr, "%s exchanges values between the lanes of a warp, which the interpreter runs one after another: "
         "interpret the function before lowering (a cross-thread reduction is a plain reduction there), or run the "
         "lowered function with tir.simulate", op);
    return r;
  }
  if (tir_math_builtin(op) && n <= 2) {
    Val args[2];
    tir_DType at[2];
    for (int k = 0; k < n; k++) {
      args[k] = eval(I, c->args->items[k], lane);
      at[k] = c->args->items[k]->dtype;
    }
    if (I->failed) return r;
    int rc = tir_value_builtin(op, t, n, at, args, &r);
    if (rc == TIR_VALUE_OK) return r;
    if (rc == TIR_VALUE_BAD_DTYPE) {
      char ts[32];
      fail(I, &c->hdr, "builtin '%s' cannot compute a %s (math builtins need a float dtype -- call it with one and cast the "
           "result; isnan/isinf/isfinite give bool; bit operations need integers)", op, tir_dtype_str(t, ts));
      return r;
    }
  }
  if (tir_builtin_info(op) && tir_builtin_info(op)->id == TIR_BI_TIR_GRID_ARRIVE_LAST) return grid_arrive(I, c);
  if (tir_builtin_info(op) && tir_builtin_info(op)->id == TIR_BI_TIR_GRID_WAIT) {
    /* lowered code only (lower_grid_tail puts it there): one CTA waiting for others that run concurrently */
    fail(I, &c->hdr, "tir_grid_wait waits for other CTAs running at the same time, which the interpreter, running one CTA after "
         "another, cannot do: interpret the function before lowering, or run the lowered function with tir.simulate");
    return r;
  }
  if (strcmp(op, "ptx_cluster_ctarank") == 0) {
    cluster_fail(I, &c->hdr, op);
    return r;
  }
  if (strcmp(op, "address_of") == 0) {
    fail(I, &c->hdr, "address_of(...) is only valid as an operand of a builtin that takes addresses (ptx_cp_async, ...)");
    return r;
  }
  if (strcmp(op, "call_extern") == 0 || strcmp(op, "call_pure_extern") == 0) return call_extern(I, c, lane);
  if (strcmp(op, "tir_print") == 0) return device_print(I, c, lane);
  if (strcmp(op, "ptx_dp4a") == 0 && n == 5) {
    int as = tir_dp4a_type_signed(c->args->items[3]), bs = tir_dp4a_type_signed(c->args->items[4]);
    if (as < 0 || bs < 0) {
      fail(I, &c->hdr, "ptx_dp4a: the operand types (arguments 4 and 5) must be \"s32\" or \"u32\"");
      return r;
    }
    int64_t a = eval(I, c->args->items[0], lane).i, b = eval(I, c->args->items[1], lane).i, cc = eval(I, c->args->items[2], lane).i;
    r.i = tir_dp4a((int32_t)a, (int32_t)b, (int32_t)cc, as, bs);
    return norm(t, r);
  }
  if (strcmp(op, "reinterpret") == 0) {
    char err[256];
    if (tir_reinterpret_check(c, err, sizeof err)) {
      fail(I, &c->hdr, "%s", err);
      return r;
    }
    const tir_Node *v = c->args->items[0];
    int lanes = v->dtype.lanes, bits = v->dtype.bits;
    uint64_t u = 0, mask = bits == 64 ? ~0ull : ((1ull << bits) - 1);
    for (int l = 0; l < lanes; l++) u |= ((uint64_t)eval(I, v, l).i & mask) << (bits * l);
    r.i = (int64_t)u;
    return norm(t, r);
  }
  if (strcmp(op, "ptx_prmt") == 0 && n == 3) {
    int64_t a = eval(I, c->args->items[0], lane).i, b = eval(I, c->args->items[1], lane).i, sel = eval(I, c->args->items[2], lane).i;
    r.i = (int32_t)tir_prmt((uint32_t)a, (uint32_t)b, (uint32_t)sel);
    return norm(t, r);
  }
  fail(I, &c->hdr, "the interpreter does not know builtin '%s' with %d argument(s)", op, n);
  return r;
}

static Val eval(Interp *I, const tir_Node *e, int lane) {
  Val r = {0};
  if (I->failed) return r;
  switch (e->kind) {
    case TIR_IntImm: r.i = ((const tir_IntImm *)e)->value; return r;
    case TIR_FloatImm: r.f = ((const tir_FloatImm *)e)->value; return r;
    case TIR_Var: {
      int *s = pmap_slot(&I->vars, e, 0);
      if (!s) {
        fail(I, e, "variable %s is used outside the scope that defines it", ((const tir_Var *)e)->name);
        return r;
      }
      return I->vals[*s];
    }
    case TIR_Add: case TIR_Sub: case TIR_Mul: case TIR_Div: case TIR_Mod: case TIR_FloorDiv: case TIR_FloorMod:
    case TIR_Min: case TIR_Max: case TIR_EQ: case TIR_NE: case TIR_LT: case TIR_LE: case TIR_GT: case TIR_GE:
      return binop(I, e, lane);
    case TIR_And: {
      const tir_And *b = (const tir_And *)e;
      r.i = eval(I, b->a, lane).i && eval(I, b->b, lane).i;
      return r;
    }
    case TIR_Or: {
      const tir_Or *b = (const tir_Or *)e;
      r.i = eval(I, b->a, lane).i || eval(I, b->b, lane).i;
      return r;
    }
    case TIR_Not: r.i = !eval(I, ((const tir_Not *)e)->a, lane).i; return r;
    case TIR_Cast: {
      const tir_Cast *c = (const tir_Cast *)e;
      return tir_value_cast(e->dtype, c->value->dtype, eval(I, c->value, lane));
    }
    case TIR_Select: {
      const tir_Select *s = (const tir_Select *)e;
      /* both sides are evaluated (TVM semantics), so faults in either show */
      Val c = eval(I, s->cond, lane), t = eval(I, s->true_value, lane), f = eval(I, s->false_value, lane);
      return c.i ? t : f;
    }
    case TIR_BufferLoad: return load(I, (const tir_BufferLoad *)e, lane);
    case TIR_Call: return call(I, (const tir_Call *)e, lane);
    case TIR_Ramp: {
      const tir_Ramp *rp = (const tir_Ramp *)e;
      r.i = eval(I, rp->base, 0).i + (int64_t)lane * eval(I, rp->stride, 0).i;
      return norm(tir_dtype_element(e->dtype), r);
    }
    case TIR_Broadcast: return eval(I, ((const tir_Broadcast *)e)->value, 0);
    case TIR_Let: {
      const tir_Let *l = (const tir_Let *)e;
      set_var(I, l->var, eval(I, l->value, lane));
      return eval(I, l->body, lane);
    }
    case TIR_StringImm: return r;
    default: fail(I, e, "the interpreter cannot evaluate a %s expression", tir_kind_name(e->kind)); return r;
  }
}

/* ---- async copies (docs/BUILTINS.md: ptx_cp_async, ptx_commit_group, ptx_wait_group) ----
 * Immediate mode (tir_interpret): a copy lands when it is issued; commit and wait do
 * nothing.  Deferred mode (async_deferred): copies made by ptx_cp_async and stores inside
 * an async_scope go to the open group; ptx_commit_group closes it; ptx_wait_group(n) lands
 * every closed group but the newest n (PTX ISA 9.7.9.25.3).  Touching an element whose
 * copy is still in flight fails, so a missing or too weak wait shows as an error. */
typedef struct {
  char *addr;
  int size;
  unsigned char bytes[16];
} PendingWrite;

typedef struct {
  PendingWrite *w;
  int n, cap;
} CopyGroup;

struct AsyncState {
  int deferred;
  int in_scope;        /* inside AttrStmt async_scope */
  CopyGroup open;      /* issued, not committed */
  CopyGroup *closed;   /* committed, oldest first */
  int n_closed, cap_closed;
  PMap inflight;       /* byte address -> number of copies in flight to it */
  int64_t n_inflight;  /* copies in flight */
};

static void group_free(CopyGroup *g) {
  free(g->w);
  memset(g, 0, sizeof *g);
}

static void async_free(struct AsyncState *a) {
  if (!a) return;
  group_free(&a->open);
  for (int i = 0; i < a->n_closed; i++) group_free(&a->closed[i]);
  free(a->closed);
  pmap_free(&a->inflight);
  free(a);
}

/* Fails when an access of `size` bytes at addr overlaps a copy in flight (deferred mode). */
static int check_inflight(Interp *I, const char *addr, int size, const tir_Node *where, const char *name) {
  struct AsyncState *a = I->async;
  if (!a || !a->deferred || !a->n_inflight) return 0;
  for (int k = 0; k < size; k++) {
    int *c = pmap_slot(&a->inflight, addr + k, 0);
    if (c && *c > 0)
      return fail(I, where, "%s is accessed while an async copy to it is in flight (a ptx_wait_group is missing or allows "
                            "too many groups in flight)", name);
  }
  return 0;
}

static void async_record(Interp *I, char *addr, const void *bytes, int size) {
  struct AsyncState *a = I->async;
  CopyGroup *g = &a->open;
  if (g->n == g->cap) {
    g->cap = g->cap ? g->cap * 2 : 64;
    g->w = realloc(g->w, sizeof(PendingWrite) * (size_t)g->cap);
  }
  PendingWrite *w = &g->w[g->n++];
  w->addr = addr;
  w->size = size;
  memcpy(w->bytes, bytes, (size_t)size);
  for (int k = 0; k < size; k++) {
    int *c = pmap_slot(&a->inflight, addr + k, 1);
    *c = *c < 0 ? 1 : *c + 1;
  }
  a->n_inflight++;
}

static void async_land(Interp *I, CopyGroup *g) {
  for (int i = 0; i < g->n; i++) {
    memcpy(g->w[i].addr, g->w[i].bytes, (size_t)g->w[i].size);
    for (int k = 0; k < g->w[i].size; k++) {
      int *c = pmap_slot(&I->async->inflight, g->w[i].addr + k, 0);
      if (c) (*c)--;
    }
    I->async->n_inflight--;
  }
  group_free(g);
}

static int async_deferred(const Interp *I) { return I->async && I->async->deferred; }

static int async_pending_in(Interp *I, const char *lo, const char *hi) {
  struct AsyncState *a = I->async;
  for (int gi = -1; gi < a->n_closed; gi++) {
    CopyGroup *g = gi < 0 ? &a->open : &a->closed[gi];
    for (int i = 0; i < g->n; i++)
      if (g->w[i].addr >= lo && g->w[i].addr < hi) return 1;
  }
  return 0;
}

/* A plain store in deferred mode: checked against copies in flight; inside an async_scope
 * recorded in the open group (returns 1), else done by the caller (returns 0). */
static int async_store(Interp *I, char *addr, const void *bytes, int size) {
  if (check_inflight(I, addr, size, NULL, "a stored element")) return -1;
  if (!I->async->in_scope) return 0;
  async_record(I, addr, bytes, size);
  return 1;
}

/* An element address of address_of(BufferLoad) (the buffer's storage, its dtype). */
static char *element_addr(Interp *I, const tir_Node *arg, Storage **st_out, const char *op) {
  const tir_BufferLoad *l = tir_address_of_load(arg);
  if (!l) {
    fail(I, arg, "%s expects address_of(buffer[index]) operands", op);
    return NULL;
  }
  Storage *st = buffer_storage(I, l->buffer, &l->hdr);
  if (!st) return NULL;
  int64_t el = flat_offset(I, l->buffer, l->indices, 0, &l->hdr);
  if (I->failed) return NULL;
  if (el < 0 || el >= st->n) {
    fail(I, &l->hdr, "%s: element %lld of %s is outside its allocation of %lld", op, (long long)el, l->buffer->name,
         (long long)st->n);
    return NULL;
  }
  *st_out = st;
  return st->base + el * tir_dtype_bytes(st->dtype);
}

/* ptx_cp_async(dst, src, bytes [, src_bytes]): src_bytes < bytes zero-fills the rest. */
static int exec_cp_async(Interp *I, const tir_Call *c) {
  int n = c->args->size;
  if (n != 3 && n != 4) return fail(I, &c->hdr, "ptx_cp_async takes (dst, src, bytes [, src_bytes]), got %d arguments", n);
  Storage *ds = NULL, *ss = NULL;
  char *dst = element_addr(I, c->args->items[0], &ds, "ptx_cp_async");
  char *src = dst ? element_addr(I, c->args->items[1], &ss, "ptx_cp_async") : NULL;
  if (!src) return -1;
  int64_t bytes = eval(I, c->args->items[2], 0).i;
  int64_t src_bytes = n == 4 ? eval(I, c->args->items[3], 0).i : bytes;
  if (I->failed) return -1;
  if (bytes != 4 && bytes != 8 && bytes != 16) return fail(I, &c->hdr, "ptx_cp_async copies 4, 8 or 16 bytes, not %lld", (long long)bytes);
  if (src_bytes < 0 || src_bytes > bytes)
    return fail(I, &c->hdr, "ptx_cp_async: src_bytes %lld is outside [0, %lld]", (long long)src_bytes, (long long)bytes);
  if ((uintptr_t)(dst - ds->base) % (uintptr_t)bytes || (src_bytes && (uintptr_t)(src - ss->base) % (uintptr_t)bytes))
    return fail(I, &c->hdr, "ptx_cp_async: addresses must be aligned to the copy size (%lld bytes)", (long long)bytes);
  if (dst + bytes > ds->base + ds->n * tir_dtype_bytes(ds->dtype) || src + src_bytes > ss->base + ss->n * tir_dtype_bytes(ss->dtype))
    return fail(I, &c->hdr, "ptx_cp_async: the %lld-byte copy runs past the end of its buffer", (long long)bytes);
  unsigned char tmp[16] = {0};
  if (check_inflight(I, src, (int)src_bytes, &c->hdr, "the copy's source")) return -1;
  memcpy(tmp, src, (size_t)src_bytes);
  if (I->async && I->async->deferred) {
    if (check_inflight(I, dst, (int)bytes, &c->hdr, "the copy's destination")) return -1;
    async_record(I, dst, tmp, (int)bytes);
  } else {
    memcpy(dst, tmp, (size_t)bytes);
  }
  return 0;
}

/* ---- TMA and mbarriers (include/tir/tma.h; docs/BUILTINS.md) ----
 * Threads run one after another here, so a TMA copy is the tile copy it stands for, done when
 * issued, and the mbarrier operations do nothing (tir.simulate models their phases). */
static int interp_eval_int(void *p, const tir_Node *e, int64_t *v) {
  Interp *I = p;
  *v = eval(I, e, 0).i;
  return !I->failed;
}

/* load: 0 ptx_tma_store, 1 ptx_tma_load, 2 ptx_tma_load_im2col (rank coordinates, then rank - 2 offsets) */
static int exec_tma(Interp *I, const tir_Call *c, int load) {
  int n = c->args->size, di = load ? 1 : 0, si = load ? 0 : 1, c0 = load ? 3 : 2;
  tir_TmaDesc d;
  char why[256];
  if (tir_tma_desc_from_call(c->args->items[di], interp_eval_int, I, &d, why, sizeof why))
    return I->failed ? -1 : fail(I, &c->hdr, "%s: %s", c->op, why);
  if (d.im2col != (load == 2))
    return fail(I, &c->hdr, "%s needs %s tensor map", c->op, load == 2 ? "an im2col (tma_im2col_descriptor)" : "a tiled (tma_descriptor)");
  int want = load == 2 ? 2 * d.rank - 2 : d.rank;
  if (n - c0 != want)
    return fail(I, &c->hdr, "%s: %d coordinates%s for a rank-%d tensor map (%d expected)", c->op, n - c0, load == 2 ? " and offsets" : "",
                d.rank, want);
  int ts = storage_of(I, (const tir_Var *)((const tir_Call *)c->args->items[di])->args->items[0]);
  if (ts < 0) return fail(I, &c->hdr, "%s: the tensor map's buffer is not allocated here", c->op);
  Storage *tensor = &I->storages[ts], *sm = NULL;
  int64_t elems = 1;
  for (int i = 0; i < d.rank; i++) elems *= d.dims[i];
  if (tir_dtype_bytes(tensor->dtype) != tir_dtype_bytes(d.dtype) || tensor->n < elems)
    return fail(I, &c->hdr, "%s: the tensor map describes %lld elements of %d bytes, its buffer has %lld of %d", c->op,
                (long long)elems, tir_dtype_bytes(d.dtype), (long long)tensor->n, tir_dtype_bytes(tensor->dtype));
  char *box = element_addr(I, c->args->items[si], &sm, c->op);
  if (!box) return -1;
  if (box + tir_tma_box_bytes(&d) > sm->base + sm->n * tir_dtype_bytes(sm->dtype))
    return fail(I, &c->hdr, "%s: the %lld-byte box runs past the end of %s", c->op, (long long)tir_tma_box_bytes(&d), sm->name);
  int64_t coords[2 * TIR_TMA_MAX_RANK];
  for (int i = 0; i < want; i++) coords[i] = eval(I, c->args->items[c0 + i], 0).i;
  if (I->failed) return -1;
  /* the box lands as the hardware places it (swizzled by the map's mode): a storage_swizzle'd
   * tile is reached by physical indices once lower_buffer_swizzle ran, the only code with TMA
   * copies into it (the Buffer field is set by compact_buffer_allocation) */
  if (load == 2) tir_tma_copy_in_im2col(&d, tensor->base, coords, coords + d.rank, box);
  else if (load) tir_tma_copy_in(&d, tensor->base, coords, box);
  else tir_tma_copy_out(&d, tensor->base, coords, box);
  return 0;
}

/* ptx_commit_group: the open cp.async group closes (deferred mode only). */
static int exec_commit_group(Interp *I) {
  struct AsyncState *a = I->async;
  if (!a || !a->deferred) return 0;
  if (a->n_closed == a->cap_closed) {
    a->cap_closed = a->cap_closed ? a->cap_closed * 2 : 8;
    a->closed = realloc(a->closed, sizeof(CopyGroup) * (size_t)a->cap_closed);
  }
  a->closed[a->n_closed++] = a->open;
  memset(&a->open, 0, sizeof a->open);
  return 0;
}

/* ptx_wait_group N: all but the newest N closed groups land. */
static int exec_wait_group(Interp *I, const tir_Call *c) {
  if (c->args->size != 1) return fail(I, &c->hdr, "ptx_wait_group takes one argument (the groups allowed in flight)");
  int64_t keep = eval(I, c->args->items[0], 0).i;
  if (I->failed) return -1;
  if (keep < 0) return fail(I, &c->hdr, "ptx_wait_group: %lld groups in flight is negative", (long long)keep);
  struct AsyncState *a = I->async;
  if (!a || !a->deferred || a->n_closed <= keep) return 0;
  int land = a->n_closed - (int)keep;
  for (int i = 0; i < land; i++) async_land(I, &a->closed[i]);
  memmove(a->closed, a->closed + land, sizeof(CopyGroup) * (size_t)(a->n_closed - land));
  a->n_closed -= land;
  return 0;
}

/* ptx_cp_async_mbarrier_arrive_noinc: the arrival waits for all of the thread's cp.async copies,
 * closed groups and the open one (deferred mode: they land here; the mbarrier itself does nothing
 * in the interpreter, which runs one thread at a time). */
static int exec_cp_async_arrive(Interp *I) {
  struct AsyncState *a = I->async;
  if (!a || !a->deferred) return 0;
  exec_commit_group(I);
  for (int i = 0; i < a->n_closed; i++) async_land(I, &a->closed[i]);
  a->n_closed = 0;
  return 0;
}

/* A thread-block cluster's CTAs share shared memory and mbarriers (TMA multicast, remote
 * arrivals); the interpreter runs one CTA at a time. */
static int cluster_fail(Interp *I, const tir_Node *at, const char *what) {
  return fail(I, at, "%s: a thread-block cluster's CTAs write each other's shared memory and mbarriers, and the interpreter "
              "runs one CTA at a time: interpret the function before lowering (tir.interpret on the schedule's module), or run "
              "the lowered kernel on an sm_90 GPU", what);
}

/* Statement-level async builtins (looked up in the builtin table); returns 1 when `op` is not one
 * of them. */
static int exec_async_builtin(Interp *I, const tir_Call *c) {
  const tir_BuiltinInfo *bi = tir_builtin_info(c->op);
  if (!bi) return 1;
  switch (bi->id) {
  case TIR_BI_PTX_TMA_LOAD_MULTICAST: case TIR_BI_PTX_MBARRIER_ARRIVE_CLUSTER: case TIR_BI_PTX_CLUSTER_SYNC:
    return cluster_fail(I, &c->hdr, c->op);
  case TIR_BI_PTX_TMA_LOAD: return exec_tma(I, c, 1);
  case TIR_BI_PTX_TMA_LOAD_IM2COL: return exec_tma(I, c, 2);
  case TIR_BI_PTX_TMA_STORE: return exec_tma(I, c, 0);
  case TIR_BI_PTX_CP_ASYNC: return exec_cp_async(I, c);
  case TIR_BI_PTX_COMMIT_GROUP: return exec_commit_group(I);
  case TIR_BI_PTX_WAIT_GROUP: return exec_wait_group(I, c);
  case TIR_BI_PTX_CP_ASYNC_MBARRIER_ARRIVE_NOINC:
    if (exec_cp_async_arrive(I)) return -1;
    break;
  /* ordering only (the interpreter runs one thread at a time, in program order) */
  case TIR_BI_PTX_MBARRIER_INIT: case TIR_BI_PTX_FENCE_PROXY_ASYNC: case TIR_BI_PTX_SETMAXNREG_INC:
  case TIR_BI_PTX_SETMAXNREG_DEC: case TIR_BI_PTX_BAR_SYNC: case TIR_BI_PTX_BAR_ARRIVE: break;
  default:
    if (!(bi->flags & TIR_BUILTIN_ASYNC_PROXY)) return 1;
  }
  /* their operands are evaluated (an out-of-bounds index still fails) */
  for (int i = 0; i < c->args->size; i++)
    if (!tir_address_of_load(c->args->items[i])) (void)eval(I, c->args->items[i], 0);
  return I->failed ? -1 : 0;
}

/* ---- statements ---- */
static int exec(Interp *I, const tir_Node *s);

static int64_t shape_elems(Interp *I, const tir_Buffer *b) {
  int64_t n = 1;
  if (b->strides->size == b->shape->size && b->shape->size > 0) {
    /* strided: the extent is the largest offset + 1 */
    int64_t hi = 0;
    for (int d = 0; d < b->shape->size; d++)
      hi += (eval(I, b->shape->items[d], 0).i - 1) * eval(I, b->strides->items[d], 0).i;
    return hi + 1 + eval(I, b->elem_offset, 0).i;
  }
  for (int d = 0; d < b->shape->size; d++) n *= eval(I, b->shape->items[d], 0).i;
  return n * b->hdr.dtype.lanes + eval(I, b->elem_offset, 0).i;
}

static int alloc_buffer(Interp *I, const tir_Buffer *b) {
  int64_t n = shape_elems(I, b);
  if (I->failed) return -1;
  if (n < 0 || n > ((int64_t)1 << 34)) return fail(I, &b->hdr, "cannot allocate buffer %s of %lld elements", b->name, (long long)n);
  tir_DType et = tir_dtype_element(b->hdr.dtype);
  int64_t bytes = n * tir_dtype_bytes(et);
  if (bytes > alloc_limit - I->alloc_bytes)
    return fail(I, &b->hdr,
                "buffer %s needs %lld elements (%lld bytes), over the interpreter's allocation limit of %lld bytes (%lld in use); "
                "tir.interpret_alloc_limit(bytes) raises it",
                b->name, (long long)n, (long long)bytes, (long long)alloc_limit, (long long)I->alloc_bytes);
  I->alloc_bytes += bytes;
  Storage st = {calloc((size_t)(n ? n : 1), (size_t)tir_dtype_bytes(et)), et, n, 1, b->name};
  if (!st.base) return fail(I, &b->hdr, "out of memory allocating %s", b->name);
  /* poison: NaN for floats, 0x5a bytes for ints; "global.zeroed" (tir_grid_arrive_last's counters) starts at 0 */
  if (tir_scope_is_zeroed(b->scope))
    ; /* calloc'ed */
  else if (is_f(et))
    for (int64_t i = 0; i < n; i++) tir_store_scalar_f(st.base, et, i, NAN);
  else
    memset(st.base, 0x5a, (size_t)n * (size_t)tir_dtype_bytes(et));
  add_storage(I, b->data, st);
  return 0;
}

static int async_pending_in(Interp *I, const char *lo, const char *hi);

static void free_buffer(Interp *I, const tir_Buffer *b) {
  int *s = pmap_slot(&I->stores, b->data, 0);
  if (!s || *s < 0) return;
  Storage *st = &I->storages[*s];
  if (async_deferred(I) && st->base && async_pending_in(I, st->base, st->base + st->n * tir_dtype_bytes(st->dtype))) {
    fail(I, &b->hdr, "buffer %s goes out of scope while async copies to it are in flight", b->name);
    return; /* keep the storage: the copies still point into it (freed at the end) */
  }
  if (st->owned) {
    free(st->base);
    I->alloc_bytes -= st->n * tir_dtype_bytes(st->dtype);
  }
  st->base = NULL; /* the entry is reused by the next allocation of this buffer */
  st->n = 0;
  st->owned = 0;
}

static int bind_match_buffer(Interp *I, const tir_MatchBufferRegion *m) {
  const tir_BufferRegion *src = m->source;
  Storage *st = buffer_storage(I, src->buffer, &m->hdr);
  if (!st) return -1;
  /* the view starts at the region's first element */
  tir_Array *mins = tir_array_new(src->region->size);
  for (int i = 0; i < src->region->size; i++) mins->items[i] = tir_retain(((tir_Range *)src->region->items[i])->min);
  int64_t off = flat_offset(I, src->buffer, mins, 0, &m->hdr);
  tir_release(mins);
  if (I->failed) return -1;
  /* strides of the source in elements */
  const tir_Buffer *mb = m->buffer;
  int64_t stride = 1;
  int nd = src->buffer->shape->size;
  int64_t *strides = calloc((size_t)nd + 1, sizeof *strides);
  for (int d = nd - 1; d >= 0; d--) {
    strides[d] = src->buffer->strides->size == nd ? eval(I, src->buffer->strides->items[d], 0).i : stride;
    stride *= eval(I, src->buffer->shape->items[d], 0).i;
  }
  /* match_buffer's own strides (if declared as vars) are bound to the source's trailing strides */
  int md = mb->strides->size;
  for (int d = 0; d < md; d++) {
    const tir_Node *sv = mb->strides->items[d];
    int sd = nd - md + d;
    if (sv->kind == TIR_Var && sd >= 0) set_var(I, (const tir_Var *)sv, (Val){.i = strides[sd]});
  }
  if (mb->elem_offset->kind == TIR_Var) set_var(I, (const tir_Var *)mb->elem_offset, (Val){.i = 0});
  free(strides);
  for (int d = 0; d < mb->shape->size; d++)
    if (mb->shape->items[d]->kind == TIR_Var)
      set_var(I, (const tir_Var *)mb->shape->items[d], (Val){.i = eval(I, ((tir_Range *)src->region->items[src->region->size - mb->shape->size + d])->extent, 0).i});
  Storage view = {st->base + off * tir_dtype_bytes(st->dtype), st->dtype, st->n - off, 0, mb->name};
  add_storage(I, mb->data, view);
  return 0;
}

static int exec(Interp *I, const tir_Node *s);

static int exec_intrin_desc(Interp *I, const tir_BlockRealize *br, const char *name) {
  const tir_Block *b = br->block;
  const tir_PrimFunc *desc = tir_tensor_intrin_desc_exec(name);
  if (!desc)
    return fail(I, &br->hdr, "block %s is tensorized with '%s', which is not registered (require the library that defines it)",
                b->name, name);
  if (desc->params->size != b->match_buffers->size)
    return fail(I, &br->hdr, "block %s: intrinsic '%s' has %d buffers but the block binds %d", b->name, name, desc->params->size,
                b->match_buffers->size);
  int rc = 0, bound = 0;
  for (int i = 0; i < desc->params->size && !rc; i++) {
    const tir_MatchBufferRegion *m = (const tir_MatchBufferRegion *)b->match_buffers->items[i];
    tir_MatchBufferRegion *dm =
        tir_match_buffer_region((tir_Buffer *)tir_retain(desc->params->items[i]), (tir_BufferRegion *)tir_retain(m->source));
    rc = bind_match_buffer(I, dm);
    tir_release(dm);
    if (!rc) bound++;
  }
  if (!rc) rc = exec(I, desc->body);
  for (int i = 0; i < bound; i++) free_buffer(I, (const tir_Buffer *)desc->params->items[i]);
  return rc;
}

static int exec_block(Interp *I, const tir_BlockRealize *br) {
  const tir_Block *b = br->block;
  int n = b->iter_vars->size;
  Val vals[64];
  if (n > 64) return fail(I, &br->hdr, "block %s has too many iteration variables", b->name);
  for (int i = 0; i < n; i++) vals[i] = eval(I, br->iter_values->items[i], 0);
  if (I->failed) return -1;
  if (!eval(I, br->predicate, 0).i) return 0;
  int at_init = 1;
  for (int i = 0; i < n; i++) {
    const tir_IterVar *iv = (const tir_IterVar *)b->iter_vars->items[i];
    int64_t lo = eval(I, iv->dom->min, 0).i, ext = eval(I, iv->dom->extent, 0).i;
    if (vals[i].i < lo || vals[i].i >= lo + ext)
      return fail(I, &br->hdr, "block %s: iteration variable %s is bound to %lld, outside its domain [%lld, %lld)", b->name,
                  iv->var->name, (long long)vals[i].i, (long long)lo, (long long)(lo + ext));
    if (iv->iter_type == TIR_ITER_COMM_REDUCE && vals[i].i != lo) at_init = 0;
    set_var(I, iv->var, vals[i]);
  }
  for (int i = 0; i < b->alloc_buffers->size; i++)
    if (alloc_buffer(I, (const tir_Buffer *)b->alloc_buffers->items[i])) return -1;
  for (int i = 0; i < b->match_buffers->size; i++)
    if (bind_match_buffer(I, (const tir_MatchBufferRegion *)b->match_buffers->items[i])) return -1;
  int rc = 0;
  const tir_Node *intrin = tir_ann_get(b->annotations, "tensor_intrin");
  if (intrin && intrin->kind == TIR_StringImm) {
    /* a tensorized block runs its intrinsic's desc (the semantics), its buffers bound to the
     * regions impl's buffers view: the impl's builtins are the GPU's business */
    rc = exec_intrin_desc(I, br, ((const tir_StringImm *)intrin)->value);
  } else {
    if (b->init && at_init) rc = exec(I, b->init);
    if (!rc) rc = exec(I, b->body);
  }
  for (int i = 0; i < b->match_buffers->size; i++) free_buffer(I, ((const tir_MatchBufferRegion *)b->match_buffers->items[i])->buffer);
  for (int i = 0; i < b->alloc_buffers->size; i++) free_buffer(I, (const tir_Buffer *)b->alloc_buffers->items[i]);
  return rc;
}

static int exec(Interp *I, const tir_Node *s) {
  if (I->failed) return -1;
  switch (s->kind) {
    case TIR_SeqStmt: {
      const tir_Array *a = ((const tir_SeqStmt *)s)->seq;
      for (int i = 0; i < a->size; i++)
        if (exec(I, a->items[i])) return -1;
      return 0;
    }
    case TIR_For: {
      const tir_For *f = (const tir_For *)s;
      int64_t lo = eval(I, f->min, 0).i, ext = eval(I, f->extent, 0).i;
      int slot = var_slot(I, &f->loop_var->hdr);
      int cd = f->kind == TIR_FOR_THREAD_BINDING ? coord_of_tag(f->thread_tag) : -1;
      int tl = f->kind == TIR_FOR_THREAD_BINDING && strncmp(f->thread_tag, "threadIdx", 9) == 0;
      int64_t saved = cd >= 0 ? I->coords[cd] : 0;
      I->thread_loops += tl;
      for (int64_t i = 0; i < ext; i++) {
        if (interrupt_requested) {
          interrupt_requested = 0;
          I->thread_loops -= tl;
          return fail(I, s, "interrupted");
        }
        I->vals[slot].i = lo + i;
        if (cd >= 0) I->coords[cd] = i;
        if (exec(I, f->body)) {
          I->thread_loops -= tl;
          return -1;
        }
      }
      I->thread_loops -= tl;
      if (cd >= 0) I->coords[cd] = saved;
      return I->failed ? -1 : 0;
    }
    case TIR_BlockRealize: return exec_block(I, (const tir_BlockRealize *)s);
    case TIR_BufferStore: return store(I, (const tir_BufferStore *)s);
    case TIR_IfThenElse: {
      const tir_IfThenElse *f = (const tir_IfThenElse *)s;
      int64_t c = eval(I, f->cond, 0).i;
      if (I->failed) return -1;
      if (c) return exec(I, f->then_case);
      return f->else_case ? exec(I, f->else_case) : 0;
    }
    case TIR_LetStmt: {
      const tir_LetStmt *l = (const tir_LetStmt *)s;
      set_var(I, l->var, eval(I, l->value, 0));
      return exec(I, l->body);
    }
    case TIR_Evaluate: {
      const tir_Node *v = ((const tir_Evaluate *)s)->value;
      if (v->kind == TIR_Call) {
        const char *op = ((const tir_Call *)v)->op;
        /* barriers are no-ops when threads run one after another */
        if (strcmp(op, "tvm_storage_sync") == 0 || strcmp(op, "syncthreads") == 0) return 0;
        int rc = exec_async_builtin(I, (const tir_Call *)v);
        if (rc != 1) return rc;
      }
      eval(I, v, 0);
      return I->failed ? -1 : 0;
    }
    case TIR_AttrStmt: {
      const tir_AttrStmt *a = (const tir_AttrStmt *)s;
      if (strcmp(a->key, "cluster_dims") == 0) return cluster_fail(I, s, "a cluster launch (AttrStmt cluster_dims)");
      if (strcmp(a->key, "thread_extent") == 0 && a->node && a->node->kind == TIR_IterVar) {
        /* a launch dimension: threads run one after another */
        const tir_IterVar *iv = (const tir_IterVar *)a->node;
        int64_t ext = eval(I, a->value, 0).i;
        int slot = var_slot(I, &iv->var->hdr);
        int is_thread = strncmp(iv->thread_tag, "threadIdx", 9) == 0;
        int cd = coord_of_tag(iv->thread_tag);
        I->thread_depth += is_thread;
        for (int64_t i = 0; i < ext; i++) {
          I->vals[slot].i = i;
          if (cd >= 0) I->coords[cd] = i;
          if (exec(I, a->body)) {
            I->thread_depth -= is_thread;
            return -1;
          }
        }
        I->thread_depth -= is_thread;
        if (cd >= 0) I->coords[cd] = 0;
        return 0;
      }
      if (strcmp(a->key, "async_scope") == 0 && I->async) {
        I->async->in_scope++;
        int rc = exec(I, a->body);
        I->async->in_scope--;
        return rc;
      }
      return exec(I, a->body);
    }
    case TIR_Allocate: {
      const tir_Allocate *a = (const tir_Allocate *)s;
      /* lowered code whose threads share memory: running the threads one after another (each
       * with its own copy) would give wrong results -- that is tir.simulate's job */
      if (I->thread_depth > 0 && (tir_scope_is_shared(a->buffer->scope) || tir_scope_is_fragment(a->buffer->scope)))
        return fail(I, s,
                    "buffer %s (scope %s) lives inside a thread launch of lowered code: threads that share memory or work as a "
                    "warp cannot run one after another; run the function before lowering, or use tir.simulate (threads in "
                    "lockstep)",
                    a->buffer->name, a->buffer->scope);
      if (alloc_buffer(I, a->buffer)) return -1;
      int rc = exec(I, a->body);
      free_buffer(I, a->buffer);
      return rc;
    }
    case TIR_DeclBuffer: {
      /* a view of its data's storage (TVM DeclBuffer): it must fit in that storage */
      const tir_DeclBuffer *d = (const tir_DeclBuffer *)s;
      Storage *st = buffer_storage(I, d->buffer, s);
      if (!st) return -1;
      int64_t need = shape_elems(I, d->buffer);
      if (I->failed) return -1;
      int64_t have = st->n * (int64_t)tir_dtype_bytes(st->dtype), need_b = need * (int64_t)tir_dtype_bytes(tir_dtype_element(d->buffer->hdr.dtype));
      if (need_b > have || eval(I, d->buffer->elem_offset, 0).i < 0)
        return fail(I, s, "decl_buffer %s needs %lld elements of its data (elem_offset included), but %s holds %lld", d->buffer->name,
                    (long long)need, st->name ? st->name : "the storage", (long long)st->n);
      return exec(I, d->body);
    }
    case TIR_Block: return fail(I, s, "a block must be realized (BlockRealize) to run");
    default: return fail(I, s, "the interpreter cannot run a %s statement", tir_kind_name(s->kind));
  }
}

int tir_check_args(const tir_PrimFunc *f, const tir_InterpArg *args, int nargs, int require_dev, const char *who) {
  if (nargs != f->params->size)
    return tir_error_set(TIR_ERR_RUNTIME, who, "function '%s' takes %d argument(s), got %d", f->name, f->params->size, nargs);
  /* symbolic dims: var -> value (from scalar integer parameters, then from the first array
   * dimension that is exactly the variable) */
  const tir_Node *sym_v[64];
  int64_t sym_x[64];
  int n_sym = 0;
  for (int i = 0; i < nargs; i++) {
    const tir_Node *p = f->params->items[i];
    if (p->kind == TIR_Var && tir_dtype_is_int(p->dtype) && n_sym < 64) {
      sym_v[n_sym] = p;
      sym_x[n_sym++] = args[i].ival;
    }
  }
  for (int i = 0; i < nargs; i++) {
    const tir_Node *p = f->params->items[i];
    if (p->kind != TIR_Buffer) continue;
    const tir_Buffer *b = (const tir_Buffer *)p;
    const tir_NDArray *a = args[i].array;
    char s1[32], s2[32];
    if (!a) return tir_error_set(TIR_ERR_RUNTIME, who, "argument %d (%s) must be an array", i + 1, b->name);
    if (!tir_dtype_eq(a->dtype, b->hdr.dtype))
      return tir_error_set(TIR_ERR_RUNTIME, who, "argument %d (%s): expected dtype %s, got %s", i + 1, b->name,
                           tir_dtype_str(b->hdr.dtype, s1), tir_dtype_str(a->dtype, s2));
    if (a->ndim != b->shape->size)
      return tir_error_set(TIR_ERR_RUNTIME, who, "argument %d (%s): expected %d dimensions, got %d", i + 1, b->name,
                           b->shape->size, a->ndim);
    for (int d = 0; d < a->ndim; d++) {
      const tir_Node *dim = b->shape->items[d];
      int64_t v;
      if (tir_is_const_int(dim, &v)) {
        if (v != a->shape[d]) {
          tir_StrBuf sb;
          tir_sb_init(&sb);
          for (int k = 0; k < b->shape->size; k++) {
            char *e = tir_print_expr(b->shape->items[k]);
            tir_sb_printf(&sb, "%s%s", k ? ", " : "", e);
            free(e);
          }
          tir_StrBuf got;
          tir_sb_init(&got);
          for (int k = 0; k < a->ndim; k++) tir_sb_printf(&got, "%s%lld", k ? ", " : "", (long long)a->shape[k]);
          tir_error_set(TIR_ERR_RUNTIME, who, "argument %d (%s): expected shape (%s), got (%s)", i + 1, b->name, sb.data,
                        got.data);
          tir_sb_free(&sb);
          tir_sb_free(&got);
          return -1;
        }
      } else if (dim->kind == TIR_Var) {
        int found = 0;
        for (int k = 0; k < n_sym; k++)
          if (sym_v[k] == dim) {
            found = 1;
            if (sym_x[k] != a->shape[d])
              return tir_error_set(TIR_ERR_RUNTIME, who, "argument %d (%s): dimension %s is %lld here but %lld in another argument",
                                   i + 1, b->name, ((const tir_Var *)dim)->name, (long long)a->shape[d], (long long)sym_x[k]);
          }
        if (!found && n_sym < 64) {
          sym_v[n_sym] = dim;
          sym_x[n_sym++] = a->shape[d];
        }
      }
    }
  }
  /* dimensions given by expressions (n * 2, n + 1): evaluated with the values bound above */
  for (int i = 0; i < nargs; i++) {
    const tir_Node *p = f->params->items[i];
    if (p->kind != TIR_Buffer) continue;
    const tir_Buffer *b = (const tir_Buffer *)p;
    const tir_NDArray *a = args[i].array;
    for (int d = 0; d < a->ndim; d++) {
      const tir_Node *dim = b->shape->items[d];
      int64_t v;
      if (tir_is_const_int(dim, &v) || dim->kind == TIR_Var) continue;
      tir_Var *vars[64];
      tir_Node *vals[64];
      for (int k = 0; k < n_sym; k++) {
        vars[k] = (tir_Var *)sym_v[k];
        vals[k] = tir_int_imm(sym_v[k]->dtype, sym_x[k]);
      }
      tir_Node *sub = tir_substitute(dim, n_sym, vars, vals);
      tir_Node *c = tir_simplify(NULL, sub);
      tir_release(sub);
      for (int k = 0; k < n_sym; k++) tir_release(vals[k]);
      int ok = tir_is_const_int(c, &v);
      char *e = tir_print_expr(dim);
      tir_release(c);
      if (!ok) {
        tir_error_set(TIR_ERR_RUNTIME, who,
                      "argument %d (%s): dimension %d is %s, whose variables no argument gives (pass them as scalar parameters "
                      "or as a dimension of their own)",
                      i + 1, b->name, d + 1, e);
        free(e);
        return -1;
      }
      if (v != a->shape[d]) {
        tir_error_set(TIR_ERR_RUNTIME, who, "argument %d (%s): dimension %d is %s = %lld, got %lld", i + 1, b->name, d + 1, e,
                      (long long)v, (long long)a->shape[d]);
        free(e);
        return -1;
      }
      free(e);
    }
  }
  /* devices last: a shape or dtype mistake is the more useful message */
  for (int i = 0; i < nargs && require_dev >= 0; i++) {
    const tir_Node *p = f->params->items[i];
    const tir_NDArray *a = args[i].array;
    if (p->kind == TIR_Buffer && a->dev.type != require_dev)
      return tir_error_set(TIR_ERR_RUNTIME, who, "argument %d (%s) is on the %s; expected an array on the %s", i + 1,
                           ((const tir_Buffer *)p)->name, a->dev.type == TIR_DEV_CPU ? "host (cpu)" : "GPU (cuda)",
                           require_dev == TIR_DEV_CPU ? "host (cpu)" : "GPU (cuda)");
  }
  return 0;
}

int tir_interpret(const tir_PrimFunc *f, const tir_InterpArg *args, int nargs) {
  return tir_interpret_opts(f, args, nargs, NULL);
}

int tir_interpret_opts(const tir_PrimFunc *f, const tir_InterpArg *args, int nargs, const tir_InterpOptions *opts) {
  interrupt_requested = 0;
  if (tir_check_args(f, args, nargs, TIR_DEV_CPU, "interpret") != 0) return -1;
  Interp I;
  memset(&I, 0, sizeof I);
  I.func = f;
  I.async = calloc(1, sizeof *I.async);
  I.async->deferred = opts && opts->async_deferred;
  for (int i = 0; i < nargs; i++) {
    const tir_Node *p = f->params->items[i];
    if (p->kind == TIR_Buffer) {
      const tir_Buffer *b = (const tir_Buffer *)p;
      const tir_NDArray *a = args[i].array;
      Storage st = {a->data, tir_dtype_element(a->dtype), tir_nd_numel(a) * a->dtype.lanes, 0, b->name};
      add_storage(&I, b->data, st);
      for (int d = 0; d < b->shape->size; d++)
        if (b->shape->items[d]->kind == TIR_Var) set_var(&I, (const tir_Var *)b->shape->items[d], (Val){.i = a->shape[d]});
    } else {
      const tir_Var *v = (const tir_Var *)p;
      Val x;
      if (is_f(v->hdr.dtype)) x.f = args[i].fval;
      else x.i = args[i].ival;
      set_var(&I, v, norm(v->hdr.dtype, x));
    }
  }
  int rc = exec(&I, f->body);
  if (!rc && !I.failed && I.async->deferred) {
    int left = I.async->open.n;
    for (int i = 0; i < I.async->n_closed; i++) left += I.async->closed[i].n;
    if (left) fail(&I, NULL, "%d async copies were never waited for (ptx_wait_group)", left);
  }
  async_free(I.async);
  for (int i = 0; i < I.n_st; i++)
    if (I.storages[i].owned) free(I.storages[i].base);
  pmap_free(&I.vars);
  pmap_free(&I.stores);
  free(I.vals);
  free(I.storages);
  return rc || I.failed ? -1 : 0;
}
