/*
 * Integration: the `none` backend through the public API only (this program
 * links libccsandbox.so like any host).
 */
#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
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
    uint64_t error_exec;
    char error_msg[512];
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
    case CCSB_EVENT_ERROR:
        r->error_exec = exec_id;
        snprintf(r->error_msg, sizeof r->error_msg, "%s", ccsb_event_message(ev));
        break;
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

/* Starts argv; end_session: as the session's last command. Returns the exec id. */
static uint64_t start_exec(ccsb_session *s, const char *const *argv, size_t argc,
                           uint64_t timeout_ms, int end_session)
{
    ccsb_exec_req *req = NULL;
    ck_assert_int_eq(ccsb_exec_req_new(&req), 0);
    ck_assert_int_eq(ccsb_exec_req_set_argv(req, argv, argc), 0);
    if (timeout_ms)
        ck_assert_int_eq(ccsb_exec_req_set_timeout_ms(req, timeout_ms), 0);
    if (end_session)
        ck_assert_int_eq(ccsb_exec_req_set_end_session(req, 1), 0);
    uint64_t id = 0;
    ck_assert_int_eq(ccsb_exec(s, req, &id), 0);
    ck_assert_uint_gt(id, 0);
    ccsb_exec_req_free(req);
    return id;
}

static uint64_t run(ccsb_session *s, const char *const *argv, size_t argc, uint64_t timeout_ms)
{
    return start_exec(s, argv, argc, timeout_ms, 0);
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

START_TEST(duplicate_session_id_refused)
{
    ccsb_ctx *ctx = NULL;
    ck_assert_int_eq(ccsb_ctx_new(&ctx, NULL, 0), 0);
    ccsb_session *s = launch_none(ctx, NULL); /* sessionId "itest" */
    ccsb_spec *spec = NULL;
    ccsb_spec_new(&spec);
    ccsb_spec_set_backend(spec, CCSB_BACKEND_NONE);
    ccsb_spec_set_session_id(spec, "itest");
    ccsb_session *dup = NULL;
    ck_assert_int_eq(ccsb_launch(ctx, spec, &dup), CCSB_E_STATE);
    ck_assert_ptr_null(dup);
    ck_assert_ptr_nonnull(strstr(ccsb_ctx_errmsg(ctx), "already used"));
    /* Once the first one is stopped, the id is free again. */
    ck_assert_int_eq(ccsb_session_stop(s), 0);
    ck_assert_int_eq(ccsb_launch(ctx, spec, &dup), 0);
    ccsb_session_destroy(dup);
    ccsb_session_destroy(s);
    ccsb_spec_free(spec);
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

/* ccsb_launch_exec on a backend that cannot send ahead: launch, then the
 * exec on the loop in the same call; the session goes on serving. */
START_TEST(launch_exec_in_one_call)
{
    ccsb_ctx *ctx = NULL;
    ck_assert_int_eq(ccsb_ctx_new(&ctx, NULL, 0), 0);
    ccsb_spec *spec = NULL;
    ccsb_spec_new(&spec);
    ccsb_spec_set_backend(spec, CCSB_BACKEND_NONE);
    ccsb_exec_req *req = NULL;
    ck_assert_int_eq(ccsb_exec_req_new(&req), 0);
    uint64_t id = 9;
    ccsb_session *s = NULL;
    /* empty argv: refused before anything starts */
    ck_assert_int_eq(ccsb_launch_exec(ctx, spec, req, &s, &id), CCSB_E_INVAL);
    ck_assert_ptr_null(s);
    ck_assert_uint_eq(id, 0);
    ck_assert_ptr_nonnull(strstr(ccsb_ctx_errmsg(ctx), "argv"));
    const char *argv[] = {"sh", "-c", "echo out; echo err >&2; exit 3"};
    ck_assert_int_eq(ccsb_exec_req_set_argv(req, argv, 3), 0);
    /* a bad spec: nothing */
    ccsb_spec_add_bind_mount(spec, "relative/path", NULL, 0);
    ck_assert_int_eq(ccsb_launch_exec(ctx, spec, req, &s, &id), CCSB_E_SPEC);
    ck_assert_ptr_null(s);
    ccsb_spec_free(spec);
    ccsb_spec_new(&spec);
    ccsb_spec_set_backend(spec, CCSB_BACKEND_NONE);
    int r = ccsb_launch_exec(ctx, spec, req, &s, &id);
    ck_assert_msg(r == 0, "launch_exec: %s", ccsb_ctx_errmsg(ctx));
    ccsb_exec_req_free(req);
    ck_assert_uint_gt(id, 0);
    struct result res = {0};
    wait_exit(ctx, id, &res, 10000);
    ck_assert(res.exited);
    ck_assert_int_eq(res.code, 3);
    ck_assert_int_eq(res.n_ready, 1);
    ck_assert_str_eq(res.out, "out\n");
    ck_assert_str_eq(res.err, "err\n");
    const char *argv2[] = {"sh", "-c", "echo again"};
    uint64_t id2 = run(s, argv2, 3, 0);
    ck_assert_uint_ne(id2, id);
    struct result res2 = {0};
    wait_exit(ctx, id2, &res2, 10000);
    ck_assert_str_eq(res2.out, "again\n");
    ccsb_session_destroy(s);
    ccsb_spec_free(spec);
    ccsb_ctx_free(ctx);
}
END_TEST

/* 1 once a process matching the pgrep -f pattern exists (present) or none
 * does (!present), within max_ms. The pattern must not match itself
 * ("[s]leep ..."): pgrep runs under a shell whose command line holds it. */
static int procs_become(const char *pattern, int present, int max_ms)
{
    char cmd[256];
    snprintf(cmd, sizeof cmd, "pgrep -f '%s' >/dev/null", pattern);
    for (int waited = 0; waited <= max_ms; waited += 20) {
        if ((system(cmd) == 0) == present)
            return 1;
        usleep(20000);
    }
    return 0;
}

/* end_session on the none backend: the host stops the session itself once
 * the exit is reported (its process group, background included). */
START_TEST(end_session_stops_the_session)
{
    ccsb_ctx *ctx = NULL;
    ck_assert_int_eq(ccsb_ctx_new(&ctx, NULL, 0), 0);
    ccsb_session *s = launch_none(ctx, NULL);
    const char *argv[] = {"sh", "-c", "sleep 1000.75 & echo last"};
    uint64_t id = start_exec(s, argv, 3, 0, 1);
    struct result r = {0};
    wait_exit(ctx, id, &r, 10000);
    ck_assert(r.exited);
    ck_assert_str_eq(r.out, "last\n");
    for (int i = 0; i < 100 && ccsb_session_state(s) != CCSB_STATE_DESTROYED; i++) {
        ccsb_event *ev = NULL;
        if (ccsb_ctx_wait_event(ctx, 20, &ev) == 0)
            ccsb_event_free(ev);
    }
    ck_assert_int_eq(ccsb_session_state(s), CCSB_STATE_DESTROYED);
    ck_assert_msg(procs_become("[s]leep 1000.75", 0, 2000), "the background sleep survived");
    ccsb_session_destroy(s);
    ccsb_ctx_free(ctx);
}
END_TEST

/* The context may go first: it stops its sessions, and destroying a
 * session afterwards only frees the handle. */
START_TEST(session_destroyed_after_its_context)
{
    ccsb_ctx *ctx = NULL;
    ck_assert_int_eq(ccsb_ctx_new(&ctx, NULL, 0), 0);
    ccsb_session *s = launch_none(ctx, NULL);
    const char *argv[] = {"sh", "-c", "sleep 1000.625"};
    run(s, argv, 3, 0);
    ck_assert_msg(procs_become("[s]leep 1000.625", 1, 5000), "the command never started");
    ccsb_ctx_free(ctx);
    ck_assert_msg(procs_become("[s]leep 1000.625", 0, 2000), "the command survived");
    ck_assert_int_eq(ccsb_session_state(s), CCSB_STATE_DESTROYED);
    ccsb_session_destroy(s);
}
END_TEST

/*
 * Once an end_session command has ended, the session takes no new command,
 * not even from the callback that delivers that command's exit (it used
 * to: the none backend started it on the host, and the deferred stop
 * killed it a moment later, after it had done its work).
 */
struct late_exec {
    ccsb_session *s;
    _Atomic uint64_t end_id;
    const char *marker;
    _Atomic int tried, code, destroyed;
};

static void late_exec_cb(const ccsb_event *ev, void *ud)
{
    struct late_exec *le = ud;
    if (ccsb_event_type(ev) == CCSB_EVENT_STATE && ccsb_event_state(ev) == CCSB_STATE_DESTROYED)
        le->destroyed = 1;
    if (ccsb_event_type(ev) != CCSB_EVENT_EXIT || ccsb_event_exec_id(ev) != le->end_id ||
        le->tried)
        return;
    ccsb_exec_req *req = NULL;
    if (ccsb_exec_req_new(&req) < 0)
        return;
    const char *argv[] = {"touch", le->marker};
    ccsb_exec_req_set_argv(req, argv, 2);
    uint64_t id = 0;
    le->code = ccsb_exec(le->s, req, &id);
    le->tried = 1;
    ccsb_exec_req_free(req);
}

START_TEST(no_exec_after_end_session)
{
    char marker[] = "/tmp/ccsb-none-late-XXXXXX";
    int fd = mkstemp(marker);
    ck_assert_int_ge(fd, 0);
    close(fd);
    unlink(marker);
    ccsb_ctx *ctx = NULL;
    ck_assert_int_eq(ccsb_ctx_new(&ctx, NULL, 0), 0);
    struct late_exec le = {.marker = marker};
    le.s = launch_none(ctx, NULL);
    ck_assert_int_eq(ccsb_ctx_set_event_callback(ctx, late_exec_cb, &le, NULL), 0);
    const char *argv[] = {"sleep", "0.2"};
    le.end_id = start_exec(le.s, argv, 2, 0, 1); /* (long before its exit) */
    for (int i = 0; i < 500 && !le.destroyed; i++)
        usleep(10000);
    usleep(100000);
    int ran = access(marker, F_OK) == 0;
    unlink(marker);
    ck_assert(le.tried);
    ck_assert(le.destroyed);
    ck_assert_int_eq(le.code, CCSB_E_STATE);
    ck_assert_msg(!ran, "a command ran after the session's last one");
    ccsb_session_destroy(le.s);
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

/* ---- the commands some tests run: this program, re-executed ------------ */

static char self_exe[4096];

/*
 * Joins the host's process group (the same session, so the kernel allows
 * it): a kill of the exec's own group no longer reaches this process.
 */
static int helper_leave_group(void)
{
    if (setpgid(0, getpgid(getppid())) < 0) {
        perror("setpgid");
        return 2;
    }
    fputs("moved\n", stdout);
    fflush(stdout);
    sleep(10);
    return 0;
}

/* Starts this program with one helper argument; returns the exec id. */
static uint64_t run_self(ccsb_session *s, const char *helper, uint64_t timeout_ms)
{
    const char *argv[] = {self_exe, helper};
    return run(s, argv, 2, timeout_ms);
}

/* Pumps events until the exec's stdout contains text (bounded). */
static void wait_output(ccsb_ctx *ctx, uint64_t id, struct result *r, const char *text,
                        int max_ms)
{
    double deadline = now_s() + max_ms / 1000.0;
    while (!strstr(r->out, text) && !r->exited && now_s() < deadline) {
        ccsb_event *ev = NULL;
        if (ccsb_ctx_wait_event(ctx, 100, &ev) == 0) {
            absorb(r, ev, id);
            ccsb_event_free(ev);
        }
    }
}

START_TEST(kill_reaches_main_that_left_its_group)
{
    ccsb_ctx *ctx = NULL;
    ck_assert_int_eq(ccsb_ctx_new(&ctx, NULL, 0), 0);
    ccsb_session *s = launch_none(ctx, NULL);
    uint64_t id = run_self(s, "--leave-group", 0);
    struct result r = {0};
    wait_output(ctx, id, &r, "moved", 5000);
    ck_assert_msg(strstr(r.out, "moved"), "helper said: %s / %s", r.out, r.err);
    ck_assert_int_eq(ccsb_exec_kill(s, id), 0);
    wait_exit(ctx, id, &r, 3000);
    ck_assert_msg(r.exited, "the kill did not reach a command outside its group");
    ck_assert_int_eq(r.sig, SIGKILL);
    ck_assert_int_eq(r.killed_reason, CCSB_KILL_MANUAL);

    /* The timeout too. */
    id = run_self(s, "--leave-group", 500);
    struct result r2 = {0};
    wait_exit(ctx, id, &r2, 3000);
    ck_assert_msg(r2.exited, "the timeout did not reach a command outside its group");
    ck_assert_int_eq(r2.killed_reason, CCSB_KILL_TIMEOUT);
    ccsb_session_destroy(s);
    ccsb_ctx_free(ctx);
}
END_TEST

START_TEST(stop_does_not_wait_for_a_main_outside_its_group)
{
    ccsb_ctx *ctx = NULL;
    ck_assert_int_eq(ccsb_ctx_new(&ctx, NULL, 0), 0);
    ccsb_session *s = launch_none(ctx, NULL);
    uint64_t id = run_self(s, "--leave-group", 0);
    struct result r = {0};
    wait_output(ctx, id, &r, "moved", 5000);
    ck_assert(strstr(r.out, "moved"));
    double t0 = now_s();
    ck_assert_int_eq(ccsb_session_stop(s), 0);
    ck_assert_msg(now_s() - t0 < 3.0, "stop blocked %.1f s on the command", now_s() - t0);
    wait_exit(ctx, id, &r, 1000);
    ck_assert(r.exited);
    ck_assert_int_eq(r.sig, SIGKILL);
    ccsb_session_destroy(s);
    ccsb_ctx_free(ctx);
}
END_TEST

/* A pty exec becomes its own session leader in the child: a kill sent
 * before the child got there must still land. */
START_TEST(pty_kill_right_after_start)
{
    ccsb_ctx *ctx = NULL;
    ck_assert_int_eq(ccsb_ctx_new(&ctx, NULL, 0), 0);
    ccsb_session *s = launch_none(ctx, NULL);
    for (int i = 0; i < 100; i++) {
        ccsb_exec_req *req = NULL;
        ccsb_exec_req_new(&req);
        const char *argv[] = {"sleep", "5"};
        ccsb_exec_req_set_argv(req, argv, 2);
        ccsb_exec_req_set_pty(req, 24, 80);
        uint64_t id;
        ck_assert_int_eq(ccsb_exec(s, req, &id), 0);
        ccsb_exec_req_free(req);
        ck_assert_int_eq(ccsb_exec_kill(s, id), 0);
        struct result r = {0};
        wait_exit(ctx, id, &r, 2000);
        ck_assert_msg(r.exited, "round %d: the kill was lost", i);
        ck_assert_int_eq(r.sig, SIGKILL);
    }
    ccsb_session_destroy(s);
    ccsb_ctx_free(ctx);
}
END_TEST

/* A host's SIGCHLD handler that reaps every child it is told about. */
static void reap_everything(int sig)
{
    int e = errno;
    while (waitpid(-1, NULL, WNOHANG) > 0)
        ;
    errno = e;
}

/*
 * The exit status of a command must never be silently wrong. A host that
 * ignores SIGCHLD, or reaps any child from its own handler (as the Dart VM
 * does while it runs processes of its own), can take the status before the
 * library reads it; then the exit must come with an error event saying so.
 */
static void exit_status_survives_host_sigchld(void (*handler)(int))
{
    struct sigaction sa = {.sa_handler = handler}, old;
    sigemptyset(&sa.sa_mask);
    ck_assert_int_eq(sigaction(SIGCHLD, &sa, &old), 0);
    ccsb_ctx *ctx = NULL;
    ck_assert_int_eq(ccsb_ctx_new(&ctx, NULL, 0), 0);
    ccsb_session *s = launch_none(ctx, NULL);
    for (int i = 0; i < 5; i++) {
        const char *argv[] = {"sh", "-c", "sleep 0.05; exit 7"};
        uint64_t id = run(s, argv, 3, 0);
        struct result r = {0};
        wait_exit(ctx, id, &r, 5000);
        ck_assert(r.exited);
        if (r.code != 7) {
            ck_assert_msg(r.error_exec == id && strstr(r.error_msg, "SIGCHLD"),
                          "round %d: exit status %d without an error event (got '%s')", i,
                          r.code, r.error_msg);
            ck_assert_int_eq(r.code, 255);
        }
    }
    ccsb_session_destroy(s);
    ccsb_ctx_free(ctx);
    sigaction(SIGCHLD, &old, NULL);
}

START_TEST(fast_execs_with_sigchld_ignored)
{
    /* A command may be over, and reaped by the kernel, before the library
     * gets its pidfd: the exec still started, only its status is lost. */
    struct sigaction sa = {.sa_handler = SIG_IGN}, old;
    sigemptyset(&sa.sa_mask);
    ck_assert_int_eq(sigaction(SIGCHLD, &sa, &old), 0);
    ccsb_ctx *ctx = NULL;
    ck_assert_int_eq(ccsb_ctx_new(&ctx, NULL, 0), 0);
    ccsb_session *s = launch_none(ctx, NULL);
    for (int i = 0; i < 300; i++) {
        ccsb_exec_req *req = NULL;
        ccsb_exec_req_new(&req);
        const char *argv[] = {"/nonexistent/ccsb-test-command"};
        ccsb_exec_req_set_argv(req, argv, 1);
        uint64_t id = 0;
        int r = ccsb_exec(s, req, &id);
        ccsb_exec_req_free(req);
        ck_assert_msg(r == 0, "round %d: %s", i, ccsb_ctx_errmsg(ctx));
        struct result res = {0};
        wait_exit(ctx, id, &res, 5000);
        ck_assert(res.exited);
        ck_assert(res.code == 127 || (res.code == 255 && strstr(res.error_msg, "SIGCHLD")));
    }
    ccsb_session_destroy(s);
    ccsb_ctx_free(ctx);
    sigaction(SIGCHLD, &old, NULL);
}
END_TEST

START_TEST(exit_status_with_sigchld_ignored)
{
    /* SIG_IGN makes the kernel reap SIGCHLD children by itself. */
    exit_status_survives_host_sigchld(SIG_IGN);
}
END_TEST

START_TEST(exit_status_with_host_reaping_any_child)
{
    exit_status_survives_host_sigchld(reap_everything);
}
END_TEST

/*
 * A command that writes faster than the host drains must not grow the
 * host's memory without bound: the library stops reading its pipes (the
 * command blocks in write) until the host catches up. Nothing is lost and
 * the exit still comes after every byte.
 */
START_TEST(output_is_throttled_when_the_host_does_not_drain)
{
    ccsb_ctx *ctx = NULL;
    ck_assert_int_eq(ccsb_ctx_new(&ctx, NULL, 0), 0);
    ccsb_session *s = launch_none(ctx, NULL);
    const size_t total = 64u << 20;
    const char *argv[] = {"head", "-c", "67108864", "/dev/zero"};
    uint64_t id = run(s, argv, 4, 0);
    usleep(1500 * 1000); /* unthrottled, all 64 MiB are queued by now */
    size_t queued = 0, got = 0;
    int exited = 0, code = -1;
    ccsb_event *ev;
    while (ccsb_ctx_next_event(ctx, &ev) == 0) {
        size_t len = 0;
        if (ccsb_event_type(ev) == CCSB_EVENT_STDOUT && ccsb_event_exec_id(ev) == id)
            ccsb_event_data(ev, &len);
        queued += len;
        got += len;
        exited |= ccsb_event_type(ev) == CCSB_EVENT_EXIT;
        ccsb_event_free(ev);
    }
    ck_assert_msg(queued <= 24u << 20, "%zu bytes queued while the host was not draining",
                  queued);
    ck_assert(!exited);
    double deadline = now_s() + 30;
    while (!exited && now_s() < deadline) {
        if (ccsb_ctx_wait_event(ctx, 100, &ev) != 0)
            continue;
        size_t len = 0;
        if (ccsb_event_type(ev) == CCSB_EVENT_STDOUT && ccsb_event_exec_id(ev) == id)
            ccsb_event_data(ev, &len);
        got += len;
        if (ccsb_event_type(ev) == CCSB_EVENT_EXIT && ccsb_event_exec_id(ev) == id) {
            exited = 1;
            code = ccsb_event_exit_code(ev);
        }
        ccsb_event_free(ev);
    }
    ck_assert(exited);
    ck_assert_int_eq(code, 0);
    ck_assert_uint_eq(got, total);
    ccsb_session_destroy(s);
    ccsb_ctx_free(ctx);
}
END_TEST

/* A host that ends the session from its own event callback. */
struct end_in_cb {
    ccsb_session *s;
    uint64_t id;
    char tmpdir[512];
    atomic_int done;
    int stop_rc;
};

static void destroy_on_exit(const ccsb_event *ev, void *ud)
{
    struct end_in_cb *st = ud;
    if (ccsb_event_exec_id(ev) != st->id || atomic_load(&st->done))
        return;
    if (ccsb_event_type(ev) == CCSB_EVENT_STDOUT) {
        size_t len;
        const uint8_t *d = ccsb_event_data(ev, &len);
        snprintf(st->tmpdir, sizeof st->tmpdir, "%.*s", (int)len, (const char *)d);
        st->tmpdir[strcspn(st->tmpdir, "\n")] = 0;
    }
    if (ccsb_event_type(ev) == CCSB_EVENT_EXIT) {
        st->stop_rc = ccsb_session_stop(st->s);
        ccsb_session_destroy(st->s);
        atomic_store(&st->done, 1);
    }
}

START_TEST(session_ended_from_inside_a_callback)
{
    ccsb_ctx *ctx = NULL;
    ck_assert_int_eq(ccsb_ctx_new(&ctx, NULL, 0), 0);
    struct end_in_cb st = {0};
    atomic_init(&st.done, 0);
    ck_assert_int_eq(ccsb_ctx_set_event_callback(ctx, destroy_on_exit, &st, NULL), 0);
    st.s = launch_none(ctx, NULL);
    const char *argv[] = {"sh", "-c", "echo $TMPDIR; sleep 100 >/dev/null 2>&1 &"};
    ccsb_exec_req *req = NULL;
    ccsb_exec_req_new(&req);
    ccsb_exec_req_set_argv(req, argv, 3);
    /* The id is known before any event of the exec can be delivered: the
     * exec call runs on the loop thread, which delivers the events. */
    ck_assert_int_eq(ccsb_exec(st.s, req, &st.id), 0);
    ccsb_exec_req_free(req);
    double deadline = now_s() + 10;
    while (!atomic_load(&st.done) && now_s() < deadline)
        usleep(10000);
    ck_assert(atomic_load(&st.done));
    /* Stopping from inside the callback would free what the caller of the
     * callback still uses: refused. Destroying is deferred until the
     * callback has returned, and then complete. */
    ck_assert_int_eq(st.stop_rc, CCSB_E_REENTRANT);
    ck_assert(st.tmpdir[0] == '/');
    struct stat sb;
    for (int i = 0; i < 200 && stat(st.tmpdir, &sb) == 0; i++)
        usleep(10000);
    ck_assert_msg(stat(st.tmpdir, &sb) != 0, "%s is still there", st.tmpdir);
    ccsb_ctx_free(ctx);
}
END_TEST

START_TEST(session_destroyed_in_callback_then_context_freed)
{
    /* Caller-owned base: the host never runs the base again after the
     * callback, so the deferred destroy has to happen in ccsb_ctx_free. */
    struct event_base *base = event_base_new();
    ccsb_ctx *ctx = NULL;
    ck_assert_int_eq(ccsb_ctx_new_with_event_base(&ctx, base, NULL, 0), 0);
    struct end_in_cb st = {0};
    atomic_init(&st.done, 0);
    ck_assert_int_eq(ccsb_ctx_set_event_callback(ctx, destroy_on_exit, &st, NULL), 0);
    st.s = launch_none(ctx, NULL);
    const char *argv[] = {"sh", "-c", "echo $TMPDIR"};
    st.id = run(st.s, argv, 3, 0);
    double deadline = now_s() + 10;
    while (!atomic_load(&st.done) && now_s() < deadline)
        event_base_loop(base, EVLOOP_ONCE);
    ck_assert(atomic_load(&st.done));
    ccsb_ctx_free(ctx);
    struct stat sb;
    ck_assert_msg(stat(st.tmpdir, &sb) != 0, "%s is still there", st.tmpdir);
    event_base_free(base);
}
END_TEST

/*
 * Pid numbers wrap (pid_max is 32768 on many hosts). Once an exec's process
 * group is gone its number may belong to an unrelated process group, and
 * ending the session must not signal that one. ns_last_pid (root only)
 * makes the reuse happen now instead of after a wrap.
 */
static int set_last_pid(pid_t p)
{
    FILE *f = fopen("/proc/sys/kernel/ns_last_pid", "we");
    if (!f)
        return -1;
    int ok = fprintf(f, "%d", (int)p) > 0;
    return fclose(f) == 0 && ok ? 0 : -1;
}

static pid_t victim_with_pid(pid_t want)
{
    for (int attempt = 0; attempt < 200; attempt++) { /* others fork too */
        if (set_last_pid(want - 1) < 0)
            return -1;
        pid_t v = fork();
        if (v == 0) {
            setpgid(0, 0); /* a process group of its own, like any shell job */
            pause();
            _exit(0);
        }
        if (v == want)
            return v;
        kill(v, SIGKILL);
        waitpid(v, NULL, 0);
    }
    return -1;
}

static void reused_group_survives(int suspend)
{
    if (set_last_pid(getpid()) < 0) { /* writable for root only, whatever access() says */
        fprintf(stderr, "skipped: needs a writable /proc/sys/kernel/ns_last_pid (root)\n");
        return;
    }
    ccsb_ctx *ctx = NULL;
    ck_assert_int_eq(ccsb_ctx_new(&ctx, NULL, 0), 0);
    ccsb_session *s = launch_none(ctx, NULL);
    const char *argv[] = {"sh", "-c", "echo $$"};
    uint64_t id = run(s, argv, 3, 0);
    struct result r = {0};
    wait_exit(ctx, id, &r, 5000);
    ck_assert(r.exited);
    pid_t old_group = (pid_t)atoi(r.out);
    ck_assert_int_gt(old_group, 1);
    pid_t victim = victim_with_pid(old_group);
    if (victim < 0) {
        fprintf(stderr, "skipped: pid %d went to another process every time\n", (int)old_group);
        ccsb_session_destroy(s);
        ccsb_ctx_free(ctx);
        return;
    }
    for (int i = 0; i < 100 && getpgid(victim) != victim; i++)
        usleep(1000);
    if (suspend) {
        ck_assert_int_eq(ccsb_session_suspend(s), 0);
        usleep(100 * 1000);
        char path[64], st[512] = "";
        snprintf(path, sizeof path, "/proc/%d/stat", (int)victim);
        FILE *f = fopen(path, "re");
        ck_assert_ptr_nonnull(f);
        ck_assert_ptr_nonnull(fgets(st, sizeof st, f));
        fclose(f);
        ck_assert_msg(!strstr(st, ") T "), "suspend stopped an unrelated process group");
        ck_assert_int_eq(ccsb_session_resume(s), 0);
    }
    ck_assert_int_eq(ccsb_session_stop(s), 0);
    usleep(100 * 1000);
    int status = 0;
    pid_t w = waitpid(victim, &status, WNOHANG);
    kill(victim, SIGKILL);
    waitpid(victim, NULL, 0);
    ck_assert_msg(w == 0, "stop killed an unrelated process group (status %#x)", status);
    ccsb_session_destroy(s);
    ccsb_ctx_free(ctx);
}

START_TEST(stop_spares_a_reused_group_id)
{
    reused_group_survives(0);
}
END_TEST

START_TEST(suspend_spares_a_reused_group_id)
{
    reused_group_survives(1);
}
END_TEST

START_TEST(stop_removes_a_tmp_made_unwritable)
{
    /* Go's module cache and 'chmod -w' leave read-only directories; as an
     * unprivileged user they cannot be emptied without making them
     * writable first. (Root passes either way.) */
    ccsb_ctx *ctx = NULL;
    ck_assert_int_eq(ccsb_ctx_new(&ctx, NULL, 0), 0);
    ccsb_session *s = launch_none(ctx, NULL);
    const char *argv[] = {"sh", "-c",
                          "cd \"$TMPDIR\" && mkdir -p a/b c && touch a/b/f c/g && ln -s / a/up && "
                          "chmod 500 a/b && chmod 0 a && chmod 300 c && echo \"$TMPDIR\""};
    uint64_t id = run(s, argv, 3, 0);
    struct result r = {0};
    wait_exit(ctx, id, &r, 5000);
    ck_assert_msg(r.code == 0, "setup failed: %s", r.err);
    r.out[strcspn(r.out, "\n")] = 0;
    ck_assert(r.out[0] == '/');
    ck_assert_int_eq(ccsb_session_stop(s), 0);
    struct stat st;
    ck_assert_msg(lstat(r.out, &st) != 0, "%s was left behind", r.out);
    ck_assert_int_eq(stat("/", &st), 0); /* the symlink was not followed */
    ccsb_session_destroy(s);
    ccsb_ctx_free(ctx);
}
END_TEST

START_TEST(probe_with_sigchld_ignored)
{
    /* The probe's bubblewrap must not inherit the host's SIG_IGN for
     * SIGCHLD (bwrap then never learns that its child exited), and a
     * launch on the none backend does not need the probe at all. */
    struct sigaction sa = {.sa_handler = SIG_IGN}, old;
    sigemptyset(&sa.sa_mask);
    ck_assert_int_eq(sigaction(SIGCHLD, &sa, &old), 0);
    ccsb_ctx *ctx = NULL;
    ck_assert_int_eq(ccsb_ctx_new(&ctx, NULL, 0), 0);
    double t0 = now_s();
    ccsb_session *s = launch_none(ctx, NULL);
    ck_assert_msg(now_s() - t0 < 2.0, "a none launch took %.1f s", now_s() - t0);
    ccsb_session_destroy(s);
    t0 = now_s();
    const ccsb_probe_result *pr = NULL;
    ck_assert_int_eq(ccsb_probe(ctx, &pr), 0);
    ck_assert_msg(now_s() - t0 < 5.0, "the probe took %.1f s", now_s() - t0);
    ccsb_ctx *ref = NULL;
    sigaction(SIGCHLD, &old, NULL);
    ck_assert_int_eq(ccsb_ctx_new(&ref, NULL, 0), 0);
    const ccsb_probe_result *pr_ref = NULL;
    ck_assert_int_eq(ccsb_probe(ref, &pr_ref), 0);
    ck_assert_msg(ccsb_probe_available(pr) == ccsb_probe_available(pr_ref),
                  "with SIGCHLD ignored the probe says '%s' (otherwise '%s')",
                  ccsb_probe_note(pr), ccsb_probe_note(pr_ref));
    ccsb_ctx_free(ref);
    ccsb_ctx_free(ctx);
}
END_TEST

START_TEST(stdin_errors_say_what_happened)
{
    ccsb_ctx *ctx = NULL;
    ck_assert_int_eq(ccsb_ctx_new(&ctx, NULL, 0), 0);
    ccsb_session *s = launch_none(ctx, NULL);
    /* The command closes its stdin and keeps running. */
    ccsb_exec_req *req = NULL;
    ccsb_exec_req_new(&req);
    const char *argv[] = {"sh", "-c", "exec 0<&-; echo closed; sleep 5"};
    ccsb_exec_req_set_argv(req, argv, 3);
    ccsb_exec_req_set_stdin(req, CCSB_STDIN_PIPE);
    uint64_t id;
    ck_assert_int_eq(ccsb_exec(s, req, &id), 0);
    ccsb_exec_req_free(req);
    struct result r = {0};
    wait_output(ctx, id, &r, "closed", 5000);
    ck_assert_int_eq(ccsb_exec_write_stdin(s, id, "x", 1), CCSB_E_STATE);
    ck_assert_msg(strstr(ccsb_ctx_errmsg(ctx), "stdin"), "message: '%s'", ccsb_ctx_errmsg(ctx));
    ck_assert_int_eq(ccsb_exec_close_stdin(s, id), 0);
    ck_assert_int_eq(ccsb_exec_write_stdin(s, id, "x", 1), CCSB_E_STATE);
    ck_assert_msg(strstr(ccsb_ctx_errmsg(ctx), "closed"), "message: '%s'", ccsb_ctx_errmsg(ctx));
    ck_assert_int_eq(ccsb_exec_close_stdin(s, id), CCSB_E_STATE);
    ck_assert_msg(strstr(ccsb_ctx_errmsg(ctx), "stdin"), "message: '%s'", ccsb_ctx_errmsg(ctx));
    ck_assert_int_eq(ccsb_exec_resize_pty(s, id, 10, 10), CCSB_E_STATE);
    ck_assert_msg(strstr(ccsb_ctx_errmsg(ctx), "pty"), "message: '%s'", ccsb_ctx_errmsg(ctx));
    ccsb_session_destroy(s);
    ccsb_ctx_free(ctx);
}
END_TEST

/* Like a daemon: 0-2 closed (kept aside in saved[] for restore_stdio). */
static void close_stdio(int saved[3])
{
    for (int i = 0; i < 3; i++) {
        saved[i] = fcntl(i, F_DUPFD_CLOEXEC, 10);
        ck_assert_int_ge(saved[i], 0);
        close(i);
    }
}

static void restore_stdio(const int saved[3])
{
    for (int i = 0; i < 3; i++) {
        dup2(saved[i], i);
        close(saved[i]);
    }
}

START_TEST(host_with_stdio_closed)
{
    /* A daemon that closed 0-2: the library's own descriptors must not take
     * those numbers, where the host's next perror() or read(0) would hit
     * them. Everything still works. */
    int saved[3];
    close_stdio(saved);
    ccsb_ctx *ctx = NULL;
    int r = ccsb_ctx_new(&ctx, NULL, 0);
    ccsb_session *s = r == 0 ? launch_none(ctx, NULL) : NULL;
    ccsb_exec_req *req = NULL;
    ccsb_exec_req_new(&req);
    const char *argv[] = {"sh", "-c", "cat; ls /proc/self/fd | wc -l"};
    ccsb_exec_req_set_argv(req, argv, 3);
    ccsb_exec_req_set_stdin(req, CCSB_STDIN_PIPE);
    uint64_t id = 0;
    int er = s ? ccsb_exec(s, req, &id) : -1;
    ccsb_exec_req_free(req);
    int taken[3];
    for (int i = 0; i < 3; i++)
        taken[i] = fcntl(i, F_GETFD) >= 0;
    int w = er == 0 ? ccsb_exec_write_stdin(s, id, "hello\n", 6) : -1;
    int c = er == 0 ? ccsb_exec_close_stdin(s, id) : -1;
    struct result res = {0};
    if (er == 0)
        wait_exit(ctx, id, &res, 5000);
    ccsb_session_destroy(s);
    ccsb_ctx_free(ctx);
    restore_stdio(saved);
    ck_assert_int_eq(r, 0);
    ck_assert_int_eq(er, 0);
    ck_assert_msg(!taken[0] && !taken[1] && !taken[2], "library fds took 0-2: %d %d %d",
                  taken[0], taken[1], taken[2]);
    ck_assert_int_eq(w, 6);
    ck_assert_int_eq(c, 0);
    ck_assert(res.exited);
    ck_assert_int_eq(res.code, 0);
    ck_assert_msg(strncmp(res.out, "hello\n", 6) == 0, "got '%s'", res.out);
}
END_TEST

/* The egress proxies' sockets (accepted connections, the resolver's,
 * dialled ones) must not take 0-2 of a host that closed them either. */
START_TEST(proxy_sockets_avoid_closed_stdio)
{
    if (access("/usr/bin/python3", X_OK) != 0) {
        printf("SKIP proxy_sockets_avoid_closed_stdio: python3 missing\n");
        return;
    }
    int saved[3];
    close_stdio(saved);
    ccsb_ctx *ctx = NULL;
    int r = ccsb_ctx_new(&ctx, NULL, 0);
    ccsb_spec *spec = NULL;
    ccsb_spec_new(&spec);
    ccsb_spec_set_backend(spec, CCSB_BACKEND_NONE);
    ccsb_spec_add_egress_allow(spec, "resolves.invalid"); /* makes the resolver */
    ccsb_spec_add_egress_allow(spec, "127.0.0.1");
    ccsb_session *s = NULL;
    if (r == 0)
        r = ccsb_launch(ctx, spec, &s);
    ccsb_spec_free(spec);
    ccsb_exec_req *req = NULL;
    ccsb_exec_req_new(&req);
    /* One connection asks for a name (resolver sockets), then a tunnel to
     * a local listener stays open (an accepted and a dialled socket). */
    const char *argv[] = {
        "/usr/bin/python3", "-c",
        "import os, socket, sys\n"
        "port = int(os.environ['HTTP_PROXY'].rsplit(':', 1)[1])\n"
        "cred = os.environ['HTTP_PROXY'].split('//')[1].split('@')[0]\n"
        "import base64\n"
        "auth = base64.b64encode(cred.encode()).decode()\n"
        "a = socket.create_connection(('127.0.0.1', port))\n"
        "a.sendall(('CONNECT resolves.invalid:80 HTTP/1.1\\r\\nProxy-Authorization: Basic '"
        " + auth + '\\r\\n\\r\\n').encode())\n"
        "a.settimeout(20); a.recv(100)\n"
        "srv = socket.socket(); srv.bind(('127.0.0.1', 0)); srv.listen(1)\n"
        "b = socket.create_connection(('127.0.0.1', port))\n"
        "b.sendall(('CONNECT 127.0.0.1:%d HTTP/1.1\\r\\nProxy-Authorization: Basic %s'"
        " '\\r\\n\\r\\n' % (srv.getsockname()[1], auth)).encode())\n"
        "b.settimeout(20)\n"
        "if not b.recv(100).startswith(b'HTTP/1.1 200'): sys.exit(3)\n"
        "c, _ = srv.accept()\n"
        "print('held', flush=True)\n"
        "sys.stdin.read()\n"};
    ccsb_exec_req_set_argv(req, argv, 3);
    ccsb_exec_req_set_stdin(req, CCSB_STDIN_PIPE);
    uint64_t id = 0;
    int er = s ? ccsb_exec(s, req, &id) : -1;
    ccsb_exec_req_free(req);
    struct result res = {0};
    if (er == 0)
        wait_output(ctx, id, &res, "held", 30000);
    int taken[3];
    for (int i = 0; i < 3; i++)
        taken[i] = fcntl(i, F_GETFD) >= 0;
    if (er == 0) {
        ccsb_exec_close_stdin(s, id);
        wait_exit(ctx, id, &res, 10000);
    }
    ccsb_session_destroy(s);
    ccsb_ctx_free(ctx);
    restore_stdio(saved);
    ck_assert_int_eq(r, 0);
    ck_assert_int_eq(er, 0);
    ck_assert_msg(strstr(res.out, "held") != NULL, "out '%s' err '%s'", res.out, res.err);
    ck_assert_msg(!taken[0] && !taken[1] && !taken[2], "proxy fds took 0-2: %d %d %d",
                  taken[0], taken[1], taken[2]);
}
END_TEST

static Suite *none_suite(void)
{
    Suite *s = suite_create("none-backend");
    TCase *tc = tcase_create("api");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, exec_stdout_stderr_exit);
    tcase_add_test(tc, proxy_sockets_avoid_closed_stdio);
    tcase_add_test(tc, timeout_kills_whole_group);
    tcase_add_test(tc, stop_kills_background_and_removes_tmp);
    tcase_add_test(tc, stdin_pipe_and_many_execs);
    tcase_add_test(tc, pty_exec_answers_tty);
    tcase_add_test(tc, microvm_never_falls_back);
    tcase_add_test(tc, duplicate_session_id_refused);
    tcase_add_test(tc, invalid_spec_launches_nothing);
    tcase_add_test(tc, launch_exec_in_one_call);
    tcase_add_test(tc, end_session_stops_the_session);
    tcase_add_test(tc, session_destroyed_after_its_context);
    tcase_add_test(tc, no_exec_after_end_session);
    tcase_add_test(tc, caller_owned_event_base);
    tcase_add_test(tc, session_timeout_stops_session);
    tcase_add_test(tc, suspend_and_resume);
    tcase_add_test(tc, kill_reaches_main_that_left_its_group);
    tcase_add_test(tc, stop_does_not_wait_for_a_main_outside_its_group);
    tcase_add_test(tc, pty_kill_right_after_start);
    tcase_add_test(tc, exit_status_with_sigchld_ignored);
    tcase_add_test(tc, exit_status_with_host_reaping_any_child);
    tcase_add_test(tc, fast_execs_with_sigchld_ignored);
    tcase_add_test(tc, output_is_throttled_when_the_host_does_not_drain);
    tcase_add_test(tc, session_ended_from_inside_a_callback);
    tcase_add_test(tc, session_destroyed_in_callback_then_context_freed);
    tcase_add_test(tc, stop_spares_a_reused_group_id);
    tcase_add_test(tc, suspend_spares_a_reused_group_id);
    tcase_add_test(tc, stop_removes_a_tmp_made_unwritable);
    tcase_add_test(tc, probe_with_sigchld_ignored);
    tcase_add_test(tc, stdin_errors_say_what_happened);
    tcase_add_test(tc, host_with_stdio_closed);
    suite_add_tcase(s, tc);
    return s;
}

int main(int argc, char **argv)
{
    if (argc == 2 && strcmp(argv[1], "--leave-group") == 0)
        return helper_leave_group();
    ssize_t n = readlink("/proc/self/exe", self_exe, sizeof self_exe - 1);
    if (n <= 0)
        return 99;
    self_exe[n] = 0;
    SRunner *sr = srunner_create(none_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
