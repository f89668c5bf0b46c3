/*
 * The Linux calls ccsb-init makes that a C library may not wrap. glibc
 * (2.36 and later) declares them all; musl 1.2 declares none of them, so
 * there they are thin syscall(2) wrappers, with the flag values from the
 * kernel's own headers. Include after the system headers.
 *
 * ccsb-init is built against musl where musl-gcc is installed: it is PID 1
 * of every sandbox, and glibc's start-up (its CPU feature probing alone,
 * some fifty CPUID instructions that a virtual machine traps) costs each
 * process several hundred microseconds there (see helper/meson.build).
 */
#ifndef CCSB_HELPER_LINUX_API_H
#define CCSB_HELPER_LINUX_API_H

#ifndef __GLIBC__
#include <linux/mount.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <unistd.h>

static inline int close_range(unsigned first, unsigned last, int flags)
{
    return (int)syscall(SYS_close_range, first, last, flags);
}

static inline int open_tree(int dfd, const char *path, unsigned flags)
{
    return (int)syscall(SYS_open_tree, dfd, path, flags);
}

static inline int move_mount(int from_dfd, const char *from, int to_dfd, const char *to,
                             unsigned flags)
{
    return (int)syscall(SYS_move_mount, from_dfd, from, to_dfd, to, flags);
}

static inline int mount_setattr(int dfd, const char *path, unsigned flags,
                                struct mount_attr *attr, size_t size)
{
    return (int)syscall(SYS_mount_setattr, dfd, path, flags, attr, size);
}

static inline int fsopen(const char *fsname, unsigned flags)
{
    return (int)syscall(SYS_fsopen, fsname, flags);
}

static inline int fsconfig(int fd, unsigned cmd, const char *key, const void *value, int aux)
{
    return (int)syscall(SYS_fsconfig, fd, cmd, key, value, aux);
}

static inline int fsmount(int fd, unsigned flags, unsigned attrs)
{
    return (int)syscall(SYS_fsmount, fd, flags, attrs);
}

static inline int pidfd_open(pid_t pid, unsigned flags)
{
    return (int)syscall(SYS_pidfd_open, pid, flags);
}

static inline int pidfd_send_signal(int pidfd, int sig, siginfo_t *info, unsigned flags)
{
    return (int)syscall(SYS_pidfd_send_signal, pidfd, sig, info, flags);
}
#endif

#endif
