/*
 * Finding ccsb-init. It is run as PID 1 of every sandbox and, as the
 * janitor, on the host itself, so it must come from a place only the host
 * user (or root) controls: never PATH, never an environment variable.
 *
 * Candidates, relative to the object this code was loaded from (dladdr):
 *   <libdir>/../libexec/ccsandbox/ccsb-init   an installed library
 *   <dir>/../helper/ccsb-init, ../../helper, ../../../helper
 *                                              an uninstalled build tree (the
 *                                              library in build/lib, or a test
 *                                              program in build/tests/...),
 *                                              also when the tree was copied
 * then the configured libexecdir and the build directory baked in at
 * configure time. A candidate must be a regular executable owned by root or
 * by us and writable by nobody else, in a directory writable by nobody
 * else. The backend also refuses a helper inside a writable root of the
 * session.
 */
#include "backend/bwrap_locate.h"

#include <dlfcn.h>
#include <errno.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "backend/bwrap_paths.h"
#include "ccsandbox/ccsandbox.h"
#include "config.h"
#include "util/err.h"

static int trusted_owner(const struct stat *st)
{
    return st->st_uid == 0 || st->st_uid == geteuid();
}

/* 0 when path is a helper we may run, else a short reason. */
static const char *check_candidate(const char *path)
{
    struct stat st;
    if (stat(path, &st) < 0)
        return "missing";
    if (!S_ISREG(st.st_mode) || !(st.st_mode & S_IXUSR))
        return "not an executable file";
    if (!trusted_owner(&st) || (st.st_mode & (S_IWGRP | S_IWOTH)))
        return "writable by another user";
    char *dup = strdup(path);
    if (!dup)
        return "out of memory";
    const char *dir = dirname(dup);
    struct stat dst;
    const char *why = NULL;
    if (stat(dir, &dst) < 0)
        why = "its directory is missing";
    else if (!trusted_owner(&dst) || (dst.st_mode & (S_IWGRP | S_IWOTH)))
        why = "its directory is writable by another user";
    free(dup);
    return why;
}

static char *candidate(const char *dir, const char *rel)
{
    char *joined = NULL;
    if (asprintf(&joined, "%s/%s", dir, rel) < 0)
        return NULL;
    char *real = realpath(joined, NULL);
    free(joined);
    return real;
}

int bwrap_locate_helper(char **out, char *err, size_t errlen)
{
    *out = NULL;
    static const char *const rel[] = {
        "../libexec/ccsandbox/ccsb-init", "../helper/ccsb-init", "../../helper/ccsb-init",
        "../../../helper/ccsb-init", NULL,
    };
    Dl_info info;
    char *self = NULL;
    if (dladdr((void *)bwrap_locate_helper, &info) && info.dli_fname)
        self = realpath(info.dli_fname, NULL);
    if (!self)
        self = realpath("/proc/self/exe", NULL);
    char tried[1024] = "";
    size_t used = 0;
    if (self) {
        char *dir = dirname(self);
        for (size_t i = 0; rel[i]; i++) {
            char *c = candidate(dir, rel[i]);
            if (!c)
                continue;
            const char *why = check_candidate(c);
            if (!why) {
                free(self);
                *out = c;
                return 0;
            }
            int n = snprintf(tried + used, sizeof tried - used, "%s%s (%s)", used ? ", " : "",
                             c, why);
            if (n > 0 && (size_t)n < sizeof tried - used)
                used += (size_t)n;
            free(c);
        }
        free(self);
    }
    static const char *const fixed[] = {CCSB_LIBEXECDIR "/ccsb-init", CCSB_BUILD_HELPER, NULL};
    for (size_t i = 0; fixed[i]; i++) {
        const char *why = check_candidate(fixed[i]);
        if (!why) {
            *out = strdup(fixed[i]);
            return *out ? 0 : errf(err, errlen, CCSB_E_NOMEM, "out of memory");
        }
        int n = snprintf(tried + used, sizeof tried - used, "%s%s (%s)", used ? ", " : "",
                         fixed[i], why);
        if (n > 0 && (size_t)n < sizeof tried - used)
            used += (size_t)n;
    }
    return errf(err, errlen, CCSB_E_LAUNCH,
                "cannot find a trustworthy ccsb-init helper (it is installed next to the "
                "library in libexec/ccsandbox); tried: %s",
                tried);
}
