#include "guard/glob.h"

#include <fnmatch.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ccsandbox/ccsandbox.h"
#include "guard/guard.h"
#include "util/err.h"

static int check_one(const char *g, size_t i, char *err, size_t errlen)
{
    if (!g)
        return errf(err, errlen, CCSB_E_SPEC, "denyWriteGlobs[%zu]: missing", i);
    size_t len = strlen(g);
    if (len == 0 || (len == 1 && g[0] == '/'))
        return errf(err, errlen, CCSB_E_SPEC, "denyWriteGlobs[%zu]: empty pattern", i);
    size_t body = g[len - 1] == '/' ? len - 1 : len;
    if (body > NAME_MAX)
        return errf(err, errlen, CCSB_E_SPEC,
                    "denyWriteGlobs[%zu]: longer than a file name (%d bytes)", i, NAME_MAX);
    if (memchr(g, '/', body))
        return errf(err, errlen, CCSB_E_SPEC,
                    "denyWriteGlobs[%zu]: \"%s\" contains '/'; patterns match the final "
                    "path component only (a trailing '/' makes it directory-shaped)",
                    i, g);
    if ((body == 1 && g[0] == '.') || (body == 2 && g[0] == '.' && g[1] == '.'))
        return errf(err, errlen, CCSB_E_SPEC, "denyWriteGlobs[%zu]: \"%s\" is not a name", i, g);
    return 0;
}

int guard_globs_validate(const char *const *globs, size_t n, char *err, size_t errlen)
{
    for (size_t i = 0; i < n; i++) {
        int r = check_one(globs[i], i, err, errlen);
        if (r)
            return r;
    }
    return 0;
}

int glob_set_init(struct glob_set *gs, const char *const *globs, char *err, size_t errlen)
{
    memset(gs, 0, sizeof gs[0]);
    size_t n = 0;
    while (globs && globs[n])
        n++;
    int r = guard_globs_validate(globs, n, err, errlen);
    if (r)
        return r;
    if (n == 0)
        return 0;
    gs->pat = calloc(n, sizeof *gs->pat);
    gs->dir_only = calloc(n, sizeof *gs->dir_only);
    if (!gs->pat || !gs->dir_only)
        goto nomem;
    for (size_t i = 0; i < n; i++) {
        size_t len = strlen(globs[i]);
        gs->dir_only[i] = globs[i][len - 1] == '/';
        gs->pat[i] = strndup(globs[i], gs->dir_only[i] ? len - 1 : len);
        if (!gs->pat[i])
            goto nomem;
        gs->n = i + 1;
    }
    return 0;
nomem:
    glob_set_clear(gs);
    return errf(err, errlen, CCSB_E_NOMEM, "out of memory");
}

void glob_set_clear(struct glob_set *gs)
{
    for (size_t i = 0; i < gs->n; i++)
        free(gs->pat[i]);
    free(gs->pat);
    free(gs->dir_only);
    memset(gs, 0, sizeof *gs);
}

const char *glob_set_match(const struct glob_set *gs, const char *name, int kind,
                           char *shown, size_t shownlen)
{
    for (size_t i = 0; i < gs->n; i++) {
        int applies = gs->dir_only[i] ? (kind & GLOB_DIR) : (kind & GLOB_FILE);
        if (!applies)
            continue;
        if (fnmatch(gs->pat[i], name, FNM_CASEFOLD) == 0) {
            snprintf(shown, shownlen, "%s%s", gs->pat[i], gs->dir_only[i] ? "/" : "");
            return shown;
        }
    }
    return NULL;
}
