/*
 * Policy -> bubblewrap argv (see bwrap_args.h). Pure: every host fact comes
 * through struct bwrap_host_ops.
 *
 * The view is built in this order, because a later bind hides whatever the
 * sandbox mounted earlier below its destination:
 *   1. namespaces and process flags;
 *   2. read-only system directories, /dev, /proc, /tmp, the helper;
 *   3. the spec's bind mounts, shallowest guest path first;
 *   4. the root tmpfs made read-only; then ccsb-init as PID 1, which first
 *      makes the policy's own mounts (see emit_pins), in this order:
 *   5. deny-write: every directory between a writable root and a protected
 *      path is bound onto itself (a mount point cannot be renamed or
 *      removed, so moving an ancestor away cannot shake the rule off), then
 *      the protected path is bound read-only onto itself; a protected path
 *      that does not exist yet gets a placeholder made on the host first and
 *      removed after (only something that exists can be mounted over);
 *   6. deny-read masks (empty read-only tmpfs for a directory, /dev/null for
 *      a file), last so nothing can cover them.
 */
#include "backend/bwrap_args.h"

#include "backend/init_proto.h"
#include "ccsandbox/ccsandbox.h"
#include "policy/policy.h"
#include "util/err.h"
#include "util/rpmemo.h"

#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- the real host ------------------------------------------------------ */

static int real_kind(const char *path, void *ud)
{
    mode_t mode;
    int r;
    if (ud) {
        r = rpmemo_lstat(ud, path, &mode);
    } else {
        struct stat st;
        r = lstat(path, &st) < 0 ? -errno : 0;
        mode = st.st_mode;
    }
    if (r == -ENOENT || r == -ENOTDIR)
        return BWRAP_KIND_MISSING;
    if (r < 0)
        return BWRAP_KIND_UNKNOWN;
    if (S_ISLNK(mode))
        return BWRAP_KIND_SYMLINK;
    return S_ISDIR(mode) ? BWRAP_KIND_DIR : BWRAP_KIND_FILE;
}

static char *real_readlink(const char *path, void *ud)
{
    char buf[PATH_MAX];
    ssize_t n = readlink(path, buf, sizeof buf - 1);
    if (n < 0)
        return NULL;
    buf[n] = '\0';
    return strdup(buf);
}

/* ud: the plan's realpath memo (many rules share their directories). */
static char *real_resolve(const char *path, void *ud)
{
    return ud ? rpmemo_realpath(ud, path) : realpath(path, NULL);
}

static int real_glob(const char *pattern, struct strv *out, void *ud)
{
    glob_t g;
    int r = glob(pattern, GLOB_NOSORT, NULL, &g);
    if (r == GLOB_NOMATCH)
        return 0;
    if (r != 0)
        return -1;
    for (size_t i = 0; i < g.gl_pathc; i++)
        if (strv_push(out, g.gl_pathv[i]) < 0) {
            globfree(&g);
            return -1;
        }
    globfree(&g);
    return 0;
}

static int real_sealed(const char *path, void *ud)
{
    (void)ud;
    struct stat st;
    if (lstat(path, &st) < 0 || st.st_uid == geteuid())
        return 0;
    int need = S_ISDIR(st.st_mode) ? X_OK : S_ISREG(st.st_mode) ? R_OK : -1;
    if (need < 0)
        return 0;
    return faccessat(AT_FDCWD, path, need, AT_EACCESS | AT_SYMLINK_NOFOLLOW) < 0 &&
           errno == EACCES;
}

static const struct bwrap_host_ops real_host = {
    .kind = real_kind, .readlink = real_readlink, .resolve = real_resolve, .glob = real_glob,
    .sealed = real_sealed,
};

/* ---- paths ---------------------------------------------------------------- */

/* The rest of path below root ("" when equal), or NULL when not below. */
static const char *path_below(const char *path, const char *root)
{
    if (!root)
        return NULL;
    size_t n = strlen(root);
    while (n > 1 && root[n - 1] == '/')
        n--;
    if (n == 1 && root[0] == '/')
        return path[0] == '/' ? path : NULL;
    if (strncmp(path, root, n) != 0)
        return NULL;
    if (path[n] == '\0' || path[n] == '/')
        return path + n;
    return NULL;
}

static size_t path_depth(const char *p)
{
    size_t d = 0;
    for (; *p; p++)
        if (*p == '/' && p[1] && p[1] != '/')
            d++;
    return d;
}

static char *join(const char *a, const char *rest)
{
    char *s = NULL;
    if (strcmp(a, "/") == 0 && rest[0] == '/')
        a = "";
    if (asprintf(&s, "%s%s", a, rest) < 0)
        return NULL;
    return s;
}

/*
 * Either shape blocks the path (an empty read-only file cannot become a
 * directory and the reverse); the shape only decides which error a
 * program sees, so guess what the name usually is: tool directories and
 * "*.d" are directories, everything else (rc files, .json, .yml, ...) files.
 */
int bwrap_name_looks_like_dir(const char *name)
{
    static const char *const dirs[] = {
        "hooks", "info", "objects", "refs", ".git", ".ssh", ".config", ".vscode", ".idea",
        ".claude", ".codex", ".cursor", ".gemini", ".continue", ".devcontainer", ".gnupg",
        ".aws", ".kube", ".docker", "fish", "autostart", "systemd", "environment.d", "nvim",
        "git", "direnv", "modules", "worktrees", NULL,
    };
    for (size_t i = 0; dirs[i]; i++)
        if (strcmp(name, dirs[i]) == 0)
            return 1;
    size_t n = strlen(name);
    return n > 2 && strcmp(name + n - 2, ".d") == 0;
}

/* ---- the view: what is mounted where --------------------------------------- */

struct vmount {
    char *host;     /* as written; NULL for a tmpfs */
    char *host_res; /* resolved, or NULL */
    char *guest;
    int writable;
};

struct entry {
    char *guest;
    char *host; /* source */
    int ro;     /* 1: read-only bind; 0: bound onto itself to pin it */
};

struct builder {
    const struct ccsb_policy *p;
    const struct bwrap_opts *o;
    const struct bwrap_host_ops *h;
    struct bwrap_plan *out;
    char *err;
    size_t errlen;

    struct vmount *vm;
    size_t nvm;
    struct entry *pins; /* deny-write binds */
    size_t npins;
    struct entry *masks; /* deny-read masks (host NULL: tmpfs dir, else /dev/null) */
    size_t nmasks;
};

#define NOMEM(b) errf((b)->err, (b)->errlen, CCSB_E_NOMEM, "out of memory")

static int add_vm(struct builder *b, const char *host, const char *guest, int writable)
{
    struct vmount *v = realloc(b->vm, (b->nvm + 1) * sizeof *v);
    if (!v)
        return NOMEM(b);
    b->vm = v;
    struct vmount *m = &b->vm[b->nvm];
    memset(m, 0, sizeof *m);
    m->guest = strdup(guest);
    m->host = host ? strdup(host) : NULL;
    m->writable = writable;
    if (!m->guest || (host && !m->host)) {
        free(m->guest);
        free(m->host);
        return NOMEM(b);
    }
    if (host) {
        m->host_res = b->h->resolve(host, b->h->ud);
        if (m->host_res && strcmp(m->host_res, host) == 0) {
            free(m->host_res);
            m->host_res = NULL;
        }
    }
    b->nvm++;
    return 0;
}

/* The mount that really shows guest path g: the last one whose guest is g
 * or an ancestor of it (later mounts sit on top). */
static const struct vmount *effective(const struct builder *b, const char *g)
{
    const struct vmount *best = NULL;
    size_t best_len = 0;
    for (size_t i = 0; i < b->nvm; i++) {
        const struct vmount *m = &b->vm[i];
        if (!path_below(g, m->guest))
            continue;
        size_t len = strlen(m->guest);
        if (!best || len >= best_len) {
            best = m;
            best_len = len;
        }
    }
    return best;
}

/* ---- argv helpers ----------------------------------------------------------- */

static int arg(struct builder *b, const char *a)
{
    return strv_push(&b->out->argv, a) < 0 ? NOMEM(b) : 0;
}

static int args2(struct builder *b, const char *a, const char *x)
{
    int r = arg(b, a);
    return r ? r : arg(b, x);
}

static int args3(struct builder *b, const char *a, const char *x, const char *y)
{
    int r = args2(b, a, x);
    return r ? r : arg(b, y);
}

static int note(struct builder *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int note(struct builder *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *s = NULL;
    int r = vasprintf(&s, fmt, ap);
    va_end(ap);
    if (r < 0 || strv_push_owned(&b->out->notes, s) < 0)
        return NOMEM(b);
    return 0;
}

/* ---- step 2: the system part -------------------------------------------------- */

static int init_op(struct builder *b, const char *op, const char *guest);

static const char *const system_dirs[] = {"/usr", "/bin", "/sbin", "/lib", "/lib32",
                                          "/lib64", "/libx32", "/etc", NULL};

static int add_system(struct builder *b)
{
    int r;
    for (size_t i = 0; system_dirs[i]; i++) {
        const char *d = system_dirs[i];
        int k = b->h->kind(d, b->h->ud);
        if (k == BWRAP_KIND_SYMLINK) {
            /* merged /usr: keep the same link, it points into /usr anyway */
            char *t = b->h->readlink(d, b->h->ud);
            if (!t)
                continue;
            r = args3(b, "--symlink", t, d);
            free(t);
        } else if (k == BWRAP_KIND_DIR) {
            r = args3(b, "--ro-bind", d, d);
            if (!r)
                r = add_vm(b, d, d, 0);
        } else {
            continue;
        }
        if (r)
            return r;
    }
    /* /dev is ccsb-init's first mount, from the host's /dev bound once
     * (init_dev.c): bwrap's --dev would bind each node with a mountinfo
     * parse of its own, ~0.6 ms a launch. */
    if ((r = args2(b, "--dir", "/dev")) ||
        (r = args3(b, "--dev-bind", "/dev", INIT_GUEST_HOSTDEV)) ||
        (r = init_op(b, "--dev", INIT_GUEST_HOSTDEV)) || (r = args2(b, "--proc", "/proc")))
        return r;
    /* bwrap leaves /proc/sys writable: the sandbox of a root host is uid 0
     * on the host, and sysctls check only the owner (kernel.core_pattern
     * would be a root shell on the host). Read-only, whoever runs us; made
     * so by ccsb-init (a bind onto itself, without bwrap's mountinfo
     * parse). The sandbox's /proc is the same kernel's: what the host's
     * has, it has. */
    if ((r = init_op(b, "--ro", "/proc/sys")))
        return r;
    if (b->h->kind("/proc/sysrq-trigger", b->h->ud) == BWRAP_KIND_FILE &&
        (r = init_op(b, "--ro", "/proc/sysrq-trigger")))
        return r;
    if (b->o->session_tmp)
        r = args3(b, "--bind", b->o->session_tmp, "/tmp");
    else
        r = args2(b, "--tmpfs", "/tmp");
    if (r || (r = add_vm(b, b->o->session_tmp, "/tmp", 1)))
        return r;
    return args3(b, "--ro-bind", b->o->helper_path, INIT_GUEST_PATH);
}

/* ---- step 3: the spec's binds --------------------------------------------------- */

static int reserved_guest(const char *g)
{
    return strcmp(g, "/") == 0 || path_below(g, "/proc") || path_below(g, "/dev") ||
           path_below(g, INIT_GUEST_DIR) || path_below(INIT_GUEST_DIR, g);
}

static int add_binds(struct builder *b)
{
    const struct ccsb_policy *p = b->p;
    size_t *order = malloc((p->n_mounts + 1) * sizeof *order);
    if (!order)
        return NOMEM(b);
    for (size_t i = 0; i < p->n_mounts; i++)
        order[i] = i;
    /* Stable: shallow guests first, so a nested bind lands on top. */
    for (size_t i = 1; i < p->n_mounts; i++)
        for (size_t j = i; j > 0 && path_depth(p->mounts[order[j - 1]].guest) >
                                        path_depth(p->mounts[order[j]].guest); j--) {
            size_t t = order[j];
            order[j] = order[j - 1];
            order[j - 1] = t;
        }
    int r = 0;
    for (size_t i = 0; i < p->n_mounts && !r; i++) {
        const struct policy_mount *m = &p->mounts[order[i]];
        if (reserved_guest(m->guest)) {
            r = errf(b->err, b->errlen, CCSB_E_POLICY,
                     "bind mount %s -> %s: the guest path is reserved by the sandbox", m->host,
                     m->guest);
            break;
        }
        if (!m->exists) { /* a runner state dir that does not exist yet */
            r = note(b, "%s: does not exist, not mounted", m->host);
            continue;
        }
        r = args3(b, m->writable ? "--bind" : "--ro-bind", m->host, m->guest);
        if (!r)
            r = add_vm(b, m->host, m->guest, m->writable);
        if (!r)
            r = note(b, "%s %s at %s", m->writable ? "read-write" : "read-only", m->host, m->guest);
    }
    free(order);
    /* unixSockets: each socket file at its own path (connect needs it
     * writable); the guard then lets the commands create AF_UNIX sockets. */
    for (size_t i = 0; i < p->unix_sockets.n && !r; i++) {
        const char *sock = p->unix_sockets.v[i].path;
        if (reserved_guest(sock)) {
            r = errf(b->err, b->errlen, CCSB_E_POLICY,
                     "unixSockets: %s is a path the sandbox reserves", sock);
            break;
        }
        r = args3(b, "--bind", sock, sock);
        if (!r)
            r = note(b, "unix socket %s reachable (AF_UNIX allowed)", sock);
    }
    return r;
}

/* ---- guest spellings of a host path ------------------------------------------------ */

/* Every guest path that shows host path s (through any mount, either
 * spelling of the mount's host path) and really is that mount there. */
static int guests_of(struct builder *b, const char *s, struct strv *out)
{
    for (size_t i = 0; i < b->nvm; i++) {
        const struct vmount *m = &b->vm[i];
        const char *roots[2] = {m->host, m->host_res};
        for (int k = 0; k < 2; k++) {
            const char *rest = path_below(s, roots[k]);
            if (!rest)
                continue;
            char *g = join(m->guest, rest);
            if (!g)
                return NOMEM(b);
            if (effective(b, g) == m && !strv_contains(out, g)) {
                if (strv_push_owned(out, g) < 0)
                    return NOMEM(b);
            } else {
                free(g);
            }
        }
    }
    return 0;
}

/* The host path that guest path g shows (through its effective mount). */
static char *host_of(struct builder *b, const char *g)
{
    const struct vmount *m = effective(b, g);
    if (!m || !m->host)
        return NULL;
    const char *rest = path_below(g, m->guest);
    return join(m->host_res ? m->host_res : m->host, rest);
}

/* ---- step 4: deny-write --------------------------------------------------------------- */

static int add_entry(struct builder *b, struct entry **v, size_t *n, const char *guest,
                     const char *host, int ro)
{
    for (size_t i = 0; i < *n; i++)
        if (strcmp((*v)[i].guest, guest) == 0) {
            (*v)[i].ro |= ro; /* read-only wins over a plain pin */
            return 0;
        }
    struct entry *nv = realloc(*v, (*n + 1) * sizeof *nv);
    if (!nv)
        return NOMEM(b);
    *v = nv;
    nv[*n].guest = strdup(guest);
    nv[*n].host = host ? strdup(host) : NULL;
    nv[*n].ro = ro;
    if (!nv[*n].guest || (host && !nv[*n].host)) {
        free(nv[*n].guest);
        free(nv[*n].host);
        return NOMEM(b);
    }
    (*n)++;
    /* Mounted over on the host's file system: it may be another session's
     * placeholder (checked at launch). */
    const struct vmount *m = effective(b, guest);
    if (!m || !m->writable || !m->host)
        return 0;
    char *h = host_of(b, guest);
    if (h && strv_contains(&b->out->ph_found, h)) {
        free(h);
        return 0;
    }
    return strv_push_owned(&b->out->ph_found, h) < 0 ? NOMEM(b) : 0;
}

static int fail_unknown(struct builder *b, const char *what, const char *path,
                        const char *host)
{
    return errf(b->err, b->errlen, CCSB_E_POLICY,
                "%s %s: %s cannot be examined (no permission, a loop, or an I/O error); "
                "the rule could not be enforced, so nothing is launched (fix its permissions)",
                what, path, host);
}

static int fail_symlink(struct builder *b, const char *path, const char *link)
{
    return errf(b->err, b->errlen, CCSB_E_POLICY,
                "deny-write %s: %s is a symlink inside a writable root, which the sandbox "
                "could replace; bubblewrap cannot pin it (bind that directory read-only, or "
                "remove the link)",
                path, link);
}

/* 1 when host path is itself a deny-read secret: a placeholder is then
 * kept, so that it can be masked and a secret the host writes there during
 * the session stays hidden (the guard only sees writes). */
static int is_secret(const struct builder *b, const char *host)
{
    for (size_t i = 0; i < b->p->deny_read.n; i++) {
        const struct policy_path *pp = &b->p->deny_read.v[i];
        if (strcmp(pp->path, host) == 0 || (pp->resolved && strcmp(pp->resolved, host) == 0))
            return 1;
    }
    return 0;
}

/* file: the rule's path is a file, never a directory (see bwrap_args.h). */
static int guard_rule_push(struct builder *b, const char *anchor, const char *rest, int file)
{
    for (size_t i = 0; i < b->out->guard_anchors.n; i++)
        if (strcmp(b->out->guard_anchors.v[i], anchor) == 0 &&
            strcmp(b->out->guard_rests.v[i], rest) == 0)
            return 0;
    if (strv_push(&b->out->guard_anchors, anchor) < 0 ||
        strv_push(&b->out->guard_rests, rest) < 0 ||
        strv_push(&b->out->guard_kinds, file ? "file" : "path") < 0)
        return NOMEM(b);
    return 0;
}

/*
 * A protected path held by the guard: the anchor is the host path of the
 * parent of `cur` (for a missing path its first missing component, so the
 * anchor is the deepest existing directory; for an existing file the file
 * itself), the rest is the part of guest path g below the anchor.
 */
static int guard_rule(struct builder *b, const char *path, const char *g, const char *cur,
                      int existing)
{
    const char *slash = strrchr(cur, '/');
    size_t plen = (size_t)(slash - cur);
    char *parent = plen ? strndup(cur, plen) : strdup("/");
    char *anchor = parent ? host_of(b, parent) : NULL;
    const char *rest = g + (plen ? plen + 1 : 1);
    /* git saves a file as <name>.lock renamed into place (config, global
     * config, .gitmodules): held open or linked by the sandbox while it
     * exists, the lock file would be the protected file after the rename.
     * Always a file; so is an existing protected file. */
    int is_file = existing || !bwrap_name_looks_like_dir(strrchr(g, '/') + 1);
    char *lock = NULL;
    if (anchor && is_file && asprintf(&lock, "%s.lock", rest) < 0)
        lock = NULL;
    int r = !anchor || (is_file && !lock) ? NOMEM(b) : 0;
    if (!r)
        r = guard_rule_push(b, anchor, rest, existing);
    if (!r && lock)
        r = guard_rule_push(b, anchor, lock, 1);
    if (!r)
        r = existing ? note(b, "deny-write %s: the seccomp guard also refuses writing %s (it "
                               "holds when the host replaces the file and the bind detaches)",
                            path, cur)
                     : note(b, "deny-write %s: missing; the seccomp guard refuses creating %s "
                               "(nothing is made on the host)",
                            path, cur);
    if (!r && lock)
        r = note(b, "deny-write %s: the seccomp guard refuses %s.lock too (git saves through "
                    "it; held open or linked it would be the file once renamed)",
                 path, g);
    free(parent);
    free(anchor);
    free(lock);
    return r;
}

/*
 * Protects guest path g (a spelling of deny-write path `path`) when it sits
 * in a writable mount: pins each directory from the mount root down, then
 * binds the path (or a placeholder at its first missing component)
 * read-only.
 */
static int protect_guest(struct builder *b, const char *path, const char *g)
{
    const struct vmount *m = effective(b, g);
    if (!m || !m->writable)
        return note(b, "deny-write %s: already read-only at %s", path, g);
    if (!m->host) /* a private tmpfs: nothing reaches the host */
        return note(b, "deny-write %s: %s is in a private tmpfs", path, g);

    if (strcmp(g, m->guest) == 0) { /* the writable root itself */
        int r = add_entry(b, &b->pins, &b->npins, g, m->host_res ? m->host_res : m->host, 1);
        return r ? r : note(b, "deny-write %s: read-only at %s", path, g);
    }
    size_t root_len = strlen(m->guest);
    if (root_len == 1)
        root_len = 0;
    char *cur = strdup(g);
    if (!cur)
        return NOMEM(b);
    int r = 0;
    /* Walk the components below the mount root. */
    for (char *sep = cur + root_len; sep && *sep;) {
        char *next = strchr(sep + 1, '/');
        if (next)
            *next = '\0';
        char *host = host_of(b, cur);
        if (!host) {
            r = NOMEM(b);
            break;
        }
        int kind = b->h->kind(host, b->h->ud);
        int last = next == NULL;
        if (kind == BWRAP_KIND_UNKNOWN) {
            r = fail_unknown(b, "deny-write", path, host);
        } else if (kind == BWRAP_KIND_SYMLINK) {
            r = fail_symlink(b, path, host);
        } else if (kind == BWRAP_KIND_MISSING && b->o->have_guard && !is_secret(b, host)) {
            /* The guard refuses the name (and anything under it) instead:
             * nothing is made on the host. */
            r = guard_rule(b, path, g, cur, 0);
            free(host);
            break;
        } else if (kind == BWRAP_KIND_MISSING) {
            int dir = !last || bwrap_name_looks_like_dir(strrchr(cur, '/') + 1);
            struct strv *ph = dir ? &b->out->ph_dirs : &b->out->ph_files;
            r = !strv_contains(ph, host) && strv_push(ph, host) < 0 ? NOMEM(b) : 0;
            if (!r)
                r = add_entry(b, &b->pins, &b->npins, cur, host, 1);
            if (!r)
                r = note(b, "deny-write %s: missing; placeholder %s %s (removed when the "
                            "sandbox ends) mounted read-only at %s",
                         path, dir ? "directory" : "file", host, cur);
            free(host);
            break;
        } else if (last) {
            r = add_entry(b, &b->pins, &b->npins, cur, host, 1);
            if (!r)
                r = note(b, "deny-write %s: read-only at %s", path, cur);
            /* A bind over one file detaches when the host renames a new
             * file over it (git, editors save that way): the guard keeps
             * refusing writes to the name. */
            if (!r && kind == BWRAP_KIND_FILE && b->o->have_guard)
                r = guard_rule(b, path, cur, cur, 1);
        } else if (kind == BWRAP_KIND_FILE) {
            /* A file in the way (a worktree's `.git` file, say): the path
             * cannot exist, but rewriting the file could point elsewhere,
             * so it is pinned read-only. */
            r = add_entry(b, &b->pins, &b->npins, cur, host, 1);
            if (!r)
                r = note(b, "deny-write %s: %s is a file in the way; read-only", path, cur);
            if (!r && b->o->have_guard)
                r = guard_rule(b, path, cur, cur, 1);
            free(host);
            break;
        } else {
            r = add_entry(b, &b->pins, &b->npins, cur, host, 0);
        }
        free(host);
        if (r || !next)
            break;
        *next = '/';
        sep = next;
    }
    free(cur);
    return r;
}

static int deny_write_one(struct builder *b, const struct policy_path *pp)
{
    struct strv guests = STRV_INIT;
    int r = guests_of(b, pp->path, &guests);
    if (!r && pp->resolved)
        r = guests_of(b, pp->resolved, &guests);
    if (!r && guests.n == 0)
        r = note(b, "deny-write %s: not visible in the sandbox", pp->path);
    for (size_t i = 0; i < guests.n && !r; i++)
        r = protect_guest(b, pp->path, guests.v[i]);
    strv_clear(&guests);
    return r;
}

/* A glob: pin what matches now; creation of new matches needs the guard. */
static int deny_write_glob(struct builder *b, const struct policy_path *pp)
{
    struct strv guests = STRV_INIT;
    int r = guests_of(b, pp->path, &guests);
    int writable = 0;
    for (size_t i = 0; i < guests.n; i++) {
        const struct vmount *m = effective(b, guests.v[i]);
        writable |= m && m->writable && m->host;
    }
    strv_clear(&guests);
    if (r)
        return r;
    if (writable && !b->o->have_guard)
        return errf(b->err, b->errlen, CCSB_E_POLICY,
                    "deny-write glob %s: a writable root could gain new matches, and blocking "
                    "their creation needs the create-time guard, which this build or host "
                    "lacks",
                    pp->path);
    struct strv matches = STRV_INIT;
    if (b->h->glob(pp->path, &matches, b->h->ud) < 0) {
        strv_clear(&matches);
        return errf(b->err, b->errlen, CCSB_E_POLICY, "deny-write glob %s: cannot expand it",
                    pp->path);
    }
    for (size_t i = 0; i < matches.n && !r; i++) {
        struct policy_path one = {.path = matches.v[i]};
        r = deny_write_one(b, &one);
    }
    strv_clear(&matches);
    return r;
}

/* ---- step 5: deny-read ---------------------------------------------------------------- */

/* Pins each directory between a writable mount's root and guest path g
 * (exclusive), so g cannot be moved away and replaced by something new. */
static int pin_ancestors(struct builder *b, const char *g)
{
    const struct vmount *m = effective(b, g);
    if (!m || !m->writable || !m->host || strcmp(g, m->guest) == 0)
        return 0;
    char *cur = strdup(g);
    if (!cur)
        return NOMEM(b);
    size_t root_len = strcmp(m->guest, "/") == 0 ? 0 : strlen(m->guest);
    int r = 0;
    for (char *sep = strchr(cur + root_len + 1, '/'); sep && !r; sep = strchr(sep + 1, '/')) {
        *sep = '\0';
        r = add_entry(b, &b->pins, &b->npins, cur, NULL, 0);
        *sep = '/';
    }
    free(cur);
    return r;
}

static int mask_spelling(struct builder *b, const struct policy_path *pp, const char *s)
{
    struct strv guests = STRV_INIT;
    int r = guests_of(b, s, &guests);
    for (size_t i = 0; i < guests.n && !r; i++) {
        int kind = b->h->kind(s, b->h->ud);
        if (kind == BWRAP_KIND_UNKNOWN) {
            r = fail_unknown(b, "deny-read", pp->path, s);
            break;
        }
        /* Nothing to hide from a sandbox of our uid (/etc/shadow for a
         * user): a mask there would only cost a mount, and end the session
         * when the host replaces the file (passwd, useradd). */
        if ((kind == BWRAP_KIND_FILE || kind == BWRAP_KIND_DIR) && b->h->sealed &&
            b->h->sealed(s, b->h->ud)) {
            r = note(b, "deny-read %s: %s is not readable by this user, who does not own it: "
                        "not masked (unreadable in the sandbox as well)",
                     pp->path, guests.v[i]);
            continue;
        }
        if (kind == BWRAP_KIND_DIR)
            r = add_entry(b, &b->masks, &b->nmasks, guests.v[i], NULL, 1);
        else if (kind == BWRAP_KIND_FILE)
            r = add_entry(b, &b->masks, &b->nmasks, guests.v[i], "/dev/null", 1);
        /* Missing, but a placeholder is planned (the secret is also
         * deny-write inside a writable root): mask the placeholder too, so
         * a secret the host creates later is not readable through it. */
        else if (kind == BWRAP_KIND_MISSING && strv_contains(&b->out->ph_dirs, s))
            r = add_entry(b, &b->masks, &b->nmasks, guests.v[i], NULL, 1);
        else if (kind == BWRAP_KIND_MISSING && strv_contains(&b->out->ph_files, s))
            r = add_entry(b, &b->masks, &b->nmasks, guests.v[i], "/dev/null", 1);
        else
            continue;
        /* a secret the host writes later must land under the mask, not
         * in a look-alike directory made after moving the real one away */
        if (!r)
            r = pin_ancestors(b, guests.v[i]);
        if (!r)
            r = note(b, "deny-read %s: hidden at %s (%s)", pp->path, guests.v[i],
                     kind == BWRAP_KIND_DIR ? "empty read-only tmpfs" : "/dev/null");
    }
    strv_clear(&guests);
    return r;
}

static int deny_read_one(struct builder *b, const struct policy_path *pp)
{
    if (pp->is_glob) {
        struct strv matches = STRV_INIT;
        if (b->h->glob(pp->path, &matches, b->h->ud) < 0) {
            strv_clear(&matches);
            return errf(b->err, b->errlen, CCSB_E_POLICY, "deny-read glob %s: cannot expand it",
                        pp->path);
        }
        int r = 0;
        for (size_t i = 0; i < matches.n && !r; i++) {
            char *res = b->h->resolve(matches.v[i], b->h->ud);
            struct policy_path one = {.path = matches.v[i], .resolved = res};
            r = deny_read_one(b, &one);
            free(res);
        }
        strv_clear(&matches);
        return r;
    }
    /* The file itself lives at the resolved spelling; a literal spelling
     * through a symlink shows that same file, so masking the resolved
     * spelling everywhere it is visible covers both. */
    return mask_spelling(b, pp, pp->resolved ? pp->resolved : pp->path);
}

/* ---- emit ------------------------------------------------------------------------------ */

static int cmp_entry_depth(const void *a, const void *b)
{
    const struct entry *x = a, *y = b;
    size_t dx = path_depth(x->guest), dy = path_depth(y->guest);
    if (dx != dy)
        return dx < dy ? -1 : 1;
    return strcmp(x->guest, y->guest);
}

/*
 * The deny-write pins and binds and the deny-read masks are not bwrap
 * options but ccsb-init's: bwrap re-reads /proc/self/mountinfo for every
 * bind (about 0.7 ms each here), and a real policy has dozens; ccsb-init
 * makes the same mounts with the new mount API in microseconds, before
 * anything else runs, and then drops the capabilities it needed for it.
 */
static int init_op(struct builder *b, const char *op, const char *guest)
{
    if (strv_push(&b->out->init_mounts, op) < 0 || strv_push(&b->out->init_mounts, guest) < 0)
        return NOMEM(b);
    return 0;
}

static int emit_pins(struct builder *b)
{
    if (b->npins) /* qsort(NULL, 0, ...) is undefined behaviour */
        qsort(b->pins, b->npins, sizeof *b->pins, cmp_entry_depth);
    int r = 0;
    for (size_t i = 0; i < b->npins && !r; i++)
        r = init_op(b, b->pins[i].ro ? "--ro" : "--pin", b->pins[i].guest);
    return r;
}

static int emit_masks(struct builder *b)
{
    if (b->nmasks)
        qsort(b->masks, b->nmasks, sizeof *b->masks, cmp_entry_depth);
    int r = 0;
    for (size_t i = 0; i < b->nmasks && !r; i++)
        r = init_op(b, b->masks[i].host ? "--mask-file" : "--mask-dir", b->masks[i].guest);
    return r;
}

/* ccsb-init gets CAP_SYS_ADMIN (to mount, and for --lock-userns to make
 * /proc/sys writable for a moment), CAP_SYS_RESOURCE (for --lock-userns's
 * write) and CAP_SETPCAP (to empty its bounding set afterwards), only the
 * ones it needs; the grant goes right after --cap-drop ALL. Called before
 * the command is appended. */
static int grant_init_caps(struct builder *b)
{
    int mounts = b->out->init_mounts.n > 0, lock = b->o->lock_userns;
    if (!mounts && !lock)
        return 0;
    struct strv *v = &b->out->argv, out = STRV_INIT;
    int r = 0;
    for (size_t i = 0; i < v->n && !r; i++) {
        r = strv_push(&out, v->v[i]);
        if (!r && i > 0 && strcmp(v->v[i - 1], "--cap-drop") == 0 && strcmp(v->v[i], "ALL") == 0)
            r = strv_push(&out, "--cap-add") | strv_push(&out, "CAP_SYS_ADMIN") |
                (lock ? strv_push(&out, "--cap-add") | strv_push(&out, "CAP_SYS_RESOURCE") : 0) |
                strv_push(&out, "--cap-add") | strv_push(&out, "CAP_SETPCAP");
    }
    if (r) {
        strv_clear(&out);
        return NOMEM(b);
    }
    strv_clear(v);
    *v = out;
    return 0;
}

static int emit_init(struct builder *b)
{
    /* The root tmpfs read-only: by ccsb-init, whose mount API spares
     * bwrap's mountinfo parse for its --remount-ro (~0.1 ms). */
    int r = init_op(b, "--remount-ro", "/");
    if (!r)
        r = grant_init_caps(b);
    b->out->cmd_at = b->out->argv.n;
    if (!r)
        r = args3(b, "--", INIT_GUEST_PATH, "init");
    if (!r && b->o->lock_userns)
        r = arg(b, "--lock-userns");
    /* A protected file whose read-only bind the host detaches (saving by
     * rename) stays refused by name: ccsb-init reports it and goes on. */
    if (!r && b->o->have_guard)
        r = arg(b, "--have-guard");
    /* Placeholders are made by the host while bwrap starts: wait for them. */
    if (!r && (b->out->ph_files.n || b->out->ph_dirs.n))
        r = arg(b, "--await-go");
    for (size_t i = 0; !r && i < b->out->init_mounts.n; i++)
        r = arg(b, b->out->init_mounts.v[i]);
    char num[32];
    if (!r && b->o->http_port) {
        snprintf(num, sizeof num, "%d", b->o->http_port);
        r = args2(b, "--http-port", num);
    }
    if (!r && b->o->socks_port) {
        snprintf(num, sizeof num, "%d", b->o->socks_port);
        r = args2(b, "--socks-port", num);
    }
    if (!r && b->o->rlimit_as) {
        snprintf(num, sizeof num, "%" PRIu64, b->o->rlimit_as);
        r = args2(b, "--rlimit-as", num);
    }
    if (!r && b->o->rlimit_nproc) {
        snprintf(num, sizeof num, "%" PRIu64, b->o->rlimit_nproc);
        r = args2(b, "--rlimit-nproc", num);
    }
    return r;
}

static int workdir(struct builder *b)
{
    const char *w = b->p->guest_workdir;
    if (!w || effective(b, w))
        return 0;
    if (reserved_guest(w))
        return errf(b->err, b->errlen, CCSB_E_POLICY,
                    "guestWorkdir %s: the path is reserved by the sandbox", w);
    /* Not inside any mount: an empty directory in the (read-only) root. */
    return args2(b, "--dir", w);
}

static const char *const base_flags[] = {
    "--unshare-all",  /* user, ipc, pid, net, uts, cgroup */
    "--unshare-user", /* explicit: --disable-userns needs it even when implied */
    "--die-with-parent", "--new-session",
    "--cap-drop", "ALL", "--as-pid-1", "--clearenv", NULL,
};

int bwrap_plan_build(const struct ccsb_policy *p, const struct bwrap_opts *o,
                     struct bwrap_plan *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    struct rpmemo memo = RPMEMO_INIT;
    struct bwrap_host_ops memo_host = real_host;
    memo_host.ud = o->memo ? o->memo : &memo;
    struct builder b = {.p = p, .o = o, .h = o->host ? o->host : &memo_host, .out = out,
                        .err = err, .errlen = errlen};
    int r = 0;
    for (size_t i = 0; base_flags[i] && !r; i++)
        r = arg(&b, base_flags[i]);
    if (!r && !o->lock_userns)
        r = arg(&b, "--disable-userns");
    if (!r)
        r = add_system(&b);
    if (!r)
        r = add_binds(&b);
    if (!r)
        r = workdir(&b);
    for (size_t i = 0; !r && i < p->deny_write.n; i++) {
        const struct policy_path *pp = &p->deny_write.v[i];
        r = pp->is_glob ? deny_write_glob(&b, pp) : deny_write_one(&b, pp);
    }
    if (!r && p->deny_write_globs.n && !o->have_guard)
        r = errf(err, errlen, CCSB_E_POLICY,
                 "denyWriteGlobs (%s%s): blocking their creation needs the create-time guard, "
                 "which this build or host lacks",
                 p->deny_write_globs.v[0], p->deny_write_globs.n > 1 ? ", ..." : "");
    for (size_t i = 0; !r && i < p->deny_read.n; i++)
        r = deny_read_one(&b, &p->deny_read.v[i]);
    if (!r)
        r = emit_pins(&b);
    if (!r)
        r = emit_masks(&b);
    if (!r)
        r = emit_init(&b);

    for (size_t i = 0; i < b.nvm; i++) {
        free(b.vm[i].host);
        free(b.vm[i].host_res);
        free(b.vm[i].guest);
    }
    free(b.vm);
    for (size_t i = 0; i < b.npins; i++) {
        free(b.pins[i].guest);
        free(b.pins[i].host);
    }
    free(b.pins);
    for (size_t i = 0; i < b.nmasks; i++) {
        free(b.masks[i].guest);
        free(b.masks[i].host);
    }
    free(b.masks);
    if (r)
        bwrap_plan_clear(out);
    rpmemo_clear(&memo);
    return r;
}

int bwrap_lock_userns_here(void)
{
    return getuid() == 0 && getgid() == 0;
}

void bwrap_plan_clear(struct bwrap_plan *plan)
{
    strv_clear(&plan->argv);
    strv_clear(&plan->ph_files);
    strv_clear(&plan->ph_dirs);
    strv_clear(&plan->ph_found);
    strv_clear(&plan->guard_anchors);
    strv_clear(&plan->guard_rests);
    strv_clear(&plan->guard_kinds);
    strv_clear(&plan->notes);
    strv_clear(&plan->init_mounts);
}

static int needs_quote(const char *s)
{
    if (!*s)
        return 1;
    for (; *s; s++)
        if (!strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./=:,+@%",
                    *s))
            return 1;
    return 0;
}

char *bwrap_argv_to_shell(const char *bwrap_path, const struct strv *argv)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (!f)
        return NULL;
    fputs(bwrap_path, f);
    for (size_t i = 0; i < argv->n; i++) {
        const char *a = argv->v[i];
        fputc(' ', f);
        if (!needs_quote(a)) {
            fputs(a, f);
            continue;
        }
        fputc('\'', f);
        for (; *a; a++) {
            if (*a == '\'')
                fputs("'\\''", f);
            else
                fputc(*a, f);
        }
        fputc('\'', f);
    }
    if (fclose(f) != 0) {
        free(buf);
        return NULL;
    }
    return buf;
}
