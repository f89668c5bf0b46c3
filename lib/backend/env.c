/* The command's environment, the same recipe for every backend. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "backend/backend.h"
#include "core/exec_req.h"
#include "core/session.h"
#include "policy/lists.h"
#include "spec/spec.h"
#include "util/strv.h"

/* Sets "NAME=VALUE" in out, replacing an earlier definition of NAME; with
 * "NAME+=VALUE", appends VALUE (after a space) to an earlier definition. */
static int env_put(struct strv *out, char *entry)
{
    if (!entry)
        return -1;
    size_t len = strcspn(entry, "=");
    int append = len > 0 && entry[len] == '=' && entry[len - 1] == '+';
    size_t nlen = append ? len - 1 : len;
    if (append) /* "NAME+=VALUE" -> "NAME=VALUE" */
        memmove(entry + nlen, entry + len, strlen(entry + len) + 1);
    for (size_t i = 0; i < out->n; i++) {
        if (strncmp(out->v[i], entry, nlen) == 0 && out->v[i][nlen] == '=') {
            if (append && out->v[i][nlen + 1]) {
                char *both = NULL;
                if (asprintf(&both, "%s %s", out->v[i], entry + nlen + 1) < 0) {
                    free(entry);
                    return -1;
                }
                free(entry);
                entry = both;
            }
            free(out->v[i]);
            out->v[i] = entry;
            return 0;
        }
    }
    return strv_push_owned(out, entry);
}

const char *backend_no_proxy(const struct ccsb_spec *spec)
{
    for (size_t i = 0; i < spec->egress_allow.n; i++) {
        const char *e = spec->egress_allow.v[i];
        size_t n = e[0] == '[' ? strcspn(e, "]") + 1 : strcspn(e, ":");
        if ((n == 9 && strncasecmp(e, "localhost", 9) == 0) || strncmp(e, "127.", 4) == 0 ||
            (n == 5 && strncmp(e, "[::1]", 5) == 0) || strcmp(e, "::1") == 0)
            return "";
    }
    return "localhost,127.0.0.1,::1";
}

int backend_proxy_env(const struct backend_proxies *p, struct strv *f)
{
    static const char *const http[] = {
        "HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy",
        "npm_config_proxy", "npm_config_https_proxy", /* npm, and yarn 1 reads them */
        "YARN_HTTP_PROXY", "YARN_HTTPS_PROXY",        /* yarn 2+ */
        "PIP_PROXY", "CARGO_HTTP_PROXY", NULL,
    };
    int r = 0;
    for (size_t i = 0; http[i]; i++)
        r |= strv_pushf(f, "%s=%s", http[i], p->http_url);
    r |= strv_pushf(f, "ALL_PROXY=%s", p->socks_url) | strv_pushf(f, "all_proxy=%s", p->socks_url);
    r |= strv_pushf(f, "NO_PROXY=%s", p->no_proxy) | strv_pushf(f, "no_proxy=%s", p->no_proxy) |
         strv_pushf(f, "npm_config_noproxy=%s", p->no_proxy);
    if (p->java_port > 0) {
        /* The JVM ignores the variables above; its own properties do it. */
        const char *nph = p->no_proxy[0] ? " -Dhttp.nonProxyHosts=localhost|127.*|[::1]" : "";
        r |= strv_pushf(f,
                        "JAVA_TOOL_OPTIONS+=-Dhttp.proxyHost=127.0.0.1 -Dhttp.proxyPort=%d "
                        "-Dhttps.proxyHost=127.0.0.1 -Dhttps.proxyPort=%d%s",
                        p->java_port, p->java_port, nph);
    }
    return r ? -1 : 0;
}

static char *join(const char *name, const char *value)
{
    size_t a = strlen(name), b = strlen(value);
    char *e = malloc(a + b + 2);
    if (!e)
        return NULL;
    memcpy(e, name, a);
    e[a] = '=';
    memcpy(e + a + 1, value, b + 1);
    return e;
}

int backend_build_env(const struct ccsb_session *s, const struct ccsb_exec_req *req,
                      char *const *inherited, const char *const *forced, struct strv *out)
{
    const struct ccsb_spec *spec = s->spec;
    for (size_t i = 0; inherited && inherited[i]; i++) {
        const char *e = inherited[i];
        const char *eq = strchr(e, '=');
        char name[256];
        size_t len = eq ? (size_t)(eq - e) : 0;
        if (len == 0 || len >= sizeof name)
            continue; /* malformed, or no legitimate name is this long */
        memcpy(name, e, len);
        name[len] = 0;
        if (policy_env_is_stripped(name))
            continue;
        if (env_put(out, strdup(e)) < 0)
            return -1;
    }
    /* The host's explicit choices (spec, then exec) are trusted as given. */
    for (size_t i = 0; i < spec->env_names.n; i++)
        if (env_put(out, join(spec->env_names.v[i], spec->env_values.v[i])) < 0)
            return -1;
    for (size_t i = 0; req && i < req->env_names.n; i++)
        if (env_put(out, join(req->env_names.v[i], req->env_values.v[i])) < 0)
            return -1;
    for (size_t i = 0; forced && forced[i]; i++)
        if (env_put(out, strdup(forced[i])) < 0)
            return -1;
    return 0;
}
