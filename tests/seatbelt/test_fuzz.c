/*
 * Fuzzed policies: random paths built from hostile bytes (quotes,
 * parentheses, backslashes, newlines, regex and glob metacharacters,
 * UTF-8), random symlinks, random globs. Every generated profile must pass
 * the structural checker and keep the invariants below under both
 * precedence readings. Also: the log parser on random and mutated lines.
 *
 * Deterministic: seed 1 unless CCSB_FUZZ_SEED is set; iterations from
 * CCSB_FUZZ_ITERS (default 300, bounded at 20000).
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ccsandbox/ccsandbox.h>

#include "backend/seatbelt_log.h"
#include "backend/seatbelt_profile.h"
#include "fixture.h"
#include "policy/policy.h"
#include "sbpl_check.h"

static unsigned seed0 = 1;
static unsigned iters = 300;

static const char *const pieces[] = {
    "a", "b", "src", ".git", "hooks", "dir", "x y", "q\"uote", "pa)ren", "(open", "back\\",
    "new\nline", "tab\t", "semi;", "dot.dot", "st*ar", "qu?st", "[br]", "{cu}", "pi|pe",
    "ca^ret", "do$llar", "pl+us", "ünï", "名前", "#\"re", "-", "_", "..x", ".x.",
};
#define N_PIECES (sizeof(pieces) / sizeof(pieces[0]))

static const char *const tops[] = {"/Users/dev", "/tmp", "/var/folders/zz", "/srv", "/private/tmp",
                                   "/Volumes/W"};
#define N_TOPS (sizeof(tops) / sizeof(tops[0]))

static unsigned rnd(unsigned *s, unsigned n)
{
    return (unsigned)rand_r(s) % n;
}

/* A random absolute path under a random top, 1..3 components. glob_ok:
 * may contain '*' / '?'. */
static void rand_path(unsigned *s, char *out, size_t len, int glob_ok)
{
    for (;;) {
        snprintf(out, len, "%s", tops[rnd(s, N_TOPS)]);
        unsigned depth = 1 + rnd(s, 3);
        for (unsigned d = 0; d < depth; d++) {
            size_t n = strlen(out);
            snprintf(out + n, len - n, "/%s%s", pieces[rnd(s, N_PIECES)],
                     rnd(s, 3) ? "" : pieces[rnd(s, N_PIECES)]);
        }
        if (glob_ok || !strpbrk(out, "*?"))
            return;
    }
}

static int has_prefix_dir(const char *path, const char *dir)
{
    size_t n = strlen(dir);
    return strncmp(path, dir, n) == 0 && (path[n] == '\0' || path[n] == '/');
}

/* The spellings the fake filesystem gives a path: as written and with the
 * macOS links resolved (nothing in the fuzz world exists beyond /private). */
static void canonical(const char *in, char *out, size_t len)
{
    if (has_prefix_dir(in, "/tmp") || has_prefix_dir(in, "/var"))
        snprintf(out, len, "/private%s", in);
    else
        snprintf(out, len, "%s", in);
}

START_TEST(fuzz_profiles)
{
    unsigned s = seed0;
    for (unsigned it = 0; it < iters; it++) {
        struct ccsb_policy p = {0};
        struct fake_fs fs = {0};
        fake_fs_macos(&fs);
        p.network_enabled = (int)rnd(&s, 2);
        p.mode = (int)rnd(&s, 4);
        p.home = strdup("/Users/dev");
        char buf[512];
        unsigned nroots = rnd(&s, 4), nread = rnd(&s, 6), nwrite = rnd(&s, 6);
        unsigned nglob = rnd(&s, 3), ngrant = rnd(&s, 3);
        for (unsigned i = 0; i < nroots; i++) {
            rand_path(&s, buf, sizeof(buf), 0);
            fx_paths_add(&p.writable_roots, buf, NULL);
        }
        for (unsigned i = 0; i < nread; i++) {
            rand_path(&s, buf, sizeof(buf), 1);
            fx_paths_add(&p.deny_read, buf, NULL);
        }
        for (unsigned i = 0; i < nwrite; i++) {
            if (nroots && rnd(&s, 2)) {
                /* inside a writable root, like the mandatory set */
                const char *root = p.writable_roots.v[rnd(&s, nroots)].path;
                snprintf(buf, sizeof(buf), "%s/%s", root, pieces[rnd(&s, N_PIECES)]);
            } else {
                rand_path(&s, buf, sizeof(buf), 1);
            }
            fx_paths_add(&p.deny_write, buf, NULL);
        }
        for (unsigned i = 0; i < nglob; i++)
            strv_push(&p.deny_write_globs, pieces[rnd(&s, N_PIECES)]);
        for (unsigned i = 0; i < ngrant; i++) {
            rand_path(&s, buf, sizeof(buf), 0);
            fx_paths_add(&p.exec_grant_roots, buf, NULL);
        }
        struct policy_host host = {.resolve = fake_resolve, .resolve_userdata = &fs};
        struct seatbelt_profile_opts o = {.session_id = "fz", .http_port = 1024 + (uint16_t)rnd(&s, 60000),
                                          .socks_port = 1024 + (uint16_t)rnd(&s, 60000), .host = &host};
        char *text = NULL, err[512];
        int rc = seatbelt_profile_generate(&p, &o, &text, err, sizeof(err));
        /* "new\nline", "tab\t" are expressible; nothing here is refused */
        ck_assert_msg(rc == 0, "iteration %u: %s", it, err);
        struct sbpl_profile prof;
        ck_assert_msg(sbpl_parse(text, "ccsb:fz", &prof, err, sizeof(err)) == 0,
                      "iteration %u: checker: %s\n%.1500s", it, err, text);

        char c[600], child[700];
        /* read-denied (non-glob) paths: denied, with everything below */
        for (size_t i = 0; i < p.deny_read.n; i++) {
            if (p.deny_read.v[i].is_glob)
                continue;
            canonical(p.deny_read.v[i].path, c, sizeof(c));
            snprintf(child, sizeof(child), "%s/child", c);
            ck_assert_int_eq(sbpl_path_allowed(&prof, "file-read-data", c), 0);
            ck_assert_int_eq(sbpl_path_allowed(&prof, "file-read-data", child), 0);
            ck_assert_int_eq(sbpl_path_allowed(&prof, "file-link", c), 0);
        }
        /* write-denied: denied; no ancestor renamable */
        for (size_t i = 0; i < p.deny_write.n; i++) {
            if (p.deny_write.v[i].is_glob)
                continue;
            canonical(p.deny_write.v[i].path, c, sizeof(c));
            ck_assert_msg(sbpl_path_allowed(&prof, "file-write-data", c) == 0, "it %u: %s", it, c);
            char anc[600];
            snprintf(anc, sizeof(anc), "%s", c);
            char *slash;
            while ((slash = strrchr(anc, '/')) && slash != anc) {
                *slash = '\0';
                ck_assert_msg(sbpl_path_allowed(&prof, "file-write-unlink", anc) == 0,
                              "it %u: ancestor %s of %s", it, anc, c);
            }
        }
        /* writable roots: a fresh name inside is writable unless something
         * denied covers it; execution there is denied unless granted */
        for (size_t i = 0; i < p.writable_roots.n; i++) {
            canonical(p.writable_roots.v[i].path, c, sizeof(c));
            snprintf(child, sizeof(child), "%s/zz-fuzz-ok", c);
            int covered = p.deny_write_globs.n > 0;
            for (size_t k = 0; k < p.deny_write.n; k++) {
                char d[600];
                canonical(p.deny_write.v[k].path, d, sizeof(d));
                covered |= p.deny_write.v[k].is_glob || has_prefix_dir(child, d);
            }
            for (size_t k = 0; k < p.deny_read.n; k++) {
                char d[600];
                canonical(p.deny_read.v[k].path, d, sizeof(d));
                covered |= p.deny_read.v[k].is_glob || has_prefix_dir(child, d);
            }
            int ok = sbpl_path_allowed(&prof, "file-write-data", child);
            ck_assert_int_ge(ok, 0);
            if (!covered)
                ck_assert_msg(ok == 1, "it %u: %s not writable", it, child);
            int granted = 0;
            for (size_t k = 0; k < p.exec_grant_roots.n; k++) {
                char gr[600];
                canonical(p.exec_grant_roots.v[k].path, gr, sizeof(gr));
                granted |= has_prefix_dir(child, gr);
            }
            ck_assert_int_eq(sbpl_path_allowed(&prof, "process-exec", child), granted);
        }
        /* outside every root, nothing is writable */
        ck_assert_int_eq(sbpl_path_allowed(&prof, "file-write-data", "/opt/zz/fuzz"), 0);
        /* network: the two proxy ports, nothing else on loopback */
        char remote[32];
        snprintf(remote, sizeof(remote), "localhost:%u", (unsigned)o.http_port);
        struct sbpl_req r = {.op = "network-outbound", .remote = remote};
        ck_assert_int_eq(sbpl_eval_both(&prof, &r), 1);
        unsigned other = 1 + (unsigned)o.http_port + (unsigned)o.socks_port % 7;
        if (other != o.http_port && other != o.socks_port && other <= 65535) {
            snprintf(remote, sizeof(remote), "localhost:%u", other);
            ck_assert_int_eq(sbpl_eval_both(&prof, &r), 0);
        }
        sbpl_profile_free(&prof);
        free(text);
        fx_policy_clear(&p);
        fake_fs_clear(&fs);
    }
}
END_TEST

/* Random specs through the public builder and the real policy layer on a
 * fake macOS host: whatever the spec layer accepts must yield a profile the
 * checker accepts, with every protected path denied. */
START_TEST(fuzz_specs)
{
    unsigned s = seed0 + 7;
    unsigned accepted = 0;
    for (unsigned it = 0; it < iters; it++) {
        ccsb_spec *spec = NULL;
        ck_assert_int_eq(ccsb_spec_new(&spec), 0);
        ccsb_spec_set_mode(spec, (int)rnd(&s, 4));
        ccsb_spec_set_network_enabled(spec, (int)rnd(&s, 2));
        char buf[512];
        struct fake_fs fs = {0};
        fake_fs_macos(&fs);
        unsigned nb = rnd(&s, 3);
        for (unsigned i = 0; i < nb; i++) {
            rand_path(&s, buf, sizeof(buf), 0);
            char canon[600];
            canonical(buf, canon, sizeof(canon));
            strv_push(&fs.exists, canon);
            ccsb_spec_add_bind_mount(spec, buf, NULL, (int)rnd(&s, 2));
        }
        for (unsigned i = rnd(&s, 4); i > 0; i--) {
            rand_path(&s, buf, sizeof(buf), 1);
            ccsb_spec_add_protected_path(spec, buf);
        }
        for (unsigned i = rnd(&s, 3); i > 0; i--) {
            rand_path(&s, buf, sizeof(buf), 1);
            ccsb_spec_add_deny_read(spec, buf);
        }
        for (unsigned i = rnd(&s, 2); i > 0; i--) {
            rand_path(&s, buf, sizeof(buf), 0);
            ccsb_spec_add_runner_state_dir(spec, buf);
        }
        for (unsigned i = rnd(&s, 2); i > 0; i--) {
            rand_path(&s, buf, sizeof(buf), 0);
            ccsb_spec_add_exec_grant_root(spec, buf);
        }
        for (unsigned i = rnd(&s, 3); i > 0; i--)
            ccsb_spec_add_deny_write_glob(spec, pieces[rnd(&s, N_PIECES)]);
        char err[512];
        if (ccsb_spec_validate(spec, err, sizeof(err)) < 0) {
            ccsb_spec_free(spec);
            fake_fs_clear(&fs);
            continue; /* the spec layer refused it: nothing to generate */
        }
        struct policy_host host = {.home = "/Users/dev", .session_tmp = "/var/folders/zz/T/ccsb-f",
                                   .resolve = fake_resolve, .kind = fake_kind,
                                   .resolve_userdata = &fs};
        struct ccsb_policy *p = NULL;
        int rc = policy_build(spec, &host, &p, err, sizeof(err));
        if (rc == CCSB_E_POLICY || rc == CCSB_E_SPEC) {
            ccsb_spec_free(spec);
            fake_fs_clear(&fs);
            continue; /* e.g. guest paths colliding: refused with a message */
        }
        ck_assert_msg(rc == 0, "iteration %u: policy_build %d %s", it, rc, err);
        struct seatbelt_profile_opts o = {.session_id = "fz", .http_port = 40000, .socks_port = 40001,
                                          .host = &host};
        char *text = NULL;
        rc = seatbelt_profile_generate(p, &o, &text, err, sizeof(err));
        ck_assert_msg(rc == 0, "iteration %u: %s", it, err);
        struct sbpl_profile prof;
        ck_assert_msg(sbpl_parse(text, "ccsb:fz", &prof, err, sizeof(err)) == 0,
                      "iteration %u: checker: %s\n%.1500s", it, err, text);
        for (size_t i = 0; i < p->deny_write.n; i++) {
            const struct policy_path *pp = &p->deny_write.v[i];
            if (pp->is_glob)
                continue;
            char c[600];
            canonical(pp->resolved ? pp->resolved : pp->path, c, sizeof(c));
            ck_assert_msg(sbpl_path_allowed(&prof, "file-write-data", c) == 0, "it %u: %s", it, c);
        }
        accepted++;
        sbpl_profile_free(&prof);
        free(text);
        policy_free(p);
        ccsb_spec_free(spec);
        fake_fs_clear(&fs);
    }
    printf("fuzz_specs: %u of %u random specs reached the generator\n", accepted, iters);
    ck_assert_uint_gt(accepted, iters / 4); /* most random specs get through */
}
END_TEST

static void count_cb(const struct seatbelt_violation *v, void *ud)
{
    ck_assert_ptr_nonnull(v->action);
    ck_assert_ptr_nonnull(v->target);
    ck_assert_ptr_nonnull(v->raw);
    (*(int *)ud)++;
}

START_TEST(fuzz_log_lines)
{
    static const char *const seeds[] = {
        "2026-09-18 06:19:41.380 E  kernel[0:1] (Sandbox) Sandbox: cat(1) deny(1) file-read-data /x\nccsb:fz\n",
        "{\"eventMessage\": \"Sandbox: cat(1) deny(1) file-read-data /x\\nccsb:fz\", \"processID\": 0}\n",
        "2026-09-18 06:19:41.380 E  kernel[0:1] (Sandbox) 12 duplicate reports for Sandbox: a b(2) deny(1) x\nccsb:fz:3\n",
    };
    unsigned s = seed0 + 99;
    struct seatbelt_log *lg = seatbelt_log_new("ccsb:fz", 1000);
    int reported = 0;
    for (unsigned it = 0; it < iters * 20; it++) {
        char buf[256];
        const char *seedline = seeds[rnd(&s, 3)];
        size_t n = strlen(seedline);
        memcpy(buf, seedline, n);
        unsigned muts = rnd(&s, 6);
        for (unsigned m = 0; m < muts; m++) {
            unsigned kind = rnd(&s, 3);
            size_t at = rnd(&s, (unsigned)n);
            if (kind == 0) {
                buf[at] = (char)rnd(&s, 256);
            } else if (kind == 1 && n > 1) {
                memmove(buf + at, buf + at + 1, n - at - 1);
                n--;
            } else if (n + 1 < sizeof(buf)) {
                memmove(buf + at + 1, buf + at, n - at);
                buf[at] = "()\"\\\n{}:0 "[rnd(&s, 11)];
                n++;
            }
        }
        int rc = seatbelt_log_feed(lg, buf, n, it, count_cb, &reported);
        ck_assert_int_ge(rc, 0);
    }
    /* pure noise bytes */
    for (unsigned it = 0; it < iters; it++) {
        char buf[512];
        size_t n = 1 + rnd(&s, sizeof(buf));
        for (size_t i = 0; i < n; i++)
            buf[i] = (char)rnd(&s, 256);
        ck_assert_int_ge(seatbelt_log_feed(lg, buf, n, 0, count_cb, &reported), 0);
    }
    ck_assert_int_gt(reported, 0); /* the unmutated seeds do get through */
    seatbelt_log_free(lg);
}
END_TEST

int main(void)
{
    const char *e = getenv("CCSB_FUZZ_SEED");
    if (e)
        seed0 = (unsigned)strtoul(e, NULL, 10);
    e = getenv("CCSB_FUZZ_ITERS");
    if (e) {
        unsigned long n = strtoul(e, NULL, 10);
        iters = n > 20000 ? 20000 : (unsigned)n;
    }
    printf("fuzz: seed %u, %u iterations\n", seed0, iters);
    Suite *s = suite_create("seatbelt-fuzz");
    TCase *t = tcase_create("fuzz");
    tcase_set_timeout(t, 240);
    tcase_add_test(t, fuzz_profiles);
    tcase_add_test(t, fuzz_specs);
    tcase_add_test(t, fuzz_log_lines);
    suite_add_tcase(s, t);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
