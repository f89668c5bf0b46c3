/* The exec request as plain data (public builder: ccsb_exec_req_*). */
#ifndef CCSB_CORE_EXEC_REQ_H
#define CCSB_CORE_EXEC_REQ_H

#include <stdint.h>

#include "util/strv.h"

struct ccsb_exec_req {
    struct strv argv;
    struct strv env_names; /* parallel, names unique */
    struct strv env_values;
    char *cwd;             /* NULL: the spec's workdir */
    int stdin_mode;        /* CCSB_STDIN_* */
    uint64_t timeout_ms;   /* 0: none */
    int pty;
    uint16_t rows, cols;
    int end_session;       /* the session stops when this command's main process exits */
};

#endif
