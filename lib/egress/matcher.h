/*
 * A set of parsed entries with lookups whose cost does not grow with the
 * number of entries: hash tables for exact names and addresses, leading
 * wildcards (by suffix) and middle-label wildcards (by prefix and suffix).
 * A host with L labels costs one pass over its text and at most 2L probes.
 */
#ifndef CCSB_EGRESS_MATCHER_H
#define CCSB_EGRESS_MATCHER_H

#include <stddef.h>
#include <stdint.h>

#include "egress/rule.h"

/* Where an entry came from; decides the wording of reasons. */
#define EGRESS_FROM_BASELINE_DENY 1
#define EGRESS_FROM_SPEC_DENY 2
#define EGRESS_FROM_BASELINE_ALLOW 3
#define EGRESS_FROM_GITHUB 4
#define EGRESS_FROM_SPEC_ALLOW 5

struct egress_entry {
    const char *text;   /* as written */
    int origin;         /* EGRESS_FROM_* */
    int kind;           /* EGRESS_NAME .. EGRESS_IP6 */
    uint16_t port;      /* 0: any */
    uint8_t addr[16];
    const char *key;    /* normalised entry text without the port */
    struct egress_entry *next;
};

struct egress_matcher;

struct egress_matcher *egress_matcher_new(void);
void egress_matcher_free(struct egress_matcher *m);
/* Adds a parsed entry (text is copied). A second entry with the same key
 * and port is ignored. 0 or -1 (ENOMEM). */
int egress_matcher_add(struct egress_matcher *m, const struct egress_rule *r, const char *text,
                       int origin);
size_t egress_matcher_count(const struct egress_matcher *m);
/*
 * The most specific entry matching the target (exact, then middle-label
 * wildcards, then leading wildcards from the longest suffix), or NULL. A
 * port-restricted entry matches only that port.
 */
const struct egress_entry *egress_matcher_find(const struct egress_matcher *m,
                                               const struct egress_target *t);

/* A target's lookup keys, computed once and used on several matchers. */
#define EGRESS_MAX_LABELS 128
struct egress_keys {
    size_t n, nl;
    uint64_t whole;
    uint16_t starts[EGRESS_MAX_LABELS], lens[EGRESS_MAX_LABELS];
    uint64_t lh[EGRESS_MAX_LABELS], suf[EGRESS_MAX_LABELS];
};
/* 0, or -1 for a name with more labels than any host can have. */
int egress_keys_init(struct egress_keys *k, const struct egress_target *t);
const struct egress_entry *egress_matcher_find_keys(const struct egress_matcher *m,
                                                    const struct egress_target *t,
                                                    const struct egress_keys *k);

/* "baseline denylist", "egressAllowlist", ... */
const char *egress_origin_name(int origin);

#endif
