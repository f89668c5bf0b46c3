#include "egress/matcher.h"

#include <stdlib.h>
#include <string.h>

/*
 * Three tables, so that a host's candidate keys can be hashed in one pass
 * over it without building strings:
 *  - exact: the whole name (or address text), keyed by the right-to-left hash;
 *  - suffix: "*.x.y" stored as "x.y", keyed by the right-to-left hash of the suffix;
 *  - middle: "p.*.x.y" stored as prefix "p" and suffix "x.y", keyed by the
 *    left-to-right hash of the prefix combined with that of the suffix.
 */
struct bucket {
    uint64_t hash;
    char *key;   /* exact name, suffix, or middle prefix */
    size_t keylen;
    char *key2;  /* middle suffix */
    size_t key2len;
    struct egress_entry *entries;
};

/* The probed array is compact (8 bytes a slot) so that misses, the common
 * case, stay in cache; buckets are only touched when the hash tag agrees. */
struct slot {
    uint32_t tag; /* high half of the hash */
    uint32_t idx; /* 1 + index into buckets; 0: empty */
};

struct table {
    struct slot *slots; /* open addressing, power-of-two size */
    size_t cap;
    struct bucket *b;
    size_t used, bcap;
    /* Bit k: some key has k labels (suffix table: in the suffix; middle
     * table: before the '*'), so lookups skip depths nobody listed. */
    uint64_t depths;
};

struct egress_matcher {
    struct table exact, suffix, middle;
    size_t n_entries;
};

#define HASH_SEED 0x243F6A8885A308D3ULL
#define HASH_MUL 0x9E3779B97F4A7C15ULL

static uint64_t mix(uint64_t h)
{
    h ^= h >> 31;
    h *= 0xBF58476D1CE4E5B9ULL;
    return h ^ (h >> 29);
}

/* One label, eight bytes at a time (labels are short; this is the hot loop). */
static uint64_t label_hash(const char *p, size_t n)
{
    uint64_t h = (uint64_t)n * HASH_MUL;
    while (n >= 8) {
        uint64_t w;
        memcpy(&w, p, 8);
        h = (h ^ w) * HASH_MUL;
        h ^= h >> 32;
        p += 8;
        n -= 8;
    }
    if (n) {
        uint64_t w = 0;
        for (size_t i = 0; i < n; i++)
            w |= (uint64_t)(unsigned char)p[i] << (8 * i);
        h = (h ^ w) * HASH_MUL;
        h ^= h >> 32;
    }
    return h;
}

static uint64_t fold(uint64_t acc, uint64_t lh)
{
    acc = (acc ^ lh) * HASH_MUL;
    return acc ^ (acc >> 29);
}

/* A dotted key's hash: its labels folded from the right (so every suffix
 * of a host is hashed on the way to the whole). */
static uint64_t key_hash(const char *s, size_t n, unsigned *nlabels)
{
    uint64_t h = HASH_SEED;
    unsigned nl = 0;
    size_t end = n;
    for (size_t i = n; i-- > 0;) {
        if (s[i] == '.') {
            h = fold(h, label_hash(s + i + 1, end - i - 1));
            end = i;
            nl++;
        }
    }
    h = fold(h, label_hash(s, end));
    *nlabels = nl + 1;
    return h;
}

/* A middle wildcard's prefix: labels folded from the left. */
static uint64_t prefix_hash(const char *s, size_t n, unsigned *nlabels)
{
    uint64_t h = HASH_SEED;
    unsigned nl = 0;
    size_t start = 0;
    for (size_t i = 0; i <= n; i++) {
        if (i == n || s[i] == '.') {
            h = fold(h, label_hash(s + start, i - start));
            start = i + 1;
            nl++;
        }
    }
    *nlabels = nl;
    return h;
}

static uint64_t middle_hash(uint64_t pre, uint64_t suf)
{
    return mix(pre * 31 + suf);
}

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

static int table_init(struct table *t)
{
    t->cap = 64;
    t->used = 0;
    t->bcap = 0;
    t->b = NULL;
    t->slots = calloc(t->cap, sizeof *t->slots);
    return t->slots ? 0 : -1;
}

static void table_free(struct table *t)
{
    for (size_t i = 0; i < t->used; i++) {
        struct egress_entry *e = t->b[i].entries;
        while (e) {
            struct egress_entry *next = e->next;
            free((char *)e->text);
            free((char *)e->key);
            free(e);
            e = next;
        }
        free(t->b[i].key);
        free(t->b[i].key2);
    }
    free(t->b);
    free(t->slots);
}

struct egress_matcher *egress_matcher_new(void)
{
    struct egress_matcher *m = calloc(1, sizeof *m);
    if (!m)
        return NULL;
    if (table_init(&m->exact) < 0 || table_init(&m->suffix) < 0 || table_init(&m->middle) < 0) {
        egress_matcher_free(m);
        return NULL;
    }
    return m;
}

void egress_matcher_free(struct egress_matcher *m)
{
    if (!m)
        return;
    table_free(&m->exact);
    table_free(&m->suffix);
    table_free(&m->middle);
    free(m);
}

size_t egress_matcher_count(const struct egress_matcher *m)
{
    return m->n_entries;
}

static int bucket_is(const struct bucket *b, uint64_t h, const char *k, size_t kn,
                     const char *k2, size_t k2n)
{
    return b->hash == h && b->keylen == kn && b->key2len == k2n && memcmp(b->key, k, kn) == 0 &&
           (k2n == 0 || memcmp(b->key2, k2, k2n) == 0);
}

/* The bucket for the key, or NULL; *slot_out is where it is or would go. */
static struct bucket *probe(const struct table *t, uint64_t h, const char *k, size_t kn,
                            const char *k2, size_t k2n, struct slot **slot_out)
{
    uint32_t tag = (uint32_t)(h >> 32);
    for (size_t i = (size_t)mix(h) & (t->cap - 1);; i = (i + 1) & (t->cap - 1)) {
        struct slot *sl = &t->slots[i];
        if (!sl->idx) {
            if (slot_out)
                *slot_out = sl;
            return NULL;
        }
        if (sl->tag == tag && bucket_is(&t->b[sl->idx - 1], h, k, kn, k2, k2n)) {
            if (slot_out)
                *slot_out = sl;
            return &t->b[sl->idx - 1];
        }
    }
}

static int grow(struct table *t)
{
    size_t cap = t->cap * 2;
    struct slot *slots = calloc(cap, sizeof *slots);
    if (!slots)
        return -1;
    for (size_t j = 0; j < t->used; j++) {
        uint64_t h = t->b[j].hash;
        size_t i = (size_t)mix(h) & (cap - 1);
        while (slots[i].idx)
            i = (i + 1) & (cap - 1);
        slots[i].tag = (uint32_t)(h >> 32);
        slots[i].idx = (uint32_t)(j + 1);
    }
    free(t->slots);
    t->slots = slots;
    t->cap = cap;
    return 0;
}

int egress_matcher_add(struct egress_matcher *m, const struct egress_rule *r, const char *text,
                       int origin)
{
    const char *k = r->key, *k2 = "";
    size_t kn = strlen(r->key), k2n = 0;
    struct table *t = &m->exact;
    uint64_t h;
    unsigned depth = 0;
    if (r->kind == EGRESS_SUFFIX) {
        t = &m->suffix;
        k += 2; /* past "*." */
        kn -= 2;
        h = key_hash(k, kn, &depth);
    } else if (r->kind == EGRESS_MIDDLE) {
        t = &m->middle;
        const char *star = strstr(r->key, ".*.");
        kn = (size_t)(star - r->key);
        k2 = star + 3;
        k2n = strlen(k2);
        unsigned sdepth;
        h = middle_hash(prefix_hash(k, kn, &depth), key_hash(k2, k2n, &sdepth));
    } else {
        h = key_hash(k, kn, &depth);
    }
    t->depths |= 1ULL << (depth < 63 ? depth : 63);
    if ((t->used + 1) * 2 > t->cap && grow(t) < 0)
        return -1;
    if (t->used == t->bcap) {
        size_t bcap = t->bcap ? t->bcap * 2 : 16;
        struct bucket *nb = realloc(t->b, bcap * sizeof *nb);
        if (!nb)
            return -1;
        t->b = nb;
        t->bcap = bcap;
    }
    struct slot *sl = NULL;
    struct bucket *b = probe(t, h, k, kn, k2, k2n, &sl);
    for (struct egress_entry *e = b ? b->entries : NULL; e; e = e->next)
        if (e->port == r->port)
            return 0;
    struct egress_entry *e = calloc(1, sizeof *e);
    char *etext = strdup(text), *ekey = strdup(r->key);
    char *bk = b ? NULL : strndup(k, kn);
    char *bk2 = b ? NULL : strndup(k2, k2n);
    if (!e || !etext || !ekey || (!b && (!bk || !bk2))) {
        free(e);
        free(etext);
        free(ekey);
        free(bk);
        free(bk2);
        return -1;
    }
    if (!b) {
        b = &t->b[t->used];
        memset(b, 0, sizeof *b);
        b->key = bk;
        b->keylen = kn;
        b->key2 = bk2;
        b->key2len = k2n;
        b->hash = h;
        t->used++;
        sl->tag = (uint32_t)(h >> 32);
        sl->idx = (uint32_t)t->used;
    }
    e->text = etext;
    e->key = ekey;
    e->origin = origin;
    e->kind = r->kind;
    e->port = r->port;
    memcpy(e->addr, r->addr, sizeof e->addr);
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
    return 0;
}

static const struct egress_entry *lookup(const struct table *t, uint64_t h, const char *k,
                                         size_t kn, const char *k2, size_t k2n, uint16_t port)
{
    if (t->used == 0)
        return NULL;
    const struct bucket *b = probe(t, h, k, kn, k2, k2n, NULL);
    for (const struct egress_entry *e = b ? b->entries : NULL; e; e = e->next)
        if (e->port == 0 || e->port == port)
            return e;
    return NULL;
}

int egress_keys_init(struct egress_keys *k, const struct egress_target *t)
{
    const char *s = t->host;
    size_t n = strlen(s);
    k->n = n;
    k->nl = 0;
    if (t->kind != EGRESS_NAME) {
        unsigned depth;
        k->whole = key_hash(s, n, &depth);
        return 0;
    }
    /* One right-to-left pass: label starts, label hashes, suffix hashes.
     * Index 0 is the last label; starts[nl-1] == 0. */
    size_t end = n;
    uint64_t h = HASH_SEED;
    for (size_t i = n + 1; i-- > 0;) {
        if (i == 0 || s[i - 1] == '.') {
            if (k->nl == EGRESS_MAX_LABELS)
                return -1;
            k->starts[k->nl] = (uint16_t)i;
            k->lens[k->nl] = (uint16_t)(end - i);
            k->lh[k->nl] = label_hash(s + i, end - i);
            h = fold(h, k->lh[k->nl]);
            k->suf[k->nl] = h;
            k->nl++;
            end = i ? i - 1 : 0;
        }
    }
    k->whole = h;
    return 0;
}

const struct egress_entry *egress_matcher_find_keys(const struct egress_matcher *m,
                                                    const struct egress_target *t,
                                                    const struct egress_keys *k)
{
    const char *s = t->host;
    size_t n = k->n, nl = k->nl;
    const struct egress_entry *e = lookup(&m->exact, k->whole, s, n, "", 0, t->port);
    if (e || t->kind != EGRESS_NAME)
        return e;
    /* Middle wildcards: '*' stands for the label with j labels before it
     * (j >= 1) and at least two after. */
    if (m->middle.used) {
        uint64_t pre = HASH_SEED;
        for (size_t j = 1; j + 2 < nl; j++) {
            size_t li = nl - j; /* index of label j-1 */
            pre = fold(pre, k->lh[li]);
            if (!(m->middle.depths & (1ULL << (j < 63 ? j : 63))))
                continue;
            size_t si = nl - j - 2; /* the suffix starts at label j+1 */
            size_t pend = (size_t)k->starts[li] + k->lens[li];
            e = lookup(&m->middle, middle_hash(pre, k->suf[si]), s, pend, s + k->starts[si],
                       n - k->starts[si], t->port);
            if (e)
                return e;
        }
    }
    /* Leading wildcards: the longest proper suffix first, never the apex,
     * and never a lone top-level label. */
    if (m->suffix.used) {
        for (size_t j = nl - 1; j-- > 1;) {
            if (!(m->suffix.depths & (1ULL << (j + 1 < 63 ? j + 1 : 63))))
                continue;
            e = lookup(&m->suffix, k->suf[j], s + k->starts[j], n - k->starts[j], "", 0,
                       t->port);
            if (e)
                return e;
        }
    }
    return NULL;
}

const struct egress_entry *egress_matcher_find(const struct egress_matcher *m,
                                               const struct egress_target *t)
{
    struct egress_keys k;
    if (egress_keys_init(&k, t) < 0)
        return NULL;
    return egress_matcher_find_keys(m, t, &k);
}
