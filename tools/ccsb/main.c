/* ccsb: the libccsandbox command line. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

static void usage(FILE *f)
{
    fputs("usage: ccsb COMMAND [ARGS]\n"
          "\n"
          "  probe [--json]                  what this host offers (exit 0: native sandbox)\n"
          "  run [run options] -- CMD [ARG]  run one command in a sandbox\n"
          "  shell [run options] [-- CMD]    an interactive shell in a sandbox (pty)\n"
          "  explain [run options]           the resolved policy and the backend's form\n"
          "  check-host [run options] HOST[:PORT]\n"
          "                                  would egress to HOST be allowed? (exit 0/1)\n"
          "  spec default                    print the default spec as JSON\n"
          "  spec validate FILE              check a spec file\n"
          "  version                         print the library version\n"
          "\n",
          f);
    if (f == stderr)
        run_opts_usage();
}

/*
 * Started with 0, 1 or 2 closed, the next file opened (an --events file, a
 * spec) would take that number and be read as our stdin or receive the
 * command's output. /dev/null keeps the numbers taken: a closed stdin reads
 * as EOF, a closed stdout discards.
 */
static void ensure_stdio(void)
{
    for (int fd = 0; fd < 3; fd++) {
        if (fcntl(fd, F_GETFD) >= 0 || errno != EBADF)
            continue;
        int n = open("/dev/null", fd == 0 ? O_RDONLY : O_WRONLY);
        if (n >= 0 && n != fd)
            close(n);
    }
}

int main(int argc, char **argv)
{
    ensure_stdio();
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    const char *cmd = argv[1];
    int sub_argc = argc - 2;
    char **sub_argv = argv + 2;
    if (strcmp(cmd, "run") == 0)
        return cmd_run(sub_argc, sub_argv);
    if (strcmp(cmd, "shell") == 0)
        return cmd_shell(sub_argc, sub_argv);
    if (strcmp(cmd, "explain") == 0)
        return cmd_explain(sub_argc, sub_argv);
    if (strcmp(cmd, "probe") == 0)
        return cmd_probe(sub_argc, sub_argv);
    if (strcmp(cmd, "spec") == 0)
        return cmd_spec(sub_argc, sub_argv);
    if (strcmp(cmd, "check-host") == 0)
        return cmd_check_host(sub_argc, sub_argv);
    if (strcmp(cmd, "version") == 0 || strcmp(cmd, "--version") == 0) {
        printf("ccsb %s\n", ccsb_version());
        return 0;
    }
    if (strcmp(cmd, "help") == 0 || strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0) {
        usage(stdout);
        run_opts_usage();
        return 0;
    }
    fprintf(stderr, "ccsb: unknown command '%s'\n", cmd);
    usage(stderr);
    return 2;
}
