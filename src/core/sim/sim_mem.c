/* sim_mem.c -- the simulator's memory: storages per scope, element accesses with bounds
 * checks, the shared-memory race shadow, cp.async groups, barriers.
 *
 * Races (shared memory only; per byte): every access records the barrier interval ("epoch")
 * it happened in and its thread's clock (sim_sync.c).  A read of a byte another thread wrote in
 * the same epoch (read-after-write) or a write of a byte another thread read in the same epoch
 * (write-after-read) is a race unless the first access happens before the second through
 * mbarrier phases or named barriers: no __syncthreads orders the two.  Write-after-write is not reported (TVM's thread_sync does
 * not order it either).  cp.async (PTX ISA 9.7.9.25): the copy is issued with its source read
 * at once, but its destination bytes are "in flight" until a cp.async.wait_group of the
 * issuing thread covers its group; any access to an in-flight byte is reported, and the
 * landed data counts as a write of the issuing thread in the epoch of the wait. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim_internal.h"
#include "tir/runtime.h"
#include "tir/scope.h"

/* ---- storages ---- */
Store *sim_new_store(Sim *S, const tir_Var *data) {
  if (S->n_st == S->cap_st) {
    S->cap_st = S->cap_st ? S->cap_st * 2 : 16;
    S->st = realloc(S->st, sizeof *S->st * (size_t)S->cap_st);
  }
  Store *st = calloc(1, sizeof *st);
  st->data = data;
  st->index = S->n_st;
  S->st[S->n_st] = st;
  *sim_map_slot(&S->stmap, data, 1) = S->n_st++;
  return st;
}

void sim_free_stores(Sim *S, int from) {
  for (int i = from; i < S->n_st; i++) {
    Store *st = S->st[i];
    int *slot = sim_map_slot(&S->stmap, st->data, 0);
    if (slot && *slot == i) *slot = -1;
    if (st->owned) free(st->base);
    free(st->shadow);
    free(st->prov);
    free(st->origin);
    free(st->wg_group);
    free(st);
  }
  if (from < S->n_st) S->n_st = from;
}

void sim_poison(char *p, tir_DType t, int64_t n) {
  /* NaN for floats, 0x5a bytes for integers: reads of unwritten memory show (as the interpreter) */
  if (tir_dtype_is_float(t))
    for (int64_t i = 0; i < n; i++) tir_store_scalar_f(p, t, i, NAN);
  else
    memset(p, 0x5a, (size_t)n * (size_t)tir_dtype_bytes(t));
}

static int scope_kind(const char *scope) {
  switch (tir_scope_parse(scope).rank) {
    case TIR_SCOPE_SHARED: return ST_SHARED;
    case TIR_SCOPE_LOCAL: return ST_LOCAL;
    case TIR_SCOPE_WARP: return ST_WARP;
    case TIR_SCOPE_WMMA_MATRIX_A:
    case TIR_SCOPE_WMMA_MATRIX_B:
    case TIR_SCOPE_WMMA_ACCUMULATOR: return ST_FRAG;
    case TIR_SCOPE_WGMMA_ACCUMULATOR:
    case TIR_SCOPE_WGMMA_MATRIX_A: return ST_WGACC; /* a warpgroup fragment: n / 128 elements a thread */
    default: return -1;
  }
}

/* An Allocate inside a kernel.  Shared buffers are one per CTA and keep their contents when
 * the allocation is re-entered (CUDA __shared__ variables have static storage); local, warp
 * and fragment buffers are fresh (poisoned) on every entry of the threads that enter. */
int sim_alloc(Sim *S, const tir_Allocate *al, const Act *a) {
  const tir_Buffer *b = al->buffer;
  int kind = scope_kind(b->scope);
  if (kind < 0)
    return sim_fail(S, &al->hdr, "buffer %s has scope '%s', which cannot be allocated inside a kernel", b->name, b->scope);
  int *slot = sim_map_slot(&S->stmap, b->data, 0);
  Store *st = slot && *slot >= 0 ? S->st[*slot] : NULL;
  if (!st) {
    int64_t n = 1;
    Act one = {S->all_ids, 1};
    for (int i = 0; i < b->shape->size; i++) {
      int mark = S->vtop;
      SVal *d = sim_eval(S, b->shape->items[i], 0, &one);
      if (!d) return -1;
      n *= d[0].i;
      S->vtop = mark;
    }
    n *= b->hdr.dtype.lanes;
    if (n < 0 || n > ((int64_t)1 << 28)) return sim_fail(S, &al->hdr, "cannot allocate buffer %s of %lld elements", b->name, (long long)n);
    if (kind == ST_WARP && n % 256)
      return sim_fail(S, &al->hdr, "warp buffer %s has %lld elements, not a whole number of 16x16 tiles (as the codegen requires)",
                      b->name, (long long)n);
    st = sim_new_store(S, b->data);
    st->buf = b;
    st->kind = kind;
    st->dtype = tir_dtype_element(b->hdr.dtype);
    st->esize = tir_dtype_bytes(st->dtype);
    if (kind == ST_WGACC && n % (64 * 8))
      return sim_fail(S, &al->hdr, "%s buffer %s has %lld elements, not a whole number of 64 x 8 tiles (as the codegen requires)",
                      b->scope, b->name, (long long)n);
    st->n = kind == ST_WARP ? n / 32 : kind == ST_WGACC ? n / 128 : n;
    int64_t inst = kind == ST_LOCAL || kind == ST_WARP || kind == ST_WGACC ? S->T : kind == ST_FRAG ? (S->T + 31) / 32 : 1;
    st->inst_bytes = st->n * st->esize;
    st->base = calloc((size_t)(inst * st->n > 0 ? inst * st->n : 1), (size_t)st->esize);
    st->owned = 1;
    if (!st->base) return sim_fail(S, &al->hdr, "out of memory allocating %s", b->name);
    st->cta_gen = -1;
    /* (where ldmatrix loaded each element from: warp buffers and wgmma A fragments) */
    if (kind == ST_WARP || tir_scope_parse(b->scope).rank == TIR_SCOPE_WGMMA_MATRIX_A) st->origin = malloc(sizeof(int64_t) * (size_t)(inst * st->n > 0 ? inst * st->n : 1));
    if (kind == ST_WGACC) st->wg_group = calloc((size_t)(inst * st->n > 0 ? inst * st->n : 1), sizeof(int64_t));
    if (kind == ST_SHARED) {
      st->shadow = calloc((size_t)(st->inst_bytes ? st->inst_bytes : 1), sizeof(Shadow));
      if (!st->shadow) return sim_fail(S, &al->hdr, "out of memory allocating the race shadow of %s", b->name);
    }
  }
  if (kind == ST_SHARED) {
    if (st->cta_gen != S->cta_gen) { /* first entry in this CTA */
      st->cta_gen = S->cta_gen;
      sim_poison(st->base, st->dtype, st->n);
      memset(st->shadow, 0, (size_t)st->inst_bytes * sizeof(Shadow));
    }
    return 0;
  }
  for (int k = 0; k < a->n; k++) {
    int t = a->ids[k];
    if (kind == ST_FRAG && k > 0 && a->ids[k - 1] / 32 == t / 32) continue;
    sim_poison(sim_addr(st, t, 0), st->dtype, st->n);
    if (st->origin) memset(st->origin + (int64_t)t * st->n, 0xff, sizeof(int64_t) * (size_t)st->n);
    if (st->wg_group) memset(st->wg_group + (int64_t)t * st->n, 0, sizeof(int64_t) * (size_t)st->n);
  }
  return 0;
}

/* ---- element accesses ---- */
static const char *scope_word(const Store *st) {
  switch (st->kind) {
    case ST_SHARED: return "shared";
    case ST_LOCAL: return "local";
    case ST_WARP: return "warp (per lane)";
    case ST_FRAG: return "wmma fragment";
    case ST_WGACC: return "wgmma accumulator (per thread)";
    default: return "global";
  }
}

int sim_in_bounds(Sim *S, Store *st, int64_t el, int64_t count, int tid, const char *what) {
  if (el >= 0 && el + count <= st->n) return 1;
  char who[96];
  const char *name = st->buf ? st->buf->name : "?";
  if (count == 1)
    sim_issue(S, "out_of_bounds", S->cur, tid, NULL, -1, name, el, st->n,
              "out-of-bounds %s of %s[%lld]: the %s buffer has %lld elements%s, by %s", what, name, (long long)el, scope_word(st),
              (long long)st->n, st->kind == ST_WARP ? " per lane" : "", sim_thread_name(S, tid, who, sizeof who));
  else
    sim_issue(S, "out_of_bounds", S->cur, tid, NULL, -1, name, el, st->n,
              "out-of-bounds %s of %s[%lld .. %lld]: the %s buffer has %lld elements%s, by %s", what, name, (long long)el,
              (long long)(el + count - 1), scope_word(st), (long long)st->n, st->kind == ST_WARP ? " per lane" : "",
              sim_thread_name(S, tid, who, sizeof who));
  return 0;
}

int sim_reported_before(Sim *S, const char *kind, const tir_Node *x, const tir_Node *y) {
  /* one report per (kind, statement pair): a race usually repeats for many bytes and threads */
  for (int i = 0; i < S->n_reported; i++)
    if (S->reported[i].a == x && S->reported[i].b == y && strcmp(S->reported[i].kind, kind) == 0) return 1;
  if (S->n_reported == S->cap_reported) {
    S->cap_reported = S->cap_reported ? S->cap_reported * 2 : 16;
    S->reported = realloc(S->reported, sizeof *S->reported * (size_t)S->cap_reported);
  }
  Reported *r = &S->reported[S->n_reported++];
  r->a = x;
  r->b = y;
  snprintf(r->kind, sizeof r->kind, "%s", kind);
  return 0;
}

static int inflight_issue(Sim *S, Store *st, int64_t byte, int tid, const Shadow *sh, const char *verb) {
  char who[96], other[96];
  int64_t el = byte / st->esize;
  const tir_Node *v = sh->p_stmt && sh->p_stmt->kind == TIR_Evaluate ? ((const tir_Evaluate *)sh->p_stmt)->value : NULL;
  if (v && v->kind == TIR_Call && (strcmp(((const tir_Call *)v)->op, "ptx_tma_load") == 0 ||
                                          strcmp(((const tir_Call *)v)->op, "ptx_tma_load_im2col") == 0))
    return sim_issue(S, "tma_race", S->cur, tid, sh->p_stmt, sh->p_thr, st->buf->name, el, st->n,
                     "%s %s %s[%lld], the destination of a TMA copy issued by %s, before the mbarrier phase the copy "
                     "completes on has completed (a ptx_mbarrier_wait on that phase is missing, or waits on the wrong "
                     "barrier or parity)",
                     sim_thread_name(S, tid, who, sizeof who), verb, st->buf->name, (long long)el,
                     sim_thread_name(S, sh->p_thr, other, sizeof other));
  return sim_issue(S, "async_race", S->cur, tid, sh->p_stmt, sh->p_thr, st->buf->name, el, st->n,
                   "%s %s %s[%lld] while a cp.async to it is in flight: it was issued by %s and no cp.async.wait_group of "
                   "that thread has covered its group yet (a ptx_wait_group is missing, or allows too many groups in flight)",
                   sim_thread_name(S, tid, who, sizeof who), verb, st->buf->name, (long long)el,
                   sim_thread_name(S, sh->p_thr, other, sizeof other));
}

static int race_issue(Sim *S, Store *st, int64_t byte, int tid, const tir_Node *stmt, int other, const tir_Node *ostmt, int raw) {
  char who[96], oth[96];
  int64_t el = byte / st->esize;
  if (raw)
    return sim_issue(S, "race", stmt, tid, ostmt, other, st->buf->name, el, st->n,
                     "shared-memory race (read after write) on %s[%lld]: %s reads it, but %s wrote it in the same barrier "
                     "interval (no __syncthreads / tvm_storage_sync between the write and the read)",
                     st->buf->name, (long long)el, sim_thread_name(S, tid, who, sizeof who), sim_thread_name(S, other, oth, sizeof oth));
  return sim_issue(S, "race", stmt, tid, ostmt, other, st->buf->name, el, st->n,
                   "shared-memory race (write after read) on %s[%lld]: %s writes it, but %s read it in the same barrier "
                   "interval (no __syncthreads / tvm_storage_sync between the read and the write)",
                   st->buf->name, (long long)el, sim_thread_name(S, tid, who, sizeof who), sim_thread_name(S, other, oth, sizeof oth));
}

int sim_shared_read(Sim *S, Store *st, int64_t byte, int size, int tid) {
  if (st->kind != ST_SHARED) return 0;
  S->rep->shared_reads++;
  int raced = 0; /* one report per access */
  for (int i = 0; i < size; i++) {
    Shadow *sh = &st->shadow[byte + i];
    if (sh->pending) return inflight_issue(S, st, byte + i, tid, sh, "reads");
    if (sh->w_epoch == S->epoch && sh->w_thr != tid && !raced && !sim_hb(S, sh->w_thr, sh->w_clk, tid)) {
      raced = 1;
      if (race_issue(S, st, byte + i, tid, S->cur, sh->w_thr, sh->w_stmt, 1)) return -1;
    }
    sh->g_step = ++S->gen_step;
    sh->g_thr = (int16_t)tid;
    sh->g_stmt = S->cur;
    int32_t clk = sim_clock(S, tid);
    if (sh->r_epoch != S->epoch) {
      sh->r_epoch = S->epoch;
      sh->r_thr[0] = (int16_t)tid;
      sh->r_stmt[0] = S->cur;
      sh->r_clk[0] = clk;
      sh->r_thr[1] = -1;
    } else if (sh->r_thr[0] == tid) {
      sh->r_clk[0] = clk; /* its latest read is the one a later write must follow */
    } else if (sh->r_thr[1] == tid) {
      sh->r_clk[1] = clk;
    } else if (sh->r_thr[1] < 0) {
      sh->r_thr[1] = (int16_t)tid;
      sh->r_stmt[1] = S->cur;
      sh->r_clk[1] = clk;
    }
  }
  return 0;
}

int sim_shared_write(Sim *S, Store *st, int64_t byte, int size, int tid, const tir_Node *stmt) {
  if (st->kind != ST_SHARED) return 0;
  S->rep->shared_writes++;
  if (S->n_bulk && sim_bulk_read_check(S, st, byte, size, tid)) return -1;
  int raced = 0;
  for (int i = 0; i < size; i++) {
    Shadow *sh = &st->shadow[byte + i];
    if (sh->pending) return inflight_issue(S, st, byte + i, tid, sh, "writes");
    if (sh->r_epoch == S->epoch && !raced) {
      int j = -1;
      for (int q = 1; q >= 0; q--)
        if (sh->r_thr[q] >= 0 && sh->r_thr[q] != tid && !sim_hb(S, sh->r_thr[q], sh->r_clk[q], tid)) j = q;
      if (j >= 0) {
        raced = 1;
        if (race_issue(S, st, byte + i, tid, stmt, sh->r_thr[j], sh->r_stmt[j], 0)) return -1;
      }
    }
    sh->w_epoch = S->epoch;
    sh->w_thr = (int16_t)tid;
    sh->w_stmt = stmt;
    sh->w_clk = sim_clock(S, tid);
    sh->g_step = ++S->gen_step;
    sh->g_thr = (int16_t)tid;
    sh->g_stmt = stmt;
  }
  return 0;
}

int sim_load_elem(Sim *S, Store *st, int64_t el, int tid, tir_DType as, SVal *out) {
  if (!sim_in_bounds(S, st, el, 1, tid, "read")) return S->fatal ? -1 : 0;
  if (sim_shared_read(S, st, el * st->esize, st->esize, tid)) return -1;
  const char *p = sim_addr(st, tid, el);
  SVal v;
  if (tir_dtype_is_float(st->dtype)) v.f = tir_load_scalar_f(p, st->dtype, 0);
  else v.i = tir_load_scalar_i(p, st->dtype, 0);
  /* viewed with another dtype of the same width (rare): convert, as the interpreter */
  if (tir_dtype_is_float(as) != tir_dtype_is_float(st->dtype))
    v = tir_dtype_is_float(as) ? (SVal){.f = (double)v.i} : (SVal){.i = tir_float_to_int_sat(v.f, as)};
  *out = v;
  return 0;
}

int sim_store_elem(Sim *S, Store *st, int64_t el, int tid, tir_DType from, SVal v) {
  if (!sim_in_bounds(S, st, el, 1, tid, "write")) return S->fatal ? -1 : 0;
  if (sim_shared_write(S, st, el * st->esize, st->esize, tid, S->cur)) return -1;
  char *p = sim_addr(st, tid, el);
  if (st->origin) st->origin[(int64_t)tid * st->n + el] = -1;
  int ff = tir_dtype_is_float(from);
  if (tir_dtype_is_float(st->dtype)) tir_store_scalar_f(p, st->dtype, 0, ff ? v.f : (double)v.i);
  else tir_store_scalar_i(p, st->dtype, 0, ff ? tir_float_to_int_sat(v.f, st->dtype) : v.i);
  if (st->prov) {
    Prov *pv = &st->prov[el];
    pv->stmt = S->cur;
    memcpy(pv->cta, S->cta, sizeof pv->cta);
    pv->tid = tid;
    pv->kernel = S->kernel_index;
  }
  return 0;
}

/* ---- barriers ---- */
/* __syncthreads: every thread of the CTA must arrive (CUDA C++ Programming Guide, "__syncthreads()
 * is allowed in conditional code but only if the conditional evaluates identically across the
 * entire thread block"; PTX ISA bar.sync: all threads of the CTA participate). */
int sim_barrier(Sim *S, const tir_Node *stmt, const Act *a) {
  S->rep->barriers++;
  if (a->n != S->T) {
    int missing = -1;
    for (int k = 0, t = 0; t < S->T; t++) {
      if (k < a->n && a->ids[k] == t) k++;
      else {
        missing = t;
        break;
      }
    }
    char who[96], oth[96];
    if (sim_issue(S, "divergent_barrier", stmt, a->ids[0], NULL, missing, NULL, -1, -1,
                  "__syncthreads (tvm_storage_sync) is reached by %d of the CTA's %d threads (e.g. %s) under divergent control "
                  "flow: %s is not there (another branch of an if, or it left a loop earlier); on the GPU this deadlocks or is "
                  "undefined",
                  a->n, S->T, sim_thread_name(S, a->ids[0], who, sizeof who), sim_thread_name(S, missing, oth, sizeof oth)))
      return -1;
  }
  S->epoch++;
  return 0;
}

/* tir_grid_arrive_last(address_of(counter[i]), count) (docs/BUILTINS.md): a CTA-wide call (a barrier:
 * every thread of the CTA, the same counter element) whose one arrival adds 1 to the int32 counter; 1 in
 * every thread of the CTA that brings it to count, which resets it to 0.  CTAs run one after another
 * here, so the CTA that arrives last is the last one simulated of those sharing the counter. */
static int addr_operand(Sim *S, const tir_Node *arg, const Act *a, Store **st, SVal **el, const char *op);

SVal *sim_grid_arrive(Sim *S, const tir_Call *c, const Act *a) {
  Store *st;
  SVal *el;
  if (addr_operand(S, c->args->items[0], a, &st, &el, "tir_grid_arrive_last")) return NULL;
  if (st->kind != ST_GLOBAL || st->dtype.code != TIR_DT_INT || st->dtype.bits != 32) {
    sim_fail(S, &c->hdr, "tir_grid_arrive_last: the counter %s must be an int32 buffer in global memory", st->buf ? st->buf->name : "");
    return NULL;
  }
  SVal *cnt = sim_eval(S, c->args->items[1], 0, a);
  if (!cnt) return NULL;
  int t0 = a->ids[0];
  for (int k = 1; k < a->n; k++)
    if (el[a->ids[k]].i != el[t0].i || cnt[a->ids[k]].i != cnt[t0].i) {
      sim_fail(S, &c->hdr, "tir_grid_arrive_last: the threads of a CTA name different counters or counts");
      return NULL;
    }
  if (sim_barrier(S, &c->hdr, a)) return NULL;
  if (!sim_in_bounds(S, st, el[t0].i, 1, t0, "tir_grid_arrive_last's counter")) return NULL;
  int32_t *p = (int32_t *)(void *)sim_addr(st, t0, el[t0].i), v;
  memcpy(&v, p, 4);
  int last = (int64_t)v + 1 == cnt[t0].i;
  v = last ? 0 : v + 1;
  memcpy(p, &v, 4);
  if (sim_barrier(S, &c->hdr, a)) return NULL;
  SVal *r = sim_vnew(S);
  for (int k = 0; k < a->n; k++) r[a->ids[k]].i = last;
  return r;
}

/* tir_grid_wait(address_of(counter[i]), value) (docs/BUILTINS.md): each thread waits until the counter
 * is at least value.  CTAs run one after another here, so the CTAs it waits for must have run already
 * (on the GPU they were launched before it); a counter below value is reported: on the GPU the wait
 * would depend on CTAs that have not arrived before it. */
SVal *sim_grid_wait(Sim *S, const tir_Call *c, const Act *a) {
  Store *st;
  SVal *el;
  if (addr_operand(S, c->args->items[0], a, &st, &el, "tir_grid_wait")) return NULL;
  if (st->kind != ST_GLOBAL || st->dtype.code != TIR_DT_INT || st->dtype.bits != 32) {
    sim_fail(S, &c->hdr, "tir_grid_wait: the counter %s must be an int32 buffer in global memory", st->buf ? st->buf->name : "");
    return NULL;
  }
  SVal *val = sim_eval(S, c->args->items[1], 0, a);
  if (!val) return NULL;
  for (int k = 0; k < a->n; k++) {
    int t = a->ids[k];
    if (!sim_in_bounds(S, st, el[t].i, 1, t, "tir_grid_wait's counter")) return NULL;
    int32_t v;
    memcpy(&v, sim_addr(st, t, el[t].i), 4);
    if (v < val[t].i) {
      sim_fail(S, &c->hdr, "tir_grid_wait: counter %s[%lld] is %d, below %lld, when this CTA waits on it: the CTAs that should arrive "
               "first have not run (simulated in launch order), so on the GPU it would wait for CTAs launched after it",
               st->buf ? st->buf->name : "", (long long)el[t].i, (int)v, (long long)val[t].i);
      return NULL;
    }
  }
  return sim_vnew(S);
}

/* ---- cp.async (PTX ISA 9.7.9.25: cp.async, cp.async.commit_group, cp.async.wait_group) ---- */
static ThreadAsync *tasync(Sim *S, int tid) {
  if (!S->async) S->async = calloc(SIM_MAX_THREADS, sizeof *S->async);
  return &S->async[tid];
}

static void group_push(Group *g, const Copy *c) {
  if (g->n == g->cap) {
    g->cap = g->cap ? g->cap * 2 : 16;
    g->c = realloc(g->c, sizeof *g->c * (size_t)g->cap);
  }
  g->c[g->n++] = *c;
}

/* address_of(buf[index]) operand: storage and per-thread element index */
static int addr_operand(Sim *S, const tir_Node *arg, const Act *a, Store **st, SVal **el, const char *op) {
  const tir_BufferLoad *l = tir_address_of_load(arg);
  if (!l || l->indices->size != 1) return sim_fail(S, arg, "%s expects address_of(buffer[index]) operands of flat buffers", op);
  *st = sim_store_of(S, l->buffer, arg);
  if (!*st) return -1;
  *el = sim_eval(S, l->indices->items[0], 0, a);
  return *el ? 0 : -1;
}

/* The memory requests of one cp.async statement: per warp with active lanes one request, the
 * distinct 32-byte global sectors its copies read, and those of them whose bytes land in more
 * than one 32-byte shared sector (tir_SimReport.cp_async_*). */
static void count_requests(Sim *S, const Act *a, const SVal *src, int sesize, const SVal *dst, int desize, const SVal *bytes) {
  for (int k = 0; k < a->n;) {
    int w = a->ids[k] / 32;
    int64_t sec[128], to[128]; /* global sector -> the shared sector its first bytes went to */
    int split[128], ns = 0;
    S->rep->cp_async_requests++;
    for (; k < a->n && a->ids[k] / 32 == w; k++) {
      int t = a->ids[k];
      int64_t g = src[t].i * sesize, d = dst[t].i * desize, nb = bytes[t].i;
      for (int64_t b = 0; b < nb; b += 4) { /* copies are 4, 8 or 16 aligned bytes */
        int64_t x = (g + b) / 32, y = (d + b) / 32;
        int q = 0;
        while (q < ns && sec[q] != x) q++;
        if (q == ns) {
          if (ns == 128) continue;
          sec[ns] = x, to[ns] = y, split[ns] = 0, ns++;
        } else if (to[q] != y) {
          split[q] = 1;
        }
      }
    }
    S->rep->cp_async_sectors += ns;
    for (int q = 0; q < ns; q++) S->rep->cp_async_split += split[q];
  }
}

static int cp_async(Sim *S, const tir_Call *c, const Act *a) {
  int n = c->args->size;
  if (n != 3 && n != 4) return sim_fail(S, &c->hdr, "ptx_cp_async takes (dst, src, bytes [, src_bytes]), got %d arguments", n);
  int mark = S->vtop;
  Store *ds, *ss;
  SVal *dst, *src, *bytes, *sbytes;
  if (addr_operand(S, c->args->items[0], a, &ds, &dst, "ptx_cp_async") || addr_operand(S, c->args->items[1], a, &ss, &src, "ptx_cp_async"))
    return -1;
  if (!(bytes = sim_eval(S, c->args->items[2], 0, a))) return -1;
  sbytes = n == 4 ? sim_eval(S, c->args->items[3], 0, a) : bytes;
  if (!sbytes) return -1;
  if (ds->kind != ST_SHARED || ss->kind != ST_GLOBAL)
    return sim_fail(S, &c->hdr, "ptx_cp_async copies from a global buffer to a shared one (here %s -> %s)", ss->buf ? ss->buf->name : "?",
                    ds->buf ? ds->buf->name : "?");
  count_requests(S, a, src, ss->esize, dst, ds->esize, bytes);
  for (int k = 0; k < a->n; k++) {
    int t = a->ids[k];
    char who[96];
    int64_t nb = bytes[t].i, sb = sbytes[t].i;
    if (nb != 4 && nb != 8 && nb != 16) return sim_fail(S, &c->hdr, "ptx_cp_async copies 4, 8 or 16 bytes, not %lld", (long long)nb);
    if (sb < 0 || sb > nb)
      return sim_fail(S, &c->hdr, "ptx_cp_async: src_bytes %lld is outside [0, %lld] (%s)", (long long)sb, (long long)nb,
                      sim_thread_name(S, t, who, sizeof who));
    int64_t db = dst[t].i * ds->esize, sbyte = src[t].i * ss->esize;
    if (db % nb || (sb && sbyte % nb)) {
      if (sim_issue(S, "misaligned", S->cur, t, NULL, -1, db % nb ? ds->buf->name : ss->buf->name, db % nb ? dst[t].i : src[t].i,
                    -1, "ptx_cp_async of %lld bytes needs %lld-byte aligned addresses: %s[%lld] -> %s[%lld] (%s)", (long long)nb,
                    (long long)nb, ss->buf->name, (long long)src[t].i, ds->buf->name, (long long)dst[t].i,
                    sim_thread_name(S, t, who, sizeof who)))
        return -1;
      continue;
    }
    if (!sim_in_bounds(S, ds, dst[t].i, nb / ds->esize, t, "cp.async write")) {
      if (S->fatal) return -1;
      continue;
    }
    if (sb && !sim_in_bounds(S, ss, src[t].i, (sb + ss->esize - 1) / ss->esize, t, "cp.async read")) {
      if (S->fatal) return -1;
      continue;
    }
    Copy cp = {ds, db, (int)nb, {0}, S->cur};
    if (sb) memcpy(cp.data, sim_addr(ss, t, 0) + sbyte, (size_t)sb); /* the source is read at issue */
    /* the copy may land at any time until its wait: it conflicts with reads of this epoch at once */
    for (int i = 0; i < nb; i++) {
      Shadow *sh = &ds->shadow[db + i];
      if (sh->pending) {
        if (inflight_issue(S, ds, db + i, t, sh, "issues a cp.async to")) return -1;
        break;
      }
      if (sh->r_epoch == S->epoch) {
        /* (a read that happens before the issue -- through mbarrier phases, a gathering producer
         * refilling a released stage -- is no race) */
        int j = -1;
        for (int q = 1; q >= 0; q--)
          if (sh->r_thr[q] >= 0 && sh->r_thr[q] != t && !sim_hb(S, sh->r_thr[q], sh->r_clk[q], t)) j = q;
        if (j >= 0) {
          if (race_issue(S, ds, db + i, t, S->cur, sh->r_thr[j], sh->r_stmt[j], 0)) return -1;
          break;
        }
      }
    }
    for (int i = 0; i < nb; i++) {
      Shadow *sh = &ds->shadow[db + i];
      sh->pending++;
      sh->p_thr = (int16_t)t;
      sh->p_stmt = S->cur;
    }
    group_push(&tasync(S, t)->open, &cp);
    S->rep->cp_async++;
  }
  S->vtop = mark;
  return 0;
}

static void land(Sim *S, Group *g, int tid, int deliver) {
  for (int i = 0; i < g->n; i++) {
    Copy *cp = &g->c[i];
    for (int b = 0; b < cp->size; b++) {
      Shadow *sh = &cp->st->shadow[cp->byte + b];
      if (sh->pending) sh->pending--;
    }
    if (!deliver || S->fatal || cp->st->cta_gen != S->cta_gen) continue;
    memcpy(cp->st->base + cp->byte, cp->data, (size_t)cp->size);
    /* a write of the issuing thread (attributed to its cp.async) in the epoch of the wait */
    sim_shared_write(S, cp->st, cp->byte, cp->size, tid, cp->stmt);
  }
  free(g->c);
  memset(g, 0, sizeof *g);
}

int sim_async_builtin(Sim *S, const tir_Call *c, const Act *a) {
  const char *op = c->op;
  if (strcmp(op, "ptx_cp_async") == 0) return cp_async(S, c, a);
  if (strcmp(op, "ptx_commit_group") == 0) {
    /* closes the thread's open group (an empty group when nothing was issued) */
    for (int k = 0; k < a->n; k++) {
      ThreadAsync *ta = tasync(S, a->ids[k]);
      if (ta->n_closed == ta->cap_closed) {
        ta->cap_closed = ta->cap_closed ? ta->cap_closed * 2 : 8;
        ta->closed = realloc(ta->closed, sizeof *ta->closed * (size_t)ta->cap_closed);
      }
      ta->closed[ta->n_closed++] = ta->open;
      memset(&ta->open, 0, sizeof ta->open);
    }
    return 0;
  }
  if (strcmp(op, "ptx_wait_group") == 0) {
    if (c->args->size != 1) return sim_fail(S, &c->hdr, "ptx_wait_group takes one argument (the groups allowed in flight)");
    int64_t keep;
    if (!tir_is_const_int(c->args->items[0], &keep) || keep < 0)
      keep = 0; /* the codegen waits for all groups when the count is not a constant */
    for (int k = 0; k < a->n && !S->fatal; k++) {
      ThreadAsync *ta = tasync(S, a->ids[k]);
      if (ta->n_closed <= keep) continue;
      int nl = ta->n_closed - (int)keep;
      for (int i = 0; i < nl; i++) land(S, &ta->closed[i], a->ids[k], 1);
      for (int i = nl; i < ta->n_closed; i++) ta->closed[i - nl] = ta->closed[i];
      ta->n_closed -= nl;
    }
    return S->fatal ? -1 : 0;
  }
  return 1;
}

/* ptx_cp_async_mbarrier_arrive_noinc: the arrival is triggered once all of thread tid's cp.async
 * copies (closed groups and the open one) have completed, so they land here, before the arrival
 * (sim_mbarrier.c) releases them to the threads that wait on the barrier. */
int sim_async_land_thread(Sim *S, int tid) {
  if (!S->async) return 0;
  ThreadAsync *ta = tasync(S, tid);
  for (int i = 0; i < ta->n_closed; i++) land(S, &ta->closed[i], tid, 1);
  ta->n_closed = 0;
  land(S, &ta->open, tid, 1);
  return S->fatal ? -1 : 0;
}

/* At the end of a CTA: copies nobody waited for are an issue (their data never lands). */
int sim_async_cta_end(Sim *S) {
  if (!S->async) return 0;
  int rc = 0;
  for (int t = 0; t < S->T; t++) {
    ThreadAsync *ta = &S->async[t];
    int left = ta->open.n;
    const tir_Node *first = ta->open.n ? ta->open.c[0].stmt : NULL;
    for (int i = 0; i < ta->n_closed; i++) {
      left += ta->closed[i].n;
      if (!first && ta->closed[i].n) first = ta->closed[i].c[0].stmt;
    }
    if (left && !rc && !S->fatal) {
      char who[96];
      rc = sim_issue(S, "async_not_waited", first, t, NULL, -1, NULL, -1, -1,
                       "%d cp.async cop%s issued by %s %s never waited for (no ptx_wait_group covers %s before the kernel ends), "
                       "so %s data never lands in shared memory",
                       left, left == 1 ? "y" : "ies", sim_thread_name(S, t, who, sizeof who), left == 1 ? "was" : "were",
                       left == 1 ? "it" : "them", left == 1 ? "its" : "their");
    }
    land(S, &ta->open, t, 0);
    for (int i = 0; i < ta->n_closed; i++) land(S, &ta->closed[i], t, 0);
    free(ta->closed);
    memset(ta, 0, sizeof *ta);
  }
  return rc;
}

void sim_async_free(Sim *S) {
  if (!S->async) return;
  for (int t = 0; t < SIM_MAX_THREADS; t++) {
    ThreadAsync *ta = &S->async[t];
    free(ta->open.c);
    for (int i = 0; i < ta->n_closed; i++) free(ta->closed[i].c);
    free(ta->closed);
  }
  free(S->async);
  S->async = NULL;
}
