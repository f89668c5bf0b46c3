/*
 * Recognising denial messages on stderr (see bwrap_violation.h).
 *
 * The shapes seen in practice:
 *   sh: 1: cannot create /etc/x: Read-only file system          (dash)
 *   bash: /etc/x: Permission denied                             (bash)
 *   touch: cannot touch '/etc/x': Read-only file system         (coreutils, C locale)
 *   mkdir: cannot create directory ‘x’: Permission denied       (coreutils, UTF-8)
 *   PermissionError: [Errno 13] Permission denied: '/etc/x'     (python)
 *   OSError: [Errno 30] Read-only file system: 'x'
 *   Error: EACCES: permission denied, open '/etc/x'             (node)
 *   kill: (1) - Operation not permitted
 * The path is the quoted or last token right before ": <message>", or the
 * quoted token after it.
 */
#include "backend/bwrap_violation.h"

#include <ctype.h>
#include <string.h>
#include <strings.h>

static const struct {
    const char *needle;
    const char *action;
} kinds[] = {
    {"read-only file system", "file-write"},
    {"erofs", "file-write"},
    {"permission denied", "permission-denied"},
    {"eacces", "permission-denied"},
    {"operation not permitted", "operation-not-permitted"},
    {"eperm", "operation-not-permitted"},
};

/* Case-insensitive search bounded by len; the needle must stand as a word. */
static const char *find_word(const char *s, size_t len, const char *needle, size_t *at)
{
    size_t n = strlen(needle);
    for (size_t i = 0; i + n <= len; i++) {
        if (strncasecmp(s + i, needle, n) != 0)
            continue;
        int left_ok = i == 0 || !isalnum((unsigned char)s[i - 1]);
        int right_ok = i + n == len || !isalnum((unsigned char)s[i + n]);
        if (left_ok && right_ok) {
            *at = i;
            return s + i;
        }
    }
    return NULL;
}

static int is_open_quote(const char *p, size_t left, size_t *qlen)
{
    if (left >= 1 && (*p == '\'' || *p == '"' || *p == '`')) {
        *qlen = 1;
        return 1;
    }
    /* U+2018 / U+201C as UTF-8 */
    if (left >= 3 && (unsigned char)p[0] == 0xE2 && (unsigned char)p[1] == 0x80 &&
        ((unsigned char)p[2] == 0x98 || (unsigned char)p[2] == 0x9C)) {
        *qlen = 3;
        return 1;
    }
    return 0;
}

static int is_close_quote(const char *p, size_t left, size_t *qlen)
{
    if (left >= 1 && (*p == '\'' || *p == '"' || *p == '`')) {
        *qlen = 1;
        return 1;
    }
    if (left >= 3 && (unsigned char)p[0] == 0xE2 && (unsigned char)p[1] == 0x80 &&
        ((unsigned char)p[2] == 0x99 || (unsigned char)p[2] == 0x9D)) {
        *qlen = 3;
        return 1;
    }
    return 0;
}

static void set_target(struct violation_guess *out, const char *p, size_t n)
{
    while (n && isspace((unsigned char)*p)) {
        p++;
        n--;
    }
    while (n && isspace((unsigned char)p[n - 1]))
        n--;
    if (n >= sizeof out->target)
        n = sizeof out->target - 1;
    memcpy(out->target, p, n);
    out->target[n] = '\0';
}

/* The last quoted run in [s, s+n), if any. */
static int last_quoted(const char *s, size_t n, const char **start, size_t *len)
{
    int found = 0;
    for (size_t i = 0; i < n;) {
        size_t q;
        if (!is_open_quote(s + i, n - i, &q)) {
            i++;
            continue;
        }
        size_t j = i + q;
        while (j < n) {
            size_t c;
            if (is_close_quote(s + j, n - j, &c)) {
                *start = s + i + q;
                *len = j - (i + q);
                found = *len > 0;
                i = j + c;
                break;
            }
            j++;
        }
        if (j >= n)
            break;
    }
    return found;
}

/* A token looks like a path when it has a slash or no spaces at all. */
static int plausible_path(const char *p, size_t n)
{
    if (n == 0 || n > 4096)
        return 0;
    if (memchr(p, '/', n))
        return 1;
    return !memchr(p, ' ', n);
}

int violation_parse_line(const char *line, size_t len, struct violation_guess *out)
{
    size_t at = 0;
    const char *hit = NULL;
    out->action = NULL;
    out->target[0] = '\0';
    for (size_t i = 0; i < sizeof kinds / sizeof kinds[0] && !hit; i++) {
        hit = find_word(line, len, kinds[i].needle, &at);
        if (hit)
            out->action = kinds[i].action;
    }
    if (!hit)
        return 0;

    /* After the message: python and node put the path there, quoted. */
    const char *qs;
    size_t ql;
    size_t after = at + strcspn(hit, ":,");
    if (after < len && last_quoted(line + after, len - after, &qs, &ql)) {
        set_target(out, qs, ql);
        return 1;
    }

    /* Before it: the segment between the previous ": " and ": <message>". */
    size_t end = at;
    while (end > 0 && (line[end - 1] == ' ' || line[end - 1] == '-' || line[end - 1] == '('))
        end--;
    if (end > 0 && line[end - 1] == ':')
        end--;
    else
        return 1; /* no "path: message" shape */
    size_t begin = end;
    while (begin > 0 && !(line[begin - 1] == ' ' && begin >= 2 && line[begin - 2] == ':'))
        begin--;
    if (last_quoted(line + begin, end - begin, &qs, &ql)) {
        set_target(out, qs, ql);
        return 1;
    }
    /* Unquoted: the last word of the segment ("cannot create /etc/x"). */
    size_t w = end;
    while (w > begin && line[w - 1] != ' ')
        w--;
    if (plausible_path(line + w, end - w) && (end - w) > 0 &&
        !(end - w <= 3 && isdigit((unsigned char)line[w]))) /* dash's "sh: 1:" line number */
        set_target(out, line + w, end - w);
    return 1;
}

void violation_feed(struct violation_lines *vl, const unsigned char *data, size_t len,
                    violation_line_fn cb, void *ud)
{
    for (size_t i = 0; i < len; i++) {
        unsigned char c = data[i];
        if (c == '\n') {
            if (vl->len)
                cb(vl->buf, vl->len, ud);
            vl->len = 0;
            vl->overflow = 0;
            continue;
        }
        if (vl->overflow)
            continue;
        if (vl->len == sizeof vl->buf - 1) {
            cb(vl->buf, vl->len, ud); /* judge the part we have */
            vl->len = 0;
            vl->overflow = 1;
            continue;
        }
        if (c != '\r')
            vl->buf[vl->len++] = (char)c;
    }
}
