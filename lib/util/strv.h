/* A growable NULL-terminated vector of owned strings. */
#ifndef CCSB_UTIL_STRV_H
#define CCSB_UTIL_STRV_H

#include <stddef.h>

struct strv {
    char **v; /* NULL-terminated when n > 0 or after strv_terminate */
    size_t n;
    size_t cap;
};

#define STRV_INIT {NULL, 0, 0}

/* Appends a copy of s. Returns 0 or -1 (ENOMEM). */
int strv_push(struct strv *sv, const char *s);
/* Appends s itself (takes ownership). Returns 0 or -1; frees s on error. */
int strv_push_owned(struct strv *sv, char *s);
int strv_pushf(struct strv *sv, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int strv_contains(const struct strv *sv, const char *s);
int strv_copy(struct strv *dst, const struct strv *src);
void strv_clear(struct strv *sv);

#endif
