/*
 * Removing the `none` backend's session tmp. The command owned it, so it may
 * hold directories without read, write or search permission (Go's module
 * cache, `chmod -w`), which an unprivileged host cannot empty as they are,
 * symlinks to anywhere, and (as root) mounts. Everything is done relative to
 * directory fds: no symlink is followed, no mount is entered, and each
 * directory is made accessible to us before it is emptied. Bounded in depth
 * and in the number of entries, whatever a process still running does.
 */
#include "backend/none_tmp.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define MAX_DEPTH 256
#define MAX_ENTRIES 1000000

struct walk {
    dev_t dev;
    uint64_t mnt_id; /* 0 when the kernel cannot say */
    long budget;
};

static uint64_t mount_id(int fd)
{
#ifdef STATX_MNT_ID
    struct statx sx;
    if (statx(fd, "", AT_EMPTY_PATH, STATX_MNT_ID, &sx) == 0 && (sx.stx_mask & STATX_MNT_ID))
        return sx.stx_mnt_id;
#endif
    return 0;
}

/* 1 when fd is on the filesystem and the mount the walk started on. */
static int same_mount(const struct walk *w, int fd)
{
    struct stat st;
    if (fstat(fd, &st) < 0 || st.st_dev != w->dev)
        return 0;
    return w->mnt_id == 0 || mount_id(fd) == w->mnt_id;
}

/*
 * Opens the directory name in dfd for reading. When we may not read or
 * search it, its mode is changed first through an O_PATH fd, so the chmod
 * reaches the directory we looked at and never a symlink's target.
 */
static int open_dir(int dfd, const char *name)
{
    int fd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd >= 0 || errno != EACCES)
        return fd;
    int p = openat(dfd, name, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (p < 0)
        return -1;
    char proc[64];
    snprintf(proc, sizeof proc, "/proc/self/fd/%d", p);
    int r = chmod(proc, 0700);
    close(p);
    if (r < 0)
        return -1;
    return openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
}

/* Removes every entry of the directory open at dfd (dfd stays open). */
static void empty_dir(struct walk *w, int dfd, int depth)
{
    /* Writable, or no entry of it can be unlinked. */
    if (fchmod(dfd, 0700) < 0)
        return;
    int dup_fd = fcntl(dfd, F_DUPFD_CLOEXEC, 0);
    if (dup_fd < 0)
        return;
    DIR *d = fdopendir(dup_fd);
    if (!d) {
        close(dup_fd);
        return;
    }
    struct dirent *e;
    while (w->budget-- > 0 && (e = readdir(d))) {
        const char *n = e->d_name;
        if (strcmp(n, ".") == 0 || strcmp(n, "..") == 0)
            continue;
        if (unlinkat(dfd, n, 0) == 0 || errno != EISDIR || depth >= MAX_DEPTH)
            continue;
        int sub = open_dir(dfd, n);
        if (sub < 0)
            continue;
        if (same_mount(w, sub))
            empty_dir(w, sub, depth + 1);
        close(sub);
        unlinkat(dfd, n, AT_REMOVEDIR); /* fails on a mount point: left alone */
    }
    closedir(d);
}

int none_tmp_remove(const char *dir)
{
    int fd = open_dir(AT_FDCWD, dir);
    if (fd < 0)
        return errno == ENOENT ? 0 : -1;
    struct walk w = {.budget = MAX_ENTRIES};
    struct stat st;
    if (fstat(fd, &st) < 0) {
        close(fd);
        return -1;
    }
    w.dev = st.st_dev;
    w.mnt_id = mount_id(fd);
    empty_dir(&w, fd, 0);
    close(fd);
    return rmdir(dir);
}
