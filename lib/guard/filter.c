/*
 * The sandbox-side filter: one seccomp program, built with libseccomp and
 * exported to memory so the process that loads it (after fork, just before
 * exec) does not allocate.
 *
 * One program holds both halves on purpose: with a single filter there is
 * no cross-filter precedence to reason about (the kernel runs every filter
 * and keeps the highest-precedence action, KILL > TRAP > ERRNO > USER_NOTIF
 * > ... > ALLOW), and each syscall gets exactly one non-default action
 * here. Filters the command adds later can only make its own calls fail.
 */
#include "guard/guard.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <seccomp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ccsandbox/ccsandbox.h"
#include "guard/program.h"
#include "guard/sysnr.h"
#include "util/err.h"
#include "util/fd.h"

struct guard_program {
    struct sock_filter *insns;
    unsigned short len;
    unsigned long flags; /* seccomp(2) SET_MODE_FILTER flags */
};

struct rule_ctx {
    scmp_filter_ctx ctx;
    char *err;
    size_t errlen;
    int failed;
};

static int add(struct rule_ctx *rc, uint32_t action, int nr, const char *name,
               unsigned n_args, const struct scmp_arg_cmp *args)
{
    if (rc->failed)
        return -1;
    int r = seccomp_rule_add_array(rc->ctx, action, nr, n_args, args);
    if (r < 0) {
        rc->failed = 1;
        errf(rc->err, rc->errlen, CCSB_E_INTERNAL, "seccomp rule for %s: %s", name,
             strerror(-r));
        return -1;
    }
    return 0;
}

/*
 * An int or unsigned int argument is compared on its low 32 bits only: the
 * kernel truncates the register, so an exact 64-bit compare would let
 * socket(0x100000001, ...) -- AF_UNIX to the kernel -- slip past the rule.
 */
#define INT_ARG 0xffffffffULL

#define RULE0(rc, act, nr) add(rc, act, nr, #nr, 0, NULL)
#define RULE1(rc, act, nr, a) \
    do { \
        struct scmp_arg_cmp c_[] = {a}; \
        add(rc, act, nr, #nr, 1, c_); \
    } while (0)
#define RULE2(rc, act, nr, a, b) \
    do { \
        struct scmp_arg_cmp c_[] = {a, b}; \
        add(rc, act, nr, #nr, 2, c_); \
    } while (0)

/* Set-user-ID / set-group-ID bits in the mode argument at index i. */
static void deny_setid_mode(struct rule_ctx *rc, uint32_t act, int nr, unsigned i)
{
    struct scmp_arg_cmp suid = {i, SCMP_CMP_MASKED_EQ, S_ISUID, S_ISUID};
    struct scmp_arg_cmp sgid = {i, SCMP_CMP_MASKED_EQ, S_ISGID, S_ISGID};
    add(rc, act, nr, "chmod family", 1, &suid);
    add(rc, act, nr, "chmod family", 1, &sgid);
}

static void static_rules(struct rule_ctx *rc, const struct guard_filter_cfg *cfg)
{
    const uint32_t eperm = SCMP_ACT_ERRNO(EPERM);
    /* Denials the host wants to hear about go to the supervisor, which
     * answers EPERM and reports; without a supervisor the kernel answers. */
    const uint32_t rep = cfg->notify ? SCMP_ACT_NOTIFY : eperm;

    /* io_uring performs file operations out of the filter's sight. */
    RULE0(rc, rep, __NR_io_uring_setup);
    RULE0(rc, eperm, __NR_io_uring_enter);
    RULE0(rc, eperm, __NR_io_uring_register);

    /* Reaching into other processes. */
    RULE0(rc, rep, __NR_ptrace);
    RULE0(rc, rep, __NR_process_vm_readv);
    RULE0(rc, rep, __NR_process_vm_writev);
    RULE0(rc, rep, __NR_pidfd_getfd);
    RULE0(rc, rep, __NR_process_madvise);

    /* Kernel attack surface with no place in a coding sandbox. */
    RULE0(rc, rep, __NR_bpf);
    RULE0(rc, rep, __NR_perf_event_open);
    RULE0(rc, rep, __NR_userfaultfd);
    RULE0(rc, rep, __NR_keyctl);
    RULE0(rc, rep, __NR_add_key);
    RULE0(rc, rep, __NR_request_key);
    RULE0(rc, rep, __NR_init_module);
    RULE0(rc, rep, __NR_finit_module);
    RULE0(rc, rep, __NR_delete_module);
    RULE0(rc, rep, __NR_kexec_load);
    RULE0(rc, rep, __NR_kexec_file_load);
    RULE0(rc, rep, __NR_open_by_handle_at);

    /* The mount API and namespaces. */
    RULE0(rc, rep, __NR_mount);
    RULE0(rc, rep, __NR_umount2);
    RULE0(rc, rep, __NR_pivot_root);
    RULE0(rc, rep, __NR_chroot);
    RULE0(rc, rep, __NR_fsopen);
    RULE0(rc, rep, __NR_fsconfig);
    RULE0(rc, rep, __NR_fsmount);
    RULE0(rc, rep, __NR_fspick);
    RULE0(rc, rep, __NR_move_mount);
    RULE0(rc, rep, __NR_open_tree);
    RULE0(rc, rep, __NR_mount_setattr);
    RULE0(rc, rep, __NR_open_tree_attr);
    RULE0(rc, rep, __NR_setns);
    RULE1(rc, rep, __NR_unshare, SCMP_A0(SCMP_CMP_MASKED_EQ, CLONE_NEWUSER, CLONE_NEWUSER));
    RULE1(rc, rep, __NR_clone, SCMP_A0(SCMP_CMP_MASKED_EQ, CLONE_NEWUSER, CLONE_NEWUSER));
    /* clone3 passes its flags in memory a filter cannot read; ENOSYS makes
     * libc fall back to clone, whose flags are checked above. */
    RULE0(rc, SCMP_ACT_ERRNO(ENOSYS), __NR_clone3);

    /* A second listener would let the command answer its own calls. */
    RULE2(rc, rep, __NR_seccomp,
          SCMP_A0(SCMP_CMP_MASKED_EQ, INT_ARG, SECCOMP_SET_MODE_FILTER),
          SCMP_A1(SCMP_CMP_MASKED_EQ, SECCOMP_FILTER_FLAG_NEW_LISTENER,
                  SECCOMP_FILTER_FLAG_NEW_LISTENER));

    /* A root host would find a set-ID binary in the workdir after the run. */
#ifdef __NR_chmod
    deny_setid_mode(rc, rep, __NR_chmod, 1);
#endif
    deny_setid_mode(rc, rep, __NR_fchmod, 1);
    deny_setid_mode(rc, rep, __NR_fchmodat, 2);
    deny_setid_mode(rc, rep, __NR_fchmodat2, 2);

    /* openat2 takes its flags in memory; until it is emulated it does not
     * exist, and callers fall back to openat. */
    RULE0(rc, SCMP_ACT_ERRNO(ENOSYS), __NR_openat2);

    /* Silent on purpose: libc probes nscd and syslog sockets constantly. */
    if (!cfg->allow_unix_sockets)
        RULE1(rc, eperm, __NR_socket, SCMP_A0(SCMP_CMP_MASKED_EQ, INT_ARG, AF_UNIX));
}

/* Only the calls that can create a name are trapped; open/openat without
 * O_CREAT or O_TMPFILE is decided in BPF on the flags register. */
static void notify_rules(struct rule_ctx *rc, const struct guard_filter_cfg *cfg)
{
    const uint32_t n = SCMP_ACT_NOTIFY;
#ifdef __NR_open
    RULE1(rc, n, __NR_open, SCMP_A1(SCMP_CMP_MASKED_EQ, O_CREAT, O_CREAT));
#endif
#ifdef __NR_open
    RULE1(rc, n, __NR_open, SCMP_A1(SCMP_CMP_MASKED_EQ, __O_TMPFILE, __O_TMPFILE));
#endif
    RULE1(rc, n, __NR_openat, SCMP_A2(SCMP_CMP_MASKED_EQ, O_CREAT, O_CREAT));
    RULE1(rc, n, __NR_openat, SCMP_A2(SCMP_CMP_MASKED_EQ, __O_TMPFILE, __O_TMPFILE));
#ifdef __NR_creat
    RULE0(rc, n, __NR_creat);
#endif
#ifdef __NR_mknod
    RULE0(rc, n, __NR_mknod);
#endif
    RULE0(rc, n, __NR_mknodat);
#ifdef __NR_link
    RULE0(rc, n, __NR_link);
#endif
    RULE0(rc, n, __NR_linkat);
#ifdef __NR_symlink
    RULE0(rc, n, __NR_symlink);
#endif
    RULE0(rc, n, __NR_symlinkat);
#ifdef __NR_rename
    RULE0(rc, n, __NR_rename);
#endif
    RULE0(rc, n, __NR_renameat);
    RULE0(rc, n, __NR_renameat2);
    /* Any socket can be bound to a path (even one from socketpair). */
    RULE0(rc, n, __NR_bind);
    if (cfg->trap_writes) {
        /* O_ACCMODE 3 (ioctl-only opens) needs write permission too: it
         * matches both masks. O_TRUNC truncates even with O_RDONLY. */
        static const int wflags[] = {O_WRONLY, O_RDWR, O_TRUNC};
        for (size_t i = 0; i < sizeof wflags / sizeof wflags[0]; i++) {
            const scmp_datum_t f = (scmp_datum_t)wflags[i];
#ifdef __NR_open
            RULE1(rc, n, __NR_open, SCMP_A1(SCMP_CMP_MASKED_EQ, f, f));
#endif
            RULE1(rc, n, __NR_openat, SCMP_A2(SCMP_CMP_MASKED_EQ, f, f));
        }
#ifdef __NR_truncate
        RULE0(rc, n, __NR_truncate);
#endif
    }
    if (cfg->trap_mkdir) {
#ifdef __NR_mkdir
        RULE0(rc, n, __NR_mkdir);
#endif
        RULE0(rc, n, __NR_mkdirat);
    }
}

static int export_program(scmp_filter_ctx ctx, struct guard_program *p, char *err,
                          size_t errlen)
{
    int fd = fd_above_stdio(memfd_create("ccsb-guard-bpf", MFD_CLOEXEC));
    if (fd < 0)
        return errf(err, errlen, CCSB_E_IO, "memfd_create: %s", strerror(errno));
    int r = seccomp_export_bpf(ctx, fd);
    if (r < 0) {
        close(fd);
        return errf(err, errlen, CCSB_E_INTERNAL, "seccomp_export_bpf: %s", strerror(-r));
    }
    struct stat st;
    if (fstat(fd, &st) < 0) {
        int e = errno;
        close(fd);
        return errf(err, errlen, CCSB_E_IO, "fstat: %s", strerror(e));
    }
    size_t bytes = (size_t)st.st_size;
    if (bytes == 0 || bytes % sizeof(struct sock_filter) != 0 ||
        bytes / sizeof(struct sock_filter) > BPF_MAXINSNS) {
        close(fd);
        return errf(err, errlen, CCSB_E_INTERNAL, "seccomp program has a bad size (%zu bytes)",
                    bytes);
    }
    p->insns = malloc(bytes);
    if (!p->insns) {
        close(fd);
        return errf(err, errlen, CCSB_E_NOMEM, "out of memory");
    }
    size_t done = 0;
    while (done < bytes) {
        ssize_t k = pread(fd, (char *)p->insns + done, bytes - done, (off_t)done);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0) {
            int e = k < 0 ? errno : EIO;
            close(fd);
            return errf(err, errlen, CCSB_E_IO, "reading the seccomp program: %s", strerror(e));
        }
        done += (size_t)k;
    }
    close(fd);
    p->len = (unsigned short)(bytes / sizeof(struct sock_filter));
    return 0;
}

/* optimize: libseccomp's SCMP_FLTATR_CTL_OPTIMIZE (1: a chain, 2: a tree). */
static int build(const struct guard_filter_cfg *cfg, int optimize, struct guard_program **out,
                 char *err, size_t errlen)
{
    *out = NULL;
    struct guard_program *p = calloc(1, sizeof *p);
    if (!p)
        return errf(err, errlen, CCSB_E_NOMEM, "out of memory");
    scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
    if (!ctx) {
        free(p);
        return errf(err, errlen, CCSB_E_NOMEM, "seccomp_init failed");
    }
    int rc_code = 0;
    /* x32 and 32-bit entry points share no syscall numbers with the rules
     * above: anything not native kills the whole process. */
    int r = seccomp_attr_set(ctx, SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_KILL_PROCESS);
    if (r < 0) {
        rc_code = errf(err, errlen, CCSB_E_INTERNAL, "seccomp bad-arch action: %s",
                       strerror(-r));
        goto out;
    }
    /* A binary tree over the syscall number instead of a chain of
     * comparisons: each call costs O(log n) in the filter, and loading it
     * (the kernel runs it once per syscall number to fill its cache of
     * always-allowed calls) takes ~120 us here instead of ~200 us. */
    r = seccomp_attr_set(ctx, SCMP_FLTATR_CTL_OPTIMIZE, optimize);
    if (r < 0) {
        rc_code = errf(err, errlen, CCSB_E_INTERNAL, "seccomp binary-tree filter: %s",
                       strerror(-r));
        goto out;
    }
    struct rule_ctx rc = {ctx, err, errlen, 0};
    static_rules(&rc, cfg);
    if (cfg->notify)
        notify_rules(&rc, cfg);
    if (rc.failed) {
        rc_code = CCSB_E_INTERNAL;
        goto out;
    }
    rc_code = export_program(ctx, p, err, errlen);
    if (rc_code == 0 && cfg->notify)
        p->flags = SECCOMP_FILTER_FLAG_NEW_LISTENER | SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV;
out:
    seccomp_release(ctx);
    if (rc_code != 0) {
        guard_program_free(p);
        return rc_code;
    }
    *out = p;
    return 0;
}

int guard_program_build(const struct guard_filter_cfg *cfg, struct guard_program **out,
                        char *err, size_t errlen)
{
    return build(cfg, 2, out, err, errlen);
}

int guard_program_build_chain(const struct guard_filter_cfg *cfg, struct guard_program **out,
                              char *err, size_t errlen)
{
    return build(cfg, 1, out, err, errlen);
}

int guard_program_load(const struct guard_program *p, int *listener_fd)
{
    if (listener_fd)
        *listener_fd = -1;
    if (!p || !p->insns)
        return -EINVAL;
    if ((p->flags & SECCOMP_FILTER_FLAG_NEW_LISTENER) && !listener_fd)
        return -EINVAL;
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
        return -errno;
    struct sock_fprog prog = {p->len, p->insns};
    long r = syscall(__NR_seccomp, SECCOMP_SET_MODE_FILTER, p->flags, &prog);
    if (r < 0)
        return -errno;
    if (p->flags & SECCOMP_FILTER_FLAG_NEW_LISTENER)
        *listener_fd = (int)r;
    return 0;
}

int guard_program_memfd(const struct guard_program *p, unsigned long *flags)
{
    /* (off 0-2: a host's stray write to a closed stderr must not land in it) */
    int fd = fd_above_stdio(memfd_create("ccsb-guard-program", MFD_CLOEXEC | MFD_ALLOW_SEALING));
    if (fd < 0)
        return -errno;
    size_t bytes = (size_t)p->len * sizeof(struct sock_filter), done = 0;
    while (done < bytes) {
        ssize_t k = write(fd, (const char *)p->insns + done, bytes - done);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0) {
            int e = k < 0 ? errno : EIO;
            close(fd);
            return -e;
        }
        done += (size_t)k;
    }
    if (fcntl(fd, F_ADD_SEALS, F_SEAL_SEAL | F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE) < 0) {
        int e = errno;
        close(fd);
        return -e;
    }
    *flags = p->flags;
    return fd;
}

int guard_program_build_probe(struct guard_program **out, char *err, size_t errlen)
{
    *out = NULL;
    struct guard_program *p = calloc(1, sizeof *p);
    scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
    int rc = 0;
    if (!p || !ctx) {
        rc = errf(err, errlen, CCSB_E_NOMEM, "out of memory");
        goto out;
    }
    int r = seccomp_rule_add(ctx, SCMP_ACT_NOTIFY, __NR_getppid, 0);
    if (r < 0) {
        rc = errf(err, errlen, CCSB_E_INTERNAL, "seccomp rule: %s", strerror(-r));
        goto out;
    }
    rc = export_program(ctx, p, err, errlen);
    p->flags = SECCOMP_FILTER_FLAG_NEW_LISTENER | SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV;
out:
    if (ctx)
        seccomp_release(ctx);
    if (rc != 0) {
        guard_program_free(p);
        return rc;
    }
    *out = p;
    return 0;
}

void guard_program_free(struct guard_program *p)
{
    if (!p)
        return;
    free(p->insns);
    free(p);
}

int guard_filter_install(const struct guard_filter_cfg *cfg, int *listener_fd, char *err,
                         size_t errlen)
{
    struct guard_program *p;
    int r = guard_program_build(cfg, &p, err, errlen);
    if (r < 0)
        return r;
    r = guard_program_load(p, listener_fd);
    guard_program_free(p);
    if (r < 0)
        return errf(err, errlen, CCSB_E_POLICY, "loading the seccomp filter: %s", strerror(-r));
    return 0;
}
