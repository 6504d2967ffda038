/* l_node.c -- IR nodes as Lua values: boxes, metatables from the node list, field
 * access, arithmetic operators that build IR, buffer indexing, errors. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "l_tir.h"
#include "tir/arith.h"
#include "tir/strbuf.h"
#include "tir/swizzle.h"

typedef struct {
  tir_Node *node;
} Box;

static const char CACHE_KEY[] = "tir.node_cache";     /* weak-valued: pointer -> box */
static const char MTSET_KEY[] = "tir.node_metatables"; /* metatable -> kind */
static const char STORE_HOOK_KEY[] = "tir.store_hook";

static char mt_names[TIR_NUM_KINDS][48];

static const char *mt_name(int kind) {
  if (!mt_names[kind][0]) snprintf(mt_names[kind], sizeof mt_names[kind], "tir.%s", tir_kind_name(kind));
  return mt_names[kind];
}

void tirL_push_node(lua_State *L, tir_Node *n) {
  if (!n) {
    lua_pushnil(L);
    return;
  }
  if (n->flags > TIR_MAX_EXPR_DEPTH && tir_is_expr(n)) {
    tir_release(n);
    tirL_error(L, TIR_ERR_VALUE, "expression",
               "expression nests deeper than %d operations; build it as a reduction (te.sum) or in smaller pieces",
               TIR_MAX_EXPR_DEPTH);
  }
  lua_getfield(L, LUA_REGISTRYINDEX, CACHE_KEY);
  lua_rawgetp(L, -1, n);
  if (!lua_isnil(L, -1)) {
    lua_remove(L, -2);
    tir_release(n); /* the cached box already owns a reference */
    return;
  }
  lua_pop(L, 1);
  Box *b = lua_newuserdatauv(L, sizeof(Box), 0);
  b->node = NULL;
  luaL_setmetatable(L, mt_name(n->kind));
  b->node = n;
  lua_pushvalue(L, -1);
  lua_rawsetp(L, -3, n);
  lua_remove(L, -2);
}

void tirL_push_borrowed(lua_State *L, const tir_Node *n) { tirL_push_node(L, tir_retain(n)); }

tir_Node *tirL_to_node(lua_State *L, int idx) {
  if (lua_type(L, idx) != LUA_TUSERDATA || !lua_getmetatable(L, idx)) return NULL;
  lua_getfield(L, LUA_REGISTRYINDEX, MTSET_KEY);
  lua_pushvalue(L, -2);
  lua_rawget(L, -2);
  int isnode = !lua_isnil(L, -1);
  lua_pop(L, 3);
  if (!isnode) return NULL;
  Box *b = lua_touserdata(L, idx);
  return b->node;
}

static const char *describe(lua_State *L, int idx) {
  tir_Node *n = tirL_to_node(L, idx);
  if (n) return mt_name(n->kind);
  return luaL_typename(L, idx);
}

tir_Node *tirL_check_node(lua_State *L, int idx, int kind, const char *what) {
  tir_Node *n = tirL_to_node(L, idx);
  if (!n || (kind >= 0 && n->kind != kind)) {
    const char *msg = lua_pushfstring(L, "%s expected, got %s", what ? what : (kind >= 0 ? mt_name(kind) : "tir node"),
                                      describe(L, idx));
    luaL_argerror(L, idx, msg);
  }
  return n;
}

tir_Node *tirL_check_expr_node(lua_State *L, int idx) {
  tir_Node *n = tirL_to_node(L, idx);
  if (!n || !tir_is_expr(n)) luaL_argerror(L, idx, lua_pushfstring(L, "expression expected, got %s", describe(L, idx)));
  return n;
}

tir_Node *tirL_check_stmt(lua_State *L, int idx) {
  tir_Node *n = tirL_to_node(L, idx);
  if (!n || !tir_is_stmt(n)) luaL_argerror(L, idx, lua_pushfstring(L, "statement expected, got %s", describe(L, idx)));
  return n;
}

tir_Node *tirL_to_expr(lua_State *L, int idx, tir_DType hint, int have_hint) {
  switch (lua_type(L, idx)) {
    case LUA_TNUMBER:
      if (lua_isinteger(L, idx)) {
        lua_Integer v = lua_tointeger(L, idx);
        if (have_hint && tir_dtype_is_float(hint)) return tir_make_const(tir_dtype_element(hint), (double)v);
        if (have_hint && tir_dtype_is_int(hint)) {
          tir_DType e = tir_dtype_element(hint);
          int fits = e.bits >= 64 ? (e.code == TIR_DT_INT || v >= 0)
                                  : (e.code == TIR_DT_INT ? (v >= -((int64_t)1 << (e.bits - 1)) && v < ((int64_t)1 << (e.bits - 1)))
                                                          : (v >= 0 && v < ((int64_t)1 << e.bits)));
          if (!fits) {
            char s[32];
            tir_DType wide = TIR_INT64;
            if (e.bits < 64 && v <= INT32_MAX && v >= INT32_MIN && e.code == TIR_DT_INT) wide = TIR_INT32;
            tirL_error(L, TIR_ERR_TYPE, "expression",
                       "the constant %lld does not fit %s (the type of the other operand); cast that operand first, "
                       "e.g. tir.cast(\"%s\", x)",
                       (long long)v, tir_dtype_str(e, s), wide.bits == 64 ? "int64" : "int32");
          }
          return tir_int_imm(e, v);
        }
        if (v > INT32_MAX || v < INT32_MIN) return tir_int_imm(TIR_INT64, v);
        return tir_i32(v);
      } else {
        double v = lua_tonumber(L, idx);
        if (have_hint && tir_dtype_is_float(hint)) return tir_float_imm(tir_dtype_element(hint), v);
        return tir_float_imm(TIR_FLOAT32, v);
      }
    case LUA_TBOOLEAN: return tir_bool_imm(lua_toboolean(L, idx));
    default: {
      tir_Node *n = tirL_to_node(L, idx);
      if (n && tir_is_expr(n)) return tir_retain(n);
      /* an IterVar (te.reduce_axis) stands for its variable, as in TVM's te */
      if (n && n->kind == TIR_IterVar) return tir_retain(((tir_IterVar *)n)->var);
      luaL_argerror(L, idx, lua_pushfstring(L, "expression or number expected, got %s", describe(L, idx)));
      return NULL;
    }
  }
}

tir_DType tirL_check_dtype(lua_State *L, int idx) {
  const char *s = luaL_checkstring(L, idx);
  tir_DType t;
  if (!tir_dtype_parse(s, &t))
    luaL_argerror(L, idx, lua_pushfstring(L, "unknown dtype '%s' (expected e.g. float32, float16, int8, int32x4, bool)", s));
  return t;
}

int64_t tirL_check_swizzle(lua_State *L, int idx, const char *primitive) {
  idx = lua_absindex(L, idx);
  int64_t sw = 0;
  if (lua_type(L, idx) == LUA_TSTRING) {
    if (tir_swizzle_parse(lua_tostring(L, idx), &sw))
      tirL_error(L, TIR_ERR_VALUE, primitive, "unknown swizzle mode \"%s\": expected \"none\", \"32B\", \"64B\", \"128B\" (the PTX "
                 "ISA's shared-memory swizzling modes) or {B, M, S} (CuTe's Swizzle<B, M, S> on byte offsets)", lua_tostring(L, idx));
    return sw;
  }
  if (lua_type(L, idx) != LUA_TTABLE)
    tirL_error(L, TIR_ERR_TYPE, primitive, "swizzle must be \"none\", \"32B\", \"64B\", \"128B\" or {B, M, S}, got a %s",
               luaL_typename(L, idx));
  int v[3];
  if (tirL_table_maxn(L, idx) != 3 || lua_rawlen(L, idx) != 3)
    tirL_error(L, TIR_ERR_VALUE, primitive, "a swizzle table must be {B, M, S} (three integers)");
  for (int i = 0; i < 3; i++) {
    lua_rawgeti(L, idx, i + 1);
    if (!lua_isinteger(L, -1) || lua_tointeger(L, -1) < 0 || lua_tointeger(L, -1) > 30)
      tirL_error(L, TIR_ERR_VALUE, primitive, "swizzle {B, M, S}: entry %d must be an integer in [0, 30]", i + 1);
    v[i] = (int)lua_tointeger(L, -1);
    lua_pop(L, 1);
  }
  sw = tir_swizzle_pack(v[0], v[1], v[2]);
  if (!tir_swizzle_valid(sw))
    tirL_error(L, TIR_ERR_VALUE, primitive, "swizzle {%d, %d, %d} is not a swizzle: need 1 <= B <= 8, M <= 12, B <= S <= 16 and "
               "B + M + S <= 30 (XOR the B bits from bit M + S into bits M..M+B-1)", v[0], v[1], v[2]);
  return sw;
}

int tirL_table_maxn(lua_State *L, int idx) {
  idx = lua_absindex(L, idx);
  lua_Integer n = (lua_Integer)lua_rawlen(L, idx);
  lua_pushnil(L);
  while (lua_next(L, idx)) {
    lua_pop(L, 1);
    if (lua_isinteger(L, -1)) {
      lua_Integer k = lua_tointeger(L, -1);
      if (k > n) n = k;
    }
  }
  return (int)n;
}

tir_Array *tirL_check_expr_list(lua_State *L, int idx, const char *what) {
  idx = lua_absindex(L, idx);
  if (lua_type(L, idx) != LUA_TTABLE) {
    tir_Node *n = tirL_to_node(L, idx);
    if (n && n->kind == TIR_Array) return (tir_Array *)tir_retain(n);
    luaL_argerror(L, idx, lua_pushfstring(L, "%s: table expected, got %s", what, describe(L, idx)));
  }
  int n = tirL_table_maxn(L, idx);
  /* convert first (may raise), then build */
  for (int i = 1; i <= n; i++) {
    lua_geti(L, idx, i);
    int t = lua_type(L, -1);
    tir_Node *nd = tirL_to_node(L, -1);
    if (t != LUA_TNUMBER && t != LUA_TBOOLEAN && !(nd && (tir_is_expr(nd) || nd->kind == TIR_IterVar))) {
      luaL_error(L, "%s: element %d must be a number or expression, got %s", what, i, describe(L, -1));
    }
    lua_pop(L, 1);
  }
  tir_Array *a = tir_array_new(n);
  for (int i = 1; i <= n; i++) {
    lua_geti(L, idx, i);
    a->items[i - 1] = tirL_to_expr(L, -1, TIR_INT32, 0);
    lua_pop(L, 1);
  }
  return a;
}

/* ---- errors ---- */
/* "file:line: " of the innermost caller outside tirlua's own Lua library (lib/tir),
 * so an error points at the user's script rather than at the wrapper that raised it. */
static int in_tir_lib(const char *src, size_t n) {
  if (n <= 4 || strcmp(src + n - 4, ".lua") != 0) return 0;
  /* the last "tir/" directory of the path: lib/tir/X.lua or lib/tir/<dir>/X.lua */
  const char *lib = NULL;
  for (const char *p = strstr(src, "tir/"); p; p = strstr(p + 1, "tir/"))
    if (p == src || p[-1] == '/' || p[-1] == '.') lib = p + 4;
  if (!lib) return 0;
  const char *slash = strchr(lib, '/');
  if (!slash) return 1;
  return !strchr(slash + 1, '/'); /* lib/tir/intrin, schedules, ops, ... */
}

static void push_user_where(lua_State *L) {
  lua_Debug ar;
  for (int level = 1; lua_getstack(L, level, &ar); level++) {
    if (!lua_getinfo(L, "Sl", &ar) || ar.currentline <= 0) continue;
    const char *src = ar.source && ar.source[0] == '@' ? ar.source + 1 : ar.short_src; /* short_src may be cut */
    if (in_tir_lib(src, strlen(src))) continue;
    src = ar.short_src;
    lua_pushfstring(L, "%s:%d: ", src, ar.currentline);
    return;
  }
  lua_pushliteral(L, "");
}

static void push_error_object(lua_State *L, tir_ErrorKind kind, const char *primitive, const char *message,
                              const char *detail, const char *rendered) {
  lua_createtable(L, 0, 6);
  lua_pushstring(L, tir_error_kind_name(kind));
  lua_setfield(L, -2, "kind");
  lua_pushstring(L, primitive ? primitive : "");
  lua_setfield(L, -2, "primitive");
  lua_pushstring(L, message ? message : "");
  lua_setfield(L, -2, "message");
  if (detail) {
    lua_pushstring(L, detail);
    lua_setfield(L, -2, "detail");
  }
  push_user_where(L);
  lua_setfield(L, -2, "where");
  lua_pushstring(L, rendered);
  lua_setfield(L, -2, "text");
  luaL_setmetatable(L, TIRL_ERROR_MT);
}

int tirL_raise_core(lua_State *L) {
  tir_Error *e = tir_error_get();
  if (e->kind == TIR_ERR_NONE) tir_error_set(TIR_ERR_INTERNAL, "", "operation failed without an error record");
  char *text = tir_error_render(e);
  /* copy everything to Lua before clearing: lua_error does not return */
  push_error_object(L, e->kind, e->primitive, e->message, e->detail, text);
  free(text);
  tir_error_clear();
  return lua_error(L);
}

int tirL_error(lua_State *L, tir_ErrorKind kind, const char *primitive, const char *fmt, ...) {
  tir_StrBuf sb;
  tir_sb_init(&sb);
  va_list ap;
  va_start(ap, fmt);
  tir_sb_vprintf(&sb, fmt, ap);
  va_end(ap);
  tir_error_set(kind, primitive, "%s", sb.data ? sb.data : "");
  tir_sb_free(&sb);
  return tirL_raise_core(L);
}

static int error_tostring(lua_State *L) {
  lua_getfield(L, 1, "where");
  lua_getfield(L, 1, "text");
  lua_concat(L, 2);
  return 1;
}

/* ---- metamethods ---- */
static int node_gc(lua_State *L) {
  Box *b = lua_touserdata(L, 1);
  if (b && b->node) {
    tir_release(b->node);
    b->node = NULL;
  }
  return 0;
}

static int node_tostring(lua_State *L) {
  tir_Node *n = tirL_check_node(L, 1, -1, NULL);
  char *s = tir_print(n);
  lua_pushstring(L, s);
  free(s);
  return 1;
}

static tir_Node *buffer_index(lua_State *L, tir_Buffer *buf, int key, int allow_region);

static void push_field(lua_State *L, tir_Node *n, const tir_FieldInfo *f) {
  char *p = (char *)n + f->offset;
  switch (f->type) {
    case TIR_FT_NODE: tirL_push_borrowed(L, *(tir_Node **)p); break;
    case TIR_FT_INT:
    case TIR_FT_UID: lua_pushinteger(L, (lua_Integer) * (int64_t *)p); break;
    case TIR_FT_FLOAT: lua_pushnumber(L, *(double *)p); break;
    case TIR_FT_STR: lua_pushstring(L, *(char **)p); break;
  }
}

static int node_index(lua_State *L) {
  tir_Node *n = tirL_check_node(L, 1, -1, NULL);
  int kt = lua_type(L, 2);
  if (n->kind == TIR_Array && kt == LUA_TNUMBER) {
    lua_Integer i = lua_tointeger(L, 2);
    tir_Array *a = (tir_Array *)n;
    if (i >= 1 && i <= a->size) tirL_push_borrowed(L, a->items[i - 1]);
    else lua_pushnil(L);
    return 1;
  }
  if (n->kind == TIR_Buffer && kt != LUA_TSTRING) {
    tirL_push_node(L, buffer_index(L, (tir_Buffer *)n, 2, 1));
    return 1;
  }
  if (kt != LUA_TSTRING) return 0;
  const char *k = lua_tostring(L, 2);
  if (strcmp(k, "kind") == 0) {
    lua_pushstring(L, tir_kind_name(n->kind));
    return 1;
  }
  if (strcmp(k, "dtype") == 0) {
    char s[32];
    lua_pushstring(L, tir_dtype_str(n->dtype, s));
    return 1;
  }
  /* a For's own kind field is shadowed by the node kind: loop_kind names it */
  if (n->kind == TIR_For && strcmp(k, "loop_kind") == 0) {
    static const char *names[] = {"serial", "parallel", "vectorized", "unrolled", "thread_binding"};
    int64_t lk = ((const tir_For *)n)->kind;
    lua_pushstring(L, lk >= 0 && lk < 5 ? names[lk] : "unknown");
    return 1;
  }
  if (n->kind != TIR_Array) {
    const tir_KindInfo *ki = tir_kind_info(n->kind);
    for (int i = 0; i < ki->n_fields; i++)
      if (strcmp(ki->fields[i].name, k) == 0) {
        push_field(L, n, &ki->fields[i]);
        return 1;
      }
  }
  /* methods: per-kind table, then the family table, then common */
  lua_getmetatable(L, 1);
  lua_getfield(L, -1, "__methods");
  lua_getfield(L, -1, k);
  if (!lua_isnil(L, -1)) return 1;
  lua_pop(L, 3);
  lua_getfield(L, LUA_REGISTRYINDEX, "tir.methods.common");
  lua_getfield(L, -1, k);
  return 1;
}

static int node_newindex(lua_State *L) {
  tir_Node *n = tirL_check_node(L, 1, -1, NULL);
  if (n->kind == TIR_Buffer && lua_type(L, 2) != LUA_TSTRING) {
    lua_getfield(L, LUA_REGISTRYINDEX, STORE_HOOK_KEY);
    if (lua_isnil(L, -1))
      return luaL_error(L, "buffer store %s[...] = value is only valid inside a T script function", ((tir_Buffer *)n)->name);
    lua_pushvalue(L, 1);
    lua_pushvalue(L, 2);
    lua_pushvalue(L, 3);
    lua_call(L, 3, 0);
    return 0;
  }
  return luaL_error(L, "IR nodes are immutable (cannot set '%s' on %s); build a new node instead",
                    lua_type(L, 2) == LUA_TSTRING ? lua_tostring(L, 2) : "?", mt_name(n->kind));
}

static int node_len(lua_State *L) {
  tir_Node *n = tirL_check_node(L, 1, -1, NULL);
  if (n->kind == TIR_Array) lua_pushinteger(L, ((tir_Array *)n)->size);
  else if (n->kind == TIR_Buffer) lua_pushinteger(L, ((tir_Buffer *)n)->shape->size);
  else return luaL_error(L, "attempt to get length of %s", mt_name(n->kind));
  return 1;
}

/* Reads the index/slice list of A[{...}] at stack index `key`.  Slices are {lo, hi}. */
static tir_Node *buffer_index(lua_State *L, tir_Buffer *buf, int key, int allow_region) {
  key = lua_absindex(L, key);
  int nidx;
  int is_table = lua_type(L, key) == LUA_TTABLE;
  nidx = is_table ? tirL_table_maxn(L, key) : 1;
  int any_slice = 0;
  if (is_table) {
    for (int i = 1; i <= nidx; i++) {
      lua_geti(L, key, i);
      if (lua_type(L, -1) == LUA_TTABLE) any_slice = 1;
      else if (lua_isnil(L, -1)) luaL_error(L, "%s[...]: index %d is nil", buf->name, i);
      else {
        tir_Node *e = tirL_to_expr(L, -1, TIR_INT32, 0); /* type check before building */
        int ok = tir_dtype_is_int(e->dtype);
        tir_release(e);
        if (!ok) luaL_error(L, "%s[...]: index %d must be an integer expression", buf->name, i);
      }
      lua_pop(L, 1);
    }
  }
  if (nidx != buf->shape->size && !(buf->shape->size == 1 && nidx == 1))
    luaL_error(L, "%s has %d dimensions but was indexed with %d indices", buf->name, (int)buf->shape->size, nidx);
  if (!any_slice) {
    tir_Array *idx = tir_array_new(nidx);
    if (is_table) {
      for (int i = 1; i <= nidx; i++) {
        lua_geti(L, key, i);
        idx->items[i - 1] = tirL_to_expr(L, -1, TIR_INT32, 0);
        lua_pop(L, 1);
      }
    } else {
      idx->items[0] = tirL_to_expr(L, key, TIR_INT32, 0);
      if (!tir_dtype_is_int(idx->items[0]->dtype)) {
        tir_release(idx);
        luaL_error(L, "%s[...]: the index must be an integer expression", buf->name);
      }
    }
    return tir_buffer_load((tir_Buffer *)tir_retain(buf), idx);
  }
  if (!allow_region) luaL_error(L, "%s[...]: slices are not allowed here", buf->name);
  /* region: collect lo/hi pairs first (conversion may raise), then build */
  int top = lua_gettop(L);
  for (int i = 1; i <= nidx; i++) {
    lua_geti(L, key, i);
    if (lua_type(L, -1) == LUA_TTABLE) {
      lua_geti(L, -1, 1);
      lua_geti(L, -2, 2);
      if (lua_isnil(L, -1) || lua_isnil(L, -2)) luaL_error(L, "%s[...]: slice %d must be {start, stop}", buf->name, i);
      tir_release(tirL_to_expr(L, -2, TIR_INT32, 0));
      tir_release(tirL_to_expr(L, -1, TIR_INT32, 0));
      lua_pop(L, 2);
    }
    lua_pop(L, 1);
  }
  tir_Array *region = tir_array_new(nidx);
  for (int i = 1; i <= nidx; i++) {
    lua_geti(L, key, i);
    if (lua_type(L, -1) == LUA_TTABLE) {
      lua_geti(L, -1, 1);
      lua_geti(L, -2, 2);
      tir_Node *lo = tirL_to_expr(L, -2, TIR_INT32, 0);
      tir_Node *hi = tirL_to_expr(L, -1, TIR_INT32, 0);
      lua_pop(L, 2);
      tir_Node *diff = tir_sub(hi, R(lo)); /* sequenced: tir_sub steals its operands */
      tir_Node *ext = tir_simplify(NULL, diff); /* {v, v + 16} has extent 16 */
      tir_release(diff);
      region->items[i - 1] = &tir_range(lo, ext)->hdr;
    } else {
      tir_Node *e = tirL_to_expr(L, -1, TIR_INT32, 0);
      region->items[i - 1] = &tir_range(e, tir_int_imm(e->dtype, 1))->hdr;
    }
    lua_pop(L, 1);
  }
  lua_settop(L, top);
  return &tir_buffer_region((tir_Buffer *)tir_retain(buf), region)->hdr;
}

static int buffer_call(lua_State *L) {
  tir_Buffer *buf = (tir_Buffer *)tirL_check_node(L, 1, TIR_Buffer, NULL);
  int n = lua_gettop(L) - 1;
  lua_createtable(L, n, 0);
  for (int i = 1; i <= n; i++) {
    lua_pushvalue(L, i + 1);
    lua_rawseti(L, -2, i);
  }
  tirL_push_node(L, buffer_index(L, buf, -1, 0));
  return 1;
}

/* Arithmetic: a node on either side; Lua numbers adopt the node's dtype. */
static int arith(lua_State *L, int kind) {
  tir_Node *na = tirL_to_node(L, 1), *nb = tirL_to_node(L, 2);
  if (na && na->kind == TIR_IterVar) na = &((tir_IterVar *)na)->var->hdr;
  if (nb && nb->kind == TIR_IterVar) nb = &((tir_IterVar *)nb)->var->hdr;
  tir_DType hint = na && tir_is_expr(na) ? na->dtype : nb && tir_is_expr(nb) ? nb->dtype : TIR_INT32;
  tir_Node *a = tirL_to_expr(L, 1, hint, 1);
  tir_Node *b;
  /* conversion of the second operand may raise: keep `a` safe in a box first */
  tirL_push_node(L, a);
  b = tirL_to_expr(L, 2, hint, 1);
  tir_Node *r = tir_binary(kind, tir_retain(a), b);
  if (!r) return tirL_raise_core(L);
  tirL_push_node(L, r);
  return 1;
}

static int op_add(lua_State *L) { return arith(L, TIR_Add); }
static int op_sub(lua_State *L) { return arith(L, TIR_Sub); }
static int op_mul(lua_State *L) { return arith(L, TIR_Mul); }
static int op_div(lua_State *L) { return arith(L, TIR_Div); }
static int op_idiv(lua_State *L) { return arith(L, TIR_FloorDiv); }
static int op_mod(lua_State *L) { return arith(L, TIR_FloorMod); }
static int op_unm(lua_State *L) {
  tir_Node *a = tirL_check_expr_node(L, 1);
  tir_Node *r = tir_neg(tir_retain(a));
  if (!r) return tirL_raise_core(L);
  tirL_push_node(L, r);
  return 1;
}
/* Bitwise operators (Lua 5.4 ~ & | << >>) build the builtin calls bitwise_xor etc. of TVM's
 * tir.bitwise_* ops; both sides must be integers (XOR swizzles are written `j ~ (i % 8)`). */
static int bitwise(lua_State *L, const char *op) {
  tir_Node *na = tirL_to_node(L, 1), *nb = tirL_to_node(L, 2);
  if (na && na->kind == TIR_IterVar) na = &((tir_IterVar *)na)->var->hdr;
  if (nb && nb->kind == TIR_IterVar) nb = &((tir_IterVar *)nb)->var->hdr;
  tir_DType hint = na && tir_is_expr(na) ? na->dtype : nb && tir_is_expr(nb) ? nb->dtype : TIR_INT32;
  tir_Node *a = tirL_to_expr(L, 1, hint, 1);
  tirL_push_node(L, a);
  tir_Node *b = tirL_to_expr(L, 2, hint, 1);
  tirL_push_node(L, b);
  if (!tir_dtype_is_int(a->dtype) || !tir_dtype_is_int(b->dtype) || a->dtype.lanes != 1 || b->dtype.lanes != 1)
    return luaL_error(L, "%s needs integer operands", op);
  tir_Node *r = tir_call(a->dtype, op, tir_array_of(2, tir_retain(a), tir_retain(b)));
  if (!r) return tirL_raise_core(L);
  tirL_push_node(L, r);
  return 1;
}
static int op_bxor(lua_State *L) { return bitwise(L, "bitwise_xor"); }
static int op_band(lua_State *L) { return bitwise(L, "bitwise_and"); }
static int op_bor(lua_State *L) { return bitwise(L, "bitwise_or"); }
static int op_shl(lua_State *L) { return bitwise(L, "shift_left"); }
static int op_shr(lua_State *L) { return bitwise(L, "shift_right"); }

static int op_compare(lua_State *L) {
  return luaL_error(L,
                    "comparison operators (<, <=, >, >=) cannot build IR in Lua 5.4 (it turns their results "
                    "into booleans): use tir.lt/le/gt/ge(a, b) (T.lt ... inside a T script)");
}

static const luaL_Reg expr_meta[] = {{"__add", op_add}, {"__sub", op_sub},   {"__mul", op_mul},
                                     {"__div", op_div}, {"__idiv", op_idiv}, {"__mod", op_mod},
                                     {"__unm", op_unm}, {"__lt", op_compare}, {"__le", op_compare},
                                     {"__bxor", op_bxor}, {"__band", op_band}, {"__bor", op_bor},
                                     {"__shl", op_shl}, {"__shr", op_shr}, {NULL, NULL}};

/* ---- common methods ---- */
static int m_same_as(lua_State *L) {
  lua_pushboolean(L, tirL_to_node(L, 1) != NULL && tirL_to_node(L, 1) == tirL_to_node(L, 2));
  return 1;
}

static int m_script(lua_State *L) { return node_tostring(L); }

static int m_structural_hash(lua_State *L) {
  tir_Node *n = tirL_check_node(L, 1, -1, NULL);
  lua_pushinteger(L, (lua_Integer)tir_structural_hash(n));
  return 1;
}

static int m_show(lua_State *L) {
  tir_Node *n = tirL_check_node(L, 1, -1, NULL);
  char *s = tir_print(n);
  lua_getglobal(L, "print");
  lua_pushstring(L, s);
  free(s);
  lua_call(L, 1, 0);
  return 0;
}

/* Array iteration helper: arr:list() returns a plain Lua table. */
static int m_list(lua_State *L) {
  tir_Array *a = (tir_Array *)tirL_check_node(L, 1, TIR_Array, NULL);
  lua_createtable(L, a->size, 0);
  for (int i = 0; i < a->size; i++) {
    tirL_push_borrowed(L, a->items[i]);
    lua_rawseti(L, -2, i + 1);
  }
  return 1;
}

/* Exposes the per-kind method tables to Lua so lib/tir can add methods. */
static int l_node_methods(lua_State *L) {
  const char *kind = luaL_checkstring(L, 1);
  if (strcmp(kind, "common") == 0) {
    lua_getfield(L, LUA_REGISTRYINDEX, "tir.methods.common");
    return 1;
  }
  for (int k = 0; k < TIR_NUM_KINDS; k++)
    if (strcmp(tir_kind_name(k), kind) == 0) {
      luaL_getmetatable(L, mt_name(k));
      lua_getfield(L, -1, "__methods");
      return 1;
    }
  return luaL_error(L, "unknown node kind '%s'", kind);
}

static int l_set_store_hook(lua_State *L) {
  if (!lua_isnil(L, 1)) luaL_checktype(L, 1, LUA_TFUNCTION);
  lua_getfield(L, LUA_REGISTRYINDEX, STORE_HOOK_KEY); /* previous hook is returned */
  lua_pushvalue(L, 1);
  lua_setfield(L, LUA_REGISTRYINDEX, STORE_HOOK_KEY);
  return 1;
}

/* node_fields(node) -> list of its field names (ir_nodes.def order), or nil for a non-node;
** for the REPL's completion and help. */
static int l_node_fields(lua_State *L) {
  tir_Node *n = tirL_to_node(L, 1);
  if (!n) {
    lua_pushnil(L);
    return 1;
  }
  const tir_KindInfo *ki = tir_kind_info(n->kind);
  lua_createtable(L, ki->n_fields, 0);
  for (int i = 0; i < ki->n_fields; i++) {
    lua_pushstring(L, ki->fields[i].name);
    lua_rawseti(L, -2, i + 1);
  }
  return 1;
}

static int l_is_node(lua_State *L) {
  tir_Node *n = tirL_to_node(L, 1);
  if (!n) {
    lua_pushboolean(L, 0);
    return 1;
  }
  if (lua_isnoneornil(L, 2)) {
    lua_pushboolean(L, 1);
    return 1;
  }
  const char *k = luaL_checkstring(L, 2);
  int ok = strcmp(tir_kind_name(n->kind), k) == 0 || (strcmp(k, "Expr") == 0 && tir_is_expr(n)) ||
           (strcmp(k, "Stmt") == 0 && tir_is_stmt(n));
  lua_pushboolean(L, ok);
  return 1;
}

typedef struct {
  int kind, found;
} ContainsCtx;

static int contains_fn(const tir_Node *n, void *p) {
  ContainsCtx *c = p;
  if (n->kind == c->kind) c->found = 1;
  return c->found;
}

/* contains(node, kind) -> whether a node of that kind occurs in node (inclusive). */
static int l_contains(lua_State *L) {
  tir_Node *n = tirL_check_node(L, 1, -1, NULL);
  const char *k = luaL_checkstring(L, 2);
  ContainsCtx c = {-1, 0};
  for (int i = 0; i < TIR_NUM_KINDS; i++)
    if (strcmp(tir_kind_name(i), k) == 0) c.kind = i;
  if (c.kind < 0) return luaL_argerror(L, 2, "unknown node kind");
  tir_visit(n, contains_fn, &c);
  lua_pushboolean(L, c.found);
  return 1;
}

/* raise(kind, primitive, message): a tir.Error at the user's line (for lib/tir). */
static int l_raise(lua_State *L) {
  const char *kind = luaL_checkstring(L, 1);
  const char *prim = luaL_optstring(L, 2, "");
  const char *msg = luaL_checkstring(L, 3);
  static const struct {
    const char *name;
    tir_ErrorKind k;
  } kinds[] = {{"TypeError", TIR_ERR_TYPE},         {"ValueError", TIR_ERR_VALUE},   {"ScheduleError", TIR_ERR_SCHEDULE},
               {"LoweringError", TIR_ERR_LOWER},    {"RuntimeError", TIR_ERR_RUNTIME}, {"IOError", TIR_ERR_IO},
               {"CudaError", TIR_ERR_CUDA},         {"InternalError", TIR_ERR_INTERNAL}, {"SimulationError", TIR_ERR_SIMULATION}};
  tir_ErrorKind k = TIR_ERR_VALUE;
  for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++)
    if (strcmp(kinds[i].name, kind) == 0) k = kinds[i].k;
  return tirL_error(L, k, prim, "%s", msg);
}

static int l_valid_dtype(lua_State *L) {
  tir_DType t;
  lua_pushboolean(L, lua_type(L, 1) == LUA_TSTRING && tir_dtype_parse(lua_tostring(L, 1), &t));
  return 1;
}

static int l_live_nodes(lua_State *L) {
  lua_pushinteger(L, tir_node_live_count());
  return 1;
}

void tirL_open_node(lua_State *L) {
  /* the cache */
  lua_newtable(L);
  lua_createtable(L, 0, 1);
  lua_pushstring(L, "v");
  lua_setfield(L, -2, "__mode");
  lua_setmetatable(L, -2);
  lua_setfield(L, LUA_REGISTRYINDEX, CACHE_KEY);
  /* common methods */
  lua_newtable(L);
  static const luaL_Reg common[] = {{"same_as", m_same_as},
                                    {"script", m_script},
                                    {"structural_hash", m_structural_hash},
                                    {"show", m_show},
                                    {NULL, NULL}};
  luaL_setfuncs(L, common, 0);
  lua_setfield(L, LUA_REGISTRYINDEX, "tir.methods.common");
  /* one metatable per kind */
  lua_newtable(L); /* mt set */
  for (int k = 0; k < TIR_NUM_KINDS; k++) {
    luaL_newmetatable(L, mt_name(k));
    lua_pushcfunction(L, node_gc);
    lua_setfield(L, -2, "__gc");
    lua_pushcfunction(L, node_tostring);
    lua_setfield(L, -2, "__tostring");
    lua_pushcfunction(L, node_index);
    lua_setfield(L, -2, "__index");
    lua_pushcfunction(L, node_newindex);
    lua_setfield(L, -2, "__newindex");
    lua_pushcfunction(L, node_len);
    lua_setfield(L, -2, "__len");
    lua_newtable(L);
    if (k == TIR_Array) {
      lua_pushcfunction(L, m_list);
      lua_setfield(L, -2, "list");
    }
    lua_setfield(L, -2, "__methods");
    if ((k < TIR_Array && tir_kind_info(k)->family == TIR_FAM_EXPR) || k == TIR_IterVar) luaL_setfuncs(L, expr_meta, 0);
    if (k == TIR_Buffer) {
      lua_pushcfunction(L, buffer_call);
      lua_setfield(L, -2, "__call");
    }
    lua_pushinteger(L, k);
    lua_rawset(L, -3); /* mtset[mt] = k */
  }
  lua_setfield(L, LUA_REGISTRYINDEX, MTSET_KEY);
  /* tir.Error */
  luaL_newmetatable(L, TIRL_ERROR_MT);
  lua_pushcfunction(L, error_tostring);
  lua_setfield(L, -2, "__tostring");
  lua_pushstring(L, "tir.Error");
  lua_setfield(L, -2, "__name");
  lua_pop(L, 1);
  /* module functions (module table at top) */
  static const luaL_Reg fns[] = {{"node_methods", l_node_methods},
                                 {"set_store_hook", l_set_store_hook},
                                 {"is_node", l_is_node},
                                 {"node_fields", l_node_fields},
                                 {"live_nodes", l_live_nodes},
                                 {"contains", l_contains},
                                 {"raise", l_raise},
                                 {"valid_dtype", l_valid_dtype},
                                 {NULL, NULL}};
  luaL_setfuncs(L, fns, 0);
}
