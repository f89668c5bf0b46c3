/* SBPL lexical layer: see seatbelt_sbpl.h for the rules. */
#include "backend/seatbelt_sbpl.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ccsandbox/ccsandbox.h>

void sbpl_buf_init(struct sbpl_buf *b)
{
    memset(b, 0, sizeof(*b));
}

void sbpl_buf_free(struct sbpl_buf *b)
{
    free(b->s);
    sbpl_buf_init(b);
}

char *sbpl_buf_steal(struct sbpl_buf *b)
{
    char *s = b->err ? NULL : b->s;
    if (b->err)
        free(b->s);
    else if (!s)
        s = calloc(1, 1);
    b->s = NULL;
    b->len = b->cap = 0;
    return s;
}

static int reserve(struct sbpl_buf *b, size_t extra)
{
    if (b->err)
        return -1;
    if (extra > (size_t)-1 / 2 - b->len) {
        b->err = CCSB_E_NOMEM;
        return -1;
    }
    size_t need = b->len + extra + 1;
    if (need <= b->cap)
        return 0;
    size_t cap = b->cap ? b->cap : 256;
    while (cap < need)
        cap *= 2;
    char *s = realloc(b->s, cap);
    if (!s) {
        b->err = CCSB_E_NOMEM;
        snprintf(b->msg, sizeof(b->msg), "out of memory");
        return -1;
    }
    b->s = s;
    b->cap = cap;
    return 0;
}

void sbpl_putn(struct sbpl_buf *b, const char *s, size_t n)
{
    if (reserve(b, n) < 0)
        return;
    memcpy(b->s + b->len, s, n);
    b->len += n;
    b->s[b->len] = '\0';
}

void sbpl_put(struct sbpl_buf *b, const char *s)
{
    sbpl_putn(b, s, strlen(s));
}

void sbpl_putf(struct sbpl_buf *b, const char *fmt, ...)
{
    if (b->err)
        return;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0) {
        b->err = CCSB_E_INTERNAL;
        snprintf(b->msg, sizeof(b->msg), "format error");
        return;
    }
    if (reserve(b, (size_t)n) < 0)
        return;
    va_start(ap, fmt);
    vsnprintf(b->s + b->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    b->len += (size_t)n;
}

void sbpl_fail(struct sbpl_buf *b, const char *fmt, ...)
{
    if (b->err)
        return;
    b->err = CCSB_E_POLICY;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(b->msg, sizeof(b->msg), fmt, ap);
    va_end(ap);
}

/* Writes the escaped form of c into out; returns its length (1 or 2), or
 * 0 when the byte has no escape we trust. */
static size_t escape_byte(unsigned char c, char out[2])
{
    out[0] = '\\';
    switch (c) {
    case '"': out[1] = '"'; return 2;
    case '\\': out[1] = '\\'; return 2;
    case '\n': out[1] = 'n'; return 2;
    case '\t': out[1] = 't'; return 2;
    case '\r': out[1] = 'r'; return 2;
    default: break;
    }
    if (c < 0x20 || c == 0x7f)
        return 0;
    out[0] = (char)c;
    return 1;
}

void sbpl_put_string(struct sbpl_buf *b, const char *s, const char *what)
{
    if (b->err)
        return;
    size_t n = strlen(s);
    if (n > SBPL_STRING_MAX) {
        sbpl_fail(b, "%s is %zu bytes long; a Seatbelt profile string holds at most %d",
                  what, n, SBPL_STRING_MAX);
        return;
    }
    /* First pass: refuse what cannot be written, count escaped bytes. */
    size_t escaped = 0;
    char e[2];
    for (size_t i = 0; i < n; i++) {
        size_t el = escape_byte((unsigned char)s[i], e);
        if (!el) {
            sbpl_fail(b, "%s contains the control byte 0x%02x, which a Seatbelt "
                         "profile string cannot express", what, (unsigned char)s[i]);
            return;
        }
        escaped += el;
    }
    int pieces = escaped > SBPL_LITERAL_MAX;
    /* Worst case: every piece adds `" "` (3 bytes) after at most
     * SBPL_LITERAL_MAX - 1 bytes, plus "(string-append " and ")". */
    size_t room = escaped + 2 + (pieces ? 16 + 1 + 3 * (escaped / (SBPL_LITERAL_MAX - 1) + 1) : 0);
    if (reserve(b, room) < 0)
        return;
    char *o = b->s + b->len;
    if (pieces) {
        memcpy(o, "(string-append ", 15);
        o += 15;
    }
    *o++ = '"';
    size_t in_piece = 0;
    for (size_t i = 0; i < n; i++) {
        size_t el = escape_byte((unsigned char)s[i], e);
        if (pieces && in_piece + el > SBPL_LITERAL_MAX) {
            memcpy(o, "\" \"", 3);
            o += 3;
            in_piece = 0;
        }
        memcpy(o, e, el);
        o += el;
        in_piece += el;
    }
    *o++ = '"';
    if (pieces)
        *o++ = ')';
    *o = '\0';
    b->len = (size_t)(o - b->s);
}

static int is_regex_meta(char c)
{
    return c != '\0' && strchr(".^$*+?()[]{}|\\", c) != NULL;
}

static void regex_quote_byte(struct sbpl_buf *b, char c)
{
    if (is_regex_meta(c))
        sbpl_putn(b, "\\", 1);
    sbpl_putn(b, &c, 1);
}

void sbpl_regex_quote(struct sbpl_buf *b, const char *s)
{
    for (; *s; s++)
        regex_quote_byte(b, *s);
}

void sbpl_glob_regex(struct sbpl_buf *b, const char *glob)
{
    for (const char *p = glob; *p; p++) {
        if (p[0] == '*' && p[1] == '*') {
            while (p[1] == '*')
                p++;
            if (p[1] == '/') {
                sbpl_put(b, "(.*/)?");
                p++;
            } else {
                sbpl_put(b, ".*");
            }
        } else if (*p == '*') {
            sbpl_put(b, "[^/]*");
        } else if (*p == '?') {
            sbpl_put(b, "[^/]");
        } else {
            regex_quote_byte(b, *p);
        }
    }
}

int sbpl_is_glob(const char *s)
{
    return strpbrk(s, "*?") != NULL;
}

int sbpl_path_normalize(const char *path, char **out)
{
    *out = NULL;
    if (!path || path[0] != '/')
        return CCSB_E_POLICY;
    size_t n = strlen(path);
    char *o = malloc(n + 1);
    if (!o)
        return CCSB_E_NOMEM;
    size_t j = 0;
    for (size_t i = 0; i < n; i++) {
        if (path[i] == '/' && j > 0 && o[j - 1] == '/')
            continue;
        o[j++] = path[i];
    }
    if (j > 1 && o[j - 1] == '/')
        j--;
    o[j] = '\0';
    /* Reject "." and ".." components. */
    for (const char *c = o; *c; ) {
        const char *e = strchr(c + 1, '/');
        size_t len = e ? (size_t)(e - c) : strlen(c);
        if ((len == 2 && c[1] == '.') || (len == 3 && c[1] == '.' && c[2] == '.')) {
            free(o);
            return CCSB_E_POLICY;
        }
        if (!e)
            break;
        c = e;
    }
    *out = o;
    return 0;
}
