/* Fake filesystem and policy fixtures for the Seatbelt tests. */
#include "fixture.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include <ccsandbox/ccsandbox.h>

static void *xmalloc(size_t n)
{
    void *p = malloc(n);
    if (!p)
        abort();
    return p;
}

static char *xstrdup(const char *s)
{
    if (!s)
        return NULL;
    char *d = strdup(s);
    if (!d)
        abort();
    return d;
}

/* ------------------------------------------------------------------ */
/* Fake filesystem                                                      */
/* ------------------------------------------------------------------ */

void fake_fs_clear(struct fake_fs *fs)
{
    strv_clear(&fs->link_from);
    strv_clear(&fs->link_to);
    strv_clear(&fs->exists);
    fs->calls = 0;
}

void fake_fs_macos(struct fake_fs *fs)
{
    static const char *const links[][2] = {
        {"/tmp", "/private/tmp"},
        {"/var", "/private/var"},
        {"/etc", "/private/etc"},
    };
    for (size_t i = 0; i < sizeof(links) / sizeof(links[0]); i++) {
        if (strv_push(&fs->link_from, links[i][0]) < 0 || strv_push(&fs->link_to, links[i][1]) < 0 ||
            strv_push(&fs->exists, links[i][1]) < 0)
            abort();
    }
}

static int exists(const struct fake_fs *fs, const char *p)
{
    if (strcmp(p, "/") == 0)
        return 1;
    size_t n = strlen(p);
    for (size_t i = 0; i < fs->exists.n; i++) {
        const char *e = fs->exists.v[i];
        if (strncmp(e, p, n) == 0 && (e[n] == '\0' || e[n] == '/'))
            return 1;
    }
    return 0;
}

char *fake_resolve(const char *path, void *userdata)
{
    struct fake_fs *fs = userdata;
    fs->calls++;
    if (!path || path[0] != '/')
        return NULL;
    char *cur = xstrdup(path);
    for (int iter = 0; iter < 40; iter++) {
        int replaced = 0;
        /* the shortest symlinked prefix first, like a path walk */
        for (size_t cut = 1; !replaced && cur[cut - 1] != '\0'; cut++) { /* cur may be new */
            if (cur[cut] != '/' && cur[cut] != '\0')
                continue;
            for (size_t i = 0; i < fs->link_from.n; i++) {
                const char *from = fs->link_from.v[i];
                if (strlen(from) == cut && strncmp(cur, from, cut) == 0) {
                    const char *to = fs->link_to.v[i];
                    char *next = xmalloc(strlen(to) + strlen(cur + cut) + 1);
                    strcpy(next, to);
                    strcat(next, cur + cut);
                    free(cur);
                    cur = next;
                    replaced = 1;
                    break;
                }
            }
        }
        if (!replaced) {
            if (exists(fs, cur))
                return cur;
            free(cur);
            return NULL;
        }
    }
    free(cur); /* a loop */
    return NULL;
}

int fake_kind(const char *path, void *userdata)
{
    struct fake_fs *fs = userdata;
    unsigned calls = fs->calls;
    char *r = fake_resolve(path, userdata);
    fs->calls = calls;
    free(r);
    return r ? 1 : -1;
}

/* ------------------------------------------------------------------ */
/* Policies by hand                                                     */
/* ------------------------------------------------------------------ */

void fx_paths_add(struct policy_paths *ps, const char *path, const char *resolved)
{
    struct policy_path *v = realloc(ps->v, (ps->n + 1) * sizeof(*v));
    if (!v)
        abort();
    ps->v = v;
    memset(&v[ps->n], 0, sizeof(v[ps->n]));
    v[ps->n].path = xstrdup(path);
    v[ps->n].resolved = xstrdup(resolved);
    v[ps->n].is_glob = strpbrk(path, "*?") != NULL;
    ps->n++;
}

void fx_paths_clear(struct policy_paths *ps)
{
    for (size_t i = 0; i < ps->n; i++) {
        free(ps->v[i].path);
        free(ps->v[i].resolved);
    }
    free(ps->v);
    ps->v = NULL;
    ps->n = 0;
}

void fx_policy_clear(struct ccsb_policy *p)
{
    free(p->guest_workdir);
    free(p->home);
    free(p->session_tmp);
    for (size_t i = 0; i < p->n_mounts; i++) {
        free(p->mounts[i].host);
        free(p->mounts[i].guest);
    }
    free(p->mounts);
    fx_paths_clear(&p->writable_roots);
    fx_paths_clear(&p->deny_read);
    fx_paths_clear(&p->deny_write);
    fx_paths_clear(&p->exec_grant_roots);
    fx_paths_clear(&p->unix_sockets);
    strv_clear(&p->deny_write_globs);
    strv_clear(&p->env_unset);
    strv_clear(&p->env_set_names);
    strv_clear(&p->env_set_values);
    memset(p, 0, sizeof(*p));
}

/* ------------------------------------------------------------------ */
/* JSON fixtures                                                        */
/* ------------------------------------------------------------------ */

char *read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    size_t cap = 4096, n = 0;
    char *buf = xmalloc(cap);
    size_t k;
    while ((k = fread(buf + n, 1, cap - n - 1, f)) > 0) {
        n += k;
        if (cap - n - 1 == 0) {
            cap *= 2;
            char *g = realloc(buf, cap);
            if (!g)
                abort();
            buf = g;
        }
    }
    int bad = ferror(f);
    fclose(f);
    if (bad) {
        free(buf);
        return NULL;
    }
    buf[n] = '\0';
    if (len)
        *len = n;
    return buf;
}

static int ferr(char *err, size_t errlen, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
    return -1;
}

static const char *opt_str(json_t *o, const char *key)
{
    json_t *v = json_object_get(o, key);
    return json_is_string(v) ? json_string_value(v) : NULL;
}

/* An array of "path" or {"path":..., "resolved":...}. */
static int load_paths(json_t *root, const char *key, struct policy_paths *ps, char *err,
                      size_t errlen)
{
    json_t *a = json_object_get(root, key);
    if (!a)
        return 0;
    if (!json_is_array(a))
        return ferr(err, errlen, "%s: not an array", key);
    size_t i;
    json_t *v;
    json_array_foreach(a, i, v) {
        if (json_is_string(v)) {
            fx_paths_add(ps, json_string_value(v), NULL);
        } else if (json_is_object(v) && opt_str(v, "path")) {
            fx_paths_add(ps, opt_str(v, "path"), opt_str(v, "resolved"));
            ps->v[ps->n - 1].exists = json_is_true(json_object_get(v, "exists"));
        } else {
            return ferr(err, errlen, "%s[%zu]: expected a path or {path, resolved}", key, i);
        }
    }
    return 0;
}

static int load_strv(json_t *root, const char *key, struct strv *sv, char *err, size_t errlen)
{
    json_t *a = json_object_get(root, key);
    if (!a)
        return 0;
    if (!json_is_array(a))
        return ferr(err, errlen, "%s: not an array", key);
    size_t i;
    json_t *v;
    json_array_foreach(a, i, v) {
        if (!json_is_string(v))
            return ferr(err, errlen, "%s[%zu]: not a string", key, i);
        if (strv_push(sv, json_string_value(v)) < 0)
            abort();
    }
    return 0;
}

static int mode_from(const char *s)
{
    if (!s || !strcmp(s, "chat"))
        return CCSB_MODE_CHAT;
    if (!strcmp(s, "review"))
        return CCSB_MODE_REVIEW;
    if (!strcmp(s, "plan"))
        return CCSB_MODE_PLAN;
    if (!strcmp(s, "orchestrate"))
        return CCSB_MODE_ORCHESTRATE;
    return -1;
}

int fixture_load(const char *file, struct fixture *fx, char *err, size_t errlen)
{
    memset(fx, 0, sizeof(*fx));
    json_error_t jerr;
    json_t *root = json_load_file(file, 0, &jerr);
    if (!root)
        return ferr(err, errlen, "%s:%d: %s", file, jerr.line, jerr.text);
    int rc = -1;
    struct ccsb_policy *p = &fx->policy;
    p->mode = mode_from(opt_str(root, "mode"));
    if (p->mode < 0) {
        ferr(err, errlen, "mode: unknown");
        goto out;
    }
    p->home = xstrdup(opt_str(root, "home"));
    p->session_tmp = xstrdup(opt_str(root, "session_tmp"));
    p->guest_workdir = xstrdup(opt_str(root, "workdir"));
    json_t *ne = json_object_get(root, "network_enabled");
    p->network_enabled = ne ? json_is_true(ne) : 1;
    if (load_paths(root, "writable_roots", &p->writable_roots, err, errlen) < 0 ||
        load_paths(root, "deny_read", &p->deny_read, err, errlen) < 0 ||
        load_paths(root, "deny_write", &p->deny_write, err, errlen) < 0 ||
        load_paths(root, "exec_grant_roots", &p->exec_grant_roots, err, errlen) < 0 ||
        load_strv(root, "deny_write_globs", &p->deny_write_globs, err, errlen) < 0)
        goto out;
    json_t *mounts = json_object_get(root, "mounts");
    if (json_is_array(mounts)) {
        size_t i;
        json_t *m;
        p->mounts = calloc(json_array_size(mounts) + 1, sizeof(*p->mounts));
        if (!p->mounts)
            abort();
        json_array_foreach(mounts, i, m) {
            p->mounts[i].host = xstrdup(opt_str(m, "host"));
            p->mounts[i].guest = xstrdup(opt_str(m, "guest") ? opt_str(m, "guest") : opt_str(m, "host"));
            p->mounts[i].writable = json_is_true(json_object_get(m, "writable"));
            p->n_mounts++;
        }
    }

    /* The fake filesystem: macOS's own links unless "links" replaces them. */
    json_t *fs = json_object_get(root, "fs");
    json_t *links = json_object_get(fs, "links");
    if (links) {
        const char *k;
        json_t *v;
        json_object_foreach(links, k, v) {
            if (!json_is_string(v)) {
                ferr(err, errlen, "fs.links.%s: not a string", k);
                goto out;
            }
            if (strv_push(&fx->fs.link_from, k) < 0 || strv_push(&fx->fs.link_to, json_string_value(v)) < 0)
                abort();
        }
    } else {
        fake_fs_macos(&fx->fs);
    }
    if (load_strv(fs, "exists", &fx->fs.exists, err, errlen) < 0)
        goto out;
    fx->host.home = p->home;
    fx->host.session_tmp = p->session_tmp;
    fx->host.resolve = fake_resolve;
    fx->host.resolve_userdata = &fx->fs;

    json_t *o = json_object_get(root, "opts");
    const char *preset = opt_str(o, "preset");
    fx->opts.preset = preset && !strcmp(preset, "terminal") ? SEATBELT_PRESET_TERMINAL
                                                            : SEATBELT_PRESET_SESSION;
    fx->session_id = xstrdup(opt_str(o, "session_id"));
    fx->exec_tag = xstrdup(opt_str(o, "exec_tag"));
    fx->workdir = xstrdup(opt_str(o, "workdir"));
    fx->helper_path = xstrdup(opt_str(o, "helper_path"));
    fx->opts.session_id = fx->session_id;
    fx->opts.exec_tag = fx->exec_tag;
    fx->opts.workdir = fx->workdir;
    fx->opts.helper_path = fx->helper_path;
    fx->opts.http_port = (uint16_t)json_integer_value(json_object_get(o, "http_port"));
    fx->opts.socks_port = (uint16_t)json_integer_value(json_object_get(o, "socks_port"));
    fx->opts.host = &fx->host;
    rc = 0;
out:
    json_decref(root);
    if (rc < 0)
        fixture_free(fx);
    return rc;
}

void fixture_free(struct fixture *fx)
{
    fx_policy_clear(&fx->policy);
    fake_fs_clear(&fx->fs);
    free(fx->session_id);
    free(fx->exec_tag);
    free(fx->workdir);
    free(fx->helper_path);
    free(fx->name);
    memset(fx, 0, sizeof(*fx));
}
