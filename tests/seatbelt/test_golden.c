/*
 * Golden profiles. For every fixture in tests/seatbelt/policies/ the
 * generated profile must equal tests/seatbelt/golden/<name>.sb byte for
 * byte. A golden is a reviewed claim, so each one is also parsed by the
 * structural checker and held to the fixture's "expect" list (concrete
 * requests and their answers under both precedence readings).
 *
 * `test-seatbelt-golden --regen` rewrites the golden files (and checks
 * them); tests/seatbelt/regen-goldens.sh runs it. Nothing else writes them.
 */
#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include <ccsandbox/ccsandbox.h>

#include "backend/seatbelt_profile.h"
#include "fixture.h"
#include "policy/policy.h"
#include "sbpl_check.h"
#include "spec/spec.h"

static int regen;

static const char *src_root(void)
{
    const char *root = getenv("CCSB_SOURCE_ROOT");
    ck_assert_msg(root, "CCSB_SOURCE_ROOT is not set");
    return root;
}

static int cmp_names(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The names (without .json, skipping *.claims.json) in a fixture
 * directory, sorted. */
static size_t list_dir(const char *sub, char ***out)
{
    char dir[4096];
    snprintf(dir, sizeof(dir), "%s/tests/seatbelt/%s", src_root(), sub);
    DIR *d = opendir(dir);
    ck_assert_msg(d, "opendir %s: %s", dir, strerror(errno));
    char **names = NULL;
    size_t n = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        size_t l = strlen(e->d_name);
        if (l <= 5 || strcmp(e->d_name + l - 5, ".json") != 0 ||
            (l > 12 && strcmp(e->d_name + l - 12, ".claims.json") == 0))
            continue;
        names = realloc(names, (n + 1) * sizeof(*names));
        names[n++] = strndup(e->d_name, l - 5);
    }
    closedir(d);
    qsort(names, n, sizeof(*names), cmp_names);
    *out = names;
    return n;
}

/* Holds the golden text to the fixture's "expect" claims. */
static void check_claims(const char *name, const char *file, const char *text, const char *tag)
{
    struct sbpl_profile prof;
    char err[512];
    ck_assert_msg(sbpl_parse(text, tag, &prof, err, sizeof(err)) == 0, "%s: checker: %s", name, err);
    json_error_t jerr;
    json_t *root = json_load_file(file, 0, &jerr);
    ck_assert_ptr_nonnull(root);
    json_t *claims = json_object_get(root, "expect");
    ck_assert_msg(json_array_size(claims) > 0, "%s: no \"expect\" claims", name);
    size_t i;
    json_t *c;
    json_array_foreach(claims, i, c) {
        struct sbpl_req r = {
            .op = json_string_value(json_object_get(c, "op")),
            .path = json_string_value(json_object_get(c, "path")),
            .remote = json_string_value(json_object_get(c, "remote")),
            .unix_socket = json_string_value(json_object_get(c, "unix")),
            .same_sandbox = json_is_true(json_object_get(c, "same_sandbox")),
            .pty_extension = json_is_true(json_object_get(c, "pty")),
        };
        ck_assert_msg(r.op, "%s: expect[%zu] has no op", name, i);
        int want = json_is_true(json_object_get(c, "allow"));
        int got = sbpl_eval_both(&prof, &r);
        ck_assert_msg(got == want, "%s: expect[%zu] %s %s: got %d, claimed %d", name, i, r.op,
                      r.path ? r.path : r.remote ? r.remote : r.unix_socket ? r.unix_socket : "",
                      got, want);
    }
    json_decref(root);
    sbpl_profile_free(&prof);
}

/* Regenerates (on request) and compares one golden; returns its text. */
static char *golden_compare(const char *name, const char *golden, const char *text)
{
    if (regen) {
        FILE *f = fopen(golden, "wb");
        ck_assert_msg(f, "%s: %s", golden, strerror(errno));
        ck_assert(fwrite(text, 1, strlen(text), f) == strlen(text));
        ck_assert(fclose(f) == 0);
        printf("wrote %s\n", golden);
    }
    char *want = read_file(golden, NULL);
    ck_assert_msg(want, "%s: missing golden %s (run tests/seatbelt/regen-goldens.sh and "
                  "review the diff)", name, golden);
    ck_assert_msg(strcmp(want, text) == 0,
                  "%s: the profile differs from its golden; if the change is intended, "
                  "run tests/seatbelt/regen-goldens.sh and review the diff", name);
    return want;
}

START_TEST(goldens)
{
    char **names;
    size_t n = list_dir("policies", &names);
    ck_assert_uint_ge(n, 10);
    for (size_t k = 0; k < n; k++) {
        char file[4096], golden[4096], err[512];
        snprintf(file, sizeof(file), "%s/tests/seatbelt/policies/%s.json", src_root(), names[k]);
        snprintf(golden, sizeof(golden), "%s/tests/seatbelt/golden/%s.sb", src_root(), names[k]);
        struct fixture fx;
        ck_assert_msg(fixture_load(file, &fx, err, sizeof(err)) == 0, "%s", err);
        char *text = NULL;
        int rc = seatbelt_profile_generate(&fx.policy, &fx.opts, &text, err, sizeof(err));
        ck_assert_msg(rc == 0, "%s: %s", names[k], err);
        char *want = golden_compare(names[k], golden, text);
        char *tag = seatbelt_message_tag(fx.opts.session_id, fx.opts.exec_tag);
        check_claims(names[k], file, want, tag);
        free(tag);
        free(want);
        free(text);
        fixture_free(&fx);
        free(names[k]);
    }
    free(names);
}
END_TEST

/*
 * Specs through the real policy layer (ccsb_spec_from_json, policy_build)
 * on a fake macOS host: home /Users/dev, a session tmp under /var/folders,
 * the fake filesystem below. Goldens are golden/spec-<name>.sb, claims in
 * specs/<name>.claims.json.
 */
static const char *const spec_host_exists[] = {
    "/Users/dev/proj/src", "/Users/dev/.npm", "/Users/dev/.ssh", "/private/tmp/ws",
    "/private/var/folders/k2/x7/T/ccsb-s1", "/Volumes/data/repo",
    "/Users/dev/we\"ird (dir)/src", NULL,
};

START_TEST(spec_goldens)
{
    char **names;
    size_t n = list_dir("specs", &names);
    ck_assert_uint_ge(n, 8);
    for (size_t k = 0; k < n; k++) {
        char file[4096], claims[4096], golden[4096], err[512];
        snprintf(file, sizeof(file), "%s/tests/seatbelt/specs/%s.json", src_root(), names[k]);
        snprintf(claims, sizeof(claims), "%s/tests/seatbelt/specs/%s.claims.json", src_root(), names[k]);
        snprintf(golden, sizeof(golden), "%s/tests/seatbelt/golden/spec-%s.sb", src_root(), names[k]);
        size_t len;
        char *json = read_file(file, &len);
        ck_assert_msg(json, "cannot read %s", file);
        ccsb_spec *spec = NULL;
        ck_assert_msg(ccsb_spec_from_json(&spec, json, len, err, sizeof(err)) == 0, "%s: %s",
                      names[k], err);
        free(json);
        struct fake_fs fs = {0};
        fake_fs_macos(&fs);
        for (size_t i = 0; spec_host_exists[i]; i++)
            ck_assert_int_eq(strv_push(&fs.exists, spec_host_exists[i]), 0);
        struct policy_host host = {
            .home = "/Users/dev",
            .session_tmp = "/var/folders/k2/x7/T/ccsb-s1",
            .resolve = fake_resolve,
            .kind = fake_kind,
            .resolve_userdata = &fs,
        };
        struct ccsb_policy *p = NULL;
        ck_assert_msg(policy_build(spec, &host, &p, err, sizeof(err)) == 0, "%s: policy: %s",
                      names[k], err);
        ck_assert_msg(seatbelt_policy_check(p, err, sizeof(err)) == 0, "%s: %s", names[k], err);
        struct seatbelt_profile_opts o = {
            .preset = SEATBELT_PRESET_SESSION,
            .session_id = spec->session_id,
            .http_port = 41001,
            .socks_port = 41002,
            .helper_path = "/usr/local/libexec/ccsandbox/ccsb-init",
            .host = &host,
        };
        char *text = NULL;
        ck_assert_msg(seatbelt_profile_generate(p, &o, &text, err, sizeof(err)) == 0, "%s: %s",
                      names[k], err);
        char *want = golden_compare(names[k], golden, text);
        char *tag = seatbelt_message_tag(o.session_id, NULL);
        check_claims(names[k], claims, want, tag);
        free(tag);
        free(want);
        free(text);
        policy_free(p);
        ccsb_spec_free(spec);
        fake_fs_clear(&fs);
        free(names[k]);
    }
    free(names);
}
END_TEST

/* Every golden has a fixture (no stale goldens). */
START_TEST(no_orphan_goldens)
{
    char dir[4096];
    snprintf(dir, sizeof(dir), "%s/tests/seatbelt/golden", src_root());
    DIR *d = opendir(dir);
    ck_assert_ptr_nonnull(d);
    struct dirent *e;
    while ((e = readdir(d))) {
        size_t l = strlen(e->d_name);
        if (l <= 3 || strcmp(e->d_name + l - 3, ".sb") != 0)
            continue;
        char file[4096 + 256];
        if (strncmp(e->d_name, "spec-", 5) == 0)
            snprintf(file, sizeof(file), "%s/tests/seatbelt/specs/%.*s.json", src_root(),
                     (int)(l - 8), e->d_name + 5);
        else
            snprintf(file, sizeof(file), "%s/tests/seatbelt/policies/%.*s.json", src_root(),
                     (int)(l - 3), e->d_name);
        FILE *f = fopen(file, "rb");
        ck_assert_msg(f, "golden %s has no fixture", e->d_name);
        fclose(f);
    }
    closedir(d);
}
END_TEST

int main(int argc, char **argv)
{
    regen = argc > 1 && strcmp(argv[1], "--regen") == 0;
    Suite *s = suite_create("seatbelt-golden");
    TCase *t = tcase_create("golden");
    tcase_set_timeout(t, 120);
    tcase_add_test(t, goldens);
    tcase_add_test(t, spec_goldens);
    tcase_add_test(t, no_orphan_goldens);
    suite_add_tcase(s, t);
    SRunner *sr = srunner_create(s);
    if (regen)
        srunner_set_fork_status(sr, CK_NOFORK);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
