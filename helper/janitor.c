/*
 * `ccsb-init janitor`: the host-side parent of bwrap when a launch needs
 * something undone after the sandbox is gone, even if the host process is
 * killed with SIGKILL.
 *
 *   ccsb-init janitor --watch-fd N [--file PATH]... [--dir PATH]...
 *                     [--cgroup DIR]... -- BWRAP ARGV...
 *
 * --file/--dir: placeholder mount points. bubblewrap can only mount over a
 *   path that exists, so a mandatory deny-write path that does not exist yet
 *   (.bashrc, .git/hooks, ...) inside a writable bind needs an empty file or
 *   directory on the host for the read-only mount to sit on. The janitor
 *   creates each one (never over an existing name), and removes exactly
 *   those it created (same inode, still empty) once bwrap has exited.
 * --cgroup: a cgroup directory the library prepared; bwrap is started inside
 *   it (so every sandbox process is), and it is removed at the end.
 * --watch-fd: the read end of a pipe whose write end only the host holds.
 *   EOF means the host is gone: kill bwrap (its --die-with-parent takes the
 *   whole sandbox down), clean up, exit.
 *
 * The janitor ignores terminal signals aimed at the host's process group
 * and turns SIGTERM/SIGINT/SIGHUP into the same orderly end.
 */
#include "init.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/pidfd.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define JANITOR_MAX 256

struct placeholder {
    const char *path;
    int is_dir;
    int parent; /* O_PATH fd of the parent directory, -1 when not ours */
    const char *name;
    dev_t dev;
    ino_t ino;
};

struct janitor {
    struct placeholder ph[JANITOR_MAX];
    size_t nph;
    const char *cgroups[JANITOR_MAX];
    size_t ncg;
    int watch;
    char **bwrap_argv;
};

static int open_dir_nofollow(const char *path)
{
    struct open_how how = {.flags = O_PATH | O_DIRECTORY | O_CLOEXEC,
                           .resolve = RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS};
    long fd = syscall(SYS_openat2, AT_FDCWD, path, &how, sizeof how);
    return fd < 0 ? -errno : (int)fd;
}

/*
 * Creates one placeholder. The parent is reached without following any
 * symlink, so a link planted by another sandbox cannot redirect the
 * creation; an existing name is left alone (and is not ours to remove).
 */
static int create_placeholder(struct placeholder *p)
{
    p->parent = -1;
    const char *slash = strrchr(p->path, '/');
    if (!slash || p->path[0] != '/' || !slash[1] || strcmp(slash + 1, ".") == 0 ||
        strcmp(slash + 1, "..") == 0)
        return -EINVAL;
    char *dir = strndup(p->path, slash == p->path ? 1 : (size_t)(slash - p->path));
    if (!dir)
        return -ENOMEM;
    int dfd = open_dir_nofollow(dir);
    free(dir);
    if (dfd < 0)
        return dfd;
    p->name = slash + 1;
    int r;
    if (p->is_dir) {
        r = mkdirat(dfd, p->name, 0755);
    } else {
        r = openat(dfd, p->name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
        if (r >= 0)
            r = close(r);
    }
    if (r < 0) {
        int e = errno;
        close(dfd);
        return e == EEXIST ? 0 : -e;
    }
    struct stat st;
    if (fstatat(dfd, p->name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
        int e = errno;
        close(dfd);
        return -e;
    }
    p->parent = dfd;
    p->dev = st.st_dev;
    p->ino = st.st_ino;
    return 0;
}

/* Removes a placeholder we created if it is still the empty thing we made. */
static void remove_placeholder(struct placeholder *p)
{
    if (p->parent < 0)
        return;
    struct stat st;
    if (fstatat(p->parent, p->name, &st, AT_SYMLINK_NOFOLLOW) == 0 && st.st_dev == p->dev &&
        st.st_ino == p->ino) {
        if (p->is_dir)
            unlinkat(p->parent, p->name, AT_REMOVEDIR); /* fails if no longer empty */
        else if (S_ISREG(st.st_mode) && st.st_size == 0)
            unlinkat(p->parent, p->name, 0);
    }
    close(p->parent);
    p->parent = -1;
}

static void cleanup(struct janitor *j)
{
    /* Deepest first, in case a later placeholder sits inside an earlier one. */
    for (size_t i = j->nph; i-- > 0;)
        remove_placeholder(&j->ph[i]);
    /* A reaped task leaves its cgroup a moment later: retry EBUSY briefly. */
    for (size_t i = j->ncg; i-- > 0;)
        for (int k = 0; k < 200 && rmdir(j->cgroups[i]) < 0 && errno == EBUSY; k++) {
            struct timespec ts = {0, 1000000};
            nanosleep(&ts, NULL);
        }
}

static int parse(int argc, char **argv, struct janitor *j)
{
    j->watch = -1;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--") == 0) {
            j->bwrap_argv = argv + i + 1;
            return argv[i + 1] && j->watch >= 0 ? 0 : -1;
        }
        if (i + 1 >= argc)
            return -1;
        const char *v = argv[++i];
        uint64_t n;
        if (strcmp(argv[i - 1], "--watch-fd") == 0 && parse_u64(v, 65535, &n) == 0) {
            j->watch = (int)n;
        } else if ((strcmp(argv[i - 1], "--file") == 0 || strcmp(argv[i - 1], "--dir") == 0) &&
                   j->nph < JANITOR_MAX) {
            j->ph[j->nph++] = (struct placeholder){.path = v, .is_dir = argv[i - 1][2] == 'd',
                                                  .parent = -1};
        } else if (strcmp(argv[i - 1], "--cgroup") == 0 && j->ncg < JANITOR_MAX && v[0] == '/') {
            j->cgroups[j->ncg++] = v;
        } else {
            return -1;
        }
    }
    return -1;
}

/* In the child, before exec: join every prepared cgroup. */
static int join_cgroups(const struct janitor *j)
{
    for (size_t i = 0; i < j->ncg; i++) {
        char path[4096];
        if (snprintf(path, sizeof path, "%s/cgroup.procs", j->cgroups[i]) >= (int)sizeof path)
            return -ENAMETOOLONG;
        int fd = open(path, O_WRONLY | O_CLOEXEC);
        if (fd < 0)
            return -errno;
        ssize_t n = write(fd, "0\n", 2);
        int e = errno;
        close(fd);
        if (n != 2)
            return -(n < 0 ? e : EIO);
    }
    return 0;
}

static int cmp_int(const void *a, const void *b)
{
    return *(const int *)a - *(const int *)b;
}

/* Closes every fd above 2 except the watch pipe, the signalfd and the
 * placeholders' parent directories. */
static int close_others(const struct janitor *j, int watch, int sfd)
{
    int keep[JANITOR_MAX + 3];
    size_t n = 0;
    keep[n++] = watch;
    keep[n++] = sfd;
    for (size_t i = 0; i < j->nph; i++)
        if (j->ph[i].parent >= 0)
            keep[n++] = j->ph[i].parent;
    qsort(keep, n, sizeof keep[0], cmp_int);
    unsigned from = 3;
    for (size_t i = 0; i < n; i++) {
        if ((unsigned)keep[i] > from && close_range(from, (unsigned)keep[i] - 1, 0) < 0)
            return -1;
        if ((unsigned)keep[i] + 1 > from)
            from = (unsigned)keep[i] + 1;
    }
    return close_range(from, ~0u, 0);
}

int janitor_main(int argc, char **argv)
{
    struct janitor j;
    memset(&j, 0, sizeof j);
    if (parse(argc, argv, &j) < 0) {
        fprintf(stderr, "ccsb-init janitor: bad arguments\n");
        return 2;
    }
    /* Keep the watch fd away from what bwrap inherits. */
    int watch = fcntl(j.watch, F_DUPFD_CLOEXEC, 3);
    if (watch < 0 || close(j.watch) < 0) {
        fprintf(stderr, "ccsb-init janitor: watch fd: %s\n", strerror(errno));
        return 2;
    }

    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGCHLD);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGHUP);
    int sfd = -1;
    if (sigprocmask(SIG_BLOCK, &set, NULL) < 0 ||
        (sfd = signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK)) < 0) {
        fprintf(stderr, "ccsb-init janitor: signalfd: %s\n", strerror(errno));
        return 2;
    }

    for (size_t i = 0; i < j.nph; i++) {
        int r = create_placeholder(&j.ph[i]);
        if (r < 0) {
            fprintf(stderr, "ccsb-init janitor: cannot create placeholder %s: %s\n",
                    j.ph[i].path, strerror(-r));
            cleanup(&j);
            return 2;
        }
    }

    pid_t pid = fork();
    if (pid < 0) {
        fprintf(stderr, "ccsb-init janitor: fork: %s\n", strerror(errno));
        cleanup(&j);
        return 2;
    }
    if (pid == 0) {
        sigset_t none;
        sigemptyset(&none);
        sigprocmask(SIG_SETMASK, &none, NULL);
        int r = join_cgroups(&j);
        if (r < 0) {
            fprintf(stderr, "ccsb-init janitor: cannot join cgroup: %s\n", strerror(-r));
            _exit(2);
        }
        execv(j.bwrap_argv[0], j.bwrap_argv);
        fprintf(stderr, "ccsb-init janitor: cannot run %s: %s\n", j.bwrap_argv[0],
                strerror(errno));
        _exit(127);
    }
    /* Only the watch pipe and the signals matter from here on; the fds the
     * host passed for bwrap (control socket, args) must not be held here. */
    if (close_others(&j, watch, sfd) < 0) {
        fprintf(stderr, "ccsb-init janitor: close_range: %s\n", strerror(errno));
        kill(pid, SIGKILL);
    }

    int status = 0, killed = 0;
    for (;;) {
        struct pollfd p[2] = {{.fd = watch, .events = POLLIN}, {.fd = sfd, .events = POLLIN}};
        if (poll(p, 2, -1) < 0 && errno != EINTR)
            break;
        int end = 0;
        if (p[0].revents) {
            char c;
            if (read(watch, &c, 1) <= 0)
                end = 1;
        }
        if (p[1].revents) {
            struct signalfd_siginfo si;
            while (read(sfd, &si, sizeof si) == (ssize_t)sizeof si)
                if (si.ssi_signo != SIGCHLD)
                    end = 1;
        }
        if (end && !killed) {
            kill(pid, SIGKILL);
            killed = 1;
        }
        pid_t w = waitpid(pid, &status, WNOHANG);
        if (w == pid)
            break;
    }
    cleanup(&j);
    if (WIFEXITED(status))
        return WEXITSTATUS(status);
    return 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
}
