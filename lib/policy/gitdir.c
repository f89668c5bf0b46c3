/* Finding a worktree's git dirs from its `.git` file. */
#include "policy/gitdir.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ccsandbox/ccsandbox.h"
#include "policy/paths.h"

/* git's pointer files hold one path; anything longer is not git's. */
#define SMALL_FILE_MAX 4096

/*
 * The first line of a small regular file, or NULL (missing, not regular,
 * too big, unreadable). O_NONBLOCK so that a FIFO planted under the name
 * cannot stall the launch; it is then refused as not regular.
 */
static char *read_line(const char *path, int *nomem)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
    if (fd < 0)
        return NULL;
    char *buf = NULL;
    struct stat st;
    if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_size > SMALL_FILE_MAX)
        goto out;
    buf = malloc(SMALL_FILE_MAX + 1);
    if (!buf) {
        *nomem = 1;
        goto out;
    }
    size_t n = 0;
    while (n < SMALL_FILE_MAX) {
        ssize_t r = read(fd, buf + n, SMALL_FILE_MAX - n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            free(buf);
            buf = NULL;
            goto out;
        }
        if (r == 0)
            break;
        n += (size_t)r;
    }
    if (memchr(buf, '\0', n)) {
        /* git never writes a NUL into these files. */
        free(buf);
        buf = NULL;
        goto out;
    }
    buf[n] = '\0';
    buf[strcspn(buf, "\r\n")] = '\0';
out:
    close(fd);
    return buf;
}

/* rel made absolute against dir, then resolved; NULL when it does not
 * resolve (or ENOMEM, flagged). */
static char *resolve_from(const char *dir, const char *rel, int *nomem)
{
    char *abs = rel[0] == '/' ? strdup(rel) : path_join(dir, rel);
    if (!abs) {
        *nomem = 1;
        return NULL;
    }
    char *r = realpath(abs, NULL);
    if (!r && errno == ENOMEM)
        *nomem = 1;
    free(abs);
    return r;
}

static int is_dir(const char *dir, const char *name)
{
    char *p = path_join(dir, name);
    struct stat st;
    int ok = p && stat(p, &st) == 0 && S_ISDIR(st.st_mode);
    free(p);
    return ok;
}

/* The worktree's gitdir names <root>/.git back, and sits in its common
 * dir's worktrees/ as git lays it out. */
static int verify(const char *dotgit, struct git_repo *r, int *nomem)
{
    char *back = path_join(r->gitdir, "gitdir");
    char *line = back ? read_line(back, nomem) : NULL;
    char *back_r = line && *line ? resolve_from(r->gitdir, line, nomem) : NULL;
    char *dotgit_r = realpath(dotgit, NULL);
    int ok = back_r && dotgit_r && strcmp(back_r, dotgit_r) == 0;
    free(back);
    free(line);
    free(back_r);
    free(dotgit_r);
    if (!ok)
        return 0;
    const char *name = strrchr(r->gitdir, '/');
    char *wt = path_join(r->commondir, "worktrees");
    char *expect = wt && name ? path_join(wt, name + 1) : NULL;
    ok = expect && strcmp(expect, r->gitdir) == 0 && strcmp(r->commondir, "/") != 0 &&
         is_dir(r->commondir, "objects") && is_dir(r->commondir, "refs");
    if (!expect)
        *nomem = 1;
    free(wt);
    free(expect);
    return ok;
}

int git_repo_inspect(const char *root, struct git_repo *out)
{
    memset(out, 0, sizeof *out);
    int nomem = 0;
    char *dotgit = path_join(root, ".git");
    if (!dotgit)
        return CCSB_E_NOMEM;
    struct stat st;
    if (stat(dotgit, &st) < 0) {
        free(dotgit);
        return 0;
    }
    if (S_ISDIR(st.st_mode)) {
        out->dotgit = GIT_DOTGIT_DIR;
        free(dotgit);
        return 0;
    }
    if (!S_ISREG(st.st_mode)) {
        free(dotgit);
        return 0;
    }
    out->dotgit = GIT_DOTGIT_FILE;
    char *line = read_line(dotgit, &nomem);
    if (line && strncmp(line, "gitdir: ", 8) == 0 && line[8])
        out->gitdir = resolve_from(root, line + 8, &nomem);
    free(line);
    if (out->gitdir) {
        char *cpath = path_join(out->gitdir, "commondir");
        char *common = cpath ? read_line(cpath, &nomem) : NULL;
        if (!cpath)
            nomem = 1;
        /* No commondir file: a separate git dir (submodule, --separate-git-dir). */
        out->commondir = common && *common ? resolve_from(out->gitdir, common, &nomem)
                                           : strdup(out->gitdir);
        if (!out->commondir && !(common && *common))
            nomem = 1;
        free(cpath);
        free(common);
        if (out->commondir && out->commondir != out->gitdir &&
            strcmp(out->commondir, out->gitdir) != 0)
            out->verified = verify(dotgit, out, &nomem);
    }
    free(dotgit);
    if (nomem) {
        git_repo_clear(out);
        return CCSB_E_NOMEM;
    }
    return 0;
}

void git_repo_clear(struct git_repo *r)
{
    free(r->gitdir);
    free(r->commondir);
    memset(r, 0, sizeof *r);
}
