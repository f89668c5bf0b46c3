#include "util/err.h"

#include <stdarg.h>
#include <stdio.h>

int errf(char *buf, size_t len, int code, const char *fmt, ...)
{
    if (buf && len) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(buf, len, fmt, ap);
        va_end(ap);
    }
    return code;
}
