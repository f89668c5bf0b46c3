/*
 * Starting and ending one bubblewrap session (caller's thread for start).
 *
 * bwrap is started first, before its options are known (bwrap_spawn; the
 * core even calls it before it builds the policy), so that its exec and
 * dynamic linking overlap that work. The host spawns bwrap (or the
 * janitor, which then spawns bwrap, when the plan needs cgroups undone
 * afterwards) with:
 *   fd 0, 1  /dev/null
 *   fd 2     a pipe: bwrap's and ccsb-init's error text
 *   fd 3     the sandbox end of the control socketpair (ccsb-init's fd 3)
 *   fd 4     a stream socket bwrap reads its options from (--args 4) up to
 *            EOF; ccsb-init (`init --setup`) gets its own in INIT_MSG_SETUP
 *   fd 5     the janitor's watch pipe (janitor as bwrap's parent only)
 * in its own process group, with default signal dispositions and an empty
 * environment. Once the plan exists, the options are written, placeholders
 * made (a side janitor watching), the guard filter and the spare's channel
 * sent, then it waits (bounded) for ccsb-init's READY.
 */
#include "backend/bwrap_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/pidfd.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "backend/bwrap_args.h"
#include "backend/bwrap_guard.h"
#include "backend/bwrap_locate.h"
#include "ccsandbox/ccsandbox.h"
#include "core/ctx.h"
#include "core/probe.h"
#include "core/session.h"
#include "egress/egress.h"
#include "policy/policy.h"
#include "util/err.h"
#include "util/fd.h"

#define READY_TIMEOUT_MS 10000
#define STOP_TIMEOUT_MS 3000

static void close_fd(int *fd)
{
    if (*fd >= 0) {
        close(*fd);
        *fd = -1;
    }
}

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Keeps a short tail of what bwrap/ccsb-init said, for error messages. */
static void read_err(struct bwrap_session *bs)
{
    char buf[1024];
    for (int i = 0; i < 16; i++) {
        ssize_t n = read(bs->errfd, buf, sizeof buf);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return;
        size_t cap = sizeof bs->errtail - 1;
        for (ssize_t k = 0; k < n; k++) {
            if (bs->errtail_len == cap) {
                memmove(bs->errtail, bs->errtail + cap / 2, cap - cap / 2);
                bs->errtail_len = cap - cap / 2;
            }
            bs->errtail[bs->errtail_len++] = buf[k];
        }
        bs->errtail[bs->errtail_len] = '\0';
    }
}

static const char *err_text(struct bwrap_session *bs)
{
    while (bs->errtail_len && (bs->errtail[bs->errtail_len - 1] == '\n' ||
                               bs->errtail[bs->errtail_len - 1] == '\r'))
        bs->errtail[--bs->errtail_len] = '\0';
    return bs->errtail_len ? bs->errtail : "no message";
}

/* Is path inside any writable root (either spelling)? */
static int inside_writable(const struct ccsb_policy *p, const char *path)
{
    for (size_t i = 0; i < p->writable_roots.n; i++) {
        const char *roots[2] = {p->writable_roots.v[i].path, p->writable_roots.v[i].resolved};
        for (int k = 0; k < 2; k++) {
            size_t n = roots[k] ? strlen(roots[k]) : 0;
            if (n && strncmp(path, roots[k], n) == 0 && (path[n] == '/' || path[n] == '\0'))
                return 1;
        }
    }
    return 0;
}

static int write_all(int fd, const char *buf, size_t len)
{
    while (len) {
        ssize_t n = write(fd, buf, len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return -1;
        buf += n;
        len -= (size_t)n;
    }
    return 0;
}

/* Words v[from..to), then extra unless NULL, each NUL-terminated, in one
 * malloc'd buffer of *len bytes (NULL: out of memory). */
static char *join_words(const struct strv *v, size_t from, size_t to, const char *extra,
                        size_t *len)
{
    size_t total = extra ? strlen(extra) + 1 : 0;
    for (size_t i = from; i < to; i++)
        total += strlen(v->v[i]) + 1;
    char *buf = malloc(total ? total : 1);
    if (!buf)
        return NULL;
    char *p = buf;
    for (size_t i = from; i < to; i++)
        p = stpcpy(p, v->v[i]) + 1;
    if (extra)
        stpcpy(p, extra);
    *len = total;
    return buf;
}

/* NUL-terminated words v[from..to) and extra into a sealed memfd (the SETUP). */
static int words_memfd(const struct strv *v, size_t from, size_t to, const char *extra)
{
    size_t len;
    char *buf = join_words(v, from, to, extra, &len);
    int fd = buf ? fd_above_stdio(memfd_create("ccsb-init-setup", MFD_CLOEXEC | MFD_ALLOW_SEALING))
                 : -1;
    if (fd >= 0 && (write_all(fd, buf, len) < 0 || lseek(fd, 0, SEEK_SET) != 0 ||
                    fcntl(fd, F_ADD_SEALS,
                          F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL) < 0)) {
        close(fd);
        fd = -1;
    }
    free(buf);
    return fd;
}

/* bwrap's options (NUL-separated, as --args reads them) down the stream
 * it waits on, then EOF: one send, not one per word (each would wake
 * bwrap). -1 when bwrap is gone. */
static int write_args(int *sock, const struct strv *argv, size_t n)
{
    size_t off = 0;
    char *buf = join_words(argv, 0, n, NULL, &off);
    int r = buf ? 0 : -1;
    for (const char *a = buf; !r && off;) {
        ssize_t w = send(*sock, a, off, MSG_NOSIGNAL);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            r = -1;
            break;
        }
        a += w;
        off -= (size_t)w;
    }
    free(buf);
    close(*sock);
    *sock = -1;
    return r;
}

/* fds at or above 10, so the dup2s to 2..5 cannot clobber a source. */
static int high(int fd)
{
    if (fd < 0 || fd >= 10)
        return fd;
    int h = fcntl(fd, F_DUPFD_CLOEXEC, 10);
    close(fd);
    return h;
}

struct fdmap {
    int src, dst;
};

/* posix_spawn with stdin/stdout on /dev/null, the given fds in place, its
 * own process group, default signal dispositions and an empty environment. */
static int spawn(pid_t *pid, char *const *argv, const struct fdmap *map, size_t n)
{
    posix_spawn_file_actions_t fa;
    posix_spawnattr_t at;
    int e = posix_spawn_file_actions_init(&fa);
    if (e)
        return e;
    if ((e = posix_spawnattr_init(&at))) {
        posix_spawn_file_actions_destroy(&fa);
        return e;
    }
    sigset_t none, all;
    sigemptyset(&none);
    sigfillset(&all);
    sigdelset(&all, SIGKILL);
    sigdelset(&all, SIGSTOP);
    e = posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    if (!e)
        e = posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
    for (size_t i = 0; i < n && !e; i++)
        e = posix_spawn_file_actions_adddup2(&fa, map[i].src, map[i].dst);
    /* Own process group: a terminal's ^C for the host is not for the sandbox. */
    if (!e)
        e = posix_spawnattr_setflags(&at, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK |
                                              POSIX_SPAWN_SETSIGDEF);
    if (!e)
        e = posix_spawnattr_setpgroup(&at, 0);
    if (!e)
        e = posix_spawnattr_setsigmask(&at, &none);
    if (!e)
        e = posix_spawnattr_setsigdefault(&at, &all);
    char *const envp[] = {NULL};
    if (!e)
        e = posix_spawn(pid, argv[0], &fa, &at, argv, envp);
    posix_spawn_file_actions_destroy(&fa);
    posix_spawnattr_destroy(&at);
    return e;
}

/*
 * bwrap's command line, behind the janitor when the janitor must start it
 * (cgroups). It does not depend on the policy: the options come on fd 4
 * (--args, a stream read to EOF), ccsb-init's share of them in SETUP. The
 * namespaces and --die-with-parent are here as well, so that a bwrap whose
 * options never arrive (the host died first) runs nothing: with an empty
 * root and no mounts, there is no ccsb-init to start.
 */
static int bwrap_argv(struct bwrap_session *bs, int parent, struct strv *out)
{
    int r = 0;
    if (parent) {
        r |= strv_push(out, bs->helper) | strv_push(out, "janitor") |
             strv_push(out, "--watch-fd") | strv_push(out, "5");
        for (size_t i = 0; i < bs->cg.ndirs; i++)
            r |= strv_push(out, "--cgroup") | strv_push(out, bs->cg.dirs[i]);
        r |= strv_push(out, "--");
    }
    r |= strv_push(out, bs->bwrap) | strv_push(out, "--unshare-all") |
         strv_push(out, "--unshare-user") | strv_push(out, "--die-with-parent") |
         strv_push(out, "--args") | strv_push(out, "4") | strv_push(out, "--") |
         strv_push(out, INIT_GUEST_PATH) | strv_push(out, "init") | strv_push(out, "--setup");
    return r ? -1 : 0;
}

/* Waits (bounded) for a child to exit and reaps it; -1 on timeout. */
static int reap_within(pid_t pid, int pidfd, int timeout_ms)
{
    if (pid <= 0)
        return 0;
    int64_t end = now_ms() + timeout_ms;
    for (;;) {
        int st;
        pid_t w = waitpid(pid, &st, WNOHANG);
        if (w == pid || (w < 0 && errno == ECHILD))
            return 0; /* (ECHILD: the host's own SIGCHLD handler reaped it) */
        int left = (int)(end - now_ms());
        if (left <= 0)
            return -1;
        if (pidfd >= 0) {
            struct pollfd p = {.fd = pidfd, .events = POLLIN};
            poll(&p, 1, left);
        } else {
            struct timespec ts = {0, 2000000};
            nanosleep(&ts, NULL);
        }
    }
}

/* 0 once the child is reaped, -1 when it would not die even after SIGKILL. */
static int end_child(pid_t *pid, int pidfd, int timeout_ms)
{
    if (*pid <= 0)
        return 0;
    int r = reap_within(*pid, pidfd, timeout_ms);
    if (r < 0) {
        kill(*pid, SIGKILL);
        r = reap_within(*pid, pidfd, timeout_ms);
    }
    *pid = 0;
    return r;
}

static void remove_placeholders(struct bwrap_session *bs)
{
    for (size_t i = bs->nph; i-- > 0;)
        (void)placeholder_remove(&bs->ph[i]); /* (one still held is its other user's) */
}

static void free_placeholders(struct bwrap_session *bs)
{
    for (size_t i = 0; i < bs->nph; i++)
        free((char *)bs->ph[i].path);
    free(bs->ph);
    bs->ph = NULL;
    bs->nph = 0;
}

void bwrap_teardown(struct bwrap_session *bs)
{
    /* Still waiting for its options: it must not start with only those
     * of its command line. */
    if (bs->args_w >= 0 && bs->pidfd >= 0)
        pidfd_send_signal(bs->pidfd, SIGKILL, NULL, 0);
    close_fd(&bs->args_w);
    close_fd(&bs->err_w);
    bwrap_cgroup_freeze(&bs->cg, 0); /* a frozen v1 task would not even die */
    if (bs->ctrl >= 0 && !bs->dead) {
        struct init_msg m;
        init_msg_init(&m, INIT_MSG_STOP, 0);
        bwrap_send(bs, &m, NULL, 0);
    }
    close_fd(&bs->ctrl);
    /* Only once the sandbox is gone are its mount points plain files and
     * directories again: unlinking one while a sandbox still runs would
     * detach the read-only mount over it there. The janitor would remove
     * them too; whoever comes first wins, and a bwrap that would not die
     * leaves them to the janitor, which waits for it. */
    if (end_child(&bs->pid, bs->pidfd, STOP_TIMEOUT_MS) == 0)
        remove_placeholders(bs);
    close_fd(&bs->watch_w);
    end_child(&bs->janitor, bs->jpidfd, STOP_TIMEOUT_MS);
    close_fd(&bs->jpidfd);
    free_placeholders(bs);
    bwrap_cgroup_remove(&bs->cg);
    close_fd(&bs->pidfd);
    close_fd(&bs->errfd);
    close_fd(&bs->listeners[0]);
    close_fd(&bs->listeners[1]);
    close_fd(&bs->gate);
}

/* The parent of path, opened once for a run of paths below the same
 * directory (most share the writable root); *name is the last component. */
struct ph_parent {
    char path[4096];
    int fd;
};

static int ph_parent_of(struct ph_parent *pp, const char *path, const char **name)
{
    const char *slash = strrchr(path, '/');
    size_t plen = slash ? (size_t)(slash - path) : 0;
    if (pp->fd >= 0 && plen == strlen(pp->path) && strncmp(pp->path, path, plen) == 0) {
        *name = slash + 1;
        return pp->fd;
    }
    if (pp->fd >= 0)
        close(pp->fd);
    pp->path[0] = '\0';
    pp->fd = placeholder_parent(path, name);
    if (pp->fd < 0)
        return pp->fd;
    if (plen >= sizeof pp->path) {
        close(pp->fd);
        pp->fd = -1;
        return -ENAMETOOLONG;
    }
    memcpy(pp->path, path, plen);
    pp->path[plen] = '\0';
    return pp->fd;
}

/* One record for the janitor: it removes p if the host dies first. */
static int tell_janitor(struct bwrap_session *bs, const struct placeholder *p, char *err,
                        size_t errlen)
{
    if (bs->watch_w < 0)
        return 0;
    char *rec = NULL;
    int len = asprintf(&rec, "%c %llu %llu %s", p->is_dir ? 'D' : 'F',
                       (unsigned long long)p->dev, (unsigned long long)p->ino, p->path);
    int r = len < 0 || write_all(bs->watch_w, rec, (size_t)len + 1) < 0
                ? errf(err, errlen, CCSB_E_IO, "cannot reach the janitor: %s", strerror(errno))
                : 0;
    free(rec);
    return r;
}

/*
 * Placeholders another session made, found where this sandbox mounts: they
 * become ours to remove as well (whoever is last removes them; until then
 * each sandbox's ccsb-init holds them). Not finding out (an error) leaves
 * such a placeholder to its maker, and on the host if we outlive it.
 */
static int adopt_placeholders(struct bwrap_session *bs, const struct bwrap_plan *plan,
                              char *err, size_t errlen)
{
    size_t n = plan->ph_found.n + plan->ph_dirs.n + plan->ph_files.n;
    if (!n)
        return 0;
    bs->ph = calloc(n, sizeof *bs->ph);
    if (!bs->ph)
        return errf(err, errlen, CCSB_E_NOMEM, "out of memory");
    struct ph_parent pp = {.fd = -1};
    for (size_t i = 0; i < plan->ph_found.n; i++) {
        const char *path = plan->ph_found.v[i], *name;
        struct placeholder *p = &bs->ph[bs->nph];
        if (strv_contains(&plan->ph_dirs, path) || strv_contains(&plan->ph_files, path) ||
            ph_parent_of(&pp, path, &name) < 0 || placeholder_adopt_in(pp.fd, name, p) <= 0)
            continue;
        if (!(p->path = strdup(path))) {
            p->dev = p->ino = 0;
            continue;
        }
        bs->nph++;
    }
    if (pp.fd >= 0)
        close(pp.fd);
    return 0;
}

/*
 * Makes the plan's placeholder mount points, telling the janitor about each
 * right after it exists (so a host killed now still gets them removed), and
 * about those adopted, then tells ccsb-init to go on mounting. Runs while
 * bwrap is starting; after adopt_placeholders.
 */
static int create_placeholders(struct bwrap_session *bs, const struct bwrap_plan *plan,
                               char *err, size_t errlen)
{
    int r = 0;
    for (size_t i = 0; i < bs->nph && !r; i++)
        r = tell_janitor(bs, &bs->ph[i], err, errlen);
    size_t n = plan->ph_dirs.n + plan->ph_files.n;
    if (r || !n)
        return r;
    struct ph_parent pp = {.fd = -1};
    for (size_t i = 0; i < n && !r; i++) {
        int dir = i < plan->ph_dirs.n;
        const char *path = dir ? plan->ph_dirs.v[i] : plan->ph_files.v[i - plan->ph_dirs.n];
        struct placeholder *p = &bs->ph[bs->nph];
        p->is_dir = dir;
        p->path = strdup(path);
        if (!p->path) {
            r = errf(err, errlen, CCSB_E_NOMEM, "out of memory");
            break;
        }
        bs->nph++;
        const char *name;
        int dfd = ph_parent_of(&pp, path, &name);
        int c = dfd < 0 ? dfd : placeholder_create_in(dfd, name, p);
        /* there since the plan: another launch's, perhaps */
        if (c == 0)
            c = placeholder_adopt_in(dfd, name, p);
        if (c < 0)
            r = errf(err, errlen, CCSB_E_IO,
                     "cannot create the placeholder %s for a protected path: %s", path,
                     strerror(-c));
        else if (c > 0)
            r = tell_janitor(bs, p, err, errlen);
    }
    if (pp.fd >= 0)
        close(pp.fd);
    if (r)
        return r;
    struct init_msg go;
    init_msg_init(&go, INIT_MSG_GO, 0);
    if (bwrap_send(bs, &go, NULL, 0) < 0)
        return errf(err, errlen, CCSB_E_LAUNCH, "the sandbox ended while starting: %s",
                    err_text(bs));
    return 0;
}

/* The sandbox's HOME: the host home where a mount shows it, else /tmp. */
static void pick_home(const struct ccsb_policy *p, struct bwrap_session *bs)
{
    snprintf(bs->home, sizeof bs->home, "/tmp");
    if (!p->home)
        return;
    size_t hl = strlen(p->home);
    for (size_t i = 0; i < p->n_mounts; i++) {
        const struct policy_mount *m = &p->mounts[i];
        size_t ml = strlen(m->host);
        if (strncmp(p->home, m->host, ml) == 0 && (p->home[ml] == '/' || p->home[ml] == '\0') &&
            hl >= ml) {
            snprintf(bs->home, sizeof bs->home, "%s%s", strcmp(m->guest, "/") ? m->guest : "",
                     p->home + ml);
            return;
        }
    }
}

static int wait_ready(struct ccsb_session *s, struct bwrap_session *bs, char *err,
                      size_t errlen)
{
    int64_t end = now_ms() + READY_TIMEOUT_MS;
    int child_gone = 0;
    for (;;) {
        int left = (int)(end - now_ms());
        if (left <= 0)
            return errf(err, errlen, CCSB_E_LAUNCH,
                        "the sandbox did not become ready within %d ms (bwrap said: %s)",
                        READY_TIMEOUT_MS, err_text(bs));
        struct pollfd p[3] = {{.fd = bs->ctrl, .events = POLLIN},
                              {.fd = bs->errfd, .events = POLLIN},
                              {.fd = child_gone ? -1 : bs->pidfd, .events = POLLIN}};
        int r = poll(p, 3, left);
        if (r < 0 && errno != EINTR)
            return errf(err, errlen, CCSB_E_IO, "poll: %s", strerror(errno));
        if (r <= 0)
            continue;
        if (p[1].revents)
            read_err(bs);
        if (p[0].revents) {
            struct init_msg m;
            int fds[INIT_MAX_FDS];
            size_t nfds = INIT_MAX_FDS;
            int got = init_recv(bs->ctrl, &m, fds, &nfds);
            if (got > 0 && m.type == INIT_MSG_READY && nfds == 2 &&
                m.a == INIT_PROTO_VERSION) {
                bs->listeners[0] = fds[0];
                bs->listeners[1] = fds[1];
                if (m.b != bs->http_port || m.c != bs->socks_port) {
                    close(fds[0]);
                    close(fds[1]);
                    bs->listeners[0] = bs->listeners[1] = -1;
                    return errf(err, errlen, CCSB_E_LAUNCH,
                                "ccsb-init listens on ports %d/%d, not %d/%d", m.b, m.c,
                                bs->http_port, bs->socks_port);
                }
                snprintf(bs->limits_init, sizeof bs->limits_init, "%s", m.text);
                return 0;
            }
            for (size_t i = 0; i < nfds; i++)
                close(fds[i]);
            if (got > 0 && m.type == INIT_MSG_FATAL)
                return errf(err, errlen, CCSB_E_LAUNCH, "the sandbox failed to start: %s",
                            m.text);
            if (got > 0)
                return errf(err, errlen, CCSB_E_LAUNCH,
                            "ccsb-init spoke an unexpected protocol (message %u, version %d)",
                            m.type, m.a);
            /* EOF or error: bwrap failed before ccsb-init ran; read its words. */
            child_gone = 1;
        }
        if (child_gone || (p[2].revents & POLLIN)) {
            end_child(&bs->pid, bs->pidfd, 2000);
            read_err(bs);
            const char *said = err_text(bs);
            if (strstr(said, "namespace") || strstr(said, "uid map") ||
                strstr(said, "Operation not permitted") || strstr(said, "No permissions")) {
                char *why = probe_diagnose_userns(said);
                int code = errf(err, errlen, CCSB_E_LAUNCH, "bubblewrap cannot start here: %s",
                                why ? why : said);
                free(why);
                return code;
            }
            return errf(err, errlen, CCSB_E_LAUNCH, "bubblewrap failed: %s", said);
        }
    }
}

/* Two distinct ports in the dynamic range (what bind to port 0 would give),
 * for the proxy listeners inside. */
static int pick_ports(struct bwrap_session *bs, char *err, size_t errlen)
{
    uint16_t rnd[2];
    if (getrandom(rnd, sizeof rnd, 0) != (ssize_t)sizeof rnd)
        return errf(err, errlen, CCSB_E_IO, "getrandom: %s", strerror(errno));
    enum { LO = 32768, SPAN = 60999 - 32768 + 1 };
    bs->http_port = LO + rnd[0] % SPAN;
    bs->socks_port = LO + rnd[1] % (SPAN - 1);
    if (bs->socks_port >= bs->http_port)
        bs->socks_port++;
    return 0;
}

int bwrap_locate(struct ccsb_ctx *ctx, struct bwrap_session *bs, char *err, size_t errlen)
{
    if (bs->bwrap && bs->helper)
        return 0;
    /* Only the binary is needed here, not the functional probe (a whole
     * extra bwrap start): this launch tries the namespaces itself. */
    const struct ccsb_probe_result *pr = ctx_probe_cached(ctx);
    bs->bwrap = pr && pr->bwrap_path ? strdup(pr->bwrap_path) : probe_find_on_path("bwrap");
    if (!bs->bwrap)
        return errf(err, errlen, CCSB_E_UNAVAILABLE, "bubblewrap (bwrap) is not installed: %s",
                    PROBE_BWRAP_INSTALL_HINT);
    return bwrap_locate_helper(&bs->helper, err, errlen);
}

int bwrap_spawn(struct ccsb_ctx *ctx, struct bwrap_session *bs, char *err, size_t errlen)
{
    int r = bwrap_locate(ctx, bs, err, errlen);
    if (r < 0)
        return r;
    /* The janitor starts bwrap itself when bwrap must begin inside cgroups. */
    int parent = bs->cg.ndirs > 0;
    int sp[2] = {-1, -1}, ep[2] = {-1, -1}, ap[2] = {-1, -1}, wp[2] = {-1, -1};
    struct strv argv = STRV_INIT;
    if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sp) < 0 ||
        socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, ap) < 0 || pipe2(ep, O_CLOEXEC) < 0 ||
        (parent && pipe2(wp, O_CLOEXEC) < 0)) {
        r = errf(err, errlen, CCSB_E_IO, "cannot set up the sandbox's channels: %s",
                 strerror(errno));
        goto out;
    }
    ep[1] = high(ep[1]);
    sp[1] = high(sp[1]);
    ap[1] = high(ap[1]);
    wp[0] = high(wp[0]);
    /* The host's ends stay off 0-2 (a host that closed its streams): there
     * its own writes to stderr would land in bwrap's options or on the
     * control socket. */
    sp[0] = fd_above_stdio(sp[0]);
    ep[0] = fd_above_stdio(ep[0]);
    ap[0] = fd_above_stdio(ap[0]);
    wp[1] = fd_above_stdio(wp[1]);
    if (ep[1] < 0 || sp[1] < 0 || ap[1] < 0 || (parent && wp[0] < 0) || sp[0] < 0 ||
        ep[0] < 0 || ap[0] < 0 || (parent && wp[1] < 0)) {
        r = errf(err, errlen, CCSB_E_IO, "fcntl: %s", strerror(errno));
        goto out;
    }
    if (bwrap_argv(bs, parent, &argv) < 0) {
        r = errf(err, errlen, CCSB_E_NOMEM, "out of memory");
        goto out;
    }
    struct fdmap map[] = {{ep[1], 2}, {sp[1], INIT_CTRL_FD}, {ap[1], 4}, {wp[0], 5}};
    int e = spawn(&bs->pid, argv.v, map, parent ? 4 : 3);
    if (e) {
        r = errf(err, errlen, CCSB_E_LAUNCH, "cannot start %s: %s", argv.v[0], strerror(e));
        goto out;
    }
    bs->ctrl = sp[0];
    bs->errfd = ep[0];
    bs->err_w = ep[1]; /* for a side janitor, until it exists or is not needed */
    bs->args_w = ap[0];
    bs->watch_w = wp[1];
    sp[0] = ep[0] = ep[1] = ap[0] = wp[1] = -1;
    bs->pidfd = fd_above_stdio(pidfd_open(bs->pid, 0));
    if (bs->pidfd < 0) {
        r = errf(err, errlen, CCSB_E_IO, "pidfd_open: %s", strerror(errno));
        kill(bs->pid, SIGKILL); /* still our unreaped child: the pid is its own */
        goto out;
    }
    if (fcntl(bs->errfd, F_SETFL, O_NONBLOCK) < 0)
        r = errf(err, errlen, CCSB_E_IO, "fcntl: %s", strerror(errno));
out:
    close_fd(&sp[0]);
    close_fd(&sp[1]);
    close_fd(&ep[0]);
    close_fd(&ep[1]);
    close_fd(&ap[0]);
    close_fd(&ap[1]);
    close_fd(&wp[0]);
    close_fd(&wp[1]);
    strv_clear(&argv);
    if (r < 0) {
        bs->dead = 1;
        bwrap_teardown(bs);
    }
    return r;
}

static int spawn_on_loop(void *arg)
{
    struct bwrap_session *bs = arg;
    return bwrap_spawn(bs->spawn_ctx, bs, bs->spawn_err, sizeof bs->spawn_err);
}

void bwrap_spawn_start(struct ccsb_ctx *ctx, struct bwrap_session *bs)
{
    bs->spawn_ctx = ctx;
    bs->spawn_err[0] = '\0';
    ctx_call_start(ctx, &bs->spawn_call, spawn_on_loop, bs);
}

int bwrap_spawn_finish(struct ccsb_ctx *ctx, struct bwrap_session *bs, char *err,
                       size_t errlen)
{
    int r = ctx_call_finish(ctx, &bs->spawn_call);
    if (r < 0 && err && errlen)
        snprintf(err, errlen, "%s", bs->spawn_err[0] ? bs->spawn_err : "the loop thread is gone");
    return r;
}

/* The side janitor (placeholders without cgroups), watching bwrap's pidfd. */
static int spawn_janitor(struct bwrap_session *bs, char *err, size_t errlen)
{
    int wp[2] = {-1, -1}, jpidfd = -1, r = 0;
    struct strv argv = STRV_INIT;
    if (pipe2(wp, O_CLOEXEC) < 0) {
        r = errf(err, errlen, CCSB_E_IO, "pipe: %s", strerror(errno));
        goto out;
    }
    wp[0] = high(wp[0]);
    wp[1] = fd_above_stdio(wp[1]); /* ours: off a closed stdio's numbers */
    jpidfd = high(fcntl(bs->pidfd, F_DUPFD_CLOEXEC, 10));
    if (wp[0] < 0 || wp[1] < 0 || jpidfd < 0 || bs->err_w < 0) {
        r = errf(err, errlen, CCSB_E_IO, "fcntl: %s", strerror(errno));
        goto out;
    }
    if (strv_push(&argv, bs->helper) | strv_push(&argv, "janitor") |
        strv_push(&argv, "--watch-fd") | strv_push(&argv, "3") | strv_push(&argv, "--pidfd") |
        strv_push(&argv, "4")) {
        r = errf(err, errlen, CCSB_E_NOMEM, "out of memory");
        goto out;
    }
    struct fdmap jmap[] = {{bs->err_w, 2}, {wp[0], 3}, {jpidfd, 4}};
    int e = spawn(&bs->janitor, argv.v, jmap, 3);
    if (e) {
        r = errf(err, errlen, CCSB_E_LAUNCH, "cannot start the janitor %s: %s", bs->helper,
                 strerror(e));
        goto out;
    }
    bs->watch_w = wp[1];
    wp[1] = -1;
    bs->jpidfd = fd_above_stdio(pidfd_open(bs->janitor, 0));
    if (bs->jpidfd < 0)
        r = errf(err, errlen, CCSB_E_IO, "pidfd_open: %s", strerror(errno));
out:
    close_fd(&wp[0]);
    close_fd(&wp[1]);
    close_fd(&jpidfd);
    strv_clear(&argv);
    return r;
}

int bwrap_start(struct ccsb_session *s, struct bwrap_session *bs, char *err, size_t errlen)
{
    const struct ccsb_policy *p = s->policy;
    struct bwrap_plan plan;
    memset(&plan, 0, sizeof plan);
    int r = bwrap_locate(s->ctx, bs, err, errlen);
    if (r < 0)
        goto fail;
    if (inside_writable(p, bs->helper)) {
        r = errf(err, errlen, CCSB_E_POLICY,
                 "the helper %s lies inside a writable root of this session; the sandbox "
                 "could replace it, so it is not run",
                 bs->helper);
        goto fail;
    }
    pick_home(p, bs);

    /* Joining a cgroup costs a synchronous RCU grace period (~10-20 ms), so
     * cgroups are made only when a limit asks for one; suspend then uses
     * the freezer, and signals otherwise. bwrap must then start inside
     * them, from the janitor: one started early (bwrap_prestart) cannot. */
    if (p->memory_max || p->pids_max) {
        if (bs->pid) {
            r = BWRAP_START_AGAIN;
            goto fail;
        }
        r = bwrap_cgroup_setup(&bs->cg, s->id, p->memory_max, p->pids_max);
        if (r < 0) {
            r = errf(err, errlen, r, "out of memory");
            goto fail;
        }
    }

    /* The guard's support check (a forked child) and its compile run while
     * bwrap builds the namespaces; the plan goes by the likely answer, and
     * a wrong guess starts over (BWRAP_START_AGAIN) before anything ran. */
    int expect_guard = 0;
    int await_guard = bwrap_guard_expect(s->ctx, &expect_guard);
    /* The proxy ports inside are ours to choose (the sandbox's network is
     * new and empty): known now, a command can be sent before READY. */
    r = pick_ports(bs, err, errlen);
    if (r < 0)
        goto fail;
    struct bwrap_opts o = {
        .helper_path = bs->helper,
        .session_tmp = NULL, /* a private tmpfs: nothing to clean on the host */
        .rlimit_as = bs->cg.memory ? 0 : p->memory_max,
        .rlimit_nproc = bs->cg.pids ? 0 : p->pids_max,
        .have_guard = expect_guard,
        .http_port = bs->http_port,
        .socks_port = bs->socks_port,
        .lock_userns = bwrap_lock_userns_here(),
        .memo = s->path_memo,
    };
    r = bwrap_plan_build(p, &o, &plan, err, errlen);
    if (r < 0)
        goto fail;
    /* The command line is fixed (bwrap_argv): the plan must agree. */
    if (plan.cmd_at + 3 > plan.argv.n || strcmp(plan.argv.v[plan.cmd_at], "--") != 0 ||
        strcmp(plan.argv.v[plan.cmd_at + 1], INIT_GUEST_PATH) != 0 ||
        strcmp(plan.argv.v[plan.cmd_at + 2], "init") != 0) {
        r = errf(err, errlen, CCSB_E_INTERNAL, "the bubblewrap plan does not run ccsb-init");
        goto fail;
    }
    if (!bs->pid) {
        bwrap_spawn_start(s->ctx, bs);
        if ((r = bwrap_spawn_finish(s->ctx, bs, err, errlen)) < 0)
            goto fail; /* (a second teardown is harmless: the cgroups, if it never ran) */
    }

    int setup = words_memfd(&plan.argv, plan.cmd_at + 3, plan.argv.n,
                            await_guard ? "--await-guard" : NULL);
    if (setup < 0) {
        r = errf(err, errlen, CCSB_E_IO, "cannot pass ccsb-init its options: %s",
                 strerror(errno));
        goto fail;
    }
    struct init_msg m;
    init_msg_init(&m, INIT_MSG_SETUP, 0);
    if (write_args(&bs->args_w, &plan.argv, plan.cmd_at) < 0 ||
        bwrap_send(bs, &m, &setup, 1) < 0) {
        close(setup);
        /* bwrap ended before it read them: wait_ready tells why. */
        r = wait_ready(s, bs, err, errlen);
        if (r == 0)
            r = errf(err, errlen, CCSB_E_LAUNCH, "bubblewrap did not take its options");
        goto fail;
    }
    close(setup);

    if ((r = adopt_placeholders(bs, &plan, err, errlen)) < 0)
        goto fail;
    /* A janitor must exist before the first placeholder does (or one
     * adopted is ours to remove). */
    if (!bs->cg.ndirs && (plan.ph_dirs.n || plan.ph_files.n || bs->nph) &&
        (r = spawn_janitor(bs, err, errlen)) < 0)
        goto fail;
    close_fd(&bs->err_w); /* bwrap's pipe ends when bwrap and ccsb-init do */
    /* bwrap builds the namespaces meanwhile; ccsb-init waits for GO. */
    r = create_placeholders(bs, &plan, err, errlen);
    if (r < 0)
        goto fail;
    int have_guard = 0;
    r = bwrap_guard_prepare(s->ctx, bs, p, &have_guard, err, errlen);
    if (r < 0)
        goto fail;
    if (have_guard != expect_guard) {
        r = BWRAP_START_AGAIN;
        goto fail;
    }
    r = bwrap_guard_build(bs, p, &plan, err, errlen);
    if (r < 0)
        goto fail;
    if (await_guard && !bs->guard_prog) {
        r = errf(err, errlen, CCSB_E_INTERNAL, "the guard program is missing");
        goto fail;
    }
    if (await_guard && bwrap_guard_send(bs, err, errlen) < 0) {
        /* The sandbox ended while starting: wait_ready tells why (bwrap's
         * own words, the user-namespace diagnosis). */
        r = wait_ready(s, bs, err, errlen);
        if (r == 0)
            r = errf(err, errlen, CCSB_E_LAUNCH, "the sandbox did not take the guard filter");
        goto fail;
    }
    /* The supervisor's thread starts while bwrap builds the sandbox: the
     * attach only registers it (a command sent ahead waits for that). */
    if ((r = bwrap_guard_start(s, bs, err, errlen)) < 0)
        goto fail;
    /* The first exec's process is forked (and guarded) while we attach
     * (not under a process limit: it would take one of the user's slots).
     * A failed send means the sandbox ended: wait_ready says why. */
    if (!p->pids_max)
        bwrap_send_spare(bs);
    /* ccsb_launch_exec: the command waits in the channel behind READY, and
     * its process at a gate until the session is attached: a launch that
     * fails after READY (the session id taken, the proxies) closes the gate
     * and nothing ran. */
    s->first_sent = 0;
    if (s->first) {
        int gate[2];
        if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, gate) < 0) {
            r = errf(err, errlen, CCSB_E_IO, "socketpair: %s", strerror(errno));
            goto fail;
        }
        bs->gate = fd_above_stdio(gate[1]);
        gate[0] = fd_above_stdio(gate[0]);
        r = gate[0] < 0 || bs->gate < 0
                ? errf(err, errlen, CCSB_E_IO, "fcntl: %s", strerror(errno))
                : bwrap_exec_send(s, bs, s->first, s->first_req, s->first_child[0],
                                  s->first_child[1], s->first_child[2], gate[0], err, errlen);
        close_fd(&gate[0]);
        /* Not sent because the sandbox ended: wait_ready tells why. */
        if (r == CCSB_E_STATE) {
            r = wait_ready(s, bs, err, errlen);
            if (r == 0)
                r = errf(err, errlen, CCSB_E_LAUNCH, "the sandbox did not take the command");
        }
        if (r < 0)
            goto fail;
        s->first_sent = 1;
    }
    /* The proxies' rules and resolver while bwrap builds the sandbox:
     * after READY only their listeners remain (bwrap_attach). */
    if (!bs->egress && (r = bwrap_egress_prepare(s, bs, err, errlen)) < 0)
        goto fail;
    bwrap_plan_clear(&plan); /* (sent: freed while bwrap works, not after READY) */
    r = wait_ready(s, bs, err, errlen);
    if (r < 0)
        goto fail;
    bs->started = 1;
    return 0;

fail:
    bs->dead = 1;
    egress_pair_free(bs->egress); /* (prepared only: nothing of it on the loop) */
    bs->egress = NULL;
    bwrap_teardown(bs); /* children, placeholders, cgroups, fds */
    bwrap_plan_clear(&plan);
    return r;
}
