/*
 * A byte tunnel between the sandbox's connection and the upstream one. On
 * Linux the bytes are spliced (socket -> pipe -> socket, never copied into
 * this process); elsewhere bufferevent chains move without copying. Either
 * way a full buffer stops reading the other side (backpressure), and
 * half-closes propagate.
 */
#ifndef CCSB_EGRESS_RELAY_H
#define CCSB_EGRESS_RELAY_H

struct egress_pair;
struct bufferevent;

/* Takes ownership of both bufferevents (also on failure: returns -1 and frees them).
 * Bytes already buffered on either side are forwarded first. */
int relay_start(struct egress_pair *p, struct bufferevent *client, struct bufferevent *upstream);

#endif
