/* l_interp.c -- (being written) */
#include "l_tir.h"

void tirL_open_interp(lua_State *L) { (void)L; }
