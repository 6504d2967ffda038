/* check.h -- the C unit tests' CHECK: counts checks and failures, reports the failing line;
 * main prints "N passed, N failed" and returns 1 when any failed. */
#ifndef TIR_TEST_CHECK_H
#define TIR_TEST_CHECK_H

#include <stdio.h>

static int failures = 0, checks = 0;
#define CHECK(cond)                                                         \
  do {                                                                      \
    checks++;                                                               \
    if (!(cond)) {                                                          \
      failures++;                                                           \
      fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
    }                                                                       \
  } while (0)

#endif
