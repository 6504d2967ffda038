/* builtin.c -- the builtin registry (include/tir/builtins.def, docs/BUILTINS.md): what each
 * builtin call does to memory and which attributes it has, for the passes that reason about
 * calls (thread_sync, split_host_device) without knowing each builtin; and the math builtins'
 * rows (the function they compute, CUDA's name and accuracy) for value.c and the codegen. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "tir/error.h"
#include "tir/ir.h"
#include "tir/value.h"

/* functions of math rows that C's math.h lacks */
static double tir_rsqrt(double x) { return 1.0 / sqrt(x); }
static double tir_exp10(double x) { return pow(10.0, x); }
/* C leaves the sign of fmin(-0.0, +0.0) open: fixed here as -0.0 below +0.0 (value.h) */
double tir_fmin(double x, double y) {
  if (x == 0 && y == 0) return signbit(x) ? x : y;
  return fmin(x, y);
}
double tir_fmax(double x, double y) {
  if (x == 0 && y == 0) return signbit(x) ? y : x;
  return fmax(x, y);
}

/* the TIR_MATH rows of builtins.def */
static const tir_MathBuiltin math_builtins[] = {
#define TIR_BUILTIN(...)
#define TIR_MATH(id, op, arity, kind, f1, f2, cuda, ulp32, ulp64, doc) {op, arity, TIR_MATH_##kind, f1, f2, cuda, ulp32, ulp64},
#include "tir/builtins.def"
#undef TIR_MATH
#undef TIR_BUILTIN
};

const tir_MathBuiltin *tir_math_builtins(int *n) {
  *n = (int)(sizeof math_builtins / sizeof math_builtins[0]);
  return math_builtins;
}

const tir_MathBuiltin *tir_math_builtin(const char *name) {
  for (size_t k = 0; name && k < sizeof math_builtins / sizeof math_builtins[0]; k++)
    if (strcmp(name, math_builtins[k].name) == 0) return &math_builtins[k];
  return NULL;
}

int tir_math_builtin_check(const char *op, tir_DType t, int n, const char *prim) {
  const tir_MathBuiltin *m = tir_math_builtin(op);
  if (!m) return 0;
  char ts[32];
  tir_dtype_str(t, ts);
  if (m->arity != n)
    return tir_error_set(TIR_ERR_TYPE, prim, "builtin '%s' takes %d argument(s), got %d", op, m->arity, n);
  if ((m->kind == TIR_MATH_FLOAT || m->kind == TIR_MATH_ROUNDING) && !tir_dtype_is_float(t))
    return tir_error_set(TIR_ERR_TYPE, prim,
                         "math builtin '%s' computes in floating point, but the dtype given is %s: use a float dtype and "
                         "cast the result, e.g. T.cast(\"%s\", T.call(\"float32\", \"%s\", x))", op, ts, ts, op);
  if (m->kind == TIR_MATH_PRED && t.code != TIR_DT_BOOL)
    return tir_error_set(TIR_ERR_TYPE, prim, "builtin '%s' gives a bool, not %s", op, ts);
  if (m->kind == TIR_MATH_BITS && !tir_dtype_is_int(t))
    return tir_error_set(TIR_ERR_TYPE, prim, "bit operation '%s' needs an integer dtype, not %s", op, ts);
  return 0;
}

static const tir_BuiltinInfo table[] = {
#define TIR_BUILTIN(id, op, lo, hi, writes, flags, doc) {TIR_BI_##id, op, lo, hi, writes, flags, doc},
#include "tir/builtins.def"
#undef TIR_BUILTIN
};

const tir_BuiltinInfo *tir_builtin_table(void) { return table; }

const tir_BuiltinInfo *tir_builtin_info(const char *op) {
  if (!op) return NULL;
  for (int k = 0; k < TIR_BI_COUNT; k++)
    if (strcmp(op, table[k].op) == 0) return &table[k];
  return NULL;
}

int tir_builtin_has(const char *op, unsigned flags) {
  const tir_BuiltinInfo *b = tir_builtin_info(op);
  return b && (b->flags & flags) == flags;
}

int tir_builtin_is_float_math(const char *op) { return tir_builtin_has(op, TIR_BUILTIN_FLOAT_MATH); }

const tir_BufferLoad *tir_address_of_load(const tir_Node *e) {
  if (!e || e->kind != TIR_Call) return NULL;
  const tir_Call *c = (const tir_Call *)e;
  if (strcmp(c->op, "address_of") != 0 || c->args->size != 1 || c->args->items[0]->kind != TIR_BufferLoad) return NULL;
  return (const tir_BufferLoad *)c->args->items[0];
}

tir_Node *tir_address_of(tir_Node *load) { return tir_call(TIR_HANDLE, "address_of", tir_array_of(1, load)); }

int tir_builtin_writes_arg(const char *op, int i) {
  const tir_BuiltinInfo *b = tir_builtin_info(op);
  return b && i >= 0 && i < 32 && ((b->writes >> i) & 1u);
}

int32_t tir_dp4a(int32_t a, int32_t b, int32_t c, int a_signed, int b_signed) {
  uint32_t acc = (uint32_t)c;
  for (int i = 0; i < 4; i++) {
    uint32_t ab = ((uint32_t)a >> (8 * i)) & 0xffu, bb = ((uint32_t)b >> (8 * i)) & 0xffu;
    int32_t x = a_signed ? (int32_t)(int8_t)ab : (int32_t)ab, y = b_signed ? (int32_t)(int8_t)bb : (int32_t)bb;
    acc += (uint32_t)(x * y); /* |x * y| <= 65025: no overflow before the wrap of the sum */
  }
  return (int32_t)acc;
}

uint32_t tir_prmt(uint32_t a, uint32_t b, uint32_t sel) {
  uint64_t bytes = (uint64_t)a | ((uint64_t)b << 32);
  uint32_t d = 0;
  for (int i = 0; i < 4; i++) {
    unsigned nib = (sel >> (4 * i)) & 0xfu;
    uint32_t byte = (uint32_t)(bytes >> (8 * (nib & 7u))) & 0xffu;
    if (nib & 8u) byte = (byte & 0x80u) ? 0xffu : 0u;
    d |= byte << (8 * i);
  }
  return d;
}

int tir_dp4a_type_signed(const tir_Node *t) {
  if (!t || t->kind != TIR_StringImm) return -1;
  const char *v = ((const tir_StringImm *)t)->value;
  return strcmp(v, "s32") == 0 ? 1 : strcmp(v, "u32") == 0 ? 0 : -1;
}

/* PTX ISA 9.7.8.6 shfl.sync.{idx,bfly,up,down}.b32 as CUDA C's __shfl_*_sync (CUDA C++
 * Programming Guide, Warp Shuffle Functions; 64-bit values become two shuffles), in the mode
 * order of the builtins.def rows. */
static const char *const shfl_cuda[4] = {"__shfl_sync", "__shfl_xor_sync", "__shfl_up_sync", "__shfl_down_sync"};

int tir_builtin_shfl_mode(const char *op) {
  const tir_BuiltinInfo *b = tir_builtin_info(op);
  return b && (b->flags & TIR_BUILTIN_SHUFFLE) ? (int)(b->id - TIR_BI_PTX_SHFL_SYNC_IDX) : -1;
}

const char *tir_builtin_shfl_cuda(int mode) { return mode >= 0 && mode < 4 ? shfl_cuda[mode] : NULL; }

int tir_builtin_shfl_type_ok(tir_DType t) {
  return t.lanes == 1 && (t.bits == 32 || t.bits == 64) &&
         (t.code == TIR_DT_INT || t.code == TIR_DT_UINT || t.code == TIR_DT_FLOAT);
}

int tir_reinterpret_check(const tir_Call *c, char *err, size_t errlen) {
  if (c->args->size != 1) {
    snprintf(err, errlen, "reinterpret takes one argument");
    return -1;
  }
  tir_DType to = c->hdr.dtype, from = c->args->items[0]->dtype;
  int int_to = to.code == TIR_DT_INT || to.code == TIR_DT_UINT, int_from = from.code == TIR_DT_INT || from.code == TIR_DT_UINT;
  if (!int_to || !int_from || to.lanes != 1 || from.bits * from.lanes != to.bits || to.bits > 64) {
    char a[32], b[32];
    snprintf(err, errlen, "reinterpret from %s to %s: an integer vector becomes one integer of the same number of bits", tir_dtype_str(from, a),
             tir_dtype_str(to, b));
    return -1;
  }
  return 0;
}

tir_Node *tir_unit_ramp_base(const tir_Node *ix) {
  if (!ix) return NULL;
  if (ix->kind == TIR_Ramp) return tir_is_one(((const tir_Ramp *)ix)->stride) ? R(((const tir_Ramp *)ix)->base) : NULL;
  if (ix->kind == TIR_Mul) {
    /* x * Broadcast(1) (a unit stride a match_buffer view leaves in the flattened index) */
    const tir_Mul *m = (const tir_Mul *)ix;
    for (int side = 0; side < 2; side++) {
      const tir_Node *x = side ? m->b : m->a, *y = side ? m->a : m->b;
      if (x->kind == TIR_Broadcast && tir_is_one(((const tir_Broadcast *)x)->value)) return tir_unit_ramp_base(y);
    }
    return NULL;
  }
  if (ix->kind != TIR_Add) return NULL;
  const tir_Add *a = (const tir_Add *)ix;
  for (int side = 0; side < 2; side++) {
    const tir_Node *x = side ? a->b : a->a, *y = side ? a->a : a->b;
    if (x->kind != TIR_Broadcast) continue;
    tir_Node *b = tir_unit_ramp_base(y);
    if (b) return tir_add(b, R(((const tir_Broadcast *)x)->value));
  }
  return NULL;
}
