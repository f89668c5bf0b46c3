/*
 * The Linux native backend: one long-lived bubblewrap sandbox per session
 * whose PID 1 is ccsb-init (helper/). Launch builds the sandbox and waits
 * for READY (bwrap_launch.c); every exec is then one request on the control
 * socket (bwrap_ctl.c), so a command costs a fork inside the sandbox, and
 * its stdio are the host's own pipes passed in with SCM_RIGHTS (a pty is
 * made inside the sandbox's devpts and its master comes back the same way).
 *
 * Who does what:
 *   bwrap_args.c   policy -> bwrap options + ccsb-init's mounts (pure)
 *   bwrap_launch.c spawn bwrap (and the janitor), make placeholder mount
 *                  points while bwrap starts, wait for READY; teardown
 *   ccsb-init      PID 1: the policy's own mounts in its mount namespace,
 *                  drop every capability, open the proxy listeners in the
 *                  sandbox's netns, then fork/reap/signal on request
 *   janitor        host side: removes placeholders and cgroups once the
 *                  sandbox is gone, even after the host was SIGKILLed
 *   bwrap_cgroup.c cgroup v2/v1 limits and freezer when a limit asks for it
 *   bwrap_violation.c  denial messages on stderr -> violation events
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <termios.h>
#include <unistd.h>

#include <event2/event.h>
#include <jansson.h>

#include "backend/backend.h"
#include "backend/bwrap_guard.h"
#include "backend/bwrap_internal.h"
#include "ccsandbox/ccsandbox.h"
#include "core/ctx.h"
#include "core/exec_req.h"
#include "core/session.h"
#include "policy/policy.h"
#include "spec/spec.h"
#include "util/err.h"

#include "egress/egress.h"

extern char **environ;

#define EXEC_REPLY_TIMEOUT_MS 10000
#define SUSPEND_REPLY_TIMEOUT_MS 5000

static struct bwrap_session *bs_of(struct ccsb_session *s)
{
    return s->bdata;
}

static void bs_free_unstarted(struct bwrap_session *bs)
{
    bwrap_guard_release(bs);
    free(bs->helper);
    free(bs->bwrap);
    free(bs);
}

static struct bwrap_session *bs_new(void)
{
    struct bwrap_session *bs = calloc(1, sizeof *bs);
    if (!bs)
        return NULL;
    bs->pidfd = bs->jpidfd = bs->ctrl = bs->errfd = bs->watch_w = -1;
    bs->args_w = bs->err_w = -1;
    bs->listeners[0] = bs->listeners[1] = -1;
    bs->gate = -1;
    bs->next_req = 1ull << 63;
    return bs;
}

/* An untaken standby (ccsb_ctx_free, after the loop thread ended: its
 * bwrap, if it started, got --die-with-parent's SIGKILL; this reaps it). */
static void standby_free(void *obj)
{
    struct bwrap_session *bs = obj;
    if (bs->prestarting && bwrap_spawn_finish(bs->spawn_ctx, bs, NULL, 0) == 0) {
        bs->dead = 1;
        bwrap_teardown(bs);
    }
    bs_free_unstarted(bs);
}

/* ccsb_ctx_prestart: one bwrap for a later launch, started on the loop
 * thread (see bwrap_prestart) without waiting; its binaries are looked up
 * here, so that a host without them hears it now. */
static int bwrap_standby(struct ccsb_ctx *ctx, char *err, size_t errlen)
{
    struct bwrap_session *bs = bs_new();
    if (!bs)
        return errf(err, errlen, CCSB_E_NOMEM, "out of memory");
    int r = bwrap_locate(ctx, bs, err, errlen);
    if (r < 0) {
        bs_free_unstarted(bs);
        return r;
    }
    bs->prestarting = 1;
    bwrap_spawn_start(ctx, bs);
    r = ctx_standby_put(ctx, bs, standby_free);
    if (r < 0)
        standby_free(bs); /* (CCSB_E_STATE: the core says why) */
    return r;
}

/*
 * Before the core builds the policy (caller's thread): bwrap is started
 * now, and waits for its options; its exec and dynamic linking overlap the
 * policy and the plan. The loop thread spawns it (posix_spawn blocks its
 * caller until the exec), so the caller goes on with the policy at once;
 * that thread also outlives any caller's thread, which bwrap's
 * --die-with-parent watches. A standby the host asked for earlier
 * (ccsb_ctx_prestart) is taken instead, its exec long done. Best effort:
 * without either, launch starts bwrap itself. Not when limits ask for
 * cgroups (bwrap must start inside them).
 */
static void bwrap_prestart(struct ccsb_session *s)
{
    if (s->spec->memory_max || s->spec->pids_max)
        return;
    /* (its spawn may still be under way: take_prestarted waits for it) */
    struct bwrap_session *bs = ctx_standby_take(s->ctx, standby_free);
    if (bs) {
        s->bdata = bs;
        return;
    }
    bs = bs_new();
    if (!bs)
        return;
    s->bdata = bs;
    bs->prestarting = 1;
    bwrap_spawn_start(s->ctx, bs);
}

/* The prestarted bwrap_session, once its spawn finished and if its bwrap
 * still waits for its options (a standby may have waited long); NULL:
 * none. */
static struct bwrap_session *take_prestarted(struct ccsb_session *s)
{
    struct bwrap_session *bs = s->bdata;
    int r = 0;
    if (bs && bs->prestarting) {
        r = bwrap_spawn_finish(s->ctx, bs, NULL, 0);
        bs->prestarting = 0;
    }
    s->bdata = NULL;
    if (bs && r < 0) {
        bs_free_unstarted(bs); /* (bwrap_spawn left nothing) */
        return NULL;
    }
    struct pollfd p = {.fd = bs ? bs->pidfd : -1, .events = POLLIN};
    if (bs && poll(&p, 1, 0) != 0) { /* a pidfd turns readable when its process exits */
        bs->dead = 1;
        bwrap_teardown(bs);
        bs_free_unstarted(bs);
        return NULL;
    }
    return bs;
}

static int bwrap_launch(struct ccsb_session *s, char *err, size_t errlen)
{
    struct bwrap_session *bs = take_prestarted(s);
    int r = BWRAP_START_AGAIN;
    /* Twice at most: a second start knows the guard check's answer. */
    for (int attempt = 0; r == BWRAP_START_AGAIN && attempt < 2; attempt++) {
        if (attempt)
            bs_free_unstarted(bs);
        if (attempt || !bs)
            bs = bs_new();
        if (!bs)
            return errf(err, errlen, CCSB_E_NOMEM, "out of memory");
        r = bwrap_start(s, bs, err, errlen);
    }
    if (r == BWRAP_START_AGAIN)
        r = errf(err, errlen, CCSB_E_INTERNAL, "the seccomp guard's support check keeps changing");
    if (r < 0) {
        bs_free_unstarted(bs);
        return r;
    }
    bs->oom_seen = bwrap_cgroup_oom_kills(&bs->cg);
    s->bdata = bs;
    return 0;
}

/* ---- loop callbacks ---------------------------------------------------------- */

static void on_ctrl(evutil_socket_t fd, short what, void *arg)
{
    struct ccsb_session *s = arg;
    bwrap_dispatch(s, bs_of(s));
}

static void on_errfd(evutil_socket_t fd, short what, void *arg)
{
    struct ccsb_session *s = arg;
    struct bwrap_session *bs = bs_of(s);
    char buf[1024];
    for (int i = 0; i < 16; i++) {
        ssize_t n = read(bs->errfd, buf, sizeof buf);
        if (n < 0 && errno == EINTR)
            continue;
        if (n == 0 && bs->err_ev) {
            event_del(bs->err_ev);
            return;
        }
        if (n <= 0)
            return;
        /* Keep the latest text: it explains a death if one follows. */
        size_t keep = (size_t)n < sizeof bs->errtail - 1 ? (size_t)n : sizeof bs->errtail - 1;
        memcpy(bs->errtail, buf + n - keep, keep);
        bs->errtail[keep] = '\0';
        bs->errtail_len = keep;
    }
}

static void on_child_exit(evutil_socket_t fd, short what, void *arg)
{
    struct ccsb_session *s = arg;
    struct bwrap_session *bs = bs_of(s);
    if (bs->pid_ev)
        event_del(bs->pid_ev);
    bwrap_dispatch(s, bs); /* exits already reported come first */
    bs->dead = 1;
    if (!bs->stopping && !bs->died_reported && s->state != CCSB_STATE_DESTROYED) {
        bs->died_reported = 1;
        session_died(s, bs->errtail_len ? bs->errtail : "bubblewrap exited");
    }
}

static void on_egress_violation(void *ud, const char *target, const char *reason)
{
    session_violation(ud, 0, "network-outbound", target, reason);
}

static int bwrap_attach(struct ccsb_session *s, char *aerr, size_t aerrlen)
{
    struct bwrap_session *bs = bs_of(s);
    struct event_base *base = ctx_base(s->ctx);
    if (fcntl(bs->ctrl, F_SETFL, O_NONBLOCK) < 0)
        return errf(aerr, aerrlen, CCSB_E_IO, "fcntl: %s", strerror(errno));
    bs->ctrl_ev = event_new(base, bs->ctrl, EV_READ | EV_PERSIST, on_ctrl, s);
    bs->err_ev = event_new(base, bs->errfd, EV_READ | EV_PERSIST, on_errfd, s);
    bs->pid_ev = event_new(base, bs->pidfd, EV_READ, on_child_exit, s);
    if (!bs->ctrl_ev || !bs->err_ev || !bs->pid_ev || event_add(bs->ctrl_ev, NULL) < 0 ||
        event_add(bs->err_ev, NULL) < 0 || event_add(bs->pid_ev, NULL) < 0)
        return errf(aerr, aerrlen, CCSB_E_NOMEM, "cannot watch the sandbox's control channel");
    int gr = bwrap_guard_attach(s, bs);
    if (gr < 0)
        return errf(aerr, aerrlen, gr, "cannot start the seccomp guard's supervisor");
    if (!bs->egress)
        return errf(aerr, aerrlen, CCSB_E_INTERNAL, "the egress proxies were not prepared");
    char err[512];
    int r = egress_pair_listen(bs->egress, bs->listeners[0], bs->listeners[1], err, sizeof err);
    if (r < 0)
        return errf(aerr, aerrlen, r, "cannot start the egress proxies: %s", err);
    bs->listeners[0] = bs->listeners[1] = -1; /* the proxies own them now */
    return 0;
}

int bwrap_egress_prepare(struct ccsb_session *s, struct bwrap_session *bs, char *err,
                         size_t errlen)
{
    char e[512];
    int r = egress_pair_prepare(ctx_base(s->ctx), s->spec, on_egress_violation, s, NULL,
                                &bs->egress, e, sizeof e);
    return r < 0 ? errf(err, errlen, r, "cannot start the egress proxies: %s", e) : 0;
}

/* ---- exec ------------------------------------------------------------------------ */

static int forced_env(struct ccsb_session *s, struct bwrap_session *bs, struct strv *f)
{
    int r = strv_push(f, "TMPDIR=/tmp") | strv_push(f, "CCSB_SANDBOX=bubblewrap") |
            strv_pushf(f, "HOME=%s", bs->home);
    if (bs->http_port && bs->socks_port) {
        /* The ports are the host's choice, fixed before the launch (a
         * command may be sent ahead of READY). Inside, the proxies need no
         * credential: the listeners live in the sandbox's own network. */
        char *http = egress_proxy_url("http", NULL, (uint16_t)bs->http_port);
        char *socks = egress_proxy_url("socks5h", NULL, (uint16_t)bs->socks_port);
        /* Loopback names go direct, to the sandbox's own loopback (its dev
         * servers), unless the allowlist names the host's loopback: then
         * the user asked to reach host services (compose, a local API) and
         * they go through the proxy. The host's own NO_PROXY never leaks in:
         * it would send clients into the empty namespace. The proxies here
         * need no credential, so the JVM gets its properties too. */
        struct backend_proxies px = {
            .http_url = http,
            .socks_url = socks,
            .no_proxy = backend_no_proxy(s->spec),
            .java_port = bs->http_port,
        };
        if (!http || !socks || backend_proxy_env(&px, f) < 0)
            r = -1;
        free(http);
        free(socks);
        /* git over ssh: through the SOCKS port, the only way out. */
        r |= strv_pushf(f, "GIT_SSH_COMMAND=ssh -o ProxyCommand='%s connect --port %d %%h %%p'",
                        INIT_GUEST_PATH, bs->socks_port);
    }
    return r ? -1 : 0;
}

/* Sends the command to ccsb-init (caller's thread during a launch, else
 * the loop); bwrap_exec_finish waits until it started. */
int bwrap_exec_send(struct ccsb_session *s, struct bwrap_session *bs, struct exec *x,
                    const struct ccsb_exec_req *req, int cin, int cout, int cerr, int gate,
                    char *err, size_t errlen)
{
    struct strv forced = STRV_INIT, env = STRV_INIT;
    const char *cwd = req->cwd ? req->cwd : s->policy->guest_workdir;
    if (!cwd)
        cwd = spec_workdir(s->spec);
    int r;
    if (forced_env(s, bs, &forced) < 0 ||
        backend_build_env(s, req, environ, (const char *const *)forced.v, &env) < 0) {
        r = errf(err, errlen, CCSB_E_NOMEM, "out of memory");
        goto out;
    }
    int data = init_exec_data_pack(cwd, req->argv.v, env.v);
    if (data < 0) {
        r = errf(err, errlen, data == -E2BIG ? CCSB_E_INVAL : CCSB_E_IO,
                 "cannot pass the command to the sandbox: %s", strerror(-data));
        goto out;
    }
    struct init_msg m;
    init_msg_init(&m, INIT_MSG_EXEC, x->id);
    int fds[INIT_MAX_FDS] = {data, cin, cout, cerr, -1, -1, -1};
    size_t nfds = 4;
    if (req->pty) {
        m.flags = INIT_EXEC_PTY;
        m.a = req->rows;
        m.b = req->cols;
        nfds = 1;
    }
    if (req->end_session)
        m.flags |= INIT_EXEC_END;
    if (gate >= 0) {
        m.flags |= INIT_EXEC_GATE;
        fds[nfds++] = gate;
    }
    /* The channel of the spare that will run the next exec. Not under a
     * process limit (a waiting spare would take one of the user's slots),
     * nor behind a command that ends the sandbox (ccsb-init makes none). */
    int pair[2] = {-1, -1};
    if (!s->policy->pids_max && !req->end_session && bwrap_spare_pair(pair) == 0) {
        fds[nfds++] = pair[0];
        fds[nfds++] = pair[1];
    }
    r = bwrap_send(bs, &m, fds, nfds);
    close(data);
    if (pair[0] >= 0) {
        close(pair[0]);
        close(pair[1]);
    }
    if (r < 0)
        r = errf(err, errlen, CCSB_E_STATE, "the sandbox is not answering: %s",
                 bs->errtail_len ? bs->errtail : "control socket closed");
out:
    strv_clear(&forced);
    strv_clear(&env);
    return r;
}

static int bwrap_exec_finish(struct ccsb_session *s, struct exec *x,
                             const struct ccsb_exec_req *req, char *err, size_t errlen)
{
    struct bwrap_session *bs = bs_of(s);
    if (bs->gate >= 0) {
        /* Attached: the command sent ahead may run now. (A failed send
         * means its process is gone: the reply below tells.) */
        send(bs->gate, "g", 1, MSG_NOSIGNAL);
        close(bs->gate);
        bs->gate = -1;
    }
    struct bwrap_exec *be = calloc(1, sizeof *be);
    if (!be)
        return errf(err, errlen, CCSB_E_NOMEM, "out of memory");
    struct init_msg rep;
    int master = -1;
    int r = bwrap_wait_reply(bs, x->id, INIT_MSG_STARTED, INIT_MSG_FAILED, &rep, &master,
                             EXEC_REPLY_TIMEOUT_MS);
    if (bs->npending && bs->ctrl_ev)
        event_active(bs->ctrl_ev, EV_READ, 0); /* exits read while we waited */
    if (r < 0) {
        r = errf(err, errlen, r, "the sandbox did not start the command (%s)",
                 r == CCSB_E_TIMEDOUT ? "no answer" : "control socket closed");
        goto out;
    }
    if (rep.type == INIT_MSG_FAILED) {
        if (master >= 0)
            close(master);
        r = errf(err, errlen, CCSB_E_IO, "cannot start the command in the sandbox: %s",
                 rep.text);
        goto out;
    }
    if (req->pty) {
        /* The pty lives in the sandbox's own devpts (so `tty` names a node
         * that exists there); its master replaces the one the core made. */
        if (master < 0 || fcntl(master, F_SETFL, O_NONBLOCK) < 0 ||
            dup3(master, x->out_fd, O_CLOEXEC) < 0 || dup3(master, x->in_fd, O_CLOEXEC) < 0) {
            if (master >= 0)
                close(master);
            struct init_msg k;
            init_msg_init(&k, INIT_MSG_KILL, x->id);
            k.a = SIGKILL;
            bwrap_send(bs, &k, NULL, 0);
            /* its exit arrives later and finds no running exec: ignored */
            r = errf(err, errlen, CCSB_E_IO, "cannot take the sandbox's pty");
            goto out;
        }
        close(master);
    } else if (master >= 0) {
        close(master);
    }
    x->pid = rep.a;
    x->bdata = be;
    be = NULL;
    r = 0;
out:
    free(be);
    return r;
}

static int bwrap_exec(struct ccsb_session *s, struct exec *x, const struct ccsb_exec_req *req,
                      int cin, int cout, int cerr, char *err, size_t errlen)
{
    int r = bwrap_exec_send(s, bs_of(s), x, req, cin, cout, cerr, -1, err, errlen);
    return r < 0 ? r : bwrap_exec_finish(s, x, req, err, errlen);
}

static int bwrap_kill_exec(struct ccsb_session *s, struct exec *x, int sig)
{
    struct init_msg m;
    init_msg_init(&m, INIT_MSG_KILL, x->id);
    m.a = sig;
    return bwrap_send(bs_of(s), &m, NULL, 0) < 0 ? CCSB_E_IO : 0;
}

static int bwrap_resize(struct ccsb_session *s, struct exec *x, unsigned rows, unsigned cols)
{
    struct winsize ws = {.ws_row = (unsigned short)rows, .ws_col = (unsigned short)cols};
    return ioctl(x->out_fd, TIOCSWINSZ, &ws) < 0 ? CCSB_E_IO : 0;
}

/* SIGSTOP/SIGCONT of every sandbox process, done by ccsb-init (PID 1). */
static int signal_everyone(struct ccsb_session *s, uint32_t type)
{
    struct bwrap_session *bs = bs_of(s);
    struct init_msg m, rep;
    init_msg_init(&m, type, bs->next_req++);
    int r = bwrap_send(bs, &m, NULL, 0);
    if (!r)
        r = bwrap_wait_reply(bs, m.id, INIT_MSG_REPLY, INIT_MSG_REPLY, &rep, NULL,
                             SUSPEND_REPLY_TIMEOUT_MS);
    if (bs->npending && bs->ctrl_ev)
        event_active(bs->ctrl_ev, EV_READ, 0);
    if (r < 0)
        return r;
    return rep.a ? CCSB_E_IO : 0;
}

static int bwrap_suspend(struct ccsb_session *s)
{
    struct bwrap_session *bs = bs_of(s);
    if (bwrap_cgroup_freeze(&bs->cg, 1) == 0)
        return 0;
    int r = signal_everyone(s, INIT_MSG_SUSPEND);
    bs->suspended_by_signal = r == 0;
    return r;
}

static int bwrap_resume(struct ccsb_session *s)
{
    struct bwrap_session *bs = bs_of(s);
    if (!bs->suspended_by_signal && bwrap_cgroup_freeze(&bs->cg, 0) == 0)
        return 0;
    int r = signal_everyone(s, INIT_MSG_RESUME);
    if (r == 0)
        bs->suspended_by_signal = 0;
    return r;
}

static void bwrap_stop(struct ccsb_session *s)
{
    struct bwrap_session *bs = bs_of(s);
    if (!bs || bs->stopping)
        return;
    /* Exits that already arrived are real: report them before the kill.
     * Only once attached: until then the socket blocks (a launch whose
     * attach failed would wait on it for ever) and no exec is ours yet. */
    if (!bs->dead && bs->ctrl_ev)
        bwrap_dispatch(s, bs);
    bs->stopping = 1;
    if (bs->ctrl_ev)
        event_del(bs->ctrl_ev);
    if (bs->err_ev)
        event_del(bs->err_ev);
    if (bs->pid_ev)
        event_del(bs->pid_ev);
    egress_pair_free(bs->egress);
    bs->egress = NULL;
    bwrap_guard_finish(bs);
    bwrap_teardown(bs);
    /* After the sandbox is gone: until then a trapped call gets its answer. */
    bwrap_guard_release(bs);
}

static void bwrap_destroy(struct ccsb_session *s)
{
    struct bwrap_session *bs = bs_of(s);
    if (!bs)
        return;
    if (!bs->started) { /* prestarted, then the launch never came */
        bs = take_prestarted(s);
        if (bs) {
            bs->dead = 1;
            bwrap_teardown(bs);
            bs_free_unstarted(bs);
        }
        return;
    }
    bwrap_stop(s);
    if (bs->ctrl_ev)
        event_free(bs->ctrl_ev);
    if (bs->err_ev)
        event_free(bs->err_ev);
    if (bs->pid_ev)
        event_free(bs->pid_ev);
    for (size_t i = 0; i < bs->npending; i++)
        if (bs->pending_fd[i] >= 0)
            close(bs->pending_fd[i]);
    free(bs->helper);
    free(bs->bwrap);
    free(bs);
    s->bdata = NULL;
}

struct tap_ctx {
    struct ccsb_session *s;
    uint64_t exec_id;
};

static void on_stderr_line(const char *line, size_t len, void *ud)
{
    struct tap_ctx *t = ud;
    struct violation_guess g;
    if (!violation_parse_line(line, len, &g))
        return;
    /* The guard's exact report of the same denial wins over this reading
     * of the command's stderr: deliver it first, then drop the echo. */
    struct exec *x = session_find_exec(t->s, t->exec_id);
    struct bwrap_session *bs = bs_of(t->s);
    if (bs && bs->guard)
        bwrap_guard_flush(bs);
    if (x && x->bdata && bwrap_guard_reported(x->bdata, g.target))
        return;
    char raw[sizeof ((struct violation_lines *)0)->buf + 1];
    memcpy(raw, line, len);
    raw[len] = '\0';
    session_violation(t->s, t->exec_id, g.action, g.target, raw);
}

static void bwrap_stderr_tap(struct ccsb_session *s, struct exec *x, const unsigned char *buf,
                             size_t len)
{
    struct bwrap_exec *be = x->bdata;
    if (!be)
        return;
    struct tap_ctx t = {s, x->id};
    violation_feed(&be->lines, buf, len, on_stderr_line, &t);
}

static void bwrap_details(struct ccsb_session *s, json_t *o)
{
    struct bwrap_session *bs = bs_of(s);
    json_object_set_new(o, "isolation",
                        json_string("bubblewrap: user, pid, net, ipc, uts, cgroup namespaces; "
                                    "no capabilities; no nested user namespaces"));
    if (!bs)
        return;
    json_object_set_new(o, "bwrapPath", json_string(bs->bwrap));
    json_object_set_new(o, "helperPath", json_string(bs->helper));
    json_object_set_new(o, "sandboxPid", json_integer(bs->pid));
    json_object_set_new(o, "home", json_string(bs->home));
    const struct ccsb_policy *p = s->policy;
    const char *mem = !p->memory_max ? "none"
                      : bs->cg.memory ? bs->cg.memory
                                      : "rlimit-as (per process)";
    const char *pids = !p->pids_max ? "none"
                       : bs->cg.pids ? bs->cg.pids
                                     : (geteuid() == 0 ? "rlimit-nproc (not enforced for root)"
                                                       : "rlimit-nproc (per user)");
    json_t *lim = json_pack("{s:s, s:s, s:s}", "memory", mem, "pids", pids, "suspend",
                            bs->cg.freeze ? (bs->cg.freeze_v2 ? "cgroup-v2-freezer"
                                                              : "cgroup-v1-freezer")
                                          : "signals (SIGSTOP/SIGCONT by ccsb-init)");
    if (lim)
        json_object_set_new(o, "limitsApplied", lim);
    json_t *ph = json_array();
    for (size_t i = 0; ph && i < bs->nph; i++)
        if (bs->ph[i].dev || bs->ph[i].ino)
            json_array_append_new(ph, json_string(bs->ph[i].path));
    if (ph)
        json_object_set_new(o, "placeholders", ph);
    json_t *eg = json_object();
    if (eg && bs->egress)
        egress_pair_stats(bs->egress, eg);
    if (eg)
        json_object_set_new(o, "egress", eg);
}

const struct backend_ops backend_bwrap_ops = {
    .name = "bubblewrap",
    .prestart = bwrap_prestart,
    .standby = bwrap_standby,
    .launch = bwrap_launch,
    .attach = bwrap_attach,
    .exec = bwrap_exec,
    .exec_finish = bwrap_exec_finish,
    .kill_exec = bwrap_kill_exec,
    .resize_pty = bwrap_resize,
    .suspend = bwrap_suspend,
    .resume = bwrap_resume,
    .stop = bwrap_stop,
    .destroy = bwrap_destroy,
    .stderr_tap = bwrap_stderr_tap,
    .details = bwrap_details,
};
