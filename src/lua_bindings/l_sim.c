/* l_sim.c -- core.simulate(target, args, opts): the warp-accurate GPU simulator (sim.h).
 * target: a built tir.Module or a PrimFunc (lowered, or lowered here first).  args: a table
 * of CPU arrays / numbers, updated in place.  opts (checked in lib/tir/init.lua):
 *   check (bool, default true), max_issues, ctas = {{x, y, z}, ...} or {[kernel] = {...}},
 *   expected = {arrays or false...}, rtol, atol.
 * Returns a report table; raises a SimulationError on an issue when check is on. */
#include <stdlib.h>
#include <string.h>

#include "l_tir.h"
#include "tir/codegen.h"
#include "tir/sim.h"

tir_NDArray *tirL_to_ndarray(lua_State *L, int idx);
int tirL_read_args(lua_State *L, const tir_PrimFunc *f, int first, int nargs, tir_InterpArg *args);
tir_BuiltModule *tirlua_tomodule(lua_State *L, int idx);

static int has_blocks_fn(const tir_Node *n, void *p) {
  if (n->kind == TIR_Block || n->kind == TIR_BlockRealize) *(int *)p = 1;
  return *(int *)p;
}

/* reads one CTA {x, y, z} (missing = 0) at the top of the stack */
static void read_cta(lua_State *L, int64_t out[3]) {
  if (lua_isinteger(L, -1)) {
    out[0] = lua_tointeger(L, -1), out[1] = out[2] = 0;
    return;
  }
  if (!lua_istable(L, -1)) luaL_error(L, "simulate: a CTA is {x, y, z} (integers)");
  for (int d = 0; d < 3; d++) {
    lua_geti(L, -1, d + 1);
    out[d] = lua_isnil(L, -1) ? 0 : luaL_checkinteger(L, -1);
    lua_pop(L, 1);
  }
}

static void push_triple(lua_State *L, const int64_t *v) {
  lua_createtable(L, 3, 0);
  for (int d = 0; d < 3; d++) {
    lua_pushinteger(L, v[d]);
    lua_rawseti(L, -2, d + 1);
  }
}

static void push_report(lua_State *L, const tir_SimReport *r) {
  lua_createtable(L, 0, 16);
  struct {
    const char *k;
    int64_t v;
  } counts[] = {{"kernels", r->kernels},       {"ctas", r->ctas},           {"statements", r->statements},
                {"thread_statements", r->thread_statements}, {"barriers", r->barriers}, {"warp_ops", r->warp_ops},
                {"cp_async", r->cp_async}, {"tma_copies", r->tma_copies}, {"mbarrier_waits", r->mbarrier_waits}, {"tasks", r->tasks}, {"task_switches", r->task_switches}, {"named_barriers", r->named_barriers},     {"shared_reads", r->shared_reads}, {"shared_writes", r->shared_writes},
                {"n_issues", r->n_issues},     {"cp_async_requests", r->cp_async_requests},
                {"cp_async_sectors", r->cp_async_sectors}, {"cp_async_split", r->cp_async_split}};
  for (size_t i = 0; i < sizeof counts / sizeof counts[0]; i++) {
    lua_pushinteger(L, counts[i].v);
    lua_setfield(L, -2, counts[i].k);
  }
  lua_createtable(L, r->n_kept, 0);
  int races = 0;
  for (int i = 0; i < r->n_kept; i++) {
    const tir_SimIssue *is = &r->issues[i];
    if (strncmp(is->kind, "race", 4) == 0 || strcmp(is->kind, "async_race") == 0) races++;
    lua_createtable(L, 0, 10);
    lua_pushstring(L, is->kind);
    lua_setfield(L, -2, "kind");
    lua_pushstring(L, is->message);
    lua_setfield(L, -2, "message");
    if (is->kernel) {
      lua_pushstring(L, is->kernel);
      lua_setfield(L, -2, "kernel");
    }
    if (is->cta[0] >= 0) {
      push_triple(L, is->cta);
      lua_setfield(L, -2, "cta");
    }
    for (int w = 0; w < 2; w++) {
      const int *t = w ? is->other_thread : is->thread;
      if (t[0] < 0) continue;
      int64_t v[3] = {t[0], t[1], t[2]};
      push_triple(L, v);
      lua_setfield(L, -2, w ? "other_thread" : "thread");
    }
    if (is->statement) {
      lua_pushstring(L, is->statement);
      lua_setfield(L, -2, "statement");
    }
    if (is->other_statement) {
      lua_pushstring(L, is->other_statement);
      lua_setfield(L, -2, "other_statement");
    }
    if (is->buffer) {
      lua_pushstring(L, is->buffer);
      lua_setfield(L, -2, "buffer");
    }
    if (is->index >= 0) {
      lua_pushinteger(L, is->index);
      lua_setfield(L, -2, "index");
    }
    if (is->extent >= 0) {
      lua_pushinteger(L, is->extent);
      lua_setfield(L, -2, "extent");
    }
    lua_rawseti(L, -2, i + 1);
  }
  lua_setfield(L, -2, "issues");
  lua_createtable(L, r->n_hints, 0);
  for (int i = 0; i < r->n_hints; i++) {
    lua_pushstring(L, r->hints[i]);
    lua_rawseti(L, -2, i + 1);
  }
  lua_setfield(L, -2, "hints");
  lua_pushinteger(L, races);
  lua_setfield(L, -2, "races");
}

typedef struct {
  tir_SimCtaSel *sel;
  int n_sel;
  int64_t (*ctas)[3];
  tir_NDArray **expected;
  tir_InterpArg *args;
  tir_PrimFunc *lowered; /* owned when lowered here */
  char **names;
} Scratch;

static int scratch_gc(lua_State *L) {
  Scratch *s = lua_touserdata(L, 1);
  free(s->sel);
  free(s->ctas);
  free(s->expected);
  free(s->args);
  if (s->names)
    for (int i = 0; s->names[i]; i++) free(s->names[i]);
  free(s->names);
  tir_release(s->lowered);
  memset(s, 0, sizeof *s);
  return 0;
}

/* simulate(target, args_table, opts_table) -> report */
static int l_simulate(lua_State *L) {
  tir_BuiltModule *m = tirlua_tomodule(L, 1);
  const tir_PrimFunc *host, *lowered;
  luaL_checktype(L, 2, LUA_TTABLE);
  int has_opts = lua_istable(L, 3);
  /* scratch freed by __gc even when an error is raised */
  Scratch *sc = lua_newuserdatauv(L, sizeof *sc, 0);
  memset(sc, 0, sizeof *sc);
  lua_createtable(L, 0, 1);
  lua_pushcfunction(L, scratch_gc);
  lua_setfield(L, -2, "__gc");
  lua_setmetatable(L, -2);
  int sc_idx = lua_gettop(L);
  if (m) {
    host = tir_module_func(m);
    lowered = tir_module_lowered(m);
  } else {
    tir_Node *fn = tirL_check_node(L, 1, -1, NULL);
    if (fn->kind == TIR_IRModule && ((tir_IRModule *)fn)->functions->size == 1) fn = ((tir_IRModule *)fn)->functions->items[0];
    if (fn->kind != TIR_PrimFunc) return luaL_argerror(L, 1, "a tir.Module or a PrimFunc expected");
    host = (const tir_PrimFunc *)fn;
    int blocks = 0;
    tir_visit(((const tir_PrimFunc *)fn)->body, has_blocks_fn, &blocks);
    if (blocks) {
      tir_LowerOptions lo;
      memset(&lo, 0, sizeof lo);
      sc->lowered = tir_lower(host, &lo);
      tir_lower_options_free(&lo);
      if (!sc->lowered) return tirL_raise_core(L);
      lowered = sc->lowered;
    } else {
      lowered = host;
    }
  }
  int nargs = tirL_table_maxn(L, 2);
  sc->args = calloc((size_t)nargs + 1, sizeof *sc->args);
  for (int i = 1; i <= nargs; i++) lua_geti(L, 2, i);
  tirL_read_args(L, host, lua_gettop(L) - nargs + 1, nargs, sc->args);
  lua_settop(L, sc_idx);
  tir_SimOptions o;
  memset(&o, 0, sizeof o);
  o.check = 1;
  /* a built module's target holds its kernels to that GPU's shared memory a block */
  const char *arch = m ? tir_module_arch(m) : NULL;
  if (arch && strncmp(arch, "sm_", 3) == 0) o.sm = atoi(arch + 3);
  if (has_opts) {
    lua_getfield(L, 3, "check");
    if (!lua_isnil(L, -1)) o.check = lua_toboolean(L, -1);
    lua_pop(L, 1);
    lua_getfield(L, 3, "max_issues");
    if (lua_isinteger(L, -1)) o.max_issues = (int)lua_tointeger(L, -1);
    lua_pop(L, 1);
    lua_getfield(L, 3, "rtol");
    o.rtol = lua_isnumber(L, -1) ? lua_tonumber(L, -1) : 0;
    lua_pop(L, 1);
    lua_getfield(L, 3, "atol");
    o.atol = lua_isnumber(L, -1) ? lua_tonumber(L, -1) : 0;
    lua_pop(L, 1);
    lua_getfield(L, 3, "expected");
    if (lua_istable(L, -1)) {
      sc->expected = calloc((size_t)nargs + 1, sizeof *sc->expected);
      for (int i = 1; i <= nargs; i++) {
        lua_geti(L, -1, i);
        sc->expected[i - 1] = tirL_to_ndarray(L, -1);
        lua_pop(L, 1);
      }
      o.expected = sc->expected;
    }
    lua_pop(L, 1);
    lua_getfield(L, 3, "ctas");
    if (lua_istable(L, -1)) {
      /* a list of CTAs (every kernel) or {[kernel name] = list} */
      int t = lua_gettop(L);
      int total = 0, lists = 0;
      int n_list = (int)lua_rawlen(L, t);
      if (n_list > 0) {
        total = n_list;
        lists = 1;
      } else {
        lua_pushnil(L);
        while (lua_next(L, t)) {
          if (lua_type(L, -2) == LUA_TSTRING && lua_istable(L, -1)) {
            total += (int)lua_rawlen(L, -1);
            lists++;
          }
          lua_pop(L, 1);
        }
      }
      sc->ctas = calloc((size_t)total + 1, sizeof *sc->ctas);
      sc->sel = calloc((size_t)lists + 1, sizeof *sc->sel);
      sc->names = calloc((size_t)lists + 1, sizeof *sc->names);
      int pos = 0;
      if (n_list > 0) {
        for (int i = 1; i <= n_list; i++) {
          lua_geti(L, t, i);
          read_cta(L, sc->ctas[pos++]);
          lua_pop(L, 1);
        }
        sc->sel[0] = (tir_SimCtaSel){NULL, (const int64_t(*)[3])sc->ctas, n_list};
        sc->n_sel = 1;
      } else {
        lua_pushnil(L);
        while (lua_next(L, t)) {
          if (lua_type(L, -2) == LUA_TSTRING && lua_istable(L, -1)) {
            int n = (int)lua_rawlen(L, -1), start = pos;
            for (int i = 1; i <= n; i++) {
              lua_geti(L, -1, i);
              read_cta(L, sc->ctas[pos++]);
              lua_pop(L, 1);
            }
            size_t len;
            const char *k = lua_tolstring(L, -2, &len);
            sc->names[sc->n_sel] = malloc(len + 1);
            memcpy(sc->names[sc->n_sel], k, len + 1);
            sc->sel[sc->n_sel] = (tir_SimCtaSel){sc->names[sc->n_sel], (const int64_t(*)[3])(sc->ctas + start), n};
            sc->n_sel++;
          }
          lua_pop(L, 1);
        }
      }
      o.sel = sc->sel;
      o.n_sel = sc->n_sel;
    }
    lua_pop(L, 1);
  }
  tir_SimReport rep;
  lua_State *prev = tirL_extern_enter(L);
  int rc = tir_simulate(lowered, host, sc->args, nargs, &o, &rep);
  tirL_extern_leave(prev);
  if (rc) {
    tir_sim_report_free(&rep);
    return tirL_raise_core(L);
  }
  push_report(L, &rep);
  tir_sim_report_free(&rep);
  return 1;
}

void tirL_open_sim(lua_State *L) {
  lua_pushcfunction(L, l_simulate);
  lua_setfield(L, -2, "simulate");
}
