/* codegen_cuda.c -- CUDA C from lowered TensorIR (TVM src/target/source/codegen_cuda.cc).
 *
 * Input: kernels from split_host_device: flat buffers, launch_thread attributes at the
 * top, loops, ifs, allocations (shared -> __shared__, local -> registers).  Output: one
 * extern "C" __global__ function per kernel.  Expressions are fully parenthesized;
 * floordiv/floormod become / and % when both sides are provably non-negative (the
 * common case in index arithmetic), otherwise small device helpers.
 */
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tir/device_print.h"
#include "tir/arith.h"
#include "tir/codegen.h"
#include "tir/extern.h"
#include "tir/error.h"
#include "tir/mma.h"
#include "tir/scope.h"
#include "tir/strbuf.h"
#include "tir/swizzle.h"
#include "tir/tma.h"

typedef struct {
  const tir_Node *key;
  char *name;
} Name;

typedef struct {
  tir_StrBuf out;
  int indent;
  Name *names;
  int n_names, cap_names;
  tir_Analyzer *an;
  int failed;
  int uses_fp16, uses_bf16;
  int uses_wmma, uses_lane_id;
  int uses_grid_arrive; /* the tir_grid_arrive_last helper */
  unsigned uses_dp4a; /* bit as*2+bs: a dp4a.<as>.<bs> helper is emitted */
  int uses_prmt;
  const char *extern_src[64]; /* registered sources of the call_extern functions used (borrowed) */
  int n_extern_src;
  int uses_cp_async;
  int uses_tma;          /* the TMA / mbarrier helpers */
  unsigned tma_ranks;    /* bit r: the rank-r tensor copy helpers are emitted */
  unsigned tma_im2col_ranks; /* bit r: the rank-r im2col copy helper is emitted */
  int arch_a;            /* the target has the architecture-specific 'a' features (sm_90a) */
  int uses_smem_addr; /* tir_smem_addr (smem_addr_ref) */
  unsigned long long uses_mma; /* bit i: row i of the mma table (ptx_mma.c) has its helper emitted */
  int sm;                      /* the target's compute capability (80 for sm_80); 0 when unknown */
  int uses_wgmma_desc;
  struct { const tir_MmaConfig *cfg; int n, trans_b; } wgmma[32]; /* wgmma helpers to emit */
  int n_wgmma;
  int kernel_wgmma; /* the kernel being emitted issues wgmma (its cp.async waits get a proxy fence) */
  int smem_unfenced; /* wgmma kernels: a generic-proxy store to shared memory since the last proxy fence */
  int uses_numerics; /* the conversion / shift / abs helpers (numerics_helpers) */
  tir_SharedPlan smem; /* where the kernel's shared buffers live in its dynamic shared memory */
  const tir_Kernel *kernel;
  int lane_plus1; /* inside a lane-wise math call (lane_expr): 1 + the lane vector operands stand for; 0 outside */
  /* contiguous vector loads of the packed store being emitted, read into registers ld<id>_[]
   * by aligned 4/8/16-byte loads first (vector_store_packed); lane_expr reads them there */
  struct { const tir_Node *load; int id; } hoist[8];
  int n_hoist, hoist_ids;
} CG;

static int cg_fail(CG *g, const tir_Node *where, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int cg_fail(CG *g, const tir_Node *where, const char *fmt, ...) {
  if (g->failed) return -1;
  g->failed = 1;
  tir_StrBuf sb;
  tir_sb_init(&sb);
  va_list ap;
  va_start(ap, fmt);
  tir_sb_vprintf(&sb, fmt, ap);
  va_end(ap);
  tir_error_set(TIR_ERR_CODEGEN, "codegen_cuda", "%s", sb.data ? sb.data : "");
  tir_sb_free(&sb);
  if (g->kernel) {
    tir_error_set_ir(&g->kernel->func->hdr);
    if (where) tir_error_mark(where, "here");
  }
  return -1;
}

static const char *reserved[] = {"int", "float", "double", "half", "char", "short", "long", "unsigned", "signed",
                                 "bool", "void", "for", "if", "else", "while", "do", "return", "break", "continue",
                                 "switch", "case", "default", "goto", "const", "static", "extern", "register",
                                 "volatile", "struct", "union", "enum", "typedef", "sizeof", "auto", "inline",
                                 "new", "delete", "class", "template", "typename", "this", "namespace", "using",
                                 "min", "max", "threadIdx", "blockIdx", "blockDim", "gridDim", "warpSize", "true",
                                 "false", "asm", "operator", NULL};

static const char *name_of(CG *g, const tir_Node *key, const char *hint) {
  for (int i = 0; i < g->n_names; i++)
    if (g->names[i].key == key) return g->names[i].name;
  char base[96];
  size_t k = 0;
  for (const char *s = hint && *hint ? hint : "v"; *s && k < sizeof base - 12; s++)
    base[k++] = (isalnum((unsigned char)*s) || *s == '_') ? *s : '_';
  base[k] = 0;
  if (isdigit((unsigned char)base[0]) || base[0] == 0) {
    memmove(base + 1, base, k + 1);
    base[0] = 'v';
  }
  char cand[128];
  snprintf(cand, sizeof cand, "%s", base);
  for (int n = 1;; n++) {
    int taken = 0;
    for (int i = 0; reserved[i] && !taken; i++) taken = strcmp(reserved[i], cand) == 0;
    for (int i = 0; i < g->n_names && !taken; i++) taken = strcmp(g->names[i].name, cand) == 0;
    if (!taken) break;
    snprintf(cand, sizeof cand, "%s_%d", base, n);
  }
  if (g->n_names == g->cap_names) {
    g->cap_names = g->cap_names ? g->cap_names * 2 : 32;
    g->names = realloc(g->names, sizeof(Name) * (size_t)g->cap_names);
  }
  g->names[g->n_names].key = key;
  g->names[g->n_names].name = tir_strdup(cand);
  return g->names[g->n_names++].name;
}

static void set_name(CG *g, const tir_Node *key, const char *text) {
  if (g->n_names == g->cap_names) {
    g->cap_names = g->cap_names ? g->cap_names * 2 : 32;
    g->names = realloc(g->names, sizeof(Name) * (size_t)g->cap_names);
  }
  g->names[g->n_names].key = key;
  g->names[g->n_names].name = tir_strdup(text);
  g->n_names++;
}

static const char *ctype(CG *g, tir_DType t, const tir_Node *where) {
  if (t.lanes != 1) {
    cg_fail(g, where, "vector types are not emitted by this codegen yet");
    return "int";
  }
  switch (t.code) {
    case TIR_DT_INT:
      return t.bits == 8 ? "signed char" : t.bits == 16 ? "short" : t.bits == 32 ? "int" : "long long";
    case TIR_DT_UINT:
      return t.bits == 8 ? "unsigned char" : t.bits == 16 ? "unsigned short" : t.bits == 32 ? "unsigned int" : "unsigned long long";
    case TIR_DT_FLOAT:
      if (t.bits == 16) {
        g->uses_fp16 = 1;
        return "half";
      }
      return t.bits == 32 ? "float" : "double";
    case TIR_DT_BFLOAT: g->uses_bf16 = 1; return "nv_bfloat16";
    case TIR_DT_BOOL: return "bool";
    default: cg_fail(g, where, "no CUDA type for this dtype"); return "int";
  }
}

static void put(CG *g, const char *s) { tir_sb_puts(&g->out, s); }
static void putf(CG *g, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void putf(CG *g, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  tir_sb_vprintf(&g->out, fmt, ap);
  va_end(ap);
}
static void line(CG *g) { tir_sb_indent(&g->out, g->indent); }

static int is_half(tir_DType t) { return t.code == TIR_DT_FLOAT && t.bits == 16; }
static int store_aligned_16(const tir_BufferLoad *d, const tir_Node *ld);
static int is_bf16(tir_DType t) { return t.code == TIR_DT_BFLOAT; }
static int is_low_float(tir_DType t) { return is_half(t) || is_bf16(t); }

static void expr(CG *g, const tir_Node *e);

static void float_lit(CG *g, double v, tir_DType t) {
  char buf[64];
  if (isnan(v)) {
    snprintf(buf, sizeof buf, t.bits == 64 ? "__longlong_as_double(0x7ff8000000000000LL)" : "__int_as_float(0x7fc00000)");
  } else if (isinf(v)) {
    snprintf(buf, sizeof buf, t.bits == 64 ? "__longlong_as_double(%s)" : "__int_as_float(%s)",
             t.bits == 64 ? (v > 0 ? "0x7ff0000000000000LL" : "(long long)0xfff0000000000000ULL")
                          : (v > 0 ? "0x7f800000" : "(int)0xff800000"));
  } else {
    snprintf(buf, sizeof buf, t.bits == 64 ? "%.17g" : "%.9g", v);
    if (!strpbrk(buf, ".eE")) strcat(buf, ".0");
    if (t.bits != 64) strcat(buf, "f");
  }
  if (is_half(t)) {
    g->uses_fp16 = 1;
    putf(g, "__float2half_rn(%s)", buf);
  } else if (is_bf16(t)) {
    g->uses_bf16 = 1;
    putf(g, "__float2bfloat16_rn(%s)", buf);
  } else {
    put(g, buf);
  }
}

static int nonneg(CG *g, const tir_Node *e) { return tir_const_int_bound(g->an, e).min >= 0; }

static void lane_expr(CG *g, const tir_Node *e, int lane);

/* An operand: the scalar expression (lane < 0) or lane `lane` of a vector one. */
static void operand(CG *g, const tir_Node *e, int lane) {
  if (lane < 0) expr(g, e);
  else lane_expr(g, e, lane);
}

/* ---- tensor cores (lib/tir/intrin/cuda.lua; docs/BUILTINS.md) ----
 * Fragment buffers (scopes wmma.matrix_a/matrix_b/accumulator) are arrays of nvcuda::wmma
 * fragments, one per 16x16 tile of the flat buffer; "warp" buffers (mma.sync operands) hold a
 * 16x16 tile per 256 logical elements, of which each lane keeps 8 (PTX ISA 9.7.14.5.8, fragments
 * of mma.m16n8k16), so the per-thread array is a 32nd of the logical size. */

/* The flattened BufferLoad inside an address_of(...) argument, or NULL. */
static const tir_BufferLoad *addr_load(const tir_Node *e) {
  const tir_BufferLoad *l = tir_address_of_load(e);
  return l && l->indices->size == 1 ? l : NULL; /* flattened */
}

/* fragment `frag[index / elems]` of a wmma buffer */
static void frag_ref(CG *g, const tir_Node *arg, int64_t elems) {
  const tir_BufferLoad *l = addr_load(arg);
  if (!l || !tir_scope_is_wmma(l->buffer->scope)) {
    cg_fail(g, arg, "a wmma builtin needs address_of(fragment[...]) here");
    return;
  }
  putf(g, "%s[(", name_of(g, &l->buffer->data->hdr, l->buffer->name));
  expr(g, l->indices->items[0]);
  putf(g, ") / %lld]", (long long)elems);
}

/* &buf[index] of an ordinary buffer */
static void ptr_ref(CG *g, const tir_Node *arg) {
  const tir_BufferLoad *l = addr_load(arg);
  if (!l) {
    cg_fail(g, arg, "expected address_of(buffer[...])");
    return;
  }
  /* an index x + c (c a constant) as (buf + x) + c: the constant is then a 64-bit add of the
   * pointer, which ptxas folds into the instruction's immediate offset, and the copies of a tile
   * share buf + x.  (buf + (x + c) sign-extends each 32-bit sum: 3 instructions per cp.async in
   * the mma.sync main loop, measured with ptxas for sm_90.) */
  const tir_Node *ix = l->indices->items[0];
  int64_t c = 0;
  if (ix->kind == TIR_Add && tir_is_const_int(((const tir_Add *)ix)->b, &c) && c != 0) {
    putf(g, "((%s + ", name_of(g, &l->buffer->data->hdr, l->buffer->name));
    expr(g, ((const tir_Add *)ix)->a);
    put(g, ") + ");
    expr(g, ((const tir_Add *)ix)->b);
    put(g, ")");
    return;
  }
  putf(g, "(%s + ", name_of(g, &l->buffer->data->hdr, l->buffer->name));
  expr(g, ix);
  put(g, ")");
}

/* The 32-bit shared-window address of &buf[index] of a shared buffer, for ldmatrix / cp.async:
 * the buffer's base converted once (tir_smem_addr) plus the byte offset in 32-bit arithmetic.
 * (Converting the generic pointer buf + index instead makes NVRTC compute every address in 64
 * bits and truncate it: 2 more instructions per address in the main loop, measured with ptxas
 * for sm_90.) */
static void smem_addr_ref(CG *g, const tir_Node *arg) {
  const tir_BufferLoad *l = addr_load(arg);
  if (!l) {
    cg_fail(g, arg, "expected address_of(buffer[...])");
    return;
  }
  g->uses_smem_addr = 1;
  putf(g, "(tir_smem_addr(%s) + (unsigned)(", name_of(g, &l->buffer->data->hdr, l->buffer->name));
  expr(g, l->indices->items[0]);
  putf(g, ") * %du)", tir_dtype_bytes(l->buffer->hdr.dtype));
}

/* The per-thread part of a buffer spread over `threads` threads: `buf + index / threads` -- a warp
 * buffer (32: mma.sync operands) or a wgmma.accumulator buffer (128: a warpgroup's 64 x n tile, n/2
 * elements a thread in the order of PTX ISA 9.7.15.5.1.1's D fragment).  what names the scope in
 * the error when arg is not address_of(such a buffer[...]). */
static void thread_part_ref(CG *g, const tir_Node *arg, int (*in_scope)(const char *), int threads, const char *what) {
  const tir_BufferLoad *l = addr_load(arg);
  if (!l || !in_scope(l->buffer->scope)) {
    cg_fail(g, arg, "%s", what);
    return;
  }
  putf(g, "(%s + (", name_of(g, &l->buffer->data->hdr, l->buffer->name));
  expr(g, l->indices->items[0]);
  putf(g, ") / %d)", threads);
}
static void warp_ref(CG *g, const tir_Node *arg) {
  thread_part_ref(g, arg, tir_scope_is_warp, 32, "an mma builtin needs address_of(warp_buffer[...]) here");
}
static void wg_ref(CG *g, const tir_Node *arg) {
  thread_part_ref(g, arg, tir_scope_is_wgmma, 128, "a wgmma builtin needs address_of(wgmma.accumulator buffer[...]) here");
}
/* Whether arg is address_of(a wgmma.matrix_a buffer[...]): wgmma's A operand in registers. */
static int is_wg_a_ref(const tir_Node *arg) {
  const tir_BufferLoad *l = addr_load(arg);
  return l && tir_scope_parse(l->buffer->scope).rank == TIR_SCOPE_WGMMA_MATRIX_A;
}
/* ldmatrix's destination: a warp buffer (mma.sync operands, 32 lanes) or wgmma's A fragment of a
 * warpgroup (128 lanes: warp w of the warpgroup loads rows 16 w .. 16 w + 15, PTX ISA 9.7.15.5.1.1) */
static void ldmatrix_dst_ref(CG *g, const tir_Node *arg) {
  if (is_wg_a_ref(arg)) wg_ref(g, arg);
  else warp_ref(g, arg);
}

/* wgmma.* exist on sm_90a only (PTX ISA 9.7.15: "requires sm_90a"; not on sm_90 nor on later
 * architectures), so any other target is refused by name. */
static int wgmma_target_ok(CG *g, const tir_Call *c) {
  if (g->sm == 90 && g->arch_a) return 1;
  char t[16];
  if (g->sm) snprintf(t, sizeof t, "sm_%d%s", g->sm, g->arch_a ? "a" : "");
  else snprintf(t, sizeof t, "unknown");
  cg_fail(g, &c->hdr, "%s: the wgmma instructions exist only on the architecture-specific target sm_90a (PTX ISA 9.7.15), but the "
          "target is %s; build with \"cuda -arch=sm_90a\"", c->op, t);
  return 0;
}

static int const_arg(const tir_Call *c, int i, int64_t *v) { return i < c->args->size && tir_is_const_int(c->args->items[i], v); }

static const char *str_arg(const tir_Call *c, int i) {
  return i < c->args->size && c->args->items[i]->kind == TIR_StringImm ? ((const tir_StringImm *)c->args->items[i])->value : NULL;
}


/* The table row of an mma_sync call: named by its 5th argument, else found from the warp
 * buffers' dtypes; checked against the target's architecture.  NULL (and failed) when none. */
static const tir_MmaConfig *mma_row(CG *g, const tir_Call *c) {
  const tir_BufferLoad *x[4];
  for (int i = 0; i < 4; i++) x[i] = addr_load(c->args->items[i]);
  const char *name = str_arg(c, 4);
  const tir_MmaConfig *cfg = NULL;
  if (name) cfg = tir_mma_find(TIR_MMA_SYNC, name);
  else if (x[0] && x[1] && x[2])
    cfg = tir_mma_for(TIR_MMA_SYNC, x[1]->buffer->hdr.dtype, x[2]->buffer->hdr.dtype, x[0]->buffer->hdr.dtype, 0, 0, 0);
  if (!cfg) {
    int nrows;
    const tir_MmaConfig *t = tir_mma_table(&nrows);
    tir_StrBuf sb;
    tir_sb_init(&sb);
    for (int i = 0; i < nrows; i++)
      if (t[i].family == TIR_MMA_SYNC) tir_sb_printf(&sb, "%s%s", sb.len ? ", " : "", t[i].name);
    if (name) cg_fail(g, &c->hdr, "mma_sync: no mma.sync configuration '%s' (known: %s)", name, sb.data ? sb.data : "");
    else if (!x[0] || !x[1] || !x[2] || !x[3]) cg_fail(g, &c->hdr, "mma_sync takes (address_of(d), address_of(a), address_of(b), address_of(c))");
    else {
      char a[32], b[32], d[32];
      tir_dtype_str(x[1]->buffer->hdr.dtype, a), tir_dtype_str(x[2]->buffer->hdr.dtype, b), tir_dtype_str(x[0]->buffer->hdr.dtype, d);
      cg_fail(g, &c->hdr, "mma_sync: no mma.sync configuration multiplies %s x %s into %s (known: %s)", a, b, d,
              sb.data ? sb.data : "");
    }
    tir_sb_free(&sb);
    return NULL;
  }
  if (g->sm && g->sm < cfg->min_sm) {
    cg_fail(g, &c->hdr, "mma_sync: mma.sync.aligned.m%dn%dk%d.row.col.%s.%s.%s.%s needs sm_%d or newer, but the target is sm_%d",
            cfg->m, cfg->n, cfg->k, cfg->ptx_c, cfg->ptx_a, cfg->ptx_b, cfg->ptx_c, cfg->min_sm, g->sm);
    return NULL;
  }
  int nrows;
  g->uses_mma |= 1ull << (cfg - tir_mma_table(&nrows));
  return cfg;
}

/* Statement-level tensor-core builtins; returns 1 when `c` was one. */
static int tc_stmt(CG *g, const tir_Call *c) {
  const char *op = c->op;
  int n = c->args->size;
  int64_t m = 16, nn = 16, k = 16;
  const tir_BuiltinInfo *bi = tir_builtin_info(op);
  if (!bi) return 0;
  switch (bi->id) {
  case TIR_BI_WMMA_FILL:
  case TIR_BI_WMMA_LOAD:
  case TIR_BI_WMMA_STORE:
  case TIR_BI_WMMA_MMA:
  case TIR_BI_MMA_LDMATRIX:
  case TIR_BI_MMA_SYNC:
  case TIR_BI_MMA_FILL:
  case TIR_BI_MMA_STORE:
  case TIR_BI_WGMMA_FENCE:
  case TIR_BI_WGMMA_COMMIT_GROUP:
  case TIR_BI_WGMMA_WAIT_GROUP:
  case TIR_BI_WGMMA_MMA_ASYNC:
  case TIR_BI_WGMMA_FILL:
  case TIR_BI_WGMMA_STORE:
    /* the arity the registry declares (include/tir/builtins.def) */
    if ((bi->flags & TIR_BUILTIN_WARPGROUP) && !wgmma_target_ok(g, c)) return 1;
    if (n < bi->min_args || n > bi->max_args || (bi->id == TIR_BI_WMMA_MMA && n != 4 && n != 7)) {
      char want[32];
      if (bi->id == TIR_BI_WMMA_MMA) snprintf(want, sizeof want, "4 or 7");
      else if (bi->min_args == bi->max_args) snprintf(want, sizeof want, "%d", bi->min_args);
      else snprintf(want, sizeof want, "%d or %d", bi->min_args, bi->max_args);
      cg_fail(g, &c->hdr, "%s takes %s arguments (%s), not %d", op, want, bi->doc, n);
      return 1;
    }
    break;
  default: return 0;
  }
  switch (bi->id) {
  case TIR_BI_WMMA_FILL: {
    const_arg(c, 1, &m), const_arg(c, 2, &nn);
    line(g);
    put(g, "nvcuda::wmma::fill_fragment(");
    frag_ref(g, c->args->items[0], m * nn);
    put(g, ", ");
    expr(g, c->args->items[4]);
    put(g, ");\n");
    return 1;
  }
  case TIR_BI_WMMA_LOAD:
  case TIR_BI_WMMA_STORE: {
    const_arg(c, 1, &m), const_arg(c, 2, &nn), const_arg(c, 3, &k);
    const tir_BufferLoad *f = addr_load(c->args->items[0]);
    tir_ScopeRank role = f ? tir_scope_parse(f->buffer->scope).rank : TIR_SCOPE_UNKNOWN;
    int64_t elems = role == TIR_SCOPE_WMMA_MATRIX_A ? m * k : role == TIR_SCOPE_WMMA_MATRIX_B ? k * nn : m * nn;
    const char *layout = str_arg(c, 6);
    int acc = role == TIR_SCOPE_WMMA_ACCUMULATOR;
    const char *mem = layout && strcmp(layout, "col_major") == 0 ? "nvcuda::wmma::mem_col_major" : "nvcuda::wmma::mem_row_major";
    line(g);
    if (bi->id == TIR_BI_WMMA_LOAD) {
      put(g, "nvcuda::wmma::load_matrix_sync(");
      frag_ref(g, c->args->items[0], elems);
      put(g, ", ");
      ptr_ref(g, c->args->items[4]);
      put(g, ", ");
      expr(g, c->args->items[5]);
      if (acc) putf(g, ", %s", mem);
    } else {
      put(g, "nvcuda::wmma::store_matrix_sync(");
      ptr_ref(g, c->args->items[4]);
      put(g, ", ");
      frag_ref(g, c->args->items[0], elems);
      put(g, ", ");
      expr(g, c->args->items[5]);
      putf(g, ", %s", mem);
    }
    put(g, ");\n");
    return 1;
  }
  /* wmma_mma(d, a, b, c [, m, n, k]): fragments of m x k (A), k x n (B), m x n (C, D); 16^3
   * when no shape is given */
  case TIR_BI_WMMA_MMA: {
    if (n == 7) const_arg(c, 4, &m), const_arg(c, 5, &nn), const_arg(c, 6, &k);
    int64_t elems[4] = {m * nn, m * k, k * nn, m * nn};
    const tir_BufferLoad *x[4];
    for (int i = 0; i < 4; i++) x[i] = addr_load(c->args->items[i]);
    if (x[0] && x[1] && x[2]) {
      const tir_MmaConfig *cfg = tir_mma_for(TIR_MMA_WMMA, x[1]->buffer->hdr.dtype, x[2]->buffer->hdr.dtype,
                                             x[0]->buffer->hdr.dtype, (int)m, (int)nn, (int)k);
      char a[32], b[32], d[32];
      tir_dtype_str(x[1]->buffer->hdr.dtype, a), tir_dtype_str(x[2]->buffer->hdr.dtype, b), tir_dtype_str(x[0]->buffer->hdr.dtype, d);
      if (!cfg) {
        cg_fail(g, &c->hdr, "wmma_mma: no wmma configuration m%lldn%lldk%lld multiplies %s x %s into %s (include/tir/mma.h lists them)",
                (long long)m, (long long)nn, (long long)k, a, b, d);
        return 1;
      }
      if (g->sm && g->sm < cfg->min_sm) {
        cg_fail(g, &c->hdr, "wmma_mma: wmma m%dn%dk%d with %s inputs needs sm_%d or newer, but the target is sm_%d", cfg->m, cfg->n, cfg->k,
                a, cfg->min_sm, g->sm);
        return 1;
      }
    }
    line(g);
    put(g, "nvcuda::wmma::mma_sync(");
    for (int i = 0; i < 4; i++) {
      if (i) put(g, ", ");
      frag_ref(g, c->args->items[i], elems[i]);
    }
    put(g, ");\n");
    return 1;
  }
  /* mma_ldmatrix(trans, num, dst warp, src shared): PTX ISA 9.7.14.5.15 ldmatrix; the source
   * address is this lane's row (the impl computes it from tir_lane_id) */
  case TIR_BI_MMA_LDMATRIX: {
    int64_t trans = 0, num = 4;
    const_arg(c, 0, &trans), const_arg(c, 1, &num);
    if (num != 1 && num != 2 && num != 4) {
      cg_fail(g, &c->hdr, "ldmatrix loads 1, 2 or 4 matrices, not %lld", (long long)num);
      return 1;
    }
    line(g);
    put(g, "{\n");
    g->indent += 2;
    line(g);
    put(g, "unsigned* r_ = (unsigned*)");
    ldmatrix_dst_ref(g, c->args->items[2]);
    put(g, ";\n");
    line(g);
    put(g, "unsigned a_ = ");
    smem_addr_ref(g, c->args->items[3]);
    put(g, ";\n");
    line(g);
    putf(g, "asm volatile(\"ldmatrix.sync.aligned.m8n8.x%lld%s.shared.b16 {", (long long)num, trans ? ".trans" : "");
    for (int i = 0; i < num; i++) putf(g, "%s%%%d", i ? ", " : "", i);
    putf(g, "}, [%%%lld];\" : ", (long long)num);
    for (int i = 0; i < num; i++) putf(g, "%s\"=r\"(r_[%d])", i ? ", " : "", i);
    put(g, " : \"r\"(a_));\n");
    g->indent -= 2;
    line(g);
    put(g, "}\n");
    return 1;
  }
  /* mma_sync(d, a, b, c [, config]): the 16x16 warp tile D = A B + C as two mma.sync of the
   * table row (include/tir/mma.h) named by config or found from the operands' dtypes; one call
   * of the row's helper (emitted once, ptx_mma.c) */
  case TIR_BI_MMA_SYNC: {
    const tir_MmaConfig *cfg = mma_row(g, c);
    if (!cfg) return 1;
    const char *acc = tir_dtype_is_float(cfg->c) ? "float" : "int";
    line(g);
    putf(g, "%s((%s*)", tir_mma_helper_name(cfg), acc);
    warp_ref(g, c->args->items[0]);
    put(g, ", (const unsigned*)");
    warp_ref(g, c->args->items[1]);
    put(g, ", (const unsigned*)");
    warp_ref(g, c->args->items[2]);
    putf(g, ", (const %s*)", acc);
    warp_ref(g, c->args->items[3]);
    put(g, ");\n");
    return 1;
  }
  /* mma_fill(c, value): the lane's 8 accumulator elements (16x16 / 32) */
  case TIR_BI_MMA_FILL: {
    const tir_BufferLoad *d = addr_load(c->args->items[0]);
    line(g);
    put(g, "{\n");
    g->indent += 2;
    line(g);
    putf(g, "%s* d_ = ", d ? ctype(g, d->buffer->hdr.dtype, &c->hdr) : "float");
    warp_ref(g, c->args->items[0]);
    put(g, ";\n");
    line(g);
    put(g, "#pragma unroll\n");
    line(g);
    put(g, "for (int i_ = 0; i_ < 8; ++i_) d_[i_] = ");
    expr(g, c->args->items[1]);
    put(g, ";\n");
    g->indent -= 2;
    line(g);
    put(g, "}\n");
    return 1;
  }
  /* mma_store(c, dst, ld): the 16x16 accumulator tile to dst (row stride ld), cast to dst's
   * type; lane l holds rows l/4 and l/4 + 8, columns 2(l%4) + {0, 1} of each n8 tile */
  case TIR_BI_MMA_STORE: {
    const tir_BufferLoad *d = addr_load(c->args->items[1]);
    if (!d) {
      cg_fail(g, &c->hdr, "mma_store needs address_of(destination[...])");
      return 1;
    }
    tir_DType dt = d->buffer->hdr.dtype;
    g->uses_lane_id = 1;
    line(g);
    put(g, "{\n");
    g->indent += 2;
    const tir_BufferLoad *src = addr_load(c->args->items[0]);
    tir_DType at = src ? src->buffer->hdr.dtype : TIR_FLOAT32;
    line(g);
    putf(g, "const %s* c_ = ", ctype(g, at, &c->hdr));
    warp_ref(g, c->args->items[0]);
    put(g, ";\n");
    line(g);
    putf(g, "%s* p_ = ", ctype(g, dt, &c->hdr));
    ptr_ref(g, c->args->items[1]);
    put(g, ";\n");
    line(g);
    put(g, "const int l_ = tir_lane_id(), ld_ = ");
    expr(g, c->args->items[2]);
    put(g, ";\n");
    int add = c->args->size == 4;
    if (add) {
      /* "add": each element added into global memory by red.global.add (atomicAdd with the result
       * unused; PTX ISA 9.7.13.6 red): split-K's sum over CTAs.  fp32 pairs as one float2 red on
       * sm_90 (red.global.add.v2.f32); .add.f32 rounds to nearest and flushes subnormals (PTX ISA) */
      const tir_Node *mode = c->args->items[3];
      int fp = tir_dtype_eq(dt, TIR_FLOAT32) && tir_dtype_eq(at, TIR_FLOAT32), in = tir_dtype_eq(dt, TIR_INT32) && tir_dtype_eq(at, TIR_INT32);
      if (mode->kind != TIR_StringImm || strcmp(((const tir_StringImm *)mode)->value, "add") != 0 || !(fp || in) ||
          !tir_scope_is_global(d->buffer->scope)) {
        cg_fail(g, &c->hdr, "mma_store's fourth argument is \"add\" (a float32 or int32 accumulator added into a global buffer of its "
                "type), here %s into %s (scope '%s')", at.code == TIR_DT_FLOAT ? "a float accumulator" : "an integer accumulator",
                d->buffer->name, d->buffer->scope);
        return 1;
      }
    }
    if (!add && is_half(dt) && tir_dtype_eq(at, TIR_FLOAT32) && store_aligned_16(d, c->args->items[2])) {
      /* fp16 results in whole 32-byte sectors: lane 4q + i holds words (row q | q + 8) x
       * (columns 0-7 | 8-15) at columns 2i, 2i + 1; a 4 x 4 transpose of words within each quad
       * (two __shfl_xor_sync rounds) gives lane 4q + j the 8 consecutive halves of row
       * q + 8 (j >> 1), columns 8 (j & 1) .., stored as one 16-byte vector, so a warp writes 16
       * full sectors instead of 32 half-written ones (PTX ISA 9.7.14.5.8 C fragment layout) */
      static const char *const lines[] = {
          "unsigned w_[4];",
          "#pragma unroll",
          "for (int j_ = 0; j_ < 4; ++j_) {",
          "  __half2 h_ = __floats2half2_rn(c_[4 * (j_ & 1) + 2 * (j_ >> 1)], c_[4 * (j_ & 1) + 2 * (j_ >> 1) + 1]);",
          "  w_[j_] = *(unsigned*)&h_;",
          "}",
          "{ /* the off-diagonal 2x2 blocks of words change lanes (xor 2) */",
          "  const int b_ = (l_ >> 1) & 1;",
          "  const unsigned s0_ = b_ ? w_[0] : w_[2], s1_ = b_ ? w_[1] : w_[3];",
          "  const unsigned r0_ = __shfl_xor_sync(0xffffffffu, s0_, 2), r1_ = __shfl_xor_sync(0xffffffffu, s1_, 2);",
          "  if (b_) { w_[0] = r0_; w_[1] = r1_; } else { w_[2] = r0_; w_[3] = r1_; }",
          "}",
          "{ /* then the 2x2 blocks are transposed (xor 1) */",
          "  const int a_ = l_ & 1;",
          "  const unsigned s0_ = a_ ? w_[0] : w_[1], s1_ = a_ ? w_[2] : w_[3];",
          "  const unsigned r0_ = __shfl_xor_sync(0xffffffffu, s0_, 1), r1_ = __shfl_xor_sync(0xffffffffu, s1_, 1);",
          "  if (a_) { w_[0] = r0_; w_[2] = r1_; } else { w_[1] = r0_; w_[3] = r1_; }",
          "}",
          "*(uint4*)(p_ + ((l_ >> 2) + 8 * ((l_ >> 1) & 1)) * ld_ + 8 * (l_ & 1)) = make_uint4(w_[0], w_[1], w_[2], w_[3]);",
      };
      for (size_t q = 0; q < sizeof lines / sizeof lines[0]; q++) {
        line(g);
        put(g, lines[q]);
        put(g, "\n");
      }
      g->indent -= 2;
      line(g);
      put(g, "}\n");
      return 1;
    }
    line(g);
    put(g, "#pragma unroll\n");
    line(g);
    put(g, "for (int t_ = 0; t_ < 2; ++t_)\n");
    line(g);
    put(g, "  #pragma unroll\n");
    line(g);
    put(g, "  for (int h_ = 0; h_ < 2; ++h_) {\n");
    line(g);
    put(g, "    const int o_ = ((l_ >> 2) + 8 * h_) * ld_ + 8 * t_ + 2 * (l_ & 3);\n");
    line(g);
    if (add && tir_dtype_eq(dt, TIR_FLOAT32) && g->sm >= 90)
      put(g, "    atomicAdd((float2*)(p_ + o_), make_float2(c_[4 * t_ + 2 * h_], c_[4 * t_ + 2 * h_ + 1]));\n");
    else if (add)
      put(g, "    atomicAdd(p_ + o_, c_[4 * t_ + 2 * h_]); atomicAdd(p_ + o_ + 1, c_[4 * t_ + 2 * h_ + 1]);\n");
    else if (tir_dtype_eq(dt, TIR_FLOAT32) && tir_dtype_eq(at, TIR_FLOAT32))
      put(g, "    *(float2*)(p_ + o_) = make_float2(c_[4 * t_ + 2 * h_], c_[4 * t_ + 2 * h_ + 1]);\n");
    else if (tir_dtype_eq(dt, TIR_INT32) && tir_dtype_eq(at, TIR_INT32))
      put(g, "    *(int2*)(p_ + o_) = make_int2(c_[4 * t_ + 2 * h_], c_[4 * t_ + 2 * h_ + 1]);\n");
    else if (is_half(dt) && tir_dtype_eq(at, TIR_FLOAT32))
      put(g, "    *(__half2*)(p_ + o_) = __floats2half2_rn(c_[4 * t_ + 2 * h_], c_[4 * t_ + 2 * h_ + 1]);\n");
    else {
      putf(g, "    p_[o_] = (%s)c_[4 * t_ + 2 * h_]; p_[o_ + 1] = (%s)c_[4 * t_ + 2 * h_ + 1];\n", ctype(g, dt, &c->hdr),
           ctype(g, dt, &c->hdr));
    }
    line(g);
    put(g, "  }\n");
    g->indent -= 2;
    line(g);
    put(g, "}\n");
    return 1;
  }
  case TIR_BI_WGMMA_FENCE:
  case TIR_BI_WGMMA_COMMIT_GROUP:
    line(g);
    putf(g, "asm volatile(\"wgmma.%s.sync.aligned;\\n\" ::: \"memory\");\n", bi->id == TIR_BI_WGMMA_FENCE ? "fence" : "commit_group");
    return 1;
  case TIR_BI_WGMMA_WAIT_GROUP: {
    int64_t w;
    if (!tir_as_const_int(g->an, c->args->items[0], &w) || w < 0 || w > 7) {
      cg_fail(g, &c->hdr, "wgmma_wait_group takes a constant group count 0..7 (an immediate of wgmma.wait_group)");
      return 1;
    }
    line(g);
    putf(g, "asm volatile(\"wgmma.wait_group.sync.aligned %lld;\\n\" ::: \"memory\");\n", (long long)w);
    return 1;
  }
  /* wgmma_mma_async(d, desc_a, desc_b, n, trans_b [, config]): one call of the (row, n, trans_b)
   * helper (ptx_mma.c), emitted once */
  case TIR_BI_WGMMA_MMA_ASYNC: {
    int64_t nv = 0, tb = 0;
    const tir_BufferLoad *d = addr_load(c->args->items[0]);
    const tir_Node *da = c->args->items[1], *db = c->args->items[2];
    /* A: a descriptor of a shared tile, or address_of(wgmma.matrix_a fragment[...]) (A in registers) */
    int a_regs = is_wg_a_ref(da);
    int descs = (a_regs || (da->kind == TIR_Call && strcmp(((const tir_Call *)da)->op, "wgmma_desc") == 0)) && db->kind == TIR_Call &&
                strcmp(((const tir_Call *)db)->op, "wgmma_desc") == 0;
    if (!descs) {
      cg_fail(g, &c->hdr, "wgmma_mma_async: the operands must be wgmma_desc(...) here (lower_wgmma_descriptor turns wgmma_operand "
              "into them), A also address_of(a wgmma.matrix_a buffer[...])");
      return 1;
    }
    const tir_BufferLoad *la = a_regs ? addr_load(da) : addr_load(((const tir_Call *)da)->args->items[0]),
                         *lb = addr_load(((const tir_Call *)db)->args->items[0]);
    if (!d || !la || !lb || !const_arg(c, 3, &nv) || !const_arg(c, 4, &tb)) {
      cg_fail(g, &c->hdr, "wgmma_mma_async takes (address_of(accumulator), wgmma_desc(A), wgmma_desc(B), constant n, constant trans_b)");
      return 1;
    }
    const char *name = str_arg(c, 5);
    const tir_MmaConfig *cfg = name ? tir_mma_find(TIR_MMA_WGMMA, name)
                                    : tir_mma_for(TIR_MMA_WGMMA, la->buffer->hdr.dtype, lb->buffer->hdr.dtype, d->buffer->hdr.dtype, 0, 0, 0);
    if (!cfg) {
      char a[32], b[32], dd[32];
      tir_dtype_str(la->buffer->hdr.dtype, a), tir_dtype_str(lb->buffer->hdr.dtype, b), tir_dtype_str(d->buffer->hdr.dtype, dd);
      cg_fail(g, &c->hdr, "wgmma_mma_async: no wgmma configuration %s%s multiplies %s x %s into %s (include/tir/mma.h: "
              "m64nNk16.f16.f16.f32, m64nNk16.bf16.bf16.f32, m64nNk32.{s8,u8}.{s8,u8}.s32)", name ? "named " : "", name ? name : "", a, b, dd);
      return 1;
    }
    if (!tir_wgmma_n_valid(cfg, (int)nv)) {
      cg_fail(g, &c->hdr, "wgmma_mma_async: n = %lld is not a valid N of wgmma %s (PTX ISA 9.7.15.5.1.1: multiples of %d up to 32, of %d "
              "up to 256)", (long long)nv, cfg->name, cfg->n_step, cfg->n_step_hi);
      return 1;
    }
    if (tb && cfg->a.bits != 16) {
      cg_fail(g, &c->hdr, "wgmma_mma_async: an N-major B (trans_b = 1) exists for 16-bit inputs only (PTX ISA 9.7.15.5.1.2: imm-trans-b "
              "is only given for .f16/.bf16), not for %s", cfg->name);
      return 1;
    }
    tb = tb ? TIR_WGMMA_TRANS_B : 0;
    if (a_regs) tb |= TIR_WGMMA_A_REGISTERS;
    int found = 0;
    for (int i = 0; i < g->n_wgmma; i++) found |= g->wgmma[i].cfg == cfg && g->wgmma[i].n == (int)nv && g->wgmma[i].trans_b == (int)tb;
    if (!found) {
      if (g->n_wgmma == (int)(sizeof g->wgmma / sizeof g->wgmma[0])) {
        cg_fail(g, &c->hdr, "wgmma_mma_async: more than 32 different wgmma shapes in one module");
        return 1;
      }
      g->wgmma[g->n_wgmma].cfg = cfg, g->wgmma[g->n_wgmma].n = (int)nv, g->wgmma[g->n_wgmma++].trans_b = (int)tb;
    }
    line(g);
    putf(g, "%s((%s*)", tir_wgmma_helper_name(cfg, (int)nv, (int)tb), tir_dtype_is_float(cfg->c) ? "float" : "int");
    wg_ref(g, c->args->items[0]);
    put(g, ", ");
    if (a_regs) {
      put(g, "(const unsigned*)");
      wg_ref(g, da);
    } else {
      expr(g, da);
    }
    put(g, ", ");
    expr(g, db);
    put(g, ");\n");
    return 1;
  }
  /* wgmma_fill(d, n, value): the thread's n/2 elements; wgmma_store(d, dst, ld, n): thread t of
   * the warpgroup (warp w = t / 32, lane l) holds rows 16 w + l/4 (+ 8), columns 8 j + 2 (l % 4) + {0, 1}.
   * Both start with an empty asm on each register ("+f"): volatile asm keeps its order, so the
   * accesses cannot move above a preceding wgmma.wait_group (CUTLASS's warpgroup_fence_operand). */
  case TIR_BI_WGMMA_FILL:
  case TIR_BI_WGMMA_STORE: {
    int st = bi->id == TIR_BI_WGMMA_STORE;
    int64_t nv;
    const tir_BufferLoad *d = addr_load(c->args->items[0]);
    if (!d || !const_arg(c, st ? 3 : 1, &nv) || nv < 8 || nv > 256 || nv % 8) {
      cg_fail(g, &c->hdr, "%s takes (address_of(accumulator), %sconstant n (a multiple of 8 up to 256)%s)", op, st ? "dst, ld, " : "",
              st ? "" : ", value");
      return 1;
    }
    tir_DType at = d->buffer->hdr.dtype;
    const char *act = ctype(g, at, &c->hdr), *cons = tir_dtype_is_float(at) ? "f" : "r";
    line(g);
    put(g, "{\n");
    g->indent += 2;
    line(g);
    putf(g, "%s* d_ = ", act);
    wg_ref(g, c->args->items[0]);
    put(g, ";\n");
    line(g);
    put(g, "#pragma unroll\n");
    line(g);
    putf(g, "for (int i_ = 0; i_ < %lld; ++i_) asm volatile(\"\" : \"+%s\"(d_[i_]) :: \"memory\");\n", (long long)nv / 2, cons);
    if (!st) {
      line(g);
      put(g, "#pragma unroll\n");
      line(g);
      putf(g, "for (int i_ = 0; i_ < %lld; ++i_) d_[i_] = ", (long long)nv / 2);
      expr(g, c->args->items[2]);
      put(g, ";\n");
    } else {
      const tir_BufferLoad *dst = addr_load(c->args->items[1]);
      if (!dst) {
        cg_fail(g, &c->hdr, "wgmma_store needs address_of(destination[...])");
        return 1;
      }
      tir_DType dt = dst->buffer->hdr.dtype;
      /* boxes (a fifth argument, the box stride: column c in box c / ld at row r, c % ld) and the
       * destination's swizzle (wgmma_store is SWIZZLE_AWARE: its address stays logical, the XOR of
       * include/tir/swizzle.h on the element index is applied here, from the buffer's start) */
      int64_t sw = dst->buffer->swizzle;
      int boxed = c->args->size == 5, le = 0;
      while ((1 << le) < tir_dtype_bytes(dt)) le++;
      if (sw && (tir_swizzle_base(sw) < le || tir_swizzle_unit(sw) < 2 * tir_dtype_bytes(dt))) {
        cg_fail(g, &c->hdr, "wgmma_store: the swizzle of %s moves units smaller than the store's element pairs", dst->buffer->name);
        return 1;
      }
      g->uses_lane_id = 1;
      line(g);
      putf(g, "%s* p_ = ", ctype(g, dt, &c->hdr));
      if (sw || boxed) {
        putf(g, "%s;\n", name_of(g, &dst->buffer->data->hdr, dst->buffer->name));
        line(g);
        put(g, "const int b_ = ");
        expr(g, dst->indices->items[0]);
      } else {
        ptr_ref(g, c->args->items[1]);
      }
      put(g, ";\n");
      line(g);
      put(g, "const int l_ = tir_lane_id(), w_ = (threadIdx.x >> 5) & 3, ld_ = ");
      expr(g, c->args->items[2]);
      if (boxed) {
        put(g, ", bs_ = ");
        expr(g, c->args->items[4]);
      }
      put(g, ";\n");
      line(g);
      put(g, "#pragma unroll\n");
      line(g);
      putf(g, "for (int j_ = 0; j_ < %lld; ++j_)\n", (long long)nv / 8);
      line(g);
      put(g, "  #pragma unroll\n");
      line(g);
      put(g, "  for (int h_ = 0; h_ < 2; ++h_) {\n");
      line(g);
      if (boxed)
        put(g, "    int o_ = b_ + (8 * j_ + 2 * (l_ & 3)) / ld_ * bs_ + (16 * w_ + (l_ >> 2) + 8 * h_) * ld_ + (8 * j_ + 2 * (l_ & 3)) % ld_;\n");
      else if (sw)
        put(g, "    int o_ = b_ + (16 * w_ + (l_ >> 2) + 8 * h_) * ld_ + 8 * j_ + 2 * (l_ & 3);\n");
      else
        put(g, "    const int o_ = (16 * w_ + (l_ >> 2) + 8 * h_) * ld_ + 8 * j_ + 2 * (l_ & 3);\n");
      if (sw) {
        line(g);
        putf(g, "    o_ ^= (o_ >> %d) & %lld;\n", tir_swizzle_shift(sw),
             (long long)(((INT64_C(1) << tir_swizzle_bits(sw)) - 1) << (tir_swizzle_base(sw) - le)));
      }
      line(g);
      if (tir_dtype_eq(dt, TIR_FLOAT32) && tir_dtype_eq(at, TIR_FLOAT32))
        put(g, "    *(float2*)(p_ + o_) = make_float2(d_[4 * j_ + 2 * h_], d_[4 * j_ + 2 * h_ + 1]);\n");
      else if (tir_dtype_eq(dt, TIR_INT32) && tir_dtype_eq(at, TIR_INT32))
        put(g, "    *(int2*)(p_ + o_) = make_int2(d_[4 * j_ + 2 * h_], d_[4 * j_ + 2 * h_ + 1]);\n");
      else if (is_half(dt) && tir_dtype_eq(at, TIR_FLOAT32))
        put(g, "    *(__half2*)(p_ + o_) = __floats2half2_rn(d_[4 * j_ + 2 * h_], d_[4 * j_ + 2 * h_ + 1]);\n");
      else
        putf(g, "    p_[o_] = (%s)d_[4 * j_ + 2 * h_]; p_[o_ + 1] = (%s)d_[4 * j_ + 2 * h_ + 1];\n", ctype(g, dt, &c->hdr),
             ctype(g, dt, &c->hdr));
      line(g);
      put(g, "  }\n");
    }
    g->indent -= 2;
    line(g);
    put(g, "}\n");
    return 1;
  }
  default: return 0;
  }
}

/* Whether mma_store's destination rows may be written with 16-byte vectors: a constant row
 * stride and a tile start that are multiples of 16 bytes (buffer parameters are 16-byte aligned:
 * the runtime's allocations, and DLPack imports are checked, dlpack.c; shared allocations start
 * at 128 bytes, split_host_device). */
static int store_aligned_16(const tir_BufferLoad *d, const tir_Node *ld) {
  int64_t v, e = tir_dtype_bytes(d->buffer->hdr.dtype);
  if (!tir_is_const_int(ld, &v) || (v * e) % 16 != 0 || d->indices->size != 1) return 0;
  const tir_Node *i = d->indices->items[0];
  tir_Node *m = tir_floormod(R((tir_Node *)i), tir_int_imm(i->dtype, 16 / e));
  tir_Node *z = tir_cmp(TIR_EQ, m, tir_int_imm(i->dtype, 0));
  int ok = tir_can_prove(NULL, z);
  tir_release(z);
  return ok;
}

/* The fragment declaration of a wmma buffer: its shape and layout come from the builtins
 * that use it (TVM's tensorcore fragment inference). */
typedef struct {
  const tir_Buffer *buf;
  int64_t m, n, k;
  const char *layout;
} FragInfo;

static int frag_scan(const tir_Node *x, void *p) {
  FragInfo *fi = p;
  if (x->kind != TIR_Call) return 0;
  const tir_Call *c = (const tir_Call *)x;
  const tir_BuiltinInfo *bi = tir_builtin_info(c->op);
  if (!bi || (bi->id != TIR_BI_WMMA_FILL && bi->id != TIR_BI_WMMA_LOAD && bi->id != TIR_BI_WMMA_STORE && bi->id != TIR_BI_WMMA_MMA) ||
      c->args->size < 1)
    return 0;
  for (int i = 0; i < c->args->size; i++) {
    const tir_BufferLoad *l = addr_load(c->args->items[i]);
    if (!l || l->buffer->data != fi->buf->data) continue;
    if (bi->id != TIR_BI_WMMA_MMA) const_arg(c, 1, &fi->m), const_arg(c, 2, &fi->n), const_arg(c, 3, &fi->k);
    else if (c->args->size == 7) const_arg(c, 4, &fi->m), const_arg(c, 5, &fi->n), const_arg(c, 6, &fi->k);
    if (bi->id == TIR_BI_WMMA_LOAD && str_arg(c, 6)) fi->layout = str_arg(c, 6);
  }
  return 0;
}

static const char *wmma_elem_type(CG *g, tir_DType t, const tir_Node *where) {
  if (is_half(t)) {
    g->uses_fp16 = 1;
    return "half";
  }
  if (is_bf16(t)) {
    g->uses_bf16 = 1;
    return "__nv_bfloat16";
  }
  if (tir_dtype_eq(t, TIR_FLOAT32)) return "float";
  if (t.code == TIR_DT_INT && t.bits == 8) return "signed char";
  if (t.code == TIR_DT_UINT && t.bits == 8) return "unsigned char";
  if (t.code == TIR_DT_INT && t.bits == 32) return "int";
  cg_fail(g, where, "no wmma fragment type for this dtype");
  return "float";
}

/* Emits the declaration of a wmma/warp buffer allocated by `a` (n logical elements). */
static void tc_alloc(CG *g, const tir_Allocate *a, int64_t n) {
  const tir_Buffer *b = a->buffer;
  const char *name = name_of(g, &b->data->hdr, b->name);
  if (tir_scope_is_wgmma(b->scope)) {
    if (n % (64 * 8)) {
      cg_fail(g, &a->hdr, "%s buffer %s has %lld elements, not a whole number of 64 x 8 tiles", b->scope, b->name, (long long)n);
      return;
    }
    /* (16-byte aligned: the A fragment's 16-bit / 8-bit elements are passed as 32-bit registers) */
    line(g);
    putf(g, "__align__(16) %s %s[%lld];\n", ctype(g, b->hdr.dtype, &a->hdr), name, (long long)(n / 128));
    return;
  }
  if (tir_scope_is_warp(b->scope)) {
    if (n % 256) {
      cg_fail(g, &a->hdr, "warp buffer %s has %lld elements, not a whole number of 16x16 tiles", b->name, (long long)n);
      return;
    }
    line(g);
    putf(g, "__align__(16) %s %s[%lld];\n", ctype(g, b->hdr.dtype, &a->hdr), name, (long long)(n / 32));
    return;
  }
  FragInfo fi = {b, 16, 16, 16, NULL};
  tir_visit(a->body, frag_scan, &fi);
  tir_ScopeRank rank = tir_scope_parse(b->scope).rank;
  const char *role = rank == TIR_SCOPE_WMMA_MATRIX_A   ? "matrix_a"
                     : rank == TIR_SCOPE_WMMA_MATRIX_B ? "matrix_b"
                     : rank == TIR_SCOPE_WMMA_ACCUMULATOR ? "accumulator"
                                                          : NULL;
  if (!role) {
    cg_fail(g, &a->hdr, "unknown wmma scope '%s' (wmma.matrix_a, wmma.matrix_b, wmma.accumulator)", b->scope);
    return;
  }
  int64_t elems = role[0] == 'a' ? fi.m * fi.n : role[7] == 'a' ? fi.m * fi.k : fi.k * fi.n;
  if (n % elems) {
    cg_fail(g, &a->hdr, "wmma buffer %s has %lld elements, not a whole number of %lldx%lldx%lld fragments", b->name, (long long)n,
            (long long)fi.m, (long long)fi.n, (long long)fi.k);
    return;
  }
  g->uses_wmma = 1;
  line(g);
  putf(g, "nvcuda::wmma::fragment<nvcuda::wmma::%s, %lld, %lld, %lld, %s", role, (long long)fi.m, (long long)fi.n, (long long)fi.k,
       wmma_elem_type(g, b->hdr.dtype, &a->hdr));
  if (role[0] == 'm') {
    if (!fi.layout) {
      cg_fail(g, &a->hdr, "wmma buffer %s is never loaded with wmma_load, so its layout is unknown", b->name);
      return;
    }
    putf(g, ", nvcuda::wmma::%s", strcmp(fi.layout, "col_major") == 0 ? "col_major" : "row_major");
  }
  putf(g, "> %s[%lld];\n", name, (long long)(n / elems));
}


/* call_extern / call_pure_extern: `name(args...)` as written (include/tir/extern.h); a
 * registered source is emitted once before the kernels */
static void extern_call(CG *g, const tir_Call *c) {
  const char *name = tir_extern_call_name(&c->hdr);
  if (!name || !tir_extern_name_valid(name)) {
    cg_fail(g, &c->hdr, "%s needs a C function name as its first argument", c->op);
    return;
  }
  const char *src = NULL;
  if (tir_extern_lookup(name, &src, NULL, NULL) && src) {
    int seen = 0;
    for (int i = 0; i < g->n_extern_src; i++) seen |= g->extern_src[i] == src;
    if (!seen && g->n_extern_src < 64) g->extern_src[g->n_extern_src++] = src;
  }
  putf(g, "%s(", name);
  for (int i = 1; i < c->args->size; i++) {
    if (c->args->items[i]->kind == TIR_StringImm) {
      cg_fail(g, &c->hdr, "argument %d of %s '%s' is a string; device functions take expressions", i, c->op, name);
      return;
    }
    if (i > 1) put(g, ", ");
    expr(g, c->args->items[i]);
  }
  put(g, ")");
}

/* ---- numerics (docs/ARCHITECTURE.md "Numerics"; value.c is the interpreter's side) ----
 * float -> integer casts are PTX cvt.rzi.<int>.<float>, which truncates toward zero and
 * saturates to the destination's range, NaN giving 0 (PTX ISA, cvt: float-to-integer
 * conversions saturate by default); C's (signed char)x kept the low byte of a 32-bit
 * conversion instead.  Shifts by the width or more shift everything out (C leaves them
 * undefined); integer abs wraps at the minimum. */
static const struct {
  tir_DTypeCode code;
  int bits;
  const char *ctype, *ptx, *reg; /* C type, PTX type, asm constraint of the result register */
} cvt_ints[] = {{TIR_DT_INT, 8, "signed char", "s8", "r"},  {TIR_DT_UINT, 8, "unsigned char", "u8", "r"},
                {TIR_DT_INT, 16, "short", "s16", "h"},      {TIR_DT_UINT, 16, "unsigned short", "u16", "h"},
                {TIR_DT_INT, 32, "int", "s32", "r"},        {TIR_DT_UINT, 32, "unsigned int", "u32", "r"},
                {TIR_DT_INT, 64, "long long", "s64", "l"},  {TIR_DT_UINT, 64, "unsigned long long", "u64", "l"}};

static void numerics_helpers(tir_StrBuf *sb) {
  tir_sb_puts(sb, "\n// float -> integer: cvt.rzi truncates toward zero and saturates (PTX ISA, cvt); NaN -> 0\n");
  for (size_t i = 0; i < sizeof cvt_ints / sizeof cvt_ints[0]; i++) {
    char r = cvt_ints[i].reg[0];
    const char *rt = r == 'l' ? "unsigned long long" : r == 'h' ? "unsigned short" : "unsigned int";
    for (int d = 0; d < 2; d++) {
      /* NaN: cvt.rzi gives 0 only from f32 into 8..32-bit integers; from f64 and into 64 bits
       * the H200 gives the "integer indefinite" 0x80..0 (tests/spec/gpu_numerics_spec.lua), so
       * those test for NaN first */
      int nan_check = d || cvt_ints[i].bits == 64;
      tir_sb_printf(sb,
                    "__device__ __forceinline__ %s tir_cvt_%s(%s x) { %s%s r; asm(\"cvt.rzi.%s.%s %%0, %%1;\" : \"=%c\"(r) : \"%s\"(x)); "
                    "return (%s)r; }\n",
                    cvt_ints[i].ctype, cvt_ints[i].ptx, d ? "double" : "float", nan_check ? "if (x != x) return 0; " : "", rt,
                    cvt_ints[i].ptx, d ? "f64" : "f32", r, d ? "d" : "f", cvt_ints[i].ctype);
    }
  }
  tir_sb_puts(sb,
              "__device__ __forceinline__ bool tir_cvt_bool(float x) { return x < 0.0f || x > 0.0f; }  // NaN -> false\n"
              "__device__ __forceinline__ bool tir_cvt_bool(double x) { return x < 0.0 || x > 0.0; }\n"
              "// shifts: amounts of the width or more shift every bit out (PTX shl/shr clamp them; C leaves them undefined)\n"
              "__device__ __forceinline__ unsigned int tir_shl32(unsigned int x, unsigned long long s) { return s >= 32ull ? 0u : x << s; }\n"
              "__device__ __forceinline__ unsigned long long tir_shl64(unsigned long long x, unsigned long long s) { return s >= 64ull ? 0ull : x << s; }\n"
              "__device__ __forceinline__ int tir_shr32(int x, unsigned long long s) { return x >> (s >= 32ull ? 31 : (int)s); }\n"
              "__device__ __forceinline__ long long tir_shr64(long long x, unsigned long long s) { return x >> (s >= 64ull ? 63 : (int)s); }\n"
              "__device__ __forceinline__ unsigned int tir_shru32(unsigned int x, unsigned long long s) { return s >= 32ull ? 0u : x >> s; }\n"
              "__device__ __forceinline__ unsigned long long tir_shru64(unsigned long long x, unsigned long long s) { return s >= 64ull ? 0ull : x >> s; }\n"
              "// int8/int16 results: the low 8/16 bits sign-extended, opaque to the optimizer (see binary())\n"
              "__device__ __forceinline__ int tir_sext8(int x) { int r; asm(\"cvt.s32.s8 %0, %1;\" : \"=r\"(r) : \"r\"(x)); return r; }\n"
              "__device__ __forceinline__ int tir_sext16(int x) { int r; asm(\"cvt.s32.s16 %0, %1;\" : \"=r\"(r) : \"r\"(x)); return r; }\n"
              "// integer abs: the minimum wraps to itself (two's complement negation)\n"
              "__device__ __forceinline__ int tir_iabs(int x) { return x < 0 ? (int)(0u - (unsigned int)x) : x; }\n"
              "__device__ __forceinline__ long long tir_iabs(long long x) { return x < 0 ? (long long)(0ull - (unsigned long long)x) : x; }\n");
}

static const char *cvt_int_name(tir_DType t) {
  for (size_t i = 0; i < sizeof cvt_ints / sizeof cvt_ints[0]; i++)
    if (cvt_ints[i].code == t.code && cvt_ints[i].bits == t.bits) return cvt_ints[i].ptx;
  return "s32";
}

/* Integers narrower than int: C computes in int, the IR at the type's width, so results are
 * cast back (int8 100 + 100 is -56, also inside a comparison). */
static int is_narrow_int(tir_DType t) { return tir_dtype_is_int(t) && t.bits < 32; }

static const char *cast_open(CG *g, tir_DType to, tir_DType from);

/* a op b; narrow integer results brought back to their width in 32-bit registers: unsigned
 * ones computed in unsigned int (uint16 65535 * 65535 would overflow int) and masked, signed
 * ones sign-extended by cvt.s32.s8/s16 in inline PTX (tir_sext8/16).  Not C's `(short)(a + b)`:
 * nvcc narrows such code to 16-bit PTX and turned `(unsigned short)(a + b) < 1` into neg.s16 +
 * setp.eq.s16, which was false for 0x8000 + 0x8000 on the H200 (gpu_numerics_spec). */
static void binary(CG *g, const tir_Node *e, const char *op, int lane) {
  const tir_Add *b = (const tir_Add *)e;
  tir_DType t = tir_dtype_element(e->dtype);
  int narrow = is_narrow_int(t), uns = narrow && t.code == TIR_DT_UINT;
  if (narrow && !uns) {
    g->uses_numerics = 1;
    putf(g, "tir_sext%d(", t.bits);
  }
  put(g, uns ? "(((unsigned int)" : "(");
  operand(g, b->a, lane);
  putf(g, uns ? " %s (unsigned int)" : " %s ", op);
  operand(g, b->b, lane);
  if (uns) putf(g, ") & %s)", t.bits == 8 ? "0xffu" : "0xffffu");
  else put(g, narrow ? "))" : ")");
}

/* The binary node kinds TIR_Add .. TIR_Or (scalar, or lane `lane`). */
static void binop_expr(CG *g, const tir_Node *e, int lane) {
  static const char *sym[] = {"+", "-", "*", "/", "%", "/", "%", NULL, NULL, "==", "!=", "<", "<=", ">", ">=", "&&", "||"};
  const tir_Add *b = (const tir_Add *)e;
  tir_DType t = tir_dtype_element(e->dtype);
  switch (e->kind) {
    case TIR_FloorDiv:
    case TIR_FloorMod:
      if (tir_dtype_is_float(t)) {
        if (e->kind == TIR_FloorMod) {
          cg_fail(g, e, "floormod of floats is not supported");
          return;
        }
        /* floor of the quotient rounded to t (value.c) */
        int low = is_low_float(t);
        const char *close = low ? cast_open(g, t, TIR_FLOAT32) : "";
        put(g, t.bits == 64 ? "floor(" : "floorf(");
        if (low) put(g, is_half(t) ? "__half2float(" : "__bfloat162float(");
        binary(g, e, "/", lane);
        put(g, low ? "))" : ")");
        put(g, close);
        return;
      }
      if (lane < 0 && nonneg(g, b->a) && nonneg(g, b->b)) {
        binary(g, e, e->kind == TIR_FloorDiv ? "/" : "%", lane);
        return;
      }
      putf(g, "%s<%s>(", e->kind == TIR_FloorDiv ? "tir_floordiv" : "tir_floormod", ctype(g, t, e));
      operand(g, b->a, lane);
      put(g, ", ");
      operand(g, b->b, lane);
      put(g, ")");
      return;
    case TIR_Min:
    case TIR_Max: {
      /* floats: fminf/fmaxf, min.f16/bf16 (a NaN operand gives the other one) */
      int mn = e->kind == TIR_Min;
      const char *fn = mn ? "min" : "max";
      if (is_low_float(t)) fn = mn ? "__hmin" : "__hmax";
      else if (tir_dtype_is_float(t)) fn = t.bits == 64 ? (mn ? "fmin" : "fmax") : (mn ? "fminf" : "fmaxf");
      putf(g, "%s(", fn);
      operand(g, b->a, lane);
      put(g, ", ");
      operand(g, b->b, lane);
      put(g, ")");
      return;
    }
    default: binary(g, e, sym[e->kind - TIR_Add], lane); return;
  }
}

/* The conversion of a value of type `from` to `to` (element types): emits what goes before
 * the value and returns what goes after it.  Into floats: one rounding to nearest even (also
 * from int64 and float64 into float16/bfloat16, which through float would round twice); into
 * integers from floats: cvt.rzi (saturating); between integers: C's wrapping conversion. */
static const char *cast_open(CG *g, tir_DType to, tir_DType from) {
  to = tir_dtype_element(to);
  from = tir_dtype_element(from);
  if (tir_dtype_eq(to, from)) {
    put(g, "(");
    return ")";
  }
  int f_from = tir_dtype_is_float(from), low_from = is_low_float(from);
  const char *widen = is_half(from) ? "__half2float(" : "__bfloat162float(";
  if (is_half(from)) g->uses_fp16 = 1;
  if (is_bf16(from)) g->uses_bf16 = 1;
  if (is_low_float(to)) {
    int h = is_half(to);
    if (h) g->uses_fp16 = 1;
    else g->uses_bf16 = 1;
    if (low_from) {
      putf(g, "%s%s", h ? "__float2half_rn(" : "__float2bfloat16_rn(", widen);
      return "))";
    }
    if (f_from) {
      put(g, from.bits == 64 ? (h ? "__double2half(" : "__double2bfloat16(") : (h ? "__float2half_rn(" : "__float2bfloat16_rn("));
      return ")";
    }
    /* integers: one rounding (cvt.rn.f16.s32, cvt.rn.bf16.s64, ...), not through float */
    int uns = from.code == TIR_DT_UINT;
    const char *fn = from.bits == 64 ? (uns ? "ull" : "ll") : (uns ? "uint" : "int");
    const char *ct = from.bits == 64 ? (uns ? "unsigned long long" : "long long") : (uns ? "unsigned int" : "int");
    putf(g, "__%s2%s_rn((%s)(", fn, h ? "half" : "bfloat16", ct);
    return "))";
  }
  if (tir_dtype_is_float(to)) {
    putf(g, "((%s)", to.bits == 64 ? "double" : "float");
    put(g, low_from ? widen : "(");
    return "))";
  }
  if (f_from) {
    g->uses_numerics = 1;
    if (to.code == TIR_DT_BOOL) put(g, "tir_cvt_bool(");
    else putf(g, "tir_cvt_%s(", cvt_int_name(to));
    if (low_from) {
      put(g, widen);
      return "))";
    }
    return ")";
  }
  putf(g, "((%s)(", ctype(g, to, NULL));
  return "))";
}

static void cast_expr(CG *g, tir_DType to, const tir_Node *v) {
  const char *close = cast_open(g, to, v->dtype);
  expr(g, v);
  put(g, close);
}

/* shift_left / shift_right of type t: C shifts for constant amounts below 32 (64), else the
 * clamping helpers; on unsigned (left) or promoted signed operands, so no shift is undefined */
static void shift_expr(CG *g, const tir_Call *c, int left, tir_DType t) {
  int wide = t.bits == 64, uns = t.code == TIR_DT_UINT;
  int64_t k;
  const char *ut = wide ? "unsigned long long" : "unsigned int", *st = wide ? "long long" : "int";
  putf(g, "((%s)", ctype(g, t, &c->hdr));
  if (tir_is_const_int(c->args->items[1], &k) && k >= 0 && k < (wide ? 64 : 32)) {
    putf(g, "((%s)(", left || uns ? ut : st);
    expr(g, c->args->items[0]);
    putf(g, ") %s %lld))", left ? "<<" : ">>", (long long)k);
    return;
  }
  g->uses_numerics = 1;
  putf(g, "tir_%s%s((%s)(", left ? "shl" : uns ? "shru" : "shr", wide ? "64" : "32", left || uns ? ut : st);
  expr(g, c->args->items[0]);
  put(g, "), (unsigned long long)(");
  expr(g, c->args->items[1]);
  put(g, ")))");
}

/* A math builtin (tir_math_builtin): float16/bfloat16 compute in float32 and round the result
 * once, arguments are converted to the computing type first (as value.c does). */
static void math_call(CG *g, const tir_Call *c, const tir_MathBuiltin *m) {
  tir_DType t = tir_dtype_element(c->hdr.dtype);
  int n = c->args->size;
  if (m->kind == TIR_MATH_BITS) {
    if (strncmp(m->name, "shift_", 6) == 0) {
      shift_expr(g, c, m->name[6] == 'l', t);
      return;
    }
    putf(g, "((%s)(", ctype(g, t, &c->hdr));
    if (n == 1) put(g, "~");
    expr(g, c->args->items[0]);
    if (n == 2) {
      putf(g, " %s ", strcmp(m->name, "bitwise_and") == 0 ? "&" : strcmp(m->name, "bitwise_or") == 0 ? "|" : "^");
      expr(g, c->args->items[1]);
    }
    put(g, "))");
    return;
  }
  tir_DType at = tir_dtype_element(c->args->items[0]->dtype);
  if (m->kind == TIR_MATH_ABS && !tir_dtype_is_float(t)) {
    if (at.code == TIR_DT_UINT || at.code == TIR_DT_BOOL) {
      cast_expr(g, t, c->args->items[0]);
      return;
    }
    g->uses_numerics = 1;
    putf(g, "((%s)tir_iabs((%s)(", ctype(g, t, &c->hdr), at.bits == 64 ? "long long" : "int");
    expr(g, c->args->items[0]);
    put(g, ")))");
    return;
  }
  int pred = m->kind == TIR_MATH_PRED;
  tir_DType ct = (pred ? at.bits == 64 : t.bits == 64) ? TIR_FLOAT64 : TIR_FLOAT32;
  const char *f = ct.bits == 64 ? "" : "f";
  const char *close = ")";
  if (pred) putf(g, "%s(", m->cuda); /* isnan, isinf, isfinite: overloaded for float and double */
  else {
    if (is_low_float(t)) close = cast_open(g, t, ct);
    else put(g, "(");
    if (m->cuda) putf(g, "%s%s(", m->cuda, f);
    else putf(g, "1.0%s / (1.0%s + exp%s(-", f, f, f); /* sigmoid, each step in the computing type */
  }
  for (int i = 0; i < n; i++) {
    if (i) put(g, ", ");
    cast_expr(g, ct, c->args->items[i]);
  }
  put(g, m->cuda ? ")" : "))");
  if (!pred) put(g, close);
}

/* tir_print (include/tir/device_print.h): ((filter) ? (void)printf(fmt, (long long)v | (double)v ...)
** : (void)0).  CUDA's device printf; the format's integer conversions carry "ll". */
static void print_call(CG *g, const tir_Call *c) {
  int n = c->args->size - 1 - TIR_PRINT_FILTER_ARGS;
  static const char *coord[TIR_PRINT_FILTER_ARGS] = {"threadIdx.x", "threadIdx.y", "threadIdx.z",
                                                    "blockIdx.x",  "blockIdx.y",  "blockIdx.z"};
  if (n < 0 || c->args->items[0]->kind != TIR_StringImm) {
    cg_fail(g, &c->hdr, "tir_print needs a format string, 6 filter coordinates and the values");
    return;
  }
  put(g, "((");
  int any = 0;
  for (int d = 0; d < TIR_PRINT_FILTER_ARGS; d++) {
    const tir_Node *f = c->args->items[1 + d];
    int64_t v;
    if (tir_is_const_int(f, &v) && v < 0) continue; /* any */
    put(g, any ? " && " : "");
    put(g, "(int)");
    put(g, coord[d]);
    put(g, " == ");
    expr(g, f);
    any = 1;
  }
  if (!any) put(g, "true");
  put(g, ") ? (void)printf(\"");
  char *fmt = tir_print_cuda_format(((const tir_StringImm *)c->args->items[0])->value);
  for (const char *p = fmt; *p; p++) { /* as a C string literal */
    char esc[8];
    if (*p == '"' || *p == '\\') snprintf(esc, sizeof esc, "\\%c", *p);
    else if (*p == '\n') snprintf(esc, sizeof esc, "\\n");
    else if (*p == '\t') snprintf(esc, sizeof esc, "\\t");
    else if ((unsigned char)*p < 32 || (unsigned char)*p >= 127) snprintf(esc, sizeof esc, "\\%03o", (unsigned char)*p);
    else snprintf(esc, sizeof esc, "%c", *p);
    put(g, esc);
  }
  free(fmt);
  put(g, "\"");
  for (int k = 0; k < n; k++) {
    const tir_Node *v = c->args->items[1 + TIR_PRINT_FILTER_ARGS + k];
    put(g, tir_dtype_is_float(v->dtype) ? ", (double)(" : ", (long long)(");
    expr(g, v);
    put(g, ")");
  }
  put(g, ") : (void)0)");
}

static int find_xor(const tir_Node *n, void *p) {
  if (n->kind == TIR_Call && strcmp(((const tir_Call *)n)->op, "bitwise_xor") == 0) *(int *)p = 1;
  return 0;
}
/* Whether e holds an XOR: a swizzled tile's index (lower_buffer_swizzle), whose words nvcc cannot
 * prove adjacent and aligned by itself (it merges the words of a plain tile's chunk on its own) */
static int has_xor(const tir_Node *e) {
  int found = 0;
  tir_visit(e, find_xor, &found);
  return found;
}

/* Whether integer expression e is provably a multiple of k (a power of two): the analyzer, and
 * through the bit operations a swizzled index is made of (lower_buffer_swizzle: x ^ ((x >> s) &
 * mask), the mask's low bits zero), which the analyzer does not see into. */
static int multiple_of(CG *g, const tir_Node *e, int64_t k) {
  int64_t v;
  if (k <= 1) return 1;
  if (tir_is_const_int(e, &v)) return v % k == 0;
  if (e->kind == TIR_Add || e->kind == TIR_Sub) return multiple_of(g, ((const tir_Add *)e)->a, k) && multiple_of(g, ((const tir_Add *)e)->b, k);
  if (e->kind == TIR_Cast && tir_dtype_is_int(((const tir_Cast *)e)->value->dtype)) return multiple_of(g, ((const tir_Cast *)e)->value, k);
  if (e->kind == TIR_Call) {
    const tir_Call *c = (const tir_Call *)e;
    if (c->args->size == 2 && (strcmp(c->op, "bitwise_xor") == 0 || strcmp(c->op, "bitwise_or") == 0))
      return multiple_of(g, c->args->items[0], k) && multiple_of(g, c->args->items[1], k);
    if (c->args->size == 2 && strcmp(c->op, "bitwise_and") == 0)
      return multiple_of(g, c->args->items[0], k) || multiple_of(g, c->args->items[1], k);
  }
  tir_Node *m = tir_floormod(R((tir_Node *)e), tir_int_imm(tir_dtype_element(e->dtype), k));
  tir_Node *zero = tir_int_imm(tir_dtype_element(e->dtype), 0);
  int ok = tir_can_prove_equal(g->an, m, zero);
  tir_release(m);
  tir_release(zero);
  return ok;
}

static void call_expr(CG *g, const tir_Call *c) {
  const char *op = c->op;
  int n = c->args->size;
  tir_DType t = c->hdr.dtype;
  if (tir_tma_is_descriptor(&c->hdr)) {
    /* the kernel's tensor-map parameter (split_host_device collected the distinct calls) */
    for (int i = 0; g->kernel && i < g->kernel->tma_descs->size; i++)
      if (tir_structural_equal(g->kernel->tma_descs->items[i], &c->hdr)) {
        putf(g, "(&tir_tmap_%d)", i);
        return;
      }
    cg_fail(g, &c->hdr, "tma_descriptor outside the kernel's tensor-map parameters");
    return;
  }
  if (strcmp(op, "tir_print") == 0) {
    print_call(g, c);
    return;
  }
  if (strcmp(op, "if_then_else") == 0 && n == 3) {
    put(g, "(");
    expr(g, c->args->items[0]);
    put(g, " ? ");
    expr(g, c->args->items[1]);
    put(g, " : ");
    expr(g, c->args->items[2]);
    put(g, ")");
    return;
  }
  if ((strcmp(op, "likely") == 0 || strcmp(op, "tir.likely") == 0) && n == 1) {
    expr(g, c->args->items[0]);
    return;
  }
  if (strcmp(op, "wgmma_desc") == 0 || strcmp(op, "wgmma_operand") == 0) {
    int64_t lbo, sbo, sw;
    const tir_BufferLoad *l = n == 4 ? addr_load(c->args->items[0]) : NULL;
    if (op[6] == 'o') {
      cg_fail(g, &c->hdr, "wgmma_operand must be lowered to wgmma_desc before codegen (lower_wgmma_descriptor)");
      return;
    }
    if (!l || !tir_scope_is_shared(l->buffer->scope) || !tir_is_const_int(c->args->items[1], &lbo) ||
        !tir_is_const_int(c->args->items[2], &sbo) || !tir_is_const_int(c->args->items[3], &sw) ||
        (sw != 0 && sw != 32 && sw != 64 && sw != 128)) {
      cg_fail(g, &c->hdr, "wgmma_desc takes (address_of(shared[...]), constant LBO bytes, constant SBO bytes, swizzle 0 | 32 | 64 | 128)");
      return;
    }
    g->uses_wgmma_desc = 1;
    put(g, "tir_wgmma_desc(");
    ptr_ref(g, c->args->items[0]);
    putf(g, ", %lldu, %lldu, %du)", (long long)lbo, (long long)sbo, sw == 128 ? 1 : sw == 64 ? 2 : sw == 32 ? 3 : 0);
    return;
  }
  if (strcmp(op, "address_of") == 0 && n == 1) {
    const tir_BufferLoad *l = addr_load(&c->hdr);
    if (l && tir_scope_is_fragment(l->buffer->scope)) {
      cg_fail(g, &c->hdr, "the address of a %s buffer (%s) has no meaning outside the tensor-core builtins", l->buffer->scope,
              l->buffer->name);
      return;
    }
    if (l) {
      ptr_ref(g, &c->hdr);
      return;
    }
  }
  int shfl = tir_builtin_shfl_mode(op);
  if (shfl >= 0) {
    /* PTX ISA 9.7.8.6 shfl.sync through CUDA's __shfl_*_sync(mask, value, lane/delta/lanemask, width) */
    int64_t w;
    if (n != 4 || !tir_is_const_int(c->args->items[3], &w) || w < 1 || w > 32 || (w & (w - 1)) ||
        !tir_builtin_shfl_type_ok(t) || !tir_dtype_eq(t, c->args->items[1]->dtype)) {
      cg_fail(g, &c->hdr, "%s takes (mask, value, lane, width) with a constant power-of-two width <= 32 and a 32- or 64-bit "
              "int/float value of the call's dtype", op);
      return;
    }
    putf(g, "%s((unsigned)(", tir_builtin_shfl_cuda(shfl));
    expr(g, c->args->items[0]);
    put(g, "), ");
    expr(g, c->args->items[1]);
    put(g, shfl == TIR_SHFL_UP || shfl == TIR_SHFL_DOWN ? ", (unsigned)(" : ", (int)(");
    expr(g, c->args->items[2]);
    putf(g, "), %lld)", (long long)w);
    return;
  }
  if (tir_builtin_info(op) && (tir_builtin_info(op)->id == TIR_BI_TIR_GRID_ARRIVE_LAST || tir_builtin_info(op)->id == TIR_BI_TIR_GRID_WAIT)) {
    int wait = tir_builtin_info(op)->id == TIR_BI_TIR_GRID_WAIT;
    const tir_BufferLoad *l = addr_load(c->args->items[0]);
    if (!l || !tir_scope_is_global(l->buffer->scope) || !tir_dtype_eq(l->buffer->hdr.dtype, TIR_INT32)) {
      cg_fail(g, &c->hdr, "%s takes (address_of(counter[i]), %s) with an int32 counter in global memory", op, wait ? "value" : "count");
      return;
    }
    g->uses_grid_arrive = 1;
    putf(g, "%s((int*)", op);
    ptr_ref(g, c->args->items[0]);
    put(g, ", (int)(");
    expr(g, c->args->items[1]);
    put(g, "))");
    return;
  }
  if (strcmp(op, "ptx_cluster_ctarank") == 0 && n == 0) {
    if (g->sm && g->sm < 90) {
      cg_fail(g, &c->hdr, "ptx_cluster_ctarank reads %%cluster_ctarank (thread-block clusters, sm_90+), but the target is sm_%d", g->sm);
      return;
    }
    g->uses_tma = 1;
    put(g, "tir_cluster_ctarank()");
    return;
  }
  if (strcmp(op, "tir_lane_id") == 0 && n == 0) {
    g->uses_lane_id = 1;
    put(g, "tir_lane_id()");
    return;
  }
  /* (lower_thread_binding made it threadIdx.x % 128 where threadIdx.x is whole warpgroups) */
  if (tir_builtin_info(op) && tir_builtin_info(op)->id == TIR_BI_TIR_WARPGROUP_LANE && n == 0) {
    put(g, "((int)(threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z)) & 127)");
    return;
  }
  if (strcmp(op, "call_extern") == 0 || strcmp(op, "call_pure_extern") == 0) {
    extern_call(g, c);
    return;
  }
  if (strcmp(op, "reinterpret") == 0) {
    char err[256];
    if (tir_reinterpret_check(c, err, sizeof err)) {
      cg_fail(g, &c->hdr, "%s", err);
      return;
    }
    const tir_Node *v = c->args->items[0];
    const tir_BufferLoad *l = v->kind == TIR_BufferLoad ? (const tir_BufferLoad *)v : NULL;
    const tir_Node *ix = l && l->indices->size == 1 ? l->indices->items[0] : NULL;
    if (v->dtype.lanes == 1) {
      putf(g, "((%s)(", ctype(g, t, &c->hdr));
      expr(g, v);
      put(g, "))");
      return;
    }
    tir_Node *base = tir_unit_ramp_base(ix);
    if (!base) {
      cg_fail(g, &c->hdr, "reinterpret of a vector needs a contiguous load (A[T.Ramp(i, 1, lanes)]) to become one %d-bit load",
              t.bits);
      return;
    }
    /* one load of the whole word: the schedule keeps it aligned (tir.simulate checks) */
    tir_Node *sb = tir_simplify_take(g->an, base);
    /* a 32-bit word at x + c of a 16-byte chunk of a swizzled tile (x provably a multiple of 16
     * bytes): word c / 4 of the chunk's 16-byte load, `(*(int4*)(buf + x)).y` -- the words of one
     * chunk (the row sums' dp4a operands) then share one load that nvcc keeps (LDS.128;
     * lower_buffer_swizzle keeps an in-chunk offset outside the XOR, so the chunk's words share
     * its base) instead of four 32-bit loads */
    int esz = tir_dtype_bytes(tir_dtype_element(v->dtype));
    const tir_Node *cx = sb;
    int64_t off = 0;
    if (sb->kind == TIR_Add && tir_is_const_int(((const tir_Add *)sb)->b, &off)) cx = ((const tir_Add *)sb)->a;
    else off = 0;
    if (t.bits == 32 && 16 % esz == 0 && off >= 0 && (off * esz) % 4 == 0 && has_xor(cx)) {
      if (multiple_of(g, cx, 16 / esz)) {
        int64_t word = (off * esz % 16) / 4, chunk = off - off % (16 / esz); /* elements */
        tir_Node *cb = chunk ? tir_add(R((tir_Node *)cx), tir_int_imm(tir_dtype_element(cx->dtype), chunk)) : R((tir_Node *)cx);
        putf(g, "((%s)(*(int4*)(%s + ", ctype(g, t, &c->hdr), name_of(g, &l->buffer->data->hdr, l->buffer->name));
        expr(g, cb);
        putf(g, ")).%c)", "xyzw"[word]);
        tir_release(cb);
        tir_release(sb);
        return;
      }
    }
    putf(g, "(*(%s*)(%s + ", ctype(g, t, &c->hdr), name_of(g, &l->buffer->data->hdr, l->buffer->name));
    expr(g, sb);
    put(g, "))");
    tir_release(sb);
    return;
  }
  if ((strcmp(op, "ptx_dp4a") == 0 && n == 5) || (strcmp(op, "ptx_prmt") == 0 && n == 3)) {
    int dp = op[4] == 'd';
    if (dp) {
      int as = tir_dp4a_type_signed(c->args->items[3]), bs = tir_dp4a_type_signed(c->args->items[4]);
      if (as < 0 || bs < 0) {
        cg_fail(g, &c->hdr, "ptx_dp4a: the operand types (arguments 4 and 5) must be \"s32\" or \"u32\"");
        return;
      }
      /* PTX ISA: dp4a requires sm_61 or higher */
      if (g->sm && g->sm < 61) {
        cg_fail(g, &c->hdr, "ptx_dp4a: dp4a needs sm_61 or newer, but the target is sm_%d", g->sm);
        return;
      }
      g->uses_dp4a |= 1u << (as * 2 + bs);
      putf(g, "tir_dp4a_%s_%s(", as ? "s32" : "u32", bs ? "s32" : "u32");
    } else {
      /* a constant selector without sign-replicating nibbles is CUDA's __byte_perm (which the
       * compiler sees through and reuses), else the inline-asm helper */
      int64_t sel;
      if (tir_is_const_int(c->args->items[2], &sel) && (sel & 0x8888) == 0 && sel >= 0 && sel <= 0xffff) {
        put(g, "__byte_perm(");
      } else {
        g->uses_prmt = 1;
        put(g, "tir_prmt(");
      }
    }
    for (int i = 0; i < 3; i++) {
      if (i) put(g, ", ");
      put(g, "(int)(");
      expr(g, c->args->items[i]);
      put(g, ")");
    }
    put(g, ")");
    return;
  }
  const tir_MathBuiltin *m = tir_math_builtin(op);
  if (m && m->arity == n) {
    math_call(g, c, m);
    return;
  }
  cg_fail(g, &c->hdr, "the CUDA codegen does not know builtin '%s' with %d argument(s)", op, n);
}

static void expr(CG *g, const tir_Node *e) {
  if (g->failed) return;
  tir_DType t = e->dtype;
  if (t.lanes > 1 && g->lane_plus1) { /* an operand of a lane-wise math call (lane_expr) */
    lane_expr(g, e, g->lane_plus1 - 1);
    return;
  }
  switch (e->kind) {
    case TIR_IntImm: {
      int64_t v = ((const tir_IntImm *)e)->value;
      if (t.code == TIR_DT_BOOL) put(g, v ? "true" : "false");
      else if (t.bits == 64 && t.code == TIR_DT_INT && v == INT64_MIN) put(g, "(-9223372036854775807LL - 1)");
      else if (t.bits == 64) putf(g, t.code == TIR_DT_UINT ? "%lluULL" : "(%lldLL)", (long long)v);
      else if (t.code == TIR_DT_UINT) putf(g, "%lluU", (unsigned long long)v);
      else if (v == INT32_MIN) put(g, "(-2147483647 - 1)");
      else if (v < 0) putf(g, "(%lld)", (long long)v);
      else putf(g, "%lld", (long long)v);
      return;
    }
    case TIR_FloatImm: float_lit(g, ((const tir_FloatImm *)e)->value, t); return;
    case TIR_Var: put(g, name_of(g, e, ((const tir_Var *)e)->name)); return;
    case TIR_Add: case TIR_Sub: case TIR_Mul: case TIR_Div: case TIR_Mod: case TIR_FloorDiv: case TIR_FloorMod:
    case TIR_Min: case TIR_Max: case TIR_EQ: case TIR_NE: case TIR_LT: case TIR_LE: case TIR_GT: case TIR_GE:
    case TIR_And: case TIR_Or:
      binop_expr(g, e, -1);
      return;
    case TIR_Not:
      put(g, "(!");
      expr(g, ((const tir_Not *)e)->a);
      put(g, ")");
      return;
    case TIR_Cast: cast_expr(g, t, ((const tir_Cast *)e)->value); return;
    case TIR_Select: {
      const tir_Select *s = (const tir_Select *)e;
      put(g, "(");
      expr(g, s->cond);
      put(g, " ? ");
      expr(g, s->true_value);
      put(g, " : ");
      expr(g, s->false_value);
      put(g, ")");
      return;
    }
    case TIR_BufferLoad: {
      const tir_BufferLoad *l = (const tir_BufferLoad *)e;
      if (l->indices->size != 1) {
        cg_fail(g, e, "buffer %s is not flattened", l->buffer->name);
        return;
      }
      putf(g, "%s[", name_of(g, &l->buffer->data->hdr, l->buffer->name));
      expr(g, l->indices->items[0]);
      put(g, "]");
      return;
    }
    case TIR_Call: call_expr(g, (const tir_Call *)e); return;
    case TIR_Let: cg_fail(g, e, "let expressions are not emitted by this codegen"); return;
    default: cg_fail(g, e, "the CUDA codegen cannot emit a %s expression", tir_kind_name(e->kind)); return;
  }
}

/* Lane `lane` of a vector expression (ramps, broadcasts, vector loads, lane-wise ops). */
static void lane_expr(CG *g, const tir_Node *e, int lane) {
  if (g->failed) return;
  if (e->dtype.lanes <= 1) {
    expr(g, e);
    return;
  }
  switch (e->kind) {
    case TIR_Ramp: {
      const tir_Ramp *r = (const tir_Ramp *)e;
      put(g, "(");
      expr(g, r->base);
      put(g, " + ");
      if (lane) {
        put(g, "(");
        expr(g, r->stride);
        putf(g, " * %d)", lane);
      } else {
        put(g, "0");
      }
      put(g, ")");
      return;
    }
    case TIR_Broadcast: expr(g, ((const tir_Broadcast *)e)->value); return;
    case TIR_BufferLoad: {
      const tir_BufferLoad *l = (const tir_BufferLoad *)e;
      for (int h = 0; h < g->n_hoist; h++)
        if (g->hoist[h].load == e) {
          putf(g, "ld%d_[%d]", g->hoist[h].id, lane);
          return;
        }
      putf(g, "%s[", name_of(g, &l->buffer->data->hdr, l->buffer->name));
      operand(g, l->indices->items[0], lane);
      put(g, "]");
      return;
    }
    case TIR_Cast: {
      const char *close = cast_open(g, e->dtype, ((const tir_Cast *)e)->value->dtype);
      lane_expr(g, ((const tir_Cast *)e)->value, lane);
      put(g, close);
      return;
    }
    case TIR_Call: {
      const tir_Call *k = (const tir_Call *)e;
      const tir_MathBuiltin *m = tir_math_builtin(k->op);
      if (m && m->arity == k->args->size) {
        /* a lane-wise math call (vectorize_loop): the scalar call on lane `lane` of its operands */
        int saved = g->lane_plus1;
        g->lane_plus1 = lane + 1;
        math_call(g, k, m);
        g->lane_plus1 = saved;
        return;
      }
      if (strcmp(k->op, "if_then_else") != 0 || k->args->size != 3) break;
      put(g, "(");
      lane_expr(g, k->args->items[0], lane);
      put(g, " ? ");
      lane_expr(g, k->args->items[1], lane);
      put(g, " : ");
      lane_expr(g, k->args->items[2], lane);
      put(g, ")");
      return;
    }
    case TIR_Select: {
      const tir_Select *s = (const tir_Select *)e;
      put(g, "(");
      lane_expr(g, s->cond, lane);
      put(g, " ? ");
      lane_expr(g, s->true_value, lane);
      put(g, " : ");
      lane_expr(g, s->false_value, lane);
      put(g, ")");
      return;
    }
    default:
      if (e->kind >= TIR_Add && e->kind <= TIR_Or) {
        binop_expr(g, e, lane);
        return;
      }
      break;
  }
  cg_fail(g, e, "the CUDA codegen cannot emit a vector %s expression", tir_kind_name(e->kind));
}

/* A contiguous vector load's base index when v is one (A[Ramp(b, 1, L)]), else NULL. */
static const tir_Node *contiguous_load(const tir_Node *v, const tir_BufferLoad **l) {
  if (v->kind != TIR_BufferLoad) return NULL;
  const tir_Node *ix = ((const tir_BufferLoad *)v)->indices->items[0];
  if (ix->kind != TIR_Ramp || !tir_is_one(((const tir_Ramp *)ix)->stride)) return NULL;
  *l = (const tir_BufferLoad *)v;
  return ((const tir_Ramp *)ix)->base;
}

/* The unsigned type moving `bytes` bytes at once, or NULL. */
static const char *raw_type(int bytes) {
  switch (bytes) {
    case 2: return "unsigned short";
    case 4: return "unsigned int"; /* (no "uint": NVRTC has no sys/types.h) */
    case 8: return "uint2";
    case 16: return "uint4";
    default: return NULL;
  }
}

typedef struct {
  const tir_Node *found[8];
  int n;
} LoadSet;

static int collect_vector_loads(const tir_Node *n, void *p) {
  LoadSet *ls = p;
  if (n->kind != TIR_BufferLoad || n->dtype.lanes <= 1 || ls->n == 8) return 0;
  const tir_Node *ix = ((const tir_BufferLoad *)n)->indices->items[0];
  if (ix->kind != TIR_Ramp || !tir_is_one(((const tir_Ramp *)ix)->stride)) return 0;
  for (int i = 0; i < ls->n; i++)
    if (ls->found[i] == n) return 0;
  ls->found[ls->n++] = n;
  return 0;
}

/* The contiguous vector loads of a packed store's value v (an epilogue reading 4 staged int32
 * accumulators and 4 per-column scales, ...): each read into a register array ld<id>_[] by 16-,
 * 8- or 4-byte loads when its first element is provably a multiple of the chunk (the analyzer
 * knows the thread and loop ranges), instead of one 4-byte load per lane (4 loads of a thread
 * 16 bytes apart: 4-way shared-memory bank conflicts).  lane_expr then reads the registers.
 * (A swizzled buffer's indices are physical by now: lower_buffer_swizzle.) */
static void hoist_loads(CG *g, const tir_Node *v, const tir_Node *where) {
  LoadSet ls = {{0}, 0};
  tir_visit(v, collect_vector_loads, &ls);
  g->n_hoist = 0;
  for (int i = 0; i < ls.n; i++) {
    const tir_BufferLoad *l = (const tir_BufferLoad *)ls.found[i];
    const tir_Ramp *ix = (const tir_Ramp *)l->indices->items[0];
    tir_DType et = tir_dtype_element(l->hdr.dtype);
    int lanes = l->hdr.dtype.lanes, esize = tir_dtype_bytes(et), total = lanes * esize;
    int chunk = 0;
    for (int c = 16; c >= 4 && !chunk; c /= 2) {
      if (total % c || c % esize) continue;
      tir_Node *m = tir_floormod(R(ix->base), tir_int_imm(tir_dtype_element(ix->base->dtype), c / esize));
      tir_Node *zero = tir_int_imm(tir_dtype_element(ix->base->dtype), 0);
      if (tir_can_prove_equal(g->an, m, zero)) chunk = c;
      tir_release(m);
      tir_release(zero);
    }
    if (!chunk) continue;
    int id = g->hoist_ids++;
    const char *raw = raw_type(chunk), *buf = name_of(g, &l->buffer->data->hdr, l->buffer->name);
    line(g);
    putf(g, "__align__(16) %s ld%d_[%d];\n", ctype(g, et, where), id, lanes);
    for (int c = 0; c < total / chunk; c++) {
      line(g);
      putf(g, "*(%s*)(ld%d_ + %d) = *(%s*)(%s + ", raw, id, c * chunk / esize, raw, buf);
      lane_expr(g, &ix->hdr, c * chunk / esize);
      put(g, ");\n");
    }
    g->hoist[g->n_hoist].load = &l->hdr;
    g->hoist[g->n_hoist].id = id;
    g->n_hoist++;
  }
}

/* ---- async copies (docs/BUILTINS.md; PTX ISA 9.7.9.25 cp.async, cp.async.commit_group,
 * cp.async.wait_group) ----
 * ptx_cp_async(address_of(shared[i]), address_of(global[j]), bytes [, src_bytes]) calls the
 * helper tir_cp_async<bytes>: inline PTX, .cg for 16 bytes (L2 only), .ca for 4 and 8; the
 * shared address is a 32-bit shared-window address (smem_addr_ref); src_bytes < bytes zero-fills.
 * Before sm_80 the helpers copy synchronously (and commit/wait do nothing), which has the
 * same result.  The wait's group count must be a constant (an immediate); when it is not
 * (an epilogue loop left rolled), waiting for all groups (0) is the safe choice. */
static const char *cp_async_helpers =
    "\n// cp.async (PTX ISA 9.7.9.25); sm_80+, else plain copies\n"
    "template <int N> __device__ __forceinline__ void tir_cp_async(unsigned s, const void *gmem) {\n"
    "#if __CUDA_ARCH__ >= 800\n"
    "  if (N == 16) asm volatile(\"cp.async.cg.shared.global [%0], [%1], 16;\\n\" :: \"r\"(s), \"l\"(gmem) : \"memory\");\n"
    "  else asm volatile(\"cp.async.ca.shared.global [%0], [%1], %2;\\n\" :: \"r\"(s), \"l\"(gmem), \"n\"(N) : \"memory\");\n"
    "#else\n"
    "  char *smem = (char *)__cvta_shared_to_generic(s);\n"
    "  for (int i = 0; i < N; i++) smem[i] = ((const char *)gmem)[i];\n"
    "#endif\n"
    "}\n"
    "template <int N> __device__ __forceinline__ void tir_cp_async_zfill(unsigned s, const void *gmem, int src_bytes) {\n"
    "#if __CUDA_ARCH__ >= 800\n"
    "  if (N == 16) asm volatile(\"cp.async.cg.shared.global [%0], [%1], 16, %2;\\n\" :: \"r\"(s), \"l\"(gmem), \"r\"(src_bytes) : \"memory\");\n"
    "  else asm volatile(\"cp.async.ca.shared.global [%0], [%1], %2, %3;\\n\" :: \"r\"(s), \"l\"(gmem), \"n\"(N), \"r\"(src_bytes) : \"memory\");\n"
    "#else\n"
    "  char *smem = (char *)__cvta_shared_to_generic(s);\n"
    "  for (int i = 0; i < N; i++) smem[i] = i < src_bytes ? ((const char *)gmem)[i] : 0;\n"
    "#endif\n"
    "}\n"
    "__device__ __forceinline__ void tir_cp_async_commit() {\n"
    "#if __CUDA_ARCH__ >= 800\n"
    "  asm volatile(\"cp.async.commit_group;\\n\" ::: \"memory\");\n"
    "#endif\n"
    "}\n"
    "template <int N> __device__ __forceinline__ void tir_cp_async_wait() {\n"
    "#if __CUDA_ARCH__ >= 800\n"
    "  asm volatile(\"cp.async.wait_group %0;\\n\" :: \"n\"(N) : \"memory\");\n"
    "#endif\n"
    "}\n";

/* Statement-level cp.async builtins; returns 1 when `c` was one. */

/* wgmma reads shared memory through the async proxy: generic-proxy writes before it (cp.async
 * copies, plain stores of an unpipelined copy) are ordered by each writing thread's
 * fence.proxy.async before the barrier that precedes the wgmma (PTX ISA, Memory Consistency
 * Model, proxies).  The codegen emits it after every cp.async wait of a wgmma kernel and before
 * every barrier that follows a plain store to shared memory (textually, loop bodies counted as
 * preceded by their own stores). */
static void proxy_fence(CG *g) {
  line(g);
  put(g, "asm volatile(\"fence.proxy.async.shared::cta;\\n\" ::: \"memory\");\n");
  g->smem_unfenced = 0;
}
static void barrier(CG *g) {
  if (g->kernel_wgmma && g->smem_unfenced) proxy_fence(g);
  line(g);
  put(g, "__syncthreads();\n");
}
static int shared_store_fn(const tir_Node *n, void *p) {
  if (n->kind == TIR_BufferStore && tir_scope_is_shared(((const tir_BufferStore *)n)->buffer->scope)) *(int *)p = 1;
  return 0;
}

static int async_copy_stmt(CG *g, const tir_Call *c) {
  const char *op = c->op;
  int n = c->args->size;
  if (strcmp(op, "ptx_cp_async") == 0) {
    int64_t bytes;
    if ((n != 3 && n != 4) || !tir_is_const_int(c->args->items[2], &bytes) || (bytes != 4 && bytes != 8 && bytes != 16)) {
      cg_fail(g, &c->hdr, "ptx_cp_async takes (address_of(shared), address_of(global), 4 | 8 | 16 [, src_bytes])");
      return 1;
    }
    const tir_BufferLoad *d = addr_load(c->args->items[0]), *sl = addr_load(c->args->items[1]);
    if (!d || !sl || !tir_scope_is_shared(d->buffer->scope) || !tir_scope_is_global(sl->buffer->scope)) {
      cg_fail(g, &c->hdr, "ptx_cp_async copies from a global buffer to a shared one (address_of operands)");
      return 1;
    }
    g->uses_cp_async = 1;
    line(g);
    putf(g, n == 4 ? "tir_cp_async_zfill<%lld>(" : "tir_cp_async<%lld>(", (long long)bytes);
    smem_addr_ref(g, c->args->items[0]);
    put(g, ", ");
    ptr_ref(g, c->args->items[1]);
    if (n == 4) {
      put(g, ", ");
      expr(g, c->args->items[3]);
    }
    put(g, ");\n");
    return 1;
  }
  if (strcmp(op, "ptx_commit_group") == 0) {
    g->uses_cp_async = 1;
    line(g);
    put(g, "tir_cp_async_commit();\n");
    return 1;
  }
  if (strcmp(op, "ptx_wait_group") == 0) {
    int64_t k = 0;
    if (n != 1 || !tir_as_const_int(g->an, c->args->items[0], &k) || k < 0) k = 0;
    g->uses_cp_async = 1;
    line(g);
    putf(g, "tir_cp_async_wait<%lld>();\n", (long long)k);
    if (g->kernel_wgmma) {
      /* cp.async writes through the generic proxy, wgmma reads shared memory through the async
       * proxy: each thread orders its landed copies before the barrier that follows (PTX ISA,
       * Memory Consistency Model, proxies; fence.proxy.async) */
      proxy_fence(g);
    }
    return 1;
  }
  return 0;
}


/* ---- TMA and mbarriers (include/tir/tma.h; PTX ISA 9.7.9.25 cp.async.bulk.tensor,
 * cp.async.bulk.commit_group / wait_group; 9.7.13.15 mbarrier; fence.proxy.async; setmaxnreg).
 * sm_90+; setmaxnreg needs sm_90a.  Tensor maps are `const __grid_constant__` kernel parameters
 * (their generic address is what cp.async.bulk.tensor takes), coordinates go innermost first.
 * The wait loops on try_wait.parity (a label inside a { } scope is local to it, so the helper
 * can be inlined many times). */
static const char *tma_helpers =
    "\n// TMA and mbarriers (PTX ISA 9.7.9.25 cp.async.bulk.tensor, 9.7.13.15 mbarrier); sm_90\n"
    "struct __align__(64) tir_CUtensorMap { unsigned long long opaque[16]; };\n"
    "__device__ __forceinline__ void tir_mbarrier_init(void *bar, unsigned count) {\n"
    "  asm volatile(\"mbarrier.init.shared::cta.b64 [%0], %1;\" :: \"r\"(tir_smem_addr(bar)), \"r\"(count) : \"memory\");\n}\n"
    "__device__ __forceinline__ void tir_mbarrier_arrive(void *bar) {\n"
    "  asm volatile(\"mbarrier.arrive.shared::cta.b64 _, [%0];\" :: \"r\"(tir_smem_addr(bar)) : \"memory\");\n}\n"
    "__device__ __forceinline__ void tir_cp_async_mbarrier_arrive_noinc(void *bar) {\n"
    "  asm volatile(\"cp.async.mbarrier.arrive.noinc.shared::cta.b64 [%0];\" :: \"r\"(tir_smem_addr(bar)) : \"memory\");\n}\n"
    "__device__ __forceinline__ void tir_mbarrier_arrive_expect_tx(void *bar, unsigned tx) {\n"
    "  asm volatile(\"mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\" :: \"r\"(tir_smem_addr(bar)), \"r\"(tx) : \"memory\");\n}\n"
    "__device__ __forceinline__ void tir_mbarrier_wait(void *bar, unsigned parity) {\n"
    "  asm volatile(\"{\\n.reg .pred p;\\nTIR_WAIT:\\nmbarrier.try_wait.parity.shared::cta.b64 p, [%0], %1;\\n@!p bra TIR_WAIT;\\n}\\n\"\n"
    "               :: \"r\"(tir_smem_addr(bar)), \"r\"(parity) : \"memory\");\n}\n"
    "// thread-block clusters (PTX ISA: mapa, mbarrier.arrive .release.{cluster,cta}, barrier.cluster, fence.mbarrier_init,\n"
    "// %cluster_ctarank).  A .release.cluster arrival is a cluster-scope fence (MEMBAR.GPU in SASS); .release.cta is\n"
    "// for an arriving thread whose accesses to the guarded data are complete already (wgmma reads after wait_group)\n"
    "__device__ __forceinline__ void tir_mbarrier_arrive_cluster(void *bar, unsigned rank) {\n"
    "  asm volatile(\"{\\n.reg .b32 ra;\\nmapa.shared::cluster.u32 ra, %0, %1;\\nmbarrier.arrive.release.cluster.shared::cluster.b64 _, [ra];\\n}\\n\"\n"
    "               :: \"r\"(tir_smem_addr(bar)), \"r\"(rank) : \"memory\");\n}\n"
    "__device__ __forceinline__ void tir_mbarrier_arrive_cluster_cta(void *bar, unsigned rank) {\n"
    "  asm volatile(\"{\\n.reg .b32 ra;\\nmapa.shared::cluster.u32 ra, %0, %1;\\nmbarrier.arrive.release.cta.shared::cluster.b64 _, [ra];\\n}\\n\"\n"
    "               :: \"r\"(tir_smem_addr(bar)), \"r\"(rank) : \"memory\");\n}\n"
    "__device__ __forceinline__ void tir_fence_mbarrier_init() { asm volatile(\"fence.mbarrier_init.release.cluster;\" ::: \"memory\"); }\n"
    "__device__ __forceinline__ void tir_cluster_sync() {\n"
    "  asm volatile(\"barrier.cluster.arrive.release;\\nbarrier.cluster.wait.acquire;\" ::: \"memory\");\n}\n"
    "__device__ __forceinline__ unsigned tir_cluster_ctarank() {\n"
    "  unsigned r;\n  asm(\"mov.u32 %0, %%cluster_ctarank;\" : \"=r\"(r));\n  return r;\n}\n"
    "__device__ __forceinline__ void tir_fence_proxy_async() { asm volatile(\"fence.proxy.async.shared::cta;\" ::: \"memory\"); }\n"
    "__device__ __forceinline__ void tir_bulk_commit() { asm volatile(\"cp.async.bulk.commit_group;\" ::: \"memory\"); }\n"
    "template <int N> __device__ __forceinline__ void tir_bulk_wait_read() {\n"
    "  asm volatile(\"cp.async.bulk.wait_group.read %0;\" :: \"n\"(N) : \"memory\");\n}\n";

static void tma_rank_helpers(tir_StrBuf *sb, int r) {
  static const char *cs[] = {"c0", "c1", "c2", "c3", "c4"};
  tir_sb_printf(sb, "__device__ __forceinline__ void tir_tma_load_%dd(void *dst, const void *tmap, void *bar", r);
  for (int i = 0; i < r; i++) tir_sb_printf(sb, ", int %s", cs[i]);
  tir_sb_printf(sb, ") {\n  asm volatile(\"cp.async.bulk.tensor.%dd.shared::cluster.global.mbarrier::complete_tx::bytes [%%0], [%%1, {", r);
  for (int i = 0; i < r; i++) tir_sb_printf(sb, "%s%%%d", i ? ", " : "", 3 + i);
  tir_sb_puts(sb, "}], [%2];\"\n               :: \"r\"(tir_smem_addr(dst)), \"l\"(tmap), \"r\"(tir_smem_addr(bar))");
  for (int i = 0; i < r; i++) tir_sb_printf(sb, ", \"r\"(%s)", cs[i]);
  tir_sb_puts(sb, " : \"memory\");\n}\n");
  tir_sb_printf(sb, "__device__ __forceinline__ void tir_tma_load_mc_%dd(void *dst, const void *tmap, void *bar, unsigned short mask", r);
  for (int i = 0; i < r; i++) tir_sb_printf(sb, ", int %s", cs[i]);
  tir_sb_printf(sb, ") {\n  asm volatile(\"cp.async.bulk.tensor.%dd.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster "
                "[%%0], [%%1, {", r);
  for (int i = 0; i < r; i++) tir_sb_printf(sb, "%s%%%d", i ? ", " : "", 4 + i);
  tir_sb_puts(sb, "}], [%2], %3;\"\n               :: \"r\"(tir_smem_addr(dst)), \"l\"(tmap), \"r\"(tir_smem_addr(bar)), \"h\"(mask)");
  for (int i = 0; i < r; i++) tir_sb_printf(sb, ", \"r\"(%s)", cs[i]);
  tir_sb_puts(sb, " : \"memory\");\n}\n");
  tir_sb_printf(sb, "__device__ __forceinline__ void tir_tma_store_%dd(const void *tmap, const void *src", r);
  for (int i = 0; i < r; i++) tir_sb_printf(sb, ", int %s", cs[i]);
  tir_sb_printf(sb, ") {\n  asm volatile(\"cp.async.bulk.tensor.%dd.global.shared::cta.bulk_group [%%0, {", r);
  for (int i = 0; i < r; i++) tir_sb_printf(sb, "%s%%%d", i ? ", " : "", 2 + i);
  tir_sb_puts(sb, "}], [%1];\"\n               :: \"l\"(tmap), \"r\"(tir_smem_addr(src))");
  for (int i = 0; i < r; i++) tir_sb_printf(sb, ", \"r\"(%s)", cs[i]);
  tir_sb_puts(sb, " : \"memory\");\n}\n");
}

/* The rank-r (3..5) im2col copy (PTX ISA 9.7.9.25 cp.async.bulk.tensor .im2col): coordinates
 * c, spatial innermost first, n; then the r - 2 im2col offsets (16-bit), innermost first. */
static void tma_im2col_helper(tir_StrBuf *sb, int r) {
  static const char *cs[] = {"c0", "c1", "c2", "c3", "c4"}, *os[] = {"o0", "o1", "o2"};
  tir_sb_printf(sb, "__device__ __forceinline__ void tir_tma_load_im2col_%dd(void *dst, const void *tmap, void *bar", r);
  for (int i = 0; i < r; i++) tir_sb_printf(sb, ", int %s", cs[i]);
  for (int i = 0; i < r - 2; i++) tir_sb_printf(sb, ", unsigned short %s", os[i]);
  tir_sb_printf(sb, ") {\n  asm volatile(\"cp.async.bulk.tensor.%dd.shared::cluster.global.im2col.mbarrier::complete_tx::bytes [%%0], [%%1, {", r);
  for (int i = 0; i < r; i++) tir_sb_printf(sb, "%s%%%d", i ? ", " : "", 3 + i);
  tir_sb_puts(sb, "}], [%2], {");
  for (int i = 0; i < r - 2; i++) tir_sb_printf(sb, "%s%%%d", i ? ", " : "", 3 + r + i);
  tir_sb_puts(sb, "};\"\n               :: \"r\"(tir_smem_addr(dst)), \"l\"(tmap), \"r\"(tir_smem_addr(bar))");
  for (int i = 0; i < r; i++) tir_sb_printf(sb, ", \"r\"(%s)", cs[i]);
  for (int i = 0; i < r - 2; i++) tir_sb_printf(sb, ", \"h\"(%s)", os[i]);
  tir_sb_puts(sb, " : \"memory\");\n}\n");
}

/* tir_tma_desc_from_call's evaluator at build time: a constant dimension, else 0 (unknown) */
static int tma_dim_or_unknown(void *ctx, const tir_Node *e, int64_t *v) {
  (void)ctx;
  if (!tir_is_const_int(e, v)) *v = 0;
  return 1;
}

/* the rank of a tma_descriptor argument (its constant argument 3) */
static int desc_rank(CG *g, const tir_Call *c, const tir_Node *d, int coords) {
  int64_t r = 0;
  if (d->kind != TIR_Call || strcmp(((const tir_Call *)d)->op, "tma_descriptor") != 0 ||
      !const_arg((const tir_Call *)d, 3, &r) || r != coords) {
    cg_fail(g, &c->hdr, "%s needs a tma_descriptor operand whose rank is its number of coordinates (%d)", c->op, coords);
    return 0;
  }
  return (int)r;
}

/* Statement-level TMA / mbarrier builtins; returns 1 when `c` was one. */
/* Argument i of a TMA copy must be address_of(S[i]) of a shared buffer (role: what it is, for the
 * message); returns 1 when it is, else reports and returns 0. */
static int tma_shared_operand(CG *g, const tir_Call *c, int i, const char *role) {
  const tir_BufferLoad *l = addr_load(c->args->items[i]);
  if (l && tir_scope_is_shared(l->buffer->scope)) return 1;
  cg_fail(g, &c->hdr, "%s %s must be address_of(S[i]) of a shared buffer%s%s", c->op, role, l ? ", not of " : "",
          l ? l->buffer->name : "");
  return 0;
}

/* The tile coordinates c->args[first..] of a TMA copy, innermost first (the order of the PTX
 * operand vector), and the end of the call. */
static void tma_coords(CG *g, const tir_Call *c, int first) {
  for (int i = c->args->size - 1; i >= first; i--) {
    put(g, ", ");
    expr(g, c->args->items[i]);
  }
  put(g, ");\n");
}

/* The head shared by the TMA loads: NAME_<r>d(dst, &desc, bar and the rank's bit recorded (the
 * helpers are emitted once per used rank). */
static void tma_load_head(CG *g, const tir_Call *c, const char *name, int r) {
  g->tma_ranks |= 1u << r;
  putf(g, "%s_%dd(", name, r);
  ptr_ref(g, c->args->items[0]);
  put(g, ", ");
  expr(g, c->args->items[1]);
  put(g, ", ");
  ptr_ref(g, c->args->items[2]);
}

static int tma_stmt(CG *g, const tir_Call *c) {
  const tir_BuiltinInfo *bi = tir_builtin_info(c->op);
  if (!bi || (bi->id < TIR_BI_PTX_TMA_LOAD || bi->id > TIR_BI_PTX_SETMAXNREG_DEC)) return 0;
  int n = c->args->size;
  if (g->sm && g->sm < 90) {
    cg_fail(g, &c->hdr, "%s is a Hopper instruction (sm_90+), but the target is sm_%d: build with -arch=sm_90a", c->op, g->sm);
    return 1;
  }
  g->uses_tma = 1;
  line(g);
  switch (bi->id) {
    case TIR_BI_PTX_TMA_LOAD: {
      int r = desc_rank(g, c, c->args->items[1], n - 3);
      if (!r || !tma_shared_operand(g, c, 0, "copies into shared memory: its destination")) return 1;
      tma_load_head(g, c, "tir_tma_load", r);
      tma_coords(g, c, 3);
      return 1;
    }
    case TIR_BI_PTX_TMA_LOAD_IM2COL: {
      const tir_Node *d = c->args->items[1];
      int64_t r = 0;
      if (d->kind != TIR_Call || strcmp(((const tir_Call *)d)->op, "tma_im2col_descriptor") != 0 || !const_arg((const tir_Call *)d, 3, &r) ||
          r < 3 || r > 5 || n != 3 + 2 * r - 2) {
        cg_fail(g, &c->hdr, "%s needs a tma_im2col_descriptor operand of rank r (3..5) and r coordinates + r - 2 offsets", c->op);
        return 1;
      }
      if (!tma_shared_operand(g, c, 0, "copies into shared memory: its destination")) return 1;
      g->tma_im2col_ranks |= 1u << r;
      putf(g, "tir_tma_load_im2col_%dd(", (int)r);
      ptr_ref(g, c->args->items[0]);
      put(g, ", ");
      expr(g, c->args->items[1]);
      put(g, ", ");
      ptr_ref(g, c->args->items[2]);
      /* coordinates innermost first, then the offsets innermost first */
      for (int i = 3 + (int)r - 1; i >= 3; i--) {
        put(g, ", ");
        expr(g, c->args->items[i]);
      }
      for (int i = n - 1; i >= 3 + (int)r; i--) {
        put(g, ", (unsigned short)(");
        expr(g, c->args->items[i]);
        put(g, ")");
      }
      put(g, ");\n");
      return 1;
    }
    case TIR_BI_PTX_TMA_LOAD_MULTICAST: {
      int r = desc_rank(g, c, c->args->items[1], n - 4);
      if (!r || !tma_shared_operand(g, c, 0, "copies into shared memory: its destination")) return 1;
      if (!g->arch_a) {
        /* PTX ISA cp.async.bulk.tensor: .multicast::cluster is optimized for sm_90a and may be
         * substantially slower elsewhere */
        cg_fail(g, &c->hdr, "%s needs the architecture-specific target sm_90a (.multicast::cluster is optimized for it), not sm_%d",
                c->op, g->sm);
        return 1;
      }
      tma_load_head(g, c, "tir_tma_load_mc", r);
      put(g, ", (unsigned short)(");
      expr(g, c->args->items[3]);
      put(g, ")");
      tma_coords(g, c, 4);
      return 1;
    }
    case TIR_BI_PTX_MBARRIER_ARRIVE_CLUSTER: {
      const tir_BufferLoad *l = addr_load(c->args->items[0]);
      if (!l || !tir_scope_is_shared(l->buffer->scope) || tir_dtype_bytes(l->buffer->hdr.dtype) != 8) {
        cg_fail(g, &c->hdr, "%s needs address_of(bar[i]) of a 64-bit shared buffer (an mbarrier is 8 bytes of shared memory)", c->op);
        return 1;
      }
      /* the release scope: "cluster" (default; orders every earlier access of the thread for
       * the other CTA's waiter) or "cta" (the guarded reads are complete already) */
      const char *scope = c->args->size > 2 ? str_arg(c, 2) : "cluster";
      if (!scope || (strcmp(scope, "cluster") != 0 && strcmp(scope, "cta") != 0)) {
        cg_fail(g, &c->hdr, "%s: the third argument is the release scope, \"cluster\" or \"cta\"", c->op);
        return 1;
      }
      put(g, scope[1] == 't' ? "tir_mbarrier_arrive_cluster_cta(" : "tir_mbarrier_arrive_cluster(");
      ptr_ref(g, c->args->items[0]);
      put(g, ", (unsigned)(");
      expr(g, c->args->items[1]);
      put(g, "));\n");
      return 1;
    }
    case TIR_BI_PTX_FENCE_MBARRIER_INIT: put(g, "tir_fence_mbarrier_init();\n"); return 1;
    case TIR_BI_PTX_CLUSTER_SYNC: put(g, "tir_cluster_sync();\n"); return 1;
    case TIR_BI_PTX_TMA_STORE: {
      int r = desc_rank(g, c, c->args->items[0], n - 2);
      if (!r || !tma_shared_operand(g, c, 1, "copies from shared memory: its source")) return 1;
      g->tma_ranks |= 1u << r;
      putf(g, "tir_tma_store_%dd(", r);
      expr(g, c->args->items[0]);
      put(g, ", ");
      ptr_ref(g, c->args->items[1]);
      tma_coords(g, c, 2);
      return 1;
    }
    case TIR_BI_PTX_BULK_COMMIT_GROUP: put(g, "tir_bulk_commit();\n"); return 1;
    case TIR_BI_PTX_BULK_WAIT_GROUP_READ: {
      int64_t k;
      if (!tir_as_const_int(g->an, c->args->items[0], &k) || k < 0) k = 0;
      putf(g, "tir_bulk_wait_read<%lld>();\n", (long long)k);
      return 1;
    }
    case TIR_BI_PTX_FENCE_PROXY_ASYNC: put(g, "tir_fence_proxy_async();\n"); return 1;
    case TIR_BI_PTX_MBARRIER_INIT:
    case TIR_BI_PTX_MBARRIER_ARRIVE_EXPECT_TX:
    case TIR_BI_PTX_MBARRIER_WAIT:
    case TIR_BI_PTX_CP_ASYNC_MBARRIER_ARRIVE_NOINC:
    case TIR_BI_PTX_MBARRIER_ARRIVE: {
      const char *fn = bi->id == TIR_BI_PTX_MBARRIER_INIT ? "tir_mbarrier_init" : bi->id == TIR_BI_PTX_MBARRIER_WAIT ? "tir_mbarrier_wait"
                       : bi->id == TIR_BI_PTX_MBARRIER_ARRIVE ? "tir_mbarrier_arrive"
                       : bi->id == TIR_BI_PTX_CP_ASYNC_MBARRIER_ARRIVE_NOINC ? "tir_cp_async_mbarrier_arrive_noinc" : "tir_mbarrier_arrive_expect_tx";
      const tir_BufferLoad *l = addr_load(c->args->items[0]);
      if (!l || !tir_scope_is_shared(l->buffer->scope) || tir_dtype_bytes(l->buffer->hdr.dtype) != 8) {
        cg_fail(g, &c->hdr, "%s needs address_of(bar[i]) of a 64-bit shared buffer (an mbarrier is 8 bytes of shared memory)", c->op);
        return 1;
      }
      putf(g, "%s(", fn);
      ptr_ref(g, c->args->items[0]);
      if (n == 2) {
        put(g, ", (unsigned)(");
        expr(g, c->args->items[1]);
        put(g, ")");
      }
      put(g, ");\n");
      return 1;
    }
    case TIR_BI_PTX_SETMAXNREG_INC:
    case TIR_BI_PTX_SETMAXNREG_DEC: {
      int64_t k;
      if (!g->arch_a) {
        cg_fail(g, &c->hdr, "%s needs the architecture-specific target sm_90a (PTX ISA setmaxnreg), not sm_%d", c->op, g->sm);
        return 1;
      }
      if (!const_arg(c, 0, &k) || k < 24 || k > 256 || k % 8) {
        cg_fail(g, &c->hdr, "%s takes a constant register count, a multiple of 8 in 24 .. 256 (PTX ISA setmaxnreg)", c->op);
        return 1;
      }
      putf(g, "asm volatile(\"setmaxnreg.%s.sync.aligned.u32 %lld;\");\n", bi->id == TIR_BI_PTX_SETMAXNREG_INC ? "inc" : "dec",
           (long long)k);
      return 1;
    }
    default: return 0;
  }
}

/* Named barriers (PTX ISA 9.7.13.1 bar, barrier): bar.sync / bar.arrive id, count with a
 * constant id 0..15 and a count that is a multiple of the warp size.  Returns 1 when c was one. */
static int named_barrier_stmt(CG *g, const tir_Call *c) {
  const tir_BuiltinInfo *bi = tir_builtin_info(c->op);
  if (!bi || (bi->id != TIR_BI_PTX_BAR_SYNC && bi->id != TIR_BI_PTX_BAR_ARRIVE)) return 0;
  int64_t id, count;
  if (!const_arg(c, 0, &id) || id < 0 || id > 15) {
    cg_fail(g, &c->hdr, "%s takes a constant barrier id in 0 .. 15 (PTX ISA bar.sync / bar.arrive)", c->op);
    return 1;
  }
  if (tir_as_const_int(g->an, c->args->items[1], &count) && (count <= 0 || count % 32)) {
    cg_fail(g, &c->hdr, "%s: the thread count %lld is not a positive multiple of 32 (PTX ISA bar.sync: whole warps)", c->op,
            (long long)count);
    return 1;
  }
  line(g);
  putf(g, "asm volatile(\"bar.%s %lld, %%0;\" :: \"r\"((int)(", bi->id == TIR_BI_PTX_BAR_SYNC ? "sync" : "arrive", (long long)id);
  expr(g, c->args->items[1]);
  put(g, ")) : \"memory\");\n");
  return 1;
}

static void stmt(CG *g, const tir_Node *s);

static void block_body(CG *g, const tir_Node *s) {
  g->indent += 2;
  stmt(g, s);
  g->indent -= 2;
}

static const char *thread_builtin(const char *tag) {
  static const struct {
    const char *tag, *text;
  } map[] = {{"threadIdx.x", "((int)threadIdx.x)"}, {"threadIdx.y", "((int)threadIdx.y)"},
             {"threadIdx.z", "((int)threadIdx.z)"}, {"blockIdx.x", "((int)blockIdx.x)"},
             {"blockIdx.y", "((int)blockIdx.y)"},   {"blockIdx.z", "((int)blockIdx.z)"}};
  for (size_t i = 0; i < sizeof map / sizeof map[0]; i++)
    if (strcmp(map[i].tag, tag) == 0) return map[i].text;
  return NULL;
}

static void stmt(CG *g, const tir_Node *s) {
  if (g->failed || !s) return;
  switch (s->kind) {
    case TIR_SeqStmt: {
      const tir_Array *a = ((const tir_SeqStmt *)s)->seq;
      for (int i = 0; i < a->size; i++) stmt(g, a->items[i]);
      return;
    }
    case TIR_AttrStmt: {
      const tir_AttrStmt *a = (const tir_AttrStmt *)s;
      if (strcmp(a->key, "thread_extent") == 0 && a->node && a->node->kind == TIR_IterVar) {
        const tir_IterVar *iv = (const tir_IterVar *)a->node;
        const char *b = thread_builtin(iv->thread_tag);
        if (!b) {
          cg_fail(g, s, "unsupported thread tag %s", iv->thread_tag);
          return;
        }
        set_name(g, &iv->var->hdr, b);
        int mark = tir_analyzer_mark(g->an);
        tir_Node *zero = tir_i32(0);
        tir_analyzer_bind_range(g->an, iv->var, zero, a->value);
        tir_release(zero);
        stmt(g, a->body);
        tir_analyzer_reset(g->an, mark);
        return;
      }
      if (strcmp(a->key, "cluster_dims") == 0 && g->sm && g->sm < 90) {
        cg_fail(g, s, "a thread-block cluster launch (AttrStmt cluster_dims) needs sm_90+, but the target is sm_%d: build with "
                "-arch=sm_90a", g->sm);
        return;
      }
      stmt(g, a->body);
      return;
    }
    case TIR_For: {
      const tir_For *f = (const tir_For *)s;
      if (f->kind == TIR_FOR_THREAD_BINDING) {
        cg_fail(g, s, "thread-bound loop %s was not lowered", f->loop_var->name);
        return;
      }
      const char *v = name_of(g, &f->loop_var->hdr, f->loop_var->name);
      const char *ty = ctype(g, f->loop_var->hdr.dtype, s);
      if (g->kernel_wgmma && !g->smem_unfenced) tir_visit(f->body, shared_store_fn, &g->smem_unfenced); /* the previous iteration's */
      if (f->kind == TIR_FOR_UNROLLED) {
        line(g);
        put(g, "#pragma unroll\n");
      }
      line(g);
      putf(g, "for (%s %s = ", ty, v);
      expr(g, f->min);
      putf(g, "; %s < ", v);
      if (tir_is_zero(f->min)) expr(g, f->extent);
      else {
        tir_Node *end = tir_add(R(f->min), R(f->extent));
        tir_Node *se = tir_simplify(g->an, end);
        tir_release(end);
        expr(g, se);
        tir_release(se);
      }
      putf(g, "; ++%s) {\n", v);
      int mark = tir_analyzer_mark(g->an);
      tir_analyzer_bind_range(g->an, f->loop_var, f->min, f->extent);
      block_body(g, f->body);
      tir_analyzer_reset(g->an, mark);
      line(g);
      put(g, "}\n");
      return;
    }
    case TIR_IfThenElse: {
      const tir_IfThenElse *f = (const tir_IfThenElse *)s;
      line(g);
      put(g, "if (");
      expr(g, f->cond);
      put(g, ") {\n");
      block_body(g, f->then_case);
      line(g);
      put(g, "}");
      if (f->else_case) {
        put(g, " else {\n");
        block_body(g, f->else_case);
        line(g);
        put(g, "}");
      }
      put(g, "\n");
      return;
    }
    case TIR_LetStmt: {
      const tir_LetStmt *l = (const tir_LetStmt *)s;
      line(g);
      putf(g, "{\n");
      g->indent += 2;
      line(g);
      putf(g, "%s %s = ", ctype(g, l->var->hdr.dtype, s), name_of(g, &l->var->hdr, l->var->name));
      expr(g, l->value);
      put(g, ";\n");
      int mark = tir_analyzer_mark(g->an);
      tir_analyzer_bind_value(g->an, l->var, l->value);
      stmt(g, l->body);
      tir_analyzer_reset(g->an, mark);
      g->indent -= 2;
      line(g);
      put(g, "}\n");
      return;
    }
    case TIR_BufferStore: {
      const tir_BufferStore *st = (const tir_BufferStore *)s;
      if (st->indices->size != 1) {
        cg_fail(g, s, "buffer %s is not flattened", st->buffer->name);
        return;
      }
      if (tir_scope_is_shared(st->buffer->scope)) g->smem_unfenced = 1;
      int lanes = st->value->dtype.lanes;
      const tir_Node *ix = st->indices->items[0];
      const char *dst = name_of(g, &st->buffer->data->hdr, st->buffer->name);
      if (lanes > 1) {
        const tir_Node *v = st->value;
        const char *raw = raw_type(tir_dtype_bytes(st->value->dtype));
        int contiguous = ix->kind == TIR_Ramp && tir_is_one(((const tir_Ramp *)ix)->stride);
        if (raw && contiguous && v->kind == TIR_BufferLoad && ((const tir_BufferLoad *)v)->indices->items[0]->kind == TIR_Ramp &&
            tir_is_one(((const tir_Ramp *)((const tir_BufferLoad *)v)->indices->items[0])->stride) &&
            tir_dtype_bytes(((const tir_BufferLoad *)v)->buffer->hdr.dtype) == tir_dtype_bytes(st->buffer->hdr.dtype)) {
          /* a contiguous copy: one aligned vector load and store (the vectorizer checked alignment) */
          const tir_BufferLoad *l = (const tir_BufferLoad *)v;
          line(g);
          putf(g, "*(%s*)(%s + ", raw, dst);
          expr(g, ((const tir_Ramp *)ix)->base);
          putf(g, ") = *(%s*)(%s + ", raw, name_of(g, &l->buffer->data->hdr, l->buffer->name));
          expr(g, ((const tir_Ramp *)l->indices->items[0])->base);
          put(g, ");\n");
          return;
        }
        const tir_BufferLoad *gl = NULL;
        const tir_Call *ite = v->kind == TIR_Call && strcmp(((const tir_Call *)v)->op, "if_then_else") == 0 ? (const tir_Call *)v : NULL;
        double fz;
        int64_t iz;
        const tir_Node *zv = ite ? ite->args->items[2] : NULL;
        if (zv && zv->kind == TIR_Broadcast) zv = ((const tir_Broadcast *)zv)->value;
        if (raw && contiguous && ite && tir_dtype_bytes(st->value->dtype) >= 4 && ite->args->items[0]->dtype.lanes == 1 && contiguous_load(ite->args->items[1], &gl) &&
            tir_dtype_bytes(gl->buffer->hdr.dtype) == tir_dtype_bytes(st->buffer->hdr.dtype) &&
            ((tir_is_const_float(zv, &fz) && fz == 0.0) || (tir_is_const_int(zv, &iz) && iz == 0))) {
          /* a guarded contiguous copy (a padded or im2col tile; the vectorizer made the condition
           * uniform): one vector load when the condition holds, zeros otherwise */
          line(g);
          putf(g, "*(%s*)(%s + ", raw, dst);
          expr(g, ((const tir_Ramp *)ix)->base);
          put(g, ") = (");
          expr(g, ite->args->items[0]);
          putf(g, ") ? *(%s*)(%s + ", raw, name_of(g, &gl->buffer->data->hdr, gl->buffer->name));
          expr(g, contiguous_load(ite->args->items[1], &gl));
          putf(g, ") : %s{};\n", raw);
          return;
        }
        if (raw && v->kind == TIR_BufferLoad && ((const tir_BufferLoad *)v)->indices->items[0]->kind == TIR_Ramp &&
            tir_is_one(((const tir_Ramp *)((const tir_BufferLoad *)v)->indices->items[0])->stride)) {
          /* a contiguous (aligned) load scattered by the store, e.g. into a transposed shared tile:
           * one vector load into registers, then one store per lane */
          const tir_BufferLoad *l = (const tir_BufferLoad *)v;
          const char *et = ctype(g, tir_dtype_element(v->dtype), s);
          line(g);
          putf(g, "{\n");
          g->indent += 2;
          line(g);
          putf(g, "__align__(16) %s vec_[%d];\n", et, lanes);
          line(g);
          putf(g, "*(%s*)vec_ = *(%s*)(%s + ", raw, raw, name_of(g, &l->buffer->data->hdr, l->buffer->name));
          expr(g, ((const tir_Ramp *)l->indices->items[0])->base);
          put(g, ");\n");
          for (int lane = 0; lane < lanes; lane++) {
            line(g);
            putf(g, "%s[", dst);
            operand(g, ix, lane);
            putf(g, "] = vec_[%d];\n", lane);
          }
          g->indent -= 2;
          line(g);
          put(g, "}\n");
          return;
        }
        if (raw && contiguous && tir_dtype_bytes(st->value->dtype) >= 4) {
          /* a computed vector (an epilogue's requantized int8 lanes): the lanes into an aligned
           * register array, then one 4/8/16-byte store instead of one store per element (the
           * vectorizer proved the start a multiple of the lanes; the simulator checks it too) */
          const char *et = ctype(g, tir_dtype_element(v->dtype), s);
          line(g);
          put(g, "{\n");
          g->indent += 2;
          hoist_loads(g, v, s);
          line(g);
          putf(g, "__align__(16) %s vec_[%d];\n", et, lanes);
          for (int lane = 0; lane < lanes; lane++) {
            line(g);
            putf(g, "vec_[%d] = ", lane);
            lane_expr(g, v, lane);
            put(g, ";\n");
          }
          line(g);
          putf(g, "*(%s*)(%s + ", raw, dst);
          expr(g, ((const tir_Ramp *)ix)->base);
          putf(g, ") = *(%s*)vec_;\n", raw);
          g->n_hoist = 0;
          g->indent -= 2;
          line(g);
          put(g, "}\n");
          return;
        }
        for (int lane = 0; lane < lanes; lane++) {
          line(g);
          putf(g, "%s[", dst);
          operand(g, ix, lane);
          put(g, "] = ");
          lane_expr(g, v, lane);
          put(g, ";\n");
        }
        return;
      }
      line(g);
      putf(g, "%s[", dst);
      expr(g, ix);
      put(g, "] = ");
      expr(g, st->value);
      put(g, ";\n");
      return;
    }
    case TIR_Evaluate: {
      const tir_Node *v = ((const tir_Evaluate *)s)->value;
      if (v->kind == TIR_IntImm) return;
      if (v->kind == TIR_Call) {
        const char *op = ((const tir_Call *)v)->op;
        if (strcmp(op, "tvm_storage_sync") == 0 || strcmp(op, "syncthreads") == 0) {
          barrier(g);
          return;
        }
        if (named_barrier_stmt(g, (const tir_Call *)v)) return;
        if (tc_stmt(g, (const tir_Call *)v)) return;
        if (async_copy_stmt(g, (const tir_Call *)v)) return;
        if (tma_stmt(g, (const tir_Call *)v)) return;
      }
      line(g);
      expr(g, v);
      put(g, ";\n");
      return;
    }
    case TIR_DeclBuffer:
      /* a view: its accesses (flattened) already index its data's pointer */
      stmt(g, ((const tir_DeclBuffer *)s)->body);
      return;
    case TIR_Allocate: {
      const tir_Allocate *a = (const tir_Allocate *)s;
      const tir_Buffer *b = a->buffer;
      int64_t n = 1;
      for (int i = 0; i < b->shape->size; i++) {
        int64_t d;
        if (!tir_as_const_int(g->an, b->shape->items[i], &d)) {
          cg_fail(g, s, "buffer %s has a symbolic size; on-device allocations need constant sizes", b->name);
          return;
        }
        n *= d;
      }
      if (tir_scope_is_wmma(b->scope) || tir_scope_is_warp(b->scope) || tir_scope_is_wgmma(b->scope)) {
        line(g);
        put(g, "{\n");
        g->indent += 2;
        tc_alloc(g, a, n);
        stmt(g, a->body);
        g->indent -= 2;
        line(g);
        put(g, "}\n");
        return;
      }
      if (tir_scope_is_shared(b->scope) && g->kernel && g->kernel->dyn_smem_bytes > 0) {
        /* a slice of the kernel's dynamic shared memory (offsets in the order split_host_device counted) */
        line(g);
        put(g, "{\n");
        g->indent += 2;
        line(g);
        const char *ct = ctype(g, b->hdr.dtype, s);
        const tir_SharedSlot *slot = tir_shared_plan_find(&g->smem, s);
        if (!slot) {
          cg_fail(g, s, "shared buffer %s is missing from the kernel's shared memory plan", b->name);
          return;
        }
        putf(g, "%s* %s = (%s*)(tir_dyn_smem + %lld);\n", ct, name_of(g, &b->data->hdr, b->name), ct, (long long)slot->offset);
        if (slot->barrier) {
          /* the bytes were an earlier buffer's: every thread is done with it first */
          barrier(g);
        }
        stmt(g, a->body);
        g->indent -= 2;
        line(g);
        put(g, "}\n");
        return;
      }
      const char *qual;
      tir_Scope sc = tir_scope_parse(b->scope);
      char qbuf[48];
      if (sc.rank == TIR_SCOPE_SHARED && !*sc.tag) { /* lines, swizzle repeats, TMA operands */
        snprintf(qbuf, sizeof qbuf, "__shared__ __align__(%lld) ", (long long)tir_shared_slice_align(g->kernel, b));
        qual = qbuf;
      }
      else if (sc.rank == TIR_SCOPE_LOCAL) {
        /* register arrays that vectorized code reads or writes 8 or 16 bytes at a time (the
         * split-K sums: *(uint4*)(C + 0)) must be aligned to that size, or an array the compiler
         * keeps in local memory would take a misaligned vector access */
        int64_t bytes = n * (int64_t)tir_dtype_bytes(b->hdr.dtype);
        qual = bytes % 16 == 0 ? "__align__(16) " : bytes % 8 == 0 ? "__align__(8) " : "";
      }
      else {
        cg_fail(g, s, "buffer %s has scope '%s', which cannot be allocated inside a kernel", b->name, b->scope);
        return;
      }
      line(g);
      put(g, "{\n");
      g->indent += 2;
      line(g);
      putf(g, "%s%s %s[%lld];\n", qual, ctype(g, b->hdr.dtype, s), name_of(g, &b->data->hdr, b->name), (long long)n);
      stmt(g, a->body);
      g->indent -= 2;
      line(g);
      put(g, "}\n");
      return;
    }
    default: cg_fail(g, s, "the CUDA codegen cannot emit a %s statement", tir_kind_name(s->kind)); return;
  }
}

/* Which buffer parameters may be __restrict__.  nvcc (seen with 13.0 for sm_90, and in the
 * H200 run of schedule_argmax_spec) rewrites c ? x[i] : y[j] into one load from a selected
 * address and emits it as ld.global.nc when y is a __restrict__ buffer the kernel only reads,
 * even when x is a buffer the kernel writes: .nc is only defined for data that is read-only
 * for the whole kernel (PTX ISA 9.7.9.10, ld.global.nc), so the rfactor'ed argmax read stale
 * out_i / out_i_rf.  Any buffer loaded in an arm of a Select, an if_then_else or an
 * IfThenElse with an else branch whose arms load a buffer this kernel stores to loses
 * __restrict__ (then nvcc uses plain ld.global). */
typedef struct {
  const tir_Var *vars[64];
  int n, overflow;
} DataSet;

static void dataset_add(DataSet *d, const tir_Var *v) {
  for (int i = 0; i < d->n; i++)
    if (d->vars[i] == v) return;
  if (d->n < (int)(sizeof d->vars / sizeof d->vars[0])) d->vars[d->n++] = v;
  else d->overflow = 1; /* too many to track: every buffer is treated as in the set */
}

static int dataset_has(const DataSet *d, const tir_Var *v) {
  if (d->overflow) return 1;
  for (int i = 0; i < d->n; i++)
    if (d->vars[i] == v) return 1;
  return 0;
}

static int stored_scan(const tir_Node *x, void *p) {
  if (x->kind == TIR_BufferStore) dataset_add(p, ((const tir_BufferStore *)x)->buffer->data);
  return 0;
}

static int loaded_scan(const tir_Node *x, void *p) {
  if (x->kind == TIR_BufferLoad) dataset_add(p, ((const tir_BufferLoad *)x)->buffer->data);
  return 0;
}

typedef struct {
  DataSet stored, unrestricted;
} RestrictScan;

static void select_arms(RestrictScan *r, const tir_Node *a, const tir_Node *b) {
  DataSet arms = {{0}, 0, 0};
  tir_visit(a, loaded_scan, &arms);
  tir_visit(b, loaded_scan, &arms);
  int mixes_written = arms.overflow;
  for (int i = 0; i < arms.n && !mixes_written; i++) mixes_written = dataset_has(&r->stored, arms.vars[i]);
  if (!mixes_written) return;
  if (arms.overflow) r->unrestricted.overflow = 1;
  for (int i = 0; i < arms.n; i++) dataset_add(&r->unrestricted, arms.vars[i]);
}

static int select_scan(const tir_Node *x, void *p) {
  if (x->kind == TIR_Select) {
    const tir_Select *s = (const tir_Select *)x;
    select_arms(p, s->true_value, s->false_value);
  } else if (x->kind == TIR_Call) {
    const tir_Call *c = (const tir_Call *)x;
    if (strcmp(c->op, "if_then_else") == 0 && c->args->size == 3) select_arms(p, c->args->items[1], c->args->items[2]);
  } else if (x->kind == TIR_IfThenElse) {
    /* if (c) x = a[i]; else x = b[j]; is merged the same way */
    const tir_IfThenElse *s = (const tir_IfThenElse *)x;
    if (s->else_case) select_arms(p, s->then_case, s->else_case);
  }
  return 0;
}

static int wgmma_scan(const tir_Node *n, void *p) {
  if (n->kind == TIR_Call && tir_builtin_has(((const tir_Call *)n)->op, TIR_BUILTIN_WARPGROUP)) *(int *)p = 1;
  return 0;
}

static void kernel(CG *g, const tir_Kernel *k) {
  g->kernel = k;
  const tir_PrimFunc *f = k->func;
  g->kernel_wgmma = 0;
  g->smem_unfenced = 0;
  tir_visit(f->body, wgmma_scan, &g->kernel_wgmma);
  int64_t threads = 1;
  int const_block = 1;
  for (int d = 0; d < 3; d++) {
    int64_t v;
    if (tir_is_const_int(k->block[d], &v)) threads *= v;
    else const_block = 0;
  }
  put(g, "extern \"C\" __global__ void ");
  if (const_block) putf(g, "__launch_bounds__(%lld) ", (long long)threads);
  /* a thread-block cluster kernel carries its shape (PTX .reqnctapercluster), so that it
   * launches with plain cuLaunchKernel (CUDA C++ Programming Guide, thread block clusters) */
  if (k->cluster[0] > 0) putf(g, "__cluster_dims__(%d, %d, %d) ", k->cluster[0], k->cluster[1], k->cluster[2]);
  putf(g, "%s(", k->name);
  RestrictScan rs;
  memset(&rs, 0, sizeof rs);
  tir_visit(f->body, stored_scan, &rs.stored);
  tir_visit(f->body, select_scan, &rs);
  for (int i = 0; i < f->params->size; i++) {
    const tir_Node *p = f->params->items[i];
    if (i) put(g, ", ");
    if (p->kind == TIR_Buffer) {
      const tir_Buffer *b = (const tir_Buffer *)p;
      putf(g, "%s* %s%s", ctype(g, b->hdr.dtype, p), dataset_has(&rs.unrestricted, b->data) ? "" : "__restrict__ ",
           name_of(g, &b->data->hdr, b->name));
    } else {
      const tir_Var *v = (const tir_Var *)p;
      putf(g, "%s %s", ctype(g, v->hdr.dtype, p), name_of(g, p, v->name));
    }
  }
  for (int i = 0; i < k->tma_descs->size; i++) {
    /* the tensor map's rules (tma.h) at build time, not only at launch: constant dims are
     * checked against the box, symbolic ones (0 here) at launch */
    tir_TmaDesc td;
    char why[256];
    if (tir_tma_desc_from_call(k->tma_descs->items[i], tma_dim_or_unknown, NULL, &td, why, sizeof why) != 0)
      cg_fail(g, k->tma_descs->items[i], "%s", why);
    putf(g, "%sconst __grid_constant__ tir_CUtensorMap tir_tmap_%d", f->params->size || i ? ", " : "", i);
    g->uses_tma = 1;
  }
  put(g, ") {\n");
  g->indent = 2;
  tir_shared_plan(f->body, &g->smem);
  /* 1024: the largest tir_shared_slice_align (a 128-byte swizzle's repeat, a TMA operand) */
  if (k->dyn_smem_bytes > 0) put(g, "  extern __shared__ __align__(1024) unsigned char tir_dyn_smem[];\n");
  stmt(g, f->body);
  tir_shared_plan_free(&g->smem);
  g->indent = 0;
  put(g, "}\n\n");
}

char *tir_codegen_cuda(const tir_DeviceSplit *split, const char *arch) {
  CG g;
  memset(&g, 0, sizeof g);
  tir_sb_init(&g.out);
  g.an = tir_analyzer_new();
  if (arch && strncmp(arch, "sm_", 3) == 0) {
    g.sm = atoi(arch + 3);
    g.arch_a = arch[strlen(arch) - 1] == 'a';
  }
  for (int i = 0; i < split->n_kernels && !g.failed; i++) {
    /* names are per kernel */
    for (int j = 0; j < g.n_names; j++) free(g.names[j].name);
    g.n_names = 0;
    kernel(&g, &split->kernels[i]);
  }
  for (int j = 0; j < g.n_names; j++) free(g.names[j].name);
  free(g.names);
  tir_analyzer_free(g.an);
  if (g.failed) {
    tir_sb_free(&g.out);
    return NULL;
  }
  tir_StrBuf all;
  tir_sb_init(&all);
  tir_sb_printf(&all, "// Generated by tirlua for %s.\n", arch ? arch : "CUDA");
  if (g.uses_fp16) tir_sb_puts(&all, "#include <cuda_fp16.h>\n");
  if (g.uses_bf16) tir_sb_puts(&all, "#include <cuda_bf16.h>\n");
  if (g.uses_wmma) tir_sb_puts(&all, "#include <mma.h>\n");
  if (g.uses_smem_addr || g.uses_tma) /* (the TMA helpers use it too) */
    tir_sb_puts(&all, "\n// the 32-bit shared-window address of a shared buffer (PTX ISA 6.4.1: shared state space)\n"
                      "__device__ __forceinline__ unsigned tir_smem_addr(const void *p) { return (unsigned)__cvta_generic_to_shared(p); }\n");
  if (g.uses_cp_async) tir_sb_puts(&all, cp_async_helpers);
  if (g.uses_tma) {
    tir_sb_puts(&all, tma_helpers);
    for (int r = 1; r <= TIR_TMA_MAX_RANK; r++)
      if (g.tma_ranks >> r & 1) tma_rank_helpers(&all, r);
    for (int r = 3; r <= TIR_TMA_MAX_RANK; r++)
      if (g.tma_im2col_ranks >> r & 1) tma_im2col_helper(&all, r);
  }
  {
    int nrows;
    const tir_MmaConfig *rows = tir_mma_table(&nrows);
    for (int i = 0; i < nrows; i++)
      if (g.uses_mma >> i & 1) {
        char *h = tir_mma_helper_source(&rows[i]);
        tir_sb_puts(&all, h);
        free(h);
      }
  }
  for (int i = 0; i < g.n_wgmma; i++) {
    char *h = tir_wgmma_helper_source(g.wgmma[i].cfg, g.wgmma[i].n, g.wgmma[i].trans_b);
    tir_sb_puts(&all, h);
    free(h);
  }
  if (g.uses_wgmma_desc)
    tir_sb_puts(&all,
                "\n// the wgmma matrix descriptor (PTX ISA 9.7.15.5.1.2.2): start address, LBO, SBO (each (x & 0x3FFFF) >> 4),\n"
                "// swizzle mode in bits 62-63 (0 none, 1 128B, 2 64B, 3 32B); base offset 0 (1024-byte aligned patterns)\n"
                "__device__ __forceinline__ unsigned long long tir_wgmma_desc(const void *p, unsigned lbo, unsigned sbo, unsigned mode) {\n"
                "  unsigned a = (unsigned)__cvta_generic_to_shared(p);\n"
                "  return (unsigned long long)((a & 0x3FFFF) >> 4) | ((unsigned long long)((lbo & 0x3FFFF) >> 4) << 16) |\n"
                "         ((unsigned long long)((sbo & 0x3FFFF) >> 4) << 32) | ((unsigned long long)mode << 62);\n}\n");
  if (g.uses_numerics) numerics_helpers(&all);
  if (g.uses_grid_arrive)
    /* tir_grid_arrive_last (docs/BUILTINS.md): the threadFenceReduction pattern of the CUDA samples and
     * CUTLASS's split-K semaphore -- every thread fences its global writes, thread 0 counts the CTA in,
     * __syncthreads_or hands the verdict to the whole CTA; the last CTA resets the counter and fences
     * before reading what the others wrote */
    tir_sb_puts(&all, "\n__device__ __forceinline__ int tir_grid_arrive_last(int *counter, int count) {\n"
                      "  __threadfence();\n  __syncthreads();\n  int last = 0;\n"
                      "  if (threadIdx.x == 0 && threadIdx.y == 0 && threadIdx.z == 0) {\n"
                      "    last = atomicAdd(counter, 1) == count - 1;\n    if (last) *counter = 0;\n  }\n"
                      "  last = __syncthreads_or(last);\n  if (last) __threadfence();\n  return last;\n}\n"
                      /* tir_grid_wait: an acquire load in a loop (PTX ISA ld .acquire.gpu), so what the CTAs that
                       * arrived did before their fence comes before this thread's later accesses */
                      "\n__device__ __forceinline__ void tir_grid_wait(int *counter, int value) {\n"
                      "  int v;\n  do {\n    asm volatile(\"ld.acquire.gpu.global.b32 %0, [%1];\" : \"=r\"(v) : \"l\"(counter) : \"memory\");\n"
                      "  } while (v < value);\n}\n");
  if (g.uses_lane_id)
    tir_sb_puts(&all, "\n__device__ __forceinline__ int tir_lane_id() {\n  int l;\n  asm(\"mov.u32 %0, %%laneid;\" : \"=r\"(l));\n  return l;\n}\n");
  tir_sb_puts(&all,
              "\n// floor division and modulo for operands that may be negative (TIR semantics)\n"
              "template <typename T> __device__ __forceinline__ T tir_floordiv(T a, T b) {\n"
              "  T q = a / b;\n  return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;\n}\n"
              "template <typename T> __device__ __forceinline__ T tir_floormod(T a, T b) {\n"
              "  T r = a % b;\n  return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;\n}\n\n");
  for (int ab = 0; ab < 4; ab++)
    if (g.uses_dp4a & (1u << ab)) {
      const char *at = ab & 2 ? "s32" : "u32", *bt = ab & 1 ? "s32" : "u32";
      tir_sb_printf(&all,
                    "\n// dp4a.%s.%s (PTX ISA: dp4a; sm_61+)\n__device__ __forceinline__ int tir_dp4a_%s_%s(int a, int b, int c) {\n"
                    "  int d;\n  asm(\"dp4a.%s.%s %%0, %%1, %%2, %%3;\" : \"=r\"(d) : \"r\"(a), \"r\"(b), \"r\"(c));\n  return d;\n}\n",
                    at, bt, at, bt, at, bt);
    }
  if (g.uses_prmt)
    tir_sb_puts(&all, "\n// prmt.b32 (PTX ISA: prmt), the default mode\n__device__ __forceinline__ int tir_prmt(int a, int b, int c) {\n"
                      "  int d;\n  asm(\"prmt.b32 %0, %1, %2, %3;\" : \"=r\"(d) : \"r\"(a), \"r\"(b), \"r\"(c));\n  return d;\n}\n");
  for (int i = 0; i < g.n_extern_src; i++) {
    tir_sb_puts(&all, "// registered with tir.register_extern\n");
    tir_sb_puts(&all, g.extern_src[i]);
    tir_sb_puts(&all, "\n\n");
  }
  tir_sb_puts(&all, g.out.data ? g.out.data : "");
  tir_sb_free(&g.out);
  return tir_sb_take(&all);
}
