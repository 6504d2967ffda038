/* sim_sync.c -- synchronization that orders a subset of a CTA's threads: the happens-before
 * clocks behind the race checks, named barriers, setmaxnreg's rules, and the blocking
 * statements (ptx_mbarrier_wait, ptx_bar_sync) as the lockstep walker and the tasks of
 * sim_task.c run them.
 *
 * Happens-before.  __syncthreads orders every thread's accesses: the race shadow compares
 * barrier intervals ("epochs", sim_mem.c).  mbarrier phases and named barriers order only the
 * threads that arrive and those that wait, so from a CTA's first mbarrier.init or named
 * barrier on, every thread t has a vector clock vc[t][*] (what t knows of each thread's
 * progress; its own entry starts at 1).  An access records its thread's own clock; a release
 * (mbarrier arrival, named-barrier arrival) joins the thread's vector into the barrier's and
 * advances the thread's own clock; an acquire (a wait that passes, a bar.sync that completes)
 * joins the barrier's vector into the thread's.  Thread x's access at clock c happens before
 * thread y's next access when vc[y][x] >= c (sim_hb).  This is what lets a producer's TMA refill
 * be checked against the consumers' reads of the stage (sim_mbarrier.c) and a consumer-only
 * named barrier order shared accesses without a __syncthreads.
 *
 * Named barriers (PTX ISA 9.7.13.1 bar, barrier): bar.sync / bar.arrive a, b.  Barrier a (0..15)
 * completes when b threads (a multiple of the warp size; whole warps execute the instruction,
 * it is .aligned) have arrived; bar.sync waits for that, bar.arrive does not.  Reported: a
 * count that is not a positive multiple of 32 or exceeds the CTA ("named_barrier"), arrivals
 * with different counts in one generation, more threads arriving than the count (the GPU would
 * complete the barrier with some of them and start the next generation with the rest: the
 * threads are no longer ordered as the kernel means), and a bar.sync that can never complete
 * ("deadlock").  A generation of all the CTA's threads is also a __syncthreads (a new epoch).
 *
 * setmaxnreg (PTX ISA, setmaxnreg; sm_90a): no effect on data; checked: a count that
 * is a multiple of 8 in 24 .. 256, executed by whole warpgroups, .inc not below and .dec not
 * above the warpgroup's previous setmaxnreg, and the warpgroups' limits together within the
 * SM's 64K registers (the .inc would wait for registers no warpgroup frees).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim_internal.h"
#include "tir/strbuf.h"

#define SIM_NAMED_BARRIERS 16
#define SIM_SM_REGISTERS 65536 /* 64K 32-bit registers per SM (Hopper) */

/* ---- happens-before ---- */
void sim_hb_enable(Sim *S) {
  if (S->vc_on) return;
  int64_t n = (int64_t)S->T * S->T;
  if (n > S->vc_cap) {
    free(S->vc);
    S->vc = malloc(sizeof *S->vc * (size_t)n);
    S->vc_cap = (int)n;
  }
  memset(S->vc, 0, sizeof *S->vc * (size_t)n);
  for (int t = 0; t < S->T; t++) S->vc[(int64_t)t * S->T + t] = 1;
  S->vc_on = 1;
}

int32_t *sim_hb_vector(Sim *S) { return calloc((size_t)S->T, sizeof(int32_t)); }

void sim_hb_release(Sim *S, int t, int32_t *into) {
  if (!S->vc_on || !into) return;
  int32_t *v = S->vc + (int64_t)t * S->T;
  for (int u = 0; u < S->T; u++)
    if (v[u] > into[u]) into[u] = v[u];
  v[t]++;
}

void sim_hb_acquire(Sim *S, int t, const int32_t *from) {
  if (!S->vc_on || !from) return;
  int32_t *v = S->vc + (int64_t)t * S->T;
  for (int u = 0; u < S->T; u++)
    if (from[u] > v[u]) v[u] = from[u];
}

/* ---- named barriers ---- */
typedef struct {
  int count, arrived; /* this generation's thread count (0: nobody arrived yet) and arrivals */
  int64_t gen;
  int32_t *vc;   /* join of this generation's arrivals */
  int *waiting;  /* its bar.sync threads (they acquire vc at completion) */
  int n_waiting;
  const tir_Node *stmt; /* the generation's first arrival */
  int tid;
} NamedBar;

struct SimNamed {
  NamedBar b[SIM_NAMED_BARRIERS];
};

static NamedBar *named(Sim *S, int id) {
  if (!S->named) S->named = calloc(1, sizeof *S->named);
  NamedBar *nb = &S->named->b[id];
  if (!nb->waiting) {
    nb->waiting = malloc(sizeof(int) * SIM_MAX_THREADS);
    nb->vc = calloc(SIM_MAX_THREADS, sizeof(int32_t));
  }
  return nb;
}

static void named_complete(Sim *S, NamedBar *nb) {
  for (int i = 0; i < nb->n_waiting; i++) sim_hb_acquire(S, nb->waiting[i], nb->vc);
  if (nb->count == S->T) S->epoch++; /* every thread of the CTA: a __syncthreads */
  nb->gen++;
  nb->count = nb->arrived = nb->n_waiting = 0;
  memset(nb->vc, 0, sizeof(int32_t) * (size_t)S->T);
}

/* The one value of argument i every thread of a passes (an issue when they differ). */
static int uniform_arg(Sim *S, const tir_Call *c, int i, const Act *a, const char *what, int64_t *out) {
  int mark = S->vtop;
  SVal *v = sim_eval(S, c->args->items[i], 0, a);
  if (!v) return -1;
  *out = v[a->ids[0]].i;
  for (int k = 1; k < a->n; k++)
    if (v[a->ids[k]].i != *out) {
      char x[96], y[96];
      S->vtop = mark;
      return sim_issue(S, "named_barrier", S->cur, a->ids[k], NULL, a->ids[0], NULL, -1, -1,
                       "%s: %s passes %s %lld, but %s passes %lld: the threads of one instruction must agree", c->op,
                       sim_thread_name(S, a->ids[k], x, sizeof x), what, (long long)v[a->ids[k]].i,
                       sim_thread_name(S, a->ids[0], y, sizeof y), (long long)*out) ? -1 : 1;
    }
  S->vtop = mark;
  return 0;
}

/* The arrival of a's threads at the barrier of c (bar.sync when wait).  *id_out and *gen_out:
 * the barrier and the generation the threads joined (id -1 when skipped after an issue).
 * Returns -1 on a stop. */
static int named_arrive(Sim *S, const tir_Call *c, const Act *a, int wait, int *id_out, int64_t *gen_out) {
  int64_t id, count;
  *id_out = -1;
  int rc = uniform_arg(S, c, 0, a, "barrier id", &id);
  if (rc) return rc < 0 ? -1 : 0;
  if ((rc = uniform_arg(S, c, 1, a, "thread count", &count))) return rc < 0 ? -1 : 0;
  S->rep->named_barriers++;
  int warps[SIM_MAX_THREADS / 32], nw;
  if (sim_full_warps(S, c, a, warps, &nw)) return -1;
  char who[96];
  if (id < 0 || id >= SIM_NAMED_BARRIERS)
    return sim_issue(S, "named_barrier", S->cur, a->ids[0], NULL, -1, NULL, -1, -1,
                     "%s: barrier id %lld (by %s) is outside 0 .. 15 (PTX ISA bar.sync / bar.arrive)", c->op, (long long)id,
                     sim_thread_name(S, a->ids[0], who, sizeof who));
  int whole = (S->T + 31) / 32 * 32;
  if (count <= 0 || count % 32 || count > whole)
    return sim_issue(S, "named_barrier", S->cur, a->ids[0], NULL, -1, NULL, -1, -1,
                     "%s: the thread count %lld of barrier %lld is not a positive multiple of 32 up to the CTA's %d threads "
                     "(PTX ISA bar.sync: whole warps arrive), by %s", c->op, (long long)count, (long long)id, S->T,
                     sim_thread_name(S, a->ids[0], who, sizeof who));
  sim_hb_enable(S);
  NamedBar *nb = named(S, (int)id);
  if (nb->arrived && nb->count != count) {
    char oth[96];
    if (sim_issue(S, "named_barrier", S->cur, a->ids[0], nb->stmt, nb->tid, NULL, -1, -1,
                  "%s: %s arrives at barrier %lld with thread count %lld, but %s arrived in the same generation with count %d "
                  "(the threads of one barrier must agree on its count)", c->op, sim_thread_name(S, a->ids[0], who, sizeof who),
                  (long long)id, (long long)count, sim_thread_name(S, nb->tid, oth, sizeof oth), nb->count))
      return -1;
  }
  if (!nb->arrived) {
    nb->count = (int)count;
    nb->stmt = S->cur;
    nb->tid = a->ids[0];
  }
  if (nb->arrived + a->n > nb->count) {
    char oth[96];
    if (sim_issue(S, "named_barrier", S->cur, a->ids[0], nb->stmt, nb->tid, NULL, -1, -1,
                  "%s: %d threads (%s ...) arrive at barrier %lld, which has %d of its %d threads already: more threads than "
                  "its count arrive before it completes, so the GPU completes it with some of them and the rest start the "
                  "next generation (the count is wrong, or threads arrive twice); first arrival of this generation: %s",
                  c->op, a->n, sim_thread_name(S, a->ids[0], who, sizeof who), (long long)id, nb->arrived, nb->count,
                  sim_thread_name(S, nb->tid, oth, sizeof oth)))
      return -1;
  }
  for (int k = 0; k < a->n; k++) {
    sim_hb_release(S, a->ids[k], nb->vc);
    if (wait) nb->waiting[nb->n_waiting++] = a->ids[k];
  }
  nb->arrived += a->n;
  *id_out = (int)id;
  *gen_out = nb->gen;
  if (nb->arrived >= nb->count) named_complete(S, nb);
  return 0;
}

/* ---- setmaxnreg ---- */
static int setmaxnreg(Sim *S, const tir_Call *c, const Act *a, int inc) {
  int64_t n;
  char who[96];
  if (!tir_is_const_int(c->args->items[0], &n) || n < 24 || n > 256 || n % 8)
    return sim_issue(S, "setmaxnreg", S->cur, a->ids[0], NULL, -1, NULL, -1, -1,
                     "%s takes a constant register count, a multiple of 8 in 24 .. 256 (PTX ISA setmaxnreg), by %s", c->op,
                     sim_thread_name(S, a->ids[0], who, sizeof who));
  int wgs[SIM_MAX_THREADS / 128];
  int nw = sim_warpgroups(S, c, a, wgs);
  if (nw < 0) return -1;
  for (int i = 0; i < nw; i++) {
    int w = wgs[i], prev = S->wg_nreg[w];
    if (prev && (inc ? n < prev : n > prev)) {
      if (sim_issue(S, "setmaxnreg", S->cur, 128 * w, NULL, -1, NULL, -1, -1,
                    "%s %lld in warpgroup %d, whose limit is %d since its previous setmaxnreg: .inc must not lower the "
                    "per-thread register count and .dec must not raise it (PTX ISA setmaxnreg)", c->op, (long long)n, w, prev))
        return -1;
    }
    S->wg_nreg[w] = (int)n;
  }
  int64_t total = 0, nwg = (S->T + 127) / 128;
  for (int w = 0; w < nwg; w++) {
    if (!S->wg_nreg[w]) return 0; /* a warpgroup whose limit is the compiler's: unknown */
    total += 128 * (int64_t)S->wg_nreg[w];
  }
  if (total > SIM_SM_REGISTERS) {
    tir_StrBuf sb;
    tir_sb_init(&sb);
    for (int w = 0; w < nwg; w++) tir_sb_printf(&sb, "%s%d", w ? ", " : "", S->wg_nreg[w]);
    int rc = sim_issue(S, "setmaxnreg", S->cur, a->ids[0], NULL, -1, NULL, -1, -1,
                       "%s: the warpgroups' register limits (%s per thread) need %lld registers, more than the %d of an SM: "
                       "the .inc waits for registers that no warpgroup releases", c->op, sb.data, (long long)total,
                       SIM_SM_REGISTERS);
    tir_sb_free(&sb);
    return rc;
  }
  return 0;
}

int sim_sync_builtin(Sim *S, const tir_Call *c, const Act *a) {
  const tir_BuiltinInfo *bi = tir_builtin_info(c->op);
  if (!bi) return 1;
  int id;
  int64_t gen;
  switch (bi->id) {
    case TIR_BI_PTX_BAR_ARRIVE: return named_arrive(S, c, a, 0, &id, &gen);
    case TIR_BI_PTX_SETMAXNREG_INC: return setmaxnreg(S, c, a, 1);
    case TIR_BI_PTX_SETMAXNREG_DEC: return setmaxnreg(S, c, a, 0);
    default: return 1;
  }
}

/* ---- blocking statements ---- */
int sim_wait_kind(const tir_Node *stmt) {
  if (!stmt || stmt->kind != TIR_Evaluate || ((const tir_Evaluate *)stmt)->value->kind != TIR_Call) return SIM_WAIT_NONE;
  const tir_BuiltinInfo *bi = tir_builtin_info(((const tir_Call *)((const tir_Evaluate *)stmt)->value)->op);
  if (!bi) return SIM_WAIT_NONE;
  return bi->id == TIR_BI_PTX_MBARRIER_WAIT ? SIM_WAIT_MBARRIER : bi->id == TIR_BI_PTX_BAR_SYNC ? SIM_WAIT_BAR_SYNC : SIM_WAIT_NONE;
}

void sim_wait_init(Sim *S, SimWait *w, const tir_Evaluate *stmt) {
  memset(w, 0, sizeof *w);
  if (!S->wait_pass) S->wait_pass = calloc(SIM_MAX_THREADS, sizeof *S->wait_pass);
  w->stmt = stmt;
  w->kind = sim_wait_kind(&stmt->hdr);
  w->inst = ++S->wait_inst;
  w->bar_id = -1;
}

static int bar_sync_step(Sim *S, SimWait *w, const Act *a) {
  if (!w->started) {
    w->started = 1;
    if (named_arrive(S, (const tir_Call *)w->stmt->value, a, 1, &w->bar_id, &w->gen)) return -1;
  }
  if (w->bar_id < 0 || S->named->b[w->bar_id].gen > w->gen) return 0; /* skipped after an issue, or complete */
  const NamedBar *nb = &S->named->b[w->bar_id];
  w->tid = a->ids[0];
  w->n_waiting = a->n;
  snprintf(w->what, sizeof w->what, "named barrier %d (bar.sync), which has %d of its %d threads", w->bar_id, nb->arrived, nb->count);
  return 1;
}

int sim_wait_step(Sim *S, SimWait *w, const Act *a) {
  S->cur = &w->stmt->hdr;
  int rc = w->kind == SIM_WAIT_BAR_SYNC ? bar_sync_step(S, w, a) : sim_mbarrier_wait_step(S, w, a);
  w->attempts++;
  return rc;
}

int sim_wait_lockstep(Sim *S, const tir_Evaluate *stmt, const Act *a) {
  SimWait w;
  sim_wait_init(S, &w, stmt);
  for (;;) {
    int rc = sim_wait_step(S, &w, a);
    if (rc <= 0) return rc;
    /* nothing else runs in lockstep: the wait cannot pass */
    char others[200] = "";
    if (a->n < S->T)
      snprintf(others, sizeof others, "; the CTA's other %d threads are not here: they wait where their control flow rejoins "
               "this statement's (the end of the enclosing if or loop)", S->T - a->n);
    if (w.kind == SIM_WAIT_MBARRIER) {
      if (sim_mbarrier_stuck(S, &w, a->n == S->T, others)) return -1;
      continue; /* check = false: the phase was completed as if it had; the others go on */
    }
    char who[96];
    if (sim_issue(S, "deadlock", &stmt->hdr, w.tid, S->named->b[w.bar_id].stmt, S->named->b[w.bar_id].tid, NULL, -1, -1,
                  "deadlock: %s and %d more threads wait at %s, and no thread is left to arrive%s",
                  sim_thread_name(S, w.tid, who, sizeof who), a->n - 1, w.what, others))
      return -1;
    named_complete(S, &S->named->b[w.bar_id]);
  }
}

void sim_sync_cta_begin(Sim *S) {
  S->vc_on = 0;
  memset(S->wg_nreg, 0, sizeof S->wg_nreg);
  if (S->named)
    for (int i = 0; i < SIM_NAMED_BARRIERS; i++) {
      NamedBar *nb = &S->named->b[i];
      nb->count = nb->arrived = nb->n_waiting = 0;
      nb->gen = 0;
      if (nb->vc) memset(nb->vc, 0, sizeof(int32_t) * SIM_MAX_THREADS);
    }
}

void sim_sync_free(Sim *S) {
  free(S->vc);
  S->vc = NULL;
  S->vc_cap = S->vc_on = 0;
  free(S->wait_pass);
  S->wait_pass = NULL;
  if (S->named)
    for (int i = 0; i < SIM_NAMED_BARRIERS; i++) {
      free(S->named->b[i].waiting);
      free(S->named->b[i].vc);
    }
  free(S->named);
  S->named = NULL;
}
