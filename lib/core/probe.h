/* The host probe: which native backend works here, and if not, why. */
#ifndef CCSB_CORE_PROBE_H
#define CCSB_CORE_PROBE_H

#define PROBE_BWRAP_INSTALL_HINT                                                        \
    "install bubblewrap: `apt-get install bubblewrap` (Debian/Ubuntu), "                \
    "`dnf install bubblewrap` (Fedora), `pacman -S bubblewrap` (Arch), "                \
    "`apk add bubblewrap` (Alpine)"

struct ccsb_probe_result {
    const char *platform;   /* static: linux, wsl2, macos, other */
    const char *mechanism;  /* static: bubblewrap, seatbelt, none */
    int available;
    int requires_install;
    int microvm_available;
    char *note;
    char *hint;
    char *missing_packages;
    char *bwrap_path;       /* NULL when not found */
    char *detail;           /* raw failure text from the functional check */
};

/* Runs the real checks (spawns bwrap once on Linux). Never NULL except on
 * ENOMEM. */
struct ccsb_probe_result *probe_run(void);
void probe_free(struct ccsb_probe_result *pr);

/* Says which host setting forbids user namespaces and how to fix it, from
 * bwrap's error text (malloc'd; NULL on ENOMEM). Also used by the bwrap
 * backend when a launch fails the same way. */
char *probe_diagnose_userns(const char *bwrap_err);

/* Finds an executable named name on PATH (malloc'd) or NULL. */
char *probe_find_on_path(const char *name);

#endif
