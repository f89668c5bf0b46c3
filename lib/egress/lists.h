/*
 * The built-in egress lists, as data in one place (lists.c), each entry
 * with a one-word reason. docs/egress.md mirrors them for users.
 */
#ifndef CCSB_EGRESS_LISTS_H
#define CCSB_EGRESS_LISTS_H

struct egress_list_entry {
    const char *entry;
    const char *why; /* one word: llm, git, registry, models, metadata, telemetry, ... */
};

/* Each list ends with {NULL, NULL}. */
extern const struct egress_list_entry egress_baseline_allow[];
extern const struct egress_list_entry egress_github_allow[];
extern const struct egress_list_entry egress_baseline_deny[];

#endif
