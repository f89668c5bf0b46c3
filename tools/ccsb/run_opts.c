/* Options shared by `ccsb run`, `ccsb shell` and `ccsb explain`. */
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

void run_opts_usage(void)
{
    fputs("run options:\n"
          "  --spec FILE              start from a JSON spec (see `ccsb spec default`)\n"
          "  --backend B              native (default) | none | microvm | auto\n"
          "  --mode M                 chat (default) | review | plan | orchestrate\n"
          "  --bind HOST[:GUEST][:ro] expose a host directory (repeatable)\n"
          "  --workdir DIR            working directory inside the sandbox\n"
          "  --allow DOMAIN           add an egress allowlist entry (repeatable)\n"
          "  --deny DOMAIN            add an egress denylist entry (repeatable)\n"
          "  --no-network             refuse every outbound connection\n"
          "  --upstream-proxy URL     tunnel allowed connections through this HTTP proxy\n"
          "                           (the host's own, e.g. \"$HTTPS_PROXY\")\n"
          "  --protect PATH           never writable (repeatable)\n"
          "  --deny-read PATH         never readable (repeatable)\n"
          "  --deny-write-glob GLOB   refuse creating names matching GLOB (repeatable); without\n"
          "                           --spec the dispatch default .env, *.key, *.pem applies\n"
          "  --no-default-globs       drop the dispatch default deny-write globs\n"
          "  --runner-state DIR       writable in every mode (repeatable)\n"
          "  --unix-socket PATH       a host unix socket the command may connect to\n"
          "  --timeout SECONDS        kill the command after SECONDS (exit 124)\n"
          "  --env NAME=VALUE         set a variable for the command (repeatable)\n"
          "  --events FILE|-          write every event as a JSON line\n"
          "  --platform linux|macos   (explain) the platform to explain for\n",
          stderr);
}

char *cli_read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    size_t cap = 4096, n = 0;
    char *buf = malloc(cap);
    while (buf) {
        size_t r = fread(buf + n, 1, cap - n - 1, f);
        n += r;
        if (n + 1 < cap) {
            if (ferror(f)) {
                free(buf);
                buf = NULL;
            }
            break;
        }
        cap *= 2;
        char *nb = realloc(buf, cap);
        if (!nb) {
            free(buf);
            buf = NULL;
        }
        buf = nb;
    }
    fclose(f);
    if (!buf)
        return NULL;
    buf[n] = 0;
    if (len)
        *len = n;
    return buf;
}

static int fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int fail(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("ccsb: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    return CLI_EXIT_CANNOT_START;
}

static int load_spec(const char *path, ccsb_spec **out)
{
    size_t len = 0;
    char *text = cli_read_file(path, &len);
    if (!text)
        return fail("--spec %s: %s", path, strerror(errno));
    char err[512] = "";
    int r = ccsb_spec_from_json(out, text, len, err, sizeof err);
    free(text);
    if (r < 0)
        return fail("invalid spec %s: %s", path, err);
    return 0;
}

static char *absolute(const char *p)
{
    if (p[0] == '/')
        return strdup(p);
    char cwd[PATH_MAX];
    if (!getcwd(cwd, sizeof cwd))
        return NULL;
    char *out = NULL;
    if (asprintf(&out, "%s/%s", cwd, p) < 0)
        return NULL;
    return out;
}

/* HOST[:GUEST][:ro|:rw] */
static int add_bind(ccsb_spec *spec, const char *arg)
{
    char *copy = strdup(arg);
    if (!copy)
        return fail("%s", "out of memory");
    int ro = 0;
    char *last = strrchr(copy, ':');
    if (last && (strcmp(last, ":ro") == 0 || strcmp(last, ":rw") == 0)) {
        ro = last[1] == 'r' && last[2] == 'o';
        *last = 0;
    }
    char *guest = strchr(copy, ':');
    if (guest)
        *guest++ = 0;
    char *host = absolute(copy);
    int r = host ? ccsb_spec_add_bind_mount(spec, host, guest && *guest ? guest : NULL, ro)
                 : CCSB_E_NOMEM;
    free(host);
    free(copy);
    if (r < 0)
        return fail("--bind %s: %s", arg, ccsb_strerror(r));
    return 0;
}

static int parse_backend(const char *name, int *out)
{
    static const struct {
        const char *name;
        int value;
    } names[] = {{"native", CCSB_BACKEND_NATIVE}, {"none", CCSB_BACKEND_NONE},
                 {"microvm", CCSB_BACKEND_MICROVM}, {"auto", CCSB_BACKEND_AUTO},
                 {"docker", CCSB_BACKEND_NATIVE}};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (strcmp(name, names[i].name) == 0) {
            *out = names[i].value;
            return 0;
        }
    return -1;
}

static int parse_mode(const char *name, int *out)
{
    for (int m = CCSB_MODE_CHAT; m <= CCSB_MODE_ORCHESTRATE; m++)
        if (strcmp(name, ccsb_mode_name(m)) == 0) {
            *out = m;
            return 0;
        }
    return -1;
}

static int push(char ***v, size_t *n, char *s)
{
    char **nv = realloc(*v, (*n + 2) * sizeof *nv);
    if (!nv)
        return -1;
    nv[(*n)++] = s;
    nv[*n] = NULL;
    *v = nv;
    return 0;
}

/* Options that take a value. */
static int takes_value(const char *opt)
{
    static const char *const with_value[] = {
        "--spec", "--backend", "--mode", "--bind", "--workdir", "--allow", "--deny",
        "--upstream-proxy",
        "--protect", "--deny-read", "--deny-write-glob", "--runner-state", "--unix-socket",
        "--timeout",
        "--env", "--events", "--platform", NULL};
    for (size_t i = 0; with_value[i]; i++)
        if (strcmp(opt, with_value[i]) == 0)
            return 1;
    return 0;
}

int run_opts_parse(int argc, char **argv, struct run_opts *o)
{
    memset(o, 0, sizeof *o);
    const char *spec_path = NULL;
    int default_globs = 1;
    /* Pass 1: the spec file is the base every other option edits. */
    for (int i = 0; i < argc; i++) {
        if (strcmp(argv[i], "--") == 0)
            break;
        if (strcmp(argv[i], "--spec") == 0 && i + 1 < argc)
            spec_path = argv[i + 1];
        if (strcmp(argv[i], "--no-default-globs") == 0)
            default_globs = 0;
        if (takes_value(argv[i]))
            i++;
    }
    int r;
    if (spec_path) {
        if ((r = load_spec(spec_path, &o->spec)) != 0)
            return r;
    } else {
        if (ccsb_spec_new(&o->spec) < 0)
            return fail("%s", "out of memory");
        /* No spec: the current directory, read-write, is the workdir. */
        char *cwd = absolute(".");
        if (!cwd)
            return fail("cannot read the current directory: %s", strerror(errno));
        size_t n = strlen(cwd);
        if (n > 2 && strcmp(cwd + n - 2, "/.") == 0)
            cwd[n - 2] = 0;
        r = ccsb_spec_add_bind_mount(o->spec, cwd, NULL, 0);
        if (r == 0)
            r = ccsb_spec_set_guest_workdir(o->spec, cwd);
        free(cwd);
        if (r < 0)
            return fail("cannot bind the current directory: %s", ccsb_strerror(r));
        /* The CLI never falls back to running unsandboxed on its own. */
        ccsb_spec_set_backend(o->spec, CCSB_BACKEND_NATIVE);
        /* The dispatch default (docs/guard.md): secrets are never created. */
        static const char *const dispatch_globs[] = {".env", "*.key", "*.pem", NULL};
        for (size_t g = 0; default_globs && dispatch_globs[g]; g++)
            if (ccsb_spec_add_deny_write_glob(o->spec, dispatch_globs[g]) < 0)
                return fail("%s", "out of memory");
    }

    int i;
    for (i = 0; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--") == 0) {
            i++;
            break;
        }
        if (a[0] != '-')
            break;
        if (strcmp(a, "--no-network") == 0) {
            ccsb_spec_set_network_enabled(o->spec, 0);
            continue;
        }
        if (strcmp(a, "--no-default-globs") == 0)
            continue; /* handled in pass 1 */
        if (!takes_value(a))
            return fail("unknown option %s", a);
        if (i + 1 >= argc)
            return fail("%s needs a value", a);
        const char *v = argv[++i];
        int b, m;
        r = 0;
        if (strcmp(a, "--spec") == 0) {
            continue;
        } else if (strcmp(a, "--backend") == 0) {
            if (parse_backend(v, &b) < 0)
                return fail("--backend %s: unknown backend (native, none, microvm, auto)", v);
            r = ccsb_spec_set_backend(o->spec, b);
        } else if (strcmp(a, "--mode") == 0) {
            if (parse_mode(v, &m) < 0)
                return fail("--mode %s: unknown mode (chat, review, plan, orchestrate)", v);
            r = ccsb_spec_set_mode(o->spec, m);
        } else if (strcmp(a, "--bind") == 0) {
            if ((r = add_bind(o->spec, v)) != 0)
                return r;
        } else if (strcmp(a, "--workdir") == 0) {
            char *abs = absolute(v);
            r = abs ? ccsb_spec_set_guest_workdir(o->spec, abs) : CCSB_E_NOMEM;
            free(abs);
        } else if (strcmp(a, "--allow") == 0) {
            r = ccsb_spec_add_egress_allow(o->spec, v);
        } else if (strcmp(a, "--deny") == 0) {
            r = ccsb_spec_add_egress_deny(o->spec, v);
        } else if (strcmp(a, "--upstream-proxy") == 0) {
            r = ccsb_spec_set_upstream_proxy(o->spec, v);
        } else if (strcmp(a, "--protect") == 0) {
            char *abs = absolute(v);
            r = abs ? ccsb_spec_add_protected_path(o->spec, abs) : CCSB_E_NOMEM;
            free(abs);
        } else if (strcmp(a, "--deny-read") == 0) {
            r = ccsb_spec_add_deny_read(o->spec, v);
        } else if (strcmp(a, "--deny-write-glob") == 0) {
            r = ccsb_spec_add_deny_write_glob(o->spec, v);
        } else if (strcmp(a, "--unix-socket") == 0) {
            char *abs = absolute(v);
            r = abs ? ccsb_spec_add_unix_socket(o->spec, abs) : CCSB_E_NOMEM;
            free(abs);
        } else if (strcmp(a, "--runner-state") == 0) {
            char *abs = absolute(v);
            r = abs ? ccsb_spec_add_runner_state_dir(o->spec, abs) : CCSB_E_NOMEM;
            free(abs);
        } else if (strcmp(a, "--timeout") == 0) {
            char *end = NULL;
            errno = 0;
            double secs = strtod(v, &end);
            if (errno || end == v || *end || !(secs > 0) || secs > 1e9)
                return fail("--timeout %s: not a positive number of seconds", v);
            o->timeout_ms = (uint64_t)(secs * 1000.0 + 0.5);
        } else if (strcmp(a, "--env") == 0) {
            const char *eq = strchr(v, '=');
            if (!eq || eq == v)
                return fail("--env %s: expected NAME=VALUE", v);
            char *copy = strdup(v);
            if (!copy || push(&o->env, &o->n_env, copy) < 0) {
                free(copy);
                return fail("%s", "out of memory");
            }
        } else if (strcmp(a, "--events") == 0) {
            o->events_path = v;
        } else if (strcmp(a, "--platform") == 0) {
            if (strcmp(v, "linux") != 0 && strcmp(v, "macos") != 0)
                return fail("--platform %s: expected linux or macos", v);
            o->platform = v;
        }
        if (r < 0)
            return fail("%s %s: invalid value", a, v);
    }
    for (; i < argc; i++) {
        char *copy = strdup(argv[i]);
        if (!copy || push(&o->cmd, &o->n_cmd, copy) < 0) {
            free(copy);
            return fail("%s", "out of memory");
        }
    }
    return 0;
}

void run_opts_free(struct run_opts *o)
{
    ccsb_spec_free(o->spec);
    for (size_t i = 0; i < o->n_env; i++)
        free(o->env[i]);
    free(o->env);
    for (size_t i = 0; i < o->n_cmd; i++)
        free(o->cmd[i]);
    free(o->cmd);
    memset(o, 0, sizeof *o);
}
