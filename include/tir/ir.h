/* ir.h -- TensorIR nodes: expressions, statements, buffers, functions.
 *
 * Ownership (read this first):
 *  - Every node carries an intrusive reference count.  Nodes are immutable once built and
 *    may be shared by many trees.  Counts are plain ints: one IR graph is used from one
 *    thread at a time (a lua_State is single-threaded).
 *  - Functions named *_new / tir_<op> / tir_make_* return an OWNED reference (count +1).
 *  - Constructors STEAL the references passed to them as node arguments: pass R(x) (which
 *    retains x and returns it) to keep your own reference.  On failure a constructor
 *    releases what it stole and returns NULL with the thread's error set (error.h).
 *  - Accessors (struct fields) BORROW.
 *  - A node with refcount 1 that you own may be edited in place (its builder does this);
 *    anything else is read-only.
 * The node list lives in ir_nodes.def; struct fields below are generated from it.
 */
#ifndef TIR_IR_H
#define TIR_IR_H

#include <stddef.h>
#include <stdint.h>

#include "tir/dtype.h"

/* Kind enum: TIR_<Kind>, in ir_nodes.def order, then TIR_Array. */
typedef enum {
#define N(K, FAM, FIELDS) TIR_##K,
#include "tir/ir_nodes.def"
#undef N
  TIR_Array,
  TIR_NUM_KINDS
} tir_Kind;

typedef enum { TIR_FAM_EXPR, TIR_FAM_STMT, TIR_FAM_OTHER } tir_Family;

/* Common header of every node. */
typedef struct tir_Node {
  uint16_t kind;   /* tir_Kind */
  uint16_t flags;
  int32_t refcount;
  tir_DType dtype; /* expressions: the value's type; Buffer: element type; else void */
} tir_Node;

typedef struct tir_Array {
  tir_Node hdr;
  int32_t size;
  tir_Node **items; /* size entries, each owned; NULL entries are allowed */
} tir_Array;

/* Forward struct names used in field types. */
#define N(K, FAM, FIELDS) typedef struct tir_##K tir_##K;
#include "tir/ir_nodes.def"
#undef N

#define F_NODE(T, name) T *name;
#define F_INT(name) int64_t name;
#define F_UID(name) int64_t name;
#define F_FLOAT(name) double name;
#define F_STR(name) char *name;
#define N(K, FAM, FIELDS) \
  struct tir_##K {        \
    tir_Node hdr;         \
    FIELDS                \
  };
#include "tir/ir_nodes.def"
#undef N
#undef F_NODE
#undef F_INT
#undef F_UID
#undef F_FLOAT
#undef F_STR

/* ---- enums stored in INT fields (values match TVM) ---- */
typedef enum {
  TIR_FOR_SERIAL = 0,
  TIR_FOR_PARALLEL = 1,
  TIR_FOR_VECTORIZED = 2,
  TIR_FOR_UNROLLED = 3,
  TIR_FOR_THREAD_BINDING = 4
} tir_ForKind;

typedef enum {
  TIR_ITER_DATA_PAR = 0,
  TIR_ITER_THREAD_INDEX = 1,
  TIR_ITER_COMM_REDUCE = 2,
  TIR_ITER_ORDERED = 3,
  TIR_ITER_OPAQUE = 4
} tir_IterType;

/* ---- reflection: field tables generated from ir_nodes.def ---- */
typedef enum { TIR_FT_NODE, TIR_FT_INT, TIR_FT_UID, TIR_FT_FLOAT, TIR_FT_STR } tir_FieldType;
typedef struct {
  const char *name;
  tir_FieldType type;
  size_t offset;
  const char *node_type; /* for TIR_FT_NODE: "tir_Node", "tir_Array", "tir_Var", ... */
} tir_FieldInfo;
typedef struct {
  const char *name; /* "For", "BufferLoad", ... */
  tir_Family family;
  size_t size;
  int n_fields;
  const tir_FieldInfo *fields;
} tir_KindInfo;

const tir_KindInfo *tir_kind_info(int kind);
const char *tir_kind_name(int kind);
static inline int tir_is_expr(const tir_Node *n) {
  return n && n->kind < TIR_Array && tir_kind_info(n->kind)->family == TIR_FAM_EXPR;
}
static inline int tir_is_stmt(const tir_Node *n) {
  return n && n->kind < TIR_Array && tir_kind_info(n->kind)->family == TIR_FAM_STMT;
}

/* ---- reference counting and generic node operations (node.c) ---- */
tir_Node *tir_retain(const void *n); /* NULL-safe; returns n */
void tir_release(const void *n);     /* NULL-safe */
#define R(x) ((__typeof__(x))tir_retain(x))
/* Allocates a zeroed node of `kind` with refcount 1. */
tir_Node *tir_node_alloc(int kind, tir_DType dtype);
/* Shallow copy: same fields, children retained, strings duplicated, refcount 1. */
tir_Node *tir_node_copy(const tir_Node *n);
/* Replaces the string field at `slot` (inside a node you may edit). */
void tir_node_set_str(char **slot, const char *s);
/* Expression depth, kept in the header's flags by the constructors: the C passes recurse
 * over expressions, so the Lua bindings refuse to build ones deeper than this. */
#define TIR_MAX_EXPR_DEPTH 1000
static inline int tir_expr_depth(const tir_Node *n) { return n ? n->flags : 0; }
/* Recomputes n's depth from its children (1 + the deepest child expression). */
void tir_node_update_depth(tir_Node *n);
/* Live node count (for leak tests). */
long tir_node_live_count(void);

/* Arrays. tir_array_new gives `size` NULL slots to fill with owned references. */
tir_Array *tir_array_new(int size);
tir_Array *tir_array_empty(void);
/* Convenience: builds an array from n stolen references. */
tir_Array *tir_array_of(int n, ...);
/* Returns a new array: a's items (retained) followed by x (stolen).  Steals a. */
tir_Array *tir_array_push(tir_Array *a, tir_Node *x);
/* Returns a new array with items[lo, hi) of a (borrowed a). */
tir_Array *tir_array_slice(const tir_Array *a, int lo, int hi);
/* Concatenation (borrowed inputs). */
tir_Array *tir_array_concat(const tir_Array *a, const tir_Array *b);
#define TIR_AT(arr, i) (((const tir_Array *)(arr))->items[i])

/* ---- constructors (constructors.c). All steal node arguments. ---- */
tir_Node *tir_int_imm(tir_DType t, int64_t v);
tir_Node *tir_float_imm(tir_DType t, double v);
tir_Node *tir_string_imm(const char *s);
#define tir_i32(v) tir_int_imm(TIR_INT32, (v))
#define tir_bool_imm(v) tir_int_imm(TIR_BOOL, (v) ? 1 : 0)
tir_Var *tir_var_new(const char *name, tir_DType t);
/* Raw binary node of `kind` (no folding, no type promotion; dtype of a unless compare). */
tir_Node *tir_binary_raw(int kind, tir_Node *a, tir_Node *b);
tir_Node *tir_cast_raw(tir_DType t, tir_Node *v);
tir_Node *tir_buffer_load(tir_Buffer *buf, tir_Array *indices);
tir_Node *tir_call(tir_DType t, const char *op, tir_Array *args);
tir_Node *tir_ramp(tir_Node *base, tir_Node *stride, int lanes);
tir_Node *tir_broadcast(tir_Node *value, int lanes);
tir_Node *tir_let(tir_Var *var, tir_Node *value, tir_Node *body);
tir_Node *tir_reduce(const char *combiner, tir_Node *source, tir_Array *axis, tir_Node *condition);

tir_Node *tir_buffer_store(tir_Buffer *buf, tir_Node *value, tir_Array *indices);
tir_Node *tir_for(tir_Var *v, tir_Node *min, tir_Node *extent, int kind, const char *thread_tag,
                  tir_Array *annotations, tir_Node *body);
/* Builds a SeqStmt, flattening nested SeqStmts; returns the single item if only one. */
tir_Node *tir_seq(tir_Array *stmts);
tir_Node *tir_seq2(tir_Node *a, tir_Node *b);
tir_Node *tir_if(tir_Node *cond, tir_Node *then_case, tir_Node *else_case);
tir_Node *tir_let_stmt(tir_Var *var, tir_Node *value, tir_Node *body);
tir_Node *tir_attr_stmt(tir_Node *node, const char *key, tir_Node *value, tir_Node *body);
tir_Node *tir_evaluate(tir_Node *value);
tir_Node *tir_allocate(tir_Buffer *buf, tir_Node *body);
tir_Node *tir_decl_buffer(tir_Buffer *buf, tir_Node *body);
/* A new block gets a fresh uid. Any array may be NULL (= empty). */
tir_Block *tir_block_new(const char *name, tir_Array *iter_vars, tir_Array *reads, tir_Array *writes,
                         tir_Node *init, tir_Array *alloc_buffers, tir_Array *match_buffers,
                         tir_Array *annotations, tir_Node *body);
tir_Node *tir_block_realize(tir_Array *iter_values, tir_Node *predicate, tir_Block *block);

tir_Range *tir_range(tir_Node *min, tir_Node *extent);
tir_IterVar *tir_iter_var(tir_Var *var, tir_Range *dom, int iter_type, const char *thread_tag);
/* A buffer with a fresh data var; strides NULL means compact row-major. */
tir_Buffer *tir_buffer_new(const char *name, tir_DType dtype, tir_Array *shape, tir_Array *strides,
                           tir_Node *elem_offset, const char *scope);
tir_BufferRegion *tir_buffer_region(tir_Buffer *buf, tir_Array *region);
/* The region covering the whole buffer. (borrowed buf) */
tir_BufferRegion *tir_buffer_region_full(tir_Buffer *buf);
tir_MatchBufferRegion *tir_match_buffer_region(tir_Buffer *buf, tir_BufferRegion *src);
tir_Ann *tir_ann(const char *key, tir_Node *value);
tir_PrimFunc *tir_prim_func(const char *name, tir_Array *params, tir_Node *body, tir_Array *attrs);
tir_IRModule *tir_ir_module(tir_Array *functions);
tir_ComputeOp *tir_compute_op(const char *name, tir_Array *axis, tir_Node *body, tir_Buffer *output);

/* Returns a copy of `block` with a new body (uid kept). Steals body; borrows block. */
tir_Block *tir_block_with_body(const tir_Block *block, tir_Node *body);
/* Helpers reading constants: true if n is an IntImm (value stored in *v). */
int tir_is_const_int(const tir_Node *n, int64_t *v);
int tir_is_const_float(const tir_Node *n, double *v);
static inline int tir_is_one(const tir_Node *n) { int64_t v; return tir_is_const_int(n, &v) && v == 1; }
static inline int tir_is_zero(const tir_Node *n) { int64_t v; return tir_is_const_int(n, &v) && v == 0; }
/* Checks a node built from loose parts (the generic constructor): required fields set,
 * child kinds as the field types say.  Returns 0, or -1 with the error set. */
int tir_node_validate(const tir_Node *n);
/* Looks up an annotation value by key (borrowed; NULL when absent). */
tir_Node *tir_ann_get(const tir_Array *anns, const char *key);
/* Returns a new annotation array with key set to value (stolen); borrows anns. */
tir_Array *tir_ann_set(const tir_Array *anns, const char *key, tir_Node *value);
tir_Array *tir_ann_remove(const tir_Array *anns, const char *key);

/* ---- the op layer (op.c): TVM-style type matching and constant folding ----
 * Integer operands of different widths are widened; int with float promotes to the
 * float; bool operands of arithmetic are cast to int32.  Returns NULL with the error
 * set on impossible combinations (e.g. handle + int).  All steal their arguments. */
tir_Node *tir_add(tir_Node *a, tir_Node *b);
tir_Node *tir_sub(tir_Node *a, tir_Node *b);
tir_Node *tir_mul(tir_Node *a, tir_Node *b);
tir_Node *tir_div(tir_Node *a, tir_Node *b);      /* float division or truncdiv */
tir_Node *tir_truncmod(tir_Node *a, tir_Node *b);
tir_Node *tir_floordiv(tir_Node *a, tir_Node *b);
tir_Node *tir_floormod(tir_Node *a, tir_Node *b);
tir_Node *tir_min(tir_Node *a, tir_Node *b);
tir_Node *tir_max(tir_Node *a, tir_Node *b);
tir_Node *tir_cmp(int kind, tir_Node *a, tir_Node *b); /* kind in TIR_EQ..TIR_GE */
tir_Node *tir_and(tir_Node *a, tir_Node *b);
tir_Node *tir_or(tir_Node *a, tir_Node *b);
tir_Node *tir_not(tir_Node *a);
tir_Node *tir_neg(tir_Node *a);
tir_Node *tir_cast(tir_DType t, tir_Node *v);
tir_Node *tir_select(tir_Node *c, tir_Node *t, tir_Node *f);
/* TVM's tir.if_then_else: Call(if_then_else, c, t, f) with t and f brought to one dtype; only
 * the side the condition picks is evaluated (the interpreter, the simulator and the CUDA ?:),
 * so that side may hold an access that is out of bounds when not taken (padding).  c must be
 * a scalar bool (TypeError otherwise); a constant c gives t or f itself.  Steals all three. */
tir_Node *tir_if_then_else(tir_Node *c, tir_Node *t, tir_Node *f);
/* The largest / smallest value of dtype t as a constant (TVM's tir.max_value / min_value):
 * exact for integers, the largest finite value for floats (float16: 65504). */
tir_Node *tir_max_value(tir_DType t);
tir_Node *tir_min_value(tir_DType t);
/* Applies a binary op by node kind (TIR_Add..TIR_Or). */
tir_Node *tir_binary(int kind, tir_Node *a, tir_Node *b);
/* Constant of dtype t (int/bool/float), value given as double or int. */
tir_Node *tir_make_const(tir_DType t, double v);
tir_Node *tir_make_zero(tir_DType t);
/* Identity value of a reduction combiner ("sum" -> 0, "max" -> lowest, "min" -> highest). */
tir_Node *tir_reduce_identity(const char *combiner, tir_DType t);
/* Applies the combiner: sum -> a + b, max -> max(a, b), min -> min(a, b). */
tir_Node *tir_reduce_combine(const char *combiner, tir_Node *a, tir_Node *b);

/* ---- traversal (functor.c) ---- */
/* Calls fn(node, ctx) on every node reachable through node fields in pre-order
 * (arrays are walked, not reported).  fn returns 0 to descend, 1 to skip children. */
typedef int (*tir_VisitFn)(const tir_Node *n, void *ctx);
void tir_visit(const tir_Node *root, tir_VisitFn fn, void *ctx);

/* A mutator: fn(node, ctx) returns an owned replacement, or NULL to mean "recurse into
 * children and rebuild only if one changed".  Returns an owned result; the input is
 * borrowed.  On error fn returns TIR_MUTATE_ERROR; the whole walk then returns NULL. */
typedef tir_Node *(*tir_MutateFn)(const tir_Node *n, void *ctx);
extern tir_Node tir_mutate_error_sentinel;
#define TIR_MUTATE_ERROR (&tir_mutate_error_sentinel)
tir_Node *tir_mutate(const tir_Node *root, tir_MutateFn fn, void *ctx);
/* Rebuilds n with each child c replaced by tir_mutate(c, fn, ctx). */
tir_Node *tir_mutate_children(const tir_Node *n, tir_MutateFn fn, void *ctx);

/* Substitutes variables: vars[i] -> values[i] (borrowed arrays of the same length). */
tir_Node *tir_substitute(const tir_Node *root, int n, tir_Var *const *vars, tir_Node *const *values);
/* Substitutes buffers (by identity) in loads, stores, regions, allocations. */
tir_Node *tir_substitute_buffers(const tir_Node *root, int n, tir_Buffer *const *from,
                                 tir_Buffer *const *to);
/* The indices into a view's source of view element idx: a match_buffer view covers the
 * trailing dimensions of its source region (the leading ones are single elements), element i
 * of a dimension being region min + i (ramps get a broadcast min).  Owned result. */
tir_Array *tir_view_source_indices(const tir_BufferRegion *src, const tir_Array *idx);
/* Replaces the statement `target` (by identity) with `repl` (stolen) in root. */
tir_Node *tir_replace_stmt(const tir_Node *root, const tir_Node *target, tir_Node *repl);
/* True if var occurs in n. */
int tir_uses_var(const tir_Node *n, const tir_Var *var);
/* True if any of vars occur in n. */
int tir_uses_any_var(const tir_Node *n, int nvars, tir_Var *const *vars);

/* ---- structural equality and hash (equal_hash.c) ----
 * Variables and buffers are compared up to renaming at their definitions (loop vars,
 * block iter vars, lets, parameters, allocations), as TVM's structural_equal does; free
 * ones must be the same object unless map_free_vars.  Block uids are ignored.  When the
 * nodes differ, tir_structural_diff writes the first difference into buf. */
int tir_structural_equal(const tir_Node *a, const tir_Node *b);
int tir_structural_diff(const tir_Node *a, const tir_Node *b, char *buf, size_t cap, int map_free_vars);
uint64_t tir_structural_hash(const tir_Node *n);
/* Structural equality of expressions where variables compare by identity (no mapping). */
int tir_expr_deep_equal(const tir_Node *a, const tir_Node *b);

/* ---- printer (printer.c) ----
 * Prints any node as TIR script (Lua, lib/tir/script.lua reads it back).  Returns a
 * malloc'd string the caller frees.  `marks` (may be NULL) lists nodes to underline,
 * each with an optional label. */
typedef struct {
  const tir_Node *node;
  const char *label;
} tir_Mark;
char *tir_print(const tir_Node *n);
char *tir_print_marked(const tir_Node *n, const tir_Mark *marks, int n_marks);
/* Prints an expression alone (short form, for messages). */
char *tir_print_expr(const tir_Node *e);

/* ---- builtins (builtin.c; docs/BUILTINS.md) ----
 * The load inside address_of(buf[index]) (borrowed), or NULL when e is not that form. */
const tir_BufferLoad *tir_address_of_load(const tir_Node *e);
/* address_of(load) (steals load). */
tir_Node *tir_address_of(tir_Node *load);
/* The builtin registry: one row per builtin in include/tir/builtins.def (op, arity, written
 * arguments, attributes, doc); passes query the attributes instead of matching names. */
enum {
  TIR_BUILTIN_PURE = 1,       /* no side effects: a value of its arguments */
  TIR_BUILTIN_BARRIER = 2,    /* a CTA-wide barrier (__syncthreads) */
  TIR_BUILTIN_ASYNC = 4,      /* part of the cp.async group protocol */
  TIR_BUILTIN_ASYNC_WAIT = 8, /* waits for async copies (thread_sync puts a barrier after it) */
  TIR_BUILTIN_WARP = 16,      /* a warp-wide .sync.aligned instruction: all 32 lanes execute it */
  TIR_BUILTIN_FLOAT_MATH = 32, /* computes in floating point: the call must have a float dtype */
  TIR_BUILTIN_SHUFFLE = 64,    /* a warp shuffle: exchanges values between the lanes of a warp */
  TIR_BUILTIN_ASYNC_PROXY = 128 /* TMA / mbarrier: its shared operands are ordered by mbarrier phases, not barriers */,
  TIR_BUILTIN_WARPGROUP = 256 /* warpgroup-wide (wgmma): 128 consecutive threads execute it together */,
  /* each address_of argument is the calling thread's own access of at most 16 bytes (cp.async,
   * ldmatrix's per-lane row address): lower_buffer_swizzle swizzles it like a load */
  TIR_BUILTIN_LANE_ADDRESS = 512,
  /* reads a swizzled buffer's layout itself (a TMA copy, a wgmma matrix descriptor that encodes
   * the swizzle mode): lower_buffer_swizzle leaves its address_of arguments logical */
  TIR_BUILTIN_SWIZZLE_AWARE = 1024,
  /* a named barrier (bar.sync / bar.arrive, PTX ISA 9.7.13.1): some threads of the CTA wait on or
   * signal others, like TIR_BUILTIN_BARRIER but not the whole CTA (thread_sync keeps an if holding
   * one whole) */
  TIR_BUILTIN_NAMED_BARRIER = 2048
};
/* the registry flags of a TIR_MATH row's kind (builtins.def) */
enum {
  TIR_MATH_FLAGS_FLOAT = TIR_BUILTIN_FLOAT_MATH,
  TIR_MATH_FLAGS_ROUNDING = TIR_BUILTIN_FLOAT_MATH,
  TIR_MATH_FLAGS_ABS = 0,
  TIR_MATH_FLAGS_PRED = 0,
  TIR_MATH_FLAGS_BITS = 0
};
typedef enum {
#define TIR_BUILTIN(id, ...) TIR_BI_##id,
#include "tir/builtins.def"
#undef TIR_BUILTIN
  TIR_BI_COUNT
} tir_BuiltinId;
typedef struct {
  tir_BuiltinId id;
  const char *op;
  int min_args, max_args; /* max_args -1: any */
  unsigned writes;        /* bit i: argument i is an address_of the call writes through */
  unsigned flags;         /* TIR_BUILTIN_* */
  const char *doc;
} tir_BuiltinInfo;
/* The row of builtin `op`, or NULL when op is not a builtin (static storage). */
const tir_BuiltinInfo *tir_builtin_info(const char *op);
/* All rows (TIR_BI_COUNT of them, in builtins.def order). */
const tir_BuiltinInfo *tir_builtin_table(void);
/* True when op is a builtin with every bit of `flags`. */
int tir_builtin_has(const char *op, unsigned flags);
/* True when argument i of builtin call `op` is an address_of that the call writes through. */
int tir_builtin_writes_arg(const char *op, int i);
/* True for the math builtins that compute in floating point (exp, log, sqrt, pow, round, ...;
 * not abs, which also takes integers): a call of one must have a float dtype, as CUDA's
 * expf/sqrtf/... return floats (the codegen emits them only for float results). */
int tir_builtin_is_float_math(const char *op);
/* dp4a (PTX ISA, Integer Arithmetic Instructions: dp4a): c + sum over the four bytes i of
 * a.byte[i] * b.byte[i], each byte sign-extended when its operand is .s32 (a_signed/b_signed),
 * zero-extended when .u32; the sum wraps modulo 2^32 (returned as int32). */
int32_t tir_dp4a(int32_t a, int32_t b, int32_t c, int a_signed, int b_signed);
/* prmt.b32 in the default mode (PTX ISA, prmt): the bytes {b.b3 b.b2 b.b1 b.b0 a.b3 a.b2 a.b1
 * a.b0} are numbered 0 (a.b0) .. 7 (b.b3); byte i of the result is the one nibble i of sel
 * selects (its low 3 bits), or, when the nibble's bit 3 is set, that byte's sign (0x00 or 0xff)
 * replicated. */
uint32_t tir_prmt(uint32_t a, uint32_t b, uint32_t sel);
/* Checks a reinterpret call (an integer vector as one integer of as many bits): 0, or -1 with
 * the reason in err. */
int tir_reinterpret_check(const tir_Call *c, char *err, size_t errlen);
/* The first element of a vector index that addresses consecutive elements: Ramp(b, 1, n) and
 * sums of it with broadcasts (Broadcast(x) + Ramp(b, 1, n) -> b + x, as flattening builds
 * them); owned result, or NULL for any other index. */
tir_Node *tir_unit_ramp_base(const tir_Node *ix);
/* The signedness of a ptx_dp4a operand type argument: 1 for "s32", 0 for "u32", -1 otherwise. */
int tir_dp4a_type_signed(const tir_Node *type_arg);
/* Warp shuffles, PTX ISA 9.7.8.6 shfl.sync: ptx_shfl_sync_{idx,bfly,up,down}(mask, value, b,
 * width) -> value of another lane of the warp (docs/BUILTINS.md).  The mode, or -1 when op is
 * not a shuffle; the CUDA C function is tir_builtin_shfl_cuda(mode) (__shfl_sync, ...). */
enum { TIR_SHFL_IDX, TIR_SHFL_BFLY, TIR_SHFL_UP, TIR_SHFL_DOWN };
int tir_builtin_shfl_mode(const char *op);
const char *tir_builtin_shfl_cuda(int mode);
/* The value types a shuffle carries (CUDA's __shfl_*_sync overloads: 32- and 64-bit ints and
 * floats); 0 for others. */
int tir_builtin_shfl_type_ok(tir_DType t);

/* The math builtins (the TIR_MATH rows of builtins.def; docs/BUILTINS.md "Math builtins"), read
 * by the interpreter and the simulator (through value.c), the CUDA codegen and the Lua
 * shorthands (tir.exp, T.exp). */
typedef enum {
  TIR_MATH_FLOAT,    /* float result computed in floating point; float16/bfloat16 compute in float32 */
  TIR_MATH_ROUNDING, /* floor, ceil, trunc, round, nearbyint: exact (round: half to even) */
  TIR_MATH_ABS,      /* abs: floats and integers (the minimum wraps; unsigned: the value) */
  TIR_MATH_PRED,     /* bool result of a float argument: isnan, isinf, isfinite */
  TIR_MATH_BITS      /* integer bit operations: shift_left/right, bitwise_and/or/xor/not */
} tir_MathKind;

typedef struct {
  const char *name;
  int arity;
  tir_MathKind kind;
  double (*f1)(double);         /* the function in double (arity 1), NULL when computed specially */
  double (*f2)(double, double); /* arity 2 */
  const char *cuda;             /* CUDA's float64 function (float32: with an 'f'); NULL: emitted specially */
  int ulp32, ulp64; /* most ulps CUDA's float32/float64 function is from the correctly rounded
                     * result (CUDA C++ Programming Guide, Mathematical Functions); 0: exact */
} tir_MathBuiltin;
/* The row of builtin `name`, or NULL. */
const tir_MathBuiltin *tir_math_builtin(const char *name);
/* All rows; *n gets their count. */
const tir_MathBuiltin *tir_math_builtins(int *n);
/* Checks a call of math builtin `op` with dtype t and n arguments (arity; float builtins need
 * a float dtype, isnan/isinf/isfinite bool, bit operations an integer one).  Returns 0 (also
 * for ops that are not math builtins) or -1 with a TypeError naming `prim`. */
int tir_math_builtin_check(const char *op, tir_DType t, int n, const char *prim);

#endif
