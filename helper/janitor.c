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
#ifdef __GLIBC__
#include <sys/pidfd.h>
#endif
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "linux_api.h"

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

/*
 * Removes what the launch left. Placeholders only when the sandbox is known
 * to be gone (sandbox_gone): unlinking a mount point on the host while a
 * sandbox still runs detaches the read-only mount over it in there.
 * grace_ms: how long one a sandbox still holds is tried again, for when
 * its PID 1 could not be watched (bwrap was killed with the host, and
 * ccsb-init, which holds them, dies a moment after it); a placeholder held
 * longer is another session's too, and that session removes it.
 */
static void cleanup(struct janitor *j, int sandbox_gone, int grace_ms)
{
    /* Cgroups first: an empty cgroup also says every sandbox process has
     * exited, not just bwrap. A reaped task leaves its cgroup a moment
     * later: retry EBUSY briefly. */
    for (size_t i = j->ncg; i-- > 0;)
        for (int k = 0; k < 200 && rmdir(j->cgroups[i]) < 0 && errno == EBUSY; k++) {
            struct timespec ts = {0, 1000000};
            nanosleep(&ts, NULL);
        }
    /* Deepest first, in case one placeholder sits inside another. */
    for (int waited = 0, held = 1; sandbox_gone && held; waited += 10) {
        held = 0;
        for (size_t i = j->nph; i-- > 0;)
            if (placeholder_remove(&j->ph[i]) == -EWOULDBLOCK)
                held = 1;
            else
                j->ph[i].dev = j->ph[i].ino = 0; /* done with */
        if (held && waited >= grace_ms)
            break;
        struct timespec ts = {0, 10000000};
        if (held)
            nanosleep(&ts, NULL);
    }
    for (size_t i = 0; i < j->nph; i++)
        free((char *)j->ph[i].path);
    free(j->ph);
    j->ph = NULL;
    j->nph = 0;
}

/*
 * What must be gone before placeholders may go: bwrap, and the sandbox's
 * PID 1 (bwrap's child). A killed bwrap is seen gone at once, while its
 * PID 1 (--die-with-parent) and every process in there die a moment later.
 */
#define JANITOR_INITS 4
struct sandbox {
    int pidfd; /* bwrap */
    int init[JANITOR_INITS];
    size_t ninit;
    int killed;
};

/* 0 once pidfd's process has exited, -1 when that cannot be known in time. */
static int wait_exit(int pidfd, int timeout_ms)
{
    for (;;) {
        struct pollfd p = {.fd = pidfd, .events = POLLIN};
        int r = poll(&p, 1, timeout_ms);
        if (r > 0 && (p.revents & POLLIN))
            return 0;
        if (r < 0 && errno == EINTR)
            continue;
        return -1;
    }
}

static pid_t pid_of_pidfd(int pidfd)
{
    char path[64], line[128];
    snprintf(path, sizeof path, "/proc/self/fdinfo/%d", pidfd);
    FILE *f = fopen(path, "re");
    if (!f)
        return -1;
    long pid = -1;
    while (fgets(line, sizeof line, f))
        if (sscanf(line, "Pid: %ld", &pid) == 1)
            break;
    fclose(f);
    return pid > 0 ? (pid_t)pid : -1;
}

static pid_t parent_of(pid_t pid)
{
    char path[64], buf[512];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0)
        return -1;
    buf[n] = '\0';
    const char *rp = strrchr(buf, ')'); /* the name may hold anything */
    int ppid;
    return rp && sscanf(rp + 1, " %*c %d", &ppid) == 1 ? ppid : -1;
}

/* pidfds of bwrap's children, taken while bwrap still holds them. */
static void take_inits(struct sandbox *sb)
{
    pid_t bw = pid_of_pidfd(sb->pidfd);
    if (bw <= 0)
        return;
    char path[96];
    snprintf(path, sizeof path, "/proc/%d/task/%d/children", (int)bw, (int)bw);
    FILE *f = fopen(path, "re");
    if (!f)
        return;
    long c;
    while (sb->ninit < JANITOR_INITS && fscanf(f, "%ld", &c) == 1) {
        int fd = pidfd_open((pid_t)c, 0);
        if (fd < 0)
            continue;
        /* a reused pid would be someone else's child */
        if (parent_of((pid_t)c) == bw)
            sb->init[sb->ninit++] = fd;
        else
            close(fd);
    }
    fclose(f);
    /* Only while bwrap still lives is its pid (and so that list) its own. */
    if (wait_exit(sb->pidfd, 0) == 0) {
        for (size_t i = 0; i < sb->ninit; i++)
            close(sb->init[i]);
        sb->ninit = 0;
    }
}

static void kill_sandbox(struct sandbox *sb)
{
    if (sb->killed)
        return;
    if (!sb->ninit)
        take_inits(sb);
    pidfd_send_signal(sb->pidfd, SIGKILL, NULL, 0);
    for (size_t i = 0; i < sb->ninit; i++)
        pidfd_send_signal(sb->init[i], SIGKILL, NULL, 0);
    sb->killed = 1;
}

/* Ends the sandbox if it still runs; 0 once all of it is gone. */
static int end_sandbox(struct sandbox *sb, int bwrap_gone)
{
    if (!bwrap_gone) {
        kill_sandbox(sb);
        if (wait_exit(sb->pidfd, -1) < 0)
            return -1;
    }
    int r = 0;
    for (size_t i = 0; i < sb->ninit; i++)
        if (wait_exit(sb->init[i], 10000) < 0)
            r = -1;
    return r;
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
            cleanup(&j, 1, 0);
            return 2;
        }
        pidfd = pidfd_open(child, 0);
        if (pidfd < 0) {
            kill(child, SIGKILL);
            waitpid(child, NULL, 0);
            cleanup(&j, 1, 0);
            return 2;
        }
    }
    /* The host's fds for bwrap (control socket, args) must not be held here. */
    int keep[3] = {watch, sfd, pidfd};
    struct sandbox sb = {.pidfd = pidfd};
    if (close_fds_except(keep, 3) < 0) {
        fprintf(stderr, "ccsb-init janitor: close_range: %s\n", strerror(errno));
        kill_sandbox(&sb);
    }

    int status = 0, watch_open = 1, gone = 0;
    for (;;) {
        struct pollfd p[3] = {{.fd = watch_open ? watch : -1, .events = POLLIN},
                              {.fd = sfd, .events = POLLIN},
                              {.fd = pidfd, .events = POLLIN}};
        if (poll(p, 3, -1) < 0 && errno != EINTR)
            break; /* (then the sandbox is ended below before any cleanup) */
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
        /* PID 1 is watched from the start where possible: bwrap may die
         * first (with the host), and its list of children with it. */
        if (!sb.ninit && !sb.killed)
            take_inits(&sb);
        if (end)
            kill_sandbox(&sb);
        if (p[2].revents & POLLIN) {
            gone = 1; /* bwrap is gone (and its PID 1 with it, unless we killed bwrap) */
            break;
        }
    }
    gone = end_sandbox(&sb, gone) == 0;
    /* Records written just before the end are still in the pipe. */
    while (watch_open && read_records(&j, watch) == 0)
        ;
    if (child > 0)
        while (waitpid(child, &status, 0) < 0 && errno == EINTR)
            ;
    cleanup(&j, gone, sb.ninit ? 0 : 1000);
    if (child <= 0)
        return 0;
    if (WIFEXITED(status))
        return WEXITSTATUS(status);
    return 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
}
