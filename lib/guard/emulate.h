/*
 * Answering one notification: copy the arguments once, check the id is
 * still valid, resolve inside the target's root with the target's
 * credentials, apply the globs, perform the call ourselves and answer with
 * the result (ADDFD+SEND for fds). Never CONTINUE; any internal error
 * answers EACCES and is reported. Runs on the supervisor thread only.
 */
#ifndef CCSB_GUARD_EMULATE_H
#define CCSB_GUARD_EMULATE_H

#include <linux/seccomp.h>
#include <stdint.h>

#include "guard/creds.h"
#include "guard/glob.h"
#include "guard/pathrules.h"

typedef void (*emu_report_fn)(void *ud, uint64_t tag, const char *action,
                              const char *target, const char *raw);

#define EMU_MAX_PENDING 32

/* An open of a FIFO that has no reader yet, retried until one appears. */
struct emu_pending {
    int listener;
    uint64_t id;
    uint64_t tag;
    int objfd;
    int flags;
    int cloexec;
    struct target_creds creds;
};

/* Shared with other threads: updated with atomics before each answer. */
struct emu_counters {
    uint64_t notifications, emulated, denied, errors, listeners;
    uint64_t busy_ns; /* time spent answering */
};
#define EMU_COUNT(em, f) __atomic_fetch_add(&(em)->cnt->f, 1, __ATOMIC_RELAXED)

struct emu {
    struct creds_state creds;
    struct target_cache cache;
    struct glob_set globs;
    const struct path_rules *rules; /* borrowed; may be NULL */
    emu_report_fn report;
    void *report_ud;
    struct emu_pending pending[EMU_MAX_PENDING];
    int n_pending;
    struct emu_counters *cnt;
};

/* On the supervisor thread: creds_init and the glob copy (rules are
 * borrowed and must outlive em). 0 or CCSB_E_*. */
int emu_init(struct emu *em, const char *const *globs, const struct path_rules *rules,
             emu_report_fn report, void *ud,
             struct emu_counters *cnt, char *err, size_t errlen);
void emu_clear(struct emu *em);

void emu_handle(struct emu *em, int listener, uint64_t tag, const struct seccomp_notif *n);
/* Retries pending FIFO opens; returns how many are still waiting. */
int emu_tick(struct emu *em);
/* Drops what waits on a listener that is about to be closed. */
void emu_forget_listener(struct emu *em, int listener);

#endif
