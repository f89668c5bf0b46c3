/*
 * The context: event loop ownership, the loop-thread trampoline, the event
 * queue and its wakeup fd, the error message.
 *
 * Threading rule: all session state and every libevent object are touched
 * only on the loop thread (the library thread, or the caller's thread that
 * runs its own base). Public calls from other threads go through ctx_call,
 * which runs a function on the loop thread and waits for it. The event
 * queue alone is shared, under its own mutex.
 */
#ifndef CCSB_CORE_CTX_H
#define CCSB_CORE_CTX_H

#include <stddef.h>
#include <stdint.h>

struct event_base;
struct ccsb_ctx;
struct ccsb_event;
struct ccsb_session;

struct event_base *ctx_base(struct ccsb_ctx *ctx);
/* 1 on the thread that drives the context's loop. */
int ctx_on_loop_thread(const struct ccsb_ctx *ctx);
/* Runs fn(arg) on the loop thread and returns its result; runs it inline
 * when already there. Returns CCSB_E_STATE when the loop is gone. */
int ctx_call(struct ccsb_ctx *ctx, int (*fn)(void *arg), void *arg);

/*
 * The same, split: ctx_call_start hands fn(arg) to the loop thread and
 * returns at once (runs it inline when already there), so the caller can
 * work meanwhile; ctx_call_finish waits for it and returns its result
 * (CCSB_E_STATE when the loop was gone and fn never ran). Every start has
 * exactly one finish; c lives until then.
 */
struct ctx_call {
    int (*fn)(void *arg);
    void *arg;
    int result;
    int done;
    struct ctx_call *next;
};
void ctx_call_start(struct ccsb_ctx *ctx, struct ctx_call *c, int (*fn)(void *arg), void *arg);
int ctx_call_finish(struct ccsb_ctx *ctx, struct ctx_call *c);

/* 1 on the loop thread while one of the context's callbacks (event
 * callback or doorbell) runs: what would free state the code that called
 * the callback still uses must be refused or deferred. */
int ctx_in_callback(const struct ccsb_ctx *ctx);
/* Frees the session once the running callback has returned (or in
 * ccsb_ctx_free, if the loop never runs again). */
void ctx_defer_destroy(struct ccsb_ctx *ctx, struct ccsb_session *s);

/* Sets the context's error text; returns code. Any thread. */
int ctx_err(struct ccsb_ctx *ctx, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Hands an event to the callback, or queues it and rings the doorbell.
 * Takes ownership. Loop thread only. */
void ctx_emit(struct ccsb_ctx *ctx, struct ccsb_event *ev);

/*
 * Backpressure: 1 when the host has not drained CTX_QUEUE_HIGH bytes of
 * queued events. Output readers then stop reading (the command blocks in
 * write) until the host drains the queue below CTX_QUEUE_LOW, when the
 * context calls exec_resume_output for every session. Loop thread.
 */
#define CTX_QUEUE_HIGH (8u << 20)
#define CTX_QUEUE_LOW (2u << 20)
int ctx_output_blocked(struct ccsb_ctx *ctx);

/* The session list (loop thread only). */
void ctx_add_session(struct ccsb_ctx *ctx, struct ccsb_session *s);
void ctx_remove_session(struct ccsb_ctx *ctx, struct ccsb_session *s);

/*
 * A host capability check that is costly (forks a child) and cannot change
 * while the process lives: run fn once per context and slot, then answer
 * from the cache. Returns fn's result; why gets its text. Any thread.
 */
#define CTX_CHECK_SLOTS 4
#define CTX_CHECK_GUARD 0
int ctx_cached_check(struct ccsb_ctx *ctx, int slot, int (*fn)(char *why, size_t len),
                     char *why, size_t len);
/* 1 with *result set when the check in slot already ran, else 0 (never
 * runs it). Any thread. */
int ctx_cached_check_peek(struct ccsb_ctx *ctx, int slot, int *result);

/*
 * Immutable objects that cost CPU to build and depend only on a small
 * plain-value key (the guard's compiled filter per configuration): built
 * once per context and key, shared read-only by every session of the
 * context, freed with the context's memory (after its last session).
 * Any thread.
 *
 * ctx_memo_get: the object stored for (slot, key), or NULL.
 * ctx_memo_put: stores obj (taking it, freed later with free_fn) unless an
 * object is already stored for the key, in which case obj is freed at once
 * and the stored one is returned; returns the object to use. NULL when the
 * memo is full or out of memory: obj stays the caller's.
 */
#define CTX_MEMO_GUARD_PROGRAM 0
void *ctx_memo_get(struct ccsb_ctx *ctx, int slot, const void *key, size_t keylen);
void *ctx_memo_put(struct ccsb_ctx *ctx, int slot, const void *key, size_t keylen, void *obj,
                   void (*free_fn)(void *));

/*
 * Standbys: things a backend started ahead of a launch (ccsb_ctx_prestart),
 * for the context's next launches to take. Any thread.
 *
 * ctx_standby_put: stores obj (taking it) with the function that frees an
 * untaken one, or CCSB_E_STATE (obj stays the caller's): CTX_STANDBY_MAX
 * wait already, or ccsb_ctx_free began.
 * ctx_standby_take: the oldest one stored with that free_fn (the backend's
 * mark), now the caller's; NULL when none.
 * ccsb_ctx_free frees those left, once its loop thread has ended.
 */
#define CTX_STANDBY_MAX 4
int ctx_standby_put(struct ccsb_ctx *ctx, void *obj, void (*free_fn)(void *));
/* Whether a put would fail now (a hint: a put can still fail after it). */
int ctx_standby_full(struct ccsb_ctx *ctx);
void *ctx_standby_take(struct ccsb_ctx *ctx, void (*free_fn)(void *));

/* The cached probe (computed on first use). */
const struct ccsb_probe_result *ctx_probe(struct ccsb_ctx *ctx);
/* The probe if it already ran, else NULL (never runs it). */
const struct ccsb_probe_result *ctx_probe_cached(struct ccsb_ctx *ctx);

#endif
