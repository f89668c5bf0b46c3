/*
 * What the supervisor knows about the task behind one notification: its
 * credentials and umask (from /proc/<tid>/status), its root, its pid as its
 * own procfs shows it, and lazily a pidfd and its cwd. Every handle is
 * opened before the caller checks the notification id is still valid, so a
 * recycled tid cannot slip in.
 */
#ifndef CCSB_GUARD_TARGET_H
#define CCSB_GUARD_TARGET_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define TARGET_MAX_GROUPS 256

struct target_creds {
    uid_t fsuid;
    gid_t fsgid;
    mode_t umask;
    int ngroups;
    gid_t groups[TARGET_MAX_GROUPS];
};

struct target {
    pid_t tid;       /* as the supervisor's pid namespace sees it */
    pid_t nstgid;    /* as the target's own pid namespace sees it */
    pid_t nstid;
    int rootfd;      /* O_PATH of its root */
    int cwdfd;       /* O_PATH of its cwd, -1 until target_cwd */
    int pidfd;       /* -1 until target_pidfd */
    int cap_net_bind;/* CAP_NET_BIND_SERVICE in its effective set */
    int cached;      /* rootfd and pidfd belong to a target_cache */
    struct target_creds creds;
};

/*
 * Handles of recently seen tasks, so a repeat caller costs one pread of its
 * status instead of five opens. An entry is bound to the task, not the
 * number: once that task is gone its status read fails (ESRCH) and the
 * entry is dropped, so a recycled tid never inherits another task's root.
 */
#define TARGET_CACHE_SIZE 32

struct target_cache_entry {
    pid_t tid;       /* 0: free */
    int status_fd, root_fd, pid_fd;
    uint64_t used;
};

struct target_cache {
    struct target_cache_entry e[TARGET_CACHE_SIZE];
    uint64_t clock;
};

void target_cache_init(struct target_cache *c);
void target_cache_clear(struct target_cache *c);
/* target_open through the cache. host(ud) is called before any handle is
 * opened anew (it must give us the identity that may open them). */
int target_open_cached(struct target_cache *c, struct target *t, pid_t tid,
                       int (*host)(void *ud), void *ud);

/* Reads status and opens the root. 0 or -errno. */
int target_open(struct target *t, pid_t tid);
void target_close(struct target *t);

int target_cwd(struct target *t);   /* the fd or -errno */
int target_pidfd(struct target *t); /* the fd or -errno */
/* A duplicate of the target's fd n, or -errno. */
int target_getfd(struct target *t, int n);

/* Copies len bytes from the target. 0 or -errno (-EFAULT when unmapped). */
int target_read(struct target *t, uint64_t addr, void *buf, size_t len);
/* Copies a NUL-terminated string of at most cap-1 bytes. Returns its length,
 * -EFAULT, or -ENAMETOOLONG. */
long target_read_str(struct target *t, uint64_t addr, char *buf, size_t cap);

/* The device number of its controlling terminal, 0 when it has none, and
 * its session id (as the supervisor's /proc numbers it). */
int target_ctty(struct target *t, dev_t *out, pid_t *sid);

/* Parses a status file's text (exposed for unit tests). */
int target_parse_status(const char *text, struct target *t);

#endif
