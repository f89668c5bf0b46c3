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

#include "backend/bwrap_args.h"
#include "fdpass.h"
#include "guard/guard.h"
#include "policy/lists.h"

static const char *const globs[] = {".env", "*.key", "*.pem", NULL};
static char work[64];
/* As in a real session on a fresh workspace: every mandatory deny-write
 * path is missing and held by a guard rule anchored at the workspace. */
static struct guard_path_rule rules[128];
static size_t nrules;
static char rule_text[128][96];

static void build_rules(void)
{
    /* as a session holds them: each missing path, and git's lock file of
     * each one that is a file (bwrap_args.c guard_rule) */
    for (const struct policy_entry *e = policy_deny_write_root; e->path && nrules < 127; e++) {
        rules[nrules++] = (struct guard_path_rule){work, e->path, 0};
        const char *base = strrchr(e->path, '/') ? strrchr(e->path, '/') + 1 : e->path;
        if (bwrap_name_looks_like_dir(base))
            continue;
        snprintf(rule_text[nrules], sizeof rule_text[0], "%s.lock", e->path);
        rules[nrules] = (struct guard_path_rule){work, rule_text[nrules], 1};
        nrules++;
    }
    for (const struct policy_entry *e = policy_deny_write_gitdir; e->path && nrules < 127; e++) {
        if (strchr(e->path, '*'))
            continue;
        snprintf(rule_text[nrules], sizeof rule_text[0], ".git/%s", e->path);
        rules[nrules] = (struct guard_path_rule){work, rule_text[nrules], 0};
        nrules++;
        if (bwrap_name_looks_like_dir(e->path) || nrules >= 128)
            continue;
        snprintf(rule_text[nrules], sizeof rule_text[0], ".git/%s.lock", e->path);
        rules[nrules] = (struct guard_path_rule){work, rule_text[nrules], 1};
        nrules++;
    }
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* ---- workloads (in the child; return seconds of the timed part) ---- */

static long n_create = 20000, n_open = 300000, n_files = 10000;

/* Micro workloads time 5 slices and keep the best, scaled to the whole:
 * a slice that another process preempted says nothing about the guard. */
#define SLICES 5

static double w_create(void)
{
    char name[64];
    double best = -1;
    for (int s = 0; s < SLICES; s++) {
        double t = now_s();
        for (long i = 0; i < n_create / SLICES; i++) {
            snprintf(name, sizeof name, "c%ld.txt", i & 63);
            int fd = open(name, O_CREAT | O_EXCL | O_WRONLY, 0644);
            if (fd < 0)
                return -1;
            close(fd);
            unlink(name);
        }
        double d = now_s() - t;
        if (best < 0 || d < best)
            best = d;
    }
    return best * SLICES;
}

static double w_open(void)
{
    int fd = open("existing.txt", O_CREAT | O_WRONLY, 0644);
    if (fd < 0)
        return -1;
    close(fd);
    double best = -1;
    for (int s = 0; s < SLICES; s++) {
        double t = now_s();
        for (long i = 0; i < n_open / SLICES; i++) {
            fd = open("existing.txt", O_RDONLY | O_CLOEXEC);
            if (fd < 0)
                return -1;
            close(fd);
        }
        double d = now_s() - t;
        if (best < 0 || d < best)
            best = d;
    }
    return best * SLICES;
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
    if (system("rm -rf x") != 0) /* untimed: what an earlier run left */
        return -1;
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
            struct guard_filter_cfg cfg = {.notify = 1, .trap_mkdir = 1, .trap_writes = 1};
            int lfd;
            char err[256];
            if (guard_filter_install(&cfg, &lfd, err, sizeof err) != 0 || fdpass_send(sv[1], lfd) < 0)
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
        int lfd = fdpass_recv(sv[0], -1);
        if (lfd < 0 ||
            guard_supervisor_new_with_paths(base, globs, rules, nrules, NULL, NULL, &g, err,
                                            sizeof err) != 0 ||
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

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/*
 * Unguarded and guarded runs alternate (ABAB...) so that load from other
 * work on the machine hits both alike. Reports the best of each and the
 * median of the per-pair ratios.
 */
struct pair_result {
    double best_plain, best_guarded, median_ratio;
    uint64_t notifications, busy_ns;
};

static int compare(workload_fn fn, int reps, struct pair_result *out)
{
    double ratios[32];
    struct guard_stats st = {0};
    out->best_plain = out->best_guarded = -1;
    for (int i = 0; i < reps && i < 32; i++) {
        double a = run(fn, 0, &st), b = run(fn, 1, &st);
        if (a <= 0 || b <= 0)
            return -1;
        if (out->best_plain < 0 || a < out->best_plain)
            out->best_plain = a;
        if (out->best_guarded < 0 || b < out->best_guarded)
            out->best_guarded = b;
        ratios[i] = b / a;
    }
    qsort(ratios, (size_t)reps, sizeof ratios[0], cmp_double);
    out->median_ratio = ratios[reps / 2];
    out->notifications = st.notifications;
    out->busy_ns = st.busy_ns;
    return 0;
}

static int make_tree(void)
{
    char p[256];
    snprintf(p, sizeof p, "%s/t", work);
    if (mkdir(p, 0755) < 0)
        return -1;
    for (long d = 0; d < 100; d++) {
        snprintf(p, sizeof p, "%s/t/d%ld", work, d);
        if (mkdir(p, 0755) < 0)
            return -1;
        for (long f = 0; f < n_files / 100; f++) {
            snprintf(p, sizeof p, "%s/t/d%ld/f%ld.txt", work, d, f);
            FILE *fp = fopen(p, "w");
            if (!fp)
                return -1;
            fprintf(fp, "%ld %ld\n", d, f);
            if (fclose(fp) != 0)
                return -1;
        }
    }
    char cmd[512];
    snprintf(cmd, sizeof cmd, "cd %s && tar cf tree.tar -C t . && rm -rf t", work);
    return system(cmd);
}

int main(int argc, char **argv)
{
    int quick = argc > 1 && strcmp(argv[1], "--quick") == 0;
    build_rules();
    if (argc > 2 && strcmp(argv[1], "--cmd") == 0) {
        /* Times one shell command (run in a scratch dir) guarded and not. */
        custom_cmd = argv[2];
        snprintf(work, sizeof work, "/tmp/ccsb-guard-bench-XXXXXX");
        if (!mkdtemp(work))
            return 1;
        struct pair_result c;
        int r = compare(w_custom, 3, &c);
        if (r == 0)
            printf("%s: %.3f s unguarded, %.3f s guarded (best-of %.2fx, median %.2fx, "
                   "%llu notifications, %.1f us supervisor time each)\n",
                   custom_cmd, c.best_plain, c.best_guarded, c.best_guarded / c.best_plain,
                   c.median_ratio, (unsigned long long)c.notifications,
                   c.notifications ? (double)c.busy_ns / 1e3 / (double)c.notifications : 0.0);
        char cmd[128];
        snprintf(cmd, sizeof cmd, "rm -rf %s", work);
        return system(cmd) == 0 && r == 0 ? 0 : 1;
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
    int reps = quick ? 3 : 5;
    struct pair_result c, o, t;
    int rc = 0;
    if (compare(w_create, reps, &c) == 0)
        printf("O_CREAT open+close+unlink: %.1f us unguarded, %.1f us guarded per create "
               "(best of %d; +%.1f us, median ratio %.2fx; %llu notifications per run, "
               "%.1f us supervisor time each)\n",
               c.best_plain * 1e6 / (double)n_create, c.best_guarded * 1e6 / (double)n_create,
               reps, (c.best_guarded - c.best_plain) * 1e6 / (double)n_create, c.median_ratio,
               (unsigned long long)c.notifications,
               c.notifications ? (double)c.busy_ns / 1e3 / (double)c.notifications : 0.0);
    else
        rc = 1;
    if (compare(w_open, reps, &o) == 0)
        printf("open without O_CREAT: %.3f us unguarded, %.3f us guarded "
               "(best-of ratio %.3fx, median ratio %.3fx, target <= 1.05; %llu notifications)\n",
               o.best_plain * 1e6 / (double)n_open, o.best_guarded * 1e6 / (double)n_open,
               o.best_guarded / o.best_plain, o.median_ratio,
               (unsigned long long)o.notifications);
    else
        rc = 1;
    if (make_tree() != 0 || compare(w_tree, reps, &t) != 0) {
        printf("tree: the %ld-file workload failed\n", n_files);
        rc = 1;
    } else {
        printf("untar %ld files + git init/add/commit: %.3f s unguarded, %.3f s guarded "
               "(best-of ratio %.2fx, median ratio %.2fx, target <= 1.5; %llu notifications, "
               "%.1f us supervisor time each, the creation itself included)\n",
               n_files, t.best_plain, t.best_guarded, t.best_guarded / t.best_plain,
               t.median_ratio, (unsigned long long)t.notifications,
               t.notifications ? (double)t.busy_ns / 1e3 / (double)t.notifications : 0.0);
    }
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", work);
    if (system(cmd) != 0)
        rc = 1;
    return rc;
}
