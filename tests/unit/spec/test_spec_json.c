/* ccsb_spec_from_json / ccsb_spec_to_json: round trip, types, unknown fields. */
#include <check.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ccsandbox/ccsandbox.h"
#include "spec/spec.h"

static const char default_json[] =
    "{\n"
    "  \"sessionId\": null,\n"
    "  \"workspaceId\": null,\n"
    "  \"agentId\": null,\n"
    "  \"backend\": \"auto\",\n"
    "  \"mode\": \"chat\",\n"
    "  \"guestWorkdir\": null,\n"
    "  \"bindMounts\": [],\n"
    "  \"networkEnabled\": true,\n"
    "  \"egressAllowlist\": [],\n"
    "  \"egressDenylist\": [],\n"
    "  \"protectedPaths\": [],\n"
    "  \"runnerStateDirs\": [],\n"
    "  \"execGrantRoots\": [],\n"
    "  \"denyRead\": [],\n"
    "  \"denyWriteGlobs\": [],\n"
    "  \"unixSockets\": [],\n"
    "  \"allowGitConfig\": false,\n"
    "  \"upstreamProxy\": null,\n"
    "  \"env\": {},\n"
    "  \"limits\": {\n"
    "    \"timeoutMs\": 0,\n"
    "    \"memoryBytes\": 0,\n"
    "    \"pids\": 0\n"
    "  }\n"
    "}";

static ccsb_spec *parse_ok(const char *json)
{
    ccsb_spec *s = NULL;
    char err[512] = "unset";
    int r = ccsb_spec_from_json(&s, json, strlen(json), err, sizeof err);
    ck_assert_msg(r == CCSB_OK, "from_json(%s): %d %s", json, r, err);
    ck_assert_ptr_nonnull(s);
    ck_assert_str_eq(err, "");
    return s;
}

static void parse_fails(const char *json, size_t len, const char *msg)
{
    ccsb_spec *s = (ccsb_spec *)0x1;
    char err[512] = "";
    ck_assert_int_eq(ccsb_spec_from_json(&s, json, len, err, sizeof err), CCSB_E_SPEC);
    ck_assert_msg(strcmp(err, msg) == 0, "from_json(%.*s):\n  got  \"%s\"\n  want \"%s\"",
                  (int)len, json, err, msg);
    /* An invalid spec never comes back. */
    ck_assert_ptr_eq(s, (ccsb_spec *)0x1);
}

static char *dump(const ccsb_spec *s)
{
    char *j = NULL;
    ck_assert_int_eq(ccsb_spec_to_json(s, &j), CCSB_OK);
    ck_assert_ptr_nonnull(j);
    return j;
}

START_TEST(default_spec_json)
{
    ccsb_spec *s = NULL;
    ck_assert_int_eq(ccsb_spec_new(&s), CCSB_OK);
    char *j = dump(s);
    ck_assert_str_eq(j, default_json);
    free(j);
    ccsb_spec_free(s);
    /* And "{}" is the same spec. */
    s = parse_ok("{}");
    j = dump(s);
    ck_assert_str_eq(j, default_json);
    free(j);
    ccsb_spec_free(s);
}
END_TEST

static ccsb_spec *full_spec(void)
{
    ccsb_spec *s = NULL;
    ck_assert_int_eq(ccsb_spec_new(&s), CCSB_OK);
    ck_assert_int_eq(ccsb_spec_set_session_id(s, "s-1.a_b"), 0);
    ck_assert_int_eq(ccsb_spec_set_workspace_id(s, "workspace \xc3\xa9t\xc3\xa9"), 0);
    ck_assert_int_eq(ccsb_spec_set_agent_id(s, "agent/7"), 0);
    ck_assert_int_eq(ccsb_spec_set_backend(s, CCSB_BACKEND_MICROVM), 0);
    ck_assert_int_eq(ccsb_spec_set_mode(s, CCSB_MODE_ORCHESTRATE), 0);
    ck_assert_int_eq(ccsb_spec_set_guest_workdir(s, "/work/repo"), 0);
    ck_assert_int_eq(ccsb_spec_add_bind_mount(s, "/src/repo", "/work/repo", 0), 0);
    ck_assert_int_eq(ccsb_spec_add_bind_mount(s, "~/data", NULL, 1), 0);
    ck_assert_int_eq(ccsb_spec_set_network_enabled(s, 0), 0);
    ck_assert_int_eq(ccsb_spec_add_egress_allow(s, "*.example.com"), 0);
    ck_assert_int_eq(ccsb_spec_add_egress_allow(s, "[::1]:8080"), 0);
    ck_assert_int_eq(ccsb_spec_add_egress_deny(s, "bad.example.com"), 0);
    ck_assert_int_eq(ccsb_spec_add_protected_path(s, "/src/repo/*.key"), 0);
    ck_assert_int_eq(ccsb_spec_add_runner_state_dir(s, "~/.npm"), 0);
    ck_assert_int_eq(ccsb_spec_add_exec_grant_root(s, "/opt/tools"), 0);
    ck_assert_int_eq(ccsb_spec_add_deny_read(s, "~/.private"), 0);
    ck_assert_int_eq(ccsb_spec_add_deny_write_glob(s, ".env"), 0);
    ck_assert_int_eq(ccsb_spec_add_deny_write_glob(s, "*.pem"), 0);
    ck_assert_int_eq(ccsb_spec_set_allow_git_config(s, 1), 0);
    ck_assert_int_eq(ccsb_spec_set_upstream_proxy(s, "http://u:p%40w@proxy.corp:3128"), 0);
    ck_assert_int_eq(ccsb_spec_set_env(s, "Z_LAST", "multi\nline \"quoted\""), 0);
    ck_assert_int_eq(ccsb_spec_set_env(s, "A_FIRST", ""), 0);
    ck_assert_int_eq(ccsb_spec_set_timeout_ms(s, SPEC_MAX_INT), 0);
    ck_assert_int_eq(ccsb_spec_set_memory_max(s, 512ULL << 20), 0);
    ck_assert_int_eq(ccsb_spec_set_pids_max(s, UINT32_MAX), 0);
    ck_assert_int_eq(ccsb_spec_validate(s, NULL, 0), 0);
    return s;
}

static void assert_same(const struct ccsb_spec *a, const struct ccsb_spec *b)
{
#define SAME_OPT(f) \
    ck_assert_msg((a->f == NULL) == (b->f == NULL) && (!a->f || strcmp(a->f, b->f) == 0), #f)
    SAME_OPT(session_id);
    SAME_OPT(workspace_id);
    SAME_OPT(agent_id);
    SAME_OPT(guest_workdir);
    SAME_OPT(upstream_proxy);
#undef SAME_OPT
    ck_assert_int_eq(a->backend, b->backend);
    ck_assert_int_eq(a->mode, b->mode);
    ck_assert_int_eq(a->network_enabled, b->network_enabled);
    ck_assert_int_eq(a->allow_git_config, b->allow_git_config);
    ck_assert_uint_eq(a->timeout_ms, b->timeout_ms);
    ck_assert_uint_eq(a->memory_max, b->memory_max);
    ck_assert_uint_eq(a->pids_max, b->pids_max);
    ck_assert_uint_eq(a->n_binds, b->n_binds);
    for (size_t i = 0; i < a->n_binds; i++) {
        ck_assert_str_eq(a->binds[i].host_path, b->binds[i].host_path);
        ck_assert_str_eq(a->binds[i].guest_path, b->binds[i].guest_path);
        ck_assert_int_eq(a->binds[i].read_only, b->binds[i].read_only);
    }
    const struct strv *la[] = {&a->egress_allow, &a->egress_deny, &a->protected_paths,
                               &a->runner_state_dirs, &a->exec_grant_roots, &a->deny_read,
                               &a->deny_write_globs, &a->unix_sockets, &a->env_names, &a->env_values};
    const struct strv *lb[] = {&b->egress_allow, &b->egress_deny, &b->protected_paths,
                               &b->runner_state_dirs, &b->exec_grant_roots, &b->deny_read,
                               &b->deny_write_globs, &b->unix_sockets, &b->env_names, &b->env_values};
    for (size_t k = 0; k < sizeof la / sizeof la[0]; k++) {
        ck_assert_uint_eq(la[k]->n, lb[k]->n);
        for (size_t i = 0; i < la[k]->n; i++)
            ck_assert_str_eq(la[k]->v[i], lb[k]->v[i]);
    }
}

START_TEST(round_trip)
{
    ccsb_spec *s = full_spec();
    char *j = dump(s);
    ccsb_spec *t = parse_ok(j);
    assert_same(s, t);
    char *j2 = dump(t);
    ck_assert_str_eq(j, j2);
    /* Spot-check the text itself. */
    ck_assert_ptr_nonnull(strstr(j, "\"backend\": \"microvm\""));
    ck_assert_ptr_nonnull(strstr(j, "\"mode\": \"orchestrate\""));
    ck_assert_ptr_nonnull(strstr(j, "\"timeoutMs\": 9007199254740991"));
    ck_assert_ptr_nonnull(strstr(j, "\"pids\": 4294967295"));
    ck_assert_ptr_nonnull(strstr(j, "\"guestPath\": \"~/data\""));
    ck_assert_ptr_nonnull(strstr(j, "\"Z_LAST\": \"multi\\nline \\\"quoted\\\"\""));
    /* env keeps its order. */
    ck_assert(strstr(j, "Z_LAST") < strstr(j, "A_FIRST"));
    free(j);
    free(j2);
    ccsb_spec_free(t);
    ccsb_spec_free(s);
}
END_TEST

START_TEST(copy_round_trips)
{
    ccsb_spec *s = full_spec(), *c = NULL;
    ck_assert_int_eq(ccsb_spec_copy(s, &c), 0);
    assert_same(s, c);
    char *a = dump(s), *b = dump(c);
    ck_assert_str_eq(a, b);
    free(a);
    free(b);
    ccsb_spec_free(c);
    ccsb_spec_free(s);
}
END_TEST

START_TEST(parse_fields)
{
    const char *json =
        "{\"sessionId\":\"abc\",\"backend\":\"docker\",\"mode\":\"review\","
        "\"bindMounts\":[{\"hostPath\":\"/a//b/\"},{\"hostPath\":\"/c\",\"guestPath\":null,"
        "\"readOnly\":true},{\"hostPath\":\"/d\",\"guestPath\":\"/g\",\"readOnly\":false}],"
        "\"networkEnabled\":false,\"egressAllowlist\":[\"x.com\"],\"egressDenylist\":[],"
        "\"protectedPaths\":[\"/a/b/.env\"],\"runnerStateDirs\":[\"~/.cache/\"],"
        "\"execGrantRoots\":[\"/opt\"],\"denyRead\":[\"/srv/keys\"],"
        "\"denyWriteGlobs\":[\"*.key\"],\"unixSockets\":[\"/run/docker.sock\"],"
        "\"allowGitConfig\":true,"
        "\"env\":{\"FOO\":\"bar\"},\"limits\":{\"timeoutMs\":1000,\"pids\":10}}";
    ccsb_spec *s = parse_ok(json);
    ck_assert_str_eq(s->session_id, "abc");
    ck_assert_int_eq(s->backend, CCSB_BACKEND_NATIVE); /* docker -> native */
    ck_assert_int_eq(s->mode, CCSB_MODE_REVIEW);
    ck_assert_uint_eq(s->n_binds, 3);
    ck_assert_str_eq(s->binds[0].host_path, "/a/b");
    ck_assert_str_eq(s->binds[0].guest_path, "/a/b");
    ck_assert_int_eq(s->binds[0].read_only, 0);
    ck_assert_str_eq(s->binds[1].guest_path, "/c");
    ck_assert_int_eq(s->binds[1].read_only, 1);
    ck_assert_str_eq(s->binds[2].guest_path, "/g");
    ck_assert_int_eq(s->network_enabled, 0);
    ck_assert_str_eq(s->egress_allow.v[0], "x.com");
    ck_assert_uint_eq(s->egress_deny.n, 0);
    ck_assert_str_eq(s->runner_state_dirs.v[0], "~/.cache");
    ck_assert_str_eq(s->deny_write_globs.v[0], "*.key");
    ck_assert_int_eq(s->allow_git_config, 1);
    ck_assert_str_eq(s->env_names.v[0], "FOO");
    ck_assert_str_eq(s->env_values.v[0], "bar");
    ck_assert_uint_eq(s->timeout_ms, 1000);
    ck_assert_uint_eq(s->memory_max, 0);
    ck_assert_uint_eq(s->pids_max, 10);
    ccsb_spec_free(s);
    /* Nullable fields accept null. */
    s = parse_ok("{\"sessionId\":null,\"workspaceId\":null,\"agentId\":null,\"guestWorkdir\":null}");
    ck_assert_ptr_null(s->session_id);
    ccsb_spec_free(s);
}
END_TEST

struct bad_case {
    const char *json;
    const char *msg;
};

static const struct bad_case wrong_types[] = {
    {"[]", "spec: must be a JSON object"},
    {"{\"sessionId\":5}", "sessionId: must be a string or null"},
    {"{\"workspaceId\":true}", "workspaceId: must be a string or null"},
    {"{\"agentId\":[]}", "agentId: must be a string or null"},
    {"{\"upstreamProxy\":1}", "upstreamProxy: must be a string or null"},
    {"{\"backend\":null}", "backend: must be a string"},
    {"{\"backend\":\"podman\"}",
     "backend: unknown backend \"podman\" (expected auto, native, none, microvm or docker)"},
    {"{\"backend\":\"Native\"}",
     "backend: unknown backend \"Native\" (expected auto, native, none, microvm or docker)"},
    {"{\"backend\":\"\\u001b[31m\"}",
     "backend: unknown backend \"\\x1b[31m\" (expected auto, native, none, microvm or docker)"},
    {"{\"mode\":1}", "mode: must be a string"},
    {"{\"mode\":\"Chat\"}",
     "mode: unknown mode \"Chat\" (expected chat, review, plan or orchestrate)"},
    {"{\"guestWorkdir\":7}", "guestWorkdir: must be a string or null"},
    {"{\"networkEnabled\":\"yes\"}", "networkEnabled: must be true or false"},
    {"{\"networkEnabled\":1}", "networkEnabled: must be true or false"},
    {"{\"networkEnabled\":null}", "networkEnabled: must be true or false"},
    {"{\"allowGitConfig\":0}", "allowGitConfig: must be true or false"},
    {"{\"bindMounts\":{}}", "bindMounts: must be an array of objects"},
    {"{\"bindMounts\":null}", "bindMounts: must be an array of objects"},
    {"{\"bindMounts\":[\"/a\"]}", "bindMounts[0]: must be an object"},
    {"{\"bindMounts\":[{\"hostPath\":\"/a\"},{}]}", "bindMounts[1].hostPath: missing"},
    {"{\"bindMounts\":[{\"guestPath\":\"/a\"}]}", "bindMounts[0].hostPath: missing"},
    {"{\"bindMounts\":[{\"hostPath\":1}]}", "bindMounts[0].hostPath: must be a string"},
    {"{\"bindMounts\":[{\"hostPath\":null}]}", "bindMounts[0].hostPath: must be a string"},
    {"{\"bindMounts\":[{\"hostPath\":\"/a\",\"guestPath\":5}]}",
     "bindMounts[0].guestPath: must be a string or null"},
    {"{\"bindMounts\":[{\"hostPath\":\"/a\",\"readOnly\":\"true\"}]}",
     "bindMounts[0].readOnly: must be true or false"},
    {"{\"egressAllowlist\":\"a.com\"}", "egressAllowlist: must be an array of strings"},
    {"{\"egressAllowlist\":[\"a.com\",3]}", "egressAllowlist[1]: must be a string"},
    {"{\"egressDenylist\":[null]}", "egressDenylist[0]: must be a string"},
    {"{\"protectedPaths\":{}}", "protectedPaths: must be an array of strings"},
    {"{\"runnerStateDirs\":[[]]}", "runnerStateDirs[0]: must be a string"},
    {"{\"execGrantRoots\":true}", "execGrantRoots: must be an array of strings"},
    {"{\"unixSockets\":[\"run/x.sock\"]}", "unixSockets[0]: not an absolute path"},
    {"{\"denyRead\":[1.5]}", "denyRead[0]: must be a string"},
    {"{\"denyWriteGlobs\":\"*.pem\"}", "denyWriteGlobs: must be an array of strings"},
    {"{\"env\":[]}", "env: must be an object"},
    {"{\"env\":{\"A\":1}}", "env.A: must be a string"},
    {"{\"env\":{\"A\":null}}", "env.A: must be a string"},
    {"{\"limits\":5}", "limits: must be an object"},
    {"{\"limits\":{\"pids\":-1}}", "limits.pids: must be a non-negative integer"},
    {"{\"limits\":{\"pids\":\"5\"}}", "limits.pids: must be a non-negative integer"},
    {"{\"limits\":{\"pids\":4294967296}}", "limits.pids: must be at most 4294967295"},
    {"{\"limits\":{\"timeoutMs\":1.5}}", "limits.timeoutMs: must be a non-negative integer"},
    {"{\"limits\":{\"timeoutMs\":1e3}}", "limits.timeoutMs: must be a non-negative integer"},
    {"{\"limits\":{\"timeoutMs\":9007199254740992}}",
     "limits.timeoutMs: must be at most 9007199254740991"},
    {"{\"limits\":{\"memoryBytes\":-9223372036854775807}}",
     "limits.memoryBytes: must be a non-negative integer"},
    {"{\"limits\":{\"memoryBytes\":9223372036854775807}}",
     "limits.memoryBytes: must be at most 9007199254740991"},
    /* NUL bytes reach us and are named, not truncated away. */
    {"{\"sessionId\":\"ab\\u0000cd\"}", "sessionId: contains a NUL byte"},
    {"{\"bindMounts\":[{\"hostPath\":\"/a\\u0000/etc\"}]}",
     "bindMounts[0].hostPath: contains a NUL byte"},
    {"{\"protectedPaths\":[\"/x\\u0000\"]}", "protectedPaths[0]: contains a NUL byte"},
    {"{\"env\":{\"A\":\"x\\u0000y\"}}", "env.A: contains a NUL byte"},
};

START_TEST(wrong_type)
{
    const struct bad_case *c = &wrong_types[_i];
    parse_fails(c->json, strlen(c->json), c->msg);
}
END_TEST

static const struct bad_case unknown_fields[] = {
    {"{\"frobnicate\":1}", "frobnicate: unknown field"},
    {"{\"protectedPath\":[\"/a\"]}", "protectedPath: unknown field"},
    {"{\"SessionId\":\"a\"}", "SessionId: unknown field"},
    {"{\"bindMounts\":[{\"hostPath\":\"/a\",\"frob\":1}]}", "bindMounts[0].frob: unknown field"},
    {"{\"bindMounts\":[{\"hostPath\":\"/a\"},{\"hostPath\":\"/b\",\"readonly\":true}]}",
     "bindMounts[1].readonly: unknown field"},
    {"{\"limits\":{\"cpu\":1}}", "limits.cpu: unknown field"},
    {"{\"x\\ny\":1}", "x\\x0ay: unknown field"},
    /* Reported in document order: the unknown one comes first here. */
    {"{\"zzz\":1,\"mode\":5}", "zzz: unknown field"},
    {"{\"mode\":5,\"zzz\":1}", "mode: must be a string"},
};

START_TEST(unknown_field)
{
    const struct bad_case *c = &unknown_fields[_i];
    parse_fails(c->json, strlen(c->json), c->msg);
}
END_TEST

static void parse_fails_prefix(const char *json, size_t len, const char *prefix)
{
    ccsb_spec *s = NULL;
    char err[512] = "";
    ck_assert_int_eq(ccsb_spec_from_json(&s, json, len, err, sizeof err), CCSB_E_SPEC);
    ck_assert_msg(strncmp(err, prefix, strlen(prefix)) == 0, "got \"%s\", want \"%s...\"", err,
                  prefix);
    ck_assert_ptr_null(s);
}

START_TEST(syntax_errors)
{
    parse_fails_prefix("{", 1, "invalid JSON at line 1, column 1: ");
    parse_fails_prefix("", 0, "invalid JSON at line ");
    parse_fails_prefix("{} x", 4, "invalid JSON at line 1, column 4: end of file expected");
    parse_fails_prefix("\"str\"", 5, "invalid JSON at line 1");
    parse_fails_prefix("{\"mode\":\"chat\",\n \"mode\":\"plan\"}", 30,
                       "invalid JSON at line 2, column 7: duplicate object key");
    parse_fails_prefix("{\"env\":{\"A\":\"1\",\"A\":\"2\"}}", 25,
                       "invalid JSON at line 1, column 19: duplicate object key");
    parse_fails_prefix("{\"sessionId\":\"\xff\"}", 17, "invalid JSON at line 1");
    parse_fails_prefix("{\"limits\":{\"pids\":99999999999999999999}}", 40,
                       "invalid JSON at line 1");
    /* The length is honoured: a NUL inside it is bad JSON, bytes after it
     * are never read. */
    parse_fails_prefix("{}\0{", 4, "invalid JSON at line 1");
    ccsb_spec *s = NULL;
    char err[64];
    ck_assert_int_eq(ccsb_spec_from_json(&s, "{}garbage", 2, err, sizeof err), CCSB_OK);
    ccsb_spec_free(s);
}
END_TEST

START_TEST(bad_arguments)
{
    ccsb_spec *s = NULL;
    char err[64];
    ck_assert_int_eq(ccsb_spec_from_json(NULL, "{}", 2, err, sizeof err), CCSB_E_INVAL);
    ck_assert_str_eq(err, "out: missing");
    ck_assert_int_eq(ccsb_spec_from_json(&s, NULL, 2, err, sizeof err), CCSB_E_INVAL);
    ck_assert_str_eq(err, "json: missing");
    ck_assert_int_eq(ccsb_spec_from_json(&s, NULL, 0, NULL, 0), CCSB_E_INVAL);
    ck_assert_ptr_null(s);
    /* No error buffer is fine. */
    ck_assert_int_eq(ccsb_spec_from_json(&s, "{\"x\":1}", 7, NULL, 0), CCSB_E_SPEC);
    ck_assert_int_eq(ccsb_spec_from_json(&s, "{\"x\":1}", 7, err, 0), CCSB_E_SPEC);
    /* A short buffer truncates, it does not overflow. */
    char tiny[8];
    memset(tiny, 'Z', sizeof tiny);
    ck_assert_int_eq(ccsb_spec_from_json(&s, "{\"frobnicate\":1}", 16, tiny, 6), CCSB_E_SPEC);
    ck_assert_str_eq(tiny, "frobn");
    ck_assert_int_eq(tiny[6], 'Z');
    char *j = NULL;
    ck_assert_int_eq(ccsb_spec_to_json(NULL, &j), CCSB_E_INVAL);
    ck_assert_int_eq(ccsb_spec_new(&s), 0);
    ck_assert_int_eq(ccsb_spec_to_json(s, NULL), CCSB_E_INVAL);
    ccsb_spec_free(s);
}
END_TEST

START_TEST(to_json_unrepresentable)
{
    ccsb_spec *s = NULL;
    char *j = (char *)0x1;
    ck_assert_int_eq(ccsb_spec_new(&s), 0);
    /* Setters do not judge content; JSON cannot carry invalid UTF-8. */
    ck_assert_int_eq(ccsb_spec_add_protected_path(s, "/a/\xff"), 0);
    ck_assert_int_eq(ccsb_spec_to_json(s, &j), CCSB_E_SPEC);
    ck_assert_ptr_eq(j, (char *)0x1);
    ccsb_spec_free(s);
    ck_assert_int_eq(ccsb_spec_new(&s), 0);
    ck_assert_int_eq(ccsb_spec_set_env(s, "A", "\xc0\x80"), 0); /* overlong NUL */
    ck_assert_int_eq(ccsb_spec_to_json(s, &j), CCSB_E_SPEC);
    ccsb_spec_free(s);
}
END_TEST

START_TEST(limits_on_counts)
{
    /* 257 binds: refused before any is judged. */
    size_t cap = 300 * 32;
    char *json = malloc(cap);
    ck_assert_ptr_nonnull(json);
    size_t o = (size_t)snprintf(json, cap, "{\"bindMounts\":[");
    for (int i = 0; i < 257; i++)
        o += (size_t)snprintf(json + o, cap - o, "%s{\"hostPath\":\"/b%d\"}", i ? "," : "", i);
    o += (size_t)snprintf(json + o, cap - o, "]}");
    parse_fails(json, o, "bindMounts: too many entries (at most 256)");
    free(json);
    cap = 1100 * 8;
    json = malloc(cap);
    ck_assert_ptr_nonnull(json);
    o = (size_t)snprintf(json, cap, "{\"egressAllowlist\":[");
    for (int i = 0; i < 1025; i++)
        o += (size_t)snprintf(json + o, cap - o, "%s\"a\"", i ? "," : "");
    o += (size_t)snprintf(json + o, cap - o, "]}");
    parse_fails(json, o, "egressAllowlist: too many entries (at most 1024)");
    free(json);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("spec_json");
    TCase *tc = tcase_create("json");
    tcase_add_test(tc, default_spec_json);
    tcase_add_test(tc, round_trip);
    tcase_add_test(tc, copy_round_trips);
    tcase_add_test(tc, parse_fields);
    tcase_add_loop_test(tc, wrong_type, 0, (int)(sizeof wrong_types / sizeof wrong_types[0]));
    tcase_add_loop_test(tc, unknown_field, 0,
                        (int)(sizeof unknown_fields / sizeof unknown_fields[0]));
    tcase_add_test(tc, syntax_errors);
    tcase_add_test(tc, bad_arguments);
    tcase_add_test(tc, to_json_unrepresentable);
    tcase_add_test(tc, limits_on_counts);
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
