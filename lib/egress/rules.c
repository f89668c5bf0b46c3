#include "egress/rules.h"

#include <arpa/inet.h>
#include <errno.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ccsandbox/ccsandbox.h"
#include "egress/lists.h"
#include "spec/spec.h"
#include "util/err.h"

void egress_rules_free(struct egress_rules *r)
{
    if (!r)
        return;
    egress_matcher_free(r->deny);
    egress_matcher_free(r->allow);
    free(r);
}

static int add_builtin(struct egress_matcher *m, const struct egress_list_entry *list, int origin,
                       char *err, size_t errlen)
{
    for (size_t i = 0; list[i].entry; i++) {
        struct egress_rule rule;
        char why[256];
        if (egress_rule_parse(list[i].entry, &rule, why, sizeof why) < 0)
            return errf(err, errlen, CCSB_E_INTERNAL, "built-in %s entry %s",
                        egress_origin_name(origin), why);
        if (egress_matcher_add(m, &rule, list[i].entry, origin) < 0)
            return errf(err, errlen, CCSB_E_NOMEM, "out of memory");
    }
    return 0;
}

static int add_user(struct egress_matcher *m, const char *const *v, size_t n, int origin,
                    char *err, size_t errlen)
{
    for (size_t i = 0; i < n; i++) {
        struct egress_rule rule;
        char why[256];
        if (egress_rule_parse(v[i], &rule, why, sizeof why) < 0)
            return errf(err, errlen, CCSB_E_SPEC, "%s[%zu]: %s", egress_origin_name(origin), i,
                        why);
        if (egress_matcher_add(m, &rule, v[i], origin) < 0)
            return errf(err, errlen, CCSB_E_NOMEM, "out of memory");
    }
    return 0;
}

int egress_rules_new(int network_enabled, const char *const *allow, size_t nallow,
                     const char *const *deny, size_t ndeny, struct egress_rules **out,
                     char *err, size_t errlen)
{
    *out = NULL;
    struct egress_rules *r = calloc(1, sizeof *r);
    if (!r)
        return errf(err, errlen, CCSB_E_NOMEM, "out of memory");
    r->network_enabled = network_enabled ? 1 : 0;
    r->deny = egress_matcher_new();
    r->allow = egress_matcher_new();
    int rc = (!r->deny || !r->allow) ? errf(err, errlen, CCSB_E_NOMEM, "out of memory") : 0;
    if (rc == 0)
        rc = add_builtin(r->deny, egress_baseline_deny, EGRESS_FROM_BASELINE_DENY, err, errlen);
    if (rc == 0)
        rc = add_user(r->deny, deny, ndeny, EGRESS_FROM_SPEC_DENY, err, errlen);
    /* Entries are validated even when the network is off: a bad spec is bad. */
    struct egress_matcher *scratch = NULL;
    if (rc == 0 && !r->network_enabled) {
        scratch = egress_matcher_new();
        if (!scratch)
            rc = errf(err, errlen, CCSB_E_NOMEM, "out of memory");
    }
    struct egress_matcher *am = r->network_enabled ? r->allow : scratch;
    if (rc == 0)
        rc = add_builtin(am, egress_baseline_allow, EGRESS_FROM_BASELINE_ALLOW, err, errlen);
    if (rc == 0)
        rc = add_builtin(am, egress_github_allow, EGRESS_FROM_GITHUB, err, errlen);
    if (rc == 0)
        rc = add_user(am, allow, nallow, EGRESS_FROM_SPEC_ALLOW, err, errlen);
    egress_matcher_free(scratch);
    if (rc < 0) {
        egress_rules_free(r);
        return rc;
    }
    *out = r;
    return 0;
}

int egress_rules_from_spec(const struct ccsb_spec *spec, struct egress_rules **out, char *err,
                           size_t errlen)
{
    return egress_rules_new(spec->network_enabled, (const char *const *)spec->egress_allow.v,
                            spec->egress_allow.n, (const char *const *)spec->egress_deny.v,
                            spec->egress_deny.n, out, err, errlen);
}

int egress_rules_decide(const struct egress_rules *r, const struct egress_target *t,
                        struct egress_verdict *v)
{
    v->reason[0] = '\0';
    struct egress_keys k;
    v->entry = NULL;
    v->allowed = 0;
    if (egress_keys_init(&k, t) < 0)
        return 0;
    const struct egress_entry *e = egress_matcher_find_keys(r->deny, t, &k);
    if (e) {
        v->entry = e;
        return 0;
    }
    v->entry = egress_matcher_find_keys(r->allow, t, &k);
    v->allowed = v->entry != NULL;
    return v->allowed;
}

int egress_rules_judge(const struct egress_rules *r, const struct egress_target *t,
                       struct egress_verdict *v)
{
    const struct egress_entry *e;
    if (egress_rules_decide(r, t, v)) {
        e = v->entry;
        snprintf(v->reason, sizeof v->reason, "allowed by %s entry %s",
                 egress_origin_name(e->origin), e->text);
    } else if ((e = v->entry)) {
        snprintf(v->reason, sizeof v->reason, "denied by %s entry %s",
                 egress_origin_name(e->origin), e->text);
    } else {
        snprintf(v->reason, sizeof v->reason, "%s",
                 r->network_enabled ? "no allowlist entry matches"
                                    : "no allowlist entry matches (networkEnabled is false)");
    }
    return v->allowed;
}

int egress_hostaddrs_load(struct egress_hostaddrs *h)
{
    struct ifaddrs *ifa = NULL;
    h->v = NULL;
    h->n = 0;
    if (getifaddrs(&ifa) < 0)
        return -1;
    size_t n = 0;
    for (struct ifaddrs *i = ifa; i; i = i->ifa_next)
        if (i->ifa_addr && (i->ifa_addr->sa_family == AF_INET || i->ifa_addr->sa_family == AF_INET6))
            n++;
    h->v = calloc(n ? n : 1, sizeof *h->v);
    if (!h->v) {
        freeifaddrs(ifa);
        errno = ENOMEM;
        return -1;
    }
    for (struct ifaddrs *i = ifa; i; i = i->ifa_next) {
        if (!i->ifa_addr)
            continue;
        if (i->ifa_addr->sa_family == AF_INET) {
            const struct sockaddr_in *s4 = (const struct sockaddr_in *)i->ifa_addr;
            memset(h->v[h->n], 0, 16);
            h->v[h->n][10] = h->v[h->n][11] = 0xff;
            memcpy(&h->v[h->n][12], &s4->sin_addr, 4);
            h->n++;
        } else if (i->ifa_addr->sa_family == AF_INET6) {
            const struct sockaddr_in6 *s6 = (const struct sockaddr_in6 *)i->ifa_addr;
            memcpy(h->v[h->n], &s6->sin6_addr, 16);
            h->n++;
        }
    }
    freeifaddrs(ifa);
    return 0;
}

void egress_hostaddrs_clear(struct egress_hostaddrs *h)
{
    free(h->v);
    h->v = NULL;
    h->n = 0;
}

#define CLS_PUBLIC 0
#define CLS_LOOPBACK 1
#define CLS_UNSPECIFIED 2
#define CLS_LINKLOCAL 3
#define CLS_METADATA 4
#define CLS_MULTICAST 5

static int class_v4(const uint8_t a[4])
{
    uint32_t x = ((uint32_t)a[0] << 24) | ((uint32_t)a[1] << 16) | ((uint32_t)a[2] << 8) | a[3];
    if (x == 0xA9FEA9FEu || x == 0x646464C8u || x == 0xA83F8110u || (x >> 8) == 0xA9FEAAu)
        return CLS_METADATA; /* 169.254.169.254, 100.100.100.200, 168.63.129.16, 169.254.170.x */
    if (a[0] == 127)
        return CLS_LOOPBACK;
    if (a[0] == 0)
        return CLS_UNSPECIFIED;
    if (a[0] == 169 && a[1] == 254)
        return CLS_LINKLOCAL;
    if (a[0] >= 224)
        return CLS_MULTICAST; /* multicast, reserved, broadcast */
    return CLS_PUBLIC;
}

/* The IPv4 an IPv6 address carries (mapped, compatible, NAT64), if any. */
static int embedded_v4(const uint8_t a[16], uint8_t v4[4])
{
    static const uint8_t mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
    static const uint8_t compat[12] = {0};
    static const uint8_t nat64[12] = {0, 0x64, 0xff, 0x9b, 0, 0, 0, 0, 0, 0, 0, 0};
    if (memcmp(a, mapped, 12) == 0 || memcmp(a, nat64, 12) == 0 ||
        (memcmp(a, compat, 12) == 0 && (a[12] | a[13] | a[14]) != 0)) {
        memcpy(v4, a + 12, 4);
        return 1;
    }
    return 0;
}

static int class_v6(const uint8_t a[16])
{
    static const uint8_t zero[16] = {0};
    static const uint8_t one[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1};
    if (memcmp(a, zero, 16) == 0)
        return CLS_UNSPECIFIED;
    if (memcmp(a, one, 16) == 0)
        return CLS_LOOPBACK;
    if (a[0] == 0xfd && a[1] == 0x00 && a[2] == 0x0e && a[3] == 0xc2)
        return CLS_METADATA; /* fd00:ec2::/32 */
    if (a[0] == 0xfe && (a[1] & 0xc0) == 0x80)
        return CLS_LINKLOCAL;
    if (a[0] == 0xff)
        return CLS_MULTICAST;
    return CLS_PUBLIC;
}

/* The address as IPv6 (IPv4 mapped) and the IPv4 it is or carries; -1 for other families. */
static int addr_parts(const struct sockaddr *sa, uint8_t a6[16], uint8_t v4[4], int *is_v4)
{
    if (sa->sa_family == AF_INET) {
        memcpy(v4, &((const struct sockaddr_in *)sa)->sin_addr, 4);
        memset(a6, 0, 10);
        a6[10] = a6[11] = 0xff;
        memcpy(a6 + 12, v4, 4);
        *is_v4 = 1;
        return 0;
    }
    if (sa->sa_family == AF_INET6) {
        memcpy(a6, &((const struct sockaddr_in6 *)sa)->sin6_addr, 16);
        *is_v4 = embedded_v4(a6, v4);
        return 0;
    }
    return -1;
}

int egress_addr_needs_own(const struct sockaddr *sa)
{
    uint8_t a6[16], v4[4];
    int is_v4;
    if (addr_parts(sa, a6, v4, &is_v4) < 0)
        return 0;
    return (is_v4 ? class_v4(v4) : class_v6(a6)) == CLS_PUBLIC;
}

int egress_rules_check_addr(const struct egress_rules *r, const struct egress_verdict *v,
                            const struct sockaddr *sa, uint16_t port,
                            const struct egress_hostaddrs *own, char *reason, size_t len)
{
    uint8_t a6[16];
    uint8_t v4[4];
    int is_v4;
    if (addr_parts(sa, a6, v4, &is_v4) < 0) {
        snprintf(reason, len, "resolved address of unsupported family %d", sa->sa_family);
        return 0;
    }

    /* Judge the address itself, and the IPv4 it carries, against the denylist. */
    struct egress_target t;
    memset(&t, 0, sizeof t);
    t.port = port;
    t.kind = EGRESS_IP6;
    memcpy(t.addr, a6, 16);
    inet_ntop(AF_INET6, a6, t.host, sizeof t.host);
    char text[EGRESS_KEY_CAP];
    snprintf(text, sizeof text, "%s", t.host);
    const struct egress_entry *d = egress_matcher_find(r->deny, &t);
    if (!d && is_v4) {
        t.kind = EGRESS_IP4;
        memset(t.addr, 0, 16);
        memcpy(t.addr, v4, 4);
        inet_ntop(AF_INET, v4, t.host, sizeof t.host);
        if (sa->sa_family == AF_INET)
            snprintf(text, sizeof text, "%s", t.host);
        d = egress_matcher_find(r->deny, &t);
    }
    if (d) {
        snprintf(reason, len, "resolved address %s denied by %s entry %s", text,
                 egress_origin_name(d->origin), d->text);
        return 0;
    }

    int cls = is_v4 ? class_v4(v4) : class_v6(a6);
    const char *what = NULL;
    switch (cls) {
    case CLS_METADATA:
        snprintf(reason, len, "resolved address %s is a cloud metadata address", text);
        return 0;
    case CLS_MULTICAST:
        snprintf(reason, len, "resolved address %s is multicast or reserved", text);
        return 0;
    case CLS_LOOPBACK: what = "loopback"; break;
    case CLS_UNSPECIFIED: what = "unspecified (this host)"; break;
    case CLS_LINKLOCAL: what = "link-local"; break;
    default:
        for (size_t i = 0; own && i < own->n; i++)
            if (memcmp(own->v[i], a6, 16) == 0)
                what = "one of this host's own addresses";
        break;
    }
    if (!what)
        return 1;

    const struct egress_entry *e = v ? v->entry : NULL;
    if (e && e->kind == EGRESS_IP4 && is_v4 && memcmp(e->addr, v4, 4) == 0)
        return 1;
    if (e && e->kind == EGRESS_IP6 && memcmp(e->addr, a6, 16) == 0)
        return 1;
    if (e && cls == CLS_LOOPBACK && e->kind == EGRESS_NAME && strcmp(e->key, "localhost") == 0)
        return 1;
    snprintf(reason, len,
             "resolved address %s is %s; allowed only by an entry naming that address%s", text,
             what, cls == CLS_LOOPBACK ? " or localhost" : "");
    return 0;
}
