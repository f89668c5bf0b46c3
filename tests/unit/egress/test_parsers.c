/* HTTP head / framing / chunked scanner and SOCKS parsers: pure vectors. */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "egress/http_parse.h"
#include "egress/socks_parse.h"

static struct http_head h;

static int req(const char *s, const char **why)
{
    return http_parse_request(s, strlen(s), &h, why);
}

START_TEST(test_request_heads)
{
    const char *why = NULL;
    const char *r = "GET http://a.test/x HTTP/1.1\r\nHost: a.test\r\nX-Y:  z \r\n\r\nBODY";
    ck_assert_int_eq(req(r, &why), (int)(strlen(r) - 4));
    ck_assert_int_eq((int)h.nh, 2);
    ck_assert_int_eq((int)h.h[1].vlen, 1);
    ck_assert_int_eq(h.minor, 1);
    /* Incomplete heads need more bytes, at every cut. */
    for (size_t cut = 0; cut < strlen(r) - 4; cut++)
        ck_assert_int_eq(http_parse_request(r, cut, &h, &why), 0);
    /* Bare LF line ends are accepted. */
    ck_assert_int_gt(req("GET http://a/ HTTP/1.0\nHost: a\n\n", &why), 0);
    ck_assert_int_eq(h.minor, 0);
    const char *bad[] = {"GET\r\n\r\n", "GET  http://a/ HTTP/1.1\r\n\r\n",
                         "GET http://a/ HTTP/2\r\n\r\n", "G@T http://a/ HTTP/1.1\r\n\r\n",
                         "GET http://a/ HTTP/1.1\r\n folded\r\n\r\n",
                         "GET http://a/ HTTP/1.1\r\nNoColon\r\n\r\n",
                         "GET http://a/ HTTP/1.1\r\nSp ace: x\r\n\r\n",
                         "GET http://a/ HTTP/1.1\r\nX: a\rb\r\n\r\n",
                         "GET http://a/\x01 HTTP/1.1\r\n\r\n"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        ck_assert_msg(req(bad[i], &why) == -1, "accepted bad[%zu]", i);
    /* Too large a head is refused rather than buffered forever. */
    char *big = malloc(HTTP_MAX_HEAD + 10);
    memset(big, 'a', HTTP_MAX_HEAD + 10);
    ck_assert_int_eq(http_parse_request(big, HTTP_MAX_HEAD + 10, &h, &why), -1);
    free(big);
}
END_TEST

START_TEST(test_targets)
{
    const char *why = NULL;
    struct http_target t;
    ck_assert_int_gt(req("CONNECT [::1]:8443 HTTP/1.1\r\n\r\n", &why), 0);
    ck_assert_int_eq(http_parse_proxy_target(&h, &t, &why), 0);
    ck_assert(t.is_connect);
    ck_assert_str_eq(t.host, "[::1]");
    ck_assert_int_eq(t.port, 8443);
    ck_assert_int_gt(req("GET http://Ex.test:8080?q HTTP/1.1\r\n\r\n", &why), 0);
    ck_assert_int_eq(http_parse_proxy_target(&h, &t, &why), 0);
    ck_assert_str_eq(t.host, "Ex.test");
    ck_assert_int_eq(t.port, 8080);
    ck_assert_int_eq((int)t.plen, 2);
    ck_assert_int_gt(req("GET HTTP://ex.test HTTP/1.1\r\n\r\n", &why), 0);
    ck_assert_int_eq(http_parse_proxy_target(&h, &t, &why), 0);
    ck_assert_int_eq(t.port, 80);
    ck_assert_int_eq((int)t.plen, 0);
    const char *bad[] = {"CONNECT ex.test HTTP/1.1\r\n\r\n", "CONNECT ex.test:0 HTTP/1.1\r\n\r\n",
                         "CONNECT ex.test:99999 HTTP/1.1\r\n\r\n", "CONNECT :443 HTTP/1.1\r\n\r\n",
                         "GET / HTTP/1.1\r\n\r\n", "GET https://ex.test/ HTTP/1.1\r\n\r\n",
                         "GET ftp://ex.test/ HTTP/1.1\r\n\r\n",
                         "GET http://u:p@ex.test/ HTTP/1.1\r\n\r\n",
                         "GET http://[::1/ HTTP/1.1\r\n\r\n"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        ck_assert_int_gt(req(bad[i], &why), 0);
        ck_assert_msg(http_parse_proxy_target(&h, &t, &why) == -1, "accepted bad[%zu]", i);
    }
}
END_TEST

START_TEST(test_framing)
{
    const char *why = NULL;
    uint64_t len;
    ck_assert_int_gt(req("POST http://a/ HTTP/1.1\r\nContent-Length: 12\r\n\r\n", &why), 0);
    ck_assert_int_eq(http_request_body(&h, &len, &why), HTTP_BODY_LENGTH);
    ck_assert_int_eq((int)len, 12);
    ck_assert_int_gt(req("POST http://a/ HTTP/1.1\r\nTransfer-Encoding: gzip, chunked\r\n\r\n", &why), 0);
    ck_assert_int_eq(http_request_body(&h, &len, &why), HTTP_BODY_CHUNKED);
    ck_assert_int_gt(req("GET http://a/ HTTP/1.1\r\n\r\n", &why), 0);
    ck_assert_int_eq(http_request_body(&h, &len, &why), HTTP_BODY_NONE);
    const char *smuggle[] = {
        "POST http://a/ HTTP/1.1\r\nContent-Length: 1\r\nTransfer-Encoding: chunked\r\n\r\n",
        "POST http://a/ HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n",
        "POST http://a/ HTTP/1.1\r\nContent-Length: -1\r\n\r\n",
        "POST http://a/ HTTP/1.1\r\nContent-Length: 1 2\r\n\r\n",
        "POST http://a/ HTTP/1.1\r\nTransfer-Encoding: chunked, gzip\r\n\r\n",
        "POST http://a/ HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n"};
    for (size_t i = 0; i < sizeof smuggle / sizeof smuggle[0]; i++) {
        ck_assert_int_gt(req(smuggle[i], &why), 0);
        ck_assert_msg(http_request_body(&h, &len, &why) == -1, "accepted smuggle[%zu]", i);
    }
    const char *resp = "HTTP/1.1 204 No Content\r\nContent-Length: 5\r\n\r\n";
    ck_assert_int_gt(http_parse_response(resp, strlen(resp), &h, &why), 0);
    ck_assert_int_eq(http_response_body(&h, 0, &len, &why), HTTP_BODY_NONE);
    resp = "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n";
    ck_assert_int_gt(http_parse_response(resp, strlen(resp), &h, &why), 0);
    ck_assert_int_eq(http_response_body(&h, 1, &len, &why), HTTP_BODY_NONE);
    ck_assert_int_eq(http_response_body(&h, 0, &len, &why), HTTP_BODY_LENGTH);
    resp = "HTTP/1.0 200 OK\r\n\r\n";
    ck_assert_int_gt(http_parse_response(resp, strlen(resp), &h, &why), 0);
    ck_assert_int_eq(http_response_body(&h, 0, &len, &why), HTTP_BODY_UNTIL_CLOSE);
    resp = "HTTP/1.1 2x0 OK\r\n\r\n";
    ck_assert_int_eq(http_parse_response(resp, strlen(resp), &h, &why), -1);
    /* Hop-by-hop: fixed names and names listed in Connection, never the framing. */
    const char *hop = "GET http://a/ HTTP/1.1\r\nConnection: x-a, content-length\r\nX-A: 1\r\n"
                      "Content-Length: 0\r\nProxy-Authorization: x\r\nX-B: 2\r\n\r\n";
    ck_assert_int_gt(req(hop, &why), 0);
    ck_assert(http_is_hop_by_hop(&h, &h.h[0]));
    ck_assert(http_is_hop_by_hop(&h, &h.h[1]));
    ck_assert(!http_is_hop_by_hop(&h, &h.h[2]));
    ck_assert(http_is_hop_by_hop(&h, &h.h[3]));
    ck_assert(!http_is_hop_by_hop(&h, &h.h[4]));
}
END_TEST

static long scan_all(const char *s, size_t step, int *done)
{
    struct http_chunked c;
    memset(&c, 0, sizeof c);
    size_t n = strlen(s), off = 0;
    *done = 0;
    while (off < n && !*done) {
        size_t k = n - off < step ? n - off : step;
        long r = http_chunked_scan(&c, s + off, k, done);
        if (r < 0)
            return -1;
        off += (size_t)r;
        if ((size_t)r < k && !*done)
            return -1;
    }
    return (long)off;
}

START_TEST(test_chunked)
{
    const char *body = "4\r\nabcd\r\nA;x=y\r\n0123456789\r\n0\r\nT: 1\r\n\r\nNEXT";
    int done;
    for (size_t step = 1; step < 50; step++) {
        ck_assert_int_eq(scan_all(body, step, &done), (long)strlen(body) - 4);
        ck_assert(done);
    }
    ck_assert_int_eq(scan_all("0\r\n\r\n", 3, &done), 5);
    ck_assert(done);
    ck_assert_int_eq(scan_all("3\r\nab", 100, &done), 5);
    ck_assert(!done);
    const char *bad[] = {"x\r\n", "4\r\nabcdX\r\n", "4\nabcd", "ffffffffffffffff1\r\n",
                         "0\r\nT: 1\n"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        ck_assert_msg(scan_all(bad[i], 100, &done) == -1, "accepted bad[%zu]", i);
}
END_TEST

START_TEST(test_socks)
{
    int none, up;
    const uint8_t g[] = {5, 2, 0, 2};
    ck_assert_int_eq(socks5_parse_greeting(g, 4, &none, &up), 4);
    ck_assert(none && up);
    ck_assert_int_eq(socks5_parse_greeting(g, 3, &none, &up), 0);
    const uint8_t g0[] = {5, 0};
    ck_assert_int_eq(socks5_parse_greeting(g0, 2, &none, &up), -1);
    const uint8_t g4[] = {4, 1};
    ck_assert_int_eq(socks5_parse_greeting(g4, 2, &none, &up), -1);

    char user[256], pass[256];
    const uint8_t a[] = {1, 2, 'u', 'v', 3, 'p', 'q', 'r'};
    ck_assert_int_eq(socks5_parse_userpass(a, sizeof a, user, pass), 8);
    ck_assert_str_eq(user, "uv");
    ck_assert_str_eq(pass, "pqr");
    ck_assert_int_eq(socks5_parse_userpass(a, 7, user, pass), 0);
    const uint8_t anul[] = {1, 2, 'u', 0, 1, 'p'};
    ck_assert_int_eq(socks5_parse_userpass(anul, sizeof anul, user, pass), -1);

    struct socks5_request r;
    uint8_t rep;
    const uint8_t d[] = {5, 1, 0, 3, 4, 'a', '.', 'b', 'c', 1, 187};
    ck_assert_int_eq(socks5_parse_request(d, sizeof d, &r, &rep), (int)sizeof d);
    ck_assert_str_eq(r.host, "a.bc");
    ck_assert_int_eq(r.port, 443);
    for (size_t cut = 0; cut < sizeof d; cut++)
        ck_assert_int_eq(socks5_parse_request(d, cut, &r, &rep), 0);
    const uint8_t v6[22] = {5, 1, 0, 4, [19] = 1, [20] = 0, [21] = 80};
    ck_assert_int_eq(socks5_parse_request(v6, 22, &r, &rep), 22);
    ck_assert_int_eq(r.addr[15], 1);
    const uint8_t at[] = {5, 1, 0, 7, 0, 0};
    ck_assert_int_eq(socks5_parse_request(at, sizeof at, &r, &rep), -1);
    ck_assert_int_eq(rep, SOCKS5_REP_ATYP_UNSUPPORTED);
    const uint8_t dnul[] = {5, 1, 0, 3, 2, 'a', 0, 0, 80};
    ck_assert_int_eq(socks5_parse_request(dnul, sizeof dnul, &r, &rep), -1);
    const uint8_t rsv[] = {5, 1, 1, 1, 1, 2, 3, 4, 0, 80};
    ck_assert_int_eq(socks5_parse_request(rsv, sizeof rsv, &r, &rep), -1);

    struct socks4_request s4;
    const uint8_t q[] = {4, 1, 0, 80, 1, 2, 3, 4, 'u', 0};
    ck_assert_int_eq(socks4_parse_request(q, sizeof q, &s4), (int)sizeof q);
    ck_assert_int_eq(s4.ip[3], 4);
    const uint8_t qa[] = {4, 1, 0, 80, 0, 0, 0, 9, 0, 'h', '.', 'x', 0};
    ck_assert_int_eq(socks4_parse_request(qa, sizeof qa, &s4), (int)sizeof qa);
    ck_assert_str_eq(s4.host, "h.x");
    ck_assert_int_eq(socks4_parse_request(qa, sizeof qa - 1, &s4), 0);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("egress-parsers");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, test_request_heads);
    tcase_add_test(tc, test_targets);
    tcase_add_test(tc, test_framing);
    tcase_add_test(tc, test_chunked);
    tcase_add_test(tc, test_socks);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
