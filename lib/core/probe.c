/*
 * The host probe. It is functional, not "binary on PATH": on Linux it
 * starts bubblewrap once with every namespace we need and, when that fails,
 * reads the host's knobs to say exactly why and how to fix it.
 */
#include "core/probe.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "ccsandbox/ccsandbox.h"
#include "util/json.h"
#include "util/pathsearch.h"

extern char **environ;

#define BWRAP_NOTE "bubblewrap \xe2\x80\x94 namespace isolation, no kernel boundary"

char *probe_find_on_path(const char *name)
{
    return path_search(getenv("PATH"), name);
}

static int read_int_file(const char *path, long *out)
{
    FILE *f = fopen(path, "re");
    if (!f)
        return -1;
    int ok = fscanf(f, "%ld", out) == 1;
    fclose(f);
    return ok ? 0 : -1;
}

static int file_contains(const char *path, const char *needle)
{
    FILE *f = fopen(path, "re");
    if (!f)
        return 0;
    char buf[4096];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    for (char *p = buf; *p; p++)
        if (*p >= 'A' && *p <= 'Z')
            *p = (char)(*p - 'A' + 'a');
    return strstr(buf, needle) != NULL;
}

static int in_container(void)
{
    return access("/.dockerenv", F_OK) == 0 || access("/run/.containerenv", F_OK) == 0 ||
           file_contains("/proc/1/cgroup", "docker") ||
           file_contains("/proc/1/cgroup", "kubepods") ||
           file_contains("/proc/1/cgroup", "lxc");
}

/*
 * Runs `bwrap <the namespaces we use> true` with a bounded wait. Returns 0
 * when it worked, else -1 with bwrap's stderr in *why.
 */
static int bwrap_works(const char *bwrap, char **why)
{
    *why = NULL;
    int errpipe[2];
    if (pipe2(errpipe, O_CLOEXEC) < 0) {
        if (asprintf(why, "pipe: %s", strerror(errno)) < 0)
            *why = NULL;
        return -1;
    }
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
    posix_spawn_file_actions_adddup2(&fa, errpipe[1], 2);
    /* Default dispositions and no blocked signal: bubblewrap inherits an
     * ignored SIGCHLD from the host otherwise, and then waits forever for a
     * child the kernel already reaped. */
    posix_spawnattr_t at;
    sigset_t all, none;
    sigfillset(&all);
    sigemptyset(&none);
    posix_spawnattr_init(&at);
    posix_spawnattr_setsigdefault(&at, &all);
    posix_spawnattr_setsigmask(&at, &none);
    posix_spawnattr_setflags(&at, POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK);
    char *const argv[] = {
        (char *)"bwrap", (char *)"--unshare-all", (char *)"--die-with-parent",
        (char *)"--new-session", (char *)"--ro-bind", (char *)"/", (char *)"/",
        (char *)"--proc", (char *)"/proc", (char *)"--dev", (char *)"/dev",
        (char *)"--cap-drop", (char *)"ALL", (char *)"true", NULL,
    };
    pid_t pid;
    int e = posix_spawn(&pid, bwrap, &fa, &at, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    posix_spawnattr_destroy(&at);
    close(errpipe[1]);
    if (e) {
        close(errpipe[0]);
        if (asprintf(why, "cannot start %s: %s", bwrap, strerror(e)) < 0)
            *why = NULL;
        return -1;
    }
    char buf[2048];
    size_t len = 0;
    int timed_out = 0;
    struct timespec start;
    clock_gettime(CLOCK_MONOTONIC, &start);
    for (;;) {
        struct pollfd p = {.fd = errpipe[0], .events = POLLIN};
        int pr = poll(&p, 1, 200);
        if (pr > 0) {
            ssize_t n = read(errpipe[0], buf + len, sizeof buf - 1 - len);
            if (n > 0) {
                len += (size_t)n;
                if (len < sizeof buf - 1)
                    continue;
            }
            if (n == 0 || len >= sizeof buf - 1)
                break;
        }
        struct timespec now;
        clock_gettime(CLOCK_MONOTONIC, &now);
        if (now.tv_sec - start.tv_sec > 10) {
            kill(pid, SIGKILL);
            timed_out = 1;
            break;
        }
    }
    close(errpipe[0]);
    buf[len] = 0;
    while (len && (buf[len - 1] == '\n' || buf[len - 1] == '\r'))
        buf[--len] = 0;
    int status = 0, r;
    while ((r = waitpid(pid, &status, 0)) < 0 && errno == EINTR)
        ;
    if (r < 0) {
        /* The host ignores SIGCHLD (the kernel reaped it) or reaped it
         * itself: bubblewrap says nothing on stderr when it worked. */
        if (!timed_out && len == 0)
            return 0;
    } else if (WIFEXITED(status) && WEXITSTATUS(status) == 0) {
        return 0;
    }
    *why = strdup(len ? buf : timed_out ? "bubblewrap did not finish within 10 s"
                                        : "bubblewrap failed without a message");
    return -1;
}

/* Explains a failed functional check from the host's knobs. */
char *probe_diagnose_userns(const char *bwrap_err)
{
    long v;
    char *out = NULL;
    int r;
    if (read_int_file("/proc/sys/kernel/unprivileged_userns_clone", &v) == 0 && v == 0)
        r = asprintf(&out, "unprivileged user namespaces are disabled by sysctl "
                           "kernel.unprivileged_userns_clone=0; enable them with "
                           "`sysctl -w kernel.unprivileged_userns_clone=1` (bwrap said: %s)",
                     bwrap_err);
    else if (read_int_file("/proc/sys/user/max_user_namespaces", &v) == 0 && v == 0)
        r = asprintf(&out, "user namespaces are disabled by sysctl user.max_user_namespaces=0; "
                           "enable them with `sysctl -w user.max_user_namespaces=15000` "
                           "(bwrap said: %s)",
                     bwrap_err);
    else if (read_int_file("/proc/sys/kernel/apparmor_restrict_unprivileged_userns", &v) == 0 &&
             v == 1)
        r = asprintf(&out, "AppArmor restricts unprivileged user namespaces "
                           "(kernel.apparmor_restrict_unprivileged_userns=1, Ubuntu 23.10+); "
                           "install an AppArmor profile that grants bwrap `userns`, or run "
                           "`sysctl -w kernel.apparmor_restrict_unprivileged_userns=0` "
                           "(bwrap said: %s)",
                     bwrap_err);
    else if (in_container())
        r = asprintf(&out, "this looks like a container that does not allow creating "
                           "namespaces; run it with user namespaces allowed (e.g. podman/docker "
                           "--security-opt seccomp=unconfined --security-opt apparmor=unconfined, "
                           "or --privileged) (bwrap said: %s)",
                     bwrap_err);
    else
        r = asprintf(&out, "bubblewrap cannot create the sandbox's namespaces: %s", bwrap_err);
    return r < 0 ? NULL : out;
}

static const char *linux_flavour(void)
{
    if (file_contains("/proc/sys/kernel/osrelease", "microsoft") ||
        access("/proc/sys/fs/binfmt_misc/WSLInterop", F_OK) == 0)
        return "wsl2";
    return "linux";
}

struct ccsb_probe_result *probe_run(void)
{
    struct ccsb_probe_result *pr = calloc(1, sizeof *pr);
    if (!pr)
        return NULL;
    pr->microvm_available = 0; /* this build has no microVM backend */
#if defined(__linux__)
    pr->platform = linux_flavour();
    pr->mechanism = "bubblewrap";
    pr->bwrap_path = probe_find_on_path("bwrap");
    if (!pr->bwrap_path) {
        pr->requires_install = 1;
        pr->note = strdup("bubblewrap is not installed");
        pr->hint = strdup(PROBE_BWRAP_INSTALL_HINT);
        pr->missing_packages = strdup("bubblewrap");
    } else {
        char *why = NULL;
        if (bwrap_works(pr->bwrap_path, &why) == 0) {
            pr->available = 1;
            pr->note = strdup(BWRAP_NOTE);
            pr->hint = strdup("");
        } else {
            pr->note = strdup("bubblewrap is installed but cannot create a sandbox here");
            pr->hint = probe_diagnose_userns(why ? why : "unknown error");
            pr->detail = why;
            why = NULL;
        }
        free(why);
        pr->missing_packages = strdup("");
    }
#elif defined(__APPLE__)
    pr->platform = "macos";
    pr->mechanism = "seatbelt";
    if (access("/usr/bin/sandbox-exec", X_OK) == 0) {
        pr->available = 1;
        pr->note = strdup("seatbelt \xe2\x80\x94 sandbox-exec profile, no kernel boundary");
        pr->hint = strdup("");
    } else {
        pr->note = strdup("sandbox-exec is missing");
        pr->hint = strdup("/usr/bin/sandbox-exec ships with macOS; this system lacks it");
    }
    pr->missing_packages = strdup("");
#else
    pr->platform = "other";
    pr->mechanism = "none";
    pr->note = strdup("no OS-native sandbox mechanism is supported on this platform");
    pr->hint = strdup("run on Linux (bubblewrap) or macOS (Seatbelt)");
    pr->missing_packages = strdup("");
#endif
    if (!pr->note || !pr->hint || !pr->missing_packages) {
        probe_free(pr);
        return NULL;
    }
    return pr;
}

void probe_free(struct ccsb_probe_result *pr)
{
    if (!pr)
        return;
    free(pr->note);
    free(pr->hint);
    free(pr->missing_packages);
    free(pr->bwrap_path);
    free(pr->detail);
    free(pr);
}

/* ---- public getters --------------------------------------------------- */

#define PR_STR(field) (pr && pr->field ? pr->field : "")

CCSB_API const char *ccsb_probe_platform(const ccsb_probe_result *pr) { return PR_STR(platform); }
CCSB_API const char *ccsb_probe_mechanism(const ccsb_probe_result *pr) { return PR_STR(mechanism); }
CCSB_API int ccsb_probe_available(const ccsb_probe_result *pr) { return pr ? pr->available : 0; }
CCSB_API int ccsb_probe_requires_install(const ccsb_probe_result *pr)
{
    return pr ? pr->requires_install : 0;
}
CCSB_API const char *ccsb_probe_note(const ccsb_probe_result *pr) { return PR_STR(note); }
CCSB_API const char *ccsb_probe_hint(const ccsb_probe_result *pr) { return PR_STR(hint); }
CCSB_API const char *ccsb_probe_missing_packages(const ccsb_probe_result *pr)
{
    return PR_STR(missing_packages);
}
CCSB_API int ccsb_probe_microvm_available(const ccsb_probe_result *pr)
{
    return pr ? pr->microvm_available : 0;
}

CCSB_API int ccsb_probe_to_json(const ccsb_probe_result *pr, char **out_json)
{
    if (!pr || !out_json)
        return CCSB_E_INVAL;
    *out_json = NULL;
    json_t *o = json_pack("{s:s, s:s, s:b, s:b, s:s, s:s, s:s, s:b}", "platform", pr->platform,
                          "mechanism", pr->mechanism, "available", pr->available,
                          "requiresInstall", pr->requires_install, "note", pr->note, "hint",
                          pr->hint, "missingPackages", pr->missing_packages,
                          "microvmAvailable", pr->microvm_available);
    if (!o)
        return CCSB_E_NOMEM;
    if (pr->bwrap_path)
        json_object_set_new(o, "bwrapPath", json_string(pr->bwrap_path));
    if (pr->detail)
        json_object_set_new(o, "detail", json_string(pr->detail));
    *out_json = json_dump_owned(o);
    json_decref(o);
    return *out_json ? 0 : CCSB_E_NOMEM;
}

CCSB_API int ccsb_probe_startup_message(const ccsb_probe_result *pr, int disabled, char **out)
{
    if (!pr || !out)
        return CCSB_E_INVAL;
    int r;
    if (disabled)
        r = asprintf(out, "agent sandbox DISABLED by --sandbox off");
    else if (pr->available)
        r = asprintf(out, "agent sandbox ON (%s)", pr->note);
    else
        r = asprintf(out, "no OS-native agent sandbox on this host (%s%s%s)", pr->note,
                     pr->hint && *pr->hint ? ": " : "", pr->hint ? pr->hint : "");
    if (r < 0) {
        *out = NULL;
        return CCSB_E_NOMEM;
    }
    return 0;
}
