//! Raw declarations of the libccsandbox C ABI (`include/ccsandbox/ccsandbox.h`
//! and `ccsandbox-libevent.h`), written by hand. The `ccsandbox` crate wraps
//! them safely; use this crate directly only to reach what it does not wrap.
//!
//! `tests/abi.rs` in the `ccsandbox` crate parses the C headers and checks
//! that every function is declared here with the same parameter types and
//! that every constant has the header's value.
#![allow(non_camel_case_types)]

use std::marker::{PhantomData, PhantomPinned};
use std::os::raw::{c_char, c_int, c_void};

macro_rules! opaque {
    ($($name:ident),* $(,)?) => {$(
        #[repr(C)]
        pub struct $name {
            _data: [u8; 0],
            _marker: PhantomData<(*mut u8, PhantomPinned)>,
        }
    )*};
}

opaque!(
    ccsb_ctx,
    ccsb_spec,
    ccsb_session,
    ccsb_exec_req,
    ccsb_event,
    ccsb_probe_result,
    event_base
);

macro_rules! constants {
    ($($name:ident : $ty:ty = $val:expr;)*) => {
        $(pub const $name: $ty = $val;)*
        /// Every constant above as (name, value), for the header check.
        pub const CONSTANTS: &[(&str, i64)] = &[$((stringify!($name), $val as i64)),*];
    };
}

constants! {
    CCSB_VERSION_MAJOR: u32 = 1;
    CCSB_VERSION_MINOR: u32 = 0;
    CCSB_VERSION_PATCH: u32 = 0;

    CCSB_OK: c_int = 0;
    CCSB_E_INVAL: c_int = -1;
    CCSB_E_NOMEM: c_int = -2;
    CCSB_E_SPEC: c_int = -3;
    CCSB_E_UNAVAILABLE: c_int = -4;
    CCSB_E_POLICY: c_int = -5;
    CCSB_E_STATE: c_int = -6;
    CCSB_E_NOTFOUND: c_int = -7;
    CCSB_E_IO: c_int = -8;
    CCSB_E_AGAIN: c_int = -9;
    CCSB_E_REENTRANT: c_int = -10;
    CCSB_E_LAUNCH: c_int = -11;
    CCSB_E_INTERNAL: c_int = -12;
    CCSB_E_UNSUPPORTED: c_int = -13;
    CCSB_E_TIMEDOUT: c_int = -14;

    CCSB_EVENT_STARTING: c_int = 1;
    CCSB_EVENT_READY: c_int = 2;
    CCSB_EVENT_STDOUT: c_int = 3;
    CCSB_EVENT_STDERR: c_int = 4;
    CCSB_EVENT_EXIT: c_int = 5;
    CCSB_EVENT_KILLED: c_int = 6;
    CCSB_EVENT_VIOLATION: c_int = 7;
    CCSB_EVENT_STATE: c_int = 8;
    CCSB_EVENT_ERROR: c_int = 9;

    CCSB_KILL_TIMEOUT: c_int = 1;
    CCSB_KILL_OOM: c_int = 2;
    CCSB_KILL_MANUAL: c_int = 3;
    CCSB_KILL_HOST: c_int = 4;

    CCSB_STATE_CREATED: c_int = 0;
    CCSB_STATE_WARM: c_int = 1;
    CCSB_STATE_ACTIVE: c_int = 2;
    CCSB_STATE_SUSPENDED: c_int = 3;
    CCSB_STATE_DESTROYED: c_int = 4;
    CCSB_STATE_ERROR: c_int = 5;

    CCSB_BACKEND_AUTO: c_int = 0;
    CCSB_BACKEND_NATIVE: c_int = 1;
    CCSB_BACKEND_NONE: c_int = 2;
    CCSB_BACKEND_MICROVM: c_int = 3;

    CCSB_MODE_CHAT: c_int = 0;
    CCSB_MODE_REVIEW: c_int = 1;
    CCSB_MODE_PLAN: c_int = 2;
    CCSB_MODE_ORCHESTRATE: c_int = 3;

    CCSB_STDIN_CLOSED: c_int = 0;
    CCSB_STDIN_PIPE: c_int = 1;
}

/// `CCSB_VERSION_NUMBER` of the headers these declarations follow.
pub const CCSB_VERSION_NUMBER: u32 = (CCSB_VERSION_MAJOR << 16) | (CCSB_VERSION_MINOR << 8) | CCSB_VERSION_PATCH;

pub type ccsb_destroy_fn = Option<unsafe extern "C" fn(userdata: *mut c_void)>;
pub type ccsb_event_cb = Option<unsafe extern "C" fn(ev: *const ccsb_event, userdata: *mut c_void)>;
pub type ccsb_wakeup_fn = Option<unsafe extern "C" fn(userdata: *mut c_void)>;

extern "C" {
    pub fn ccsb_version() -> *const c_char;
    pub fn ccsb_version_number() -> u32;
    pub fn ccsb_strerror(code: c_int) -> *const c_char;
    pub fn ccsb_free(ptr: *mut c_void);

    pub fn ccsb_ctx_new(out: *mut *mut ccsb_ctx, errbuf: *mut c_char, errbuf_len: usize) -> c_int;
    pub fn ccsb_ctx_new_with_event_base(
        out: *mut *mut ccsb_ctx,
        base: *mut event_base,
        errbuf: *mut c_char,
        errbuf_len: usize,
    ) -> c_int;
    pub fn ccsb_ctx_free(ctx: *mut ccsb_ctx);
    pub fn ccsb_ctx_errmsg(ctx: *const ccsb_ctx) -> *const c_char;

    pub fn ccsb_event_type_name(r#type: c_int) -> *const c_char;
    pub fn ccsb_state_name(state: c_int) -> *const c_char;
    pub fn ccsb_kill_reason_name(reason: c_int) -> *const c_char;
    pub fn ccsb_event_type(ev: *const ccsb_event) -> c_int;
    pub fn ccsb_event_session_id(ev: *const ccsb_event) -> *const c_char;
    pub fn ccsb_event_exec_id(ev: *const ccsb_event) -> u64;
    pub fn ccsb_event_data(ev: *const ccsb_event, len: *mut usize) -> *const u8;
    pub fn ccsb_event_exit_code(ev: *const ccsb_event) -> c_int;
    pub fn ccsb_event_signal(ev: *const ccsb_event) -> c_int;
    pub fn ccsb_event_kill_reason(ev: *const ccsb_event) -> c_int;
    pub fn ccsb_event_violation_action(ev: *const ccsb_event) -> *const c_char;
    pub fn ccsb_event_violation_target(ev: *const ccsb_event) -> *const c_char;
    pub fn ccsb_event_violation_raw(ev: *const ccsb_event) -> *const c_char;
    pub fn ccsb_event_state(ev: *const ccsb_event) -> c_int;
    pub fn ccsb_event_message(ev: *const ccsb_event) -> *const c_char;
    pub fn ccsb_event_timestamp_us(ev: *const ccsb_event) -> i64;
    pub fn ccsb_event_to_json(ev: *const ccsb_event, out_json: *mut *mut c_char) -> c_int;
    pub fn ccsb_event_free(ev: *mut ccsb_event);

    pub fn ccsb_ctx_set_event_callback(
        ctx: *mut ccsb_ctx,
        cb: ccsb_event_cb,
        userdata: *mut c_void,
        destroy: ccsb_destroy_fn,
    ) -> c_int;
    pub fn ccsb_ctx_get_fd(ctx: *const ccsb_ctx) -> c_int;
    pub fn ccsb_ctx_next_event(ctx: *mut ccsb_ctx, out: *mut *mut ccsb_event) -> c_int;
    pub fn ccsb_ctx_wait_event(ctx: *mut ccsb_ctx, timeout_ms: c_int, out: *mut *mut ccsb_event) -> c_int;
    pub fn ccsb_ctx_set_wakeup(
        ctx: *mut ccsb_ctx,
        wake: ccsb_wakeup_fn,
        userdata: *mut c_void,
        destroy: ccsb_destroy_fn,
    ) -> c_int;

    pub fn ccsb_probe(ctx: *mut ccsb_ctx, out: *mut *const ccsb_probe_result) -> c_int;
    pub fn ccsb_probe_platform(pr: *const ccsb_probe_result) -> *const c_char;
    pub fn ccsb_probe_mechanism(pr: *const ccsb_probe_result) -> *const c_char;
    pub fn ccsb_probe_available(pr: *const ccsb_probe_result) -> c_int;
    pub fn ccsb_probe_requires_install(pr: *const ccsb_probe_result) -> c_int;
    pub fn ccsb_probe_note(pr: *const ccsb_probe_result) -> *const c_char;
    pub fn ccsb_probe_hint(pr: *const ccsb_probe_result) -> *const c_char;
    pub fn ccsb_probe_missing_packages(pr: *const ccsb_probe_result) -> *const c_char;
    pub fn ccsb_probe_microvm_available(pr: *const ccsb_probe_result) -> c_int;
    pub fn ccsb_probe_to_json(pr: *const ccsb_probe_result, out_json: *mut *mut c_char) -> c_int;
    pub fn ccsb_probe_startup_message(pr: *const ccsb_probe_result, disabled: c_int, out: *mut *mut c_char) -> c_int;

    pub fn ccsb_backend_from_name(name: *const c_char) -> c_int;
    pub fn ccsb_backend_name(backend: c_int) -> *const c_char;
    pub fn ccsb_mode_name(mode: c_int) -> *const c_char;

    pub fn ccsb_spec_new(out: *mut *mut ccsb_spec) -> c_int;
    pub fn ccsb_spec_free(spec: *mut ccsb_spec);
    pub fn ccsb_spec_copy(spec: *const ccsb_spec, out: *mut *mut ccsb_spec) -> c_int;
    pub fn ccsb_spec_from_json(
        out: *mut *mut ccsb_spec,
        json: *const c_char,
        len: usize,
        errbuf: *mut c_char,
        errbuf_len: usize,
    ) -> c_int;
    pub fn ccsb_spec_to_json(spec: *const ccsb_spec, out_json: *mut *mut c_char) -> c_int;
    pub fn ccsb_spec_validate(spec: *const ccsb_spec, errbuf: *mut c_char, errbuf_len: usize) -> c_int;
    pub fn ccsb_spec_set_session_id(spec: *mut ccsb_spec, id: *const c_char) -> c_int;
    pub fn ccsb_spec_set_workspace_id(spec: *mut ccsb_spec, id: *const c_char) -> c_int;
    pub fn ccsb_spec_set_agent_id(spec: *mut ccsb_spec, id: *const c_char) -> c_int;
    pub fn ccsb_spec_set_backend(spec: *mut ccsb_spec, backend: c_int) -> c_int;
    pub fn ccsb_spec_set_mode(spec: *mut ccsb_spec, mode: c_int) -> c_int;
    pub fn ccsb_spec_set_guest_workdir(spec: *mut ccsb_spec, path: *const c_char) -> c_int;
    pub fn ccsb_spec_add_bind_mount(
        spec: *mut ccsb_spec,
        host_path: *const c_char,
        guest_path: *const c_char,
        read_only: c_int,
    ) -> c_int;
    pub fn ccsb_spec_set_network_enabled(spec: *mut ccsb_spec, enabled: c_int) -> c_int;
    pub fn ccsb_spec_add_egress_allow(spec: *mut ccsb_spec, entry: *const c_char) -> c_int;
    pub fn ccsb_spec_add_egress_deny(spec: *mut ccsb_spec, entry: *const c_char) -> c_int;
    pub fn ccsb_spec_add_protected_path(spec: *mut ccsb_spec, path: *const c_char) -> c_int;
    pub fn ccsb_spec_add_runner_state_dir(spec: *mut ccsb_spec, path: *const c_char) -> c_int;
    pub fn ccsb_spec_add_exec_grant_root(spec: *mut ccsb_spec, path: *const c_char) -> c_int;
    pub fn ccsb_spec_add_deny_read(spec: *mut ccsb_spec, path: *const c_char) -> c_int;
    pub fn ccsb_spec_add_deny_write_glob(spec: *mut ccsb_spec, glob: *const c_char) -> c_int;
    pub fn ccsb_spec_add_unix_socket(spec: *mut ccsb_spec, path: *const c_char) -> c_int;
    pub fn ccsb_spec_set_allow_git_config(spec: *mut ccsb_spec, allow: c_int) -> c_int;
    pub fn ccsb_spec_set_upstream_proxy(spec: *mut ccsb_spec, url: *const c_char) -> c_int;
    pub fn ccsb_spec_set_env(spec: *mut ccsb_spec, name: *const c_char, value: *const c_char) -> c_int;
    pub fn ccsb_spec_set_timeout_ms(spec: *mut ccsb_spec, ms: u64) -> c_int;
    pub fn ccsb_spec_set_memory_max(spec: *mut ccsb_spec, bytes: u64) -> c_int;
    pub fn ccsb_spec_set_pids_max(spec: *mut ccsb_spec, count: u32) -> c_int;

    pub fn ccsb_ctx_prestart(ctx: *mut ccsb_ctx) -> c_int;
    pub fn ccsb_launch(ctx: *mut ccsb_ctx, spec: *const ccsb_spec, out: *mut *mut ccsb_session) -> c_int;
    pub fn ccsb_launch_exec(
        ctx: *mut ccsb_ctx,
        spec: *const ccsb_spec,
        req: *const ccsb_exec_req,
        out: *mut *mut ccsb_session,
        out_exec_id: *mut u64,
    ) -> c_int;
    pub fn ccsb_session_stop(s: *mut ccsb_session) -> c_int;
    pub fn ccsb_session_destroy(s: *mut ccsb_session);
    pub fn ccsb_session_suspend(s: *mut ccsb_session) -> c_int;
    pub fn ccsb_session_resume(s: *mut ccsb_session) -> c_int;
    pub fn ccsb_session_id(s: *const ccsb_session) -> *const c_char;
    pub fn ccsb_session_backend(s: *const ccsb_session) -> c_int;
    pub fn ccsb_session_state(s: *const ccsb_session) -> c_int;
    pub fn ccsb_session_error(s: *const ccsb_session) -> *const c_char;
    pub fn ccsb_session_details_json(s: *const ccsb_session, out_json: *mut *mut c_char) -> c_int;

    pub fn ccsb_exec_req_new(out: *mut *mut ccsb_exec_req) -> c_int;
    pub fn ccsb_exec_req_free(req: *mut ccsb_exec_req);
    pub fn ccsb_exec_req_set_argv(req: *mut ccsb_exec_req, argv: *const *const c_char, argc: usize) -> c_int;
    pub fn ccsb_exec_req_set_env(req: *mut ccsb_exec_req, name: *const c_char, value: *const c_char) -> c_int;
    pub fn ccsb_exec_req_set_cwd(req: *mut ccsb_exec_req, path: *const c_char) -> c_int;
    pub fn ccsb_exec_req_set_stdin(req: *mut ccsb_exec_req, mode: c_int) -> c_int;
    pub fn ccsb_exec_req_set_timeout_ms(req: *mut ccsb_exec_req, ms: u64) -> c_int;
    pub fn ccsb_exec_req_set_pty(req: *mut ccsb_exec_req, rows: u16, cols: u16) -> c_int;
    pub fn ccsb_exec_req_set_end_session(req: *mut ccsb_exec_req, on: c_int) -> c_int;

    pub fn ccsb_exec(s: *mut ccsb_session, req: *const ccsb_exec_req, out_exec_id: *mut u64) -> c_int;
    pub fn ccsb_exec_write_stdin(s: *mut ccsb_session, exec_id: u64, buf: *const c_void, len: usize) -> c_int;
    pub fn ccsb_exec_close_stdin(s: *mut ccsb_session, exec_id: u64) -> c_int;
    pub fn ccsb_exec_kill(s: *mut ccsb_session, exec_id: u64) -> c_int;
    pub fn ccsb_exec_resize_pty(s: *mut ccsb_session, exec_id: u64, rows: u16, cols: u16) -> c_int;

    pub fn ccsb_spec_check_host(
        spec: *const ccsb_spec,
        host: *const c_char,
        out_allowed: *mut c_int,
        out_reason: *mut *mut c_char,
    ) -> c_int;
    pub fn ccsb_explain(
        spec: *const ccsb_spec,
        platform: *const c_char,
        out_text: *mut *mut c_char,
        errbuf: *mut c_char,
        errbuf_len: usize,
    ) -> c_int;
}
