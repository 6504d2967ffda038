#!/bin/sh
# test.sh -- builds tirlua twice (plain, and with AddressSanitizer + UndefinedBehaviorSanitizer)
# and runs every test in both: C unit tests, the embedding example, the busted specs (CPU;
# GPU specs are tagged #gpu and run with scripts/gpu/run_all.sh on a GPU machine) and the
# scripts that must fail.  Exits non-zero on any failure.
set -e
cd "$(dirname "$0")/.."
sh scripts/setup.sh build
echo "== tests (plain build)"
ctest --test-dir build --output-on-failure
sh scripts/setup.sh build-asan -DTIRLUA_SANITIZE=ON
echo "== tests (AddressSanitizer + UndefinedBehaviorSanitizer)"
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  ctest --test-dir build-asan --output-on-failure
