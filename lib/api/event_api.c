/* Typed getters over ccsb_event, and its JSON form. */
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "ccsandbox/ccsandbox.h"
#include "core/event.h"
#include "util/json.h"

CCSB_API int ccsb_event_type(const ccsb_event *ev) { return ev ? ev->type : 0; }
CCSB_API const char *ccsb_event_session_id(const ccsb_event *ev) { return ev ? ev->session_id : ""; }
CCSB_API uint64_t ccsb_event_exec_id(const ccsb_event *ev) { return ev ? ev->exec_id : 0; }
CCSB_API int ccsb_event_exit_code(const ccsb_event *ev)
{
    return ev && ev->type == CCSB_EVENT_EXIT ? ev->exit_code : 0;
}
CCSB_API int ccsb_event_signal(const ccsb_event *ev)
{
    return ev && ev->type == CCSB_EVENT_EXIT ? ev->signal : 0;
}
CCSB_API int ccsb_event_kill_reason(const ccsb_event *ev) { return ev ? ev->kill_reason : 0; }
CCSB_API int ccsb_event_state(const ccsb_event *ev)
{
    return ev && ev->type == CCSB_EVENT_STATE ? ev->state : -1;
}
CCSB_API const char *ccsb_event_message(const ccsb_event *ev) { return ev ? ev->message : ""; }
CCSB_API int64_t ccsb_event_timestamp_us(const ccsb_event *ev) { return ev ? ev->ts_us : 0; }

CCSB_API const uint8_t *ccsb_event_data(const ccsb_event *ev, size_t *len)
{
    if (len)
        *len = ev && ev->data ? ev->len : 0;
    return ev ? ev->data : NULL;
}

CCSB_API const char *ccsb_event_violation_action(const ccsb_event *ev)
{
    return ev && ev->action ? ev->action : "";
}
CCSB_API const char *ccsb_event_violation_target(const ccsb_event *ev)
{
    return ev && ev->target ? ev->target : "";
}
CCSB_API const char *ccsb_event_violation_raw(const ccsb_event *ev)
{
    return ev && ev->raw ? ev->raw : "";
}

CCSB_API void ccsb_event_free(ccsb_event *ev)
{
    if (!ev)
        return;
    free(ev->session_id);
    free(ev->data);
    free(ev->message);
    free(ev->action);
    free(ev->target);
    free(ev->raw);
    free(ev);
}

static char *base64(const uint8_t *p, size_t n)
{
    static const char tab[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    char *out = malloc((n + 2) / 3 * 4 + 1);
    if (!out)
        return NULL;
    size_t o = 0;
    for (size_t i = 0; i < n; i += 3) {
        uint32_t v = (uint32_t)p[i] << 16;
        if (i + 1 < n)
            v |= (uint32_t)p[i + 1] << 8;
        if (i + 2 < n)
            v |= p[i + 2];
        out[o++] = tab[(v >> 18) & 63];
        out[o++] = tab[(v >> 12) & 63];
        out[o++] = i + 1 < n ? tab[(v >> 6) & 63] : '=';
        out[o++] = i + 2 < n ? tab[v & 63] : '=';
    }
    out[o] = 0;
    return out;
}

CCSB_API int ccsb_event_to_json(const ccsb_event *ev, char **out_json)
{
    if (!ev || !out_json)
        return CCSB_E_INVAL;
    *out_json = NULL;
    json_t *o = json_pack("{s:s, s:s, s:I}", "type", ccsb_event_type_name(ev->type), "session",
                          ev->session_id, "ts_us", (json_int_t)ev->ts_us);
    if (!o)
        return CCSB_E_NOMEM;
    if (ev->exec_id)
        json_object_set_new(o, "exec", json_integer((json_int_t)ev->exec_id));
    switch (ev->type) {
    case CCSB_EVENT_STDOUT:
    case CCSB_EVENT_STDERR: {
        json_t *s = json_stringn((const char *)ev->data, ev->len); /* NULL if not UTF-8 */
        if (s) {
            json_object_set_new(o, "data", s);
        } else {
            char *b = base64(ev->data, ev->len);
            if (!b) {
                json_decref(o);
                return CCSB_E_NOMEM;
            }
            json_object_set_new(o, "data_b64", json_string(b));
            free(b);
        }
        break;
    }
    case CCSB_EVENT_EXIT:
        json_object_set_new(o, "exit_code", json_integer(ev->exit_code));
        json_object_set_new(o, "signal", json_integer(ev->signal));
        break;
    case CCSB_EVENT_KILLED:
        json_object_set_new(o, "reason", json_string(ccsb_kill_reason_name(ev->kill_reason)));
        break;
    case CCSB_EVENT_VIOLATION:
        json_object_set_new(o, "action", json_string(ev->action ? ev->action : ""));
        json_object_set_new(o, "target", json_string(ev->target ? ev->target : ""));
        json_object_set_new(o, "raw", json_string(ev->raw ? ev->raw : ""));
        break;
    case CCSB_EVENT_STATE:
        json_object_set_new(o, "state", json_string(ccsb_state_name(ev->state)));
        break;
    default:
        break;
    }
    if (ev->message && *ev->message)
        json_object_set_new(o, "message", json_string(ev->message));
    *out_json = json_dump_owned(o);
    json_decref(o);
    return *out_json ? 0 : CCSB_E_NOMEM;
}
