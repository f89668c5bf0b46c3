/*
 * Violations read off a command's stderr. bubblewrap enforces by refusing
 * (EACCES, EPERM, EROFS); the kernel tells only the command, so the best the
 * host can do is recognise the messages programs print for those errors.
 * The stream itself is never altered: this only observes a copy.
 */
#ifndef CCSB_BACKEND_BWRAP_VIOLATION_H
#define CCSB_BACKEND_BWRAP_VIOLATION_H

#include <stddef.h>

struct violation_guess {
    const char *action; /* "file-write" (EROFS), "permission-denied" (EACCES),
                           "operation-not-permitted" (EPERM) */
    char target[512];   /* the path the line names, "" when none can be read */
};

/* 1 when line (no newline) reports a denial, filling *out; else 0. */
int violation_parse_line(const char *line, size_t len, struct violation_guess *out);

/*
 * Line assembly across chunks. feed() calls cb for each complete line
 * (lines longer than the buffer are cut to it, the rest ignored).
 */
struct violation_lines {
    char buf[1024];
    size_t len;
    int overflow; /* dropping the tail of an over-long line */
};
typedef void (*violation_line_fn)(const char *line, size_t len, void *ud);
void violation_feed(struct violation_lines *vl, const unsigned char *data, size_t len,
                    violation_line_fn cb, void *ud);

#endif
