/* l_schedule.c -- the C schedule state as a Lua userdata ("tir.ScheduleState").  The
 * user-facing Schedule class (handles, trace) is lib/tir/schedule.lua; these methods
 * take and return plain IR values: loops are loop variables, blocks are uids. */
#include <stdlib.h>
#include <string.h>

#include "l_tir.h"
#include "tir/schedule.h"

#define MT "tir.ScheduleState"

typedef struct {
  tir_Schedule *s;
} Box;

static tir_Schedule *check(lua_State *L, int idx) {
  Box *b = luaL_checkudata(L, idx, MT);
  if (!b->s) luaL_error(L, "schedule is closed");
  return b->s;
}

static void push_sched(lua_State *L, tir_Schedule *s) {
  Box *b = lua_newuserdatauv(L, sizeof(Box), 0);
  b->s = NULL;
  luaL_setmetatable(L, MT);
  b->s = s;
}

static int l_new(lua_State *L) {
  tir_Node *f = tirL_check_node(L, 1, -1, NULL);
  if (f->kind == TIR_IRModule) {
    tir_IRModule *m = (tir_IRModule *)f;
    if (m->functions->size != 1) return luaL_argerror(L, 1, "module must hold exactly one function");
    f = m->functions->items[0];
  }
  if (f->kind != TIR_PrimFunc) return luaL_argerror(L, 1, "PrimFunc expected");
  push_sched(L, tir_schedule_new((tir_PrimFunc *)f));
  return 1;
}

static int gc(lua_State *L) {
  Box *b = luaL_checkudata(L, 1, MT);
  tir_schedule_free(b->s);
  b->s = NULL;
  return 0;
}

static int m_func(lua_State *L) {
  tirL_push_borrowed(L, &tir_schedule_func(check(L, 1))->hdr);
  return 1;
}

static int m_set_func(lua_State *L) {
  tir_Schedule *s = check(L, 1);
  tir_schedule_set_func(s, (tir_PrimFunc *)tirL_check_node(L, 2, TIR_PrimFunc, NULL));
  return 0;
}

static int m_copy(lua_State *L) {
  push_sched(L, tir_schedule_copy(check(L, 1)));
  return 1;
}

static int m_get_block(lua_State *L) {
  tir_Schedule *s = check(L, 1);
  int64_t uid = tir_sched_get_block(s, luaL_checkstring(L, 2));
  if (uid < 0) return tirL_raise_core(L);
  lua_pushinteger(L, uid);
  return 1;
}

static int push_array_items(lua_State *L, tir_Array *a) {
  if (!a) return tirL_raise_core(L);
  lua_createtable(L, a->size, 0);
  for (int i = 0; i < a->size; i++) {
    tir_Node *x = a->items[i];
    int64_t v;
    if (tir_is_const_int(x, &v)) lua_pushinteger(L, v);
    else tirL_push_borrowed(L, x);
    lua_rawseti(L, -2, i + 1);
  }
  tir_release(a);
  return 1;
}

static int m_get_loops(lua_State *L) {
  tir_Schedule *s = check(L, 1);
  return push_array_items(L, tir_sched_get_loops(s, luaL_checkinteger(L, 2)));
}

static int m_block_realize(lua_State *L) {
  tir_Schedule *s = check(L, 1);
  const tir_BlockRealize *br = tir_sched_block_realize(s, luaL_checkinteger(L, 2), luaL_optstring(L, 3, "schedule"));
  if (!br) return tirL_raise_core(L);
  tirL_push_borrowed(L, &br->hdr);
  return 1;
}

static int m_loop(lua_State *L) {
  tir_Schedule *s = check(L, 1);
  const tir_For *f = tir_sched_loop(s, (tir_Var *)tirL_check_node(L, 2, TIR_Var, "loop"), luaL_optstring(L, 3, "schedule"));
  if (!f) return tirL_raise_core(L);
  tirL_push_borrowed(L, &f->hdr);
  return 1;
}

static int m_get_child_blocks(lua_State *L) {
  tir_Schedule *s = check(L, 1);
  if (lua_isinteger(L, 2)) return push_array_items(L, tir_sched_get_child_blocks(s, lua_tointeger(L, 2), NULL));
  return push_array_items(L, tir_sched_get_child_blocks(s, -1, (tir_Var *)tirL_check_node(L, 2, TIR_Var, "loop")));
}

static tir_Var **check_vars(lua_State *L, int first, int *n) {
  int top = lua_gettop(L);
  *n = top - first + 1;
  for (int i = first; i <= top; i++) tirL_check_node(L, i, TIR_Var, "loop");
  tir_Var **v = calloc((size_t)*n + 1, sizeof *v);
  for (int i = first; i <= top; i++) v[i - first] = (tir_Var *)tirL_to_node(L, i);
  return v;
}

/* split(loop_var, {f0, f1, ...}) with -1 for the inferred factor */
static int m_split(lua_State *L) {
  tir_Schedule *s = check(L, 1);
  tir_Var *v = (tir_Var *)tirL_check_node(L, 2, TIR_Var, "loop");
  luaL_checktype(L, 3, LUA_TTABLE);
  int n = tirL_table_maxn(L, 3);
  if (n > 64) return luaL_argerror(L, 3, "too many factors");
  int64_t f[64];
  for (int i = 1; i <= n; i++) {
    lua_geti(L, 3, i);
    if (!lua_isinteger(L, -1)) return luaL_error(L, "split: factor %d must be an integer", i);
    f[i - 1] = lua_tointeger(L, -1);
    lua_pop(L, 1);
  }
  return push_array_items(L, tir_sched_split(s, v, f, n));
}

static int m_fuse(lua_State *L) {
  tir_Schedule *s = check(L, 1);
  int n;
  tir_Var **v = check_vars(L, 2, &n);
  tir_Var *r = tir_sched_fuse(s, v, n);
  free(v);
  if (!r) return tirL_raise_core(L);
  tirL_push_node(L, &r->hdr);
  return 1;
}

static int m_reorder(lua_State *L) {
  tir_Schedule *s = check(L, 1);
  int n;
  tir_Var **v = check_vars(L, 2, &n);
  int rc = tir_sched_reorder(s, v, n);
  free(v);
  if (rc) return tirL_raise_core(L);
  return 0;
}

static int m_bind(lua_State *L) {
  tir_Schedule *s = check(L, 1);
  if (tir_sched_bind(s, (tir_Var *)tirL_check_node(L, 2, TIR_Var, "loop"), luaL_checkstring(L, 3))) return tirL_raise_core(L);
  return 0;
}

#define LOOP_KIND(fn, call)                                                            \
  static int fn(lua_State *L) {                                                        \
    tir_Schedule *s = check(L, 1);                                                     \
    if (call(s, (tir_Var *)tirL_check_node(L, 2, TIR_Var, "loop"))) return tirL_raise_core(L); \
    return 0;                                                                          \
  }
LOOP_KIND(m_unroll, tir_sched_unroll)
LOOP_KIND(m_parallel, tir_sched_parallel)
LOOP_KIND(m_vectorize, tir_sched_vectorize)

static int tostr(lua_State *L) {
  lua_pushfstring(L, "tir.ScheduleState(%p)", lua_touserdata(L, 1));
  return 1;
}

void tirL_open_schedule(lua_State *L) {
  static const luaL_Reg methods[] = {{"func", m_func},
                                     {"set_func", m_set_func},
                                     {"copy", m_copy},
                                     {"get_block", m_get_block},
                                     {"get_loops", m_get_loops},
                                     {"block_realize", m_block_realize},
                                     {"loop", m_loop},
                                     {"get_child_blocks", m_get_child_blocks},
                                     {"split", m_split},
                                     {"fuse", m_fuse},
                                     {"reorder", m_reorder},
                                     {"bind", m_bind},
                                     {"unroll", m_unroll},
                                     {"parallel", m_parallel},
                                     {"vectorize", m_vectorize},
                                     {NULL, NULL}};
  luaL_newmetatable(L, MT);
  lua_pushcfunction(L, gc);
  lua_setfield(L, -2, "__gc");
  lua_pushcfunction(L, tostr);
  lua_setfield(L, -2, "__tostring");
  lua_newtable(L);
  luaL_setfuncs(L, methods, 0);
  lua_setfield(L, -2, "__index");
  lua_pop(L, 1);
  lua_pushcfunction(L, l_new);
  lua_setfield(L, -2, "ScheduleState");
}
