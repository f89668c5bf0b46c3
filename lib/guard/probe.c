/*
 * Does this kernel offer what enforcement needs? Checked end to end rather
 * than by version: a short-lived child loads a filter that traps getppid()
 * with a listener and killable waits; we take the listener with
 * pidfd_getfd, read the child's memory, and answer with ADDFD+SEND. The
 * child confirms it received a working fd. The child only makes
 * async-signal-safe calls, so this is safe from a threaded host.
 */
#include "guard/guard.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include "guard/program.h"
#include "guard/unotify.h"

#define PROBE_MAGIC "ccsb-guard-probe"
#define PROBE_TIMEOUT_MS 3000

struct hello {
    int listener;
    int err;
    uint64_t addr;
};

static void child(const struct guard_program *p, int wfd)
{
    static const char magic[] = PROBE_MAGIC;
    struct hello h = {-1, 0, (uint64_t)(uintptr_t)magic};
    int r = guard_program_load(p, &h.listener);
    h.err = r < 0 ? -r : 0;
    if (write(wfd, &h, sizeof h) != (ssize_t)sizeof h || h.err)
        _exit(2);
    long fd = syscall(__NR_getppid, (long)(uintptr_t)magic);
    char ok = (fd >= 0 && fcntl((int)fd, F_GETFD) >= 0) ? 'y' : 'n';
    if (write(wfd, &ok, 1) != 1)
        _exit(3);
    _exit(ok == 'y' ? 0 : 4);
}

static int wait_readable(int fd, int ms)
{
    struct pollfd p = {fd, POLLIN, 0};
    for (;;) {
        int r = poll(&p, 1, ms);
        if (r < 0 && errno == EINTR)
            continue;
        return r > 0 ? 0 : (r == 0 ? -ETIMEDOUT : -errno);
    }
}

static int read_full(int fd, void *buf, size_t len)
{
    size_t done = 0;
    while (done < len) {
        int w = wait_readable(fd, PROBE_TIMEOUT_MS);
        if (w < 0)
            return w;
        ssize_t k = read(fd, (char *)buf + done, len - done);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0)
            return k < 0 ? -errno : -EPIPE;
        done += (size_t)k;
    }
    return 0;
}

static int host_side(pid_t pid, int rfd, char *why, size_t whylen)
{
    struct hello h;
    int r = read_full(rfd, &h, sizeof h);
    if (r < 0) {
        snprintf(why, whylen, "the probe child did not report: %s", strerror(-r));
        return 0;
    }
    if (h.err) {
        snprintf(why, whylen,
                 "seccomp user notification with killable waits is unavailable "
                 "(loading the filter failed: %s); Linux 5.19 or newer is needed",
                 strerror(h.err));
        return 0;
    }
    int pidfd = pidfd_open_tid(pid);
    if (pidfd < 0) {
        snprintf(why, whylen, "pidfd_open: %s", strerror(-pidfd));
        return 0;
    }
    int lfd = pidfd_dup(pidfd, h.listener);
    close(pidfd);
    if (lfd < 0) {
        snprintf(why, whylen, "pidfd_getfd is unavailable or not permitted: %s", strerror(-lfd));
        return 0;
    }
    int ok = 0;
    struct seccomp_notif_sizes sizes;
    union {
        struct seccomp_notif n;
        char pad[512];
    } u;
    if ((r = unotify_sizes(&sizes)) < 0 || sizes.seccomp_notif > sizeof u) {
        snprintf(why, whylen, "seccomp notification sizes: %s",
                 r < 0 ? strerror(-r) : "larger than expected");
        goto out;
    }
    if ((r = wait_readable(lfd, PROBE_TIMEOUT_MS)) < 0 ||
        (r = unotify_recv(lfd, &u, sizeof u)) < 0) {
        snprintf(why, whylen, "receiving a seccomp notification: %s", strerror(-r));
        goto out;
    }
    char got[sizeof PROBE_MAGIC];
    struct iovec local = {got, sizeof got};
    struct iovec remote = {(void *)(uintptr_t)u.n.data.args[0], sizeof got};
    if (process_vm_readv((pid_t)u.n.pid, &local, 1, &remote, 1, 0) != (ssize_t)sizeof got ||
        memcmp(got, PROBE_MAGIC, sizeof got) != 0) {
        snprintf(why, whylen, "reading the sandboxed process's memory is not permitted: %s",
                 strerror(errno));
        unotify_respond(lfd, u.n.id, 0, EPERM);
        goto out;
    }
    if ((r = unotify_id_valid(lfd, u.n.id)) < 0) {
        snprintf(why, whylen, "SECCOMP_IOCTL_NOTIF_ID_VALID: %s", strerror(-r));
        goto out;
    }
    r = unotify_addfd_send(lfd, u.n.id, rfd, O_CLOEXEC);
    if (r < 0) {
        snprintf(why, whylen, "SECCOMP_IOCTL_NOTIF_ADDFD with SEND is unavailable: %s",
                 strerror(-r));
        unotify_respond(lfd, u.n.id, 0, ENOSYS);
        goto out;
    }
    char c = 0;
    if ((r = read_full(rfd, &c, 1)) < 0 || c != 'y') {
        snprintf(why, whylen, "the probe child did not receive the injected fd");
        goto out;
    }
    ok = 1;
out:
    close(lfd);
    return ok;
}

int guard_supported(char *why, size_t whylen)
{
    char dummy[8];
    if (!why || !whylen) {
        why = dummy;
        whylen = sizeof dummy;
    }
    why[0] = 0;
    struct guard_program *p;
    char err[256];
    if (guard_program_build_probe(&p, err, sizeof err) != 0) {
        snprintf(why, whylen, "building the probe filter: %s", err);
        return 0;
    }
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) < 0) {
        snprintf(why, whylen, "pipe: %s", strerror(errno));
        guard_program_free(p);
        return 0;
    }
    pid_t pid = fork();
    if (pid < 0) {
        snprintf(why, whylen, "fork: %s", strerror(errno));
        close(fds[0]);
        close(fds[1]);
        guard_program_free(p);
        return 0;
    }
    if (pid == 0) {
        close(fds[0]);
        child(p, fds[1]);
    }
    close(fds[1]);
    /* The answer is kept for a context's life: a host's signal must not
     * interrupt the ioctls on the way (an interrupted ADDFD+SEND cannot be
     * retried, its notification is answered or gone) and make it a no. */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, &old);
    int ok = host_side(pid, fds[0], why, whylen);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (!ok)
        kill(pid, SIGKILL);
    /* Reap our own child by pid; with SIGCHLD ignored it is gone already. */
    while (waitpid(pid, NULL, 0) < 0 && errno == EINTR) {
    }
    close(fds[0]);
    guard_program_free(p);
    return ok;
}
