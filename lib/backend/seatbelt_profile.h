/*
 * The Seatbelt profile generator: a pure function from the resolved policy
 * (plus a few facts about the session) to SBPL text for `sandbox-exec -p`.
 * It translates; it never re-decides policy. Runs on every platform so the
 * profile can be reviewed anywhere (`ccsb explain --platform macos`) and is
 * tested with golden files. docs/seatbelt.md explains every rule.
 *
 * The only I/O is the resolver (struct policy_host.resolve), used for
 * spellings the policy does not carry: the resolved form of a path that
 * does not exist yet (its deepest existing ancestor is resolved and the
 * rest appended), of a glob's fixed directory prefix, of $HOME and the
 * workdir of the terminal preset, and of the dangerous-binary list.
 */
#ifndef CCSB_BACKEND_SEATBELT_PROFILE_H
#define CCSB_BACKEND_SEATBELT_PROFILE_H

#include <stddef.h>
#include <stdint.h>

struct ccsb_policy;
struct policy_host;

#define SEATBELT_PRESET_SESSION 0  /* an agent session: the full policy */
#define SEATBELT_PRESET_TERMINAL 1 /* the user's terminal: see below */

struct seatbelt_profile_opts {
    int preset;             /* SEATBELT_PRESET_* */
    /* The session id; NULL before launch ("unassigned", for explain). */
    const char *session_id;
    /* Set when the profile is for one exec only: becomes part of the tag. */
    const char *exec_tag;
    /* The session's proxy ports on host loopback; 0 when not assigned yet
     * (explain): the allow rule is then shown as a comment and nothing but
     * DNS is reachable. */
    uint16_t http_port;
    uint16_t socks_port;
    /* The helper that sandbox-exec starts (ccsb-init), allowed to execute
     * even when it sits under a writable root; NULL: none. */
    const char *helper_path;
    /*
     * Terminal preset only: the host workdir. The terminal preset makes
     * $HOME (policy->home), this workdir and the session tmp writable, keeps
     * the secret set (policy->deny_read) read-denied and un-movable, and
     * leaves the network and exec open.
     */
    const char *workdir;
    /* Resolver for the extra spellings above; NULL host or NULL resolve
     * means realpath(3). */
    const struct policy_host *host;
};

/*
 * The message tag every deny carries: "ccsb:<session>" or
 * "ccsb:<session>:<exec>", with every byte outside [A-Za-z0-9._-] written
 * as %XX so the tag is safe in SBPL, in a log predicate and in a log line.
 * Returns a malloc'd string or NULL (ENOMEM).
 */
char *seatbelt_message_tag(const char *session_id, const char *exec_tag);

/*
 * Generates the profile into *out (malloc'd). Returns 0, CCSB_E_INVAL (bad
 * opts), CCSB_E_NOMEM, or CCSB_E_POLICY when a policy path cannot be
 * written as a rule that matches exactly it (not absolute, a "." or ".."
 * component, a control byte, too long); err names the entry.
 */
int seatbelt_profile_generate(const struct ccsb_policy *p, const struct seatbelt_profile_opts *opts,
                              char **out, char *err, size_t errlen);

/*
 * The standard symlinks of a macOS system (/tmp, /var, /etc ->
 * /private/...), as a resolver: explains a macOS profile on a host that
 * is not one. Every other path resolves to NULL (kept as written).
 */
char *seatbelt_resolve_macos_defaults(const char *path, void *userdata);

/*
 * Checks that the policy can run under Seatbelt at all, which has no mount
 * namespace: a bind mount must appear at its host path. Returns 0 or
 * CCSB_E_POLICY with the mount named in err.
 */
int seatbelt_policy_check(const struct ccsb_policy *p, char *err, size_t errlen);

#endif
