/*
 * A byte tunnel between the sandbox's connection and the upstream one.
 * Chains move between bufferevents without copying; a full output buffer
 * stops reading on the other side (backpressure). Half-closes propagate.
 */
#ifndef CCSB_EGRESS_RELAY_H
#define CCSB_EGRESS_RELAY_H

struct egress_pair;
struct bufferevent;

/* Takes ownership of both bufferevents (also on failure: returns -1 and frees them).
 * Bytes already buffered on either side are forwarded first. */
int relay_start(struct egress_pair *p, struct bufferevent *client, struct bufferevent *upstream);

#endif
