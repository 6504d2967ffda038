/* validate.c -- shape checks for nodes built from loose parts (the generic constructor
 * used by the T script builder), so that later passes can trust field kinds. */
#include <string.h>

#include "tir/error.h"
#include "tir/extern.h"
#include "tir/ir.h"

/* Fields of type tir_Node that may be NULL. */
static int nullable(int kind, const char *field) {
  return (kind == TIR_IfThenElse && strcmp(field, "else_case") == 0) ||
         (kind == TIR_Block && strcmp(field, "init") == 0) || (kind == TIR_AttrStmt && strcmp(field, "node") == 0) ||
         (kind == TIR_Ann && strcmp(field, "value") == 0);
}

/* Fields of type tir_Node that hold statements (the rest hold expressions). */
static int holds_stmt(int kind, const char *field) {
  return strcmp(field, "body") == 0 ? (kind != TIR_Let && kind != TIR_ComputeOp) :
         strcmp(field, "then_case") == 0 || strcmp(field, "else_case") == 0 || strcmp(field, "init") == 0;
}

static int expect_kind(const char *type) {
  static const struct {
    const char *name;
    int kind;
  } map[] = {{"tir_Array", TIR_Array},       {"tir_Var", TIR_Var},           {"tir_Buffer", TIR_Buffer},
             {"tir_Range", TIR_Range},       {"tir_Block", TIR_Block},       {"tir_IterVar", TIR_IterVar},
             {"tir_BufferRegion", TIR_BufferRegion}};
  for (size_t i = 0; i < sizeof map / sizeof map[0]; i++)
    if (strcmp(map[i].name, type) == 0) return map[i].kind;
  return -1;
}

int tir_node_validate(const tir_Node *n) {
  if (!n) return tir_error_set(TIR_ERR_VALUE, "make", "node is missing");
  if (n->kind == TIR_Array) return 0;
  const tir_KindInfo *ki = tir_kind_info(n->kind);
  for (int i = 0; i < ki->n_fields; i++) {
    const tir_FieldInfo *f = &ki->fields[i];
    if (f->type != TIR_FT_NODE) continue;
    const tir_Node *c = *(tir_Node *const *)((const char *)n + f->offset);
    if (!c) {
      if (nullable(n->kind, f->name)) continue;
      return tir_error_set(TIR_ERR_VALUE, "make", "%s.%s is required", ki->name, f->name);
    }
    int want = expect_kind(f->node_type);
    if (want >= 0) {
      if (c->kind != want)
        return tir_error_set(TIR_ERR_TYPE, "make", "%s.%s must be a %s, got %s", ki->name, f->name,
                             tir_kind_name(want), tir_kind_name(c->kind));
      continue;
    }
    if (n->kind == TIR_Ann || (n->kind == TIR_AttrStmt && strcmp(f->name, "node") == 0)) continue;
    /* an AttrStmt's value may be a list of expressions (cluster_dims = {x, y, z}, made by
     * inject_tma_pipeline and printed as such) */
    if (n->kind == TIR_AttrStmt && strcmp(f->name, "value") == 0 && c->kind == TIR_Array) {
      const tir_Array *a = (const tir_Array *)c;
      for (int j = 0; j < a->size; j++)
        if (!a->items[j] || !tir_is_expr(a->items[j]))
          return tir_error_set(TIR_ERR_TYPE, "make", "AttrStmt.value[%d] must be an expression, got %s", j + 1,
                               a->items[j] ? tir_kind_name(a->items[j]->kind) : "nothing");
      continue;
    }
    if (holds_stmt(n->kind, f->name)) {
      if (!tir_is_stmt(c))
        return tir_error_set(TIR_ERR_TYPE, "make", "%s.%s must be a statement, got %s", ki->name, f->name,
                             tir_kind_name(c->kind));
    } else if (!tir_is_expr(c)) {
      return tir_error_set(TIR_ERR_TYPE, "make", "%s.%s must be an expression, got %s", ki->name, f->name,
                           tir_kind_name(c->kind));
    }
  }
  /* arrays with element expectations */
#define CHECK_ARRAY(arr, K, what)                                                                       \
  for (int j = 0; j < (arr)->size; j++)                                                                 \
    if (!(arr)->items[j] || (arr)->items[j]->kind != (K))                                               \
      return tir_error_set(TIR_ERR_TYPE, "make", "%s.%s[%d] must be a %s", ki->name, what, j + 1,      \
                           tir_kind_name(K));
  switch (n->kind) {
    case TIR_Block: {
      const tir_Block *b = (const tir_Block *)n;
      CHECK_ARRAY(b->iter_vars, TIR_IterVar, "iter_vars");
      CHECK_ARRAY(b->reads, TIR_BufferRegion, "reads");
      CHECK_ARRAY(b->writes, TIR_BufferRegion, "writes");
      CHECK_ARRAY(b->alloc_buffers, TIR_Buffer, "alloc_buffers");
      CHECK_ARRAY(b->match_buffers, TIR_MatchBufferRegion, "match_buffers");
      CHECK_ARRAY(b->annotations, TIR_Ann, "annotations");
      break;
    }
    case TIR_BlockRealize: {
      const tir_BlockRealize *br = (const tir_BlockRealize *)n;
      if (br->iter_values->size != br->block->iter_vars->size)
        return tir_error_set(TIR_ERR_VALUE, "make", "block '%s' has %d iter vars but %d bindings", br->block->name,
                             br->block->iter_vars->size, br->iter_values->size);
      for (int j = 0; j < br->iter_values->size; j++)
        if (!tir_is_expr(br->iter_values->items[j]))
          return tir_error_set(TIR_ERR_TYPE, "make", "binding %d of block '%s' is not an expression", j + 1,
                               br->block->name);
      if (!tir_dtype_is_bool(br->predicate->dtype) || br->predicate->dtype.lanes != 1)
        return tir_error_set(TIR_ERR_TYPE, "make", "the predicate of block '%s' must be a boolean expression", br->block->name);
      break;
    }
    case TIR_For: {
      const tir_For *f = (const tir_For *)n;
      CHECK_ARRAY(f->annotations, TIR_Ann, "annotations");
      if (f->kind < 0 || f->kind > TIR_FOR_THREAD_BINDING)
        return tir_error_set(TIR_ERR_VALUE, "make", "bad loop kind %lld", (long long)f->kind);
      break;
    }
    case TIR_SeqStmt: {
      const tir_Array *a = ((const tir_SeqStmt *)n)->seq;
      for (int j = 0; j < a->size; j++)
        if (!tir_is_stmt(a->items[j])) return tir_error_set(TIR_ERR_TYPE, "make", "SeqStmt item %d is not a statement", j + 1);
      break;
    }
    case TIR_BufferLoad:
    case TIR_BufferStore: {
      const tir_Buffer *b = n->kind == TIR_BufferLoad ? ((const tir_BufferLoad *)n)->buffer : ((const tir_BufferStore *)n)->buffer;
      const tir_Array *idx = n->kind == TIR_BufferLoad ? ((const tir_BufferLoad *)n)->indices : ((const tir_BufferStore *)n)->indices;
      for (int j = 0; j < idx->size; j++)
        if (!tir_is_expr(idx->items[j])) return tir_error_set(TIR_ERR_TYPE, "make", "index %d of %s is not an expression", j + 1, b->name);
      /* as TVM's BufferStore/BufferLoad constructors: one integer index per dimension, only
       * the last one a vector, and a stored value with as many lanes as the index addresses */
      if (idx->size != b->shape->size)
        return tir_error_set(TIR_ERR_VALUE, "make", "%s has %d dimension(s) but was indexed with %d index(es)", b->name,
                             b->shape->size, idx->size);
      for (int j = 0; j < idx->size; j++) {
        tir_DType it = idx->items[j]->dtype;
        if (!tir_dtype_is_int(it))
          return tir_error_set(TIR_ERR_TYPE, "make", "index %d of %s must be an integer expression", j + 1, b->name);
        if (it.lanes != 1 && j + 1 < idx->size)
          return tir_error_set(TIR_ERR_VALUE, "make", "index %d of %s is a vector; only the last index may be", j + 1, b->name);
      }
      if (n->kind == TIR_BufferStore) {
        const tir_Node *v = ((const tir_BufferStore *)n)->value;
        int want = (idx->size ? idx->items[idx->size - 1]->dtype.lanes : 1) * b->hdr.dtype.lanes;
        if (v->dtype.lanes != want)
          return tir_error_set(TIR_ERR_VALUE, "make", "store to %s: the value has %d lane(s) but the index addresses %d element(s)",
                               b->name, v->dtype.lanes, want);
        if (v->dtype.code != b->hdr.dtype.code || v->dtype.bits != b->hdr.dtype.bits) {
          char a[32], c[32];
          return tir_error_set(TIR_ERR_TYPE, "make", "store to %s: the value is %s but %s holds %s (cast it)", b->name,
                               tir_dtype_str(v->dtype, a), b->name, tir_dtype_str(b->hdr.dtype, c));
        }
      }
      break;
    }
    case TIR_Call: {
      const tir_Call *c = (const tir_Call *)n;
      if (tir_math_builtin_check(c->op, n->dtype, c->args->size, "make") != 0) return -1;
      if ((strcmp(c->op, "call_extern") == 0 || strcmp(c->op, "call_pure_extern") == 0) &&
          !tir_extern_name_valid(tir_extern_call_name(n)))
        return tir_error_set(TIR_ERR_VALUE, "make", "%s takes a C function name (a string) as its first argument", c->op);
      break;
    }
    case TIR_IfThenElse:
      if (!tir_dtype_is_bool(((const tir_IfThenElse *)n)->cond->dtype) || ((const tir_IfThenElse *)n)->cond->dtype.lanes != 1)
        return tir_error_set(TIR_ERR_TYPE, "make", "IfThenElse.cond must be a boolean expression");
      break;
    case TIR_Buffer: {
      const tir_Buffer *b = (const tir_Buffer *)n;
      for (int j = 0; j < b->shape->size; j++)
        if (!tir_is_expr(b->shape->items[j])) return tir_error_set(TIR_ERR_TYPE, "make", "shape[%d] of buffer %s is not an expression", j + 1, b->name);
      break;
    }
    case TIR_BufferRegion: CHECK_ARRAY(((const tir_BufferRegion *)n)->region, TIR_Range, "region"); break;
    case TIR_IRModule: CHECK_ARRAY(((const tir_IRModule *)n)->functions, TIR_PrimFunc, "functions"); break;
    case TIR_Reduce: {
      const tir_Reduce *r = (const tir_Reduce *)n;
      CHECK_ARRAY(r->axis, TIR_IterVar, "axis");
      if (r->condition && (!tir_dtype_is_bool(r->condition->dtype) || r->condition->dtype.lanes != 1))
        return tir_error_set(TIR_ERR_TYPE, "make", "Reduce.condition must be a boolean expression");
      break;
    }
    case TIR_ComputeOp: CHECK_ARRAY(((const tir_ComputeOp *)n)->axis, TIR_IterVar, "axis"); break;
    case TIR_PrimFunc: {
      const tir_Array *a = ((const tir_PrimFunc *)n)->params;
      for (int j = 0; j < a->size; j++)
        if (!a->items[j] || (a->items[j]->kind != TIR_Buffer && a->items[j]->kind != TIR_Var))
          return tir_error_set(TIR_ERR_TYPE, "make", "parameter %d must be a Buffer or Var", j + 1);
      if (!tir_is_stmt(((const tir_PrimFunc *)n)->body)) return tir_error_set(TIR_ERR_TYPE, "make", "function body must be a statement");
      CHECK_ARRAY(((const tir_PrimFunc *)n)->attrs, TIR_Ann, "attrs");
      break;
    }
    default: break;
  }
#undef CHECK_ARRAY
  return 0;
}
