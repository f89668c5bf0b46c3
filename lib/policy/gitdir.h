/*
 * The repository at the root of a writable root: is `<root>/.git` a
 * directory, a worktree's `.git` file, or missing, and for a worktree where
 * its git dirs are. Reads only the small text files git itself writes.
 */
#ifndef CCSB_POLICY_GITDIR_H
#define CCSB_POLICY_GITDIR_H

#include "policy/policy.h"

#define GIT_DOTGIT_NONE 0 /* missing, or neither a directory nor a file */
#define GIT_DOTGIT_DIR 1
#define GIT_DOTGIT_FILE 2

struct git_repo {
    int dotgit;        /* GIT_DOTGIT_* of <root>/.git */
    char *gitdir;      /* file: the git dir it names (resolved), else NULL */
    char *commondir;   /* file: the common git dir (resolved), else NULL */
    /* The gitdir names this very worktree back and lies at
     * <commondir>/worktrees/<name> of a real repository: `git worktree add`
     * made it, not a `.git` file written to point somewhere else. */
    int verified;
};

/* 0, or CCSB_E_NOMEM. An unreadable or malformed `.git` file is reported as
 * GIT_DOTGIT_FILE with gitdir NULL. */
int git_repo_inspect(const char *root, struct git_repo *out);
void git_repo_clear(struct git_repo *r);

#endif
