/*
 * The guard's attack harness: each scenario runs in a child that installs
 * the real filter and hands its listener to a supervisor in the parent (on
 * a libevent base), directly or inside a real bwrap sandbox. The parent
 * then checks the host for files that must not exist and the violation
 * events that must have been reported.
 */
#ifndef CCSB_TESTS_GUARD_HARNESS_H
#define CCSB_TESTS_GUARD_HARNESS_H

#define NEEDS_PYTHON 1
#define NEEDS_GIT 2
#define NEEDS_CC 4
#define NEEDS_BWRAP 8 /* only meaningful inside the sandbox */

struct scenario {
    const char *name;
    /* Runs in the sandboxed child with cwd = the workdir. 0: behaved as
     * required (the attack failed, or the legitimate work succeeded). */
    int (*fn)(void);
    const char *sh;              /* or a shell script (exit 0 = as required) */
    const char *expect_action;   /* a violation with this action must be reported */
    const char *expect_target;   /* ... whose target contains this */
    const char *must_exist[4];   /* relative paths that must exist afterwards */
    int needs;
    int kill_supervisor;         /* the supervisor process is SIGKILLed first */
    const char *setup;           /* shell run on the host in the workdir first */
    int finish;                  /* FINISH_*: when guard_supervisor_finish is called */
};

/* Told to finish right after it took the listener, while the child runs
 * (it must keep answering until the child is gone). */
#define FINISH_EARLY 1
/* Told to finish, its thread ended, and only then handed the listener: it
 * must refuse it (closed: the child's creating calls fail at once, never
 * wait for ever or pass) and report that. */
#define FINISH_BEFORE 2

extern const struct scenario guard_scenarios[];
extern const unsigned guard_n_scenarios;

/* Helpers for scenarios. */
int expect_fail(int rc, int err, const char *what);
int expect_errno_in(int rc, const char *what, int e1, int e2);
int exists(const char *path);

#endif
