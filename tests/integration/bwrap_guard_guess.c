/*
 * Integration: a launch plans the sandbox before the seccomp guard's
 * support check has answered (the check runs while bwrap starts). On a
 * host where the check says no, the launch must still come out right:
 * started over with the true answer when the policy can live without the
 * guard, refused (CCSB_E_POLICY) when it cannot, and in both cases with no
 * sandbox, zombie or process of the first attempt left behind.
 *
 * The "host without the guard" is this test process itself: before
 * anything else it loads a seccomp filter that refuses
 * SECCOMP_FILTER_FLAG_NEW_LISTENER, exactly what an older kernel does.
 */
#include <check.h>
#include <errno.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "bwrap_harness.h"

#if defined(__x86_64__)
#define THIS_ARCH AUDIT_ARCH_X86_64
#elif defined(__aarch64__)
#define THIS_ARCH AUDIT_ARCH_AARCH64
#endif

static struct h h;
static char *ws;
static ccsb_spec *spec;

#ifdef THIS_ARCH
/* seccomp(SECCOMP_SET_MODE_FILTER, flags with NEW_LISTENER, ...) -> EINVAL. */
static void refuse_listeners(void)
{
    struct sock_filter f[] = {
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, THIS_ARCH, 1, 0),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_seccomp, 0, 3),
        /* flags: the low half of args[1] (little-endian) */
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args[1])),
        BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, SECCOMP_FILTER_FLAG_NEW_LISTENER, 0, 1),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EINVAL),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
    };
    struct sock_fprog prog = {sizeof f / sizeof f[0], f};
    ck_assert_int_eq(prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), 0);
    ck_assert_int_eq(syscall(__NR_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog), 0);
}
#endif

/* Our children named bwrap, zombies included. */
static int bwrap_children(void)
{
    return h_children_named("bwrap", 1, NULL, 0);
}

static void setup(void)
{
#ifndef THIS_ARCH
    return;
#else
    refuse_listeners();
    h_init(&h);
    ws = h_tmpdir("guess");
    ck_assert_int_eq(ccsb_spec_new(&spec), 0);
    ccsb_spec_set_backend(spec, CCSB_BACKEND_NATIVE);
    ccsb_spec_add_bind_mount(spec, ws, NULL, 0);
    ccsb_spec_set_guest_workdir(spec, ws);
#endif
}

static void teardown(void)
{
#ifdef THIS_ARCH
    h_done(&h);
    ccsb_spec_free(spec);
    h_rmtree(ws);
    free(ws);
#endif
}

START_TEST(no_guard_no_globs_starts_over_and_runs)
{
#ifdef THIS_ARCH
    int r = h_launch(&h, spec);
    ck_assert_msg(r == 0, "launch: %s: %s", ccsb_strerror(r), h_errmsg(&h));
    /* the first attempt's sandbox is gone and reaped: one bwrap, ours */
    ck_assert_int_eq(bwrap_children(), 1);
    struct h_exec *x = h_run(&h, "echo ok > f && cat f");
    ck_assert_int_eq(x->code, 0);
    ck_assert_str_eq(x->out, "ok\n");
    /* the static part of the guard still applies without a listener */
    x = h_run(&h, "unshare -U true");
    ck_assert_int_ne(x->code, 0);
    ccsb_session_destroy(h.s);
    h.s = NULL;
    ck_assert_int_eq(bwrap_children(), 0);
#endif
}
END_TEST

START_TEST(no_guard_with_globs_is_refused_and_leaves_nothing)
{
#ifdef THIS_ARCH
    ck_assert_int_eq(ccsb_spec_add_deny_write_glob(spec, "*.key"), 0);
    char *before = h_snapshot(ws);
    int r = h_launch(&h, spec);
    ck_assert_int_eq(r, CCSB_E_POLICY);
    ck_assert_msg(strstr(h_errmsg(&h), "cannot be enforced") != NULL, "%s", h_errmsg(&h));
    ck_assert_ptr_null(h.s);
    ck_assert_int_eq(bwrap_children(), 0);
    char *after = h_snapshot(ws);
    ck_assert_str_eq(before, after); /* no placeholder left */
    free(before);
    free(after);
    /* known now: the next launch fails the same way without starting bwrap */
    r = h_launch(&h, spec);
    ck_assert_int_eq(r, CCSB_E_POLICY);
    ck_assert_int_eq(bwrap_children(), 0);
#endif
}
END_TEST

int main(void)
{
    Suite *s = suite_create("bwrap-guard-guess");
    TCase *tc = h_tcase("guess", 60, setup, teardown);
    tcase_add_test(tc, no_guard_no_globs_starts_over_and_runs);
    tcase_add_test(tc, no_guard_with_globs_is_refused_and_leaves_nothing);
    suite_add_tcase(s, tc);
    return h_run_suite(s);
}
