/*
 * The macOS native backend: Seatbelt through sandbox-exec. Built only on
 * macOS (meson option `seatbelt`); NOT RUN on the Linux machines this
 * library is developed on (see docs/seatbelt.md, "What is tested where").
 *
 * Shape of a session:
 *  - launch (caller's thread): refuses what Seatbelt cannot do (remapped
 *    binds, memory/pid limits), creates the session tmp, rebuilds the
 *    policy with it, has macOS compile the session's profile once
 *    (`sandbox-exec -p <profile> /usr/bin/true`) so an unacceptable profile
 *    fails the launch instead of the first command, and starts the
 *    violation tap (`log stream`, waiting boundedly for it to be live).
 *  - attach (loop thread): the egress proxy pair on 127.0.0.1 (ephemeral
 *    ports, per-session credential) and the tap's pipe on the loop.
 *  - exec: `sandbox-exec -p <profile> -- argv...` forked from the host with
 *    the host-made stdio (or pty) as its fds 0-2, one process group (or
 *    session, with a pty) per exec. The profile is generated per exec with
 *    the exec id in its message tag, so every denial names its exec.
 *    Exits are watched with a kqueue EVFILT_PROC per exec, registered on
 *    the loop as a readable fd; no SIGCHLD handler is installed.
 *
 * Why not ccsb-init as on Linux: a Seatbelt sandbox is a property of the
 * process, not a namespace, so a PID root inside it adds nothing the host
 * cannot do (there is no pid namespace to reap in, no netns to open
 * listeners in), and the init protocol's transport (SOCK_SEQPACKET, memfd)
 * does not exist on macOS. Behaviour is kept the same: fd passing, process
 * groups, suspend/resume by signal, exits and violations as events.
 */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/event.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include <event2/event.h>
#include <jansson.h>

#include "backend/backend.h"
#include "backend/pgroups.h"
#include "backend/seatbelt_log.h"
#include "backend/seatbelt_profile.h"
#include "ccsandbox/ccsandbox.h"
#include "core/ctx.h"
#include "core/event.h"
#include "core/exec_req.h"
#include "core/session.h"
#include "egress/egress.h"
#include "policy/policy.h"
#include "spec/spec.h"
#include "util/err.h"
#include "util/strv.h"

extern char **environ;

#define SANDBOX_EXEC "/usr/bin/sandbox-exec"
#define TRUE_BIN "/usr/bin/true"
/* Bounded waits of the launch (the caller's thread may block, briefly). */
#define PROFILE_CHECK_MS 10000
#define TAP_READY_MS 3000
/* Denials repeated within this window are counted, not re-reported. */
#define TAP_DEDUP_MS 2000
/* The profile travels on sandbox-exec's command line (ARG_MAX is 1 MiB). */
#define PROFILE_MAX (512u * 1024u)

struct sb_session {
    struct egress_pair *egress;
    char *http_url, *socks_url;
    struct seatbelt_log *tap;
    pid_t tap_pid;
    int tap_fd;
    struct event *tap_ev;
    char tap_state[200];
    struct pgroups groups; /* every group started, so stop reaches leftovers too */
    size_t profile_bytes;
};

struct sb_exec {
    int kq;
    struct event *ev;
    pid_t pgid;
};

static struct sb_session *sb_of(struct ccsb_session *s)
{
    return s->bdata;
}

static uint64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static int set_cloexec_nonblock(int fd, int nonblock)
{
    int fl = fcntl(fd, F_GETFD);
    if (fl < 0 || fcntl(fd, F_SETFD, fl | FD_CLOEXEC) < 0)
        return -1;
    if (nonblock) {
        fl = fcntl(fd, F_GETFL);
        if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0)
            return -1;
    }
    return 0;
}

static int make_pipe(int p[2])
{
    if (pipe(p) < 0)
        return -1;
    if (set_cloexec_nonblock(p[0], 0) < 0 || set_cloexec_nonblock(p[1], 0) < 0) {
        close(p[0]);
        close(p[1]);
        return -1;
    }
    return 0;
}

/* After fork: every signal back to default and unblocked, fds above 2
 * closed (maxfd measured before fork: only async-signal-safe calls here). */
static void child_reset(int maxfd)
{
    for (int sig = 1; sig < NSIG; sig++) {
        if (sig == SIGKILL || sig == SIGSTOP)
            continue;
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = SIG_DFL;
        sigaction(sig, &sa, NULL);
    }
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    for (int fd = 3; fd < maxfd; fd++)
        close(fd);
}

static void child_fail(const char *what, int code)
{
    const char *e = strerror(errno);
    (void)!write(2, "ccsb: ", 6);
    (void)!write(2, what, strlen(what));
    (void)!write(2, ": ", 2);
    (void)!write(2, e, strlen(e));
    (void)!write(2, "\n", 1);
    _exit(code);
}

/* Waits for pid with a deadline, killing it when the time is up. Returns
 * the wait status, or -1 when it could not be reaped. */
static int wait_bounded(pid_t pid, int ms)
{
    uint64_t end = now_ms() + (uint64_t)ms;
    int st;
    for (;;) {
        pid_t r = waitpid(pid, &st, WNOHANG);
        if (r == pid)
            return st;
        if (r < 0 && errno != EINTR)
            return -1;
        if (now_ms() >= end) {
            kill(pid, SIGKILL);
            while ((r = waitpid(pid, &st, 0)) < 0 && errno == EINTR)
                ;
            return -1;
        }
        struct timespec ts = {0, 5 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
}

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    if (flag == FTW_DP || flag == FTW_D)
        rmdir(path);
    else
        unlink(path);
    return 0;
}

static void remove_tmp(struct ccsb_session *s)
{
    if (!s->tmpdir)
        return;
    nftw(s->tmpdir, rm_entry, 16, FTW_DEPTH | FTW_PHYS | FTW_MOUNT);
    free(s->tmpdir);
    s->tmpdir = NULL;
}

/* ---- profiles ---------------------------------------------------------- */

static int make_profile(struct ccsb_session *s, const char *exec_tag, char **out, char *err,
                        size_t errlen)
{
    struct sb_session *sb = sb_of(s);
    struct seatbelt_profile_opts o = {
        .preset = SEATBELT_PRESET_SESSION,
        .session_id = s->id,
        .exec_tag = exec_tag,
        .http_port = sb && sb->egress ? egress_pair_http_port(sb->egress) : 0,
        .socks_port = sb && sb->egress ? egress_pair_socks_port(sb->egress) : 0,
    };
    int r = seatbelt_profile_generate(s->policy, &o, out, err, errlen);
    if (r < 0)
        return r;
    if (strlen(*out) > PROFILE_MAX) {
        free(*out);
        *out = NULL;
        return errf(err, errlen, CCSB_E_POLICY,
                    "the Seatbelt profile for this spec is larger than %u bytes", PROFILE_MAX);
    }
    return 0;
}

/*
 * Has macOS compile the profile: sandbox-exec refuses a profile it cannot
 * parse or that names an operation this macOS does not know, before it
 * runs anything. Its stderr becomes the error.
 */
static int check_profile(const char *profile, char *err, size_t errlen)
{
    int p[2];
    if (make_pipe(p) < 0)
        return errf(err, errlen, CCSB_E_IO, "pipe: %s", strerror(errno));
    int maxfd = getdtablesize();
    pid_t pid = fork();
    if (pid < 0) {
        close(p[0]);
        close(p[1]);
        return errf(err, errlen, CCSB_E_IO, "fork: %s", strerror(errno));
    }
    if (pid == 0) {
        int nul = open("/dev/null", O_RDWR);
        if (nul < 0 || dup2(nul, 0) < 0 || dup2(nul, 1) < 0 || dup2(p[1], 2) < 0)
            _exit(126);
        child_reset(maxfd);
        char *const argv[] = {"sandbox-exec", "-p", (char *)profile, TRUE_BIN, NULL};
        char *const envp[] = {"PATH=/usr/bin:/bin", NULL};
        execve(SANDBOX_EXEC, argv, envp);
        child_fail("cannot execute " SANDBOX_EXEC, 127);
    }
    close(p[1]);
    char msg[400];
    size_t n = 0;
    uint64_t end = now_ms() + PROFILE_CHECK_MS;
    for (;;) {
        int left = (int)(end > now_ms() ? end - now_ms() : 0);
        struct pollfd pf = {.fd = p[0], .events = POLLIN};
        int pr = poll(&pf, 1, left);
        if (pr < 0 && errno == EINTR)
            continue;
        if (pr <= 0)
            break;
        ssize_t k = read(p[0], msg + n, sizeof(msg) - 1 - n);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0)
            break;
        n += (size_t)k;
        if (n == sizeof(msg) - 1)
            break;
    }
    msg[n] = '\0';
    while (n > 0 && (msg[n - 1] == '\n' || msg[n - 1] == ' '))
        msg[--n] = '\0';
    close(p[0]);
    int st = wait_bounded(pid, (int)(end > now_ms() ? end - now_ms() : 0));
    if (st < 0)
        return errf(err, errlen, CCSB_E_LAUNCH, "sandbox-exec did not finish checking the profile");
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
        return errf(err, errlen, CCSB_E_POLICY, "macOS refused the generated Seatbelt profile: %s",
                    n ? msg : "sandbox-exec failed without a message");
    return 0;
}

/* ---- the violation tap ----------------------------------------------- */

static void tap_stop(struct sb_session *sb)
{
    if (sb->tap_ev) {
        event_free(sb->tap_ev);
        sb->tap_ev = NULL;
    }
    if (sb->tap_fd >= 0) {
        close(sb->tap_fd);
        sb->tap_fd = -1;
    }
    if (sb->tap_pid > 0) {
        kill(sb->tap_pid, SIGTERM);
        if (wait_bounded(sb->tap_pid, 1000) < 0)
            kill(sb->tap_pid, SIGKILL);
        sb->tap_pid = 0;
    }
}

/*
 * Starts `log stream` for the session's tag and waits (bounded) for its
 * first line, which log prints once the stream is live: denials from
 * before that would be lost. A tap that cannot start is not fatal (it only
 * reports; Seatbelt enforces): tap_state says why.
 */
static void tap_start(struct ccsb_session *s)
{
    struct sb_session *sb = sb_of(s);
    char *tag = seatbelt_message_tag(s->id, NULL);
    sb->tap = tag ? seatbelt_log_new(tag, TAP_DEDUP_MS) : NULL;
    char **argv = tag ? seatbelt_log_argv(tag) : NULL;
    free(tag);
    int p[2] = {-1, -1};
    if (!sb->tap || !argv) {
        snprintf(sb->tap_state, sizeof(sb->tap_state), "unavailable: out of memory");
        goto out;
    }
    if (make_pipe(p) < 0) {
        snprintf(sb->tap_state, sizeof(sb->tap_state), "unavailable: pipe: %s", strerror(errno));
        goto out;
    }
    int maxfd = getdtablesize();
    pid_t pid = fork();
    if (pid < 0) {
        snprintf(sb->tap_state, sizeof(sb->tap_state), "unavailable: fork: %s", strerror(errno));
        close(p[0]);
        close(p[1]);
        goto out;
    }
    if (pid == 0) {
        /* stderr too: log's banner and its errors are lines the parser
         * skips, and an error still shows the stream ended. */
        int nul = open("/dev/null", O_RDWR);
        if (nul < 0 || dup2(nul, 0) < 0 || dup2(p[1], 1) < 0 || dup2(p[1], 2) < 0)
            _exit(126);
        child_reset(maxfd);
        char *const envp[] = {"PATH=/usr/bin:/bin", NULL};
        execve(argv[0], argv, envp);
        _exit(127);
    }
    close(p[1]);
    sb->tap_pid = pid;
    sb->tap_fd = p[0];
    if (set_cloexec_nonblock(sb->tap_fd, 1) < 0) {
        snprintf(sb->tap_state, sizeof(sb->tap_state), "unavailable: %s", strerror(errno));
        tap_stop(sb);
        goto out;
    }
    /* log prints a banner ("Filtering the log data ...") once the stream is
     * on; denials before that would be lost, so wait for it, boundedly. */
    struct pollfd pf = {.fd = p[0], .events = POLLIN};
    int pr;
    while ((pr = poll(&pf, 1, TAP_READY_MS)) < 0 && errno == EINTR)
        ;
    snprintf(sb->tap_state, sizeof(sb->tap_state), "%s",
             pr > 0 ? "running" : "running (start not confirmed)");
out:
    seatbelt_log_argv_free(argv);
}

static void on_tap_violation(const struct seatbelt_violation *v, void *ud)
{
    struct ccsb_session *s = ud;
    uint64_t exec_id = 0;
    if (v->exec_tag) {
        char *end;
        unsigned long long id = strtoull(v->exec_tag, &end, 10);
        if (*end == '\0' && session_find_exec(s, id))
            exec_id = id;
    }
    session_violation(s, exec_id, v->action, v->target, v->raw);
}

static void emit_error(struct ccsb_session *s, const char *what)
{
    struct ccsb_event *ev = evt_new(CCSB_EVENT_ERROR, s->id, 0);
    if (!ev)
        return;
    evt_set_message(ev, "%s", what);
    ctx_emit(s->ctx, ev);
}

static void on_tap_read(evutil_socket_t fd, short what, void *arg)
{
    struct ccsb_session *s = arg;
    struct sb_session *sb = sb_of(s);
    char buf[16384];
    for (int rounds = 0; rounds < 16; rounds++) {
        ssize_t n = read(fd, buf, sizeof buf);
        if (n > 0) {
            if (seatbelt_log_feed(sb->tap, buf, (size_t)n, now_ms(), on_tap_violation, s) < 0) {
                snprintf(sb->tap_state, sizeof(sb->tap_state), "stopped: out of memory");
                break;
            }
            continue;
        }
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && errno == EAGAIN)
            return;
        snprintf(sb->tap_state, sizeof(sb->tap_state), "stopped: `log stream` exited");
        break;
    }
    if (strncmp(sb->tap_state, "running", 7) == 0)
        return; /* 16 full reads: let the loop breathe, come back */
    tap_stop(sb);
    emit_error(s, "seatbelt: the violation tap stopped; denials are still enforced but no "
                  "longer reported");
}

/* ---- lifecycle ------------------------------------------------------- */

static void on_egress_violation(void *ud, const char *target, const char *reason)
{
    session_violation(ud, 0, "network-outbound", target, reason);
}

static void sb_free(struct sb_session *sb)
{
    if (!sb)
        return;
    seatbelt_log_free(sb->tap);
    free(sb->http_url);
    free(sb->socks_url);
    pgroups_clear(&sb->groups);
    free(sb);
}

static int seatbelt_launch(struct ccsb_session *s, char *err, size_t errlen)
{
    if (s->spec->memory_max)
        return errf(err, errlen, CCSB_E_UNSUPPORTED,
                    "limits.memoryBytes: macOS cannot enforce a memory limit on a Seatbelt "
                    "session; remove it or use another backend");
    if (s->spec->pids_max)
        return errf(err, errlen, CCSB_E_UNSUPPORTED,
                    "limits.pids: macOS cannot enforce a process limit per Seatbelt session; "
                    "remove it or use another backend");
    int r = seatbelt_policy_check(s->policy, err, errlen);
    if (r < 0)
        return r;
    if (access(SANDBOX_EXEC, X_OK) < 0)
        return errf(err, errlen, CCSB_E_UNAVAILABLE, "%s: %s", SANDBOX_EXEC, strerror(errno));

    const char *base = getenv("TMPDIR");
    if (!base || base[0] != '/')
        base = "/tmp";
    char *tmpl = NULL;
    if (asprintf(&tmpl, "%s/ccsb-XXXXXX", base) < 0)
        return errf(err, errlen, CCSB_E_NOMEM, "out of memory");
    if (!mkdtemp(tmpl)) {
        r = errf(err, errlen, CCSB_E_IO, "cannot create the session tmp under %s: %s", base,
                 strerror(errno));
        free(tmpl);
        return r;
    }
    s->tmpdir = tmpl;

    /* The session tmp is a host fact the policy needs (a writable root). */
    struct policy_host host = {.home = getenv("HOME"), .session_tmp = s->tmpdir};
    struct ccsb_policy *p = NULL;
    r = policy_build(s->spec, &host, &p, err, errlen);
    if (r < 0)
        goto fail;
    policy_free(s->policy);
    s->policy = p;

    struct sb_session *sb = calloc(1, sizeof *sb);
    if (!sb) {
        r = errf(err, errlen, CCSB_E_NOMEM, "out of memory");
        goto fail;
    }
    sb->tap_fd = -1;
    s->bdata = sb;

    char *profile = NULL;
    r = make_profile(s, NULL, &profile, err, errlen);
    if (r < 0)
        goto fail;
    sb->profile_bytes = strlen(profile);
    r = check_profile(profile, err, errlen);
    free(profile);
    if (r < 0)
        goto fail;

    tap_start(s);
    return 0;
fail:
    if (s->bdata) {
        tap_stop(s->bdata);
        sb_free(s->bdata);
        s->bdata = NULL;
    }
    remove_tmp(s);
    return r;
}

static int seatbelt_attach(struct ccsb_session *s, char *aerr, size_t aerrlen)
{
    struct sb_session *sb = sb_of(s);
    struct event_base *base = ctx_base(s->ctx);
    char err[512];
    int r = egress_pair_new(base, s->spec, -1, -1, on_egress_violation, s, &sb->egress, err,
                            sizeof err);
    if (r < 0)
        return errf(aerr, aerrlen, r, "cannot start the egress proxies: %s", err);
    sb->http_url = egress_pair_proxy_url(sb->egress, "http");
    sb->socks_url = egress_pair_proxy_url(sb->egress, "socks5h");
    if (!sb->http_url || !sb->socks_url)
        return errf(aerr, aerrlen, CCSB_E_NOMEM, "out of memory");
    if (sb->tap_fd >= 0) {
        sb->tap_ev = event_new(base, sb->tap_fd, EV_READ | EV_PERSIST, on_tap_read, s);
        if (!sb->tap_ev || event_add(sb->tap_ev, NULL) < 0)
            return errf(aerr, aerrlen, CCSB_E_NOMEM, "cannot watch the violation tap");
    } else {
        char msg[300];
        snprintf(msg, sizeof msg, "seatbelt: violation tap %s; denials are enforced but not "
                                  "reported", sb->tap_state);
        emit_error(s, msg);
    }
    return 0;
}

/* ---- exec ------------------------------------------------------------ */

static int forced_env(struct ccsb_session *s, struct strv *f)
{
    struct sb_session *sb = sb_of(s);
    int r = strv_pushf(f, "TMPDIR=%s/", s->tmpdir) | strv_push(f, "CCSB_SANDBOX=seatbelt");
    /* The host's loopback is not the sandbox's to reach directly (the
     * profile allows only the proxy ports): everything goes through the
     * proxies, which apply the allowlist. */
    struct backend_proxies px = {
        .http_url = sb->http_url, .socks_url = sb->socks_url, .no_proxy = ""};
    r |= backend_proxy_env(&px, f);
    return r ? -1 : 0;
}

/* The guest workdir is the host path (binds cannot be remapped here),
 * except the default "/tmp", which is the session tmp. */
static const char *exec_cwd(const struct ccsb_session *s, const struct ccsb_exec_req *req)
{
    const char *cwd = req->cwd ? req->cwd : spec_workdir(s->spec);
    return strcmp(cwd, "/tmp") == 0 ? s->tmpdir : cwd;
}

static void on_exit_ready(evutil_socket_t fd, short what, void *arg);

static void release_watch(struct exec *x)
{
    struct sb_exec *se = x->bdata;
    if (!se)
        return;
    if (se->ev)
        event_free(se->ev);
    if (se->kq >= 0)
        close(se->kq);
    se->ev = NULL;
    se->kq = -1;
}

/* Reaps the main process (it has exited, or was SIGKILLed by stop). */
static void reap(struct exec *x)
{
    int st = 0;
    pid_t r;
    while ((r = waitpid(x->pid, &st, 0)) < 0 && errno == EINTR)
        ;
    release_watch(x);
    struct sb_exec *se = x->bdata;
    if (se)
        pgroups_forget_if_empty(&sb_of(x->s)->groups, se->pgid);
    if (r < 0)
        exec_exited(x, 255, 0); /* the host's own SIGCHLD handling took it */
    else if (WIFEXITED(st))
        exec_exited(x, WEXITSTATUS(st), 0);
    else
        exec_exited(x, -1, WTERMSIG(st));
}

static void on_exit_ready(evutil_socket_t fd, short what, void *arg)
{
    struct exec *x = arg;
    struct kevent kev;
    struct timespec zero = {0, 0};
    (void)kevent(fd, NULL, 0, &kev, 1, &zero);
    reap(x);
}

/* A kqueue that becomes readable when pid exits, on the loop. */
static int watch_exit(struct ccsb_session *s, struct exec *x, struct sb_exec *se)
{
    se->kq = kqueue();
    if (se->kq < 0 || set_cloexec_nonblock(se->kq, 0) < 0)
        return -1;
    se->ev = event_new(ctx_base(s->ctx), se->kq, EV_READ, on_exit_ready, x);
    if (!se->ev)
        return -1;
    struct kevent kev;
    EV_SET(&kev, (uintptr_t)x->pid, EVFILT_PROC, EV_ADD | EV_ONESHOT, NOTE_EXIT, 0, NULL);
    if (kevent(se->kq, &kev, 1, NULL, 0, NULL) < 0) {
        if (errno != ESRCH)
            return -1;
        /* Already gone (a zombie): reap on the next loop turn. */
        event_active(se->ev, EV_READ, 0);
        return 0;
    }
    return event_add(se->ev, NULL);
}

static int seatbelt_exec(struct ccsb_session *s, struct exec *x, const struct ccsb_exec_req *req,
                         int cin, int cout, int cerr, char *err, size_t errlen)
{
    long slot = -1;
    struct sb_session *sb = sb_of(s);
    struct strv forced = STRV_INIT, env = STRV_INIT, argv = STRV_INIT;
    char *profile = NULL;
    char tag[32];
    snprintf(tag, sizeof tag, "%" PRIu64, x->id);
    struct sb_exec *se = calloc(1, sizeof *se);
    int r;
    if (!se) {
        r = errf(err, errlen, CCSB_E_NOMEM, "out of memory");
        goto out;
    }
    se->kq = -1;
    r = make_profile(s, tag, &profile, err, errlen);
    if (r < 0)
        goto out;
    if (forced_env(s, &forced) < 0 ||
        backend_build_env(s, req, environ, (const char *const *)forced.v, &env) < 0 ||
        strv_push(&argv, "sandbox-exec") < 0 || strv_push(&argv, "-p") < 0 ||
        strv_push(&argv, profile) < 0 || strv_push(&argv, "--") < 0 ||
        (slot = pgroups_reserve(&sb->groups)) < 0) {
        r = errf(err, errlen, CCSB_E_NOMEM, "out of memory");
        goto out;
    }
    for (size_t i = 0; i < req->argv.n; i++) {
        if (strv_push(&argv, req->argv.v[i]) < 0) {
            r = errf(err, errlen, CCSB_E_NOMEM, "out of memory");
            goto out;
        }
    }
    const char *cwd = exec_cwd(s, req);
    int maxfd = getdtablesize();

    pid_t pid = fork();
    if (pid < 0) {
        r = errf(err, errlen, CCSB_E_IO, "fork: %s", strerror(errno));
        goto out;
    }
    if (pid == 0) {
        if (req->pty) {
            if (setsid() < 0 || ioctl(cin, TIOCSCTTY, 0) < 0)
                child_fail("cannot attach the terminal", 126);
        } else if (setpgid(0, 0) < 0) {
            child_fail("setpgid", 126);
        }
        /* Lift the ends above 2 first: a host that closed its own stdio may
         * have been handed fds 0-2 for them. */
        int in = fcntl(cin, F_DUPFD, 3), o = fcntl(cout, F_DUPFD, 3), e = fcntl(cerr, F_DUPFD, 3);
        if (in < 0 || o < 0 || e < 0 || dup2(in, 0) < 0 || dup2(o, 1) < 0 || dup2(e, 2) < 0)
            _exit(126);
        child_reset(maxfd);
        if (chdir(cwd) < 0)
            child_fail("cannot enter the working directory", 126);
        execve(SANDBOX_EXEC, argv.v, env.v);
        child_fail("cannot execute " SANDBOX_EXEC, 127);
    }
    if (!req->pty)
        setpgid(pid, pid); /* both sides, so a kill right now already works */
    x->pid = pid;
    se->pgid = pid;
    pgroups_set(&sb->groups, slot, pid); /* the slot was reserved before fork */
    x->bdata = se;
    if (watch_exit(s, x, se) < 0) {
        r = errf(err, errlen, CCSB_E_IO, "cannot watch the command: %s", strerror(errno));
        kill(-pid, SIGKILL);
        kill(pid, SIGKILL);
        while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
            ;
        release_watch(x);
        x->bdata = NULL;
        goto out;
    }
    se = NULL;
    r = 0;
out:
    free(se);
    free(profile);
    strv_clear(&forced);
    strv_clear(&env);
    strv_clear(&argv);
    return r;
}

static int seatbelt_kill_exec(struct ccsb_session *s, struct exec *x, int sig)
{
    struct sb_exec *se = x->bdata;
    pid_t pg = se ? se->pgid : x->pid;
    if (kill(-pg, sig) < 0 && errno != ESRCH)
        return CCSB_E_IO;
    return 0;
}

static int seatbelt_resize(struct ccsb_session *s, struct exec *x, unsigned rows, unsigned cols)
{
    struct winsize ws = {.ws_row = (unsigned short)rows, .ws_col = (unsigned short)cols};
    return ioctl(x->out_fd, TIOCSWINSZ, &ws) < 0 ? CCSB_E_IO : 0;
}

static int signal_all(struct ccsb_session *s, int sig)
{
    struct sb_session *sb = sb_of(s);
    if (sb)
        pgroups_signal(&sb->groups, sig);
    return 0;
}

static int seatbelt_suspend(struct ccsb_session *s)
{
    return signal_all(s, SIGSTOP);
}

static int seatbelt_resume(struct ccsb_session *s)
{
    return signal_all(s, SIGCONT);
}

static void seatbelt_stop(struct ccsb_session *s)
{
    struct sb_session *sb = sb_of(s);
    signal_all(s, SIGKILL);
    for (struct exec *x = s->execs, *next; x; x = next) {
        next = x->next;
        struct sb_exec *se = x->bdata;
        if (x->running && se && se->ev)
            reap(x);
    }
    if (sb) {
        tap_stop(sb);
        egress_pair_free(sb->egress);
        sb->egress = NULL;
    }
    remove_tmp(s);
}

static void seatbelt_destroy(struct ccsb_session *s)
{
    if (s->bdata) {
        tap_stop(s->bdata);
        egress_pair_free(sb_of(s)->egress);
        sb_free(s->bdata);
        s->bdata = NULL;
    }
    remove_tmp(s);
}

static void seatbelt_details(struct ccsb_session *s, json_t *o)
{
    struct sb_session *sb = sb_of(s);
    json_object_set_new(o, "isolation",
                        json_string("seatbelt: a sandbox-exec profile per exec, no kernel boundary"));
    if (!sb)
        return;
    json_object_set_new(o, "profileBytes", json_integer((json_int_t)sb->profile_bytes));
    json_object_set_new(o, "violationTap", json_string(sb->tap_state));
    if (sb->tap)
        json_object_set_new(o, "violationRepeats",
                            json_integer((json_int_t)seatbelt_log_repeats(sb->tap)));
    if (sb->egress) {
        json_t *eg = json_object();
        if (eg) {
            egress_pair_stats(sb->egress, eg);
            json_object_set_new(o, "egress", eg);
        }
    }
}

const struct backend_ops backend_seatbelt_ops = {
    .name = "seatbelt",
    .launch = seatbelt_launch,
    .attach = seatbelt_attach,
    .exec = seatbelt_exec,
    .kill_exec = seatbelt_kill_exec,
    .resize_pty = seatbelt_resize,
    .suspend = seatbelt_suspend,
    .resume = seatbelt_resume,
    .stop = seatbelt_stop,
    .destroy = seatbelt_destroy,
    .details = seatbelt_details,
};
