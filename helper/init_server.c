/*
 * `ccsb-init init`: PID 1 of a bubblewrap sandbox.
 *
 * It opens the two loopback listeners for the egress proxies inside the
 * sandbox's network namespace and hands them to the host, says READY, then
 * serves the host's requests on the control socket: fork each command into
 * its own session, report the exit of its main process, signal its group,
 * stop or continue everything. It reaps every orphan (it is PID 1), and it
 * ends the sandbox when the host's end of the control socket goes away,
 * or when a mount it made for the policy detaches (init_watch.c).
 *
 * Nothing in the sandbox can make it do anything: it listens only to the
 * control socket, it is not dumpable (no ptrace, no /proc/1/fd from the
 * sandbox), and signals from inside the PID namespace do not reach PID 1
 * except SIGCHLD, which only triggers a reap.
 */
#include "init.h"

#include "backend/init_proto.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <linux/keyctl.h>
#include <termios.h>
#include <unistd.h>

#include "linux_api.h"

struct iexec {
    uint64_t id;
    pid_t pid; /* main process; also its process group and session */
    int end;   /* INIT_EXEC_END: the sandbox ends with it */
};

struct server {
    int ctrl;
    int sigfd;
    struct init_opts opts;
    struct init_guard guard;
    struct iexec *execs;
    size_t n, cap;
    pid_t spare;    /* the next exec's process, forked ahead (0: none) */
    int spare_sock; /* our end of its socket (-1: none) */
    int pair[2];    /* the host's channel for the next spare (-1: none yet) */
    struct init_watch watch; /* the mounts made for the policy */
};

__attribute__((noreturn)) static void end_sandbox(int code)
{
    /* PID 1: -1 is everything in our PID namespace but us. */
    kill(-1, SIGKILL);
    _exit(code);
}

static void send_or_die(struct server *sv, const struct init_msg *m, const int *fds, size_t n)
{
    int r = init_send(sv->ctrl, m, fds, n);
    if (r < 0)
        end_sandbox(r == -EPIPE || r == -ECONNRESET ? 0 : 1);
}

static void send_failed(struct server *sv, uint64_t id, int err, const char *what)
{
    struct init_msg m;
    init_msg_init(&m, INIT_MSG_FAILED, id);
    m.a = err;
    char text[INIT_TEXT_MAX];
    snprintf(text, sizeof text, "%s: %s", what, strerror(err));
    init_msg_text(&m, text);
    send_or_die(sv, &m, NULL, 0);
}

static struct iexec *find_exec(struct server *sv, uint64_t id)
{
    for (size_t i = 0; i < sv->n; i++)
        if (sv->execs[i].id == id)
            return &sv->execs[i];
    return NULL;
}

/* Makes room for one more exec, so a started one can always be tracked. */
static int reserve_exec(struct server *sv)
{
    if (sv->n < sv->cap)
        return 0;
    size_t cap = sv->cap ? sv->cap * 2 : 16;
    struct iexec *v = realloc(sv->execs, cap * sizeof *v);
    if (!v)
        return -ENOMEM;
    sv->execs = v;
    sv->cap = cap;
    return 0;
}

static void close_fds(int *fds, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (fds[i] >= 0)
            close(fds[i]);
}

/* A new pty inside the sandbox's own devpts, so `tty` names a real node. */
static int open_pty(unsigned rows, unsigned cols, char *name, size_t namelen)
{
    int m = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
    if (m < 0)
        return -errno;
    struct winsize ws = {.ws_row = (unsigned short)rows, .ws_col = (unsigned short)cols};
    /* (ptsname_r returns its error: musl's leaves errno alone) */
    int e = grantpt(m) < 0 || unlockpt(m) < 0 ? errno : ptsname_r(m, name, namelen);
    if (!e && rows && cols && ioctl(m, TIOCSWINSZ, &ws) < 0)
        e = errno;
    if (e) {
        close(m);
        return -e;
    }
    return m;
}

/*
 * Forks the next exec's process ahead of its request (exec_spare_run): the
 * guard filter's load, the costly part of an exec's start, happens while
 * nothing waits for it. Without a spare an exec simply forks.
 */
static void make_spare(struct server *sv)
{
    if (sv->spare_sock >= 0 || sv->pair[0] < 0)
        return;
    pid_t pid = fork();
    if (pid < 0)
        return; /* the pair waits for the next try */
    if (pid == 0) {
        close(sv->pair[0]);
        exec_spare_run(&sv->guard, &sv->opts, sv->pair[1]);
    }
    close(sv->pair[1]);
    sv->spare = pid;
    sv->spare_sock = sv->pair[0];
    sv->pair[0] = sv->pair[1] = -1;
}

/* Keeps a channel the host sent for the next spare (one in reserve). The
 * socket pair comes from the host, not from here: made here, it would show
 * in the sandbox's /proc/net/unix. */
static void take_pair(struct server *sv, const int *fds)
{
    if (sv->pair[0] >= 0) {
        close(fds[0]);
        close(fds[1]);
        return;
    }
    sv->pair[0] = fds[0];
    sv->pair[1] = fds[1];
}

/* Forgets the spare (it died, or took its request). */
static void drop_spare(struct server *sv)
{
    if (sv->spare_sock >= 0)
        close(sv->spare_sock);
    sv->spare_sock = -1;
    sv->spare = 0;
}

/* Gives the request to the spare: returns its pid, or -1 (then fork). The
 * fds stay ours to close either way. */
static pid_t use_spare(struct server *sv, const struct init_msg *m, const int *fds, size_t nfds,
                       const char *slave)
{
    if (sv->spare_sock < 0)
        return -1;
    struct init_msg a = *m;
    init_msg_text(&a, slave ? slave : "");
    /* A spare that died meanwhile (a sandbox process may kill it) has
     * closed its end: the send fails and this exec forks. One that dies
     * after the send is this exec's process dying: its exit is reported. */
    int r = init_send(sv->spare_sock, &a, fds, nfds);
    pid_t pid = sv->spare;
    drop_spare(sv);
    return r < 0 ? -1 : pid;
}

static void handle_exec(struct server *sv, const struct init_msg *m, int *fds, size_t nfds)
{
    int pty = (m->flags & INIT_EXEC_PTY) != 0;
    int gated = (m->flags & INIT_EXEC_GATE) != 0;
    size_t want = (pty ? 1u : 4u) + (gated ? 1u : 0u);
    if ((nfds != want && nfds != want + 2) || find_exec(sv, m->id)) {
        close_fds(fds, nfds);
        send_failed(sv, m->id, EPROTO, "bad exec request");
        return;
    }
    if (nfds == want + 2)
        take_pair(sv, fds + want);
    nfds = want;
    struct init_exec_data d;
    int r = init_exec_data_unpack(fds[0], &d);
    if (r < 0) {
        close_fds(fds, nfds);
        send_failed(sv, m->id, -r, "exec request data");
        return;
    }

    char slave[64] = "";
    int master = -1;
    if (pty) {
        master = open_pty((unsigned)m->a, (unsigned)m->b, slave, sizeof slave);
        if (master < 0) {
            init_exec_data_free(&d);
            close_fds(fds, nfds);
            send_failed(sv, m->id, -master, "pty");
            return;
        }
    }
    if (reserve_exec(sv) < 0) {
        r = ENOMEM;
        goto fail;
    }

    pid_t pid = use_spare(sv, m, fds, nfds, pty ? slave : NULL);
    if (pid < 0)
        pid = fork();
    if (pid < 0) {
        r = errno;
        goto fail;
    }
    if (pid == 0) {
        struct exec_child c = {
            .id = m->id,
            .guard = &sv->guard,
            .data = &d,
            .opts = &sv->opts,
            .fds = {pty ? -1 : fds[1], pty ? -1 : fds[2], pty ? -1 : fds[3]},
            .slave_name = pty ? slave : NULL,
            .gate = gated ? fds[want - 1] : -1,
        };
        exec_child_run(&c);
    }
    init_exec_data_free(&d);
    close_fds(fds, nfds);
    sv->execs[sv->n++] =
        (struct iexec){.id = m->id, .pid = pid, .end = (m->flags & INIT_EXEC_END) != 0};

    struct init_msg rep;
    init_msg_init(&rep, INIT_MSG_STARTED, m->id);
    rep.a = pid;
    send_or_die(sv, &rep, pty ? &master : NULL, pty ? 1 : 0);
    if (master >= 0)
        close(master);
    /* For the next one; none when the sandbox ends with this command (a
     * one-shot run): it would only take a CPU from the command's start
     * and be killed at the end. A later exec forks. */
    if (!(m->flags & INIT_EXEC_END))
        make_spare(sv);
    return;

fail:
    init_exec_data_free(&d);
    close_fds(fds, nfds);
    if (master >= 0)
        close(master);
    send_failed(sv, m->id, r, "fork");
}

static void reply(struct server *sv, uint64_t id, int err)
{
    struct init_msg m;
    init_msg_init(&m, INIT_MSG_REPLY, id);
    m.a = err;
    send_or_die(sv, &m, NULL, 0);
}

/* kill(-1) from PID 1 reaches every other process of the sandbox. */
static int signal_all(int sig)
{
    if (kill(-1, sig) < 0 && errno != ESRCH)
        return errno;
    return 0;
}

/* Reads the guard program once; every later exec loads it. Set once only:
 * nothing may swap the filter of a running session. */
static int take_guard(struct server *sv, const struct init_msg *m, int fd)
{
    if (sv->guard.len)
        return EEXIST;
    struct stat st;
    if (fstat(fd, &st) < 0)
        return errno;
    size_t insn = 8; /* sizeof(struct sock_filter) */
    if (st.st_size <= 0 || (size_t)st.st_size % insn ||
        (size_t)st.st_size / insn > INIT_GUARD_MAX_INSNS)
        return EINVAL;
    void *buf = malloc((size_t)st.st_size);
    if (!buf)
        return ENOMEM;
    size_t done = 0;
    while (done < (size_t)st.st_size) {
        ssize_t k = pread(fd, (char *)buf + done, (size_t)st.st_size - done, (off_t)done);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0) {
            int e = k < 0 ? errno : EIO;
            free(buf);
            return e;
        }
        done += (size_t)k;
    }
    sv->guard.insns = buf;
    sv->guard.len = (unsigned short)((size_t)st.st_size / insn);
    sv->guard.flags = (unsigned long)(unsigned)m->a;
    return 0;
}

static void handle_msg(struct server *sv, const struct init_msg *m, int *fds, size_t nfds)
{
    if (m->type != INIT_MSG_EXEC && m->type != INIT_MSG_SPARE && nfds) {
        close_fds(fds, nfds);
        nfds = 0;
    }
    switch (m->type) {
    case INIT_MSG_EXEC:
        handle_exec(sv, m, fds, nfds);
        return;
    case INIT_MSG_SPARE:
        if (nfds == 2) {
            take_pair(sv, fds);
            make_spare(sv);
        } else {
            close_fds(fds, nfds);
        }
        return;
    case INIT_MSG_KILL: {
        /* No reply: the exit report that follows is the answer, and a kill
         * of an exec that already ended is a harmless no-op. */
        struct iexec *x = find_exec(sv, m->id);
        /* Until the child's setsid() its group does not exist yet (the host
         * may kill the moment it hears STARTED): then the child itself,
         * which has started nothing of its own so far. */
        if (x && m->a > 0 && m->a < NSIG && kill(-x->pid, m->a) < 0 && errno == ESRCH)
            kill(x->pid, m->a);
        return;
    }
    case INIT_MSG_SUSPEND:
        reply(sv, m->id, signal_all(SIGSTOP));
        return;
    case INIT_MSG_RESUME:
        reply(sv, m->id, signal_all(SIGCONT));
        return;
    case INIT_MSG_STOP:
        end_sandbox(0);
    default:
        reply(sv, m->id, EPROTO);
        return;
    }
}

static void reap(struct server *sv)
{
    for (;;) {
        int st;
        pid_t pid = waitpid(-1, &st, WNOHANG);
        if (pid <= 0)
            return;
        if (pid == sv->spare)
            drop_spare(sv); /* the next exec forks, and makes a new one */
        for (size_t i = 0; i < sv->n; i++) {
            if (sv->execs[i].pid != pid)
                continue;
            struct init_msg m;
            init_msg_init(&m, INIT_MSG_EXITED, sv->execs[i].id);
            m.a = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
            m.b = WIFSIGNALED(st) ? WTERMSIG(st) : 0;
            int end = sv->execs[i].end;
            sv->execs[i] = sv->execs[--sv->n];
            send_or_die(sv, &m, NULL, 0);
            /* The host stops the session on this exit anyway: no need to
             * wait for it to say so. */
            if (end)
                end_sandbox(0);
            break;
        }
    }
}

/*
 * The mount table changed (the host's doing: nothing in here can mount).
 * A deny-read mask gone, or a directory's deny-write bind, ends the
 * sandbox at once: every process is killed before the host hears why. A
 * file's deny-write bind gone is only reported when the seccomp guard
 * refuses writes to protected files by name (--have-guard).
 */
static void check_mounts(struct server *sv)
{
    size_t pos = 0;
    int err = 0;
    long i;
    while ((i = init_watch_next_lost(&sv->watch, &pos, &err)) >= 0) {
        const struct init_watch_target *t = &sv->watch.t[i];
        int go_on = t->kind == INIT_PROT_PIN_FILE && sv->opts.have_guard;
        if (!go_on)
            kill(-1, SIGKILL);
        struct init_msg m;
        init_msg_init(&m, INIT_MSG_DETACHED, 0);
        m.a = t->kind;
        m.b = !go_on;
        m.c = err;
        init_msg_text(&m, t->path);
        send_or_die(sv, &m, NULL, 0);
        if (!go_on)
            end_sandbox(1);
    }
}

static int mount_op(const char *opt)
{
    static const struct {
        const char *name;
        int op;
    } ops[] = {{"--pin", INIT_MOUNT_PIN},
               {"--ro", INIT_MOUNT_RO},
               {"--mask-dir", INIT_MOUNT_MASK_DIR},
               {"--mask-file", INIT_MOUNT_MASK_FILE},
               {"--dev", INIT_MOUNT_DEV},
               {"--remount-ro", INIT_MOUNT_REMOUNT_RO}};
    for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++)
        if (strcmp(opt, ops[i].name) == 0)
            return ops[i].op;
    return 0;
}

/* argv[0] is skipped. from_setup: the words of the host's SETUP. */
static int parse_opts(int argc, char **argv, struct init_opts *o, int from_setup)
{
    free(o->mounts);
    o->n_mounts = 0;
    o->mounts = calloc((size_t)argc, sizeof *o->mounts);
    if (!o->mounts)
        return -1;
    for (int i = 1; i < argc; i++) {
        uint64_t v;
        const char *val = i + 1 < argc ? argv[i + 1] : NULL;
        int op = mount_op(argv[i]);
        if (op && val && val[0] == '/')
            o->mounts[o->n_mounts++] = (struct init_mount){op, val};
        else if (strcmp(argv[i], "--await-go") == 0) {
            o->await_go = 1;
            continue;
        } else if (strcmp(argv[i], "--await-guard") == 0) {
            o->await_guard = 1;
            continue;
        } else if (strcmp(argv[i], "--lock-userns") == 0) {
            o->lock_userns = 1;
            continue;
        } else if (strcmp(argv[i], "--have-guard") == 0) {
            o->have_guard = 1;
            continue;
        } else if (strcmp(argv[i], "--setup") == 0 && !from_setup) {
            o->await_setup = 1;
            continue;
        } else if (strcmp(argv[i], "--http-port") == 0 && parse_u64(val, 65535, &v) == 0)
            o->http_port = (int)v;
        else if (strcmp(argv[i], "--socks-port") == 0 && parse_u64(val, 65535, &v) == 0)
            o->socks_port = (int)v;
        else if (strcmp(argv[i], "--rlimit-as") == 0 && parse_u64(val, UINT64_MAX, &v) == 0)
            o->rlimit_as = v;
        else if (strcmp(argv[i], "--rlimit-nproc") == 0 && parse_u64(val, UINT32_MAX, &v) == 0)
            o->rlimit_nproc = v;
        else {
            fprintf(stderr, "ccsb-init: bad option %s%s%s\n", argv[i], val ? " " : "",
                    val ? val : "");
            return -1;
        }
        i++;
    }
    return 0;
}

__attribute__((noreturn)) static void fatal(struct server *sv, const char *what, int err)
{
    char text[INIT_TEXT_MAX];
    snprintf(text, sizeof text, "ccsb-init: %s: %s", what, strerror(err));
    fprintf(stderr, "%s\n", text);
    if (sv->ctrl >= 0) {
        struct init_msg m;
        init_msg_init(&m, INIT_MSG_FATAL, 0);
        m.a = err;
        init_msg_text(&m, text);
        init_send(sv->ctrl, &m, NULL, 0);
    }
    end_sandbox(1);
}

__attribute__((noreturn)) static void fatal_text(struct server *sv, const char *text)
{
    fprintf(stderr, "ccsb-init: %s\n", text);
    struct init_msg m;
    init_msg_init(&m, INIT_MSG_FATAL, 0);
    init_msg_text(&m, text);
    init_send(sv->ctrl, &m, NULL, 0);
    end_sandbox(1);
}

/* Reads the whole SETUP memfd (NUL-terminated words) into a buffer that
 * lives as long as we do: the options point into it. */
static char **read_words(int fd, int *argc, int *err)
{
    struct stat st;
    if (fstat(fd, &st) < 0) {
        *err = errno;
        return NULL;
    }
    if (!S_ISREG(st.st_mode) || st.st_size < 0 || (uint64_t)st.st_size > INIT_SETUP_MAX) {
        *err = EPROTO;
        return NULL;
    }
    size_t size = (size_t)st.st_size, done = 0;
    char *buf = malloc(size + 1); /* (no words at all is fine too) */
    if (!buf) {
        *err = ENOMEM;
        return NULL;
    }
    while (done < size) {
        ssize_t n = pread(fd, buf + done, size - done, (off_t)done);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            *err = n < 0 ? errno : EPROTO;
            free(buf);
            return NULL;
        }
        done += (size_t)n;
    }
    if (size && buf[size - 1] != '\0') {
        *err = EPROTO;
        free(buf);
        return NULL;
    }
    size_t n = 1;
    for (size_t i = 0; i < size; i++)
        n += buf[i] == '\0';
    char **v = calloc(n + 1, sizeof *v);
    if (!v) {
        *err = ENOMEM;
        free(buf);
        return NULL;
    }
    v[0] = "setup";
    *argc = 1;
    for (char *p = buf; p < buf + size; p += strlen(p) + 1)
        v[(*argc)++] = p;
    return v;
}

/* The host's next message during the launch, waited for (bounded): ends
 * the sandbox when the host went away, fails the launch on an error. */
static void await_msg(struct server *sv, const char *what, struct init_msg *m, int *fds,
                      size_t *nfds)
{
    struct pollfd p = {.fd = sv->ctrl, .events = POLLIN};
    int r = poll(&p, 1, 30000);
    char text[96];
    if (r == 0) {
        snprintf(text, sizeof text, "the host never sent %s", what);
        fatal_text(sv, text);
    }
    *nfds = INIT_MAX_FDS;
    r = r < 0 ? -errno : init_recv(sv->ctrl, m, fds, nfds);
    if (r == 0)
        end_sandbox(0); /* the host went away during the launch */
    if (r < 0) {
        snprintf(text, sizeof text, "receiving %s", what);
        fatal(sv, text, -r);
    }
}

static void await_setup(struct server *sv)
{
    struct init_msg m;
    int fds[INIT_MAX_FDS];
    size_t nfds;
    await_msg(sv, "the setup", &m, fds, &nfds);
    int e = EPROTO, argc = 0;
    char **words = m.type == INIT_MSG_SETUP && nfds == 1 ? read_words(fds[0], &argc, &e) : NULL;
    close_fds(fds, nfds);
    if (!words)
        fatal(sv, "the setup", e);
    if (parse_opts(argc, words, &sv->opts, 1) < 0)
        fatal_text(sv, "bad options in the setup");
}

static void await_go(struct server *sv)
{
    struct init_msg m;
    int fds[INIT_MAX_FDS];
    size_t nfds;
    await_msg(sv, "GO", &m, fds, &nfds);
    close_fds(fds, nfds);
    if (m.type != INIT_MSG_GO)
        fatal_text(sv, "expected GO from the host");
}

/*
 * The guard filter every exec loads, sent by the host while we mount (it
 * compiles it meanwhile). Taken before READY, so READY also says "taken":
 * no command can ever start without it, and no extra round trip is spent.
 */
static void await_guard(struct server *sv)
{
    struct init_msg m;
    int fds[INIT_MAX_FDS];
    size_t nfds;
    await_msg(sv, "the guard filter", &m, fds, &nfds);
    int e = m.type != INIT_MSG_GUARD_FILTER || nfds != 1 ? EPROTO : take_guard(sv, &m, fds[0]);
    close_fds(fds, nfds);
    if (e)
        fatal(sv, "the guard filter", e);
}

/* One message from the host: > 0, or 0 when there was none after all.
 * The host gone ends the sandbox; a broken channel is fatal. */
static int recv_msg(struct server *sv, struct init_msg *m, int *fds, size_t *nfds)
{
    int r = init_recv(sv->ctrl, m, fds, nfds);
    if (r == 0 || r == -ECONNRESET)
        end_sandbox(0); /* the host is gone */
    if (r == -EPROTO)
        fatal(sv, "control message", EPROTO);
    if (r < 0 && r != -EAGAIN)
        fatal(sv, "recvmsg(control)", -r);
    return r > 0 ? r : 0;
}

static void say_ready(struct server *sv)
{
    int http_port = 0, socks_port = 0;
    int fds[2];
    fds[0] = net_listen_loopback(sv->opts.http_port, &http_port);
    if (fds[0] < 0)
        fatal(sv, "http proxy listener on 127.0.0.1", -fds[0]);
    fds[1] = net_listen_loopback(sv->opts.socks_port, &socks_port);
    if (fds[1] < 0)
        fatal(sv, "socks proxy listener on 127.0.0.1", -fds[1]);

    struct init_msg m;
    init_msg_init(&m, INIT_MSG_READY, 0);
    m.a = INIT_PROTO_VERSION;
    m.b = http_port;
    m.c = socks_port;
    char limits[INIT_TEXT_MAX] = "";
    if (sv->opts.rlimit_as)
        strcat(limits, "rlimit-as ");
    if (sv->opts.rlimit_nproc)
        strcat(limits, "rlimit-nproc ");
    init_msg_text(&m, limits);
    send_or_die(sv, &m, fds, 2);
    /* The host owns the listeners now; nothing in here may accept on them. */
    close(fds[0]);
    close(fds[1]);
}

int init_main(int argc, char **argv)
{
    struct server sv = {.ctrl = -1, .sigfd = -1, .spare_sock = -1, .pair = {-1, -1},
                        .watch = {.fd = -1}};
    if (getpid() != 1) {
        /* kill(-1) anywhere else would hit every process of the user. */
        fprintf(stderr, "ccsb-init: init must run as PID 1 of a sandbox\n");
        return 2;
    }
    if (parse_opts(argc, argv, &sv.opts, 0) < 0)
        return 2;
    if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) < 0)
        fatal(&sv, "prctl(PR_SET_DUMPABLE)", errno);

    struct stat st;
    if (fstat(INIT_CTRL_FD, &st) < 0 || !S_ISSOCK(st.st_mode))
        fatal(&sv, "control socket on fd 3", errno ? errno : ENOTSOCK);
    sv.ctrl = INIT_CTRL_FD;
    if (fcntl(sv.ctrl, F_SETFD, FD_CLOEXEC) < 0)
        fatal(&sv, "fcntl(control)", errno);
    /* Only what we were meant to get: stdio and the control socket. */
    if (close_range(INIT_CTRL_FD + 1, ~0u, 0) < 0)
        fatal(&sv, "close_range", errno);

    struct sigaction sa = {.sa_handler = SIG_IGN};
    if (sigaction(SIGPIPE, &sa, NULL) < 0)
        fatal(&sv, "sigaction(SIGPIPE)", errno);
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGCHLD);
    if (sigprocmask(SIG_BLOCK, &set, NULL) < 0)
        fatal(&sv, "sigprocmask", errno);
    sv.sigfd = signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
    if (sv.sigfd < 0)
        fatal(&sv, "signalfd", errno);

    /* bwrap was started before the host knew the policy: the plan's part
     * of our options comes now. */
    if (sv.opts.await_setup)
        await_setup(&sv);

    /* The host makes the placeholder mount points while bwrap builds the
     * namespaces; it says GO once they exist. */
    if (sv.opts.await_go)
        await_go(&sv);

    /* The policy's mounts, no nested user namespace, then no capability is
     * left, before anything else can run in here. */
    char why[INIT_TEXT_MAX];
    if (init_apply_mounts(sv.opts.mounts, sv.opts.n_mounts, &sv.watch, why, sizeof why) < 0 ||
        (sv.opts.lock_userns && init_lock_userns(why, sizeof why) < 0) ||
        init_drop_caps(why, sizeof why) < 0)
        fatal_text(&sv, why);

    /* A session keyring of our own: the host's (inherited through bwrap)
     * would hand its keys to every sandbox process. */
    if (syscall(SYS_keyctl, KEYCTL_JOIN_SESSION_KEYRING, NULL) < 0 && errno != ENOSYS)
        fatal(&sv, "keyctl(KEYCTL_JOIN_SESSION_KEYRING)", errno);

    /* No core dumps: the kernel writes them itself, past the seccomp
     * guard's create-time rules, into a writable working directory. */
    struct rlimit no_core = {0, 0};
    if (setrlimit(RLIMIT_CORE, &no_core) < 0)
        fatal(&sv, "setrlimit(RLIMIT_CORE)", errno);

    if (sv.opts.await_guard)
        await_guard(&sv);
    /* The host sends the first spare's channel right behind the guard
     * filter: forked now, the spare loads its filter while READY travels,
     * and a command the host sent ahead (next in line) finds it waiting.
     * Anything else that is already there is handled after READY. */
    struct init_msg early;
    int early_fds[INIT_MAX_FDS];
    size_t early_n = INIT_MAX_FDS;
    int have_early = 0;
    struct pollfd pe = {.fd = sv.ctrl, .events = POLLIN};
    if (poll(&pe, 1, 0) == 1 && recv_msg(&sv, &early, early_fds, &early_n) > 0) {
        if (early.type == INIT_MSG_SPARE)
            handle_msg(&sv, &early, early_fds, early_n);
        else
            have_early = 1;
    }
    say_ready(&sv);
    /* (what changed between a mount and the watch's start) */
    check_mounts(&sv);
    if (have_early)
        handle_msg(&sv, &early, early_fds, early_n);

    for (;;) {
        struct pollfd p[3] = {{.fd = sv.ctrl, .events = POLLIN},
                              {.fd = sv.sigfd, .events = POLLIN},
                              {.fd = sv.watch.fd, .events = POLLPRI}};
        if (poll(p, 3, -1) < 0) {
            if (errno == EINTR)
                continue;
            fatal(&sv, "poll", errno);
        }
        /* First: the sooner a detached protection ends the sandbox, the
         * less time anything in it has to use the gap. */
        if (p[2].revents)
            check_mounts(&sv);
        if (p[1].revents) {
            struct signalfd_siginfo si;
            while (read(sv.sigfd, &si, sizeof si) == (ssize_t)sizeof si)
                ;
            reap(&sv);
        }
        if (p[0].revents) {
            struct init_msg m;
            int fds[INIT_MAX_FDS];
            size_t nfds = INIT_MAX_FDS;
            if (recv_msg(&sv, &m, fds, &nfds) > 0)
                handle_msg(&sv, &m, fds, nfds);
        }
    }
}
