/*
 * The `none` backend: no isolation, but the same session model, a
 * sanitised environment, a per-session TMPDIR, one process group per exec
 * and exits watched through pidfds (no SIGCHLD handler: the library never
 * touches the host's signal dispositions).
 *
 * Guest paths have no meaning without a mount namespace, so a workdir or
 * cwd inside a bind mount's guestPath is translated to its hostPath.
 *
 * The session's egress proxies listen on host 127.0.0.1 ephemeral ports and
 * require the per-session credential (embedded in the proxy variables), so
 * other local processes cannot use them. Nothing forces a command to use
 * them here: this backend isolates nothing; tools that honour the proxy
 * variables get the allowlist and the violation events.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include <event2/event.h>
#include <jansson.h>

#include "backend/backend.h"
#include "backend/pgroups.h"
#include "backend/none_tmp.h"
#include "ccsandbox/ccsandbox.h"
#include "core/ctx.h"
#include "core/event.h"
#include "core/exec_req.h"
#include "util/fd.h"
#include "core/session.h"
#include "egress/egress.h"
#include "spec/spec.h"
#include "util/pathsearch.h"
#include "util/strv.h"

#ifndef P_PIDFD
#define P_PIDFD 3
#endif

extern char **environ;

struct none_exec {
    int pidfd;    /* -1 when the kernel (or valgrind) has no pidfd_open */
    int watch_fd; /* the pidfd, or the read end of a waiter thread's pipe */
    struct event *ev;
    pid_t pgid;
};

/* Every process group the session started (backend/pgroups.h). The group
 * of an exec whose main process is reaped is checked right away; groups
 * that outlived their exec are checked whenever an exec starts. */
struct none_session {
    struct pgroups groups;
    struct egress_pair *egress;
    char *http_url, *socks_url; /* with the credential */
};

static int none_launch(struct ccsb_session *s, char *err, size_t errlen)
{
    const char *base = getenv("TMPDIR");
    if (!base || base[0] != '/')
        base = "/tmp";
    char *tmpl = NULL;
    if (asprintf(&tmpl, "%s/ccsb-%s-XXXXXX", base, s->id) < 0) {
        snprintf(err, errlen, "out of memory");
        return CCSB_E_NOMEM;
    }
    if (!mkdtemp(tmpl)) {
        snprintf(err, errlen, "cannot create the session tmp under %s: %s", base,
                 strerror(errno));
        free(tmpl);
        return CCSB_E_IO;
    }
    s->tmpdir = tmpl;
    s->bdata = calloc(1, sizeof(struct none_session));
    if (!s->bdata) {
        rmdir(tmpl);
        free(tmpl);
        s->tmpdir = NULL;
        snprintf(err, errlen, "out of memory");
        return CCSB_E_NOMEM;
    }
    return 0;
}

static void on_egress_violation(void *ud, const char *target, const char *reason)
{
    session_violation(ud, 0, "network-outbound", target, reason);
}

static int none_attach(struct ccsb_session *s, char *aerr, size_t aerrlen)
{
    struct none_session *ns = s->bdata;
    char err[512];
    /* A host that closed 0-2 must not find the proxies' sockets there. */
    int held[3];
    int n_held = fd_hold_stdio(held);
    int r = egress_pair_new(ctx_base(s->ctx), s->spec, -1, -1, on_egress_violation, s,
                            &ns->egress, err, sizeof err);
    fd_release_stdio(held, n_held);
    if (r < 0) {
        snprintf(aerr, aerrlen, "cannot start the egress proxies: %s", err);
        return r;
    }
    ns->http_url = egress_pair_proxy_url(ns->egress, "http");
    ns->socks_url = egress_pair_proxy_url(ns->egress, "socks5h");
    if (!ns->http_url || !ns->socks_url) {
        snprintf(aerr, aerrlen, "out of memory");
        return CCSB_E_NOMEM;
    }
    return 0;
}

/* TMPDIR, the marker and the proxy variables. */
static int forced_env(const struct ccsb_session *s, struct strv *f)
{
    const struct none_session *ns = s->bdata;
    int r = strv_pushf(f, "TMPDIR=%s", s->tmpdir) | strv_push(f, "CCSB_SANDBOX=none");
    if (ns->http_url && ns->socks_url) {
        /* Loopback stays direct (the command's own dev servers) unless the
         * allowlist names it; the host's NO_PROXY never leaks in. No JVM
         * properties: they cannot carry the credential. */
        struct backend_proxies px = {
            .http_url = ns->http_url,
            .socks_url = ns->socks_url,
            .no_proxy = backend_no_proxy(s->spec),
        };
        r |= backend_proxy_env(&px, f);
    }
    return r ? -1 : 0;
}

/* Translates a guest path through the bind mounts (longest guest prefix). */
static char *guest_to_host(const struct ccsb_session *s, const char *guest)
{
    const struct spec_bind *best = NULL;
    size_t best_len = 0;
    for (size_t i = 0; i < s->spec->n_binds; i++) {
        const struct spec_bind *b = &s->spec->binds[i];
        size_t n = strlen(b->guest_path);
        while (n > 1 && b->guest_path[n - 1] == '/')
            n--;
        if (strncmp(guest, b->guest_path, n) == 0 && (guest[n] == 0 || guest[n] == '/') &&
            n >= best_len) {
            best = b;
            best_len = n;
        }
    }
    char *out = NULL;
    if (best) {
        if (asprintf(&out, "%s%s", best->host_path, guest + best_len) < 0)
            out = NULL;
    } else if (strcmp(guest, "/tmp") == 0 && s->tmpdir) {
        out = strdup(s->tmpdir);
    } else {
        out = strdup(guest);
    }
    return out;
}

/* PATH lookup done before fork, with the command's own PATH. */
static char *resolve_cmd(const char *cmd, const struct strv *env)
{
    if (strchr(cmd, '/'))
        return strdup(cmd);
    const char *path = "/usr/local/bin:/usr/bin:/bin";
    for (size_t i = 0; i < env->n; i++)
        if (strncmp(env->v[i], "PATH=", 5) == 0)
            path = env->v[i] + 5;
    return path_search(path, cmd);
}

static void child_fail(const char *what, const char *arg, int code)
{
    /* Only async-signal-safe calls after fork. */
    const char *e = strerror(errno);
    (void)!write(2, "ccsb: ", 6);
    (void)!write(2, what, strlen(what));
    (void)!write(2, arg, strlen(arg));
    (void)!write(2, ": ", 2);
    (void)!write(2, e, strlen(e));
    (void)!write(2, "\n", 1);
    _exit(code);
}

static void on_exit_ready(evutil_socket_t fd, short what, void *arg);

/*
 * Without pidfd_open (Linux < 5.3, or under valgrind), a small thread waits
 * for the exit without reaping (WNOWAIT) and says so through a pipe whose
 * write end it owns; the loop then reaps as usual.
 */
struct waiter {
    pid_t pid;
    int wfd;
};

static void *waiter_main(void *arg)
{
    struct waiter *w = arg;
    siginfo_t si;
    while (waitid(P_PID, (id_t)w->pid, &si, WEXITED | WNOWAIT) < 0 && errno == EINTR)
        ;
    char c = 1;
    (void)!write(w->wfd, &c, 1);
    close(w->wfd);
    free(w);
    return NULL;
}

static int watch_by_thread(pid_t pid)
{
    int p[2];
    if (pipe2(p, O_CLOEXEC) < 0)
        return -1;
    p[0] = fd_above_stdio(p[0]);
    p[1] = fd_above_stdio(p[1]);
    if (p[0] < 0 || p[1] < 0) {
        if (p[0] >= 0)
            close(p[0]);
        if (p[1] >= 0)
            close(p[1]);
        return -1;
    }
    struct waiter *w = malloc(sizeof *w);
    pthread_t t;
    pthread_attr_t attr;
    if (!w || pthread_attr_init(&attr) != 0) {
        free(w);
        close(p[0]);
        close(p[1]);
        return -1;
    }
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    w->pid = pid;
    w->wfd = p[1];
    /* The thread starts with every signal blocked: host signals are not
     * ours to take, and its write may hit a closed pipe (SIGPIPE). */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    int e = pthread_create(&t, &attr, waiter_main, w);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    pthread_attr_destroy(&attr);
    if (e) {
        free(w);
        close(p[0]);
        close(p[1]);
        errno = e;
        return -1;
    }
    return p[0];
}

/*
 * The command ended and someone else in the host reaped it before we had a
 * pidfd (see status_lost). It still ran: a descriptor that is readable at
 * once sends it through the usual exit path, which reports what is known.
 */
static int already_gone(void)
{
    int p[2];
    if (pipe2(p, O_CLOEXEC) < 0)
        return -1;
    char c = 1;
    ssize_t n = write(p[1], &c, 1);
    close(p[1]);
    if (n != 1) {
        close(p[0]);
        return -1;
    }
    return fd_above_stdio(p[0]);
}

static int none_exec(struct ccsb_session *s, struct exec *x, const struct ccsb_exec_req *req,
                     int cin, int cout, int cerr, char *err, size_t errlen)
{
    struct strv env = STRV_INIT, forced = STRV_INIT;
    char *cwd = guest_to_host(s, req->cwd ? req->cwd : spec_workdir(s->spec));
    char *path = NULL;
    int r = CCSB_E_NOMEM;
    if (forced_env(s, &forced) < 0 || !cwd ||
        backend_build_env(s, req, environ, (const char *const *)forced.v, &env) < 0) {
        snprintf(err, errlen, "out of memory");
        goto out;
    }
    path = resolve_cmd(req->argv.v[0], &env);
    struct none_exec *ne = calloc(1, sizeof *ne);
    long slot = ne ? pgroups_reserve(&((struct none_session *)s->bdata)->groups) : -1;
    if (slot < 0) {
        free(ne);
        snprintf(err, errlen, "out of memory");
        goto out;
    }
    ne->pidfd = ne->watch_fd = -1;

    pid_t pid = fork();
    if (pid < 0) {
        snprintf(err, errlen, "fork: %s", strerror(errno));
        free(ne);
        r = CCSB_E_IO;
        goto out;
    }
    if (pid == 0) {
        sigset_t all;
        sigemptyset(&all);
        for (int sig = 1; sig < NSIG; sig++) {
            if (sig == SIGKILL || sig == SIGSTOP)
                continue;
            struct sigaction sa;
            memset(&sa, 0, sizeof sa);
            sa.sa_handler = SIG_DFL;
            sigaction(sig, &sa, NULL);
        }
        sigprocmask(SIG_SETMASK, &all, NULL);
        if (req->pty) {
            if (setsid() < 0 || ioctl(cin, TIOCSCTTY, 0) < 0)
                child_fail("cannot attach the terminal", "", 126);
        } else if (setpgid(0, 0) < 0) {
            child_fail("setpgid", "", 126);
        }
        /* Lift the ends above 2 first: a host that closed its own stdio
         * may have been handed fds 0-2 for them. */
        int in = fcntl(cin, F_DUPFD, 3), o = fcntl(cout, F_DUPFD, 3), e = fcntl(cerr, F_DUPFD, 3);
        if (in < 0 || o < 0 || e < 0 || dup2(in, 0) < 0 || dup2(o, 1) < 0 || dup2(e, 2) < 0)
            _exit(126);
        syscall(SYS_close_range, 3U, ~0U, 0U);
        if (chdir(cwd) < 0)
            child_fail("cannot enter ", cwd, 126);
        if (!path) {
            errno = ENOENT;
            child_fail("command not found: ", req->argv.v[0], 127);
        }
        execve(path, req->argv.v, env.v);
        child_fail("cannot execute ", path, errno == ENOENT ? 127 : 126);
    }
    /* Parent. Both sides set the group so a kill right now already works. */
    if (!req->pty)
        setpgid(pid, pid);
    x->pid = pid;
    ne->pgid = pid;
    pgroups_set(&((struct none_session *)s->bdata)->groups, slot, pid);
    ne->pidfd = fd_above_stdio((int)syscall(SYS_pidfd_open, pid, 0));
    ne->watch_fd = ne->pidfd;
    if (ne->pidfd < 0 && errno == ENOSYS)
        ne->watch_fd = watch_by_thread(pid);
    else if (ne->pidfd < 0 && errno == ESRCH)
        ne->watch_fd = already_gone();
    if (ne->watch_fd >= 0)
        ne->ev = event_new(ctx_base(s->ctx), ne->watch_fd, EV_READ, on_exit_ready, x);
    if (ne->watch_fd < 0 || !ne->ev || event_add(ne->ev, NULL) < 0) {
        snprintf(err, errlen, "cannot watch the command (pidfd_open: %s)", strerror(errno));
        kill(-pid, SIGKILL);
        kill(pid, SIGKILL);
        while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
            ;
        if (ne->ev)
            event_free(ne->ev);
        if (ne->watch_fd >= 0)
            close(ne->watch_fd);
        free(ne);
        r = CCSB_E_IO;
        goto out;
    }
    x->bdata = ne;
    r = 0;
out:
    strv_clear(&env);
    strv_clear(&forced);
    free(cwd);
    free(path);
    return r;
}

static void release_watch(struct exec *x)
{
    struct none_exec *ne = x->bdata;
    if (!ne)
        return;
    if (ne->ev)
        event_free(ne->ev);
    if (ne->watch_fd >= 0)
        close(ne->watch_fd);
    ne->ev = NULL;
    ne->pidfd = ne->watch_fd = -1;
}

/*
 * Someone else in the host process took the exit status: the kernel (the
 * host ignores SIGCHLD) or another waiter (a SIGCHLD handler or thread
 * calling wait/waitpid(-1), as the Dart VM does while it runs processes of
 * its own). The status is unknowable; say so before the exit event (255)
 * instead of passing 255 off as the command's own.
 */
static void status_lost(struct exec *x)
{
    struct sigaction cur;
    const char *why = "another waiter in the host process reaped it (a SIGCHLD handler or a "
                      "thread calling wait or waitpid(-1))";
    if (sigaction(SIGCHLD, NULL, &cur) == 0 &&
        (cur.sa_handler == SIG_IGN || (cur.sa_flags & SA_NOCLDWAIT)))
        why = "the host process ignores SIGCHLD (SIG_IGN or SA_NOCLDWAIT), so the kernel "
              "discarded it";
    struct ccsb_event *ev = evt_new(CCSB_EVENT_ERROR, x->s->id, x->id);
    if (ev && evt_set_message(ev, "exec %llu: exit status unknown, reported as 255: %s",
                              (unsigned long long)x->id, why) == 0)
        ctx_emit(x->s->ctx, ev);
    else
        ccsb_event_free(ev);
    exec_exited(x, 255, 0);
}

/* Reaps the main process (blocking only when told it exited or was killed). */
static void reap(struct exec *x)
{
    struct none_exec *ne = x->bdata;
    siginfo_t si;
    memset(&si, 0, sizeof si);
    int r;
    if (ne->pidfd >= 0)
        while ((r = waitid(P_PIDFD, (id_t)ne->pidfd, &si, WEXITED)) < 0 && errno == EINTR)
            ;
    else
        while ((r = waitid(P_PID, (id_t)x->pid, &si, WEXITED)) < 0 && errno == EINTR)
            ;
    release_watch(x);
    pgroups_forget_if_empty(&((struct none_session *)x->s->bdata)->groups, ne->pgid);
    if (r < 0)
        status_lost(x);
    else if (si.si_code == CLD_EXITED)
        exec_exited(x, si.si_status, 0);
    else
        exec_exited(x, -1, si.si_status);
}

static void on_exit_ready(evutil_socket_t fd, short what, void *arg)
{
    reap(arg);
}

/*
 * The main process is also signalled by pid: it may have left its group
 * (setpgid into another group of the session), or, with a pty, not have
 * reached its own setsid yet. Until we reap it its pid cannot be reused.
 */
static int signal_main(struct exec *x, int sig)
{
    if (x->running && x->pid > 0 && kill(x->pid, sig) < 0 && errno != ESRCH)
        return -1;
    return 0;
}

static int none_kill_exec(struct ccsb_session *s, struct exec *x, int sig)
{
    struct none_exec *ne = x->bdata;
    pid_t pg = ne ? ne->pgid : x->pid;
    if (kill(-pg, sig) < 0 && errno != ESRCH)
        return CCSB_E_IO;
    return signal_main(x, sig) < 0 ? CCSB_E_IO : 0;
}

static int none_resize(struct ccsb_session *s, struct exec *x, unsigned rows, unsigned cols)
{
    struct winsize ws = {.ws_row = (unsigned short)rows, .ws_col = (unsigned short)cols};
    return ioctl(x->out_fd, TIOCSWINSZ, &ws) < 0 ? CCSB_E_IO : 0;
}

static int signal_all(struct ccsb_session *s, int sig)
{
    struct none_session *ns = s->bdata;
    if (ns)
        pgroups_signal(&ns->groups, sig);
    for (struct exec *x = s->execs; x; x = x->next)
        signal_main(x, sig);
    return 0;
}

static int none_suspend(struct ccsb_session *s)
{
    return signal_all(s, SIGSTOP);
}

static int none_resume(struct ccsb_session *s)
{
    return signal_all(s, SIGCONT);
}

static void release_egress(struct none_session *ns)
{
    egress_pair_free(ns->egress); /* closes every connection and listener */
    ns->egress = NULL;
    free(ns->http_url);
    free(ns->socks_url);
    ns->http_url = ns->socks_url = NULL;
}

static void none_stop(struct ccsb_session *s)
{
    /* SIGKILL first (a stopped process dies too), then reap the mains. */
    signal_all(s, SIGKILL);
    /* reap() may release x: step with a saved next. */
    for (struct exec *x = s->execs, *next; x; x = next) {
        next = x->next;
        struct none_exec *ne = x->bdata;
        if (x->running && ne && ne->watch_fd >= 0)
            reap(x);
    }
    if (s->bdata)
        release_egress(s->bdata);
    if (s->tmpdir) {
        none_tmp_remove(s->tmpdir);
        free(s->tmpdir);
        s->tmpdir = NULL;
    }
}

static void none_destroy(struct ccsb_session *s)
{
    struct none_session *ns = s->bdata;
    if (ns) {
        release_egress(ns);
        pgroups_clear(&ns->groups);
        free(ns);
        s->bdata = NULL;
    }
    if (s->tmpdir) {
        none_tmp_remove(s->tmpdir);
        free(s->tmpdir);
        s->tmpdir = NULL;
    }
}

static void none_details(struct ccsb_session *s, json_t *o)
{
    json_object_set_new(o, "isolation", json_string("none: commands run directly on the host"));
    struct none_session *ns = s->bdata;
    json_t *eg = ns && ns->egress ? json_object() : NULL;
    if (eg) {
        egress_pair_stats(ns->egress, eg);
        json_object_set_new(eg, "enforced", json_string("only for tools that honour the proxy "
                                                        "variables (no isolation)"));
        json_object_set_new(o, "egress", eg);
    }
}

const struct backend_ops backend_none_ops = {
    .name = "none",
    .launch = none_launch,
    .attach = none_attach,
    .exec = none_exec,
    .kill_exec = none_kill_exec,
    .resize_pty = none_resize,
    .suspend = none_suspend,
    .resume = none_resume,
    .stop = none_stop,
    .destroy = none_destroy,
    .details = none_details,
};
