/*
 * The egress proxies on loopback, for real: real sockets, a real test
 * server, the library's pair on a libevent loop, clients written by hand
 * and (when installed) curl.
 */
#include <arpa/inet.h>
#include <check.h>
#include <ctype.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/event.h>

#include "ccsandbox/ccsandbox.h"
#include "egress/egress.h"
#include "egress/pair_int.h"
#include "harness.h"
#include "spec/spec.h"

#define HOSTS                                                                                  \
    "127.0.0.1 localhost\n"                                                                    \
    "::1 localhost\n"                                                                          \
    "169.254.169.254 meta.example.test\n"                                                      \
    "::ffff:169.254.169.254 meta6.example.test\n"                                              \
    "127.0.0.1 loop.example.test\n"                                                            \
    "127.0.0.1 srv.example.test\n"
#define RESOLV "nameserver 127.0.0.1:9\noptions timeout:1 attempts:1\n"

/* A spec with these entries (NULL-terminated arrays, may be NULL). */
static struct ccsb_spec *spec_make(int network, const char *const *allow, const char *const *deny)
{
    struct ccsb_spec *s = calloc(1, sizeof *s);
    ck_assert_ptr_nonnull(s);
    s->network_enabled = network;
    for (size_t i = 0; allow && allow[i]; i++)
        ck_assert_int_eq(strv_push(&s->egress_allow, allow[i]), 0);
    for (size_t i = 0; deny && deny[i]; i++)
        ck_assert_int_eq(strv_push(&s->egress_deny, deny[i]), 0);
    return s;
}

static void spec_drop(struct ccsb_spec *s)
{
    strv_clear(&s->egress_allow);
    strv_clear(&s->egress_deny);
    free(s);
}

struct env {
    struct loop loop;
    struct tserver srv;
    struct vrec v;
    struct egress_pair *pair;
    struct ccsb_spec *spec;
    char hosts[300], resolv[300];
    char resp[200000];
    const char *body;
};

static struct egress_pair *pair_new(struct env *e, struct ccsb_spec *spec, int hfd, int sfd,
                                    struct vrec *v, int auth, const char *upstream)
{
    struct egress_opts o = {upstream, e->hosts, e->resolv, auth, 3000, 1500};
    struct egress_pair *p = NULL;
    char err[256];
    int rc = egress_pair_new_opts(e->loop.base, spec, hfd, sfd, vrec_cb, v, &o, &p, err,
                                  sizeof err);
    ck_assert_msg(rc == 0, "egress_pair_new: %s", err);
    return p;
}

static void env_up(struct env *e, int network, const char *const *allow, const char *const *deny)
{
    memset(e, 0, sizeof *e);
    write_temp("hosts", HOSTS, e->hosts, sizeof e->hosts);
    write_temp("resolv.conf", RESOLV, e->resolv, sizeof e->resolv);
    loop_init(&e->loop);
    vrec_init(&e->v);
    tserver_start(&e->srv);
    e->spec = spec_make(network, allow, deny);
    e->pair = pair_new(e, e->spec, -1, -1, &e->v, 0, NULL);
    loop_start(&e->loop);
}

static void env_down(struct env *e)
{
    loop_stop(&e->loop);
    egress_pair_free(e->pair);
    loop_fini(&e->loop);
    tserver_stop(&e->srv);
    spec_drop(e->spec);
    remove_temp(e->hosts);
    remove_temp(e->resolv);
}

static int http_proxy(struct env *e)
{
    int fd = tcp_connect("127.0.0.1", egress_pair_http_port(e->pair));
    ck_assert_int_ge(fd, 0);
    return fd;
}

static void sendf(int fd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void sendf(int fd, const char *fmt, ...)
{
    char buf[4096];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    ck_assert_int_eq(send_str(fd, buf), 0);
}

static const char *const ALLOW_LOCAL[] = {"localhost", "127.0.0.1", "[::1]", "*.example.test",
                                          NULL};

START_TEST(test_connect_allowed)
{
    struct env e;
    env_up(&e, 1, ALLOW_LOCAL, NULL);
    int fd = http_proxy(&e);
    sendf(fd, "CONNECT localhost:%u HTTP/1.1\r\nHost: localhost:%u\r\n\r\n", e.srv.port4,
          e.srv.port4);
    ck_assert_int_eq(read_connect_response(fd, e.resp, 4096, &e.body), 200);
    /* The tunnel carries a plain request to the server. */
    sendf(fd, "GET /through-tunnel HTTP/1.1\r\nHost: x\r\n\r\n");
    ck_assert_int_eq(read_response(fd, e.resp, sizeof e.resp, &e.body), 200);
    ck_assert_ptr_nonnull(strstr(e.body, "GET /through-tunnel"));
    close(fd);
    /* An explicit IPv6 address entry through [v6]:port, when ::1 exists. */
    if (e.srv.fd6 >= 0) {
        fd = http_proxy(&e);
        sendf(fd, "CONNECT [::1]:%u HTTP/1.1\r\n\r\n", e.srv.port6);
        ck_assert_int_eq(read_connect_response(fd, e.resp, 4096, &e.body), 200);
        sendf(fd, "GET /v6 HTTP/1.1\r\nHost: x\r\n\r\n");
        ck_assert_int_eq(read_response(fd, e.resp, sizeof e.resp, &e.body), 200);
        ck_assert_ptr_nonnull(strstr(e.body, "GET /v6"));
        close(fd);
    }
    ck_assert_int_eq(vrec_count(&e.v), 0);
    env_down(&e);
}
END_TEST

START_TEST(test_absolute_uri_keepalive)
{
    struct env e;
    env_up(&e, 1, ALLOW_LOCAL, NULL);
    int fd = http_proxy(&e);
    sendf(fd,
          "GET http://localhost:%u/one?q=1 HTTP/1.1\r\nHost: wrong.example\r\n"
          "Proxy-Connection: keep-alive\r\nConnection: x-drop\r\nX-Drop: secret\r\n"
          "X-Keep: yes\r\n\r\n",
          e.srv.port4);
    ck_assert_int_eq(read_response(fd, e.resp, sizeof e.resp, &e.body), 200);
    ck_assert_ptr_nonnull(strstr(e.body, "GET /one?q=1\n"));
    char host[64];
    snprintf(host, sizeof host, "host: localhost:%u\n", e.srv.port4);
    ck_assert_ptr_nonnull(strstr(e.body, host));
    ck_assert_ptr_nonnull(strstr(e.body, "hdr: X-Keep"));
    ck_assert_ptr_null(strstr(e.body, "hdr: X-Drop"));
    ck_assert_ptr_null(strstr(e.body, "hdr: Proxy-Connection"));
    /* Hop-by-hop response headers do not reach the client. */
    ck_assert_ptr_null(strstr(e.resp, "X-Secret"));
    ck_assert_ptr_null(strstr(e.resp, "Keep-Alive:"));
    ck_assert_ptr_nonnull(strstr(e.resp, "Connection: keep-alive"));

    /* Same client connection: a POST with a length, a chunked POST, a chunked answer,
     * a HEAD. */
    sendf(fd, "POST http://localhost:%u/post HTTP/1.1\r\nContent-Length: 11\r\n\r\nhello world",
          e.srv.port4);
    ck_assert_int_eq(read_response(fd, e.resp, sizeof e.resp, &e.body), 200);
    ck_assert_ptr_nonnull(strstr(e.body, "POST /post\nbody: 11\n"));
    sendf(fd,
          "POST http://localhost:%u/chunky HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n"
          "4\r\nabcd\r\n3;ext=1\r\nefg\r\n0\r\nX-Trailer: 1\r\n\r\n",
          e.srv.port4);
    ck_assert_int_eq(read_response(fd, e.resp, sizeof e.resp, &e.body), 200);
    ck_assert_ptr_nonnull(strstr(e.body, "POST /chunky\nbody: 7\n"));
    sendf(fd, "GET http://localhost:%u/chunked HTTP/1.1\r\n\r\n", e.srv.port4);
    ck_assert_int_eq(read_response(fd, e.resp, sizeof e.resp, &e.body), 200);
    ck_assert_str_eq(e.body, "hello, world");
    sendf(fd, "HEAD http://localhost:%u/head HTTP/1.1\r\n\r\n", e.srv.port4);
    ck_assert_int_eq(read_connect_response(fd, e.resp, sizeof e.resp, &e.body), 200);
    ck_assert_ptr_nonnull(strstr(e.resp, "Content-Length: 1234"));
    /* Pipelined: two requests in one write. */
    sendf(fd, "GET http://localhost:%u/p1 HTTP/1.1\r\n\r\nGET http://localhost:%u/p2 HTTP/1.1\r\n\r\n",
          e.srv.port4, e.srv.port4);
    ck_assert_int_eq(read_response(fd, e.resp, sizeof e.resp, &e.body), 200);
    ck_assert_ptr_nonnull(strstr(e.body, "GET /p1\n"));
    ck_assert_int_eq(read_response(fd, e.resp, sizeof e.resp, &e.body), 200);
    ck_assert_ptr_nonnull(strstr(e.body, "GET /p2\n"));
    /* A response delimited by close ends the client connection too. */
    sendf(fd, "GET http://localhost:%u/close HTTP/1.1\r\n\r\n", e.srv.port4);
    ck_assert_int_eq(read_response(fd, e.resp, sizeof e.resp, &e.body), 200);
    ck_assert_str_eq(e.body, "until-close");
    close(fd);

    /* Connection: close from the client is honoured. */
    fd = http_proxy(&e);
    sendf(fd, "GET http://127.0.0.1:%u/bye HTTP/1.1\r\nConnection: close\r\n\r\n", e.srv.port4);
    ck_assert_int_eq(read_response(fd, e.resp, sizeof e.resp, &e.body), 200);
    ck_assert_int_eq(closes_within(fd, 2000), 1);
    close(fd);
    ck_assert_int_eq(vrec_count(&e.v), 0);
    env_down(&e);
}
END_TEST

START_TEST(test_http_denied)
{
    struct env e;
    const char *const allow[] = {"*.allowed.test", NULL};
    env_up(&e, 1, allow, NULL);
    int fd = http_proxy(&e);
    sendf(fd, "CONNECT denied.test:443 HTTP/1.1\r\n\r\n");
    ck_assert_int_eq(read_connect_response(fd, e.resp, sizeof e.resp, &e.body), 403);
    ck_assert_ptr_nonnull(strstr(e.body, "denied.test:443"));
    ck_assert_ptr_nonnull(strstr(e.body, "no allowlist entry matches"));
    ck_assert_int_eq(closes_within(fd, 2000), 1);
    close(fd);
    ck_assert(vrec_has(&e.v, "denied.test:443", "no allowlist entry matches"));

    fd = http_proxy(&e);
    sendf(fd, "GET http://169.254.169.254/latest/meta-data/ HTTP/1.1\r\n\r\n");
    ck_assert_int_eq(read_response(fd, e.resp, sizeof e.resp, &e.body), 403);
    ck_assert_ptr_nonnull(strstr(e.body, "baseline denylist entry 169.254.169.254"));
    close(fd);
    ck_assert(vrec_has(&e.v, "169.254.169.254:80", "denied by baseline denylist"));

    /* The apex of a leading wildcard is not allowed. */
    fd = http_proxy(&e);
    sendf(fd, "CONNECT allowed.test:443 HTTP/1.1\r\n\r\n");
    ck_assert_int_eq(read_connect_response(fd, e.resp, sizeof e.resp, &e.body), 403);
    close(fd);
    json_t *st = json_object();
    egress_pair_stats(e.pair, st);
    ck_assert_int_eq(json_integer_value(json_object_get(st, "connectionsRefused")), 3);
    ck_assert_int_eq(json_integer_value(json_object_get(st, "connectionsAllowed")), 0);
    json_decref(st);
    env_down(&e);
}
END_TEST

START_TEST(test_resolved_address_checks)
{
    struct env e;
    env_up(&e, 1, ALLOW_LOCAL, NULL);
    /* *.example.test allows the name; the address it resolves to is metadata. */
    int fd = http_proxy(&e);
    sendf(fd, "CONNECT meta.example.test:80 HTTP/1.1\r\n\r\n");
    ck_assert_int_eq(read_connect_response(fd, e.resp, sizeof e.resp, &e.body), 403);
    ck_assert_ptr_nonnull(strstr(e.body, "169.254.169.254"));
    close(fd);
    ck_assert(vrec_has(&e.v, "meta.example.test:80", "resolved address 169.254.169.254"));
    fd = http_proxy(&e);
    sendf(fd, "CONNECT meta6.example.test:80 HTTP/1.1\r\n\r\n");
    ck_assert_int_eq(read_connect_response(fd, e.resp, sizeof e.resp, &e.body), 403);
    close(fd);
    /* ... or loopback, which only an entry naming it (or localhost) opens. */
    fd = http_proxy(&e);
    sendf(fd, "CONNECT loop.example.test:%u HTTP/1.1\r\n\r\n", e.srv.port4);
    ck_assert_int_eq(read_connect_response(fd, e.resp, sizeof e.resp, &e.body), 403);
    ck_assert_ptr_nonnull(strstr(e.body, "loopback"));
    close(fd);
    char t[64];
    snprintf(t, sizeof t, "loop.example.test:%u", e.srv.port4);
    ck_assert(vrec_has(&e.v, t, "is loopback"));
    /* Numeric spellings of 127.0.0.1 reach the entry naming 127.0.0.1 and nothing else. */
    fd = http_proxy(&e);
    sendf(fd, "GET http://2130706433:%u/num HTTP/1.1\r\n\r\n", e.srv.port4);
    ck_assert_int_eq(read_response(fd, e.resp, sizeof e.resp, &e.body), 200);
    close(fd);
    env_down(&e);
}
END_TEST

START_TEST(test_own_address_refused)
{
    /* A name allowed by a wildcard that resolves to one of this host's own
     * (non-loopback) addresses is refused: the address list is read lazily,
     * at the first public address judged, and must still be there. */
    struct ifaddrs *ifa = NULL;
    ck_assert_int_eq(getifaddrs(&ifa), 0);
    char own[INET_ADDRSTRLEN] = "";
    for (struct ifaddrs *i = ifa; i && !own[0]; i = i->ifa_next) {
        if (!i->ifa_addr || i->ifa_addr->sa_family != AF_INET)
            continue;
        const uint8_t *b = (const uint8_t *)&((struct sockaddr_in *)i->ifa_addr)->sin_addr;
        if (b[0] != 127 && !(b[0] == 169 && b[1] == 254))
            inet_ntop(AF_INET, b, own, sizeof own);
    }
    freeifaddrs(ifa);
    if (!own[0]) {
        fprintf(stderr, "test_own_address_refused: skipped, no non-loopback IPv4 address\n");
        return;
    }
    struct env e;
    env_up(&e, 1, ALLOW_LOCAL, NULL);
    loop_stop(&e.loop);
    char hosts[300], line[128];
    snprintf(line, sizeof line, "%s own.example.test\n", own);
    write_temp("hosts-own", line, hosts, sizeof hosts);
    struct egress_opts o = {NULL, hosts, e.resolv, 0, 3000, 1500};
    struct egress_pair *p = NULL;
    char err[256];
    struct vrec v2;
    vrec_init(&v2);
    ck_assert_int_eq(egress_pair_new_opts(e.loop.base, e.spec, -1, -1, vrec_cb, &v2, &o, &p, err,
                                          sizeof err), 0);
    loop_start(&e.loop);
    for (int rep = 0; rep < 2; rep++) { /* the second judgement uses the cached list */
        int fd = tcp_connect("127.0.0.1", egress_pair_http_port(p));
        sendf(fd, "CONNECT own.example.test:9 HTTP/1.1\r\n\r\n");
        ck_assert_int_eq(read_connect_response(fd, e.resp, sizeof e.resp, &e.body), 403);
        ck_assert_ptr_nonnull(strstr(e.body, "own addresses"));
        close(fd);
    }
    ck_assert(vrec_has(&v2, "own.example.test:9", "one of this host's own addresses"));
    loop_stop(&e.loop);
    egress_pair_free(p);
    remove_temp(hosts);
    loop_start(&e.loop);
    env_down(&e);
}
END_TEST

START_TEST(test_gateway_errors_and_bad_requests)
{
    struct env e;
    env_up(&e, 1, ALLOW_LOCAL, NULL);
    uint16_t dead;
    int lf = listen_loopback(AF_INET, &dead);
    close(lf); /* nothing listens there now */
    int fd = http_proxy(&e);
    sendf(fd, "GET http://127.0.0.1:%u/ HTTP/1.1\r\n\r\n", dead);
    ck_assert_int_eq(read_response(fd, e.resp, sizeof e.resp, &e.body), 502);
    close(fd);
    fd = http_proxy(&e);
    sendf(fd, "CONNECT nowhere.example.test:443 HTTP/1.1\r\n\r\n");
    ck_assert_int_eq(read_connect_response(fd, e.resp, sizeof e.resp, &e.body), 502);
    ck_assert_ptr_nonnull(strstr(e.body, "resolve"));
    close(fd);

    const char *bad[] = {
        "GARBAGE\r\n\r\n",
        "GET / HTTP/1.1\r\nHost: x\r\n\r\n",
        "GET https://example.com/ HTTP/1.1\r\n\r\n",
        "CONNECT example.com HTTP/1.1\r\n\r\n",
        "CONNECT [::1:443 HTTP/1.1\r\n\r\n",
        "GET http://user@localhost/ HTTP/1.1\r\n\r\n",
        "POST http://localhost/ HTTP/1.1\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n",
        "POST http://localhost/ HTTP/1.1\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\n",
        "GET http://localhost/ HTTP/2.0\r\n\r\n",
        "GET http://localhost/ HTTP/1.1\r\n folded: x\r\n\r\n",
        "GET http://exa mple/ HTTP/1.1\r\n\r\n",
        "GET http://bad_%41/ HTTP/1.1\r\n\r\n",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        fd = http_proxy(&e);
        ck_assert_int_eq(send_str(fd, bad[i]), 0);
        int st = read_response(fd, e.resp, sizeof e.resp, &e.body);
        ck_assert_msg(st == 400, "request %zu got %d", i, st);
        close(fd);
    }
    /* An incomplete head is not waited for forever. */
    fd = http_proxy(&e);
    ck_assert_int_eq(send_str(fd, "GET http://localhost/ HTTP/1.1\r\n"), 0);
    ck_assert_int_eq(read_response(fd, e.resp, sizeof e.resp, &e.body), 408);
    close(fd);
    fd = http_proxy(&e);
    ck_assert_int_eq(closes_within(fd, 4000), 1);
    close(fd);
    ck_assert_int_eq(vrec_count(&e.v), 0);
    env_down(&e);
}
END_TEST

/* SOCKS5 handshake + request; returns the reply code (or -1), fd stays open in *out. */
static int socks5(uint16_t port, const char *user, const char *pass, const uint8_t *req,
                  size_t reqlen, int *out)
{
    int fd = tcp_connect("127.0.0.1", port);
    ck_assert_int_ge(fd, 0);
    *out = fd;
    uint8_t greet[3] = {5, 1, user ? 2 : 0};
    ck_assert_int_eq(send_bytes(fd, greet, 3), 0);
    uint8_t m[2];
    if (recv_exact(fd, m, 2) < 0 || m[0] != 5)
        return -1;
    if (m[1] == 0xff)
        return 0x100;
    if (user) {
        uint8_t a[600];
        size_t n = 0;
        a[n++] = 1;
        a[n++] = (uint8_t)strlen(user);
        memcpy(a + n, user, strlen(user));
        n += strlen(user);
        a[n++] = (uint8_t)strlen(pass);
        memcpy(a + n, pass, strlen(pass));
        n += strlen(pass);
        ck_assert_int_eq(send_bytes(fd, a, n), 0);
        if (recv_exact(fd, m, 2) < 0)
            return -1;
        if (m[1] != 0)
            return 0x200;
    }
    ck_assert_int_eq(send_bytes(fd, req, reqlen), 0);
    uint8_t rep[4];
    if (recv_exact(fd, rep, 4) < 0 || rep[0] != 5)
        return -1;
    uint8_t rest[18];
    size_t more = rep[3] == 4 ? 18 : 6;
    if (recv_exact(fd, rest, more) < 0)
        return -1;
    return rep[1];
}

static size_t socks_domain(uint8_t *b, const char *host, uint16_t port, uint8_t cmd)
{
    size_t n = 0, hl = strlen(host);
    b[n++] = 5;
    b[n++] = cmd;
    b[n++] = 0;
    b[n++] = 3;
    b[n++] = (uint8_t)hl;
    memcpy(b + n, host, hl);
    n += hl;
    b[n++] = (uint8_t)(port >> 8);
    b[n++] = (uint8_t)port;
    return n;
}

static void get_through(int fd, struct env *e, const char *path)
{
    sendf(fd, "GET %s HTTP/1.1\r\nHost: x\r\n\r\n", path);
    ck_assert_int_eq(read_response(fd, e->resp, sizeof e->resp, &e->body), 200);
    char want[128];
    snprintf(want, sizeof want, "GET %s\n", path);
    ck_assert_ptr_nonnull(strstr(e->body, want));
}

START_TEST(test_socks5)
{
    struct env e;
    env_up(&e, 1, ALLOW_LOCAL, NULL);
    uint16_t sp = egress_pair_socks_port(e.pair);
    uint8_t req[300];
    int fd;
    size_t n = socks_domain(req, "localhost", e.srv.port4, 1);
    ck_assert_int_eq(socks5(sp, NULL, NULL, req, n, &fd), 0);
    get_through(fd, &e, "/socks-domain");
    close(fd);

    uint8_t v4[10] = {5, 1, 0, 1, 127, 0, 0, 1, (uint8_t)(e.srv.port4 >> 8), (uint8_t)e.srv.port4};
    ck_assert_int_eq(socks5(sp, NULL, NULL, v4, sizeof v4, &fd), 0);
    get_through(fd, &e, "/socks-v4");
    close(fd);

    if (e.srv.fd6 >= 0) {
        uint8_t v6[22] = {5, 1, 0, 4};
        v6[19] = 1;
        v6[20] = (uint8_t)(e.srv.port6 >> 8);
        v6[21] = (uint8_t)e.srv.port6;
        ck_assert_int_eq(socks5(sp, NULL, NULL, v6, sizeof v6, &fd), 0);
        get_through(fd, &e, "/socks-v6");
        close(fd);
    }

    n = socks_domain(req, "denied.test", 443, 1);
    ck_assert_int_eq(socks5(sp, NULL, NULL, req, n, &fd), 0x02);
    ck_assert_int_eq(closes_within(fd, 2000), 1);
    close(fd);
    ck_assert(vrec_has(&e.v, "denied.test:443", "no allowlist entry matches"));

    n = socks_domain(req, "meta.example.test", 80, 1);
    ck_assert_int_eq(socks5(sp, NULL, NULL, req, n, &fd), 0x02);
    close(fd);
    ck_assert(vrec_has(&e.v, "meta.example.test:80", "169.254.169.254"));

    n = socks_domain(req, "nowhere.example.test", 80, 1);
    ck_assert_int_eq(socks5(sp, NULL, NULL, req, n, &fd), 0x04);
    close(fd);

    uint16_t dead;
    int lf = listen_loopback(AF_INET, &dead);
    close(lf);
    n = socks_domain(req, "localhost", dead, 1);
    ck_assert_int_eq(socks5(sp, NULL, NULL, req, n, &fd), 0x05);
    close(fd);

    n = socks_domain(req, "localhost", e.srv.port4, 2); /* BIND */
    ck_assert_int_eq(socks5(sp, NULL, NULL, req, n, &fd), 0x07);
    close(fd);
    n = socks_domain(req, "localhost", e.srv.port4, 3); /* UDP ASSOCIATE */
    ck_assert_int_eq(socks5(sp, NULL, NULL, req, n, &fd), 0x07);
    close(fd);

    uint8_t badatyp[10] = {5, 1, 0, 9, 1, 2, 3, 4, 0, 80};
    ck_assert_int_eq(socks5(sp, NULL, NULL, badatyp, sizeof badatyp, &fd), 0x08);
    close(fd);

    /* SOCKS4 and 4a: refused clearly (request rejected), and reported. */
    fd = tcp_connect("127.0.0.1", sp);
    uint8_t s4[] = {4, 1, 0, 80, 10, 1, 2, 3, 'u', 0};
    ck_assert_int_eq(send_bytes(fd, s4, sizeof s4), 0);
    uint8_t r4[8];
    ck_assert_int_eq(recv_exact(fd, r4, 8), 0);
    ck_assert_int_eq(r4[1], 0x5b);
    close(fd);
    ck_assert(vrec_has(&e.v, "10.1.2.3:80", "SOCKS4"));
    fd = tcp_connect("127.0.0.1", sp);
    uint8_t s4a[] = {4, 1, 1, 187, 0, 0, 0, 1, 0, 'a', '.', 'b', 0};
    ck_assert_int_eq(send_bytes(fd, s4a, sizeof s4a), 0);
    ck_assert_int_eq(recv_exact(fd, r4, 8), 0);
    ck_assert_int_eq(r4[1], 0x5b);
    close(fd);
    ck_assert(vrec_has(&e.v, "a.b:443", "SOCKS4"));

    /* Not SOCKS at all: dropped. */
    fd = tcp_connect("127.0.0.1", sp);
    ck_assert_int_eq(send_str(fd, "GET / HTTP/1.1\r\n\r\n"), 0);
    ck_assert_int_eq(closes_within(fd, 2000), 1);
    close(fd);
    env_down(&e);
}
END_TEST

START_TEST(test_network_disabled)
{
    struct env e;
    env_up(&e, 0, ALLOW_LOCAL, NULL);
    int fd = http_proxy(&e);
    sendf(fd, "CONNECT localhost:%u HTTP/1.1\r\n\r\n", e.srv.port4);
    ck_assert_int_eq(read_connect_response(fd, e.resp, sizeof e.resp, &e.body), 403);
    ck_assert_ptr_nonnull(strstr(e.body, "networkEnabled is false"));
    close(fd);
    fd = http_proxy(&e);
    sendf(fd, "CONNECT api.anthropic.com:443 HTTP/1.1\r\n\r\n");
    ck_assert_int_eq(read_connect_response(fd, e.resp, sizeof e.resp, &e.body), 403);
    close(fd);
    uint8_t req[300];
    size_t n = socks_domain(req, "localhost", e.srv.port4, 1);
    ck_assert_int_eq(socks5(egress_pair_socks_port(e.pair), NULL, NULL, req, n, &fd), 0x02);
    close(fd);
    ck_assert_int_eq(vrec_count(&e.v), 3);
    ck_assert_int_eq(e.srv.accepted, 0);
    env_down(&e);
}
END_TEST

START_TEST(test_two_pairs_independent)
{
    struct env e;
    env_up(&e, 1, ALLOW_LOCAL, NULL);
    /* A second session's pair on the same loop with a different list. */
    loop_stop(&e.loop);
    struct vrec v2;
    vrec_init(&v2);
    const char *const allow2[] = {"other.test", NULL};
    struct ccsb_spec *spec2 = spec_make(1, allow2, NULL);
    struct egress_pair *p2 = pair_new(&e, spec2, -1, -1, &v2, 0, NULL);
    loop_start(&e.loop);

    int fd = tcp_connect("127.0.0.1", egress_pair_http_port(p2));
    sendf(fd, "CONNECT localhost:%u HTTP/1.1\r\n\r\n", e.srv.port4);
    ck_assert_int_eq(read_connect_response(fd, e.resp, sizeof e.resp, &e.body), 403);
    close(fd);
    fd = http_proxy(&e);
    sendf(fd, "CONNECT localhost:%u HTTP/1.1\r\n\r\n", e.srv.port4);
    ck_assert_int_eq(read_connect_response(fd, e.resp, sizeof e.resp, &e.body), 200);
    close(fd);
    char t[64];
    snprintf(t, sizeof t, "localhost:%u", e.srv.port4);
    ck_assert(vrec_has(&v2, t, "no allowlist entry matches"));
    ck_assert_int_eq(vrec_count(&v2), 1);
    ck_assert_int_eq(vrec_count(&e.v), 0);

    loop_stop(&e.loop);
    json_t *a = json_object(), *b = json_object();
    egress_pair_stats(e.pair, a);
    egress_pair_stats(p2, b);
    ck_assert_int_eq(json_integer_value(json_object_get(a, "connectionsAllowed")), 1);
    ck_assert_int_eq(json_integer_value(json_object_get(a, "connectionsRefused")), 0);
    ck_assert_int_eq(json_integer_value(json_object_get(b, "connectionsAllowed")), 0);
    ck_assert_int_eq(json_integer_value(json_object_get(b, "connectionsRefused")), 1);
    json_decref(a);
    json_decref(b);
    egress_pair_free(p2);
    spec_drop(spec2);
    env_down(&e);
}
END_TEST

START_TEST(test_credentials)
{
    struct env e;
    env_up(&e, 1, ALLOW_LOCAL, NULL);
    loop_stop(&e.loop);
    struct vrec v2;
    vrec_init(&v2);
    /* -1 fds: the pair binds 127.0.0.1 and requires its credential. */
    struct egress_pair *p = pair_new(&e, e.spec, -1, -1, &v2, -1, NULL);
    loop_start(&e.loop);
    const char *cred = egress_pair_credential(p);
    ck_assert_ptr_nonnull(cred);
    char user[16], pass[64];
    ck_assert_int_eq(sscanf(cred, "%15[^:]:%63s", user, pass), 2);

    int fd = tcp_connect("127.0.0.1", egress_pair_http_port(p));
    sendf(fd, "CONNECT localhost:%u HTTP/1.1\r\n\r\n", e.srv.port4);
    ck_assert_int_eq(read_connect_response(fd, e.resp, sizeof e.resp, &e.body), 407);
    ck_assert_ptr_nonnull(strstr(e.resp, "Proxy-Authenticate: Basic"));
    close(fd);
    fd = tcp_connect("127.0.0.1", egress_pair_http_port(p));
    sendf(fd, "CONNECT localhost:%u HTTP/1.1\r\nProxy-Authorization: Basic Y2NzYjp3cm9uZw==\r\n\r\n",
          e.srv.port4);
    ck_assert_int_eq(read_connect_response(fd, e.resp, sizeof e.resp, &e.body), 407);
    close(fd);

    uint8_t req[300];
    size_t n = socks_domain(req, "localhost", e.srv.port4, 1);
    ck_assert_int_eq(socks5(egress_pair_socks_port(p), NULL, NULL, req, n, &fd), 0x100);
    close(fd);
    ck_assert_int_eq(socks5(egress_pair_socks_port(p), user, "wrong", req, n, &fd), 0x200);
    close(fd);
    ck_assert_int_eq(socks5(egress_pair_socks_port(p), user, pass, req, n, &fd), 0);
    get_through(fd, &e, "/authed-socks");
    close(fd);

    char *url = egress_pair_proxy_url(p, "http");
    char want[200];
    snprintf(want, sizeof want, "http://%s@127.0.0.1:%u", cred, egress_pair_http_port(p));
    ck_assert_str_eq(url, want);
    free(url);
    url = egress_pair_proxy_url(p, "socks5h");
    snprintf(want, sizeof want, "socks5h://%s@127.0.0.1:%u", cred, egress_pair_socks_port(p));
    ck_assert_str_eq(url, want);
    free(url);
    ck_assert_ptr_null(egress_pair_proxy_url(p, "ftp"));

    /* With curl, the URL the backend would export is all a client needs. */
    if (access("/usr/bin/curl", X_OK) == 0) {
        char target[128], out[4096];
        snprintf(target, sizeof target, "http://localhost:%u/curl-forward", e.srv.port4);
        char *hurl = egress_pair_proxy_url(p, "http");
        char *argv1[] = {"/usr/bin/curl", "-sS", "--max-time", "5", "--noproxy", "", "-x", hurl,
                         target, NULL};
        ck_assert_int_eq(run_capture(argv1, out, sizeof out), 0);
        ck_assert_ptr_nonnull(strstr(out, "GET /curl-forward"));
        char *argv2[] = {"/usr/bin/curl", "-sS", "--max-time", "5", "--noproxy", "", "-p", "-x",
                         hurl, target, NULL};
        ck_assert_int_eq(run_capture(argv2, out, sizeof out), 0);
        ck_assert_ptr_nonnull(strstr(out, "GET /curl-forward"));
        free(hurl);
        char *surl = egress_pair_proxy_url(p, "socks5h");
        char *argv3[] = {"/usr/bin/curl", "-sS", "--max-time", "5", "--noproxy", "", "-x", surl,
                         target, NULL};
        ck_assert_int_eq(run_capture(argv3, out, sizeof out), 0);
        ck_assert_ptr_nonnull(strstr(out, "GET /curl-forward"));
        free(surl);
        /* A denied host: curl sees the 403 (exit 56 for a refused CONNECT). */
        hurl = egress_pair_proxy_url(p, "http");
        char *argv4[] = {"/usr/bin/curl", "-s", "--max-time", "5", "--noproxy", "", "-o",
                         "/dev/null", "-w", "%{http_code}", "-x", hurl,
                         "http://denied.test/", NULL};
        run_capture(argv4, out, sizeof out);
        ck_assert_str_eq(out, "403");
        free(hurl);
        ck_assert(vrec_has(&v2, "denied.test:80", "no allowlist entry matches"));
    }

    loop_stop(&e.loop);
    egress_pair_free(p);
    env_down(&e);
}
END_TEST

START_TEST(test_passed_listeners)
{
    /* Listening sockets handed in (as ccsb-init does): no credential, ports reported. */
    struct env e;
    env_up(&e, 1, ALLOW_LOCAL, NULL);
    loop_stop(&e.loop);
    uint16_t hp, sp;
    int hfd = listen_loopback(AF_INET, &hp);
    int sfd = listen_loopback(AF_INET, &sp);
    struct vrec v2;
    vrec_init(&v2);
    struct egress_pair *p = pair_new(&e, e.spec, hfd, sfd, &v2, -1, NULL);
    ck_assert_int_eq(egress_pair_http_port(p), hp);
    ck_assert_int_eq(egress_pair_socks_port(p), sp);
    ck_assert_ptr_null(egress_pair_credential(p));
    /* The pair took ownership: the caller's descriptors are closed. */
    ck_assert_int_eq(fcntl(hfd, F_GETFD), -1);
    ck_assert_int_eq(fcntl(sfd, F_GETFD), -1);
    loop_start(&e.loop);
    int fd = tcp_connect("127.0.0.1", hp);
    sendf(fd, "GET http://localhost:%u/passed HTTP/1.1\r\n\r\n", e.srv.port4);
    ck_assert_int_eq(read_response(fd, e.resp, sizeof e.resp, &e.body), 200);
    close(fd);
    uint8_t req[300];
    size_t n = socks_domain(req, "localhost", e.srv.port4, 1);
    ck_assert_int_eq(socks5(sp, NULL, NULL, req, n, &fd), 0);
    get_through(fd, &e, "/passed-socks");
    close(fd);
    loop_stop(&e.loop);
    egress_pair_free(p);

    /* A bad fd fails cleanly and leaves the caller's other fd open. */
    int good = listen_loopback(AF_INET, &hp);
    struct egress_pair *bad = NULL;
    char err[256];
    ck_assert_int_eq(egress_pair_new(e.loop.base, e.spec, good, 9999, NULL, NULL, &bad, err,
                                     sizeof err),
                     CCSB_E_IO);
    ck_assert_ptr_null(bad);
    ck_assert_int_ge(fcntl(good, F_GETFD), 0);
    close(good);
    /* A bad spec entry is named. */
    const char *const badallow[] = {"ok.test", "*.com", NULL};
    struct ccsb_spec *bs = spec_make(1, badallow, NULL);
    ck_assert_int_eq(egress_pair_new(e.loop.base, bs, -1, -1, NULL, NULL, &bad, err, sizeof err),
                     CCSB_E_SPEC);
    ck_assert_ptr_nonnull(strstr(err, "egressAllowlist[1]"));
    spec_drop(bs);
    env_down(&e);
}
END_TEST

/* The two steps a late-listening backend takes (bubblewrap: the pair is
 * prepared while the sandbox starts, its listeners come with READY): a
 * failed listen leaves the pair as prepared and the caller's fds open, a
 * second listen is refused, and the pair then serves like a whole one. */
START_TEST(test_prepare_then_listen)
{
    struct env e;
    env_up(&e, 1, ALLOW_LOCAL, NULL);
    loop_stop(&e.loop);
    struct egress_pair *p = NULL;
    char err[256];
    ck_assert_int_eq(egress_pair_prepare(e.loop.base, e.spec, NULL, NULL, NULL, &p, err,
                                         sizeof err),
                     0);
    ck_assert_ptr_nonnull(p);
    uint16_t hp, sp;
    int hfd = listen_loopback(AF_INET, &hp);
    ck_assert_int_eq(egress_pair_listen(p, hfd, 9999, err, sizeof err), CCSB_E_IO);
    ck_assert_int_ge(fcntl(hfd, F_GETFD), 0);
    ck_assert_int_eq(egress_pair_http_port(p), 0);
    int sfd = listen_loopback(AF_INET, &sp);
    ck_assert_int_eq(egress_pair_listen(p, hfd, sfd, err, sizeof err), 0);
    ck_assert_int_eq(fcntl(hfd, F_GETFD), -1);
    ck_assert_int_eq(fcntl(sfd, F_GETFD), -1);
    ck_assert_int_eq(egress_pair_http_port(p), hp);
    ck_assert_int_eq(egress_pair_socks_port(p), sp);
    ck_assert_ptr_null(egress_pair_credential(p)); /* fds handed in: no credential */
    int again = listen_loopback(AF_INET, &sp);
    ck_assert_int_eq(egress_pair_listen(p, again, -1, err, sizeof err), CCSB_E_STATE);
    ck_assert_int_ge(fcntl(again, F_GETFD), 0);
    close(again);
    loop_start(&e.loop);
    int fd = tcp_connect("127.0.0.1", hp);
    sendf(fd, "GET http://localhost:%u/two-steps HTTP/1.1\r\n\r\n", e.srv.port4);
    ck_assert_int_eq(read_response(fd, e.resp, sizeof e.resp, &e.body), 200);
    close(fd);
    loop_stop(&e.loop);
    egress_pair_free(p);
    /* Prepared and never listening: freed as is. */
    ck_assert_int_eq(egress_pair_prepare(e.loop.base, e.spec, NULL, NULL, NULL, &p, err,
                                         sizeof err),
                     0);
    egress_pair_free(p);
    env_down(&e);
}
END_TEST

#ifdef TCP_CONGESTION
static void cc_of(int fd, char *cc, size_t cap)
{
    socklen_t l = (socklen_t)cap - 1;
    memset(cc, 0, cap);
    ck_assert_int_eq(getsockopt(fd, IPPROTO_TCP, TCP_CONGESTION, cc, &l), 0);
}

START_TEST(test_local_leg_congestion_control)
{
    /* The sandbox's leg is loopback: the pair's listeners use Reno, and the
     * sockets they accept inherit it (the bulk benchmark depends on both). */
    struct env e;
    env_up(&e, 1, ALLOW_LOCAL, NULL);
    loop_stop(&e.loop);
    char cc[32];
    int mine[2];
    for (int fam = 0; fam < 2; fam++) {
        uint16_t port;
        int lfd = listen_loopback(fam ? AF_INET6 : AF_INET, &port);
        if (lfd < 0)
            continue; /* no IPv6 loopback here */
        mine[fam] = dup(lfd);
        struct vrec v2;
        vrec_init(&v2);
        struct egress_pair *p = pair_new(&e, e.spec, lfd, -1, &v2, -1, NULL);
        cc_of(mine[fam], cc, sizeof cc);
        ck_assert_str_eq(cc, "reno");
        egress_pair_free(p);
        close(mine[fam]);
    }
    /* Accepted sockets inherit the listener's choice. */
    uint16_t port;
    int lfd = listen_loopback(AF_INET, &port);
    pair_tune_local_listener(lfd);
    int c = tcp_connect("127.0.0.1", port);
    int a = accept(lfd, NULL, NULL);
    ck_assert_int_ge(a, 0);
    cc_of(a, cc, sizeof cc);
    ck_assert_str_eq(cc, "reno");
    close(a);
    close(c);
    close(lfd);
    /* Only loopback addresses count as the sandbox's leg. */
    struct sockaddr_in s4 = {.sin_family = AF_INET};
    struct sockaddr_in6 s6 = {.sin6_family = AF_INET6};
    const char *const yes4[] = {"127.0.0.1", "127.255.0.9"}, *const no4[] = {"10.0.0.1", "128.0.0.1", "0.0.0.0"};
    const char *const yes6[] = {"::1", "::ffff:127.0.0.2"}, *const no6[] = {"::", "::2", "::ffff:10.0.0.1", "fe80::1"};
    for (size_t i = 0; i < 2; i++) {
        inet_pton(AF_INET, yes4[i], &s4.sin_addr);
        ck_assert_int_eq(pair_is_loopback((struct sockaddr *)&s4), 1);
        inet_pton(AF_INET6, yes6[i], &s6.sin6_addr);
        ck_assert_int_eq(pair_is_loopback((struct sockaddr *)&s6), 1);
    }
    for (size_t i = 0; i < 3; i++) {
        inet_pton(AF_INET, no4[i], &s4.sin_addr);
        ck_assert_int_eq(pair_is_loopback((struct sockaddr *)&s4), 0);
    }
    for (size_t i = 0; i < 4; i++) {
        inet_pton(AF_INET6, no6[i], &s6.sin6_addr);
        ck_assert_int_eq(pair_is_loopback((struct sockaddr *)&s6), 0);
    }
    loop_start(&e.loop);
    env_down(&e);
}
END_TEST
#endif

START_TEST(test_upstream_chaining)
{
    struct env e;
    env_up(&e, 1, ALLOW_LOCAL, NULL);
    loop_stop(&e.loop);
    /* The "corporate" proxy: another pair that admits only the address itself. */
    struct vrec vup;
    vrec_init(&vup);
    const char *const upallow[] = {"127.0.0.1", NULL};
    struct ccsb_spec *upspec = spec_make(1, upallow, NULL);
    struct egress_pair *up = pair_new(&e, upspec, -1, -1, &vup, 1, NULL);
    char *upurl = egress_pair_proxy_url(up, "http");
    struct vrec v2;
    vrec_init(&v2);
    struct egress_pair *p = pair_new(&e, e.spec, -1, -1, &v2, 0, upurl);
    loop_start(&e.loop);

    int fd = tcp_connect("127.0.0.1", egress_pair_http_port(p));
    sendf(fd, "CONNECT localhost:%u HTTP/1.1\r\n\r\n", e.srv.port4);
    ck_assert_int_eq(read_connect_response(fd, e.resp, sizeof e.resp, &e.body), 200);
    get_through(fd, &e, "/chained");
    close(fd);
    /* Our own rules still come first: nothing denied reaches the upstream. */
    fd = tcp_connect("127.0.0.1", egress_pair_http_port(p));
    sendf(fd, "CONNECT denied.test:443 HTTP/1.1\r\n\r\n");
    ck_assert_int_eq(read_connect_response(fd, e.resp, sizeof e.resp, &e.body), 403);
    close(fd);
    loop_stop(&e.loop);
    json_t *st = json_object();
    egress_pair_stats(up, st);
    ck_assert_int_eq(json_integer_value(json_object_get(st, "connectionsAllowed")), 1);
    ck_assert_int_eq(json_integer_value(json_object_get(st, "connectionsRefused")), 0);
    json_decref(st);
    free(upurl);
    egress_pair_free(p);
    egress_pair_free(up);
    spec_drop(upspec);
    env_down(&e);
}
END_TEST

START_TEST(test_upstream_hangs_up)
{
    /* An upstream proxy that reads the CONNECT and closes: the client hears
     * at once that the upstream failed, not a timeout after the dial limit. */
    struct env e;
    env_up(&e, 1, ALLOW_LOCAL, NULL);
    loop_stop(&e.loop);
    uint16_t upport;
    int lf = listen_loopback(AF_INET, &upport);
    ck_assert_int_ge(lf, 0);
    char upurl[64];
    snprintf(upurl, sizeof upurl, "http://127.0.0.1:%u", upport);
    struct vrec v2;
    vrec_init(&v2);
    struct egress_pair *p = pair_new(&e, e.spec, -1, -1, &v2, 0, upurl);
    loop_start(&e.loop);

    int fd = tcp_connect("127.0.0.1", egress_pair_http_port(p));
    sendf(fd, "CONNECT localhost:%u HTTP/1.1\r\n\r\n", e.srv.port4);
    struct pollfd pl = {lf, POLLIN, 0};
    ck_assert_int_eq(poll(&pl, 1, 2000), 1);
    int ufd = accept(lf, NULL, NULL);
    ck_assert_int_ge(ufd, 0);
    char req[512];
    size_t n = 0;
    while (n < 4 || memcmp(req + n - 4, "\r\n\r\n", 4) != 0) {
        ck_assert_uint_lt(n, sizeof req);
        ck_assert_int_eq(recv_exact(ufd, req + n++, 1), 0);
    }
    ck_assert_int_eq(memcmp(req, "CONNECT 127.0.0.1:", 18), 0);
    close(ufd);
    ck_assert_int_eq(read_connect_response(fd, e.resp, sizeof e.resp, &e.body), 502);
    ck_assert_ptr_nonnull(strstr(e.body, "upstream proxy closed"));
    close(fd);
    close(lf);
    loop_stop(&e.loop);
    egress_pair_free(p);
    loop_start(&e.loop);
    env_down(&e);
}
END_TEST

/* Answers every DNS query on udp with NXDOMAIN until fd is readable (at most
 * 4 s); appends each query name, newline-terminated, to names. */
static void dns_nxdomain_until(int udp, int fd, char *names, size_t cap)
{
    names[0] = '\0';
    for (int turns = 0; turns < 400; turns++) {
        struct pollfd pl[2] = {{udp, POLLIN, 0}, {fd, POLLIN, 0}};
        ck_assert_int_ge(poll(pl, 2, 10), 0);
        if (pl[1].revents)
            return;
        if (!pl[0].revents)
            continue;
        uint8_t q[512];
        struct sockaddr_storage from;
        socklen_t fl = sizeof from;
        ssize_t n = recvfrom(udp, q, sizeof q, 0, (struct sockaddr *)&from, &fl);
        if (n < 17)
            continue;
        size_t o = 12;
        char name[300] = "";
        while (o < (size_t)n && q[o] && q[o] < 64 && o + 1 + q[o] < (size_t)n) {
            strncat(name, (const char *)q + o + 1, q[o] < sizeof name - strlen(name) - 2
                                                       ? q[o]
                                                       : sizeof name - strlen(name) - 2);
            strcat(name, ".");
            o += 1 + q[o];
        }
        size_t qend = o + 5; /* the root label, QTYPE, QCLASS */
        if (qend > (size_t)n)
            continue;
        for (char *c = name; *c; c++) /* resolvers randomise the case (0x20) */
            *c = (char)tolower((unsigned char)*c);
        snprintf(names + strlen(names), cap - strlen(names), "%s\n", name);
        q[2] = 0x80 | (q[2] & 0x79); /* QR, opcode and RD kept */
        q[3] = 0x83;                 /* RA, NXDOMAIN */
        memset(q + 6, 0, 6);         /* no answer, authority or additional records */
        (void)sendto(udp, q, qend, 0, (struct sockaddr *)&from, fl);
    }
}

START_TEST(test_resolves_the_judged_name_only)
{
    /* With a search list, a resolver that appends it would connect to a
     * name nobody judged ("nx.example.test.corp.test"), so the allowlist
     * and denylist would not decide where the connection goes. */
    struct env e;
    env_up(&e, 1, ALLOW_LOCAL, NULL);
    loop_stop(&e.loop);
    int udp = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    ck_assert_int_ge(udp, 0);
    struct sockaddr_in sin = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    ck_assert_int_eq(bind(udp, (struct sockaddr *)&sin, sizeof sin), 0);
    socklen_t sl = sizeof sin;
    ck_assert_int_eq(getsockname(udp, (struct sockaddr *)&sin, &sl), 0);
    char conf[200], rpath[300];
    snprintf(conf, sizeof conf,
             "nameserver 127.0.0.1:%u\nsearch corp.test\noptions ndots:1 timeout:1 attempts:1\n",
             ntohs(sin.sin_port));
    write_temp("resolv.conf", conf, rpath, sizeof rpath);
    char saved[300];
    snprintf(saved, sizeof saved, "%s", e.resolv);
    snprintf(e.resolv, sizeof e.resolv, "%s", rpath);
    struct vrec v2;
    vrec_init(&v2);
    struct egress_pair *p = pair_new(&e, e.spec, -1, -1, &v2, 0, NULL);
    snprintf(e.resolv, sizeof e.resolv, "%s", saved);
    loop_start(&e.loop);

    char names[2048];
    int fd = tcp_connect("127.0.0.1", egress_pair_http_port(p));
    sendf(fd, "CONNECT nx.example.test:443 HTTP/1.1\r\n\r\n");
    dns_nxdomain_until(udp, fd, names, sizeof names);
    ck_assert_int_eq(read_connect_response(fd, e.resp, sizeof e.resp, &e.body), 502);
    ck_assert_ptr_nonnull(strstr(e.body, "resolve"));
    close(fd);
    ck_assert_msg(strstr(names, "nx.example.test.\n") != NULL, "queries: %s", names);
    ck_assert_msg(strstr(names, "corp.test") == NULL, "searched: %s", names);
    close(udp);
    loop_stop(&e.loop);
    egress_pair_free(p);
    loop_start(&e.loop);
    remove_temp(rpath);
    env_down(&e);
}
END_TEST

START_TEST(test_bulk_and_counters)
{
    struct env e;
    env_up(&e, 1, ALLOW_LOCAL, NULL);
    int fd = http_proxy(&e);
    sendf(fd, "CONNECT localhost:%u HTTP/1.1\r\n\r\n", e.srv.port4);
    ck_assert_int_eq(read_connect_response(fd, e.resp, 4096, &e.body), 200);
    const size_t big = 8 * 1024 * 1024;
    sendf(fd, "GET /big/%zu HTTP/1.1\r\nHost: x\r\n\r\n", big);
    char head[256];
    size_t hn = 0;
    while (hn < 4 || memcmp(head + hn - 4, "\r\n\r\n", 4) != 0)
        ck_assert_int_eq(recv_exact(fd, head + hn++, 1), 0);
    char *buf = malloc(big);
    ck_assert_int_eq(recv_exact(fd, buf, big), 0);
    for (size_t i = 0; i < big; i += 4096)
        ck_assert_int_eq(buf[i], 'b');
    free(buf);
    close(fd);
    usleep(100000);
    loop_stop(&e.loop);
    json_t *st = json_object();
    egress_pair_stats(e.pair, st);
    ck_assert_int_ge(json_integer_value(json_object_get(st, "bytesDown")), (json_int_t)big);
    ck_assert_int_gt(json_integer_value(json_object_get(st, "bytesUp")), 10);
    json_decref(st);
    loop_start(&e.loop);
    env_down(&e);
}
END_TEST

static json_int_t bytes_down(struct env *e)
{
    loop_stop(&e->loop);
    json_t *st = json_object();
    egress_pair_stats(e->pair, st);
    json_int_t n = json_integer_value(json_object_get(st, "bytesDown"));
    json_decref(st);
    loop_start(&e->loop);
    return n;
}

START_TEST(test_tunnel_semantics)
{
    struct env e;
    env_up(&e, 1, ALLOW_LOCAL, NULL);
    /* Bytes pipelined behind the CONNECT head go up first, in order. */
    int fd = http_proxy(&e);
    sendf(fd, "CONNECT localhost:%u HTTP/1.1\r\n\r\nGET /pipelined HTTP/1.1\r\nHost: x\r\n\r\n"
              "GET /second HTTP/1.1\r\nHost: x\r\n\r\n",
          e.srv.port4);
    ck_assert_int_eq(read_connect_response(fd, e.resp, 4096, &e.body), 200);
    ck_assert_int_eq(read_response(fd, e.resp, sizeof e.resp, &e.body), 200);
    ck_assert_ptr_nonnull(strstr(e.body, "GET /pipelined"));
    ck_assert_int_eq(read_response(fd, e.resp, sizeof e.resp, &e.body), 200);
    ck_assert_ptr_nonnull(strstr(e.body, "GET /second"));
    close(fd);

    /* Half-close: the client's EOF reaches the server, whose answer still
     * comes back; then the server's EOF closes the tunnel. */
    fd = http_proxy(&e);
    sendf(fd, "CONNECT localhost:%u HTTP/1.1\r\n\r\n", e.srv.port4);
    ck_assert_int_eq(read_connect_response(fd, e.resp, 4096, &e.body), 200);
    sendf(fd, "GET /half HTTP/1.1\r\nHost: x\r\n\r\n");
    ck_assert_int_eq(shutdown(fd, SHUT_WR), 0);
    ck_assert_int_eq(read_response(fd, e.resp, sizeof e.resp, &e.body), 200);
    ck_assert_ptr_nonnull(strstr(e.body, "GET /half"));
    ck_assert_int_eq(closes_within(fd, 2000), 1);
    close(fd);

    /* Backpressure: a client that does not read holds the proxy to a few
     * buffers' worth, not the whole body; then everything arrives intact. */
    const size_t big = 64 * 1024 * 1024;
    json_int_t before = bytes_down(&e);
    fd = http_proxy(&e);
    sendf(fd, "CONNECT localhost:%u HTTP/1.1\r\n\r\n", e.srv.port4);
    ck_assert_int_eq(read_connect_response(fd, e.resp, 4096, &e.body), 200);
    sendf(fd, "GET /big/%zu HTTP/1.1\r\nHost: x\r\n\r\n", big);
    usleep(300000);
    json_int_t held = bytes_down(&e) - before;
    ck_assert_msg(held > 0 && held < 24 * 1024 * 1024, "the proxy read %lld bytes for a client "
                  "that reads nothing", (long long)held);
    char head[256];
    size_t hn = 0;
    while (hn < 4 || memcmp(head + hn - 4, "\r\n\r\n", 4) != 0)
        ck_assert_int_eq(recv_exact(fd, head + hn++, 1), 0);
    char *buf = malloc(1 << 20);
    ck_assert_ptr_nonnull(buf);
    for (size_t got = 0; got < big; got += 1 << 20) {
        ck_assert_int_eq(recv_exact(fd, buf, 1 << 20), 0);
        ck_assert_int_eq(buf[0], 'b');
        ck_assert_int_eq(buf[(1 << 20) - 1], 'b');
    }
    free(buf);
    close(fd);
    env_down(&e);
}
END_TEST

START_TEST(test_free_with_work_in_flight)
{
    /* Freeing a pair with a DNS lookup pending, a live tunnel, a forward in
     * progress and a half-read head must release everything (valgrind and
     * --track-fds in the valgrind setup check it). */
    struct env e;
    env_up(&e, 1, ALLOW_LOCAL, NULL);
    int dns = http_proxy(&e);
    sendf(dns, "CONNECT nowhere.example.test:443 HTTP/1.1\r\n\r\n");
    int tun = http_proxy(&e);
    sendf(tun, "CONNECT localhost:%u HTTP/1.1\r\n\r\n", e.srv.port4);
    ck_assert_int_eq(read_connect_response(tun, e.resp, 4096, &e.body), 200);
    int half = http_proxy(&e);
    ck_assert_int_eq(send_str(half, "GET http://localhost/ HTTP/1.1\r\nX: "), 0);
    uint8_t req[300];
    int sfd;
    size_t n = socks_domain(req, "nowhere.example.test", 80, 1);
    sfd = tcp_connect("127.0.0.1", egress_pair_socks_port(e.pair));
    uint8_t greet[3] = {5, 1, 0};
    ck_assert_int_eq(send_bytes(sfd, greet, 3), 0);
    uint8_t m[2];
    ck_assert_int_eq(recv_exact(sfd, m, 2), 0);
    ck_assert_int_eq(send_bytes(sfd, req, n), 0);
    usleep(100000);
    loop_stop(&e.loop);
    egress_pair_free(e.pair);
    e.pair = NULL;
    /* Every client sees its connection closed (libevent closes a freed
     * bufferevent's socket from the loop, so let the loop run again). */
    loop_start(&e.loop);
    ck_assert_int_eq(closes_within(dns, 1000), 1);
    ck_assert_int_eq(closes_within(tun, 1000), 1);
    ck_assert_int_eq(closes_within(half, 1000), 1);
    ck_assert_int_eq(closes_within(sfd, 1000), 1);
    close(dns);
    close(tun);
    close(half);
    close(sfd);
    env_down(&e);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("egress-proxy");
    TCase *tc = tcase_create("loopback");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_connect_allowed);
    tcase_add_test(tc, test_absolute_uri_keepalive);
    tcase_add_test(tc, test_http_denied);
    tcase_add_test(tc, test_resolved_address_checks);
    tcase_add_test(tc, test_own_address_refused);
    tcase_add_test(tc, test_gateway_errors_and_bad_requests);
    tcase_add_test(tc, test_socks5);
    tcase_add_test(tc, test_network_disabled);
    tcase_add_test(tc, test_two_pairs_independent);
    tcase_add_test(tc, test_credentials);
    tcase_add_test(tc, test_passed_listeners);
    tcase_add_test(tc, test_prepare_then_listen);
#ifdef TCP_CONGESTION
    tcase_add_test(tc, test_local_leg_congestion_control);
#endif
    tcase_add_test(tc, test_upstream_chaining);
    tcase_add_test(tc, test_upstream_hangs_up);
    tcase_add_test(tc, test_resolves_the_judged_name_only);
    tcase_add_test(tc, test_free_with_work_in_flight);
    suite_add_tcase(s, tc);
    TCase *bulk = tcase_create("bulk");
    tcase_set_timeout(bulk, 120);
    tcase_add_test(bulk, test_bulk_and_counters);
    tcase_add_test(bulk, test_tunnel_semantics);
    suite_add_tcase(s, bulk);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
