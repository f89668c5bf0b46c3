/*
 * Host names to their ASCII form: ASCII lower-casing and, for labels with
 * non-ASCII characters, RFC 3492 punycode with the "xn--" prefix. Pure.
 */
#ifndef CCSB_EGRESS_IDNA_H
#define CCSB_EGRESS_IDNA_H

#include <stddef.h>
#include <stdint.h>

/*
 * RFC 3492 encoding of n code points into out (no prefix, no NUL). Returns
 * the length written, or -1 when out is too small or the input overflows.
 */
int punycode_encode(const uint32_t *cp, size_t n, char *out, size_t outcap);

/*
 * One label (not NUL-terminated, len bytes of UTF-8) to its lower-case
 * ASCII form in out (NUL-terminated). ASCII letters are lower-cased;
 * other characters are not case-folded or normalised, so a Unicode label
 * matches only the same spelling (documented in docs/egress.md).
 * Returns the length, or -1 with *why set (invalid UTF-8, too long).
 */
int idna_label_to_ascii(const char *label, size_t len, char *out, size_t outcap,
                        const char **why);

#endif
