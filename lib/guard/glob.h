/*
 * Deny-write globs on the final path component. "name" forbids a new
 * non-directory name; "name/" (directory-shaped) forbids a new directory.
 * Matching is fnmatch(3) without FNM_PERIOD and case-insensitive, so
 * "*.key" also covers ".key" and "SERVER.KEY".
 */
#ifndef CCSB_GUARD_GLOB_H
#define CCSB_GUARD_GLOB_H

#include <stddef.h>

#define GLOB_FILE 1 /* the new name is not a directory */
#define GLOB_DIR 2  /* the new name is a directory */
#define GLOB_ANY 3  /* the type cannot be pinned (rename, symlink) */

struct glob_set {
    char **pat;     /* without the trailing '/' */
    int *dir_only;  /* 1 for directory-shaped patterns */
    size_t n;
};

/* Copies and validates; 0, CCSB_E_SPEC (message names the index) or
 * CCSB_E_NOMEM. */
int glob_set_init(struct glob_set *gs, const char *const *globs, char *err, size_t errlen);
void glob_set_clear(struct glob_set *gs);

/* The pattern (as written) that forbids creating name as kind, or NULL. */
const char *glob_set_match(const struct glob_set *gs, const char *name, int kind,
                           char *shown, size_t shownlen);

#endif
