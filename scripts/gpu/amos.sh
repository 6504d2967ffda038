#!/bin/sh
# Runs on the GPU machine (device tool) from a tree holding the tirlua binary ($T, default
# ./tirlua or .carry/bin/tirlua) and busted's modules (.carry/lua): issue 10's AMOS-style
# mapping (docs/AMOS.md), logs under $OUT:
#   sh scripts/gpu/amos.sh [what ...]    what: specs example (default: both)
#     specs    tests/spec/gpu_amos_spec.lua (#gpu): measured candidates at real sizes, conv2d /
#              dilated / 7x7 first layer vs float64, int8 IMMA and dp4a exact, matmul layouts
#     example  scripts/examples/amos_mapping.lua at ResNet-50-like sizes (tables with measured
#              times, the fastest applied, checked vs float64, TFLOP/s)
OUT=${OUT:-out}
mkdir -p "$OUT"
export TIRLUA_PATH="$PWD/lib" TIRLUA_LUA_MODULES="$PWD/.carry/lua"
T=${T:-$PWD/tirlua}
[ -x "$T" ] || T="$PWD/.carry/bin/tirlua"
what=${*:-specs example}
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > "$OUT/nvidia-smi.txt" 2>&1
status=0
for w in $what; do
  start=$(date +%s)
  case $w in
    specs) "$T" tests/run_busted.lua --run=gpu -o utfTerminal tests/spec/gpu_amos_spec.lua > "$OUT/gpu_amos_spec.log" 2>&1 || status=1
           tail -40 "$OUT/gpu_amos_spec.log" ;;
    example) "$T" scripts/examples/amos_mapping.lua > "$OUT/amos_mapping.log" 2>&1 || status=1; cat "$OUT/amos_mapping.log" ;;
    *) echo "amos.sh: unknown part '$w' (specs example)"; status=1 ;;
  esac
  echo "-- $w: $(( $(date +%s) - start )) s"
done
exit $status
