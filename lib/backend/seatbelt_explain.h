/* `ccsb explain --platform macos`: the Seatbelt profile for a policy. */
#ifndef CCSB_BACKEND_SEATBELT_EXPLAIN_H
#define CCSB_BACKEND_SEATBELT_EXPLAIN_H

#include <stddef.h>
#include <stdio.h>

struct ccsb_spec;
struct ccsb_policy;

/* Writes the profile (and a note when the spec cannot run under Seatbelt)
 * to f. 0 or the generator's CCSB_E_* code with err set. */
int seatbelt_explain(FILE *f, const struct ccsb_spec *spec, const struct ccsb_policy *p,
                     char *err, size_t errlen);

#endif
