/*
 * Red team: attacks from inside a real bubblewrap session that go beyond
 * the escape suite. Each test is an attempt that must fail; a test that
 * fails here is an escape that works today (see the report for each).
 *
 * Every test has a fake home H, bound read-write at the same path (an
 * agent working in a user's home is the case that matters most for the
 * secret set), and the host's HOME points at it for the policy. Runs as
 * root and (through run_as_user.sh) as an unprivileged user.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stddef.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <unistd.h>

#include "bwrap_harness.h"

static struct h h;
static char *H; /* the fake home, bound read-write */
static char *snap_h;
static ccsb_spec *spec;

static void setup(void)
{
    h_init(&h);
    H = h_tmpdir("rt-home");
    char *ssh = h_join(H, ".ssh");
    ck_assert_int_eq(mkdir(ssh, 0700), 0);
    free(ssh);
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
    free(snap_h);
    H = snap_h = NULL;
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
    struct h_exec *x = h_run(&h, cmd);
    ck_assert_ptr_nonnull(x);
    return x;
}

/* Stops the session; H must be byte for byte as before the attack. */
static void assert_home_unchanged(void)
{
    ccsb_session_destroy(h.s);
    h.s = NULL;
    h_assert_unchanged(H, snap_h);
}

/* ---- the secret set, when an entry does not exist yet -------------------------- */

/*
 * ~/.aws/config with credential_process, ~/.kube/config with an exec
 * plugin, ~/.npmrc with script-shell, ~/.docker/config.json with a
 * credential helper: each makes the user's next aws/kubectl/npm/docker run
 * execute a program of the agent's choice on the host, outside the sandbox.
 * All of them are in the read-denied secret set; when they exist they are
 * masked (and so unwritable), but when they are missing nothing covers them.
 */
START_TEST(plant_missing_secret_files)
{
    snap_h = h_snapshot(H);
    launch();
    struct h_exec *x = runf(
        "cd %s; "
        "mkdir -p .aws && printf '[default]\\ncredential_process = /bin/sh -c id\\n' > .aws/config "
        "&& echo PLANTED-aws; "
        "mkdir -p .kube && echo 'users: [{name: x, user: {exec: {command: /bin/id}}}]' > "
        ".kube/config && echo PLANTED-kube; "
        "echo 'script-shell=/bin/id' > .npmrc && echo PLANTED-npmrc; "
        "mkdir -p .docker && echo '{\"credsStore\": \"evil\"}' > .docker/config.json && "
        "echo PLANTED-docker; "
        "echo 'machine example.com login x password y' > .netrc && echo PLANTED-netrc; "
        "mkdir -p .gnupg && echo 'pinentry-program /bin/id' > .gnupg/gpg-agent.conf && "
        "echo PLANTED-gnupg; "
        "mkdir -p .m2 && echo '<settings/>' > .m2/settings.xml && echo PLANTED-m2",
        H);
    ck_assert_msg(strstr(x->out, "PLANTED") == NULL, "secret-set files were created: %s", x->out);
    assert_home_unchanged();
}
END_TEST

/*
 * A warm session lives for hours. The user runs `aws configure` or
 * `ssh-keygen` on the host meanwhile: the new secret must stay unreadable
 * inside, as it would have been had it existed at launch.
 */
START_TEST(read_secret_created_after_launch)
{
    launch();
    struct h_exec *x = runf("echo warm");
    ck_assert_int_eq(x->code, 0);

    char *aws = h_join(H, ".aws"), *cred = h_join(H, ".aws/credentials");
    char *key = h_join(H, ".ssh/id_ed25519");
    /* like `mkdir -p`: a fixed launch may hold a placeholder there */
    ck_assert_msg(mkdir(aws, 0700) == 0 || errno == EEXIST, "mkdir %s: %s", aws, strerror(errno));
    h_write(cred, "aws_secret_access_key = LATE-AWS-SECRET\n");
    /* .ssh existed at launch; a key added later is covered by its mask */
    h_write(key, "LATE-SSH-SECRET\n");

    x = runf("cat %s/.aws/credentials %s/.ssh/id_ed25519; ls -la %s/.aws", H, H, H);
    ck_assert_msg(strstr(x->out, "LATE-SSH-SECRET") == NULL, "ssh key read: %s", x->out);
    ck_assert_msg(strstr(x->out, "LATE-AWS-SECRET") == NULL,
                  "a secret created on the host after launch is readable inside: %s", x->out);
    free(aws);
    free(cred);
    free(key);
}
END_TEST

/*
 * Two sessions share the home (parallel agents, one-shot runs). A missing
 * secret gets a placeholder from the first session to launch; the second
 * finds it already there and masks it like any existing directory.
 * Removing a mount point on the host detaches every mount over it in every
 * other namespace, so whichever session ends first must not remove it
 * while the other still mounts over it: the one left plants the secret-set
 * files, and reads a secret the host writes there afterwards. Loop 0: the
 * maker ends first; loop 1: the one that found it does.
 */
START_TEST(placeholder_removed_under_another_session)
{
    snap_h = h_snapshot(H);
    launch();
    static struct h h2; /* (large: not on the stack) */
    h_init(&h2);
    int r = h_launch(&h2, spec);
    ck_assert_msg(r == 0, "second launch: %s: %s", ccsb_strerror(r), h_errmsg(&h2));
    struct h *left = _i == 0 ? &h2 : &h;
    struct h *gone = _i == 0 ? &h : &h2;
    ccsb_session_destroy(gone->s);
    gone->s = NULL;

    char cmd[2048];
    snprintf(cmd, sizeof cmd,
             "cd %s; "
             "mkdir -p .aws && printf '[default]\\ncredential_process = /bin/sh -c id\\n' > "
             ".aws/config && echo PLANTED-aws; "
             "mkdir -p .kube && echo 'users: []' > .kube/config && echo PLANTED-kube; "
             "mkdir -p .docker && echo '{}' > .docker/config.json && echo PLANTED-docker; "
             "true",
             H);
    struct h_exec *x = h_run(left, cmd);
    ck_assert_msg(strstr(x->out, "PLANTED") == NULL, "secret-set files were created: %s",
                  x->out);
    /* a secret the host writes now stays unreadable inside */
    char *aws = h_join(H, ".aws"), *cred = h_join(H, ".aws/credentials");
    ck_assert_msg(mkdir(aws, 0700) == 0 || errno == EEXIST, "mkdir %s: %s", aws, strerror(errno));
    h_write(cred, "aws_secret_access_key = LATE-AWS-SECRET\n");
    x = h_run(left, "cat ~/.aws/credentials 2>&1");
    ck_assert_msg(strstr(x->out, "LATE-AWS-SECRET") == NULL,
                  "a secret written on the host is readable inside: %s", x->out);
    ck_assert_int_eq(unlink(cred), 0);
    free(aws);
    free(cred);
    h_done(&h2);
    /* and the last one out removed every placeholder */
    assert_home_unchanged();
}
END_TEST

/* ---- the host replaces a protected file while a session runs ---------------------- */

/* Every way a command can write an existing file by name, each printing
 * WROTE-<how> when it worked: the guard must refuse all of them once the
 * bind is gone (core.fsmonitor in ~/.gitconfig runs a command on the host). */
#define WRITE_ROUTES(name) \
    "f=" name "; printf '[core]\\n\\tfsmonitor = id\\n' >> $f && echo WROTE-append; " \
    "python3 - $f <<'EOF'\n" \
    "import os, sys\n" \
    "f = sys.argv[1]\n" \
    "def attempt(how, fn):\n" \
    "    try:\n" \
    "        fn(); print('WROTE-' + how)\n" \
    "    except OSError as e:\n" \
    "        print('refused', how, e.errno)\n" \
    "def wr(flags):\n" \
    "    fd = os.open(f, flags); os.write(fd, b'[alias]\\n\\tx = !id\\n'); os.close(fd)\n" \
    "attempt('rdwr', lambda: wr(os.O_RDWR | os.O_APPEND))\n" \
    "attempt('wronly', lambda: wr(os.O_WRONLY | os.O_APPEND))\n" \
    "attempt('trunc', lambda: os.close(os.open(f, os.O_RDONLY | os.O_TRUNC)))\n" \
    "attempt('truncate', lambda: os.truncate(f, 0))\n" \
    "def reopen():\n" \
    "    r = os.open(f, os.O_RDONLY)\n" \
    "    try:\n" \
    "        fd = os.open('/proc/self/fd/%%d' %% r, os.O_WRONLY | os.O_APPEND)\n" \
    "        os.write(fd, b'[alias]\\n\\ty = !id\\n'); os.close(fd)\n" \
    "    finally:\n" \
    "        os.close(r)\n" \
    "attempt('reopen', reopen)\n" \
    "def rename_onto():\n" \
    "    with open(f + '.new', 'w') as n:\n" \
    "        n.write('[alias]\\n\\tz = !id\\n')\n" \
    "    os.rename(f + '.new', f)\n" \
    "attempt('rename', rename_onto)\n" \
    "def replace():\n" \
    "    os.unlink(f)\n" \
    "    with open(f, 'w') as n:\n" \
    "        n.write('[alias]\\n\\tz = !id\\n')\n" \
    "attempt('recreate', replace)\n" \
    "EOF\n"

static void assert_not_written(const struct h_exec *x, const char *path, const char *keep)
{
    char *now = h_read(path);
    /* each route ran and was refused (a broken script would pass too) */
    static const char *const routes[] = {"rdwr", "wronly", "trunc", "truncate",
                                         "reopen", "rename", "recreate"};
    for (size_t i = 0; i < sizeof routes / sizeof routes[0]; i++) {
        char want[32];
        snprintf(want, sizeof want, "refused %s ", routes[i]);
        ck_assert_msg(strstr(x->out, want), "route %s did not run or was not refused: %s%s",
                      routes[i], x->out, x->err);
    }
    ck_assert_msg(strstr(x->out, "WROTE-") == NULL,
                  "a protected file replaced on the host became writable inside: %s%s",
                  x->out, x->err);
    /* unlinking it is not refused (not a write; see docs/guard.md), but
     * nothing may have been written in its place */
    ck_assert_msg(!now || (strstr(now, "fsmonitor") == NULL && strstr(now, "alias") == NULL &&
                           strstr(now, keep) != NULL),
                  "the host's file was changed: %s", now);
    free(now);
}

/* ~/.gitconfig, replaced on the host (git config --global, an editor). */
START_TEST(host_renames_over_protected_file)
{
    char *cfg = h_join(H, ".gitconfig");
    h_write(cfg, "[user]\n\tname = host\n");
    launch();
    struct h_exec *x = runf("echo warm");
    ck_assert_int_eq(x->code, 0);
    h_host_saves(cfg, "[user]\n\tname = host2\n");
    x = runf("cd %s; " WRITE_ROUTES(".gitconfig"), H);
    assert_not_written(x, cfg, "host2");
    /* the session goes on, and files next to it stay writable */
    x = runf("cd %s; echo ok > notes.txt && cat notes.txt", H);
    ck_assert_msg(x->code == 0 && strstr(x->out, "ok"), "%s%s", x->out, x->err);
    free(cfg);
}
END_TEST

/* The workspace's .git/config, replaced by the host's own git (git config,
 * git remote add, git push -u all save it through config.lock). */
START_TEST(host_git_rewrites_repo_config)
{
    char *cmd = NULL, *cfg = h_join(H, ".git/config");
    ck_assert_int_ge(asprintf(&cmd, "git init -q %s && git -C %s config user.name host", H, H),
                     0);
    ck_assert_int_eq(system(cmd), 0);
    free(cmd);
    launch();
    struct h_exec *x = runf("cd %s && git status --short >/dev/null && echo warm", H);
    ck_assert_msg(x->code == 0, "%s%s", x->out, x->err);
    ck_assert_int_ge(asprintf(&cmd, "git -C %s config user.name host2", H), 0);
    ck_assert_int_eq(system(cmd), 0);
    free(cmd);
    x = runf("cd %s; git config core.fsmonitor id && echo WROTE-git-config; " WRITE_ROUTES(
                 ".git/config"),
             H);
    assert_not_written(x, cfg, "host2");
    /* git keeps working in the repository */
    x = runf("cd %s && echo a > a.txt && git add a.txt && "
             "git -c user.email=a@b -c user.name=a commit -qm one && git log --oneline | wc -l",
             H);
    ck_assert_msg(x->code == 0 && strstr(x->out, "1"), "%s%s", x->out, x->err);
    free(cfg);
}
END_TEST

/*
 * A second name for a protected file: a hard link in the writable home
 * (left by an earlier session that linked the host's ~/.gitconfig.lock
 * before git renamed it into place, or made on the host). The read-only
 * bind covers one name only; the guard must refuse writing the inode
 * through any other name.
 */
START_TEST(write_protected_file_through_hard_link)
{
    char *cfg = h_join(H, ".gitconfig"), *other = h_join(H, "stash");
    h_write(cfg, "[user]\n\tname = host\n");
    ck_assert_int_eq(link(cfg, other), 0);
    launch();
    struct h_exec *x = runf("cd %s; printf '[core]\\n\\tfsmonitor = id\\n' >> stash && "
                            "echo WROTE-append; true > stash && echo WROTE-trunc; "
                            "truncate -s 0 stash && echo WROTE-truncate; "
                            "ln stash stash2 && echo >> stash2 && echo WROTE-link2; "
                            "echo ok > notes.txt && cat notes.txt",
                            H);
    ck_assert_msg(strstr(x->out, "WROTE-") == NULL,
                  "a protected file was written through a hard link: %s%s", x->out, x->err);
    ck_assert_msg(strstr(x->out, "ok") != NULL, "code %d sig %d: %s%s", x->code, x->sig, x->out, x->err);
    char *now = h_read(cfg);
    ck_assert_msg(now && strcmp(now, "[user]\n\tname = host\n") == 0,
                  "the host's file was changed: %s", now ? now : "(gone)");
    free(now);
    free(cfg);
    free(other);
}
END_TEST

/*
 * git saves ~/.gitconfig (and .git/config) by writing <name>.lock, in the
 * same writable directory, and renaming it into place. While the lock file
 * exists the sandbox can hold it open for writing or give it a second
 * name, and after the rename either is the protected file. The host's
 * steps are done one at a time here so that the race is won every time.
 */
START_TEST(hold_host_lock_file_across_rename)
{
    char *cfg = h_join(H, ".gitconfig"), *lock = h_join(H, ".gitconfig.lock");
    h_write(cfg, "[user]\n\tname = host\n");
    launch();
    struct h_exec *x = runf("echo warm");
    ck_assert_int_eq(x->code, 0);
    h_write(lock, "[user]\n\tname = host2\n"); /* git: lock taken, written */
    x = runf("cd %s; ln .gitconfig.lock stash && echo LINKED; "
             "sh -c 'exec 9>>.gitconfig.lock || exit; echo held > held; "
             "n=0; while [ ! -e go ] && [ $n -lt 200 ]; do sleep 0.05; n=$((n+1)); done; "
             "echo \"[alias] h = !id\" >&9 && echo WROTE-held > done' "
             ">/dev/null 2>&1 </dev/null & "
             "n=0; while [ ! -e held ] && [ $n -lt 20 ]; do sleep 0.05; n=$((n+1)); done; "
             "[ -e held ] && echo HELD; echo started",
             H);
    ck_assert_msg(strstr(x->out, "started"), "%s%s", x->out, x->err);
    ck_assert_int_eq(rename(lock, cfg), 0); /* git: commit the lock */
    x = runf("cd %s; [ -e stash ] && echo '[core] fsmonitor = id' >> stash && echo WROTE-link; "
             "touch go; n=0; while [ ! -e done ] && [ $n -lt 40 ]; do sleep 0.05; n=$((n+1)); "
             "done; cat done 2>/dev/null; true",
             H);
    char *now = h_read(cfg);
    ck_assert_msg(now && strstr(now, "host2") && !strstr(now, "fsmonitor") &&
                      !strstr(now, "alias"),
                  "the host's file was changed through its lock file: %s (%s%s)",
                  now ? now : "(gone)", x->out, x->err);
    ck_assert_msg(strstr(x->out, "WROTE-") == NULL, "%s%s", x->out, x->err);
    free(now);
    free(cfg);
    free(lock);
}
END_TEST

/*
 * Not an attack: with protected paths, opens for writing are answered by
 * the guard, and /dev/tty must still mean the caller's controlling
 * terminal when none of its own fds is that terminal (a prompt from a
 * child whose stdio is redirected: ssh, gpg, sudo, less, fzf do this).
 */
START_TEST(dev_tty_with_stdio_redirected)
{
    launch();
    uint64_t id = h_start(&h,
                          "sh -c 'exec </dev/null >/dev/null 2>&1; "
                          "printf TTY-REDIR-OK >/dev/tty; "
                          "python3 -c \"import os; os.write(os.open(\\\"/dev/tty\\\", "
                          "os.O_WRONLY), b\\\" TTY-WRONLY-OK\\\")\"'",
                          24, 80);
    ck_assert_int_eq(h_wait(&h, id, 10000), 0);
    h_pump(&h, 50);
    struct h_exec *x = h_exec(&h, id);
    ck_assert_msg(strstr(x->out, "TTY-REDIR-OK") && strstr(x->out, "TTY-WRONLY-OK"),
                  "/dev/tty without a terminal fd: code %d: %s", x->code, x->out);
}
END_TEST

/*
 * The host replaces a masked secret file the way `git credential-store`,
 * `docker login` and friends save: a new file renamed over the old one,
 * which detaches the mask in the sandbox. ccsb-init sees its mount table
 * change and ends the sandbox before the next command can run; the
 * deterministic version of this attack (a command already waiting) is
 * test_redteam_detach.c.
 */
START_TEST(host_renames_over_masked_secret)
{
    char *cred = h_join(H, ".git-credentials");
    h_write(cred, "https://u:OLD-TOKEN@example.com\n");
    launch();
    struct h_exec *x = runf("cat ~/.git-credentials; echo warm");
    ck_assert_int_eq(x->code, 0);
    ck_assert_ptr_null(strstr(x->out, "OLD-TOKEN"));
    h_host_saves(cred, "https://u:NEW-TOKEN@example.com\n");
    ccsb_exec_req *req;
    ck_assert_int_eq(ccsb_exec_req_new(&req), 0);
    const char *argv[] = {"sh", "-c", "cat ~/.git-credentials 2>&1"};
    ck_assert_int_eq(ccsb_exec_req_set_argv(req, argv, 3), 0);
    uint64_t id = 0;
    int r = ccsb_exec(h.s, req, &id);
    ccsb_exec_req_free(req);
    if (r == 0) { /* taken before the stop: it must not have read it */
        struct h_exec *rec = &h.execs[h.n++];
        memset(rec, 0, sizeof *rec);
        rec->id = id;
        ck_assert_int_eq(h_wait(&h, id, 30000), 0);
        ck_assert_msg(strstr(rec->out, "NEW-TOKEN") == NULL,
                      "a secret file replaced on the host is readable inside: %s", rec->out);
    }
    double end = h_now() + 5;
    while (ccsb_session_state(h.s) != CCSB_STATE_ERROR && h_now() < end)
        h_pump(&h, 10);
    ck_assert_int_eq(ccsb_session_state(h.s), CCSB_STATE_ERROR);
    ck_assert_msg(h_saw_violation(&h, "mount-detached", ".git-credentials"),
                  "no mount-detached violation; the session ended with: %s",
                  ccsb_session_error(h.s));
    free(cred);
}
END_TEST

/* ---- /dev ------------------------------------------------------------------------ */

/*
 * ccsb-init makes /dev from the host's /dev, which bwrap binds whole at
 * /run/ccsb/hostdev for it (one bind instead of one per node), and then
 * takes that away. Nothing of the host's /dev but the six nodes may be
 * reachable: not its shm (a file the host put there), not its ptys, not
 * a disk or /dev/kmsg, under any path.
 */
START_TEST(host_dev_unreachable)
{
    char marker[64];
    snprintf(marker, sizeof marker, "/dev/shm/ccsb-rt-%d", (int)getpid());
    h_write(marker, "HOST-SHM\n");
    launch();
    struct h_exec *x = runf(
        "ls -A /run/ccsb/hostdev 2>&1 | head -5; echo LS-DONE; "
        "cat /run/ccsb/hostdev/shm/%s /dev/shm/%s 2>/dev/null; "
        "for d in /run/ccsb/hostdev/kmsg /run/ccsb/hostdev/pts/0 /run/ccsb/hostdev/null "
        "/dev/kmsg /dev/mem /dev/sda /dev/vda; do test -e $d && echo REACHED $d; done; "
        "ls /dev | tr '\\n' ' '; echo; "
        "python3 -c 'import os; m, s = os.openpty(); os.write(m, b\"x\\n\"); "
        "print(\"PTY\", os.ttyname(s), os.read(s, 2))'",
        strrchr(marker, '/') + 1, strrchr(marker, '/') + 1);
    unlink(marker);
    ck_assert_msg(strstr(x->out, "HOST-SHM") == NULL && strstr(x->out, "REACHED") == NULL,
                  "the host's /dev is reachable: %s%s", x->out, x->err);
    /* ls printed nothing but its marker (empty, or not even listable) */
    ck_assert_msg(strncmp(x->out, "LS-DONE", 7) == 0 || strstr(x->out, "Permission denied"),
                  "the host's /dev is listable: %s", x->out);
    const char *want[] = {"full", "null", "ptmx", "pts", "random", "shm", "stderr", "stdin",
                          "stdout", "tty", "urandom", "zero", "fd"};
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++)
        ck_assert_msg(strstr(x->out, want[i]), "/dev lacks %s: %s", want[i], x->out);
    ck_assert_msg(strstr(x->out, "PTY /dev/pts/0 b'x") != NULL, "no pty: %s%s", x->out, x->err);
}
END_TEST

/* ---- /proc/sys ------------------------------------------------------------------ */

/*
 * When the host process runs as root (CI, containers), the sandbox's uid 0
 * is the host's uid 0 without capabilities. Sysctl files are checked by
 * owner only (test_perm: euid == GLOBAL_ROOT_UID gets the owner's bits), so
 * unless /proc/sys is read-only the command can set kernel.core_pattern to
 * "|/path/in/workspace" and have the kernel run it as root on the host at
 * the next crash, or switch off fs.protected_*, kernel.randomize_va_space...
 * Opening for writing is the whole permission check; nothing is written.
 */
START_TEST(host_sysctls_writable)
{
    launch();
    struct h_exec *x = runf(
        "python3 - <<'EOF'\n"
        "import os\n"
        "# settings that belong to the sandbox's own namespaces (net, ipc, uts, pid, user)\n"
        "own = ('/proc/sys/net/', '/proc/sys/user/', '/proc/sys/fs/mqueue/')\n"
        "own_kernel = {'auto_msgmni', 'msgmax', 'msgmnb', 'msgmni', 'sem', 'shm_rmid_forced',\n"
        "              'shmall', 'shmmax', 'shmmni', 'ns_last_pid', 'pid_max', 'hostname',\n"
        "              'domainname'}\n"
        "hits = []\n"
        "for root, dirs, files in os.walk('/proc/sys'):\n"
        "    for f in files:\n"
        "        p = os.path.join(root, f)\n"
        "        if p.startswith(own) or (root == '/proc/sys/kernel' and f in own_kernel):\n"
        "            continue\n"
        "        try:\n"
        "            os.close(os.open(p, os.O_WRONLY | os.O_NONBLOCK)); hits.append(p)\n"
        "        except OSError:\n"
        "            pass\n"
        "for p in ('/proc/sysrq-trigger',):\n"
        "    try:\n"
        "        os.close(os.open(p, os.O_WRONLY)); hits.append(p)\n"
        "    except OSError:\n"
        "        pass\n"
        "print('WRITABLE %%d %%s' %% (len(hits), ' '.join(hits[:8])) if hits else 'none writable')\n"
        "EOF");
    ck_assert_msg(strstr(x->out, "none writable") != NULL,
                  "host kernel settings are writable from the sandbox: %s%s", x->out, x->err);
}
END_TEST

/* ---- the kernel keyring ---------------------------------------------------------- */

/*
 * bwrap --new-session makes a new process session, not a new session
 * keyring: every sandbox process inherits the host process's session
 * keyring and "possesses" its keys (Kerberos KEYRING: caches, ecryptfs and
 * cifs credentials, keys a host program parked there). The test process
 * joins a fresh anonymous session keyring first so nothing of the real
 * machine is touched.
 */
START_TEST(read_host_session_keyring)
{
    ck_assert_int_ge(syscall(SYS_keyctl, 1 /* KEYCTL_JOIN_SESSION_KEYRING */, NULL), 0);
    char secret[64];
    snprintf(secret, sizeof secret, "KEYRING-SECRET-%d", (int)getpid());
    long kid = syscall(SYS_add_key, "user", "ccsb-redteam", secret, strlen(secret),
                       -3 /* KEY_SPEC_SESSION_KEYRING */);
    ck_assert_int_ge(kid, 0);
    h_done(&h); /* the context's loop thread must start after the join */
    h_init(&h);
    launch();
    struct h_exec *x = runf(
        "python3 - <<'EOF'\n"
        "import ctypes, os\n"
        "nr = {'x86_64': 250, 'aarch64': 219, 'riscv64': 219}.get(os.uname().machine)\n"
        "libc = ctypes.CDLL(None, use_errno=True); libc.syscall.restype = ctypes.c_long\n"
        "kid = libc.syscall(nr, 10, ctypes.c_long(-3), b'user', b'ccsb-redteam', 0)  # SEARCH\n"
        "if kid < 0:\n"
        "    print('search failed', os.strerror(ctypes.get_errno()))\n"
        "else:\n"
        "    buf = ctypes.create_string_buffer(128)\n"
        "    n = libc.syscall(nr, 11, ctypes.c_long(kid), buf, 128)  # READ\n"
        "    print('READ', buf.raw[:n].decode() if n > 0 else os.strerror(ctypes.get_errno()))\n"
        "EOF");
    ck_assert_msg(strstr(x->out, secret) == NULL,
                  "the host's session keyring is readable inside: %s%s", x->out, x->err);
}
END_TEST

/* ---- ccsb-init and the control channel (blocked today) ---------------------------- */

/*
 * The command tries to reach PID 1's control socket or to take PID 1 over:
 * its fds, its root and cwd, ptrace, every catchable signal. Then the
 * session must still serve execs and report them truthfully.
 */
START_TEST(take_over_init)
{
    snap_h = h_snapshot(H);
    launch();
    struct h_exec *x = runf(
        "ls /proc/self/fd | tr '\\n' ' '; echo; "
        "for f in 0 1 2 3 4 5; do [ -e /proc/1/fd/$f ] && : > /proc/1/fd/$f 2>/dev/null && "
        "echo INIT_FD_$f; done; "
        "ls /proc/1/root/ >/dev/null 2>&1 && echo INIT_ROOT; "
        "ls /proc/1/cwd/ >/dev/null 2>&1 && echo INIT_CWD; "
        "cat /proc/1/environ >/dev/null 2>&1 && echo INIT_ENV; "
        "cat /proc/1/mem >/dev/null 2>&1 && echo INIT_MEM; "
        "python3 -c 'import ctypes; l=ctypes.CDLL(None); "
        "print(\"TRACED\" if l.ptrace(16, 1, 0, 0) == 0 else \"no-trace\")'; "
        "python3 -c 'print(open(\"/proc/net/unix\").read().count(\"\\n\") - 1, "
        "\"unix sockets visible\")'; "
        "for s in HUP INT QUIT USR1 USR2 TERM PIPE ALRM CHLD CONT TSTP SEGV; do kill -$s 1; done; "
        "echo signalled");
    ck_assert_msg(strstr(x->out, "INIT_") == NULL, "reached ccsb-init: %s", x->out);
    ck_assert_msg(strstr(x->out, "TRACED") == NULL, "ptrace of ccsb-init: %s", x->out);
    /* only stdio: the listing's own directory fd is the 4th */
    ck_assert_msg(strncmp(x->out, "0 1 2 3 \n", 9) == 0, "inherited fds: %s", x->out);
    ck_assert_msg(strstr(x->out, "0 unix sockets visible") != NULL, "%s", x->out);
    ck_assert_ptr_nonnull(strstr(x->out, "signalled"));
    h_pump(&h, 200);
    x = runf("exit 7");
    ck_assert_int_eq(x->code, 7);
    /* a pty exec gets no more than a pipe exec */
    uint64_t id = h_start(&h, "ls /proc/self/fd | tr '\\n' ' '", 24, 80);
    ck_assert_int_eq(h_wait(&h, id, 10000), 0);
    ck_assert_msg(strstr(h_exec(&h, id)->out, "0 1 2 3 ") != NULL &&
                      strstr(h_exec(&h, id)->out, " 4 ") == NULL,
                  "pty exec fds: %s", h_exec(&h, id)->out);
    assert_home_unchanged();
}
END_TEST

/*
 * The spare: ccsb-init forks the next exec's process ahead of its request.
 * It waits holding the host's control socket and the listener of the
 * guard filter it already loaded; whoever held that listener could answer
 * the next command's trapped calls itself. The command goes for it (and
 * for anything else in here that is not its own) by every route, then
 * kills it: the next exec must still run, guarded.
 */
START_TEST(take_over_spare)
{
    launch();
    struct h_exec *x = runf(
        "python3 - <<'EOF'\n"
        "import ctypes, os, signal\n"
        "libc = ctypes.CDLL(None, use_errno=True)\n"
        "mine = {os.getpid()}\n"
        "p = os.getpid()\n"
        "while p > 1:\n"
        "    p = int([l for l in open('/proc/%%d/status' %% p) if l.startswith('PPid:')][0].split()[1])\n"
        "    mine.add(p)\n"
        "others = [int(d) for d in os.listdir('/proc') if d.isdigit() and int(d) not in mine]\n"
        "print('OTHERS', len(others))\n"
        "for p in others:\n"
        "    for what, f in (('FD3', lambda: os.readlink('/proc/%%d/fd/3' %% p)),\n"
        "                    ('MEM', lambda: open('/proc/%%d/mem' %% p, 'rb').close()),\n"
        "                    ('ROOT', lambda: os.listdir('/proc/%%d/root/' %% p)),\n"
        "                    ('ENV', lambda: open('/proc/%%d/environ' %% p, 'rb').read(1))):\n"
        "        try:\n"
        "            f(); print('GOT', what, p)\n"
        "        except OSError:\n"
        "            pass\n"
        "    if libc.ptrace(16, p, 0, 0) == 0 or libc.ptrace(0x4206, p, 0, 0) == 0:\n"
        "        print('GOT TRACED', p)\n"
        "    pfd = libc.syscall(434, p, 0)\n"
        "    if pfd >= 0:\n"
        "        for n in range(3, 16):\n"
        "            if libc.syscall(438, pfd, n, 0) >= 0:\n"
        "                print('GOT PIDFD_GETFD', p, n)\n"
        "        os.close(pfd)\n"
        "for p in others:\n"
        "    try:\n"
        "        os.kill(p, signal.SIGKILL)\n"
        "    except OSError:\n"
        "        pass\n"
        "print('done')\n"
        "EOF");
    /* (listing fd numbers is allowed to a uid-0 sandbox: it says nothing) */
    ck_assert_msg(strstr(x->out, "GOT") == NULL, "reached another process: %s", x->out);
    ck_assert_msg(strstr(x->out, "done") != NULL, "%s%s", x->out, x->err);
    /* at least the spare (and ccsb-init) were there to attack */
    ck_assert_msg(strstr(x->out, "OTHERS 0\n") == NULL, "nothing to attack: %s", x->out);
    h_pump(&h, 200);
    /* the spare is gone: the next exec forks and loads the filter itself
     * (.bashrc is a missing mandatory deny-write path of the workspace) */
    x = runf("echo k > .bashrc 2>/dev/null && echo PLANTED; echo ok > fine.txt && cat fine.txt");
    ck_assert_msg(strstr(x->out, "PLANTED") == NULL, "%s", x->out);
    ck_assert_msg(strstr(x->out, "ok") != NULL, "code %d sig %d: %s%s", x->code, x->sig, x->out, x->err);
}
END_TEST

/* ---- the host's unix sockets ------------------------------------------------------- */

/* Abstract unix sockets belong to the network namespace: the host's are out of reach. */
START_TEST(host_abstract_unix_socket)
{
    int ls = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    ck_assert_int_ge(ls, 0);
    struct sockaddr_un a = {.sun_family = AF_UNIX};
    char name[64];
    int n = snprintf(name, sizeof name, "ccsb-redteam-%d", (int)getpid());
    memcpy(a.sun_path + 1, name, (size_t)n);
    socklen_t al = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + (size_t)n);
    ck_assert_int_eq(bind(ls, (struct sockaddr *)&a, al), 0);
    ck_assert_int_eq(listen(ls, 4), 0);
    launch();
    /* Refused either at socket() (the guard's static filter denies AF_UNIX)
     * or at connect() (another network namespace): both count. */
    struct h_exec *x = runf("python3 -c 'import socket\n"
                            "try:\n s=socket.socket(socket.AF_UNIX); s.settimeout(2);"
                            " s.connect(\"\\0%s\"); print(\"CONNECTED\")\n"
                            "except OSError as e: print(\"refused\", e.errno)'",
                            name);
    ck_assert_msg(strstr(x->out, "CONNECTED") == NULL, "reached the host: %s", x->out);
    ck_assert_ptr_nonnull(strstr(x->out, "refused"));
    ck_assert_int_lt(accept(ls, NULL, NULL), 0);
    close(ls);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("redteam-sandbox");
    TCase *tc = h_tcase("attempts", 120, setup, teardown);
    tcase_add_test(tc, plant_missing_secret_files);
    tcase_add_test(tc, host_renames_over_protected_file);
    tcase_add_test(tc, host_git_rewrites_repo_config);
    tcase_add_test(tc, write_protected_file_through_hard_link);
    tcase_add_test(tc, hold_host_lock_file_across_rename);
    tcase_add_test(tc, dev_tty_with_stdio_redirected);
    tcase_add_test(tc, host_renames_over_masked_secret);
    tcase_add_test(tc, read_secret_created_after_launch);
    tcase_add_loop_test(tc, placeholder_removed_under_another_session, 0, 2);
    tcase_add_test(tc, host_dev_unreachable);
    tcase_add_test(tc, host_sysctls_writable);
    tcase_add_test(tc, read_host_session_keyring);
    tcase_add_test(tc, take_over_init);
    tcase_add_test(tc, take_over_spare);
    tcase_add_test(tc, host_abstract_unix_socket);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return h_run_suite(suite());
}
