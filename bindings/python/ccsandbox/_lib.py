"""Loads libccsandbox.so.1 and declares the C ABI for ctypes.

Only the public header's functions are declared; nothing here reaches into
the library's internals. Every prototype is explicit so that ctypes converts
arguments and results instead of guessing (a guessed `int` return would
truncate pointers on 64-bit hosts).
"""
import ctypes
import ctypes.util
import os
import threading

SONAME = "libccsandbox.so.1"

_lock = threading.Lock()
_lib = None


class _Ctx(ctypes.Structure):
    pass


class _Spec(ctypes.Structure):
    pass


class _Session(ctypes.Structure):
    pass


class _ExecReq(ctypes.Structure):
    pass


class _Event(ctypes.Structure):
    pass


class _Probe(ctypes.Structure):
    pass


ctx_p = ctypes.POINTER(_Ctx)
spec_p = ctypes.POINTER(_Spec)
session_p = ctypes.POINTER(_Session)
exec_req_p = ctypes.POINTER(_ExecReq)
event_p = ctypes.POINTER(_Event)
probe_p = ctypes.POINTER(_Probe)

c_int = ctypes.c_int
c_char_p = ctypes.c_char_p
c_void_p = ctypes.c_void_p
c_size_t = ctypes.c_size_t
c_u64 = ctypes.c_uint64
c_u32 = ctypes.c_uint32
c_u16 = ctypes.c_uint16
c_i64 = ctypes.c_int64
P = ctypes.POINTER

# Library-allocated strings come back as c_void_p so that we can hand the
# same pointer to ccsb_free after copying the text out.
owned_str_p = P(c_void_p)

DESTROY_FN = ctypes.CFUNCTYPE(None, c_void_p)
EVENT_CB = ctypes.CFUNCTYPE(None, event_p, c_void_p)
WAKEUP_FN = ctypes.CFUNCTYPE(None, c_void_p)

# name: (restype, argtypes)
PROTOTYPES = {
    "ccsb_version": (c_char_p, []),
    "ccsb_version_number": (c_u32, []),
    "ccsb_strerror": (c_char_p, [c_int]),
    "ccsb_free": (None, [c_void_p]),
    "ccsb_ctx_new": (c_int, [P(ctx_p), c_char_p, c_size_t]),
    "ccsb_ctx_free": (None, [ctx_p]),
    "ccsb_ctx_errmsg": (c_char_p, [ctx_p]),
    "ccsb_event_type_name": (c_char_p, [c_int]),
    "ccsb_state_name": (c_char_p, [c_int]),
    "ccsb_kill_reason_name": (c_char_p, [c_int]),
    "ccsb_event_type": (c_int, [event_p]),
    "ccsb_event_session_id": (c_char_p, [event_p]),
    "ccsb_event_exec_id": (c_u64, [event_p]),
    "ccsb_event_data": (P(ctypes.c_uint8), [event_p, P(c_size_t)]),
    "ccsb_event_exit_code": (c_int, [event_p]),
    "ccsb_event_signal": (c_int, [event_p]),
    "ccsb_event_kill_reason": (c_int, [event_p]),
    "ccsb_event_violation_action": (c_char_p, [event_p]),
    "ccsb_event_violation_target": (c_char_p, [event_p]),
    "ccsb_event_violation_raw": (c_char_p, [event_p]),
    "ccsb_event_state": (c_int, [event_p]),
    "ccsb_event_message": (c_char_p, [event_p]),
    "ccsb_event_timestamp_us": (c_i64, [event_p]),
    "ccsb_event_to_json": (c_int, [event_p, owned_str_p]),
    "ccsb_event_free": (None, [event_p]),
    "ccsb_ctx_set_event_callback": (c_int, [ctx_p, EVENT_CB, c_void_p, DESTROY_FN]),
    "ccsb_ctx_get_fd": (c_int, [ctx_p]),
    "ccsb_ctx_next_event": (c_int, [ctx_p, P(event_p)]),
    "ccsb_ctx_wait_event": (c_int, [ctx_p, c_int, P(event_p)]),
    "ccsb_ctx_set_wakeup": (c_int, [ctx_p, WAKEUP_FN, c_void_p, DESTROY_FN]),
    "ccsb_probe": (c_int, [ctx_p, P(probe_p)]),
    "ccsb_probe_platform": (c_char_p, [probe_p]),
    "ccsb_probe_mechanism": (c_char_p, [probe_p]),
    "ccsb_probe_available": (c_int, [probe_p]),
    "ccsb_probe_requires_install": (c_int, [probe_p]),
    "ccsb_probe_note": (c_char_p, [probe_p]),
    "ccsb_probe_hint": (c_char_p, [probe_p]),
    "ccsb_probe_missing_packages": (c_char_p, [probe_p]),
    "ccsb_probe_microvm_available": (c_int, [probe_p]),
    "ccsb_probe_to_json": (c_int, [probe_p, owned_str_p]),
    "ccsb_probe_startup_message": (c_int, [probe_p, c_int, owned_str_p]),
    "ccsb_backend_from_name": (c_int, [c_char_p]),
    "ccsb_backend_name": (c_char_p, [c_int]),
    "ccsb_mode_name": (c_char_p, [c_int]),
    "ccsb_spec_new": (c_int, [P(spec_p)]),
    "ccsb_spec_free": (None, [spec_p]),
    "ccsb_spec_copy": (c_int, [spec_p, P(spec_p)]),
    "ccsb_spec_from_json": (c_int, [P(spec_p), c_char_p, c_size_t, c_char_p, c_size_t]),
    "ccsb_spec_to_json": (c_int, [spec_p, owned_str_p]),
    "ccsb_spec_validate": (c_int, [spec_p, c_char_p, c_size_t]),
    "ccsb_spec_set_session_id": (c_int, [spec_p, c_char_p]),
    "ccsb_spec_set_workspace_id": (c_int, [spec_p, c_char_p]),
    "ccsb_spec_set_agent_id": (c_int, [spec_p, c_char_p]),
    "ccsb_spec_set_backend": (c_int, [spec_p, c_int]),
    "ccsb_spec_set_mode": (c_int, [spec_p, c_int]),
    "ccsb_spec_set_guest_workdir": (c_int, [spec_p, c_char_p]),
    "ccsb_spec_add_bind_mount": (c_int, [spec_p, c_char_p, c_char_p, c_int]),
    "ccsb_spec_set_network_enabled": (c_int, [spec_p, c_int]),
    "ccsb_spec_add_egress_allow": (c_int, [spec_p, c_char_p]),
    "ccsb_spec_add_egress_deny": (c_int, [spec_p, c_char_p]),
    "ccsb_spec_add_protected_path": (c_int, [spec_p, c_char_p]),
    "ccsb_spec_add_runner_state_dir": (c_int, [spec_p, c_char_p]),
    "ccsb_spec_add_exec_grant_root": (c_int, [spec_p, c_char_p]),
    "ccsb_spec_add_deny_read": (c_int, [spec_p, c_char_p]),
    "ccsb_spec_add_deny_write_glob": (c_int, [spec_p, c_char_p]),
    "ccsb_spec_add_unix_socket": (c_int, [spec_p, c_char_p]),
    "ccsb_spec_set_allow_git_config": (c_int, [spec_p, c_int]),
    "ccsb_spec_set_upstream_proxy": (c_int, [spec_p, c_char_p]),
    "ccsb_spec_set_env": (c_int, [spec_p, c_char_p, c_char_p]),
    "ccsb_spec_set_timeout_ms": (c_int, [spec_p, c_u64]),
    "ccsb_spec_set_memory_max": (c_int, [spec_p, c_u64]),
    "ccsb_spec_set_pids_max": (c_int, [spec_p, c_u32]),
    "ccsb_ctx_prestart": (c_int, [ctx_p]),
    "ccsb_launch": (c_int, [ctx_p, spec_p, P(session_p)]),
    "ccsb_launch_exec": (c_int, [ctx_p, spec_p, exec_req_p, P(session_p), P(c_u64)]),
    "ccsb_session_stop": (c_int, [session_p]),
    "ccsb_session_destroy": (None, [session_p]),
    "ccsb_session_suspend": (c_int, [session_p]),
    "ccsb_session_resume": (c_int, [session_p]),
    "ccsb_session_id": (c_char_p, [session_p]),
    "ccsb_session_backend": (c_int, [session_p]),
    "ccsb_session_state": (c_int, [session_p]),
    "ccsb_session_error": (c_char_p, [session_p]),
    "ccsb_session_details_json": (c_int, [session_p, owned_str_p]),
    "ccsb_exec_req_new": (c_int, [P(exec_req_p)]),
    "ccsb_exec_req_free": (None, [exec_req_p]),
    "ccsb_exec_req_set_argv": (c_int, [exec_req_p, P(c_char_p), c_size_t]),
    "ccsb_exec_req_set_env": (c_int, [exec_req_p, c_char_p, c_char_p]),
    "ccsb_exec_req_set_cwd": (c_int, [exec_req_p, c_char_p]),
    "ccsb_exec_req_set_stdin": (c_int, [exec_req_p, c_int]),
    "ccsb_exec_req_set_timeout_ms": (c_int, [exec_req_p, c_u64]),
    "ccsb_exec_req_set_pty": (c_int, [exec_req_p, c_u16, c_u16]),
    "ccsb_exec_req_set_end_session": (c_int, [exec_req_p, c_int]),
    "ccsb_exec": (c_int, [session_p, exec_req_p, P(c_u64)]),
    "ccsb_exec_write_stdin": (c_int, [session_p, c_u64, c_void_p, c_size_t]),
    "ccsb_exec_close_stdin": (c_int, [session_p, c_u64]),
    "ccsb_exec_kill": (c_int, [session_p, c_u64]),
    "ccsb_exec_resize_pty": (c_int, [session_p, c_u64, c_u16, c_u16]),
    "ccsb_spec_check_host": (c_int, [spec_p, c_char_p, P(c_int), owned_str_p]),
    "ccsb_explain": (c_int, [spec_p, c_char_p, owned_str_p, c_char_p, c_size_t]),
}

# Declared for completeness but not wrapped: it needs a libevent
# `struct event_base *`, which a Python host does not have.
UNWRAPPED = {"ccsb_ctx_new_with_event_base"}


def _candidates(path):
    if path:
        yield path, "the explicit path"
    env = os.environ.get("CCSB_LIBRARY")
    if env:
        yield env, "CCSB_LIBRARY"
    root = os.environ.get("CCSB_BUILD_ROOT")
    if root:
        yield os.path.join(root, "lib", SONAME), "CCSB_BUILD_ROOT"
    # A source checkout with a meson build dir next to bindings/.
    here = os.path.dirname(os.path.abspath(__file__))
    tree = os.path.normpath(os.path.join(here, "..", "..", ".."))
    yield os.path.join(tree, "build", "lib", SONAME), "the source tree's build dir"
    yield SONAME, "the system loader"
    found = ctypes.util.find_library("ccsandbox")
    if found:
        yield found, "ctypes.util.find_library"


def _declare(lib):
    for name, (restype, argtypes) in PROTOTYPES.items():
        fn = getattr(lib, name)
        fn.restype = restype
        fn.argtypes = argtypes
    return lib


def load(path=None):
    """Returns the loaded library, loading it on first use.

    Search order: `path`, $CCSB_LIBRARY, $CCSB_BUILD_ROOT/lib, ./build/lib of
    this source tree, then the system loader. An explicit path or
    $CCSB_LIBRARY that does not load is an error, never skipped silently.
    """
    global _lib
    with _lock:
        if _lib is not None and path is None:
            return _lib
        tried = []
        for cand, why in _candidates(path):
            explicit = why in ("the explicit path", "CCSB_LIBRARY")
            if os.sep in cand and not os.path.exists(cand):
                if explicit:
                    raise OSError("libccsandbox: %s %s does not exist" % (why, cand))
                tried.append("%s (%s): missing" % (cand, why))
                continue
            try:
                lib = _declare(ctypes.CDLL(cand))
            except (OSError, AttributeError) as e:
                if explicit:
                    raise OSError("libccsandbox: cannot load %s from %s: %s" % (cand, why, e))
                tried.append("%s (%s): %s" % (cand, why, e))
                continue
            _lib = lib
            return lib
        raise OSError("libccsandbox: %s not found; tried:\n  %s\nset CCSB_LIBRARY to its path"
                      % (SONAME, "\n  ".join(tried)))


def lib():
    return _lib if _lib is not None else load()


def text(b):
    """A borrowed `const char *` from the library as str (never None)."""
    return b.decode("utf-8", "replace") if b else ""


def enc(s, what):
    """A Python str argument as NUL-terminated UTF-8 for the library."""
    if s is None:
        return None
    if isinstance(s, os.PathLike):
        s = os.fspath(s)
    if isinstance(s, bytes):
        b = s
    elif isinstance(s, str):
        b = s.encode("utf-8", "surrogateescape")
    else:
        raise TypeError("%s: expected str, got %s" % (what, type(s).__name__))
    if b"\0" in b:
        raise ValueError("%s: contains a NUL byte" % what)
    return b


def take_owned(ptr):
    """Copies a library-allocated string and frees it with ccsb_free."""
    if not ptr.value:
        return ""
    try:
        return ctypes.string_at(ptr.value).decode("utf-8", "replace")
    finally:
        lib().ccsb_free(ptr.value)
        ptr.value = None
