#include "util/json.h"

#include <stdlib.h>

char *json_dump_owned(const json_t *o)
{
    const size_t flags = JSON_COMPACT | JSON_PRESERVE_ORDER;
    size_t n = json_dumpb(o, NULL, 0, flags);
    if (n == 0)
        return NULL;
    char *buf = malloc(n + 1);
    if (!buf)
        return NULL;
    if (json_dumpb(o, buf, n, flags) != n) {
        free(buf);
        return NULL;
    }
    buf[n] = 0;
    return buf;
}
