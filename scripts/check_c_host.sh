#!/bin/sh
# check_c_host.sh BUILD_DIR -- compiles scripts/examples/embed.c with the compile and link
# line README.md gives (between <!-- c-host-line --> markers), with build/ replaced by
# BUILD_DIR and the output in a temporary directory, runs it and expects "embed: ok".
set -e
cd "$(dirname "$0")/.."
build=${1:-build}
line=$(sed -n '/<!-- c-host-line -->/,/<!-- end c-host-line -->/p' README.md | grep -v '^<!--' | sed 's/^ *//')
[ -n "$line" ] || { echo "check_c_host: no c-host-line in README.md"; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cmd=$(printf '%s\n' "$line" | sed "s#build/#$build/#g; s#-o embed#-o $tmp/embed#")
echo "+ $cmd"
sh -c "$cmd"
"$tmp/embed" scripts/examples/embed_kernel.lua
