#include "egress/idna.h"

#include <string.h>

enum { PC_BASE = 36, PC_TMIN = 1, PC_TMAX = 26, PC_SKEW = 38, PC_DAMP = 700,
       PC_BIAS = 72, PC_N = 128 };

static uint32_t adapt(uint32_t delta, uint32_t numpoints, int first)
{
    delta = first ? delta / PC_DAMP : delta / 2;
    delta += delta / numpoints;
    uint32_t k = 0;
    while (delta > ((PC_BASE - PC_TMIN) * PC_TMAX) / 2) {
        delta /= PC_BASE - PC_TMIN;
        k += PC_BASE;
    }
    return k + (((PC_BASE - PC_TMIN + 1) * delta) / (delta + PC_SKEW));
}

static char digit(uint32_t d)
{
    return (char)(d < 26 ? 'a' + d : '0' + (d - 26));
}

int punycode_encode(const uint32_t *cp, size_t n, char *out, size_t outcap)
{
    size_t o = 0;
    uint32_t b = 0;
    for (size_t i = 0; i < n; i++) {
        if (cp[i] < 0x80) {
            if (o >= outcap)
                return -1;
            out[o++] = (char)cp[i];
            b++;
        }
    }
    if (b > 0) {
        if (o >= outcap)
            return -1;
        out[o++] = '-';
    }
    uint32_t h = b, next = PC_N, delta = 0, bias = PC_BIAS;
    while (h < n) {
        uint32_t m = UINT32_MAX;
        for (size_t i = 0; i < n; i++)
            if (cp[i] >= next && cp[i] < m)
                m = cp[i];
        if ((uint64_t)(m - next) * (h + 1) > UINT32_MAX - delta)
            return -1;
        delta += (m - next) * (h + 1);
        next = m;
        for (size_t i = 0; i < n; i++) {
            if (cp[i] < next && ++delta == 0)
                return -1;
            if (cp[i] != next)
                continue;
            uint32_t q = delta;
            for (uint32_t k = PC_BASE;; k += PC_BASE) {
                uint32_t t = k <= bias ? PC_TMIN : k >= bias + PC_TMAX ? PC_TMAX : k - bias;
                if (q < t)
                    break;
                if (o >= outcap)
                    return -1;
                out[o++] = digit(t + (q - t) % (PC_BASE - t));
                q = (q - t) / (PC_BASE - t);
            }
            if (o >= outcap)
                return -1;
            out[o++] = digit(q);
            bias = adapt(delta, h + 1, h == b);
            delta = 0;
            h++;
        }
        delta++;
        next++;
    }
    return (int)o;
}

/* Strict UTF-8: no overlong forms, no surrogates, nothing above U+10FFFF. */
static int utf8_decode(const unsigned char *s, size_t len, uint32_t *cp, size_t cpcap,
                       size_t *ncp)
{
    size_t n = 0;
    for (size_t i = 0; i < len;) {
        unsigned char c = s[i];
        uint32_t v;
        size_t extra;
        if (c < 0x80) {
            v = c;
            extra = 0;
        } else if (c >= 0xC2 && c <= 0xDF) {
            v = c & 0x1F;
            extra = 1;
        } else if (c >= 0xE0 && c <= 0xEF) {
            v = c & 0x0F;
            extra = 2;
        } else if (c >= 0xF0 && c <= 0xF4) {
            v = c & 0x07;
            extra = 3;
        } else {
            return -1;
        }
        if (i + extra >= len)
            return -1;
        for (size_t k = 1; k <= extra; k++) {
            if ((s[i + k] & 0xC0) != 0x80)
                return -1;
            v = (v << 6) | (s[i + k] & 0x3F);
        }
        if ((extra == 2 && v < 0x800) || (extra == 3 && v < 0x10000) || v > 0x10FFFF ||
            (v >= 0xD800 && v <= 0xDFFF))
            return -1;
        if (n >= cpcap)
            return -2;
        cp[n++] = v;
        i += extra + 1;
    }
    *ncp = n;
    return 0;
}

int idna_label_to_ascii(const char *label, size_t len, char *out, size_t outcap,
                        const char **why)
{
    int ascii = 1;
    for (size_t i = 0; i < len; i++)
        if ((unsigned char)label[i] >= 0x80)
            ascii = 0;
    if (ascii) {
        if (len + 1 > outcap) {
            *why = "label longer than 63 characters";
            return -1;
        }
        for (size_t i = 0; i < len; i++) {
            char c = label[i];
            out[i] = (c >= 'A' && c <= 'Z') ? (char)(c - 'A' + 'a') : c;
        }
        out[len] = '\0';
        return (int)len;
    }
    uint32_t cp[64];
    size_t n = 0;
    int r = utf8_decode((const unsigned char *)label, len, cp, sizeof cp / sizeof cp[0], &n);
    if (r == -1) {
        *why = "invalid UTF-8 in host name";
        return -1;
    }
    if (r == -2) {
        *why = "label longer than 63 characters";
        return -1;
    }
    for (size_t i = 0; i < n; i++)
        if (cp[i] >= 'A' && cp[i] <= 'Z')
            cp[i] += 'a' - 'A';
    if (outcap < 5) {
        *why = "label longer than 63 characters";
        return -1;
    }
    memcpy(out, "xn--", 4);
    int w = punycode_encode(cp, n, out + 4, outcap - 5);
    if (w < 0) {
        *why = "label longer than 63 characters";
        return -1;
    }
    out[4 + w] = '\0';
    return 4 + w;
}
