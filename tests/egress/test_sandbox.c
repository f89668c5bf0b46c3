/*
 * Egress from inside a real bubblewrap sandbox: the command's only way out
 * is its session's proxies, reached through the variables the backend sets.
 * Test servers listen on the host's loopback; the sandbox has its own.
 */
#include <check.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bwrap_harness.h"
#include "harness.h"

static struct tserver srv;
/* Sessions' records are large (output buffers): never on the stack. */
static struct h ha, hb;

static ccsb_spec *spec_with(int network, const char *const *allow)
{
    ccsb_spec *spec = NULL;
    ck_assert_int_eq(ccsb_spec_new(&spec), 0);
    ck_assert_int_eq(ccsb_spec_set_backend(spec, CCSB_BACKEND_NATIVE), 0);
    ck_assert_int_eq(ccsb_spec_set_network_enabled(spec, network), 0);
    for (size_t i = 0; allow && allow[i]; i++)
        ck_assert_int_eq(ccsb_spec_add_egress_allow(spec, allow[i]), 0);
    return spec;
}

static void launch(struct h *h, ccsb_spec *spec)
{
    h_init(h);
    int r = h_launch(h, spec);
    ck_assert_msg(r == 0, "launch: %s: %s", ccsb_strerror(r), h_errmsg(h));
}

static struct h_exec *run(struct h *h, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static struct h_exec *run(struct h *h, const char *fmt, ...)
{
    char cmd[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cmd, sizeof cmd, fmt, ap);
    va_end(ap);
    struct h_exec *x = h_run(h, cmd);
    ck_assert_ptr_nonnull(x);
    x->out[x->out_len < sizeof x->out ? x->out_len : sizeof x->out - 1] = '\0';
    x->err[x->err_len < sizeof x->err ? x->err_len : sizeof x->err - 1] = '\0';
    return x;
}

/* curl ignoring NO_PROXY, so "localhost" means the host's, via the proxy. */
#define CURL "curl -sS --max-time 10 --noproxy ''"

static void setup(void)
{
    tserver_start(&srv);
}

static void teardown(void)
{
    if (access("/usr/bin/curl", X_OK) == 0)
        tserver_stop(&srv);
}

START_TEST(allowed_through_every_proxy)
{
    const char *const allow[] = {"localhost", NULL};
    ccsb_spec *spec = spec_with(1, allow);
    launch(&ha, spec);
    struct h_exec *x = run(&ha, CURL " http://localhost:%u/forward", srv.port4);
    ck_assert_msg(x->code == 0 && strstr(x->out, "GET /forward"), "curl: %d %s %s", x->code,
                  x->out, x->err);
    x = run(&ha, CURL " -p http://localhost:%u/tunnel", srv.port4);
    ck_assert_msg(x->code == 0 && strstr(x->out, "GET /tunnel"), "curl -p: %d %s", x->code,
                  x->err);
    x = run(&ha, CURL " -x \"$ALL_PROXY\" http://localhost:%u/socks", srv.port4);
    ck_assert_msg(x->code == 0 && strstr(x->out, "GET /socks"), "curl socks: %d %s", x->code,
                  x->err);
    /* git-over-ssh's ProxyCommand: ccsb-init connect, a raw byte round trip. */
    x = run(&ha,
            "printf 'GET /proxycommand HTTP/1.1\\r\\nConnection: close\\r\\n\\r\\n' | "
            "eval \"$(printf '%%s' \"$GIT_SSH_COMMAND\" | sed -n "
            "\"s/.*ProxyCommand='\\([^']*\\)'.*/\\1/p\" | sed 's/%%h/localhost/; s/%%p/%u/')\"",
            srv.port4);
    ck_assert_msg(x->code == 0 && strstr(x->out, "GET /proxycommand"), "proxycommand: %d %s %s",
                  x->code, x->out, x->err);
    ck_assert_int_eq(h_saw_violation(&ha, "network-outbound", NULL), 0);
    char *details = NULL;
    ck_assert_int_eq(ccsb_session_details_json(ha.s, &details), 0);
    ck_assert_ptr_nonnull(strstr(details, "httpProxyPort"));
    ccsb_free(details);
    h_done(&ha);
    ccsb_spec_free(spec);
}
END_TEST

START_TEST(denied_and_direct_fail)
{
    const char *const allow[] = {"*.example.test", NULL};
    ccsb_spec *spec = spec_with(1, allow);
    launch(&ha, spec);
    struct h_exec *x = run(&ha, CURL " -o /dev/null -w '%%{http_code}' http://denied.test/");
    ck_assert_str_eq(x->out, "403");
    x = run(&ha, CURL " -o /dev/null -w '%%{http_code}' http://169.254.169.254/latest/");
    ck_assert_str_eq(x->out, "403");
    x = run(&ha, CURL " -o /dev/null -w '%%{http_code}' http://localhost:%u/", srv.port4);
    ck_assert_str_eq(x->out, "403");
    h_pump(&ha, 200);
    ck_assert(h_saw_violation(&ha, "network-outbound", "denied.test:80"));
    ck_assert(h_saw_violation(&ha, "network-outbound", "169.254.169.254:80"));
    /* Ignoring the proxy variables leads nowhere: the namespace is empty. */
    x = run(&ha, "curl -sS --max-time 5 --noproxy '*' http://127.0.0.1:%u/direct", srv.port4);
    ck_assert_int_ne(x->code, 0);
    ck_assert_ptr_null(strstr(x->out, "GET /direct"));
    x = run(&ha, "curl -sS --max-time 5 --noproxy '*' http://[::1]:%u/direct6", srv.port6);
    ck_assert_int_ne(x->code, 0);
    h_done(&ha);
    ccsb_spec_free(spec);
}
END_TEST

START_TEST(network_disabled_refuses)
{
    const char *const allow[] = {"localhost", NULL};
    ccsb_spec *spec = spec_with(0, allow);
    launch(&ha, spec);
    struct h_exec *x = run(&ha, CURL " -o /dev/null -w '%%{http_code}' http://localhost:%u/",
                           srv.port4);
    ck_assert_int_ne(x->code == 0 && strcmp(x->out, "200") == 0, 1);
    x = run(&ha, "curl -sS --max-time 5 --noproxy '*' http://127.0.0.1:%u/", srv.port4);
    ck_assert_int_ne(x->code, 0);
    ck_assert_int_eq(srv.accepted, 0);
    h_done(&ha);
    ccsb_spec_free(spec);
}
END_TEST

START_TEST(two_sessions_two_rule_sets)
{
    const char *const allow_a[] = {"localhost", NULL};
    const char *const allow_b[] = {"only-b.test", NULL};
    ccsb_spec *sa = spec_with(1, allow_a), *sb = spec_with(1, allow_b);
    launch(&ha, sa);
    launch(&hb, sb);
    struct h_exec *x = run(&hb, CURL " -o /dev/null -w '%%{http_code}' http://localhost:%u/b",
                           srv.port4);
    ck_assert_str_eq(x->out, "403");
    x = run(&ha, CURL " http://localhost:%u/a", srv.port4);
    ck_assert_ptr_nonnull(strstr(x->out, "GET /a"));
    h_pump(&hb, 100);
    h_pump(&ha, 100);
    char t[64];
    snprintf(t, sizeof t, "localhost:%u", srv.port4);
    ck_assert(h_saw_violation(&hb, "network-outbound", t));
    ck_assert(!h_saw_violation(&ha, "network-outbound", NULL));
    h_done(&ha);
    h_done(&hb);
    ccsb_spec_free(sa);
    ccsb_spec_free(sb);
}
END_TEST

int main(void)
{
    if (access("/usr/bin/curl", X_OK) != 0) {
        printf("skipped: curl is the client under test and is not installed\n");
        return 77;
    }
    Suite *s = suite_create("egress-sandbox");
    TCase *tc = tcase_create("bwrap");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, allowed_through_every_proxy);
    tcase_add_test(tc, denied_and_direct_fail);
    tcase_add_test(tc, network_disabled_refuses);
    tcase_add_test(tc, two_sessions_two_rule_sets);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
