/*
 * policy_build: modes, both spellings, the mandatory sets, worktrees, globs,
 * "~" expansion and every policy error. A fake resolver stands in for the
 * host where the test needs a layout this machine does not have (macOS's
 * /tmp -> /private/tmp); temp dirs are used where the real file system's
 * behaviour is the point (dangling symlinks, git worktrees, FIFOs).
 */
#include <check.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ccsandbox/ccsandbox.h"
#include "policy/lists.h"
#include "policy/policy.h"
#include "spec/spec.h"

/* ---------- a fake host ---------- */

struct fake {
    const char *const *existing; /* paths that exist (NULL-terminated) */
    const char *const *dirs;     /* of those, the directories */
    const char *const (*links)[2]; /* {from, to} prefix rewrites, {NULL} ends */
};

static int within(const char *path, const char *p)
{
    size_t n = strlen(p);
    return strncmp(path, p, n) == 0 && (path[n] == '\0' || path[n] == '/');
}

static int listed(const char *const *list, const char *path)
{
    for (size_t i = 0; list && list[i]; i++)
        if (strcmp(list[i], path) == 0)
            return 1;
    return 0;
}

static char *fake_resolve(const char *path, void *ud)
{
    const struct fake *f = ud;
    if (strcmp(path, "/") != 0 && !listed(f->existing, path))
        return NULL;
    for (size_t i = 0; f->links && f->links[i][0]; i++) {
        if (within(path, f->links[i][0])) {
            char *out = NULL;
            ck_assert_int_ge(asprintf(&out, "%s%s", f->links[i][1],
                                      path + strlen(f->links[i][0])), 0);
            return out;
        }
    }
    return strdup(path);
}

static int fake_kind(const char *path, void *ud)
{
    const struct fake *f = ud;
    if (listed(f->existing, path))
        return listed(f->dirs, path) ? 1 : 0;
    /* Called with the resolved spelling; undo the rewrite to look it up. */
    for (size_t i = 0; f->links && f->links[i][0]; i++) {
        if (within(path, f->links[i][1])) {
            char buf[512];
            snprintf(buf, sizeof buf, "%s%s", f->links[i][0], path + strlen(f->links[i][1]));
            return listed(f->dirs, buf) ? 1 : listed(f->existing, buf) ? 0 : -1;
        }
    }
    return listed(f->dirs, path) ? 1 : listed(f->existing, path) ? 0 : -1;
}

static const char *const links_default[][2] = {
    {"/tmp", "/private/tmp"},
    {"/home/u/procfs", "/proc/self"},
    {"/data/sshlink", "/home/u/.ssh"},
    {NULL, NULL},
};

static const char *const existing_default[] = {
    "/tmp", "/tmp/w", "/tmp/w/src", "/home", "/home/u", "/home/u/proj", "/home/u/.ssh",
    "/home/u/.npm", "/home/u/procfs", "/data", "/data/ro", "/opt", "/opt/tools",
    "/tmp/w/.vscode", "/tmp/sess", "/data/sshlink", "/data/file.txt", NULL,
};
static const char *const dirs_default[] = {
    "/tmp", "/tmp/w", "/tmp/w/src", "/home", "/home/u", "/home/u/proj", "/home/u/.ssh",
    "/home/u/.npm", "/data", "/data/ro", "/opt", "/opt/tools", "/tmp/w/.vscode",
    "/tmp/sess", NULL,
};

static struct fake fake_default = {existing_default, dirs_default, links_default};

static struct policy_host fake_host(const char *home)
{
    return (struct policy_host){
        .home = home, .session_tmp = NULL, .resolve = fake_resolve,
        .resolve_userdata = &fake_default, .kind = fake_kind,
    };
}

/* ---------- helpers ---------- */

static const struct policy_path *find(const struct policy_paths *set, const char *path)
{
    for (size_t i = 0; i < set->n; i++)
        if (strcmp(set->v[i].path, path) == 0)
            return &set->v[i];
    return NULL;
}

static const struct policy_path *must_find(const struct policy_paths *set, const char *path)
{
    const struct policy_path *p = find(set, path);
    ck_assert_msg(p != NULL, "missing %s", path);
    return p;
}

static struct ccsb_policy *build_ok(const struct ccsb_spec *s, const struct policy_host *h)
{
    struct ccsb_policy *p = NULL;
    char err[512] = "";
    int r = policy_build(s, h, &p, err, sizeof err);
    ck_assert_msg(r == 0, "policy_build: %d %s", r, err);
    ck_assert_ptr_nonnull(p);
    return p;
}

static void build_fails(const struct ccsb_spec *s, const struct policy_host *h, int code,
                        const char *msg)
{
    struct ccsb_policy *p = (struct ccsb_policy *)0x1;
    char err[512] = "";
    ck_assert_int_eq(policy_build(s, h, &p, err, sizeof err), code);
    ck_assert_str_eq(err, msg);
    ck_assert_ptr_eq(p, (struct ccsb_policy *)0x1);
}

static struct ccsb_spec *new_spec(void)
{
    struct ccsb_spec *s = spec_new();
    ck_assert_ptr_nonnull(s);
    return s;
}

/* ---------- modes ---------- */

static void check_mode(int mode, int bind_writable)
{
    struct ccsb_spec *s = new_spec();
    s->mode = mode;
    ck_assert_int_eq(spec_add_bind(s, "/tmp/w", "/work", 0), 0);
    ck_assert_int_eq(spec_add_bind(s, "/data/ro", NULL, 1), 0);
    ck_assert_int_eq(spec_add_path(&s->runner_state_dirs, "~/.npm"), 0);
    struct policy_host h = fake_host("/home/u");
    struct ccsb_policy *p = build_ok(s, &h);
    ck_assert_int_eq(p->mode, mode);
    ck_assert_uint_eq(p->n_mounts, 3);
    ck_assert_str_eq(p->mounts[0].host, "/tmp/w");
    ck_assert_str_eq(p->mounts[0].guest, "/work");
    ck_assert_int_eq(p->mounts[0].writable, bind_writable);
    ck_assert_int_eq(p->mounts[0].kind, bind_writable ? POLICY_ROOT_BIND : 0);
    ck_assert_str_eq(p->mounts[1].host, "/data/ro");
    ck_assert_str_eq(p->mounts[1].guest, "/data/ro");
    ck_assert_int_eq(p->mounts[1].writable, 0);
    ck_assert_int_eq(p->mounts[1].kind, 0);
    /* runnerStateDirs: writable in every mode. */
    ck_assert_str_eq(p->mounts[2].host, "/home/u/.npm");
    ck_assert_str_eq(p->mounts[2].guest, "/home/u/.npm");
    ck_assert_int_eq(p->mounts[2].writable, 1);
    ck_assert_int_eq(p->mounts[2].kind, POLICY_ROOT_RUNNER_STATE);
    ck_assert_int_eq(p->mounts[2].exists, 1);
    /* Writable roots follow the mounts, both spellings. */
    const struct policy_path *w = find(&p->writable_roots, "/tmp/w");
    if (bind_writable) {
        ck_assert_ptr_nonnull(w);
        ck_assert_str_eq(w->resolved, "/private/tmp/w");
        ck_assert_int_eq(w->exists, 1);
        ck_assert_int_eq(w->is_dir, 1);
        must_find(&p->deny_write, "/tmp/w/.bashrc");
    } else {
        ck_assert_ptr_null(w);
        /* Nothing to protect inside a read-only mount. */
        ck_assert_ptr_null(find(&p->deny_write, "/tmp/w/.bashrc"));
    }
    ck_assert_ptr_null(find(&p->writable_roots, "/data/ro"));
    must_find(&p->writable_roots, "/home/u/.npm");
    must_find(&p->deny_write, "/home/u/.npm/.bashrc");
    ck_assert_uint_eq(p->writable_roots.n, bind_writable ? 2 : 1);
    policy_free(p);
    spec_free(s);
}

START_TEST(mode_chat) { check_mode(CCSB_MODE_CHAT, 1); }
END_TEST
START_TEST(mode_review) { check_mode(CCSB_MODE_REVIEW, 0); }
END_TEST
START_TEST(mode_plan) { check_mode(CCSB_MODE_PLAN, 0); }
END_TEST
START_TEST(mode_orchestrate) { check_mode(CCSB_MODE_ORCHESTRATE, 0); }
END_TEST

/* ---------- mandatory deny-write set ---------- */

START_TEST(mandatory_set_whether_or_not_present)
{
    struct ccsb_spec *s = new_spec();
    ck_assert_int_eq(spec_add_bind(s, "/tmp/w", NULL, 0), 0);
    struct policy_host h = fake_host("/home/u");
    struct ccsb_policy *p = build_ok(s, &h);
    for (const struct policy_entry *e = policy_deny_write_root; e->path; e++) {
        char path[256];
        snprintf(path, sizeof path, "/tmp/w/%s", e->path);
        const struct policy_path *d = must_find(&p->deny_write, path);
        /* Missing ones keep the resolved spelling of their existing root. */
        char resolved[256];
        snprintf(resolved, sizeof resolved, "/private/tmp/w/%s", e->path);
        ck_assert_str_eq(d->resolved, resolved);
        ck_assert_int_eq(d->is_glob, 0);
    }
    /* .vscode exists in the fake (a directory); .bashrc does not. */
    const struct policy_path *v = must_find(&p->deny_write, "/tmp/w/.vscode");
    ck_assert_int_eq(v->exists, 1);
    ck_assert_int_eq(v->is_dir, 1);
    const struct policy_path *b = must_find(&p->deny_write, "/tmp/w/.bashrc");
    ck_assert_int_eq(b->exists, 0);
    ck_assert_int_eq(b->is_dir, 0);
    /* The repository at the root, even though there is none yet. */
    const char *git[] = {"/tmp/w/.git/hooks", "/tmp/w/.git/config", "/tmp/w/.git/config.worktree",
                         "/tmp/w/.git/modules", "/tmp/w/.git/commondir"};
    for (size_t i = 0; i < sizeof git / sizeof git[0]; i++) {
        const struct policy_path *g = must_find(&p->deny_write, git[i]);
        ck_assert_int_eq(g->exists, 0);
        ck_assert_ptr_nonnull(g->resolved);
    }
    /* Per-worktree config is off (the repository does not even exist):
     * no glob, so nothing needs create-time enforcement. */
    ck_assert_ptr_null(find(&p->deny_write, "/tmp/w/.git/worktrees/*/config.worktree"));
    /* Not inside a subdirectory: only at the root. */
    ck_assert_ptr_null(find(&p->deny_write, "/tmp/w/src/.vscode"));
    policy_free(p);
    spec_free(s);
}
END_TEST

START_TEST(allow_git_config)
{
    struct ccsb_spec *s = new_spec();
    ck_assert_int_eq(spec_add_bind(s, "/tmp/w", NULL, 0), 0);
    s->allow_git_config = 1;
    struct policy_host h = fake_host("/home/u");
    struct ccsb_policy *p = build_ok(s, &h);
    ck_assert_int_eq(p->allow_git_config, 1);
    ck_assert_ptr_null(find(&p->deny_write, "/tmp/w/.git/config"));
    ck_assert_ptr_null(find(&p->deny_write, "/tmp/w/.git/config.worktree"));
    ck_assert_ptr_null(find(&p->deny_write, "/tmp/w/.git/worktrees/*/config.worktree"));
    /* Hooks stay locked whatever the config setting. */
    must_find(&p->deny_write, "/tmp/w/.git/hooks");
    must_find(&p->deny_write, "/tmp/w/.gitconfig");
    policy_free(p);
    spec_free(s);
}
END_TEST

START_TEST(protected_paths_and_globs)
{
    struct ccsb_spec *s = new_spec();
    ck_assert_int_eq(spec_add_bind(s, "/tmp/w", NULL, 0), 0);
    ck_assert_int_eq(spec_add_path(&s->protected_paths, "/tmp/w/src"), 0);
    ck_assert_int_eq(spec_add_path(&s->protected_paths, "/tmp/w/*.key"), 0);
    ck_assert_int_eq(spec_add_path(&s->protected_paths, "/tmp/w/missing/sub?/x"), 0);
    ck_assert_int_eq(spec_add_path(&s->protected_paths, "~/notes"), 0);
    ck_assert_int_eq(spec_add_path(&s->deny_write_globs, ".env"), 0);
    ck_assert_int_eq(spec_add_path(&s->deny_write_globs, "*.pem"), 0);
    struct policy_host h = fake_host("/home/u");
    struct ccsb_policy *p = build_ok(s, &h);
    const struct policy_path *d = must_find(&p->deny_write, "/tmp/w/src");
    ck_assert_str_eq(d->resolved, "/private/tmp/w/src");
    ck_assert_int_eq(d->is_glob, 0);
    ck_assert_int_eq(d->exists, 1);
    ck_assert_int_eq(d->is_dir, 1);
    const struct policy_path *g = must_find(&p->deny_write, "/tmp/w/*.key");
    ck_assert_int_eq(g->is_glob, 1);
    ck_assert_int_eq(g->exists, 0);
    ck_assert_str_eq(g->resolved, "/private/tmp/w/*.key");
    g = must_find(&p->deny_write, "/tmp/w/missing/sub?/x");
    ck_assert_int_eq(g->is_glob, 1);
    ck_assert_str_eq(g->resolved, "/private/tmp/w/missing/sub?/x");
    d = must_find(&p->deny_write, "/home/u/notes");
    ck_assert_ptr_null(d->resolved); /* same spelling */
    ck_assert_int_eq(d->exists, 0);
    ck_assert_uint_eq(p->deny_write_globs.n, 2);
    ck_assert_str_eq(p->deny_write_globs.v[0], ".env");
    ck_assert_str_eq(p->deny_write_globs.v[1], "*.pem");
    /* Protected paths come first and are not duplicated by the mandatory set. */
    ck_assert_str_eq(p->deny_write.v[0].path, "/tmp/w/src");
    size_t bashrc = 0;
    for (size_t i = 0; i < p->deny_write.n; i++)
        bashrc += strcmp(p->deny_write.v[i].path, "/tmp/w/.bashrc") == 0;
    ck_assert_uint_eq(bashrc, 1);
    policy_free(p);
    spec_free(s);
}
END_TEST

/* ---------- read-denied set ---------- */

START_TEST(secrets)
{
    struct ccsb_spec *s = new_spec();
    ck_assert_int_eq(spec_add_path(&s->deny_read, "~/private"), 0);
    ck_assert_int_eq(spec_add_path(&s->deny_read, "/tmp/w/*.secret"), 0);
    struct policy_host h = fake_host("/home/u");
    struct ccsb_policy *p = build_ok(s, &h);
    for (const struct policy_entry *e = policy_secret_home; e->path; e++) {
        char path[256];
        snprintf(path, sizeof path, "/home/u/%s", e->path);
        const struct policy_path *d = must_find(&p->deny_read, path);
        ck_assert_int_eq(d->is_glob, strpbrk(e->path, "*?") != NULL);
    }
    for (const struct policy_entry *e = policy_secret_system; e->path; e++)
        must_find(&p->deny_read, e->path);
    const struct policy_path *ssh = must_find(&p->deny_read, "/home/u/.ssh");
    ck_assert_int_eq(ssh->exists, 1);
    ck_assert_int_eq(ssh->is_dir, 1);
    ck_assert_int_eq(must_find(&p->deny_read, "/home/u/.cargo/credentials*")->is_glob, 1);
    must_find(&p->deny_read, "/home/u/private");
    const struct policy_path *g = must_find(&p->deny_read, "/tmp/w/*.secret");
    ck_assert_str_eq(g->resolved, "/private/tmp/w/*.secret");
    policy_free(p);
    spec_free(s);
}
END_TEST

START_TEST(no_home)
{
    struct ccsb_spec *s = new_spec();
    ck_assert_int_eq(spec_add_bind(s, "/tmp/w", NULL, 0), 0);
    struct policy_host h = fake_host(NULL);
    struct ccsb_policy *p = build_ok(s, &h);
    ck_assert_ptr_null(p->home);
    /* No home: only the system secrets. */
    size_t n = 0;
    for (const struct policy_entry *e = policy_secret_system; e->path; e++)
        n++;
    ck_assert_uint_eq(p->deny_read.n, n);
    policy_free(p);
    /* And "~" cannot mean anything. */
    ck_assert_int_eq(spec_add_path(&s->runner_state_dirs, "~/.npm"), 0);
    build_fails(s, &h, CCSB_E_POLICY,
                "runnerStateDirs[0]: uses ~ but the host has no home directory");
    spec_free(s);
}
END_TEST

/* ---------- ~ expansion ---------- */

START_TEST(home_expansion)
{
    struct ccsb_spec *s = new_spec();
    ck_assert_int_eq(spec_add_bind(s, "~/proj", NULL, 0), 0);
    ck_assert_int_eq(spec_add_bind(s, "/data/ro", "~/data", 1), 0);
    ck_assert_int_eq(spec_add_path(&s->exec_grant_roots, "~"), 0);
    ck_assert_int_eq(spec_add_path(&s->exec_grant_roots, "/opt/tools"), 0);
    ck_assert_int_eq(spec_set_env(s, "A", "1"), 0);
    struct policy_host h = fake_host("/home/u/"); /* trailing slash folded */
    struct ccsb_policy *p = build_ok(s, &h);
    ck_assert_str_eq(p->home, "/home/u");
    ck_assert_str_eq(p->mounts[0].host, "/home/u/proj");
    ck_assert_str_eq(p->mounts[0].guest, "/home/u/proj");
    ck_assert_str_eq(p->mounts[1].guest, "/home/u/data");
    /* No guestWorkdir: the first bind's guest path, expanded. */
    ck_assert_str_eq(p->guest_workdir, "/home/u/proj");
    ck_assert_uint_eq(p->exec_grant_roots.n, 2);
    ck_assert_str_eq(p->exec_grant_roots.v[0].path, "/home/u");
    ck_assert_str_eq(p->exec_grant_roots.v[1].path, "/opt/tools");
    must_find(&p->deny_write, "/home/u/proj/.zshrc");
    policy_free(p);
    spec_free(s);
}
END_TEST

START_TEST(workdir_default_and_explicit)
{
    struct ccsb_spec *s = new_spec();
    struct policy_host h = fake_host("/home/u");
    struct ccsb_policy *p = build_ok(s, &h);
    ck_assert_str_eq(p->guest_workdir, "/tmp");
    ck_assert_uint_eq(p->n_mounts, 0);
    ck_assert_uint_eq(p->writable_roots.n, 0);
    policy_free(p);
    ck_assert_int_eq(spec_set_string(&s->guest_workdir, "~/w", 1), 0);
    p = build_ok(s, &h);
    ck_assert_str_eq(p->guest_workdir, "/home/u/w");
    policy_free(p);
    spec_free(s);
}
END_TEST

/* ---------- errors ---------- */

START_TEST(errors)
{
    struct policy_host h = fake_host("/home/u");
    struct ccsb_spec *s = new_spec();
    ck_assert_int_eq(spec_add_bind(s, "/nowhere/x", NULL, 0), 0);
    build_fails(s, &h, CCSB_E_POLICY,
                "bindMounts[0].hostPath: /nowhere/x does not exist or cannot be resolved");
    spec_free(s);

    s = new_spec();
    ck_assert_int_eq(spec_add_bind(s, "~/procfs", "/p", 1), 0);
    build_fails(s, &h, CCSB_E_POLICY,
                "bindMounts[0].hostPath: /home/u/procfs resolves to /proc/self, which must "
                "not be /, /proc, /dev, /sys or inside them");
    spec_free(s);

    /* Two guest paths that only collide once "~" is expanded. */
    s = new_spec();
    ck_assert_int_eq(spec_add_bind(s, "/tmp/w", "~/x", 0), 0);
    ck_assert_int_eq(spec_add_bind(s, "/data/ro", "/home/u/x", 1), 0);
    build_fails(s, &h, CCSB_E_POLICY,
                "bindMounts[1].guestPath: /home/u/x is also bindMounts[0].guestPath");
    spec_free(s);

    /* A home of "/" turns "~" into "/". */
    struct policy_host root_home = fake_host("/");
    s = new_spec();
    ck_assert_int_eq(spec_add_bind(s, "~", "/w", 0), 0);
    build_fails(s, &root_home, CCSB_E_POLICY,
                "bindMounts[0].hostPath: / must not be /, /proc, /dev, /sys or inside them");
    spec_free(s);
    s = new_spec();
    ck_assert_int_eq(spec_add_bind(s, "/tmp/w", "~", 0), 0);
    build_fails(s, &root_home, CCSB_E_POLICY,
                "bindMounts[0].guestPath: / must not be /, /proc, /dev, /sys or inside them");
    spec_free(s);
    s = new_spec();
    ck_assert_int_eq(spec_add_path(&s->exec_grant_roots, "~"), 0);
    build_fails(s, &root_home, CCSB_E_POLICY, "execGrantRoots[0]: ~ must not be /");
    spec_free(s);

    struct policy_host rel_home = fake_host("home/u");
    s = new_spec();
    build_fails(s, &rel_home, CCSB_E_POLICY, "home: home/u is not an absolute path");
    spec_free(s);

    /* An invalid spec is refused before anything is resolved. */
    s = new_spec();
    ck_assert_int_eq(spec_add_bind(s, "relative", NULL, 0), 0);
    build_fails(s, &h, CCSB_E_SPEC, "bindMounts[0].hostPath: not an absolute path");
    spec_free(s);

    char err[64];
    struct ccsb_policy *p = NULL;
    ck_assert_int_eq(policy_build(NULL, &h, &p, err, sizeof err), CCSB_E_INVAL);
}
END_TEST

START_TEST(mount_inside_secret_refused)
{
    struct policy_host h = fake_host("/home/u");
    struct ccsb_spec *s = new_spec();
    ck_assert_int_eq(spec_add_path(&s->runner_state_dirs, "~/.ssh"), 0);
    build_fails(s, &h, CCSB_E_POLICY,
                "runnerStateDirs[0]: /home/u/.ssh is inside the read-denied path /home/u/.ssh");
    spec_free(s);
    s = new_spec();
    ck_assert_int_eq(spec_add_path(&s->runner_state_dirs, "~/.aws/cli/cache"), 0);
    build_fails(s, &h, CCSB_E_POLICY,
                "runnerStateDirs[0]: /home/u/.aws/cli/cache is inside the read-denied path "
                "/home/u/.aws");
    spec_free(s);
    /* Read-only does not make it right, and a symlink does not hide it. */
    s = new_spec();
    ck_assert_int_eq(spec_add_bind(s, "/data/sshlink", "/keys", 1), 0);
    build_fails(s, &h, CCSB_E_POLICY,
                "bindMounts[0].hostPath: /data/sshlink is inside the read-denied path "
                "/home/u/.ssh");
    spec_free(s);
    /* The spec's own denyRead counts too. */
    s = new_spec();
    ck_assert_int_eq(spec_add_bind(s, "/data/ro", NULL, 1), 0);
    ck_assert_int_eq(spec_add_path(&s->deny_read, "/data"), 0);
    build_fails(s, &h, CCSB_E_POLICY,
                "bindMounts[0].hostPath: /data/ro is inside the read-denied path /data");
    spec_free(s);
    /* A parent of a secret is fine: the secret is masked inside it. */
    s = new_spec();
    ck_assert_int_eq(spec_add_bind(s, "~", NULL, 0), 0);
    struct ccsb_policy *p = build_ok(s, &h);
    must_find(&p->deny_read, "/home/u/.ssh");
    must_find(&p->deny_write, "/home/u/.ssh");
    policy_free(p);
    spec_free(s);
}
END_TEST

START_TEST(bound_file_has_no_inside)
{
    struct policy_host h = fake_host("/home/u");
    struct ccsb_spec *s = new_spec();
    ck_assert_int_eq(spec_add_bind(s, "/data/file.txt", "/w/file.txt", 0), 0);
    struct ccsb_policy *p = build_ok(s, &h);
    ck_assert_int_eq(p->mounts[0].writable, 1);
    ck_assert_ptr_null(find(&p->deny_write, "/data/file.txt/.bashrc"));
    ck_assert_ptr_null(find(&p->deny_write, "/data/file.txt/.git/hooks"));
    ck_assert_uint_eq(p->deny_write.n, 0);
    policy_free(p);
    spec_free(s);
}
END_TEST

/* ---------- env ---------- */

START_TEST(environment)
{
    struct ccsb_spec *s = new_spec();
    ck_assert_int_eq(spec_set_env(s, "FOO", "bar"), 0);
    ck_assert_int_eq(spec_set_env(s, "PYTHONPATH", "/w/lib"), 0);
    struct policy_host h = fake_host("/home/u");
    struct ccsb_policy *p = build_ok(s, &h);
    ck_assert(strv_contains(&p->env_unset, "LD_PRELOAD"));
    ck_assert(strv_contains(&p->env_unset, "NODE_OPTIONS"));
    ck_assert(strv_contains(&p->env_unset, "DYLD_*"));
    ck_assert_int_eq(policy_env_unsets(p, "LD_PRELOAD"), 1);
    ck_assert_int_eq(policy_env_unsets(p, "LD_ANYTHING"), 1);
    ck_assert_int_eq(policy_env_unsets(p, "DYLD_INSERT_LIBRARIES"), 1);
    ck_assert_int_eq(policy_env_unsets(p, "BASH_FUNC_x%%"), 1);
    ck_assert_int_eq(policy_env_unsets(p, "GIT_CONFIG_KEY_0"), 1);
    ck_assert_int_eq(policy_env_unsets(p, "PATH"), 0);
    ck_assert_int_eq(policy_env_unsets(p, "HOME"), 0);
    ck_assert_int_eq(policy_env_unsets(p, "LD"), 0);
    /* Every name policy_env_is_stripped knows is unset here too. */
    for (size_t i = 0; policy_env_strip[i]; i++)
        ck_assert_int_eq(policy_env_unsets(p, policy_env_strip[i]), 1);
    /* The spec's own variables are set after the strip. */
    ck_assert_uint_eq(p->env_set_names.n, 2);
    ck_assert_str_eq(p->env_set_names.v[1], "PYTHONPATH");
    ck_assert_str_eq(p->env_set_values.v[1], "/w/lib");
    policy_free(p);
    spec_free(s);
}
END_TEST

START_TEST(scalars_and_session_tmp)
{
    struct ccsb_spec *s = new_spec();
    ck_assert_int_eq(spec_add_bind(s, "/tmp/w", NULL, 0), 0);
    s->network_enabled = 0;
    s->timeout_ms = 5000;
    s->memory_max = 1 << 20;
    s->pids_max = 32;
    struct policy_host h = fake_host("/home/u");
    h.session_tmp = "/tmp/sess";
    struct ccsb_policy *p = build_ok(s, &h);
    ck_assert_int_eq(p->network_enabled, 0);
    ck_assert_uint_eq(p->timeout_ms, 5000);
    ck_assert_uint_eq(p->memory_max, 1 << 20);
    ck_assert_uint_eq(p->pids_max, 32);
    ck_assert_str_eq(p->session_tmp, "/tmp/sess");
    const struct policy_path *t = must_find(&p->writable_roots, "/tmp/sess");
    ck_assert_str_eq(t->resolved, "/private/tmp/sess");
    /* The session tmp is deleted at stop: nothing on the host reads it. */
    ck_assert_ptr_null(find(&p->deny_write, "/tmp/sess/.bashrc"));
    policy_free(p);
    spec_free(s);
}
END_TEST

/* ---------- the real file system ---------- */

/* The unchecked fixture (run in the parent) owns the root, so a failing
 * test in its forked child still leaves nothing behind. */
static char tmproot[256];
static char tmpdir[512];

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st, (void)flag, (void)ftw;
    return remove(path);
}

static void mk_root(void)
{
    snprintf(tmproot, sizeof tmproot, "/tmp/ccsb-policy-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(tmproot));
}

static void rm_root(void)
{
    if (tmproot[0])
        nftw(tmproot, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

static void mk_tmp(void)
{
    snprintf(tmpdir, sizeof tmpdir, "%s/t-XXXXXX", tmproot);
    ck_assert_ptr_nonnull(mkdtemp(tmpdir));
    /* Compare against the real spelling whatever /tmp is. */
    char *r = realpath(tmpdir, NULL);
    ck_assert_ptr_nonnull(r);
    snprintf(tmpdir, sizeof tmpdir, "%s", r);
    free(r);
}

static char *tpath(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static char *tpath(const char *fmt, ...)
{
    static char bufs[8][1024];
    static int k;
    char rel[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(rel, sizeof rel, fmt, ap);
    va_end(ap);
    char *b = bufs[k++ % 8];
    snprintf(b, 1024, "%s/%s", tmpdir, rel);
    return b;
}

static void mkdir_t(const char *rel)
{
    ck_assert_int_eq(mkdir(tpath("%s", rel), 0755), 0);
}

static void write_t(const char *rel, const char *content)
{
    FILE *f = fopen(tpath("%s", rel), "w");
    ck_assert_ptr_nonnull(f);
    fputs(content, f);
    ck_assert_int_eq(fclose(f), 0);
}

static const struct policy_host real_host = {.home = "/home/nobody-here"};

START_TEST(dangling_symlink_followed)
{
    mkdir_t("root");
    mkdir_t("elsewhere");
    /* An existing symlink whose target is missing: a write through it would
     * create the target, so the target is the resolved spelling. */
    ck_assert_int_eq(symlink("../elsewhere/vs", tpath("root/.vscode")), 0);
    ck_assert_int_eq(symlink(tpath("elsewhere/loop"), tpath("elsewhere/loop")), 0);
    ck_assert_int_eq(symlink(tpath("elsewhere/loop"), tpath("root/.idea")), 0);
    struct ccsb_spec *s = new_spec();
    ck_assert_int_eq(spec_add_bind(s, tpath("root"), "/w", 0), 0);
    ck_assert_int_eq(spec_add_path(&s->protected_paths, tpath("root/.vscode/sub/x")), 0);
    struct ccsb_policy *p = build_ok(s, &real_host);
    const struct policy_path *d = must_find(&p->deny_write, tpath("root/.vscode"));
    ck_assert_str_eq(d->resolved, tpath("elsewhere/vs"));
    ck_assert_int_eq(d->exists, 0);
    d = must_find(&p->deny_write, tpath("root/.vscode/sub/x"));
    ck_assert_str_eq(d->resolved, tpath("elsewhere/vs/sub/x"));
    /* A symlink loop ends the walk instead of spinning. */
    d = must_find(&p->deny_write, tpath("root/.idea"));
    ck_assert_int_eq(d->exists, 0);
    d = must_find(&p->deny_write, tpath("root/.bashrc"));
    ck_assert_ptr_null(d->resolved);
    policy_free(p);
    spec_free(s);
}
END_TEST

START_TEST(existing_symlink_both_spellings)
{
    mkdir_t("real");
    mkdir_t("real/.claude");
    ck_assert_int_eq(symlink("real", tpath("link")), 0);
    struct ccsb_spec *s = new_spec();
    ck_assert_int_eq(spec_add_bind(s, tpath("link"), "/w", 0), 0);
    struct ccsb_policy *p = build_ok(s, &real_host);
    const struct policy_path *w = must_find(&p->writable_roots, tpath("link"));
    ck_assert_str_eq(w->resolved, tpath("real"));
    ck_assert_int_eq(w->is_dir, 1);
    const struct policy_path *c = must_find(&p->deny_write, tpath("link/.claude"));
    ck_assert_str_eq(c->resolved, tpath("real/.claude"));
    ck_assert_int_eq(c->exists, 1);
    ck_assert_int_eq(c->is_dir, 1);
    c = must_find(&p->deny_write, tpath("link/.mcp.json"));
    ck_assert_str_eq(c->resolved, tpath("real/.mcp.json"));
    ck_assert_int_eq(c->exists, 0);
    policy_free(p);
    spec_free(s);
}
END_TEST

START_TEST(runner_dir_symlink_to_root_refused)
{
    ck_assert_int_eq(symlink("/", tpath("cache")), 0);
    ck_assert_int_eq(symlink("/proc/self", tpath("cache2")), 0);
    struct ccsb_spec *s = new_spec();
    ck_assert_int_eq(spec_add_path(&s->runner_state_dirs, tpath("cache")), 0);
    char msg[600];
    snprintf(msg, sizeof msg,
             "runnerStateDirs[0]: %s resolves to /, which must not be /, /proc, /dev, /sys "
             "or inside them", tpath("cache"));
    build_fails(s, &real_host, CCSB_E_POLICY, msg);
    spec_free(s);
    s = new_spec();
    ck_assert_int_eq(spec_add_bind(s, tpath("cache2"), "/c", 1), 0);
    struct ccsb_policy *p = NULL;
    char err[600];
    ck_assert_int_eq(policy_build(s, &real_host, &p, err, sizeof err), CCSB_E_POLICY);
    ck_assert_ptr_nonnull(strstr(err, "resolves to /proc/"));
    spec_free(s);
    /* Not even when the runner dir does not exist yet. */
    s = new_spec();
    ck_assert_int_eq(spec_add_path(&s->runner_state_dirs, tpath("cache2/later")), 0);
    ck_assert_int_eq(policy_build(s, &real_host, &p, err, sizeof err), CCSB_E_POLICY);
    ck_assert_ptr_nonnull(strstr(err, "resolves to /proc/"));
    spec_free(s);
    /* A missing runner dir is fine: it is created on first use. */
    s = new_spec();
    ck_assert_int_eq(spec_add_path(&s->runner_state_dirs, tpath("not-yet")), 0);
    p = build_ok(s, &real_host);
    ck_assert_int_eq(p->mounts[0].exists, 0);
    ck_assert_int_eq(must_find(&p->writable_roots, tpath("not-yet"))->exists, 0);
    policy_free(p);
    spec_free(s);
}
END_TEST

/* The layout `git worktree add ../wt` makes: main/.git/worktrees/wt. */
static void make_worktree(const char *dotgit_line)
{
    mkdir_t("main");
    mkdir_t("main/.git");
    mkdir_t("main/.git/objects");
    mkdir_t("main/.git/refs");
    mkdir_t("main/.git/hooks");
    write_t("main/.git/HEAD", "ref: refs/heads/main\n");
    write_t("main/.git/config", "[core]\n");
    mkdir_t("main/.git/worktrees");
    mkdir_t("main/.git/worktrees/wt");
    write_t("main/.git/worktrees/wt/commondir", "../..\n");
    char back[512];
    snprintf(back, sizeof back, "%s\n", tpath("wt/.git"));
    write_t("main/.git/worktrees/wt/gitdir", back);
    write_t("main/.git/worktrees/wt/HEAD", "ref: refs/heads/wt\n");
    mkdir_t("wt");
    write_t("wt/.git", dotgit_line);
}

static void check_worktree(int mode)
{
    struct ccsb_spec *s = new_spec();
    s->mode = mode;
    ck_assert_int_eq(spec_add_bind(s, tpath("wt"), NULL, 0), 0);
    struct ccsb_policy *p = build_ok(s, &real_host);
    int w = mode == CCSB_MODE_CHAT;
    /* The common git dir is mounted where git looks for it. */
    ck_assert_uint_eq(p->n_mounts, 2);
    ck_assert_str_eq(p->mounts[1].host, tpath("main/.git"));
    ck_assert_str_eq(p->mounts[1].guest, tpath("main/.git"));
    ck_assert_int_eq(p->mounts[1].writable, w);
    ck_assert_int_eq(p->mounts[1].kind, w ? POLICY_ROOT_GITDIR : 0);
    if (w) {
        must_find(&p->writable_roots, tpath("main/.git"));
        /* The .git file, and hooks/config of both git dirs. */
        ck_assert_int_eq(must_find(&p->deny_write, tpath("wt/.git"))->exists, 1);
        ck_assert_int_eq(must_find(&p->deny_write, tpath("main/.git/hooks"))->is_dir, 1);
        ck_assert_int_eq(must_find(&p->deny_write, tpath("main/.git/config"))->exists, 1);
        must_find(&p->deny_write, tpath("main/.git/worktrees/wt/hooks"));
        must_find(&p->deny_write, tpath("main/.git/worktrees/wt/config"));
        must_find(&p->deny_write, tpath("main/.git/worktrees/wt/config.worktree"));
        /* extensions.worktreeConfig is off: existing worktrees are covered
         * literally, and there is no glob to enforce at creation time. */
        ck_assert_ptr_null(find(&p->deny_write, tpath("main/.git/worktrees/*/config.worktree")));
        /* Not the nonsense path below a file. */
        ck_assert_ptr_null(find(&p->deny_write, tpath("wt/.git/hooks")));
    } else {
        ck_assert_uint_eq(p->writable_roots.n, 0);
        ck_assert_uint_eq(p->deny_write.n, 0);
    }
    policy_free(p);
    spec_free(s);
}

START_TEST(worktree_chat)
{
    char line[512];
    snprintf(line, sizeof line, "gitdir: %s\n", tpath("main/.git/worktrees/wt"));
    make_worktree(line);
    check_worktree(CCSB_MODE_CHAT);
}
END_TEST

START_TEST(worktree_review)
{
    char line[512];
    snprintf(line, sizeof line, "gitdir: %s\n", tpath("main/.git/worktrees/wt"));
    make_worktree(line);
    check_worktree(CCSB_MODE_REVIEW);
}
END_TEST

START_TEST(worktree_relative_gitdir)
{
    make_worktree("gitdir: ../main/.git/worktrees/wt\n");
    check_worktree(CCSB_MODE_CHAT);
}
END_TEST

START_TEST(worktree_forged_gets_no_mount)
{
    /* A .git file pointing at a directory that does not name this worktree
     * back: its hooks and config are still denied, but nothing is mounted. */
    mkdir_t("secret");
    mkdir_t("secret/objects");
    mkdir_t("secret/refs");
    mkdir_t("secret/worktrees");
    mkdir_t("secret/worktrees/x");
    write_t("secret/worktrees/x/commondir", "../..\n");
    write_t("secret/worktrees/x/gitdir", "/somewhere/else/.git\n");
    mkdir_t("wt");
    char line[512];
    snprintf(line, sizeof line, "gitdir: %s\n", tpath("secret/worktrees/x"));
    write_t("wt/.git", line);
    struct ccsb_spec *s = new_spec();
    ck_assert_int_eq(spec_add_bind(s, tpath("wt"), "/w", 0), 0);
    struct ccsb_policy *p = build_ok(s, &real_host);
    ck_assert_uint_eq(p->n_mounts, 1);
    ck_assert_uint_eq(p->writable_roots.n, 1);
    must_find(&p->deny_write, tpath("wt/.git"));
    must_find(&p->deny_write, tpath("secret/worktrees/x/hooks"));
    must_find(&p->deny_write, tpath("secret/hooks"));
    policy_free(p);
    spec_free(s);
}
END_TEST

START_TEST(worktree_garbage_and_fifo)
{
    /* Malformed .git file: the file itself is protected, nothing else. */
    mkdir_t("a");
    write_t("a/.git", "not a pointer\n");
    /* A FIFO where git keeps commondir must not hang the launch. */
    mkdir_t("b");
    mkdir_t("gd");
    ck_assert_int_eq(mkfifo(tpath("gd/commondir"), 0600), 0);
    char line[512];
    snprintf(line, sizeof line, "gitdir: %s", tpath("gd")); /* no newline */
    write_t("b/.git", line);
    /* .git is a FIFO itself. */
    mkdir_t("c");
    ck_assert_int_eq(mkfifo(tpath("c/.git"), 0600), 0);
    struct ccsb_spec *s = new_spec();
    ck_assert_int_eq(spec_add_bind(s, tpath("a"), "/a", 0), 0);
    ck_assert_int_eq(spec_add_bind(s, tpath("b"), "/b", 0), 0);
    ck_assert_int_eq(spec_add_bind(s, tpath("c"), "/c", 0), 0);
    struct ccsb_policy *p = build_ok(s, &real_host);
    ck_assert_uint_eq(p->n_mounts, 3);
    must_find(&p->deny_write, tpath("a/.git"));
    ck_assert_ptr_null(find(&p->deny_write, tpath("a/.git/hooks")));
    must_find(&p->deny_write, tpath("b/.git"));
    /* No commondir: the git dir is its own common dir. */
    must_find(&p->deny_write, tpath("gd/hooks"));
    must_find(&p->deny_write, tpath("gd/config"));
    must_find(&p->deny_write, tpath("c/.git/hooks"));
    policy_free(p);
    spec_free(s);
}
END_TEST

START_TEST(worktree_made_by_git)
{
    /* The same, with the layout git itself writes. */
    char cmd[1024];
    snprintf(cmd, sizeof cmd,
             "cd '%s' && git init -q -b main main && cd main && "
             "git -c user.email=t@example.com -c user.name=t commit -q --allow-empty -m i && "
             "git worktree add -q ../wt 2>/dev/null",
             tmpdir);
    ck_assert_int_eq(system(cmd), 0);
    check_worktree(CCSB_MODE_CHAT);
}
END_TEST

START_TEST(plain_repo)
{
    mkdir_t("r");
    mkdir_t("r/.git");
    mkdir_t("r/.git/hooks");
    struct ccsb_spec *s = new_spec();
    ck_assert_int_eq(spec_add_bind(s, tpath("r"), "/r", 0), 0);
    struct ccsb_policy *p = build_ok(s, &real_host);
    ck_assert_uint_eq(p->n_mounts, 1);
    const struct policy_path *h = must_find(&p->deny_write, tpath("r/.git/hooks"));
    ck_assert_int_eq(h->exists, 1);
    ck_assert_int_eq(h->is_dir, 1);
    ck_assert_int_eq(must_find(&p->deny_write, tpath("r/.git/config"))->exists, 0);
    /* .git itself stays writable: git add/commit must work. */
    ck_assert_ptr_null(find(&p->deny_write, tpath("r/.git")));
    policy_free(p);
    spec_free(s);
}
END_TEST

START_TEST(real_resolver_defaults)
{
    /* No resolver and no kind hook: realpath(3) and stat(2). */
    mkdir_t("d");
    write_t("d/.profile", "x");
    struct ccsb_spec *s = new_spec();
    ck_assert_int_eq(spec_add_bind(s, tpath("d"), "/d", 0), 0);
    struct policy_host h = {.home = tmpdir};
    struct ccsb_policy *p = build_ok(s, &h);
    const struct policy_path *f = must_find(&p->deny_write, tpath("d/.profile"));
    ck_assert_int_eq(f->exists, 1);
    ck_assert_int_eq(f->is_dir, 0);
    ck_assert_ptr_null(f->resolved);
    ck_assert_str_eq(p->home, tmpdir);
    must_find(&p->deny_read, tpath(".ssh"));
    policy_free(p);
    spec_free(s);
}
END_TEST

START_TEST(worktree_config_extension_keeps_glob)
{
    char dir[] = "/tmp/ccsb-wtcfg-XXXXXX";
    ck_assert_ptr_nonnull(mkdtemp(dir));
    char path[512];
    snprintf(path, sizeof path, "%s/.git", dir);
    ck_assert_int_eq(mkdir(path, 0700), 0);
    snprintf(path, sizeof path, "%s/.git/worktrees", dir);
    ck_assert_int_eq(mkdir(path, 0700), 0);
    snprintf(path, sizeof path, "%s/.git/worktrees/one", dir);
    ck_assert_int_eq(mkdir(path, 0700), 0);
    snprintf(path, sizeof path, "%s/.git/config", dir);
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fputs("[core]\n\tbare = false\n[extensions]\n\tworktreeConfig = true\n", f);
    fclose(f);
    struct ccsb_spec *s = new_spec();
    ck_assert_int_eq(spec_add_bind(s, dir, NULL, 0), 0);
    struct policy_host h = {.home = "/nonexistent-home"};
    struct ccsb_policy *p = build_ok(s, &h);
    snprintf(path, sizeof path, "%s/.git/worktrees/one/config.worktree", dir);
    ck_assert_int_eq(must_find(&p->deny_write, path)->exists, 0);
    snprintf(path, sizeof path, "%s/.git/worktrees/*/config.worktree", dir);
    ck_assert_int_eq(must_find(&p->deny_write, path)->is_glob, 1);
    policy_free(p);
    spec_free(s);
    snprintf(path, sizeof path, "rm -rf '%s'", dir);
    ck_assert_int_eq(system(path), 0);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("policy");
    TCase *tc = tcase_create("fake host");
    tcase_add_test(tc, mode_chat);
    tcase_add_test(tc, mode_review);
    tcase_add_test(tc, mode_plan);
    tcase_add_test(tc, mode_orchestrate);
    tcase_add_test(tc, mandatory_set_whether_or_not_present);
    tcase_add_test(tc, allow_git_config);
    tcase_add_test(tc, worktree_config_extension_keeps_glob);
    tcase_add_test(tc, protected_paths_and_globs);
    tcase_add_test(tc, secrets);
    tcase_add_test(tc, no_home);
    tcase_add_test(tc, home_expansion);
    tcase_add_test(tc, workdir_default_and_explicit);
    tcase_add_test(tc, errors);
    tcase_add_test(tc, mount_inside_secret_refused);
    tcase_add_test(tc, bound_file_has_no_inside);
    tcase_add_test(tc, environment);
    tcase_add_test(tc, scalars_and_session_tmp);
    suite_add_tcase(s, tc);
    TCase *fs = tcase_create("real file system");
    tcase_add_unchecked_fixture(fs, mk_root, rm_root);
    tcase_add_checked_fixture(fs, mk_tmp, NULL);
    tcase_add_test(fs, dangling_symlink_followed);
    tcase_add_test(fs, existing_symlink_both_spellings);
    tcase_add_test(fs, runner_dir_symlink_to_root_refused);
    tcase_add_test(fs, worktree_chat);
    tcase_add_test(fs, worktree_review);
    tcase_add_test(fs, worktree_relative_gitdir);
    tcase_add_test(fs, worktree_forged_gets_no_mount);
    tcase_add_test(fs, worktree_garbage_and_fifo);
    tcase_add_test(fs, worktree_made_by_git);
    tcase_add_test(fs, plain_repo);
    tcase_add_test(fs, real_resolver_defaults);
    suite_add_tcase(s, fs);
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
