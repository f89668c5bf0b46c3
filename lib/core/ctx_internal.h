/* The context's fields: only lib/core/ctx.c and the api layer read them. */
#ifndef CCSB_CORE_CTX_INTERNAL_H
#define CCSB_CORE_CTX_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>

#include "ccsandbox/ccsandbox.h"
#include "core/ctx.h"

struct event;
struct event_base;
struct ctx_call;
struct pending_destroy;
struct ctx_memo;

struct ccsb_ctx {
    atomic_int refs;             /* 1 for the handle + 1 per live session */
    struct event_base *base;
    int own_base;
    int has_thread;
    pthread_t thread;

    /* loop-thread trampoline */
    pthread_mutex_t call_mu;
    pthread_cond_t call_cv;
    struct ctx_call *calls;
    int call_efd;
    struct event *call_ev;
    int loop_exiting;            /* under call_mu */
    int dead;                    /* ccsb_ctx_free ran; under call_mu */

    /* event queue (any thread) */
    pthread_mutex_t q_mu;
    struct ccsb_event *q_head, *q_tail;
    int q_efd;
    size_t q_cost;               /* bytes held by queued events */
    int throttled;               /* output readers paused until the host drains */
    int resume_efd;              /* rung when the host drained a throttled queue */
    struct event *resume_ev;     /* added only while throttled (loop thread) */
    int resume_armed;
    ccsb_wakeup_fn wake;
    void *wake_ud;
    ccsb_destroy_fn wake_destroy;
    int wake_busy;               /* rings in progress (set_wakeup waits them out) */
    pthread_cond_t wake_cv;

    /* callback (loop thread) */
    ccsb_event_cb cb;
    void *cb_ud;
    ccsb_destroy_fn cb_destroy;
    int in_callback;
    /* notifiers of callbacks replaced from inside a callback: they run once
     * the outermost callback returned (loop thread) */
    struct pending_destroy *pending_destroys;

    pthread_mutex_t err_mu;
    char errmsg[1024];

    pthread_mutex_t probe_mu;
    struct ccsb_probe_result *probe;
    /* ctx_cached_check: host facts that cost a fork to learn (probe_mu) */
    int checks_done[CTX_CHECK_SLOTS];
    int checks_result[CTX_CHECK_SLOTS];
    char checks_why[CTX_CHECK_SLOTS][256];
    /* ctx_memo: built objects shared by the context's sessions (probe_mu) */
    struct ctx_memo *memo;
    size_t n_memo;

    /* ctx_standby (probe_mu), oldest first */
    struct {
        void *obj;
        void (*free_fn)(void *);
    } standby[CTX_STANDBY_MAX];
    size_t n_standby;
    int standby_closed;          /* ccsb_ctx_free began (probe_mu) */

    struct ccsb_session *sessions; /* loop thread */
    /* destroyed from inside a callback, freed once it returned (loop thread) */
    struct ccsb_session *doomed;
    struct event *later_ev;
};

void ctx_ref(struct ccsb_ctx *ctx);
void ctx_unref(struct ccsb_ctx *ctx);

/* Stops the session, detaches it from the loop and the context list
 * (session.c; used by ccsb_ctx_free). */
void session_shutdown(struct ccsb_session *s);
/* Shuts down and frees a session (loop thread, outside callbacks). */
void session_destroy_now(struct ccsb_session *s);

#endif
