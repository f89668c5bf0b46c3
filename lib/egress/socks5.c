/*
 * The SOCKS5 proxy (RFC 1928): CONNECT with a name, IPv4 or IPv6; no-auth,
 * or RFC 1929 username/password when the pair requires its credential.
 * SOCKS4/4a gets a clear refusal.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>

#include "egress/dial.h"
#include "egress/pair_int.h"
#include "egress/relay.h"
#include "egress/socks_parse.h"

#define S_GREET 0
#define S_AUTH 1
#define S_REQ 2
#define S_DIAL 3
#define S_CLOSING 4

/* Longest handshake message: a request with a 255-byte name, or SOCKS4a. */
#define SOCKS_MAX_MSG 600

struct sconn {
    struct pair_link link;
    struct egress_pair *p;
    struct bufferevent *c;
    struct dial *dial;
    int state;
    char target[EGRESS_KEY_CAP + 8];
};

static void sconn_free(struct sconn *s)
{
    pair_link_del(&s->link);
    dial_cancel(s->dial);
    if (s->c)
        bufferevent_free(s->c);
    free(s);
}

static void sconn_close_link(struct pair_link *l)
{
    sconn_free((struct sconn *)l);
}

/* Sends the last bytes, then closes once they are out. */
static void finish_with(struct sconn *s, const void *msg, size_t n)
{
    evbuffer_add(bufferevent_get_output(s->c), msg, n);
    s->state = S_CLOSING;
    bufferevent_disable(s->c, EV_READ);
    bufferevent_set_timeouts(s->c, NULL, &s->p->idle_tv);
}

static void reply_code(struct sconn *s, uint8_t rep)
{
    const uint8_t msg[10] = {5, rep, 0, 1, 0, 0, 0, 0, 0, 0};
    finish_with(s, msg, sizeof msg);
}

static uint8_t socks_code(int result)
{
    switch (result) {
    case DIAL_DENIED: return SOCKS5_REP_NOT_ALLOWED;
    case DIAL_NOHOST: return SOCKS5_REP_HOST_UNREACHABLE;
    case DIAL_REFUSED: return SOCKS5_REP_REFUSED;
    case DIAL_UPSTREAM: return SOCKS5_REP_REFUSED;
    default: return SOCKS5_REP_HOST_UNREACHABLE;
    }
}

static void dial_done(void *arg, int result, struct bufferevent *bev, const char *reason)
{
    struct sconn *s = arg;
    s->dial = NULL;
    if (result != DIAL_OK) {
        reply_code(s, socks_code(result));
        return;
    }
    /* Success carries the address we connected from, as RFC 1928 asks. */
    uint8_t msg[22] = {5, 0, 0};
    size_t n;
    struct sockaddr_storage ss;
    socklen_t sl = sizeof ss;
    memset(&ss, 0, sizeof ss);
    if (getsockname(bufferevent_getfd(bev), (struct sockaddr *)&ss, &sl) == 0 &&
        ss.ss_family == AF_INET6) {
        const struct sockaddr_in6 *s6 = (const struct sockaddr_in6 *)&ss;
        msg[3] = SOCKS5_ATYP_IPV6;
        memcpy(msg + 4, &s6->sin6_addr, 16);
        memcpy(msg + 20, &s6->sin6_port, 2);
        n = 22;
    } else {
        const struct sockaddr_in *s4 = (const struct sockaddr_in *)&ss;
        msg[3] = SOCKS5_ATYP_IPV4;
        if (ss.ss_family == AF_INET) {
            memcpy(msg + 4, &s4->sin_addr, 4);
            memcpy(msg + 8, &s4->sin_port, 2);
        }
        n = 10;
    }
    /* The relay sends it: no write watch for a socket about to change hands. */
    bufferevent_disable(s->c, EV_WRITE);
    evbuffer_add(bufferevent_get_output(s->c), msg, n);
    struct egress_pair *p = s->p;
    struct bufferevent *c = s->c;
    s->c = NULL;
    sconn_free(s);
    relay_start(p, c, bev);
}

static void socks4(struct sconn *s, const uint8_t *buf, size_t n)
{
    struct socks4_request r;
    int used = socks4_parse_request(buf, n, &r);
    if (used == 0)
        return;
    static const uint8_t rejected[8] = {0, 0x5b, 0, 0, 0, 0, 0, 0};
    if (used > 0) {
        char t[300];
        if (r.host[0])
            snprintf(t, sizeof t, "%.255s:%u", r.host, (unsigned)r.port);
        else
            snprintf(t, sizeof t, "%u.%u.%u.%u:%u", r.ip[0], r.ip[1], r.ip[2], r.ip[3],
                     (unsigned)r.port);
        pair_refuse(s->p, t, "SOCKS4/4a is not supported; use SOCKS5 (socks5h://)");
    }
    finish_with(s, rejected, sizeof rejected);
}

static void request(struct sconn *s, const struct socks5_request *r)
{
    struct egress_target t;
    char why[320];
    char host[INET6_ADDRSTRLEN + 2];
    int rc;
    if (r->atyp == SOCKS5_ATYP_DOMAIN) {
        rc = egress_target_from_host(r->host, strlen(r->host), r->port, &t, why, sizeof why);
    } else {
        if (r->atyp == SOCKS5_ATYP_IPV4)
            inet_ntop(AF_INET, r->addr, host, sizeof host);
        else
            inet_ntop(AF_INET6, r->addr, host, sizeof host);
        rc = egress_target_from_host(host, strlen(host), r->port, &t, why, sizeof why);
    }
    if (rc < 0 || r->port == 0) {
        reply_code(s, SOCKS5_REP_HOST_UNREACHABLE);
        return;
    }
    egress_target_format(&t, s->target, sizeof s->target);
    if (r->cmd != SOCKS5_CMD_CONNECT) {
        char reason[64];
        snprintf(reason, sizeof reason, "SOCKS5 command %s is not supported",
                 r->cmd == 2 ? "BIND" : r->cmd == 3 ? "UDP ASSOCIATE" : "(unknown)");
        pair_refuse(s->p, s->target, reason);
        reply_code(s, SOCKS5_REP_CMD_UNSUPPORTED);
        return;
    }
    s->state = S_DIAL;
    bufferevent_disable(s->c, EV_READ);
    bufferevent_set_timeouts(s->c, NULL, NULL);
    char reason[320];
    int dr = dial_start(s->p, &t, dial_done, s, &s->dial, reason, sizeof reason);
    if (dr != DIAL_OK)
        reply_code(s, socks_code(dr));
}

static void read_cb(struct bufferevent *bev, void *arg)
{
    struct sconn *s = arg;
    struct evbuffer *in = bufferevent_get_input(bev);
    while (s->state == S_GREET || s->state == S_AUTH || s->state == S_REQ) {
        size_t n = evbuffer_get_length(in);
        if (n == 0)
            return;
        if (n > SOCKS_MAX_MSG)
            n = SOCKS_MAX_MSG;
        const uint8_t *buf = evbuffer_pullup(in, (ev_ssize_t)n);
        int used;
        if (s->state == S_GREET) {
            if (buf[0] == 4) {
                socks4(s, buf, n);
                return;
            }
            int none, userpass;
            used = socks5_parse_greeting(buf, n, &none, &userpass);
            if (used < 0) {
                sconn_free(s);
                return;
            }
            if (used == 0)
                break;
            evbuffer_drain(in, (size_t)used);
            uint8_t method = s->p->socks_auth ? (userpass ? SOCKS5_AUTH_USERPASS
                                                          : SOCKS5_AUTH_NO_ACCEPTABLE)
                                              : (none ? SOCKS5_AUTH_NONE
                                                      : SOCKS5_AUTH_NO_ACCEPTABLE);
            const uint8_t msg[2] = {5, method};
            if (method == SOCKS5_AUTH_NO_ACCEPTABLE) {
                finish_with(s, msg, 2);
                return;
            }
            evbuffer_add(bufferevent_get_output(bev), msg, 2);
            s->state = method == SOCKS5_AUTH_USERPASS ? S_AUTH : S_REQ;
        } else if (s->state == S_AUTH) {
            char user[256], pass[256];
            used = socks5_parse_userpass(buf, n, user, pass);
            if (used < 0) {
                sconn_free(s);
                return;
            }
            if (used == 0)
                break;
            evbuffer_drain(in, (size_t)used);
            int ok = pair_secret_eq(user, strlen(user), s->p->user) &
                     pair_secret_eq(pass, strlen(pass), s->p->pass);
            const uint8_t msg[2] = {1, ok ? 0 : 1};
            if (!ok) {
                finish_with(s, msg, 2);
                return;
            }
            evbuffer_add(bufferevent_get_output(bev), msg, 2);
            s->state = S_REQ;
        } else {
            struct socks5_request r;
            uint8_t rep;
            used = socks5_parse_request(buf, n, &r, &rep);
            if (used < 0) {
                reply_code(s, rep);
                return;
            }
            if (used == 0)
                break;
            evbuffer_drain(in, (size_t)used);
            request(s, &r);
            return;
        }
    }
    if (evbuffer_get_length(in) >= SOCKS_MAX_MSG)
        sconn_free(s); /* no handshake message is this long */
}

static void write_cb(struct bufferevent *bev, void *arg)
{
    struct sconn *s = arg;
    if (s->state == S_CLOSING && evbuffer_get_length(bufferevent_get_output(bev)) == 0)
        sconn_free(s);
}

static void event_cb(struct bufferevent *bev, short what, void *arg)
{
    sconn_free(arg);
}

void socks5_accept(struct egress_pair *p, int fd)
{
    struct sconn *s = calloc(1, sizeof *s);
    struct bufferevent *c = bufferevent_socket_new(p->base, fd, BEV_OPT_CLOSE_ON_FREE);
    if (!s || !c) {
        free(s);
        if (c)
            bufferevent_free(c);
        else
            evutil_closesocket(fd);
        return;
    }
    s->p = p;
    s->c = c;
    s->state = S_GREET;
    s->link.close = sconn_close_link;
    pair_link_add(p, &s->link);
    pair_tune(c);
    bufferevent_setcb(c, read_cb, write_cb, event_cb, s);
    bufferevent_set_timeouts(c, &p->idle_tv, NULL);
    /* Writing is on by default and watched only while output waits. */
    bufferevent_enable(c, EV_READ);
    if (pair_read_now(c))
        read_cb(c, s);
}
