/* The pair's insides, shared by the two proxies, the dialler and the relay. */
#ifndef CCSB_EGRESS_PAIR_INT_H
#define CCSB_EGRESS_PAIR_INT_H

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/time.h>

#include "egress/egress.h"
#include "egress/hostaddrs.h"
#include "egress/rules.h"

struct evconnlistener;
struct bufferevent;
struct resolver;

/* Every live connection object hangs on the pair so egress_pair_free can close it. */
struct pair_link {
    struct pair_link *prev, *next;
    void (*close)(struct pair_link *l);
};

struct egress_pair {
    struct event_base *base;
    struct resolver *resolver;
    struct egress_rules *rules;
    struct hostaddrs_cache own;  /* read at the first public address judged */
    struct evconnlistener *http_l, *socks_l;
    uint16_t http_port, socks_port;
    egress_violation_fn on_violation;
    void *ud;

    int http_auth, socks_auth;   /* credential required on that proxy */
    int require_auth;            /* egress_opts.require_auth, for egress_pair_listen */
    char user[8];
    char pass[40];
    char cred[48];               /* "user:pass" */
    char basic[96];              /* base64("user:pass") */

    int has_upstream;
    struct sockaddr_storage up_addr;
    socklen_t up_len;
    char up_basic[400];          /* base64 of the upstream's user:pass, "" when none */

    struct timeval dial_tv, idle_tv;
    uint64_t allowed, refused, bytes_up, bytes_down;
    struct pair_link conns;      /* list head */
};

void pair_link_add(struct egress_pair *p, struct pair_link *l);
void pair_link_del(struct pair_link *l);
/* Counts a refusal and tells the host. */
void pair_refuse(struct egress_pair *p, const char *target, const char *reason);
/* Constant-time comparison of a presented secret with the expected one. */
int pair_secret_eq(const char *a, size_t an, const char *b);
/* Reads what the client already sent into the input buffer; 1 when anything came. */
int pair_read_now(struct bufferevent *bev);
/* Socket options every proxied TCP socket gets (NODELAY, big reads). */
void pair_tune(struct bufferevent *bev);

/* 1 for 127/8, ::1 and ::ffff:127/104. */
int pair_is_loopback(const struct sockaddr *sa);
/* Tunes a listening socket whose connections come from the sandbox (see pair.c);
 * accepted sockets inherit it. */
void pair_tune_local_listener(int fd);

/* The HTTP and SOCKS5 accept handlers (http_proxy.c, socks5.c). */
void http_proxy_accept(struct egress_pair *p, int fd);
void socks5_accept(struct egress_pair *p, int fd);

#endif
