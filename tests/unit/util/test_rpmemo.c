/* Unit: the realpath memo answers exactly as realpath(3) does. */
#include <check.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/rpmemo.h"

static char root[] = "/tmp/ccsb-rpmemo-XXXXXX";

static void sh(const char *cmd)
{
    char buf[2048];
    snprintf(buf, sizeof buf, "cd %s && %s", root, cmd);
    ck_assert_msg(system(buf) == 0, "%s", cmd);
}

/* Same answer and, on failure, the same errno, asked twice (memo hit). */
static void same(struct rpmemo *m, const char *rel)
{
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s%s", rel[0] == '/' && strncmp(rel, "/tmp", 4) == 0 ? "" : root,
             rel);
    for (int round = 0; round < 2; round++) {
        errno = 0;
        char *want = realpath(path, NULL);
        int want_err = errno;
        errno = 0;
        char *got = rpmemo_realpath(m, path);
        int got_err = errno;
        if (want) {
            ck_assert_msg(got != NULL, "%s: memo failed (%s), realpath %s", path,
                          strerror(got_err), want);
            ck_assert_str_eq(got, want);
        } else {
            ck_assert_msg(got == NULL, "%s: memo gave %s, realpath failed", path, got);
            ck_assert_msg(got_err == want_err, "%s: errno %s, realpath %s", path,
                          strerror(got_err), strerror(want_err));
        }
        free(want);
        free(got);
    }
}

START_TEST(matches_realpath)
{
    ck_assert_ptr_nonnull(mkdtemp(root));
    sh("mkdir -p a/b/c d && touch a/b/f && ln -s a/b l1 && ln -s /etc l2 && ln -s ../a d/up "
       "&& ln -s nowhere dang && ln -s loop1 loop2 && ln -s loop2 loop1 && ln -s l1/c l3");
    struct rpmemo m = RPMEMO_INIT;
    const char *cases[] = {
        "", "/a", "/a/b", "/a/b/c", "/a/b/f", "/a/b/f/x", "/a/missing", "/a/missing/x",
        "/l1", "/l1/c", "/l1/f", "/l2", "/l2/passwd", "/d/up/b/c", "/dang", "/dang/x",
        "/loop1", "/loop1/x", "/l3", "/a//b", "/a/./b", "/a/b/../b", "/a/b/", "/", "/tmp",
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        same(&m, cases[i]);
    /* every answer is remembered, and the results still match */
    ck_assert_uint_gt(m.n, 10);
    const char *kinds[] = {"/a", "/a/b/f", "/l1", "/dang", "/missing", "/a/b/f/x"};
    for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++)
        for (int round = 0; round < 2; round++) {
            char path[PATH_MAX];
            snprintf(path, sizeof path, "%s%s", root, kinds[i]);
            struct stat st;
            int want = lstat(path, &st) < 0 ? -errno : 0;
            mode_t mode = 0;
            int got = rpmemo_lstat(&m, path, &mode);
            ck_assert_int_eq(got, want);
            if (!want)
                ck_assert_uint_eq(mode, st.st_mode);
        }
    rpmemo_clear(&m);
    ck_assert_uint_eq(m.n, 0);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", root);
    ck_assert_int_eq(system(cmd), 0);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("rpmemo");
    TCase *tc = tcase_create("memo");
    tcase_add_test(tc, matches_realpath);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
