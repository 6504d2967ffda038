/* l_extern.c -- tir.register_extern / tir.register_extern_model: external device functions
 * (include/tir/extern.h) with an optional CUDA source and a CPU model written in Lua.
 *
 * A Lua model runs inside tir.interpret / tir.simulate: those bindings enter the current Lua
 * state (tirL_extern_enter) so the model is called on the state that is running. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "l_tir.h"
#include "tir/extern.h"

static _Thread_local lua_State *current_L;

lua_State *tirL_extern_enter(lua_State *L) {
  lua_State *prev = current_L;
  current_L = L;
  return prev;
}
void tirL_extern_leave(lua_State *prev) { current_L = prev; }

typedef struct {
  int ref; /* the model function in the registry */
} LuaModel;

static int lua_model(void *ctx, const char *name, int nargs, const tir_ExternValue *args, tir_ExternValue *ret, char *err,
                     size_t errlen) {
  lua_State *L = current_L;
  if (!L) {
    snprintf(err, errlen, "the model of '%s' is a Lua function, called outside tir.interpret/tir.simulate", name);
    return -1;
  }
  if (!lua_checkstack(L, nargs + 4)) {
    snprintf(err, errlen, "Lua stack overflow");
    return -1;
  }
  lua_rawgeti(L, LUA_REGISTRYINDEX, ((LuaModel *)ctx)->ref);
  for (int i = 0; i < nargs; i++) {
    tir_DType t = args[i].dtype;
    if (tir_dtype_is_float(t)) lua_pushnumber(L, args[i].f);
    else if (t.code == TIR_DT_BOOL) lua_pushboolean(L, args[i].i != 0);
    else lua_pushinteger(L, args[i].i);
  }
  if (lua_pcall(L, nargs, 1, 0) != LUA_OK) {
    const char *m = lua_tostring(L, -1);
    snprintf(err, errlen, "%s", m ? m : "(error object is not a string)");
    lua_pop(L, 1);
    return -1;
  }
  tir_DType t = ret->dtype;
  int rc = 0;
  char ts[32];
  if (t.code == TIR_DT_VOID) {
  } else if (tir_dtype_is_float(t)) {
    int isnum;
    ret->f = lua_tonumberx(L, -1, &isnum);
    if (!isnum) rc = -1;
  } else if (t.code == TIR_DT_BOOL && lua_type(L, -1) == LUA_TBOOLEAN) {
    ret->i = lua_toboolean(L, -1);
  } else {
    int isint;
    ret->i = lua_tointegerx(L, -1, &isint);
    if (!isint || lua_type(L, -1) != LUA_TNUMBER) rc = -1;
  }
  if (rc) {
    const char *tn = luaL_typename(L, -1);
    const char *v = lua_type(L, -1) == LUA_TNUMBER ? luaL_tolstring(L, -1, NULL) : "";
    snprintf(err, errlen, "the model returned %s %s, but the call's dtype is %s", tn, v, tir_dtype_str(t, ts));
    if (*v) lua_pop(L, 1);
  }
  lua_pop(L, 1);
  return rc;
}

/* registers name with source/model from the stack (model at index mi or nil) */
static int do_register(lua_State *L, const char *name, const char *src, int mi) {
  if (!tir_extern_name_valid(name))
    return tirL_error(L, TIR_ERR_VALUE, "register_extern", "'%s' is not a C function name ([A-Za-z_][A-Za-z0-9_]*, parts joined by ::)",
                      name);
  tir_ExternModelFn old_model = NULL;
  void *old_ctx = NULL;
  if (tir_extern_lookup(name, NULL, &old_model, &old_ctx) && old_model == lua_model && old_ctx)
    luaL_unref(L, LUA_REGISTRYINDEX, ((LuaModel *)old_ctx)->ref);
  LuaModel *m = NULL;
  if (mi && !lua_isnil(L, mi)) {
    m = malloc(sizeof *m);
    lua_pushvalue(L, mi);
    m->ref = luaL_ref(L, LUA_REGISTRYINDEX);
  }
  /* the state may be closing when the registry is cleared: contexts are freed, not unref'd */
  if (tir_extern_register(name, src, m ? lua_model : NULL, m, free)) {
    if (m) luaL_unref(L, LUA_REGISTRYINDEX, m->ref);
    free(m);
    return tirL_raise_core(L);
  }
  return 0;
}

/* tir.register_extern(name, {cuda = "device source", model = function(...) end}) */
static int l_register_extern(lua_State *L) {
  const char *name = luaL_checkstring(L, 1);
  luaL_checktype(L, 2, LUA_TTABLE);
  lua_pushnil(L);
  while (lua_next(L, 2)) {
    const char *k = lua_type(L, -2) == LUA_TSTRING ? lua_tostring(L, -2) : NULL;
    if (!k || (strcmp(k, "cuda") != 0 && strcmp(k, "model") != 0))
      return tirL_error(L, TIR_ERR_VALUE, "register_extern", "unknown option %s (options: cuda, model)",
                        k ? k : luaL_typename(L, -2));
    lua_pop(L, 1);
  }
  lua_getfield(L, 2, "cuda");
  if (!lua_isnil(L, -1) && lua_type(L, -1) != LUA_TSTRING)
    return tirL_error(L, TIR_ERR_TYPE, "register_extern", "cuda must be a string of CUDA C (got %s)", luaL_typename(L, -1));
  lua_getfield(L, 2, "model");
  if (!lua_isnil(L, -1) && !lua_isfunction(L, -1))
    return tirL_error(L, TIR_ERR_TYPE, "register_extern", "model must be a function (got %s)", luaL_typename(L, -1));
  do_register(L, name, lua_tostring(L, -2), lua_gettop(L));
  return 0;
}

/* tir.register_extern_model(name, fn): a CPU model only (the device function is a CUDA
 * built-in or registered with tir.register_extern) */
static int l_register_extern_model(lua_State *L) {
  const char *name = luaL_checkstring(L, 1);
  luaL_checktype(L, 2, LUA_TFUNCTION);
  const char *src = NULL;
  tir_extern_lookup(name, &src, NULL, NULL);
  char *keep = src ? strdup(src) : NULL;
  do_register(L, name, keep, 2);
  free(keep);
  return 0;
}

static int extern_registry_gc(lua_State *L) {
  (void)L;
  tir_extern_clear();
  return 0;
}

void tirL_open_extern(lua_State *L) {
  lua_pushcfunction(L, l_register_extern);
  lua_setfield(L, -2, "register_extern");
  lua_pushcfunction(L, l_register_extern_model);
  lua_setfield(L, -2, "register_extern_model");
  lua_newuserdatauv(L, 1, 0);
  lua_newtable(L);
  lua_pushcfunction(L, extern_registry_gc);
  lua_setfield(L, -2, "__gc");
  lua_setmetatable(L, -2);
  lua_setfield(L, LUA_REGISTRYINDEX, "tir.extern_registry_sentinel");
}
