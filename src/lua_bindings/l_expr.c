/* l_expr.c -- building IR from Lua: variables, constants, comparisons (Lua 5.4 cannot
 * overload them into IR), casts, buffers, the generic node constructor used by the
 * T script builder, and structural equality. */
#include <stdlib.h>
#include <string.h>

#include "l_tir.h"
#include "tir/device_print.h"
#include "tir/extern.h"
#include "tir/analysis.h"
#include "tir/scope.h"
#include "tir/swizzle.h"

static tir_DType opt_dtype(lua_State *L, int idx, tir_DType def) {
  if (lua_isnoneornil(L, idx)) return def;
  return tirL_check_dtype(L, idx);
}

/* tir.var(name [, dtype="int32"]) -> Var */
static int l_var(lua_State *L) {
  const char *name = luaL_optstring(L, 1, "v");
  tir_DType t = opt_dtype(L, 2, TIR_INT32);
  tirL_push_node(L, &tir_var_new(name, t)->hdr);
  return 1;
}

/* tir.const(value, dtype) -> IntImm / FloatImm */
static int l_const(lua_State *L) {
  tir_DType def = lua_type(L, 1) == LUA_TBOOLEAN ? TIR_BOOL : TIR_FLOAT32;
  if (lua_isinteger(L, 1)) {
    lua_Integer v = lua_tointeger(L, 1);
    def = (v > INT32_MAX || v < INT32_MIN) ? TIR_INT64 : TIR_INT32;
  }
  tir_DType t = opt_dtype(L, 2, def);
  if (t.lanes > 1) { /* a vector constant: the scalar of the element dtype, broadcast */
    char es[32];
    lua_settop(L, 1);
    lua_pushstring(L, tir_dtype_str(tir_dtype_element(t), es));
    l_const(L);
    tirL_push_node(L, tir_broadcast(tir_retain(tirL_to_node(L, -1)), t.lanes));
    return 1;
  }
  if (tir_dtype_is_void(t) || tir_dtype_is_handle(t)) {
    char ts[32];
    return tirL_error(L, TIR_ERR_TYPE, "const", "no constants of dtype %s", tir_dtype_str(t, ts));
  }
  if (lua_type(L, 1) == LUA_TBOOLEAN) {
    int b = lua_toboolean(L, 1);
    tirL_push_node(L, tir_dtype_is_float(t) ? tir_float_imm(t, b) : tir_int_imm(t, b));
    return 1;
  }
  if (tir_dtype_is_bool(t) && !(lua_isinteger(L, 1) && (lua_tointeger(L, 1) == 0 || lua_tointeger(L, 1) == 1)))
    return tirL_error(L, TIR_ERR_VALUE, "const", "a bool constant is true, false, 0 or 1, got %s", luaL_tolstring(L, 1, NULL));
  if (tir_dtype_is_bool(t)) { /* (tirL_to_expr would make an int32 of it) */
    tirL_push_node(L, tir_int_imm(t, lua_tointeger(L, 1)));
    return 1;
  }
  luaL_checknumber(L, 1);
  if (tir_dtype_is_float(t)) tirL_push_node(L, tir_float_imm(t, lua_tonumber(L, 1)));
  else if (lua_isinteger(L, 1)) tirL_push_node(L, tirL_to_expr(L, 1, t, 1)); /* range-checked */
  else {
    double v = lua_tonumber(L, 1);
    if (v != (double)(int64_t)v) return luaL_argerror(L, 1, "integer dtype needs an integral value");
    tirL_push_node(L, tir_int_imm(t, (int64_t)v));
  }
  return 1;
}

static tir_DType pair_hint(lua_State *L, int i, int j, int *have) {
  tir_Node *a = tirL_to_node(L, i), *b = tirL_to_node(L, j);
  *have = 1;
  if (a && tir_is_expr(a)) return a->dtype;
  if (b && tir_is_expr(b)) return b->dtype;
  *have = 0;
  return TIR_INT32;
}

static int binary(lua_State *L, int kind) {
  luaL_checkany(L, 1);
  luaL_checkany(L, 2);
  int have;
  tir_DType hint = pair_hint(L, 1, 2, &have);
  tir_Node *a = tirL_to_expr(L, 1, hint, have);
  tirL_push_node(L, a); /* keep it owned by Lua while converting b (may raise) */
  tir_Node *b = tirL_to_expr(L, 2, hint, have);
  tir_Node *r = tir_binary(kind, tir_retain(a), b);
  if (!r) return tirL_raise_core(L);
  tirL_push_node(L, r);
  return 1;
}

static int l_add(lua_State *L) { return binary(L, TIR_Add); }
static int l_sub(lua_State *L) { return binary(L, TIR_Sub); }
static int l_mul(lua_State *L) { return binary(L, TIR_Mul); }
static int l_eq(lua_State *L) { return binary(L, TIR_EQ); }
static int l_ne(lua_State *L) { return binary(L, TIR_NE); }
static int l_lt(lua_State *L) { return binary(L, TIR_LT); }
static int l_le(lua_State *L) { return binary(L, TIR_LE); }
static int l_gt(lua_State *L) { return binary(L, TIR_GT); }
static int l_ge(lua_State *L) { return binary(L, TIR_GE); }
static int l_and(lua_State *L) { return binary(L, TIR_And); }
static int l_or(lua_State *L) { return binary(L, TIR_Or); }
static int l_min(lua_State *L) { return binary(L, TIR_Min); }
static int l_max(lua_State *L) { return binary(L, TIR_Max); }
static int l_floordiv(lua_State *L) { return binary(L, TIR_FloorDiv); }
static int l_floormod(lua_State *L) { return binary(L, TIR_FloorMod); }
static int l_truncdiv(lua_State *L) { return binary(L, TIR_Div); }
static int l_truncmod(lua_State *L) { return binary(L, TIR_Mod); }

static int fold_logic(lua_State *L, int kind) {
  int n = lua_gettop(L);
  if (n == 1 && lua_type(L, 1) == LUA_TTABLE) {
    int m = tirL_table_maxn(L, 1);
    for (int i = 1; i <= m; i++) lua_geti(L, 1, i);
    lua_remove(L, 1);
    n = m;
  }
  tirL_push_node(L, tir_bool_imm(kind == TIR_And));
  for (int i = 1; i <= n; i++) {
    tir_Node *x = tirL_to_expr(L, i, TIR_BOOL, 1); /* may raise: convert before taking a reference to acc */
    tir_Node *acc = tir_retain(tirL_to_node(L, -1));
    tir_Node *r = tir_binary(kind, acc, x);
    if (!r) return tirL_raise_core(L);
    lua_pop(L, 1);
    tirL_push_node(L, r);
  }
  return 1;
}

static int l_all(lua_State *L) { return fold_logic(L, TIR_And); }
static int l_any(lua_State *L) { return fold_logic(L, TIR_Or); }

static int l_not(lua_State *L) {
  tir_Node *a = tirL_to_expr(L, 1, TIR_BOOL, 1);
  tir_Node *r = tir_not(a);
  if (!r) return tirL_raise_core(L);
  tirL_push_node(L, r);
  return 1;
}

/* cond, a, b from Lua (a and b of one dtype) built by `make`: tir_select / tir_if_then_else */
static int ternary(lua_State *L, const char *prim, tir_Node *(*make)(tir_Node *, tir_Node *, tir_Node *)) {
  luaL_checkany(L, 3);
  if (lua_type(L, 1) == LUA_TBOOLEAN)
    return tirL_error(L, TIR_ERR_TYPE, prim,
                      "the condition is a Lua boolean (did you write a == b or a < b? Lua compares those itself): "
                      "use tir.eq(a, b), tir.lt(a, b), ...");
  int have;
  tir_DType hint = pair_hint(L, 2, 3, &have);
  tir_Node *c = tirL_to_expr(L, 1, TIR_BOOL, 1);
  tirL_push_node(L, c);
  tir_Node *t = tirL_to_expr(L, 2, hint, have);
  tirL_push_node(L, t);
  tir_Node *f = tirL_to_expr(L, 3, hint, have);
  tir_Node *r = make(tir_retain(c), tir_retain(t), f);
  if (!r) return tirL_raise_core(L);
  tirL_push_node(L, r);
  return 1;
}

/* tir.select(cond, a, b) / tir.Select: both sides evaluated; TVM's Select. */
static int l_select(lua_State *L) { return ternary(L, "select", tir_select); }

/* tir.if_then_else(cond, a, b): TVM's lazy if_then_else (only the side cond picks is
 * evaluated, so the other may read out of bounds). */
static int l_if_then_else(lua_State *L) { return ternary(L, "if_then_else", tir_if_then_else); }

/* tir.max_value(dtype) / tir.min_value(dtype) */
static int l_max_value(lua_State *L) {
  tirL_push_node(L, tir_max_value(tirL_check_dtype(L, 1)));
  return 1;
}
static int l_min_value(lua_State *L) {
  tirL_push_node(L, tir_min_value(tirL_check_dtype(L, 1)));
  return 1;
}

/* math_builtins() -> {{name =, arity =, kind = "float" | "rounding" | "abs" | "predicate" |
 * "bits", ulp32 =, ulp64 =}, ...}: the table of tir_math_builtins (builtin.c) */
static int l_math_builtins(lua_State *L) {
  static const char *kinds[] = {"float", "rounding", "abs", "predicate", "bits"};
  int n;
  const tir_MathBuiltin *m = tir_math_builtins(&n);
  lua_createtable(L, n, 0);
  for (int i = 0; i < n; i++) {
    lua_createtable(L, 0, 5);
    lua_pushstring(L, m[i].name);
    lua_setfield(L, -2, "name");
    lua_pushinteger(L, m[i].arity);
    lua_setfield(L, -2, "arity");
    lua_pushstring(L, kinds[m[i].kind]);
    lua_setfield(L, -2, "kind");
    lua_pushinteger(L, m[i].ulp32);
    lua_setfield(L, -2, "ulp32");
    lua_pushinteger(L, m[i].ulp64);
    lua_setfield(L, -2, "ulp64");
    lua_rawseti(L, -2, i + 1);
  }
  return 1;
}

static int call_impl(lua_State *L, int shift);

/* tir.call_extern(dtype, name, args...) / tir.call_pure_extern: include/tir/extern.h.  The op
 * name is inserted as argument 2, so argument errors count one less (shift). */
static int call_extern_as(lua_State *L, const char *op) {
  luaL_checkany(L, 1);
  lua_pushstring(L, op);
  lua_insert(L, 2);
  return call_impl(L, 1);
}
static int l_call_extern(lua_State *L) { return call_extern_as(L, "call_extern"); }
static int l_call_pure_extern(lua_State *L) { return call_extern_as(L, "call_pure_extern"); }

/* tir.cast(dtype, x) */
static int l_cast(lua_State *L) {
  tir_DType t = tirL_check_dtype(L, 1);
  tir_Node *v = tirL_to_expr(L, 2, t, 1);
  if (v->dtype.lanes > 1 && v->dtype.lanes != t.lanes) { /* a cast keeps the lanes (TVM's Cast check) */
    char a[32], b[32];
    tir_DType from = v->dtype;
    tir_release(v);
    return tirL_error(L, TIR_ERR_TYPE, "cast", "cannot cast a %s value to %s: a cast keeps the number of lanes", tir_dtype_str(from, a),
                      tir_dtype_str(t, b));
  }
  tir_Node *r = tir_cast(t, v);
  if (!r) return tirL_raise_core(L);
  tirL_push_node(L, r);
  return 1;
}

/* tir.call(dtype, op, args...) -> Call (a builtin the codegen knows, e.g. "exp") */
static int l_call(lua_State *L) { return call_impl(L, 0); }

static int call_impl(lua_State *L, int shift) {
  tir_DType t = tirL_check_dtype(L, 1);
  const char *op = luaL_checkstring(L, 2);
  int n = lua_gettop(L) - 2;
  if (strcmp(op, "call_extern") == 0 || strcmp(op, "call_pure_extern") == 0) {
    if (lua_type(L, 3) != LUA_TSTRING || !tir_extern_name_valid(lua_tostring(L, 3)))
      return tirL_error(L, TIR_ERR_VALUE, op, "the function name must be a C identifier string (got %s%s%s)",
                        luaL_typename(L, 3), lua_type(L, 3) == LUA_TSTRING ? " " : "",
                        lua_type(L, 3) == LUA_TSTRING ? lua_tostring(L, 3) : "");
  }
  if (tir_math_builtin_check(op, t, n, "call") != 0) return tirL_raise_core(L);
  for (int i = 0; i < n; i++) {
    tir_Node *x = tirL_to_node(L, 3 + i);
    if (!(x && (tir_is_expr(x) || x->kind == TIR_Buffer)) && lua_type(L, 3 + i) != LUA_TNUMBER &&
        lua_type(L, 3 + i) != LUA_TSTRING && lua_type(L, 3 + i) != LUA_TBOOLEAN)
      luaL_argerror(L, 3 + i - shift, "expression, buffer, number or string expected");
  }
  tir_Array *args = tir_array_new(n);
  for (int i = 0; i < n; i++) {
    int idx = 3 + i;
    if (lua_type(L, idx) == LUA_TSTRING) args->items[i] = tir_string_imm(lua_tostring(L, idx));
    else if (tirL_to_node(L, idx) && tirL_to_node(L, idx)->kind == TIR_Buffer) args->items[i] = tir_retain(tirL_to_node(L, idx));
    else args->items[i] = tirL_to_expr(L, idx, TIR_INT32, 0);
  }
  tir_Node *call = tir_call(t, op, args);
  if (strcmp(op, "tir_print") == 0) { /* include/tir/device_print.h */
    char why[256];
    int nv = n - 1 - TIR_PRINT_FILTER_ARGS;
    tir_DType types[64];
    const tir_Array *a = ((const tir_Call *)call)->args;
    int bad = n < 1 + TIR_PRINT_FILTER_ARGS || a->items[0]->kind != TIR_StringImm || nv > 64;
    for (int d = 1; !bad && d <= TIR_PRINT_FILTER_ARGS; d++) bad = !tir_dtype_is_int(a->items[d]->dtype);
    if (bad) {
      tir_release(call);
      return tirL_error(L, TIR_ERR_TYPE, "print", "tir_print takes a format string, 6 integer filter coordinates and at most 64 values");
    }
    for (int k = 0; k < nv; k++) types[k] = a->items[1 + TIR_PRINT_FILTER_ARGS + k]->dtype;
    if (tir_print_check(((const tir_StringImm *)a->items[0])->value, types, nv, why, sizeof why) != 0) {
      tir_release(call);
      return tirL_error(L, TIR_ERR_VALUE, "print", "%s", why);
    }
  }
  tirL_push_node(L, call);
  return 1;
}

static int l_ramp(lua_State *L) {
  tir_Node *b = tirL_to_expr(L, 1, TIR_INT32, 0);
  tirL_push_node(L, b);
  tir_Node *s = tirL_to_expr(L, 2, b->dtype, 1);
  tirL_push_node(L, s);
  if (b->dtype.lanes != 1 || s->dtype.lanes != 1)
    return tirL_error(L, TIR_ERR_TYPE, "Ramp", "the base and the stride must be scalars (a Ramp makes the lanes)");
  if (!tir_dtype_eq(b->dtype, s->dtype)) {
    char a[32], c[32];
    return tirL_error(L, TIR_ERR_TYPE, "Ramp", "the base (%s) and the stride (%s) must have one dtype", tir_dtype_str(b->dtype, a),
                      tir_dtype_str(s->dtype, c));
  }
  int lanes = (int)luaL_checkinteger(L, 3);
  if (lanes < 2 || lanes > 64) return luaL_argerror(L, 3, "lanes must be in [2, 64]");
  tirL_push_node(L, tir_ramp(tir_retain(b), tir_retain(s), lanes));
  return 1;
}

static int l_broadcast(lua_State *L) {
  tir_Node *v = tirL_to_expr(L, 1, TIR_FLOAT32, 0);
  tirL_push_node(L, v);
  if (v->dtype.lanes != 1) {
    char a[32];
    return tirL_error(L, TIR_ERR_TYPE, "Broadcast", "the value must be a scalar, got a %s vector", tir_dtype_str(v->dtype, a));
  }
  int lanes = (int)luaL_checkinteger(L, 2);
  if (lanes < 2 || lanes > 64) return luaL_argerror(L, 2, "lanes must be in [2, 64]");
  tirL_push_node(L, tir_broadcast(tir_retain(v), lanes));
  return 1;
}

/* tir.buffer(name, shape, dtype [, {scope=, strides=, elem_offset=, align=, offset_factor=, data=, swizzle=}])
 * swizzle: "none", "32B", "64B", "128B" (the PTX modes) or {B, M, S} (CuTe Swizzle<B, M, S> on
 * byte offsets; include/tir/swizzle.h) */
static int l_buffer(lua_State *L) {
  const char *name = luaL_checkstring(L, 1);
  luaL_checktype(L, 2, LUA_TTABLE);
  tir_DType t = opt_dtype(L, 3, TIR_FLOAT32);
  int has_opts = lua_type(L, 4) == LUA_TTABLE;
  const char *scope = "global";
  if (has_opts) {
    lua_getfield(L, 4, "scope");
    if (!lua_isnil(L, -1)) scope = luaL_checkstring(L, -1);
    lua_pop(L, 1);
  }
  if (!tir_scope_valid(scope))
    return tirL_error(L, TIR_ERR_VALUE, "buffer", "unknown storage scope '%s' for buffer %s; valid scopes: %s", scope, name,
                      tir_scope_valid_list());
  /* validate everything before building */
  tir_Array *shape = tirL_check_expr_list(L, 2, "shape");
  tirL_push_node(L, &shape->hdr);
  tir_Array *strides = NULL;
  tir_Node *elem_offset = NULL, *data = NULL;
  lua_Integer align = 64, offset_factor = 1;
  int64_t swizzle = 0;
  if (has_opts) {
    lua_getfield(L, 4, "strides");
    if (!lua_isnil(L, -1)) {
      strides = tirL_check_expr_list(L, -1, "strides");
      tirL_push_node(L, &strides->hdr);
      lua_replace(L, -2);
    }
    lua_getfield(L, 4, "elem_offset");
    if (!lua_isnil(L, -1)) {
      elem_offset = tirL_to_expr(L, -1, TIR_INT32, 0);
      tirL_push_node(L, elem_offset);
      lua_replace(L, -2);
    }
    lua_getfield(L, 4, "data");
    if (!lua_isnil(L, -1)) data = tirL_check_node(L, -1, TIR_Var, "data var");
    lua_getfield(L, 4, "align");
    align = luaL_optinteger(L, -1, 64);
    lua_getfield(L, 4, "offset_factor");
    offset_factor = luaL_optinteger(L, -1, 1);
    lua_getfield(L, 4, "swizzle");
    if (!lua_isnil(L, -1)) swizzle = tirL_check_swizzle(L, -1, "buffer");
  }
  int64_t elems = 1; /* the element count of the constant dimensions must fit int64 */
  for (int i = 0; i < shape->size; i++) {
    if (!tir_dtype_is_int(shape->items[i]->dtype))
      return tirL_error(L, TIR_ERR_TYPE, "buffer", "shape[%d] of %s must be an integer", i + 1, name);
    int64_t v;
    if (tir_is_const_int(shape->items[i], &v) && v < 0)
      return tirL_error(L, TIR_ERR_VALUE, "buffer", "shape[%d] of %s is negative (%lld)", i + 1, name, (long long)v);
    if (tir_is_const_int(shape->items[i], &v) && elems >= 0 && __builtin_mul_overflow(elems, v, &elems)) elems = -1;
  }
  if (elems < 0)
    return tirL_error(L, TIR_ERR_VALUE, "buffer",
                      "buffer %s has more elements than a 64-bit integer can count (the product of its shape overflows)",
                      name);
  if (strides && strides->size != shape->size)
    return tirL_error(L, TIR_ERR_VALUE, "buffer", "%s has %d dimensions but %d strides", name, shape->size, strides->size);
  tir_Buffer *b = tir_buffer_new(name, t, (tir_Array *)tir_retain(shape), (tir_Array *)tir_retain(strides),
                                 tir_retain(elem_offset), scope);
  if (data) {
    tir_release(b->data);
    b->data = (tir_Var *)tir_retain(data);
  }
  b->align = align;
  b->offset_factor = offset_factor;
  b->swizzle = swizzle;
  tirL_push_node(L, &b->hdr);
  return 1;
}

/* Converts the Lua value at idx to an owned node for a field of type `node_type`. */
static tir_Node *to_field_node(lua_State *L, int idx, const char *node_type, const char *field) {
  idx = lua_absindex(L, idx);
  if (lua_isnil(L, idx)) return NULL;
  tir_Node *n = tirL_to_node(L, idx);
  if (n) return tir_retain(n);
  if (lua_type(L, idx) == LUA_TTABLE) { /* lists become Arrays (also annotation values) */
    int m = tirL_table_maxn(L, idx);
    tir_Array *a = tir_array_new(m);
    tirL_push_node(L, &a->hdr); /* owned by Lua while elements convert */
    for (int i = 1; i <= m; i++) {
      lua_geti(L, idx, i);
      /* arrays nest (e.g. annotation values) */
      tir_Node *nd = tirL_to_node(L, -1);
      if (nd && !tir_is_expr(nd)) a->items[i - 1] = tir_retain(nd); /* Range, Buffer, IterVar, Ann, ... */
      else if (lua_type(L, -1) == LUA_TTABLE) a->items[i - 1] = to_field_node(L, -1, "tir_Array", field);
      else if (lua_type(L, -1) == LUA_TSTRING) a->items[i - 1] = tir_string_imm(lua_tostring(L, -1));
      else a->items[i - 1] = tirL_to_expr(L, -1, TIR_INT32, 0);
      lua_pop(L, 1);
    }
    tir_retain(a);
    lua_pop(L, 1);
    return &a->hdr;
  }
  if (lua_type(L, idx) == LUA_TSTRING) return tir_string_imm(lua_tostring(L, idx));
  return tirL_to_expr(L, idx, TIR_INT32, 0);
}

/* tir.make(kind, fields [, dtype]) -> node.  The generic constructor: every field of the
 * kind (ir_nodes.def) read from the table; arrays may be given as Lua tables. */
static int l_make(lua_State *L) {
  const char *kname = luaL_checkstring(L, 1);
  luaL_checktype(L, 2, LUA_TTABLE);
  int kind = -1;
  for (int k = 0; k < TIR_Array; k++)
    if (strcmp(tir_kind_name(k), kname) == 0) kind = k;
  if (kind < 0) return luaL_argerror(L, 1, lua_pushfstring(L, "unknown node kind '%s'", kname));
  tir_DType t = opt_dtype(L, 3, TIR_VOID);
  const tir_KindInfo *ki = tir_kind_info(kind);
  tir_Node *n = tir_node_alloc(kind, t);
  tirL_push_node(L, n); /* Lua owns it; fields are filled in place (refcount 1 -> cached box) */
  for (int i = 0; i < ki->n_fields; i++) {
    const tir_FieldInfo *f = &ki->fields[i];
    lua_getfield(L, 2, f->name);
    char *slot = (char *)n + f->offset;
    switch (f->type) {
      case TIR_FT_NODE: {
        tir_Node *v = to_field_node(L, -1, f->node_type, f->name);
        tir_release(*(tir_Node **)slot);
        *(tir_Node **)slot = v;
        break;
      }
      case TIR_FT_INT: *(int64_t *)slot = luaL_optinteger(L, -1, 0); break;
      case TIR_FT_UID: break;
      case TIR_FT_FLOAT: *(double *)slot = luaL_optnumber(L, -1, 0); break;
      case TIR_FT_STR:
        if (!lua_isnil(L, -1)) tir_node_set_str((char **)slot, luaL_checkstring(L, -1));
        break;
    }
    lua_pop(L, 1);
  }
  /* defaults for optional arrays */
  for (int i = 0; i < ki->n_fields; i++) {
    const tir_FieldInfo *f = &ki->fields[i];
    tir_Node **slot = (tir_Node **)((char *)n + f->offset);
    if (f->type == TIR_FT_NODE && !*slot && strcmp(f->node_type, "tir_Array") == 0) *slot = &tir_array_empty()->hdr;
  }
  if (kind == TIR_Block) {
    tir_Block *fresh = tir_block_new("", NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL);
    ((tir_Block *)n)->uid = fresh->uid;
    tir_release(fresh);
  }
  if (kind == TIR_BlockRealize && !((tir_BlockRealize *)n)->predicate)
    ((tir_BlockRealize *)n)->predicate = tir_bool_imm(1);
  if (kind == TIR_Reduce && !((tir_Reduce *)n)->condition) ((tir_Reduce *)n)->condition = tir_bool_imm(1);
  if (kind == TIR_Buffer) {
    tir_Buffer *b = (tir_Buffer *)n;
    if (!b->data) b->data = tir_var_new(b->name, TIR_HANDLE);
    if (!b->elem_offset) b->elem_offset = tir_i32(0);
    if (!b->scope[0]) tir_node_set_str(&b->scope, "global");
    if (!b->align) b->align = 64;
    if (!b->offset_factor) b->offset_factor = 1;
    if (!tir_swizzle_valid(b->swizzle)) {
      tir_release(n);
      return tirL_error(L, TIR_ERR_VALUE, "make", "Buffer %s: swizzle %lld is not a packed swizzle (include/tir/swizzle.h)", b->name,
                        (long long)b->swizzle);
    }
  }
  /* derived dtypes */
  if (tir_is_expr(n) && tir_dtype_is_void(t)) {
    switch (kind) {
      case TIR_BufferLoad:
        if (((tir_BufferLoad *)n)->buffer) n->dtype = ((tir_BufferLoad *)n)->buffer->hdr.dtype;
        break;
      case TIR_EQ: case TIR_NE: case TIR_LT: case TIR_LE: case TIR_GT: case TIR_GE: case TIR_And: case TIR_Or:
      case TIR_Not: n->dtype = TIR_BOOL; break;
      case TIR_Let:
        if (((tir_Let *)n)->body) n->dtype = ((tir_Let *)n)->body->dtype;
        break;
      default: {
        tir_Node *first = NULL;
        if (ki->n_fields && ki->fields[0].type == TIR_FT_NODE) first = *(tir_Node **)((char *)n + ki->fields[0].offset);
        if (first) n->dtype = first->dtype;
        else n->dtype = TIR_INT32;
      }
    }
  }
  if (tir_node_validate(n) != 0) return tirL_raise_core(L);
  tir_node_update_depth(n);
  if (n->flags > TIR_MAX_EXPR_DEPTH && tir_is_expr(n))
    return tirL_error(L, TIR_ERR_VALUE, "make", "expression nests deeper than %d operations", TIR_MAX_EXPR_DEPTH);
  return 1;
}

/* tir.structural_equal(a, b [, {map_free_vars = bool}]) -> bool, first difference (string) when unequal */
static int l_structural_equal(lua_State *L) {
  tir_Node *a = tirL_check_node(L, 1, -1, NULL), *b = tirL_check_node(L, 2, -1, NULL);
  int map_free = 0;
  if (lua_type(L, 3) == LUA_TTABLE) {
    lua_getfield(L, 3, "map_free_vars");
    map_free = lua_toboolean(L, -1);
    lua_pop(L, 1);
  }
  char buf[2048];
  int eq = tir_structural_diff(a, b, buf, sizeof buf, map_free);
  lua_pushboolean(L, eq);
  if (eq) return 1;
  lua_pushstring(L, buf);
  return 2;
}

static int l_structural_hash(lua_State *L) {
  tir_Node *a = tirL_check_node(L, 1, -1, NULL);
  lua_pushinteger(L, (lua_Integer)tir_structural_hash(a));
  return 1;
}

/* tir.substitute(node, {var, value, var, value, ...}) */
static int l_substitute(lua_State *L) {
  tir_Node *n = tirL_check_node(L, 1, -1, NULL);
  luaL_checktype(L, 2, LUA_TTABLE);
  int m = tirL_table_maxn(L, 2);
  if (m % 2) return luaL_argerror(L, 2, "expected pairs {var, value, ...}");
  int k = m / 2;
  tir_Var **vars = calloc((size_t)k + 1, sizeof *vars);
  tir_Node **vals = calloc((size_t)k + 1, sizeof *vals);
  for (int i = 0; i < k; i++) {
    lua_geti(L, 2, 2 * i + 1);
    tir_Node *v = tirL_to_node(L, -1);
    lua_pop(L, 1);
    if (!v || v->kind != TIR_Var) {
      for (int j = 0; j < i; j++) tir_release(vals[j]);
      free(vars);
      free(vals);
      return luaL_error(L, "tir.substitute: element %d must be a Var", 2 * i + 1);
    }
    vars[i] = (tir_Var *)v;
    lua_geti(L, 2, 2 * i + 2);
    tir_Node *e = tirL_to_node(L, -1);
    if (!e && lua_type(L, -1) == LUA_TNUMBER) e = tir_int_imm(v->dtype, lua_tointeger(L, -1));
    else tir_retain(e);
    lua_pop(L, 1);
    if (!e || !tir_is_expr(e)) {
      tir_release(e);
      for (int j = 0; j < i; j++) tir_release(vals[j]);
      free(vars);
      free(vals);
      return luaL_error(L, "tir.substitute: element %d must be an expression", 2 * i + 2);
    }
    vals[i] = e;
  }
  tir_Node *r = tir_substitute(n, k, vars, vals);
  for (int i = 0; i < k; i++) tir_release(vals[i]);
  free(vars);
  free(vals);
  tirL_push_node(L, r);
  return 1;
}

/* substitute_buffers(node, {old, new, old, new, ...}) */
static int l_substitute_buffers(lua_State *L) {
  tir_Node *n = tirL_check_node(L, 1, -1, NULL);
  luaL_checktype(L, 2, LUA_TTABLE);
  int m = tirL_table_maxn(L, 2);
  if (m % 2) return luaL_argerror(L, 2, "expected pairs {old, new, ...}");
  int k = m / 2;
  for (int i = 1; i <= m; i++) {
    lua_geti(L, 2, i);
    if (!tirL_to_node(L, -1) || tirL_to_node(L, -1)->kind != TIR_Buffer) return luaL_error(L, "substitute_buffers: element %d is not a Buffer", i);
    lua_pop(L, 1);
  }
  tir_Buffer **from = calloc((size_t)k + 1, sizeof *from), **to = calloc((size_t)k + 1, sizeof *to);
  for (int i = 0; i < k; i++) {
    lua_geti(L, 2, 2 * i + 1);
    from[i] = (tir_Buffer *)tirL_to_node(L, -1);
    lua_geti(L, 2, 2 * i + 2);
    to[i] = (tir_Buffer *)tirL_to_node(L, -1);
    lua_pop(L, 2);
  }
  tir_Node *r = tir_substitute_buffers(n, k, from, to);
  free(from);
  free(to);
  tirL_push_node(L, r);
  return 1;
}

/* buffer_with_name(buf, name) -> a copy of the buffer (same data var) with another name */
static int l_buffer_with_name(lua_State *L) {
  tir_Buffer *b = (tir_Buffer *)tirL_check_node(L, 1, TIR_Buffer, NULL);
  const char *name = luaL_checkstring(L, 2);
  tir_Buffer *c = (tir_Buffer *)tir_node_copy(&b->hdr);
  tir_node_set_str(&c->name, name);
  tirL_push_node(L, &c->hdr);
  return 1;
}

/* var_with_name(var, name) -> a new variable of the same dtype */
static int l_var_with_name(lua_State *L) {
  tir_Var *v = (tir_Var *)tirL_check_node(L, 1, TIR_Var, NULL);
  tirL_push_node(L, &tir_var_new(luaL_checkstring(L, 2), v->hdr.dtype)->hdr);
  return 1;
}

/* block_access(block) -> reads, writes (Arrays of BufferRegion) detected from the body */
static int l_block_access(lua_State *L) {
  tir_Block *b = (tir_Block *)tirL_check_node(L, 1, TIR_Block, NULL);
  tir_Array *r, *w;
  tir_block_access_regions(b, &r, &w);
  tirL_push_node(L, &r->hdr);
  tirL_push_node(L, &w->hdr);
  return 2;
}

/* block_check_access(block, check_reads, check_writes [, ir [, outer]]) -> true, or raises the
 * ValueError of tir_block_check_access (showing ir, a statement holding the block) when a
 * declared region does not cover the body's accesses; with ir == false returns false.
 * outer: the loops around the block, a list of {var, min, extent} (nodes). */
static int l_block_check_access(lua_State *L) {
  tir_Block *b = (tir_Block *)tirL_check_node(L, 1, TIR_Block, NULL);
  int quiet = lua_isboolean(L, 4) && !lua_toboolean(L, 4);
  const tir_Node *ir = lua_isnoneornil(L, 4) || quiet ? NULL : tirL_check_node(L, 4, -1, NULL);
  tir_Array *vars = NULL, *doms = NULL;
  if (!lua_isnoneornil(L, 5)) {
    luaL_checktype(L, 5, LUA_TTABLE);
    int n = (int)lua_rawlen(L, 5);
    /* checked first (a Lua error must not leak the arrays), then built */
    for (int pass = 0; pass < 2; pass++) {
      if (pass == 1) {
        vars = tir_array_empty();
        doms = tir_array_empty();
      }
      for (int i = 1; i <= n; i++) {
        lua_rawgeti(L, 5, i);
        int t = lua_gettop(L);
        if (pass == 0) luaL_checktype(L, t, LUA_TTABLE);
        lua_rawgeti(L, t, 1);
        lua_rawgeti(L, t, 2);
        lua_rawgeti(L, t, 3);
        if (pass == 0) {
          tirL_check_node(L, t + 1, TIR_Var, "an outer loop variable");
          tirL_check_node(L, t + 2, -1, "an outer loop's min");
          tirL_check_node(L, t + 3, -1, "an outer loop's extent");
        } else {
          vars = tir_array_push(vars, tir_retain(tirL_to_node(L, t + 1)));
          doms = tir_array_push(doms, &tir_range(tir_retain(tirL_to_node(L, t + 2)), tir_retain(tirL_to_node(L, t + 3)))->hdr);
        }
        lua_settop(L, t - 1);
      }
    }
  }
  int bad = tir_block_check_access(b, lua_toboolean(L, 2), lua_toboolean(L, 3), ir, vars, doms);
  if (vars) tir_release(&vars->hdr);
  if (doms) tir_release(&doms->hdr);
  if (bad) {
    if (!quiet) return tirL_raise_core(L);
    tir_error_clear();
    lua_pushboolean(L, 0);
    return 1;
  }
  lua_pushboolean(L, 1);
  return 1;
}

static const luaL_Reg expr_fns[] = {{"substitute_buffers", l_substitute_buffers},
                                    {"buffer_with_name", l_buffer_with_name},
                                    {"var_with_name", l_var_with_name},
                                    {"block_access", l_block_access},
                                    {"block_check_access", l_block_check_access},{"var", l_var},
                                    {"const", l_const},
                                    {"add", l_add},
                                    {"sub", l_sub},
                                    {"mul", l_mul},
                                    {"eq", l_eq},
                                    {"ne", l_ne},
                                    {"lt", l_lt},
                                    {"le", l_le},
                                    {"gt", l_gt},
                                    {"ge", l_ge},
                                    {"And", l_and},
                                    {"Or", l_or},
                                    {"Not", l_not},
                                    {"all", l_all},
                                    {"any", l_any},
                                    {"min", l_min},
                                    {"max", l_max},
                                    {"floordiv", l_floordiv},
                                    {"floormod", l_floormod},
                                    {"truncdiv", l_truncdiv},
                                    {"truncmod", l_truncmod},
                                    {"select", l_select},
                                    {"Select", l_select},
                                    {"if_then_else", l_if_then_else},
                                    {"max_value", l_max_value},
                                    {"min_value", l_min_value},
                                    {"math_builtins", l_math_builtins},
                                    {"cast", l_cast},
                                    {"call", l_call},
                                    {"call_extern", l_call_extern},
                                    {"call_pure_extern", l_call_pure_extern},
                                    {"Ramp", l_ramp},
                                    {"Broadcast", l_broadcast},
                                    {"buffer", l_buffer},
                                    {"make", l_make},
                                    {"structural_equal", l_structural_equal},
                                    {"structural_hash", l_structural_hash},
                                    {"substitute", l_substitute},
                                    {NULL, NULL}};

void tirL_open_expr(lua_State *L) { luaL_setfuncs(L, expr_fns, 0); }
