/* Finding an executable on a PATH-style list. */
#ifndef CCSB_UTIL_PATHSEARCH_H
#define CCSB_UTIL_PATHSEARCH_H

/*
 * The first "<dir>/<name>" in the colon-separated list that is a regular
 * executable file (malloc'd), or NULL. Relative entries are skipped: they
 * would name the caller's working directory, which is never trusted.
 */
char *path_search(const char *list, const char *name);

#endif
