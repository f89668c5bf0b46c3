/*
 * realpath(3) with a memory: resolving many paths below the same
 * directories (the policy's ~100 protected and secret paths under a few
 * roots) costs one readlink per component per path with plain realpath;
 * here each directory is resolved once and a path then costs one lstat.
 * Results are those of realpath on the file system as it was when first
 * asked: keep a memo for one computation (one policy build), not longer.
 */
#ifndef CCSB_UTIL_RPMEMO_H
#define CCSB_UTIL_RPMEMO_H

#include <stddef.h>
#include <sys/types.h>

struct rpmemo_entry;

struct rpmemo {
    struct rpmemo_entry **slot;
    size_t cap, n;
};

#define RPMEMO_INIT {NULL, 0, 0}

/* Like realpath(path, NULL): a malloc'd canonical path, or NULL with errno
 * (ENOENT, ENOTDIR, EACCES, ELOOP, ENOMEM, ...). */
char *rpmemo_realpath(struct rpmemo *m, const char *path);
/* Like lstat(2), for st_mode only: 0 with *mode, or -errno. */
int rpmemo_lstat(struct rpmemo *m, const char *path, mode_t *mode);
void rpmemo_clear(struct rpmemo *m);

#endif
