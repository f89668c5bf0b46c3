/*
 * The macOS part of ccsb_explain: the Seatbelt profile this policy would
 * run under. Works on any host; off macOS the standard macOS symlinks
 * (/tmp, /var, /etc -> /private/...) stand in for the host's resolver.
 */
#include "backend/seatbelt_explain.h"

#include <stdlib.h>

#include "backend/seatbelt_profile.h"
#include "policy/policy.h"
#include "spec/spec.h"

int seatbelt_explain(FILE *f, const struct ccsb_spec *spec, const struct ccsb_policy *p,
                     char *err, size_t errlen)
{
    struct seatbelt_profile_opts o = {
        .preset = SEATBELT_PRESET_SESSION,
        .session_id = spec->session_id,
    };
#ifndef __APPLE__
    struct policy_host mac = {.resolve = seatbelt_resolve_macos_defaults};
    o.host = &mac;
#endif
    char why[512];
    if (seatbelt_policy_check(p, why, sizeof(why)) < 0)
        fprintf(f, "seatbelt: this spec cannot launch on macOS: %s\n", why);
    char *text = NULL;
    int r = seatbelt_profile_generate(p, &o, &text, err, errlen);
    if (r < 0)
        return r;
    fprintf(f, "seatbelt profile (for sandbox-exec -p; the proxy ports, the session tmp and "
               "the session id are filled in at launch):\n%s", text);
    free(text);
    return 0;
}
