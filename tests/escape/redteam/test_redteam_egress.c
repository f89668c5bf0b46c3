/*
 * Red team: the egress proxies, attacked the way a hostile command behind
 * them would. An allowed wildcard whose DNS the attacker controls (the
 * usual case for `*.some-paas.app` entries) is played by a hosts file that
 * points allowed names at every spelling of "this host". A loopback test
 * server stands for a host service; it must never see a connection.
 */
#include <arpa/inet.h>
#include <check.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "egress/egress.h"
#include "harness.h"
#include "spec/spec.h"

/* Every name here is allowed by *.rebind.test; none may be reached. */
static const char *const REBIND[] = {
    "0.0.0.0 zero.rebind.test",          /* connect(0.0.0.0) is loopback on Linux */
    ":: zero6.rebind.test",              /* so is :: */
    "::ffff:127.0.0.1 mapped.rebind.test",
    "::ffff:0.0.0.0 mappedzero.rebind.test",
    "::127.0.0.1 compat.rebind.test",
    "64:ff9b::127.0.0.1 nat64.rebind.test",
    "127.9.9.9 loop9.rebind.test",
    "169.254.169.254 meta.rebind.test",
    "fe80::1 ll6.rebind.test",
    "0.1.2.3 zeronet.rebind.test",
    NULL,
};

struct env {
    struct loop loop;
    struct tserver srv;
    struct vrec v;
    struct egress_pair *pair;
    struct ccsb_spec spec;
    char hosts[300], resolv[300];
    char resp[65536];
    const char *body;
};

/* One non-loopback IPv4 address of this host, if it has one. */
static int own_address(char *out, size_t cap)
{
    struct ifaddrs *ifa = NULL;
    int found = 0;
    if (getifaddrs(&ifa) < 0)
        return 0;
    for (struct ifaddrs *i = ifa; i && !found; i = i->ifa_next) {
        if (!i->ifa_addr || i->ifa_addr->sa_family != AF_INET)
            continue;
        const struct sockaddr_in *s = (const struct sockaddr_in *)i->ifa_addr;
        if ((ntohl(s->sin_addr.s_addr) >> 24) == 127)
            continue;
        found = inet_ntop(AF_INET, &s->sin_addr, out, (socklen_t)cap) != NULL;
    }
    freeifaddrs(ifa);
    return found;
}

static void env_up(struct env *e)
{
    memset(e, 0, sizeof *e);
    char hosts[2048] = "";
    for (size_t i = 0; REBIND[i]; i++) {
        strcat(hosts, REBIND[i]);
        strcat(hosts, "\n");
    }
    char own[64];
    if (own_address(own, sizeof own))
        snprintf(hosts + strlen(hosts), sizeof hosts - strlen(hosts), "%s own.rebind.test\n", own);
    write_temp("hosts", hosts, e->hosts, sizeof e->hosts);
    write_temp("resolv.conf", "nameserver 127.0.0.1:9\noptions timeout:1 attempts:1\n", e->resolv,
               sizeof e->resolv);
    loop_init(&e->loop);
    vrec_init(&e->v);
    tserver_start(&e->srv);
    e->spec.network_enabled = 1;
    ck_assert_int_eq(strv_push(&e->spec.egress_allow, "*.rebind.test"), 0);
    struct egress_opts o = {NULL, e->hosts, e->resolv, 0, 3000, 1500};
    char err[256];
    int rc = egress_pair_new_opts(e->loop.base, &e->spec, -1, -1, vrec_cb, &e->v, &o, &e->pair,
                                  err, sizeof err);
    ck_assert_msg(rc == 0, "egress_pair_new_opts: %s", err);
    loop_start(&e->loop);
}

static void env_down(struct env *e)
{
    loop_stop(&e->loop);
    egress_pair_free(e->pair);
    loop_fini(&e->loop);
    tserver_stop(&e->srv);
    strv_clear(&e->spec.egress_allow);
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
    char buf[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    ck_assert_int_eq(send_str(fd, buf), 0);
}

static int server_accepted(struct env *e)
{
    pthread_mutex_lock(&e->srv.mu);
    int n = e->srv.accepted;
    pthread_mutex_unlock(&e->srv.mu);
    return n;
}

static void names(const char *line, char *name, size_t cap)
{
    const char *sp = strchr(line, ' ');
    snprintf(name, cap, "%s", sp + 1);
}

START_TEST(rebind_to_this_host_connect_and_forward)
{
    struct env e;
    env_up(&e);
    for (size_t i = 0; REBIND[i]; i++) {
        char name[128];
        names(REBIND[i], name, sizeof name);
        int fd = http_proxy(&e);
        sendf(fd, "CONNECT %s:%u HTTP/1.1\r\nHost: %s\r\n\r\n", name, e.srv.port4, name);
        int st = read_connect_response(fd, e.resp, sizeof e.resp, &e.body);
        ck_assert_msg(st == 403, "CONNECT %s answered %d", REBIND[i], st);
        close(fd);
        fd = http_proxy(&e);
        sendf(fd, "GET http://%s:%u/x HTTP/1.1\r\nHost: %s\r\n\r\n", name, e.srv.port4, name);
        st = read_response(fd, e.resp, sizeof e.resp, &e.body);
        ck_assert_msg(st == 403, "GET via %s answered %d", REBIND[i], st);
        close(fd);
    }
    /* this host's own interface address (where a service bound to 0.0.0.0 listens) */
    int fd = http_proxy(&e);
    sendf(fd, "CONNECT own.rebind.test:%u HTTP/1.1\r\n\r\n", e.srv.port4);
    int st = read_connect_response(fd, e.resp, sizeof e.resp, &e.body);
    ck_assert_msg(st == 403 || st == 502, "own address answered %d", st);
    close(fd);
    ck_assert_int_eq(server_accepted(&e), 0);
    env_down(&e);
}
END_TEST

/* The same through SOCKS5 (socks5h: the proxy resolves), and literal addresses. */
START_TEST(rebind_and_literals_socks5)
{
    struct env e;
    env_up(&e);
    uint16_t sp = egress_pair_socks_port(e.pair);
    for (size_t i = 0; REBIND[i]; i++) {
        char name[128];
        names(REBIND[i], name, sizeof name);
        int fd = tcp_connect("127.0.0.1", sp);
        ck_assert_int_ge(fd, 0);
        uint8_t req[300] = {5, 1, 0};
        ck_assert_int_eq(send_bytes(fd, req, 3), 0);
        uint8_t rep[10];
        ck_assert_int_eq(recv_exact(fd, rep, 2), 0);
        size_t n = strlen(name);
        uint8_t *q = req;
        *q++ = 5, *q++ = 1, *q++ = 0, *q++ = 3, *q++ = (uint8_t)n;
        memcpy(q, name, n);
        q += n;
        *q++ = (uint8_t)(e.srv.port4 >> 8), *q++ = (uint8_t)e.srv.port4;
        ck_assert_int_eq(send_bytes(fd, req, (size_t)(q - req)), 0);
        ck_assert_int_eq(recv_exact(fd, rep, 2), 0);
        ck_assert_msg(rep[1] == 0x02, "SOCKS5 %s answered 0x%02x", name, rep[1]);
        close(fd);
    }
    /* literal 0.0.0.0 and 127.0.0.1, which no entry names */
    const uint8_t lits[2][4] = {{0, 0, 0, 0}, {127, 0, 0, 1}};
    for (int k = 0; k < 2; k++) {
        int fd = tcp_connect("127.0.0.1", sp);
        ck_assert_int_ge(fd, 0);
        uint8_t hello[3] = {5, 1, 0}, rep[2];
        ck_assert_int_eq(send_bytes(fd, hello, 3), 0);
        ck_assert_int_eq(recv_exact(fd, rep, 2), 0);
        uint8_t req[10] = {5, 1, 0, 1, lits[k][0], lits[k][1], lits[k][2], lits[k][3],
                           (uint8_t)(e.srv.port4 >> 8), (uint8_t)e.srv.port4};
        ck_assert_int_eq(send_bytes(fd, req, 10), 0);
        ck_assert_int_eq(recv_exact(fd, rep, 2), 0);
        ck_assert_int_eq(rep[1], 0x02);
        close(fd);
    }
    ck_assert_int_eq(server_accepted(&e), 0);
    env_down(&e);
}
END_TEST

/*
 * Request-line tricks: userinfo that names an allowed host before the
 * real one, numeric spellings of loopback, a CONNECT to the proxy's own
 * port, CR/LF and NUL in the target, absolute-URI with a second Host.
 */
START_TEST(request_line_tricks)
{
    struct env e;
    env_up(&e);
    uint16_t P = e.srv.port4, own = egress_pair_http_port(e.pair);
    char reqs[12][300];
    int n = 0;
    snprintf(reqs[n++], 300, "GET http://zero.rebind.test@127.0.0.1:%u/ HTTP/1.1\r\n\r\n", P);
    snprintf(reqs[n++], 300, "GET http://127.0.0.1:%u#@x.rebind.test/ HTTP/1.1\r\n\r\n", P);
    snprintf(reqs[n++], 300, "GET http://127.1:%u/ HTTP/1.1\r\n\r\n", P);
    snprintf(reqs[n++], 300, "GET http://0x7f000001:%u/ HTTP/1.1\r\n\r\n", P);
    snprintf(reqs[n++], 300, "GET http://017700000001:%u/ HTTP/1.1\r\n\r\n", P);
    snprintf(reqs[n++], 300, "GET http://[::ffff:7f00:1]:%u/ HTTP/1.1\r\n\r\n", P);
    snprintf(reqs[n++], 300, "GET http://[fe80::1%%25lo]:%u/ HTTP/1.1\r\n\r\n", P);
    snprintf(reqs[n++], 300, "CONNECT localhost.:%u HTTP/1.1\r\n\r\n", own);
    snprintf(reqs[n++], 300, "CONNECT 127.0.0.1:%u HTTP/1.1\r\n\r\n", own);
    snprintf(reqs[n++], 300, "GET http://x.rebind.test\r\n.127.0.0.1:%u/ HTTP/1.1\r\n\r\n", P);
    snprintf(reqs[n++], 300,
             "GET /x HTTP/1.1\r\nHost: 127.0.0.1:%u\r\n\r\n", P); /* origin-form */
    snprintf(reqs[n++], 300, "GET http://LOCALHOST:%u/ HTTP/1.1\r\n\r\n", P);
    for (int i = 0; i < n; i++) {
        int fd = http_proxy(&e);
        ck_assert_int_eq(send_str(fd, reqs[i]), 0);
        int st = strncmp(reqs[i], "CONNECT", 7) == 0
                     ? read_connect_response(fd, e.resp, sizeof e.resp, &e.body)
                     : read_response(fd, e.resp, sizeof e.resp, &e.body);
        ck_assert_msg(st == 403 || st == 400, "%.*s answered %d", (int)strcspn(reqs[i], "\r"),
                      reqs[i], st);
        close(fd);
    }
    ck_assert_int_eq(server_accepted(&e), 0);
    env_down(&e);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("redteam-egress");
    TCase *tc = tcase_create("attempts");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, rebind_to_this_host_connect_and_forward);
    tcase_add_test(tc, rebind_and_literals_socks5);
    tcase_add_test(tc, request_line_tricks);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
