#include "egress/resolver.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <event2/dns.h>
#include <event2/event.h>
#include <event2/util.h>

#include "util/fd.h"

/*
 * Freeing an evdns_base while a cancelled lookup still owes its callback is
 * a use-after-free inside libevent 2.1 (the pending sub-request callbacks
 * run later and touch the base). So the resolver counts lookups whose
 * callback has not run yet, and when freed with some outstanding it only
 * marks itself dying; the last callback frees it from a fresh loop turn.
 */
struct resolver {
    struct event_base *base;
    struct evdns_base *dns; /* made at the first name lookup */
    char *hosts_file, *resolv_conf;
    unsigned outstanding; /* evdns_getaddrinfo calls whose callback has not run */
    int dying;
    struct event *reap;   /* made up front: the deferred free cannot fail */
};

struct resolve_req {
    struct resolver *r;
    resolve_fn cb;
    void *arg;
    struct evdns_getaddrinfo_request *req;
    int pending;   /* evdns still owes us its callback */
    int cancelled;
    int err;
    struct evutil_addrinfo *ai;
    struct event *deliver;
};

static void reap_cb(evutil_socket_t fd, short what, void *arg);

static void resolver_release(struct resolver *r)
{
    if (r->dns)
        evdns_base_free(r->dns, 1);
    if (r->reap)
        event_free(r->reap);
    free(r->hosts_file);
    free(r->resolv_conf);
    free(r);
}

/*
 * Nothing is read here: a session whose connections name only addresses
 * (or make none) never parses resolv.conf or the hosts file. Only an
 * explicitly given hosts file is checked now, so a wrong path is an error
 * at creation rather than a failure at the first lookup.
 */
struct resolver *resolver_new(struct event_base *base, const char *hosts_file,
                              const char *resolv_conf, char *err, size_t errlen)
{
    struct resolver *r = calloc(1, sizeof *r);
    if (!r) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    r->base = base;
    r->reap = event_new(base, -1, 0, reap_cb, r);
    r->hosts_file = hosts_file ? strdup(hosts_file) : NULL;
    r->resolv_conf = resolv_conf ? strdup(resolv_conf) : NULL;
    if (!r->reap || (hosts_file && !r->hosts_file) || (resolv_conf && !r->resolv_conf)) {
        snprintf(err, errlen, "cannot create the DNS resolver: out of memory");
        resolver_release(r);
        return NULL;
    }
    if (hosts_file && access(hosts_file, R_OK) != 0) {
        snprintf(err, errlen, "cannot read hosts file %s: %s", hosts_file, strerror(errno));
        resolver_release(r);
        return NULL;
    }
    return r;
}

static struct evdns_base *make_dns(struct resolver *r);

/* The evdns base, made on first use; NULL when it cannot be. */
static struct evdns_base *dns_of(struct resolver *r)
{
    if (r->dns)
        return r->dns;
    /* evdns opens its nameserver sockets here: never on 0-2 of a host that
     * closed its standard streams. */
    int held[3];
    int n_held = fd_hold_stdio(held);
    struct evdns_base *dns = make_dns(r);
    fd_release_stdio(held, n_held);
    r->dns = dns;
    return dns;
}

static struct evdns_base *make_dns(struct resolver *r)
{
    struct evdns_base *dns = evdns_base_new(r->base, EVDNS_BASE_DISABLE_WHEN_INACTIVE);
    if (!dns)
        return NULL;
    /* No search list ("search", "domain" or the host's own domain): the name
     * resolved must be the name the rules judged, never that name with a
     * suffix appended after an NXDOMAIN. */
    int opts = DNS_OPTIONS_ALL & ~DNS_OPTION_SEARCH;
    if (r->hosts_file)
        opts &= ~DNS_OPTION_HOSTSFILE;
    /* A missing resolv.conf leaves the default nameserver; names in the
     * hosts file still resolve, others fail as unreachable. */
    (void)evdns_base_resolv_conf_parse(dns, opts,
                                       r->resolv_conf ? r->resolv_conf : "/etc/resolv.conf");
    if (r->hosts_file && evdns_base_load_hosts(dns, r->hosts_file) != 0) {
        evdns_base_free(dns, 0);
        return NULL;
    }
    return dns;
}

static void destroy(struct resolver *r)
{
    resolver_release(r);
}

static void reap_cb(evutil_socket_t fd, short what, void *arg)
{
    destroy(arg);
}

void resolver_free(struct resolver *r)
{
    if (!r)
        return;
    if (r->outstanding == 0) {
        destroy(r);
        return;
    }
    /* Lookups were cancelled; their callbacks still have to run. */
    r->dying = 1;
}

static void deliver_cb(evutil_socket_t fd, short what, void *arg)
{
    struct resolve_req *q = arg;
    resolve_fn cb = q->cb;
    void *cbarg = q->arg;
    int err = q->err;
    struct evutil_addrinfo *ai = q->ai;
    event_free(q->deliver);
    free(q);
    cb(cbarg, err, ai);
}

static void gai_cb(int err, struct evutil_addrinfo *ai, void *arg)
{
    struct resolve_req *q = arg;
    struct resolver *r = q->r;
    q->pending = 0;
    q->req = NULL;
    if (--r->outstanding == 0 && r->dying)
        event_active(r->reap, EV_TIMEOUT, 0); /* not from inside evdns's own call */
    if (q->cancelled) {
        if (ai)
            evutil_freeaddrinfo(ai);
        free(q);
        return;
    }
    q->err = err;
    q->ai = ai;
    event_active(q->deliver, EV_TIMEOUT, 0);
}

struct resolve_req *resolve_start(struct resolver *r, const char *host, resolve_fn cb, void *arg)
{
    struct resolve_req *q = calloc(1, sizeof *q);
    if (!q)
        return NULL;
    q->r = r;
    q->cb = cb;
    q->arg = arg;
    q->deliver = event_new(r->base, -1, 0, deliver_cb, q);
    if (!q->deliver) {
        free(q);
        return NULL;
    }
    struct evutil_addrinfo hints;
    memset(&hints, 0, sizeof hints);
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_protocol = IPPROTO_TCP;
    unsigned char scratch[16];
    if (evutil_inet_pton(AF_INET, host, scratch) == 1 ||
        evutil_inet_pton(AF_INET6, host, scratch) == 1) {
        /* An address needs no DNS machinery: parse it, deliver from the loop. */
        hints.ai_flags = EVUTIL_AI_NUMERICHOST;
        q->err = evutil_getaddrinfo(host, NULL, &hints, &q->ai);
        event_active(q->deliver, EV_TIMEOUT, 0);
        return q;
    }
    struct evdns_base *dns = dns_of(r);
    if (!dns) {
        q->err = EVUTIL_EAI_FAIL;
        event_active(q->deliver, EV_TIMEOUT, 0);
        return q;
    }
    q->pending = 1;
    r->outstanding++;
    struct evdns_getaddrinfo_request *req = evdns_getaddrinfo(dns, host, NULL, &hints, gai_cb, q);
    if (q->pending)
        q->req = req;
    return q;
}

void resolve_cancel(struct resolve_req *q)
{
    if (!q)
        return;
    event_free(q->deliver);
    q->deliver = NULL;
    if (q->pending) {
        /* evdns calls gai_cb with EVUTIL_EAI_CANCEL (perhaps right now), which frees q. */
        q->cancelled = 1;
        evdns_getaddrinfo_cancel(q->req);
        return;
    }
    if (q->ai)
        evutil_freeaddrinfo(q->ai);
    free(q);
}
