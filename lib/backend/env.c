/* The command's environment, the same recipe for every backend. */
#include <stdlib.h>
#include <string.h>

#include "backend/backend.h"
#include "core/exec_req.h"
#include "core/session.h"
#include "policy/lists.h"
#include "spec/spec.h"
#include "util/strv.h"

/* Sets "NAME=VALUE" in out, replacing an earlier definition of NAME. */
static int env_put(struct strv *out, char *entry)
{
    if (!entry)
        return -1;
    size_t len = strcspn(entry, "=");
    for (size_t i = 0; i < out->n; i++) {
        if (strncmp(out->v[i], entry, len) == 0 && out->v[i][len] == '=') {
            free(out->v[i]);
            out->v[i] = entry;
            return 0;
        }
    }
    return strv_push_owned(out, entry);
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
