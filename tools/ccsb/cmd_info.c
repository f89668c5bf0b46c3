/* The inspection commands: probe, spec, explain, check-host. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

int cmd_probe(int argc, char **argv)
{
    int json = argc >= 1 && strcmp(argv[0], "--json") == 0;
    ccsb_ctx *ctx = NULL;
    char err[512] = "";
    if (ccsb_ctx_new(&ctx, err, sizeof err) < 0) {
        fprintf(stderr, "ccsb: %s\n", err);
        return 2;
    }
    const ccsb_probe_result *pr = NULL;
    if (ccsb_probe(ctx, &pr) < 0) {
        fprintf(stderr, "ccsb: probe failed: %s\n", ccsb_ctx_errmsg(ctx));
        ccsb_ctx_free(ctx);
        return 2;
    }
    int available = ccsb_probe_available(pr);
    char *text = NULL;
    if (json ? ccsb_probe_to_json(pr, &text) == 0
             : ccsb_probe_startup_message(pr, 0, &text) == 0) {
        puts(text);
        ccsb_free(text);
    }
    if (!json && !available && *ccsb_probe_missing_packages(pr))
        printf("missing packages: %s\n", ccsb_probe_missing_packages(pr));
    ccsb_ctx_free(ctx);
    return available ? 0 : 1;
}

int cmd_spec(int argc, char **argv)
{
    if (argc >= 1 && strcmp(argv[0], "default") == 0) {
        ccsb_spec *spec = NULL;
        char *js = NULL;
        if (ccsb_spec_new(&spec) < 0 || ccsb_spec_to_json(spec, &js) < 0) {
            fprintf(stderr, "ccsb: out of memory\n");
            ccsb_spec_free(spec);
            return 2;
        }
        puts(js);
        ccsb_free(js);
        ccsb_spec_free(spec);
        return 0;
    }
    if (argc >= 2 && strcmp(argv[0], "validate") == 0) {
        size_t len = 0;
        char *text = cli_read_file(argv[1], &len);
        if (!text) {
            fprintf(stderr, "ccsb: %s: %s\n", argv[1], strerror(errno));
            return 2;
        }
        ccsb_spec *spec = NULL;
        char err[512] = "";
        int r = ccsb_spec_from_json(&spec, text, len, err, sizeof err);
        free(text);
        if (r < 0) {
            fprintf(stderr, "%s: %s\n", argv[1], err);
            return 1;
        }
        ccsb_spec_free(spec);
        printf("%s: valid\n", argv[1]);
        return 0;
    }
    fprintf(stderr, "usage: ccsb spec default | ccsb spec validate FILE\n");
    return 2;
}

int cmd_explain(int argc, char **argv)
{
    struct run_opts o;
    int rc = run_opts_parse(argc, argv, &o);
    if (rc != 0) {
        run_opts_free(&o);
        return rc;
    }
    char *text = NULL;
    char err[512] = "";
    int r = ccsb_explain(o.spec, o.platform, &text, err, sizeof err);
    run_opts_free(&o);
    if (r < 0) {
        fprintf(stderr, "ccsb explain: %s\n", *err ? err : ccsb_strerror(r));
        return CLI_EXIT_CANNOT_START;
    }
    fputs(text, stdout);
    ccsb_free(text);
    return 0;
}

int cmd_check_host(int argc, char **argv)
{
    struct run_opts o;
    int rc = run_opts_parse(argc, argv, &o);
    if (rc != 0) {
        run_opts_free(&o);
        return 2;
    }
    if (o.n_cmd != 1) {
        fprintf(stderr, "usage: ccsb check-host [--spec FILE] [--allow D]... HOST[:PORT]\n");
        run_opts_free(&o);
        return 2;
    }
    int allowed = 0;
    char *reason = NULL;
    int r = ccsb_spec_check_host(o.spec, o.cmd[0], &allowed, &reason);
    run_opts_free(&o);
    if (r < 0) {
        fprintf(stderr, "ccsb check-host: %s\n", reason ? reason : ccsb_strerror(r));
        ccsb_free(reason);
        return 2;
    }
    printf("%s: %s\n", allowed ? "allow" : "deny", reason ? reason : "");
    ccsb_free(reason);
    return allowed ? 0 : 1;
}
