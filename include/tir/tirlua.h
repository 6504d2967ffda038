/* tirlua.h -- embedding tirlua in a C program (Terra's terra.h shape).
 *
 *   lua_State *L = luaL_newstate();
 *   luaL_openlibs(L);
 *   tirlua_openlibs(L);            // registers require "tir" (C core + lib/tir Lua files)
 *   tirlua_dofile(L, "kernel.lua"); // or build and launch through the C API in runtime.h
 *
 * The Lua side of the library (lib/tir/ files) is searched in: $TIRLUA_PATH (a directory
 * holding tir/init.lua), the directory set by tirlua_set_lib_dir, <dir>/../share/lua/5.4
 * where <dir> holds the binary or libtirlua.so this code is in (an installed tree),
 * <exe>/../lib, and the source tree the binary was built from.
 */
#ifndef TIR_TIRLUA_H
#define TIR_TIRLUA_H

#include <lua.h>

#define TIRLUA_VERSION "0.1.0"

/* The C module behind require "tir.core". */
int luaopen_tir_core(lua_State *L);
/* Sets the directory that holds tir/init.lua (before tirlua_openlibs). */
void tirlua_set_lib_dir(const char *dir);
/* Registers tir.core in package.preload, extends package.path with the lib directory and
 * sets the global `tir` to require("tir").  Returns 0, or -1 with an error message pushed. */
int tirlua_openlibs(lua_State *L);
/* Runs a Lua file in L; returns 0 or -1 with the (rendered) error message on the stack. */
int tirlua_dofile(lua_State *L, const char *path);

/* C views of Lua values, for hosts that build in Lua and launch from C (borrowed: valid
 * while the Lua value is alive).  NULL when the value is not of that kind.
 *   tirlua_tofunc:   a PrimFunc (also the function of a tir.Schedule's .mod)
 *   tirlua_tomodule: a built module (tir.build); run it with tir_module_run (codegen.h)
 *   tirlua_toarray:  a tir.NDArray */
struct tir_PrimFunc;
struct tir_BuiltModule;
struct tir_NDArray;
struct tir_PrimFunc *tirlua_tofunc(lua_State *L, int idx);
struct tir_BuiltModule *tirlua_tomodule(lua_State *L, int idx);
struct tir_NDArray *tirlua_toarray(lua_State *L, int idx);

#endif
