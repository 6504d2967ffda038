/* lower_wgmma_descriptor.c -- derives the shared-memory matrix descriptors of wgmma operands from
 * the buffers' layouts, so that no schedule or intrinsic ever writes one.
 *
 * Intrinsics write wgmma_operand(address_of(S[i]), ld, "K" | "MN"): the tile of S starting at
 * element i, rows of ld elements, K-major (the rows run along k: A stored m x k, B stored n x k)
 * or MN-major (rows run along n: B stored k x n).  After flatten_buffer this pass replaces it by
 * wgmma_desc(address_of(S[i]), LBO, SBO, swizzle) from S's swizzle (the Buffer field storage_swizzle sets, a
 * PTX mode; include/tir/swizzle.h) and ld, following
 * PTX ISA 9.7.15.5.1.2 ("Shared Memory Matrix Layout", canonical layouts with T = 16 bytes):
 *   K-major, swizzle B:  ((8, m), (T, 2k)) : ((B, SBO), (1, T)) -- rows of exactly B bytes, the 8
 *     rows of a swizzle atom B bytes apart, atoms SBO = 8 B apart; LBO unused ("assumed 1": 16).
 *   MN-major, swizzle B: ((T, B/16, m), (8, k)) : ((1, T, LBO), (B, SBO)) -- rows (k) of exactly B
 *     bytes, so the n extent of one instruction is at most B / element bytes (one atom: LBO
 *     unused), 8 k-rows SBO = 8 B apart.
 * A tile without a swizzle has no canonical layout unless its 8 x 16-byte core matrices are
 * contiguous, which a row-major tile is not: it is refused with the storage_swizzle to give it,
 * as is a swizzle that is no PTX mode (CuTe's Swizzle<3, 4, 4> of 256-byte rows).  The address
 * stays logical (wgmma_desc is TIR_BUILTIN_SWIZZLE_AWARE): a tile origin at a multiple of 8 rows
 * has the same logical and physical address, and the hardware applies the swizzle from there.
 * The swizzle pattern itself (the tile's origin at a multiple of 8 rows, the buffer 1024-byte
 * aligned) is checked by the simulator on every call. */
#include <string.h>

#include "pass_util.h"
#include "tir/scope.h"
#include "tir/swizzle.h"
#include "tir/transform.h"

typedef struct {
  const tir_PrimFunc *f;
  int failed;
} Ctx;

static tir_Node *fail(Ctx *c, const tir_Node *at) {
  tir_error_set_ir(&c->f->hdr);
  tir_error_mark(at, "this operand");
  c->failed = 1;
  return TIR_MUTATE_ERROR;
}

static tir_Node *mut(const tir_Node *n, void *p) {
  Ctx *c = p;
  if (n->kind != TIR_Call || strcmp(((const tir_Call *)n)->op, "wgmma_operand") != 0) return NULL;
  const tir_Call *call = (const tir_Call *)n;
  const tir_BufferLoad *l = call->args->size == 3 ? tir_address_of_load(call->args->items[0]) : NULL;
  int64_t ld;
  const char *major = call->args->size == 3 && call->args->items[2]->kind == TIR_StringImm
                          ? ((const tir_StringImm *)call->args->items[2])->value
                          : NULL;
  if (!l || !tir_is_const_int(call->args->items[1], &ld) || !major || (strcmp(major, "K") != 0 && strcmp(major, "MN") != 0)) {
    tir_error_set(TIR_ERR_LOWER, "lower_wgmma_descriptor",
                  "wgmma_operand takes (address_of(shared tile[0, 0]), a constant row stride in elements, \"K\" or \"MN\")");
    return fail(c, n);
  }
  const tir_Buffer *b = l->buffer;
  int sw = tir_swizzle_ptx_mode(b->swizzle);
  int64_t es = tir_dtype_bytes(b->hdr.dtype);
  char swn[24];
  if (sw < 0) {
    tir_error_set(TIR_ERR_LOWER, "lower_wgmma_descriptor",
                  "the wgmma operand %s has the swizzle %s, which is none of the descriptor's modes (PTX ISA 9.7.15.5.1.2: 32, 64 or "
                  "128 bytes): give it storage_swizzle(block, i, \"%lldB\") (its rows are %lld bytes)",
                  b->name, tir_swizzle_str(b->swizzle, swn), (long long)(ld * es), (long long)(ld * es));
    return fail(c, n);
  }
  if (!tir_scope_is_shared(b->scope) || !sw) {
    tir_error_set(TIR_ERR_LOWER, "lower_wgmma_descriptor",
                  "the wgmma operand %s has scope '%s' and no swizzle: wgmma reads its operands from swizzled shared memory, and a "
                  "row-major tile has a canonical wgmma layout only with a swizzle whose width is its row (PTX ISA 9.7.15.5.1.2) -- "
                  "give the shared tile storage_swizzle(block, i, \"%lldB\") (rows of %lld bytes)",
                  b->name, b->scope, (long long)(ld * es), (long long)(ld * es));
    return fail(c, n);
  }
  if (ld * es != sw) {
    tir_error_set(TIR_ERR_LOWER, "lower_wgmma_descriptor",
                  "the wgmma operand %s (swizzle %s) has rows of %lld elements = %lld bytes, but a %s-major wgmma tile with a %d-byte "
                  "swizzle needs rows of exactly %d bytes (PTX ISA 9.7.15.5.1.2, canonical layouts): make the tile's row %lld "
                  "elements (BK for K-major operands) or give it storage_swizzle(block, i, \"%lldB\")",
                  b->name, tir_swizzle_str(b->swizzle, swn), (long long)ld, (long long)(ld * es), major, sw, sw,
                  (long long)(sw / es), (long long)(ld * es));
    return fail(c, n);
  }
  tir_Array *args = tir_array_of(4, R(call->args->items[0]), tir_i32(16), tir_i32(8 * sw), tir_i32(sw));
  return tir_call(tir_dtype(TIR_DT_UINT, 64, 1), "wgmma_desc", args);
}

tir_PrimFunc *tir_pass_lower_wgmma_descriptor(const tir_PrimFunc *f) {
  Ctx c = {f, 0};
  tir_Node *body = tir_mutate(f->body, mut, &c);
  if (!body || c.failed) {
    if (body) tir_release(body);
    return NULL;
  }
  return pass_with_body(f, body);
}
