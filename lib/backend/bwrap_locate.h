/* Where the bubblewrap backend finds its helper (see bwrap_locate.c). */
#ifndef CCSB_BACKEND_BWRAP_LOCATE_H
#define CCSB_BACKEND_BWRAP_LOCATE_H

#include <stddef.h>

/* The absolute path of a trustworthy ccsb-init (malloc'd in *out), or
 * CCSB_E_LAUNCH with every candidate tried and why it was refused. */
int bwrap_locate_helper(char **out, char *err, size_t errlen);

#endif
