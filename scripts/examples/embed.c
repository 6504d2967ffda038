/* embed.c -- example C host embedding tirlua (include/tir/tirlua.h):
**
**   embed script.lua
**
** opens a Lua state with tir loaded, runs the script, then calls the global function
** run_checks() the script defines and requires it to return true.  Prints "embed: ok",
** or the error and exits 1.
*/
#include <stdio.h>
#include <stdlib.h>

#include <lauxlib.h>
#include <lua.h>
#include <lualib.h>

#include "tir/tirlua.h"

/* Message handler: any error object as a string (tir.Error renders its IR report). */
static int render(lua_State *L) {
  luaL_tolstring(L, 1, NULL);
  return 1;
}

/* Calls run_checks(); 1 when it returned true, else 0 with a message on the stack. */
static int run_checks(lua_State *L) {
  int ok;
  lua_pushcfunction(L, render);
  if (lua_getglobal(L, "run_checks") != LUA_TFUNCTION) {
    lua_pop(L, 2);
    lua_pushliteral(L, "the script defines no function run_checks");
    return 0;
  }
  if (lua_pcall(L, 0, 1, -2) != LUA_OK) {
    lua_remove(L, -2); /* handler */
    return 0;
  }
  ok = lua_type(L, -1) == LUA_TBOOLEAN && lua_toboolean(L, -1);
  lua_pop(L, 2); /* result, handler */
  if (!ok) lua_pushliteral(L, "run_checks() did not return true");
  return ok;
}

int main(int argc, char **argv) {
  lua_State *L;
  int ok;
  if (argc != 2) {
    fprintf(stderr, "usage: %s script.lua\n", argv[0]);
    return EXIT_FAILURE;
  }
  if ((L = luaL_newstate()) == NULL) {
    fprintf(stderr, "embed: cannot create a Lua state\n");
    return EXIT_FAILURE;
  }
  luaL_openlibs(L);
  ok = tirlua_openlibs(L) == 0 && tirlua_dofile(L, argv[1]) == 0 && run_checks(L);
  if (ok)
    printf("embed: ok\n");
  else
    fprintf(stderr, "embed: %s\n", lua_tostring(L, -1));
  lua_close(L);
  return ok ? EXIT_SUCCESS : EXIT_FAILURE;
}
