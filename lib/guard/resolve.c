#include "guard/resolve.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statfs.h>
#include <unistd.h>

#define STACK_MAX 32       /* pinned directories; older ones are rebuilt on demand */
#define MAX_HOPS 40        /* symlinks per resolution, as the kernel allows */
#define REST_MAX (2 * PATH_MAX + 2)
#define PROC_ROOT_INO 1

enum { TAG_NONE, TAG_PROCROOT, TAG_SELF, TAG_TASK, TAG_FD };

struct walk {
    const struct res_env *e;
    int fd[STACK_MAX];
    char name[STACK_MAX][16]; /* the component that led there ("" if long) */
    int n;
    int base_root; /* fd[0] is the root: ".." there stays */
    int hops;
};

static void walk_clear(struct walk *w)
{
    for (int i = 0; i < w->n; i++)
        if (w->fd[i] >= 0)
            close(w->fd[i]);
    w->n = 0;
}

static int dupfd(int fd)
{
    int r = fcntl(fd, F_DUPFD_CLOEXEC, 3);
    return r < 0 ? -errno : r;
}

static int walk_top(const struct walk *w)
{
    return w->fd[w->n - 1];
}

static void walk_push(struct walk *w, int fd, const char *name)
{
    if (w->n == STACK_MAX) {
        /* Forget the oldest directory; ".." past the new bottom rebuilds
         * the chain from the root. */
        close(w->fd[0]);
        memmove(w->fd, w->fd + 1, sizeof(int) * (STACK_MAX - 1));
        memmove(w->name, w->name + 1, sizeof w->name[0] * (STACK_MAX - 1));
        w->n--;
        w->base_root = 0;
    }
    w->fd[w->n] = fd;
    if (strlen(name) < sizeof w->name[0])
        memcpy(w->name[w->n], name, strlen(name) + 1);
    else
        w->name[w->n][0] = 0;
    w->n++;
}

static int walk_reset_root(struct walk *w)
{
    walk_clear(w);
    int fd = dupfd(w->e->rootfd);
    if (fd < 0)
        return fd;
    w->base_root = 1;
    walk_push(w, fd, "");
    return 0;
}

/* Takes ownership of fd. */
static void walk_reset_fd(struct walk *w, int fd)
{
    walk_clear(w);
    w->base_root = 0;
    walk_push(w, fd, "");
}

static int is_proc_dir(int fd)
{
    struct statfs sf;
    return fstatfs(fd, &sf) == 0 && sf.f_type == PROC_SUPER_MAGIC;
}

static int pid_is(const char *comp, pid_t pid)
{
    char buf[24];
    snprintf(buf, sizeof buf, "%d", (int)pid);
    return strcmp(comp, buf) == 0;
}

/*
 * What a directory of the walk is in procfs, worked out only when a symlink
 * is met there (a syscall or two): the procfs root, the target's own
 * <pid> or task/<tid> directory, its task/ or fd/ directory, or nothing.
 */
static int role(const struct walk *w, int idx)
{
    if (idx < 0 || !is_proc_dir(w->fd[idx]))
        return TAG_NONE;
    struct stat st;
    if (fstat(w->fd[idx], &st) == 0 && st.st_ino == PROC_ROOT_INO)
        return TAG_PROCROOT;
    const char *nm = w->name[idx];
    if (strcmp(nm, "fd") == 0)
        return role(w, idx - 1) == TAG_SELF ? TAG_FD : TAG_NONE;
    if (strcmp(nm, "task") == 0)
        return role(w, idx - 1) == TAG_SELF ? TAG_TASK : TAG_NONE;
    if (pid_is(nm, w->e->nstgid) || pid_is(nm, w->e->nstid)) {
        int up = role(w, idx - 1);
        if (up == TAG_PROCROOT || (up == TAG_TASK && pid_is(nm, w->e->nstid)))
            return TAG_SELF;
    }
    return TAG_NONE;
}

static int fd_path(int fd, char *buf, size_t len)
{
    char link[64];
    snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
    ssize_t k = readlink(link, buf, len - 1);
    if (k < 0)
        return -errno;
    if ((size_t)k >= len - 1)
        return -ENAMETOOLONG;
    buf[k] = 0;
    return 0;
}

/* The part of fd's path below the root ("" for the root itself), or NULL. */
static const char *below_root(const char *root, const char *path)
{
    size_t rl = strlen(root);
    if (strcmp(root, "/") == 0)
        return path[0] == '/' ? path + 1 : NULL;
    if (strncmp(path, root, rl) != 0 || (path[rl] != '/' && path[rl] != 0))
        return NULL;
    return path[rl] == '/' ? path + rl + 1 : path + rl;
}

static int same_dir(int a, int b)
{
    struct statx xa, xb;
    if (statx(a, "", AT_EMPTY_PATH, STATX_INO | STATX_MNT_ID, &xa) < 0 ||
        statx(b, "", AT_EMPTY_PATH, STATX_INO | STATX_MNT_ID, &xb) < 0)
        return 0;
    return xa.stx_ino == xb.stx_ino && xa.stx_dev_major == xb.stx_dev_major &&
           xa.stx_dev_minor == xb.stx_dev_minor && xa.stx_mnt_id == xb.stx_mnt_id;
}

/*
 * fd[0] is a directory whose ancestors we do not hold (a cwd, a dirfd, or a
 * forgotten stack bottom). Rebuild its chain from the root using the path
 * the kernel reports for it, and accept the result only if it leads to the
 * same directory. A directory outside the root cannot be rebuilt: EACCES.
 */
static int walk_rebase(struct walk *w)
{
    char s[PATH_MAX], r[PATH_MAX];
    int rc = fd_path(w->fd[0], s, sizeof s);
    if (rc < 0)
        return rc;
    if ((rc = fd_path(w->e->rootfd, r, sizeof r)) < 0)
        return rc;
    size_t sl = strlen(s);
    if (sl > 10 && strcmp(s + sl - 10, " (deleted)") == 0)
        return -ENOENT;
    const char *rel = below_root(r, s);
    if (!rel)
        return -EACCES;
    struct walk nw = {.e = w->e};
    if ((rc = walk_reset_root(&nw)) < 0)
        return rc;
    while (*rel) {
        while (*rel == '/')
            rel++;
        if (!*rel)
            break;
        const char *end = strchr(rel, '/');
        size_t len = end ? (size_t)(end - rel) : strlen(rel);
        char comp[NAME_MAX + 1];
        if (len > NAME_MAX) {
            walk_clear(&nw);
            return -ENAMETOOLONG;
        }
        memcpy(comp, rel, len);
        comp[len] = 0;
        rel += len;
        int fd = openat(walk_top(&nw), comp, O_PATH | O_NOFOLLOW | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0) {
            rc = -errno;
            walk_clear(&nw);
            return rc == -ENOTDIR || rc == -ELOOP ? -ENOENT : rc;
        }
        walk_push(&nw, fd, comp);
    }
    if (!same_dir(walk_top(&nw), w->fd[0])) {
        walk_clear(&nw);
        return -ENOENT; /* moved while we looked: let the caller retry */
    }
    int hops = w->hops;
    walk_clear(w);
    *w = nw;
    w->hops = hops;
    return 0;
}

static int walk_pop(struct walk *w)
{
    if (w->n > 1) {
        close(w->fd[--w->n]);
        return 0;
    }
    if (w->base_root)
        return 0;
    int r = walk_rebase(w);
    if (r < 0)
        return r;
    if (w->n > 1)
        close(w->fd[--w->n]);
    return 0;
}

/* Places target + "/" + rest (or target alone) in out. */
static int splice_link(char *out, const char *target, const char *rest, int trailing)
{
    size_t tl = strlen(target), rl = strlen(rest);
    if (tl + 1 + rl + 2 > REST_MAX)
        return -ENAMETOOLONG;
    memcpy(out, target, tl);
    size_t o = tl;
    if (rl) {
        out[o++] = '/';
        memcpy(out + o, rest, rl);
        o += rl;
    } else if (trailing) {
        out[o++] = '/';
    }
    out[o] = 0;
    return 0;
}

static int final_dot(struct walk *w, const char *comp, struct res_out *out)
{
    int fd = dupfd(walk_top(w));
    if (fd < 0)
        return fd;
    out->objfd = fd;
    out->exists = 1;
    out->dot = 1;
    snprintf(out->name, sizeof out->name, "%s", comp);
    if (fstat(fd, &out->st) < 0)
        return -errno;
    return 0;
}

/* Numeric fd name in a /proc/<pid>/fd directory. */
static int parse_fd(const char *comp)
{
    if (!*comp || strlen(comp) > 9)
        return -1;
    int v = 0;
    for (const char *p = comp; *p; p++) {
        if (*p < '0' || *p > '9')
            return -1;
        v = v * 10 + (*p - '0');
    }
    return v;
}

int resolve_path(const struct res_env *e, const char *path, int flags, struct res_out *out)
{
    memset(out, 0, sizeof *out);
    out->parentfd = out->objfd = -1;
    if (!path[0])
        return -ENOENT;
    if (strlen(path) >= PATH_MAX)
        return -ENAMETOOLONG;

    struct walk w = {.e = e};
    int r;
    if (path[0] == '/') {
        if ((r = walk_reset_root(&w)) < 0)
            return r;
    } else {
        if (e->startfd < 0)
            return -EBADF;
        int fd = dupfd(e->startfd);
        if (fd < 0)
            return fd;
        walk_reset_fd(&w, fd);
    }

    static const size_t cap = REST_MAX;
    char *bufs = malloc(2 * cap);
    if (!bufs) {
        walk_clear(&w);
        return -ENOMEM;
    }
    char *cur = bufs, *other = bufs + cap;
    snprintf(cur, cap, "%s", path);
    char *rest = cur;

    for (;;) {
        while (*rest == '/')
            rest++;
        if (!*rest) { /* the path names the directory we stand in */
            r = final_dot(&w, "/", out);
            break;
        }
        char *end = strchr(rest, '/');
        size_t clen = end ? (size_t)(end - rest) : strlen(rest);
        const char *next = rest + clen;
        while (*next == '/')
            next++;
        int last = *next == 0;
        int tslash = last && end != NULL;
        if (clen > NAME_MAX) {
            r = -ENAMETOOLONG;
            break;
        }
        char comp[NAME_MAX + 1];
        memcpy(comp, rest, clen);
        comp[clen] = 0;
        rest = (char *)next;

        if (strcmp(comp, ".") == 0 || strcmp(comp, "..") == 0) {
            if (comp[1] == '.' && (r = walk_pop(&w)) < 0)
                break;
            if (last) {
                r = final_dot(&w, comp, out);
                out->trailing_slash = tslash;
                break;
            }
            continue;
        }

        int top = walk_top(&w);
        if (!last) {
            /* The common case in one syscall: a directory. Anything else
             * (a symlink, ENOTDIR) takes the general path below. */
            int dfd = openat(top, comp, O_PATH | O_NOFOLLOW | O_DIRECTORY | O_CLOEXEC);
            if (dfd >= 0) {
                walk_push(&w, dfd, comp);
                continue;
            }
            if (errno != ENOTDIR) {
                r = -errno;
                break;
            }
        }
        int fd = openat(top, comp, O_PATH | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0) {
            r = -errno;
            if (r == -ENOENT && last) {
                /* A name to be created: hand over the pinned parent. */
                out->parentfd = top;
                w.fd[w.n - 1] = -1;
                snprintf(out->name, sizeof out->name, "%s", comp);
                out->trailing_slash = tslash;
                r = 0;
            }
            break;
        }
        struct stat st;
        if (fstat(fd, &st) < 0) {
            r = -errno;
            close(fd);
            break;
        }

        if (S_ISLNK(st.st_mode) && (!last || (flags & RES_FOLLOW) || tslash)) {
            int proc = is_proc_dir(top);
            int tag = proc ? role(&w, w.n - 1) : TAG_NONE;
            if (tag == TAG_PROCROOT &&
                (strcmp(comp, "self") == 0 || strcmp(comp, "thread-self") == 0)) {
                /* The reader-dependent links: answer for the target. */
                char t[64];
                if (comp[0] == 's')
                    snprintf(t, sizeof t, "%d", (int)e->nstgid);
                else
                    snprintf(t, sizeof t, "%d/task/%d", (int)e->nstgid, (int)e->nstid);
                close(fd);
                if (++w.hops > MAX_HOPS) {
                    r = -ELOOP;
                    break;
                }
                if ((r = splice_link(other, t, rest, tslash)) < 0)
                    break;
                rest = other;
                other = cur;
                cur = rest;
                continue;
            }
            int magic_kind = -1, magic_n = 0;
            if (tag == TAG_FD && (magic_n = parse_fd(comp)) >= 0)
                magic_kind = RES_MAGIC_FD;
            else if (tag == TAG_SELF && strcmp(comp, "cwd") == 0)
                magic_kind = RES_MAGIC_CWD;
            else if (tag == TAG_SELF && strcmp(comp, "root") == 0)
                magic_kind = RES_MAGIC_ROOT;
            /* In the procfs root only self/thread-self depend on the
             * reader (handled above); its other links are plain text. */
            if (magic_kind >= 0 || (proc && tag != TAG_PROCROOT)) {
                close(fd);
                if (magic_kind < 0 || !e->magic) {
                    r = -EACCES; /* a magic link we do not follow for anyone */
                    break;
                }
                if (++w.hops > MAX_HOPS) {
                    r = -ELOOP;
                    break;
                }
                int obj = e->magic(e->ud, magic_kind, magic_n);
                if (obj < 0) {
                    r = obj == -EBADF ? -ENOENT : obj;
                    break;
                }
                if (magic_kind == RES_MAGIC_ROOT) {
                    /* Its root is the root we resolve in. */
                    close(obj);
                    if ((r = walk_reset_root(&w)) < 0)
                        break;
                } else {
                    struct stat ost;
                    if (fstat(obj, &ost) < 0) {
                        r = -errno;
                        close(obj);
                        break;
                    }
                    if (last && !tslash) {
                        out->objfd = obj;
                        out->magic = 1;
                        out->exists = 1;
                        out->st = ost;
                        snprintf(out->name, sizeof out->name, "%s", comp);
                        r = 0;
                        break;
                    }
                    if (!S_ISDIR(ost.st_mode)) {
                        close(obj);
                        r = -ENOTDIR;
                        break;
                    }
                    walk_reset_fd(&w, obj);
                }
                if (last) {
                    r = final_dot(&w, comp, out);
                    out->trailing_slash = tslash;
                    break;
                }
                continue;
            }
            /* An ordinary symlink: read it and walk its text ourselves. */
            char target[PATH_MAX];
            ssize_t k = readlinkat(fd, "", target, sizeof target);
            int e2 = errno;
            close(fd);
            if (k < 0) {
                r = -e2;
                break;
            }
            if ((size_t)k >= sizeof target) {
                r = -ENAMETOOLONG;
                break;
            }
            target[k] = 0;
            if (k == 0) {
                r = -ENOENT;
                break;
            }
            if (++w.hops > MAX_HOPS) {
                r = -ELOOP;
                break;
            }
            if ((r = splice_link(other, target, rest, tslash)) < 0)
                break;
            rest = other;
            other = cur;
            cur = rest;
            if (target[0] == '/' && (r = walk_reset_root(&w)) < 0)
                break;
            continue;
        }

        if (last) {
            if (tslash && !S_ISDIR(st.st_mode)) {
                close(fd);
                r = -ENOTDIR;
                break;
            }
            out->parentfd = top;
            w.fd[w.n - 1] = -1;
            out->objfd = fd;
            out->exists = 1;
            out->st = st;
            out->trailing_slash = tslash;
            snprintf(out->name, sizeof out->name, "%s", comp);
            r = 0;
            break;
        }
        if (!S_ISDIR(st.st_mode)) {
            close(fd);
            r = -ENOTDIR;
            break;
        }
        walk_push(&w, fd, comp);
    }
    free(bufs);
    walk_clear(&w);
    if (r < 0)
        res_out_close(out);
    return r;
}

void res_out_close(struct res_out *o)
{
    if (o->parentfd >= 0)
        close(o->parentfd);
    if (o->objfd >= 0)
        close(o->objfd);
    o->parentfd = o->objfd = -1;
}

void res_display_dir(int rootfd, int dirfd, char *buf, size_t len)
{
    char s[PATH_MAX], r[PATH_MAX];
    const char *rel = NULL;
    if (fd_path(dirfd, s, sizeof s) == 0 && fd_path(rootfd, r, sizeof r) == 0)
        rel = below_root(r, s);
    if (!rel) {
        snprintf(buf, len, "?");
        return;
    }
    snprintf(buf, len, "/%s", rel);
}
