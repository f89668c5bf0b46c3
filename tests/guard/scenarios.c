/*
 * The attack list of issue 5 and the things that must keep working. Every
 * function runs inside the guarded child (cwd = workdir, which holds ok.txt,
 * sub/, and an existing old.pem placed by the host before the run).
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <linux/filter.h>
#include <linux/io_uring.h>
#include <linux/seccomp.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"

#ifndef __O_TMPFILE
#define __O_TMPFILE 020000000
#endif
#ifndef RENAME_NOREPLACE
#define RENAME_NOREPLACE 1
#define RENAME_EXCHANGE 2
#define RENAME_WHITEOUT 4
#endif

int expect_fail(int rc, int err, const char *what)
{
    if (rc >= 0) {
        fprintf(stderr, "  %s: succeeded, must fail\n", what);
        return 1;
    }
    if (err && errno != err) {
        fprintf(stderr, "  %s: failed with %s, expected %s\n", what, strerror(errno),
                strerror(err));
        return 1;
    }
    return 0;
}

int expect_errno_in(int rc, const char *what, int e1, int e2)
{
    if (rc >= 0) {
        fprintf(stderr, "  %s: succeeded, must fail\n", what);
        return 1;
    }
    if (errno != e1 && errno != e2) {
        fprintf(stderr, "  %s: failed with %s\n", what, strerror(errno));
        return 1;
    }
    return 0;
}

int exists(const char *path)
{
    struct stat st;
    return fstatat(AT_FDCWD, path, &st, AT_SYMLINK_NOFOLLOW) == 0;
}

static int absent(const char *path)
{
    if (!exists(path))
        return 0;
    fprintf(stderr, "  %s exists inside the sandbox\n", path);
    return 1;
}

/* ---- bind: the supervisor performs it, with its own privileges ---- */

/* A full sockaddr_storage of AF_UNIX is longer than the kernel accepts: the
 * answer is EINVAL, and the supervisor copying the name must not overrun. */
static int bind_oversized(void)
{
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) < 0) {
        fprintf(stderr, "  socketpair: %s\n", strerror(errno));
        return 1;
    }
    struct sockaddr_storage ss;
    memset(&ss, 'a', sizeof ss);
    ss.ss_family = AF_UNIX;
    int f = expect_fail(bind(sv[0], (struct sockaddr *)&ss, sizeof ss), EINVAL,
                        "bind of a 128-byte AF_UNIX address");
    close(sv[0]);
    close(sv[1]);
    return f;
}

static int has_net_bind_cap(void)
{
    struct __user_cap_header_struct h = {_LINUX_CAPABILITY_VERSION_3, 0};
    struct __user_cap_data_struct d[2];
    if (syscall(SYS_capget, &h, d) < 0)
        return 1; /* unknown: do not bind a real low port */
    return (d[0].effective >> CAP_NET_BIND_SERVICE) & 1;
}

/* An IPv4 socket takes AF_UNSPEC + INADDR_ANY as AF_INET: a low port must
 * be refused however the family is spelled, when the command may not. */
static int bind_low_port_unspec(void)
{
    FILE *fp = fopen("/proc/sys/net/ipv4/ip_unprivileged_port_start", "r");
    int start = 1024;
    if (fp) {
        if (fscanf(fp, "%d", &start) != 1)
            start = 1024;
        fclose(fp);
    }
    if (has_net_bind_cap() || start <= 80)
        return 0; /* binding port 80 is allowed here: nothing to prove */
    int f = 0;
    const sa_family_t fams[] = {AF_INET, AF_UNSPEC};
    for (unsigned i = 0; i < 2; i++) {
        int s = socket(AF_INET, SOCK_STREAM, 0);
        if (s < 0) {
            fprintf(stderr, "  socket(AF_INET): %s\n", strerror(errno));
            return 1;
        }
        struct sockaddr_in a = {.sin_family = fams[i], .sin_port = htons(80)};
        a.sin_addr.s_addr = fams[i] == AF_INET ? htonl(INADDR_LOOPBACK) : htonl(INADDR_ANY);
        f |= expect_fail(bind(s, (struct sockaddr *)&a, sizeof a), EACCES,
                         fams[i] == AF_INET ? "bind AF_INET port 80" : "bind AF_UNSPEC port 80");
        close(s);
    }
    return f;
}

/* ---- direct creation ---- */

static int abs_path(void)
{
    char cwd[4096], p[4200];
    if (!getcwd(cwd, sizeof cwd))
        return 1;
    snprintf(p, sizeof p, "%s/.env", cwd);
    int f = 0;
    f |= expect_fail(open(p, O_CREAT | O_WRONLY, 0644), EACCES, "open(abs .env)");
    f |= expect_fail(open(p, O_CREAT | O_EXCL | O_WRONLY, 0644), EACCES, "O_EXCL");
    f |= expect_fail((int)syscall(SYS_creat, "x.key", 0644), EACCES, "creat(x.key)");
    f |= expect_fail(openat(AT_FDCWD, "sub/../x.pem", O_CREAT | O_RDWR, 0600), EACCES,
                     "sub/../x.pem");
    f |= expect_fail(open("./sub/./../.env", O_CREAT | O_WRONLY | O_TRUNC, 0644), EACCES,
                     "./sub/./../.env");
    return f | absent(".env") | absent("x.key") | absent("x.pem");
}

static int relative_up(void)
{
    char cwd[4096], rel[4200];
    if (!getcwd(cwd, sizeof cwd) || chdir("sub") < 0)
        return 1;
    const char *base = strrchr(cwd, '/') + 1;
    snprintf(rel, sizeof rel, "../../%s/.env", base);
    int f = expect_fail(open(rel, O_CREAT | O_WRONLY, 0644), EACCES, rel);
    f |= expect_fail(open("../y.key", O_CREAT | O_WRONLY, 0644), EACCES, "../y.key");
    /* Far more ".." than depth: clamps at the root like the kernel. */
    char deep[4200] = "";
    for (int i = 0; i < 60; i++)
        strcat(deep, "../");
    strcat(deep, cwd + 1);
    strcat(deep, "/z.pem");
    f |= expect_fail(open(deep, O_CREAT | O_WRONLY, 0644), EACCES, "../../../.../z.pem");
    if (chdir("..") < 0)
        return 1;
    return f | absent(".env") | absent("y.key") | absent("z.pem");
}

static int dirfd_relative(void)
{
    int d = open(".", O_RDONLY | O_DIRECTORY);
    int s = open("sub", O_PATH | O_DIRECTORY);
    int f = expect_fail(openat(d, "x.pem", O_CREAT | O_WRONLY, 0644), EACCES, "openat(dirfd)");
    f |= expect_fail(openat(s, "../x.pem", O_CREAT | O_WRONLY, 0644), EACCES,
                     "openat(O_PATH subdir, ../x.pem)");
    f |= expect_fail(mknodat(d, "n.key", S_IFREG | 0644, 0), EACCES, "mknodat");
    /* A legitimate dirfd-relative create still works. */
    int ok = openat(s, "../fine.txt", O_CREAT | O_WRONLY, 0644);
    if (ok < 0) {
        fprintf(stderr, "  openat(sub, ../fine.txt): %s\n", strerror(errno));
        f = 1;
    } else {
        close(ok);
    }
    close(d);
    close(s);
    return f | absent("x.pem") | absent("n.key") | (exists("fine.txt") ? 0 : 1);
}

static int trailing_slash(void)
{
    int f = expect_errno_in(open(".env/", O_CREAT | O_WRONLY, 0644), ".env/", EISDIR, EACCES);
    return f | absent(".env");
}

/* ---- rename, link, symlink ---- */

static int renames(void)
{
    int f = 0;
    f |= expect_fail(rename("ok.txt", "a.pem"), EACCES, "rename");
    f |= expect_fail(renameat(AT_FDCWD, "ok.txt", AT_FDCWD, "sub/b.key"), EACCES, "renameat");
    unsigned flags[] = {0, RENAME_NOREPLACE, RENAME_EXCHANGE, RENAME_WHITEOUT};
    for (unsigned i = 0; i < 4; i++) {
        const char *to = flags[i] == RENAME_EXCHANGE ? "old.pem" : "c.pem";
        long r = syscall(SYS_renameat2, AT_FDCWD, "ok.txt", AT_FDCWD, to, flags[i]);
        char what[64];
        snprintf(what, sizeof what, "renameat2(flags=%u)", flags[i]);
        f |= expect_errno_in((int)r, what, EACCES, EPERM);
    }
    /* Exchange where the *old* name would receive the other object. */
    f |= expect_errno_in((int)syscall(SYS_renameat2, AT_FDCWD, "old.pem", AT_FDCWD, "ok.txt",
                                      RENAME_EXCHANGE),
                         "exchange old.pem<->ok.txt", EACCES, EPERM);
    if (!exists("ok.txt")) {
        fprintf(stderr, "  ok.txt vanished\n");
        f = 1;
    }
    /* Renames to ordinary names keep working. */
    if (rename("ok.txt", "moved.txt") < 0 || rename("moved.txt", "ok.txt") < 0) {
        fprintf(stderr, "  plain rename failed: %s\n", strerror(errno));
        f = 1;
    }
    return f | absent("a.pem") | absent("sub/b.key") | absent("c.pem");
}

static int links(void)
{
    int f = 0;
    f |= expect_fail(link("ok.txt", "h.key"), EACCES, "link");
    int fd = open("ok.txt", O_RDONLY);
    f |= expect_errno_in(linkat(fd, "", AT_FDCWD, "e.key", AT_EMPTY_PATH), "linkat(AT_EMPTY_PATH)",
                         EACCES, ENOENT);
    char p[64];
    snprintf(p, sizeof p, "/proc/self/fd/%d", fd);
    f |= expect_fail(linkat(AT_FDCWD, p, AT_FDCWD, "p.key", AT_SYMLINK_FOLLOW), EACCES,
                     "linkat(/proc/self/fd/N, AT_SYMLINK_FOLLOW)");
    /* The same route to an ordinary name works. */
    if (linkat(AT_FDCWD, p, AT_FDCWD, "hard.txt", AT_SYMLINK_FOLLOW) < 0) {
        fprintf(stderr, "  linkat via /proc/self/fd to hard.txt: %s\n", strerror(errno));
        f = 1;
    }
    close(fd);
    f |= expect_fail(symlink("ok.txt", "s.pem"), EACCES, "symlink s.pem");
    return f | absent("h.key") | absent("e.key") | absent("p.key") | absent("s.pem");
}

static int symlink_then_write(void)
{
    int f = 0;
    if (symlink("x.pem", "x") < 0) {
        fprintf(stderr, "  symlink x: %s\n", strerror(errno));
        return 1;
    }
    f |= expect_fail(open("x", O_CREAT | O_WRONLY | O_TRUNC, 0644), EACCES, "write through x");
    /* A chain of two links, the last one absolute. */
    char cwd[4096], t[4200];
    if (!getcwd(cwd, sizeof cwd))
        return 1;
    snprintf(t, sizeof t, "%s/sub/deep.key", cwd);
    if (symlink(t, "sub/l2") < 0 || symlink("sub/l2", "l1") < 0) {
        fprintf(stderr, "  symlink chain: %s\n", strerror(errno));
        return 1;
    }
    f |= expect_fail(open("l1", O_CREAT | O_WRONLY, 0644), EACCES, "write through l1->l2->key");
    /* O_NOFOLLOW on the link itself: ELOOP as the kernel says. */
    f |= expect_fail(open("x", O_CREAT | O_WRONLY | O_NOFOLLOW, 0644), ELOOP, "O_NOFOLLOW");
    return f | absent("x.pem") | absent("sub/deep.key");
}

static int tmpfile_link(void)
{
    int f = 0;
    int fd = open(".", __O_TMPFILE | O_DIRECTORY | O_RDWR, 04755);
    if (fd < 0) {
        fprintf(stderr, "  O_TMPFILE: %s\n", strerror(errno));
        return 1;
    }
    if (write(fd, "x", 1) != 1)
        f = 1;
    char p[64];
    snprintf(p, sizeof p, "/proc/self/fd/%d", fd);
    f |= expect_fail(linkat(AT_FDCWD, p, AT_FDCWD, "t.key", AT_SYMLINK_FOLLOW), EACCES,
                     "O_TMPFILE -> t.key");
    if (linkat(AT_FDCWD, p, AT_FDCWD, "t.txt", AT_SYMLINK_FOLLOW) < 0) {
        fprintf(stderr, "  O_TMPFILE -> t.txt: %s\n", strerror(errno));
        f = 1;
    }
    close(fd);
    struct stat st;
    if (stat("t.txt", &st) == 0 && (st.st_mode & (S_ISUID | S_ISGID))) {
        fprintf(stderr, "  t.txt has a set-ID bit: %o\n", st.st_mode);
        f = 1;
    }
    return f | absent("t.key");
}

static int fifos_and_nodes(void)
{
    int f = 0;
    f |= expect_fail(mkfifo("f.pem", 0644), EACCES, "mkfifo f.pem");
    f |= expect_fail(mknod("m.key", S_IFREG | 0644, 0), EACCES, "mknod m.key");
    f |= expect_fail(mknod("m2.key", S_IFIFO | 0644, 0), EACCES, "mknod fifo m2.key");
    f |= expect_fail(mkdir("secrets", 0755), EACCES, "mkdir secrets (directory-shaped glob)");
    /* A FIFO with a fine name works, including a blocking open for write
     * that waits for its reader. */
    if (mkfifo("pipe.fifo", 0644) < 0) {
        fprintf(stderr, "  mkfifo pipe.fifo: %s\n", strerror(errno));
        return 1;
    }
    pid_t pid = fork();
    if (pid == 0) {
        usleep(100 * 1000);
        int r = open("pipe.fifo", O_RDONLY);
        char b[4];
        _exit(r >= 0 && read(r, b, 2) == 2 && memcmp(b, "hi", 2) == 0 ? 0 : 1);
    }
    int w = open("pipe.fifo", O_WRONLY | O_CREAT, 0644); /* trapped: waits for the reader */
    if (w < 0 || write(w, "hi", 2) != 2) {
        fprintf(stderr, "  writing the FIFO: %s\n", strerror(errno));
        f = 1;
    }
    if (w >= 0)
        close(w);
    int st = 0;
    waitpid(pid, &st, 0);
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
        fprintf(stderr, "  FIFO reader failed\n");
        f = 1;
    }
    return f | absent("f.pem") | absent("m.key") | absent("m2.key") | absent("secrets");
}

static int unix_bind(void)
{
    int f = 0;
    f |= expect_fail(socket(AF_UNIX, SOCK_STREAM, 0), EPERM, "socket(AF_UNIX)");
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) < 0) {
        fprintf(stderr, "  socketpair: %s\n", strerror(errno));
        return 1;
    }
    struct sockaddr_un a = {.sun_family = AF_UNIX};
    strcpy(a.sun_path, "s.pem");
    f |= expect_fail(bind(sv[0], (struct sockaddr *)&a, sizeof a), EACCES, "bind s.pem");
    strcpy(a.sun_path, "ok.sock");
    if (bind(sv[1], (struct sockaddr *)&a, sizeof a) < 0) {
        fprintf(stderr, "  bind ok.sock: %s\n", strerror(errno));
        f = 1;
    }
    close(sv[0]);
    close(sv[1]);
    return f | absent("s.pem") | (exists("ok.sock") ? 0 : 1);
}

/* ---- static filter ---- */

static int kernel_surface(void)
{
    int f = 0;
    struct io_uring_params p;
    memset(&p, 0, sizeof p);
    f |= expect_fail((int)syscall(__NR_io_uring_setup, 8, &p), EPERM, "io_uring_setup");
    struct {
        unsigned long long flags, mode, resolve;
    } how = {O_CREAT | O_WRONLY, 0644, 0};
    f |= expect_fail((int)syscall(437 /* openat2 */, AT_FDCWD, "o2.pem", &how, sizeof how),
                     ENOSYS, "openat2");
    f |= expect_fail((int)syscall(SYS_unshare, 0x10000000 /* CLONE_NEWUSER */), EPERM,
                     "unshare(CLONE_NEWUSER)");
    f |= expect_fail((int)syscall(SYS_bpf, 0, NULL, 0), EPERM, "bpf");
    f |= expect_fail((int)syscall(SYS_userfaultfd, 0), EPERM, "userfaultfd");
    f |= expect_fail((int)syscall(SYS_keyctl, 0, 0, 0), EPERM, "keyctl");
    f |= expect_fail(chmod("ok.txt", 04755), EPERM, "chmod u+s");
    f |= expect_fail(chmod("ok.txt", 02755), EPERM, "chmod g+s");
    if (chmod("ok.txt", 0640) < 0) {
        fprintf(stderr, "  plain chmod: %s\n", strerror(errno));
        f = 1;
    }
    /* A second listener would let the command answer its own calls. */
    struct sock_filter allow = {0x06, 0, 0, 0x7fff0000};
    struct sock_fprog prog = {1, &allow};
    f |= expect_errno_in((int)syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER,
                                      SECCOMP_FILTER_FLAG_NEW_LISTENER, &prog),
                         "seccomp(NEW_LISTENER)", EPERM, EBUSY);
    return f | absent("o2.pem");
}

static int ptrace_sibling(void)
{
    pid_t sib = fork();
    if (sib == 0) {
        pause();
        _exit(0);
    }
    int f = expect_fail((int)ptrace(PTRACE_ATTACH, sib, 0, 0), EPERM, "ptrace(sibling)");
    char buf[8];
    struct iovec l = {buf, sizeof buf}, r = {(void *)&f, sizeof buf};
    f |= expect_fail((int)process_vm_readv(sib, &l, 1, &r, 1, 0), EPERM, "process_vm_readv");
    kill(sib, SIGKILL);
    waitpid(sib, NULL, 0);
    return f;
}

static int foreign_arch(void)
{
    int f = 0;
    /* x32 and the i386 entry point must kill the process, not run. */
    for (int kind = 0; kind < 2; kind++) {
        pid_t pid = fork();
        if (pid == 0) {
            if (kind == 0) {
                syscall(0x40000000 | SYS_getpid);
            } else {
                long ret;
                __asm__ volatile("int $0x80" : "=a"(ret) : "a"(20 /* i386 getpid */) : "memory");
            }
            _exit(0);
        }
        int st = 0;
        waitpid(pid, &st, 0);
        if (!WIFSIGNALED(st) || WTERMSIG(st) != SIGSYS) {
            fprintf(stderr, "  %s syscall was not killed (status %#x)\n",
                    kind ? "i386" : "x32", st);
            f = 1;
        }
    }
    return f;
}

/* ---- races ---- */

static char flip_buf[64];
static atomic_int flip_stop;
static atomic_long flips;

static void *flipper(void *arg)
{
    (void)arg;
    long i = 0;
    while (!atomic_load(&flip_stop)) {
        memcpy(flip_buf, (i & 1) ? "x.pem\0" : "ok.txt", 7);
        i++;
    }
    atomic_store(&flips, i);
    return NULL;
}

/* The path is copied once: whatever the other thread writes after that
 * cannot change the name that is checked and created. */
static int toctou_buffer(void)
{
    memcpy(flip_buf, "ok.txt", 7);
    pthread_t th;
    atomic_store(&flip_stop, 0);
    pthread_create(&th, NULL, flipper, NULL);
    for (int n = 0; n < 4000; n++) {
        int fd = open(flip_buf, O_CREAT | O_WRONLY, 0644);
        if (fd >= 0)
            close(fd);
        unlink("ok.txt"); /* so that the next open creates again */
    }
    for (int spin = 0; spin < 1000; spin++) /* at least 100,000 flips overall */
        usleep(100);
    atomic_store(&flip_stop, 1);
    pthread_join(th, NULL);
    if (atomic_load(&flips) < 100000) {
        fprintf(stderr, "  only %ld flips\n", atomic_load(&flips));
        return 1;
    }
    return absent("x.pem");
}

static void *swapper(void *arg)
{
    /* Turns "p" into a directory and a symlink to a directory outside the
     * workdir (CCSB_GUARD_OUTSIDE, read-only inside bwrap) in turn, and "q"
     * into a file and a dangling link to q.pem. */
    const char *outside = arg;
    for (int i = 0; i < 3000 && !atomic_load(&flip_stop); i++) {
        if (i & 1) {
            rename("p", "p.dir");
            if (symlink(outside, "p.tmp") == 0)
                rename("p.tmp", "p");
            if (symlink("q.pem", "q.tmp") == 0)
                rename("q.tmp", "q");
        } else {
            unlink("p");
            rename("p.dir", "p");
            int fd = open("q.tmp", O_CREAT | O_WRONLY, 0644);
            if (fd >= 0) {
                close(fd);
                rename("q.tmp", "q");
            }
        }
    }
    atomic_store(&flip_stop, 1);
    return NULL;
}

static int toctou_symlink(void)
{
    if (mkdir("p", 0755) < 0)
        return 1;
    const char *outside = getenv("CCSB_GUARD_OUTSIDE");
    if (!outside)
        return 1;
    atomic_store(&flip_stop, 0);
    pthread_t th;
    pthread_create(&th, NULL, swapper, (void *)outside);
    int n = 0;
    while (!atomic_load(&flip_stop) && n < 20000) {
        int fd = open("p/w.pem", O_CREAT | O_WRONLY, 0644);
        if (fd >= 0) {
            fprintf(stderr, "  created p/w.pem\n");
            close(fd);
        }
        fd = open("q", O_CREAT | O_WRONLY, 0644);
        if (fd >= 0)
            close(fd);
        n++;
    }
    atomic_store(&flip_stop, 1);
    pthread_join(th, NULL);
    char ow[4200];
    snprintf(ow, sizeof ow, "%s/w.pem", outside);
    return absent("q.pem") | absent("p/w.pem") | absent("p.dir/w.pem") | absent(ow);
}

/* ---- fail closed ---- */

static int after_supervisor_death(void)
{
    /* The harness killed the supervisor before this runs. */
    int f = expect_fail(open("after.txt", O_CREAT | O_WRONLY, 0644), ENOSYS, "create after death");
    f |= expect_fail(rename("ok.txt", "ren.txt"), ENOSYS, "rename after death");
    /* Calls that are not trapped still work. */
    int fd = open("ok.txt", O_RDONLY);
    if (fd < 0) {
        fprintf(stderr, "  plain open: %s\n", strerror(errno));
        f = 1;
    } else {
        close(fd);
    }
    return f | absent("after.txt") | absent("ren.txt");
}

/* ---- must keep working ---- */

static int umask_owner(void)
{
    umask(022);
    int fd = open("n", O_CREAT | O_WRONLY, 0666);
    if (fd < 0)
        return 1;
    close(fd);
    umask(077);
    if (mkdir("d77", 0777) < 0)
        return 1;
    umask(022);
    struct stat a, b;
    if (stat("n", &a) < 0 || stat("d77", &b) < 0)
        return 1;
    int f = 0;
    if ((a.st_mode & 07777) != 0644) {
        fprintf(stderr, "  n has mode %o, want 644\n", a.st_mode & 07777);
        f = 1;
    }
    if ((b.st_mode & 07777) != 0700) {
        fprintf(stderr, "  d77 has mode %o, want 700\n", b.st_mode & 07777);
        f = 1;
    }
    if (a.st_uid != geteuid() || a.st_gid != getegid()) {
        fprintf(stderr, "  n is owned by %d:%d, want %d:%d\n", (int)a.st_uid, (int)a.st_gid,
                (int)geteuid(), (int)getegid());
        f = 1;
    }
    /* O_CREAT of a set-ID mode is stripped, not honoured. */
    fd = open("suid.bin", O_CREAT | O_WRONLY, 04755);
    if (fd < 0 || fstat(fd, &a) < 0 || (a.st_mode & (S_ISUID | S_ISGID))) {
        fprintf(stderr, "  suid.bin: %s mode %o\n", strerror(errno), a.st_mode);
        f = 1;
    }
    if (fd >= 0)
        close(fd);
    return f;
}

const struct scenario guard_scenarios[] = {
    /* attacks */
    {"redirect", NULL, "if echo x > .env; then exit 1; fi; test ! -e .env",
     "file-write-create", ".env", {NULL}, 0, 0},
    {"cp", NULL, "if cp ok.txt .env 2>/dev/null; then exit 1; fi; test ! -e .env",
     "file-write-create", ".env", {NULL}, 0, 0},
    {"python-open", NULL,
     "if /usr/bin/python3 -c \"open('.env','w').write('x')\" 2>/dev/null; then exit 1; fi",
     "file-write-create", ".env", {NULL}, NEEDS_PYTHON, 0},
    {"absolute-relative", abs_path, NULL, "file-write-create", ".env", {NULL}, 0, 0},
    {"dotdot", relative_up, NULL, "file-write-create", ".env", {NULL}, 0, 0},
    {"dirfd", dirfd_relative, NULL, "file-write-create", "x.pem", {"fine.txt"}, 0, 0},
    {"trailing-slash", trailing_slash, NULL, NULL, NULL, {NULL}, 0, 0},
    {"mv", NULL, "echo x > ok2.txt && if mv ok2.txt a.pem 2>/dev/null; then exit 1; fi",
     "file-rename", "a.pem", {"ok2.txt"}, 0, 0},
    {"renames", renames, NULL, "file-rename", ".pem", {"ok.txt"}, 0, 0},
    {"links", links, NULL, "file-link", ".key", {"hard.txt"}, 0, 0},
    {"ln-s", NULL, "if ln -s ok s.pem 2>/dev/null; then exit 1; fi", "file-write-create",
     "s.pem", {NULL}, 0, 0},
    {"symlink-write", symlink_then_write, NULL, "file-write-create", "x.pem", {"x"}, 0, 0},
    {"tmpfile-link", tmpfile_link, NULL, "file-link", "t.key", {"t.txt"}, 0, 0},
    {"fifo-mknod", fifos_and_nodes, NULL, "file-write-create", "f.pem", {"pipe.fifo"}, 0, 0},
    {"unix-bind", unix_bind, NULL, "file-write-create", "s.pem", {"ok.sock"}, 0, 0},
    {"bind-oversized", bind_oversized, NULL, NULL, NULL, {NULL}, 0, 0},
    {"bind-low-port-unspec", bind_low_port_unspec, NULL, NULL, NULL, {NULL}, 0, 0},
    {"kernel-surface", kernel_surface, NULL, "syscall", "io_uring_setup", {NULL}, 0, 0},
    {"ptrace", ptrace_sibling, NULL, "syscall", "ptrace", {NULL}, 0, 0},
    {"foreign-arch", foreign_arch, NULL, NULL, NULL, {NULL}, 0, 0},
    {"toctou-buffer", toctou_buffer, NULL, NULL, NULL, {NULL}, 0, 0},
    {"toctou-symlink", toctou_symlink, NULL, "file-write-create", "w.pem", {NULL}, 0, 0},
    {"git-checkout-key", NULL,
     "git checkout -q keys 2>err.log; grep -q \"unable to create file server.key\" err.log && "
     "test ! -e server.key",
     "file-write-create", "server.key", {NULL}, NEEDS_GIT, 0,
     "git init -q && git add ok.txt && git -c user.email=t@t -c user.name=t commit -qm a && "
     "git checkout -qb keys && echo k > server.key && git add server.key && "
     "git -c user.email=t@t -c user.name=t commit -qm k && git checkout -q - && "
     "test ! -e server.key"},
    /* prot.txt is read-only bind-mounted over itself by the harness: a
     * rename done for the target must not replace the file under it. */
    {"mount-protected", NULL,
     "echo evil > x && if mv -f x prot.txt 2>/dev/null; then exit 1; fi; "
     "test \"$(cat prot.txt)\" = orig",
     NULL, NULL, {"prot.txt"}, NEEDS_BWRAP, 0},
    /* Missing protected paths below guarded/ (the harness's path rules):
     * nothing may create them, by any route. */
    {"protected-missing", NULL,
     "cd guarded && "
     "if echo x > .bashrc; then exit 1; fi; "
     "if mkdir .vscode; then exit 1; fi; "
     "if mkdir -p .git/hooks; then exit 1; fi; "
     "if ln -s .bashrc l && echo x > l; then exit 1; fi; "
     "echo y > y && if mv y .bashrc; then exit 1; fi; "
     "if ln y .vscode; then exit 1; fi; "
     "if mkfifo .bashrc; then exit 1; fi; "
     "mkdir d && mkdir d/hooks && if mv d .git; then exit 1; fi; "
     "test ! -e .bashrc && test ! -e .vscode && test ! -e .git && test -d d/hooks",
     "file-write-create", ".bashrc", {"guarded/y"}, 0, 0},
    /* ... and when the host makes them during the session, the sandbox can
     * neither add to them, replace them, move them away nor link them. */
    {"protected-host-made", NULL,
     "cd guarded && "
     "if echo x > .git/hooks/pre-commit; then exit 1; fi; "
     "if mkdir .git/hooks/d; then exit 1; fi; "
     "echo c > c && if mv c .git/config; then exit 1; fi; "
     "if echo x >> .git/config; then exit 1; fi; "
     "if mv .git g2; then exit 1; fi; "
     "if ln .git/config l2; then exit 1; fi; "
     "if mkdir -p .vscode/a/b; then exit 1; fi; "
     "if echo x > .vscode/tasks.json; then exit 1; fi; "
     "test \"$(cat .git/config)\" = orig && test ! -e .git/hooks/pre-commit && "
     "echo d > .git/description",
     "file-write-create", "pre-commit", {"guarded/.git/description"}, 0, 0,
     "mkdir -p guarded/.git/hooks guarded/.vscode && echo orig > guarded/.git/config"},
    /* An unsearchable chain node (the sandbox owns it and may chmod it)
     * must not make the rule look the other way: a directory fd held
     * from before still names the protected directory. */
    {"protected-chmod-ancestor", NULL,
     "cd guarded && if /usr/bin/python3 -c \""
     "import os, sys\n"
     "made = []\n"
     "for held, parent, name in (('.git/hooks', '.git', 'pre-commit'), ('.vscode', '.', 'tasks.json')):\n"
     "    h = os.open(held, os.O_PATH | os.O_DIRECTORY)\n"
     "    p = os.open(parent, os.O_RDONLY | os.O_DIRECTORY)\n"
     "    os.fchmod(p, 0)\n"
     "    try:\n"
     "        os.close(os.open(name, os.O_CREAT | os.O_WRONLY, 0o755, dir_fd=h)); made.append(name)\n"
     "    except OSError:\n"
     "        pass\n"
     "    os.fchmod(p, 0o755)\n"
     "sys.exit(1 if made else 0)\"; then :; else exit 1; fi; "
     "test ! -e .git/hooks/pre-commit && test ! -e .vscode/tasks.json",
     "file-write-create", "pre-commit", {NULL}, NEEDS_PYTHON, 0,
     "mkdir -p guarded/.git/hooks guarded/.vscode"},
    {"protected-magic-fd", NULL,
     "cd guarded && if /usr/bin/python3 -c \""
     "import os; p = os.open('.git/config', os.O_PATH); "
     "os.write(os.open('/proc/self/fd/%d' % p, os.O_WRONLY | os.O_CREAT), b'evil')\"; "
     "then exit 1; fi; test \"$(cat .git/config)\" = orig",
     "file-write-create", "/proc/self/fd/", {NULL}, NEEDS_PYTHON, 0,
     "mkdir -p guarded/.git && echo orig > guarded/.git/config"},
    /* A protected file that exists (in a session it is also bound
     * read-only; here, as after the host replaced it and the bind
     * detached, only the guard holds it): no route writes it. */
    {"protected-existing-writes", NULL,
     "cd guarded && if /usr/bin/python3 -c \""
     "import os, sys\n"
     "f = '.git/config'\n"
     "os.symlink(f, 'lnk')\n"
     "r = os.open(f, os.O_RDONLY)\n"
     "tries = [lambda: os.open(f, os.O_WRONLY), lambda: os.open(f, os.O_RDWR | os.O_APPEND),\n"
     "         lambda: os.open(f, os.O_RDONLY | os.O_TRUNC), lambda: os.truncate(f, 0),\n"
     "         lambda: os.open('lnk', os.O_WRONLY),\n"
     "         lambda: os.open('/proc/self/fd/%d' % r, os.O_WRONLY),\n"
     "         lambda: os.open('config', os.O_WRONLY, dir_fd=os.open('.git', os.O_PATH))]\n"
     "bad = 0\n"
     "for i, t in enumerate(tries):\n"
     "    try:\n"
     "        t(); print('route', i, 'opened'); bad = 1\n"
     "    except OSError as e:\n"
     "        bad |= e.errno != 13\n"
     "sys.exit(bad)\"; then :; else exit 1; fi; test \"$(cat .git/config)\" = orig",
     "file-write", "config", {NULL}, NEEDS_PYTHON, 0,
     "mkdir -p guarded/.git && echo orig > guarded/.git/config"},
    /* An existing match of a glob (made by the host; a session also binds
     * those present at launch read-only) is not written either. */
    {"glob-existing-writes", NULL,
     "if echo x >> old.pem; then exit 1; fi; "
     "if /usr/bin/python3 -c \"import os; os.open('old.pem', os.O_WRONLY)\"; then exit 1; fi; "
     "test \"$(cat old.pem)\" = old",
     "file-write", "old.pem", {NULL}, NEEDS_PYTHON, 0},
    {"supervisor-killed", after_supervisor_death, NULL, NULL, NULL, {"ok.txt"}, 0, 1},
    /* Told to finish while the command still runs (the session stops
     * with commands alive): every trapped call is still answered. */
    {"finish-while-running", NULL,
     "sleep 0.2; if echo s > .env 2>/dev/null; then exit 1; fi; "
     "echo ok > fine.txt && mkdir d && test -d d && test ! -e .env",
     "file-write-create", ".env", {"fine.txt", "d"}, 0, 0, NULL, FINISH_EARLY},
    /* A listener that arrives after the thread ended: refused and closed,
     * so the calls fail at once instead of waiting for the teardown. */
    {"listener-after-end", NULL,
     "if echo ok > fine.txt 2>/dev/null; then exit 1; fi; "
     "if echo s > .env 2>/dev/null; then exit 1; fi; test ! -e fine.txt",
     "guard-error", "", {NULL}, 0, 0, NULL, FINISH_BEFORE},
    /* must keep working */
    {"dev-null-stdout", NULL,
     "echo x > /dev/null && echo y > /dev/stdout && echo z > /dev/stderr && "
     "echo w >> /dev/fd/1 && echo v > /proc/self/fd/2",
     NULL, NULL, {NULL}, 0, 0},
    /* Opens for writing without O_CREAT are answered by the supervisor
     * too: the kernel's own results, and nothing is ever created. */
    {"write-opens", NULL,
     "mkfifo ff && /usr/bin/python3 -c \""
     "import errno, os, sys\n"
     "def err(fn):\n"
     "    try:\n"
     "        fn(); return 0\n"
     "    except OSError as e:\n"
     "        return e.errno\n"
     "want = []\n"
     "def check(what, got, exp):\n"
     "    if got != exp: want.append('%s: got %r want %r' % (what, got, exp))\n"
     "fd = os.open('ok.txt', os.O_WRONLY | os.O_APPEND); os.write(fd, b'more\\n'); os.close(fd)\n"
     "check('append', open('ok.txt').read(), 'ok\\nmore\\n')\n"
     "fd = os.open('ok.txt', os.O_RDWR); check('rdwr read', os.read(fd, 3), b'ok\\n')\n"
     "os.write(fd, b'MORE'); os.close(fd)\n"
     "check('rdwr write', open('ok.txt').read(), 'ok\\nMORE\\n')\n"
     "os.truncate('ok.txt', 3); check('truncate', open('ok.txt').read(), 'ok\\n')\n"
     "os.close(os.open('ok.txt', os.O_RDONLY | os.O_TRUNC)); check('O_TRUNC', os.path.getsize('ok.txt'), 0)\n"
     "check('missing', err(lambda: os.open('nope', os.O_WRONLY)), errno.ENOENT)\n"
     "check('not made', os.path.exists('nope'), False)\n"
     "check('truncate missing', err(lambda: os.truncate('nope', 0)), errno.ENOENT)\n"
     "check('dir', err(lambda: os.open('sub', os.O_WRONLY)), errno.EISDIR)\n"
     "check('truncate dir', err(lambda: os.truncate('sub', 0)), errno.EISDIR)\n"
     "check('file/', err(lambda: os.open('ok.txt/', os.O_WRONLY)), errno.ENOTDIR)\n"
     "check('O_DIRECTORY', err(lambda: os.open('ok.txt', os.O_RDWR | os.O_DIRECTORY)), errno.ENOTDIR)\n"
     "os.symlink('ok.txt', 'sl')\n"
     "check('O_NOFOLLOW', err(lambda: os.open('sl', os.O_WRONLY | os.O_NOFOLLOW)), errno.ELOOP)\n"
     "os.close(os.open('sl', os.O_WRONLY))\n"
     "check('fifo rdwr', err(lambda: os.close(os.open('ff', os.O_RDWR))), 0)\n"
     "check('fifo no reader', err(lambda: os.open('ff', os.O_WRONLY | os.O_NONBLOCK)), errno.ENXIO)\n"
     "check('dev null', err(lambda: os.close(os.open('/dev/null', os.O_RDWR))), 0)\n"
     "check('stdout', err(lambda: os.close(os.open('/proc/self/fd/1', os.O_WRONLY))), 0)\n"
     "print('\\n'.join(want), file=sys.stderr); sys.exit(1 if want else 0)\"",
     NULL, NULL, {"ok.txt"}, NEEDS_PYTHON, 0},
    {"ok-txt", NULL, "echo hello > ok3.txt && test \"$(cat ok3.txt)\" = hello", NULL, NULL,
     {"ok3.txt"}, 0, 0},
    {"mktemp", NULL, "f=$(TMPDIR=$PWD mktemp) && test -f \"$f\" && d=$(TMPDIR=$PWD mktemp -d) "
     "&& test -d \"$d\"", NULL, NULL, {NULL}, 0, 0},
    {"umask-owner", umask_owner, NULL, NULL, NULL, {"n"}, 0, 0},
    {"sh-umask", NULL, "umask 022; touch n2; test \"$(stat -c %a n2)\" = 644", NULL, NULL,
     {"n2"}, 0, 0},
    {"git", NULL,
     "mkdir repo && cd repo && git init -q && echo a > a.txt && mkdir -p s/t && echo b > s/t/b "
     "&& git add -A && git -c user.email=t@t -c user.name=t commit -qm init && "
     "git log --oneline | grep -q init",
     NULL, NULL, {"repo/.git/HEAD"}, NEEDS_GIT, 0},
    {"protected-git-subdir", NULL,
     "cd guarded && mkdir sub && cd sub && git init -q && echo a > a && git add a && "
     "git -c user.email=t@t -c user.name=t commit -qm a && git config x.y z",
     NULL, NULL, {"guarded/sub/.git/hooks"}, NEEDS_GIT, 0},
    {"venv", NULL, "/usr/bin/python3 -m venv --without-pip venv && venv/bin/python -c 'print(1)'",
     NULL, NULL, {"venv/bin/python"}, NEEDS_PYTHON, 0},
    {"cc", NULL,
     "printf 'int main(void){return 0;}\\n' > m.c && cc -c m.c -o m.o && cc m.o -o m && ./m",
     NULL, NULL, {"m.o", "m"}, NEEDS_CC, 0},
    {"tar", NULL,
     "mkdir -p t/a/b && for i in 1 2 3 4 5; do echo $i > t/a/b/f$i; done && ln -s f1 t/a/b/l "
     "&& tar cf t.tar t && rm -rf t && tar xf t.tar && test -L t/a/b/l && test -f t/a/b/f5",
     NULL, NULL, {"t/a/b/f1"}, 0, 0},
};

const unsigned guard_n_scenarios = sizeof guard_scenarios / sizeof guard_scenarios[0];
