/*
 * The escape suite: real attempts from inside a real bubblewrap session,
 * each expected to fail, with the host checked afterwards for any change.
 * Runs as root and (through run_as_user.sh) as an unprivileged user.
 *
 * Every test builds a fresh workspace W (bound read-write at the same path)
 * and a fake home H (the host HOME for policy purposes), snapshots both,
 * attacks, stops the session and compares.
 */
#include <arpa/inet.h>
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bwrap_harness.h"

static struct h h;
static char *W, *H, *O; /* workspace, fake home, a directory outside every bind */
static char *snap_w, *snap_h, *snap_o;
static ccsb_spec *spec;

static void put(const char *dir, const char *name, const char *content)
{
    char *p = h_join(dir, name);
    h_write(p, content);
    free(p);
}

static void mk(const char *dir, const char *name)
{
    char *p = h_join(dir, name);
    ck_assert_int_eq(mkdir(p, 0755), 0);
    free(p);
}

static void setup(void)
{
    h_init(&h);
    W = h_tmpdir("esc-w");
    H = h_tmpdir("esc-h");
    O = h_tmpdir("esc-o");
    put(W, "code.c", "int x;\n");
    mk(H, ".ssh");
    put(H, ".ssh/id_rsa", "-----BEGIN OPENSSH PRIVATE KEY----- SECRET\n");
    put(H, ".bashrc", "# the user's bashrc\n");
    put(O, "target", "host file\n");
    setenv("HOME", H, 1);
    ck_assert_int_eq(ccsb_spec_new(&spec), 0);
    ccsb_spec_set_backend(spec, CCSB_BACKEND_NATIVE);
    ccsb_spec_add_bind_mount(spec, W, NULL, 0);
    ccsb_spec_set_guest_workdir(spec, W);
}

static void snapshot(void)
{
    snap_w = h_snapshot(W);
    snap_h = h_snapshot(H);
    snap_o = h_snapshot(O);
}

/* Stops the session, then every byte of W, H and O must be as before. */
static void assert_host_unchanged(void)
{
    ccsb_session_destroy(h.s);
    h.s = NULL;
    char *w = h_snapshot(W), *hh = h_snapshot(H), *o = h_snapshot(O);
    ck_assert_msg(strcmp(w, snap_w) == 0, "workspace changed:\nbefore:\n%s\nafter:\n%s", snap_w, w);
    ck_assert_msg(strcmp(hh, snap_h) == 0, "home changed:\nbefore:\n%s\nafter:\n%s", snap_h, hh);
    ck_assert_msg(strcmp(o, snap_o) == 0, "outside dir changed");
    free(w);
    free(hh);
    free(o);
}

static void teardown(void)
{
    h_done(&h);
    ccsb_spec_free(spec);
    h_rmtree(W);
    h_rmtree(H);
    h_rmtree(O);
    free(W);
    free(H);
    free(O);
    free(snap_w);
    free(snap_h);
    free(snap_o);
    snap_w = snap_h = snap_o = NULL;
}

static void launch(void)
{
    int r = h_launch(&h, spec);
    ck_assert_msg(r == 0, "launch: %s: %s", ccsb_strerror(r), h_errmsg(&h));
}

static struct h_exec *runf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static struct h_exec *runf(const char *fmt, ...)
{
    char cmd[8192];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cmd, sizeof cmd, fmt, ap);
    va_end(ap);
    return h_run(&h, cmd);
}

/* ---- filesystem ---------------------------------------------------------------- */

START_TEST(write_outside_the_binds)
{
    snapshot();
    launch();
    struct h_exec *x = runf("for p in /etc/ccsb-esc /usr/ccsb-esc /usr/bin/ccsb-esc %s/ccsb-esc "
                            "%s/ccsb-esc /ccsb-esc; do echo x > $p && echo WROTE $p; done; "
                            "echo y >> %s/.bashrc && echo WROTE-RC",
                            H, O, H);
    ck_assert_ptr_null(strstr(x->out, "WROTE"));
    ck_assert(!h_exists("/etc/ccsb-esc") && !h_exists("/usr/ccsb-esc") &&
              !h_exists("/usr/bin/ccsb-esc") && !h_exists("/ccsb-esc"));
    assert_host_unchanged();
}
END_TEST

START_TEST(read_ssh_keys_with_home_bound)
{
    ccsb_spec_add_bind_mount(spec, H, NULL, 0); /* the whole home, read-write */
    mk(H, ".config");
    mk(H, ".config/gh");
    put(H, ".config/gh/hosts.yml", "oauth_token: SECRET\n");
    snapshot();
    launch();
    struct h_exec *x = runf("cat %s/.ssh/id_rsa; cat %s/.ssh/id_*; ls -la %s/.ssh; "
                            "cp -r %s/.ssh /tmp/k && cat /tmp/k/*; tar cf - %s 2>/dev/null | "
                            "grep -a -c SECRET",
                            H, H, H, H, H);
    ck_assert_ptr_null(strstr(x->out, "SECRET"));
    ck_assert_msg(strstr(x->out, "id_rsa") == NULL, "the key's name is visible: %s", x->out);
    ck_assert(h_saw_violation(&h, "permission-denied", ".ssh"));
    /* moving the parent away (so that a token the host writes later lands
     * in a directory the sandbox made) does not work either */
    x = runf("cat %s/.config/gh/hosts.yml; mv %s/.config %s/c2 && echo MOVED; "
             "mv %s/.config/gh %s/.config/g2 && echo MOVED2; rm -rf %s/.config && echo GONE",
             H, H, H, H, H, H);
    ck_assert_ptr_null(strstr(x->out, "SECRET"));
    ck_assert_ptr_null(strstr(x->out, "MOVED"));
    ck_assert_ptr_null(strstr(x->out, "GONE"));
    /* and it cannot be replaced either (mask is read-only) */
    x = runf("echo evil > %s/.ssh/id_rsa; echo evil > %s/.ssh/authorized_keys", H, H);
    ck_assert_int_ne(x->code, 0);
    assert_host_unchanged();
}
END_TEST

START_TEST(write_through_symlink_out_of_bind)
{
    char *planted = h_join(W, "planted");
    char *target = h_join(O, "target");
    ck_assert_int_eq(symlink(target, planted), 0);
    snapshot();
    launch();
    struct h_exec *x = runf("echo evil > planted; echo evil >> planted; "
                            "ln -s %s made && echo evil > made; "
                            "ln -s /etc/passwd pw && echo evil >> pw", target);
    char *c = h_read(target);
    ck_assert_str_eq(c, "host file\n");
    free(c);
    ck_assert_ptr_nonnull(x);
    /* the links it made are plain files of the workspace; the targets are intact */
    char *made = h_join(W, "made"), *pw = h_join(W, "pw");
    unlink(made);
    unlink(pw);
    free(made);
    free(pw);
    assert_host_unchanged();
    free(planted);
    free(target);
}
END_TEST

START_TEST(hard_link_to_outside_and_protected)
{
    put(W, ".gitconfig", "[user]\n  name = real\n");
    snapshot();
    launch();
    struct h_exec *x = runf("ln %s/target h1 && echo LINKED1; ln /etc/passwd h2 && echo LINKED2; "
                            "ln .gitconfig h3 && echo LINKED3 && echo evil >> h3",
                            O);
    ck_assert_ptr_null(strstr(x->out, "LINKED"));
    assert_host_unchanged();
}
END_TEST

START_TEST(protected_paths)
{
    put(W, "secret.txt", "keep me\n");
    mk(W, "conf");
    put(W, "conf/app.yml", "a: 1\n");
    char *p1 = h_join(W, "secret.txt"), *p2 = h_join(W, "conf");
    ccsb_spec_add_protected_path(spec, p1);
    ccsb_spec_add_protected_path(spec, p2);
    snapshot();
    launch();
    struct h_exec *x = h_run(&h, "echo x >> secret.txt; echo x > secret.txt; rm -f secret.txt; "
                                 "mv secret.txt s2; echo x > conf/app.yml; touch conf/new; "
                                 "rm -rf conf; mv conf c2; chmod 777 secret.txt; "
                                 "truncate -s 0 secret.txt; umount secret.txt; umount -l conf; "
                                 "ls secret.txt conf/app.yml");
    ck_assert_ptr_nonnull(strstr(x->out, "secret.txt"));
    ck_assert(h_saw_violation(&h, "file-write", NULL));
    free(p1);
    free(p2);
    assert_host_unchanged();
}
END_TEST

START_TEST(missing_mandatory_paths)
{
    snapshot();
    launch();
    struct h_exec *x = h_run(&h,
        "echo evil > .bashrc; echo evil >> .profile; echo evil > .zshrc; "
        "mkdir -p .git/hooks; echo evil > .git/hooks/pre-commit; git init -q . ; "
        "mkdir -p .vscode; echo '{}' > .vscode/settings.json; echo x > .vscode/x; "
        "echo '{}' > .mcp.json; mkdir -p .claude/commands; echo x > .claude/settings.json; "
        "echo '[core]' > .gitconfig; rm -rf .bashrc .git .vscode; mv .bashrc b2; "
        "cat .bashrc .mcp.json; ls .vscode .git");
    ck_assert_ptr_null(strstr(x->out, "evil"));
    ck_assert_ptr_null(strstr(x->out, "{}"));
    /* after the stop nothing of it is left on the host, not even the placeholders */
    assert_host_unchanged();
}
END_TEST

START_TEST(rename_parent_of_protected)
{
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "cd %s && git init -q . && printf '#!/bin/sh\\nexit 0\\n' > "
                              ".git/hooks/pre-commit && chmod +x .git/hooks/pre-commit",
             W);
    ck_assert_int_eq(system(cmd), 0);
    mk(W, "deep");
    mk(W, "deep/er");
    put(W, "deep/er/secret", "s\n");
    char *prot = h_join(W, "deep/er/secret");
    ccsb_spec_add_protected_path(spec, prot);
    snapshot();
    launch();
    struct h_exec *x = h_run(&h,
        "mv .git .git2 && mkdir -p .git/hooks && echo evil > .git/hooks/pre-commit && echo R1; "
        "mv .git/hooks .git/h2 && mkdir .git/hooks && echo evil > .git/hooks/pre-commit && echo R2; "
        "rm -rf .git/hooks && echo R3; "
        "mv deep d2 && mkdir -p deep/er && echo evil > deep/er/secret && echo R4; "
        "mv deep/er deep/e2 && mkdir deep/er && echo evil > deep/er/secret && echo R5; "
        "rmdir deep/er; rm -rf deep && echo R6; "
        "echo evil > .git/hooks/pre-commit; echo evil >> .git/config; cat deep/er/secret");
    for (const char *r = "R1\0R2\0R3\0R4\0R5\0R6\0"; *r; r += 3)
        ck_assert_msg(strstr(x->out, r) == NULL, "%s succeeded: %s", r, x->out);
    ck_assert_ptr_nonnull(strstr(x->out, "s\n"));
    free(prot);
    /* git's own objects may change in a writable repo; only the protected parts must not */
    ccsb_session_destroy(h.s);
    h.s = NULL;
    char *hook = h_join(W, ".git/hooks/pre-commit"), *c = h_read(hook);
    ck_assert_str_eq(c, "#!/bin/sh\nexit 0\n");
    free(c);
    free(hook);
    char *sec = h_join(W, "deep/er/secret");
    c = h_read(sec);
    ck_assert_str_eq(c, "s\n");
    free(c);
    free(sec);
    char *w = h_snapshot(W);
    ck_assert_str_eq(w, snap_w);
    free(w);
}
END_TEST

START_TEST(review_mode_writes)
{
    ccsb_spec_set_mode(spec, CCSB_MODE_REVIEW);
    snapshot();
    launch();
    struct h_exec *x = h_run(&h, "touch f; echo x > code.c; rm code.c; mkdir d; ln -s x l; "
                                 "mv code.c c2; chmod 777 code.c; cat code.c");
    ck_assert_str_eq(x->out, "int x;\n");
    assert_host_unchanged();
}
END_TEST

START_TEST(device_node)
{
    snapshot();
    launch();
    struct h_exec *x = h_run(&h, "mknod dev0 c 1 3 && echo MADE; mknod /tmp/d c 1 3 && echo MADE2; "
                                 "mknod fifo p && rm fifo && echo FIFO_OK");
    ck_assert_ptr_null(strstr(x->out, "MADE"));
    assert_host_unchanged();
}
END_TEST

START_TEST(setuid_copy_gains_nothing)
{
    snapshot();
    launch();
    struct h_exec *x = h_run(&h,
        "cp /bin/cat ./c && chmod u+s,g+s ./c; "
        "./c /proc/self/status | grep -E '^(CapEff|CapPrm|NoNewPrivs)'; "
        "for b in /usr/bin/su /bin/su /usr/bin/passwd /usr/bin/newgrp; do "
        "  [ -u $b ] && $b -c true root </dev/null >/dev/null 2>&1 && echo GAINED $b; done; "
        "rm -f ./c");
    ck_assert_ptr_nonnull(strstr(x->out, "CapEff:\t0000000000000000"));
    ck_assert_ptr_nonnull(strstr(x->out, "CapPrm:\t0000000000000000"));
    ck_assert_ptr_nonnull(strstr(x->out, "NoNewPrivs:\t1"));
    ck_assert_ptr_null(strstr(x->out, "GAINED"));
    assert_host_unchanged();
}
END_TEST

START_TEST(mounts_and_namespaces)
{
    snapshot();
    launch();
    struct h_exec *x = h_run(&h,
        "mount -t tmpfs none /tmp 2>/dev/null && echo MOUNTED; "
        "unshare -U true 2>/dev/null && echo USERNS; unshare -Ur true 2>/dev/null && echo USERNS2; "
        "echo 9 > /proc/sys/user/max_user_namespaces 2>/dev/null && echo RAISED; "
        "echo LIMIT=$(cat /proc/sys/user/max_user_namespaces); "
        "mount --bind / /tmp 2>/dev/null && echo BOUND; "
        "umount /etc/shadow 2>/dev/null && echo UNMOUNTED; umount -l /etc/shadow 2>/dev/null && "
        "echo UNMOUNTED; cat /etc/shadow >/dev/null 2>&1 && echo SHADOW; "
        "grep -E '^Cap(Eff|Prm|Bnd|Amb)' /proc/self/status | grep -v '0000000000000000$' && echo CAPS; "
        "echo 1 > /proc/sys/kernel/sysrq 2>/dev/null && echo SYSCTL; "
        "mount -o remount,bind,rw /proc/sys 2>/dev/null && echo SYSRW; "
        "awk '$5 == \"/proc/sys\" { print \"PROCSYS=\" $6 }' /proc/self/mountinfo; "
        "ls /sys 2>/dev/null | head -1; test -e /run/user && echo RUNUSER; "
        "cat /proc/1/environ >/dev/null 2>&1 && echo ENVIRON; "
        "ls -l /proc/1/fd/ 2>/dev/null | grep -c socket; "
        "python3 -c 'import ctypes; l=ctypes.CDLL(None); print(\"TRACED\" if l.ptrace(16, 1, 0, 0) == 0 else \"no\")'");
    const char *bad[] = {"MOUNTED", "USERNS", "BOUND", "SYSCTL", "RUNUSER", "ENVIRON", "TRACED",
                         "SHADOW", "CAPS", "RAISED", "SYSRW"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        ck_assert_msg(strstr(x->out, bad[i]) == NULL, "%s: %s", bad[i], x->out);
    /* Nested user namespaces are refused by the kernel's own limit too, not
     * only by the seccomp filter (which refused the unshare calls above).
     * For a uid-0 host ccsb-init sets it in the sandbox's own namespace;
     * otherwise bwrap's --disable-userns sets it one level up, where it
     * cannot be read from inside. */
    if (getuid() == 0)
        ck_assert_msg(strstr(x->out, "LIMIT=0\n") != NULL, "%s", x->out);
    /* ccsb-init makes /proc/sys writable for that one write (uid 0 host):
     * back to read-only before anything else runs, since a root host's
     * sandbox is uid 0 on the host to the sysctls that check only that
     * (redteam-sandbox's host_sysctls_writable tries every one of them). */
    ck_assert_msg(strstr(x->out, "PROCSYS=ro") != NULL, "%s", x->out);
    assert_host_unchanged();
}
END_TEST

/* ---- processes ---------------------------------------------------------------------------- */

START_TEST(host_processes_invisible_and_unsignalable)
{
    pid_t victim = fork();
    ck_assert_int_ge(victim, 0);
    if (victim == 0) {
        execlp("sleep", "sleep", "77.5", (char *)NULL);
        _exit(127);
    }
    snapshot();
    launch();
    struct h_exec *x = runf("test -e /proc/%d && echo SEEN; ls /proc | grep -c '^[0-9]'; "
                            "kill -TERM %d 2>/dev/null && echo SIGNALLED; "
                            "kill -KILL -1 2>/dev/null; pgrep -f 'slee[p] 77.5' && echo FOUND; true",
                            (int)victim, (int)victim);
    ck_assert_ptr_null(strstr(x->out, "SEEN"));
    ck_assert_ptr_null(strstr(x->out, "SIGNALLED"));
    ck_assert_ptr_null(strstr(x->out, "FOUND"));
    ck_assert_int_eq(kill(victim, 0), 0); /* still alive */
    ck_assert_int_eq(waitpid(victim, NULL, WNOHANG), 0);
    kill(victim, SIGKILL);
    waitpid(victim, NULL, 0);
    assert_host_unchanged();
}
END_TEST

START_TEST(no_direct_network)
{
    /* A host service on loopback: the sandbox must not reach it directly. */
    int ls = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t al = sizeof a;
    ck_assert_int_eq(bind(ls, (struct sockaddr *)&a, sizeof a), 0);
    ck_assert_int_eq(listen(ls, 8), 0);
    ck_assert_int_eq(getsockname(ls, (struct sockaddr *)&a, &al), 0);
    int port = ntohs(a.sin_port);
    int ls6 = socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    struct sockaddr_in6 a6 = {.sin6_family = AF_INET6, .sin6_addr = IN6ADDR_LOOPBACK_INIT};
    socklen_t al6 = sizeof a6;
    int port6 = 0;
    if (ls6 >= 0 && bind(ls6, (struct sockaddr *)&a6, sizeof a6) == 0 && listen(ls6, 8) == 0 &&
        getsockname(ls6, (struct sockaddr *)&a6, &al6) == 0)
        port6 = ntohs(a6.sin6_port);
    snapshot();
    launch();
    struct h_exec *x = runf(
        "python3 - <<'EOF'\n"
        "import socket\n"
        "for fam, addr in ((socket.AF_INET, ('127.0.0.1', %d)), (socket.AF_INET6, ('::1', %d))):\n"
        "    s = socket.socket(fam, socket.SOCK_STREAM); s.settimeout(2)\n"
        "    try:\n"
        "        s.connect(addr); print('CONNECTED', addr)\n"
        "    except OSError as e:\n"
        "        print('refused', e.errno)\n"
        "print(open('/proc/net/route').read().count('\\n'))\n"
        "EOF",
        port, port6 ? port6 : 1);
    ck_assert_ptr_null(strstr(x->out, "CONNECTED"));
    /* no route at all: only the header line of the routing table */
    ck_assert_ptr_nonnull(strstr(x->out, "\n1\n"));
    ck_assert_int_lt(accept(ls, NULL, NULL), 0);
    if (port6)
        ck_assert_int_lt(accept(ls6, NULL, NULL), 0);
    close(ls);
    if (ls6 >= 0)
        close(ls6);
    assert_host_unchanged();
}
END_TEST

START_TEST(nothing_left_after_stop)
{
    snapshot();
    launch();
    struct h_exec *x = h_run(&h, "(sleep 1000.5 &) ; setsid sleep 1000.5 & "
                                 "nohup sh -c 'trap \"\" TERM HUP; sleep 1000.5' >/dev/null 2>&1 & "
                                 "echo ok");
    ck_assert_int_eq(x->code, 0);
    h_pump(&h, 100);
    ck_assert_int_ge(h_count_procs("sleep 1000.5"), 3);
    ck_assert_int_eq(ccsb_session_stop(h.s), 0);
    ck_assert_int_eq(h_wait_no_procs("sleep 1000.5", 2000), 0);
    assert_host_unchanged();
}
END_TEST

START_TEST(nothing_left_after_host_sigkill)
{
    ccsb_spec_add_bind_mount(spec, H, NULL, 0); /* the home too, read-write */
    snapshot();
    int ready[2];
    ck_assert_int_eq(pipe(ready), 0);
    h_done(&h); /* the host is a separate process, started clean */
    pid_t host = fork();
    ck_assert_int_ge(host, 0);
    if (host == 0) {
        close(ready[0]);
        static struct h hh; /* large: not on the stack */
        h_init(&hh);
        if (h_launch(&hh, spec) != 0)
            _exit(3);
        struct h_exec *x = h_run(&hh, "sleep 1000.75 >/dev/null 2>&1 & echo up");
        if (x->code != 0)
            _exit(4);
        uint64_t id = h_start(&hh, "sleep 1000.75", 0, 0); /* one still running, too */
        (void)id;
        h_pump(&hh, 100);
        if (write(ready[1], "r", 1) != 1)
            _exit(5);
        for (;;)
            pause();
    }
    close(ready[1]);
    char c;
    ck_assert_int_eq(read(ready[0], &c, 1), 1);
    close(ready[0]);
    ck_assert_int_ge(h_count_procs("sleep 1000.75"), 2);
    /* The missing .bashrc in the workspace is held by the seccomp guard:
     * nothing is made on the host for it. */
    char *ws_rc = h_join(W, ".bashrc");
    ck_assert_int_eq(h_exists(ws_rc), 0);
    free(ws_rc);
    /* A missing secret in the bound home still gets a placeholder (it is
     * masked, so a key the host writes there meanwhile stays hidden). */
    char *rc = h_join(H, ".aws");
    ck_assert_int_eq(h_exists(rc), 1); /* the placeholder mount point, while it runs */
    ck_assert_int_eq(kill(host, SIGKILL), 0);
    ck_assert_int_eq(waitpid(host, NULL, 0), host);
    ck_assert_int_eq(h_wait_no_procs("sleep 1000.75", 2000), 0);
    /* the janitor removes the placeholders right after the sandbox is gone */
    double end = h_now() + 2.0;
    while (h_exists(rc) && h_now() < end)
        usleep(20000);
    ck_assert_int_eq(h_exists(rc), 0);
    free(rc);
    /* ... and every other one with it: the janitor works through the
     * list, so give the whole home the same 2 s to come back. */
    end = h_now() + 2.0;
    for (;;) {
        char *w = h_snapshot(H);
        int same = strcmp(w, snap_h) == 0;
        free(w);
        if (same || h_now() >= end)
            break;
        usleep(20000);
    }
    h_init(&h);
    assert_host_unchanged();
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("escape");
    TCase *tc = h_tcase("attempts", 120, setup, teardown);
    tcase_add_test(tc, write_outside_the_binds);
    tcase_add_test(tc, read_ssh_keys_with_home_bound);
    tcase_add_test(tc, write_through_symlink_out_of_bind);
    tcase_add_test(tc, hard_link_to_outside_and_protected);
    tcase_add_test(tc, protected_paths);
    tcase_add_test(tc, missing_mandatory_paths);
    tcase_add_test(tc, rename_parent_of_protected);
    tcase_add_test(tc, review_mode_writes);
    tcase_add_test(tc, device_node);
    tcase_add_test(tc, setuid_copy_gains_nothing);
    tcase_add_test(tc, mounts_and_namespaces);
    tcase_add_test(tc, host_processes_invisible_and_unsignalable);
    tcase_add_test(tc, no_direct_network);
    tcase_add_test(tc, nothing_left_after_stop);
    tcase_add_test(tc, nothing_left_after_host_sigkill);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return h_run_suite(suite());
}
