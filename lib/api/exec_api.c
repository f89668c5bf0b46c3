/* The exec request builder and the exported exec calls. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend.h"
#include "ccsandbox/ccsandbox.h"
#include "core/ctx.h"
#include "core/exec.h"
#include "core/exec_req.h"
#include "core/session.h"
#include "spec/spec.h"

CCSB_API int ccsb_exec_req_new(ccsb_exec_req **out)
{
    if (!out)
        return CCSB_E_INVAL;
    *out = calloc(1, sizeof **out);
    return *out ? 0 : CCSB_E_NOMEM;
}

CCSB_API void ccsb_exec_req_free(ccsb_exec_req *req)
{
    if (!req)
        return;
    strv_clear(&req->argv);
    strv_clear(&req->env_names);
    strv_clear(&req->env_values);
    free(req->cwd);
    free(req);
}

CCSB_API int ccsb_exec_req_set_argv(ccsb_exec_req *req, const char *const *argv, size_t argc)
{
    if (!req || !argv || argc == 0)
        return CCSB_E_INVAL;
    for (size_t i = 0; i < argc; i++)
        if (!argv[i])
            return CCSB_E_INVAL;
    struct strv nv = STRV_INIT;
    for (size_t i = 0; i < argc; i++) {
        if (strv_push(&nv, argv[i]) < 0) {
            strv_clear(&nv);
            return CCSB_E_NOMEM;
        }
    }
    strv_clear(&req->argv);
    req->argv = nv;
    return 0;
}

CCSB_API int ccsb_exec_req_set_env(ccsb_exec_req *req, const char *name, const char *value)
{
    if (!req || !spec_env_name_ok(name) || !value)
        return CCSB_E_INVAL;
    for (size_t i = 0; i < req->env_names.n; i++) {
        if (strcmp(req->env_names.v[i], name) == 0) {
            char *v = strdup(value);
            if (!v)
                return CCSB_E_NOMEM;
            free(req->env_values.v[i]);
            req->env_values.v[i] = v;
            return 0;
        }
    }
    if (strv_push(&req->env_names, name) < 0)
        return CCSB_E_NOMEM;
    if (strv_push(&req->env_values, value) < 0) {
        free(req->env_names.v[--req->env_names.n]);
        req->env_names.v[req->env_names.n] = NULL;
        return CCSB_E_NOMEM;
    }
    return 0;
}

CCSB_API int ccsb_exec_req_set_cwd(ccsb_exec_req *req, const char *path)
{
    if (!req || !path || path[0] != '/')
        return CCSB_E_INVAL;
    char *c = strdup(path);
    if (!c)
        return CCSB_E_NOMEM;
    free(req->cwd);
    req->cwd = c;
    return 0;
}

CCSB_API int ccsb_exec_req_set_stdin(ccsb_exec_req *req, int mode)
{
    if (!req || (mode != CCSB_STDIN_CLOSED && mode != CCSB_STDIN_PIPE))
        return CCSB_E_INVAL;
    req->stdin_mode = mode;
    return 0;
}

CCSB_API int ccsb_exec_req_set_timeout_ms(ccsb_exec_req *req, uint64_t ms)
{
    if (!req)
        return CCSB_E_INVAL;
    req->timeout_ms = ms;
    return 0;
}

CCSB_API int ccsb_exec_req_set_pty(ccsb_exec_req *req, uint16_t rows, uint16_t cols)
{
    if (!req || rows == 0 || cols == 0)
        return CCSB_E_INVAL;
    req->pty = 1;
    req->rows = rows;
    req->cols = cols;
    return 0;
}

CCSB_API int ccsb_exec_req_set_end_session(ccsb_exec_req *req, int on)
{
    if (!req)
        return CCSB_E_INVAL;
    req->end_session = on != 0;
    return 0;
}

struct exec_args {
    struct ccsb_session *s;
    const struct ccsb_exec_req *req;
    uint64_t *out;
};

static int exec_on_loop(void *arg)
{
    struct exec_args *a = arg;
    char err[512] = "";
    int r = exec_start(a->s, a->req, a->out, err, sizeof err);
    return r < 0 ? ctx_err(a->s->ctx, r, "%s", err) : 0;
}

CCSB_API int ccsb_exec(ccsb_session *s, const ccsb_exec_req *req, uint64_t *out_exec_id)
{
    if (!s || !req || !out_exec_id)
        return CCSB_E_INVAL;
    *out_exec_id = 0;
    struct exec_args a = {s, req, out_exec_id};
    return ctx_call(s->ctx, exec_on_loop, &a);
}

struct io_args {
    struct ccsb_session *s;
    uint64_t id;
    const void *buf;
    size_t len;
    uint16_t rows, cols;
    int op;
};

enum { OP_WRITE, OP_CLOSE, OP_KILL, OP_RESIZE };

static int io_on_loop(void *arg)
{
    struct io_args *a = arg;
    struct ccsb_ctx *ctx = a->s->ctx;
    unsigned long long id = (unsigned long long)a->id;
    struct exec *x = session_find_exec(a->s, a->id);
    if (!x)
        return ctx_err(ctx, CCSB_E_NOTFOUND, "no exec %llu in session %s", id, a->s->id);
    int r;
    switch (a->op) {
    case OP_WRITE:
        r = exec_write_stdin(x, a->buf, a->len);
        if (r == CCSB_E_STATE)
            return ctx_err(ctx, r, "exec %llu: stdin is closed (not a pipe, closed already, "
                                   "or closed by the command)", id);
        if (r == CCSB_E_AGAIN)
            return ctx_err(ctx, r, "exec %llu: the stdin pipe is full", id);
        if (r < 0)
            return ctx_err(ctx, r, "exec %llu: writing stdin: %s", id, strerror(errno));
        return r;
    case OP_CLOSE:
        r = exec_close_stdin(x);
        if (r == CCSB_E_STATE)
            return ctx_err(ctx, r, "exec %llu: stdin is not open", id);
        if (r < 0)
            return ctx_err(ctx, r, "exec %llu: closing stdin: %s", id, strerror(errno));
        return 0;
    case OP_KILL:
        if (!x->running)
            return ctx_err(ctx, CCSB_E_STATE, "exec %llu already ended", id);
        if (!x->kill_reason)
            x->kill_reason = CCSB_KILL_MANUAL;
        r = a->s->ops->kill_exec(a->s, x, SIGKILL);
        return r < 0 ? ctx_err(ctx, r, "exec %llu: kill: %s", id, strerror(errno)) : 0;
    case OP_RESIZE:
        if (!x->pty)
            return ctx_err(ctx, CCSB_E_STATE, "exec %llu has no pty", id);
        r = a->s->ops->resize_pty(a->s, x, a->rows, a->cols);
        return r < 0 ? ctx_err(ctx, r, "exec %llu: resizing the pty: %s", id, strerror(errno))
                     : 0;
    }
    return CCSB_E_INTERNAL;
}

CCSB_API int ccsb_exec_write_stdin(ccsb_session *s, uint64_t exec_id, const void *buf,
                                   size_t len)
{
    if (!s || (!buf && len))
        return CCSB_E_INVAL;
    struct io_args a = {.s = s, .id = exec_id, .buf = buf, .len = len, .op = OP_WRITE};
    return ctx_call(s->ctx, io_on_loop, &a);
}

CCSB_API int ccsb_exec_close_stdin(ccsb_session *s, uint64_t exec_id)
{
    if (!s)
        return CCSB_E_INVAL;
    struct io_args a = {.s = s, .id = exec_id, .op = OP_CLOSE};
    return ctx_call(s->ctx, io_on_loop, &a);
}

CCSB_API int ccsb_exec_kill(ccsb_session *s, uint64_t exec_id)
{
    if (!s)
        return CCSB_E_INVAL;
    struct io_args a = {.s = s, .id = exec_id, .op = OP_KILL};
    return ctx_call(s->ctx, io_on_loop, &a);
}

CCSB_API int ccsb_exec_resize_pty(ccsb_session *s, uint64_t exec_id, uint16_t rows,
                                  uint16_t cols)
{
    if (!s || !rows || !cols)
        return CCSB_E_INVAL;
    struct io_args a = {.s = s, .id = exec_id, .rows = rows, .cols = cols, .op = OP_RESIZE};
    return ctx_call(s->ctx, io_on_loop, &a);
}
