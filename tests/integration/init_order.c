/*
 * Integration: ccsb-init's control protocol, v2 (SETUP, GUARD_FILTER
 * before READY, the spare), driven by hand against a real ccsb-init as
 * PID 1 of a real bwrap, with messages out of order: whatever comes in the
 * wrong place, no command runs before the host's setup and guard, and the
 * guard taken before READY is the one every command gets (the spare's
 * included), whatever is sent afterwards.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <poll.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "backend/init_proto.h"

#if defined(__x86_64__)
#define THIS_ARCH AUDIT_ARCH_X86_64
#elif defined(__aarch64__)
#define THIS_ARCH AUDIT_ARCH_AARCH64
#endif

static char helper[PATH_MAX + 32];
static char dir[] = "/tmp/ccsb-init-order-XXXXXX";

struct sb {
    pid_t pid;
    int ctrl;
};

static const char *find_bwrap(void)
{
    static const char *const c[] = {"/usr/bin/bwrap", "/usr/local/bin/bwrap", "/bin/bwrap"};
    for (size_t i = 0; i < sizeof c / sizeof c[0]; i++)
        if (access(c[i], X_OK) == 0)
            return c[i];
    return NULL;
}

/* bwrap with the host's / read-only, dir writable, ccsb-init as PID 1
 * waiting for its SETUP; mount_caps: with the capabilities it needs for
 * its own mounts (as the library grants them). */
static struct sb start_with(int mount_caps)
{
    int sp[2];
    ck_assert_int_eq(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sp), 0);
    const char *bwrap = find_bwrap();
    ck_assert_ptr_nonnull(bwrap);
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        if (dup2(sp[1], INIT_CTRL_FD) < 0)
            _exit(120);
        const char *argv[40] = {bwrap, "--unshare-all", "--die-with-parent", "--ro-bind", "/",
                                "/", "--as-pid-1", "--dev", "/dev", "--proc", "/proc", "--tmpfs",
                                "/run", "--ro-bind", helper, INIT_GUEST_PATH, "--bind", dir, dir};
        size_t n = 19;
        static const char *const caps[] = {"--cap-drop", "ALL", "--cap-add", "CAP_SYS_ADMIN",
                                           "--cap-add", "CAP_SETPCAP"};
        for (size_t i = 0; mount_caps && i < sizeof caps / sizeof caps[0]; i++)
            argv[n++] = caps[i];
        argv[n++] = "--";
        argv[n++] = INIT_GUEST_PATH;
        argv[n++] = "init";
        argv[n++] = "--setup";
        argv[n] = NULL;
        execv(bwrap, (char *const *)argv);
        _exit(121);
    }
    close(sp[1]);
    return (struct sb){pid, sp[0]};
}

static struct sb start(void)
{
    return start_with(0);
}

/* 1 on a message, 0 on EOF, -1 on a timeout. */
static int recv_within(struct sb *s, struct init_msg *m, int *fd, int ms)
{
    struct pollfd p = {.fd = s->ctrl, .events = POLLIN};
    if (poll(&p, 1, ms) <= 0)
        return -1;
    int fds[INIT_MAX_FDS];
    size_t n = INIT_MAX_FDS;
    int r = init_recv(s->ctrl, m, fds, &n);
    for (size_t i = 0; i < n; i++) {
        if (i == 0 && fd)
            *fd = fds[i];
        else
            close(fds[i]);
    }
    return r > 0 ? 1 : 0;
}

static void finish(struct sb *s)
{
    close(s->ctrl);
    int st;
    for (int i = 0; i < 300 && waitpid(s->pid, &st, WNOHANG) == 0; i++)
        usleep(10000);
    if (waitpid(s->pid, &st, WNOHANG) == 0) {
        kill(s->pid, SIGKILL);
        waitpid(s->pid, &st, 0);
    }
}

static int memfd_of(const void *data, size_t len)
{
    int fd = memfd_create("t", MFD_CLOEXEC | MFD_ALLOW_SEALING);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(write(fd, data, len), (ssize_t)len);
    ck_assert_int_eq(fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE), 0);
    return fd;
}

static void send_setup(struct sb *s, const char *words, size_t len)
{
    struct init_msg m;
    init_msg_init(&m, INIT_MSG_SETUP, 0);
    int fd = memfd_of(words, len);
    ck_assert_int_eq(init_send(s->ctrl, &m, &fd, 1), 0);
    close(fd);
}

/* mkdir/mkdirat -> EPERM (allow = 0), or everything allowed (allow = 1). */
static void send_guard(struct sb *s, int allow, int expect_ok)
{
#ifdef THIS_ARCH
    struct sock_filter deny[] = {
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, THIS_ARCH, 1, 0),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS),
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
#ifdef __NR_mkdir
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_mkdir, 2, 0),
#else
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_mkdirat, 2, 0),
#endif
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_mkdirat, 1, 0),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
    };
    struct sock_filter all[] = {BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW)};
    struct init_msg m;
    init_msg_init(&m, INIT_MSG_GUARD_FILTER, 7);
    int fd = allow ? memfd_of(all, sizeof all) : memfd_of(deny, sizeof deny);
    int r = init_send(s->ctrl, &m, &fd, 1);
    close(fd);
    if (expect_ok)
        ck_assert_int_eq(r, 0);
#endif
}

/* A shell command with /dev/null for its stdio; gate >= 0: INIT_EXEC_GATE,
 * it waits for a byte there. */
static void send_exec(struct sb *s, uint64_t id, const char *script, int gate)
{
    char *argv[] = {"/bin/sh", "-c", (char *)script, NULL};
    char *envp[] = {"PATH=/usr/bin:/bin", NULL};
    int data = init_exec_data_pack(dir, argv, envp);
    ck_assert_int_ge(data, 0);
    int nul = open("/dev/null", O_RDWR | O_CLOEXEC);
    ck_assert_int_ge(nul, 0);
    struct init_msg m;
    init_msg_init(&m, INIT_MSG_EXEC, id);
    int fds[5] = {data, nul, nul, nul, gate};
    if (gate >= 0)
        m.flags = INIT_EXEC_GATE;
    int r = init_send(s->ctrl, &m, fds, gate >= 0 ? 5 : 4);
    if (gate >= 0) /* (an ungated one may go to a ccsb-init that is refusing) */
        ck_assert_int_eq(r, 0);
    close(data);
    close(nul);
}

static void send_spare(struct sb *s)
{
    int p[2];
    ck_assert_int_eq(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, p), 0);
    struct init_msg m;
    init_msg_init(&m, INIT_MSG_SPARE, 0);
    ck_assert_int_eq(init_send(s->ctrl, &m, p, 2), 0);
    close(p[0]);
    close(p[1]);
}

/* Waits for READY (closing its listeners). */
static void expect_ready(struct sb *s)
{
    struct init_msg m;
    int fd = -1;
    ck_assert_int_eq(recv_within(s, &m, &fd, 10000), 1);
    if (fd >= 0)
        close(fd);
    ck_assert_msg(m.type == INIT_MSG_READY, "got message %u: %s", m.type, m.text);
}

/* The exit code of exec id (other messages skipped). */
static int wait_exit(struct sb *s, uint64_t id)
{
    for (int i = 0; i < 50; i++) {
        struct init_msg m;
        int fd = -1;
        int r = recv_within(s, &m, &fd, 10000);
        if (fd >= 0)
            close(fd);
        ck_assert_int_eq(r, 1);
        ck_assert_msg(m.type != INIT_MSG_FAILED || m.id != id, "exec failed: %s", m.text);
        if (m.type == INIT_MSG_EXITED && m.id == id)
            return m.b ? 128 + m.b : m.a;
    }
    ck_abort_msg("no exit");
    return -1;
}

static int exists(const char *name)
{
    char p[PATH_MAX];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    return access(p, F_OK) == 0;
}

/* FATAL naming what it expected, then the end: never STARTED. */
static void expect_refused(struct sb *s, const char *what)
{
    struct init_msg m;
    int fd = -1;
    ck_assert_int_eq(recv_within(s, &m, &fd, 10000), 1);
    if (fd >= 0)
        close(fd);
    ck_assert_msg(m.type == INIT_MSG_FATAL, "got message %u instead of FATAL", m.type);
    ck_assert_msg(strstr(m.text, what) != NULL, "FATAL says: %s", m.text);
    ck_assert_int_eq(recv_within(s, &m, &fd, 10000), 0);
}

/* The harness itself: in order, a command runs and leaves its file. */
START_TEST(in_order_runs)
{
    struct sb s = start();
    static const char words[] = "--await-guard";
    send_setup(&s, words, sizeof words);
    send_guard(&s, 0, 1);
    expect_ready(&s);
    send_exec(&s, 1, "touch ran", -1);
    ck_assert_int_eq(wait_exit(&s, 1), 0);
    finish(&s);
    ck_assert(exists("ran"));
}
END_TEST

START_TEST(exec_before_setup_runs_nothing)
{
    struct sb s = start();
    send_exec(&s, 1, "touch ran-early", -1);
    expect_refused(&s, "the setup");
    finish(&s);
    ck_assert(!exists("ran-early"));
}
END_TEST

START_TEST(exec_before_guard_runs_nothing)
{
    struct sb s = start();
    static const char words[] = "--await-guard";
    send_setup(&s, words, sizeof words);
    send_exec(&s, 1, "touch ran-unguarded", -1);
    expect_refused(&s, "the guard filter");
    finish(&s);
    ck_assert(!exists("ran-unguarded"));
}
END_TEST

START_TEST(second_setup_is_refused)
{
    struct sb s = start();
    static const char words[] = "--await-guard";
    send_setup(&s, words, sizeof words);
    send_setup(&s, "", 0); /* where the guard was due */
    expect_refused(&s, "the guard filter");
    finish(&s);
}
END_TEST

/*
 * After READY, a second filter (allowing everything) is refused, and every
 * command, the spare's and a forked one's, still runs under the first.
 */
START_TEST(guard_after_ready_changes_nothing)
{
#ifndef THIS_ARCH
    return;
#endif
    struct sb s = start();
    static const char words[] = "--await-guard";
    send_setup(&s, words, sizeof words);
    send_guard(&s, 0, 1);
    send_spare(&s);
    expect_ready(&s);
    send_guard(&s, 1, 1);
    send_setup(&s, "", 0);
    int replies = 0;
    for (int i = 0; i < 2; i++) {
        struct init_msg m;
        int fd = -1;
        ck_assert_int_eq(recv_within(&s, &m, &fd, 10000), 1);
        if (fd >= 0)
            close(fd);
        replies += m.type == INIT_MSG_REPLY && m.a == EPROTO;
    }
    ck_assert_int_eq(replies, 2);
    /* 1: the spare made before the second filter came; 2: forked (no pair
     * sent with 1); 3: forked again */
    for (uint64_t id = 1; id <= 3; id++) {
        char cmd[64];
        snprintf(cmd, sizeof cmd, "mkdir d%llu", (unsigned long long)id);
        send_exec(&s, id, cmd, -1);
        ck_assert_int_ne(wait_exit(&s, id), 0);
        snprintf(cmd, sizeof cmd, "d%llu", (unsigned long long)id);
        ck_assert_msg(!exists(cmd), "%s made under the wrong filter", cmd);
    }
    finish(&s);
}
END_TEST

/*
 * A gated command (ccsb_launch_exec's, sent ahead of the host's attach)
 * runs only once the host says go on its gate; a gate closed without it
 * (the launch failed) and the command never runs. Through the spare and
 * through a plain fork alike.
 */
START_TEST(gated_exec_waits_for_go)
{
    struct sb s = start();
    static const char words[] = "--await-guard";
    send_setup(&s, words, sizeof words);
    send_guard(&s, 1, 1);
    send_spare(&s);
    /* 1 (the spare) and 2 (forked): the gate closes, nothing runs */
    for (uint64_t id = 1; id <= 2; id++) {
        int g[2];
        ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, g), 0);
        char name[32], cmd[64];
        snprintf(name, sizeof name, "closed%llu", (unsigned long long)id);
        snprintf(cmd, sizeof cmd, "touch %s", name);
        send_exec(&s, id, cmd, g[0]);
        close(g[0]);
        if (id == 1)
            expect_ready(&s);
        usleep(100000); /* time to run, were it not held */
        ck_assert_msg(!exists(name), "%s ran before the go", name);
        close(g[1]);
        ck_assert_int_eq(wait_exit(&s, id), 0);
        ck_assert_msg(!exists(name), "%s ran without the go", name);
    }
    /* 3: the go */
    int g[2];
    ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, g), 0);
    send_exec(&s, 3, "touch opened; exit 5", g[0]);
    close(g[0]);
    ck_assert_int_eq(write(g[1], "g", 1), 1);
    close(g[1]);
    ck_assert_int_eq(wait_exit(&s, 3), 5);
    ck_assert(exists("opened"));
    finish(&s);
}
END_TEST

/*
 * ccsb-init reaches each path it protects without following a symlink; one
 * that became a symlink since the plan (a sandbox or host process swapped
 * it) is refused, not bound onto itself: a read-only bind of a symlink
 * protects nothing, writes go through it to where it points.
 */
START_TEST(protected_path_swapped_for_symlink)
{
    char prot[PATH_MAX], evil[PATH_MAX], link[PATH_MAX];
    snprintf(prot, sizeof prot, "%s/prot", dir);
    snprintf(evil, sizeof evil, "%s/evil", dir);
    snprintf(link, sizeof link, "%s/link", dir);
    int fd = open(prot, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    ck_assert_int_ge(fd, 0);
    close(fd);
    fd = open(evil, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    ck_assert_int_ge(fd, 0);
    close(fd);
    struct sb s = start_with(1);
    char words[PATH_MAX + 32];
    int n = snprintf(words, sizeof words, "--await-go%c--ro%c%s", 0, 0, prot);
    send_setup(&s, words, (size_t)n + 1);
    /* the plan saw a file; now, before the mounts, it is a link */
    ck_assert_int_eq(symlink("evil", link), 0);
    ck_assert_int_eq(rename(link, prot), 0);
    struct init_msg go;
    init_msg_init(&go, INIT_MSG_GO, 0);
    ck_assert_int_eq(init_send(s.ctrl, &go, NULL, 0), 0);
    struct init_msg m;
    int got = -1;
    ck_assert_int_eq(recv_within(&s, &m, &got, 10000), 1);
    if (got >= 0)
        close(got);
    if (m.type == INIT_MSG_READY) {
        send_exec(&s, 1, "echo through >> prot", -1);
        wait_exit(&s, 1);
    }
    finish(&s);
    struct stat st;
    ck_assert_int_eq(stat(evil, &st), 0);
    ck_assert_msg(m.type == INIT_MSG_FATAL && strstr(m.text, "cannot protect") != NULL,
                  "got message %u (%s); written through the link: %lld bytes", m.type, m.text,
                  (long long)st.st_size);
}
END_TEST

static void setup(void)
{
    ck_assert_ptr_nonnull(mkdtemp(dir));
    chmod(dir, 0755);
}

static void teardown(void)
{
    char cmd[PATH_MAX + 16];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0)
        fprintf(stderr, "cannot remove %s\n", dir);
    strcpy(dir, "/tmp/ccsb-init-order-XXXXXX");
}

int main(void)
{
    /* ccsb-init as laid out in the build tree (and by run_as_user.sh). */
    char self[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n <= 0)
        return 99;
    self[n] = '\0';
    char *slash = strrchr(self, '/');
    *slash = '\0';
    snprintf(helper, sizeof helper, "%s/../../helper/ccsb-init", self);
    if (access(helper, X_OK) != 0 || !find_bwrap()) {
        printf("SKIP: no ccsb-init at %s or no bwrap\n", helper);
        return 77;
    }
    Suite *su = suite_create("init_order");
    TCase *tc = tcase_create("order");
    tcase_set_timeout(tc, 60);
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, in_order_runs);
    tcase_add_test(tc, exec_before_setup_runs_nothing);
    tcase_add_test(tc, exec_before_guard_runs_nothing);
    tcase_add_test(tc, second_setup_is_refused);
    tcase_add_test(tc, guard_after_ready_changes_nothing);
    tcase_add_test(tc, gated_exec_waits_for_go);
    tcase_add_test(tc, protected_path_swapped_for_symlink);
    suite_add_tcase(su, tc);
    SRunner *sr = srunner_create(su);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
