/* `log stream` lines -> violations. See seatbelt_log.h. */
#include "backend/seatbelt_log.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include <ccsandbox/ccsandbox.h>

#include "backend/seatbelt_lists.h"

/* Remembered denials for de-duplication; the oldest is forgotten first. */
#define SEEN_MAX 128
/* Text mode: lines a denial may span before its tag (a path with
 * newlines); more and the denial is dropped. */
#define TEXT_SPAN_MAX 8

struct seen {
    char *key;
    uint64_t at_ms;
};

struct seatbelt_log {
    char *tag;
    size_t tag_len;
    uint64_t window_ms;
    struct seen seen[SEEN_MAX];
    size_t n_seen;
    uint64_t repeats;
    /* text mode: the denial waiting for its tag line */
    char *pending;
    int pending_lines;
    /* feed: the partial line carried between calls */
    char *part;
    size_t part_len;
    int part_overlong;
};

void seatbelt_violation_clear(struct seatbelt_violation *v)
{
    free(v->action);
    free(v->target);
    free(v->raw);
    free(v->process);
    free(v->exec_tag);
    memset(v, 0, sizeof(*v));
}

struct seatbelt_log *seatbelt_log_new(const char *tag, uint64_t window_ms)
{
    struct seatbelt_log *lg = calloc(1, sizeof(*lg));
    if (!lg)
        return NULL;
    lg->tag = strdup(tag);
    if (!lg->tag) {
        free(lg);
        return NULL;
    }
    lg->tag_len = strlen(tag);
    lg->window_ms = window_ms;
    return lg;
}

void seatbelt_log_free(struct seatbelt_log *lg)
{
    if (!lg)
        return;
    for (size_t i = 0; i < lg->n_seen; i++)
        free(lg->seen[i].key);
    free(lg->tag);
    free(lg->pending);
    free(lg->part);
    free(lg);
}

uint64_t seatbelt_log_repeats(const struct seatbelt_log *lg)
{
    return lg->repeats;
}

/* ------------------------------------------------------------------ */
/* The denial text                                                      */
/* ------------------------------------------------------------------ */

static char *dupn(const char *s, size_t n)
{
    char *d = malloc(n + 1);
    if (d) {
        memcpy(d, s, n);
        d[n] = '\0';
    }
    return d;
}

static const char *action_name(const char *op, size_t n)
{
    static const struct { const char *op, *name; } map[] = {
        {"file-read-data", "file-read"},
        {"file-write-data", "file-write"},
        {"process-exec*", "process-exec"},
    };
    for (size_t i = 0; i < sizeof(map) / sizeof(map[0]); i++)
        if (strlen(map[i].op) == n && memcmp(map[i].op, op, n) == 0)
            return map[i].name;
    return NULL;
}

/* N of the kernel's "<N> duplicate report[s] for " summary right before
 * "Sandbox: " at sb; 1 when there is none. */
static unsigned duplicate_count(const char *text, const char *sb)
{
    static const char *const forms[] = {" duplicate reports for ", " duplicate report for "};
    for (size_t f = 0; f < 2; f++) {
        size_t fl = strlen(forms[f]);
        if ((size_t)(sb - text) < fl + 1 || memcmp(sb - fl, forms[f], fl) != 0)
            continue;
        const char *end = sb - fl, *d = end;
        while (d > text && isdigit((unsigned char)d[-1]))
            d--;
        if (d == end || end - d > 9)
            return 1;
        unsigned count = 0;
        for (; d < end; d++)
            count = count * 10 + (unsigned)(*d - '0');
        return count ? count : 1;
    }
    return 1;
}

/*
 * Parses "[<N> duplicate report[s] for ]Sandbox: <proc>(<pid>) deny(<n>)
 * <op>[ <target>]" (text of n bytes, no tag line). Returns 1 on success, 0
 * when it is not a denial, CCSB_E_NOMEM.
 */
static int parse_denial(const char *text, size_t n, struct seatbelt_violation *v)
{
    memset(v, 0, sizeof(*v));
    v->count = 1;
    v->pid = -1;
    const char *end = text + n;
    const char *sb = NULL;
    for (const char *p = text; p + 9 <= end; p++) {
        if (memcmp(p, "Sandbox: ", 9) == 0) {
            sb = p;
            break;
        }
    }
    if (!sb)
        return 0;
    v->count = duplicate_count(text, sb);
    const char *body = sb + 9;
    /* The process name may hold spaces and parentheses: the pid is the last
     * "(digits)" before " deny(". */
    const char *deny = NULL;
    for (const char *p = body; p + 6 <= end; p++) {
        if (memcmp(p, " deny(", 6) == 0) {
            deny = p;
            break;
        }
    }
    if (!deny || deny == body || deny[-1] != ')')
        return 0;
    const char *open = deny - 1;
    while (open > body && *open != '(')
        open--;
    if (*open != '(' || open + 1 == deny - 1)
        return 0;
    long pid = 0;
    for (const char *p = open + 1; p < deny - 1; p++) {
        if (!isdigit((unsigned char)*p) || pid > 100000000L)
            return 0;
        pid = pid * 10 + (*p - '0');
    }
    const char *p = deny + 6;
    while (p < end && isdigit((unsigned char)*p))
        p++;
    if (p >= end || *p != ')')
        return 0;
    p++;
    while (p < end && *p == ' ')
        p++;
    const char *op = p;
    while (p < end && !isspace((unsigned char)*p))
        p++;
    size_t op_len = (size_t)(p - op);
    if (op_len == 0)
        return 0;
    while (p < end && *p == ' ')
        p++;
    const char *tgt_end = end;
    while (tgt_end > p && isspace((unsigned char)tgt_end[-1]))
        tgt_end--;

    const char *mapped = action_name(op, op_len);
    v->action = mapped ? strdup(mapped) : dupn(op, op_len);
    v->target = dupn(p, (size_t)(tgt_end - p));
    v->raw = dupn(sb, (size_t)(end - sb));
    v->process = dupn(body, (size_t)(open - body));
    v->pid = pid;
    if (!v->action || !v->target || !v->raw || !v->process) {
        seatbelt_violation_clear(v);
        return CCSB_E_NOMEM;
    }
    /* the raw text keeps its own trailing whitespace out */
    size_t rl = strlen(v->raw);
    while (rl > 0 && isspace((unsigned char)v->raw[rl - 1]))
        v->raw[--rl] = '\0';
    return 1;
}

/* The Seatbelt operation as logged (before naming), for the noise list. */
static int is_noise(const struct seatbelt_violation *v)
{
    const char *op = v->raw;
    const char *deny = strstr(op, " deny(");
    if (!deny)
        return 0;
    op = strchr(deny + 6, ')');
    if (!op)
        return 0;
    op++;
    while (*op == ' ')
        op++;
    size_t op_len = strcspn(op, " \t\n");
    for (size_t i = 0; seatbelt_log_noise[i].path; i++) {
        const char *nop = seatbelt_log_noise[i].path;
        if (nop[0] && (strlen(nop) != op_len || strncmp(nop, op, op_len) != 0))
            continue;
        if (strstr(v->target, seatbelt_log_noise[i].why))
            return 1;
    }
    return 0;
}

/*
 * Does line (n bytes) carry our tag? Returns 1 (session-wide), 2 (with
 * an exec part, copied to *exec), 0 (not ours), CCSB_E_NOMEM.
 */
static int match_tag(const struct seatbelt_log *lg, const char *line, size_t n, char **exec)
{
    while (n > 0 && (line[n - 1] == '\r' || line[n - 1] == ' '))
        n--;
    if (n < lg->tag_len || memcmp(line, lg->tag, lg->tag_len) != 0)
        return 0;
    if (n == lg->tag_len)
        return 1;
    if (line[lg->tag_len] != ':' || n == lg->tag_len + 1)
        return 0;
    const char *e = line + lg->tag_len + 1;
    size_t el = n - lg->tag_len - 1;
    for (size_t i = 0; i < el; i++) {
        unsigned char c = (unsigned char)e[i];
        if (!isalnum(c) && c != '.' && c != '_' && c != '-' && c != '%')
            return 0;
    }
    *exec = dupn(e, el);
    return *exec ? 2 : CCSB_E_NOMEM;
}

/* ------------------------------------------------------------------ */
/* De-duplication                                                       */
/* ------------------------------------------------------------------ */

/* 1 when v repeats a denial reported within the window (and counts it). */
static int is_repeat(struct seatbelt_log *lg, const struct seatbelt_violation *v, uint64_t now,
                     int *nomem)
{
    *nomem = 0;
    const char *ex = v->exec_tag ? v->exec_tag : "";
    size_t kl = strlen(v->action) + strlen(v->target) + strlen(ex) + 3;
    char *key = malloc(kl);
    if (!key) {
        *nomem = 1;
        return 0;
    }
    snprintf(key, kl, "%s\n%s\n%s", v->action, v->target, ex);
    for (size_t i = 0; i < lg->n_seen; i++) {
        if (strcmp(lg->seen[i].key, key) != 0)
            continue;
        free(key);
        if (lg->window_ms && now - lg->seen[i].at_ms < lg->window_ms) {
            lg->repeats += v->count;
            return 1;
        }
        lg->seen[i].at_ms = now;
        return 0;
    }
    if (lg->n_seen == SEEN_MAX) {
        /* forget the one reported longest ago */
        size_t old = 0;
        for (size_t i = 1; i < lg->n_seen; i++)
            if (lg->seen[i].at_ms < lg->seen[old].at_ms)
                old = i;
        free(lg->seen[old].key);
        lg->seen[old] = lg->seen[--lg->n_seen];
    }
    lg->seen[lg->n_seen++] = (struct seen){key, now};
    return 0;
}

/* Runs a parsed, tagged denial through the noise and repeat filters. */
static int finish(struct seatbelt_log *lg, struct seatbelt_violation *v, uint64_t now)
{
    if (is_noise(v)) {
        seatbelt_violation_clear(v);
        return 0;
    }
    int nomem;
    int rep = is_repeat(lg, v, now, &nomem);
    if (nomem || rep) {
        seatbelt_violation_clear(v);
        return nomem ? CCSB_E_NOMEM : 0;
    }
    return 1;
}

/*
 * A whole event message: the denial, then the tag as its last line.
 */
static int from_message(struct seatbelt_log *lg, const char *msg, size_t n, uint64_t now,
                        struct seatbelt_violation *out)
{
    while (n > 0 && (msg[n - 1] == '\n' || msg[n - 1] == '\r'))
        n--;
    const char *nl = NULL;
    for (size_t i = n; i > 0; i--) {
        if (msg[i - 1] == '\n') {
            nl = msg + i - 1;
            break;
        }
    }
    if (!nl)
        return 0; /* no tag line: not from one of our rules */
    char *exec = NULL;
    int t = match_tag(lg, nl + 1, (size_t)(msg + n - nl - 1), &exec);
    if (t <= 0)
        return t;
    int rc = parse_denial(msg, (size_t)(nl - msg), out);
    if (rc != 1) {
        free(exec);
        return rc;
    }
    out->exec_tag = exec;
    return finish(lg, out, now);
}

static int from_json(struct seatbelt_log *lg, const char *line, size_t len, uint64_t now,
                     struct seatbelt_violation *out)
{
    json_error_t jerr;
    json_t *ev = json_loadb(line, len, 0, &jerr);
    if (!ev)
        return 0;
    int rc = 0;
    json_t *msg = json_object_get(ev, "eventMessage");
    json_t *pid = json_object_get(ev, "processID");
    /* Only the kernel writes Seatbelt's denials; a user process could log
     * look-alike text ending with our tag. */
    if (json_is_string(msg) && json_is_integer(pid) && json_integer_value(pid) == 0)
        rc = from_message(lg, json_string_value(msg), json_string_length(msg), now, out);
    json_decref(ev);
    return rc;
}

static int is_text_denial(const char *line, size_t len)
{
    const char *kern = NULL, *sb = NULL;
    for (size_t i = 0; i + 9 <= len; i++) {
        if (!kern && ((i == 0 && memcmp(line, "kernel", 6) == 0) ||
                      (i + 7 <= len && memcmp(line + i, " kernel", 7) == 0)))
            kern = line + i;
        if (memcmp(line + i, "Sandbox: ", 9) == 0) {
            sb = line + i;
            break;
        }
    }
    if (!kern || !sb)
        return 0;
    for (const char *p = sb; p + 6 <= line + len; p++)
        if (memcmp(p, " deny(", 6) == 0)
            return 1;
    return 0;
}

/* "YYYY-MM-DD": the start of a new log event in every text style. */
static int starts_with_date(const char *line, size_t len)
{
    static const char shape[] = "dddd-dd-dd";
    if (len < sizeof(shape) - 1)
        return 0;
    for (size_t i = 0; i < sizeof(shape) - 1; i++) {
        if (shape[i] == 'd' ? !isdigit((unsigned char)line[i]) : line[i] != shape[i])
            return 0;
    }
    return 1;
}

static int from_text(struct seatbelt_log *lg, const char *line, size_t len, uint64_t now,
                     struct seatbelt_violation *out)
{
    if (is_text_denial(line, len)) {
        free(lg->pending);
        lg->pending = dupn(line, len);
        lg->pending_lines = 1;
        return lg->pending ? 0 : CCSB_E_NOMEM;
    }
    if (!lg->pending)
        return 0;
    char *exec = NULL;
    int t = match_tag(lg, line, len, &exec);
    if (t < 0)
        return t;
    if (t == 0) {
        /* A continuation of the denial (a path with a newline), or another
         * session's tag, or unrelated output. */
        if (++lg->pending_lines > TEXT_SPAN_MAX || strncmp(line, "ccsb:", 5) == 0 ||
            starts_with_date(line, len)) {
            free(lg->pending);
            lg->pending = NULL;
            return 0;
        }
        size_t pl = strlen(lg->pending);
        char *grown = realloc(lg->pending, pl + len + 2);
        if (!grown)
            return CCSB_E_NOMEM;
        grown[pl] = '\n';
        memcpy(grown + pl + 1, line, len);
        grown[pl + 1 + len] = '\0';
        lg->pending = grown;
        return 0;
    }
    char *pending = lg->pending;
    lg->pending = NULL;
    int rc = parse_denial(pending, strlen(pending), out);
    free(pending);
    if (rc != 1) {
        free(exec);
        return rc;
    }
    out->exec_tag = exec;
    return finish(lg, out, now);
}

int seatbelt_log_line(struct seatbelt_log *lg, const char *line, size_t len, uint64_t now_ms,
                      struct seatbelt_violation *out)
{
    memset(out, 0, sizeof(*out));
    while (len > 0 && (line[len - 1] == '\n' || line[len - 1] == '\r'))
        len--;
    size_t i = 0;
    while (i < len && (line[i] == ' ' || line[i] == '\t'))
        i++;
    if (i < len && line[i] == '{')
        return from_json(lg, line + i, len - i, now_ms, out);
    return from_text(lg, line, len, now_ms, out);
}

int seatbelt_log_feed(struct seatbelt_log *lg, const char *buf, size_t len, uint64_t now_ms,
                      seatbelt_log_cb cb, void *userdata)
{
    int reported = 0;
    while (len > 0) {
        const char *nl = memchr(buf, '\n', len);
        size_t take = nl ? (size_t)(nl - buf) : len;
        if (!lg->part_overlong) {
            if (lg->part_len + take > SEATBELT_LOG_LINE_MAX) {
                lg->part_overlong = 1;
                free(lg->part);
                lg->part = NULL;
                lg->part_len = 0;
            } else if (take > 0) {
                char *grown = realloc(lg->part, lg->part_len + take + 1);
                if (!grown)
                    return CCSB_E_NOMEM;
                memcpy(grown + lg->part_len, buf, take);
                lg->part = grown;
                lg->part_len += take;
                lg->part[lg->part_len] = '\0';
            }
        }
        if (!nl)
            break;
        buf += take + 1;
        len -= take + 1;
        if (lg->part_overlong) {
            lg->part_overlong = 0;
            continue;
        }
        struct seatbelt_violation v;
        int rc = seatbelt_log_line(lg, lg->part ? lg->part : "", lg->part_len, now_ms, &v);
        lg->part_len = 0;
        if (lg->part)
            lg->part[0] = '\0';
        if (rc < 0)
            return rc;
        if (rc == 1) {
            if (cb)
                cb(&v, userdata);
            seatbelt_violation_clear(&v);
            reported++;
        }
    }
    return reported;
}

char **seatbelt_log_argv(const char *tag)
{
    /* The tag is [A-Za-z0-9._%:-] only, so it needs no quoting in the
     * predicate's string literal. The predicate is a coarse filter; the
     * parser applies the exact rule (last line, kernel pid). */
    for (const char *c = tag; *c; c++)
        if (!isalnum((unsigned char)*c) && !strchr("._%:-", *c))
            return NULL;
#define PREDICATE_FMT "process == \"kernel\" AND eventMessage CONTAINS \"%s\""
    size_t pl = sizeof(PREDICATE_FMT) + strlen(tag);
    char *pred = malloc(pl);
    if (!pred)
        return NULL;
    snprintf(pred, pl, PREDICATE_FMT, tag);
#undef PREDICATE_FMT
    const char *args[] = {"/usr/bin/log", "stream", "--style", "ndjson", "--predicate", pred, NULL};
    size_t n = sizeof(args) / sizeof(args[0]);
    char **argv = calloc(n, sizeof(*argv));
    if (!argv) {
        free(pred);
        return NULL;
    }
    for (size_t i = 0; i + 1 < n; i++) {
        argv[i] = args[i] == pred ? pred : strdup(args[i]);
        if (!argv[i]) {
            if (args[i] != pred)
                free(pred);
            seatbelt_log_argv_free(argv);
            return NULL;
        }
    }
    return argv;
}

void seatbelt_log_argv_free(char **argv)
{
    if (!argv)
        return;
    for (size_t i = 0; argv[i]; i++)
        free(argv[i]);
    free(argv);
}
