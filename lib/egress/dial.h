/*
 * From a judged target to a connected socket: resolve once on the host,
 * judge every resolved address, connect only to addresses that passed
 * (directly, or through the upstream proxy with a CONNECT to that address).
 */
#ifndef CCSB_EGRESS_DIAL_H
#define CCSB_EGRESS_DIAL_H

#include <stddef.h>

#include "egress/rule.h"

struct egress_pair;
struct bufferevent;
struct dial;

#define DIAL_OK 0
#define DIAL_DENIED 1      /* the rules refused the name or every address */
#define DIAL_NOHOST 2      /* the name does not resolve */
#define DIAL_REFUSED 3     /* the destination refused the connection */
#define DIAL_UNREACHABLE 4 /* no route, timeout, other connect errors */
#define DIAL_UPSTREAM 5    /* the upstream proxy refused the tunnel */

/* bev is connected (ownership passes to the callee) when result is DIAL_OK. */
typedef void (*dial_fn)(void *arg, int result, struct bufferevent *bev, const char *reason);

/*
 * Judges t; on refusal reports the violation and returns DIAL_DENIED with
 * reason filled and no callback. Otherwise returns DIAL_OK and the callback
 * runs later, exactly once, unless dial_cancel is called first. On ENOMEM
 * returns DIAL_UNREACHABLE with a reason.
 */
int dial_start(struct egress_pair *p, const struct egress_target *t, dial_fn cb, void *arg,
               struct dial **out, char *reason, size_t len);
void dial_cancel(struct dial *d);

#endif
