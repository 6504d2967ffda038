/* l_tir.c -- luaopen_tir_core: the C side of require "tir" (lib/tir/init.lua wraps it). */
#include "l_tir.h"
#include "tir/tirlua.h"

int luaopen_tir_core(lua_State *L) {
  lua_newtable(L);
  tirL_open_node(L);
  tirL_open_expr(L);
  tirL_open_te(L);
  tirL_open_schedule(L);
  tirL_open_transform(L);
  tirL_open_runtime(L);
  tirL_open_interp(L);
  tirL_open_arith(L);
  tirL_open_sim(L);
  tirL_open_extern(L);
  tirL_open_tables(L);
  tirL_open_dispatch(L);
  tirL_open_cudnn(L);
  lua_pushstring(L, TIRLUA_VERSION);
  lua_setfield(L, -2, "version");
#ifdef TIRLUA_SOURCE_DIR
  lua_pushstring(L, TIRLUA_SOURCE_DIR);
  lua_setfield(L, -2, "source_dir");
#endif
  return 1;
}
