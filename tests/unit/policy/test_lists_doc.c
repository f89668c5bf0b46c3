/*
 * The built-in lists are well formed and docs/policy-lists.md says exactly
 * what lists.c does: every entry with its reason in the right section, and
 * no row the code does not have.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "policy/lists.h"

static char *doc;

static void load_doc(void)
{
    const char *root = getenv("CCSB_SOURCE_ROOT");
    ck_assert_msg(root != NULL, "CCSB_SOURCE_ROOT is not set (run through meson test)");
    char path[4096];
    snprintf(path, sizeof path, "%s/docs/policy-lists.md", root);
    FILE *f = fopen(path, "r");
    ck_assert_msg(f != NULL, "cannot open %s", path);
    size_t cap = 1 << 16, n = 0;
    doc = malloc(cap);
    ck_assert_ptr_nonnull(doc);
    size_t r;
    while ((r = fread(doc + n, 1, cap - 1 - n, f)) > 0) {
        n += r;
        ck_assert_msg(n < cap - 1, "doc larger than expected");
    }
    doc[n] = '\0';
    fclose(f);
}

static void free_doc(void)
{
    free(doc);
    doc = NULL;
}

/* The text of the section whose heading starts with title (malloc'd). */
static char *section(const char *title)
{
    char head[256];
    snprintf(head, sizeof head, "\n## %s", title);
    const char *s = strstr(doc, head);
    ck_assert_msg(s != NULL, "doc has no section \"%s\"", title);
    s += 1;
    const char *e = strstr(s + 3, "\n## ");
    size_t n = e ? (size_t)(e - s) : strlen(s);
    char *out = strndup(s, n);
    ck_assert_ptr_nonnull(out);
    return out;
}

static size_t count_rows(const char *text)
{
    size_t n = 0;
    for (const char *p = text; (p = strstr(p, "\n| `")); p++)
        n++;
    return n;
}

static void check_list(const struct policy_entry *list, const char *title, int flag_col,
                       int absolute)
{
    char *text = section(title);
    size_t n = 0;
    for (const struct policy_entry *e = list; e->path; e++, n++) {
        /* Well formed: a one-word reason, the right kind of path, no dups. */
        ck_assert_msg(e->reason && *e->reason && !strchr(e->reason, ' '),
                      "%s: reason must be one word", e->path);
        ck_assert_msg((e->path[0] == '/') == absolute, "%s: %s path expected", e->path,
                      absolute ? "absolute" : "relative");
        ck_assert_msg(!strstr(e->path, "..") && !strstr(e->path, "//") &&
                          e->path[strlen(e->path) - 1] != '/',
                      "%s: not a clean path", e->path);
        for (const struct policy_entry *d = list; d != e; d++)
            ck_assert_msg(strcmp(d->path, e->path) != 0, "%s listed twice", e->path);
        char row[512];
        if (flag_col)
            snprintf(row, sizeof row, "\n| `%s` | %s | %s|", e->path, e->reason,
                     (e->flags & POLICY_ENTRY_GIT_CONFIG) ? "yes " : "");
        else
            snprintf(row, sizeof row, "\n| `%s` | %s |\n", e->path, e->reason);
        ck_assert_msg(strstr(text, row) != NULL, "docs/policy-lists.md, \"%s\": no row %s",
                      title, row + 1);
    }
    /* And nothing the code does not have. */
    ck_assert_msg(count_rows(text) == n, "\"%s\": %zu rows in the doc, %zu entries in lists.c",
                  title, count_rows(text), n);
    free(text);
}

START_TEST(deny_write_root)
{
    check_list(policy_deny_write_root, "Mandatory deny-write set", 0, 0);
}
END_TEST

START_TEST(deny_write_gitdir)
{
    check_list(policy_deny_write_gitdir, "Git directory deny-write set", 1, 0);
}
END_TEST

START_TEST(secret_home)
{
    check_list(policy_secret_home, "Secrets under the home directory", 0, 0);
}
END_TEST

START_TEST(secret_system)
{
    check_list(policy_secret_system, "System secrets", 0, 1);
}
END_TEST

static void check_names(const char *const *names, const char *title)
{
    char *text = section(title);
    for (size_t i = 0; names[i]; i++) {
        char tok[128];
        snprintf(tok, sizeof tok, "`%s`", names[i]);
        ck_assert_msg(strstr(text, tok) != NULL, "docs/policy-lists.md, \"%s\": %s missing",
                      title, tok);
        for (size_t j = 0; j < i; j++)
            ck_assert_msg(strcmp(names[i], names[j]) != 0, "%s listed twice", names[i]);
    }
    free(text);
}

static int in(const char *const *names, const char *s, size_t len)
{
    for (size_t i = 0; names[i]; i++)
        if (strlen(names[i]) == len && strncmp(names[i], s, len) == 0)
            return 1;
    return 0;
}

START_TEST(env_strip)
{
    const char *title = "Environment variables stripped";
    check_names(policy_env_strip, title);
    check_names(policy_env_strip_prefixes, title);
    /* Every name in the bulleted lists is in the code. */
    char *text = section(title);
    for (const char *line = strstr(text, "\n- "); line; line = strstr(line + 1, "\n- ")) {
        const char *end = strchr(line + 1, '\n');
        const char *colon = strchr(line, ':');
        for (const char *p = colon; p && (!end || p < end); p++) {
            if (*p != '`')
                continue;
            const char *q = strchr(p + 1, '`');
            ck_assert_ptr_nonnull(q);
            ck_assert_msg(in(policy_env_strip, p + 1, (size_t)(q - p - 1)),
                          "doc names %.*s, which lists.c does not strip", (int)(q - p - 1),
                          p + 1);
            p = q;
        }
    }
    free(text);
    /* The lookup agrees with the lists. */
    for (size_t i = 0; policy_env_strip[i]; i++)
        ck_assert(policy_env_is_stripped(policy_env_strip[i]));
    ck_assert(policy_env_is_stripped("DYLD_INSERT_LIBRARIES"));
    ck_assert(policy_env_is_stripped("BASH_FUNC_f%%"));
    ck_assert(!policy_env_is_stripped("PATH"));
    ck_assert(!policy_env_is_stripped("HOME"));
    ck_assert(!policy_env_is_stripped("TERM"));
}
END_TEST

START_TEST(env_forbidden)
{
    check_names(policy_env_forbidden_prefixes, "Environment variables a spec may not set");
    ck_assert(policy_env_is_forbidden("LD_PRELOAD"));
    ck_assert(policy_env_is_forbidden("DYLD_INSERT_LIBRARIES"));
    ck_assert(!policy_env_is_forbidden("PYTHONPATH"));
    ck_assert(!policy_env_is_forbidden("OLD_PRELOAD"));
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("policy_lists_doc");
    TCase *tc = tcase_create("doc");
    tcase_add_checked_fixture(tc, load_doc, free_doc);
    tcase_add_test(tc, deny_write_root);
    tcase_add_test(tc, deny_write_gitdir);
    tcase_add_test(tc, secret_home);
    tcase_add_test(tc, secret_system);
    tcase_add_test(tc, env_strip);
    tcase_add_test(tc, env_forbidden);
    suite_add_tcase(s, tc);
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
