/*
 * Benchmarks of the bubblewrap backend, each printed as a ratio against a
 * baseline measured in the same run (issue 3):
 *
 *  1. launch-to-ready of a session, and launch + `/bin/true` + stop end to
 *     end, against a bare `bwrap ... /bin/true` that makes the same sandbox
 *     by itself ("bwrap-alone": our bwrap arguments plus, as bwrap options,
 *     what ccsb-init mounts inside) and against a minimal one (target:
 *     <= 1.5x);
 *  2. exec round-trip of /bin/true in a warm session against a fresh bare
 *     bwrap per command (target: >= 5x faster);
 *  3. host RSS per warm idle session over 50 sessions (target: < 1 MiB),
 *     plus, for information, the RSS of the sandbox's own processes;
 *  4. `ccsb run -- /bin/true` end to end, the command-line tool as a user
 *     runs it (process start, launch, exec, stop, exit), against a bare
 *     `bwrap ... /bin/true` process started in the same loop, both the
 *     minimal one and the bwrap-alone one (target:
 *     <= 1.5x). Line 1 also times the library's one-shot path
 *     (ccsb_launch_exec + end_session), which the tool uses.
 *
 * Usage: bench-bwrap [rounds]   (default 30)
 * The CLI is $CCSB_CLI, else tools/ccsb/ccsb next to this build's tests.
 * Exit status 0 when every target is met, 1 otherwise.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <ccsandbox/ccsandbox.h>

extern char **environ;

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static void die(const char *what, const char *detail)
{
    fprintf(stderr, "bench-bwrap: %s: %s\n", what, detail);
    exit(2);
}

/* ---- the bare baselines --------------------------------------------------------- */

/* The floor everyone quotes: bwrap with the namespaces and nothing else. */
static char *minimal_argv[] = {"bwrap", "--unshare-all", "--ro-bind", "/", "/", "--dev", "/dev",
                               "--proc", "/proc", "/bin/true", NULL};

/* The same sandbox from bwrap alone: our session's bwrap arguments (from
 * ccsb_explain) with what ccsb-init mounts inside (/dev, /proc/sys
 * read-only, pins, masks, the root read-only) turned into the bwrap
 * options that make the same, and /bin/true in place of ccsb-init: what
 * a user wrapping bwrap by hand would run for this policy. */
static char *bare_argv[512];
static int bare_n;
static char *ph_paths[64];
static int ph_is_dir[64];
static int n_ph;

/* Splits one line of shell words as bwrap_argv_to_shell writes them. */
static void split_shell(const char *line)
{
    const char *p = line;
    while (*p && bare_n < 510) {
        while (*p == ' ')
            p++;
        if (!*p || *p == '\n')
            break;
        char *w = malloc(strlen(p) + 1), *o = w;
        while (*p && *p != ' ' && *p != '\n') {
            if (*p == '\'') {
                p++;
                while (*p && *p != '\'')
                    *o++ = *p++;
                if (*p)
                    p++;
            } else if (*p == '\\' && p[1]) {
                *o++ = p[1];
                p += 2;
            } else {
                *o++ = *p++;
            }
        }
        *o = 0;
        bare_argv[bare_n++] = w;
    }
    bare_argv[bare_n] = NULL;
}

static void bare_build(const ccsb_spec *sp)
{
    char *text = NULL, err[256];
    if (ccsb_explain(sp, "linux", &text, err, sizeof err) != 0)
        die("ccsb_explain", err);
    const char *a = strstr(text, "bubblewrap arguments");
    const char *line = a ? strchr(a, '\n') : NULL;
    if (!line)
        die("ccsb_explain", "no bubblewrap argument line");
    split_shell(line + 1);
    /* our words: bwrap's, then "-- ccsb-init init" and ccsb-init's */
    char *ours[512];
    int n = bare_n, cmd = -1;
    memcpy(ours, bare_argv, sizeof(char *) * (size_t)n);
    for (int i = 0; i < n && cmd < 0; i++)
        if (strcmp(ours[i], "--") == 0)
            cmd = i;
    if (cmd < 0 || cmd + 2 >= n)
        die("ccsb_explain", "no command in the bubblewrap arguments");
    bare_n = 0;
    for (int i = 0; i < cmd; i++) {
        /* ccsb-init's /dev source: bwrap makes /dev itself */
        if (i + 2 < cmd && strcmp(ours[i], "--dir") == 0 && strcmp(ours[i + 1], "/dev") == 0) {
            bare_argv[bare_n++] = strdup("--dev");
            bare_argv[bare_n++] = strdup("/dev");
            i++;
            continue;
        }
        if (i + 2 < cmd && strcmp(ours[i], "--dev-bind") == 0 &&
            strcmp(ours[i + 1], "/dev") == 0) {
            i += 2;
            continue;
        }
        bare_argv[bare_n++] = strdup(ours[i]);
    }
    int ro_root = 0;
    for (int i = cmd + 3; i + 1 < n && bare_n < 500; i++) {
        const char *op = ours[i], *path = ours[i + 1];
        const char *w[5] = {NULL};
        if (strcmp(op, "--ro") == 0)
            w[0] = "--ro-bind", w[1] = path, w[2] = path;
        else if (strcmp(op, "--pin") == 0)
            w[0] = "--bind", w[1] = path, w[2] = path;
        else if (strcmp(op, "--mask-file") == 0)
            w[0] = "--ro-bind", w[1] = "/dev/null", w[2] = path;
        else if (strcmp(op, "--mask-dir") == 0)
            w[0] = "--perms", w[1] = "0000", w[2] = "--tmpfs", w[3] = path;
        else if (strcmp(op, "--remount-ro") == 0)
            ro_root = 1;
        else
            continue; /* a flag of ccsb-init's own */
        for (int k = 0; w[k]; k++)
            bare_argv[bare_n++] = strdup(w[k]);
        if (strcmp(op, "--mask-dir") == 0) {
            bare_argv[bare_n++] = strdup("--remount-ro");
            bare_argv[bare_n++] = strdup(path);
        }
        i++;
    }
    if (ro_root) {
        bare_argv[bare_n++] = strdup("--remount-ro");
        bare_argv[bare_n++] = strdup("/");
    }
    bare_argv[bare_n++] = strdup("/bin/true");
    bare_argv[bare_n] = NULL;
    for (int i = 0; i < n; i++)
        free(ours[i]);
    /* placeholders the plan needs: the bare run needs them to exist */
    const char *ph = strstr(text, "placeholders created");
    const char *end = a;
    if (ph) {
        const char *q = strchr(ph, '\n');
        while (q && q < end && n_ph < 64) {
            q++;
            int dir = strncmp(q, "  dir  ", 7) == 0, file = strncmp(q, "  file ", 7) == 0;
            if (!dir && !file)
                break;
            const char *e = strchr(q, '\n');
            ph_paths[n_ph] = strndup(q + 7, (size_t)(e - q - 7));
            ph_is_dir[n_ph++] = dir;
            q = e;
        }
    }
    ccsb_free(text);
}

/* Made in the plan's order (parents first), removed in reverse. */
static void ph_make(int make)
{
    for (int k = 0; k < n_ph; k++) {
        int i = make ? k : n_ph - 1 - k;
        if (make && ph_is_dir[i])
            mkdir(ph_paths[i], 0755);
        else if (make)
            close(open(ph_paths[i], O_WRONLY | O_CREAT | O_CLOEXEC, 0644));
        else if (ph_is_dir[i])
            rmdir(ph_paths[i]);
        else
            unlink(ph_paths[i]);
    }
}

static const char *bwrap_path(void)
{
    static const char *c[] = {"/usr/bin/bwrap", "/usr/local/bin/bwrap", "/bin/bwrap", NULL};
    for (int i = 0; c[i]; i++)
        if (access(c[i], X_OK) == 0)
            return c[i];
    die("bwrap", "not found");
    return NULL;
}

/*
 * Namespaces are torn down asynchronously by the kernel (a network
 * namespace's cleanup runs in a worker and holds locks the next creation
 * needs), so every measured start first lets the previous one settle:
 * this measures latency, not a throughput storm, for both sides alike.
 */
static void settle(void)
{
    struct timespec ts = {0, 30 * 1000000};
    nanosleep(&ts, NULL);
}

/* Runs path argv (stdout on /dev/null) to its exit; the wall time. */
static double process_run(const char *path, char **argv, const char *what)
{
    settle();
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
    double t0 = now();
    pid_t pid;
    int e = posix_spawn(&pid, path, &fa, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    if (e)
        die(what, strerror(e));
    int st;
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
        ;
    double t = now() - t0;
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
        die(what, "failed");
    return t;
}

static double bare_run(char **argv)
{
    return process_run(bwrap_path(), argv, "bare bwrap");
}

/* The command-line tool: $CCSB_CLI, else where this build puts it. */
static char *cli_path(void)
{
    const char *env = getenv("CCSB_CLI");
    if (env && *env)
        return strdup(env);
    char self[4096];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n <= 0)
        die("readlink /proc/self/exe", strerror(errno));
    self[n] = 0;
    char *slash = strrchr(self, '/');
    *slash = 0; /* .../build/tests/bench */
    char *path = NULL;
    if (asprintf(&path, "%s/../../tools/ccsb/ccsb", self) < 0)
        die("asprintf", "out of memory");
    if (access(path, X_OK) != 0)
        die(path, "the ccsb tool is not there (set CCSB_CLI)");
    return path;
}

/* ---- the library ------------------------------------------------------------------- */

static ccsb_ctx *ctx;
static ccsb_spec *spec;
static ccsb_exec_req *true_req;
static ccsb_exec_req *oneshot_req; /* /bin/true, end_session */

static ccsb_session *launch(void)
{
    ccsb_session *s = NULL;
    if (ccsb_launch(ctx, spec, &s) != 0)
        die("ccsb_launch", ccsb_ctx_errmsg(ctx));
    return s;
}

/* Runs /bin/true and waits for its exit event. */
static void run_true(ccsb_session *s)
{
    uint64_t id;
    if (ccsb_exec(s, true_req, &id) != 0)
        die("ccsb_exec", ccsb_ctx_errmsg(ctx));
    for (;;) {
        ccsb_event *ev;
        int r = ccsb_ctx_wait_event(ctx, 10000, &ev);
        if (r != 0)
            die("wait", ccsb_strerror(r));
        int done = ccsb_event_type(ev) == CCSB_EVENT_EXIT && ccsb_event_exec_id(ev) == id;
        int code = ccsb_event_exit_code(ev);
        ccsb_event_free(ev);
        if (done) {
            if (code != 0)
                die("/bin/true", "non-zero exit");
            return;
        }
    }
}

/* One-shot: ccsb_launch_exec of /bin/true with end_session, until the
 * session reads destroyed (the sandbox ended itself). */
static void run_oneshot(void)
{
    ccsb_session *s = NULL;
    uint64_t id = 0;
    if (ccsb_launch_exec(ctx, spec, oneshot_req, &s, &id) != 0)
        die("ccsb_launch_exec", ccsb_ctx_errmsg(ctx));
    int exited = 0;
    for (;;) {
        ccsb_event *ev;
        int r = ccsb_ctx_wait_event(ctx, 10000, &ev);
        if (r != 0)
            die("wait", ccsb_strerror(r));
        int t = ccsb_event_type(ev);
        if (t == CCSB_EVENT_EXIT && ccsb_event_exec_id(ev) == id) {
            if (ccsb_event_exit_code(ev) != 0)
                die("/bin/true", "non-zero exit");
            exited = 1;
        }
        int gone = t == CCSB_EVENT_STATE && ccsb_event_state(ev) == CCSB_STATE_DESTROYED;
        ccsb_event_free(ev);
        if (gone) {
            if (!exited)
                die("one-shot", "destroyed before the exit event");
            break;
        }
    }
    ccsb_session_destroy(s);
}

static void drain(void)
{
    ccsb_event *ev;
    while (ccsb_ctx_next_event(ctx, &ev) == 0)
        ccsb_event_free(ev);
}

static long rss_kib(pid_t pid)
{
    char path[64], line[256];
    snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
    FILE *f = fopen(path, "re");
    if (!f)
        return -1;
    long v = -1;
    while (fgets(line, sizeof line, f))
        if (sscanf(line, "VmRSS: %ld", &v) == 1)
            break;
    fclose(f);
    return v;
}

/* RSS of a process and all its descendants (the sandbox side of a session). */
static long tree_rss_kib(pid_t root)
{
    long total = rss_kib(root);
    if (total < 0)
        return 0;
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/task/%d/children", (int)root, (int)root);
    FILE *f = fopen(path, "re");
    if (!f)
        return total;
    int child;
    while (fscanf(f, "%d", &child) == 1)
        total += tree_rss_kib(child);
    fclose(f);
    return total;
}

static pid_t sandbox_pid(ccsb_session *s)
{
    char *d = NULL;
    pid_t pid = 0;
    if (ccsb_session_details_json(s, &d) == 0) {
        const char *p = strstr(d, "\"sandboxPid\":");
        if (p)
            pid = (pid_t)atoi(p + 13);
        ccsb_free(d);
    }
    return pid;
}

int main(int argc, char **argv)
{
    int rounds = argc > 1 ? atoi(argv[1]) : 30;
    if (rounds < 3)
        rounds = 3;
    /* The workspace's file system matters (placeholders are created and
     * removed in it per launch): $TMPDIR picks it, /tmp by default. */
    const char *tmp = getenv("TMPDIR");
    char ws[4096];
    snprintf(ws, sizeof ws, "%s/ccsb-bench-XXXXXX", tmp && tmp[0] == '/' ? tmp : "/tmp");
    if (!mkdtemp(ws))
        die("mkdtemp", strerror(errno));
    chmod(ws, 0755);

    char err[256];
    if (ccsb_ctx_new(&ctx, err, sizeof err) != 0)
        die("ccsb_ctx_new", err);
    ccsb_spec_new(&spec);
    ccsb_spec_set_backend(spec, CCSB_BACKEND_NATIVE);
    ccsb_spec_add_bind_mount(spec, ws, NULL, 0);
    ccsb_spec_set_guest_workdir(spec, ws);
    ccsb_exec_req_new(&true_req);
    const char *t[] = {"/bin/true"};
    ccsb_exec_req_set_argv(true_req, t, 1);
    ccsb_exec_req_new(&oneshot_req);
    ccsb_exec_req_set_argv(oneshot_req, t, 1);
    ccsb_exec_req_set_end_session(oneshot_req, 1);
    bare_build(spec);

    /* warm-up: page cache, the probe, the helper lookup */
    bare_run(minimal_argv);
    ph_make(1);
    bare_run(bare_argv);
    ph_make(0);
    ccsb_session_destroy(launch());
    drain();

    double *bare = calloc((size_t)rounds, sizeof(double));
    double *minimal = calloc((size_t)rounds, sizeof(double));
    double *ready = calloc((size_t)rounds, sizeof(double));
    double *e2e = calloc((size_t)rounds, sizeof(double));
    double *oneshot = calloc((size_t)rounds, sizeof(double));
    double *ready_pre = calloc((size_t)rounds, sizeof(double));
    for (int i = 0; i < rounds; i++) {
        minimal[i] = bare_run(minimal_argv);
        ph_make(1);
        bare[i] = bare_run(bare_argv);
        ph_make(0);
        settle();
        double t0 = now();
        ccsb_session *s = launch();
        ready[i] = now() - t0;
        ccsb_session_destroy(s);
        drain();
        settle();
        t0 = now();
        s = launch();
        run_true(s);
        ccsb_session_destroy(s);
        e2e[i] = now() - t0;
        drain();
        settle();
        t0 = now();
        run_oneshot();
        oneshot[i] = now() - t0;
        drain();
        /* A server's way: a standby bwrap started in idle time before the
         * request (ccsb_ctx_prestart), taken by the launch. */
        if (ccsb_ctx_prestart(ctx) != 0)
            die("ccsb_ctx_prestart", ccsb_ctx_errmsg(ctx));
        settle();
        t0 = now();
        s = launch();
        ready_pre[i] = now() - t0;
        ccsb_session_destroy(s);
        drain();
    }
    double mb = median(bare, rounds), mr = median(ready, rounds), me = median(e2e, rounds);
    double mm = median(minimal, rounds);
    int ok = 1;
    printf("bare bwrap /bin/true, namespaces only (--ro-bind / /): %7.2f ms\n", mm * 1e3);
    printf("bare bwrap /bin/true, the same sandbox from bwrap alone: %5.2f ms  (%d placeholders pre-made)\n",
           mb * 1e3, n_ph);
    printf("launch to ready:                                       %7.2f ms  ratio %.2fx bwrap-alone, %.2fx minimal  (target <= 1.5x)\n",
           mr * 1e3, mr / mb, mr / mm);
    printf("launch + /bin/true + stop, end to end:                 %7.2f ms  ratio %.2fx bwrap-alone, %.2fx minimal  (target <= 1.5x)\n",
           me * 1e3, me / mb, me / mm);
    double mp = median(ready_pre, rounds);
    printf("launch to ready, bwrap prestarted (ccsb_ctx_prestart): %7.2f ms  ratio %.2fx bwrap-alone, %.2fx minimal  (a server's way)\n",
           mp * 1e3, mp / mb, mp / mm);
    double mo = median(oneshot, rounds);
    printf("one-shot: launch_exec + end_session, until destroyed:  %7.2f ms  ratio %.2fx bwrap-alone, %.2fx minimal  (the same, as a one-shot host does it)\n",
           mo * 1e3, mo / mb, mo / mm);
    ok &= mr / mb <= 1.5 && me / mb <= 1.5;

    /* 2. warm exec round trip */
    int n_exec = rounds * 10;
    double *warm = calloc((size_t)n_exec, sizeof(double));
    ccsb_session *s = launch();
    run_true(s);
    for (int i = 0; i < n_exec; i++) {
        double t0 = now();
        run_true(s);
        warm[i] = now() - t0;
    }
    ccsb_session_destroy(s);
    drain();
    double mw = median(warm, n_exec);
    printf("warm exec /bin/true round trip:                        %7.3f ms  %.1fx faster than a fresh bwrap-alone run, %.1fx than minimal  (target >= 5x)\n",
           mw * 1e3, mb / mw, mm / mw);
    ok &= mb / mw >= 5;

    /* 3. host RSS per warm idle session, over 50 sessions */
    enum { NS = 50 };
    ccsb_session *ss[NS];
    long before = rss_kib(getpid());
    long sandbox_side = 0;
    for (int i = 0; i < NS; i++) {
        ss[i] = launch();
        run_true(ss[i]);
    }
    drain();
    long after = rss_kib(getpid());
    for (int i = 0; i < NS; i++)
        sandbox_side += tree_rss_kib(sandbox_pid(ss[i]));
    for (int i = 0; i < NS; i++)
        ccsb_session_destroy(ss[i]);
    drain();
    double per = (double)(after - before) / NS;
    printf("host RSS per warm idle session (50 sessions):          %7.1f KiB  (target < 1024 KiB)\n", per);
    printf("  (sandbox side, not host: bwrap + ccsb-init [+ janitor] RSS %.0f KiB per session)\n",
           (double)sandbox_side / NS);
    ok &= per < 1024;

    /* 4. `ccsb run -- /bin/true` as a user runs it, from the workspace
     * (its defaults: the current directory bound read-write, the default
     * deny-write globs), and a bare bwrap process in the same loop. */
    char *cli = cli_path();
    char *run_argv[] = {"ccsb", "run", "--", "/bin/true", NULL};
    char here[4096];
    if (!getcwd(here, sizeof here) || chdir(ws) != 0)
        die("chdir", strerror(errno));
    double *cli_t = calloc((size_t)rounds, sizeof(double));
    double *cli_bare = calloc((size_t)rounds, sizeof(double));
    double *cli_same = calloc((size_t)rounds, sizeof(double));
    process_run(cli, run_argv, "ccsb run"); /* warm-up */
    for (int i = 0; i < rounds; i++) {
        cli_bare[i] = bare_run(minimal_argv);
        ph_make(1);
        cli_same[i] = bare_run(bare_argv);
        ph_make(0);
        cli_t[i] = process_run(cli, run_argv, "ccsb run -- /bin/true");
    }
    double mc = median(cli_t, rounds), mcb = median(cli_bare, rounds);
    double mcs = median(cli_same, rounds);
    printf("ccsb run -- /bin/true, end to end (the CLI process):   %7.2f ms  ratio %.2fx minimal bare bwrap (%.2f ms), %.2fx bwrap-alone (%.2f ms), same loop  (target <= 1.5x)\n",
           mc * 1e3, mc / mcb, mcb * 1e3, mc / mcs, mcs * 1e3);
    ok &= mc / mcb <= 1.5 && mc / mcs <= 1.5;
    if (chdir(here) != 0)
        die("chdir", strerror(errno));
    free(cli);
    free(cli_t);
    free(cli_bare);
    free(cli_same);

    ccsb_exec_req_free(true_req);
    ccsb_exec_req_free(oneshot_req);
    ccsb_spec_free(spec);
    ccsb_ctx_free(ctx);
    rmdir(ws);
    free(bare);
    free(minimal);
    free(ready);
    free(e2e);
    free(oneshot);
    free(ready_pre);
    free(warm);
    printf("%s\n", ok ? "all targets met" : "SOME TARGETS MISSED");
    return ok ? 0 : 1;
}
