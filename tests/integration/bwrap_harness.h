/*
 * A small host for the bubblewrap tests (integration, escape, bench): it
 * drives real sessions through the public API only and collects each
 * exec's events by id, so concurrent execs never steal each other's
 * events. Also: temporary trees on the host and snapshots of them, to
 * prove an attempt changed nothing.
 */
#ifndef CCSB_TESTS_BWRAP_HARNESS_H
#define CCSB_TESTS_BWRAP_HARNESS_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <ccsandbox/ccsandbox.h>

#define H_MAX_EXECS 64
#define H_MAX_VIOL 32

struct h_exec {
    uint64_t id;
    char out[65536];
    size_t out_len;
    char err[65536];
    size_t err_len;
    int exited, code, sig, kill_reason;
};

struct h_violation {
    uint64_t exec_id;
    char action[64];
    char target[512];
};

struct h {
    ccsb_ctx *ctx;
    ccsb_session *s;
    struct h_exec execs[H_MAX_EXECS];
    size_t n;
    struct h_violation viol[H_MAX_VIOL];
    size_t nviol;
    int states[64];
    size_t nstates;
};

/* A context; aborts the test on failure. */
void h_init(struct h *h);
/* Launches; returns the ccsb_launch code (0 on success, errmsg in h_errmsg). */
int h_launch(struct h *h, const ccsb_spec *spec);
const char *h_errmsg(struct h *h);
/* ccsb_launch_exec: returns its code; on success *id is the command's exec,
 * already registered for h_wait/h_exec. */
int h_launch_exec(struct h *h, const ccsb_spec *spec, const ccsb_exec_req *req, uint64_t *id);
/* Frees session and context. */
void h_done(struct h *h);

/* Starts `sh -c cmd` (pty: rows x cols when rows > 0). Returns the exec id. */
uint64_t h_start(struct h *h, const char *cmd, int pty_rows, int pty_cols);
uint64_t h_start_req(struct h *h, const ccsb_exec_req *req);
/* Pumps events for up to max_ms; returns 0 when the exec exited, else -1. */
int h_wait(struct h *h, uint64_t id, int max_ms);
/* Pumps events for ms milliseconds. */
void h_pump(struct h *h, int ms);
struct h_exec *h_exec(struct h *h, uint64_t id);
/* Runs `sh -c cmd` to its end (30 s max); returns its record. */
struct h_exec *h_run(struct h *h, const char *cmd);
/* 1 when a violation with this action (and target substring, may be NULL) was seen. */
int h_saw_violation(struct h *h, const char *action, const char *target_part);

/* mkdtemp under /tmp, mode 0755 (readable by the sandbox user). malloc'd. */
char *h_tmpdir(const char *tag);
/*
 * An unchecked fixture (tcase_add_unchecked_fixture(tc, h_tmp_begin,
 * h_tmp_end)): the runner makes one directory that every h_tmpdir of the
 * case goes below, and removes it at the end of the case, also after a
 * failed test (whose checked teardown never ran).
 */
void h_tmp_begin(void);
void h_tmp_end(void);

/* The check runner's side, for every harness test program: a test case
 * with the harness's fixtures (one temporary tree per run, setup and
 * teardown around each test) and the given timeout in seconds; and the
 * run of a whole suite, as main's exit status. */
struct TCase;
struct Suite;
struct TCase *h_tcase(const char *name, int timeout, void (*setup)(void), void (*teardown)(void));
int h_run_suite(struct Suite *s);
/* rm -rf without following symlinks. */
void h_rmtree(const char *dir);
/* Writes a file (mode 0644). */
void h_write(const char *path, const char *content);
/* Reads a whole small file into a malloc'd string, NULL when missing. */
char *h_read(const char *path);
/* "a/b", malloc'd (fails the test when out of memory). */
char *h_join(const char *a, const char *b);
/* The host saves path the way git, editors and credential helpers do: a
 * new file (path.lock) renamed over the old one. */
void h_host_saves(const char *path, const char *text);
int h_exists(const char *path);

/* A listing of every entry under dir: path, type, mode, size, content hash. */
char *h_snapshot(const char *dir);
/* Fails the test, showing both listings, unless dir's snapshot is before. */
void h_assert_unchanged(const char *dir, const char *before);

/* Seconds of monotonic time. */
double h_now(void);
/* Number of host processes whose command line contains needle (-1: no
 * /proc); the first max of their pids into out. */
int h_find_procs(const char *needle, pid_t *out, int max);
/* Number of host processes whose command line contains needle. */
int h_count_procs(const char *needle);
/* Waits until no host process matches needle, up to max_ms; returns the count left. */
int h_wait_no_procs(const char *needle, int max_ms);
/* From /proc/<pid>/stat: its parent's pid, or -1 when it is gone; its state
 * letter into *state and its name into comm (either may be NULL). */
pid_t h_proc_stat(pid_t pid, char *state, char *comm, size_t cap);
/* This process's children named comm, zombies too when `zombies`: how
 * many; the first max of their pids into out. */
int h_children_named(const char *comm, int zombies, pid_t *out, int max);

#endif
