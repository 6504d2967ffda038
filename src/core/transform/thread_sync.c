/* thread_sync.c -- inserts __syncthreads where one thread may read (or overwrite) shared
 * memory another thread wrote (or read) since the last barrier (TVM ThreadSync("shared"),
 * src/tir/transforms/thread_storage_sync.cc, at buffer granularity).
 *
 * Walking a sequence, the pass keeps the shared buffers read and written since the last
 * barrier; before a statement that reads a buffer written since then, or writes one read
 * or written since then, it inserts a barrier and starts afresh.  A loop body is analyzed
 * twice: the second time with what the previous iteration left, so a loop-carried
 * write-after-read (refilling a tile others still read) gets its barrier too.  Barriers
 * are only placed where every thread of the CTA arrives: never inside an if whose
 * condition or a loop whose bounds depend on threadIdx; such a statement is treated as
 * one unit and the barrier goes before it. */
#include <stdlib.h>
#include <string.h>

#include "pass_util.h"

#define MAXB 64

typedef struct {
  const tir_Node *r[MAXB], *w[MAXB]; /* data vars of shared buffers */
  int nr, nw;
} Acc;

typedef struct {
  const tir_Node *thread_vars[16];
  int n_thread;
  const tir_Node *stranded_wait; /* a ptx_wait_group where no barrier can follow it */
} Ctx;

/* cp.async data other threads copied is visible after their ptx_wait_group and a barrier
 * (TVM ThreadSyncAfterWaitQueueInserter): every wait is followed by a barrier, which also
 * serves the read-after-write of the consumer that follows it. */
static int is_wait(const tir_Node *s) {
  return s->kind == TIR_Evaluate && ((const tir_Evaluate *)s)->value->kind == TIR_Call &&
         strcmp(((const tir_Call *)((const tir_Evaluate *)s)->value)->op, "ptx_wait_group") == 0;
}

static int find_wait(const tir_Node *n, void *p) {
  if (!*(const tir_Node **)p && is_wait(n)) *(const tir_Node **)p = n;
  return 0;
}

static void add(const tir_Node **set, int *n, const tir_Node *x) {
  for (int i = 0; i < *n; i++)
    if (set[i] == x) return;
  if (*n < MAXB) set[(*n)++] = x;
}

static void merge(Acc *a, const Acc *b) {
  for (int i = 0; i < b->nr; i++) add(a->r, &a->nr, b->r[i]);
  for (int i = 0; i < b->nw; i++) add(a->w, &a->nw, b->w[i]);
}

static int meets(const tir_Node *const *x, int nx, const tir_Node *const *y, int ny) {
  for (int i = 0; i < nx; i++)
    for (int j = 0; j < ny; j++)
      if (x[i] == y[j]) return 1;
  return 0;
}

/* does statement access `acc` conflict with what happened since the last barrier?  A read
 * after another thread's write, or a write over what another thread may still read.  As in
 * TVM (thread_storage_sync.cc), two writes with no read between are not a hazard: the cooperative
 * copies of a tile write disjoint elements (at buffer granularity they would otherwise get a
 * barrier per iteration of the copy loop). */
static int conflicts(const Acc *state, const Acc *acc) {
  return meets(acc->r, acc->nr, state->w, state->nw) || meets(acc->w, acc->nw, state->r, state->nr);
}

static int is_shared(const tir_Buffer *b) { return strncmp(b->scope, "shared", 6) == 0; }

static int access_fn(const tir_Node *n, void *p) {
  Acc *a = p;
  if (n->kind == TIR_BufferLoad && is_shared(((const tir_BufferLoad *)n)->buffer))
    add(a->r, &a->nr, &((const tir_BufferLoad *)n)->buffer->data->hdr);
  if (n->kind == TIR_BufferStore && is_shared(((const tir_BufferStore *)n)->buffer))
    add(a->w, &a->nw, &((const tir_BufferStore *)n)->buffer->data->hdr);
  if (n->kind == TIR_Call) {
    /* builtins reading or writing shared memory through address_of (wmma_store, cp.async,
     * ...): an operand the builtin writes is a write only (not also a read, or consecutive
     * cp.async of a tile would get barriers between them); the others are reads */
    const tir_Call *c = (const tir_Call *)n;
    int addr_args = 0;
    for (int i = 0; i < c->args->size; i++) {
      const tir_Node *x = c->args->items[i];
      if (x->kind == TIR_Call && strcmp(((const tir_Call *)x)->op, "address_of") == 0 && ((const tir_Call *)x)->args->size == 1 &&
          ((const tir_Call *)x)->args->items[0]->kind == TIR_BufferLoad) {
        const tir_BufferLoad *l = (const tir_BufferLoad *)((const tir_Call *)x)->args->items[0];
        if (is_shared(l->buffer)) {
          if (tir_builtin_writes_arg(c->op, i)) add(a->w, &a->nw, &l->buffer->data->hdr);
          else add(a->r, &a->nr, &l->buffer->data->hdr);
        }
        for (int k = 0; k < l->indices->size; k++) tir_visit(l->indices->items[k], access_fn, a);
        addr_args = 1;
      } else {
        tir_visit(x, access_fn, a);
      }
    }
    if (addr_args) return 1; /* operands visited above */
  }
  if (n->kind == TIR_Evaluate) {
    const tir_Node *v = ((const tir_Evaluate *)n)->value;
    if (v->kind == TIR_Call && strcmp(((const tir_Call *)v)->op, "tvm_storage_sync") == 0) a->nr = a->nw = -1;
  }
  return 0;
}

static void accesses(const tir_Node *s, Acc *a) {
  memset(a, 0, sizeof *a);
  tir_visit(s, access_fn, a);
  if (a->nr < 0) a->nr = a->nw = 0; /* contains a barrier: treat as fresh (conservative enough here) */
}

static int thread_dependent(Ctx *c, const tir_Node *e) {
  for (int i = 0; i < c->n_thread; i++)
    if (tir_uses_var(e, (const tir_Var *)c->thread_vars[i])) return 1;
  return 0;
}

static tir_Node *sync_stmt(void) {
  return tir_evaluate(tir_call(TIR_INT32, "tvm_storage_sync", tir_array_of(1, tir_string_imm("shared"))));
}

/* Rewrites s with barriers; state is what happened since the last barrier (updated). */
static tir_Node *visit(Ctx *c, const tir_Node *s, Acc *state);

static tir_Node *visit_seq(Ctx *c, const tir_Node *const *items, int n, Acc *state) {
  tir_Array *out = tir_array_empty();
  for (int i = 0; i < n; i++) {
    Acc acc;
    accesses(items[i], &acc);
    /* a barrier before a conflicting statement, if that statement cannot take one inside */
    int compound = items[i]->kind == TIR_For || items[i]->kind == TIR_SeqStmt || items[i]->kind == TIR_LetStmt ||
                   items[i]->kind == TIR_AttrStmt || items[i]->kind == TIR_Allocate || items[i]->kind == TIR_IfThenElse;
    int uniform_inside = compound;
    if (items[i]->kind == TIR_IfThenElse && thread_dependent(c, ((const tir_IfThenElse *)items[i])->cond)) uniform_inside = 0;
    if (items[i]->kind == TIR_For) {
      const tir_For *f = (const tir_For *)items[i];
      if (thread_dependent(c, f->min) || thread_dependent(c, f->extent)) uniform_inside = 0;
    }
    /* a conflict with what came before is resolved before the statement, even when the
     * statement is a loop: one barrier ahead of it rather than one per iteration */
    if (conflicts(state, &acc) && (!uniform_inside || items[i]->kind == TIR_For || items[i]->kind == TIR_IfThenElse)) {
      out = tir_array_push(out, sync_stmt());
      memset(state, 0, sizeof *state);
    }
    if (uniform_inside) {
      out = tir_array_push(out, visit(c, items[i], state));
    } else {
      out = tir_array_push(out, tir_retain(items[i]));
      merge(state, &acc);
      if (compound && !c->stranded_wait) tir_visit(items[i], find_wait, &c->stranded_wait);
    }
    if (is_wait(items[i])) {
      out = tir_array_push(out, sync_stmt());
      memset(state, 0, sizeof *state);
    }
  }
  return tir_seq(out);
}

static tir_Node *visit(Ctx *c, const tir_Node *s, Acc *state) {
  switch (s->kind) {
    case TIR_SeqStmt: {
      const tir_Array *a = ((const tir_SeqStmt *)s)->seq;
      return visit_seq(c, (const tir_Node *const *)a->items, a->size, state);
    }
    case TIR_For: {
      const tir_For *f = (const tir_For *)s;
      /* first pass: what one iteration leaves; second: with that carried around */
      Acc entry = *state, probe = *state;
      tir_Node *once = visit_seq(c, (const tir_Node *const *)&f->body, 1, &probe);
      tir_release(once);
      Acc carried = entry;
      merge(&carried, &probe);
      tir_Node *body = visit_seq(c, (const tir_Node *const *)&f->body, 1, &carried);
      *state = carried;
      tir_For *nf = (tir_For *)tir_node_copy(s);
      tir_release(nf->body);
      nf->body = body;
      return &nf->hdr;
    }
    case TIR_IfThenElse: {
      const tir_IfThenElse *f = (const tir_IfThenElse *)s;
      Acc a = *state, b = *state;
      tir_Node *t = visit_seq(c, (const tir_Node *const *)&f->then_case, 1, &a);
      tir_Node *e = f->else_case ? visit_seq(c, (const tir_Node *const *)&f->else_case, 1, &b) : NULL;
      merge(&a, &b);
      *state = a;
      return tir_if(R(f->cond), t, e);
    }
    case TIR_LetStmt: {
      const tir_LetStmt *l = (const tir_LetStmt *)s;
      return tir_let_stmt((tir_Var *)R(l->var), R(l->value), visit_seq(c, (const tir_Node *const *)&l->body, 1, state));
    }
    case TIR_Allocate: {
      const tir_Allocate *a = (const tir_Allocate *)s;
      return tir_allocate((tir_Buffer *)R(a->buffer), visit_seq(c, (const tir_Node *const *)&a->body, 1, state));
    }
    case TIR_AttrStmt: {
      const tir_AttrStmt *a = (const tir_AttrStmt *)s;
      int pushed = 0;
      if (strcmp(a->key, "thread_extent") == 0 && a->node && a->node->kind == TIR_IterVar &&
          strncmp(((const tir_IterVar *)a->node)->thread_tag, "threadIdx.", 10) == 0 && c->n_thread < 16) {
        c->thread_vars[c->n_thread++] = &((const tir_IterVar *)a->node)->var->hdr;
        pushed = 1;
      }
      tir_Node *body = visit_seq(c, (const tir_Node *const *)&a->body, 1, state);
      if (pushed) c->n_thread--;
      return tir_attr_stmt(R(a->node), a->key, R(a->value), body);
    }
    default: {
      Acc acc;
      accesses(s, &acc);
      merge(state, &acc);
      return tir_retain(s);
    }
  }
}

static int has_shared(const tir_Node *n, void *p) {
  if (n->kind == TIR_Allocate && is_shared(((const tir_Allocate *)n)->buffer)) *(int *)p = 1;
  return 0;
}

tir_PrimFunc *tir_pass_thread_sync(const tir_PrimFunc *f) {
  int any = 0;
  tir_visit(f->body, has_shared, &any);
  if (!any) return (tir_PrimFunc *)tir_retain(f);
  Ctx c;
  memset(&c, 0, sizeof c);
  Acc state;
  memset(&state, 0, sizeof state);
  tir_Node *body = visit(&c, f->body, &state);
  if (c.stranded_wait) {
    tir_release(body);
    tir_error_set(TIR_ERR_LOWER, "thread_sync",
                  "ptx_wait_group under a condition or loop bound that depends on threadIdx: the barrier that must follow "
                  "it (so that other threads' cp.async data is visible) cannot be placed there");
    tir_error_set_ir(&f->hdr);
    tir_error_mark(c.stranded_wait, "wait");
    return NULL;
  }
  return pass_with_body(f, body);
}
