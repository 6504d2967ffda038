/* swizzle.c -- the XOR swizzles of include/tir/swizzle.h (CuTe Swizzle<B, M, S> on byte
 * offsets; the PTX ISA's 32/64/128-byte shared-memory swizzling modes). */
#include "tir/swizzle.h"

#include <stdio.h>
#include <string.h>

int tir_swizzle_valid(int64_t sw) {
  if (sw == 0) return 1;
  if (sw < 0 || (sw >> 24) != 0) return 0;
  int b = tir_swizzle_bits(sw), m = tir_swizzle_base(sw), s = tir_swizzle_shift(sw);
  return b >= 1 && b <= 8 && m <= 12 && s >= b && s <= 16 && b + m + s <= 30;
}

int tir_swizzle_ptx_mode(int64_t sw) {
  if (!sw) return 0;
  if (tir_swizzle_base(sw) != 4 || tir_swizzle_shift(sw) != 3) return -1;
  switch (tir_swizzle_bits(sw)) {
    case 1: return 32;
    case 2: return 64;
    case 3: return 128;
    default: return -1;
  }
}

int tir_swizzle_parse(const char *s, int64_t *sw) {
  static const struct {
    const char *name;
    int bits;
  } modes[] = {{"32B", 1}, {"64B", 2}, {"128B", 3}};
  if (!strcmp(s, "none")) {
    *sw = 0;
    return 0;
  }
  for (size_t i = 0; i < sizeof modes / sizeof modes[0]; i++)
    if (!strcmp(s, modes[i].name)) {
      *sw = tir_swizzle_pack(modes[i].bits, 4, 3);
      return 0;
    }
  return -1;
}

const char *tir_swizzle_str(int64_t sw, char *buf) {
  int mode = tir_swizzle_ptx_mode(sw);
  if (mode == 0) snprintf(buf, 24, "none");
  else if (mode > 0) snprintf(buf, 24, "%dB", mode);
  else snprintf(buf, 24, "{%d, %d, %d}", tir_swizzle_bits(sw), tir_swizzle_base(sw), tir_swizzle_shift(sw));
  return buf;
}

int64_t tir_swizzle_for_rows(int64_t row_bytes) {
  if (row_bytes < 32 || (row_bytes & (row_bytes - 1))) return 0;
  int lg = 0;
  while ((INT64_C(1) << lg) < row_bytes) lg++;
  /* rows of 2^lg bytes: the row index starts at bit lg.  Up to 128 bytes several rows share a
   * 128-byte line and the PTX mode of that width XORs the row bits above the line (bit 7 on)
   * into the chunk bits inside the row; wider rows XOR their low three row bits. */
  if (lg <= 7) return tir_swizzle_pack(lg - 4, 4, 3);
  return tir_swizzle_pack(3, 4, lg - 4);
}
