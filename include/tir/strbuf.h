/* strbuf.h -- a growable string used by the printer, codegen and error rendering. */
#ifndef TIR_STRBUF_H
#define TIR_STRBUF_H

#include <stdarg.h>
#include <stddef.h>

typedef struct {
  char *data;
  size_t len, cap;
} tir_StrBuf;

void tir_sb_init(tir_StrBuf *sb);
void tir_sb_free(tir_StrBuf *sb);
void tir_sb_putc(tir_StrBuf *sb, char c);
void tir_sb_puts(tir_StrBuf *sb, const char *s);
void tir_sb_printf(tir_StrBuf *sb, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void tir_sb_vprintf(tir_StrBuf *sb, const char *fmt, va_list ap);
void tir_sb_indent(tir_StrBuf *sb, int n);
/* Returns the malloc'd string and resets sb. */
char *tir_sb_take(tir_StrBuf *sb);
char *tir_strdup(const char *s);
char *tir_strprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
