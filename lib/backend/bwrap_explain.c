/* `ccsb explain` for the bubblewrap backend: the plan as text. */
#include "backend/bwrap_explain.h"

#include <stdlib.h>
#include <string.h>

#include "backend/bwrap_args.h"
#include "backend/bwrap_locate.h"
#include "config.h"
#include "core/probe.h"
#include "policy/policy.h"
#if CCSB_HAVE_SECCOMP
#include "guard/guard.h"
#endif

int bwrap_explain(FILE *f, const struct ccsb_policy *p, char *err, size_t errlen)
{
    char *helper = NULL;
    char ignore[8];
    if (bwrap_locate_helper(&helper, ignore, sizeof ignore) < 0)
        helper = NULL;
    char *bwrap = probe_find_on_path("bwrap");
    struct bwrap_opts o = {.helper_path = helper ? helper : "<ccsb-init>",
                           .lock_userns = bwrap_lock_userns_here()};
#if CCSB_HAVE_SECCOMP
    /* As a launch here would decide: missing protected paths are held by
     * the guard where it works, by placeholders elsewhere. */
    char why[256];
    o.have_guard = guard_supported(why, sizeof why) == 1;
#endif
    struct bwrap_plan plan;
    int r = bwrap_plan_build(p, &o, &plan, err, errlen);
    if (r < 0) {
        free(helper);
        free(bwrap);
        return r;
    }
    fprintf(f, "bubblewrap decisions:\n");
    for (size_t i = 0; i < plan.notes.n; i++)
        fprintf(f, "  %s\n", plan.notes.v[i]);
    if (plan.ph_files.n || plan.ph_dirs.n) {
        fprintf(f, "placeholders created for the run and removed after it "
                   "(bubblewrap can only mount over what exists):\n");
        for (size_t i = 0; i < plan.ph_dirs.n; i++)
            fprintf(f, "  dir  %s\n", plan.ph_dirs.v[i]);
        for (size_t i = 0; i < plan.ph_files.n; i++)
            fprintf(f, "  file %s\n", plan.ph_files.v[i]);
    }
    if (plan.guard_anchors.n) {
        fprintf(f, "protected paths the seccomp guard holds by name (missing ones: nothing is "
                   "made on the host; existing files: also after the host replaces them):\n");
        for (size_t i = 0; i < plan.guard_anchors.n; i++)
            fprintf(f, "  %s%s%s%s\n", plan.guard_anchors.v[i],
                    strcmp(plan.guard_anchors.v[i], "/") ? "/" : "", plan.guard_rests.v[i],
                    strcmp(plan.guard_kinds.v[i], "file") == 0 ? "  (a file: by name only)" : "");
    }
    char *line = bwrap_argv_to_shell(bwrap ? bwrap : "bwrap", &plan.argv);
    fprintf(f, "bubblewrap arguments (each exec is then forked by ccsb-init inside):\n  %s\n",
            line ? line : "(out of memory)");
    free(line);
    bwrap_plan_clear(&plan);
    free(helper);
    free(bwrap);
    return 0;
}
