/*
 * Proxy throughput and tunnel setup rate against direct loopback, in one
 * run (ratios, not absolute numbers):
 *  - a bulk download (default 1 GiB) through an HTTP CONNECT tunnel vs the
 *    same download straight from the server; target >= 0.8x;
 *  - new CONNECT tunnels per second (a small request/response each) vs new
 *    direct connections; target >= 0.5x.
 * The server sends with the host's default congestion control, as any
 * server would. The proxy's own loopback leg uses Reno (see pair.c), so on a
 * host whose default is paced (BBR) the direct baseline pays pacing on its
 * one leg and the tunnel on one of its two: the bulk is measured a second
 * time against a Reno server too, where neither path is paced and the ratio
 * is the relay's cost alone. Both lines are printed; the target applies to
 * each.
 * Tunnels are also measured through a minimal relay written here: blocking,
 * one tunnel at a time, no parsing beyond the blank line, no rules, no
 * resolution, no events. It is not a proxy anyone should run; it is the
 * floor any CONNECT proxy pays on this machine (a second TCP connection, an
 * extra round trip for the 200, a third process to wake), printed so the
 * library's ratio can be read against what is possible at all.
 * Usage: egress-bench-proxy [bytes] [connections] [direct|proxy]
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <event2/event.h>

#include "egress/egress.h"
#include "spec/spec.h"

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void die(const char *what)
{
    fprintf(stderr, "egress-bench-proxy: %s: %s\n", what, strerror(errno));
    exit(1);
}

static int listen_any(uint16_t *port)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in sin = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t sl = sizeof sin;
    if (fd < 0 || bind(fd, (struct sockaddr *)&sin, sizeof sin) < 0 || listen(fd, 128) < 0 ||
        getsockname(fd, (struct sockaddr *)&sin, &sl) < 0)
        die("listen");
    *port = ntohs(sin.sin_port);
    return fd;
}

static int dial(uint16_t port)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in sin = {.sin_family = AF_INET, .sin_port = htons(port),
                              .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    if (fd < 0 || connect(fd, (struct sockaddr *)&sin, sizeof sin) < 0)
        die("connect");
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    return fd;
}

static void send_all(int fd, const void *p, size_t n)
{
    const char *c = p;
    while (n) {
        ssize_t w = send(fd, c, n, MSG_NOSIGNAL);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            die("send");
        c += w;
        n -= (size_t)w;
    }
}

/* Reads through the blank line after a head; returns bytes past it already read. */
static size_t read_head(int fd, char *buf, size_t cap, size_t *extra_off)
{
    size_t n = 0;
    for (;;) {
        ssize_t r = recv(fd, buf + n, cap - n, 0);
        if (r <= 0)
            die("recv head");
        n += (size_t)r;
        char *e = memmem(buf, n, "\r\n\r\n", 4);
        if (e) {
            *extra_off = (size_t)(e + 4 - buf);
            return n - *extra_off;
        }
        if (n == cap)
            die("head too long");
    }
}

/* A server: one connection at a time; "GET /bulk/N" or "GET /small". */
static char *chunk;
#define CHUNK (1 << 20)

static void *server(void *arg)
{
    int srv_fd = *(int *)arg;
    for (;;) {
        int c = accept4(srv_fd, NULL, NULL, SOCK_CLOEXEC);
        if (c < 0) {
            if (errno == EINTR)
                continue;
            return NULL; /* the listener was shut down */
        }
        char buf[4096];
        size_t off;
        read_head(c, buf, sizeof buf, &off);
        if (strncmp(buf, "GET /bulk/", 10) == 0) {
            size_t n = strtoull(buf + 10, NULL, 10);
            char h[128];
            int hl = snprintf(h, sizeof h, "HTTP/1.1 200 OK\r\nContent-Length: %zu\r\n\r\n", n);
            send_all(c, h, (size_t)hl);
            while (n) {
                size_t k = n < CHUNK ? n : CHUNK;
                send_all(c, chunk, k);
                n -= k;
            }
            /* wait for the client to finish and close */
            while (recv(c, buf, sizeof buf, 0) > 0)
                ;
        } else {
            static const char ok[] = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok";
            send_all(c, ok, sizeof ok - 1);
        }
        close(c);
    }
}

/* The floor: accept, read the CONNECT head, connect, 200, copy both ways
 * until both ended, close. Its upstream is always the benchmark's server. */
static void *floor_relay(void *arg)
{
    int lfd = ((int *)arg)[0];
    uint16_t srv_port = (uint16_t)((int *)arg)[1];
    static char buf[65536];
    for (;;) {
        int c = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
        if (c < 0) {
            if (errno == EINTR)
                continue;
            return NULL;
        }
        int one = 1;
        setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        size_t off;
        if (read_head(c, buf, sizeof buf, &off) != 0)
            die("floor: bytes after CONNECT");
        int u = dial(srv_port);
        static const char ok[] = "HTTP/1.1 200 Connection established\r\n\r\n";
        send_all(c, ok, sizeof ok - 1);
        struct pollfd pf[2] = {{c, POLLIN, 0}, {u, POLLIN, 0}};
        int open_dirs = 2;
        while (open_dirs) {
            if (poll(pf, 2, -1) < 0 && errno != EINTR)
                die("floor: poll");
            for (int i = 0; i < 2; i++) {
                if (pf[i].fd < 0 || !pf[i].revents)
                    continue;
                ssize_t n = recv(pf[i].fd, buf, sizeof buf, 0);
                int to = i ? c : u;
                if (n > 0) {
                    send_all(to, buf, (size_t)n);
                } else {
                    shutdown(to, SHUT_WR);
                    pf[i].fd = -1;
                    open_dirs--;
                }
            }
        }
        close(u);
        close(c);
    }
}

static void *loop_main(void *arg)
{
    event_base_loop(arg, EVLOOP_NO_EXIT_ON_EMPTY);
    return NULL;
}

static void stop_cb(evutil_socket_t fd, short w, void *arg)
{
    event_base_loopbreak(arg);
}

/* Opens a connection to the server, directly or through a CONNECT tunnel. */
static int open_path(uint16_t srv_port, uint16_t proxy_port, char *buf, size_t cap,
                     size_t *pending)
{
    *pending = 0;
    if (!proxy_port)
        return dial(srv_port);
    int fd = dial(proxy_port);
    char req[128];
    int n = snprintf(req, sizeof req, "CONNECT 127.0.0.1:%u HTTP/1.1\r\n\r\n", srv_port);
    send_all(fd, req, (size_t)n);
    size_t off;
    size_t extra = read_head(fd, buf, cap, &off);
    if (strncmp(buf, "HTTP/1.1 200", 12) != 0) {
        fprintf(stderr, "CONNECT refused: %.*s\n", 40, buf);
        exit(1);
    }
    if (extra) {
        fprintf(stderr, "unexpected bytes after CONNECT reply\n");
        exit(1);
    }
    return fd;
}

static double bulk(uint16_t srv_port, uint16_t proxy_port, size_t bytes, char *buf)
{
    size_t pending;
    double t0 = now();
    int fd = open_path(srv_port, proxy_port, buf, CHUNK, &pending);
    char req[64];
    int n = snprintf(req, sizeof req, "GET /bulk/%zu HTTP/1.1\r\n\r\n", bytes);
    send_all(fd, req, (size_t)n);
    size_t off;
    size_t got = read_head(fd, buf, CHUNK, &off);
    while (got < bytes) {
        ssize_t r = recv(fd, buf, CHUNK, 0);
        if (r <= 0)
            die("recv body");
        got += (size_t)r;
    }
    double dt = now() - t0;
    close(fd);
    return (double)bytes / dt;
}

static double tunnels(uint16_t srv_port, uint16_t proxy_port, int count, char *buf)
{
    double t0 = now();
    for (int i = 0; i < count; i++) {
        size_t pending;
        int fd = open_path(srv_port, proxy_port, buf, CHUNK, &pending);
        static const char req[] = "GET /small HTTP/1.1\r\n\r\n";
        send_all(fd, req, sizeof req - 1);
        size_t got = 0;
        for (;;) {
            ssize_t r = recv(fd, buf + got, CHUNK - got, 0);
            if (r < 0)
                die("recv small");
            if (r == 0)
                break;
            got += (size_t)r;
        }
        if (got < 4 || memcmp(buf + got - 2, "ok", 2) != 0) {
            fprintf(stderr, "bad small response\n");
            exit(1);
        }
        close(fd);
    }
    return count / (now() - t0);
}

int main(int argc, char **argv)
{
    size_t bytes = argc > 1 ? strtoull(argv[1], NULL, 10) : (size_t)1 << 30;
    int conns = argc > 2 ? atoi(argv[2]) : 500;
    /* "direct" or "proxy" runs one side only (for profiling); default both. */
    const char *only = argc > 3 ? argv[3] : "";
    int run_direct = strcmp(only, "proxy") != 0, run_proxy = strcmp(only, "direct") != 0;
    chunk = malloc(CHUNK);
    char *buf = malloc(CHUNK);
    if (!chunk || !buf)
        die("malloc");
    memset(chunk, 'x', CHUNK);

    uint16_t srv_port, reno_port;
    int srv_fd = listen_any(&srv_port), reno_fd = listen_any(&reno_port);
    static const char reno[] = "reno";
    if (setsockopt(reno_fd, IPPROTO_TCP, TCP_CONGESTION, reno, sizeof reno - 1) < 0)
        die("TCP_CONGESTION reno");
    char cc[32] = "";
    socklen_t ccl = sizeof cc - 1;
    if (getsockopt(srv_fd, IPPROTO_TCP, TCP_CONGESTION, cc, &ccl) < 0)
        die("TCP_CONGESTION");
    pthread_t srv_th, reno_th;
    pthread_create(&srv_th, NULL, server, &srv_fd);
    pthread_create(&reno_th, NULL, server, &reno_fd);

    struct event_base *base = event_base_new();
    struct ccsb_spec spec;
    memset(&spec, 0, sizeof spec);
    spec.network_enabled = 1;
    strv_push(&spec.egress_allow, "127.0.0.1");
    struct egress_opts o = {NULL, NULL, NULL, 0, 0, 0};
    struct egress_pair *pair = NULL;
    char err[256];
    if (egress_pair_new_opts(base, &spec, -1, -1, NULL, NULL, &o, &pair, err, sizeof err) != 0) {
        fprintf(stderr, "pair: %s\n", err);
        return 1;
    }
    int stop[2];
    if (pipe(stop) < 0)
        die("pipe");
    struct event *sev = event_new(base, stop[0], EV_READ, stop_cb, base);
    event_add(sev, NULL);
    pthread_t loop_th;
    pthread_create(&loop_th, NULL, loop_main, base);
    uint16_t pp = egress_pair_http_port(pair);
    uint16_t floor_port;
    int floor_arg[2] = {listen_any(&floor_port), srv_port};
    pthread_t floor_th;
    pthread_create(&floor_th, NULL, floor_relay, floor_arg);

    /* Interleaved, best of five each, so background load hits both alike. */
    double direct_bw = 0, proxy_bw = 0, direct_cps = 0, proxy_cps = 0, floor_cps = 0;
    double rdirect_bw = 0, rproxy_bw = 0;
    for (int rep = 0; rep < 5; rep++) {
        double d = run_direct ? bulk(srv_port, 0, bytes, buf) : 1;
        double p = run_proxy ? bulk(srv_port, pp, bytes, buf) : 1;
        if (d > direct_bw)
            direct_bw = d;
        if (p > proxy_bw)
            proxy_bw = p;
        d = run_direct ? bulk(reno_port, 0, bytes, buf) : 1;
        p = run_proxy ? bulk(reno_port, pp, bytes, buf) : 1;
        if (d > rdirect_bw)
            rdirect_bw = d;
        if (p > rproxy_bw)
            rproxy_bw = p;
        double dc = run_direct ? tunnels(srv_port, 0, conns, buf) : 1;
        double pc = run_proxy ? tunnels(srv_port, pp, conns, buf) : 1;
        double fc = run_direct && run_proxy ? tunnels(srv_port, floor_port, conns, buf) : 1;
        if (fc > floor_cps)
            floor_cps = fc;
        if (dc > direct_cps)
            direct_cps = dc;
        if (pc > proxy_cps)
            proxy_cps = pc;
    }
    printf("bulk %zu bytes, server on the default %s: direct %.2f GB/s, through CONNECT %.2f GB/s, "
           "ratio %.2f (target >= 0.80: %s)\n",
           bytes, cc, direct_bw / 1e9, proxy_bw / 1e9, proxy_bw / direct_bw,
           proxy_bw / direct_bw >= 0.8 ? "met" : "NOT met");
    printf("bulk %zu bytes, server on reno: direct %.2f GB/s, through CONNECT %.2f GB/s, "
           "ratio %.2f (target >= 0.80: %s)\n",
           bytes, rdirect_bw / 1e9, rproxy_bw / 1e9, rproxy_bw / rdirect_bw,
           rproxy_bw / rdirect_bw >= 0.8 ? "met" : "NOT met");
    printf("new connections (%d, request+response each): direct %.0f/s, CONNECT tunnels %.0f/s, "
           "ratio %.2f (target >= 0.50: %s)\n",
           conns, direct_cps, proxy_cps, proxy_cps / direct_cps,
           proxy_cps / direct_cps >= 0.5 ? "met" : "NOT met");
    printf("new connections through the minimal blocking relay (the floor): %.0f/s, ratio %.2f; "
           "the proxy reaches %.2f of the floor\n",
           floor_cps, floor_cps / direct_cps, proxy_cps / floor_cps);

    if (write(stop[1], "x", 1) != 1)
        die("write");
    pthread_join(loop_th, NULL);
    egress_pair_free(pair);
    event_free(sev);
    event_base_free(base);
    close(stop[0]);
    close(stop[1]);
    shutdown(floor_arg[0], SHUT_RDWR);
    pthread_join(floor_th, NULL);
    close(floor_arg[0]);
    shutdown(srv_fd, SHUT_RDWR);
    shutdown(reno_fd, SHUT_RDWR);
    pthread_join(srv_th, NULL);
    pthread_join(reno_th, NULL);
    close(srv_fd);
    close(reno_fd);
    strv_clear(&spec.egress_allow);
    free(chunk);
    free(buf);
    return 0;
}
