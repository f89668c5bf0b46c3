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
    char *resolved; /* symlink-resolved spelling when it differs, else NULL */
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

struct policy_mount {
    char *host;    /* host path (as written) */
    char *guest;   /* where the sandbox sees it */
    int writable;  /* after the mode is applied */
    int kind;      /* POLICY_ROOT_* for writable ones, 0 for read-only */
};

/* Host facts the policy depends on; filled by the caller (tests fake them). */
struct policy_host {
    const char *home;        /* host $HOME (may be NULL: no home-based rules) */
    const char *session_tmp; /* host dir used as the sandbox's /tmp (may be NULL) */
    /* Resolve a path's symlinks; NULL means realpath(3). Returns malloc'd
     * string or NULL when it does not resolve. Injected for golden tests. */
    char *(*resolve)(const char *path, void *userdata);
    void *resolve_userdata;
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
     * session tmp), both spellings. */
    struct policy_paths writable_roots;
    /* Read-denied: the built-in secret set + spec.denyRead. */
    struct policy_paths deny_read;
    /* Never writable: protectedPaths + the mandatory deny-write set applied
     * inside every writable root (existing or not). */
    struct policy_paths deny_write;
    /* Create-time globs on the final component (spec.denyWriteGlobs). */
    struct strv deny_write_globs;
    /* Trees from which executing is allowed even though writable. */
    struct policy_paths exec_grant_roots;

    /* Environment: names removed from the inherited environment, then the
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
 * Builds the policy from a validated spec. Returns 0, CCSB_E_NOMEM, or
 * CCSB_E_POLICY with a message in err.
 */
int policy_build(const struct ccsb_spec *spec, const struct policy_host *host,
                 struct ccsb_policy **out, char *err, size_t errlen);
void policy_free(struct ccsb_policy *p);

#endif
