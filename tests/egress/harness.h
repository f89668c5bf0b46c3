/*
 * Loopback test harness for the egress proxies: the proxies' event loop on
 * its own thread, a threaded HTTP test server, and blocking clients with
 * timeouts (every wait is bounded; nothing here can hang a test run).
 */
#ifndef CCSB_TESTS_EGRESS_HARNESS_H
#define CCSB_TESTS_EGRESS_HARNESS_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

struct event_base;
struct event;

/* The proxies' loop: create pairs on base first, then loop_start. */
struct loop {
    struct event_base *base;
    pthread_t th;
    int pipe[2];
    struct event *stop_ev;
    int running;
};
void loop_init(struct loop *l);
void loop_start(struct loop *l);
void loop_stop(struct loop *l); /* joins; pairs may be freed afterwards */
void loop_fini(struct loop *l);

/* Violations reported by a pair (thread-safe). */
#define VREC_MAX 32
struct vrec {
    pthread_mutex_t mu;
    int n;
    char target[VREC_MAX][300];
    char reason[VREC_MAX][400];
};
void vrec_init(struct vrec *v);
void vrec_cb(void *ud, const char *target, const char *reason);
int vrec_count(struct vrec *v);
/* 1 when some violation has this target and a reason containing fragment. */
int vrec_has(struct vrec *v, const char *target, const char *fragment);

/*
 * HTTP/1.1 test server on 127.0.0.1 (and ::1 when available). Answers each
 * request with a text body describing what it received ("method target",
 * "host: ...", "body: N", "hdr: name" lines); keeps the connection alive
 * unless asked to close. Paths: "/chunked" answers chunked, "/close" answers
 * without a length and closes, "/big/N" answers N bytes.
 */
struct tserver {
    int fd4, fd6;
    uint16_t port4, port6;
    int stop[2];
    pthread_t th;
    pthread_mutex_t mu;
    pthread_t conns[64];
    int nconns;
    int accepted;
};
void tserver_start(struct tserver *s);
void tserver_stop(struct tserver *s);


/* Blocking client helpers; every wait is bounded by 5 s. */
int tcp_connect(const char *ip, uint16_t port);
int send_str(int fd, const char *s);
int send_bytes(int fd, const void *p, size_t n);
/* Reads exactly n bytes; -1 on EOF/timeout. */
int recv_exact(int fd, void *buf, size_t n);
/* Reads one HTTP response (head + body by its framing) into buf; returns
 * the status code, -1 on timeout/EOF/overflow. *body points into buf. */
int read_response(int fd, char *buf, size_t cap, const char **body);
/* The answer to CONNECT (or HEAD): the head only when 200, head and body otherwise. */
int read_connect_response(int fd, char *buf, size_t cap, const char **body);
/* Reads until EOF (bounded); returns bytes or -1. */
long read_to_eof(int fd, char *buf, size_t cap);
/* 1 when the peer closes within ms milliseconds. */
int closes_within(int fd, int ms);

/* A file in a fresh temp dir with this content; path returned in buf.
 * remove_temp deletes the file and its dir. */
void write_temp(const char *name, const char *content, char *path, size_t cap);
void remove_temp(const char *path);

/* A listening socket on 127.0.0.1 (or ::1 for AF_INET6), port 0. */
int listen_loopback(int family, uint16_t *port);

/* Runs argv (no shell), stdout into out (NUL-terminated); exit status or -1. */
int run_capture(char *const argv[], char *out, size_t cap);

#endif
