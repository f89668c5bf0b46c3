#include "egress/upstream.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "egress/http_parse.h"

static int fail(char *why, size_t whylen, const char *msg)
{
    snprintf(why, whylen, "%s", msg);
    return -1;
}

/* Percent-decodes n bytes of s into out (cap bytes); -1 on a bad escape,
 * a NUL or CR/LF (they would end up in a header line), or overflow. */
static int decode(const char *s, size_t n, char *out, size_t cap)
{
    size_t o = 0;
    for (size_t i = 0; i < n; i++) {
        int c = (unsigned char)s[i];
        if (c == '%') {
            if (i + 2 >= n)
                return -1;
            int hi = http_hex_digit(s[i + 1]), lo = http_hex_digit(s[i + 2]);
            if (hi < 0 || lo < 0)
                return -1;
            c = hi * 16 + lo;
            i += 2;
        }
        if (c == 0 || c == '\r' || c == '\n' || o + 1 >= cap)
            return -1;
        out[o++] = (char)c;
    }
    out[o] = '\0';
    return 0;
}

int egress_upstream_parse(const char *url, struct egress_upstream *out, char *why,
                          size_t whylen)
{
    memset(out, 0, sizeof *out);
    if (!url || strncmp(url, "http://", 7) != 0)
        return fail(why, whylen, "only http:// proxies are supported");
    const char *s = url + 7;
    const char *end = s + strcspn(s, "/?#");
    if (*end && strcmp(end, "/") != 0)
        return fail(why, whylen, "must be http://[user:password@]host:port with no path");
    const char *at = NULL;
    for (const char *p = s; p < end; p++)
        if (*p == '@')
            at = p; /* the last one: a password may hold an unescaped '@' */
    if (at) {
        if (decode(s, (size_t)(at - s), out->userinfo, sizeof out->userinfo) < 0 ||
            !strchr(out->userinfo, ':'))
            return fail(why, whylen, "credentials must be user:password (percent-encoded)");
        s = at + 1;
    }
    const char *colon;
    if (*s == '[') {
        const char *close = memchr(s, ']', (size_t)(end - s));
        if (!close || close[1] != ':' || close - s - 1 <= 0 ||
            (size_t)(close - s - 1) >= sizeof out->host)
            return fail(why, whylen, "needs host:port ([v6]:port for IPv6)");
        memcpy(out->host, s + 1, (size_t)(close - s - 1));
        colon = close + 1;
    } else {
        colon = NULL;
        for (const char *p = s; p < end; p++)
            if (*p == ':')
                colon = p;
        if (!colon || colon == s || (size_t)(colon - s) >= sizeof out->host ||
            memchr(s, ':', (size_t)(colon - s)))
            return fail(why, whylen, "needs host:port ([v6]:port for IPv6)");
        memcpy(out->host, s, (size_t)(colon - s));
    }
    for (const char *h = out->host; *h; h++)
        if (*h <= ' ' || *h == '%' || *h == '@' || *h == '/' || *h == '\\')
            return fail(why, whylen, "bad character in the host");
    size_t plen = (size_t)(end - colon - 1);
    if (plen == 0 || plen > 5)
        return fail(why, whylen, "needs a port from 1 to 65535");
    long port = 0;
    for (size_t i = 0; i < plen; i++) {
        char c = colon[1 + i];
        if (c < '0' || c > '9')
            return fail(why, whylen, "needs a port from 1 to 65535");
        port = port * 10 + (c - '0');
    }
    if (port < 1 || port > 65535)
        return fail(why, whylen, "needs a port from 1 to 65535");
    snprintf(out->port, sizeof out->port, "%ld", port);
    return 0;
}
