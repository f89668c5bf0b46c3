/*
 * The context. See ctx.h for the threading rule.
 *
 * The context is reference counted: each live session holds a reference, so
 * a host (or a Dart finalizer) may free the context and its sessions in any
 * order. ccsb_ctx_free shuts the loop down and stops every session; the
 * memory goes when the last session handle is destroyed.
 */
#include "core/ctx.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <event2/event.h>

#include "ccsandbox/ccsandbox.h"
#include "ccsandbox/ccsandbox-libevent.h"
#include "core/ctx_internal.h"
#include "core/event.h"
#include "core/exec.h"
#include "util/fd.h"
#include "core/probe.h"
#include "core/session.h"
#include "util/err.h"

static void eventfd_drain(int fd)
{
    uint64_t v;
    while (read(fd, &v, sizeof v) < 0 && errno == EINTR)
        ;
}

static void eventfd_ring(int fd)
{
    uint64_t one = 1;
    while (write(fd, &one, sizeof one) < 0 && errno == EINTR)
        ;
}

struct event_base *ctx_base(struct ccsb_ctx *ctx)
{
    return ctx->base;
}

int ctx_on_loop_thread(const struct ccsb_ctx *ctx)
{
    if (!ctx->has_thread)
        return 1; /* caller-owned base: every call comes from its thread */
    return pthread_equal(pthread_self(), ctx->thread);
}

int ctx_in_callback(const struct ccsb_ctx *ctx)
{
    return ctx_on_loop_thread(ctx) && ctx->in_callback;
}

struct pending_destroy {
    ccsb_destroy_fn fn;
    void *ud;
    struct pending_destroy *next;
};

/* Calls fn(ud) now, or after the running callback when called from one. */
static void destroy_later(struct ccsb_ctx *ctx, ccsb_destroy_fn fn, void *ud)
{
    if (!fn)
        return;
    if (!ctx_in_callback(ctx)) {
        fn(ud);
        return;
    }
    struct pending_destroy *p = malloc(sizeof *p);
    if (!p)
        return; /* leaking the userdata beats freeing it under its user */
    p->fn = fn;
    p->ud = ud;
    p->next = NULL;
    struct pending_destroy **tail = &ctx->pending_destroys;
    while (*tail)
        tail = &(*tail)->next;
    *tail = p;
}

static void run_pending_destroys(struct ccsb_ctx *ctx)
{
    while (ctx->pending_destroys) {
        struct pending_destroy *p = ctx->pending_destroys;
        ctx->pending_destroys = p->next;
        p->fn(p->ud);
        free(p);
    }
}

static void leave_callback(struct ccsb_ctx *ctx)
{
    if (--ctx->in_callback == 0)
        run_pending_destroys(ctx);
}

static void destroy_doomed(struct ccsb_ctx *ctx)
{
    while (ctx->doomed) {
        struct ccsb_session *s = ctx->doomed;
        ctx->doomed = s->doomed_next;
        session_destroy_now(s); /* drops the session's reference, never the last */
    }
}

static void on_later(evutil_socket_t fd, short what, void *arg)
{
    destroy_doomed(arg);
}

void ctx_defer_destroy(struct ccsb_ctx *ctx, struct ccsb_session *s)
{
    if (s->doomed)
        return;
    s->doomed = 1;
    s->doomed_next = ctx->doomed;
    ctx->doomed = s;
    event_active(ctx->later_ev, EV_TIMEOUT, 0);
}

int ctx_err(struct ccsb_ctx *ctx, int code, const char *fmt, ...)
{
    if (!ctx)
        return code;
    va_list ap;
    va_start(ap, fmt);
    pthread_mutex_lock(&ctx->err_mu);
    vsnprintf(ctx->errmsg, sizeof ctx->errmsg, fmt, ap);
    pthread_mutex_unlock(&ctx->err_mu);
    va_end(ap);
    return code;
}

/* ---- loop-thread trampoline ------------------------------------------ */

static void run_calls(evutil_socket_t fd, short what, void *arg)
{
    struct ccsb_ctx *ctx = arg;
    eventfd_drain(ctx->call_efd);
    for (;;) {
        pthread_mutex_lock(&ctx->call_mu);
        struct ctx_call *c = ctx->calls;
        if (c)
            ctx->calls = c->next;
        pthread_mutex_unlock(&ctx->call_mu);
        if (!c)
            break;
        int r = c->fn(c->arg);
        pthread_mutex_lock(&ctx->call_mu);
        c->result = r;
        c->done = 1;
        pthread_cond_broadcast(&ctx->call_cv);
        pthread_mutex_unlock(&ctx->call_mu);
    }
}

void ctx_call_start(struct ccsb_ctx *ctx, struct ctx_call *c, int (*fn)(void *arg), void *arg)
{
    *c = (struct ctx_call){.fn = fn, .arg = arg};
    if (ctx_on_loop_thread(ctx)) {
        c->result = ctx->dead ? CCSB_E_STATE : fn(arg);
        c->done = 1;
        return;
    }
    pthread_mutex_lock(&ctx->call_mu);
    if (ctx->dead || ctx->loop_exiting) {
        c->result = CCSB_E_STATE;
        c->done = 1;
    } else {
        struct ctx_call **tail = &ctx->calls;
        while (*tail)
            tail = &(*tail)->next;
        *tail = c;
        eventfd_ring(ctx->call_efd);
    }
    pthread_mutex_unlock(&ctx->call_mu);
}

int ctx_call_finish(struct ccsb_ctx *ctx, struct ctx_call *c)
{
    pthread_mutex_lock(&ctx->call_mu);
    while (!c->done)
        pthread_cond_wait(&ctx->call_cv, &ctx->call_mu);
    pthread_mutex_unlock(&ctx->call_mu);
    return c->result;
}

int ctx_call(struct ccsb_ctx *ctx, int (*fn)(void *arg), void *arg)
{
    struct ctx_call c;
    ctx_call_start(ctx, &c, fn, arg);
    return ctx_call_finish(ctx, &c);
}

static void *loop_main(void *arg)
{
    struct ccsb_ctx *ctx = arg;
    event_base_loop(ctx->base, EVLOOP_NO_EXIT_ON_EMPTY);
    return NULL;
}

/* ---- events ----------------------------------------------------------- */

static size_t event_cost(const struct ccsb_event *ev)
{
    return sizeof *ev + ev->len;
}

/*
 * The resume event is on the base only while readers are paused, so that an
 * idle context leaves a caller's base empty (event_base_dispatch returns).
 */
int ctx_output_blocked(struct ccsb_ctx *ctx)
{
    if (ctx->cb)
        return 0; /* delivered synchronously: the callback paces the reads */
    pthread_mutex_lock(&ctx->q_mu);
    int full = ctx->q_cost >= CTX_QUEUE_HIGH;
    if (full)
        ctx->throttled = 1;
    pthread_mutex_unlock(&ctx->q_mu);
    if (!full || ctx->resume_armed)
        return full;
    if (event_add(ctx->resume_ev, NULL) < 0) {
        /* Without a way to resume, reading on beats pausing forever. */
        pthread_mutex_lock(&ctx->q_mu);
        ctx->throttled = 0;
        pthread_mutex_unlock(&ctx->q_mu);
        return 0;
    }
    ctx->resume_armed = 1;
    return 1;
}

static void resume_output(struct ccsb_ctx *ctx)
{
    pthread_mutex_lock(&ctx->q_mu);
    int still = ctx->throttled;
    pthread_mutex_unlock(&ctx->q_mu);
    if (still)
        return; /* throttled again since the host rang: stay paused */
    if (ctx->resume_armed) {
        event_del(ctx->resume_ev);
        eventfd_drain(ctx->resume_efd);
        ctx->resume_armed = 0;
    }
    for (struct ccsb_session *s = ctx->sessions; s; s = s->next)
        exec_resume_output(s);
}

static void on_resume(evutil_socket_t fd, short what, void *arg)
{
    struct ccsb_ctx *ctx = arg;
    eventfd_drain(ctx->resume_efd);
    resume_output(ctx);
}

void ctx_emit(struct ccsb_ctx *ctx, struct ccsb_event *ev)
{
    if (!ev)
        return;
    if (ctx->cb) {
        ctx->in_callback++;
        ctx->cb(ev, ctx->cb_ud);
        leave_callback(ctx);
        ccsb_event_free(ev);
        return;
    }
    pthread_mutex_lock(&ctx->q_mu);
    int was_empty = ctx->q_head == NULL;
    if (ctx->q_tail)
        ctx->q_tail->next = ev;
    else
        ctx->q_head = ev;
    ctx->q_tail = ev;
    ctx->q_cost += event_cost(ev);
    if (was_empty)
        eventfd_ring(ctx->q_efd);
    ccsb_wakeup_fn wake = was_empty ? ctx->wake : NULL;
    void *wake_ud = ctx->wake_ud;
    if (wake)
        ctx->wake_busy++;
    pthread_mutex_unlock(&ctx->q_mu);
    if (wake) {
        ctx->in_callback++;
        wake(wake_ud);
        pthread_mutex_lock(&ctx->q_mu);
        if (--ctx->wake_busy == 0)
            pthread_cond_broadcast(&ctx->wake_cv);
        pthread_mutex_unlock(&ctx->q_mu);
        leave_callback(ctx);
    }
}

CCSB_API int ccsb_ctx_next_event(ccsb_ctx *ctx, ccsb_event **out)
{
    if (!ctx || !out)
        return CCSB_E_INVAL;
    *out = NULL;
    int resume = 0;
    pthread_mutex_lock(&ctx->q_mu);
    struct ccsb_event *ev = ctx->q_head;
    if (ev) {
        ctx->q_head = ev->next;
        if (!ctx->q_head) {
            ctx->q_tail = NULL;
            eventfd_drain(ctx->q_efd);
        }
        ev->next = NULL;
        ctx->q_cost -= event_cost(ev);
        if (ctx->throttled && ctx->q_cost <= CTX_QUEUE_LOW) {
            ctx->throttled = 0;
            resume = 1;
        }
    }
    pthread_mutex_unlock(&ctx->q_mu);
    if (resume)
        eventfd_ring(ctx->resume_efd);
    if (!ev)
        return CCSB_E_AGAIN;
    *out = ev;
    return 0;
}

CCSB_API int ccsb_ctx_get_fd(const ccsb_ctx *ctx)
{
    if (!ctx)
        return CCSB_E_INVAL;
    return ctx->q_efd;
}

static void on_wait_timer(evutil_socket_t fd, short what, void *arg)
{
    *(int *)arg = 1;
}

CCSB_API int ccsb_ctx_wait_event(ccsb_ctx *ctx, int timeout_ms, ccsb_event **out)
{
    if (!ctx || !out)
        return CCSB_E_INVAL;
    *out = NULL;
    if (ctx_in_callback(ctx))
        return ctx_err(ctx, CCSB_E_REENTRANT,
                       "ccsb_ctx_wait_event called from inside a context callback");
    int r = ccsb_ctx_next_event(ctx, out);
    if (r != CCSB_E_AGAIN)
        return r;
    if (ctx->has_thread || ctx->dead) {
        struct pollfd p = {.fd = ctx->q_efd, .events = POLLIN};
        for (;;) {
            int pr = poll(&p, 1, timeout_ms);
            if (pr < 0 && errno == EINTR)
                continue;
            if (pr < 0)
                return ctx_err(ctx, CCSB_E_IO, "poll: %s", strerror(errno));
            if (pr == 0)
                return CCSB_E_TIMEDOUT;
            r = ccsb_ctx_next_event(ctx, out);
            if (r != CCSB_E_AGAIN)
                return r;
            /* Another thread took it; keep waiting (timeout restarts: fine
             * for a bounded wait, documented as "at least"). */
        }
    }
    /* Caller-owned base: run it until something is queued. */
    int fired = 0;
    struct event *t = NULL;
    if (timeout_ms >= 0) {
        t = evtimer_new(ctx->base, on_wait_timer, &fired);
        if (!t)
            return ctx_err(ctx, CCSB_E_NOMEM, "out of memory");
        struct timeval tv = {timeout_ms / 1000, (timeout_ms % 1000) * 1000};
        evtimer_add(t, &tv);
    }
    for (;;) {
        r = ccsb_ctx_next_event(ctx, out);
        if (r != CCSB_E_AGAIN)
            break;
        if (fired) {
            r = CCSB_E_TIMEDOUT;
            break;
        }
        int lr = event_base_loop(ctx->base, EVLOOP_ONCE);
        if (lr < 0) {
            r = ctx_err(ctx, CCSB_E_STATE, "the event base cannot be run from here");
            break;
        }
        if (lr == 1) { /* the base is empty: it would return at once, forever */
            r = ctx_err(ctx, CCSB_E_STATE,
                        "ccsb_ctx_wait_event: nothing is running that could produce an event");
            break;
        }
    }
    if (t)
        event_free(t);
    return r;
}

/* Callback registration runs on the loop thread so it never races emit. */
struct set_cb_args {
    struct ccsb_ctx *ctx;
    ccsb_event_cb cb;
    void *ud;
    ccsb_destroy_fn destroy;
};

static int set_cb_on_loop(void *arg)
{
    struct set_cb_args *a = arg;
    struct ccsb_ctx *ctx = a->ctx;
    ccsb_destroy_fn old_destroy = ctx->cb_destroy;
    void *old_ud = ctx->cb_ud;
    ctx->cb = a->cb;
    ctx->cb_ud = a->ud;
    ctx->cb_destroy = a->destroy;
    if (ctx->cb) { /* the callback now takes what paused readers hold */
        pthread_mutex_lock(&ctx->q_mu);
        ctx->throttled = 0;
        pthread_mutex_unlock(&ctx->q_mu);
        resume_output(ctx);
    }
    destroy_later(ctx, old_destroy, old_ud);
    return 0;
}

CCSB_API int ccsb_ctx_set_event_callback(ccsb_ctx *ctx, ccsb_event_cb cb, void *userdata,
                                         ccsb_destroy_fn destroy)
{
    if (!ctx)
        return CCSB_E_INVAL;
    if (!cb && (userdata || destroy))
        return ctx_err(ctx, CCSB_E_INVAL, "cb: NULL with userdata or destroy set");
    struct set_cb_args a = {ctx, cb, userdata, destroy};
    return ctx_call(ctx, set_cb_on_loop, &a);
}

CCSB_API int ccsb_ctx_set_wakeup(ccsb_ctx *ctx, ccsb_wakeup_fn wake, void *userdata,
                                 ccsb_destroy_fn destroy)
{
    if (!ctx)
        return CCSB_E_INVAL;
    if (!wake && (userdata || destroy))
        return ctx_err(ctx, CCSB_E_INVAL, "wake: NULL with userdata or destroy set");
    pthread_mutex_lock(&ctx->q_mu);
    ccsb_destroy_fn old_destroy = ctx->wake_destroy;
    void *old_ud = ctx->wake_ud;
    ctx->wake = wake;
    ctx->wake_ud = userdata;
    ctx->wake_destroy = destroy;
    int pending = ctx->q_head != NULL;
    /* The loop thread may be ringing the old doorbell right now: its
     * userdata lives until that returns (unless this is that ring). */
    if (!ctx_in_callback(ctx))
        while (ctx->wake_busy)
            pthread_cond_wait(&ctx->wake_cv, &ctx->q_mu);
    pthread_mutex_unlock(&ctx->q_mu);
    destroy_later(ctx, old_destroy, old_ud);
    /* Events queued before the doorbell existed must not go unnoticed. */
    if (pending && wake)
        wake(userdata);
    return 0;
}

/* ---- sessions list ---------------------------------------------------- */

void ctx_add_session(struct ccsb_ctx *ctx, struct ccsb_session *s)
{
    s->next = ctx->sessions;
    ctx->sessions = s;
}

void ctx_remove_session(struct ccsb_ctx *ctx, struct ccsb_session *s)
{
    for (struct ccsb_session **p = &ctx->sessions; *p; p = &(*p)->next) {
        if (*p == s) {
            *p = s->next;
            s->next = NULL;
            return;
        }
    }
}

int ctx_cached_check(struct ccsb_ctx *ctx, int slot, int (*fn)(char *why, size_t len),
                     char *why, size_t len)
{
    if (slot < 0 || slot >= CTX_CHECK_SLOTS)
        return fn(why, len);
    pthread_mutex_lock(&ctx->probe_mu);
    if (!ctx->checks_done[slot]) {
        ctx->checks_why[slot][0] = 0;
        ctx->checks_result[slot] = fn(ctx->checks_why[slot], sizeof ctx->checks_why[slot]);
        ctx->checks_done[slot] = 1;
    }
    int r = ctx->checks_result[slot];
    if (why && len)
        snprintf(why, len, "%s", ctx->checks_why[slot]);
    pthread_mutex_unlock(&ctx->probe_mu);
    return r;
}

int ctx_cached_check_peek(struct ccsb_ctx *ctx, int slot, int *result)
{
    if (slot < 0 || slot >= CTX_CHECK_SLOTS)
        return 0;
    pthread_mutex_lock(&ctx->probe_mu);
    int done = ctx->checks_done[slot];
    if (done)
        *result = ctx->checks_result[slot];
    pthread_mutex_unlock(&ctx->probe_mu);
    return done;
}

/* A handful of configurations per context at most: a bound, not a policy. */
#define CTX_MEMO_MAX 16
#define CTX_MEMO_KEY_MAX 64

struct ctx_memo {
    int slot;
    size_t keylen;
    unsigned char key[CTX_MEMO_KEY_MAX];
    void *obj;
    void (*free_fn)(void *);
    struct ctx_memo *next;
};

static struct ctx_memo *memo_find(struct ccsb_ctx *ctx, int slot, const void *key, size_t keylen)
{
    for (struct ctx_memo *m = ctx->memo; m; m = m->next)
        if (m->slot == slot && m->keylen == keylen && memcmp(m->key, key, keylen) == 0)
            return m;
    return NULL;
}

void *ctx_memo_get(struct ccsb_ctx *ctx, int slot, const void *key, size_t keylen)
{
    pthread_mutex_lock(&ctx->probe_mu);
    struct ctx_memo *m = memo_find(ctx, slot, key, keylen);
    void *obj = m ? m->obj : NULL;
    pthread_mutex_unlock(&ctx->probe_mu);
    return obj;
}

void *ctx_memo_put(struct ccsb_ctx *ctx, int slot, const void *key, size_t keylen, void *obj,
                   void (*free_fn)(void *))
{
    if (keylen > CTX_MEMO_KEY_MAX)
        return NULL;
    pthread_mutex_lock(&ctx->probe_mu);
    struct ctx_memo *m = memo_find(ctx, slot, key, keylen);
    void *use = NULL;
    if (m) {
        use = m->obj; /* another launch built it meanwhile */
    } else if (ctx->n_memo < CTX_MEMO_MAX && (m = calloc(1, sizeof *m))) {
        m->slot = slot;
        m->keylen = keylen;
        memcpy(m->key, key, keylen);
        m->obj = use = obj;
        m->free_fn = free_fn;
        m->next = ctx->memo;
        ctx->memo = m;
        ctx->n_memo++;
        obj = NULL;
    }
    pthread_mutex_unlock(&ctx->probe_mu);
    if (use && obj)
        free_fn(obj);
    return use;
}

int ctx_standby_put(struct ccsb_ctx *ctx, void *obj, void (*free_fn)(void *))
{
    int r = 0;
    pthread_mutex_lock(&ctx->probe_mu);
    if (ctx->standby_closed || ctx->n_standby == CTX_STANDBY_MAX)
        r = CCSB_E_STATE;
    else {
        ctx->standby[ctx->n_standby].obj = obj;
        ctx->standby[ctx->n_standby].free_fn = free_fn;
        ctx->n_standby++;
    }
    pthread_mutex_unlock(&ctx->probe_mu);
    return r;
}

int ctx_standby_full(struct ccsb_ctx *ctx)
{
    pthread_mutex_lock(&ctx->probe_mu);
    int full = ctx->standby_closed || ctx->n_standby == CTX_STANDBY_MAX;
    pthread_mutex_unlock(&ctx->probe_mu);
    return full;
}

void *ctx_standby_take(struct ccsb_ctx *ctx, void (*free_fn)(void *))
{
    void *obj = NULL;
    pthread_mutex_lock(&ctx->probe_mu);
    for (size_t i = 0; i < ctx->n_standby && !obj; i++) {
        if (ctx->standby[i].free_fn != free_fn)
            continue;
        obj = ctx->standby[i].obj;
        memmove(&ctx->standby[i], &ctx->standby[i + 1],
                (ctx->n_standby - i - 1) * sizeof ctx->standby[0]);
        ctx->n_standby--;
    }
    pthread_mutex_unlock(&ctx->probe_mu);
    return obj;
}

/* ccsb_ctx_free, after its loop thread ended: no more standbys, and those
 * left are freed (a bwrap's --die-with-parent already fired with that
 * thread; its free reaps it). */
static void free_standbys(struct ccsb_ctx *ctx)
{
    pthread_mutex_lock(&ctx->probe_mu);
    ctx->standby_closed = 1;
    size_t n = ctx->n_standby;
    ctx->n_standby = 0;
    pthread_mutex_unlock(&ctx->probe_mu);
    for (size_t i = 0; i < n; i++)
        ctx->standby[i].free_fn(ctx->standby[i].obj);
}

const struct ccsb_probe_result *ctx_probe_cached(struct ccsb_ctx *ctx)
{
    pthread_mutex_lock(&ctx->probe_mu);
    const struct ccsb_probe_result *pr = ctx->probe;
    pthread_mutex_unlock(&ctx->probe_mu);
    return pr;
}

const struct ccsb_probe_result *ctx_probe(struct ccsb_ctx *ctx)
{
    pthread_mutex_lock(&ctx->probe_mu);
    if (!ctx->probe)
        ctx->probe = probe_run();
    const struct ccsb_probe_result *pr = ctx->probe;
    pthread_mutex_unlock(&ctx->probe_mu);
    return pr;
}

/* ---- lifetime --------------------------------------------------------- */

void ctx_ref(struct ccsb_ctx *ctx)
{
    atomic_fetch_add(&ctx->refs, 1);
}

static void ctx_release_memory(struct ccsb_ctx *ctx)
{
    struct ccsb_event *ev = ctx->q_head;
    while (ev) {
        struct ccsb_event *n = ev->next;
        ccsb_event_free(ev);
        ev = n;
    }
    run_pending_destroys(ctx);
    if (ctx->wake_destroy)
        ctx->wake_destroy(ctx->wake_ud);
    if (ctx->q_efd >= 0)
        close(ctx->q_efd);
    if (ctx->resume_efd >= 0)
        close(ctx->resume_efd);
    probe_free(ctx->probe);
    while (ctx->memo) {
        struct ctx_memo *m = ctx->memo;
        ctx->memo = m->next;
        m->free_fn(m->obj);
        free(m);
    }
    pthread_mutex_destroy(&ctx->q_mu);
    pthread_mutex_destroy(&ctx->call_mu);
    pthread_mutex_destroy(&ctx->err_mu);
    pthread_mutex_destroy(&ctx->probe_mu);
    pthread_cond_destroy(&ctx->call_cv);
    pthread_cond_destroy(&ctx->wake_cv);
    free(ctx);
}

void ctx_unref(struct ccsb_ctx *ctx)
{
    if (atomic_fetch_sub(&ctx->refs, 1) == 1)
        ctx_release_memory(ctx);
}

/* Frees the loop objects ctx_init made (any subset); no thread runs. */
static void ctx_free_loop(struct ccsb_ctx *ctx)
{
    if (ctx->later_ev)
        event_free(ctx->later_ev);
    ctx->later_ev = NULL;
    if (ctx->resume_ev)
        event_free(ctx->resume_ev);
    ctx->resume_ev = NULL;
    if (ctx->call_ev)
        event_free(ctx->call_ev);
    ctx->call_ev = NULL;
    if (ctx->call_efd >= 0)
        close(ctx->call_efd);
    ctx->call_efd = -1;
    if (ctx->own_base && ctx->base)
        event_base_free(ctx->base);
    ctx->base = NULL;
}

static int ctx_init(struct ccsb_ctx **out, struct event_base *base, char *errbuf,
                    size_t errlen)
{
    *out = NULL;
    struct ccsb_ctx *ctx = calloc(1, sizeof *ctx);
    if (!ctx)
        return errf(errbuf, errlen, CCSB_E_NOMEM, "out of memory");
    atomic_init(&ctx->refs, 1);
    ctx->q_efd = ctx->call_efd = ctx->resume_efd = -1;
    pthread_mutex_init(&ctx->q_mu, NULL);
    pthread_mutex_init(&ctx->call_mu, NULL);
    pthread_mutex_init(&ctx->err_mu, NULL);
    pthread_mutex_init(&ctx->probe_mu, NULL);
    pthread_cond_init(&ctx->call_cv, NULL);
    pthread_cond_init(&ctx->wake_cv, NULL);
    int code = CCSB_E_IO;
    const char *what = "eventfd";
    int e = 0;
    ctx->q_efd = fd_above_stdio(eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
    if (ctx->q_efd >= 0)
        ctx->resume_efd = fd_above_stdio(eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
    if (ctx->q_efd < 0 || ctx->resume_efd < 0)
        goto fail_errno;
    if (base) {
        ctx->base = base;
    } else {
        struct event_config *cfg = event_config_new();
        if (cfg) {
            /* We never use libevent's own locking: only our loop thread
             * touches the base. */
            event_config_set_flag(cfg, EVENT_BASE_FLAG_NOLOCK);
            int held[3];
            int n_held = fd_hold_stdio(held);
            ctx->base = event_base_new_with_config(cfg);
            fd_release_stdio(held, n_held);
            event_config_free(cfg);
        }
        code = CCSB_E_NOMEM;
        what = "cannot create an event base";
        if (!ctx->base)
            goto fail;
        ctx->own_base = 1;
        code = CCSB_E_IO;
        what = "eventfd";
        ctx->call_efd = fd_above_stdio(eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
        if (ctx->call_efd < 0)
            goto fail_errno;
        ctx->call_ev = event_new(ctx->base, ctx->call_efd, EV_READ | EV_PERSIST, run_calls, ctx);
        code = CCSB_E_NOMEM;
        what = "cannot register the call event";
        if (!ctx->call_ev || event_add(ctx->call_ev, NULL) < 0)
            goto fail;
    }
    ctx->resume_ev = event_new(ctx->base, ctx->resume_efd, EV_READ | EV_PERSIST, on_resume, ctx);
    ctx->later_ev = event_new(ctx->base, -1, 0, on_later, ctx);
    code = CCSB_E_NOMEM;
    what = "cannot create the context's events";
    if (!ctx->resume_ev || !ctx->later_ev)
        goto fail;
    if (ctx->own_base) {
        /* The loop thread blocks every signal: the host's signals are
         * delivered to the host's own threads. */
        sigset_t all, old;
        sigfillset(&all);
        pthread_sigmask(SIG_SETMASK, &all, &old);
        e = pthread_create(&ctx->thread, NULL, loop_main, ctx);
        pthread_sigmask(SIG_SETMASK, &old, NULL);
        code = CCSB_E_IO;
        what = "pthread_create";
        if (e)
            goto fail_e;
        ctx->has_thread = 1;
    }
    *out = ctx;
    return 0;

fail_errno:
    e = errno;
fail_e:
    ctx_free_loop(ctx);
    ctx_release_memory(ctx);
    return errf(errbuf, errlen, code, "%s: %s", what, strerror(e));
fail:
    ctx_free_loop(ctx);
    ctx_release_memory(ctx);
    return errf(errbuf, errlen, code, "%s", what);
}

CCSB_API int ccsb_ctx_new(ccsb_ctx **out, char *errbuf, size_t errbuf_len)
{
    if (!out)
        return errf(errbuf, errbuf_len, CCSB_E_INVAL, "out: NULL");
    return ctx_init(out, NULL, errbuf, errbuf_len);
}

CCSB_API int ccsb_ctx_new_with_event_base(ccsb_ctx **out, struct event_base *base,
                                          char *errbuf, size_t errbuf_len)
{
    if (!out)
        return errf(errbuf, errbuf_len, CCSB_E_INVAL, "out: NULL");
    if (!base) {
        *out = NULL;
        return errf(errbuf, errbuf_len, CCSB_E_INVAL, "base: NULL");
    }
    return ctx_init(out, base, errbuf, errbuf_len);
}

static int shutdown_on_loop(void *arg)
{
    struct ccsb_ctx *ctx = arg;
    while (ctx->sessions) {
        struct ccsb_session *s = ctx->sessions;
        session_shutdown(s); /* stops, detaches, removes from the list */
    }
    destroy_doomed(ctx);
    if (ctx->cb_destroy)
        ctx->cb_destroy(ctx->cb_ud);
    ctx->cb = NULL;
    ctx->cb_destroy = NULL;
    if (ctx->has_thread) {
        pthread_mutex_lock(&ctx->call_mu);
        ctx->loop_exiting = 1;
        pthread_mutex_unlock(&ctx->call_mu);
        event_base_loopbreak(ctx->base);
    }
    return 0;
}

CCSB_API void ccsb_ctx_free(ccsb_ctx *ctx)
{
    if (!ctx)
        return;
    if (ctx_in_callback(ctx)) {
        ctx_err(ctx, CCSB_E_REENTRANT, "ccsb_ctx_free called from inside a context callback");
        return;
    }
    if (ctx_call(ctx, shutdown_on_loop, ctx) == 0 && ctx->has_thread)
        pthread_join(ctx->thread, NULL);
    /* Calls that raced the shutdown must not wait forever. */
    pthread_mutex_lock(&ctx->call_mu);
    ctx->dead = 1;
    for (struct ctx_call *c = ctx->calls; c; c = c->next) {
        c->result = CCSB_E_STATE;
        c->done = 1;
    }
    ctx->calls = NULL;
    pthread_cond_broadcast(&ctx->call_cv);
    pthread_mutex_unlock(&ctx->call_mu);
    free_standbys(ctx);
    ctx_free_loop(ctx);
    ctx_unref(ctx);
}

CCSB_API const char *ccsb_ctx_errmsg(const ccsb_ctx *ctx)
{
    if (!ctx)
        return "no context";
    return ctx->errmsg;
}
