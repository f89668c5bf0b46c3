#include "guard/emulate.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <seccomp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/statfs.h>
#include <sys/sysmacros.h>
#include <sys/un.h>
#include <netinet/in.h>
#include <unistd.h>

#include "ccsandbox/ccsandbox.h"
#include "guard/resolve.h"
#include "guard/sysnr.h"
#include "guard/target.h"
#include "guard/unotify.h"

#define MAX_RETRIES 4

/* One notification being answered. */
struct op {
    struct emu *em;
    int listener;
    uint64_t id;
    uint64_t tag;
    const struct seccomp_data *d;
    const char *call; /* syscall name for messages */
    struct target t;
    int answered;
};

/* ------------------------------------------------------------------ */
/* Answers and reports                                                  */
/* ------------------------------------------------------------------ */

static void answer(struct op *o, int64_t val, int error)
{
    if (o->answered)
        return;
    o->answered = 1;
    unotify_respond(o->listener, o->id, val, error);
}

static void answer_fd(struct op *o, int fd, int cloexec)
{
    if (o->answered)
        return;
    int r = unotify_addfd_send(o->listener, o->id, fd, cloexec ? O_CLOEXEC : 0);
    if (r >= 0 || r == -ENOENT) { /* sent, or the target is gone */
        o->answered = 1;
        return;
    }
    answer(o, 0, -r); /* e.g. EMFILE: the target's fd table is full */
}

static void report(struct op *o, const char *action, const char *target, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void report(struct op *o, const char *action, const char *target, const char *fmt, ...)
{
    char raw[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(raw, sizeof raw, fmt, ap);
    va_end(ap);
    if (o->em->report)
        o->em->report(o->em->report_ud, o->tag, action, target, raw);
}

/* An internal failure: deny, count, report. */
static void fail(struct op *o, const char *action, const char *target, const char *what, int e)
{
    EMU_COUNT(o->em, errors);
    report(o, action, target ? target : "", "%s by pid %d denied: internal error: %s: %s",
           o->call, (int)o->t.tid, what, strerror(e < 0 ? -e : e));
    answer(o, 0, EACCES);
}

/* The path the target would have created, for messages. */
static void shown_path(struct op *o, const struct res_out *r, char *buf, size_t len)
{
    char dir[PATH_MAX];
    res_display_dir(o->t.rootfd, r->parentfd, dir, sizeof dir);
    snprintf(buf, len, "%s%s%s", dir, strcmp(dir, "/") == 0 ? "" : "/", r->name);
}

/* 1 when denied (answered and reported). */
static int check_glob(struct op *o, const struct res_out *r, int kind, const char *action,
                      const char *argpath)
{
    char shown[NAME_MAX + 2];
    const char *g = glob_set_match(&o->em->globs, r->name, kind, shown, sizeof shown);
    if (!g)
        return 0;
    char where[PATH_MAX + NAME_MAX + 2];
    shown_path(o, r, where, sizeof where);
    EMU_COUNT(o->em, denied);
    report(o, action, where, "%s(\"%s\") by pid %d: \"%s\" matches deny-write glob \"%s\"",
           o->call, argpath, (int)o->t.tid, r->name, g);
    answer(o, 0, EACCES);
    return 1;
}

/* Reports and answers a protected-path refusal (or a failed check). */
static int deny_rule(struct op *o, int rc, const char *which, const char *action,
                     const char *where, const char *argpath)
{
    if (rc == -EACCES && which) {
        /* The sandbox made a directory on the way unsearchable: what it
         * holds below cannot be told apart from the protected path. */
        EMU_COUNT(o->em, denied);
        report(o, action, where,
               "%s(\"%s\") by pid %d: protected path %s cannot be looked up (%s): refused",
               o->call, argpath, (int)o->t.tid, which, strerror(EACCES));
        answer(o, 0, EACCES);
        return 1;
    }
    if (rc < 0) {
        fail(o, action, where, "checking protected paths", rc);
        return 1;
    }
    EMU_COUNT(o->em, denied);
    report(o, action, where, "%s(\"%s\") by pid %d: protected path %s (deny-write)",
           o->call, argpath, (int)o->t.tid, which);
    answer(o, 0, EACCES);
    return 1;
}

/* 1 when the name r names touches a protected path (answered and reported). */
static int check_rules(struct op *o, const struct res_out *r, const char *action,
                       const char *argpath)
{
    const char *which = NULL;
    int rc = r->parentfd >= 0 ? path_rules_check(o->em->rules, r->parentfd, r->name, &which)
             : r->objfd >= 0  ? path_rules_check_obj(o->em->rules, r->objfd, &which)
                              : -EINVAL;
    if (rc == 0)
        return 0;
    char where[PATH_MAX + NAME_MAX + 2];
    if (r->parentfd >= 0)
        shown_path(o, r, where, sizeof where);
    else
        snprintf(where, sizeof where, "%s", argpath);
    return deny_rule(o, rc, which, action, where, argpath);
}

/*
 * 1 when an existing file reached by a name that is not protected is still
 * a protected file under another name (a hard link: the read-only bind and
 * the name rules cover one name only). Answered and reported.
 */
static int check_links(struct op *o, const struct res_out *r, const char *action,
                       const char *argpath)
{
    if (r->parentfd < 0 || r->objfd < 0 || S_ISDIR(r->st.st_mode) || r->st.st_nlink < 2)
        return 0; /* a nameless object had the identity check in check_rules */
    const char *which = NULL;
    int rc = path_rules_check_ident(o->em->rules, r->objfd, &which);
    if (rc == 0)
        return 0;
    char where[PATH_MAX + NAME_MAX + 2];
    shown_path(o, r, where, sizeof where);
    return deny_rule(o, rc, which, action, where, argpath);
}

/* Both checks on a name about to be created. */
static int check_new(struct op *o, const struct res_out *r, int kind, const char *action,
                     const char *argpath)
{
    return check_glob(o, r, kind, action, argpath) || check_rules(o, r, action, argpath);
}

/* ------------------------------------------------------------------ */
/* Arguments                                                            */
/* ------------------------------------------------------------------ */

static int arg_int(const struct op *o, int i)
{
    return (int)(uint32_t)o->d->args[i];
}

static int host_cb(void *ud)
{
    return creds_host(ud);
}

/* Reading the target's memory needs ptrace rights; the identity in force
 * usually has them (same user), else we take ours and try again. */
static long read_str(struct op *o, uint64_t addr, char *buf, size_t cap)
{
    long r = target_read_str(&o->t, addr, buf, cap);
    if (r == -EPERM && !o->em->creds.host_mode && creds_host(&o->em->creds) == 0)
        r = target_read_str(&o->t, addr, buf, cap);
    return r;
}

static int read_mem(struct op *o, uint64_t addr, void *buf, size_t len)
{
    int r = target_read(&o->t, addr, buf, len);
    if (r == -EPERM && !o->em->creds.host_mode && creds_host(&o->em->creds) == 0)
        r = target_read(&o->t, addr, buf, len);
    return r;
}

/* Copies a path argument; on failure answers (EFAULT/ENAMETOOLONG are the
 * target's own errors, anything else is ours). */
static int get_path(struct op *o, int i, char *buf, const char *action)
{
    long r = read_str(o, o->d->args[i], buf, PATH_MAX);
    if (r >= 0)
        return 0;
    if (r == -EFAULT || r == -ENAMETOOLONG || r == -ESRCH)
        answer(o, 0, (int)-r);
    else
        fail(o, action, NULL, "reading the path argument", (int)r);
    return -1;
}

/* Everything tied to the tid is opened here, before the id check. */
static int prepare_start(struct op *o, int dirfd, const char *path, const char *action)
{
    if (path[0] == '/' || dirfd != AT_FDCWD)
        return 0;
    int r = target_cwd(&o->t);
    if ((r == -EACCES || r == -EPERM) && creds_host(&o->em->creds) == 0)
        r = target_cwd(&o->t);
    if (r >= 0)
        return 0;
    if (r == -ENOENT || r == -ESRCH)
        answer(o, 0, ENOENT);
    else
        fail(o, action, NULL, "opening the working directory", r);
    return -1;
}

static int still_valid(struct op *o)
{
    if (unotify_id_valid(o->listener, o->id) == 0)
        return 1;
    o->answered = 1; /* nobody is waiting any more */
    return 0;
}

/* ------------------------------------------------------------------ */
/* Resolution with the target's identity                               */
/* ------------------------------------------------------------------ */

static int become_target(struct op *o, const char *action)
{
    int r = creds_target(&o->em->creds, &o->t.creds);
    if (r == 0)
        return 0;
    fail(o, action, NULL, "taking on the target's credentials", r);
    return -1;
}

/*
 * The end of a lookup done with the host's identity: an fd opened through
 * the tid after the first check is dropped unless the notification is
 * still live (same task), and the target's identity is taken on again;
 * failing that, nothing is handed out (EACCES). Returns fd or -errno.
 */
static int back_to_target(struct op *o, int fd, int recheck)
{
    if (recheck && fd >= 0 && unotify_id_valid(o->listener, o->id) != 0) {
        close(fd);
        fd = -ESRCH;
    }
    if (creds_target(&o->em->creds, &o->t.creds) < 0) {
        if (fd >= 0)
            close(fd);
        return -EACCES;
    }
    return fd;
}

static int magic_cb(void *ud, int kind, int n)
{
    struct op *o = ud;
    int r = creds_host(&o->em->creds);
    int fd = -EACCES;
    if (r == 0) {
        if (kind == RES_MAGIC_FD) {
            fd = target_getfd(&o->t, n);
        } else if (kind == RES_MAGIC_ROOT) {
            fd = fcntl(o->t.rootfd, F_DUPFD_CLOEXEC, 3);
            fd = fd < 0 ? -errno : fd;
        } else {
            char path[64];
            snprintf(path, sizeof path, "/proc/%d/cwd", (int)o->t.tid);
            fd = open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);
            fd = fd < 0 ? -errno : fd;
            return back_to_target(o, fd, 1); /* opened by tid: same task? */
        }
    } else {
        fd = r;
    }
    return back_to_target(o, fd, 0);
}

/* start: an fd to start relative paths from (borrowed) or -1. */
static int do_resolve(struct op *o, int start, const char *path, int flags, struct res_out *out)
{
    struct res_env env = {
        .rootfd = o->t.rootfd,
        .startfd = start,
        .nstgid = o->t.nstgid,
        .nstid = o->t.nstid,
        .magic = magic_cb,
        .ud = o,
    };
    return resolve_path(&env, path, flags, out);
}

/* The directory relative paths start from: cwd or a dup of the dirfd.
 * *owned is set when the caller must close the result. */
static int start_dir(struct op *o, int dirfd, const char *path, int *owned)
{
    *owned = 0;
    if (path[0] == '/')
        return -1;
    if (dirfd == AT_FDCWD)
        return o->t.cwdfd;
    int fd = magic_cb(o, RES_MAGIC_FD, dirfd);
    if (fd >= 0)
        *owned = 1;
    return fd;
}

/* ------------------------------------------------------------------ */
/* What we refuse to open for anyone                                    */
/* ------------------------------------------------------------------ */

static int pseudo_fs(int fd)
{
    struct statfs sf;
    if (fstatfs(fd, &sf) < 0)
        return -errno;
    switch ((unsigned long)sf.f_type) {
    case PROC_SUPER_MAGIC:
    case SYSFS_MAGIC:
    case CGROUP_SUPER_MAGIC:
    case CGROUP2_SUPER_MAGIC:
    case DEBUGFS_MAGIC:
    case TRACEFS_MAGIC:
    case SECURITYFS_MAGIC:
    case BPF_FS_MAGIC:
    case PSTOREFS_MAGIC:
    case EFIVARFS_MAGIC:
    case SELINUX_MAGIC:
    case SMACK_MAGIC:
    case BINFMTFS_MAGIC:
    case NSFS_MAGIC:
    case 0x62656570: /* configfs */
    case 0x65735543: /* fusectl */
    case 0x50494446: /* pidfs */
        return 1;
    }
    return 0;
}

/* Devices whose open means the same whoever opens them. */
static int device_ok(dev_t rdev)
{
    unsigned ma = major(rdev), mi = minor(rdev);
    if (ma == 1)
        return mi == 3 || mi == 5 || mi == 7 || mi == 8 || mi == 9; /* null zero full random urandom */
    if (ma == 5)
        return mi == 2; /* ptmx */
    return ma >= 136 && ma <= 143; /* pty slaves */
}

/* An fd of process pid (pidfd pfd) open on terminal tty, or -ENXIO. */
static int tty_fd_of(pid_t pid, int pfd, dev_t tty)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/fd", (int)pid);
    int dfd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd < 0)
        return -ENXIO;
    int found = -ENXIO;
    for (int n = 0; n < 1024 && found < 0; n++) {
        char name[16];
        struct stat st;
        snprintf(name, sizeof name, "%d", n);
        if (fstatat(dfd, name, &st, 0) == 0 && S_ISCHR(st.st_mode) && st.st_rdev == tty)
            found = pidfd_dup(pfd, n);
    }
    close(dfd);
    return found;
}

/*
 * /dev/tty means "my controlling terminal": a handle to it is taken from
 * the target's own fds, else from its session leader's (a child whose
 * stdio was redirected still has the terminal; the leader that holds it
 * is in the sandbox, and while the target lives in that session its id is
 * not reused), instead of opening ours.
 */
static int open_ctty(struct op *o)
{
    dev_t tty;
    pid_t sid = 0;
    int r = creds_host(&o->em->creds);
    if (r == 0)
        r = target_ctty(&o->t, &tty, &sid);
    if (r == 0 && tty == 0)
        r = -ENXIO;
    if (r < 0)
        return back_to_target(o, r, 0);
    int pfd = target_pidfd(&o->t);
    int found = pfd < 0 ? pfd : tty_fd_of(o->t.tid, pfd, tty);
    if (found < 0 && sid > 0 && sid != o->t.tid) {
        int lfd = pidfd_open_tid(sid);
        if (lfd >= 0) {
            found = tty_fd_of(sid, lfd, tty);
            close(lfd);
        }
    }
    return back_to_target(o, found, 1); /* found through the tid: same task? */
}

/* ------------------------------------------------------------------ */
/* open, openat, creat                                                  */
/* ------------------------------------------------------------------ */

static int reopen(int objfd, int flags)
{
    char p[64];
    snprintf(p, sizeof p, "/proc/self/fd/%d", objfd);
    int fd = open(p, flags);
    return fd < 0 ? -errno : fd;
}

static int add_pending(struct op *o, int objfd, int flags, int cloexec)
{
    struct emu *em = o->em;
    if (em->n_pending == EMU_MAX_PENDING)
        return -EAGAIN;
    int fd = fcntl(objfd, F_DUPFD_CLOEXEC, 3);
    if (fd < 0)
        return -errno;
    struct emu_pending *p = &em->pending[em->n_pending++];
    p->listener = o->listener;
    p->id = o->id;
    p->tag = o->tag;
    p->objfd = fd;
    p->flags = flags;
    p->cloexec = cloexec;
    p->creds = o->t.creds;
    o->answered = 1; /* answered later by emu_tick */
    return 0;
}

/* Opens an existing object for the target with its flags. */
static void open_existing(struct op *o, const struct res_out *res, int flags, const char *path,
                          const char *act)
{
    const struct stat *st = &res->st;
    int objfd = res->objfd;
    int ctty = -1;
    int pf = pseudo_fs(objfd);
    if (pf != 0) {
        if (pf < 0)
            return fail(o, act, path, "fstatfs", pf);
        EMU_COUNT(o->em, denied);
        report(o, act, path,
               "%s(\"%s\") by pid %d: refusing to open a kernel interface file for the sandbox",
               o->call, path, (int)o->t.tid);
        return answer(o, 0, EACCES);
    }
    if (S_ISBLK(st->st_mode) || (S_ISCHR(st->st_mode) && !device_ok(st->st_rdev))) {
        if (S_ISCHR(st->st_mode) && st->st_rdev == makedev(5, 0)) {
            ctty = open_ctty(o);
            if (ctty < 0)
                return answer(o, 0, ctty == -ESRCH ? ENOENT : -ctty);
            objfd = ctty;
        } else {
            EMU_COUNT(o->em, denied);
            report(o, act, path,
                   "%s(\"%s\") by pid %d: refusing to open device %u:%u for the sandbox",
                   o->call, path, (int)o->t.tid, major(st->st_rdev), minor(st->st_rdev));
            return answer(o, 0, EACCES);
        }
    }
    int fifo = S_ISFIFO(st->st_mode);
    int want = (flags & ~(O_CREAT | O_EXCL | O_NOFOLLOW)) | O_CLOEXEC | O_NOCTTY;
    int fd = reopen(objfd, want | (fifo ? O_NONBLOCK : 0));
    if (fd == -ENXIO && fifo && !(flags & O_NONBLOCK) && (flags & O_ACCMODE) == O_WRONLY) {
        /* No reader yet: the kernel would block the writer until one
         * comes. Wait for it without blocking this thread. */
        int r = add_pending(o, objfd, want, flags & O_CLOEXEC);
        if (ctty >= 0)
            close(ctty);
        if (r < 0)
            fail(o, act, path, "queueing a FIFO open", r);
        return;
    }
    if (ctty >= 0)
        close(ctty);
    if (fd < 0)
        return answer(o, 0, -fd);
    if (fifo && !(flags & O_NONBLOCK))
        fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
    EMU_COUNT(o->em, emulated);
    answer_fd(o, fd, flags & O_CLOEXEC);
    close(fd);
}

static void do_open(struct op *o, int dirfd, int pathi, int flags, mode_t mode)
{
    /* Without O_CREAT or O_TMPFILE the open was trapped for writing to
     * something that exists (trap_writes): nothing is ever created. */
    const int creating = (flags & (O_CREAT | __O_TMPFILE)) != 0;
    const char *act = creating ? "file-write-create" : "file-write";
    char path[PATH_MAX];
    if (get_path(o, pathi, path, act) < 0 || prepare_start(o, dirfd, path, act) < 0)
        return;
    if (!still_valid(o) || become_target(o, act) < 0)
        return;
    int owned;
    int start = start_dir(o, dirfd, path, &owned);
    if (start < 0 && path[0] != '/')
        return answer(o, 0, start == -EBADF ? EBADF : -start);
    mode &= 07777 & ~(mode_t)(S_ISUID | S_ISGID); /* no set-ID files */
    int tmpfile = (flags & __O_TMPFILE) != 0;

    for (int attempt = 0; attempt < MAX_RETRIES; attempt++) {
        struct res_out r;
        int rf = 0;
        if (tmpfile || (flags & O_PATH) || !(flags & (O_EXCL | O_NOFOLLOW)) ||
            (!creating && !(flags & O_NOFOLLOW)))
            rf = RES_FOLLOW; /* O_EXCL means nothing without O_CREAT */
        if ((flags & O_PATH) && (flags & O_NOFOLLOW) && !tmpfile)
            rf = 0;
        int e = do_resolve(o, start, path, rf, &r);
        if (e < 0) {
            answer(o, 0, -e);
            break;
        }
        if (tmpfile || (flags & O_PATH)) {
            /* No name is created: O_TMPFILE makes an unnamed inode in the
             * directory, O_PATH ignores O_CREAT. */
            if (!r.exists) {
                res_out_close(&r);
                answer(o, 0, ENOENT);
                break;
            }
            int pf = pseudo_fs(r.objfd);
            if (pf != 0) {
                res_out_close(&r);
                if (pf < 0)
                    fail(o, act, path, "fstatfs", pf);
                else
                    answer(o, 0, EACCES);
                break;
            }
            int fd;
            if (tmpfile) {
                fd = openat(r.objfd, ".", flags | O_CLOEXEC, mode);
                fd = fd < 0 ? -errno : fd;
            } else if ((flags & O_DIRECTORY) && !S_ISDIR(r.st.st_mode)) {
                fd = -ENOTDIR;
            } else {
                fd = fcntl(r.objfd, F_DUPFD_CLOEXEC, 3);
                fd = fd < 0 ? -errno : fd;
            }
            res_out_close(&r);
            if (fd < 0) {
                answer(o, 0, -fd);
            } else {
                EMU_COUNT(o->em, emulated);
                answer_fd(o, fd, flags & O_CLOEXEC);
                close(fd);
            }
            break;
        }
        char shown[PATH_MAX + NAME_MAX + 2];
        if (r.exists) {
            int err = 0;
            if ((flags & O_EXCL) && creating)
                err = EEXIST;
            else if (S_ISLNK(r.st.st_mode))
                err = ELOOP;
            else if (!creating && !S_ISDIR(r.st.st_mode) &&
                     (r.trailing_slash || (flags & O_DIRECTORY)))
                err = ENOTDIR;
            else if (r.trailing_slash || S_ISDIR(r.st.st_mode))
                err = EISDIR;
            if (err) {
                res_out_close(&r);
                answer(o, 0, err);
                break;
            }
            /* A protected path the host made or replaced during the
             * session (a replaced file's bind is gone), or a name matching
             * a glob: existing matches are read-only from launch on. */
            if ((flags & (O_ACCMODE | O_TRUNC)) &&
                ((r.parentfd >= 0 && check_glob(o, &r, GLOB_FILE, act, path)) ||
                 check_rules(o, &r, act, path) || check_links(o, &r, act, path))) {
                res_out_close(&r);
                break;
            }
            if (r.parentfd >= 0)
                shown_path(o, &r, shown, sizeof shown);
            else
                snprintf(shown, sizeof shown, "%s", path);
            open_existing(o, &r, flags, shown, act);
            res_out_close(&r);
            break;
        }
        if (!creating || r.trailing_slash) {
            res_out_close(&r);
            answer(o, 0, creating ? EISDIR : ENOENT);
            break;
        }
        if (check_new(o, &r, GLOB_FILE, act, path)) {
            res_out_close(&r);
            break;
        }
        int fd = openat(r.parentfd, r.name,
                        flags | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY, mode);
        int e2 = errno;
        res_out_close(&r);
        if (fd < 0 && e2 == EEXIST && !(flags & O_EXCL))
            continue; /* appeared meanwhile: resolve again and open it */
        if (fd < 0) {
            answer(o, 0, e2);
            break;
        }
        EMU_COUNT(o->em, emulated);
        answer_fd(o, fd, flags & O_CLOEXEC);
        close(fd);
        break;
    }
    if (!o->answered)
        answer(o, 0, EAGAIN);
    if (owned)
        close(start);
}

/* truncate(2): trapped with the writing opens, for the same reason. */
static void do_truncate(struct op *o)
{
    const char *act = "file-write";
    char path[PATH_MAX];
    if (get_path(o, 0, path, act) < 0 || prepare_start(o, AT_FDCWD, path, act) < 0)
        return;
    if (!still_valid(o) || become_target(o, act) < 0)
        return;
    const off_t len = (off_t)o->d->args[1];
    if (len < 0)
        return answer(o, 0, EINVAL);
    int owned;
    int start = start_dir(o, AT_FDCWD, path, &owned);
    if (start < 0 && path[0] != '/')
        return answer(o, 0, -start);
    struct res_out r;
    int e = do_resolve(o, start, path, RES_FOLLOW, &r);
    if (owned)
        close(start);
    if (e < 0)
        return answer(o, 0, -e);
    int err = !r.exists                  ? ENOENT
              : S_ISDIR(r.st.st_mode)    ? EISDIR
              : r.trailing_slash         ? ENOTDIR
              : !S_ISREG(r.st.st_mode)   ? EINVAL
                                         : 0;
    if (err) {
        res_out_close(&r);
        return answer(o, 0, err);
    }
    if ((r.parentfd >= 0 && check_glob(o, &r, GLOB_FILE, act, path)) ||
        check_rules(o, &r, act, path) || check_links(o, &r, act, path)) {
        res_out_close(&r);
        return;
    }
    int pf = pseudo_fs(r.objfd);
    int fd = pf == 0 ? reopen(r.objfd, O_WRONLY | O_CLOEXEC | O_NOCTTY) : -EACCES;
    res_out_close(&r);
    if (pf < 0)
        return fail(o, act, path, "fstatfs", pf);
    if (fd < 0)
        return answer(o, 0, -fd);
    int rc = ftruncate(fd, len);
    e = errno;
    close(fd);
    if (rc < 0)
        return answer(o, 0, e);
    EMU_COUNT(o->em, emulated);
    answer(o, 0, 0);
}

/* ------------------------------------------------------------------ */
/* mknod, mkdir, symlink                                                */
/* ------------------------------------------------------------------ */

/* Resolves a name to be created (no final symlink followed). Returns 0 with
 * r filled, or answers and returns -1. */
static int resolve_new(struct op *o, int dirfd, const char *path, struct res_out *r,
                       int exists_err, int slash_ok)
{
    int owned;
    int start = start_dir(o, dirfd, path, &owned);
    if (start < 0 && path[0] != '/') {
        answer(o, 0, start == -EBADF ? EBADF : -start);
        return -1;
    }
    int e = do_resolve(o, start, path, 0, r);
    if (owned)
        close(start);
    if (e < 0) {
        answer(o, 0, -e);
        return -1;
    }
    int err = 0;
    if (r->exists || r->dot)
        err = exists_err;
    else if (r->trailing_slash && !slash_ok)
        err = ENOENT;
    if (err) {
        res_out_close(r);
        answer(o, 0, err);
        return -1;
    }
    return 0;
}

static void finish(struct op *o, int rc)
{
    if (rc < 0) {
        answer(o, 0, errno);
        return;
    }
    EMU_COUNT(o->em, emulated);
    answer(o, 0, 0);
}

#define NEW_NODE 0    /* mknod, mkfifo */
#define NEW_DIR 1     /* mkdir */
#define NEW_SYMLINK 2 /* symlink: the link's text at argument texti */

/* mknod, mkdir, symlink: one new name, resolved and checked, then made on
 * the pinned parent. */
static void do_create(struct op *o, int what, int dirfd, int pathi, int texti, mode_t mode,
                      dev_t dev)
{
    const char *act = "file-write-create";
    char text[PATH_MAX], path[PATH_MAX];
    if ((what == NEW_SYMLINK && get_path(o, texti, text, act) < 0) ||
        get_path(o, pathi, path, act) < 0 || prepare_start(o, dirfd, path, act) < 0)
        return;
    if (!still_valid(o) || become_target(o, act) < 0)
        return;
    if (what == NEW_SYMLINK && !text[0])
        return answer(o, 0, ENOENT);
    struct res_out r;
    if (resolve_new(o, dirfd, path, &r, EEXIST, what == NEW_DIR) < 0)
        return;
    /* a symlink's type cannot be pinned: every glob applies */
    int kind = what == NEW_DIR ? GLOB_DIR : what == NEW_SYMLINK ? GLOB_ANY : GLOB_FILE;
    if (check_new(o, &r, kind, act, path)) {
        res_out_close(&r);
        return;
    }
    int rc;
    if (what == NEW_DIR) {
        rc = mkdirat(r.parentfd, r.name, mode);
    } else if (what == NEW_SYMLINK) {
        rc = symlinkat(text, r.parentfd, r.name);
    } else {
        if ((mode & S_IFMT) == 0 || S_ISREG(mode))
            mode &= ~(mode_t)(S_ISUID | S_ISGID);
        rc = mknodat(r.parentfd, r.name, mode, dev);
    }
    int e = errno;
    res_out_close(&r);
    errno = e;
    finish(o, rc);
}

/* ------------------------------------------------------------------ */
/* link, rename                                                         */
/* ------------------------------------------------------------------ */

static void do_link(struct op *o, int olddfd, int oldi, int newdfd, int newi, int flags)
{
    const char *act = "file-link";
    char oldp[PATH_MAX], newp[PATH_MAX];
    if (get_path(o, oldi, oldp, act) < 0 || get_path(o, newi, newp, act) < 0 ||
        prepare_start(o, olddfd, oldp[0] ? oldp : ".", act) < 0 ||
        prepare_start(o, newdfd, newp, act) < 0)
        return;
    if (!still_valid(o) || become_target(o, act) < 0)
        return;
    if (flags & ~(AT_SYMLINK_FOLLOW | AT_EMPTY_PATH))
        return answer(o, 0, EINVAL);

    int src = -1, so_parent = -1;
    char so_name[NAME_MAX + 1] = "";
    struct res_out so = {.parentfd = -1, .objfd = -1};
    if (!oldp[0] && (flags & AT_EMPTY_PATH)) {
        src = olddfd == AT_FDCWD ? fcntl(o->t.cwdfd, F_DUPFD_CLOEXEC, 3)
                                 : magic_cb(o, RES_MAGIC_FD, olddfd);
        if (src < 0)
            return answer(o, 0, -src);
    } else {
        int owned;
        int start = start_dir(o, olddfd, oldp, &owned);
        if (start < 0 && oldp[0] != '/')
            return answer(o, 0, start == -EBADF ? EBADF : -start);
        int e = do_resolve(o, start, oldp, (flags & AT_SYMLINK_FOLLOW) ? RES_FOLLOW : 0, &so);
        if (owned)
            close(start);
        if (e < 0)
            return answer(o, 0, -e);
        if (!so.exists) {
            res_out_close(&so);
            return answer(o, 0, ENOENT);
        }
        src = so.objfd;
        so.objfd = -1;
        if (!so.magic && so.parentfd >= 0) {
            so_parent = so.parentfd; /* kept for the protected-path check */
            so.parentfd = -1;
            snprintf(so_name, sizeof so_name, "%s", so.name);
        }
        res_out_close(&so);
    }
    struct stat st;
    if (fstat(src, &st) < 0 || S_ISDIR(st.st_mode)) {
        if (so_parent >= 0)
            close(so_parent);
        close(src);
        return answer(o, 0, EPERM);
    }
    struct res_out r;
    if (resolve_new(o, newdfd, newp, &r, EEXIST, 0) < 0) {
        if (so_parent >= 0)
            close(so_parent);
        close(src);
        return;
    }
    if (check_new(o, &r, GLOB_FILE, act, newp)) {
        if (so_parent >= 0)
            close(so_parent);
        res_out_close(&r);
        close(src);
        return;
    }
    /* A second name for a protected file would let it be written. */
    const char *which = NULL;
    int rc0 = so_parent >= 0 ? path_rules_check(o->em->rules, so_parent, so_name, &which)
                             : path_rules_check_obj(o->em->rules, src, &which);
    if (rc0 == 0 && so_parent >= 0 && S_ISREG(st.st_mode) && st.st_nlink > 1)
        rc0 = path_rules_check_ident(o->em->rules, src, &which); /* linked already */
    if (so_parent >= 0)
        close(so_parent);
    so_parent = -1;
    if (rc0 != 0) {
        deny_rule(o, rc0, which, act, oldp, oldp);
        res_out_close(&r);
        close(src);
        return;
    }
    char p[64];
    snprintf(p, sizeof p, "/proc/self/fd/%d", src);
    int rc = linkat(AT_FDCWD, p, r.parentfd, r.name, AT_SYMLINK_FOLLOW);
    int e = errno;
    res_out_close(&r);
    close(src);
    errno = e;
    finish(o, rc);
}

/*
 * 1 when the object is the root of a mount stacked on that name *in the
 * sandbox's* mount tree. The kernel refuses to rename such a name (EBUSY),
 * but it decides that from the caller's mount namespace, and ours does not
 * have the sandbox's bind mounts: without this check a rename done for the
 * target would replace the file under a read-only bind (.git/config).
 */
static int is_mount_root(int parentfd, int objfd)
{
    struct statx a, b;
    if (statx(parentfd, "", AT_EMPTY_PATH, STATX_MNT_ID, &a) < 0 ||
        statx(objfd, "", AT_EMPTY_PATH, STATX_MNT_ID, &b) < 0)
        return -errno;
    if (!(a.stx_mask & STATX_MNT_ID) || !(b.stx_mask & STATX_MNT_ID))
        return -ENOSYS;
    return a.stx_mnt_id != b.stx_mnt_id || (b.stx_attributes & STATX_ATTR_MOUNT_ROOT);
}

static void do_rename(struct op *o, int olddfd, int oldi, int newdfd, int newi, unsigned flags)
{
    const char *act = "file-rename";
    char oldp[PATH_MAX], newp[PATH_MAX];
    if (get_path(o, oldi, oldp, act) < 0 || get_path(o, newi, newp, act) < 0 ||
        prepare_start(o, olddfd, oldp, act) < 0 || prepare_start(o, newdfd, newp, act) < 0)
        return;
    if (!still_valid(o) || become_target(o, act) < 0)
        return;
    if ((flags & ~(unsigned)(RENAME_NOREPLACE | RENAME_EXCHANGE | RENAME_WHITEOUT)) ||
        ((flags & RENAME_EXCHANGE) && (flags & (RENAME_NOREPLACE | RENAME_WHITEOUT))))
        return answer(o, 0, EINVAL);

    struct res_out a, b;
    int owned;
    int start = start_dir(o, olddfd, oldp, &owned);
    if (start < 0 && oldp[0] != '/')
        return answer(o, 0, start == -EBADF ? EBADF : -start);
    int e = do_resolve(o, start, oldp, 0, &a);
    if (owned)
        close(start);
    if (e < 0)
        return answer(o, 0, -e);
    if (a.dot || a.magic) {
        res_out_close(&a);
        return answer(o, 0, EBUSY);
    }
    if (!a.exists) {
        res_out_close(&a);
        return answer(o, 0, ENOENT);
    }
    start = start_dir(o, newdfd, newp, &owned);
    if (start < 0 && newp[0] != '/') {
        res_out_close(&a);
        return answer(o, 0, start == -EBADF ? EBADF : -start);
    }
    e = do_resolve(o, start, newp, 0, &b);
    if (owned)
        close(start);
    if (e < 0) {
        res_out_close(&a);
        return answer(o, 0, -e);
    }
    int err = 0;
    int ma = is_mount_root(a.parentfd, a.objfd);
    int mb = b.exists && !b.dot && !b.magic ? is_mount_root(b.parentfd, b.objfd) : 0;
    if (ma < 0 || mb < 0) {
        res_out_close(&a);
        res_out_close(&b);
        return fail(o, act, newp, "checking for mount points", ma < 0 ? ma : mb);
    }
    if (b.dot || b.magic || ma || mb)
        err = EBUSY;
    else if ((a.trailing_slash || b.trailing_slash) && !S_ISDIR(a.st.st_mode))
        err = ENOTDIR;
    if (err) {
        res_out_close(&a);
        res_out_close(&b);
        return answer(o, 0, err);
    }
    /* The moved object's type cannot be pinned until the rename happens,
     * so every glob applies to the new name (and to the old one, which
     * receives the other object, on exchange). */
    if (check_new(o, &b, GLOB_ANY, act, newp) ||
        ((flags & RENAME_EXCHANGE) && check_glob(o, &a, GLOB_ANY, act, oldp)) ||
        check_rules(o, &a, act, oldp)) {
        res_out_close(&a);
        res_out_close(&b);
        return;
    }
    long rc = syscall(__NR_renameat2, a.parentfd, a.name, b.parentfd, b.name, flags);
    e = errno;
    res_out_close(&a);
    res_out_close(&b);
    errno = e;
    finish(o, (int)rc);
}

/* ------------------------------------------------------------------ */
/* bind                                                                 */
/* ------------------------------------------------------------------ */

static void do_bind(struct op *o)
{
    const char *act = "file-write-create";
    int sockfd = arg_int(o, 0);
    int len = arg_int(o, 2);
    struct sockaddr_storage ss;
    if (len < 0 || (size_t)len > sizeof ss)
        return answer(o, 0, EINVAL);
    memset(&ss, 0, sizeof ss);
    if (len > 0) {
        int r = read_mem(o, o->d->args[1], &ss, (size_t)len);
        if (r == -EFAULT || r == -ESRCH)
            return answer(o, 0, -r);
        if (r < 0)
            return fail(o, act, NULL, "reading the address", r);
    }
    struct sockaddr_un *un = (struct sockaddr_un *)&ss;
    size_t off = offsetof(struct sockaddr_un, sun_path);
    /* The kernel's own limit; longer would also overrun path[] below. */
    if (ss.ss_family == AF_UNIX && (size_t)len > sizeof *un)
        return answer(o, 0, EINVAL);
    int path_bind = ss.ss_family == AF_UNIX && (size_t)len > off && un->sun_path[0] != 0;
    char path[sizeof un->sun_path + 1];
    if (path_bind) {
        size_t plen = strnlen(un->sun_path, (size_t)len - off);
        memcpy(path, un->sun_path, plen);
        path[plen] = 0;
        if (prepare_start(o, AT_FDCWD, path, act) < 0)
            return;
    }
    if (!still_valid(o))
        return;
    int sock = magic_cb(o, RES_MAGIC_FD, sockfd);
    if (sock < 0)
        return answer(o, 0, sock == -EACCES ? EACCES : EBADF);
    if (become_target(o, act) < 0) {
        close(sock);
        return;
    }
    if (!path_bind) {
        int port = -1;
        /* An IPv4 socket also takes AF_UNSPEC (with INADDR_ANY) as AF_INET. */
        if ((ss.ss_family == AF_INET || ss.ss_family == AF_UNSPEC) &&
            len >= (int)sizeof(struct sockaddr_in))
            port = ntohs(((struct sockaddr_in *)&ss)->sin_port);
        else if (ss.ss_family == AF_INET6 && len >= (int)sizeof(struct sockaddr_in6))
            port = ntohs(((struct sockaddr_in6 *)&ss)->sin6_port);
        /* We own the sandbox's user namespace, so the kernel would let us
         * bind ports the target may not. */
        if (port > 0 && port < 1024 && !o->t.cap_net_bind) {
            close(sock);
            return answer(o, 0, EACCES);
        }
        int rc = bind(sock, (struct sockaddr *)&ss, (socklen_t)len);
        int e = errno;
        close(sock);
        errno = e;
        return finish(o, rc);
    }
    struct res_out r;
    if (resolve_new(o, AT_FDCWD, path, &r, EADDRINUSE, 0) < 0) {
        close(sock);
        return;
    }
    if (check_new(o, &r, GLOB_FILE, act, path)) {
        res_out_close(&r);
        close(sock);
        return;
    }
    /* bind(2) resolves sun_path from the cwd: this thread has its own. */
    struct sockaddr_un a;
    memset(&a, 0, sizeof a);
    a.sun_family = AF_UNIX;
    size_t nl = strlen(r.name);
    if (nl >= sizeof a.sun_path) { /* cannot happen: the name came from sun_path */
        res_out_close(&r);
        close(sock);
        return answer(o, 0, ENAMETOOLONG);
    }
    memcpy(a.sun_path, r.name, nl + 1);
    int rc = -1, e = 0;
    if (fchdir(r.parentfd) < 0) {
        e = errno;
    } else {
        rc = bind(sock, (struct sockaddr *)&a,
                  (socklen_t)(off + strlen(a.sun_path) + 1));
        e = errno;
        if (chdir("/") < 0) {
            /* Holding a sandbox directory as cwd is harmless until the
             * next bind replaces it. */
        }
    }
    res_out_close(&r);
    close(sock);
    errno = e;
    finish(o, rc);
}

/* ------------------------------------------------------------------ */
/* The static denials that are reported                                 */
/* ------------------------------------------------------------------ */

static void do_denied(struct op *o)
{
    char *name = seccomp_syscall_resolve_num_arch(SCMP_ARCH_NATIVE, o->d->nr);
    char detail[PATH_MAX + 64] = "";
    int nr = o->d->nr;
    int pathi = (nr == __NR_fchmodat || nr == __NR_fchmodat2) ? 1 : -1;
#ifdef __NR_chmod
    if (nr == __NR_chmod)
        pathi = 0;
#endif
    if (pathi >= 0) {
        char p[PATH_MAX];
        if (read_str(o, o->d->args[pathi], p, sizeof p) >= 0)
            snprintf(detail, sizeof detail, " on \"%s\" (set-user-ID/set-group-ID bit)", p);
    } else if (nr == __NR_fchmod) {
        snprintf(detail, sizeof detail, " (set-user-ID/set-group-ID bit)");
    }
    if (still_valid(o)) {
        EMU_COUNT(o->em, denied);
        report(o, "syscall", name ? name : "?", "%s%s by pid %d denied by the sandbox",
               name ? name : "syscall", detail, (int)o->t.tid);
        answer(o, 0, EPERM);
    }
    free(name);
}

/* ------------------------------------------------------------------ */

int emu_init(struct emu *em, const char *const *globs, const struct path_rules *rules,
             emu_report_fn rep, void *ud, struct emu_counters *cnt, char *err, size_t errlen)
{
    memset(em, 0, sizeof *em);
    em->cnt = cnt;
    em->rules = rules;
    int r = glob_set_init(&em->globs, globs, err, errlen);
    if (r)
        return r;
    r = creds_init(&em->creds);
    if (r < 0) {
        glob_set_clear(&em->globs);
        snprintf(err, errlen, "guard thread credentials: %s", strerror(-r));
        return CCSB_E_IO;
    }
    target_cache_init(&em->cache);
    em->report = rep;
    em->report_ud = ud;
    return 0;
}

void emu_clear(struct emu *em)
{
    for (int i = 0; i < em->n_pending; i++) {
        unotify_respond(em->pending[i].listener, em->pending[i].id, 0, EINTR);
        close(em->pending[i].objfd);
    }
    em->n_pending = 0;
    target_cache_clear(&em->cache);
    glob_set_clear(&em->globs);
}

void emu_handle(struct emu *em, int listener, uint64_t tag, const struct seccomp_notif *n)
{
    struct op o = {.em = em, .listener = listener, .id = n->id, .tag = tag, .d = &n->data};
    EMU_COUNT(em, notifications);
    o.call = "syscall";
    /* Every tid handle (status, root, pidfd) is opened before the id check. */
    int r = target_open_cached(&em->cache, &o.t, (pid_t)n->pid, host_cb, &em->creds);
    if (r < 0) {
        if (unotify_id_valid(listener, n->id) != 0)
            goto out; /* it went away: nothing to answer */
        o.t.tid = (pid_t)n->pid;
        fail(&o, "guard-error", "", "inspecting the calling task", r);
        goto out;
    }
    const struct seccomp_data *d = &n->data;
    switch (d->nr) {
#ifdef __NR_open
    case __NR_open:
        o.call = "open";
        do_open(&o, AT_FDCWD, 0, arg_int(&o, 1), (mode_t)d->args[2]);
        break;
#endif
    case __NR_openat:
        o.call = "openat";
        do_open(&o, arg_int(&o, 0), 1, arg_int(&o, 2), (mode_t)d->args[3]);
        break;
#ifdef __NR_truncate
    case __NR_truncate:
        o.call = "truncate";
        do_truncate(&o);
        break;
#endif
#ifdef __NR_creat
    case __NR_creat:
        o.call = "creat";
        do_open(&o, AT_FDCWD, 0, O_CREAT | O_WRONLY | O_TRUNC, (mode_t)d->args[1]);
        break;
#endif
#ifdef __NR_mknod
    case __NR_mknod:
        o.call = "mknod";
        do_create(&o, NEW_NODE, AT_FDCWD, 0, -1, (mode_t)d->args[1], (dev_t)(uint32_t)d->args[2]);
        break;
#endif
    case __NR_mknodat:
        o.call = "mknodat";
        do_create(&o, NEW_NODE, arg_int(&o, 0), 1, -1, (mode_t)d->args[2],
                  (dev_t)(uint32_t)d->args[3]);
        break;
#ifdef __NR_mkdir
    case __NR_mkdir:
        o.call = "mkdir";
        do_create(&o, NEW_DIR, AT_FDCWD, 0, -1, (mode_t)d->args[1], 0);
        break;
#endif
    case __NR_mkdirat:
        o.call = "mkdirat";
        do_create(&o, NEW_DIR, arg_int(&o, 0), 1, -1, (mode_t)d->args[2], 0);
        break;
#ifdef __NR_symlink
    case __NR_symlink:
        o.call = "symlink";
        do_create(&o, NEW_SYMLINK, AT_FDCWD, 1, 0, 0, 0);
        break;
#endif
    case __NR_symlinkat:
        o.call = "symlinkat";
        do_create(&o, NEW_SYMLINK, arg_int(&o, 1), 2, 0, 0, 0);
        break;
#ifdef __NR_link
    case __NR_link:
        o.call = "link";
        do_link(&o, AT_FDCWD, 0, AT_FDCWD, 1, 0);
        break;
#endif
    case __NR_linkat:
        o.call = "linkat";
        do_link(&o, arg_int(&o, 0), 1, arg_int(&o, 2), 3, arg_int(&o, 4));
        break;
#ifdef __NR_rename
    case __NR_rename:
        o.call = "rename";
        do_rename(&o, AT_FDCWD, 0, AT_FDCWD, 1, 0);
        break;
#endif
    case __NR_renameat:
        o.call = "renameat";
        do_rename(&o, arg_int(&o, 0), 1, arg_int(&o, 2), 3, 0);
        break;
    case __NR_renameat2:
        o.call = "renameat2";
        do_rename(&o, arg_int(&o, 0), 1, arg_int(&o, 2), 3, (unsigned)d->args[4]);
        break;
    case __NR_bind:
        o.call = "bind";
        do_bind(&o);
        break;
    default:
        do_denied(&o);
        break;
    }
    if (!o.answered)
        fail(&o, "guard-error", "", "no answer was produced", EPROTO);
out:
    target_close(&o.t);
}

static void drop_pending(struct emu *em, int i)
{
    close(em->pending[i].objfd);
    em->pending[i] = em->pending[--em->n_pending];
}

int emu_tick(struct emu *em)
{
    for (int i = 0; i < em->n_pending;) {
        struct emu_pending *p = &em->pending[i];
        if (unotify_id_valid(p->listener, p->id) != 0) {
            drop_pending(em, i);
            continue;
        }
        if (creds_target(&em->creds, &p->creds) < 0) {
            unotify_respond(p->listener, p->id, 0, EACCES);
            drop_pending(em, i);
            continue;
        }
        int fd = reopen(p->objfd, p->flags | O_NONBLOCK);
        if (fd == -ENXIO) {
            i++;
            continue;
        }
        if (fd < 0) {
            unotify_respond(p->listener, p->id, 0, -fd);
        } else {
            fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
            int r = unotify_addfd_send(p->listener, p->id, fd, p->cloexec ? O_CLOEXEC : 0);
            if (r < 0 && r != -ENOENT)
                unotify_respond(p->listener, p->id, 0, -r);
            close(fd);
            EMU_COUNT(em, emulated);
        }
        drop_pending(em, i);
    }
    return em->n_pending;
}

void emu_forget_listener(struct emu *em, int listener)
{
    for (int i = 0; i < em->n_pending;) {
        if (em->pending[i].listener == listener)
            drop_pending(em, i);
        else
            i++;
    }
}
