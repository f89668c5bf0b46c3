#include "core/event.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct ccsb_event *evt_new(int type, const char *session_id, uint64_t exec_id)
{
    struct ccsb_event *ev = calloc(1, sizeof *ev);
    if (!ev)
        return NULL;
    ev->type = type;
    ev->exec_id = exec_id;
    ev->state = -1;
    ev->session_id = strdup(session_id ? session_id : "");
    ev->message = strdup("");
    if (!ev->session_id || !ev->message) {
        free(ev->session_id);
        free(ev->message);
        free(ev);
        return NULL;
    }
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ev->ts_us = (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
    return ev;
}

int evt_set_message(struct ccsb_event *ev, const char *fmt, ...)
{
    char *m = NULL;
    va_list ap;
    va_start(ap, fmt);
    int r = vasprintf(&m, fmt, ap);
    va_end(ap);
    if (r < 0)
        return -1;
    free(ev->message);
    ev->message = m;
    return 0;
}
