/* sim_mbarrier.c -- the simulator's TMA copies and mbarriers (include/tir/tma.h; PTX ISA
 * 9.7.13.15 mbarrier, 9.7.9.25 cp.async.bulk.tensor).
 *
 * An mbarrier (an 8-byte element of a shared uint64 buffer) has a phase number, the arrivals
 * its current phase still needs (mbarrier.init's count at the start of each phase) and a
 * transaction count: arrive.expect_tx adds bytes, a TMA copy completing on the barrier takes
 * its box's bytes off.  A phase completes when it has all its arrivals and the transaction
 * count is back to zero.  ptx_tma_load reads its source box when issued; the destination bytes
 * are in flight (any access is reported, naming the copy) until the phase the copy completes
 * on completes: then the data lands.  The copies complete (their bytes count) when a thread
 * waits on the barrier.  ptx_mbarrier_wait(bar, q) passes when the current phase's parity is
 * not q; otherwise the phase must complete now (sim_mbarrier_wait_step).  When it cannot, the
 * waiting threads block: in lockstep nothing else can run, so it is reported at once; in the
 * tasks of a divergent region (sim_task.c) the other branches run first, and it is reported
 * only when every task waits:
 *   - it has its arrivals but expects more bytes than the copies issued on it bring (or got
 *     more than it expected): a wrong expect_tx byte count ("mbarrier_tx");
 *   - it lacks arrivals: a deadlock.
 * Arrivals are releases and a wait that passes an acquire of the happens-before clocks
 * (sim_sync.c).  A TMA copy's issue is checked against the reads of its destination in the
 * barrier interval: each must happen before it (the consumers' arrival on the stage's "empty"
 * barrier and the producer's wait on it), else a write-after-read race.
 * TMA data landed through an mbarrier is ordered by it, not by __syncthreads: it counts as no
 * thread's write in the race shadow.  ptx_tma_store reads its shared box (race-checked: the
 * generic writes of other threads must be before a __syncthreads) and writes the tensor at
 * once.  A TMA copy touching bytes last accessed through the generic proxy needs a
 * fence.proxy.async in between (proxy_check).  Not modelled: clusters.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim_internal.h"
#include "tir/scope.h"
#include "tir/tma.h"

typedef struct {
  Store *st;
  int64_t byte, size;
  unsigned char *data;
  const tir_Node *stmt;
  int tid;
  int completed; /* its bytes were taken off the transaction count */
} TmaCopy;

typedef struct {
  Store *st;
  int64_t el;
  int64_t cta_gen;
  int count, pending;
  int64_t tx, expected; /* expected: bytes announced in this phase (messages) */
  int64_t phase;
  int64_t init_epoch;
  int init_tid;
  const tir_Node *init_stmt;
  TmaCopy *c;
  int nc, cc;
  int32_t *vc_cur, *vc_done; /* happens-before: the arrivals of this phase, of all completed ones */
} Bar;

struct SimBars {
  Bar *b;
  int n, cap;
};

static struct SimBars *bars(Sim *S) {
  if (!S->bars) S->bars = calloc(1, sizeof *S->bars);
  return S->bars;
}

static Bar *find_bar(Sim *S, Store *st, int64_t el, int create) {
  struct SimBars *B = bars(S);
  for (int i = 0; i < B->n; i++)
    if (B->b[i].st == st && B->b[i].el == el && B->b[i].cta_gen == S->cta_gen) return &B->b[i];
  if (!create) return NULL;
  if (B->n == B->cap) {
    B->cap = B->cap ? B->cap * 2 : 8;
    B->b = realloc(B->b, sizeof *B->b * (size_t)B->cap);
  }
  Bar *b = &B->b[B->n++];
  memset(b, 0, sizeof *b);
  b->st = st;
  b->el = el;
  b->cta_gen = S->cta_gen;
  b->count = -1; /* not initialized */
  b->vc_cur = sim_hb_vector(S);
  b->vc_done = sim_hb_vector(S);
  return b;
}

/* address_of(buf[index]) of a flat buffer: its storage and per-thread element indices */
static int addr_arg(Sim *S, const tir_Node *arg, const Act *a, Store **st, SVal **el, const char *op) {
  const tir_BufferLoad *l = tir_address_of_load(arg);
  if (!l || l->indices->size != 1) return sim_fail(S, arg, "%s expects address_of(buffer[index]) operands of flat buffers", op);
  *st = sim_store_of(S, l->buffer, arg);
  if (!*st) return -1;
  *el = sim_eval(S, l->indices->items[0], 0, a);
  return *el ? 0 : -1;
}

/* the mbarrier operand of thread t: must be an initialized 8-byte shared element */
static Bar *bar_of(Sim *S, Store *st, int64_t el, int t, const char *op) {
  char who[96];
  if (st->kind != ST_SHARED || st->esize != 8) {
    sim_fail(S, S->cur, "%s: an mbarrier is an 8-byte element of a shared buffer, not %s (%d-byte elements)", op,
             st->buf ? st->buf->name : "?", st->esize);
    return NULL;
  }
  if (!sim_in_bounds(S, st, el, 1, t, "mbarrier access")) return NULL;
  Bar *b = find_bar(S, st, el, 0);
  if (!b || b->count < 0) {
    sim_issue(S, "mbarrier_uninit", S->cur, t, NULL, -1, st->buf->name, el, st->n,
              "%s on %s[%lld] by %s, which no ptx_mbarrier_init has initialized in this CTA", op, st->buf->name, (long long)el,
              sim_thread_name(S, t, who, sizeof who));
    return NULL;
  }
  if (b->init_epoch == S->epoch && b->init_tid != t) {
    char oth[96];
    sim_issue(S, "race", S->cur, t, b->init_stmt, b->init_tid, st->buf->name, el, st->n,
              "%s on %s[%lld] by %s in the barrier interval in which %s initialized it (a __syncthreads must come between "
              "mbarrier.init and other threads' use)", op, st->buf->name, (long long)el, sim_thread_name(S, t, who, sizeof who),
              sim_thread_name(S, b->init_tid, oth, sizeof oth));
    return S->fatal ? NULL : b;
  }
  return b;
}

/* Cross-proxy ordering (PTX ISA 9.7.13.4 fence.proxy.async; memory consistency model, proxies):
 * a TMA copy (async proxy) may touch a shared byte last accessed through the generic proxy
 * (ld/st/ldmatrix, mbarrier.init) only after a fence.proxy.async that comes after that access
 * -- by the thread that accessed it or by the issuing thread (after an mbarrier wait / barrier
 * ordered the access before the fence).  Returns -1 when an issue stops the run. */
static int64_t *fence_steps(Sim *S) {
  if (!S->fence_step) S->fence_step = calloc(SIM_MAX_THREADS, sizeof *S->fence_step);
  return S->fence_step;
}

static int proxy_check(Sim *S, Store *st, int64_t byte, int64_t size, int t, const char *what) {
  int64_t *fs = fence_steps(S);
  for (int64_t i = 0; i < size; i++) {
    const Shadow *sh = &st->shadow[byte + i];
    if (!sh->g_step || fs[t] >= sh->g_step || (sh->g_thr >= 0 && fs[sh->g_thr] >= sh->g_step)) continue;
    char who[96], oth[96];
    return sim_issue(S, "proxy_fence", S->cur, t, sh->g_stmt, sh->g_thr, st->buf->name, (byte + i) / st->esize, st->n,
                     "%s by %s uses %s[%lld], which %s accessed through the generic proxy with no fence.proxy.async since "
                     "(ptx_fence_proxy_async after the access, or by the issuing thread after the wait that orders it): the "
                     "TMA unit may see the bytes as they were before", what, sim_thread_name(S, t, who, sizeof who),
                     st->buf->name, (long long)((byte + i) / st->esize), sim_thread_name(S, sh->g_thr, oth, sizeof oth));
  }
  return 0;
}

static void deliver(Sim *S, Bar *b) {
  for (int i = 0; i < b->nc; i++) {
    TmaCopy *c = &b->c[i];
    if (c->st->cta_gen == S->cta_gen) {
      memcpy(c->st->base + c->byte, c->data, (size_t)c->size);
      for (int64_t k = 0; k < c->size; k++) {
        Shadow *sh = &c->st->shadow[c->byte + k];
        if (sh->pending) sh->pending--;
        sh->w_epoch = -1; /* ordered by the mbarrier: no thread's write */
        sh->w_stmt = c->stmt;
      }
    }
    free(c->data);
  }
  b->nc = 0;
}

static void complete_phase(Sim *S, Bar *b) {
  deliver(S, b);
  for (int u = 0; u < S->T; u++) {
    if (b->vc_cur[u] > b->vc_done[u]) b->vc_done[u] = b->vc_cur[u];
    b->vc_cur[u] = 0;
  }
  b->phase++;
  b->pending = b->count;
  b->tx = 0;
  b->expected = 0;
}

/* Counts the copies in flight on b (they may complete at any time; here: now). */
static int complete_copies(Sim *S, Bar *b, int tid) {
  for (int i = 0; i < b->nc; i++) {
    TmaCopy *c = &b->c[i];
    if (c->completed) continue;
    c->completed = 1;
    b->tx -= c->size;
  }
  /* a negative count is transient while arrivals (arrive.expect_tx) are still to come */
  if (b->tx < 0 && b->pending == 0 && b->nc) {
    const TmaCopy *c = &b->c[b->nc - 1];
    char who[96];
    if (sim_issue(S, "mbarrier_tx", c->stmt, tid, NULL, c->tid, b->st->buf->name, b->el, b->st->n,
                  "wrong expect_tx byte count on %s[%lld] (phase %lld): TMA copies completing on it bring %lld bytes more "
                  "than ptx_mbarrier_arrive_expect_tx announced (%lld); the phase would complete before the data landed, "
                  "seen by %s", b->st->buf->name, (long long)b->el, (long long)b->phase, (long long)-b->tx,
                  (long long)b->expected, sim_thread_name(S, tid, who, sizeof who)))
      return -1;
    b->tx = 0;
  }
  return 0;
}

static int try_complete(Sim *S, Bar *b) {
  if (b->pending == 0 && b->tx == 0) {
    int in_flight = 0;
    for (int i = 0; i < b->nc; i++) in_flight += !b->c[i].completed;
    if (!in_flight) complete_phase(S, b);
  }
  return 0;
}

static int arrive(Sim *S, Bar *b, int t) {
  if (b->pending <= 0) {
    char who[96];
    if (sim_issue(S, "mbarrier_arrivals", S->cur, t, b->init_stmt, b->init_tid, b->st->buf->name, b->el, b->st->n,
                  "%s arrives on %s[%lld] (phase %lld), which already has all %d arrivals of its mbarrier.init count but "
                  "still waits for %lld transaction bytes", sim_thread_name(S, t, who, sizeof who), b->st->buf->name,
                  (long long)b->el, (long long)b->phase, b->count, (long long)b->tx))
      return -1;
    return 0;
  }
  b->pending--;
  sim_hb_release(S, t, b->vc_cur);
  return try_complete(S, b);
}

static int eval_dim(void *p, const tir_Node *e, int64_t *v) {
  void **ctx = p;
  Sim *S = ctx[0];
  const Act *a = ctx[1];
  int mark = S->vtop;
  SVal *r = sim_eval(S, e, 0, a);
  S->vtop = mark;
  if (!r) return 0;
  *v = r[a->ids[0]].i;
  return 1;
}

/* the tensor map operand: its description and the global storage it names */
static int desc_arg(Sim *S, const tir_Call *c, int pos, const Act *a, tir_TmaDesc *d, Store **tensor) {
  char why[256];
  void *ctx[2] = {S, (void *)a};
  const tir_Node *dn = c->args->items[pos];
  if (tir_tma_desc_from_call(dn, eval_dim, ctx, d, why, sizeof why)) return S->fatal ? -1 : sim_fail(S, &c->hdr, "%s: %s", c->op, why);
  const tir_Node *data = ((const tir_Call *)dn)->args->items[0];
  int *slot = data->kind == TIR_Var ? sim_map_slot(&S->stmap, data, 0) : NULL;
  if (!slot || *slot < 0) return sim_fail(S, &c->hdr, "%s: the tensor map's buffer is not an argument of the kernel", c->op);
  *tensor = S->st[*slot];
  int64_t elems = 1;
  for (int i = 0; i < d->rank; i++) elems *= d->dims[i];
  if ((*tensor)->kind != ST_GLOBAL || (*tensor)->esize != tir_dtype_bytes(d->dtype) || (*tensor)->n < elems)
    return sim_fail(S, &c->hdr, "%s: the tensor map describes %lld global elements of %d bytes; %s has %lld of %d", c->op,
                    (long long)elems, tir_dtype_bytes(d->dtype), (*tensor)->buf ? (*tensor)->buf->name : "?",
                    (long long)(*tensor)->n, (*tensor)->esize);
  int im2col = strcmp(c->op, "ptx_tma_load_im2col") == 0, want = im2col ? 2 * d->rank - 2 : d->rank;
  if (d->im2col != im2col)
    return sim_fail(S, &c->hdr, "%s needs %s tensor map", c->op, im2col ? "an im2col (tma_im2col_descriptor)" : "a tiled (tma_descriptor)");
  if (c->args->size - (pos == 1 ? 3 : 2) != want)
    return sim_fail(S, &c->hdr, "%s: %d coordinates%s for a rank-%d tensor map (%d expected)", c->op, c->args->size - (pos == 1 ? 3 : 2),
                    im2col ? " and offsets" : "", d->rank, want);
  return 0;
}

/* Write after read: the TMA copy by thread t may land any time after its issue, so every read of
 * its destination in this barrier interval must happen before the issue (sim_sync.c). */
static int refill_check(Sim *S, Store *ds, int64_t db, int64_t bytes, int t) {
  for (int64_t i = 0; i < bytes; i++) {
    const Shadow *sh = &ds->shadow[db + i];
    if (sh->r_epoch != S->epoch) continue;
    for (int j = 0; j < 2; j++) {
      int r = sh->r_thr[j];
      if (r < 0 || r == t || sim_hb(S, r, sh->r_clk[j], t)) continue;
      char who[96], oth[96];
      return sim_issue(S, "race", S->cur, t, sh->r_stmt[j], r, ds->buf->name, (db + i) / ds->esize, ds->n,
                       "shared-memory race (write after read) on %s[%lld]: a TMA copy issued by %s refills it, but %s read it "
                       "and nothing orders that read before the copy (no mbarrier arrival of the reader that the issuing "
                       "thread waited on since, nor a __syncthreads): a producer that does not wait on the stage's empty "
                       "barrier, or a consumer that read the stage before its full barrier",
                       ds->buf->name, (long long)((db + i) / ds->esize), sim_thread_name(S, t, who, sizeof who),
                       sim_thread_name(S, r, oth, sizeof oth));
    }
  }
  return 0;
}

static int tma_load(Sim *S, const tir_Call *c, const Act *a) {
  int mark = S->vtop;
  tir_TmaDesc d;
  Store *tensor, *ds, *bs;
  SVal *dst, *bar, *co[2 * TIR_TMA_MAX_RANK];
  if (desc_arg(S, c, 1, a, &d, &tensor)) return -1;
  if (addr_arg(S, c->args->items[0], a, &ds, &dst, c->op) || addr_arg(S, c->args->items[2], a, &bs, &bar, c->op)) return -1;
  if (ds->kind != ST_SHARED) return sim_fail(S, &c->hdr, "ptx_tma_load copies into shared memory, not into %s", ds->buf->name);
  const int nco = d.im2col ? 2 * d.rank - 2 : d.rank; /* (im2col: the offsets after the coordinates) */
  for (int i = 0; i < nco; i++)
    if (!(co[i] = sim_eval(S, c->args->items[3 + i], 0, a))) return -1;
  int64_t bytes = tir_tma_box_bytes(&d);
  for (int k = 0; k < a->n; k++) {
    int t = a->ids[k];
    char who[96];
    Bar *b = bar_of(S, bs, bar[t].i, t, c->op);
    if (!b) {
      if (S->fatal) return -1;
      continue;
    }
    int64_t db = dst[t].i * ds->esize;
    if (db % (d.swizzle ? TIR_TMA_SMEM_ALIGN : 128)) {
      if (sim_issue(S, "misaligned", S->cur, t, NULL, -1, ds->buf->name, dst[t].i, ds->n,
                    "ptx_tma_load's destination %s[%lld] is not %d-byte aligned (%s; TMA needs 128 bytes, a swizzled box "
                    "its 1024-byte pattern)", ds->buf->name, (long long)dst[t].i, d.swizzle ? TIR_TMA_SMEM_ALIGN : 128,
                    sim_thread_name(S, t, who, sizeof who)))
        return -1;
      continue;
    }
    if (!sim_in_bounds(S, ds, dst[t].i, bytes / ds->esize, t, "TMA write")) {
      if (S->fatal) return -1;
      continue;
    }
    if (proxy_check(S, ds, db, bytes, t, "a TMA copy") || proxy_check(S, bs, bar[t].i * 8, 8, t, "the mbarrier of a TMA copy")) return -1;
    for (int64_t i = 0; i < bytes; i++) {
      Shadow *sh = &ds->shadow[db + i];
      if (sh->pending) {
        char oth[96];
        if (sim_issue(S, "async_race", S->cur, t, sh->p_stmt, sh->p_thr, ds->buf->name, (db + i) / ds->esize, ds->n,
                      "%s issues a TMA copy to %s[%lld] while another copy to it, issued by %s, has not landed", 
                      sim_thread_name(S, t, who, sizeof who), ds->buf->name, (long long)((db + i) / ds->esize),
                      sim_thread_name(S, sh->p_thr, oth, sizeof oth)))
          return -1;
        break;
      }
    }
    if (refill_check(S, ds, db, bytes, t)) return -1;
    int64_t cs[2 * TIR_TMA_MAX_RANK];
    for (int i = 0; i < nco; i++) cs[i] = co[i][t].i;
    TmaCopy cp = {ds, db, bytes, malloc((size_t)(bytes > 0 ? bytes : 1)), S->cur, t, 0};
    /* the source is read at issue; the box lands swizzled by the tensor map's mode (physical
     * memory: lower_buffer_swizzle addressed the tile's other accesses the same way) */
    if (d.im2col) tir_tma_copy_in_im2col(&d, tensor->base, cs, cs + d.rank, (char *)cp.data);
    else tir_tma_copy_in(&d, tensor->base, cs, (char *)cp.data);
    for (int64_t i = 0; i < bytes; i++) {
      Shadow *sh = &ds->shadow[db + i];
      sh->pending++;
      sh->p_thr = (int16_t)t;
      sh->p_stmt = S->cur;
    }
    if (b->nc == b->cc) {
      b->cc = b->cc ? b->cc * 2 : 4;
      b->c = realloc(b->c, sizeof *b->c * (size_t)b->cc);
    }
    b->c[b->nc++] = cp;
    S->rep->tma_copies++;
  }
  S->vtop = mark;
  return 0;
}

/* TMA stores read their shared source asynchronously until a cp.async.bulk.wait_group.read of
 * the issuing thread covers their bulk async-group (PTX ISA 9.7.9.25.3): the copy itself is done
 * at the issue here, so a write into the source before that wait (the tile reused for the next
 * tile's accumulators too early) and a CTA that ends before it are reported. */
static int bulk_note(Sim *S, Store *st, int64_t byte, int64_t size, int tid) {
  if (S->n_bulk == S->cap_bulk) {
    int cap = S->cap_bulk ? 2 * S->cap_bulk : 256;
    struct SimBulkRead *r = realloc(S->bulk, sizeof *r * (size_t)cap);
    if (!r) return sim_fail(S, S->cur, "out of memory recording the reads of TMA stores");
    S->bulk = r, S->cap_bulk = cap;
  }
  S->bulk[S->n_bulk++] = (struct SimBulkRead){st, byte, size, tid, 0, S->cur};
  return 0;
}

static int64_t *bulk_seq(Sim *S) {
  if (!S->bulk_seq) S->bulk_seq = calloc(SIM_MAX_THREADS, sizeof *S->bulk_seq);
  return S->bulk_seq;
}

int sim_bulk_read_check(Sim *S, Store *st, int64_t byte, int size, int tid) {
  for (int i = 0; i < S->n_bulk; i++) {
    const struct SimBulkRead *r = &S->bulk[i];
    if (r->st != st || byte + size <= r->byte || byte >= r->byte + r->size) continue;
    char who[96], oth[96];
    int64_t el = (byte > r->byte ? byte : r->byte) / st->esize;
    return sim_issue(S, "tma_store_race", S->cur, tid, r->stmt, r->tid, st->buf->name, el, st->n,
                     "%s writes %s[%lld], which a TMA store issued by %s still reads: no ptx_bulk_wait_group_read of that "
                     "thread has covered the store's bulk group (ptx_bulk_commit_group) before the write (PTX ISA "
                     "cp.async.bulk.wait_group.read)",
                     sim_thread_name(S, tid, who, sizeof who), st->buf->name, (long long)el, sim_thread_name(S, r->tid, oth, sizeof oth));
  }
  return 0;
}

static int bulk_group(Sim *S, const tir_Call *c, const Act *a, int wait) {
  int64_t *seq = bulk_seq(S), keep_n = 0;
  if (wait && (c->args->size != 1 || !tir_is_const_int(c->args->items[0], &keep_n) || keep_n < 0))
    return sim_fail(S, &c->hdr, "ptx_bulk_wait_group_read takes one constant count of groups left in flight");
  if (!seq) return sim_fail(S, &c->hdr, "out of memory recording bulk async-groups");
  for (int k = 0; k < a->n; k++) {
    int t = a->ids[k], keep = 0;
    if (!wait) seq[t]++;
    for (int i = 0; i < S->n_bulk; i++) {
      struct SimBulkRead *r = &S->bulk[i];
      if (r->tid == t && !wait && r->group == 0) r->group = seq[t];
      if (!(r->tid == t && wait && r->group && r->group <= seq[t] - keep_n)) S->bulk[keep++] = *r;
    }
    S->n_bulk = keep;
  }
  return 0;
}

static int tma_store(Sim *S, const tir_Call *c, const Act *a) {
  int mark = S->vtop;
  tir_TmaDesc d;
  Store *tensor, *ss;
  SVal *src, *co[TIR_TMA_MAX_RANK];
  if (desc_arg(S, c, 0, a, &d, &tensor)) return -1;
  if (addr_arg(S, c->args->items[1], a, &ss, &src, c->op)) return -1;
  if (ss->kind != ST_SHARED) return sim_fail(S, &c->hdr, "ptx_tma_store copies from shared memory, not from %s", ss->buf->name);
  for (int i = 0; i < d.rank; i++)
    if (!(co[i] = sim_eval(S, c->args->items[2 + i], 0, a))) return -1;
  int es = ss->esize;
  int64_t n = tir_tma_box_bytes(&d) / tir_dtype_bytes(d.dtype);
  for (int k = 0; k < a->n && !S->fatal; k++) {
    int t = a->ids[k];
    if (proxy_check(S, ss, src[t].i * es, tir_tma_box_bytes(&d), t, "a TMA store")) return -1;
    for (int64_t e = 0; e < n; e++) {
      int64_t rem = e, el = 0, stride = 1, inside = 1;
      for (int i = d.rank - 1; i >= 0; i--) {
        int64_t x = co[i][t].i + rem % d.box[i];
        rem /= d.box[i];
        if (x < 0 || x >= d.dims[i]) inside = 0;
        el += x * stride;
        stride *= d.dims[i];
      }
      if (!inside) continue;
      int64_t sel = src[t].i + tir_tma_swizzle(e * es, d.swizzle) / es;
      SVal v;
      if (sim_load_elem(S, ss, sel, t, ss->dtype, &v) || sim_store_elem(S, tensor, el, t, ss->dtype, v)) return -1;
    }
    if (bulk_note(S, ss, src[t].i * es, tir_tma_box_bytes(&d), t)) return -1;
  }
  S->vtop = mark;
  return 0;
}

int sim_tma_builtin(Sim *S, const tir_Call *c, const Act *a) {
  const tir_BuiltinInfo *bi = tir_builtin_info(c->op);
  if (!bi) return 1;
  switch (bi->id) {
    case TIR_BI_PTX_TMA_LOAD:
    case TIR_BI_PTX_TMA_LOAD_IM2COL: return tma_load(S, c, a);
    case TIR_BI_PTX_TMA_STORE: return tma_store(S, c, a);
    case TIR_BI_PTX_BULK_COMMIT_GROUP:
    case TIR_BI_PTX_BULK_WAIT_GROUP_READ:
      if (bulk_group(S, c, a, bi->id == TIR_BI_PTX_BULK_WAIT_GROUP_READ)) return -1;
      for (int k = 0; k < a->n; k++) fence_steps(S)[a->ids[k]] = S->gen_step;
      return 0;
    case TIR_BI_PTX_FENCE_PROXY_ASYNC:
      for (int k = 0; k < a->n; k++) fence_steps(S)[a->ids[k]] = S->gen_step;
      return 0;
    case TIR_BI_PTX_MBARRIER_INIT:
    case TIR_BI_PTX_MBARRIER_ARRIVE:
    case TIR_BI_PTX_CP_ASYNC_MBARRIER_ARRIVE_NOINC:
    case TIR_BI_PTX_MBARRIER_ARRIVE_EXPECT_TX: break;
    default: return 1;
  }
  int mark = S->vtop;
  Store *bs;
  SVal *el, *arg = NULL;
  if (addr_arg(S, c->args->items[0], a, &bs, &el, c->op)) return -1;
  if (c->args->size == 2 && !(arg = sim_eval(S, c->args->items[1], 0, a))) return -1;
  int rc = 0;
  if (bi->id == TIR_BI_PTX_MBARRIER_INIT) {
    sim_hb_enable(S);
    for (int k = 0; k < a->n && !rc; k++) {
      int t = a->ids[k];
      char who[96];
      if (bs->kind != ST_SHARED || bs->esize != 8) {
        rc = sim_fail(S, &c->hdr, "ptx_mbarrier_init: an mbarrier is an 8-byte element of a shared buffer");
        break;
      }
      if (!sim_in_bounds(S, bs, el[t].i, 1, t, "mbarrier init")) {
        rc = S->fatal ? -1 : 0;
        continue;
      }
      Bar *b = find_bar(S, bs, el[t].i, 1);
      if (b->count >= 0 && b->init_epoch == S->epoch) {
        rc = sim_issue(S, "mbarrier_init", S->cur, t, b->init_stmt, b->init_tid, bs->buf->name, el[t].i, bs->n,
                       "%s initializes %s[%lld] again in the barrier interval of its previous init (one thread should "
                       "initialize each mbarrier)", sim_thread_name(S, t, who, sizeof who), bs->buf->name, (long long)el[t].i);
        continue;
      }
      if (arg[t].i < 1 || arg[t].i > (1 << 20) - 1) {
        rc = sim_fail(S, &c->hdr, "ptx_mbarrier_init: the arrival count %lld is outside 1 .. 2^20 - 1 (PTX ISA mbarrier.init)",
                      (long long)arg[t].i);
        break;
      }
      for (int i = 0; i < b->nc; i++) free(b->c[i].data);
      b->nc = 0;
      memset(b->vc_cur, 0, sizeof(int32_t) * (size_t)S->T);
      b->count = b->pending = (int)arg[t].i;
      b->tx = b->expected = b->phase = 0;
      b->init_epoch = S->epoch;
      b->init_tid = t;
      b->init_stmt = S->cur;
      rc = sim_shared_write(S, bs, el[t].i * 8, 8, t, S->cur);
    }
    S->vtop = mark;
    return rc;
  }
  for (int k = 0; k < a->n && !rc; k++) {
    int t = a->ids[k];
    Bar *b = bar_of(S, bs, el[t].i, t, c->op);
    if (!b) {
      rc = S->fatal ? -1 : 0;
      continue;
    }
    if (bi->id == TIR_BI_PTX_MBARRIER_ARRIVE_EXPECT_TX) {
      b->tx += arg[t].i;
      b->expected += arg[t].i;
    }
    /* (cp.async.mbarrier.arrive.noinc: the thread's copies land first, then the arrival) */
    if (bi->id == TIR_BI_PTX_CP_ASYNC_MBARRIER_ARRIVE_NOINC && (rc = sim_async_land_thread(S, t))) break;
    rc = arrive(S, b, t);
  }
  S->vtop = mark;
  return rc;
}

/* ptx_mbarrier_wait for the threads of a not yet through it (SimWait.inst), in thread order: a
 * thread passes when its barrier's current phase parity differs from the one it waits on, else
 * the copies in flight on the barrier complete now and the phase with them if it can. */
int sim_mbarrier_wait_step(Sim *S, SimWait *w, const Act *a) {
  const tir_Call *c = (const tir_Call *)w->stmt->value;
  int mark = S->vtop, rc = 0, waiting = 0;
  Store *bs;
  SVal *el, *par;
  if (addr_arg(S, c->args->items[0], a, &bs, &el, c->op) || !(par = sim_eval(S, c->args->items[1], 0, a))) return -1;
  for (int k = 0; k < a->n && !rc; k++) {
    int t = a->ids[k];
    if (S->wait_pass[t] == w->inst) continue;
    Bar *b = bar_of(S, bs, el[t].i, t, c->op);
    if (!b) {
      rc = S->fatal ? -1 : 0;
      S->wait_pass[t] = w->inst; /* skipped (check = false) */
      continue;
    }
    int64_t q = par[t].i & 1;
    if ((b->phase & 1) == q) {
      if (!w->attempts) S->rep->mbarrier_waits++;
      if ((rc = complete_copies(S, b, t))) break;
      try_complete(S, b);
    }
    if ((b->phase & 1) != q) { /* through: the phase's arrivals happen before what follows */
      S->wait_pass[t] = w->inst;
      sim_hb_acquire(S, t, b->vc_done);
      continue;
    }
    if (!waiting++) {
      w->bar = b;
      w->parity = q;
      w->tid = t;
      w->tx_stuck = b->pending == 0;
      snprintf(w->what, sizeof w->what, "phase %lld of %s[%lld] (parity %lld), which still needs %d of its %d arrivals%s",
               (long long)b->phase, b->st->buf->name, (long long)b->el, (long long)q, b->pending, b->count,
               b->tx ? " and transaction bytes" : "");
    }
  }
  w->n_waiting = waiting;
  S->vtop = mark;
  return rc ? -1 : waiting ? 1 : 0;
}

int sim_mbarrier_tx_stuck(Sim *S, SimWait *w) {
  Bar *b = w->bar;
  char who[96];
  int rc = sim_issue(S, "mbarrier_tx", &w->stmt->hdr, w->tid, NULL, -1, b->st->buf->name, b->el, b->st->n,
                     "wrong expect_tx byte count on %s[%lld]: phase %lld has all its arrivals and expects %lld more bytes "
                     "than the TMA copies issued on it bring (announced %lld); %s would wait forever",
                     b->st->buf->name, (long long)b->el, (long long)b->phase, (long long)b->tx, (long long)b->expected,
                     sim_thread_name(S, w->tid, who, sizeof who));
  complete_phase(S, b); /* check = false: go on as if it had */
  return rc;
}

int sim_mbarrier_stuck(Sim *S, SimWait *w, int all, const char *others) {
  Bar *b = w->bar;
  if (w->tx_stuck) return sim_mbarrier_tx_stuck(S, w);
  int rc;
  if (all)
    rc = sim_issue(S, "deadlock", &w->stmt->hdr, w->tid, b->init_stmt, b->init_tid, b->st->buf->name, b->el, b->st->n,
                   "deadlock: every thread of the CTA waits on phase %lld of %s[%lld] (parity %lld), which still needs %d of "
                   "its %d arrivals%s, and no thread is left to make them", (long long)b->phase, b->st->buf->name,
                   (long long)b->el, (long long)w->parity, b->pending, b->count, b->tx ? " and transaction bytes" : "");
  else {
    char who[96];
    rc = sim_issue(S, "deadlock", &w->stmt->hdr, w->tid, b->init_stmt, b->init_tid, b->st->buf->name, b->el, b->st->n,
                   "deadlock: %s waits on %s, and no thread that could make them can run%s",
                   sim_thread_name(S, w->tid, who, sizeof who), w->what, others ? others : "");
  }
  complete_phase(S, b);
  return rc;
}

/* At the end of a CTA: TMA copies whose phase never completed never landed. */
int sim_mbarrier_cta_end(Sim *S) {
  int rc = 0;
  if (S->n_bulk && !S->fatal) {
    char who[96];
    const struct SimBulkRead *r = &S->bulk[0];
    rc = sim_issue(S, "tma_store_not_waited", r->stmt, r->tid, NULL, -1, r->st->buf->name, r->byte / r->st->esize, r->st->n,
                   "the CTA ends while a TMA store issued by %s may still read %s[%lld]: no ptx_bulk_wait_group_read of that "
                   "thread covered its bulk group (the CTA's shared memory must outlive the read)",
                   sim_thread_name(S, r->tid, who, sizeof who), r->st->buf->name, (long long)(r->byte / r->st->esize));
  }
  S->n_bulk = 0;
  if (S->bulk_seq) memset(S->bulk_seq, 0, SIM_MAX_THREADS * sizeof *S->bulk_seq);
  if (!S->bars) return rc;
  struct SimBars *B = S->bars;
  for (int i = 0; i < B->n; i++) {
    Bar *b = &B->b[i];
    if (b->nc && !rc && !S->fatal) {
      char who[96];
      rc = sim_issue(S, "tma_not_waited", b->c[0].stmt, b->c[0].tid, NULL, -1, b->st->buf->name, b->el, b->st->n,
                     "%d TMA cop%s issued by %s on %s[%lld] never landed: no ptx_mbarrier_wait saw its phase complete "
                     "before the CTA ended", b->nc, b->nc == 1 ? "y" : "ies", sim_thread_name(S, b->c[0].tid, who, sizeof who),
                     b->st->buf->name, (long long)b->el);
    }
    for (int k = 0; k < b->nc; k++) {
      TmaCopy *c = &b->c[k];
      if (c->st->cta_gen == S->cta_gen)
        for (int64_t j = 0; j < c->size; j++)
          if (c->st->shadow[c->byte + j].pending) c->st->shadow[c->byte + j].pending--;
      free(c->data);
    }
    free(b->c);
    free(b->vc_cur);
    free(b->vc_done);
  }
  B->n = 0;
  return rc;
}

void sim_mbarrier_free(Sim *S) {
  free(S->fence_step);
  S->fence_step = NULL;
  free(S->bulk);
  free(S->bulk_seq);
  S->bulk = NULL, S->bulk_seq = NULL;
  S->n_bulk = S->cap_bulk = 0;
  if (!S->bars) return;
  for (int i = 0; i < S->bars->n; i++) {
    for (int k = 0; k < S->bars->b[i].nc; k++) free(S->bars->b[i].c[k].data);
    free(S->bars->b[i].c);
    free(S->bars->b[i].vc_cur);
    free(S->bars->b[i].vc_done);
  }
  free(S->bars->b);
  free(S->bars);
  S->bars = NULL;
}
