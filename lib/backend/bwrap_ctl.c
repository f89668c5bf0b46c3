/*
 * The host side of the control socket. The socket is non-blocking; a send
 * that would block, or a wait for a reply, keeps reading what ccsb-init
 * sends meanwhile into a small queue, so neither side can wedge the other
 * (ccsb-init blocks on its sends, the host never does for long).
 */
#include "backend/bwrap_internal.h"
#include "backend/bwrap_guard.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <sys/socket.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ccsandbox/ccsandbox.h"
#include "core/session.h"
#include "util/fd.h"

#define SEND_TIMEOUT_MS 5000

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Reads one message into the queue. 1 queued, 0 nothing, -1 the socket ended. */
static int read_one(struct bwrap_session *bs)
{
    if (bs->npending == BWRAP_PENDING_MAX)
        return 0; /* full: the caller's loop dispatches first */
    struct init_msg m;
    int fds[INIT_MAX_FDS];
    size_t nfds = INIT_MAX_FDS;
    int r = init_recv(bs->ctrl, &m, fds, &nfds);
    if (r == -ECONNRESET) {
        /* ccsb-init exited with our requests unread in its queue: the
         * kernel reports that once, ahead of what it sent before exiting
         * (its last word, a DETACHED or FATAL, must not be lost). */
        nfds = INIT_MAX_FDS;
        r = init_recv(bs->ctrl, &m, fds, &nfds);
    }
    if (r == -EAGAIN || r == -EWOULDBLOCK)
        return 0;
    if (r <= 0) {
        bs->dead = 1;
        return -1;
    }
    for (size_t i = 1; i < nfds; i++)
        close(fds[i]); /* no message carries more than one fd to the host here */
    bs->pending[bs->npending] = m;
    bs->pending_fd[bs->npending] = nfds ? fds[0] : -1;
    bs->npending++;
    return 1;
}

int bwrap_send(struct bwrap_session *bs, const struct init_msg *m, const int *fds, size_t n)
{
    if (bs->ctrl < 0 || bs->dead)
        return CCSB_E_IO;
    int64_t end = now_ms() + SEND_TIMEOUT_MS;
    for (;;) {
        int r = init_send(bs->ctrl, m, fds, n);
        if (r == 0)
            return 0;
        if (r != -EAGAIN && r != -EWOULDBLOCK) {
            bs->dead = 1;
            return CCSB_E_IO;
        }
        int left = (int)(end - now_ms());
        if (left <= 0)
            return CCSB_E_TIMEDOUT;
        struct pollfd p = {.fd = bs->ctrl, .events = POLLOUT | POLLIN};
        if (poll(&p, 1, left) < 0 && errno != EINTR)
            return CCSB_E_IO;
        if ((p.revents & POLLIN) && read_one(bs) < 0)
            return CCSB_E_IO;
    }
}

int bwrap_spare_pair(int pair[2])
{
    if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, pair) < 0)
        return -1;
    /* (off 0-2 of a host that closed them, even for this short while) */
    pair[0] = fd_above_stdio(pair[0]);
    pair[1] = fd_above_stdio(pair[1]);
    if (pair[0] >= 0 && pair[1] >= 0)
        return 0;
    if (pair[0] >= 0)
        close(pair[0]);
    if (pair[1] >= 0)
        close(pair[1]);
    return -1;
}

int bwrap_send_spare(struct bwrap_session *bs)
{
    int pair[2];
    if (bwrap_spare_pair(pair) < 0)
        return 0; /* no spare: every exec forks, as it may */
    struct init_msg m;
    init_msg_init(&m, INIT_MSG_SPARE, 0);
    int r = bwrap_send(bs, &m, pair, 2);
    close(pair[0]);
    close(pair[1]);
    return r;
}

int bwrap_wait_reply(struct bwrap_session *bs, uint64_t id, uint32_t t1, uint32_t t2,
                     struct init_msg *out, int *fd_out, int timeout_ms)
{
    int64_t end = now_ms() + timeout_ms;
    if (fd_out)
        *fd_out = -1;
    size_t scanned = 0;
    for (;;) {
        for (; scanned < bs->npending; scanned++) {
            struct init_msg *m = &bs->pending[scanned];
            if (m->id != id || (m->type != t1 && m->type != t2))
                continue;
            *out = *m;
            int fd = bs->pending_fd[scanned];
            if (fd_out)
                *fd_out = fd;
            else if (fd >= 0)
                close(fd);
            memmove(&bs->pending[scanned], &bs->pending[scanned + 1],
                    (bs->npending - scanned - 1) * sizeof bs->pending[0]);
            memmove(&bs->pending_fd[scanned], &bs->pending_fd[scanned + 1],
                    (bs->npending - scanned - 1) * sizeof bs->pending_fd[0]);
            bs->npending--;
            return 0;
        }
        if (bs->dead)
            return CCSB_E_IO;
        if (bs->npending == BWRAP_PENDING_MAX)
            return CCSB_E_IO; /* ccsb-init is flooding us: treat as broken */
        int left = (int)(end - now_ms());
        if (left <= 0)
            return CCSB_E_TIMEDOUT;
        struct pollfd p = {.fd = bs->ctrl, .events = POLLIN};
        int r = poll(&p, 1, left);
        if (r < 0 && errno != EINTR)
            return CCSB_E_IO;
        if (r > 0 && read_one(bs) < 0 && bs->npending == scanned)
            return CCSB_E_IO;
    }
}

static const char *protection_name(int kind)
{
    switch (kind) {
    case INIT_PROT_MASK_FILE:
        return "the deny-read mask over a file";
    case INIT_PROT_MASK_DIR:
        return "the deny-read mask over a directory";
    case INIT_PROT_PIN_DIR:
        return "the deny-write bind over a directory";
    case INIT_PROT_PIN_FILE:
        return "the deny-write bind over a file";
    default:
        return "a protection mount";
    }
}

/*
 * A mount ccsb-init made for the policy detached: the host replaced or
 * removed the node under it. One violation event names the path; when
 * ccsb-init ended the sandbox for it (it killed every process first), the
 * running execs are reported killed and the session goes to ERROR.
 */
static void on_detached(struct ccsb_session *s, struct bwrap_session *bs,
                        const struct init_msg *m)
{
    char path[INIT_TEXT_MAX];
    snprintf(path, sizeof path, "%s", m->text);
    char how[128];
    if (m->c == 0)
        snprintf(how, sizeof how, "replaced it (renamed another file over it, or removed "
                                  "and recreated it)");
    else if (m->c == ENOENT)
        snprintf(how, sizeof how, "removed it");
    else
        snprintf(how, sizeof how, "changed it (it cannot be looked up: %s)", strerror(m->c));
    char raw[512];
    snprintf(raw, sizeof raw, "the host %s, which detached %s in the sandbox; %s", how,
             protection_name(m->a),
             m->b ? "every process in the sandbox was killed and the session stopped"
                  : "the seccomp guard still refuses writes to it by name, so the session "
                    "goes on");
    session_violation(s, 0, "mount-detached", path, raw);
    if (!m->b)
        return;
    bs->dead = 1; /* ccsb-init exits next */
    if (bs->stopping || bs->died_reported || s->ending)
        return;
    bs->died_reported = 1;
    char why[INIT_TEXT_MAX + 192];
    snprintf(why, sizeof why,
             "the host replaced or removed protected path %s (%s was gone); the session was "
             "stopped to keep the policy",
             path, protection_name(m->a));
    session_lost(s, why);
}

static void handle(struct ccsb_session *s, struct bwrap_session *bs, const struct init_msg *m,
                   int fd)
{
    switch (m->type) {
    case INIT_MSG_EXITED: {
        struct exec *x = session_find_exec(s, m->id);
        if (!x || !x->running)
            break;
        if (m->b == SIGKILL && !x->kill_reason) {
            long oom = bwrap_cgroup_oom_kills(&bs->cg);
            if (oom > bs->oom_seen) {
                bs->oom_seen = oom;
                x->kill_reason = CCSB_KILL_OOM;
            }
        }
        exec_exited(x, m->b ? -1 : m->a, m->b);
        break;
    }
    case INIT_MSG_GUARD:
        if (fd >= 0)
            bwrap_guard_listener(bs, m->id, fd); /* takes it */
        fd = -1;
        break;
    case INIT_MSG_DETACHED:
        on_detached(s, bs, m);
        break;
    case INIT_MSG_FATAL:
        bs->dead = 1;
        if (!bs->stopping && !bs->died_reported) {
            bs->died_reported = 1;
            session_died(s, m->text);
        }
        break;
    case INIT_MSG_STARTED: {
        /* An exec we gave up waiting for: it must not run unobserved. */
        struct init_msg k;
        init_msg_init(&k, INIT_MSG_KILL, m->id);
        k.a = SIGKILL;
        bwrap_send(bs, &k, NULL, 0);
        break;
    }
    default:
        break; /* late replies */
    }
    if (fd >= 0)
        close(fd);
}

void bwrap_dispatch(struct ccsb_session *s, struct bwrap_session *bs)
{
    for (int rounds = 0; rounds < 4 * BWRAP_PENDING_MAX; rounds++) {
        /* Read on when ccsb-init is known dead (a send failed, or its
         * FATAL came): what it said before exiting is still queued. */
        if (bs->npending == 0 && read_one(bs) <= 0)
            break;
        if (bs->npending == 0)
            continue;
        struct init_msg m = bs->pending[0];
        int fd = bs->pending_fd[0];
        bs->npending--;
        memmove(&bs->pending[0], &bs->pending[1], bs->npending * sizeof bs->pending[0]);
        memmove(&bs->pending_fd[0], &bs->pending_fd[1], bs->npending * sizeof bs->pending_fd[0]);
        handle(s, bs, &m, fd);
        if (s->state == CCSB_STATE_DESTROYED)
            return;
    }
    if (bs->dead && !bs->stopping && !bs->died_reported && s->state != CCSB_STATE_DESTROYED) {
        bs->died_reported = 1;
        session_died(s, bs->errtail_len ? bs->errtail : "the sandbox's init process ended");
    }
}
