/* The host <-> ccsb-init control protocol: message and exec-data codecs. */
#include "backend/init_proto.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/fd.h"

void init_msg_init(struct init_msg *m, uint32_t type, uint64_t id)
{
    memset(m, 0, sizeof *m);
    m->type = type;
    m->id = id;
}

void init_msg_text(struct init_msg *m, const char *text)
{
    size_t n = text ? strlen(text) : 0;
    if (n >= sizeof m->text)
        n = sizeof m->text - 1;
    if (n)
        memcpy(m->text, text, n);
    m->text[n] = '\0';
}

int init_send(int sock, const struct init_msg *m, const int *fds, size_t nfds)
{
    if (nfds > INIT_MAX_FDS)
        return -EINVAL;
    union {
        char buf[CMSG_SPACE(sizeof(int) * INIT_MAX_FDS)];
        struct cmsghdr align;
    } u;
    struct iovec iov = {.iov_base = (void *)m, .iov_len = sizeof *m};
    struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1};
    if (nfds) {
        memset(&u, 0, sizeof u);
        mh.msg_control = u.buf;
        mh.msg_controllen = CMSG_SPACE(sizeof(int) * nfds);
        struct cmsghdr *c = CMSG_FIRSTHDR(&mh);
        c->cmsg_level = SOL_SOCKET;
        c->cmsg_type = SCM_RIGHTS;
        c->cmsg_len = CMSG_LEN(sizeof(int) * nfds);
        memcpy(CMSG_DATA(c), fds, sizeof(int) * nfds);
    }
    for (;;) {
        ssize_t n = sendmsg(sock, &mh, MSG_NOSIGNAL);
        if (n == (ssize_t)sizeof *m)
            return 0;
        if (n >= 0)
            return -EPROTO; /* seqpacket never sends a part */
        if (errno != EINTR)
            return -errno;
    }
}

static void close_all(int *fds, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (fds[i] >= 0)
            close(fds[i]);
        fds[i] = -1;
    }
}

int init_recv(int sock, struct init_msg *m, int *fds, size_t *nfds)
{
    size_t cap = *nfds;
    *nfds = 0;
    union {
        char buf[CMSG_SPACE(sizeof(int) * INIT_MAX_FDS)];
        struct cmsghdr align;
    } u;
    struct iovec iov = {.iov_base = m, .iov_len = sizeof *m};
    struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1,
                        .msg_control = u.buf, .msg_controllen = sizeof u.buf};
    ssize_t n;
    do
        n = recvmsg(sock, &mh, MSG_CMSG_CLOEXEC);
    while (n < 0 && errno == EINTR);
    if (n < 0)
        return -errno;
    if (n == 0 && !(mh.msg_flags & MSG_TRUNC))
        return 0;

    int got[INIT_MAX_FDS];
    size_t ngot = 0;
    int bad = 0;
    for (struct cmsghdr *c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c)) {
        if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) {
            bad = 1;
            continue;
        }
        size_t k = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
        for (size_t i = 0; i < k; i++) {
            int fd;
            memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof fd);
            if (ngot < INIT_MAX_FDS && (fd = fd_above_stdio(fd)) >= 0)
                got[ngot++] = fd;
            else if (fd >= 0)
                close(fd);
            else
                bad = 1; /* (could not be moved: the message is incomplete) */
        }
    }
    if (bad || (mh.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) || n != (ssize_t)sizeof *m ||
        ngot > cap) {
        close_all(got, ngot);
        return -EPROTO;
    }
    m->text[sizeof m->text - 1] = '\0';
    memcpy(fds, got, ngot * sizeof(int));
    *nfds = ngot;
    return 1;
}

static size_t vec_len(char *const *v)
{
    size_t n = 0;
    while (v && v[n])
        n++;
    return n;
}

static int write_all(int fd, const void *buf, size_t len)
{
    const char *p = buf;
    while (len) {
        ssize_t n = write(fd, p, len);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return -errno;
        }
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

int init_exec_data_pack(const char *cwd, char *const *argv, char *const *envp)
{
    size_t argc = vec_len(argv), envc = vec_len(envp);
    if (!cwd || argc == 0)
        return -EINVAL;
    size_t total = 2 * sizeof(uint32_t) + strlen(cwd) + 1;
    for (size_t i = 0; i < argc; i++)
        total += strlen(argv[i]) + 1;
    for (size_t i = 0; i < envc; i++)
        total += strlen(envp[i]) + 1;
    if (total > INIT_EXEC_DATA_MAX)
        return -E2BIG;

    char *buf = malloc(total);
    if (!buf)
        return -ENOMEM;
    uint32_t hdr[2] = {(uint32_t)argc, (uint32_t)envc};
    char *p = buf;
    memcpy(p, hdr, sizeof hdr);
    p += sizeof hdr;
    p = stpcpy(p, cwd) + 1;
    for (size_t i = 0; i < argc; i++)
        p = stpcpy(p, argv[i]) + 1;
    for (size_t i = 0; i < envc; i++)
        p = stpcpy(p, envp[i]) + 1;

    int fd = fd_above_stdio(memfd_create("ccsb-exec", MFD_CLOEXEC | MFD_ALLOW_SEALING));
    if (fd < 0) {
        int e = errno;
        free(buf);
        return -e;
    }
    int r = write_all(fd, buf, total);
    free(buf);
    /* Sealed so the receiver reads exactly what was checked here. */
    if (r == 0 && fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL) < 0)
        r = -errno;
    if (r < 0) {
        close(fd);
        return r;
    }
    return fd;
}

/* Splits n NUL-terminated strings starting at *p (bounded by end). */
static int take_strings(char **p, char *end, size_t n, char **out)
{
    for (size_t i = 0; i < n; i++) {
        char *z = memchr(*p, '\0', (size_t)(end - *p));
        if (!z)
            return -EPROTO;
        out[i] = *p;
        *p = z + 1;
    }
    out[n] = NULL;
    return 0;
}

int init_exec_data_unpack(int fd, struct init_exec_data *out)
{
    memset(out, 0, sizeof *out);
    struct stat st;
    if (fstat(fd, &st) < 0)
        return -errno;
    if (!S_ISREG(st.st_mode) || st.st_size < (off_t)(2 * sizeof(uint32_t) + 1) ||
        (uint64_t)st.st_size > INIT_EXEC_DATA_MAX)
        return -EPROTO;
    size_t size = (size_t)st.st_size;
    char *buf = malloc(size);
    if (!buf)
        return -ENOMEM;
    size_t off = 0;
    while (off < size) {
        ssize_t n = pread(fd, buf + off, size - off, (off_t)off);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            int e = n < 0 ? errno : EPROTO;
            free(buf);
            return -e;
        }
        off += (size_t)n;
    }
    uint32_t hdr[2];
    memcpy(hdr, buf, sizeof hdr);
    /* Each string takes at least one byte: a cheap bound before allocating. */
    if (hdr[0] == 0 || (uint64_t)hdr[0] + hdr[1] + 1 > size) {
        free(buf);
        return -EPROTO;
    }
    out->buf = buf;
    out->argv = calloc((size_t)hdr[0] + 1, sizeof(char *));
    out->envp = calloc((size_t)hdr[1] + 1, sizeof(char *));
    if (!out->argv || !out->envp) {
        init_exec_data_free(out);
        return -ENOMEM;
    }
    char *p = buf + sizeof hdr, *end = buf + size;
    char *cwdv[2];
    if (take_strings(&p, end, 1, cwdv) < 0 || take_strings(&p, end, hdr[0], out->argv) < 0 ||
        take_strings(&p, end, hdr[1], out->envp) < 0 || p != end) {
        init_exec_data_free(out);
        return -EPROTO;
    }
    out->cwd = cwdv[0];
    return 0;
}

void init_exec_data_free(struct init_exec_data *d)
{
    free(d->buf);
    free(d->argv);
    free(d->envp);
    memset(d, 0, sizeof *d);
}
