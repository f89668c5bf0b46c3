/* Per-session cgroups (see bwrap_cgroup.h). */
#include "backend/bwrap_cgroup.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "ccsandbox/ccsandbox.h"

static int write_file(const char *dir, const char *file, const char *value)
{
    char path[PATH_MAX];
    if (snprintf(path, sizeof path, "%s/%s", dir, file) >= (int)sizeof path)
        return -ENAMETOOLONG;
    int fd = open(path, O_WRONLY | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    size_t n = strlen(value);
    ssize_t w = write(fd, value, n);
    int e = errno;
    close(fd);
    return w == (ssize_t)n ? 0 : -(w < 0 ? e : EIO);
}

static int file_has_word(const char *path, const char *word)
{
    FILE *f = fopen(path, "re");
    if (!f)
        return 0;
    char buf[1024];
    int found = 0;
    while (!found && fscanf(f, "%1023s", buf) == 1)
        found = strcmp(buf, word) == 0;
    fclose(f);
    return found;
}

/* The directory of our own cgroup in the hierarchy that has `controller`
 * (NULL: the v2 one). malloc'd or NULL. */
static char *own_cgroup_dir(const char *controller)
{
    char want_path[PATH_MAX] = "";
    FILE *f = fopen("/proc/self/cgroup", "re");
    if (!f)
        return NULL;
    char line[PATH_MAX + 256];
    while (fgets(line, sizeof line, f)) {
        line[strcspn(line, "\n")] = '\0';
        char *c1 = strchr(line, ':');
        char *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
        if (!c2)
            continue;
        *c1 = '\0';
        *c2 = '\0';
        const char *ctrls = c1 + 1;
        int match = 0;
        if (!controller) {
            match = strcmp(line, "0") == 0 && *ctrls == '\0';
        } else {
            char copy[256];
            snprintf(copy, sizeof copy, "%s", ctrls);
            char *save = NULL;
            for (char *t = strtok_r(copy, ",", &save); t; t = strtok_r(NULL, ",", &save))
                match |= strcmp(t, controller) == 0;
        }
        if (match) {
            snprintf(want_path, sizeof want_path, "%s", c2 + 1);
            break;
        }
    }
    fclose(f);
    if (!want_path[0])
        return NULL;

    f = fopen("/proc/self/mountinfo", "re");
    if (!f)
        return NULL;
    char *out = NULL;
    while (!out && fgets(line, sizeof line, f)) {
        /* id parent maj:min root mountpoint opts ... - fstype source superopts */
        char root[PATH_MAX], mnt[PATH_MAX], fstype[64], superopts[512];
        char *dash = strstr(line, " - ");
        if (!dash || sscanf(line, "%*s %*s %*s %4095s %4095s", root, mnt) != 2 ||
            sscanf(dash + 3, "%63s %*s %511s", fstype, superopts) != 2)
            continue;
        int ok;
        if (!controller) {
            ok = strcmp(fstype, "cgroup2") == 0;
        } else {
            ok = 0;
            if (strcmp(fstype, "cgroup") == 0) {
                char *save = NULL;
                for (char *t = strtok_r(superopts, ",", &save); t; t = strtok_r(NULL, ",", &save))
                    ok |= strcmp(t, controller) == 0;
            }
        }
        if (!ok)
            continue;
        const char *rest = want_path;
        size_t rl = strlen(root);
        if (strcmp(root, "/") != 0) {
            if (strncmp(want_path, root, rl) != 0 || (want_path[rl] && want_path[rl] != '/'))
                continue;
            rest = want_path + rl;
        }
        if (asprintf(&out, "%s%s", mnt, strcmp(rest, "/") == 0 ? "" : rest) < 0)
            out = NULL;
    }
    fclose(f);
    return out;
}

/* Makes <parent>/ccsb-<name> when we may; returns it (malloc'd) or NULL. */
static char *make_child(const char *parent, const char *name)
{
    if (!parent || access(parent, W_OK) != 0)
        return NULL;
    char procs[PATH_MAX];
    snprintf(procs, sizeof procs, "%s/cgroup.procs", parent);
    if (access(procs, W_OK) != 0)
        return NULL; /* joining needs the common ancestor's procs file too */
    char *dir = NULL;
    if (asprintf(&dir, "%s/ccsb-%s", parent, name) < 0)
        return NULL;
    if (mkdir(dir, 0755) < 0) {
        free(dir);
        return NULL;
    }
    return dir;
}

static int add_dir(struct bwrap_cgroup *cg, char *dir)
{
    if (cg->ndirs == BWRAP_CG_MAX) {
        rmdir(dir);
        free(dir);
        return -1;
    }
    cg->dirs[cg->ndirs++] = dir;
    return 0;
}

static char *path_in(const char *dir, const char *file)
{
    char *p = NULL;
    if (asprintf(&p, "%s/%s", dir, file) < 0)
        return NULL;
    return p;
}

int bwrap_cgroup_setup(struct bwrap_cgroup *cg, const char *name, uint64_t memory_max,
                       uint32_t pids_max)
{
    memset(cg, 0, sizeof *cg);
    char num[32];

    /* cgroup v2: one directory; controllers only if the parent delegates them. */
    char *v2parent = own_cgroup_dir(NULL);
    char *v2 = make_child(v2parent, name);
    if (v2) {
        char sub[PATH_MAX];
        snprintf(sub, sizeof sub, "%s/cgroup.subtree_control", v2parent);
        if (add_dir(cg, v2) == 0) {
            char *fz = path_in(v2, "cgroup.freeze");
            if (fz && access(fz, W_OK) == 0) {
                cg->freeze = fz;
                cg->freeze_v2 = 1;
            } else {
                free(fz);
            }
            if (memory_max && file_has_word(sub, "memory")) {
                snprintf(num, sizeof num, "%" PRIu64, memory_max);
                if (write_file(v2, "memory.max", num) == 0) {
                    write_file(v2, "memory.swap.max", "0");
                    cg->memory = "cgroup-v2";
                    cg->oom_events = path_in(v2, "memory.events");
                }
            }
            if (pids_max && file_has_word(sub, "pids")) {
                snprintf(num, sizeof num, "%" PRIu32, pids_max);
                if (write_file(v2, "pids.max", num) == 0)
                    cg->pids = "cgroup-v2";
            }
        }
    }
    free(v2parent);

    /* cgroup v1 for whatever v2 could not do. */
    struct {
        const char *ctrl;
        int want;
    } v1[] = {
        {"memory", memory_max && !cg->memory},
        {"pids", pids_max && !cg->pids},
        {"freezer", !cg->freeze},
    };
    for (size_t i = 0; i < sizeof v1 / sizeof v1[0]; i++) {
        if (!v1[i].want)
            continue;
        char *parent = own_cgroup_dir(v1[i].ctrl);
        char *dir = make_child(parent, name);
        free(parent);
        if (!dir || add_dir(cg, dir) < 0)
            continue;
        if (strcmp(v1[i].ctrl, "memory") == 0) {
            snprintf(num, sizeof num, "%" PRIu64, memory_max);
            if (write_file(dir, "memory.limit_in_bytes", num) == 0) {
                write_file(dir, "memory.memsw.limit_in_bytes", num);
                cg->memory = "cgroup-v1";
                cg->oom_events = path_in(dir, "memory.oom_control");
            }
        } else if (strcmp(v1[i].ctrl, "pids") == 0) {
            snprintf(num, sizeof num, "%" PRIu32, pids_max);
            if (write_file(dir, "pids.max", num) == 0)
                cg->pids = "cgroup-v1";
        } else {
            cg->freeze = path_in(dir, "freezer.state");
        }
    }
    return 0;
}

int bwrap_cgroup_freeze(const struct bwrap_cgroup *cg, int frozen)
{
    if (!cg->freeze)
        return -ENOTSUP;
    int fd = open(cg->freeze, O_WRONLY | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    const char *v = cg->freeze_v2 ? (frozen ? "1" : "0") : (frozen ? "FROZEN" : "THAWED");
    ssize_t w = write(fd, v, strlen(v));
    int e = errno;
    close(fd);
    return w == (ssize_t)strlen(v) ? 0 : -(w < 0 ? e : EIO);
}

long bwrap_cgroup_oom_kills(const struct bwrap_cgroup *cg)
{
    if (!cg->oom_events)
        return -1;
    FILE *f = fopen(cg->oom_events, "re");
    if (!f)
        return -1;
    char key[64];
    long v, out = -1;
    while (fscanf(f, "%63s %ld", key, &v) == 2)
        if (strcmp(key, "oom_kill") == 0)
            out = v;
    fclose(f);
    return out;
}

/* The kernel unlinks an exited task from its cgroup a moment after the
 * parent reaped it; rmdir says EBUSY until then. */
static void rmdir_settled(const char *dir)
{
    for (int i = 0; i < 200; i++) {
        if (rmdir(dir) == 0 || errno != EBUSY)
            return;
        struct timespec ts = {0, 1000000};
        nanosleep(&ts, NULL);
    }
}

void bwrap_cgroup_remove(struct bwrap_cgroup *cg)
{
    for (size_t i = 0; i < cg->ndirs; i++) {
        rmdir_settled(cg->dirs[i]);
        free(cg->dirs[i]);
    }
    free(cg->freeze);
    free(cg->oom_events);
    memset(cg, 0, sizeof *cg);
}
