/*
 * Red team: the host replaces a protected path while a session runs.
 *
 * A deny-read mask or a deny-write bind over a path in a bound host
 * directory sits on the host's node; the host renaming a new file over it
 * (git, editors, credential helpers save that way) or removing it detaches
 * the mount in the sandbox. ccsb-init watches its mount table and ends the
 * sandbox when a mask (or a directory's bind) goes; a file's read-only bind
 * is only reported while the seccomp guard refuses writes to it by name.
 *
 * Each attack is made deterministic: the command inside waits for a go
 * file that the test creates only when the session did not stop within a
 * bounded wait. A missed kill therefore fails the test (the command reads
 * the new secret); a working kill passes it every time.
 *
 * Runs as root and (through run_as_user.sh) as an unprivileged user.
 */
#include <check.h>
#include <errno.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bwrap_harness.h"

static struct h h;
static char *H; /* the fake home, bound read-write */
static ccsb_spec *spec;

static void setup(void)
{
    h_init(&h);
    H = h_tmpdir("rt-detach");
    setenv("HOME", H, 1);
    ck_assert_int_eq(ccsb_spec_new(&spec), 0);
    ccsb_spec_set_backend(spec, CCSB_BACKEND_NATIVE);
    ccsb_spec_add_bind_mount(spec, H, NULL, 0);
    ccsb_spec_set_guest_workdir(spec, H);
}

static void teardown(void)
{
    h_done(&h);
    ccsb_spec_free(spec);
    spec = NULL;
    h_rmtree(H);
    free(H);
    H = NULL;
}

static void launch(void)
{
    int r = h_launch(&h, spec);
    ck_assert_msg(r == 0, "launch: %s: %s", ccsb_strerror(r), h_errmsg(&h));
    struct h_exec *x = h_run(&h, "echo warm");
    ck_assert_int_eq(x->code, 0);
}

/* Pumps events until the session is in ERROR, for up to ms: 1 when it is. */
static int wait_stopped(int ms)
{
    double end = h_now() + ms / 1000.0;
    while (ccsb_session_state(h.s) != CCSB_STATE_ERROR && h_now() < end)
        h_pump(&h, 10);
    return ccsb_session_state(h.s) == CCSB_STATE_ERROR;
}

/*
 * The attacker: waits (bounded) for the go file, then reads what the host
 * just wrote. A background process of its own marks the sandbox's
 * processes on the host (`sleep 1000.8xx` in its command line).
 */
static uint64_t start_attacker(const char *go, const char *read_cmd, const char *mark)
{
    char cmd[4096];
    snprintf(cmd, sizeof cmd,
             "sleep %s & "
             "i=0; while [ ! -e '%s' ] && [ $i -lt 1000 ]; do sleep 0.01; i=$((i+1)); done; "
             "%s; echo ATTACKER-DONE",
             mark, go, read_cmd);
    uint64_t id = h_start(&h, cmd, 0, 0);
    /* its background sleep runs before the host acts */
    double end = h_now() + 5;
    while (h_count_procs(mark) == 0 && h_now() < end)
        h_pump(&h, 10);
    ck_assert_int_ge(h_count_procs(mark), 1);
    return id;
}

/*
 * After the host's change: the session must stop on its own within the
 * bounded wait; only if it did not does the attacker get its go. Then
 * everything the kill promises: the secret unread, the command killed for
 * the host's reason, a violation naming the path, the session's error, no
 * process of the sandbox left, and no file of the launch left in H.
 */
static void expect_stopped(uint64_t id, const char *go, const char *secret, const char *mark,
                           const char *target)
{
    int stopped = wait_stopped(5000);
    if (!stopped)
        h_write(go, "go\n");
    ck_assert_int_eq(h_wait(&h, id, 15000), 0);
    struct h_exec *x = h_exec(&h, id);
    ck_assert_msg(strstr(x->out, secret) == NULL,
                  "the command read the secret the host wrote: %s", x->out);
    ck_assert_msg(stopped, "the session went on after the host replaced %s (out: %s)", target,
                  x->out);
    ck_assert_msg(strstr(x->out, "ATTACKER-DONE") == NULL, "the command ran on: %s", x->out);
    ck_assert_int_eq(x->kill_reason, CCSB_KILL_HOST);
    ck_assert_msg(h_saw_violation(&h, "mount-detached", target),
                  "no mount-detached violation for %s", target);
    const char *err = ccsb_session_error(h.s);
    ck_assert_msg(err && strstr(err, "protected path") && strstr(err, target),
                  "session error: %s", err ? err : "(none)");
    /* a new command is refused, not run unprotected */
    uint64_t id2 = 0;
    ccsb_exec_req *req;
    ck_assert_int_eq(ccsb_exec_req_new(&req), 0);
    const char *argv[] = {"cat", target};
    ck_assert_int_eq(ccsb_exec_req_set_argv(req, argv, 2), 0);
    ck_assert_int_ne(ccsb_exec(h.s, req, &id2), 0);
    ccsb_exec_req_free(req);
    ck_assert_int_eq(h_wait_no_procs(mark, 2000), 0);
    ccsb_session_destroy(h.s);
    h.s = NULL;
    ck_assert_int_eq(h_children_named("bwrap", 1, NULL, 0), 0);
    ck_assert_int_eq(h_children_named("ccsb-init", 1, NULL, 0), 0);
}

/*
 * `git credential-store`, `docker login` and friends save by renaming a new
 * file over the old one: the mask over ~/.git-credentials detaches.
 */
START_TEST(host_renames_over_masked_file)
{
    char *cred = h_join(H, ".git-credentials"), *go = h_join(H, "go");
    h_write(cred, "https://u:OLD-TOKEN@example.com\n");
    char *before = h_snapshot(H);
    launch();
    char rd[1024];
    snprintf(rd, sizeof rd, "cat '%s' 2>&1", cred);
    uint64_t id = start_attacker(go, rd, "1000.81");
    h_host_saves(cred, "https://u:NEW-TOKEN@example.com\n");
    expect_stopped(id, go, "NEW-TOKEN", "1000.81", cred);
    /* nothing of the launch is left: H is as the host left it */
    h_host_saves(cred, "https://u:OLD-TOKEN@example.com\n");
    h_assert_unchanged(H, before);
    free(before);
    free(cred);
    free(go);
}
END_TEST

/* A masked secret directory removed and made again (`rm -rf ~/.ssh`, then
 * ssh-keygen): the tmpfs over it detaches with the old directory. */
START_TEST(host_recreates_masked_dir)
{
    char *ssh = h_join(H, ".ssh"), *key = h_join(H, ".ssh/id_ed25519"), *go = h_join(H, "go");
    ck_assert_int_eq(mkdir(ssh, 0700), 0);
    h_write(key, "OLD-KEY\n");
    char *before = h_snapshot(H);
    launch();
    char rd[1024];
    snprintf(rd, sizeof rd, "cat '%s' 2>&1; ls -la '%s' 2>&1", key, ssh);
    uint64_t id = start_attacker(go, rd, "1000.82");
    h_rmtree(ssh);
    ck_assert_int_eq(mkdir(ssh, 0700), 0);
    h_write(key, "NEW-KEY\n");
    expect_stopped(id, go, "NEW-KEY", "1000.82", ssh);
    h_write(key, "OLD-KEY\n");
    h_assert_unchanged(H, before);
    free(before);
    free(ssh);
    free(key);
    free(go);
}
END_TEST

/* 1 when a launch of spec here runs with the seccomp guard (ccsb-init is
 * told so: --have-guard in the plan). */
static int plan_has_guard(void)
{
    char *text = NULL;
    char err[256];
    ck_assert_int_eq(ccsb_explain(spec, NULL, &text, err, sizeof err), 0);
    int yes = strstr(text, "--have-guard") != NULL;
    ccsb_free(text);
    return yes;
}

/*
 * The host saves ~/.gitconfig (a protected file in the writable home) by
 * renaming over it: its read-only bind detaches. With the guard, which
 * refuses writes to the name, that is reported and the session goes on;
 * without it the session is stopped like for a mask. (Whether the write
 * is refused is the guard's test, not this one.)
 */
START_TEST(host_renames_over_protected_file)
{
    char *cfg = h_join(H, ".gitconfig");
    h_write(cfg, "[user]\n\tname = host\n");
    int guard = plan_has_guard();
    launch();
    h_host_saves(cfg, "[user]\n\tname = host2\n");
    double end = h_now() + 5;
    while (!h_saw_violation(&h, "mount-detached", cfg) && h_now() < end)
        h_pump(&h, 10);
    ck_assert_msg(h_saw_violation(&h, "mount-detached", cfg),
                  "no mount-detached violation for %s", cfg);
    if (!guard) {
        ck_assert(wait_stopped(5000));
        free(cfg);
        return;
    }
    h_pump(&h, 100);
    ck_assert_int_ne(ccsb_session_state(h.s), CCSB_STATE_ERROR);
    struct h_exec *x = h_run(&h, "echo still; cat ~/.gitconfig");
    ck_assert_int_eq(x->code, 0);
    ck_assert_msg(strstr(x->out, "still") && strstr(x->out, "host2"), "%s%s", x->out, x->err);
    /* the host saves it again: nothing new to report, nothing stops */
    h_host_saves(cfg, "[user]\n\tname = host3\n");
    h_pump(&h, 200);
    x = h_run(&h, "echo again");
    ck_assert_int_eq(x->code, 0);
    size_t n = 0;
    for (size_t i = 0; i < h.nviol; i++)
        n += strcmp(h.viol[i].action, "mount-detached") == 0;
    ck_assert_uint_eq(n, 1);
    free(cfg);
}
END_TEST

/*
 * The host mounts and unmounts a file system below a bound directory (a
 * shared mount, so the events reach the sandbox's namespace): that wakes
 * the watch, and must not stop anything, since no protection moved. As
 * root only; the mounts are made in a mount namespace of the test's own
 * (the forked test process), so nothing is left on the machine.
 */
START_TEST(host_mount_elsewhere)
{
    if (geteuid() != 0) {
        fprintf(stderr, "host_mount_elsewhere: skipped (mounting on the host needs root)\n");
        return;
    }
    /* the context's loop thread spawns bwrap: it must start in there */
    h_done(&h);
    ck_assert_int_eq(unshare(CLONE_NEWNS), 0);
    ck_assert_int_eq(mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL), 0);
    ck_assert_int_eq(mount(H, H, NULL, MS_BIND, NULL), 0);
    ck_assert_int_eq(mount(NULL, H, NULL, MS_SHARED, NULL), 0);
    char *cred = h_join(H, ".git-credentials"), *sub = h_join(H, "sub");
    char *seen = h_join(H, "sub/seen");
    h_write(cred, "https://u:OLD-TOKEN@example.com\n");
    ck_assert_int_eq(mkdir(sub, 0755), 0);
    h_init(&h);
    launch();
    for (int round = 0; round < 3; round++) {
        ck_assert_int_eq(mount("tmpfs", sub, "tmpfs", 0, "size=64k,mode=0755"), 0);
        h_write(seen, "SEEN-IN-SANDBOX\n");
        /* the mount did reach the sandbox: the event is real */
        struct h_exec *x = h_run(&h, "cat sub/seen 2>&1; cat .git-credentials 2>&1 | head -c 64");
        ck_assert_msg(strstr(x->out, "SEEN-IN-SANDBOX"), "no propagation: %s", x->out);
        ck_assert_msg(strstr(x->out, "OLD-TOKEN") == NULL, "mask gone: %s", x->out);
        ck_assert_int_eq(umount2(sub, 0), 0);
        h_pump(&h, 50);
        x = h_run(&h, "test -e sub/seen && echo STILL || echo gone");
        ck_assert_msg(strstr(x->out, "gone"), "%s", x->out);
    }
    ck_assert_int_ne(ccsb_session_state(h.s), CCSB_STATE_ERROR);
    ck_assert_msg(!h_saw_violation(&h, "mount-detached", NULL), "a false alarm");
    ccsb_session_destroy(h.s);
    h.s = NULL;
    ck_assert_int_eq(umount2(H, MNT_DETACH), 0);
    free(cred);
    free(sub);
    free(seen);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("redteam-detach");
    TCase *tc = h_tcase("host-replaces", 120, setup, teardown);
    tcase_add_test(tc, host_renames_over_masked_file);
    tcase_add_test(tc, host_recreates_masked_dir);
    tcase_add_test(tc, host_renames_over_protected_file);
    tcase_add_test(tc, host_mount_elsewhere);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return h_run_suite(suite());
}
