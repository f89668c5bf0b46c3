#include "egress/dial.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/util.h>

#include "egress/http_parse.h"
#include "egress/pair_int.h"
#include "egress/resolver.h"
#include "egress/rules.h"
#include "util/fd.h"

#define DIAL_MAX_ADDRS 8

struct dial {
    struct egress_pair *p;
    struct egress_target t;
    char target_text[EGRESS_KEY_CAP + 8];
    struct egress_verdict v;
    dial_fn cb;
    void *arg;
    struct resolve_req *rq;
    struct event *timer;
    struct bufferevent *bev; /* once connected */
    int fd;                  /* while connecting, -1 otherwise */
    struct event *wev;       /* connect completion, when it was not immediate */
    struct sockaddr_storage addrs[DIAL_MAX_ADDRS];
    socklen_t lens[DIAL_MAX_ADDRS];
    size_t naddrs, next;
    int last_errno;
};

static void drop_attempt(struct dial *d)
{
    if (d->wev)
        event_free(d->wev);
    d->wev = NULL;
    if (d->fd >= 0)
        close(d->fd);
    d->fd = -1;
}

static void dial_free(struct dial *d)
{
    resolve_cancel(d->rq);
    drop_attempt(d);
    if (d->timer)
        event_free(d->timer);
    if (d->bev)
        bufferevent_free(d->bev);
    free(d);
}

static void finish(struct dial *d, int result, const char *reason)
{
    struct bufferevent *bev = NULL;
    if (result == DIAL_OK) {
        bev = d->bev;
        d->bev = NULL;
        bufferevent_setcb(bev, NULL, NULL, NULL, NULL);
        d->p->allowed++;
    } else if (result == DIAL_DENIED) {
        pair_refuse(d->p, d->target_text, reason);
    }
    dial_fn cb = d->cb;
    void *arg = d->arg;
    d->rq = NULL;
    dial_free(d);
    cb(arg, result, bev, reason);
}

static void try_next(struct dial *d);

static void fail_connect(struct dial *d, int err)
{
    d->last_errno = err;
    drop_attempt(d);
    if (d->bev) {
        bufferevent_free(d->bev);
        d->bev = NULL;
    }
    try_next(d);
}

static void upstream_read_cb(struct bufferevent *bev, void *arg)
{
    struct dial *d = arg;
    struct evbuffer *in = bufferevent_get_input(bev);
    size_t n = evbuffer_get_length(in);
    if (n > HTTP_MAX_HEAD)
        n = HTTP_MAX_HEAD;
    const char *buf = (const char *)evbuffer_pullup(in, (ev_ssize_t)n);
    struct http_head *h = malloc(sizeof *h);
    if (!h) {
        finish(d, DIAL_UNREACHABLE, "out of memory");
        return;
    }
    const char *why = NULL;
    int r = http_parse_response(buf, n, h, &why);
    int status = h->status;
    free(h);
    if (r == 0)
        return;
    if (r < 0) {
        char reason[160];
        snprintf(reason, sizeof reason, "upstream proxy sent a malformed answer (%s)", why);
        finish(d, DIAL_UPSTREAM, reason);
        return;
    }
    evbuffer_drain(in, (size_t)r);
    if (status < 200 || status > 299) {
        char reason[96];
        snprintf(reason, sizeof reason, "upstream proxy answered %d to CONNECT", status);
        finish(d, DIAL_UPSTREAM, reason);
        return;
    }
    finish(d, DIAL_OK, NULL);
}

static void connect_event_cb(struct bufferevent *bev, short what, void *arg);

static void send_upstream_connect(struct dial *d)
{
    const struct sockaddr *sa = (const struct sockaddr *)&d->addrs[d->next - 1];
    char ip[INET6_ADDRSTRLEN];
    uint16_t port;
    if (sa->sa_family == AF_INET) {
        inet_ntop(AF_INET, &((const struct sockaddr_in *)sa)->sin_addr, ip, sizeof ip);
        port = ntohs(((const struct sockaddr_in *)sa)->sin_port);
    } else {
        inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)sa)->sin6_addr, ip, sizeof ip);
        port = ntohs(((const struct sockaddr_in6 *)sa)->sin6_port);
    }
    char hp[INET6_ADDRSTRLEN + 10];
    if (sa->sa_family == AF_INET6)
        snprintf(hp, sizeof hp, "[%s]:%u", ip, (unsigned)port);
    else
        snprintf(hp, sizeof hp, "%s:%u", ip, (unsigned)port);
    struct evbuffer *out = bufferevent_get_output(d->bev);
    int rc = evbuffer_add_printf(out, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n", hp, hp);
    if (rc >= 0 && d->p->up_basic[0])
        rc = evbuffer_add_printf(out, "Proxy-Authorization: Basic %s\r\n", d->p->up_basic);
    if (rc >= 0)
        rc = evbuffer_add(out, "\r\n", 2);
    if (rc < 0) {
        finish(d, DIAL_UNREACHABLE, "out of memory");
        return;
    }
    /* The event callback stays: an upstream that hangs up fails the dial now. */
    bufferevent_setcb(d->bev, upstream_read_cb, NULL, connect_event_cb, d);
    bufferevent_enable(d->bev, EV_READ);
}

static void connect_event_cb(struct bufferevent *bev, short what, void *arg)
{
    struct dial *d = arg;
    /* Only the upstream proxy's CONNECT exchange uses this: it hung up or failed. */
    if (!(what & BEV_EVENT_CONNECTED))
        finish(d, DIAL_UPSTREAM, "upstream proxy closed the connection during CONNECT");
}

/* The TCP connection is up: hand it over (or first ask the upstream proxy). */
static void connected(struct dial *d)
{
    int fd = d->fd;
    d->fd = -1;
    if (d->wev)
        event_free(d->wev);
    d->wev = NULL;
    d->bev = bufferevent_socket_new(d->p->base, fd, BEV_OPT_CLOSE_ON_FREE);
    if (!d->bev) {
        close(fd);
        fail_connect(d, ENOMEM);
        return;
    }
    pair_tune(d->bev);
    if (d->p->has_upstream) {
        send_upstream_connect(d);
        return;
    }
    finish(d, DIAL_OK, NULL);
}

/* 0 when fd's connect finished well, else its error (EINPROGRESS: not yet). */
static int connect_result(int fd)
{
    struct pollfd pf = {fd, POLLOUT, 0};
    int n = poll(&pf, 1, 0);
    if (n < 0)
        return errno;
    if (n == 0)
        return EINPROGRESS;
    int err = 0;
    socklen_t el = sizeof err;
    if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &el) < 0)
        return errno;
    if (err)
        return err;
    /* Writable without an error but hung up: the peer reset or refused. */
    return (pf.revents & (POLLERR | POLLHUP)) ? ECONNRESET : 0;
}

static void connect_ready_cb(evutil_socket_t fd, short what, void *arg)
{
    struct dial *d = arg;
    int err = connect_result(d->fd);
    if (err == EINPROGRESS)
        return; /* spurious: the event stays armed */
    if (err) {
        fail_connect(d, err);
        return;
    }
    connected(d);
}

static void try_next(struct dial *d)
{
    while (d->next < d->naddrs) {
        const struct sockaddr *dst = (const struct sockaddr *)&d->addrs[d->next];
        socklen_t dlen = d->lens[d->next];
        d->next++;
        if (d->p->has_upstream) {
            dst = (const struct sockaddr *)&d->p->up_addr;
            dlen = d->p->up_len;
        }
        /* Our own socket so it is close-on-exec: sandboxes are forked from this process. */
        int fd = fd_above_stdio(socket(dst->sa_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
        if (fd < 0) {
            d->last_errno = errno;
            continue;
        }
        d->fd = fd;
        int rc = connect(fd, dst, dlen);
        int err = rc == 0 ? 0 : errno;
        /* On loopback the handshake completes inside connect() even when it
         * says EINPROGRESS: look before asking the loop, saving an
         * epoll_ctl pair and a loop turn per connection. */
        if (err == EINPROGRESS)
            err = connect_result(fd);
        if (err == 0) {
            connected(d);
            return;
        }
        if (err != EINPROGRESS) {
            drop_attempt(d);
            d->last_errno = err;
            continue;
        }
        d->wev = event_new(d->p->base, fd, EV_WRITE | EV_PERSIST, connect_ready_cb, d);
        if (!d->wev || event_add(d->wev, NULL) < 0) {
            drop_attempt(d);
            d->last_errno = ENOMEM;
            continue;
        }
        return;
    }
    char reason[400];
    int e = d->last_errno;
    const char *via = d->p->has_upstream ? " (through the upstream proxy)" : "";
    snprintf(reason, sizeof reason, "cannot connect to %s%s: %s", d->target_text, via,
             strerror(e ? e : EHOSTUNREACH));
    finish(d, e == ECONNREFUSED ? DIAL_REFUSED : DIAL_UNREACHABLE, reason);
}

static void set_port(struct sockaddr_storage *ss, uint16_t port)
{
    if (ss->ss_family == AF_INET)
        ((struct sockaddr_in *)ss)->sin_port = htons(port);
    else
        ((struct sockaddr_in6 *)ss)->sin6_port = htons(port);
}

/* Keeps the addresses that pass the rules; refuses when none does. */
static void addresses_ready(struct dial *d, struct evutil_addrinfo *ai)
{
    char first_refusal[320] = "";
    size_t seen = 0;
    for (struct evutil_addrinfo *a = ai; a; a = a->ai_next) {
        if (a->ai_family != AF_INET && a->ai_family != AF_INET6)
            continue;
        if (a->ai_addrlen > sizeof(struct sockaddr_storage))
            continue;
        seen++;
        char why[320];
        const struct egress_hostaddrs *own = NULL;
        if (egress_addr_needs_own(a->ai_addr) && !(own = hostaddrs_get(&d->p->own))) {
            /* Unknown own addresses: this one might be one of them. */
            snprintf(why, sizeof why, "cannot read this host's own addresses to judge %s: %s",
                     d->target_text, strerror(errno));
            if (!first_refusal[0])
                snprintf(first_refusal, sizeof first_refusal, "%s", why);
            continue;
        }
        if (!egress_rules_check_addr(d->p->rules, &d->v, a->ai_addr, d->t.port, own, why,
                                     sizeof why)) {
            if (!first_refusal[0])
                snprintf(first_refusal, sizeof first_refusal, "%s", why);
            continue;
        }
        if (d->naddrs == DIAL_MAX_ADDRS)
            continue;
        int dup = 0;
        for (size_t i = 0; i < d->naddrs; i++)
            if (d->lens[i] == a->ai_addrlen && memcmp(&d->addrs[i], a->ai_addr, a->ai_addrlen) == 0)
                dup = 1;
        if (dup)
            continue;
        memcpy(&d->addrs[d->naddrs], a->ai_addr, a->ai_addrlen);
        d->lens[d->naddrs] = (socklen_t)a->ai_addrlen;
        set_port(&d->addrs[d->naddrs], d->t.port);
        d->naddrs++;
    }
    if (d->naddrs == 0) {
        if (first_refusal[0]) {
            finish(d, DIAL_DENIED, first_refusal);
        } else {
            char reason[300];
            snprintf(reason, sizeof reason, "%s has no IPv4 or IPv6 address", d->t.host);
            (void)seen;
            finish(d, DIAL_NOHOST, reason);
        }
        return;
    }
    try_next(d);
}

static void resolved_cb(void *arg, int err, struct evutil_addrinfo *ai)
{
    struct dial *d = arg;
    d->rq = NULL;
    if (err) {
        if (ai)
            evutil_freeaddrinfo(ai);
        char reason[360];
        snprintf(reason, sizeof reason, "cannot resolve %s: %s", d->t.host,
                 evutil_gai_strerror(err));
        finish(d, DIAL_NOHOST, reason);
        return;
    }
    addresses_ready(d, ai);
    if (ai)
        evutil_freeaddrinfo(ai);
}

static void timeout_cb(evutil_socket_t fd, short what, void *arg)
{
    struct dial *d = arg;
    char reason[300];
    snprintf(reason, sizeof reason, "timed out %s %s",
             d->rq ? "resolving" : "connecting to", d->target_text);
    finish(d, DIAL_UNREACHABLE, reason);
}

int dial_start(struct egress_pair *p, const struct egress_target *t, dial_fn cb, void *arg,
               struct dial **out, char *reason, size_t len)
{
    *out = NULL;
    struct egress_verdict v;
    char text[EGRESS_KEY_CAP + 8];
    egress_target_format(t, text, sizeof text);
    if (!egress_rules_judge(p->rules, t, &v)) {
        snprintf(reason, len, "%s", v.reason);
        pair_refuse(p, text, v.reason);
        return DIAL_DENIED;
    }
    struct dial *d = calloc(1, sizeof *d);
    if (!d || !(d->timer = evtimer_new(p->base, timeout_cb, d))) {
        free(d);
        snprintf(reason, len, "out of memory");
        return DIAL_UNREACHABLE;
    }
    d->fd = -1;
    d->p = p;
    d->t = *t;
    d->v = v;
    d->cb = cb;
    d->arg = arg;
    memcpy(d->target_text, text, sizeof text);
    evtimer_add(d->timer, &p->dial_tv);
    /* Literal addresses skip the resolver but still get the address checks,
     * which run from the loop like every other outcome. */
    d->rq = resolve_start(p->resolver, t->host, resolved_cb, d);
    if (!d->rq) {
        dial_free(d);
        snprintf(reason, len, "out of memory");
        return DIAL_UNREACHABLE;
    }
    *out = d;
    return DIAL_OK;
}

void dial_cancel(struct dial *d)
{
    if (d)
        dial_free(d);
}
