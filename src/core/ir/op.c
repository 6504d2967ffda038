/* op.c -- user-facing expression arithmetic: type matching and constant folding.
 *
 * Type rules follow TVM's BinaryOpMatchTypes (src/tir/op/op.cc): equal types pass;
 * a scalar meeting a vector is broadcast; int meeting float is cast to the float;
 * two ints (or two floats) of different widths are widened to the larger; bool meeting
 * a number is cast to it.  Folding follows TVM's arith/const_fold.h for the cases that
 * matter to index arithmetic (x+0, x*1, x*0 for ints, constant operands).
 */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "tir/error.h"
#include "tir/ir.h"
#include "tir/value.h"

static int64_t cval(const tir_Node *n) { return ((const tir_IntImm *)n)->value; }
static double fval(const tir_Node *n) { return ((const tir_FloatImm *)n)->value; }

tir_Node *tir_make_const(tir_DType t, double v) {
  if (t.lanes > 1) return tir_broadcast(tir_make_const(tir_dtype_element(t), v), t.lanes);
  if (tir_dtype_is_float(t)) return tir_float_imm(t, v);
  return tir_int_imm(t, tir_float_to_int_sat(v, t));
}

tir_Node *tir_make_zero(tir_DType t) { return tir_make_const(t, 0); }

tir_Node *tir_cast(tir_DType t, tir_Node *v) {
  if (!v) return NULL;
  if (tir_dtype_eq(v->dtype, t)) return v;
  if (v->dtype.lanes == 1 && t.lanes == 1) {
    int64_t iv;
    double fv;
    if (tir_is_const_int(v, &iv) || tir_is_const_float(v, &fv)) {
      /* folded by the interpreter's cast rules (value.c): int -> float rounds once, float -> int
       * saturates as cvt.rzi (NaN 0) */
      tir_Value x, r;
      if (tir_is_const_int(v, &iv)) x.i = iv;
      else x.f = fv;
      r = tir_value_cast(t, v->dtype, x);
      tir_release(v);
      return tir_dtype_is_float(t) ? tir_float_imm(t, r.f) : tir_int_imm(t, r.i);
    }
  }
  if (v->dtype.lanes == 1 && t.lanes > 1) {
    return tir_broadcast(tir_cast(tir_dtype_element(t), v), t.lanes);
  }
  if (v->kind == TIR_Broadcast && v->dtype.lanes == t.lanes) {
    tir_Broadcast *b = (tir_Broadcast *)v;
    tir_Node *inner = tir_cast(tir_dtype_element(t), R(b->value));
    tir_release(v);
    return tir_broadcast(inner, t.lanes);
  }
  return tir_cast_raw(t, v);
}

/* Brings a and b to one dtype.  Returns 0 on success, -1 (error set) otherwise. */
static int match_types(const char *opname, tir_Node **pa, tir_Node **pb) {
  tir_Node *a = *pa, *b = *pb;
  tir_DType ta = a->dtype, tb = b->dtype;
  if (tir_dtype_eq(ta, tb)) return 0;
  char sa[32], sb[32];
  if (tir_dtype_is_handle(ta) || tir_dtype_is_handle(tb) || tir_dtype_is_void(ta) ||
      tir_dtype_is_void(tb)) {
    return tir_error_set(TIR_ERR_TYPE, opname, "cannot combine %s and %s", tir_dtype_str(ta, sa),
                         tir_dtype_str(tb, sb));
  }
  if (ta.lanes != tb.lanes) {
    if (ta.lanes == 1) {
      a = *pa = tir_cast(tir_dtype_with_lanes(ta, tb.lanes), a);
      ta = a->dtype;
    } else if (tb.lanes == 1) {
      b = *pb = tir_cast(tir_dtype_with_lanes(tb, ta.lanes), b);
      tb = b->dtype;
    } else {
      return tir_error_set(TIR_ERR_TYPE, opname, "vector lanes differ: %s and %s", tir_dtype_str(ta, sa),
                           tir_dtype_str(tb, sb));
    }
    if (tir_dtype_eq(ta, tb)) return 0;
  }
  tir_DType target;
  int fa = tir_dtype_is_float(ta), fb = tir_dtype_is_float(tb);
  if (fa && !fb) target = ta;
  else if (fb && !fa) target = tb;
  else if (fa && fb) target = ta.bits >= tb.bits ? ta : tb;
  else if (tir_dtype_is_bool(ta)) target = tb;
  else if (tir_dtype_is_bool(tb)) target = ta;
  else {
    /* two integer types: the wider one; on equal width prefer signed */
    if (ta.bits != tb.bits) target = ta.bits > tb.bits ? ta : tb;
    else target = ta.code == TIR_DT_INT ? ta : tb;
  }
  *pa = tir_cast(target, a);
  *pb = tir_cast(target, b);
  return 0;
}

static tir_Node *fail2(tir_Node *a, tir_Node *b) {
  tir_release(a);
  tir_release(b);
  return NULL;
}

static const char *op_name(int kind) {
  switch (kind) {
    case TIR_Add: return "+";
    case TIR_Sub: return "-";
    case TIR_Mul: return "*";
    case TIR_Div: return "/";
    case TIR_Mod: return "truncmod";
    case TIR_FloorDiv: return "floordiv";
    case TIR_FloorMod: return "floormod";
    case TIR_Min: return "min";
    case TIR_Max: return "max";
    case TIR_And: return "and";
    case TIR_Or: return "or";
    default: return "compare";
  }
}

/* Folds when both are scalar constants or one is an identity; else NULL (nothing consumed). */
static tir_Node *try_fold(int kind, tir_Node *a, tir_Node *b) {
  tir_DType t = a->dtype;
  int ia = a->kind == TIR_IntImm, ib = b->kind == TIR_IntImm;
  int fa = a->kind == TIR_FloatImm, fb = b->kind == TIR_FloatImm;
  if ((ia && ib) || (fa && fb)) {
    /* the interpreter's rules (value.c), so that folding never changes a result */
    if (t.lanes != 1 || (fa && kind == TIR_Div && fval(b) == 0)) return NULL;
    tir_Value x, y, r;
    if (ia) x.i = cval(a), y.i = cval(b);
    else x.f = fval(a), y.f = fval(b);
    if (tir_value_binop(kind, t, x, y, &r) != TIR_VALUE_OK) return NULL;
    if (kind >= TIR_EQ && kind <= TIR_Or) return tir_bool_imm((int)r.i);
    return ia ? tir_int_imm(t, r.i) : tir_float_imm(t, r.f);
  }
  /* identities on integers (floats keep x+0 etc. for -0.0/NaN exactness) */
  if (ib && tir_dtype_is_int(t) && t.lanes == 1) {
    int64_t y = cval(b);
    if ((kind == TIR_Add || kind == TIR_Sub) && y == 0) return R(a);
    if ((kind == TIR_Mul || kind == TIR_FloorDiv || kind == TIR_Div) && y == 1) return R(a);
    if (kind == TIR_Mul && y == 0) return tir_int_imm(t, 0);
    if ((kind == TIR_FloorMod || kind == TIR_Mod) && y == 1) return tir_int_imm(t, 0);
  }
  if (ia && tir_dtype_is_int(t) && t.lanes == 1) {
    int64_t x = cval(a);
    if (kind == TIR_Add && x == 0) return R(b);
    if (kind == TIR_Mul && x == 1) return R(b);
    if (kind == TIR_Mul && x == 0) return tir_int_imm(t, 0);
  }
  if (tir_dtype_is_bool(t) && t.lanes == 1) {
    if (kind == TIR_And) {
      if (ia) return cval(a) ? R(b) : tir_bool_imm(0);
      if (ib) return cval(b) ? R(a) : tir_bool_imm(0);
    }
    if (kind == TIR_Or) {
      if (ia) return cval(a) ? tir_bool_imm(1) : R(b);
      if (ib) return cval(b) ? tir_bool_imm(1) : R(a);
    }
  }
  return NULL;
}

tir_Node *tir_binary(int kind, tir_Node *a, tir_Node *b) {
  if (!a || !b) return fail2(a, b);
  if (kind == TIR_And || kind == TIR_Or) {
    if (!tir_dtype_is_bool(tir_dtype_element(a->dtype))) a = tir_cast(tir_dtype_with_lanes(TIR_BOOL, a->dtype.lanes), a);
    if (!tir_dtype_is_bool(tir_dtype_element(b->dtype))) b = tir_cast(tir_dtype_with_lanes(TIR_BOOL, b->dtype.lanes), b);
  }
  if (match_types(op_name(kind), &a, &b) != 0) return fail2(a, b);
  if (tir_dtype_is_bool(tir_dtype_element(a->dtype)) && kind >= TIR_Add && kind <= TIR_Max) {
    /* arithmetic on bools works on int32 */
    tir_DType t = tir_dtype_with_lanes(TIR_INT32, a->dtype.lanes);
    a = tir_cast(t, a);
    b = tir_cast(t, b);
  }
  if ((kind == TIR_FloorDiv || kind == TIR_FloorMod || kind == TIR_Mod) && tir_dtype_is_float(a->dtype) &&
      kind != TIR_FloorDiv) {
    char s[32];
    tir_error_set(TIR_ERR_TYPE, op_name(kind), "%s needs integer operands, got %s", op_name(kind),
                  tir_dtype_str(a->dtype, s));
    return fail2(a, b);
  }
  int64_t bv;
  if ((kind == TIR_FloorDiv || kind == TIR_FloorMod || kind == TIR_Div || kind == TIR_Mod) &&
      tir_is_const_int(b, &bv) && bv == 0) {
    tir_error_set(TIR_ERR_VALUE, op_name(kind), "division by constant zero");
    return fail2(a, b);
  }
  tir_Node *f = try_fold(kind, a, b);
  if (f) {
    tir_release(a);
    tir_release(b);
    return f;
  }
  return tir_binary_raw(kind, a, b);
}

tir_Node *tir_add(tir_Node *a, tir_Node *b) { return tir_binary(TIR_Add, a, b); }
tir_Node *tir_sub(tir_Node *a, tir_Node *b) { return tir_binary(TIR_Sub, a, b); }
tir_Node *tir_mul(tir_Node *a, tir_Node *b) { return tir_binary(TIR_Mul, a, b); }
tir_Node *tir_div(tir_Node *a, tir_Node *b) { return tir_binary(TIR_Div, a, b); }
tir_Node *tir_truncmod(tir_Node *a, tir_Node *b) { return tir_binary(TIR_Mod, a, b); }
tir_Node *tir_floordiv(tir_Node *a, tir_Node *b) { return tir_binary(TIR_FloorDiv, a, b); }
tir_Node *tir_floormod(tir_Node *a, tir_Node *b) { return tir_binary(TIR_FloorMod, a, b); }
tir_Node *tir_min(tir_Node *a, tir_Node *b) { return tir_binary(TIR_Min, a, b); }
tir_Node *tir_max(tir_Node *a, tir_Node *b) { return tir_binary(TIR_Max, a, b); }
tir_Node *tir_cmp(int kind, tir_Node *a, tir_Node *b) { return tir_binary(kind, a, b); }
tir_Node *tir_and(tir_Node *a, tir_Node *b) { return tir_binary(TIR_And, a, b); }
tir_Node *tir_or(tir_Node *a, tir_Node *b) { return tir_binary(TIR_Or, a, b); }

tir_Node *tir_not(tir_Node *a) {
  if (!a) return NULL;
  if (!tir_dtype_is_bool(tir_dtype_element(a->dtype))) a = tir_cast(tir_dtype_with_lanes(TIR_BOOL, a->dtype.lanes), a);
  int64_t v;
  if (tir_is_const_int(a, &v)) {
    tir_release(a);
    return tir_bool_imm(!v);
  }
  if (a->kind == TIR_Not) {
    tir_Node *inner = R(((tir_Not *)a)->a);
    tir_release(a);
    return inner;
  }
  tir_Not *n = (tir_Not *)tir_node_alloc(TIR_Not, a->dtype);
  n->a = a;
  tir_node_update_depth(&n->hdr);
  return &n->hdr;
}

tir_Node *tir_neg(tir_Node *a) {
  if (!a) return NULL;
  int64_t v;
  double f;
  if (tir_is_const_int(a, &v)) {
    tir_Node *r = tir_int_imm(a->dtype, -v);
    tir_release(a);
    return r;
  }
  if (tir_is_const_float(a, &f)) {
    tir_Node *r = tir_float_imm(a->dtype, -f);
    tir_release(a);
    return r;
  }
  return tir_sub(tir_make_zero(a->dtype), a);
}

/* t and f of one dtype, c a bool (cast from an integer), folded when c is constant; else
 * make(c, t, f) builds the node.  `prim` names the caller in errors. */
static tir_Node *choose(const char *prim, tir_Node *c, tir_Node *t, tir_Node *f, int scalar_cond,
                        tir_Node *(*make)(tir_Node *, tir_Node *, tir_Node *)) {
  if (!c || !t || !f) {
    tir_release(c);
    tir_release(t);
    tir_release(f);
    return NULL;
  }
  if (match_types(prim, &t, &f) != 0) {
    tir_release(c);
    return fail2(t, f);
  }
  if (scalar_cond && (c->dtype.lanes != 1 || tir_dtype_is_float(c->dtype) || tir_dtype_is_handle(c->dtype) ||
                      tir_dtype_is_void(c->dtype))) {
    char s[32];
    tir_error_set(TIR_ERR_TYPE, prim, "the condition must be a scalar bool, got %s (tir.if_then_else picks one "
                  "side per element; for lane-wise choices use tir.Select)", tir_dtype_str(c->dtype, s));
    tir_release(c);
    return fail2(t, f);
  }
  if (c->dtype.lanes != 1 && c->dtype.lanes != t->dtype.lanes) { /* TVM's Select check: one condition a lane, or one for all */
    char s2[32];
    tir_error_set(TIR_ERR_TYPE, prim, "the condition has %d lanes but the values are %s: give one condition per lane or a scalar",
                  c->dtype.lanes, tir_dtype_str(t->dtype, s2));
    tir_release(c);
    return fail2(t, f);
  }
  if (!tir_dtype_is_bool(tir_dtype_element(c->dtype))) c = tir_cast(tir_dtype_with_lanes(TIR_BOOL, c->dtype.lanes), c);
  int64_t v;
  if (tir_is_const_int(c, &v)) {
    tir_release(c);
    if (v) {
      tir_release(f);
      return t;
    }
    tir_release(t);
    return f;
  }
  return make(c, t, f);
}

static tir_Node *make_select(tir_Node *c, tir_Node *t, tir_Node *f) {
  tir_Select *n = (tir_Select *)tir_node_alloc(TIR_Select, t->dtype);
  n->cond = c;
  n->true_value = t;
  n->false_value = f;
  tir_node_update_depth(&n->hdr);
  return &n->hdr;
}

static tir_Node *make_if_then_else(tir_Node *c, tir_Node *t, tir_Node *f) {
  tir_DType dt = t->dtype;
  return tir_call(dt, "if_then_else", tir_array_of(3, c, t, f));
}

tir_Node *tir_select(tir_Node *c, tir_Node *t, tir_Node *f) { return choose("select", c, t, f, 0, make_select); }

tir_Node *tir_if_then_else(tir_Node *c, tir_Node *t, tir_Node *f) {
  return choose("if_then_else", c, t, f, 1, make_if_then_else);
}

/* Exact integer limits of an integer dtype (double would round int64's). */
static int64_t int_lowest(tir_DType t) {
  if (t.code == TIR_DT_UINT || t.code == TIR_DT_BOOL) return 0;
  return t.bits >= 64 ? INT64_MIN : -((int64_t)1 << (t.bits - 1));
}
static int64_t int_highest(tir_DType t) {
  if (t.code == TIR_DT_BOOL) return 1;
  if (t.code == TIR_DT_UINT) return t.bits >= 64 ? -1 : (int64_t)((1ull << t.bits) - 1);
  return t.bits >= 64 ? INT64_MAX : ((int64_t)1 << (t.bits - 1)) - 1;
}

tir_Node *tir_reduce_identity(const char *combiner, tir_DType t) {
  tir_DType e = tir_dtype_element(t);
  tir_Node *v;
  if (strcmp(combiner, "sum") == 0) v = tir_make_zero(e);
  else if (strcmp(combiner, "max") == 0)
    v = tir_dtype_is_float(e) ? tir_make_const(e, -INFINITY) : tir_int_imm(e, int_lowest(e));
  else if (strcmp(combiner, "min") == 0)
    v = tir_dtype_is_float(e) ? tir_make_const(e, INFINITY) : tir_int_imm(e, int_highest(e));
  else
    return NULL;
  return t.lanes > 1 ? tir_broadcast(v, t.lanes) : v;
}

tir_Node *tir_reduce_combine(const char *combiner, tir_Node *a, tir_Node *b) {
  if (strcmp(combiner, "sum") == 0) return tir_add(a, b);
  if (strcmp(combiner, "max") == 0) return tir_max(a, b);
  if (strcmp(combiner, "min") == 0) return tir_min(a, b);
  return fail2(a, b);
}

tir_Node *tir_max_value(tir_DType t) {
  t = tir_dtype_element(t);
  return tir_dtype_is_float(t) ? tir_float_imm(t, tir_dtype_max(t)) : tir_int_imm(t, int_highest(t));
}

tir_Node *tir_min_value(tir_DType t) {
  t = tir_dtype_element(t);
  return tir_dtype_is_float(t) ? tir_float_imm(t, tir_dtype_min(t)) : tir_int_imm(t, int_lowest(t));
}
