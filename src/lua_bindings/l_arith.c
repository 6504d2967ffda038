/* l_arith.c -- the arithmetic core from Lua (mostly for tests and exploration):
 *   tir.simplify(expr [, doms]), tir.can_prove(cond [, doms]), tir.const_int_bound(expr [, doms])
 * doms maps variables to ranges: {[i] = {0, 16}} means 0 <= i < 16 (like range(0, 16)).
 * The same functions and the affine iteration maps are in the table tir.arith:
 *   tir.arith.detect_iter_map(bindings, iters [, opts]) -> ok, reason
 *   tir.arith.subspace_divide(bindings, iters, inner_vars [, opts]) -> parts, outer_pred, inner_pred | nil, reason
 *   tir.arith.iter_map_inverse(outputs, iters, new_vars) -> inverse, ranges | nil, reason
 *     (inverse[l]: iters[l]'s variable in terms of new_vars; ranges[o] = {min, extent}) */
#include <math.h>
#include <stdlib.h>
#include <string.h>

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

/* iters: {{var, extent}, {var, extent, min = m}, ...} (loops [min, min + extent)).  The
 * array is owned by a userdata pushed on the stack (freed by its __gc / Lua). */
static tir_LoopIter *read_iters(lua_State *L, int idx, int *n) {
  luaL_checktype(L, idx, LUA_TTABLE);
  *n = (int)luaL_len(L, idx);
  tir_LoopIter *it = lua_newuserdatauv(L, sizeof(tir_LoopIter) * (size_t)(*n + 1), 0);
  for (int i = 1; i <= *n; i++) {
    lua_geti(L, idx, i);
    if (!lua_istable(L, -1)) luaL_error(L, "iters[%d]: {loop_var, extent} expected", i);
    lua_geti(L, -1, 1);
    tir_Node *v = tirL_to_node(L, -1);
    if (!v || v->kind != TIR_Var) luaL_error(L, "iters[%d][1] must be a variable", i);
    lua_geti(L, -2, 2);
    if (!lua_isinteger(L, -1)) luaL_error(L, "iters[%d][2] (the extent) must be an integer", i);
    lua_getfield(L, -3, "min");
    it[i - 1].var = (tir_Var *)v;
    it[i - 1].extent = lua_tointeger(L, -2);
    it[i - 1].min = lua_isinteger(L, -1) ? lua_tointeger(L, -1) : 0;
    lua_pop(L, 4);
  }
  return it;
}

typedef struct {
  const tir_Node *pred;
  int level;
  int simplify_trivial;
  int64_t *extents; /* userdata on the stack, or NULL */
} IterOpts;

static void read_iter_opts(lua_State *L, int idx, int n, IterOpts *o) {
  memset(o, 0, sizeof *o);
  if (lua_isnoneornil(L, idx)) return;
  luaL_checktype(L, idx, LUA_TTABLE);
  lua_getfield(L, idx, "predicate");
  if (!lua_isnil(L, -1)) o->pred = tirL_check_expr_node(L, lua_gettop(L));
  lua_pop(L, 1); /* the node stays alive: opts holds it */
  lua_getfield(L, idx, "level");
  const char *lv = luaL_optstring(L, -1, "bijective");
  if (strcmp(lv, "bijective") == 0) o->level = TIR_ITER_MAP_BIJECTIVE;
  else if (strcmp(lv, "surjective") == 0) o->level = TIR_ITER_MAP_SURJECTIVE;
  else luaL_error(L, "level must be \"bijective\" or \"surjective\", got '%s'", lv);
  lua_pop(L, 1);
  lua_getfield(L, idx, "simplify_trivial");
  o->simplify_trivial = lua_toboolean(L, -1);
  lua_pop(L, 1);
  lua_getfield(L, idx, "extents");
  if (!lua_isnil(L, -1)) {
    luaL_checktype(L, -1, LUA_TTABLE);
    if ((int)luaL_len(L, -1) != n) luaL_error(L, "extents must have one entry per binding (%d)", n);
    int t = lua_gettop(L);
    o->extents = lua_newuserdatauv(L, sizeof(int64_t) * (size_t)(n + 1), 0);
    for (int i = 1; i <= n; i++) {
      lua_geti(L, t, i);
      if (!lua_isinteger(L, -1)) luaL_error(L, "extents[%d] must be an integer", i);
      o->extents[i - 1] = lua_tointeger(L, -1);
      lua_pop(L, 1);
    }
    /* keep the userdata below the extents table on the stack */
    lua_replace(L, t);
  } else {
    lua_pop(L, 1);
  }
}

static int l_detect_iter_map(lua_State *L) {
  lua_settop(L, 3);
  tir_Array *b = tirL_check_expr_list(L, 1, "bindings");
  tirL_push_node(L, &b->hdr);
  int n_loops;
  tir_LoopIter *it = read_iters(L, 2, &n_loops);
  IterOpts o;
  read_iter_opts(L, 3, b->size, &o);
  char why[400];
  int ok = tir_detect_iter_map_level(NULL, (const tir_Node *const *)b->items, o.extents, b->size, it, n_loops, o.pred,
                                     o.level, why, sizeof why);
  lua_pushboolean(L, ok);
  if (ok) return 1;
  lua_pushstring(L, why);
  return 2;
}

static int l_subspace_divide(lua_State *L) {
  lua_settop(L, 4);
  tir_Array *b = tirL_check_expr_list(L, 1, "bindings");
  tirL_push_node(L, &b->hdr);
  int n_loops;
  tir_LoopIter *it = read_iters(L, 2, &n_loops);
  luaL_checktype(L, 3, LUA_TTABLE);
  int n_inner = (int)luaL_len(L, 3);
  const tir_Var **inner = lua_newuserdatauv(L, sizeof(tir_Var *) * (size_t)(n_inner + 1), 0);
  for (int i = 1; i <= n_inner; i++) {
    lua_geti(L, 3, i);
    tir_Node *v = tirL_to_node(L, -1);
    if (!v || v->kind != TIR_Var) return luaL_error(L, "inner_vars[%d] must be a variable", i);
    inner[i - 1] = (const tir_Var *)v;
    lua_pop(L, 1);
  }
  IterOpts o;
  read_iter_opts(L, 4, b->size, &o);
  if (lua_isnoneornil(L, 4)) o.level = TIR_ITER_MAP_SURJECTIVE;
  char why[400];
  tir_SubspaceDivision d;
  if (!tir_subspace_divide(NULL, (const tir_Node *const *)b->items, b->size, it, n_loops, inner, n_inner, o.pred, o.level,
                           o.simplify_trivial, &d, why, sizeof why)) {
    lua_pushnil(L);
    lua_pushstring(L, why);
    return 2;
  }
  lua_createtable(L, d.n, 0);
  for (int i = 0; i < d.n; i++) {
    lua_createtable(L, 0, 4);
    tirL_push_borrowed(L, d.outer[i]);
    lua_setfield(L, -2, "outer");
    tirL_push_borrowed(L, d.inner[i]);
    lua_setfield(L, -2, "inner");
    lua_pushinteger(L, d.outer_extent[i]);
    lua_setfield(L, -2, "outer_extent");
    lua_pushinteger(L, d.inner_extent[i]);
    lua_setfield(L, -2, "inner_extent");
    lua_rawseti(L, -2, i + 1);
  }
  tirL_push_borrowed(L, d.outer_pred);
  tirL_push_borrowed(L, d.inner_pred);
  tir_subspace_division_free(&d);
  return 3;
}

static int l_iter_map_inverse(lua_State *L) {
  lua_settop(L, 3);
  tir_Array *b = tirL_check_expr_list(L, 1, "outputs");
  tirL_push_node(L, &b->hdr);
  int n_loops;
  tir_LoopIter *it = read_iters(L, 2, &n_loops);
  luaL_checktype(L, 3, LUA_TTABLE);
  if ((int)luaL_len(L, 3) != b->size) return luaL_error(L, "new_vars must have one variable per output (%d)", b->size);
  const tir_Var **nv = lua_newuserdatauv(L, sizeof(tir_Var *) * (size_t)(b->size + 1), 0);
  for (int i = 1; i <= b->size; i++) {
    lua_geti(L, 3, i);
    tir_Node *v = tirL_to_node(L, -1);
    if (!v || v->kind != TIR_Var) return luaL_error(L, "new_vars[%d] must be a variable", i);
    nv[i - 1] = (const tir_Var *)v;
    lua_pop(L, 1);
  }
  int64_t *mn = lua_newuserdatauv(L, sizeof(int64_t) * (size_t)(2 * b->size + 1), 0), *ext = mn + b->size;
  tir_Node **inv = lua_newuserdatauv(L, sizeof(tir_Node *) * (size_t)(n_loops + 1), 0);
  char why[400];
  if (!tir_iter_map_inverse((const tir_Node *const *)b->items, b->size, it, n_loops, nv, mn, ext, inv, why, sizeof why)) {
    lua_pushnil(L);
    lua_pushstring(L, why);
    return 2;
  }
  lua_createtable(L, n_loops, 0);
  for (int l = 0; l < n_loops; l++) {
    tirL_push_node(L, inv[l]); /* takes the reference */
    lua_rawseti(L, -2, l + 1);
  }
  lua_createtable(L, b->size, 0);
  for (int o = 0; o < b->size; o++) {
    lua_createtable(L, 2, 0);
    lua_pushinteger(L, mn[o]);
    lua_rawseti(L, -2, 1);
    lua_pushinteger(L, ext[o]);
    lua_rawseti(L, -2, 2);
    lua_rawseti(L, -2, o + 1);
  }
  return 2;
}

void tirL_open_arith(lua_State *L) {
  static const luaL_Reg fns[] = {{"simplify", l_simplify}, {"can_prove", l_can_prove}, {"const_int_bound", l_const_int_bound}, {NULL, NULL}};
  static const luaL_Reg arith[] = {{"simplify", l_simplify},
                                   {"can_prove", l_can_prove},
                                   {"const_int_bound", l_const_int_bound},
                                   {"detect_iter_map", l_detect_iter_map},
                                   {"subspace_divide", l_subspace_divide},
                                   {"iter_map_inverse", l_iter_map_inverse},
                                   {NULL, NULL}};
  luaL_setfuncs(L, fns, 0);
  luaL_newlib(L, arith);
  lua_setfield(L, -2, "arith");
}
