/*
 * Red team: the protected paths of a workspace (issue 3, "Mandatory
 * deny-write set"), attacked from inside a real bubblewrap session. Each
 * test is an attempt to leave something on the host that the host's own
 * tools (git, a shell, an editor) will later run or trust. A failing test
 * here is an escape that works.
 *
 * The workspace W is bound read-write and is the working directory. Runs
 * as root and (through run_as_user.sh) as an unprivileged user.
 */
#include <check.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bwrap_harness.h"

static struct h h;
static char *W;
static ccsb_spec *spec;

/* The session's spec: workspace ws, bound read-write, the working directory. */
static void spec_on(const char *ws)
{
    ccsb_spec_free(spec);
    ck_assert_int_eq(ccsb_spec_new(&spec), 0);
    ccsb_spec_set_backend(spec, CCSB_BACKEND_NATIVE);
    ccsb_spec_add_bind_mount(spec, ws, NULL, 0);
    ccsb_spec_set_guest_workdir(spec, ws);
}

static void setup(void)
{
    h_init(&h);
    W = h_tmpdir("rt-paths");
    spec_on(W);
}

static void teardown(void)
{
    h_done(&h);
    ccsb_spec_free(spec);
    spec = NULL;
    h_rmtree(W);
    free(W);
    W = NULL;
}

static void launch(void)
{
    int r = h_launch(&h, spec);
    ck_assert_msg(r == 0, "launch: %s: %s", ccsb_strerror(r), h_errmsg(&h));
}

static struct h_exec *runf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static struct h_exec *runf(const char *fmt, ...)
{
    char cmd[8192];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cmd, sizeof cmd, fmt, ap);
    va_end(ap);
    struct h_exec *x = h_run(&h, cmd);
    ck_assert_ptr_nonnull(x);
    return x;
}

/* Runs a shell command on the host in W; 0 when it succeeded. */
static int host_sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int host_sh(const char *fmt, ...)
{
    char cmd[4096], full[4400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cmd, sizeof cmd, fmt, ap);
    va_end(ap);
    snprintf(full, sizeof full, "cd '%s' && { %s; } >/dev/null 2>&1", W, cmd);
    return system(full);
}

static int have_git(void)
{
    return access("/usr/bin/git", X_OK) == 0;
}

/* Stops the session, then compares dir (under W) with its snapshot. */
static void assert_unchanged(const char *dir, const char *before)
{
    ccsb_session_destroy(h.s);
    h.s = NULL;
    h_assert_unchanged(dir, before);
}

/*
 * git reads "$GIT_DIR/commondir" and, when it exists, takes config and
 * hooks from the directory it names. A repository at the root of the
 * workspace has .git/config and .git/hooks read-only, but a new
 * .git/commondir pointing at a copy the sandbox controls hands the host's
 * next `git status` a core.fsmonitor of the sandbox's choosing.
 */
START_TEST(git_commondir_redirect)
{
    if (!have_git()) {
        printf("SKIP git_commondir_redirect: git missing\n");
        return;
    }
    ck_assert_int_eq(host_sh("git init -q && echo a > a && git add a && "
                             "git -c user.email=t@t -c user.name=t commit -qm a"),
                     0);
    launch();
    struct h_exec *x = runf("cp -r .git evil && rm -rf evil/hooks evil/config; "
                            "printf '[core]\\n\\tfsmonitor = \"touch /tmp/x; false\"\\n' > evil/config; "
                            "echo ../evil > .git/commondir && echo PLANTED-commondir; "
                            "printf 'gitdir: evil\\n' > .git/commondir.tmp && "
                            "mv .git/commondir.tmp .git/commondir && echo PLANTED-mv");
    ck_assert_msg(strstr(x->out, "PLANTED") == NULL, "commondir was planted: %s", x->out);
    ccsb_session_destroy(h.s);
    h.s = NULL;
    char path[4200];
    snprintf(path, sizeof path, "%s/.git/commondir", W);
    ck_assert_msg(!h_exists(path), "%s exists on the host", path);
    /* What the host's git now sees. */
    ck_assert_int_ne(host_sh("git config core.fsmonitor"), 0);
}
END_TEST

/*
 * A fresh workspace: every protected name is missing and nothing is made
 * on the host for it. Each route to create one fails, and the workspace is
 * byte for byte as before (the attempts stage their material in /tmp).
 */
START_TEST(fresh_workspace_every_route)
{
    char *before = h_snapshot(W);
    launch();
    struct h_exec *x = runf(
        "cd %s; p() { echo \"PLANTED $1\"; }; "
        "echo e > /tmp/e; mkdir -p /tmp/d/hooks /tmp/v; echo e > /tmp/d/hooks/pre-commit; "
        "echo e > .bashrc && p redirect; "
        "cp /tmp/e .profile && p cp; "
        "mkdir .vscode && p mkdir; "
        "mkdir -p .git/hooks && p mkdir-p; "
        "ln -s /tmp/e .mcp.json && p symlink; "
        "mkfifo .zshrc && p mkfifo; "
        "cp -a /tmp/d .git && p cp-a; "
        "mv /tmp/v .claude && p mv-dir; "
        "(cd /tmp && tar cf t.tar d) && mkdir t && (cd t && tar xf /tmp/t.tar) ; "
        "tar -C /tmp -cf /tmp/g.tar d && tar -xf /tmp/g.tar --transform s,^d,.git, && p tar; "
        "ln -s .bashrc l && echo e > l && p symlink-write; rm -f l; "
        "ln -s l2 l1 && ln -s .git/config l2 && echo e > l1 && p symlink-chain; rm -f l1 l2; "
        "echo e > /proc/self/cwd/.bashrc && p proc-cwd; "
        "echo e > ././/./.bashrc && p dots; "
        "git init -q && p git-init; "
        "HOME=$PWD git config --global core.fsmonitor x && p git-config-global; "
        "python3 -c 'import os,shutil\n"
        "fd=os.open(\".\", os.O_TMPFILE|os.O_WRONLY)\nos.write(fd,b\"e\")\n"
        "os.link(\"/proc/self/fd/%%d\" %% fd, \".bashrc\", follow_symlinks=True)' 2>/dev/null && "
        "p tmpfile-link; "
        "python3 -c 'import shutil; shutil.copytree(\"/tmp/d\", \".git\")' 2>/dev/null && p copytree; "
        "rm -rf t; true",
        W);
    ck_assert_msg(strstr(x->out, "PLANTED") == NULL, "protected paths were created: %s", x->out);
    assert_unchanged(W, before);
    free(before);
}
END_TEST

/*
 * From a session on ws, creates protected names under other spellings
 * (more: further attempts) and one ordinary file, ReadMe.TXT; returns the
 * output, where PLANTED-<what> marks each that worked. The session is
 * gone on return.
 */
static struct h_exec *plant_other_spellings(const char *ws, const char *more)
{
    spec_on(ws);
    launch();
    struct h_exec *x = runf("cd %s; echo e > .BASHRC && echo PLANTED-bashrc; %s"
                            "mkdir .GIT && echo PLANTED-git; "
                            "mkdir .VSCode && echo PLANTED-vscode; "
                            "echo ok > ReadMe.TXT",
                            ws, more);
    ccsb_session_destroy(h.s);
    h.s = NULL;
    return x;
}

/* "name=0|1 " (does dir hold it) for each name planted above, in lower case. */
static void lower_case_names(const char *dir, char *list, size_t cap)
{
    const char *names[] = {".bashrc", ".git", ".vscode", "readme.txt"};
    list[0] = '\0';
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        char p[4400];
        snprintf(p, sizeof p, "%s/%s", dir, names[i]);
        size_t used = strlen(list);
        snprintf(list + used, cap - used, "%s=%d ", names[i], h_exists(p));
    }
}

/*
 * A workspace on a file system that ignores case (WSL's drvfs on /mnt/c,
 * a casefolded ext4 directory; here a small FUSE file system). `.BASHRC`
 * is `.bashrc` there, so a rule that compares names byte for byte lets the
 * sandbox create the protected file under another spelling.
 */
START_TEST(case_insensitive_workspace)
{
    if (geteuid() != 0 || access("/dev/fuse", R_OK | W_OK) != 0 ||
        system("/usr/bin/python3 -c 'import fusepy' >/dev/null 2>&1") != 0) {
        printf("SKIP case_insensitive_workspace: needs root, /dev/fuse and python3-fusepy\n");
        return;
    }
    char back[4200], mnt[4200];
    snprintf(back, sizeof back, "%s/back", W);
    snprintf(mnt, sizeof mnt, "%s/mnt", W);
    ck_assert_int_eq(mkdir(back, 0755), 0);
    ck_assert_int_eq(mkdir(mnt, 0755), 0);
    pid_t fs = fork();
    ck_assert_int_ge(fs, 0);
    if (fs == 0) {
        prctl(PR_SET_PDEATHSIG, SIGTERM); /* gone with the test, whatever happens */
        execl("/usr/bin/python3", "python3", CIFS_PY, back, mnt, (char *)NULL);
        _exit(127);
    }
    int mounted = 0;
    for (int i = 0; i < 100 && !mounted; i++) {
        struct statfs sf;
        mounted = statfs(mnt, &sf) == 0 && sf.f_type == 0x65735546; /* FUSE */
        if (!mounted)
            usleep(50 * 1000);
    }
    ck_assert_msg(mounted, "the FUSE file system did not come up");
    struct h_exec *x = plant_other_spellings(mnt, "echo e > .bashrc. && echo PLANTED-dot; ");
    char list[256];
    lower_case_names(back, list, sizeof list);
    kill(fs, SIGTERM);
    waitpid(fs, NULL, 0);
    umount2(mnt, MNT_DETACH);
    ck_assert_msg(strstr(x->out, "PLANTED") == NULL, "created under another spelling: %s",
                  x->out);
    ck_assert_str_eq(list, ".bashrc=0 .git=0 .vscode=0 readme.txt=1 ");
}
END_TEST

/*
 * The same through overlayfs, a container's usual workspace: since Linux
 * 6.18 it takes casefolded layers and then folds case itself, so its
 * file system type alone does not say "case sensitive".
 */
START_TEST(casefold_overlay_workspace)
{
    if (geteuid() != 0) {
        printf("SKIP casefold_overlay_workspace: needs root\n");
        return;
    }
    char cf[4200], mnt[4200], opts[13000];
    snprintf(cf, sizeof cf, "%s/cf", W);
    snprintf(mnt, sizeof mnt, "%s/ovl", W);
    ck_assert_int_eq(mkdir(cf, 0755), 0);
    ck_assert_int_eq(mkdir(mnt, 0755), 0);
    if (mount("tmpfs", cf, "tmpfs", 0, "casefold") != 0) {
        printf("SKIP casefold_overlay_workspace: no casefolded tmpfs (CONFIG_UNICODE)\n");
        return;
    }
    const char *sub[] = {"l", "u", "w"};
    for (size_t i = 0; i < 3; i++) {
        char d[4300];
        snprintf(d, sizeof d, "%s/%s", cf, sub[i]);
        ck_assert_int_eq(mkdir(d, 0755), 0);
    }
    snprintf(opts, sizeof opts, "lowerdir=%s/l,upperdir=%s/u,workdir=%s/w", cf, cf, cf);
    if (mount("overlay", mnt, "overlay", 0, opts) != 0) {
        umount2(cf, MNT_DETACH);
        printf("SKIP casefold_overlay_workspace: overlayfs refuses casefolded layers "
               "(before Linux 6.18)\n");
        return;
    }
    struct h_exec *x = plant_other_spellings(mnt, "");
    /* looked up in the casefolded upper layer: any spelling is found */
    char upper[4300], list[256];
    snprintf(upper, sizeof upper, "%s/u", cf);
    lower_case_names(upper, list, sizeof list);
    umount2(mnt, MNT_DETACH);
    umount2(cf, MNT_DETACH);
    ck_assert_msg(strstr(x->out, "PLANTED") == NULL, "created under another spelling: %s",
                  x->out);
    ck_assert_str_eq(list, ".bashrc=0 .git=0 .vscode=0 readme.txt=1 ");
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("redteam-paths");
    TCase *tc = h_tcase("attempts", 120, setup, teardown);
    tcase_add_test(tc, git_commondir_redirect);
    tcase_add_test(tc, fresh_workspace_every_route);
    tcase_add_test(tc, case_insensitive_workspace);
    tcase_add_test(tc, casefold_overlay_workspace);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return h_run_suite(suite());
}
