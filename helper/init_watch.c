/*
 * Fail closed when a protection mount detaches.
 *
 * A deny-read mask or a deny-write bind that ccsb-init makes inside a
 * bound host directory sits on the host's node. When the host renames a
 * new file over that node or removes it (git, editors and credential
 * helpers save that way), the kernel detaches every mount on the old node
 * in every namespace: the sandbox would then see the host's new file
 * unprotected. Nothing inside the sandbox can change its mount table (no
 * capability is left), so any change of it comes from the host, and the
 * kernel says so through /proc/self/mountinfo: polled for POLLPRI, it
 * wakes on every change of this mount namespace. On a wake every target
 * is looked up again and compared with what was mounted there (mount id,
 * device and inode of the mount's root, taken from the mount's own fd when
 * it was made: no path walk and no mountinfo read at setup).
 */
#include "init.h"

#include "backend/init_proto.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/stat.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef STATX_MNT_ID_UNIQUE
#define STATX_MNT_ID_UNIQUE 0x00004000U /* Linux 6.8: ids never reused */
#endif

#define WATCH_LIVE 0
#define WATCH_COVERED 1 /* under a later mount of ours: that one is watched */
#define WATCH_LOST 2

#define WANT (STATX_TYPE | STATX_INO | STATX_MNT_ID | STATX_MNT_ID_UNIQUE)

static int statx_at(int dfd, const char *path, int flags, struct statx *sx)
{
    /* DONT_SYNC: a network file system is not asked (no blocking here) */
    flags |= AT_NO_AUTOMOUNT | AT_STATX_DONT_SYNC;
    if (syscall(SYS_statx, dfd, path, flags, WANT, sx) < 0)
        return -errno;
    return 0;
}

static void identity(struct init_watch_target *t, const struct statx *sx)
{
    t->id_mask = sx->stx_mask & (STATX_MNT_ID | STATX_MNT_ID_UNIQUE);
    t->mnt_id = t->id_mask ? sx->stx_mnt_id : 0;
    t->dev = (uint64_t)sx->stx_dev_major << 32 | sx->stx_dev_minor;
    t->ino = sx->stx_ino;
}

static int same(const struct init_watch_target *t, const struct statx *sx)
{
    struct init_watch_target now;
    identity(&now, sx);
    return now.id_mask == t->id_mask && now.mnt_id == t->mnt_id && now.dev == t->dev &&
           now.ino == t->ino;
}

int init_watch_begin(struct init_watch *w, size_t n)
{
    w->fd = -1;
    w->n = 0;
    w->t = NULL;
    if (n == 0)
        return 0;
    w->t = calloc(n, sizeof *w->t);
    return w->t ? 0 : -ENOMEM;
}

int init_watch_add(struct init_watch *w, const char *path, int kind, int mnt)
{
    struct statx sx;
    int r = statx_at(mnt, "", AT_EMPTY_PATH, &sx);
    if (r < 0)
        return r;
    if (!(sx.stx_mask & STATX_INO))
        return -EOPNOTSUPP;
    struct init_watch_target *t = &w->t[w->n++];
    t->path = path;
    t->kind = (uint8_t)kind;
    t->state = WATCH_LIVE;
    identity(t, &sx);
    return 0;
}

int init_watch_arm(struct init_watch *w)
{
    if (w->n == 0)
        return 0;
    /* From now on every change of this namespace's mount table wakes it
     * (the kernel compares with its event count as of this open); a change
     * before it is seen by the first init_watch_next_lost. */
    w->fd = open("/proc/self/mountinfo", O_RDONLY | O_CLOEXEC);
    return w->fd < 0 ? -errno : 0;
}

/* a is a proper ancestor directory of b */
static int is_below(const char *b, const char *a)
{
    size_t n = strlen(a);
    return strncmp(a, b, n) == 0 && b[n] == '/';
}

/*
 * Target i does not show its own mount: is that because a later mount of
 * ours covers it (one at the same path stacked on it, or a masked directory
 * above it)? Then that one is what the sandbox sees, and it is watched.
 */
static int covered(const struct init_watch *w, size_t i, const struct statx *sx)
{
    for (size_t j = i + 1; j < w->n; j++) {
        const struct init_watch_target *u = &w->t[j];
        if (sx && strcmp(u->path, w->t[i].path) == 0 && same(u, sx))
            return 1;
        if (!sx && u->kind == INIT_PROT_MASK_DIR && is_below(w->t[i].path, u->path))
            return 1;
    }
    return 0;
}

long init_watch_next_lost(struct init_watch *w, size_t *pos, int *err)
{
    for (; *pos < w->n; (*pos)++) {
        struct init_watch_target *t = &w->t[*pos];
        if (t->state != WATCH_LIVE)
            continue;
        struct statx sx;
        int r = statx_at(AT_FDCWD, t->path, AT_SYMLINK_NOFOLLOW, &sx);
        if (r == 0 && same(t, &sx))
            continue;
        if (covered(w, *pos, r == 0 ? &sx : NULL)) {
            t->state = WATCH_COVERED;
            continue;
        }
        /* Gone, replaced, or it cannot be looked up: all count as lost. */
        t->state = WATCH_LOST;
        *err = -r;
        return (long)(*pos)++;
    }
    return -1;
}
