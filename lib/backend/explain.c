#include "backend/explain.h"

#include <string.h>

#include "ccsandbox/ccsandbox.h"
#include "backend/seatbelt_explain.h"
#include "policy/policy.h"
#ifdef __linux__
#include "backend/bwrap_explain.h"
#endif

int explain_backend(FILE *f, const struct ccsb_spec *spec, const struct ccsb_policy *p,
                    const char *platform, char *err, size_t errlen)
{
    if (strcmp(platform, "macos") == 0)
        return seatbelt_explain(f, spec, p, err, errlen);
#ifdef __linux__
    return bwrap_explain(f, p, err, errlen);
#else
    fprintf(f, "bubblewrap arguments: not available: the bubblewrap backend is Linux-only\n");
    return 0;
#endif
}
