/* The context's fields: only lib/core/ctx.c and the api layer read them. */
#ifndef CCSB_CORE_CTX_INTERNAL_H
#define CCSB_CORE_CTX_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>

#include "ccsandbox/ccsandbox.h"

struct event;
struct event_base;
struct call;

struct ccsb_ctx {
    atomic_int refs;             /* 1 for the handle + 1 per live session */
    struct event_base *base;
    int own_base;
    int has_thread;
    pthread_t thread;

    /* loop-thread trampoline */
    pthread_mutex_t call_mu;
    pthread_cond_t call_cv;
    struct call *calls;
    int call_efd;
    struct event *call_ev;
    int loop_exiting;            /* under call_mu */
    int dead;                    /* ccsb_ctx_free ran; under call_mu */

    /* event queue (any thread) */
    pthread_mutex_t q_mu;
    struct ccsb_event *q_head, *q_tail;
    int q_efd;
    ccsb_wakeup_fn wake;
    void *wake_ud;
    ccsb_destroy_fn wake_destroy;

    /* callback (loop thread) */
    ccsb_event_cb cb;
    void *cb_ud;
    ccsb_destroy_fn cb_destroy;
    int in_callback;

    pthread_mutex_t err_mu;
    char errmsg[1024];

    pthread_mutex_t probe_mu;
    struct ccsb_probe_result *probe;

    struct ccsb_session *sessions; /* loop thread */
};

void ctx_ref(struct ccsb_ctx *ctx);
void ctx_unref(struct ccsb_ctx *ctx);

/* Stops the session, detaches it from the loop and the context list
 * (session.c; used by ccsb_ctx_free). */
void session_shutdown(struct ccsb_session *s);

#endif
