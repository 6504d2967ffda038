-- luarocks --lua-version 5.4 make     (from the repository root; Debian's luarocks, Lua 5.4)
-- installs require("tir") for a stock lua5.4: the Lua modules and the C module tir/core.so
-- (the tirlua program and the C library are installed by cmake --install: README).
rockspec_format = "3.0"
package = "tirlua"
version = "0.1.0-1"
source = {url = "git+file://."}
description = {
  summary = "A TensorIR-style tensor compiler for NVIDIA GPUs (C11 core, Lua 5.4 face)",
  detailed = [[
    Tensor expressions and TensorIR in Lua, TVM-style schedule primitives, CUDA code
    generation through NVRTC (opened at run time), a CPU interpreter and a warp-accurate
    simulator of the generated kernels.]],
  license = "Apache-2.0",
}
dependencies = {"lua >= 5.4, < 5.5"}
build = {
  type = "cmake",
  variables = {
    CMAKE_BUILD_TYPE = "Release",
    LUA_INCLUDE_DIR = "$(LUA_INCDIR)",
    TIRLUA_LUA_DIR = "$(LUADIR)",
    TIRLUA_LUA_CDIR = "$(LIBDIR)",
    TIRLUA_INSTALL_HOST = "OFF",
    TIRLUA_BUILD_TESTS = "OFF",
    CMAKE_INSTALL_PREFIX = "$(PREFIX)",
  },
}
