/* nd_format.c -- an NDArray's values as text in numpy's repr style (numpy
 * core/arrayprint.py: floats with the fewest digits (at most 8) that read back as the same
 * value of the dtype and their decimal points aligned (right-aligned when one is in
 * e-notation, NaN or inf), integers right-aligned; beyond 1000 elements every dimension longer
 * than 6 shows its first and last 3 entries around "...", rows wrapped
 * at 75 columns, one blank line between the blocks of 3-d and higher arrays). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tir/runtime.h"
#include "tir/strbuf.h"

#define THRESHOLD 1000
#define EDGE 3
#define LINE_WIDTH 75

typedef struct {
  const tir_NDArray *a;
  int summarize, width, indent;
  int lw, rw, sci; /* floats: widest part before the '.', from the '.' on; any in e-notation */
  tir_StrBuf sb;
  long line_start; /* offset in sb of the current line's first column (negative on the first
                    * line: the caller's prefix is before sb) */
} Fmt;

static void format_elem(const tir_NDArray *a, int64_t flat, char *out, size_t cap) {
  tir_DType t = a->dtype;
  if (t.code == TIR_DT_BOOL) {
    snprintf(out, cap, "%s", tir_nd_get_i(a, flat) ? "True" : "False");
  } else if (tir_dtype_is_float(t)) {
    double v = tir_nd_get_f(a, flat);
    if (isnan(v)) snprintf(out, cap, "nan");
    else if (isinf(v)) snprintf(out, cap, "%s", v < 0 ? "-inf" : "inf");
    else {
      /* the fewest significant digits (at most 8, numpy's precision) that read back as the
       * same value of the array's dtype (numpy's floatmode "maxprec") */
      unsigned char buf[8];
      int p = 1;
      for (; p <= 8; p++) {
        snprintf(out, cap, "%.*g", p, v);
        tir_store_scalar_f(buf, t, 0, strtod(out, NULL));
        if (tir_load_scalar_f(buf, t, 0) == v) break;
      }
      if (p > 8) p = 8;
      /* %g switches to e-notation once the exponent reaches the precision (10 with one digit
       * is "1e+01"); numpy writes values in [1e-4, 1e16) positionally: "10.", "1000." */
      const char *e = strchr(out, 'e');
      if (e) {
        int x = atoi(e + 1);
        if (x >= -4 && x < 16) snprintf(out, cap, "%.*f", p - 1 - x > 0 ? p - 1 - x : 0, v);
      }
      if (!strpbrk(out, ".e")) strncat(out, ".", cap - strlen(out) - 1); /* 2 prints as "2." */
    }
  } else {
    snprintf(out, cap, "%lld", (long long)tir_nd_get_i(a, flat));
  }
}

/* calls fn on every flat index shown (dimension by dimension, eliding long ones) */
static int shown(const Fmt *f, int dim, int64_t i) {
  int64_t n = f->a->shape[dim];
  return !f->summarize || n <= 2 * EDGE || i < EDGE || i >= n - EDGE;
}

static void widths(Fmt *f, int dim, int64_t base) {
  const tir_NDArray *a = f->a;
  for (int64_t i = 0; i < a->shape[dim]; i++) {
    if (!shown(f, dim, i)) continue;
    int64_t flat = base * a->shape[dim] + i;
    if (dim == a->ndim - 1) {
      char s[64];
      format_elem(a, flat, s, sizeof s);
      int w = (int)strlen(s);
      if (w > f->width) f->width = w;
      const char *dot = strchr(s, '.');
      if (strpbrk(s, "en")) f->sci = 1; /* e-notation, nan, inf: aligned right */
      int l = dot ? (int)(dot - s) : w;
      if (l > f->lw) f->lw = l;
      if (w - l > f->rw) f->rw = w - l;
    } else {
      widths(f, dim + 1, flat);
    }
  }
}

static void put_item(Fmt *f, const char *s, int last_dim_indent) {
  /* wrap a row that would pass the line width */
  if ((long)f->sb.len - f->line_start + (long)strlen(s) + 2 > LINE_WIDTH) {
    /* drop the trailing space of ", " */
    if (f->sb.len && f->sb.data[f->sb.len - 1] == ' ') f->sb.data[--f->sb.len] = '\0';
    tir_sb_putc(&f->sb, '\n');
    f->line_start = (long)f->sb.len;
    tir_sb_indent(&f->sb, last_dim_indent);
  }
  tir_sb_puts(&f->sb, s);
}

/* the separator before an item of dimension dim that is not its first */
static void separator(Fmt *f, int dim, int col) {
  if (dim == f->a->ndim - 1) {
    tir_sb_puts(&f->sb, ", ");
    return;
  }
  tir_sb_putc(&f->sb, ',');
  for (int k = 0; k < f->a->ndim - dim - 1; k++) tir_sb_putc(&f->sb, '\n'); /* blank lines between blocks */
  f->line_start = (long)f->sb.len;
  tir_sb_indent(&f->sb, col);
}

static void body(Fmt *f, int dim, int64_t base) {
  const tir_NDArray *a = f->a;
  int64_t n = a->shape[dim];
  int col = f->indent + dim + 1; /* column of the first element inside this bracket */
  tir_sb_putc(&f->sb, '[');
  for (int64_t i = 0; i < n; i++) {
    if (!shown(f, dim, i)) {
      if (i == EDGE) { /* the elided middle: one "..." item */
        separator(f, dim, col);
        if (dim == a->ndim - 1) put_item(f, "...", col);
        else tir_sb_puts(&f->sb, "...");
      }
      continue;
    }
    if (i > 0) separator(f, dim, col);
    int64_t flat = base * n + i;
    if (dim == a->ndim - 1) {
      char s[64], padded[160];
      format_elem(a, flat, s, sizeof s);
      if (tir_dtype_is_float(a->dtype) && !f->sci) {
        /* numpy's alignment of the decimal points: "[ 1. ,  2.5]" */
        const char *dot = strchr(s, '.');
        int l = dot ? (int)(dot - s) : (int)strlen(s);
        snprintf(padded, sizeof padded, "%*s%.*s%s%*s", f->lw - l, "", l, s, s + l, f->rw - (int)strlen(s + l), "");
      } else {
        snprintf(padded, sizeof padded, "%*s", f->width, s);
      }
      put_item(f, padded, col);
    } else {
      body(f, dim + 1, flat);
    }
  }
  tir_sb_putc(&f->sb, ']');
}

char *tir_nd_format(const tir_NDArray *a, int indent) {
  tir_NDArray *host = NULL;
  if (a->dev.type != TIR_DEV_CPU) {
    host = tir_nd_to(a, (tir_Device){TIR_DEV_CPU, 0});
    if (!host) return NULL;
    a = host;
  }
  Fmt f = {a, tir_nd_numel(a) > THRESHOLD, 0, indent, 0, 0, 0, {0}, -(long)indent};
  tir_sb_init(&f.sb);
  if (a->ndim == 0) {
    char s[64];
    format_elem(a, 0, s, sizeof s);
    tir_sb_puts(&f.sb, s);
  } else if (tir_nd_numel(a) == 0) {
    tir_sb_puts(&f.sb, "[]");
  } else {
    widths(&f, 0, 0);
    body(&f, 0, 0);
  }
  if (host) tir_nd_release(host);
  return tir_sb_take(&f.sb);
}
