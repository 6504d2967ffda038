/* l_cudnn.c -- the cuDNN conv2d reference from Lua (include/tir/runtime.h, cudnn.c):
 * core.cudnn_available() -> ok, path | why; core.cudnn_version();
 * core.cudnn_conv2d_plan(x, w, y, sh, sw, ph, pw, dh, dw, groups, path, max_configs, rtc,
 * workspace_limit) -> "tir.CudnnConv2d" (methods run(x, w, y), algo(), path(), tensor_ops(),
 * find_ms(), workspace_bytes(), candidates()).  path: 0 best, 1 backend, 2 legacy Find,
 * 3 legacy FindEx (TIR_CUDNN_PATH_*).
 * lib/tir/cudnn.lua checks the options and is what users call (tir.cudnn). */
#include <stdlib.h>

#include "l_tir.h"
#include "tir/runtime.h"

#define MT "tir.CudnnConv2d"

tir_NDArray *tirL_to_ndarray(lua_State *L, int idx);

typedef struct {
  tir_CudnnConv2d *c;
} Box;

static tir_CudnnConv2d *check_plan(lua_State *L, int idx) {
  Box *b = luaL_checkudata(L, idx, MT);
  if (!b->c) luaL_error(L, "cuDNN plan was freed");
  return b->c;
}

static tir_NDArray *check_nd(lua_State *L, int idx, const char *what) {
  tir_NDArray *a = tirL_to_ndarray(L, idx);
  if (!a) tirL_error(L, TIR_ERR_TYPE, "cudnn.conv2d", "%s must be a tir.NDArray, got %s", what, luaL_typename(L, idx));
  return a;
}

static int l_available(lua_State *L) {
  char why[1024];
  int ok = tir_cudnn_available(why, sizeof why);
  lua_pushboolean(L, ok);
  lua_pushstring(L, why);
  return 2;
}

static int l_version(lua_State *L) {
  lua_pushinteger(L, tir_cudnn_version());
  return 1;
}

static int l_plan(lua_State *L) {
  tir_NDArray *x = check_nd(L, 1, "x"), *w = check_nd(L, 2, "w"), *y = check_nd(L, 3, "y");
  int stride[2] = {(int)luaL_checkinteger(L, 4), (int)luaL_checkinteger(L, 5)};
  int pad[2] = {(int)luaL_checkinteger(L, 6), (int)luaL_checkinteger(L, 7)};
  int dil[2] = {(int)luaL_checkinteger(L, 8), (int)luaL_checkinteger(L, 9)};
  int groups = (int)luaL_checkinteger(L, 10);
  tir_CudnnOptions o = {.path = (int)luaL_optinteger(L, 11, TIR_CUDNN_PATH_BEST), .max_configs = (int)luaL_optinteger(L, 12, 0),
                        .rtc = lua_toboolean(L, 13), .workspace_limit = (size_t)luaL_optinteger(L, 14, 0)};
  Box *b = lua_newuserdatauv(L, sizeof(Box), 0);
  b->c = NULL;
  luaL_setmetatable(L, MT);
  b->c = tir_cudnn_conv2d_plan(x, w, y, stride, pad, dil, groups, &o, NULL, 0);
  if (!b->c) return tirL_raise_core(L);
  return 1;
}

static int p_run(lua_State *L) {
  tir_CudnnConv2d *c = check_plan(L, 1);
  tir_NDArray *x = check_nd(L, 2, "x"), *w = check_nd(L, 3, "w"), *y = check_nd(L, 4, "y");
  if (tir_cudnn_conv2d_run(c, x, w, y)) return tirL_raise_core(L);
  return 0;
}

static int p_algo(lua_State *L) {
  lua_pushstring(L, tir_cudnn_conv2d_algo(check_plan(L, 1)));
  return 1;
}

static int p_path(lua_State *L) {
  lua_pushstring(L, tir_cudnn_conv2d_path(check_plan(L, 1)));
  return 1;
}

/* {{path, heuristic, rank, name, ms (nil: not run), find_ms, workspace_bytes, note}, ...} */
static int p_candidates(lua_State *L) {
  const tir_CudnnCandidate *cs;
  int n = tir_cudnn_conv2d_candidates(check_plan(L, 1), &cs);
  lua_createtable(L, n, 0);
  for (int i = 0; i < n; i++) {
    const tir_CudnnCandidate *c = &cs[i];
    lua_createtable(L, 0, 8);
    lua_pushstring(L, c->path);
    lua_setfield(L, -2, "path");
    if (c->heuristic) {
      lua_pushstring(L, c->heuristic);
      lua_setfield(L, -2, "heuristic");
    }
    lua_pushinteger(L, c->rank);
    lua_setfield(L, -2, "rank");
    lua_pushstring(L, c->name);
    lua_setfield(L, -2, "name");
    if (c->ms >= 0) {
      lua_pushnumber(L, c->ms);
      lua_setfield(L, -2, "ms");
    }
    if (c->find_ms > 0) {
      lua_pushnumber(L, c->find_ms);
      lua_setfield(L, -2, "find_ms");
    }
    lua_pushinteger(L, (lua_Integer)c->workspace);
    lua_setfield(L, -2, "workspace_bytes");
    lua_pushstring(L, c->note);
    lua_setfield(L, -2, "note");
    lua_rawseti(L, -2, i + 1);
  }
  return 1;
}

static int p_tensor_ops(lua_State *L) {
  lua_pushboolean(L, tir_cudnn_conv2d_uses_tensor_ops(check_plan(L, 1)));
  return 1;
}

static int p_find_ms(lua_State *L) {
  lua_pushnumber(L, tir_cudnn_conv2d_find_ms(check_plan(L, 1)));
  return 1;
}

static int p_workspace(lua_State *L) {
  lua_pushinteger(L, (lua_Integer)tir_cudnn_conv2d_workspace(check_plan(L, 1)));
  return 1;
}

static int p_gc(lua_State *L) {
  Box *b = luaL_checkudata(L, 1, MT);
  tir_cudnn_conv2d_free(b->c);
  b->c = NULL;
  return 0;
}

static int p_tostring(lua_State *L) {
  tir_CudnnConv2d *c = check_plan(L, 1);
  lua_pushfstring(L, "tir.CudnnConv2d(%s: %s%s)", tir_cudnn_conv2d_path(c), tir_cudnn_conv2d_algo(c),
                  tir_cudnn_conv2d_uses_tensor_ops(c) ? ", tensor ops" : "");
  return 1;
}

void tirL_open_cudnn(lua_State *L) {
  static const luaL_Reg methods[] = {{"run", p_run},         {"algo", p_algo},           {"tensor_ops", p_tensor_ops},
                                     {"find_ms", p_find_ms}, {"workspace_bytes", p_workspace}, {"path", p_path},
                                     {"candidates", p_candidates}, {NULL, NULL}};
  luaL_newmetatable(L, MT);
  lua_pushcfunction(L, p_gc);
  lua_setfield(L, -2, "__gc");
  lua_pushcfunction(L, p_tostring);
  lua_setfield(L, -2, "__tostring");
  lua_newtable(L);
  luaL_setfuncs(L, methods, 0);
  lua_setfield(L, -2, "__index");
  lua_pop(L, 1);
  static const luaL_Reg fns[] = {{"cudnn_available", l_available}, {"cudnn_version", l_version}, {"cudnn_conv2d_plan", l_plan}, {NULL, NULL}};
  luaL_setfuncs(L, fns, 0);
}
