/*
 * Run inside a sandbox that forbids new user namespaces (see
 * bwrap_denied.sh): launching a native session must fail cleanly, with a
 * message that names the cause and the fix, and never fall back to no
 * isolation.
 */
#include <stdio.h>
#include <string.h>

#include <ccsandbox/ccsandbox.h>

int main(void)
{
    ccsb_ctx *ctx;
    ccsb_spec *spec;
    ccsb_session *s = NULL;
    char err[256];
    if (ccsb_ctx_new(&ctx, err, sizeof err) != 0) {
        fprintf(stderr, "ccsb_ctx_new: %s\n", err);
        return 1;
    }
    ccsb_spec_new(&spec);
    ccsb_spec_set_backend(spec, CCSB_BACKEND_NATIVE);
    int r = ccsb_launch(ctx, spec, &s);
    const char *msg = ccsb_ctx_errmsg(ctx);
    printf("launch: %d (%s): %s\n", r, ccsb_strerror(r), msg);
    int ok = (r == CCSB_E_UNAVAILABLE || r == CCSB_E_LAUNCH) && s == NULL &&
             strstr(msg, "namespace") != NULL;
    ccsb_session_destroy(s);
    ccsb_spec_free(spec);
    ccsb_ctx_free(ctx);
    return ok ? 0 : 1;
}
