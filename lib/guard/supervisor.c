/*
 * The host-side supervisor: one thread per supervisor answers every
 * notification of its listeners; denials reach the caller's libevent base
 * through a pipe.
 *
 * Why a thread and not the loop itself: the answer is performed with the
 * target's fsuid, fsgid, groups, umask and no effective capability. Those
 * are per-thread (umask per fs_struct, which this thread unshares), so
 * taking them on would change the identity of whatever thread runs the
 * loop -- possibly the host's own thread with a caller-owned base. One
 * thread also serialises every creating call of the sandbox, which keeps
 * our check and our operation free of races between those calls.
 */
#include "guard/guard.h"

#include <errno.h>
#include <event2/event.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "ccsandbox/ccsandbox.h"
#include "guard/emulate.h"
#include "guard/pathrules.h"
#include "guard/unotify.h"
#include "util/err.h"
#include "util/fd.h"

#define MAX_QUEUED_REPORTS 1024
#define FIFO_RETRY_MS 10

struct report {
    struct report *next;
    uint64_t tag;
    char *action, *target, *raw;
};

struct listener {
    int fd;
    uint64_t tag;
};

struct guard_supervisor {
    struct event_base *base;
    struct event *ev;
    int pipe_r, pipe_w;
    int ctl; /* eventfd: new listeners or stop */
    pthread_t th;
    int started;
    guard_violation_fn cb;
    void *ud;
    const char *const *globs; /* only during start-up */
    struct path_rules rules;  /* read-only once the thread runs */
    struct emu_counters cnt;  /* atomics */

    pthread_mutex_t mu;
    pthread_cond_t cv;
    /* under mu */
    int init_done, init_rc;
    char init_err[256];
    int stop;
    int finish; /* end once no listener is left (the sandbox is going) */
    int ended;  /* the thread takes no listener any more */
    struct listener *incoming;
    size_t n_incoming, cap_incoming;
    struct report *rq_head, **rq_tail;
    size_t rq_len;
    uint64_t rq_dropped;
    int pipe_armed;
};

static void free_report(struct report *r)
{
    free(r->action);
    free(r->target);
    free(r->raw);
    free(r);
}

/* Supervisor thread -> loop. */
static void push_report(void *ud, uint64_t tag, const char *action, const char *target,
                        const char *raw)
{
    struct guard_supervisor *g = ud;
    struct report *r = calloc(1, sizeof *r);
    if (r) {
        r->tag = tag;
        r->action = strdup(action);
        r->target = strdup(target ? target : "");
        r->raw = strdup(raw ? raw : "");
        if (!r->action || !r->target || !r->raw) {
            free_report(r);
            r = NULL;
        }
    }
    pthread_mutex_lock(&g->mu);
    if (!r || g->rq_len >= MAX_QUEUED_REPORTS) {
        g->rq_dropped++;
        if (r)
            free_report(r);
    } else {
        *g->rq_tail = r;
        g->rq_tail = &r->next;
        g->rq_len++;
    }
    if (!g->pipe_armed) {
        char b = 1;
        if (write(g->pipe_w, &b, 1) == 1)
            g->pipe_armed = 1;
    }
    pthread_mutex_unlock(&g->mu);
}

static void on_reports(evutil_socket_t fd, short what, void *arg)
{
    struct guard_supervisor *g = arg;
    char buf[64];
    while (read(fd, buf, sizeof buf) > 0) {
    }
    pthread_mutex_lock(&g->mu);
    struct report *list = g->rq_head;
    uint64_t dropped = g->rq_dropped;
    g->rq_head = NULL;
    g->rq_tail = &g->rq_head;
    g->rq_len = 0;
    g->rq_dropped = 0;
    g->pipe_armed = 0;
    pthread_mutex_unlock(&g->mu);
    while (list) {
        struct report *next = list->next;
        if (g->cb)
            g->cb(g->ud, list->tag, list->action, list->target, list->raw);
        free_report(list);
        list = next;
    }
    if (dropped && g->cb) {
        char raw[96];
        snprintf(raw, sizeof raw, "%llu violation reports dropped (queue full)",
                 (unsigned long long)dropped);
        g->cb(g->ud, 0, "guard-error", "", raw);
    }
}

void guard_supervisor_flush_reports(struct guard_supervisor *g)
{
    if (g)
        on_reports(g->pipe_r, EV_READ, g);
}

static void publish_listeners(struct guard_supervisor *g, size_t n)
{
    __atomic_store_n(&g->cnt.listeners, (uint64_t)n, __ATOMIC_RELAXED);
}

struct thread_state {
    struct emu em;
    struct listener *ls;
    size_t n, cap;
    struct pollfd *pfd;
    void *notif;
    size_t notif_size;
};

static int take_incoming(struct guard_supervisor *g, struct thread_state *ts, int *stop,
                         int *finish)
{
    uint64_t v;
    if (read(g->ctl, &v, sizeof v) < 0 && errno != EAGAIN)
        return -errno;
    pthread_mutex_lock(&g->mu);
    *stop = g->stop;
    *finish = g->finish;
    int rc = 0;
    if (ts->n + g->n_incoming > ts->cap) {
        size_t cap = ts->n + g->n_incoming + 8;
        struct listener *ls = realloc(ts->ls, cap * sizeof *ls);
        struct pollfd *pfd = realloc(ts->pfd, (cap + 1) * sizeof *pfd);
        if (ls)
            ts->ls = ls;
        if (pfd)
            ts->pfd = pfd;
        if (!ls || !pfd)
            rc = -ENOMEM;
        else
            ts->cap = cap;
    }
    if (rc == 0 && g->n_incoming) { /* memcpy from NULL, even of 0 bytes, is UB */
        memcpy(ts->ls + ts->n, g->incoming, g->n_incoming * sizeof *ts->ls);
        ts->n += g->n_incoming;
    } else {
        /* Closing them makes every trapped call fail: never a silent pass. */
        for (size_t i = 0; i < g->n_incoming; i++)
            close(g->incoming[i].fd);
    }
    g->n_incoming = 0;
    pthread_mutex_unlock(&g->mu);
    return rc;
}

static void drop_listener(struct thread_state *ts, size_t i)
{
    emu_forget_listener(&ts->em, ts->ls[i].fd);
    close(ts->ls[i].fd);
    ts->ls[i] = ts->ls[--ts->n];
}

/*
 * The thread is leaving: a listener still queued, or added from now on,
 * would have nobody to answer it and its task would wait in its trapped
 * call until the teardown. Closed instead, each such call fails at once
 * (ENOSYS), and that is reported.
 */
static void end_intake(struct guard_supervisor *g)
{
    pthread_mutex_lock(&g->mu);
    g->ended = 1;
    size_t n = g->n_incoming;
    struct listener *v = g->incoming;
    g->incoming = NULL;
    g->n_incoming = g->cap_incoming = 0;
    pthread_mutex_unlock(&g->mu);
    for (size_t i = 0; i < n; i++) {
        close(v[i].fd);
        push_report(g, v[i].tag, "guard-error", "",
                    "the guard's thread has ended: a command's listener was closed "
                    "(its creating calls fail)");
    }
    free(v);
}

/* 1 when no listener waits to be taken; then none will be (ended). */
static int intake_idle_end(struct guard_supervisor *g)
{
    pthread_mutex_lock(&g->mu);
    int idle = g->n_incoming == 0;
    if (idle)
        g->ended = 1;
    pthread_mutex_unlock(&g->mu);
    return idle;
}

static void *supervise(void *arg)
{
    struct guard_supervisor *g = arg;
    struct thread_state ts;
    memset(&ts, 0, sizeof ts);
    char err[256] = "";
    int rc = emu_init(&ts.em, g->globs, &g->rules, push_report, g, &g->cnt, err, sizeof err);
    struct seccomp_notif_sizes sizes;
    if (rc == 0) {
        int r = unotify_sizes(&sizes);
        if (r < 0) {
            rc = CCSB_E_POLICY;
            snprintf(err, sizeof err, "seccomp notification sizes: %s", strerror(-r));
            emu_clear(&ts.em);
        }
    }
    if (rc == 0) {
        ts.notif_size = sizes.seccomp_notif > sizeof(struct seccomp_notif)
                            ? sizes.seccomp_notif
                            : sizeof(struct seccomp_notif);
        ts.notif = malloc(ts.notif_size);
        ts.pfd = malloc(sizeof *ts.pfd);
        if (!ts.notif || !ts.pfd) {
            rc = CCSB_E_NOMEM;
            snprintf(err, sizeof err, "out of memory");
            emu_clear(&ts.em);
        }
    }
    pthread_mutex_lock(&g->mu);
    g->init_done = 1;
    g->init_rc = rc;
    snprintf(g->init_err, sizeof g->init_err, "%s", err);
    pthread_cond_signal(&g->cv);
    pthread_mutex_unlock(&g->mu);
    if (rc != 0) {
        free(ts.notif);
        free(ts.pfd);
        end_intake(g);
        return NULL;
    }

    int stop = 0, finish = 0;
    while (!stop) {
        ts.pfd[0] = (struct pollfd){.fd = g->ctl, .events = POLLIN};
        for (size_t i = 0; i < ts.n; i++)
            ts.pfd[i + 1] = (struct pollfd){.fd = ts.ls[i].fd, .events = POLLIN};
        size_t n = ts.n;
        int pr = poll(ts.pfd, n + 1, ts.em.n_pending ? FIFO_RETRY_MS : -1);
        if (pr < 0 && errno == EINTR)
            continue;
        if (pr < 0) {
            char raw[128];
            snprintf(raw, sizeof raw, "supervisor poll failed: %s; listeners closed",
                     strerror(errno));
            push_report(g, 0, "guard-error", "", raw);
            break;
        }
        /* Walk backwards so dropping a listener keeps indexes valid. */
        for (size_t i = n; i-- > 0;) {
            short re = ts.pfd[i + 1].revents;
            if (re & POLLIN) {
                int r = unotify_recv(ts.ls[i].fd, ts.notif, ts.notif_size);
                if (r == 0) {
                    struct timespec a, b;
                    clock_gettime(CLOCK_MONOTONIC, &a);
                    emu_handle(&ts.em, ts.ls[i].fd, ts.ls[i].tag, ts.notif);
                    clock_gettime(CLOCK_MONOTONIC, &b);
                    __atomic_fetch_add(&g->cnt.busy_ns,
                                       (uint64_t)((b.tv_sec - a.tv_sec) * 1000000000LL +
                                                  (b.tv_nsec - a.tv_nsec)),
                                       __ATOMIC_RELAXED);
                }
                else if (r != -ENOENT) {
                    char raw[160];
                    snprintf(raw, sizeof raw,
                             "receiving a trapped call failed: %s; its listener is closed "
                             "(the command's creating calls fail from now on)",
                             strerror(-r));
                    push_report(g, ts.ls[i].tag, "guard-error", "", raw);
                    drop_listener(&ts, i);
                }
            } else if (re & (POLLHUP | POLLERR | POLLNVAL)) {
                drop_listener(&ts, i); /* every task of that filter is gone */
            }
        }
        if (ts.em.n_pending)
            emu_tick(&ts.em);
        if (ts.pfd[0].revents & POLLIN) {
            int r = take_incoming(g, &ts, &stop, &finish);
            if (r < 0) {
                char raw[128];
                snprintf(raw, sizeof raw, "adding a listener failed: %s", strerror(-r));
                push_report(g, 0, "guard-error", "", raw);
            }
        }
        publish_listeners(g, ts.n);
        /* Every task of every filter is gone: nothing can trap any more,
         * and the teardown finds the thread already ended. A listener
         * queued meanwhile is taken first. */
        if (finish && ts.n == 0 && intake_idle_end(g))
            break;
    }
    emu_clear(&ts.em);
    while (ts.n)
        drop_listener(&ts, ts.n - 1);
    publish_listeners(g, 0);
    end_intake(g);
    free(ts.ls);
    free(ts.pfd);
    free(ts.notif);
    return NULL;
}

int guard_supervisor_new(struct event_base *base, const char *const *globs,
                         guard_violation_fn cb, void *ud, struct guard_supervisor **out,
                         char *err, size_t errlen)
{
    return guard_supervisor_new_with_paths(base, globs, NULL, 0, cb, ud, out, err, errlen);
}

/* Everything but the report pipe's registration: the thread runs (its
 * start-up checks may still be under way). */
int guard_supervisor_start_with_paths(struct event_base *base, const char *const *globs,
                                      const struct guard_path_rule *rules, size_t nrules,
                                      guard_violation_fn cb, void *ud,
                                      struct guard_supervisor **out, char *err, size_t errlen)
{
    *out = NULL;
    struct guard_supervisor *g = calloc(1, sizeof *g);
    if (!g)
        return errf(err, errlen, CCSB_E_NOMEM, "out of memory");
    g->base = base;
    g->cb = cb;
    g->ud = ud;
    g->globs = globs;
    g->pipe_r = g->pipe_w = g->ctl = -1;
    g->rq_tail = &g->rq_head;
    pthread_mutex_init(&g->mu, NULL);
    pthread_cond_init(&g->cv, NULL);
    int rc = path_rules_init(&g->rules, rules, nrules, err, errlen);
    if (rc)
        goto fail;
    int p[2];
    if (pipe2(p, O_CLOEXEC | O_NONBLOCK) < 0) {
        rc = errf(err, errlen, CCSB_E_IO, "pipe: %s", strerror(errno));
        goto fail;
    }
    /* Off 0-2 of a host that closed its streams (its stray writes and
     * reads would meet ours): fd_above_stdio closes what it cannot move. */
    g->pipe_r = fd_above_stdio(p[0]);
    g->pipe_w = fd_above_stdio(p[1]);
    if (g->pipe_r < 0 || g->pipe_w < 0) {
        rc = errf(err, errlen, CCSB_E_IO, "fcntl: %s", strerror(errno));
        goto fail;
    }
    g->ctl = fd_above_stdio(eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
    if (g->ctl < 0) {
        rc = errf(err, errlen, CCSB_E_IO, "eventfd: %s", strerror(errno));
        goto fail;
    }
    /* Made here, added to the base by guard_supervisor_watch (the base is
     * the loop thread's; making an event does not touch it). */
    g->ev = event_new(base, g->pipe_r, EV_READ | EV_PERSIST, on_reports, g);
    if (!g->ev) {
        rc = errf(err, errlen, CCSB_E_NOMEM, "out of memory");
        goto fail;
    }
    /* The thread takes no signal meant for the host. */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, &old);
    int pr = pthread_create(&g->th, NULL, supervise, g);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (pr != 0) {
        rc = errf(err, errlen, CCSB_E_IO, "starting the guard thread: %s", strerror(pr));
        goto fail;
    }
    g->started = 1;
    pthread_setname_np(g->th, "ccsb-guard");
    *out = g;
    return 0;
fail:
    guard_supervisor_free(g);
    return rc;
}

int guard_supervisor_watch(struct guard_supervisor *g, char *err, size_t errlen)
{
    pthread_mutex_lock(&g->mu);
    while (!g->init_done)
        pthread_cond_wait(&g->cv, &g->mu);
    int rc = g->init_rc;
    pthread_mutex_unlock(&g->mu);
    g->globs = NULL;
    if (rc != 0)
        return errf(err, errlen, rc, "%s", g->init_err);
    if (event_add(g->ev, NULL) < 0)
        return errf(err, errlen, CCSB_E_INTERNAL, "registering the guard's report pipe failed");
    return 0;
}

int guard_supervisor_new_with_paths(struct event_base *base, const char *const *globs,
                                    const struct guard_path_rule *rules, size_t nrules,
                                    guard_violation_fn cb, void *ud,
                                    struct guard_supervisor **out, char *err, size_t errlen)
{
    struct guard_supervisor *g;
    *out = NULL;
    int rc = guard_supervisor_start_with_paths(base, globs, rules, nrules, cb, ud, &g, err,
                                               errlen);
    if (rc == 0 && (rc = guard_supervisor_watch(g, err, errlen)) != 0)
        guard_supervisor_free(g);
    else if (rc == 0)
        *out = g;
    return rc;
}

int guard_supervisor_add_listener(struct guard_supervisor *g, int listener_fd, uint64_t tag,
                                  char *err, size_t errlen)
{
    if (!g || listener_fd < 0) {
        if (listener_fd >= 0)
            close(listener_fd);
        return errf(err, errlen, CCSB_E_INVAL, "no supervisor or no listener");
    }
    /* Every refusal closes the listener (the command's trapped calls then
     * fail) and is reported: the caller may have nobody to tell. */
    int rc = 0;
    pthread_mutex_lock(&g->mu);
    if (g->ended) {
        rc = errf(err, errlen, CCSB_E_STATE, "the guard's thread has ended");
    } else if (g->n_incoming == g->cap_incoming) {
        size_t cap = g->cap_incoming ? 2 * g->cap_incoming : 4;
        struct listener *v = realloc(g->incoming, cap * sizeof *v);
        if (v) {
            g->incoming = v;
            g->cap_incoming = cap;
        } else {
            rc = errf(err, errlen, CCSB_E_NOMEM, "out of memory");
        }
    }
    if (rc == 0)
        g->incoming[g->n_incoming++] = (struct listener){listener_fd, tag};
    pthread_mutex_unlock(&g->mu);
    if (rc == 0) {
        /* Fails only with EAGAIN (the counter is full: the thread is woken
         * already). */
        uint64_t one = 1;
        while (write(g->ctl, &one, sizeof one) < 0 && errno == EINTR) {
        }
        return 0;
    }
    close(listener_fd);
    char raw[192];
    snprintf(raw, sizeof raw, "a command's listener was not taken (%s): its creating calls fail",
             err);
    push_report(g, tag, "guard-error", "", raw);
    return rc;
}

void guard_supervisor_finish(struct guard_supervisor *g)
{
    if (!g || !g->started)
        return;
    pthread_mutex_lock(&g->mu);
    g->finish = 1;
    pthread_mutex_unlock(&g->mu);
    uint64_t one = 1;
    while (write(g->ctl, &one, sizeof one) < 0 && errno == EINTR) {
    }
}

void guard_supervisor_free(struct guard_supervisor *g)
{
    if (!g)
        return;
    if (g->started) {
        pthread_mutex_lock(&g->mu);
        g->stop = 1;
        pthread_mutex_unlock(&g->mu);
        uint64_t one = 1;
        while (write(g->ctl, &one, sizeof one) < 0 && errno == EINTR) {
        }
        pthread_join(g->th, NULL);
    }
    if (g->ev)
        event_free(g->ev);
    for (size_t i = 0; i < g->n_incoming; i++)
        close(g->incoming[i].fd);
    free(g->incoming);
    while (g->rq_head) {
        struct report *next = g->rq_head->next;
        free_report(g->rq_head);
        g->rq_head = next;
    }
    if (g->pipe_r >= 0)
        close(g->pipe_r);
    if (g->pipe_w >= 0)
        close(g->pipe_w);
    if (g->ctl >= 0)
        close(g->ctl);
    path_rules_clear(&g->rules);
    pthread_mutex_destroy(&g->mu);
    pthread_cond_destroy(&g->cv);
    free(g);
}

void guard_supervisor_stats(struct guard_supervisor *g, struct guard_stats *out)
{
    out->notifications = __atomic_load_n(&g->cnt.notifications, __ATOMIC_RELAXED);
    out->emulated = __atomic_load_n(&g->cnt.emulated, __ATOMIC_RELAXED);
    out->denied = __atomic_load_n(&g->cnt.denied, __ATOMIC_RELAXED);
    out->errors = __atomic_load_n(&g->cnt.errors, __ATOMIC_RELAXED);
    out->listeners = __atomic_load_n(&g->cnt.listeners, __ATOMIC_RELAXED);
    out->busy_ns = __atomic_load_n(&g->cnt.busy_ns, __ATOMIC_RELAXED);
}
