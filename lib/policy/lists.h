/*
 * The built-in lists, kept in one place (lists.c) and documented in
 * docs/policy-lists.md (a unit test keeps the two in step). Every backend
 * reads these same tables: the bubblewrap and Seatbelt backends never keep
 * a private copy. Each list ends with a NULL entry.
 */
#ifndef CCSB_POLICY_LISTS_H
#define CCSB_POLICY_LISTS_H

/* One entry of a path list. */
struct policy_entry {
    const char *path;   /* relative to the list's base, or absolute */
    const char *reason; /* one word, for the docs and `ccsb explain` */
    unsigned flags;     /* POLICY_ENTRY_* */
};

/* Waived when the spec sets allowGitConfig (the user runs `git config`). */
#define POLICY_ENTRY_GIT_CONFIG 1u

/*
 * Never writable inside every writable root (bind mounts in chat mode and
 * runnerStateDirs), whether or not they exist: files a person or a tool on
 * the host later executes or trusts without looking (shell start-up files,
 * editor tasks, agent configuration, direnv). Relative to the root.
 */
extern const struct policy_entry policy_deny_write_root[];

/*
 * Never writable inside a repository's git directory: `<root>/.git` for the
 * repository at the root of each writable root, and for a git worktree
 * (where `<root>/.git` is a file) its own git dir and the common dir.
 * Relative to the git dir; may contain globs.
 */
extern const struct policy_entry policy_deny_write_gitdir[];

/* Read-denied secrets under the host's home directory (relative to it). */
extern const struct policy_entry policy_secret_home[];

/*
 * Read-denied system secrets (absolute). On Linux the backend masks these
 * inside its read-only /etc; on macOS the profile denies them.
 */
extern const struct policy_entry policy_secret_system[];

/* Environment variables that inject code into a process (LD_PRELOAD,
 * NODE_OPTIONS, BASH_ENV, ...), redirect a tool to host state (GIT_DIR) or
 * carry a host credential (GITHUB_TOKEN): stripped from the inherited
 * environment for every backend. A host passes what a command needs
 * explicitly through the spec's env. */
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
