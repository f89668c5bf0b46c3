/*
 * The Linux seccomp guard: a static deny filter for the sandboxed command
 * and a user-notification supervisor that enforces create-time filename
 * rules (deny-write globs such as ".env", "*.key", "*.pem").
 *
 * Two halves with a narrow interface:
 *  - sandbox side (ccsb-init, or a test child): build the filter program
 *    once, load it in the process that will exec the untrusted command and
 *    hand the listener fd to the host over SCM_RIGHTS, then close it;
 *  - host side: a supervisor that owns listener fds, answers every trapped
 *    call itself (never CONTINUE), and reports denials on a libevent base.
 *
 * docs/guard.md has the design and the exact rules.
 */
#ifndef CCSB_GUARD_GUARD_H
#define CCSB_GUARD_GUARD_H

#include <stddef.h>
#include <stdint.h>

struct event_base;

/* ------------------------------------------------------------------ */
/* Sandbox side                                                         */
/* ------------------------------------------------------------------ */

struct guard_filter_cfg {
    /* 0: socket(AF_UNIX) fails with EPERM (socketpair stays allowed). */
    int allow_unix_sockets;
    /* 1: trap creating calls (and report the static denials) to a listener.
     * 0: static deny filter only, every denial answered in the kernel. */
    int notify;
    /* 1: also trap mkdir/mkdirat; only needed for directory-shaped globs. */
    int trap_mkdir;
    /* 1: also trap opens for writing (O_WRONLY, O_RDWR, O_TRUNC) and
     * truncate: a protected file the host replaced during the session has
     * lost its read-only bind, and only its name still protects it. */
    int trap_writes;
};

/* A compiled filter: plain memory, usable after fork without allocating. */
struct guard_program;

int guard_program_build(const struct guard_filter_cfg *cfg, struct guard_program **out,
                        char *err, size_t errlen);
/*
 * Sets no_new_privs and loads the program into the calling thread (threads
 * created afterwards inherit it). Async-signal-safe. With notify, the new
 * listener fd (close-on-exec) is stored in *listener_fd. Returns 0 or -errno.
 */
int guard_program_load(const struct guard_program *p, int *listener_fd);
void guard_program_free(struct guard_program *p);
/*
 * The program as a sealed memfd of struct sock_filter[] (close-on-exec), for
 * a loader in another process (ccsb-init); *flags gets the seccomp(2) flags
 * to load it with. Returns the fd or -errno.
 */
int guard_program_memfd(const struct guard_program *p, unsigned long *flags);

/* Build + load in one call, for callers that may allocate. */
int guard_filter_install(const struct guard_filter_cfg *cfg, int *listener_fd,
                         char *err, size_t errlen);

/* ------------------------------------------------------------------ */
/* Host side                                                            */
/* ------------------------------------------------------------------ */

/*
 * 1 when this kernel offers everything enforcement needs (user notification
 * with ADDFD+SEND, killable waits, pidfd_getfd, reading target memory),
 * checked end to end in a short-lived child. 0 with a reason in why.
 */
int guard_supported(char *why, size_t whylen);

/*
 * Validates deny-write globs: non-empty, a final-component pattern (no '/'
 * except one trailing '/' that makes it directory-shaped), not "." or "..",
 * at most NAME_MAX bytes. 0 or CCSB_E_SPEC with "denyWriteGlobs[i]: ...".
 */
int guard_globs_validate(const char *const *globs, size_t n, char *err, size_t errlen);

/*
 * Called on the loop thread for each denial. tag is the listener's tag
 * (e.g. the exec id). action: "file-write-create", "file-rename",
 * "file-link", "syscall" or "guard-error"; target: the path as the sandbox
 * sees it, or the syscall name; raw: the call and the reason.
 */
typedef void (*guard_violation_fn)(void *ud, uint64_t tag, const char *action,
                                   const char *target, const char *raw);

struct guard_supervisor;

/*
 * Starts a supervisor thread and registers its report pipe on base. globs is
 * NULL-terminated (may be empty). Call it, add_listener and free on the
 * thread that runs base.
 */
int guard_supervisor_new(struct event_base *base, const char *const *globs,
                         guard_violation_fn cb, void *ud, struct guard_supervisor **out,
                         char *err, size_t errlen);
/*
 * A protected path that did not exist at launch (see pathrules.h): anchor is
 * the host path of its deepest existing directory, rest the missing part
 * below it ("a" or "a/b"). Creating, replacing, moving, linking or opening
 * for writing anything at that path, at any missing directory on the way to
 * it, or inside it (should the host make it meanwhile) is refused.
 */
struct guard_path_rule {
    const char *anchor;
    const char *rest;
    /* 1: a file, never a directory (one component only): just the name at
     * the anchor, and the object behind it, are checked, with no lookup
     * for calls elsewhere. 0: it may be (or become) a directory, and what
     * is inside it is protected too. An existing regular file is taken
     * as 1 either way. */
    int file;
};

/*
 * guard_supervisor_new plus protected-path rules. Their anchors are opened
 * here, with the caller's identity; a missing anchor fails with
 * CCSB_E_POLICY (nothing would be enforced). rules may be NULL when n is 0.
 */
int guard_supervisor_new_with_paths(struct event_base *base, const char *const *globs,
                                    const struct guard_path_rule *rules, size_t nrules,
                                    guard_violation_fn cb, void *ud,
                                    struct guard_supervisor **out, char *err, size_t errlen);
/*
 * guard_supervisor_new_with_paths in two halves, so that a launch starts
 * the thread while the sandbox is being built: _start (any thread; the
 * rules are copied, globs must stay valid until _watch) makes it and lets
 * it run, _watch (the base's thread) waits for its start-up checks and
 * registers its report pipe on the base. A failed _watch leaves g to
 * guard_supervisor_free.
 */
int guard_supervisor_start_with_paths(struct event_base *base, const char *const *globs,
                                      const struct guard_path_rule *rules, size_t nrules,
                                      guard_violation_fn cb, void *ud,
                                      struct guard_supervisor **out, char *err, size_t errlen);
int guard_supervisor_watch(struct guard_supervisor *g, char *err, size_t errlen);
/* Takes ownership of listener_fd (closed on every path). A listener it
 * cannot take (out of memory, the thread has ended) is closed, so that the
 * command's trapped calls fail at once (ENOSYS), and a "guard-error"
 * report with the tag says so. */
int guard_supervisor_add_listener(struct guard_supervisor *g, int listener_fd, uint64_t tag,
                                  char *err, size_t errlen);
/* The sandbox is going away: the thread ends by itself once every listener
 * has hung up (no task of any filter is left) and none waits to be taken,
 * still answering until then, so that guard_supervisor_free has nothing
 * left to wait for. A listener added after that is refused (see above). */
void guard_supervisor_finish(struct guard_supervisor *g);
/* Stops the thread and closes every listener: trapped calls still waiting
 * fail (ENOSYS); nothing is let through. Queued reports are dropped. */
void guard_supervisor_free(struct guard_supervisor *g);
/* Delivers, now, every report queued so far (loop thread). A report is
 * queued before the trapped call is answered, so after this every denial
 * the sandbox has already seen has been reported. */
void guard_supervisor_flush_reports(struct guard_supervisor *g);

struct guard_stats {
    uint64_t notifications; /* received */
    uint64_t emulated;      /* performed for the target (success or errno) */
    uint64_t denied;        /* refused by policy */
    uint64_t errors;        /* refused because of an internal error */
    uint64_t listeners;     /* currently watched */
    uint64_t busy_ns;       /* supervisor time spent answering, in total */
};
void guard_supervisor_stats(struct guard_supervisor *g, struct guard_stats *out);

#endif
