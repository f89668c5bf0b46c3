/* Placeholder mount points (see placeholder.h). */
#include "backend/placeholder.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
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

int placeholder_create_in(int dfd, const char *name, struct placeholder *p)
{
    p->dev = 0;
    p->ino = 0;
    int r;
    if (p->is_dir) {
        r = mkdirat(dfd, name, 0755);
    } else {
        r = openat(dfd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
        if (r >= 0)
            r = close(r);
    }
    if (r < 0)
        return errno == EEXIST ? 0 : -errno;
    struct stat st;
    if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
        return -errno;
    p->dev = st.st_dev;
    p->ino = st.st_ino;
    return 1;
}

void placeholder_remove(const struct placeholder *p)
{
    if (!p->dev && !p->ino)
        return;
    const char *name;
    int dfd = placeholder_parent(p->path, &name);
    if (dfd < 0)
        return;
    struct stat st;
    if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && st.st_dev == p->dev &&
        st.st_ino == p->ino) {
        if (p->is_dir)
            unlinkat(dfd, name, AT_REMOVEDIR); /* fails if no longer empty: then it stays */
        else if (S_ISREG(st.st_mode) && st.st_size == 0)
            unlinkat(dfd, name, 0);
    }
    close(dfd);
}
