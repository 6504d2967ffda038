/* narrow_shared_allocations.c -- moves every shared-memory Allocate down to the statements
 * that use its buffer (TVM's StorageRewrite also places allocations at their uses before it
 * reuses memory).  plan_buffer_allocation puts an allocation at the lowest common ancestor of
 * its uses, so buffers used one after the other in one sequence still nest:
 *     allocate C_stage { allocate A_tile { allocate B_tile { seq(main loop; stage C; epilogue) }}}
 * Here C_stage moves into the sequence, around the statements that touch it, and A/B move
 * around the main loop; the two groups become siblings, whose bytes the dynamic shared memory
 * plan (shared_memory_plan.c) lets them share:
 *     seq(allocate A_tile { allocate B_tile { main loop }}; allocate C_stage { seq(stage C; epilogue) })
 * Semantics are unchanged (an allocation's contents are undefined at its start); the pass
 * runs last, after thread_sync. */
#include "pass_util.h"
#include "tir/scope.h"
#include "tir/transform.h"

/* s with `a` (an Allocate whose body is to be replaced) wrapped as tightly as possible around
 * the parts of s that use the buffer's data variable */
static tir_Node *sink(const tir_Allocate *a, const tir_Node *s) {
  const tir_Var *data = a->buffer->data;
  if (s->kind == TIR_SeqStmt) {
    const tir_Array *seq = ((const tir_SeqStmt *)s)->seq;
    int first = -1, last = -1;
    for (int i = 0; i < seq->size; i++)
      if (tir_uses_var(seq->items[i], data)) {
        if (first < 0) first = i;
        last = i;
      }
    if (first >= 0 && (first > 0 || last < seq->size - 1)) {
      tir_Node *inner;
      if (first == last) {
        inner = sink(a, seq->items[first]);
      } else {
        tir_Array *part = tir_array_new(last - first + 1);
        for (int i = first; i <= last; i++) part->items[i - first] = R((tir_Node *)seq->items[i]);
        tir_Node *ps = tir_seq(part);
        inner = tir_allocate((tir_Buffer *)R(&a->buffer->hdr), ps);
      }
      tir_Array *out = tir_array_new(seq->size - (last - first));
      int k = 0;
      for (int i = 0; i < first; i++) out->items[k++] = R((tir_Node *)seq->items[i]);
      out->items[k++] = inner;
      for (int i = last + 1; i < seq->size; i++) out->items[k++] = R((tir_Node *)seq->items[i]);
      return tir_seq(out);
    }
  } else if (s->kind == TIR_Allocate) {
    /* through another allocation (unless its extents read the buffer: they cannot, constants) */
    const tir_Allocate *b = (const tir_Allocate *)s;
    if (!tir_uses_var(&b->buffer->hdr, data)) {
      tir_Allocate *nb = (tir_Allocate *)tir_node_copy(s);
      tir_release(nb->body);
      nb->body = sink(a, b->body);
      return &nb->hdr;
    }
  } else if (s->kind == TIR_AttrStmt) {
    const tir_AttrStmt *t = (const tir_AttrStmt *)s;
    if (!(t->node && tir_uses_var(t->node, data)) && !(t->value && tir_uses_var(t->value, data))) {
      tir_AttrStmt *nt = (tir_AttrStmt *)tir_node_copy(s);
      tir_release(nt->body);
      nt->body = sink(a, t->body);
      return &nt->hdr;
    }
  }
  return tir_allocate((tir_Buffer *)R(&a->buffer->hdr), R((tir_Node *)s));
}

static tir_Node *mut(const tir_Node *n, void *p) {
  if (tir_is_expr(n)) return tir_retain(n);
  if (n->kind != TIR_Allocate) return NULL;
  const tir_Allocate *a = (const tir_Allocate *)n;
  tir_Node *body = tir_mutate(a->body, mut, p);
  if (!body) return TIR_MUTATE_ERROR;
  if (!tir_scope_is_shared(a->buffer->scope)) {
    if (body == a->body) {
      tir_release(body);
      return tir_retain(n);
    }
    return tir_allocate((tir_Buffer *)R(&a->buffer->hdr), body);
  }
  tir_Node *out = sink(a, body);
  tir_release(body);
  return out;
}

tir_PrimFunc *tir_pass_narrow_shared_allocations(const tir_PrimFunc *f) { return pass_with_body(f, tir_mutate(f->body, mut, NULL)); }
