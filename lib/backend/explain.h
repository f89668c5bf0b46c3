/* The backend part of ccsb_explain: how each backend translates a policy. */
#ifndef CCSB_BACKEND_EXPLAIN_H
#define CCSB_BACKEND_EXPLAIN_H

#include <stddef.h>
#include <stdio.h>

struct ccsb_spec;
struct ccsb_policy;

/* Writes the bubblewrap argv (platform "linux") or the SBPL profile
 * ("macos") for the policy to f. 0 or a CCSB_E_* code with err set. */
int explain_backend(FILE *f, const struct ccsb_spec *spec, const struct ccsb_policy *p,
                    const char *platform, char *err, size_t errlen);

#endif
