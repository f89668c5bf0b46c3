/*
 * The HTTP proxy: CONNECT tunnels and absolute-URI forwarding with
 * keep-alive towards the sandbox. Each forwarded request gets its own
 * upstream connection (sent "Connection: close"), so one client connection
 * may visit several hosts, each judged on its own.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>

#include "egress/dial.h"
#include "egress/http_parse.h"
#include "egress/pair_int.h"
#include "egress/relay.h"

#define H_HEAD 0    /* waiting for a request head */
#define H_DIAL 1    /* resolving / connecting */
#define H_FORWARD 2 /* request body up, response down */
#define H_CLOSING 3 /* flushing a last answer, then close */

#define R_HEAD 0
#define R_BODY 1
#define R_DONE 2

#define HTTP_HIGH (1024 * 1024)

struct hconn {
    struct pair_link link;
    struct egress_pair *p;
    struct bufferevent *c; /* the sandbox's connection */
    struct bufferevent *u; /* upstream, while forwarding */
    struct dial *dial;
    int state;
    int is_connect;
    int keep_alive;
    int client_minor;
    char target[EGRESS_KEY_CAP + 8];
    struct evbuffer *head_out; /* rewritten request head, sent once connected */

    int req_body;
    uint64_t req_left;
    struct http_chunked req_ch;
    int req_done;
    int req_head;              /* the request was HEAD */

    int resp;                  /* R_* */
    int resp_body;
    uint64_t resp_left;
    struct http_chunked resp_ch;
    int resp_started;          /* bytes of a response went to the client */
};

static void client_read_cb(struct bufferevent *bev, void *arg);
static void client_write_cb(struct bufferevent *bev, void *arg);
static void client_event_cb(struct bufferevent *bev, short what, void *arg);

static void hconn_free(struct hconn *h)
{
    pair_link_del(&h->link);
    dial_cancel(h->dial);
    if (h->u)
        bufferevent_free(h->u);
    if (h->c)
        bufferevent_free(h->c);
    if (h->head_out)
        evbuffer_free(h->head_out);
    free(h);
}

static void hconn_close_link(struct pair_link *l)
{
    hconn_free((struct hconn *)l);
}

/* No more requests on this connection: drop the upstream, flush what the
 * client is owed, then close. */
static void close_after_flush(struct hconn *h)
{
    if (h->u) {
        bufferevent_free(h->u);
        h->u = NULL;
    }
    h->state = H_CLOSING;
    bufferevent_disable(h->c, EV_READ);
    /* A client that stops reading must not keep us forever. */
    bufferevent_set_timeouts(h->c, NULL, &h->p->idle_tv);
    bufferevent_enable(h->c, EV_WRITE);
}

/* A final answer from the proxy itself; the connection closes after it. */
static void reply(struct hconn *h, int code, const char *phrase, const char *extra_headers,
                  const char *body)
{
    struct evbuffer *out = bufferevent_get_output(h->c);
    evbuffer_add_printf(out,
                        "HTTP/1.1 %d %s\r\nContent-Type: text/plain; charset=utf-8\r\n"
                        "Content-Length: %zu\r\n%sConnection: close\r\n\r\n%s",
                        code, phrase, strlen(body), extra_headers ? extra_headers : "", body);
    close_after_flush(h);
}

static void reply_refused(struct hconn *h, const char *reason)
{
    char body[700];
    snprintf(body, sizeof body, "ccsandbox egress proxy: connection to %s refused: %s\n",
             h->target, reason);
    reply(h, 403, "Forbidden", NULL, body);
}

static void reply_gateway(struct hconn *h, int code, const char *what, const char *why)
{
    char body[700];
    snprintf(body, sizeof body, "ccsandbox egress proxy: %s%s%s\n", what, why ? ": " : "",
             why ? why : "");
    reply(h, code, code == 504 ? "Gateway Timeout" : "Bad Gateway", NULL, body);
}

static void bad_request(struct hconn *h, const char *why)
{
    char body[500];
    snprintf(body, sizeof body, "ccsandbox egress proxy: bad request: %s\n", why);
    reply(h, 400, "Bad Request", NULL, body);
}

static void closing_check(struct hconn *h)
{
    if (h->state == H_CLOSING && evbuffer_get_length(bufferevent_get_output(h->c)) == 0)
        hconn_free(h);
}

/* ---- response: upstream -> client ---------------------------------- */

static void upstream_read_cb(struct bufferevent *bev, void *arg);
static void upstream_event_cb(struct bufferevent *bev, short what, void *arg);
static void upstream_write_cb(struct bufferevent *bev, void *arg);
static int process_client(struct hconn *h);

static void response_done(struct hconn *h)
{
    h->resp = R_DONE;
    bufferevent_free(h->u);
    h->u = NULL;
    if (!h->req_done || !h->keep_alive) {
        close_after_flush(h);
        closing_check(h);
        return;
    }
    h->state = H_HEAD;
    bufferevent_set_timeouts(h->c, &h->p->idle_tv, NULL);
    bufferevent_enable(h->c, EV_READ);
    (void)process_client(h);
}

/* Moves framed body bytes from src to dst; returns 1 when the body ended, -1 on bad chunking. */
static int move_body(struct evbuffer *src, struct evbuffer *dst, int framing, uint64_t *left,
                     struct http_chunked *ch, uint64_t *count)
{
    size_t avail = evbuffer_get_length(src);
    if (framing == HTTP_BODY_NONE)
        return 1;
    if (framing == HTTP_BODY_UNTIL_CLOSE) {
        *count += avail;
        evbuffer_add_buffer(dst, src);
        return 0;
    }
    if (framing == HTTP_BODY_LENGTH) {
        size_t take = avail < *left ? avail : (size_t)*left;
        if (take) {
            evbuffer_remove_buffer(src, dst, take);
            *left -= take;
            *count += take;
        }
        return *left == 0;
    }
    /* Chunked: scan what we have, forward exactly the scanned bytes. */
    size_t scanned = 0;
    int done = 0;
    struct evbuffer_ptr pos;
    struct evbuffer_iovec v[16];
    evbuffer_ptr_set(src, &pos, 0, EVBUFFER_PTR_SET);
    while (!done && scanned < avail) {
        int nv = evbuffer_peek(src, (ev_ssize_t)(avail - scanned), &pos, v, 16);
        if (nv <= 0)
            break;
        for (int i = 0; i < nv && i < 16 && !done; i++) {
            long r = http_chunked_scan(ch, v[i].iov_base, v[i].iov_len, &done);
            if (r < 0)
                return -1;
            scanned += (size_t)r;
        }
        if (evbuffer_ptr_set(src, &pos, scanned, EVBUFFER_PTR_SET) < 0)
            break;
    }
    if (scanned) {
        evbuffer_remove_buffer(src, dst, scanned);
        *count += scanned;
    }
    return done;
}

/* The end-to-end headers of hd, except one named skip (NULL: none). */
static int add_headers(struct evbuffer *b, const struct http_head *hd, const char *skip)
{
    int rc = 0;
    size_t skiplen = skip ? strlen(skip) : 0;
    for (size_t i = 0; i < hd->nh; i++) {
        const struct http_header *f = &hd->h[i];
        if (http_is_hop_by_hop(hd, f) ||
            (skip && f->nlen == skiplen && strncasecmp(f->name, skip, skiplen) == 0))
            continue;
        rc |= evbuffer_add(b, f->name, f->nlen);
        rc |= evbuffer_add(b, ": ", 2);
        rc |= evbuffer_add(b, f->value, f->vlen);
        rc |= evbuffer_add(b, "\r\n", 2);
    }
    return rc;
}

static int write_response_head(struct hconn *h, const struct http_head *rh)
{
    struct evbuffer *out = bufferevent_get_output(h->c);
    /* Status line as the server sent it (its version, code and phrase). */
    struct evbuffer *in = bufferevent_get_input(h->u);
    const char *buf = (const char *)evbuffer_pullup(in, (ev_ssize_t)rh->len);
    const char *lf = memchr(buf, '\n', rh->len);
    size_t sl = (size_t)(lf - buf);
    if (sl && buf[sl - 1] == '\r')
        sl--;
    int rc = evbuffer_add(out, buf, sl);
    rc |= evbuffer_add(out, "\r\n", 2);
    rc |= add_headers(out, rh, NULL);
    if (rh->status >= 200)
        rc |= evbuffer_add_printf(out, "Connection: %s\r\n", h->keep_alive ? "keep-alive" : "close") < 0;
    rc |= evbuffer_add(out, "\r\n", 2);
    evbuffer_drain(in, rh->len);
    return rc ? -1 : 0;
}

static void upstream_failed(struct hconn *h, const char *why)
{
    if (!h->resp_started) {
        char what[400];
        snprintf(what, sizeof what, "upstream failure for %s", h->target);
        reply_gateway(h, 502, what, why);
        return;
    }
    /* Part of the response is out: all we can do is cut the connection. */
    h->keep_alive = 0;
    close_after_flush(h);
    closing_check(h);
}

/* 1 when this upstream's exchange ended (answered or failed; h may be gone),
 * 0 when more bytes are awaited. */
static int pump_response(struct hconn *h)
{
    struct evbuffer *in = bufferevent_get_input(h->u);
    struct evbuffer *out = bufferevent_get_output(h->c);
    while (h->resp == R_HEAD) {
        size_t n = evbuffer_get_length(in);
        if (n == 0)
            return 0;
        if (n > HTTP_MAX_HEAD)
            n = HTTP_MAX_HEAD;
        const char *buf = (const char *)evbuffer_pullup(in, (ev_ssize_t)n);
        struct http_head *rh = buf ? malloc(sizeof *rh) : NULL;
        if (!rh) {
            upstream_failed(h, "out of memory");
            return 1;
        }
        const char *why = NULL;
        int r = http_parse_response(buf, n, rh, &why);
        if (r <= 0) {
            free(rh);
            if (r == 0)
                return 0;
            upstream_failed(h, why);
            return 1;
        }
        int fr = http_response_body(rh, h->req_head, &h->resp_left, &why);
        if (fr < 0 || rh->status == 101) {
            free(rh);
            upstream_failed(h, fr < 0 ? why : "unexpected 101 Switching Protocols");
            return 1;
        }
        if (fr == HTTP_BODY_UNTIL_CLOSE)
            h->keep_alive = 0;
        int interim = rh->status < 200;
        int rc = write_response_head(h, rh);
        free(rh);
        if (rc < 0) {
            upstream_failed(h, "out of memory");
            return 1;
        }
        h->resp_started = 1;
        if (interim)
            continue;
        h->resp_body = fr;
        memset(&h->resp_ch, 0, sizeof h->resp_ch);
        h->resp = R_BODY;
    }
    if (h->resp == R_BODY) {
        int r = move_body(in, out, h->resp_body, &h->resp_left, &h->resp_ch, &h->p->bytes_down);
        if (r < 0) {
            upstream_failed(h, "malformed chunked body");
            return 1;
        }
        if (r == 1) {
            response_done(h);
            return 1;
        }
        if (evbuffer_get_length(out) >= HTTP_HIGH)
            bufferevent_disable(h->u, EV_READ);
    }
    return 0;
}

static void upstream_read_cb(struct bufferevent *bev, void *arg)
{
    (void)pump_response(arg);
}

static void upstream_event_cb(struct bufferevent *bev, short what, void *arg)
{
    struct hconn *h = arg;
    if (what & BEV_EVENT_EOF) {
        if (pump_response(h))
            return; /* ended (or failed) while pumping: h may be freed */
        if (h->resp == R_BODY && h->resp_body == HTTP_BODY_UNTIL_CLOSE) {
            h->keep_alive = 0;
            response_done(h);
            return;
        }
        upstream_failed(h, h->resp_started ? "connection closed mid-response"
                                            : "connection closed without a response");
        return;
    }
    upstream_failed(h, "connection error");
}

/* ---- request: client -> upstream ----------------------------------- */

static void pump_request(struct hconn *h)
{
    if (h->req_done)
        return;
    struct evbuffer *in = bufferevent_get_input(h->c);
    struct evbuffer *out = bufferevent_get_output(h->u);
    int r = move_body(in, out, h->req_body, &h->req_left, &h->req_ch, &h->p->bytes_up);
    if (r < 0) {
        h->keep_alive = 0;
        h->req_done = 1;
        bufferevent_disable(h->c, EV_READ);
        upstream_failed(h, "malformed chunked request body");
        return;
    }
    if (r == 1) {
        h->req_done = 1;
        /* Anything further is the next request: leave it until this one ends. */
        bufferevent_disable(h->c, EV_READ);
        return;
    }
    if (evbuffer_get_length(out) >= HTTP_HIGH)
        bufferevent_disable(h->c, EV_READ);
}

static void upstream_write_cb(struct bufferevent *bev, void *arg)
{
    struct hconn *h = arg;
    if (!h->req_done)
        bufferevent_enable(h->c, EV_READ);
}

static void dial_done(void *arg, int result, struct bufferevent *bev, const char *reason)
{
    struct hconn *h = arg;
    h->dial = NULL;
    if (result != DIAL_OK) {
        if (result == DIAL_DENIED)
            reply_refused(h, reason);
        else
            reply_gateway(h, strstr(reason, "timed out") ? 504 : 502, reason, NULL);
        return;
    }
    if (h->is_connect) {
        /* The relay sends it: no write watch for a socket about to change hands. */
        bufferevent_disable(h->c, EV_WRITE);
        evbuffer_add_printf(bufferevent_get_output(h->c),
                            "HTTP/1.1 200 Connection established\r\n\r\n");
        struct egress_pair *p = h->p;
        struct bufferevent *c = h->c;
        h->c = NULL;
        hconn_free(h);
        relay_start(p, c, bev);
        return;
    }
    h->u = bev;
    h->state = H_FORWARD;
    h->resp = R_HEAD;
    h->resp_started = 0;
    bufferevent_setcb(bev, upstream_read_cb, upstream_write_cb, upstream_event_cb, h);
    bufferevent_setwatermark(bev, EV_WRITE, HTTP_HIGH / 2, 0);
    evbuffer_add_buffer(bufferevent_get_output(bev), h->head_out);
    bufferevent_enable(bev, EV_READ | EV_WRITE);
    bufferevent_set_timeouts(h->c, NULL, NULL);
    bufferevent_enable(h->c, EV_READ);
    pump_request(h);
}

static int build_forward_head(struct hconn *h, const struct http_head *rq,
                              const struct http_target *t)
{
    struct evbuffer *b = h->head_out;
    int rc = evbuffer_add(b, rq->method, rq->mlen);
    rc |= evbuffer_add(b, " ", 1);
    if (t->plen == 0 || t->path[0] == '?')
        rc |= evbuffer_add(b, "/", 1);
    rc |= evbuffer_add(b, t->path, t->plen);
    rc |= evbuffer_add_printf(b, " HTTP/1.%d\r\nHost: ", rq->minor) < 0;
    rc |= evbuffer_add(b, t->authority, t->alen);
    rc |= evbuffer_add(b, "\r\n", 2);
    /* Host is ours: the authority that was judged. */
    rc |= add_headers(b, rq, "host");
    rc |= evbuffer_add(b, "Connection: close\r\n\r\n", 21);
    return rc ? -1 : 0;
}

static int auth_ok(struct hconn *h, const struct http_head *rq)
{
    if (!h->p->http_auth)
        return 1;
    const struct http_header *a = http_find(rq, "proxy-authorization");
    if (!a || a->vlen < 6 || strncasecmp(a->value, "basic ", 6) != 0)
        return 0;
    const char *v = a->value + 6;
    size_t n = a->vlen - 6;
    while (n && *v == ' ') {
        v++;
        n--;
    }
    return pair_secret_eq(v, n, h->p->basic);
}

/* 1 when the head is not complete yet (h waits for more); 0 otherwise (h
 * moved on, answered, or is gone). */
static int start_request(struct hconn *h, const char *buf, size_t n)
{
    struct http_head *rq = malloc(sizeof *rq);
    if (!rq) {
        hconn_free(h);
        return 0;
    }
    const char *why = NULL;
    int r = http_parse_request(buf, n, rq, &why);
    if (r == 0) {
        free(rq);
        return 1;
    }
    if (r < 0) {
        free(rq);
        bad_request(h, why);
        return 0;
    }
    if (!auth_ok(h, rq)) {
        free(rq);
        reply(h, 407, "Proxy Authentication Required",
              "Proxy-Authenticate: Basic realm=\"ccsandbox\"\r\n",
              "ccsandbox egress proxy: this session's proxy needs its credential\n");
        return 0;
    }
    struct http_target t;
    if (http_parse_proxy_target(rq, &t, &why) < 0) {
        free(rq);
        bad_request(h, why);
        return 0;
    }
    struct egress_target et;
    char ewhy[320];
    if (egress_target_from_host(t.host, t.hostlen, t.port, &et, ewhy, sizeof ewhy) < 0) {
        free(rq);
        bad_request(h, ewhy);
        return 0;
    }
    egress_target_format(&et, h->target, sizeof h->target);
    h->is_connect = t.is_connect;
    h->client_minor = rq->minor;
    const struct http_header *conn = http_find(rq, "connection");
    const struct http_header *pconn = http_find(rq, "proxy-connection");
    h->keep_alive = rq->minor >= 1 && !(conn && http_has_token(conn->value, conn->vlen, "close")) &&
                    !(pconn && http_has_token(pconn->value, pconn->vlen, "close"));
    h->req_head = rq->mlen == 4 && memcmp(rq->method, "HEAD", 4) == 0;
    if (!t.is_connect) {
        int fr = http_request_body(rq, &h->req_left, &why);
        if (fr < 0) {
            free(rq);
            bad_request(h, why);
            return 0;
        }
        h->req_body = fr;
        h->req_done = 0;
        memset(&h->req_ch, 0, sizeof h->req_ch);
        if (!h->head_out && !(h->head_out = evbuffer_new())) {
            free(rq);
            hconn_free(h);
            return 0;
        }
        evbuffer_drain(h->head_out, evbuffer_get_length(h->head_out));
        if (build_forward_head(h, rq, &t) < 0) {
            free(rq);
            hconn_free(h);
            return 0;
        }
    }
    size_t head_len = rq->len;
    free(rq);
    evbuffer_drain(bufferevent_get_input(h->c), head_len);

    h->state = H_DIAL;
    bufferevent_disable(h->c, EV_READ);
    bufferevent_set_timeouts(h->c, NULL, NULL);
    char reason[320];
    int dr = dial_start(h->p, &et, dial_done, h, &h->dial, reason, sizeof reason);
    if (dr == DIAL_DENIED)
        reply_refused(h, reason);
    else if (dr != DIAL_OK)
        reply_gateway(h, 502, reason, NULL);
    return 0;
}

/* 1 when h waits for more of a request head, 0 otherwise (h may be gone). */
static int process_client(struct hconn *h)
{
    switch (h->state) {
    case H_HEAD: {
        struct evbuffer *in = bufferevent_get_input(h->c);
        size_t n = evbuffer_get_length(in);
        if (n == 0)
            return 1;
        if (n > HTTP_MAX_HEAD)
            n = HTTP_MAX_HEAD;
        const char *buf = (const char *)evbuffer_pullup(in, (ev_ssize_t)n);
        if (!buf) {
            hconn_free(h);
            return 0;
        }
        return start_request(h, buf, n);
    }
    case H_FORWARD:
        pump_request(h);
        return 0;
    default:
        return 0;
    }
}

static void client_read_cb(struct bufferevent *bev, void *arg)
{
    (void)process_client(arg);
}

static void client_write_cb(struct bufferevent *bev, void *arg)
{
    struct hconn *h = arg;
    if (h->state == H_CLOSING) {
        closing_check(h);
        return;
    }
    if (h->state == H_FORWARD && h->u && h->resp != R_DONE)
        bufferevent_enable(h->u, EV_READ);
}

static void client_event_cb(struct bufferevent *bev, short what, void *arg)
{
    struct hconn *h = arg;
    if ((what & BEV_EVENT_EOF) && h->state == H_FORWARD && h->req_done) {
        /* The client half-closed after its request: finish the answer, then close. */
        h->keep_alive = 0;
        bufferevent_disable(bev, EV_READ);
        return;
    }
    if ((what & BEV_EVENT_TIMEOUT) && (what & BEV_EVENT_READING) && h->state == H_HEAD &&
        evbuffer_get_length(bufferevent_get_input(bev)) > 0) {
        reply(h, 408, "Request Timeout", NULL, "ccsandbox egress proxy: incomplete request head\n");
        return;
    }
    hconn_free(h);
}

void http_proxy_accept(struct egress_pair *p, int fd)
{
    struct hconn *h = calloc(1, sizeof *h);
    struct bufferevent *c = bufferevent_socket_new(p->base, fd, BEV_OPT_CLOSE_ON_FREE);
    if (!h || !c) {
        free(h);
        if (c)
            bufferevent_free(c);
        else
            evutil_closesocket(fd);
        return;
    }
    h->p = p;
    h->c = c;
    h->state = H_HEAD;
    h->link.close = hconn_close_link;
    pair_link_add(p, &h->link);
    pair_tune(c);
    bufferevent_setcb(c, client_read_cb, client_write_cb, client_event_cb, h);
    bufferevent_setwatermark(c, EV_WRITE, HTTP_HIGH / 2, 0);
    bufferevent_set_timeouts(c, &p->idle_tv, NULL);
    /* Writing is on from the start (a bufferevent's default) and watched
     * only while output waits. Reading is watched only if the head is not
     * here yet: a complete one (the usual case, TCP_DEFER_ACCEPT) then costs
     * no epoll changes at all. */
    if (pair_read_now(c) && !process_client(h))
        return;
    bufferevent_enable(c, EV_READ);
}
