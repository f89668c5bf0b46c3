/* Unit tests for lib/guard: globs, status parsing, the resolver, the filter. */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ccsandbox/ccsandbox.h"
#include "guard/glob.h"
#include "guard/pathrules.h"
#include "guard/guard.h"
#include "guard/program.h"
#include "guard/resolve.h"
#include "guard/target.h"

/* ---- globs ---- */

START_TEST(glob_validation)
{
    char err[256];
    const char *bad[][2] = {{"", "empty"},      {"/", "empty"},   {"a/b", "contains '/'"},
                            {".", "not a name"}, {"../", "not a name"}};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        const char *v[] = {"ok", bad[i][0]};
        ck_assert_int_eq(guard_globs_validate(v, 2, err, sizeof err), CCSB_E_SPEC);
        ck_assert_msg(strstr(err, "denyWriteGlobs[1]") && strstr(err, bad[i][1]), "%s", err);
    }
    char longname[NAME_MAX + 3];
    memset(longname, 'a', sizeof longname - 1);
    longname[sizeof longname - 1] = 0;
    const char *v[] = {longname};
    ck_assert_int_eq(guard_globs_validate(v, 1, err, sizeof err), CCSB_E_SPEC);
    const char *good[] = {".env", "*.key", "*.pem", "secrets/", "id_[rd]sa*"};
    ck_assert_int_eq(guard_globs_validate(good, 5, err, sizeof err), 0);
}
END_TEST

START_TEST(glob_matching)
{
    struct glob_set gs;
    char err[128], shown[300];
    const char *g[] = {".env", "*.key", "*.pem", "secrets/", NULL};
    ck_assert_int_eq(glob_set_init(&gs, g, err, sizeof err), 0);
    ck_assert_str_eq(glob_set_match(&gs, ".env", GLOB_FILE, shown, sizeof shown), ".env");
    ck_assert_ptr_null(glob_set_match(&gs, ".env", GLOB_DIR, shown, sizeof shown));
    ck_assert_ptr_null(glob_set_match(&gs, ".envrc", GLOB_FILE, shown, sizeof shown));
    ck_assert_str_eq(glob_set_match(&gs, "SERVER.KEY", GLOB_FILE, shown, sizeof shown), "*.key");
    ck_assert_str_eq(glob_set_match(&gs, ".pem", GLOB_FILE, shown, sizeof shown), "*.pem");
    ck_assert_ptr_null(glob_set_match(&gs, "key", GLOB_FILE, shown, sizeof shown));
    ck_assert_str_eq(glob_set_match(&gs, "secrets", GLOB_DIR, shown, sizeof shown), "secrets/");
    ck_assert_ptr_null(glob_set_match(&gs, "secrets", GLOB_FILE, shown, sizeof shown));
    ck_assert_str_eq(glob_set_match(&gs, "secrets", GLOB_ANY, shown, sizeof shown), "secrets/");
    glob_set_clear(&gs);
}
END_TEST

/* ---- /proc/<pid>/status ---- */

START_TEST(status_parsing)
{
    const char *text = "Name:\tsh\nUmask:\t0027\nState:\tS (sleeping)\nTgid:\t812\n"
                       "Uid:\t1000\t1001\t1002\t1003\nGid:\t50\t51\t52\t53\n"
                       "Groups:\t4 24 27 \nNStgid:\t812\t3\nNSpid:\t815\t7\n"
                       "CapEff:\t0000000000000400\n";
    struct target t;
    memset(&t, 0, sizeof t);
    ck_assert_int_eq(target_parse_status(text, &t), 0);
    ck_assert_int_eq(t.creds.fsuid, 1003);
    ck_assert_int_eq(t.creds.fsgid, 53);
    ck_assert_int_eq(t.creds.umask, 027);
    ck_assert_int_eq(t.creds.ngroups, 3);
    ck_assert_int_eq(t.creds.groups[2], 27);
    ck_assert_int_eq(t.nstgid, 3);
    ck_assert_int_eq(t.nstid, 7);
    ck_assert_int_eq(t.cap_net_bind, 1);
    ck_assert_int_eq(target_parse_status("Name:\tx\n", &t), -EPROTO);
}
END_TEST

/* ---- the resolver, on a private tree used as the "root" ---- */

static char tree[64];
static int rootfd;

static void mk(const char *rel, int dir)
{
    char p[256];
    snprintf(p, sizeof p, "%s/%s", tree, rel);
    if (dir)
        ck_assert_int_eq(mkdir(p, 0755), 0);
    else
        ck_assert_int_ge(close(open(p, O_CREAT | O_WRONLY, 0644)), 0);
}

static void ln(const char *target, const char *rel)
{
    char p[256];
    snprintf(p, sizeof p, "%s/%s", tree, rel);
    ck_assert_int_eq(symlink(target, p), 0);
}

static void setup_tree(void)
{
    snprintf(tree, sizeof tree, "/tmp/ccsb-guard-unit-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(tree));
    mk("etc", 1);
    mk("a", 1);
    mk("a/b", 1);
    mk("a/file", 0);
    ln("/etc", "a/abs");          /* absolute: must stay in the tree */
    ln("../../../../..", "a/up"); /* climbs: must clamp at the tree */
    ln("loop2", "loop1");
    ln("loop1", "loop2");
    ln("x.pem", "dangling");
    ln("a/b", "rel");
    rootfd = open(tree, O_PATH | O_DIRECTORY | O_CLOEXEC);
    ck_assert_int_ge(rootfd, 0);
}

static int rm_rf_cb(const char *p)
{
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", p);
    return system(cmd);
}

static void teardown_tree(void)
{
    close(rootfd);
    ck_assert_int_eq(rm_rf_cb(tree), 0);
}

static int magic_calls;

static int magic(void *ud, int kind, int n)
{
    (void)ud;
    magic_calls++;
    if (kind == RES_MAGIC_FD)
        return fcntl(n, F_DUPFD_CLOEXEC, 3);
    return -EACCES;
}

static int res(int start, const char *path, int flags, struct res_out *o)
{
    struct res_env e = {rootfd, start, getpid(), (pid_t)syscall(SYS_gettid), magic, NULL};
    return resolve_path(&e, path, flags, o);
}

/* The directory that holds the result, relative to the tree. */
static const char *where(const struct res_out *o, char *buf, size_t len)
{
    res_display_dir(rootfd, o->parentfd >= 0 ? o->parentfd : o->objfd, buf, len);
    return buf;
}

START_TEST(resolve_stays_in_root)
{
    struct res_out o;
    char b[PATH_MAX];
    ck_assert_int_eq(res(-1, "/a/abs/new.pem", 0, &o), 0);
    ck_assert_str_eq(where(&o, b, sizeof b), "/etc");
    ck_assert_str_eq(o.name, "new.pem");
    ck_assert_int_eq(o.exists, 0);
    res_out_close(&o);

    ck_assert_int_eq(res(-1, "/a/up/etc/x", 0, &o), 0);
    ck_assert_str_eq(where(&o, b, sizeof b), "/etc");
    res_out_close(&o);

    ck_assert_int_eq(res(-1, "/../../../../a/file", 0, &o), 0);
    ck_assert_int_eq(o.exists, 1);
    ck_assert_str_eq(where(&o, b, sizeof b), "/a");
    res_out_close(&o);
}
END_TEST

START_TEST(resolve_symlinks)
{
    struct res_out o;
    char b[PATH_MAX];
    ck_assert_int_eq(res(-1, "/loop1", RES_FOLLOW, &o), -ELOOP);
    ck_assert_int_eq(res(-1, "/loop1", 0, &o), 0); /* not followed: the link itself */
    ck_assert_int_eq(o.exists, 1);
    ck_assert(S_ISLNK(o.st.st_mode));
    res_out_close(&o);
    /* A dangling final link names the file that would be created. */
    ck_assert_int_eq(res(-1, "/dangling", RES_FOLLOW, &o), 0);
    ck_assert_str_eq(o.name, "x.pem");
    ck_assert_int_eq(o.exists, 0);
    res_out_close(&o);
    ck_assert_int_eq(res(-1, "/rel/../file", 0, &o), 0); /* ".." after a link is physical */
    ck_assert_str_eq(where(&o, b, sizeof b), "/a");
    ck_assert_int_eq(o.exists, 1);
    res_out_close(&o);
    ck_assert_int_eq(res(-1, "/a/file/x", 0, &o), -ENOTDIR);
    ck_assert_int_eq(res(-1, "/a/file/", 0, &o), -ENOTDIR);
    ck_assert_int_eq(res(-1, "/nope/x", 0, &o), -ENOENT);
    ck_assert_int_eq(res(-1, "", 0, &o), -ENOENT);
    ck_assert_int_eq(res(-1, "/a/new/", 0, &o), 0);
    ck_assert_int_eq(o.trailing_slash, 1);
    res_out_close(&o);
    char longc[NAME_MAX + 10];
    memset(longc, 'x', sizeof longc);
    longc[0] = '/';
    longc[sizeof longc - 1] = 0;
    ck_assert_int_eq(res(-1, longc, 0, &o), -ENAMETOOLONG);
}
END_TEST

START_TEST(resolve_relative_and_rebase)
{
    struct res_out o;
    char b[PATH_MAX], p[300];
    snprintf(p, sizeof p, "%s/a/b", tree);
    int start = open(p, O_PATH | O_DIRECTORY);
    ck_assert_int_eq(res(start, "x.key", 0, &o), 0);
    ck_assert_str_eq(where(&o, b, sizeof b), "/a/b");
    res_out_close(&o);
    /* ".." above the start rebuilds the chain from the root. */
    ck_assert_int_eq(res(start, "../../../../../etc/y", 0, &o), 0);
    ck_assert_str_eq(where(&o, b, sizeof b), "/etc");
    res_out_close(&o);
    close(start);
    /* A start outside the root cannot climb. */
    int outside = open("/tmp", O_PATH | O_DIRECTORY);
    ck_assert_int_eq(res(outside, "../x", 0, &o), -EACCES);
    close(outside);
    /* Deep paths beyond the pinned stack still resolve ".." correctly. */
    char deep[PATH_MAX] = "/a";
    for (int i = 0; i < 40; i++) {
        snprintf(p, sizeof p, "%s%s/d", tree, deep);
        ck_assert_int_eq(mkdir(p, 0755), 0);
        strcat(deep, "/d");
    }
    strcat(deep, "/");
    for (int i = 0; i < 41; i++)
        strcat(deep, "../");
    strcat(deep, "etc/z");
    ck_assert_int_eq(res(-1, deep, 0, &o), 0);
    ck_assert_str_eq(where(&o, b, sizeof b), "/etc");
    res_out_close(&o);
}
END_TEST

START_TEST(resolve_proc_magic)
{
    /* With the real root, /proc/self/fd/N must become "my fd N" through the
     * callback, never the supervisor's own fd table. */
    int saved = rootfd;
    rootfd = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
    int fd = open("/dev/null", O_WRONLY | O_CLOEXEC);
    char p[64];
    snprintf(p, sizeof p, "/proc/self/fd/%d", fd);
    struct res_out o;
    magic_calls = 0;
    ck_assert_int_eq(res(-1, p, RES_FOLLOW, &o), 0);
    ck_assert_int_eq(magic_calls, 1);
    ck_assert_int_eq(o.magic, 1);
    ck_assert(S_ISCHR(o.st.st_mode));
    res_out_close(&o);
    /* Not following: the link itself is refused rather than walked. */
    ck_assert_int_eq(res(-1, "/proc/1/cwd/x", 0, &o), -EACCES);
    close(fd);
    close(rootfd);
    rootfd = saved;
}
END_TEST

/* ---- the static filter, in a child ---- */

/* ---- protected-path rules ------------------------------------------------------- */

static int dfd(const char *root, const char *rel)
{
    char p[PATH_MAX];
    snprintf(p, sizeof p, "%s/%s", root, rel);
    int fd = open(p, O_PATH | O_CLOEXEC);
    ck_assert_int_ge(fd, 0);
    return fd;
}

/* Runs a shell command (printf-style); the test fails unless it succeeds. */
static void sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void sh(const char *fmt, ...)
{
    char cmd[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cmd, sizeof cmd, fmt, ap);
    va_end(ap);
    ck_assert_msg(system(cmd) == 0, "%s", cmd);
}

static int chk(const struct path_rules *pr, const char *root, const char *dir, const char *name)
{
    int fd = dfd(root, dir);
    const char *which = NULL;
    int r = path_rules_check(pr, fd, name, &which);
    close(fd);
    if (r == 1)
        ck_assert_ptr_nonnull(which);
    return r;
}

/* A rule of kind file (an existing protected file, a git lock file) is
 * its name at the anchor and the object behind it, never a directory:
 * calls elsewhere need no lookup for it. */
START_TEST(path_rules_file_kind)
{
    char root[] = "/tmp/ccsb-pathrules-XXXXXX";
    ck_assert_ptr_nonnull(mkdtemp(root));
    char a[64];
    snprintf(a, sizeof a, "%s/ws", root);
    ck_assert_int_eq(mkdir(a, 0755), 0);
    struct guard_path_rule rules[] = {{a, "config.lock", 1}, {a, ".bashrc", 0}};
    struct path_rules pr;
    char err[256];
    ck_assert_int_eq(path_rules_init(&pr, rules, 2, err, sizeof err), 0);
    ck_assert_int_eq(chk(&pr, a, ".", "config.lock"), 1);
    sh("mkdir -p %s/sub && touch %s/config.lock %s/ok", a, a, a);
    ck_assert_int_eq(chk(&pr, a, "sub", "config.lock"), 0);
    const char *which = NULL;
    int fd = dfd(a, "config.lock");
    ck_assert_int_eq(path_rules_check_obj(&pr, fd, &which), 1);
    close(fd);
    fd = dfd(a, "ok");
    ck_assert_int_eq(path_rules_check_obj(&pr, fd, &which), 0);
    close(fd);
    /* a directory at a path-kind name holds what is inside; at a file one not */
    sh("mkdir %s/.bashrc && rm %s/config.lock && mkdir %s/config.lock", a, a, a);
    ck_assert_int_eq(chk(&pr, a, ".bashrc", "x"), 1);
    ck_assert_int_eq(chk(&pr, a, "config.lock", "x"), 0);
    path_rules_clear(&pr);
    sh("rm -rf %s", root);
}
END_TEST

START_TEST(path_rules_chain)
{
    char root[] = "/tmp/ccsb-pathrules-XXXXXX";
    ck_assert_ptr_nonnull(mkdtemp(root));
    char a[64], cmd[512];
    snprintf(a, sizeof a, "%s/ws", root);
    ck_assert_int_eq(mkdir(a, 0755), 0);
    struct guard_path_rule rules[] = {{a, ".git/hooks", 0}, {a, ".bashrc", 0}, {a, ".config/fish", 0}};
    struct path_rules pr;
    char err[256];
    ck_assert_int_eq(path_rules_init(&pr, rules, 3, err, sizeof err), 0);
    /* nothing exists: only the first missing component of each is refused */
    ck_assert_int_eq(chk(&pr, a, ".", ".git"), 1);
    ck_assert_int_eq(chk(&pr, a, ".", ".bashrc"), 1);
    ck_assert_int_eq(chk(&pr, a, ".", ".config"), 1);
    ck_assert_int_eq(chk(&pr, a, ".", ".gitignore"), 0);
    ck_assert_int_eq(chk(&pr, a, ".", "hooks"), 0);
    /* the host makes .git: inside it, only hooks is refused */
    sh("mkdir -p %s/.git %s/sub/.git", a, a);
    ck_assert_int_eq(chk(&pr, a, ".git", "hooks"), 1);
    ck_assert_int_eq(chk(&pr, a, ".git", "HEAD"), 0);
    ck_assert_int_eq(chk(&pr, a, "sub/.git", "hooks"), 0); /* not at the anchor */
    /* a nameless object: refused when it is the protected file itself */
    sh("touch %s/.bashrc %s/ok", a, a);
    const char *which = NULL;
    int fd = dfd(a, ".bashrc");
    ck_assert_int_eq(path_rules_check_obj(&pr, fd, &which), 1);
    ck_assert_str_eq(which, strcat(strcpy(cmd, a), "/.bashrc"));
    close(fd);
    fd = dfd(a, "ok");
    ck_assert_int_eq(path_rules_check_obj(&pr, fd, &which), 0);
    close(fd);
    /* ... then hooks: everything at any depth inside it is refused */
    sh("mkdir -p %s/.git/hooks/d/e", a);
    ck_assert_int_eq(chk(&pr, a, ".git/hooks", "pre-commit"), 1);
    ck_assert_int_eq(chk(&pr, a, ".git/hooks/d/e", "x"), 1);
    ck_assert_int_eq(chk(&pr, a, ".git", "config"), 0);
    ck_assert_int_eq(chk(&pr, a, "sub", "x"), 0);
    /* ... or, once a protected directory exists, maybe inside it */
    fd = dfd(a, ".git/hooks/d");
    ck_assert_int_eq(path_rules_check_obj(&pr, fd, &which), 1);
    close(fd);
    fd = dfd(a, "sub");
    ck_assert_int_eq(path_rules_check_obj(&pr, fd, &which), 0);
    close(fd);
    fd = dfd(a, "ok"); /* a file now: it could be a hard link into hooks */
    ck_assert_int_eq(path_rules_check_obj(&pr, fd, &which), 1);
    close(fd);
    /* a symlink in the way ends the chain (the path cannot exist through it) */
    sh("mkdir %s/elsewhere && ln -s elsewhere %s/.config", a, a);
    ck_assert_int_eq(chk(&pr, a, ".", ".config"), 1);
    ck_assert_int_eq(chk(&pr, a, "elsewhere", "fish"), 0);
    path_rules_clear(&pr);
    /* bad rules fail closed */
    struct guard_path_rule bad1[] = {{"/nonexistent-ccsb-dir", "x", 0}};
    ck_assert_int_eq(path_rules_init(&pr, bad1, 1, err, sizeof err), CCSB_E_POLICY);
    ck_assert_ptr_nonnull(strstr(err, "/nonexistent-ccsb-dir"));
    struct guard_path_rule bad2[] = {{a, "x/../y", 0}};
    ck_assert_int_eq(path_rules_init(&pr, bad2, 1, err, sizeof err), CCSB_E_POLICY);
    struct guard_path_rule bad3[] = {{a, "", 0}};
    ck_assert_int_eq(path_rules_init(&pr, bad3, 1, err, sizeof err), CCSB_E_POLICY);
    sh("rm -rf %s", root);
}
END_TEST

/*
 * Rules that share an anchor and first component share that component's
 * lookup: while it is missing the others are skipped, which must not leak
 * into a rule with another first component, nor outlive the component's
 * creation. The order is mixed on purpose (the rules are grouped at init).
 */
START_TEST(path_rules_shared_first_node)
{
    char root[] = "/tmp/ccsb-pathrules-XXXXXX";
    ck_assert_ptr_nonnull(mkdtemp(root));
    char a[64];
    snprintf(a, sizeof a, "%s/ws", root);
    ck_assert_int_eq(mkdir(a, 0755), 0);
    struct guard_path_rule rules[] = {{a, ".git/hooks", 0},    {a, ".config/fish", 0},
                                      {a, ".bashrc", 0},       {a, ".git/config", 0},
                                      {a, ".config/git/x", 0}, {a, ".git/info/exclude", 0}};
    struct path_rules pr;
    char err[256];
    ck_assert_int_eq(path_rules_init(&pr, rules, 6, err, sizeof err), 0);
    ck_assert_int_eq(chk(&pr, a, ".", ".git"), 1);
    ck_assert_int_eq(chk(&pr, a, ".", ".config"), 1);
    /* .git missing, .config made by the host: its chains are looked up */
    sh("mkdir -p %s/.config", a);
    ck_assert_int_eq(chk(&pr, a, ".config", "fish"), 1);
    ck_assert_int_eq(chk(&pr, a, ".config", "git"), 1);
    ck_assert_int_eq(chk(&pr, a, ".config", "other"), 0);
    /* .git made too: every rule below it counts, not only the first */
    sh("mkdir -p %s/.git/info", a);
    ck_assert_int_eq(chk(&pr, a, ".git", "hooks"), 1);
    ck_assert_int_eq(chk(&pr, a, ".git", "config"), 1);
    ck_assert_int_eq(chk(&pr, a, ".git/info", "exclude"), 1);
    ck_assert_int_eq(chk(&pr, a, ".git", "HEAD"), 0);
    ck_assert_int_eq(chk(&pr, a, ".config", "git"), 1);
    /* ... and gone again: still refused at the anchor, nothing below */
    sh("rm -rf %s/.git %s/.config", a, a);
    ck_assert_int_eq(chk(&pr, a, ".", ".git"), 1);
    ck_assert_int_eq(chk(&pr, a, ".", ".bashrc"), 1);
    path_rules_clear(&pr);
    sh("rm -rf %s", root);
}
END_TEST

START_TEST(filter_static)
{
    struct guard_filter_cfg cfg = {.allow_unix_sockets = 0, .notify = 0};
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        char err[256];
        if (guard_filter_install(&cfg, NULL, err, sizeof err) != 0)
            _exit(10);
        if (socket(AF_UNIX, SOCK_STREAM, 0) >= 0 || errno != EPERM)
            _exit(11);
        /* The kernel reads an int argument from the low half of the
         * register: garbage in the high half must not dodge the rule. */
        if (syscall(SYS_socket, (1UL << 32) | AF_UNIX, SOCK_STREAM, 0) >= 0 || errno != EPERM)
            _exit(18);
        struct sock_filter allow = BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
        struct sock_fprog prog = {1, &allow};
        if (syscall(SYS_seccomp, (1UL << 32) | SECCOMP_SET_MODE_FILTER,
                    SECCOMP_FILTER_FLAG_NEW_LISTENER, &prog) >= 0 ||
            errno != EPERM)
            _exit(19);
        int inet = socket(AF_INET, SOCK_STREAM, 0);
        if (inet < 0)
            _exit(12);
        close(inet);
        int sv[2];
        if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) < 0)
            _exit(13);
        if (ptrace(PTRACE_TRACEME, 0, 0, 0) >= 0 || errno != EPERM)
            _exit(14);
        if (syscall(435 /* clone3 */, NULL, 0) >= 0 || errno != ENOSYS)
            _exit(15);
        if (syscall(437 /* openat2 */, AT_FDCWD, "/", NULL, 0) >= 0 || errno != ENOSYS)
            _exit(16);
        /* O_CREAT is untouched without notify. */
        char tmp[] = "/tmp/ccsb-guard-unit-f-XXXXXX";
        int t = mkstemp(tmp);
        if (t < 0)
            _exit(17);
        unlink(tmp);
        _exit(0);
    }
    int st;
    ck_assert_int_eq(waitpid(pid, &st, 0), pid);
    ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "child status %#x", st);
}
END_TEST

/* The program's instructions, read back from its sealed memfd, with every
 * instruction one run_bpf knows and every load inside seccomp_data. */
static struct sock_filter *insns_of(const struct guard_program *p, size_t *n)
{
    unsigned long flags;
    int fd = guard_program_memfd(p, &flags);
    ck_assert_int_ge(fd, 0);
    struct stat st;
    ck_assert_int_eq(fstat(fd, &st), 0);
    struct sock_filter *v = malloc((size_t)st.st_size);
    ck_assert_ptr_nonnull(v);
    ck_assert_int_eq(pread(fd, v, (size_t)st.st_size, 0), st.st_size);
    close(fd);
    *n = (size_t)st.st_size / sizeof *v;
    for (size_t i = 0; i < *n; i++) {
        uint16_t c = v[i].code;
        ck_assert_msg(c == (BPF_LD | BPF_W | BPF_ABS) || c == (BPF_ALU | BPF_AND | BPF_K) ||
                          c == (BPF_JMP | BPF_JA) || c == (BPF_JMP | BPF_JEQ | BPF_K) ||
                          c == (BPF_JMP | BPF_JGT | BPF_K) || c == (BPF_JMP | BPF_JGE | BPF_K) ||
                          c == (BPF_JMP | BPF_JSET | BPF_K) || c == (BPF_RET | BPF_K),
                      "BPF op %#x not handled here", c);
        ck_assert(c != (BPF_LD | BPF_W | BPF_ABS) ||
                  (v[i].k % 4 == 0 && v[i].k + 4 <= sizeof(struct seccomp_data)));
    }
    return v;
}

/* Classic BPF as the kernel runs a seccomp program (checked by insns_of). */
static uint32_t run_bpf(const struct sock_filter *f, size_t n, const struct seccomp_data *d)
{
    uint32_t a = 0;
    for (size_t pc = 0; pc < n; pc++) {
        const struct sock_filter *i = &f[pc];
        switch (i->code) {
        case BPF_LD | BPF_W | BPF_ABS: memcpy(&a, (const char *)d + i->k, 4); break;
        case BPF_ALU | BPF_AND | BPF_K: a &= i->k; break;
        case BPF_JMP | BPF_JA: pc += i->k; break;
        case BPF_JMP | BPF_JEQ | BPF_K: pc += a == i->k ? i->jt : i->jf; break;
        case BPF_JMP | BPF_JGT | BPF_K: pc += a > i->k ? i->jt : i->jf; break;
        case BPF_JMP | BPF_JGE | BPF_K: pc += a >= i->k ? i->jt : i->jf; break;
        case BPF_JMP | BPF_JSET | BPF_K: pc += (a & i->k) ? i->jt : i->jf; break;
        default: return i->k; /* BPF_RET | BPF_K */
        }
    }
    return 0xdeadbeef; /* off the end: no program of libseccomp's does that */
}

/*
 * The filter is built as libseccomp's binary tree over the syscall number
 * (SCMP_FLTATR_CTL_OPTIMIZE 2, quicker to run and to load): it must decide
 * every call exactly as the plain chain of the same rules does, whatever
 * this libseccomp's tree code does. Every number below 480 (and x32's),
 * the native and a foreign architecture, each of the first three argument
 * registers through the values the rules test (garbage in the high half
 * too) while the other two hold 0, 1 or all ones.
 */
START_TEST(filter_tree_decides_like_chain)
{
    static const uint64_t vals[] = {0, 1, 2, 3, 8, 0x40, 01000, 020000000, 0x10000000, 04000,
                                    02000, 0x100000001ULL, ~0ULL};
    static const uint64_t rest[] = {0, 1, ~0ULL};
    const size_t nv = sizeof vals / sizeof vals[0], nr_ = sizeof rest / sizeof rest[0];
    static const uint32_t arches[] = {AUDIT_ARCH_X86_64, AUDIT_ARCH_AARCH64, AUDIT_ARCH_I386};
    static const struct guard_filter_cfg cfgs[] = {{0, 0, 0, 0}, {1, 0, 0, 0}, {0, 1, 0, 0},
                                                   {1, 1, 0, 0}, {0, 1, 1, 0}, {1, 1, 1, 0},
                                                   {0, 1, 1, 1}, {1, 1, 0, 1}};
    for (size_t c = 0; c < sizeof cfgs / sizeof cfgs[0]; c++) {
        struct guard_program *opt, *chain;
        char err[256];
        ck_assert_msg(guard_program_build(&cfgs[c], &opt, err, sizeof err) == 0, "%s", err);
        ck_assert_msg(guard_program_build_chain(&cfgs[c], &chain, err, sizeof err) == 0, "%s",
                      err);
        size_t nt, nc;
        struct sock_filter *t = insns_of(opt, &nt), *ch = insns_of(chain, &nc);
        for (size_t ar = 0; ar < 2; ar++)
            for (int nr = -1; nr < 480; nr++)
                for (uint32_t x32 = 0; x32 <= 0x40000000; x32 += 0x40000000)
                    for (size_t i = 0; i < 3 * nv * nr_ * nr_; i++) {
                        size_t at = i / (nv * nr_ * nr_), v = i % nv;
                        uint64_t o1 = rest[i / nv % nr_], o2 = rest[i / nv / nr_ % nr_];
                        struct seccomp_data d = {
                            .nr = nr | (int)x32,
                            .arch = arches[ar == 0 ? 0 : 1 + (c % 2)],
                            .args = {at == 0 ? vals[v] : o1, at == 1 ? vals[v] : at == 0 ? o1 : o2,
                                     at == 2 ? vals[v] : o2}};
                        uint32_t a = run_bpf(t, nt, &d), b = run_bpf(ch, nc, &d);
                        if (a != b)
                            ck_abort_msg("cfg %zu arch %#x nr %#x args %#llx %#llx %#llx: tree "
                                         "%#x, chain %#x",
                                         c, d.arch, (unsigned)d.nr,
                                         (unsigned long long)d.args[0],
                                         (unsigned long long)d.args[1],
                                         (unsigned long long)d.args[2], a, b);
                    }
        free(t);
        free(ch);
        guard_program_free(opt);
        guard_program_free(chain);
    }
}
END_TEST

START_TEST(filter_allow_unix)
{
    struct guard_filter_cfg cfg = {.allow_unix_sockets = 1, .notify = 0};
    pid_t pid = fork();
    if (pid == 0) {
        char err[256];
        if (guard_filter_install(&cfg, NULL, err, sizeof err) != 0)
            _exit(10);
        int s = socket(AF_UNIX, SOCK_STREAM, 0);
        _exit(s >= 0 ? 0 : 11);
    }
    int st;
    ck_assert_int_eq(waitpid(pid, &st, 0), pid);
    ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "child status %#x", st);
}
END_TEST

START_TEST(probe_supported)
{
    char why[256];
    ck_assert_msg(guard_supported(why, sizeof why) == 1, "%s", why);
    /* No child left behind. */
    ck_assert_int_eq(waitpid(-1, NULL, WNOHANG), -1);
}
END_TEST

/*
 * The answer is cached for the context's life, so a host's signal landing
 * on the probing thread (a handler without SA_RESTART: Python's SIGINT, a
 * profiler's SIGPROF, the ccsb tool's SIGTERM) must not turn it into "not
 * supported" (it did: an interrupted ADDFD, then EINPROGRESS).
 */
static void on_usr1(int sig)
{
    (void)sig;
}

struct pester {
    pthread_t target;
    _Atomic int stop;
};

static void *pester_main(void *arg)
{
    struct pester *p = arg;
    while (!p->stop) {
        pthread_kill(p->target, SIGUSR1);
        usleep(20);
    }
    return NULL;
}

START_TEST(probe_survives_signals)
{
    struct sigaction sa = {.sa_handler = on_usr1}, old;
    sigemptyset(&sa.sa_mask);
    ck_assert_int_eq(sigaction(SIGUSR1, &sa, &old), 0);
    struct pester p = {.target = pthread_self()};
    pthread_t t;
    ck_assert_int_eq(pthread_create(&t, NULL, pester_main, &p), 0);
    char why[256] = "";
    int ok = 0;
    for (int i = 0; i < 30; i++)
        ok += guard_supported(why, sizeof why) == 1;
    p.stop = 1;
    pthread_join(t, NULL);
    sigaction(SIGUSR1, &old, NULL);
    ck_assert_msg(ok == 30, "%d of 30 probes said yes; last: %s", ok, why);
    ck_assert_int_eq(waitpid(-1, NULL, WNOHANG), -1);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("guard");
    TCase *t = tcase_create("pure");
    tcase_add_test(t, glob_validation);
    tcase_add_test(t, glob_matching);
    tcase_add_test(t, status_parsing);
    tcase_add_test(t, filter_tree_decides_like_chain);
    suite_add_tcase(s, t);
    t = tcase_create("resolve");
    tcase_add_checked_fixture(t, setup_tree, teardown_tree);
    tcase_add_test(t, resolve_stays_in_root);
    tcase_add_test(t, resolve_symlinks);
    tcase_add_test(t, resolve_relative_and_rebase);
    tcase_add_test(t, resolve_proc_magic);
    tcase_add_test(t, path_rules_chain);
    tcase_add_test(t, path_rules_file_kind);
    tcase_add_test(t, path_rules_shared_first_node);
    suite_add_tcase(s, t);
    /* Valgrind does not implement seccomp(2): there these only run for real. */
    const char *pre = getenv("LD_PRELOAD");
    if (pre && strstr(pre, "vgpreload"))
        return s;
    t = tcase_create("kernel");
    tcase_add_test(t, filter_static);
    tcase_add_test(t, filter_allow_unix);
    tcase_add_test(t, probe_supported);
    tcase_add_test(t, probe_survives_signals);
    suite_add_tcase(s, t);
    return s;
}

int main(void)
{
    SRunner *r = srunner_create(suite());
    srunner_run_all(r, CK_NORMAL);
    int failed = srunner_ntests_failed(r);
    srunner_free(r);
    return failed ? 1 : 0;
}
