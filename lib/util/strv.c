#include "util/strv.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int strv_grow(struct strv *sv)
{
    if (sv->n + 2 <= sv->cap)
        return 0;
    size_t cap = sv->cap ? sv->cap * 2 : 8;
    char **v = realloc(sv->v, cap * sizeof *v);
    if (!v)
        return -1;
    sv->v = v;
    sv->cap = cap;
    return 0;
}

int strv_push_owned(struct strv *sv, char *s)
{
    if (!s || strv_grow(sv) < 0) {
        free(s);
        return -1;
    }
    sv->v[sv->n++] = s;
    sv->v[sv->n] = NULL;
    return 0;
}

int strv_push(struct strv *sv, const char *s)
{
    return strv_push_owned(sv, s ? strdup(s) : NULL);
}

int strv_pushf(struct strv *sv, const char *fmt, ...)
{
    va_list ap;
    char *s = NULL;
    va_start(ap, fmt);
    int r = vasprintf(&s, fmt, ap);
    va_end(ap);
    if (r < 0)
        return -1;
    return strv_push_owned(sv, s);
}

int strv_contains(const struct strv *sv, const char *s)
{
    for (size_t i = 0; i < sv->n; i++)
        if (strcmp(sv->v[i], s) == 0)
            return 1;
    return 0;
}

int strv_copy(struct strv *dst, const struct strv *src)
{
    for (size_t i = 0; i < src->n; i++)
        if (strv_push(dst, src->v[i]) < 0)
            return -1;
    return 0;
}

void strv_clear(struct strv *sv)
{
    for (size_t i = 0; i < sv->n; i++)
        free(sv->v[i]);
    free(sv->v);
    sv->v = NULL;
    sv->n = sv->cap = 0;
}
