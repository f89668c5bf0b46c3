/*
 * The backend vtable. A backend translates the resolved policy into a real
 * sandbox; it never re-decides policy.
 *
 * Calling convention:
 *  - launch runs on the *caller's* thread before the session is visible to
 *    the loop: it may block (bounded) until the sandbox is ready, must not
 *    touch libevent, and on failure leaves nothing running or on disk.
 *  - every other op runs on the loop thread.
 */
#ifndef CCSB_BACKEND_BACKEND_H
#define CCSB_BACKEND_BACKEND_H

#include <stddef.h>

struct ccsb_ctx;
struct ccsb_session;
struct exec;
struct ccsb_exec_req;
typedef struct json_t json_t;

struct backend_ops {
    const char *name; /* "none", "bubblewrap", "seatbelt" */

    /* Optional, caller's thread, before the core builds the policy: start
     * what does not depend on it (s->spec is set), keeping it in s->bdata.
     * Best effort (launch does whatever it did not). If launch never comes,
     * destroy undoes it. */
    void (*prestart)(struct ccsb_session *s);
    /* Optional, any thread (ccsb_ctx_prestart): start, without waiting,
     * what a later prestart can take instead of starting it then, and
     * store it with ctx_standby_put. 0, CCSB_E_STATE when that refuses, or
     * CCSB_E_* with a message in err. */
    int (*standby)(struct ccsb_ctx *ctx, char *err, size_t errlen);
    int (*launch)(struct ccsb_session *s, char *err, size_t errlen);
    /* Register fds/timers on the loop (after launch succeeded); on failure
     * a message in err. */
    int (*attach)(struct ccsb_session *s, char *err, size_t errlen);
    /*
     * Start the command. The core has created the host stdio (x->in_fd,
     * x->out_fd, x->err_fd host ends) and passes the sandbox ends here.
     * On success x->pid is set and the backend will later call
     * exec_exited(x, ...).
     */
    int (*exec)(struct ccsb_session *s, struct exec *x, const struct ccsb_exec_req *req,
                int child_in, int child_out, int child_err, char *err, size_t errlen);
    /* Optional. The launch may send s->first ahead (then it sets
     * s->first_sent); once attached, the core calls this instead of exec
     * to wait until it started. Same contract as exec otherwise. */
    int (*exec_finish)(struct ccsb_session *s, struct exec *x, const struct ccsb_exec_req *req,
                       char *err, size_t errlen);
    /* Signal the exec's whole process group. */
    int (*kill_exec)(struct ccsb_session *s, struct exec *x, int sig);
    int (*resize_pty)(struct ccsb_session *s, struct exec *x, unsigned rows, unsigned cols);
    int (*suspend)(struct ccsb_session *s);
    int (*resume)(struct ccsb_session *s);
    /* Kill every process, reap, release. Synchronous and bounded. Safe to
     * call twice. */
    void (*stop)(struct ccsb_session *s);
    /* Free s->bdata (after stop). */
    void (*destroy)(struct ccsb_session *s);
    /* Optional: sees every chunk of an exec's stderr (already delivered
     * unchanged to the host) to turn denial messages into violations. */
    void (*stderr_tap)(struct ccsb_session *s, struct exec *x, const unsigned char *buf,
                       size_t len);
    /* Add backend-specific fields to the details object. */
    void (*details)(struct ccsb_session *s, json_t *obj);
};

extern const struct backend_ops backend_none_ops;
#ifdef __linux__
extern const struct backend_ops backend_bwrap_ops;
#endif
#ifdef __APPLE__
extern const struct backend_ops backend_seatbelt_ops; /* built when CCSB_HAVE_SEATBELT */
#endif

/*
 * The command's environment: inherited variables minus the strip list
 * (policy/lists.c), then the spec's variables, then the exec's, then the
 * backend's forced "NAME=VALUE" entries (TMPDIR, proxy variables, the
 * sandbox marker); a later definition replaces an earlier one. Appends to
 * *out (NULL-terminated; free with strv_clear). 0 or -1 (ENOMEM).
 */
struct strv;
int backend_build_env(const struct ccsb_session *s, const struct ccsb_exec_req *req,
                      char *const *inherited, const char *const *forced, struct strv *out);

/* NO_PROXY for a sandbox with its own loopback: "localhost,127.0.0.1,::1"
 * (loopback names stay inside), or "" when an egressAllowlist entry names
 * loopback (localhost, 127/8, ::1): then they go through the proxies. */
struct ccsb_spec;
const char *backend_no_proxy(const struct ccsb_spec *spec);

/*
 * The forced entries that send a command's network traffic to the session's
 * proxies, for the tools that need more than one variable: curl/wget/git/pip
 * (HTTP_PROXY, HTTPS_PROXY, ALL_PROXY, NO_PROXY and lower-case twins), npm
 * and yarn (npm_config_*, YARN_*), pip (PIP_PROXY), cargo
 * (CARGO_HTTP_PROXY) and, when the HTTP proxy needs no credential, the JVM
 * (JAVA_TOOL_OPTIONS, appended to whatever the spec or exec set: the entry
 * is "JAVA_TOOL_OPTIONS+=...", which backend_build_env appends). Appends to
 * *forced; 0 or -1 (ENOMEM).
 */
struct backend_proxies {
    const char *http_url;  /* "http://[cred@]127.0.0.1:port" */
    const char *socks_url; /* "socks5h://[cred@]127.0.0.1:port" */
    const char *no_proxy;  /* "" or "localhost,127.0.0.1,::1" */
    int java_port;         /* the HTTP port for the JVM; 0: not set (credential needed) */
};
int backend_proxy_env(const struct backend_proxies *p, struct strv *forced);

#endif
