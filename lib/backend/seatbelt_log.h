/*
 * The violation tap's parser: `log stream` output -> violations of one
 * session. Plain C, no I/O; the macOS launch path feeds it the bytes of a
 * `log stream --style ndjson` child, tests feed it recorded lines.
 *
 * A denial is the session's when its event message ends with a line that
 * is exactly the session's message tag ("ccsb:<session>") or the tag plus
 * ":<exec>" (a per-exec profile). Seatbelt appends the `(with message ...)`
 * text of the deny rule on its own line after the denial, so this last line
 * is the one Seatbelt wrote, not a line a path could smuggle in. In ndjson
 * the event must also come from the kernel (processID 0): any process may
 * log a message that merely ends with the tag.
 *
 * Two input forms are understood:
 *  - ndjson: one JSON object per line with "eventMessage" (and "processID");
 *  - text (compact, syslog or default style): a line holding
 *    "Sandbox: <proc>(<pid>) deny(<n>) <operation> <target>" followed by
 *    the tag on the next line. Text is ambiguous when a path holds a
 *    newline; the launch path uses ndjson.
 * Both also accept the kernel's "<N> duplicate reports for Sandbox: ..."
 * summaries.
 *
 * Noise (see seatbelt_log_noise) is dropped, and a denial equal to one
 * reported within the de-duplication window (same action, target and exec)
 * is counted, not reported again.
 */
#ifndef CCSB_BACKEND_SEATBELT_LOG_H
#define CCSB_BACKEND_SEATBELT_LOG_H

#include <stddef.h>
#include <stdint.h>

struct seatbelt_violation {
    /* The Seatbelt operation, with the common ones named as on Linux:
     * file-read-data -> "file-read", file-write-data -> "file-write",
     * process-exec* -> "process-exec"; any other operation as logged. */
    char *action;
    char *target;    /* the path, address or service it named; "" if none */
    char *raw;       /* the denial as logged, without the tag line */
    char *process;   /* the process name Seatbelt logged */
    long pid;        /* its pid, -1 when not given */
    char *exec_tag;  /* the tag's exec part; NULL for a session-wide profile */
    unsigned count;  /* 1, or N for a "N duplicate reports" summary */
};

void seatbelt_violation_clear(struct seatbelt_violation *v);

struct seatbelt_log;

/*
 * A parser for one session. tag is seatbelt_message_tag(session, NULL);
 * window_ms is the de-duplication window (0: report every repeat).
 * NULL on ENOMEM.
 */
struct seatbelt_log *seatbelt_log_new(const char *tag, uint64_t window_ms);
void seatbelt_log_free(struct seatbelt_log *lg);

/*
 * One complete line (without its newline). now_ms is any monotonic clock.
 * Returns 1 and fills *out (caller clears it) for a violation to report,
 * 0 when the line reports nothing (not a denial, not ours, noise, a repeat,
 * or a text-mode denial still waiting for its tag line), or CCSB_E_NOMEM.
 */
int seatbelt_log_line(struct seatbelt_log *lg, const char *line, size_t len, uint64_t now_ms,
                      struct seatbelt_violation *out);

/*
 * Bytes as they come from the pipe: split into lines (a line longer than
 * SEATBELT_LOG_LINE_MAX is dropped whole) and parsed. cb is called for each
 * violation (borrowed; valid during the call). Returns the number reported,
 * or CCSB_E_NOMEM.
 */
#define SEATBELT_LOG_LINE_MAX 65536
typedef void (*seatbelt_log_cb)(const struct seatbelt_violation *v, void *userdata);
int seatbelt_log_feed(struct seatbelt_log *lg, const char *buf, size_t len, uint64_t now_ms,
                      seatbelt_log_cb cb, void *userdata);

/* How many denials were counted as repeats (for details and tests). */
uint64_t seatbelt_log_repeats(const struct seatbelt_log *lg);

/*
 * The `log stream` arguments for the tap, NULL-terminated, in a malloc'd
 * vector of malloc'd strings (free with seatbelt_log_argv_free). The
 * predicate keeps only kernel messages that end with the tag.
 */
char **seatbelt_log_argv(const char *tag);
void seatbelt_log_argv_free(char **argv);

#endif
