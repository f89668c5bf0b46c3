/*
 * Full validation of a spec, written for a spec an attacker handed us: every
 * string is bounded, valid UTF-8 and free of control characters (they would
 * end up in SBPL profiles, bwrap argv and log lines), every path is absolute
 * and already canonical in its text so that no later layer has to guess what
 * it means, and nothing may name the host's kernel interfaces as a mount.
 */
#include "spec/spec.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "ccsandbox/ccsandbox.h"
#include "egress/rule.h"
#include "egress/upstream.h"
#include "policy/lists.h"
#include "util/err.h"

/* What a path field allows. */
#define P_HOST 1u      /* may start with "~" (the host's home) */
#define P_GLOB 2u      /* may contain '*' and '?' */
#define P_MOUNT 4u     /* a host path that becomes a mount: not /, not kernel fs */
#define P_NOT_ROOT 8u  /* must not be "/" */
#define P_GUEST 16u    /* a guest mount point: not /, not kernel fs */

/* Field names are built into this; long enough for "bindMounts[255].guestPath"
 * and "env.<255 escaped bytes>". */
#define FIELD_MAX 1100

static int fail(char *err, size_t errlen, const char *field, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static int fail(char *err, size_t errlen, const char *field, const char *fmt, ...)
{
    char msg[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return errf(err, errlen, CCSB_E_SPEC, "%s: %s", field, msg);
}

/* 1 when s[0..len) is well-formed UTF-8 (no overlongs, no surrogates). */
static int utf8_valid(const unsigned char *s, size_t len)
{
    size_t i = 0;
    while (i < len) {
        unsigned c = s[i];
        size_t n;
        unsigned min;
        if (c < 0x80) {
            i++;
            continue;
        } else if ((c & 0xE0) == 0xC0) {
            n = 1, min = 0x80, c &= 0x1F;
        } else if ((c & 0xF0) == 0xE0) {
            n = 2, min = 0x800, c &= 0x0F;
        } else if ((c & 0xF8) == 0xF0) {
            n = 3, min = 0x10000, c &= 0x07;
        } else {
            return 0;
        }
        if (len - i <= n)
            return 0;
        for (size_t k = 1; k <= n; k++) {
            if ((s[i + k] & 0xC0) != 0x80)
                return 0;
            c = (c << 6) | (s[i + k] & 0x3F);
        }
        if (c < min || c > 0x10FFFF || (c >= 0xD800 && c <= 0xDFFF))
            return 0;
        i += n + 1;
    }
    return 1;
}

int spec_utf8_valid(const char *s)
{
    return utf8_valid((const unsigned char *)s, strlen(s));
}

static int has_control(const char *s)
{
    for (const unsigned char *p = (const unsigned char *)s; *p; p++)
        if (*p < 0x20 || *p == 0x7F)
            return 1;
    return 0;
}

/* Checks every string must pass: bounded, UTF-8, no control characters. */
static int check_text(char *err, size_t errlen, const char *field, const char *s, size_t max)
{
    size_t n = strlen(s);
    if (n == 0)
        return fail(err, errlen, field, "must not be empty");
    if (n > max)
        return fail(err, errlen, field, "too long (at most %zu bytes)", max);
    if (!utf8_valid((const unsigned char *)s, n))
        return fail(err, errlen, field, "not valid UTF-8");
    if (has_control(s))
        return fail(err, errlen, field, "contains a control character");
    return 0;
}

/* 1 when path is p or lies under it (p without a trailing slash). */
static int path_within(const char *path, const char *p)
{
    size_t n = strlen(p);
    return strncmp(path, p, n) == 0 && (path[n] == '\0' || path[n] == '/');
}

static int is_kernel_fs(const char *path)
{
    return path_within(path, "/proc") || path_within(path, "/dev") ||
           path_within(path, "/sys");
}

static int check_path(char *err, size_t errlen, const char *field, const char *path,
                      unsigned flags)
{
    if (!path)
        return fail(err, errlen, field, "missing");
    int r = check_text(err, errlen, field, path, SPEC_MAX_PATH);
    if (r)
        return r;
    const char *rest = path;
    if (path[0] == '~') {
        /* "~" alone or "~/..."; "~user" would need a user database lookup. */
        if (path[1] != '\0' && path[1] != '/')
            return fail(err, errlen, field, "not an absolute path");
        rest = path + 1;
    } else if (path[0] != '/') {
        return fail(err, errlen, field, "not an absolute path");
    }
    /* Components: no ".", "..", empty ones, or over-long names. The builder
     * already folded "//" and a trailing "/"; a spec handed in some other
     * way may not have. */
    const char *c = rest;
    while (*c == '/') {
        const char *start = c + 1;
        const char *end = strchr(start, '/');
        size_t len = end ? (size_t)(end - start) : strlen(start);
        if (len == 0 && (end || start != rest + 1))
            return fail(err, errlen, field, "not a normalized path (empty component)");
        if ((len == 1 && start[0] == '.') || (len == 2 && start[0] == '.' && start[1] == '.'))
            return fail(err, errlen, field, "contains a '.' or '..' component");
        if (len > SPEC_MAX_NAME)
            return fail(err, errlen, field, "has a component longer than %d bytes",
                        SPEC_MAX_NAME);
        if (!end)
            break;
        c = end;
    }
    int glob = strpbrk(path, "*?") != NULL;
    if (glob && !(flags & P_GLOB))
        return fail(err, errlen, field, "wildcards ('*', '?') are not allowed here");
    if (glob && strpbrk(path, "[]\\"))
        return fail(err, errlen, field,
                    "a glob may use only '*' and '?' as wildcards ('[', ']' and '\\' are not allowed)");
    if ((flags & (P_NOT_ROOT | P_MOUNT | P_GUEST)) && strcmp(path, "/") == 0)
        return fail(err, errlen, field, "must not be /");
    if ((flags & (P_MOUNT | P_GUEST)) && is_kernel_fs(path))
        return fail(err, errlen, field, "must not be /proc, /dev, /sys or inside them");
    return 0;
}

static int check_path_list(char *err, size_t errlen, const char *name,
                           const struct strv *list, unsigned flags)
{
    char field[FIELD_MAX];
    if (list->n > SPEC_MAX_LIST)
        return fail(err, errlen, name, "too many entries (at most %d)", SPEC_MAX_LIST);
    for (size_t i = 0; i < list->n; i++) {
        snprintf(field, sizeof field, "%s[%zu]", name, i);
        int r = check_path(err, errlen, field, list->v[i], flags);
        if (r)
            return r;
    }
    return 0;
}

static int check_session_id(char *err, size_t errlen, const char *id)
{
    size_t n = strlen(id);
    int ok = n >= 1 && n <= SPEC_MAX_ID && id[0] != '.';
    for (size_t i = 0; ok && i < n; i++) {
        char c = id[i];
        ok = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
             c == '.' || c == '_' || c == '-';
    }
    if (!ok)
        return fail(err, errlen, "sessionId",
                    "must be 1 to %d characters from A-Z a-z 0-9 . _ - and must not start with '.'",
                    SPEC_MAX_ID);
    return 0;
}

static int check_binds(char *err, size_t errlen, const struct ccsb_spec *s)
{
    char field[64];
    if (s->n_binds > SPEC_MAX_BINDS)
        return fail(err, errlen, "bindMounts", "too many entries (at most %d)",
                    SPEC_MAX_BINDS);
    for (size_t i = 0; i < s->n_binds; i++) {
        const struct spec_bind *b = &s->binds[i];
        snprintf(field, sizeof field, "bindMounts[%zu].hostPath", i);
        int r = check_path(err, errlen, field, b->host_path, P_HOST | P_MOUNT);
        if (r)
            return r;
        snprintf(field, sizeof field, "bindMounts[%zu].guestPath", i);
        r = check_path(err, errlen, field, b->guest_path, P_HOST | P_GUEST);
        if (r)
            return r;
        for (size_t j = 0; j < i; j++)
            if (strcmp(s->binds[j].guest_path, b->guest_path) == 0)
                return fail(err, errlen, field, "same as bindMounts[%zu].guestPath", j);
    }
    return 0;
}

static int check_egress(char *err, size_t errlen, const char *name, const struct strv *list)
{
    char field[64];
    if (list->n > SPEC_MAX_LIST)
        return fail(err, errlen, name, "too many entries (at most %d)", SPEC_MAX_LIST);
    for (size_t i = 0; i < list->n; i++) {
        snprintf(field, sizeof field, "%s[%zu]", name, i);
        /* The entry's syntax belongs to the egress layer's parser. */
        int r = check_text(err, errlen, field, list->v[i], SPEC_MAX_EGRESS);
        if (r)
            return r;
        if (strchr(list->v[i], ' '))
            return fail(err, errlen, field, "contains a space");
        char why[200];
        if (egress_rule_check(list->v[i], why, sizeof why) < 0)
            return fail(err, errlen, field, "%s", why);
    }
    return 0;
}

static int check_globs(char *err, size_t errlen, const struct strv *list)
{
    char field[64];
    if (list->n > SPEC_MAX_LIST)
        return fail(err, errlen, "denyWriteGlobs", "too many entries (at most %d)",
                    SPEC_MAX_LIST);
    for (size_t i = 0; i < list->n; i++) {
        const char *g = list->v[i];
        snprintf(field, sizeof field, "denyWriteGlobs[%zu]", i);
        int r = check_text(err, errlen, field, g, SPEC_MAX_NAME);
        if (r)
            return r;
        /* A glob is matched against the final name of a created file. */
        if (strchr(g, '/'))
            return fail(err, errlen, field, "must be a file name pattern without '/'");
        if (strcmp(g, ".") == 0 || strcmp(g, "..") == 0)
            return fail(err, errlen, field, "must not be '.' or '..'");
        if (strpbrk(g, "[]\\"))
            return fail(err, errlen, field,
                        "a glob may use only '*' and '?' as wildcards ('[', ']' and '\\' are not allowed)");
    }
    return 0;
}

void spec_escape_name(char *out, size_t len, const char *name)
{
    size_t o = 0;
    if (len == 0)
        return;
    for (const unsigned char *p = (const unsigned char *)name; *p && o + 8 < len; p++) {
        if (p - (const unsigned char *)name >= 64) {
            o += (size_t)snprintf(out + o, len - o, "...");
            break;
        }
        if (*p >= 0x20 && *p < 0x7F)
            out[o++] = (char)*p;
        else
            o += (size_t)snprintf(out + o, len - o, "\\x%02x", *p);
    }
    out[o] = '\0';
}

static void env_field(char *field, size_t len, const char *name)
{
    char esc[300];
    spec_escape_name(esc, sizeof esc, name);
    snprintf(field, len, "env.%s", esc);
}

int spec_env_name_ok(const char *n)
{
    if (!n || !((*n >= 'A' && *n <= 'Z') || (*n >= 'a' && *n <= 'z') || *n == '_'))
        return 0;
    for (n++; *n; n++)
        if (!((*n >= 'A' && *n <= 'Z') || (*n >= 'a' && *n <= 'z') ||
              (*n >= '0' && *n <= '9') || *n == '_'))
            return 0;
    return 1;
}

static int check_env(char *err, size_t errlen, const struct ccsb_spec *s)
{
    char field[FIELD_MAX];
    if (s->env_names.n != s->env_values.n)
        return errf(err, errlen, CCSB_E_INTERNAL, "env: names and values out of step");
    if (s->env_names.n > SPEC_MAX_ENV)
        return fail(err, errlen, "env", "too many variables (at most %d)", SPEC_MAX_ENV);
    for (size_t i = 0; i < s->env_names.n; i++) {
        const char *name = s->env_names.v[i], *value = s->env_values.v[i];
        env_field(field, sizeof field, name);
        if (strlen(name) > SPEC_MAX_ENV_NAME)
            return fail(err, errlen, field, "name too long (at most %d bytes)",
                        SPEC_MAX_ENV_NAME);
        if (!spec_env_name_ok(name))
            return fail(err, errlen, field,
                        "not a valid variable name (letters, digits and '_', not starting with a digit)");
        for (size_t j = 0; j < i; j++)
            if (strcmp(s->env_names.v[j], name) == 0)
                return fail(err, errlen, field, "set twice");
        if (policy_env_is_forbidden(name))
            return fail(err, errlen, field,
                        "dynamic-loader variables (LD_*, DYLD_*) cannot be set");
        size_t vlen = strlen(value);
        if (!utf8_valid((const unsigned char *)value, vlen))
            return fail(err, errlen, field, "not valid UTF-8");
        if (strlen(name) + 1 + vlen > SPEC_MAX_ENV_PAIR)
            return fail(err, errlen, field, "too long (NAME=VALUE at most %d bytes)",
                        SPEC_MAX_ENV_PAIR);
    }
    return 0;
}

static int check_label(char *err, size_t errlen, const char *field, const char *v)
{
    return v ? check_text(err, errlen, field, v, SPEC_MAX_LABEL) : 0;
}

int spec_validate(const struct ccsb_spec *s, char *err, size_t errlen)
{
    int r;
    if (!s)
        return errf(err, errlen, CCSB_E_INVAL, "spec: missing");
    if (s->session_id && (r = check_session_id(err, errlen, s->session_id)))
        return r;
    if ((r = check_label(err, errlen, "workspaceId", s->workspace_id)) ||
        (r = check_label(err, errlen, "agentId", s->agent_id)))
        return r;
    if (!spec_backend_name(s->backend))
        return fail(err, errlen, "backend", "unknown value %d", s->backend);
    if (!spec_mode_name(s->mode))
        return fail(err, errlen, "mode", "unknown value %d", s->mode);
    if (s->guest_workdir &&
        (r = check_path(err, errlen, "guestWorkdir", s->guest_workdir, P_HOST)))
        return r;
    if ((r = check_binds(err, errlen, s)))
        return r;
    if (s->upstream_proxy) {
        struct egress_upstream up;
        char why[128];
        if (!spec_utf8_valid(s->upstream_proxy))
            return errf(err, errlen, CCSB_E_SPEC, "upstreamProxy: not valid UTF-8");
        if (egress_upstream_parse(s->upstream_proxy, &up, why, sizeof why) < 0)
            return errf(err, errlen, CCSB_E_SPEC, "upstreamProxy: %s", why);
    }
    if ((r = check_egress(err, errlen, "egressAllowlist", &s->egress_allow)) ||
        (r = check_egress(err, errlen, "egressDenylist", &s->egress_deny)))
        return r;
    if ((r = check_path_list(err, errlen, "protectedPaths", &s->protected_paths,
                             P_HOST | P_GLOB)) ||
        (r = check_path_list(err, errlen, "runnerStateDirs", &s->runner_state_dirs,
                             P_HOST | P_MOUNT)) ||
        (r = check_path_list(err, errlen, "execGrantRoots", &s->exec_grant_roots,
                             P_HOST | P_NOT_ROOT)) ||
        (r = check_path_list(err, errlen, "denyRead", &s->deny_read, P_HOST | P_GLOB)) ||
        (r = check_path_list(err, errlen, "unixSockets", &s->unix_sockets,
                             P_HOST | P_MOUNT | P_NOT_ROOT)))
        return r;
    if ((r = check_globs(err, errlen, &s->deny_write_globs)))
        return r;
    if ((r = check_env(err, errlen, s)))
        return r;
    if (s->timeout_ms > SPEC_MAX_INT)
        return fail(err, errlen, "limits.timeoutMs", "must be at most %llu",
                    (unsigned long long)SPEC_MAX_INT);
    if (s->memory_max > SPEC_MAX_INT)
        return fail(err, errlen, "limits.memoryBytes", "must be at most %llu",
                    (unsigned long long)SPEC_MAX_INT);
    return 0;
}
