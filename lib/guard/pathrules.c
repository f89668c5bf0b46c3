#include "guard/pathrules.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ccsandbox/ccsandbox.h"
#include "guard/guard.h"
#include "util/err.h"

/* Deeper than any path the kernel lets one name (PATH_MAX / 2). */
#define MAX_WALK_UP 2048

static void free_rule(struct path_rule *r)
{
    if (r->anchor_fd >= 0)
        close(r->anchor_fd);
    for (size_t i = 0; i < r->ncomp; i++)
        free(r->comp[i]);
    free(r->comp);
    free(r->shown);
}

void path_rules_clear(struct path_rules *pr)
{
    for (size_t i = 0; i < pr->n; i++)
        free_rule(&pr->v[i]);
    free(pr->v);
    pr->v = NULL;
    pr->n = 0;
}

/* Splits rest into components; -1 on an empty, "." or ".." component. */
static int split(const char *rest, struct path_rule *r)
{
    const char *p = rest;
    while (*p) {
        const char *e = strchr(p, '/');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        if (len == 0 || (len == 1 && p[0] == '.') || (len == 2 && p[0] == '.' && p[1] == '.'))
            return -1;
        char **v = realloc(r->comp, (r->ncomp + 1) * sizeof *v);
        if (!v)
            return -2;
        r->comp = v;
        r->comp[r->ncomp] = strndup(p, len);
        if (!r->comp[r->ncomp])
            return -2;
        r->ncomp++;
        p += len + (e != NULL);
    }
    return r->ncomp ? 0 : -1;
}

int path_rules_init(struct path_rules *pr, const struct guard_path_rule *rules, size_t n,
                    char *err, size_t errlen)
{
    pr->v = NULL;
    pr->n = 0;
    if (!n)
        return 0;
    pr->v = calloc(n, sizeof *pr->v);
    if (!pr->v)
        return errf(err, errlen, CCSB_E_NOMEM, "out of memory");
    for (size_t i = 0; i < n; i++) {
        struct path_rule *r = &pr->v[i];
        r->anchor_fd = -1;
        pr->n++;
        const char *a = rules[i].anchor, *rest = rules[i].rest;
        if (!a || a[0] != '/' || !rest) {
            path_rules_clear(pr);
            return errf(err, errlen, CCSB_E_POLICY, "protected path rule %zu: not absolute", i);
        }
        int s = split(rest, r);
        if (s == -2 || asprintf(&r->shown, "%s%s%s", a, strcmp(a, "/") ? "/" : "", rest) < 0) {
            r->shown = NULL;
            path_rules_clear(pr);
            return errf(err, errlen, CCSB_E_NOMEM, "out of memory");
        }
        if (s < 0) {
            int e = errf(err, errlen, CCSB_E_POLICY, "protected path %s: bad component",
                         r->shown);
            path_rules_clear(pr);
            return e;
        }
        struct stat st;
        r->anchor_fd = open(a, O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (r->anchor_fd < 0 || fstat(r->anchor_fd, &st) < 0) {
            int e = errf(err, errlen, CCSB_E_POLICY,
                         "protected path %s: cannot hold its directory %s: %s", r->shown, a,
                         strerror(errno));
            path_rules_clear(pr);
            return e;
        }
        r->dev = st.st_dev;
        r->ino = st.st_ino;
    }
    return 0;
}

static int same(const struct stat *st, dev_t dev, ino_t ino)
{
    return st->st_dev == dev && st->st_ino == ino;
}

/*
 * 1 when directory dirfd (described by ds) is the directory (dev, ino) or
 * below it, 0 when not, -errno on failure. Walks ".." up to the top of the
 * tree dirfd belongs to, or to the rule's anchor (which holds the protected
 * directory, so nothing above it can be inside).
 */
static int inside(int dirfd, const struct stat *ds, dev_t dev, ino_t ino,
                  const struct path_rule *r)
{
    if (same(ds, dev, ino))
        return 1;
    if (same(ds, r->dev, r->ino))
        return 0;
    int cur = openat(dirfd, "..", O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (cur < 0)
        return -errno;
    struct stat prev = *ds;
    for (int depth = 0; depth < MAX_WALK_UP; depth++) {
        struct stat st;
        if (fstat(cur, &st) < 0) {
            int e = -errno;
            close(cur);
            return e;
        }
        if (same(&st, dev, ino) || same(&st, r->dev, r->ino) ||
            same(&st, prev.st_dev, prev.st_ino)) {
            close(cur);
            return same(&st, dev, ino);
        }
        int up = openat(cur, "..", O_PATH | O_DIRECTORY | O_CLOEXEC);
        int e = -errno;
        close(cur);
        if (up < 0)
            return e;
        cur = up;
        prev = st;
    }
    close(cur);
    return -ELOOP; /* deeper than any nameable path: refuse */
}

/* What is being checked: a name in a directory, or a nameless object. */
struct walk {
    int dirfd;              /* check: the name's directory, or -1 */
    const char *name;       /* check: the final component */
    int objfd;              /* check_obj: the object, or -1 */
    struct stat ds;         /* of dirfd or objfd */
};

/*
 * Looks the rule's chain up as it is now: 1 when w touches it, 0 when not,
 * -errno when the lookup failed. A symlink or file in the way ends the
 * chain (the path cannot exist through it).
 */
static int check_rule(const struct path_rule *r, const struct walk *w)
{
    /* The name right below the anchor is the first chain node: refused
     * whether it exists or not, without a lookup. */
    if (w->dirfd >= 0 && same(&w->ds, r->dev, r->ino))
        return strcmp(w->name, r->comp[0]) == 0;
    int node = r->anchor_fd, owned = -1, rc = 0;
    struct stat ns = {0};
    for (size_t k = 0; k < r->ncomp; k++) {
        if (k > 0 && w->dirfd >= 0 && same(&w->ds, ns.st_dev, ns.st_ino) &&
            strcmp(w->name, r->comp[k]) == 0) {
            rc = 1;
            goto out;
        }
        int next = openat(node, r->comp[k], O_PATH | O_NOFOLLOW | O_CLOEXEC);
        if (next < 0) {
            /* Missing (or a file in the way): nothing deeper exists now. */
            rc = errno == ENOENT || errno == ENOTDIR ? 0 : -errno;
            goto out;
        }
        if (owned >= 0)
            close(owned);
        owned = node = next;
        if (fstat(node, &ns) < 0) {
            rc = -errno;
            goto out;
        }
        if (w->objfd >= 0 && same(&w->ds, ns.st_dev, ns.st_ino)) {
            rc = 1; /* the object is a chain node or the protected path */
            goto out;
        }
        if (k + 1 < r->ncomp && !S_ISDIR(ns.st_mode))
            goto out; /* a file (or symlink) in the way: the path cannot exist */
    }
    /* The protected path exists now. */
    if (S_ISDIR(ns.st_mode)) {
        if (w->dirfd >= 0)
            rc = inside(w->dirfd, &w->ds, ns.st_dev, ns.st_ino, r);
        else if (S_ISDIR(w->ds.st_mode))
            rc = inside(w->objfd, &w->ds, ns.st_dev, ns.st_ino, r);
        else
            rc = 1; /* a nameless file: it could be inside; refuse */
    }
out:
    if (owned >= 0)
        close(owned);
    return rc;
}

static int check(const struct path_rules *pr, const struct walk *w, const char **which)
{
    for (size_t i = 0; i < pr->n; i++) {
        int rc = check_rule(&pr->v[i], w);
        if (rc != 0) {
            *which = pr->v[i].shown;
            return rc;
        }
    }
    return 0;
}

int path_rules_check(const struct path_rules *pr, int dirfd, const char *name,
                     const char **which)
{
    if (!pr || !pr->n)
        return 0;
    struct walk w = {.dirfd = dirfd, .name = name, .objfd = -1};
    if (fstat(dirfd, &w.ds) < 0)
        return -errno;
    return check(pr, &w, which);
}

int path_rules_check_obj(const struct path_rules *pr, int objfd, const char **which)
{
    if (!pr || !pr->n)
        return 0;
    struct walk w = {.dirfd = -1, .objfd = objfd};
    if (fstat(objfd, &w.ds) < 0)
        return -errno;
    return check(pr, &w, which);
}
