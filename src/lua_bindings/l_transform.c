/* l_transform.c -- lowering and building from Lua: core.lower(func, opts) and
 * core.build(func, opts) -> "tir.Module" (sources, launch, timing). */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "l_tir.h"
#include "tir/codegen.h"
#include "tir/kernel_cache.h"
#include "tir/tirlua.h"
#include "tir/transform.h"

#define MT "tir.Module"

typedef struct {
  tir_BuiltModule *m;
} Box;

int tirL_read_args(lua_State *L, const tir_PrimFunc *f, int first, int nargs, tir_InterpArg *args);

static tir_PrimFunc *check_func(lua_State *L, int idx) {
  tir_Node *fn = tirL_check_node(L, idx, -1, NULL);
  if (fn->kind == TIR_IRModule && ((tir_IRModule *)fn)->functions->size == 1) fn = ((tir_IRModule *)fn)->functions->items[0];
  if (fn->kind != TIR_PrimFunc) luaL_argerror(L, idx, "PrimFunc expected");
  return (tir_PrimFunc *)fn;
}

static int opt_bool(lua_State *L, int idx, const char *k) {
  if (lua_type(L, idx) != LUA_TTABLE) return 0;
  lua_getfield(L, idx, k);
  int v = lua_toboolean(L, -1);
  lua_pop(L, 1);
  return v;
}

static int opt_int(lua_State *L, int idx, const char *k, int def) {
  if (lua_type(L, idx) != LUA_TTABLE) return def;
  lua_getfield(L, idx, k);
  int v = lua_isinteger(L, -1) ? (int)lua_tointeger(L, -1) : def;
  lua_pop(L, 1);
  return v;
}

static void push_dumps(lua_State *L, char **names, char **irs, int n) {
  lua_createtable(L, n, 0);
  for (int i = 0; i < n; i++) {
    lua_createtable(L, 0, 2);
    lua_pushstring(L, names[i]);
    lua_setfield(L, -2, "pass");
    lua_pushstring(L, irs[i]);
    lua_setfield(L, -2, "ir");
    lua_rawseti(L, -2, i + 1);
  }
}

/* lower(func, {dump = bool}) -> lowered func, dumps */
static int l_lower(lua_State *L) {
  tir_PrimFunc *f = check_func(L, 1);
  tir_LowerOptions o;
  memset(&o, 0, sizeof o);
  o.dump = opt_bool(L, 2, "dump");
  o.unroll_max_extent = opt_int(L, 2, "unroll_max_extent", 16);
  tir_PrimFunc *r = tir_lower(f, &o);
  if (!r) {
    tir_lower_options_free(&o);
    return tirL_raise_core(L);
  }
  tirL_push_node(L, &r->hdr);
  push_dumps(L, o.pass_names, o.pass_ir, o.n_dumps);
  tir_lower_options_free(&o);
  return 2;
}

/* One pass by name (for tests of single passes). */
static int l_run_pass(lua_State *L) {
  const char *name = luaL_checkstring(L, 1);
  tir_PrimFunc *f = check_func(L, 2);
  tir_PrimFunc *r = NULL;
  if (strcmp(name, "lower_init_block") == 0) r = tir_pass_lower_init_block(f);
  else if (strcmp(name, "lower_grid_tail") == 0) r = tir_pass_lower_grid_tail(f);
  else if (strcmp(name, "lower_opaque_block") == 0) r = tir_pass_lower_opaque_block(f);
  else if (strcmp(name, "plan_buffer_allocation") == 0) r = tir_pass_plan_buffer_allocation(f);
  else if (strcmp(name, "compact_buffer_allocation") == 0) r = tir_pass_compact_buffer_allocation(f);
  else if (strcmp(name, "flatten_buffer") == 0) r = tir_pass_flatten_buffer(f);
  else if (strcmp(name, "simplify") == 0) r = tir_pass_simplify(f);
  else if (strcmp(name, "lower_thread_binding") == 0) r = tir_pass_lower_thread_binding(f);
  else if (strcmp(name, "thread_sync") == 0) r = tir_pass_thread_sync(f);
  else if (strcmp(name, "vectorize_loop") == 0) r = tir_pass_vectorize_loop(f);
  else if (strcmp(name, "inject_software_pipeline") == 0) r = tir_pass_inject_software_pipeline(f);
  else if (strcmp(name, "inject_ptx_async_copy") == 0) r = tir_pass_inject_ptx_async_copy(f);
  else if (strcmp(name, "strength_reduce_modulo") == 0) r = tir_pass_strength_reduce_modulo(f);
  else if (strcmp(name, "unroll_loop") == 0) r = tir_pass_unroll_loop(f, (int)luaL_optinteger(L, 3, 16));
  else return luaL_argerror(L, 1, lua_pushfstring(L, "unknown pass '%s'", name));
  if (!r) return tirL_raise_core(L);
  tirL_push_node(L, &r->hdr);
  return 1;
}

tir_BuiltModule *tirlua_tomodule(lua_State *L, int idx) {
  Box *b = luaL_testudata(L, idx, MT);
  return b ? b->m : NULL;
}

tir_PrimFunc *tirlua_tofunc(lua_State *L, int idx) {
  tir_Node *n = tirL_to_node(L, idx);
  if (n && n->kind == TIR_IRModule && ((tir_IRModule *)n)->functions->size == 1) n = ((tir_IRModule *)n)->functions->items[0];
  return n && n->kind == TIR_PrimFunc ? (tir_PrimFunc *)n : NULL;
}

static tir_BuiltModule *check_mod(lua_State *L, int idx) {
  Box *b = luaL_checkudata(L, idx, MT);
  if (!b->m) luaL_error(L, "module was freed");
  return b->m;
}

/* build(func, {arch = "sm_90", dump = bool, compile = bool}) -> Module */
static int l_build(lua_State *L) {
  tir_PrimFunc *f = check_func(L, 1);
  tir_BuildOptions o;
  memset(&o, 0, sizeof o);
  o.dump_ir = opt_bool(L, 2, "dump");
  o.unroll_max_extent = opt_int(L, 2, "unroll_max_extent", 16);
  if (lua_type(L, 2) == LUA_TTABLE) {
    lua_getfield(L, 2, "arch");
    if (lua_isstring(L, -1)) snprintf(o.arch, sizeof o.arch, "%s", lua_tostring(L, -1));
    lua_pop(L, 1);
    lua_getfield(L, 2, "compile");
    if (lua_isboolean(L, -1) && !lua_toboolean(L, -1)) o.skip_compile = 1;
    lua_pop(L, 1);
    lua_getfield(L, 2, "cache");
    if (lua_isboolean(L, -1) && !lua_toboolean(L, -1)) o.no_cache = 1;
    lua_pop(L, 1);
  }
  Box *b = lua_newuserdatauv(L, sizeof(Box), 0);
  b->m = NULL;
  luaL_setmetatable(L, MT);
  b->m = tir_build(f, &o);
  if (!b->m) return tirL_raise_core(L);
  return 1;
}

static int m_gc(lua_State *L) {
  Box *b = luaL_checkudata(L, 1, MT);
  tir_module_free(b->m);
  b->m = NULL;
  return 0;
}

static int m_source(lua_State *L) {
  tir_BuiltModule *m = check_mod(L, 1);
  const char *kind = luaL_optstring(L, 2, "cuda");
  if (strcmp(kind, "ir") == 0 || strcmp(kind, "tir") == 0) {
    char *s = tir_print(&tir_module_lowered(m)->hdr);
    lua_pushstring(L, s);
    free(s);
    return 1;
  }
  if (strcmp(kind, "cuda") && strcmp(kind, "ptx") && strcmp(kind, "host"))
    return luaL_argerror(L, 2, "expected \"cuda\", \"ptx\", \"ir\" or \"host\"");
  const char *s = tir_module_source(m, kind);
  if (!s) return luaL_error(L, "the module has no %s source (built with compile = false?)", kind);
  lua_pushstring(L, s);
  return 1;
}

static int m_arch(lua_State *L) {
  lua_pushstring(L, tir_module_arch(check_mod(L, 1)));
  return 1;
}

static int m_func(lua_State *L) {
  tirL_push_borrowed(L, &tir_module_func(check_mod(L, 1))->hdr);
  return 1;
}

static int m_lowered(lua_State *L) {
  tirL_push_borrowed(L, &tir_module_lowered(check_mod(L, 1))->hdr);
  return 1;
}

static int m_dumps(lua_State *L) {
  tir_BuiltModule *m = check_mod(L, 1);
  int n = tir_module_num_dumps(m);
  lua_createtable(L, n, 0);
  for (int i = 0; i < n; i++) {
    const char *p, *ir;
    tir_module_dump(m, i, &p, &ir);
    lua_createtable(L, 0, 2);
    lua_pushstring(L, p);
    lua_setfield(L, -2, "pass");
    lua_pushstring(L, ir);
    lua_setfield(L, -2, "ir");
    lua_rawseti(L, -2, i + 1);
  }
  return 1;
}

static int m_kernels(lua_State *L) {
  tir_BuiltModule *m = check_mod(L, 1);
  int n = tir_module_num_kernels(m);
  lua_createtable(L, n, 0);
  for (int i = 0; i < n; i++) {
    const tir_Kernel *k = tir_module_kernel(m, i);
    lua_createtable(L, 0, 4);
    lua_pushstring(L, k->name);
    lua_setfield(L, -2, "name");
    for (int w = 0; w < 2; w++) {
      lua_createtable(L, 3, 0);
      for (int d = 0; d < 3; d++) {
        tir_Node *e = w ? k->block[d] : k->grid[d];
        int64_t v;
        if (tir_is_const_int(e, &v)) lua_pushinteger(L, v);
        else tirL_push_borrowed(L, e);
        lua_rawseti(L, -2, d + 1);
      }
      lua_setfield(L, -2, w ? "block" : "grid");
    }
    lua_pushinteger(L, k->dyn_smem_bytes);
    lua_setfield(L, -2, "dyn_smem_bytes");
    if (k->cluster[0] > 0) { /* thread-block cluster dims (__cluster_dims__); absent without a cluster */
      lua_createtable(L, 3, 0);
      for (int d = 0; d < 3; d++) {
        lua_pushinteger(L, k->cluster[d]);
        lua_rawseti(L, -2, d + 1);
      }
      lua_setfield(L, -2, "cluster");
    }
    tirL_push_borrowed(L, &k->func->hdr);
    lua_setfield(L, -2, "func");
    lua_rawseti(L, -2, i + 1);
  }
  return 1;
}

static int m_resources(lua_State *L) {
  tir_BuiltModule *m = check_mod(L, 1);
  int i = (int)luaL_optinteger(L, 2, 1) - 1, dev = (int)luaL_optinteger(L, 3, 0);
  int regs, local, smem;
  if (tir_module_kernel_resources(m, i, dev, &regs, &local, &smem)) return tirL_raise_core(L);
  lua_createtable(L, 0, 3);
  lua_pushinteger(L, regs);
  lua_setfield(L, -2, "registers");
  lua_pushinteger(L, local);
  lua_setfield(L, -2, "local_bytes");
  lua_pushinteger(L, smem);
  lua_setfield(L, -2, "static_smem_bytes");
  const tir_Kernel *k = tir_module_kernel(m, i);
  lua_pushinteger(L, k ? k->dyn_smem_bytes : 0);
  lua_setfield(L, -2, "dynamic_smem_bytes");
  return 1;
}

static int collect_args(lua_State *L, tir_BuiltModule *m, int first, tir_InterpArg **out) {
  int nargs = lua_gettop(L) - first + 1;
  tir_InterpArg *args = lua_newuserdatauv(L, sizeof(tir_InterpArg) * (size_t)(nargs + 1), 0);
  lua_insert(L, first); /* keep the scratch below the arguments */
  tirL_read_args(L, tir_module_func(m), first + 1, nargs, args);
  *out = args;
  return nargs;
}

static int m_call(lua_State *L) {
  tir_BuiltModule *m = check_mod(L, 1);
  tir_InterpArg *args;
  int n = collect_args(L, m, 2, &args);
  if (tir_module_run(m, args, n)) return tirL_raise_core(L);
  return 0;
}

/* time(args..., {warmup=, number=, repeat_=}) is split in Lua; here: time(warmup, number, repeat, args...) */
static int m_time(lua_State *L) {
  tir_BuiltModule *m = check_mod(L, 1);
  int warmup = (int)luaL_checkinteger(L, 2), number = (int)luaL_checkinteger(L, 3), repeat = (int)luaL_checkinteger(L, 4);
  if (warmup < 0 || number < 1 || repeat < 1 || repeat > 100000) return luaL_error(L, "time_evaluator: bad counts");
  double *samples = lua_newuserdatauv(L, sizeof(double) * (size_t)repeat, 0);
  lua_insert(L, 5);
  tir_InterpArg *args;
  int n = collect_args(L, m, 6, &args);
  double med;
  if (tir_module_time(m, args, n, warmup, number, repeat, &med, samples)) return tirL_raise_core(L);
  lua_pushnumber(L, med);
  lua_createtable(L, repeat, 0);
  for (int i = 0; i < repeat; i++) {
    lua_pushnumber(L, samples[i]);
    lua_rawseti(L, -2, i + 1);
  }
  return 2;
}

static int m_compile(lua_State *L) {
  if (tir_module_compile(check_mod(L, 1)) != 0) return tirL_raise_core(L);
  return 0;
}

/* mod:compile_error(): raises the error its last compile_many attempt failed with, if any. */
static int m_compile_error(lua_State *L) {
  if (tir_module_compile_error(check_mod(L, 1)) != 0) return tirL_raise_core(L);
  return 0;
}

#define JOB_MT "tir.CompileJob"
typedef struct {
  tir_CompileJob *job; /* NULL once waited for */
} JobBox;

/* compile_start({mod, ...}, n_threads) -> job; the job keeps the list (and so the modules)
** alive until job:wait() (or its collection, which waits). */
static int l_compile_start(lua_State *L) {
  luaL_checktype(L, 1, LUA_TTABLE);
  int threads = (int)luaL_optinteger(L, 2, 1);
  lua_Integer n = luaL_len(L, 1);
  if (n < 0 || n > 100000) return luaL_error(L, "compile_start: bad list length");
  JobBox *jb = lua_newuserdatauv(L, sizeof *jb, 1);
  jb->job = NULL;
  luaL_setmetatable(L, JOB_MT);
  lua_createtable(L, (int)n, 0); /* a copy of the list: the caller may change theirs */
  tir_BuiltModule **ms = lua_newuserdatauv(L, sizeof(*ms) * (size_t)(n + 1), 0);
  lua_rawseti(L, -2, 0); /* the scratch array lives with the list */
  for (lua_Integer i = 1; i <= n; i++) {
    lua_geti(L, 1, i);
    ms[i - 1] = check_mod(L, -1);
    lua_rawseti(L, -2, i);
  }
  lua_setiuservalue(L, -2, 1);
  jb->job = tir_module_compile_start(ms, (int)n, threads);
  if (!jb->job) return tirL_raise_core(L);
  return 1;
}

/* job:wait() -> number of modules that failed (0 when already waited for) */
static int job_wait(lua_State *L) {
  JobBox *jb = luaL_checkudata(L, 1, JOB_MT);
  int failed = 0;
  if (jb->job) failed = tir_module_compile_wait(jb->job);
  jb->job = NULL;
  lua_pushinteger(L, failed);
  return 1;
}

/* compile_many({mod, ...}, n_threads) -> number of modules that failed */
static int l_compile_many(lua_State *L) {
  l_compile_start(L);
  lua_replace(L, 1);
  lua_settop(L, 1);
  return job_wait(L);
}

static int l_stderr_isatty(lua_State *L) {
  lua_pushboolean(L, isatty(2));
  return 1;
}

static int l_cpu_count(lua_State *L) {
  long n = sysconf(_SC_NPROCESSORS_ONLN);
  lua_pushinteger(L, n > 0 ? n : 1);
  return 1;
}

static int m_cache_status(lua_State *L) {
  lua_pushstring(L, tir_module_cache_status(check_mod(L, 1)));
  return 1;
}

/* kernel_cache_info() -> dir, enabled, entries, bytes, limit bytes */
static int l_kcache_info(lua_State *L) {
  char dir[4096];
  int on = tir_kcache_dir(dir, sizeof dir);
  long entries = 0;
  long long bytes = 0;
  if (on >= 0) tir_kcache_info(&entries, &bytes);
  if (on >= 0) lua_pushstring(L, dir); else lua_pushnil(L);
  lua_pushboolean(L, on == 1);
  lua_pushinteger(L, entries);
  lua_pushinteger(L, (lua_Integer)bytes);
  lua_pushinteger(L, (lua_Integer)tir_kcache_limit());
  return 5;
}

/* kernel_cache_set_dir(dir or nil, enabled) */
static int l_kcache_set_dir(lua_State *L) {
  tir_kcache_set_dir(luaL_optstring(L, 1, NULL), lua_toboolean(L, 2));
  return 0;
}

/* kernel_cache_clear() -> files removed, or nil + message */
static int l_kcache_clear(lua_State *L) {
  long n = tir_kcache_clear();
  if (n < 0) {
    char dir[4096];
    tir_kcache_dir(dir, sizeof dir);
    lua_pushnil(L);
    lua_pushfstring(L, "cannot read the kernel cache directory '%s'", dir);
    return 2;
  }
  lua_pushinteger(L, n);
  return 1;
}

static int m_tostring(lua_State *L) {
  tir_BuiltModule *m = check_mod(L, 1);
  lua_pushfstring(L, "tir.Module(%s, %s, %d kernel(s))", tir_module_func(m)->name, tir_module_arch(m), tir_module_num_kernels(m));
  return 1;
}

void tirL_open_transform(lua_State *L) {
  static const luaL_Reg methods[] = {{"get_source", m_source}, {"arch", m_arch},       {"func", m_func},
                                     {"lowered", m_lowered},   {"dumps", m_dumps},     {"kernels", m_kernels},
                                     {"resources", m_resources}, {"time", m_time},     {"cache_status", m_cache_status},
                                     {"compile", m_compile},   {"compile_error", m_compile_error},
                                     {NULL, NULL}};
  luaL_newmetatable(L, MT);
  lua_pushcfunction(L, m_gc);
  lua_setfield(L, -2, "__gc");
  lua_pushcfunction(L, m_tostring);
  lua_setfield(L, -2, "__tostring");
  lua_pushcfunction(L, m_call);
  lua_setfield(L, -2, "__call");
  lua_newtable(L);
  luaL_setfuncs(L, methods, 0);
  lua_setfield(L, -2, "__methods");
  lua_getfield(L, -1, "__methods");
  lua_setfield(L, -2, "__index");
  lua_pop(L, 1);
  luaL_newmetatable(L, JOB_MT);
  lua_pushcfunction(L, job_wait);
  lua_setfield(L, -2, "__gc");
  lua_newtable(L);
  lua_pushcfunction(L, job_wait);
  lua_setfield(L, -2, "wait");
  lua_setfield(L, -2, "__index");
  lua_pop(L, 1);
  static const luaL_Reg fns[] = {{"lower", l_lower}, {"run_pass", l_run_pass}, {"build", l_build},
                                 {"kernel_cache_info", l_kcache_info}, {"kernel_cache_clear", l_kcache_clear},
                                 {"kernel_cache_set_dir", l_kcache_set_dir},
                                 {"compile_many", l_compile_many}, {"compile_start", l_compile_start}, {"cpu_count", l_cpu_count}, {"stderr_isatty", l_stderr_isatty},
                                 {NULL, NULL}};
  luaL_setfuncs(L, fns, 0);
  /* the module method table, so lib/tir can add methods (time_evaluator) */
  luaL_getmetatable(L, MT);
  lua_getfield(L, -1, "__methods");
  lua_setfield(L, -3, "module_methods");
  lua_pop(L, 1);
}
