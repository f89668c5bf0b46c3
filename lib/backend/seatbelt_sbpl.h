/*
 * The lexical layer of SBPL (the Seatbelt profile language): a text buffer,
 * string literals that no path can break out of, regexes for literal paths,
 * and glob -> regex translation. Pure functions, no I/O.
 *
 * String literals follow the profile reader's Scheme syntax: the bytes
 * '"' and '\' are escaped with a backslash, newline/tab/carriage return
 * become \n \t \r, and any other control byte is refused (CCSB_E_POLICY):
 * the reader has no escape for it we can rely on, and a path that cannot
 * be written down exactly must not become a rule that matches something
 * else. The reader rejects literals longer than about 1 KiB, so a longer
 * string is emitted as (string-append "..." "...") in pieces.
 *
 * Regexes are passed as ordinary string literals, so a regex escape such
 * as \. is written "\\." in the profile.
 */
#ifndef CCSB_BACKEND_SEATBELT_SBPL_H
#define CCSB_BACKEND_SEATBELT_SBPL_H

#include <stddef.h>

/* Longest piece of one string literal, counted in escaped bytes. */
#define SBPL_LITERAL_MAX 900
/* Longest decoded string we will emit at all (paths are < 1024 on macOS;
 * a regex of one may be twice that). */
#define SBPL_STRING_MAX 8192

/*
 * A growable buffer with a sticky error: after the first failure every
 * append is a no-op and ->err says why (CCSB_E_NOMEM or CCSB_E_POLICY with
 * ->msg). Always NUL-terminated once anything was appended.
 */
struct sbpl_buf {
    char *s;
    size_t len;
    size_t cap;
    int err;
    char msg[256];
};

void sbpl_buf_init(struct sbpl_buf *b);
void sbpl_buf_free(struct sbpl_buf *b);
/* Hands the text to the caller (NULL after an error) and resets b. */
char *sbpl_buf_steal(struct sbpl_buf *b);

void sbpl_put(struct sbpl_buf *b, const char *s);
void sbpl_putn(struct sbpl_buf *b, const char *s, size_t n);
void sbpl_putf(struct sbpl_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Records a CCSB_E_POLICY failure (first one wins). */
void sbpl_fail(struct sbpl_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Appends s as an SBPL string literal (see above). what names the value in
 * an error message ("protectedPaths entry", ...). */
void sbpl_put_string(struct sbpl_buf *b, const char *s, const char *what);

/* Appends s with every regex metacharacter escaped: matches s exactly. */
void sbpl_regex_quote(struct sbpl_buf *b, const char *s);

/*
 * Appends the regex body for a glob: '*' is any run of bytes except '/',
 * '?' one byte except '/', '**' any run including '/', and "**" followed by
 * '/' zero or more whole directories. Every other byte is literal (so '['
 * is not a class: the policy calls an entry a glob only for '*' and '?').
 */
void sbpl_glob_regex(struct sbpl_buf *b, const char *glob);

/* 1 when s contains '*' or '?' (the policy's definition of a glob). */
int sbpl_is_glob(const char *s);

/*
 * Copies an absolute path into *out with repeated slashes collapsed and a
 * trailing slash removed ("/" stays "/"). Returns 0, CCSB_E_NOMEM, or
 * CCSB_E_POLICY when the path is not absolute or has a "." or ".."
 * component: Seatbelt matches canonical paths, so such a spelling would
 * make a rule that never matches.
 */
int sbpl_path_normalize(const char *path, char **out);

#endif
