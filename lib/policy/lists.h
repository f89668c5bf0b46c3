/*
 * The built-in lists, kept in one place (lists.c) and documented in
 * docs/policy-lists.md. Each list is NULL-terminated.
 */
#ifndef CCSB_POLICY_LISTS_H
#define CCSB_POLICY_LISTS_H

/* Environment variables that inject code into a process (LD_PRELOAD,
 * NODE_OPTIONS, BASH_ENV, ...): stripped for every backend. */
extern const char *const policy_env_strip[];
/* Prefixes whose every variable is stripped (DYLD_, ...). */
extern const char *const policy_env_strip_prefixes[];

/* 1 when the variable name must be stripped from a sandboxed environment. */
int policy_env_is_stripped(const char *name);

/* Prefixes a spec may not set at all (LD_, DYLD_): the dynamic loader of
 * whichever process first receives the environment acts on them. */
extern const char *const policy_env_forbidden_prefixes[];
int policy_env_is_forbidden(const char *name);

#endif
