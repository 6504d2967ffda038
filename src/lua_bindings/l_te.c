/* l_te.c -- (being written) */
#include "l_tir.h"

void tirL_open_te(lua_State *L) { (void)L; }
