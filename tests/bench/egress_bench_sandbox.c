/*
 * The bulk download the issue names: curl inside a bubblewrap sandbox
 * fetching N bytes (default 1 GiB) from a host loopback server through the
 * session's CONNECT proxy, against the same curl on the host fetching it
 * directly. Same client, same server, one run: the ratio is the proxy's
 * cost. Target >= 0.8x. Usage: egress-bench-sandbox [bytes]
 *
 * As in egress-bench-proxy, the download is measured from a server on the
 * host's default congestion control and from one on Reno: the proxy's own
 * loopback leg is Reno, so on a host whose default is paced (BBR) only the
 * second line is free of pacing on both paths.
 */
#include <check.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bwrap_harness.h"
#include "harness.h"

static struct h h;
static size_t bytes;
static int result = 1;

/* Best of five each, interleaved (this machine swings 2x between runs); prints one line. */
static void measure(struct tserver *srv, const char *label)
{
    char url[128], cmd[512], out[256];
    snprintf(url, sizeof url, "http://localhost:%u/big/%zu", srv->port4, bytes);
    double best_direct = 1e9, best_proxy = 1e9;
    for (int rep = 0; rep < 5; rep++) {
        char *argv_direct[] = {"/usr/bin/curl", "-sS", "--noproxy", "*", "-o", "/dev/null",
                               "-w", "%{size_download}", url, NULL};
        double t0 = h_now();
        ck_assert_msg(run_capture(argv_direct, out, sizeof out) == 0 &&
                          strtoull(out, NULL, 10) == bytes,
                      "direct download failed: %s", out);
        double d = h_now() - t0;
        snprintf(cmd, sizeof cmd,
                 "curl -sS --noproxy '' -p -o /dev/null -w '%%{size_download}' '%s'", url);
        t0 = h_now();
        struct h_exec *x = h_run(&h, cmd);
        double p = h_now() - t0;
        ck_assert_msg(x && x->code == 0 && strtoull(x->out, NULL, 10) == bytes,
                      "sandboxed download failed: %.*s", x ? (int)x->err_len : 0,
                      x ? x->err : "");
        if (d < best_direct)
            best_direct = d;
        if (p < best_proxy)
            best_proxy = p;
    }
    double ratio = best_direct / best_proxy;
    printf("sandbox bulk %zu bytes with curl, server on %s: host direct %.2f GB/s, "
           "sandbox via CONNECT %.2f GB/s, ratio %.2f (target >= 0.80: %s)\n",
           bytes, label, (double)bytes / best_direct / 1e9, (double)bytes / best_proxy / 1e9,
           ratio, ratio >= 0.8 ? "met" : "NOT met");
}

/* Run as a check test: the shared harnesses report through check. */
START_TEST(bench)
{
    struct tserver srv, reno_srv;
    tserver_start(&srv);
    tserver_start(&reno_srv);
    static const char reno[] = "reno";
    ck_assert_int_eq(setsockopt(reno_srv.fd4, IPPROTO_TCP, TCP_CONGESTION, reno, sizeof reno - 1), 0);
    if (reno_srv.fd6 >= 0)
        ck_assert_int_eq(
            setsockopt(reno_srv.fd6, IPPROTO_TCP, TCP_CONGESTION, reno, sizeof reno - 1), 0);
    char cc[32] = "the default ";
    socklen_t ccl = (socklen_t)(sizeof cc - strlen(cc) - 1);
    ck_assert_int_eq(getsockopt(srv.fd4, IPPROTO_TCP, TCP_CONGESTION, cc + strlen(cc), &ccl), 0);
    h_init(&h);
    ccsb_spec *spec = NULL;
    ck_assert_int_eq(ccsb_spec_new(&spec), 0);
    ck_assert_int_eq(ccsb_spec_set_backend(spec, CCSB_BACKEND_NATIVE), 0);
    ck_assert_int_eq(ccsb_spec_add_egress_allow(spec, "localhost"), 0);
    int r = h_launch(&h, spec);
    ck_assert_msg(r == 0, "cannot launch a bubblewrap session: %s", h_errmsg(&h));
    measure(&srv, cc);
    measure(&reno_srv, "reno");
    h_done(&h);
    ccsb_spec_free(spec);
    tserver_stop(&srv);
    tserver_stop(&reno_srv);
    result = 0;
}
END_TEST

int main(int argc, char **argv)
{
    bytes = argc > 1 ? strtoull(argv[1], NULL, 10) : (size_t)1 << 30;
    if (access("/usr/bin/curl", X_OK) != 0) {
        printf("skipped: needs curl\n");
        return 77;
    }
    Suite *s = suite_create("egress-bench-sandbox");
    TCase *tc = tcase_create("bulk");
    tcase_set_timeout(tc, 900);
    tcase_add_test(tc, bench);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_set_fork_status(sr, CK_NOFORK);
    srunner_run_all(sr, CK_SILENT);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed || result ? EXIT_FAILURE : EXIT_SUCCESS;
}
