#!/bin/sh
# Copies Debian's busted (and the Lua modules it needs) into .carry/lua so that GPU specs
# can run through tirlua on the GPU machine, which has no Lua:
#   TIRLUA_LUA_MODULES=.carry/lua build/tirlua tests/run_busted.lua --run=gpu
set -e
dest=${1:-.carry/lua}
mkdir -p "$dest/share" "$dest/lib"
for m in busted busted.lua luassert say pl cliargs cliargs.lua mediator.lua dkjson.lua term system; do
  [ -e "/usr/share/lua/5.4/$m" ] && cp -rL "/usr/share/lua/5.4/$m" "$dest/share/"
done
for m in term system lfs.so; do
  [ -e "/usr/lib/x86_64-linux-gnu/lua/5.4/$m" ] && cp -rL "/usr/lib/x86_64-linux-gnu/lua/5.4/$m" "$dest/lib/"
done
echo "packed busted into $dest"
