/*
 * A host with its own poll() loop: it uses only ccsb_ctx_get_fd and the pull
 * API (ccsb_ctx_next_event). Three commands run at once in one session; one
 * of them is fed through stdin. Output is printed per exec as it arrives.
 *
 * usage: poll-loop [--backend none|native]   (default: native when the
 *        probe offers it, else none)
 * Exit status 0 only when every command produced what it should.
 */
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <ccsandbox/ccsandbox.h>

#define N_EXECS 3
#define DEADLINE_S 20

struct job {
    const char *const *argv;
    size_t argc;
    const char *want; /* expected stdout */
    uint64_t id;
    char out[4096];
    size_t out_len;
    int exited, code;
};

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static int start(ccsb_session *s, struct job *j, int stdin_pipe)
{
    ccsb_exec_req *req = NULL;
    int r = ccsb_exec_req_new(&req);
    if (r == 0)
        r = ccsb_exec_req_set_argv(req, j->argv, j->argc);
    if (r == 0 && stdin_pipe)
        r = ccsb_exec_req_set_stdin(req, CCSB_STDIN_PIPE);
    if (r == 0)
        r = ccsb_exec_req_set_timeout_ms(req, 10000);
    if (r == 0)
        r = ccsb_exec(s, req, &j->id);
    ccsb_exec_req_free(req);
    return r;
}

/* Folds one event into its job; returns 1 when that job just exited. */
static int absorb(struct job *jobs, const ccsb_event *ev)
{
    for (int i = 0; i < N_EXECS; i++) {
        struct job *j = &jobs[i];
        if (ccsb_event_exec_id(ev) != j->id)
            continue;
        size_t len;
        const uint8_t *d = ccsb_event_data(ev, &len);
        switch (ccsb_event_type(ev)) {
        case CCSB_EVENT_STDOUT:
            if (j->out_len + len < sizeof j->out) {
                memcpy(j->out + j->out_len, d, len);
                j->out_len += len;
            }
            printf("[exec %llu] %.*s%s", (unsigned long long)j->id, (int)len, (const char *)d,
                   len && d[len - 1] == '\n' ? "" : "\n");
            break;
        case CCSB_EVENT_STDERR:
            fprintf(stderr, "[exec %llu] %.*s", (unsigned long long)j->id, (int)len, (const char *)d);
            break;
        case CCSB_EVENT_VIOLATION:
            printf("[exec %llu] violation: %s %s\n", (unsigned long long)j->id,
                   ccsb_event_violation_action(ev), ccsb_event_violation_target(ev));
            break;
        case CCSB_EVENT_EXIT:
            j->exited = 1;
            j->code = ccsb_event_exit_code(ev);
            printf("[exec %llu] %s\n", (unsigned long long)j->id, ccsb_event_message(ev));
            return 1;
        }
    }
    return 0;
}

int main(int argc, char **argv)
{
    int backend = -1;
    if (argc == 3 && strcmp(argv[1], "--backend") == 0)
        backend = ccsb_backend_from_name(argv[2]);
    else if (argc != 1)
        return fprintf(stderr, "usage: %s [--backend none|native]\n", argv[0]), 2;

    char err[256];
    ccsb_ctx *ctx = NULL;
    if (ccsb_ctx_new(&ctx, err, sizeof err) != 0)
        return fprintf(stderr, "ccsb_ctx_new: %s\n", err), 1;
    const ccsb_probe_result *pr = NULL;
    if (ccsb_probe(ctx, &pr) != 0)
        return fprintf(stderr, "probe: %s\n", ccsb_ctx_errmsg(ctx)), 1;
    if (backend < 0)
        backend = ccsb_probe_available(pr) ? CCSB_BACKEND_NATIVE : CCSB_BACKEND_NONE;

    ccsb_spec *spec = NULL;
    ccsb_session *s = NULL;
    int rc = 1;
    if (ccsb_spec_new(&spec) != 0 || ccsb_spec_set_backend(spec, backend) != 0)
        goto out;
    int r = ccsb_launch(ctx, spec, &s);
    if (r == CCSB_E_UNAVAILABLE && backend == CCSB_BACKEND_NATIVE) {
        printf("native backend unavailable (%s); using backend none\n", ccsb_ctx_errmsg(ctx));
        ccsb_spec_set_backend(spec, CCSB_BACKEND_NONE);
        r = ccsb_launch(ctx, spec, &s);
    }
    if (r != 0) {
        fprintf(stderr, "launch: %s (%s)\n", ccsb_ctx_errmsg(ctx), ccsb_strerror(r));
        goto out;
    }
    printf("session %s on backend %s\n", ccsb_session_id(s),
           ccsb_backend_name(ccsb_session_backend(s)));

    static const char *const a0[] = {"sh", "-c", "sleep 0.2; echo slow"};
    static const char *const a1[] = {"echo", "fast"};
    static const char *const a2[] = {"tr", "a-z", "A-Z"};
    struct job jobs[N_EXECS] = {
        {.argv = a0, .argc = 3, .want = "slow\n"},
        {.argv = a1, .argc = 2, .want = "fast\n"},
        {.argv = a2, .argc = 3, .want = "FED THROUGH STDIN"},
    };
    for (int i = 0; i < N_EXECS; i++) {
        if ((r = start(s, &jobs[i], i == 2)) != 0) {
            fprintf(stderr, "exec: %s\n", ccsb_ctx_errmsg(ctx));
            goto out;
        }
    }
    const char *feed = "fed through stdin";
    if (ccsb_exec_write_stdin(s, jobs[2].id, feed, strlen(feed)) != (int)strlen(feed) ||
        ccsb_exec_close_stdin(s, jobs[2].id) != 0) {
        fprintf(stderr, "stdin: %s\n", ccsb_ctx_errmsg(ctx));
        goto out;
    }

    int left = N_EXECS;
    double deadline = now_s() + DEADLINE_S;
    struct pollfd p = {.fd = ccsb_ctx_get_fd(ctx), .events = POLLIN};
    while (left > 0 && now_s() < deadline) {
        if (poll(&p, 1, 1000) < 0) {
            perror("poll");
            goto out;
        }
        ccsb_event *ev;
        while (ccsb_ctx_next_event(ctx, &ev) == 0) {
            left -= absorb(jobs, ev);
            ccsb_event_free(ev);
        }
    }
    rc = 0;
    for (int i = 0; i < N_EXECS; i++) {
        struct job *j = &jobs[i];
        j->out[j->out_len] = 0;
        if (!j->exited || j->code != 0 || strcmp(j->out, j->want) != 0) {
            fprintf(stderr, "exec %llu: exited=%d code=%d out=%s (want %s)\n",
                    (unsigned long long)j->id, j->exited, j->code, j->out, j->want);
            rc = 1;
        }
    }
out:
    ccsb_session_destroy(s);
    ccsb_spec_free(spec);
    ccsb_ctx_free(ctx);
    return rc;
}
