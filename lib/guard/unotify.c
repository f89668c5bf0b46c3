#include "guard/unotify.h"

#include <errno.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "guard/sysnr.h"

int unotify_sizes(struct seccomp_notif_sizes *out)
{
    memset(out, 0, sizeof *out);
    if (syscall(__NR_seccomp, SECCOMP_GET_NOTIF_SIZES, 0, out) < 0)
        return -errno;
    return 0;
}

int unotify_recv(int listener, void *buf, size_t bufsize)
{
    /* The kernel refuses a receive buffer that is not zeroed. */
    memset(buf, 0, bufsize);
    for (;;) {
        if (ioctl(listener, SECCOMP_IOCTL_NOTIF_RECV, buf) == 0)
            return 0;
        if (errno != EINTR)
            return -errno;
    }
}

int unotify_id_valid(int listener, uint64_t id)
{
    if (ioctl(listener, SECCOMP_IOCTL_NOTIF_ID_VALID, &id) == 0)
        return 0;
    return -errno;
}

int unotify_respond(int listener, uint64_t id, int64_t val, int error)
{
    struct seccomp_notif_resp resp;
    memset(&resp, 0, sizeof resp);
    resp.id = id;
    resp.val = error ? 0 : val;
    resp.error = error ? -error : 0;
    for (;;) {
        if (ioctl(listener, SECCOMP_IOCTL_NOTIF_SEND, &resp) == 0)
            return 0;
        if (errno != EINTR)
            return -errno;
    }
}

int unotify_addfd_send(int listener, uint64_t id, int srcfd, unsigned newfd_flags)
{
    struct seccomp_notif_addfd a;
    memset(&a, 0, sizeof a);
    a.id = id;
    a.flags = SECCOMP_ADDFD_FLAG_SEND;
    a.srcfd = (uint32_t)srcfd;
    a.newfd = 0;
    a.newfd_flags = newfd_flags;
    for (;;) {
        int r = ioctl(listener, SECCOMP_IOCTL_NOTIF_ADDFD, &a);
        if (r >= 0)
            return r;
        if (errno != EINTR)
            return -errno;
    }
}

int pidfd_open_tid(pid_t tid)
{
    long r = syscall(__NR_pidfd_open, tid, PIDFD_THREAD);
    if (r < 0 && errno == EINVAL)
        r = syscall(__NR_pidfd_open, tid, 0); /* kernels before 6.9: leaders only */
    return r < 0 ? -errno : (int)r;
}

int pidfd_dup(int pidfd, int targetfd)
{
    long r = syscall(__NR_pidfd_getfd, pidfd, targetfd, 0);
    return r < 0 ? -errno : (int)r;
}
