/* Test-side SBPL reader, checker and evaluator: see sbpl_check.h. */
#include "sbpl_check.h"

#include <ctype.h>
#include <regex.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* sandbox-exec refuses a string token longer than this (escaped bytes). */
#define READER_TOKEN_MAX 1024

static const char *const known_ops[] = {
    "default", "file-read*", "file-write*", "file-write-unlink", "file-write-create",
    "file-link", "file-clone",
    "process-exec", "network*", "network-outbound", "signal", "mach-priv-task-port",
    "lsopen", "appleevent-send", "user-preference-write", NULL,
};

struct reader {
    const char *s;
    size_t i, n;
    int line;
    char *err;
    size_t errlen;
    int failed;
};

static void fail(struct reader *r, const char *fmt, ...)
{
    if (r->failed)
        return;
    r->failed = 1;
    va_list ap;
    va_start(ap, fmt);
    int k = snprintf(r->err, r->errlen, "line %d: ", r->line);
    if (k >= 0 && (size_t)k < r->errlen)
        vsnprintf(r->err + k, r->errlen - (size_t)k, fmt, ap);
    va_end(ap);
}

static void node_free(struct sbpl_node *n)
{
    if (!n)
        return;
    for (size_t i = 0; i < n->n; i++)
        node_free(n->kids[i]);
    free(n->kids);
    free(n->text);
    if (n->re) {
        regfree(n->re);
        free(n->re);
    }
    free(n);
}

static struct sbpl_node *node_new(int type, int line)
{
    struct sbpl_node *n = calloc(1, sizeof(*n));
    if (n) {
        n->type = type;
        n->line = line;
    }
    return n;
}

static int node_push(struct sbpl_node *list, struct sbpl_node *kid)
{
    struct sbpl_node **k = realloc(list->kids, (list->n + 1) * sizeof(*k));
    if (!k)
        return -1;
    list->kids = k;
    list->kids[list->n++] = kid;
    return 0;
}

static void skip_space(struct reader *r)
{
    while (r->i < r->n) {
        char c = r->s[r->i];
        if (c == '\n') {
            r->line++;
            r->i++;
        } else if (c == ' ' || c == '\t' || c == '\r') {
            r->i++;
        } else if (c == ';') {
            while (r->i < r->n && r->s[r->i] != '\n')
                r->i++;
        } else {
            break;
        }
    }
}

static struct sbpl_node *read_string(struct reader *r)
{
    size_t start = ++r->i;
    char *buf = malloc(r->n - start + 1);
    size_t j = 0;
    if (!buf) {
        fail(r, "out of memory");
        return NULL;
    }
    for (;;) {
        if (r->i >= r->n) {
            fail(r, "unterminated string");
            break;
        }
        unsigned char c = (unsigned char)r->s[r->i++];
        if (c == '"')
            break;
        if (c == '\\') {
            if (r->i >= r->n) {
                fail(r, "unterminated escape");
                break;
            }
            char e = r->s[r->i++];
            switch (e) {
            case '\\': buf[j++] = '\\'; break;
            case '"': buf[j++] = '"'; break;
            case 'n': buf[j++] = '\n'; break;
            case 't': buf[j++] = '\t'; break;
            case 'r': buf[j++] = '\r'; break;
            default: fail(r, "unknown string escape \\%c", e); break;
            }
            continue;
        }
        if (c < 0x20 || c == 0x7f) {
            fail(r, "raw control byte 0x%02x inside a string", c);
            break;
        }
        buf[j++] = (char)c;
    }
    if (!r->failed && r->i - start - 1 > READER_TOKEN_MAX)
        fail(r, "string token of %zu bytes: sandbox-exec reads at most %d", r->i - start - 1,
             READER_TOKEN_MAX);
    if (r->failed) {
        free(buf);
        return NULL;
    }
    buf[j] = '\0';
    struct sbpl_node *n = node_new(SBPL_NODE_STRING, r->line);
    if (!n) {
        free(buf);
        fail(r, "out of memory");
        return NULL;
    }
    n->text = buf;
    n->len = j;
    return n;
}

static int is_symbol_char(char c)
{
    return isalnum((unsigned char)c) || (c && strchr("*-_.:/+!?<>=", c));
}

static struct sbpl_node *read_form(struct reader *r);

static struct sbpl_node *read_list(struct reader *r)
{
    int line = r->line;
    r->i++;
    struct sbpl_node *l = node_new(SBPL_NODE_LIST, line);
    if (!l) {
        fail(r, "out of memory");
        return NULL;
    }
    for (;;) {
        skip_space(r);
        if (r->i >= r->n) {
            fail(r, "unbalanced: list opened on line %d is never closed", line);
            break;
        }
        if (r->s[r->i] == ')') {
            r->i++;
            return l;
        }
        struct sbpl_node *k = read_form(r);
        if (!k)
            break;
        if (node_push(l, k) < 0) {
            node_free(k);
            fail(r, "out of memory");
            break;
        }
    }
    node_free(l);
    return NULL;
}

static struct sbpl_node *read_form(struct reader *r)
{
    skip_space(r);
    if (r->i >= r->n) {
        fail(r, "unexpected end of input");
        return NULL;
    }
    char c = r->s[r->i];
    if (c == '(')
        return read_list(r);
    if (c == ')') {
        fail(r, "unbalanced ')'");
        return NULL;
    }
    if (c == '"')
        return read_string(r);
    if (c == '#') {
        fail(r, "'#' syntax is not produced by the generator");
        return NULL;
    }
    size_t start = r->i;
    while (r->i < r->n && is_symbol_char(r->s[r->i]))
        r->i++;
    if (r->i == start) {
        fail(r, "unexpected byte 0x%02x", (unsigned char)c);
        return NULL;
    }
    int number = 1;
    for (size_t k = start; k < r->i; k++)
        if (!isdigit((unsigned char)r->s[k]))
            number = 0;
    struct sbpl_node *n = node_new(number ? SBPL_NODE_NUMBER : SBPL_NODE_SYMBOL, r->line);
    if (!n || !(n->text = strndup(r->s + start, r->i - start))) {
        free(n);
        fail(r, "out of memory");
        return NULL;
    }
    n->len = r->i - start;
    return n;
}

/* ------------------------------------------------------------------ */
/* Structure                                                            */
/* ------------------------------------------------------------------ */

static int is_sym(const struct sbpl_node *n, const char *s)
{
    return n && n->type == SBPL_NODE_SYMBOL && strcmp(n->text, s) == 0;
}

static int head_is(const struct sbpl_node *n, const char *s)
{
    return n && n->type == SBPL_NODE_LIST && n->n > 0 && is_sym(n->kids[0], s);
}

/* The decoded value of a string or (string-append ...); malloc'd. */
static char *str_value(const struct sbpl_node *n)
{
    if (n->type == SBPL_NODE_STRING)
        return strdup(n->text);
    if (!head_is(n, "string-append"))
        return NULL;
    size_t len = 0;
    for (size_t i = 1; i < n->n; i++) {
        if (n->kids[i]->type != SBPL_NODE_STRING)
            return NULL;
        len += n->kids[i]->len;
    }
    char *s = malloc(len + 1);
    if (!s)
        return NULL;
    size_t j = 0;
    for (size_t i = 1; i < n->n; i++) {
        memcpy(s + j, n->kids[i]->text, n->kids[i]->len);
        j += n->kids[i]->len;
    }
    s[j] = '\0';
    return s;
}

static int check_string_arg(struct reader *r, struct sbpl_node *f, size_t idx, int path)
{
    if (f->n != idx + 1) {
        fail(r, "(%s ...) takes exactly one string", f->kids[0]->text);
        return -1;
    }
    struct sbpl_node *a = f->kids[idx];
    if (a->type != SBPL_NODE_STRING && !head_is(a, "string-append")) {
        fail(r, "(%s ...) needs a string", f->kids[0]->text);
        return -1;
    }
    if (head_is(a, "string-append") && a->n < 3) {
        fail(r, "(string-append) with fewer than two pieces");
        return -1;
    }
    char *v = str_value(a);
    if (!v) {
        fail(r, "bad string-append");
        return -1;
    }
    int rc = 0;
    if (path && v[0] != '/') {
        fail(r, "path \"%s\" is not absolute", v);
        rc = -1;
    }
    free(v);
    return rc;
}

static int check_regex(struct reader *r, struct sbpl_node *f)
{
    if (check_string_arg(r, f, 1, 0) < 0)
        return -1;
    char *v = str_value(f->kids[1]);
    if (!v) {
        fail(r, "out of memory");
        return -1;
    }
    size_t n = strlen(v);
    if (n < 2 || v[0] != '^' || v[n - 1] != '$') {
        fail(r, "regex \"%s\" is not anchored with ^...$", v);
        free(v);
        return -1;
    }
    regex_t *re = malloc(sizeof(*re));
    int rc = re ? regcomp(re, v, REG_EXTENDED | REG_NOSUB) : -1;
    if (rc != 0) {
        fail(r, "regex \"%s\" does not compile", v);
        free(re);
        free(v);
        return -1;
    }
    f->re = re;
    free(v);
    return 0;
}

static int check_filter(struct reader *r, struct sbpl_node *f)
{
    if (f->type != SBPL_NODE_LIST || f->n == 0 || f->kids[0]->type != SBPL_NODE_SYMBOL) {
        fail(r, "a filter must be a list headed by a symbol");
        return -1;
    }
    const char *h = f->kids[0]->text;
    if (!strcmp(h, "literal") || !strcmp(h, "subpath"))
        return check_string_arg(r, f, 1, 1);
    if (!strcmp(h, "regex"))
        return check_regex(r, f);
    if (!strcmp(h, "extension"))
        return check_string_arg(r, f, 1, 0);
    if (!strcmp(h, "target")) {
        if (f->n != 2 || !is_sym(f->kids[1], "same-sandbox")) {
            fail(r, "(target ...) must be (target same-sandbox)");
            return -1;
        }
        return 0;
    }
    if (!strcmp(h, "remote")) {
        if (f->n == 3 && is_sym(f->kids[1], "ip") && f->kids[2]->type == SBPL_NODE_STRING) {
            const char *v = f->kids[2]->text;
            char *end;
            if (strncmp(v, "localhost:", 10) != 0 || !isdigit((unsigned char)v[10])) {
                fail(r, "(remote ip \"%s\"): only localhost:<port> is expected", v);
                return -1;
            }
            long port = strtol(v + 10, &end, 10);
            if (*end || port < 1 || port > 65535) {
                fail(r, "(remote ip \"%s\"): bad port", v);
                return -1;
            }
            return 0;
        }
        if (f->n == 3 && is_sym(f->kids[1], "unix-socket") && head_is(f->kids[2], "path-literal"))
            return check_string_arg(r, f->kids[2], 1, 1);
        fail(r, "unknown (remote ...) form");
        return -1;
    }
    if (!strcmp(h, "require-all") || !strcmp(h, "require-any") || !strcmp(h, "require-not")) {
        if (f->n < 2 || (!strcmp(h, "require-not") && f->n != 2)) {
            fail(r, "(%s) with a wrong number of filters", h);
            return -1;
        }
        for (size_t i = 1; i < f->n; i++)
            if (check_filter(r, f->kids[i]) < 0)
                return -1;
        return 0;
    }
    fail(r, "unknown filter (%s ...)", h);
    return -1;
}

static int known_op(const char *op)
{
    for (size_t i = 0; known_ops[i]; i++)
        if (strcmp(known_ops[i], op) == 0)
            return 1;
    return 0;
}

static int check_rule(struct reader *r, struct sbpl_node *form, const char *tag,
                      char **first_tag, struct sbpl_rule *rule)
{
    memset(rule, 0, sizeof(*rule));
    rule->allow = is_sym(form->kids[0], "allow");
    rule->line = form->line;
    r->line = form->line;
    size_t i = 1;
    for (; i < form->n && form->kids[i]->type == SBPL_NODE_SYMBOL; i++) {
        if (!known_op(form->kids[i]->text)) {
            fail(r, "unknown operation %s", form->kids[i]->text);
            return -1;
        }
        char **ops = realloc(rule->ops, (rule->n_ops + 1) * sizeof(*ops));
        if (!ops) {
            fail(r, "out of memory");
            return -1;
        }
        rule->ops = ops;
        rule->ops[rule->n_ops++] = form->kids[i]->text;
    }
    if (rule->n_ops == 0) {
        fail(r, "a rule without an operation");
        return -1;
    }
    for (; i < form->n; i++) {
        struct sbpl_node *f = form->kids[i];
        if (head_is(f, "with")) {
            if (i + 1 != form->n) {
                fail(r, "(with ...) must come last");
                return -1;
            }
            if (f->n != 3 || !is_sym(f->kids[1], "message") || f->kids[2]->type != SBPL_NODE_STRING) {
                fail(r, "only (with message \"...\") is expected");
                return -1;
            }
            rule->message = f->kids[2]->text;
            continue;
        }
        if (f->type != SBPL_NODE_LIST) {
            fail(r, "operation after a filter");
            return -1;
        }
        if (check_filter(r, f) < 0)
            return -1;
        struct sbpl_node **fl = realloc(rule->filters, (rule->n_filters + 1) * sizeof(*fl));
        if (!fl) {
            fail(r, "out of memory");
            return -1;
        }
        rule->filters = fl;
        rule->filters[rule->n_filters++] = f;
    }
    int has_default = 0;
    for (size_t k = 0; k < rule->n_ops; k++)
        has_default |= strcmp(rule->ops[k], "default") == 0;
    if (has_default && (rule->n_ops != 1 || rule->n_filters != 0 || !rule->allow)) {
        fail(r, "default appears other than in (allow default)");
        return -1;
    }
    if (rule->allow && rule->n_filters == 0 && !has_default) {
        fail(r, "an allow rule without a filter opens the operation entirely");
        return -1;
    }
    if (rule->allow && rule->message) {
        fail(r, "an allow rule carries a message");
        return -1;
    }
    if (!rule->allow) {
        if (!rule->message) {
            fail(r, "a deny rule without (with message ...)");
            return -1;
        }
        const char *want = tag ? tag : *first_tag;
        if (want && strcmp(want, rule->message) != 0) {
            fail(r, "deny message \"%s\" is not the session tag \"%s\"", rule->message, want);
            return -1;
        }
        if (!*first_tag)
            *first_tag = rule->message;
    }
    return 0;
}

static void rules_free(struct sbpl_profile *p)
{
    for (size_t i = 0; i < p->n_rules; i++) {
        free(p->rules[i].ops);
        free(p->rules[i].filters);
    }
    free(p->rules);
    p->rules = NULL;
    p->n_rules = 0;
}

int sbpl_parse(const char *text, const char *tag, struct sbpl_profile *out, char *err,
               size_t errlen)
{
    memset(out, 0, sizeof(*out));
    struct reader r = {.s = text, .n = strlen(text), .line = 1, .err = err, .errlen = errlen};
    if (errlen)
        err[0] = '\0';
    struct sbpl_node *root = node_new(SBPL_NODE_LIST, 1);
    if (!root)
        return -1;
    for (;;) {
        skip_space(&r);
        if (r.i >= r.n)
            break;
        struct sbpl_node *f = read_form(&r);
        if (!f || node_push(root, f) < 0) {
            node_free(f);
            if (!r.failed)
                fail(&r, "out of memory");
            break;
        }
    }
    out->root = root;
    if (r.failed) {
        sbpl_profile_free(out);
        return -1;
    }
    if (root->n == 0 || !head_is(root->kids[0], "version") || root->kids[0]->n != 2 ||
        root->kids[0]->kids[1]->type != SBPL_NODE_NUMBER || strcmp(root->kids[0]->kids[1]->text, "1")) {
        r.line = 1;
        fail(&r, "the profile must start with (version 1)");
        sbpl_profile_free(out);
        return -1;
    }
    char *first_tag = NULL;
    for (size_t i = 1; i < root->n; i++) {
        struct sbpl_node *f = root->kids[i];
        r.line = f->line;
        if (!head_is(f, "allow") && !head_is(f, "deny")) {
            fail(&r, "a top-level form other than allow/deny");
            break;
        }
        struct sbpl_rule *rs = realloc(out->rules, (out->n_rules + 1) * sizeof(*rs));
        if (!rs) {
            fail(&r, "out of memory");
            break;
        }
        out->rules = rs;
        if (check_rule(&r, f, tag, &first_tag, &out->rules[out->n_rules]) < 0) {
            free(out->rules[out->n_rules].ops);
            free(out->rules[out->n_rules].filters);
            break;
        }
        out->n_rules++;
    }
    if (r.failed) {
        sbpl_profile_free(out);
        return -1;
    }
    return 0;
}

void sbpl_profile_free(struct sbpl_profile *p)
{
    rules_free(p);
    node_free(p->root);
    p->root = NULL;
}

/* ------------------------------------------------------------------ */
/* Evaluation                                                           */
/* ------------------------------------------------------------------ */

static int str_eq(const struct sbpl_node *a, const char *s)
{
    char *v = str_value(a);
    int eq = v && s && strcmp(v, s) == 0;
    free(v);
    return eq;
}

static int match_filter(const struct sbpl_node *f, const struct sbpl_req *r)
{
    const char *h = f->kids[0]->text;
    if (!strcmp(h, "literal"))
        return r->path && str_eq(f->kids[1], r->path);
    if (!strcmp(h, "subpath")) {
        if (!r->path)
            return 0;
        char *v = str_value(f->kids[1]);
        size_t n = v ? strlen(v) : 0;
        int m = v && (strcmp(v, "/") == 0 ||
                      (strncmp(r->path, v, n) == 0 && (r->path[n] == '\0' || r->path[n] == '/')));
        free(v);
        return m;
    }
    if (!strcmp(h, "regex"))
        return r->path && regexec(f->re, r->path, 0, NULL, 0) == 0;
    if (!strcmp(h, "extension"))
        return r->pty_extension && str_eq(f->kids[1], "com.apple.sandbox.pty");
    if (!strcmp(h, "target"))
        return r->same_sandbox;
    if (!strcmp(h, "remote")) {
        if (is_sym(f->kids[1], "ip"))
            return r->remote && strcmp(r->remote, f->kids[2]->text) == 0;
        return r->unix_socket && str_eq(f->kids[2]->kids[1], r->unix_socket);
    }
    if (!strcmp(h, "require-all")) {
        for (size_t i = 1; i < f->n; i++)
            if (!match_filter(f->kids[i], r))
                return 0;
        return 1;
    }
    if (!strcmp(h, "require-any")) {
        for (size_t i = 1; i < f->n; i++)
            if (match_filter(f->kids[i], r))
                return 1;
        return 0;
    }
    if (!strcmp(h, "require-not"))
        return !match_filter(f->kids[1], r);
    return 0;
}

/* 2: the rule names op exactly; 1: through a wildcard; 0: not at all;
 * 3: it is the default rule. */
static int op_match(const struct sbpl_rule *rule, const char *op)
{
    int best = 0;
    for (size_t i = 0; i < rule->n_ops; i++) {
        const char *o = rule->ops[i];
        size_t n = strlen(o);
        if (strcmp(o, "default") == 0) {
            if (!best)
                best = 3;
        } else if (strcmp(o, op) == 0) {
            return 2;
        } else if (n > 0 && o[n - 1] == '*' && strncmp(o, op, n - 1) == 0) {
            best = 1;
        }
    }
    return best;
}

static int rule_matches(const struct sbpl_rule *rule, const struct sbpl_req *r)
{
    if (rule->n_filters == 0)
        return 1;
    for (size_t i = 0; i < rule->n_filters; i++)
        if (match_filter(rule->filters[i], r))
            return 1;
    return 0;
}

int sbpl_eval(const struct sbpl_profile *p, const struct sbpl_req *r, int model, int *rule)
{
    int last[4] = {-1, -1, -1, -1}; /* by op_match level */
    int any = -1;
    for (size_t i = 0; i < p->n_rules; i++) {
        int lvl = op_match(&p->rules[i], r->op);
        if (!lvl || !rule_matches(&p->rules[i], r))
            continue;
        last[lvl] = (int)i;
        any = (int)i;
    }
    int pick;
    if (model == SBPL_MODEL_LAST_MATCH)
        pick = any;
    else
        pick = last[2] >= 0 ? last[2] : last[1] >= 0 ? last[1] : last[3];
    if (rule)
        *rule = pick;
    return pick < 0 ? 1 : p->rules[pick].allow;
}

int sbpl_eval_both(const struct sbpl_profile *p, const struct sbpl_req *r)
{
    int a = sbpl_eval(p, r, SBPL_MODEL_LAST_MATCH, NULL);
    int b = sbpl_eval(p, r, SBPL_MODEL_SPECIFIC, NULL);
    return a == b ? a : -1;
}

int sbpl_path_allowed(const struct sbpl_profile *p, const char *op, const char *path)
{
    struct sbpl_req r = {.op = op, .path = path};
    return sbpl_eval_both(p, &r);
}

size_t sbpl_count_filter(const struct sbpl_profile *p, int allow, const char *op,
                         const char *kind, const char *s)
{
    size_t count = 0;
    for (size_t i = 0; i < p->n_rules; i++) {
        const struct sbpl_rule *rule = &p->rules[i];
        if (rule->allow != allow)
            continue;
        int has = 0;
        for (size_t k = 0; k < rule->n_ops; k++)
            has |= strcmp(rule->ops[k], op) == 0;
        if (!has)
            continue;
        for (size_t k = 0; k < rule->n_filters; k++) {
            const struct sbpl_node *f = rule->filters[k];
            if (strcmp(f->kids[0]->text, kind) == 0 && f->n == 2 && str_eq(f->kids[1], s))
                count++;
        }
    }
    return count;
}
