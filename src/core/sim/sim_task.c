/* sim_task.c -- divergent branches that wait on each other (warp-specialized kernels).
 *
 * Lockstep (sim_exec.c) runs an if's then-branch to its end before the else-branch.  In a
 * warp-specialized kernel -- `if warpgroup == 0 { producer: wait empty[s], TMA into stage s }
 * else { consumers: wait full[s], wgmma, arrive empty[s] }` -- the producer waits on arrivals
 * only the else-branch makes, so lockstep cannot run it.  Such an if (both sides have threads,
 * and a branch holds a blocking statement: ptx_mbarrier_wait, ptx_bar_sync) becomes a region of
 * cooperative tasks: one per branch, each running its branch over its threads in lockstep.
 *
 * Mechanism: an explicit continuation.  A task is a stack of frames (a statement, the threads
 * that run it, and where it is: the next item of a sequence, the next iteration of a loop, a
 * wait in progress).  A statement with no blocking statement and no release inside runs
 * atomically through sim_exec, so only the control flow around waits and releases is walked
 * frame by frame.  (Not OS threads with a baton, nor ucontext: the error state, the Lua state of
 * extern models and the simplifier's caches are thread-local, and stack switching needs the
 * sanitizers' fiber annotations; frames are plain data, ASan/UBSan clean and deterministic.)
 *
 * Scheduling: one task at a time, in a fixed order.  A task runs until it blocks (a wait
 * that cannot pass yet), finishes, or executes a release that may let another task go on (an
 * mbarrier arrival, a TMA copy's issue, a bar.arrive -- not arrive.expect_tx, which the copy
 * follows); then the next task in creation order (round robin) that can make progress runs:
 * a blocked task is one whose wait is tried again.  Yielding at releases interleaves a
 * producer and its consumers stage by stage, as on the GPU, so the happens-before checks see a
 * refill of a stage the consumers have not released.  Inside a task an if whose sides both
 * have threads and may wait splits the task into two child tasks (the parent resumes when both
 * are done); any other if runs its taken side(s) in the task, the other threads waiting at its
 * end.  Branches reconverge at the end of their if (as the SIMT stack of pre-Volta GPUs; Volta
 * and later may run a branch's threads past the if while the other side waits: a kernel that
 * depends on that is reported as a deadlock naming the threads left at the if).
 *
 * Deadlock: when no task can make progress (every live task waits), the waits are reported --
 * each task's threads, the barrier, phase and parity or the named barrier and its count, the
 * statements marked in the IR.  A wait whose phase has all its arrivals but lacks transaction
 * bytes is the wrong expect_tx count it is (mbarrier_tx).  With check = false the region is
 * abandoned after the report and the run goes on after the if.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim_internal.h"
#include "tir/strbuf.h"

/* ---- what a statement holds (memoized per statement) ---- */
static int call_bits(const tir_Node *s) {
  if (s->kind != TIR_Evaluate || ((const tir_Evaluate *)s)->value->kind != TIR_Call) return 0;
  const tir_BuiltinInfo *bi = tir_builtin_info(((const tir_Call *)((const tir_Evaluate *)s)->value)->op);
  if (!bi) return 0;
  switch (bi->id) {
    case TIR_BI_PTX_MBARRIER_WAIT:
    case TIR_BI_PTX_BAR_SYNC: return SIM_HAS_WAIT | SIM_HAS_SYNC;
    case TIR_BI_PTX_MBARRIER_ARRIVE:
    case TIR_BI_PTX_CP_ASYNC_MBARRIER_ARRIVE_NOINC:
    case TIR_BI_PTX_TMA_LOAD:
    case TIR_BI_PTX_TMA_LOAD_IM2COL:
    case TIR_BI_PTX_BAR_ARRIVE: return SIM_HAS_SYNC;
    default: return 0;
  }
}

int sim_sync_bits(Sim *S, const tir_Node *s) {
  if (!s) return 0;
  switch (s->kind) {
    case TIR_Evaluate: return call_bits(s);
    case TIR_SeqStmt: case TIR_For: case TIR_IfThenElse: case TIR_LetStmt: case TIR_AttrStmt: case TIR_Allocate:
    case TIR_DeclBuffer: break;
    default: return 0;
  }
  int *slot = sim_map_slot(&S->syncmap, s, 0);
  if (slot && *slot >= 0) return *slot;
  int bits = 0;
  switch (s->kind) {
    case TIR_SeqStmt: {
      const tir_Array *q = ((const tir_SeqStmt *)s)->seq;
      for (int i = 0; i < q->size; i++) bits |= sim_sync_bits(S, q->items[i]);
      break;
    }
    case TIR_For: bits = sim_sync_bits(S, ((const tir_For *)s)->body); break;
    case TIR_IfThenElse:
      bits = sim_sync_bits(S, ((const tir_IfThenElse *)s)->then_case) | sim_sync_bits(S, ((const tir_IfThenElse *)s)->else_case);
      break;
    case TIR_LetStmt: bits = sim_sync_bits(S, ((const tir_LetStmt *)s)->body); break;
    case TIR_AttrStmt: bits = sim_sync_bits(S, ((const tir_AttrStmt *)s)->body); break;
    case TIR_Allocate: bits = sim_sync_bits(S, ((const tir_Allocate *)s)->body); break;
    default: bits = sim_sync_bits(S, ((const tir_DeclBuffer *)s)->body); break;
  }
  *sim_map_slot(&S->syncmap, s, 1) = bits;
  return bits;
}

/* ---- tasks ---- */
typedef struct {
  const tir_Node *s;
  int state;        /* 0: not started; then per kind */
  int64_t i;        /* SeqStmt: the next item; For: the next iteration */
  int *ids, n;      /* the threads that run it (owned) */
  int64_t *lo, *ext, maxe, mine; /* For: per thread (by position in ids) */
  SimWait w;        /* a blocking Evaluate */
} Frame;

enum { TK_READY, TK_BLOCKED, TK_JOIN, TK_DONE };

typedef struct {
  Frame *fr;
  int nfr, cfr;
  int state, parent, children;
  int first, n; /* its threads: the first, how many */
} Task;

struct SimSched {
  Task *t;
  int n, cap;
};

static int push(Task *tk, const tir_Node *s, const int *ids, int n) {
  if (!n) return 0;
  if (tk->nfr == tk->cfr) {
    tk->cfr = tk->cfr ? 2 * tk->cfr : 8;
    tk->fr = realloc(tk->fr, sizeof *tk->fr * (size_t)tk->cfr);
  }
  Frame *f = &tk->fr[tk->nfr++];
  memset(f, 0, sizeof *f);
  f->s = s;
  f->ids = malloc(sizeof(int) * (size_t)n);
  memcpy(f->ids, ids, sizeof(int) * (size_t)n);
  f->n = n;
  return 0;
}

static void pop(Task *tk) {
  Frame *f = &tk->fr[--tk->nfr];
  free(f->ids);
  free(f->lo);
  free(f->ext);
}

static int spawn(Sim *S, int parent, const tir_Node *s, const Act *a) {
  struct SimSched *q = S->sched;
  if (q->n == q->cap) {
    q->cap = q->cap ? 2 * q->cap : 8;
    q->t = realloc(q->t, sizeof *q->t * (size_t)q->cap);
  }
  Task *tk = &q->t[q->n++];
  memset(tk, 0, sizeof *tk);
  tk->parent = parent;
  tk->first = a->ids[0];
  tk->n = a->n;
  S->rep->tasks++;
  return push(tk, s, a->ids, a->n);
}

static void finish(Sim *S, int k) {
  Task *tk = &S->sched->t[k];
  while (tk->nfr) pop(tk);
  tk->state = TK_DONE;
  if (tk->parent >= 0 && --S->sched->t[tk->parent].children == 0) S->sched->t[tk->parent].state = TK_READY;
}

/* The threads of a whose value in c is nonzero (want) or zero, into ids. */
static int pick(const Act *a, const SVal *c, int want, int *ids) {
  int n = 0;
  for (int k = 0; k < a->n; k++)
    if ((c[a->ids[k]].i != 0) == want) ids[n++] = a->ids[k];
  return n;
}

/* Starts frame f (state 0) of task k whose statement needs walking.  Returns -1 on a stop,
 * 1 when the task split into child tasks (it waits for them), else 0. */
static int enter(Sim *S, int k, Frame *f) {
  Task *tk = &S->sched->t[k];
  Act a = {f->ids, f->n};
  const tir_Node *s = f->s;
  f->state = 1;
  if (s->kind != TIR_SeqStmt && s->kind != TIR_AttrStmt && s->kind != TIR_DeclBuffer) S->rep->statements++;
  int vmark = S->vtop, imark = S->itop;
  switch (s->kind) {
    case TIR_For: {
      const tir_For *fo = (const tir_For *)s;
      if (fo->kind == TIR_FOR_THREAD_BINDING)
        return sim_fail(S, s, "thread-bound loop %s was not lowered (simulate lowered code: tir.build or tir.lower)", fo->loop_var->name);
      SVal *lo = sim_eval(S, fo->min, 0, &a);
      SVal *ext = lo ? sim_eval(S, fo->extent, 0, &a) : NULL;
      if (!ext) return -1;
      f->lo = malloc(sizeof(int64_t) * (size_t)f->n);
      f->ext = malloc(sizeof(int64_t) * (size_t)f->n);
      f->maxe = INT64_MIN, f->mine = INT64_MAX;
      for (int j = 0; j < f->n; j++) {
        f->lo[j] = lo[f->ids[j]].i, f->ext[j] = ext[f->ids[j]].i;
        if (f->ext[j] > f->maxe) f->maxe = f->ext[j];
        if (f->ext[j] < f->mine) f->mine = f->ext[j];
      }
      break;
    }
    case TIR_IfThenElse: {
      const tir_IfThenElse *c = (const tir_IfThenElse *)s;
      SVal *cond = sim_eval(S, c->cond, 0, &a);
      if (!cond) return -1;
      int *yes = sim_inew(S), *no = sim_inew(S);
      Act y = {yes, pick(&a, cond, 1, yes)}, n = {no, pick(&a, cond, 0, no)};
      int split = y.n && n.n && c->else_case && (sim_sync_bits(S, s) & SIM_HAS_WAIT);
      pop(tk);
      if (split) { /* the parent resumes after the if once both children are done */
        tk->state = TK_JOIN;
        tk->children = 2;
        spawn(S, k, c->then_case, &y);
        spawn(S, k, c->else_case, &n);
      } else { /* the taken sides in turn (then first, as lockstep); the other threads wait at the end */
        if (c->else_case) push(tk, c->else_case, n.ids, n.n);
        push(tk, c->then_case, y.ids, y.n);
      }
      S->vtop = vmark, S->itop = imark;
      return split;
    }
    case TIR_LetStmt: {
      const tir_LetStmt *l = (const tir_LetStmt *)s;
      SVal *x = sim_eval(S, l->value, 0, &a);
      if (!x) return -1;
      SVal *v = sim_var(S, l->var, 1);
      for (int j = 0; j < a.n; j++) v[a.ids[j]] = x[a.ids[j]];
      break;
    }
    case TIR_AttrStmt:
      if (strcmp(((const tir_AttrStmt *)s)->key, "thread_extent") == 0)
        return sim_fail(S, s, "a launch dimension (thread_extent) inside a divergent branch");
      break;
    case TIR_Allocate:
      if (sim_alloc(S, (const tir_Allocate *)s, &a)) return -1;
      break;
    case TIR_Evaluate: /* a blocking statement */
      S->rep->thread_statements += a.n;
      sim_wait_init(S, &f->w, (const tir_Evaluate *)s);
      break;
    default: break;
  }
  S->vtop = vmark, S->itop = imark;
  return 0;
}

/* Runs task k until it blocks, yields or ends.  Returns -1 on a stop, 0 when it could not
 * move (its wait still cannot pass), 1 when it did. */
static int run_task(Sim *S, int k) {
  int moved = 0;
  for (;;) {
    Task *tk = &S->sched->t[k];
    if (!tk->nfr) {
      finish(S, k);
      return 1;
    }
    Frame *f = &tk->fr[tk->nfr - 1];
    Act a = {f->ids, f->n};
    S->cur = f->s;
    int bits = sim_sync_bits(S, f->s);
    if (!f->state && !(bits & SIM_HAS_SYNC)) { /* nothing inside waits or releases: at once */
      int rc = sim_exec(S, f->s, &a);
      pop(tk);
      if (rc) return -1;
      moved = 1;
      continue;
    }
    if (!f->state && f->s->kind == TIR_Evaluate && !(bits & SIM_HAS_WAIT)) { /* a release: then let others run */
      int rc = sim_exec(S, f->s, &a);
      pop(tk);
      return rc ? -1 : 1;
    }
    if (!f->state) {
      int is_if = f->s->kind == TIR_IfThenElse;
      int rc = enter(S, k, f);
      if (rc < 0) return -1;
      if (rc > 0) return 1;
      if (is_if) { /* replaced by its branches (f is gone) */
        moved = 1;
        continue;
      }
    }
    switch (f->s->kind) {
      case TIR_SeqStmt: {
        const tir_Array *q = ((const tir_SeqStmt *)f->s)->seq;
        if (f->i < q->size) {
          const tir_Node *next = q->items[f->i++];
          push(tk, next, f->ids, f->n);
        } else {
          pop(tk);
        }
        break;
      }
      case TIR_For: {
        const tir_For *fo = (const tir_For *)f->s;
        if (f->i >= f->maxe) {
          pop(tk);
          break;
        }
        int64_t i = f->i++;
        int *ids = sim_inew(S), n = 0;
        SVal *v = sim_var(S, fo->loop_var, 1);
        for (int j = 0; j < f->n; j++)
          if (i < f->ext[j]) {
            ids[n++] = f->ids[j];
            v[f->ids[j]].i = f->lo[j] + i;
          }
        push(tk, fo->body, ids, n);
        S->itop--;
        break;
      }
      case TIR_Evaluate: {
        int before = f->w.attempts ? f->w.n_waiting : -1;
        int rc = sim_wait_step(S, &f->w, &a);
        if (rc < 0) return -1;
        if (rc == 0) {
          pop(tk);
          break;
        }
        tk->state = TK_BLOCKED;
        return moved || before < 0 || f->w.n_waiting < before;
      }
      default: /* Let, Attr, Allocate, DeclBuffer: the body once */
        if (f->state == 1) {
          f->state = 2;
          const tir_Node *body = f->s->kind == TIR_LetStmt     ? ((const tir_LetStmt *)f->s)->body
                                 : f->s->kind == TIR_AttrStmt  ? ((const tir_AttrStmt *)f->s)->body
                                 : f->s->kind == TIR_Allocate  ? ((const tir_Allocate *)f->s)->body
                                                               : ((const tir_DeclBuffer *)f->s)->body;
          push(tk, body, f->ids, f->n);
        } else {
          pop(tk);
        }
        break;
    }
    tk->state = TK_READY;
    moved = 1;
  }
}

/* "threads 128 .. 255" / "thread (5, 0, 0) [warp 0, lane 5]" / "40 threads from thread 3" */
static void threads_name(const Sim *S, const int *ids, int n, char *buf, size_t cap) {
  if (n == 1) {
    sim_thread_name(S, ids[0], buf, cap);
    return;
  }
  if (ids[n - 1] - ids[0] == n - 1) snprintf(buf, cap, "threads %d .. %d", ids[0], ids[n - 1]);
  else snprintf(buf, cap, "%d threads from thread %d", n, ids[0]);
}

/* Every live task waits and none can pass: the report. */
static int deadlock(Sim *S) {
  struct SimSched *q = S->sched;
  const SimWait *w[2] = {NULL, NULL};
  for (int k = 0; k < q->n; k++) {
    Task *tk = &q->t[k];
    if (tk->state != TK_BLOCKED) continue;
    SimWait *x = &tk->fr[tk->nfr - 1].w;
    if (x->kind == SIM_WAIT_MBARRIER && x->tx_stuck) return sim_mbarrier_tx_stuck(S, x);
    if (!w[0]) w[0] = x;
    else if (!w[1]) w[1] = x;
  }
  tir_StrBuf sb;
  tir_sb_init(&sb);
  tir_sb_puts(&sb, "deadlock: every thread still running waits, and no wait can pass (the branches of the warp-specialized "
                   "region run as tasks; none can go on):");
  for (int k = 0; k < q->n; k++) {
    Task *tk = &q->t[k];
    if (tk->state != TK_BLOCKED) continue;
    const Frame *f = &tk->fr[tk->nfr - 1];
    char who[96];
    threads_name(S, f->ids, f->n, who, sizeof who);
    tir_sb_printf(&sb, "\n  - %s wait%s on %s", who, f->n == 1 ? "s" : "", f->w.what);
    if (f->n < tk->n) tir_sb_printf(&sb, " (%d more threads of this branch wait at the end of an if or loop inside it)", tk->n - f->n);
  }
  int rc = sim_issue(S, "deadlock", &w[0]->stmt->hdr, w[0]->tid, w[1] ? &w[1]->stmt->hdr : NULL, w[1] ? w[1]->tid : -1, NULL,
                     -1, -1, "%s", sb.data);
  tir_sb_free(&sb);
  return rc;
}

int sim_task_region(Sim *S, const tir_IfThenElse *f, const Act *yes, const Act *no) {
  if (S->sched) return sim_fail(S, &f->hdr, "internal: a divergent region inside another");
  S->sched = calloc(1, sizeof *S->sched);
  spawn(S, -1, f->then_case, yes);
  spawn(S, -1, f->else_case, no);
  int vmark = S->vtop, imark = S->itop, rc = 0, cur = 0, last = -1;
  for (;;) {
    struct SimSched *q = S->sched;
    int live = 0, moved = 0;
    for (int j = 0; j < q->n && !moved && !rc; j++) {
      int k = (cur + j) % q->n;
      if (q->t[k].state == TK_DONE || q->t[k].state == TK_JOIN) continue;
      live = 1;
      int r = run_task(S, k);
      S->vtop = vmark, S->itop = imark;
      if (r < 0) rc = -1;
      else if (r > 0) {
        moved = 1;
        if (k != last && last >= 0) S->rep->task_switches++;
        last = k;
        cur = k + 1;
      }
    }
    if (rc || !live) break;
    if (!moved) { /* with check = false: reported, the region is left */
      rc = deadlock(S);
      break;
    }
  }
  sim_task_free(S);
  return rc || S->fatal ? -1 : 0;
}

void sim_task_free(Sim *S) {
  if (S->sched) {
    for (int k = 0; k < S->sched->n; k++) {
      Task *tk = &S->sched->t[k];
      while (tk->nfr) pop(tk);
      free(tk->fr);
    }
    free(S->sched->t);
    free(S->sched);
    S->sched = NULL;
  }
}
