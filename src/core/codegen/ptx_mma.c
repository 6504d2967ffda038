/* ptx_mma.c -- the tensor-core instruction table (include/tir/mma.h) and the device helper each
 * mma.sync row emits.
 *
 * Lane maps of mma.sync (PTX ISA 9.7.14.5.8 "Matrix Fragments for mma.m16n8k16" and 9.7.14.5.10
 * "Matrix Fragments for mma.m16n8k32"), with g = lane / 4 (groupID), q = lane % 4
 * (threadID_in_group) and E = 32 / element bits (elements per 32-bit register):
 *  - A (16 x k, row): register r holds E consecutive k of row g + 8 (r % 2), starting at column
 *    E q + 4 E (r / 2);  i.e. a0..a(E-1) = (g, Eq ..), then (g+8, Eq ..), (g, Eq + 4E ..), ...
 *  - B (k x 8, col): register r holds E consecutive k starting at E q + 4 E r, column g.
 *  - C/D (16 x 8, 32-bit): c0, c1 = (g, 2q .. 2q+1), c2, c3 = (g+8, 2q ..).
 * Our warp tile (16 x 16 C) is two instructions along n: a lane's B elements and C elements of
 * the first half belong to columns 0-7, the second half to columns 8-15.  For 16-bit inputs
 * this is the m16n8k16 layout; for 8-bit inputs m16n8k32 (k = 32: four 8-bit values a register).
 */
#include <stdio.h>
#include <string.h>

#include "tir/mma.h"
#include "tir/strbuf.h"

static void a_map(int l, int e, int E, int *r, int *c) {
  int g = l / 4, q = l % 4, reg = e / E, w = e % E;
  *r = g + 8 * (reg % 2);
  *c = E * q + w + 4 * E * (reg / 2);
}
static void b_map(int l, int e, int E, int *k, int *n) {
  int g = l / 4, q = l % 4, t = e / (2 * E), ee = e % (2 * E), reg = ee / E, w = ee % E;
  *k = E * q + w + 4 * E * reg;
  *n = 8 * t + g;
}
static void c_map(int l, int e, int *r, int *c) {
  int g = l / 4, q = l % 4, t = e / 4, jj = e % 4;
  *r = g + 8 * (jj / 2);
  *c = 8 * t + 2 * q + jj % 2;
}
/* wgmma (PTX ISA 9.7.15.5.1.1.1 Figures 148/149, 9.7.15.5.1.1.3 Figures 152/153): a warpgroup's
 * lanes 0..127; warp w = lane / 32 owns rows 16 w .. 16 w + 15 of the 64-row tile, laid out
 * inside its 16 rows as mma.sync's: D element e of a lane is row 16 w + g + 8 ((e % 4) / 2),
 * column 8 (e / 4) + 2 q + e % 2 (N/2 elements a lane); A in registers as m16n8k16's / m16n8k32's A. */
static void wg_c(int l, int e, int *r, int *c) {
  int w = l / 32, g = l % 32 / 4, q = l % 4;
  *r = 16 * w + g + 8 * (e % 4 / 2);
  *c = 8 * (e / 4) + 2 * q + e % 2;
}
static void wg_a16(int l, int e, int *r, int *c) {
  a_map(l % 32, e, 2, r, c);
  *r += 16 * (l / 32);
}
static void wg_a8(int l, int e, int *r, int *c) {
  a_map(l % 32, e, 4, r, c);
  *r += 16 * (l / 32);
}
static void a16(int l, int e, int *r, int *c) { a_map(l, e, 2, r, c); }
static void b16(int l, int e, int *r, int *c) { b_map(l, e, 2, r, c); }
static void a8(int l, int e, int *r, int *c) { a_map(l, e, 4, r, c); }
static void b8(int l, int e, int *r, int *c) { b_map(l, e, 4, r, c); }

#define F16 {TIR_DT_FLOAT, 16, 1}
#define BF16 {TIR_DT_BFLOAT, 16, 1}
#define F32 {TIR_DT_FLOAT, 32, 1}
#define S8 {TIR_DT_INT, 8, 1}
#define U8 {TIR_DT_UINT, 8, 1}
#define S32 {TIR_DT_INT, 32, 1}
#define MMA16(name, A, B, C, pa, pb, pc)                                                                             \
  {name, TIR_MMA_SYNC, 16, 8, 16, A, B, C, pa, pb, pc, 80, 4, 2, 4, a16, b16, c_map,                               \
   "PTX ISA 9.7.14.5.8"}
/* 8-bit integer inputs, s32 accumulators wrapping on overflow (the form without .satfinite:
 * the interpreter's int32 arithmetic) */
#define MMA32(name, A, B, pa, pb)                                                                                    \
  {name, TIR_MMA_SYNC, 16, 8, 32, A, B, S32, pa, pb, "s32", 80, 4, 2, 4, a8, b8, c_map,                             \
   "PTX ISA 9.7.14.5.10"}
#define WMMA(name, m, n, k, A, B, C, pa, pb, pc, sm)                                                                 \
  {name, TIR_MMA_WMMA, m, n, k, A, B, C, pa, pb, pc, sm, 0, 0, 0, NULL, NULL, NULL,                                 \
   "PTX ISA 9.7.14.4 (wmma); CUDA C++ Programming Guide, Warp Matrix Functions"}
/* wgmma.mma_async m64nNk<k> (n = 0: N is the instruction's), sm_90a; A in registers: 4 registers a
 * lane, B always from shared memory (no lane map); D: N/2 registers a lane (regs_c 0: depends on N) */
#define WGMMA(name, k, A, B, C, pa, pb, pc, amap, step_hi)                                                            \
  {name, TIR_MMA_WGMMA, 64, 0, k, A, B, C, pa, pb, pc, 90, 4, 0, 0, amap, NULL, wg_c,                               \
   "PTX ISA 9.7.15 (wgmma.mma_async; fragments 9.7.15.5.1.1, descriptors 9.7.15.5.1.2)", 8, step_hi}

static const tir_MmaConfig table[] = {
    MMA16("m16n8k16.f16.f16.f32", F16, F16, F32, "f16", "f16", "f32"),
    MMA16("m16n8k16.bf16.bf16.f32", BF16, BF16, F32, "bf16", "bf16", "f32"),
    MMA32("m16n8k32.s8.s8.s32", S8, S8, "s8", "s8"),
    MMA32("m16n8k32.u8.s8.s32", U8, S8, "u8", "s8"),
    MMA32("m16n8k32.s8.u8.s32", S8, U8, "s8", "u8"),
    MMA32("m16n8k32.u8.u8.s32", U8, U8, "u8", "u8"),
    WMMA("m16n16k16.f16.f16.f32", 16, 16, 16, F16, F16, F32, "f16", "f16", "f32", 70),
    /* wmma integer fragments: A and B of one type (CUDA's mma_sync overloads), sm_72+ */
    WMMA("m16n16k16.s8.s8.s32", 16, 16, 16, S8, S8, S32, "s8", "s8", "s32", 72),
    WMMA("m16n16k16.u8.u8.s32", 16, 16, 16, U8, U8, S32, "u8", "u8", "s32", 72),
    WMMA("m32n8k16.s8.s8.s32", 32, 8, 16, S8, S8, S32, "s8", "s8", "s32", 72),
    WMMA("m32n8k16.u8.u8.s32", 32, 8, 16, U8, U8, S32, "u8", "u8", "s32", 72),
    WMMA("m8n32k16.s8.s8.s32", 8, 32, 16, S8, S8, S32, "s8", "s8", "s32", 72),
    WMMA("m8n32k16.u8.u8.s32", 8, 32, 16, U8, U8, S32, "u8", "u8", "s32", 72),
    WGMMA("m64nNk16.f16.f16.f32", 16, F16, F16, F32, "f16", "f16", "f32", wg_a16, 8),
    WGMMA("m64nNk16.bf16.bf16.f32", 16, BF16, BF16, F32, "bf16", "bf16", "f32", wg_a16, 8),
    /* the form without .satfinite: s32 sums wrap, as the interpreter's int32 arithmetic */
    WGMMA("m64nNk32.s8.s8.s32", 32, S8, S8, S32, "s8", "s8", "s32", wg_a8, 16),
    /* .atype and .btype are each .s8 or .u8 (PTX ISA 9.7.15.5.2, integer wgmma.mma_async) */
    WGMMA("m64nNk32.u8.s8.s32", 32, U8, S8, S32, "u8", "s8", "s32", wg_a8, 16),
    WGMMA("m64nNk32.s8.u8.s32", 32, S8, U8, S32, "s8", "u8", "s32", wg_a8, 16),
    WGMMA("m64nNk32.u8.u8.s32", 32, U8, U8, S32, "u8", "u8", "s32", wg_a8, 16),
};

const tir_MmaConfig *tir_mma_table(int *n) {
  *n = (int)(sizeof table / sizeof table[0]);
  return table;
}

const tir_MmaConfig *tir_mma_find(tir_MmaFamily family, const char *name) {
  for (size_t i = 0; name && i < sizeof table / sizeof table[0]; i++)
    if (table[i].family == family && strcmp(table[i].name, name) == 0) return &table[i];
  return NULL;
}

const tir_MmaConfig *tir_mma_for(tir_MmaFamily family, tir_DType a, tir_DType b, tir_DType c, int m, int n, int k) {
  for (size_t i = 0; i < sizeof table / sizeof table[0]; i++) {
    const tir_MmaConfig *r = &table[i];
    if (r->family == family && tir_dtype_eq(r->a, a) && tir_dtype_eq(r->b, b) && tir_dtype_eq(r->c, c) && (!m || r->m == m) &&
        (!n || r->n == n) && (!k || r->k == k))
      return r;
  }
  return NULL;
}

int tir_mma_tile_m(const tir_MmaConfig *c) { return c->family == TIR_MMA_SYNC ? 16 : c->m; }
int tir_mma_tile_n(const tir_MmaConfig *c) { return c->family == TIR_MMA_SYNC ? 16 : c->n; }

int tir_wgmma_n_valid(const tir_MmaConfig *c, int n) {
  if (c->family != TIR_MMA_WGMMA || n < 8 || n > 256) return 0;
  return n <= 32 ? n % c->n_step == 0 : n % c->n_step_hi == 0;
}

const char *tir_wgmma_helper_name(const tir_MmaConfig *c, int n, int flags) {
  static char buf[8][80];
  static int next;
  char *b = buf[next++ % 8];
  snprintf(b, sizeof buf[0], "tir_wgmma_m64n%dk%d_%s_%s_%s%s%s", n, c->k, c->ptx_a, c->ptx_b, c->ptx_c,
           flags & TIR_WGMMA_TRANS_B ? "_tb" : "", flags & TIR_WGMMA_A_REGISTERS ? "_ra" : "");
  return b;
}

int tir_wgmma_a_slab_offset(const tir_MmaConfig *c, int s) { return s * c->k / 2; }

/* wgmma.mma_async.sync.aligned.m64n<n>k<k>.<d>.<a>.<b> d, a-desc, b-desc, scale-d [, imm-scale-a,
 * imm-scale-b, imm-trans-a, imm-trans-b] (PTX ISA 9.7.15.5.2; the integer form has no scale/trans
 * immediates); with A from registers `d, {a0, a1, a2, a3}, b-desc, scale-d [, imm-scale-a,
 * imm-scale-b, imm-trans-b]` (no imm-trans-a: a register A is K-major).  scale-d is a predicate:
 * 1, D = A B + D (the accumulator is zeroed by a fill). */
char *tir_wgmma_helper_source(const tir_MmaConfig *c, int n, int flags) {
  int fl = tir_dtype_is_float(c->c), nd = n / 2, tb = (flags & TIR_WGMMA_TRANS_B) != 0, ra = (flags & TIR_WGMMA_A_REGISTERS) != 0;
  int na = ra ? c->regs_a : 1; /* A's operands: its registers, or one descriptor */
  const char *acc = fl ? "float" : "int";
  tir_StrBuf sb;
  tir_sb_init(&sb);
  tir_sb_printf(&sb, "\n// %s: one m64n%dk%d of the warpgroup, %s%s\n", c->source, n, c->k,
                ra ? "A from registers, B from shared memory (descriptor)" : "A and B from shared memory (descriptors)", tb ? ", B N-major" : "");
  tir_sb_printf(&sb, "__device__ __forceinline__ void %s(%s *d, %s, unsigned long long db) {\n", tir_wgmma_helper_name(c, n, flags), acc,
                ra ? "const unsigned *a" : "unsigned long long da");
  tir_sb_printf(&sb, "  asm volatile(\"{\\n.reg .pred p;\\nsetp.ne.b32 p, %%%d, 0;\\n\"\n", nd + na + 1);
  tir_sb_printf(&sb, "               \"wgmma.mma_async.sync.aligned.m64n%dk%d.%s.%s.%s {", n, c->k, c->ptx_c, c->ptx_a, c->ptx_b);
  for (int i = 0; i < nd; i++) tir_sb_printf(&sb, "%s%%%d", i ? ", " : "", i);
  if (ra) {
    tir_sb_puts(&sb, "}, {");
    for (int i = 0; i < na; i++) tir_sb_printf(&sb, "%s%%%d", i ? ", " : "", nd + i);
    tir_sb_printf(&sb, "}, %%%d, p", nd + na);
  } else {
    tir_sb_printf(&sb, "}, %%%d, %%%d, p", nd, nd + 1);
  }
  if (fl && ra) tir_sb_printf(&sb, ", 1, 1, %d", tb);
  else if (fl) tir_sb_printf(&sb, ", 1, 1, 0, %d", tb);
  tir_sb_puts(&sb, ";\\n}\\n\"\n               : ");
  for (int i = 0; i < nd; i++) tir_sb_printf(&sb, "%s\"+%s\"(d[%d])", i ? (i % 8 ? ", " : ",\n                 ") : "", fl ? "f" : "r", i);
  tir_sb_puts(&sb, "\n               : ");
  if (ra)
    for (int i = 0; i < na; i++) tir_sb_printf(&sb, "\"r\"(a[%d]), ", i);
  else
    tir_sb_puts(&sb, "\"l\"(da), ");
  tir_sb_puts(&sb, "\"l\"(db), \"r\"(1));\n}\n");
  return tir_sb_take(&sb);
}

int tir_mma_lane_elems(const tir_MmaConfig *c, char operand) {
  int tm = tir_mma_tile_m(c), tn = tir_mma_tile_n(c);
  return operand == 'a' ? tm * c->k / 32 : operand == 'b' ? c->k * tn / 32 : tm * tn / 32;
}

const char *tir_mma_helper_name(const tir_MmaConfig *c) {
  static char buf[8][64];
  static int next;
  char *b = buf[next++ % 8];
  snprintf(b, sizeof buf[0], "tir_mma_%s", c->name);
  for (char *p = b; *p; p++)
    if (*p == '.') *p = '_';
  return b;
}

char *tir_mma_helper_source(const tir_MmaConfig *c) {
  int fl = tir_dtype_is_float(c->c);
  const char *acc = fl ? "float" : "int", *cc = fl ? "f" : "r";
  int na = c->regs_a, nb = c->regs_b, nc = c->regs_c;
  tir_StrBuf sb;
  tir_sb_init(&sb);
  tir_sb_printf(&sb, "\n// %s: a 16x16 warp tile as two mma.sync m%dn%dk%d (columns 0-7, then 8-15)\n", c->source, c->m, c->n,
                c->k);
  tir_sb_printf(&sb, "__device__ __forceinline__ void %s(%s *d, const unsigned *a, const unsigned *b, const %s *c) {\n",
                tir_mma_helper_name(c), acc, acc);
  for (int t = 0; t < 2; t++) {
    tir_sb_printf(&sb, "  asm volatile(\"mma.sync.aligned.m%dn%dk%d.row.col.%s.%s.%s.%s ", c->m, c->n, c->k, c->ptx_c, c->ptx_a,
                  c->ptx_b, c->ptx_c);
    int op = 0;
    int groups[4] = {nc, na, nb, nc};
    for (int gi = 0; gi < 4; gi++) {
      tir_sb_puts(&sb, gi ? ", {" : "{");
      for (int i = 0; i < groups[gi]; i++) tir_sb_printf(&sb, "%s%%%d", i ? ", " : "", op++);
      tir_sb_puts(&sb, "}");
    }
    tir_sb_puts(&sb, ";\"\n               : ");
    for (int i = 0; i < nc; i++) tir_sb_printf(&sb, "%s\"=%s\"(d[%d])", i ? ", " : "", cc, nc * t + i);
    tir_sb_puts(&sb, "\n               : ");
    for (int i = 0; i < na; i++) tir_sb_printf(&sb, "\"r\"(a[%d]), ", i);
    for (int i = 0; i < nb; i++) tir_sb_printf(&sb, "\"r\"(b[%d]), ", nb * t + i);
    for (int i = 0; i < nc; i++) tir_sb_printf(&sb, "%s\"%s\"(c[%d])", i ? ", " : "", cc, nc * t + i);
    tir_sb_puts(&sb, ");\n");
  }
  tir_sb_puts(&sb, "}\n");
  return tir_sb_take(&sb);
}
