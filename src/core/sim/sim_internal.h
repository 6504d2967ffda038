/* sim_internal.h -- shared state of the GPU simulator (sim.c: launches and reports;
 * sim_exec.c: statements and expressions over a CTA's threads; sim_mem.c: storage, the
 * shared-memory race shadow, cp.async; sim_mbarrier.c: TMA copies and mbarriers; sim_warp.c: warp-level builtins). */
#ifndef TIR_SIM_INTERNAL_H
#define TIR_SIM_INTERNAL_H

#include <stdint.h>

#include "tir/error.h"
#include "tir/sim.h"
#include "tir/value.h"

#define SIM_MAX_THREADS 1024

typedef tir_Value SVal; /* value.h: the interpreter's value rules */
/* the simulator's names for them */
static inline SVal sim_norm(tir_DType t, SVal v) { return tir_value_norm(t, v); }
static inline SVal sim_cast(tir_DType to, tir_DType from, SVal v) { return tir_value_cast(to, from, v); }

/* ---- pointer-keyed map (open addressing) ---- */
typedef struct {
  const void **keys;
  int *vals;
  int cap, n;
} SimMap;
int *sim_map_slot(SimMap *m, const void *k, int insert); /* NULL when absent and !insert; new slots hold -1 */
void sim_map_free(SimMap *m);

/* the active threads of a step: thread ids (x + y*bx + z*bx*by), ascending */
typedef struct {
  const int *ids;
  int n;
} Act;

enum { ST_GLOBAL, ST_SHARED, ST_LOCAL, ST_WARP, ST_FRAG, ST_WGACC /* wgmma.accumulator: n/128 per thread */ };

/* Race shadow of one byte of shared memory.  Epochs are barrier intervals (a global counter,
 * so entries from earlier CTAs never match). */
typedef struct {
  const tir_Node *w_stmt, *r_stmt[2], *p_stmt;
  int64_t w_epoch, r_epoch;
  int16_t w_thr, r_thr[2], p_thr; /* p_*: the latest cp.async in flight to it */
  uint16_t pending;               /* cp.async copies in flight to this byte */
  int16_t g_thr;                  /* the thread of the latest generic-proxy access (g_step) */
  int64_t g_step;                 /* when (Sim.gen_step) the byte was last accessed through the generic proxy */
  const tir_Node *g_stmt;
  int32_t w_clk, r_clk[2];        /* the accessing thread's own clock (sim_clock) at the write / reads */
} Shadow;

/* Provenance of a global element (for the oracle comparison). */
typedef struct {
  const tir_Node *stmt;
  int64_t cta[3];
  int32_t tid;
  int32_t kernel;
} Prov;

typedef struct {
  const tir_Var *data;
  const tir_Buffer *buf;
  int kind;          /* ST_* */
  char *base;
  tir_DType dtype;   /* element type */
  int esize;
  int64_t n;         /* elements per instance (per thread for local/warp, per warp for fragments) */
  int64_t inst_bytes;
  int owned;
  Shadow *shadow;    /* shared */
  int64_t cta_gen;   /* shared: the CTA that last entered its allocation */
  Prov *prov;        /* global arguments compared with an oracle */
  int64_t *origin;   /* warp buffers: per lane element, the shared element ldmatrix loaded it from
                        ((storage index << 40) | element), -1 when it came from elsewhere */
  int64_t *wg_group; /* wgmma accumulators: per thread element, 1 + the wgmma group that writes it (0: none) */
  int index;         /* position in Sim.st */
  int entered;       /* local/warp/fragment: allocations are kept for the kernel */
} Store;

typedef struct {
  Store *st;
  int64_t byte;
  int size;
  unsigned char data[16];
  const tir_Node *stmt;
} Copy;

typedef struct {
  Copy *c;
  int n, cap;
} Group;

typedef struct {
  Group open;
  Group *closed; /* oldest first */
  int n_closed, cap_closed;
} ThreadAsync;

typedef struct {
  const tir_Node *a, *b;
  char kind[24];
} Reported;

/* A blocking statement in progress (sim_sync.c): ptx_mbarrier_wait or ptx_bar_sync, run by the
 * threads of a step until each is through.  What the first thread still waiting waits on is kept
 * for the deadlock message. */
enum { SIM_WAIT_NONE, SIM_WAIT_MBARRIER, SIM_WAIT_BAR_SYNC };
typedef struct SimWait {
  const tir_Evaluate *stmt;
  int kind;          /* SIM_WAIT_* */
  int64_t inst;      /* threads t through it have Sim.wait_pass[t] == inst */
  int attempts;
  int started;       /* bar.sync: the threads have arrived */
  int bar_id;        /* bar.sync: the named barrier and the generation it waits for */
  int64_t gen;
  void *bar;         /* mbarrier wait: the first waiting thread's mbarrier (sim_mbarrier.c's Bar) */
  int64_t parity;
  int tid;           /* the first thread still waiting */
  int n_waiting;
  int tx_stuck;      /* mbarrier: all arrivals are in but transaction bytes are missing */
  char what[256];    /* what it waits on, for messages */
} SimWait;

typedef struct Sim {
  const tir_SimOptions *opt;
  tir_SimReport *rep;
  int check, max_issues;
  /* the launch */
  const tir_Kernel *K;
  int kernel_index;
  int T, bdim[3];
  int (*kbdim)[3]; /* block dims of each kernel (for messages after the run) */
  int64_t gdim[3], cta[3];
  int64_t epoch, cta_gen;
  int fatal; /* stop: an issue in check mode or an error */
  const tir_Node *cur; /* statement being executed */
  /* per-thread scalars: Var -> slot -> SVal[SIM_MAX_THREADS] */
  SimMap vars;
  SVal **vv;
  int n_vv, cap_vv;
  /* storages: data Var -> index */
  SimMap stmap;
  Store **st;
  int n_st, cap_st;
  int n_global; /* the first n_global storages are the arguments and temporaries */
  /* scratch: value vectors and thread-id lists, used as stacks */
  SVal **vpool;
  int vtop, vcap;
  int **ipool;
  int itop, icap;
  int all_ids[SIM_MAX_THREADS];
  ThreadAsync *async; /* per thread */
  int64_t gen_step;     /* counts generic-proxy shared accesses (Shadow.g_step) */
  int64_t *fence_step;  /* per thread: gen_step at its latest fence.proxy.async (sim_mbarrier.c) */
  struct SimBars *bars; /* mbarriers and TMA copies in flight (sim_mbarrier.c) */
  Reported *reported;
  int n_reported, cap_reported;
  const char *issue_tail; /* appended to the next issue's message */
  const tir_Node **hinted; /* statements with a hint already */
  int n_hinted;
  /* wgmma groups per warpgroup (sim_wgmma.c): ids below wg_done are complete, wg_next is the
   * open (uncommitted) group; reset per CTA */
  int64_t wg_done[SIM_MAX_THREADS / 128], wg_next[SIM_MAX_THREADS / 128];
  /* shared bytes read by wgmma groups not yet complete: their reads count at the wait */
  struct SimWgRead { Store *st; int64_t byte; int size, wg; int64_t group; } *wg_reads;
  int n_wg_reads, cap_wg_reads;
  /* happens-before (sim_sync.c): vector clocks, on from a CTA's first mbarrier.init or named
   * barrier; vc[t * T + u] is what thread t knows of thread u's clock */
  int32_t *vc;
  int vc_cap, vc_on;
  struct SimNamed *named;    /* named barriers of the CTA (sim_sync.c) */
  int wg_nreg[SIM_MAX_THREADS / 128]; /* setmaxnreg: the warpgroup's register limit, 0 unknown */
  int64_t *wait_pass, wait_inst;      /* SimWait.inst */
  struct SimSched *sched;    /* the cooperative tasks of a divergent region (sim_task.c), NULL in lockstep */
  /* shared bytes TMA stores still read (sim_mbarrier.c): a store's source until a
   * cp.async.bulk.wait_group.read of the issuing thread covers its bulk group (group 0: not
   * committed yet); bulk_seq[t]: thread t's committed groups */
  struct SimBulkRead { Store *st; int64_t byte, size; int tid; int64_t group; const tir_Node *stmt; } *bulk;
  int n_bulk, cap_bulk;
  int64_t *bulk_seq;
  SimMap syncmap;            /* statement -> SIM_HAS_* bits (sim_task.c) */
} Sim;

/* ---- sim.c ---- */
/* Records an issue.  Returns -1 (and sets S->fatal and the error) in check mode, else 0. */
int sim_issue(Sim *S, const char *kind, const tir_Node *stmt, int tid, const tir_Node *other_stmt, int other_tid,
              const char *buffer, int64_t index, int64_t extent, const char *fmt, ...) __attribute__((format(printf, 10, 11)));
/* Whether an issue of this kind at this statement pair was reported already (and remembers it):
 * with check off, each is reported once per CTA and only counted after that. */
int sim_reported_before(Sim *S, const char *kind, const tir_Node *x, const tir_Node *y);
/* A program the simulator cannot run: RuntimeError, always fatal. */
int sim_fail(Sim *S, const tir_Node *where, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* Adds a hint (a likely cause, reported with mismatches and in the report), once per statement. */
void sim_hint(Sim *S, const tir_Node *stmt, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* "thread (x, y, z) (warp w, lane l)" into buf */
const char *sim_thread_name(const Sim *S, int tid, char *buf, size_t cap);
/* first line of a statement's text, at most ~160 characters (malloc'd) */
char *sim_stmt_text(const tir_Node *s);

/* ---- sim_exec.c ---- */
SVal *sim_vnew(Sim *S);
int *sim_inew(Sim *S);
SVal *sim_eval(Sim *S, const tir_Node *e, int lane, const Act *a);
/* the per-thread values of a variable (NULL when unknown and !create) */
SVal *sim_var(Sim *S, const tir_Var *v, int create);
int sim_exec(Sim *S, const tir_Node *s, const Act *a);
Store *sim_store_of(Sim *S, const tir_Buffer *b, const tir_Node *where);

/* ---- sim_mem.c ---- */
Store *sim_new_store(Sim *S, const tir_Var *data);
int sim_alloc(Sim *S, const tir_Allocate *a, const Act *act);
void sim_free_stores(Sim *S, int from);
void sim_poison(char *p, tir_DType t, int64_t n);
/* element el of st for thread tid (bounds already checked) */
static inline char *sim_addr(const Store *st, int tid, int64_t el) {
  int64_t inst = st->kind == ST_LOCAL || st->kind == ST_WARP || st->kind == ST_WGACC ? tid : st->kind == ST_FRAG ? tid / 32 : 0;
  return st->base + inst * st->inst_bytes + el * st->esize;
}
/* Bounds check of [el, el + count) in st; an issue when outside.  Returns 1 when in bounds. */
int sim_in_bounds(Sim *S, Store *st, int64_t el, int64_t count, int tid, const char *what);
/* Race bookkeeping of shared bytes [byte, byte + size) (no-op for other storages);
 * returns -1 when an issue stops the run. */
int sim_shared_read(Sim *S, Store *st, int64_t byte, int size, int tid);
int sim_shared_write(Sim *S, Store *st, int64_t byte, int size, int tid, const tir_Node *stmt);
/* One scalar element: loads (converted to `as`), stores (converted from `from`) with bounds
 * and race checks.  Return -1 when the run stops; a skipped access (issue, check off) is 0. */
int sim_load_elem(Sim *S, Store *st, int64_t el, int tid, tir_DType as, SVal *out);
int sim_store_elem(Sim *S, Store *st, int64_t el, int tid, tir_DType from, SVal v);
int sim_async_land_thread(Sim *S, int tid);
int sim_async_builtin(Sim *S, const tir_Call *c, const Act *a); /* 1: not an async builtin */
int sim_async_cta_end(Sim *S);
void sim_async_free(Sim *S);
int sim_barrier(Sim *S, const tir_Node *stmt, const Act *a);
SVal *sim_grid_arrive(Sim *S, const tir_Call *c, const Act *a); /* tir_grid_arrive_last */
SVal *sim_grid_wait(Sim *S, const tir_Call *c, const Act *a);   /* tir_grid_wait */

/* ---- sim_mbarrier.c ---- */
int sim_tma_builtin(Sim *S, const tir_Call *c, const Act *a); /* 1: not a TMA / mbarrier builtin */
int sim_mbarrier_cta_end(Sim *S);
void sim_mbarrier_free(Sim *S);
/* an issue (-1 on a stop) when [byte, byte + size) of shared store st is the source of a TMA store
 * still reading it (sim_mem.c's shared writes ask); 0 otherwise */
int sim_bulk_read_check(Sim *S, Store *st, int64_t byte, int size, int tid);
/* ---- sim_wgmma.c ---- */
int sim_wgmma_builtin(Sim *S, const tir_Call *c, const Act *a); /* 1: not a wgmma builtin */
/* an issue (1; -1 on a stop) when one of the count registers from off of thread t of wgmma A
 * fragment st (buffer b) is still read by an incomplete wgmma group (sim_wgmma.c); 0 otherwise */
int sim_wgmma_a_pending(Sim *S, const tir_Call *c, Store *st, const tir_Buffer *b, int t, int64_t off, int count);
void sim_wgmma_cta_begin(Sim *S);
void sim_wgmma_free(Sim *S);

int sim_warpgroups(Sim *S, const tir_Call *c, const Act *a, int *wgs); /* the (complete) warpgroups of a; -1 on a stop */

/* ---- sim_sync.c: happens-before, named barriers, setmaxnreg, blocking statements ---- */
/* Vector clocks order accesses that mbarrier phases and named barriers (not __syncthreads'
 * epochs) separate.  An access records its thread's own clock (0 while the clocks are off);
 * a release (an mbarrier arrival, a named-barrier arrival) joins the thread's clock vector
 * into the barrier's and advances the thread's own clock; an acquire (a wait that passes)
 * joins the barrier's vector into the thread's. */
void sim_hb_enable(Sim *S);
static inline int32_t sim_clock(const Sim *S, int t) { return S->vc_on ? S->vc[(int64_t)t * S->T + t] : 0; }
/* whether thread x's access at its clock c happens before thread y's next access */
static inline int sim_hb(const Sim *S, int x, int32_t c, int y) { return c > 0 && S->vc_on && S->vc[(int64_t)y * S->T + x] >= c; }
int32_t *sim_hb_vector(Sim *S); /* a zero vector of T clocks (calloc) */
void sim_hb_release(Sim *S, int t, int32_t *into);
void sim_hb_acquire(Sim *S, int t, const int32_t *from);
void sim_sync_cta_begin(Sim *S);
void sim_sync_free(Sim *S);
/* ptx_bar_sync / ptx_bar_arrive / ptx_setmaxnreg_*: 1 when c is none of them */
int sim_sync_builtin(Sim *S, const tir_Call *c, const Act *a);
/* the SIM_WAIT_* kind of a statement (an Evaluate of ptx_mbarrier_wait / ptx_bar_sync) */
int sim_wait_kind(const tir_Node *stmt);
void sim_wait_init(Sim *S, SimWait *w, const tir_Evaluate *stmt);
/* One attempt: 0 when every thread of a is through, 1 when some still wait (w says on what), -1 on a stop. */
int sim_wait_step(Sim *S, SimWait *w, const Act *a);
/* A blocking statement in lockstep (no tasks): a wait that cannot pass is a deadlock. */
int sim_wait_lockstep(Sim *S, const tir_Evaluate *stmt, const Act *a);
/* sim_mbarrier.c's side of SimWait */
int sim_mbarrier_wait_step(Sim *S, SimWait *w, const Act *a);
/* the issue of a wait that can never pass: mbarrier_tx when only bytes are missing, else deadlock
 * (all: every thread of the CTA waits there; others: what the rest of the CTA does) */
int sim_mbarrier_stuck(Sim *S, SimWait *w, int all, const char *others);
int sim_mbarrier_tx_stuck(Sim *S, SimWait *w);

/* ---- sim_task.c: divergent branches that wait on each other ---- */
enum { SIM_HAS_WAIT = 1, SIM_HAS_SYNC = 2 };
int sim_sync_bits(Sim *S, const tir_Node *s); /* SIM_HAS_* of a statement and everything in it */
/* an if whose branches both have threads and may wait on each other: runs them as tasks */
int sim_task_region(Sim *S, const tir_IfThenElse *f, const Act *yes, const Act *no);
void sim_task_free(Sim *S);

/* ---- sim_warp.c ---- */
int sim_full_warps(Sim *S, const tir_Call *c, const Act *a, int *warps, int *nw);
int sim_warp_builtin(Sim *S, const tir_Call *c, const Act *a); /* 1: not a warp builtin */
SVal *sim_shfl(Sim *S, const tir_Call *c, int mode, const Act *a); /* ptx_shfl_sync_*, PTX ISA 9.7.8.6 */
/* D = C + A B (A tm x tk, B tk x tn, C tm x tn row-major) in k order, rounded to acc after every
 * step as the interpreter's desc does; integers exactly, wrapping */
void sim_mma_tile(const double *A, const double *B, double *C, int tm, int tn, int tk, tir_DType acc);

#endif
