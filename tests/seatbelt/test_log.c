/*
 * The violation tap's parser on recorded `log stream` output
 * (tests/seatbelt/samples/, provenance in its README): attribution by the
 * tag line, noise, de-duplication, kernel-only events, stream splitting.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ccsandbox/ccsandbox.h>

#include "backend/seatbelt_log.h"
#include "fixture.h"

#define WINDOW_MS 10000

struct collected {
    char *text;
    size_t len, cap;
    int n;
};

static void append(struct collected *c, const char *s)
{
    size_t n = strlen(s);
    if (c->len + n + 1 > c->cap) {
        c->cap = (c->len + n + 1) * 2;
        c->text = realloc(c->text, c->cap);
        ck_assert_ptr_nonnull(c->text);
    }
    memcpy(c->text + c->len, s, n + 1);
    c->len += n;
}

/* One violation as "action\ttarget\texec\tcount\tprocess\tpid\n", with a
 * newline inside the target written as \n. */
static void collect_cb(const struct seatbelt_violation *v, void *ud)
{
    struct collected *c = ud;
    char line[1024];
    char target[512];
    size_t j = 0;
    for (const char *p = v->target; *p && j + 2 < sizeof(target); p++) {
        if (*p == '\n') {
            target[j++] = '\\';
            target[j++] = 'n';
        } else {
            target[j++] = *p;
        }
    }
    target[j] = '\0';
    snprintf(line, sizeof(line), "%s\t%s\t%s\t%u\t%s\t%ld\n", v->action, target,
             v->exec_tag ? v->exec_tag : "-", v->count, v->process, v->pid);
    append(c, line);
    c->n++;
    ck_assert_ptr_nonnull(strstr(v->raw, "Sandbox: "));
    ck_assert_ptr_null(strstr(v->raw, "ccsb:s1\n"));
}

static char *sample(const char *name)
{
    const char *root = getenv("CCSB_SOURCE_ROOT");
    ck_assert_msg(root, "CCSB_SOURCE_ROOT is not set");
    char path[4096];
    snprintf(path, sizeof(path), "%s/tests/seatbelt/samples/%s", root, name);
    char *s = read_file(path, NULL);
    ck_assert_msg(s, "cannot read %s", path);
    return s;
}

/* Feeds a sample in chunks of 1..chunk bytes; returns what was reported. */
static struct collected run_sample(const char *name, size_t chunk, unsigned seed,
                                   uint64_t *repeats)
{
    char *log = sample(name);
    struct seatbelt_log *lg = seatbelt_log_new("ccsb:s1", WINDOW_MS);
    ck_assert_ptr_nonnull(lg);
    struct collected c = {0};
    append(&c, "");
    size_t n = strlen(log), off = 0;
    int total = 0;
    while (off < n) {
        size_t k = chunk ? 1 + (size_t)rand_r(&seed) % chunk : n - off;
        if (k > n - off)
            k = n - off;
        int rc = seatbelt_log_feed(lg, log + off, k, 1000, collect_cb, &c);
        ck_assert_int_ge(rc, 0);
        total += rc;
        off += k;
    }
    ck_assert_int_eq(total, c.n);
    if (repeats)
        *repeats = seatbelt_log_repeats(lg);
    seatbelt_log_free(lg);
    free(log);
    return c;
}

static void check_sample(const char *base, uint64_t want_repeats)
{
    char log[64], exp[64];
    snprintf(log, sizeof(log), "%s.log", base);
    snprintf(exp, sizeof(exp), "%s.expected", base);
    char *expected = sample(exp);
    uint64_t repeats = 0;
    struct collected whole = run_sample(log, 0, 0, &repeats);
    ck_assert_msg(strcmp(whole.text, expected) == 0, "got:\n%s\nwanted:\n%s", whole.text, expected);
    ck_assert_uint_eq(repeats, want_repeats);
    /* the same result however the pipe splits the bytes */
    for (unsigned seed = 1; seed <= 20; seed++) {
        struct collected c = run_sample(log, seed % 7 + 1, seed, NULL);
        ck_assert_msg(strcmp(c.text, expected) == 0, "chunked (seed %u):\n%s", seed, c.text);
        free(c.text);
    }
    free(whole.text);
    free(expected);
}

START_TEST(compact_sample)
{
    check_sample("compact", 1);
}
END_TEST

START_TEST(ndjson_sample)
{
    check_sample("ndjson", 1);
}
END_TEST

static int one_line(struct seatbelt_log *lg, const char *line, uint64_t now,
                    struct seatbelt_violation *v)
{
    return seatbelt_log_line(lg, line, strlen(line), now, v);
}

static const char *K = "2026-09-18 06:19:41.380 E  kernel[0:1] (Sandbox) ";

static int text_event(struct seatbelt_log *lg, const char *denial, const char *tag, uint64_t now,
                      struct seatbelt_violation *v)
{
    char line[512];
    snprintf(line, sizeof(line), "%s%s", K, denial);
    ck_assert_int_eq(one_line(lg, line, now, v), 0); /* waits for its tag */
    return one_line(lg, tag, now, v);
}

START_TEST(dedup_window)
{
    struct seatbelt_log *lg = seatbelt_log_new("ccsb:s1", WINDOW_MS);
    struct seatbelt_violation v;
    const char *d = "Sandbox: cat(1) deny(1) file-read-data /Users/dev/.ssh/config";
    ck_assert_int_eq(text_event(lg, d, "ccsb:s1", 0, &v), 1);
    seatbelt_violation_clear(&v);
    ck_assert_int_eq(text_event(lg, d, "ccsb:s1", 5000, &v), 0);
    ck_assert_int_eq(text_event(lg, d, "ccsb:s1", 9999, &v), 0);
    ck_assert_uint_eq(seatbelt_log_repeats(lg), 2);
    ck_assert_int_eq(text_event(lg, d, "ccsb:s1", 10000, &v), 1); /* window over */
    seatbelt_violation_clear(&v);
    /* another pid, same denial: still a repeat; another exec: not */
    ck_assert_int_eq(text_event(lg, "Sandbox: cat(2) deny(1) file-read-data /Users/dev/.ssh/config",
                                "ccsb:s1", 10001, &v), 0);
    ck_assert_int_eq(text_event(lg, d, "ccsb:s1:3", 10002, &v), 1);
    ck_assert_str_eq(v.exec_tag, "3");
    seatbelt_violation_clear(&v);
    seatbelt_log_free(lg);

    /* window 0: every repeat is reported */
    lg = seatbelt_log_new("ccsb:s1", 0);
    for (int i = 0; i < 3; i++) {
        ck_assert_int_eq(text_event(lg, d, "ccsb:s1", 0, &v), 1);
        seatbelt_violation_clear(&v);
    }
    seatbelt_log_free(lg);
}
END_TEST

START_TEST(dedup_memory_bounded)
{
    /* more distinct denials than remembered: old ones are forgotten, so a
     * repeat of the very first one is reported again, nothing grows */
    struct seatbelt_log *lg = seatbelt_log_new("ccsb:s1", WINDOW_MS);
    struct seatbelt_violation v;
    char d[128];
    for (int i = 0; i < 300; i++) {
        snprintf(d, sizeof(d), "Sandbox: cat(1) deny(1) file-read-data /f/%d", i);
        ck_assert_int_eq(text_event(lg, d, "ccsb:s1", (uint64_t)i, &v), 1);
        seatbelt_violation_clear(&v);
    }
    ck_assert_int_eq(text_event(lg, "Sandbox: cat(1) deny(1) file-read-data /f/0", "ccsb:s1", 400, &v), 1);
    seatbelt_violation_clear(&v);
    ck_assert_int_eq(text_event(lg, "Sandbox: cat(1) deny(1) file-read-data /f/299", "ccsb:s1", 401, &v), 0);
    seatbelt_log_free(lg);
}
END_TEST

START_TEST(noise_dropped)
{
    struct seatbelt_log *lg = seatbelt_log_new("ccsb:s1", 0);
    struct seatbelt_violation v;
    const char *noise[] = {
        "Sandbox: curl(1) deny(1) network-outbound /private/var/run/mDNSResponder",
        "Sandbox: x(1) deny(1) network-outbound /private/var/run/syslog",
        "Sandbox: x(1) deny(1) mach-lookup com.apple.diagnosticd",
        "Sandbox: x(1) deny(1) mach-lookup com.apple.analyticsd",
        "Sandbox: x(1) deny(1) file-write-data /dev/dtracehelper",
    };
    for (size_t i = 0; i < sizeof(noise) / sizeof(noise[0]); i++)
        ck_assert_msg(text_event(lg, noise[i], "ccsb:s1", 0, &v) == 0, "%s", noise[i]);
    /* same target, other operation: not noise */
    ck_assert_int_eq(text_event(lg, "Sandbox: x(1) deny(1) file-read-data /dev/dtracehelper",
                                "ccsb:s1", 0, &v), 1);
    ck_assert_str_eq(v.action, "file-read");
    seatbelt_violation_clear(&v);
    seatbelt_log_free(lg);
}
END_TEST

START_TEST(malformed_denials)
{
    struct seatbelt_log *lg = seatbelt_log_new("ccsb:s1", 0);
    struct seatbelt_violation v;
    const char *bad[] = {
        "Sandbox: cat deny(1) file-read-data /x",      /* no pid */
        "Sandbox: cat() deny(1) file-read-data /x",    /* empty pid */
        "Sandbox: cat(12a) deny(1) file-read-data /x", /* bad pid */
        "Sandbox: cat(1) deny(1)",                     /* no operation */
        "Sandbox: cat(1) deny(x) file-read-data /x",   /* bad count */
        "Sandbox: cat(1) allow(1) file-read-data /x",  /* not a denial */
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        char line[256];
        snprintf(line, sizeof(line), "%s%s", K, bad[i]);
        one_line(lg, line, 0, &v);
        ck_assert_msg(one_line(lg, "ccsb:s1", 0, &v) == 0, "%s", bad[i]);
    }
    /* a stray tag line with nothing pending */
    ck_assert_int_eq(one_line(lg, "ccsb:s1", 0, &v), 0);
    ck_assert_int_eq(one_line(lg, "", 0, &v), 0);
    ck_assert_int_eq(one_line(lg, "{}", 0, &v), 0);
    ck_assert_int_eq(one_line(lg, "{\"eventMessage\": 5, \"processID\": 0}", 0, &v), 0);
    ck_assert_int_eq(one_line(lg, "{\"eventMessage\": \"Sandbox: a(1) deny(1) x /y\\nccsb:s1\"}", 0, &v), 0);
    seatbelt_log_free(lg);
}
END_TEST

START_TEST(text_span_limit)
{
    /* a denial never followed by its tag is dropped after a few lines */
    struct seatbelt_log *lg = seatbelt_log_new("ccsb:s1", 0);
    struct seatbelt_violation v;
    char line[256];
    snprintf(line, sizeof(line), "%sSandbox: a(1) deny(1) file-read-data /x", K);
    one_line(lg, line, 0, &v);
    for (int i = 0; i < 20; i++)
        ck_assert_int_eq(one_line(lg, "continuation", 0, &v), 0);
    ck_assert_int_eq(one_line(lg, "ccsb:s1", 0, &v), 0);
    seatbelt_log_free(lg);
}
END_TEST

START_TEST(overlong_line_dropped)
{
    struct seatbelt_log *lg = seatbelt_log_new("ccsb:s1", 0);
    struct collected c = {0};
    append(&c, "");
    size_t big = SEATBELT_LOG_LINE_MAX + 100;
    char *junk = malloc(big + 1);
    memset(junk, '{', big);
    junk[big] = '\n';
    /* in two pieces, so the limit is hit across calls */
    ck_assert_int_eq(seatbelt_log_feed(lg, junk, big / 2, 0, collect_cb, &c), 0);
    ck_assert_int_eq(seatbelt_log_feed(lg, junk + big / 2, big - big / 2 + 1, 0, collect_cb, &c), 0);
    free(junk);
    const char *ok = "{\"eventMessage\": \"Sandbox: cat(4) deny(1) file-read-data /Users/dev/.netrc\\nccsb:s1\", \"processID\": 0}\n";
    ck_assert_int_eq(seatbelt_log_feed(lg, ok, strlen(ok), 0, collect_cb, &c), 1);
    ck_assert_str_eq(c.text, "file-read\t/Users/dev/.netrc\t-\t1\tcat\t4\n");
    free(c.text);
    seatbelt_log_free(lg);
}
END_TEST

START_TEST(other_session_ids_do_not_collide)
{
    /* "ccsb:s1" must not take "ccsb:s10" or "ccsb:s1%3Ax" */
    struct seatbelt_log *lg = seatbelt_log_new("ccsb:s1", 0);
    struct seatbelt_violation v;
    const char *d = "Sandbox: cat(1) deny(1) file-read-data /x";
    ck_assert_int_eq(text_event(lg, d, "ccsb:s10", 0, &v), 0);
    ck_assert_int_eq(text_event(lg, d, "ccsb:s1%3Ax", 0, &v), 0);
    ck_assert_int_eq(text_event(lg, d, "ccsb:s1:", 0, &v), 0);
    ck_assert_int_eq(text_event(lg, d, "ccsb:s1 ", 0, &v), 1); /* trailing blank tolerated */
    seatbelt_violation_clear(&v);
    seatbelt_log_free(lg);
}
END_TEST

START_TEST(log_argv)
{
    char **argv = seatbelt_log_argv("ccsb:s1%20x");
    ck_assert_ptr_nonnull(argv);
    const char *want[] = {"/usr/bin/log", "stream", "--style", "ndjson", "--predicate",
                          "process == \"kernel\" AND eventMessage CONTAINS \"ccsb:s1%20x\"", NULL};
    for (size_t i = 0; want[i]; i++)
        ck_assert_str_eq(argv[i], want[i]);
    ck_assert_ptr_null(argv[6]);
    seatbelt_log_argv_free(argv);
    ck_assert_ptr_null(seatbelt_log_argv("ccsb:\"s1"));
    ck_assert_ptr_null(seatbelt_log_argv("ccsb:s 1"));
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("seatbelt-log");
    TCase *t = tcase_create("parser");
    tcase_add_test(t, compact_sample);
    tcase_add_test(t, ndjson_sample);
    tcase_add_test(t, dedup_window);
    tcase_add_test(t, dedup_memory_bounded);
    tcase_add_test(t, noise_dropped);
    tcase_add_test(t, malformed_denials);
    tcase_add_test(t, text_span_limit);
    tcase_add_test(t, overlong_line_dropped);
    tcase_add_test(t, other_session_ids_do_not_collide);
    tcase_add_test(t, log_argv);
    suite_add_tcase(s, t);
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
