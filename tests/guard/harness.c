/*
 * guard_harness [--bwrap] [--unpriv] [--only NAME]
 *   Runs every scenario of scenarios.c. --bwrap runs the child inside a real
 *   `bwrap --unshare-all` sandbox; --unpriv re-runs the whole harness as the
 *   user ccsbtest (when started as root). Exit 0 when all pass, 77 when
 *   --unpriv or --bwrap cannot run here.
 * guard_harness --naive
 *   Proves the attacks are real: the child gets the static filter only (no
 *   supervisor), and every create-time attack must then succeed. Exit 0
 *   when each of them did.
 * guard_harness child NAME FD [naive]
 *   (internal) installs the filter, sends the listener over FD, runs NAME.
 */
#include <dirent.h>
#include <errno.h>
#include <event2/event.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <ftw.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "guard/guard.h"
#include "fdpass.h"
#include "harness.h"

static const char *const globs[] = {".env", "*.key", "*.pem", "secrets/", NULL};

/* ------------------------------------------------------------------ */
/* Child side                                                           */
/* ------------------------------------------------------------------ */

static const struct scenario *find(const char *name)
{
    for (unsigned i = 0; i < guard_n_scenarios; i++)
        if (strcmp(guard_scenarios[i].name, name) == 0)
            return &guard_scenarios[i];
    return NULL;
}

static int child_main(const char *name, int sock, int naive)
{
    const struct scenario *sc = find(name);
    if (!sc)
        return 2;
    struct guard_filter_cfg cfg = {
        .allow_unix_sockets = 0, .notify = !naive, .trap_mkdir = 1, .trap_writes = 1};
    int lfd = -1;
    char err[256];
    if (guard_filter_install(&cfg, naive ? NULL : &lfd, err, sizeof err) != 0) {
        fprintf(stderr, "child: %s\n", err);
        return 2;
    }
    if (naive)
        lfd = open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (fdpass_send(sock, lfd) < 0)
        return 2;
    close(lfd); /* before any untrusted code runs */
    if (sc->kill_supervisor) {
        char go;
        if (read(sock, &go, 1) != 1)
            return 2;
    }
    close(sock);
    if (sc->fn)
        return sc->fn();
    execl("/bin/sh", "sh", "-c", sc->sh, (char *)NULL);
    return 2;
}

/* ------------------------------------------------------------------ */
/* Parent side                                                          */
/* ------------------------------------------------------------------ */

struct seen {
    char actions[64][32];
    char targets[64][512];
    int n;
    int total;
};

static void on_violation(void *ud, uint64_t tag, const char *action, const char *target,
                         const char *raw)
{
    struct seen *s = ud;
    (void)tag;
    if (getenv("GUARD_HARNESS_VERBOSE"))
        fprintf(stderr, "  violation: %s %s (%s)\n", action, target, raw);
    s->total++;
    if (s->n < 64) {
        snprintf(s->actions[s->n], sizeof s->actions[0], "%s", action);
        snprintf(s->targets[s->n], sizeof s->targets[0], "%s", target);
        s->n++;
    }
}

static int rm_entry(const char *p, const struct stat *st, int flag, struct FTW *f)
{
    (void)st;
    (void)f;
    if (flag == FTW_DP)
        return rmdir(p) < 0 ? -1 : 0;
    return unlink(p) < 0 ? -1 : 0;
}

static int rm_rf(const char *dir)
{
    return nftw(dir, rm_entry, 32, FTW_DEPTH | FTW_PHYS);
}

static const char *scan_root;
static int scan_bad;

static int scan_entry(const char *p, const struct stat *st, int flag, struct FTW *f)
{
    (void)st;
    (void)flag;
    const char *name = p + f->base;
    const char *rel = p + strlen(scan_root);
    if (strcmp(rel, "/old.pem") == 0 || strstr(rel, "/.git/"))
        return 0;
    for (int i = 0; globs[i]; i++) {
        char pat[64];
        snprintf(pat, sizeof pat, "%s", globs[i]);
        size_t l = strlen(pat);
        int dir_only = pat[l - 1] == '/';
        if (dir_only)
            pat[l - 1] = 0;
        if (dir_only && !S_ISDIR(st->st_mode))
            continue;
        if (!dir_only && S_ISDIR(st->st_mode))
            continue;
        if (fnmatch(pat, name, FNM_CASEFOLD) == 0) {
            fprintf(stderr, "  HOST: %s exists (matches %s)\n", rel, globs[i]);
            scan_bad = 1;
        }
    }
    return 0;
}

static int write_file(const char *dir, const char *name, const char *text)
{
    char p[4200];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    FILE *f = fopen(p, "w");
    if (!f)
        return -1;
    fputs(text, f);
    return fclose(f);
}

static int have(const char *prog)
{
    return access(prog, X_OK) == 0;
}

static int naive_mode;

static void exec_child(const char *self, const char *name, const char *work, int bwrap)
{
    const char *mode = naive_mode ? "naive" : NULL;
    char prot[4200];
    snprintf(prot, sizeof prot, "%s/prot.txt", work);
    if (chdir(work) < 0)
        _exit(2);
    /* In sanitizer builds the leak checker needs ptrace, which the filter
     * denies by design: it runs in the parent only. */
    setenv("ASAN_OPTIONS", "detect_leaks=0", 1);
    if (!bwrap)
        execl(self, self, "child", name, "3", mode, (char *)NULL);
    else
        execlp("bwrap", "bwrap", "--unshare-all", "--die-with-parent", "--new-session",
               "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--bind", work, work,
               "--ro-bind", prot, prot, "--chdir", work, "--", self, "child", name, "3", mode,
               (char *)NULL);
    _exit(2);
}

struct run {
    struct event_base *base;
    int done;
};

/* The child's stdout and stderr are a pipe of ours, relayed to our stderr:
 * reopening them through /dev/stdout must work for whatever user runs us,
 * as it would for a command whose output the host collects. */
static void on_output(evutil_socket_t fd, short what, void *arg)
{
    struct event **ev = arg;
    (void)what;
    char buf[4096];
    ssize_t k;
    while ((k = read(fd, buf, sizeof buf)) > 0)
        if (fwrite(buf, 1, (size_t)k, stderr) != (size_t)k)
            break;
    if (k == 0 && ev && *ev) /* EOF: stop watching */
        event_del(*ev);
}

static void on_exit_ev(evutil_socket_t fd, short what, void *arg)
{
    struct run *r = arg;
    (void)fd;
    (void)what;
    r->done = 1;
    event_base_loopbreak(r->base);
}

/* 1 once no thread of ours is named ccsb-guard (bounded wait). */
static int guard_thread_gone(int max_ms)
{
    for (int waited = 0; waited <= max_ms; waited += 10) {
        int found = 0;
        DIR *d = opendir("/proc/self/task");
        struct dirent *e;
        while (d && (e = readdir(d))) {
            char path[300], comm[32] = "";
            snprintf(path, sizeof path, "/proc/self/task/%s/comm", e->d_name);
            FILE *f = e->d_name[0] != '.' ? fopen(path, "re") : NULL;
            if (f) {
                if (fgets(comm, sizeof comm, f) && strncmp(comm, "ccsb-guard", 10) == 0)
                    found = 1;
                fclose(f);
            }
        }
        if (d)
            closedir(d);
        if (!found)
            return 1;
        usleep(10000);
    }
    return 0;
}

/* Tells g to finish; 1 once its thread ended by itself, else 0 (said). */
static int finish_ends_thread(struct guard_supervisor *g)
{
    guard_supervisor_finish(g);
    if (guard_thread_gone(3000))
        return 1;
    fprintf(stderr, "  the supervisor's thread did not end after finish\n");
    return 0;
}

/* Runs a supervisor in a separate process so that it can be SIGKILLed. */
/* Protected paths below <work>/guarded, held only by the guard (in a real
 * session these are the missing mandatory deny-write paths). */
static const char *const rule_rests[] = {".bashrc", ".git/hooks", ".git/config", ".vscode"};
#define N_RULES (sizeof rule_rests / sizeof rule_rests[0])
static char guarded_dir[4200];

static void fill_rules(struct guard_path_rule *r)
{
    for (size_t i = 0; i < N_RULES; i++)
        r[i] = (struct guard_path_rule){guarded_dir, rule_rests[i]};
}

static pid_t supervisor_process(int lfd, int ready_w)
{
    pid_t pid = fork();
    if (pid != 0)
        return pid;
    struct event_base *base = event_base_new();
    struct guard_supervisor *g;
    char err[256];
    struct seen s = {0};
    struct guard_path_rule rules[N_RULES];
    fill_rules(rules);
    if (!base || guard_supervisor_new_with_paths(base, globs, rules, N_RULES, on_violation, &s,
                                                 &g, err, sizeof err) != 0)
        _exit(2);
    if (guard_supervisor_add_listener(g, lfd, 1, err, sizeof err) != 0)
        _exit(2);
    if (write(ready_w, "R", 1) != 1)
        _exit(2);
    event_base_loop(base, EVLOOP_NO_EXIT_ON_EMPTY);
    _exit(0);
}

static int run_one(const char *self, const struct scenario *sc, int bwrap)
{
    if (((sc->needs & NEEDS_PYTHON) && !have("/usr/bin/python3")) ||
        ((sc->needs & NEEDS_GIT) && !have("/usr/bin/git")) ||
        ((sc->needs & NEEDS_CC) && !have("/usr/bin/cc")) || ((sc->needs & NEEDS_BWRAP) && !bwrap)) {
        printf("SKIP %s (tool missing)\n", sc->name);
        return 0;
    }
    char work[] = "/tmp/ccsb-guard-w-XXXXXX";
    if (!mkdtemp(work) || chmod(work, 0755) < 0)
        return 1;
    /* A directory outside the workdir that attacks aim at; scanned too. */
    char outside[64];
    snprintf(outside, sizeof outside, "%s.out", work);
    if (mkdir(outside, 0777) < 0 || chmod(outside, 0777) < 0)
        return 1;
    setenv("CCSB_GUARD_OUTSIDE", outside, 1);
    char sub[4200];
    snprintf(sub, sizeof sub, "%s/sub", work);
    if (write_file(work, "ok.txt", "ok\n") < 0 || write_file(work, "old.pem", "old\n") < 0 ||
        write_file(work, "prot.txt", "orig\n") < 0 ||
        mkdir(sub, 0755) < 0)
        return 1;
    snprintf(guarded_dir, sizeof guarded_dir, "%s/guarded", work);
    if (mkdir(guarded_dir, 0755) < 0)
        return 1;
    struct guard_path_rule rules[N_RULES];
    fill_rules(rules);
    int fail = 0;
    if (sc->setup) {
        char cmd[8192];
        snprintf(cmd, sizeof cmd, "cd '%s' && (%s) >/dev/null 2>&1", work, sc->setup);
        if (system(cmd) != 0) {
            fprintf(stderr, "  setup failed\n");
            rm_rf(work);
            return 1;
        }
    }

    struct seen seen = {0};
    struct event_base *base = event_base_new();
    struct guard_supervisor *g = NULL;
    char err[256];
    if (!base || (!sc->kill_supervisor &&
                  guard_supervisor_new_with_paths(base, globs, rules, N_RULES, on_violation,
                                                  &seen, &g, err, sizeof err))) {
        fprintf(stderr, "  supervisor: %s\n", err);
        if (base)
            event_base_free(base);
        rm_rf(work);
        rm_rf(outside);
        return 1;
    }
    int sv[2], out[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0 ||
        pipe2(out, O_CLOEXEC) < 0)
        return 1;
    pid_t pid = fork();
    if (pid == 0) {
        if (dup2(sv[1], 3) < 0 || dup2(out[1], 1) < 0 || dup2(out[1], 2) < 0)
            _exit(2);
        exec_child(self, sc->name, work, bwrap);
    }
    close(sv[1]);
    close(out[1]);
    fcntl(out[0], F_SETFL, O_NONBLOCK);
    struct event *oev = NULL;
    oev = event_new(base, out[0], EV_READ | EV_PERSIST, on_output, &oev);
    event_add(oev, NULL);
    int status = -1;
    int lfd = fdpass_recv(sv[0], 30000);
    if (lfd < 0) {
        fprintf(stderr, "  no listener from the child\n");
        fail = 1;
        kill(pid, SIGKILL);
    } else if (sc->kill_supervisor) {
        int rp[2];
        if (pipe(rp) < 0)
            return 1;
        pid_t sp = supervisor_process(lfd, rp[1]);
        close(lfd);
        char r;
        if (read(rp[0], &r, 1) != 1)
            fail = 1;
        close(rp[0]);
        close(rp[1]);
        kill(sp, SIGKILL);
        waitpid(sp, NULL, 0);
        if (write(sv[0], "G", 1) != 1)
            fail = 1;
    } else if (naive_mode) {
        close(lfd);
    } else {
        if (sc->finish == FINISH_BEFORE && !finish_ends_thread(g))
            fail = 1;
        int ar = guard_supervisor_add_listener(g, lfd, 1, err, sizeof err);
        if (sc->finish == FINISH_BEFORE && ar == 0) {
            fprintf(stderr, "  a listener was taken after the thread ended (nobody answers)\n");
            fail = 1;
            kill(pid, SIGKILL);
        } else if (sc->finish != FINISH_BEFORE && ar != 0) {
            fprintf(stderr, "  add_listener: %s\n", err);
            fail = 1;
            kill(pid, SIGKILL);
        }
        if (sc->finish == FINISH_EARLY)
            guard_supervisor_finish(g);
    }
    int pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
    struct run run = {base, 0};
    struct event *ev = event_new(base, pidfd, EV_READ, on_exit_ev, &run);
    struct timeval limit = {180, 0};
    event_add(ev, NULL);
    struct event *tmo = evtimer_new(base, on_exit_ev, &run);
    evtimer_add(tmo, &limit);
    event_base_dispatch(base);
    event_free(tmo);
    event_free(ev);
    close(pidfd);
    if (waitpid(pid, &status, WNOHANG) == 0) {
        fprintf(stderr, "  timed out\n");
        kill(pid, SIGKILL);
        waitpid(pid, &status, 0);
        fail = 1;
    }
    close(sv[0]);
    /* Deliver whatever is still queued. */
    event_base_loop(base, EVLOOP_NONBLOCK);
    event_base_loop(base, EVLOOP_NONBLOCK);
    on_output(out[0], EV_READ, NULL);
    event_free(oev);
    close(out[0]);
    struct guard_stats st = {0};
    if (g) {
        /* Every task of the filter is gone: told to finish, the thread
         * must end by itself (the teardown then waits for nothing). */
        if (!finish_ends_thread(g))
            fail = 1;
        guard_supervisor_stats(g, &st);
        guard_supervisor_free(g);
    }
    event_base_free(base);

    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        fprintf(stderr, "  child status %#x\n", status);
        fail = 1;
    }
    if (sc->expect_action) {
        int found = 0;
        for (int i = 0; i < seen.n; i++)
            if (strcmp(seen.actions[i], sc->expect_action) == 0 &&
                strstr(seen.targets[i], sc->expect_target))
                found = 1;
        if (!found) {
            fprintf(stderr, "  no %s violation naming %s (%d reported)\n", sc->expect_action,
                    sc->expect_target, seen.total);
            for (int i = 0; i < seen.n; i++)
                fprintf(stderr, "    got %s %s\n", seen.actions[i], seen.targets[i]);
            fail = 1;
        }
    }
    for (int i = 0; i < 4 && sc->must_exist[i]; i++) {
        char p[4200];
        struct stat s2;
        snprintf(p, sizeof p, "%s/%s", work, sc->must_exist[i]);
        if (lstat(p, &s2) < 0) {
            fprintf(stderr, "  HOST: %s missing\n", sc->must_exist[i]);
            fail = 1;
        }
    }
    scan_root = work;
    scan_bad = 0;
    nftw(work, scan_entry, 32, FTW_PHYS);
    scan_root = outside;
    nftw(outside, scan_entry, 32, FTW_PHYS);
    if (scan_bad)
        fail = 1;
    if (st.errors) {
        fprintf(stderr, "  supervisor reported %llu internal errors\n",
                (unsigned long long)st.errors);
        fail = 1;
    }
    if (rm_rf(work) < 0 || rm_rf(outside) < 0) {
        fprintf(stderr, "  could not remove %s: %s\n", work, strerror(errno));
        fail = 1;
    }
    printf("%s %s%s (%llu notifications, %d violations)\n", fail ? "FAIL" : "ok  ", sc->name,
           bwrap ? " [bwrap]" : "", (unsigned long long)st.notifications, seen.total);
    fflush(stdout);
    return fail;
}

static int count_fds(void)
{
    int n = 0;
    for (int fd = 0; fd < 4096; fd++)
        if (fcntl(fd, F_GETFD) >= 0)
            n++;
    return n;
}

static int run_unpriv(const char *self, int argc, char **argv)
{
    if (geteuid() != 0)
        return -1; /* already unprivileged: run in place */
    if (system("id ccsbtest >/dev/null 2>&1") != 0) {
        printf("SKIP: no user ccsbtest\n");
        return 77;
    }
    char dir[] = "/tmp/ccsb-guard-bin-XXXXXX";
    if (!mkdtemp(dir) || chmod(dir, 0755) < 0)
        return 1;
    char cmd[8192];
    snprintf(cmd, sizeof cmd, "cp '%s' '%s/guard_harness' && chmod 755 '%s/guard_harness'", self,
             dir, dir);
    if (system(cmd) != 0)
        return 1;
    char args[2048] = "";
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--unpriv") == 0)
            continue;
        strncat(args, " '", sizeof args - strlen(args) - 1);
        strncat(args, argv[i], sizeof args - strlen(args) - 1);
        strncat(args, "'", sizeof args - strlen(args) - 1);
    }
    snprintf(cmd, sizeof cmd, "cd /tmp && su ccsbtest -s /bin/sh -c '%s/guard_harness%s'", dir,
             args);
    int st = system(cmd);
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", dir);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 1;
}

int main(int argc, char **argv)
{
    if ((argc == 4 || argc == 5) && strcmp(argv[1], "child") == 0)
        return child_main(argv[2], atoi(argv[3]), argc == 5);
    signal(SIGPIPE, SIG_IGN);
    char self[4096];
    ssize_t k = readlink("/proc/self/exe", self, sizeof self - 1);
    if (k < 0)
        return 1;
    self[k] = 0;
    int bwrap = 0, unpriv = 0;
    const char *only = NULL;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--bwrap") == 0)
            bwrap = 1;
        else if (strcmp(argv[i], "--unpriv") == 0)
            unpriv = 1;
        else if (strcmp(argv[i], "--naive") == 0)
            naive_mode = 1;
        else if (strcmp(argv[i], "--only") == 0 && i + 1 < argc)
            only = argv[++i];
    }
    if (unpriv) {
        int r = run_unpriv(self, argc, argv);
        if (r >= 0)
            return r;
    }
    char why[512];
    /* GUARD_HARNESS_NO_PROBE: for running this parent under valgrind, which
     * cannot load seccomp filters itself (the children run natively). */
    if (!getenv("GUARD_HARNESS_NO_PROBE") && !guard_supported(why, sizeof why)) {
        printf("SKIP: the guard is not supported here: %s\n", why);
        return 77;
    }
    if (bwrap && system("bwrap --unshare-all --ro-bind / / true >/dev/null 2>&1") != 0) {
        printf("SKIP: bwrap cannot create a sandbox here\n");
        return 77;
    }
    printf("running as uid %d%s\n", (int)geteuid(), bwrap ? " inside bwrap" : "");
    int fds_before = count_fds();
    int failed = 0;
    for (unsigned i = 0; i < guard_n_scenarios; i++) {
        const struct scenario *sc = &guard_scenarios[i];
        if (only && strcmp(only, sc->name) != 0)
            continue;
        if (naive_mode) {
            /* Only the create-time attacks: each must break through. */
            if (!sc->expect_action || strncmp(sc->expect_action, "file-", 5) != 0)
                continue;
            int broke = run_one(self, sc, bwrap);
            printf("%s %s: the attack %s without the supervisor\n", broke ? "ok  " : "FAIL",
                   sc->name, broke ? "succeeds" : "fails even");
            failed += !broke;
            continue;
        }
        failed += run_one(self, sc, bwrap);
    }
    int fds_after = count_fds();
    if (fds_after != fds_before) {
        printf("FAIL: %d fds open before the scenarios, %d after (a leak)\n", fds_before,
               fds_after);
        failed++;
    }
    if (waitpid(-1, NULL, WNOHANG) != -1 || errno != ECHILD) {
        printf("FAIL: a child is left behind\n");
        failed++;
    }
    printf("%d failed\n", failed);
    return failed ? 1 : 0;
}
