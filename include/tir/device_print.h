/* device_print.h -- printf from inside kernels (the builtin tir_print; T.print / tir.print).
 *
 * Call: tir_print(fmt, tx, ty, tz, bx, by, bz, v1, ..., vn): fmt a StringImm, then the filter --
 * which thread (threadIdx x/y/z) and block (blockIdx x/y/z) prints, -1 for any -- then the
 * values.  The CUDA codegen emits `if (filter) printf(fmt', (long long)v / (double)v ...)`,
 * the interpreter and the simulator print the same text for the same threads (formatting each
 * conversion with the C library's printf, as the CUDA driver's device printf does).
 *
 * Formats: printf conversions d i u x X o c (integer values) and f F e E g G a A (float values),
 * flags "-+ #0", width and precision as numbers (no '*'), no length modifiers (the values' own
 * dtypes decide: integers are printed as 64-bit, floats as double), "%%".  Order: with one
 * thread printing (the default filter: thread 0 of block 0) lines come in program order on every
 * executor; with several, the GPU's order between threads is unspecified (the simulator prints
 * threads in thread-index order).
 */
#ifndef TIR_DEVICE_PRINT_H
#define TIR_DEVICE_PRINT_H

#include <stddef.h>
#include <stdint.h>

#include "tir/dtype.h"

#define TIR_PRINT_FILTER_ARGS 6 /* tx ty tz bx by bz after the format */

/* Checks fmt against the value dtypes: 0, or -1 with a reason in why. */
int tir_print_check(const char *fmt, const tir_DType *types, int n, char *why, size_t cap);
/* The format the CUDA code passes to printf: integer conversions get "ll" (malloc'd). */
char *tir_print_cuda_format(const char *fmt);

typedef struct {
  int is_float;
  int64_t i;
  double f;
} tir_PrintValue;

/* Formats and writes one print (to stdout, flushed, or to the capture buffer). */
void tir_print_emit(const char *fmt, const tir_PrintValue *vals, int n);
/* Whether thread (tx, ty, tz) of block (bx, by, bz) passes the filter f[6] (-1: any). */
int tir_print_selected(const int64_t *filter, const int64_t *coords);

/* Capturing (for tests): begin collects every later print instead of writing it; end returns the
 * text collected (malloc'd) and writes to stdout again. */
void tir_print_capture_begin(void);
char *tir_print_capture_end(void);

#endif
