/* Unit: denial messages on stderr -> violation guesses. */
#include <check.h>
#include <string.h>

#include "backend/bwrap_violation.h"

static const struct {
    const char *line;
    const char *action; /* NULL: not a violation */
    const char *target;
} cases[] = {
    {"sh: 1: cannot create /etc/x: Read-only file system", "file-write", "/etc/x"},
    {"bash: /etc/x: Permission denied", "permission-denied", "/etc/x"},
    {"bash: line 1: /usr/bin/x: Read-only file system", "file-write", "/usr/bin/x"},
    {"touch: cannot touch '/w/.bashrc': Read-only file system", "file-write", "/w/.bashrc"},
    {"mkdir: cannot create directory \xe2\x80\x98.git/hooks\xe2\x80\x99: Read-only file system",
     "file-write", ".git/hooks"},
    {"cat: /etc/shadow: Permission denied", "permission-denied", "/etc/shadow"},
    {"PermissionError: [Errno 13] Permission denied: '/etc/passwd'", "permission-denied",
     "/etc/passwd"},
    {"OSError: [Errno 30] Read-only file system: 'f.txt'", "file-write", "f.txt"},
    {"Error: EACCES: permission denied, open '/root/x'", "permission-denied", "/root/x"},
    {"Error: EROFS: read-only file system, open '/usr/x'", "file-write", "/usr/x"},
    {"mknod: /w/dev0: Operation not permitted", "operation-not-permitted", "/w/dev0"},
    {"kill: (1) - Operation not permitted", "operation-not-permitted", ""},
    {"ln: failed to create hard link 'h' => '/etc/passwd': Operation not permitted",
     "operation-not-permitted", "/etc/passwd"},
    {"all good here", NULL, NULL},
    {"permissions denied-ish text without the phrase", NULL, NULL},
    {"superuser EPERMANENT", NULL, NULL},
};

START_TEST(lines)
{
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct violation_guess g;
        int r = violation_parse_line(cases[i].line, strlen(cases[i].line), &g);
        if (!cases[i].action) {
            ck_assert_msg(r == 0, "false positive: %s", cases[i].line);
            continue;
        }
        ck_assert_msg(r == 1, "missed: %s", cases[i].line);
        ck_assert_str_eq(g.action, cases[i].action);
        ck_assert_msg(strcmp(g.target, cases[i].target) == 0, "%s -> target '%s', want '%s'",
                      cases[i].line, g.target, cases[i].target);
    }
}
END_TEST

struct seen {
    char lines[8][256];
    int n;
};

static void collect(const char *line, size_t len, void *ud)
{
    struct seen *s = ud;
    if (s->n < 8) {
        size_t k = len < 255 ? len : 255;
        memcpy(s->lines[s->n], line, k);
        s->lines[s->n][k] = 0;
        s->n++;
    }
}

START_TEST(line_assembly)
{
    struct violation_lines vl;
    memset(&vl, 0, sizeof vl);
    struct seen s = {.n = 0};
    const char *a = "first li", *b = "ne\r\nsecond\n\nthird";
    violation_feed(&vl, (const unsigned char *)a, strlen(a), collect, &s);
    ck_assert_int_eq(s.n, 0);
    violation_feed(&vl, (const unsigned char *)b, strlen(b), collect, &s);
    ck_assert_int_eq(s.n, 2);
    ck_assert_str_eq(s.lines[0], "first line");
    ck_assert_str_eq(s.lines[1], "second");
    /* an over-long line is judged once by its head, its tail dropped */
    char big[3000];
    memset(big, 'y', sizeof big);
    violation_feed(&vl, (const unsigned char *)"\n", 1, collect, &s); /* flush "third" */
    ck_assert_int_eq(s.n, 3);
    violation_feed(&vl, (const unsigned char *)big, sizeof big, collect, &s);
    violation_feed(&vl, (const unsigned char *)"\nlast\n", 6, collect, &s);
    ck_assert_int_eq(s.n, 5);
    ck_assert_str_eq(s.lines[4], "last");
}
END_TEST

int main(void)
{
    Suite *s = suite_create("bwrap_violation");
    TCase *tc = tcase_create("parse");
    tcase_add_test(tc, lines);
    tcase_add_test(tc, line_assembly);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
