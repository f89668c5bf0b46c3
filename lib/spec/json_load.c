/*
 * JSON -> spec. Strict: every field's type is checked, unknown fields at any
 * level are errors (a misspelt "protectedPath" must not silently protect
 * nothing), duplicate keys are refused, and the result is validated before
 * anyone sees it.
 */
#include "spec/spec.h"

#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "ccsandbox/ccsandbox.h"
#include "util/err.h"

struct load {
    struct ccsb_spec *s;
    char *err;
    size_t errlen;
};

/* Long enough for "bindMounts[255]." plus an escaped key. */
#define FIELD_MAX 400

static int bad(struct load *l, const char *field, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int bad(struct load *l, const char *field, const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return errf(l->err, l->errlen, CCSB_E_SPEC, "%s: %s", field, msg);
}

static int oom(struct load *l)
{
    return errf(l->err, l->errlen, CCSB_E_NOMEM, "out of memory");
}

/* "prefix" + escaped key, e.g. "bindMounts[0].frob". */
static void key_field(char *out, size_t len, const char *prefix, const char *key)
{
    char esc[300];
    spec_escape_name(esc, sizeof esc, key);
    snprintf(out, len, "%s%s", prefix, esc);
}

/* The string value of v, or NULL after an error naming field. */
static const char *get_string(struct load *l, json_t *v, const char *field, int *r)
{
    if (!json_is_string(v)) {
        *r = bad(l, field, "must be a string");
        return NULL;
    }
    const char *s = json_string_value(v);
    if (json_string_length(v) != strlen(s)) {
        *r = bad(l, field, "contains a NUL byte");
        return NULL;
    }
    return s;
}

static int load_opt_string(struct load *l, json_t *v, const char *field, char **dst, int path)
{
    if (json_is_null(v))
        return spec_set_string(dst, NULL, path);
    if (!json_is_string(v))
        return bad(l, field, "must be a string or null");
    int r = 0;
    const char *s = get_string(l, v, field, &r);
    if (!s)
        return r;
    return spec_set_string(dst, s, path) ? oom(l) : 0;
}

static int load_bool(struct load *l, json_t *v, const char *field, int *dst)
{
    if (!json_is_boolean(v))
        return bad(l, field, "must be true or false");
    *dst = json_is_true(v);
    return 0;
}

static int load_list(struct load *l, json_t *v, const char *field, struct strv *dst,
                     int path)
{
    if (!json_is_array(v))
        return bad(l, field, "must be an array of strings");
    if (json_array_size(v) > SPEC_MAX_LIST)
        return bad(l, field, "too many entries (at most %d)", SPEC_MAX_LIST);
    size_t i;
    json_t *e;
    char ef[FIELD_MAX];
    json_array_foreach(v, i, e) {
        snprintf(ef, sizeof ef, "%s[%zu]", field, i);
        int r = 0;
        const char *s = get_string(l, e, ef, &r);
        if (!s)
            return r;
        int failed = path ? spec_add_path(dst, s) != 0 : strv_push(dst, s) < 0;
        if (failed)
            return oom(l);
    }
    return 0;
}

static int load_uint(struct load *l, json_t *v, const char *field, uint64_t max,
                     uint64_t *dst)
{
    if (!json_is_integer(v) || json_integer_value(v) < 0)
        return bad(l, field, "must be a non-negative integer");
    uint64_t x = (uint64_t)json_integer_value(v);
    if (x > max)
        return bad(l, field, "must be at most %llu", (unsigned long long)max);
    *dst = x;
    return 0;
}

static int load_bind(struct load *l, json_t *v, size_t i)
{
    char field[FIELD_MAX], prefix[64];
    snprintf(prefix, sizeof prefix, "bindMounts[%zu]", i);
    if (!json_is_object(v))
        return bad(l, prefix, "must be an object");
    const char *host = NULL, *guest = NULL;
    int ro = 0, r = 0;
    const char *key;
    json_t *val;
    json_object_foreach(v, key, val) {
        snprintf(field, sizeof field, "%s.%s", prefix, key);
        if (strcmp(key, "hostPath") == 0) {
            if (!(host = get_string(l, val, field, &r)))
                return r;
        } else if (strcmp(key, "guestPath") == 0) {
            if (json_is_null(val))
                guest = NULL;
            else if (!json_is_string(val))
                return bad(l, field, "must be a string or null");
            else if (!(guest = get_string(l, val, field, &r)))
                return r;
        } else if (strcmp(key, "readOnly") == 0) {
            if ((r = load_bool(l, val, field, &ro)))
                return r;
        } else {
            char dot[80];
            snprintf(dot, sizeof dot, "%s.", prefix);
            key_field(field, sizeof field, dot, key);
            return bad(l, field, "unknown field");
        }
    }
    if (!host) {
        snprintf(field, sizeof field, "%s.hostPath", prefix);
        return bad(l, field, "missing");
    }
    return spec_add_bind(l->s, host, guest, ro) ? oom(l) : 0;
}

static int f_binds(struct load *l, json_t *v)
{
    if (!json_is_array(v))
        return bad(l, "bindMounts", "must be an array of objects");
    if (json_array_size(v) > SPEC_MAX_BINDS)
        return bad(l, "bindMounts", "too many entries (at most %d)", SPEC_MAX_BINDS);
    size_t i;
    json_t *e;
    json_array_foreach(v, i, e) {
        int r = load_bind(l, e, i);
        if (r)
            return r;
    }
    return 0;
}

static int f_env(struct load *l, json_t *v)
{
    if (!json_is_object(v))
        return bad(l, "env", "must be an object");
    if (json_object_size(v) > SPEC_MAX_ENV)
        return bad(l, "env", "too many variables (at most %d)", SPEC_MAX_ENV);
    const char *key;
    json_t *val;
    char field[FIELD_MAX];
    json_object_foreach(v, key, val) {
        key_field(field, sizeof field, "env.", key);
        int r = 0;
        const char *s = get_string(l, val, field, &r);
        if (!s)
            return r;
        if (spec_set_env(l->s, key, s))
            return oom(l);
    }
    return 0;
}

static int f_limits(struct load *l, json_t *v)
{
    if (!json_is_object(v))
        return bad(l, "limits", "must be an object");
    const char *key;
    json_t *val;
    json_object_foreach(v, key, val) {
        int r;
        uint64_t x = 0;
        if (strcmp(key, "timeoutMs") == 0) {
            r = load_uint(l, val, "limits.timeoutMs", SPEC_MAX_INT, &l->s->timeout_ms);
        } else if (strcmp(key, "memoryBytes") == 0) {
            r = load_uint(l, val, "limits.memoryBytes", SPEC_MAX_INT, &l->s->memory_max);
        } else if (strcmp(key, "pids") == 0) {
            r = load_uint(l, val, "limits.pids", UINT32_MAX, &x);
            l->s->pids_max = (uint32_t)x;
        } else {
            char field[FIELD_MAX];
            key_field(field, sizeof field, "limits.", key);
            r = bad(l, field, "unknown field");
        }
        if (r)
            return r;
    }
    return 0;
}

static int f_backend(struct load *l, json_t *v)
{
    int r = 0;
    const char *name = get_string(l, v, "backend", &r);
    if (!name)
        return r;
    int b = spec_backend_parse(name);
    if (b < 0) {
        char esc[300];
        spec_escape_name(esc, sizeof esc, name);
        return bad(l, "backend", "unknown backend \"%s\" (expected auto, native, none, microvm or docker)",
                   esc);
    }
    l->s->backend = b;
    return 0;
}

static int f_mode(struct load *l, json_t *v)
{
    int r = 0;
    const char *name = get_string(l, v, "mode", &r);
    if (!name)
        return r;
    int m = spec_mode_parse(name);
    if (m < 0) {
        char esc[300];
        spec_escape_name(esc, sizeof esc, name);
        return bad(l, "mode", "unknown mode \"%s\" (expected chat, review, plan or orchestrate)",
                   esc);
    }
    l->s->mode = m;
    return 0;
}

static int load_field(struct load *l, const char *key, json_t *v)
{
    struct ccsb_spec *s = l->s;
    if (strcmp(key, "sessionId") == 0)
        return load_opt_string(l, v, key, &s->session_id, 0);
    if (strcmp(key, "workspaceId") == 0)
        return load_opt_string(l, v, key, &s->workspace_id, 0);
    if (strcmp(key, "agentId") == 0)
        return load_opt_string(l, v, key, &s->agent_id, 0);
    if (strcmp(key, "upstreamProxy") == 0)
        return load_opt_string(l, v, key, &s->upstream_proxy, 0);
    if (strcmp(key, "backend") == 0)
        return f_backend(l, v);
    if (strcmp(key, "mode") == 0)
        return f_mode(l, v);
    if (strcmp(key, "guestWorkdir") == 0)
        return load_opt_string(l, v, key, &s->guest_workdir, 1);
    if (strcmp(key, "bindMounts") == 0)
        return f_binds(l, v);
    if (strcmp(key, "networkEnabled") == 0)
        return load_bool(l, v, key, &s->network_enabled);
    if (strcmp(key, "egressAllowlist") == 0)
        return load_list(l, v, key, &s->egress_allow, 0);
    if (strcmp(key, "egressDenylist") == 0)
        return load_list(l, v, key, &s->egress_deny, 0);
    if (strcmp(key, "protectedPaths") == 0)
        return load_list(l, v, key, &s->protected_paths, 1);
    if (strcmp(key, "runnerStateDirs") == 0)
        return load_list(l, v, key, &s->runner_state_dirs, 1);
    if (strcmp(key, "execGrantRoots") == 0)
        return load_list(l, v, key, &s->exec_grant_roots, 1);
    if (strcmp(key, "unixSockets") == 0)
        return load_list(l, v, key, &s->unix_sockets, 1);
    if (strcmp(key, "denyRead") == 0)
        return load_list(l, v, key, &s->deny_read, 1);
    if (strcmp(key, "denyWriteGlobs") == 0)
        return load_list(l, v, key, &s->deny_write_globs, 0);
    if (strcmp(key, "allowGitConfig") == 0)
        return load_bool(l, v, key, &s->allow_git_config);
    if (strcmp(key, "env") == 0)
        return f_env(l, v);
    if (strcmp(key, "limits") == 0)
        return f_limits(l, v);
    char field[FIELD_MAX];
    key_field(field, sizeof field, "", key);
    return bad(l, field, "unknown field");
}

int spec_from_json(const char *json, size_t len, struct ccsb_spec **out, char *err,
                   size_t errlen)
{
    json_error_t jerr;
    /* ALLOW_NUL so that a "\u0000" reaches us and gets an error naming its
     * field instead of a bare parser message. */
    json_t *root = json_loadb(json, len, JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL, &jerr);
    if (!root)
        return errf(err, errlen, CCSB_E_SPEC, "invalid JSON at line %d, column %d: %s",
                    jerr.line, jerr.column, jerr.text);
    int r = 0;
    struct ccsb_spec *s = NULL;
    if (!json_is_object(root)) {
        r = errf(err, errlen, CCSB_E_SPEC, "spec: must be a JSON object");
        goto out;
    }
    if (!(s = spec_new())) {
        r = errf(err, errlen, CCSB_E_NOMEM, "out of memory");
        goto out;
    }
    struct load l = {.s = s, .err = err, .errlen = errlen};
    const char *key;
    json_t *v;
    json_object_foreach(root, key, v) {
        if ((r = load_field(&l, key, v)))
            goto out;
    }
    if ((r = spec_validate(s, err, errlen)))
        goto out;
    *out = s;
    s = NULL;
out:
    spec_free(s);
    json_decref(root);
    return r;
}
