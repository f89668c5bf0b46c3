/*
 * A host that owns its libevent loop: the sandbox context, an HTTP server
 * (evhttp, 127.0.0.1 only, an ephemeral port) and — in --smoke mode — an
 * HTTP client all run on one event_base, on one thread. The library starts
 * no thread of its own (ccsb_ctx_new_with_event_base).
 *
 * GET /run?cmd=<text> runs `sh -c <text>` in the session and answers with
 * its stdout once it exits (status 200 when it exits 0, else 502).
 *
 * usage: embed-libevent [--serve SECONDS]  serve on 127.0.0.1 (port printed)
 *        embed-libevent --smoke            serve, query itself, check, exit
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include <event2/buffer.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>

#include <ccsandbox/ccsandbox-libevent.h>
#include <ccsandbox/ccsandbox.h>

#define MAX_PENDING 16

struct pending {
    uint64_t exec_id;
    struct evhttp_request *req;
    struct evbuffer *out;
};

struct host {
    struct event_base *base;
    ccsb_ctx *ctx;
    ccsb_session *session;
    struct pending pending[MAX_PENDING];
    int smoke_ok;
};

/* Events arrive here, on the base's thread, while the base dispatches. */
static void on_event(const ccsb_event *ev, void *userdata)
{
    struct host *h = userdata;
    uint64_t id = ccsb_event_exec_id(ev);
    for (int i = 0; i < MAX_PENDING; i++) {
        struct pending *p = &h->pending[i];
        if (!p->req || p->exec_id != id)
            continue;
        size_t len;
        const uint8_t *d = ccsb_event_data(ev, &len);
        if (ccsb_event_type(ev) == CCSB_EVENT_STDOUT && evbuffer_add(p->out, d, len) != 0)
            fprintf(stderr, "evbuffer_add failed\n");
        if (ccsb_event_type(ev) == CCSB_EVENT_EXIT) {
            int ok = ccsb_event_exit_code(ev) == 0;
            evhttp_send_reply(p->req, ok ? 200 : 502, ok ? "OK" : "Command failed", p->out);
            evbuffer_free(p->out);
            p->req = NULL;
            p->out = NULL;
        }
        return;
    }
}

static void on_run(struct evhttp_request *req, void *arg)
{
    struct host *h = arg;
    struct evkeyvalq q;
    const char *query = evhttp_uri_get_query(evhttp_request_get_evhttp_uri(req));
    if (!query || evhttp_parse_query_str(query, &q) != 0) {
        evhttp_send_error(req, 400, "want ?cmd=");
        return;
    }
    const char *cmd = evhttp_find_header(&q, "cmd");
    struct pending *slot = NULL;
    for (int i = 0; i < MAX_PENDING && !slot; i++)
        if (!h->pending[i].req)
            slot = &h->pending[i];
    if (!cmd || !slot) {
        evhttp_clear_headers(&q);
        evhttp_send_error(req, cmd ? 503 : 400, cmd ? "busy" : "want ?cmd=");
        return;
    }
    const char *argv[] = {"sh", "-c", cmd};
    ccsb_exec_req *er = NULL;
    int r = ccsb_exec_req_new(&er);
    if (r == 0)
        r = ccsb_exec_req_set_argv(er, argv, 3);
    if (r == 0)
        r = ccsb_exec_req_set_timeout_ms(er, 10000);
    if (r == 0)
        r = ccsb_exec(h->session, er, &slot->exec_id);
    ccsb_exec_req_free(er);
    evhttp_clear_headers(&q);
    if (r != 0) {
        fprintf(stderr, "exec: %s\n", ccsb_ctx_errmsg(h->ctx));
        evhttp_send_error(req, 500, ccsb_strerror(r));
        return;
    }
    slot->out = evbuffer_new();
    if (!slot->out) {
        ccsb_exec_kill(h->session, slot->exec_id);
        evhttp_send_error(req, 500, "out of memory");
        return;
    }
    slot->req = req;
}

/* --smoke: the client half, on the same loop. */
static void on_reply(struct evhttp_request *req, void *arg)
{
    struct host *h = arg;
    char body[256] = "";
    if (req) {
        struct evbuffer *in = evhttp_request_get_input_buffer(req);
        size_t n = evbuffer_get_length(in);
        if (n >= sizeof body)
            n = sizeof body - 1;
        evbuffer_copyout(in, body, n);
        body[n] = 0;
        printf("client: HTTP %d: %s", evhttp_request_get_response_code(req), body);
        h->smoke_ok = evhttp_request_get_response_code(req) == 200 &&
                      strcmp(body, "hello from the sandbox\n") == 0;
    } else {
        fprintf(stderr, "client: no response\n");
    }
    event_base_loopbreak(h->base);
}

static int bound_port(struct evhttp_bound_socket *bs)
{
    struct sockaddr_in sa;
    socklen_t len = sizeof sa;
    if (getsockname(evhttp_bound_socket_get_fd(bs), (struct sockaddr *)&sa, &len) != 0)
        return -1;
    return ntohs(sa.sin_port);
}

static ccsb_session *launch(ccsb_ctx *ctx)
{
    const ccsb_probe_result *pr = NULL;
    ccsb_spec *spec = NULL;
    ccsb_session *s = NULL;
    if (ccsb_probe(ctx, &pr) != 0 || ccsb_spec_new(&spec) != 0)
        return NULL;
    ccsb_spec_set_backend(spec, ccsb_probe_available(pr) ? CCSB_BACKEND_NATIVE : CCSB_BACKEND_NONE);
    int r = ccsb_launch(ctx, spec, &s);
    if (r == CCSB_E_UNAVAILABLE) {
        printf("native backend unavailable (%s); using backend none\n", ccsb_ctx_errmsg(ctx));
        ccsb_spec_set_backend(spec, CCSB_BACKEND_NONE);
        r = ccsb_launch(ctx, spec, &s);
    }
    if (r != 0)
        fprintf(stderr, "launch: %s\n", ccsb_ctx_errmsg(ctx));
    ccsb_spec_free(spec);
    return r == 0 ? s : NULL;
}

int main(int argc, char **argv)
{
    int smoke = argc == 2 && strcmp(argv[1], "--smoke") == 0;
    int serve_s = argc == 3 && strcmp(argv[1], "--serve") == 0 ? atoi(argv[2]) : 0;
    if (!smoke && serve_s <= 0)
        return fprintf(stderr, "usage: %s --smoke | --serve SECONDS\n", argv[0]), 2;

    struct host h = {0};
    struct evhttp *http = NULL;
    int rc = 1;
    char err[256];
    h.base = event_base_new();
    if (!h.base)
        return fprintf(stderr, "event_base_new failed\n"), 1;
    if (ccsb_ctx_new_with_event_base(&h.ctx, h.base, err, sizeof err) != 0) {
        fprintf(stderr, "ccsb_ctx_new_with_event_base: %s\n", err);
        goto out;
    }
    if (ccsb_ctx_set_event_callback(h.ctx, on_event, &h, NULL) != 0 || !(h.session = launch(h.ctx)))
        goto out;
    printf("session %s on backend %s\n", ccsb_session_id(h.session),
           ccsb_backend_name(ccsb_session_backend(h.session)));

    http = evhttp_new(h.base);
    struct evhttp_bound_socket *bs = http ? evhttp_bind_socket_with_handle(http, "127.0.0.1", 0) : NULL;
    if (!bs) {
        fprintf(stderr, "cannot listen on 127.0.0.1\n");
        goto out;
    }
    evhttp_set_cb(http, "/run", on_run, &h);
    int port = bound_port(bs);
    printf("listening on http://127.0.0.1:%d/run?cmd=...\n", port);
    fflush(stdout);

    struct evhttp_connection *conn = NULL;
    if (smoke) {
        conn = evhttp_connection_base_new(h.base, NULL, "127.0.0.1", (unsigned short)port);
        struct evhttp_request *req = conn ? evhttp_request_new(on_reply, &h) : NULL;
        if (!req || evhttp_make_request(conn, req, EVHTTP_REQ_GET,
                                        "/run?cmd=echo%20hello%20from%20the%20sandbox") != 0) {
            fprintf(stderr, "cannot send the smoke request\n");
            if (conn)
                evhttp_connection_free(conn);
            goto out;
        }
    }
    /* Bounded: the loop ends by itself after the smoke reply or the deadline. */
    struct timeval limit = {smoke ? 20 : serve_s, 0};
    event_base_loopexit(h.base, &limit);
    event_base_dispatch(h.base);
    if (conn)
        evhttp_connection_free(conn);
    rc = smoke ? !h.smoke_ok : 0;
out:
    for (int i = 0; i < MAX_PENDING; i++) {
        if (h.pending[i].req)
            evhttp_send_error(h.pending[i].req, 503, "shutting down");
        if (h.pending[i].out)
            evbuffer_free(h.pending[i].out);
    }
    if (http)
        evhttp_free(http);
    ccsb_session_destroy(h.session);
    ccsb_ctx_free(h.ctx);
    event_base_free(h.base);
    return rc;
}
