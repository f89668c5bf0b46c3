#include "util/rpmemo.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

struct rpmemo_entry {
    struct rpmemo_entry *next;
    char *path;
    int have_rp;    /* resolved/err hold realpath's answer */
    char *resolved; /* NULL: does not resolve, with err */
    int err;
    int have_l;     /* mode/lerr hold lstat's answer */
    mode_t mode;
    int lerr;
};

static uint64_t hash(const char *s)
{
    uint64_t h = 1469598103934665603ULL;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ULL;
    return h;
}

static struct rpmemo_entry *find(const struct rpmemo *m, const char *path)
{
    if (!m->cap)
        return NULL;
    for (struct rpmemo_entry *e = m->slot[hash(path) & (m->cap - 1)]; e; e = e->next)
        if (strcmp(e->path, path) == 0)
            return e;
    return NULL;
}

static int grow(struct rpmemo *m)
{
    size_t cap = m->cap ? m->cap * 2 : 64;
    struct rpmemo_entry **slot = calloc(cap, sizeof *slot);
    if (!slot)
        return -1;
    for (size_t i = 0; i < m->cap; i++)
        for (struct rpmemo_entry *e = m->slot[i], *next; e; e = next) {
            next = e->next;
            struct rpmemo_entry **b = &slot[hash(e->path) & (cap - 1)];
            e->next = *b;
            *b = e;
        }
    free(m->slot);
    m->slot = slot;
    m->cap = cap;
    return 0;
}

/* The entry for path, made when missing; NULL on ENOMEM. */
static struct rpmemo_entry *entry(struct rpmemo *m, const char *path)
{
    struct rpmemo_entry *e = find(m, path);
    if (e)
        return e;
    if (m->n + 1 > m->cap / 2 && grow(m) < 0)
        return NULL;
    e = calloc(1, sizeof *e);
    if (!e || !(e->path = strdup(path))) {
        free(e);
        return NULL;
    }
    struct rpmemo_entry **b = &m->slot[hash(path) & (m->cap - 1)];
    e->next = *b;
    *b = e;
    m->n++;
    return e;
}

/* Remembers the answer (best effort: a failure to remember changes nothing). */
static void remember(struct rpmemo *m, const char *path, const char *resolved, int err)
{
    struct rpmemo_entry *e = entry(m, path);
    if (!e || e->have_rp)
        return;
    e->resolved = resolved ? strdup(resolved) : NULL;
    if (resolved && !e->resolved)
        return;
    e->err = err;
    e->have_rp = 1;
}

int rpmemo_lstat(struct rpmemo *m, const char *path, mode_t *mode)
{
    struct rpmemo_entry *e = find(m, path);
    if (e && e->have_l) {
        *mode = e->mode;
        return e->lerr ? -e->lerr : 0;
    }
    struct stat st;
    int r = lstat(path, &st) < 0 ? -errno : 0;
    *mode = r ? 0 : st.st_mode;
    if (r != -ENOMEM && (e = entry(m, path))) {
        e->have_l = 1;
        e->mode = *mode;
        e->lerr = -r;
    }
    return r;
}

/* Only plain absolute spellings take the short way: no "//", ".", "..". */
static int plain(const char *path)
{
    if (path[0] != '/')
        return 0;
    for (const char *p = path; *p; p++)
        if (p[0] == '/' && (p[1] == '/' || (p[1] == '.' && (p[2] == '/' || p[2] == '\0')) ||
                            (p[1] == '.' && p[2] == '.' && (p[3] == '/' || p[3] == '\0'))))
            return 0;
    return path[1] == '\0' || path[strlen(path) - 1] != '/';
}

static char *resolve(struct rpmemo *m, const char *path, int depth)
{
    struct rpmemo_entry *e = find(m, path);
    if (e && e->have_rp) {
        if (!e->resolved) {
            errno = e->err;
            return NULL;
        }
        char *r = strdup(e->resolved);
        if (!r)
            errno = ENOMEM;
        return r;
    }
    char *out = NULL;
    int err = 0;
    if (strcmp(path, "/") == 0 || !plain(path) || depth > 256) {
        out = realpath(path, NULL);
        err = out ? 0 : errno;
    } else {
        const char *slash = strrchr(path, '/');
        char *parent = slash == path ? strdup("/") : strndup(path, (size_t)(slash - path));
        char *rp = parent ? resolve(m, parent, depth + 1) : NULL;
        err = rp ? 0 : (parent ? errno : ENOMEM);
        free(parent);
        if (rp) {
            size_t a = strlen(rp), b = strlen(slash + 1);
            char *cand = malloc(a + b + 2);
            if (!cand) {
                err = ENOMEM;
            } else {
                memcpy(cand, rp, a);
                size_t o = a == 1 ? 0 : a; /* "/" + name, not "//name" */
                cand[o] = '/';
                memcpy(cand + o + 1, slash + 1, b + 1);
                mode_t mode;
                int lr = rpmemo_lstat(m, cand, &mode);
                if (lr < 0) {
                    err = -lr;
                } else if (S_ISLNK(mode)) {
                    out = realpath(cand, NULL); /* links are rare: the long way */
                    err = out ? 0 : errno;
                } else {
                    out = cand;
                    cand = NULL;
                }
                free(cand);
            }
            free(rp);
        }
    }
    if (err != ENOMEM)
        remember(m, path, out, err);
    if (!out)
        errno = err;
    return out;
}

char *rpmemo_realpath(struct rpmemo *m, const char *path)
{
    if (!path) {
        errno = EINVAL;
        return NULL;
    }
    return resolve(m, path, 0);
}

void rpmemo_clear(struct rpmemo *m)
{
    for (size_t i = 0; i < m->cap; i++)
        for (struct rpmemo_entry *e = m->slot[i], *next; e; e = next) {
            next = e->next;
            free(e->path);
            free(e->resolved);
            free(e);
        }
    free(m->slot);
    m->slot = NULL;
    m->cap = m->n = 0;
}
