/* Exported egress inspection: argument checks and error mapping only. */
#include <stdlib.h>
#include <string.h>

#include "ccsandbox/ccsandbox.h"
#include "egress/rules.h"
#include "spec/spec.h"

CCSB_API int ccsb_spec_check_host(const ccsb_spec *spec, const char *host, int *out_allowed,
                                  char **out_reason)
{
    if (out_reason)
        *out_reason = NULL;
    if (!spec || !host || !out_allowed)
        return CCSB_E_INVAL;
    *out_allowed = 0;

    struct egress_target t;
    char why[320];
    if (egress_target_parse(host, &t, why, sizeof why) < 0) {
        if (out_reason && !(*out_reason = strdup(why)))
            return CCSB_E_NOMEM;
        return CCSB_E_INVAL;
    }
    struct egress_rules *rules = NULL;
    int rc = egress_rules_from_spec(spec, &rules, why, sizeof why);
    if (rc < 0) {
        if (out_reason && !(*out_reason = strdup(why)))
            return CCSB_E_NOMEM;
        return rc;
    }
    struct egress_verdict v;
    egress_rules_judge(rules, &t, &v);
    egress_rules_free(rules);
    if (out_reason && !(*out_reason = strdup(v.reason)))
        return CCSB_E_NOMEM;
    *out_allowed = v.allowed;
    return 0;
}
