/* l_interp.c -- tir.interpret(func, args): runs a PrimFunc on host arrays. */
#include <stdlib.h>

#include "l_tir.h"
#include "tir/interp.h"

tir_NDArray *tirL_to_ndarray(lua_State *L, int idx);

/* Reads the argument table for func into args (NDArrays or numbers). */
int tirL_read_args(lua_State *L, const tir_PrimFunc *f, int first, int nargs, tir_InterpArg *args);
int tirL_read_args(lua_State *L, const tir_PrimFunc *f, int first, int nargs, tir_InterpArg *args) {
  for (int i = 0; i < nargs; i++) {
    int idx = first + i;
    tir_NDArray *a = tirL_to_ndarray(L, idx);
    args[i].array = a;
    if (!a) {
      const tir_Node *p = i < f->params->size ? f->params->items[i] : NULL;
      const char *pname = !p ? "extra" : p->kind == TIR_Buffer ? ((const tir_Buffer *)p)->name : ((const tir_Var *)p)->name;
      if (!p || p->kind == TIR_Buffer)
        return tirL_error(L, TIR_ERR_RUNTIME, f->name, "argument %d (%s) must be a tir.NDArray, got %s", i + 1, pname,
                          luaL_typename(L, idx));
      tir_DType pt = p->dtype;
      if (lua_type(L, idx) != LUA_TNUMBER && !(tir_dtype_is_bool(pt) && lua_isboolean(L, idx)))
        return tirL_error(L, TIR_ERR_RUNTIME, f->name, "argument %d (%s) must be a number, got %s", i + 1, pname,
                          luaL_typename(L, idx));
      if (tir_dtype_is_float(pt)) {
        args[i].fval = lua_tonumber(L, idx);
        args[i].ival = 0;
      } else { /* integer parameters: refused, never truncated or wrapped (7.5, 1 << 40 for int32, NaN) */
        char why[160];
        if (tirL_int_for_dtype(L, idx, pt, &args[i].ival, why, sizeof why))
          return tirL_error(L, TIR_ERR_RUNTIME, f->name, "argument %d (%s) is %s", i + 1, pname, why);
        args[i].fval = (double)args[i].ival;
      }
    }
  }
  return 0;
}

static int interpret_with(lua_State *L, const tir_InterpOptions *o);

/* interpret(func, {a, b, c}) or interpret(func, a, b, c) */
static int l_interpret(lua_State *L) { return interpret_with(L, NULL); }

/* interpret_async_deferred(func, args...): async copies land at their ptx_wait_group, and
 * touching data still in flight fails (tir_interpret_opts; checks pipelines' waits). */
static int l_interpret_async_deferred(lua_State *L) {
  tir_InterpOptions o = {1};
  return interpret_with(L, &o);
}

static int interpret_with(lua_State *L, const tir_InterpOptions *o) {
  tir_Node *fn = tirL_check_node(L, 1, -1, NULL);
  if (fn->kind == TIR_IRModule && ((tir_IRModule *)fn)->functions->size == 1) fn = ((tir_IRModule *)fn)->functions->items[0];
  if (fn->kind != TIR_PrimFunc) return luaL_argerror(L, 1, "PrimFunc expected");
  tir_PrimFunc *f = (tir_PrimFunc *)fn;
  if (lua_type(L, 2) == LUA_TTABLE) {
    int n = tirL_table_maxn(L, 2);
    lua_settop(L, 2);
    for (int i = 1; i <= n; i++) lua_geti(L, 2, i);
    lua_remove(L, 2);
  }
  int nargs = lua_gettop(L) - 1;
  tir_InterpArg *args = lua_newuserdatauv(L, sizeof(tir_InterpArg) * (size_t)(nargs + 1), 0);
  tirL_read_args(L, f, 2, nargs, args);
  lua_State *prev = tirL_extern_enter(L);
  int rc = tir_interpret_opts(f, args, nargs, o);
  tirL_extern_leave(prev);
  if (rc) return tirL_raise_core(L);
  return 0;
}

/* interpret_alloc_limit([bytes]) -> the previous limit (no argument: just the limit) */
static int l_alloc_limit(lua_State *L) {
  lua_Integer b = luaL_optinteger(L, 1, 0);
  if (!lua_isnoneornil(L, 1) && b <= 0)
    return tirL_error(L, TIR_ERR_VALUE, "interpret_alloc_limit", "the limit must be a positive number of bytes, got %lld", (long long)b);
  lua_pushinteger(L, tir_interp_set_alloc_limit(b));
  return 1;
}

void tirL_open_interp(lua_State *L) {
  lua_pushcfunction(L, l_alloc_limit);
  lua_setfield(L, -2, "interpret_alloc_limit");
  lua_pushcfunction(L, l_interpret);
  lua_setfield(L, -2, "interpret");
  lua_pushcfunction(L, l_interpret_async_deferred);
  lua_setfield(L, -2, "interpret_async_deferred");
}
