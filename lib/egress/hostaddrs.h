/*
 * The host's own interface addresses, read when first needed and kept until
 * the kernel says they changed.
 *
 * A resolved public address is refused when it is one of the host's own
 * (DESIGN §6), so the list must be current, yet reading it (a netlink dump)
 * costs far more than the rest of a connection. On Linux the cache opens a
 * NETLINK_ROUTE socket subscribed to address changes *before* its first
 * read; every lookup drains that socket (one non-blocking recv) and re-reads
 * the list when anything arrived or the socket overflowed. So a change the
 * kernel has announced before a connection is judged is always seen. Where
 * that watch is unavailable (other systems, or the socket cannot be made),
 * the list is read afresh for every lookup: slower, never stale.
 */
#ifndef CCSB_EGRESS_HOSTADDRS_H
#define CCSB_EGRESS_HOSTADDRS_H

#include "egress/rules.h"

struct hostaddrs_cache {
    struct egress_hostaddrs cur;
    int valid; /* cur matches the kernel as of the last drain */
    int watch; /* netlink socket, -1 when none (yet) */
    int tried; /* the watch was attempted */
};

/* Nothing is read or opened until the first hostaddrs_get. */
void hostaddrs_cache_init(struct hostaddrs_cache *c);
/* The current list, or NULL with errno when it cannot be read (callers refuse). */
const struct egress_hostaddrs *hostaddrs_get(struct hostaddrs_cache *c);
void hostaddrs_cache_clear(struct hostaddrs_cache *c);

#endif
