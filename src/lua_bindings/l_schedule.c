/* l_schedule.c -- the C schedule state as a Lua userdata ("tir.ScheduleState").  The
 * user-facing Schedule class (handles, trace) is lib/tir/schedule.lua; these methods
 * take and return plain IR values: loops are loop variables, blocks are uids. */
#include <limits.h>
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

static int find_decl_buffer(const tir_Node *n, void *p) {
  if (tir_is_expr(n) || *(const tir_Node **)p) return 1;
  if (n->kind == TIR_DeclBuffer) *(const tir_Node **)p = n;
  return 0;
}

static int l_new(lua_State *L) {
  tir_Node *f = tirL_check_node(L, 1, -1, NULL);
  if (f->kind == TIR_IRModule) {
    tir_IRModule *m = (tir_IRModule *)f;
    if (m->functions->size != 1) return luaL_argerror(L, 1, "module must hold exactly one function");
    f = m->functions->items[0];
  }
  if (f->kind != TIR_PrimFunc) return luaL_argerror(L, 1, "PrimFunc expected");
  /* the primitives see data flow through buffers, not through views of their data: a block
   * reading a decl_buffer view of B would not count as B's consumer (cache_read could copy
   * before B is written), so such functions are not scheduled */
  const tir_Node *decl = NULL;
  tir_visit(((tir_PrimFunc *)f)->body, find_decl_buffer, &decl);
  if (decl) {
    tir_error_set(TIR_ERR_SCHEDULE, "Schedule",
                  "function %s declares the view %s (decl_buffer); schedule primitives follow data flow through buffers, "
                  "not through views of their data, so a function with decl_buffer cannot be scheduled: schedule it "
                  "first and declare views after (or index the buffer itself)",
                  ((tir_PrimFunc *)f)->name, ((const tir_DeclBuffer *)decl)->buffer->name);
    tir_error_set_ir(f);
    tir_error_mark(decl, "the view");
    return tirL_raise_core(L);
  }
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

static int m_merge(lua_State *L) {
  tir_Schedule *s = check(L, 1);
  int n;
  tir_Var **v = check_vars(L, 2, &n);
  tir_Var *r = tir_sched_merge(s, v, n);
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

static int64_t check_uid(lua_State *L, int idx) { return luaL_checkinteger(L, idx); }

/* An int argument: out-of-range values are refused, not truncated (storage_align's factor
 * math.maxinteger became -1). */
static int int_arg(lua_State *L, int idx) {
  lua_Integer v = luaL_checkinteger(L, idx);
  if (v < INT_MIN || v > INT_MAX) luaL_argerror(L, idx, lua_pushfstring(L, "%I is out of the 32-bit integer range", v));
  return (int)v;
}
static int opt_int_arg(lua_State *L, int idx, int def) { return lua_isnoneornil(L, idx) ? def : int_arg(L, idx); }

/* compute_at(block, loop_var, preserve_unit_loops, index) */
static int m_compute_at(lua_State *L) {
  tir_Schedule *s = check(L, 1);
  if (tir_sched_compute_at(s, check_uid(L, 2), (tir_Var *)tirL_check_node(L, 3, TIR_Var, "loop"), lua_toboolean(L, 4),
                           opt_int_arg(L, 5, -1)))
    return tirL_raise_core(L);
  return 0;
}

static int m_reverse_compute_at(lua_State *L) {
  tir_Schedule *s = check(L, 1);
  if (tir_sched_reverse_compute_at(s, check_uid(L, 2), (tir_Var *)tirL_check_node(L, 3, TIR_Var, "loop"), lua_toboolean(L, 4),
                                   opt_int_arg(L, 5, -1), lua_toboolean(L, 6)))
    return tirL_raise_core(L);
  return 0;
}

static int m_compute_inline(lua_State *L) {
  if (tir_sched_compute_inline(check(L, 1), check_uid(L, 2))) return tirL_raise_core(L);
  return 0;
}

static int m_reverse_compute_inline(lua_State *L) {
  if (tir_sched_reverse_compute_inline(check(L, 1), check_uid(L, 2), lua_toboolean(L, 3))) return tirL_raise_core(L);
  return 0;
}

/* The list of block uids at stack index i (none when it is not a table) into out[cap];
 * returns the count (raises when there are more than cap). */
static int uid_list(lua_State *L, int i, int64_t *out, int cap) {
  int n = lua_istable(L, i) ? tirL_table_maxn(L, i) : 0;
  if (n > cap) return luaL_argerror(L, i, "too many blocks");
  for (int k = 1; k <= n; k++) {
    lua_geti(L, i, k);
    out[k - 1] = luaL_checkinteger(L, -1);
    lua_pop(L, 1);
  }
  return n;
}

/* cache_read / cache_write (block, index, scope, {consumer uids}) -> uid */
static int cache_stage(lua_State *L, int64_t (*fn)(tir_Schedule *, int64_t, int, const char *, const int64_t *, int)) {
  tir_Schedule *s = check(L, 1);
  int64_t uid = check_uid(L, 2);
  int index = int_arg(L, 3);
  const char *scope = luaL_checkstring(L, 4);
  int64_t cons[256];
  int n = uid_list(L, 5, cons, 256);
  int64_t r = fn(s, uid, index, scope, cons, n);
  if (r < 0) return tirL_raise_core(L);
  lua_pushinteger(L, r);
  return 1;
}

static int m_cache_read(lua_State *L) { return cache_stage(L, tir_sched_cache_read); }
static int m_cache_write(lua_State *L) { return cache_stage(L, tir_sched_cache_write); }

static int m_set_scope(lua_State *L) {
  if (tir_sched_set_scope(check(L, 1), check_uid(L, 2), int_arg(L, 3), luaL_checkstring(L, 4)))
    return tirL_raise_core(L);
  return 0;
}

static int m_storage_align(lua_State *L) {
  if (tir_sched_storage_align(check(L, 1), check_uid(L, 2), int_arg(L, 3), int_arg(L, 4),
                              int_arg(L, 5), int_arg(L, 6)))
    return tirL_raise_core(L);
  return 0;
}

/* storage_swizzle(block_uid, index, mode): mode "none" | "32B" | "64B" | "128B" | {B, M, S} */
static int m_storage_swizzle(lua_State *L) {
  int64_t sw = tirL_check_swizzle(L, 4, "storage_swizzle");
  if (tir_sched_storage_swizzle(check(L, 1), check_uid(L, 2), int_arg(L, 3), sw)) return tirL_raise_core(L);
  return 0;
}

/* transform_layout(block_uid, is_write, index, {vars}, {exprs}) */
static int m_transform_layout(lua_State *L) {
  tir_Schedule *s = check(L, 1);
  int64_t uid = check_uid(L, 2);
  int is_write = lua_toboolean(L, 3);
  int index = int_arg(L, 4);
  tir_Array *vars = tirL_check_expr_list(L, 5, "index map inputs");
  tirL_push_node(L, &vars->hdr); /* owned by the stack from here */
  for (int i = 0; i < vars->size; i++)
    if (vars->items[i]->kind != TIR_Var) return luaL_argerror(L, 5, "index map inputs must be variables");
  tir_Array *exprs = tirL_check_expr_list(L, 6, "index map outputs");
  tirL_push_node(L, &exprs->hdr);
  if (tir_sched_transform_layout(s, uid, is_write, index, vars, exprs)) return tirL_raise_core(L);
  return 0;
}

/* transform_block_layout(block_uid, {vars}, {exprs}) */
static int m_transform_block_layout(lua_State *L) {
  tir_Schedule *s = check(L, 1);
  int64_t uid = check_uid(L, 2);
  tir_Array *vars = tirL_check_expr_list(L, 3, "index map inputs");
  tirL_push_node(L, &vars->hdr); /* owned by the stack from here */
  for (int i = 0; i < vars->size; i++)
    if (vars->items[i]->kind != TIR_Var) return luaL_argerror(L, 3, "index map inputs must be variables");
  tir_Array *exprs = tirL_check_expr_list(L, 4, "index map outputs");
  tirL_push_node(L, &exprs->hdr);
  if (tir_sched_transform_block_layout(s, uid, vars, exprs)) return tirL_raise_core(L);
  return 0;
}

/* tensorize(loop_var | nil, block_uid | nil, name) -> uid of the new block */
static int m_tensorize(lua_State *L) {
  tir_Schedule *s = check(L, 1);
  const tir_Var *loop = lua_isnil(L, 2) ? NULL : (const tir_Var *)tirL_check_node(L, 2, TIR_Var, "loop");
  int64_t uid = loop ? 0 : check_uid(L, 3);
  int64_t r = tir_sched_tensorize(s, loop, uid, luaL_checkstring(L, 4));
  if (r < 0) return tirL_raise_core(L);
  lua_pushinteger(L, r);
  return 1;
}

/* tensor_intrin_register(name, desc, impl, override) */
static int l_intrin_register(lua_State *L) {
  const char *name = luaL_checkstring(L, 1);
  tir_PrimFunc *desc = (tir_PrimFunc *)tirL_check_node(L, 2, TIR_PrimFunc, "desc");
  tir_PrimFunc *impl = (tir_PrimFunc *)tirL_check_node(L, 3, TIR_PrimFunc, "impl");
  if (tir_tensor_intrin_register(name, desc, impl, lua_toboolean(L, 4))) return tirL_raise_core(L);
  return 0;
}

/* tensor_intrin_get(name) -> desc, impl (nil when unknown) */
static int l_intrin_get(lua_State *L) {
  const tir_PrimFunc *desc, *impl;
  if (!tir_tensor_intrin_get(luaL_checkstring(L, 1), &desc, &impl)) return 0;
  tirL_push_borrowed(L, &desc->hdr);
  tirL_push_borrowed(L, &impl->hdr);
  return 2;
}

static int l_intrin_list(lua_State *L) {
  int n = tir_tensor_intrin_count();
  lua_createtable(L, n, 0);
  for (int i = 0; i < n; i++) {
    lua_pushstring(L, tir_tensor_intrin_name(i));
    lua_rawseti(L, -2, i + 1);
  }
  return 1;
}

/* the registry lives as long as the Lua state that loaded the module */
static int intrin_registry_gc(lua_State *L) {
  (void)L;
  tir_tensor_intrin_clear();
  return 0;
}

static int m_decompose_reduction(lua_State *L) {
  int64_t r = tir_sched_decompose_reduction(check(L, 1), check_uid(L, 2), (tir_Var *)tirL_check_node(L, 3, TIR_Var, "loop"));
  if (r < 0) return tirL_raise_core(L);
  lua_pushinteger(L, r);
  return 1;
}

/* blockize(loop_var, preserve_unit_iters) -> uid */
static int m_blockize(lua_State *L) {
  int64_t r = tir_sched_blockize(check(L, 1), (tir_Var *)tirL_check_node(L, 2, TIR_Var, "loop"), lua_toboolean(L, 3));
  if (r < 0) return tirL_raise_core(L);
  lua_pushinteger(L, r);
  return 1;
}

/* blockize_blocks({uids}, preserve_unit_iters) -> uid */
static int m_blockize_blocks(lua_State *L) {
  tir_Schedule *s = check(L, 1);
  luaL_checktype(L, 2, LUA_TTABLE);
  int64_t uids[256];
  int n = uid_list(L, 2, uids, 256);
  int64_t r = tir_sched_blockize_blocks(s, uids, n, lua_toboolean(L, 3));
  if (r < 0) return tirL_raise_core(L);
  lua_pushinteger(L, r);
  return 1;
}

/* rfactor(loop_var, factor_axis) -> uid of the rf block */
static int m_rfactor(lua_State *L) {
  int64_t r = tir_sched_rfactor(check(L, 1), (tir_Var *)tirL_check_node(L, 2, TIR_Var, "loop"), int_arg(L, 3));
  if (r < 0) return tirL_raise_core(L);
  lua_pushinteger(L, r);
  return 1;
}

/* reindex(block, is_write, index) -> uid of the new stage */
static int m_reindex(lua_State *L) {
  int64_t r = tir_sched_reindex(check(L, 1), check_uid(L, 2), lua_toboolean(L, 3), int_arg(L, 4));
  if (r < 0) return tirL_raise_core(L);
  lua_pushinteger(L, r);
  return 1;
}

/* pad_einsum(block, {factors}) -> {uids of the new blocks} */
static int m_pad_einsum(lua_State *L) {
  tir_Schedule *s = check(L, 1);
  int64_t uid = check_uid(L, 2);
  luaL_checktype(L, 3, LUA_TTABLE);
  int n = (int)luaL_len(L, 3);
  if (n > 64) return luaL_error(L, "pad_einsum: at most 64 factors");
  int64_t pad[64], out[64];
  for (int i = 0; i < n; i++) {
    lua_rawgeti(L, 3, i + 1);
    pad[i] = luaL_checkinteger(L, -1);
    lua_pop(L, 1);
  }
  int r = tir_sched_pad_einsum(s, uid, pad, n, out, 64);
  if (r < 0) return tirL_raise_core(L);
  lua_createtable(L, r, 0);
  for (int i = 0; i < r; i++) {
    lua_pushinteger(L, out[i]);
    lua_rawseti(L, -2, i + 1);
  }
  return 1;
}

/* annotate(block_uid | loop_var, key, value) */
static int m_annotate(lua_State *L) {
  tir_Schedule *s = check(L, 1);
  const char *key = luaL_checkstring(L, 3);
  tir_Node *v;
  if (lua_type(L, 4) == LUA_TSTRING) v = tir_string_imm(lua_tostring(L, 4));
  else if (lua_type(L, 4) == LUA_TTABLE) {
    tir_Array *a = tirL_check_expr_list(L, 4, "annotation value");
    v = &a->hdr;
  } else v = tirL_to_expr(L, 4, TIR_INT32, 0);
  tirL_push_node(L, v);
  int rc = lua_isinteger(L, 2) ? tir_sched_annotate(s, lua_tointeger(L, 2), NULL, key, v)
                               : tir_sched_annotate(s, -1, (tir_Var *)tirL_check_node(L, 2, TIR_Var, "loop"), key, v);
  if (rc) return tirL_raise_core(L);
  return 0;
}

static int m_unannotate(lua_State *L) {
  tir_Schedule *s = check(L, 1);
  const char *key = luaL_checkstring(L, 3);
  int rc = lua_isinteger(L, 2) ? tir_sched_unannotate(s, lua_tointeger(L, 2), NULL, key)
                               : tir_sched_unannotate(s, -1, (tir_Var *)tirL_check_node(L, 2, TIR_Var, "loop"), key);
  if (rc) return tirL_raise_core(L);
  return 0;
}

static int m_add_unit_loop(lua_State *L) {
  tir_Schedule *s = check(L, 1);
  tir_Var *v = lua_isinteger(L, 2) ? tir_sched_add_unit_loop(s, lua_tointeger(L, 2), NULL)
                                   : tir_sched_add_unit_loop(s, -1, (tir_Var *)tirL_check_node(L, 2, TIR_Var, "loop"));
  if (!v) return tirL_raise_core(L);
  tirL_push_node(L, &v->hdr);
  return 1;
}

static int m_get_producers(lua_State *L) { return push_array_items(L, tir_sched_get_producers(check(L, 1), check_uid(L, 2))); }
static int m_get_consumers(lua_State *L) { return push_array_items(L, tir_sched_get_consumers(check(L, 1), check_uid(L, 2))); }

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
                                     {"merge", m_merge},
                                     {"reorder", m_reorder},
                                     {"bind", m_bind},
                                     {"unroll", m_unroll},
                                     {"parallel", m_parallel},
                                     {"vectorize", m_vectorize},
                                     {"compute_at", m_compute_at},
                                     {"reverse_compute_at", m_reverse_compute_at},
                                     {"compute_inline", m_compute_inline},
                                     {"reverse_compute_inline", m_reverse_compute_inline},
                                     {"cache_read", m_cache_read},
                                     {"cache_write", m_cache_write},
                                     {"set_scope", m_set_scope},
                                     {"storage_align", m_storage_align},
                                     {"storage_swizzle", m_storage_swizzle},
                                     {"transform_layout", m_transform_layout},
                                     {"transform_block_layout", m_transform_block_layout},
                                     {"tensorize", m_tensorize},
                                     {"decompose_reduction", m_decompose_reduction},
                                     {"blockize", m_blockize},
                                     {"blockize_blocks", m_blockize_blocks},
                                     {"rfactor", m_rfactor},
                                     {"reindex", m_reindex},
                                     {"pad_einsum", m_pad_einsum},
                                     {"annotate", m_annotate},
                                     {"unannotate", m_unannotate},
                                     {"add_unit_loop", m_add_unit_loop},
                                     {"get_producers", m_get_producers},
                                     {"get_consumers", m_get_consumers},
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
  lua_pushcfunction(L, l_intrin_register);
  lua_setfield(L, -2, "tensor_intrin_register");
  lua_pushcfunction(L, l_intrin_get);
  lua_setfield(L, -2, "tensor_intrin_get");
  lua_pushcfunction(L, l_intrin_list);
  lua_setfield(L, -2, "tensor_intrin_list");
  /* a sentinel whose __gc clears the registry when the state closes */
  lua_newuserdatauv(L, 1, 0);
  lua_newtable(L);
  lua_pushcfunction(L, intrin_registry_gc);
  lua_setfield(L, -2, "__gc");
  lua_setmetatable(L, -2);
  lua_setfield(L, LUA_REGISTRYINDEX, "tir.intrin_registry_sentinel");
}
