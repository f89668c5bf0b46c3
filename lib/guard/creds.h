/*
 * Per-thread credential switching for the supervisor thread. Linux keeps
 * fsuid, fsgid, supplementary groups and capabilities per thread, and the
 * umask per fs_struct, which this thread unshares: nothing here is visible
 * to the host's other threads. The raw syscalls are used because libc
 * broadcasts setgroups to every thread of the process.
 */
#ifndef CCSB_GUARD_CREDS_H
#define CCSB_GUARD_CREDS_H

#include <stdint.h>
#include <sys/types.h>

#include "guard/target.h"

struct creds_state {
    uid_t host_uid;           /* our euid */
    gid_t host_gid;           /* our egid */
    uint32_t permitted[2];    /* our permitted capability sets */
    uint32_t inheritable[2];  /* kept as found */
    uint32_t effective[2];    /* what the thread has in force now */
    int have_setid;           /* CAP_SETUID and CAP_SETGID permitted */
    /* What the thread currently runs with. */
    int host_mode;            /* 1: host identity, effective = permitted */
    uid_t cur_fsuid;
    gid_t cur_fsgid;
    mode_t cur_umask;
    int groups_valid;
    int cur_ngroups;
    gid_t cur_groups[TARGET_MAX_GROUPS];
};

/* Unshares the fs_struct of the calling thread and records our identity.
 * Call once, on the supervisor thread. 0 or -errno. */
int creds_init(struct creds_state *cs);
/* Our own identity with every permitted capability effective: for reading
 * /proc, pidfds and target memory. 0 or -errno. */
int creds_host(struct creds_state *cs);
/* The target's fsuid, fsgid, groups and umask with no effective capability:
 * the kernel then checks exactly what it would check for the target.
 * 0, or -EPERM when we cannot take on that identity (the caller denies). */
int creds_target(struct creds_state *cs, const struct target_creds *tc);

#endif
