#include "guard/creds.h"

#include <errno.h>
#include <linux/capability.h>
#include <sched.h>
#include <string.h>
#include <sys/fsuid.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

static int cap_get(struct creds_state *cs)
{
    struct __user_cap_header_struct h = {_LINUX_CAPABILITY_VERSION_3, 0};
    struct __user_cap_data_struct d[2];
    memset(d, 0, sizeof d);
    if (syscall(SYS_capget, &h, d) < 0)
        return -errno;
    for (int i = 0; i < 2; i++) {
        cs->effective[i] = d[i].effective;
        cs->permitted[i] = d[i].permitted;
        cs->inheritable[i] = d[i].inheritable;
    }
    return 0;
}

/* Only the effective set changes; the thread's sets are cached so that a
 * switch is one capset, and none when nothing changes. */
static int cap_set_effective(struct creds_state *cs, const uint32_t eff[2])
{
    uint32_t want[2] = {eff[0] & cs->permitted[0], eff[1] & cs->permitted[1]};
    if (want[0] == cs->effective[0] && want[1] == cs->effective[1])
        return 0;
    struct __user_cap_header_struct h = {_LINUX_CAPABILITY_VERSION_3, 0};
    struct __user_cap_data_struct d[2];
    for (int i = 0; i < 2; i++) {
        d[i].effective = want[i];
        d[i].permitted = cs->permitted[i];
        d[i].inheritable = cs->inheritable[i];
    }
    if (syscall(SYS_capset, &h, d) < 0)
        return -errno;
    cs->effective[0] = want[0];
    cs->effective[1] = want[1];
    return 0;
}

static int no_caps(const struct creds_state *cs)
{
    return cs->permitted[0] == 0 && cs->permitted[1] == 0;
}

int creds_init(struct creds_state *cs)
{
    memset(cs, 0, sizeof *cs);
    if (unshare(CLONE_FS) < 0)
        return -errno;
    cs->host_uid = geteuid();
    cs->host_gid = getegid();
    int r = cap_get(cs);
    if (r < 0)
        return r;
    cs->have_setid = (cs->permitted[0] & (1u << CAP_SETUID)) &&
                     (cs->permitted[0] & (1u << CAP_SETGID));
    cs->cur_umask = umask(022);
    umask(cs->cur_umask);
    cs->cur_fsuid = (uid_t)setfsuid((uid_t)-1);
    cs->cur_fsgid = (gid_t)setfsgid((gid_t)-1);
    return creds_host(cs);
}

static int set_fsuid(uid_t u)
{
    setfsuid(u);
    return (uid_t)setfsuid((uid_t)-1) == u ? 0 : -EPERM;
}

static int set_fsgid(gid_t g)
{
    setfsgid(g);
    return (gid_t)setfsgid((gid_t)-1) == g ? 0 : -EPERM;
}

int creds_host(struct creds_state *cs)
{
    if (cs->host_mode)
        return 0;
    int r;
    if (cs->cur_fsuid != cs->host_uid || cs->cur_fsgid != cs->host_gid) {
        uint32_t setid[2] = {(1u << CAP_SETUID) | (1u << CAP_SETGID), 0};
        if (!no_caps(cs) && (r = cap_set_effective(cs, setid)) < 0)
            return r;
        if (set_fsgid(cs->host_gid) < 0 || set_fsuid(cs->host_uid) < 0)
            return -EPERM;
        cs->cur_fsuid = cs->host_uid;
        cs->cur_fsgid = cs->host_gid;
        if (!no_caps(cs) && (r = cap_get(cs)) < 0)
            return r;
    }
    if (!no_caps(cs) && (r = cap_set_effective(cs, cs->permitted)) < 0)
        return r;
    cs->host_mode = 1;
    return 0;
}

static int same_groups(const struct creds_state *cs, const struct target_creds *tc)
{
    if (!cs->groups_valid || cs->cur_ngroups != tc->ngroups)
        return 0;
    return memcmp(cs->cur_groups, tc->groups, (size_t)tc->ngroups * sizeof(gid_t)) == 0;
}

static int load_groups(struct creds_state *cs)
{
    int n = getgroups(TARGET_MAX_GROUPS, cs->cur_groups);
    if (n < 0)
        return -errno;
    cs->cur_ngroups = n;
    cs->groups_valid = 1;
    return 0;
}

int creds_target(struct creds_state *cs, const struct target_creds *tc)
{
    int r;
    uint32_t none[2] = {0, 0};
    if (!cs->groups_valid && (r = load_groups(cs)) < 0)
        return r;
    int need_groups = !same_groups(cs, tc);
    if (need_groups || tc->fsuid != cs->cur_fsuid || tc->fsgid != cs->cur_fsgid) {
        if (!no_caps(cs)) {
            uint32_t setid[2] = {(1u << CAP_SETUID) | (1u << CAP_SETGID), 0};
            if ((r = cap_set_effective(cs, setid)) < 0)
                return r;
        }
        if (need_groups) {
            if (!cs->have_setid)
                return -EPERM;
            if (syscall(SYS_setgroups, (size_t)tc->ngroups, tc->groups) < 0)
                return -errno;
            memcpy(cs->cur_groups, tc->groups, (size_t)tc->ngroups * sizeof(gid_t));
            cs->cur_ngroups = tc->ngroups;
        }
        cs->host_mode = 0;
        if ((r = set_fsgid(tc->fsgid)) < 0)
            return r;
        cs->cur_fsgid = tc->fsgid;
        if ((r = set_fsuid(tc->fsuid)) < 0)
            return r;
        cs->cur_fsuid = tc->fsuid;
        /* A change of fsuid to or from 0 moves file capabilities in or out
         * of the effective set behind our back. */
        if (!no_caps(cs) && (r = cap_get(cs)) < 0)
            return r;
    }
    /* Always drop the effective set: switching fsuid back to 0 raises the
     * file capabilities again, and host mode had them all. */
    if (!no_caps(cs) && (r = cap_set_effective(cs, none)) < 0)
        return r;
    cs->host_mode = 0;
    if (tc->umask != cs->cur_umask) {
        umask(tc->umask);
        cs->cur_umask = tc->umask;
    }
    return 0;
}
