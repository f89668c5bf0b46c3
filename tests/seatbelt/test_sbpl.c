/*
 * The SBPL lexical layer (string literals, regex quoting, globs, path
 * normalization) and the test-side checker itself: the checker must reject
 * each kind of malformed profile, or the other tests prove nothing.
 */
#include <check.h>
#include <fnmatch.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ccsandbox/ccsandbox.h>

#include "backend/seatbelt_sbpl.h"
#include "sbpl_check.h"

static char *put_string(const char *s, int *err)
{
    struct sbpl_buf b;
    sbpl_buf_init(&b);
    sbpl_put_string(&b, s, "test value");
    *err = b.err;
    return sbpl_buf_steal(&b);
}

START_TEST(string_escapes)
{
    int err;
    char *s = put_string("/a\"b\\c\nd\te\rf", &err);
    ck_assert_int_eq(err, 0);
    ck_assert_str_eq(s, "\"/a\\\"b\\\\c\\nd\\te\\rf\"");
    free(s);
    s = put_string("", &err);
    ck_assert_str_eq(s, "\"\"");
    free(s);
    s = put_string("/ünïcødé/名前", &err); /* bytes >= 0x80 pass through */
    ck_assert_str_eq(s, "\"/ünïcødé/名前\"");
    free(s);
    for (int c = 1; c < 0x20; c++) {
        if (c == '\n' || c == '\t' || c == '\r')
            continue;
        char in[4] = {'/', (char)c, 'x', 0};
        s = put_string(in, &err);
        ck_assert_int_eq(err, CCSB_E_POLICY);
        ck_assert_ptr_null(s);
    }
    s = put_string("/\x7f", &err);
    ck_assert_int_eq(err, CCSB_E_POLICY);
    ck_assert_ptr_null(s);
}
END_TEST

/* The reader's view of an emitted string equals the input, for every
 * printable byte and the three escaped controls. */
START_TEST(string_roundtrip_through_checker)
{
    char in[300];
    size_t j = 0;
    in[j++] = '/';
    for (int c = 0x20; c < 0x100; c++)
        if (c != 0x7f)
            in[j++] = (char)c;
    in[j++] = '\n';
    in[j++] = '\t';
    in[j++] = '\r';
    in[j] = '\0';
    int err;
    char *lit = put_string(in, &err);
    ck_assert_ptr_nonnull(lit);
    char prof[1024];
    snprintf(prof, sizeof(prof), "(version 1)\n(deny file-read* (literal %s) (with message \"t\"))\n", lit);
    free(lit);
    struct sbpl_profile p;
    char e[256];
    ck_assert_msg(sbpl_parse(prof, "t", &p, e, sizeof(e)) == 0, "%s", e);
    ck_assert_uint_eq(sbpl_count_filter(&p, 0, "file-read*", "literal", in), 1);
    sbpl_profile_free(&p);
}
END_TEST

START_TEST(long_string_pieces)
{
    char in[2500];
    memset(in, 'x', sizeof(in) - 1);
    in[0] = '/';
    in[sizeof(in) - 1] = '\0';
    in[899] = '"'; /* an escape straddling the first piece boundary */
    int err;
    char *lit = put_string(in, &err);
    ck_assert_ptr_nonnull(lit);
    ck_assert(strncmp(lit, "(string-append \"", 16) == 0);
    /* no piece longer than the limit, no escape split */
    const char *p = lit + 15;
    while (*p == '"') {
        const char *q = p + 1;
        size_t n = 0;
        while (*q != '"') {
            if (*q == '\\')
                q++, n++;
            q++, n++;
        }
        ck_assert_uint_le(n, SBPL_LITERAL_MAX);
        p = q + 1;
        if (*p == ' ')
            p++;
    }
    ck_assert_str_eq(p, ")");
    char *prof = malloc(strlen(lit) + 200);
    sprintf(prof, "(version 1)\n(deny file-read* (literal %s) (with message \"t\"))\n", lit);
    struct sbpl_profile pr;
    char e[256];
    ck_assert_msg(sbpl_parse(prof, "t", &pr, e, sizeof(e)) == 0, "%s", e);
    ck_assert_uint_eq(sbpl_count_filter(&pr, 0, "file-read*", "literal", in), 1);
    sbpl_profile_free(&pr);
    free(prof);
    free(lit);
}
END_TEST

static int regex_matches(const char *re, const char *s)
{
    regex_t r;
    ck_assert_msg(regcomp(&r, re, REG_EXTENDED | REG_NOSUB) == 0, "regcomp %s", re);
    int m = regexec(&r, s, 0, NULL, 0) == 0;
    regfree(&r);
    return m;
}

static char *quoted_regex(const char *s)
{
    struct sbpl_buf b;
    sbpl_buf_init(&b);
    sbpl_put(&b, "^");
    sbpl_regex_quote(&b, s);
    sbpl_put(&b, "$");
    return sbpl_buf_steal(&b);
}

START_TEST(regex_quote_exact)
{
    const char *cases[] = {"/a.b", "/x*y+z?", "/(p)[q]{r}", "/a|b", "/^c$", "/d\\e", "/plain"};
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char *re = quoted_regex(cases[i]);
        ck_assert_msg(regex_matches(re, cases[i]), "%s !~ %s", cases[i], re);
        free(re);
    }
    char *re = quoted_regex("/a.b");
    ck_assert(!regex_matches(re, "/aXb"));
    free(re);
    re = quoted_regex("/a|b");
    ck_assert(!regex_matches(re, "/a"));
    ck_assert(!regex_matches(re, "b"));
    free(re);
}
END_TEST

/* Random names against random literals: the quoted regex matches its own
 * string and nothing that differs in one byte. */
START_TEST(regex_quote_random)
{
    const char alphabet[] = "ab./*+?()[]{}|^$\\-\" ";
    unsigned seed = 12345;
    for (int iter = 0; iter < 400; iter++) {
        char s[24];
        size_t n = 1 + (size_t)(rand_r(&seed) % 20);
        for (size_t i = 0; i < n; i++)
            s[i] = alphabet[rand_r(&seed) % (sizeof(alphabet) - 1)];
        s[n] = '\0';
        char *re = quoted_regex(s);
        ck_assert_msg(regex_matches(re, s), "%s !~ %s", s, re);
        char t[24];
        memcpy(t, s, n + 1);
        size_t k = (size_t)rand_r(&seed) % n;
        t[k] = t[k] == 'a' ? 'b' : 'a';
        ck_assert_msg(!regex_matches(re, t), "%s =~ %s", t, re);
        free(re);
    }
}
END_TEST

static char *glob_regex(const char *glob)
{
    struct sbpl_buf b;
    sbpl_buf_init(&b);
    sbpl_put(&b, "^");
    sbpl_glob_regex(&b, glob);
    sbpl_put(&b, "$");
    return sbpl_buf_steal(&b);
}

/* Globs without '**' and '[' behave like fnmatch(FNM_PATHNAME|FNM_NOESCAPE). */
START_TEST(glob_matches_fnmatch)
{
    const char galpha[] = "ab/*?.";
    const char salpha[] = "ab/.";
    unsigned seed = 777;
    for (int iter = 0; iter < 2000; iter++) {
        char g[12], s[12];
        size_t gn = 1 + (size_t)(rand_r(&seed) % 8), sn = (size_t)(rand_r(&seed) % 9);
        for (size_t i = 0; i < gn; i++)
            g[i] = galpha[rand_r(&seed) % (sizeof(galpha) - 1)];
        g[gn] = '\0';
        if (strstr(g, "**"))
            continue;
        for (size_t i = 0; i < sn; i++)
            s[i] = salpha[rand_r(&seed) % (sizeof(salpha) - 1)];
        s[sn] = '\0';
        char *re = glob_regex(g);
        int ours = regex_matches(re, s);
        int ref = fnmatch(g, s, FNM_PATHNAME | FNM_NOESCAPE) == 0;
        ck_assert_msg(ours == ref, "glob %s on %s: regex %s says %d, fnmatch %d", g, s, re, ours, ref);
        free(re);
    }
}
END_TEST

START_TEST(glob_double_star)
{
    char *re = glob_regex("/a/**/b");
    ck_assert(regex_matches(re, "/a/b"));
    ck_assert(regex_matches(re, "/a/x/b"));
    ck_assert(regex_matches(re, "/a/x/y/b"));
    ck_assert(!regex_matches(re, "/a/xb"));
    ck_assert(!regex_matches(re, "/ab"));
    free(re);
    re = glob_regex("/a/**");
    ck_assert(regex_matches(re, "/a/x/y"));
    ck_assert(regex_matches(re, "/a/"));
    ck_assert(!regex_matches(re, "/b/x"));
    free(re);
    re = glob_regex("/a/***/b"); /* runs of stars collapse */
    ck_assert(regex_matches(re, "/a/x/y/b"));
    free(re);
    re = glob_regex("/a/[x]"); /* brackets are literal */
    ck_assert(regex_matches(re, "/a/[x]"));
    ck_assert(!regex_matches(re, "/a/x"));
    free(re);
}
END_TEST

START_TEST(normalize)
{
    struct { const char *in, *out; int rc; } cases[] = {
        {"/", "/", 0}, {"//", "/", 0}, {"/a//b/", "/a/b", 0}, {"/a/b", "/a/b", 0},
        {"/a/.b", "/a/.b", 0}, {"/a/..b", "/a/..b", 0}, {"/a/b..", "/a/b..", 0},
        {"a/b", NULL, CCSB_E_POLICY}, {"", NULL, CCSB_E_POLICY}, {"/a/./b", NULL, CCSB_E_POLICY},
        {"/a/..", NULL, CCSB_E_POLICY}, {"/..", NULL, CCSB_E_POLICY}, {"/.", NULL, CCSB_E_POLICY},
        {"/a/../b", NULL, CCSB_E_POLICY},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char *out = (char *)1;
        int rc = sbpl_path_normalize(cases[i].in, &out);
        ck_assert_msg(rc == cases[i].rc, "%s: rc %d", cases[i].in, rc);
        if (cases[i].out)
            ck_assert_str_eq(out, cases[i].out);
        else
            ck_assert_ptr_null(out);
        free(out);
    }
    ck_assert_int_eq(sbpl_is_glob("/a/*.b"), 1);
    ck_assert_int_eq(sbpl_is_glob("/a/?"), 1);
    ck_assert_int_eq(sbpl_is_glob("/a/[b]"), 0);
}
END_TEST

START_TEST(buffer_sticky_error)
{
    struct sbpl_buf b;
    sbpl_buf_init(&b);
    sbpl_put(&b, "abc");
    sbpl_fail(&b, "first %d", 1);
    sbpl_fail(&b, "second");
    sbpl_put(&b, "def");
    ck_assert_int_eq(b.err, CCSB_E_POLICY);
    ck_assert_str_eq(b.msg, "first 1");
    ck_assert_ptr_null(sbpl_buf_steal(&b));
    sbpl_buf_free(&b);
    sbpl_buf_init(&b);
    char *empty = sbpl_buf_steal(&b);
    ck_assert_str_eq(empty, "");
    free(empty);
}
END_TEST

/* ------------------------------------------------------------------ */
/* The checker rejects what it must                                     */
/* ------------------------------------------------------------------ */

static int check(const char *text, const char *tag, char *err, size_t errlen)
{
    struct sbpl_profile p;
    int rc = sbpl_parse(text, tag, &p, err, errlen);
    if (rc == 0)
        sbpl_profile_free(&p);
    return rc;
}

START_TEST(checker_accepts_minimal)
{
    char e[256];
    ck_assert_msg(check("(version 1)\n(allow default)\n; comment\n"
                        "(deny file-read* (subpath \"/x\") (with message \"t\"))\n",
                        "t", e, sizeof(e)) == 0, "%s", e);
}
END_TEST

START_TEST(checker_rejects)
{
    const struct { const char *text, *why; } bad[] = {
        {"(allow default)", "(version 1)"},
        {"(version 2)\n(allow default)", "(version 1)"},
        {"(version 1)\n(allow default", "unbalanced"},
        {"(version 1)\n(allow default))", "unbalanced"},
        {"(version 1)\n(allow file-write* (subpath \"/a))", "unterminated"},
        {"(version 1)\n(allow file-write* (subpath \"/a\nb\"))", "control byte"},
        {"(version 1)\n(allow file-write* (subpath \"/a\\qb\"))", "escape"},
        {"(version 1)\n(allow file-write* (regex #\"^/a$\"))", "'#'"},
        {"(version 1)\n(allow file-write* (subpath \"a\"))", "not absolute"},
        {"(version 1)\n(allow file-write* (regex \"/a\"))", "anchored"},
        {"(version 1)\n(allow file-write* (regex \"^/a(b$\"))", "compile"},
        {"(version 1)\n(allow file-write*)", "opens the operation"},
        {"(version 1)\n(allow file-chroot (subpath \"/a\"))", "unknown operation"},
        {"(version 1)\n(allow file-write* (vnode-type REGULAR-FILE))", "unknown filter"},
        {"(version 1)\n(deny file-write* (subpath \"/a\"))", "without (with message"},
        {"(version 1)\n(deny file-write* (subpath \"/a\") (with message \"u\"))", "session tag"},
        {"(version 1)\n(deny file-write* (with message \"t\") (subpath \"/a\"))", "come last"},
        {"(version 1)\n(allow network-outbound (remote ip \"*:443\"))", "localhost"},
        {"(version 1)\n(allow network-outbound (remote ip \"localhost:70000\"))", "bad port"},
        {"(version 1)\n(deny default (with message \"t\"))", "default"},
        {"(version 1)\n(allow file-write* (subpath \"/a\") (with message \"t\"))", "allow rule carries"},
        {"(version 1)\n(include \"x.sb\")", "other than allow/deny"},
        {"(version 1)\n(allow file-write* (subpath (string-append \"/a\")))", "fewer than two"},
        {"(version 1)\n(allow file-write* (subpath \"/a\" \"/b\"))", "exactly one"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        char e[256] = "";
        ck_assert_msg(check(bad[i].text, "t", e, sizeof(e)) < 0, "accepted: %s", bad[i].text);
        ck_assert_msg(strstr(e, bad[i].why), "%s -> '%s' (wanted '%s')", bad[i].text, e, bad[i].why);
    }
    /* A token over 1024 bytes is what sandbox-exec refuses. */
    char *big = malloc(1200);
    strcpy(big, "(version 1)\n(allow file-write* (subpath \"/");
    size_t n = strlen(big);
    memset(big + n, 'a', 1100);
    strcpy(big + n + 1100, "\"))");
    char e[256] = "";
    ck_assert(check(big, "t", e, sizeof(e)) < 0);
    ck_assert_msg(strstr(e, "at most 1024"), "%s", e);
    free(big);
}
END_TEST

/* The two precedence readings disagree when a concrete-operation allow
 * precedes a wildcard deny: the evaluator must notice. */
START_TEST(evaluator_models)
{
    const char *prof = "(version 1)\n(allow default)\n"
                       "(allow file-write-unlink (subpath \"/a\"))\n"
                       "(deny file-write* (subpath \"/a\") (with message \"t\"))\n";
    struct sbpl_profile p;
    char e[256];
    ck_assert_msg(sbpl_parse(prof, "t", &p, e, sizeof(e)) == 0, "%s", e);
    struct sbpl_req r = {.op = "file-write-unlink", .path = "/a/x"};
    ck_assert_int_eq(sbpl_eval(&p, &r, SBPL_MODEL_LAST_MATCH, NULL), 0);
    ck_assert_int_eq(sbpl_eval(&p, &r, SBPL_MODEL_SPECIFIC, NULL), 1);
    ck_assert_int_eq(sbpl_eval_both(&p, &r), -1);
    r.op = "file-write-data";
    ck_assert_int_eq(sbpl_eval_both(&p, &r), 0);
    r.path = "/b";
    int rule = 99;
    ck_assert_int_eq(sbpl_eval(&p, &r, SBPL_MODEL_SPECIFIC, &rule), 1);
    ck_assert_int_eq(rule, 0); /* the default */
    sbpl_profile_free(&p);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("seatbelt-sbpl");
    TCase *t = tcase_create("lexical");
    tcase_add_test(t, string_escapes);
    tcase_add_test(t, string_roundtrip_through_checker);
    tcase_add_test(t, long_string_pieces);
    tcase_add_test(t, regex_quote_exact);
    tcase_add_test(t, regex_quote_random);
    tcase_add_test(t, glob_matches_fnmatch);
    tcase_add_test(t, glob_double_star);
    tcase_add_test(t, normalize);
    tcase_add_test(t, buffer_sticky_error);
    suite_add_tcase(s, t);
    TCase *c = tcase_create("checker");
    tcase_add_test(c, checker_accepts_minimal);
    tcase_add_test(c, checker_rejects);
    tcase_add_test(c, evaluator_models);
    suite_add_tcase(s, c);
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
