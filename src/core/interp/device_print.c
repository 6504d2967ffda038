/* device_print.c -- formatting of tir_print for the interpreter and the simulator, and the CUDA
 * format (include/tir/device_print.h). */
#include "tir/device_print.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tir/strbuf.h"

/* The next conversion at fmt[*i] ('%' already seen at fmt[*i - 1]): its spec without the
 * conversion letter in spec (flags, width, precision) and the letter; 0 when malformed. */
static int parse_conv(const char *fmt, size_t *i, char *spec, size_t cap, char *conv) {
  size_t n = 0;
  while (fmt[*i] && strchr("-+ #0", fmt[*i]) && n + 1 < cap) spec[n++] = fmt[(*i)++];
  while (fmt[*i] >= '0' && fmt[*i] <= '9' && n + 1 < cap) spec[n++] = fmt[(*i)++];
  if (fmt[*i] == '.') {
    spec[n++] = fmt[(*i)++];
    while (fmt[*i] >= '0' && fmt[*i] <= '9' && n + 1 < cap) spec[n++] = fmt[(*i)++];
  }
  spec[n] = '\0';
  *conv = fmt[*i];
  if (!*conv) return 0;
  (*i)++;
  return 1;
}

static int is_int_conv(char c) { return c && strchr("diuxXoc", c) != NULL; }
static int is_float_conv(char c) { return c && strchr("fFeEgGaA", c) != NULL; }

int tir_print_check(const char *fmt, const tir_DType *types, int n, char *why, size_t cap) {
  int k = 0;
  for (size_t i = 0; fmt[i];) {
    if (fmt[i++] != '%') continue;
    if (fmt[i] == '%') {
      i++;
      continue;
    }
    char spec[64], conv;
    if (!parse_conv(fmt, &i, spec, sizeof spec, &conv)) {
      snprintf(why, cap, "the format ends inside a conversion");
      return -1;
    }
    if (!is_int_conv(conv) && !is_float_conv(conv)) {
      snprintf(why, cap, "conversion '%%%s%c' is not supported (d i u x X o c for integers, f e g a for floats; no length "
               "modifiers or '*': the values' dtypes decide)", spec, conv);
      return -1;
    }
    if (k >= n) {
      snprintf(why, cap, "the format has more conversions than the %d value(s) given", n);
      return -1;
    }
    int isf = tir_dtype_is_float(types[k]);
    if (is_int_conv(conv) && isf) {
      snprintf(why, cap, "value %d is a float but conversion %d is '%%%c' (an integer one): use %%f/%%g or cast it", k + 1, k + 1, conv);
      return -1;
    }
    if (is_float_conv(conv) && !isf) {
      snprintf(why, cap, "value %d is an integer but conversion %d is '%%%c' (a float one): use %%d or cast it", k + 1, k + 1, conv);
      return -1;
    }
    k++;
  }
  if (k != n) {
    snprintf(why, cap, "the format has %d conversion(s) but %d value(s) were given", k, n);
    return -1;
  }
  return 0;
}

/* Walks fmt: literal text goes to text (a "%%" as the one character '%'), each conversion to
** conv as the printf directive both sides use -- "%<flags width precision>[ll]<letter>", ll on
** the integer conversions but %c -- with its letter.  Stops at a malformed conversion (formats
** are checked at construction). */
typedef struct {
  void (*text)(void *ctx, char c);
  void (*conv)(void *ctx, const char *directive, char letter);
  void *ctx;
} FmtWalk;

static void walk_format(const char *fmt, const FmtWalk *w) {
  for (size_t i = 0; fmt[i];) {
    char ch = fmt[i++];
    if (ch != '%') {
      w->text(w->ctx, ch);
      continue;
    }
    if (fmt[i] == '%') {
      w->text(w->ctx, '%');
      i++;
      continue;
    }
    char spec[64], conv, directive[80];
    if (!parse_conv(fmt, &i, spec, sizeof spec, &conv)) return;
    snprintf(directive, sizeof directive, "%%%s%s%c", spec, is_int_conv(conv) && conv != 'c' ? "ll" : "", conv);
    w->conv(w->ctx, directive, conv);
  }
}

static void cuda_text(void *ctx, char c) {
  if (c == '%') tir_sb_putc(ctx, '%'); /* a literal percent stays "%%" for printf */
  tir_sb_putc(ctx, c);
}

static void cuda_conv(void *ctx, const char *directive, char letter) {
  (void)letter;
  tir_sb_puts(ctx, directive);
}

char *tir_print_cuda_format(const char *fmt) {
  tir_StrBuf sb;
  tir_sb_init(&sb);
  FmtWalk w = {cuda_text, cuda_conv, &sb};
  walk_format(fmt, &w);
  if (!sb.data) tir_sb_puts(&sb, "");
  return tir_sb_take(&sb);
}

static pthread_mutex_t out_lock = PTHREAD_MUTEX_INITIALIZER;
static int capturing;
static tir_StrBuf captured;

typedef struct {
  tir_StrBuf sb;
  const tir_PrintValue *vals;
  int n, k;
} EmitState;

static void emit_text(void *ctx, char c) { tir_sb_putc(&((EmitState *)ctx)->sb, c); }

/* One conversion of one value, formatted by the C library with the directive the CUDA code
** passes to the device printf. */
static void emit_conv(void *ctx, const char *directive, char letter) {
  EmitState *e = ctx;
  char text[512];
  if (e->k >= e->n) return;
  const tir_PrintValue *v = &e->vals[e->k++];
  if (letter == 'c')
    snprintf(text, sizeof text, directive, (int)v->i);
  else if (is_int_conv(letter))
    snprintf(text, sizeof text, directive, (long long)v->i);
  else
    snprintf(text, sizeof text, directive, v->f);
  tir_sb_puts(&e->sb, text);
}

void tir_print_emit(const char *fmt, const tir_PrintValue *vals, int n) {
  EmitState e = {{0}, vals, n, 0};
  tir_sb_init(&e.sb);
  FmtWalk w = {emit_text, emit_conv, &e};
  walk_format(fmt, &w);
  tir_StrBuf sb = e.sb;
  pthread_mutex_lock(&out_lock);
  if (capturing) {
    if (sb.data) tir_sb_puts(&captured, sb.data);
  } else if (sb.data) {
    fputs(sb.data, stdout);
    fflush(stdout);
  }
  pthread_mutex_unlock(&out_lock);
  tir_sb_free(&sb);
}

int tir_print_selected(const int64_t *filter, const int64_t *coords) {
  for (int d = 0; d < TIR_PRINT_FILTER_ARGS; d++)
    if (filter[d] >= 0 && filter[d] != coords[d]) return 0;
  return 1;
}

void tir_print_capture_begin(void) {
  pthread_mutex_lock(&out_lock);
  tir_sb_free(&captured);
  capturing = 1;
  pthread_mutex_unlock(&out_lock);
}

char *tir_print_capture_end(void) {
  pthread_mutex_lock(&out_lock);
  capturing = 0;
  if (!captured.data) tir_sb_puts(&captured, "");
  char *s = tir_sb_take(&captured);
  pthread_mutex_unlock(&out_lock);
  return s;
}
