/* The ccsb command line: shared pieces. A thin user of the public API. */
#ifndef CCSB_CLI_H
#define CCSB_CLI_H

#include <stddef.h>
#include <stdint.h>

#include <ccsandbox/ccsandbox.h>

/* Exit codes of `ccsb run` besides the command's own. */
#define CLI_EXIT_TIMEOUT 124
#define CLI_EXIT_CANNOT_START 125

struct run_opts {
    ccsb_spec *spec;
    uint64_t timeout_ms;     /* per exec, 0: none */
    const char *events_path; /* NULL, "-" or a file */
    const char *platform;    /* explain --platform */
    char **env;              /* NAME=VALUE for the exec */
    size_t n_env;
    char **cmd;              /* after "--" (or the first non-option) */
    size_t n_cmd;
};

/*
 * Parses the run options shared by run, shell and explain. Prints a one-line
 * reason and returns CLI_EXIT_CANNOT_START on bad input, 0 otherwise.
 */
int run_opts_parse(int argc, char **argv, struct run_opts *o);
void run_opts_free(struct run_opts *o);
void run_opts_usage(void);

int cmd_run(int argc, char **argv);
int cmd_shell(int argc, char **argv);
int cmd_explain(int argc, char **argv);
int cmd_probe(int argc, char **argv);
int cmd_spec(int argc, char **argv);
int cmd_check_host(int argc, char **argv);

/* Reads a whole file (malloc'd, NUL-terminated) or NULL with errno set. */
char *cli_read_file(const char *path, size_t *len);

#endif
