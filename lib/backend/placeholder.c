/* Placeholder mount points (see placeholder.h). */
#include "backend/placeholder.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/xattr.h>
#include <unistd.h>

int placeholder_parent(const char *path, const char **name)
{
    const char *slash = strrchr(path, '/');
    if (!slash || path[0] != '/' || !slash[1] || strcmp(slash + 1, ".") == 0 ||
        strcmp(slash + 1, "..") == 0)
        return -EINVAL;
    char *dir = strndup(path, slash == path ? 1 : (size_t)(slash - path));
    if (!dir)
        return -ENOMEM;
    struct open_how how = {.flags = O_PATH | O_DIRECTORY | O_CLOEXEC,
                           .resolve = RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS};
    long fd = syscall(SYS_openat2, AT_FDCWD, dir, &how, sizeof how);
    int e = errno;
    free(dir);
    *name = slash + 1;
    return fd < 0 ? -e : (int)fd;
}

int placeholder_create(struct placeholder *p)
{
    const char *name;
    int dfd = placeholder_parent(p->path, &name);
    if (dfd < 0) {
        p->dev = 0;
        p->ino = 0;
        return dfd;
    }
    int r = placeholder_create_in(dfd, name, p);
    close(dfd);
    return r;
}

/* Says "a launch made this": another session that finds it where it would
 * have made its own takes part in removing it (placeholder_adopt). */
#define MARK "user.ccsandbox.placeholder"

int placeholder_create_in(int dfd, const char *name, struct placeholder *p)
{
    p->dev = 0;
    p->ino = 0;
    int fd;
    if (p->is_dir) {
        if (mkdirat(dfd, name, 0755) < 0)
            return errno == EEXIST ? 0 : -errno;
        fd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    } else {
        fd = openat(dfd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
        if (fd < 0 && errno == EEXIST)
            return 0;
    }
    if (fd < 0)
        return -errno;
    struct stat st;
    int r = fstat(fd, &st) < 0 ? -errno : 1;
    if (r > 0) {
        p->dev = st.st_dev;
        p->ino = st.st_ino;
        /* Best effort: where the file system keeps no user attributes, a
         * placeholder another session still mounts over outlives us. */
        (void)fsetxattr(fd, MARK, "1", 1, 0);
    }
    close(fd);
    return r;
}

int placeholder_adopt_in(int dfd, const char *name, struct placeholder *p)
{
    p->dev = 0;
    p->ino = 0;
    struct stat st;
    if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
        return errno == ENOENT || errno == ENOTDIR ? 0 : -errno;
    if (!(S_ISREG(st.st_mode) && st.st_size == 0) && !(S_ISDIR(st.st_mode) && st.st_nlink <= 2))
        return 0; /* (the usual case: nothing more to ask) */
    int fd = openat(dfd, name, O_RDONLY | O_NONBLOCK | O_NOFOLLOW | O_NOCTTY | O_CLOEXEC);
    if (fd < 0)
        return errno == ENOENT || errno == EACCES || errno == ELOOP ? 0 : -errno;
    char mark[2];
    int r = 0;
    if (fstat(fd, &st) < 0)
        r = -errno;
    else if (((S_ISREG(st.st_mode) && st.st_size == 0) || S_ISDIR(st.st_mode)) &&
             fgetxattr(fd, MARK, mark, sizeof mark) == 1 && mark[0] == '1')
        r = 1;
    close(fd);
    if (r > 0) {
        p->is_dir = S_ISDIR(st.st_mode);
        p->dev = st.st_dev;
        p->ino = st.st_ino;
    }
    return r;
}

int placeholder_remove(const struct placeholder *p)
{
    if (!p->dev && !p->ino)
        return 0;
    const char *name;
    int dfd = placeholder_parent(p->path, &name);
    if (dfd < 0)
        return 0;
    /* Another session's sandbox may have found it and mounted over it
     * (its ccsb-init holds a shared lock on it for the sandbox's life):
     * removing it would detach that mount there. Left in place then; one
     * that cannot be opened or locked is left too. */
    int fd = openat(dfd, name, O_RDONLY | O_NONBLOCK | O_NOFOLLOW | O_NOCTTY | O_CLOEXEC);
    struct stat st;
    int r = 0;
    if (fd >= 0 && fstat(fd, &st) == 0 && st.st_dev == p->dev && st.st_ino == p->ino) {
        if (flock(fd, LOCK_EX | LOCK_NB) < 0)
            r = errno == EWOULDBLOCK ? -EWOULDBLOCK : 0;
        else if (p->is_dir)
            unlinkat(dfd, name, AT_REMOVEDIR); /* fails if no longer empty: then it stays */
        else if (S_ISREG(st.st_mode) && st.st_size == 0)
            unlinkat(dfd, name, 0);
    }
    if (fd >= 0)
        close(fd); /* (and the lock with it, once the name is gone) */
    close(dfd);
    return r;
}
