/* sim_warp.c -- warp-level builtins, lane-accurately (docs/BUILTINS.md, lib/tir/intrin/cuda.lua,
 * codegen_cuda.c's "tensor cores" part, which says how each runs on the GPU).
 *
 * Facts from the PTX ISA (8.x):
 *  - 9.7.14.5.15 ldmatrix.sync.aligned.m8n8.x{1,2,4}[.trans].shared.b16: threads 8i..8i+7 give
 *    the row addresses of matrix i (16-byte aligned rows of 8 b16 elements); without .trans lane
 *    l receives row l/4, columns 2(l%4), 2(l%4)+1 of matrix i in its register i, with .trans
 *    the elements (2(l%4), l/4) and (2(l%4)+1, l/4) -- the matrix read column by column.
 *  - 9.7.14.5.8 fragments of mma.m16n8k16 (.f16/.bf16 inputs, .f32 accumulators; the table rows of
 *    include/tir/mma.h hold these maps, and those of m16n8k32 .s8/.u8, 9.7.14.5.10), with
 *    g = lane / 4, q = lane % 4:  A (16x16, row): a0,a1 = (g, 2q..2q+1), a2,a3 = (g+8, 2q..),
 *    a4,a5 = (g, 2q+8..), a6,a7 = (g+8, 2q+8..);  B (16x8, col): b0,b1 = (k 2q..2q+1, n g),
 *    b2,b3 = (k 2q+8.., n g);  C/D (16x8): c0,c1 = (g, 2q..2q+1), c2,c3 = (g+8, 2q..).
 *    Our mma_sync is two of them on a 16x16 tile (codegen_cuda.c): a lane's B registers 0-1
 *    and C/D floats 0-3 belong to columns 0-7, registers 2-3 and floats 4-7 to columns 8-15.
 *  - 9.7.14.4 wmma.load/store/mma: the fragment layout is unspecified, so a fragment is
 *    modeled as the warp's collective 16x16 tile (row-major in the warp's storage), loaded and
 *    stored with the given leading dimension and layout.
 *  - .sync.aligned (ldmatrix, mma, wmma): all 32 threads of the warp execute the same
 *    instruction; operands that must agree (wmma's fragment, pointer, ldm) must agree.
 * Accumulation: the products of a 16x16xk step are added in k order with rounding to the
 * accumulator type after every addition, as the interpreter runs the intrinsics' desc
 * (hardware accumulates floats with more internal precision; results may differ in the last
 * bits).  Integer rows are exact: int64 products, s32 sums wrapping like the interpreter's. */
#include <stdlib.h>
#include <math.h>
#include <string.h>

#include "sim_internal.h"
#include "tir/mma.h"
#include "tir/runtime.h"
#include "tir/scope.h"
#include "tir/swizzle.h"

typedef struct {
  Store *st;
  SVal *el; /* per thread: the element index inside address_of(buf[index]) */
  const tir_BufferLoad *load;
} Addr;

static int addr(Sim *S, const tir_Call *c, int i, const Act *a, Addr *out, int want_kind, const char *what) {
  const tir_Node *arg = i < c->args->size ? c->args->items[i] : NULL;
  out->load = tir_address_of_load(arg);
  if (!out->load || out->load->indices->size != 1)
    return sim_fail(S, &c->hdr, "%s: operand %d must be address_of(%s[index]) of a flat buffer", c->op, i + 1, what);
  out->st = sim_store_of(S, out->load->buffer, arg);
  if (!out->st) return -1;
  if (want_kind >= 0 && out->st->kind != want_kind)
    return sim_fail(S, &c->hdr, "%s: operand %d must be a %s buffer, but %s has scope '%s'", c->op, i + 1, what,
                    out->load->buffer->name, out->load->buffer->scope);
  out->el = sim_eval(S, out->load->indices->items[0], 0, a);
  return out->el ? 0 : -1;
}

static int64_t const_arg(Sim *S, const tir_Call *c, int i, int64_t dflt) {
  int64_t v;
  if (i < c->args->size && tir_is_const_int(c->args->items[i], &v)) return v;
  (void)S;
  return dflt;
}

/* The warps of `a` (bitmask of lanes per warp); every warp present must be complete. */
static int full_warps(Sim *S, const tir_Call *c, const Act *a, int *warps, int *nw) {
  *nw = 0;
  for (int k = 0; k < a->n;) {
    int w = a->ids[k] / 32, cnt = 0;
    while (k < a->n && a->ids[k] / 32 == w) cnt++, k++;
    int size = S->T - 32 * w < 32 ? S->T - 32 * w : 32;
    if (cnt != 32) {
      char who[96];
      S->rep->warp_ops++;
      if (sim_issue(S, "warp_divergence", S->cur, a->ids[k - 1], NULL, -1, NULL, -1, -1,
                    "%s is a warp-wide .sync.aligned instruction, but %s: all 32 lanes of the warp must execute it together "
                    "(e.g. %s is here)%s",
                    c->op, size < 32 ? "the CTA's last warp has fewer than 32 threads" : "only part of the warp executes it",
                    sim_thread_name(S, a->ids[k - 1], who, sizeof who),
                    size < 32 ? " -- launch a multiple of 32 threads" : " -- it is under a condition that differs across lanes"))
        return -1;
      continue;
    }
    warps[(*nw)++] = w;
  }
  return 0;
}

/* per-lane registers of a "warp" operand: element el / 32 of the lane's part (codegen's warp_ref) */
static int lane_regs(Sim *S, const Addr *x, int t, int count, const char *op, int64_t *off) {
  int64_t e = x->el[t].i;
  *off = e >= 0 ? e / 32 : -((-e + 31) / 32);
  if (sim_in_bounds(S, x->st, *off, count, t, op)) return 1;
  return 0;
}

static double get_f(const Store *st, int t, int64_t el) { return tir_load_scalar_f(sim_addr(st, t, 0), st->dtype, el); }
static void put_f(const Store *st, int t, int64_t el, double v) { tir_store_scalar_f(sim_addr(st, t, 0), st->dtype, el, v); }

/* an element as a double: floats, and integers (exact up to 2^53: the 8- and 32-bit operands) */
static double get_num(const Store *st, int t, int64_t el) {
  return tir_dtype_is_float(st->dtype) ? get_f(st, t, el) : (double)tir_load_scalar_i(sim_addr(st, t, 0), st->dtype, el);
}
static void put_num(const Store *st, int t, int64_t el, double v) {
  if (tir_dtype_is_float(st->dtype)) put_f(st, t, el, v);
  else tir_store_scalar_i(sim_addr(st, t, 0), st->dtype, el, (int64_t)v);
}

/* The logical element of physical element el of a shared buffer: the lowered code addresses a
 * swizzled buffer physically (lower_buffer_swizzle), and the XOR swizzle is its own inverse
 * (include/tir/swizzle.h), so the fragment-tile hints compare logical positions. */
static int64_t logical_el(const Store *st, int64_t el) {
  int64_t sw = st->buf ? st->buf->swizzle : 0;
  return sw ? tir_swizzle_apply(sw, el * st->esize) / st->esize : el;
}

/* ---- ldmatrix ---- */
static int ldmatrix(Sim *S, const tir_Call *c, const Act *a) {
  int64_t trans = const_arg(S, c, 0, 0), num = const_arg(S, c, 1, 4);
  if (c->args->size != 4 || (num != 1 && num != 2 && num != 4))
    return sim_fail(S, &c->hdr, "mma_ldmatrix takes (trans, 1 | 2 | 4, dst, src); it loads 1, 2 or 4 matrices");
  Addr d, s;
  if (addr(S, c, 2, a, &d, -1, "warp") || addr(S, c, 3, a, &s, ST_SHARED, "shared")) return -1;
  /* the destination: a warp buffer (a lane's part at el / 32), or wgmma's A fragment of a
   * warpgroup ("wgmma.matrix_a": a thread's part at el / 128, as the codegen's wg_ref) */
  int wg_a = d.st->kind == ST_WGACC && tir_scope_parse(d.load->buffer->scope).rank == TIR_SCOPE_WGMMA_MATRIX_A;
  if (d.st->kind != ST_WARP && !wg_a)
    return sim_fail(S, &c->hdr, "%s: operand 3 must be a warp or wgmma.matrix_a buffer, but %s has scope '%s'", c->op, d.load->buffer->name,
                    d.load->buffer->scope);
  /* the instruction moves b16 units: 16-bit elements, or pairs of 8-bit ones (the m16n8k32
   * operands); .trans transposes b16 units, so it needs 16-bit elements (PTX ISA 9.7.14.5.15) */
  int esz = d.st->esize;
  if (d.st->esize != s.st->esize || (esz != 2 && esz != 1) || d.st->dtype.lanes != 1 || s.st->dtype.lanes != 1)
    return sim_fail(S, &c->hdr, "mma_ldmatrix moves 16-bit units (.b16): %s and %s must be both 16-bit or both 8-bit buffers",
                    d.load->buffer->name, s.load->buffer->name);
  if (trans && esz != 2)
    return sim_fail(S, &c->hdr, "mma_ldmatrix: .trans transposes 16-bit elements only; %s has 8-bit elements (store the 8-bit "
                    "operand k-major instead)", s.load->buffer->name);
  int per = 2 / esz; /* elements per b16 unit */
  int warps[SIM_MAX_THREADS / 32], nw;
  if (full_warps(S, c, a, warps, &nw)) return -1;
  for (int wi = 0; wi < nw; wi++) {
    int base = warps[wi] * 32;
    S->rep->warp_ops++;
    uint16_t m[4][8][8];
    int64_t rows[4][8];
    int ok = 1;
    for (int i = 0; i < num && ok; i++)
      for (int r = 0; r < 8 && ok; r++) {
        int t = base + 8 * i + r;
        int64_t el = s.el[t].i;
        if ((el * esz) % 16) {
          char who[96];
          if (sim_issue(S, "misaligned", S->cur, t, NULL, -1, s.load->buffer->name, el, s.st->n,
                        "ldmatrix: the row address %s[%lld] given by %s (row %d of matrix %d) is not 16-byte aligned",
                        s.load->buffer->name, (long long)el, sim_thread_name(S, t, who, sizeof who), r, i))
            return -1;
          ok = 0;
          break;
        }
        if (!sim_in_bounds(S, s.st, el, 8 * per, t, "ldmatrix row read")) {
          ok = 0;
          break;
        }
        if (sim_shared_read(S, s.st, el * esz, 16, t)) return -1;
        memcpy(m[i][r], sim_addr(s.st, t, el), 16);
        rows[i][r] = el;
      }
    if (S->fatal) return -1;
    if (!ok) continue;
    for (int l = 0; l < 32; l++) {
      int t = base + l;
      int64_t off;
      if (wg_a) {
        int64_t e = d.el[t].i;
        off = e >= 0 ? e / 128 : -((-e + 127) / 128);
        if (!sim_in_bounds(S, d.st, off, 2 * num * per, t, "ldmatrix write")) {
          if (S->fatal) return -1;
          continue;
        }
        /* a register of A that a wgmma_mma_async of an incomplete group still reads (PTX ISA
         * 9.7.15.4: the A registers may not be modified until wgmma.wait_group covers it) */
        if (sim_wgmma_a_pending(S, c, d.st, d.load->buffer, t, off, 2 * num * per) < 0) return -1;
      } else if (!lane_regs(S, &d, t, 2 * num * per, "ldmatrix write", &off)) {
        if (S->fatal) return -1;
        continue;
      }
      uint16_t *dst = (uint16_t *)sim_addr(d.st, t, off);
      int64_t *org = d.st->origin ? d.st->origin + (int64_t)t * d.st->n + off : NULL;
      for (int i = 0; i < num; i++) {
        int g = l / 4, q = l % 4;
        dst[2 * i] = trans ? m[i][2 * q][g] : m[i][g][2 * q];
        dst[2 * i + 1] = trans ? m[i][2 * q + 1][g] : m[i][g][2 * q + 1];
        if (org)
          for (int e = 0; e < 2 * per; e++) /* element e of the lane's register i */
            org[2 * per * i + e] =
                ((int64_t)s.st->index << 40) | logical_el(s.st, trans ? rows[i][2 * q + e] + g : rows[i][g] + 2 * per * q + e);
      }
    }
  }
  return 0;
}

/* ---- mma.sync: a 16x16 warp tile as two instructions of a table row (include/tir/mma.h) ---- */
#define MAXK 32 /* the deepest k of an mma.sync row */

/* D = C + A B in k order, rounded to the accumulator type after every step (the interpreter's
 * desc: C[i, j] = C[i, j] + acc(A[i, k]) * acc(B[k, j])); integers exactly (int64 products,
 * wrapped to the accumulator type like the interpreter) */
void sim_mma_tile(const double *A, const double *B, double *C, int tm, int tn, int tk, tir_DType acc) {
  for (int i = 0; i < tm; i++)
    for (int j = 0; j < tn; j++) {
      SVal c = {.f = C[i * tn + j]};
      if (!tir_dtype_is_float(acc)) c.i = (int64_t)C[i * tn + j];
      for (int k = 0; k < tk; k++) {
        SVal p;
        if (tir_dtype_is_float(acc)) {
          p.f = A[i * tk + k] * B[k * tn + j];
          p = tir_value_norm(acc, p);
          c.f = c.f + p.f;
        } else {
          p.i = (int64_t)A[i * tk + k] * (int64_t)B[k * tn + j];
          p = tir_value_norm(acc, p);
          c.i = (int64_t)((uint64_t)c.i + (uint64_t)p.i);
        }
        c = tir_value_norm(acc, c);
      }
      C[i * tn + j] = tir_dtype_is_float(acc) ? c.f : (double)c.i;
    }
}

/* Whether the shared elements a 16x16 operand was loaded from (by ldmatrix) form a tile,
 * origin(r, c) = origin(0, 0) + r * dr + c * dc; a hint naming the first element that does not
 * fit otherwise (a wrong lane -> row mapping of the ldmatrix shows here).  Swizzled layouts do
 * not fit either, which is why this is a hint and not an issue. */
static void check_tile(Sim *S, const Addr *x, const int64_t *off, int base, int is_b, const tir_MmaConfig *cfg) {
  if (!x->st->origin) return;
  const int64_t mask = ((int64_t)1 << 40) - 1;
  int64_t o[MAXK][MAXK];
  int rows = is_b ? cfg->k : 16, cols = is_b ? 16 : cfg->k, ne = tir_mma_lane_elems(cfg, is_b ? 'b' : 'a');
  for (int l = 0; l < 32; l++)
    for (int j = 0; j < ne; j++) {
      int r, c;
      (is_b ? cfg->map_b : cfg->map_a)(l, j, &r, &c);
      int64_t v = x->st->origin[(int64_t)(base + l) * x->st->n + off[l] + j];
      if (v < 0) return; /* not (all) from ldmatrix */
      o[r][c] = v;
    }
  int64_t b0 = o[0][0] & mask, dc = (o[0][1] & mask) - b0, dr = (o[1][0] & mask) - b0;
  for (int r = 0; r < rows; r++)
    for (int c = 0; c < cols; c++) {
      if (o[r][c] >> 40 != o[0][0] >> 40) return;
      int64_t want = b0 + r * dr + c * dc;
      if ((o[r][c] & mask) == want) continue;
      const Store *src = S->st[o[0][0] >> 40];
      const char *sn = src->buf ? src->buf->name : "?";
      sim_hint(S, S->cur,
               "the %s operand of mma_sync in warp %d is not a %dx%d tile of %s: its element (%s %d, %s %d) was loaded from "
               "%s[%lld], but the tile that starts at %s[%lld] (rows %lld elements apart) has %s[%lld] there -- check the lane "
               "-> row mapping of the mma_ldmatrix that filled %s (PTX ISA 9.7.14.5.15: for .x4, lanes 8i..8i+7 give the row "
               "addresses of matrix i, and the m%dn%dk%d %s fragment (%s) needs matrices %s)",
               is_b ? "B" : "A", base / 32, rows, cols, sn, is_b ? "k" : "row", r, is_b ? "n" : "col", c, sn,
               (long long)(o[r][c] & mask), sn, (long long)b0, (long long)dr, sn, (long long)want, x->load->buffer->name, cfg->m,
               cfg->n, cfg->k, is_b ? "B" : "A", cfg->source,
               cfg->k == 16 ? (is_b ? "(k 0-7, n 0-7), (k 8-15, n 0-7), (k 0-7, n 8-15), (k 8-15, n 8-15), loaded with .trans"
                                    : "(rows 0-7, cols 0-7), (rows 8-15, cols 0-7), (rows 0-7, cols 8-15), (rows 8-15, cols 8-15)")
                            : (is_b ? "(n 0-7, k 0-15), (n 0-7, k 16-31), (n 8-15, k 0-15), (n 8-15, k 16-31) of the k-major B, "
                                      "without .trans"
                                    : "(rows 0-7, k 0-15), (rows 8-15, k 0-15), (rows 0-7, k 16-31), (rows 8-15, k 16-31)"));
      return;
    }
}

/* The table row of an mma_sync call (its 5th argument names it, else the operands' dtypes). */
static const tir_MmaConfig *mma_row(Sim *S, const tir_Call *c, const Addr *x) {
  const tir_Node *nm = c->args->size == 5 ? c->args->items[4] : NULL;
  const tir_MmaConfig *cfg = NULL;
  if (nm && nm->kind == TIR_StringImm) cfg = tir_mma_find(TIR_MMA_SYNC, ((const tir_StringImm *)nm)->value);
  else if (!nm) cfg = tir_mma_for(TIR_MMA_SYNC, x[1].st->dtype, x[2].st->dtype, x[0].st->dtype, 0, 0, 0);
  if (!cfg) {
    sim_fail(S, &c->hdr, nm ? "mma_sync: unknown mma.sync configuration (include/tir/mma.h lists them)"
                            : "mma_sync: no mma.sync configuration multiplies these A and B element types into this D "
                              "(float16/bfloat16 into float32; include/tir/mma.h lists them)");
    return NULL;
  }
  if (!tir_dtype_eq(x[1].st->dtype, cfg->a) || !tir_dtype_eq(x[2].st->dtype, cfg->b) || !tir_dtype_eq(x[0].st->dtype, cfg->c) ||
      !tir_dtype_eq(x[3].st->dtype, cfg->c)) {
    sim_fail(S, &c->hdr, "mma_sync: the operands' element types do not match configuration %s", cfg->name);
    return NULL;
  }
  return cfg;
}

static int mma_sync(Sim *S, const tir_Call *c, const Act *a) {
  Addr x[4];
  if (c->args->size != 4 && c->args->size != 5) return sim_fail(S, &c->hdr, "mma_sync takes (d, a, b, c [, configuration])");
  for (int i = 0; i < 4; i++)
    if (addr(S, c, i, a, &x[i], ST_WARP, "warp")) return -1;
  const tir_MmaConfig *cfg = mma_row(S, c, x);
  if (!cfg) return -1;
  int tk = cfg->k, ne[4] = {tir_mma_lane_elems(cfg, 'c'), tir_mma_lane_elems(cfg, 'a'), tir_mma_lane_elems(cfg, 'b'),
                            tir_mma_lane_elems(cfg, 'c')};
  int warps[SIM_MAX_THREADS / 32], nw;
  if (full_warps(S, c, a, warps, &nw)) return -1;
  for (int wi = 0; wi < nw; wi++) {
    int base = warps[wi] * 32;
    S->rep->warp_ops++;
    double A[16 * MAXK], B[MAXK * 16], C[16 * 16];
    int64_t off[4][32];
    int ok = 1;
    for (int l = 0; l < 32 && ok; l++)
      for (int i = 0; i < 4 && ok; i++)
        if (!lane_regs(S, &x[i], base + l, ne[i], i == 0 ? "mma_sync write" : "mma_sync read", &off[i][l])) ok = 0;
    if (S->fatal) return -1;
    if (!ok) continue;
    for (int l = 0; l < 32; l++) {
      int r, cc;
      for (int j = 0; j < ne[1]; j++) {
        cfg->map_a(l, j, &r, &cc);
        A[r * tk + cc] = get_num(x[1].st, base + l, off[1][l] + j);
      }
      for (int j = 0; j < ne[2]; j++) {
        cfg->map_b(l, j, &r, &cc);
        B[r * 16 + cc] = get_num(x[2].st, base + l, off[2][l] + j);
      }
      for (int j = 0; j < ne[3]; j++) {
        cfg->map_c(l, j, &r, &cc);
        C[r * 16 + cc] = get_num(x[3].st, base + l, off[3][l] + j);
      }
    }
    check_tile(S, &x[1], off[1], base, 0, cfg);
    check_tile(S, &x[2], off[2], base, 1, cfg);
    sim_mma_tile(A, B, C, 16, 16, tk, cfg->c);
    for (int l = 0; l < 32; l++)
      for (int j = 0; j < ne[0]; j++) {
        int r, cc;
        cfg->map_c(l, j, &r, &cc);
        put_num(x[0].st, base + l, off[0][l] + j, C[r * 16 + cc]);
        if (x[0].st->origin) x[0].st->origin[(int64_t)(base + l) * x[0].st->n + off[0][l] + j] = -1;
      }
  }
  return 0;
}

/* mma_fill(c, value): each lane sets its 8 accumulator floats (a per-thread loop in the codegen) */
static int mma_fill(Sim *S, const tir_Call *c, const Act *a) {
  Addr d;
  if (c->args->size != 2 || addr(S, c, 0, a, &d, ST_WARP, "warp")) return c->args->size != 2 ? sim_fail(S, &c->hdr, "mma_fill takes (c, value)") : -1;
  SVal *v = sim_eval(S, c->args->items[1], 0, a);
  if (!v) return -1;
  tir_DType vt = tir_dtype_element(c->args->items[1]->dtype);
  for (int k = 0; k < a->n; k++) {
    int t = a->ids[k];
    int64_t off;
    if (!lane_regs(S, &d, t, 8, "mma_fill write", &off)) {
      if (S->fatal) return -1;
      continue;
    }
    SVal x = tir_value_cast(d.st->dtype, vt, v[t]);
    if (d.st->origin) memset(d.st->origin + (int64_t)t * d.st->n + off, 0xff, sizeof(int64_t) * 8);
    for (int j = 0; j < 8; j++) {
      if (tir_dtype_is_float(d.st->dtype)) put_f(d.st, t, off + j, x.f);
      else tir_store_scalar_i(sim_addr(d.st, t, 0), d.st->dtype, off + j, x.i);
    }
  }
  return 0;
}

/* red.global.add of one element (mma_store's "add" mode): an fp32 add rounded to nearest with
 * subnormal inputs and results flushed to sign-preserving zero (PTX ISA red: ".add.f32 ... flushes
 * subnormal inputs and results"), an int32 add wrapping */
static double ftz_f32(double x) { return fpclassify((float)x) == FP_SUBNORMAL ? copysign(0.0, x) : x; }

static SVal red_add(tir_DType dt, SVal old, SVal x) {
  SVal r;
  if (tir_dtype_is_float(dt)) r.f = ftz_f32((double)((float)ftz_f32(old.f) + (float)ftz_f32(x.f)));
  else r.i = (int32_t)((uint32_t)old.i + (uint32_t)x.i);
  return r;
}

/* mma_store(c, dst, ld[, "add"]): lane l writes rows l/4 and l/4 + 8, columns 2(l%4) + {0, 1} of
 * each 8-column half, as pairs (one float2 / half2 store each in the codegen), cast to dst's type;
 * "add": each element added into dst (a float32 / int32 global buffer of the accumulator's type) */
static int mma_store(Sim *S, const tir_Call *c, const Act *a) {
  Addr s, d;
  int add = c->args->size == 4;
  if (c->args->size != 3 && !add) return sim_fail(S, &c->hdr, "mma_store takes (c, dst, ld[, \"add\"])");
  if (addr(S, c, 0, a, &s, ST_WARP, "warp") || addr(S, c, 1, a, &d, -1, "destination")) return -1;
  if (d.st->kind != ST_SHARED && d.st->kind != ST_GLOBAL)
    return sim_fail(S, &c->hdr, "mma_store writes to a shared or global buffer, not %s (scope '%s')", d.load->buffer->name,
                    d.load->buffer->scope);
  if (add) {
    const tir_Node *m = c->args->items[3];
    if (m->kind != TIR_StringImm || strcmp(((const tir_StringImm *)m)->value, "add") != 0 || d.st->kind != ST_GLOBAL ||
        !tir_dtype_eq(d.st->dtype, s.st->dtype) || !(tir_dtype_eq(d.st->dtype, TIR_FLOAT32) || tir_dtype_eq(d.st->dtype, TIR_INT32)))
      return sim_fail(S, &c->hdr, "mma_store's fourth argument is \"add\": a float32 or int32 accumulator added into a global buffer of "
                      "its type (%s, scope '%s')", d.load->buffer->name, d.load->buffer->scope);
  }
  SVal *ld = sim_eval(S, c->args->items[2], 0, a);
  if (!ld) return -1;
  tir_DType dt = d.st->dtype, at = s.st->dtype;
  /* the codegen's vector stores: float2 / int2 of the accumulator type, __half2 from float */
  int pair = (tir_dtype_eq(dt, at) && (tir_dtype_eq(dt, TIR_FLOAT32) || tir_dtype_eq(dt, TIR_INT32))) ||
             (dt.code == TIR_DT_FLOAT && dt.bits == 16 && tir_dtype_eq(at, TIR_FLOAT32));
  for (int k = 0; k < a->n; k++) {
    int t = a->ids[k], l = t % 32;
    int64_t off;
    if (!lane_regs(S, &s, t, 8, "mma_store read", &off)) {
      if (S->fatal) return -1;
      continue;
    }
    for (int tt = 0; tt < 2; tt++)
      for (int h = 0; h < 2; h++) {
        int64_t o = d.el[t].i + (l / 4 + 8 * h) * ld[t].i + 8 * tt + 2 * (l % 4);
        if (pair && (o * d.st->esize) % (2 * d.st->esize)) {
          char who[96];
          if (sim_issue(S, "misaligned", S->cur, t, NULL, -1, d.load->buffer->name, o, d.st->n,
                        "mma_store: the codegen stores %s[%lld .. %lld] as one %d-byte vector, but the offset is not %d-byte aligned "
                        "(%s)",
                        d.load->buffer->name, (long long)o, (long long)o + 1, 2 * d.st->esize, 2 * d.st->esize,
                        sim_thread_name(S, t, who, sizeof who)))
            return -1;
          continue;
        }
        for (int e = 0; e < 2; e++) {
          SVal v;
          if (tir_dtype_is_float(at)) v.f = get_f(s.st, t, off + 4 * tt + 2 * h + e);
          else v.i = tir_load_scalar_i(sim_addr(s.st, t, 0), at, off + 4 * tt + 2 * h + e);
          if (add) {
            SVal old;
            if (sim_load_elem(S, d.st, o + e, t, dt, &old)) return -1;
            v = red_add(dt, old, v);
          }
          if (sim_store_elem(S, d.st, o + e, t, dt, tir_value_cast(dt, at, v))) return -1;
        }
      }
  }
  return 0;
}

/* ---- wmma ---- */
/* Lane 0's value of an operand, checking that every lane of the warp passes the same. */
static int uniform(Sim *S, const tir_Call *c, int base, const SVal *v, const char *what, int64_t *out) {
  for (int l = 1; l < 32; l++)
    if (v[base + l].i != v[base].i) {
      char who[96];
      if (sim_issue(S, "warp_divergence", S->cur, base + l, NULL, base, NULL, -1, -1,
                    "%s: the lanes of a warp pass different %s (lane 0: %lld, %s: %lld); a wmma operation takes one "
                    "operand for the whole warp",
                    c->op, what, (long long)v[base].i, sim_thread_name(S, base + l, who, sizeof who), (long long)v[base + l].i))
        return -1;
      return 1;
    }
  *out = v[base].i;
  return 0;
}

typedef struct {
  int rows, cols;
  const char *role;
} FragShape;

static int frag_shape(Sim *S, const tir_Call *c, const Store *st, int64_t m, int64_t n, int64_t k, FragShape *fs) {
  const char *scope = st->buf->scope;
  switch (tir_scope_parse(scope).rank) {
    case TIR_SCOPE_WMMA_MATRIX_A: *fs = (FragShape){(int)m, (int)k, "matrix_a"}; break;
    case TIR_SCOPE_WMMA_MATRIX_B: *fs = (FragShape){(int)k, (int)n, "matrix_b"}; break;
    case TIR_SCOPE_WMMA_ACCUMULATOR: *fs = (FragShape){(int)m, (int)n, "accumulator"}; break;
    default: return sim_fail(S, &c->hdr, "%s: unknown wmma scope '%s'", c->op, scope);
  }
  if (fs->rows <= 0 || fs->cols <= 0 || fs->rows > 64 || fs->cols > 64)
    return sim_fail(S, &c->hdr, "%s: unsupported fragment shape m%lld n%lld k%lld", c->op, (long long)m, (long long)n, (long long)k);
  return 0;
}

/* first element of the fragment `el / elems` of the warp's storage (codegen's frag_ref) */
static int frag_base(Sim *S, const tir_Call *c, const Addr *f, int base, int64_t elems, int64_t *first) {
  int64_t e;
  int u = uniform(S, c, base, f->el, "fragments", &e);
  if (u) return u;
  *first = (e / elems) * elems;
  if (!sim_in_bounds(S, f->st, *first, elems, base, "fragment access")) return S->fatal ? -1 : 1;
  return 0;
}

static int wmma_fill(Sim *S, const tir_Call *c, const Act *a) {
  Addr f;
  if (c->args->size != 5 || addr(S, c, 0, a, &f, ST_FRAG, "wmma fragment"))
    return c->args->size != 5 ? sim_fail(S, &c->hdr, "wmma_fill takes (fragment, m, n, k, value)") : -1;
  FragShape fs;
  if (frag_shape(S, c, f.st, const_arg(S, c, 1, 16), const_arg(S, c, 2, 16), const_arg(S, c, 3, 16), &fs)) return -1;
  SVal *v = sim_eval(S, c->args->items[4], 0, a);
  if (!v) return -1;
  int warps[SIM_MAX_THREADS / 32], nw;
  if (full_warps(S, c, a, warps, &nw)) return -1;
  tir_DType vt = tir_dtype_element(c->args->items[4]->dtype);
  for (int wi = 0; wi < nw; wi++) {
    int base = warps[wi] * 32;
    S->rep->warp_ops++;
    int64_t first;
    int rc = frag_base(S, c, &f, base, (int64_t)fs.rows * fs.cols, &first);
    if (rc < 0) return -1;
    if (rc) continue;
    SVal x = tir_value_cast(f.st->dtype, vt, v[base]);
    for (int i = 0; i < fs.rows * fs.cols; i++) {
      if (tir_dtype_is_float(f.st->dtype)) put_f(f.st, base, first + i, x.f);
      else tir_store_scalar_i(sim_addr(f.st, base, 0), f.st->dtype, first + i, x.i);
    }
  }
  return 0;
}

/* wmma_load(frag, m, n, k, ptr, ldm, layout) / wmma_store(frag, m, n, k, ptr, ldm, layout).
 * CUDA C++ Programming Guide (WMMA): the pointer must be 256-bit aligned, ldm a multiple of 16
 * bytes; accesses are attributed to the warp's lane 0 for the race check. */
static int wmma_ldst(Sim *S, const tir_Call *c, const Act *a, int is_load) {
  Addr f, p;
  if (c->args->size != 7) return sim_fail(S, &c->hdr, "%s takes (fragment, m, n, k, pointer, ldm, layout)", c->op);
  if (addr(S, c, 0, a, &f, ST_FRAG, "wmma fragment") || addr(S, c, 4, a, &p, -1, "memory")) return -1;
  if (p.st->kind != ST_SHARED && p.st->kind != ST_GLOBAL)
    return sim_fail(S, &c->hdr, "%s: the memory operand must be a shared or global buffer, not %s", c->op, p.load->buffer->name);
  FragShape fs;
  if (frag_shape(S, c, f.st, const_arg(S, c, 1, 16), const_arg(S, c, 2, 16), const_arg(S, c, 3, 16), &fs)) return -1;
  if (!is_load && strcmp(fs.role, "accumulator") != 0)
    return sim_fail(S, &c->hdr, "wmma_store stores accumulator fragments only (%s is a %s)", f.load->buffer->name, fs.role);
  const tir_Node *lay = c->args->items[6];
  int col = lay->kind == TIR_StringImm && strcmp(((const tir_StringImm *)lay)->value, "col_major") == 0;
  SVal *ld = sim_eval(S, c->args->items[5], 0, a);
  if (!ld) return -1;
  int warps[SIM_MAX_THREADS / 32], nw;
  if (full_warps(S, c, a, warps, &nw)) return -1;
  for (int wi = 0; wi < nw; wi++) {
    int base = warps[wi] * 32;
    S->rep->warp_ops++;
    int64_t first, ptr, ldm;
    int rc = frag_base(S, c, &f, base, (int64_t)fs.rows * fs.cols, &first);
    if (!rc) rc = uniform(S, c, base, p.el, "pointers", &ptr);
    if (!rc) rc = uniform(S, c, base, ld, "leading dimensions", &ldm);
    if (rc < 0) return -1;
    if (rc) continue;
    int es = p.st->esize;
    if ((ptr * es) % 32 || (ldm * es) % 16) {
      char who[96];
      if (sim_issue(S, "misaligned", S->cur, base, NULL, -1, p.load->buffer->name, ptr, p.st->n,
                    "%s: the pointer %s[%lld] must be 32-byte aligned and ldm (%lld elements) a multiple of 16 bytes (%s)", c->op,
                    p.load->buffer->name, (long long)ptr, (long long)ldm, sim_thread_name(S, base, who, sizeof who)))
        return -1;
      continue;
    }
    for (int r = 0; r < fs.rows; r++)
      for (int cc = 0; cc < fs.cols; cc++) {
        int64_t el = ptr + (col ? (int64_t)cc * ldm + r : (int64_t)r * ldm + cc);
        int64_t fe = first + (int64_t)r * fs.cols + cc;
        if (is_load) {
          SVal v;
          if (sim_load_elem(S, p.st, el, base, f.st->dtype, &v)) return -1;
          if (tir_dtype_is_float(f.st->dtype)) put_f(f.st, base, fe, tir_value_norm(f.st->dtype, v).f);
          else tir_store_scalar_i(sim_addr(f.st, base, 0), f.st->dtype, fe, tir_value_norm(f.st->dtype, v).i);
        } else {
          SVal v;
          if (tir_dtype_is_float(f.st->dtype)) v.f = get_f(f.st, base, fe);
          else v.i = tir_load_scalar_i(sim_addr(f.st, base, 0), f.st->dtype, fe);
          if (sim_store_elem(S, p.st, el, base, p.st->dtype, tir_value_cast(p.st->dtype, f.st->dtype, v))) return -1;
        }
      }
  }
  return 0;
}

/* wmma_mma(d, a, b, c [, m, n, k]): D = A B + C on m x k, k x n and m x n fragments (16^3 when
 * no shape is given; codegen: frag[index / elements]) */
static int wmma_mma(Sim *S, const tir_Call *c, const Act *a) {
  Addr x[4];
  if (c->args->size != 4 && c->args->size != 7) return sim_fail(S, &c->hdr, "wmma_mma takes (d, a, b, c [, m, n, k])");
  for (int i = 0; i < 4; i++)
    if (addr(S, c, i, a, &x[i], ST_FRAG, "wmma fragment")) return -1;
  static const tir_ScopeRank want[4] = {TIR_SCOPE_WMMA_ACCUMULATOR, TIR_SCOPE_WMMA_MATRIX_A, TIR_SCOPE_WMMA_MATRIX_B,
                                        TIR_SCOPE_WMMA_ACCUMULATOR};
  static const char *want_s[4] = {"wmma.accumulator", "wmma.matrix_a", "wmma.matrix_b", "wmma.accumulator"};
  for (int i = 0; i < 4; i++)
    if (tir_scope_parse(x[i].st->buf->scope).rank != want[i])
      return sim_fail(S, &c->hdr, "wmma_mma: operand %d must be a %s fragment, but %s is %s", i + 1, want_s[i], x[i].load->buffer->name,
                      x[i].st->buf->scope);
  int m = (int)const_arg(S, c, 4, 16), n = (int)const_arg(S, c, 5, 16), k = (int)const_arg(S, c, 6, 16);
  const tir_MmaConfig *cfg = tir_mma_for(TIR_MMA_WMMA, x[1].st->dtype, x[2].st->dtype, x[3].st->dtype, m, n, k);
  if (!cfg || !tir_dtype_eq(x[0].st->dtype, cfg->c))
    return sim_fail(S, &c->hdr, "wmma_mma: no wmma configuration m%dn%dk%d multiplies %s's and %s's element types into %s's "
                    "(include/tir/mma.h lists them)", m, n, k, x[1].load->buffer->name, x[2].load->buffer->name,
                    x[0].load->buffer->name);
  int64_t elems[4] = {(int64_t)m * n, (int64_t)m * k, (int64_t)k * n, (int64_t)m * n};
  int warps[SIM_MAX_THREADS / 32], nw;
  if (full_warps(S, c, a, warps, &nw)) return -1;
  double *M[3];
  for (int i = 0; i < 3; i++) M[i] = malloc(sizeof(double) * (size_t)elems[i + 1]);
  int rc = 0;
  for (int wi = 0; wi < nw && rc >= 0; wi++) {
    int base = warps[wi] * 32;
    S->rep->warp_ops++;
    int64_t first[4];
    rc = 0;
    for (int i = 0; i < 4 && !rc; i++) rc = frag_base(S, c, &x[i], base, elems[i], &first[i]);
    if (rc) continue;
    for (int i = 1; i < 4; i++)
      for (int64_t e = 0; e < elems[i]; e++) M[i - 1][e] = get_num(x[i].st, base, first[i] + e);
    sim_mma_tile(M[0], M[1], M[2], m, n, k, cfg->c);
    for (int64_t e = 0; e < elems[0]; e++) put_num(x[0].st, base, first[0] + e, M[2][e]);
  }
  for (int i = 0; i < 3; i++) free(M[i]);
  return rc < 0 ? -1 : 0;
}

/* ptx_shfl_sync_{idx,bfly,up,down}(mask, value, b, width), lane by lane as PTX ISA 9.7.8.6
 * shfl.sync specifies it, with the c operand CUDA's __shfl_*_sync derive from the width
 * (segmask = 32 - width; clamp 31, or 0 for .up):
 *   maxLane = (lane & segmask) | (clamp & ~segmask), minLane = lane & segmask
 *   up: j = lane - b, ok = j >= maxLane;  down: j = lane + b, ok = j <= maxLane
 *   bfly: j = lane ^ b, ok = j <= maxLane;  idx: j = minLane | (b & ~segmask), ok = j <= maxLane
 *   d = value of lane j if ok, else the lane's own value.
 * Undefined on the GPU, reported as warp_divergence: an executing lane not in membermask, a
 * lane of membermask that does not execute the shuffle (inactive, or past the CTA's last
 * thread), lanes of one membermask giving different masks, a source lane that is not
 * executing.  The value is taken as is (any dtype shfl_type_ok allows). */
SVal *sim_shfl(Sim *S, const tir_Call *c, int mode, const Act *a) {
  int64_t width;
  if (c->args->size != 4 || !tir_is_const_int(c->args->items[3], &width) || width < 1 || width > 32 || (width & (width - 1)) ||
      !tir_builtin_shfl_type_ok(tir_dtype_element(c->hdr.dtype))) {
    sim_fail(S, &c->hdr, "%s takes (mask, value, lane, width) with a constant power-of-two width <= 32 and a 32- or 64-bit value",
             c->op);
    return NULL;
  }
  SVal *r = sim_vnew(S);
  int mark = S->vtop;
  SVal *m = sim_eval(S, c->args->items[0], 0, a);
  SVal *v = m ? sim_eval(S, c->args->items[1], 0, a) : NULL;
  SVal *b = v ? sim_eval(S, c->args->items[2], 0, a) : NULL;
  if (!b) return NULL;
  uint32_t active[SIM_MAX_THREADS / 32];
  memset(active, 0, sizeof active);
  for (int k = 0; k < a->n; k++) active[a->ids[k] / 32] |= 1u << (a->ids[k] % 32);
  uint32_t seg = (uint32_t)(32 - width) & 31u, clamp = mode == TIR_SHFL_UP ? 0u : 31u;
  for (int k = 0; k < a->n; k++) {
    int id = a->ids[k], w = id / 32;
    uint32_t lane = (uint32_t)id % 32, mask = (uint32_t)m[id].i;
    char who[96];
    const char *bad = NULL;
    uint32_t missing = mask & ~active[w];
    if (!(mask >> lane & 1u)) bad = "the lane executing it is not in its membermask";
    else if (missing) bad = "lanes of its membermask do not execute it together (inactive, or past the CTA's last thread)";
    else
      for (int l = 0; l < 32 && !bad; l++)
        if ((mask >> l & 1u) && (uint32_t)m[w * 32 + l].i != mask) bad = "lanes of one membermask give different masks";
    if (bad) {
      S->rep->warp_ops++;
      if (sim_issue(S, "warp_divergence", S->cur, id, NULL, -1, NULL, -1, -1,
                    "%s (shfl.sync) with membermask 0x%08x: %s (%s); the result is undefined", c->op, mask, bad,
                    sim_thread_name(S, id, who, sizeof who)))
        return NULL;
      r[id] = v[id];
      continue;
    }
    uint32_t bv = (uint32_t)b[id].i & 31u, maxl = (lane & seg) | (clamp & ~seg), minl = lane & seg;
    int64_t j;
    int ok;
    switch (mode) {
      case TIR_SHFL_UP: j = (int64_t)lane - bv; ok = j >= (int64_t)maxl; break;
      case TIR_SHFL_DOWN: j = (int64_t)lane + bv; ok = j <= (int64_t)maxl; break;
      case TIR_SHFL_BFLY: j = lane ^ bv; ok = j <= (int64_t)maxl; break;
      default: j = minl | (bv & ~seg); ok = j <= (int64_t)maxl; break;
    }
    if (!ok) j = lane;
    if (!(active[w] >> j & 1u) || !(mask >> j & 1u)) {
      if (sim_issue(S, "warp_divergence", S->cur, id, NULL, -1, NULL, -1, -1,
                    "%s (shfl.sync): %s reads lane %lld, which does not execute it or is not in the membermask; the result "
                    "is undefined", c->op, sim_thread_name(S, id, who, sizeof who), (long long)j))
        return NULL;
      r[id] = v[id];
      continue;
    }
    r[id] = v[w * 32 + (int)j];
  }
  S->rep->warp_ops++;
  S->vtop = mark;
  return r;
}

int sim_warp_builtin(Sim *S, const tir_Call *c, const Act *a) {
  const tir_BuiltinInfo *bi = tir_builtin_info(c->op);
  int mark = S->vtop, rc;
  switch (bi ? bi->id : TIR_BI_COUNT) {
    case TIR_BI_MMA_LDMATRIX: rc = ldmatrix(S, c, a); break;
    case TIR_BI_MMA_SYNC: rc = mma_sync(S, c, a); break;
    case TIR_BI_MMA_FILL: rc = mma_fill(S, c, a); break;
    case TIR_BI_MMA_STORE: rc = mma_store(S, c, a); break;
    case TIR_BI_WMMA_FILL: rc = wmma_fill(S, c, a); break;
    case TIR_BI_WMMA_LOAD: rc = wmma_ldst(S, c, a, 1); break;
    case TIR_BI_WMMA_STORE: rc = wmma_ldst(S, c, a, 0); break;
    case TIR_BI_WMMA_MMA: rc = wmma_mma(S, c, a); break;
    default: return 1;
  }
  S->vtop = mark;
  return rc || S->fatal ? -1 : 0;
}

int sim_full_warps(Sim *S, const tir_Call *c, const Act *a, int *warps, int *nw) { return full_warps(S, c, a, warps, nw); }
