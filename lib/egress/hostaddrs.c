#include "egress/hostaddrs.h"
#include "util/fd.h"

#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#ifdef __linux__
#include <linux/netlink.h>
#include <linux/rtnetlink.h>

static int watch_open(void)
{
    int fd = fd_above_stdio(socket(AF_NETLINK, SOCK_RAW | SOCK_NONBLOCK | SOCK_CLOEXEC, NETLINK_ROUTE));
    if (fd < 0)
        return -1;
    struct sockaddr_nl sa;
    memset(&sa, 0, sizeof sa);
    sa.nl_family = AF_NETLINK;
    sa.nl_groups = RTMGRP_IPV4_IFADDR | RTMGRP_IPV6_IFADDR;
    if (bind(fd, (struct sockaddr *)&sa, sizeof sa) < 0) {
        close(fd);
        return -1;
    }
    return fd;
}

/* 1 when the kernel announced a change (or we cannot tell), 0 when quiet. */
static int watch_changed(int fd)
{
    int changed = 0;
    char buf[4096];
    for (int i = 0; i < 64; i++) {
        ssize_t n = recv(fd, buf, sizeof buf, MSG_DONTWAIT);
        if (n > 0) {
            changed = 1;
            continue;
        }
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            return changed;
        if (n < 0 && errno == EINTR)
            continue;
        /* ENOBUFS: notifications were lost, so something changed. */
        return 1;
    }
    return 1; /* a flood: re-read rather than keep draining */
}
#else
static int watch_open(void)
{
    errno = ENOSYS;
    return -1;
}

static int watch_changed(int fd)
{
    (void)fd;
    return 1;
}
#endif

void hostaddrs_cache_init(struct hostaddrs_cache *c)
{
    memset(c, 0, sizeof *c);
    c->watch = -1;
}

const struct egress_hostaddrs *hostaddrs_get(struct hostaddrs_cache *c)
{
    if (!c->tried) {
        /* Subscribe first: a change during the first read is then not lost. */
        c->tried = 1;
        c->watch = watch_open();
    }
    if (c->valid && c->watch >= 0 && !watch_changed(c->watch))
        return &c->cur;
    struct egress_hostaddrs fresh;
    if (egress_hostaddrs_load(&fresh) < 0) {
        c->valid = 0;
        return NULL;
    }
    egress_hostaddrs_clear(&c->cur);
    c->cur = fresh;
    c->valid = 1;
    return &c->cur;
}

void hostaddrs_cache_clear(struct hostaddrs_cache *c)
{
    egress_hostaddrs_clear(&c->cur);
    if (c->watch >= 0)
        close(c->watch);
    c->watch = -1;
    c->valid = c->tried = 0;
}
