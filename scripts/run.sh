#!/bin/sh
# run.sh -- the main job: set up, build, and run the matmul example
# (GPU when one exists, else the CPU interpreter).  Usage: scripts/run.sh [M N K]
set -e
cd "$(dirname "$0")/.."
sh scripts/setup.sh build
exec build/tirlua scripts/examples/matmul.lua "$@"
