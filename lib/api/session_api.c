/* Exported session calls: argument checks, then the core on the loop thread. */
#include <stdlib.h>
#include <string.h>

#include "backend/backend.h"
#include "ccsandbox/ccsandbox.h"
#include "core/ctx.h"
#include "core/ctx_internal.h"
#include "core/probe.h"
#include "core/session.h"

CCSB_API int ccsb_probe(ccsb_ctx *ctx, const ccsb_probe_result **out)
{
    if (!ctx || !out)
        return CCSB_E_INVAL;
    *out = ctx_probe(ctx);
    return *out ? 0 : ctx_err(ctx, CCSB_E_NOMEM, "out of memory");
}

CCSB_API int ccsb_ctx_prestart(ccsb_ctx *ctx)
{
    if (!ctx)
        return CCSB_E_INVAL;
    return session_prestart(ctx);
}

CCSB_API int ccsb_launch(ccsb_ctx *ctx, const ccsb_spec *spec, ccsb_session **out)
{
    if (!ctx || !out)
        return CCSB_E_INVAL;
    *out = NULL;
    if (!spec)
        return ctx_err(ctx, CCSB_E_INVAL, "spec: NULL");
    return session_launch(ctx, spec, NULL, out, NULL);
}

CCSB_API int ccsb_launch_exec(ccsb_ctx *ctx, const ccsb_spec *spec, const ccsb_exec_req *req,
                              ccsb_session **out, uint64_t *out_exec_id)
{
    if (!ctx || !out || !out_exec_id)
        return CCSB_E_INVAL;
    *out = NULL;
    *out_exec_id = 0;
    if (!spec)
        return ctx_err(ctx, CCSB_E_INVAL, "spec: NULL");
    if (!req)
        return ctx_err(ctx, CCSB_E_INVAL, "req: NULL");
    return session_launch(ctx, spec, req, out, out_exec_id);
}

static int stop_on_loop(void *arg)
{
    return session_stop_on_loop(arg);
}

CCSB_API int ccsb_session_stop(ccsb_session *s)
{
    if (!s)
        return CCSB_E_INVAL;
    if (ctx_in_callback(s->ctx))
        return ctx_err(s->ctx, CCSB_E_REENTRANT,
                       "ccsb_session_stop called from inside a context callback (destroy the "
                       "session instead, or stop it after the callback returned)");
    return ctx_call(s->ctx, stop_on_loop, s);
}

CCSB_API void ccsb_session_destroy(ccsb_session *s)
{
    if (s)
        session_destroy(s);
}

static int suspend_on_loop(void *arg)
{
    struct ccsb_session *s = arg;
    if (s->state != CCSB_STATE_WARM && s->state != CCSB_STATE_ACTIVE)
        return ctx_err(s->ctx, CCSB_E_STATE, "cannot suspend a %s session",
                       ccsb_state_name(s->state));
    if (!s->ops->suspend)
        return ctx_err(s->ctx, CCSB_E_UNSUPPORTED, "the %s backend cannot suspend",
                       s->ops->name);
    int r = s->ops->suspend(s);
    if (r < 0)
        return ctx_err(s->ctx, r, "suspend failed");
    session_set_state(s, CCSB_STATE_SUSPENDED, "suspended");
    return 0;
}

static int resume_on_loop(void *arg)
{
    struct ccsb_session *s = arg;
    if (s->state != CCSB_STATE_SUSPENDED)
        return ctx_err(s->ctx, CCSB_E_STATE, "cannot resume a %s session",
                       ccsb_state_name(s->state));
    int r = s->ops->resume(s);
    if (r < 0)
        return ctx_err(s->ctx, r, "resume failed");
    session_set_state(s, session_running_execs(s) ? CCSB_STATE_ACTIVE : CCSB_STATE_WARM,
                      "resumed");
    return 0;
}

CCSB_API int ccsb_session_suspend(ccsb_session *s)
{
    return s ? ctx_call(s->ctx, suspend_on_loop, s) : CCSB_E_INVAL;
}

CCSB_API int ccsb_session_resume(ccsb_session *s)
{
    return s ? ctx_call(s->ctx, resume_on_loop, s) : CCSB_E_INVAL;
}

CCSB_API const char *ccsb_session_id(const ccsb_session *s)
{
    return s ? s->id : "";
}

CCSB_API int ccsb_session_backend(const ccsb_session *s)
{
    return s ? s->backend : CCSB_E_INVAL;
}

CCSB_API int ccsb_session_state(const ccsb_session *s)
{
    return s ? __atomic_load_n(&s->state, __ATOMIC_ACQUIRE) : CCSB_E_INVAL;
}

CCSB_API const char *ccsb_session_error(const ccsb_session *s)
{
    const char *e = s ? __atomic_load_n(&s->error, __ATOMIC_ACQUIRE) : NULL;
    return e ? e : "";
}

struct details_args {
    struct ccsb_session *s;
    char **out;
};

static int details_on_loop(void *arg)
{
    struct details_args *a = arg;
    return session_details(a->s, a->out);
}

CCSB_API int ccsb_session_details_json(const ccsb_session *s, char **out_json)
{
    if (!s || !out_json)
        return CCSB_E_INVAL;
    *out_json = NULL;
    struct details_args a = {(struct ccsb_session *)s, out_json};
    return ctx_call(s->ctx, details_on_loop, &a);
}
