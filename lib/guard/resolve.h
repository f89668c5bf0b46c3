/*
 * Path resolution inside a target's root, done by the supervisor one
 * component at a time on O_PATH descriptors:
 *  - every directory reached is pinned by an fd, so a concurrent rename or
 *    symlink swap can only change which directory inside the root is used;
 *  - ".." pops the directories walked (never above the root); when the walk
 *    started below the root (cwd, dirfd) the chain is rebuilt from the
 *    root and checked against the start directory first;
 *  - symlinks are read and spliced in by us, never followed by the kernel
 *    with our root;
 *  - procfs magic links are never followed: /proc/self, /proc/thread-self
 *    and /proc/<its pid> map to the target, and <its pid>/fd/N, cwd and root
 *    become the target's own fd, cwd or root (asked through a callback).
 *    Any other magic link fails with EACCES.
 */
#ifndef CCSB_GUARD_RESOLVE_H
#define CCSB_GUARD_RESOLVE_H

#include <limits.h>
#include <sys/stat.h>
#include <sys/types.h>

#define RES_MAGIC_FD 0
#define RES_MAGIC_CWD 1
#define RES_MAGIC_ROOT 2

struct res_env {
    int rootfd;   /* the target's root (borrowed) */
    int startfd;  /* where relative paths start (borrowed), or -1 */
    pid_t nstgid; /* the target as its own procfs names it */
    pid_t nstid;
    /* Returns a new fd for the target's fd n / cwd / root, or -errno. */
    int (*magic)(void *ud, int kind, int n);
    void *ud;
};

#define RES_FOLLOW 1 /* follow a symlink in the final component */

struct res_out {
    int parentfd;   /* O_PATH directory that holds name, or -1 */
    char name[NAME_MAX + 1];
    int exists;     /* name exists (objfd and st describe it) */
    int objfd;      /* O_PATH|O_NOFOLLOW of the object, a target fd, or -1 */
    int magic;      /* objfd came from the target (no parent, no name) */
    int dot;        /* the final component was ".", ".." or the path was "/" */
    int trailing_slash;
    struct stat st;
};

/* 0 or -errno as the kernel would report it (ENOENT, ENOTDIR, ELOOP,
 * ENAMETOOLONG, EACCES, ...). On success the caller owns out's fds. */
int resolve_path(const struct res_env *e, const char *path, int flags, struct res_out *out);
void res_out_close(struct res_out *o);

/* The path of a directory fd as the target sees it ("/work/x"), best
 * effort for messages: falls back to "?" when it is not under the root. */
void res_display_dir(int rootfd, int dirfd, char *buf, size_t len);

#endif
