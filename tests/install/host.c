/* host.c -- a C host built against an installed tirlua (pkg-config tirlua): opens tir in a
 * Lua state, builds a function from Lua, interprets it and checks the result; prints where the
 * Lua modules were found so the install test can check they came from the installed tree. */
#include <stdio.h>

#include <lauxlib.h>
#include <lua.h>
#include <lualib.h>

#include "tir/tirlua.h"

static const char *CHUNK =
    "local te = tir.te\n"
    "local A = te.placeholder({8}, 'int32', 'A')\n"
    "local B = te.compute({8}, function(i) return A[{i}] * 3 + 1 end, 'B')\n"
    "local f = te.create_prim_func({A, B})\n"
    "local a = tir.nd.array({0, 1, 2, 3, 4, 5, 6, 7}, 'int32')\n"
    "local b = tir.nd.empty({8}, 'int32')\n"
    "tir.interpret(f, {a, b})\n"
    "for i = 0, 7 do assert(b:get(i) == 3 * i + 1, 'wrong value') end\n"
    "print('tir from ' .. package.searchpath('tir', package.path))\n"
    "print('host ok, tirlua ' .. tir.version)\n";

int main(void) {
  lua_State *L = luaL_newstate();
  luaL_openlibs(L);
  if (tirlua_openlibs(L) != 0 || luaL_loadstring(L, CHUNK) != LUA_OK || lua_pcall(L, 0, 0, 0) != LUA_OK) {
    fprintf(stderr, "host: %s\n", lua_tostring(L, -1));
    lua_close(L);
    return 1;
  }
  lua_close(L);
  return 0;
}
