/*
 * The child side of one exec inside the sandbox: forked on request
 * (exec_child_run), or forked ahead of the request as the spare
 * (exec_spare_run), which does the costly part of an exec's start, loading
 * the guard's seccomp filter, while nothing waits for it.
 */
#include "init.h"

#include "backend/init_proto.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "linux_api.h"

__attribute__((noreturn)) static void die(int code, const char *what, const char *arg, int err)
{
    dprintf(STDERR_FILENO, "ccsb-init: %s%s%s: %s\n", what, arg ? " " : "", arg ? arg : "",
            strerror(err));
    _exit(code);
}

/* Puts fd on target, even when some source fds sit on 0..2 themselves. */
static int take_stdio(const int *fds)
{
    int high[3];
    for (int i = 0; i < 3; i++) {
        high[i] = fcntl(fds[i], F_DUPFD_CLOEXEC, 3);
        if (high[i] < 0)
            return -1;
    }
    for (int i = 0; i < 3; i++)
        if (dup2(high[i], i) < 0)
            return -1;
    return 0;
}

static int take_pty(const char *name)
{
    int fd = open(name, O_RDWR);
    if (fd < 0)
        return -1;
    if (ioctl(fd, TIOCSCTTY, 0) < 0)
        return -1;
    for (int i = 0; i < 3; i++)
        if (dup2(fd, i) < 0)
            return -1;
    return 0;
}

static void apply_limit(int resource, uint64_t value, const char *name)
{
    if (!value)
        return;
    struct rlimit rl = {.rlim_cur = value, .rlim_max = value};
    if (setrlimit(resource, &rl) < 0)
        die(126, "setrlimit", name, errno);
}

/*
 * The command starts with a clean slate: ccsb-init blocks SIGCHLD and
 * ignores SIGPIPE, and ignored signals would survive exec. Then its own
 * session and process group: kill_exec signals exactly this tree (and a
 * pty becomes its controlling terminal).
 */
static void clean_slate(void)
{
    struct sigaction dfl = {.sa_handler = SIG_DFL};
    for (int sig = 1; sig < NSIG; sig++)
        if (sig != SIGKILL && sig != SIGSTOP)
            sigaction(sig, &dfl, NULL);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    if (setsid() < 0)
        die(126, "setsid", NULL, errno);
}

/*
 * Loads the guard filter. Returns its listener (close-on-exec), or -1 when
 * the filter has none (or there is no filter). Any failure ends the child:
 * the command never runs unguarded.
 */
static int load_guard(const struct init_guard *g)
{
    if (!g || !g->len)
        return -1;
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
        die(126, "prctl(PR_SET_NO_NEW_PRIVS)", NULL, errno);
    struct sock_fprog prog = {g->len, g->insns};
    long lfd = syscall(__NR_seccomp, SECCOMP_SET_MODE_FILTER, g->flags, &prog);
    if (lfd < 0)
        die(126, "loading the guard's seccomp filter", NULL, errno);
    return (g->flags & SECCOMP_FILTER_FLAG_NEW_LISTENER) ? (int)lfd : -1;
}

/* Hands the listener to the host over the control socket (still open
 * here), tagged with the exec's id, so that the host answers every
 * trapped call of the command. Closed before the command runs. */
static void hand_listener(uint64_t id, int lfd)
{
    if (lfd < 0)
        return;
    struct init_msg m;
    init_msg_init(&m, INIT_MSG_GUARD, id);
    int r = init_send(INIT_CTRL_FD, &m, &lfd, 1);
    if (r < 0)
        die(126, "handing the guard listener to the host", NULL, -r);
    close(lfd);
}

/* 1 once the host said go on the gate, 0 when it closed it instead. */
static int gate_open(int fd)
{
    char go;
    ssize_t n;
    do
        n = read(fd, &go, 1);
    while (n < 0 && errno == EINTR);
    close(fd);
    return n == 1;
}

/*
 * execvp as POSIX has it, the same whichever C library ccsb-init is built
 * with: the command's own PATH (unset: the library's default, as in the
 * none backend), and a file the kernel will not execute (ENOEXEC: a script
 * without "#!") run by /bin/sh, which musl's execvp does not do. Returns
 * only on failure, with errno set.
 */
static void exec_command(char *const *argv, char *const *envp)
{
    const char *file = argv[0];
    if (!*file) {
        errno = ENOENT;
        return;
    }
    const char *path = NULL;
    for (char *const *e = envp; *e && !path; e++)
        if (strncmp(*e, "PATH=", 5) == 0)
            path = *e + 5;
    if (strchr(file, '/'))
        path = "";
    else if (!path)
        path = "/usr/local/bin:/usr/bin:/bin";
    int seen_eacces = 0;
    for (const char *p = path;; p++) {
        const char *end = strchrnul(p, ':');
        char full[PATH_MAX];
        /* (an empty entry is the working directory; a name with a slash
         * has the one empty entry) */
        int n = end == p ? snprintf(full, sizeof full, "%s", file)
                         : snprintf(full, sizeof full, "%.*s/%s", (int)(end - p), p, file);
        if (n < 0 || (size_t)n >= sizeof full) {
            errno = ENAMETOOLONG;
        } else {
            execve(full, argv, envp);
            if (errno == ENOEXEC) {
                size_t argc = 0;
                while (argv[argc])
                    argc++;
                char **sh = calloc(argc + 2, sizeof *sh);
                if (!sh)
                    return;
                sh[0] = "/bin/sh";
                sh[1] = full;
                memcpy(sh + 2, argv + 1, argc * sizeof *sh); /* (its NULL too) */
                execve("/bin/sh", sh, envp);
                free(sh);
                return;
            }
        }
        if (errno == EACCES)
            seen_eacces = 1;
        else if (errno != ENOENT && errno != ENOTDIR && errno != ENAMETOOLONG)
            return;
        if (!*end)
            break;
        p = end;
    }
    errno = seen_eacces ? EACCES : ENOENT;
}

/* The rest of the way to the command, once it is known. */
__attribute__((noreturn)) static void run_command(const struct exec_child *c, int lfd)
{
    hand_listener(c->id, lfd);
    if (c->slave_name ? take_pty(c->slave_name) : take_stdio(c->fds))
        die(126, c->slave_name ? "pty" : "stdio", c->slave_name, errno);
    /* Sent ahead of the host's attach: a launch that failed after READY
     * closes the gate, and the command never runs. */
    if (c->gate >= 0 && !gate_open(c->gate))
        _exit(0);
    if (close_range(3, ~0u, 0) < 0)
        die(126, "close_range", NULL, errno);

    apply_limit(RLIMIT_AS, c->opts->rlimit_as, "RLIMIT_AS");
    apply_limit(RLIMIT_NPROC, c->opts->rlimit_nproc, "RLIMIT_NPROC");

    if (chdir(c->data->cwd) < 0)
        die(126, "cannot change directory to", c->data->cwd, errno);
    /* Nothing the command runs can gain privileges (setuid bits, file caps). */
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
        die(126, "prctl(PR_SET_NO_NEW_PRIVS)", NULL, errno);

    exec_command(c->data->argv, c->data->envp);
    int e = errno;
    die(e == ENOENT ? 127 : 126, "cannot run", c->data->argv[0], e);
}

void exec_child_run(const struct exec_child *c)
{
    clean_slate();
    run_command(c, load_guard(c->guard));
}

void exec_spare_run(const struct init_guard *g, const struct init_opts *opts, int sock)
{
    clean_slate();
    int lfd = load_guard(g);
    /* Waiting here for a while: hold nothing of ccsb-init's but the control
     * socket (for the listener) and our own socket to it. */
    int keep[3] = {INIT_CTRL_FD, sock, lfd};
    if (close_fds_except(keep, 3) < 0)
        die(126, "close_range", NULL, errno);

    struct init_msg m;
    int fds[INIT_MAX_FDS];
    size_t nfds = INIT_MAX_FDS;
    int r = init_recv(sock, &m, fds, &nfds);
    if (r <= 0)
        _exit(0); /* ccsb-init retired us, or is gone */
    close(sock);
    int pty = (m.flags & INIT_EXEC_PTY) != 0;
    int gated = (m.flags & INIT_EXEC_GATE) != 0;
    size_t want = (pty ? 1u : 4u) + (gated ? 1u : 0u);
    struct init_exec_data d;
    /* ccsb-init checked the request and the data already (a sealed memfd:
     * what it read is what we read). */
    if (m.type != INIT_MSG_EXEC || nfds != want || (pty && !m.text[0]))
        die(126, "bad request for the spare", NULL, EPROTO);
    r = init_exec_data_unpack(fds[0], &d);
    if (r < 0)
        die(126, "exec request data", NULL, -r);
    close(fds[0]);
    struct exec_child c = {
        .id = m.id,
        .guard = g,
        .data = &d,
        .opts = opts,
        .fds = {pty ? -1 : fds[1], pty ? -1 : fds[2], pty ? -1 : fds[3]},
        .slave_name = pty ? m.text : NULL,
        .gate = gated ? fds[want - 1] : -1,
    };
    run_command(&c, lfd);
}
