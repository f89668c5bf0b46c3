/*
 * HTTP/1.x message heads and body framing, for the forward proxy. Pure
 * functions over a byte buffer (fuzzed in tests/fuzz/egress).
 */
#ifndef CCSB_EGRESS_HTTP_PARSE_H
#define CCSB_EGRESS_HTTP_PARSE_H

#include <stddef.h>
#include <stdint.h>

#define HTTP_MAX_HEAD 65536
#define HTTP_MAX_HEADERS 128

struct http_header {
    const char *name;
    size_t nlen;
    const char *value; /* optional whitespace trimmed */
    size_t vlen;
};

struct http_head {
    const char *method; /* request only */
    size_t mlen;
    const char *target;
    size_t tlen;
    int status; /* response only */
    int minor;  /* HTTP/1.<minor> */
    struct http_header h[HTTP_MAX_HEADERS];
    size_t nh;
    size_t len; /* bytes of the head, blank line included */
};

/* Both return the head length (> 0), 0 when more bytes are needed, or -1
 * with *why when malformed (or longer than HTTP_MAX_HEAD). */
int http_parse_request(const char *buf, size_t len, struct http_head *h, const char **why);
int http_parse_response(const char *buf, size_t len, struct http_head *h, const char **why);

/* The first header with this name (case-insensitive), or NULL. */
const struct http_header *http_find(const struct http_head *h, const char *name);
/* 1 when a comma-separated header value lists token (case-insensitive). */
int http_has_token(const char *v, size_t vlen, const char *token);
/* 1 when the header must not be forwarded: hop-by-hop by definition or
 * named by the message's Connection header. */
int http_is_hop_by_hop(const struct http_head *h, const struct http_header *hd);

#define HTTP_BODY_NONE 0
#define HTTP_BODY_LENGTH 1
#define HTTP_BODY_CHUNKED 2
#define HTTP_BODY_UNTIL_CLOSE 3

/* Body framing: HTTP_BODY_* or -1 with *why (conflicting or bad lengths,
 * unknown transfer coding: the request-smuggling shapes). */
int http_request_body(const struct http_head *h, uint64_t *length, const char **why);
int http_response_body(const struct http_head *h, int request_was_head, uint64_t *length,
                       const char **why);

struct http_target {
    int is_connect;
    char host[300];       /* as written, "[v6]" keeps its brackets */
    size_t hostlen;
    uint16_t port;
    const char *path;     /* absolute-form: "/..." within the head ("/" when empty) */
    size_t plen;
    const char *authority;/* absolute-form: host[:port] as written */
    size_t alen;
};

/* CONNECT authority or an http:// absolute URI; -1 with *why otherwise. */
int http_parse_proxy_target(const struct http_head *h, struct http_target *t, const char **why);

/* Incremental scanner for a chunked body that is forwarded unchanged. */
struct http_chunked {
    int state;
    uint64_t remain;
    int digits;
};
/*
 * Scans up to n bytes; returns how many belong to the body (stops right
 * after its end, setting *done), or -1 when malformed.
 */
long http_chunked_scan(struct http_chunked *c, const char *p, size_t n, int *done);

/* The value of one hex digit (either case), or -1. */
int http_hex_digit(char c);

#endif
