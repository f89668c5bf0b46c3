/* The child side of one exec inside the sandbox (see exec_child_run). */
#include "init.h"

#include "backend/init_proto.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

extern char **environ;

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
 * Loads the guard filter and hands its listener to the host over the
 * control socket (still open here), so that the host answers every trapped
 * call of the command. The listener is closed before the command runs.
 * Any failure ends the child: the command never runs unguarded.
 */
static void load_guard(const struct exec_child *c)
{
    const struct init_guard *g = c->guard;
    if (!g || !g->len)
        return;
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
        die(126, "prctl(PR_SET_NO_NEW_PRIVS)", NULL, errno);
    struct sock_fprog prog = {g->len, g->insns};
    long lfd = syscall(__NR_seccomp, SECCOMP_SET_MODE_FILTER, g->flags, &prog);
    if (lfd < 0)
        die(126, "loading the guard's seccomp filter", NULL, errno);
    if (!(g->flags & SECCOMP_FILTER_FLAG_NEW_LISTENER))
        return;
    struct init_msg m;
    init_msg_init(&m, INIT_MSG_GUARD, c->id);
    int fd = (int)lfd;
    int r = init_send(INIT_CTRL_FD, &m, &fd, 1);
    if (r < 0)
        die(126, "handing the guard listener to the host", NULL, -r);
    close(fd);
}

void exec_child_run(const struct exec_child *c)
{
    /* The command starts with a clean slate: ccsb-init blocks SIGCHLD and
     * ignores SIGPIPE, and ignored signals would survive exec. */
    struct sigaction dfl = {.sa_handler = SIG_DFL};
    for (int sig = 1; sig < NSIG; sig++)
        if (sig != SIGKILL && sig != SIGSTOP)
            sigaction(sig, &dfl, NULL);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);

    /* Own session and process group: kill_exec signals exactly this tree
     * (and a pty becomes its controlling terminal). */
    if (setsid() < 0)
        die(126, "setsid", NULL, errno);
    load_guard(c);
    if (c->slave_name ? take_pty(c->slave_name) : take_stdio(c->fds))
        die(126, c->slave_name ? "pty" : "stdio", c->slave_name, errno);
    if (close_range(3, ~0u, 0) < 0)
        die(126, "close_range", NULL, errno);

    apply_limit(RLIMIT_AS, c->opts->rlimit_as, "RLIMIT_AS");
    apply_limit(RLIMIT_NPROC, c->opts->rlimit_nproc, "RLIMIT_NPROC");

    if (chdir(c->data->cwd) < 0)
        die(126, "cannot change directory to", c->data->cwd, errno);
    /* Nothing the command runs can gain privileges (setuid bits, file caps). */
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
        die(126, "prctl(PR_SET_NO_NEW_PRIVS)", NULL, errno);

    /* execvp searches the PATH of environ, which must be the command's. */
    environ = c->data->envp;
    execvp(c->data->argv[0], c->data->argv);
    int e = errno;
    die(e == ENOENT ? 127 : 126, "cannot run", c->data->argv[0], e);
}
