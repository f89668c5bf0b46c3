/* The spec's lifetime and the mutations shared by the builder and the loader. */
#include "spec/spec.h"

#include <stdlib.h>
#include <string.h>

#include "ccsandbox/ccsandbox.h"

struct ccsb_spec *spec_new(void)
{
    struct ccsb_spec *s = calloc(1, sizeof *s);
    if (!s)
        return NULL;
    s->backend = CCSB_BACKEND_AUTO;
    s->mode = CCSB_MODE_CHAT;
    s->network_enabled = 1;
    return s;
}

static void free_binds(struct ccsb_spec *s)
{
    for (size_t i = 0; i < s->n_binds; i++) {
        free(s->binds[i].host_path);
        free(s->binds[i].guest_path);
    }
    free(s->binds);
    s->binds = NULL;
    s->n_binds = 0;
}

void spec_free(struct ccsb_spec *s)
{
    if (!s)
        return;
    free(s->session_id);
    free(s->workspace_id);
    free(s->agent_id);
    free(s->upstream_proxy);
    free(s->guest_workdir);
    free_binds(s);
    strv_clear(&s->egress_allow);
    strv_clear(&s->egress_deny);
    strv_clear(&s->protected_paths);
    strv_clear(&s->runner_state_dirs);
    strv_clear(&s->exec_grant_roots);
    strv_clear(&s->unix_sockets);
    strv_clear(&s->deny_read);
    strv_clear(&s->deny_write_globs);
    strv_clear(&s->env_names);
    strv_clear(&s->env_values);
    free(s);
}

char *spec_path_normalize(const char *path)
{
    size_t n = strlen(path);
    char *out = malloc(n + 1);
    if (!out)
        return NULL;
    size_t o = 0;
    for (size_t i = 0; i < n; i++) {
        if (path[i] == '/' && o > 0 && out[o - 1] == '/')
            continue;
        out[o++] = path[i];
    }
    /* "/" stays "/"; "/a/" becomes "/a". */
    while (o > 1 && out[o - 1] == '/')
        o--;
    out[o] = '\0';
    return out;
}

int spec_set_string(char **field, const char *value, int path)
{
    char *copy = NULL;
    if (value) {
        copy = path ? spec_path_normalize(value) : strdup(value);
        if (!copy)
            return CCSB_E_NOMEM;
    }
    free(*field);
    *field = copy;
    return 0;
}

int spec_add_path(struct strv *list, const char *path)
{
    char *copy = spec_path_normalize(path);
    if (!copy || strv_push_owned(list, copy) < 0)
        return CCSB_E_NOMEM;
    return 0;
}

int spec_add_bind(struct ccsb_spec *s, const char *host, const char *guest, int ro)
{
    struct spec_bind b = {0};
    b.host_path = spec_path_normalize(host);
    b.guest_path = spec_path_normalize(guest ? guest : host);
    b.read_only = ro ? 1 : 0;
    struct spec_bind *v = NULL;
    if (b.host_path && b.guest_path)
        v = realloc(s->binds, (s->n_binds + 1) * sizeof *v);
    if (!v) {
        free(b.host_path);
        free(b.guest_path);
        return CCSB_E_NOMEM;
    }
    v[s->n_binds++] = b;
    s->binds = v;
    return 0;
}

int spec_set_env(struct ccsb_spec *s, const char *name, const char *value)
{
    for (size_t i = 0; i < s->env_names.n; i++) {
        if (strcmp(s->env_names.v[i], name) == 0) {
            char *copy = strdup(value);
            if (!copy)
                return CCSB_E_NOMEM;
            free(s->env_values.v[i]);
            s->env_values.v[i] = copy;
            return 0;
        }
    }
    if (strv_push(&s->env_names, name) < 0)
        return CCSB_E_NOMEM;
    if (strv_push(&s->env_values, value) < 0) {
        /* Keep the two arrays parallel. */
        free(s->env_names.v[--s->env_names.n]);
        s->env_names.v[s->env_names.n] = NULL;
        return CCSB_E_NOMEM;
    }
    return 0;
}

const char *spec_workdir(const struct ccsb_spec *s)
{
    if (s->guest_workdir)
        return s->guest_workdir;
    if (s->n_binds > 0)
        return s->binds[0].guest_path;
    return "/tmp";
}

static int dup_opt(char **dst, const char *src)
{
    if (!src)
        return 0;
    *dst = strdup(src);
    return *dst ? 0 : -1;
}

struct ccsb_spec *spec_copy(const struct ccsb_spec *src)
{
    struct ccsb_spec *s = spec_new();
    if (!s)
        return NULL;
    s->backend = src->backend;
    s->mode = src->mode;
    s->network_enabled = src->network_enabled;
    s->allow_git_config = src->allow_git_config;
    s->timeout_ms = src->timeout_ms;
    s->memory_max = src->memory_max;
    s->pids_max = src->pids_max;
    if (dup_opt(&s->session_id, src->session_id) < 0 ||
        dup_opt(&s->workspace_id, src->workspace_id) < 0 ||
        dup_opt(&s->agent_id, src->agent_id) < 0 ||
        dup_opt(&s->upstream_proxy, src->upstream_proxy) < 0 ||
        dup_opt(&s->guest_workdir, src->guest_workdir) < 0)
        goto fail;
    if (src->n_binds > 0) {
        s->binds = calloc(src->n_binds, sizeof *s->binds);
        if (!s->binds)
            goto fail;
        for (size_t i = 0; i < src->n_binds; i++) {
            struct spec_bind *b = &s->binds[i];
            s->n_binds = i + 1; /* so a failure frees what is there */
            b->read_only = src->binds[i].read_only;
            if (dup_opt(&b->host_path, src->binds[i].host_path) < 0 ||
                dup_opt(&b->guest_path, src->binds[i].guest_path) < 0)
                goto fail;
        }
    }
    if (strv_copy(&s->egress_allow, &src->egress_allow) < 0 ||
        strv_copy(&s->egress_deny, &src->egress_deny) < 0 ||
        strv_copy(&s->protected_paths, &src->protected_paths) < 0 ||
        strv_copy(&s->runner_state_dirs, &src->runner_state_dirs) < 0 ||
        strv_copy(&s->exec_grant_roots, &src->exec_grant_roots) < 0 ||
        strv_copy(&s->unix_sockets, &src->unix_sockets) < 0 ||
        strv_copy(&s->deny_read, &src->deny_read) < 0 ||
        strv_copy(&s->deny_write_globs, &src->deny_write_globs) < 0 ||
        strv_copy(&s->env_names, &src->env_names) < 0 ||
        strv_copy(&s->env_values, &src->env_values) < 0)
        goto fail;
    return s;
fail:
    spec_free(s);
    return NULL;
}
