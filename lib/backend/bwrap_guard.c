#include "backend/bwrap_guard.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backend/bwrap_args.h"
#include "backend/bwrap_internal.h"
#include "ccsandbox/ccsandbox.h"
#include "config.h"
#include "core/ctx.h"
#include "core/session.h"
#include "policy/policy.h"
#include "util/err.h"

#if CCSB_HAVE_SECCOMP
#include "guard/guard.h"

static void free_program(void *p)
{
    guard_program_free(p);
}

/*
 * The compiled program for cfg. libseccomp's compile is the costly part of
 * the guard's setup, and its output depends on cfg alone: built once per
 * context and configuration, then shared read-only by the sessions.
 */
static int program_for(struct ccsb_ctx *ctx, struct bwrap_session *bs,
                       const struct guard_filter_cfg *cfg, char *err, size_t errlen)
{
    struct guard_program *prog = ctx_memo_get(ctx, CTX_MEMO_GUARD_PROGRAM, cfg, sizeof *cfg);
    if (prog) {
        bs->guard_prog = prog;
        bs->guard_prog_owned = 0;
        return 0;
    }
    int r = guard_program_build(cfg, &prog, err, errlen);
    if (r)
        return r;
    struct guard_program *shared =
        ctx_memo_put(ctx, CTX_MEMO_GUARD_PROGRAM, cfg, sizeof *cfg, prog, free_program);
    bs->guard_prog = shared ? shared : prog;
    bs->guard_prog_owned = !shared; /* not cached (memo full): ours to free */
    return 0;
}

int bwrap_guard_expect(struct ccsb_ctx *ctx, int *have_guard)
{
    int supported;
    /* Not run yet: assume yes; bwrap_start runs it while bwrap starts and
     * starts over (once) if that was wrong. */
    *have_guard = ctx_cached_check_peek(ctx, CTX_CHECK_GUARD, &supported) ? supported : 1;
    return 1;
}

int bwrap_guard_prepare(struct ccsb_ctx *ctx, struct bwrap_session *bs, const struct ccsb_policy *p, int *have_guard,
                        char *err, size_t errlen)
{
    *have_guard = 0;
    char why[256];
    /* The kernel's answer cannot change while we run: once per context. */
    int supported = ctx_cached_check(ctx, CTX_CHECK_GUARD, guard_supported, why, sizeof why);
    if (!supported && p->deny_write_globs.n)
        return errf(err, errlen, CCSB_E_POLICY,
                    "denyWriteGlobs (%s%s) cannot be enforced on this host: %s",
                    p->deny_write_globs.v[0], p->deny_write_globs.n > 1 ? ", ..." : "", why);
    int r = guard_globs_validate((const char *const *)p->deny_write_globs.v,
                                 p->deny_write_globs.n, err, errlen);
    if (r)
        return r;
    bs->guard_notify = supported;
    bs->guard_ctx = ctx; /* (bwrap_guard_build's program memo) */
    *have_guard = supported;
    return 0;
}

int bwrap_guard_build(struct bwrap_session *bs, const struct ccsb_policy *p,
                      struct bwrap_plan *plan, char *err, size_t errlen)
{
    int dir_globs = 0;
    for (size_t i = 0; i < p->deny_write_globs.n; i++) {
        const char *g = p->deny_write_globs.v[i];
        dir_globs |= g[strlen(g) - 1] == '/';
    }
    /* Without user notification the static deny filter still applies.
     * cfg is also the program's cache key, compared byte for byte: zeroed
     * first, plain values only. */
    struct guard_filter_cfg cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.allow_unix_sockets = p->unix_sockets.n > 0;
    cfg.notify = bs->guard_notify;
    /* a missing protected directory (.vscode, .git) must not be made */
    cfg.trap_mkdir = dir_globs || plan->guard_anchors.n > 0;
    /* a protected file the host replaces loses its read-only bind, and an
     * existing glob match the host makes has none: writes are checked */
    cfg.trap_writes = cfg.notify && (plan->guard_anchors.n > 0 || p->deny_write_globs.n > 0);
    int r = program_for(bs->guard_ctx, bs, &cfg, err, errlen);
    if (r)
        return r;
    /* The rules travel with the session: the supervisor starts later. */
    bs->guard_anchors = plan->guard_anchors;
    bs->guard_rests = plan->guard_rests;
    bs->guard_kinds = plan->guard_kinds;
    plan->guard_anchors = (struct strv)STRV_INIT;
    plan->guard_rests = (struct strv)STRV_INIT;
    plan->guard_kinds = (struct strv)STRV_INIT;
    return 0;
}

int bwrap_guard_send(struct bwrap_session *bs, char *err, size_t errlen)
{
    if (!bs->guard_prog)
        return 0;
    unsigned long flags = 0;
    int fd = guard_program_memfd(bs->guard_prog, &flags);
    if (fd < 0)
        return errf(err, errlen, CCSB_E_IO, "guard program: %s", strerror(-fd));
    /* No reply of its own: ccsb-init takes it before it says READY, and a
     * refusal is its FATAL instead (no command runs without it). */
    struct init_msg m;
    init_msg_init(&m, INIT_MSG_GUARD_FILTER, bs->next_req++);
    m.a = (int32_t)flags;
    int r = bwrap_send(bs, &m, &fd, 1);
    close(fd);
    if (r < 0)
        return errf(err, errlen, CCSB_E_LAUNCH, "the sandbox ended while starting (%s)",
                    bs->errtail_len ? bs->errtail : "before taking the guard filter");
    return 0;
}

static void on_violation(void *ud, uint64_t tag, const char *action, const char *target,
                         const char *raw)
{
    struct ccsb_session *s = ud;
    struct exec *x = tag ? session_find_exec(s, tag) : NULL;
    struct bwrap_exec *be = x ? x->bdata : NULL;
    if (be && target && *target) {
        const char *base = strrchr(target, '/');
        snprintf(be->guard_recent[be->guard_next++ % BWRAP_GUARD_RECENT],
                 sizeof be->guard_recent[0], "%s", base ? base + 1 : target);
    }
    session_violation(s, tag, action, target, raw);
}

void bwrap_guard_flush(struct bwrap_session *bs)
{
    guard_supervisor_flush_reports(bs->guard);
}

int bwrap_guard_reported(const struct bwrap_exec *be, const char *target)
{
    const char *base = strrchr(target, '/');
    base = base ? base + 1 : target;
    if (!*base)
        return 0;
    for (size_t i = 0; i < BWRAP_GUARD_RECENT; i++)
        if (strncmp(be->guard_recent[i], base, sizeof be->guard_recent[0] - 1) == 0)
            return 1;
    return 0;
}

/* The policy's globs outlive the session's supervisor; this outlives all. */
static const char *const no_globs[] = {NULL};

int bwrap_guard_start(struct ccsb_session *s, struct bwrap_session *bs, char *err,
                      size_t errlen)
{
    if (!bs->guard_notify || bs->guard)
        return 0;
    const char *const *globs = s->policy->deny_write_globs.n
                                   ? (const char *const *)s->policy->deny_write_globs.v
                                   : no_globs;
    size_t n = bs->guard_anchors.n;
    struct guard_path_rule *rules = n ? calloc(n, sizeof *rules) : NULL;
    if (n && !rules)
        return errf(err, errlen, CCSB_E_NOMEM, "guard: out of memory");
    for (size_t i = 0; i < n; i++)
        rules[i] = (struct guard_path_rule){bs->guard_anchors.v[i], bs->guard_rests.v[i],
                                            strcmp(bs->guard_kinds.v[i], "file") == 0};
    char why[256];
    int r = guard_supervisor_start_with_paths(ctx_base(s->ctx), globs, rules, n, on_violation,
                                              s, &bs->guard, why, sizeof why);
    free(rules);
    return r ? errf(err, errlen, r, "cannot start the seccomp guard's supervisor: %s", why) : 0;
}

int bwrap_guard_attach(struct ccsb_session *s, struct bwrap_session *bs)
{
    if (!bs->guard_notify)
        return 0;
    char err[256];
    int r = bs->guard ? 0 : bwrap_guard_start(s, bs, err, sizeof err);
    if (r == 0)
        r = guard_supervisor_watch(bs->guard, err, sizeof err);
    if (r)
        ctx_err(s->ctx, r, "guard: %s", err);
    return r;
}

void bwrap_guard_listener(struct bwrap_session *bs, uint64_t exec_id, int fd)
{
    char err[128];
    /* Without a supervisor the listener is closed: the command's trapped
     * calls then fail (ENOSYS), they never pass unchecked. */
    if (!bs->guard) {
        close(fd);
        return;
    }
    /* A refusal closes it too, and the supervisor reports it (guard-error
     * with the exec's id): nothing more to say here. */
    (void)guard_supervisor_add_listener(bs->guard, fd, exec_id, err, sizeof err);
}

void bwrap_guard_finish(struct bwrap_session *bs)
{
    guard_supervisor_finish(bs->guard);
}

void bwrap_guard_release(struct bwrap_session *bs)
{
    guard_supervisor_free(bs->guard);
    bs->guard = NULL;
    if (bs->guard_prog_owned)
        guard_program_free(bs->guard_prog);
    bs->guard_prog = NULL;
    bs->guard_prog_owned = 0;
    strv_clear(&bs->guard_anchors);
    strv_clear(&bs->guard_rests);
    strv_clear(&bs->guard_kinds);
}

#else /* no libseccomp in this build */

int bwrap_guard_expect(struct ccsb_ctx *ctx, int *have_guard)
{
    *have_guard = 0;
    return 0;
}

int bwrap_guard_prepare(struct ccsb_ctx *ctx, struct bwrap_session *bs, const struct ccsb_policy *p, int *have_guard,
                        char *err, size_t errlen)
{
    *have_guard = 0;
    return 0; /* bwrap_plan_build refuses globs it cannot enforce */
}

void bwrap_guard_flush(struct bwrap_session *bs)
{
}

int bwrap_guard_reported(const struct bwrap_exec *be, const char *target)
{
    return 0;
}

int bwrap_guard_build(struct bwrap_session *bs, const struct ccsb_policy *p,
                      struct bwrap_plan *plan, char *err, size_t errlen)
{
    return 0;
}

int bwrap_guard_send(struct bwrap_session *bs, char *err, size_t errlen)
{
    return 0;
}

int bwrap_guard_start(struct ccsb_session *s, struct bwrap_session *bs, char *err,
                      size_t errlen)
{
    return 0;
}

int bwrap_guard_attach(struct ccsb_session *s, struct bwrap_session *bs)
{
    return 0;
}

void bwrap_guard_listener(struct bwrap_session *bs, uint64_t exec_id, int fd)
{
    close(fd);
}

void bwrap_guard_finish(struct bwrap_session *bs)
{
}

void bwrap_guard_release(struct bwrap_session *bs)
{
}
#endif
