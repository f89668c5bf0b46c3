/*
 * The Seatbelt profile generator, judged by what the profile does: every
 * generated profile is parsed by the structural checker and then asked
 * concrete questions ("may this process write /x?") under both readings
 * of Seatbelt precedence, which must agree.
 */
#include <check.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <ccsandbox/ccsandbox.h>

#include "backend/seatbelt_lists.h"
#include "backend/seatbelt_profile.h"
#include "fixture.h"
#include "sbpl_check.h"

#define HOME "/Users/dev"
#define PROJ HOME "/proj"
#define TMPD "/private/var/folders/zz/abc/T/ccsb-s1"

struct world {
    struct ccsb_policy p;
    struct fake_fs fs;
    struct policy_host host;
    struct seatbelt_profile_opts o;
    char *text;
    struct sbpl_profile prof;
};

/* A chat session on a project in $HOME, as policy_build would resolve it. */
static void world_chat(struct world *w)
{
    memset(w, 0, sizeof(*w));
    fake_fs_macos(&w->fs);
    strv_push(&w->fs.exists, PROJ "/src");
    strv_push(&w->fs.exists, HOME "/.ssh");
    strv_push(&w->fs.exists, TMPD);
    w->p.mode = CCSB_MODE_CHAT;
    w->p.network_enabled = 1;
    w->p.home = strdup(HOME);
    w->p.session_tmp = strdup(TMPD);
    fx_paths_add(&w->p.writable_roots, PROJ, NULL);
    fx_paths_add(&w->p.writable_roots, HOME "/.cache/ccsb", NULL);
    fx_paths_add(&w->p.writable_roots, TMPD, NULL);
    fx_paths_add(&w->p.deny_read, HOME "/.ssh", NULL);
    fx_paths_add(&w->p.deny_read, HOME "/.aws", NULL);
    fx_paths_add(&w->p.deny_read, HOME "/Library/Keychains", NULL);
    fx_paths_add(&w->p.deny_write, PROJ "/.git/hooks", NULL);
    fx_paths_add(&w->p.deny_write, PROJ "/.git/config", NULL);
    fx_paths_add(&w->p.deny_write, PROJ "/.bashrc", NULL);
    fx_paths_add(&w->p.deny_write, PROJ "/.vscode", NULL);
    strv_push(&w->p.deny_write_globs, ".env");
    strv_push(&w->p.deny_write_globs, "*.key");
    fx_paths_add(&w->p.exec_grant_roots, PROJ "/node_modules/.bin", NULL);
    w->host.home = HOME;
    w->host.resolve = fake_resolve;
    w->host.resolve_userdata = &w->fs;
    w->o.preset = SEATBELT_PRESET_SESSION;
    w->o.session_id = "s1";
    w->o.http_port = 41001;
    w->o.socks_port = 41002;
    w->o.host = &w->host;
}

static void world_free(struct world *w)
{
    sbpl_profile_free(&w->prof);
    free(w->text);
    fx_policy_clear(&w->p);
    fake_fs_clear(&w->fs);
}

/* Generates, parses, checks; fails the test on any error. */
static void gen(struct world *w)
{
    char err[512] = "";
    free(w->text);
    w->text = NULL;
    sbpl_profile_free(&w->prof);
    int rc = seatbelt_profile_generate(&w->p, &w->o, &w->text, err, sizeof(err));
    ck_assert_msg(rc == 0, "generate: %d %s", rc, err);
    char *tag = seatbelt_message_tag(w->o.session_id, w->o.exec_tag);
    rc = sbpl_parse(w->text, tag, &w->prof, err, sizeof(err));
    free(tag);
    ck_assert_msg(rc == 0, "checker: %s\n%.1500s", err, w->text);
}

static int may(struct world *w, const char *op, const char *path)
{
    int r = sbpl_path_allowed(&w->prof, op, path);
    ck_assert_msg(r >= 0, "the two precedence readings disagree on %s %s", op, path);
    return r;
}

static int may_req(struct world *w, struct sbpl_req *rq)
{
    int r = sbpl_eval_both(&w->prof, rq);
    ck_assert_msg(r >= 0, "the two precedence readings disagree on %s", rq->op);
    return r;
}

START_TEST(reads_secret_set)
{
    struct world w;
    world_chat(&w);
    gen(&w);
    ck_assert(!may(&w, "file-read-data", HOME "/.ssh/id_ed25519"));
    ck_assert(!may(&w, "file-read-data", HOME "/.ssh"));
    ck_assert(!may(&w, "file-read-metadata", HOME "/.aws/credentials"));
    ck_assert(!may(&w, "file-read-data", HOME "/Library/Keychains/login.keychain-db"));
    ck_assert(may(&w, "file-read-data", HOME "/.sshrc"));
    ck_assert(may(&w, "file-read-data", PROJ "/src/main.c"));
    ck_assert(may(&w, "file-read-data", "/usr/lib/libSystem.B.dylib"));
    world_free(&w);
}
END_TEST

START_TEST(writes_only_in_roots)
{
    struct world w;
    world_chat(&w);
    gen(&w);
    ck_assert(may(&w, "file-write-data", PROJ "/src/main.c"));
    ck_assert(may(&w, "file-write-create", PROJ "/src/new.c"));
    ck_assert(may(&w, "file-write-unlink", PROJ "/src/old.c"));
    ck_assert(may(&w, "file-write-data", HOME "/.cache/ccsb/state"));
    ck_assert(may(&w, "file-write-data", TMPD "/scratch"));
    ck_assert(!may(&w, "file-write-data", HOME "/notes.txt"));
    ck_assert(!may(&w, "file-write-data", "/private/etc/hosts"));
    ck_assert(!may(&w, "file-write-create", HOME "/projx/a"));
    ck_assert(!may(&w, "file-write-mode", "/usr/local/bin/x"));
    /* devices */
    ck_assert(may(&w, "file-write-data", "/dev/null"));
    ck_assert(may(&w, "file-write-data", "/dev/fd/1"));
    ck_assert(may(&w, "file-write-data", "/dev/tty"));
    ck_assert(!may(&w, "file-write-data", "/dev/disk0"));
    ck_assert(!may(&w, "file-write-data", "/dev/fd/1x"));
    struct sbpl_req pty = {.op = "file-write-data", .path = "/dev/ttys004"};
    ck_assert(!may_req(&w, &pty)); /* the user's other terminals */
    pty.pty_extension = 1;
    ck_assert(may_req(&w, &pty)); /* a terminal made inside the sandbox */
    world_free(&w);
}
END_TEST

START_TEST(protected_inside_writable_root)
{
    struct world w;
    world_chat(&w);
    gen(&w);
    ck_assert(!may(&w, "file-write-data", PROJ "/.git/hooks/pre-commit"));
    ck_assert(!may(&w, "file-write-create", PROJ "/.git/hooks/post-checkout"));
    ck_assert(!may(&w, "file-write-data", PROJ "/.git/config"));
    ck_assert(!may(&w, "file-write-data", PROJ "/.bashrc"));
    ck_assert(!may(&w, "file-write-create", PROJ "/.vscode/tasks.json"));
    ck_assert(may(&w, "file-write-data", PROJ "/.git/HEAD"));
    ck_assert(may(&w, "file-write-data", PROJ "/.bashrc.d"));
    ck_assert(may(&w, "file-write-data", PROJ "/.git/configx"));
    world_free(&w);
}
END_TEST

START_TEST(no_rename_of_ancestors)
{
    struct world w;
    world_chat(&w);
    gen(&w);
    /* mv .git elsewhere (or replace it) would carry hooks out of the rule */
    ck_assert(!may(&w, "file-write-unlink", PROJ "/.git"));
    ck_assert(!may(&w, "file-write-create", PROJ "/.git"));
    ck_assert(!may(&w, "file-write-unlink", PROJ));
    ck_assert(!may(&w, "file-write-unlink", HOME));
    ck_assert(!may(&w, "file-write-unlink", "/Users"));
    ck_assert(!may(&w, "file-write-unlink", PROJ "/.git/hooks"));
    ck_assert(!may(&w, "file-write-unlink", HOME "/.ssh/id_ed25519"));
    ck_assert(!may(&w, "file-write-unlink", HOME "/Library"));
    /* siblings stay removable, the rest of .git stays writable */
    ck_assert(may(&w, "file-write-unlink", PROJ "/.git/index.lock"));
    ck_assert(may(&w, "file-write-unlink", PROJ "/src"));
    ck_assert(may(&w, "file-write-data", PROJ "/.git/index"));
    /* the ancestors are literal rules: exactly those directories */
    ck_assert_uint_eq(sbpl_count_filter(&w.prof, 0, "file-write-unlink", "literal", PROJ "/.git"), 1);
    ck_assert_uint_eq(sbpl_count_filter(&w.prof, 0, "file-write-unlink", "literal", "/Users"), 1);
    ck_assert_uint_eq(sbpl_count_filter(&w.prof, 0, "file-write-unlink", "literal", "/"), 0);
    world_free(&w);
}
END_TEST

START_TEST(no_second_name_for_denied)
{
    /* ln ~/.ssh/id_rsa proj/x; cat proj/x -- or ln .git/config x; echo >> x */
    struct world w;
    world_chat(&w);
    gen(&w);
    ck_assert(!may(&w, "file-link", HOME "/.ssh/id_ed25519"));
    ck_assert(!may(&w, "file-clone", HOME "/.aws/credentials"));
    ck_assert(!may(&w, "file-link", PROJ "/.git/config"));
    ck_assert(!may(&w, "file-link", PROJ "/.env"));
    ck_assert(may(&w, "file-link", PROJ "/src/a.c"));
    ck_assert(may(&w, "file-clone", PROJ "/src/a.c"));
    world_free(&w);
}
END_TEST

START_TEST(deny_write_globs_final_component)
{
    struct world w;
    world_chat(&w);
    gen(&w);
    ck_assert(!may(&w, "file-write-create", PROJ "/.env"));
    ck_assert(!may(&w, "file-write-data", PROJ "/deep/er/.env"));
    ck_assert(!may(&w, "file-write-create", PROJ "/certs/server.key"));
    ck_assert(!may(&w, "file-write-create", TMPD "/x.key"));
    ck_assert(may(&w, "file-write-create", PROJ "/x.env"));
    ck_assert(may(&w, "file-write-create", PROJ "/.envrc"));
    ck_assert(may(&w, "file-write-create", PROJ "/keyfile"));
    ck_assert(may(&w, "file-write-create", PROJ "/a.key/inner"));
    ck_assert(may(&w, "file-write-create", PROJ "/akey"));
    world_free(&w);
}
END_TEST

START_TEST(exec_rules)
{
    struct world w;
    world_chat(&w);
    w.o.helper_path = PROJ "/build/ccsb-init";
    gen(&w);
    ck_assert(!may(&w, "process-exec", PROJ "/build/app"));
    ck_assert(!may(&w, "process-exec", TMPD "/dropper"));
    ck_assert(!may(&w, "process-exec", HOME "/.cache/ccsb/tool"));
    ck_assert(may(&w, "process-exec", PROJ "/node_modules/.bin/tsc"));
    ck_assert(may(&w, "process-exec", PROJ "/build/ccsb-init"));
    ck_assert(!may(&w, "process-exec", PROJ "/build/ccsb-init2"));
    ck_assert(may(&w, "process-exec", "/usr/bin/git"));
    ck_assert(may(&w, "process-exec", "/bin/sh"));
    for (size_t i = 0; seatbelt_dangerous_binaries[i].path; i++)
        ck_assert_msg(!may(&w, "process-exec", seatbelt_dangerous_binaries[i].path), "%s",
                      seatbelt_dangerous_binaries[i].path);
    world_free(&w);
}
END_TEST

START_TEST(grant_cannot_reopen_dangerous)
{
    struct world w;
    world_chat(&w);
    fx_paths_add(&w.p.exec_grant_roots, "/usr/bin", NULL);
    gen(&w);
    ck_assert(may(&w, "process-exec", "/usr/bin/env"));
    ck_assert(!may(&w, "process-exec", "/usr/bin/osascript"));
    world_free(&w);
}
END_TEST

/* unixSockets: exactly the listed sockets, in both spellings, nothing else. */
START_TEST(unix_sockets_listed_only)
{
    struct world w;
    world_chat(&w);
    fx_paths_add(&w.p.unix_sockets, "/var/run/docker.sock", "/private/var/run/docker.sock");
    fx_paths_add(&w.p.unix_sockets, "/tmp/x\") (allow default) (\"", NULL);
    gen(&w);
    struct sbpl_req u = {.op = "network-outbound", .unix_socket = "/private/var/run/docker.sock"};
    ck_assert(may_req(&w, &u));
    u.unix_socket = "/var/run/docker.sock";
    ck_assert(may_req(&w, &u));
    u.unix_socket = HOME "/.ssh/agent.sock";
    ck_assert(!may_req(&w, &u));
    /* A hostile name is one literal path, not a way out. */
    u.unix_socket = "/tmp/x\") (allow default) (\"";
    ck_assert(may_req(&w, &u));
    struct sbpl_req r = {.op = "network-outbound", .remote = "1.1.1.1:443"};
    ck_assert(!may_req(&w, &r));
    ck_assert(!may(&w, "file-write-data", "/etc/passwd"));
    world_free(&w);
}
END_TEST

START_TEST(network_only_proxies_and_dns)
{
    struct world w;
    world_chat(&w);
    gen(&w);
    struct sbpl_req r = {.op = "network-outbound", .remote = "localhost:41001"};
    ck_assert(may_req(&w, &r));
    r.remote = "localhost:41002";
    ck_assert(may_req(&w, &r));
    r.remote = "localhost:5432"; /* no blanket loopback */
    ck_assert(!may_req(&w, &r));
    r.remote = "1.1.1.1:443";
    ck_assert(!may_req(&w, &r));
    struct sbpl_req u = {.op = "network-outbound", .unix_socket = "/private/var/run/mDNSResponder"};
    ck_assert(may_req(&w, &u));
    u.unix_socket = "/private/var/run/docker.sock";
    ck_assert(!may_req(&w, &u));
    u.unix_socket = HOME "/.ssh/agent.sock";
    ck_assert(!may_req(&w, &u));
    struct sbpl_req b = {.op = "network-bind", .remote = "localhost:41001"};
    ck_assert(!may_req(&w, &b));
    struct sbpl_req in = {.op = "network-inbound", .remote = "localhost:41001"};
    ck_assert(!may_req(&w, &in));
    world_free(&w);
}
END_TEST

START_TEST(network_disabled_same_rules)
{
    /* networkEnabled=false is enforced by the proxies: the profile still
     * lets the command reach them, and nothing else. */
    struct world w;
    world_chat(&w);
    w.p.network_enabled = 0;
    gen(&w);
    ck_assert_ptr_nonnull(strstr(w.text, "network: disabled"));
    struct sbpl_req r = {.op = "network-outbound", .remote = "localhost:41001"};
    ck_assert(may_req(&w, &r));
    r.remote = "localhost:8080";
    ck_assert(!may_req(&w, &r));
    world_free(&w);
}
END_TEST

START_TEST(ports_unassigned)
{
    struct world w;
    world_chat(&w);
    w.o.http_port = 0;
    w.o.socks_port = 0;
    w.o.session_id = NULL;
    gen(&w);
    ck_assert_ptr_nonnull(strstr(w.text, "HTTP proxy port not assigned yet"));
    ck_assert_ptr_nonnull(strstr(w.text, "ccsb:unassigned"));
    struct sbpl_req r = {.op = "network-outbound", .remote = "localhost:41001"};
    ck_assert(!may_req(&w, &r));
    struct sbpl_req u = {.op = "network-outbound", .unix_socket = "/private/var/run/mDNSResponder"};
    ck_assert(may_req(&w, &u));
    world_free(&w);
}
END_TEST

START_TEST(same_port_once)
{
    struct world w;
    world_chat(&w);
    w.o.socks_port = w.o.http_port;
    gen(&w);
    const char *first = strstr(w.text, "localhost:41001");
    ck_assert_ptr_nonnull(first);
    ck_assert_ptr_null(strstr(first + 1, "localhost:41001"));
    world_free(&w);
}
END_TEST

START_TEST(hardening)
{
    struct world w;
    world_chat(&w);
    gen(&w);
    struct sbpl_req s = {.op = "signal", .same_sandbox = 1};
    ck_assert(may_req(&w, &s));
    s.same_sandbox = 0;
    ck_assert(!may_req(&w, &s));
    struct sbpl_req t = {.op = "mach-priv-task-port", .same_sandbox = 0};
    ck_assert(!may_req(&w, &t));
    struct sbpl_req l = {.op = "lsopen"};
    ck_assert(!may_req(&w, &l));
    struct sbpl_req a = {.op = "appleevent-send"};
    ck_assert(!may_req(&w, &a));
    struct sbpl_req pw = {.op = "user-preference-write"};
    ck_assert(!may_req(&w, &pw));
    world_free(&w);
}
END_TEST

START_TEST(every_deny_is_tagged)
{
    struct world w;
    world_chat(&w);
    w.o.exec_tag = "7";
    gen(&w); /* the checker demands the tag on every deny */
    size_t denies = 0;
    for (size_t i = 0; i < w.prof.n_rules; i++) {
        if (!w.prof.rules[i].allow) {
            ck_assert_str_eq(w.prof.rules[i].message, "ccsb:s1:7");
            denies++;
        }
    }
    ck_assert_uint_ge(denies, 8);
    world_free(&w);
}
END_TEST

START_TEST(message_tag_escaping)
{
    char *t = seatbelt_message_tag("a b/c:d\"e\n", "x)y");
    ck_assert_str_eq(t, "ccsb:a%20b%2Fc%3Ad%22e%0A:x%29y");
    free(t);
    t = seatbelt_message_tag("Sess-1_2.3", NULL);
    ck_assert_str_eq(t, "ccsb:Sess-1_2.3");
    free(t);
    t = seatbelt_message_tag(NULL, NULL);
    ck_assert_str_eq(t, "ccsb:unassigned");
    free(t);
}
END_TEST

/* ------------------------------------------------------------------ */
/* Spellings and the resolver                                           */
/* ------------------------------------------------------------------ */

START_TEST(symlinked_tmp_both_spellings)
{
    struct world w;
    world_chat(&w);
    fx_policy_clear(&w.p);
    w.p.home = strdup(HOME);
    w.p.network_enabled = 1;
    /* /tmp/work exists: the policy resolved it. .bashrc does not exist yet:
     * the policy left it as written, the generator resolves its parent. */
    strv_push(&w.fs.exists, "/private/tmp/work");
    fx_paths_add(&w.p.writable_roots, "/tmp/work", "/private/tmp/work");
    fx_paths_add(&w.p.deny_write, "/tmp/work/.bashrc", NULL);
    fx_paths_add(&w.p.deny_read, "/var/folders/zz/secret.txt", NULL);
    gen(&w);
    ck_assert_uint_eq(sbpl_count_filter(&w.prof, 1, "file-write*", "subpath", "/tmp/work"), 1);
    ck_assert_uint_eq(sbpl_count_filter(&w.prof, 1, "file-write*", "subpath", "/private/tmp/work"), 1);
    ck_assert_uint_eq(sbpl_count_filter(&w.prof, 0, "file-write*", "subpath", "/tmp/work/.bashrc"), 1);
    ck_assert_uint_eq(sbpl_count_filter(&w.prof, 0, "file-write*", "subpath",
                                        "/private/tmp/work/.bashrc"), 1);
    ck_assert_uint_eq(sbpl_count_filter(&w.prof, 0, "file-read*", "subpath",
                                        "/private/var/folders/zz/secret.txt"), 1);
    /* ancestors in both spellings */
    const char *anc[] = {"/tmp/work", "/tmp", "/private/tmp/work", "/private/tmp", "/private",
                         "/var/folders/zz", "/private/var/folders"};
    for (size_t i = 0; i < sizeof(anc) / sizeof(anc[0]); i++)
        ck_assert_msg(sbpl_count_filter(&w.prof, 0, "file-write-unlink", "literal", anc[i]) == 1,
                      "ancestor %s", anc[i]);
    /* Seatbelt sees the canonical spelling */
    ck_assert(may(&w, "file-write-data", "/private/tmp/work/a"));
    ck_assert(!may(&w, "file-write-data", "/private/tmp/work/.bashrc"));
    ck_assert(!may(&w, "file-read-data", "/private/var/folders/zz/secret.txt"));
    world_free(&w);
}
END_TEST

START_TEST(glob_prefix_resolved)
{
    struct world w;
    world_chat(&w);
    fx_paths_add(&w.p.deny_read, "/tmp/*.pem", NULL);
    fx_paths_add(&w.p.deny_write, PROJ "/**/secrets", NULL);
    gen(&w);
    ck_assert(!may(&w, "file-read-data", "/private/tmp/a.pem"));
    ck_assert(!may(&w, "file-read-data", "/tmp/b.pem"));
    ck_assert(may(&w, "file-read-data", "/private/tmp/sub/a.pem"));
    ck_assert(may(&w, "file-read-data", "/private/tmp/a.pemx"));
    ck_assert(!may(&w, "file-write-data", PROJ "/secrets/x"));
    ck_assert(!may(&w, "file-write-data", PROJ "/a/b/secrets"));
    ck_assert(may(&w, "file-write-data", PROJ "/a/b/secretsx"));
    /* the glob's fixed directory and its ancestors are pinned */
    ck_assert(!may(&w, "file-write-unlink", "/private/tmp"));
    ck_assert(!may(&w, "file-write-unlink", PROJ));
    world_free(&w);
}
END_TEST

START_TEST(policy_glob_resolved_used)
{
    /* the policy resolves a glob's fixed prefix itself: that spelling is
     * taken, and its prefix stays literal even with a '*' in the name */
    struct world w;
    world_chat(&w);
    fx_paths_add(&w.p.deny_read, "/Users/dev/lnk/*.txt", "/Volumes/x*y/*.txt");
    gen(&w);
    ck_assert(!may(&w, "file-read-data", "/Volumes/x*y/a.txt"));
    ck_assert(may(&w, "file-read-data", "/Volumes/xzzy/a.txt"));
    world_free(&w);
}
END_TEST

START_TEST(fake_resolver_semantics)
{
    struct fake_fs fs = {0};
    fake_fs_macos(&fs);
    strv_push(&fs.link_from, "/Users/dev/link");
    strv_push(&fs.link_to, "/tmp/real");
    strv_push(&fs.exists, "/private/tmp/real/file");
    strv_push(&fs.link_from, "/loop/a");
    strv_push(&fs.link_to, "/loop/b");
    strv_push(&fs.link_from, "/loop/b");
    strv_push(&fs.link_to, "/loop/a");
    char *r = fake_resolve("/tmp", &fs);
    ck_assert_str_eq(r, "/private/tmp");
    free(r);
    r = fake_resolve("/Users/dev/link/file", &fs);
    ck_assert_str_eq(r, "/private/tmp/real/file");
    free(r);
    ck_assert_ptr_null(fake_resolve("/tmp/missing", &fs));
    ck_assert_ptr_null(fake_resolve("/loop/a/x", &fs));
    ck_assert_ptr_null(fake_resolve("relative", &fs));
    r = fake_resolve("/", &fs);
    ck_assert_str_eq(r, "/");
    free(r);
    fake_fs_clear(&fs);
}
END_TEST

START_TEST(unresolvable_kept_as_written)
{
    struct world w;
    world_chat(&w);
    strv_push(&w.fs.link_from, "/loop/a");
    strv_push(&w.fs.link_to, "/loop/b");
    strv_push(&w.fs.link_from, "/loop/b");
    strv_push(&w.fs.link_to, "/loop/a");
    fx_paths_add(&w.p.deny_read, "/loop/a/secret", NULL);
    fx_paths_add(&w.p.deny_read, "/nonexistent/dir/file", NULL);
    gen(&w);
    ck_assert_uint_eq(sbpl_count_filter(&w.prof, 0, "file-read*", "subpath", "/loop/a/secret"), 1);
    ck_assert_uint_eq(sbpl_count_filter(&w.prof, 0, "file-read*", "subpath", "/nonexistent/dir/file"), 1);
    ck_assert(!may(&w, "file-read-data", "/nonexistent/dir/file"));
    world_free(&w);
}
END_TEST

START_TEST(symlink_chain_via_home)
{
    struct world w;
    world_chat(&w);
    strv_push(&w.fs.link_from, HOME "/link");
    strv_push(&w.fs.link_to, "/tmp/real");
    strv_push(&w.fs.exists, "/private/tmp/real");
    fx_paths_add(&w.p.deny_write, HOME "/link/.git/hooks", NULL);
    gen(&w);
    ck_assert(!may(&w, "file-write-data", "/private/tmp/real/.git/hooks/pre-push"));
    ck_assert(!may(&w, "file-write-unlink", "/private/tmp/real/.git"));
    world_free(&w);
}
END_TEST

START_TEST(macos_default_resolver)
{
    char *r = seatbelt_resolve_macos_defaults("/tmp/x", NULL);
    ck_assert_str_eq(r, "/private/tmp/x");
    free(r);
    r = seatbelt_resolve_macos_defaults("/var", NULL);
    ck_assert_str_eq(r, "/private/var");
    free(r);
    r = seatbelt_resolve_macos_defaults("/etc/hosts", NULL);
    ck_assert_str_eq(r, "/private/etc/hosts");
    free(r);
    ck_assert_ptr_null(seatbelt_resolve_macos_defaults("/tmpx", NULL));
    ck_assert_ptr_null(seatbelt_resolve_macos_defaults("/Users/dev", NULL));
    ck_assert_ptr_null(seatbelt_resolve_macos_defaults("/private/tmp", NULL));
}
END_TEST

START_TEST(real_resolver_when_none_given)
{
    /* NULL resolver: realpath(3) on this host, through a real symlink. */
    char dir[] = "/tmp/ccsb-sb-XXXXXX";
    ck_assert_ptr_nonnull(mkdtemp(dir));
    char canon[PATH_MAX];
    ck_assert_ptr_nonnull(realpath(dir, canon));
    char real[PATH_MAX + 16], link[PATH_MAX + 16];
    snprintf(real, sizeof(real), "%s/real", canon);
    snprintf(link, sizeof(link), "%s/link", dir);
    ck_assert_int_eq(mkdir(real, 0700), 0);
    ck_assert_int_eq(symlink(real, link), 0);

    struct world w;
    world_chat(&w);
    w.o.host = NULL;
    char missing[PATH_MAX + 32];
    snprintf(missing, sizeof(missing), "%s/not-yet/secret", link);
    fx_paths_add(&w.p.deny_read, missing, NULL);
    gen(&w);
    char want[PATH_MAX + 32];
    snprintf(want, sizeof(want), "%s/not-yet/secret", real);
    ck_assert_uint_eq(sbpl_count_filter(&w.prof, 0, "file-read*", "subpath", want), 1);
    ck_assert_uint_eq(sbpl_count_filter(&w.prof, 0, "file-read*", "subpath", missing), 1);
    world_free(&w);
    ck_assert_int_eq(unlink(link), 0);
    ck_assert_int_eq(rmdir(real), 0);
    ck_assert_int_eq(rmdir(dir), 0);
}
END_TEST

/* ------------------------------------------------------------------ */
/* Escaping: no path can inject SBPL                                    */
/* ------------------------------------------------------------------ */

static const char *const nasty[] = {
    "/w/a\"b",
    "/w/c) (allow file-write* (subpath \"/\")) (deny x",
    "/w/e\\f",
    "/w/g\nh",
    "/w/.*+?[](){}|^$",
    "/w/\\\") (allow default) (\"",
    "/w/tab\there",
    "/w/; (allow file-read*)",
    "/w/#\"regex\"",
};
#define N_NASTY (sizeof(nasty) / sizeof(nasty[0]))

START_TEST(nasty_paths_cannot_inject)
{
    struct world w;
    world_chat(&w);
    fx_policy_clear(&w.p);
    w.p.home = strdup(HOME);
    fx_paths_add(&w.p.writable_roots, "/w", NULL);
    for (size_t i = 0; i < N_NASTY; i++) {
        if (strchr(nasty[i], '*') || strchr(nasty[i], '?'))
            continue;
        fx_paths_add(&w.p.deny_write, nasty[i], NULL);
        fx_paths_add(&w.p.deny_read, nasty[i], NULL);
    }
    gen(&w);
    size_t rules_nasty = w.prof.n_rules;
    /* Every nasty path is denied exactly as written ... */
    for (size_t i = 0; i < N_NASTY; i++) {
        if (strchr(nasty[i], '*') || strchr(nasty[i], '?'))
            continue;
        ck_assert_msg(!may(&w, "file-write-data", nasty[i]), "write %s", nasty[i]);
        ck_assert_msg(!may(&w, "file-read-data", nasty[i]), "read %s", nasty[i]);
        ck_assert_uint_eq(sbpl_count_filter(&w.prof, 0, "file-read*", "subpath", nasty[i]), 1);
    }
    /* ... nothing outside the root became writable ... */
    ck_assert(!may(&w, "file-write-data", "/etc/passwd"));
    ck_assert(!may(&w, "file-write-data", "/"));
    ck_assert(may(&w, "file-write-data", "/w/ordinary"));
    ck_assert(may(&w, "file-read-data", "/w/ordinary"));
    /* ... and the profile has the same rules as with plain names. */
    struct world plain;
    world_chat(&plain);
    fx_policy_clear(&plain.p);
    plain.p.home = strdup(HOME);
    fx_paths_add(&plain.p.writable_roots, "/w", NULL);
    fx_paths_add(&plain.p.deny_write, "/w/plain", NULL);
    fx_paths_add(&plain.p.deny_read, "/w/plain", NULL);
    gen(&plain);
    ck_assert_uint_eq(rules_nasty, plain.prof.n_rules);
    world_free(&plain);
    world_free(&w);
}
END_TEST

START_TEST(regex_metachars_are_literal)
{
    struct world w;
    world_chat(&w);
    fx_policy_clear(&w.p);
    w.p.home = strdup(HOME);
    fx_paths_add(&w.p.writable_roots, "/w", NULL);
    /* globs whose literal parts hold regex metacharacters */
    fx_paths_add(&w.p.deny_write, "/w/a.b(c)/*.x+y", NULL);
    strv_push(&w.p.deny_write_globs, "[id].*");
    strv_push(&w.p.deny_write_globs, "a\"b?");
    strv_push(&w.p.deny_write_globs, "^x$|y");
    gen(&w);
    ck_assert(!may(&w, "file-write-data", "/w/a.b(c)/k.x+y"));
    ck_assert(may(&w, "file-write-data", "/w/aXb(c)/k.x+y"));
    ck_assert(may(&w, "file-write-data", "/w/a.bc/k.x+y"));
    ck_assert(may(&w, "file-write-data", "/w/a.b(c)/k.xxy"));
    ck_assert(!may(&w, "file-write-create", "/w/q/[id].json"));
    ck_assert(may(&w, "file-write-create", "/w/q/i.json"));
    ck_assert(may(&w, "file-write-create", "/w/q/[id]xjson"));
    ck_assert(!may(&w, "file-write-create", "/w/a\"bc"));
    ck_assert(may(&w, "file-write-create", "/w/abc"));
    ck_assert(!may(&w, "file-write-create", "/w/^x$|y"));
    ck_assert(may(&w, "file-write-create", "/w/x"));
    ck_assert(may(&w, "file-write-create", "/w/y"));
    world_free(&w);
}
END_TEST

START_TEST(control_bytes_refused)
{
    struct world w;
    world_chat(&w);
    fx_paths_add(&w.p.deny_read, "/Users/dev/bell\x07", NULL);
    char err[256] = "", *out = (char *)1;
    int rc = seatbelt_profile_generate(&w.p, &w.o, &out, err, sizeof(err));
    ck_assert_int_eq(rc, CCSB_E_POLICY);
    ck_assert_ptr_null(out);
    ck_assert_msg(strstr(err, "denyRead") && strstr(err, "0x07"), "%s", err);
    world_free(&w);

    world_chat(&w);
    strv_push(&w.p.deny_write_globs, "x\x1b[0m");
    rc = seatbelt_profile_generate(&w.p, &w.o, &out, err, sizeof(err));
    ck_assert_int_eq(rc, CCSB_E_POLICY);
    ck_assert_msg(strstr(err, "denyWriteGlobs[2]"), "%s", err);
    world_free(&w);
}
END_TEST

START_TEST(bad_paths_refused)
{
    const char *bad[] = {"relative/path", "/a/../b", "/a/./b", "", "/a/.."};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        struct world w;
        world_chat(&w);
        fx_paths_add(&w.p.deny_write, bad[i], NULL);
        char err[256] = "", *out = NULL;
        int rc = seatbelt_profile_generate(&w.p, &w.o, &out, err, sizeof(err));
        ck_assert_msg(rc == CCSB_E_POLICY, "%s: %d", bad[i], rc);
        ck_assert_msg(strstr(err, "protectedPaths[4]"), "%s", err);
        ck_assert_ptr_null(out);
        world_free(&w);
    }
    struct world w;
    world_chat(&w);
    strv_push(&w.p.deny_write_globs, "");
    char err[256] = "", *out = NULL;
    ck_assert_int_eq(seatbelt_profile_generate(&w.p, &w.o, &out, err, sizeof(err)), CCSB_E_POLICY);
    ck_assert_msg(strstr(err, "denyWriteGlobs[2]: empty"), "%s", err);
    world_free(&w);
}
END_TEST

START_TEST(slashes_normalized)
{
    struct world w;
    world_chat(&w);
    fx_paths_add(&w.p.deny_read, "//Users//dev/.netrc/", NULL);
    gen(&w);
    ck_assert_uint_eq(sbpl_count_filter(&w.prof, 0, "file-read*", "subpath", "/Users/dev/.netrc"), 1);
    world_free(&w);
}
END_TEST

START_TEST(long_paths_split)
{
    struct world w;
    world_chat(&w);
    char path[1800];
    strcpy(path, "/Users/dev/proj/");
    size_t n = strlen(path);
    while (n < sizeof(path) - 40) {
        memcpy(path + n, "abcdefghi\"/", 11); /* a quote in every piece */
        n += 11;
    }
    strcpy(path + n, "end");
    fx_paths_add(&w.p.deny_write, path, NULL);
    gen(&w); /* the checker refuses any token > 1024 bytes */
    ck_assert_ptr_nonnull(strstr(w.text, "(string-append "));
    ck_assert(!may(&w, "file-write-data", path));
    char below[1900];
    snprintf(below, sizeof(below), "%s/x", path);
    ck_assert(!may(&w, "file-write-data", below));
    world_free(&w);

    world_chat(&w);
    char huge[9000];
    memset(huge, 'a', sizeof(huge) - 1);
    huge[0] = '/';
    huge[sizeof(huge) - 1] = '\0';
    fx_paths_add(&w.p.deny_read, huge, NULL);
    char err[256] = "", *out = NULL;
    ck_assert_int_eq(seatbelt_profile_generate(&w.p, &w.o, &out, err, sizeof(err)), CCSB_E_POLICY);
    ck_assert_msg(strstr(err, "bytes long"), "%s", err);
    world_free(&w);
}
END_TEST

/* ------------------------------------------------------------------ */
/* Presets, options, policy check                                       */
/* ------------------------------------------------------------------ */

START_TEST(terminal_preset)
{
    struct world w;
    world_chat(&w);
    w.o.preset = SEATBELT_PRESET_TERMINAL;
    w.o.workdir = "/tmp/wd";
    gen(&w);
    ck_assert(may(&w, "file-write-data", HOME "/notes.txt"));
    ck_assert(may(&w, "file-write-data", "/private/tmp/wd/a"));
    ck_assert(may(&w, "file-write-data", TMPD "/x"));
    ck_assert(!may(&w, "file-write-data", "/opt/homebrew/bin/x"));
    ck_assert(!may(&w, "file-read-data", HOME "/.ssh/id_rsa"));
    ck_assert(!may(&w, "file-write-unlink", HOME "/.ssh"));
    ck_assert(!may(&w, "file-write-unlink", HOME));
    /* the terminal keeps its network and its own tools */
    struct sbpl_req r = {.op = "network-outbound", .remote = "localhost:5432"};
    ck_assert(may_req(&w, &r));
    struct sbpl_req u = {.op = "network-outbound", .unix_socket = "/private/var/run/docker.sock"};
    ck_assert(may_req(&w, &u));
    ck_assert(may(&w, "process-exec", HOME "/bin/tool"));
    /* the session-only rules are absent */
    ck_assert(may(&w, "file-write-data", PROJ "/.git/hooks/pre-commit"));
    ck_assert_ptr_null(strstr(w.text, "process-exec"));
    world_free(&w);
}
END_TEST

START_TEST(bad_opts)
{
    struct world w;
    world_chat(&w);
    char err[256], *out = NULL;
    ck_assert_int_eq(seatbelt_profile_generate(NULL, &w.o, &out, err, sizeof(err)), CCSB_E_INVAL);
    ck_assert_int_eq(seatbelt_profile_generate(&w.p, NULL, &out, err, sizeof(err)), CCSB_E_INVAL);
    ck_assert_int_eq(seatbelt_profile_generate(&w.p, &w.o, NULL, err, sizeof(err)), CCSB_E_INVAL);
    w.o.preset = 9;
    ck_assert_int_eq(seatbelt_profile_generate(&w.p, &w.o, &out, err, sizeof(err)), CCSB_E_INVAL);
    ck_assert_msg(strstr(err, "opts.preset"), "%s", err);
    w.o.preset = SEATBELT_PRESET_TERMINAL;
    ck_assert_int_eq(seatbelt_profile_generate(&w.p, &w.o, &out, err, sizeof(err)), CCSB_E_INVAL);
    ck_assert_msg(strstr(err, "opts.workdir"), "%s", err);
    w.o.workdir = "/x";
    free(w.p.home);
    w.p.home = NULL;
    ck_assert_int_eq(seatbelt_profile_generate(&w.p, &w.o, &out, err, sizeof(err)), CCSB_E_INVAL);
    ck_assert_msg(strstr(err, "home"), "%s", err);
    ck_assert_ptr_null(out);
    world_free(&w);
}
END_TEST

START_TEST(policy_check_remap)
{
    struct ccsb_policy p = {0};
    struct policy_mount m[2] = {
        {.host = "/Users/dev/proj", .guest = "/Users/dev/proj", .writable = 1},
        {.host = "/Users/dev/data", .guest = "/data"},
    };
    p.mounts = m;
    p.n_mounts = 1;
    char err[256] = "";
    ck_assert_int_eq(seatbelt_policy_check(&p, err, sizeof(err)), 0);
    p.n_mounts = 2;
    ck_assert_int_eq(seatbelt_policy_check(&p, err, sizeof(err)), CCSB_E_POLICY);
    ck_assert_msg(strstr(err, "/data") && strstr(err, "bindMounts"), "%s", err);
}
END_TEST

START_TEST(empty_policy_minimal_profile)
{
    /* Nothing writable, nothing denied: writes limited to devices, no
     * empty (match-everything) rule anywhere. */
    struct world w;
    world_chat(&w);
    fx_policy_clear(&w.p);
    gen(&w);
    ck_assert(!may(&w, "file-write-data", "/Users/dev/x"));
    ck_assert(may(&w, "file-read-data", "/Users/dev/x"));
    ck_assert(may(&w, "process-exec", "/Users/dev/x"));
    ck_assert(!may(&w, "process-exec", "/usr/bin/osascript"));
    world_free(&w);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("seatbelt-profile");
    TCase *t = tcase_create("semantics");
    tcase_add_test(t, reads_secret_set);
    tcase_add_test(t, writes_only_in_roots);
    tcase_add_test(t, protected_inside_writable_root);
    tcase_add_test(t, no_rename_of_ancestors);
    tcase_add_test(t, no_second_name_for_denied);
    tcase_add_test(t, deny_write_globs_final_component);
    tcase_add_test(t, exec_rules);
    tcase_add_test(t, grant_cannot_reopen_dangerous);
    tcase_add_test(t, network_only_proxies_and_dns);
    tcase_add_test(t, unix_sockets_listed_only);
    tcase_add_test(t, network_disabled_same_rules);
    tcase_add_test(t, ports_unassigned);
    tcase_add_test(t, same_port_once);
    tcase_add_test(t, hardening);
    tcase_add_test(t, every_deny_is_tagged);
    tcase_add_test(t, message_tag_escaping);
    tcase_add_test(t, empty_policy_minimal_profile);
    suite_add_tcase(s, t);
    TCase *r = tcase_create("spellings");
    tcase_add_test(r, symlinked_tmp_both_spellings);
    tcase_add_test(r, glob_prefix_resolved);
    tcase_add_test(r, policy_glob_resolved_used);
    tcase_add_test(r, fake_resolver_semantics);
    tcase_add_test(r, unresolvable_kept_as_written);
    tcase_add_test(r, symlink_chain_via_home);
    tcase_add_test(r, macos_default_resolver);
    tcase_add_test(r, real_resolver_when_none_given);
    suite_add_tcase(s, r);
    TCase *e = tcase_create("escaping");
    tcase_add_test(e, nasty_paths_cannot_inject);
    tcase_add_test(e, regex_metachars_are_literal);
    tcase_add_test(e, control_bytes_refused);
    tcase_add_test(e, bad_paths_refused);
    tcase_add_test(e, slashes_normalized);
    tcase_add_test(e, long_paths_split);
    suite_add_tcase(s, e);
    TCase *o = tcase_create("options");
    tcase_add_test(o, terminal_preset);
    tcase_add_test(o, bad_opts);
    tcase_add_test(o, policy_check_remap);
    suite_add_tcase(s, o);
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
