/*
 * Per-session cgroups for the bubblewrap backend, where the host lets us
 * make them: a cgroup v2 subtree we can write (delegation), else the v1
 * hierarchies we can write (typically as root). What could not be done by a
 * cgroup falls back to rlimits set by ccsb-init (memory: RLIMIT_AS per
 * process; pids: RLIMIT_NPROC) and suspend falls back to signals. The
 * session details say which one applied.
 */
#ifndef CCSB_BACKEND_BWRAP_CGROUP_H
#define CCSB_BACKEND_BWRAP_CGROUP_H

#include <stddef.h>
#include <stdint.h>

#define BWRAP_CG_MAX 4

struct bwrap_cgroup {
    char *dirs[BWRAP_CG_MAX]; /* created directories; the sandbox joins all */
    size_t ndirs;
    char *freeze;      /* cgroup.freeze (v2) or freezer.state (v1), or NULL */
    int freeze_v2;
    char *oom_events;  /* memory.events (v2) or memory.oom_control (v1), or NULL */
    const char *memory;  /* "cgroup-v2", "cgroup-v1" or NULL (not by cgroup) */
    const char *pids;
};

/*
 * Creates what the host allows for session `name`, applies the limits it
 * can (0: none). Never fails the launch: anything not possible is left NULL
 * for the caller to fall back. Returns 0, or CCSB_E_NOMEM.
 */
int bwrap_cgroup_setup(struct bwrap_cgroup *cg, const char *name, uint64_t memory_max,
                       uint32_t pids_max);
/* 0, or -errno when the freezer is missing or the write failed. */
int bwrap_cgroup_freeze(const struct bwrap_cgroup *cg, int frozen);
/* OOM kills counted so far, or -1 when unknown. */
long bwrap_cgroup_oom_kills(const struct bwrap_cgroup *cg);
/* Removes the directories (after the sandbox is gone) and frees. */
void bwrap_cgroup_remove(struct bwrap_cgroup *cg);

#endif
