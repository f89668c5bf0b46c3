/*
 * libFuzzer target for ccsb_spec_from_json, and for what follows a spec that
 * parses: it must validate, dump, parse back to the same text, copy, and
 * resolve into a policy without crashing.
 *
 *   CC=clang meson setup build-fuzz -Dfuzz=enabled \
 *       -Db_sanitize=address,undefined -Dc_args=-fsanitize=fuzzer-no-link
 *   ninja -C build-fuzz tests/fuzz/spec/fuzz_spec_json
 *   build-fuzz/tests/fuzz/spec/fuzz_spec_json -max_total_time=60 \
 *       -dict=tests/fuzz/spec/spec.dict NEW_CORPUS_DIR tests/fuzz/spec/corpus
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ccsandbox/ccsandbox.h"
#include "policy/policy.h"
#include "spec/spec.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Everything "exists", nothing is a symlink: keeps the policy step off the
 * real file system except for the `<root>/.git` probe. */
static char *fake_resolve(const char *path, void *ud)
{
    (void)ud;
    return strdup(path);
}

static int fake_kind(const char *path, void *ud)
{
    (void)ud;
    return path[strlen(path) - 1] == 'd';
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    ccsb_spec *s = NULL;
    char err[512];
    int r = ccsb_spec_from_json(&s, (const char *)data, size, err, sizeof err);
    if (r != CCSB_OK) {
        /* Every refusal says which field and why. */
        if (r != CCSB_E_SPEC || !strchr(err, ':'))
            abort();
        return 0;
    }
    if (ccsb_spec_validate(s, err, sizeof err) != CCSB_OK)
        abort();
    char *a = NULL, *b = NULL;
    if (ccsb_spec_to_json(s, &a) != CCSB_OK)
        abort();
    ccsb_spec *t = NULL;
    if (ccsb_spec_from_json(&t, a, strlen(a), err, sizeof err) != CCSB_OK)
        abort();
    if (ccsb_spec_to_json(t, &b) != CCSB_OK || strcmp(a, b) != 0)
        abort();
    free(b);
    b = NULL;
    ccsb_spec *c = NULL;
    if (ccsb_spec_copy(t, &c) != CCSB_OK || ccsb_spec_to_json(c, &b) != CCSB_OK ||
        strcmp(a, b) != 0)
        abort();
    struct policy_host host = {
        .home = "/home/fuzz", .session_tmp = "/tmp/fuzz-session",
        .resolve = fake_resolve, .kind = fake_kind,
    };
    struct ccsb_policy *p = NULL;
    r = policy_build(s, &host, &p, err, sizeof err);
    if (r != CCSB_OK && r != CCSB_E_POLICY)
        abort();
    policy_free(p);
    free(a);
    free(b);
    ccsb_spec_free(c);
    ccsb_spec_free(t);
    ccsb_spec_free(s);
    return 0;
}
