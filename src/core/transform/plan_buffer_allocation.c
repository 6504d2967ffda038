/* plan_buffer_allocation.c -- every buffer a block allocates moves to the lowest common
 * ancestor (a block or a loop) of its accesses (TVM
 * src/tir/transforms/plan_update_buffer_allocation_location.cc).  At a loop, the body is
 * wrapped in an opaque block (no iteration variables) that allocates it.  Runs on
 * block-level IR, before compact_buffer_allocation shrinks each buffer to what is used
 * under its new home. */
#include <stdlib.h>
#include <string.h>

#include "pass_util.h"
#include "tir/analysis.h"
#include "tir/scope.h"

#define MAXD 512

typedef struct {
  const tir_Buffer *buf;
  const tir_Node *lca[MAXD]; /* path of For/Block nodes common to every access so far */
  int depth;                 /* -1: no access seen yet */
  int limit;                 /* the home may not be deeper than this (loop-carried values) */
} Entry;

typedef struct {
  Entry *e;
  int n, cap;
  const tir_Node *stack[MAXD]; /* current For/Block ancestors */
  int sp;
} Ctx;

static Entry *entry_of(Ctx *c, const tir_Buffer *b) {
  for (int i = 0; i < c->n; i++)
    if (c->e[i].buf == b) return &c->e[i];
  return NULL;
}

static void touch(Ctx *c, const tir_Buffer *b) {
  Entry *e = entry_of(c, b);
  /* a decl_buffer view of an allocation: an access of the allocation */
  for (int i = 0; i < c->n && !e; i++)
    if (c->e[i].buf->data == b->data) e = &c->e[i];
  if (!e) return; /* not a block-allocated buffer */
  if (e->depth < 0) {
    memcpy(e->lca, c->stack, sizeof(c->stack[0]) * (size_t)c->sp);
    e->depth = c->sp;
    return;
  }
  int d = 0;
  while (d < e->depth && d < c->sp && e->lca[d] == c->stack[d]) d++;
  e->depth = d;
}

static int collect_allocs(const tir_Node *n, void *p) {
  Ctx *c = p;
  if (tir_is_expr(n)) return 1;
  if (n->kind == TIR_Block) {
    const tir_Block *b = (const tir_Block *)n;
    for (int i = 0; i < b->alloc_buffers->size; i++) {
      if (c->n == c->cap) {
        c->cap = c->cap ? c->cap * 2 : 16;
        c->e = realloc(c->e, sizeof(Entry) * (size_t)c->cap);
      }
      c->e[c->n].buf = (const tir_Buffer *)b->alloc_buffers->items[i];
      c->e[c->n].depth = -1;
      c->e[c->n].limit = MAXD;
      c->n++;
    }
  }
  return 0;
}

static void walk(Ctx *c, const tir_Node *n);

static int is_thread_idx_loop(const tir_Node *n) {
  return n->kind == TIR_For && ((const tir_For *)n)->kind == TIR_FOR_THREAD_BINDING &&
         strncmp(((const tir_For *)n)->thread_tag, "threadIdx.", 10) == 0;
}

/* A reduction into buf (a block that reads what it writes) carries its value across the
 * iterations of the loops its reduction variables are bound to: an allocation inside
 * such a loop would start afresh each iteration, so the home stays above it. */
static void limit_reduction(Ctx *c, const tir_BlockRealize *br) {
  const tir_Block *b = br->block;
  for (int w = 0; w < b->writes->size; w++) {
    const tir_Buffer *buf = ((const tir_BufferRegion *)b->writes->items[w])->buffer;
    Entry *e = entry_of(c, buf);
    if (!e) continue;
    int self_read = b->init != NULL;
    for (int r = 0; r < b->reads->size && !self_read; r++)
      self_read = ((const tir_BufferRegion *)b->reads->items[r])->buffer == buf;
    if (!self_read) continue;
    /* a local buffer is per thread: the partial sums of a cross-thread reduction
     * (lower_cross_thread_reduction) carry nothing across the threadIdx loop */
    int per_thread = strcmp(buf->scope, "local") == 0;
    for (int k = 0; k < b->iter_vars->size; k++) {
      const tir_IterVar *iv = (const tir_IterVar *)b->iter_vars->items[k];
      if (iv->iter_type == TIR_ITER_DATA_PAR) continue;
      for (int d = 0; d < c->sp && d < e->limit; d++)
        if (c->stack[d]->kind == TIR_For && !(per_thread && is_thread_idx_loop(c->stack[d])) &&
            tir_uses_var(br->iter_values->items[k], ((const tir_For *)c->stack[d])->loop_var)) {
          e->limit = d;
          break;
        }
    }
  }
}

static int expr_access(const tir_Node *n, void *p) {
  Ctx *c = p;
  if (n->kind == TIR_BufferLoad) touch(c, ((const tir_BufferLoad *)n)->buffer);
  return 0;
}

static void walk_expr(Ctx *c, const tir_Node *e) { tir_visit(e, expr_access, c); }

static void walk(Ctx *c, const tir_Node *n) {
  if (!n) return;
  switch (n->kind) {
    case TIR_SeqStmt: {
      const tir_Array *a = ((const tir_SeqStmt *)n)->seq;
      for (int i = 0; i < a->size; i++) walk(c, a->items[i]);
      return;
    }
    case TIR_For: {
      const tir_For *f = (const tir_For *)n;
      walk_expr(c, f->min);
      walk_expr(c, f->extent);
      if (c->sp < MAXD) c->stack[c->sp++] = n;
      walk(c, f->body);
      c->sp--;
      return;
    }
    case TIR_BlockRealize: {
      const tir_BlockRealize *br = (const tir_BlockRealize *)n;
      for (int i = 0; i < br->iter_values->size; i++) walk_expr(c, br->iter_values->items[i]);
      walk_expr(c, br->predicate);
      const tir_Block *b = br->block;
      limit_reduction(c, br);
      if (c->sp < MAXD) c->stack[c->sp++] = &b->hdr;
      for (int i = 0; i < b->reads->size; i++) touch(c, ((const tir_BufferRegion *)b->reads->items[i])->buffer);
      for (int i = 0; i < b->writes->size; i++) touch(c, ((const tir_BufferRegion *)b->writes->items[i])->buffer);
      for (int i = 0; i < b->match_buffers->size; i++)
        touch(c, ((const tir_MatchBufferRegion *)b->match_buffers->items[i])->source->buffer);
      walk(c, b->init);
      walk(c, b->body);
      c->sp--;
      return;
    }
    case TIR_BufferStore: {
      const tir_BufferStore *s = (const tir_BufferStore *)n;
      touch(c, s->buffer);
      walk_expr(c, s->value);
      for (int i = 0; i < s->indices->size; i++) walk_expr(c, s->indices->items[i]);
      return;
    }
    case TIR_IfThenElse:
      walk_expr(c, ((const tir_IfThenElse *)n)->cond);
      walk(c, ((const tir_IfThenElse *)n)->then_case);
      walk(c, ((const tir_IfThenElse *)n)->else_case);
      return;
    case TIR_LetStmt:
      walk_expr(c, ((const tir_LetStmt *)n)->value);
      walk(c, ((const tir_LetStmt *)n)->body);
      return;
    case TIR_AttrStmt:
      walk_expr(c, ((const tir_AttrStmt *)n)->value);
      walk(c, ((const tir_AttrStmt *)n)->body);
      return;
    case TIR_Allocate: walk(c, ((const tir_Allocate *)n)->body); return;
    case TIR_DeclBuffer: walk(c, ((const tir_DeclBuffer *)n)->body); return;
    case TIR_Evaluate: walk_expr(c, ((const tir_Evaluate *)n)->value); return;
    default: return;
  }
}

/* Where each buffer goes: the node (Block or For) at the end of its LCA path. */
typedef struct {
  Ctx *c;
} Rewrite;

static const tir_Node *home_of(const Entry *e) { return e->depth > 0 ? e->lca[e->depth - 1] : NULL; }

static tir_Node *rewrite(const tir_Node *n, void *p) {
  Ctx *c = p;
  if (tir_is_expr(n) || n->kind == TIR_Buffer || n->kind == TIR_BufferRegion) return tir_retain(n);
  if (n->kind != TIR_Block && n->kind != TIR_For) return NULL;
  /* buffers whose home is this node */
  tir_Array *here = tir_array_empty();
  for (int i = 0; i < c->n; i++)
    if (home_of(&c->e[i]) == n) here = tir_array_push(here, tir_retain(c->e[i].buf));
  tir_Node *m = tir_mutate_children(n, rewrite, p);
  if (!m) {
    tir_release(here);
    return TIR_MUTATE_ERROR;
  }
  if (n->kind == TIR_Block) {
    /* keep only the buffers planned here (in their original order first) */
    tir_Block *b = (tir_Block *)tir_node_copy(m);
    tir_release(m);
    tir_Array *keep = tir_array_empty();
    for (int i = 0; i < b->alloc_buffers->size; i++) {
      const tir_Node *ab = b->alloc_buffers->items[i];
      int stays = 0;
      for (int k = 0; k < here->size; k++) stays |= here->items[k] == ab;
      /* a buffer never accessed stays where it was */
      Entry *e = entry_of(c, (const tir_Buffer *)ab);
      if (stays || (e && e->depth < 0)) keep = tir_array_push(keep, tir_retain(ab));
    }
    for (int k = 0; k < here->size; k++) {
      int already = 0;
      for (int i = 0; i < keep->size; i++) already |= keep->items[i] == here->items[k];
      if (!already) keep = tir_array_push(keep, tir_retain(here->items[k]));
    }
    tir_release(b->alloc_buffers);
    b->alloc_buffers = keep;
    tir_release(here);
    return &b->hdr;
  }
  if (here->size == 0) {
    tir_release(here);
    return m;
  }
  /* a loop: allocate in an opaque block wrapping its body */
  tir_For *f = (tir_For *)tir_node_copy(m);
  tir_release(m);
  tir_Block *blk = tir_block_new("", NULL, NULL, NULL, NULL, here, NULL, NULL, f->body);
  f->body = tir_block_realize(NULL, NULL, blk);
  return &f->hdr;
}

static int find_thread_binding(const tir_Node *n, void *p) {
  if (tir_is_expr(n) || *(int *)p) return 1;
  if (n->kind == TIR_For && ((const tir_For *)n)->kind == TIR_FOR_THREAD_BINDING) *(int *)p = 1;
  return 0;
}

tir_PrimFunc *tir_pass_plan_buffer_allocation(const tir_PrimFunc *f) {
  Ctx c;
  memset(&c, 0, sizeof c);
  tir_visit(f->body, collect_allocs, &c);
  if (c.n == 0) return (tir_PrimFunc *)tir_retain(f);
  walk(&c, f->body);
  /* A global buffer cannot be allocated inside a kernel, and with thread bindings every
   * statement under the root is (part of) a kernel (split_host_device): global buffers
   * then stay in the root block, and the runtime allocates them per call. */
  int kernels = 0;
  tir_visit(f->body, find_thread_binding, &kernels);
  for (int i = 0; i < c.n; i++) {
    Entry *e = &c.e[i];
    if (e->depth > e->limit) e->depth = e->limit;
    if (kernels && e->depth > 1 && tir_scope_is_global(e->buf->scope)) e->depth = 1;
  }
  tir_Node *body = tir_mutate(f->body, rewrite, &c);
  free(c.e);
  return pass_with_body(f, body);
}
