/* l_schedule.c -- (being written) */
#include "l_tir.h"

void tirL_open_schedule(lua_State *L) { (void)L; }
