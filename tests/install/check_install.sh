#!/bin/sh
# check_install.sh BUILD_DIR SOURCE_DIR -- proves the installed tree works, not the build tree:
#  1. cmake --install into a temporary prefix;
#  2. a C host compiled with exactly the README's line (pkg-config tirlua) runs and finds the
#     Lua modules in the prefix; so does scripts/examples/embed.c;
#  3. the installed bin/tirlua and a stock lua5.4 (LUA_PATH/LUA_CPATH into the prefix) run tir
#     from the prefix;
#  4. luarocks --lua-version 5.4 make (the rockspec at the root) into a temporary tree, and a
#     stock lua5.4 requires tir from there.
# The source tree is moved out of reach of the fallbacks by checking where tir was loaded from.
set -eu
build=$(cd "$1" && pwd)
src=$(cd "$2" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
P=$tmp/prefix
cmake --install "$build" --prefix "$P" > "$tmp/install.log"
for f in bin/tirlua lib/libtirlua.a lib/libtirlua.so include/tir/tirlua.h lib/pkgconfig/tirlua.pc \
         share/lua/5.4/tir/init.lua lib/lua/5.4/tir/core.so; do
  [ -e "$P/$f" ] || { echo "install: missing $P/$f"; exit 1; }
done
echo "install: tree complete under the prefix"

export PKG_CONFIG_PATH="$P/lib/pkgconfig"
# the README's line
cc "$src/tests/install/host.c" -o "$tmp/host" $(pkg-config --cflags --libs tirlua) -Wl,-rpath,$(pkg-config --variable=libdir tirlua)
out=$("$tmp/host")
echo "$out"
case $out in *"tir from $P/share/lua/5.4/tir/init.lua"*"host ok"*) ;; *) echo "install: host did not use the prefix"; exit 1 ;; esac
cc "$src/scripts/examples/embed.c" -o "$tmp/embed" $(pkg-config --cflags --libs tirlua) -Wl,-rpath,$(pkg-config --variable=libdir tirlua) -lm
(cd "$tmp" && ./embed "$src/scripts/examples/embed_kernel.lua") > "$tmp/embed.log" 2>&1 || { cat "$tmp/embed.log"; exit 1; }
echo "install: embed.c built with pkg-config runs"
# static linking works too
cc "$src/tests/install/host.c" -o "$tmp/host_static" -I"$P/include" $(pkg-config --cflags lua5.4) "$P/lib/libtirlua.a" \
   $(pkg-config --libs lua5.4) -lm -ldl -lpthread
"$tmp/host_static" | grep -q "host ok" || { echo "install: static host failed"; exit 1; }
echo "install: static host runs"

out=$("$P/bin/tirlua" -e 'print(package.searchpath("tir", package.path))')
[ "$out" = "$P/share/lua/5.4/tir/init.lua" ] || { echo "install: bin/tirlua loaded tir from $out"; exit 1; }
echo "install: bin/tirlua uses the prefix"

STOCK='local tir = require("tir")
local te = tir.te
local A = te.placeholder({4}, "float32", "A")
local B = te.compute({4}, function(i) return A[{i}] * 2.0 end, "B")
local a = tir.nd.array({1, 2, 3, 4}, "float32")
local b = tir.nd.empty({4}, "float32")
tir.interpret(te.create_prim_func({A, B}), {a, b})
assert(b:get(3) == 8.0)
print(package.searchpath("tir", package.path) .. " " .. package.searchpath("tir.core", package.cpath))'
out=$(LUA_PATH="$P/share/lua/5.4/?.lua;$P/share/lua/5.4/?/init.lua;;" LUA_CPATH="$P/lib/lua/5.4/?.so;;" lua5.4 -e "$STOCK")
[ "$out" = "$P/share/lua/5.4/tir/init.lua $P/lib/lua/5.4/tir/core.so" ] || { echo "install: stock lua5.4 got $out"; exit 1; }
echo "install: stock lua5.4 requires tir from the prefix"

if command -v luarocks > /dev/null; then
  R=$tmp/rocks
  # luarocks builds in the source tree (build.luarocks/): work on a copy of the tracked files
  mkdir -p "$tmp/srccopy"
  (cd "$src" && git ls-files -z --cached --others --exclude-standard | tar --null -T - -cf -) | (cd "$tmp/srccopy" && tar -xf -)
  (cd "$tmp/srccopy" && luarocks --lua-version 5.4 --tree "$R" make > "$tmp/rocks.log" 2>&1) || { tail -30 "$tmp/rocks.log"; exit 1; }
  out=$(eval "$(luarocks --lua-version 5.4 --tree "$R" path)" && lua5.4 -e "$STOCK")
  [ "$out" = "$R/share/lua/5.4/tir/init.lua $R/lib/lua/5.4/tir/core.so" ] || { echo "install: luarocks tree gave $out"; exit 1; }
  echo "install: luarocks make + stock lua5.4 work"
else
  echo "install: luarocks missing (scripts/setup.sh installs it)"; exit 1
fi
echo "install: all checks passed"
