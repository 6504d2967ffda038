#!/bin/sh
# Runs on the GPU machine (device tool) from a tree holding the tirlua binary ($T, default
# ./tirlua or .carry/bin/tirlua) and busted's modules (.carry/lua): the cuDNN best-engine
# reference and the AMOS cost-model measurements (issue 10), logs and rows under $OUT:
#   sh scripts/gpu/cudnn_amos.sh [what ...]    what: specs amos cudnn conv (default: all four)
#     specs  tests/spec/cudnn_spec.lua #gpu: every cuDNN search path (best, backend, legacy,
#            legacy_ex) on 1x1 / strided / 7x7 C = 3 / dilated / grouped layers vs float64
#     amos   bench/amos_calibrate.lua --measure: candidate mappings of 14 workloads timed
#            ($OUT/amos_calibration.lua; fit it here with bench/amos_calibrate.lua --fit)
#     cudnn  bench/conv2d.lua --cudnn_only --cudnn_candidates: the reference alone (every cuDNN
#            candidate per layer, the chosen one against legacy Find's pick; no tirlua kernel)
#     conv   bench/conv2d.lua --variants=implicit --cudnn_candidates (ResNet-50's 23 layers at
#            N = 128 vs the best cuDNN engine; every candidate cuDNN ran is listed)
# Each part runs under `timeout` ($SPECS_S, $AMOS_S, $CUDNN_S, $CONV_S seconds) so one slow part leaves
# the others' logs.
OUT=${OUT:-out}
mkdir -p "$OUT"
export TIRLUA_PATH="$PWD/lib" TIRLUA_LUA_MODULES="$PWD/.carry/lua"
T=${T:-$PWD/tirlua}
[ -x "$T" ] || T="$PWD/.carry/bin/tirlua"
what=${*:-specs amos cudnn conv}
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > "$OUT/nvidia-smi.txt" 2>&1
status=0
for w in $what; do
  start=$(date +%s)
  case $w in
    specs) timeout "${SPECS_S:-30}" "$T" tests/run_busted.lua --run=gpu -o utfTerminal tests/spec/cudnn_spec.lua > "$OUT/cudnn_spec.log" 2>&1 || status=1
           tail -25 "$OUT/cudnn_spec.log" ;;
    amos) timeout "${AMOS_S:-60}" "$T" bench/amos_calibrate.lua --measure --per=14 > "$OUT/amos_calibrate.log" 2>&1 || status=1
          tail -5 "$OUT/amos_calibrate.log" ;;
    cudnn) TIRLUA_BENCH_OUT="$OUT/conv2d_cudnn.md" timeout "${CUDNN_S:-120}" "$T" bench/conv2d.lua --cudnn_only --cudnn_candidates \
             > "$OUT/conv2d_cudnn.log" 2>&1 || status=1
           grep -v "^      " "$OUT/conv2d_cudnn.log" | tail -30 ;;
    conv) TIRLUA_BENCH_OUT="$OUT/conv2d.md" timeout "${CONV_S:-300}" "$T" bench/conv2d.lua --variants=implicit --cudnn_candidates ${CONV_ARGS:-} \
            > "$OUT/conv2d.log" 2>&1 || status=1
          grep -v "^      " "$OUT/conv2d.log" | tail -60 ;;
    *) echo "cudnn_amos.sh: unknown part '$w' (specs amos cudnn conv)"; status=1 ;;
  esac
  echo "-- $w: $(( $(date +%s) - start )) s"
done
exit $status
