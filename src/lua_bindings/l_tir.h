/* l_tir.h -- shared helpers of the Lua bindings (the only layer that raises Lua errors).
 *
 * Rules (reference/codebase-anchors.md section 8):
 *  - a node's Lua value is a box owning one reference; the same node always maps to the
 *    same Lua value (a weak registry cache), so identity needs no __eq;
 *  - check every argument before acquiring anything; on a core failure release
 *    temporaries first, then raise with tirL_raise_core();
 *  - the raised value is a tir.Error table: kind, primitive, message, detail, where,
 *    and __tostring rendering the IR with the offending node marked.
 */
#ifndef TIR_L_TIR_H
#define TIR_L_TIR_H

#include <lauxlib.h>
#include <lua.h>

#include "tir/error.h"
#include "tir/ir.h"

/* Pushes n (stolen reference; NULL pushes nil). */
void tirL_push_node(lua_State *L, tir_Node *n);
/* Pushes a borrowed node (retains). */
void tirL_push_borrowed(lua_State *L, const tir_Node *n);
/* Returns the node at idx or NULL (borrowed). */
tir_Node *tirL_to_node(lua_State *L, int idx);
/* Checks that idx is a node of `kind` (-1: any node); borrowed result. */
tir_Node *tirL_check_node(lua_State *L, int idx, int kind, const char *what);
tir_Node *tirL_check_expr_node(lua_State *L, int idx);
tir_Node *tirL_check_stmt(lua_State *L, int idx);
/* Converts a Lua value to an owned expression.  Integers take `hint`'s type when it is
 * numeric (else int32); floats take hint when float (else float32); booleans are bool. */
tir_Node *tirL_to_expr(lua_State *L, int idx, tir_DType hint, int have_hint);
/* Checks a dtype string argument. */
tir_DType tirL_check_dtype(lua_State *L, int idx);
/* Reads a Lua sequence of expressions (integers become int32).  Owned array. */
tir_Array *tirL_check_expr_list(lua_State *L, int idx, const char *what);
/* Reads a swizzle (include/tir/swizzle.h) at idx: "none", "32B", "64B", "128B" or {B, M, S};
 * raises a ValueError/TypeError from `primitive` otherwise.  Returns the packed form. */
int64_t tirL_check_swizzle(lua_State *L, int idx, const char *primitive);
/* Number of entries of a table counting nil holes: the largest positive integer key. */
int tirL_table_maxn(lua_State *L, int idx);

/* Reads the number (or boolean) at idx as a value of the integer dtype t (int/uint/bool):
 * integers and integral floats in t's range.  0 and *out, or -1 and the reason in why
 * (l_runtime.c). */
int tirL_int_for_dtype(lua_State *L, int idx, tir_DType t, int64_t *out, char *why, size_t n);

/* Raises the core's current error as a tir.Error (never returns). */
int tirL_raise_core(lua_State *L);
/* Raises a tir.Error of the given kind with a formatted message (never returns). */
int tirL_error(lua_State *L, tir_ErrorKind kind, const char *primitive, const char *fmt, ...);

/* Module registration entry points of the other binding files. */
void tirL_open_node(lua_State *L);      /* metatables */
void tirL_open_expr(lua_State *L);      /* tir.var, tir.const, tir.eq, ... (module at top) */
void tirL_open_te(lua_State *L);        /* tir.core.te */
void tirL_open_schedule(lua_State *L);  /* tir.core.Schedule */
void tirL_open_transform(lua_State *L); /* tir.core.lower, build */
void tirL_open_runtime(lua_State *L);   /* tir.core.nd, device, Module */
void tirL_open_interp(lua_State *L);    /* tir.core.interpret */
void tirL_open_arith(lua_State *L);     /* simplify, can_prove, const_int_bound */
void tirL_open_sim(lua_State *L);       /* tir.core.simulate (the GPU simulator) */
void tirL_open_dispatch(lua_State *L);   /* specialize, dispatcher_new (l_dispatch.c) */
void tirL_open_cudnn(lua_State *L);      /* cudnn_available, cudnn_conv2d_plan (l_cudnn.c) */
void tirL_open_tables(lua_State *L);    /* tir.core.builtins, mma_configs, scope_valid (l_tables.c) */

/* Registry key of the tir.Error metatable. */
#define TIRL_ERROR_MT "tir.Error"

/* The Lua state running interpret/simulate, for CPU models of extern functions written in
 * Lua (l_extern.c): enter returns the previous one for leave. */
lua_State *tirL_extern_enter(lua_State *L);
void tirL_extern_leave(lua_State *prev);
void tirL_open_extern(lua_State *L);

#endif
