/*
 * A session's egress proxy pair: one HTTP/HTTPS proxy (CONNECT and
 * absolute-URI forwarding) and one SOCKS5 proxy on the context's libevent
 * base, judging every connection against the session's rules.
 *
 * Everything here runs on the loop thread that owns `base`.
 */
#ifndef CCSB_EGRESS_EGRESS_H
#define CCSB_EGRESS_EGRESS_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

struct event_base;
struct ccsb_spec;
struct egress_pair;

/* Called for every refusal: target "host:port", reason as the proxy says it.
 * Must not free the pair. */
typedef void (*egress_violation_fn)(void *ud, const char *target, const char *reason);

/*
 * http_listen_fd/socks_listen_fd: listening TCP sockets (e.g. made by
 * ccsb-init inside the sandbox's network namespace), or -1 to bind
 * 127.0.0.1 on an ephemeral port. On success the pair owns the fds it was
 * given (closed by egress_pair_free); on failure the caller still owns them.
 * When a proxy binds its own port it requires the per-session credential
 * (HTTP proxy authentication, SOCKS5 username/password) so other local
 * processes cannot use it; egress_pair_proxy_url embeds it.
 * Returns 0, CCSB_E_SPEC (bad egress entry), CCSB_E_NOMEM or CCSB_E_IO, with err.
 */
int egress_pair_new(struct event_base *base, const struct ccsb_spec *spec,
                    int http_listen_fd, int socks_listen_fd,
                    egress_violation_fn on_violation, void *ud,
                    struct egress_pair **out, char *err, size_t errlen);

struct egress_opts {
    /* Chain allowed connections through this HTTP proxy ("http://[user:pass@]host:port"),
     * with a CONNECT to the checked address. NULL: connect directly. */
    const char *upstream_proxy;
    /* Resolve names from this hosts file before DNS, instead of /etc/hosts (tests). */
    const char *hosts_file;
    /* Nameservers and options from this file instead of /etc/resolv.conf (tests). */
    const char *resolv_conf;
    /* -1: credential required exactly when the pair binds its own port; 0 or 1 to force. */
    int require_auth;
    /* Resolution + connection limit for one dial; 0: 30 s. */
    unsigned dial_timeout_ms;
    /* A client that sends no complete request head (or SOCKS handshake) for
     * this long is dropped; also the keep-alive idle limit. 0: 60 s. */
    unsigned idle_timeout_ms;
};

/*
 * egress_pair_new in two steps, for a backend that gets its listening
 * sockets late (bubblewrap: with READY) and would rather not build the
 * rules and the resolver then: prepare does everything but listen, listen
 * takes the fds as egress_pair_new does (same ownership rules; a failed
 * listen leaves the pair as prepared). prepare adds nothing to the base,
 * so it (and egress_pair_free of a pair that never listened) may run on
 * another thread while the base runs, as bwrap_start does on the
 * launching thread; listen registers on the base: its thread only.
 */
int egress_pair_prepare(struct event_base *base, const struct ccsb_spec *spec,
                        egress_violation_fn on_violation, void *ud,
                        const struct egress_opts *opts, struct egress_pair **out, char *err,
                        size_t errlen);
int egress_pair_listen(struct egress_pair *p, int http_listen_fd, int socks_listen_fd,
                       char *err, size_t errlen);

/* egress_pair_new with options (NULL: defaults). */
int egress_pair_new_opts(struct event_base *base, const struct ccsb_spec *spec,
                         int http_listen_fd, int socks_listen_fd,
                         egress_violation_fn on_violation, void *ud,
                         const struct egress_opts *opts,
                         struct egress_pair **out, char *err, size_t errlen);

uint16_t egress_pair_http_port(const struct egress_pair *p);
uint16_t egress_pair_socks_port(const struct egress_pair *p);

/*
 * The proxy URL for the sandbox's environment: scheme "http" or "socks5h"
 * (also "socks5"). Includes "user:password@" when the pair requires its
 * credential. malloc'd; NULL on a bad scheme or ENOMEM.
 */
char *egress_pair_proxy_url(const struct egress_pair *p, const char *scheme);
/* The same URL from its parts ("scheme://[cred@]127.0.0.1:port"), for a
 * backend that knows its ports before the pair exists. */
char *egress_proxy_url(const char *scheme, const char *cred, uint16_t port);
/* The credential as "user:password", or NULL when none is required. */
const char *egress_pair_credential(const struct egress_pair *p);

/* Per-session counters into obj: connectionsAllowed, connectionsRefused,
 * bytesUp (sandbox to world), bytesDown, httpProxyPort, socksProxyPort. */
void egress_pair_stats(const struct egress_pair *p, json_t *obj);

/* Closes every connection and listener. NULL-safe. */
void egress_pair_free(struct egress_pair *p);

#endif
