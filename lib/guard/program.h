/* Internal to lib/guard: the compiled program and its test-only builder. */
#ifndef CCSB_GUARD_PROGRAM_H
#define CCSB_GUARD_PROGRAM_H

#include <stddef.h>

struct guard_program;

/* A program that traps only getppid() to a listener (for the probe). */
int guard_program_build_probe(struct guard_program **out, char *err, size_t errlen);
/* Tests only: guard_program_build's rules as libseccomp's plain chain of
 * comparisons instead of its binary tree (the two must decide alike). */
struct guard_filter_cfg;
int guard_program_build_chain(const struct guard_filter_cfg *cfg, struct guard_program **out,
                              char *err, size_t errlen);

#endif
