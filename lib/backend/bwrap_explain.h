/* The bubblewrap part of ccsb_explain (see bwrap_explain.c). */
#ifndef CCSB_BACKEND_BWRAP_EXPLAIN_H
#define CCSB_BACKEND_BWRAP_EXPLAIN_H

#include <stddef.h>
#include <stdio.h>

struct ccsb_policy;

/* Writes the plan's decisions, placeholders and the exact bwrap argv to f.
 * 0, or CCSB_E_POLICY/CCSB_E_NOMEM with err set (what launch would say). */
int bwrap_explain(FILE *f, const struct ccsb_policy *p, char *err, size_t errlen);

#endif
