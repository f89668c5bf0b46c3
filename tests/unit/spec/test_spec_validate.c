/*
 * Every validation message, exact text, as an attacker's spec would meet
 * it: through the JSON loader, and through the builder + ccsb_spec_validate.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ccsandbox/ccsandbox.h"
#include "spec/spec.h"

struct vcase {
    const char *json;
    const char *msg; /* NULL: valid */
};

static const struct vcase cases[] = {
    /* bind host paths */
    {"{\"bindMounts\":[{\"hostPath\":\"relative\"}]}", "bindMounts[0].hostPath: not an absolute path"},
    {"{\"bindMounts\":[{\"hostPath\":\"/a\"},{\"hostPath\":\"/b\"},{\"hostPath\":\"x/y\"}]}",
     "bindMounts[2].hostPath: not an absolute path"},
    {"{\"bindMounts\":[{\"hostPath\":\"\"}]}", "bindMounts[0].hostPath: must not be empty"},
    {"{\"bindMounts\":[{\"hostPath\":\"~user/x\"}]}", "bindMounts[0].hostPath: not an absolute path"},
    {"{\"bindMounts\":[{\"hostPath\":\"./x\"}]}", "bindMounts[0].hostPath: not an absolute path"},
    {"{\"bindMounts\":[{\"hostPath\":\"/a/../etc\"}]}",
     "bindMounts[0].hostPath: contains a '.' or '..' component"},
    {"{\"bindMounts\":[{\"hostPath\":\"/a/./b\"}]}",
     "bindMounts[0].hostPath: contains a '.' or '..' component"},
    {"{\"bindMounts\":[{\"hostPath\":\"/..\"}]}",
     "bindMounts[0].hostPath: contains a '.' or '..' component"},
    {"{\"bindMounts\":[{\"hostPath\":\"~/..\"}]}",
     "bindMounts[0].hostPath: contains a '.' or '..' component"},
    {"{\"bindMounts\":[{\"hostPath\":\"/a/..b/c.\"}]}", NULL},
    {"{\"bindMounts\":[{\"hostPath\":\"/\"}]}", "bindMounts[0].hostPath: must not be /"},
    {"{\"bindMounts\":[{\"hostPath\":\"//\"}]}", "bindMounts[0].hostPath: must not be /"},
    {"{\"bindMounts\":[{\"hostPath\":\"/proc/1/root\"}]}",
     "bindMounts[0].hostPath: must not be /proc, /dev, /sys or inside them"},
    {"{\"bindMounts\":[{\"hostPath\":\"/proc\"}]}",
     "bindMounts[0].hostPath: must not be /proc, /dev, /sys or inside them"},
    {"{\"bindMounts\":[{\"hostPath\":\"/dev/\"}]}",
     "bindMounts[0].hostPath: must not be /proc, /dev, /sys or inside them"},
    {"{\"bindMounts\":[{\"hostPath\":\"/sys/fs/cgroup\"}]}",
     "bindMounts[0].hostPath: must not be /proc, /dev, /sys or inside them"},
    {"{\"bindMounts\":[{\"hostPath\":\"/procfs\"},{\"hostPath\":\"/device\"},{\"hostPath\":\"/system\"}]}",
     NULL},
    {"{\"bindMounts\":[{\"hostPath\":\"/a*\"}]}",
     "bindMounts[0].hostPath: wildcards ('*', '?') are not allowed here"},
    {"{\"bindMounts\":[{\"hostPath\":\"/a?\"}]}",
     "bindMounts[0].hostPath: wildcards ('*', '?') are not allowed here"},
    {"{\"bindMounts\":[{\"hostPath\":\"/a\\nb\"}]}", "bindMounts[0].hostPath: contains a control character"},
    {"{\"bindMounts\":[{\"hostPath\":\"/a\\u007fb\"}]}",
     "bindMounts[0].hostPath: contains a control character"},
    {"{\"bindMounts\":[{\"hostPath\":\"/caf\\u00e9 [1] \\\"q\\\"\"}]}", NULL},
    /* bind guest paths */
    {"{\"bindMounts\":[{\"hostPath\":\"/a\",\"guestPath\":\"/\"}]}",
     "bindMounts[0].guestPath: must not be /"},
    {"{\"bindMounts\":[{\"hostPath\":\"/a\",\"guestPath\":\"/proc/self\"}]}",
     "bindMounts[0].guestPath: must not be /proc, /dev, /sys or inside them"},
    {"{\"bindMounts\":[{\"hostPath\":\"/a\",\"guestPath\":\"/dev/shm\"}]}",
     "bindMounts[0].guestPath: must not be /proc, /dev, /sys or inside them"},
    {"{\"bindMounts\":[{\"hostPath\":\"/a\",\"guestPath\":\"rel\"}]}",
     "bindMounts[0].guestPath: not an absolute path"},
    {"{\"bindMounts\":[{\"hostPath\":\"/a\",\"guestPath\":\"/w\"},{\"hostPath\":\"/b\",\"guestPath\":\"/w/\"}]}",
     "bindMounts[1].guestPath: same as bindMounts[0].guestPath"},
    {"{\"bindMounts\":[{\"hostPath\":\"/a\"},{\"hostPath\":\"/b\"},{\"hostPath\":\"/a\",\"readOnly\":true}]}",
     "bindMounts[2].guestPath: same as bindMounts[0].guestPath"},
    {"{\"bindMounts\":[{\"hostPath\":\"/a\",\"guestPath\":\"~/a\"}]}", NULL},
    /* identifiers */
    {"{\"sessionId\":\"ok-1.2_3\"}", NULL},
    {"{\"sessionId\":\"\"}",
     "sessionId: must be 1 to 128 characters from A-Z a-z 0-9 . _ - and must not start with '.'"},
    {"{\"sessionId\":\".hidden\"}",
     "sessionId: must be 1 to 128 characters from A-Z a-z 0-9 . _ - and must not start with '.'"},
    {"{\"sessionId\":\"..\"}",
     "sessionId: must be 1 to 128 characters from A-Z a-z 0-9 . _ - and must not start with '.'"},
    {"{\"sessionId\":\"a/b\"}",
     "sessionId: must be 1 to 128 characters from A-Z a-z 0-9 . _ - and must not start with '.'"},
    {"{\"sessionId\":\"a b\"}",
     "sessionId: must be 1 to 128 characters from A-Z a-z 0-9 . _ - and must not start with '.'"},
    {"{\"sessionId\":\"caf\\u00e9\"}",
     "sessionId: must be 1 to 128 characters from A-Z a-z 0-9 . _ - and must not start with '.'"},
    {"{\"workspaceId\":\"\"}", "workspaceId: must not be empty"},
    {"{\"workspaceId\":\"a\\tb\"}", "workspaceId: contains a control character"},
    {"{\"agentId\":\"\"}", "agentId: must not be empty"},
    {"{\"upstreamProxy\":\"https://p:3128\"}", "upstreamProxy: only http:// proxies are supported"},
    {"{\"upstreamProxy\":\"http://p\"}", "upstreamProxy: needs host:port ([v6]:port for IPv6)"},
    {"{\"upstreamProxy\":\"http://p:0\"}", "upstreamProxy: needs a port from 1 to 65535"},
    {"{\"upstreamProxy\":\"http://p:99999\"}", "upstreamProxy: needs a port from 1 to 65535"},
    {"{\"upstreamProxy\":\"http://p:3128/x\"}", "upstreamProxy: must be http://[user:password@]host:port with no path"},
    {"{\"upstreamProxy\":\"http://u:%zz@p:3128\"}", "upstreamProxy: credentials must be user:password (percent-encoded)"},
    {"{\"upstreamProxy\":\"http://u:a%0d%0aX: y@p:3128\"}", "upstreamProxy: credentials must be user:password (percent-encoded)"},
    {"{\"upstreamProxy\":\"http://[::1]:3128/\"}", NULL},
    {"{\"upstreamProxy\":\"http://u:p@w@10.0.0.1:8080\"}", NULL},
    {"{\"workspaceId\":\"proj \\u00e9 #1\",\"agentId\":\"claude/opus\"}", NULL},
    /* workdir */
    {"{\"guestWorkdir\":\"rel\"}", "guestWorkdir: not an absolute path"},
    {"{\"guestWorkdir\":\"/w/../..\"}", "guestWorkdir: contains a '.' or '..' component"},
    {"{\"guestWorkdir\":\"/\"}", NULL},
    {"{\"guestWorkdir\":\"~/w\"}", NULL},
    /* egress entries: only what every entry must be; syntax is the egress layer's */
    {"{\"egressAllowlist\":[\"\"]}", "egressAllowlist[0]: must not be empty"},
    {"{\"egressAllowlist\":[\"a.com\",\"a .com\"]}", "egressAllowlist[1]: contains a space"},
    {"{\"egressDenylist\":[\"a\\r\\nb\"]}", "egressDenylist[0]: contains a control character"},
    /* protected / denied paths may be globs, with '*' and '?' only */
    {"{\"protectedPaths\":[\"/w/*.key\",\"~/.ssh/id_?sa\",\"/w/[literal]\"]}", NULL},
    {"{\"protectedPaths\":[\"rel\"]}", "protectedPaths[0]: not an absolute path"},
    {"{\"protectedPaths\":[\"/w/*.[ch]\"]}",
     "protectedPaths[0]: a glob may use only '*' and '?' as wildcards ('[', ']' and '\\' are not allowed)"},
    {"{\"protectedPaths\":[\"/w/\\\\*\"]}",
     "protectedPaths[0]: a glob may use only '*' and '?' as wildcards ('[', ']' and '\\' are not allowed)"},
    {"{\"protectedPaths\":[\"/\"]}", NULL},
    {"{\"denyRead\":[\"/a\",\"/b/../c\"]}", "denyRead[1]: contains a '.' or '..' component"},
    {"{\"denyRead\":[\"~/.cargo/credentials*\"]}", NULL},
    /* writable and executable roots */
    {"{\"runnerStateDirs\":[\"/\"]}", "runnerStateDirs[0]: must not be /"},
    {"{\"runnerStateDirs\":[\"/sys/x\"]}", "runnerStateDirs[0]: must not be /proc, /dev, /sys or inside them"},
    {"{\"runnerStateDirs\":[\"~/.cache/*\"]}",
     "runnerStateDirs[0]: wildcards ('*', '?') are not allowed here"},
    {"{\"runnerStateDirs\":[\"~\"]}", NULL},
    {"{\"execGrantRoots\":[\"/\"]}", "execGrantRoots[0]: must not be /"},
    {"{\"execGrantRoots\":[\"/opt/*\"]}", "execGrantRoots[0]: wildcards ('*', '?') are not allowed here"},
    {"{\"execGrantRoots\":[\"/proc/self/fd\"]}", NULL},
    /* create-time globs name one file */
    {"{\"denyWriteGlobs\":[\".env\",\"*.pem\",\"id_?sa\",\".env.*\"]}", NULL},
    {"{\"denyWriteGlobs\":[\"\"]}", "denyWriteGlobs[0]: must not be empty"},
    {"{\"denyWriteGlobs\":[\"a/b\"]}", "denyWriteGlobs[0]: must be a file name pattern without '/'"},
    {"{\"denyWriteGlobs\":[\"..\"]}", "denyWriteGlobs[0]: must not be '.' or '..'"},
    {"{\"denyWriteGlobs\":[\"*.[ch]\"]}",
     "denyWriteGlobs[0]: a glob may use only '*' and '?' as wildcards ('[', ']' and '\\' are not allowed)"},
    {"{\"denyWriteGlobs\":[\"a\\u0001\"]}", "denyWriteGlobs[0]: contains a control character"},
    /* environment */
    {"{\"env\":{\"A_1\":\"v\",\"_x\":\"\",\"lower\":\"caf\\u00e9\\nline\"}}", NULL},
    {"{\"env\":{\"1X\":\"v\"}}",
     "env.1X: not a valid variable name (letters, digits and '_', not starting with a digit)"},
    {"{\"env\":{\"A-B\":\"v\"}}",
     "env.A-B: not a valid variable name (letters, digits and '_', not starting with a digit)"},
    {"{\"env\":{\"A=B\":\"v\"}}",
     "env.A=B: not a valid variable name (letters, digits and '_', not starting with a digit)"},
    {"{\"env\":{\"\":\"v\"}}",
     "env.: not a valid variable name (letters, digits and '_', not starting with a digit)"},
    {"{\"env\":{\"A\\u0001\":\"v\"}}",
     "env.A\\x01: not a valid variable name (letters, digits and '_', not starting with a digit)"},
    {"{\"env\":{\"LD_PRELOAD\":\"/w/evil.so\"}}",
     "env.LD_PRELOAD: dynamic-loader variables (LD_*, DYLD_*) cannot be set"},
    {"{\"env\":{\"DYLD_INSERT_LIBRARIES\":\"/w/evil.dylib\"}}",
     "env.DYLD_INSERT_LIBRARIES: dynamic-loader variables (LD_*, DYLD_*) cannot be set"},
    {"{\"env\":{\"PYTHONPATH\":\"/w/lib\",\"OLD_PWD\":\"x\"}}", NULL},
};

START_TEST(validation_message)
{
    const struct vcase *c = &cases[_i];
    ccsb_spec *s = NULL;
    char err[512] = "";
    int r = ccsb_spec_from_json(&s, c->json, strlen(c->json), err, sizeof err);
    if (!c->msg) {
        ck_assert_msg(r == CCSB_OK, "%s: %s", c->json, err);
        /* Valid specs survive the round trip unchanged. */
        char *j = NULL;
        ck_assert_int_eq(ccsb_spec_to_json(s, &j), 0);
        ccsb_spec *t = NULL;
        ck_assert_int_eq(ccsb_spec_from_json(&t, j, strlen(j), err, sizeof err), 0);
        char *j2 = NULL;
        ck_assert_int_eq(ccsb_spec_to_json(t, &j2), 0);
        ck_assert_str_eq(j, j2);
        free(j);
        free(j2);
        ccsb_spec_free(t);
        ccsb_spec_free(s);
        return;
    }
    ck_assert_msg(r == CCSB_E_SPEC, "%s: accepted", c->json);
    ck_assert_msg(strcmp(err, c->msg) == 0, "%s:\n  got  \"%s\"\n  want \"%s\"", c->json, err,
                  c->msg);
    ck_assert_ptr_null(s);
}
END_TEST

static ccsb_spec *fresh(void)
{
    ccsb_spec *s = NULL;
    ck_assert_int_eq(ccsb_spec_new(&s), 0);
    return s;
}

static void invalid(ccsb_spec *s, const char *msg)
{
    char err[512] = "";
    ck_assert_int_eq(ccsb_spec_validate(s, err, sizeof err), CCSB_E_SPEC);
    ck_assert_str_eq(err, msg);
    ccsb_spec_free(s);
}

START_TEST(builder_then_validate)
{
    ccsb_spec *s = fresh();
    ck_assert_int_eq(ccsb_spec_add_bind_mount(s, "relative", NULL, 0), 0);
    invalid(s, "bindMounts[0].hostPath: not an absolute path");

    s = fresh();
    ck_assert_int_eq(ccsb_spec_set_agent_id(s, "bad \xff utf8"), 0);
    invalid(s, "agentId: not valid UTF-8");

    s = fresh();
    ck_assert_int_eq(ccsb_spec_add_protected_path(s, "/a/\xed\xa0\x80"), 0); /* surrogate */
    invalid(s, "protectedPaths[0]: not valid UTF-8");

    s = fresh();
    ck_assert_int_eq(ccsb_spec_set_env(s, "A", "\xf8\x88\x80\x80\x80"), 0);
    invalid(s, "env.A: not valid UTF-8");

    s = fresh();
    ck_assert_int_eq(ccsb_spec_set_env(s, "bad\xff", "v"), 0);
    invalid(s, "env.bad\\xff: not a valid variable name (letters, digits and '_', not starting "
               "with a digit)");

    /* Lengths. */
    char *long_path = malloc(4097);
    ck_assert_ptr_nonnull(long_path);
    for (int i = 0; i < 4096; i++)
        long_path[i] = (i % 200 == 0) ? '/' : 'a';
    long_path[4096] = '\0';
    s = fresh();
    ck_assert_int_eq(ccsb_spec_add_runner_state_dir(s, long_path), 0);
    invalid(s, "runnerStateDirs[0]: too long (at most 4095 bytes)");
    long_path[4095] = '\0'; /* exactly the limit */
    s = fresh();
    ck_assert_int_eq(ccsb_spec_add_runner_state_dir(s, long_path), 0);
    ck_assert_int_eq(ccsb_spec_validate(s, NULL, 0), 0);
    ccsb_spec_free(s);
    char comp[300] = "/";
    memset(comp + 1, 'c', 256);
    comp[257] = '\0';
    s = fresh();
    ck_assert_int_eq(ccsb_spec_add_deny_read(s, comp), 0);
    invalid(s, "denyRead[0]: has a component longer than 255 bytes");
    comp[256] = '\0';
    s = fresh();
    ck_assert_int_eq(ccsb_spec_add_deny_read(s, comp), 0);
    ck_assert_int_eq(ccsb_spec_validate(s, NULL, 0), 0);
    ccsb_spec_free(s);
    free(long_path);

    char id[131];
    memset(id, 'i', 130);
    id[129] = '\0';
    s = fresh();
    ck_assert_int_eq(ccsb_spec_set_session_id(s, id), 0);
    invalid(s, "sessionId: must be 1 to 128 characters from A-Z a-z 0-9 . _ - and must not "
               "start with '.'");
    id[128] = '\0';
    s = fresh();
    ck_assert_int_eq(ccsb_spec_set_session_id(s, id), 0);
    ck_assert_int_eq(ccsb_spec_validate(s, NULL, 0), 0);
    ccsb_spec_free(s);

    char label[300];
    memset(label, 'w', 257);
    label[257] = '\0';
    s = fresh();
    ck_assert_int_eq(ccsb_spec_set_workspace_id(s, label), 0);
    invalid(s, "workspaceId: too long (at most 256 bytes)");

    char egress[262];
    memset(egress, 'e', 261);
    egress[261] = '\0';
    s = fresh();
    ck_assert_int_eq(ccsb_spec_add_egress_allow(s, egress), 0);
    invalid(s, "egressAllowlist[0]: too long (at most 260 bytes)");

    size_t vlen = 131072;
    char *value = malloc(vlen + 1);
    ck_assert_ptr_nonnull(value);
    memset(value, 'v', vlen);
    value[vlen] = '\0';
    s = fresh();
    ck_assert_int_eq(ccsb_spec_set_env(s, "V", value), 0);
    invalid(s, "env.V: too long (NAME=VALUE at most 131071 bytes)");
    value[131071 - 2] = '\0'; /* "V=" + value == the limit */
    s = fresh();
    ck_assert_int_eq(ccsb_spec_set_env(s, "V", value), 0);
    ck_assert_int_eq(ccsb_spec_validate(s, NULL, 0), 0);
    ccsb_spec_free(s);
    free(value);

    char name[300];
    memset(name, 'N', 256);
    name[256] = '\0';
    s = fresh();
    ck_assert_int_eq(ccsb_spec_set_env(s, name, "v"), 0);
    invalid(s, "env.NNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNNN...: name too "
               "long (at most 255 bytes)");
}
END_TEST

START_TEST(struct_level)
{
    /* What no setter or JSON document can produce, but a bug could. */
    ccsb_spec *s = fresh();
    s->mode = 9;
    invalid(s, "mode: unknown value 9");
    s = fresh();
    s->backend = -1;
    invalid(s, "backend: unknown value -1");
    s = fresh();
    s->timeout_ms = SPEC_MAX_INT + 1;
    invalid(s, "limits.timeoutMs: must be at most 9007199254740991");
    s = fresh();
    s->memory_max = UINT64_MAX;
    invalid(s, "limits.memoryBytes: must be at most 9007199254740991");
    /* Paths a builder would have normalised. */
    s = fresh();
    ck_assert_int_eq(strv_push(&s->protected_paths, "/a//b"), 0);
    invalid(s, "protectedPaths[0]: not a normalized path (empty component)");
    s = fresh();
    ck_assert_int_eq(strv_push(&s->deny_read, "/a/"), 0);
    invalid(s, "denyRead[0]: not a normalized path (empty component)");
    s = fresh();
    ck_assert_int_eq(strv_push(&s->env_names, "A"), 0);
    char e2[64];
    ck_assert_int_eq(ccsb_spec_validate(s, e2, sizeof e2), CCSB_E_INTERNAL);
    ck_assert_str_eq(e2, "env: names and values out of step");
    ccsb_spec_free(s);
    s = fresh();
    ck_assert_int_eq(spec_set_env(s, "A", "1"), 0);
    ck_assert_int_eq(strv_push(&s->env_names, "A"), 0);
    ck_assert_int_eq(strv_push(&s->env_values, "2"), 0);
    invalid(s, "env.A: set twice");

    char err[32] = "x";
    ck_assert_int_eq(ccsb_spec_validate(NULL, err, sizeof err), CCSB_E_INVAL);
    ck_assert_str_eq(err, "spec: missing");
    s = fresh();
    ck_assert_int_eq(ccsb_spec_validate(s, err, sizeof err), 0);
    ck_assert_str_eq(err, "");
    ccsb_spec_free(s);
}
END_TEST

START_TEST(count_limits)
{
    ccsb_spec *s = fresh();
    char p[32];
    for (int i = 0; i < SPEC_MAX_BINDS + 1; i++) {
        snprintf(p, sizeof p, "/b%d", i);
        ck_assert_int_eq(ccsb_spec_add_bind_mount(s, p, NULL, 0), 0);
    }
    invalid(s, "bindMounts: too many entries (at most 256)");
    s = fresh();
    for (int i = 0; i < SPEC_MAX_LIST + 1; i++)
        ck_assert_int_eq(ccsb_spec_add_deny_write_glob(s, "*.x"), 0);
    invalid(s, "denyWriteGlobs: too many entries (at most 1024)");
    s = fresh();
    for (int i = 0; i < SPEC_MAX_ENV + 1; i++) {
        snprintf(p, sizeof p, "V%d", i);
        ck_assert_int_eq(ccsb_spec_set_env(s, p, "x"), 0);
    }
    invalid(s, "env: too many variables (at most 1024)");
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("spec_validate");
    TCase *tc = tcase_create("validate");
    tcase_add_loop_test(tc, validation_message, 0, (int)(sizeof cases / sizeof cases[0]));
    tcase_add_test(tc, builder_then_validate);
    tcase_add_test(tc, struct_level);
    tcase_add_test(tc, count_limits);
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
