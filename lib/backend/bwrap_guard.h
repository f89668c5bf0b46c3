/*
 * The seccomp guard in a bubblewrap session (lib/guard): the host builds
 * the filter program once per session and hands it to ccsb-init, every exec
 * child loads it and sends its listener back, and a supervisor on the
 * session's loop answers the trapped calls and reports violations.
 */
#ifndef CCSB_BACKEND_BWRAP_GUARD_H
#define CCSB_BACKEND_BWRAP_GUARD_H

#include <stddef.h>
#include <stdint.h>

struct ccsb_session;
struct ccsb_policy;
struct bwrap_session;
struct ccsb_ctx;

/* Caller's thread, before the plan, without running the costly support
 * check: returns 1 when a program will be sent (ccsb-init must await it),
 * and sets *have_guard to what bwrap_guard_prepare will most likely say
 * (the cached check, or 1 while it has not run). */
int bwrap_guard_expect(struct ccsb_ctx *ctx, int *have_guard);
/* Caller's thread, while bwrap starts: decides what the guard can do here
 * (the support check runs once per context). Fails closed (CCSB_E_POLICY)
 * when the policy has deny-write globs and this host cannot enforce them.
 * Sets *have_guard when create-time rules (globs, missing protected paths)
 * will be enforced. */
int bwrap_guard_prepare(struct ccsb_ctx *ctx, struct bwrap_session *bs, const struct ccsb_policy *p, int *have_guard,
                        char *err, size_t errlen);
/* Caller's thread, after the plan and bwrap_guard_prepare: takes the
 * program (compiled once per context and configuration) and the plan's
 * protected-path rules for the supervisor. */
struct bwrap_plan;
int bwrap_guard_build(struct bwrap_session *bs, const struct ccsb_policy *p,
                      struct bwrap_plan *plan, char *err, size_t errlen);
/* Caller's thread, before READY: gives the program to ccsb-init, which
 * takes it before it says READY (started with --await-guard). */
int bwrap_guard_send(struct bwrap_session *bs, char *err, size_t errlen);
/* Caller's thread, while the sandbox is being built: starts the
 * supervisor's thread (bwrap_guard_attach then registers it on the base). */
int bwrap_guard_start(struct ccsb_session *s, struct bwrap_session *bs, char *err,
                      size_t errlen);
/* Loop thread: the supervisor on the session's base (started now if the
 * launch did not). */
int bwrap_guard_attach(struct ccsb_session *s, struct bwrap_session *bs);
/* Loop thread: an exec's listener arrived (takes fd). */
void bwrap_guard_listener(struct bwrap_session *bs, uint64_t exec_id, int fd);
/* The sandbox is about to be torn down: the supervisor ends by itself once
 * its last task is gone (answering until then), in parallel with bwrap. */
void bwrap_guard_finish(struct bwrap_session *bs);
/* Stops the supervisor and frees everything (safe to call twice). */
void bwrap_guard_release(struct bwrap_session *bs);
/* Loop thread: deliver the guard's queued reports now (before reading a
 * command's stderr line about the same denial). */
void bwrap_guard_flush(struct bwrap_session *bs);
/* 1 when the guard already reported target's final name for this exec. */
struct bwrap_exec;
int bwrap_guard_reported(const struct bwrap_exec *be, const char *target);

#endif
