#include "egress/egress.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/listener.h>

#include "ccsandbox/ccsandbox.h"
#include "egress/pair_int.h"
#include "egress/upstream.h"
#include "spec/spec.h"
#include "util/fd.h"
#include "egress/resolver.h"
#include "util/err.h"

void pair_link_add(struct egress_pair *p, struct pair_link *l)
{
    l->next = p->conns.next;
    l->prev = &p->conns;
    p->conns.next->prev = l;
    p->conns.next = l;
}

void pair_link_del(struct pair_link *l)
{
    if (!l->next)
        return;
    l->prev->next = l->next;
    l->next->prev = l->prev;
    l->next = l->prev = NULL;
}

void pair_refuse(struct egress_pair *p, const char *target, const char *reason)
{
    p->refused++;
    if (p->on_violation)
        p->on_violation(p->ud, target, reason);
}

int pair_secret_eq(const char *a, size_t an, const char *b)
{
    size_t bn = strlen(b);
    unsigned char diff = an != bn;
    for (size_t i = 0; i < bn; i++)
        diff |= (unsigned char)((i < an ? a[i] : 0) ^ b[i]);
    return diff == 0;
}

int pair_read_now(struct bufferevent *bev)
{
    /* Accepted with TCP_DEFER_ACCEPT, the request is usually already here:
     * read it now rather than after another trip through the loop. */
    int n = evbuffer_read(bufferevent_get_input(bev), bufferevent_getfd(bev), 16384);
    return n > 0;
}

void pair_tune(struct bufferevent *bev)
{
    int one = 1;
    /* Best effort: a non-TCP socket (tests with socketpairs) just ignores it. */
    (void)setsockopt(bufferevent_getfd(bev), IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    bufferevent_set_max_single_read(bev, 256 * 1024);
    bufferevent_set_max_single_write(bev, 256 * 1024);
}

static void base64(const unsigned char *in, size_t n, char *out)
{
    static const char tab[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    size_t o = 0;
    for (size_t i = 0; i < n; i += 3) {
        uint32_t v = (uint32_t)in[i] << 16;
        if (i + 1 < n)
            v |= (uint32_t)in[i + 1] << 8;
        if (i + 2 < n)
            v |= in[i + 2];
        out[o++] = tab[(v >> 18) & 63];
        out[o++] = tab[(v >> 12) & 63];
        out[o++] = i + 1 < n ? tab[(v >> 6) & 63] : '=';
        out[o++] = i + 2 < n ? tab[v & 63] : '=';
    }
    out[o] = '\0';
}

/* Accepted sockets never stay on 0-2 (a host that closed its standard
 * streams); fd_above_stdio closes the socket if it cannot move it. */
static void accept_http(struct evconnlistener *l, evutil_socket_t fd, struct sockaddr *sa,
                        int salen, void *arg)
{
    fd = fd_above_stdio(fd);
    if (fd >= 0)
        http_proxy_accept(arg, fd);
}

static void accept_socks(struct evconnlistener *l, evutil_socket_t fd, struct sockaddr *sa,
                         int salen, void *arg)
{
    fd = fd_above_stdio(fd);
    if (fd >= 0)
        socks5_accept(arg, fd);
}

static uint16_t local_port(int fd)
{
    struct sockaddr_storage ss;
    socklen_t sl = sizeof ss;
    if (getsockname(fd, (struct sockaddr *)&ss, &sl) < 0)
        return 0;
    if (ss.ss_family == AF_INET)
        return ntohs(((struct sockaddr_in *)&ss)->sin_port);
    if (ss.ss_family == AF_INET6)
        return ntohs(((struct sockaddr_in6 *)&ss)->sin6_port);
    return 0;
}

int pair_is_loopback(const struct sockaddr *sa)
{
    static const uint8_t mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
    if (sa->sa_family == AF_INET)
        return (ntohl(((const struct sockaddr_in *)sa)->sin_addr.s_addr) >> 24) == 127;
    if (sa->sa_family != AF_INET6)
        return 0;
    const struct in6_addr *a = &((const struct sockaddr_in6 *)sa)->sin6_addr;
    return IN6_IS_ADDR_LOOPBACK(a) || (memcmp(a->s6_addr, mapped, 12) == 0 && a->s6_addr[12] == 127);
}

/*
 * The sandbox's leg of every connection is loopback (inside the sandbox's
 * network namespace, or the host's 127.0.0.1). A loopback link never loses
 * or reorders, so a model-based congestion control buys nothing there, and
 * a paced one (BBR, a common system default) costs a pacing timer and a
 * delayed send per burst: measured here, a bulk download through a tunnel
 * ran at about 0.6x direct with BBR on this leg and about 0.8-0.9x with
 * Reno. Reno is the one algorithm every kernel lets any user pick, and
 * accepted sockets inherit the listener's choice. The upstream leg keeps
 * the system's default: that one crosses real networks. Best effort: a
 * kernel that refuses leaves the default, which is only slower.
 */
void pair_tune_local_listener(int fd)
{
#ifdef TCP_CONGESTION
    struct sockaddr_storage ss;
    socklen_t sl = sizeof ss;
    if (getsockname(fd, (struct sockaddr *)&ss, &sl) < 0 || !pair_is_loopback((struct sockaddr *)&ss))
        return;
    static const char reno[] = "reno";
    (void)setsockopt(fd, IPPROTO_TCP, TCP_CONGESTION, reno, sizeof reno - 1);
#else
    (void)fd; /* no per-socket choice here (macOS): the system's algorithm */
#endif
}

static int make_listener(struct egress_pair *p, int given, evconnlistener_cb cb,
                         struct evconnlistener **out, uint16_t *port, char *err, size_t errlen)
{
    unsigned flags = LEV_OPT_CLOSE_ON_FREE | LEV_OPT_CLOSE_ON_EXEC;
    if (given >= 0) {
        /* Our own duplicate, so a failure leaves the caller's fd as it was. */
        int fd = fcntl(given, F_DUPFD_CLOEXEC, 3);
        if (fd < 0)
            return errf(err, errlen, CCSB_E_IO, "egress: listening fd %d: %s", given,
                        strerror(errno));
        int fl = fcntl(fd, F_GETFL);
        if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0) {
            int e = errno;
            close(fd);
            return errf(err, errlen, CCSB_E_IO, "egress: listening fd %d: %s", given,
                        strerror(e));
        }
        /* Clients speak first (HTTP and SOCKS alike): wake us when they have. */
        int one = 1;
        (void)setsockopt(fd, IPPROTO_TCP, TCP_DEFER_ACCEPT, &one, sizeof one);
        pair_tune_local_listener(fd);
        *out = evconnlistener_new(p->base, cb, p, flags, -1, fd);
        if (!*out) {
            close(fd);
            return errf(err, errlen, CCSB_E_IO, "egress: cannot accept on fd %d", given);
        }
        *port = local_port(fd);
        return 0;
    }
    struct sockaddr_in sin;
    memset(&sin, 0, sizeof sin);
    sin.sin_family = AF_INET;
    sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    flags |= LEV_OPT_DEFERRED_ACCEPT;
    *out = evconnlistener_new_bind(p->base, cb, p, flags, 128, (struct sockaddr *)&sin,
                                   sizeof sin);
    if (!*out)
        return errf(err, errlen, CCSB_E_IO, "egress: cannot listen on 127.0.0.1: %s",
                    strerror(errno));
    pair_tune_local_listener(evconnlistener_get_fd(*out));
    *port = local_port(evconnlistener_get_fd(*out));
    return 0;
}

/* "http://[user:pass@]host:port[/]" resolved once, now (launch time). */
static int parse_upstream(struct egress_pair *p, const char *url, char *err, size_t errlen)
{
    struct egress_upstream up;
    char why[128];
    if (egress_upstream_parse(url, &up, why, sizeof why) < 0)
        return errf(err, errlen, CCSB_E_INVAL, "upstream proxy: %s", why);
    if (up.userinfo[0])
        base64((const unsigned char *)up.userinfo, strlen(up.userinfo), p->up_basic);
    struct addrinfo hints, *ai = NULL;
    memset(&hints, 0, sizeof hints);
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_NUMERICSERV;
    int rc = getaddrinfo(up.host, up.port, &hints, &ai);
    if (rc != 0 || !ai)
        return errf(err, errlen, CCSB_E_INVAL, "upstream proxy %s:%s: %s", up.host, up.port,
                    gai_strerror(rc));
    memcpy(&p->up_addr, ai->ai_addr, ai->ai_addrlen);
    p->up_len = ai->ai_addrlen;
    freeaddrinfo(ai);
    p->has_upstream = 1;
    return 0;
}

static void ms_to_tv(unsigned ms, unsigned dflt, struct timeval *tv)
{
    if (!ms)
        ms = dflt;
    tv->tv_sec = ms / 1000;
    tv->tv_usec = (ms % 1000) * 1000;
}

int egress_pair_prepare(struct event_base *base, const struct ccsb_spec *spec,
                        egress_violation_fn on_violation, void *ud,
                        const struct egress_opts *opts, struct egress_pair **out, char *err,
                        size_t errlen)
{
    struct egress_opts dflt = {NULL, NULL, NULL, -1, 0, 0};
    if (!opts)
        opts = &dflt;
    *out = NULL;
    if (!base || !spec)
        return errf(err, errlen, CCSB_E_INVAL, "egress: no event base or spec");
    struct egress_pair *p = calloc(1, sizeof *p);
    if (!p)
        return errf(err, errlen, CCSB_E_NOMEM, "out of memory");
    p->base = base;
    p->on_violation = on_violation;
    p->ud = ud;
    p->conns.next = p->conns.prev = &p->conns;
    ms_to_tv(opts->dial_timeout_ms, 30000, &p->dial_tv);
    ms_to_tv(opts->idle_timeout_ms, 60000, &p->idle_tv);

    hostaddrs_cache_init(&p->own);

    int rc = egress_rules_from_spec(spec, &p->rules, err, errlen);
    /* The option (tests) or the spec's upstreamProxy. */
    const char *up = opts->upstream_proxy ? opts->upstream_proxy : spec->upstream_proxy;
    if (rc == 0 && up)
        rc = parse_upstream(p, up, err, errlen);
    if (rc == 0 && !(p->resolver = resolver_new(base, opts->hosts_file, opts->resolv_conf, err, errlen)))
        rc = CCSB_E_IO;
    if (rc == 0) {
        unsigned char rnd[18];
        if (getrandom(rnd, sizeof rnd, 0) != (ssize_t)sizeof rnd) {
            rc = errf(err, errlen, CCSB_E_IO, "egress: getrandom: %s", strerror(errno));
        } else {
            snprintf(p->user, sizeof p->user, "ccsb");
            for (size_t i = 0; i < sizeof rnd; i++)
                snprintf(p->pass + 2 * i, 3, "%02x", rnd[i]);
            snprintf(p->cred, sizeof p->cred, "%s:%s", p->user, p->pass);
            base64((const unsigned char *)p->cred, strlen(p->cred), p->basic);
        }
    }
    if (rc < 0) {
        egress_pair_free(p);
        return rc;
    }
    p->require_auth = opts->require_auth;
    *out = p;
    return 0;
}

int egress_pair_listen(struct egress_pair *p, int http_listen_fd, int socks_listen_fd,
                       char *err, size_t errlen)
{
    if (p->http_l || p->socks_l)
        return errf(err, errlen, CCSB_E_STATE, "egress: the proxies listen already");
    /* On failure the caller's fds must come back unclosed. */
    int rc = make_listener(p, http_listen_fd, accept_http, &p->http_l, &p->http_port, err,
                           errlen);
    if (rc == 0)
        rc = make_listener(p, socks_listen_fd, accept_socks, &p->socks_l, &p->socks_port, err,
                           errlen);
    if (rc < 0) {
        if (p->http_l)
            evconnlistener_free(p->http_l);
        p->http_l = NULL;
        p->http_port = 0;
        return rc;
    }
    if (http_listen_fd >= 0)
        close(http_listen_fd);
    if (socks_listen_fd >= 0)
        close(socks_listen_fd);
    p->http_auth = p->require_auth >= 0 ? p->require_auth : http_listen_fd < 0;
    p->socks_auth = p->require_auth >= 0 ? p->require_auth : socks_listen_fd < 0;
    return 0;
}

int egress_pair_new_opts(struct event_base *base, const struct ccsb_spec *spec,
                         int http_listen_fd, int socks_listen_fd,
                         egress_violation_fn on_violation, void *ud,
                         const struct egress_opts *opts, struct egress_pair **out, char *err,
                         size_t errlen)
{
    int rc = egress_pair_prepare(base, spec, on_violation, ud, opts, out, err, errlen);
    if (rc == 0 && (rc = egress_pair_listen(*out, http_listen_fd, socks_listen_fd, err,
                                            errlen)) < 0) {
        egress_pair_free(*out);
        *out = NULL;
    }
    return rc;
}

int egress_pair_new(struct event_base *base, const struct ccsb_spec *spec, int http_listen_fd,
                    int socks_listen_fd, egress_violation_fn on_violation, void *ud,
                    struct egress_pair **out, char *err, size_t errlen)
{
    return egress_pair_new_opts(base, spec, http_listen_fd, socks_listen_fd, on_violation, ud,
                                NULL, out, err, errlen);
}

uint16_t egress_pair_http_port(const struct egress_pair *p)
{
    return p->http_port;
}

uint16_t egress_pair_socks_port(const struct egress_pair *p)
{
    return p->socks_port;
}

const char *egress_pair_credential(const struct egress_pair *p)
{
    return (p->http_auth || p->socks_auth) ? p->cred : NULL;
}

char *egress_proxy_url(const char *scheme, const char *cred, uint16_t port)
{
    char *url = NULL;
    if (asprintf(&url, "%s://%s%s127.0.0.1:%u", scheme, cred ? cred : "", cred ? "@" : "",
                 (unsigned)port) < 0)
        return NULL;
    return url;
}

char *egress_pair_proxy_url(const struct egress_pair *p, const char *scheme)
{
    int http = strcmp(scheme, "http") == 0;
    if (!http && strcmp(scheme, "socks5h") != 0 && strcmp(scheme, "socks5") != 0)
        return NULL;
    int auth = http ? p->http_auth : p->socks_auth;
    return egress_proxy_url(scheme, auth ? p->cred : NULL, http ? p->http_port : p->socks_port);
}

void egress_pair_stats(const struct egress_pair *p, json_t *obj)
{
    json_object_set_new(obj, "connectionsAllowed", json_integer((json_int_t)p->allowed));
    json_object_set_new(obj, "connectionsRefused", json_integer((json_int_t)p->refused));
    json_object_set_new(obj, "bytesUp", json_integer((json_int_t)p->bytes_up));
    json_object_set_new(obj, "bytesDown", json_integer((json_int_t)p->bytes_down));
    json_object_set_new(obj, "httpProxyPort", json_integer(p->http_port));
    json_object_set_new(obj, "socksProxyPort", json_integer(p->socks_port));
}

void egress_pair_free(struct egress_pair *p)
{
    if (!p)
        return;
    if (p->http_l)
        evconnlistener_free(p->http_l);
    if (p->socks_l)
        evconnlistener_free(p->socks_l);
    while (p->conns.next && p->conns.next != &p->conns) {
        struct pair_link *l = p->conns.next;
        l->close(l);
    }
    resolver_free(p->resolver);
    egress_rules_free(p->rules);
    hostaddrs_cache_clear(&p->own);
    free(p);
}
