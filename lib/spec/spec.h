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
    struct strv unix_sockets;       /* host sockets bound in; enables AF_UNIX */
    int allow_git_config;           /* re-allow .git/config writes */
    char *upstream_proxy;           /* "http://[user:pass@]host:port" or NULL */

    struct strv env_names;          /* parallel arrays, names unique */
    struct strv env_values;

    uint64_t timeout_ms;            /* 0: none */
    uint64_t memory_max;            /* bytes, 0: none */
    uint32_t pids_max;              /* 0: none */
};

/*
 * Bounds an attacker-supplied spec cannot exceed (validation enforces them).
 * Integers stay within 2^53 - 1 so that every JSON consumer (JavaScript,
 * Dart) reads back exactly what we wrote.
 */
#define SPEC_MAX_BINDS 256
#define SPEC_MAX_LIST 1024           /* entries per string list */
#define SPEC_MAX_ENV 1024
#define SPEC_MAX_PATH 4095           /* bytes, PATH_MAX without the NUL */
#define SPEC_MAX_NAME 255            /* bytes per path component */
#define SPEC_MAX_ID 128              /* sessionId */
#define SPEC_MAX_LABEL 256           /* workspaceId, agentId */
#define SPEC_MAX_EGRESS 260          /* one egress entry */
#define SPEC_MAX_ENV_NAME 255
#define SPEC_MAX_ENV_PAIR 131071     /* "NAME=VALUE": MAX_ARG_STRLEN - 1 */
#define SPEC_MAX_INT 9007199254740991ULL /* 2^53 - 1 */

/* A spec with every default; NULL on ENOMEM. */
struct ccsb_spec *spec_new(void);
void spec_free(struct ccsb_spec *s);
/* A deep copy; NULL on ENOMEM. */
struct ccsb_spec *spec_copy(const struct ccsb_spec *s);

/*
 * Shared by the builder and the JSON loader; 0 or CCSB_E_NOMEM. Paths are
 * stored with repeated and trailing slashes removed ("/a//b/" -> "/a/b");
 * everything else about them is left for spec_validate to judge, so that
 * the error can name the field. A leading "~" means the host's home and is
 * expanded by the policy layer.
 */
int spec_add_bind(struct ccsb_spec *s, const char *host, const char *guest, int ro);
int spec_set_env(struct ccsb_spec *s, const char *name, const char *value);
int spec_add_path(struct strv *list, const char *path);
/* Replaces *field with a copy of value (NULL clears it); path: normalise. */
int spec_set_string(char **field, const char *value, int path);
/* "/a//b/" -> "/a/b" (malloc'd; NULL on ENOMEM). */
char *spec_path_normalize(const char *path);

/* Strict name parsing for specs: -1 when the name is unknown. */
int spec_backend_parse(const char *name);
int spec_mode_parse(const char *name);
/* NULL for values outside the closed set. */
const char *spec_backend_name(int backend);
const char *spec_mode_name(int mode);

/*
 * JSON. spec_from_json parses, checks every field's type and name, then
 * validates; on failure *out is untouched and err says "<field>: <problem>".
 * spec_to_json writes every field (defaults included) into a malloc'd
 * string; CCSB_E_SPEC when a string is not valid UTF-8.
 */
/* name made printable (\xNN) and bounded (64 bytes, then "...") for an
 * error message; out should hold at least 4 * 64 + 8 bytes. */
void spec_escape_name(char *out, size_t len, const char *name);
/* 1 when s is well-formed UTF-8 (no overlongs, no surrogates). */
int spec_utf8_valid(const char *s);

int spec_from_json(const char *json, size_t len, struct ccsb_spec **out,
                   char *err, size_t errlen);
int spec_to_json(const struct ccsb_spec *s, char **out);

/*
 * Full validation; on failure writes "<field>: <problem>" into err and
 * returns CCSB_E_SPEC.
 */
int spec_validate(const struct ccsb_spec *s, char *err, size_t errlen);

/* 1 when n is a valid environment variable name: [A-Za-z_][A-Za-z0-9_]*. */
int spec_env_name_ok(const char *n);

/* The effective guest working directory (never NULL). */
const char *spec_workdir(const struct ccsb_spec *s);

#endif
