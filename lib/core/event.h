/* Event objects (the public ccsb_event) and their constructors. */
#ifndef CCSB_CORE_EVENT_H
#define CCSB_CORE_EVENT_H

#include <stddef.h>
#include <stdint.h>

struct ccsb_event {
    int type;
    char *session_id;
    uint64_t exec_id;
    int64_t ts_us;
    uint8_t *data;
    size_t len;
    int exit_code; /* -1 when signalled */
    int signal;
    int kill_reason;
    int state;     /* -1 unless CCSB_EVENT_STATE */
    char *message; /* never NULL */
    char *action;  /* violation only, else NULL */
    char *target;
    char *raw;
    struct ccsb_event *next; /* queue link */
};

/* A new event with every field at its neutral value; NULL on ENOMEM. */
struct ccsb_event *evt_new(int type, const char *session_id, uint64_t exec_id);
int evt_set_message(struct ccsb_event *ev, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

#endif
