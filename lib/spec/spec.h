/*
 * The spec as plain data. The public builder (ccsb_spec_*) and the JSON
 * loader fill it; validation checks it; lib/policy turns it into a resolved
 * policy. Nothing here does I/O.
 */
#ifndef CCSB_SPEC_SPEC_H
#define CCSB_SPEC_SPEC_H

#include <stddef.h>
#include <stdint.h>

#include "util/strv.h"

struct spec_bind {
    char *host_path;
    char *guest_path; /* never NULL after spec_add_bind: defaults to host_path */
    int read_only;
};

struct ccsb_spec {
    char *session_id;   /* NULL: generated at launch */
    char *workspace_id; /* may be NULL */
    char *agent_id;     /* may be NULL */
    int backend;        /* CCSB_BACKEND_* (AUTO by default) */
    int mode;           /* CCSB_MODE_* */
    char *guest_workdir;/* NULL: the first bind's guest path, else /tmp */

    struct spec_bind *binds;
    size_t n_binds;

    int network_enabled;            /* default 1 */
    struct strv egress_allow;       /* spec.egressAllowlist */
    struct strv egress_deny;        /* spec.egressDenylist (user additions) */
    struct strv protected_paths;
    struct strv runner_state_dirs;
    struct strv exec_grant_roots;
    struct strv deny_read;          /* user additions to the secret set */
    struct strv deny_write_globs;   /* create-time globs: .env, *.key, ... */
    int allow_git_config;           /* re-allow .git/config writes */

    struct strv env_names;          /* parallel arrays, names unique */
    struct strv env_values;

    uint64_t timeout_ms;            /* 0: none */
    uint64_t memory_max;            /* bytes, 0: none */
    uint32_t pids_max;              /* 0: none */
};

/* Shared by the builder and the JSON loader; 0 or CCSB_E_NOMEM. */
int spec_add_bind(struct ccsb_spec *s, const char *host, const char *guest, int ro);
int spec_set_env(struct ccsb_spec *s, const char *name, const char *value);

/*
 * Full validation; on failure writes "<field>: <problem>" into err and
 * returns CCSB_E_SPEC.
 */
int spec_validate(const struct ccsb_spec *s, char *err, size_t errlen);

/* The effective guest working directory (never NULL). */
const char *spec_workdir(const struct ccsb_spec *s);

#endif
