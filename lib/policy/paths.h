/*
 * Path helpers of the policy layer: "~" expansion, the resolved spelling of
 * a path that may not exist, and de-duplicated path sets.
 */
#ifndef CCSB_POLICY_PATHS_H
#define CCSB_POLICY_PATHS_H

#include "policy/policy.h"

/* "dir" + "/" + "rel" without doubling the slash; NULL on ENOMEM. */
char *path_join(const char *dir, const char *rel);

/* "~" and "~/x" with home; other paths copied. NULL on ENOMEM. */
char *path_expand_home(const char *path, const char *home);

/* 1 when path is p or lies under it. */
int path_within(const char *path, const char *p);

/* The host's resolver: host->resolve or realpath(3). NULL: does not resolve. */
char *path_resolve(const struct policy_host *h, const char *path);

/* 1 directory, 0 other, -1 missing (host->kind or stat(2)). */
int path_kind(const struct policy_host *h, const char *path);

/*
 * The resolved spelling of any path, existing or not (see policy_path in
 * policy.h). Sets *exists when the path itself resolves. NULL on ENOMEM.
 */
char *path_canonical(const struct policy_host *h, const char *path, int *exists);

/* Adds path (both spellings) unless already present. 0 or CCSB_E_NOMEM. */
int paths_add(struct policy_paths *set, const struct policy_host *h, const char *path);
void paths_clear(struct policy_paths *set);

#endif
