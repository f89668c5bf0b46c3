/*
 * Resolved policy -> SBPL profile. See seatbelt_profile.h and
 * docs/seatbelt.md.
 *
 * Two facts about Seatbelt shape everything here:
 *  - The last rule that matches decides. Some builds also consult rules
 *    naming a concrete operation (file-write-unlink) before those naming a
 *    wildcard (file-write*); the profile is ordered so that both readings
 *    give the same answer: every rule that names a concrete operation is a
 *    deny and comes after the wildcard rules it narrows.
 *  - Rules match the canonical path of the vnode (symlinks resolved), so
 *    every path is emitted in each spelling we know of.
 * A rule with no filter would match everything, so a rule whose filter
 * list ends up empty is not emitted at all.
 */
#include "backend/seatbelt_profile.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ccsandbox/ccsandbox.h>

#include "backend/seatbelt_lists.h"
#include "backend/seatbelt_sbpl.h"
#include "policy/policy.h"
#include "util/err.h"
#include "util/strv.h"

#define MDNS_SOCKET "/private/var/run/mDNSResponder"

/* One way of writing a path: path[0..lit) is a literal name on disk, the
 * rest (if any) glob pattern. */
struct spelling {
    char *path;
    size_t lit;
    int glob;
};

struct spellings {
    struct spelling *v;
    size_t n;
};

struct gen {
    struct sbpl_buf b;
    const struct ccsb_policy *p;
    const struct seatbelt_profile_opts *o;
    char *tag;
    struct strv filters; /* the open rule's rendered filters, deduplicated */
    /* Open-addressing set over filters (indices + 1, 0 = empty), so a rule
     * of hundreds of filters is deduplicated in linear time. */
    size_t *slots;
    size_t n_slots;
};

/* ------------------------------------------------------------------ */
/* Resolution                                                           */
/* ------------------------------------------------------------------ */

static char *resolve_one(struct gen *g, const char *path)
{
    const struct policy_host *h = g->o->host;
    if (h && h->resolve)
        return h->resolve(path, h->resolve_userdata);
    char buf[PATH_MAX];
    if (!realpath(path, buf))
        return NULL;
    return strdup(buf);
}

/*
 * The resolved spelling of path: the path itself if it resolves, else its
 * deepest resolving ancestor with the rest appended (a path that does not
 * exist yet under /tmp still lives under /private/tmp). NULL when nothing
 * resolves or the result equals path. *nomem is set on allocation failure.
 */
static char *deep_resolve(struct gen *g, const char *path, int *nomem)
{
    *nomem = 0;
    size_t n = strlen(path);
    char *prefix = strdup(path);
    if (!prefix) {
        *nomem = 1;
        return NULL;
    }
    size_t cut = n;
    char *out = NULL;
    for (;;) {
        prefix[cut] = '\0';
        char *r = resolve_one(g, cut ? prefix : "/");
        if (r) {
            const char *rest = path + cut;
            size_t rl = strlen(r);
            /* "/" + "/x" must not become "//x". */
            if (rl == 1 && r[0] == '/' && rest[0] == '/')
                rl = 0;
            out = malloc(rl + strlen(rest) + 1);
            if (!out) {
                *nomem = 1;
            } else {
                memcpy(out, r, rl);
                strcpy(out + rl, rest);
                if (out[0] == '\0')
                    strcpy(out, "/");
            }
            free(r);
            break;
        }
        if (cut == 0)
            break;
        char *slash = strrchr(prefix, '/');
        if (!slash)
            break;
        cut = (size_t)(slash - prefix);
    }
    free(prefix);
    if (out && strcmp(out, path) == 0) {
        free(out);
        out = NULL;
    }
    return out;
}

/* ------------------------------------------------------------------ */
/* Spellings                                                            */
/* ------------------------------------------------------------------ */

static void spellings_free(struct spellings *s)
{
    for (size_t i = 0; i < s->n; i++)
        free(s->v[i].path);
    free(s->v);
    s->v = NULL;
    s->n = 0;
}

/* A printable copy of a path for error messages (control bytes -> '?'). */
static void printable(const char *in, char *out, size_t outlen)
{
    size_t j = 0;
    for (; in && *in && j + 1 < outlen; in++)
        out[j++] = ((unsigned char)*in < 0x20 || *in == 0x7f) ? '?' : *in;
    out[j] = '\0';
}

/* Adds path (normalized) unless already present. Takes nothing. */
static void add_spelling(struct gen *g, struct spellings *s, const char *path, int glob,
                         const char *what)
{
    if (g->b.err)
        return;
    char *norm;
    int rc = sbpl_path_normalize(path, &norm);
    if (rc == CCSB_E_NOMEM) {
        g->b.err = CCSB_E_NOMEM;
        return;
    }
    if (rc) {
        char shown[160];
        printable(path, shown, sizeof(shown));
        sbpl_fail(&g->b, "%s \"%s\": not an absolute path without \".\" or \"..\" components",
                  what, shown);
        return;
    }
    for (size_t i = 0; i < s->n; i++) {
        if (strcmp(s->v[i].path, norm) == 0) {
            free(norm);
            return;
        }
    }
    struct spelling *v = realloc(s->v, (s->n + 1) * sizeof(*v));
    if (!v) {
        free(norm);
        g->b.err = CCSB_E_NOMEM;
        return;
    }
    s->v = v;
    size_t lit = strlen(norm);
    if (glob) {
        /* The fixed directory prefix: up to the '/' before the first
         * component holding a wildcard. */
        size_t first = strcspn(norm, "*?");
        while (first > 0 && norm[first] != '/')
            first--;
        lit = first;
    }
    s->v[s->n++] = (struct spelling){norm, lit, glob};
}

/* Adds a resolved spelling of a glob whose pattern part is pattern: the
 * part before it is a name on disk, literal even if it holds '*' or '?'. */
static void add_glob_spelling(struct gen *g, struct spellings *s, const char *spelled,
                              const char *pattern, const char *what)
{
    size_t before = s->n;
    add_spelling(g, s, spelled, 1, what);
    if (s->n == before)
        return;
    struct spelling *sp = &s->v[s->n - 1];
    size_t len = strlen(sp->path), pl = strlen(pattern);
    if (pl <= len && strcmp(sp->path + len - pl, pattern) == 0)
        sp->lit = len - pl;
}

/* Every spelling of a path the policy wrote: as written, then the
 * policy's resolved form; when the policy has neither resolved it nor
 * found it to exist as spelled (a hand-built policy, or one whose resolver
 * failed), our own deep resolution of the written form. */
static void collect(struct gen *g, struct spellings *s, const char *path, const char *resolved,
                    int exists, const char *what)
{
    if (!path)
        return;
    int glob = sbpl_is_glob(path);
    size_t before = s->n;
    add_spelling(g, s, path, glob, what);
    if (g->b.err || s->n == before)
        return;
    /* add_spelling may move the array, never the strings */
    const char *written = s->v[s->n - 1].path;
    if (!glob) {
        if (resolved)
            add_spelling(g, s, resolved, 0, what);
        if (resolved || exists)
            return; /* the policy resolved it, or it exists as spelled */
        int nomem;
        char *r = deep_resolve(g, written, &nomem);
        if (nomem)
            g->b.err = CCSB_E_NOMEM;
        if (r)
            add_spelling(g, s, r, 0, what);
        free(r);
        return;
    }
    /* A glob: only its fixed directory prefix is resolved; the pattern
     * part is left as written. The policy may have done it already. */
    if (resolved) {
        add_glob_spelling(g, s, resolved, written + s->v[before].lit, what);
        return;
    }
    const struct spelling *w = &s->v[before];
    if (g->b.err || w->lit == 0)
        return;
    char *dir = strndup(w->path, w->lit);
    if (!dir) {
        g->b.err = CCSB_E_NOMEM;
        return;
    }
    int nomem;
    char *r = deep_resolve(g, dir, &nomem);
    free(dir);
    char *rn = NULL;
    if (r && sbpl_path_normalize(r, &rn) == CCSB_E_NOMEM)
        nomem = 1;
    free(r);
    if (nomem) {
        free(rn);
        g->b.err = CCSB_E_NOMEM;
        return;
    }
    if (!rn)
        return; /* unresolvable or not a clean absolute path: keep as written */
    /* A prefix resolving to "/" contributes nothing before the pattern. */
    size_t rl = strcmp(rn, "/") == 0 ? 0 : strlen(rn);
    const char *pattern = w->path + w->lit;
    char *joined = malloc(rl + strlen(pattern) + 1);
    if (!joined) {
        free(rn);
        g->b.err = CCSB_E_NOMEM;
        return;
    }
    memcpy(joined, rn, rl);
    strcpy(joined + rl, pattern);
    free(rn);
    add_glob_spelling(g, s, joined, pattern, what);
    free(joined);
}

static void collect_paths(struct gen *g, struct spellings *s, const struct policy_paths *pp,
                          const char *what)
{
    for (size_t i = 0; i < pp->n && !g->b.err; i++) {
        char label[96];
        snprintf(label, sizeof(label), "%s[%zu]", what, i);
        collect(g, s, pp->v[i].path, pp->v[i].resolved, pp->v[i].exists, label);
    }
}

/* ------------------------------------------------------------------ */
/* Rules                                                                */
/* ------------------------------------------------------------------ */

static size_t hash_str(const char *s)
{
    size_t h = 1469598103934665603u; /* FNV-1a */
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211u;
    return h;
}

static int filter_seen(const struct gen *g, const char *s)
{
    if (!g->n_slots)
        return 0;
    for (size_t i = hash_str(s) & (g->n_slots - 1);; i = (i + 1) & (g->n_slots - 1)) {
        size_t k = g->slots[i];
        if (!k)
            return 0;
        if (strcmp(g->filters.v[k - 1], s) == 0)
            return 1;
    }
}

/* Indexes the filter just pushed, growing the table to keep it at most
 * half full. */
static int filter_remember(struct gen *g)
{
    if (2 * g->filters.n > g->n_slots) {
        size_t n = g->n_slots ? g->n_slots * 2 : 64;
        size_t *v = calloc(n, sizeof(*v));
        if (!v)
            return -1;
        free(g->slots);
        g->slots = v;
        g->n_slots = n;
        for (size_t k = 0; k + 1 < g->filters.n; k++) {
            size_t i = hash_str(g->filters.v[k]) & (n - 1);
            while (v[i])
                i = (i + 1) & (n - 1);
            v[i] = k + 1;
        }
    }
    size_t i = hash_str(g->filters.v[g->filters.n - 1]) & (g->n_slots - 1);
    while (g->slots[i])
        i = (i + 1) & (g->n_slots - 1);
    g->slots[i] = g->filters.n;
    return 0;
}

static void filters_reset(struct gen *g)
{
    strv_clear(&g->filters);
    if (g->slots)
        memset(g->slots, 0, g->n_slots * sizeof(*g->slots));
}

static void filter_add_owned(struct gen *g, struct sbpl_buf *f)
{
    if (f->err) {
        if (!g->b.err) {
            g->b.err = f->err;
            memcpy(g->b.msg, f->msg, sizeof(g->b.msg));
        }
        sbpl_buf_free(f);
        return;
    }
    char *s = sbpl_buf_steal(f);
    if (!s) {
        g->b.err = CCSB_E_NOMEM;
        return;
    }
    if (filter_seen(g, s)) {
        free(s);
        return;
    }
    if (strv_push_owned(&g->filters, s) < 0 || filter_remember(g) < 0)
        g->b.err = CCSB_E_NOMEM;
}

/* kind: "subpath" (the path and everything below), "literal" (exactly
 * it), "path-literal" (a socket path). A glob spelling always becomes a
 * regex; with subtree it also covers everything below a match. */
static void filter_path(struct gen *g, const struct spelling *sp, const char *kind, int subtree,
                        const char *what)
{
    struct sbpl_buf f;
    sbpl_buf_init(&f);
    if (!sp->glob) {
        sbpl_putf(&f, "(%s ", kind);
        sbpl_put_string(&f, sp->path, what);
        sbpl_put(&f, ")");
    } else {
        struct sbpl_buf re;
        sbpl_buf_init(&re);
        sbpl_put(&re, "^");
        char *lit = strndup(sp->path, sp->lit);
        if (!lit) {
            re.err = CCSB_E_NOMEM;
        } else {
            sbpl_regex_quote(&re, lit);
            free(lit);
        }
        sbpl_glob_regex(&re, sp->path + sp->lit);
        sbpl_put(&re, subtree ? "(/.*)?$" : "$");
        if (re.err) {
            f.err = re.err;
        } else {
            sbpl_put(&f, "(regex ");
            sbpl_put_string(&f, re.s, what);
            sbpl_put(&f, ")");
        }
        sbpl_buf_free(&re);
    }
    filter_add_owned(g, &f);
}

static void filter_raw(struct gen *g, const char *text)
{
    struct sbpl_buf f;
    sbpl_buf_init(&f);
    sbpl_put(&f, text);
    filter_add_owned(g, &f);
}

/* Emits "(action ops filters... [(with message tag)])" and clears the
 * filter list; nothing at all when there is no filter. */
static void rule_end(struct gen *g, const char *action, const char *ops)
{
    if (g->filters.n == 0 || g->b.err) {
        filters_reset(g);
        return;
    }
    sbpl_putf(&g->b, "(%s %s", action, ops);
    for (size_t i = 0; i < g->filters.n; i++) {
        sbpl_put(&g->b, "\n  ");
        sbpl_put(&g->b, g->filters.v[i]);
    }
    if (strcmp(action, "deny") == 0) {
        sbpl_put(&g->b, "\n  (with message ");
        sbpl_put_string(&g->b, g->tag, "the message tag");
        sbpl_put(&g->b, ")");
    }
    sbpl_put(&g->b, ")\n");
    filters_reset(g);
}

/* A deny with no filter: applies to every use of ops. */
static void deny_all(struct gen *g, const char *ops)
{
    sbpl_putf(&g->b, "(deny %s (with message ", ops);
    sbpl_put_string(&g->b, g->tag, "the message tag");
    sbpl_put(&g->b, "))\n");
}

static void comment(struct gen *g, const char *text)
{
    sbpl_putf(&g->b, "\n; %s\n", text);
}

/* Adds the literal ancestors of a spelling (for a glob: of and including
 * its fixed directory), never "/" itself. */
static void filter_ancestors(struct gen *g, const struct spelling *sp, const char *what)
{
    char *dir = strndup(sp->path, sp->glob ? sp->lit : strlen(sp->path));
    if (!dir) {
        g->b.err = CCSB_E_NOMEM;
        return;
    }
    /* A glob's fixed directory is itself pinned; a literal path is already
     * covered by its own subpath filter. */
    if (!sp->glob) {
        char *slash = strrchr(dir, '/');
        *slash = '\0';
    }
    while (dir[0] != '\0' && !g->b.err) {
        struct spelling a = {dir, strlen(dir), 0};
        filter_path(g, &a, "literal", 0, what);
        char *slash = strrchr(dir, '/');
        *slash = '\0';
    }
    free(dir);
}

/* ------------------------------------------------------------------ */
/* Sections                                                             */
/* ------------------------------------------------------------------ */

static const char *mode_name(int mode)
{
    switch (mode) {
    case CCSB_MODE_CHAT: return "chat";
    case CCSB_MODE_REVIEW: return "review";
    case CCSB_MODE_PLAN: return "plan";
    case CCSB_MODE_ORCHESTRATE: return "orchestrate";
    default: return "unknown";
    }
}

static void section_header(struct gen *g)
{
    const int terminal = g->o->preset == SEATBELT_PRESET_TERMINAL;
    sbpl_put(&g->b, "(version 1)\n");
    sbpl_putf(&g->b, "; libccsandbox Seatbelt profile, %s preset\n",
              terminal ? "terminal" : "session");
    /* The tag is escaped to [A-Za-z0-9._%:-], so it is safe in a comment. */
    sbpl_putf(&g->b, "; message tag: %s\n", g->tag);
    if (!terminal)
        sbpl_putf(&g->b, "; mode: %s; network: %s\n", mode_name(g->p->mode),
                  g->p->network_enabled ? "enabled (the proxies apply the allowlist)"
                                        : "disabled (the proxies refuse every request)");
    sbpl_put(&g->b, "; The last matching rule decides.\n");
    comment(g, "Permissive base: a deny-by-default profile leaves an interactive\n"
               "; shell unusable on macOS. Every rule below only narrows it.");
    sbpl_put(&g->b, "(allow default)\n");
}

static void section_reads(struct gen *g, const struct spellings *secrets)
{
    comment(g, "Reads: the secret set and denyRead, in every spelling.");
    for (size_t i = 0; i < secrets->n; i++)
        filter_path(g, &secrets->v[i], "subpath", 1, "denyRead entry");
    rule_end(g, "deny", "file-read*");
}

static void writable_devices(struct gen *g)
{
    for (size_t i = 0; seatbelt_writable_devices[i].path; i++) {
        struct spelling d = {(char *)seatbelt_writable_devices[i].path, 0, 0};
        d.lit = strlen(d.path);
        filter_path(g, &d, "literal", 0, "device");
    }
    filter_raw(g, "(regex \"^/dev/fd/[0-9]+$\")");
    /* Only terminals created inside the sandbox carry this extension, so
     * the user's other terminals stay out of reach. */
    filter_raw(g, "(require-all (regex \"^/dev/ttys[0-9]+$\") (extension \"com.apple.sandbox.pty\"))");
}

/* A denyWriteGlobs entry: without a leading '/', it may match at any
 * depth, anchored on whole components; with one, it is a full path glob. */
static void filter_final_glob(struct gen *g, const char *glob, size_t idx)
{
    char label[64];
    snprintf(label, sizeof(label), "denyWriteGlobs[%zu]", idx);
    struct sbpl_buf re, f;
    sbpl_buf_init(&re);
    sbpl_buf_init(&f);
    if (glob[0] == '\0') {
        sbpl_fail(&f, "%s: empty", label);
    } else {
        sbpl_put(&re, glob[0] == '/' ? "^" : "^/(.*/)?");
        sbpl_glob_regex(&re, glob);
        sbpl_put(&re, "$");
        if (re.err) {
            f.err = re.err;
        } else {
            sbpl_put(&f, "(regex ");
            sbpl_put_string(&f, re.s, label);
            sbpl_put(&f, ")");
        }
    }
    sbpl_buf_free(&re);
    filter_add_owned(g, &f);
}

static void section_writes(struct gen *g, const struct spellings *roots,
                           const struct spellings *locked, const struct spellings *secrets)
{
    const int terminal = g->o->preset == SEATBELT_PRESET_TERMINAL;
    comment(g, "Writes: nothing is writable ...");
    deny_all(g, "file-write*");
    if (terminal)
        comment(g, "... except $HOME, the workdir and the session tmp ...");
    else
        comment(g, "... except the writable roots of this mode, the session tmp and\n"
                   "; runnerStateDirs ...");
    for (size_t i = 0; i < roots->n; i++)
        filter_path(g, &roots->v[i], "subpath", 1, "writable root");
    rule_end(g, "allow", "file-write*");
    comment(g, "... and the device nodes every program expects.");
    writable_devices(g);
    rule_end(g, "allow", "file-write*");

    /* A read deny alone would leave a bound $HOME's ~/.ssh/authorized_keys
     * or ~/.aws/config open to an append: the secret set is never writable
     * either, in every preset. */
    comment(g, "Never writable, even inside a writable root: the secret set.");
    for (size_t i = 0; i < secrets->n; i++)
        filter_path(g, &secrets->v[i], "subpath", 1, "secret path");
    rule_end(g, "deny", "file-write*");

    if (!terminal) {
        comment(g, "Never writable, even inside a writable root: protectedPaths and the\n"
                   "; mandatory deny-write set.");
        for (size_t i = 0; i < locked->n; i++)
            filter_path(g, &locked->v[i], "subpath", 1, "protected path");
        rule_end(g, "deny", "file-write*");

        comment(g, "denyWriteGlobs: matched on the final path component, anywhere.");
        const struct strv *globs = &g->p->deny_write_globs;
        for (size_t i = 0; i < globs->n && !g->b.err; i++)
            filter_final_glob(g, globs->v[i], i);
        rule_end(g, "deny", "file-write*");
    }

    comment(g, "No rename, removal or re-creation of a denied path or of any\n"
               "; directory above it: moving a parent must not carry a denied path out\n"
               "; from under its rule, nor swap in a look-alike.");
    const struct spellings *sets[2] = {secrets, terminal ? NULL : locked};
    for (int k = 0; k < 2; k++) {
        if (!sets[k])
            continue;
        for (size_t i = 0; i < sets[k]->n; i++) {
            filter_path(g, &sets[k]->v[i], "subpath", 1, "denied path");
            filter_ancestors(g, &sets[k]->v[i], "ancestor of a denied path");
        }
    }
    rule_end(g, "deny", "file-write-unlink file-write-create");

    comment(g, "No hard link or clone of a denied path: the second name would not be\n"
               "; denied.");
    for (int k = 0; k < 2; k++) {
        if (!sets[k])
            continue;
        for (size_t i = 0; i < sets[k]->n; i++)
            filter_path(g, &sets[k]->v[i], "subpath", 1, "denied path");
    }
    if (!terminal) {
        const struct strv *globs = &g->p->deny_write_globs;
        for (size_t i = 0; i < globs->n && !g->b.err; i++)
            filter_final_glob(g, globs->v[i], i);
    }
    rule_end(g, "deny", "file-link file-clone");
}

static void section_exec(struct gen *g, const struct spellings *roots,
                         const struct spellings *grants, const struct spellings *helper)
{
    comment(g, "Exec: nothing under a writable directory ...");
    for (size_t i = 0; i < roots->n; i++)
        filter_path(g, &roots->v[i], "subpath", 1, "writable root");
    rule_end(g, "deny", "process-exec");
    comment(g, "... unless under an execGrantRoots tree (or the session helper) ...");
    for (size_t i = 0; i < grants->n; i++)
        filter_path(g, &grants->v[i], "subpath", 1, "execGrantRoots entry");
    for (size_t i = 0; i < helper->n; i++)
        filter_path(g, &helper->v[i], "literal", 0, "helper path");
    rule_end(g, "allow", "process-exec");
    comment(g, "... and never the programs that reach outside the sandbox.");
    for (size_t i = 0; seatbelt_dangerous_binaries[i].path && !g->b.err; i++) {
        struct spellings s = {0};
        collect(g, &s, seatbelt_dangerous_binaries[i].path, NULL, 0, "dangerous binary");
        for (size_t j = 0; j < s.n; j++)
            filter_path(g, &s.v[j], "literal", 0, "dangerous binary");
        spellings_free(&s);
    }
    rule_end(g, "deny", "process-exec");
}

static void section_network(struct gen *g)
{
    comment(g, "Network: only the session's proxies on loopback and DNS; no other\n"
               "; loopback port, no unix socket, nothing inbound.");
    deny_all(g, "network*");
    uint16_t ports[2] = {g->o->http_port, g->o->socks_port};
    const char *names[2] = {"HTTP", "SOCKS5"};
    for (int i = 0; i < 2; i++) {
        if (ports[i] == 0) {
            sbpl_putf(&g->b, "; (%s proxy port not assigned yet: nothing to allow)\n", names[i]);
            continue;
        }
        char f[64];
        snprintf(f, sizeof(f), "(remote ip \"localhost:%u\")", (unsigned)ports[i]);
        filter_raw(g, f);
    }
    rule_end(g, "allow", "network-outbound");
    filter_raw(g, "(remote unix-socket (path-literal \"" MDNS_SOCKET "\"))");
    rule_end(g, "allow", "network-outbound");
    if (g->p->unix_sockets.n)
        comment(g, "unixSockets: the host sockets this session may connect to.");
    for (size_t i = 0; i < g->p->unix_sockets.n; i++) {
        const struct policy_path *pp = &g->p->unix_sockets.v[i];
        const char *sp[2] = {pp->path, pp->resolved};
        for (int k = 0; k < 2; k++) {
            if (!sp[k])
                continue;
            struct sbpl_buf f;
            sbpl_buf_init(&f);
            sbpl_put(&f, "(remote unix-socket (path-literal ");
            sbpl_put_string(&f, sp[k], "unixSockets");
            sbpl_put(&f, "))");
            filter_add_owned(g, &f);
        }
    }
    rule_end(g, "allow", "network-outbound");
}

static void section_hardening(struct gen *g)
{
    comment(g, "Processes outside the sandbox cannot be signalled or inspected.");
    deny_all(g, "signal");
    filter_raw(g, "(target same-sandbox)");
    rule_end(g, "allow", "signal");
    deny_all(g, "mach-priv-task-port");
    filter_raw(g, "(target same-sandbox)");
    rule_end(g, "allow", "mach-priv-task-port");
    comment(g, "No launching apps, Apple Events or preference writes: each is carried\n"
               "; out by a service outside the sandbox.");
    deny_all(g, "lsopen appleevent-send user-preference-write");
}

/* ------------------------------------------------------------------ */
/* Entry points                                                         */
/* ------------------------------------------------------------------ */

char *seatbelt_message_tag(const char *session_id, const char *exec_tag)
{
    const char *parts[2] = {session_id ? session_id : "unassigned", exec_tag};
    struct sbpl_buf b;
    sbpl_buf_init(&b);
    sbpl_put(&b, "ccsb");
    for (int k = 0; k < 2; k++) {
        if (!parts[k])
            continue;
        sbpl_put(&b, ":");
        for (const unsigned char *c = (const unsigned char *)parts[k]; *c; c++) {
            if ((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') ||
                (*c >= '0' && *c <= '9') || *c == '.' || *c == '_' || *c == '-')
                sbpl_putn(&b, (const char *)c, 1);
            else
                sbpl_putf(&b, "%%%02X", *c);
        }
    }
    return sbpl_buf_steal(&b);
}

int seatbelt_policy_check(const struct ccsb_policy *p, char *err, size_t errlen)
{
    for (size_t i = 0; i < p->n_mounts; i++) {
        const struct policy_mount *m = &p->mounts[i];
        if (m->guest && m->host && strcmp(m->guest, m->host) != 0) {
            char h[160], gst[160];
            printable(m->host, h, sizeof(h));
            printable(m->guest, gst, sizeof(gst));
            return errf(err, errlen, CCSB_E_POLICY,
                        "bindMounts: \"%s\" is mounted at \"%s\", but Seatbelt cannot "
                        "remap paths; use the host path as the guest path", h, gst);
        }
    }
    return 0;
}

char *seatbelt_resolve_macos_defaults(const char *path, void *userdata)
{
    static const char *const links[] = {"/tmp", "/var", "/etc"};
    (void)userdata;
    for (size_t i = 0; i < sizeof(links) / sizeof(links[0]); i++) {
        size_t n = strlen(links[i]);
        if (strncmp(path, links[i], n) == 0 && (path[n] == '\0' || path[n] == '/')) {
            size_t len = strlen("/private") + strlen(path) + 1;
            char *out = malloc(len);
            if (out)
                snprintf(out, len, "/private%s", path);
            return out;
        }
    }
    return NULL;
}

int seatbelt_profile_generate(const struct ccsb_policy *p, const struct seatbelt_profile_opts *opts,
                              char **out, char *err, size_t errlen)
{
    if (!out)
        return errf(err, errlen, CCSB_E_INVAL, "out: NULL");
    *out = NULL;
    if (!p || !opts)
        return errf(err, errlen, CCSB_E_INVAL, "%s: NULL", p ? "opts" : "policy");
    if (opts->preset != SEATBELT_PRESET_SESSION && opts->preset != SEATBELT_PRESET_TERMINAL)
        return errf(err, errlen, CCSB_E_INVAL, "opts.preset: unknown value %d", opts->preset);
    const int terminal = opts->preset == SEATBELT_PRESET_TERMINAL;
    if (terminal && !opts->workdir)
        return errf(err, errlen, CCSB_E_INVAL, "opts.workdir: the terminal preset needs the workdir");
    if (terminal && !p->home)
        return errf(err, errlen, CCSB_E_INVAL, "policy.home: the terminal preset needs $HOME");

    struct gen g = {.p = p, .o = opts, .filters = STRV_INIT};
    sbpl_buf_init(&g.b);
    g.tag = seatbelt_message_tag(opts->session_id, opts->exec_tag);
    if (!g.tag)
        return errf(err, errlen, CCSB_E_NOMEM, "out of memory");

    struct spellings secrets = {0}, roots = {0}, locked = {0}, grants = {0}, helper = {0};
    collect_paths(&g, &secrets, &p->deny_read, "denyRead");
    if (terminal) {
        collect(&g, &roots, p->home, NULL, 0, "$HOME");
        collect(&g, &roots, opts->workdir, NULL, 0, "workdir");
        collect(&g, &roots, p->session_tmp, NULL, 0, "session tmp");
    } else {
        collect_paths(&g, &roots, &p->writable_roots, "writable root");
        collect_paths(&g, &locked, &p->deny_write, "protectedPaths");
        collect_paths(&g, &grants, &p->exec_grant_roots, "execGrantRoots");
        collect(&g, &helper, opts->helper_path, NULL, 0, "helper path");
    }

    section_header(&g);
    section_reads(&g, &secrets);
    section_writes(&g, &roots, &locked, &secrets);
    if (!terminal) {
        section_exec(&g, &roots, &grants, &helper);
        section_network(&g);
        section_hardening(&g);
    }

    spellings_free(&secrets);
    spellings_free(&roots);
    spellings_free(&locked);
    spellings_free(&grants);
    spellings_free(&helper);
    strv_clear(&g.filters);
    free(g.slots);
    free(g.tag);

    if (g.b.err) {
        int code = g.b.err;
        if (code == CCSB_E_NOMEM)
            errf(err, errlen, code, "out of memory");
        else
            errf(err, errlen, code, "%s", g.b.msg);
        sbpl_buf_free(&g.b);
        return code;
    }
    *out = sbpl_buf_steal(&g.b);
    return *out ? 0 : errf(err, errlen, CCSB_E_NOMEM, "out of memory");
}
