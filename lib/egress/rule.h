/*
 * Allowlist/denylist entries and the hosts they are judged against, parsed
 * and normalised. Pure functions: no I/O, no allocation, safe to fuzz.
 *
 * Entry forms (docs/egress.md): exact name, "*.example.com" (any depth
 * below, never the apex), "a.*.b.example.com" (exactly one label in the
 * middle), IPv4, bracketed IPv6, each with an optional ":port".
 */
#ifndef CCSB_EGRESS_RULE_H
#define CCSB_EGRESS_RULE_H

#include <stddef.h>
#include <stdint.h>

#define EGRESS_NAME_MAX 253
#define EGRESS_KEY_CAP 256

#define EGRESS_NAME 1   /* api.example.com */
#define EGRESS_SUFFIX 2 /* *.example.com */
#define EGRESS_MIDDLE 3 /* bedrock.*.amazonaws.com */
#define EGRESS_IP4 4
#define EGRESS_IP6 5

struct egress_rule {
    int kind;                 /* EGRESS_* */
    uint16_t port;            /* 0: any port */
    char key[EGRESS_KEY_CAP]; /* normalised text without the port */
    uint8_t addr[16];         /* IP4: first 4 bytes; IP6: all 16 */
};

/* Parses one entry. 0, or -1 with why = "<entry>: <problem>". */
int egress_rule_parse(const char *entry, struct egress_rule *out, char *why, size_t whylen);
/* Validation only (the spec layer calls this): 0 ok, -1 bad with why. */
int egress_rule_check(const char *entry, char *why, size_t whylen);

struct egress_target {
    int kind;                  /* EGRESS_NAME, EGRESS_IP4 or EGRESS_IP6 */
    uint16_t port;             /* 0: not given */
    char host[EGRESS_KEY_CAP]; /* normalised name or canonical address text */
    uint8_t addr[16];
};

/*
 * "host", "host:port", "[v6]", "[v6]:port" or a bare IPv6 address. Numeric
 * IPv4 spellings the C library accepts ("2130706433", "0x7f.1") are judged
 * as the address they denote. 0, or -1 with why.
 */
int egress_target_parse(const char *s, struct egress_target *out, char *why, size_t whylen);
/* A host as a proxy request carries it (len bytes, "[v6]" or bare v6 allowed) and
 * its port. 0, or -1 with why. */
int egress_target_from_host(const char *host, size_t len, uint16_t port,
                            struct egress_target *out, char *why, size_t whylen);
/* "host:port" ("[v6]:port"), or just the host when the port is 0. */
void egress_target_format(const struct egress_target *t, char *buf, size_t len);

#endif
