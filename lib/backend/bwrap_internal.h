/*
 * The bubblewrap backend's per-session state, shared by bwrap.c (the ops),
 * bwrap_launch.c (spawn and handshake) and bwrap_ctl.c (the host side of
 * the control socket).
 */
#ifndef CCSB_BACKEND_BWRAP_INTERNAL_H
#define CCSB_BACKEND_BWRAP_INTERNAL_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "backend/bwrap_cgroup.h"
#include "backend/bwrap_violation.h"
#include "backend/init_proto.h"
#include "backend/placeholder.h"
#include "util/strv.h"

struct event;
struct ccsb_session;
struct egress_pair;
struct guard_program;
struct guard_supervisor;

/* Control messages read while waiting for a reply, handled afterwards. */
#define BWRAP_PENDING_MAX 256

struct bwrap_session {
    pid_t pid;        /* our child: bwrap, or the janitor that started it (cgroups) */
    int pidfd;        /* of pid */
    pid_t janitor;    /* a janitor watching bwrap from the side, or 0 */
    int ctrl;         /* host end of the control socket */
    int errfd;        /* read end of bwrap's (and ccsb-init's) stderr */
    int watch_w;      /* janitor's watch pipe, write end (-1 without a janitor) */
    int listeners[2]; /* http, socks: listening sockets in the sandbox's netns */
    int http_port, socks_port;
    char *helper;     /* host path of ccsb-init */
    char *bwrap;      /* host path of bwrap */
    struct placeholder *ph; /* mount points this launch created (paths owned) */
    size_t nph;
    struct bwrap_cgroup cg;
    char limits_init[INIT_TEXT_MAX]; /* what ccsb-init applied ("rlimit-as ...") */
    char home[4096];  /* HOME inside the sandbox */
    int stopping;     /* stop is tearing it down: nothing to report */
    int dead;         /* the control socket ended */
    int died_reported;
    long oom_seen;    /* OOM kills already attributed */
    int suspended_by_signal;
    uint64_t next_req;/* ids for SUSPEND/RESUME (high bit set: never an exec id) */
    char errtail[512];/* the last stderr text of bwrap/ccsb-init */
    size_t errtail_len;

    struct egress_pair *egress; /* the session's proxies (when built in) */
    struct guard_program *guard_prog;   /* the seccomp guard (bwrap_guard.c) */
    struct guard_supervisor *guard;     /* answers trapped calls, NULL without notify */
    int guard_notify;                   /* execs hand us a listener */
    struct strv guard_anchors, guard_rests; /* missing protected paths (bwrap_args.h) */
    struct event *ctrl_ev, *err_ev, *pid_ev;
    struct init_msg pending[BWRAP_PENDING_MAX];
    int pending_fd[BWRAP_PENDING_MAX]; /* a fd that came with it (-1) */
    size_t npending;
};

/* Per exec: the stderr line assembler for violations (flat: core frees it). */
#define BWRAP_GUARD_RECENT 8

struct bwrap_exec {
    struct violation_lines lines;
    /* Final names the guard reported for this exec lately: the command's
     * own "Permission denied" line about one of them is the same denial,
     * not a second violation. */
    char guard_recent[BWRAP_GUARD_RECENT][64]; /* inline: freed with the exec */
    unsigned guard_next;
};

/* ---- bwrap_launch.c ---- */

/* Everything up to READY on the caller's thread. On failure nothing is
 * left running or on disk. */
int bwrap_start(struct ccsb_session *s, struct bwrap_session *bs, char *err, size_t errlen);
/* Ends the sandbox (bounded), reaps our child, removes what launch made. */
void bwrap_teardown(struct ccsb_session *s, struct bwrap_session *bs);

/* ---- bwrap_ctl.c ---- */

int bwrap_send(struct bwrap_session *bs, const struct init_msg *m, const int *fds, size_t n);
/*
 * Waits (bounded) for the reply of `type`s matching id; other messages are
 * queued for bwrap_dispatch. With want_fd, a fd sent with the reply lands in
 * *fd_out (else -1). Returns 0, CCSB_E_TIMEDOUT or CCSB_E_IO (sandbox gone).
 */
int bwrap_wait_reply(struct bwrap_session *bs, uint64_t id, uint32_t t1, uint32_t t2,
                     struct init_msg *out, int *fd_out, int timeout_ms);
/* Handles queued messages, then whatever the socket has (loop thread). */
void bwrap_dispatch(struct ccsb_session *s, struct bwrap_session *bs);

#endif
