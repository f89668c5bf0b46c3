/*
 * ccsb-init: one small program with three jobs, picked by argv[1].
 *
 *   ccsb-init init [options]        PID 1 inside a bubblewrap sandbox: serves
 *                                   exec requests on the control socket (fd 3)
 *   ccsb-init janitor [options] -- BWRAP ARGV...
 *                                   runs on the host between the library and
 *                                   bwrap when the launch had to create
 *                                   placeholder mount points; removes them when
 *                                   the sandbox ends, even if the host was killed
 *   ccsb-init connect [--port N] HOST PORT
 *                                   an ssh ProxyCommand through the session's
 *                                   SOCKS5 port (used by GIT_SSH_COMMAND)
 */
#ifndef CCSB_HELPER_INIT_H
#define CCSB_HELPER_INIT_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct init_exec_data;

#define INIT_MOUNT_PIN 1
#define INIT_MOUNT_RO 2
#define INIT_MOUNT_MASK_DIR 3
#define INIT_MOUNT_MASK_FILE 4
#define INIT_MOUNT_DEV 5 /* /dev from the host's nodes bound at PATH (then hidden) */
#define INIT_MOUNT_REMOUNT_RO 6 /* PATH's own mount read-only (not recursive) */

struct init_mount {
    int op; /* INIT_MOUNT_* */
    const char *path;
};

/* Options of `ccsb-init init`. */
struct init_opts {
    struct init_mount *mounts; /* in order; points into argv */
    size_t n_mounts;
    int await_go;   /* wait for the host's GO before mounting */
    int await_guard;/* take the host's guard filter before READY */
    int await_setup;/* the rest of the options come in the host's SETUP */
    int lock_userns;/* forbid nested user namespaces (init_lock_userns) */
    int have_guard; /* the seccomp guard refuses writes to protected files by name */
    int http_port;  /* 0: ephemeral */
    int socks_port; /* 0: ephemeral */
    uint64_t rlimit_as;    /* 0: none (set only when cgroups are not used) */
    uint64_t rlimit_nproc; /* 0: none */
};

int init_main(int argc, char **argv);
int janitor_main(int argc, char **argv);
int connect_main(int argc, char **argv);

/* Parses a decimal number in [0, max]. Returns 0 or -1. */
int parse_u64(const char *s, uint64_t max, uint64_t *out);
/* Closes every fd above 2 but the n in keep (sorted in place; -1 entries
 * ignored). Returns 0 or -1 with errno. */
int close_fds_except(int *keep, size_t n);

/*
 * The child side of an exec, after fork: becomes a session leader, takes
 * its stdio (or the pty slave named slave_name), applies limits, changes
 * directory and executes. Never returns.
 */
/*
 * The guard program the host sent (INIT_MSG_GUARD_FILTER): loaded by every
 * exec child just before exec. len 0: none.
 */
struct init_guard {
    void *insns;          /* struct sock_filter[len] */
    unsigned short len;
    unsigned long flags;  /* seccomp(2) flags; NEW_LISTENER: send the listener */
};

struct exec_child {
    uint64_t id;            /* the exec's id (tags the guard listener) */
    const struct init_guard *guard;
    const struct init_exec_data *data;
    const struct init_opts *opts;
    int fds[3];             /* stdin, stdout, stderr; unused with a pty */
    const char *slave_name; /* NULL: no pty */
    int gate;               /* INIT_EXEC_GATE: wait for the host's go (-1: none) */
};
__attribute__((noreturn)) void exec_child_run(const struct exec_child *c);
/*
 * The spare: forked ahead of the next request, it does what does not need
 * the request (clean slate, own session, the guard filter), then waits on
 * sock for one INIT_MSG_EXEC (fds as on the control socket; with a pty, the
 * slave's name in text) and runs it like exec_child_run. EOF on sock: it
 * exits. Never returns.
 */
__attribute__((noreturn)) void exec_spare_run(const struct init_guard *g,
                                              const struct init_opts *opts, int sock);

/*
 * The watch over the mounts ccsb-init made (init_watch.c): each target's
 * path and the identity of the mount that covers it, and an fd of
 * /proc/self/mountinfo that polls POLLPRI on any change of the mount table.
 */
struct init_watch_target {
    const char *path;  /* as the sandbox sees it (points into the options) */
    uint64_t mnt_id, dev, ino; /* of the mount's root, as made */
    uint32_t id_mask;  /* which mount id the kernel gave (STATX_MNT_ID[_UNIQUE]) */
    uint8_t kind;      /* INIT_PROT_* */
    uint8_t state;
};

struct init_watch {
    int fd; /* /proc/self/mountinfo (-1: nothing to watch) */
    struct init_watch_target *t;
    size_t n;
};

/* Room for n targets (the only allocation). 0 or -ENOMEM. */
int init_watch_begin(struct init_watch *w, size_t n);
/* Remembers the mount mnt (its fd, attached at path) as a target of kind
 * INIT_PROT_*. 0 or -errno. */
int init_watch_add(struct init_watch *w, const char *path, int kind, int mnt);
/* Opens the mountinfo fd, after the last mount. 0 or -errno. */
int init_watch_arm(struct init_watch *w);
/*
 * Looks every live target from *pos on up again; returns the index of the
 * next one that no longer shows its mount (marked lost, never reported
 * again; *err: errno of the lookup, 0 when another node is there now), or
 * -1 when none is left. Bounded: one statx per target, no allocation.
 */
long init_watch_next_lost(struct init_watch *w, size_t *pos, int *err);

/* init_mounts.c's tools, shared with init_dev.c. */
/* path reached with no symlink followed: an O_PATH fd or -errno */
int init_open_nofollow(const char *path);
/* a detached mount (fd) moved onto target (O_PATH fd): 0 or -errno */
int init_attach(int mnt, int target);
/* a new file system's detached mount, configured by key/value string pairs
 * (NULL value: a flag; NULL key ends them), mounted with MOUNT_ATTR_*
 * attrs: its fd or -errno */
int init_new_fs(const char *type, const char *const *kv, unsigned attrs);
/* an empty read-only tmpfs, mode 0000, onto target: its mount fd or -errno */
int init_empty_tmpfs_onto(int target);
/*
 * /dev as bubblewrap's --dev makes it, from the host's device nodes that
 * bwrap bound (recursively) at `from`: a tmpfs with null, zero, full,
 * random, urandom and tty bound in, a devpts of its own, the usual
 * symlinks; then `from` is unmounted (or, where its mounts are locked,
 * covered), so nothing else of the host's /dev stays reachable.
 * 0 or -errno with err set.
 */
int init_make_dev(const char *from, char *err, size_t errlen);
/* Makes the policy's mounts (init_mounts.c) and remembers them in w.
 * 0 or -errno with err set. */
int init_apply_mounts(const struct init_mount *m, size_t n, struct init_watch *w, char *err,
                      size_t errlen);
/* Sets this user namespace's max_user_namespaces to 0 and verifies it;
 * refuses to in the initial user namespace. 0 or -errno with err set. */
int init_lock_userns(char *err, size_t errlen);
/* Drops every capability for good and verifies it. 0 or -errno with err set. */
int init_drop_caps(char *err, size_t errlen);

/*
 * Opens a listening TCP socket on 127.0.0.1:port (0: ephemeral), CLOEXEC.
 * Returns the fd (and the bound port in *bound) or -errno.
 */
int net_listen_loopback(int port, int *bound);

#endif
