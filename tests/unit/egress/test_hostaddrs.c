/*
 * The host-address cache follows the kernel: an address added or removed
 * after the first read is seen by the next lookup. Played in a private
 * user + network namespace (its own loopback only), so the test changes
 * nothing outside itself.
 */
#include <arpa/inet.h>
#include <check.h>
#include <errno.h>
#include <net/if.h>
#include <netinet/in.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "egress/hostaddrs.h"

static int has_v4(const struct egress_hostaddrs *h, const char *ip)
{
    uint8_t a[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
    if (inet_pton(AF_INET, ip, a + 12) != 1)
        return -1;
    for (size_t i = 0; i < h->n; i++)
        if (memcmp(h->v[i], a, 16) == 0)
            return 1;
    return 0;
}

static int set_flags(int s, const char *name, short on, short off)
{
    struct ifreq ifr;
    memset(&ifr, 0, sizeof ifr);
    snprintf(ifr.ifr_name, sizeof ifr.ifr_name, "%s", name);
    if (ioctl(s, SIOCGIFFLAGS, &ifr) < 0)
        return -1;
    ifr.ifr_flags = (short)((ifr.ifr_flags | on) & ~off);
    return ioctl(s, SIOCSIFFLAGS, &ifr);
}

static int add_alias(int s, const char *name, const char *ip)
{
    struct ifreq ifr;
    memset(&ifr, 0, sizeof ifr);
    snprintf(ifr.ifr_name, sizeof ifr.ifr_name, "%s", name);
    struct sockaddr_in *sin = (struct sockaddr_in *)&ifr.ifr_addr;
    sin->sin_family = AF_INET;
    inet_pton(AF_INET, ip, &sin->sin_addr);
    return ioctl(s, SIOCSIFADDR, &ifr);
}

/* Exit codes: 0 pass, 77 cannot make the namespace, else the failing step. */
static int in_namespace(void)
{
    if (unshare(CLONE_NEWUSER | CLONE_NEWNET) < 0)
        return 77;
    int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (s < 0 || set_flags(s, "lo", IFF_UP, 0) < 0)
        return 2;
    struct hostaddrs_cache c;
    hostaddrs_cache_init(&c);
    const struct egress_hostaddrs *h = hostaddrs_get(&c);
    if (!h || has_v4(h, "127.0.0.1") != 1 || has_v4(h, "192.0.2.1") != 0)
        return 3;
    /* Unchanged: the same list again. */
    if (hostaddrs_get(&c) != h || c.watch < 0)
        return 4;
    if (add_alias(s, "lo:1", "192.0.2.1") < 0)
        return 5;
    h = hostaddrs_get(&c);
    if (!h || has_v4(h, "192.0.2.1") != 1)
        return 6;
    /* Down deletes the alias. */
    if (set_flags(s, "lo:1", 0, IFF_UP) < 0)
        return 7;
    h = hostaddrs_get(&c);
    if (!h || has_v4(h, "192.0.2.1") != 0 || has_v4(h, "127.0.0.1") != 1)
        return 8;
    hostaddrs_cache_clear(&c);
    close(s);
    return 0;
}

START_TEST(test_follows_changes)
{
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0)
        _exit(in_namespace());
    int st = 0;
    ck_assert_int_eq(waitpid(pid, &st, 0), pid);
    ck_assert(WIFEXITED(st));
    if (WEXITSTATUS(st) == 77) {
        fprintf(stderr, "skipped: no private user+network namespace here\n");
        return;
    }
    ck_assert_msg(WEXITSTATUS(st) == 0, "step %d failed", WEXITSTATUS(st));
}
END_TEST

START_TEST(test_lazy)
{
    /* Nothing is opened or read before the first lookup. */
    struct hostaddrs_cache c;
    hostaddrs_cache_init(&c);
    ck_assert_int_eq(c.watch, -1);
    ck_assert_int_eq(c.tried, 0);
    ck_assert_int_eq((int)c.cur.n, 0);
    ck_assert_ptr_nonnull(hostaddrs_get(&c));
    ck_assert_int_gt((int)c.cur.n, 0);
    hostaddrs_cache_clear(&c);
    ck_assert_int_eq(c.watch, -1);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("egress-hostaddrs");
    TCase *tc = tcase_create("cache");
    tcase_add_test(tc, test_lazy);
    tcase_add_test(tc, test_follows_changes);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
