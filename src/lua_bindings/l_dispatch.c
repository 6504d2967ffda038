/* l_dispatch.c -- kernel families from Lua: core.specialize(func, {var, value, ...}, name) and
 * core.dispatcher_new(name, signature) -> "tir.Dispatcher" (include/tir/dispatch.h); lib/tir/dispatch.lua
 * builds families on top. */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "l_tir.h"
#include "tir/dispatch.h"
#include "tir/tirlua.h"
#include "tir/transform.h"

#define MT "tir.Dispatcher"
#define MAX_ARGS 64

int tirL_read_args(lua_State *L, const tir_PrimFunc *f, int first, int nargs, tir_InterpArg *args);

typedef struct {
  tir_Dispatcher *d;
} Box;

static tir_Dispatcher *check_disp(lua_State *L, int idx) {
  Box *b = luaL_checkudata(L, idx, MT);
  if (!b->d) luaL_error(L, "dispatcher was freed");
  return b->d;
}

static tir_PrimFunc *check_func(lua_State *L, int idx) {
  tir_Node *fn = tirL_check_node(L, idx, -1, NULL);
  if (fn->kind != TIR_PrimFunc) luaL_argerror(L, idx, "PrimFunc expected");
  return (tir_PrimFunc *)fn;
}

/* specialize(func, {var, value, var, value, ...} [, name]) -> PrimFunc */
static int l_specialize(lua_State *L) {
  tir_PrimFunc *f = check_func(L, 1);
  luaL_checktype(L, 2, LUA_TTABLE);
  const char *name = luaL_optstring(L, 3, NULL);
  int n = (int)lua_rawlen(L, 2) / 2;
  if (n > 64) return tirL_error(L, TIR_ERR_VALUE, "specialize", "at most 64 variables at once");
  tir_Var *vars[64];
  tir_Node *vals[64];
  for (int i = 0; i < n; i++) {
    lua_rawgeti(L, 2, 2 * i + 1);
    tir_Node *v = tirL_to_node(L, -1);
    lua_pop(L, 1);
    if (!v || v->kind != TIR_Var) return tirL_error(L, TIR_ERR_TYPE, "specialize", "element %d must be a variable (tir.var / te.var)", 2 * i + 1);
    vars[i] = (tir_Var *)v;
  }
  for (int i = 0; i < n; i++) {
    lua_rawgeti(L, 2, 2 * i + 2);
    if (!lua_isinteger(L, -1)) {
      for (int j = 0; j < i; j++) tir_release(vals[j]);
      return tirL_error(L, TIR_ERR_TYPE, "specialize", "the value of %s must be an integer, got %s", vars[i]->name, luaL_typename(L, -1));
    }
    vals[i] = tir_int_imm(tir_dtype(TIR_DT_INT, 64, 1), lua_tointeger(L, -1)); /* tir_specialize checks the range */
    lua_pop(L, 1);
  }
  tir_PrimFunc *g = tir_specialize(f, n, vars, vals, name);
  for (int i = 0; i < n; i++) tir_release(vals[i]);
  if (!g) return tirL_raise_core(L);
  tirL_push_node(L, &g->hdr);
  return 1;
}

/* dispatcher_new(name, signature) -> Dispatcher; its uservalue keeps entries' modules alive */
static int l_new(lua_State *L) {
  const char *name = luaL_checkstring(L, 1);
  tir_PrimFunc *sig = check_func(L, 2);
  Box *b = lua_newuserdatauv(L, sizeof(Box), 1);
  b->d = NULL;
  luaL_setmetatable(L, MT);
  lua_newtable(L);
  lua_setiuservalue(L, -2, 1);
  b->d = tir_dispatcher_new(name, sig);
  if (!b->d) return tirL_raise_core(L);
  return 1;
}

static int d_gc(lua_State *L) {
  Box *b = luaL_checkudata(L, 1, MT);
  tir_dispatcher_free(b->d);
  b->d = NULL;
  return 0;
}

/* d:add(label, note, func|nil, module|nil, {{var index (1-based), lo, hi}, ...}, fallback) -> index (1-based) */
static int d_add(lua_State *L) {
  tir_Dispatcher *d = check_disp(L, 1);
  const char *label = luaL_optstring(L, 2, NULL), *note = luaL_optstring(L, 3, NULL);
  tir_PrimFunc *f = lua_isnoneornil(L, 4) ? NULL : check_func(L, 4);
  tir_BuiltModule *m = lua_isnoneornil(L, 5) ? NULL : tirlua_tomodule(L, 5);
  if (!lua_isnoneornil(L, 5) && !m) return luaL_argerror(L, 5, "tir.Module expected");
  tir_DispatchRange r[TIR_DISPATCH_MAX_VARS];
  int nr = 0;
  if (!lua_isnoneornil(L, 6)) {
    luaL_checktype(L, 6, LUA_TTABLE);
    nr = (int)lua_rawlen(L, 6);
    if (nr > TIR_DISPATCH_MAX_VARS) return tirL_error(L, TIR_ERR_VALUE, "dispatch", "at most %d ranges", TIR_DISPATCH_MAX_VARS);
    for (int i = 0; i < nr; i++) {
      lua_rawgeti(L, 6, i + 1);
      int64_t x[3];
      for (int k = 0; k < 3; k++) {
        lua_rawgeti(L, -1, k + 1);
        x[k] = lua_isinteger(L, -1) ? lua_tointeger(L, -1) : (k == 1 ? INT64_MIN : k == 2 ? INT64_MAX : -1);
        lua_pop(L, 1);
      }
      lua_pop(L, 1);
      r[i] = (tir_DispatchRange){(int)x[0] - 1, x[1], x[2]};
    }
  }
  int idx = tir_dispatcher_add(d, label, note, f, m, nr, r, lua_toboolean(L, 7));
  if (idx < 0) return tirL_raise_core(L);
  if (m) { /* keep the module alive as long as the dispatcher */
    lua_getiuservalue(L, 1, 1);
    lua_pushvalue(L, 5);
    lua_rawseti(L, -2, idx + 1);
    lua_pop(L, 1);
  }
  lua_pushinteger(L, idx + 1);
  return 1;
}

static int read_args(lua_State *L, tir_Dispatcher *d, int first, tir_InterpArg *args) {
  int nargs = lua_gettop(L) - first + 1;
  if (nargs < 0) nargs = 0;
  if (nargs > MAX_ARGS) return tirL_error(L, TIR_ERR_RUNTIME, tir_dispatcher_name(d), "at most %d arguments", MAX_ARGS);
  const tir_PrimFunc *sig = tir_dispatcher_signature(d);
  if (nargs != sig->params->size) { /* the core's message names the parameters */
    if (tir_dispatcher_select(d, args, nargs, NULL) < 0) return tirL_raise_core(L);
  }
  tirL_read_args(L, sig, first, nargs, args);
  return nargs;
}

/* The four ways to call a dispatcher, each returning the entry's index (1-based):
 *   d:select(args...)  selection only;  d:check(args...)  + the entry's argument checks (any device);
 *   d(args...)         + launch and synchronize;  d:launch(args...)  + launch, no synchronization. */
enum { SELECT, CHECK, RUN, LAUNCH };
static int call_with(lua_State *L, int how) {
  tir_Dispatcher *d = check_disp(L, 1);
  tir_InterpArg args[MAX_ARGS];
  int n = read_args(L, d, 2, args);
  int i = how == SELECT ? tir_dispatcher_select(d, args, n, NULL) : how == CHECK ? tir_dispatcher_check(d, args, n, -1)
        : how == RUN ? tir_dispatcher_run(d, args, n) : tir_dispatcher_launch(d, args, n);
  if (i < 0) return tirL_raise_core(L);
  lua_pushinteger(L, i + 1);
  return 1;
}
static int d_select(lua_State *L) { return call_with(L, SELECT); }
static int d_check(lua_State *L) { return call_with(L, CHECK); }
static int d_call(lua_State *L) { return call_with(L, RUN); }
static int d_launch(lua_State *L) { return call_with(L, LAUNCH); }

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* d:bench(mode, n, args...) -> host seconds per call of the C path, and seconds per call until
 * the GPU is done (the same for the modes without launches):
 *   "select" (selection), "check" (selection + the entry's argument checks), "launch"
 *   (tir_dispatcher_launch), "module_launch" (tir_module_launch of the entry these arguments
 *   select: the baseline without dispatch).  The launch modes queue n launches without waiting
 *   (keep n below the driver's queue depth, ~1000, and the kernel short, so that the host time
 *   is the launch path's and not the GPU's), then synchronize once. */
static int d_bench(lua_State *L) {
  tir_Dispatcher *d = check_disp(L, 1);
  const char *mode = luaL_checkstring(L, 2);
  lua_Integer reps = luaL_checkinteger(L, 3);
  if (reps < 1 || reps > 100000000) return luaL_argerror(L, 3, "repetitions in 1..1e8");
  tir_InterpArg args[MAX_ARGS];
  int n = read_args(L, d, 4, args);
  int m = strcmp(mode, "select") == 0 ? 0 : strcmp(mode, "check") == 0 ? 1 : strcmp(mode, "launch") == 0 ? 2
        : strcmp(mode, "module_launch") == 0 ? 3 : -1;
  if (m < 0) return tirL_error(L, TIR_ERR_VALUE, "Dispatcher:bench", "mode must be select, check, launch or module_launch, got '%s'", mode);
  int first = tir_dispatcher_check(d, args, n, -1); /* errors before timing */
  if (first < 0) return tirL_raise_core(L);
  tir_BuiltModule *mod = NULL;
  tir_dispatcher_entry(d, first, NULL, NULL, NULL, &mod, NULL);
  if (m >= 2 && !mod) return tirL_error(L, TIR_ERR_RUNTIME, "Dispatcher:bench", "the selected entry has no built module");
  int rc = 0, dev = 0;
  for (int i = 0; i < n; i++)
    if (args[i].array) dev = args[i].array->dev.id;
  if (m >= 2) rc = tir_module_launch(mod, args, n); /* loads the module: not part of the timing */
  if (!rc && m >= 2) rc = tir_cuda_synchronize(dev);
  double t0 = now_s();
  for (lua_Integer r = 0; r < reps && !rc; r++) {
    switch (m) {
      case 0: rc = tir_dispatcher_select(d, args, n, NULL) < 0; break;
      case 1: rc = tir_dispatcher_check(d, args, n, -1) < 0; break;
      case 2: rc = tir_dispatcher_launch(d, args, n) < 0; break;
      default: rc = tir_module_launch(mod, args, n) != 0;
    }
  }
  double t = (now_s() - t0) / (double)reps; /* host time: the loop, before waiting for the GPU */
  if (!rc && m >= 2) rc = tir_cuda_synchronize(dev);
  double t_all = (now_s() - t0) / (double)reps;
  if (rc) return tirL_raise_core(L);
  lua_pushnumber(L, t);
  lua_pushnumber(L, t_all);
  return 2;
}

static int d_num_entries(lua_State *L) {
  lua_pushinteger(L, tir_dispatcher_num_entries(check_disp(L, 1)));
  return 1;
}

/* d:entry(i) -> {label, note, func, module, calls, when} */
static int d_entry(lua_State *L) {
  tir_Dispatcher *d = check_disp(L, 1);
  lua_Integer i = luaL_checkinteger(L, 2);
  if (i < 1 || i > tir_dispatcher_num_entries(d))
    return tirL_error(L, TIR_ERR_VALUE, "Dispatcher:entry", "no entry %lld (the dispatcher has %d)", (long long)i, tir_dispatcher_num_entries(d));
  const char *label, *note;
  const tir_PrimFunc *f;
  long calls;
  tir_dispatcher_entry(d, (int)i - 1, &label, &note, &f, NULL, &calls);
  lua_createtable(L, 0, 6);
  lua_pushstring(L, label);
  lua_setfield(L, -2, "label");
  lua_pushstring(L, note);
  lua_setfield(L, -2, "note");
  tirL_push_borrowed(L, &f->hdr);
  lua_setfield(L, -2, "func");
  lua_getiuservalue(L, 1, 1);
  lua_rawgeti(L, -1, i);
  lua_setfield(L, -3, "module");
  lua_pop(L, 1);
  lua_pushinteger(L, calls);
  lua_setfield(L, -2, "calls");
  char *w = tir_dispatcher_entry_when(d, (int)i - 1);
  lua_pushstring(L, w);
  free(w);
  lua_setfield(L, -2, "when");
  return 1;
}

/* d:vars() -> {Var, ...} (the family's variables, in the order ranges name them) */
static int d_vars(lua_State *L) {
  tir_Dispatcher *d = check_disp(L, 1);
  int n = tir_dispatcher_num_vars(d);
  lua_createtable(L, n, 0);
  for (int i = 0; i < n; i++) {
    tirL_push_borrowed(L, &tir_dispatcher_var(d, i)->hdr);
    lua_rawseti(L, -2, i + 1);
  }
  return 1;
}

static int d_signature(lua_State *L) {
  tirL_push_borrowed(L, &tir_dispatcher_signature(check_disp(L, 1))->hdr);
  return 1;
}

static int d_name(lua_State *L) {
  lua_pushstring(L, tir_dispatcher_name(check_disp(L, 1)));
  return 1;
}

static int d_tostring(lua_State *L) {
  char *s = tir_dispatcher_describe(check_disp(L, 1));
  lua_pushstring(L, s);
  free(s);
  return 1;
}

void tirL_open_dispatch(lua_State *L) {
  static const luaL_Reg methods[] = {{"add", d_add},       {"select", d_select},          {"check", d_check},
                                     {"launch", d_launch}, {"bench", d_bench},            {"num_entries", d_num_entries},
                                     {"entry", d_entry},   {"vars", d_vars},              {"signature", d_signature},
                                     {"name", d_name},     {NULL, NULL}};
  luaL_newmetatable(L, MT);
  lua_pushcfunction(L, d_gc);
  lua_setfield(L, -2, "__gc");
  lua_pushcfunction(L, d_tostring);
  lua_setfield(L, -2, "__tostring");
  lua_pushcfunction(L, d_call);
  lua_setfield(L, -2, "__call");
  lua_newtable(L);
  luaL_setfuncs(L, methods, 0);
  lua_setfield(L, -2, "__methods");
  lua_getfield(L, -1, "__methods");
  lua_setfield(L, -2, "__index");
  lua_pop(L, 1);
  static const luaL_Reg fns[] = {{"specialize", l_specialize}, {"dispatcher_new", l_new}, {NULL, NULL}};
  luaL_setfuncs(L, fns, 0);
  /* the method table, so lib/tir/dispatch.lua can add methods (interpret, simulate) */
  luaL_getmetatable(L, MT);
  lua_getfield(L, -1, "__methods");
  lua_setfield(L, -3, "dispatcher_methods");
  lua_pop(L, 1);
}
