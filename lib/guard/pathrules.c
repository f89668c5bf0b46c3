#include "guard/pathrules.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/fs.h>
#include <linux/magic.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "ccsandbox/ccsandbox.h"
#include "guard/guard.h"
#include "util/err.h"
#include "util/fd.h"

/* Deeper than any path the kernel lets one name (PATH_MAX / 2). */
#define MAX_WALK_UP 2048

static void free_rule(struct path_rule *r)
{
    if (r->anchor_fd >= 0 && r->owns_fd)
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

/* Orders rules by anchor (device, inode), then first component. */
static int by_first_node(const void *x, const void *y)
{
    const struct path_rule *a = x, *b = y;
    if (a->dev != b->dev)
        return a->dev < b->dev ? -1 : 1;
    if (a->ino != b->ino)
        return a->ino < b->ino ? -1 : 1;
    return strcmp(a->comp[0], b->comp[0]);
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
        /* Most rules share one anchor (the workspace): hold it once. */
        const struct path_rule *same_anchor = NULL;
        for (size_t k = 0; k < i && !same_anchor; k++)
            if (strcmp(rules[k].anchor, a) == 0)
                same_anchor = &pr->v[k];
        if (same_anchor) {
            r->anchor_fd = same_anchor->anchor_fd;
            r->dev = same_anchor->dev;
            r->ino = same_anchor->ino;
            continue;
        }
        struct stat st;
        /* held for the session: off 0-2 of a host that closed them */
        r->anchor_fd = fd_above_stdio(open(a, O_PATH | O_DIRECTORY | O_CLOEXEC));
        r->owns_fd = r->anchor_fd >= 0;
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
    /* A protected file (declared one, or one that exists: bubblewrap also
     * binds it read-only, the rule is what holds once the host replaces it
     * and the bind detaches): its name is compared at the anchor, with no
     * lookup for calls anywhere else. */
    for (size_t i = 0; i < pr->n; i++) {
        struct path_rule *r = &pr->v[i];
        struct stat st;
        r->file_only = r->ncomp == 1 &&
                       (rules[i].file ||
                        (fstatat(r->anchor_fd, r->comp[0], &st, AT_SYMLINK_NOFOLLOW) == 0 &&
                         S_ISREG(st.st_mode)));
    }
    /* Rules below one directory with the same first component side by
     * side: one lookup of that component answers for all of them. */
    qsort(pr->v, pr->n, sizeof *pr->v, by_first_node);
    for (size_t i = 1; i < pr->n; i++)
        pr->v[i].same_c1 = by_first_node(&pr->v[i - 1], &pr->v[i]) == 0;
    return 0;
}

/* What is being checked: a name in a directory, or a nameless object. */
struct walk {
    int dirfd;              /* check: the name's directory, or -1 */
    const char *name;       /* check: the final component */
    int objfd;              /* check_obj: the object, or -1 */
    int ident;              /* check_ident: the object itself only, not "inside" */
    struct stat ds;         /* of dirfd or objfd */
};

static unsigned char ascii_lower(unsigned char c)
{
    return c >= 'A' && c <= 'Z' ? (unsigned char)(c - 'A' + 'a') : c;
}

/*
 * 1 when `name` could name the same entry as `want` in a directory that
 * folds case. Conservative for every folding in use: ASCII letters match
 * either case; each non-ASCII character may stand for zero to three ASCII
 * characters (ignorable code points vanish, U+212A KELVIN SIGN is "k",
 * U+FB01 is "fi", U+FB03 is "ffi"); trailing dots and spaces may be dropped
 * (vfat, NTFS). want is ASCII.
 */
static int fold_match(const char *name, const char *want)
{
    size_t n = strlen(name), m = strlen(want);
    while (n && (name[n - 1] == '.' || name[n - 1] == ' '))
        n--;
    if (n > NAME_MAX || m > NAME_MAX)
        return 0;
    /* ok[j]: the part of name read so far can stand for want[0..j). */
    unsigned char ok[NAME_MAX + 1], nx[NAME_MAX + 1];
    memset(ok, 0, sizeof ok);
    ok[0] = 1;
    for (size_t i = 0; i < n;) {
        unsigned char c = (unsigned char)name[i];
        memset(nx, 0, m + 1);
        if (c < 0x80) {
            for (size_t j = 0; j < m; j++)
                nx[j + 1] = ok[j] && ascii_lower(c) == ascii_lower((unsigned char)want[j]);
            i++;
        } else {
            for (size_t j = 0; j <= m; j++)
                for (size_t k = 0; ok[j] && k <= 3 && j + k <= m; k++)
                    nx[j + k] = 1;
            i++;
            while (i < n && ((unsigned char)name[i] & 0xC0) == 0x80)
                i++;
        }
        memcpy(ok, nx, m + 1);
    }
    return ok[m];
}

/*
 * 1 when names in directory dirfd may be compared without regard to case
 * (a casefolded directory, or a file system not known to be case
 * sensitive: 9p/drvfs on WSL, FUSE, SMB, vfat, ZFS, XFS with ascii-ci...),
 * 0 when not, -errno when that cannot be told.
 */
static int may_fold(int dirfd)
{
    struct statfs sf;
    if (fstatfs(dirfd, &sf) < 0)
        return -errno;
    switch ((unsigned long)sf.f_type) {
    case BTRFS_SUPER_MAGIC:
    case RAMFS_MAGIC:
        return 0;
    case EXT4_SUPER_MAGIC: /* also ext2, ext3 */
    case TMPFS_MAGIC:
    case F2FS_SUPER_MAGIC:
    case OVERLAYFS_SUPER_MAGIC: /* casefolded layers since Linux 6.18; reports theirs */
        break; /* case sensitive unless the directory is casefolded */
    default:
        return 1;
    }
    char p[64];
    snprintf(p, sizeof p, "/proc/self/fd/%d", dirfd);
    int fd = open(p, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return errno == EACCES ? 1 : -errno; /* unreadable: assume the worst */
    int flags = 0;
    int r = ioctl(fd, FS_IOC_GETFLAGS, &flags);
    int e = errno;
    close(fd);
    if (r < 0)
        return e == ENOTTY || e == EOPNOTSUPP ? 0 : -e;
    return (flags & FS_CASEFOLD_FL) != 0;
}

/* 1 when w's name is (or, where case folds, may be) the chain node
 * `want` in w's directory, 0 when not, -errno when that cannot be told. */
static int names_node(const struct walk *w, const char *want)
{
    if (strcmp(w->name, want) == 0)
        return 1;
    if (!fold_match(w->name, want))
        return 0;
    return may_fold(w->dirfd);
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

/*
 * Looks the rule's chain up as it is now: 1 when w touches it, 0 when not,
 * -errno when the lookup failed. A symlink or file in the way ends the
 * chain (the path cannot exist through it). *c1_missing is set when the
 * first component was looked up and is missing.
 */
static int check_file_rule(const struct path_rule *r, const struct walk *w)
{
    if (w->dirfd >= 0)
        return same(&w->ds, r->dev, r->ino) ? names_node(w, r->comp[0]) : 0;
    struct stat st;
    if (fstatat(r->anchor_fd, r->comp[0], &st, AT_SYMLINK_NOFOLLOW) < 0)
        return errno == ENOENT ? 0 : -errno;
    return same(&w->ds, st.st_dev, st.st_ino);
}

static int check_rule(const struct path_rule *r, const struct walk *w, int *c1_missing)
{
    if (r->file_only)
        return check_file_rule(r, w);
    /* The name right below the anchor is the first chain node: refused
     * whether it exists or not, without a lookup. */
    if (w->dirfd >= 0 && same(&w->ds, r->dev, r->ino))
        return names_node(w, r->comp[0]);
    int node = r->anchor_fd, owned = -1, rc = 0;
    struct stat ns = {0};
    for (size_t k = 0; k < r->ncomp; k++) {
        if (k > 0 && w->dirfd >= 0 && same(&w->ds, ns.st_dev, ns.st_ino)) {
            rc = names_node(w, r->comp[k]);
            if (rc != 0)
                goto out;
        }
        if (k == 0) {
            /* Usually missing: a stat (no file made) says so, and the rules
             * that share this first component need not ask again. */
            struct stat st;
            if (fstatat(node, r->comp[0], &st, AT_SYMLINK_NOFOLLOW) < 0 && errno == ENOENT) {
                *c1_missing = 1;
                goto out;
            }
        }
        int next = openat(node, r->comp[k], O_PATH | O_NOFOLLOW | O_CLOEXEC);
        if (next < 0) {
            /* Missing (or a file in the way): nothing deeper exists now.
             * Anything else denies, EACCES included: the sandbox owns the
             * chain's directories and may make one unsearchable while it
             * holds an fd to the protected directory below it. */
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
    if (S_ISDIR(ns.st_mode) && !w->ident) {
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
    int c1_missing = 0; /* of the rules before, with this one's first node */
    for (size_t i = 0; i < pr->n; i++) {
        const struct path_rule *r = &pr->v[i];
        if (!r->same_c1)
            c1_missing = 0;
        /* No node of this chain below the missing first one exists either
         * (the name itself at the anchor is still checked). */
        if (c1_missing && !(w->dirfd >= 0 && same(&w->ds, r->dev, r->ino)))
            continue;
        int rc = check_rule(r, w, &c1_missing);
        if (rc != 0) {
            *which = r->shown;
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

int path_rules_check_ident(const struct path_rules *pr, int objfd, const char **which)
{
    if (!pr || !pr->n)
        return 0;
    struct walk w = {.dirfd = -1, .objfd = objfd, .ident = 1};
    if (fstat(objfd, &w.ds) < 0)
        return -errno;
    return check(pr, &w, which);
}
