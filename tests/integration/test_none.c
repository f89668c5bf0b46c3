/*
 * Integration: the `none` backend through the public API only (this program
 * links libccsandbox.so like any host).
 */
#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <event2/event.h>

#include <ccsandbox/ccsandbox-libevent.h>
#include <ccsandbox/ccsandbox.h>

struct result {
    char out[65536];
    size_t out_len;
    char err[65536];
    size_t err_len;
    int exited;
    int code;
    int sig;
    int killed_reason;
    int n_ready, n_starting;
};

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static void absorb(struct result *r, ccsb_event *ev, uint64_t exec_id)
{
    size_t len;
    const uint8_t *d;
    int t = ccsb_event_type(ev);
    if (t == CCSB_EVENT_READY)
        r->n_ready++;
    if (t == CCSB_EVENT_STARTING)
        r->n_starting++;
    if (ccsb_event_exec_id(ev) != exec_id)
        return;
    switch (t) {
    case CCSB_EVENT_STDOUT:
        d = ccsb_event_data(ev, &len);
        if (r->out_len + len < sizeof r->out) {
            memcpy(r->out + r->out_len, d, len);
            r->out_len += len;
        }
        break;
    case CCSB_EVENT_STDERR:
        d = ccsb_event_data(ev, &len);
        if (r->err_len + len < sizeof r->err) {
            memcpy(r->err + r->err_len, d, len);
            r->err_len += len;
        }
        break;
    case CCSB_EVENT_KILLED:
        r->killed_reason = ccsb_event_kill_reason(ev);
        break;
    case CCSB_EVENT_EXIT:
        r->exited = 1;
        r->code = ccsb_event_exit_code(ev);
        r->sig = ccsb_event_signal(ev);
        break;
    }
}

/* Pumps events until the exec exits (bounded). */
static void wait_exit(ccsb_ctx *ctx, uint64_t id, struct result *r, int max_ms)
{
    double deadline = now_s() + max_ms / 1000.0;
    while (!r->exited && now_s() < deadline) {
        ccsb_event *ev = NULL;
        if (ccsb_ctx_wait_event(ctx, 100, &ev) == 0) {
            absorb(r, ev, id);
            ccsb_event_free(ev);
        }
    }
}

static ccsb_session *launch_none(ccsb_ctx *ctx, ccsb_spec **spec_out)
{
    ccsb_spec *spec = NULL;
    ck_assert_int_eq(ccsb_spec_new(&spec), 0);
    ck_assert_int_eq(ccsb_spec_set_backend(spec, CCSB_BACKEND_NONE), 0);
    ck_assert_int_eq(ccsb_spec_set_session_id(spec, "itest"), 0);
    ccsb_session *s = NULL;
    int r = ccsb_launch(ctx, spec, &s);
    ck_assert_msg(r == 0, "launch: %s", ccsb_ctx_errmsg(ctx));
    ck_assert_int_eq(ccsb_session_backend(s), CCSB_BACKEND_NONE);
    ck_assert_int_eq(ccsb_session_state(s), CCSB_STATE_WARM);
    if (spec_out)
        *spec_out = spec;
    else
        ccsb_spec_free(spec);
    return s;
}

static uint64_t run(ccsb_session *s, const char *const *argv, size_t argc, uint64_t timeout_ms)
{
    ccsb_exec_req *req = NULL;
    ck_assert_int_eq(ccsb_exec_req_new(&req), 0);
    ck_assert_int_eq(ccsb_exec_req_set_argv(req, argv, argc), 0);
    if (timeout_ms)
        ck_assert_int_eq(ccsb_exec_req_set_timeout_ms(req, timeout_ms), 0);
    uint64_t id = 0;
    ck_assert_int_eq(ccsb_exec(s, req, &id), 0);
    ck_assert_uint_gt(id, 0);
    ccsb_exec_req_free(req);
    return id;
}

static int count_fds(void)
{
    int n = 0;
    DIR *d = opendir("/proc/self/fd");
    struct dirent *e;
    while ((e = readdir(d)))
        n += e->d_name[0] != '.';
    closedir(d);
    return n;
}

START_TEST(exec_stdout_stderr_exit)
{
    ccsb_ctx *ctx = NULL;
    ck_assert_int_eq(ccsb_ctx_new(&ctx, NULL, 0), 0);
    ccsb_session *s = launch_none(ctx, NULL);
    ck_assert_str_eq(ccsb_session_id(s), "itest");
    const char *argv[] = {"sh", "-c", "echo out; echo err >&2; exit 3"};
    uint64_t id = run(s, argv, 3, 0);
    struct result r = {0};
    wait_exit(ctx, id, &r, 10000);
    ck_assert(r.exited);
    ck_assert_int_eq(r.code, 3);
    ck_assert_int_eq(r.sig, 0);
    ck_assert_int_eq(r.n_ready, 1);
    ck_assert_int_eq(r.n_starting, 1);
    ck_assert_str_eq(r.out, "out\n");
    ck_assert_str_eq(r.err, "err\n");
    ccsb_session_destroy(s);
    ccsb_ctx_free(ctx);
}
END_TEST

START_TEST(timeout_kills_whole_group)
{
    ccsb_ctx *ctx = NULL;
    ck_assert_int_eq(ccsb_ctx_new(&ctx, NULL, 0), 0);
    ccsb_session *s = launch_none(ctx, NULL);
    /* The background sleep must die too: it writes its pid for us to check. */
    char pidfile[] = "/tmp/ccsb-itest-XXXXXX";
    int fd = mkstemp(pidfile);
    ck_assert_int_ge(fd, 0);
    close(fd);
    char script[256];
    snprintf(script, sizeof script, "sleep 30 & echo $! > %s; sleep 30", pidfile);
    const char *argv[] = {"sh", "-c", script};
    double t0 = now_s();
    uint64_t id = run(s, argv, 3, 300);
    struct result r = {0};
    wait_exit(ctx, id, &r, 5000);
    ck_assert(r.exited);
    ck_assert_double_lt(now_s() - t0, 3.0);
    ck_assert_int_eq(r.killed_reason, CCSB_KILL_TIMEOUT);
    ck_assert_int_eq(r.sig, SIGKILL);
    FILE *f = fopen(pidfile, "r");
    int bg = 0;
    ck_assert(fscanf(f, "%d", &bg) == 1);
    fclose(f);
    unlink(pidfile);
    /* Give the kernel a moment to finish the kill of the reparented child. */
    for (int i = 0; i < 50 && kill(bg, 0) == 0; i++)
        usleep(20000);
    char st[64];
    snprintf(st, sizeof st, "/proc/%d/stat", bg);
    FILE *p = fopen(st, "r");
    if (p) { /* only acceptable as a zombie awaiting its new parent */
        char buf[256] = "";
        ck_assert_ptr_nonnull(fgets(buf, sizeof buf, p));
        fclose(p);
        ck_assert_ptr_nonnull(strstr(buf, ") Z"));
    }
    ccsb_session_destroy(s);
    ccsb_ctx_free(ctx);
}
END_TEST

START_TEST(stop_kills_background_and_removes_tmp)
{
    ccsb_ctx *ctx = NULL;
    ck_assert_int_eq(ccsb_ctx_new(&ctx, NULL, 0), 0);
    ccsb_session *s = launch_none(ctx, NULL);
    const char *argv[] = {"sh", "-c", "sleep 100 >/dev/null 2>&1 & echo $!; echo $TMPDIR"};
    uint64_t id = run(s, argv, 3, 0);
    struct result r = {0};
    wait_exit(ctx, id, &r, 5000);
    ck_assert_int_eq(r.code, 0);
    int bg = atoi(r.out);
    char *nl = strchr(r.out, '\n');
    ck_assert_ptr_nonnull(nl);
    char tmpdir[512];
    snprintf(tmpdir, sizeof tmpdir, "%s", nl + 1);
    tmpdir[strcspn(tmpdir, "\n")] = 0;
    struct stat st;
    ck_assert_int_eq(stat(tmpdir, &st), 0);
    ck_assert(S_ISDIR(st.st_mode));
    ck_assert_int_eq(st.st_mode & 0777, 0700);
    ck_assert_int_eq(kill(bg, 0), 0);
    ck_assert_int_eq(ccsb_session_stop(s), 0);
    ck_assert_int_eq(ccsb_session_state(s), CCSB_STATE_DESTROYED);
    for (int i = 0; i < 50 && kill(bg, 0) == 0; i++)
        usleep(20000);
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/stat", bg);
    FILE *p = fopen(path, "r");
    if (p) {
        char buf[256] = "";
        ck_assert_ptr_nonnull(fgets(buf, sizeof buf, p));
        fclose(p);
        ck_assert_ptr_nonnull(strstr(buf, ") Z"));
    }
    ck_assert_int_ne(stat(tmpdir, &st), 0);
    /* exec on a stopped session is a state error with a message */
    const char *argv2[] = {"true"};
    ccsb_exec_req *req = NULL;
    ccsb_exec_req_new(&req);
    ccsb_exec_req_set_argv(req, argv2, 1);
    uint64_t id2;
    ck_assert_int_eq(ccsb_exec(s, req, &id2), CCSB_E_STATE);
    ck_assert_ptr_nonnull(strstr(ccsb_ctx_errmsg(ctx), "destroyed"));
    ccsb_exec_req_free(req);
    ccsb_session_destroy(s);
    ccsb_ctx_free(ctx);
}
END_TEST

START_TEST(stdin_pipe_and_many_execs)
{
    ccsb_ctx *ctx = NULL;
    ck_assert_int_eq(ccsb_ctx_new(&ctx, NULL, 0), 0);
    ccsb_session *s = launch_none(ctx, NULL);
    int fds_before = count_fds();
    for (int round = 0; round < 20; round++) {
        ccsb_exec_req *req = NULL;
        ccsb_exec_req_new(&req);
        const char *argv[] = {"tr", "a-z", "A-Z"};
        ccsb_exec_req_set_argv(req, argv, 3);
        ccsb_exec_req_set_stdin(req, CCSB_STDIN_PIPE);
        uint64_t id;
        ck_assert_int_eq(ccsb_exec(s, req, &id), 0);
        ccsb_exec_req_free(req);
        ck_assert_int_eq(ccsb_exec_write_stdin(s, id, "hello", 5), 5);
        ck_assert_int_eq(ccsb_exec_close_stdin(s, id), 0);
        struct result r = {0};
        wait_exit(ctx, id, &r, 5000);
        ck_assert_int_eq(r.code, 0);
        ck_assert_str_eq(r.out, "HELLO");
    }
    ck_assert_int_eq(ccsb_exec_write_stdin(s, 9999, "x", 1), CCSB_E_NOTFOUND);
    /* Every pipe of a finished exec is closed again. */
    ck_assert_int_eq(count_fds(), fds_before);
    ccsb_session_destroy(s);
    ccsb_ctx_free(ctx);
}
END_TEST

START_TEST(pty_exec_answers_tty)
{
    ccsb_ctx *ctx = NULL;
    ck_assert_int_eq(ccsb_ctx_new(&ctx, NULL, 0), 0);
    ccsb_session *s = launch_none(ctx, NULL);
    ccsb_exec_req *req = NULL;
    ccsb_exec_req_new(&req);
    const char *argv[] = {"sh", "-c", "tty; stty size"};
    ccsb_exec_req_set_argv(req, argv, 3);
    ck_assert_int_eq(ccsb_exec_req_set_pty(req, 33, 101), 0);
    uint64_t id;
    ck_assert_int_eq(ccsb_exec(s, req, &id), 0);
    ccsb_exec_req_free(req);
    struct result r = {0};
    wait_exit(ctx, id, &r, 5000);
    ck_assert_int_eq(r.code, 0);
    ck_assert_msg(strstr(r.out, "/dev/pts/") != NULL, "tty said: %s", r.out);
    ck_assert_msg(strstr(r.out, "33 101") != NULL, "stty said: %s", r.out);
    ccsb_session_destroy(s);
    ccsb_ctx_free(ctx);
}
END_TEST

START_TEST(microvm_never_falls_back)
{
    ccsb_ctx *ctx = NULL;
    ck_assert_int_eq(ccsb_ctx_new(&ctx, NULL, 0), 0);
    ccsb_spec *spec = NULL;
    ccsb_spec_new(&spec);
    ccsb_spec_set_backend(spec, CCSB_BACKEND_MICROVM);
    ccsb_session *s = (ccsb_session *)1;
    ck_assert_int_eq(ccsb_launch(ctx, spec, &s), CCSB_E_UNAVAILABLE);
    ck_assert_ptr_null(s);
    ck_assert_ptr_nonnull(strstr(ccsb_ctx_errmsg(ctx), "microvm"));
    ccsb_spec_free(spec);
    ccsb_ctx_free(ctx);
}
END_TEST

START_TEST(invalid_spec_launches_nothing)
{
    ccsb_ctx *ctx = NULL;
    ck_assert_int_eq(ccsb_ctx_new(&ctx, NULL, 0), 0);
    ccsb_spec *spec = NULL;
    ccsb_spec_new(&spec);
    ccsb_spec_set_backend(spec, CCSB_BACKEND_NONE);
    ccsb_spec_add_bind_mount(spec, "relative/path", NULL, 0);
    ccsb_session *s = NULL;
    ck_assert_int_eq(ccsb_launch(ctx, spec, &s), CCSB_E_SPEC);
    ck_assert_ptr_null(s);
    ck_assert_ptr_nonnull(strstr(ccsb_ctx_errmsg(ctx), "bindMounts[0].hostPath"));
    ccsb_spec_free(spec);
    ccsb_ctx_free(ctx);
}
END_TEST

/* A host that owns its libevent loop: no library thread, events on the base. */
struct cb_state {
    uint64_t id;
    struct result r;
    struct event_base *base;
};

static void on_event(const ccsb_event *ev, void *ud)
{
    struct cb_state *st = ud;
    absorb(&st->r, (ccsb_event *)ev, st->id);
    if (st->r.exited)
        event_base_loopbreak(st->base);
}

START_TEST(caller_owned_event_base)
{
    struct event_base *base = event_base_new();
    ccsb_ctx *ctx = NULL;
    ck_assert_int_eq(ccsb_ctx_new_with_event_base(&ctx, base, NULL, 0), 0);
    struct cb_state st = {.base = base};
    ck_assert_int_eq(ccsb_ctx_set_event_callback(ctx, on_event, &st, NULL), 0);
    ccsb_session *s = launch_none(ctx, NULL);
    const char *argv[] = {"echo", "on the caller's loop"};
    st.id = run(s, argv, 2, 0);
    struct timeval limit = {10, 0};
    event_base_loopexit(base, &limit);
    event_base_dispatch(base);
    ck_assert(st.r.exited);
    ck_assert_str_eq(st.r.out, "on the caller's loop\n");
    /* Freeing the context before the session is allowed (any order). */
    ccsb_ctx_free(ctx);
    ccsb_session_destroy(s);
    event_base_free(base);
}
END_TEST

START_TEST(session_timeout_stops_session)
{
    ccsb_ctx *ctx = NULL;
    ck_assert_int_eq(ccsb_ctx_new(&ctx, NULL, 0), 0);
    ccsb_spec *spec = NULL;
    ccsb_spec_new(&spec);
    ccsb_spec_set_backend(spec, CCSB_BACKEND_NONE);
    ccsb_spec_set_timeout_ms(spec, 300);
    ccsb_session *s = NULL;
    ck_assert_int_eq(ccsb_launch(ctx, spec, &s), 0);
    const char *argv[] = {"sleep", "30"};
    uint64_t id = run(s, argv, 2, 0);
    struct result r = {0};
    wait_exit(ctx, id, &r, 5000);
    ck_assert(r.exited);
    ck_assert_int_eq(r.killed_reason, CCSB_KILL_TIMEOUT);
    /* The exit comes first, then the session's own state change. */
    int destroyed = 0;
    double deadline = now_s() + 5;
    while (!destroyed && now_s() < deadline) {
        ccsb_event *ev = NULL;
        if (ccsb_ctx_wait_event(ctx, 100, &ev) == 0) {
            destroyed = ccsb_event_type(ev) == CCSB_EVENT_STATE &&
                        ccsb_event_state(ev) == CCSB_STATE_DESTROYED;
            ccsb_event_free(ev);
        }
    }
    ck_assert(destroyed);
    ck_assert_int_eq(ccsb_session_state(s), CCSB_STATE_DESTROYED);
    ccsb_session_destroy(s);
    ccsb_spec_free(spec);
    ccsb_ctx_free(ctx);
}
END_TEST

START_TEST(suspend_and_resume)
{
    ccsb_ctx *ctx = NULL;
    ck_assert_int_eq(ccsb_ctx_new(&ctx, NULL, 0), 0);
    ccsb_session *s = launch_none(ctx, NULL);
    const char *argv[] = {"sh", "-c", "sleep 0.3; echo done"};
    uint64_t id = run(s, argv, 3, 0);
    ck_assert_int_eq(ccsb_session_suspend(s), 0);
    ck_assert_int_eq(ccsb_session_state(s), CCSB_STATE_SUSPENDED);
    struct result r = {0};
    wait_exit(ctx, id, &r, 1000); /* frozen: must not finish */
    ck_assert(!r.exited);
    ck_assert_int_eq(ccsb_session_resume(s), 0);
    wait_exit(ctx, id, &r, 5000);
    ck_assert(r.exited);
    ck_assert_str_eq(r.out, "done\n");
    ccsb_session_destroy(s);
    ccsb_ctx_free(ctx);
}
END_TEST

static Suite *none_suite(void)
{
    Suite *s = suite_create("none-backend");
    TCase *tc = tcase_create("api");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, exec_stdout_stderr_exit);
    tcase_add_test(tc, timeout_kills_whole_group);
    tcase_add_test(tc, stop_kills_background_and_removes_tmp);
    tcase_add_test(tc, stdin_pipe_and_many_execs);
    tcase_add_test(tc, pty_exec_answers_tty);
    tcase_add_test(tc, microvm_never_falls_back);
    tcase_add_test(tc, invalid_spec_launches_nothing);
    tcase_add_test(tc, caller_owned_event_base);
    tcase_add_test(tc, session_timeout_stops_session);
    tcase_add_test(tc, suspend_and_resume);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(none_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
