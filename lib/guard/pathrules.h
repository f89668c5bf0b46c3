/*
 * Protected paths that did not exist at launch.
 *
 * bubblewrap can only mount over something that exists, so a mandatory
 * deny-write path that is missing (<workspace>/.bashrc, .git/hooks,
 * .vscode, ...) is held by the guard instead: a rule is an anchor (the
 * deepest directory of the path that existed at launch, pinned by an fd
 * and known by device and inode) and the missing components below it.
 *
 * A name (a directory fd and a final component) touches a rule when it is
 * one of the rule's chain nodes -- anchor/C1, anchor/C1/C2, ..., the
 * protected path itself -- whose parent exists now, or when it lies inside
 * the protected path should that exist now as a directory (the host made
 * it during the session). The chain is looked up afresh on every check, so
 * what the host creates meanwhile is covered from the moment it exists.
 *
 * Identities are compared by device and inode, so every spelling of a path
 * (symlinks, bind mounts at another guest path, "..") is the same.
 */
#ifndef CCSB_GUARD_PATHRULES_H
#define CCSB_GUARD_PATHRULES_H

#include <stddef.h>
#include <sys/types.h>

struct guard_path_rule;

struct path_rule {
    int anchor_fd; /* O_PATH directory */
    int owns_fd;   /* 0: anchor_fd belongs to an earlier rule with the same anchor */
    int same_c1;   /* the rule before has the same anchor and first component */
    dev_t dev;
    ino_t ino;
    int file_only; /* one component, a regular file at launch: only the name
                    * (and the object behind it) are checked, no "inside" */
    char **comp;   /* the components below the anchor, at least one */
    size_t ncomp;
    char *shown;   /* "<anchor>/<rest>" for messages */
};

struct path_rules {
    struct path_rule *v;
    size_t n;
};

/* Opens every anchor (with the caller's identity). 0, CCSB_E_POLICY naming
 * the rule (an anchor that is gone or not a directory: nothing would be
 * enforced), or CCSB_E_NOMEM. */
int path_rules_init(struct path_rules *pr, const struct guard_path_rule *rules, size_t n,
                    char *err, size_t errlen);
void path_rules_clear(struct path_rules *pr);

/*
 * May the name `name` in directory dirfd be created, replaced, moved,
 * linked from or opened for writing? 0: yes; 1: no, *which is the rule's
 * path; -errno: the check itself failed (the caller denies).
 */
int path_rules_check(const struct path_rules *pr, int dirfd, const char *name,
                     const char **which);

/*
 * The same for an object reached without a name (a reopened
 * /proc/self/fd/N): refused when it is a chain node or the protected path,
 * or could lie inside a protected directory that exists now.
 */
int path_rules_check_obj(const struct path_rules *pr, int objfd, const char **which);

/*
 * Is the object behind another name (a hard link: st_nlink > 1) a
 * protected file, or a node of a protected chain, as the rules stand now?
 * Unlike path_rules_check_obj, a file that could merely lie inside a
 * protected directory is not refused: it has a name outside it, which the
 * caller checked. 0: no; 1: yes, *which is the rule's path; -errno.
 */
int path_rules_check_ident(const struct path_rules *pr, int objfd, const char **which);

#endif
