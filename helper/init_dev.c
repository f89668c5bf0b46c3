/*
 * The sandbox's /dev, made by ccsb-init instead of bubblewrap's --dev.
 *
 * bwrap's --dev binds each of six device nodes with a bind that parses
 * /proc/self/mountinfo for its remount (~0.1 ms each, on every launch);
 * here bwrap binds the host's /dev once, recursively, at a private path
 * (`--dev-bind /dev /run/ccsb/hostdev`), and ccsb-init clones the six
 * nodes out of it with the mount API before anything else runs in the
 * sandbox. The result is what --dev makes: a tmpfs (nosuid, nodev) with
 * null, zero, full, random, urandom and tty, a devpts instance of its own
 * (pts, ptmx), shm, and the fd/stdin/stdout/stderr/core links. Then the
 * host's /dev goes away: unmounted where our capabilities reach its mount,
 * else covered by an empty read-only tmpfs (its mounts are locked to us
 * when ccsb-init had to make a mount namespace of its own). Either way
 * nothing under it (the host's pts, shm, mqueue) stays reachable, which is
 * checked before going on.
 */
#include "init.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "linux_api.h"

static const struct {
    const char *name;
    unsigned major, minor;
} nodes[] = {{"null", 1, 3},    {"zero", 1, 5}, {"full", 1, 7},
             {"random", 1, 8}, {"urandom", 1, 9}, {"tty", 5, 0}};

static const struct {
    const char *name, *to;
} links[] = {{"fd", "/proc/self/fd"},         {"stdin", "/proc/self/fd/0"},
             {"stdout", "/proc/self/fd/1"},   {"stderr", "/proc/self/fd/2"},
             {"core", "/proc/kcore"},         {"ptmx", "pts/ptmx"}};

/* The host's node `name` under hostdev, cloned onto an empty file of the
 * same name in our /dev (dev: its mount fd). */
static int bind_node(int hostdev, int dev, size_t i)
{
    int clone = open_tree(hostdev, nodes[i].name,
                          OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_SYMLINK_NOFOLLOW);
    if (clone < 0)
        return -errno;
    struct stat st;
    struct mount_attr a = {.attr_set = MOUNT_ATTR_NOSUID | MOUNT_ATTR_NOEXEC};
    int r = fstat(clone, &st) < 0 ? -errno : 0;
    /* exactly the device it is named for: nothing else of the host's */
    if (!r && (!S_ISCHR(st.st_mode) || major(st.st_rdev) != nodes[i].major ||
               minor(st.st_rdev) != nodes[i].minor))
        r = -ENODEV;
    if (!r && mount_setattr(clone, "", AT_EMPTY_PATH, &a, sizeof a) < 0)
        r = -errno;
    int f = r ? -1 : openat(dev, nodes[i].name, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC | O_NOFOLLOW,
                            0666);
    if (!r && f < 0)
        r = -errno;
    if (f >= 0)
        close(f);
    if (!r && move_mount(clone, "", dev, nodes[i].name, MOVE_MOUNT_F_EMPTY_PATH) < 0)
        r = -errno;
    close(clone);
    return r;
}

/* Takes the host's /dev away from `from`: 0 once nothing of it is
 * reachable there, or -errno. */
static int hide_host_dev(const char *from)
{
    int r = 0;
    if (umount2(from, MNT_DETACH | UMOUNT_NOFOLLOW) < 0) {
        /* EINVAL: locked to the mount below it (our own mount namespace,
         * under bwrap's user namespace): cover it instead. */
        if (errno != EINVAL && errno != EPERM)
            return -errno;
        int target = init_open_nofollow(from);
        if (target < 0)
            return target;
        int mnt = init_empty_tmpfs_onto(target);
        close(target);
        if (mnt < 0)
            return mnt;
        close(mnt);
    }
    /* What is there now must not be the host's /dev (a node of it). */
    struct stat st;
    char probe[256];
    snprintf(probe, sizeof probe, "%s/null", from);
    if (lstat(probe, &st) == 0)
        r = -EEXIST;
    else if (errno != ENOENT && errno != EACCES)
        r = -errno;
    return r;
}

int init_make_dev(const char *from, char *err, size_t errlen)
{
    const char *what = "opening the host's device nodes";
    int hostdev = init_open_nofollow(from), target = -1, dev = -1, pts = -1;
    int r = hostdev;
    if (r >= 0) {
        what = "opening /dev";
        r = target = init_open_nofollow("/dev");
    }
    if (r >= 0) {
        what = "making /dev's tmpfs";
        static const char *const kv[] = {"mode", "0755", NULL};
        r = dev = init_new_fs("tmpfs", kv, MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV);
    }
    if (r >= 0)
        r = init_attach(dev, target);
    for (size_t i = 0; r >= 0 && i < sizeof nodes / sizeof nodes[0]; i++) {
        what = nodes[i].name;
        r = bind_node(hostdev, dev, i);
    }
    if (r >= 0) {
        what = "making /dev/pts and /dev/shm";
        if (mkdirat(dev, "pts", 0755) < 0 || mkdirat(dev, "shm", 01777) < 0 ||
            fchmodat(dev, "shm", 01777, 0) < 0)
            r = -errno;
    }
    if (r >= 0) {
        what = "mounting a devpts instance on /dev/pts";
        static const char *const kv[] = {"newinstance", NULL, "ptmxmode", "0666",
                                         "mode",        "620", NULL};
        r = pts = init_new_fs("devpts", kv, MOUNT_ATTR_NOSUID | MOUNT_ATTR_NOEXEC);
    }
    if (r >= 0 && move_mount(pts, "", dev, "pts", MOVE_MOUNT_F_EMPTY_PATH) < 0)
        r = -errno;
    for (size_t i = 0; r >= 0 && i < sizeof links / sizeof links[0]; i++) {
        what = links[i].name;
        if (symlinkat(links[i].to, dev, links[i].name) < 0)
            r = -errno;
    }
    if (hostdev >= 0)
        close(hostdev); /* (it would keep the host's /dev busy) */
    if (r >= 0) {
        what = "hiding the host's /dev";
        r = hide_host_dev(from);
    }
    if (target >= 0)
        close(target);
    if (dev >= 0)
        close(dev);
    if (pts >= 0)
        close(pts);
    if (r < 0)
        snprintf(err, errlen, "cannot make /dev (%s): %s", what, strerror(-r));
    return r < 0 ? r : 0;
}
