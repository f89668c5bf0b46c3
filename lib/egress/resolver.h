/*
 * Asynchronous name resolution on the host (evdns). Results are always
 * delivered from the event loop, never from inside resolve_start, so
 * callers have one code path.
 */
#ifndef CCSB_EGRESS_RESOLVER_H
#define CCSB_EGRESS_RESOLVER_H

#include <stddef.h>

#include <event2/util.h> /* struct evutil_addrinfo may be a macro for struct addrinfo */

struct event_base;
struct resolver;
struct resolve_req;

/* hosts_file NULL: /etc/hosts; resolv_conf NULL: /etc/resolv.conf. NULL on
 * failure with err. */
struct resolver *resolver_new(struct event_base *base, const char *hosts_file,
                              const char *resolv_conf, char *err, size_t errlen);
/* With lookups still owing their callbacks, the real free happens on the
 * loop once they ran (the loop must turn once more). */
void resolver_free(struct resolver *r);

/* err is an EVUTIL_EAI_* code (0 on success); the callee owns ai
 * (evutil_freeaddrinfo). */
typedef void (*resolve_fn)(void *arg, int err, struct evutil_addrinfo *ai);

/* NULL on ENOMEM. The callback runs exactly once unless resolve_cancel is called first. */
struct resolve_req *resolve_start(struct resolver *r, const char *host, resolve_fn cb, void *arg);
void resolve_cancel(struct resolve_req *q);

#endif
