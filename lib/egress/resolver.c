#include "egress/resolver.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include <event2/dns.h>
#include <event2/event.h>
#include <event2/util.h>

/*
 * Freeing an evdns_base while a cancelled lookup still owes its callback is
 * a use-after-free inside libevent 2.1 (the pending sub-request callbacks
 * run later and touch the base). So the resolver counts lookups whose
 * callback has not run yet, and when freed with some outstanding it only
 * marks itself dying; the last callback frees it from a fresh loop turn.
 */
struct resolver {
    struct event_base *base;
    struct evdns_base *dns;
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

struct resolver *resolver_new(struct event_base *base, const char *hosts_file,
                              const char *resolv_conf, char *err, size_t errlen)
{
    struct resolver *r = calloc(1, sizeof *r);
    if (!r) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    r->base = base;
    r->dns = evdns_base_new(base, EVDNS_BASE_DISABLE_WHEN_INACTIVE);
    r->reap = event_new(base, -1, 0, reap_cb, r);
    if (!r->dns || !r->reap) {
        snprintf(err, errlen, "cannot create the DNS resolver");
        if (r->dns)
            evdns_base_free(r->dns, 0);
        if (r->reap)
            event_free(r->reap);
        free(r);
        return NULL;
    }
    /* No search list ("search", "domain" or the host's own domain): the name
     * resolved must be the name the rules judged, never that name with a
     * suffix appended after an NXDOMAIN. */
    int opts = DNS_OPTIONS_ALL & ~DNS_OPTION_SEARCH;
    if (hosts_file)
        opts &= ~DNS_OPTION_HOSTSFILE;
    /* A missing resolv.conf leaves the default nameserver; names in the
     * hosts file still resolve, others fail as unreachable. */
    (void)evdns_base_resolv_conf_parse(r->dns, opts,
                                       resolv_conf ? resolv_conf : "/etc/resolv.conf");
    if (hosts_file && evdns_base_load_hosts(r->dns, hosts_file) != 0) {
        snprintf(err, errlen, "cannot read hosts file %s", hosts_file);
        evdns_base_free(r->dns, 0);
        event_free(r->reap);
        free(r);
        return NULL;
    }
    return r;
}

static void destroy(struct resolver *r)
{
    evdns_base_free(r->dns, 1);
    event_free(r->reap);
    free(r);
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
    q->pending = 1;
    r->outstanding++;
    struct evdns_getaddrinfo_request *req = evdns_getaddrinfo(r->dns, host, NULL, &hints, gai_cb, q);
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
