/*
 * Test fixtures for the Seatbelt generator: a fake filesystem (symlinks and
 * existing paths) behind the policy resolver, and policy fixtures loaded
 * from JSON (tests/seatbelt/policies/NAME.json): the resolved policy written
 * out by hand, plus the profile options and the fake filesystem. See
 * tests/seatbelt/README.md for the format.
 */
#ifndef CCSB_TESTS_SEATBELT_FIXTURE_H
#define CCSB_TESTS_SEATBELT_FIXTURE_H

#include <stddef.h>

#include "backend/seatbelt_profile.h"
#include "policy/policy.h"
#include "util/strv.h"

/* A fake filesystem: symlinks (link -> absolute target) and the canonical
 * paths that exist (their ancestors exist too). */
struct fake_fs {
    struct strv link_from;
    struct strv link_to;
    struct strv exists;
    unsigned calls; /* resolver calls, for tests */
};

/* realpath(3) over the fake filesystem: NULL when the path does not exist
 * or a symlink loop is found. userdata is the struct fake_fs. */
char *fake_resolve(const char *path, void *userdata);
/* policy_host.kind over the fake filesystem: every existing path is a
 * directory (1), anything else missing (-1). */
int fake_kind(const char *path, void *userdata);
void fake_fs_clear(struct fake_fs *fs);

/* Adds macOS's own symlinks (/tmp, /var, /etc -> /private/...) and
 * their targets as existing directories. */
void fake_fs_macos(struct fake_fs *fs);

struct fixture {
    struct ccsb_policy policy; /* owned, built by hand */
    struct fake_fs fs;
    struct policy_host host;
    struct seatbelt_profile_opts opts;
    char *session_id, *exec_tag, *workdir, *helper_path; /* opts strings */
    char *name;
};

/* Loads a fixture file; 0 or -1 with a message in err. */
int fixture_load(const char *file, struct fixture *fx, char *err, size_t errlen);
void fixture_free(struct fixture *fx);

/* Helpers for building policies in code. */
void fx_paths_add(struct policy_paths *ps, const char *path, const char *resolved);
void fx_paths_clear(struct policy_paths *ps);
void fx_policy_clear(struct ccsb_policy *p);

/* Reads a whole file (malloc'd, NUL-terminated) or NULL. */
char *read_file(const char *path, size_t *len);

#endif
