/*
 * spec -> JSON. Every field is written, defaults included, in the order a
 * person reads them; spec_from_json of the result gives back the same spec.
 */
#include "spec/spec.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "ccsandbox/ccsandbox.h"

/* Steals v; 0 or -1 (v NULL: its constructor failed). */
static int put(json_t *obj, const char *key, json_t *v)
{
    return v ? json_object_set_new(obj, key, v) : -1;
}

static json_t *opt_string(const char *s)
{
    return s ? json_string(s) : json_null();
}

static json_t *string_array(const struct strv *sv)
{
    json_t *a = json_array();
    for (size_t i = 0; a && i < sv->n; i++) {
        json_t *e = json_string(sv->v[i]);
        if (!e || json_array_append_new(a, e) < 0) {
            json_decref(a);
            return NULL;
        }
    }
    return a;
}

static json_t *binds(const struct ccsb_spec *s)
{
    json_t *a = json_array();
    for (size_t i = 0; a && i < s->n_binds; i++) {
        json_t *b = json_object();
        if (!b || put(b, "hostPath", json_string(s->binds[i].host_path)) ||
            put(b, "guestPath", json_string(s->binds[i].guest_path)) ||
            put(b, "readOnly", json_boolean(s->binds[i].read_only)) ||
            json_array_append_new(a, b) < 0) {
            json_decref(a);
            return NULL;
        }
    }
    return a;
}

static json_t *env(const struct ccsb_spec *s)
{
    json_t *o = json_object();
    for (size_t i = 0; o && i < s->env_names.n; i++) {
        if (put(o, s->env_names.v[i], json_string(s->env_values.v[i]))) {
            json_decref(o);
            return NULL;
        }
    }
    return o;
}

static json_t *limits(const struct ccsb_spec *s)
{
    json_t *o = json_object();
    if (!o || put(o, "timeoutMs", json_integer((json_int_t)s->timeout_ms)) ||
        put(o, "memoryBytes", json_integer((json_int_t)s->memory_max)) ||
        put(o, "pids", json_integer((json_int_t)s->pids_max))) {
        json_decref(o);
        return NULL;
    }
    return o;
}

/* Whether every value has a JSON form: jansson refuses strings that are not
 * UTF-8, and integers must survive a reader that uses doubles. */
static int representable(const struct ccsb_spec *s)
{
    const char *opt[] = {s->session_id, s->workspace_id, s->agent_id, s->guest_workdir,
                         s->upstream_proxy};
    for (size_t i = 0; i < sizeof opt / sizeof opt[0]; i++)
        if (opt[i] && !spec_utf8_valid(opt[i]))
            return 0;
    for (size_t i = 0; i < s->n_binds; i++)
        if (!spec_utf8_valid(s->binds[i].host_path) || !spec_utf8_valid(s->binds[i].guest_path))
            return 0;
    const struct strv *lists[] = {
        &s->egress_allow, &s->egress_deny, &s->protected_paths, &s->runner_state_dirs,
        &s->exec_grant_roots, &s->unix_sockets, &s->deny_read, &s->deny_write_globs, &s->env_names,
        &s->env_values,
    };
    for (size_t k = 0; k < sizeof lists / sizeof lists[0]; k++)
        for (size_t i = 0; i < lists[k]->n; i++)
            if (!spec_utf8_valid(lists[k]->v[i]))
                return 0;
    return spec_backend_name(s->backend) && spec_mode_name(s->mode) &&
           s->timeout_ms <= SPEC_MAX_INT && s->memory_max <= SPEC_MAX_INT;
}

static json_t *to_object(const struct ccsb_spec *s)
{
    const char *backend = spec_backend_name(s->backend);
    const char *mode = spec_mode_name(s->mode);
    json_t *o = json_object();
    if (!o || put(o, "sessionId", opt_string(s->session_id)) ||
        put(o, "workspaceId", opt_string(s->workspace_id)) ||
        put(o, "agentId", opt_string(s->agent_id)) ||
        put(o, "backend", json_string(backend)) || put(o, "mode", json_string(mode)) ||
        put(o, "guestWorkdir", opt_string(s->guest_workdir)) ||
        put(o, "bindMounts", binds(s)) ||
        put(o, "networkEnabled", json_boolean(s->network_enabled)) ||
        put(o, "egressAllowlist", string_array(&s->egress_allow)) ||
        put(o, "egressDenylist", string_array(&s->egress_deny)) ||
        put(o, "protectedPaths", string_array(&s->protected_paths)) ||
        put(o, "runnerStateDirs", string_array(&s->runner_state_dirs)) ||
        put(o, "execGrantRoots", string_array(&s->exec_grant_roots)) ||
        put(o, "denyRead", string_array(&s->deny_read)) ||
        put(o, "denyWriteGlobs", string_array(&s->deny_write_globs)) ||
        put(o, "unixSockets", string_array(&s->unix_sockets)) ||
        put(o, "allowGitConfig", json_boolean(s->allow_git_config)) ||
        put(o, "upstreamProxy", opt_string(s->upstream_proxy)) ||
        put(o, "env", env(s)) || put(o, "limits", limits(s))) {
        json_decref(o);
        return NULL;
    }
    return o;
}

int spec_to_json(const struct ccsb_spec *s, char **out)
{
    if (!representable(s))
        return CCSB_E_SPEC;
    json_t *o = to_object(s);
    if (!o)
        return CCSB_E_NOMEM;
    const size_t flags = JSON_INDENT(2) | JSON_PRESERVE_ORDER;
    /* Dump into our own malloc'd buffer: jansson's allocator may be a host's
     * custom one (json_set_alloc_funcs), and callers free with ccsb_free. */
    size_t n = json_dumpb(o, NULL, 0, flags);
    char *buf = n ? malloc(n + 1) : NULL;
    if (!buf || json_dumpb(o, buf, n, flags) != n) {
        free(buf);
        json_decref(o);
        return CCSB_E_NOMEM;
    }
    buf[n] = '\0';
    json_decref(o);
    *out = buf;
    return 0;
}
