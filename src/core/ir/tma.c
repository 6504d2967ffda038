/* tma.c -- the TMA rules and copies of include/tir/tma.h (sources named there). */
#include <stdio.h>
#include <string.h>

#include "tir/tma.h"

int tir_tma_cuda_dtype(tir_DType t) {
  if (t.lanes != 1) return -1;
  switch (t.code) {
    case TIR_DT_UINT: return t.bits == 8 ? 0 : t.bits == 16 ? 1 : t.bits == 32 ? 2 : t.bits == 64 ? 4 : -1;
    case TIR_DT_INT: return t.bits == 8 ? 0 : t.bits == 16 ? 1 : t.bits == 32 ? 3 : t.bits == 64 ? 5 : -1; /* bits are bits */
    case TIR_DT_FLOAT: return t.bits == 16 ? 6 : t.bits == 32 ? 7 : t.bits == 64 ? 8 : -1;
    case TIR_DT_BFLOAT: return t.bits == 16 ? 9 : -1;
    default: return -1;
  }
}

int tir_tma_is_descriptor(const tir_Node *n) {
  if (!n || n->kind != TIR_Call) return 0;
  const char *op = ((const tir_Call *)n)->op;
  return strcmp(op, "tma_descriptor") == 0 || strcmp(op, "tma_im2col_descriptor") == 0;
}

int64_t tir_tma_box_bytes(const tir_TmaDesc *d) {
  int64_t n = tir_dtype_bytes(d->dtype);
  for (int i = 0; i < (d->im2col ? 2 : d->rank); i++) n *= d->box[i];
  return n;
}

int tir_tma_im2col_check(const tir_TmaDesc *d, char *why, size_t cap) {
  if (d->rank < 3 || d->rank > 5) {
    snprintf(why, cap, "an im2col tensor map has rank 3 to 5 (N, spatial dims, C), not %d", d->rank);
    return -1;
  }
  int64_t pixels = d->box[0], ch = d->box[1], row = ch * tir_dtype_bytes(d->dtype);
  if (ch < 1 || ch > 256 || row % 16) {
    snprintf(why, cap, "im2col channels per pixel is %lld (%lld bytes); it must be 1 to 256 and a multiple of 16 bytes", (long long)ch,
             (long long)row);
    return -1;
  }
  if (d->swizzle && row > d->swizzle) {
    snprintf(why, cap, "im2col channels per pixel make %lld bytes, more than the %d-byte swizzle span", (long long)row, d->swizzle);
    return -1;
  }
  if (pixels < 1 || pixels > 1024) {
    snprintf(why, cap, "im2col pixels per column is %lld; it must be 1 to 1024", (long long)pixels);
    return -1;
  }
  int64_t lim = d->rank == 3 ? 1 << 15 : d->rank == 4 ? 1 << 7 : 1 << 4;
  for (int i = 0; i < d->rank - 2; i++) {
    if (d->estride[i] < 1 || d->estride[i] > 8) {
      snprintf(why, cap, "im2col traversal stride %d is %lld; it must be 1 to 8", i, (long long)d->estride[i]);
      return -1;
    }
    if (d->lower[i] < -lim || d->lower[i] >= lim || d->upper[i] < -lim || d->upper[i] >= lim) {
      snprintf(why, cap, "im2col bounding-box corner %d (lower %lld, upper %lld) is outside %lld .. %lld (rank %d)", i,
               (long long)d->lower[i], (long long)d->upper[i], (long long)-lim, (long long)lim - 1, d->rank);
      return -1;
    }
  }
  return 0;
}

int tir_tma_desc_check(const tir_TmaDesc *d, char *why, size_t cap) {
  char ts[32];
  if (tir_tma_cuda_dtype(d->dtype) < 0) {
    snprintf(why, cap, "TMA has no element type %s", tir_dtype_str(d->dtype, ts));
    return -1;
  }
  if (d->swizzle != 0 && d->swizzle != 32 && d->swizzle != 64 && d->swizzle != 128) {
    snprintf(why, cap, "the swizzle is 0, 32, 64 or 128 bytes, not %d", d->swizzle);
    return -1;
  }
  if (d->im2col) return tir_tma_im2col_check(d, why, cap);
  if (d->rank < 1 || d->rank > TIR_TMA_MAX_RANK) {
    snprintf(why, cap, "a tensor map has rank 1 to %d, not %d", TIR_TMA_MAX_RANK, d->rank);
    return -1;
  }
  for (int i = 0; i < d->rank; i++) {
    if (d->box[i] < 1 || d->box[i] > 256) {
      snprintf(why, cap, "box dimension %d is %lld; TMA boxes are 1 to 256 elements per dimension", i, (long long)d->box[i]);
      return -1;
    }
    if (d->dims[i] > 0 && d->box[i] > d->dims[i]) {
      snprintf(why, cap, "box dimension %d (%lld) is larger than the tensor's (%lld)", i, (long long)d->box[i], (long long)d->dims[i]);
      return -1;
    }
  }
  int64_t row = d->box[d->rank - 1] * tir_dtype_bytes(d->dtype);
  if (row % 16) {
    snprintf(why, cap, "the box's inner row is %lld bytes; TMA needs a multiple of 16", (long long)row);
    return -1;
  }
  if (d->swizzle && row > d->swizzle) {
    snprintf(why, cap, "the box's inner row is %lld bytes, more than the %d-byte swizzle span", (long long)row, d->swizzle);
    return -1;
  }
  return 0;
}

int64_t tir_tma_swizzle(int64_t off, int swizzle) {
  int b = swizzle == 32 ? 1 : swizzle == 64 ? 2 : swizzle == 128 ? 3 : 0;
  if (!b) return off;
  int64_t mask = ((int64_t)1 << b) - 1;
  return off ^ (((off >> 7) & mask) << 4);
}

/* Walks the box in row-major order; f gets the dense box index and the tensor's element index
 * (-1 when outside the tensor). */
static void walk_box(const tir_TmaDesc *d, const int64_t *coords, void (*f)(void *, int64_t, int64_t), void *ctx) {
  int64_t n = 1;
  for (int i = 0; i < d->rank; i++) n *= d->box[i];
  for (int64_t e = 0; e < n; e++) {
    int64_t rem = e, el = 0, stride = 1, inside = 1;
    for (int i = d->rank - 1; i >= 0; i--) {
      int64_t c = coords[i] + rem % d->box[i];
      rem /= d->box[i];
      if (c < 0 || c >= d->dims[i]) inside = 0;
      el += c * stride;
      stride *= d->dims[i];
    }
    f(ctx, e, inside ? el : -1);
  }
}

typedef struct {
  const tir_TmaDesc *d;
  char *box;
  char *tensor;
  int esize, in;
} CopyCtx;

static void copy_elem(void *p, int64_t e, int64_t el) {
  CopyCtx *c = p;
  char *b = c->box + tir_tma_swizzle(e * c->esize, c->d->swizzle);
  if (c->in) {
    if (el < 0) memset(b, 0, (size_t)c->esize);
    else memcpy(b, c->tensor + el * c->esize, (size_t)c->esize);
  } else if (el >= 0) {
    memcpy(c->tensor + el * c->esize, b, (size_t)c->esize);
  }
}

void tir_tma_copy_in(const tir_TmaDesc *d, const char *src, const int64_t *coords, char *dst) {
  CopyCtx c = {d, dst, (char *)src, tir_dtype_bytes(d->dtype), 1};
  walk_box(d, coords, copy_elem, &c);
}

void tir_tma_copy_in_im2col(const tir_TmaDesc *d, const char *src, const int64_t *coords, const int64_t *offsets, char *dst) {
  const int ns = d->rank - 2, es = tir_dtype_bytes(d->dtype);
  const int64_t pixels = d->box[0], ch = d->box[1];
  int64_t n = coords[0], sp[TIR_TMA_MAX_RANK - 2];
  for (int i = 0; i < ns; i++) sp[i] = coords[1 + i];
  for (int64_t j = 0; j < pixels; j++) {
    /* the pixel's element (n, sp + offsets, c ..): row-major over dims, C innermost */
    int64_t el = n, inside = n >= 0 && n < d->dims[0];
    for (int i = 0; i < ns; i++) {
      int64_t x = sp[i] + offsets[i];
      if (x < 0 || x >= d->dims[1 + i]) inside = 0;
      el = el * d->dims[1 + i] + x;
    }
    for (int64_t k = 0; k < ch; k++) {
      int64_t c = coords[d->rank - 1] + k;
      char *b = dst + tir_tma_swizzle((j * ch + k) * es, d->swizzle);
      if (inside && c >= 0 && c < d->dims[d->rank - 1]) memcpy(b, src + (el * d->dims[d->rank - 1] + c) * es, (size_t)es);
      else memset(b, 0, (size_t)es);
    }
    /* the next pixel: a traversal stride along the innermost spatial dim, wrapping to the lower corner */
    int i = ns - 1;
    for (; i >= 0; i--) {
      sp[i] += d->estride[i];
      if (sp[i] <= d->dims[1 + i] - 1 + d->upper[i]) break;
      sp[i] = d->lower[i];
    }
    if (i < 0) n++;
  }
}

void tir_tma_copy_out(const tir_TmaDesc *d, char *dst_tensor, const int64_t *coords, const char *src) {
  CopyCtx c = {d, (char *)src, dst_tensor, tir_dtype_bytes(d->dtype), 0};
  walk_box(d, coords, copy_elem, &c);
}

/* tma_im2col_descriptor(data, "dtype", swizzle, rank, dims (rank), lower, upper, stride (rank - 2
 * each), pixels, channels): constants but the dims */
static int im2col_from_call(const tir_Array *a, int (*eval)(void *ctx, const tir_Node *e, int64_t *v), void *ctx, tir_TmaDesc *out,
                            char *why, size_t cap) {
  int64_t sw, rank;
  if (a->size < 4 || a->items[1]->kind != TIR_StringImm || !tir_is_const_int(a->items[2], &sw) || !tir_is_const_int(a->items[3], &rank) ||
      rank < 3 || rank > 5 || a->size != 4 + rank + 3 * (rank - 2) + 2) {
    snprintf(why, cap, "tma_im2col_descriptor takes (data, \"dtype\", swizzle, rank, rank dims, rank - 2 lower corners, rank - 2 "
                       "upper corners, rank - 2 traversal strides, pixels, channels) with constant swizzle and rank 3..5");
    return -1;
  }
  if (!tir_dtype_parse(((const tir_StringImm *)a->items[1])->value, &out->dtype)) {
    snprintf(why, cap, "tma_im2col_descriptor: unknown dtype '%s'", ((const tir_StringImm *)a->items[1])->value);
    return -1;
  }
  out->im2col = 1;
  out->rank = (int)rank;
  out->swizzle = (int)sw;
  int ns = (int)rank - 2, at = 4 + (int)rank;
  for (int i = 0; i < rank; i++)
    if (!eval(ctx, a->items[4 + i], &out->dims[i])) {
      snprintf(why, cap, "tma_im2col_descriptor: tensor dimension %d cannot be evaluated", i);
      return -1;
    }
  int64_t *fields[3] = {out->lower, out->upper, out->estride};
  for (int f = 0; f < 3; f++)
    for (int i = 0; i < ns; i++)
      if (!tir_is_const_int(a->items[at++], &fields[f][i])) {
        snprintf(why, cap, "tma_im2col_descriptor: the corners and traversal strides must be constants");
        return -1;
      }
  if (!tir_is_const_int(a->items[at], &out->box[0]) || !tir_is_const_int(a->items[at + 1], &out->box[1])) {
    snprintf(why, cap, "tma_im2col_descriptor: pixels and channels must be constants");
    return -1;
  }
  return tir_tma_desc_check(out, why, cap);
}

int tir_tma_desc_from_call(const tir_Node *call, int (*eval)(void *ctx, const tir_Node *e, int64_t *v), void *ctx,
                           tir_TmaDesc *out, char *why, size_t cap) {
  memset(out, 0, sizeof *out);
  if (!tir_tma_is_descriptor(call)) {
    snprintf(why, cap, "expected a tma_descriptor(data, \"dtype\", swizzle, rank, dims..., box...) or tma_im2col_descriptor call");
    return -1;
  }
  const tir_Array *a = ((const tir_Call *)call)->args;
  if (strcmp(((const tir_Call *)call)->op, "tma_im2col_descriptor") == 0) return im2col_from_call(a, eval, ctx, out, why, cap);
  int64_t sw, rank;
  if (a->size < 6 || a->items[1]->kind != TIR_StringImm || !tir_is_const_int(a->items[2], &sw) ||
      !tir_is_const_int(a->items[3], &rank) || rank < 1 || rank > TIR_TMA_MAX_RANK || a->size != 4 + 2 * rank) {
    snprintf(why, cap, "tma_descriptor takes (data, \"dtype\", swizzle, rank, rank dims, rank box sizes) with constant "
                       "swizzle and rank 1..%d", TIR_TMA_MAX_RANK);
    return -1;
  }
  if (!tir_dtype_parse(((const tir_StringImm *)a->items[1])->value, &out->dtype)) {
    snprintf(why, cap, "tma_descriptor: unknown dtype '%s'", ((const tir_StringImm *)a->items[1])->value);
    return -1;
  }
  out->rank = (int)rank;
  out->swizzle = (int)sw;
  for (int i = 0; i < rank; i++) {
    if (!tir_is_const_int(a->items[4 + rank + i], &out->box[i])) {
      snprintf(why, cap, "tma_descriptor: box dimension %d is not a constant", i);
      return -1;
    }
    if (!eval(ctx, a->items[4 + i], &out->dims[i])) {
      snprintf(why, cap, "tma_descriptor: tensor dimension %d cannot be evaluated", i);
      return -1;
    }
  }
  return tir_tma_desc_check(out, why, cap);
}
