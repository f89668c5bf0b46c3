/*
 * Placeholder mount points: bubblewrap can only mount over a path that
 * exists, so a protected path that does not exist yet inside a writable
 * bind (.bashrc, .git/hooks, ...) gets an empty file or directory on the
 * host for the read-only mount to sit on. The library creates them; the
 * library (at stop) or the janitor (when the host was killed) removes them.
 * Shared by the library and ccsb-init.
 */
#ifndef CCSB_BACKEND_PLACEHOLDER_H
#define CCSB_BACKEND_PLACEHOLDER_H

#include <sys/types.h>

struct placeholder {
    const char *path;
    int is_dir;
    dev_t dev;  /* identity of what we created (0/0: nothing of ours) */
    ino_t ino;
};

/*
 * Creates p->path (never over an existing name, never through a symlink in
 * its parent path). Returns 1 when created (identity filled in), 0 when
 * the name already existed (then it is not ours), or -errno.
 */
int placeholder_create(struct placeholder *p);

/* The parent directory of path as an O_PATH fd, reached without following
 * any symlink (so a link planted by a running sandbox cannot redirect us);
 * *name points at the final component. Returns the fd or -errno. */
int placeholder_parent(const char *path, const char **name);
/* placeholder_create with the parent already open. */
int placeholder_create_in(int dfd, const char *name, struct placeholder *p);

/*
 * Another launch's placeholder found at name in dfd (an empty file or
 * directory carrying its mark): a session that mounts over it takes part in
 * removing it, the last one out removes it. Returns 1 with p's identity and
 * kind filled in, 0 when it is not one (or not there), or -errno.
 */
int placeholder_adopt_in(int dfd, const char *name, struct placeholder *p);

/* Removes it if it is still the empty thing we created or adopted, and no
 * sandbox holds it (ccsb-init locks what it mounts over). Returns
 * -EWOULDBLOCK when one does (it is left), else 0. */
int placeholder_remove(const struct placeholder *p);

#endif
