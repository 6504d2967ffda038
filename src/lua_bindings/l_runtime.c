/* l_runtime.c -- NDArray ("tir.NDArray"), devices, CUDA/NVRTC availability, reference
 * GEMMs (OpenBLAS, cuBLAS) and array comparison for tir.testing. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "l_tir.h"
#include "tir/dlpack_interop.h"
#include "tir/runtime.h"
#include "tir/tirlua.h"

#define MT "tir.NDArray"

typedef struct {
  tir_NDArray *a;
} Box;

void tirL_push_ndarray(lua_State *L, tir_NDArray *a);
tir_NDArray *tirL_check_ndarray(lua_State *L, int idx);
tir_NDArray *tirL_to_ndarray(lua_State *L, int idx);
tir_Device tirL_check_device(lua_State *L, int idx);

void tirL_push_ndarray(lua_State *L, tir_NDArray *a) {
  Box *b = lua_newuserdatauv(L, sizeof(Box), 0);
  b->a = NULL;
  luaL_setmetatable(L, MT);
  b->a = a;
}

tir_NDArray *tirL_to_ndarray(lua_State *L, int idx) {
  Box *b = luaL_testudata(L, idx, MT);
  return b ? b->a : NULL;
}

tir_NDArray *tirlua_toarray(lua_State *L, int idx) { return tirL_to_ndarray(L, idx); }

tir_NDArray *tirL_check_ndarray(lua_State *L, int idx) {
  Box *b = luaL_checkudata(L, idx, MT);
  if (!b->a) luaL_error(L, "array was freed");
  return b->a;
}

/* A device: "cpu", "cuda", "cuda:1", or a table {type = "cuda", id = 0}. */
tir_Device tirL_check_device(lua_State *L, int idx) {
  tir_Device d = {TIR_DEV_CPU, 0};
  if (lua_isnoneornil(L, idx)) return d;
  const char *type = NULL;
  if (lua_type(L, idx) == LUA_TTABLE) {
    lua_getfield(L, idx, "type");
    type = lua_tostring(L, -1);
    lua_getfield(L, idx, "id");
    d.id = (int)luaL_optinteger(L, -1, 0);
    lua_pop(L, 2);
  } else if (lua_type(L, idx) == LUA_TSTRING) {
    type = lua_tostring(L, idx);
  }
  if (!type) luaL_argerror(L, idx, "device expected (tir.device(\"cuda\", 0), \"cpu\" or \"cuda:0\")");
  if (strncmp(type, "cuda", 4) == 0) {
    d.type = TIR_DEV_CUDA;
    if (type[4] == ':') d.id = atoi(type + 5);
  } else if (strcmp(type, "cpu") == 0 || strcmp(type, "llvm") == 0) {
    d.type = TIR_DEV_CPU;
  } else {
    luaL_argerror(L, idx, lua_pushfstring(L, "unknown device type '%s' (cpu or cuda)", type));
  }
  return d;
}

/* Reads the number (or boolean) at idx as a value of the integer dtype t (int, uint or
 * bool): Lua integers and integral floats within t's range.  Returns 0 and sets *out, or -1
 * with the reason in why ("7.5 is not an integer", "300 is outside int8's range [-128, 127]",
 * "NaN ...", "a string ...").  Values are refused, never truncated or wrapped. */
int tirL_int_for_dtype(lua_State *L, int idx, tir_DType t, int64_t *out, char *why, size_t n) {
  int64_t lo, hi;
  if (t.code == TIR_DT_BOOL) lo = 0, hi = 1;
  else if (t.code == TIR_DT_UINT) lo = 0, hi = t.bits >= 63 ? INT64_MAX : (int64_t)(((uint64_t)1 << t.bits) - 1);
  else if (t.bits >= 64) lo = INT64_MIN, hi = INT64_MAX;
  else lo = -((int64_t)1 << (t.bits - 1)), hi = ((int64_t)1 << (t.bits - 1)) - 1;
  char ts[32];
  tir_dtype_str(t, ts);
  int64_t x;
  if (lua_isboolean(L, idx)) {
    x = lua_toboolean(L, idx);
  } else if (lua_type(L, idx) != LUA_TNUMBER) {
    snprintf(why, n, "a %s, not a number", luaL_typename(L, idx));
    return -1;
  } else if (lua_isinteger(L, idx)) {
    x = lua_tointeger(L, idx);
  } else {
    double v = lua_tonumber(L, idx);
    if (v != v) {
      snprintf(why, n, "NaN, which %s cannot hold", ts);
      return -1;
    }
    if (!(v >= -9223372036854775808.0 && v < 9223372036854775808.0)) {
      snprintf(why, n, "%.17g, outside %s's range [%lld, %lld]", v, ts, (long long)lo, (long long)hi);
      return -1;
    }
    if (v != floor(v)) {
      snprintf(why, n, "%.17g, not an integer (%s holds integers)", v, ts);
      return -1;
    }
    x = (int64_t)v;
  }
  if (x < lo || x > hi) {
    snprintf(why, n, "%lld, outside %s's range [%lld, %lld]", (long long)x, ts, (long long)lo, (long long)hi);
    return -1;
  }
  *out = x;
  return 0;
}

static int read_shape(lua_State *L, int idx, int64_t *shape) {
  luaL_checktype(L, idx, LUA_TTABLE);
  int n = tirL_table_maxn(L, idx);
  if (n > TIR_MAX_NDIM) luaL_argerror(L, idx, "too many dimensions");
  for (int i = 1; i <= n; i++) {
    lua_geti(L, idx, i);
    tir_Node *node = tirL_to_node(L, -1);
    int64_t v;
    if (lua_isinteger(L, -1)) shape[i - 1] = lua_tointeger(L, -1);
    else if (node && tir_is_const_int(node, &v)) shape[i - 1] = v;
    else luaL_error(L, "shape[%d] must be an integer", i);
    if (shape[i - 1] < 0) /* (lib/tir/nd.lua checks first, naming its function) */
      tirL_error(L, TIR_ERR_VALUE, "nd.empty", "shape[%d] is %lld: a dimension is a count of elements, >= 0", i, (long long)shape[i - 1]);
    lua_pop(L, 1);
  }
  return n;
}

static tir_DType opt_dtype(lua_State *L, int idx, tir_DType def) {
  return lua_isnoneornil(L, idx) ? def : tirL_check_dtype(L, idx);
}

/* ---- DLPack (include/tir/dlpack_interop.h) ---- */
#define DLPACK_MT "tir.DLPack"
typedef struct {
  void *t;       /* DLManagedTensor or DLManagedTensorVersioned */
  int versioned; /* which */
  int consumed;  /* ownership passed on (imported, or released to C): no deleter here */
} DLBox;

/* a:to_dlpack(versioned) -> a tir.DLPack capsule owning a managed tensor of a's memory */
static int m_to_dlpack(lua_State *L) {
  tir_NDArray *a = tirL_check_ndarray(L, 1);
  int versioned = lua_toboolean(L, 2);
  DLBox *b = lua_newuserdatauv(L, sizeof *b, 0);
  b->t = NULL;
  b->versioned = versioned;
  b->consumed = 0;
  luaL_setmetatable(L, DLPACK_MT);
  b->t = versioned ? (void *)tir_nd_to_dlpack_versioned(a) : (void *)tir_nd_to_dlpack(a);
  if (!b->t) return tirL_raise_core(L);
  return 1;
}

static void dl_delete(DLBox *b) {
  if (!b->t || b->consumed) return;
  if (b->versioned) {
    DLManagedTensorVersioned *t = b->t;
    if (t->deleter) t->deleter(t);
  } else {
    DLManagedTensor *t = b->t;
    if (t->deleter) t->deleter(t);
  }
  b->consumed = 1;
}

static int dl_gc(lua_State *L) {
  dl_delete(luaL_checkudata(L, 1, DLPACK_MT));
  return 0;
}

/* prim: the function to name in the error (nd.from_dlpack or DLPack:release). */
static DLBox *check_live_capsule(lua_State *L, int idx, const char *prim) {
  DLBox *b = luaL_checkudata(L, idx, DLPACK_MT);
  if (b->consumed)
    tirL_error(L, TIR_ERR_VALUE, prim,
               "the DLPack capsule was already consumed (imported by nd.from_dlpack or handed to C by release(); "
               "a tensor is taken once)");
  return b;
}

/* capsule:release() -> lightuserdata: the managed tensor, now the C caller's (to call its deleter) */
static int dl_release(lua_State *L) {
  if (lua_gettop(L) > 1) tirL_error(L, TIR_ERR_TYPE, "DLPack:release", "too many arguments: release() takes none");
  DLBox *b = check_live_capsule(L, 1, "DLPack:release");
  b->consumed = 1;
  lua_pushlightuserdata(L, b->t);
  return 1;
}

static int dl_versioned(lua_State *L) {
  lua_pushboolean(L, ((DLBox *)luaL_checkudata(L, 1, DLPACK_MT))->versioned);
  return 1;
}

static int dl_tostring(lua_State *L) {
  DLBox *b = luaL_checkudata(L, 1, DLPACK_MT);
  lua_pushfstring(L, "tir.DLPack(%s%s)", b->versioned ? "DLManagedTensorVersioned" : "DLManagedTensor",
                  b->consumed ? ", consumed" : "");
  return 1;
}

/* nd_from_dlpack(capsule | lightuserdata, versioned) -> NDArray viewing the tensor (no copy) */
static int l_from_dlpack(lua_State *L) {
  tir_NDArray *a;
  if (lua_type(L, 1) == LUA_TLIGHTUSERDATA) {
    void *t = lua_touserdata(L, 1);
    a = lua_toboolean(L, 2) ? tir_nd_from_dlpack_versioned(t) : tir_nd_from_dlpack(t);
    if (!a) return tirL_raise_core(L);
  } else {
    DLBox *b = check_live_capsule(L, 1, "nd.from_dlpack");
    a = b->versioned ? tir_nd_from_dlpack_versioned(b->t) : tir_nd_from_dlpack(b->t);
    if (!a) return tirL_raise_core(L);
    b->consumed = 1; /* the array owns it now */
  }
  tirL_push_ndarray(L, a);
  return 1;
}

static int l_empty(lua_State *L) {
  int64_t shape[TIR_MAX_NDIM];
  int n = read_shape(L, 1, shape);
  tir_DType t = opt_dtype(L, 2, TIR_FLOAT32);
  tir_Device d = tirL_check_device(L, 3);
  tir_NDArray *a = tir_nd_empty(shape, n, t, d);
  if (!a) return tirL_raise_core(L);
  tirL_push_ndarray(L, a);
  return 1;
}

typedef union {
  double f;
  int64_t i;
} Elem;

/* "[2][3]": the Lua position of an element (pos[0..depth-1], 1-based) for messages. */
static const char *elem_pos(lua_State *L, const int *pos, int depth) {
  luaL_Buffer b;
  luaL_buffinit(L, &b);
  for (int d = 0; d < depth; d++) {
    lua_pushfstring(L, "[%d]", pos[d]);
    luaL_addvalue(&b);
  }
  luaL_pushresult(&b);
  return lua_tostring(L, -1);
}

/* Flattens a nested Lua table into values of dtype t (integer dtypes: exact int64 values,
 * checked against t's range), checking a rectangular shape. */
static int flatten_table(lua_State *L, int idx, int depth, int *pos, int64_t *shape, int *ndim, tir_DType t, Elem *out,
                         int64_t *k, int64_t cap) {
  int n = (int)lua_rawlen(L, idx);
  if (depth >= TIR_MAX_NDIM) return luaL_error(L, "nesting deeper than %d", TIR_MAX_NDIM);
  if (depth >= *ndim) {
    *ndim = depth + 1;
    shape[depth] = n;
  } else if (shape[depth] != n) {
    return luaL_error(L, "ragged table (dimension %d has lengths %d and %d)", depth + 1, (int)shape[depth], n);
  }
  int is_int = !tir_dtype_is_float(t);
  for (int i = 1; i <= n; i++) {
    pos[depth] = i;
    lua_geti(L, idx, i);
    if (lua_type(L, -1) == LUA_TTABLE) {
      flatten_table(L, lua_gettop(L), depth + 1, pos, shape, ndim, t, out, k, cap);
    } else {
      if (lua_type(L, -1) != LUA_TNUMBER && !lua_isboolean(L, -1))
        return luaL_error(L, "element %s is %s%s, not a number", elem_pos(L, pos, depth + 1),
                          lua_isnil(L, -1) ? "" : "a ", luaL_typename(L, -1));
      if (*k >= cap) return luaL_error(L, "ragged table");
      if (is_int) {
        char why[160];
        if (tirL_int_for_dtype(L, -1, t, &out[*k].i, why, sizeof why))
          return tirL_error(L, TIR_ERR_VALUE, "nd.array", "element %s is %s", elem_pos(L, pos, depth + 1), why);
      } else {
        out[*k].f = lua_isboolean(L, -1) ? lua_toboolean(L, -1) : lua_tonumber(L, -1);
      }
      (*k)++;
    }
    lua_pop(L, 1);
  }
  return 0;
}

/* Counts the numbers of a nested table; tables must nest uniformly (all leaves at one depth). */
static int64_t count_leaves(lua_State *L, int idx, int depth, int *leaf_depth) {
  if (depth > TIR_MAX_NDIM) luaL_error(L, "tables nest deeper than %d (or refer to themselves)", TIR_MAX_NDIM);
  int64_t c = 0;
  int n = (int)lua_rawlen(L, idx);
  /* a list only: {a = 1} would otherwise become an empty array */
  lua_pushnil(L);
  while (lua_next(L, idx)) {
    lua_pop(L, 1);
    if (!lua_isinteger(L, -1) || lua_tointeger(L, -1) < 1 || lua_tointeger(L, -1) > n) {
      const char *key = lua_type(L, -1) == LUA_TSTRING ? lua_pushfstring(L, "'%s'", lua_tostring(L, -1))
                                                          : lua_pushfstring(L, "%s", luaL_tolstring(L, -1, NULL));
      luaL_error(L, "expected a (nested) list of numbers, but a table has the key %s", key);
    }
  }
  for (int i = 1; i <= n; i++) {
    lua_geti(L, idx, i);
    if (lua_type(L, -1) == LUA_TTABLE) {
      c += count_leaves(L, lua_gettop(L), depth + 1, leaf_depth);
    } else {
      if (*leaf_depth < 0) *leaf_depth = depth;
      else if (*leaf_depth != depth) luaL_error(L, "ragged table (numbers at nesting depths %d and %d)", *leaf_depth + 1, depth + 1);
      c++;
    }
    lua_pop(L, 1);
  }
  return c;
}

/* nd_array(table, dtype, device) */
static int l_array(lua_State *L) {
  luaL_checktype(L, 1, LUA_TTABLE);
  tir_DType t = opt_dtype(L, 2, TIR_FLOAT32);
  tir_Device d = tirL_check_device(L, 3);
  int leaf_depth = -1;
  int64_t cap = count_leaves(L, 1, 0, &leaf_depth);
  Elem *vals = lua_newuserdatauv(L, sizeof(Elem) * (size_t)(cap ? cap : 1), 0); /* GC-owned scratch */
  int64_t shape[TIR_MAX_NDIM];
  int pos[TIR_MAX_NDIM];
  int ndim = 0;
  int64_t k = 0;
  flatten_table(L, 1, 0, pos, shape, &ndim, t, vals, &k, cap);
  if (lua_rawlen(L, 1) == 0) ndim = 1, shape[0] = 0;
  tir_NDArray *host = tir_nd_empty(shape, ndim, t, (tir_Device){TIR_DEV_CPU, 0});
  if (!host) return tirL_raise_core(L);
  if (k != tir_nd_numel(host)) {
    tir_nd_release(host);
    return luaL_error(L, "ragged table");
  }
  for (int64_t i = 0; i < k; i++) {
    if (tir_dtype_is_float(t)) tir_nd_set_f(host, i, vals[i].f);
    else tir_nd_set_i(host, i, vals[i].i);
  }
  if (d.type == TIR_DEV_CPU) {
    tirL_push_ndarray(L, host);
    return 1;
  }
  tir_NDArray *a = tir_nd_to(host, d);
  tir_nd_release(host);
  if (!a) return tirL_raise_core(L);
  tirL_push_ndarray(L, a);
  return 1;
}

static int l_load(lua_State *L) {
  const char *path = luaL_checkstring(L, 1);
  tir_Device d = tirL_check_device(L, 2);
  tir_NDArray *a = tir_nd_load_npy(path, d);
  if (!a) return tirL_raise_core(L);
  tirL_push_ndarray(L, a);
  return 1;
}

static int m_gc(lua_State *L) {
  Box *b = luaL_checkudata(L, 1, MT);
  tir_nd_release(b->a);
  b->a = NULL;
  return 0;
}

static void push_device(lua_State *L, tir_Device d) {
  if (d.type == TIR_DEV_CPU) lua_pushliteral(L, "cpu");
  else lua_pushfstring(L, "cuda:%d", d.id);
}

/* "shape=(2, 3), dtype=float32, device=cpu" */
static void add_meta(lua_State *L, luaL_Buffer *b, const tir_NDArray *a) {
  luaL_addstring(b, "shape=(");
  for (int i = 0; i < a->ndim; i++) {
    lua_pushfstring(L, "%s%I", i ? ", " : "", (lua_Integer)a->shape[i]);
    luaL_addvalue(b);
  }
  if (a->ndim == 1) luaL_addstring(b, ",");
  char s[32];
  lua_pushfstring(L, "), dtype=%s, device=", tir_dtype_str(a->dtype, s));
  luaL_addvalue(b);
  push_device(L, a->dev);
  luaL_addvalue(b);
}

/* tir.NDArray(shape=(2, 3), dtype=float32, device=cpu): the array without its values (for
 * error messages). */
static int m_summary(lua_State *L) {
  tir_NDArray *a = tirL_check_ndarray(L, 1);
  luaL_Buffer b;
  luaL_buffinit(L, &b);
  luaL_addstring(&b, "tir.NDArray(");
  add_meta(L, &b, a);
  luaL_addstring(&b, ")");
  luaL_pushresult(&b);
  return 1;
}

/* tostring(a) / print(a): tir.NDArray([[1., 2.], [3., 4.]], shape=(2, 2), dtype=float32,
 * device=cpu), the values in numpy's style (tir_nd_format: large arrays elided); device
 * arrays are copied to the host for it.  When the copy fails the values are left out. */
static int m_tostring(lua_State *L) {
  tir_NDArray *a = tirL_check_ndarray(L, 1);
  char *vals = tir_nd_format(a, 12);
  if (!vals) {
    tir_error_clear();
    return m_summary(L);
  }
  luaL_Buffer b;
  luaL_buffinit(L, &b);
  luaL_addstring(&b, "tir.NDArray(");
  luaL_addstring(&b, vals);
  free(vals);
  luaL_addstring(&b, ", ");
  add_meta(L, &b, a);
  luaL_addstring(&b, ")");
  luaL_pushresult(&b);
  return 1;
}

static int m_shape(lua_State *L) {
  tir_NDArray *a = tirL_check_ndarray(L, 1);
  lua_createtable(L, a->ndim, 0);
  for (int i = 0; i < a->ndim; i++) {
    lua_pushinteger(L, a->shape[i]);
    lua_rawseti(L, -2, i + 1);
  }
  return 1;
}

/* a:reshape({d1, d2, ...}) -> a view of a's memory with that shape (tir_nd_reshape) */
static int m_reshape(lua_State *L) {
  tir_NDArray *a = tirL_check_ndarray(L, 1);
  luaL_checktype(L, 2, LUA_TTABLE);
  int nd = (int)lua_rawlen(L, 2);
  if (nd > TIR_MAX_NDIM) return tirL_error(L, TIR_ERR_VALUE, "nd.reshape", "%d dimensions (at most %d)", nd, TIR_MAX_NDIM);
  int64_t shape[TIR_MAX_NDIM];
  for (int i = 0; i < nd; i++) {
    lua_rawgeti(L, 2, i + 1);
    if (!lua_isinteger(L, -1)) return tirL_error(L, TIR_ERR_TYPE, "nd.reshape", "dimension %d must be an integer, got %s", i + 1, luaL_typename(L, -1));
    shape[i] = lua_tointeger(L, -1);
    lua_pop(L, 1);
  }
  tir_NDArray *v = tir_nd_reshape(a, shape, nd);
  if (!v) return tirL_raise_core(L);
  tirL_push_ndarray(L, v);
  return 1;
}

static int m_dtype(lua_State *L) {
  char s[32];
  lua_pushstring(L, tir_dtype_str(tirL_check_ndarray(L, 1)->dtype, s));
  return 1;
}

static int m_device(lua_State *L) {
  push_device(L, tirL_check_ndarray(L, 1)->dev);
  return 1;
}

static int m_numel(lua_State *L) {
  lua_pushinteger(L, tir_nd_numel(tirL_check_ndarray(L, 1)));
  return 1;
}

static int m_nbytes(lua_State *L) {
  lua_pushinteger(L, (lua_Integer)tirL_check_ndarray(L, 1)->nbytes);
  return 1;
}

static int m_to(lua_State *L) {
  tir_NDArray *a = tirL_check_ndarray(L, 1);
  tir_Device d = tirL_check_device(L, 2);
  tir_NDArray *r = tir_nd_to(a, d);
  if (!r) return tirL_raise_core(L);
  tirL_push_ndarray(L, r);
  return 1;
}

static int m_copyfrom(lua_State *L) {
  tir_NDArray *a = tirL_check_ndarray(L, 1), *b = tirL_check_ndarray(L, 2);
  if (a->ndim != b->ndim || memcmp(a->shape, b->shape, sizeof(int64_t) * (size_t)a->ndim) != 0) {
    lua_pushcfunction(L, m_summary);
    lua_pushvalue(L, 1);
    lua_call(L, 1, 1);
    lua_pushcfunction(L, m_summary);
    lua_pushvalue(L, 2);
    lua_call(L, 1, 1);
    return tirL_error(L, TIR_ERR_VALUE, "NDArray:copyfrom", "the shapes differ: copying %s into %s", lua_tostring(L, -1),
                      lua_tostring(L, -2));
  }
  if (tir_nd_copy(a, b)) return tirL_raise_core(L);
  lua_settop(L, 1);
  return 1;
}

static int m_fill_random(lua_State *L) {
  tir_NDArray *a = tirL_check_ndarray(L, 1);
  lua_Integer seed = luaL_optinteger(L, 2, 0);
  double lo, hi;
  tir_nd_default_range(a->dtype, &lo, &hi);
  lo = luaL_optnumber(L, 3, lo);
  hi = luaL_optnumber(L, 4, hi);
  if (tir_nd_fill_random(a, (uint64_t)seed, lo, hi)) return tirL_raise_core(L);
  lua_settop(L, 1);
  return 1;
}

/* The element addressed by arguments first..last: a table {i, j, ...}, the indices as
 * separate integers (one per dimension), or one flat row-major index. */
static int64_t check_flat(lua_State *L, tir_NDArray *a, int first, int last, const char *prim) {
  if (a->dev.type != TIR_DEV_CPU) luaL_error(L, "element access needs a host array (use :to(\"cpu\") first)");
  int64_t flat = 0;
  int n = last - first + 1;
  if (n == 1 && lua_type(L, first) == LUA_TTABLE) {
    n = tirL_table_maxn(L, first);
    if (n != a->ndim) luaL_error(L, "the array has %d dimensions, got %d indices", a->ndim, n);
    for (int i = 1; i <= n; i++) {
      lua_geti(L, first, i);
      if (!lua_isinteger(L, -1)) luaL_error(L, "index %d must be an integer", i);
      int64_t ix = lua_tointeger(L, -1);
      lua_pop(L, 1);
      if (ix < 0 || ix >= a->shape[i - 1])
        tirL_error(L, TIR_ERR_VALUE, prim, "index %d is %lld, outside [0, %lld)", i, (long long)ix, (long long)a->shape[i - 1]);
      flat = flat * a->shape[i - 1] + ix;
    }
  } else if (n == a->ndim && n > 1) {
    for (int i = 0; i < n; i++) {
      if (!lua_isinteger(L, first + i)) luaL_error(L, "index %d must be an integer", i + 1);
      int64_t ix = lua_tointeger(L, first + i);
      if (ix < 0 || ix >= a->shape[i])
        tirL_error(L, TIR_ERR_VALUE, prim, "index %d is %lld, outside [0, %lld)", i + 1, (long long)ix, (long long)a->shape[i]);
      flat = flat * a->shape[i] + ix;
    }
  } else if (n == 1) {
    if (!lua_isinteger(L, first)) luaL_error(L, "the index must be an integer (or a table of indices)");
    flat = lua_tointeger(L, first);
    if (flat < 0 || flat >= tir_nd_numel(a))
      tirL_error(L, TIR_ERR_VALUE, prim, "flat index %lld is outside [0, %lld)", (long long)flat, (long long)tir_nd_numel(a));
  } else {
    luaL_error(L, "the array has %d dimensions: give %d indices, a table of them, or one flat index", a->ndim, a->ndim);
  }
  return flat;
}

static int m_get(lua_State *L) {
  tir_NDArray *a = tirL_check_ndarray(L, 1);
  int64_t i = check_flat(L, a, 2, lua_gettop(L), "NDArray:get");
  if (tir_dtype_is_float(a->dtype)) lua_pushnumber(L, tir_nd_get_f(a, i));
  else if (a->dtype.code == TIR_DT_BOOL) lua_pushboolean(L, (int)tir_nd_get_i(a, i));
  else lua_pushinteger(L, tir_nd_get_i(a, i));
  return 1;
}

/* a:set(index..., value) */
static int m_set(lua_State *L) {
  tir_NDArray *a = tirL_check_ndarray(L, 1);
  int top = lua_gettop(L);
  if (top < 3) return luaL_error(L, "set(index, value): missing value");
  int64_t i = check_flat(L, a, 2, top - 1, "NDArray:set");
  if (tir_dtype_is_float(a->dtype)) {
    if (lua_type(L, top) != LUA_TNUMBER)
      return tirL_error(L, TIR_ERR_TYPE, "NDArray:set", "the value must be a number, got %s", luaL_typename(L, top));
    tir_nd_set_f(a, i, lua_tonumber(L, top));
  } else {
    char why[160];
    int64_t v;
    if (tirL_int_for_dtype(L, top, a->dtype, &v, why, sizeof why))
      return tirL_error(L, TIR_ERR_VALUE, "NDArray:set", "the value is %s", why);
    tir_nd_set_i(a, i, v);
  }
  return 0;
}

/* a:get_bits(index...) -> the element's bits as an integer (as numpy's a.view(uintN)[i]):
 * zero-extended below 64 bits, the 64-bit pattern as a Lua integer for 64-bit dtypes (bool:
 * the byte).  a:set_bits(index..., bits) stores the low bits.  Exact for every value, NaN
 * payloads and -0.0 included (get/set go through Lua numbers). */
static int m_get_bits(lua_State *L) {
  tir_NDArray *a = tirL_check_ndarray(L, 1);
  int64_t i = check_flat(L, a, 2, lua_gettop(L), "NDArray:get_bits");
  int sz = tir_dtype_bytes(tir_dtype_element(a->dtype));
  uint64_t v = 0;
  memcpy(&v, (const char *)a->data + i * sz, (size_t)sz); /* little-endian host */
  lua_pushinteger(L, (lua_Integer)v);
  return 1;
}

static int m_set_bits(lua_State *L) {
  tir_NDArray *a = tirL_check_ndarray(L, 1);
  int top = lua_gettop(L);
  if (top < 3) return luaL_error(L, "set_bits(index, bits): missing bits");
  int64_t i = check_flat(L, a, 2, top - 1, "NDArray:set_bits");
  if (!lua_isinteger(L, top)) return tirL_error(L, TIR_ERR_TYPE, "NDArray:set_bits", "the bits must be an integer, got %s", luaL_typename(L, top));
  uint64_t v = (uint64_t)lua_tointeger(L, top);
  int sz = tir_dtype_bytes(tir_dtype_element(a->dtype));
  memcpy((char *)a->data + i * sz, &v, (size_t)sz);
  return 0;
}

static void push_nested(lua_State *L, tir_NDArray *a, int dim, int64_t *flat) {
  lua_createtable(L, (int)a->shape[dim], 0);
  for (int64_t i = 0; i < a->shape[dim]; i++) {
    if (dim + 1 < a->ndim) push_nested(L, a, dim + 1, flat);
    else if (tir_dtype_is_float(a->dtype)) lua_pushnumber(L, tir_nd_get_f(a, (*flat)++));
    else lua_pushinteger(L, tir_nd_get_i(a, (*flat)++));
    lua_rawseti(L, -2, i + 1);
  }
}

static int m_to_table(lua_State *L) {
  tir_NDArray *a = tirL_check_ndarray(L, 1);
  tir_NDArray *h = a;
  if (a->dev.type != TIR_DEV_CPU && !(h = tir_nd_to(a, (tir_Device){TIR_DEV_CPU, 0}))) return tirL_raise_core(L);
  int64_t flat = 0;
  if (h->ndim == 0) {
    if (tir_dtype_is_float(h->dtype)) lua_pushnumber(L, tir_nd_get_f(h, 0));
    else lua_pushinteger(L, tir_nd_get_i(h, 0));
  } else {
    push_nested(L, h, 0, &flat);
  }
  if (h != a) tir_nd_release(h);
  return 1;
}

static int m_save(lua_State *L) {
  if (tir_nd_save_npy(tirL_check_ndarray(L, 1), luaL_checkstring(L, 2))) return tirL_raise_core(L);
  return 0;
}

/* nd_allclose(actual, desired, rtol, atol) -> ok, stats table */
static int l_allclose(lua_State *L) {
  tir_NDArray *x = tirL_check_ndarray(L, 1), *y = tirL_check_ndarray(L, 2);
  double rtol = luaL_optnumber(L, 3, 1e-7), atol = luaL_optnumber(L, 4, 0);
  if (x->dev.type != TIR_DEV_CPU || y->dev.type != TIR_DEV_CPU) return luaL_error(L, "allclose needs host arrays");
  int64_t n = tir_nd_numel(x);
  if (n != tir_nd_numel(y))
    return luaL_error(L, "allclose: sizes differ (%I vs %I elements)", (lua_Integer)n, (lua_Integer)tir_nd_numel(y));
  double max_abs = 0, max_rel = 0, ref_norm = 0, diff_norm = 0;
  int64_t worst = -1, n_bad = 0, first_bad = -1, n_nan = 0;
  double worst_excess = -1;
  for (int64_t i = 0; i < n; i++) {
    double a = tir_nd_get_f(x, i), b = tir_nd_get_f(y, i);
    double d = fabs(a - b);
    if (a != a || b != b) {
      if (!(a != a && b != b)) {
        n_nan++;
        n_bad++;
        if (first_bad < 0) first_bad = i;
        if (worst < 0 || worst_excess < INFINITY) worst = i, worst_excess = INFINITY;
      }
      continue;
    }
    ref_norm += b * b;
    diff_norm += d * d;
    if (d > max_abs) max_abs = d;
    double rel = b != 0 ? d / fabs(b) : (d > 0 ? INFINITY : 0);
    if (rel > max_rel) max_rel = rel;
    double tol = atol + rtol * fabs(b);
    if (d > tol) {
      n_bad++;
      if (first_bad < 0) first_bad = i;
      if (d - tol > worst_excess) worst_excess = d - tol, worst = i;
    }
  }
  lua_pushboolean(L, n_bad == 0);
  lua_createtable(L, 0, 10);
  lua_pushnumber(L, max_abs);
  lua_setfield(L, -2, "max_abs");
  lua_pushnumber(L, max_rel);
  lua_setfield(L, -2, "max_rel");
  lua_pushnumber(L, ref_norm > 0 ? sqrt(diff_norm / ref_norm) : sqrt(diff_norm));
  lua_setfield(L, -2, "rel_l2");
  lua_pushinteger(L, n_bad);
  lua_setfield(L, -2, "n_bad");
  lua_pushinteger(L, n_nan);
  lua_setfield(L, -2, "n_nan");
  lua_pushinteger(L, n);
  lua_setfield(L, -2, "n");
  if (worst >= 0) {
    lua_pushinteger(L, worst);
    lua_setfield(L, -2, "worst");
    lua_pushnumber(L, tir_nd_get_f(x, worst));
    lua_setfield(L, -2, "worst_actual");
    lua_pushnumber(L, tir_nd_get_f(y, worst));
    lua_setfield(L, -2, "worst_desired");
  }
  return 2;
}

static int l_cuda_available(lua_State *L) {
  char why[256] = "";
  int ok = tir_cuda_available(why, sizeof why);
  lua_pushboolean(L, ok);
  if (ok) return 1;
  lua_pushstring(L, why);
  return 2;
}

static int l_cuda_device_count(lua_State *L) {
  lua_pushinteger(L, tir_cuda_device_count());
  return 1;
}

static int l_cuda_device_info(lua_State *L) {
  tir_DeviceInfo info;
  if (tir_cuda_device_info((int)luaL_optinteger(L, 1, 0), &info)) return tirL_raise_core(L);
  lua_createtable(L, 0, 8);
  lua_pushstring(L, info.name);
  lua_setfield(L, -2, "name");
  lua_pushfstring(L, "sm_%d%d", info.cc_major, info.cc_minor);
  lua_setfield(L, -2, "arch");
  lua_pushinteger(L, info.sm_count);
  lua_setfield(L, -2, "sm_count");
  lua_pushinteger(L, info.max_threads_per_block);
  lua_setfield(L, -2, "max_threads_per_block");
  lua_pushinteger(L, info.smem_per_block_optin);
  lua_setfield(L, -2, "smem_per_block_optin");
  lua_pushinteger(L, info.l2_bytes);
  lua_setfield(L, -2, "l2_bytes");
  lua_pushinteger(L, info.clock_khz);
  lua_setfield(L, -2, "clock_khz");
  return 1;
}

static int l_nvrtc_available(lua_State *L) {
  char why[512] = "";
  int ok = tir_nvrtc_available(why, sizeof why);
  lua_pushboolean(L, ok);
  if (ok) {
    int a, b;
    if (tir_nvrtc_version(&a, &b) == 0) {
      lua_pushfstring(L, "%d.%d", a, b);
      return 2;
    }
    return 1;
  }
  lua_pushstring(L, why);
  return 2;
}

static int l_ref_gemm(lua_State *L) {
  tir_NDArray *a = tirL_check_ndarray(L, 1), *b = tirL_check_ndarray(L, 2), *c = tirL_check_ndarray(L, 3);
  if (tir_ref_gemm_host(a, b, c, lua_toboolean(L, 4), lua_toboolean(L, 5))) return tirL_raise_core(L);
  return 0;
}

static int l_openblas_available(lua_State *L) {
  lua_pushboolean(L, tir_openblas_available());
  return 1;
}

static int l_cublas_available(lua_State *L) {
  char why[256] = "";
  int ok = tir_cublas_available(why, sizeof why);
  lua_pushboolean(L, ok);
  if (ok) return 1;
  lua_pushstring(L, why);
  return 2;
}

static int l_cublas_gemm(lua_State *L) {
  tir_NDArray *a = tirL_check_ndarray(L, 1), *b = tirL_check_ndarray(L, 2), *c = tirL_check_ndarray(L, 3);
  if (tir_cublas_gemm(a, b, c, lua_toboolean(L, 4), lua_toboolean(L, 5), luaL_optnumber(L, 6, 1), luaL_optnumber(L, 7, 0)))
    return tirL_raise_core(L);
  return 0;
}

static int l_cublaslt_available(lua_State *L) {
  char why[256] = "";
  int ok = tir_cublaslt_available(why, sizeof why);
  lua_pushboolean(L, ok);
  if (ok) return 1;
  lua_pushstring(L, why);
  return 2;
}

/* cublaslt_gemm_int8(A [M, K] int8, B [N, K] int8, C [M, N] int32) */
static int l_cublaslt_gemm_int8(lua_State *L) {
  tir_NDArray *a = tirL_check_ndarray(L, 1), *b = tirL_check_ndarray(L, 2), *c = tirL_check_ndarray(L, 3);
  if (tir_cublaslt_gemm_int8(a, b, c)) return tirL_raise_core(L);
  return 0;
}

/* cublaslt_gemm_epilogue(A [M, K], B [N, K], bias [N] | nil, D [M, N], relu): fp16 or bf16 (tir_cublaslt_gemm_epilogue) */
static int l_cublaslt_gemm_epilogue(lua_State *L) {
  tir_NDArray *a = tirL_check_ndarray(L, 1), *b = tirL_check_ndarray(L, 2);
  tir_NDArray *bias = lua_isnoneornil(L, 3) ? NULL : tirL_check_ndarray(L, 3), *d = tirL_check_ndarray(L, 4);
  if (tir_cublaslt_gemm_epilogue(a, b, bias, d, lua_toboolean(L, 5))) return tirL_raise_core(L);
  return 0;
}

static int l_cuda_sync(lua_State *L) {
  if (tir_cuda_synchronize((int)luaL_optinteger(L, 1, 0))) return tirL_raise_core(L);
  return 0;
}

/* Times fn() (a Lua function launching GPU work) with CUDA events: median seconds. */
typedef struct {
  lua_State *L;
  int fn_idx;
} TimeCtx;

static int call_lua(void *p) {
  TimeCtx *c = p;
  lua_pushvalue(c->L, c->fn_idx);
  if (lua_pcall(c->L, 0, 0, 0) != LUA_OK) return -1; /* message stays on the stack */
  return 0;
}

static int l_cuda_time(lua_State *L) {
  luaL_checktype(L, 1, LUA_TFUNCTION);
  int dev = (int)luaL_optinteger(L, 2, 0);
  int warmup = (int)luaL_optinteger(L, 3, 3), number = (int)luaL_optinteger(L, 4, 10), repeat = (int)luaL_optinteger(L, 5, 5);
  if (repeat < 1 || repeat > 10000 || number < 1 || warmup < 0) return luaL_error(L, "cuda_time: bad counts");
  double med = 0;
  double *samples = lua_newuserdatauv(L, sizeof(double) * (size_t)repeat, 0);
  int top = lua_gettop(L);
  TimeCtx c = {L, 1};
  if (tir_cuda_time(dev, call_lua, &c, warmup, number, repeat, &med, samples)) {
    if (lua_gettop(L) > top) return lua_error(L);
    return tirL_raise_core(L);
  }
  lua_pushnumber(L, med);
  lua_createtable(L, repeat, 0);
  for (int i = 0; i < repeat; i++) {
    lua_pushnumber(L, samples[i]);
    lua_rawseti(L, -2, i + 1);
  }
  return 2;
}

void tirL_open_runtime(lua_State *L) {
  static const luaL_Reg methods[] = {{"shape", m_shape},     {"reshape", m_reshape}, {"dtype", m_dtype},     {"device", m_device},
                                     {"numel", m_numel},     {"nbytes", m_nbytes},   {"to", m_to},
                                     {"copyfrom", m_copyfrom}, {"fill_random", m_fill_random}, {"get", m_get},
                                     {"set", m_set},         {"get_bits", m_get_bits}, {"set_bits", m_set_bits}, {"to_table", m_to_table}, {"save", m_save},
                                     {"to_dlpack", m_to_dlpack}, {NULL, NULL}};
  luaL_newmetatable(L, DLPACK_MT);
  lua_pushcfunction(L, dl_gc);
  lua_setfield(L, -2, "__gc");
  lua_pushcfunction(L, dl_tostring);
  lua_setfield(L, -2, "__tostring");
  lua_newtable(L);
  lua_pushcfunction(L, dl_release);
  lua_setfield(L, -2, "release");
  lua_pushcfunction(L, dl_versioned);
  lua_setfield(L, -2, "versioned");
  lua_setfield(L, -2, "__index");
  lua_pop(L, 1);
  luaL_newmetatable(L, MT);
  lua_pushcfunction(L, m_gc);
  lua_setfield(L, -2, "__gc");
  lua_pushcfunction(L, m_tostring);
  lua_setfield(L, -2, "__tostring");
  lua_newtable(L);
  luaL_setfuncs(L, methods, 0);
  lua_setfield(L, -2, "__index");
  lua_pop(L, 1);
  static const luaL_Reg fns[] = {{"nd_empty", l_empty},
                                 {"nd_array", l_array},
                                 {"nd_load", l_load},
                                 {"nd_from_dlpack", l_from_dlpack},
                                 {"nd_allclose", l_allclose},
                                 {"ndarray_methods", NULL},
                                 {"cuda_available", l_cuda_available},
                                 {"cuda_device_count", l_cuda_device_count},
                                 {"cuda_device_info", l_cuda_device_info},
                                 {"cuda_sync", l_cuda_sync},
                                 {"cuda_time", l_cuda_time},
                                 {"nvrtc_available", l_nvrtc_available},
                                 {"ref_gemm", l_ref_gemm},
                                 {"openblas_available", l_openblas_available},
                                 {"cublas_available", l_cublas_available},
                                 {"cublas_gemm", l_cublas_gemm},
                                 {"cublaslt_available", l_cublaslt_available},
                                 {"cublaslt_gemm_int8", l_cublaslt_gemm_int8},
                                 {"cublaslt_gemm_epilogue", l_cublaslt_gemm_epilogue},
                                 {NULL, NULL}};
  for (const luaL_Reg *r = fns; r->name; r++) {
    if (!r->func) {
      luaL_getmetatable(L, MT);
      lua_getfield(L, -1, "__index");
      lua_setfield(L, -3, r->name);
      lua_pop(L, 1);
      continue;
    }
    lua_pushcfunction(L, r->func);
    lua_setfield(L, -2, r->name);
  }
}
