/*
 * Test-side reader, structural checker and evaluator for generated SBPL.
 *
 * The reader is deliberately stricter than Seatbelt's: it accepts exactly
 * the syntax the generator is meant to produce (lists, symbols, numbers,
 * "strings" with the escapes \\ \" \n \t \r, ; comments), so anything else
 * in a profile is a generator bug.
 *
 * The checker then demands: (version 1) first; only allow/deny forms; only
 * known operations and filters; path strings absolute; regexes anchored and
 * accepted by POSIX regcomp(REG_EXTENDED); every deny carrying
 * (with message TAG); no allow rule without a filter except (allow default).
 *
 * The evaluator answers "would this request be allowed?" under the two
 * readings of Seatbelt precedence (see seatbelt_profile.c): A, the last
 * matching rule wins; B, rules naming the exact operation are consulted
 * before wildcard rules, and (allow/deny default) last of all.
 */
#ifndef CCSB_TESTS_SBPL_CHECK_H
#define CCSB_TESTS_SBPL_CHECK_H

#include <regex.h>
#include <stddef.h>

#define SBPL_NODE_LIST 1
#define SBPL_NODE_SYMBOL 2
#define SBPL_NODE_STRING 3
#define SBPL_NODE_NUMBER 4

struct sbpl_node {
    int type;
    char *text;  /* symbol/number text or the decoded string */
    size_t len;  /* bytes in text (strings may not contain NUL anyway) */
    struct sbpl_node **kids;
    size_t n;
    int line;
    regex_t *re; /* compiled, for a (regex ...) filter */
};

struct sbpl_rule {
    int allow;             /* 1 allow, 0 deny */
    char **ops;            /* operation names */
    size_t n_ops;
    struct sbpl_node **filters; /* filter lists (not the with-message) */
    size_t n_filters;
    char *message;         /* decoded (with message ...) or NULL */
    int line;
};

struct sbpl_profile {
    struct sbpl_node *root;    /* a list of the top-level forms */
    struct sbpl_rule *rules;
    size_t n_rules;
};

/* Parses and checks text. tag: the expected message (NULL: any, but the
 * same on every deny). Returns 0, or -1 with a message in err. */
int sbpl_parse(const char *text, const char *tag, struct sbpl_profile *out, char *err,
               size_t errlen);
void sbpl_profile_free(struct sbpl_profile *p);

/* A request to evaluate. Exactly one of path / remote / unix_socket. */
struct sbpl_req {
    const char *op;          /* a concrete operation, e.g. "file-write-unlink" */
    const char *path;
    const char *remote;      /* "localhost:8080" */
    const char *unix_socket; /* a socket path */
    int same_sandbox;        /* target is in the same sandbox */
    int pty_extension;       /* the path carries com.apple.sandbox.pty */
};

#define SBPL_MODEL_LAST_MATCH 0 /* A */
#define SBPL_MODEL_SPECIFIC 1   /* B */

/* 1 allowed, 0 denied. *rule (may be NULL) gets the deciding rule index or
 * -1 when no rule at all matched (no default: allowed). */
int sbpl_eval(const struct sbpl_profile *p, const struct sbpl_req *r, int model, int *rule);

/* Evaluates under both models; returns the common answer, or -1 when the
 * models disagree (a profile that depends on an unknown precedence rule). */
int sbpl_eval_both(const struct sbpl_profile *p, const struct sbpl_req *r);

/* Convenience: the answer for op on path (both models), -1 on disagreement. */
int sbpl_path_allowed(const struct sbpl_profile *p, const char *op, const char *path);

/* Counts the filter strings (decoded) equal to s in rules of the given
 * polarity (allow 1 / deny 0) whose ops include op; filter kind is the
 * filter's head symbol ("subpath", "literal", "regex"). */
size_t sbpl_count_filter(const struct sbpl_profile *p, int allow, const char *op,
                         const char *kind, const char *s);

#endif
