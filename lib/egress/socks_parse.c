#include "egress/socks_parse.h"

#include <string.h>

int socks5_parse_greeting(const uint8_t *p, size_t n, int *offers_none, int *offers_userpass)
{
    *offers_none = *offers_userpass = 0;
    if (n < 1)
        return 0;
    if (p[0] != 5)
        return -1;
    if (n < 2)
        return 0;
    size_t total = 2 + (size_t)p[1];
    if (p[1] == 0)
        return -1;
    if (n < total)
        return 0;
    for (size_t i = 2; i < total; i++) {
        if (p[i] == SOCKS5_AUTH_NONE)
            *offers_none = 1;
        else if (p[i] == SOCKS5_AUTH_USERPASS)
            *offers_userpass = 1;
    }
    return (int)total;
}

int socks5_parse_userpass(const uint8_t *p, size_t n, char user[256], char pass[256])
{
    user[0] = pass[0] = '\0';
    if (n < 1)
        return 0;
    if (p[0] != 1)
        return -1;
    if (n < 2)
        return 0;
    size_t ulen = p[1];
    if (n < 2 + ulen + 1)
        return 0;
    size_t plen = p[2 + ulen];
    size_t total = 3 + ulen + plen;
    if (n < total)
        return 0;
    if (ulen == 0 || memchr(p + 2, 0, ulen) || memchr(p + 3 + ulen, 0, plen))
        return -1;
    memcpy(user, p + 2, ulen);
    user[ulen] = '\0';
    memcpy(pass, p + 3 + ulen, plen);
    pass[plen] = '\0';
    return (int)total;
}

int socks5_parse_request(const uint8_t *p, size_t n, struct socks5_request *r, uint8_t *rep)
{
    memset(r, 0, sizeof *r);
    *rep = SOCKS5_REP_FAILURE;
    if (n < 1)
        return 0;
    if (p[0] != 5)
        return -1;
    if (n < 4)
        return 0;
    if (p[2] != 0)
        return -1;
    r->cmd = p[1];
    r->atyp = p[3];
    size_t alen;
    size_t off = 4;
    switch (p[3]) {
    case SOCKS5_ATYP_IPV4:
        alen = 4;
        break;
    case SOCKS5_ATYP_IPV6:
        alen = 16;
        break;
    case SOCKS5_ATYP_DOMAIN:
        if (n < 5)
            return 0;
        alen = p[4];
        off = 5;
        if (alen == 0)
            return -1;
        break;
    default:
        *rep = SOCKS5_REP_ATYP_UNSUPPORTED;
        return -1;
    }
    size_t total = off + alen + 2;
    if (n < total)
        return 0;
    if (p[3] == SOCKS5_ATYP_DOMAIN) {
        if (memchr(p + off, 0, alen))
            return -1;
        memcpy(r->host, p + off, alen);
        r->host[alen] = '\0';
    } else {
        memcpy(r->addr, p + off, alen);
    }
    r->port = (uint16_t)((p[off + alen] << 8) | p[off + alen + 1]);
    return (int)total;
}

int socks4_parse_request(const uint8_t *p, size_t n, struct socks4_request *r)
{
    memset(r, 0, sizeof *r);
    if (n < 1)
        return 0;
    if (p[0] != 4)
        return -1;
    if (n < 9)
        return 0;
    r->cmd = p[1];
    r->port = (uint16_t)((p[2] << 8) | p[3]);
    memcpy(r->ip, p + 4, 4);
    const uint8_t *nul = memchr(p + 8, 0, n - 8);
    if (!nul)
        return n - 8 > 255 ? -1 : 0;
    if ((size_t)(nul - (p + 8)) > 255)
        return -1;
    size_t off = (size_t)(nul - p) + 1;
    /* SOCKS4a: 0.0.0.x with x != 0 means a name follows the user id. */
    if (r->ip[0] == 0 && r->ip[1] == 0 && r->ip[2] == 0 && r->ip[3] != 0) {
        const uint8_t *nul2 = off < n ? memchr(p + off, 0, n - off) : NULL;
        if (!nul2)
            return n - off > 255 ? -1 : 0;
        size_t hl = (size_t)(nul2 - (p + off));
        if (hl == 0 || hl > 255)
            return -1;
        memcpy(r->host, p + off, hl);
        r->host[hl] = '\0';
        off += hl + 1;
    }
    return (int)off;
}
