/*
 * A session's egress rules: the baseline lists plus the spec's own, built
 * once, immutable afterwards. Judging is pure; the denylist is consulted
 * first and always wins.
 */
#ifndef CCSB_EGRESS_RULES_H
#define CCSB_EGRESS_RULES_H

#include <stddef.h>
#include <stdint.h>

#include "egress/matcher.h"

struct ccsb_spec;
struct sockaddr;

struct egress_rules {
    struct egress_matcher *deny;  /* baseline denylist + egressDenylist */
    struct egress_matcher *allow; /* empty when network_enabled is 0 */
    int network_enabled;
};

struct egress_verdict {
    int allowed;
    const struct egress_entry *entry; /* the deciding entry, NULL when none */
    char reason[320];
};

/* From a spec: CCSB_E_SPEC with "egressAllowlist[3]: ..." in err, or CCSB_E_NOMEM. */
int egress_rules_from_spec(const struct ccsb_spec *spec, struct egress_rules **out, char *err,
                           size_t errlen);
/* The same from plain arrays (tests, benchmarks). */
int egress_rules_new(int network_enabled, const char *const *allow, size_t nallow,
                     const char *const *deny, size_t ndeny, struct egress_rules **out,
                     char *err, size_t errlen);
void egress_rules_free(struct egress_rules *r);

/* Fills v (reason included) and returns v->allowed. */
int egress_rules_judge(const struct egress_rules *r, const struct egress_target *t,
                       struct egress_verdict *v);
/* The decision alone: v->reason is left empty (the hot path of lookups). */
int egress_rules_decide(const struct egress_rules *r, const struct egress_target *t,
                        struct egress_verdict *v);

/* The host's own interface addresses (IPv4 kept as IPv4-mapped IPv6). */
struct egress_hostaddrs {
    uint8_t (*v)[16];
    size_t n;
};
/* getifaddrs(); 0 or -1 with errno. */
int egress_hostaddrs_load(struct egress_hostaddrs *h);
void egress_hostaddrs_clear(struct egress_hostaddrs *h);

/*
 * Judges one resolved address for a target the rules allowed (v from
 * egress_rules_judge). Refuses addresses on the denylist, cloud metadata
 * and multicast addresses always, and loopback, unspecified, link-local and
 * the host's own addresses unless the allowing entry names that address
 * (or is "localhost", for loopback). IPv4 carried in IPv6 (mapped,
 * compatible, NAT64 64:ff9b::/96) is judged as the IPv4. Returns 1 to
 * allow, 0 with reason.
 */
int egress_rules_check_addr(const struct egress_rules *r, const struct egress_verdict *v,
                            const struct sockaddr *sa, uint16_t port,
                            const struct egress_hostaddrs *own, char *reason, size_t len);
/* 1 when egress_rules_check_addr would consult `own` for this address (a
 * public one): callers read the host's addresses only then. */
int egress_addr_needs_own(const struct sockaddr *sa);

#endif
