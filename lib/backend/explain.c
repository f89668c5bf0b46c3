#include "backend/explain.h"

#include <string.h>

#include "ccsandbox/ccsandbox.h"
#include "backend/seatbelt_explain.h"
#include "policy/policy.h"

int explain_backend(FILE *f, const struct ccsb_spec *spec, const struct ccsb_policy *p,
                    const char *platform, char *err, size_t errlen)
{
    if (strcmp(platform, "macos") == 0)
        return seatbelt_explain(f, spec, p, err, errlen);
    else
        fprintf(f, "bubblewrap arguments: not available: this build has no bubblewrap "
                   "backend yet\n");
    return 0;
}
