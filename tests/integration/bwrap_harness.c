/* The test host for bubblewrap sessions (see bwrap_harness.h). */
#include "bwrap_harness.h"

#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

double h_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

void h_init(struct h *h)
{
    memset(h, 0, sizeof *h);
    char err[256];
    ck_assert_msg(ccsb_ctx_new(&h->ctx, err, sizeof err) == 0, "ccsb_ctx_new: %s", err);
}

int h_launch(struct h *h, const ccsb_spec *spec)
{
    return ccsb_launch(h->ctx, spec, &h->s);
}

int h_launch_exec(struct h *h, const ccsb_spec *spec, const ccsb_exec_req *req, uint64_t *id)
{
    ck_assert_uint_lt(h->n, H_MAX_EXECS);
    int r = ccsb_launch_exec(h->ctx, spec, req, &h->s, id);
    if (r == 0) {
        struct h_exec *x = &h->execs[h->n++];
        memset(x, 0, sizeof *x);
        x->id = *id;
    }
    return r;
}

const char *h_errmsg(struct h *h)
{
    return ccsb_ctx_errmsg(h->ctx);
}

void h_done(struct h *h)
{
    ccsb_session_destroy(h->s);
    h->s = NULL;
    ccsb_ctx_free(h->ctx);
    h->ctx = NULL;
}

struct h_exec *h_exec(struct h *h, uint64_t id)
{
    for (size_t i = 0; i < h->n; i++)
        if (h->execs[i].id == id)
            return &h->execs[i];
    return NULL;
}

static void append(char *buf, size_t *len, size_t cap, const uint8_t *d, size_t n)
{
    if (*len + n >= cap)
        n = cap - 1 - *len;
    memcpy(buf + *len, d, n);
    *len += n;
    buf[*len] = '\0';
}

static void absorb(struct h *h, ccsb_event *ev)
{
    int t = ccsb_event_type(ev);
    if (t == CCSB_EVENT_STATE && h->nstates < 64)
        h->states[h->nstates++] = ccsb_event_state(ev);
    if (t == CCSB_EVENT_VIOLATION && h->nviol < H_MAX_VIOL) {
        struct h_violation *v = &h->viol[h->nviol++];
        v->exec_id = ccsb_event_exec_id(ev);
        snprintf(v->action, sizeof v->action, "%s", ccsb_event_violation_action(ev));
        snprintf(v->target, sizeof v->target, "%s", ccsb_event_violation_target(ev));
    }
    struct h_exec *x = h_exec(h, ccsb_event_exec_id(ev));
    if (!x)
        return;
    size_t n;
    const uint8_t *d;
    switch (t) {
    case CCSB_EVENT_STDOUT:
        d = ccsb_event_data(ev, &n);
        append(x->out, &x->out_len, sizeof x->out, d, n);
        break;
    case CCSB_EVENT_STDERR:
        d = ccsb_event_data(ev, &n);
        append(x->err, &x->err_len, sizeof x->err, d, n);
        break;
    case CCSB_EVENT_KILLED:
        x->kill_reason = ccsb_event_kill_reason(ev);
        break;
    case CCSB_EVENT_EXIT:
        x->exited = 1;
        x->code = ccsb_event_exit_code(ev);
        x->sig = ccsb_event_signal(ev);
        break;
    default:
        break;
    }
}

void h_pump(struct h *h, int ms)
{
    double end = h_now() + ms / 1000.0;
    for (;;) {
        int left = (int)((end - h_now()) * 1000);
        if (left <= 0)
            left = 0;
        ccsb_event *ev = NULL;
        if (ccsb_ctx_wait_event(h->ctx, left, &ev) == 0) {
            absorb(h, ev);
            ccsb_event_free(ev);
            continue;
        }
        if (left == 0)
            return;
    }
}

int h_wait(struct h *h, uint64_t id, int max_ms)
{
    double end = h_now() + max_ms / 1000.0;
    for (;;) {
        struct h_exec *x = h_exec(h, id);
        if (x && x->exited)
            return 0;
        int left = (int)((end - h_now()) * 1000);
        if (left <= 0)
            return -1;
        ccsb_event *ev = NULL;
        if (ccsb_ctx_wait_event(h->ctx, left, &ev) == 0) {
            absorb(h, ev);
            ccsb_event_free(ev);
        }
    }
}

uint64_t h_start_req(struct h *h, const ccsb_exec_req *req)
{
    ck_assert_uint_lt(h->n, H_MAX_EXECS);
    uint64_t id = 0;
    int r = ccsb_exec(h->s, req, &id);
    ck_assert_msg(r == 0, "ccsb_exec: %s (%s)", ccsb_strerror(r), ccsb_ctx_errmsg(h->ctx));
    struct h_exec *x = &h->execs[h->n++];
    memset(x, 0, sizeof *x);
    x->id = id;
    return id;
}

uint64_t h_start(struct h *h, const char *cmd, int pty_rows, int pty_cols)
{
    ccsb_exec_req *req;
    ck_assert_int_eq(ccsb_exec_req_new(&req), 0);
    const char *argv[] = {"sh", "-c", cmd};
    ck_assert_int_eq(ccsb_exec_req_set_argv(req, argv, 3), 0);
    if (pty_rows > 0)
        ck_assert_int_eq(ccsb_exec_req_set_pty(req, (uint16_t)pty_rows, (uint16_t)pty_cols), 0);
    uint64_t id = h_start_req(h, req);
    ccsb_exec_req_free(req);
    return id;
}

struct h_exec *h_run(struct h *h, const char *cmd)
{
    uint64_t id = h_start(h, cmd, 0, 0);
    ck_assert_msg(h_wait(h, id, 30000) == 0, "'%s' did not finish", cmd);
    return h_exec(h, id);
}

int h_saw_violation(struct h *h, const char *action, const char *target_part)
{
    h_pump(h, 0);
    for (size_t i = 0; i < h->nviol; i++)
        if (strcmp(h->viol[i].action, action) == 0 &&
            (!target_part || strstr(h->viol[i].target, target_part)))
            return 1;
    return 0;
}

/* Set by h_tmp_begin in the test runner; forked tests inherit it. */
static char *tmp_base;

void h_tmp_begin(void)
{
    tmp_base = strdup("/tmp/ccsb-tests-XXXXXX");
    if (tmp_base && (!mkdtemp(tmp_base) || chmod(tmp_base, 0755) < 0)) {
        free(tmp_base);
        tmp_base = NULL; /* h_tmpdir falls back to /tmp itself */
    }
}

void h_tmp_end(void)
{
    h_rmtree(tmp_base);
    free(tmp_base);
    tmp_base = NULL;
}

char *h_tmpdir(const char *tag)
{
    char *t = NULL;
    ck_assert_int_ge(asprintf(&t, "%s/ccsb-%s-XXXXXX", tmp_base ? tmp_base : "/tmp", tag), 0);
    ck_assert_ptr_nonnull(mkdtemp(t));
    ck_assert_int_eq(chmod(t, 0755), 0);
    return t;
}

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    if (flag == FTW_DP || flag == FTW_D || flag == FTW_DNR)
        rmdir(path);
    else
        unlink(path);
    return 0;
}

void h_rmtree(const char *dir)
{
    if (dir)
        nftw(dir, rm_one, 32, FTW_DEPTH | FTW_PHYS | FTW_MOUNT);
}

void h_write(const char *path, const char *content)
{
    FILE *f = fopen(path, "we");
    ck_assert_msg(f != NULL, "fopen %s: %s", path, strerror(errno));
    fputs(content, f);
    ck_assert_int_eq(fclose(f), 0);
}

char *h_read(const char *path)
{
    FILE *f = fopen(path, "re");
    if (!f)
        return NULL;
    char *buf = calloc(1, 65537);
    size_t n = fread(buf, 1, 65536, f);
    buf[n] = '\0';
    fclose(f);
    return buf;
}

int h_exists(const char *path)
{
    struct stat st;
    return lstat(path, &st) == 0;
}

static FILE *snap_out;
static size_t snap_root_len;

static int snap_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    unsigned long hash = 5381;
    if (S_ISREG(st->st_mode)) {
        FILE *f = fopen(path, "re");
        if (f) {
            int c;
            while ((c = fgetc(f)) != EOF)
                hash = hash * 33 + (unsigned char)c;
            fclose(f);
        }
    } else if (S_ISLNK(st->st_mode)) {
        char t[4096];
        ssize_t n = readlink(path, t, sizeof t - 1);
        if (n > 0)
            for (ssize_t i = 0; i < n; i++)
                hash = hash * 33 + (unsigned char)t[i];
    }
    fprintf(snap_out, "%s %o %lld %lu\n", path + snap_root_len, (unsigned)st->st_mode,
            S_ISDIR(st->st_mode) ? 0LL : (long long)st->st_size, hash);
    return 0;
}

char *h_snapshot(const char *dir)
{
    char *buf = NULL;
    size_t len = 0;
    snap_out = open_memstream(&buf, &len);
    snap_root_len = strlen(dir);
    nftw(dir, snap_one, 32, FTW_PHYS);
    fclose(snap_out);
    return buf;
}

void h_assert_unchanged(const char *dir, const char *before)
{
    char *now = h_snapshot(dir);
    ck_assert_msg(strcmp(now, before) == 0, "%s changed on the host:\nbefore:\n%s\nafter:\n%s",
                  dir, before, now);
    free(now);
}

int h_find_procs(const char *needle, pid_t *out, int max)
{
    DIR *d = opendir("/proc");
    if (!d)
        return -1;
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] < '0' || e->d_name[0] > '9')
            continue;
        char path[300], buf[4096];
        snprintf(path, sizeof path, "/proc/%s/cmdline", e->d_name);
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
            continue;
        ssize_t r = read(fd, buf, sizeof buf - 1);
        close(fd);
        if (r <= 0)
            continue;
        for (ssize_t i = 0; i < r; i++)
            if (buf[i] == '\0')
                buf[i] = ' ';
        buf[r] = '\0';
        if (strstr(buf, needle)) {
            if (n < max)
                out[n] = atoi(e->d_name);
            n++;
        }
    }
    closedir(d);
    return n;
}

int h_count_procs(const char *needle)
{
    return h_find_procs(needle, NULL, 0);
}

int h_wait_no_procs(const char *needle, int max_ms)
{
    double end = h_now() + max_ms / 1000.0;
    int n;
    while ((n = h_count_procs(needle)) > 0 && h_now() < end)
        usleep(20000);
    return n;
}

pid_t h_proc_stat(pid_t pid, char *state, char *comm, size_t cap)
{
    char path[64], buf[512];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    FILE *f = fopen(path, "re");
    if (!f)
        return -1;
    size_t len = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[len] = '\0';
    /* the name may hold spaces and parentheses: it ends at the last ')' */
    char *open = strchr(buf, '('), *close = strrchr(buf, ')');
    char st;
    int ppid;
    if (!open || !close || close < open || sscanf(close + 1, " %c %d", &st, &ppid) != 2)
        return -1;
    if (state)
        *state = st;
    if (comm)
        snprintf(comm, cap, "%.*s", (int)(close - open - 1), open + 1);
    return ppid;
}

int h_children_named(const char *comm, int zombies, pid_t *out, int max)
{
    DIR *d = opendir("/proc");
    ck_assert_ptr_nonnull(d);
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        pid_t pid = atoi(e->d_name);
        char state, name[32];
        if (pid <= 0 || h_proc_stat(pid, &state, name, sizeof name) != getpid() ||
            strcmp(name, comm) != 0 || (state == 'Z' && !zombies))
            continue;
        if (n < max)
            out[n] = pid;
        n++;
    }
    closedir(d);
    return n;
}

TCase *h_tcase(const char *name, int timeout, void (*setup)(void), void (*teardown)(void))
{
    TCase *tc = tcase_create(name);
    tcase_set_timeout(tc, timeout);
    tcase_add_unchecked_fixture(tc, h_tmp_begin, h_tmp_end);
    tcase_add_checked_fixture(tc, setup, teardown);
    return tc;
}

int h_run_suite(Suite *s)
{
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}

char *h_join(const char *a, const char *b)
{
    char *p = NULL;
    ck_assert_int_ge(asprintf(&p, "%s/%s", a, b), 0);
    return p;
}

void h_host_saves(const char *path, const char *text)
{
    char *tmp = NULL;
    ck_assert_int_ge(asprintf(&tmp, "%s.lock", path), 0);
    h_write(tmp, text);
    ck_assert_int_eq(rename(tmp, path), 0);
    free(tmp);
}
