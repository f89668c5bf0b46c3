/*
 * libFuzzer: the HTTP proxy's parsers (request head, proxy target, body
 * framing, response head, chunked scanner) on arbitrary bytes. The parser
 * sources are compiled into this target so they are instrumented.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "egress/http_parse.h"

static void check_head(const struct http_head *h, const char *buf, size_t len, int r)
{
    if (r <= 0)
        return;
    if ((size_t)r > len || h->len != (size_t)r)
        abort();
    for (size_t i = 0; i < h->nh; i++) {
        const struct http_header *x = &h->h[i];
        if (x->name < buf || x->name + x->nlen > buf + r || x->value < buf ||
            x->value + x->vlen > buf + r || x->nlen == 0)
            abort();
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *buf = (const char *)data;
    static struct http_head h;
    const char *why = NULL;
    uint64_t len;

    int r = http_parse_request(buf, size, &h, &why);
    check_head(&h, buf, size, r);
    if (r > 0) {
        struct http_target t;
        if (http_parse_proxy_target(&h, &t, &why) == 0) {
            if (t.hostlen == 0 || t.hostlen >= sizeof t.host || strlen(t.host) != t.hostlen ||
                t.port == 0)
                abort();
            if (!t.is_connect && (t.path < buf || t.path + t.plen > buf + r))
                abort();
        }
        int fr = http_request_body(&h, &len, &why);
        if (fr == HTTP_BODY_CHUNKED) {
            struct http_chunked c;
            memset(&c, 0, sizeof c);
            int done = 0;
            long n = http_chunked_scan(&c, buf + r, size - (size_t)r, &done);
            if (n > (long)(size - (size_t)r))
                abort();
        }
        for (size_t i = 0; i < h.nh; i++)
            (void)http_is_hop_by_hop(&h, &h.h[i]);
    }
    r = http_parse_response(buf, size, &h, &why);
    check_head(&h, buf, size, r);
    if (r > 0)
        (void)http_response_body(&h, size & 1, &len, &why);

    /* The chunked scanner alone, fed in two pieces. */
    struct http_chunked c;
    memset(&c, 0, sizeof c);
    int done = 0;
    size_t half = size / 2;
    long a = http_chunked_scan(&c, buf, half, &done);
    if (a >= 0 && !done && (size_t)a == half) {
        long b = http_chunked_scan(&c, buf + half, size - half, &done);
        if (b > (long)(size - half))
            abort();
    }
    return 0;
}
