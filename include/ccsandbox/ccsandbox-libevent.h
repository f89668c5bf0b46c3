/*
 * libccsandbox on a caller-owned libevent loop. This is the only public
 * header that names struct event_base; hosts that do not use libevent never
 * include it.
 */
#ifndef CCSANDBOX_CCSANDBOX_LIBEVENT_H
#define CCSANDBOX_CCSANDBOX_LIBEVENT_H

#include <ccsandbox/ccsandbox.h>

#ifdef __cplusplus
extern "C" {
#endif

struct event_base;

/*
 * A context that runs everything (proxies, child pipes, timers) on the
 * caller's base and starts no event-loop thread of its own. (A bubblewrap
 * session's seccomp guard still answers its trapped calls on a thread of
 * its own, which takes on the calling process's credentials; see
 * docs/guard.md.) Every call on
 * the context must come from the thread that runs the base. The base must
 * outlive the context. That thread also starts the sandboxes, and
 * bubblewrap's --die-with-parent follows the thread that started it: if
 * the thread exits while sessions run, their sandboxes may be killed.
 */
CCSB_API int ccsb_ctx_new_with_event_base(ccsb_ctx **out, struct event_base *base,
                                          char *errbuf, size_t errbuf_len);

#ifdef __cplusplus
}
#endif

#endif /* CCSANDBOX_CCSANDBOX_LIBEVENT_H */
