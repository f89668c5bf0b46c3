/* "~" expansion, resolved spellings of paths that may not exist, path sets. */
#include "policy/paths.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ccsandbox/ccsandbox.h"
#include "util/rpmemo.h"

/* Symlinks followed while resolving one missing path (Linux's own limit). */
#define MAX_HOPS 40

char *path_join(const char *dir, const char *rel)
{
    size_t dn = strlen(dir);
    while (dn > 0 && dir[dn - 1] == '/')
        dn--;
    while (*rel == '/')
        rel++;
    size_t rn = strlen(rel);
    char *out = malloc(dn + 1 + rn + 1);
    if (!out)
        return NULL;
    memcpy(out, dir, dn);
    size_t o = dn;
    if (rn > 0 || o == 0)
        out[o++] = '/';
    memcpy(out + o, rel, rn);
    out[o + rn] = '\0';
    return out;
}

char *path_expand_home(const char *path, const char *home)
{
    if (path[0] != '~' || !home)
        return strdup(path);
    return path_join(home, path + 1);
}

int path_within(const char *path, const char *p)
{
    size_t n = strlen(p);
    if (n == 1 && p[0] == '/')
        return path[0] == '/';
    return strncmp(path, p, n) == 0 && (path[n] == '\0' || path[n] == '/');
}

char *path_resolve(const struct policy_host *h, const char *path)
{
    if (h->resolve)
        return h->resolve(path, h->resolve_userdata);
    if (h->memo)
        return rpmemo_realpath(h->memo, path);
    return realpath(path, NULL);
}

int path_kind(const struct policy_host *h, const char *path)
{
    if (h->kind)
        return h->kind(path, h->resolve_userdata);
    struct stat st;
    if (stat(path, &st) < 0)
        return -1;
    return S_ISDIR(st.st_mode) ? 1 : 0;
}

/* The target of a symlink, or NULL (not a link, unreadable, too long)
 * with errno ENOMEM when memory ran out (then it may well be one). */
static char *read_link(const struct policy_host *h, const char *path)
{
    errno = 0;
    mode_t mode;
    if (h->memo) {
        if (rpmemo_lstat(h->memo, path, &mode) < 0) /* (a missing path: asked already) */
            return NULL;
    } else {
        struct stat st;
        if (lstat(path, &st) < 0)
            return NULL;
        mode = st.st_mode;
    }
    if (!S_ISLNK(mode))
        return NULL;
    char *buf = malloc(PATH_MAX + 1);
    if (!buf)
        return NULL;
    ssize_t n = readlink(path, buf, PATH_MAX + 1);
    if (n <= 0 || n > PATH_MAX) {
        free(buf);
        return NULL;
    }
    buf[n] = '\0';
    return buf;
}

/*
 * A path that does not resolve: resolve its deepest existing ancestor and
 * keep the rest. On the real file system, a dangling symlink at the first
 * missing step is followed (a write through it would land at its target).
 */
static char *resolve_missing(const struct policy_host *h, const char *path, int hops)
{
    size_t cut = strlen(path);
    char *ra = NULL;
    size_t pos = 0;
    while (cut > 0) {
        size_t k = cut;
        while (k > 0 && path[k - 1] != '/')
            k--;
        if (k == 0)
            return strdup(path);
        pos = k - 1;
        char *anc = strndup(path, pos ? pos : 1);
        if (!anc)
            return NULL;
        ra = path_resolve(h, anc);
        int e = errno;
        free(anc);
        if (ra)
            break;
        /* out of memory is not "missing": a shallower ancestor would leave
         * a symlink on the way unresolved */
        if (e == ENOMEM && !h->resolve)
            return NULL;
        cut = pos;
        if (pos == 0)
            return strdup(path); /* not even "/" resolves (a fake resolver) */
    }
    if (!ra)
        return strdup(path);
    const char *rest = path + pos; /* starts with '/' */
    if (!h->resolve && hops < MAX_HOPS) {
        const char *comp = rest + 1;
        const char *end = strchr(comp, '/');
        size_t clen = end ? (size_t)(end - comp) : strlen(comp);
        char *c = strndup(comp, clen);
        char *step = c ? path_join(ra, c) : NULL;
        free(c);
        char *target = step ? read_link(h, step) : NULL;
        /* out of memory is not "no link": the link would go unfollowed */
        if (!target && (!step || errno == ENOMEM)) {
            free(step);
            free(ra);
            return NULL;
        }
        if (target) {
            char *base = target[0] == '/' ? strdup(target) : path_join(ra, target);
            char *next = base ? path_join(base, end ? end : "") : NULL;
            free(base);
            free(target);
            free(step);
            free(ra);
            if (!next)
                return NULL;
            char *r = path_resolve(h, next);
            if (!r && !(errno == ENOMEM && !h->resolve))
                r = resolve_missing(h, next, hops + 1);
            free(next);
            return r;
        }
        free(step);
    }
    char *out = path_join(ra, rest);
    free(ra);
    return out;
}

char *path_canonical(const struct policy_host *h, const char *path, int *exists)
{
    *exists = 0;
    const char *wild = strpbrk(path, "*?");
    if (wild) {
        /* Resolve the directory part before the first wildcard component. */
        const char *comp = wild;
        while (comp > path && comp[-1] != '/')
            comp--;
        char *dir = strndup(path, comp > path + 1 ? (size_t)(comp - path - 1) : 1);
        if (!dir)
            return NULL;
        int dir_exists;
        char *rdir = path_canonical(h, dir, &dir_exists);
        free(dir);
        if (!rdir)
            return NULL;
        char *out = path_join(rdir, comp);
        free(rdir);
        return out;
    }
    char *r = path_resolve(h, path);
    if (r) {
        *exists = 1;
        return r;
    }
    if (errno == ENOMEM && !h->resolve)
        return NULL;
    return resolve_missing(h, path, 0);
}

int paths_add(struct policy_paths *set, const struct policy_host *h, const char *path)
{
    for (size_t i = 0; i < set->n; i++)
        if (strcmp(set->v[i].path, path) == 0)
            return 0;
    struct policy_path p = {0};
    p.path = strdup(path);
    if (!p.path)
        return CCSB_E_NOMEM;
    p.is_glob = strpbrk(path, "*?") != NULL;
    char *canon = path_canonical(h, path, &p.exists);
    if (!canon) {
        free(p.path);
        return CCSB_E_NOMEM;
    }
    if (p.exists)
        p.is_dir = path_kind(h, canon) == 1;
    if (strcmp(canon, path) != 0)
        p.resolved = canon;
    else
        free(canon);
    struct policy_path *v = realloc(set->v, (set->n + 1) * sizeof *v);
    if (!v) {
        free(p.path);
        free(p.resolved);
        return CCSB_E_NOMEM;
    }
    v[set->n++] = p;
    set->v = v;
    return 0;
}

void paths_clear(struct policy_paths *set)
{
    for (size_t i = 0; i < set->n; i++) {
        free(set->v[i].path);
        free(set->v[i].resolved);
    }
    free(set->v);
    set->v = NULL;
    set->n = 0;
}
