/*
 * The resolved policy: plain data computed once per launch from a validated
 * spec and a few host facts. Backends only translate it (bubblewrap argv,
 * SBPL profile, seccomp rules); they never re-decide it.
 *
 * Paths here are host paths unless a field says "guest".
 */
#ifndef CCSB_POLICY_POLICY_H
#define CCSB_POLICY_POLICY_H

#include <stddef.h>
#include <stdint.h>

#include "util/strv.h"

struct ccsb_spec;

/* A path rule, kept in both spellings (DESIGN.md §4/§5). */
struct policy_path {
    char *path;     /* as written (absolute; "~" already expanded) */
    /* Symlink-resolved spelling when it differs, else NULL. For a path that
     * does not exist (yet) this is its deepest existing ancestor resolved,
     * following a dangling symlink as far as it goes, plus the rest: so a
     * missing /tmp/w/.bashrc on macOS also yields /private/tmp/w/.bashrc.
     * For a glob, the part before the first wildcard is resolved that way
     * and the rest kept as written. */
    char *resolved;
    int is_glob;    /* contains '*' or '?': never resolved, kept as written */
    int exists;     /* the path (its resolved spelling) exists on the host */
    int is_dir;     /* exists and is a directory */
};

struct policy_paths {
    struct policy_path *v;
    size_t n;
};

/* Why a writable location is writable (for explain and details). */
#define POLICY_ROOT_BIND 1        /* a chat-mode bind mount */
#define POLICY_ROOT_RUNNER_STATE 2 /* runnerStateDirs: writable in every mode */
#define POLICY_ROOT_SESSION_TMP 3 /* the per-session tmp */
#define POLICY_ROOT_HOME 4        /* terminal preset: $HOME */
#define POLICY_ROOT_GITDIR 5      /* a git worktree's common git dir (see below) */

/*
 * A host path made visible in the sandbox: the spec's bindMounts, then its
 * runnerStateDirs, then the git dirs of worktrees. When `<root>/.git` of a
 * bind is a file naming a verified worktree git dir outside the bind, that
 * repository's common git dir is mounted at its own path (git finds it by
 * absolute path), writable exactly when the bind is; its hooks and config
 * stay in deny_write.
 */
struct policy_mount {
    char *host;    /* host path (as written, "~" expanded) */
    char *guest;   /* where the sandbox sees it */
    int writable;  /* after the mode is applied */
    int kind;      /* POLICY_ROOT_* for writable ones, 0 for read-only */
    int exists;    /* the host path resolves (a runner state dir may not exist
                    * yet; a missing bind is a policy_build error) */
};

/* Host facts the policy depends on; filled by the caller (tests fake them). */
struct policy_host {
    const char *home;        /* host $HOME (may be NULL: no home-based rules) */
    const char *session_tmp; /* host dir used as the sandbox's /tmp (may be NULL) */
    /* Resolve a path's symlinks; NULL means realpath(3). Returns malloc'd
     * string or NULL when it does not resolve. Injected for golden tests. */
    char *(*resolve)(const char *path, void *userdata);
    void *resolve_userdata;
    /* Optional: 1 for a directory, 0 for anything else, -1 when missing;
     * NULL means stat(2). Called with resolve_userdata. */
    int (*kind)(const char *path, void *userdata);
    /* A realpath memo to use, or NULL (policy_build keeps its own). A
     * caller that builds more from the same file system in the same breath
     * (the bubblewrap plan) passes one and clears it afterwards. */
    struct rpmemo *memo;
};

struct ccsb_policy {
    int mode;               /* CCSB_MODE_* */
    char *guest_workdir;    /* guest path */
    char *home;             /* host home or NULL */
    char *session_tmp;      /* host path of the session tmp or NULL */

    /* bindMounts and runnerStateDirs, in spec order, with the mode applied. */
    struct policy_mount *mounts;
    size_t n_mounts;

    /* Every writable host root (binds in chat mode, runner state dirs,
     * session tmp, worktree git dirs of writable binds), both spellings. */
    struct policy_paths writable_roots;
    /* Read-denied, applied after (over) the mounts: the built-in secret set
     * (policy_secret_home under home, policy_secret_system) + spec.denyRead. */
    struct policy_paths deny_read;
    /* Never writable, applied after the mounts: protectedPaths + the
     * mandatory deny-write set inside every writable root except the session
     * tmp (existing or not; lists.h policy_deny_write_root) + the git-dir set
     * (policy_deny_write_gitdir) of `<root>/.git` and of a worktree's git
     * dirs + a worktree's `<root>/.git` file itself. A backend must also
     * stop a missing entry's missing ancestors from being created, and an
     * entry's ancestors from being renamed or removed. */
    struct policy_paths deny_write;
    /* Create-time globs on the final component (spec.denyWriteGlobs). */
    struct strv deny_write_globs;
    /* Trees from which executing is allowed even though writable. */
    struct policy_paths exec_grant_roots;
    /* Host unix sockets the commands may connect to (bound in at the same
     * path); non-empty means socket(AF_UNIX) is allowed. Each is a socket. */
    struct policy_paths unix_sockets;

    /* Environment: names removed from the inherited environment (an entry
     * ending in '*' is a prefix: "DYLD_*"; use policy_env_unsets), then the
     * variables set for every exec (spec env). */
    struct strv env_unset;
    struct strv env_set_names;
    struct strv env_set_values;

    int network_enabled;
    int allow_git_config;
    uint64_t timeout_ms;
    uint64_t memory_max;
    uint32_t pids_max;
};

/*
 * Builds the policy from a spec (validated again here). Returns 0,
 * CCSB_E_NOMEM, CCSB_E_SPEC (invalid spec), or CCSB_E_POLICY with a message
 * naming the field: "~" without a home, a bind that does not exist, a mount
 * that resolves to / or into /proc, /dev or /sys, a mount at or inside a
 * read-denied path, guest paths that collide once "~" is expanded. On
 * failure *out is untouched.
 */
int policy_build(const struct ccsb_spec *spec, const struct policy_host *host,
                 struct ccsb_policy **out, char *err, size_t errlen);
void policy_free(struct ccsb_policy *p);

/* 1 when the policy removes this inherited variable (env_unset). */
int policy_env_unsets(const struct ccsb_policy *p, const char *name);

#endif
