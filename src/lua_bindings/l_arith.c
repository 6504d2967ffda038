/* l_arith.c -- the arithmetic core from Lua (mostly for tests and exploration):
 *   tir.simplify(expr [, doms]), tir.can_prove(cond [, doms]), tir.const_int_bound(expr [, doms])
 * doms maps variables to ranges: {[i] = {0, 16}} means 0 <= i < 16 (like range(0, 16)). */
#include <math.h>

#include "l_tir.h"
#include "tir/arith.h"

static tir_Analyzer *read_doms(lua_State *L, int idx) {
  tir_Analyzer *a = tir_analyzer_new();
  if (lua_isnoneornil(L, idx)) return a;
  if (lua_type(L, idx) != LUA_TTABLE) {
    tir_analyzer_free(a);
    luaL_argerror(L, idx, "table {[var] = {lo, hi}} expected");
  }
  lua_pushnil(L);
  while (lua_next(L, idx)) {
    tir_Node *v = tirL_to_node(L, -2);
    if (!v || v->kind != TIR_Var || lua_type(L, -1) != LUA_TTABLE) {
      tir_analyzer_free(a);
      luaL_error(L, "domains: keys must be variables and values {lo, hi}");
    }
    lua_geti(L, -1, 1);
    lua_geti(L, -2, 2);
    if (!lua_isinteger(L, -1) || !lua_isinteger(L, -2)) {
      tir_analyzer_free(a);
      luaL_error(L, "domains: {lo, hi} must be integers");
    }
    tir_analyzer_bind_bound(a, (tir_Var *)v, lua_tointeger(L, -2), lua_tointeger(L, -1) - 1);
    lua_pop(L, 3);
  }
  return a;
}

static int l_simplify(lua_State *L) {
  tir_Node *e = tirL_check_node(L, 1, -1, NULL);
  tir_Analyzer *a = read_doms(L, 2);
  tir_Node *r = tir_is_expr(e) ? tir_simplify(a, e) : tir_simplify_stmt(a, e);
  tir_analyzer_free(a);
  if (!r) return tirL_raise_core(L);
  tirL_push_node(L, r);
  return 1;
}

static int l_can_prove(lua_State *L) {
  tir_Node *e = tirL_check_expr_node(L, 1);
  tir_Analyzer *a = read_doms(L, 2);
  int r = tir_can_prove(a, e);
  tir_analyzer_free(a);
  lua_pushboolean(L, r);
  return 1;
}

static int l_const_int_bound(lua_State *L) {
  tir_Node *e = tirL_check_expr_node(L, 1);
  tir_Analyzer *a = read_doms(L, 2);
  tir_ConstIntBound b = tir_const_int_bound(a, e);
  tir_analyzer_free(a);
  if (b.min == TIR_NEG_INF) lua_pushnumber(L, -HUGE_VAL);
  else lua_pushinteger(L, b.min);
  if (b.max == TIR_POS_INF) lua_pushnumber(L, HUGE_VAL);
  else lua_pushinteger(L, b.max);
  return 2;
}

void tirL_open_arith(lua_State *L) {
  static const luaL_Reg fns[] = {{"simplify", l_simplify}, {"can_prove", l_can_prove}, {"const_int_bound", l_const_int_bound}, {NULL, NULL}};
  luaL_setfuncs(L, fns, 0);
}
