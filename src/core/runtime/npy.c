/* npy.c -- .npy files, format version 1.0 (numpy's NEP 1: magic "\x93NUMPY", version,
 * little-endian header length, a Python dict literal padded to 64 bytes). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tir/error.h"
#include "tir/runtime.h"

static const char *descr_of(tir_DType t) {
  if (t.lanes != 1) return NULL;
  switch (t.code) {
    case TIR_DT_FLOAT: return t.bits == 16 ? "<f2" : t.bits == 32 ? "<f4" : "<f8";
    case TIR_DT_INT: return t.bits == 8 ? "|i1" : t.bits == 16 ? "<i2" : t.bits == 32 ? "<i4" : "<i8";
    case TIR_DT_UINT: return t.bits == 8 ? "|u1" : t.bits == 16 ? "<u2" : t.bits == 32 ? "<u4" : "<u8";
    case TIR_DT_BOOL: return "|b1";
    default: return NULL;
  }
}

int tir_nd_save_npy(const tir_NDArray *a, const char *path) {
  const char *descr = descr_of(a->dtype);
  if (!descr) {
    char s[32];
    return tir_error_set(TIR_ERR_TYPE, "nd.save", "dtype %s has no .npy equivalent", tir_dtype_str(a->dtype, s));
  }
  tir_NDArray *host = (tir_NDArray *)a;
  if (a->dev.type != TIR_DEV_CPU && !(host = tir_nd_to(a, (tir_Device){TIR_DEV_CPU, 0}))) return -1;
  char dict[512];
  int k = snprintf(dict, sizeof dict, "{'descr': '%s', 'fortran_order': False, 'shape': (", descr);
  for (int i = 0; i < a->ndim; i++) k += snprintf(dict + k, sizeof dict - (size_t)k, "%lld,%s", (long long)a->shape[i], i + 1 < a->ndim ? " " : "");
  k += snprintf(dict + k, sizeof dict - (size_t)k, "), }");
  int total = 10 + k + 1;
  int pad = (64 - total % 64) % 64;
  FILE *f = fopen(path, "wb");
  int rc = 0;
  if (!f) {
    rc = tir_error_set(TIR_ERR_IO, "nd.save", "cannot open '%s' for writing", path);
  } else {
    unsigned short hl = (unsigned short)(k + pad + 1);
    unsigned char head[10] = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0, (unsigned char)(hl & 0xff), (unsigned char)(hl >> 8)};
    fwrite(head, 1, 10, f);
    fwrite(dict, 1, (size_t)k, f);
    for (int i = 0; i < pad; i++) fputc(' ', f);
    fputc('\n', f);
    if (fwrite(host->data, 1, host->nbytes, f) != host->nbytes) rc = tir_error_set(TIR_ERR_IO, "nd.save", "short write to '%s'", path);
    if (fclose(f) != 0 && !rc) rc = tir_error_set(TIR_ERR_IO, "nd.save", "cannot write '%s'", path);
  }
  if (host != a) tir_nd_release(host);
  return rc;
}

tir_NDArray *tir_nd_load_npy(const char *path, tir_Device dev) {
  FILE *f = fopen(path, "rb");
  if (!f) {
    tir_error_set(TIR_ERR_IO, "nd.load", "cannot open '%s'", path);
    return NULL;
  }
  unsigned char head[12];
  tir_NDArray *a = NULL;
  char *dict = NULL;
  if (fread(head, 1, 10, f) != 10 || memcmp(head, "\x93NUMPY", 6) != 0) {
    tir_error_set(TIR_ERR_IO, "nd.load", "'%s' is not a .npy file", path);
    goto done;
  }
  size_t hl;
  if (head[6] == 1) {
    hl = head[8] | (size_t)head[9] << 8;
  } else {
    if (fread(head + 10, 1, 2, f) != 2) goto bad;
    hl = head[8] | (size_t)head[9] << 8 | (size_t)head[10] << 16 | (size_t)head[11] << 24;
  }
  if (hl > 1 << 20) goto bad;
  dict = calloc(1, hl + 1);
  if (fread(dict, 1, hl, f) != hl) goto bad;
  {
    char *d = strstr(dict, "'descr'"), *fo = strstr(dict, "'fortran_order'"), *sh = strstr(dict, "'shape'");
    if (!d || !fo || !sh) goto bad;
    char descr[16] = {0};
    if (sscanf(d, "'descr': '%15[^']'", descr) != 1) goto bad;
    if (strstr(fo, "True") == fo + strlen("'fortran_order': ")) {
      tir_error_set(TIR_ERR_IO, "nd.load", "'%s' is in Fortran order; only C order is supported", path);
      goto done;
    }
    static const struct {
      const char *d;
      const char *t;
    } map[] = {{"<f2", "float16"}, {"<f4", "float32"}, {"<f8", "float64"}, {"|i1", "int8"},  {"<i2", "int16"},
               {"<i4", "int32"},   {"<i8", "int64"},   {"|u1", "uint8"},   {"<u2", "uint16"}, {"<u4", "uint32"},
               {"<u8", "uint64"},  {"|b1", "bool"},    {"<i1", "int8"},    {"<u1", "uint8"}};
    tir_DType t;
    int found = 0;
    for (size_t i = 0; i < sizeof map / sizeof map[0]; i++)
      if (strcmp(map[i].d, descr) == 0) found = tir_dtype_parse(map[i].t, &t);
    if (!found) {
      tir_error_set(TIR_ERR_IO, "nd.load", "'%s' has unsupported dtype %s", path, descr);
      goto done;
    }
    int64_t shape[TIR_MAX_NDIM];
    int nd = 0;
    char *p = strchr(sh, '(');
    if (!p) goto bad;
    p++;
    while (*p && *p != ')') {
      while (*p == ' ' || *p == ',') p++;
      if (*p == ')') break;
      char *end;
      long long v = strtoll(p, &end, 10);
      if (end == p || nd >= TIR_MAX_NDIM || v < 0) goto bad;
      shape[nd++] = v;
      p = end;
    }
    tir_NDArray *host = tir_nd_empty(shape, nd, t, (tir_Device){TIR_DEV_CPU, 0});
    if (!host) goto done;
    if (fread(host->data, 1, host->nbytes, f) != host->nbytes) {
      tir_nd_release(host);
      tir_error_set(TIR_ERR_IO, "nd.load", "'%s' is truncated", path);
      goto done;
    }
    if (dev.type == TIR_DEV_CPU) a = host;
    else {
      a = tir_nd_to(host, dev);
      tir_nd_release(host);
    }
  }
  goto done;
bad:
  tir_error_set(TIR_ERR_IO, "nd.load", "'%s' has a malformed .npy header", path);
done:
  free(dict);
  fclose(f);
  return a;
}
