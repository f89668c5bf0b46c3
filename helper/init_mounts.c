/*
 * ccsb-init's share of the filesystem policy, made before anything else
 * runs in the sandbox (the library's plan decides; see bwrap_args.c):
 *
 *   --pin PATH        bind PATH onto itself: a mount point cannot be renamed
 *                     or removed, so a protected path's ancestors stay put
 *   --ro PATH         bind PATH onto itself read-only (nosuid, nodev)
 *   --mask-dir PATH   an empty read-only tmpfs, mode 0000, over PATH
 *   --mask-file PATH  /dev/null (read-only, nodev: opening it fails) over PATH
 *   --dev HOSTDEV     /dev, from the host's nodes bound at HOSTDEV (init_dev.c)
 *   --remount-ro PATH PATH's own mount read-only (the root, after the rest)
 *
 * Every path is reached without following symlinks (openat2
 * RESOLVE_NO_SYMLINKS) and mounted with the new mount API, so nothing a
 * sandbox could have planted redirects a mount; one that could be another
 * session's placeholder is held (a shared flock) for the sandbox's life,
 * so that session does not remove it from under our mount. Each mount is
 * remembered for the watch (init_watch.c), which ends the sandbox if the
 * host detaches one later. Then nested user
 * namespaces are forbidden (init_lock_userns), every capability is dropped
 * for good (bounding set, ambient, permitted, effective, inheritable) and
 * both are verified. Any failure ends the launch.
 */
#include "init.h"

#include "backend/init_proto.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <linux/nsfs.h>
#include <linux/openat2.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "linux_api.h"

int init_open_nofollow(const char *path)
{
    struct open_how how = {.flags = O_PATH | O_CLOEXEC | O_NOFOLLOW,
                           .resolve = RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS};
    long fd = syscall(SYS_openat2, AT_FDCWD, path, &how, sizeof how);
    return fd < 0 ? -errno : (int)fd;
}

int init_attach(int mnt, int target)
{
    if (move_mount(mnt, "", target, "", MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH) < 0)
        return -errno;
    return 0;
}

static int set_attr(int mnt, unsigned set, int recursive)
{
    struct mount_attr a = {.attr_set = set};
    if (mount_setattr(mnt, "", AT_EMPTY_PATH | (recursive ? AT_RECURSIVE : 0), &a, sizeof a) < 0)
        return -errno;
    return 0;
}

/* A clone of what `from` shows, optionally read-only, mounted on `target`.
 * Returns the mount's fd (attached) or -errno. */
static int bind_onto(int from, int target, int ro)
{
    int mnt = open_tree(from, "", AT_EMPTY_PATH | OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC |
                                      AT_RECURSIVE);
    if (mnt < 0)
        return -errno;
    int r = ro ? set_attr(mnt, MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV, 1) : 0;
    if (!r)
        r = init_attach(mnt, target);
    if (r < 0) {
        close(mnt);
        return r;
    }
    return mnt;
}

int init_new_fs(const char *type, const char *const *kv, unsigned attrs)
{
    int fs = fsopen(type, FSOPEN_CLOEXEC);
    if (fs < 0)
        return -errno;
    int r = 0;
    for (size_t i = 0; kv[i] && !r; i += 2)
        if (fsconfig(fs, kv[i + 1] ? FSCONFIG_SET_STRING : FSCONFIG_SET_FLAG, kv[i], kv[i + 1],
                     0) < 0)
            r = -errno;
    if (!r && fsconfig(fs, FSCONFIG_CMD_CREATE, NULL, NULL, 0) < 0)
        r = -errno;
    int mnt = r ? -1 : fsmount(fs, FSMOUNT_CLOEXEC, attrs);
    if (!r && mnt < 0)
        r = -errno;
    close(fs);
    return r < 0 ? r : mnt;
}

int init_empty_tmpfs_onto(int target)
{
    static const char *const kv[] = {"mode", "0000", "nr_inodes", "1", NULL};
    int mnt = init_new_fs("tmpfs", kv,
                          MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV |
                              MOUNT_ATTR_NOEXEC);
    if (mnt < 0)
        return mnt;
    int r = init_attach(mnt, target);
    if (r < 0) {
        close(mnt);
        return r;
    }
    return mnt;
}

/*
 * Another session's launch may have made this node as its placeholder (an
 * empty file or directory), and removes it when that session ends; removing
 * a mount point on the host detaches every mount over it, ours too. So a
 * shared lock is held on anything that could be one, for as long as we
 * live (the fd is never closed): the remover takes the lock exclusively
 * first and leaves the node alone while anyone holds it (placeholder.c).
 * If it got there first, the node is gone and mounting over it fails.
 */
static int hold_if_placeholder(int target, const struct stat *st)
{
    if (!(S_ISREG(st->st_mode) && st->st_size == 0) &&
        !(S_ISDIR(st->st_mode) && st->st_nlink <= 2))
        return 0;
    /* O_PATH cannot be locked: the same inode again, readable. */
    char self[64];
    snprintf(self, sizeof self, "/proc/self/fd/%d", target);
    int fd = open(self, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
    if (fd < 0)
        return errno == EACCES ? 0 : -errno; /* not ours to read: not a placeholder */
    for (int tries = 0;; tries++) {
        if (flock(fd, LOCK_SH | LOCK_NB) == 0)
            return 0;
        /* exclusive only while a remover unlinks it: a moment */
        if (errno != EWOULDBLOCK || tries == 200) {
            int e = errno;
            close(fd);
            return -e;
        }
        struct timespec ms = {0, 1000000};
        nanosleep(&ms, NULL);
    }
}

/*
 * What a mount goes onto: path reached without following any symlink, and
 * not a symlink itself (one swapped in since the plan: a read-only bind of
 * a symlink onto itself protects nothing, writes go through it). Returns
 * an O_PATH fd or -errno.
 */
static int open_target(const char *path, int *is_dir)
{
    int fd = init_open_nofollow(path);
    if (fd < 0)
        return fd;
    struct stat st;
    int r = fstat(fd, &st) < 0     ? -errno
            : S_ISLNK(st.st_mode) ? -ELOOP
                                  : hold_if_placeholder(fd, &st);
    if (r < 0) {
        close(fd);
        return r;
    }
    *is_dir = S_ISDIR(st.st_mode);
    return fd;
}

static int remount_ro(const char *path)
{
    int fd = init_open_nofollow(path);
    if (fd < 0)
        return fd;
    int r = set_attr(fd, MOUNT_ATTR_RDONLY, 0);
    close(fd);
    return r;
}

/* 1 when our user namespace owns our mount namespace (bwrap run by uid 0,
 * without --disable-userns), 0 when it is one further down, or -errno. */
static int own_mount_ns(void)
{
    int mnt = open("/proc/self/ns/mnt", O_RDONLY | O_CLOEXEC);
    if (mnt < 0)
        return -errno;
    int owner = ioctl(mnt, NS_GET_USERNS);
    int e = errno;
    close(mnt);
    if (owner < 0)
        return e == EPERM ? 0 : -e; /* EPERM: the owner is above us, out of our scope */
    struct stat a, b;
    int r = fstat(owner, &a) < 0 || stat("/proc/self/ns/user", &b) < 0 ? -errno : 0;
    close(owner);
    return r < 0 ? r : a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

int init_apply_mounts(const struct init_mount *m, size_t n, struct init_watch *w, char *err,
                      size_t errlen)
{
    int r = init_watch_begin(w, n);
    if (r < 0) {
        snprintf(err, errlen, "cannot watch the sandbox's mounts: %s", strerror(-r));
        return r;
    }
    if (n == 0)
        return 0;
    int own = own_mount_ns();
    if (own < 0) {
        snprintf(err, errlen, "cannot tell who owns the sandbox's mount namespace: %s",
                 strerror(-own));
        return own;
    }
    /* Below the user namespace that owns bwrap's mount namespace (bwrap
     * nests one for a non-root uid, and for --disable-userns) our
     * capabilities do not reach it: mount in a new mount namespace of our
     * own instead. Every sandbox process descends from us and lives in it;
     * what bwrap mounted is carried over locked, so nothing below can be
     * uncovered either. Otherwise we mount right in bwrap's (sparing the
     * copy now and its teardown at the end): no process keeps a
     * capability to unmount anything afterwards. */
    if (!own && unshare(CLONE_NEWNS) < 0) {
        snprintf(err, errlen, "cannot make the sandbox's mount namespace: %s", strerror(errno));
        return -errno;
    }
    int devnull = -1;
    for (size_t i = 0; i < n; i++) {
        if (m[i].op == INIT_MOUNT_DEV) {
            /* Ours from the start (a fresh tmpfs, nothing of the host's
             * file system under it): nothing to watch. */
            r = init_make_dev(m[i].path, err, errlen);
            if (r < 0)
                return r;
            continue;
        }
        if (m[i].op == INIT_MOUNT_REMOUNT_RO) {
            /* bwrap's --remount-ro, without its mountinfo parse */
            r = remount_ro(m[i].path);
            if (r < 0) {
                snprintf(err, errlen, "cannot make %s read-only: %s", m[i].path, strerror(-r));
                return r;
            }
            continue;
        }
        int is_dir = 0, kind = 0;
        int target = open_target(m[i].path, &is_dir);
        r = target;
        if (target >= 0) {
            switch (m[i].op) {
            case INIT_MOUNT_PIN:
            case INIT_MOUNT_RO:
                r = bind_onto(target, target, m[i].op == INIT_MOUNT_RO);
                kind = is_dir ? INIT_PROT_PIN_DIR : INIT_PROT_PIN_FILE;
                break;
            case INIT_MOUNT_MASK_DIR:
                r = init_empty_tmpfs_onto(target);
                kind = INIT_PROT_MASK_DIR;
                break;
            case INIT_MOUNT_MASK_FILE:
                if (devnull < 0)
                    devnull = init_open_nofollow("/dev/null");
                r = devnull < 0 ? devnull : bind_onto(devnull, target, 1);
                kind = INIT_PROT_MASK_FILE;
                break;
            default:
                r = -EINVAL;
            }
            close(target);
        }
        if (r >= 0) {
            int mnt = r;
            r = init_watch_add(w, m[i].path, kind, mnt);
            close(mnt);
        }
        if (r < 0) {
            snprintf(err, errlen, "cannot protect %s: %s", m[i].path, strerror(-r));
            if (devnull >= 0)
                close(devnull);
            return r;
        }
    }
    if (devnull >= 0)
        close(devnull);
    r = init_watch_arm(w);
    if (r < 0) {
        snprintf(err, errlen, "cannot watch the sandbox's mounts (/proc/self/mountinfo): %s",
                 strerror(-r));
        return r;
    }
    return 0;
}

int init_lock_userns(char *err, size_t errlen)
{
    /* For a uid-0 host, instead of bwrap's --disable-userns (which would
     * put us one user namespace further down, out of reach of bwrap's mount
     * namespace: init_apply_mounts would need one of its own), we set our
     * own user namespace's limit to 0, which no process below can raise:
     * that needs CAP_SYS_RESOURCE here, and nothing keeps a capability.
     * The seccomp filter refuses the same calls independently. bwrap
     * mounted /proc/sys read-only: it is writable only for this write,
     * while we are the only process in here (a detached writable clone
     * would cost an unmount). */
    static const char knob[] = "user/max_user_namespaces";
    /* Never the host's own limit: the initial namespace maps every id. */
    unsigned long in = 1, out = 1, count = 0;
    FILE *map = fopen("/proc/self/uid_map", "re");
    int fields = map ? fscanf(map, "%lu %lu %lu", &in, &out, &count) : 0;
    if (map)
        fclose(map);
    if (fields != 3 || (in == 0 && out == 0 && count == 4294967295ul)) {
        snprintf(err, errlen, "not forbidding nested user namespaces: this is not the "
                              "sandbox's own user namespace");
        return -EPERM;
    }
    int sys = init_open_nofollow("/proc/sys");
    if (sys < 0) {
        snprintf(err, errlen, "cannot open /proc/sys: %s", strerror(-sys));
        return sys;
    }
    struct mount_attr rw = {.attr_clr = MOUNT_ATTR_RDONLY}, ro = {.attr_set = MOUNT_ATTR_RDONLY};
    int r = mount_setattr(sys, "", AT_EMPTY_PATH, &rw, sizeof rw) < 0 ? -errno : 0;
    int fd = r ? -1 : openat(sys, knob, O_RDWR | O_CLOEXEC | O_NOFOLLOW);
    if (!r && fd < 0)
        r = -errno;
    char buf[32];
    ssize_t got = -1;
    ssize_t put = r ? 0 : write(fd, "0\n", 2);
    if (!r && put != 2)
        r = put < 0 ? -errno : -EIO;
    if (!r && (got = pread(fd, buf, sizeof buf - 1, 0)) < 0)
        r = -errno;
    if (fd >= 0)
        close(fd); /* an open writer would keep the mount from going back */
    /* Back to read-only whatever happened; failing that ends the launch. */
    if (mount_setattr(sys, "", AT_EMPTY_PATH, &ro, sizeof ro) < 0 && !r)
        r = -errno;
    close(sys);
    if (r < 0) {
        snprintf(err, errlen, "cannot forbid nested user namespaces (/proc/sys/%s): %s", knob,
                 strerror(-r));
        return r;
    }
    buf[got] = '\0';
    if (strcmp(buf, "0\n") != 0) {
        snprintf(err, errlen, "nested user namespaces still allowed: /proc/sys/%s reads %.20s",
                 knob, buf);
        return -EPERM;
    }
    return 0;
}

int init_drop_caps(char *err, size_t errlen)
{
    /* Bounding set first (needs CAP_SETPCAP), so no exec can ever regain a
     * capability, not even a uid-0 one in our user namespace. */
    int last = 63;
    while (last > 0 && prctl(PR_CAPBSET_READ, last, 0, 0, 0) < 0)
        last--;
    for (int c = 0; c <= last; c++)
        if (prctl(PR_CAPBSET_READ, c, 0, 0, 0) == 1 && prctl(PR_CAPBSET_DROP, c, 0, 0, 0) < 0) {
            snprintf(err, errlen, "cannot drop capability %d from the bounding set: %s", c,
                     strerror(errno));
            return -errno;
        }
    if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) < 0 && errno != EINVAL) {
        snprintf(err, errlen, "cannot clear ambient capabilities: %s", strerror(errno));
        return -errno;
    }
    struct __user_cap_header_struct h = {.version = _LINUX_CAPABILITY_VERSION_3, .pid = 0};
    struct __user_cap_data_struct d[2];
    memset(d, 0, sizeof d);
    if (syscall(SYS_capset, &h, d) < 0) {
        snprintf(err, errlen, "cannot drop capabilities: %s", strerror(errno));
        return -errno;
    }
    /* Verify rather than trust: anything left is a reason to stop. */
    if (syscall(SYS_capget, &h, d) < 0 || d[0].effective || d[0].permitted ||
        d[0].inheritable || d[1].effective || d[1].permitted || d[1].inheritable) {
        snprintf(err, errlen, "capabilities remain after dropping them");
        return -EPERM;
    }
    for (int c = 0; c <= last; c++)
        if (prctl(PR_CAPBSET_READ, c, 0, 0, 0) == 1) {
            snprintf(err, errlen, "capability %d remains in the bounding set", c);
            return -EPERM;
        }
    return 0;
}
