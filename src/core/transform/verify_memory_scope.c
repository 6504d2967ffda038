/* verify_memory_scope.c -- checks, after plan_buffer_allocation has placed every
 * allocation at the lowest common ancestor of its accesses, that no thread-private
 * buffer is shared by thread indices in the IR (in the spirit of TVM's VerifyMemory /
 * VerifyGPUCode, which reject host or cross-thread uses of device memory).
 *
 * The IR reads as if every thread-bound loop ran serially, so a buffer allocated above
 * such a loop is one buffer for all its iterations.  On the GPU a "local" buffer exists
 * once per thread and a "shared" one once per thread block: a value written in one
 * iteration of a loop bound to threadIdx (local) or blockIdx (local, shared) and read in
 * another would be lost.  So a local buffer must be allocated inside every thread-bound
 * loop around its accesses, and a shared buffer inside every blockIdx loop (threadIdx
 * loops below a shared allocation are the point of shared memory).  Schedules get there
 * with compute_at / reverse_compute_at of the producers and consumers of the buffer. */
#include <stdlib.h>
#include <string.h>

#include "pass_util.h"

#define MAXD 512

typedef struct {
  const tir_Buffer *buf;
  int depth; /* index in the stack of the block that allocates it */
} Alloc;

typedef struct {
  const tir_PrimFunc *func;
  const tir_Node *stack[MAXD]; /* For and Block ancestors */
  int sp;
  Alloc *allocs;
  int n, cap;
  int failed;
} V;

/* Whether the iterations of a loop bound to `tag` get separate copies of a buffer in
 * `scope`: any thread tag for local (and wmma fragments), blockIdx for shared, blockIdx
 * and threadIdx.y/z for warp, none for global. */
static int splits_storage(const char *scope, const char *tag) {
  int block = strncmp(tag, "blockIdx.", 9) == 0;
  if (strcmp(scope, "global") == 0 || scope[0] == '\0') return 0;
  if (strncmp(scope, "shared", 6) == 0) return block;
  if (strcmp(scope, "warp") == 0) return block || strcmp(tag, "threadIdx.y") == 0 || strcmp(tag, "threadIdx.z") == 0;
  return 1; /* local, wmma.*, anything narrower */
}

static void access(V *v, const tir_Buffer *b) {
  if (v->failed) return;
  int a = -1;
  for (int i = v->n - 1; i >= 0; i--)
    if (v->allocs[i].buf == b) {
      a = i;
      break;
    }
  if (a < 0) return; /* a parameter */
  for (int k = v->allocs[a].depth + 1; k < v->sp; k++) {
    const tir_Node *s = v->stack[k];
    if (s->kind != TIR_For) continue;
    const tir_For *f = (const tir_For *)s;
    if (f->kind != TIR_FOR_THREAD_BINDING || !splits_storage(b->scope, f->thread_tag)) continue;
    tir_error_set(TIR_ERR_LOWER, "verify_memory_scope",
                  "buffer %s has scope '%s', so each %s has its own copy, but it is allocated outside loop %s, which is "
                  "bound to %s and accesses it: values cannot pass between the iterations of that loop. Compute its "
                  "producers and consumers under the same thread loops (compute_at / reverse_compute_at), or use a "
                  "wider scope",
                  b->name, b->scope, strncmp(b->scope, "shared", 6) == 0 ? "thread block" : "thread",
                  f->loop_var->name, f->thread_tag);
    tir_error_set_ir(&v->func->hdr);
    tir_error_mark(s, "this loop");
    v->failed = 1;
    return;
  }
}

static int expr_fn(const tir_Node *n, void *p) {
  V *v = p;
  if (n->kind == TIR_BufferLoad) access(v, ((const tir_BufferLoad *)n)->buffer);
  return v->failed;
}

static void walk(V *v, const tir_Node *n);

static void walk_expr(V *v, const tir_Node *e) {
  if (e) tir_visit(e, expr_fn, v);
}

static void push(V *v, const tir_Node *n) {
  if (v->sp < MAXD) v->stack[v->sp] = n;
  v->sp++;
}

static void walk(V *v, const tir_Node *n) {
  if (!n || v->failed) return;
  switch (n->kind) {
    case TIR_SeqStmt: {
      const tir_Array *a = ((const tir_SeqStmt *)n)->seq;
      for (int i = 0; i < a->size; i++) walk(v, a->items[i]);
      return;
    }
    case TIR_For: {
      const tir_For *f = (const tir_For *)n;
      walk_expr(v, f->min);
      walk_expr(v, f->extent);
      push(v, n);
      walk(v, f->body);
      v->sp--;
      return;
    }
    case TIR_BlockRealize: {
      const tir_BlockRealize *br = (const tir_BlockRealize *)n;
      for (int i = 0; i < br->iter_values->size; i++) walk_expr(v, br->iter_values->items[i]);
      walk_expr(v, br->predicate);
      const tir_Block *b = br->block;
      int saved = v->n;
      for (int i = 0; i < b->alloc_buffers->size; i++) {
        if (v->n == v->cap) {
          v->cap = v->cap ? v->cap * 2 : 16;
          v->allocs = realloc(v->allocs, sizeof(Alloc) * (size_t)v->cap);
        }
        v->allocs[v->n].buf = (const tir_Buffer *)b->alloc_buffers->items[i];
        v->allocs[v->n].depth = v->sp < MAXD ? v->sp : MAXD - 1;
        v->n++;
      }
      push(v, &b->hdr);
      walk(v, b->init);
      walk(v, b->body);
      v->sp--;
      v->n = saved;
      return;
    }
    case TIR_BufferStore: {
      const tir_BufferStore *s = (const tir_BufferStore *)n;
      access(v, s->buffer);
      walk_expr(v, s->value);
      for (int i = 0; i < s->indices->size; i++) walk_expr(v, s->indices->items[i]);
      return;
    }
    case TIR_IfThenElse:
      walk_expr(v, ((const tir_IfThenElse *)n)->cond);
      walk(v, ((const tir_IfThenElse *)n)->then_case);
      walk(v, ((const tir_IfThenElse *)n)->else_case);
      return;
    case TIR_LetStmt:
      walk_expr(v, ((const tir_LetStmt *)n)->value);
      walk(v, ((const tir_LetStmt *)n)->body);
      return;
    case TIR_AttrStmt:
      walk_expr(v, ((const tir_AttrStmt *)n)->value);
      walk(v, ((const tir_AttrStmt *)n)->body);
      return;
    case TIR_Allocate: walk(v, ((const tir_Allocate *)n)->body); return;
    case TIR_Evaluate: walk_expr(v, ((const tir_Evaluate *)n)->value); return;
    default: return;
  }
}

tir_PrimFunc *tir_pass_verify_memory_scope(const tir_PrimFunc *f) {
  V v;
  memset(&v, 0, sizeof v);
  v.func = f;
  walk(&v, f->body);
  free(v.allocs);
  if (v.failed) return NULL;
  return (tir_PrimFunc *)tir_retain(f);
}
