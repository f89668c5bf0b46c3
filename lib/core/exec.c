/*
 * Exec bookkeeping. The host creates every pipe (or the pty) itself, so the
 * command's output reaches the host with no relay whatever the backend.
 *
 * Ordering: the exit event of an exec comes after every byte its main
 * process wrote (the pipes are drained when the exit is reported). Output
 * written later by background processes it left behind is still delivered,
 * tagged with the same exec id, until they close the pipes or the session
 * stops.
 */
#include "core/exec.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include <event2/event.h>

#include "backend/backend.h"
#include "ccsandbox/ccsandbox.h"
#include "core/ctx.h"
#include "core/event.h"
#include "core/exec_req.h"
#include "util/fd.h"
#include "core/session.h"

#define READ_CHUNK 65536

static void close_fd(int *fd)
{
    if (*fd >= 0) {
        close(*fd);
        *fd = -1;
    }
}

static void emit_output(struct exec *x, int type, const unsigned char *buf, size_t n)
{
    struct ccsb_event *ev = evt_new(type, x->s->id, x->id);
    if (!ev)
        return;
    ev->data = malloc(n);
    if (!ev->data) {
        ccsb_event_free(ev);
        return;
    }
    memcpy(ev->data, buf, n);
    ev->len = n;
    ctx_emit(x->s->ctx, ev);
}

static void maybe_release(struct exec *x)
{
    if (!x->running && x->out_fd < 0 && x->err_fd < 0)
        exec_release(x);
}

/*
 * Reads what is available; returns 1 when the stream ended (and closes it).
 * Unless told to drain (exit ordering), it stops and pauses the reader
 * while the host is behind on the event queue.
 */
static int pump(struct exec *x, int *fd, struct event **ev, int *paused, int type, int drain)
{
    unsigned char buf[READ_CHUNK];
    for (int rounds = 0; rounds < 64; rounds++) {
        if (!drain && ctx_output_blocked(x->s->ctx)) {
            if (*ev && !*paused && event_del(*ev) == 0)
                *paused = 1;
            return 0;
        }
        ssize_t n = read(*fd, buf, sizeof buf);
        if (n > 0) {
            emit_output(x, type, buf, (size_t)n);
            if (type == CCSB_EVENT_STDERR && x->s->ops->stderr_tap)
                x->s->ops->stderr_tap(x->s, x, buf, (size_t)n);
            continue;
        }
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            return 0;
        /* EOF, or EIO on a pty whose other side is gone. */
        if (*ev) {
            event_free(*ev);
            *ev = NULL;
        }
        close_fd(fd);
        return 1;
    }
    return 0;
}

static void on_stdout(evutil_socket_t fd, short what, void *arg)
{
    struct exec *x = arg;
    if (pump(x, &x->out_fd, &x->out_ev, &x->out_paused, CCSB_EVENT_STDOUT, 0))
        maybe_release(x);
}

static void on_stderr(evutil_socket_t fd, short what, void *arg)
{
    struct exec *x = arg;
    if (pump(x, &x->err_fd, &x->err_ev, &x->err_paused, CCSB_EVENT_STDERR, 0))
        maybe_release(x);
}

static void on_exec_timeout(evutil_socket_t fd, short what, void *arg)
{
    struct exec *x = arg;
    if (!x->running)
        return;
    x->kill_reason = CCSB_KILL_TIMEOUT;
    if (x->s->ops->kill_exec(x->s, x, SIGKILL) < 0)
        session_fail(x->s, "cannot kill exec %llu after its timeout",
                     (unsigned long long)x->id);
}

void exec_exited(struct exec *x, int code, int sig)
{
    if (!x->running)
        return;
    struct ccsb_session *s = x->s;
    /* Everything the main process wrote is in the pipes by now. */
    if (x->out_fd >= 0)
        pump(x, &x->out_fd, &x->out_ev, &x->out_paused, CCSB_EVENT_STDOUT, 1);
    if (x->err_fd >= 0)
        pump(x, &x->err_fd, &x->err_ev, &x->err_paused, CCSB_EVENT_STDERR, 1);
    x->running = 0;
    if (x->timer) {
        event_free(x->timer);
        x->timer = NULL;
    }
    close_fd(&x->in_fd);
    /* The session ends with it: from here on it takes no new command, not
     * even from the callback that delivers this exit (the stop itself
     * comes after the events). */
    if (x->end_session)
        session_stop_soon(s);
    if (x->kill_reason) {
        struct ccsb_event *k = evt_new(CCSB_EVENT_KILLED, s->id, x->id);
        if (k) {
            k->kill_reason = x->kill_reason;
            evt_set_message(k, "%s", ccsb_kill_reason_name(x->kill_reason));
            ctx_emit(s->ctx, k);
        }
    }
    struct ccsb_event *ev = evt_new(CCSB_EVENT_EXIT, s->id, x->id);
    if (ev) {
        ev->exit_code = sig ? -1 : code;
        ev->signal = sig;
        if (sig)
            evt_set_message(ev, "killed by signal %d", sig);
        else
            evt_set_message(ev, "exited with status %d", code);
        ctx_emit(s->ctx, ev);
    }
    if (s->state == CCSB_STATE_ACTIVE && session_running_execs(s) == 0)
        session_set_state(s, CCSB_STATE_WARM, "idle");
    maybe_release(x);
}

void exec_release(struct exec *x)
{
    struct ccsb_session *s = x->s;
    for (struct exec **p = &s->execs; *p; p = &(*p)->next) {
        if (*p == x) {
            *p = x->next;
            break;
        }
    }
    if (x->out_ev)
        event_free(x->out_ev);
    if (x->err_ev)
        event_free(x->err_ev);
    if (x->timer)
        event_free(x->timer);
    close_fd(&x->in_fd);
    close_fd(&x->out_fd);
    close_fd(&x->err_fd);
    free(x->bdata);
    free(x);
}

static int resume_reader(struct event *ev, int *paused)
{
    if (!*paused)
        return 0;
    if (ev && event_add(ev, NULL) < 0)
        return -1;
    *paused = 0;
    return 0;
}

void exec_resume_output(struct ccsb_session *s)
{
    for (struct exec *x = s->execs; x; x = x->next)
        if (resume_reader(x->out_ev, &x->out_paused) < 0 ||
            resume_reader(x->err_ev, &x->err_paused) < 0)
            session_fail(s, "cannot watch the output of exec %llu again",
                         (unsigned long long)x->id);
}

static int set_nonblock(int fd)
{
    int fl = fcntl(fd, F_GETFL);
    return fl < 0 ? -1 : fcntl(fd, F_SETFL, fl | O_NONBLOCK);
}

/* Host ends in h[3] (in, out, err), sandbox ends in c[3]. None of them is
 * 0, 1 or 2 (core/fd.h). */
static int make_stdio(const struct ccsb_exec_req *req, int h[3], int c[3], char *err,
                      size_t errlen)
{
    h[0] = h[1] = h[2] = c[0] = c[1] = c[2] = -1;
    if (req->pty) {
        h[1] = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
        if (h[1] < 0 || grantpt(h[1]) < 0 || unlockpt(h[1]) < 0)
            goto fail;
        char name[128];
        if (ptsname_r(h[1], name, sizeof name) != 0)
            goto fail;
        c[0] = open(name, O_RDWR | O_NOCTTY | O_CLOEXEC);
        if (c[0] < 0)
            goto fail;
        struct winsize ws = {.ws_row = req->rows, .ws_col = req->cols};
        ioctl(h[1], TIOCSWINSZ, &ws);
        h[0] = fcntl(h[1], F_DUPFD_CLOEXEC, 3);
        c[1] = fcntl(c[0], F_DUPFD_CLOEXEC, 3);
        c[2] = fcntl(c[0], F_DUPFD_CLOEXEC, 3);
        if (h[0] < 0 || c[1] < 0 || c[2] < 0 || set_nonblock(h[1]) < 0)
            goto fail;
    } else {
        int p[2];
        if (req->stdin_mode == CCSB_STDIN_PIPE) {
            if (pipe2(p, O_CLOEXEC) < 0)
                goto fail;
            c[0] = p[0];
            h[0] = p[1];
            if (set_nonblock(h[0]) < 0)
                goto fail;
        } else {
            c[0] = open("/dev/null", O_RDONLY | O_CLOEXEC);
            if (c[0] < 0)
                goto fail;
        }
        if (pipe2(p, O_CLOEXEC) < 0)
            goto fail;
        h[1] = p[0];
        c[1] = p[1];
        if (pipe2(p, O_CLOEXEC) < 0)
            goto fail;
        h[2] = p[0];
        c[2] = p[1];
        if (set_nonblock(h[1]) < 0 || set_nonblock(h[2]) < 0)
            goto fail;
    }
    for (int i = 0; i < 3; i++) {
        int had_h = h[i] >= 0, had_c = c[i] >= 0;
        h[i] = fd_above_stdio(h[i]);
        c[i] = fd_above_stdio(c[i]);
        if ((had_h && h[i] < 0) || (had_c && c[i] < 0))
            goto fail;
    }
    return 0;
fail:;
    int e = errno;
    for (int i = 0; i < 3; i++) {
        close_fd(&h[i]);
        close_fd(&c[i]);
    }
    snprintf(err, errlen, "cannot create the command's stdio: %s", strerror(e));
    return CCSB_E_IO;
}

int exec_prepare(struct ccsb_session *s, const struct ccsb_exec_req *req, struct exec **out,
                 int child[3], char *err, size_t errlen)
{
    *out = NULL;
    if (req->argv.n == 0) {
        snprintf(err, errlen, "argv: empty");
        return CCSB_E_INVAL;
    }
    struct exec *x = calloc(1, sizeof *x);
    if (!x) {
        snprintf(err, errlen, "out of memory");
        return CCSB_E_NOMEM;
    }
    x->s = s;
    x->pty = req->pty;
    x->end_session = req->end_session;
    x->in_fd = x->out_fd = x->err_fd = -1;
    int h[3];
    int r = make_stdio(req, h, child, err, errlen);
    if (r < 0) {
        free(x);
        return r;
    }
    x->in_fd = h[0];
    x->out_fd = h[1];
    x->err_fd = h[2];
    x->id = ++s->next_exec_id;
    *out = x;
    return 0;
}

void exec_discard(struct exec *x, int child[3])
{
    for (int i = 0; i < 3; i++)
        close_fd(&child[i]);
    if (x)
        exec_release(x); /* not linked yet: only its memory and fds */
}

int exec_begin(struct exec *x, const struct ccsb_exec_req *req, int child[3], int sent,
               char *err, size_t errlen)
{
    struct ccsb_session *s = x->s;
    x->next = s->execs;
    s->execs = x;
    x->running = 1;

    int r = sent ? s->ops->exec_finish(s, x, req, err, errlen)
                 : s->ops->exec(s, x, req, child[0], child[1], child[2], err, errlen);
    for (int i = 0; i < 3; i++)
        close_fd(&child[i]);
    if (r < 0) {
        x->running = 0;
        exec_release(x);
        return r;
    }

    struct event_base *base = ctx_base(s->ctx);
    x->out_ev = event_new(base, x->out_fd, EV_READ | EV_PERSIST, on_stdout, x);
    if (x->err_fd >= 0)
        x->err_ev = event_new(base, x->err_fd, EV_READ | EV_PERSIST, on_stderr, x);
    uint64_t tmo = req->timeout_ms;
    if (tmo)
        x->timer = evtimer_new(base, on_exec_timeout, x);
    if (!x->out_ev || (x->err_fd >= 0 && !x->err_ev) || (tmo && !x->timer) ||
        event_add(x->out_ev, NULL) < 0 || (x->err_ev && event_add(x->err_ev, NULL) < 0)) {
        x->kill_reason = CCSB_KILL_HOST;
        s->ops->kill_exec(s, x, SIGKILL);
        snprintf(err, errlen, "cannot watch the command's output");
        /* The backend still reports the exit; the exec is released then. */
        return CCSB_E_NOMEM;
    }
    if (x->timer) {
        struct timeval tv = {(time_t)(tmo / 1000), (suseconds_t)(tmo % 1000) * 1000};
        evtimer_add(x->timer, &tv);
    }
    session_set_state(s, CCSB_STATE_ACTIVE, "running");
    return 0;
}

int exec_start(struct ccsb_session *s, const struct ccsb_exec_req *req, uint64_t *out_id,
               char *err, size_t errlen)
{
    if (s->state != CCSB_STATE_WARM && s->state != CCSB_STATE_ACTIVE) {
        snprintf(err, errlen, "the session is %s; exec needs a warm or active session",
                 ccsb_state_name(s->state));
        return CCSB_E_STATE;
    }
    if (s->ending) {
        snprintf(err, errlen, "the session is ending: its end_session command ended");
        return CCSB_E_STATE;
    }
    struct exec *x;
    int child[3];
    int r = exec_prepare(s, req, &x, child, err, errlen);
    if (r < 0)
        return r;
    uint64_t id = x->id;
    r = exec_begin(x, req, child, 0, err, errlen);
    if (r < 0)
        return r;
    *out_id = id;
    return 0;
}

/*
 * write(2) on a pipe whose reader is gone raises SIGPIPE, which would kill
 * a host that never expected it. The library must not touch the process's
 * signal dispositions, so block SIGPIPE in this thread around the write and
 * swallow one that we caused.
 */
static ssize_t write_nosigpipe(int fd, const void *buf, size_t len)
{
    sigset_t pipe_set, old, pending;
    sigemptyset(&pipe_set);
    sigaddset(&pipe_set, SIGPIPE);
    sigpending(&pending);
    int was_pending = sigismember(&pending, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &pipe_set, &old);
    ssize_t n = write(fd, buf, len);
    int e = errno;
    if (n < 0 && e == EPIPE && !was_pending) {
        struct timespec zero = {0, 0};
        while (sigtimedwait(&pipe_set, NULL, &zero) < 0 && errno == EINTR)
            ;
    }
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    errno = e;
    return n;
}

int exec_write_stdin(struct exec *x, const void *buf, size_t len)
{
    if (x->in_fd < 0)
        return CCSB_E_STATE;
    if (len > INT32_MAX)
        len = INT32_MAX;
    for (;;) {
        ssize_t n = write_nosigpipe(x->in_fd, buf, len);
        if (n >= 0)
            return (int)n;
        if (errno == EINTR)
            continue;
        if (errno == EAGAIN || errno == EWOULDBLOCK)
            return CCSB_E_AGAIN;
        if (errno == EPIPE)
            return CCSB_E_STATE;
        return CCSB_E_IO;
    }
}

int exec_close_stdin(struct exec *x)
{
    if (x->in_fd < 0)
        return CCSB_E_STATE;
    if (x->pty) {
        /* A pty has no half-close: send the terminal's EOF character. */
        struct termios t;
        unsigned char eof = 4;
        if (tcgetattr(x->out_fd, &t) == 0)
            eof = t.c_cc[VEOF];
        if (write(x->in_fd, &eof, 1) < 0 && errno != EAGAIN)
            return CCSB_E_IO;
        return 0;
    }
    close_fd(&x->in_fd);
    return 0;
}
