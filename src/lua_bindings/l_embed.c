/* l_embed.c -- (being written) */
#include "l_tir.h"
#include "tir/tirlua.h"
void tirlua_set_lib_dir(const char *dir) { (void)dir; }
