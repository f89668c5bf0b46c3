/*
 * The upstream proxy a host may have to use itself (its HTTPS_PROXY): allowed
 * connections are tunnelled through it with a CONNECT to the address our
 * allowlist checked. Only "http://[user:password@]host:port[/]" proxies;
 * the user and password may be percent-encoded.
 */
#ifndef CCSB_EGRESS_UPSTREAM_H
#define CCSB_EGRESS_UPSTREAM_H

#include <stddef.h>

struct egress_upstream {
    char host[256];     /* a name or an address, without IPv6 brackets */
    char port[6];
    char userinfo[256]; /* "user:password" decoded, "" when none */
};

/* 0, or -1 with the reason in why ("needs host:port", ...). Pure. */
int egress_upstream_parse(const char *url, struct egress_upstream *out, char *why,
                          size_t whylen);

#endif
