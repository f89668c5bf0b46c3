/*
 * `ccsb run` and `ccsb shell`: launch a session, run one command, pass its
 * stdio through unchanged, exit with its status (128+N for signal N, 124 on
 * timeout, 125 when the sandbox cannot start).
 *
 * The context runs on our own libevent base, in this one thread: no loop
 * thread to start, and no hand-over between threads at each step of a
 * command that lives a few milliseconds (each wake-up of another thread
 * costs a cross-CPU interrupt, expensive on a virtual machine).
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#ifdef __linux__
#include <sys/epoll.h>
#else
#include <sys/stat.h>
#endif
#include <termios.h>
#include <unistd.h>

#include <ccsandbox/ccsandbox-libevent.h>
#include <event2/event.h>

#include "cli.h"

static int write_all(int fd, const void *buf, size_t len)
{
    const char *p = buf;
    while (len) {
        ssize_t n = write(fd, p, len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return -1;
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

struct driver {
    struct event_base *base;
    ccsb_ctx *ctx;
    ccsb_session *s;
    uint64_t exec_id;
    FILE *events;
    int done;
    int exit_status;
    int timed_out;
    int sink_gone;   /* our stdout/stderr reader went away */
    int destroyed;   /* the session's state went to destroyed */
    int got_signal;  /* SIGINT, SIGTERM or SIGHUP since the last look */
    int got_winch;
    /* stdin forwarding */
    int pty;
    int in_open;
    int in_unpollable; /* a regular file or /dev/null: epoll refuses it */
    struct event *in_ev;
    struct event *retry_ev; /* the command's stdin pipe was full */
    char pending[65536];
    size_t pending_len;
};

static void handle_event(struct driver *d, ccsb_event *ev)
{
    if (d->events) {
        char *js = NULL;
        if (ccsb_event_to_json(ev, &js) == 0) {
            fprintf(d->events, "%s\n", js);
            fflush(d->events);
            ccsb_free(js);
        }
    }
    /* Asynchronous errors of the session or of our command (the sandbox
     * died, an exit status was lost) are the user's business. */
    if (ccsb_event_type(ev) == CCSB_EVENT_ERROR &&
        (ccsb_event_exec_id(ev) == 0 || ccsb_event_exec_id(ev) == d->exec_id))
        fprintf(stderr, "ccsb: %s\n", ccsb_event_message(ev));
    if (ccsb_event_type(ev) == CCSB_EVENT_STATE && ccsb_event_state(ev) == CCSB_STATE_DESTROYED)
        d->destroyed = 1;
    if (ccsb_event_exec_id(ev) != d->exec_id || d->exec_id == 0)
        return;
    size_t len;
    const uint8_t *data;
    switch (ccsb_event_type(ev)) {
    case CCSB_EVENT_STDOUT:
    case CCSB_EVENT_STDERR:
        data = ccsb_event_data(ev, &len);
        if (d->sink_gone)
            break;
        if (write_all(ccsb_event_type(ev) == CCSB_EVENT_STDOUT ? 1 : 2, data, len) < 0 &&
            errno == EPIPE) {
            /* Natively the command would now die of SIGPIPE; it writes to
             * us instead, so stop it and exit as it would have. */
            d->sink_gone = 1;
            ccsb_exec_kill(d->s, d->exec_id);
        }
        break;
    case CCSB_EVENT_KILLED:
        if (ccsb_event_kill_reason(ev) == CCSB_KILL_TIMEOUT)
            d->timed_out = 1;
        break;
    case CCSB_EVENT_EXIT:
        if (ccsb_event_signal(ev))
            d->exit_status = 128 + ccsb_event_signal(ev);
        else
            d->exit_status = ccsb_event_exit_code(ev);
        if (d->timed_out)
            d->exit_status = CLI_EXIT_TIMEOUT;
        else if (d->sink_gone)
            d->exit_status = 128 + SIGPIPE;
        d->done = 1;
        break;
    default:
        break;
    }
}

static void drain(struct driver *d)
{
    ccsb_event *ev;
    while (ccsb_ctx_next_event(d->ctx, &ev) == 0) {
        handle_event(d, ev);
        ccsb_event_free(ev);
    }
}

static void flush_stdin(struct driver *d)
{
    while (d->pending_len) {
        int n = ccsb_exec_write_stdin(d->s, d->exec_id, d->pending, d->pending_len);
        if (n == CCSB_E_AGAIN)
            return;
        if (n < 0) { /* the command closed its stdin: drop the rest */
            d->pending_len = 0;
            d->in_open = 0;
            return;
        }
        memmove(d->pending, d->pending + n, d->pending_len - (size_t)n);
        d->pending_len -= (size_t)n;
    }
}

static void on_stdin(evutil_socket_t fd, short what, void *arg)
{
    struct driver *d = arg;
    ssize_t n = read(0, d->pending, sizeof d->pending);
    if (n > 0) {
        d->pending_len = (size_t)n;
    } else if (n == 0 || (errno != EINTR && errno != EAGAIN)) {
        d->in_open = 0;
        if (!d->pty)
            ccsb_exec_close_stdin(d->s, d->exec_id);
    }
}

/* The rest wakes the base only: run_until looks after every turn. */
static void on_wake(evutil_socket_t fd, short what, void *arg)
{
}

static void on_signal(evutil_socket_t sig, short what, void *arg)
{
    struct driver *d = arg;
    if (sig == SIGWINCH)
        d->got_winch = 1;
    else
        d->got_signal = (int)sig;
}

/* A regular file or /dev/null: epoll refuses them (they are always
 * readable), and libevent would only say so once it is waiting. Elsewhere
 * (kqueue) the same kinds are read without waiting too. */
static int stdin_unpollable(void)
{
#ifdef __linux__
    int ep = epoll_create1(EPOLL_CLOEXEC);
    if (ep < 0)
        return 0;
    struct epoll_event ev = {.events = EPOLLIN};
    int r = epoll_ctl(ep, EPOLL_CTL_ADD, 0, &ev) < 0 && errno == EPERM;
    close(ep);
    return r;
#else
    struct stat st;
    return fstat(0, &st) == 0 && (S_ISREG(st.st_mode) || (S_ISCHR(st.st_mode) && !isatty(0)));
#endif
}

/* Waits for stdin only while there is room to forward what it gives. */
static void arm_stdin(struct driver *d)
{
    if (!d->in_ev || !d->in_open || d->pending_len ||
        event_pending(d->in_ev, EV_READ, NULL))
        return;
    if (d->in_unpollable)
        event_active(d->in_ev, EV_READ, 0);
    else
        event_add(d->in_ev, NULL);
}

/* Turns of the base until *flag is set or max_ms passed (-1: no limit);
 * after each: the queued events, the signals, stdin. */
static void run_until(struct driver *d, const int *flag, int max_ms)
{
    struct event *limit = NULL;
    if (max_ms >= 0) {
        struct timeval tv = {max_ms / 1000, (max_ms % 1000) * 1000};
        limit = evtimer_new(d->base, on_wake, NULL);
        if (!limit || evtimer_add(limit, &tv) < 0) {
            if (limit)
                event_free(limit);
            return;
        }
    }
    while (!*flag) {
        arm_stdin(d);
        if (event_base_loop(d->base, EVLOOP_ONCE) != 0)
            break; /* an error, or nothing left to wait for */
        if (d->got_signal) {
            ccsb_exec_kill(d->s, d->exec_id);
            d->got_signal = 0;
        }
        if (d->got_winch && d->pty) {
            struct winsize ws;
            if (ioctl(0, TIOCGWINSZ, &ws) == 0)
                ccsb_exec_resize_pty(d->s, d->exec_id, ws.ws_row, ws.ws_col);
            d->got_winch = 0;
        }
        drain(d);
        flush_stdin(d);
        if (d->pending_len && !evtimer_pending(d->retry_ev, NULL)) {
            struct timeval tv = {0, 10000};
            evtimer_add(d->retry_ev, &tv);
        }
        if (limit && !evtimer_pending(limit, NULL))
            break;
    }
    if (limit)
        event_free(limit);
}

/* Whether the options (not yet parsed) leave the native backend on: only
 * an explicit other --backend turns it off (a --spec file is read later;
 * one that says otherwise only wastes the prestart). */
static int likely_native(int argc, char **argv)
{
    for (int i = 1; i < argc && strcmp(argv[i], "--") != 0; i++)
        if (strcmp(argv[i], "--backend") == 0 && i + 1 < argc)
            return strcmp(argv[i + 1], "native") == 0 || strcmp(argv[i + 1], "auto") == 0;
    return 1;
}

static int run_common(int argc, char **argv, int shell)
{
    /* Whether we have a stdin at all, before anything can take fd 0. */
    int stdin_open = fcntl(0, F_GETFD) >= 0;
    struct driver d = {.exit_status = CLI_EXIT_CANNOT_START, .pty = shell};
    char err[512] = "out of memory";
    int ctx_r = CCSB_E_NOMEM;
    d.base = event_base_new();
    if (d.base)
        ctx_r = ccsb_ctx_new_with_event_base(&d.ctx, d.base, err, sizeof err);
    /* bwrap starts first: its exec and dynamic linking go on while we read
     * the options and the library builds the policy (best effort:
     * unavailable off Linux; the launch starts its own then). */
    if (ctx_r == 0 && likely_native(argc, argv))
        ccsb_ctx_prestart(d.ctx);
    struct run_opts o;
    int rc = run_opts_parse(argc, argv, &o);
    if (rc == 0 && !shell && o.n_cmd == 0) {
        fprintf(stderr, "ccsb run: no command given (ccsb run [options] -- CMD [ARG...])\n");
        rc = CLI_EXIT_CANNOT_START;
    }
    if (rc != 0) {
        ccsb_ctx_free(d.ctx);
        if (d.base)
            event_base_free(d.base);
        run_opts_free(&o);
        return rc;
    }
    ccsb_exec_req *req = NULL;
    struct termios saved;
    int raw = 0;
    struct event *sig_ev[4] = {NULL};
    struct event *bell_ev = NULL;

    if (o.events_path) {
        d.events = strcmp(o.events_path, "-") == 0 ? stdout : fopen(o.events_path, "we");
        if (!d.events) {
            fprintf(stderr, "ccsb: --events %s: %s\n", o.events_path, strerror(errno));
            goto out;
        }
    }
    if (ctx_r < 0) {
        fprintf(stderr, "ccsb: %s\n", err);
        goto out;
    }
    if (ccsb_exec_req_new(&req) < 0)
        goto out;
    int r;
    if (shell) {
        const char *sh_argv[] = {"/bin/sh", "-i"};
        if (access("/bin/bash", X_OK) == 0)
            sh_argv[0] = "/bin/bash";
        r = o.n_cmd ? ccsb_exec_req_set_argv(req, (const char *const *)o.cmd, o.n_cmd)
                    : ccsb_exec_req_set_argv(req, sh_argv, 2);
        struct winsize ws = {.ws_row = 24, .ws_col = 80};
        if (isatty(0))
            ioctl(0, TIOCGWINSZ, &ws);
        if (r == 0)
            r = ccsb_exec_req_set_pty(req, ws.ws_row ? ws.ws_row : 24, ws.ws_col ? ws.ws_col : 80);
    } else {
        r = ccsb_exec_req_set_argv(req, (const char *const *)o.cmd, o.n_cmd);
        if (r == 0 && stdin_open)
            r = ccsb_exec_req_set_stdin(req, CCSB_STDIN_PIPE);
        d.in_open = stdin_open;
    }
    for (size_t i = 0; r == 0 && i < o.n_env; i++) {
        char *eq = strchr(o.env[i], '=');
        *eq = 0;
        r = ccsb_exec_req_set_env(req, o.env[i], eq + 1);
        *eq = '=';
        if (r < 0)
            fprintf(stderr, "ccsb: --env %s: invalid variable name\n", o.env[i]);
    }
    if (r == 0 && o.timeout_ms)
        r = ccsb_exec_req_set_timeout_ms(req, o.timeout_ms);
    /* The sandbox lives as long as the command: it ends itself then. */
    if (r == 0)
        r = ccsb_exec_req_set_end_session(req, 1);
    if (r < 0)
        goto out;

    signal(SIGPIPE, SIG_IGN);
    if (shell)
        d.in_open = 1;

    /* One call: the command goes out with the launch. */
    r = ccsb_launch_exec(d.ctx, o.spec, req, &d.s, &d.exec_id);
    if (r < 0) {
        fprintf(stderr, "ccsb: cannot run the command in a sandbox: %s\n",
                ccsb_ctx_errmsg(d.ctx));
        drain(&d);
        d.exit_status = CLI_EXIT_CANNOT_START;
        goto out;
    }
    /* Only now: a signal while the sandbox starts ends us by that signal
     * (128+N), and the command, held until the session is attached, never
     * runs; caught, it would have been started and then killed. */
    const int sigs[4] = {SIGINT, SIGTERM, SIGHUP, SIGWINCH};
    for (int i = 0; i < (shell ? 4 : 3); i++) {
        sig_ev[i] = evsignal_new(d.base, sigs[i], on_signal, &d);
        if (!sig_ev[i] || evsignal_add(sig_ev[i], NULL) < 0) {
            fprintf(stderr, "ccsb: cannot watch for signal %d\n", sigs[i]);
            goto out;
        }
    }
    bell_ev = event_new(d.base, ccsb_ctx_get_fd(d.ctx), EV_READ | EV_PERSIST, on_wake, NULL);
    d.retry_ev = evtimer_new(d.base, on_wake, NULL);
    d.in_ev = event_new(d.base, 0, EV_READ, on_stdin, &d);
    d.in_unpollable = d.in_open && stdin_unpollable();
    if (!bell_ev || event_add(bell_ev, NULL) < 0 || !d.retry_ev || !d.in_ev) {
        fprintf(stderr, "ccsb: out of memory\n");
        goto out;
    }
    if (shell) {
        if (isatty(0) && tcgetattr(0, &saved) == 0) {
            struct termios t = saved;
            cfmakeraw(&t);
            if (tcsetattr(0, TCSANOW, &t) == 0)
                raw = 1;
        }
    }
    run_until(&d, &d.done, -1);
out:
    if (raw)
        tcsetattr(0, TCSANOW, &saved);
    ccsb_exec_req_free(req);
    /* The command has ended: what arrives on stdin now (a key typed at
     * the terminal, the rest of a script's input) is for whoever reads it
     * after us, not ours to take while the session winds down. */
    if (d.in_ev)
        event_del(d.in_ev);
    d.in_open = 0;
    if (d.s) {
        /* The session ends itself after the command (end_session): its
         * last event (destroyed) comes within moments. */
        if (d.done && bell_ev)
            run_until(&d, &d.destroyed, 5000);
        if (!d.destroyed) {
            ccsb_session_stop(d.s);
            drain(&d);
        }
    }
    for (int i = 0; i < 4; i++)
        if (sig_ev[i])
            event_free(sig_ev[i]);
    if (bell_ev)
        event_free(bell_ev);
    if (d.retry_ev)
        event_free(d.retry_ev);
    if (d.in_ev)
        event_free(d.in_ev);
    /* The context first (the session handle is then only memory), then
     * the base it ran on. */
    ccsb_ctx_free(d.ctx);
    ccsb_session_destroy(d.s);
    if (d.base)
        event_base_free(d.base);
    if (d.events && d.events != stdout)
        fclose(d.events);
    run_opts_free(&o);
    return d.exit_status;
}

int cmd_run(int argc, char **argv)
{
    return run_common(argc, argv, 0);
}

int cmd_shell(int argc, char **argv)
{
    return run_common(argc, argv, 1);
}
