/* shared_memory_plan.c -- where each shared buffer of a kernel lives in its dynamic shared
 * memory (TVM's MergeDynamicSharedMemoryAllocations does this with liveness; here the
 * liveness is the allocation's scope, which narrow_shared_allocations made tight).
 *
 * Allocations are placed like a stack: an Allocate takes the bytes from the end of its
 * enclosing allocations up, and gives them back when its body ends, so two sibling
 * allocations (one used after the other) share bytes.  A buffer placed on bytes that an
 * earlier, finished allocation used gets a barrier (__syncthreads) before its body: threads
 * may still read the old buffer when others start writing the new one.  The barrier needs
 * every thread of the block to reach it, and a loop would need another one before the next
 * iteration reuses the first buffer, so under a loop or a condition nothing is reused (the
 * buffer goes above every byte handed out so far).  Both split_host_device (the launch's
 * byte count) and the CUDA codegen (the offsets) read this one plan.  The shared operands of
 * TMA copies start at a multiple of TIR_TMA_SMEM_ALIGN (include/tir/tma.h). */
#include <stdlib.h>
#include <string.h>

#include "pass_util.h"
#include "tir/scope.h"
#include "tir/tma.h"
#include "tir/transform.h"

typedef struct {
  tir_SharedPlan *p;
  int64_t hwm; /* end of every byte handed out so far */
  int cap;
  tir_Array *tma; /* data vars of TMA operands (owned) */
} PlanCtx;

/* shared buffers that TMA copies (ptx_tma_load[_multicast|_im2col] / ptx_tma_store) write or read */
static int tma_operand_fn(const tir_Node *n, void *p) {
  tir_Array **set = p;
  if (n->kind != TIR_Call) return 0;
  const tir_Call *c = (const tir_Call *)n;
  int pos = strcmp(c->op, "ptx_tma_load") == 0 || strcmp(c->op, "ptx_tma_load_multicast") == 0 ||
                    strcmp(c->op, "ptx_tma_load_im2col") == 0
                ? 0
            : strcmp(c->op, "ptx_tma_store") == 0                                                ? 1
                                                                                                 : -1;
  if (pos < 0 || c->args->size <= pos) return 0;
  const tir_BufferLoad *l = tir_address_of_load(c->args->items[pos]);
  if (!l) return 0;
  for (int i = 0; i < (*set)->size; i++)
    if ((*set)->items[i] == &l->buffer->data->hdr) return 0;
  *set = tir_array_push(*set, tir_retain(l->buffer->data));
  return 0;
}

tir_Array *tir_tma_shared_operands(const tir_Node *region) {
  tir_Array *set = tir_array_empty();
  tir_visit(region, tma_operand_fn, &set);
  return set;
}

/* tir_shared_slice_align's rule (lines, swizzle repeats), with the TMA operands found here */
static int64_t slot_align(const PlanCtx *c, const tir_Buffer *b) {
  int64_t al = tir_shared_slice_align(NULL, b);
  for (int i = 0; i < c->tma->size; i++)
    if (c->tma->items[i] == &b->data->hdr && al < TIR_TMA_SMEM_ALIGN) al = TIR_TMA_SMEM_ALIGN;
  return al;
}

static void add(PlanCtx *c, const tir_Allocate *a, int64_t off, int barrier) {
  tir_SharedPlan *p = c->p;
  if (p->n == c->cap) {
    c->cap = c->cap ? 2 * c->cap : 8;
    p->slots = realloc(p->slots, sizeof *p->slots * (size_t)c->cap);
  }
  p->slots[p->n++] = (tir_SharedSlot){a, off, barrier};
}

static void walk(PlanCtx *c, const tir_Node *s, int64_t base, int no_reuse);

static void walk_children(PlanCtx *c, const tir_Node *s, int64_t base, int no_reuse) {
  switch (s->kind) {
  case TIR_SeqStmt: {
    const tir_Array *a = ((const tir_SeqStmt *)s)->seq;
    for (int i = 0; i < a->size; i++) walk(c, a->items[i], base, no_reuse);
    break;
  }
  case TIR_For: walk(c, ((const tir_For *)s)->body, base, 1); break;
  case TIR_IfThenElse: {
    const tir_IfThenElse *t = (const tir_IfThenElse *)s;
    walk(c, t->then_case, base, 1);
    if (t->else_case) walk(c, t->else_case, base, 1);
    break;
  }
  case TIR_LetStmt: walk(c, ((const tir_LetStmt *)s)->body, base, no_reuse); break;
  case TIR_AttrStmt: walk(c, ((const tir_AttrStmt *)s)->body, base, no_reuse); break;
  case TIR_DeclBuffer: walk(c, ((const tir_DeclBuffer *)s)->body, base, no_reuse); break;
  case TIR_Allocate: walk(c, ((const tir_Allocate *)s)->body, base, no_reuse); break;
  default: break;
  }
}

static void walk(PlanCtx *c, const tir_Node *s, int64_t base, int no_reuse) {
  if (!s) return;
  if (s->kind == TIR_Allocate) {
    const tir_Allocate *a = (const tir_Allocate *)s;
    tir_Scope sc = tir_scope_parse(a->buffer->scope);
    if (sc.rank == TIR_SCOPE_SHARED) {
      int64_t bytes = tir_shared_slice_bytes(a->buffer);
      if (bytes < 0) {
        c->p->unknown = 1;
        bytes = 0;
      }
      if (strcmp(sc.tag, ".dyn") == 0) c->p->any_dyn = 1;
      c->p->sum += bytes;
      int64_t off = no_reuse && c->hwm > base ? c->hwm : base, al = slot_align(c, a->buffer);
      off = (off + al - 1) / al * al;
      int barrier = off < c->hwm; /* bytes an earlier, finished allocation used */
      add(c, a, off, barrier);
      int64_t end = off + bytes;
      if (end > c->hwm) c->hwm = end;
      if (end > c->p->bytes) c->p->bytes = end;
      walk(c, a->body, end, no_reuse);
      return;
    }
  }
  walk_children(c, s, base, no_reuse);
}

void tir_shared_plan(const tir_Node *region, tir_SharedPlan *out) {
  memset(out, 0, sizeof *out);
  PlanCtx c = {out, 0, 0, tir_tma_shared_operands(region)};
  walk(&c, region, 0, 0);
  tir_release(c.tma);
}

const tir_SharedSlot *tir_shared_plan_find(const tir_SharedPlan *p, const tir_Node *alloc) {
  for (int i = 0; i < p->n; i++)
    if (&p->slots[i].alloc->hdr == alloc) return &p->slots[i];
  return NULL;
}

void tir_shared_plan_free(tir_SharedPlan *p) {
  free(p->slots);
  memset(p, 0, sizeof *p);
}
