/* strbuf.c -- growable strings. Allocation failure is fatal only here: out of memory is
 * not a user error the core can recover from meaningfully. */
#include "tir/strbuf.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void grow(tir_StrBuf *sb, size_t need) {
  if (sb->len + need + 1 <= sb->cap) return;
  size_t cap = sb->cap ? sb->cap : 64;
  while (cap < sb->len + need + 1) cap *= 2;
  char *p = realloc(sb->data, cap);
  if (!p) {
    fputs("tirlua: out of memory\n", stderr);
    abort();
  }
  sb->data = p;
  sb->cap = cap;
}

void tir_sb_init(tir_StrBuf *sb) { sb->data = NULL, sb->len = 0, sb->cap = 0; }
void tir_sb_free(tir_StrBuf *sb) { free(sb->data); tir_sb_init(sb); }

void tir_sb_putc(tir_StrBuf *sb, char c) {
  grow(sb, 1);
  sb->data[sb->len++] = c;
  sb->data[sb->len] = 0;
}

void tir_sb_puts(tir_StrBuf *sb, const char *s) {
  size_t n = strlen(s);
  grow(sb, n);
  memcpy(sb->data + sb->len, s, n + 1);
  sb->len += n;
}

void tir_sb_vprintf(tir_StrBuf *sb, const char *fmt, va_list ap) {
  va_list ap2;
  va_copy(ap2, ap);
  int n = vsnprintf(NULL, 0, fmt, ap2);
  va_end(ap2);
  if (n < 0) return;
  grow(sb, (size_t)n);
  vsnprintf(sb->data + sb->len, (size_t)n + 1, fmt, ap);
  sb->len += (size_t)n;
}

void tir_sb_printf(tir_StrBuf *sb, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  tir_sb_vprintf(sb, fmt, ap);
  va_end(ap);
}

void tir_sb_indent(tir_StrBuf *sb, int n) {
  for (int i = 0; i < n; i++) tir_sb_putc(sb, ' ');
}

char *tir_sb_take(tir_StrBuf *sb) {
  char *s = sb->data ? sb->data : tir_strdup("");
  tir_sb_init(sb);
  return s;
}

char *tir_strdup(const char *s) {
  size_t n = strlen(s ? s : "");
  char *p = malloc(n + 1);
  if (!p) {
    fputs("tirlua: out of memory\n", stderr);
    abort();
  }
  memcpy(p, s ? s : "", n + 1);
  return p;
}

char *tir_strprintf(const char *fmt, ...) {
  tir_StrBuf sb;
  tir_sb_init(&sb);
  va_list ap;
  va_start(ap, fmt);
  tir_sb_vprintf(&sb, fmt, ap);
  va_end(ap);
  return tir_sb_take(&sb);
}
