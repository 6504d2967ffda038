/* l_transform.c -- (being written) */
#include "l_tir.h"

void tirL_open_transform(lua_State *L) { (void)L; }
