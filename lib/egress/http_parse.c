#include "egress/http_parse.h"

#include <string.h>

static int lower(int c)
{
    return (c >= 'A' && c <= 'Z') ? c + 32 : c;
}

static int ieq(const char *a, size_t an, const char *b)
{
    size_t bn = strlen(b);
    if (an != bn)
        return 0;
    for (size_t i = 0; i < an; i++)
        if (lower((unsigned char)a[i]) != lower((unsigned char)b[i]))
            return 0;
    return 1;
}

static int is_tchar(unsigned char c)
{
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'))
        return 1;
    return c && strchr("!#$%&'*+-.^_`|~", c) != NULL;
}

/* The next line: [*p, eol) without CR/LF; returns the offset after LF, 0 if
 * no LF yet, -1 on a bare CR inside the line. */
static long next_line(const char *buf, size_t len, size_t off, size_t *eol)
{
    const char *lf = memchr(buf + off, '\n', len - off);
    if (!lf)
        return 0;
    size_t e = (size_t)(lf - buf);
    if (e > off && buf[e - 1] == '\r')
        e--;
    if (memchr(buf + off, '\r', e - off))
        return -1;
    *eol = e;
    return (long)(lf - buf) + 1;
}

struct line_msgs {
    const char *bare_cr, *too_long;
};
static const struct line_msgs REQUEST_LINE = {"bare CR in request line", "request line too long"};
static const struct line_msgs STATUS_LINE = {"bare CR in status line", "status line too long"};
static const struct line_msgs FIELD_LINE = {"bare CR in header", "head too large"};

/* next_line within the head's size limit: the offset after the line (> 0),
 * 0 when more bytes are needed, or -1 with *why. */
static long head_line(const char *buf, size_t len, size_t off, size_t *eol,
                      const struct line_msgs *m, const char **why)
{
    long next = next_line(buf, len, off, eol);
    if (next < 0) {
        *why = m->bare_cr;
        return -1;
    }
    if ((next == 0 && len >= HTTP_MAX_HEAD) || (size_t)next > HTTP_MAX_HEAD) {
        *why = m->too_long;
        return -1;
    }
    return next;
}

static int parse_version(const char *p, size_t n, int *minor)
{
    if (n != 8 || memcmp(p, "HTTP/1.", 7) != 0 || (p[7] != '0' && p[7] != '1'))
        return -1;
    *minor = p[7] - '0';
    return 0;
}

static int parse_fields(const char *buf, size_t len, size_t off, struct http_head *h,
                        const char **why)
{
    for (;;) {
        size_t eol;
        long next = head_line(buf, len, off, &eol, &FIELD_LINE, why);
        if (next <= 0)
            return (int)next;
        if (eol == off) {
            h->len = (size_t)next;
            return (int)next;
        }
        const char *l = buf + off;
        size_t ln = eol - off;
        if (l[0] == ' ' || l[0] == '\t') {
            *why = "folded header line";
            return -1;
        }
        size_t c = 0;
        while (c < ln && is_tchar((unsigned char)l[c]))
            c++;
        if (c == 0 || c >= ln || l[c] != ':') {
            *why = "malformed header line";
            return -1;
        }
        const char *v = l + c + 1;
        size_t vn = ln - c - 1;
        while (vn && (v[0] == ' ' || v[0] == '\t')) {
            v++;
            vn--;
        }
        while (vn && (v[vn - 1] == ' ' || v[vn - 1] == '\t'))
            vn--;
        for (size_t i = 0; i < vn; i++)
            if (v[i] == '\0') {
                *why = "NUL in header value";
                return -1;
            }
        if (h->nh >= HTTP_MAX_HEADERS) {
            *why = "too many header lines";
            return -1;
        }
        h->h[h->nh].name = l;
        h->h[h->nh].nlen = c;
        h->h[h->nh].value = v;
        h->h[h->nh].vlen = vn;
        h->nh++;
        off = (size_t)next;
    }
}

int http_parse_request(const char *buf, size_t len, struct http_head *h, const char **why)
{
    memset(h, 0, sizeof *h);
    size_t off = 0;
    /* Tolerate blank lines before a request (RFC 9112 2.2). */
    for (int i = 0; i < 4 && off < len && (buf[off] == '\r' || buf[off] == '\n'); i++) {
        if (buf[off] == '\r' && (off + 1 >= len || buf[off + 1] != '\n'))
            break;
        off += buf[off] == '\r' ? 2 : 1;
    }
    size_t eol;
    long next = head_line(buf, len, off, &eol, &REQUEST_LINE, why);
    if (next <= 0)
        return (int)next;
    const char *l = buf + off;
    size_t ln = eol - off;
    const char *sp1 = memchr(l, ' ', ln);
    const char *sp2 = sp1 ? memchr(sp1 + 1, ' ', ln - (size_t)(sp1 + 1 - l)) : NULL;
    if (!sp1 || !sp2 || sp1 == l || sp2 == sp1 + 1) {
        *why = "malformed request line";
        return -1;
    }
    h->method = l;
    h->mlen = (size_t)(sp1 - l);
    for (size_t i = 0; i < h->mlen; i++)
        if (!is_tchar((unsigned char)l[i])) {
            *why = "malformed method";
            return -1;
        }
    h->target = sp1 + 1;
    h->tlen = (size_t)(sp2 - sp1 - 1);
    for (size_t i = 0; i < h->tlen; i++) {
        unsigned char c = (unsigned char)h->target[i];
        if (c <= 0x20 || c >= 0x7f) {
            *why = "malformed request target";
            return -1;
        }
    }
    if (parse_version(sp2 + 1, (size_t)(l + ln - sp2 - 1), &h->minor) < 0) {
        *why = "unsupported HTTP version (HTTP/1.0 or HTTP/1.1 only)";
        return -1;
    }
    return parse_fields(buf, len, (size_t)next, h, why);
}

int http_parse_response(const char *buf, size_t len, struct http_head *h, const char **why)
{
    memset(h, 0, sizeof *h);
    size_t eol;
    long next = head_line(buf, len, 0, &eol, &STATUS_LINE, why);
    if (next <= 0)
        return (int)next;
    if (eol < 12 || parse_version(buf, 8, &h->minor) < 0 || buf[8] != ' ' ||
        (eol > 12 && buf[12] != ' ')) {
        *why = "malformed status line";
        return -1;
    }
    int st = 0;
    for (int i = 9; i < 12; i++) {
        if (buf[i] < '0' || buf[i] > '9') {
            *why = "malformed status code";
            return -1;
        }
        st = st * 10 + (buf[i] - '0');
    }
    if (st < 100) {
        *why = "malformed status code";
        return -1;
    }
    h->status = st;
    return parse_fields(buf, len, (size_t)next, h, why);
}

const struct http_header *http_find(const struct http_head *h, const char *name)
{
    for (size_t i = 0; i < h->nh; i++)
        if (ieq(h->h[i].name, h->h[i].nlen, name))
            return &h->h[i];
    return NULL;
}

int http_has_token(const char *v, size_t vlen, const char *token)
{
    size_t i = 0;
    while (i < vlen) {
        while (i < vlen && (v[i] == ' ' || v[i] == '\t' || v[i] == ','))
            i++;
        size_t s = i;
        while (i < vlen && v[i] != ',')
            i++;
        size_t e = i;
        while (e > s && (v[e - 1] == ' ' || v[e - 1] == '\t'))
            e--;
        if (e > s && ieq(v + s, e - s, token))
            return 1;
    }
    return 0;
}

int http_is_hop_by_hop(const struct http_head *h, const struct http_header *hd)
{
    static const char *const hop[] = {"connection", "keep-alive", "proxy-connection",
                                      "proxy-authorization", "proxy-authenticate", "te",
                                      "trailer", "upgrade", NULL};
    for (size_t i = 0; hop[i]; i++)
        if (ieq(hd->name, hd->nlen, hop[i]))
            return 1;
    for (size_t i = 0; i < h->nh; i++) {
        const struct http_header *c = &h->h[i];
        if (!ieq(c->name, c->nlen, "connection"))
            continue;
        /* Never let Connection strip the framing headers we rely on. */
        if (ieq(hd->name, hd->nlen, "content-length") ||
            ieq(hd->name, hd->nlen, "transfer-encoding"))
            continue;
        char name[128];
        if (hd->nlen >= sizeof name)
            continue;
        memcpy(name, hd->name, hd->nlen);
        name[hd->nlen] = '\0';
        if (http_has_token(c->value, c->vlen, name))
            return 1;
    }
    return 0;
}

static int content_length(const struct http_head *h, uint64_t *out, int *present,
                          const char **why)
{
    *present = 0;
    for (size_t i = 0; i < h->nh; i++) {
        if (!ieq(h->h[i].name, h->h[i].nlen, "content-length"))
            continue;
        const char *v = h->h[i].value;
        size_t n = h->h[i].vlen;
        if (n == 0 || n > 18) {
            *why = "invalid Content-Length";
            return -1;
        }
        uint64_t x = 0;
        for (size_t k = 0; k < n; k++) {
            if (v[k] < '0' || v[k] > '9') {
                *why = "invalid Content-Length";
                return -1;
            }
            x = x * 10 + (uint64_t)(v[k] - '0');
        }
        if (*present && x != *out) {
            *why = "conflicting Content-Length headers";
            return -1;
        }
        *out = x;
        *present = 1;
    }
    return 0;
}

/* 1 chunked is the final coding, 0 no Transfer-Encoding, 2 other codings. */
static int transfer_chunked(const struct http_head *h)
{
    const struct http_header *last = NULL;
    for (size_t i = 0; i < h->nh; i++)
        if (ieq(h->h[i].name, h->h[i].nlen, "transfer-encoding"))
            last = &h->h[i];
    if (!last)
        return 0;
    const char *v = last->value;
    size_t n = last->vlen;
    size_t s = n;
    while (s > 0 && v[s - 1] != ',')
        s--;
    while (s < n && (v[s] == ' ' || v[s] == '\t'))
        s++;
    return ieq(v + s, n - s, "chunked") ? 1 : 2;
}

int http_request_body(const struct http_head *h, uint64_t *length, const char **why)
{
    int present;
    *length = 0;
    if (content_length(h, length, &present, why) < 0)
        return -1;
    int te = transfer_chunked(h);
    if (te && present) {
        *why = "both Transfer-Encoding and Content-Length";
        return -1;
    }
    if (te == 2 || (te && h->minor == 0)) {
        *why = "unsupported Transfer-Encoding in request";
        return -1;
    }
    if (te == 1)
        return HTTP_BODY_CHUNKED;
    return present && *length ? HTTP_BODY_LENGTH : HTTP_BODY_NONE;
}

int http_response_body(const struct http_head *h, int request_was_head, uint64_t *length,
                       const char **why)
{
    int present;
    *length = 0;
    if (request_was_head || (h->status >= 100 && h->status < 200) || h->status == 204 ||
        h->status == 304)
        return HTTP_BODY_NONE;
    int te = transfer_chunked(h);
    if (te == 1)
        return HTTP_BODY_CHUNKED;
    if (te == 2)
        return HTTP_BODY_UNTIL_CLOSE;
    if (content_length(h, length, &present, why) < 0)
        return -1;
    if (present)
        return *length ? HTTP_BODY_LENGTH : HTTP_BODY_NONE;
    return HTTP_BODY_UNTIL_CLOSE;
}

static int split_authority(const char *a, size_t n, uint16_t defport, struct http_target *t,
                           const char **why)
{
    size_t hostlen = n;
    const char *portp = NULL;
    if (n && a[0] == '[') {
        const char *close = memchr(a, ']', n);
        if (!close) {
            *why = "malformed [IPv6] host";
            return -1;
        }
        hostlen = (size_t)(close - a) + 1;
        if (hostlen < n) {
            if (a[hostlen] != ':') {
                *why = "malformed authority";
                return -1;
            }
            portp = a + hostlen + 1;
        }
    } else {
        const char *colon = memchr(a, ':', n);
        if (colon) {
            hostlen = (size_t)(colon - a);
            portp = colon + 1;
        }
    }
    if (hostlen == 0 || hostlen >= sizeof t->host) {
        *why = "missing or overlong host";
        return -1;
    }
    if (memchr(a, '@', n)) {
        *why = "user information in the authority is not accepted";
        return -1;
    }
    memcpy(t->host, a, hostlen);
    t->host[hostlen] = '\0';
    t->hostlen = hostlen;
    if (!portp) {
        if (!defport) {
            *why = "CONNECT needs host:port";
            return -1;
        }
        t->port = defport;
        return 0;
    }
    size_t pn = (size_t)(a + n - portp);
    unsigned v = 0;
    if (pn == 0 || pn > 5) {
        *why = "invalid port";
        return -1;
    }
    for (size_t i = 0; i < pn; i++) {
        if (portp[i] < '0' || portp[i] > '9') {
            *why = "invalid port";
            return -1;
        }
        v = v * 10 + (unsigned)(portp[i] - '0');
    }
    if (v == 0 || v > 65535) {
        *why = "invalid port";
        return -1;
    }
    t->port = (uint16_t)v;
    return 0;
}

int http_parse_proxy_target(const struct http_head *h, struct http_target *t, const char **why)
{
    memset(t, 0, sizeof *t);
    if (ieq(h->method, h->mlen, "CONNECT")) {
        t->is_connect = 1;
        t->authority = h->target;
        t->alen = h->tlen;
        return split_authority(h->target, h->tlen, 0, t, why);
    }
    const char *s = h->target;
    size_t n = h->tlen;
    if (n >= 8 && ieq(s, 8, "https://")) {
        *why = "https:// URIs must be tunnelled with CONNECT";
        return -1;
    }
    if (n < 7 || !ieq(s, 7, "http://")) {
        *why = (n && s[0] == '/') ? "not a proxy request: send an absolute http:// URI or CONNECT"
                                  : "only http:// URIs can be forwarded";
        return -1;
    }
    s += 7;
    n -= 7;
    size_t a = 0;
    while (a < n && s[a] != '/' && s[a] != '?' && s[a] != '#')
        a++;
    t->authority = s;
    t->alen = a;
    if (split_authority(s, a, 80, t, why) < 0)
        return -1;
    t->path = s + a;
    t->plen = n - a;
    if (t->plen && t->path[0] == '#')
        t->plen = 0;
    return 0;
}

#define CH_SIZE 0
#define CH_SIZE_MORE 1
#define CH_EXT 2
#define CH_SIZE_LF 3
#define CH_DATA 4
#define CH_DATA_CR 5
#define CH_DATA_LF 6
#define CH_TRAILER_START 7
#define CH_TRAILER 8
#define CH_TRAILER_LF 9
#define CH_END_LF 10

int http_hex_digit(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

long http_chunked_scan(struct http_chunked *c, const char *p, size_t n, int *done)
{
    size_t i = 0;
    *done = 0;
    while (i < n) {
        char ch = p[i];
        switch (c->state) {
        case CH_SIZE:
        case CH_SIZE_MORE: {
            int v = http_hex_digit(ch);
            if (v >= 0) {
                if (++c->digits > 15)
                    return -1;
                c->remain = c->remain * 16 + (uint64_t)v;
                c->state = CH_SIZE_MORE;
            } else if (c->state == CH_SIZE) {
                return -1;
            } else if (ch == ';' || ch == ' ' || ch == '\t') {
                c->state = CH_EXT;
            } else if (ch == '\r') {
                c->state = CH_SIZE_LF;
            } else {
                return -1;
            }
            i++;
            break;
        }
        case CH_EXT:
            if (ch == '\r')
                c->state = CH_SIZE_LF;
            else if (ch == '\n' || ch == '\0')
                return -1;
            i++;
            break;
        case CH_SIZE_LF:
            if (ch != '\n')
                return -1;
            i++;
            c->digits = 0;
            c->state = c->remain ? CH_DATA : CH_TRAILER_START;
            break;
        case CH_DATA: {
            size_t take = n - i;
            if ((uint64_t)take > c->remain)
                take = (size_t)c->remain;
            c->remain -= take;
            i += take;
            if (c->remain == 0)
                c->state = CH_DATA_CR;
            break;
        }
        case CH_DATA_CR:
            if (ch != '\r')
                return -1;
            c->state = CH_DATA_LF;
            i++;
            break;
        case CH_DATA_LF:
            if (ch != '\n')
                return -1;
            c->state = CH_SIZE;
            i++;
            break;
        case CH_TRAILER_START:
            c->state = ch == '\r' ? CH_END_LF : CH_TRAILER;
            if (ch == '\n')
                return -1;
            i++;
            break;
        case CH_TRAILER:
            if (ch == '\r')
                c->state = CH_TRAILER_LF;
            else if (ch == '\n')
                return -1;
            i++;
            break;
        case CH_TRAILER_LF:
            if (ch != '\n')
                return -1;
            c->state = CH_TRAILER_START;
            i++;
            break;
        case CH_END_LF:
            if (ch != '\n')
                return -1;
            i++;
            *done = 1;
            return (long)i;
        default:
            return -1;
        }
    }
    return (long)i;
}
