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
 * one unit and the barrier goes before it.  A hazard between the statements of such an if
 * (its threads exchanging data through shared memory, or the then-branch's threads writing
 * what the else-branch's read: both branches run at once) is resolved by distributing the
 * if over its statements (`if c {s1; s2}` -> `if c {s1}; barrier; if c {s2}`; the else
 * branch becomes `if !c {...}` after the then branch) when c reads no memory; TVM's
 * ThreadSync stops there instead ("Cannot insert syncs inside condition").  A serial loop of
 * such a branch whose bounds do not depend on threadIdx takes the if inside (`if c {for k {b}}`
 * -> `for k {if c {b}}`), so a hazard in the loop gets barriers at its body's level.  A loop
 * whose bounds depend on threadIdx stays a unit: no barrier can go in it (the simulator reports
 * such a race).  An if whose branches wait on or signal other threads (mbarriers, named
 * barriers: a warp-specialized producer and its consumers) is never split: its pieces, run one
 * after the other, would wait for each other.
 *
 * Multi-versioned buffers (software pipelines): accesses under AttrStmt "pipeline_version"
 * are to that version of the buffer only, and two versions conflict unless provably
 * different (distinct constants, or floormod(x, V) and floormod(y, V) with x - y a constant
 * V does not divide).  A loop's next iteration sees the previous one's versions with the
 * loop variable decreased by one; the analysis iterates to a fixpoint, widening versions to
 * "any" if an iteration can leave accesses of ever older iterations (no barrier on its
 * way).  So filling version (k + 1) % 2 while version k % 2 is read needs no barrier, but
 * refilling the version the previous iteration read does.  After every ptx_wait_group a
 * barrier follows (cp.async data of other threads is visible only then).  The shared operands
 * of TMA and mbarrier builtins (TIR_BUILTIN_ASYNC_PROXY) are left out: mbarrier phases order
 * them, and a pipeline built on them has no __syncthreads in its main loop.
 *
 * As in TVM (ThreadSyncPlanner::FindConflict): two accesses of one element index that is the
 * same expression of the thread indices only, using threadIdx.x, are the same thread's and no
 * hazard (a thread's own read-modify-write of its element of a shared vector in every step of a
 * loop, e.g. tc_gemm's row sums, needs no barrier per step).  Any other variable in the index (a
 * loop's) makes it a different element in another iteration: such accesses conflict as before.
 *
 * Warp-specialized kernels (inject_warp_specialization): a branch wrapped in AttrStmt
 * "named_barrier" (node: the thread count n, value: the barrier id) runs on n threads only,
 * the consumer warpgroups; the pass looks into it although its if depends on threadIdx, and a
 * barrier it needs there is `bar.sync id, n` (ptx_bar_sync), since a __syncthreads would wait
 * for the producer warpgroup, which never comes. */
#include <stdlib.h>
#include <string.h>

#include "pass_util.h"

#include "tir/arith.h"
#include "tir/scope.h"

#define MAXB 64
#define MAXM 16

/* An access to a shared buffer: its data var, and the version of a multi-versioned buffer
 * (the value of an enclosing AttrStmt "pipeline_version" from inject_software_pipeline), or
 * NULL for "any element". */
typedef struct {
  const tir_Node *buf;
  const tir_Node *ver;
  const tir_Node *idx; /* the flat element index, when it depends on thread indices only (and on
                          threadIdx.x); NULL: any element */
} Ent;

typedef struct {
  Ent r[MAXB], w[MAXB];
  int nr, nw;
  int all;     /* too many entries to track: conflicts with every access */
  int barrier; /* the statement holds a barrier */
} Acc;

typedef struct {
  const tir_Node *thread_vars[16];
  const char *thread_tags[16];
  int n_thread;
  const tir_Node *stranded_wait; /* a ptx_wait_group where no barrier can follow it */
  int64_t bar_id, bar_n;         /* inside a "named_barrier" region: its barrier, else 0 */
  const tir_Node *mbuf[MAXM], *mver[MAXM]; /* enclosing pipeline_version markers */
  int nm;
  tir_Node **pool; /* versions made here (shifted to the previous iteration), owned */
  int npool, cpool;
} Ctx;

/* cp.async data other threads copied is visible after their ptx_wait_group and a barrier
 * (TVM ThreadSyncAfterWaitQueueInserter): every wait is followed by a barrier, which also
 * serves the read-after-write of the consumer that follows it. */
static int is_wait(const tir_Node *s) {
  return s->kind == TIR_Evaluate && ((const tir_Evaluate *)s)->value->kind == TIR_Call &&
         tir_builtin_has(((const tir_Call *)((const tir_Evaluate *)s)->value)->op, TIR_BUILTIN_ASYNC_WAIT);
}

static int find_wait(const tir_Node *n, void *p) {
  if (!*(const tir_Node **)p && is_wait(n)) *(const tir_Node **)p = n;
  return 0;
}

static int same_ver(const tir_Node *a, const tir_Node *b) {
  return a == b || (a && b && tir_expr_deep_equal(a, b));
}

static void add(Acc *a, int write, const tir_Node *buf, const tir_Node *ver, const tir_Node *idx) {
  Ent *set = write ? a->w : a->r;
  int *n = write ? &a->nw : &a->nr;
  for (int i = 0; i < *n; i++)
    if (set[i].buf == buf && (!set[i].ver || same_ver(set[i].ver, ver)) && (!set[i].idx || same_ver(set[i].idx, idx))) return;
  if (*n < MAXB) {
    set[(*n)++] = (Ent){buf, ver, idx};
    return;
  }
  /* full: widen an entry of the same buffer to all versions and elements, or give up precision */
  for (int i = 0; i < *n; i++)
    if (set[i].buf == buf) {
      set[i].ver = NULL;
      set[i].idx = NULL;
      return;
    }
  a->all = 1;
}

static void merge(Acc *a, const Acc *b) {
  for (int i = 0; i < b->nr; i++) add(a, 0, b->r[i].buf, b->r[i].ver, b->r[i].idx);
  for (int i = 0; i < b->nw; i++) add(a, 1, b->w[i].buf, b->w[i].ver, b->w[i].idx);
  a->all |= b->all;
}

/* May two versions of one buffer be the same?  Only distinct constants, or
 * floormod(x, V) and floormod(y, V) with x - y a constant that V does not divide, are
 * provably different. */
static int may_alias(const tir_Node *v1, const tir_Node *v2) {
  if (!v1 || !v2 || same_ver(v1, v2)) return 1;
  int64_t c1, c2;
  if (tir_is_const_int(v1, &c1) && tir_is_const_int(v2, &c2)) return c1 == c2;
  if (v1->kind == TIR_FloorMod && v2->kind == TIR_FloorMod) {
    const tir_FloorMod *m1 = (const tir_FloorMod *)v1, *m2 = (const tir_FloorMod *)v2;
    int64_t V1, V2, d;
    if (!tir_is_const_int(m1->b, &V1) || !tir_is_const_int(m2->b, &V2) || V1 != V2 || V1 <= 0) return 1;
    tir_Node *diff = tir_sub(R(m1->a), R(m2->a));
    tir_Node *sd = tir_simplify(NULL, diff);
    tir_release(diff);
    int known = tir_is_const_int(sd, &d);
    tir_release(sd);
    return !known || d % V1 == 0;
  }
  return 1;
}

static int meets(const Ent *x, int nx, const Ent *y, int ny) {
  for (int i = 0; i < nx; i++)
    for (int j = 0; j < ny; j++)
      if (x[i].buf == y[j].buf && may_alias(x[i].ver, y[j].ver) &&
          !(x[i].idx && y[j].idx && tir_expr_deep_equal(x[i].idx, y[j].idx)))
        return 1;
  return 0;
}

/* does statement access `acc` conflict with what happened since the last barrier?  A read
 * after another thread's write, or a write over what another thread may still read.  As in
 * TVM (thread_storage_sync.cc), two writes with no read between are not a hazard: the cooperative
 * copies of a tile write disjoint elements (at buffer granularity they would otherwise get a
 * barrier per iteration of the copy loop). */
static int conflicts(const Acc *state, const Acc *acc) {
  if ((state->all && (acc->nr || acc->nw || acc->all)) || (acc->all && (state->nr || state->nw))) return 1;
  return meets(acc->r, acc->nr, state->w, state->nw) || meets(acc->w, acc->nw, state->r, state->nr);
}

static int is_shared(const tir_Buffer *b) { return tir_scope_is_shared(b->scope); }

/* Collecting a statement's accesses: the markers around them and the loops inside the
 * statement (a version using such a loop's variable means "any version"). */
typedef struct {
  Acc *acc;
  const Ctx *cx;
  const tir_Node *mbuf[MAXM], *mver[MAXM];
  int nm;
  const tir_Node *loops[64];
  int nl;
} Coll;

static int access_fn(const tir_Node *n, void *p);

/* Whether every variable of an index expression is a thread index, threadIdx.x among them. */
typedef struct {
  const Ctx *cx;
  int other, tx;
} VarScan;

static int scan_var(const tir_Node *n, void *p) {
  VarScan *v = p;
  if (n->kind != TIR_Var) return 0;
  int thread = 0;
  for (int i = 0; i < v->cx->n_thread; i++)
    if (v->cx->thread_vars[i] == n) {
      thread = 1;
      if (strcmp(v->cx->thread_tags[i], "threadIdx.x") == 0) v->tx = 1;
    }
  if (!thread) v->other = 1;
  return 0;
}

/* The access's element index for the same-thread rule (see the file comment), or NULL. */
static const tir_Node *thread_point(const Coll *c, const tir_Array *indices) {
  if (!c->cx || !indices || indices->size != 1) return NULL;
  VarScan v = {c->cx, 0, 0};
  tir_visit(indices->items[0], scan_var, &v);
  return (!v.other && v.tx) ? indices->items[0] : NULL;
}

static void record(Coll *c, int write, const tir_Buffer *b, const tir_Node *idx) {
  if (!is_shared(b)) return;
  const tir_Node *ver = NULL;
  for (int i = c->nm - 1; i >= 0; i--)
    if (c->mbuf[i] == &b->data->hdr) {
      ver = c->mver[i];
      break;
    }
  for (int i = 0; ver && i < c->nl; i++)
    if (tir_uses_var(ver, (const tir_Var *)c->loops[i])) ver = NULL;
  add(c->acc, write, &b->data->hdr, ver, idx);
}

static int access_fn(const tir_Node *n, void *p) {
  Coll *c = p;
  if (n->kind == TIR_AttrStmt && strcmp(((const tir_AttrStmt *)n)->key, "pipeline_version") == 0 &&
      ((const tir_AttrStmt *)n)->node && ((const tir_AttrStmt *)n)->node->kind == TIR_Buffer && c->nm < MAXM) {
    const tir_AttrStmt *a = (const tir_AttrStmt *)n;
    c->mbuf[c->nm] = &((const tir_Buffer *)a->node)->data->hdr;
    c->mver[c->nm++] = a->value;
    tir_visit(a->body, access_fn, c);
    c->nm--;
    return 1;
  }
  if (n->kind == TIR_For && c->nl < 64) {
    const tir_For *f = (const tir_For *)n;
    tir_visit(f->min, access_fn, c);
    tir_visit(f->extent, access_fn, c);
    c->loops[c->nl++] = &f->loop_var->hdr;
    tir_visit(f->body, access_fn, c);
    c->nl--;
    return 1;
  }
  if (n->kind == TIR_For) c->acc->all = 1; /* too deep to track versions */
  if (n->kind == TIR_BufferLoad)
    record(c, 0, ((const tir_BufferLoad *)n)->buffer, thread_point(c, ((const tir_BufferLoad *)n)->indices));
  if (n->kind == TIR_BufferStore)
    record(c, 1, ((const tir_BufferStore *)n)->buffer, thread_point(c, ((const tir_BufferStore *)n)->indices));
  if (n->kind == TIR_Call) {
    /* builtins reading or writing shared memory through address_of (wmma_store, cp.async,
     * ...): an operand the builtin writes is a write only (not also a read, or consecutive
     * cp.async of a tile would get barriers between them); the others are reads */
    const tir_Call *cl = (const tir_Call *)n;
    int addr_args = 0;
    /* TMA copies and mbarrier operations: ordered by mbarrier phases, which a __syncthreads
     * neither replaces nor needs (include/tir/tma.h); mbarrier.init is an ordinary write */
    int async_proxy = tir_builtin_has(cl->op, TIR_BUILTIN_ASYNC_PROXY);
    for (int i = 0; i < cl->args->size; i++) {
      const tir_Node *x = cl->args->items[i];
      const tir_BufferLoad *l = tir_address_of_load(x);
      if (l) {
        if (!async_proxy) record(c, tir_builtin_writes_arg(cl->op, i), l->buffer, NULL);
        for (int k = 0; k < l->indices->size; k++) tir_visit(l->indices->items[k], access_fn, c);
        addr_args = 1;
      } else {
        tir_visit(x, access_fn, c);
      }
    }
    if (addr_args) return 1; /* operands visited above */
  }
  if (n->kind == TIR_Evaluate) {
    const tir_Node *v = ((const tir_Evaluate *)n)->value;
    if (v->kind == TIR_Call && strcmp(((const tir_Call *)v)->op, "tvm_storage_sync") == 0) c->acc->barrier = 1;
  }
  return 0;
}

static void accesses(Ctx *cx, const tir_Node *s, Acc *a) {
  memset(a, 0, sizeof *a);
  Coll c;
  memset(&c, 0, sizeof c);
  c.acc = a;
  c.cx = cx;
  c.nm = cx->nm;
  for (int i = 0; i < cx->nm; i++) c.mbuf[i] = cx->mbuf[i], c.mver[i] = cx->mver[i];
  tir_visit(s, access_fn, &c);
  if (a->barrier) memset(a, 0, sizeof *a); /* contains a barrier: treat as fresh (conservative enough here) */
}

static const tir_Node *pooled(Ctx *c, tir_Node *x) {
  if (c->npool == c->cpool) {
    c->cpool = c->cpool ? c->cpool * 2 : 16;
    c->pool = realloc(c->pool, sizeof(*c->pool) * (size_t)c->cpool);
  }
  c->pool[c->npool++] = x;
  return x;
}

/* Versions recorded in one iteration of loop v, seen from the next one (v := v - 1). */
static void shift_back(Ctx *c, Acc *a, const tir_Var *v) {
  for (int w = 0; w < 2; w++) {
    Ent *set = w ? a->w : a->r;
    int n = w ? a->nw : a->nr;
    for (int i = 0; i < n; i++)
      if (set[i].ver && tir_uses_var(set[i].ver, v)) {
        tir_Node *prev = tir_sub(R((tir_Node *)v), tir_int_imm(v->hdr.dtype, 1));
        tir_Node *sub = tir_substitute(set[i].ver, 1, (tir_Var *const *)&v, &prev);
        tir_release(prev);
        tir_Node *simp = tir_simplify(NULL, sub);
        tir_release(sub);
        set[i].ver = pooled(c, simp);
      }
  }
}

/* Is every access of b also in a (with the same or a wider version)? */
static int covers(const Acc *a, const Acc *b) {
  if (b->all && !a->all) return 0;
  for (int w = 0; w < 2; w++) {
    const Ent *x = w ? b->w : b->r, *y = w ? a->w : a->r;
    int nx = w ? b->nw : b->nr, ny = w ? a->nw : a->nr;
    for (int i = 0; i < nx; i++) {
      int found = a->all;
      for (int j = 0; j < ny && !found; j++)
        found = y[j].buf == x[i].buf && (!y[j].ver || same_ver(y[j].ver, x[i].ver)) && (!y[j].idx || same_ver(y[j].idx, x[i].idx));
      if (!found) return 0;
    }
  }
  return 1;
}

/* After loop v: its variable is gone, so versions using it mean "any version". */
static void forget_var(Acc *a, const tir_Var *v) {
  for (int i = 0; i < a->nr; i++)
    if (a->r[i].ver && tir_uses_var(a->r[i].ver, v)) a->r[i].ver = NULL;
  for (int i = 0; i < a->nw; i++)
    if (a->w[i].ver && tir_uses_var(a->w[i].ver, v)) a->w[i].ver = NULL;
}

static int thread_dependent(Ctx *c, const tir_Node *e) {
  for (int i = 0; i < c->n_thread; i++)
    if (tir_uses_var(e, (const tir_Var *)c->thread_vars[i])) return 1;
  return 0;
}

static tir_Node *sync_stmt(const Ctx *c) {
  if (c->bar_id) return tir_evaluate(tir_call(TIR_VOID, "ptx_bar_sync", tir_array_of(2, tir_i32((int)c->bar_id), tir_i32((int)c->bar_n))));
  return tir_evaluate(tir_call(TIR_INT32, "tvm_storage_sync", tir_array_of(1, tir_string_imm("shared"))));
}

/* A branch that only some threads take but that is a region of its own barrier (AttrStmt
 * "named_barrier" of inject_warp_specialization). */
static int is_named_region(const tir_Node *s) {
  return s && s->kind == TIR_AttrStmt && strcmp(((const tir_AttrStmt *)s)->key, "named_barrier") == 0;
}

/* Rewrites s with barriers; state is what happened since the last barrier (updated). */
static tir_Node *visit(Ctx *c, const tir_Node *s, Acc *state);
static tir_Node *visit_seq(Ctx *c, const tir_Node *const *items, int n, Acc *state);

static int impure_fn(const tir_Node *n, void *p) {
  if (n->kind == TIR_BufferLoad || n->kind == TIR_Call) *(int *)p = 1;
  return 0;
}

static int is_sync(const tir_Node *s) {
  if (s->kind != TIR_Evaluate || ((const tir_Evaluate *)s)->value->kind != TIR_Call) return 0;
  const char *op = ((const tir_Call *)((const tir_Evaluate *)s)->value)->op;
  return strcmp(op, "tvm_storage_sync") == 0 || strcmp(op, "ptx_bar_sync") == 0;
}

/* A call that makes threads wait for, or signal, other threads: mbarrier and TMA operations
 * (TIR_BUILTIN_ASYNC_PROXY), barriers (TIR_BUILTIN_BARRIER) and named barriers. */
static int waits_fn(const tir_Node *n, void *p) {
  if (n->kind == TIR_Call) {
    const char *op = ((const tir_Call *)n)->op;
    if (tir_builtin_has(op, TIR_BUILTIN_ASYNC_PROXY) || tir_builtin_has(op, TIR_BUILTIN_BARRIER) ||
        tir_builtin_has(op, TIR_BUILTIN_NAMED_BARRIER))
      *(int *)p = 1;
  }
  return 0;
}

/* The statements of s, SeqStmts flattened, each wrapped in `if cond` (owned references).  A
 * serial loop whose bounds do not depend on threadIdx takes the if inside instead:
 * `if c {for k {b}}` == `for k {if c {b}}` (c reads no memory and cannot use k), so that every
 * thread runs the loop and a hazard inside it gets its barriers at the body's level (visit_seq
 * splits the inner if in turn). */
static tir_Array *guarded(Ctx *c, tir_Array *out, const tir_Node *cond, const tir_Node *s) {
  if (s->kind == TIR_SeqStmt) {
    const tir_Array *a = ((const tir_SeqStmt *)s)->seq;
    for (int i = 0; i < a->size; i++) out = guarded(c, out, cond, a->items[i]);
    return out;
  }
  if (s->kind == TIR_For) {
    const tir_For *f = (const tir_For *)s;
    if ((f->kind == TIR_FOR_SERIAL || f->kind == TIR_FOR_UNROLLED) && !thread_dependent(c, f->min) && !thread_dependent(c, f->extent)) {
      tir_Array *inner = guarded(c, tir_array_empty(), cond, f->body);
      tir_For *nf = (tir_For *)tir_node_copy(s);
      tir_release(nf->body);
      nf->body = tir_seq(inner);
      return tir_array_push(out, &nf->hdr);
    }
  }
  return tir_array_push(out, tir_if(R((tir_Node *)cond), R((tir_Node *)s), NULL));
}

/* A barrier the rewritten pieces need inside: one between two top-level pieces, or any nested in
 * a piece (a loop's body), except those right after a ptx_wait_group (there anyway). */
typedef struct {
  int found;
} InnerSync;

static int inner_sync_fn(const tir_Node *n, void *p) {
  InnerSync *x = p;
  if (n->kind == TIR_SeqStmt) {
    const tir_Array *a = ((const tir_SeqStmt *)n)->seq;
    for (int i = 0; i < a->size; i++)
      if (is_sync(a->items[i]) && !(i > 0 && is_wait(a->items[i - 1]))) x->found = 1;
  }
  return 0;
}

static int needs_inner_sync(const tir_Node *seq) {
  InnerSync x = {0};
  if (seq->kind == TIR_SeqStmt) {
    const tir_Array *a = ((const tir_SeqStmt *)seq)->seq;
    for (int i = 0; i < a->size; i++) {
      if (i > 0 && is_sync(a->items[i]) && !is_wait(a->items[i - 1])) x.found = 1;
      if (!is_sync(a->items[i])) tir_visit(a->items[i], inner_sync_fn, &x);
    }
  } else {
    tir_visit(seq, inner_sync_fn, &x);
  }
  return x.found;
}

/* A hazard between statements of an if whose condition depends on threadIdx (thread A writes
 * a shared buffer in the branch, thread B of the same branch reads it later in the branch; or
 * the then-branch's threads write what the else-branch's threads read: the two branches run
 * at once).  A barrier inside the branch would wait for threads that never come, so the if is
 * distributed over its statements: `if c {s1; s2}` == `if c {s1}; if c {s2}`, and
 * `if c {t} else {e}` == `if c {t}; if !c {e}`, when c reads no memory (it cannot change
 * between the pieces), and the barriers go between the pieces, where every thread arrives.
 * Returns the rewritten sequence, or NULL when no barrier is needed between the pieces (the if
 * stays as it is: a unit with a barrier before it, as before). */
static tir_Node *split_divergent_if(Ctx *c, const tir_IfThenElse *f, Acc *state) {
  int impure = 0;
  tir_visit(f->cond, impure_fn, &impure);
  if (impure) return NULL;
  /* threads of the branches that wait for other threads (mbarrier phases, named or CTA
   * barriers): the pieces would run one after the other, and a barrier among them could wait
   * for threads that wait on these (a warp-specialized producer and its consumers) */
  int waits = 0;
  tir_visit(&f->hdr, waits_fn, &waits);
  if (waits) return NULL;
  tir_Array *pieces = guarded(c, tir_array_empty(), f->cond, f->then_case);
  if (f->else_case) {
    tir_Node *nc = tir_not(R(f->cond));
    pieces = guarded(c, pieces, nc, f->else_case);
    tir_release(nc);
  }
  tir_Node *res = NULL;
  int loops = 0;
  for (int i = 0; i < pieces->size; i++) loops |= pieces->items[i]->kind == TIR_For;
  if (pieces->size > 1 || loops) {
    Acc trial = *state;
    const tir_Node *saved_wait = c->stranded_wait;
    tir_Node *seq = visit_seq(c, (const tir_Node *const *)pieces->items, pieces->size, &trial);
    if (needs_inner_sync(seq)) {
      *state = trial;
      res = seq;
    } else {
      c->stranded_wait = saved_wait;
      tir_release(seq);
    }
  }
  tir_release(&pieces->hdr);
  return res;
}

static tir_Node *visit_seq(Ctx *c, const tir_Node *const *items, int n, Acc *state) {
  tir_Array *out = tir_array_empty();
  for (int i = 0; i < n; i++) {
    Acc acc;
    if (items[i]->kind == TIR_IfThenElse && thread_dependent(c, ((const tir_IfThenElse *)items[i])->cond) &&
        !is_named_region(((const tir_IfThenElse *)items[i])->then_case) &&
        !(((const tir_IfThenElse *)items[i])->else_case && is_named_region(((const tir_IfThenElse *)items[i])->else_case))) {
      tir_Node *split = split_divergent_if(c, (const tir_IfThenElse *)items[i], state);
      if (split) {
        out = tir_array_push(out, split);
        continue;
      }
    }
    accesses(c, items[i], &acc);
    /* a barrier before a conflicting statement, if that statement cannot take one inside */
    int compound = items[i]->kind == TIR_For || items[i]->kind == TIR_SeqStmt || items[i]->kind == TIR_LetStmt ||
                   items[i]->kind == TIR_AttrStmt || items[i]->kind == TIR_Allocate || items[i]->kind == TIR_IfThenElse;
    int uniform_inside = compound;
    if (items[i]->kind == TIR_IfThenElse && thread_dependent(c, ((const tir_IfThenElse *)items[i])->cond) &&
        !is_named_region(((const tir_IfThenElse *)items[i])->then_case) && !is_named_region(((const tir_IfThenElse *)items[i])->else_case))
      uniform_inside = 0;
    if (items[i]->kind == TIR_For) {
      const tir_For *f = (const tir_For *)items[i];
      if (thread_dependent(c, f->min) || thread_dependent(c, f->extent)) uniform_inside = 0;
    }
    /* a conflict with what came before is resolved before the statement, even when the
     * statement is a loop: one barrier ahead of it rather than one per iteration */
    if (conflicts(state, &acc) && (!uniform_inside || items[i]->kind == TIR_For || items[i]->kind == TIR_IfThenElse)) {
      out = tir_array_push(out, sync_stmt(c));
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
      out = tir_array_push(out, sync_stmt(c));
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
      /* The state at the start of an iteration: what was there before the loop, plus what
       * the previous iteration left (its versions seen from this iteration: v := v - 1).
       * Iterate to a fixpoint; if versions keep changing (an iteration without a barrier
       * leaves accesses of ever older iterations), widen them to "any version". */
      Acc *entry = malloc(sizeof(Acc)), *carried = malloc(sizeof(Acc)), *st = malloc(sizeof(Acc)), *next = malloc(sizeof(Acc));
      *entry = *state;
      *st = *state;
      tir_Node *body = visit_seq(c, (const tir_Node *const *)&f->body, 1, st);
      *carried = *entry;
      for (int round = 0;; round++) {
        shift_back(c, st, f->loop_var);
        if (round >= 3) forget_var(st, f->loop_var);
        *next = *carried;
        merge(next, st);
        if (round >= 3) forget_var(next, f->loop_var);
        int done = covers(carried, next) && round > 0;
        *carried = *next;
        if (done) break;
        tir_release(body);
        *st = *carried;
        body = visit_seq(c, (const tir_Node *const *)&f->body, 1, st);
        if (round > 8) break; /* cannot happen: after widening the sets only grow, and they are finite */
      }
      /* after the loop: what its last iteration left (or, if it ran no iteration, the entry) */
      *state = *st;
      merge(state, entry);
      forget_var(state, f->loop_var);
      free(entry), free(carried), free(st), free(next);
      tir_For *nf = (tir_For *)tir_node_copy(s);
      tir_release(nf->body);
      nf->body = body;
      return &nf->hdr;
    }
    case TIR_IfThenElse: {
      const tir_IfThenElse *f = (const tir_IfThenElse *)s;
      Acc a = *state, b = *state;
      /* a thread-dependent if reaches here only when a branch is a named-barrier region: the
       * other branch takes no barrier inside (a unit) */
      int td = thread_dependent(c, f->cond);
      tir_Node *t, *e = NULL;
      if (td && !is_named_region(f->then_case)) {
        Acc x;
        accesses(c, f->then_case, &x);
        merge(&a, &x);
        t = tir_retain(f->then_case);
      } else {
        t = visit_seq(c, (const tir_Node *const *)&f->then_case, 1, &a);
      }
      if (f->else_case && td && !is_named_region(f->else_case)) {
        Acc x;
        accesses(c, f->else_case, &x);
        merge(&b, &x);
        e = tir_retain(f->else_case);
      } else if (f->else_case) {
        e = visit_seq(c, (const tir_Node *const *)&f->else_case, 1, &b);
      }
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
    case TIR_DeclBuffer: {
      const tir_DeclBuffer *a = (const tir_DeclBuffer *)s;
      return tir_decl_buffer((tir_Buffer *)R(a->buffer), visit_seq(c, (const tir_Node *const *)&a->body, 1, state));
    }
    case TIR_AttrStmt: {
      const tir_AttrStmt *a = (const tir_AttrStmt *)s;
      int pushed = 0;
      if (strcmp(a->key, "thread_extent") == 0 && a->node && a->node->kind == TIR_IterVar &&
          strncmp(((const tir_IterVar *)a->node)->thread_tag, "threadIdx.", 10) == 0 && c->n_thread < 16) {
        c->thread_tags[c->n_thread] = ((const tir_IterVar *)a->node)->thread_tag;
        c->thread_vars[c->n_thread++] = &((const tir_IterVar *)a->node)->var->hdr;
        pushed = 1;
      }
      int marker = strcmp(a->key, "pipeline_version") == 0 && a->node && a->node->kind == TIR_Buffer && c->nm < MAXM;
      int64_t saved_id = c->bar_id, saved_n = c->bar_n;
      if (is_named_region(s)) {
        if (!a->node || !tir_is_const_int(a->node, &c->bar_n) || !tir_is_const_int(a->value, &c->bar_id)) c->bar_id = 0;
      }
      if (marker) {
        c->mbuf[c->nm] = &((const tir_Buffer *)a->node)->data->hdr;
        c->mver[c->nm++] = a->value;
      }
      tir_Node *body = visit_seq(c, (const tir_Node *const *)&a->body, 1, state);
      if (marker) c->nm--;
      if (pushed) c->n_thread--;
      c->bar_id = saved_id, c->bar_n = saved_n;
      return tir_attr_stmt(R(a->node), a->key, R(a->value), body);
    }
    default: {
      Acc acc;
      accesses(c, s, &acc);
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
  for (int i = 0; i < c.npool; i++) tir_release(c.pool[i]);
  free(c.pool);
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
