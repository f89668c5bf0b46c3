#include "guard/target.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include "guard/unotify.h"

static const char *field(const char *text, const char *name)
{
    size_t n = strlen(name);
    for (const char *p = text; p && *p;) {
        if (strncmp(p, name, n) == 0 && p[n] == ':')
            return p + n + 1;
        p = strchr(p, '\n');
        if (p)
            p++;
    }
    return NULL;
}

/* Reads up to max unsigned numbers from one status line. */
static int numbers(const char *p, unsigned long long *v, int max, int base)
{
    int n = 0;
    while (p && *p && *p != '\n') {
        while (*p == ' ' || *p == '\t')
            p++;
        if (*p == '\n' || !*p)
            break;
        char *end;
        errno = 0;
        unsigned long long x = strtoull(p, &end, base);
        if (end == p || errno)
            return -1;
        if (n >= max)
            return -1;
        v[n++] = x;
        p = end;
    }
    return n;
}

/* The last number of a line such as "NSpid:\t812\t3" (innermost namespace). */
static int last_number(const char *text, const char *name, pid_t *out)
{
    unsigned long long v[64];
    int n = numbers(field(text, name), v, 64, 10);
    if (n <= 0)
        return -1;
    *out = (pid_t)v[n - 1];
    return 0;
}

int target_parse_status(const char *text, struct target *t)
{
    unsigned long long v[TARGET_MAX_GROUPS];
    if (numbers(field(text, "Uid"), v, 4, 10) != 4)
        return -EPROTO;
    t->creds.fsuid = (uid_t)v[3];
    if (numbers(field(text, "Gid"), v, 4, 10) != 4)
        return -EPROTO;
    t->creds.fsgid = (gid_t)v[3];
    if (numbers(field(text, "Umask"), v, 1, 8) != 1)
        return -EPROTO;
    t->creds.umask = (mode_t)(v[0] & 0777);
    int ng = numbers(field(text, "Groups"), v, TARGET_MAX_GROUPS, 10);
    if (ng < 0)
        return -E2BIG; /* more groups than we can switch to: deny */
    t->creds.ngroups = ng;
    for (int i = 0; i < ng; i++)
        t->creds.groups[i] = (gid_t)v[i];
    if (last_number(text, "NStgid", &t->nstgid) < 0 || last_number(text, "NSpid", &t->nstid) < 0)
        return -EPROTO;
    if (numbers(field(text, "CapEff"), v, 1, 16) != 1)
        return -EPROTO;
    t->cap_net_bind = (v[0] >> 10) & 1; /* CAP_NET_BIND_SERVICE */
    return 0;
}

static int read_file(const char *path, char *buf, size_t cap)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    size_t len = 0;
    for (;;) {
        ssize_t k = read(fd, buf + len, cap - 1 - len);
        if (k < 0 && errno == EINTR)
            continue;
        if (k < 0) {
            int e = errno;
            close(fd);
            return -e;
        }
        if (k == 0)
            break;
        len += (size_t)k;
        if (len == cap - 1)
            break;
    }
    close(fd);
    buf[len] = 0;
    return (int)len;
}

int target_open(struct target *t, pid_t tid)
{
    memset(t, 0, sizeof *t);
    t->tid = tid;
    t->rootfd = t->cwdfd = t->pidfd = -1;
    char path[64], buf[8192];
    snprintf(path, sizeof path, "/proc/%d/status", (int)tid);
    int r = read_file(path, buf, sizeof buf);
    if (r < 0)
        return r;
    r = target_parse_status(buf, t);
    if (r < 0)
        return r;
    snprintf(path, sizeof path, "/proc/%d/root", (int)tid);
    t->rootfd = open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (t->rootfd < 0)
        return -errno;
    return 0;
}

void target_close(struct target *t)
{
    if (t->rootfd >= 0 && !t->cached)
        close(t->rootfd);
    if (t->cwdfd >= 0)
        close(t->cwdfd);
    if (t->pidfd >= 0 && !t->cached)
        close(t->pidfd);
    t->rootfd = t->cwdfd = t->pidfd = -1;
}

static void entry_drop(struct target_cache_entry *e)
{
    if (e->tid) {
        close(e->status_fd);
        close(e->root_fd);
        close(e->pid_fd);
    }
    memset(e, 0, sizeof *e);
}

void target_cache_init(struct target_cache *c)
{
    memset(c, 0, sizeof *c);
}

void target_cache_clear(struct target_cache *c)
{
    for (int i = 0; i < TARGET_CACHE_SIZE; i++)
        entry_drop(&c->e[i]);
}

static int pread_status(int fd, char *buf, size_t cap)
{
    size_t len = 0;
    for (;;) {
        ssize_t k = pread(fd, buf + len, cap - 1 - len, (off_t)len);
        if (k < 0 && errno == EINTR)
            continue;
        if (k < 0)
            return -errno;
        if (k == 0 || (len += (size_t)k) == cap - 1)
            break;
    }
    buf[len] = 0;
    return (int)len;
}

int target_open_cached(struct target_cache *c, struct target *t, pid_t tid,
                       int (*host)(void *ud), void *ud)
{
    memset(t, 0, sizeof *t);
    t->tid = tid;
    t->rootfd = t->cwdfd = t->pidfd = -1;
    char buf[8192];
    c->clock++;
    struct target_cache_entry *slot = &c->e[0];
    for (int i = 0; i < TARGET_CACHE_SIZE; i++) {
        struct target_cache_entry *e = &c->e[i];
        if (e->tid == tid) {
            int r = pread_status(e->status_fd, buf, sizeof buf);
            if (r >= 0 && (r = target_parse_status(buf, t)) == 0) {
                e->used = c->clock;
                t->rootfd = e->root_fd;
                t->pidfd = e->pid_fd;
                t->cached = 1;
                return 0;
            }
            entry_drop(e); /* that task is gone: start afresh */
        }
        if (e->used < slot->used)
            slot = e;
    }
    int r = host(ud);
    if (r < 0)
        return r;
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/status", (int)tid);
    int sfd = open(path, O_RDONLY | O_CLOEXEC);
    if (sfd < 0)
        return -errno;
    r = pread_status(sfd, buf, sizeof buf);
    if (r >= 0)
        r = target_parse_status(buf, t);
    int rfd = -1, pfd = -1;
    if (r == 0) {
        snprintf(path, sizeof path, "/proc/%d/root", (int)tid);
        rfd = open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);
        r = rfd < 0 ? -errno : 0;
    }
    if (r == 0) {
        pfd = pidfd_open_tid(tid);
        r = pfd < 0 ? pfd : 0;
    }
    if (r < 0) {
        close(sfd);
        if (rfd >= 0)
            close(rfd);
        return r;
    }
    entry_drop(slot);
    *slot = (struct target_cache_entry){tid, sfd, rfd, pfd, c->clock};
    t->rootfd = rfd;
    t->pidfd = pfd;
    t->cached = 1;
    return 0;
}

int target_cwd(struct target *t)
{
    if (t->cwdfd >= 0)
        return t->cwdfd;
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/cwd", (int)t->tid);
    t->cwdfd = open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);
    return t->cwdfd >= 0 ? t->cwdfd : -errno;
}

int target_pidfd(struct target *t)
{
    if (t->pidfd >= 0)
        return t->pidfd;
    int r = pidfd_open_tid(t->tid);
    if (r < 0)
        return r;
    t->pidfd = r;
    return r;
}

int target_getfd(struct target *t, int n)
{
    if (n < 0)
        return -EBADF;
    int pfd = target_pidfd(t);
    if (pfd < 0)
        return pfd;
    return pidfd_dup(pfd, n);
}

int target_read(struct target *t, uint64_t addr, void *buf, size_t len)
{
    size_t done = 0;
    while (done < len) {
        struct iovec local = {(char *)buf + done, len - done};
        struct iovec remote = {(void *)(uintptr_t)(addr + done), len - done};
        ssize_t k = process_vm_readv(t->tid, &local, 1, &remote, 1, 0);
        if (k < 0 && errno == EINTR)
            continue;
        if (k < 0)
            return -errno;
        if (k == 0)
            return -EFAULT;
        done += (size_t)k;
    }
    return 0;
}

long target_read_str(struct target *t, uint64_t addr, char *buf, size_t cap)
{
    /* Read page by page so a string that ends just before an unmapped page
     * is still read whole. */
    size_t len = 0;
    while (len < cap) {
        uint64_t a = addr + len;
        size_t chunk = 4096 - (size_t)(a & 4095);
        if (chunk > cap - len)
            chunk = cap - len;
        struct iovec local = {buf + len, chunk};
        struct iovec remote = {(void *)(uintptr_t)a, chunk};
        ssize_t k = process_vm_readv(t->tid, &local, 1, &remote, 1, 0);
        if (k < 0 && errno == EINTR)
            continue;
        if (k < 0)
            return -errno;
        if (k == 0)
            return -EFAULT;
        void *nul = memchr(buf + len, 0, (size_t)k);
        if (nul)
            return (long)((char *)nul - buf);
        len += (size_t)k;
    }
    return -ENAMETOOLONG;
}

int target_ctty(struct target *t, dev_t *out, pid_t *sid)
{
    char path[64], buf[4096];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)t->tid);
    int r = read_file(path, buf, sizeof buf);
    if (r < 0)
        return r;
    /* The command name may hold spaces and parentheses: fields start after
     * the last ')'. Field 7 is tty_nr; after ')' come state(3) ppid(4)
     * pgrp(5) session(6) tty_nr(7). */
    char *p = strrchr(buf, ')');
    if (!p)
        return -EPROTO;
    unsigned long long v[5];
    int n = 0;
    p++;
    while (n < 5 && *p) {
        while (*p == ' ')
            p++;
        if (n == 0) { /* state is a letter */
            while (*p && *p != ' ')
                p++;
            v[n++] = 0;
            continue;
        }
        char *end;
        long long x = strtoll(p, &end, 10);
        if (end == p)
            return -EPROTO;
        v[n++] = (unsigned long long)x;
        p = end;
    }
    if (n < 5)
        return -EPROTO;
    *out = (dev_t)v[4];
    *sid = (pid_t)v[3];
    return 0;
}
