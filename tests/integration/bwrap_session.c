/*
 * Integration: warm bubblewrap sessions through the public API, for real
 * (real bwrap, real namespaces). The functional half of issue 3; the
 * attacks live in tests/escape.
 */
#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bwrap_harness.h"

static struct h h;
static char *ws;
static ccsb_spec *spec;

static void setup(void)
{
    h_init(&h);
    ws = h_tmpdir("it");
    ck_assert_int_eq(ccsb_spec_new(&spec), 0);
    ccsb_spec_set_backend(spec, CCSB_BACKEND_NATIVE);
    ccsb_spec_add_bind_mount(spec, ws, NULL, 0);
    ccsb_spec_set_guest_workdir(spec, ws);
}

static void teardown(void)
{
    h_done(&h);
    ccsb_spec_free(spec);
    h_rmtree(ws);
    free(ws);
}

static void launch(void)
{
    int r = h_launch(&h, spec);
    ck_assert_msg(r == 0, "launch: %s: %s", ccsb_strerror(r), h_errmsg(&h));
}

static char *path_in(const char *dir, const char *name)
{
    char *p = NULL;
    ck_assert_int_ge(asprintf(&p, "%s/%s", dir, name), 0);
    return p;
}

START_TEST(write_in_bound_dir)
{
    launch();
    ck_assert_int_eq(ccsb_session_backend(h.s), CCSB_BACKEND_NATIVE);
    struct h_exec *x = h_run(&h, "echo ok > f && cat f");
    ck_assert_int_eq(x->code, 0);
    ck_assert_str_eq(x->out, "ok\n");
    char *f = path_in(ws, "f");
    char *c = h_read(f);
    ck_assert_str_eq(c, "ok\n");
    free(c);
    free(f);
}
END_TEST

START_TEST(etc_is_read_only)
{
    launch();
    struct h_exec *x = h_run(&h, "echo x > /etc/ccsb-it-x");
    ck_assert_int_ne(x->code, 0);
    ck_assert_int_eq(h_exists("/etc/ccsb-it-x"), 0);
    ck_assert(h_saw_violation(&h, "file-write", "/etc/ccsb-it-x"));
    /* the stream itself is delivered unchanged */
    ck_assert_ptr_nonnull(strstr(x->err, "/etc/ccsb-it-x"));
}
END_TEST

START_TEST(review_mode_is_read_only)
{
    ccsb_spec_set_mode(spec, CCSB_MODE_REVIEW);
    launch();
    struct h_exec *x = h_run(&h, "touch f");
    ck_assert_int_ne(x->code, 0);
    char *f = path_in(ws, "f");
    ck_assert_int_eq(h_exists(f), 0);
    free(f);
    x = h_run(&h, "ls /tmp >/dev/null && echo fine > /tmp/scratch && cat /tmp/scratch");
    ck_assert_str_eq(x->out, "fine\n"); /* the session's own /tmp stays writable */
}
END_TEST

START_TEST(pty_answers_tty)
{
    launch();
    uint64_t id = h_start(&h, "tty; stty size", 30, 100);
    ck_assert_int_eq(h_wait(&h, id, 10000), 0);
    h_pump(&h, 50);
    struct h_exec *x = h_exec(&h, id);
    ck_assert_int_eq(x->code, 0);
    ck_assert_msg(strstr(x->out, "/dev/pts/") != NULL, "tty said: %s", x->out);
    ck_assert_msg(strstr(x->out, "30 100") != NULL, "stty said: %s", x->out);

    /* resize reaches the terminal */
    id = h_start(&h, "read line; stty size", 10, 20);
    ck_assert_int_eq(ccsb_exec_resize_pty(h.s, id, 40, 120), 0);
    ck_assert_int_eq(ccsb_exec_write_stdin(h.s, id, "go\n", 3), 3);
    ck_assert_int_eq(h_wait(&h, id, 10000), 0);
    h_pump(&h, 50);
    ck_assert_msg(strstr(h_exec(&h, id)->out, "40 120") != NULL, "%s", h_exec(&h, id)->out);
}
END_TEST

START_TEST(stdin_pipe)
{
    launch();
    ccsb_exec_req *req;
    ccsb_exec_req_new(&req);
    const char *argv[] = {"cat"};
    ccsb_exec_req_set_argv(req, argv, 1);
    ccsb_exec_req_set_stdin(req, CCSB_STDIN_PIPE);
    uint64_t id = h_start_req(&h, req);
    ccsb_exec_req_free(req);
    ck_assert_int_eq(ccsb_exec_write_stdin(h.s, id, "hello\n", 6), 6);
    ck_assert_int_eq(ccsb_exec_close_stdin(h.s, id), 0);
    ck_assert_int_eq(h_wait(&h, id, 10000), 0);
    ck_assert_str_eq(h_exec(&h, id)->out, "hello\n");
}
END_TEST

START_TEST(suspend_resume)
{
    launch();
    uint64_t id = h_start(&h, "i=0; while [ $i -lt 300 ]; do echo $i; i=$((i+1)); sleep 0.01; done", 0, 0);
    h_pump(&h, 200);
    struct h_exec *x = h_exec(&h, id);
    ck_assert_uint_gt(x->out_len, 0);
    ck_assert_int_eq(ccsb_session_suspend(h.s), 0);
    ck_assert_int_eq(ccsb_session_state(h.s), CCSB_STATE_SUSPENDED);
    h_pump(&h, 100); /* what was already in flight */
    size_t before = x->out_len;
    h_pump(&h, 400);
    ck_assert_msg(x->out_len == before, "output kept coming while suspended");
    ck_assert(!x->exited);
    ck_assert_int_eq(ccsb_session_resume(h.s), 0);
    h_pump(&h, 200);
    ck_assert_uint_gt(x->out_len, before);
    ck_assert_int_eq(h_wait(&h, id, 20000), 0);
    ck_assert_int_eq(x->code, 0);
}
END_TEST

START_TEST(twenty_concurrent)
{
    launch();
    uint64_t ids[20];
    char cmd[64];
    for (int i = 0; i < 20; i++) {
        snprintf(cmd, sizeof cmd, "sleep 0.3; echo n%d", i);
        ids[i] = h_start(&h, cmd, 0, 0);
    }
    for (int i = 0; i < 20; i++) {
        ck_assert_int_eq(h_wait(&h, ids[i], 20000), 0);
        struct h_exec *x = h_exec(&h, ids[i]);
        snprintf(cmd, sizeof cmd, "n%d\n", i);
        ck_assert_int_eq(x->code, 0);
        ck_assert_str_eq(x->out, cmd);
    }
}
END_TEST

START_TEST(compiler_and_git)
{
    launch();
    struct h_exec *x = h_run(&h, "printf 'int main(void){return 42;}\\n' > t.c && cc t.c -o t && ./t; "
                                 "echo rc=$?");
    ck_assert_msg(strstr(x->out, "rc=42") != NULL, "out: %s err: %s", x->out, x->err);

    /* git init at the root of the bind is refused (.git is protected) ... */
    x = h_run(&h, "git init -q . 2>&1; test -f .git/HEAD");
    ck_assert_int_ne(x->code, 0);
    /* ... in a subdirectory it works, and so do add and commit */
    x = h_run(&h, "git init -q sub && cd sub && echo a > a && git add a && "
                  "git -c user.name=t -c user.email=t@e commit -q -m one && git log --oneline | wc -l");
    ck_assert_msg(x->code == 0, "git in a subdirectory: %s", x->err);
    ck_assert_str_eq(x->out, "1\n");
}
END_TEST

START_TEST(git_commit_in_existing_repo)
{
    char cmd[1024];
    snprintf(cmd, sizeof cmd,
             "cd %s && git init -q . && git -c user.name=t -c user.email=t@e commit -q "
             "--allow-empty -m init",
             ws);
    ck_assert_int_eq(system(cmd), 0);
    launch();
    struct h_exec *x = h_run(&h, "echo b > b && git add b && "
                                 "git -c user.name=t -c user.email=t@e commit -q -m two && "
                                 "git log --oneline | wc -l");
    ck_assert_msg(x->code == 0, "git commit: %s", x->err);
    ck_assert_str_eq(x->out, "2\n");
    x = h_run(&h, "git config user.name evil");
    ck_assert_int_ne(x->code, 0); /* .git/config is protected unless allowGitConfig */
}
END_TEST

START_TEST(background_outlives_exec_until_stop)
{
    launch();
    struct h_exec *x = h_run(&h, "sleep 1000.25 >/dev/null 2>&1 & echo started");
    ck_assert_int_eq(x->code, 0);
    /* The background child may not have exec'd sleep yet when sh exits. */
    for (int i = 0; i < 250 && h_count_procs("sleep 1000.25") == 0; i++)
        usleep(20000);
    ck_assert_int_eq(h_count_procs("sleep 1000.25"), 1);
    x = h_run(&h, "pgrep -f 'sleep 1000.25' >/dev/null && echo alive");
    ck_assert_str_eq(x->out, "alive\n");
    ck_assert_int_eq(ccsb_session_stop(h.s), 0);
    ck_assert_int_eq(ccsb_session_state(h.s), CCSB_STATE_DESTROYED);
    ck_assert_int_eq(h_wait_no_procs("sleep 1000.25", 2000), 0);
}
END_TEST

START_TEST(kill_and_timeout)
{
    launch();
    uint64_t id = h_start(&h, "sleep 30", 0, 0);
    h_pump(&h, 50);
    ck_assert_int_eq(ccsb_exec_kill(h.s, id), 0);
    ck_assert_int_eq(h_wait(&h, id, 5000), 0);
    ck_assert_int_eq(h_exec(&h, id)->kill_reason, CCSB_KILL_MANUAL);
    ck_assert_int_eq(h_exec(&h, id)->sig, SIGKILL);

    ccsb_exec_req *req;
    ccsb_exec_req_new(&req);
    const char *argv[] = {"sleep", "30"};
    ccsb_exec_req_set_argv(req, argv, 2);
    ccsb_exec_req_set_timeout_ms(req, 200);
    double t0 = h_now();
    id = h_start_req(&h, req);
    ccsb_exec_req_free(req);
    ck_assert_int_eq(h_wait(&h, id, 5000), 0);
    ck_assert_int_eq(h_exec(&h, id)->kill_reason, CCSB_KILL_TIMEOUT);
    ck_assert(h_now() - t0 < 3.0);
}
END_TEST

/* A kill sent the moment the exec is reported started, before its child
 * became its own process group, still ends it. */
START_TEST(kill_right_after_start)
{
    launch();
    for (int i = 0; i < 40; i++) {
        uint64_t id = h_start(&h, "sleep 30", 0, 0);
        ck_assert_int_eq(ccsb_exec_kill(h.s, id), 0);
        ck_assert_msg(h_wait(&h, id, 5000) == 0, "round %d: the killed exec still runs", i);
        ck_assert_int_eq(h_exec(&h, id)->sig, SIGKILL);
        h.n = 0; /* keep the harness's table from filling */
    }
}
END_TEST

START_TEST(environment)
{
    setenv("LD_PRELOAD", "/nonexistent/evil.so", 1);
    launch();
    unsetenv("LD_PRELOAD");
    struct h_exec *x = h_run(&h, "echo \"$TMPDIR|$CCSB_SANDBOX|$HOME|${LD_PRELOAD-unset}\"; pwd");
    char want[4200];
    snprintf(want, sizeof want, "/tmp|bubblewrap|/tmp|unset\n%s\n", ws);
    ck_assert_str_eq(x->out, want);
    /* No core dumps, and no way to turn them back on. */
    x = h_run(&h, "ulimit -c; ulimit -c unlimited 2>/dev/null; ulimit -c");
    ck_assert_str_eq(x->out, "0\n0\n");
}
END_TEST

/* A command is looked up as POSIX execvp does it, whichever C library
 * ccsb-init was built with: along the command's own PATH, and a file
 * without "#!" is run by /bin/sh (musl's execvp fails it with ENOEXEC). */
START_TEST(command_lookup_like_execvp)
{
    char *script = path_in(ws, "noshebang");
    h_write(script, "echo ran \"$1\"\n");
    ck_assert_int_eq(chmod(script, 0755), 0);
    launch();
    const char *direct[] = {"./noshebang", "a b"};
    const char *by_path[] = {"noshebang", "c"};
    for (int i = 0; i < 2; i++) {
        ccsb_exec_req *req;
        ck_assert_int_eq(ccsb_exec_req_new(&req), 0);
        ck_assert_int_eq(ccsb_exec_req_set_argv(req, i ? by_path : direct, 2), 0);
        if (i) {
            char path[4200];
            snprintf(path, sizeof path, "/nonexistent:%s:/usr/bin:/bin", ws);
            ck_assert_int_eq(ccsb_exec_req_set_env(req, "PATH", path), 0);
        }
        uint64_t id = h_start_req(&h, req);
        ccsb_exec_req_free(req);
        ck_assert_int_eq(h_wait(&h, id, 10000), 0);
        struct h_exec *x = h_exec(&h, id);
        ck_assert_msg(x->code == 0, "exit %d: %s", x->code, x->err);
        ck_assert_str_eq(x->out, i ? "ran c\n" : "ran a b\n");
    }
    free(script);
}
END_TEST

START_TEST(home_not_visible_unless_bound)
{
    char *home = h_tmpdir("home");
    char *secret = path_in(home, "notes.txt");
    h_write(secret, "private\n");
    setenv("HOME", home, 1);
    launch();
    char cmd[4200];
    snprintf(cmd, sizeof cmd, "cat %s; ls %s", secret, home);
    struct h_exec *x = h_run(&h, cmd);
    ck_assert_int_ne(x->code, 0);
    ck_assert_ptr_null(strstr(x->out, "private"));
    h_rmtree(home);
    free(home);
    free(secret);
}
END_TEST

START_TEST(only_sandbox_processes)
{
    launch();
    struct h_exec *x = h_run(&h, "cat /proc/1/cmdline | tr '\\0' ' '; echo; "
                                 "ls /proc | grep -c '^[0-9]'");
    ck_assert_msg(strncmp(x->out, "/run/ccsb/ccsb-init init", 24) == 0, "%s", x->out);
    int n = atoi(strchr(x->out, '\n') + 1);
    ck_assert_msg(n <= 6, "%d processes visible", n);
}
END_TEST

START_TEST(pids_limit)
{
    ccsb_spec_set_pids_max(spec, 16);
    launch();
    /* no process of ccsb's own (a spare) takes one of the user's slots:
     * ccsb-init and this shell (the glob is a builtin's) */
    struct h_exec *n = h_run(&h, "set -- /proc/[0-9]*; echo $#");
    ck_assert_int_eq(atoi(n->out), 2);
    n = h_run(&h, "set -- /proc/[0-9]*; echo $#");
    ck_assert_int_eq(atoi(n->out), 2);
    struct h_exec *x = h_run(&h, "n=0; for i in $(seq 40); do sleep 2 & done 2>/dev/null; "
                                 "jobs -p | wc -l");
    int started = atoi(x->out);
    ck_assert_msg(started < 40, "all 40 started despite a limit of 16 (%s)", x->out);
    char *d = NULL;
    ck_assert_int_eq(ccsb_session_details_json(h.s, &d), 0);
    ck_assert_ptr_nonnull(strstr(d, "\"pids\""));
    ccsb_free(d);
}
END_TEST

START_TEST(memory_limit)
{
    ccsb_spec_set_memory_max(spec, 64u << 20);
    launch();
    struct h_exec *x = h_run(&h, "python3 -c 'b = bytearray(512 << 20); b[-1] = 1; print(\"allocated\")'");
    ck_assert_ptr_null(strstr(x->out, "allocated"));
    ck_assert_int_ne(x->code, 0);
    if (x->sig == SIGKILL)
        ck_assert_int_eq(x->kill_reason, CCSB_KILL_OOM);
}
END_TEST

START_TEST(details_and_launch_failure_is_clean)
{
    launch();
    char *d = NULL;
    ck_assert_int_eq(ccsb_session_details_json(h.s, &d), 0);
    ck_assert_ptr_nonnull(strstr(d, "bubblewrap"));
    ck_assert_ptr_nonnull(strstr(d, "limitsApplied"));
    ccsb_free(d);
    ccsb_session_destroy(h.s);
    h.s = NULL;

    /* a launch that cannot be enforced fails, leaving nothing behind */
    char *before = h_snapshot(ws);
    ccsb_spec *bad;
    ccsb_spec_new(&bad);
    ccsb_spec_set_backend(bad, CCSB_BACKEND_NATIVE);
    ccsb_spec_add_bind_mount(bad, ws, "/run/ccsb", 0);
    ck_assert_int_ne(h_launch(&h, bad), 0);
    ck_assert_ptr_null(h.s);
    ck_assert_ptr_nonnull(strstr(h_errmsg(&h), "/run/ccsb"));
    ccsb_spec_free(bad);
    char *after = h_snapshot(ws);
    ck_assert_str_eq(before, after);
    free(before);
    free(after);
}
END_TEST

/*
 * bwrap is started before the policy is built (its exec overlaps that
 * work): a launch refused by the policy, or by the plan, must still leave
 * no bwrap, no zombie and nothing on disk, and a bwrap whose options never
 * came must not have run anything.
 */
START_TEST(refused_launch_leaves_no_process)
{
    launch();
    ccsb_session_destroy(h.s);
    h.s = NULL;
    h_pump(&h, 20);
    char *before = h_snapshot(ws);
    const char *missing[] = {"/nonexistent-ccsb-it-dir", "/run/ccsb"};
    for (int i = 0; i < 2; i++) {
        ccsb_spec *bad;
        ccsb_spec_new(&bad);
        ccsb_spec_set_backend(bad, CCSB_BACKEND_NATIVE);
        /* 0: the policy refuses (no such directory); 1: the plan (a bind
         * over the helper's own directory) */
        ccsb_spec_add_bind_mount(bad, i == 0 ? missing[0] : ws, i == 0 ? NULL : missing[1], 0);
        ck_assert_int_eq(h_launch(&h, bad), CCSB_E_POLICY);
        ck_assert_ptr_null(h.s);
        ccsb_spec_free(bad);
        /* every child reaped at once: none left, not even a zombie */
        ck_assert_int_eq(waitpid(-1, NULL, WNOHANG), -1);
        ck_assert_int_eq(errno, ECHILD);
    }
    char *after = h_snapshot(ws);
    ck_assert_str_eq(before, after);
    free(before);
    free(after);
}
END_TEST

static void *launch_in_thread(void *arg)
{
    *(int *)arg = h_launch(&h, spec);
    return NULL;
}

/*
 * A session outlives the thread that launched it (a host's worker thread,
 * a Dart isolate's): bwrap's --die-with-parent follows the thread that
 * started it, so that is the context's loop thread, never the caller's.
 */
START_TEST(session_outlives_launching_thread)
{
    pthread_t t;
    int r = -1;
    ck_assert_int_eq(pthread_create(&t, NULL, launch_in_thread, &r), 0);
    ck_assert_int_eq(pthread_join(t, NULL), 0);
    ck_assert_msg(r == 0, "launch: %s: %s", ccsb_strerror(r), h_errmsg(&h));
    h_pump(&h, 200);
    ck_assert_int_eq(ccsb_session_state(h.s), CCSB_STATE_WARM);
    struct h_exec *x = h_run(&h, "echo alive");
    ck_assert_int_eq(x->code, 0);
    ck_assert_str_eq(x->out, "alive\n");
}
END_TEST

START_TEST(missing_protected_paths_leave_nothing)
{
    char *before = h_snapshot(ws);
    launch();
    /* The seccomp guard holds the missing protected paths: the workspace
     * shows nothing new on the host while the session runs. */
    char *during = h_snapshot(ws);
    ck_assert_str_eq(before, during);
    free(during);
    char *rc = path_in(ws, ".bashrc");
    ck_assert_int_eq(h_exists(rc), 0);
    struct h_exec *x = h_run(&h, "echo evil > .bashrc || exit 3; echo no");
    ck_assert_int_eq(x->code, 3);
    x = h_run(&h, "mkdir .vscode || exit 3");
    ck_assert_int_eq(x->code, 3);
    h_pump(&h, 100);
    ck_assert(h_saw_violation(&h, "file-write-create", ".bashrc"));
    ccsb_session_destroy(h.s);
    h.s = NULL;
    char *after = h_snapshot(ws);
    ck_assert_str_eq(before, after);
    free(before);
    free(after);
    free(rc);
}
END_TEST

START_TEST(egress_through_sandbox_listeners)
{
    /* the JVM's properties are appended to the host's own JAVA_TOOL_OPTIONS */
    ccsb_spec_set_env(spec, "JAVA_TOOL_OPTIONS", "-Xss1m");
    launch();
    /* The proxies listen inside the sandbox's own network namespace (the
     * sockets were made there by ccsb-init and handed to the host): the
     * variables point at 127.0.0.1 and the refusal comes back as an event. */
    struct h_exec *x = h_run(&h,
        "case \"$HTTP_PROXY\" in http://127.0.0.1:*) echo http-env;; esac; "
        "case \"$ALL_PROXY\" in socks5h://127.0.0.1:*) echo socks-env;; esac; "
        "case \"$GIT_SSH_COMMAND\" in *'ccsb-init connect'*) echo ssh-env;; esac; "
        "[ \"$npm_config_https_proxy$PIP_PROXY$CARGO_HTTP_PROXY$YARN_HTTPS_PROXY\" = "
        "\"$HTTP_PROXY$HTTP_PROXY$HTTP_PROXY$HTTP_PROXY\" ] && echo tools-env; "
        "case \"$JAVA_TOOL_OPTIONS\" in \"-Xss1m -Dhttp.proxyHost=127.0.0.1 -Dhttp.proxyPort=\"*\""
        "-Dhttps.proxyPort=\"*) echo java-env;; esac; "
        "curl -fsS -m 10 http://blocked.invalid/ -o /dev/null 2>/dev/null || echo http-refused; "
        "/run/ccsb/ccsb-init connect blocked-ssh.invalid 22 </dev/null 2>/dev/null || "
        "echo socks-refused");
    ck_assert_msg(x->exited, "exec: code %d sig %d err %s", x->code, x->sig, x->err);
    ck_assert_msg(strcmp(x->out, "http-env\nsocks-env\nssh-env\ntools-env\njava-env\n"
                                 "http-refused\nsocks-refused\n") == 0,
                  "out [%s] err [%s] code %d", x->out, x->err, x->code);
    h_pump(&h, 100);
    ck_assert(h_saw_violation(&h, "network-outbound", "blocked.invalid:80"));
    ck_assert(h_saw_violation(&h, "network-outbound", "blocked-ssh.invalid:22"));
}
END_TEST

static int count_fds(void)
{
    int n = 0;
    char path[64];
    for (int fd = 0; fd < 4096; fd++) {
        snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
        n += access(path, F_OK) == 0;
    }
    return n;
}

START_TEST(no_fd_or_child_leak)
{
    launch(); /* warm: the context's own fds exist from here on */
    h_run(&h, "true");
    ccsb_session_destroy(h.s);
    h.s = NULL;
    h_pump(&h, 50);
    int before = count_fds();
    for (int i = 0; i < 5; i++) {
        launch();
        uint64_t id = h_start(&h, "sleep 0.05; echo x >&2", 0, 0);
        uint64_t pty = h_start(&h, "tty", 5, 20);
        h_wait(&h, id, 10000);
        h_wait(&h, pty, 10000);
        h_start(&h, "sleep 30", 0, 0); /* still running at stop */
        ccsb_session_destroy(h.s);
        h.s = NULL;
        h_pump(&h, 20);
    }
    ck_assert_int_eq(count_fds(), before);
    /* every child (bwrap, janitor) reaped, none still running */
    ck_assert_int_eq(waitpid(-1, NULL, WNOHANG), -1); /* ECHILD: none left at all */
}
END_TEST

/* ---- ccsb_ctx_prestart ---------------------------------------------------- */

/* Our children running bwrap, zombies left out (their pids into out, at most max). */
static int bwrap_children(pid_t *out, int max)
{
    return h_children_named("bwrap", 0, out, max);
}

/* Waits (bounded) until exactly `want` bwrap children of ours run. */
static int await_bwrap_children(int want, pid_t *out, int max)
{
    int n = -1;
    for (int i = 0; i < 200; i++) {
        if ((n = bwrap_children(out, max)) == want)
            return n;
        usleep(10000);
    }
    return n;
}

static int pid_gone(pid_t pid)
{
    return kill(pid, 0) < 0 && errno == ESRCH; /* reaped, not a zombie */
}

START_TEST(prestart_is_taken_by_the_next_launch)
{
    pid_t p[8], q[8];
    ck_assert_int_eq(ccsb_ctx_prestart(h.ctx), 0);
    ck_assert_int_eq(await_bwrap_children(1, p, 8), 1);
    launch();
    /* the session's bwrap is the standby, and no new standby appeared */
    ck_assert_int_eq(bwrap_children(q, 8), 1);
    ck_assert_int_eq(q[0], p[0]);
    struct h_exec *x = h_run(&h, "echo ok");
    ck_assert_str_eq(x->out, "ok\n");
    ccsb_session_destroy(h.s);
    h.s = NULL;
    h_pump(&h, 20);
    ck_assert_int_eq(await_bwrap_children(0, q, 8), 0);
    ck_assert(pid_gone(p[0]));
    /* taken means gone: the next launch starts its own */
    launch();
    ck_assert_int_eq(bwrap_children(q, 8), 1);
    ck_assert_int_ne(q[0], p[0]);
}
END_TEST

/* At most four wait; ccsb_ctx_free ends and reaps those never taken, and
 * gives back every descriptor. */
START_TEST(prestart_left_over_is_ended_by_ctx_free)
{
    h_done(&h); /* a context of our own, counted from before it exists */
    int before = count_fds();
    char err[256];
    ck_assert_int_eq(ccsb_ctx_new(&h.ctx, err, sizeof err), 0);
    for (int i = 0; i < 4; i++)
        ck_assert_int_eq(ccsb_ctx_prestart(h.ctx), 0);
    ck_assert_int_eq(ccsb_ctx_prestart(h.ctx), CCSB_E_STATE);
    ck_assert_ptr_nonnull(strstr(ccsb_ctx_errmsg(h.ctx), "already wait"));
    pid_t p[8], q[8];
    ck_assert_int_eq(await_bwrap_children(4, p, 8), 4);
    ccsb_ctx_free(h.ctx);
    h.ctx = NULL;
    ck_assert_int_eq(bwrap_children(q, 8), 0);
    for (int i = 0; i < 4; i++)
        ck_assert_msg(pid_gone(p[i]), "bwrap %d not reaped", (int)p[i]);
    ck_assert_int_eq(waitpid(-1, NULL, WNOHANG), -1); /* ECHILD: nothing left */
    ck_assert_int_eq(count_fds(), before);
    h_init(&h); /* for the fixture's teardown */
}
END_TEST

/* Without bubblewrap there is nothing to prestart: said at once. */
START_TEST(prestart_without_bwrap_is_unavailable)
{
    h_done(&h); /* a fresh context: nothing probed or located yet */
    char err[256];
    /* PATH back before any assertion: without CK_FORK (the valgrind setup)
     * the later tests run in this process and need bwrap found. */
    char *path = strdup(getenv("PATH") ? getenv("PATH") : "");
    ck_assert_ptr_nonnull(path);
    ck_assert_int_eq(setenv("PATH", "/nonexistent-ccsb-test", 1), 0);
    int made = ccsb_ctx_new(&h.ctx, err, sizeof err);
    int r = made == 0 ? ccsb_ctx_prestart(h.ctx) : made;
    ck_assert_int_eq(setenv("PATH", path, 1), 0);
    free(path);
    ck_assert_int_eq(made, 0);
    ck_assert_int_eq(r, CCSB_E_UNAVAILABLE);
    ck_assert_ptr_nonnull(strstr(ccsb_ctx_errmsg(h.ctx), "not installed"));
    pid_t q[8];
    ck_assert_int_eq(bwrap_children(q, 8), 0);
}
END_TEST

/* A standby that died while it waited is dropped (and reaped) by the
 * launch that finds it, which then starts its own bwrap. */
START_TEST(dead_standby_is_replaced)
{
    pid_t p[8], q[8];
    ck_assert_int_eq(ccsb_ctx_prestart(h.ctx), 0);
    ck_assert_int_eq(await_bwrap_children(1, p, 8), 1);
    ck_assert_int_eq(kill(p[0], SIGKILL), 0);
    ck_assert_int_eq(await_bwrap_children(0, q, 8), 0);
    launch();
    ck_assert(pid_gone(p[0]));
    ck_assert_int_eq(bwrap_children(q, 8), 1);
    ck_assert_int_ne(q[0], p[0]);
    struct h_exec *x = h_run(&h, "echo ok");
    ck_assert_str_eq(x->out, "ok\n");
}
END_TEST

/* A launch with a process limit starts bwrap inside its cgroups (or with
 * rlimits): it leaves the standby for a later launch. */
START_TEST(limited_launch_leaves_the_standby)
{
    pid_t p[8], q[8];
    ck_assert_int_eq(ccsb_ctx_prestart(h.ctx), 0);
    ck_assert_int_eq(await_bwrap_children(1, p, 8), 1);
    ccsb_spec_set_pids_max(spec, 64);
    launch();
    h_run(&h, "true");
    int n = bwrap_children(q, 8);
    int standby_there = 0;
    for (int i = 0; i < n; i++)
        standby_there |= q[i] == p[0];
    ck_assert(standby_there);
    ck_assert(!pid_gone(p[0]));
}
END_TEST

/*
 * The spare (the next exec's process, forked ahead by ccsb-init and holding
 * the control socket while it waits) is as closed to the sandbox as PID 1,
 * and killing it from inside costs nothing but its head start: the next
 * exec still runs and is reported truthfully, pipe or pty.
 */
START_TEST(spare_is_closed_and_expendable)
{
    launch();
    h_run(&h, "true"); /* a spare exists from here on */
    /* The spare is forked after an exec starts: wait (bounded) until it is
     * there, then go for it. */
    struct h_exec *x = h_run(
        &h,
        "n=0; while [ $n -lt 250 ]; do "
        "  for d in /proc/[0-9]*; do p=${d#/proc/}; [ $p = 1 ] || [ $p = $$ ] && continue; "
        "    grep -q ccsb-init $d/cmdline 2>/dev/null && n=999; done; "
        "  [ $n = 999 ] && break; n=$((n+1)); sleep 0.02; done; "
        "for d in /proc/[0-9]*; do p=${d#/proc/}; [ $p = 1 ] && continue; [ $p = $$ ] && continue; "
        "  grep -q ccsb-init $d/cmdline 2>/dev/null || continue; echo SPARE; "
        "  for f in 3 4 5 6; do (: > $d/fd/$f) 2>/dev/null && echo REACHED_FD_$f; done; "
        "  cat $d/environ >/dev/null 2>&1 && echo REACHED_ENV; "
        "  cat $d/mem >/dev/null 2>&1 && echo REACHED_MEM; "
        "  python3 -c \"import ctypes,sys; l=ctypes.CDLL(None); "
        "print('TRACED' if l.ptrace(16, int(sys.argv[1]), 0, 0) == 0 else 'no-trace')\" $p; "
        "  kill -9 $p && echo KILLED; "
        "done");
    ck_assert_int_eq(x->code, 0);
    ck_assert_msg(strstr(x->out, "SPARE") != NULL, "no spare seen: %s", x->out);
    ck_assert_msg(strstr(x->out, "REACHED") == NULL, "reached the spare: %s", x->out);
    ck_assert_msg(strstr(x->out, "TRACED") == NULL, "ptrace of the spare: %s", x->out);
    ck_assert_msg(strstr(x->out, "KILLED") != NULL, "%s", x->out);
    h_pump(&h, 100);
    for (int i = 0; i < 3; i++) {
        x = h_run(&h, "echo ok; exit 3");
        ck_assert_int_eq(x->code, 3);
        ck_assert_str_eq(x->out, "ok\n");
    }
    uint64_t id = h_start(&h, "tty", 5, 20);
    ck_assert_int_eq(h_wait(&h, id, 10000), 0);
    ck_assert_int_eq(h_exec(&h, id)->code, 0);
    ck_assert_ptr_nonnull(strstr(h_exec(&h, id)->out, "/dev/pts/"));
}
END_TEST

static ccsb_exec_req *sh_req(const char *cmd)
{
    ccsb_exec_req *req;
    ck_assert_int_eq(ccsb_exec_req_new(&req), 0);
    const char *argv[] = {"sh", "-c", cmd};
    ck_assert_int_eq(ccsb_exec_req_set_argv(req, argv, 3), 0);
    return req;
}

/*
 * ccsb_launch_exec sends the command with the launch, before ccsb-init says
 * READY: it must run with everything a later exec gets (stdin, the proxy
 * variables naming the ports the proxies really listen on, the guard), and
 * the session must go on serving execs afterwards.
 */
START_TEST(launch_exec_runs_first_command)
{
    ccsb_exec_req *req = sh_req("read line; echo \"got $line\"; echo \"$HTTP_PROXY\"; "
                                "echo $CCSB_SANDBOX; touch .gitmodules 2>/dev/null || echo REFUSED; exit 4");
    ck_assert_int_eq(ccsb_exec_req_set_stdin(req, CCSB_STDIN_PIPE), 0);
    uint64_t id = 0;
    int r = h_launch_exec(&h, spec, req, &id);
    ck_assert_msg(r == 0, "launch_exec: %s: %s", ccsb_strerror(r), h_errmsg(&h));
    ccsb_exec_req_free(req);
    ck_assert_uint_gt(id, 0);
    ck_assert_int_eq(ccsb_exec_write_stdin(h.s, id, "hello\n", 6), 6);
    ck_assert_int_eq(ccsb_exec_close_stdin(h.s, id), 0);
    ck_assert_int_eq(h_wait(&h, id, 10000), 0);
    struct h_exec *x = h_exec(&h, id);
    ck_assert_int_eq(x->code, 4);
    char *d = NULL;
    ck_assert_int_eq(ccsb_session_details_json(h.s, &d), 0);
    const char *p = strstr(d, "\"httpProxyPort\":");
    ck_assert_ptr_nonnull(p);
    char want[256];
    snprintf(want, sizeof want, "got hello\nhttp://127.0.0.1:%d\nbubblewrap\nREFUSED\n",
             atoi(p + strlen("\"httpProxyPort\":")));
    ccsb_free(d);
    ck_assert_str_eq(x->out, want);
    char *gm = path_in(ws, ".gitmodules");
    ck_assert_int_eq(h_exists(gm), 0);
    free(gm);
    /* the session stays warm and serves the next command */
    x = h_run(&h, "echo next");
    ck_assert_int_eq(x->code, 0);
    ck_assert_str_eq(x->out, "next\n");
}
END_TEST

START_TEST(launch_exec_on_a_pty)
{
    uint64_t id = 0;
    ccsb_exec_req *req = sh_req("tty");
    ck_assert_int_eq(ccsb_exec_req_set_pty(req, 5, 20), 0);
    ck_assert_int_eq(h_launch_exec(&h, spec, req, &id), 0);
    ccsb_exec_req_free(req);
    ck_assert_int_eq(h_wait(&h, id, 10000), 0);
    ck_assert_ptr_nonnull(strstr(h_exec(&h, id)->out, "/dev/pts/"));
}
END_TEST

/*
 * end_session: the sandbox ends itself when the command's main process
 * exits, background processes included, and the session reads destroyed,
 * not error (bwrap's exit is expected then).
 */
START_TEST(end_session_exec_ends_the_sandbox)
{
    launch();
    struct h_exec *x = h_run(&h, "echo warm");
    ck_assert_int_eq(x->code, 0);
    ccsb_exec_req *req = sh_req("sleep 1000.5 & echo last; exit 6");
    ck_assert_int_eq(ccsb_exec_req_set_end_session(req, 1), 0);
    uint64_t id = h_start_req(&h, req);
    ccsb_exec_req_free(req);
    ck_assert_int_eq(h_wait(&h, id, 10000), 0);
    ck_assert_int_eq(h_exec(&h, id)->code, 6);
    ck_assert_str_eq(h_exec(&h, id)->out, "last\n");
    for (int i = 0; i < 100 && ccsb_session_state(h.s) != CCSB_STATE_DESTROYED; i++)
        h_pump(&h, 20);
    ck_assert_int_eq(ccsb_session_state(h.s), CCSB_STATE_DESTROYED);
    ck_assert_int_eq(h_wait_no_procs("sleep 1000.5", 2000), 0);
    for (size_t i = 0; i < h.nstates; i++)
        ck_assert_int_ne(h.states[i], CCSB_STATE_ERROR);
    ck_assert_str_eq(ccsb_session_error(h.s), "");
    /* nothing more runs in it */
    ck_assert_int_eq(ccsb_exec_req_new(&req), 0);
    const char *argv[] = {"true"};
    ccsb_exec_req_set_argv(req, argv, 1);
    ck_assert_int_eq(ccsb_exec(h.s, req, &id), CCSB_E_STATE);
    ccsb_exec_req_free(req);
}
END_TEST

/*
 * A command that ends its sandbox (a one-shot run) gets no spare behind it:
 * none can be used, and forking one only took a CPU from the command's
 * start. The count runs after the spare would have been made (ccsb-init
 * forks it once the command has started), and sees every ccsb-init
 * process but PID 1.
 */
START_TEST(one_shot_makes_no_spare)
{
    ccsb_exec_req *req = sh_req(
        "sleep 0.3; n=0; for d in /proc/[0-9]*; do p=${d#/proc/}; [ $p = 1 ] || [ $p = $$ ] && continue; "
        "grep -q ccsb-init $d/cmdline 2>/dev/null && n=$((n+1)); done; echo spares=$n");
    ck_assert_int_eq(ccsb_exec_req_set_end_session(req, 1), 0);
    uint64_t id = 0;
    ck_assert_int_eq(h_launch_exec(&h, spec, req, &id), 0);
    ccsb_exec_req_free(req);
    ck_assert_int_eq(h_wait(&h, id, 10000), 0);
    ck_assert_int_eq(h_exec(&h, id)->code, 0);
    ck_assert_str_eq(h_exec(&h, id)->out, "spares=0\n");
}
END_TEST

/* A first command that cannot go out fails the whole call and leaves
 * nothing: no session, no process, no zombie, nothing on disk. */
START_TEST(launch_exec_failure_leaves_nothing)
{
    char *before = h_snapshot(ws);
    uint64_t id = 7;
    ccsb_exec_req *empty;
    ck_assert_int_eq(ccsb_exec_req_new(&empty), 0);
    ck_assert_int_eq(h_launch_exec(&h, spec, empty, &id), CCSB_E_INVAL);
    ck_assert_ptr_nonnull(strstr(h_errmsg(&h), "argv"));
    ck_assert_ptr_null(h.s);
    ck_assert_uint_eq(id, 0);
    ccsb_exec_req_free(empty);

    /* too big for the channel: refused while the sandbox is starting */
    size_t big = (5u << 20);
    char *arg = malloc(big + 1);
    ck_assert_ptr_nonnull(arg);
    memset(arg, 'a', big);
    arg[big] = '\0';
    ccsb_exec_req *req;
    ck_assert_int_eq(ccsb_exec_req_new(&req), 0);
    const char *argv[] = {"echo", arg};
    ck_assert_int_eq(ccsb_exec_req_set_argv(req, argv, 2), 0);
    free(arg);
    int r = h_launch_exec(&h, spec, req, &id);
    ccsb_exec_req_free(req);
    ck_assert_int_eq(r, CCSB_E_INVAL);
    ck_assert_ptr_null(h.s);
    ck_assert_uint_eq(id, 0);
    ck_assert_int_eq(waitpid(-1, NULL, WNOHANG), -1); /* ECHILD: bwrap reaped */
    ck_assert_int_eq(errno, ECHILD);

    /* a spec the policy refuses */
    ccsb_spec *bad;
    ccsb_spec_new(&bad);
    ccsb_spec_set_backend(bad, CCSB_BACKEND_NATIVE);
    ccsb_spec_add_bind_mount(bad, "/nonexistent-ccsb-it-dir", NULL, 0);
    req = sh_req("echo never > ran");
    ck_assert_int_eq(h_launch_exec(&h, bad, req, &id), CCSB_E_POLICY);
    ck_assert_ptr_null(h.s);
    ccsb_spec_free(bad);
    ccsb_exec_req_free(req);
    ck_assert_int_eq(waitpid(-1, NULL, WNOHANG), -1);
    char *after = h_snapshot(ws);
    ck_assert_str_eq(before, after);
    free(before);
    free(after);

    /* the context is still good for a launch that works */
    req = sh_req("echo ok");
    ck_assert_int_eq(h_launch_exec(&h, spec, req, &id), 0);
    ccsb_exec_req_free(req);
    ck_assert_int_eq(h_wait(&h, id, 10000), 0);
    ck_assert_str_eq(h_exec(&h, id)->out, "ok\n");
}
END_TEST

/* ccsb-init processes of sandboxes this process started (bwrap's children). */
static int own_sandbox_inits(void)
{
    DIR *d = opendir("/proc");
    ck_assert_ptr_nonnull(d);
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        int pid = atoi(e->d_name);
        if (pid <= 0)
            continue;
        char path[64], buf[256];
        snprintf(path, sizeof path, "/proc/%d/cmdline", pid);
        FILE *f = fopen(path, "re");
        size_t len = f ? fread(buf, 1, sizeof buf - 1, f) : 0;
        if (f)
            fclose(f);
        buf[len] = '\0';
        if (strcmp(buf, "/run/ccsb/ccsb-init") != 0 || strlen(buf) + 5 > len ||
            strcmp(buf + strlen(buf) + 1, "init") != 0)
            continue;
        /* pid -> bwrap -> us */
        pid_t bwrap = h_proc_stat(pid, NULL, NULL, 0);
        n += bwrap > 0 && h_proc_stat(bwrap, NULL, NULL, 0) == getpid();
    }
    closedir(d);
    return n;
}

/*
 * Holds the loop thread (from the doorbell, which the loop rings) while a
 * launch has its sandbox ready but is not attached yet, so that a command
 * sent ahead has all the time it needs to run if nothing stops it.
 */
struct hold {
    ccsb_session *other; /* a session whose state change rings the bell */
    const char *victim;
    int armed;
};

static void hold_bell(void *ud)
{
    struct hold *hd = ud;
    if (!__atomic_exchange_n(&hd->armed, 0, __ATOMIC_SEQ_CST))
        return;
    for (int i = 0; i < 100 && h_exists(hd->victim); i++)
        usleep(20000);
}

static void *hold_when_started(void *arg)
{
    struct hold *hd = arg;
    /* the second sandbox's ccsb-init exists: its launch no longer needs the
     * loop until the attach */
    for (int i = 0; i < 2000 && own_sandbox_inits() < 2; i++)
        usleep(1000);
    __atomic_store_n(&hd->armed, 1, __ATOMIC_SEQ_CST);
    ccsb_session_suspend(hd->other); /* an event: the bell rings on the loop */
    return NULL;
}

/*
 * A launch that fails once the sandbox is up (here: its session id is
 * taken, found when attaching) returns at once, and with ccsb_launch_exec
 * the command it sent ahead never ran (it was: an unlink in the workspace
 * done while the call reported failure). Was: ccsb_launch hung for ever
 * reading the blocking control socket in the teardown.
 */
START_TEST(failed_attach_returns_and_runs_nothing)
{
    ccsb_spec_set_session_id(spec, "ccsb-it-taken");
    launch();
    h_pump(&h, 50);
    ccsb_session *b = NULL;
    double t0 = h_now();
    ck_assert_int_eq(ccsb_launch(h.ctx, spec, &b), CCSB_E_STATE);
    ck_assert_ptr_null(b);
    ck_assert_ptr_nonnull(strstr(h_errmsg(&h), "already used"));
    ck_assert_double_lt(h_now() - t0, 10.0);

    char *victim = path_in(ws, "victim");
    h_write(victim, "v");
    const char *argv[] = {"rm", "-f", victim};
    ccsb_exec_req *req;
    ck_assert_int_eq(ccsb_exec_req_new(&req), 0);
    ck_assert_int_eq(ccsb_exec_req_set_argv(req, argv, 3), 0);
    struct hold hd = {.other = h.s, .victim = victim};
    ck_assert_int_eq(ccsb_ctx_set_wakeup(h.ctx, hold_bell, &hd, NULL), 0);
    h_pump(&h, 20); /* an empty queue: the next event rings */
    pthread_t t;
    ck_assert_int_eq(pthread_create(&t, NULL, hold_when_started, &hd), 0);
    uint64_t id = 5;
    int r = ccsb_launch_exec(h.ctx, spec, req, &b, &id);
    pthread_join(t, NULL);
    ck_assert_int_eq(ccsb_ctx_set_wakeup(h.ctx, NULL, NULL, NULL), 0);
    ccsb_exec_req_free(req);
    ck_assert_int_eq(r, CCSB_E_STATE);
    ck_assert_ptr_null(b);
    ck_assert_uint_eq(id, 0);
    ck_assert_msg(h_exists(victim), "the command ran although the launch failed");
    for (int i = 0; i < 100 && own_sandbox_inits() > 1; i++)
        usleep(20000);
    ck_assert_int_eq(own_sandbox_inits(), 1); /* only the first session's */
    free(victim);
}
END_TEST

/*
 * A host that closed its standard streams (a daemon) hands out 0, 1 and 2
 * next: none of the session's descriptors may take them, or the host's own
 * write(2, ...) would reach bwrap's option stream or the control socket,
 * and its read(0) would steal ccsb-init's messages. Placeholders (a side
 * janitor) and the guard are both in play.
 */
START_TEST(closed_stdio_untouched)
{
    char *rc = path_in(ws, ".bashrc");
    unlink(rc);
    int saved[3];
    for (int i = 0; i < 3; i++) {
        saved[i] = fcntl(i, F_DUPFD_CLOEXEC, 10);
        ck_assert_int_ge(saved[i], 0);
        close(i);
    }
    int r = h_launch(&h, spec);
    int taken_launch[3], taken_exec[3];
    char what[3][128] = {"", "", ""};
    for (int i = 0; i < 3; i++) {
        taken_launch[i] = fcntl(i, F_GETFD) >= 0;
        char link[32];
        snprintf(link, sizeof link, "/proc/self/fd/%d", i);
        ssize_t n = readlink(link, what[i], sizeof what[i] - 1);
        what[i][n > 0 ? n : 0] = '\0';
    }
    struct h_exec *x = r == 0 ? h_run(&h, "echo ok") : NULL;
    for (int i = 0; i < 3; i++)
        taken_exec[i] = fcntl(i, F_GETFD) >= 0;
    ccsb_session_destroy(h.s);
    h.s = NULL;
    for (int i = 0; i < 3; i++) {
        if (fcntl(i, F_GETFD) >= 0)
            close(i);
        dup2(saved[i], i);
        close(saved[i]);
    }
    ck_assert_msg(r == 0, "launch: %s: %s", ccsb_strerror(r), h_errmsg(&h));
    ck_assert_str_eq(x->out, "ok\n");
    ck_assert_msg(!taken_launch[0] && !taken_launch[1] && !taken_launch[2],
                  "session fds took 0-2 at launch: [%s] [%s] [%s]", what[0], what[1], what[2]);
    ck_assert_msg(!taken_exec[0] && !taken_exec[1] && !taken_exec[2],
                  "session fds took 0-2 after an exec: %d %d %d", taken_exec[0], taken_exec[1],
                  taken_exec[2]);
    ck_assert_int_eq(h_exists(rc), 0);
    free(rc);
}
END_TEST

/*
 * One context compiles the guard's program once per configuration and
 * shares it: a session that allows unix sockets and one that does not,
 * alternating in one context, must each get their own program (a cached
 * one for the other configuration would open or close socket(AF_UNIX)).
 */
START_TEST(guard_program_per_config_in_one_ctx)
{
    if (access("/usr/bin/python3", X_OK) != 0) {
        printf("SKIP guard_program_per_config_in_one_ctx: python3 missing\n");
        return;
    }
    char *sock_dir = h_tmpdir("sock");
    char *sock = path_in(sock_dir, "app.sock");
    int l = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    snprintf(sa.sun_path, sizeof sa.sun_path, "%s", sock);
    ck_assert_int_eq(bind(l, (struct sockaddr *)&sa, sizeof sa), 0);
    ck_assert_int_eq(listen(l, 4), 0);
    ccsb_spec *allow;
    ck_assert_int_eq(ccsb_spec_new(&allow), 0);
    ccsb_spec_set_backend(allow, CCSB_BACKEND_NATIVE);
    ccsb_spec_add_bind_mount(allow, ws, NULL, 0);
    ccsb_spec_set_guest_workdir(allow, ws);
    ck_assert_int_eq(ccsb_spec_add_unix_socket(allow, sock), 0);
    const char *cmd = "python3 -c 'import socket\n"
                      "try:\n socket.socket(socket.AF_UNIX); print(\"made\")\n"
                      "except OSError as e: print(\"refused\", e.errno)'";
    const char *want[] = {"refused 1\n", "made\n", "refused 1\n", "made\n"};
    for (int i = 0; i < 4; i++) {
        int r = h_launch(&h, i % 2 ? allow : spec);
        ck_assert_msg(r == 0, "launch %d: %s: %s", i, ccsb_strerror(r), h_errmsg(&h));
        struct h_exec *x = h_run(&h, cmd);
        ck_assert_msg(strcmp(x->out, want[i]) == 0, "session %d: [%s] [%s]", i, x->out, x->err);
        ccsb_session_destroy(h.s);
        h.s = NULL;
        h.n = 0;
    }
    ccsb_spec_free(allow);
    close(l);
    unlink(sock);
    h_rmtree(sock_dir);
    free(sock);
    free(sock_dir);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("bwrap_session");
    TCase *tc = h_tcase("session", 60, setup, teardown);
    tcase_add_test(tc, write_in_bound_dir);
    tcase_add_test(tc, etc_is_read_only);
    tcase_add_test(tc, review_mode_is_read_only);
    tcase_add_test(tc, pty_answers_tty);
    tcase_add_test(tc, stdin_pipe);
    tcase_add_test(tc, suspend_resume);
    tcase_add_test(tc, twenty_concurrent);
    tcase_add_test(tc, compiler_and_git);
    tcase_add_test(tc, git_commit_in_existing_repo);
    tcase_add_test(tc, background_outlives_exec_until_stop);
    tcase_add_test(tc, kill_and_timeout);
    tcase_add_test(tc, kill_right_after_start);
    tcase_add_test(tc, environment);
    tcase_add_test(tc, command_lookup_like_execvp);
    tcase_add_test(tc, home_not_visible_unless_bound);
    tcase_add_test(tc, only_sandbox_processes);
    tcase_add_test(tc, pids_limit);
    tcase_add_test(tc, memory_limit);
    tcase_add_test(tc, details_and_launch_failure_is_clean);
    tcase_add_test(tc, missing_protected_paths_leave_nothing);
    tcase_add_test(tc, egress_through_sandbox_listeners);
    tcase_add_test(tc, no_fd_or_child_leak);
    tcase_add_test(tc, spare_is_closed_and_expendable);
    tcase_add_test(tc, one_shot_makes_no_spare);
    tcase_add_test(tc, prestart_is_taken_by_the_next_launch);
    tcase_add_test(tc, prestart_left_over_is_ended_by_ctx_free);
    tcase_add_test(tc, dead_standby_is_replaced);
    tcase_add_test(tc, prestart_without_bwrap_is_unavailable);
    tcase_add_test(tc, limited_launch_leaves_the_standby);
    tcase_add_test(tc, refused_launch_leaves_no_process);
    tcase_add_test(tc, session_outlives_launching_thread);
    tcase_add_test(tc, closed_stdio_untouched);
    tcase_add_test(tc, guard_program_per_config_in_one_ctx);
    tcase_add_test(tc, launch_exec_runs_first_command);
    tcase_add_test(tc, launch_exec_on_a_pty);
    tcase_add_test(tc, end_session_exec_ends_the_sandbox);
    tcase_add_test(tc, launch_exec_failure_leaves_nothing);
    tcase_add_test(tc, failed_attach_returns_and_runs_nothing);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return h_run_suite(suite());
}
