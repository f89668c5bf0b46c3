#include "egress/matcher.h"

#include <stdlib.h>
#include <string.h>

struct bucket {
    uint64_t hash;
    char *key;
    size_t keylen;
    struct egress_entry *entries;
};

struct egress_matcher {
    struct bucket *slots; /* open addressing, power-of-two size */
    size_t cap;
    size_t used;
    size_t n_entries;
    size_t n_suffix, n_middle;
};

const char *egress_origin_name(int origin)
{
    switch (origin) {
    case EGRESS_FROM_BASELINE_DENY: return "baseline denylist";
    case EGRESS_FROM_SPEC_DENY: return "egressDenylist";
    case EGRESS_FROM_BASELINE_ALLOW: return "baseline allowlist";
    case EGRESS_FROM_GITHUB: return "GitHub list";
    case EGRESS_FROM_SPEC_ALLOW: return "egressAllowlist";
    default: return "unknown list";
    }
}

static uint64_t hash_bytes(const char *s, size_t n)
{
    uint64_t h = 1469598103934665603ULL;
    for (size_t i = 0; i < n; i++) {
        h ^= (unsigned char)s[i];
        h *= 1099511628211ULL;
    }
    return h ^ (h >> 29);
}

struct egress_matcher *egress_matcher_new(void)
{
    struct egress_matcher *m = calloc(1, sizeof *m);
    if (!m)
        return NULL;
    m->cap = 64;
    m->slots = calloc(m->cap, sizeof *m->slots);
    if (!m->slots) {
        free(m);
        return NULL;
    }
    return m;
}

void egress_matcher_free(struct egress_matcher *m)
{
    if (!m)
        return;
    for (size_t i = 0; i < m->cap; i++) {
        struct egress_entry *e = m->slots[i].entries;
        while (e) {
            struct egress_entry *next = e->next;
            free((char *)e->text);
            free(e);
            e = next;
        }
        free(m->slots[i].key);
    }
    free(m->slots);
    free(m);
}

size_t egress_matcher_count(const struct egress_matcher *m)
{
    return m->n_entries;
}

static struct bucket *probe(struct bucket *slots, size_t cap, uint64_t h, const char *key,
                            size_t n)
{
    for (size_t i = (size_t)h & (cap - 1);; i = (i + 1) & (cap - 1)) {
        struct bucket *b = &slots[i];
        if (!b->key)
            return b;
        if (b->hash == h && b->keylen == n && memcmp(b->key, key, n) == 0)
            return b;
    }
}

static int grow(struct egress_matcher *m)
{
    size_t cap = m->cap * 2;
    struct bucket *slots = calloc(cap, sizeof *slots);
    if (!slots)
        return -1;
    for (size_t i = 0; i < m->cap; i++) {
        if (!m->slots[i].key)
            continue;
        *probe(slots, cap, m->slots[i].hash, m->slots[i].key, m->slots[i].keylen) = m->slots[i];
    }
    free(m->slots);
    m->slots = slots;
    m->cap = cap;
    return 0;
}

int egress_matcher_add(struct egress_matcher *m, const struct egress_rule *r, const char *text,
                       int origin)
{
    if ((m->used + 1) * 2 > m->cap && grow(m) < 0)
        return -1;
    size_t n = strlen(r->key);
    uint64_t h = hash_bytes(r->key, n);
    struct bucket *b = probe(m->slots, m->cap, h, r->key, n);
    for (struct egress_entry *e = b->entries; e; e = e->next)
        if (e->port == r->port)
            return 0;
    struct egress_entry *e = calloc(1, sizeof *e);
    char *t = strdup(text);
    char *key = b->key ? NULL : strdup(r->key);
    if (!e || !t || (!b->key && !key)) {
        free(e);
        free(t);
        free(key);
        return -1;
    }
    if (!b->key) {
        b->key = key;
        b->keylen = n;
        b->hash = h;
        m->used++;
    }
    e->text = t;
    e->origin = origin;
    e->kind = r->kind;
    e->port = r->port;
    memcpy(e->addr, r->addr, sizeof e->addr);
    e->key = b->key;
    /* Port-restricted entries first, so the most specific one reports. */
    if (e->port) {
        e->next = b->entries;
        b->entries = e;
    } else {
        struct egress_entry **pp = &b->entries;
        while (*pp)
            pp = &(*pp)->next;
        *pp = e;
    }
    m->n_entries++;
    if (r->kind == EGRESS_SUFFIX)
        m->n_suffix++;
    else if (r->kind == EGRESS_MIDDLE)
        m->n_middle++;
    return 0;
}

static const struct egress_entry *lookup(const struct egress_matcher *m, const char *key,
                                         size_t n, uint16_t port)
{
    uint64_t h = hash_bytes(key, n);
    for (size_t i = (size_t)h & (m->cap - 1);; i = (i + 1) & (m->cap - 1)) {
        const struct bucket *b = &m->slots[i];
        if (!b->key)
            return NULL;
        if (b->hash != h || b->keylen != n || memcmp(b->key, key, n) != 0)
            continue;
        for (const struct egress_entry *e = b->entries; e; e = e->next)
            if (e->port == 0 || e->port == port)
                return e;
        return NULL;
    }
}

const struct egress_entry *egress_matcher_find(const struct egress_matcher *m,
                                               const struct egress_target *t)
{
    size_t n = strlen(t->host);
    const struct egress_entry *e = lookup(m, t->host, n, t->port);
    if (e || t->kind != EGRESS_NAME)
        return e;

    size_t starts[128], ends[128], nl = 0;
    for (size_t i = 0; i <= n && nl < 128;) {
        size_t j = i;
        while (j < n && t->host[j] != '.')
            j++;
        starts[nl] = i;
        ends[nl] = j;
        nl++;
        i = j + 1;
    }
    char buf[EGRESS_KEY_CAP + 4];
    /* Middle wildcards: '*' stands for label i, at least two labels after. */
    if (m->n_middle) {
        for (size_t i = 1; i + 2 < nl; i++) {
            size_t pre = starts[i], post = n - ends[i];
            memcpy(buf, t->host, pre);
            buf[pre] = '*';
            memcpy(buf + pre + 1, t->host + ends[i], post);
            if ((e = lookup(m, buf, pre + 1 + post, t->port)))
                return e;
        }
    }
    /* Leading wildcards: the longest suffix first; never the apex itself. */
    if (m->n_suffix) {
        for (size_t i = 1; i + 1 < nl; i++) {
            size_t rest = n - starts[i];
            buf[0] = '*';
            buf[1] = '.';
            memcpy(buf + 2, t->host + starts[i], rest);
            if ((e = lookup(m, buf, rest + 2, t->port)))
                return e;
        }
    }
    return NULL;
}
