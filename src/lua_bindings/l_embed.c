/* l_embed.c -- the embedding API of include/tir/tirlua.h: tir in any lua_State.
**
** tirlua_openlibs makes require "tir" work with nothing installed: tir.core comes from
** package.preload (this static library), the Lua half (lib/tir) from package.path,
** searched in the directories tirlua.h lists.  Both entry points run their work under
** lua_pcall, so an embedder calling them unprotected never reaches Lua's panic handler.
*/
#define _GNU_SOURCE /* dladdr */
#include <dlfcn.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <lauxlib.h>
#include <lua.h>

#include "tir/tirlua.h"

#define NCANDIDATES 5 /* $TIRLUA_PATH, set_lib_dir, <self>/../share/lua/5.4, <exe>/../lib, source tree */

static char lib_dir[PATH_MAX]; /* tirlua_set_lib_dir's directory ("" when unset) */

void tirlua_set_lib_dir(const char *dir) {
  if (dir == NULL || strlen(dir) >= sizeof lib_dir) dir = ""; /* too long: unusable */
  strcpy(lib_dir, dir);
}

/*
** {======================================================
** Message handlers: the error object always becomes a string
** =======================================================
*/

/* Any error object as a string; objects with __tostring (tir.Error) are rendered. */
static int msg_render(lua_State *L) {
  if (lua_isstring(L, 1)) return 1;
  if (luaL_callmeta(L, 1, "__tostring") && lua_type(L, -1) == LUA_TSTRING) return 1;
  lua_pushfstring(L, "(error object is a %s value)", luaL_typename(L, 1));
  return 1;
}

/* As lua.c: string errors get a traceback; rendered objects carry their own context. */
static int msg_traceback(lua_State *L) {
  if (!lua_isstring(L, 1)) return msg_render(L);
  luaL_traceback(L, L, lua_tostring(L, 1), 1);
  return 1;
}

/* Calls the function below `nargs` arguments under handler h; leaves 0 values on success,
** the message string on failure. */
static int pcall_with(lua_State *L, int nargs, lua_CFunction h) {
  int base = lua_gettop(L) - nargs; /* function index */
  int status;
  lua_pushcfunction(L, h);
  lua_insert(L, base);
  status = lua_pcall(L, nargs, 0, base);
  lua_remove(L, base);
  return status == LUA_OK ? 0 : -1;
}

/* }====================================================== */

/* Canonical name of dir in out when dir holds tir/init.lua; 0 otherwise.  (Checking for
** the file, not just the directory, keeps e.g. /usr/lib -- <exe>/../lib of a binary in
** /bin -- out of package.path.) */
static int lib_dir_ok(const char *dir, char out[PATH_MAX]) {
  char init[PATH_MAX + 16];
  struct stat st;
  if (dir == NULL || *dir == '\0' || realpath(dir, out) == NULL) return 0;
  snprintf(init, sizeof init, "%s/tir/init.lua", out);
  return stat(init, &st) == 0 && S_ISREG(st.st_mode);
}

/* <directory of the running executable>/../lib in out, or "" (Linux's /proc/self/exe). */
static void exe_lib_dir(char out[PATH_MAX]) {
  char exe[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  char *slash;
  out[0] = '\0';
  if (n <= 0) return;
  exe[n] = '\0';
  if ((slash = strrchr(exe, '/')) == NULL) return;
  *slash = '\0';
  if (snprintf(out, PATH_MAX, "%s/../lib", exe) >= PATH_MAX) out[0] = '\0';
}

/* <directory of the file holding this code>/../share/lua/5.4 in out, or "": the installed tree's
** Lua modules (cmake --install) whether this code is in libtirlua.so or linked into a binary. */
static void self_lua_dir(char out[PATH_MAX]) {
  Dl_info info;
  char path[PATH_MAX];
  char *slash;
  out[0] = '\0';
  if (dladdr((void *)&tirlua_openlibs, &info) == 0 || info.dli_fname == NULL) return;
  if (snprintf(path, sizeof path, "%s", info.dli_fname) >= (int)sizeof path) return;
  if ((slash = strrchr(path, '/')) == NULL) return;
  *slash = '\0';
  if (snprintf(out, PATH_MAX, "%s/../share/lua/5.4", path) >= PATH_MAX) out[0] = '\0';
}

/* Whether canon[n] equals one of canon[0..n-1]. */
static int listed(char canon[][PATH_MAX], int n) {
  int j;
  for (j = 0; j < n; j++)
    if (strcmp(canon[j], canon[n]) == 0) return 1;
  return 0;
}

/* Prepends "<dir>/?.lua;<dir>/?/init.lua;" to package.path for each candidate directory
** holding tir/init.lua, the first candidate searched first.  Canonical names drop duplicates
** (<exe>/../lib is often the source tree's lib).  -E (registry LUA_NOENV, as Lua's
** package library) skips $TIRLUA_PATH. */
static void set_path(lua_State *L) {
  char canon[NCANDIDATES][PATH_MAX], exe_lib[PATH_MAX], self_lua[PATH_MAX];
  const char *cand[NCANDIDATES];
  int i, n = 0, pkg;
  if (lua_getglobal(L, "package") != LUA_TTABLE)
    luaL_error(L, "the package library is not open (call luaL_openlibs first)");
  pkg = lua_gettop(L);
  lua_getfield(L, LUA_REGISTRYINDEX, "LUA_NOENV");
  cand[0] = lua_toboolean(L, -1) ? NULL : getenv("TIRLUA_PATH");
  lua_pop(L, 1);
  cand[1] = lib_dir;
  self_lua_dir(self_lua);
  cand[2] = self_lua;
  exe_lib_dir(exe_lib);
  cand[3] = exe_lib;
#ifdef TIRLUA_SOURCE_DIR
  cand[4] = TIRLUA_SOURCE_DIR "/lib";
#else
  cand[4] = NULL;
#endif
  for (i = 0; i < NCANDIDATES; i++) {
    if (!lib_dir_ok(cand[i], canon[n]) || listed(canon, n)) continue;
    lua_pushfstring(L, "%s/?.lua;%s/?/init.lua;", canon[n], canon[n]);
    n++;
  }
  if (lua_getfield(L, pkg, "path") != LUA_TSTRING) {
    lua_pop(L, 1);
    lua_pushliteral(L, "");
  }
  lua_concat(L, n + 1);
  lua_setfield(L, pkg, "path");
  lua_pop(L, 1); /* package */
}

/* The body of tirlua_openlibs (runs protected). */
static int openlibs(lua_State *L) {
  luaL_getsubtable(L, LUA_REGISTRYINDEX, LUA_PRELOAD_TABLE); /* package.preload */
  lua_pushcfunction(L, luaopen_tir_core);
  lua_setfield(L, -2, "tir.core");
  lua_pop(L, 1);
  set_path(L);
  lua_getglobal(L, "require");
  lua_pushliteral(L, "tir");
  lua_call(L, 1, 1);
  lua_setglobal(L, "tir");
  return 0;
}

int tirlua_openlibs(lua_State *L) {
  lua_pushcfunction(L, openlibs);
  return pcall_with(L, 0, msg_render);
}

int tirlua_dofile(lua_State *L, const char *path) {
  if (luaL_loadfile(L, path) != LUA_OK) return -1; /* message on the stack */
  return pcall_with(L, 0, msg_traceback);
}
