/*
 * The bubblewrap plan: a pure translation of a resolved policy into the
 * bwrap argument list, plus the placeholder mount points the janitor must
 * create first. Used by the backend at launch and by `ccsb explain`.
 *
 * The only host facts it needs (does a path exist, is it a directory or a
 * symlink, what does a glob match) come through struct bwrap_host_ops so the
 * unit tests can fake a filesystem; NULL ops mean the real one.
 */
#ifndef CCSB_BACKEND_BWRAP_ARGS_H
#define CCSB_BACKEND_BWRAP_ARGS_H

#include <stddef.h>
#include <stdint.h>

#include "util/strv.h"

struct ccsb_policy;
struct rpmemo;

#define BWRAP_KIND_MISSING 0
#define BWRAP_KIND_FILE 1
#define BWRAP_KIND_DIR 2
#define BWRAP_KIND_SYMLINK 3
/* It cannot be told (EACCES, ELOOP, EIO, ...): a rule about it fails the
 * plan rather than treat it as missing (the sandbox may own what made it
 * unreadable, and undo that once inside). */
#define BWRAP_KIND_UNKNOWN 4

struct bwrap_host_ops {
    /* lstat-like: BWRAP_KIND_* of path (no symlink following); MISSING
     * only for ENOENT and ENOTDIR. */
    int (*kind)(const char *path, void *ud);
    /* readlink of a symlink (malloc'd) or NULL. */
    char *(*readlink)(const char *path, void *ud);
    /* realpath (malloc'd) or NULL when it does not resolve. */
    char *(*resolve)(const char *path, void *ud);
    /* Appends every existing match of an absolute glob to out; 0 or -1. */
    int (*glob)(const char *pattern, struct strv *out, void *ud);
    /* 1 when this process can neither read path (a file) or enter it (a
     * directory) nor make itself able to (not its owner), so neither can
     * a sandbox of its own uid without capabilities; 0 otherwise. NULL:
     * never. */
    int (*sealed)(const char *path, void *ud);
    void *ud;
};

struct bwrap_opts {
    const char *helper_path;  /* host path of ccsb-init ("<ccsb-init>" for explain) */
    const char *session_tmp;  /* host dir shown at /tmp; NULL: a private tmpfs */
    int http_port, socks_port;/* 0: ephemeral */
    uint64_t rlimit_as;       /* passed to ccsb-init; 0: none */
    uint64_t rlimit_nproc;
    int have_guard;           /* the create-time guard can enforce globs and hold
                               * missing protected paths (no placeholders) */
    const struct bwrap_host_ops *host; /* NULL: the real filesystem */
    /* bwrap runs as uid 0 and so makes one user namespace, which owns the
     * mount namespace: ccsb-init forbids nested ones itself (cheaper, see
     * init_lock_userns) rather than bwrap's --disable-userns. */
    int lock_userns;
    /* The policy build's realpath memo (NULL: the plan keeps its own). */
    struct rpmemo *memo;
};

struct bwrap_plan {
    struct strv argv;         /* bwrap options ... -- ccsb-init init ..., no argv[0] */
    size_t cmd_at;            /* index of the "--" before the command */
    struct strv ph_files;     /* host paths of placeholder files to create */
    struct strv ph_dirs;      /* host paths of placeholder directories */
    /* Host paths of existing nodes ccsb-init mounts over in writable roots:
     * one may be another session's placeholder, to be adopted (see
     * placeholder_adopt). */
    struct strv ph_found;
    /* Protected paths the seccomp guard holds by name (have_guard):
     * host anchor directory, the rest below it, and its kind: "file" (a
     * file, never a directory: an existing protected file, a git lock
     * file) or "path" (may be or become a directory: held with what is
     * inside it). */
    struct strv guard_anchors;
    struct strv guard_rests;
    struct strv guard_kinds;
    struct strv notes;        /* one line per decision, for explain */
    struct strv init_mounts;  /* ccsb-init's mount options, pairs: "--ro" PATH, ... */
};

/*
 * Builds the plan. Returns 0, CCSB_E_NOMEM, or CCSB_E_POLICY with a message
 * in err (a rule that cannot be enforced here: nothing runs weaker).
 */
int bwrap_plan_build(const struct ccsb_policy *p, const struct bwrap_opts *o,
                     struct bwrap_plan *out, char *err, size_t errlen);
void bwrap_plan_clear(struct bwrap_plan *plan);

/* bwrap_opts.lock_userns for this process: 1 when bwrap runs as uid and gid
 * 0 (it then nests no user namespace of its own for the mapping). */
int bwrap_lock_userns_here(void);

/* The argv as one shell-quoted line ("bwrap --unshare-all ..."), malloc'd. */
char *bwrap_argv_to_shell(const char *bwrap_path, const struct strv *argv);

/* Guest path of the placeholder heuristic: 1 when a missing name is
 * directory-shaped (.vscode, hooks), 0 when file-shaped (.bashrc, config). */
int bwrap_name_looks_like_dir(const char *name);

#endif
