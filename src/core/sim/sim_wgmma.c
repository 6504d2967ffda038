/* sim_wgmma.c -- the warpgroup-level builtins (PTX ISA 9.7.15 "Asynchronous Warpgroup Level Matrix
 * Multiply-Accumulate"): wgmma_fence, wgmma_commit_group, wgmma_wait_group, wgmma_mma_async,
 * wgmma_fill, wgmma_store.
 *
 * Model:
 *  - a warpgroup is 128 consecutive threads, the first a multiple of 128 (9.7.15.1); all of them
 *    execute each instruction together (.sync.aligned), with one descriptor value;
 *  - the accumulator is per thread (a "wgmma.accumulator" buffer, n/2 elements a thread in the
 *    order of the D fragment, 9.7.15.5.1.1: the table row's lane map);
 *  - A from registers (a "wgmma.matrix_a" fragment) is read lane by lane through the table row's
 *    map_a (9.7.15.5.1.1.1); the registers count as read by the open group, and overwriting one
 *    before the group's wait is reported (wgmma_pending);
 *  - A and B are read from shared memory through the matrix descriptors (9.7.15.5.1.2): the
 *    element (row, column) of an operand sits at start + its canonical-layout offset (LBO, SBO,
 *    swizzle width), and the hardware XOR-swizzles that address (bits 4.. with bits 7..); shared
 *    memory is physical in the simulator (lower_buffer_swizzle rewrote every other access of a
 *    storage_swizzle'd buffer; a buffer 1024-byte aligned, as the codegen allocates it), so the
 *    element read is the one at that address.  A descriptor whose swizzle is not the buffer's
 *    (its Buffer.swizzle, a PTX mode) reads other elements, as on
 *    the GPU, and is reported (wgmma_descriptor), as is a tile origin that is not at the start of
 *    a swizzle pattern (the descriptor's base offset is 0);
 *  - results are computed at issue but belong to the open group: wgmma_commit_group closes it,
 *    wgmma_wait_group n completes all but the n most recent groups.  Reading or overwriting an
 *    accumulator element whose group is not complete (wgmma_store, wgmma_fill) is reported
 *    (wgmma_pending): on the GPU its registers are undefined until the wait.  A further
 *    wgmma_mma_async into the same accumulator is allowed (the hardware chains them in order).
 * Arithmetic: the interpreter's (sim_mma_tile: k ascending, rounded to the accumulator type after
 * every step), so a wgmma GEMM is compared bit for bit with the interpreter. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sim_internal.h"
#include "tir/ir.h"
#include "tir/mma.h"
#include "tir/scope.h"
#include "tir/swizzle.h"
#include "tir/tma.h"

void sim_wgmma_cta_begin(Sim *S) {
  memset(S->wg_done, 0, sizeof S->wg_done);
  memset(S->wg_next, 0, sizeof S->wg_next);
  S->n_wg_reads = 0;
}

void sim_wgmma_free(Sim *S) {
  free(S->wg_reads);
  S->wg_reads = NULL;
  S->n_wg_reads = S->cap_wg_reads = 0;
}

/* a shared operand byte range the open group of warpgroup w reads (asynchronously, until the
 * group completes) */
static int note_read(Sim *S, Store *st, int64_t byte, int size, int w) {
  if (S->n_wg_reads == S->cap_wg_reads) {
    int cap = S->cap_wg_reads ? 2 * S->cap_wg_reads : 4096;
    struct SimWgRead *r = realloc(S->wg_reads, sizeof *r * (size_t)cap);
    if (!r) return sim_fail(S, S->cur, "out of memory recording the shared reads of wgmma");
    S->wg_reads = r, S->cap_wg_reads = cap;
  }
  S->wg_reads[S->n_wg_reads++] = (struct SimWgRead){st, byte, size, w, S->wg_next[w]};
  return 0;
}

/* wgmma reads its shared operands asynchronously, any time until its group completes: the reads
 * count (for the race check) when the wait completes it, as the waiting warpgroup's first
 * thread's.  A write by another thread between the issue and the wait, or after the wait before
 * a barrier, is then a race -- a stage refilled while a wgmma may still read it. */
static int retire_reads(Sim *S, int w) {
  int keep = 0;
  for (int i = 0; i < S->n_wg_reads; i++) {
    struct SimWgRead *r = &S->wg_reads[i];
    if (r->wg == w && r->group < S->wg_done[w]) {
      S->issue_tail = " -- the read is a wgmma_mma_async's shared operand, which its group reads until a wgmma_wait_group "
                      "completes it: a stage refilled while a wgmma may still read it (wgmma_wait_group 1 needs one more "
                      "version of each tile: software_pipeline_async_reads)";
      int rc = sim_shared_read(S, r->st, r->byte, r->size, 128 * w);
      S->issue_tail = NULL;
      if (rc) return -1;
    } else {
      S->wg_reads[keep++] = *r;
    }
  }
  S->n_wg_reads = keep;
  return 0;
}

/* The warpgroups of `a`; every one present must be complete.  Returns their count, -1 on a stop. */
static int warpgroups(Sim *S, const tir_Call *c, const Act *a, int *wgs) {
  int n = 0;
  for (int k = 0; k < a->n;) {
    int w = a->ids[k] / 128, cnt = 0;
    while (k < a->n && a->ids[k] / 128 == w) cnt++, k++;
    if (cnt != 128) {
      char who[96];
      S->rep->warp_ops++;
      if (sim_issue(S, "warp_divergence", S->cur, a->ids[k - 1], NULL, -1, NULL, -1, -1,
                    "%s is a warpgroup-wide .sync.aligned instruction, but only %d of the 128 threads of warpgroup %d execute it (e.g. "
                    "%s)%s",
                    c->op, cnt, w, sim_thread_name(S, a->ids[k - 1], who, sizeof who),
                    S->T < 128 * (w + 1) ? " -- launch a multiple of 128 threads" : " -- it is under a condition that differs across threads"))
        return -1;
      continue;
    }
    wgs[n++] = w;
  }
  return n;
}

typedef struct {
  Store *st;
  const tir_BufferLoad *load;
  SVal *el; /* per thread: the element index */
} Ref;

static int ref(Sim *S, const tir_Call *c, const tir_Node *arg, const Act *a, Ref *r, const char *what) {
  r->load = tir_address_of_load(arg);
  if (!r->load || r->load->indices->size != 1)
    return sim_fail(S, &c->hdr, "%s: %s must be address_of(buffer[index]) of a flat buffer", c->op, what);
  r->st = sim_store_of(S, r->load->buffer, arg);
  if (!r->st) return -1;
  r->el = sim_eval(S, r->load->indices->items[0], 0, a);
  return r->el ? 0 : -1;
}

/* the value of v that every thread of warpgroup w passes (an issue when they differ) */
static int uniform(Sim *S, const tir_Call *c, int w, const SVal *v, const char *what, int64_t *out) {
  int b = 128 * w;
  for (int t = b + 1; t < b + 128; t++)
    if (v[t].i != v[b].i) {
      char who[96];
      if (sim_issue(S, "warp_divergence", S->cur, t, NULL, -1, NULL, -1, -1,
                    "%s: the threads of warpgroup %d pass different %s (thread %d: %lld, %s: %lld); the instruction takes one value",
                    c->op, w, what, b, (long long)v[b].i, sim_thread_name(S, t, who, sizeof who), (long long)v[t].i))
        return -1;
      break;
    }
  *out = v[b].i;
  return 0;
}

/* One shared operand through its descriptor: wgmma_desc(address_of(S[i]), lbo, sbo, swizzle). */
typedef struct {
  Ref r;
  SVal *lbo, *sbo, *sw;
} Desc;

static int desc_arg(Sim *S, const tir_Call *c, int i, const Act *a, Desc *d, const char *name) {
  const tir_Node *x = c->args->items[i];
  if (x->kind != TIR_Call || strcmp(((const tir_Call *)x)->op, "wgmma_desc") != 0 || ((const tir_Call *)x)->args->size != 4)
    return sim_fail(S, &c->hdr, "wgmma_mma_async: operand %s must be wgmma_desc(address_of(shared[i]), lbo, sbo, swizzle) (lowered by "
                    "lower_wgmma_descriptor)", name);
  const tir_Call *dc = (const tir_Call *)x;
  if (ref(S, c, dc->args->items[0], a, &d->r, name)) return -1;
  if (d->r.st->kind != ST_SHARED)
    return sim_fail(S, &c->hdr, "wgmma_mma_async: operand %s must be in shared memory, but %s has scope '%s'", name, d->r.load->buffer->name,
                    d->r.load->buffer->scope);
  d->lbo = sim_eval(S, dc->args->items[1], 0, a);
  d->sbo = d->lbo ? sim_eval(S, dc->args->items[2], 0, a) : NULL;
  d->sw = d->sbo ? sim_eval(S, dc->args->items[3], 0, a) : NULL;
  return d->sw ? 0 : -1;
}

/* The byte offset of element (r, c) from the start address in the canonical layouts (PTX ISA
 * 9.7.15.5.1.2.1.3, T = 16 bytes): K-major (r along M or N, c along K) or MN-major (r along K,
 * c along N), swizzle width sw bytes (0: none / interleaved). */
static int64_t canon(int kmajor, int64_t r, int64_t c, int es, int64_t lbo, int64_t sbo, int sw) {
  int64_t t = 16 / es;
  if (kmajor) return sw ? (r / 8) * sbo + (r % 8) * sw + c * es : (r / 8) * sbo + (r % 8) * 16 + (c / t) * lbo + (c % t) * es;
  int64_t w = sw / es;
  return sw ? (r / 8) * sbo + (r % 8) * sw + (c / w) * lbo + (c % w) * es : (c % t) * es + (c / t) * sbo + (r % 8) * 16 + (r / 8) * lbo;
}

/* Reads the rows x cols operand of warpgroup w into out (row-major, as doubles); kmajor: element
 * (r, c) of the stored orientation -- A and a K-major B (n x k) are (m|n, k), an N-major B (k, n). */
static int read_operand(Sim *S, const tir_Call *c, int w, Desc *d, const char *name, int kmajor, int rows, int cols, double *out) {
  int64_t el, lbo, sbo, swv;
  if (uniform(S, c, w, d->r.el, "start addresses", &el) || uniform(S, c, w, d->lbo, "LBO", &lbo) ||
      uniform(S, c, w, d->sbo, "SBO", &sbo) || uniform(S, c, w, d->sw, "swizzle modes", &swv))
    return -1;
  Store *st = d->r.st;
  const tir_Buffer *buf = d->r.load->buffer;
  int es = st->esize, sw = (int)swv, bsw = tir_swizzle_ptx_mode(buf->swizzle);
  const char *bn = buf->name;
  if (sw != bsw) {
    char bs[24];
    if (sim_issue(S, "wgmma_descriptor", S->cur, 128 * w, NULL, -1, bn, el, st->n,
                  "wgmma_mma_async: the descriptor of %s says %s%d%s, but %s is laid out %s%s%s: wgmma reads other elements "
                  "than the ones the tile holds (PTX ISA 9.7.15.5.1.2)",
                  name, sw ? "a " : "no swizzle", sw ? sw : 0, sw ? "-byte swizzle" : "", bn,
                  buf->swizzle ? "with the swizzle " : "without a swizzle", buf->swizzle ? tir_swizzle_str(buf->swizzle, bs) : "",
                  buf->swizzle ? " (storage_swizzle)" : ""))
      return -1;
  }
  /* the address the codegen passes: address_of stays logical in wgmma_desc (SWIZZLE_AWARE), and at
   * a tile origin (row 0 of a swizzle pattern) the logical and the physical address agree */
  int64_t start = el * es;
  if (sw && (start % (8 * sw)) / sw != 0) {
    if (sim_issue(S, "wgmma_descriptor", S->cur, 128 * w, NULL, -1, bn, el, st->n,
                  "wgmma_mma_async: the tile of %s starts at byte %lld of %s, inside a %d-byte swizzle pattern (row %lld of its 8): the "
                  "descriptor's base offset is 0, so a swizzled tile must start at a multiple of 8 rows of %d bytes (PTX ISA "
                  "9.7.15.5.1.2.2)",
                  name, (long long)start, bn, 8 * sw, (long long)((start % (8 * sw)) / sw), sw))
      return -1;
  }
  for (int r = 0; r < rows; r++)
    for (int q = 0; q < cols; q++) {
      /* shared memory is physical here (lower_buffer_swizzle placed every other access), and the
       * hardware swizzles the canonical address with the descriptor's mode */
      int64_t pb = tir_tma_swizzle(start + canon(kmajor, r, q, es, lbo, sbo, sw), sw);
      if (pb % es || pb < 0 || pb / es >= st->n) {
        if (sim_issue(S, "out_of_bounds", S->cur, 128 * w, NULL, -1, bn, pb / es, st->n,
                      "wgmma_mma_async: element (%d, %d) of %s is at byte %lld of %s, outside its %lld bytes (descriptor LBO %lld, SBO %lld, "
                      "swizzle %d)",
                      r, q, name, (long long)pb, bn, (long long)(st->n * es), (long long)lbo, (long long)sbo, sw))
          return -1;
        return 1;
      }
      if (sim_shared_read(S, st, pb, es, 128 * w) || note_read(S, st, pb, es, w)) return -1;
      int64_t e = pb / es;
      out[r * cols + q] = tir_dtype_is_float(st->dtype) ? tir_load_scalar_f(st->base, st->dtype, e)
                                                        : (double)tir_load_scalar_i(st->base, st->dtype, e);
    }
  return 0;
}

static const tir_MmaConfig *row_of(Sim *S, const tir_Call *c, const Ref *d, const Ref *ra, const Desc *db) {
  const tir_Node *nm = c->args->size > 5 ? c->args->items[5] : NULL;
  const tir_MmaConfig *cfg = nm && nm->kind == TIR_StringImm ? tir_mma_find(TIR_MMA_WGMMA, ((const tir_StringImm *)nm)->value)
                                                             : tir_mma_for(TIR_MMA_WGMMA, ra->st->dtype, db->r.st->dtype, d->st->dtype, 0, 0, 0);
  if (!cfg) {
    sim_fail(S, &c->hdr, "wgmma_mma_async: no wgmma configuration for these operands (include/tir/mma.h lists them)");
    return NULL;
  }
  if (!tir_dtype_eq(ra->st->dtype, cfg->a) || !tir_dtype_eq(db->r.st->dtype, cfg->b) || !tir_dtype_eq(d->st->dtype, cfg->c)) {
    sim_fail(S, &c->hdr, "wgmma_mma_async: the operands' element types do not match configuration %s", cfg->name);
    return NULL;
  }
  return cfg;
}

/* the thread's registers of an accumulator operand: element el / 128 of its part */
static int regs(Sim *S, const Ref *r, int t, int count, const char *op, int64_t *off) {
  int64_t e = r->el[t].i;
  *off = e >= 0 ? e / 128 : -((-e + 127) / 128);
  return sim_in_bounds(S, r->st, *off, count, t, op);
}

/* an issue when one of the count registers from off of thread t belongs to an incomplete group */
static int check_pending(Sim *S, const tir_Call *c, const Ref *r, int t, int64_t off, int count) {
  int w = t / 128;
  for (int j = 0; j < count; j++) {
    int64_t g = r->st->wg_group[(int64_t)t * r->st->n + off + j];
    if (g > S->wg_done[w]) {
      char who[96];
      if (sim_issue(S, "wgmma_pending", S->cur, t, NULL, -1, r->load->buffer->name, off + j, r->st->n,
                    "%s %s wgmma accumulator %s while the wgmma_mma_async writing it (group %lld of warpgroup %d) is %s: its registers "
                    "are undefined until a wgmma_wait_group covers that group (PTX ISA 9.7.15.7; %s)",
                    c->op, strcmp(c->op, "wgmma_fill") == 0 ? "overwrites" : "reads", r->load->buffer->name, (long long)g - 1, w,
                    g - 1 >= S->wg_next[w] ? "not even committed (no wgmma_commit_group)" : "not waited for",
                    sim_thread_name(S, t, who, sizeof who)))
        return -1;
      return 1;
    }
  }
  return 0;
}

/* Whether arg is address_of(a wgmma.matrix_a buffer[...]): A from registers. */
static int is_a_frag(const tir_Node *arg) {
  const tir_BufferLoad *l = tir_address_of_load(arg);
  return l && tir_scope_parse(l->buffer->scope).rank == TIR_SCOPE_WGMMA_MATRIX_A;
}

int sim_wgmma_a_pending(Sim *S, const tir_Call *c, Store *st, const tir_Buffer *b, int t, int64_t off, int count) {
  int w = t / 128;
  for (int j = 0; j < count; j++) {
    int64_t g = st->wg_group[(int64_t)t * st->n + off + j];
    if (g > S->wg_done[w]) {
      char who[96];
      if (sim_issue(S, "wgmma_pending", S->cur, t, NULL, -1, b->name, off + j, st->n,
                    "%s overwrites wgmma A fragment %s while a wgmma_mma_async reading it (group %lld of warpgroup %d) is %s: the "
                    "instruction reads its A registers asynchronously, until a wgmma_wait_group covers that group (PTX ISA 9.7.15.4; %s)",
                    c->op, b->name, (long long)g - 1, w, g - 1 >= S->wg_next[w] ? "not even committed (no wgmma_commit_group)" : "not waited for",
                    sim_thread_name(S, t, who, sizeof who)))
        return -1;
      return 1;
    }
  }
  return 0;
}

/* A from registers (a "wgmma.matrix_a" fragment, the 64 x k slab at the threads' part el / 128):
 * thread l of the warpgroup gives its k / 2 elements e, which are A(r, c) for the table row's
 * map_a(l, e) = (r, c) (PTX ISA 9.7.15.5.1.1.1) -- the lane map, lane by lane.  Marks the
 * registers as read by the open group (overwriting them before its wait is reported). */
static int read_a_frag(Sim *S, const tir_Call *c, int w, const Ref *ra, const tir_MmaConfig *cfg, double *A) {
  int k = cfg->k, per = 64 * k / 128;
  int64_t *org = malloc(sizeof(int64_t) * 64 * (size_t)k);
  if (!org) return sim_fail(S, &c->hdr, "out of memory reading a wgmma A fragment");
  for (int i = 0; i < 64 * k; i++) A[i] = NAN, org[i] = -1; /* NaN: an element no lane gives (a map that misses one) */
  for (int l = 0; l < 128; l++) {
    int t = 128 * w + l;
    int64_t e0 = ra->el[t].i, off = e0 >= 0 ? e0 / 128 : -((-e0 + 127) / 128);
    if (!sim_in_bounds(S, ra->st, off, per, t, "wgmma_mma_async A register read")) {
      free(org);
      return S->fatal ? -1 : 1;
    }
    const char *p = sim_addr(ra->st, t, 0);
    for (int e = 0; e < per; e++) {
      int r, q;
      cfg->map_a(l, e, &r, &q);
      A[r * k + q] = tir_dtype_is_float(ra->st->dtype) ? tir_load_scalar_f(p, ra->st->dtype, off + e)
                                                       : (double)tir_load_scalar_i(p, ra->st->dtype, off + e);
      if (ra->st->origin) org[r * k + q] = ra->st->origin[(int64_t)t * ra->st->n + off + e];
      ra->st->wg_group[(int64_t)t * ra->st->n + off + e] = S->wg_next[w] + 1;
    }
  }
  /* a hint when the shared elements ldmatrix loaded the fragment from (their logical positions)
   * do not form a 64 x k tile, origin(r, q) = origin(0, 0) + r * dr + q: the lane -> address map
   * of the load is not the fragment's */
  const int64_t mask = ((int64_t)1 << 40) - 1;
  int64_t b0 = org[0] & mask, dr = (org[k] & mask) - b0;
  for (int i = 0; i < 64 * k && org[0] >= 0; i++) {
    int r = i / k, q = i % k;
    if (org[i] < 0 || org[i] >> 40 != org[0] >> 40) break; /* not (all) from one ldmatrix source */
    if ((org[i] & mask) == b0 + r * dr + q) continue;
    const Store *src = S->st[org[0] >> 40];
    const char *sn = src->buf ? src->buf->name : "?";
    sim_hint(S, S->cur,
             "the A fragment %s of wgmma_mma_async in warpgroup %d is not a 64 x %d tile of %s: its element (row %d, col %d) was "
             "loaded from %s[%lld], but the tile that starts at %s[%lld] (rows %lld elements apart) has %s[%lld] there -- check the "
             "lane -> row mapping of the mma_ldmatrix that filled it (PTX ISA 9.7.15.5.1.1.1: warp w of the warpgroup holds rows "
             "16 w .. 16 w + 15 as mma.sync's m16n8k%d A, ldmatrix.x4 matrices (rows 0-7, cols 0-7), (rows 8-15, cols 0-7), "
             "(rows 0-7, cols 8-15), (rows 8-15, cols 8-15) of 16-byte rows)",
             ra->load->buffer->name, w, k, sn, r, q, sn, (long long)(org[i] & mask), sn, (long long)b0, (long long)dr, sn,
             (long long)(b0 + r * dr + q), k);
    break;
  }
  free(org);
  return 0;
}

static int mma_async(Sim *S, const tir_Call *c, const Act *a) {
  if (c->args->size != 5 && c->args->size != 6) return sim_fail(S, &c->hdr, "wgmma_mma_async takes (d, desc_a, desc_b, n, trans_b [, config])");
  Ref d, ra;
  Desc da, db;
  int a_regs = is_a_frag(c->args->items[1]);
  if (ref(S, c, c->args->items[0], a, &d, "the accumulator") ||
      (a_regs ? ref(S, c, c->args->items[1], a, &ra, "A") : desc_arg(S, c, 1, a, &da, "A")) || desc_arg(S, c, 2, a, &db, "B"))
    return -1;
  if (!a_regs) ra = da.r;
  if (d.st->kind != ST_WGACC || tir_scope_parse(d.load->buffer->scope).rank != TIR_SCOPE_WGMMA_ACCUMULATOR)
    return sim_fail(S, &c->hdr, "wgmma_mma_async: the accumulator must be a wgmma.accumulator buffer, not %s (scope '%s')",
                    d.load->buffer->name, d.load->buffer->scope);
  int64_t n, tb;
  if (!tir_is_const_int(c->args->items[3], &n) || !tir_is_const_int(c->args->items[4], &tb))
    return sim_fail(S, &c->hdr, "wgmma_mma_async: n and trans_b must be constants");
  const tir_MmaConfig *cfg = row_of(S, c, &d, &ra, &db);
  if (!cfg) return -1;
  if (!tir_wgmma_n_valid(cfg, (int)n)) return sim_fail(S, &c->hdr, "wgmma_mma_async: n = %lld is not a valid N of %s", (long long)n, cfg->name);
  int wgs[SIM_MAX_THREADS / 128];
  int nw = warpgroups(S, c, a, wgs);
  if (nw < 0) return -1;
  int k = cfg->k, nd = (int)n / 2;
  double *A = malloc(sizeof(double) * 64 * (size_t)k), *B = malloc(sizeof(double) * (size_t)(k * n)), *Bs = malloc(sizeof(double) * (size_t)(k * n)),
         *C = malloc(sizeof(double) * 64 * (size_t)n);
  int rc = 0;
  for (int wi = 0; wi < nw && !rc; wi++) {
    int w = wgs[wi];
    S->rep->warp_ops++;
    int ka = a_regs ? read_a_frag(S, c, w, &ra, cfg, A) : read_operand(S, c, w, &da, "A", 1, 64, k, A);
    int rb = ka ? ka : tb ? read_operand(S, c, w, &db, "B", 0, k, (int)n, B) : read_operand(S, c, w, &db, "B", 1, (int)n, k, Bs);
    if (ka < 0 || rb < 0) {
      rc = -1;
      break;
    }
    if (ka || rb) continue;
    if (!tb)
      for (int kk = 0; kk < k; kk++)
        for (int j = 0; j < n; j++) B[kk * n + j] = Bs[j * k + kk];
    int64_t off[128];
    int ok = 1;
    for (int l = 0; l < 128 && ok; l++)
      if (!regs(S, &d, 128 * w + l, nd, "wgmma_mma_async", &off[l])) ok = 0;
    if (S->fatal) {
      rc = -1;
      break;
    }
    if (!ok) continue;
    for (int l = 0; l < 128; l++)
      for (int e = 0; e < nd; e++) {
        int r, cc;
        cfg->map_c(l, e, &r, &cc);
        const char *p = sim_addr(d.st, 128 * w + l, 0);
        C[r * n + cc] = tir_dtype_is_float(d.st->dtype) ? tir_load_scalar_f(p, d.st->dtype, off[l] + e)
                                                         : (double)tir_load_scalar_i(p, d.st->dtype, off[l] + e);
      }
    sim_mma_tile(A, B, C, 64, (int)n, k, cfg->c);
    for (int l = 0; l < 128; l++)
      for (int e = 0; e < nd; e++) {
        int r, cc;
        cfg->map_c(l, e, &r, &cc);
        char *p = sim_addr(d.st, 128 * w + l, 0);
        if (tir_dtype_is_float(d.st->dtype)) tir_store_scalar_f(p, d.st->dtype, off[l] + e, C[r * n + cc]);
        else tir_store_scalar_i(p, d.st->dtype, off[l] + e, (int64_t)C[r * n + cc]);
        d.st->wg_group[(int64_t)(128 * w + l) * d.st->n + off[l] + e] = S->wg_next[w] + 1;
      }
  }
  free(A), free(B), free(Bs), free(C);
  return rc;
}

static int fill_store(Sim *S, const tir_Call *c, const Act *a, int store) {
  if (store ? c->args->size != 4 && c->args->size != 5 : c->args->size != 3)
    return sim_fail(S, &c->hdr, store ? "wgmma_store takes (d, dst, ld, n[, bstride])" : "wgmma_fill takes (d, n, value)");
  Ref d, dst;
  int64_t n;
  if (ref(S, c, c->args->items[0], a, &d, "the accumulator")) return -1;
  if (d.st->kind != ST_WGACC || tir_scope_parse(d.load->buffer->scope).rank != TIR_SCOPE_WGMMA_ACCUMULATOR)
    return sim_fail(S, &c->hdr, "%s: the accumulator must be a wgmma.accumulator buffer, not %s (scope '%s')", c->op, d.load->buffer->name,
                    d.load->buffer->scope);
  if (!tir_is_const_int(c->args->items[store ? 3 : 1], &n) || n < 8 || n > 256 || n % 8)
    return sim_fail(S, &c->hdr, "%s: n must be a constant multiple of 8 up to 256", c->op);
  SVal *val = NULL, *ld = NULL, *bs = NULL;
  if (store) {
    if (ref(S, c, c->args->items[1], a, &dst, "the destination")) return -1;
    if (dst.st->kind != ST_SHARED && dst.st->kind != ST_GLOBAL)
      return sim_fail(S, &c->hdr, "wgmma_store writes to a shared or global buffer, not %s (scope '%s')", dst.load->buffer->name,
                      dst.load->buffer->scope);
    ld = sim_eval(S, c->args->items[2], 0, a);
    if (!ld) return -1;
    if (c->args->size == 5 && !(bs = sim_eval(S, c->args->items[4], 0, a))) return -1;
  } else {
    val = sim_eval(S, c->args->items[2], 0, a);
    if (!val) return -1;
  }
  int wgs[SIM_MAX_THREADS / 128];
  int nw = warpgroups(S, c, a, wgs);
  if (nw < 0) return -1;
  int nd = (int)n / 2;
  tir_DType at = d.st->dtype;
  for (int wi = 0; wi < nw; wi++) {
    S->rep->warp_ops++;
    for (int l = 0; l < 128; l++) {
      int t = 128 * wgs[wi] + l;
      int64_t off;
      if (!regs(S, &d, t, nd, c->op, &off)) {
        if (S->fatal) return -1;
        continue;
      }
      int pend = check_pending(S, c, &d, t, off, nd);
      if (pend < 0) return -1;
      if (!store) {
        SVal x = tir_value_cast(at, tir_dtype_element(c->args->items[2]->dtype), val[t]);
        for (int e = 0; e < nd; e++) {
          char *p = sim_addr(d.st, t, 0);
          if (tir_dtype_is_float(at)) tir_store_scalar_f(p, at, off + e, x.f);
          else tir_store_scalar_i(p, at, off + e, x.i);
          d.st->wg_group[(int64_t)t * d.st->n + off + e] = 0;
        }
        continue;
      }
      tir_DType dt = dst.st->dtype;
      for (int e = 0; e < nd; e++) {
        int r, cc;
        const tir_MmaConfig *any = tir_mma_for(TIR_MMA_WGMMA, TIR_FLOAT16, TIR_FLOAT16, TIR_FLOAT32, 0, 0, 0);
        any->map_c(l, e, &r, &cc); /* the D fragment map is one for every wgmma row */
        /* boxes of ld columns (bstride apart), then the destination's swizzle: the address stays
         * logical in this SWIZZLE_AWARE builtin, and the codegen XORs the element index itself */
        int64_t o = bs ? dst.el[t].i + cc / ld[t].i * bs[t].i + (int64_t)r * ld[t].i + cc % ld[t].i : dst.el[t].i + (int64_t)r * ld[t].i + cc;
        if (dst.st->buf && dst.st->buf->swizzle) o = tir_swizzle_apply(dst.st->buf->swizzle, o * dst.st->esize) / dst.st->esize;
        if (e % 2 == 0 && ((o * dst.st->esize) % (2 * dst.st->esize))) {
          char who[96];
          if (sim_issue(S, "misaligned", S->cur, t, NULL, -1, dst.load->buffer->name, o, dst.st->n,
                        "wgmma_store: the codegen stores %s[%lld .. %lld] as one %d-byte vector, but the offset is not %d-byte aligned (%s)",
                        dst.load->buffer->name, (long long)o, (long long)o + 1, 2 * dst.st->esize, 2 * dst.st->esize,
                        sim_thread_name(S, t, who, sizeof who)))
            return -1;
          e++;
          continue;
        }
        SVal v;
        const char *p = sim_addr(d.st, t, 0);
        if (tir_dtype_is_float(at)) v.f = tir_load_scalar_f(p, at, off + e);
        else v.i = tir_load_scalar_i(p, at, off + e);
        if (sim_store_elem(S, dst.st, o, t, dt, tir_value_cast(dt, at, v))) return -1;
      }
    }
  }
  return 0;
}

int sim_wgmma_builtin(Sim *S, const tir_Call *c, const Act *a) {
  const tir_BuiltinInfo *bi = tir_builtin_info(c->op);
  if (!bi || !(bi->flags & TIR_BUILTIN_WARPGROUP)) return 1;
  int mark = S->vtop, rc = 0;
  switch (bi->id) {
    case TIR_BI_WGMMA_MMA_ASYNC: rc = mma_async(S, c, a); break;
    case TIR_BI_WGMMA_FILL: rc = fill_store(S, c, a, 0); break;
    case TIR_BI_WGMMA_STORE: rc = fill_store(S, c, a, 1); break;
    default: {
      int wgs[SIM_MAX_THREADS / 128];
      int nw = warpgroups(S, c, a, wgs);
      if (nw < 0) {
        rc = -1;
        break;
      }
      int64_t keep = 0;
      if (bi->id == TIR_BI_WGMMA_WAIT_GROUP && (!tir_is_const_int(c->args->items[0], &keep) || keep < 0)) {
        rc = sim_fail(S, &c->hdr, "wgmma_wait_group takes a constant group count");
        break;
      }
      for (int wi = 0; wi < nw; wi++) {
        int w = wgs[wi];
        S->rep->warp_ops++;
        if (bi->id == TIR_BI_WGMMA_COMMIT_GROUP) S->wg_next[w]++;
        else if (bi->id == TIR_BI_WGMMA_WAIT_GROUP) {
          if (S->wg_next[w] - keep > S->wg_done[w]) S->wg_done[w] = S->wg_next[w] - keep;
          if (retire_reads(S, w)) {
            rc = -1;
            break;
          }
        }
      }
    }
  }
  S->vtop = mark;
  return rc || S->fatal ? -1 : 0;
}

int sim_warpgroups(Sim *S, const tir_Call *c, const Act *a, int *wgs) { return warpgroups(S, c, a, wgs); }
