/* l_tables.c -- the core's tables as Lua values (read-only copies):
 *   tir.core.builtins()      -> {{op=, min_args=, max_args=, writes={i..} (0-based), pure=, barrier=,
 *                                 async=, async_wait=, warp=, warpgroup=, float_math=, async_proxy=, doc=},
 *                                 ...}  (builtins.def)
 *   tir.core.mma_configs()   -> {{name=, family="mma"|"wmma"|"wgmma", m=, n=, k=, a=, b=, c= (dtype
 *                                 strings), ptx_a=, ptx_b=, ptx_c=, min_sm=, tile_m=, tile_n=, regs_a=,
 *                                 regs_b=, regs_c=, source=, n_valid= (wgmma: the valid N)}, ...}
 *                                 (include/tir/mma.h)
 *   tir.core.scope_valid(s)  -> boolean (include/tir/scope.h: what set_scope/cache_read accept)
 *   tir.core.scope_list()    -> the list of valid scopes for messages (a string) */
#include "l_tir.h"
#include <stdlib.h>

#include "tir/device_print.h"
#include "tir/mma.h"
#include "tir/scope.h"
#include "tir/swizzle.h"

static void set_int(lua_State *L, const char *k, lua_Integer v) {
  lua_pushinteger(L, v);
  lua_setfield(L, -2, k);
}
static void set_str(lua_State *L, const char *k, const char *v) {
  lua_pushstring(L, v);
  lua_setfield(L, -2, k);
}
static void set_bool(lua_State *L, const char *k, int v) {
  lua_pushboolean(L, v);
  lua_setfield(L, -2, k);
}

static int l_builtins(lua_State *L) {
  const tir_BuiltinInfo *t = tir_builtin_table();
  lua_createtable(L, TIR_BI_COUNT, 0);
  for (int i = 0; i < TIR_BI_COUNT; i++) {
    lua_createtable(L, 0, 12);
    set_str(L, "op", t[i].op);
    set_int(L, "min_args", t[i].min_args);
    set_int(L, "max_args", t[i].max_args);
    lua_newtable(L);
    for (int a = 0, n = 0; a < 32; a++)
      if (t[i].writes >> a & 1u) {
        lua_pushinteger(L, a);
        lua_rawseti(L, -2, ++n);
      }
    lua_setfield(L, -2, "writes");
    set_bool(L, "pure", t[i].flags & TIR_BUILTIN_PURE);
    set_bool(L, "barrier", t[i].flags & TIR_BUILTIN_BARRIER);
    set_bool(L, "async", t[i].flags & TIR_BUILTIN_ASYNC);
    set_bool(L, "async_wait", t[i].flags & TIR_BUILTIN_ASYNC_WAIT);
    set_bool(L, "warp", t[i].flags & TIR_BUILTIN_WARP);
    set_bool(L, "warpgroup", t[i].flags & TIR_BUILTIN_WARPGROUP);
    set_bool(L, "float_math", t[i].flags & TIR_BUILTIN_FLOAT_MATH);
    set_bool(L, "async_proxy", t[i].flags & TIR_BUILTIN_ASYNC_PROXY);
    set_bool(L, "lane_address", t[i].flags & TIR_BUILTIN_LANE_ADDRESS);
    set_bool(L, "swizzle_aware", t[i].flags & TIR_BUILTIN_SWIZZLE_AWARE);
    set_bool(L, "named_barrier", t[i].flags & TIR_BUILTIN_NAMED_BARRIER);
    set_str(L, "doc", t[i].doc);
    lua_rawseti(L, -2, i + 1);
  }
  return 1;
}

static int l_mma_configs(lua_State *L) {
  int n;
  const tir_MmaConfig *t = tir_mma_table(&n);
  lua_createtable(L, n, 0);
  for (int i = 0; i < n; i++) {
    char buf[32];
    lua_createtable(L, 0, 20);
    set_str(L, "name", t[i].name);
    set_str(L, "family", t[i].family == TIR_MMA_SYNC ? "mma" : t[i].family == TIR_MMA_WMMA ? "wmma" : "wgmma");
    set_int(L, "m", t[i].m);
    set_int(L, "n", t[i].n);
    set_int(L, "k", t[i].k);
    set_str(L, "a", tir_dtype_str(t[i].a, buf));
    set_str(L, "b", tir_dtype_str(t[i].b, buf));
    set_str(L, "c", tir_dtype_str(t[i].c, buf));
    set_str(L, "ptx_a", t[i].ptx_a);
    set_str(L, "ptx_b", t[i].ptx_b);
    set_str(L, "ptx_c", t[i].ptx_c);
    set_int(L, "min_sm", t[i].min_sm);
    set_int(L, "tile_m", tir_mma_tile_m(&t[i]));
    set_int(L, "tile_n", tir_mma_tile_n(&t[i]));
    set_int(L, "regs_a", t[i].regs_a);
    set_int(L, "regs_b", t[i].regs_b);
    set_int(L, "regs_c", t[i].regs_c);
    set_str(L, "source", t[i].source);
    if (t[i].family == TIR_MMA_WGMMA) {
      lua_newtable(L); /* the valid N of the instruction */
      for (int nn = 8, j = 0; nn <= 256; nn += 8)
        if (tir_wgmma_n_valid(&t[i], nn)) {
          lua_pushinteger(L, nn);
          lua_rawseti(L, -2, ++j);
        }
      lua_setfield(L, -2, "n_valid");
    }
    lua_rawseti(L, -2, i + 1);
  }
  return 1;
}

/* mma_lane_map(name, operand [, n]) -> {{lane=, e=, row=, col=}, ...} over the row's warp tile
** (operand "a", "b" or "c"; mma.sync rows; wgmma rows with their n: lanes 0..127 of the
** warpgroup, "c" (n/2 a lane) or "a" (A in registers); wmma fragments have no PTX-defined layout) */
static int l_mma_lane_map(lua_State *L) {
  const char *name = luaL_checkstring(L, 1);
  const char *op = luaL_checkstring(L, 2);
  const tir_MmaConfig *c = tir_mma_find(TIR_MMA_SYNC, name);
  const tir_MmaConfig *wg = c ? NULL : tir_mma_find(TIR_MMA_WGMMA, name);
  if (!c && !wg) return tirL_error(L, TIR_ERR_VALUE, "mma_lane_map", "no mma.sync row named '%s' (nor a wgmma row)", name);
  if ((op[0] != 'a' && op[0] != 'b' && op[0] != 'c') || op[1] != '\0' || (wg && op[0] == 'b'))
    return tirL_error(L, TIR_ERR_VALUE, "mma_lane_map", "operand must be \"a\", %s\"c\", got '%s'", wg ? "" : "\"b\" or ", op);
  int lanes = 32, per;
  tir_MmaLaneMap map;
  if (wg) {
    lua_Integer n = luaL_checkinteger(L, 3);
    if (!tir_wgmma_n_valid(wg, (int)n)) return tirL_error(L, TIR_ERR_VALUE, "mma_lane_map", "n = %lld is not a valid N of %s", (long long)n, name);
    c = wg, lanes = 128, map = op[0] == 'a' ? c->map_a : c->map_c;
    per = op[0] == 'a' ? 64 * c->k / 128 : (int)n / 2;
  } else {
    map = op[0] == 'a' ? c->map_a : op[0] == 'b' ? c->map_b : c->map_c;
    per = tir_mma_lane_elems(c, op[0]);
  }
  lua_createtable(L, lanes * per, 0);
  for (int lane = 0; lane < lanes; lane++)
    for (int e = 0; e < per; e++) {
      int r, col;
      map(lane, e, &r, &col);
      lua_createtable(L, 0, 4);
      set_int(L, "lane", lane);
      set_int(L, "e", e);
      set_int(L, "row", r);
      set_int(L, "col", col);
      lua_rawseti(L, -2, lane * per + e + 1);
    }
  return 1;
}

static int l_print_capture_begin(lua_State *L) {
  (void)L;
  tir_print_capture_begin();
  return 0;
}

static int l_print_capture_end(lua_State *L) {
  char *s = tir_print_capture_end();
  lua_pushstring(L, s);
  free(s);
  return 1;
}

static int l_scope_valid(lua_State *L) {
  lua_pushboolean(L, tir_scope_valid(luaL_checkstring(L, 1)));
  return 1;
}

static int l_scope_list(lua_State *L) {
  lua_pushstring(L, tir_scope_valid_list());
  return 1;
}

/* pushes a packed swizzle as Lua sees it: "none", "32B", "64B", "128B" or {B, M, S} */
static void push_swizzle(lua_State *L, int64_t sw) {
  if (tir_swizzle_ptx_mode(sw) >= 0) {
    char buf[24];
    lua_pushstring(L, tir_swizzle_str(sw, buf));
    return;
  }
  lua_createtable(L, 3, 0);
  lua_pushinteger(L, tir_swizzle_bits(sw));
  lua_rawseti(L, -2, 1);
  lua_pushinteger(L, tir_swizzle_base(sw));
  lua_rawseti(L, -2, 2);
  lua_pushinteger(L, tir_swizzle_shift(sw));
  lua_rawseti(L, -2, 3);
}

/* swizzle_for_rows(row_bytes) -> the swizzle spreading 8 rows over the bank groups, or nil */
static int l_swizzle_for_rows(lua_State *L) {
  int64_t sw = tir_swizzle_for_rows(luaL_checkinteger(L, 1));
  if (!sw) return 0;
  push_swizzle(L, sw);
  return 1;
}

/* swizzle_apply(mode, byte_offset) -> the physical byte offset; swizzle_info(mode) -> {bits,
 * base, shift, repeat, unit, ptx_mode (0 none, 32, 64, 128; -1 other)} */
static int l_swizzle_apply(lua_State *L) {
  int64_t sw = tirL_check_swizzle(L, 1, "swizzle_apply");
  lua_Integer off = luaL_checkinteger(L, 2);
  if (off < 0) return tirL_error(L, TIR_ERR_VALUE, "swizzle_apply", "byte offset must be >= 0, got %lld", (long long)off);
  lua_pushinteger(L, tir_swizzle_apply(sw, off));
  return 1;
}

static int l_swizzle_info(lua_State *L) {
  int64_t sw = tirL_check_swizzle(L, 1, "swizzle_info");
  lua_createtable(L, 0, 6);
  set_int(L, "bits", tir_swizzle_bits(sw));
  set_int(L, "base", tir_swizzle_base(sw));
  set_int(L, "shift", tir_swizzle_shift(sw));
  set_int(L, "repeat", tir_swizzle_repeat(sw));
  set_int(L, "unit", tir_swizzle_unit(sw));
  set_int(L, "ptx_mode", tir_swizzle_ptx_mode(sw));
  return 1;
}

void tirL_open_tables(lua_State *L) {
  static const luaL_Reg fns[] = {{"builtins", l_builtins},
                                 {"mma_configs", l_mma_configs},
                                 {"mma_lane_map", l_mma_lane_map},
                                 {"print_capture_begin", l_print_capture_begin},
                                 {"print_capture_end", l_print_capture_end},
                                 {"scope_valid", l_scope_valid},
                                 {"scope_list", l_scope_list},
                                 {"swizzle_for_rows", l_swizzle_for_rows},
                                 {"swizzle_apply", l_swizzle_apply},
                                 {"swizzle_info", l_swizzle_info},
                                 {NULL, NULL}};
  luaL_setfuncs(L, fns, 0);
}
