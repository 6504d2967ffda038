/* functor.c -- generic pre-order visit and copy-on-change mutation over node fields,
 * and the substitutions built on them. */
#include <stdlib.h>
#include <string.h>

#include "tir/error.h"
#include "tir/ir.h"

tir_Node tir_mutate_error_sentinel;

void tir_visit(const tir_Node *n, tir_VisitFn fn, void *ctx) {
  if (!n) return;
  if (n->kind == TIR_Array) {
    const tir_Array *a = (const tir_Array *)n;
    for (int i = 0; i < a->size; i++) tir_visit(a->items[i], fn, ctx);
    return;
  }
  if (fn(n, ctx)) return;
  const tir_KindInfo *ki = tir_kind_info(n->kind);
  for (int i = 0; i < ki->n_fields; i++)
    if (ki->fields[i].type == TIR_FT_NODE) tir_visit(*(tir_Node **)((char *)n + ki->fields[i].offset), fn, ctx);
}

tir_Node *tir_mutate(const tir_Node *n, tir_MutateFn fn, void *ctx) {
  if (!n) return NULL;
  if (n->kind != TIR_Array) {
    tir_Node *r = fn(n, ctx);
    if (r == TIR_MUTATE_ERROR) return NULL;
    if (r) return r;
  }
  return tir_mutate_children(n, fn, ctx);
}

tir_Node *tir_mutate_children(const tir_Node *n, tir_MutateFn fn, void *ctx) {
  if (n->kind == TIR_Array) {
    const tir_Array *a = (const tir_Array *)n;
    tir_Array *out = NULL;
    for (int i = 0; i < a->size; i++) {
      tir_Node *c = a->items[i];
      tir_Node *m = c ? tir_mutate(c, fn, ctx) : NULL;
      if (c && !m) {
        tir_release(out);
        return NULL;
      }
      if (m != c && !out) {
        out = tir_array_new(a->size);
        out->hdr.dtype = a->hdr.dtype;
        for (int j = 0; j < i; j++) out->items[j] = tir_retain(a->items[j]);
      }
      if (out) out->items[i] = m;
      else tir_release(m);
    }
    return out ? &out->hdr : tir_retain(n);
  }
  const tir_KindInfo *ki = tir_kind_info(n->kind);
  tir_Node *copy = NULL;
  for (int i = 0; i < ki->n_fields; i++) {
    if (ki->fields[i].type != TIR_FT_NODE) continue;
    size_t off = ki->fields[i].offset;
    tir_Node *c = *(tir_Node **)((char *)n + off);
    if (!c) continue;
    tir_Node *m = tir_mutate(c, fn, ctx);
    if (!m) {
      tir_release(copy);
      return NULL;
    }
    if (m == c) {
      tir_release(m);
      continue;
    }
    if (!copy) copy = tir_node_copy(n);
    tir_Node **slot = (tir_Node **)((char *)copy + off);
    tir_release(*slot);
    *slot = m;
  }
  if (!copy) return tir_retain(n);
  if (copy->kind == TIR_SeqStmt) {
    /* a rewritten item may itself be a sequence: keep sequences flat */
    tir_Array *items = ((tir_SeqStmt *)copy)->seq;
    int nested = 0;
    for (int i = 0; i < items->size; i++) nested |= items->items[i] && items->items[i]->kind == TIR_SeqStmt;
    if (nested) {
      tir_Node *flat = tir_seq((tir_Array *)tir_retain(items));
      tir_release(copy);
      return flat;
    }
  }
  if (tir_is_expr(copy)) tir_node_update_depth(copy);
  /* Keep derived dtypes in sync when a child's type changed (e.g. a load's lanes). */
  if (copy->kind == TIR_BufferLoad) {
    tir_BufferLoad *l = (tir_BufferLoad *)copy;
    int lanes = 1;
    for (int i = 0; i < l->indices->size; i++)
      if (l->indices->items[i]->dtype.lanes > 1) lanes = l->indices->items[i]->dtype.lanes;
    copy->dtype = tir_dtype_with_lanes(l->buffer->hdr.dtype, l->buffer->hdr.dtype.lanes * lanes);
  } else if (copy->kind == TIR_Let) {
    copy->dtype = ((tir_Let *)copy)->body->dtype;
  }
  return copy;
}

/* ---- substitution ---- */
typedef struct {
  int n;
  tir_Var *const *vars;
  tir_Node *const *values;
} SubstCtx;

static tir_Node *subst_fn(const tir_Node *n, void *p) {
  SubstCtx *c = p;
  if (n->kind == TIR_Var) {
    for (int i = 0; i < c->n; i++)
      if ((const tir_Node *)c->vars[i] == n) return tir_retain(c->values[i]);
    return tir_retain(n);
  }
  /* Leaves, and buffers (whose identity must survive), are returned as they are. */
  if (n->kind == TIR_IntImm || n->kind == TIR_FloatImm || n->kind == TIR_StringImm || n->kind == TIR_Buffer)
    return tir_retain(n);
  return NULL;
}

tir_Node *tir_substitute(const tir_Node *root, int n, tir_Var *const *vars, tir_Node *const *values) {
  if (n == 0) return tir_retain(root);
  SubstCtx c = {n, vars, values};
  return tir_mutate(root, subst_fn, &c);
}

typedef struct {
  int n;
  tir_Buffer *const *from;
  tir_Buffer *const *to;
} BufSubstCtx;

static tir_Node *bufsubst_fn(const tir_Node *n, void *p) {
  BufSubstCtx *c = p;
  if (n->kind == TIR_Buffer) {
    for (int i = 0; i < c->n; i++)
      if ((const tir_Node *)c->from[i] == n) return tir_retain(c->to[i]);
    return tir_retain(n);
  }
  if (n->kind == TIR_Var || n->kind == TIR_IntImm || n->kind == TIR_FloatImm) return tir_retain(n);
  return NULL;
}

tir_Node *tir_substitute_buffers(const tir_Node *root, int n, tir_Buffer *const *from,
                                 tir_Buffer *const *to) {
  if (n == 0) return tir_retain(root);
  BufSubstCtx c = {n, from, to};
  return tir_mutate(root, bufsubst_fn, &c);
}

typedef struct {
  const tir_Node *target;
  tir_Node *repl;
  int found;
} ReplaceCtx;

static tir_Node *replace_fn(const tir_Node *n, void *p) {
  ReplaceCtx *c = p;
  if (n == c->target) {
    c->found = 1;
    return tir_retain(c->repl);
  }
  /* Expressions never contain statements: skip them. */
  if (tir_is_expr(n) || n->kind == TIR_Buffer || n->kind == TIR_BufferRegion || n->kind == TIR_IterVar ||
      n->kind == TIR_Range)
    return tir_retain(n);
  return NULL;
}

tir_Node *tir_replace_stmt(const tir_Node *root, const tir_Node *target, tir_Node *repl) {
  ReplaceCtx c = {target, repl, 0};
  tir_Node *r = tir_mutate(root, replace_fn, &c);
  tir_release(repl);
  return r;
}

typedef struct {
  int nvars;
  tir_Var *const *vars;
  int found;
} UsesCtx;

static int uses_fn(const tir_Node *n, void *p) {
  UsesCtx *c = p;
  if (c->found) return 1;
  if (n->kind == TIR_Var) {
    for (int i = 0; i < c->nvars; i++)
      if ((const tir_Node *)c->vars[i] == n) c->found = 1;
    return 1;
  }
  return 0;
}

int tir_uses_any_var(const tir_Node *n, int nvars, tir_Var *const *vars) {
  UsesCtx c = {nvars, vars, 0};
  tir_visit(n, uses_fn, &c);
  return c.found;
}

int tir_uses_var(const tir_Node *n, const tir_Var *var) {
  tir_Var *v = (tir_Var *)var;
  return tir_uses_any_var(n, 1, &v);
}

tir_Array *tir_view_source_indices(const tir_BufferRegion *src, const tir_Array *idx) {
  const tir_Array *reg = src->region;
  int lead = reg->size - idx->size;
  tir_Array *out = tir_array_new(reg->size);
  for (int d = 0; d < reg->size; d++) {
    const tir_Node *mn = ((const tir_Range *)reg->items[d])->min;
    if (d < lead) {
      out->items[d] = R((tir_Node *)mn);
    } else {
      const tir_Node *ix = idx->items[d - lead];
      tir_Node *m = ix->dtype.lanes > 1 ? tir_broadcast(R((tir_Node *)mn), ix->dtype.lanes) : R((tir_Node *)mn);
      out->items[d] = tir_add(m, R((tir_Node *)ix));
    }
  }
  return out;
}
