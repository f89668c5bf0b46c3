/*
 * How fast a detached protection ends the sandbox: the host renames a new
 * file over a masked secret in a bound directory while a command runs in
 * a warm session; measured from the rename's return to (a) the command's
 * process gone on the host (its pidfd polls readable), (b) the host
 * library's mount-detached violation event. Medians of N sessions; no
 * target (nothing to compare with: without the watch the sandbox never
 * stops).
 *
 *   bench-detach [N]    (default 20; TMPDIR picks where the fake homes go)
 */
#include <check.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "bwrap_harness.h"

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static int n = 20;

/* (a check test case: the harness reports through check) */
START_TEST(measure)
{
    double *kill_us = calloc((size_t)n, sizeof *kill_us);
    double *event_us = calloc((size_t)n, sizeof *event_us);
    ck_assert(kill_us && event_us);
    for (int i = 0; i < n; i++) {
        static struct h h; /* large */
        h_init(&h);
        char *home = h_tmpdir("bench-detach");
        char cred[4200], lock[4300];
        snprintf(cred, sizeof cred, "%s/.git-credentials", home);
        snprintf(lock, sizeof lock, "%s.lock", cred);
        setenv("HOME", home, 1);
        h_write(cred, "OLD\n");
        ccsb_spec *spec;
        ck_assert_int_eq(ccsb_spec_new(&spec), 0);
        ccsb_spec_set_backend(spec, CCSB_BACKEND_NATIVE);
        ccsb_spec_add_bind_mount(spec, home, NULL, 0);
        ck_assert_msg(h_launch(&h, spec) == 0, "launch: %s", h_errmsg(&h));
        h_start(&h, "exec sleep 1000.87", 0, 0);
        pid_t pid = -1;
        for (int t = 0; t < 500 && pid < 0; t++) {
            h_pump(&h, 2);
            h_find_procs("sleep 1000.87", &pid, 1);
        }
        int pfd = pid > 0 ? (int)syscall(SYS_pidfd_open, pid, 0) : -1;
        ck_assert_msg(pfd >= 0, "cannot find the command's process");
        h_write(lock, "NEW\n");
        double t0 = h_now();
        ck_assert_int_eq(rename(lock, cred), 0);
        struct pollfd p = {.fd = pfd, .events = POLLIN};
        ck_assert_msg(poll(&p, 1, 5000) == 1, "the command was not killed");
        kill_us[i] = (h_now() - t0) * 1e6;
        while (!h_saw_violation(&h, "mount-detached", ".git-credentials") && h_now() - t0 < 5)
            h_pump(&h, 1);
        event_us[i] = (h_now() - t0) * 1e6;
        close(pfd);
        ccsb_spec_free(spec);
        h_done(&h);
        h_rmtree(home);
        free(home);
    }
    qsort(kill_us, (size_t)n, sizeof *kill_us, cmp_double);
    qsort(event_us, (size_t)n, sizeof *event_us, cmp_double);
    printf("host rename over a masked file -> command killed: median %.0f us, max %.0f us\n",
           kill_us[n / 2], kill_us[n - 1]);
    printf("host rename over a masked file -> violation event: median %.0f us, max %.0f us "
           "(%d sessions)\n",
           event_us[n / 2], event_us[n - 1], n);
    free(kill_us);
    free(event_us);
}
END_TEST

int main(int argc, char **argv)
{
    if (argc > 1)
        n = atoi(argv[1]);
    if (n < 1 || n > 1000)
        n = 20;
    Suite *s = suite_create("bench-detach");
    TCase *tc = tcase_create("detach");
    tcase_set_timeout(tc, 600);
    tcase_add_test(tc, measure);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_set_fork_status(sr, CK_NOFORK);
    srunner_run_all(sr, CK_SILENT);
    int failed = srunner_ntests_failed(sr);
    if (failed)
        srunner_print(sr, CK_NORMAL);
    srunner_free(sr);
    return failed ? 1 : 0;
}
