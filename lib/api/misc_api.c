/* Version, error text, names, and the library's free. */
#include <stdlib.h>

#include "ccsandbox/ccsandbox.h"
#include "config.h"

CCSB_API const char *ccsb_version(void)
{
    return CCSB_VERSION_STRING;
}

CCSB_API uint32_t ccsb_version_number(void)
{
    return CCSB_VERSION_NUMBER;
}

CCSB_API const char *ccsb_strerror(int code)
{
    switch (code) {
    case CCSB_OK: return "success";
    case CCSB_E_INVAL: return "invalid argument";
    case CCSB_E_NOMEM: return "out of memory";
    case CCSB_E_SPEC: return "invalid spec";
    case CCSB_E_UNAVAILABLE: return "backend unavailable";
    case CCSB_E_POLICY: return "policy cannot be enforced";
    case CCSB_E_STATE: return "wrong state";
    case CCSB_E_NOTFOUND: return "not found";
    case CCSB_E_IO: return "system call failed";
    case CCSB_E_AGAIN: return "try again";
    case CCSB_E_REENTRANT: return "reentrant call";
    case CCSB_E_LAUNCH: return "sandbox failed to start";
    case CCSB_E_INTERNAL: return "internal error";
    case CCSB_E_UNSUPPORTED: return "unsupported";
    case CCSB_E_TIMEDOUT: return "timed out";
    default: return "unknown error";
    }
}

CCSB_API void ccsb_free(void *ptr)
{
    free(ptr);
}

CCSB_API const char *ccsb_event_type_name(int type)
{
    switch (type) {
    case CCSB_EVENT_STARTING: return "starting";
    case CCSB_EVENT_READY: return "ready";
    case CCSB_EVENT_STDOUT: return "stdout";
    case CCSB_EVENT_STDERR: return "stderr";
    case CCSB_EVENT_EXIT: return "exit";
    case CCSB_EVENT_KILLED: return "killed";
    case CCSB_EVENT_VIOLATION: return "violation";
    case CCSB_EVENT_STATE: return "state";
    case CCSB_EVENT_ERROR: return "error";
    default: return "unknown";
    }
}

CCSB_API const char *ccsb_state_name(int state)
{
    switch (state) {
    case CCSB_STATE_CREATED: return "created";
    case CCSB_STATE_WARM: return "warm";
    case CCSB_STATE_ACTIVE: return "active";
    case CCSB_STATE_SUSPENDED: return "suspended";
    case CCSB_STATE_DESTROYED: return "destroyed";
    case CCSB_STATE_ERROR: return "error";
    default: return "unknown";
    }
}

CCSB_API const char *ccsb_kill_reason_name(int reason)
{
    switch (reason) {
    case CCSB_KILL_TIMEOUT: return "timeout";
    case CCSB_KILL_OOM: return "oom";
    case CCSB_KILL_MANUAL: return "manual";
    case CCSB_KILL_HOST: return "host";
    default: return "unknown";
    }
}
