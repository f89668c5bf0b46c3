/*
 * The session state machine:
 *
 *   created --launch ok--> warm <--> active (while an exec runs)
 *      |                    |  ^--resume-- suspended
 *      |                    +--suspend-----^
 *      +--launch failed: the handle is never returned
 *   warm/active/suspended --stop--> destroyed
 *   any --sandbox died--> error
 *
 * Launch resolves the backend, builds the policy and lets the backend start
 * the sandbox on the caller's thread; then everything else happens on the
 * loop thread (ctx.h).
 */
#include "core/session.h"

#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include <event2/event.h>
#include <jansson.h>

#include "config.h"

#include "backend/backend.h"
#include "ccsandbox/ccsandbox.h"
#include "core/ctx.h"
#include "core/ctx_internal.h"
#include "core/event.h"
#include "core/exec.h"
#include "core/exec_req.h"
#include "core/probe.h"
#include "policy/policy.h"
#include "spec/spec.h"
#include "util/json.h"
#include "util/rpmemo.h"

static void emit_simple(struct ccsb_session *s, int type, const char *msg)
{
    struct ccsb_event *ev = evt_new(type, s->id, 0);
    if (!ev)
        return;
    if (msg && evt_set_message(ev, "%s", msg) < 0) {
        ccsb_event_free(ev);
        return;
    }
    ctx_emit(s->ctx, ev);
}

void session_set_state(struct ccsb_session *s, int state, const char *why)
{
    if (s->state == state)
        return;
    __atomic_store_n(&s->state, state, __ATOMIC_RELEASE); /* read by getters anywhere */
    struct ccsb_event *ev = evt_new(CCSB_EVENT_STATE, s->id, 0);
    if (!ev)
        return;
    ev->state = state;
    if (evt_set_message(ev, "%s", why ? why : ccsb_state_name(state)) < 0) {
        ccsb_event_free(ev);
        return;
    }
    ctx_emit(s->ctx, ev);
}

void session_fail(struct ccsb_session *s, const char *fmt, ...)
{
    char *msg = NULL;
    va_list ap;
    va_start(ap, fmt);
    if (vasprintf(&msg, fmt, ap) < 0)
        msg = NULL;
    va_end(ap);
    const char *text = msg ? msg : "session failed";
    emit_simple(s, CCSB_EVENT_ERROR, text);
    /* The first error is the one that put the session into ERROR. It is
     * set once: ccsb_session_error's pointer lives as long as the handle,
     * and other threads may be reading it. */
    if (!s->error && msg) {
        __atomic_store_n(&s->error, msg, __ATOMIC_RELEASE);
        msg = NULL;
    }
    session_set_state(s, CCSB_STATE_ERROR, text);
    free(msg);
}

void session_violation(struct ccsb_session *s, uint64_t exec_id, const char *action,
                       const char *target, const char *raw)
{
    struct ccsb_event *ev = evt_new(CCSB_EVENT_VIOLATION, s->id, exec_id);
    if (!ev)
        return;
    ev->action = strdup(action ? action : "");
    ev->target = strdup(target ? target : "");
    ev->raw = strdup(raw ? raw : "");
    if (!ev->action || !ev->target || !ev->raw) {
        ccsb_event_free(ev);
        return;
    }
    ctx_emit(s->ctx, ev);
}

struct exec *session_find_exec(struct ccsb_session *s, uint64_t id)
{
    for (struct exec *x = s->execs; x; x = x->next)
        if (x->id == id)
            return x;
    return NULL;
}

int session_running_execs(const struct ccsb_session *s)
{
    int n = 0;
    for (const struct exec *x = s->execs; x; x = x->next)
        n += x->running;
    return n;
}

void session_died(struct ccsb_session *s, const char *why)
{
    char msg[1024];
    snprintf(msg, sizeof msg, "the sandbox died: %s", why);
    session_lost(s, msg);
}

void session_lost(struct ccsb_session *s, const char *why)
{
    /* An end_session exec ended: the sandbox ending now is the plan, and
     * the deferred stop reports whatever is left. */
    if (s->ending)
        return;
    for (struct exec *x = s->execs; x; x = x->next)
        if (x->running && !x->kill_reason)
            x->kill_reason = CCSB_KILL_HOST;
    for (struct exec *x = s->execs, *next; x; x = next) {
        next = x->next; /* exec_exited may release x */
        if (x->running)
            exec_exited(x, -1, SIGKILL);
    }
    if (s->state != CCSB_STATE_DESTROYED)
        session_fail(s, "%s", why);
}

/* ---- launch ----------------------------------------------------------- */

static char *new_session_id(void)
{
    unsigned char r[8];
    if (getrandom(r, sizeof r, 0) != (ssize_t)sizeof r)
        return NULL;
    char *id = NULL;
    if (asprintf(&id, "s-%02x%02x%02x%02x%02x%02x%02x%02x", r[0], r[1], r[2], r[3], r[4], r[5],
                 r[6], r[7]) < 0)
        return NULL;
    return id;
}

static const struct backend_ops *native_ops(void)
{
#if defined(__linux__) && defined(CCSB_HAVE_BWRAP_BACKEND)
    return &backend_bwrap_ops;
#elif defined(__APPLE__) && CCSB_HAVE_SEATBELT
    return &backend_seatbelt_ops;
#else
    return NULL;
#endif
}

int session_prestart(struct ccsb_ctx *ctx)
{
    if (ctx->dead)
        return ctx_err(ctx, CCSB_E_STATE, "the context was freed");
    const struct backend_ops *ops = native_ops();
    if (!ops || !ops->standby)
        return ctx_err(ctx, CCSB_E_UNAVAILABLE,
                       "nothing to start ahead: this host's native backend (%s) has no "
                       "process to prestart",
                       ops ? ops->name : "none");
    char err[512] = "";
    int r = ctx_standby_full(ctx) ? CCSB_E_STATE : ops->standby(ctx, err, sizeof err);
    if (r == CCSB_E_STATE)
        snprintf(err, sizeof err, "%d prestarted sandboxes already wait (or the context is "
                                  "being freed)",
                 CTX_STANDBY_MAX);
    return r < 0 ? ctx_err(ctx, r, "%s", *err ? err : ccsb_strerror(r)) : 0;
}

/* Picks the backend that will run; never falls back from an explicit ask. */
static int resolve_backend(struct ccsb_ctx *ctx, int requested, int *backend,
                           const struct backend_ops **ops, char **note)
{
    *note = NULL;
    switch (requested) {
    case CCSB_BACKEND_NONE:
        *backend = CCSB_BACKEND_NONE;
        *ops = &backend_none_ops;
        return 0;
    case CCSB_BACKEND_MICROVM:
        return ctx_err(ctx, CCSB_E_UNAVAILABLE,
                       "backend microvm: no microVM runtime is available on this host (this "
                       "build has no microVM support); refusing to fall back to another backend");
    default:
        break;
    }
#ifdef __linux__
    /*
     * An explicit ask for native needs no functional probe (a whole extra
     * bwrap start): the launch tries the same namespaces and explains a
     * refusal the same way (probe_diagnose_userns). Only a missing bwrap is
     * told here, with the install hint.
     */
    if (requested == CCSB_BACKEND_NATIVE && native_ops() && !ctx_probe_cached(ctx)) {
        char *bwrap = probe_find_on_path("bwrap");
        if (!bwrap)
            return ctx_err(ctx, CCSB_E_UNAVAILABLE,
                           "backend native: bubblewrap is not installed: %s",
                           PROBE_BWRAP_INSTALL_HINT);
        free(bwrap);
        *backend = CCSB_BACKEND_NATIVE;
        *ops = native_ops();
        return 0;
    }
#endif
    /* Only the native backend needs to know what the host offers. */
    const struct ccsb_probe_result *pr = ctx_probe(ctx);
    if (!pr)
        return ctx_err(ctx, CCSB_E_NOMEM, "out of memory");
    switch (requested) {
    case CCSB_BACKEND_NATIVE:
        if (!pr->available)
            return ctx_err(ctx, CCSB_E_UNAVAILABLE, "backend native: %s%s%s", pr->note,
                           *pr->hint ? ": " : "", pr->hint);
        if (!native_ops())
            return ctx_err(ctx, CCSB_E_UNAVAILABLE,
                           "backend native: the %s backend is not built into this version of "
                           "libccsandbox; refusing to run unsandboxed",
                           pr->mechanism);
        *backend = CCSB_BACKEND_NATIVE;
        *ops = native_ops();
        return 0;
    case CCSB_BACKEND_AUTO:
    default:
        if (pr->available && native_ops()) {
            *backend = CCSB_BACKEND_NATIVE;
            *ops = native_ops();
        } else {
            *backend = CCSB_BACKEND_NONE;
            *ops = &backend_none_ops;
            if (asprintf(note, "backend auto: native sandbox unavailable (%s); running with "
                               "backend none, WITHOUT isolation",
                         pr->note) < 0)
                *note = NULL;
        }
        return 0;
    }
}

static void on_session_timeout(evutil_socket_t fd, short what, void *arg)
{
    struct ccsb_session *s = arg;
    for (struct exec *x = s->execs; x; x = x->next)
        if (x->running && !x->kill_reason)
            x->kill_reason = CCSB_KILL_TIMEOUT;
    struct ccsb_event *ev = evt_new(CCSB_EVENT_KILLED, s->id, 0);
    if (ev) {
        ev->kill_reason = CCSB_KILL_TIMEOUT;
        evt_set_message(ev, "the session's wall-clock limit ran out");
        ctx_emit(s->ctx, ev);
    }
    session_stop_on_loop(s);
}

struct attach_args {
    struct ccsb_session *s;
    const char *note;
    uint64_t *first_id;
    int first_failed; /* attached, but the first command did not start */
    char err[512];
};

static int attach_on_loop(void *arg)
{
    struct attach_args *a = arg;
    struct ccsb_session *s = a->s;
    /* Events are routed by session id: two live sessions of one context
     * must never share one. Checked here, on the loop thread that owns the
     * list, so concurrent launches cannot both pass. */
    for (struct ccsb_session *o = s->ctx->sessions; o; o = o->next) {
        if (strcmp(o->id, s->id) == 0 && o->state != CCSB_STATE_DESTROYED) {
            snprintf(a->err, sizeof a->err,
                     "sessionId: \"%s\" is already used by a live session of this context",
                     s->id);
            return CCSB_E_STATE;
        }
    }
    if (s->ops->attach) {
        int r = s->ops->attach(s, a->err, sizeof a->err);
        if (r < 0)
            return r;
    }
    if (s->spec->timeout_ms) {
        s->timer = evtimer_new(ctx_base(s->ctx), on_session_timeout, s);
        if (!s->timer)
            return CCSB_E_NOMEM;
        struct timeval tv = {(time_t)(s->spec->timeout_ms / 1000),
                             (suseconds_t)(s->spec->timeout_ms % 1000) * 1000};
        evtimer_add(s->timer, &tv);
    }
    s->attached = 1;
    ctx_add_session(s->ctx, s);
    struct ccsb_event *ev = evt_new(CCSB_EVENT_STARTING, s->id, 0);
    if (ev) {
        evt_set_message(ev, "%s%s%s", s->ops->name, a->note ? ": " : "",
                          a->note ? a->note : "");
        ctx_emit(s->ctx, ev);
    }
    session_set_state(s, CCSB_STATE_WARM, "warm");
    emit_simple(s, CCSB_EVENT_READY, s->ops->name);
    if (s->first) {
        struct exec *x = s->first;
        s->first = NULL;
        *a->first_id = x->id;
        int r = exec_begin(x, s->first_req, s->first_child, s->first_sent, a->err,
                           sizeof a->err);
        s->first_req = NULL; /* the caller's: not kept past the call */
        if (r < 0) {
            *a->first_id = 0;
            a->first_failed = 1;
            session_stop_on_loop(s);
            return r;
        }
    }
    return 0;
}

static void session_free_memory(struct ccsb_session *s)
{
    if (s->ops && s->ops->destroy)
        s->ops->destroy(s);
    policy_free(s->policy);
    ccsb_spec_free(s->spec);
    free(s->id);
    free(s->error);
    free(s->tmpdir);
    free(s);
}

/* Undoes a launch that did not attach: nothing of it is on the loop. */
static void launch_undo(struct ccsb_session *s)
{
    if (s->first) {
        exec_discard(s->first, s->first_child);
        s->first = NULL;
    }
    s->first_req = NULL;
    session_free_memory(s);
}

int session_launch(struct ccsb_ctx *ctx, const struct ccsb_spec *spec,
                   const struct ccsb_exec_req *first, struct ccsb_session **out,
                   uint64_t *first_id)
{
    char err[1024] = "";
    *out = NULL;
    if (first_id)
        *first_id = 0;
    if (ctx->dead)
        return ctx_err(ctx, CCSB_E_STATE, "the context was freed");
    if (spec_validate(spec, err, sizeof err) < 0)
        return ctx_err(ctx, CCSB_E_SPEC, "%s", err);
    if (first && first->argv.n == 0)
        return ctx_err(ctx, CCSB_E_INVAL, "argv: empty");

    int backend = CCSB_BACKEND_NONE;
    const struct backend_ops *ops = NULL;
    char *note = NULL;
    int r = resolve_backend(ctx, spec->backend, &backend, &ops, &note);
    if (r < 0)
        return r;

    struct ccsb_session *s = calloc(1, sizeof *s);
    if (!s) {
        free(note);
        return ctx_err(ctx, CCSB_E_NOMEM, "out of memory");
    }
    s->ctx = ctx;
    s->backend = backend;
    s->ops = ops;
    s->state = CCSB_STATE_CREATED;
    s->first_child[0] = s->first_child[1] = s->first_child[2] = -1;
    r = ccsb_spec_copy(spec, &s->spec);
    if (r < 0) {
        s->ops = NULL;
        session_free_memory(s);
        free(note);
        return ctx_err(ctx, CCSB_E_NOMEM, "out of memory");
    }
    s->id = spec->session_id ? strdup(spec->session_id) : new_session_id();
    if (!s->id) {
        s->ops = NULL;
        session_free_memory(s);
        free(note);
        return ctx_err(ctx, CCSB_E_NOMEM, "cannot make a session id");
    }

    /* The backend's slow start (a process to exec) overlaps the policy. */
    if (ops->prestart)
        ops->prestart(s);
    /* One memo for the policy and the backend's plan: they look at the
     * same ~150 paths, each a stat (a few us) while the sandbox waits. */
    struct rpmemo memo = RPMEMO_INIT;
    struct policy_host host = {.home = getenv("HOME"), .memo = &memo};
    r = policy_build(s->spec, &host, &s->policy, err, sizeof err);
    if (r == 0 && first) {
        r = exec_prepare(s, first, &s->first, s->first_child, err, sizeof err);
        s->first_req = first;
    }
    if (r < 0) {
        rpmemo_clear(&memo);
        if (!s->bdata)
            s->ops = NULL; /* else destroy undoes the prestart */
        launch_undo(s);
        free(note);
        return ctx_err(ctx, r, "%s", err);
    }

    s->path_memo = &memo;
    r = ops->launch(s, err, sizeof err);
    s->path_memo = NULL;
    if (r < 0) {
        rpmemo_clear(&memo);
        s->ops = NULL; /* launch cleans up after itself */
        launch_undo(s);
        free(note);
        return ctx_err(ctx, r, "%s", err);
    }

    ctx_ref(ctx);
    struct attach_args a = {.s = s, .note = note, .first_id = first_id};
    r = ctx_call(ctx, attach_on_loop, &a);
    /* Freed only now: the first command's gate opened in the attach. */
    rpmemo_clear(&memo);
    free(note);
    if (r < 0 && a.first_failed) {
        /* Attached and stopped: the loop owns it until destroyed. */
        session_destroy(s);
        return ctx_err(ctx, r, "the session started but its first command did not: %s",
                       *a.err ? a.err : ccsb_strerror(r));
    }
    if (r < 0) {
        if (ops->stop)
            ops->stop(s);
        launch_undo(s);
        ctx_unref(ctx);
        return ctx_err(ctx, r, "cannot attach the session to the event loop: %s",
                       *a.err ? a.err : ccsb_strerror(r));
    }
    *out = s;
    return 0;
}

/* ---- stop / destroy --------------------------------------------------- */

int session_stop_on_loop(struct ccsb_session *s)
{
    if (s->state == CCSB_STATE_DESTROYED)
        return 0;
    for (struct exec *x = s->execs; x; x = x->next)
        if (x->running && !x->kill_reason)
            x->kill_reason = CCSB_KILL_MANUAL;
    if (s->ops && s->ops->stop)
        s->ops->stop(s); /* kills, reaps, reports exits */
    /* Whatever the backend could not report still gets its events. */
    for (struct exec *x = s->execs, *next; x; x = next) {
        next = x->next; /* exec_exited may release x */
        if (x->running)
            exec_exited(x, -1, SIGKILL);
    }
    while (s->execs)
        exec_release(s->execs);
    if (s->timer) {
        event_free(s->timer);
        s->timer = NULL;
    }
    session_set_state(s, CCSB_STATE_DESTROYED, "stopped");
    return 0;
}

static void on_end(evutil_socket_t fd, short what, void *arg)
{
    session_stop_on_loop(arg);
}

void session_stop_soon(struct ccsb_session *s)
{
    if (s->state == CCSB_STATE_DESTROYED)
        return;
    s->ending = 1;
    if (!s->end_ev)
        s->end_ev = event_new(ctx_base(s->ctx), -1, 0, on_end, s);
    if (s->end_ev)
        event_active(s->end_ev, EV_TIMEOUT, 0);
    else
        session_fail(s, "cannot stop the session after its last command: out of memory");
}

void session_shutdown(struct ccsb_session *s)
{
    session_stop_on_loop(s);
    if (s->end_ev) {
        event_free(s->end_ev);
        s->end_ev = NULL;
    }
    if (s->attached) {
        ctx_remove_session(s->ctx, s);
        s->attached = 0;
    }
}

static int destroy_on_loop(void *arg)
{
    session_shutdown(arg);
    return 0;
}

void session_destroy_now(struct ccsb_session *s)
{
    struct ccsb_ctx *ctx = s->ctx;
    session_shutdown(s);
    session_free_memory(s);
    ctx_unref(ctx);
}

void session_destroy(struct ccsb_session *s)
{
    struct ccsb_ctx *ctx = s->ctx;
    /* The code that called the callback still uses the session. */
    if (ctx_in_callback(ctx)) {
        ctx_defer_destroy(ctx, s);
        return;
    }
    /* After ccsb_ctx_free the session was already shut down there. */
    if (ctx_call(ctx, destroy_on_loop, s) < 0 && s->attached)
        return; /* cannot reach the loop and not shut down: leak rather than race */
    session_free_memory(s);
    ctx_unref(ctx);
}

/* ---- details ---------------------------------------------------------- */

int session_details(struct ccsb_session *s, char **out)
{
    json_t *o = json_object();
    json_t *execs = json_array();
    if (!o || !execs) {
        json_decref(o);
        json_decref(execs);
        return CCSB_E_NOMEM;
    }
    json_object_set_new(o, "sessionId", json_string(s->id));
    json_object_set_new(o, "backend", json_string(ccsb_backend_name(s->backend)));
    json_object_set_new(o, "mechanism", json_string(s->ops ? s->ops->name : ""));
    json_object_set_new(o, "state", json_string(ccsb_state_name(s->state)));
    json_object_set_new(o, "error", json_string(s->error ? s->error : ""));
    json_object_set_new(o, "workdir", json_string(spec_workdir(s->spec)));
    if (s->tmpdir)
        json_object_set_new(o, "hostTmpdir", json_string(s->tmpdir));
    for (struct exec *x = s->execs; x; x = x->next)
        json_array_append_new(execs, json_pack("{s:I, s:i, s:b}", "execId", (json_int_t)x->id,
                                               "pid", (int)x->pid, "running", x->running));
    json_object_set_new(o, "execs", execs);
    json_t *limits = json_pack("{s:I, s:I, s:I}", "timeoutMs", (json_int_t)s->spec->timeout_ms,
                               "memoryBytes", (json_int_t)s->spec->memory_max, "pids",
                               (json_int_t)s->spec->pids_max);
    if (limits)
        json_object_set_new(o, "limits", limits);
    if (s->ops && s->ops->details)
        s->ops->details(s, o);
    *out = json_dump_owned(o);
    json_decref(o);
    return *out ? 0 : CCSB_E_NOMEM;
}
