/*
 * SOCKS5 (RFC 1928, RFC 1929 user/password) and SOCKS4/4a request parsing.
 * Pure functions over a byte buffer (fuzzed in tests/fuzz/egress). Each
 * returns the bytes consumed (> 0), 0 when more are needed, or -1 when the
 * input is malformed.
 */
#ifndef CCSB_EGRESS_SOCKS_PARSE_H
#define CCSB_EGRESS_SOCKS_PARSE_H

#include <stddef.h>
#include <stdint.h>

#define SOCKS5_AUTH_NONE 0x00
#define SOCKS5_AUTH_USERPASS 0x02
#define SOCKS5_AUTH_NO_ACCEPTABLE 0xff

#define SOCKS5_CMD_CONNECT 0x01

#define SOCKS5_ATYP_IPV4 0x01
#define SOCKS5_ATYP_DOMAIN 0x03
#define SOCKS5_ATYP_IPV6 0x04

#define SOCKS5_REP_OK 0x00
#define SOCKS5_REP_FAILURE 0x01
#define SOCKS5_REP_NOT_ALLOWED 0x02
#define SOCKS5_REP_NET_UNREACHABLE 0x03
#define SOCKS5_REP_HOST_UNREACHABLE 0x04
#define SOCKS5_REP_REFUSED 0x05
#define SOCKS5_REP_TTL_EXPIRED 0x06
#define SOCKS5_REP_CMD_UNSUPPORTED 0x07
#define SOCKS5_REP_ATYP_UNSUPPORTED 0x08

/* Greeting: VER=5 NMETHODS METHODS...; sets which methods were offered. */
int socks5_parse_greeting(const uint8_t *p, size_t n, int *offers_none, int *offers_userpass);

/* RFC 1929: VER=1 ULEN UNAME PLEN PASSWD; user and pass NUL-terminated. */
int socks5_parse_userpass(const uint8_t *p, size_t n, char user[256], char pass[256]);

struct socks5_request {
    uint8_t cmd;
    uint8_t atyp;
    char host[256];  /* ATYP_DOMAIN: the name, NUL-terminated (may contain any byte but NUL) */
    uint8_t addr[16];/* ATYP_IPV4: 4 bytes; ATYP_IPV6: 16 */
    uint16_t port;
};
/* On -1, *rep says which reply to send (ATYP_UNSUPPORTED or FAILURE). */
int socks5_parse_request(const uint8_t *p, size_t n, struct socks5_request *r, uint8_t *rep);

struct socks4_request {
    uint8_t cmd;
    uint16_t port;
    uint8_t ip[4];
    char host[256]; /* SOCKS4a name, "" for plain SOCKS4 */
};
int socks4_parse_request(const uint8_t *p, size_t n, struct socks4_request *r);

#endif
