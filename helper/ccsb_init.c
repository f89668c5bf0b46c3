/* ccsb-init entry point: dispatch on the sub-command (see init.h). */
#include "init.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int parse_u64(const char *s, uint64_t max, uint64_t *out)
{
    if (!s || *s < '0' || *s > '9')
        return -1;
    errno = 0;
    char *end = NULL;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || *end || v > max)
        return -1;
    *out = v;
    return 0;
}

int main(int argc, char **argv)
{
    if (argc >= 2 && strcmp(argv[1], "init") == 0)
        return init_main(argc - 1, argv + 1);
    if (argc >= 2 && strcmp(argv[1], "janitor") == 0)
        return janitor_main(argc - 1, argv + 1);
    if (argc >= 2 && strcmp(argv[1], "connect") == 0)
        return connect_main(argc - 1, argv + 1);
    fprintf(stderr,
            "usage: ccsb-init init [options]\n"
            "       ccsb-init connect [--port N] HOST PORT\n"
            "       ccsb-init janitor [options] -- BWRAP ARGV...\n"
            "ccsb-init is started by libccsandbox; it is not meant to be run by hand.\n");
    return 2;
}
