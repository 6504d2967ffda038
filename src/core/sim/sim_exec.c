/* sim_exec.c -- statements and expressions over the threads of one CTA, in lockstep.
 *
 * An expression is evaluated for all active threads at once (a vector of SVal indexed by
 * thread id), so the tree is walked once per step, not once per thread.  Arithmetic follows
 * the interpreter's rules exactly (interp.c: integers wrap at their width, float32/16 and
 * bfloat16 results rounded after every operation), so results compare bit-exactly with it.
 * Control flow splits the active set: an if runs its branches on the threads whose condition
 * holds / fails, a loop runs while any thread still iterates.  An if whose two sides both have
 * threads and may wait on each other (warp specialization) runs as tasks (sim_task.c). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "tir/device_print.h"
#include "sim_internal.h"
#include "tir/extern.h"
#include "tir/runtime.h"

/* ---- scratch stacks ---- */
SVal *sim_vnew(Sim *S) {
  if (S->vtop == S->vcap) {
    int cap = S->vcap ? S->vcap * 2 : 64;
    S->vpool = realloc(S->vpool, sizeof *S->vpool * (size_t)cap);
    for (int i = S->vcap; i < cap; i++) S->vpool[i] = NULL;
    S->vcap = cap;
  }
  if (!S->vpool[S->vtop]) S->vpool[S->vtop] = calloc(SIM_MAX_THREADS, sizeof(SVal));
  return S->vpool[S->vtop++];
}

int *sim_inew(Sim *S) {
  if (S->itop == S->icap) {
    int cap = S->icap ? S->icap * 2 : 32;
    S->ipool = realloc(S->ipool, sizeof *S->ipool * (size_t)cap);
    for (int i = S->icap; i < cap; i++) S->ipool[i] = NULL;
    S->icap = cap;
  }
  if (!S->ipool[S->itop]) S->ipool[S->itop] = malloc(sizeof(int) * SIM_MAX_THREADS);
  return S->ipool[S->itop++];
}

/* ---- values (value.c: the interpreter's rules) ---- */
static int is_f(tir_DType t) { return tir_dtype_is_float(t); }

static void norm_vec(tir_DType t, SVal *r, const Act *a) {
  t = tir_dtype_element(t);
  if (t.code == TIR_DT_INT && t.bits == 64) return;
  if (t.code == TIR_DT_FLOAT && t.bits == 64) return;
  for (int k = 0; k < a->n; k++) r[a->ids[k]] = tir_value_norm(t, r[a->ids[k]]);
}

/* ---- variables ---- */
SVal *sim_var(Sim *S, const tir_Var *v, int create) {
  int *slot = sim_map_slot(&S->vars, v, create);
  if (!slot) return NULL;
  if (*slot < 0) {
    if (S->n_vv == S->cap_vv) {
      S->cap_vv = S->cap_vv ? S->cap_vv * 2 : 64;
      S->vv = realloc(S->vv, sizeof *S->vv * (size_t)S->cap_vv);
    }
    S->vv[S->n_vv] = calloc(SIM_MAX_THREADS, sizeof(SVal));
    *slot = S->n_vv++;
  }
  return S->vv[*slot];
}

/* ---- storage lookup ---- */
Store *sim_store_of(Sim *S, const tir_Buffer *b, const tir_Node *where) {
  int *slot = sim_map_slot(&S->stmap, b->data, 0);
  if (!slot || *slot < 0 || !S->st[*slot]->base) {
    sim_fail(S, where, "buffer %s is not allocated here (no storage bound to its data)", b->name);
    return NULL;
  }
  return S->st[*slot];
}

/* Flat element index of an access for every active thread (indices at `lane`). */
static SVal *flat_index(Sim *S, const tir_Buffer *b, const tir_Array *idx, int lane, const Act *a, const tir_Node *where) {
  if (idx->size == 1) return sim_eval(S, idx->items[0], lane, a);
  if (b->shape->size != idx->size) {
    sim_fail(S, where, "buffer %s has %d dimensions but is accessed with %d indices", b->name, b->shape->size, idx->size);
    return NULL;
  }
  /* multi-dimensional (not flattened): row-major over the shape, or the given strides */
  SVal *r = sim_vnew(S);
  int mark = S->vtop;
  for (int k = 0; k < a->n; k++) r[a->ids[k]].i = 0;
  int64_t stride = 1;
  for (int d = idx->size - 1; d >= 0 && !S->fatal; d--) {
    Act one = {S->all_ids, 1};
    int64_t st = b->strides->size == idx->size ? sim_eval(S, b->strides->items[d], 0, &one)[0].i : stride;
    SVal *x = sim_eval(S, idx->items[d], lane, a);
    if (S->fatal) break;
    for (int k = 0; k < a->n; k++) r[a->ids[k]].i += x[a->ids[k]].i * st;
    if (b->strides->size != idx->size) stride *= sim_eval(S, b->shape->items[d], 0, &one)[0].i;
    S->vtop = mark;
  }
  return S->fatal ? NULL : r;
}

static int vector_index(const tir_Array *idx) {
  for (int i = 0; i < idx->size; i++)
    if (idx->items[i]->dtype.lanes > 1) return 1;
  return 0;
}

static SVal *load(Sim *S, const tir_BufferLoad *l, int lane, const Act *a) {
  Store *st = sim_store_of(S, l->buffer, &l->hdr);
  if (!st) return NULL;
  if (st->kind == ST_FRAG || st->kind == ST_WGACC) {
    sim_fail(S, &l->hdr, "%s %s can only be used through the %s builtins (the codegen declares %s, not arrays)",
             st->kind == ST_FRAG ? "wmma fragment" : "wgmma accumulator", l->buffer->name, st->kind == ST_FRAG ? "wmma" : "wgmma",
             st->kind == ST_FRAG ? "fragments" : "the registers of one thread");
    return NULL;
  }
  SVal *r = sim_vnew(S);
  int mark = S->vtop;
  int vec = vector_index(l->indices);
  SVal *ix = flat_index(S, l->buffer, l->indices, vec ? lane : 0, a, &l->hdr);
  if (!ix) return NULL;
  tir_DType lt = tir_dtype_element(l->hdr.dtype);
  int blanes = l->buffer->hdr.dtype.lanes;
  for (int k = 0; k < a->n && !S->fatal; k++) {
    int t = a->ids[k];
    int64_t el = ix[t].i;
    if (blanes > 1 && !vec) el = el * blanes + lane;
    r[t].i = 0;
    if (sim_load_elem(S, st, el, t, lt, &r[t])) return NULL;
  }
  S->vtop = mark;
  return S->fatal ? NULL : r;
}

/* ---- expressions ---- */
static SVal *binop(Sim *S, const tir_Node *e, int lane, const Act *a) {
  const tir_Add *b = (const tir_Add *)e;
  tir_DType ot = tir_dtype_element(b->a->dtype);
  SVal *r = sim_vnew(S);
  int mark = S->vtop;
  SVal *x = sim_eval(S, b->a, lane, a);
  SVal *y = x ? sim_eval(S, b->b, lane, a) : NULL;
  if (!y) return NULL;
  for (int k = 0; k < a->n; k++) {
    int t = a->ids[k];
    if (tir_value_binop(e->kind, ot, x[t], y[t], &r[t]) == TIR_VALUE_DIV_BY_ZERO) {
      char who[96];
      sim_fail(S, e, "integer division by zero in %s", sim_thread_name(S, t, who, sizeof who));
      return NULL;
    }
  }
  S->vtop = mark;
  return r;
}

/* The threads of `a` whose value in c is nonzero (want = 1) or zero (want = 0). */
static Act split(Sim *S, const Act *a, const SVal *c, int want) {
  int *ids = sim_inew(S);
  int n = 0;
  for (int k = 0; k < a->n; k++)
    if ((c[a->ids[k]].i != 0) == want) ids[n++] = a->ids[k];
  return (Act){ids, n};
}

static SVal *fill(Sim *S, const Act *a, SVal v) {
  SVal *r = sim_vnew(S);
  for (int k = 0; k < a->n; k++) r[a->ids[k]] = v;
  return r;
}

/* call_extern / call_pure_extern: the registered CPU model, once per active thread */
static SVal *call_extern(Sim *S, const tir_Call *c, int lane, const Act *a) {
  tir_ExternModelFn model;
  void *ctx = NULL;
  char err[512];
  int n = tir_extern_prepare(c, &model, &ctx, err, sizeof err);
  if (n < 0) {
    sim_fail(S, &c->hdr, "%s", err);
    return NULL;
  }
  SVal *r = sim_vnew(S);
  int mark = S->vtop;
  SVal *x[TIR_EXTERN_MAX_ARGS];
  for (int i = 0; i < n; i++)
    if (!(x[i] = sim_eval(S, c->args->items[i + 1], lane, a))) return NULL;
  tir_DType t = tir_dtype_element(c->hdr.dtype);
  for (int k = 0; k < a->n; k++) {
    int id = a->ids[k];
    tir_ExternValue av[TIR_EXTERN_MAX_ARGS], ret = {c->hdr.dtype, 0, 0};
    for (int i = 0; i < n; i++) {
      tir_DType at = c->args->items[i + 1]->dtype;
      av[i] = (tir_ExternValue){at, is_f(at) ? 0 : x[i][id].i, is_f(at) ? x[i][id].f : 0};
    }
    if (model(ctx, tir_extern_call_name(&c->hdr), n, av, &ret, err, sizeof err)) {
      sim_fail(S, &c->hdr, "the CPU model of %s '%s' failed (thread %d): %s", c->op, tir_extern_call_name(&c->hdr), id, err);
      return NULL;
    }
    SVal v = {0};
    if (is_f(t)) v.f = ret.f;
    else v.i = ret.i;
    r[id] = tir_value_norm(t, v);
  }
  S->vtop = mark;
  return r;
}

/* tir_print (include/tir/device_print.h): each active thread that passes the filter prints, in
** thread-index order (the GPU's order between threads is unspecified). */
static SVal *device_print(Sim *S, const tir_Call *c, int lane, const Act *a) {
  int n = c->args->size - 1 - TIR_PRINT_FILTER_ARGS;
  const tir_Node *f0 = c->args->items[0];
  if (n < 0 || n > 64 || f0->kind != TIR_StringImm) {
    sim_fail(S, &c->hdr, "tir_print needs a format string, 6 filter coordinates and at most 64 values");
    return NULL;
  }
  int mark = S->vtop;
  SVal *f[TIR_PRINT_FILTER_ARGS], *x[64];
  for (int d = 0; d < TIR_PRINT_FILTER_ARGS; d++)
    if (!(f[d] = sim_eval(S, c->args->items[1 + d], lane, a))) return NULL;
  for (int k = 0; k < n; k++)
    if (!(x[k] = sim_eval(S, c->args->items[1 + TIR_PRINT_FILTER_ARGS + k], lane, a))) return NULL;
  for (int q = 0; q < a->n; q++) {
    int id = a->ids[q];
    int64_t filter[TIR_PRINT_FILTER_ARGS], coords[TIR_PRINT_FILTER_ARGS] = {
        id % S->bdim[0], id / S->bdim[0] % S->bdim[1], id / (S->bdim[0] * S->bdim[1]), S->cta[0], S->cta[1], S->cta[2]};
    for (int d = 0; d < TIR_PRINT_FILTER_ARGS; d++) filter[d] = f[d][id].i;
    if (!tir_print_selected(filter, coords)) continue;
    tir_PrintValue v[64];
    for (int k = 0; k < n; k++) {
      tir_DType t = c->args->items[1 + TIR_PRINT_FILTER_ARGS + k]->dtype;
      v[k].is_float = is_f(t);
      v[k].i = x[k][id].i;
      v[k].f = v[k].is_float ? x[k][id].f : 0;
    }
    tir_print_emit(((const tir_StringImm *)f0)->value, v, n);
  }
  S->vtop = mark;
  return sim_vnew(S);
}

static SVal *call(Sim *S, const tir_Call *c, int lane, const Act *a) {
  const char *op = c->op;
  int n = c->args->size;
  tir_DType t = tir_dtype_element(c->hdr.dtype);
  if (strcmp(op, "if_then_else") == 0 && n == 3) {
    /* only the taken side is evaluated per thread (the codegen emits ?:) */
    SVal *r = sim_vnew(S);
    int vmark = S->vtop, imark = S->itop;
    SVal *cond = sim_eval(S, c->args->items[0], lane, a);
    if (!cond) return NULL;
    for (int side = 0; side < 2; side++) {
      Act sub = split(S, a, cond, side == 0);
      if (!sub.n) continue;
      SVal *v = sim_eval(S, c->args->items[side + 1], lane, &sub);
      if (!v) return NULL;
      for (int k = 0; k < sub.n; k++) r[sub.ids[k]] = v[sub.ids[k]];
    }
    S->vtop = vmark;
    S->itop = imark;
    return r;
  }
  if ((strcmp(op, "likely") == 0 || strcmp(op, "tir.likely") == 0) && n == 1) return sim_eval(S, c->args->items[0], lane, a);
  if (tir_builtin_shfl_mode(op) >= 0) return sim_shfl(S, c, tir_builtin_shfl_mode(op), a);
  if (tir_builtin_info(op) && tir_builtin_info(op)->id == TIR_BI_TIR_GRID_ARRIVE_LAST) return sim_grid_arrive(S, c, a);
  if (tir_builtin_info(op) && tir_builtin_info(op)->id == TIR_BI_TIR_GRID_WAIT) return sim_grid_wait(S, c, a);
  if (strcmp(op, "tir_lane_id") == 0 && n == 0) {
    /* %laneid: the thread's position in its warp (threads are numbered x-fastest) */
    SVal *r = sim_vnew(S);
    for (int k = 0; k < a->n; k++) r[a->ids[k]].i = a->ids[k] % 32;
    return r;
  }
  if (tir_builtin_info(op) && tir_builtin_info(op)->id == TIR_BI_TIR_WARPGROUP_LANE && n == 0) {
    /* the thread's position in its warpgroup (128 consecutive threads, x-fastest) */
    SVal *r = sim_vnew(S);
    for (int k = 0; k < a->n; k++) r[a->ids[k]].i = a->ids[k] % 128;
    return r;
  }
  if (strcmp(op, "address_of") == 0) {
    sim_fail(S, &c->hdr, "address_of(...) is only valid as an operand of a builtin that takes addresses (ptx_cp_async, ...)");
    return NULL;
  }
  if (tir_math_builtin(op) && n <= 2) {
    SVal *r = sim_vnew(S);
    int mark = S->vtop;
    SVal *x = sim_eval(S, c->args->items[0], lane, a);
    SVal *y = x && n > 1 ? sim_eval(S, c->args->items[1], lane, a) : x;
    if (!y) return NULL;
    tir_DType at[2] = {c->args->items[0]->dtype, c->args->items[n - 1]->dtype};
    int rc = TIR_VALUE_OK;
    for (int k = 0; k < a->n && rc == TIR_VALUE_OK; k++) {
      int id = a->ids[k];
      SVal v[2] = {x[id], y[id]};
      rc = tir_value_builtin(op, t, n, at, v, &r[id]);
    }
    if (rc == TIR_VALUE_BAD_DTYPE) {
      char ts[32];
      sim_fail(S, &c->hdr, "builtin '%s' cannot compute a %s (math builtins need a float dtype)", op, tir_dtype_str(t, ts));
      return NULL;
    }
    if (rc == TIR_VALUE_OK) {
      S->vtop = mark;
      return r;
    }
  }
  if (strcmp(op, "call_extern") == 0 || strcmp(op, "call_pure_extern") == 0) return call_extern(S, c, lane, a);
  if (strcmp(op, "tir_print") == 0) return device_print(S, c, lane, a);
  if (strcmp(op, "reinterpret") == 0) {
    char err[256];
    if (tir_reinterpret_check(c, err, sizeof err)) {
      sim_fail(S, &c->hdr, "%s", err);
      return NULL;
    }
    const tir_Node *v = c->args->items[0];
    int lanes = v->dtype.lanes, bits = v->dtype.bits;
    uint64_t mask = bits == 64 ? ~0ull : ((1ull << bits) - 1);
    /* the codegen makes a vector load one word: its first element must be word-aligned */
    tir_Node *base0 = lanes > 1 && v->kind == TIR_BufferLoad && ((const tir_BufferLoad *)v)->indices->size == 1
                          ? tir_unit_ramp_base(((const tir_BufferLoad *)v)->indices->items[0])
                          : NULL;
    if (base0) {
      int mark = S->vtop;
      SVal *b0 = sim_eval(S, base0, lane, a);
      tir_release(base0);
      if (!b0) return NULL;
      for (int k = 0; k < a->n; k++)
        if (b0[a->ids[k]].i % lanes != 0) {
          sim_fail(S, &c->hdr, "reinterpret: thread %d loads %s from element %lld, not a multiple of %d: the %d-bit load is misaligned",
                   a->ids[k], ((const tir_BufferLoad *)v)->buffer->name, (long long)b0[a->ids[k]].i, lanes, bits * lanes);
          return NULL;
        }
      S->vtop = mark;
    }
    SVal *r = sim_vnew(S);
    for (int k = 0; k < a->n; k++) r[a->ids[k]].i = 0;
    for (int l = 0; l < lanes; l++) {
      int mark = S->vtop;
      SVal *x = sim_eval(S, v, l, a);
      if (!x) return NULL;
      for (int k = 0; k < a->n; k++) r[a->ids[k]].i = (int64_t)((uint64_t)r[a->ids[k]].i | (((uint64_t)x[a->ids[k]].i & mask) << (bits * l)));
      S->vtop = mark;
    }
    for (int k = 0; k < a->n; k++) r[a->ids[k]] = sim_norm(t, r[a->ids[k]]);
    return r;
  }
  if ((strcmp(op, "ptx_dp4a") == 0 && n == 5) || (strcmp(op, "ptx_prmt") == 0 && n == 3)) {
    /* lane by lane, the same functions as the interpreter (builtin.c) */
    int dp = op[4] == 'd', as = 1, bs = 1;
    if (dp) {
      as = tir_dp4a_type_signed(c->args->items[3]);
      bs = tir_dp4a_type_signed(c->args->items[4]);
      if (as < 0 || bs < 0) {
        sim_fail(S, &c->hdr, "ptx_dp4a: the operand types (arguments 4 and 5) must be \"s32\" or \"u32\"");
        return NULL;
      }
    }
    SVal *r = sim_vnew(S);
    int mark = S->vtop;
    SVal *x = sim_eval(S, c->args->items[0], lane, a);
    SVal *y = x ? sim_eval(S, c->args->items[1], lane, a) : NULL;
    SVal *z = y ? sim_eval(S, c->args->items[2], lane, a) : NULL;
    if (!z) return NULL;
    for (int k = 0; k < a->n; k++) {
      int id = a->ids[k];
      SVal v = {0};
      v.i = dp ? tir_dp4a((int32_t)x[id].i, (int32_t)y[id].i, (int32_t)z[id].i, as, bs)
               : (int32_t)tir_prmt((uint32_t)x[id].i, (uint32_t)y[id].i, (uint32_t)z[id].i);
      r[id] = tir_value_norm(t, v);
    }
    S->vtop = mark;
    return r;
  }
  sim_fail(S, &c->hdr, "the simulator does not know builtin '%s' with %d argument(s) here", op, n);
  return NULL;
}

SVal *sim_eval(Sim *S, const tir_Node *e, int lane, const Act *a) {
  if (S->fatal) return NULL;
  switch (e->kind) {
    case TIR_IntImm: return fill(S, a, (SVal){.i = ((const tir_IntImm *)e)->value});
    case TIR_FloatImm: return fill(S, a, (SVal){.f = ((const tir_FloatImm *)e)->value});
    case TIR_StringImm: return fill(S, a, (SVal){.i = 0});
    case TIR_Var: {
      SVal *v = sim_var(S, (const tir_Var *)e, 0);
      if (!v) sim_fail(S, e, "variable %s is used outside the scope that defines it", ((const tir_Var *)e)->name);
      return v;
    }
    case TIR_Add: case TIR_Sub: case TIR_Mul: case TIR_Div: case TIR_Mod: case TIR_FloorDiv: case TIR_FloorMod:
    case TIR_Min: case TIR_Max: case TIR_EQ: case TIR_NE: case TIR_LT: case TIR_LE: case TIR_GT: case TIR_GE:
      return binop(S, e, lane, a);
    case TIR_And:
    case TIR_Or: {
      /* the right side only where it decides (C's && and ||) */
      const tir_And *b = (const tir_And *)e;
      SVal *r = sim_vnew(S);
      int vmark = S->vtop, imark = S->itop;
      SVal *x = sim_eval(S, b->a, lane, a);
      if (!x) return NULL;
      int is_and = e->kind == TIR_And;
      for (int k = 0; k < a->n; k++) r[a->ids[k]].i = x[a->ids[k]].i != 0;
      Act rest = split(S, a, x, is_and);
      if (rest.n) {
        SVal *y = sim_eval(S, b->b, lane, &rest);
        if (!y) return NULL;
        for (int k = 0; k < rest.n; k++) r[rest.ids[k]].i = y[rest.ids[k]].i != 0;
      }
      S->vtop = vmark;
      S->itop = imark;
      return r;
    }
    case TIR_Not: {
      SVal *r = sim_vnew(S);
      int mark = S->vtop;
      SVal *x = sim_eval(S, ((const tir_Not *)e)->a, lane, a);
      if (!x) return NULL;
      for (int k = 0; k < a->n; k++) r[a->ids[k]].i = !x[a->ids[k]].i;
      S->vtop = mark;
      return r;
    }
    case TIR_Cast: {
      const tir_Cast *c = (const tir_Cast *)e;
      SVal *r = sim_vnew(S);
      int mark = S->vtop;
      SVal *x = sim_eval(S, c->value, lane, a);
      if (!x) return NULL;
      tir_DType to = tir_dtype_element(e->dtype), from = tir_dtype_element(c->value->dtype);
      for (int k = 0; k < a->n; k++) r[a->ids[k]] = tir_value_cast(to, from, x[a->ids[k]]);
      S->vtop = mark;
      return r;
    }
    case TIR_Select: {
      /* per thread only the side it selects, as the codegen's ?: runs (the interpreter evaluates
       * both, TIR's license, so an access that is unsafe on the other side shows there) */
      const tir_Select *s = (const tir_Select *)e;
      SVal *r = sim_vnew(S);
      int vmark = S->vtop, imark = S->itop;
      SVal *c = sim_eval(S, s->cond, lane, a);
      if (!c) return NULL;
      for (int side = 0; side < 2; side++) {
        Act sub = split(S, a, c, side == 0);
        if (!sub.n) continue;
        SVal *v = sim_eval(S, side == 0 ? s->true_value : s->false_value, lane, &sub);
        if (!v) return NULL;
        for (int k = 0; k < sub.n; k++) r[sub.ids[k]] = v[sub.ids[k]];
      }
      S->vtop = vmark;
      S->itop = imark;
      return r;
    }
    case TIR_BufferLoad: return load(S, (const tir_BufferLoad *)e, lane, a);
    case TIR_Call: return call(S, (const tir_Call *)e, lane, a);
    case TIR_Ramp: {
      const tir_Ramp *rp = (const tir_Ramp *)e;
      SVal *r = sim_vnew(S);
      int mark = S->vtop;
      SVal *b = sim_eval(S, rp->base, 0, a);
      SVal *s = b ? sim_eval(S, rp->stride, 0, a) : NULL;
      if (!s) return NULL;
      for (int k = 0; k < a->n; k++) r[a->ids[k]].i = b[a->ids[k]].i + (int64_t)lane * s[a->ids[k]].i;
      norm_vec(e->dtype, r, a);
      S->vtop = mark;
      return r;
    }
    case TIR_Broadcast: return sim_eval(S, ((const tir_Broadcast *)e)->value, 0, a);
    case TIR_Let: {
      const tir_Let *l = (const tir_Let *)e;
      int mark = S->vtop;
      SVal *x = sim_eval(S, l->value, lane, a);
      if (!x) return NULL;
      SVal *v = sim_var(S, l->var, 1);
      for (int k = 0; k < a->n; k++) v[a->ids[k]] = x[a->ids[k]];
      S->vtop = mark;
      return sim_eval(S, l->body, lane, a);
    }
    default: sim_fail(S, e, "the simulator cannot evaluate a %s expression", tir_kind_name(e->kind)); return NULL;
  }
}

/* ---- statements ---- */

/* Alignment of the vector accesses the codegen emits for a store (codegen_cuda.c: a
 * contiguous copy becomes one load and one store of `lanes * size` bytes; a contiguous load
 * scattered by the store one vector load; a computed vector of at least 4 bytes stored
 * contiguously one packed store).  Misaligned vector accesses fault on the GPU. */
static int raw_bytes_ok(int b) { return b == 2 || b == 4 || b == 8 || b == 16; }

static int check_vector_alignment(Sim *S, const tir_BufferStore *st, const Act *a) {
  const tir_Node *v = st->value, *ix = st->indices->items[0];
  int bytes = tir_dtype_bytes(v->dtype);
  if (!raw_bytes_ok(bytes)) return 0;
  int unit_store = ix->kind == TIR_Ramp && tir_is_one(((const tir_Ramp *)ix)->stride);
  const tir_BufferLoad *l = v->kind == TIR_BufferLoad ? (const tir_BufferLoad *)v : NULL;
  int load_side = l && l->indices->size == 1 && l->indices->items[0]->kind == TIR_Ramp &&
                  tir_is_one(((const tir_Ramp *)l->indices->items[0])->stride);
  if (!load_side && !(unit_store && bytes >= 4)) return 0;
  /* sides: 0 the load, 1 the store */
  int contiguous_store = load_side ? unit_store && tir_dtype_bytes(l->buffer->hdr.dtype) == tir_dtype_bytes(st->buffer->hdr.dtype)
                                   : 1;
  for (int side = load_side ? 0 : 1; side < (contiguous_store ? 2 : 1); side++) {
    const tir_Buffer *b = side ? st->buffer : l->buffer;
    const tir_Node *base = side ? ((const tir_Ramp *)ix)->base : ((const tir_Ramp *)l->indices->items[0])->base;
    Store *s = sim_store_of(S, b, &st->hdr);
    if (!s) return -1;
    int mark = S->vtop;
    SVal *x = sim_eval(S, base, 0, a);
    if (!x) return -1;
    for (int k = 0; k < a->n; k++) {
      int t = a->ids[k];
      int64_t byte = x[t].i * s->esize;
      if (byte % bytes) {
        char who[96];
        if (sim_issue(S, "misaligned", &st->hdr, t, NULL, -1, b->name, x[t].i, s->n,
                      "misaligned vector access: the codegen %s %s[%lld .. %lld] as one %d-byte %s, but its byte offset %lld is "
                      "not a multiple of %d (%s); the GPU faults (misaligned address)",
                      side ? "stores" : "loads", b->name, (long long)x[t].i, (long long)(x[t].i + v->dtype.lanes - 1), bytes,
                      side ? "store" : "load", (long long)byte, bytes, sim_thread_name(S, t, who, sizeof who)))
          return -1;
        break;
      }
    }
    S->vtop = mark;
  }
  return 0;
}

static int exec_store(Sim *S, const tir_BufferStore *st, const Act *a) {
  Store *s = sim_store_of(S, st->buffer, &st->hdr);
  if (!s) return -1;
  if (s->kind == ST_FRAG || s->kind == ST_WGACC)
    return sim_fail(S, &st->hdr, "%s %s can only be written through the %s builtins", s->kind == ST_FRAG ? "wmma fragment" : "wgmma accumulator",
                    st->buffer->name, s->kind == ST_FRAG ? "wmma" : "wgmma");
  int lanes = st->value->dtype.lanes;
  int vec = vector_index(st->indices);
  if (lanes > 1 && st->indices->size == 1 && check_vector_alignment(S, st, a)) return -1;
  /* all lanes' values and indices first (a vector store reads before it writes) */
  int mark = S->vtop;
  SVal *few[32];
  SVal **vals = lanes <= 16 ? few : malloc(sizeof(SVal *) * (size_t)lanes * 2);
  SVal **idx = vals + lanes;
  for (int l = 0; l < lanes; l++) {
    vals[l] = sim_vnew(S);
    idx[l] = sim_vnew(S);
  }
  int rc = 0;
  for (int l = 0; l < lanes && !rc; l++) {
    int m2 = S->vtop;
    SVal *v = sim_eval(S, st->value, l, a);
    if (!v) rc = -1;
    else
      for (int k = 0; k < a->n; k++) vals[l][a->ids[k]] = v[a->ids[k]];
    S->vtop = m2;
    if (rc || (l > 0 && !vec)) {
      if (!rc)
        for (int k = 0; k < a->n; k++) idx[l][a->ids[k]] = idx[0][a->ids[k]];
      continue;
    }
    SVal *x = flat_index(S, st->buffer, st->indices, vec ? l : 0, a, &st->hdr);
    if (!x) rc = -1;
    else
      for (int k = 0; k < a->n; k++) idx[l][a->ids[k]] = x[a->ids[k]];
    S->vtop = m2;
  }
  tir_DType vt = tir_dtype_element(st->value->dtype);
  int blanes = st->buffer->hdr.dtype.lanes;
  for (int l = 0; l < lanes && !rc; l++)
    for (int k = 0; k < a->n && !rc; k++) {
      int t = a->ids[k];
      int64_t el = idx[l][t].i;
      if (!vec && lanes > 1) el = el * (blanes > 1 ? blanes : lanes) + l;
      if (sim_store_elem(S, s, el, t, vt, vals[l][t])) rc = -1;
    }
  if (vals != few) free(vals);
  S->vtop = mark;
  return rc || S->fatal ? -1 : 0;
}

static int exec_for(Sim *S, const tir_For *f, const Act *a) {
  if (f->kind == TIR_FOR_THREAD_BINDING)
    return sim_fail(S, &f->hdr, "thread-bound loop %s was not lowered (simulate lowered code: tir.build or tir.lower)",
                    f->loop_var->name);
  int vmark = S->vtop, imark = S->itop;
  SVal *lo = sim_eval(S, f->min, 0, a);
  SVal *ext = lo ? sim_eval(S, f->extent, 0, a) : NULL;
  if (!ext) return -1;
  int64_t maxe = INT64_MIN, mine = INT64_MAX;
  for (int k = 0; k < a->n; k++) {
    int64_t e = ext[a->ids[k]].i;
    if (e > maxe) maxe = e;
    if (e < mine) mine = e;
  }
  SVal *v = sim_var(S, f->loop_var, 1);
  int rc = 0;
  for (int64_t i = 0; i < maxe && !rc; i++) {
    Act sub = *a;
    int im = S->itop;
    if (i >= mine) { /* threads whose trip count is shorter have left the loop */
      int *ids = sim_inew(S);
      int n = 0;
      for (int k = 0; k < a->n; k++)
        if (i < ext[a->ids[k]].i) ids[n++] = a->ids[k];
      sub = (Act){ids, n};
    }
    for (int k = 0; k < sub.n; k++) v[sub.ids[k]].i = lo[sub.ids[k]].i + i;
    rc = sim_exec(S, f->body, &sub);
    S->itop = im;
  }
  S->vtop = vmark;
  S->itop = imark;
  return rc;
}

static int exec_evaluate(Sim *S, const tir_Evaluate *ev, const Act *a) {
  const tir_Node *v = ev->value;
  if (v->kind == TIR_IntImm) return 0;
  if (v->kind == TIR_Call) {
    const tir_Call *c = (const tir_Call *)v;
    if (strcmp(c->op, "tvm_storage_sync") == 0 || strcmp(c->op, "syncthreads") == 0) return sim_barrier(S, &ev->hdr, a);
    if (sim_wait_kind(&ev->hdr)) return sim_wait_lockstep(S, ev, a);
    int rc = sim_sync_builtin(S, c, a);
    if (rc != 1) return rc;
    rc = sim_async_builtin(S, c, a);
    if (rc != 1) return rc;
    rc = sim_tma_builtin(S, c, a);
    if (rc != 1) return rc;
    rc = sim_warp_builtin(S, c, a);
    if (rc != 1) return rc;
    rc = sim_wgmma_builtin(S, c, a);
    if (rc != 1) return rc;
  }
  int mark = S->vtop;
  SVal *r = sim_eval(S, v, 0, a);
  S->vtop = mark;
  return r ? 0 : -1;
}

int sim_exec(Sim *S, const tir_Node *s, const Act *a) {
  if (S->fatal) return -1;
  if (a->n == 0) return 0;
  const tir_Node *saved = S->cur;
  S->cur = s;
  S->rep->statements++;
  int rc = 0;
  switch (s->kind) {
    case TIR_SeqStmt: {
      const tir_Array *q = ((const tir_SeqStmt *)s)->seq;
      S->rep->statements--; /* a sequence is not a statement of its own */
      for (int i = 0; i < q->size && !rc; i++) rc = sim_exec(S, q->items[i], a);
      break;
    }
    case TIR_For: rc = exec_for(S, (const tir_For *)s, a); break;
    case TIR_BufferStore:
      S->rep->thread_statements += a->n;
      rc = exec_store(S, (const tir_BufferStore *)s, a);
      break;
    case TIR_Evaluate:
      S->rep->thread_statements += a->n;
      rc = exec_evaluate(S, (const tir_Evaluate *)s, a);
      break;
    case TIR_IfThenElse: {
      const tir_IfThenElse *f = (const tir_IfThenElse *)s;
      int vmark = S->vtop, imark = S->itop;
      SVal *c = sim_eval(S, f->cond, 0, a);
      if (!c) {
        rc = -1;
        break;
      }
      Act yes = split(S, a, c, 1), no = split(S, a, c, 0);
      if (yes.n && no.n && f->else_case && !S->sched && (sim_sync_bits(S, s) & SIM_HAS_WAIT)) {
        rc = sim_task_region(S, f, &yes, &no);
      } else {
        rc = sim_exec(S, f->then_case, &yes);
        if (!rc && f->else_case) rc = sim_exec(S, f->else_case, &no);
      }
      S->vtop = vmark;
      S->itop = imark;
      break;
    }
    case TIR_LetStmt: {
      const tir_LetStmt *l = (const tir_LetStmt *)s;
      int mark = S->vtop;
      SVal *x = sim_eval(S, l->value, 0, a);
      if (!x) {
        rc = -1;
        break;
      }
      SVal *v = sim_var(S, l->var, 1);
      for (int k = 0; k < a->n; k++) v[a->ids[k]] = x[a->ids[k]];
      S->vtop = mark;
      rc = sim_exec(S, l->body, a);
      break;
    }
    case TIR_AttrStmt: {
      const tir_AttrStmt *at = (const tir_AttrStmt *)s;
      if (strcmp(at->key, "thread_extent") == 0 && at->node && at->node->kind == TIR_IterVar) {
        /* a launch dimension: its variable is the thread's (or CTA's) coordinate */
        const tir_IterVar *iv = (const tir_IterVar *)at->node;
        const char *tag = iv->thread_tag;
        SVal *v = sim_var(S, iv->var, 1);
        if (strncmp(tag, "threadIdx.", 10) == 0 && tag[10] >= 'x' && tag[10] <= 'z' && !tag[11]) {
          int d = tag[10] - 'x';
          for (int k = 0; k < a->n; k++) {
            int t = a->ids[k];
            v[t].i = d == 0 ? t % S->bdim[0] : d == 1 ? t / S->bdim[0] % S->bdim[1] : t / (S->bdim[0] * S->bdim[1]);
          }
        } else if (strncmp(tag, "blockIdx.", 9) == 0 && tag[9] >= 'x' && tag[9] <= 'z' && !tag[10]) {
          for (int k = 0; k < a->n; k++) v[a->ids[k]].i = S->cta[tag[9] - 'x'];
        } else {
          rc = sim_fail(S, s, "unsupported thread tag %s (the codegen knows threadIdx.x/y/z and blockIdx.x/y/z)", tag);
          break;
        }
      }
      S->rep->statements--;
      rc = sim_exec(S, at->body, a);
      break;
    }
    case TIR_Allocate: {
      const tir_Allocate *al = (const tir_Allocate *)s;
      rc = sim_alloc(S, al, a);
      if (!rc) rc = sim_exec(S, al->body, a);
      break;
    }
    case TIR_DeclBuffer: /* a view of its data's storage; accesses are checked against that */
      S->rep->statements--;
      rc = sim_exec(S, ((const tir_DeclBuffer *)s)->body, a);
      break;
    default: rc = sim_fail(S, s, "the simulator cannot run a %s statement (is the function lowered?)", tir_kind_name(s->kind)); break;
  }
  S->cur = saved;
  return rc || S->fatal ? -1 : 0;
}
