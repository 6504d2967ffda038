#!/bin/sh
# final_round_stop12.sh MODE COMMIT -- the lead's closing GPU round on the H200 (README: GPU tests; it replaces the stop-10 and stop-11 scripts, which are in git history).
# From the repository root with the tirlua binary in .carry/bin and busted in .carry/lua; carry
# [".carry/bin", ".carry/lua"] (or a tree tarball, see PROTOCOL).  MODE:
#   bench  examples, wgmma fp16/bf16 defaults, bias+relu epilogue, int8 + qgemm, mma.sync, ResNet-50 (one process)
#   specs  every spec file tagged #gpu, one busted process per file, $P (default 6) at once: the suite's
#          ~400 s is mostly NVRTC builds on the CPU, which the 16 cores run side by side
# Logs go to /tmp/w and come back as $OUT/logs.tgz + $OUT/results.jsonl, refreshed after every step.
MODE=$1; R=$OUT; W=/tmp/w; mkdir -p $W; export OUT=$W
T=$PWD/.carry/bin/tirlua; export T TIRLUA_PATH=$PWD/lib TIRLUA_LUA_MODULES=$PWD/.carry/lua TIRLUA_COMMIT=$2
pack() { tar czf $R/logs.tgz -C $W . 2>/dev/null; cp $W/results.jsonl $R/ 2>/dev/null; echo "== $1 done at $(( $(date +%s) - t0 )) s"; }
t0=$(date +%s)
nvidia-smi --query-gpu=name,driver_version,clocks.sm,power.draw --format=csv,noheader
if [ "$MODE" = specs ]; then
  "$T" scripts/examples/matmul.lua > $W/main.log 2>&1; echo "main job rc=$?"; tail -2 $W/main.log
  grep -l "#gpu" tests/spec/*_spec.lua | xargs -P ${P:-6} -I{} sh -c \
    'f={}; n=$(basename $f .lua); timeout 300 "$T" tests/run_busted.lua --run=gpu -o utfTerminal "$f" > /tmp/w/spec_$n.log 2>&1; echo "$n rc=$?" >> /tmp/w/spec_rc.txt'
  sort $W/spec_rc.txt; grep -h -E "successes" $W/spec_*.log | awk '{s+=$1; f+=$4; e+=$7} END {print "TOTAL successes", s, "failures", f, "errors", e}'
  grep -h -E "^(Error|Failure) " $W/spec_*.log | head -20; pack specs; exit 0
fi
timeout 60 sh scripts/gpu/round.sh examples > $W/r_examples.txt 2>&1; grep -E "^--|^==" $W/r_examples.txt | tail -22; pack examples
timeout 40 sh scripts/gpu/wgmma_defaults.sh square:25 > $W/r_wgmma.txt 2>&1; grep -hE "^wgmma|^auto" $W/*.log | tail -8; pack wgmma
# the helpers' headline measurements (int8, qgemm, mma.sync, small M, conv layer picks): .carry/closing/NAME.sh,
# each from the repository root with $T, logs under $OUT, under its own timeout
for f in $PWD/.carry/closing/*.sh; do [ -f "$f" ] || continue; n=$(basename $f .sh)
  timeout ${CLOSING_S:-45} sh $f > $W/closing_$n.txt 2>&1; echo "closing $n rc=$?"; tail -12 $W/closing_$n.txt | cut -c1-200; pack $n; done
TIRLUA_BENCH_OUT=$W/conv2d.md timeout 150 $T bench/conv2d.lua --variants=wgmma --layer_variants=1:implicit > $W/conv2d.log 2>&1; grep -iE "total|geomean" $W/conv2d.log | tail -4; pack conv
