#include "util/pathsearch.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

char *path_search(const char *list, const char *name)
{
    for (const char *p = list ? list : ""; *p;) {
        size_t n = strcspn(p, ":");
        if (n > 0 && p[0] == '/') {
            char *cand = NULL;
            if (asprintf(&cand, "%.*s/%s", (int)n, p, name) < 0)
                return NULL;
            struct stat st;
            if (stat(cand, &st) == 0 && S_ISREG(st.st_mode) && access(cand, X_OK) == 0)
                return cand;
            free(cand);
        }
        p += n;
        if (*p == ':')
            p++;
    }
    return NULL;
}
