/*
 * `ccsb-init janitor`: runs on the host and undoes what a launch left on
 * the host once the sandbox is gone, even if the host process was killed
 * with SIGKILL.
 *
 *   ccsb-init janitor --watch-fd N [--cgroup DIR]... (--pidfd M | -- BWRAP ARGV...)
 *
 * The sandbox: either an existing bwrap given as a pidfd (the common case:
 * the janitor is off the launch's critical path), or a bwrap the janitor
 * starts itself as its child, inside the given cgroups (so that every
 * sandbox process is in them from the first instruction).
 * --watch-fd: the read end of a pipe whose write end only the library
 *   holds. The library writes one record per placeholder mount point it
 *   creates ("F|D <dev> <ino> <path>\0", right after creating it; see
 *   lib/backend/placeholder.h); each is removed at the end only if it is
 *   still that inode and still empty. EOF means the host is done or dead:
 *   the sandbox is killed (if it still runs), then everything is cleaned up.
 * --cgroup: directories removed at the end.
 *
 * SIGTERM/SIGINT/SIGHUP lead to the same orderly end.
 */
#include "init.h"

#include "backend/placeholder.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/pidfd.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define JANITOR_MAX 256
#define RECORD_MAX 4200

struct janitor {
    struct placeholder *ph;
    size_t nph, cap;
    char rec[RECORD_MAX]; /* a partial record from the pipe */
    size_t rec_len;
    const char *cgroups[JANITOR_MAX];
    size_t ncg;
    int watch;
    int pidfd;
    char **bwrap_argv;
};

static void cleanup(struct janitor *j)
{
    /* Deepest first, in case one placeholder sits inside another. */
    for (size_t i = j->nph; i-- > 0;) {
        placeholder_remove(&j->ph[i]);
        free((char *)j->ph[i].path);
    }
    free(j->ph);
    j->ph = NULL;
    j->nph = 0;
    /* A reaped task leaves its cgroup a moment later: retry EBUSY briefly. */
    for (size_t i = j->ncg; i-- > 0;)
        for (int k = 0; k < 200 && rmdir(j->cgroups[i]) < 0 && errno == EBUSY; k++) {
            struct timespec ts = {0, 1000000};
            nanosleep(&ts, NULL);
        }
}

static int parse(int argc, char **argv, struct janitor *j)
{
    j->watch = j->pidfd = -1;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        uint64_t n;
        if (strcmp(a, "--") == 0) {
            j->bwrap_argv = argv + i + 1;
            return argv[i + 1] && j->pidfd < 0 && j->watch >= 0 ? 0 : -1;
        }
        if (strcmp(a, "--cgroup") == 0 && i + 1 < argc && j->ncg < JANITOR_MAX &&
            argv[i + 1][0] == '/') {
            j->cgroups[j->ncg++] = argv[++i];
        } else if (strcmp(a, "--watch-fd") == 0 && i + 1 < argc &&
                   parse_u64(argv[i + 1], 65535, &n) == 0) {
            j->watch = (int)n;
            i++;
        } else if (strcmp(a, "--pidfd") == 0 && i + 1 < argc &&
                   parse_u64(argv[i + 1], 65535, &n) == 0) {
            j->pidfd = (int)n;
            i++;
        } else {
            return -1;
        }
    }
    return j->watch >= 0 && j->pidfd >= 0 ? 0 : -1;
}

/* One record: "F|D <dev> <ino> <path>". Malformed ones are ignored (the
 * library is the only writer; nothing is removed on a guess). */
static void add_record(struct janitor *j, const char *r)
{
    unsigned long long dev, ino;
    int off = 0;
    if ((r[0] != 'F' && r[0] != 'D') || sscanf(r + 1, " %llu %llu %n", &dev, &ino, &off) != 2 ||
        off <= 0 || r[1 + off] != '/')
        return;
    if (j->nph == j->cap) {
        size_t cap = j->cap ? j->cap * 2 : 64;
        struct placeholder *v = realloc(j->ph, cap * sizeof *v);
        if (!v)
            return;
        j->ph = v;
        j->cap = cap;
    }
    char *path = strdup(r + 1 + off);
    if (!path)
        return;
    j->ph[j->nph++] = (struct placeholder){.path = path, .is_dir = r[0] == 'D',
                                          .dev = (dev_t)dev, .ino = (ino_t)ino};
}

/* Reads what the pipe has: 0 when it read something, -1 when there was
 * nothing yet, 1 at EOF (or an error). */
static int read_records(struct janitor *j, int fd)
{
    char buf[8192];
    ssize_t n = read(fd, buf, sizeof buf);
    if (n < 0 && (errno == EINTR || errno == EAGAIN))
        return -1;
    if (n <= 0)
        return 1;
    for (ssize_t i = 0; i < n; i++) {
        if (buf[i] == '\0') {
            j->rec[j->rec_len] = '\0';
            add_record(j, j->rec);
            j->rec_len = 0;
        } else if (j->rec_len < sizeof j->rec - 1) {
            j->rec[j->rec_len++] = buf[i];
        }
    }
    return 0;
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

static pid_t start_bwrap(const struct janitor *j)
{
    pid_t pid = fork();
    if (pid != 0)
        return pid;
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    int r = join_cgroups(j);
    if (r < 0) {
        fprintf(stderr, "ccsb-init janitor: cannot join cgroup: %s\n", strerror(-r));
        _exit(2);
    }
    execv(j->bwrap_argv[0], j->bwrap_argv);
    fprintf(stderr, "ccsb-init janitor: cannot run %s: %s\n", j->bwrap_argv[0], strerror(errno));
    _exit(127);
}

static int cmp_int(const void *a, const void *b)
{
    return *(const int *)a - *(const int *)b;
}

/* Closes every fd above 2 except those in keep[]. */
static int close_others(int *keep, size_t n)
{
    qsort(keep, n, sizeof keep[0], cmp_int);
    unsigned from = 3;
    for (size_t i = 0; i < n; i++) {
        if (keep[i] < 0)
            continue;
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
    /* Keep our own fds away from what a bwrap child inherits. */
    int watch = fcntl(j.watch, F_DUPFD_CLOEXEC, 3);
    if (watch < 0 || close(j.watch) < 0 || fcntl(watch, F_SETFL, O_NONBLOCK) < 0) {
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

    pid_t child = 0;
    int pidfd = j.pidfd;
    if (j.bwrap_argv) {
        child = start_bwrap(&j);
        if (child < 0) {
            fprintf(stderr, "ccsb-init janitor: fork: %s\n", strerror(errno));
            cleanup(&j);
            return 2;
        }
        pidfd = pidfd_open(child, 0);
        if (pidfd < 0) {
            kill(child, SIGKILL);
            waitpid(child, NULL, 0);
            cleanup(&j);
            return 2;
        }
    }
    /* The host's fds for bwrap (control socket, args) must not be held here. */
    int keep[3] = {watch, sfd, pidfd};
    if (close_others(keep, 3) < 0) {
        fprintf(stderr, "ccsb-init janitor: close_range: %s\n", strerror(errno));
        pidfd_send_signal(pidfd, SIGKILL, NULL, 0);
    }

    int status = 0, killed = 0, watch_open = 1;
    for (;;) {
        struct pollfd p[3] = {{.fd = watch_open ? watch : -1, .events = POLLIN},
                              {.fd = sfd, .events = POLLIN},
                              {.fd = pidfd, .events = POLLIN}};
        if (poll(p, 3, -1) < 0 && errno != EINTR)
            break;
        int end = 0;
        if (p[0].revents && read_records(&j, watch) == 1) {
            end = 1;
            p[0].fd = -1;
            watch_open = 0;
        }
        if (p[1].revents) {
            struct signalfd_siginfo si;
            while (read(sfd, &si, sizeof si) == (ssize_t)sizeof si)
                if (si.ssi_signo != SIGCHLD)
                    end = 1;
        }
        if (end && !killed) {
            /* bwrap's --die-with-parent then takes its whole sandbox down */
            pidfd_send_signal(pidfd, SIGKILL, NULL, 0);
            killed = 1;
        }
        if (p[2].revents & POLLIN)
            break; /* bwrap is gone: so is every sandbox process */
    }
    /* Records written just before the end are still in the pipe. */
    while (watch_open && read_records(&j, watch) == 0)
        ;
    if (child > 0)
        while (waitpid(child, &status, 0) < 0 && errno == EINTR)
            ;
    cleanup(&j);
    if (child <= 0)
        return 0;
    if (WIFEXITED(status))
        return WEXITSTATUS(status);
    return 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
}
