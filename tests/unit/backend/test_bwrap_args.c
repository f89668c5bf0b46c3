/*
 * Unit: the bubblewrap plan (policy -> bwrap argv), against a fake host
 * filesystem so every case is exact and independent of this machine.
 */
#include <check.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/bwrap_args.h"
#include "ccsandbox/ccsandbox.h"
#include "policy/policy.h"

/* ---- a fake filesystem -------------------------------------------------------- */

struct fake_entry {
    const char *path;
    int kind;
    const char *target; /* symlink target (absolute, or relative for readlink) */
};

static const struct fake_entry *g_fs;

static const struct fake_entry *lookup(const char *path)
{
    for (const struct fake_entry *e = g_fs; e && e->path; e++)
        if (strcmp(e->path, path) == 0)
            return e;
    return NULL;
}

static int fake_kind(const char *path, void *ud)
{
    const struct fake_entry *e = lookup(path);
    return e ? e->kind : BWRAP_KIND_MISSING;
}

static char *fake_readlink(const char *path, void *ud)
{
    const struct fake_entry *e = lookup(path);
    return e && e->kind == BWRAP_KIND_SYMLINK ? strdup(e->target) : NULL;
}

/* Resolves a symlink at any prefix of the path (one level is enough here). */
static char *fake_resolve(const char *path, void *ud)
{
    for (const struct fake_entry *e = g_fs; e && e->path; e++) {
        size_t n = strlen(e->path);
        if (e->kind == BWRAP_KIND_SYMLINK && e->target[0] == '/' &&
            strncmp(path, e->path, n) == 0 && (path[n] == '/' || path[n] == '\0')) {
            char *out = NULL;
            if (asprintf(&out, "%s%s", e->target, path + n) < 0)
                return NULL;
            return out;
        }
    }
    return lookup(path) ? strdup(path) : NULL;
}

static int fake_glob(const char *pattern, struct strv *out, void *ud)
{
    /* "/w/<star>.pem": the fake entries under /w ending in .pem */
    for (const struct fake_entry *e = g_fs; e && e->path; e++)
        if (strncmp(pattern, "/w/*", 4) == 0 && strncmp(e->path, "/w/", 3) == 0 &&
            strlen(e->path) > strlen(pattern + 4) &&
            strcmp(e->path + strlen(e->path) - strlen(pattern + 4), pattern + 4) == 0)
            if (strv_push(out, e->path) < 0)
                return -1;
    return 0;
}

/* Paths this (fake) user can neither read nor own. */
static const char *const *g_sealed;

static int fake_sealed(const char *path, void *ud)
{
    (void)ud;
    for (const char *const *p = g_sealed; p && *p; p++)
        if (strcmp(*p, path) == 0)
            return 1;
    return 0;
}

static const struct bwrap_host_ops fake_host = {
    .kind = fake_kind, .readlink = fake_readlink, .resolve = fake_resolve, .glob = fake_glob,
    .sealed = fake_sealed,
};

static const struct fake_entry base_fs[] = {
    {"/usr", BWRAP_KIND_DIR, NULL},     {"/bin", BWRAP_KIND_SYMLINK, "usr/bin"},
    {"/lib", BWRAP_KIND_SYMLINK, "usr/lib"}, {"/lib64", BWRAP_KIND_SYMLINK, "usr/lib64"},
    {"/sbin", BWRAP_KIND_SYMLINK, "usr/sbin"}, {"/etc", BWRAP_KIND_DIR, NULL},
    {"/etc/shadow", BWRAP_KIND_FILE, NULL}, {"/w", BWRAP_KIND_DIR, NULL},
    {NULL, 0, NULL},
};

/* ---- a hand-made policy --------------------------------------------------------- */

static struct ccsb_policy pol;

static void add_mount(const char *host, const char *guest, int writable)
{
    pol.mounts = realloc(pol.mounts, (pol.n_mounts + 1) * sizeof *pol.mounts);
    pol.mounts[pol.n_mounts++] = (struct policy_mount){strdup(host), strdup(guest), writable,
                                                       writable ? POLICY_ROOT_BIND : 0, 1};
}

static void add_path(struct policy_paths *ps, const char *path, const char *resolved)
{
    ps->v = realloc(ps->v, (ps->n + 1) * sizeof *ps->v);
    struct policy_path *p = &ps->v[ps->n++];
    memset(p, 0, sizeof *p);
    p->path = strdup(path);
    p->resolved = resolved ? strdup(resolved) : NULL;
    p->is_glob = strpbrk(path, "*?") != NULL;
}

static void free_paths(struct policy_paths *ps)
{
    for (size_t i = 0; i < ps->n; i++) {
        free(ps->v[i].path);
        free(ps->v[i].resolved);
    }
    free(ps->v);
}

static struct bwrap_plan plan;
static char err[512];

static void setup(void)
{
    memset(&pol, 0, sizeof pol);
    memset(&plan, 0, sizeof plan);
    err[0] = '\0';
    g_fs = base_fs;
    g_sealed = NULL;
}

static void teardown(void)
{
    for (size_t i = 0; i < pol.n_mounts; i++) {
        free(pol.mounts[i].host);
        free(pol.mounts[i].guest);
    }
    free(pol.mounts);
    free_paths(&pol.deny_read);
    free_paths(&pol.deny_write);
    free_paths(&pol.writable_roots);
    strv_clear(&pol.deny_write_globs);
    free(pol.guest_workdir);
    bwrap_plan_clear(&plan);
}

static int build_lock(int lock_userns)
{
    struct bwrap_opts o = {.helper_path = "/opt/ccsb/ccsb-init", .host = &fake_host,
                           .lock_userns = lock_userns};
    return bwrap_plan_build(&pol, &o, &plan, err, sizeof err);
}

static int build(void)
{
    return build_lock(0);
}

/* Index of the first run of n args equal to the given ones, or -1. */
static int find(int n, ...)
{
    const char *want[6];
    va_list ap;
    va_start(ap, n);
    for (int i = 0; i < n; i++)
        want[i] = va_arg(ap, const char *);
    va_end(ap);
    for (size_t i = 0; i + (size_t)n <= plan.argv.n; i++) {
        int ok = 1;
        for (int k = 0; k < n && ok; k++)
            ok = strcmp(plan.argv.v[i + (size_t)k], want[k]) == 0;
        if (ok)
            return (int)i;
    }
    return -1;
}

/* ---- cases ---------------------------------------------------------------------- */

START_TEST(base_layout)
{
    ck_assert_int_eq(build(), 0);
    const char *flags[] = {"--unshare-all", "--unshare-user", "--disable-userns",
                           "--die-with-parent", "--new-session", "--as-pid-1", "--clearenv"};
    for (size_t i = 0; i < sizeof flags / sizeof flags[0]; i++)
        ck_assert_msg(find(1, flags[i]) >= 0, "missing %s", flags[i]);
    ck_assert_int_ge(find(2, "--cap-drop", "ALL"), 0);
    ck_assert_int_ge(find(3, "--ro-bind", "/usr", "/usr"), 0);
    ck_assert_int_ge(find(3, "--symlink", "usr/bin", "/bin"), 0);
    ck_assert_int_ge(find(3, "--ro-bind", "/etc", "/etc"), 0);
    ck_assert_int_eq(find(1, "/lib32"), -1); /* absent on the host: absent here */
    ck_assert_int_ge(find(2, "--proc", "/proc"), 0);
    ck_assert_int_ge(find(2, "--tmpfs", "/tmp"), 0);
    ck_assert_int_ge(find(3, "--ro-bind", "/opt/ccsb/ccsb-init", "/run/ccsb/ccsb-init"), 0);
    ck_assert_str_eq(plan.argv.v[plan.cmd_at], "--");
    ck_assert_str_eq(plan.argv.v[plan.cmd_at + 1], "/run/ccsb/ccsb-init");
    ck_assert_str_eq(plan.argv.v[plan.cmd_at + 2], "init");
    ck_assert_uint_eq(plan.ph_files.n + plan.ph_dirs.n, 0);
    /* ccsb-init, not bwrap (whose binds each parse mountinfo), makes /dev
     * from the host's bound once, /proc/sys read-only, and the root
     * read-only; bwrap only binds the host's /dev where it will look */
    ck_assert_int_eq(find(2, "--dev", "/dev"), -1);
    ck_assert_int_ge(find(2, "--dir", "/dev"), 0);
    int hd = find(3, "--dev-bind", "/dev", "/run/ccsb/hostdev");
    ck_assert_int_ge(hd, 0);
    ck_assert_int_lt(hd, (int)plan.cmd_at);
    ck_assert_int_gt(find(2, "--dev", "/run/ccsb/hostdev"), (int)plan.cmd_at);
    ck_assert_int_gt(find(2, "--ro", "/proc/sys"), (int)plan.cmd_at);
    ck_assert_int_gt(find(2, "--remount-ro", "/"), (int)plan.cmd_at);
    ck_assert_int_eq(find(3, "--ro-bind", "/proc/sys", "/proc/sys"), -1);
    /* for that, and no more: CAP_SYS_ADMIN, and CAP_SETPCAP to drop it */
    int caps = find(4, "--cap-add", "CAP_SYS_ADMIN", "--cap-add", "CAP_SETPCAP");
    ck_assert_int_ge(caps, 0);
    ck_assert_int_eq(find(1, "CAP_SYS_RESOURCE"), -1);
    ck_assert_int_eq(find(1, "--lock-userns"), -1);
    ck_assert_int_eq(find(1, "--have-guard"), -1);
}
END_TEST

/* A uid-0 host: ccsb-init, not bwrap, forbids nested user namespaces
 * (bwrap's --disable-userns would put it out of reach of the mount
 * namespace), with the three capabilities that takes. */
START_TEST(uid0_host_locks_userns_in_init)
{
    ck_assert_int_eq(build_lock(1), 0);
    ck_assert_int_eq(find(1, "--disable-userns"), -1);
    ck_assert_int_ge(find(1, "--unshare-user"), 0);
    ck_assert_int_gt(find(1, "--lock-userns"), (int)plan.cmd_at);
    int caps = find(6, "--cap-add", "CAP_SYS_ADMIN", "--cap-add", "CAP_SYS_RESOURCE",
                    "--cap-add", "CAP_SETPCAP");
    ck_assert_int_eq(caps, find(2, "--cap-drop", "ALL") + 2);
    ck_assert_int_lt(caps, (int)plan.cmd_at);
}
END_TEST

START_TEST(modes_and_order)
{
    add_mount("/w/sub", "/work/sub", 0);
    add_mount("/w", "/work", 1);
    ck_assert_int_eq(build(), 0);
    int outer = find(3, "--bind", "/w", "/work");
    int inner = find(3, "--ro-bind", "/w/sub", "/work/sub");
    ck_assert_int_ge(outer, 0);
    ck_assert_int_ge(inner, 0);
    ck_assert_int_lt(outer, inner); /* shallow first, so the nested one stays visible */
}
END_TEST

START_TEST(reserved_guest_refused)
{
    add_mount("/w", "/run/ccsb", 1);
    ck_assert_int_eq(build(), CCSB_E_POLICY);
    ck_assert_ptr_nonnull(strstr(err, "/run/ccsb"));
    teardown();
    setup();
    add_mount("/w", "/proc/x", 1);
    ck_assert_int_eq(build(), CCSB_E_POLICY);
}
END_TEST

static const struct fake_entry repo_fs[] = {
    {"/usr", BWRAP_KIND_DIR, NULL},       {"/etc", BWRAP_KIND_DIR, NULL},
    {"/w", BWRAP_KIND_DIR, NULL},         {"/w/.bashrc", BWRAP_KIND_FILE, NULL},
    {"/w/.git", BWRAP_KIND_DIR, NULL},    {"/w/.git/hooks", BWRAP_KIND_DIR, NULL},
    {"/w/.git/config", BWRAP_KIND_FILE, NULL},
    {NULL, 0, NULL},
};

START_TEST(deny_write_existing_pins_ancestors)
{
    g_fs = repo_fs;
    add_mount("/w", "/w", 1);
    add_path(&pol.deny_write, "/w/.bashrc", NULL);
    add_path(&pol.deny_write, "/w/.git/hooks", NULL);
    add_path(&pol.deny_write, "/w/.git/config", NULL);
    ck_assert_int_eq(build(), 0);
    int bind = find(3, "--bind", "/w", "/w");
    int rc = find(2, "--ro", "/w/.bashrc");
    int pin = find(2, "--pin", "/w/.git");
    int hooks = find(2, "--ro", "/w/.git/hooks");
    int cfg = find(2, "--ro", "/w/.git/config");
    ck_assert_int_ge(rc, 0);
    ck_assert_int_ge(pin, 0);
    ck_assert_int_gt(rc, bind);
    ck_assert_int_gt(pin, bind);
    ck_assert_int_gt(hooks, pin); /* the pin must not cover the read-only bind */
    ck_assert_int_gt(cfg, pin);
    /* ccsb-init makes these mounts, with the two capabilities it needs */
    ck_assert_int_gt(pin, (int)plan.cmd_at);
    int caps = find(4, "--cap-add", "CAP_SYS_ADMIN", "--cap-add", "CAP_SETPCAP");
    ck_assert_int_ge(caps, 0);
    ck_assert_int_lt(caps, (int)plan.cmd_at);
    ck_assert_int_eq(caps, find(2, "--cap-drop", "ALL") + 2);
    /* .git is pinned once although two rules pass through it */
    ck_assert_int_eq(find(2, "--pin", "/w/.git"), pin);
    ck_assert_uint_eq(plan.ph_files.n + plan.ph_dirs.n, 0);
}
END_TEST

START_TEST(deny_write_missing_gets_placeholders)
{
    add_mount("/w", "/w", 1);
    add_path(&pol.deny_write, "/w/.bashrc", NULL);
    add_path(&pol.deny_write, "/w/.git/hooks", NULL);
    add_path(&pol.deny_write, "/w/.git/config", NULL);
    add_path(&pol.deny_write, "/w/.vscode", NULL);
    ck_assert_int_eq(build(), 0);
    ck_assert_uint_eq(plan.ph_files.n, 1);
    ck_assert_str_eq(plan.ph_files.v[0], "/w/.bashrc");
    /* a missing .git covers both of its rules: one directory, not two */
    ck_assert_uint_eq(plan.ph_dirs.n, 2);
    ck_assert_str_eq(plan.ph_dirs.v[0], "/w/.git");
    ck_assert_str_eq(plan.ph_dirs.v[1], "/w/.vscode");
    ck_assert_int_ge(find(2, "--ro", "/w/.bashrc"), 0);
    ck_assert_int_ge(find(2, "--ro", "/w/.git"), 0);
    ck_assert_int_ge(find(2, "--ro", "/w/.vscode"), 0);
}
END_TEST

/* With the guard, missing paths become guard rules: nothing on the host,
 * no mount; a missing deny-read secret keeps its placeholder (masked). */
START_TEST(deny_write_missing_held_by_guard)
{
    static const struct fake_entry fs[] = {
        {"/usr", BWRAP_KIND_DIR, NULL}, {"/etc", BWRAP_KIND_DIR, NULL},
        {"/w", BWRAP_KIND_DIR, NULL},   {"/w/sub", BWRAP_KIND_DIR, NULL},
        {"/home/u", BWRAP_KIND_DIR, NULL}, {NULL, 0, NULL},
    };
    g_fs = fs;
    add_mount("/w", "/work", 1);
    add_mount("/home/u", "/home/u", 1);
    add_path(&pol.deny_write, "/w/.bashrc", NULL);
    add_path(&pol.deny_write, "/w/.git/hooks", NULL);
    add_path(&pol.deny_write, "/w/.git/config", NULL);
    add_path(&pol.deny_write, "/w/sub/.vscode/x", NULL);
    add_path(&pol.deny_write, "/home/u/.aws", NULL);
    add_path(&pol.deny_read, "/home/u/.aws", NULL);
    struct bwrap_opts o = {.helper_path = "/h", .host = &fake_host, .have_guard = 1};
    ck_assert_int_eq(bwrap_plan_build(&pol, &o, &plan, err, sizeof err), 0);
    /* a file's name also holds git's lock file for it; a directory's does not */
    ck_assert_uint_eq(plan.guard_anchors.n, 7);
    ck_assert_uint_eq(plan.guard_rests.n, 7);
    const char *want[][2] = {{"/w", ".bashrc"},          {"/w", ".bashrc.lock"},
                             {"/w", ".git/hooks"},       {"/w", ".git/config"},
                             {"/w", ".git/config.lock"}, {"/w/sub", ".vscode/x"},
                             {"/w/sub", ".vscode/x.lock"}};
    for (int i = 0; i < 7; i++) {
        ck_assert_str_eq(plan.guard_anchors.v[i], want[i][0]);
        ck_assert_str_eq(plan.guard_rests.v[i], want[i][1]);
    }
    ck_assert_int_eq(find(1, "/work/.bashrc"), -1);
    ck_assert_int_eq(find(1, "/work/.git"), -1);
    /* the secret: placeholder, read-only, then masked */
    ck_assert_uint_eq(plan.ph_files.n, 0);
    ck_assert_uint_eq(plan.ph_dirs.n, 1);
    ck_assert_str_eq(plan.ph_dirs.v[0], "/home/u/.aws");
    ck_assert_int_ge(find(2, "--ro", "/home/u/.aws"), 0);
    /* ccsb-init is told: a file's bind the host detaches is then reported only */
    ck_assert_int_gt(find(1, "--have-guard"), (int)plan.cmd_at);
}
END_TEST

/* A path that cannot be examined is not "missing": the plan fails. */
START_TEST(unexaminable_protected_path_fails_closed)
{
    static const struct fake_entry fs[] = {
        {"/usr", BWRAP_KIND_DIR, NULL}, {"/etc", BWRAP_KIND_DIR, NULL},
        {"/w", BWRAP_KIND_DIR, NULL},   {"/w/.git", BWRAP_KIND_UNKNOWN, NULL},
        {"/home/u", BWRAP_KIND_DIR, NULL}, {"/home/u/.ssh", BWRAP_KIND_UNKNOWN, NULL},
        {NULL, 0, NULL},
    };
    g_fs = fs;
    add_mount("/w", "/w", 1);
    add_path(&pol.deny_write, "/w/.git/config", NULL);
    struct bwrap_opts o = {.helper_path = "/h", .host = &fake_host, .have_guard = 1};
    ck_assert_int_eq(bwrap_plan_build(&pol, &o, &plan, err, sizeof err), CCSB_E_POLICY);
    ck_assert_ptr_nonnull(strstr(err, "/w/.git cannot be examined"));
    teardown();
    setup();
    g_fs = fs;
    add_mount("/home/u", "/home/u", 0);
    add_path(&pol.deny_read, "/home/u/.ssh", NULL);
    ck_assert_int_eq(bwrap_plan_build(&pol, &o, &plan, err, sizeof err), CCSB_E_POLICY);
    ck_assert_ptr_nonnull(strstr(err, "deny-read /home/u/.ssh"));
}
END_TEST

START_TEST(deny_write_in_read_only_mount_is_noop)
{
    add_mount("/w", "/w", 0);
    add_path(&pol.deny_write, "/w/.bashrc", NULL);
    ck_assert_int_eq(build(), 0);
    ck_assert_int_eq(find(1, "/w/.bashrc"), -1);
    ck_assert_uint_eq(plan.ph_files.n, 0);
}
END_TEST

START_TEST(deny_write_guest_spelling_differs)
{
    g_fs = repo_fs;
    add_mount("/w", "/work", 1);
    add_path(&pol.deny_write, "/w/.bashrc", NULL);
    ck_assert_int_eq(build(), 0);
    ck_assert_int_ge(find(2, "--ro", "/work/.bashrc"), 0);
}
END_TEST

static const struct fake_entry link_fs[] = {
    {"/usr", BWRAP_KIND_DIR, NULL},
    {"/w", BWRAP_KIND_DIR, NULL},
    {"/w/.bashrc", BWRAP_KIND_SYMLINK, "/home/u/dotfiles/bashrc"},
    {"/home/u/dotfiles/bashrc", BWRAP_KIND_FILE, NULL},
    {NULL, 0, NULL},
};

START_TEST(symlink_in_writable_root_fails_closed)
{
    g_fs = link_fs;
    add_mount("/w", "/w", 1);
    add_path(&pol.deny_write, "/w/.bashrc", "/home/u/dotfiles/bashrc");
    ck_assert_int_eq(build(), CCSB_E_POLICY);
    ck_assert_ptr_nonnull(strstr(err, "symlink"));
    ck_assert_ptr_nonnull(strstr(err, "/w/.bashrc"));
}
END_TEST

static const struct fake_entry worktree_fs[] = {
    {"/usr", BWRAP_KIND_DIR, NULL},
    {"/w", BWRAP_KIND_DIR, NULL},
    {"/w/.git", BWRAP_KIND_FILE, NULL},
    {NULL, 0, NULL},
};

START_TEST(git_file_in_the_way_is_read_only)
{
    g_fs = worktree_fs;
    add_mount("/w", "/w", 1);
    add_path(&pol.deny_write, "/w/.git/hooks", NULL);
    ck_assert_int_eq(build(), 0);
    ck_assert_int_ge(find(2, "--ro", "/w/.git"), 0);
    ck_assert_uint_eq(plan.ph_dirs.n + plan.ph_files.n, 0);
}
END_TEST

static const struct fake_entry secret_fs[] = {
    {"/home/u/.config", BWRAP_KIND_DIR, NULL}, {"/home/u/.config/gh", BWRAP_KIND_DIR, NULL},
    {"/usr", BWRAP_KIND_DIR, NULL},          {"/etc", BWRAP_KIND_DIR, NULL},
    {"/etc/shadow", BWRAP_KIND_FILE, NULL},  {"/home/u", BWRAP_KIND_DIR, NULL},
    {"/home/u/.ssh", BWRAP_KIND_DIR, NULL},  {"/home/u/.aws", BWRAP_KIND_SYMLINK, "/data/aws"},
    {"/data", BWRAP_KIND_DIR, NULL},         {"/data/aws", BWRAP_KIND_DIR, NULL},
    {"/home/u/.bashrc", BWRAP_KIND_FILE, NULL},
    {NULL, 0, NULL},
};

/* A secret this user cannot read and does not own (/etc/shadow for
 * anyone but root) is not masked: a sandbox of the same uid without
 * capabilities cannot read it either, and a mask would be one more mount
 * that ends the session when the host replaces the file. Readable or
 * owned (chmod would open it), it is masked. */
START_TEST(unreadable_secret_not_masked)
{
    static const char *const sealed[] = {"/etc/shadow", "/home/u/.ssh", NULL};
    g_fs = secret_fs;
    g_sealed = sealed;
    add_mount("/home/u", "/home/u", 1);
    add_path(&pol.deny_read, "/etc/shadow", NULL);
    add_path(&pol.deny_read, "/home/u/.ssh", NULL);
    add_path(&pol.deny_read, "/home/u/.config/gh", NULL);
    ck_assert_int_eq(build(), 0);
    ck_assert_int_eq(find(2, "--mask-file", "/etc/shadow"), -1);
    ck_assert_int_eq(find(2, "--mask-dir", "/home/u/.ssh"), -1);
    ck_assert_int_ge(find(2, "--mask-dir", "/home/u/.config/gh"), 0);
    int noted = 0;
    for (size_t i = 0; i < plan.notes.n; i++)
        noted += strstr(plan.notes.v[i], "not masked") != NULL;
    ck_assert_int_eq(noted, 2);
}
END_TEST

START_TEST(deny_read_masks_last_in_both_spellings)
{
    g_fs = secret_fs;
    add_mount("/home/u", "/home/u", 1);
    add_mount("/data", "/data", 0);
    add_path(&pol.deny_write, "/home/u/.bashrc", NULL);
    add_path(&pol.deny_read, "/home/u/.ssh", NULL);
    add_path(&pol.deny_read, "/home/u/.aws", "/data/aws");
    add_path(&pol.deny_read, "/etc/shadow", NULL);
    add_path(&pol.deny_read, "/home/u/.gnupg", NULL); /* missing: nothing to hide */
    add_path(&pol.deny_read, "/home/u/.config/gh", NULL);
    ck_assert_int_eq(build(), 0);
    int ssh = find(2, "--mask-dir", "/home/u/.ssh");
    ck_assert_int_ge(ssh, 0);
    ck_assert_int_ge(find(2, "--mask-dir", "/data/aws"), 0); /* the resolved spelling */
    ck_assert_int_ge(find(2, "--mask-file", "/etc/shadow"), 0);
    ck_assert_int_eq(find(1, "/home/u/.gnupg"), -1);
    /* .config cannot be moved away from under the mask */
    int gh = find(2, "--mask-dir", "/home/u/.config/gh");
    int pin = find(2, "--pin", "/home/u/.config");
    ck_assert_int_ge(pin, 0);
    ck_assert_int_lt(pin, gh);
    /* masks come after every deny-write bind */
    ck_assert_int_gt(ssh, find(2, "--ro", "/home/u/.bashrc"));
}
END_TEST

START_TEST(nested_mount_both_guest_spellings)
{
    g_fs = secret_fs;
    add_mount("/home/u", "/home/u", 1);
    add_mount("/home/u", "/work", 1);
    add_path(&pol.deny_write, "/home/u/.bashrc", NULL);
    ck_assert_int_eq(build(), 0);
    ck_assert_int_ge(find(2, "--ro", "/home/u/.bashrc"), 0);
    ck_assert_int_ge(find(2, "--ro", "/work/.bashrc"), 0);
}
END_TEST

static const struct fake_entry pem_fs[] = {
    {"/usr", BWRAP_KIND_DIR, NULL},
    {"/w", BWRAP_KIND_DIR, NULL},
    {"/w/a.pem", BWRAP_KIND_FILE, NULL},
    {NULL, 0, NULL},
};

START_TEST(globs_need_the_guard)
{
    g_fs = pem_fs;
    add_mount("/w", "/w", 1);
    add_path(&pol.deny_write, "/w/*.pem", NULL);
    ck_assert_int_eq(build(), CCSB_E_POLICY);
    ck_assert_ptr_nonnull(strstr(err, "/w/*.pem"));
    teardown();
    setup();
    g_fs = pem_fs;
    add_mount("/w", "/w", 1);
    strv_push(&pol.deny_write_globs, ".env");
    ck_assert_int_eq(build(), CCSB_E_POLICY);
    ck_assert_ptr_nonnull(strstr(err, ".env"));
    /* in a read-only mount nothing new can match: the existing ones are read-only already */
    teardown();
    setup();
    g_fs = pem_fs;
    add_mount("/w", "/w", 0);
    add_path(&pol.deny_write, "/w/*.pem", NULL);
    ck_assert_int_eq(build(), 0);
}
END_TEST

START_TEST(glob_existing_matches_pinned_with_guard)
{
    g_fs = pem_fs;
    add_mount("/w", "/w", 1);
    add_path(&pol.deny_write, "/w/*.pem", NULL);
    struct bwrap_opts o = {.helper_path = "/h", .host = &fake_host, .have_guard = 1};
    ck_assert_int_eq(bwrap_plan_build(&pol, &o, &plan, err, sizeof err), 0);
    ck_assert_int_ge(find(2, "--ro", "/w/a.pem"), 0);
}
END_TEST

START_TEST(workdir_outside_mounts)
{
    pol.guest_workdir = strdup("/project");
    ck_assert_int_eq(build(), 0);
    ck_assert_int_ge(find(2, "--dir", "/project"), 0);
    teardown();
    setup();
    add_mount("/w", "/project", 1);
    pol.guest_workdir = strdup("/project");
    ck_assert_int_eq(build(), 0);
    ck_assert_int_eq(find(2, "--dir", "/project"), -1);
}
END_TEST

START_TEST(limits_and_ports_reach_init)
{
    struct bwrap_opts o = {.helper_path = "/h", .host = &fake_host, .http_port = 3128,
                           .socks_port = 1080, .rlimit_as = 1 << 30, .rlimit_nproc = 64};
    ck_assert_int_eq(bwrap_plan_build(&pol, &o, &plan, err, sizeof err), 0);
    ck_assert_int_gt(find(2, "--http-port", "3128"), (int)plan.cmd_at);
    ck_assert_int_gt(find(2, "--socks-port", "1080"), (int)plan.cmd_at);
    ck_assert_int_gt(find(2, "--rlimit-as", "1073741824"), (int)plan.cmd_at);
    ck_assert_int_gt(find(2, "--rlimit-nproc", "64"), (int)plan.cmd_at);
}
END_TEST

START_TEST(shell_quoting)
{
    struct strv v = STRV_INIT;
    strv_push(&v, "--bind");
    strv_push(&v, "/a b/it's");
    strv_push(&v, "/plain");
    char *s = bwrap_argv_to_shell("bwrap", &v);
    ck_assert_str_eq(s, "bwrap --bind '/a b/it'\\''s' /plain");
    free(s);
    strv_clear(&v);
}
END_TEST

START_TEST(placeholder_shapes)
{
    const char *dirs[] = {".vscode", ".idea", ".claude", ".codex", "hooks", ".git", ".emacs.d",
                          ".config"};
    const char *files[] = {".bashrc", ".bash_profile", ".zshrc", ".zprofile", ".profile",
                           ".gitconfig", ".gitmodules", "config", ".mcp.json", ".zshenv",
                           ".bash_aliases", ".pam_environment", ".envrc", ".aider.conf.yml"};
    for (size_t i = 0; i < sizeof dirs / sizeof dirs[0]; i++)
        ck_assert_msg(bwrap_name_looks_like_dir(dirs[i]), "%s", dirs[i]);
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++)
        ck_assert_msg(!bwrap_name_looks_like_dir(files[i]), "%s", files[i]);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("bwrap_args");
    TCase *tc = tcase_create("plan");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, base_layout);
    tcase_add_test(tc, uid0_host_locks_userns_in_init);
    tcase_add_test(tc, modes_and_order);
    tcase_add_test(tc, reserved_guest_refused);
    tcase_add_test(tc, deny_write_existing_pins_ancestors);
    tcase_add_test(tc, deny_write_missing_gets_placeholders);
    tcase_add_test(tc, deny_write_missing_held_by_guard);
    tcase_add_test(tc, unexaminable_protected_path_fails_closed);
    tcase_add_test(tc, deny_write_in_read_only_mount_is_noop);
    tcase_add_test(tc, deny_write_guest_spelling_differs);
    tcase_add_test(tc, symlink_in_writable_root_fails_closed);
    tcase_add_test(tc, git_file_in_the_way_is_read_only);
    tcase_add_test(tc, deny_read_masks_last_in_both_spellings);
    tcase_add_test(tc, unreadable_secret_not_masked);
    tcase_add_test(tc, nested_mount_both_guest_spellings);
    tcase_add_test(tc, globs_need_the_guard);
    tcase_add_test(tc, glob_existing_matches_pinned_with_guard);
    tcase_add_test(tc, workdir_outside_mounts);
    tcase_add_test(tc, limits_and_ports_reach_init);
    tcase_add_test(tc, shell_quoting);
    tcase_add_test(tc, placeholder_shapes);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
