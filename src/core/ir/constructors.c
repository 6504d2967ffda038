/* constructors.c -- raw node constructors (no folding, no type promotion; see op.c for
 * the user-facing arithmetic).  Every constructor steals its node arguments. */
#include <stdlib.h>
#include <string.h>

#include "tir/error.h"
#include "tir/ir.h"
#include "tir/strbuf.h"

#define NEW(K, dt) ((tir_##K *)tir_node_alloc(TIR_##K, (dt)))

tir_Node *tir_int_imm(tir_DType t, int64_t v) {
  /* Wrap to the type's width so constants always hold representable values. */
  if (t.code == TIR_DT_BOOL) v = v != 0;
  else if (t.code == TIR_DT_INT && t.bits < 64) {
    uint64_t m = (1ull << t.bits) - 1, u = (uint64_t)v & m;
    if (u >> (t.bits - 1)) u |= ~m;
    v = (int64_t)u;
  } else if (t.code == TIR_DT_UINT && t.bits < 64) {
    v = (int64_t)((uint64_t)v & ((1ull << t.bits) - 1));
  }
  tir_IntImm *n = NEW(IntImm, t);
  n->value = v;
  return &n->hdr;
}

tir_Node *tir_float_imm(tir_DType t, double v) {
  tir_FloatImm *n = NEW(FloatImm, t);
  if (t.code == TIR_DT_FLOAT && t.bits == 32) v = (float)v;
  else if (t.code == TIR_DT_FLOAT && t.bits == 16) v = tir_f16_to_f32(tir_f32_to_f16((float)v));
  else if (t.code == TIR_DT_BFLOAT) v = tir_bf16_to_f32(tir_f32_to_bf16((float)v));
  n->value = v;
  return &n->hdr;
}

tir_Node *tir_string_imm(const char *s) {
  tir_StringImm *n = NEW(StringImm, TIR_HANDLE);
  tir_node_set_str(&n->value, s);
  return &n->hdr;
}

tir_Var *tir_var_new(const char *name, tir_DType t) {
  tir_Var *v = NEW(Var, t);
  tir_node_set_str(&v->name, name);
  return v;
}

static int is_compare_or_logic(int kind) {
  return kind == TIR_EQ || kind == TIR_NE || kind == TIR_LT || kind == TIR_LE || kind == TIR_GT ||
         kind == TIR_GE || kind == TIR_And || kind == TIR_Or;
}

tir_Node *tir_binary_raw(int kind, tir_Node *a, tir_Node *b) {
  tir_DType t = a->dtype;
  if (is_compare_or_logic(kind)) t = tir_dtype(TIR_DT_BOOL, 1, a->dtype.lanes);
  /* All binary kinds share the {hdr, a, b} layout. */
  tir_Add *n = (tir_Add *)tir_node_alloc(kind, t);
  n->a = a;
  n->b = b;
  tir_node_update_depth(&n->hdr);
  return &n->hdr;
}

tir_Node *tir_cast_raw(tir_DType t, tir_Node *v) {
  tir_Cast *n = NEW(Cast, t);
  n->value = v;
  tir_node_update_depth(&n->hdr);
  return &n->hdr;
}

tir_Node *tir_buffer_load(tir_Buffer *buf, tir_Array *indices) {
  int lanes = 1;
  for (int i = 0; i < indices->size; i++)
    if (indices->items[i]->dtype.lanes > 1) lanes = indices->items[i]->dtype.lanes;
  tir_BufferLoad *n = NEW(BufferLoad, tir_dtype_with_lanes(buf->hdr.dtype, buf->hdr.dtype.lanes * lanes));
  n->buffer = buf;
  n->indices = indices;
  tir_node_update_depth(&n->hdr);
  return &n->hdr;
}

tir_Node *tir_call(tir_DType t, const char *op, tir_Array *args) {
  tir_Call *n = NEW(Call, t);
  tir_node_set_str(&n->op, op);
  n->args = args ? args : tir_array_empty();
  tir_node_update_depth(&n->hdr);
  return &n->hdr;
}

tir_Node *tir_ramp(tir_Node *base, tir_Node *stride, int lanes) {
  tir_Ramp *n = NEW(Ramp, tir_dtype_with_lanes(base->dtype, lanes));
  n->base = base;
  n->stride = stride;
  n->lanes = lanes;
  tir_node_update_depth(&n->hdr);
  return &n->hdr;
}

tir_Node *tir_broadcast(tir_Node *value, int lanes) {
  tir_Broadcast *n = NEW(Broadcast, tir_dtype_with_lanes(value->dtype, lanes));
  n->value = value;
  n->lanes = lanes;
  tir_node_update_depth(&n->hdr);
  return &n->hdr;
}

tir_Node *tir_let(tir_Var *var, tir_Node *value, tir_Node *body) {
  tir_Let *n = NEW(Let, body->dtype);
  n->var = var;
  n->value = value;
  n->body = body;
  tir_node_update_depth(&n->hdr);
  return &n->hdr;
}

tir_Node *tir_reduce(const char *combiner, tir_Node *source, tir_Array *axis, tir_Node *condition) {
  tir_Reduce *n = NEW(Reduce, source->dtype);
  tir_node_set_str(&n->combiner, combiner);
  n->source = source;
  n->axis = axis ? axis : tir_array_empty();
  n->condition = condition ? condition : tir_bool_imm(1);
  tir_node_update_depth(&n->hdr);
  return &n->hdr;
}

tir_Node *tir_buffer_store(tir_Buffer *buf, tir_Node *value, tir_Array *indices) {
  tir_BufferStore *n = NEW(BufferStore, TIR_VOID);
  n->buffer = buf;
  n->value = value;
  n->indices = indices;
  return &n->hdr;
}

tir_Node *tir_for(tir_Var *v, tir_Node *min, tir_Node *extent, int kind, const char *thread_tag,
                  tir_Array *annotations, tir_Node *body) {
  tir_For *n = NEW(For, TIR_VOID);
  n->loop_var = v;
  n->min = min;
  n->extent = extent;
  n->kind = kind;
  tir_node_set_str(&n->thread_tag, thread_tag ? thread_tag : "");
  n->annotations = annotations ? annotations : tir_array_empty();
  n->body = body;
  return &n->hdr;
}

tir_Node *tir_seq(tir_Array *stmts) {
  int total = 0;
  for (int i = 0; i < stmts->size; i++) {
    tir_Node *s = stmts->items[i];
    if (!s) continue;
    total += s->kind == TIR_SeqStmt ? ((tir_SeqStmt *)s)->seq->size : 1;
  }
  tir_Array *flat = tir_array_new(total);
  int k = 0;
  for (int i = 0; i < stmts->size; i++) {
    tir_Node *s = stmts->items[i];
    if (!s) continue;
    if (s->kind == TIR_SeqStmt) {
      tir_Array *inner = ((tir_SeqStmt *)s)->seq;
      for (int j = 0; j < inner->size; j++) flat->items[k++] = tir_retain(inner->items[j]);
    } else {
      flat->items[k++] = tir_retain(s);
    }
  }
  tir_release(stmts);
  if (total == 1) {
    tir_Node *only = tir_retain(flat->items[0]);
    tir_release(flat);
    return only;
  }
  if (total == 0) {
    tir_release(flat);
    return tir_evaluate(tir_i32(0));
  }
  tir_SeqStmt *n = NEW(SeqStmt, TIR_VOID);
  n->seq = flat;
  return &n->hdr;
}

tir_Node *tir_seq2(tir_Node *a, tir_Node *b) { return tir_seq(tir_array_of(2, a, b)); }

tir_Node *tir_if(tir_Node *cond, tir_Node *then_case, tir_Node *else_case) {
  tir_IfThenElse *n = NEW(IfThenElse, TIR_VOID);
  n->cond = cond;
  n->then_case = then_case;
  n->else_case = else_case;
  return &n->hdr;
}

tir_Node *tir_let_stmt(tir_Var *var, tir_Node *value, tir_Node *body) {
  tir_LetStmt *n = NEW(LetStmt, TIR_VOID);
  n->var = var;
  n->value = value;
  n->body = body;
  return &n->hdr;
}

tir_Node *tir_attr_stmt(tir_Node *node, const char *key, tir_Node *value, tir_Node *body) {
  tir_AttrStmt *n = NEW(AttrStmt, TIR_VOID);
  n->node = node;
  tir_node_set_str(&n->key, key);
  n->value = value;
  n->body = body;
  return &n->hdr;
}

tir_Node *tir_evaluate(tir_Node *value) {
  tir_Evaluate *n = NEW(Evaluate, TIR_VOID);
  n->value = value;
  return &n->hdr;
}

tir_Node *tir_allocate(tir_Buffer *buf, tir_Node *body) {
  tir_Allocate *n = NEW(Allocate, TIR_VOID);
  n->buffer = buf;
  n->body = body;
  return &n->hdr;
}

tir_Node *tir_decl_buffer(tir_Buffer *buf, tir_Node *body) {
  tir_DeclBuffer *n = NEW(DeclBuffer, TIR_VOID);
  n->buffer = buf;
  n->body = body;
  return &n->hdr;
}

static int64_t next_block_uid = 1;

tir_Block *tir_block_new(const char *name, tir_Array *iter_vars, tir_Array *reads, tir_Array *writes,
                         tir_Node *init, tir_Array *alloc_buffers, tir_Array *match_buffers,
                         tir_Array *annotations, tir_Node *body) {
  tir_Block *n = NEW(Block, TIR_VOID);
  tir_node_set_str(&n->name, name);
  n->iter_vars = iter_vars ? iter_vars : tir_array_empty();
  n->reads = reads ? reads : tir_array_empty();
  n->writes = writes ? writes : tir_array_empty();
  n->init = init;
  n->alloc_buffers = alloc_buffers ? alloc_buffers : tir_array_empty();
  n->match_buffers = match_buffers ? match_buffers : tir_array_empty();
  n->annotations = annotations ? annotations : tir_array_empty();
  n->body = body;
  n->uid = next_block_uid++;
  return n;
}

tir_Node *tir_block_realize(tir_Array *iter_values, tir_Node *predicate, tir_Block *block) {
  tir_BlockRealize *n = NEW(BlockRealize, TIR_VOID);
  n->iter_values = iter_values ? iter_values : tir_array_empty();
  n->predicate = predicate ? predicate : tir_bool_imm(1);
  n->block = block;
  return &n->hdr;
}

tir_Range *tir_range(tir_Node *min, tir_Node *extent) {
  tir_Range *n = NEW(Range, TIR_VOID);
  n->min = min;
  n->extent = extent;
  return n;
}

tir_IterVar *tir_iter_var(tir_Var *var, tir_Range *dom, int iter_type, const char *thread_tag) {
  tir_IterVar *n = NEW(IterVar, TIR_VOID);
  n->var = var;
  n->dom = dom;
  n->iter_type = iter_type;
  tir_node_set_str(&n->thread_tag, thread_tag ? thread_tag : "");
  return n;
}

tir_Buffer *tir_buffer_new(const char *name, tir_DType dtype, tir_Array *shape, tir_Array *strides,
                           tir_Node *elem_offset, const char *scope) {
  tir_Buffer *n = NEW(Buffer, dtype);
  tir_node_set_str(&n->name, name);
  n->data = tir_var_new(name, TIR_HANDLE);
  n->shape = shape;
  n->strides = strides ? strides : tir_array_empty();
  n->elem_offset = elem_offset ? elem_offset : tir_i32(0);
  tir_node_set_str(&n->scope, scope && *scope ? scope : "global");
  n->align = 64;
  n->offset_factor = 1;
  return n;
}

tir_BufferRegion *tir_buffer_region(tir_Buffer *buf, tir_Array *region) {
  tir_BufferRegion *n = NEW(BufferRegion, TIR_VOID);
  n->buffer = buf;
  n->region = region;
  return n;
}

tir_BufferRegion *tir_buffer_region_full(tir_Buffer *buf) {
  tir_Array *r = tir_array_new(buf->shape->size);
  for (int i = 0; i < buf->shape->size; i++)
    r->items[i] = &tir_range(tir_int_imm(buf->shape->items[i]->dtype, 0), R(buf->shape->items[i]))->hdr;
  return tir_buffer_region(R(buf), r);
}

tir_MatchBufferRegion *tir_match_buffer_region(tir_Buffer *buf, tir_BufferRegion *src) {
  tir_MatchBufferRegion *n = NEW(MatchBufferRegion, TIR_VOID);
  n->buffer = buf;
  n->source = src;
  return n;
}

tir_Ann *tir_ann(const char *key, tir_Node *value) {
  tir_Ann *n = NEW(Ann, TIR_VOID);
  tir_node_set_str(&n->key, key);
  n->value = value;
  return n;
}

tir_PrimFunc *tir_prim_func(const char *name, tir_Array *params, tir_Node *body, tir_Array *attrs) {
  tir_PrimFunc *n = NEW(PrimFunc, TIR_VOID);
  tir_node_set_str(&n->name, name);
  n->params = params;
  n->body = body;
  n->attrs = attrs ? attrs : tir_array_empty();
  return n;
}

tir_IRModule *tir_ir_module(tir_Array *functions) {
  tir_IRModule *n = NEW(IRModule, TIR_VOID);
  n->functions = functions;
  return n;
}

tir_ComputeOp *tir_compute_op(const char *name, tir_Array *axis, tir_Node *body, tir_Buffer *output) {
  tir_ComputeOp *n = NEW(ComputeOp, TIR_VOID);
  tir_node_set_str(&n->name, name);
  n->axis = axis;
  n->body = body;
  n->output = output;
  return n;
}

tir_Block *tir_block_with_body(const tir_Block *block, tir_Node *body) {
  tir_Block *b = (tir_Block *)tir_node_copy(&block->hdr);
  tir_release(b->body);
  b->body = body;
  return b;
}

int tir_is_const_int(const tir_Node *n, int64_t *v) {
  if (!n || n->kind != TIR_IntImm) return 0;
  if (v) *v = ((const tir_IntImm *)n)->value;
  return 1;
}

int tir_is_const_float(const tir_Node *n, double *v) {
  if (!n || n->kind != TIR_FloatImm) return 0;
  if (v) *v = ((const tir_FloatImm *)n)->value;
  return 1;
}

tir_Node *tir_ann_get(const tir_Array *anns, const char *key) {
  if (!anns) return NULL;
  for (int i = 0; i < anns->size; i++) {
    tir_Ann *a = (tir_Ann *)anns->items[i];
    if (a && strcmp(a->key, key) == 0) return a->value;
  }
  return NULL;
}

tir_Array *tir_ann_set(const tir_Array *anns, const char *key, tir_Node *value) {
  /* a new key goes before the first greater one: annotations are a map, kept in key order
   * as the T script builder makes them, so that print -> load is structurally equal */
  tir_Array *out = tir_array_empty();
  int placed = 0;
  for (int i = 0; anns && i < anns->size; i++) {
    tir_Ann *a = (tir_Ann *)anns->items[i];
    int c = strcmp(a->key, key);
    if (c == 0) continue; /* the old value of the key */
    if (!placed && c > 0) {
      out = tir_array_push(out, &tir_ann(key, R(value))->hdr);
      placed = 1;
    }
    out = tir_array_push(out, R(&a->hdr));
  }
  if (!placed) out = tir_array_push(out, &tir_ann(key, R(value))->hdr);
  tir_release(value);
  return out;
}

tir_Array *tir_ann_remove(const tir_Array *anns, const char *key) {
  tir_Array *out = tir_array_empty();
  for (int i = 0; anns && i < anns->size; i++) {
    tir_Ann *a = (tir_Ann *)anns->items[i];
    if (strcmp(a->key, key) != 0) out = tir_array_push(out, R(&a->hdr));
  }
  return out;
}
