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
#include "core/ctx.h"
#include "util/strv.h"

struct event;
struct ccsb_ctx;
struct ccsb_session;
struct ccsb_exec_req;
struct exec;
struct egress_pair;
struct guard_program;
struct guard_supervisor;

/* Control messages read while waiting for a reply, handled afterwards. */
#define BWRAP_PENDING_MAX 256

struct bwrap_session {
    pid_t pid;        /* our child: bwrap, or the janitor that started it (cgroups) */
    int pidfd;        /* of pid */
    pid_t janitor;    /* a janitor watching bwrap from the side, or 0 */
    int jpidfd;       /* of janitor (-1) */
    int ctrl;         /* host end of the control socket */
    int errfd;        /* read end of bwrap's (and ccsb-init's) stderr */
    int watch_w;      /* janitor's watch pipe, write end (-1 without a janitor) */
    int args_w;       /* bwrap's --args stream until its options are written (-1) */
    int err_w;        /* write end of the error pipe, for a side janitor (-1) */
    int started;      /* bwrap_start succeeded (else bwrap_spawn at most ran) */
    int prestarting;  /* prestart's spawn handed to the loop thread, not finished */
    struct ctx_call spawn_call;
    struct ccsb_ctx *spawn_ctx;
    char spawn_err[256];
    int listeners[2]; /* http, socks: listening sockets in the sandbox's netns */
    int http_port, socks_port;
    int gate;         /* the first command's go (INIT_EXEC_GATE) until attached (-1) */
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
    int guard_prog_owned;               /* else shared through the context's memo */
    struct guard_supervisor *guard;     /* answers trapped calls, NULL without notify */
    int guard_notify;                   /* execs hand us a listener */
    struct ccsb_ctx *guard_ctx;         /* whose memo holds guard_prog (shared) */
    struct strv guard_anchors, guard_rests, guard_kinds; /* the plan's guard rules (bwrap_args.h) */
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
 * left running or on disk. BWRAP_START_AGAIN: the plan's guess about the
 * guard was wrong (learnt while bwrap started, now cached in the context);
 * nothing is left either, start again with a fresh bwrap_session. */
#define BWRAP_START_AGAIN 1
int bwrap_start(struct ccsb_session *s, struct bwrap_session *bs, char *err, size_t errlen);
/*
 * What needs no policy: starts bwrap (its options to come, see bwrap_argv)
 * with the channels to it. bwrap_start calls it when nothing did before;
 * bwrap_prestart calls it while the core still builds the policy. On
 * failure nothing is left.
 */
int bwrap_spawn(struct ccsb_ctx *ctx, struct bwrap_session *bs, char *err, size_t errlen);
/* The binaries, once: bwrap and ccsb-init (never from a writable directory). */
int bwrap_locate(struct ccsb_ctx *ctx, struct bwrap_session *bs, char *err, size_t errlen);
/* bwrap_spawn on the context's loop thread (whose life, not a caller's
 * thread's, bwrap's --die-with-parent then follows), without waiting:
 * bwrap_spawn_finish waits and returns its result (message in err). */
void bwrap_spawn_start(struct ccsb_ctx *ctx, struct bwrap_session *bs);
int bwrap_spawn_finish(struct ccsb_ctx *ctx, struct bwrap_session *bs, char *err,
                       size_t errlen);
/* Ends the sandbox (bounded), reaps our child, removes what launch made. */
void bwrap_teardown(struct bwrap_session *bs);

/* ---- bwrap.c ---- */

/* The session's egress pair without its listeners (egress_pair_prepare),
 * in bs->egress: nothing of it is on the loop yet, so any thread may. */
int bwrap_egress_prepare(struct ccsb_session *s, struct bwrap_session *bs, char *err,
                         size_t errlen);
/* Sends a command to ccsb-init; the launch sends ccsb_launch_exec's first
 * one ahead of READY with it, held at a gate (>= 0: its sandbox end) that
 * bwrap_exec_finish opens through bs->gate. */
int bwrap_exec_send(struct ccsb_session *s, struct bwrap_session *bs, struct exec *x,
                    const struct ccsb_exec_req *req, int cin, int cout, int cerr, int gate,
                    char *err, size_t errlen);

/* ---- bwrap_ctl.c ---- */

int bwrap_send(struct bwrap_session *bs, const struct init_msg *m, const int *fds, size_t n);
/*
 * The spare: ccsb-init forks the next exec's process ahead of its request
 * (it loads the guard filter meanwhile) and hands it the request over a
 * socket pair that comes from here, so that no socket of the sandbox's own
 * network namespace exists. bwrap_spare_pair makes one (0, or -1: then no
 * spare, every exec forks); bwrap_send_spare sends one on its own.
 */
int bwrap_spare_pair(int pair[2]);
int bwrap_send_spare(struct bwrap_session *bs);
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
