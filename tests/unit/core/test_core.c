/* Unit tests: event queue, doorbell, callbacks, event JSON, env sanitising. */
#include <check.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/event.h>

#include "backend/backend.h"
#include "ccsandbox/ccsandbox-libevent.h"
#include "ccsandbox/ccsandbox.h"
#include "core/ctx.h"
#include "core/event.h"
#include "core/exec_req.h"
#include "core/session.h"
#include "spec/spec.h"
#include "util/strv.h"

static int fd_readable(int fd)
{
    struct pollfd p = {.fd = fd, .events = POLLIN};
    return poll(&p, 1, 0) == 1;
}

static struct ccsb_event *mk(int type, uint64_t exec)
{
    struct ccsb_event *ev = evt_new(type, "s1", exec);
    ck_assert_ptr_nonnull(ev);
    return ev;
}

START_TEST(queue_order_and_fd)
{
    struct event_base *base = event_base_new();
    ccsb_ctx *ctx = NULL;
    ck_assert_int_eq(ccsb_ctx_new_with_event_base(&ctx, base, NULL, 0), 0);
    int fd = ccsb_ctx_get_fd(ctx);
    ck_assert_int_ge(fd, 0);
    ck_assert(!fd_readable(fd));
    ccsb_event *ev = NULL;
    ck_assert_int_eq(ccsb_ctx_next_event(ctx, &ev), CCSB_E_AGAIN);
    for (int i = 1; i <= 5; i++)
        ctx_emit(ctx, mk(CCSB_EVENT_STDOUT, (uint64_t)i));
    ck_assert(fd_readable(fd));
    for (int i = 1; i <= 5; i++) {
        ck_assert_int_eq(ccsb_ctx_next_event(ctx, &ev), 0);
        ck_assert_uint_eq(ccsb_event_exec_id(ev), (uint64_t)i);
        ck_assert_str_eq(ccsb_event_session_id(ev), "s1");
        ccsb_event_free(ev);
    }
    ck_assert(!fd_readable(fd));
    ck_assert_int_eq(ccsb_ctx_next_event(ctx, &ev), CCSB_E_AGAIN);
    ccsb_ctx_free(ctx);
    event_base_free(base);
}
END_TEST

static int rings;
static void ring(void *ud)
{
    (*(int *)ud)++;
}
static int destroyed;
static void on_destroy(void *ud)
{
    destroyed++;
}

START_TEST(doorbell_rings_on_empty_to_nonempty)
{
    struct event_base *base = event_base_new();
    ccsb_ctx *ctx = NULL;
    ck_assert_int_eq(ccsb_ctx_new_with_event_base(&ctx, base, NULL, 0), 0);
    rings = 0;
    destroyed = 0;
    ck_assert_int_eq(ccsb_ctx_set_wakeup(ctx, ring, &rings, on_destroy), 0);
    ctx_emit(ctx, mk(CCSB_EVENT_READY, 0));
    ctx_emit(ctx, mk(CCSB_EVENT_READY, 0));
    ck_assert_int_eq(rings, 1);
    ccsb_event *ev;
    while (ccsb_ctx_next_event(ctx, &ev) == 0)
        ccsb_event_free(ev);
    ctx_emit(ctx, mk(CCSB_EVENT_READY, 0));
    ck_assert_int_eq(rings, 2);
    /* Replacing the doorbell destroys the old userdata. */
    ck_assert_int_eq(ccsb_ctx_set_wakeup(ctx, NULL, NULL, NULL), 0);
    ck_assert_int_eq(destroyed, 1);
    ccsb_ctx_free(ctx); /* frees the queued event */
    event_base_free(base);
}
END_TEST

static int seen_types[16];
static int n_seen;
static void collect(const ccsb_event *ev, void *ud)
{
    if (n_seen < 16)
        seen_types[n_seen++] = ccsb_event_type(ev);
}

START_TEST(callback_bypasses_queue)
{
    struct event_base *base = event_base_new();
    ccsb_ctx *ctx = NULL;
    ck_assert_int_eq(ccsb_ctx_new_with_event_base(&ctx, base, NULL, 0), 0);
    n_seen = 0;
    destroyed = 0;
    ck_assert_int_eq(ccsb_ctx_set_event_callback(ctx, NULL, &n_seen, NULL), CCSB_E_INVAL);
    ck_assert_int_eq(ccsb_ctx_set_event_callback(ctx, collect, NULL, on_destroy), 0);
    ctx_emit(ctx, mk(CCSB_EVENT_EXIT, 1));
    ctx_emit(ctx, mk(CCSB_EVENT_KILLED, 1));
    ck_assert_int_eq(n_seen, 2);
    ck_assert_int_eq(seen_types[0], CCSB_EVENT_EXIT);
    ccsb_event *ev;
    ck_assert_int_eq(ccsb_ctx_next_event(ctx, &ev), CCSB_E_AGAIN);
    ccsb_ctx_free(ctx);
    ck_assert_int_eq(destroyed, 1);
    event_base_free(base);
}
END_TEST

START_TEST(internal_thread_context)
{
    ccsb_ctx *ctx = NULL;
    char err[128];
    ck_assert_int_eq(ccsb_ctx_new(&ctx, err, sizeof err), 0);
    ccsb_event *ev = NULL;
    ck_assert_int_eq(ccsb_ctx_wait_event(ctx, 50, &ev), CCSB_E_TIMEDOUT);
    ck_assert_ptr_null(ev);
    ck_assert_str_eq(ccsb_ctx_errmsg(ctx), "");
    ccsb_ctx_free(ctx);
    ccsb_ctx_free(NULL);
}
END_TEST

START_TEST(event_json_forms)
{
    struct ccsb_event *ev = mk(CCSB_EVENT_STDOUT, 7);
    ev->data = malloc(3);
    memcpy(ev->data, "hi\n", 3);
    ev->len = 3;
    char *js = NULL;
    ck_assert_int_eq(ccsb_event_to_json(ev, &js), 0);
    ck_assert_ptr_nonnull(strstr(js, "\"type\":\"stdout\""));
    ck_assert_ptr_nonnull(strstr(js, "\"data\":\"hi\\n\""));
    ck_assert_ptr_nonnull(strstr(js, "\"exec\":7"));
    ccsb_free(js);
    /* Bytes that are not UTF-8 travel as base64. */
    memcpy(ev->data, "\xff\xfe\x00", 3);
    ck_assert_int_eq(ccsb_event_to_json(ev, &js), 0);
    ck_assert_ptr_nonnull(strstr(js, "\"data_b64\":\"//4A\""));
    ccsb_free(js);
    ccsb_event_free(ev);

    ev = mk(CCSB_EVENT_VIOLATION, 0);
    ev->action = strdup("file-write");
    ev->target = strdup("/etc/x");
    ev->raw = strdup("sh: /etc/x: Read-only file system");
    ck_assert_int_eq(ccsb_event_to_json(ev, &js), 0);
    ck_assert_ptr_nonnull(strstr(js, "\"action\":\"file-write\""));
    ck_assert_ptr_nonnull(strstr(js, "\"target\":\"/etc/x\""));
    ck_assert_ptr_null(strstr(js, "\"exec\""));
    ccsb_free(js);
    ck_assert_str_eq(ccsb_event_violation_action(ev), "file-write");
    ck_assert_int_eq(ccsb_event_state(ev), -1);
    ccsb_event_free(ev);
}
END_TEST

START_TEST(strerror_is_closed_set)
{
    for (int c = 0; c >= -14; c--)
        ck_assert_str_ne(ccsb_strerror(c), "unknown error");
    ck_assert_str_eq(ccsb_strerror(-15), "unknown error");
    ck_assert_str_eq(ccsb_strerror(1), "unknown error");
    ck_assert_int_eq(CCSB_E_SPEC, -3); /* values are ABI: never renumbered */
    ck_assert_int_eq(CCSB_E_TIMEDOUT, -14);
}
END_TEST

static int env_has(const struct strv *env, const char *entry)
{
    return strv_contains(env, entry);
}

static int env_has_name(const struct strv *env, const char *name)
{
    size_t n = strlen(name);
    for (size_t i = 0; i < env->n; i++)
        if (strncmp(env->v[i], name, n) == 0 && env->v[i][n] == '=')
            return 1;
    return 0;
}

START_TEST(env_is_sanitised)
{
    ccsb_spec *spec = NULL;
    ck_assert_int_eq(ccsb_spec_new(&spec), 0);
    ck_assert_int_eq(ccsb_spec_set_env(spec, "FROM_SPEC", "1"), 0);
    ck_assert_int_eq(ccsb_spec_set_env(spec, "HOME", "/spec-home"), 0);
    struct ccsb_session s = {.spec = spec};
    struct ccsb_exec_req req = {0};
    strv_push(&req.env_names, "FROM_EXEC");
    strv_push(&req.env_values, "2");
    strv_push(&req.env_names, "FROM_SPEC");
    strv_push(&req.env_values, "exec-wins");
    char *inherited[] = {"PATH=/usr/bin", "LD_PRELOAD=/x", "LD_AUDIT=/y", "NODE_OPTIONS=--x",
                         "BASH_ENV=/z", "DYLD_INSERT_LIBRARIES=/q", "PYTHONSTARTUP=/p",
                         "PERL5OPT=-d", "RUBYOPT=-r", "JAVA_TOOL_OPTIONS=-x",
                         "GIT_SSH_COMMAND=evil", "BASH_FUNC_x%%=() { :; }", "ENV=/e",
                         "HOME=/host-home", "TMPDIR=/host-tmp", "=bad", "noequals", NULL};
    const char *forced[] = {"TMPDIR=/sess-tmp", NULL};
    struct strv env = STRV_INIT;
    ck_assert_int_eq(backend_build_env(&s, &req, inherited, forced, &env), 0);
    ck_assert(env_has(&env, "PATH=/usr/bin"));
    const char *gone[] = {"LD_PRELOAD", "LD_AUDIT", "NODE_OPTIONS", "BASH_ENV",
                          "DYLD_INSERT_LIBRARIES", "PYTHONSTARTUP", "PERL5OPT", "RUBYOPT",
                          "JAVA_TOOL_OPTIONS", "GIT_SSH_COMMAND", "BASH_FUNC_x%%", "ENV"};
    for (size_t i = 0; i < sizeof gone / sizeof gone[0]; i++)
        ck_assert_msg(!env_has_name(&env, gone[i]), "%s survived", gone[i]);
    ck_assert(env_has(&env, "HOME=/spec-home"));
    ck_assert(!env_has(&env, "HOME=/host-home"));
    ck_assert(env_has(&env, "FROM_SPEC=exec-wins"));
    ck_assert(env_has(&env, "FROM_EXEC=2"));
    ck_assert(env_has(&env, "TMPDIR=/sess-tmp"));
    ck_assert(!env_has(&env, "TMPDIR=/host-tmp"));
    ck_assert(!env_has(&env, "noequals"));
    ck_assert_ptr_null(env.v[env.n]);
    strv_clear(&env);
    strv_clear(&req.env_names);
    strv_clear(&req.env_values);
    ccsb_spec_free(spec);
}
END_TEST

/* ---- callback and doorbell replacement while they run ------------------- */

struct live_ud {
    ccsb_ctx *ctx;
    atomic_int alive;     /* cleared by the destroy notifier */
    atomic_int entered;
    int alive_after_set;  /* seen by the callback right after replacing itself */
    int alive_at_end;
};

static void mark_dead(void *ud)
{
    atomic_store(&((struct live_ud *)ud)->alive, 0);
}

static void replace_self(const ccsb_event *ev, void *ud)
{
    struct live_ud *l = ud;
    ck_assert_int_eq(ccsb_ctx_set_event_callback(l->ctx, NULL, NULL, NULL), 0);
    /* A binding's trampoline still runs on this userdata until we return. */
    l->alive_after_set = atomic_load(&l->alive);
}

START_TEST(callback_replaced_from_inside_itself)
{
    struct event_base *base = event_base_new();
    ccsb_ctx *ctx = NULL;
    ck_assert_int_eq(ccsb_ctx_new_with_event_base(&ctx, base, NULL, 0), 0);
    struct live_ud l = {.ctx = ctx};
    atomic_init(&l.alive, 1);
    ck_assert_int_eq(ccsb_ctx_set_event_callback(ctx, replace_self, &l, mark_dead), 0);
    ctx_emit(ctx, mk(CCSB_EVENT_READY, 0));
    ck_assert_msg(l.alive_after_set, "the destroy notifier ran while its callback was running");
    ck_assert_int_eq(atomic_load(&l.alive), 0); /* ...and right after it returned */
    /* The callback is gone: the next event is queued. */
    ctx_emit(ctx, mk(CCSB_EVENT_READY, 0));
    ccsb_event *ev = NULL;
    ck_assert_int_eq(ccsb_ctx_next_event(ctx, &ev), 0);
    ccsb_event_free(ev);
    ccsb_ctx_free(ctx);
    event_base_free(base);
}
END_TEST

static void slow_ring(void *ud)
{
    struct live_ud *l = ud;
    atomic_store(&l->entered, 1);
    usleep(200 * 1000);
    l->alive_at_end = atomic_load(&l->alive);
}

static int emit_one(void *arg)
{
    ctx_emit(arg, mk(CCSB_EVENT_READY, 0));
    return 0;
}

static void *emit_on_loop(void *arg)
{
    ctx_call(arg, emit_one, arg);
    return NULL;
}

START_TEST(doorbell_replaced_while_ringing)
{
    /* Dart closes its NativeCallable (the destroy notifier) from its own
     * thread while the loop thread may be ringing the old doorbell. */
    ccsb_ctx *ctx = NULL;
    ck_assert_int_eq(ccsb_ctx_new(&ctx, NULL, 0), 0);
    struct live_ud l = {.ctx = ctx};
    atomic_init(&l.alive, 1);
    atomic_init(&l.entered, 0);
    ck_assert_int_eq(ccsb_ctx_set_wakeup(ctx, slow_ring, &l, mark_dead), 0);
    pthread_t t;
    ck_assert_int_eq(pthread_create(&t, NULL, emit_on_loop, ctx), 0);
    for (int i = 0; i < 500 && !atomic_load(&l.entered); i++)
        usleep(1000);
    ck_assert(atomic_load(&l.entered));
    ck_assert_int_eq(ccsb_ctx_set_wakeup(ctx, NULL, NULL, NULL), 0);
    /* Once set_wakeup returned, the old doorbell is neither running nor
     * destroyed early. */
    ck_assert_int_eq(atomic_load(&l.alive), 0);
    pthread_join(t, NULL);
    ck_assert_msg(l.alive_at_end, "the doorbell's userdata was destroyed while it rang");
    ccsb_ctx_free(ctx);
}
END_TEST

START_TEST(session_error_pointer_stays_valid)
{
    /* Getters return pointers that live as long as the handle, even when
     * the session fails again later. */
    struct event_base *base = event_base_new();
    ccsb_ctx *ctx = NULL;
    ck_assert_int_eq(ccsb_ctx_new_with_event_base(&ctx, base, NULL, 0), 0);
    struct ccsb_session s = {.ctx = ctx, .id = "s1", .state = CCSB_STATE_WARM};
    const char *before = ccsb_session_error(&s);
    ck_assert_str_eq(before, "");
    session_fail(&s, "the sandbox died: %s", "first");
    const char *first = ccsb_session_error(&s);
    ck_assert_str_eq(first, "the sandbox died: first");
    session_fail(&s, "cannot kill exec %d", 2);
    ck_assert_str_eq(before, "");
    ck_assert_str_eq(first, "the sandbox died: first");
    /* The error that put the session into ERROR is the one reported. */
    ck_assert_str_eq(ccsb_session_error(&s), "the sandbox died: first");
    ck_assert_int_eq(ccsb_session_state(&s), CCSB_STATE_ERROR);
    int errors = 0;
    ccsb_event *ev;
    while (ccsb_ctx_next_event(ctx, &ev) == 0) {
        errors += ccsb_event_type(ev) == CCSB_EVENT_ERROR;
        ccsb_event_free(ev);
    }
    ck_assert_int_eq(errors, 2); /* every failure is still an event */
    free(s.error);
    ccsb_ctx_free(ctx);
    event_base_free(base);
}
END_TEST

START_TEST(caller_base_left_empty_when_idle)
{
    /* A host may rely on event_base_dispatch returning once nothing is
     * pending: an idle context keeps nothing registered on its base. */
    struct event_base *base = event_base_new();
    ccsb_ctx *ctx = NULL;
    ck_assert_int_eq(ccsb_ctx_new_with_event_base(&ctx, base, NULL, 0), 0);
    ck_assert_int_eq(event_base_loop(base, EVLOOP_NONBLOCK), 1);
    ccsb_ctx_free(ctx);
    ck_assert_int_eq(event_base_loop(base, EVLOOP_NONBLOCK), 1);
    event_base_free(base);
}
END_TEST

static int frees;

static void count_free(void *p)
{
    frees++;
    free(p);
}

/* Built objects are shared per key, a lost race frees the loser, a full
 * memo leaves the object with the caller, and the context frees the rest. */
START_TEST(memo_shares_per_key)
{
    ccsb_ctx *ctx;
    char err[128];
    ck_assert_int_eq(ccsb_ctx_new(&ctx, err, sizeof err), 0);
    frees = 0;
    int k1 = 1, k2 = 2;
    ck_assert_ptr_null(ctx_memo_get(ctx, 0, &k1, sizeof k1));
    void *a = malloc(8), *b = malloc(8);
    ck_assert_ptr_eq(ctx_memo_put(ctx, 0, &k1, sizeof k1, a, count_free), a);
    ck_assert_ptr_eq(ctx_memo_get(ctx, 0, &k1, sizeof k1), a);
    /* another launch built the same key meanwhile: it gets the stored one */
    ck_assert_ptr_eq(ctx_memo_put(ctx, 0, &k1, sizeof k1, b, count_free), a);
    ck_assert_int_eq(frees, 1);
    ck_assert_ptr_null(ctx_memo_get(ctx, 0, &k2, sizeof k2));
    ck_assert_ptr_null(ctx_memo_get(ctx, 1, &k1, sizeof k1)); /* slots apart */
    /* bounded: once full, the caller keeps (and frees) what it built */
    int stored = 1;
    void *kept = NULL;
    for (int i = 100; i < 200 && !kept; i++) {
        void *o = malloc(8);
        if (ctx_memo_put(ctx, 0, &i, sizeof i, o, count_free) == o)
            stored++;
        else
            kept = o;
    }
    ck_assert_ptr_nonnull(kept);
    ck_assert_int_ge(stored, 2);
    free(kept);
    ck_assert_int_eq(frees, 1);
    ccsb_ctx_free(ctx);
    ck_assert_int_eq(frees, 1 + stored);
}
END_TEST

static int check_calls;

static int fake_check(char *why, size_t len)
{
    check_calls++;
    snprintf(why, len, "because");
    return 7;
}

START_TEST(cached_check_peek_never_runs_it)
{
    ccsb_ctx *ctx;
    char err[128], why[32];
    ck_assert_int_eq(ccsb_ctx_new(&ctx, err, sizeof err), 0);
    check_calls = 0;
    int v = -1;
    ck_assert_int_eq(ctx_cached_check_peek(ctx, 1, &v), 0);
    ck_assert_int_eq(v, -1);
    ck_assert_int_eq(check_calls, 0);
    ck_assert_int_eq(ctx_cached_check(ctx, 1, fake_check, why, sizeof why), 7);
    ck_assert_int_eq(ctx_cached_check_peek(ctx, 1, &v), 1);
    ck_assert_int_eq(v, 7);
    ck_assert_int_eq(ctx_cached_check(ctx, 1, fake_check, why, sizeof why), 7);
    ck_assert_int_eq(check_calls, 1);
    ck_assert_str_eq(why, "because");
    ccsb_ctx_free(ctx);
}
END_TEST

START_TEST(wait_event_with_nothing_that_could_come)
{
    struct event_base *base = event_base_new();
    ccsb_ctx *ctx = NULL;
    ck_assert_int_eq(ccsb_ctx_new_with_event_base(&ctx, base, NULL, 0), 0);
    ccsb_event *ev = NULL;
    /* Nothing is registered on the base: waiting forever would spin. */
    ck_assert_int_eq(ccsb_ctx_wait_event(ctx, -1, &ev), CCSB_E_STATE);
    ck_assert_ptr_nonnull(strstr(ccsb_ctx_errmsg(ctx), "nothing"));
    ck_assert_int_eq(ccsb_ctx_wait_event(ctx, 20, &ev), CCSB_E_TIMEDOUT);
    ctx_emit(ctx, mk(CCSB_EVENT_READY, 0));
    ck_assert_int_eq(ccsb_ctx_wait_event(ctx, -1, &ev), 0);
    ccsb_event_free(ev);
    ccsb_ctx_free(ctx);
    event_base_free(base);
}
END_TEST

static Suite *core_suite(void)
{
    Suite *s = suite_create("core");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 20);
    tcase_add_test(tc, queue_order_and_fd);
    tcase_add_test(tc, doorbell_rings_on_empty_to_nonempty);
    tcase_add_test(tc, callback_bypasses_queue);
    tcase_add_test(tc, internal_thread_context);
    tcase_add_test(tc, event_json_forms);
    tcase_add_test(tc, strerror_is_closed_set);
    tcase_add_test(tc, env_is_sanitised);
    tcase_add_test(tc, callback_replaced_from_inside_itself);
    tcase_add_test(tc, doorbell_replaced_while_ringing);
    tcase_add_test(tc, session_error_pointer_stays_valid);
    tcase_add_test(tc, caller_base_left_empty_when_idle);
    tcase_add_test(tc, wait_event_with_nothing_that_could_come);
    tcase_add_test(tc, memo_shares_per_key);
    tcase_add_test(tc, cached_check_peek_never_runs_it);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(core_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
