/* libFuzzer: the SOCKS5 / SOCKS4 parsers, as the proxy calls them in sequence. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "egress/socks_parse.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    size_t off = 0;
    int none, up;
    int r = socks5_parse_greeting(data, size, &none, &up);
    if (r > (int)size)
        abort();
    if (r > 0) {
        off = (size_t)r;
        char user[256], pass[256];
        if (up) {
            r = socks5_parse_userpass(data + off, size - off, user, pass);
            if (r > (int)(size - off) || (r > 0 && (strlen(user) > 255 || strlen(pass) > 255)))
                abort();
            if (r > 0)
                off += (size_t)r;
        }
        struct socks5_request q;
        uint8_t rep;
        r = socks5_parse_request(data + off, size - off, &q, &rep);
        if (r > (int)(size - off))
            abort();
        if (r > 0 && q.atyp == SOCKS5_ATYP_DOMAIN && (q.host[0] == 0 || strlen(q.host) > 255))
            abort();
    }
    struct socks4_request s4;
    r = socks4_parse_request(data, size, &s4);
    if (r > (int)size || strlen(s4.host) > 255)
        abort();
    return 0;
}
