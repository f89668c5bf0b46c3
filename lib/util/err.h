/* Writing an error message into a caller's buffer. */
#ifndef CCSB_UTIL_ERR_H
#define CCSB_UTIL_ERR_H

#include <stddef.h>

/* Formats into buf (if non-NULL) and returns code, so callers can
 * `return errf(buf, len, CCSB_E_SPEC, "...")`. */
int errf(char *buf, size_t len, int code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

#endif
