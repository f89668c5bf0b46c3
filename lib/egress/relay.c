#include "egress/relay.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>

#include "egress/pair_int.h"

/* Stop reading a side while the other's output holds this much. */
#define RELAY_HIGH (1024 * 1024)

struct side {
    struct bufferevent *bev;
    int eof;         /* no more bytes will come from this side */
    int shut;        /* we half-closed its write direction */
    uint64_t *count; /* bytes read from this side */
};

struct relay {
    struct pair_link link;
    struct egress_pair *p;
    struct side s[2]; /* 0: client (sandbox), 1: upstream */
};

static void relay_free(struct relay *r)
{
    pair_link_del(&r->link);
    for (int i = 0; i < 2; i++)
        if (r->s[i].bev)
            bufferevent_free(r->s[i].bev);
    free(r);
}

static void relay_close_link(struct pair_link *l)
{
    relay_free((struct relay *)l);
}

static int idx(struct relay *r, struct bufferevent *bev)
{
    return r->s[0].bev == bev ? 0 : 1;
}

/* Once a side ended and its bytes were flushed, half-close the other; once
 * both ended and both outputs drained, the tunnel is done. */
static int maybe_finish(struct relay *r)
{
    for (int i = 0; i < 2; i++) {
        struct side *from = &r->s[i], *to = &r->s[1 - i];
        if (from->eof && !to->shut &&
            evbuffer_get_length(bufferevent_get_output(to->bev)) == 0) {
            shutdown(bufferevent_getfd(to->bev), SHUT_WR);
            to->shut = 1;
        }
    }
    if (r->s[0].shut && r->s[1].shut) {
        relay_free(r);
        return 1;
    }
    return 0;
}

static void pump(struct relay *r, int i)
{
    struct side *from = &r->s[i], *to = &r->s[1 - i];
    struct evbuffer *in = bufferevent_get_input(from->bev);
    struct evbuffer *out = bufferevent_get_output(to->bev);
    size_t n = evbuffer_get_length(in);
    if (n) {
        *from->count += n;
        evbuffer_add_buffer(out, in);
    }
    if (evbuffer_get_length(out) >= RELAY_HIGH)
        bufferevent_disable(from->bev, EV_READ);
}

static void read_cb(struct bufferevent *bev, void *arg)
{
    struct relay *r = arg;
    pump(r, idx(r, bev));
}

static void write_cb(struct bufferevent *bev, void *arg)
{
    struct relay *r = arg;
    int i = idx(r, bev);
    struct side *other = &r->s[1 - i];
    /* bev drained below its low watermark: let the other side read again. */
    if (!other->eof)
        bufferevent_enable(other->bev, EV_READ);
    maybe_finish(r);
}

static void event_cb(struct bufferevent *bev, short what, void *arg)
{
    struct relay *r = arg;
    int i = idx(r, bev);
    if (what & BEV_EVENT_EOF) {
        pump(r, i);
        r->s[i].eof = 1;
        bufferevent_disable(bev, EV_READ);
        maybe_finish(r);
        return;
    }
    /* Error or timeout: nothing more can flow reliably. */
    relay_free(r);
}

static int relay_start_buffered(struct egress_pair *p, struct bufferevent *client,
                                struct bufferevent *upstream)
{
    struct relay *r = calloc(1, sizeof *r);
    if (!r) {
        bufferevent_free(client);
        bufferevent_free(upstream);
        return -1;
    }
    r->p = p;
    r->s[0].bev = client;
    r->s[0].count = &p->bytes_up;
    r->s[1].bev = upstream;
    r->s[1].count = &p->bytes_down;
    r->link.close = relay_close_link;
    pair_link_add(p, &r->link);
    for (int i = 0; i < 2; i++) {
        bufferevent_setcb(r->s[i].bev, read_cb, write_cb, event_cb, r);
        bufferevent_setwatermark(r->s[i].bev, EV_WRITE, RELAY_HIGH / 2, 0);
        bufferevent_set_timeouts(r->s[i].bev, NULL, NULL);
        bufferevent_enable(r->s[i].bev, EV_READ | EV_WRITE);
    }
    pump(r, 0);
    pump(r, 1);
    return 0;
}

#ifdef __linux__
/*
 * The spliced tunnel (Linux): bytes go socket -> pipe -> socket inside the
 * kernel, never through this process. Bytes the bufferevents already held
 * (a pending "200 Connection established", a TLS hello sent early) go out
 * first, in order.
 *
 * Readiness comes from one edge-triggered event per socket, added once and
 * never re-armed: the tunnel remembers what the kernel last said (readable
 * until a read hits EAGAIN, writable until a write does) and acts on that.
 * Backpressure is simply not reading a side while its direction still holds
 * bytes (in the pipe or the pre-buffer); its unread data waits in the
 * kernel, and the destination's next writable edge resumes the pump. This
 * saves an epoll_ctl per arm/disarm, which dominated short tunnels.
 */
#define PIPE_BYTES (1024 * 1024)
#define SMALL_READ (16 * 1024)
/* Bytes one direction may read per loop turn: the loop also serves other
 * sessions and the seccomp supervisor, which must not wait behind a bulk
 * transfer between two fast peers. */
#define TURN_BYTES (4 * 1024 * 1024)

struct sside {
    int fd;
    struct event *ev;
    int readable; /* the kernel may have bytes or EOF for us (no EAGAIN since) */
    int writable; /* the kernel may take bytes (no EAGAIN since) */
};

struct sdir {
    struct sside *src, *dst;
    int p[2];             /* made on first bulk read: short tunnels never need one */
    size_t inpipe;
    struct evbuffer *pre; /* to dst before anything spliced */
    int spliced;          /* a read filled the small buffer: bulk, so splice from now on */
    int grown;            /* the pipe was enlarged for a bulk transfer */
    int eof, done;
    uint64_t moved;
    uint64_t *count;
};

struct srelay {
    struct pair_link link;
    struct egress_pair *p;
    struct sside s[2]; /* 0: client, 1: upstream */
    struct sdir d[2];  /* 0: client -> upstream, 1: upstream -> client */
};

static void srelay_free(struct srelay *r)
{
    pair_link_del(&r->link);
    for (int i = 0; i < 2; i++) {
        if (r->s[i].ev)
            event_free(r->s[i].ev);
        if (r->s[i].fd >= 0)
            close(r->s[i].fd);
        for (int k = 0; k < 2; k++)
            if (r->d[i].p[k] >= 0)
                close(r->d[i].p[k]);
        if (r->d[i].pre)
            evbuffer_free(r->d[i].pre);
    }
    free(r);
}

static void srelay_close_link(struct pair_link *l)
{
    srelay_free((struct srelay *)l);
}

static int again(void)
{
    return errno == EAGAIN || errno == EWOULDBLOCK;
}

/* Sends what is pending towards dst while dst takes it; -1 on a dead socket. */
static int sdir_flush(struct sdir *d)
{
    while (d->dst->writable && evbuffer_get_length(d->pre)) {
        int w = evbuffer_write(d->pre, d->dst->fd);
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0 && !again())
            return -1;
        if (w <= 0)
            d->dst->writable = 0;
    }
    while (d->dst->writable && !evbuffer_get_length(d->pre) && d->inpipe) {
        ssize_t n = splice(d->p[0], NULL, d->dst->fd, NULL, d->inpipe,
                           SPLICE_F_NONBLOCK | SPLICE_F_MOVE);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && !again())
            return -1;
        if (n <= 0)
            d->dst->writable = 0;
        else
            d->inpipe -= (size_t)n;
    }
    return 0;
}

/* Moves what it can; returns -1 when the tunnel must close, 1 when it
 * stopped for its turn's budget with more to read. */
static int sdir_pump(struct sdir *d)
{
    uint64_t start = d->moved;
    for (;;) {
        if (sdir_flush(d) < 0)
            return -1;
        if (evbuffer_get_length(d->pre) || d->inpipe || d->eof || !d->src->readable)
            break;
        if (d->moved - start >= TURN_BYTES)
            return 1;
        ssize_t n;
        if (!d->spliced) {
            /* Small exchanges (a request, a handshake) are cheaper copied
             * once than with a pipe to set up; bulk switches to splice. */
            char buf[SMALL_READ];
            n = recv(d->src->fd, buf, sizeof buf, 0);
            if (n > 0) {
                d->moved += (uint64_t)n;
                *d->count += (uint64_t)n;
                if ((size_t)n == sizeof buf)
                    d->spliced = 1;
                ssize_t w = 0;
                if (d->dst->writable) {
                    w = send(d->dst->fd, buf, (size_t)n, MSG_NOSIGNAL);
                    if (w < 0 && !again() && errno != EINTR)
                        return -1;
                    if (w < n)
                        d->dst->writable = 0;
                    if (w < 0)
                        w = 0;
                }
                if (w < n && evbuffer_add(d->pre, buf + w, (size_t)(n - w)) < 0)
                    return -1;
                continue;
            }
        } else {
            if (d->p[0] < 0 && pipe2(d->p, O_NONBLOCK | O_CLOEXEC) < 0)
                return -1;
            n = splice(d->src->fd, NULL, d->p[1], NULL, PIPE_BYTES,
                       SPLICE_F_NONBLOCK | SPLICE_F_MOVE);
            if (n > 0) {
                d->inpipe += (size_t)n;
                d->moved += (uint64_t)n;
                *d->count += (uint64_t)n;
                /* A bigger pipe means fewer wakeups once a transfer is bulk;
                 * the default size is fine if the system refuses. */
                if (!d->grown && d->moved >= 256 * 1024) {
                    d->grown = 1;
                    (void)fcntl(d->p[1], F_SETPIPE_SZ, PIPE_BYTES);
                }
                continue;
            }
        }
        if (n == 0)
            d->eof = 1;
        else if (errno == EINTR)
            continue;
        else if (again())
            d->src->readable = 0;
        else
            return -1;
    }
    if (d->eof && !d->done && !evbuffer_get_length(d->pre) && !d->inpipe) {
        /* Half-close: the other side may still talk the other way. */
        if (shutdown(d->dst->fd, SHUT_WR) < 0 && errno != ENOTCONN)
            return -1;
        d->done = 1;
    }
    return 0;
}

/* Pumps both directions; frees the tunnel when both ended or one failed. */
static void srelay_run(struct srelay *r)
{
    int up = sdir_pump(&r->d[0]), down = up < 0 ? -1 : sdir_pump(&r->d[1]);
    if (up < 0 || down < 0 || (r->d[0].done && r->d[1].done)) {
        srelay_free(r);
        return;
    }
    /* Out of budget with bytes waiting: no new edge may come for them, so
     * come back on the next loop turn, after whatever else is ready. */
    if (up || down)
        event_active(r->s[0].ev, EV_TIMEOUT, 0);
}

static void side_cb(evutil_socket_t fd, short what, void *arg)
{
    struct srelay *r = arg;
    struct sside *s = &r->s[r->s[0].fd == fd ? 0 : 1];
    /* Errors and hang-ups come as both: the next read or write reports them. */
    if (what & EV_READ)
        s->readable = 1;
    if (what & EV_WRITE)
        s->writable = 1;
    srelay_run(r);
}

/* Takes the socket out of a bufferevent, keeping what it buffered. */
static int take_fd(struct bufferevent *bev, struct evbuffer *in_to, struct evbuffer *out_to)
{
    int fd = bufferevent_getfd(bev);
    /* A bufferevent's output is frozen at the front (only it may drain it);
     * it is being retired, so lift that before taking the bytes. */
    evbuffer_unfreeze(bufferevent_get_output(bev), 1);
    evbuffer_add_buffer(out_to, bufferevent_get_output(bev));
    evbuffer_add_buffer(in_to, bufferevent_get_input(bev));
    bufferevent_setfd(bev, -1);
    bufferevent_free(bev);
    return fd;
}

static int relay_start_spliced(struct egress_pair *p, struct bufferevent *client,
                               struct bufferevent *upstream)
{
    /* Edge-triggered readiness is what this relay is built on (epoll has it;
     * a host's base on poll or select does not: use the portable relay). */
    if (!(event_base_get_features(p->base) & EV_FEATURE_ET))
        return -1;
    struct srelay *r = calloc(1, sizeof *r);
    if (!r)
        return -1;
    r->p = p;
    r->s[0].fd = r->s[1].fd = -1;
    for (int i = 0; i < 2; i++) {
        r->d[i].p[0] = r->d[i].p[1] = -1;
        r->d[i].pre = evbuffer_new();
        if (!r->d[i].pre) {
            srelay_free(r);
            return -1;
        }
    }
    r->d[0].src = &r->s[0];
    r->d[0].dst = &r->s[1];
    r->d[0].count = &p->bytes_up;
    r->d[1].src = &r->s[1];
    r->d[1].dst = &r->s[0];
    r->d[1].count = &p->bytes_down;
    /* client input and upstream's pending output go up; the rest goes down. */
    r->s[0].fd = take_fd(client, r->d[0].pre, r->d[1].pre);
    r->s[1].fd = take_fd(upstream, r->d[1].pre, r->d[0].pre);
    p->bytes_up += evbuffer_get_length(r->d[0].pre);
    for (int i = 0; i < 2; i++) {
        /* Connected sockets take bytes; an EAGAIN corrects this. Readability
         * is left to the kernel: adding the event reports what is pending. */
        r->s[i].writable = 1;
        r->s[i].ev = event_new(p->base, r->s[i].fd, EV_READ | EV_WRITE | EV_ET | EV_PERSIST,
                               side_cb, r);
        if (!r->s[i].ev || event_add(r->s[i].ev, NULL) < 0) {
            srelay_free(r);
            return 0; /* the bufferevents are gone: nothing to fall back to */
        }
    }
    r->link.close = srelay_close_link;
    pair_link_add(p, &r->link);
    srelay_run(r);
    return 0;
}
#endif

int relay_start(struct egress_pair *p, struct bufferevent *client, struct bufferevent *upstream)
{
#ifdef __linux__
    if (relay_start_spliced(p, client, upstream) == 0)
        return 0;
#endif
    return relay_start_buffered(p, client, upstream);
}
