/* l_runtime.c -- (being written) */
#include "l_tir.h"

void tirL_open_runtime(lua_State *L) { (void)L; }
