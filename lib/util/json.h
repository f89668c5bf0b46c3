/* jansson helpers. */
#ifndef CCSB_UTIL_JSON_H
#define CCSB_UTIL_JSON_H

#include <jansson.h>

/* Serialises o compactly into a malloc'd string (released with free, i.e.
 * ccsb_free), independent of any allocator a host installed in jansson.
 * NULL on ENOMEM. */
char *json_dump_owned(const json_t *o);

#endif
