/*
 * spec + host facts -> resolved policy. Pure apart from realpath/stat and
 * reading a worktree's small git pointer files (gitdir.c). Any doubt about a
 * path that would widen access is an error here, never a guess: the
 * backends enforce exactly what this returns.
 */
#include "policy/policy.h"

#include <ctype.h>
#include <errno.h>
#include <glob.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "ccsandbox/ccsandbox.h"
#include "policy/gitdir.h"
#include "policy/lists.h"
#include "policy/paths.h"
#include "spec/spec.h"
#include "util/err.h"
#include "util/rpmemo.h"

struct build {
    const struct ccsb_spec *spec;
    const struct policy_host *h;
    struct ccsb_policy *p;
    char *err;
    size_t errlen;
};

static int pfail(struct build *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static int pfail(struct build *b, const char *fmt, ...)
{
    if (b->err && b->errlen) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(b->err, b->errlen, fmt, ap);
        va_end(ap);
    }
    return CCSB_E_POLICY;
}

static int nomem(struct build *b)
{
    return errf(b->err, b->errlen, CCSB_E_NOMEM, "out of memory");
}

static int is_kernel_fs(const char *path)
{
    return path_within(path, "/proc") || path_within(path, "/dev") ||
           path_within(path, "/sys");
}

/* "~" expanded with the host's home; an error when there is none. */
static int expand(struct build *b, const char *field, const char *path, char **out)
{
    if (path[0] == '~' && !b->p->home)
        return pfail(b, "%s: uses ~ but the host has no home directory", field);
    *out = path_expand_home(path, b->p->home);
    return *out ? 0 : nomem(b);
}

/* A path that becomes a mount must not be / or a kernel file system, in
 * either spelling (a symlink to /proc is still /proc). */
static int check_mount_path(struct build *b, const char *field, const char *path,
                            const char *resolved)
{
    if (strcmp(path, "/") == 0 || is_kernel_fs(path))
        return pfail(b, "%s: %s must not be /, /proc, /dev, /sys or inside them", field,
                     path);
    if (resolved && (strcmp(resolved, "/") == 0 || is_kernel_fs(resolved)))
        return pfail(b, "%s: %s resolves to %s, which must not be /, /proc, /dev, /sys or inside them",
                     field, path, resolved);
    return 0;
}

/* Takes ownership of host and guest. */
static int add_mount(struct build *b, char *host, char *guest, int writable, int kind,
                     int exists)
{
    struct ccsb_policy *p = b->p;
    struct policy_mount *v = realloc(p->mounts, (p->n_mounts + 1) * sizeof *v);
    if (!v) {
        free(host);
        free(guest);
        return nomem(b);
    }
    p->mounts = v;
    v[p->n_mounts++] = (struct policy_mount){
        .host = host, .guest = guest, .writable = writable, .kind = kind, .exists = exists,
    };
    return 0;
}

static int add_path(struct build *b, struct policy_paths *set, const char *path)
{
    return paths_add(set, b->h, path) ? nomem(b) : 0;
}

static int add_binds(struct build *b)
{
    const struct ccsb_spec *s = b->spec;
    char field[64];
    for (size_t i = 0; i < s->n_binds; i++) {
        char *host = NULL, *guest = NULL;
        snprintf(field, sizeof field, "bindMounts[%zu].hostPath", i);
        int r = expand(b, field, s->binds[i].host_path, &host);
        if (r)
            return r;
        char *resolved = path_resolve(b->h, host);
        if (!resolved) {
            r = pfail(b, "%s: %s does not exist or cannot be resolved", field, host);
            free(host);
            return r;
        }
        r = check_mount_path(b, field, host, resolved);
        free(resolved);
        if (r) {
            free(host);
            return r;
        }
        snprintf(field, sizeof field, "bindMounts[%zu].guestPath", i);
        if ((r = expand(b, field, s->binds[i].guest_path, &guest))) {
            free(host);
            return r;
        }
        if (strcmp(guest, "/") == 0 || is_kernel_fs(guest))
            r = pfail(b, "%s: %s must not be /, /proc, /dev, /sys or inside them", field, guest);
        for (size_t j = 0; !r && j < b->p->n_mounts; j++)
            if (strcmp(b->p->mounts[j].guest, guest) == 0)
                r = pfail(b, "%s: %s is also bindMounts[%zu].guestPath", field, guest, j);
        if (r) {
            free(host);
            free(guest);
            return r;
        }
        int writable = s->mode == CCSB_MODE_CHAT && !s->binds[i].read_only;
        if ((r = add_mount(b, host, guest, writable, writable ? POLICY_ROOT_BIND : 0, 1)))
            return r;
    }
    return 0;
}

static int add_runner_dirs(struct build *b)
{
    const struct strv *dirs = &b->spec->runner_state_dirs;
    char field[64];
    for (size_t i = 0; i < dirs->n; i++) {
        char *host = NULL;
        snprintf(field, sizeof field, "runnerStateDirs[%zu]", i);
        int r = expand(b, field, dirs->v[i], &host);
        if (r)
            return r;
        /* It may not exist yet (a cache created on first use); either way,
         * where it really is (or would be created) decides what becomes
         * writable. */
        int exists = 0;
        char *resolved = path_canonical(b->h, host, &exists);
        if (!resolved) {
            free(host);
            return nomem(b);
        }
        r = check_mount_path(b, field, host, resolved);
        free(resolved);
        char *guest = r ? NULL : strdup(host);
        if (r || !guest) {
            free(host);
            return r ? r : nomem(b);
        }
        if ((r = add_mount(b, host, guest, 1, POLICY_ROOT_RUNNER_STATE, exists)))
            return r;
    }
    return 0;
}

/* 1 when the repository's config turns on per-worktree config files. */
static int worktree_config_enabled(const char *gitdir)
{
    char *cfg = path_join(gitdir, "config");
    FILE *f = cfg ? fopen(cfg, "re") : NULL;
    free(cfg);
    if (!f)
        return 0;
    char line[512];
    int on = 0;
    while (!on && fgets(line, sizeof line, f)) {
        for (char *c = line; *c; c++)
            *c = (char)tolower((unsigned char)*c);
        on = strstr(line, "worktreeconfig") != NULL;
    }
    fclose(f);
    return on;
}

/*
 * A wildcard entry of the git-dir set (worktrees, any name, config.worktree):
 * the directories that exist now get the literal path, existing or not.
 * A worktree created later could only matter when the repository reads
 * per-worktree config at all; only then does the glob itself stay in the
 * policy, and the backend must enforce it at creation time or refuse.
 */
static int deny_gitdir_wildcard(struct build *b, const char *gitdir, const char *entry)
{
    const char *slash = strrchr(entry, '/');
    if (!slash || strpbrk(slash, "*?"))
        return 0; /* only a wildcard directory part is supported (lists.c) */
    char *dirpart = strndup(entry, (size_t)(slash - entry));
    char *pattern = dirpart ? path_join(gitdir, dirpart) : NULL;
    free(dirpart);
    if (!pattern)
        return nomem(b);
    glob_t g;
    int gr = glob(pattern, GLOB_ONLYDIR | GLOB_NOSORT, NULL, &g);
    free(pattern);
    int r = 0;
    for (size_t i = 0; gr == 0 && !r && i < g.gl_pathc; i++) {
        char *path = path_join(g.gl_pathv[i], slash + 1);
        r = path ? add_path(b, &b->p->deny_write, path) : nomem(b);
        free(path);
    }
    if (gr == 0)
        globfree(&g);
    if (!r && worktree_config_enabled(gitdir)) {
        char *path = path_join(gitdir, entry);
        r = path ? add_path(b, &b->p->deny_write, path) : nomem(b);
        free(path);
    }
    return r;
}

/* The git-dir deny set of one git dir. */
static int deny_gitdir(struct build *b, const char *gitdir)
{
    for (const struct policy_entry *e = policy_deny_write_gitdir; e->path; e++) {
        if ((e->flags & POLICY_ENTRY_GIT_CONFIG) && b->spec->allow_git_config)
            continue;
        int r;
        if (strpbrk(e->path, "*?")) {
            r = deny_gitdir_wildcard(b, gitdir, e->path);
        } else {
            char *path = path_join(gitdir, e->path);
            if (!path)
                return nomem(b);
            r = add_path(b, &b->p->deny_write, path);
            free(path);
        }
        if (r)
            return r;
    }
    return 0;
}

/*
 * The repository at the root of a mount. A worktree's `.git` file is itself
 * protected (re-pointed, it would hand the host's git a hooks directory of
 * the sandbox's choosing), and the git dirs it names get the git-dir deny
 * set. Only a verified worktree earns a mount of its common dir, so a
 * forged `.git` file can never widen what the sandbox sees.
 */
static int handle_repo(struct build *b, size_t mount_index, int deny)
{
    struct policy_mount *m = &b->p->mounts[mount_index];
    struct git_repo repo;
    if (git_repo_inspect(m->host, &repo))
        return nomem(b);
    int r = 0;
    if (repo.dotgit != GIT_DOTGIT_FILE) {
        if (deny) {
            char *dotgit = path_join(m->host, ".git");
            r = dotgit ? deny_gitdir(b, dotgit) : nomem(b);
            free(dotgit);
        }
        git_repo_clear(&repo);
        return r;
    }
    if (deny) {
        char *dotgit = path_join(m->host, ".git");
        r = dotgit ? add_path(b, &b->p->deny_write, dotgit) : nomem(b);
        free(dotgit);
        if (!r && repo.gitdir)
            r = deny_gitdir(b, repo.gitdir);
        if (!r && repo.commondir && strcmp(repo.commondir, repo.gitdir) != 0)
            r = deny_gitdir(b, repo.commondir);
    }
    if (!r && repo.verified && !is_kernel_fs(repo.commondir)) {
        int writable = m->writable;
        int dup = 0;
        for (size_t j = 0; j < b->p->n_mounts; j++)
            dup |= strcmp(b->p->mounts[j].host, repo.commondir) == 0;
        if (!dup) {
            char *host = strdup(repo.commondir), *guest = strdup(repo.commondir);
            if (!host || !guest) {
                free(host);
                free(guest);
                r = nomem(b);
            } else {
                r = add_mount(b, host, guest, writable, writable ? POLICY_ROOT_GITDIR : 0, 1);
            }
        }
    }
    git_repo_clear(&repo);
    return r;
}

/* path_kind of a path's resolved spelling. */
static int root_kind(struct build *b, const char *path)
{
    char *r = path_resolve(b->h, path);
    int k = path_kind(b->h, r ? r : path);
    free(r);
    return k;
}

static int add_mandatory(struct build *b)
{
    /* Mounts added by handle_repo (worktree git dirs) are not roots of
     * their own: their deny set comes from handle_repo. */
    size_t n = b->p->n_mounts;
    for (size_t i = 0; i < n; i++) {
        /* A bound file has no inside: nothing to protect in it. */
        if (b->p->mounts[i].exists && root_kind(b, b->p->mounts[i].host) == 0)
            continue;
        int writable = b->p->mounts[i].writable;
        if (writable) {
            for (const struct policy_entry *e = policy_deny_write_root; e->path; e++) {
                if ((e->flags & POLICY_ENTRY_GIT_CONFIG) && b->spec->allow_git_config)
                    continue;
                char *path = path_join(b->p->mounts[i].host, e->path);
                if (!path)
                    return nomem(b);
                int r = add_path(b, &b->p->deny_write, path);
                free(path);
                if (r)
                    return r;
            }
        }
        if (!b->p->mounts[i].exists)
            continue;
        int r = handle_repo(b, i, writable);
        if (r)
            return r;
    }
    return 0;
}

static int add_writable_roots(struct build *b)
{
    for (size_t i = 0; i < b->p->n_mounts; i++) {
        if (!b->p->mounts[i].writable)
            continue;
        int r = add_path(b, &b->p->writable_roots, b->p->mounts[i].host);
        if (r)
            return r;
    }
    if (b->p->session_tmp)
        return add_path(b, &b->p->writable_roots, b->p->session_tmp);
    return 0;
}

static int add_spec_paths(struct build *b, const char *name, const struct strv *list,
                          struct policy_paths *set, int not_root)
{
    char field[64];
    for (size_t i = 0; i < list->n; i++) {
        char *path = NULL;
        snprintf(field, sizeof field, "%s[%zu]", name, i);
        int r = expand(b, field, list->v[i], &path);
        if (r)
            return r;
        if (not_root && strcmp(path, "/") == 0)
            r = pfail(b, "%s: %s must not be /", field, list->v[i]);
        if (!r)
            r = add_path(b, set, path);
        free(path);
        if (r)
            return r;
    }
    return 0;
}

/* 1 when path (as written) lies at or under a writable root, in either of
 * the root's spellings. */
static int in_writable_root(const struct build *b, const char *path)
{
    const struct policy_paths *w = &b->p->writable_roots;
    for (size_t i = 0; i < w->n; i++)
        if (path_within(path, w->v[i].path) ||
            (w->v[i].resolved && path_within(path, w->v[i].resolved)))
            return 1;
    return 0;
}

/* unixSockets: each must be a unix socket now (it is bound in as is). */
static int check_sockets(struct build *b)
{
    const struct policy_paths *ps = &b->p->unix_sockets;
    for (size_t i = 0; i < ps->n; i++) {
        struct stat st;
        const char *path = ps->v[i].resolved ? ps->v[i].resolved : ps->v[i].path;
        if (stat(path, &st) < 0)
            return pfail(b, "unixSockets[%zu]: %s: %s", i, ps->v[i].path, strerror(errno));
        if (!S_ISSOCK(st.st_mode))
            return pfail(b, "unixSockets[%zu]: %s is not a unix socket", i, ps->v[i].path);
    }
    return 0;
}

static int add_secrets(struct build *b)
{
    if (b->p->home) {
        for (const struct policy_entry *e = policy_secret_home; e->path; e++) {
            char *path = path_join(b->p->home, e->path);
            if (!path)
                return nomem(b);
            /* Inside a writable root (a bound $HOME) a secret is never
             * writable either, existing or not: a planted ~/.aws/config
             * runs code on the host (credential_process), and one made by
             * the host later must not be readable through it. */
            int r = add_path(b, &b->p->deny_read, path);
            if (!r && !strpbrk(e->path, "*?") && in_writable_root(b, path))
                r = add_path(b, &b->p->deny_write, path);
            free(path);
            if (r)
                return r;
        }
    }
    for (const struct policy_entry *e = policy_secret_system; e->path; e++) {
        int r = add_path(b, &b->p->deny_read, e->path);
        if (r)
            return r;
    }
    return add_spec_paths(b, "denyRead", &b->spec->deny_read, &b->p->deny_read, 0);
}

/* The spec field a mount came from, for messages. */
static void mount_field(struct build *b, size_t i, char *out, size_t len)
{
    size_t nb = b->spec->n_binds, nr = b->spec->runner_state_dirs.n;
    if (i < nb)
        snprintf(out, len, "bindMounts[%zu].hostPath", i);
    else if (i < nb + nr)
        snprintf(out, len, "runnerStateDirs[%zu]", i - nb);
    else
        snprintf(out, len, "bindMounts (git worktree dir)");
}

/*
 * A mount at or inside a read-denied path would either vanish under the
 * deny (Linux) or, where a deny covers reads only, hand out write access
 * to a secret store (~/.ssh/authorized_keys). Refuse it instead.
 */
static int check_secret_mounts(struct build *b)
{
    const struct policy_paths *deny = &b->p->deny_read;
    for (size_t i = 0; i < b->p->n_mounts; i++) {
        const char *host = b->p->mounts[i].host;
        int exists;
        char *rhost = path_canonical(b->h, host, &exists);
        if (!rhost)
            return nomem(b);
        for (size_t k = 0; k < deny->n; k++) {
            const struct policy_path *d = &deny->v[k];
            if (d->is_glob)
                continue;
            const char *dp[] = {d->path, d->resolved};
            for (size_t j = 0; j < 2; j++) {
                if (!dp[j] || !(path_within(host, dp[j]) || path_within(rhost, dp[j])))
                    continue;
                char field[64];
                mount_field(b, i, field, sizeof field);
                int r = pfail(b, "%s: %s is inside the read-denied path %s", field, host, dp[j]);
                free(rhost);
                return r;
            }
        }
        free(rhost);
    }
    return 0;
}

static int add_env(struct build *b)
{
    struct ccsb_policy *p = b->p;
    for (size_t i = 0; policy_env_strip[i]; i++)
        if (strv_push(&p->env_unset, policy_env_strip[i]) < 0)
            return nomem(b);
    for (size_t i = 0; policy_env_strip_prefixes[i]; i++)
        if (strv_pushf(&p->env_unset, "%s*", policy_env_strip_prefixes[i]) < 0)
            return nomem(b);
    if (strv_copy(&p->env_set_names, &b->spec->env_names) < 0 ||
        strv_copy(&p->env_set_values, &b->spec->env_values) < 0)
        return nomem(b);
    return 0;
}

static int host_facts(struct build *b)
{
    const struct policy_host *h = b->h;
    if (h->home) {
        if (h->home[0] != '/')
            return pfail(b, "home: %s is not an absolute path", h->home);
        if (!(b->p->home = spec_path_normalize(h->home)))
            return nomem(b);
    }
    if (h->session_tmp) {
        if (h->session_tmp[0] != '/' || strcmp(h->session_tmp, "/") == 0)
            return pfail(b, "session tmp: %s is not an absolute path below /", h->session_tmp);
        if (!(b->p->session_tmp = spec_path_normalize(h->session_tmp)))
            return nomem(b);
    }
    return 0;
}

int policy_build(const struct ccsb_spec *spec, const struct policy_host *host,
                 struct ccsb_policy **out, char *err, size_t errlen)
{
    if (!spec || !host || !out)
        return errf(err, errlen, CCSB_E_INVAL, "policy: missing argument");
    int r = spec_validate(spec, err, errlen);
    if (r)
        return r;
    struct ccsb_policy *p = calloc(1, sizeof *p);
    if (!p)
        return errf(err, errlen, CCSB_E_NOMEM, "out of memory");
    /* Many rules share their directories: resolve each directory once. */
    struct rpmemo memo = RPMEMO_INIT;
    struct policy_host h = *host;
    if (!h.memo)
        h.memo = &memo;
    struct build b = {.spec = spec, .h = &h, .p = p, .err = err, .errlen = errlen};
    p->mode = spec->mode;
    p->network_enabled = spec->network_enabled;
    p->allow_git_config = spec->allow_git_config;
    p->timeout_ms = spec->timeout_ms;
    p->memory_max = spec->memory_max;
    p->pids_max = spec->pids_max;
    if ((r = host_facts(&b)) ||
        (r = expand(&b, "guestWorkdir", spec_workdir(spec), &p->guest_workdir)) ||
        (r = add_binds(&b)) || (r = add_runner_dirs(&b)) ||
        (r = add_spec_paths(&b, "protectedPaths", &spec->protected_paths, &p->deny_write, 0)) ||
        (r = add_mandatory(&b)) || (r = add_writable_roots(&b)) || (r = add_secrets(&b)) ||
        (r = check_secret_mounts(&b)) ||
        (r = add_spec_paths(&b, "execGrantRoots", &spec->exec_grant_roots,
                            &p->exec_grant_roots, 1)) ||
        (r = add_spec_paths(&b, "unixSockets", &spec->unix_sockets, &p->unix_sockets, 1)) ||
        (r = check_sockets(&b)) || (r = add_env(&b))) {
        rpmemo_clear(&memo);
        policy_free(p);
        return r;
    }
    rpmemo_clear(&memo);
    if (strv_copy(&p->deny_write_globs, &spec->deny_write_globs) < 0) {
        policy_free(p);
        return errf(err, errlen, CCSB_E_NOMEM, "out of memory");
    }
    *out = p;
    return 0;
}

void policy_free(struct ccsb_policy *p)
{
    if (!p)
        return;
    free(p->guest_workdir);
    free(p->home);
    free(p->session_tmp);
    for (size_t i = 0; i < p->n_mounts; i++) {
        free(p->mounts[i].host);
        free(p->mounts[i].guest);
    }
    free(p->mounts);
    paths_clear(&p->writable_roots);
    paths_clear(&p->deny_read);
    paths_clear(&p->deny_write);
    strv_clear(&p->deny_write_globs);
    paths_clear(&p->exec_grant_roots);
    paths_clear(&p->unix_sockets);
    strv_clear(&p->env_unset);
    strv_clear(&p->env_set_names);
    strv_clear(&p->env_set_values);
    free(p);
}

int policy_env_unsets(const struct ccsb_policy *p, const char *name)
{
    for (size_t i = 0; i < p->env_unset.n; i++) {
        const char *e = p->env_unset.v[i];
        size_t n = strlen(e);
        if (n > 0 && e[n - 1] == '*' ? strncmp(name, e, n - 1) == 0 : strcmp(name, e) == 0)
            return 1;
    }
    return 0;
}
