/*
 * `ccsb explain --platform macos` through the public API, on this host:
 * the profile is printed, each denied path in every spelling, the
 * ancestors of protected paths pinned, and it passes the checker.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <ccsandbox/ccsandbox.h>

#include "sbpl_check.h"

static char *explain(ccsb_spec *spec)
{
    char *text = NULL, err[512] = "";
    int rc = ccsb_explain(spec, "macos", &text, err, sizeof(err));
    ck_assert_msg(rc == 0, "ccsb_explain: %d %s", rc, err);
    return text;
}

START_TEST(protect_srv_repo)
{
    ccsb_spec *spec = NULL;
    ck_assert_int_eq(ccsb_spec_new(&spec), 0);
    ck_assert_int_eq(ccsb_spec_add_protected_path(spec, "/srv/repo"), 0);
    ck_assert_int_eq(ccsb_spec_add_protected_path(spec, "/tmp/ccsb-explain-missing/cfg"), 0);
    ck_assert_int_eq(ccsb_spec_set_session_id(spec, "explain-1"), 0);
    char *text = explain(spec);
    const char *prof = strstr(text, "(version 1)");
    ck_assert_msg(prof, "no profile in:\n%s", text);
    struct sbpl_profile p;
    char err[512];
    ck_assert_msg(sbpl_parse(prof, "ccsb:explain-1", &p, err, sizeof(err)) == 0, "%s", err);
    ck_assert_int_eq(sbpl_path_allowed(&p, "file-write-data", "/srv/repo/x"), 0);
    ck_assert_uint_eq(sbpl_count_filter(&p, 0, "file-write*", "subpath", "/srv/repo"), 1);
    /* both spellings, and the ancestors pinned in both */
    ck_assert_uint_eq(sbpl_count_filter(&p, 0, "file-write*", "subpath", "/tmp/ccsb-explain-missing/cfg"), 1);
    ck_assert_uint_eq(sbpl_count_filter(&p, 0, "file-write*", "subpath",
                                        "/private/tmp/ccsb-explain-missing/cfg"), 1);
    const char *anc[] = {"/srv", "/tmp/ccsb-explain-missing", "/private/tmp/ccsb-explain-missing",
                         "/private/tmp", "/private"};
    for (size_t i = 0; i < sizeof(anc) / sizeof(anc[0]); i++)
        ck_assert_msg(sbpl_count_filter(&p, 0, "file-write-unlink", "literal", anc[i]) == 1, "%s", anc[i]);
    ck_assert_int_eq(sbpl_path_allowed(&p, "file-write-unlink", "/srv"), 0);
    /* ports are not known before launch */
    ck_assert_ptr_nonnull(strstr(prof, "proxy port not assigned yet"));
    sbpl_profile_free(&p);
    ccsb_free(text);
    ccsb_spec_free(spec);
}
END_TEST

START_TEST(remapped_bind_is_flagged)
{
    char dir[] = "/tmp/ccsb-explain-XXXXXX";
    ck_assert_ptr_nonnull(mkdtemp(dir));
    ccsb_spec *spec = NULL;
    ck_assert_int_eq(ccsb_spec_new(&spec), 0);
    ck_assert_int_eq(ccsb_spec_add_bind_mount(spec, dir, "/work", 0), 0);
    char *text = explain(spec);
    ck_assert_msg(strstr(text, "cannot launch on macOS") && strstr(text, "/work"), "%s", text);
    ccsb_free(text);
    ccsb_spec_free(spec);
    ck_assert_int_eq(rmdir(dir), 0);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("seatbelt-explain");
    TCase *t = tcase_create("explain");
    tcase_add_test(t, protect_srv_repo);
    tcase_add_test(t, remapped_bind_is_flagged);
    suite_add_tcase(s, t);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
