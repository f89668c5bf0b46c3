/*
 * ccsb_explain: the resolved policy as text for a person, then the
 * backend's own translation of it, so a user can see why a path is blocked.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ccsandbox/ccsandbox.h"
#include "backend/explain.h"
#include "policy/lists.h"
#include "policy/policy.h"
#include "spec/spec.h"
#include "util/err.h"

static void put_paths(FILE *f, const char *title, const struct policy_paths *ps)
{
    fprintf(f, "%s:\n", title);
    if (ps->n == 0)
        fprintf(f, "  (none)\n");
    for (size_t i = 0; i < ps->n; i++) {
        const struct policy_path *p = &ps->v[i];
        fprintf(f, "  %s", p->path);
        if (p->is_glob)
            fprintf(f, "  [glob]");
        else if (p->resolved)
            fprintf(f, "  [also as %s]", p->resolved);
        if (!p->is_glob && !p->exists)
            fprintf(f, "  [missing: blocked anyway]");
        fputc('\n', f);
    }
}

static void put_policy(FILE *f, const struct ccsb_spec *spec, const struct ccsb_policy *p)
{
    fprintf(f, "mode: %s\n", ccsb_mode_name(p->mode));
    fprintf(f, "backend requested: %s\n", ccsb_backend_name(spec->backend));
    fprintf(f, "workdir (guest): %s\n", p->guest_workdir ? p->guest_workdir : spec_workdir(spec));
    fprintf(f, "mounts (host -> guest):\n");
    if (p->n_mounts == 0)
        fprintf(f, "  (none)\n");
    for (size_t i = 0; i < p->n_mounts; i++)
        fprintf(f, "  %s %s -> %s\n", p->mounts[i].writable ? "rw" : "ro", p->mounts[i].host,
                p->mounts[i].guest);
    put_paths(f, "writable roots", &p->writable_roots);
    put_paths(f, "read-denied", &p->deny_read);
    put_paths(f, "write-denied", &p->deny_write);
    fprintf(f, "deny-write globs (create-time):\n");
    if (p->deny_write_globs.n == 0)
        fprintf(f, "  (none)\n");
    for (size_t i = 0; i < p->deny_write_globs.n; i++)
        fprintf(f, "  %s\n", p->deny_write_globs.v[i]);
    put_paths(f, "exec grant roots", &p->exec_grant_roots);
    fprintf(f, "environment:\n  removed:");
    for (size_t i = 0; policy_env_strip[i]; i++)
        fprintf(f, " %s", policy_env_strip[i]);
    for (size_t i = 0; policy_env_strip_prefixes[i]; i++)
        fprintf(f, " %s*", policy_env_strip_prefixes[i]);
    fprintf(f, "\n  set:");
    for (size_t i = 0; i < p->env_set_names.n; i++)
        fprintf(f, " %s=%s", p->env_set_names.v[i], p->env_set_values.v[i]);
    fprintf(f, "%s\n", p->env_set_names.n ? "" : " (nothing beyond the backend's own)");
    fprintf(f, "network: %s\n",
            p->network_enabled ? "through the session's proxies (allowlist applies)"
                               : "disabled (the proxies refuse every connection)");
    fprintf(f, "egress allowlist additions:");
    for (size_t i = 0; i < spec->egress_allow.n; i++)
        fprintf(f, " %s", spec->egress_allow.v[i]);
    fprintf(f, "%s\n", spec->egress_allow.n ? "" : " (none)");
}

CCSB_API int ccsb_explain(const ccsb_spec *spec, const char *platform, char **out_text,
                          char *errbuf, size_t errbuf_len)
{
    if (!spec || !out_text)
        return errf(errbuf, errbuf_len, CCSB_E_INVAL, "spec/out_text: NULL");
    *out_text = NULL;
    if (!platform) {
#ifdef __APPLE__
        platform = "macos";
#else
        platform = "linux";
#endif
    }
    if (strcmp(platform, "linux") != 0 && strcmp(platform, "macos") != 0)
        return errf(errbuf, errbuf_len, CCSB_E_INVAL, "platform: expected linux or macos");
    int r = spec_validate(spec, errbuf, errbuf_len);
    if (r < 0)
        return r;
    struct ccsb_policy *p = NULL;
    struct policy_host host = {.home = getenv("HOME")};
    r = policy_build(spec, &host, &p, errbuf, errbuf_len);
    if (r < 0)
        return r;
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (!f) {
        policy_free(p);
        return errf(errbuf, errbuf_len, CCSB_E_NOMEM, "out of memory");
    }
    fprintf(f, "platform: %s\n", platform);
    put_policy(f, spec, p);
    r = explain_backend(f, spec, p, platform, errbuf, errbuf_len);
    policy_free(p);
    if (fclose(f) != 0 || r < 0) {
        free(buf);
        return r < 0 ? r : errf(errbuf, errbuf_len, CCSB_E_NOMEM, "out of memory");
    }
    *out_text = buf;
    return 0;
}
