/*
 * libccsandbox — run an AI coding agent's commands inside an OS sandbox.
 *
 * This is the umbrella header and the whole stable C ABI. It includes only
 * <stddef.h> and <stdint.h>; the one call that takes a libevent base lives in
 * <ccsandbox/ccsandbox-libevent.h>.
 *
 * Conventions
 *  - Every handle is opaque and allocated by the library.
 *  - Every fallible call returns int: 0 on success or a negative CCSB_E_*
 *    code. Detail text is on the context (ccsb_ctx_errmsg) or, for calls that
 *    fail before a handle exists, in the caller's errbuf.
 *  - Each type has one NULL-safe destructor that may be called from any
 *    thread. Getters return borrowed pointers that live as long as the handle
 *    they came from. Strings the library allocates for you are released with
 *    ccsb_free().
 *  - Booleans are int (0 or 1). Strings are NUL-terminated UTF-8.
 *  - If a call that takes a callback fails, the callback is never invoked and
 *    its destroy notifier is not called.
 */
#ifndef CCSANDBOX_CCSANDBOX_H
#define CCSANDBOX_CCSANDBOX_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(_WIN32)
#define CCSB_API
#elif defined(__GNUC__) && __GNUC__ >= 4
#define CCSB_API __attribute__((visibility("default")))
#else
#define CCSB_API
#endif

/* ------------------------------------------------------------------ */
/* Version                                                              */
/* ------------------------------------------------------------------ */

#define CCSB_VERSION_MAJOR 1
#define CCSB_VERSION_MINOR 0
#define CCSB_VERSION_PATCH 0
/* 0xMMmmpp: compare with >= at compile time. */
#define CCSB_VERSION_NUMBER \
    ((CCSB_VERSION_MAJOR << 16) | (CCSB_VERSION_MINOR << 8) | CCSB_VERSION_PATCH)

/* The version of the library actually loaded, e.g. "1.0.0". */
CCSB_API const char *ccsb_version(void);
/* Same as CCSB_VERSION_NUMBER of the library actually loaded. */
CCSB_API uint32_t ccsb_version_number(void);

/* ------------------------------------------------------------------ */
/* Errors: a closed set, explicit values, never renumbered.             */
/* ------------------------------------------------------------------ */

#define CCSB_OK 0
#define CCSB_E_INVAL -1        /* a bad argument (NULL handle, bad value) */
#define CCSB_E_NOMEM -2        /* out of memory */
#define CCSB_E_SPEC -3         /* the spec is invalid; message names the field */
#define CCSB_E_UNAVAILABLE -4  /* the requested backend is not offered here */
#define CCSB_E_POLICY -5       /* the policy cannot be enforced on this host */
#define CCSB_E_STATE -6        /* the handle is in the wrong state for this call */
#define CCSB_E_NOTFOUND -7     /* no such exec (or other named object) */
#define CCSB_E_IO -8           /* a system call failed; message has errno text */
#define CCSB_E_AGAIN -9        /* nothing to return yet (no queued event) */
#define CCSB_E_REENTRANT -10   /* not allowed from inside this context's callback */
#define CCSB_E_LAUNCH -11      /* the sandbox failed to start */
#define CCSB_E_INTERNAL -12    /* a bug in the library */
#define CCSB_E_UNSUPPORTED -13 /* valid request this build/host cannot do */
#define CCSB_E_TIMEDOUT -14    /* a wait ran out of time */

/* Static text for a CCSB_E_* code ("invalid spec", ...). Never NULL. */
CCSB_API const char *ccsb_strerror(int code);

/* Release a string or buffer the library allocated for the caller. */
CCSB_API void ccsb_free(void *ptr);

/* ------------------------------------------------------------------ */
/* Opaque handles                                                       */
/* ------------------------------------------------------------------ */

typedef struct ccsb_ctx ccsb_ctx;
typedef struct ccsb_spec ccsb_spec;
typedef struct ccsb_session ccsb_session;
typedef struct ccsb_exec_req ccsb_exec_req;
typedef struct ccsb_event ccsb_event;
typedef struct ccsb_probe_result ccsb_probe_result;

typedef void (*ccsb_destroy_fn)(void *userdata);

/* ------------------------------------------------------------------ */
/* Context: owns the event loop, the event queue and the probe cache.   */
/* ------------------------------------------------------------------ */

/*
 * A context whose event loop runs on a library thread. API calls may come
 * from any thread. errbuf (may be NULL) receives a message on failure.
 */
CCSB_API int ccsb_ctx_new(ccsb_ctx **out, char *errbuf, size_t errbuf_len);

/*
 * Stops every session of the context, joins its thread, frees it. Safe on
 * NULL; must not be called from inside one of the context's callbacks.
 */
CCSB_API void ccsb_ctx_free(ccsb_ctx *ctx);

/*
 * Text of the last error on this context (never NULL; "" when none). The
 * pointer stays valid until the next failing call on the context.
 */
CCSB_API const char *ccsb_ctx_errmsg(const ccsb_ctx *ctx);

/* ------------------------------------------------------------------ */
/* Events                                                               */
/* ------------------------------------------------------------------ */

#define CCSB_EVENT_STARTING 1  /* a session began starting; message = backend */
#define CCSB_EVENT_READY 2     /* the session is warm */
#define CCSB_EVENT_STDOUT 3    /* bytes from an exec's stdout (or pty) */
#define CCSB_EVENT_STDERR 4    /* bytes from an exec's stderr */
#define CCSB_EVENT_EXIT 5      /* an exec ended: exit code or signal */
#define CCSB_EVENT_KILLED 6    /* we killed an exec or session; kill_reason says why */
#define CCSB_EVENT_VIOLATION 7 /* the policy refused something */
#define CCSB_EVENT_STATE 8     /* the session changed state */
#define CCSB_EVENT_ERROR 9     /* an asynchronous error; message says what */

#define CCSB_KILL_TIMEOUT 1 /* a wall-clock limit ran out */
#define CCSB_KILL_OOM 2     /* a memory limit was hit */
#define CCSB_KILL_MANUAL 3  /* ccsb_exec_kill / ccsb_session_stop */
#define CCSB_KILL_HOST 4    /* the host went away or the sandbox died */

#define CCSB_STATE_CREATED 0
#define CCSB_STATE_WARM 1
#define CCSB_STATE_ACTIVE 2
#define CCSB_STATE_SUSPENDED 3
#define CCSB_STATE_DESTROYED 4
#define CCSB_STATE_ERROR 5

/* "starting", "ready", "stdout", ... ; "unknown" for other values. */
CCSB_API const char *ccsb_event_type_name(int type);
/* "created", "warm", "active", "suspended", "destroyed", "error". */
CCSB_API const char *ccsb_state_name(int state);
/* "timeout", "oom", "manual", "host". */
CCSB_API const char *ccsb_kill_reason_name(int reason);

CCSB_API int ccsb_event_type(const ccsb_event *ev);
/* The session the event belongs to (its sessionId). */
CCSB_API const char *ccsb_event_session_id(const ccsb_event *ev);
/* The exec the event belongs to, 0 for session-level events. */
CCSB_API uint64_t ccsb_event_exec_id(const ccsb_event *ev);
/* stdout/stderr bytes (not NUL-terminated); NULL with *len 0 otherwise. */
CCSB_API const uint8_t *ccsb_event_data(const ccsb_event *ev, size_t *len);
/* exit: the exit status, or -1 when the process died from a signal. 255,
 * after an error event for the exec, when the host process took the status
 * itself (it ignores SIGCHLD or reaps with waitpid(-1)). */
CCSB_API int ccsb_event_exit_code(const ccsb_event *ev);
/* exit: the terminating signal, 0 when it exited normally. */
CCSB_API int ccsb_event_signal(const ccsb_event *ev);
/* killed: one of CCSB_KILL_*; 0 for other events. */
CCSB_API int ccsb_event_kill_reason(const ccsb_event *ev);
/* violation: e.g. "file-write", "file-write-create", "network-outbound". */
CCSB_API const char *ccsb_event_violation_action(const ccsb_event *ev);
/* violation: the path or host:port as the sandbox saw it (may be ""). */
CCSB_API const char *ccsb_event_violation_target(const ccsb_event *ev);
/* violation: the raw evidence (stderr line, proxy reason, ...). */
CCSB_API const char *ccsb_event_violation_raw(const ccsb_event *ev);
/* state: the new CCSB_STATE_*; -1 for other events. */
CCSB_API int ccsb_event_state(const ccsb_event *ev);
/* Free text for starting/ready/state/error/killed events (never NULL). */
CCSB_API const char *ccsb_event_message(const ccsb_event *ev);
/* Microseconds since the Unix epoch when the event was created. */
CCSB_API int64_t ccsb_event_timestamp_us(const ccsb_event *ev);
/*
 * The event as one line of JSON (no newline). Output bytes are in "data" as
 * a string when they are valid UTF-8, else base64 in "data_b64".
 */
CCSB_API int ccsb_event_to_json(const ccsb_event *ev, char **out_json);
CCSB_API void ccsb_event_free(ccsb_event *ev);

/*
 * Way 1: a callback, invoked on the thread that drives the loop (the
 * library thread, or the thread running the caller's event_base). While a
 * callback is set, events go to it and are not queued. Replacing or clearing
 * (cb == NULL) calls the previous destroy notifier; from inside a callback,
 * once that callback has returned. Inside a callback, ccsb_session_stop
 * returns CCSB_E_REENTRANT and ccsb_session_destroy takes effect when the
 * callback has returned.
 */
typedef void (*ccsb_event_cb)(const ccsb_event *ev, void *userdata);
CCSB_API int ccsb_ctx_set_event_callback(ccsb_ctx *ctx, ccsb_event_cb cb,
                                         void *userdata, ccsb_destroy_fn destroy);

/*
 * Way 2: pull. The fd becomes readable while events are queued; do not read
 * it, call ccsb_ctx_next_event until it returns CCSB_E_AGAIN. The fd is
 * owned by the context. While undrained events hold 8 MiB the library stops
 * reading the commands' output (they block in write) until the host drains.
 */
CCSB_API int ccsb_ctx_get_fd(const ccsb_ctx *ctx);
/* Pops one event (caller frees it) or returns CCSB_E_AGAIN. Any thread. */
CCSB_API int ccsb_ctx_next_event(ccsb_ctx *ctx, ccsb_event **out);
/*
 * Blocks until an event is queued or timeout_ms passes (-1: forever), then
 * pops it. With a caller-owned event_base this runs that base while it
 * waits, so it must not be called from inside the base's own dispatch; it
 * fails with CCSB_E_STATE when nothing on the base could produce an event.
 */
CCSB_API int ccsb_ctx_wait_event(ccsb_ctx *ctx, int timeout_ms, ccsb_event **out);

/*
 * Way 3: a doorbell. wake is called (possibly on a library thread) whenever
 * the queue goes from empty to non-empty; it must only schedule a drain with
 * ccsb_ctx_next_event on the caller's own thread. Replacing it waits for a
 * ring in progress before calling the previous destroy notifier.
 */
typedef void (*ccsb_wakeup_fn)(void *userdata);
CCSB_API int ccsb_ctx_set_wakeup(ccsb_ctx *ctx, ccsb_wakeup_fn wake,
                                 void *userdata, ccsb_destroy_fn destroy);

/* ------------------------------------------------------------------ */
/* Probe: what this host offers. Run once per context, then cached.     */
/* ------------------------------------------------------------------ */

/* The result is owned by the context. */
CCSB_API int ccsb_probe(ccsb_ctx *ctx, const ccsb_probe_result **out);
/* "linux", "wsl2", "macos" or "other". */
CCSB_API const char *ccsb_probe_platform(const ccsb_probe_result *pr);
/* The native mechanism: "bubblewrap", "seatbelt" or "none". */
CCSB_API const char *ccsb_probe_mechanism(const ccsb_probe_result *pr);
/* 1 when the native backend works right now. */
CCSB_API int ccsb_probe_available(const ccsb_probe_result *pr);
/* 1 when something must be installed first (see hint). */
CCSB_API int ccsb_probe_requires_install(const ccsb_probe_result *pr);
/* e.g. "bubblewrap — namespace isolation, no kernel boundary" (never NULL). */
CCSB_API const char *ccsb_probe_note(const ccsb_probe_result *pr);
/* What to do when not available: packages, command, sysctl (never NULL). */
CCSB_API const char *ccsb_probe_hint(const ccsb_probe_result *pr);
/* Space-separated package names that must be installed ("" when none). */
CCSB_API const char *ccsb_probe_missing_packages(const ccsb_probe_result *pr);
/* 1 when a microVM runtime is present. */
CCSB_API int ccsb_probe_microvm_available(const ccsb_probe_result *pr);
CCSB_API int ccsb_probe_to_json(const ccsb_probe_result *pr, char **out_json);
/*
 * The host server's one-line startup message: "agent sandbox ON (<note>)",
 * "no OS-native agent sandbox on this host (<hint>)", or, when disabled is
 * 1, "agent sandbox DISABLED by --sandbox off". Free with ccsb_free.
 */
CCSB_API int ccsb_probe_startup_message(const ccsb_probe_result *pr,
                                        int disabled, char **out);

/* ------------------------------------------------------------------ */
/* Backends                                                             */
/* ------------------------------------------------------------------ */

#define CCSB_BACKEND_AUTO 0    /* unspecified: native when offered, else none */
#define CCSB_BACKEND_NATIVE 1  /* bubblewrap on Linux, Seatbelt on macOS */
#define CCSB_BACKEND_NONE 2    /* no isolation; environment still sanitised */
#define CCSB_BACKEND_MICROVM 3 /* never falls back silently */

/*
 * Lenient parse of a *stored* backend name: NULL or unknown -> NONE,
 * "docker" -> NATIVE, "native"/"none"/"microvm" as named. Specs are parsed
 * strictly instead (an unknown name there is a CCSB_E_SPEC error).
 */
CCSB_API int ccsb_backend_from_name(const char *name);
/* "auto", "native", "none", "microvm". */
CCSB_API const char *ccsb_backend_name(int backend);

/* ------------------------------------------------------------------ */
/* Spec: what a session may see and do.                                 */
/* ------------------------------------------------------------------ */

#define CCSB_MODE_CHAT 0        /* bind mounts writable unless read-only */
#define CCSB_MODE_REVIEW 1      /* every bind mount read-only */
#define CCSB_MODE_PLAN 2        /* every bind mount read-only */
#define CCSB_MODE_ORCHESTRATE 3 /* every bind mount read-only */

/* "chat", "review", "plan", "orchestrate". */
CCSB_API const char *ccsb_mode_name(int mode);

/* A spec with every default (see `ccsb spec default`). */
CCSB_API int ccsb_spec_new(ccsb_spec **out);
CCSB_API void ccsb_spec_free(ccsb_spec *spec);
CCSB_API int ccsb_spec_copy(const ccsb_spec *spec, ccsb_spec **out);

/*
 * Parses and validates a JSON spec. On error errbuf names the field and the
 * problem, e.g. "bindMounts[2].hostPath: not an absolute path".
 */
CCSB_API int ccsb_spec_from_json(ccsb_spec **out, const char *json, size_t len,
                                 char *errbuf, size_t errbuf_len);
/* Serialises every field (defaults included). Free with ccsb_free. */
CCSB_API int ccsb_spec_to_json(const ccsb_spec *spec, char **out_json);
/* Full validation, as ccsb_launch does before anything starts. */
CCSB_API int ccsb_spec_validate(const ccsb_spec *spec, char *errbuf, size_t errbuf_len);

/* Setters copy their strings; they check only the argument itself. */
CCSB_API int ccsb_spec_set_session_id(ccsb_spec *spec, const char *id);
CCSB_API int ccsb_spec_set_workspace_id(ccsb_spec *spec, const char *id);
CCSB_API int ccsb_spec_set_agent_id(ccsb_spec *spec, const char *id);
CCSB_API int ccsb_spec_set_backend(ccsb_spec *spec, int backend);
CCSB_API int ccsb_spec_set_mode(ccsb_spec *spec, int mode);
CCSB_API int ccsb_spec_set_guest_workdir(ccsb_spec *spec, const char *path);
/* guest_path NULL: same as host_path. */
CCSB_API int ccsb_spec_add_bind_mount(ccsb_spec *spec, const char *host_path,
                                      const char *guest_path, int read_only);
CCSB_API int ccsb_spec_set_network_enabled(ccsb_spec *spec, int enabled);
CCSB_API int ccsb_spec_add_egress_allow(ccsb_spec *spec, const char *entry);
CCSB_API int ccsb_spec_add_egress_deny(ccsb_spec *spec, const char *entry);
CCSB_API int ccsb_spec_add_protected_path(ccsb_spec *spec, const char *path);
CCSB_API int ccsb_spec_add_runner_state_dir(ccsb_spec *spec, const char *path);
CCSB_API int ccsb_spec_add_exec_grant_root(ccsb_spec *spec, const char *path);
/* Extra read-denied paths on top of the built-in secret set. */
CCSB_API int ccsb_spec_add_deny_read(ccsb_spec *spec, const char *path);
/* Create-time deny-write globs such as ".env", "*.key", "*.pem". */
CCSB_API int ccsb_spec_add_deny_write_glob(ccsb_spec *spec, const char *glob);
/*
 * A host unix socket the session's commands may connect to (a docker or IDE
 * socket): it is bound in at the same path. Listing any turns on
 * socket(AF_UNIX) for the commands, which is refused (EPERM) otherwise; a
 * socket file inside a bound directory is then reachable too.
 */
CCSB_API int ccsb_spec_add_unix_socket(ccsb_spec *spec, const char *path);
/*
 * An HTTP proxy the host itself must use (its HTTPS_PROXY):
 * "http://[user:password@]host:port". Connections the allowlist admits are
 * then tunnelled through it (a CONNECT to the checked address); refused
 * ones never reach it. NULL: connect directly.
 */
CCSB_API int ccsb_spec_set_upstream_proxy(ccsb_spec *spec, const char *url);
/* Re-allow writing .git/config in writable roots (for `git config`). */
CCSB_API int ccsb_spec_set_allow_git_config(ccsb_spec *spec, int allow);
/* An environment variable for every exec of the session. */
CCSB_API int ccsb_spec_set_env(ccsb_spec *spec, const char *name, const char *value);
/* Session limits; 0 means no limit. */
CCSB_API int ccsb_spec_set_timeout_ms(ccsb_spec *spec, uint64_t ms);
CCSB_API int ccsb_spec_set_memory_max(ccsb_spec *spec, uint64_t bytes);
CCSB_API int ccsb_spec_set_pids_max(ccsb_spec *spec, uint32_t count);

/* ------------------------------------------------------------------ */
/* Sessions                                                             */
/* ------------------------------------------------------------------ */

/*
 * Starts one sandbox process ahead, for the next native launch of this
 * context: on Linux a bubblewrap that waits for its options, so that launch
 * skips bwrap's exec and dynamic linking (about 1 ms). Returns at once, the
 * context's thread starting it (with a caller-owned base the call starts it
 * itself, blocking for the process spawn: 0.5-1 ms on a virtual machine).
 * Best effort: a launch that finds none, or whose standby died, starts its
 * own. Each native launch takes one; call
 * again to prepare the next (at most 4 wait, then CCSB_E_STATE). Launches
 * with a memory or process limit start their own (bwrap must begin inside
 * the session's cgroups). One idle bwrap process each until taken;
 * ccsb_ctx_free ends those left. CCSB_E_UNAVAILABLE where the native
 * backend has nothing to start ahead (macOS, no native backend) or
 * bubblewrap is not installed.
 */
CCSB_API int ccsb_ctx_prestart(ccsb_ctx *ctx);

/*
 * Validates the spec, resolves the backend and starts the session. Returns
 * once the session is warm (a "ready" event is queued), or fails with
 * nothing left running. The spec is copied.
 */
CCSB_API int ccsb_launch(ccsb_ctx *ctx, const ccsb_spec *spec, ccsb_session **out);

/*
 * ccsb_launch, then ccsb_exec of req, as one call: the command goes out with
 * the launch and starts the moment the sandbox is ready (no round trip in
 * between), so a one-shot run costs less. Events: those of ccsb_launch,
 * then the command's. Either both succeed, or nothing is left running: if
 * the command cannot start, the session is stopped and freed and the
 * context's message says why. req is not kept.
 */
CCSB_API int ccsb_launch_exec(ccsb_ctx *ctx, const ccsb_spec *spec, const ccsb_exec_req *req,
                              ccsb_session **out, uint64_t *out_exec_id);

/* Kills every process of the session; state becomes destroyed.
 * CCSB_E_REENTRANT from inside a callback of the context. */
CCSB_API int ccsb_session_stop(ccsb_session *s);
/* Stops if needed and frees the handle. NULL-safe, any thread; from inside
 * a callback of the context it takes effect once the callback returned.
 * It may also come after ccsb_ctx_free of its context (which stopped it). */
CCSB_API void ccsb_session_destroy(ccsb_session *s);
/* Freeze / thaw every process of the session. */
CCSB_API int ccsb_session_suspend(ccsb_session *s);
CCSB_API int ccsb_session_resume(ccsb_session *s);

CCSB_API const char *ccsb_session_id(const ccsb_session *s);
/* The backend actually running: CCSB_BACKEND_NATIVE/NONE/MICROVM. */
CCSB_API int ccsb_session_backend(const ccsb_session *s);
CCSB_API int ccsb_session_state(const ccsb_session *s);
/* The error that put the session in CCSB_STATE_ERROR ("" otherwise). */
CCSB_API const char *ccsb_session_error(const ccsb_session *s);
/* Workdir, tmp dir, pids, backend, limits applied, ... Free with ccsb_free. */
CCSB_API int ccsb_session_details_json(const ccsb_session *s, char **out_json);

/* ------------------------------------------------------------------ */
/* Exec                                                                 */
/* ------------------------------------------------------------------ */

#define CCSB_STDIN_CLOSED 0 /* the command reads EOF */
#define CCSB_STDIN_PIPE 1   /* feed it with ccsb_exec_write_stdin */

CCSB_API int ccsb_exec_req_new(ccsb_exec_req **out);
CCSB_API void ccsb_exec_req_free(ccsb_exec_req *req);
/* argv[0] is looked up on the session's PATH when it has no slash. */
CCSB_API int ccsb_exec_req_set_argv(ccsb_exec_req *req, const char *const *argv, size_t argc);
CCSB_API int ccsb_exec_req_set_env(ccsb_exec_req *req, const char *name, const char *value);
/* Defaults to the spec's guestWorkdir. */
CCSB_API int ccsb_exec_req_set_cwd(ccsb_exec_req *req, const char *path);
CCSB_API int ccsb_exec_req_set_stdin(ccsb_exec_req *req, int mode);
/* 0: no limit beyond the session's. */
CCSB_API int ccsb_exec_req_set_timeout_ms(ccsb_exec_req *req, uint64_t ms);
/* Run on a pseudo-terminal of rows x cols (stdout events carry its output). */
CCSB_API int ccsb_exec_req_set_pty(ccsb_exec_req *req, uint16_t rows, uint16_t cols);
/*
 * on != 0: when this command's main process exits, the session stops (every
 * process of it is killed, state destroyed), as ccsb_session_stop would but
 * without the round trip through the host: the sandbox ends itself. The
 * exit event comes first. For one-shot runs (the ccsb tool's `run`).
 */
CCSB_API int ccsb_exec_req_set_end_session(ccsb_exec_req *req, int on);

/* Starts the command; the session must be warm or active. */
CCSB_API int ccsb_exec(ccsb_session *s, const ccsb_exec_req *req, uint64_t *out_exec_id);
/* Writes to a CCSB_STDIN_PIPE exec (or its pty). Returns bytes written. */
CCSB_API int ccsb_exec_write_stdin(ccsb_session *s, uint64_t exec_id,
                                   const void *buf, size_t len);
CCSB_API int ccsb_exec_close_stdin(ccsb_session *s, uint64_t exec_id);
/* Kills the exec's whole process group; a killed(manual) event follows. */
CCSB_API int ccsb_exec_kill(ccsb_session *s, uint64_t exec_id);
CCSB_API int ccsb_exec_resize_pty(ccsb_session *s, uint64_t exec_id,
                                  uint16_t rows, uint16_t cols);

/* ------------------------------------------------------------------ */
/* Policy inspection (pure; nothing is launched)                        */
/* ------------------------------------------------------------------ */

/*
 * Judges "host", "host:port", "[v6]" or "[v6]:port" against the spec's
 * egress rules (baseline lists + spec). *out_allowed is 1 or 0; *out_reason
 * (may be NULL; free with ccsb_free) names the rule that decided, e.g.
 * "allowed by egressAllowlist entry *.example.com".
 */
CCSB_API int ccsb_spec_check_host(const ccsb_spec *spec, const char *host,
                                  int *out_allowed, char **out_reason);

/*
 * The resolved policy as text for a person: visible paths and modes, denied
 * paths in both spellings, environment changes, and the backend's own form
 * (bubblewrap argv for platform "linux", the SBPL profile for "macos").
 * platform NULL means this host. Free with ccsb_free.
 */
CCSB_API int ccsb_explain(const ccsb_spec *spec, const char *platform, char **out_text,
                          char *errbuf, size_t errbuf_len);

#ifdef __cplusplus
}
#endif

#endif /* CCSANDBOX_CCSANDBOX_H */
