/* l_te.c -- the C side of lib/tir/te.lua: iteration axes, reductions, compute ops and
 * create_prim_func (src/core/te). */
#include <string.h>

#include "l_tir.h"
#include "tir/te.h"

/* te_iter_var(name, dom, kind) -> IterVar; dom is an extent or {min, max_exclusive};
 * kind "S" (spatial) or "R" (reduce). */
static int l_iter_var(lua_State *L) {
  const char *name = luaL_checkstring(L, 1);
  const char *kind = luaL_optstring(L, 3, "S");
  if (strcmp(kind, "S") != 0 && strcmp(kind, "R") != 0) return luaL_argerror(L, 3, "expected \"S\" or \"R\"");
  tir_Node *lo, *ext;
  if (lua_type(L, 2) == LUA_TTABLE) {
    lua_geti(L, 2, 1);
    lua_geti(L, 2, 2);
    if (lua_isnil(L, -1) || lua_isnil(L, -2)) return luaL_argerror(L, 2, "domain must be an extent or {min, max}");
    lo = tirL_to_expr(L, -2, TIR_INT32, 0);
    tirL_push_node(L, lo);
    tir_Node *hi = tirL_to_expr(L, -2, lo->dtype, 1);
    ext = tir_sub(hi, tir_retain(lo));
    tir_retain(lo);
  } else {
    ext = tirL_to_expr(L, 2, TIR_INT32, 0);
    lo = tir_int_imm(ext->dtype, 0);
  }
  if (!ext) {
    tir_release(lo);
    return tirL_raise_core(L);
  }
  if (!tir_dtype_is_int(ext->dtype)) {
    tir_release(lo);
    tir_release(ext);
    return luaL_argerror(L, 2, "domain must be integer");
  }
  int64_t e;
  if (tir_is_const_int(ext, &e) && e <= 0) {
    tir_release(lo);
    tir_release(ext);
    return luaL_error(L, "axis %s has an empty domain (extent %d)", name, (int)e);
  }
  tir_Var *v = tir_var_new(name, ext->dtype);
  tirL_push_node(L, &tir_iter_var(v, tir_range(lo, ext), kind[0] == 'S' ? TIR_ITER_DATA_PAR : TIR_ITER_COMM_REDUCE, "")->hdr);
  return 1;
}

/* te_reduce(combiner, source, axes, condition?) -> Reduce */
static int l_reduce(lua_State *L) {
  const char *comb = luaL_checkstring(L, 1);
  if (strcmp(comb, "sum") && strcmp(comb, "max") && strcmp(comb, "min"))
    return luaL_argerror(L, 1, "combiner must be sum, max or min");
  tir_Node *src = tirL_to_expr(L, 2, TIR_FLOAT32, 0);
  tirL_push_node(L, src);
  luaL_checktype(L, 3, LUA_TTABLE);
  int n = tirL_table_maxn(L, 3);
  if (n == 0) return luaL_argerror(L, 3, "at least one reduction axis is needed");
  for (int i = 1; i <= n; i++) {
    lua_geti(L, 3, i);
    tir_Node *iv = tirL_to_node(L, -1);
    if (!iv || iv->kind != TIR_IterVar || ((tir_IterVar *)iv)->iter_type != TIR_ITER_COMM_REDUCE)
      return luaL_error(L, "reduction axis %d must come from te.reduce_axis", i);
    lua_pop(L, 1);
  }
  tir_Node *cond = NULL;
  if (!lua_isnoneornil(L, 4)) {
    cond = tirL_to_expr(L, 4, TIR_BOOL, 1);
    tirL_push_node(L, cond);
    if (!tir_dtype_is_bool(cond->dtype) || cond->dtype.lanes != 1) {
      char t[32];
      return luaL_error(L, "the where condition must be a boolean expression (e.g. tir.lt(k, n)), got %s",
                        tir_dtype_str(cond->dtype, t));
    }
    tir_retain(cond);
  }
  tir_Array *axes = tir_array_new(n);
  for (int i = 1; i <= n; i++) {
    lua_geti(L, 3, i);
    axes->items[i - 1] = tir_retain(tirL_to_node(L, -1));
    lua_pop(L, 1);
  }
  tirL_push_node(L, tir_reduce(comb, tir_retain(src), axes, cond));
  return 1;
}

/* te_compute_op(name, axis_itervars, body, output_buffer) -> ComputeOp */
static int l_compute_op(lua_State *L) {
  const char *name = luaL_checkstring(L, 1);
  luaL_checktype(L, 2, LUA_TTABLE);
  int n = tirL_table_maxn(L, 2);
  for (int i = 1; i <= n; i++) {
    lua_geti(L, 2, i);
    if (!tirL_to_node(L, -1) || tirL_to_node(L, -1)->kind != TIR_IterVar) return luaL_error(L, "axis %d must be an IterVar", i);
    lua_pop(L, 1);
  }
  tir_Node *body = tirL_check_expr_node(L, 3);
  tir_Node *out = tirL_check_node(L, 4, TIR_Buffer, NULL);
  tir_Array *ax = tir_array_new(n);
  for (int i = 1; i <= n; i++) {
    lua_geti(L, 2, i);
    ax->items[i - 1] = tir_retain(tirL_to_node(L, -1));
    lua_pop(L, 1);
  }
  tirL_push_node(L, &tir_compute_op(name, ax, tir_retain(body), (tir_Buffer *)tir_retain(out))->hdr);
  return 1;
}

static int l_input_buffers(lua_State *L) {
  tir_ComputeOp *op = (tir_ComputeOp *)tirL_check_node(L, 1, TIR_ComputeOp, NULL);
  tir_Array *a = tir_te_input_buffers(op);
  lua_createtable(L, a->size, 0);
  for (int i = 0; i < a->size; i++) {
    tirL_push_borrowed(L, a->items[i]);
    lua_rawseti(L, -2, i + 1);
  }
  tir_release(a);
  return 1;
}

/* te_create_prim_func(params, ops, name?) */
static int l_create_prim_func(lua_State *L) {
  luaL_checktype(L, 1, LUA_TTABLE);
  luaL_checktype(L, 2, LUA_TTABLE);
  const char *name = luaL_optstring(L, 3, "main");
  int np = tirL_table_maxn(L, 1), no = tirL_table_maxn(L, 2);
  for (int i = 1; i <= np; i++) {
    lua_geti(L, 1, i);
    tir_Node *n = tirL_to_node(L, -1);
    if (!n || (n->kind != TIR_Buffer && n->kind != TIR_Var)) return luaL_error(L, "create_prim_func: argument %d is not a tensor", i);
    lua_pop(L, 1);
  }
  for (int i = 1; i <= no; i++) {
    lua_geti(L, 2, i);
    tirL_check_node(L, -1, TIR_ComputeOp, "ComputeOp");
    lua_pop(L, 1);
  }
  tir_Array *params = tir_array_new(np), *ops = tir_array_new(no);
  for (int i = 1; i <= np; i++) {
    lua_geti(L, 1, i);
    params->items[i - 1] = tir_retain(tirL_to_node(L, -1));
    lua_pop(L, 1);
  }
  for (int i = 1; i <= no; i++) {
    lua_geti(L, 2, i);
    ops->items[i - 1] = tir_retain(tirL_to_node(L, -1));
    lua_pop(L, 1);
  }
  tir_PrimFunc *f = tir_te_create_prim_func(params, ops, name);
  tir_release(params);
  tir_release(ops);
  if (!f) return tirL_raise_core(L);
  tirL_push_node(L, &f->hdr);
  return 1;
}

void tirL_open_te(lua_State *L) {
  static const luaL_Reg fns[] = {{"te_iter_var", l_iter_var},
                                 {"te_reduce", l_reduce},
                                 {"te_compute_op", l_compute_op},
                                 {"te_input_buffers", l_input_buffers},
                                 {"te_create_prim_func", l_create_prim_func},
                                 {NULL, NULL}};
  luaL_setfuncs(L, fns, 0);
}
