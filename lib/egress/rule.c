#include "egress/rule.h"

#include <arpa/inet.h>
#include <stdio.h>
#include <string.h>

#include "egress/idna.h"

#define MODE_ENTRY 0
#define MODE_TARGET 1

/* An entry or host quoted for a message: printable ASCII only, truncated. */
static void quote(const char *s, size_t n, char *out, size_t cap)
{
    size_t o = 0;
    if (cap == 0)
        return;
    for (size_t i = 0; i < n && o + 4 < cap; i++) {
        unsigned char c = (unsigned char)s[i];
        out[o++] = (c >= 0x20 && c < 0x7f) ? (char)c : '?';
    }
    if (o + 4 >= cap && n > o) {
        out[o++] = '.';
        out[o++] = '.';
    }
    out[o] = '\0';
}

static int fail(char *why, size_t whylen, const char *subject, size_t n, const char *problem)
{
    char q[96];
    quote(subject, n, q, sizeof q);
    if (why && whylen)
        snprintf(why, whylen, "\"%s\": %s", q, problem);
    return -1;
}

static int parse_port(const char *p, size_t n, uint16_t *out)
{
    if (n == 0 || n > 5)
        return -1;
    unsigned v = 0;
    for (size_t i = 0; i < n; i++) {
        if (p[i] < '0' || p[i] > '9')
            return -1;
        v = v * 10 + (unsigned)(p[i] - '0');
    }
    if (v == 0 || v > 65535)
        return -1;
    *out = (uint16_t)v;
    return 0;
}

/* Fills kind/key/addr from a 16-byte IPv6 address, folding IPv4-mapped. */
static void set_ip6(const uint8_t a[16], int *kind, char *key, uint8_t *addr)
{
    static const uint8_t mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
    if (memcmp(a, mapped, 12) == 0) {
        *kind = EGRESS_IP4;
        memset(addr, 0, 16);
        memcpy(addr, a + 12, 4);
        inet_ntop(AF_INET, addr, key, EGRESS_KEY_CAP);
        return;
    }
    *kind = EGRESS_IP6;
    memcpy(addr, a, 16);
    inet_ntop(AF_INET6, addr, key, EGRESS_KEY_CAP);
}

static int parse_ip6(const char *s, size_t n, int *kind, char *key, uint8_t *addr)
{
    char buf[64];
    uint8_t a[16];
    if (n == 0 || n >= sizeof buf || memchr(s, '%', n))
        return -1;
    memcpy(buf, s, n);
    buf[n] = '\0';
    if (inet_pton(AF_INET6, buf, a) != 1)
        return -1;
    set_ip6(a, kind, key, addr);
    return 0;
}

static int is_ipv4ish(const char *h, size_t n)
{
    /* The last label decides: all digits, or 0x-hex, is an address. */
    size_t start = n;
    while (start > 0 && h[start - 1] != '.')
        start--;
    const char *l = h + start;
    size_t ln = n - start;
    if (ln == 0)
        return 0;
    if (ln > 2 && l[0] == '0' && (l[1] == 'x' || l[1] == 'X')) {
        for (size_t i = 2; i < ln; i++)
            if (!((l[i] >= '0' && l[i] <= '9') || (l[i] >= 'a' && l[i] <= 'f') ||
                  (l[i] >= 'A' && l[i] <= 'F')))
                return 0;
        return 1;
    }
    for (size_t i = 0; i < ln; i++)
        if (l[i] < '0' || l[i] > '9')
            return 0;
    return 1;
}

static int valid_label_char(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_';
}

/*
 * The host part (no port, no brackets) to kind/key/addr. mode ENTRY allows
 * one whole-label '*' and wants strict dotted-quad IPv4; mode TARGET allows
 * no '*' and judges any numeric spelling as the address it denotes.
 */
static int norm_host(const char *h, size_t n, int mode, int *kind, char *key, uint8_t *addr,
                     const char **problem)
{
    if (n > 1 && h[n - 1] == '.')
        n--;
    if (n == 0 || (n == 1 && h[0] == '.')) {
        *problem = "empty host name";
        return -1;
    }
    if (is_ipv4ish(h, n)) {
        char buf[64];
        struct in_addr in;
        if (n >= sizeof buf) {
            *problem = "not a valid IPv4 address";
            return -1;
        }
        for (size_t i = 0; i < n; i++) {
            char c = h[i];
            int ok = (c >= '0' && c <= '9') || c == '.' ||
                     (mode == MODE_TARGET && ((c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F') ||
                                              c == 'x' || c == 'X'));
            if (!ok) {
                *problem = "not a valid IPv4 address";
                return -1;
            }
        }
        memcpy(buf, h, n);
        buf[n] = '\0';
        int r = mode == MODE_ENTRY ? inet_pton(AF_INET, buf, &in) : inet_aton(buf, &in);
        if (r != 1) {
            *problem = mode == MODE_ENTRY
                           ? "not a valid IPv4 address (write four decimal parts, e.g. 10.0.0.1)"
                           : "not a valid IPv4 address";
            return -1;
        }
        *kind = EGRESS_IP4;
        memset(addr, 0, 16);
        memcpy(addr, &in, 4);
        inet_ntop(AF_INET, addr, key, EGRESS_KEY_CAP);
        return 0;
    }

    size_t stars = 0;
    for (size_t i = 0; i < n; i++)
        stars += h[i] == '*';
    if (stars && mode == MODE_TARGET) {
        *problem = "a host name cannot contain '*'";
        return -1;
    }
    if (stars > 1) {
        *problem = "more than one '*' (an entry may have exactly one wildcard)";
        return -1;
    }
    if (n == 1 && h[0] == '*') {
        *problem = "'*' alone would allow every host; list the hosts instead";
        return -1;
    }

    size_t o = 0, nlabels = 0, star_label = 0;
    int has_star = 0;
    for (size_t i = 0; i <= n;) {
        size_t j = i;
        while (j < n && h[j] != '.')
            j++;
        if (j == i) {
            *problem = "empty label (two dots in a row, or a leading dot)";
            return -1;
        }
        char label[64];
        if (memchr(h + i, '*', j - i)) {
            if (j - i != 1) {
                *problem = "'*' must be a whole label (e.g. *.example.com)";
                return -1;
            }
            label[0] = '*';
            label[1] = '\0';
            has_star = 1;
            star_label = nlabels;
        } else {
            int w = idna_label_to_ascii(h + i, j - i, label, sizeof label, problem);
            if (w < 0)
                return -1;
            if (w > 63) {
                *problem = "label longer than 63 characters";
                return -1;
            }
            for (int k = 0; k < w; k++) {
                if (!valid_label_char(label[k])) {
                    *problem = "invalid character in host name (letters, digits, '-', '_' and "
                               "'.' only; no scheme, path, user or spaces)";
                    return -1;
                }
            }
        }
        size_t ll = strlen(label);
        if (o + ll + (nlabels ? 1 : 0) > EGRESS_NAME_MAX) {
            *problem = "host name longer than 253 characters";
            return -1;
        }
        if (nlabels)
            key[o++] = '.';
        memcpy(key + o, label, ll);
        o += ll;
        nlabels++;
        i = j + 1;
    }
    key[o] = '\0';
    if (!has_star) {
        *kind = EGRESS_NAME;
        return 0;
    }
    if (star_label == nlabels - 1) {
        *problem = "'*' cannot be the last label";
        return -1;
    }
    if (nlabels - star_label - 1 < 2) {
        *problem = "wildcard over a whole top-level domain (needs at least two labels after "
                   "'*', e.g. *.example.com)";
        return -1;
    }
    *kind = star_label == 0 ? EGRESS_SUFFIX : EGRESS_MIDDLE;
    return 0;
}

int egress_rule_parse(const char *entry, struct egress_rule *out, char *why, size_t whylen)
{
    const char *problem = NULL;
    size_t n = entry ? strlen(entry) : 0;
    memset(out, 0, sizeof *out);
    if (n == 0)
        return fail(why, whylen, "", 0, "empty entry");
    if (n > 300)
        return fail(why, whylen, entry, n, "entry longer than 300 characters");
    if (strstr(entry, "://"))
        return fail(why, whylen, entry, n, "a host, not a URL (drop the scheme)");
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)entry[i];
        if (c == '/')
            return fail(why, whylen, entry, n,
                        "contains '/' (entries are hosts, not URLs, paths or address ranges)");
        if (c <= 0x20 || c == 0x7f)
            return fail(why, whylen, entry, n, "contains a space or control character");
        if (c == '@')
            return fail(why, whylen, entry, n, "contains '@' (no user names in entries)");
    }

    const char *host = entry;
    size_t hn = n;
    if (entry[0] == '[') {
        const char *close = memchr(entry, ']', n);
        if (!close)
            return fail(why, whylen, entry, n, "'[' without a closing ']'");
        const char *rest = close + 1;
        size_t rn = n - (size_t)(rest - entry);
        if (rn > 0) {
            if (rest[0] != ':' || parse_port(rest + 1, rn - 1, &out->port) < 0)
                return fail(why, whylen, entry, n, "invalid port (1-65535 after ']:')");
        }
        if (parse_ip6(entry + 1, (size_t)(close - entry - 1), &out->kind, out->key, out->addr) < 0)
            return fail(why, whylen, entry, n, "not a valid IPv6 address inside [ ]");
        return 0;
    }
    const char *colon = memchr(entry, ':', n);
    if (colon) {
        if (memchr(colon + 1, ':', n - (size_t)(colon - entry) - 1))
            return fail(why, whylen, entry, n,
                        "an IPv6 address must be in brackets, e.g. [2001:db8::1] or "
                        "[2001:db8::1]:443");
        hn = (size_t)(colon - entry);
        if (parse_port(colon + 1, n - hn - 1, &out->port) < 0)
            return fail(why, whylen, entry, n, "invalid port (a number 1-65535 after ':')");
    }
    if (norm_host(host, hn, MODE_ENTRY, &out->kind, out->key, out->addr, &problem) < 0)
        return fail(why, whylen, entry, n, problem);
    return 0;
}

int egress_rule_check(const char *entry, char *why, size_t whylen)
{
    struct egress_rule r;
    return egress_rule_parse(entry, &r, why, whylen);
}

int egress_target_from_host(const char *host, size_t len, uint16_t port,
                            struct egress_target *out, char *why, size_t whylen)
{
    const char *problem = NULL;
    memset(out, 0, sizeof *out);
    out->port = port;
    if (len == 0)
        return fail(why, whylen, "", 0, "empty host");
    if (len > 300)
        return fail(why, whylen, host, len, "host longer than 300 characters");
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)host[i];
        if (c <= 0x20 || c == 0x7f || c == '/' || c == '@' || c == '\\' || c == '%')
            return fail(why, whylen, host, len, "invalid character in host");
    }
    if (host[0] == '[') {
        if (len < 2 || host[len - 1] != ']' ||
            parse_ip6(host + 1, len - 2, &out->kind, out->host, out->addr) < 0)
            return fail(why, whylen, host, len, "not a valid IPv6 address inside [ ]");
        return 0;
    }
    if (memchr(host, ':', len)) {
        if (parse_ip6(host, len, &out->kind, out->host, out->addr) < 0)
            return fail(why, whylen, host, len, "not a valid host or IPv6 address");
        return 0;
    }
    if (norm_host(host, len, MODE_TARGET, &out->kind, out->host, out->addr, &problem) < 0)
        return fail(why, whylen, host, len, problem);
    return 0;
}

int egress_target_parse(const char *s, struct egress_target *out, char *why, size_t whylen)
{
    size_t n = s ? strlen(s) : 0;
    uint16_t port = 0;
    if (n == 0) {
        memset(out, 0, sizeof *out);
        return fail(why, whylen, "", 0, "empty host");
    }
    if (s[0] == '[') {
        const char *close = memchr(s, ']', n);
        if (!close)
            return fail(why, whylen, s, n, "'[' without a closing ']'");
        size_t hn = (size_t)(close - s) + 1;
        if (hn < n && (s[hn] != ':' || parse_port(s + hn + 1, n - hn - 1, &port) < 0))
            return fail(why, whylen, s, n, "invalid port (1-65535 after ']:')");
        return egress_target_from_host(s, hn, port, out, why, whylen);
    }
    const char *colon = memchr(s, ':', n);
    if (colon && !memchr(colon + 1, ':', n - (size_t)(colon - s) - 1)) {
        size_t hn = (size_t)(colon - s);
        if (parse_port(colon + 1, n - hn - 1, &port) < 0)
            return fail(why, whylen, s, n, "invalid port (a number 1-65535 after ':')");
        return egress_target_from_host(s, hn, port, out, why, whylen);
    }
    return egress_target_from_host(s, n, 0, out, why, whylen);
}

void egress_target_format(const struct egress_target *t, char *buf, size_t len)
{
    if (t->port == 0)
        snprintf(buf, len, t->kind == EGRESS_IP6 ? "[%s]" : "%s", t->host);
    else
        snprintf(buf, len, t->kind == EGRESS_IP6 ? "[%s]:%u" : "%s:%u", t->host,
                 (unsigned)t->port);
}
