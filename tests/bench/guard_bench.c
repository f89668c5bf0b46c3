/*
 * guard_bench: what the create-time guard costs, guarded against unguarded
 * in the same run (ratios, not absolute targets).
 *   1. open(O_CREAT|O_EXCL) + close + unlink: microseconds per create
 *   2. open without O_CREAT + close: must stay in the kernel (target <= 1.05x)
 *   3. untar a 10,000-file tree, then git init/add/commit (target <= 1.5x)
 * Each workload runs in a child; "guarded" means the child loaded the real
 * filter and a supervisor in this process answers its listener on a
 * libevent base. Usage: guard_bench [--quick]
 */
#include <errno.h>
#include <event2/event.h>
#include <fcntl.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "guard/guard.h"

static const char *const globs[] = {".env", "*.key", "*.pem", NULL};
static char work[64];

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int send_fd(int sock, int fd)
{
    char b = 'L';
    struct iovec iov = {&b, 1};
    union {
        char buf[CMSG_SPACE(sizeof(int))];
        struct cmsghdr a;
    } u;
    memset(&u, 0, sizeof u);
    struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf,
                       .msg_controllen = sizeof u.buf};
    struct cmsghdr *c = CMSG_FIRSTHDR(&m);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int));
    memcpy(CMSG_DATA(c), &fd, sizeof fd);
    return sendmsg(sock, &m, 0) == 1 ? 0 : -1;
}

static int recv_fd(int sock)
{
    char b;
    struct iovec iov = {&b, 1};
    union {
        char buf[CMSG_SPACE(sizeof(int))];
        struct cmsghdr a;
    } u;
    struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf,
                       .msg_controllen = sizeof u.buf};
    if (recvmsg(sock, &m, MSG_CMSG_CLOEXEC) != 1)
        return -1;
    struct cmsghdr *c = CMSG_FIRSTHDR(&m);
    if (!c || c->cmsg_type != SCM_RIGHTS)
        return -1;
    int fd;
    memcpy(&fd, CMSG_DATA(c), sizeof fd);
    return fd;
}

/* ---- workloads (in the child; return seconds of the timed part) ---- */

static long n_create = 20000, n_open = 300000, n_files = 10000;

static double w_create(void)
{
    char name[64];
    double t = now_s();
    for (long i = 0; i < n_create; i++) {
        snprintf(name, sizeof name, "c%ld.txt", i & 63);
        int fd = open(name, O_CREAT | O_EXCL | O_WRONLY, 0644);
        if (fd < 0)
            return -1;
        close(fd);
        unlink(name);
    }
    return now_s() - t;
}

static double w_open(void)
{
    int fd = open("existing.txt", O_CREAT | O_WRONLY, 0644);
    if (fd < 0)
        return -1;
    close(fd);
    double t = now_s();
    for (long i = 0; i < n_open; i++) {
        fd = open("existing.txt", O_RDONLY | O_CLOEXEC);
        if (fd < 0)
            return -1;
        close(fd);
    }
    return now_s() - t;
}

static double w_tree(void)
{
    double t = now_s();
    int r = system("mkdir -p x && cd x && tar xf ../tree.tar && git init -q && git add -A && "
                   "git -c user.email=b@b -c user.name=b commit -qm tree");
    if (r != 0)
        return -1;
    double d = now_s() - t;
    if (system("rm -rf x") != 0)
        return -1;
    return d;
}

static const char *custom_cmd;

static double w_custom(void)
{
    double t = now_s();
    if (system(custom_cmd) != 0)
        return -1;
    return now_s() - t;
}

typedef double (*workload_fn)(void);

/* Runs fn in a child (guarded or not); returns its seconds, or < 0. */
static double run(workload_fn fn, int guarded, struct guard_stats *st)
{
    int sv[2], res[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0 || pipe2(res, O_CLOEXEC) < 0)
        return -1;
    pid_t pid = fork();
    if (pid == 0) {
        if (chdir(work) < 0)
            _exit(2);
        if (guarded) {
            struct guard_filter_cfg cfg = {.notify = 1};
            int lfd;
            char err[256];
            if (guard_filter_install(&cfg, &lfd, err, sizeof err) != 0 || send_fd(sv[1], lfd) < 0)
                _exit(2);
            close(lfd);
        }
        double d = fn();
        _exit(write(res[1], &d, sizeof d) == (ssize_t)sizeof d ? 0 : 3);
    }
    close(sv[1]);
    close(res[1]);
    struct event_base *base = event_base_new();
    struct guard_supervisor *g = NULL;
    char err[256];
    if (guarded) {
        int lfd = recv_fd(sv[0]);
        if (lfd < 0 ||
            guard_supervisor_new(base, globs, NULL, NULL, &g, err, sizeof err) != 0 ||
            guard_supervisor_add_listener(g, lfd, 1, err, sizeof err) != 0)
            return -1;
    }
    double d = -1;
    struct pollfd p = {res[0], POLLIN, 0};
    while (poll(&p, 1, 100) == 0)
        event_base_loop(base, EVLOOP_NONBLOCK);
    if (read(res[0], &d, sizeof d) != (ssize_t)sizeof d)
        d = -1;
    int status;
    waitpid(pid, &status, 0);
    if (g) {
        guard_supervisor_stats(g, st);
        guard_supervisor_free(g);
    }
    event_base_free(base);
    close(sv[0]);
    close(res[0]);
    return d;
}

static double best_of(workload_fn fn, int guarded, int reps, struct guard_stats *st)
{
    double best = -1;
    for (int i = 0; i < reps; i++) {
        double d = run(fn, guarded, st);
        if (d < 0)
            return -1;
        if (best < 0 || d < best)
            best = d;
    }
    return best;
}

static int make_tree(void)
{
    char cmd[512];
    snprintf(cmd, sizeof cmd,
             "cd %s && mkdir -p t && cd t && for d in $(seq 0 99); do mkdir d$d; "
             "for f in $(seq 0 %ld); do echo \"$d $f\" > d$d/f$f.txt; done; done && "
             "cd .. && tar cf tree.tar -C t . && rm -rf t",
             work, n_files / 100 - 1);
    return system(cmd);
}

int main(int argc, char **argv)
{
    int quick = argc > 1 && strcmp(argv[1], "--quick") == 0;
    if (argc > 2 && strcmp(argv[1], "--cmd") == 0) {
        /* Times one shell command (run in a scratch dir) guarded and not. */
        custom_cmd = argv[2];
        snprintf(work, sizeof work, "/tmp/ccsb-guard-bench-XXXXXX");
        if (!mkdtemp(work))
            return 1;
        struct guard_stats st = {0};
        double a = best_of(w_custom, 0, 1, &st), b = best_of(w_custom, 1, 1, &st);
        printf("%s: %.3f s unguarded, %.3f s guarded (%.2fx, %llu notifications)\n",
               custom_cmd, a, b, b / a, (unsigned long long)st.notifications);
        char cmd[128];
        snprintf(cmd, sizeof cmd, "rm -rf %s", work);
        return system(cmd) == 0 && a >= 0 && b >= 0 ? 0 : 1;
    }
    if (quick) {
        n_create = 2000;
        n_open = 30000;
        n_files = 1000;
    }
    char why[256];
    if (!guard_supported(why, sizeof why)) {
        printf("SKIP: %s\n", why);
        return 77;
    }
    snprintf(work, sizeof work, "/tmp/ccsb-guard-bench-XXXXXX");
    if (!mkdtemp(work))
        return 1;
    struct guard_stats st = {0};
    int reps = quick ? 1 : 3;

    double c0 = best_of(w_create, 0, reps, &st), c1 = best_of(w_create, 1, reps, &st);
    printf("O_CREAT open+close+unlink: %.2f us unguarded, %.2f us guarded per create "
           "(%.1fx; %llu notifications in the last run)\n",
           c0 * 1e6 / (double)n_create, c1 * 1e6 / (double)n_create, c1 / c0,
           (unsigned long long)st.notifications);

    double o0 = best_of(w_open, 0, reps, &st), o1 = best_of(w_open, 1, reps, &st);
    printf("open without O_CREAT: %.3f us unguarded, %.3f us guarded (%.3fx, target <= 1.05; "
           "%llu notifications)\n",
           o0 * 1e6 / (double)n_open, o1 * 1e6 / (double)n_open, o1 / o0,
           (unsigned long long)st.notifications);

    int rc = 0;
    if (make_tree() != 0) {
        printf("tree: cannot build the %ld-file tarball\n", n_files);
        rc = 1;
    } else {
        double t0 = best_of(w_tree, 0, reps, &st), t1 = best_of(w_tree, 1, reps, &st);
        printf("untar %ld files + git init/add/commit: %.3f s unguarded, %.3f s guarded "
               "(%.2fx, target <= 1.5; %llu notifications)\n",
               n_files, t0, t1, t1 / t0, (unsigned long long)st.notifications);
        if (t0 < 0 || t1 < 0)
            rc = 1;
    }
    if (c0 < 0 || c1 < 0 || o0 < 0 || o1 < 0)
        rc = 1;
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", work);
    if (system(cmd) != 0)
        rc = 1;
    return rc;
}
