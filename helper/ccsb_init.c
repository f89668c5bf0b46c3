/* ccsb-init entry point: dispatch on the sub-command (see init.h). */
#include "init.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "linux_api.h"

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

static int cmp_int(const void *a, const void *b)
{
    return *(const int *)a - *(const int *)b;
}

int close_fds_except(int *keep, size_t n)
{
    qsort(keep, n, sizeof *keep, cmp_int);
    unsigned from = 3;
    for (size_t i = 0; i < n; i++) {
        if (keep[i] < (int)from)
            continue;
        if ((unsigned)keep[i] > from && close_range(from, (unsigned)keep[i] - 1, 0) < 0)
            return -1;
        from = (unsigned)keep[i] + 1;
    }
    return close_range(from, ~0u, 0);
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
