/*
 * Sessions and execs: the state machine and the bookkeeping that is the
 * same for every backend (host-side stdio pipes, timers, exit ordering).
 * Backends plug in through struct backend_ops (backend/backend.h).
 * Everything here runs on the loop thread unless noted.
 */
#ifndef CCSB_CORE_SESSION_H
#define CCSB_CORE_SESSION_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct event;
struct ccsb_ctx;
struct ccsb_spec;
struct ccsb_policy;
struct backend_ops;
struct rpmemo;

struct exec {
    struct ccsb_session *s;
    uint64_t id;
    /* Host ends of the command's stdio; -1 when closed. With a pty, out_fd
     * is the master and in_fd a dup of it; err_fd is -1. */
    int in_fd, out_fd, err_fd;
    struct event *out_ev, *err_ev, *timer;
    int out_paused, err_paused; /* reader stopped by backpressure (ctx.h) */
    int pty;
    int end_session;     /* the session stops when this exec's main process ends */
    pid_t pid;           /* as the host sees it (none) or as the sandbox does (bwrap) */
    int running;         /* the command's main process has not been reported yet */
    int kill_reason;     /* CCSB_KILL_* once we decided to kill it, else 0 */
    void *bdata;         /* backend per-exec data */
    struct exec *next;
};

struct ccsb_session {
    struct ccsb_ctx *ctx;
    struct ccsb_spec *spec;       /* validated copy */
    struct ccsb_policy *policy;   /* resolved once at launch */
    /* During ops->launch only: the policy build's realpath memo, for a
     * backend that resolves the same paths again (NULL otherwise). */
    struct rpmemo *path_memo;
    char *id;
    int backend;                  /* CCSB_BACKEND_* actually running */
    const struct backend_ops *ops;
    void *bdata;                  /* backend per-session data */
    int state;                    /* CCSB_STATE_* */
    char *error;                  /* NULL until the first failure, then set once */
    char *tmpdir;                 /* host per-session tmp (owned, removed at stop) */
    uint64_t next_exec_id;
    struct exec *execs;
    struct event *timer;          /* session wall-clock limit */
    int ending;                   /* an end_session exec ended: no new exec, stop soon */
    struct event *end_ev;         /* that deferred stop */
    int attached;                 /* registered on the loop */
    int doomed;                   /* destroyed from a callback, freed later */
    /* ccsb_launch_exec's command, prepared before the launch: a backend
     * whose launch can send it ahead (ops->exec_finish) does and sets
     * first_sent; the core starts it once attached. */
    struct exec *first;
    const struct ccsb_exec_req *first_req;
    int first_child[3];
    int first_sent;
    struct ccsb_session *next;    /* context list */
    struct ccsb_session *doomed_next;
};

/* Sets state and emits a state event when it changes. */
void session_set_state(struct ccsb_session *s, int state, const char *why);
/* Puts the session into ERROR with a message (and an error event). */
void session_fail(struct ccsb_session *s, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Emits a violation event for the session (exec_id 0 for session-level). */
void session_violation(struct ccsb_session *s, uint64_t exec_id, const char *action,
                       const char *target, const char *raw);

struct exec *session_find_exec(struct ccsb_session *s, uint64_t id);

/*
 * Backend reports: the exec's main process ended. code >= 0 for a normal
 * exit, else sig > 0. Drains what is already in the pipes, emits killed
 * (when we killed it) and exit, updates the state.
 */
void exec_exited(struct exec *x, int code, int sig);

/*
 * Backend reports: the whole session died under us (sandbox gone). Every
 * running exec gets killed(host) + exit; the session goes to ERROR.
 */
void session_died(struct ccsb_session *s, const char *why);
/* The same with a message of the backend's own (said as is). */
void session_lost(struct ccsb_session *s, const char *why);

/* Number of execs whose main process still runs. */
int session_running_execs(const struct ccsb_session *s);

/* Launch (caller's thread): validate, resolve backend, build policy, start,
 * attach. On failure nothing is left running and ctx has the message.
 * With first (ccsb_launch_exec) the command starts as the session becomes
 * ready, its id in *first_id; if it cannot start, the session is gone. */
struct ccsb_exec_req;
int session_launch(struct ccsb_ctx *ctx, const struct ccsb_spec *spec,
                   const struct ccsb_exec_req *first, struct ccsb_session **out,
                   uint64_t *first_id);
/* ccsb_ctx_prestart: the native backend's standby, or CCSB_E_UNAVAILABLE
 * (ctx has the message). */
int session_prestart(struct ccsb_ctx *ctx);
/* Stops the session from the loop once the current callback is done (an
 * end_session exec ended: the backend may be mid-dispatch). */
void session_stop_soon(struct ccsb_session *s);
/* Kill everything, report exits, state destroyed (loop thread). */
int session_stop_on_loop(struct ccsb_session *s);
/* Stop if needed and free (any thread). */
void session_destroy(struct ccsb_session *s);
/* The details JSON (loop thread). */
int session_details(struct ccsb_session *s, char **out);

#endif
