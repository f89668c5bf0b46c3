/*
 * Networking inside the sandbox: the proxy listeners ccsb-init hands to the
 * host, and `ccsb-init connect`, an ssh ProxyCommand that reaches HOST:PORT
 * through the session's SOCKS5 port (the only way out of the namespace).
 */
#include "init.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

int net_listen_loopback(int port, int *bound)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -errno;
    int one = 1;
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port),
                            .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof a;
    if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) < 0 ||
        bind(fd, (struct sockaddr *)&a, sizeof a) < 0 || listen(fd, SOMAXCONN) < 0 ||
        getsockname(fd, (struct sockaddr *)&a, &len) < 0) {
        int e = errno;
        close(fd);
        return -e;
    }
    *bound = ntohs(a.sin_port);
    return fd;
}

static int io_all(int fd, void *buf, size_t len, int writing)
{
    char *p = buf;
    while (len) {
        ssize_t n = writing ? write(fd, p, len) : read(fd, p, len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return -1;
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

static const char *socks_reply_text(int rep)
{
    switch (rep) {
    case 1: return "general failure";
    case 2: return "connection not allowed by the sandbox's egress rules";
    case 3: return "network unreachable";
    case 4: return "host unreachable";
    case 5: return "connection refused";
    case 6: return "TTL expired";
    case 7: return "command not supported";
    case 8: return "address type not supported";
    default: return "unknown error";
    }
}

/* SOCKS5 CONNECT (no auth). Returns 0 or -1 with a message printed. */
static int socks_connect(int fd, const char *host, uint16_t port)
{
    unsigned char b[300];
    memcpy(b, "\x05\x01\x00", 3);
    if (io_all(fd, b, 3, 1) < 0 || io_all(fd, b, 2, 0) < 0 || b[0] != 5 || b[1] != 0) {
        fprintf(stderr, "ccsb-init connect: the SOCKS5 proxy refused the greeting\n");
        return -1;
    }
    size_t n = 0;
    b[n++] = 5;
    b[n++] = 1;
    b[n++] = 0;
    struct in_addr v4;
    struct in6_addr v6;
    if (inet_pton(AF_INET, host, &v4) == 1) {
        b[n++] = 1;
        memcpy(b + n, &v4, 4);
        n += 4;
    } else if (inet_pton(AF_INET6, host, &v6) == 1) {
        b[n++] = 4;
        memcpy(b + n, &v6, 16);
        n += 16;
    } else {
        size_t hl = strlen(host);
        if (hl == 0 || hl > 255) {
            fprintf(stderr, "ccsb-init connect: bad host name\n");
            return -1;
        }
        b[n++] = 3;
        b[n++] = (unsigned char)hl;
        memcpy(b + n, host, hl);
        n += hl;
    }
    b[n++] = (unsigned char)(port >> 8);
    b[n++] = (unsigned char)port;
    if (io_all(fd, b, n, 1) < 0 || io_all(fd, b, 4, 0) < 0 || b[0] != 5) {
        fprintf(stderr, "ccsb-init connect: no reply from the SOCKS5 proxy\n");
        return -1;
    }
    if (b[1] != 0) {
        fprintf(stderr, "ccsb-init connect: %s:%u: %s\n", host, port, socks_reply_text(b[1]));
        return -1;
    }
    size_t rest = b[3] == 1 ? 4 : b[3] == 4 ? 16 : 0;
    if (b[3] == 3) {
        if (io_all(fd, b, 1, 0) < 0)
            return -1;
        rest = b[0];
    } else if (!rest) {
        fprintf(stderr, "ccsb-init connect: bad SOCKS5 reply\n");
        return -1;
    }
    return io_all(fd, b, rest + 2, 0);
}

/* Copies stdin -> sock and sock -> stdout until the server side ends. */
static int relay(int sock)
{
    char buf[65536];
    int in_open = 1;
    for (;;) {
        struct pollfd p[2] = {{.fd = sock, .events = POLLIN},
                              {.fd = in_open ? STDIN_FILENO : -1, .events = POLLIN}};
        if (poll(p, 2, -1) < 0) {
            if (errno == EINTR)
                continue;
            return 1;
        }
        if (p[0].revents) {
            ssize_t n = read(sock, buf, sizeof buf);
            if (n < 0 && errno == EINTR)
                continue;
            if (n <= 0)
                return n < 0;
            if (io_all(STDOUT_FILENO, buf, (size_t)n, 1) < 0)
                return 1;
        }
        if (in_open && p[1].revents) {
            ssize_t n = read(STDIN_FILENO, buf, sizeof buf);
            if (n < 0 && errno == EINTR)
                continue;
            if (n <= 0) {
                in_open = 0;
                shutdown(sock, SHUT_WR);
            } else if (io_all(sock, buf, (size_t)n, 1) < 0) {
                return 1;
            }
        }
    }
}

/* The SOCKS port from ALL_PROXY=socks5h://127.0.0.1:PORT when not given. */
static int port_from_env(uint64_t *port)
{
    const char *v = getenv("ALL_PROXY");
    if (!v)
        v = getenv("all_proxy");
    const char *colon = v ? strrchr(v, ':') : NULL;
    if (!colon)
        return -1;
    char digits[8];
    size_t n = strcspn(colon + 1, "/");
    if (n == 0 || n >= sizeof digits)
        return -1;
    memcpy(digits, colon + 1, n);
    digits[n] = '\0';
    return parse_u64(digits, 65535, port);
}

int connect_main(int argc, char **argv)
{
    uint64_t socks_port = 0, port;
    int i = 1;
    if (i + 1 < argc && strcmp(argv[i], "--port") == 0) {
        if (parse_u64(argv[i + 1], 65535, &socks_port) < 0 || socks_port == 0) {
            fprintf(stderr, "ccsb-init connect: bad --port\n");
            return 2;
        }
        i += 2;
    } else if (port_from_env(&socks_port) < 0 || socks_port == 0) {
        fprintf(stderr, "ccsb-init connect: no --port and no ALL_PROXY in the environment\n");
        return 2;
    }
    if (argc - i != 2 || parse_u64(argv[i + 1], 65535, &port) < 0 || port == 0) {
        fprintf(stderr, "usage: ccsb-init connect [--port N] HOST PORT\n");
        return 2;
    }
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)socks_port),
                            .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof a) < 0) {
        fprintf(stderr, "ccsb-init connect: SOCKS5 proxy 127.0.0.1:%u: %s\n",
                (unsigned)socks_port, strerror(errno));
        return 1;
    }
    if (socks_connect(fd, argv[i], (uint16_t)port) < 0)
        return 1;
    return relay(fd);
}
