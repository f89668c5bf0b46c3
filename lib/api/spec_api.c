/*
 * The exported spec builder. Setters copy their strings and check only
 * their own argument (NULL where a value is required, enums, integer
 * range); what a string says is judged by ccsb_spec_validate, which can
 * name the field in its message. A setter has nowhere to put one.
 */
#include <stdio.h>
#include <stdlib.h>
#include <strings.h>

#include "ccsandbox/ccsandbox.h"
#include "spec/spec.h"

CCSB_API int ccsb_backend_from_name(const char *name)
{
    /* Lenient on purpose: this reads names stored by older hosts. */
    static const struct {
        const char *name;
        int backend;
    } known[] = {
        {"auto", CCSB_BACKEND_AUTO},
        {"native", CCSB_BACKEND_NATIVE},
        {"docker", CCSB_BACKEND_NATIVE},
        {"none", CCSB_BACKEND_NONE},
        {"microvm", CCSB_BACKEND_MICROVM},
    };
    if (!name)
        return CCSB_BACKEND_NONE;
    for (size_t i = 0; i < sizeof known / sizeof known[0]; i++)
        if (strcasecmp(name, known[i].name) == 0)
            return known[i].backend;
    return CCSB_BACKEND_NONE;
}

CCSB_API const char *ccsb_backend_name(int backend)
{
    const char *n = spec_backend_name(backend);
    return n ? n : "unknown";
}

CCSB_API const char *ccsb_mode_name(int mode)
{
    const char *n = spec_mode_name(mode);
    return n ? n : "unknown";
}

CCSB_API int ccsb_spec_new(ccsb_spec **out)
{
    if (!out)
        return CCSB_E_INVAL;
    *out = spec_new();
    return *out ? CCSB_OK : CCSB_E_NOMEM;
}

CCSB_API void ccsb_spec_free(ccsb_spec *spec)
{
    spec_free(spec);
}

CCSB_API int ccsb_spec_copy(const ccsb_spec *spec, ccsb_spec **out)
{
    if (!spec || !out)
        return CCSB_E_INVAL;
    *out = spec_copy(spec);
    return *out ? CCSB_OK : CCSB_E_NOMEM;
}

CCSB_API int ccsb_spec_set_session_id(ccsb_spec *spec, const char *id)
{
    if (!spec)
        return CCSB_E_INVAL;
    return spec_set_string(&spec->session_id, id, 0);
}

CCSB_API int ccsb_spec_set_workspace_id(ccsb_spec *spec, const char *id)
{
    if (!spec)
        return CCSB_E_INVAL;
    return spec_set_string(&spec->workspace_id, id, 0);
}

CCSB_API int ccsb_spec_set_upstream_proxy(ccsb_spec *spec, const char *url)
{
    if (!spec)
        return CCSB_E_INVAL;
    return spec_set_string(&spec->upstream_proxy, url, 0);
}

CCSB_API int ccsb_spec_set_agent_id(ccsb_spec *spec, const char *id)
{
    if (!spec)
        return CCSB_E_INVAL;
    return spec_set_string(&spec->agent_id, id, 0);
}

CCSB_API int ccsb_spec_set_backend(ccsb_spec *spec, int backend)
{
    if (!spec || !spec_backend_name(backend))
        return CCSB_E_INVAL;
    spec->backend = backend;
    return CCSB_OK;
}

CCSB_API int ccsb_spec_set_mode(ccsb_spec *spec, int mode)
{
    if (!spec || !spec_mode_name(mode))
        return CCSB_E_INVAL;
    spec->mode = mode;
    return CCSB_OK;
}

CCSB_API int ccsb_spec_set_guest_workdir(ccsb_spec *spec, const char *path)
{
    if (!spec)
        return CCSB_E_INVAL;
    return spec_set_string(&spec->guest_workdir, path, 1);
}

CCSB_API int ccsb_spec_add_bind_mount(ccsb_spec *spec, const char *host_path,
                                      const char *guest_path, int read_only)
{
    if (!spec || !host_path)
        return CCSB_E_INVAL;
    return spec_add_bind(spec, host_path, guest_path, read_only);
}

CCSB_API int ccsb_spec_set_network_enabled(ccsb_spec *spec, int enabled)
{
    if (!spec)
        return CCSB_E_INVAL;
    spec->network_enabled = enabled ? 1 : 0;
    return CCSB_OK;
}

static int add_string(ccsb_spec *spec, struct strv *list, const char *s)
{
    if (!spec || !s)
        return CCSB_E_INVAL;
    return strv_push(list, s) < 0 ? CCSB_E_NOMEM : CCSB_OK;
}

static int add_path(ccsb_spec *spec, struct strv *list, const char *path)
{
    if (!spec || !path)
        return CCSB_E_INVAL;
    return spec_add_path(list, path);
}

CCSB_API int ccsb_spec_add_egress_allow(ccsb_spec *spec, const char *entry)
{
    return add_string(spec, spec ? &spec->egress_allow : NULL, entry);
}

CCSB_API int ccsb_spec_add_egress_deny(ccsb_spec *spec, const char *entry)
{
    return add_string(spec, spec ? &spec->egress_deny : NULL, entry);
}

CCSB_API int ccsb_spec_add_protected_path(ccsb_spec *spec, const char *path)
{
    return add_path(spec, spec ? &spec->protected_paths : NULL, path);
}

CCSB_API int ccsb_spec_add_runner_state_dir(ccsb_spec *spec, const char *path)
{
    return add_path(spec, spec ? &spec->runner_state_dirs : NULL, path);
}

CCSB_API int ccsb_spec_add_exec_grant_root(ccsb_spec *spec, const char *path)
{
    return add_path(spec, spec ? &spec->exec_grant_roots : NULL, path);
}

CCSB_API int ccsb_spec_add_unix_socket(ccsb_spec *spec, const char *path)
{
    return add_path(spec, spec ? &spec->unix_sockets : NULL, path);
}

CCSB_API int ccsb_spec_add_deny_read(ccsb_spec *spec, const char *path)
{
    return add_path(spec, spec ? &spec->deny_read : NULL, path);
}

CCSB_API int ccsb_spec_add_deny_write_glob(ccsb_spec *spec, const char *glob)
{
    /* A glob names one path component; it is not a path. */
    return add_string(spec, spec ? &spec->deny_write_globs : NULL, glob);
}

CCSB_API int ccsb_spec_set_allow_git_config(ccsb_spec *spec, int allow)
{
    if (!spec)
        return CCSB_E_INVAL;
    spec->allow_git_config = allow ? 1 : 0;
    return CCSB_OK;
}

CCSB_API int ccsb_spec_set_env(ccsb_spec *spec, const char *name, const char *value)
{
    if (!spec || !name || !value)
        return CCSB_E_INVAL;
    return spec_set_env(spec, name, value);
}

CCSB_API int ccsb_spec_set_timeout_ms(ccsb_spec *spec, uint64_t ms)
{
    if (!spec || ms > SPEC_MAX_INT)
        return CCSB_E_INVAL;
    spec->timeout_ms = ms;
    return CCSB_OK;
}

CCSB_API int ccsb_spec_set_memory_max(ccsb_spec *spec, uint64_t bytes)
{
    if (!spec || bytes > SPEC_MAX_INT)
        return CCSB_E_INVAL;
    spec->memory_max = bytes;
    return CCSB_OK;
}

CCSB_API int ccsb_spec_set_pids_max(ccsb_spec *spec, uint32_t count)
{
    if (!spec)
        return CCSB_E_INVAL;
    spec->pids_max = count;
    return CCSB_OK;
}

CCSB_API int ccsb_spec_validate(const ccsb_spec *spec, char *errbuf, size_t errbuf_len)
{
    if (!spec) {
        if (errbuf && errbuf_len)
            snprintf(errbuf, errbuf_len, "spec: missing");
        return CCSB_E_INVAL;
    }
    if (errbuf && errbuf_len)
        errbuf[0] = '\0';
    return spec_validate(spec, errbuf, errbuf_len);
}

CCSB_API int ccsb_spec_from_json(ccsb_spec **out, const char *json, size_t len,
                                 char *errbuf, size_t errbuf_len)
{
    if (errbuf && errbuf_len)
        errbuf[0] = '\0';
    if (!out || !json) {
        if (errbuf && errbuf_len)
            snprintf(errbuf, errbuf_len, "%s: missing", out ? "json" : "out");
        return CCSB_E_INVAL;
    }
    return spec_from_json(json, len, out, errbuf, errbuf_len);
}

CCSB_API int ccsb_spec_to_json(const ccsb_spec *spec, char **out_json)
{
    if (!spec || !out_json)
        return CCSB_E_INVAL;
    return spec_to_json(spec, out_json);
}
