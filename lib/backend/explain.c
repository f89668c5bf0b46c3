#include "backend/explain.h"

#include <string.h>

#include "ccsandbox/ccsandbox.h"
#include "policy/policy.h"

int explain_backend(FILE *f, const struct ccsb_spec *spec, const struct ccsb_policy *p,
                    const char *platform, char *err, size_t errlen)
{
    if (strcmp(platform, "macos") == 0)
        fprintf(f, "seatbelt profile: not available: this build has no Seatbelt profile "
                   "generator yet\n");
    else
        fprintf(f, "bubblewrap arguments: not available: this build has no bubblewrap "
                   "backend yet\n");
    return 0;
}
